// fused_moments and its wall loads: the CUDA form of shaders/fused_moments.wgsl. Uses
// sweep_fused.cu's TXTY, NTY, NMOM, NPART and partial_at (the host puts it after that file).
// Launcher: src/backend/cuda/fused.rs.

// A block's wall loads follow from its raw moments, as its face fluxes do: its velocities
// share their signs, so on a wall side d along axis a that they move into, w f |xi_a| =
// sign xi_a w f. Add, for each such wall side of a fluid cell's word, the octant's number,
// momentum and energy fluxes (body.rs::add_wall_sums; wall_load_slice.cu) to its wall face,
// as far as they come from the moments m0 .. m0 + MPT - 1 in `s`: number from m = 1 + a,
// momentum b from the second moment in row a, column b, energy from m = 10 + a.
template <unsigned MPT>
__device__ __forceinline__ void add_wall_sums(float* __restrict__ wall_sums, unsigned word, unsigned o,
                                              unsigned m0, const float (&s)[MPT]) {
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
        // m - m0 < MPT: moment m is this thread's (unsigned: below m0 it wraps).
        if (1u + a - m0 < MPT) wall_sums[n * 5u] += sign * s[1u + a - m0];
        for (unsigned b = 0u; b < 3u; b++) {
            if (row[a][b] - m0 < MPT) wall_sums[n * 5u + 1u + b] += sign * s[row[a][b] - m0];
        }
        if (10u + a - m0 < MPT) wall_sums[n * 5u + 4u] += sign * 0.5f * s[10u + a - m0];
    }
}

// fused_moments: a thread adds the partials of launch `diag` for MPT moments of one cell
// (m0 .. m0 + MPT - 1) into their sums and, on the box faces, the momentum moments among
// them into the incident fluxes (under second order, for the thread of momentum moment
// 1 + d, the face-flux partial NMOM + d instead, as the face values differ from f there): octant by octant in Octant order, block by block in wave
// order (fixed, so results are deterministic; no atomics; each sum is the same, term for
// term, whatever MPT). MPT = NMOM (`fused_moments`, one thread per cell) keeps thirteen
// loads in flight per thread; MPT = 1 (`fused_moments_split`, one thread per cell and
// moment, threads along the cells within a moment so a warp's reads of a tile row
// coalesce) has thirteen times the threads, for grids too small to fill the GPU with one
// per cell (backend/fused.rs::moments_per_thread). `ranges`: per octant its blocks
// [start, end) in the wave (fused.rs::FusedWave::ranges).
template <unsigned MPT>
__device__ __forceinline__ void fused_moments_impl(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                                   const float* __restrict__ partials,
                                                   const float4* __restrict__ cells, float* __restrict__ moments,
                                                   float* __restrict__ incident, float* __restrict__ wall_sums) {
    const unsigned ncells = NX * NY * NZ;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= ncells * (NMOM / MPT)) {
        return;
    }
    const unsigned m0 = (t / ncells) * MPT, cell = t % ncells;
    const unsigned i = cell % NX;
    const unsigned j = (cell / NX) % NY;
    const unsigned k = cell / (NX * NY);
    const unsigned at[3] = {i, j, k};
    const unsigned n_at[3] = {NX, NY, NZ};
    const unsigned a_lo = diag >= NTY ? diag - (NTY - 1u) : 0u;
    float acc[MPT];
    for (unsigned mm = 0u; mm < MPT; mm++) {
        acc[mm] = 0.0f;
    }
    // Fluxes towards x_min, x_max, y_min, y_max, z_min, z_max.
    float flux[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    bool any = false;
    for (unsigned o = 0u; o < 8u; o++) {
        const unsigned lo = ranges[2u * o], hi = ranges[2u * o + 1u];
        const bool nx = (o & 1u) != 0u, ny = (o & 2u) != 0u;
        const unsigned iu = nx ? NX - 1u - i : i;
        const unsigned ju = ny ? NY - 1u - j : j;
        const unsigned a = iu / TX, b = ju / TY;
        if (lo == hi || a + b != diag) {
            continue;
        }
        any = true;
        const unsigned c = (ju % TY) * TX + iu % TX;
        float s[MPT];
        for (unsigned mm = 0u; mm < MPT; mm++) {
            s[mm] = 0.0f;
        }
        if (MPT == 1u) {
            // Eight loads in flight before their adds, which stay in block order.
#pragma unroll 8
            for (unsigned vb = lo; vb < hi; vb++) {
                s[0] += partials[partial_at(a - a_lo, vb, blocks, k, m0, c)];
            }
        } else {
            // Four blocks' loads (4 MPT) in flight before their adds, which stay in block
            // order: one block's thirteen left the 64^3 row's launches at 1.8 TB/s.
#pragma unroll 4
            for (unsigned vb = lo; vb < hi; vb++) {
#pragma unroll
                for (unsigned mm = 0u; mm < MPT; mm++) {
                    s[mm] += partials[partial_at(a - a_lo, vb, blocks, k, m0 + mm, c)];
                }
            }
        }
        for (unsigned mm = 0u; mm < MPT; mm++) {
            acc[mm] += s[mm];
        }
        // A block's velocities share their signs, so its momentum sums are its face fluxes
        // under first order; under second its face-flux partials are.
        for (unsigned ax = 0u; ax < 3u; ax++) {
            const bool neg = ((o >> ax) & 1u) != 0u;
            if (1u + ax - m0 >= MPT || at[ax] != (neg ? 0u : n_at[ax] - 1u)) {
                continue;
            }
            float v = 0.0f;
            if (NPART > NMOM) {
                for (unsigned vb = lo; vb < hi; vb++) {
                    v += partials[partial_at(a - a_lo, vb, blocks, k, NMOM + ax, c)];
                }
            } else {
                v = s[1u + ax - m0];
            }
            if (neg) {
                flux[2u * ax] -= v;
            } else {
                flux[2u * ax + 1u] += v;
            }
        }
        if (HAS_WALLS) {
            add_wall_sums<MPT>(wall_sums, __float_as_uint(cells[3u * cell].w), o, m0, s);
        }
    }
    if (!any) {
        return;
    }
    for (unsigned mm = 0u; mm < MPT; mm++) {
        moments[cell * MSTRIDE + m0 + mm] += acc[mm];
    }
    const unsigned s = j * NX + i;
    if (1u - m0 < MPT && i == 0u) incident[face_offset(0u) + k * NY + j] += flux[0];
    if (1u - m0 < MPT && i == NX - 1u) incident[face_offset(1u) + k * NY + j] += flux[1];
    if (2u - m0 < MPT && j == 0u) incident[face_offset(2u) + k * NX + i] += flux[2];
    if (2u - m0 < MPT && j == NY - 1u) incident[face_offset(3u) + k * NX + i] += flux[3];
    if (3u - m0 < MPT && k == 0u) incident[face_offset(4u) + s] += flux[4];
    if (3u - m0 < MPT && k == NZ - 1u) incident[face_offset(5u) + s] += flux[5];
}

extern "C" __global__ void fused_moments(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                         const float* __restrict__ partials, const float4* __restrict__ cells,
                                         float* __restrict__ moments, float* __restrict__ incident,
                                         float* __restrict__ wall_sums) {
    fused_moments_impl<NMOM>(diag, blocks, ranges, partials, cells, moments, incident, wall_sums);
}

extern "C" __global__ void fused_moments_split(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                               const float* __restrict__ partials, const float4* __restrict__ cells,
                                               float* __restrict__ moments, float* __restrict__ incident,
                                               float* __restrict__ wall_sums) {
    fused_moments_impl<1u>(diag, blocks, ranges, partials, cells, moments, incident, wall_sums);
}
