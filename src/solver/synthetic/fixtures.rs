//! What the device solves' tests (`cuda/tests.rs`, `wgpu/tests.rs`) check against the host:
//! the same grids, linearisation states and right-hand sides.

use super::flux::{Base, NV};
use super::krylov::{gmres, Outcome, Pool, Vector};
use super::multigrid::{Multigrid, Smoother};
use crate::problem::Problem;

/// The paper cube's geometry at small size (stretched cells, a body, free-stream faces:
/// line smoothing) and a closed box of cubic cells (Jacobi smoothing).
pub fn cases() -> Vec<(Problem, Smoother)> {
    let cube = crate::config::Config::from_json(include_str!("../../../configs/cube-quick.json")).unwrap();
    let boxed = crate::config::walled_box([9, 7, 6], 10);
    vec![(Problem::new(&cube), Smoother::Lines), (Problem::new(&boxed), Smoother::Jacobi)]
}

/// A problem's fluid cells, a varied linearisation state and a right-hand side that is zero
/// in solid cells.
pub fn state(p: &Problem) -> (Vec<bool>, Vec<Base>, Vector) {
    let n = p.grid.cells();
    let active: Vec<bool> = (0..n).map(|c| !p.bodies.solids.is_solid(c)).collect();
    let base = (0..n)
        .map(|c| Base {
            rho: 1.0 + 0.1 * (c % 7) as f64 / 7.0,
            u: [0.3, 0.05 * (c % 3) as f64, 0.0],
            t: 1.0 + 0.02 * (c % 5) as f64,
        })
        .collect();
    let b = (0..n)
        .map(|c| if active[c] { std::array::from_fn(|k| ((c * 5 + 3 * k) % 11) as f64 - 5.0) } else { [0.0; NV] })
        .collect();
    (active, base, b)
}

/// Relative L2 distance of `a` from `b`.
pub fn rel(a: &[[f64; NV]], b: &[[f64; NV]]) -> f64 {
    let d: f64 = a.iter().zip(b).flat_map(|(p, q)| (0..NV).map(move |k| (p[k] - q[k]).powi(2))).sum();
    let n: f64 = b.iter().flatten().map(|x| x * x).sum();
    (d / n).sqrt()
}

/// The host's solve, the reference: GMRES preconditioned by the host's W-cycle.
pub fn host_solve(mg: &Multigrid, b: &Vector, rtol: f64) -> (Vector, Outcome) {
    let pool = Pool::default();
    gmres(mg.operator(), b, rtol, 30, 2000, &|v: &[[f64; NV]], o: &mut Vector| mg.apply(v, o), &pool).unwrap()
}

/// ||b - A x|| / ||b|| with the host's operator, in f64.
pub fn true_residual(mg: &Multigrid, x: &[[f64; NV]], b: &[[f64; NV]]) -> f64 {
    let mut ax = vec![[0.0; NV]; b.len()];
    mg.operator().apply(x, &mut ax);
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    let r = norm(&mut ax.iter().zip(b).flat_map(|(a, q)| (0..NV).map(move |k| q[k] - a[k])));
    r / norm(&mut b.iter().flatten().copied())
}
