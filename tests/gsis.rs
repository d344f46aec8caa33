//! The synthetic correction (`solver.acceleration = "gsis"`, src/solver/synthetic): the same
//! fixed point as source iteration, in far fewer sweeps, on every backend.

mod common;
use common::*;
use knudsen::backend::BackendChoice;
use knudsen::config::Acceleration;

#[test]
fn gsis_reaches_the_fixed_point_of_source_iteration_on_a_low_kn_cavity() {
    // Reference: source iteration converged to 1e-11 on the CPU (f64). Kn 0.02 on 10^3
    // cells is 3 mean free paths per cell, where source iteration needs hundreds of sweeps.
    // Both runs stop at 1e-11, so each field is within about 1e-9 of the common fixed point
    // (the error falls by at least 0.5 per GSIS iteration and by 1 - O(1/delta) per source
    // iteration, whose distance to the fixed point is then ~ delta times its last change):
    // 1e-6 relative L2, the bound, leaves room for the source iteration's lag.
    let mut v = cavity_json(10, 12, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.02);
    let base = config(&v);
    let (_, si) = run(&with(base.clone(), Acceleration::None, 1e-11, 20000), BackendChoice::Cpu, 2);
    let (_, gs) = run(&with(base, Acceleration::Gsis, 1e-11, 200), BackendChoice::Cpu, 2);
    assert!(si.converged && gs.converged, "SI {} its, GSIS {} its", si.iterations(), gs.iterations());
    eprintln!("source iteration {} sweeps, GSIS {} sweeps", si.iterations(), gs.iterations());
    assert!(
        gs.iterations() * 10 <= si.iterations(),
        "GSIS {} vs source iteration {}",
        gs.iterations(),
        si.iterations()
    );
    for (name, d) in field_differences(&gs.fields, &si.fields) {
        eprintln!("{name}: {d:.2e}");
        assert!(d < 1e-6, "{name}: GSIS differs from source iteration by {d:.2e}");
    }
}

/// Planar flow between walls at y = 0, 1 (x and z periodic, one cell thick).
fn planar(delta: f64, cells: usize, walls: [serde_json::Value; 2]) -> serde_json::Value {
    let far = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 1});
    let periodic = serde_json::json!({"type": "periodic"});
    serde_json::json!({
        "gas": {"delta": delta, "prandtl": 2.0 / 3.0},
        "grid": {"x": far, "y": {"min": 0.0, "max": 1.0, "cells": cells}, "z": far},
        "velocity": {"points": 16},
        "boundaries": {"x_min": periodic, "x_max": periodic, "y_min": walls[0], "y_max": walls[1],
                       "z_min": periodic, "z_max": periodic},
        "solver": {"tolerance": 1e-10, "max_iterations": 60, "acceleration": "gsis"}
    })
}

#[test]
fn a_single_cell_between_walls_converges_to_the_source_iteration_answer() {
    // One cell has no face between fluid cells, so no mass crosses any face and the mass
    // rows of the synthetic operator are empty: the closed-domain shift must still make them
    // regular (this case once failed with "the coarsest multigrid operator is singular").
    // Fourier flow, so the fields are not round-off around zero; both runs stop at 1e-12.
    let wall = |t: f64| serde_json::json!({"type": "diffuse_wall", "temperature": t});
    let base = config(&planar(1.0, 1, [wall(0.995), wall(1.005)]));
    let (_, si) = run(&with(base.clone(), Acceleration::None, 1e-12, 2000), BackendChoice::Cpu, 2);
    let (_, gs) = run(&with(base, Acceleration::Gsis, 1e-12, 200), BackendChoice::Cpu, 2);
    assert!(si.converged && gs.converged);
    for (name, d) in field_differences(&gs.fields, &si.fields) {
        // The same 1e-6 bound as the cavity test above.
        assert!(d < 1e-6, "{name}: GSIS differs from source iteration by {d:.2e}");
    }
}

#[test]
fn planar_couette_and_fourier_at_delta_100_converge_within_50_iterations() {
    // Source iteration needs about 11,000 sweeps here (1 - O(1/delta) per sweep); the
    // issue's target for GSIS is 50, at the validation suites' tolerance 1e-10. On 2000
    // cells (20 per mean free path) the closed-domain shift must be capped by the domain's
    // scale, not the cell's (`operator::closed_shift`): with 1e-3 of the mass diagonal the
    // Couette case had not converged after 60 sweeps there.
    let wall =
        |t: f64, u: f64| serde_json::json!({"type": "diffuse_wall", "temperature": t, "velocity": [u, 0.0, 0.0]});
    for cells in [200, 2000] {
        for (name, walls) in
            [("couette", [wall(1.0, -0.005), wall(1.0, 0.005)]), ("fourier", [wall(0.995, 0.0), wall(1.005, 0.0)])]
        {
            let (_, r) = run(&config(&planar(100.0, cells, walls)), BackendChoice::Cpu, 2);
            eprintln!("{name}, {cells} cells: {} iterations, residual {:.2e}", r.iterations(), r.final_residual());
            assert!(r.converged && r.iterations() <= 50, "{name}, {cells} cells: {} iterations", r.iterations());
        }
    }
}

#[test]
fn gsis_on_every_backend_agrees_with_the_cpu() {
    // The synthetic solve runs in f64 on the host (CPU) or the CUDA device, in f32 on the
    // wgpu device (to its inner tolerance, far above f32 rounding), so a GPU run
    // differs from the CPU by the sweep's f32 storage and by its earlier stop: f32 cannot resolve
    // changes below 1e-5 (the tolerance is raised to it) against the CPU's 1e-6. With a
    // contraction of ~0.5 per iteration that leaves ~2e-5 in the conserved fields: 1e-4
    // relative L2 (as tests/gpu.rs). The heat flux (q ~ 1e-3 p v0 in this isothermal
    // cavity) is a difference of third moments ~500 times larger, so its relative error
    // is larger too: 3e-4.
    let mut v = cavity_json(8, 12, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.05);
    let cfg = with(config(&v), Acceleration::Gsis, 1e-6, 60);
    let (_, cpu) = run(&cfg, BackendChoice::Cpu, 2);
    assert!(cpu.converged);
    for b in backends().into_iter().filter(|&b| b != BackendChoice::Cpu) {
        let (_, r) = run(&cfg, b, 2);
        eprintln!("{b:?}: {} iterations (CPU {})", r.iterations(), cpu.iterations());
        // The GPUs' f32 sweeps reach the 1e-6 stop by a slightly different path than the
        // CPU's f64 (their residuals differ by round-off near the stop): a few sweeps more,
        // not the tens that a synthetic solve gone wrong would take.
        assert!(r.converged && r.iterations() <= cpu.iterations() + 3, "{b:?}: {} iterations", r.iterations());
        for (name, d) in field_differences(&r.fields, &cpu.fields) {
            let tol = if name == "heat_flux" { 3e-4 } else { 1e-4 };
            eprintln!("{b:?} {name}: {d:.2e} (tolerance {tol:.0e})");
            assert!(d < tol, "{b:?} {name}: {d:.2e}");
        }
    }
}

#[test]
fn gsis_solves_on_the_wgpu_device_from_8192_cells_and_agrees_with_the_cpu() {
    // 21^3 = 9261 cells, above the size (8192) from which the wgpu backend solves the
    // synthetic system on its own device in f32 (src/solver/synthetic/placement.rs); 20^3 =
    // 8000, below it, on the host. Tolerances as in gsis_on_every_backend_agrees_with_the_cpu (the sweep's f32
    // storage and the GPU's stop at 1e-5), with the heat flux's at 1e-3: on 10 velocities per
    // axis it is ~1e-4 of p v0, a difference of moments ~1e4 times larger.
    let Some(_) = gpu_adapter() else {
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
        return;
    };
    let mut v = cavity_json(21, 10, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.05);
    let cfg = with(config(&v), Acceleration::Gsis, 1e-6, 60);
    let (_, cpu) = run(&cfg, BackendChoice::Cpu, 2);
    let (_, gpu) = run(&cfg, BackendChoice::Wgpu, 2);
    assert_eq!(cpu.synthetic_solve, Some("host"));
    assert_eq!(gpu.synthetic_solve, Some("wgpu"), "the solve must run on the wgpu device");
    assert!(cpu.converged && gpu.converged);
    eprintln!("wgpu {} iterations, CPU {}", gpu.iterations(), cpu.iterations());
    // As above: a few sweeps' slack for f32 round-off near the stop.
    assert!(gpu.iterations() <= cpu.iterations() + 3, "wgpu {} iterations", gpu.iterations());
    for (name, d) in field_differences(&gpu.fields, &cpu.fields) {
        let tol = if name == "heat_flux" { 1e-3 } else { 1e-4 };
        eprintln!("{name}: {d:.2e} (tolerance {tol:.0e})");
        assert!(d < tol, "{name}: {d:.2e}");
    }
    // Below the size the same backend solves on the host.
    let mut small = cavity_json(20, 10, 4.0, 0.1);
    small["gas"]["kn"] = serde_json::json!(0.05);
    let (_, r) = run(&with(config(&small), Acceleration::Gsis, 1e-6, 60), BackendChoice::Wgpu, 2);
    assert_eq!(r.synthetic_solve, Some("host"));
    let (_, si) = run(&with(config(&small), Acceleration::None, 1e-6, 60), BackendChoice::Wgpu, 2);
    assert_eq!(si.synthetic_solve, None);
}

#[test]
fn gsis_converges_near_the_continuum_on_a_coarse_velocity_grid_on_every_backend() {
    // Kn 1e-4 (delta 6840) on 10 velocity points per axis. The trapezoid rule there puts the
    // grid Maxwellian's momentum and energy 2e-5 and 1e-4 off the state's, and the collision
    // term made nu times that in every cell unless its parameters were matched
    // (model::matched_maxwellian): the synthetic correction, which assumes conservation, then
    // diverged (residual 0.4 after 40 sweeps; now 19 on the CPU and on lavapipe).
    // f64 on every backend: f32 stalls above the stop below Kn 0.004 (docs/model.md). The
    // stop of 1e-8 leaves each run within ~1e-8 of the fixed point (GSIS contracts by ~0.3
    // per sweep here), so the backends agree to 1e-6 relative L2 with a margin of ~100.
    let mut v = cavity_json(8, 10, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(1e-4);
    v["solver"] = serde_json::json!({"precision": "f64"});
    let cfg = with(config(&v), Acceleration::Gsis, 1e-8, 40);
    let mut cpu = None;
    for b in backends() {
        let (_, r) = run(&cfg, b, 2);
        eprintln!("{b:?}: {} sweeps, residual {:.2e}", r.iterations(), r.final_residual());
        assert!(r.converged, "{b:?}: residual {:.2e} after {} sweeps", r.final_residual(), r.iterations());
        let reference = cpu.get_or_insert_with(|| r.fields.clone());
        for (name, d) in field_differences(&r.fields, reference) {
            assert!(d < 1e-6, "{b:?} {name}: {d:.2e} from the CPU");
        }
    }
}

#[test]
fn gsis_gives_the_same_bits_on_any_number_of_threads() {
    // docs/model.md, "Determinism": the synthetic solve's reductions run over fixed chunks
    // in a fixed order, so like the sweep it must not depend on the thread count.
    let mut v = cavity_json(8, 10, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.05);
    let cfg = with(config(&v), Acceleration::Gsis, 1e-30, 6);
    let (_, a) = run(&cfg, BackendChoice::Cpu, 1);
    let (_, b) = run(&cfg, BackendChoice::Cpu, 2);
    assert_eq!(a.fields, b.fields, "GSIS fields differ between 1 and 2 threads");
}

#[test]
fn auto_reaches_the_gsis_answer_on_every_backend() {
    // `auto` makes a synthetic solve only where its measured cost pays (which updates are
    // solves depends on timings); either update keeps the fixed point, so every backend
    // reaches GSIS's CPU answer within the tolerances of gsis_on_every_backend_agrees_with_the_cpu
    // (the CPU's own run within 1e-5: both stop at 1e-6, with contractions of ~0.5 (GSIS)
    // and ~0.8 (source iteration at Kn 0.05 on 8^3 cells), ~5e-6 from the fixed point).
    let mut v = cavity_json(8, 12, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.05);
    let (_, reference) = run(&with(config(&v), Acceleration::Gsis, 1e-6, 60), BackendChoice::Cpu, 2);
    let cfg = with(config(&v), Acceleration::Auto, 1e-6, 400);
    for b in backends() {
        let (_, r) = run(&cfg, b, 2);
        let solves = r.synthetic_solves.expect("auto counts its solves");
        eprintln!("{b:?}: {} iterations, {solves} synthetic solves", r.iterations());
        assert!(r.converged && solves <= r.iterations());
        if b == BackendChoice::Cpu {
            assert!(solves >= 1, "the CPU backend's first update is a solve (timed in line)");
        } else {
            assert!(solves < r.iterations(), "{b:?}: the first solve is timed beside the sweeps");
        }
        for (name, d) in field_differences(&r.fields, &reference.fields) {
            let tol = match (b, name) {
                (BackendChoice::Cpu, _) => 1e-5,
                (_, "heat_flux") => 3e-4,
                _ => 1e-4,
            };
            eprintln!("{b:?} {name}: {d:.2e} (tolerance {tol:.0e})");
            assert!(d < tol, "{b:?} {name}: {d:.2e}");
        }
    }
}

#[test]
fn a_box_open_through_one_free_stream_face_converges_to_the_source_iteration_answer() {
    // Diffuse walls on five faces (one at T = 0.9), a free stream along x over the sixth. The
    // synthetic correction predicts the walls' incident fluxes; the wall-density damping,
    // which held them back, let this case oscillate at residual 0.3-0.6 for 300 sweeps, and
    // is left out after a correction in an open domain (src/solver/state.rs).
    let mut v = open_box_json([8; 3]);
    let wall = serde_json::json!({"type": "diffuse_wall", "temperature": 1.0});
    for face in ["x_min", "x_max", "z_min", "z_max"] {
        v["boundaries"][face] = wall.clone();
    }
    gsis_reaches_the_source_iteration_answer_sooner("five walls", &v);
}

/// Case `v` on the CPU with source iteration and with GSIS, both to 1e-11 (f64): both
/// converge, GSIS in fewer sweeps, and every field within 1e-6 relative L2 of the other
/// (both stop within about 1e-9 of the fixed point).
fn gsis_reaches_the_source_iteration_answer_sooner(label: &str, v: &serde_json::Value) {
    let base = config(v);
    let (_, si) = run(&with(base.clone(), Acceleration::None, 1e-11, 2000), BackendChoice::Cpu, 2);
    let (_, gs) = run(&with(base, Acceleration::Gsis, 1e-11, 300), BackendChoice::Cpu, 2);
    let (n_si, n_gs) = (si.iterations(), gs.iterations());
    assert!(si.converged && gs.converged, "{label}: source iteration {n_si} sweeps, GSIS {n_gs}");
    eprintln!("{label}: source iteration {n_si} sweeps, GSIS {n_gs} sweeps");
    assert!(n_gs < n_si, "{label}: GSIS {n_gs} sweeps against source iteration's {n_si}");
    for (name, d) in field_differences(&gs.fields, &si.fields) {
        assert!(d < 1e-6, "{label}, {name}: GSIS differs from source iteration by {d:.2e}");
    }
}

#[test]
fn a_box_open_through_a_free_stream_face_with_periodic_and_specular_sides_converges_to_the_source_iteration_answer() {
    // A wall at T = 0.9 under a free stream along x, the sides periodic (x) or specular (x)
    // and specular (z). Partner faces read the exits of the previous sweep; after a
    // correction those were stale, and this case oscillated at residual 0.4-0.6 for 300
    // sweeps until the exits moved with the correction (src/solver/synthetic/partners.rs).
    for sides in ["periodic", "specular"] {
        let mut v = open_box_json([8; 3]);
        for face in ["x_min", "x_max"] {
            v["boundaries"][face] = serde_json::json!({"type": sides});
        }
        gsis_reaches_the_source_iteration_answer_sooner(sides, &v);
    }
}

#[test]
fn a_sweep_with_non_finite_moments_ends_the_run_naming_the_cell_before_any_solve() {
    // Before, the synthetic update ran first: GMRES took every step to its limit on the NaN
    // right-hand side, and the run then ended blaming the synthetic solve ("`--acceleration
    // none` runs without it"). The sweep's fault is named at once, with its cell.
    // With the mass rescale (closed domains' default), whose factor would spread the NaN to
    // every cell, and without.
    for rescale in [true, false] {
        let mut v = cavity_json(6, 10, 4.0, 0.1);
        v["gas"]["kn"] = serde_json::json!(0.02);
        v["solver"]["mass_rescale"] = serde_json::json!(rescale);
        let cfg = with(config(&v), Acceleration::Gsis, 1e-9, 50);
        let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
        let (inner, _) = knudsen::backend::create(BackendChoice::Cpu, p.clone(), cfg.solver.memory_budget_mib).unwrap();
        let cell = p.grid.index(2, 3, 4);
        // Its third sweep returns NaN moments in one cell: what a device fault or an
        // overflow gives.
        let poison = move |n: usize, out: &mut knudsen::backend::SweepOutput| {
            if n == 3 {
                out.raw[cell][0] = f64::NAN;
            }
            Ok(())
        };
        let backend = Box::new(Hooked { inner, sweeps: 0, after: poison });
        let mut records = 0;
        let e = knudsen::solver::Solver::new(&p, backend).run(|_| records += 1).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("iteration 3") && e.contains(&format!("cell {cell} (i, j, k = 2, 3, 4)")), "{e}");
        assert!(e.contains("on the cpu backend"), "{e}");
        assert!(e.contains("non-finite moments") && !e.contains("synthetic"), "{e}");
        assert_eq!(records, 2, "rescale {rescale}: the poisoned sweep was recorded as an iteration");
    }
}

#[test]
fn a_sweep_that_added_nothing_ends_the_run_as_the_backends_fault() {
    // All moments zero (a kernel that wrote nothing): the mass rescale's factor is infinite
    // and the run ends there, calling it the backend's fault and naming a cell, not a
    // "residual is inf" with no cell.
    let cfg = with(config(&cavity_json(6, 10, 4.0, 0.1)), Acceleration::Gsis, 1e-9, 50);
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let (inner, _) = knudsen::backend::create(BackendChoice::Cpu, p.clone(), cfg.solver.memory_budget_mib).unwrap();
    let wipe = |n: usize, out: &mut knudsen::backend::SweepOutput| {
        if n == 2 {
            out.raw.iter_mut().for_each(|m| *m = [0.0; knudsen::model::NRAW]);
        }
        Ok(())
    };
    let backend = Box::new(Hooked { inner, sweeps: 0, after: wipe });
    let e = format!("{:#}", knudsen::solver::Solver::new(&p, backend).run(|_| {}).unwrap_err());
    assert!(e.contains("iteration 2") && e.contains("added nothing to cell 0 (i, j, k = 0, 0, 0)"), "{e}");
    assert!(e.contains("a fault of the backend"), "{e}");
}
