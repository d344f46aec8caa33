// solve_cell: the second-order cell update (solver.scheme = "second_order"; docs/model.md,
// "Limiter"), for sweep_slice.cu, which follows it in the program (src/backend/cuda/kernels.rs).
// The CUDA form of shaders/upwind2.wgsl::solve_cell, line for line: per-axis ranges widened by
// the upwind neighbours' face values side0, side1 (that file says which). CPU reference:
// src/backend/upwind2.rs::solve_cell (f64). Its divisions are the fast ones (__fdividef, a
// reciprocal and a product, within 2 ulp), and the kinks divide by 1 + w once: IEEE
// divisions cost ten instructions and a slow-path call each, eight of them in a clamped cell,
// and the update is the second-order sweep's bottleneck (docs/performance.md, "The fused
// second-order sweep"). The f32 result moves by a few ulp, well inside what f32 sweeps
// already differ from the f64 reference by.

struct CellUpdate {
    float f;
    float out[3];
};

__device__ __forceinline__ float balance_lhs(const float a[3], const float in[3], float w, float nu, const float lo[3],
                                             const float hi[3], float f) {
    float g = nu * f;
    for (unsigned d = 0u; d < 3u; d++) {
        g += a[d] * (a[d] > 0.0f ? fminf(fmaxf((1.0f + w) * f - w * in[d], lo[d]), hi[d]) : f);
    }
    return g;
}

__device__ CellUpdate solve_cell(const float a[3], const float in[3], float nu, float fs, const float side0[3],
                                 const float side1[3]) {
    // The neighbour faces' extremes are kept apart from the inflows' so that the union of the
    // active axes' ranges comes out of this one loop.
    float lo0 = fs, hi0 = fs, side_lo = fs, side_hi = fs;
    for (unsigned d = 0u; d < 3u; d++) {
        if (a[d] > 0.0f) {
            lo0 = fminf(lo0, in[d]);
            hi0 = fmaxf(hi0, in[d]);
            side_lo = fminf(side_lo, fminf(side0[d], side1[d]));
            side_hi = fmaxf(side_hi, fmaxf(side0[d], side1[d]));
        }
    }
    float lo[3], hi[3];
    for (unsigned d = 0u; d < 3u; d++) {
        lo[d] = fminf(lo0, fminf(side0[d], side1[d]));
        hi[d] = fmaxf(hi0, fmaxf(side0[d], side1[d]));
    }
    // The union of the active axes' ranges holds the root.
    const float lmin = fminf(lo0, side_lo), hmax = fmaxf(hi0, side_hi);
    const float sum_a = a[0] + a[1] + a[2];
    // The diamond weight (src/backend/upwind2.rs): 1 in cells thinner than a mean free path.
    const float w = fminf(1.0f, __fdividef(sum_a, nu));
    const float rhs = a[0] * in[0] + a[1] * in[1] + a[2] * in[2] + nu * fs;
    float f = __fdividef(rhs + w * (rhs - nu * fs), (1.0f + w) * sum_a + nu);
    bool clamped = false;
    for (unsigned d = 0u; d < 3u; d++) {
        const float x = (1.0f + w) * f - w * in[d];
        clamped = clamped || (a[d] > 0.0f && (x < lo[d] || x > hi[d]));
    }
    if (clamped) {
        const float inv_1w = __fdividef(1.0f, 1.0f + w);
        float kl = lmin, kh = hmax;
        float gl = balance_lhs(a, in, w, nu, lo, hi, lmin);
        float gh = balance_lhs(a, in, w, nu, lo, hi, hmax);
        for (unsigned d = 0u; d < 3u; d++) {
            if (a[d] > 0.0f) {
                for (unsigned e = 0u; e < 2u; e++) {
                    const float kk = (w * in[d] + (e == 1u ? hi[d] : lo[d])) * inv_1w;
                    if (kk > kl && kk < kh) {
                        const float gk = balance_lhs(a, in, w, nu, lo, hi, kk);
                        if (gk <= rhs) {
                            kl = kk;
                            gl = gk;
                        } else {
                            kh = kk;
                            gh = gk;
                        }
                    }
                }
            }
        }
        f = gh > gl ? kl + __fdividef((rhs - gl) * (kh - kl), gh - gl) : kl;
    }
    f = fminf(fmaxf(f, lmin), hmax);
    CellUpdate u;
    u.f = f;
    for (unsigned d = 0u; d < 3u; d++) {
        u.out[d] = a[d] > 0.0f ? fminf(fmaxf((1.0f + w) * f - w * in[d], lo[d]), hi[d]) : f;
    }
    return u;
}
