// fused_moments and its wall loads: the CUDA form of shaders/fused_moments.wgsl. Uses
// sweep_fused.cu's TXTY, NTY, NPART and partial_at (the host puts it after that file).
// Launcher: src/backend/cuda/fused.rs.

// A block's wall loads follow from its raw moments, as its face fluxes do: its velocities
// share their signs, so on a wall side d along axis a that they move into, w f |xi_a| =
// sign xi_a w f. Add, for each such wall side of a fluid cell's word, the octant's number,
// momentum and energy fluxes (body.rs::add_wall_sums; wall_load_slice.cu) to its wall face.
__device__ __forceinline__ void add_wall_sums(float* __restrict__ wall_sums, unsigned word, unsigned o,
                                              const float s[NPART]) {
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
        // Second moments xx yy zz xy xz yz at s[4..9]: row a of the symmetric matrix.
        const unsigned row[3][3] = {{4u, 7u, 8u}, {7u, 5u, 9u}, {8u, 9u, 6u}};
        const unsigned n = (word >> 6u) + __popc((word & 63u) & ((1u << d) - 1u));
        wall_sums[n * 5u] += sign * s[1u + a];
        for (unsigned b = 0u; b < 3u; b++) {
            wall_sums[n * 5u + 1u + b] += sign * s[row[a][b]];
        }
        wall_sums[n * 5u + 4u] += sign * 0.5f * s[10u + a];
    }
}

// fused_moments: one thread per cell adds the partials of launch `diag` into its moment sums
// and, on the box faces, into the incident fluxes: octant by octant in Octant order, block
// by block in wave order (fixed, so results are deterministic; no atomics). `ranges`: per
// octant its blocks [start, end) in the wave (fused.rs::FusedWave::ranges).
extern "C" __global__ void fused_moments(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                         const float* __restrict__ partials, const float4* __restrict__ cells,
                                         float* __restrict__ moments, float* __restrict__ incident,
                                         float* __restrict__ wall_sums) {
    const unsigned cell = blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= NX * NY * NZ) {
        return;
    }
    const unsigned i = cell % NX;
    const unsigned j = (cell / NX) % NY;
    const unsigned k = cell / (NX * NY);
    const unsigned a_lo = diag >= NTY ? diag - (NTY - 1u) : 0u;
    float acc[NPART];
    for (unsigned m = 0u; m < NPART; m++) {
        acc[m] = 0.0f;
    }
    // Fluxes towards x_min, x_max, y_min, y_max, z_min, z_max.
    float flux[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
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
        float s[NPART];
        for (unsigned m = 0u; m < NPART; m++) {
            s[m] = 0.0f;
        }
        for (unsigned vb = lo; vb < hi; vb++) {
            for (unsigned m = 0u; m < NPART; m++) {
                s[m] += partials[partial_at(a - a_lo, vb, blocks, k, m, c)];
            }
        }
        for (unsigned m = 0u; m < NPART; m++) {
            acc[m] += s[m];
        }
        // A block's velocities share their signs, so its momentum sums are its face fluxes.
        if (nx && i == 0u) flux[0] -= s[1];
        if (!nx && i == NX - 1u) flux[1] += s[1];
        if (ny && j == 0u) flux[2] -= s[2];
        if (!ny && j == NY - 1u) flux[3] += s[2];
        if (nz && k == 0u) flux[4] -= s[3];
        if (!nz && k == NZ - 1u) flux[5] += s[3];
        if (HAS_WALLS) {
            add_wall_sums(wall_sums, __float_as_uint(cells[3u * cell].w), o, s);
        }
    }
    if (!any) {
        return;
    }
    for (unsigned m = 0u; m < NPART; m++) {
        moments[cell * MSTRIDE + m] += acc[m];
    }
    const unsigned s = j * NX + i;
    if (i == 0u) incident[face_offset(0u) + k * NY + j] += flux[0];
    if (i == NX - 1u) incident[face_offset(1u) + k * NY + j] += flux[1];
    if (j == 0u) incident[face_offset(2u) + k * NX + i] += flux[2];
    if (j == NY - 1u) incident[face_offset(3u) + k * NX + i] += flux[3];
    if (k == 0u) incident[face_offset(4u) + s] += flux[4];
    if (k == NZ - 1u) incident[face_offset(5u) + s] += flux[5];
}
