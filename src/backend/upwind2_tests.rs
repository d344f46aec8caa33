//! Tests of `backend::upwind2`: the 1D and 3D orders, the limiters, the roots and the
//! maximum principle.

use super::*;

/// 1D, velocity +1, nu and fs constant on n cells over [0, 1] (uniform, or stretched
/// as x^1.5), inflow g at x = 0: the exact outflow is fs + (g - fs) exp(-nu).
fn outflow_error(n: usize, nu: f64, stretched: bool) -> f64 {
    let (g, fs) = (2.0, 0.5);
    let face = |i: usize| if stretched { (i as f64 / n as f64).powf(1.5) } else { i as f64 / n as f64 };
    let mut inflow = g;
    for i in 0..n {
        let a = 1.0 / (face(i + 1) - face(i));
        let up = [inflow, 0.0, 0.0];
        inflow = solve_cell([a, 0.0, 0.0], up, nu, fs, no_side(up)).out[0];
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Limiter {
    /// The unlimited weighted diamond difference ([`diamond`]).
    Unlimited,
    /// One range for every axis: [`solve_cell`] given [`no_side`].
    Single,
    /// The shipped per-axis ranges: [`solve_cell`] given the upwind neighbours' faces.
    PerAxis,
}

/// L1 error of the cell values against f_e's cell averages, for one velocity `xi` (all
/// components positive) on n^3 cells with faces `(i / n)^stretch` on [0, 1]^3, `nu`
/// constant: the manufactured solution f_e = 1 + A sin(K x + p0) sin(K y + p1) sin(K z +
/// p2) solves `xi . grad f = nu (g - f)` with g = f_e + xi . grad f_e / nu, given as cell
/// averages, and f_e's face averages on the inflow faces. The face values are kept in
/// place as the CPU sweep keeps them (backend/cpu/sweep2.rs): before cell s is updated,
/// `out[d][s]` holds what the cell below it (k - 1) emitted along d.
fn manufactured_error(n: usize, xi: [f64; 3], nu: f64, stretch: f64, limiter: Limiter) -> f64 {
    use std::f64::consts::TAU;
    let (amp, ph) = (0.5, [0.3, 0.7, 1.1]);
    let face: Vec<f64> = (0..=n).map(|i| (i as f64 / n as f64).powf(stretch)).collect();
    let width: Vec<f64> = face.windows(2).map(|w| w[1] - w[0]).collect();
    // Per axis and cell: the averages of sin(K t + p) and of its derivative.
    let avg = |d: usize| -> (Vec<f64>, Vec<f64>) {
        let p = ph[d];
        let s = face.windows(2).map(|w| ((TAU * w[0] + p).cos() - (TAU * w[1] + p).cos()) / (TAU * (w[1] - w[0])));
        let c = face.windows(2).map(|w| ((TAU * w[1] + p).sin() - (TAU * w[0] + p).sin()) / (w[1] - w[0]));
        (s.collect(), c.collect())
    };
    let [(sx, cx), (sy, cy), (sz, cz)] = [avg(0), avg(1), avg(2)];
    let at0 = |d: usize| ph[d].sin();
    let mut out = [vec![0.0; n * n], vec![0.0; n * n], vec![0.0; n * n]];
    let mut err = 0.0;
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let s = j * n + i;
                let fe = 1.0 + amp * sx[i] * sy[j] * sz[k];
                let grad =
                    xi[0] * cx[i] * sy[j] * sz[k] + xi[1] * sx[i] * cy[j] * sz[k] + xi[2] * sx[i] * sy[j] * cz[k];
                let g = fe + amp * grad / nu;
                let a = [xi[0] / width[i], xi[1] / width[j], xi[2] / width[k]];
                let up = [
                    if i == 0 { 1.0 + amp * at0(0) * sy[j] * sz[k] } else { out[0][s - 1] },
                    if j == 0 { 1.0 + amp * sx[i] * at0(1) * sz[k] } else { out[1][s - n] },
                    if k == 0 { 1.0 + amp * sx[i] * sy[j] * at0(2) } else { out[2][s] },
                ];
                // The neighbours' faces beside the cell's own, up[d] where there is none.
                let side = [
                    [if j > 0 { out[0][s - n] } else { up[0] }, if k > 0 { out[0][s] } else { up[0] }],
                    [if i > 0 { out[1][s - 1] } else { up[1] }, if k > 0 { out[1][s] } else { up[1] }],
                    [if i > 0 { out[2][s - 1] } else { up[2] }, if j > 0 { out[2][s - n] } else { up[2] }],
                ];
                let (f, emitted) = match limiter {
                    Limiter::Unlimited => {
                        let (f, w, _) = diamond(a, up, nu, g);
                        (f, [0, 1, 2].map(|d| (1.0 + w) * f - w * up[d]))
                    }
                    Limiter::Single => {
                        let u = solve_cell(a, up, nu, g, no_side(up));
                        (u.f, u.out)
                    }
                    Limiter::PerAxis => {
                        let u = solve_cell(a, up, nu, g, side);
                        (u.f, u.out)
                    }
                };
                err += (f - fe).abs() * width[i] * width[j] * width[k];
                for d in 0..3 {
                    out[d][s] = emitted[d];
                }
            }
        }
    }
    err
}

#[test]
fn three_dimensional_manufactured_solution_converges_at_second_order() {
    // A smooth field in 3D, oblique and grazing velocities, uniform and stretched cells,
    // thin and thick ones, from 16^3 to 32^3 cells. The diamond difference itself divides
    // the error by about 4 per halving of the widths (order >= 1.9); the shipped per-axis
    // limiter clamps 0.3-0.9% of the cells at 64^3 and keeps order >= 1.8
    // (docs/validation.md, "A manufactured solution in three dimensions", measures
    // 1.86-2.07 from 16^3 to 64^3). A single range clamps 11-21% of these smooth cells,
    // which leaves it first order: it is asked only
    // for first order (>= 0.9), what it measures, so the test shows what the neighbours'
    // faces buy and fails if the per-axis ranges fall back to the single one.
    for (xi, nu, stretch) in [([0.7, 0.4, 0.25], 1.0, 1.0), ([0.9, 0.1, 0.3], 1.0, 1.5), ([0.3, 0.5, 0.8], 10.0, 1.0)] {
        for (limiter, want) in [(Limiter::Unlimited, 1.9), (Limiter::PerAxis, 1.8), (Limiter::Single, 0.9)] {
            let e: Vec<f64> = [16, 32].iter().map(|&n| manufactured_error(n, xi, nu, stretch, limiter)).collect();
            let order = (e[0] / e[1]).log2();
            eprintln!("xi {xi:?} nu {nu} stretch {stretch} {limiter:?}: order {order:.3} ({e:?})");
            assert!(order >= want, "xi {xi:?} nu {nu} stretch {stretch} {limiter:?}: order {order:.3} ({e:?})");
            if limiter == Limiter::Single {
                assert!(order < 1.8, "the single range should lose order on this field: {order:.3}");
            }
        }
    }
}

#[test]
fn the_piece_root_is_the_bracketed_root() {
    // Random clamped cells, thin and thick, with and without neighbours' faces, and
    // degenerate ranges (inflows equal to a bound, where solves land on a kink): where
    // Newton on the pieces answers it must give the bracket's root to round-off (1e-12 of
    // the ranges' top, a few round-offs of sums of eight terms), and it must answer
    // nearly always: the GPU kernels rely on the bracket being rare.
    let mut seed = 4242u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut clamped, mut gave_up) = (0usize, 0usize);
    for t in 0..200000 {
        let a = [0, 1, 2].map(|_| if rnd() < 0.2 { 0.0 } else { 10.0 * rnd() });
        let mut inflow = [0, 1, 2].map(|_| 2.0 * rnd());
        if t % 5 == 0 {
            inflow = [inflow[0]; 3];
        }
        let (nu, fs) = (20.0 * rnd() * rnd() + 1e-3, rnd());
        let side = if t % 2 == 0 { no_side(inflow) } else { [0, 1, 2].map(|_| [2.0 * rnd(), 2.0 * rnd()]) };
        let (lo, hi, lmin, hmax) = ranges(a, inflow, fs, side);
        let (f0, w, rhs) = diamond(a, inflow, nu, fs);
        if !(0..3).any(|d| a[d] > 0.0 && !(lo[d]..=hi[d]).contains(&((1.0 + w) * f0 - w * inflow[d]))) {
            continue;
        }
        clamped += 1;
        let b = Balance { a, fs, inflow, nu, w, rhs, lo, hi };
        let want = bracket_root(&b, lmin, hmax);
        match piece_root(&b, f0, lmin, hmax) {
            Some(f) => assert!(
                (f - want).abs() <= 1e-12 * hmax,
                "piece root {f} against the bracket's {want}: {a:?} {inflow:?} {nu} {fs} {side:?}"
            ),
            None => gave_up += 1,
        }
    }
    eprintln!("{clamped} clamped cells, {gave_up} left to the bracket");
    assert!(clamped > 50000, "the random cells should clamp often: {clamped}");
    // Measured 0 of about 96000 here; allow one in a thousand.
    assert!(gave_up * 1000 <= clamped, "{gave_up} of {clamped} clamped cells left to the bracket");
}

#[test]
fn every_update_balances_and_obeys_the_maximum_principle() {
    // Random data, thin and thick cells, with and without neighbours' faces: f must
    // satisfy its own equation with the returned outflows (local conservation, to
    // round-off); every outflow must lie within its axis' range (the inflows, fs and that
    // axis' neighbour faces) and f within their union.
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for t in 0..100000 {
        let a = [0, 1, 2].map(|_| if rnd() < 0.2 { 0.0 } else { 10.0 * rnd() });
        let inflow = [0, 1, 2].map(|_| 2.0 * rnd());
        let (nu, fs) = (20.0 * rnd() * rnd(), rnd());
        let side = if t % 2 == 0 { no_side(inflow) } else { [0, 1, 2].map(|_| [2.0 * rnd(), 2.0 * rnd()]) };
        let u = solve_cell(a, inflow, nu, fs, side);
        let active: Vec<usize> = (0..3).filter(|&d| a[d] > 0.0).collect();
        let lo0 = active.iter().map(|&d| inflow[d]).fold(fs, f64::min);
        let hi0 = active.iter().map(|&d| inflow[d]).fold(fs, f64::max);
        let lo = |d: usize| side[d].iter().copied().fold(lo0, f64::min);
        let hi = |d: usize| side[d].iter().copied().fold(hi0, f64::max);
        let lmin = active.iter().map(|&d| lo(d)).fold(lo0, f64::min);
        let hmax = active.iter().map(|&d| hi(d)).fold(hi0, f64::max);
        let balance: f64 = (0..3).map(|d| a[d] * (u.out[d] - inflow[d])).sum::<f64>() + nu * (u.f - fs);
        let scale: f64 = (0..3).map(|d| a[d] * (u.out[d] + inflow[d])).sum::<f64>() + nu * (u.f + fs);
        let case = format!("{a:?} {inflow:?} {nu} {fs} {side:?}");
        // 1e-12 relative: a few round-offs of a sum of eight terms.
        assert!(balance.abs() <= 1e-12 * scale, "balance {balance:e} of {scale}: {case}");
        assert!(u.f >= lmin && u.f <= hmax, "f {} outside [{lmin}, {hmax}]: {case}", u.f);
        for &d in &active {
            assert!(
                u.out[d] >= lo(d) && u.out[d] <= hi(d),
                "out {d} {} outside [{}, {}]: {case}",
                u.out[d],
                lo(d),
                hi(d)
            );
        }
    }
}
