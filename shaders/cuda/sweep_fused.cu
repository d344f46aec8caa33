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

// Fast intrinsics with denormals flushed (the sweep is f32 throughout; a value below
// 1e-38 is zero to it): 2^x and 1/x in one MUFU instruction each.
__device__ __forceinline__ float ex2_ftz(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float rcp_ftz(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// A coefficient as the fused sweep keeps it in shared memory: the first float4 of a cell
// carries its exponent factor times log2(e) in .w (the wall word's place; no walls here).
__device__ __forceinline__ float4 scaled(float4 c, unsigned e) {
    if (e % 3u == 0u) {
        c.w = c.y * 1.4426950408889634f;
    }
    return c;
}

// What a thread keeps of its velocity.
struct Ray {
    float4 vel, shape;
    unsigned v, x_face, y_face, z_face;
    bool neg_x, neg_y;
};

// One z-level of the tile for one velocity: the cells in upwind order, the x- and y-inflows
// from the face buffers (or the box faces), the z-inflow from `carry` (or, FIRST, the box
// face); `carry` becomes this level's values and the outflows go to the face buffers.
// FULL: the tile lies inside the domain (no edge tests).
template <bool FULL, bool FIRST>
__device__ __forceinline__ void sweep_level(float (&carry)[TY][TX], const Ray& r, const float4* cf, const float* inv_w,
                                            const float* __restrict__ bnd, float* __restrict__ xface,
                                            float* __restrict__ yface, unsigned a, unsigned b, unsigned k, float cz) {
    const float ux = fabsf(r.vel.x), uy = fabsf(r.vel.y);
#pragma unroll
    for (unsigned jj = 0u; jj < TY; jj++) {
        const unsigned ju = b * TY + jj;
        if (!FULL && ju >= NY) {
            // Rows past the domain's edge repeat the last real one, whose values the
            // y-outflow below then writes.
#pragma unroll
            for (unsigned ii = 0u; ii < TX; ii++) {
                carry[jj][ii] = carry[jj > 0u ? jj - 1u : 0u][ii];
            }
            continue;
        }
        const unsigned j = r.neg_y ? NY - 1u - ju : ju;
        const float by = uy * inv_w[TX + jj];
        float fx = a == 0u ? bnd[r.x_face + k * NY + j] * r.shape.x : xface[face_at(k * NY + j, r.v)];
#pragma unroll
        for (unsigned ii = 0u; ii < TX; ii++) {
            const unsigned iu = a * TX + ii;
            if (!FULL && iu >= NX) {
                carry[jj][ii] = fx;
                continue;
            }
            const unsigned i = r.neg_x ? NX - 1u - iu : iu;
            const float ax = ux * inv_w[ii];
            float fy = carry[jj > 0u ? jj - 1u : 0u][ii];
            if (jj == 0u) {
                fy = b == 0u ? bnd[r.y_face + k * NX + i] * r.shape.y : yface[face_at(k * NX + i, r.v)];
            }
            const float fz = FIRST ? bnd[r.z_face + j * NX + i] * r.shape.z : carry[jj][ii];
            const float4 e0 = cf[3u * (jj * TX + ii)];
            const float4 e1 = cf[3u * (jj * TX + ii) + 1u];
            const float4 e2 = cf[3u * (jj * TX + ii) + 2u];
            const float cx = r.vel.x - e1.x, cy = r.vel.y - e1.y, cw = r.vel.z - e1.z;
            const float c2 = cx * cx + cy * cy + cw * cw;
            const float sc = e2.x * cx + e2.y * cy + e2.z * cw;
            const float fs = e0.x * ex2_ftz(-c2 * e0.w) * (e1.w + sc * (2.0f * c2 * e0.y - 5.0f));
            const float f = (ax * fx + by * fy + cz * fz + e0.z * fs) * rcp_ftz(ax + by + cz + e0.z);
            carry[jj][ii] = f;
            fx = f;
        }
        xface[face_at(k * NY + j, r.v)] = fx;
    }
#pragma unroll
    for (unsigned ii = 0u; ii < TX; ii++) {
        const unsigned iu = a * TX + ii;
        if (FULL || iu < NX) {
            yface[face_at(k * NX + (r.neg_x ? NX - 1u - iu : iu), r.v)] = carry[TY - 1u][ii];
        }
    }
}

// The coefficients of the tile's cells at level k (3 float4 per cell: cell_records'
// layout) into `dst`; cells outside the domain are left as they are (never read).
__device__ __forceinline__ void load_level(float4* dst, const float4* __restrict__ cells, unsigned a, unsigned b,
                                           unsigned k, bool neg_x, bool neg_y) {
    for (unsigned e = threadIdx.x; e < 3u * TXTY; e += BV) {
        const unsigned c = e / 3u;
        const unsigned iu = a * TX + c % TX, ju = b * TY + c / TX;
        if (iu < NX && ju < NY) {
            const unsigned i = neg_x ? NX - 1u - iu : iu;
            const unsigned j = neg_y ? NY - 1u - ju : ju;
            dst[e] = scaled(cells[3u * ((k * NY + j) * NX + i) + e % 3u], e);
        }
    }
}

extern "C" __global__ void __launch_bounds__(BV)
    sweep_fused(unsigned diag, unsigned a_lo, const float4* __restrict__ cells, const float* __restrict__ bnd,
                const float4* __restrict__ table, float* __restrict__ xface, float* __restrict__ yface,
                float* __restrict__ partials) {
    // Row stride TXTY + 1: a warp's writes (threads on velocities, one cell) and reads
    // (threads on cells, one velocity) both fall in distinct banks.
    __shared__ float red[BV][TXTY + 1u];
    // The block's velocities, and its runs of equal (y, z) cut at the shares' bounds: the
    // reduction sums 1, x, x^2, x^3 along a run and expands the 13 moments once per run.
    __shared__ float4 xs[BV];
    __shared__ unsigned runs[BV + PARTS + 1u];
    __shared__ unsigned part_runs[PARTS + 1u];
    // The tile's cell coefficients, this level's and the next's (loaded one level ahead),
    // and its columns' and rows' inverse widths: broadcast reads from shared memory.
    __shared__ float4 coef[2][3u * TXTY];
    __shared__ float inv_w[TX + TY];
    const unsigned lid = threadIdx.x;
    const unsigned v = blockIdx.x * BV + lid;
    const unsigned a = a_lo + blockIdx.y;
    const unsigned b = diag - a;
    const float4 vel = table[v * (SROW + 1u)];
    const float4 shape = table[v * (SROW + 1u) + 1u];
    xs[lid] = vel;
    const bool neg_x = vel.x < 0.0f;
    const bool neg_y = vel.y < 0.0f;
    const bool neg_z = vel.z < 0.0f;
    if (lid < TX + TY) {
        const unsigned n = lid < TX ? a * TX + lid : b * TY + lid - TX;
        const bool on_x = lid < TX;
        const unsigned nn = on_x ? NX : NY;
        const bool neg = on_x ? neg_x : neg_y;
        inv_w[lid] = n < nn ? bnd[(on_x ? 0u : NX) + (neg ? nn - 1u - n : n)] : 0.0f;
    }
    load_level(coef[0], cells, a, b, neg_z ? NZ - 1u : 0u, neg_x, neg_y);
    __syncthreads();
    if (lid == 0u) {
        unsigned n = 0u;
        for (unsigned h = 0u; h < PARTS; h++) {
            part_runs[h] = n;
            for (unsigned u = h * TXTY; u < (h + 1u) * TXTY; u++) {
                if (u == h * TXTY || xs[u].y != xs[u - 1u].y || xs[u].z != xs[u - 1u].z) {
                    runs[n++] = u;
                }
            }
        }
        part_runs[PARTS] = n;
        runs[n] = BV;
    }
    const unsigned x_face = dens() + face_offset(neg_x ? 1u : 0u);
    const unsigned y_face = dens() + face_offset(neg_y ? 3u : 2u);
    const unsigned z_face = dens() + face_offset(neg_z ? 5u : 4u);
    const float uz = fabsf(vel.z);
    const Ray ray = {vel, shape, v, x_face, y_face, z_face, neg_x, neg_y};
    // The reduction's cell and share of the velocities (each share is TXTY velocities).
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
        const float4* cf = coef[kk & 1u];
        // The next level's coefficients, loaded now and stored after this level's update.
        float4 next[(3u * TXTY + BV - 1u) / BV];
        if (kk + 1u < NZ) {
            const unsigned kn = neg_z ? k - 1u : k + 1u;
#pragma unroll
            for (unsigned r = 0u; r < (3u * TXTY + BV - 1u) / BV; r++) {
                const unsigned e = lid + r * BV;
                const unsigned c = e / 3u;
                const unsigned iu = a * TX + c % TX, ju = b * TY + c / TX;
                if (e < 3u * TXTY && iu < NX && ju < NY) {
                    const unsigned i = neg_x ? NX - 1u - iu : iu;
                    const unsigned j = neg_y ? NY - 1u - ju : ju;
                    next[r] = cells[3u * ((kn * NY + j) * NX + i) + e % 3u];
                }
            }
        }
        const float cz = uz * bnd[NX + NY + k];
        // Specialised for interior tiles (no edge tests) and for the first level (z-inflow
        // from the face); the branch is uniform across the block.
        const bool full = a * TX + TX <= NX && b * TY + TY <= NY;
        if (kk == 0u) {
            if (full) sweep_level<true, true>(carry, ray, cf, inv_w, bnd, xface, yface, a, b, k, cz);
            else sweep_level<false, true>(carry, ray, cf, inv_w, bnd, xface, yface, a, b, k, cz);
        } else {
            if (full) sweep_level<true, false>(carry, ray, cf, inv_w, bnd, xface, yface, a, b, k, cz);
            else sweep_level<false, false>(carry, ray, cf, inv_w, bnd, xface, yface, a, b, k, cz);
        }
        // The previous level's readers of `red` and of the other `coef` buffer are done.
        __syncthreads();
        if (kk + 1u < NZ) {
#pragma unroll
            for (unsigned r = 0u; r < (3u * TXTY + BV - 1u) / BV; r++) {
                if (lid + r * BV < 3u * TXTY) {
                    coef[(kk + 1u) & 1u][lid + r * BV] = scaled(next[r], lid + r * BV);
                }
            }
        }
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
        for (unsigned r = part_runs[rh]; r < part_runs[rh + 1u]; r++) {
            const unsigned u0 = runs[r], u1 = runs[r + 1u] < (rh + 1u) * TXTY ? runs[r + 1u] : (rh + 1u) * TXTY;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            for (unsigned u = u0; u < u1; u++) {
                const float wf = red[u][rc];
                const float x = xs[u].x;
                const float t1 = wf * x;
                const float t2 = t1 * x;
                s0 += wf;
                s1 += t1;
                s2 += t2;
                s3 = fmaf(t2, x, s3);
            }
            const float y = xs[u0].y, z = xs[u0].z;
            const float r2 = y * y + z * z;
            const float q = fmaf(r2, s0, s2);
            acc[0] += s0;
            acc[1] += s1;
            acc[2] += y * s0;
            acc[3] += z * s0;
            acc[4] += s2;
            acc[5] += y * y * s0;
            acc[6] += z * z * s0;
            acc[7] += y * s1;
            acc[8] += z * s1;
            acc[9] += y * z * s0;
            acc[10] += fmaf(r2, s1, s3);
            acc[11] += y * q;
            acc[12] += z * q;
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
