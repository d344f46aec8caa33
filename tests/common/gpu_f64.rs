//! The f64 GPU sweeps (`solver.precision = "f64"`: CUDA's and wgpu's slice kernels in f64)
//! against the CPU's f64 reference: the comparisons tests/cuda_f64.rs and tests/wgpu_f64.rs
//! make, each on its backend (their headers give the tolerances' reasons).

use super::*;
use knudsen::config::{Acceleration, Precision, Scheme};

/// `v` for `sweeps` sweeps whatever the residual, from the initial state.
pub fn fixed(v: &serde_json::Value, sweeps: usize, scheme: Scheme, precision: Option<Precision>) -> Config {
    let mut c = config(v);
    c.solver.max_iterations = sweeps;
    c.solver.tolerance = 1e-30;
    c.solver.scheme = scheme;
    c.solver.precision = precision;
    c.solver.coarse_grids = 0;
    c
}

/// Four sweeps of a lid cavity, a body with specular faces and a stretched axis (both
/// schemes) and an open box with periodic, specular and free-stream faces: `gpu` in f64
/// within `tol` of the CPU's f64 in every field (and in the body's wall sums), and `gpu` in
/// f32 more than 1e-8 away, so the comparison tells the precisions apart.
pub fn matches_the_cpu_sweep_for_sweep(gpu: BackendChoice, name: &str, tol: f64) {
    let mut shakhov = cavity_json(8, 10, 4.0, 0.2);
    shakhov["gas"]["prandtl"] = (2.0 / 3.0).into();
    let cases = [
        ("lid cavity, Shakhov", shakhov, Scheme::FirstOrder),
        ("body, specular faces, stretched x", body_case_json(), Scheme::FirstOrder),
        ("body, specular faces, stretched x, second order", body_case_json(), Scheme::SecondOrder),
        ("open box: periodic, specular, free stream, second order", open_box_json([4, 5, 3]), Scheme::SecondOrder),
    ];
    for (what, v, scheme) in cases {
        let (p, cpu) = run(&fixed(&v, 4, scheme, None), BackendChoice::Cpu, 2);
        let f64 = run(&fixed(&v, 4, scheme, Some(Precision::F64)), gpu, 2).1;
        let f32 = run(&fixed(&v, 4, scheme, None), gpu, 2).1;
        // Solid cells hold no gas (their velocity is 0/0): the fluid ones are compared.
        let fluid = |r: &RunResult| -> Vec<knudsen::model::Macro> {
            (0..p.grid.cells()).filter(|&c| !p.bodies.solids.is_solid(c)).map(|c| r.fields[c]).collect()
        };
        let (cpu_f, f64_f, f32_f) = (fluid(&cpu), fluid(&f64), fluid(&f32));
        let mut f32_apart = 0.0f64;
        for ((field, d), (_, d32)) in
            field_differences(&f64_f, &cpu_f).into_iter().zip(field_differences(&f32_f, &cpu_f))
        {
            eprintln!("{what}: {field} {name} f64 {d:.2e}, {name} f32 {d32:.2e} from the CPU's f64");
            assert!(d < tol, "{what}: {field} differs by {d:e}");
            f32_apart = f32_apart.max(d32);
        }
        assert!(f32_apart > 1e-8, "{what}: f32 within {f32_apart:e}");
        // The body's incident sums (wall_load_slice), where it has one.
        let flat = |r: &RunResult| r.wall.iter().flatten().copied().collect::<Vec<f64>>();
        let (a, b) = (flat(&f64), flat(&cpu));
        if b.iter().any(|&x| x != 0.0) {
            let d = rel_l2(a.into_iter(), b.into_iter());
            eprintln!("{what}: wall sums {name} f64 {d:.2e} from the CPU's f64");
            assert!(d < tol, "{what}: wall sums differ by {d:e}");
        }
    }
}

/// The slip-regime cavity of tests/cpu_f32.rs's stall test: at Kn 0.001 the synthetic
/// correction amplifies f32 round-off past the 1e-5 stop, and an f32 run on `gpu` stalls; in
/// f64 it converges far below it, to the CPU's answer. Both stop at residual 1e-10 on the
/// same fixed point; the GSIS contraction (0.2-0.4 a sweep) leaves each within a few 1e-10 of
/// it, so 1e-8 is a bound with room and far below the f32 run's 1e-4.
pub fn converges_at_kn_0_001_where_f32_stalls(gpu: BackendChoice, name: &str) {
    let mut v = cavity_json(8, 12, 4.0, 0.1);
    v["gas"]["kn"] = 0.001.into();
    let mut cfg = config(&v);
    cfg.solver.coarse_grids = 0;
    let f32 = run(&with(cfg.clone(), Acceleration::Gsis, 1e-5, 400), gpu, 2).1;
    assert!(f32.stalled.is_some() && !f32.converged, "f32: {} sweeps", f32.iterations());

    cfg.solver.precision = Some(Precision::F64);
    let cfg = with(cfg, Acceleration::Gsis, 1e-10, 200);
    let g = run(&cfg, gpu, 2).1;
    let cpu = run(&cfg, BackendChoice::Cpu, 2).1;
    assert!(g.converged && g.stalled.is_none(), "{name} f64: {} sweeps", g.iterations());
    assert!(cpu.converged, "CPU: {} sweeps", cpu.iterations());
    eprintln!("Kn 0.001: {name} f64 {} sweeps, CPU f64 {} sweeps to 1e-10", g.iterations(), cpu.iterations());
    for (field, d) in field_differences(&g.fields, &cpu.fields) {
        eprintln!("Kn 0.001: {field} {name} f64 against CPU f64 {d:.2e}");
        assert!(d < 1e-8, "{field}: {d:e}");
    }
}
