// solve_cell: the second-order cell update (solver.scheme = "second_order"; the bounded
// diamond difference of docs/model.md). Appended to sweep_slice.wgsl and sweep_fused2.wgsl
// by the host.
// CPU reference: src/backend/upwind2.rs::solve_cell (f64); twin:
// src/backend/wgpu/twin2.rs::solve_cell (f32, line for line like this file).
//
// Solves sum_d a_d (clamp((1 + w) f - w inflow_d, lo_d, hi_d) - inflow_d) + nu (f - fs) = 0,
// w = min(1, sum_d a_d / nu) the diamond weight. Axis d's range [lo_d, hi_d] spans fs, the
// inflows of the active axes (a_d > 0) and the face values side0[d], side1[d] that the
// upwind neighbours across the other axes emitted along d (the inflow itself where there is
// none): side0 = (y-neighbour's x, x-neighbour's y, x-neighbour's z), side1 = (z-neighbour's
// x, z-neighbour's y, y-neighbour's z). Unclamped, the answer is the weighted diamond
// difference; otherwise Newton's method on the pieces of the piecewise-linear left side
// (upwind2.rs::piece_root: one solve in most clamped cells), and where it does not settle
// the root interpolated between the nearest kinks (upwind2.rs::bracket_root).

// Keep in sync with src/backend/upwind2.rs::PIECE_SOLVES.
const PIECE_SOLVES: u32 = 3u;
// Two solves within PIECE_AGREE of the ranges' top agree (a few round-offs of `real`,
// shaders/real_f32.wgsl or real_f64.wgsl): they lie on either side of a kink, where both
// pieces give the root.

struct CellUpdate {
    f: real,
    // The face value emitted along x, y, z (f itself along an inactive axis).
    out: vec3<real>,
}

fn emitted(a: vec3<real>, inflow: vec3<real>, w: real, lo: vec3<real>, hi: vec3<real>, f: real) -> vec3<real> {
    return select(vec3<real>(f), clamp((1.0 + w) * f - w * inflow, lo, hi), a > vec3<real>(0.0));
}

fn balance_lhs(a: vec3<real>, inflow: vec3<real>, w: real, nu: real, lo: vec3<real>, hi: vec3<real>, f: real) -> real {
    return nu * f + dot(a, emitted(a, inflow, w, lo, hi, f));
}

struct PieceRoot {
    f: real,
    // Whether f settled within PIECE_SOLVES solves; bracket_root takes over where not.
    solved: bool,
}

// Newton on the pieces (upwind2.rs::piece_root): which bound each outflow takes at f, and the
// linear balance of that piece solved, in differences of close values, until f stays in the
// piece it was solved on. One solve in most clamped cells.
fn piece_root(a: vec3<real>, inflow: vec3<real>, w: real, nu: real, fs: real, lo: vec3<real>, hi: vec3<real>, lmin: real,
              hmax: real, f0: real) -> PieceRoot {
    // A range within round-off of a point (a gas at rest, a uniform stream) holds the root
    // to the agreement's accuracy: no solve.
    if hmax - lmin <= PIECE_AGREE * hmax {
        return PieceRoot(clamp(f0, lmin, hmax), true);
    }
    var f = f0;
    var last_piece = 0u;
    var last_f = f;
    for (var solve = 0u; solve <= PIECE_SOLVES; solve++) {
        // Per axis the piece's term is s_d (b_d - inflow_d), b_d the bound taken (fs between
        // the bounds), s_d = a_d, or (1 + w) a_d between them, where it also adds to the
        // slope: selected, not branched on (lanes on different pieces would diverge). An
        // inactive axis adds 0.
        let x = (1.0 + w) * f - w * inflow;
        let below = x < lo;
        let above = x > hi;
        let bound = select(select(vec3<real>(fs), hi, above), lo, below);
        let sd = select((1.0 + w) * a, a, below | above);
        let term = sd * (bound - inflow);
        let num = term.x + term.y + term.z;
        let lin = select(sd, vec3<real>(0.0), below | above);
        let den = nu + (lin.x + lin.y + lin.z);
        let code = select(select(vec3<u32>(0u), vec3<u32>(2u), above), vec3<u32>(1u), below) &
                   select(vec3<u32>(0u), vec3<u32>(3u), a > vec3<real>(0.0));
        let piece = code.x | (code.y << 2u) | (code.z << 4u);
        if solve > 0u && (piece == last_piece || abs(f - last_f) <= PIECE_AGREE * hmax) {
            return PieceRoot(f, true);
        }
        if solve == PIECE_SOLVES {
            break;
        }
        last_piece = piece;
        last_f = f;
        f = clamp(fs - num / den, lmin, hmax);
    }
    return PieceRoot(f, false);
}

// The root bracketed between the nearest kinks (upwind2.rs::bracket_root): a fixed cost.
fn bracket_root(a: vec3<real>, inflow: vec3<real>, w: real, nu: real, rhs: real, lo: vec3<real>, hi: vec3<real>, lmin: real,
                hmax: real) -> real {
    var kl = lmin;
    var kh = hmax;
    var gl = balance_lhs(a, inflow, w, nu, lo, hi, lmin);
    var gh = balance_lhs(a, inflow, w, nu, lo, hi, hmax);
    for (var d = 0u; d < 3u; d++) {
        if a[d] > 0.0 {
            for (var e = 0u; e < 2u; e++) {
                let kk = (w * inflow[d] + select(lo[d], hi[d], e == 1u)) / (1.0 + w);
                if kk > kl && kk < kh {
                    let gk = balance_lhs(a, inflow, w, nu, lo, hi, kk);
                    if gk <= rhs {
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
    return select(kl, kl + (rhs - gl) * (kh - kl) / (gh - gl), gh > gl);
}

fn solve_cell(a: vec3<real>, inflow: vec3<real>, nu: real, fs: real, side0: vec3<real>, side1: vec3<real>) -> CellUpdate {
    // The neighbour faces' extremes are kept apart from the inflows' so that the union of the
    // active axes' ranges comes out of this one loop.
    var lo0 = fs;
    var hi0 = fs;
    var side_lo = fs;
    var side_hi = fs;
    for (var d = 0u; d < 3u; d++) {
        if a[d] > 0.0 {
            lo0 = min(lo0, inflow[d]);
            hi0 = max(hi0, inflow[d]);
            side_lo = min(side_lo, min(side0[d], side1[d]));
            side_hi = max(side_hi, max(side0[d], side1[d]));
        }
    }
    let lo = min(vec3<real>(lo0), min(side0, side1));
    let hi = max(vec3<real>(hi0), max(side0, side1));
    // The union of the active axes' ranges holds the root.
    let lmin = min(lo0, side_lo);
    let hmax = max(hi0, side_hi);
    let sum_a = a.x + a.y + a.z;
    // The diamond weight: 1 in cells thinner than a mean free path along the characteristic,
    // sum_a / nu in thicker ones (src/backend/upwind2.rs).
    let w = min(1.0, sum_a / nu);
    let rhs = dot(a, inflow) + nu * fs;
    var f = (rhs + w * (rhs - nu * fs)) / ((1.0 + w) * sum_a + nu);
    let x = (1.0 + w) * f - w * inflow;
    let clamped = any((a > vec3<real>(0.0)) & ((x < lo) | (x > hi)));
    if clamped {
        let root = piece_root(a, inflow, w, nu, fs, lo, hi, lmin, hmax, f);
        if root.solved {
            f = root.f;
        } else {
            f = bracket_root(a, inflow, w, nu, rhs, lo, hi, lmin, hmax);
        }
    }
    // [lmin, hmax] holds the root; the clamp removes round-off (an exact maximum principle).
    f = clamp(f, lmin, hmax);
    return CellUpdate(f, emitted(a, inflow, w, lo, hi, f));
}
