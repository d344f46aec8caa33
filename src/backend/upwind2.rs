//! The second-order cell update of `solver.scheme = "second_order"` (docs/model.md,
//! "Second-order sweep"), shared by the CPU backend; the GPU kernels copy it line for line.
//!
//! Finite volumes: a cell balances, per axis d with `a_d = |xi_d| / width_d`, the face value
//! leaving it against the one entering, `sum_d a_d (F_d^out - F_d^in) = nu (f^S - f)`.
//! First order takes `F^out = f`. Second order takes the face values of a profile linear
//! across the cell, `F_d^out = 2 f - F_d^in` (the diamond difference): the outgoing
//! half-cell increment `F^out - f` equals the incoming one `f - F^in`. That is exact for
//! linear f on any widths, so the scheme is second order on stretched grids.
//!
//! Limiter, where the cell has a fluid upstream neighbour along d (cell value f_up, width
//! ratio s = width / width_up): the outgoing increment is limited by the neighbour's own
//! outgoing increment `F_d^in - f_up`, as MUSCL limits slopes by their upstream neighbour,
//!
//! ```text
//! F_d^out = max(0, f + minmod(f - F_d^in, L s (F_d^in - f_up))),   L = 2.
//! ```
//!
//! Smooth profiles keep the diamond difference (successive increments differ by O(h), far
//! from the factor L); at a jump the upstream increment is small and the outflow falls back
//! to f, the first-order value, so the jump creates no overshoot. Where the upstream side is
//! an inflow face or a wall (no upstream cell), the outflow is clamped to the range of what
//! enters the cell, its active inflows and f^S: along a characteristic leaving a wall the
//! exact solution relaxes monotonically from the wall's emission towards f^S.
//!
//! The face values are stored (one slice per axis), so the downwind cell, the face-flux
//! stage and the wall loads read exactly what the cell emitted: fluxes telescope.
//!
//! Each outflow is a continuous, nondecreasing, piecewise-linear function of f, so the
//! update is a scalar equation `G(f) = R` with `G` increasing, solved exactly by
//! [`solve_cell`].

/// How far the outgoing increment may exceed the upstream one (scaled to the widths) before
/// the limiter clips it: above 1, so that smooth profiles are never clipped.
pub const LIMIT: f64 = 2.0;

/// One axis of a cell's update.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AxisIn {
    /// |xi_d| / width (0 for a velocity parallel to the axis or a collapsed axis).
    pub a: f64,
    /// The face value entering the cell.
    pub inflow: f64,
    /// `L s (F^in - f_up)`: the limiter's bound on the outgoing increment, or None where
    /// the upstream side is a face or a wall.
    pub bound: Option<f64>,
}

/// The bound of an axis with an upstream cell of value `up` and width ratio `ratio`.
#[inline]
pub fn bound(inflow: f64, up: f64, ratio: f64) -> f64 {
    LIMIT * ratio * (inflow - up)
}

/// `minmod(x, y)`: the smaller in magnitude when both have the same sign, else 0.
#[inline]
pub fn minmod(x: f64, y: f64) -> f64 {
    if x * y <= 0.0 {
        0.0
    } else if x.abs() <= y.abs() {
        x
    } else {
        y
    }
}

/// The cell value and the outgoing face value of each axis (the cell value for an axis
/// with `a = 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellUpdate {
    pub f: f64,
    pub out: [f64; 3],
}

/// The outgoing face value of axis `t` for cell value `f`; `lo, hi`: the range of the
/// cell's inflows and f^S.
#[inline]
fn emitted(t: &AxisIn, f: f64, lo: f64, hi: f64) -> f64 {
    if t.a <= 0.0 {
        return f;
    }
    match t.bound {
        Some(b) => (f + minmod(f - t.inflow, b)).max(0.0),
        None => (2.0 * f - t.inflow).clamp(lo, hi),
    }
}

/// Solve `sum_d a_d (F_d^out(f) - inflow_d) + nu (f - fs) = 0` for the cell.
///
/// Where no limiter acts, the answer is the diamond difference
/// `f = (2 sum_d a_d inflow_d + nu fs) / (2 sum_d a_d + nu)`: one division and a check, the
/// common case. Otherwise `G` is linear between its kinks (at most four per axis, all known
/// beforehand) and `G(0) <= R <= G(f_hi)`: the root is interpolated between the closest
/// kinks on either side. Exact, with a fixed cost (no iteration), which suits the GPU
/// kernels that copy it. A cell with `R <= 0` (a Shakhov f^S slightly negative in a far
/// tail) takes the first-order value.
pub fn solve_cell(t: [AxisIn; 3], nu: f64, fs: f64) -> CellUpdate {
    let (mut lo, mut hi) = (fs, fs);
    let mut f_hi = fs;
    let mut sum_a = 0.0;
    let mut rhs = nu * fs;
    for x in t.iter().filter(|x| x.a > 0.0) {
        lo = lo.min(x.inflow);
        hi = hi.max(x.inflow);
        f_hi = f_hi.max(x.inflow + x.bound.map_or(0.0, f64::abs));
        sum_a += x.a;
        rhs += x.a * x.inflow;
    }
    let f_hi = f_hi.max(hi);
    let g = |f: f64| nu * f + t.iter().map(|x| x.a * emitted(x, f, lo, hi)).sum::<f64>();
    let mut f = (2.0 * rhs - nu * fs) / (2.0 * sum_a + nu);
    let diamond = t.iter().all(|x| x.a <= 0.0 || emitted(x, f, lo, hi) == 2.0 * f - x.inflow);
    if !diamond {
        let (mut kl, mut kh) = (0.0, f_hi);
        let (mut gl, mut gh) = (g(kl), g(kh));
        if rhs <= 0.0 || gl > rhs || gh < rhs {
            let f = rhs / (sum_a + nu);
            return CellUpdate { f, out: [f; 3] };
        }
        for x in t.iter().filter(|x| x.a > 0.0) {
            let kinks = match x.bound {
                Some(b) => [x.inflow, x.inflow + b, 0.5 * x.inflow, -b],
                None => [0.5 * (x.inflow + lo), 0.5 * (x.inflow + hi), kl, kl],
            };
            for k in kinks {
                if k > kl && k < kh {
                    let gk = g(k);
                    if gk <= rhs {
                        (kl, gl) = (k, gk);
                    } else {
                        (kh, gh) = (k, gk);
                    }
                }
            }
        }
        f = if gh > gl { kl + (rhs - gl) * (kh - kl) / (gh - gl) } else { kl };
    }
    CellUpdate { f, out: [0, 1, 2].map(|d| emitted(&t[d], f, lo, hi)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(a: f64, inflow: f64, bound: Option<f64>) -> [AxisIn; 3] {
        [AxisIn { a, inflow, bound }, AxisIn::default(), AxisIn::default()]
    }

    /// 1D, velocity +1, nu and fs constant on n cells over [0, 1] (uniform, or stretched
    /// as x^1.5), inflow g at x = 0: the exact outflow is fs + (g - fs) exp(-nu).
    fn outflow_error(n: usize, nu: f64, stretched: bool) -> f64 {
        let (g, fs) = (2.0, 0.5);
        let face = |i: usize| if stretched { (i as f64 / n as f64).powf(1.5) } else { i as f64 / n as f64 };
        let (mut inflow, mut up) = (g, None);
        for i in 0..n {
            let w = face(i + 1) - face(i);
            let b = up.map(|(f_up, w_up)| bound(inflow, f_up, w / w_up));
            let u = solve_cell(axis(1.0 / w, inflow, b), nu, fs);
            (inflow, up) = (u.out[0], Some((u.f, w)));
        }
        (inflow - (fs + (g - fs) * (-nu).exp())).abs()
    }

    #[test]
    fn one_dimensional_outflow_converges_at_second_order_on_uniform_and_stretched_cells() {
        // Each halving of the widths must divide the error by at least 2^1.9.
        for stretched in [false, true] {
            let e: Vec<f64> = [20, 40, 80, 160].iter().map(|&n| outflow_error(n, 3.0, stretched)).collect();
            for w in e.windows(2) {
                let order = (w[0] / w[1]).log2();
                assert!(order > 1.9, "stretched {stretched}: observed order {order:.3} from errors {e:?}");
            }
        }
    }

    #[test]
    fn every_update_balances_and_stays_positive() {
        // Random data, thin and thick cells, limited and boundary axes: f must satisfy its
        // own equation with the returned outflows (local conservation, to round-off), and f
        // and every outflow must be non-negative.
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut limited = 0;
        for _ in 0..50000 {
            let t: [AxisIn; 3] = std::array::from_fn(|_| {
                let a = if rnd() < 0.2 { 0.0 } else { 10.0 * rnd() };
                let inflow = 2.0 * rnd();
                let b = (rnd() < 0.7).then(|| bound(inflow, 2.0 * rnd(), 0.5 + rnd()));
                AxisIn { a, inflow, bound: b }
            });
            let (nu, fs) = (20.0 * rnd() * rnd(), rnd());
            let u = solve_cell(t, nu, fs);
            let balance: f64 = (0..3).map(|d| t[d].a * (u.out[d] - t[d].inflow)).sum::<f64>() + nu * (u.f - fs);
            let scale: f64 = (0..3).map(|d| t[d].a * (u.out[d] + t[d].inflow)).sum::<f64>() + nu * (u.f + fs);
            // 1e-12 relative: a few round-offs of a sum of eight terms.
            assert!(balance.abs() <= 1e-12 * scale, "balance {balance:e} of {scale}: {t:?} {nu} {fs}");
            assert!(u.f >= 0.0 && u.out.iter().all(|&x| x >= 0.0), "{u:?}: {t:?} {nu} {fs}");
            limited += usize::from((0..3).any(|d| t[d].a > 0.0 && u.out[d] != 2.0 * u.f - t[d].inflow));
        }
        // The sample exercises the kink search, not only the diamond difference.
        assert!(limited > 10000, "{limited}");
    }
}
