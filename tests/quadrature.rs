//! The velocity quadrature against closed-form Maxwellian moments.

use knudsen::config::Quadrature;
use knudsen::grid::VelocityGrid;
use knudsen::model::{erfc, maxwellian, raw, EqCoeffs, Macro, NRAW};

fn moments(g: &VelocityGrid, f: impl Fn([f64; 3]) -> f64) -> Macro {
    let mut m = [0.0; NRAW];
    for (&x, &w) in g.xi.iter().zip(&g.w) {
        knudsen::model::accumulate_raw(&mut m, x, w * f(x));
    }
    Macro::from_raw(&m)
}

/// Drifts up to |U| = 0.5 v0 along every axis and diagonally.
fn drifts() -> Vec<[f64; 3]> {
    let mut d = vec![[0.0; 3], [0.5, 0.0, 0.0], [0.0, -0.5, 0.0], [0.0, 0.0, 0.5]];
    let s = 0.5 / 3f64.sqrt();
    d.push([s, -s, s]);
    d.push([0.3, 0.2, -0.1]);
    d
}

#[test]
fn maxwellian_moments_to_1e8_at_32_points() {
    // With 32 points on [-6, 6] (h = 0.39 v0) the trapezoid rule's aliasing error for
    // exp(-c^2 / T), about 2 exp(-pi^2 T / h^2) ~ 1e-28, and the truncation error,
    // erfc(6 - 0.5) ~ 1e-14, are both far below 1e-8; the test fails if a weight, a node or
    // a moment formula is wrong.
    let g = VelocityGrid::new(32, 6.0, Quadrature::Trapezoid);
    check_maxwellian_moments(&g, 1e-8);
}

#[test]
fn simpson_maxwellian_moments_within_its_error_estimate() {
    // Composite Simpson is (4 T_h - T_2h) / 3, so it inherits a third of the step-2h
    // trapezoid's aliasing error, 2 exp(-pi^2 T / (2h)^2) per axis (times a factor of order
    // (pi T / 2h)^2 for the second and third moments). At 33 points that is ~1e-5 for T; at
    // 65 points on [-6, 6] (2h = 0.375) it is exp(-56), so 1e-8 holds with a wide margin.
    let g = VelocityGrid::new(65, 6.0, Quadrature::Simpson);
    check_maxwellian_moments(&g, 1e-8);
}

fn check_maxwellian_moments(g: &VelocityGrid, tol: f64) {
    let q = g.quadrature;
    {
        for t in [0.8, 1.0, 1.3] {
            for u in drifts() {
                for rho in [1.0, 2.5] {
                    let mac = moments(g, |x| maxwellian(rho, u, t, x));
                    assert!((mac.rho - rho).abs() < tol * rho, "{q:?} rho {} vs {rho}", mac.rho);
                    for d in 0..3 {
                        assert!((mac.u[d] - u[d]).abs() < tol, "{q:?} U {:?} vs {u:?}", mac.u);
                        assert!(mac.q[d].abs() < tol, "{q:?} q {:?}", mac.q);
                    }
                    assert!((mac.t - t).abs() < tol * t, "{q:?} T {} vs {t}", mac.t);
                    // P_ij = p delta_ij for a Maxwellian.
                    let p = rho * t / 2.0;
                    for (s, &v) in mac.p.iter().enumerate() {
                        let want = if s < 3 { p } else { 0.0 };
                        assert!((v - want).abs() < tol, "{q:?} P[{s}] {v} vs {want}");
                    }
                }
            }
        }
    }
}

#[test]
fn default_bound_truncation_matches_erfc_estimate() {
    // On the default cube a = 4 the trapezoid sum of a unit Maxwellian drifting by U along
    // x misses, per axis, the Gaussian tails beyond the bound, (erfc(a - U) + erfc(a + U)) / 2,
    // plus the Euler-Maclaurin end correction -h^2/12 (f'(a) - f'(-a)) of the 1D density
    // f(x) = exp(-(x - U)^2) / sqrt(pi). Aliasing (2 exp(-pi^2 / h^2) ~ 1e-260) is nil at
    // 64 points, so the sum must match this prediction to its next term, well within 2%.
    let a = 4.0;
    let g = VelocityGrid::new(64, a, Quadrature::Trapezoid);
    let h = 2.0 * a / 63.0;
    let axis_deficit = |u: f64| {
        let f = |x: f64| (-(x - u) * (x - u)).exp() / std::f64::consts::PI.sqrt();
        let df = |x: f64| -2.0 * (x - u) * f(x);
        0.5 * (erfc(a - u) + erfc(a + u)) - h * h / 12.0 * (df(a) - df(-a))
    };
    for u in [0.0, 0.25, 0.5] {
        let mac = moments(&g, |x| maxwellian(1.0, [u, 0.0, 0.0], 1.0, x));
        let deficit = 1.0 - mac.rho;
        let predicted = axis_deficit(u) + 2.0 * axis_deficit(0.0);
        assert!((deficit - predicted).abs() < 0.02 * predicted, "U {u}: {deficit:e} vs {predicted:e}");
    }
}

#[test]
fn shakhov_equilibrium_moments() {
    // f^S carries the cell's rho, U, T exactly (the correction is orthogonal to 1, xi and
    // |xi|^2 under a Maxwellian weight) and the heat flux (1 - Pr) q.
    let g = VelocityGrid::new(48, 7.0, Quadrature::Trapezoid);
    let (rho, u, t) = (1.2, [0.2, -0.1, 0.3], 1.1);
    let q = [0.02, -0.015, 0.01];
    for pr in [2.0 / 3.0, 1.0, 0.5] {
        let mac = Macro { rho, u, t, q, p: [rho * t / 2.0; 6] };
        let e = EqCoeffs::new(&mac, pr, 1.0, 0.81);
        let m = moments(&g, |x| e.shakhov(x));
        // The trapezoid rule at h = 0.3 (a third of the width sqrt(T) = 1.05) integrates these
        // Gaussian moments to exp(-pi^2 T / h^2) ~ 1e-52 and the tails beyond 7 are
        // exp(-(7 - 0.3)^2 / 1.1) ~ 1e-18: 1e-10 is round-off over 48^3 terms, with margin.
        assert!((m.rho - rho).abs() < 1e-10, "Pr {pr}: rho {}", m.rho);
        assert!((m.t - t).abs() < 1e-10, "Pr {pr}: T {}", m.t);
        for d in 0..3 {
            assert!((m.u[d] - u[d]).abs() < 1e-10, "Pr {pr}: U {:?}", m.u);
            let want = (1.0 - pr) * q[d];
            assert!((m.q[d] - want).abs() < 1e-10, "Pr {pr}: q {:?} vs {want}", m.q);
        }
    }
    let _ = raw::RHO;
}

#[test]
fn the_coarsest_grid_the_check_accepts_gives_the_temperature_to_a_percent() {
    // `check_resolves` at T_min = 1 on [-4, 4]: the fewest points each quadrature is allowed.
    // There a Maxwellian's temperature moment is within 1% (the trapezoid rule's aliasing at
    // h = sqrt(T) is ~2e-3). Composite Simpson at the trapezoid's 9 points was off by 29%
    // (the step-2h trapezoid inside it), which the check once let through.
    for q in [Quadrature::Trapezoid, Quadrature::Simpson] {
        let fewest = (3..200)
            .filter(|&n| q != Quadrature::Simpson || n % 2 == 1)
            .find(|&n| {
                let v = knudsen::config::VelocityConfig { points: n, max: 4.0, quadrature: q };
                v.check_resolves(1.0).is_ok()
            })
            .unwrap();
        let g = VelocityGrid::new(fewest, 4.0, q);
        for t in [1.0, 1.5] {
            let mac = moments(&g, |x| maxwellian(1.0, [0.0; 3], t, x));
            assert!((mac.t - t).abs() < 0.01 * t, "{q:?} at {fewest} points: T {} vs {t}", mac.t);
        }
    }
    let g = VelocityGrid::new(9, 4.0, Quadrature::Simpson);
    let mac = moments(&g, |x| maxwellian(1.0, [0.0; 3], 1.0, x));
    assert!((mac.t - 1.0).abs() > 0.1, "Simpson at 9 points: T {}", mac.t);
}
