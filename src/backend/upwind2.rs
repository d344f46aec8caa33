//! The second-order cell update of `solver.scheme = "second_order"` (docs/model.md,
//! "Second-order sweep"), shared by the CPU backend and the GPU twins.
//!
//! Finite volumes: a cell balances, per axis d with `a_d = |xi_d| / width_d`, the face value
//! leaving it against the one entering, `sum_d a_d (F_d^out - F_d^in) = nu (f^S - f)`.
//! First order takes `F^out = f`. Second order takes the face values of a profile linear
//! across the cell, `F_d^out = 2 f - F_d^in` (the diamond difference), exact for linear f
//! on any widths and so second order on stretched grids.
//!
//! In a cell thicker than a mean free path along the characteristic (`nu > sum_d a_d`) the
//! diamond difference would pass errors on with a factor near or below zero (a mode GSIS
//! does not damp); there the outflow is weighted towards f, `F^out = (1 + w) f - w F^in` with
//! `w = min(1, sum_d a_d / nu)`, which tends to 1 as the grid is refined.
//!
//! Limiter: each outgoing face value is clamped to a range of its own axis d: what enters
//! the cell (the inflows of its active axes and f^S), widened by the face values that the
//! cell's upwind neighbours across the other two axes emitted along d, where they exist:
//!
//! ```text
//! F_d^out = clamp((1 + w) f - w F_d^in, lo_d, hi_d),
//! lo_d, hi_d = min, max { F_e^in (a_e > 0), f^S, F_d^out of the upwind neighbours along e != d }.
//! ```
//!
//! Why the neighbours: a linear collisionless solution changes by G_d across the cell along
//! d with `sum_d a_d G_d = 0`, so one of the other axes' changes has the sign opposite to
//! G_d, and that neighbour's d-outflow lies beyond the cell's own (docs/model.md,
//! "Limiter"): smooth solutions sit inside their ranges and keep second order in three
//! dimensions. A single range, the inflows and f^S alone, clamps 11-21% of the cells of a
//! smooth 3D field and leaves first order there (docs/validation.md, "A manufactured solution in three dimensions"). Where f
//! jumps (a grazing characteristic from a wall corner, a shock) or a cell is many mean free
//! paths thick, the clamp removes the diamond difference's overshoot. It gives a maximum
//! principle: f lies in the union of the ranges and every F_d^out in its own, all made of
//! values emitted upwind or f^S, so no value is negative and no new extremum appears.
//!
//! The face values are stored (one slice per axis), so the downwind cell, the face-flux
//! stage and the wall loads read exactly what the cell emitted: fluxes telescope.
//!
//! The update is a scalar equation `G(f) = R`, `G` piecewise linear and increasing
//! (slope (1 + w) a_d per unclamped axis, plus nu), solved exactly by [`solve_cell`].

/// The cell value and the outgoing face value of each axis (the cell value for an axis
/// with `a = 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellUpdate {
    pub f: f64,
    pub out: [f64; 3],
}

/// The limiter's range for each axis' outgoing face value, and their union.
///
/// Axis d's range spans f^S, the inflows of the active axes and `side[d]`: the values the
/// cell's upwind neighbours across the other two axes emitted along d (their d-faces lie
/// beside the cell's own), `inflow[d]` where a neighbour is missing (module docs).
pub fn ranges(a: [f64; 3], inflow: [f64; 3], fs: f64, side: [[f64; 2]; 3]) -> ([f64; 3], [f64; 3], f64, f64) {
    let (mut lo0, mut hi0) = (fs, fs);
    for d in 0..3 {
        if a[d] > 0.0 {
            lo0 = lo0.min(inflow[d]);
            hi0 = hi0.max(inflow[d]);
        }
    }
    let (mut lo, mut hi) = ([lo0; 3], [hi0; 3]);
    let (mut lmin, mut hmax) = (lo0, hi0);
    for d in 0..3 {
        if a[d] > 0.0 {
            lo[d] = lo0.min(side[d][0]).min(side[d][1]);
            hi[d] = hi0.max(side[d][0]).max(side[d][1]);
            lmin = lmin.min(lo[d]);
            hmax = hmax.max(hi[d]);
        }
    }
    (lo, hi, lmin, hmax)
}

/// The neighbour values `side` that leave every range equal to the inflows' and f^S's: the
/// limiter of a cell without upwind neighbours (and the clamp of a single range).
pub fn no_side(inflow: [f64; 3]) -> [[f64; 2]; 3] {
    inflow.map(|x| [x, x])
}

/// Solve `sum_d a_d (clamp((1 + w) f - w inflow_d, lo_d, hi_d) - inflow_d) + nu (f - fs) = 0`
/// with the diamond weight `w = min(1, sum_d a_d / nu)` and the ranges of [`ranges`].
///
/// Where nothing clamps, the answer is
/// `f = ((1 + w) sum_d a_d inflow_d + nu fs) / ((1 + w) sum_d a_d + nu)`, a convex
/// combination of the inflows and fs: one division and a check, the common case. Otherwise
/// `G` is linear between its kinks, and [`piece_root`] finds the piece that holds the root,
/// with [`bracket_root`] behind it.
pub fn solve_cell(a: [f64; 3], inflow: [f64; 3], nu: f64, fs: f64, side: [[f64; 2]; 3]) -> CellUpdate {
    let (lo, hi, lmin, hmax) = ranges(a, inflow, fs, side);
    let (mut f, w, rhs) = diamond(a, inflow, nu, fs);
    let out = |f: f64, d: usize| if a[d] > 0.0 { ((1.0 + w) * f - w * inflow[d]).clamp(lo[d], hi[d]) } else { f };
    let clamped = (0..3).any(|d| a[d] > 0.0 && !(lo[d]..=hi[d]).contains(&((1.0 + w) * f - w * inflow[d])));
    if clamped {
        let b = Balance { a, fs, inflow, nu, w, rhs, lo, hi };
        f = piece_root(&b, f, lmin, hmax).unwrap_or_else(|| bracket_root(&b, lmin, hmax));
    }
    let f = f.clamp(lmin, hmax);
    CellUpdate { f, out: [0, 1, 2].map(|d| out(f, d)) }
}

/// A clamped cell's balance `G(f) = R`: `G(f) = nu f + sum_d a_d clamp((1 + w) f - w
/// inflow_d, lo_d, hi_d)`, `R = rhs = sum_d a_d inflow_d + nu fs`.
pub struct Balance {
    pub a: [f64; 3],
    pub fs: f64,
    pub inflow: [f64; 3],
    pub nu: f64,
    pub w: f64,
    pub rhs: f64,
    pub lo: [f64; 3],
    pub hi: [f64; 3],
}

/// Solves of [`piece_root`] before [`bracket_root`] takes over. On the quick cavity one
/// settles 99.2% (f64) to 99.8% (f32) of the clamped cells, and all but 4e-5 settle within
/// three (docs/performance.md, "The clamped cells' root").
pub const PIECE_SOLVES: usize = 3;

/// Relative change of f (against the ranges' top) below which two solves agree: a few
/// round-offs. Consecutive solves that land on either side of a kink give the same root
/// there to round-off, and their pieces would alternate.
pub const PIECE_AGREE: f64 = 1e-14;

/// Newton's method on the piecewise-linear `G` from the unclamped value `f`: each step
/// notes which bound each outflow takes at f (below `lo_d`, above `hi_d` or between) and
/// solves the linear balance of that piece,
///
/// ```text
/// f = fs - (sum_{d at lo} a_d (lo_d - inflow_d) + sum_{d at hi} a_d (hi_d - inflow_d)
///           + (1 + w) sum_{d between} a_d (fs - inflow_d)) / (nu + (1 + w) sum_{d between} a_d),
/// ```
///
/// the balance `sum_d a_d (F_d^out - inflow_d) + nu (f - fs) = 0` written in differences of
/// values that lie close together where the field is nearly uniform. Written as `R` less the
/// clamped terms instead, the numerator cancels to `nu fs` plus the round-off of
/// `sum_d a_d inflow_d`, which the division by a small nu (a rarefied gas) magnifies: in f32
/// that sent a third of a uniform gas's clamped cells to the bracket. Each iterate is
/// clamped to `[lmin, hmax]`: on a range a few ulps wide it would overshoot by about
/// `sum_d a_d / nu` ulps and the pieces would alternate.
///
/// The root is found when the new f lies in the piece it was solved on (or agrees with the
/// step before to round-off, at a kink): then `G(f) = R`. One solve where a single bound
/// binds from the start, which is most clamped cells; `None` after [`PIECE_SOLVES`]
/// (Newton can cycle on an S-shaped G), for [`bracket_root`]. The GPU twins copy it: a few
/// operations per axis and solve, against up to eight evaluations of G for the bracket.
pub fn piece_root(b: &Balance, mut f: f64, lmin: f64, hmax: f64) -> Option<f64> {
    // A range within round-off of a point (a gas at rest, a uniform stream) holds the root
    // to the agreement's accuracy: no solve.
    if hmax - lmin <= PIECE_AGREE * hmax {
        return Some(f.clamp(lmin, hmax));
    }
    // Pieces are coded per axis in two bits: 0 between the bounds, 1 at lo, 2 at hi. The
    // unclamped value was solved on the piece where every axis lies between them.
    let mut last_piece = 0u32;
    let mut last_f = f;
    for solve in 0..=PIECE_SOLVES {
        // Per axis the piece's term is s_d (b_d - inflow_d), with b_d the bound taken (fs
        // between the bounds) and s_d = a_d, or (1 + w) a_d between them, where it also adds
        // to the slope. The GPU twins select rather than branch (lanes on different pieces
        // would diverge). An inactive axis adds nothing and does not count in the piece.
        let (mut piece, mut num, mut den) = (0u32, 0.0, b.nu);
        for d in 0..3 {
            let x = (1.0 + b.w) * f - b.w * b.inflow[d];
            let (below, above) = (x < b.lo[d], x > b.hi[d]);
            let bound = if below {
                b.lo[d]
            } else if above {
                b.hi[d]
            } else {
                b.fs
            };
            let sd = if below || above { b.a[d] } else { (1.0 + b.w) * b.a[d] };
            num += sd * (bound - b.inflow[d]);
            den += if below || above { 0.0 } else { sd };
            let code = if below {
                1
            } else if above {
                2
            } else {
                0
            };
            piece |= if b.a[d] > 0.0 { code << (2 * d) } else { 0 };
        }
        if solve > 0 && (piece == last_piece || (f - last_f).abs() <= PIECE_AGREE * hmax) {
            return Some(f);
        }
        if solve == PIECE_SOLVES {
            break;
        }
        (last_piece, last_f) = (piece, f);
        f = (b.fs - num / den).clamp(lmin, hmax);
    }
    None
}

/// The root of a clamped cell's balance by bracketing: `G(lmin) <= R <= G(hmax)` for the
/// union `[lmin, hmax]` of the ranges, and the bracket shrinks to the closest of the at most
/// six kinks `(1 + w) f - w inflow_d = lo_d` or `hi_d` on either side, between which G is
/// linear. Exact, with a fixed cost; [`piece_root`]'s fallback.
pub fn bracket_root(b: &Balance, lmin: f64, hmax: f64) -> f64 {
    let out = |f: f64, d: usize| ((1.0 + b.w) * f - b.w * b.inflow[d]).clamp(b.lo[d], b.hi[d]);
    let g = |f: f64| b.nu * f + (0..3).filter(|&d| b.a[d] > 0.0).map(|d| b.a[d] * out(f, d)).sum::<f64>();
    let (mut kl, mut kh) = (lmin, hmax);
    let (mut gl, mut gh) = (g(lmin), g(hmax));
    for d in (0..3).filter(|&d| b.a[d] > 0.0) {
        for k in [(b.w * b.inflow[d] + b.lo[d]) / (1.0 + b.w), (b.w * b.inflow[d] + b.hi[d]) / (1.0 + b.w)] {
            if k > kl && k < kh {
                let gk = g(k);
                if gk <= b.rhs {
                    (kl, gl) = (k, gk);
                } else {
                    (kh, gh) = (k, gk);
                }
            }
        }
    }
    if gh > gl {
        kl + (b.rhs - gl) * (kh - kl) / (gh - gl)
    } else {
        kl
    }
}

/// The unlimited weighted diamond difference: the cell value
/// `((1 + w) sum_d a_d inflow_d + nu fs) / ((1 + w) sum_d a_d + nu)`, the diamond weight `w`
/// (the outflows are `(1 + w) f - w inflow_d`) and the balance's right side
/// `R = sum_d a_d inflow_d + nu fs`. [`solve_cell`] takes it where nothing clamps.
pub fn diamond(a: [f64; 3], inflow: [f64; 3], nu: f64, fs: f64) -> (f64, f64, f64) {
    let sum_a = a[0] + a[1] + a[2];
    // The diamond weight: 1 (F_out = 2 f - F_in) in cells thinner than a mean free path along
    // the characteristic (nu <= sum_d a_d), falling as sum_d a_d / nu in thicker ones, where
    // the diamond difference would pass on an error of the opposite sign (module docs).
    let w = (sum_a / nu).min(1.0);
    let rhs = a[0] * inflow[0] + a[1] * inflow[1] + a[2] * inflow[2] + nu * fs;
    ((rhs + w * (rhs - nu * fs)) / ((1.0 + w) * sum_a + nu), w, rhs)
}

#[cfg(test)]
#[path = "upwind2_tests.rs"]
mod tests;
