//! The CPU backend's f32 mode (`solver.precision = "f32"`, src/backend/cpu/lanes.rs) against
//! its f64 reference.
//!
//! Tolerances. The f32 path stores f in f32 and sums each cell's moments over a batch's
//! groups in f32 lanes (unit round-off 6e-8), as the GPU backends do; tests/gpu.rs argues
//! the bounds this gives after the same iterations: 1e-5 relative L2 for density, velocity,
//! temperature, pressure and stress (sums whose terms are within ~25 times the result), 1e-4
//! for the heat flux (differences of third moments ~500 times its size). The wall sums of a
//! body are first moments of f over the wall's incoming half-space, like the density: 1e-5.

mod common;
use common::*;
use knudsen::backend::cpu::CpuBackend;
use knudsen::backend::BackendChoice;
use knudsen::config::{Config, Precision, Scheme};
use knudsen::problem::Problem;
use std::sync::Arc;

fn fixed(cfg: &Config, n: usize, precision: Precision) -> Config {
    let mut c = cfg.clone();
    c.solver.max_iterations = n;
    c.solver.tolerance = 1e-30;
    c.solver.precision = Some(precision);
    c
}

fn run_cpu(cfg: &Config) -> knudsen::solver::RunResult {
    let p = Arc::new(Problem::new(cfg));
    run_with(&p, Box::new(CpuBackend::new(p.clone(), 512 << 20).unwrap()))
}

fn assert_close(what: &str, a: &[knudsen::model::Macro], b: &[knudsen::model::Macro]) {
    for (name, d) in field_differences(a, b) {
        let t = if name == "heat_flux" { 1e-4 } else { 1e-5 };
        eprintln!("{what}: {name} relative L2 difference {d:.2e} (tolerance {t:.0e})");
        assert!(d < t, "{what}: {name} differs by {d:e} > {t:e}");
    }
}

/// A case that takes every path of the f32 sweep: a body (solid cells and wall emission, wall
/// loads), specular faces (partner inflow and exits), a stretched axis, an odd velocity count
/// per octant (a padded lane group).
fn body_case() -> Config {
    config(&body_case_json())
}

#[test]
fn f32_matches_f64_after_the_same_iterations() {
    let cfg = load_config("cavity-quick.json");
    let r64 = run_cpu(&fixed(&cfg, 6, Precision::F64));
    let r32 = run_cpu(&fixed(&cfg, 6, Precision::F32));
    assert_eq!(r32.iterations(), 6);
    assert_close("cavity, 6 iterations", &r32.fields, &r64.fields);
    // The comparison has teeth: one iteration more moves the f64 fields by far more.
    let r7 = run_cpu(&fixed(&cfg, 7, Precision::F64));
    let moved = field_differences(&r7.fields, &r64.fields)[1].1;
    assert!(moved > 1e-4, "iteration 7 changed velocity by only {moved:e}");
}

#[test]
fn f32_matches_f64_with_a_body_specular_faces_and_stretched_cells() {
    let cfg = body_case();
    let p = Problem::new(&cfg);
    assert!(p.bodies.solids.any() && (p.vgrid.len() / 8) % 8 != 0, "the case must pad a lane group");
    let r64 = run_cpu(&fixed(&cfg, 4, Precision::F64));
    let r32 = run_cpu(&fixed(&cfg, 4, Precision::F32));
    // Solid cells hold no gas (their velocity is 0/0): compare the fluid ones.
    let fluid = |r: &knudsen::solver::RunResult| -> Vec<knudsen::model::Macro> {
        (0..p.grid.cells()).filter(|&c| !p.bodies.solids.is_solid(c)).map(|c| r.fields[c]).collect()
    };
    assert_close("body case, 4 iterations", &fluid(&r32), &fluid(&r64));
    // The body's incident sums (number, momentum and energy fluxes into its walls).
    let flat = |r: &knudsen::solver::RunResult| r.wall.iter().flatten().copied().collect::<Vec<f64>>();
    let (a, b) = (flat(&r32), flat(&r64));
    assert!(b.iter().any(|&x| x != 0.0));
    let d = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt()
        / b.iter().map(|y| y * y).sum::<f64>().sqrt();
    eprintln!("wall sums relative L2 difference {d:.2e}");
    assert!(d < 1e-5, "wall sums differ by {d:e}");
}

#[test]
fn f32_results_do_not_depend_on_the_thread_count() {
    let cfg = fixed(&body_case(), 3, Precision::F32);
    let (_, one) = run(&cfg, BackendChoice::Cpu, 1);
    let (_, two) = run(&cfg, BackendChoice::Cpu, 2);
    let (_, three) = run(&cfg, BackendChoice::Cpu, 3);
    // Bit for bit, including the NaN velocity of solid cells.
    let bits = |r: &knudsen::solver::RunResult| -> Vec<u64> { r.raw.iter().flatten().map(|x| x.to_bits()).collect() };
    assert!(bits(&one) == bits(&two) && bits(&two) == bits(&three), "f32 moments depend on the thread count");
    assert!(one.wall == three.wall);
}

#[test]
fn f32_refuses_the_second_order_scheme_and_bad_values() {
    // A valid case (the GPUs sweep second order in f32) that the CPU's f32 sweep refuses.
    let mut cfg = load_config("cavity-quick.json");
    cfg.solver.precision = Some(Precision::F32);
    cfg.solver.scheme = Scheme::SecondOrder;
    cfg.validate().unwrap();
    let p = Arc::new(Problem::new(&cfg));
    let e = CpuBackend::new(p, 512 << 20).err().expect("refused").to_string();
    assert!(e.contains("solver.precision") && e.contains("first order"), "{e}");
    // `run` refuses it as bad input before a coarse level runs, and writes nothing.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/cavity-quick.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", "--backend", "cpu", "--precision", "f32", "--scheme", "second_order", "--out"])
        .arg(&out)
        .arg(&case)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("first order only") && !stderr.contains("coarse start failed"), "{stderr}");
    assert!(!out.join("summary.json").exists());
    // `check` says the CPU refuses it, and prints no CPU plan for it.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["check", "--precision", "f32", "--scheme", "second_order"])
        .arg(&case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert!(
        stdout.contains("cpu: refuses: solver.precision / --precision \"f32\"") && !stdout.contains("cpu (f32"),
        "{stdout}"
    );
    let mut v = cavity_json(4, 8, 4.0, 0.1);
    v["solver"] = serde_json::json!({"precision": "f16"});
    let e = Config::from_json(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("f16"), "{e}");
}

/// An odd velocity grid has a zero node, parallel to every face: a specular face has no
/// partner slot for it. Both paths once stopped there ("an entering velocity"); its upwind
/// coefficient is zero, so the inflow it reads must simply not matter.
#[test]
fn odd_velocity_grids_run_with_specular_faces_in_both_precisions() {
    let mut v = body_case_json();
    v["velocity"]["points"] = serde_json::json!(11);
    let cfg = config(&v);
    let r64 = run_cpu(&fixed(&cfg, 3, Precision::F64));
    let r32 = run_cpu(&fixed(&cfg, 3, Precision::F32));
    assert_eq!((r64.iterations(), r32.iterations()), (3, 3));
    let p = Problem::new(&cfg);
    let fluid = |r: &knudsen::solver::RunResult| -> Vec<knudsen::model::Macro> {
        (0..p.grid.cells()).filter(|&c| !p.bodies.solids.is_solid(c)).map(|c| r.fields[c]).collect()
    };
    assert_close("odd grid, 3 iterations", &fluid(&r32), &fluid(&r64));
}

/// The slip-regime cavity on f32 arithmetic: the synthetic correction amplifies the round-off
/// of the sweep's moments by about the collision frequency, so at Kn 0.001 on 8^3 cells the
/// residual stalls near 1e-4, above the 1e-5 stop (docs/model.md, "The f32 floor at small
/// Kn"). The run stops `solver.stall_sweeps` sweeps after its lowest residual, marked
/// stalled and not converged, and says so in summary.json; with the rule off it runs to its
/// limit; in f64, which has no such floor, the same case converges.
#[test]
fn an_f32_run_at_its_round_off_floor_stops_as_stalled() {
    let mut v = cavity_json(8, 12, 4.0, 0.1);
    v["gas"]["kn"] = 0.001.into();
    v["solver"] = serde_json::json!({"acceleration": "gsis", "tolerance": 1e-5, "max_iterations": 400,
        "coarse_grids": 0, "precision": "f32"});
    let cfg = config(&v);
    let r = run_cpu(&cfg);
    let (lowest, at) = r.stalled.expect("the run stalls at its floor");
    assert!(!r.converged);
    assert_eq!(r.iterations(), at + cfg.solver.stall_sweeps, "it stops the rule's sweeps after its lowest");
    let min = r.history.iter().map(|h| h.residual()).fold(f64::INFINITY, f64::min);
    assert_eq!(min, lowest);
    assert!(lowest > 1e-5 && lowest < 1e-3, "{lowest:e}");

    let mut off = cfg.clone();
    off.solver.stall_sweeps = 0;
    off.solver.max_iterations = at + cfg.solver.stall_sweeps + 10;
    let r = run_cpu(&off);
    assert!(r.stalled.is_none() && !r.converged && r.iterations() == off.solver.max_iterations);

    let mut f64_case = cfg.clone();
    f64_case.solver.precision = Some(Precision::F64);
    let r = run_cpu(&f64_case);
    assert!(r.converged && r.stalled.is_none(), "f64: {} iterations", r.iterations());

    // The command's account of it.
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case.json");
    std::fs::write(&case, pinned(&v).to_string()).unwrap();
    let out = dir.path().join("out");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", "--backend", "cpu", "--threads", "2", "--out"])
        .arg(&out)
        .arg(&case)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("stalled at the f32 round-off floor"), "{stderr}");
    // Said before the first sweep too, by `run` on f32 arithmetic and by `check`.
    assert!(stderr.contains("amplifies f32 round-off"), "{stderr}");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen")).arg("check").arg(&case).output().unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && stdout.contains("note: at Kn 1.00e-3 the synthetic correction"), "{stdout}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["converged"], false);
    assert_eq!(s["stalled"]["at_iteration"], at);
    let h5 = hdf5::File::open(out.join("fields.h5")).unwrap();
    assert_eq!(h5.attr("stalled").unwrap().read_scalar::<u8>().unwrap(), 1);

    // Stopped before the rule's sweeps had passed and continued, the run stalls where the
    // run above did: the rule counts from the lowest residual of the whole history.
    let cut = dir.path().join("cut");
    let knudsen = |args: &[&str]| {
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", "--backend", "cpu", "--threads", "2"])
            .args(args)
            .arg(&case)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    };
    let (c, first) = (cut.to_str().unwrap(), (at + 10).to_string());
    knudsen(&["--out", c, "--max-iterations", &first]);
    knudsen(&["--out", c, "--restart", c]);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cut.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["stalled"]["at_iteration"], at, "{s}");
    assert_eq!(s["iterations"], at + cfg.solver.stall_sweeps, "{s}");

    // The precision changes the round-off, not the fixed point: the stalled run continues
    // in f64 (a free key for --restart) and converges.
    let more = dir.path().join("f64");
    knudsen(&["--out", more.to_str().unwrap(), "--restart", c, "--precision", "f64"]);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(more.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["converged"], true, "{s}");
    assert!(s.get("stalled").is_none_or(|x| x.is_null()), "{s}");
}
