//! Damping of the lagged wall densities (src/damping.rs): parallel plates at different
//! temperatures near the free-molecular limit, where the plain update alternates.

mod common;
use common::*;

/// Planar heat transfer at delta = 0.001, reduced to 1D (x and z periodic, one cell thick).
fn plates(damping: bool, tolerance: f64) -> serde_json::Value {
    let far = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 1});
    let periodic = serde_json::json!({"type": "periodic"});
    let wall = |t: f64| serde_json::json!({"type": "diffuse_wall", "temperature": t});
    serde_json::json!({
        "gas": {"delta": 0.001, "prandtl": 1.0},
        "grid": {"x": far, "y": {"min": 0.0, "max": 1.0, "cells": 10}, "z": far},
        "velocity": {"points": 16},
        "boundaries": {"x_min": periodic, "x_max": periodic, "y_min": wall(0.9), "y_max": wall(1.1),
                       "z_min": periodic, "z_max": periodic},
        "solver": {"tolerance": tolerance, "max_iterations": 60, "wall_density_damping": damping}
    })
}

#[test]
fn damping_removes_the_free_molecular_two_cycle_on_every_backend() {
    for b in backends() {
        // f32 backends stop at their floor (1e-5); the CPU goes to 1e-10.
        let tol = if b == knudsen::backend::BackendChoice::Cpu { 1e-10 } else { 1e-5 };
        let (_, damped) = run(&config(&plates(true, tol)), b, 2);
        let (_, plain) = run(&config(&plates(false, tol)), b, 2);
        eprintln!(
            "{b:?}: damped {} iterations (residual {:.1e}), plain {} (residual {:.1e})",
            damped.iterations(),
            damped.final_residual(),
            plain.iterations(),
            plain.final_residual()
        );
        // The plain update alternates with amplitude decaying like (1 - delta)^n: 60
        // iterations leave it far above 1e-5. The damped one lands on the fixed point in a
        // few steps and then converges at the collisional rate of this nearly free gas.
        assert!(damped.converged && damped.iterations() <= 30, "{b:?}: damped run did not converge");
        assert!(!plain.converged && plain.final_residual() > 1e-4, "{b:?}: the plain update did not alternate");
        // A converged planar solution carries a uniform heat flux across the gap (the fixed
        // point is the plain scheme's: src/damping.rs; the validation suite checks its value).
        let q: Vec<f64> = damped.fields.iter().map(|f| f.q[1]).collect();
        let qm = q.iter().sum::<f64>() / q.len() as f64;
        assert!(q.iter().all(|x| (x - qm).abs() < 1e-3 * qm.abs()), "{b:?}: q_y not uniform: {q:?}");
    }
}
