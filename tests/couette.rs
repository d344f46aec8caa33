//! Quantitative checks of the kinetic model against independent references.

mod common;
use common::*;

/// Planar Couette flow reduced to 1D: 40 cells across the gap H = 1, and x and z periodic
/// and one cell thick (an exact reduction, src/boundary.rs). Walls at y = 0, 1 move at
/// -U/2, +U/2 with U = 0.1.
fn couette(prandtl: f64, points: usize) -> serde_json::Value {
    let far = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 1});
    let periodic = serde_json::json!({"type": "periodic"});
    let wall = |u: f64| serde_json::json!({"type": "diffuse_wall", "temperature": 1.0, "velocity": [u, 0.0, 0.0]});
    serde_json::json!({
        "gas": {"delta": 1.0, "prandtl": prandtl},
        "grid": {"x": far, "y": {"min": 0.0, "max": 1.0, "cells": 40}, "z": far},
        "velocity": {"points": points},
        "boundaries": {"x_min": periodic, "x_max": periodic, "y_min": wall(-0.05), "y_max": wall(0.05),
                       "z_min": periodic, "z_max": periodic},
        "solver": {"tolerance": 1e-8, "max_iterations": 400}
    })
}

#[test]
fn couette_shear_stress_matches_independent_1d_solver() {
    // Reference: an independent 1D linearised solver with the same spatial discretisation
    // (40 cells, first-order upwind, delta = 1; ../shared/model-notes.md): P_xy / P_xy,fm =
    // 0.5958 (BGK) and 0.5956 (S-model). Both differ from the published converged value,
    // 0.6007 (Sharipov and co-workers), by the 0.8% first-order discretisation error of 40
    // cells, which this run shares. The remaining differences are the velocity grids
    // (24^3 on [-4, 4] here, 20 x 32 x 20 there) and the far walls: 0.5% covers both.
    let pxy_fm = 0.1 / (2.0 * std::f64::consts::PI.sqrt());
    for (pr, reference) in [(1.0, 0.5958), (2.0 / 3.0, 0.5956)] {
        let cfg = config(&couette(pr, 24));
        // The CPU alone: f32 cannot converge to 1e-8; the GPUs are compared with the CPU
        // elsewhere.
        let (p, r) = run(&cfg, knudsen::backend::BackendChoice::Cpu, 2);
        assert!(r.converged, "Pr {pr}: not converged");
        // In 1D steady Couette flow P_xy is uniform across the gap; use the mid cell.
        let mid = r.fields[p.grid.index(0, 20, 0)].p[3];
        let ratio = -mid / pxy_fm;
        eprintln!("Pr {pr}: P_xy / P_xy,fm = {ratio:.4} (reference {reference})");
        assert!((ratio - reference).abs() < 0.005 * reference, "Pr {pr}: {ratio} vs {reference}");
        // Uniform across the gap to 1%: exactly so in the continuous problem, and the
        // scheme's momentum flux through the faces is uniform at its fixed point (the
        // collisions conserve momentum on the grid); the cell values P_xy differ from it by
        // the first-order error of 40 cells, the 0.8% above.
        for j in 2..38 {
            let pj = -r.fields[p.grid.index(0, j, 0)].p[3] / pxy_fm;
            assert!((pj - ratio).abs() < 0.01 * ratio, "P_xy not uniform: cell {j} {pj} vs {ratio}");
        }
    }
}

#[test]
fn closed_box_converges_without_mass_rescaling() {
    // With the Maxwellian normalised on the velocity grid and the discrete wall balance, the
    // scheme conserves mass at its fixed point; the iteration then converges without the
    // rescale. (With the continuous normalisation the tails cut at a = 4 leaked ~4e-7 of
    // the mass per iteration here and the residual stalled near 5e-7.)
    let mut v = cavity_json(4, 16, 4.0, 0.0);
    v["boundaries"]["x_max"] = wall(1.3);
    v["solver"] = serde_json::json!({"tolerance": 1e-9, "max_iterations": 300, "mass_rescale": false});
    let cfg = config(&v);
    let (p, r) = run(&cfg, knudsen::backend::BackendChoice::Cpu, 2);
    assert!(r.converged, "residual stalled at {:e}", r.final_residual());
    // The lagged wall densities do move the mass during the transient (1.5% here), which is
    // why closed domains rescale by default; the point here is that the fixed point exists.
    let mass: f64 = r.fields.iter().zip(p.grid.volumes()).map(|(m, v)| m.rho * v).sum();
    eprintln!("mass after convergence without rescaling: {mass}");
}
