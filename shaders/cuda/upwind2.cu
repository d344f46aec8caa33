// solve_cell: the second-order cell update (solver.scheme = "second_order"; docs/model.md,
// "Limiter"), for sweep_slice.cu, which follows it in the program (src/backend/cuda/kernels.rs).
// The CUDA form of shaders/upwind2.wgsl::solve_cell, line for line: per-axis ranges widened by
// the upwind neighbours' face values side0, side1 (that file says which). CPU reference:
// src/backend/upwind2.rs::solve_cell (f64). In f32 its divisions are the fast ones (R_DIV:
// __fdividef, a reciprocal and a product, within 2 ulp; IEEE in f64), and the kinks divide by 1 + w once: IEEE
// divisions cost ten instructions and a slow-path call each, and the update is the
// second-order sweep's bottleneck (docs/performance.md, "The fused second-order sweep"). The
// f32 result moves by a few ulp, well inside what f32 sweeps already differ from the f64
// reference by.

struct CellUpdate {
    real f;
    real out[3];
};

__device__ __forceinline__ real balance_lhs(const real a[3], const real in[3], real w, real nu, const real lo[3],
                                             const real hi[3], real f) {
    real g = nu * f;
    for (unsigned d = 0u; d < 3u; d++) {
        g += a[d] * (a[d] > 0.0f ? R_MIN(R_MAX((1.0f + w) * f - w * in[d], lo[d]), hi[d]) : f);
    }
    return g;
}

// Keep in sync with src/backend/upwind2.rs::PIECE_SOLVES and shaders/upwind2.wgsl.
#define PIECE_SOLVES 3u
// Two solves within this share of the ranges' top agree (a few f32 round-offs): they lie on
// either side of a kink, where both pieces give the root.
// In f64 the CPU reference's value (upwind2.rs::PIECE_AGREE).
#if KN_F64
#define PIECE_AGREE 1e-14
#else
#define PIECE_AGREE 1e-6f
#endif

// Newton on the pieces (upwind2.rs::piece_root): which bound each outflow takes at f, and the
// linear balance of that piece solved, in differences of close values, until f stays in the
// piece it was solved on. Returns whether f settled within PIECE_SOLVES solves (the root in
// `root`); bracket_root takes over where not.
__device__ __forceinline__ bool piece_root(const real a[3], const real in[3], real w, real nu, real fs,
                                           const real lo[3], const real hi[3], real lmin, real hmax, real f0,
                                           real &root) {
    // A range within round-off of a point (a gas at rest, a uniform stream) holds the root
    // to the agreement's accuracy: no solve.
    if (hmax - lmin <= PIECE_AGREE * hmax) {
        root = R_MIN(R_MAX(f0, lmin), hmax);
        return true;
    }
    real f = f0;
    unsigned last_piece = 0u;
    real last_f = f;
    for (unsigned solve = 0u; solve <= PIECE_SOLVES; solve++) {
        // Per axis the piece's term is s_d (b_d - in_d), with b_d the bound taken (f^S
        // between the bounds) and s_d = a_d, or (1 + w) a_d between them, where it also adds
        // to the slope; selected, not branched on (lanes on different pieces would diverge).
        // An inactive axis adds 0.
        real num = 0.0f, den = nu;
        unsigned piece = 0u;
        for (unsigned d = 0u; d < 3u; d++) {
            const real x = (1.0f + w) * f - w * in[d];
            const bool below = x < lo[d], above = x > hi[d];
            const real b = below ? lo[d] : (above ? hi[d] : fs);
            const real sd = (below || above) ? a[d] : (1.0f + w) * a[d];
            num += sd * (b - in[d]);
            den += (below || above) ? 0.0f : sd;
            piece |= (a[d] > 0.0f ? (below ? 1u : (above ? 2u : 0u)) : 0u) << (2u * d);
        }
        if (solve > 0u && (piece == last_piece || R_ABS(f - last_f) <= PIECE_AGREE * hmax)) {
            root = f;
            return true;
        }
        if (solve == PIECE_SOLVES) {
            break;
        }
        last_piece = piece;
        last_f = f;
        f = R_MIN(R_MAX(fs - R_DIV(num, den), lmin), hmax);
    }
    root = f;
    return false;
}

// The root bracketed between the nearest kinks (upwind2.rs::bracket_root): a fixed cost.
__device__ real bracket_root(const real a[3], const real in[3], real w, real nu, real rhs,
                              const real lo[3], const real hi[3], real lmin, real hmax) {
    const real inv_1w = R_DIV(1.0f, 1.0f + w);
    real kl = lmin, kh = hmax;
    real gl = balance_lhs(a, in, w, nu, lo, hi, lmin);
    real gh = balance_lhs(a, in, w, nu, lo, hi, hmax);
    for (unsigned d = 0u; d < 3u; d++) {
        if (a[d] > 0.0f) {
            for (unsigned e = 0u; e < 2u; e++) {
                const real kk = (w * in[d] + (e == 1u ? hi[d] : lo[d])) * inv_1w;
                if (kk > kl && kk < kh) {
                    const real gk = balance_lhs(a, in, w, nu, lo, hi, kk);
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
    return gh > gl ? kl + R_DIV((rhs - gl) * (kh - kl), gh - gl) : kl;
}

__device__ CellUpdate solve_cell(const real a[3], const real in[3], real nu, real fs, const real side0[3],
                                 const real side1[3]) {
    // The neighbour faces' extremes are kept apart from the inflows' so that the union of the
    // active axes' ranges comes out of this one loop.
    real lo0 = fs, hi0 = fs, side_lo = fs, side_hi = fs;
    for (unsigned d = 0u; d < 3u; d++) {
        if (a[d] > 0.0f) {
            lo0 = R_MIN(lo0, in[d]);
            hi0 = R_MAX(hi0, in[d]);
            side_lo = R_MIN(side_lo, R_MIN(side0[d], side1[d]));
            side_hi = R_MAX(side_hi, R_MAX(side0[d], side1[d]));
        }
    }
    real lo[3], hi[3];
    for (unsigned d = 0u; d < 3u; d++) {
        lo[d] = R_MIN(lo0, R_MIN(side0[d], side1[d]));
        hi[d] = R_MAX(hi0, R_MAX(side0[d], side1[d]));
    }
    // The union of the active axes' ranges holds the root.
    const real lmin = R_MIN(lo0, side_lo), hmax = R_MAX(hi0, side_hi);
    const real sum_a = a[0] + a[1] + a[2];
    // The diamond weight (src/backend/upwind2.rs): 1 in cells thinner than a mean free path.
    const real w = R_MIN(1.0f, R_DIV(sum_a, nu));
    const real rhs = a[0] * in[0] + a[1] * in[1] + a[2] * in[2] + nu * fs;
    real f = R_DIV(rhs + w * (rhs - nu * fs), (1.0f + w) * sum_a + nu);
    bool clamped = false;
    for (unsigned d = 0u; d < 3u; d++) {
        const real x = (1.0f + w) * f - w * in[d];
        clamped = clamped || (a[d] > 0.0f && (x < lo[d] || x > hi[d]));
    }
    if (clamped) {
        // Lanes of a warp wait for the longest path, so where a few of 32 clamp this sets the
        // second-order sweep's pace: one solve in most clamped cells, where the bracket
        // evaluates the balance up to eight times.
        real root;
        f = piece_root(a, in, w, nu, fs, lo, hi, lmin, hmax, f, root) ? root
                                                                       : bracket_root(a, in, w, nu, rhs, lo, hi, lmin, hmax);
    }
    f = R_MIN(R_MAX(f, lmin), hmax);
    CellUpdate u;
    u.f = f;
    for (unsigned d = 0u; d < 3u; d++) {
        u.out[d] = a[d] > 0.0f ? R_MIN(R_MAX((1.0f + w) * f - w * in[d], lo[d]), hi[d]) : f;
    }
    return u;
}
