// sweep_fused: the on-chip sweep (src/backend/fused.rs has the plan and the byte count).
// A block is BV velocities of one octant and one TX x TY tile of cells, (a, b) in the
// velocities' upwind frame, on the tile diagonal a + b = diag of this launch. Each thread
// sweeps its velocity through the tile's column of cells over all z in upwind order with the
// z-carry (the previous z-level of the tile) in registers; the tile's x- and y-inflows are
// the face buffers its upwind neighbour tiles wrote in the previous launch, and its outflows
// replace them there for the next. After each z-level the block reduces the level's 13 raw
// moments per cell over its velocities in shared memory and writes one partial per cell;
// fused_moments adds the partials of the launch into the moment sums in a fixed order.
// Launcher: src/backend/cuda/fused.rs. Sizes: NX NY NZ M SROW (common.cuh), TX TY BV FCH.
// First order, no bodies, no partner faces (fused.rs::ineligible); the slice kernels do the
// rest.

#define TXTY (TX * TY)
#define NTX ((NX + TX - 1u) / TX)
#define NTY ((NY + TY - 1u) / TY)
#define NPART 13u
// Threads summing each cell of a level (BV / TXTY; fused.rs checks the division).
#define PARTS (BV / TXTY)
static_assert(BV % TXTY == 0 && NPART * (BV - TXTY) <= BV * (TXTY + 1),
              "the tile must divide the block and its shares fit in `red` (fused.rs::tile_fits)");

// Face buffer entry of row `row` (k NY + j for x-faces, k NX + i for y-faces) and velocity v:
// [row][velocity], so a warp's accesses coalesce. 64-bit: 128^3 cells at 2^20 velocities
// exceed 2^32 values.
__device__ __forceinline__ size_t face_at(unsigned row, unsigned v) { return (size_t)row * FCH + v; }

// Partial m of cell c (in the tile) at level k of block vb, tile slot t: [t][vb][k][m][c], so
// the writes (threads on c) and fused_moments' reads (threads on cells) coalesce.
__device__ __forceinline__ size_t partial_at(unsigned t, unsigned vb, unsigned blocks, unsigned k, unsigned m,
                                             unsigned c) {
    return ((((size_t)t * blocks + vb) * NZ + k) * NPART + m) * TXTY + c;
}

extern "C" __global__ void __launch_bounds__(BV)
    sweep_fused(unsigned diag, unsigned a_lo, const float4* __restrict__ cells, const float* __restrict__ bnd,
                const float4* __restrict__ table, float* __restrict__ xface, float* __restrict__ yface,
                float* __restrict__ partials) {
    // Row stride TXTY + 1: a warp's writes (threads on velocities, one cell) and reads
    // (threads on cells, one velocity) both fall in distinct banks.
    __shared__ float red[BV][TXTY + 1u];
    __shared__ float4 xs[BV];
    const unsigned lid = threadIdx.x;
    const unsigned v = blockIdx.x * BV + lid;
    const unsigned a = a_lo + blockIdx.y;
    const unsigned b = diag - a;
    const float4 vel = table[v * (SROW + 1u)];
    const float4 shape = table[v * (SROW + 1u) + 1u];
    xs[lid] = make_float4(vel.x, vel.y, vel.z, vel.x * vel.x + vel.y * vel.y + vel.z * vel.z);
    const bool neg_x = vel.x < 0.0f;
    const bool neg_y = vel.y < 0.0f;
    const bool neg_z = vel.z < 0.0f;
    const unsigned x_face = dens() + face_offset(neg_x ? 1u : 0u);
    const unsigned y_face = dens() + face_offset(neg_y ? 3u : 2u);
    const unsigned z_face = dens() + face_offset(neg_z ? 5u : 4u);
    const float ux = fabsf(vel.x), uy = fabsf(vel.y), uz = fabsf(vel.z);
    // The reduction's cell and share of the velocities.
    const unsigned rc = lid % TXTY;
    const unsigned rh = lid / TXTY;
    const bool rc_in = a * TX + rc % TX < NX && b * TY + rc / TX < NY;
    float carry[TY][TX];
#pragma unroll
    for (unsigned jj = 0u; jj < TY; jj++) {
#pragma unroll
        for (unsigned ii = 0u; ii < TX; ii++) {
            carry[jj][ii] = 0.0f;
        }
    }
    for (unsigned kk = 0u; kk < NZ; kk++) {
        const unsigned k = neg_z ? NZ - 1u - kk : kk;
        const float cz = uz * bnd[NX + NY + k];
#pragma unroll
        for (unsigned jj = 0u; jj < TY; jj++) {
            const unsigned ju = b * TY + jj;
            if (ju >= NY) {
                // Rows past the domain's edge repeat the last real one, whose values the
                // y-outflow below then writes.
#pragma unroll
                for (unsigned ii = 0u; ii < TX; ii++) {
                    carry[jj][ii] = carry[jj > 0u ? jj - 1u : 0u][ii];
                }
                continue;
            }
            const unsigned j = neg_y ? NY - 1u - ju : ju;
            const float by = uy * bnd[NX + j];
            float fx = a == 0u ? bnd[x_face + k * NY + j] * shape.x : xface[face_at(k * NY + j, v)];
#pragma unroll
            for (unsigned ii = 0u; ii < TX; ii++) {
                const unsigned iu = a * TX + ii;
                if (iu >= NX) {
                    carry[jj][ii] = fx;
                    continue;
                }
                const unsigned i = neg_x ? NX - 1u - iu : iu;
                const float ax = ux * bnd[i];
                const float fy = jj == 0u ? (b == 0u ? bnd[y_face + k * NX + i] * shape.y : yface[face_at(k * NX + i, v)])
                                          : carry[jj > 0u ? jj - 1u : 0u][ii];
                const float fz = kk == 0u ? bnd[z_face + j * NX + i] * shape.z : carry[jj][ii];
                const unsigned cell = (k * NY + j) * NX + i;
                // The cell's coefficients: the same address across the block (a broadcast).
                const float4 e0 = cells[3u * cell];
                const float4 e1 = cells[3u * cell + 1u];
                const float4 e2 = cells[3u * cell + 2u];
                const float cx = vel.x - e1.x, cy = vel.y - e1.y, cw = vel.z - e1.z;
                const float c2 = cx * cx + cy * cy + cw * cw;
                const float sc = e2.x * cx + e2.y * cy + e2.z * cw;
                const float fs = e0.x * __expf(-c2 * e0.y) * (e1.w + sc * (2.0f * c2 * e0.y - 5.0f));
                const float f = (ax * fx + by * fy + cz * fz + e0.z * fs) / (ax + by + cz + e0.z);
                carry[jj][ii] = f;
                fx = f;
            }
            xface[face_at(k * NY + j, v)] = fx;
        }
#pragma unroll
        for (unsigned ii = 0u; ii < TX; ii++) {
            const unsigned iu = a * TX + ii;
            if (iu < NX) {
                yface[face_at(k * NX + (neg_x ? NX - 1u - iu : iu), v)] = carry[TY - 1u][ii];
            }
        }
        // The previous level's readers of `red` are done.
        __syncthreads();
#pragma unroll
        for (unsigned jj = 0u; jj < TY; jj++) {
#pragma unroll
            for (unsigned ii = 0u; ii < TX; ii++) {
                red[lid][jj * TX + ii] = vel.w * carry[jj][ii];
            }
        }
        __syncthreads();
        float acc[NPART];
#pragma unroll
        for (unsigned m = 0u; m < NPART; m++) {
            acc[m] = 0.0f;
        }
        for (unsigned q = 0u; q < BV / PARTS; q++) {
            const unsigned u = rh * (BV / PARTS) + q;
            const float wf = red[u][rc];
            const float4 x = xs[u];
            const float wx = wf * x.x, wy = wf * x.y, wz = wf * x.z;
            acc[0] += wf;
            acc[1] += wx;
            acc[2] += wy;
            acc[3] += wz;
            acc[4] += wx * x.x;
            acc[5] += wy * x.y;
            acc[6] += wz * x.z;
            acc[7] += wx * x.y;
            acc[8] += wx * x.z;
            acc[9] += wy * x.z;
            acc[10] += wx * x.w;
            acc[11] += wy * x.w;
            acc[12] += wz * x.w;
        }
        if (PARTS > 1u) {
            // The shares of each cell added in share order (deterministic), through `red`.
            float* flat = &red[0][0];
            __syncthreads();
            if (rh > 0u) {
#pragma unroll
                for (unsigned m = 0u; m < NPART; m++) {
                    flat[((rh - 1u) * NPART + m) * TXTY + rc] = acc[m];
                }
            }
            __syncthreads();
            if (rh == 0u) {
                for (unsigned h = 1u; h < PARTS; h++) {
#pragma unroll
                    for (unsigned m = 0u; m < NPART; m++) {
                        acc[m] += flat[((h - 1u) * NPART + m) * TXTY + rc];
                    }
                }
            }
        }
        if (rh == 0u && rc_in) {
#pragma unroll
            for (unsigned m = 0u; m < NPART; m++) {
                partials[partial_at(blockIdx.y, blockIdx.x, gridDim.x, k, m, rc)] = acc[m];
            }
        }
    }
}

// fused_moments: one thread per cell adds the partials of launch `diag` into its moment sums
// and, on the box faces, into the incident fluxes: octant by octant in Octant order, block
// by block in wave order (fixed, so results are deterministic; no atomics). `ranges`: per
// octant its blocks [start, end) in the wave (fused.rs::FusedWave::ranges).
extern "C" __global__ void fused_moments(unsigned diag, unsigned blocks, const unsigned* __restrict__ ranges,
                                         const float* __restrict__ partials, float* __restrict__ moments,
                                         float* __restrict__ incident) {
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
