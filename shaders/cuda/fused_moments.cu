// fused_moments and its wall loads: the CUDA form of shaders/fused_moments.wgsl. Uses
// sweep_fused.cu's TXTY, NTY, NPART and partial_at (the host puts it after that file).
// Launcher: src/backend/cuda/fused.rs.

// A block's wall loads follow from its raw moments, as its face fluxes do: its velocities
// share their signs, so on a wall side d along axis a that they move into, w f |xi_a| =
// sign xi_a w f. Add, for each such wall side of a fluid cell's word, moment m's share of
// the octant's number, momentum and energy fluxes (body.rs::add_wall_sums;
// wall_load_slice.cu) to its wall face: number from m = 1 + a, momentum b from the second
// moment in row a, column b, energy from m = 10 + a.
__device__ __forceinline__ void add_wall_share(float* __restrict__ wall_sums, unsigned word, unsigned o,
                                               unsigned m, float s) {
    if ((word & SOLID) != 0u || (word & 63u) == 0u) {
        return;
    }
    for (unsigned d = 0u; d < 6u; d++) {
        const unsigned a = d / 2u;
        const bool neg = ((o >> a) & 1u) != 0u;
        // Into a min side (d even) move the negative velocities, into a max side the others.
        if (((word >> d) & 1u) == 0u || neg != ((d & 1u) == 0u)) {
            continue;
        }
        const float sign = neg ? -1.0f : 1.0f;
        // Second moments xx yy zz xy xz yz at 4..9: row a of the symmetric matrix.
        const unsigned row[3][3] = {{4u, 7u, 8u}, {7u, 5u, 9u}, {8u, 9u, 6u}};
        const unsigned n = (word >> 6u) + __popc((word & 63u) & ((1u << d) - 1u));
        if (m == 1u + a) wall_sums[n * 5u] += sign * s;
        for (unsigned b = 0u; b < 3u; b++) {
            if (row[a][b] == m) wall_sums[n * 5u + 1u + b] += sign * s;
        }
        if (m == 10u + a) wall_sums[n * 5u + 4u] += sign * 0.5f * s;
    }
}

// fused_moments: one thread per cell and moment adds the partials of launch `diag` into
// that moment's sum and, on the box faces, the momentum moments into the incident fluxes:
// octant by octant in Octant order, block by block in wave order (fixed, so results are
// deterministic; no atomics; each sum is the one a thread per cell made, term for term).
// Threads run along the cells within one moment, so a warp's reads of a tile row coalesce;
// thirteen threads per cell instead of one keep enough loads in flight (one per cell left
// the H100 at ~8 warps per SM: 1.4 ms per iteration at 32^3 x 32^3, 10 times the partials'
// bytes over the bandwidth). `ranges`: per octant its blocks [start, end) in the wave
// (fused.rs::FusedWave::ranges).
extern "C" __global__ void fused_moments(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                         const float* __restrict__ partials, const float4* __restrict__ cells,
                                         float* __restrict__ moments, float* __restrict__ incident,
                                         float* __restrict__ wall_sums) {
    const unsigned ncells = NX * NY * NZ;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ncells * NPART) {
        return;
    }
    const unsigned m = t / ncells, cell = t % ncells;
    const unsigned i = cell % NX;
    const unsigned j = (cell / NX) % NY;
    const unsigned k = cell / (NX * NY);
    const unsigned a_lo = diag >= NTY ? diag - (NTY - 1u) : 0u;
    float acc = 0.0f;
    // Momentum moment m = 1 + axis: fluxes towards that axis' min and max faces.
    float flux_min = 0.0f, flux_max = 0.0f;
    bool any = false;
    for (unsigned o = 0u; o < 8u; o++) {
        const unsigned lo = ranges[2u * o], hi = ranges[2u * o + 1u];
        const bool nx = (o & 1u) != 0u, ny = (o & 2u) != 0u, nz = (o & 4u) != 0u;
        const unsigned iu = nx ? NX - 1u - i : i;
        const unsigned ju = ny ? NY - 1u - j : j;
        const unsigned a = iu / TX, b = ju / TY;
        if (lo == hi || a + b != diag) {
            continue;
        }
        any = true;
        const unsigned c = (ju % TY) * TX + iu % TX;
        float s = 0.0f;
        // Unrolled so that eight loads are in flight before their adds, which stay in
        // block order (one thread per cell had its thirteen moments' loads in flight).
#pragma unroll 8
        for (unsigned vb = lo; vb < hi; vb++) {
            s += partials[partial_at(a - a_lo, vb, blocks, k, m, c)];
        }
        acc += s;
        // A block's velocities share their signs, so its momentum sums are its face fluxes.
        if (m == 1u && nx && i == 0u) flux_min -= s;
        if (m == 1u && !nx && i == NX - 1u) flux_max += s;
        if (m == 2u && ny && j == 0u) flux_min -= s;
        if (m == 2u && !ny && j == NY - 1u) flux_max += s;
        if (m == 3u && nz && k == 0u) flux_min -= s;
        if (m == 3u && !nz && k == NZ - 1u) flux_max += s;
        if (HAS_WALLS) {
            add_wall_share(wall_sums, __float_as_uint(cells[3u * cell].w), o, m, s);
        }
    }
    if (!any) {
        return;
    }
    moments[cell * MSTRIDE + m] += acc;
    const unsigned s = j * NX + i;
    if (m == 1u && i == 0u) incident[face_offset(0u) + k * NY + j] += flux_min;
    if (m == 1u && i == NX - 1u) incident[face_offset(1u) + k * NY + j] += flux_max;
    if (m == 2u && j == 0u) incident[face_offset(2u) + k * NX + i] += flux_min;
    if (m == 2u && j == NY - 1u) incident[face_offset(3u) + k * NX + i] += flux_max;
    if (m == 3u && k == 0u) incident[face_offset(4u) + s] += flux_min;
    if (m == 3u && k == NZ - 1u) incident[face_offset(5u) + s] += flux_max;
}
