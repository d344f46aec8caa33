//! Checkpoints and signals through the CLI: a run killed with SIGKILL, or stopped with
//! SIGINT or SIGTERM, continues with `--restart` to the same fields as a run that was
//! never stopped (bit-identical on the CPU backend: the state is stored in f64 and the
//! sweep coefficients are a function of it).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// A cavity slow enough to be stopped mid-run (about 0.05-0.1 s per iteration on 2 cores,
/// ~45 iterations), checkpointing after every iteration.
fn case(dir: &Path) -> PathBuf {
    let mut v = cavity_json(10, 16, 4.0, 0.1);
    v["solver"] = serde_json::json!({"tolerance": 1e-10, "max_iterations": 400, "checkpoint_minutes": 1e-6});
    let v = pinned(&v);
    let path = dir.join("case.json");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

/// The case with one wall hotter (1.5) and a fast lid (one thermal speed): the state moves
/// enough in the first sweeps that GSIS rebuilds its operator (after sweeps 1, 2 and 8 at the
/// default rebuild drift of 0.2). From the initial state: a coarse start (tests/coarse_start.rs)
/// begins near the fixed point, where the operator is rebuilt less.
fn hot_case(dir: &Path) -> PathBuf {
    let mut v = cavity_json(10, 16, 4.0, 1.0);
    v["boundaries"]["x_min"]["temperature"] = serde_json::json!(1.5);
    v["solver"] =
        serde_json::json!({"tolerance": 1e-10, "max_iterations": 400, "checkpoint_minutes": 1e-6, "coarse_grids": 0});
    let v = pinned(&v);
    let path = dir.join("hot.json");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

fn knudsen() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_knudsen"));
    c.env("RUST_LOG", "warn");
    c
}

fn start(case: &Path, out: &Path) -> Child {
    knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(case: &Path, out: &Path, extra: &[&str]) -> Output {
    continue_from(case, out, out, extra)
}

/// `knudsen run CASE --restart FROM --out OUT EXTRA` on the CPU.
fn continue_from(case: &Path, from: &Path, out: &Path, extra: &[&str]) -> Output {
    knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--restart"])
        .args([from.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

fn iterations_in(file: &Path) -> Option<u64> {
    hdf5::File::open(file).ok()?.attr("iterations").ok()?.read_scalar().ok()
}

/// Wait until the run has checkpointed at least `n` iterations.
fn wait_for_checkpoint(child: &mut Child, out: &Path, n: u64) {
    let t0 = Instant::now();
    while iterations_in(&out.join("checkpoint.h5")).is_none_or(|i| i < n) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before iteration {n}");
        assert!(t0.elapsed() < Duration::from_secs(120), "no checkpoint of iteration {n} after 120 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read(dir: &Path, name: &str) -> Vec<f64> {
    hdf5::File::open(dir.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
}

/// The continued run matches the uninterrupted one, bit for bit.
fn assert_same(a: &Path, b: &Path) {
    // The residual history too: the continued run's first residual compares against the
    // last sweep's output, as the uninterrupted run's does, so both stop at one iteration.
    for name in [
        "density",
        "velocity",
        "temperature",
        "heat_flux",
        "stress",
        "restart/face_density",
        "restart/history_residuals",
    ] {
        assert!(read(a, name) == read(b, name), "{name} differs from the uninterrupted run");
    }
    assert_eq!(iterations_in(&a.join("fields.h5")), iterations_in(&b.join("fields.h5")));
    let converged: u8 =
        hdf5::File::open(a.join("fields.h5")).unwrap().attr("converged").unwrap().read_scalar().unwrap();
    assert_eq!(converged, 1);
}

fn reference(dir: &Path, case: &Path) -> PathBuf {
    let out = dir.join("reference");
    let o = knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("checkpoint.h5").exists(), "a finished run leaves no checkpoint behind");
    out
}

#[test]
fn killed_run_continues_from_its_checkpoint_to_the_same_fields() {
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let reference = reference(dir.path(), &case);
    let out = dir.path().join("killed");
    let mut child = start(&case, &out);
    wait_for_checkpoint(&mut child, &out, 4);
    child.kill().unwrap(); // SIGKILL: no handler runs.
    child.wait().unwrap();
    assert!(!out.join("fields.h5").exists(), "a killed run wrote no final fields");
    let o = finish(&case, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_same(&out, &reference);
}

#[test]
fn sigint_and_sigterm_stop_after_the_iteration_and_say_how_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let reference = reference(dir.path(), &case);
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let out = dir.path().join(&signal[1..]);
        let mut child = start(&case, &out);
        wait_for_checkpoint(&mut child, &out, 3);
        let k = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(k.success());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert!(err.contains("--restart") && err.contains("interrupted"), "{err}");
        let f = hdf5::File::open(out.join("fields.h5")).unwrap();
        let (converged, interrupted): (u8, u8) = (
            f.attr("converged").unwrap().read_scalar().unwrap(),
            f.attr("interrupted").unwrap().read_scalar().unwrap(),
        );
        assert_eq!((converged, interrupted), (0, 1));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!((summary["converged"].as_bool(), summary["interrupted"].as_bool()), (Some(false), Some(true)));
        let o = finish(&case, &out, &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_same(&out, &reference);
    }
}

#[test]
fn a_second_signal_ends_the_run_at_once_saying_so_and_its_checkpoint_continues() {
    // GNU `timeout -s INT` sends two at once (to the process and to its group): the second
    // ends the process without waiting for the iteration, with SIGINT's code and a line that
    // says so, not a silent exit 1.
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let reference = reference(dir.path(), &case);
    // Two signals microseconds apart merge into one (a signal is pending until handled): the
    // second goes 10 ms after the first, well inside the iteration (50-100 ms) that the first
    // lets finish. Where the process still ended first (the first came at an iteration's
    // end), again.
    let (o, out) = (0..3)
        .find_map(|attempt| {
            let out = dir.path().join(format!("twice-{attempt}"));
            let mut child = start(&case, &out);
            wait_for_checkpoint(&mut child, &out, 3);
            let pid = child.id().to_string();
            assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
            std::thread::sleep(Duration::from_millis(10));
            assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
            let o = child.wait_with_output().unwrap();
            // A process that had ended (unreaped, it still takes the signal) says nothing of it.
            String::from_utf8_lossy(&o.stderr).contains("a second SIGINT").then_some((o, out))
        })
        .expect("the run ended before a second signal three times");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("a second SIGINT: ending at once"), "{err}");
    assert!(!err.contains("continue with"), "the first signal's ending ran: {err}");
    let o = finish(&case, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_same(&out, &reference);
}

#[test]
fn the_printed_command_continues_a_run_given_solution_options() {
    // The continuation repeats every option given (the solution-shaping `--scheme`, and the
    // backend, threads, tolerance and acceleration, so that it runs the same way) except
    // `--coarse-grids` (a continued run makes no coarse start), and gives the iterations the
    // run had left (a continued run counts its own): the command the interrupted run prints
    // must run as printed and end at the iteration the run would have ended at.
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let out = dir.path().join("second");
    let mut child = knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--scheme", "second_order"])
        .args(["--coarse-grids", "0", "--tolerance", "1e-12", "--acceleration", "none", "--max-iterations", "8"])
        .args(["--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_checkpoint(&mut child, &out, 2);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    let printed = err.split("continue with: knudsen ").nth(1).expect("no command printed").lines().next().unwrap();
    for given in ["--scheme second_order", "--backend cpu", "--threads 2", "--tolerance 1e-12", "--acceleration none"] {
        assert!(printed.contains(given), "{given} missing: {printed}");
    }
    assert!(!printed.contains("--coarse-grids"), "{printed}");
    let done = summary_of(&out)["iterations"].as_u64().unwrap();
    assert!(done < 8, "the signal came after the last iteration: {err}");
    assert!(printed.contains(&format!("--max-iterations {} ", 8 - done)), "{done} done: {printed}");
    let o = knudsen().args(printed.split_whitespace()).output().unwrap();
    assert!(o.status.success(), "{printed}: {}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary_of(&out)["iterations"].as_u64(), Some(8), "{printed}");
}

fn summary_of(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn an_interrupt_during_the_coarse_start_writes_nothing_and_leaves_no_directory() {
    // Source iteration at Kn 0.05: the 12^3-cell coarse level takes tens of sweeps, so the
    // signal sent after its first one arrives while it runs.
    let dir = tempfile::tempdir().unwrap();
    let mut v = cavity_json(24, 16, 4.0, 0.1);
    v["gas"]["kn"] = serde_json::json!(0.05);
    v["solver"] = serde_json::json!({"tolerance": 1e-10, "acceleration": "none", "coarse_grids": 1});
    let case = dir.path().join("case.json");
    std::fs::write(&case, pinned(&v).to_string()).unwrap();
    // Two levels that do not exist yet: both are made, and both go.
    let out = dir.path().join("out").join("cavity");
    let mut child = knudsen()
        .env("RUST_LOG", "knudsen=debug")
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    loop {
        let mut line = String::new();
        assert!(std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0, "no coarse iteration logged: {log}");
        log += &line;
        if line.contains("coarse start on") {
            break;
        }
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    std::io::Read::read_to_string(&mut err, &mut log).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{log}");
    assert!(log.contains("during the coarse start") && log.contains("nothing written"), "{log}");
    assert!(!dir.path().join("out").exists(), "the output directory made for the results is left: {log}");
    assert!(dir.path().exists() && case.exists(), "more than the run made was removed");
}

#[test]
fn a_different_case_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let out = dir.path().join("out");
    let mut child = start(&case, &out);
    wait_for_checkpoint(&mut child, &out, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&case).unwrap()).unwrap();
    // A new tolerance is fine; a new Knudsen number is another case.
    v["solver"]["tolerance"] = serde_json::json!(1e-3);
    v["gas"]["kn"] = serde_json::json!(0.5);
    let other = dir.path().join("other.json");
    std::fs::write(&other, pinned(&v).to_string()).unwrap();
    let o = finish(&other, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("gas.kn") && err.contains("--force") && !err.contains("tolerance"), "{err}");
    let o = finish(&other, &out, &["--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_gsis_run_continued_after_its_iteration_limit_matches_the_uninterrupted_one() {
    // GSIS keeps its operator's linearisation state between iterations; the restart data
    // carries it, so a continued run takes the same path.
    let dir = tempfile::tempdir().unwrap();
    let case = hot_case(dir.path());
    let gsis = ["--acceleration", "gsis"];
    let reference = dir.path().join("reference");
    let o = knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out"])
        .arg(&reference)
        .args(gsis)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Stopped after each of the first sweeps, before and after the operator's rebuild (the
    // continued run must rebuild the operator that was in use).
    let mut rebuilt = 0;
    for n in 1..=5 {
        let out = dir.path().join(format!("limited-{n}"));
        let o = knudsen()
            .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--max-iterations"])
            .arg(n.to_string())
            .arg("--out")
            .arg(&out)
            .args(gsis)
            .env("RUST_LOG", "knudsen::solver::synthetic=debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{log}");
        let last = log.lines().rfind(|l| l.contains("inner iterations")).unwrap_or_default();
        rebuilt += last.contains("operator rebuilt (2 builds") as usize;
        let o = finish(&case, &out, &gsis);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_same(&out, &reference);
    }
    assert_eq!(rebuilt, 1, "one of the stops must follow the operator's second build");
}

#[test]
fn a_gsis_result_stores_its_operator_state_and_a_damaged_one_is_refused() {
    // GSIS reuses its correction operator across iterations; the state it was linearised
    // about (rho, U, T per cell) goes with the restart data, or a continued run would take
    // another path (the test above). A result whose stored state does not fit the grid must
    // be refused by name, leaving the result as it was.
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let out = dir.path().join("limited");
    let o = knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--max-iterations", "3", "--out"])
        .arg(&out)
        .args(["--acceleration", "gsis"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fields = out.join("fields.h5");
    {
        let file = hdf5::File::open_rw(&fields).unwrap();
        let ds = file.dataset("restart/strategy_state").expect("a GSIS result stores its operator state");
        assert_eq!(ds.shape(), vec![1000, 5]);
        let state: Vec<f64> = ds.read_raw().unwrap();
        assert!(state.chunks(5).all(|s| s[0] > 0.0 && s[4] > 0.0), "densities and temperatures are positive");
        file.unlink("restart/strategy_state").unwrap();
        file.new_dataset::<f64>()
            .shape([999, 5])
            .create("restart/strategy_state")
            .unwrap()
            .write_raw(&state[..4995])
            .unwrap();
    }
    let before = std::fs::read(&fields).unwrap();
    let o = finish(&case, &out, &["--acceleration", "gsis"]);
    assert!(!o.status.success(), "a damaged strategy state was accepted");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("restart/strategy_state"), "{err}");
    assert_eq!(std::fs::read(&fields).unwrap(), before, "the refused restart changed the result");
}

#[test]
fn a_forced_restart_with_a_body_moved_by_its_size_is_refused() {
    // The same number of wall faces, other solid cells: `--force` may change keys, not the
    // geometry the stored fields belong to (the old solid cells' NaN fields would become gas
    // and end the run as a "non-physical state"). Refused by name, exit 2, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let mut v = cavity_json(8, 10, 4.0, 0.2);
    v["bodies"] = serde_json::json!([{"min": [0.25, 0.5, 0.25], "max": [0.5, 0.75, 0.5], "temperature": 1.0}]);
    v["solver"] = serde_json::json!({"max_iterations": 2, "acceleration": "none", "coarse_grids": 0});
    let (first, moved) = (dir.path().join("first.json"), dir.path().join("moved.json"));
    std::fs::write(&first, pinned(&v).to_string()).unwrap();
    v["bodies"][0]["min"][0] = serde_json::json!(0.5);
    v["bodies"][0]["max"][0] = serde_json::json!(0.75);
    std::fs::write(&moved, pinned(&v).to_string()).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let o = knudsen().args(["run", first.to_str().unwrap(), "--backend", "cpu", "--out"]).arg(&a).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Unforced, the refusal names the changed keys and does not offer a `--force` that
    // could not help.
    let o = continue_from(&moved, &a, &b, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bodies") && err.contains("--force cannot continue it either"), "{err}");
    assert!(!err.contains("add --force"), "{err}");
    let o = continue_from(&moved, &a, &b, &["--force"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("its solid cells differ from this case's bodies"), "{err}");
    assert!(!b.exists(), "{err}");
}

#[test]
fn a_restart_takes_the_file_its_case_wrote_beside_another_case_s_result() {
    // fields.h5 of another case (Kn 0.2, 6 iterations) beside this case's checkpoint (Kn
    // 0.1, 2 iterations): the checkpoint is continued, although it holds fewer iterations.
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, kn: f64, n: usize| {
        let mut v = cavity_json(8, 10, 4.0, kn);
        v["solver"] = serde_json::json!({"max_iterations": n, "acceleration": "none", "coarse_grids": 0});
        let path = dir.path().join(name);
        std::fs::write(&path, pinned(&v).to_string()).unwrap();
        path
    };
    let (other, this) = (write("other.json", 0.2, 6), write("this.json", 0.1, 2));
    let (shared, own) = (dir.path().join("shared"), dir.path().join("own"));
    for (case, out) in [(&other, &shared), (&this, &own)] {
        let o = knudsen().args(["run", case.to_str().unwrap(), "--backend", "cpu", "--out"]).arg(out).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    std::fs::copy(own.join("fields.h5"), shared.join("checkpoint.h5")).unwrap();
    let out = dir.path().join("continued");
    let o = knudsen()
        .args(["run", this.to_str().unwrap(), "--backend", "cpu", "--max-iterations", "1", "--restart"])
        .arg(&shared)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // 2 + 1: from the checkpoint (the other case's 6 would have been refused as another case).
    assert_eq!(iterations_in(&out.join("fields.h5")), Some(3), "{err}");
}

#[test]
fn a_checkpoint_takes_away_an_earlier_runs_summary() {
    // A finished run leaves summary.json; a second run into the same directory, killed after
    // its first checkpoint, must not leave that summary beside its own checkpoint, which the
    // summary would seem to vouch for.
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let out = dir.path().join("shared");
    let o = knudsen()
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--max-iterations", "2"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("summary.json").exists());
    let mut child = start(&case, &out);
    wait_for_checkpoint(&mut child, &out, 1);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(out.join("checkpoint.h5").exists());
    assert!(!out.join("summary.json").exists(), "the earlier run's summary survived the new run's checkpoint");
}

#[test]
fn a_restart_from_nowhere_says_so() {
    // Not HDF5's "unable to open file ... errno = 2": the path, and that nothing is there.
    let dir = tempfile::tempdir().unwrap();
    let case = case(dir.path());
    let (nowhere, out) = (dir.path().join("nowhere"), dir.path().join("out"));
    let o = continue_from(&case, &nowhere, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nowhere: no such file or directory") && !err.contains("H5F"), "{err}");
    assert!(!out.exists(), "{err}");
}

#[test]
fn a_failed_sweep_keeps_the_last_whole_iteration_which_continues_to_the_same_fields() {
    // Checkpoints due only every 1000 minutes: before, a sweep that failed lost everything
    // since the run began. Now the state of the last whole iteration (untouched by the
    // failed sweep) is written, and a run continued from it ends bit for bit where the run
    // never stopped ends. GSIS, whose operator state travels with the checkpoint.
    let dir = tempfile::tempdir().unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(hot_case(dir.path())).unwrap()).unwrap();
    let mut v = v;
    v["solver"]["acceleration"] = serde_json::json!("gsis");
    v["solver"]["max_iterations"] = serde_json::json!(12);
    let cfg = config(&v);
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let cpu = || knudsen::backend::create(knudsen::backend::BackendChoice::Cpu, p.clone(), None).unwrap().0;
    let whole = knudsen::solver::Solver::new(&p, cpu()).run(|_| {}).unwrap();
    let file = dir.path().join("checkpoint.h5");
    // The fifth sweep fails, as a device fault would, after half a sweep's damage: the
    // moments it leaves must not reach the checkpoint.
    let fail = |n: usize, out: &mut knudsen::backend::SweepOutput| {
        if n == 5 {
            out.raw.iter_mut().for_each(|m| m[0] = f64::NAN);
            anyhow::bail!("the device fell off the bus");
        }
        Ok(())
    };
    let backend = Box::new(Hooked { inner: cpu(), sweeps: 0, after: fail });
    let write = |r: &knudsen::solver::RunResult| knudsen::output::write_fields(&file, &p, r);
    let e = knudsen::solver::Solver::new(&p, backend)
        .with_checkpoints(Duration::from_secs(60_000), Box::new(write))
        .run(|_| {})
        .unwrap_err();
    assert!(format!("{e:#}").contains("fell off the bus"), "{e:#}");
    let restart = knudsen::output::read_restart(&file, &p).expect("the last whole iteration was kept");
    assert_eq!(restart.history.len(), 4, "the iterations before the failed sweep");
    let left = whole.iterations() - 4;
    let mut continued = knudsen::solver::Solver::new(&p, cpu()).with_restart(restart);
    let continued = continued.run_for(left, cfg.solver.tolerance, &mut |_| {}).unwrap();
    assert_eq!(continued.iterations(), whole.iterations());
    for (a, b) in continued.fields.iter().zip(&whole.fields) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "the continued run's fields differ");
    }
}

#[test]
fn a_failed_sweeps_checkpoint_holds_the_last_sweeps_own_wall_sums() {
    // A body case under GSIS, whose correction moves the incident sums to predict the next
    // wall densities: the snapshot after a failed fifth sweep must hold the fourth sweep's
    // own sums (the surface loads and mass fluxes written), as the periodic checkpoint after
    // the fourth iteration does, not the prediction.
    let mut v = body_case_json();
    v["solver"] =
        serde_json::json!({"tolerance": 1e-12, "max_iterations": 8, "acceleration": "gsis", "coarse_grids": 0});
    let cfg = config(&pinned(&v));
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let cpu = || knudsen::backend::create(knudsen::backend::BackendChoice::Cpu, p.clone(), None).unwrap().0;
    let snapshots = std::cell::RefCell::new(Vec::new());
    let keep = |r: &knudsen::solver::RunResult| {
        snapshots.borrow_mut().push(r.clone());
        Ok(())
    };
    knudsen::solver::Solver::new(&p, cpu()).with_checkpoints(Duration::ZERO, Box::new(keep)).run(|_| {}).unwrap();
    let fourth = snapshots.borrow().iter().find(|r| r.iterations() == 4).cloned().expect("a snapshot after 4");
    let fail = |n: usize, _: &mut knudsen::backend::SweepOutput| {
        if n == 5 {
            anyhow::bail!("the device fell off the bus");
        }
        Ok(())
    };
    let failed = std::cell::RefCell::new(None);
    let keep = |r: &knudsen::solver::RunResult| {
        *failed.borrow_mut() = Some(r.clone());
        Ok(())
    };
    let backend = Box::new(Hooked { inner: cpu(), sweeps: 0, after: fail });
    {
        let mut solver =
            knudsen::solver::Solver::new(&p, backend).with_checkpoints(Duration::from_secs(60_000), Box::new(keep));
        solver.run(|_| {}).unwrap_err();
    }
    let failed = failed.into_inner().expect("the failed sweep's checkpoint");
    assert_eq!(failed.iterations(), 4);
    assert!(!fourth.wall.is_empty());
    assert_eq!(format!("{:?}", failed.wall), format!("{:?}", fourth.wall), "the wall sums differ");
    assert_eq!(format!("{:?}", failed.wall_density), format!("{:?}", fourth.wall_density));
    assert_eq!(format!("{:?}", failed.fields), format!("{:?}", fourth.fields));
}
