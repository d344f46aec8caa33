//! `solver.coarse_grids` through `knudsen run`, on every backend of `common::backends`: the
//! coarse start reaches the fields of a plain start in fewer of the case's sweeps, and
//! reports its levels in summary.json.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kn 1 cavity on 12^3 cells (a coarse level of 6^3) and 12^3 velocities, GSIS, to 1e-8
/// on the CPU (1e-5 is the f32 GPUs' floor, which they stop at).
fn case(dir: &Path, coarse_grids: usize) -> PathBuf {
    let mut v = cavity_json(12, 12, 4.0, 0.2);
    v["solver"] = serde_json::json!({"tolerance": 1e-8, "max_iterations": 200, "acceleration": "gsis", "coarse_grids": coarse_grids});
    let path = dir.join(format!("case-{coarse_grids}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

fn run(case: &Path, out: &Path, backend: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", case.to_str().unwrap(), "--backend", backend, "--threads", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{log}");
    log
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn fields(out: &Path) -> Vec<knudsen::model::Macro> {
    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    let read = |n: &str| f.dataset(n).unwrap().read_raw::<f64>().unwrap();
    let (rho, u, t) = (read("density"), read("velocity"), read("temperature"));
    (0..rho.len())
        .map(|c| knudsen::model::Macro {
            rho: rho[c],
            u: [u[3 * c], u[3 * c + 1], u[3 * c + 2]],
            t: t[c],
            q: [0.0; 3],
            p: [0.0; 6],
        })
        .collect()
}

#[test]
fn a_coarse_start_reaches_the_plain_starts_fields_in_fewer_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    for b in backends() {
        use clap::ValueEnum;
        let name = b.to_possible_value().unwrap().get_name().to_string();
        let name = name.as_str();
        let (plain, coarse) = (dir.path().join(format!("{name}-plain")), dir.path().join(format!("{name}-coarse")));
        run(&case(dir.path(), 0), &plain, name);
        let log = run(&case(dir.path(), 1), &coarse, name);
        assert!(log.contains("coarse start: 6 x 6 x 6 cells"), "{name}: {log}");
        let (s0, s1) = (summary(&plain), summary(&coarse));
        assert!(s0.get("coarse_start").is_none(), "{name}");
        let levels = s1["coarse_start"]["levels"].as_array().unwrap();
        assert_eq!(levels.len(), 1, "{name}");
        assert_eq!(levels[0]["cells"], serde_json::json!([6, 6, 6]), "{name}");
        // The level stops at its tolerance, 1e-2, and lists each iteration's residual.
        assert!(levels[0]["final_residual"].as_f64().unwrap() < 1e-2, "{name}");
        let residuals = levels[0]["residuals"].as_array().unwrap();
        assert_eq!(residuals.len() as u64, levels[0]["iterations"].as_u64().unwrap(), "{name}");
        assert_eq!(residuals.last().unwrap().as_f64(), levels[0]["final_residual"].as_f64(), "{name}");
        // total_seconds is the case's iterations' seconds and the coarse levels' (not their
        // set-up): seconds_per_iteration times the iterations, plus coarse_start.seconds.
        let coarse_seconds = s1["coarse_start"]["seconds"].as_f64().unwrap();
        let own = s1["seconds_per_iteration"].as_f64().unwrap() * s1["iterations"].as_f64().unwrap();
        let total = s1["total_seconds"].as_f64().unwrap();
        assert!(coarse_seconds > 0.0, "{name}");
        // The same recorded seconds multiplied and summed in another order: f64 round-off,
        // far below 1e-9.
        assert!(
            (total - (own + coarse_seconds)).abs() <= 1e-9 * total,
            "{name}: {total} against {own} + {coarse_seconds}"
        );
        // Each run reports its own backend's set-up, which total_seconds leaves out.
        for s in [&s0, &s1] {
            assert!(s["setup_seconds"].as_f64().unwrap() > 0.0, "{name}: {s}");
        }
        let (n0, n1) = (s0["iterations"].as_u64().unwrap(), s1["iterations"].as_u64().unwrap());
        eprintln!("{name}: {n0} sweeps from the initial state, {n1} after the coarse start");
        assert!(s1["converged"].as_bool().unwrap() && s0["converged"].as_bool().unwrap(), "{name}");
        // The same fixed point from a better start: fewer of the case's sweeps (measured: 14
        // against 15 on the CPU to 1e-8, 9 against 11 on wgpu (lavapipe) to its 1e-5 stop).
        assert!(n1 < n0, "{name}: {n1} sweeps after the coarse start, {n0} without");
        // Both stopped with a change below the tolerance t at GSIS's rate r (about 0.3 per
        // sweep here), so each lies within about t r / (1 - r) < t of the fixed point; the
        // bound is 10 t (GPU: the 1e-5 floor, and f32 rounding of the fields, 1e-7 relative).
        let t = if name == "cpu" { 1e-8 } else { 1e-5 };
        for (field, d) in field_differences(&fields(&coarse), &fields(&plain)).iter().take(3) {
            assert!(*d < 10.0 * t, "{name}: {field} differs by {d:.2e}");
        }
    }
}

#[test]
fn a_continued_run_makes_no_coarse_start_and_check_lists_the_levels() {
    let dir = tempfile::tempdir().unwrap();
    let path = case(dir.path(), 1);
    let out = dir.path().join("out");
    let log = run(&path, &out, "cpu");
    assert!(log.contains("coarse start"), "{log}");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", path.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--max-iterations", "2"])
        .args(["--restart", out.to_str().unwrap(), "--out", dir.path().join("more").to_str().unwrap()])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(!log.contains("coarse start") && log.contains("continuing after iteration"), "{log}");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen")).args(["check", path.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("coarse start (solver.coarse_grids = 1): 6 x 6 x 6 cells x 12^3 velocities"), "{text}");
}

#[test]
fn a_run_stopped_by_its_limit_after_a_coarse_start_continues_to_the_same_bits() {
    // The coarse levels keep their own iteration limit, so the stopped run started from the
    // same state as the whole one; the continued part makes no coarse start.
    let dir = tempfile::tempdir().unwrap();
    let path = case(dir.path(), 1);
    let (whole, part) = (dir.path().join("whole"), dir.path().join("part"));
    run(&path, &whole, "cpu");
    let n = summary(&whole)["iterations"].as_u64().unwrap();
    let limited = |out: &Path, extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", path.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    limited(&part, &["--max-iterations", "3"]);
    let rest = (n - 3).to_string();
    limited(&part, &["--max-iterations", &rest, "--restart", part.to_str().unwrap()]);
    let read = |d: &Path| {
        let f = hdf5::File::open(d.join("fields.h5")).unwrap();
        ["density", "velocity", "temperature", "heat_flux"].map(|n| f.dataset(n).unwrap().read_raw::<f64>().unwrap())
    };
    assert_eq!(read(&whole), read(&part));
    assert_eq!(summary(&part)["iterations"].as_u64().unwrap(), n);
}

#[test]
fn periodic_specular_and_free_stream_faces_start_coarse_to_the_same_fields() {
    // The partner data (periodic, specular) restart from the uniform state and the free
    // stream's density is interpolated like a wall's: the fixed point must not notice.
    // Source iteration, so that the coarse start is seen with the other strategy too.
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for g in [0, 1] {
        let mut v = open_box_json([8; 3]);
        v["solver"] =
            serde_json::json!({"tolerance": 1e-8, "max_iterations": 400, "acceleration": "none", "coarse_grids": g});
        let path = dir.path().join(format!("partners-{g}.json"));
        std::fs::write(&path, v.to_string()).unwrap();
        let out = dir.path().join(format!("partners-{g}"));
        let log = run(&path, &out, "cpu");
        assert_eq!(log.contains("coarse start: 4 x 4 x 4 cells"), g == 1, "{log}");
        assert!(summary(&out)["converged"].as_bool().unwrap());
        outs.push(out);
    }
    // Source iteration here shrinks the change by about 0.89 per sweep, so each run stops
    // within about t / (1 - 0.89) = 9 t of the fixed point: 2 x 9 t apart at most, 2e-7
    // (measured: density 1.1e-8, velocity 3.0e-8).
    for (field, d) in field_differences(&fields(&outs[1]), &fields(&outs[0])).iter().take(3) {
        assert!(*d < 2e-7, "{field} differs by {d:.2e}");
    }
}

/// A case the chosen GPU backend refuses (here its memory budget is below one velocity's
/// slice of the case, though not of the coarse level's) is refused as without a coarse
/// start: exit 2 with the backend's reason, before the coarse level has swept once, and with
/// nothing written.
#[test]
fn a_case_the_gpu_backend_refuses_is_refused_before_its_coarse_level_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = case(dir.path(), 1);
    // One velocity's slice: 12 x 12 cells x 4 B = 576 B for the case, 144 B for the 6^3 level.
    let budget = (300.0 / 1048576.0).to_string();
    let gpus: Vec<_> = backends().into_iter().filter(|b| *b != knudsen::backend::BackendChoice::Cpu).collect();
    // Under CI=true `backends()` has already failed where no wgpu adapter answers.
    for b in gpus {
        use clap::ValueEnum;
        let name = b.to_possible_value().unwrap().get_name().to_string();
        let out = dir.path().join(format!("{name}-out"));
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", path.to_str().unwrap(), "--backend", &name, "--memory-budget-mib", &budget])
            .args(["--out", out.to_str().unwrap()])
            .env("RUST_LOG", "knudsen=debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {log}");
        assert!(log.contains("is below the 576 bytes one velocity's slice needs"), "{name}: {log}");
        // The level's backend was built (wgpu's check needs its adapter), but it never swept.
        assert!(!log.contains("coarse start on [6, 6, 6] cells: iteration"), "{name}: {log}");
        // Refused as the case, not because the level itself could not run (which the code
        // before the check also turned into this exit and message).
        assert!(!log.contains("the coarse start failed"), "{name}: {log}");
        assert!(!out.join("summary.json").exists() && !out.join("fields.h5").exists(), "{name}");
    }
}

/// What a run says is about the case: a coarse level's own `info` lines (its backend's, its
/// synthetic solve's choices) are `debug` lines, and `auto`'s step down to the CPU, which the
/// level and the case both meet where there is no GPU, is said once.
#[test]
fn a_coarse_start_leaves_the_log_to_the_case_and_says_a_step_down_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = cavity_json(12, 12, 4.0, 0.2);
    v["solver"] =
        serde_json::json!({"tolerance": 1e-4, "max_iterations": 50, "acceleration": "auto", "coarse_grids": 1});
    let path = dir.path().join("case.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let run = |out: &str, rust_log: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", path.to_str().unwrap(), "--threads", "2", "--out"])
            .arg(dir.path().join(out))
            .env("RUST_LOG", rust_log)
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{log}");
        log
    };
    // The level's lines and the case's: before and after the level's summary line. (`auto`
    // says each change of its choice, which the clock decides: how many lines is not fixed.)
    let split = |log: &str| -> (Vec<String>, Vec<String>) {
        let lines: Vec<String> = log.lines().map(str::to_string).collect();
        let at = lines.iter().position(|l| l.contains("coarse start: 6 x 6 x 6 cells")).expect("no level line");
        let auto = |ls: &[String]| ls.iter().filter(|l| l.contains("gsis auto: ")).cloned().collect::<Vec<_>>();
        (auto(&lines[..at]), auto(&lines[at..]))
    };
    let log = run("info", "info");
    let (level, case) = split(&log);
    assert!(level.is_empty() && !case.is_empty(), "{log}");
    let on_cpu = log.contains("] backend cpu on ");
    let step_downs = log.lines().filter(|l| l.starts_with("[WARN") && l.contains("using the CPU backend")).count();
    assert_eq!(step_downs, usize::from(on_cpu), "{log}");
    // Kept, not lost: the level's line is there at `debug`.
    let log = run("debug", "knudsen=debug");
    let (level, case) = split(&log);
    assert!(!level.is_empty() && level.iter().all(|l| l.starts_with("[DEBUG")), "{level:?}");
    assert!(!case.is_empty() && case.iter().all(|l| l.starts_with("[INFO")), "{case:?}");
}

/// A budget too small for any backend (`--backend auto`, which checks nothing before the
/// level): the level's refusal is not reported as a failed coarse start with a run from the
/// initial state to follow; the case is refused with its own figures, exit 2, nothing made.
#[test]
fn a_budget_the_level_cannot_take_refuses_the_case_without_a_failed_coarse_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = cavity_json(8, 16, 4.0, 0.1);
    v["solver"] = serde_json::json!({"memory_budget_mib": 1e-6, "coarse_grids": 1});
    let path = dir.path().join("case.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", path.to_str().unwrap(), "--threads", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("memory budget"), "{err}");
    assert!(!err.contains("coarse start failed"), "{err}");
    assert!(!out.exists(), "{err}");
}
