// The update's per-cell constants, rewritten in place in shared memory once the level's
// records (layout.rs::CellCoeffs: (rho / (pi T)^{3/2}, 1/T, nu, wall), (U, base),
// (s, log2(e) / T)) have landed, so that no thread recomputes them per velocity. With
// l = log2(e) / T, G = nu rho / (pi T)^{3/2} and g = log2 G, the collision term's
// nu f^S = 2^ell (base + s.c (2 |c|^2 / T - 5)), c = xi - U, becomes
//   ell = -l |xi|^2 + 2 l U.xi + (g - l |U|^2),   s.c = s.xi - s.U,
//   2 |c|^2 / T - 5 = -2 ln(2) ell + (2 ln(2) g - 5),
// polynomials in the thread's xi: 7 FMAs per point for ell and s.c instead of c's 3
// subtractions, |c|^2, s.c and the exponent's product (10), and G's product moves into the
// exponent (docs/performance.md, "The exponent as a polynomial in xi"). Their terms grow as
// l (|xi| + |U|)^2 and cancel to l |c|^2, so the rounding of ell grows with the flow speed
// (measured there against the f64 CPU backend at Mach 10). The records become
// (-l, nu, -s.U, 2 ln(2) g - 5), (2 l U, base), (s, g - l |U|^2), and the wall words move
// to `words`. One thread per cell. A cell of the grid with a wall word sets
// `walls` (cleared before), so that the level sweeps with its wall paths; the slots of an
// edge tile's cells outside the grid, which prefetch_level never fills, set no flag (they
// hold an earlier level's constants, transformed again here and possibly not finite; they
// are never swept, and their partials are not written).
__device__ __forceinline__ void fused_coeffs(float4* cf, unsigned* words, unsigned* walls, unsigned a, unsigned b) {
    const unsigned lid = threadIdx.x;
    for (unsigned c = lid; c < TXTY; c += BV) {
        const float4 r0 = cf[3u * c], r1 = cf[3u * c + 1u], r2 = cf[3u * c + 2u];
        const unsigned word = __float_as_uint(r0.w);
        if (HAS_WALLS) {
            words[c] = word;
            if (word != 0u && a * TX + c % TX < NX && b * TY + c / TX < NY) {
                atomicOr(walls, 1u);
            }
        }
        const float l = r2.w;
        // The floor keeps log2 finite in solid cells (no gas: their value is replaced by 0)
        // and in slots outside the grid (never swept); every fluid cell's G is far above it.
        const float g = __log2f(fmaxf(r0.x * r0.z, 1e-30f));
        const float u2 = r1.x * r1.x + r1.y * r1.y + r1.z * r1.z;
        const float su = r2.x * r1.x + r2.y * r1.y + r2.z * r1.z;
        cf[3u * c] = make_float4(-l, r0.z, -su, fmaf(1.38629436f, g, -5.0f));
        cf[3u * c + 1u] = make_float4(2.0f * l * r1.x, 2.0f * l * r1.y, 2.0f * l * r1.z, r1.w);
        cf[3u * c + 2u] = make_float4(r2.x, r2.y, r2.z, fmaf(-l, u2, g));
    }
}

// Copies into shared memory that complete in the background (sm_80 and later: cp.async;
// a plain load and store before), so the next level's data arrives while this level is
// swept, without holding registers.
__device__ __forceinline__ void copy_async4(float* dst, const float* src) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void copy_async16(float4* dst, const float4* src) {
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void copy_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");
#endif
}

// Start copying level k's data of the tile into shared memory: the cells' coefficients
// (3 float4 per cell, cell_records' layout) into `cf`, and this thread's x- and y-inflows
// from the face buffers into `fin` ([plane][row or column][thread]; FPLANES planes, the
// x-face buffer's at xface2_at, the y-face buffer's at yface2_at). Cells outside the domain
// are skipped (never read).
__device__ __forceinline__ void prefetch_level(float4* cf, float* fin, const float4* __restrict__ cells,
                                               const float* __restrict__ xface, const float* __restrict__ yface,
                                               const Ray& r, unsigned a, unsigned b, unsigned k) {
    const unsigned lid = threadIdx.x;
#pragma unroll
    for (unsigned q = 0u; q < (3u * TXTY + BV - 1u) / BV; q++) {
        const unsigned e = lid + q * BV;
        const unsigned c = e / 3u;
        const unsigned iu = a * TX + c % TX, ju = b * TY + c / TX;
        if (e < 3u * TXTY && iu < NX && ju < NY) {
            const unsigned i = r.neg_x ? NX - 1u - iu : iu;
            const unsigned j = r.neg_y ? NY - 1u - ju : ju;
            copy_async16(&cf[e], &cells[3u * ((k * NY + j) * NX + i) + e % 3u]);
        }
    }
    if (a > 0u) {
#pragma unroll
        for (unsigned jj = 0u; jj < TY; jj++) {
            const unsigned ju = b * TY + jj;
            if (ju < NY) {
                const unsigned row = k * NY + (r.neg_y ? NY - 1u - ju : ju);
#pragma unroll
                for (unsigned q = 0u; q < FPLANES; q++) {
                    copy_async4(&fin[(q * (TX + TY) + jj) * BV + lid], &xface[xface2_at(q, row, r.v)]);
                }
            }
        }
    }
    if (b > 0u) {
#pragma unroll
        for (unsigned ii = 0u; ii < TX; ii++) {
            const unsigned iu = a * TX + ii;
            if (iu < NX) {
                const unsigned row = k * NX + (r.neg_x ? NX - 1u - iu : iu);
#pragma unroll
                for (unsigned q = 0u; q < FPLANES; q++) {
                    copy_async4(&fin[(q * (TX + TY) + TY + ii) * BV + lid], &yface[yface2_at(q, row, r.v)]);
                }
            }
        }
    }
}

// The block's shared memory, as the levels use it.
struct Shared {
    // [BV][TXTY + 1]: each thread's row holds its z-carry, overwritten by the level's values.
    float (*red)[TXTY + 1u];
    // [PARTS - 1][NPART][TXTY]: the shares' sums, apart from `red`, so that the next level's
    // sweep may overwrite `red` while the first share adds them.
    float* shares;
    // Second order: [3][BV][TXTY + 1], each thread's face values along x, y, z per cell of
    // the tile: the z-carry, overwritten in place by the level's (sweep_fused2.cu).
    float (*outs)[TXTY + 1u];
    // Per velocity (w, w x, w x^2, w x^3) and its (x, y, z, w): the reduction's factors.
    const float4* wpow;
    const float4* xs;
    const unsigned* runs;
    const unsigned* part_runs;
    float4 (*coef)[3u * TXTY];
    // Per coefficient buffer the cells' wall words (fused_coeffs; only with bodies).
    unsigned (*words)[TXTY];
    const float* inv_w;
    float* fin;
    // Per coefficient buffer: whether the tile has a wall cell at that level.
    unsigned* walls_at;
};

// This level's 13 raw moments per cell of the tile, summed over the block's velocities into
// one partial per cell. Each thread sums one cell (rc) over one share (rh) of the velocities,
// run by run of equal (y, z): the sums of w x^p f (p = 0..3) along a run, then the 13
// moments once per run; the shares are then added in share order (deterministic). Under
// second order also the face fluxes sum w xi_d F_d of the emitted face values, where the
// tile reaches a downwind face of the domain (`edge`; zero elsewhere, never read there).
__device__ __forceinline__ void reduce_level(const Shared& sh, float* __restrict__ partials, unsigned k, unsigned rc,
                                             unsigned rh, bool rc_in, bool edge) {
    float acc[NPART];
#pragma unroll
    for (unsigned m = 0u; m < NPART; m++) {
        acc[m] = 0.0f;
    }
    for (unsigned r = sh.part_runs[rh]; r < sh.part_runs[rh + 1u]; r++) {
        const unsigned u0 = sh.runs[r], u1 = sh.runs[r + 1u] < (rh + 1u) * TXTY ? sh.runs[r + 1u] : (rh + 1u) * TXTY;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        // Pointers stepped by a constant stride, so the unrolled loads take immediate offsets
        // instead of an address computation each.
        const float* fp = &sh.red[u0][rc];
        const float4* wp = &sh.wpow[u0];
        // Eight velocities' loads in flight (measured on an H100 against the compiler's
        // choice, 16 and 32: -4%, -1%, -3% per iteration at 64^3 x 64^3; docs/performance.md,
        // "The reduction's run loop unrolled").
#pragma unroll 8
        for (unsigned u = u0; u < u1; u++, fp += TXTY + 1u, wp++) {
            const float f = *fp;
            const float4 w = *wp;
            s0 = fmaf(w.x, f, s0);
            s1 = fmaf(w.y, f, s1);
            s2 = fmaf(w.z, f, s2);
            s3 = fmaf(w.w, f, s3);
        }
        const float y = sh.xs[u0].y, z = sh.xs[u0].z;
#if SLOTS > 1u
        if (edge) {
            // w x F_x, w F_y, w F_z along the run (y and z are the run's).
            float tx = 0.0f, ty = 0.0f, tz = 0.0f;
            for (unsigned u = u0; u < u1; u++) {
                const float4 w = sh.wpow[u];
                tx = fmaf(w.y, sh.outs[u][rc], tx);
                ty = fmaf(w.x, sh.outs[BV + u][rc], ty);
                tz = fmaf(w.x, sh.outs[2u * BV + u][rc], tz);
            }
            acc[NMOM] += tx;
            acc[NMOM + 1u] += y * ty;
            acc[NMOM + 2u] += z * tz;
        }
#endif
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
    // The shares of each cell added in share order (deterministic). The barrier also ends
    // every read of `red` at this level, so the next level's sweep may overwrite it; the
    // first share's reads of `shares` end before the next level's barrier, after which
    // `shares` is written again.
    if (PARTS > 1u && rh > 0u) {
#pragma unroll
        for (unsigned m = 0u; m < NPART; m++) {
            sh.shares[((rh - 1u) * NPART + m) * TXTY + rc] = acc[m];
        }
    }
    __syncthreads();
    if (PARTS > 1u && rh == 0u) {
        for (unsigned h = 1u; h < PARTS; h++) {
#pragma unroll
            for (unsigned m = 0u; m < NPART; m++) {
                acc[m] += sh.shares[((h - 1u) * NPART + m) * TXTY + rc];
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

// Level kk of the march (k = its z index): start copying the next level's data, sweep this
// one, then reduce it: two barriers per level. One instantiation per (tile shape, first
// level), so the z-loop body is a single variant.
template <bool FULL, bool FIRST>
__device__ __forceinline__ void march_level(const Ray& ray, const Shared& sh, const float4* __restrict__ cells,
                                            const float* __restrict__ bnd, const float4* __restrict__ table,
                                            float* __restrict__ xface, float* __restrict__ yface,
                                            float* __restrict__ partials, float* __restrict__ incident, unsigned a,
                                            unsigned b, unsigned kk, unsigned rc, unsigned rh, bool rc_in) {
    const bool neg_z = ray.vel.z < 0.0f;
    const unsigned k = neg_z ? NZ - 1u - kk : kk;
    // This level's inflows into registers, so that the next level's copies may land in
    // their place: one buffer of inflows instead of two, 8 KiB less shared memory per block
    // (at 8x8), which lets a fourth block onto an SM. Each thread reads and copies only its
    // own slots, and the copy's "memory" clobber keeps these reads before it.
    const unsigned lid = threadIdx.x;
#if SLOTS > 1u
    // Second order: the inflows stay in shared memory, double-buffered, as its cell loop is
    // rolled (sweep_fused2.cu); the next level's copies go to the other half.
    float* const fin_next = sh.fin + ((kk + 1u) & 1u) * FPLANES * (TX + TY) * BV;
#else
    float fin[TX + TY];
#pragma unroll
    for (unsigned n = 0u; n < TX + TY; n++) {
        fin[n] = (n < TY ? a > 0u : b > 0u) ? sh.fin[n * BV + lid] : 0.0f;
    }
    float* const fin_next = sh.fin;
#endif
    if (kk + 1u < NZ) {
        prefetch_level(sh.coef[(kk + 1u) & 1u], fin_next, cells, xface, yface, ray, a, b, neg_z ? k - 1u : k + 1u);
    }
    const float cz = fabsf(ray.vel.z) * bnd[NX + NY + k];
#if SLOTS > 1u
    // The tile reaches a downwind face of the domain at this level: the face fluxes count.
    const bool edge = a == NTX - 1u || b == NTY - 1u || kk == NZ - 1u;
#else
    const bool edge = false;
#endif
    // The next level's flag is cleared before this level's first barrier (fused_coeffs sets
    // it after it); its readers, at the previous level, are past that level's barriers.
    if (lid == 0u && kk + 1u < NZ) {
        sh.walls_at[(kk + 1u) & 1u] = 0u;
    }
    // Uniform over the block: the levels whose tile has no wall cell (most, with bodies)
    // sweep without the wall paths, which with them inlined in every cell made the kernel
    // larger and slower (as in sweep_fused.wgsl, whose wall levels call sweep_level_walls).
#if SLOTS > 1u
    sweep_level2(&sh.red[lid][0], &sh.outs[lid][0], &sh.outs[BV + lid][0], &sh.outs[2u * BV + lid][0], ray,
                 sh.coef[kk & 1u], sh.fin + (kk & 1u) * FPLANES * (TX + TY) * BV + lid, sh.inv_w, bnd, xface, yface,
                 incident, a, b, k, kk, cz, kk == 0u);
#else
    if (HAS_WALLS && sh.walls_at[kk & 1u] != 0u) {
        Inflows in;
#pragma unroll
        for (unsigned n = 0u; n < TX + TY; n++) {
            in.v[n] = fin[n];
        }
        sweep_level_walls(&sh.red[lid][0], ray, sh.coef[kk & 1u], in, sh.words[kk & 1u], sh.inv_w, cells, bnd, table,
                          xface, yface, incident, a, b, k, kk, cz, FIRST);
    } else {
        sweep_level<FULL, FIRST, false>(&sh.red[lid][0], ray, sh.coef[kk & 1u], fin, sh.words[kk & 1u], sh.inv_w,
                                        cells, bnd, table, xface, yface, incident, a, b, k, kk, cz, FIRST);
    }
#endif
    // Every thread's values are in `red`, and the next level's copies have landed.
    copy_async_wait();
    __syncthreads();
    // The next level's constants, ready after the reduction's barrier.
    if (kk + 1u < NZ) {
        fused_coeffs(sh.coef[(kk + 1u) & 1u], sh.words[(kk + 1u) & 1u], &sh.walls_at[(kk + 1u) & 1u], a, b);
    }
    reduce_level(sh, partials, k, rc, rh, rc_in, edge);
}

// The whole z-march of one tile shape: the first level (z-inflow from the box face), then
// the others.
template <bool FULL>
__device__ __forceinline__ void march(const Ray& ray, const Shared& sh, const float4* __restrict__ cells,
                                      const float* __restrict__ bnd, const float4* __restrict__ table,
                                      float* __restrict__ xface, float* __restrict__ yface,
                                      float* __restrict__ partials, float* __restrict__ incident, unsigned a,
                                      unsigned b, unsigned rc, unsigned rh, bool rc_in) {
    march_level<FULL, true>(ray, sh, cells, bnd, table, xface, yface, partials, incident, a, b, 0u, rc, rh, rc_in);
    for (unsigned kk = 1u; kk < NZ; kk++) {
        march_level<FULL, false>(ray, sh, cells, bnd, table, xface, yface, partials, incident, a, b, kk, rc, rh,
                                 rc_in);
    }
}

extern "C" __global__ void __launch_bounds__(BV, FUSED_MIN_BLOCKS)
    sweep_fused(unsigned diag, unsigned a_lo, const float4* __restrict__ cells, const float* __restrict__ bnd,
                const float4* __restrict__ table, float* __restrict__ xface, float* __restrict__ yface,
                float* __restrict__ partials, float* __restrict__ incident) {
    // Row stride TXTY + 1: a warp's writes (threads on velocities, one cell) and reads
    // (threads on cells, one velocity) both fall in distinct banks.
    // Dynamic (its size is set at launch): with it the block's shared memory exceeds the
    // 48 KiB a static declaration may hold (fused.rs::shared_bytes).
    extern __shared__ float dyn_shared[];
    // The block's velocities and their weighted powers of x, and its runs of equal (y, z)
    // cut at the shares' bounds: the reduction sums w x^p f along a run and expands the 13
    // moments once per run.
    __shared__ float4 xs[BV];
    __shared__ float4 wpow[BV];
    __shared__ unsigned runs[BV + PARTS + 1u];
    __shared__ unsigned part_runs[PARTS + 1u];
    // The tile's cell coefficients, this level's and the next's (loaded one level ahead),
    // and its columns' and rows' inverse widths: broadcast reads from shared memory.
    __shared__ float4 coef[2][3u * TXTY];
    __shared__ unsigned words[2][TXTY];
    __shared__ float inv_w[TX + TY];
    // This thread's x-inflows (TY rows) and y-inflows (TX columns) of the next level, copied
    // here while the current one, taken into registers, is swept (march_level).
#if SLOTS > 1u
    // Second order: two halves, this level's and the next's (march_level), after `outs` in
    // the dynamic memory (at 8 x 8 they would pass the 48 KiB of static shared memory).
    float* const fin = dyn_shared + BV * (TXTY + 1u) + (PARTS - 1u) * NPART * TXTY + 3u * BV * (TXTY + 1u);
#else
    __shared__ float fin[(TX + TY) * BV];
#endif
    __shared__ unsigned walls_at[2];
    float* const shares = dyn_shared + BV * (TXTY + 1u);
    const Shared sh = {reinterpret_cast<float(*)[TXTY + 1u]>(dyn_shared),
                       shares,
                       reinterpret_cast<float(*)[TXTY + 1u]>(shares + (PARTS - 1u) * NPART * TXTY),
                       wpow,
                       xs,
                       runs,
                       part_runs,
                       coef,
                       words,
                       inv_w,
                       fin,
                       walls_at};
    const unsigned lid = threadIdx.x;
    const unsigned v = blockIdx.x * BV + lid;
    const unsigned a = a_lo + blockIdx.y;
    const unsigned b = diag - a;
    const float4 vel = table[v * (SROW + 1u)];
    const float4 shape = table[v * (SROW + 1u) + 1u];
    xs[lid] = vel;
    wpow[lid] = make_float4(vel.w, vel.w * vel.x, vel.w * vel.x * vel.x, vel.w * vel.x * vel.x * vel.x);
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
    const unsigned x_face = dens() + face_offset(neg_x ? 1u : 0u);
    const unsigned y_face = dens() + face_offset(neg_y ? 3u : 2u);
    const unsigned z_face = dens() + face_offset(neg_z ? 5u : 4u);
    const unsigned gv = __float_as_uint(shape.w);
    const Ray ray = {vel,
                     shape,
                     vel.x * vel.x + vel.y * vel.y + vel.z * vel.z,
                     v,
                     x_face,
                     y_face,
                     z_face,
                     neg_x,
                     neg_y,
                     slot(gv, 0u, !neg_x),
                     slot(gv, 1u, !neg_y),
                     slot(gv, 2u, !neg_z),
                     part_at(neg_x ? 1u : 0u),
                     part_at(neg_y ? 3u : 2u),
                     part_at(neg_z ? 5u : 4u),
                     exit_at(neg_x ? 0u : 1u),
                     exit_at(neg_y ? 2u : 3u),
                     exit_at(neg_z ? 4u : 5u)};
    prefetch_level(coef[0], fin, cells, xface, yface, ray, a, b, neg_z ? NZ - 1u : 0u);
    if (lid == 0u) {
        walls_at[0] = 0u;
        walls_at[1] = 0u;
    }
    copy_async_wait();
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
    // The reduction's cell and share of the velocities (each share is TXTY velocities).
    const unsigned rc = lid % TXTY;
    const unsigned rh = lid / TXTY;
    // fused_coeffs writes the same test out for its wall flag: one shared helper cost the
    // cube's iteration 5% (docs/performance.md, "The exponent as a polynomial in xi").
    const bool rc_in = a * TX + rc % TX < NX && b * TY + rc / TX < NY;
    fused_coeffs(coef[0], words[0], &walls_at[0], a, b);
    __syncthreads();
#if SLOTS > 1u
    // Second order: one variant for every level and tile (sweep_fused2.cu says why).
    for (unsigned kk = 0u; kk < NZ; kk++) {
        march_level<false, false>(ray, sh, cells, bnd, table, xface, yface, partials, incident, a, b, kk, rc, rh,
                                  rc_in);
    }
#else
    // Interior tiles (no edge tests) and edge tiles: a branch uniform across the block.
    if (a * TX + TX <= NX && b * TY + TY <= NY) {
        march<true>(ray, sh, cells, bnd, table, xface, yface, partials, incident, a, b, rc, rh, rc_in);
    } else {
        march<false>(ray, sh, cells, bnd, table, xface, yface, partials, incident, a, b, rc, rh, rc_in);
    }
#endif
}
