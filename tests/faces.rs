//! Specular and periodic box faces, on every backend: each is checked against a case whose
//! answer it must reproduce exactly at convergence (a mirror-symmetric full domain, a
//! translation-invariant flow), so the lagged partner data (src/boundary.rs) is tested for
//! its fixed point, whatever path the iterations take.

mod common;
use common::*;
use knudsen::backend::BackendChoice;

fn tolerance(b: BackendChoice) -> f64 {
    // CPU: both runs converge to 1e-9 in f64, so their fixed points agree to ~1e-7 relative
    // (the residual bounds the distance to the fixed point up to the iteration's contraction
    // factor, ~0.5 here). GPU: f32 storage converges to 1e-5; the two runs differ by up to a
    // few 1e-5 in the small velocity components.
    if b == BackendChoice::Cpu {
        1e-6
    } else {
        2e-4
    }
}

#[test]
fn specular_half_cavity_matches_the_full_cavity() {
    // The lid moves along x, so the cavity is mirror-symmetric about z = 1/2; the half
    // z in [0, 1/2] with a specular face at z = 1/2 must give the same fields there. The
    // z_max face is reached at the end of the z-sweep, so its partner data is lagged.
    let mut full = cavity_json(6, 12, 4.0, 0.1);
    full["solver"] = serde_json::json!({"tolerance": 1e-9, "max_iterations": 300});
    let mut half = full.clone();
    half["grid"]["z"] = serde_json::json!({"min": 0.0, "max": 0.5, "cells": 3});
    half["boundaries"]["z_max"] = serde_json::json!({"type": "specular"});
    for b in backends() {
        let (pf, rf) = run(&config(&full), b, 2);
        let (ph, rh) = run(&config(&half), b, 2);
        assert!(rf.converged && rh.converged, "{b:?}: not converged");
        let sub: Vec<_> = (0..ph.grid.cells())
            .map(|c| {
                let (nx, ny) = (ph.grid.nx(), ph.grid.ny());
                rf.fields[pf.grid.index(c % nx, c / nx % ny, c / (nx * ny))]
            })
            .collect();
        for (name, d) in field_differences(&rh.fields, &sub) {
            eprintln!("{b:?} half vs full: {name} {d:.2e}");
            // Velocity and stress carry the flow; heat flux is small (1e-3 of the flow's
            // scale), so the same absolute distance to the fixed point is a larger share of it.
            let tol = if name == "heat_flux" { 20.0 } else { 1.0 } * tolerance(b);
            assert!(d < tol, "{b:?}: {name} differs by {d:e}");
        }
        // The specular plane carries no normal velocity.
        let top = ph.grid.nz() - 1;
        let uz = rh.fields[ph.grid.index(2, 3, top)].u[2].abs();
        let ux = rh.fields[ph.grid.index(2, 3, top)].u[0].abs();
        // The top cell's centre lies half a cell below the plane, where u_z has not quite
        // reached 0: 5% of u_x there; a face that let gas through would give u_z of the order
        // of u_x. The floor keeps the bound from vanishing where u_x does.
        assert!(uz < 0.05 * ux.max(1e-3), "{b:?}: u_z {uz} at the symmetry plane (u_x {ux})");
    }
}

/// Couette flow between y walls moving at -/+ 0.05 along x, delta = 1, with x and z
/// periodic: `nx` and `nz` cells thick.
fn couette(nx: usize, nz: usize) -> serde_json::Value {
    let periodic = serde_json::json!({"type": "periodic"});
    let wall = |u: f64| serde_json::json!({"type": "diffuse_wall", "temperature": 1.0, "velocity": [u, 0.0, 0.0]});
    serde_json::json!({
        "gas": {"delta": 1.0},
        "grid": {"x": {"min": 0.0, "max": 0.3 * nx as f64, "cells": nx},
                 "y": {"min": 0.0, "max": 1.0, "cells": 10},
                 "z": {"min": 0.0, "max": 0.2 * nz as f64, "cells": nz}},
        "velocity": {"points": 12},
        "boundaries": {"x_min": periodic, "x_max": periodic, "y_min": wall(-0.05), "y_max": wall(0.05),
                       "z_min": periodic, "z_max": periodic},
        "solver": {"tolerance": 1e-9, "max_iterations": 400}
    })
}

#[test]
fn periodic_faces_give_the_translation_invariant_solution() {
    // One cell thick, both axes collapse (exact, no partner data); three cells thick along
    // x (an in-slice axis) or z (the sweep axis), the partner data is lagged. All must give
    // the same profile across the gap, uniform along the periodic axes.
    for b in backends() {
        let (p1, r1) = run(&config(&couette(1, 1)), b, 2);
        assert!(p1.bounds.collapsed == [true, false, true]);
        assert!(r1.converged, "{b:?}: collapsed case not converged");
        for (nx, nz) in [(3, 1), (1, 3)] {
            let (p, r) = run(&config(&couette(nx, nz)), b, 2);
            assert!(!p.bounds.collapsed[0] || !p.bounds.collapsed[2]);
            assert!(r.converged, "{b:?} {nx}x{nz}: not converged");
            for k in 0..nz {
                for i in 0..nx {
                    let line: Vec<_> = (0..10).map(|j| r.fields[p.grid.index(i, j, k)]).collect();
                    let want: Vec<_> = (0..10).map(|j| r1.fields[p1.grid.index(0, j, 0)]).collect();
                    for (name, d) in field_differences(&line, &want) {
                        // Heat flux: a small field, as above, here over a longer 1D column.
                        let tol = if name == "heat_flux" { 50.0 } else { 1.0 } * tolerance(b);
                        assert!(d < tol, "{b:?} {nx}x{nz} column ({i}, {k}): {name} differs by {d:e}");
                    }
                }
            }
        }
    }
}
