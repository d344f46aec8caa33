//! Velocity-space decomposition over MPI processes, through `mpirun` (docs/parallel.md):
//! N processes give the single process's fields to 1e-12 with the same iteration count, a
//! rerun on the same N gives the same bits, a run continues on another process count, and a
//! failing rank ends the whole job. CPU backend in f64, one thread per process.
#![cfg(feature = "mpi")]

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn knudsen_cmd(ranks: usize) -> Command {
    let exe = env!("CARGO_BIN_EXE_knudsen");
    let mut c = if ranks == 0 {
        Command::new(exe)
    } else {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-np", &ranks.to_string(), exe]);
        c
    };
    // CI runs as root; OpenMPI refuses that unless told.
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env("RUST_LOG", "warn");
    c
}

/// `knudsen run` on `ranks` processes (0: no launcher at all).
fn run(ranks: usize, case: &Path, out: &Path, extra: &[&str]) -> Output {
    run_with(ranks, case, out, extra, &[])
}

/// [`run`] with environment variables set.
fn run_with(ranks: usize, case: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let o = knudsen_cmd(ranks)
        .envs(env.iter().copied())
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&o.stderr));
    o
}

fn read(dir: &Path, name: &str) -> Vec<f64> {
    hdf5::File::open(dir.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
}

fn iterations(dir: &Path) -> u64 {
    hdf5::File::open(dir.join("fields.h5")).unwrap().attr("iterations").unwrap().read_scalar().unwrap()
}

const FIELDS: [&str; 6] = ["density", "velocity", "temperature", "heat_flux", "stress", "restart/face_density"];

/// Every field within `tol` (relative L2) of the reference, after the same iterations.
fn assert_close(a: &Path, reference: &Path, tol: f64, what: &str) {
    assert_eq!(iterations(a), iterations(reference), "{what}: iteration counts differ");
    for name in FIELDS {
        let d = rel_l2(read(a, name).into_iter(), read(reference, name).into_iter());
        assert!(d <= tol, "{what}: {name} differs from the single process by {d:.2e}");
    }
}

fn write_case(dir: &Path, name: &str, v: &serde_json::Value) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, pinned(v).to_string()).unwrap();
    path
}

/// A scratch folder removed when the test ends, pass or fail.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("knudsen-mpi-{name}-")).tempdir().unwrap()
}

/// A lid-driven cavity (walls only), 11^3 velocities: the octants hold 125 to 216 velocities
/// (odd grids put the zero node on the positive side), so the rank counts below split
/// them unevenly.
fn cavity(acceleration: &str) -> serde_json::Value {
    let mut v = cavity_json(6, 11, 4.0, 0.2);
    v["gas"]["kn"] = serde_json::json!(0.3);
    v["solver"] = serde_json::json!({"tolerance": 1e-10, "max_iterations": 300, "acceleration": acceleration});
    v
}

/// Periodic and specular faces: the sweep's exits, owned by whichever rank sweeps the
/// velocity, feed the partner face on every rank. The y_max face lets gas in and out, so
/// the domain is open and no mass rescale would hide a sum that counted a velocity twice.
fn partners() -> serde_json::Value {
    let mut v = open_box_json([4, 5, 3]);
    v["solver"] = serde_json::json!({"tolerance": 1e-10, "max_iterations": 300});
    v
}

#[test]
fn two_and_three_ranks_give_the_single_process_fields() {
    // 1e-12: the processes' partial sums are added in another order than one process adds
    // its batches, so the moments differ by a few ulps per iteration; the fixed point is
    // the same and the iteration counts must match.
    let tmp = scratch("fields");
    let dir = tmp.path();
    // With the second-order sweep the partner data on two axes is relaxed
    // (`solver.partner_relaxation`), on every rank alike after the sum.
    let mut second = partners();
    second["solver"]["scheme"] = serde_json::json!("second_order");
    for (name, v) in [("si", cavity("none")), ("gsis", cavity("gsis")), ("partners", partners()), ("relaxed", second)] {
        let case = write_case(dir, name, &v);
        let one = dir.join(format!("{name}-1"));
        run(0, &case, &one, &[]);
        for ranks in [2, 3] {
            let out = dir.join(format!("{name}-{ranks}"));
            let o = run(ranks, &case, &out, &[]);
            assert_close(&out, &one, 1e-12, &format!("{name}, {ranks} ranks"));
            let summary: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
            assert_eq!(summary["processes"], ranks, "{name}: summary.json");
            // Rank 0 alone writes: one result, and no stray output from the others.
            assert!(!String::from_utf8_lossy(&o.stderr).contains("error"), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }
}

#[test]
fn a_coarse_start_on_two_ranks_gives_the_single_process_fields() {
    // Each coarse level sums the ranks' sweeps with a reducer of its own; 8^3 cells coarsen
    // to 4^3. The same 1e-12 as above, and the same coarse iterations.
    let tmp = scratch("coarse");
    let dir = tmp.path();
    let mut v = cavity("gsis");
    v["grid"] = cavity_json(8, 11, 4.0, 0.2)["grid"].clone();
    v["solver"]["coarse_grids"] = serde_json::json!(1);
    let case = write_case(dir, "coarse", &v);
    let one = dir.join("coarse-1");
    run(0, &case, &one, &[]);
    let two = dir.join("coarse-2");
    run(2, &case, &two, &[]);
    assert_close(&two, &one, 1e-12, "coarse start, 2 ranks");
    let levels = |d: &Path| {
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
        let l = s["coarse_start"]["levels"].clone();
        (l[0]["cells"].clone(), l[0]["iterations"].clone())
    };
    assert_eq!(levels(&one), levels(&two));
    assert_eq!(levels(&one).0, serde_json::json!([4, 4, 4]));
}

#[test]
fn a_rerun_on_the_same_ranks_gives_the_same_bits() {
    let tmp = scratch("bits");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("gsis"));
    let (a, b) = (dir.join("a"), dir.join("b"));
    run(3, &case, &a, &[]);
    run(3, &case, &b, &[]);
    for name in FIELDS {
        assert!(read(&a, name) == read(&b, name), "{name}: two 3-rank runs differ");
    }
}

#[test]
fn the_shared_memory_and_collective_sums_give_the_same_bits() {
    // On one machine the sum goes through a shared window (src/parallel/shared.rs) unless
    // told otherwise; it must add the same chunks in the same rank order as the library's
    // collectives. The partner case also sums the exits, which fill most of its buffer.
    let tmp = scratch("sums");
    let dir = tmp.path();
    for (name, v) in [("gsis", cavity("gsis")), ("partners", partners())] {
        let case = write_case(dir, name, &v);
        for ranks in [2, 3] {
            let out = |sum: &str| dir.join(format!("{name}-{ranks}-{sum}"));
            let o = run_with(ranks, &case, &out("default"), &[], &[("RUST_LOG", "info")]);
            let log = String::from_utf8_lossy(&o.stderr);
            assert!(
                log.contains("shared memory: pack"),
                "{name}, {ranks} ranks: the default sum is not the shared one: {log}"
            );
            let o = run_with(
                ranks,
                &case,
                &out("collective"),
                &[],
                &[("KNUDSEN_MPI_SUM", "collective"), ("RUST_LOG", "info")],
            );
            let log = String::from_utf8_lossy(&o.stderr);
            assert!(log.contains("all-to-all"), "{name}, {ranks} ranks: the collective sum was not taken: {log}");
            for f in FIELDS {
                assert!(read(&out("default"), f) == read(&out("collective"), f), "{name}, {ranks} ranks: {f} differs");
            }
        }
    }
    // An unknown sum is refused by every process as it starts (src/cli/switches.rs), before
    // MPI: the job fails, naming the value, with exit 2. (parallel/mpi.rs refuses it too,
    // after the processes agree, for callers of the library.)
    let case = write_case(dir, "bad", &cavity("none"));
    let o = knudsen_cmd(2)
        .env("KNUDSEN_MPI_SUM", "ring")
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out"])
        .arg(dir.join("bad"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("KNUDSEN_MPI_SUM=ring: expected one of collective, shared"), "{err}");
}

#[test]
fn a_run_continues_on_another_number_of_ranks() {
    let tmp = scratch("restart");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("none"));
    let whole = dir.join("whole");
    run(0, &case, &whole, &[]);
    let part = dir.join("part");
    // Stopped by its iteration limit on 2 ranks, continued on 3.
    run(2, &case, &part, &["--max-iterations", "7"]);
    assert_eq!(iterations(&part), 7);
    run(3, &case, &part, &["--restart", part.to_str().unwrap()]);
    assert_close(&part, &whole, 1e-12, "2 ranks, then 3");
}

#[test]
fn a_failing_rank_ends_the_whole_job_with_its_error() {
    // Only rank 0 writes, so only rank 0 finds that the output directory cannot be made;
    // the other ranks are already sweeping and would wait for it forever.
    let tmp = scratch("fail");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("none"));
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let t0 = Instant::now();
    let o = knudsen_cmd(3)
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out"])
        .arg(blocker.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the job succeeded: {err}");
    assert!(err.contains("rank 0 of 3 failed"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(60), "the job took {:?} to end", t0.elapsed());
}

#[test]
fn a_rank_failing_after_the_sums_began_ends_the_whole_job() {
    // Rank 0 alone writes checkpoints; here its first one (after iteration 1, with a
    // checkpoint every 1e-6 minutes) cannot replace the directory in its way. The other
    // ranks are then waiting in the next sum, and the shared window must not be freed on
    // the failing rank's way out (that free waits for them): the job must end, not hang.
    let tmp = scratch("fail-late");
    let dir = tmp.path();
    let mut v = cavity("none");
    v["solver"]["checkpoint_minutes"] = serde_json::json!(1e-6);
    let case = write_case(dir, "case", &v);
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("checkpoint.h5").join("in-the-way")).unwrap();
    let mut cmd = knudsen_cmd(3);
    cmd.args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out", out.to_str().unwrap()]);
    let (code, err) = within(cmd, Duration::from_secs(90));
    assert_ne!(code, Some(0), "the job succeeded: {err}");
    assert!(err.contains("rank 0 of 3 failed"), "{err}");
    assert!(err.contains("checkpoint"), "the error does not name the checkpoint: {err}");
}

/// Run `cmd` to its end, or kill it and fail after `limit` (a job whose processes wait for
/// each other must fail the test, not hang it): its exit code and stderr.
fn within(mut cmd: Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            // SIGTERM first: mpirun then ends its processes, which a SIGKILL to it would
            // leave running.
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            panic!("the job still ran after {limit:?}: its processes wait for each other");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

#[test]
fn processes_given_different_runs_refuse_alike() {
    // One process told to stop after 3 iterations and the other after 8 once summed 3
    // sweeps and then waited for each other for ever; two different velocity grids summed
    // into a wrong answer. Every process refuses instead, at once: exit 2, nothing made.
    let tmp = scratch("disagree");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("none"));
    let out = dir.join("a").join("out");
    let (exe, case, out) = (env!("CARGO_BIN_EXE_knudsen"), case.to_str().unwrap(), out.to_str().unwrap());
    let one = |n: &'static str| ["-np", "1", exe, "run", case, "--backend", "cpu", "--max-iterations", n, "--out", out];
    // An MPMD launch: `knudsen_cmd` would put one program after mpirun's options.
    let mut mpmd = Command::new("mpirun");
    mpmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env("RUST_LOG", "warn");
    mpmd.arg("--oversubscribe").args(one("3")).arg(":").args(one("8"));
    let (code, err) = within(mpmd, Duration::from_secs(60));
    assert_eq!(code, Some(2), "{err}");
    // Every process refuses; rank 0 alone says so.
    assert_eq!(err.matches("were not given the same case and run").count(), 1, "{err}");
    assert!(!dir.join("a").exists(), "a directory was left: {err}");
}

#[test]
fn a_case_files_error_and_a_refused_restart_are_said_once_by_a_job_of_three() {
    let tmp = scratch("bad-case");
    let dir = tmp.path();
    let case = dir.join("case.json");
    std::fs::write(&case, r#"{"grid": 3}"#).unwrap();
    let out = dir.join("a").join("out");
    let mut cmd = knudsen_cmd(3);
    cmd.args(["run", case.to_str().unwrap(), "--backend", "cpu", "--out", out.to_str().unwrap()]);
    let (code, err) = within(cmd, Duration::from_secs(60));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.matches("`grid`: invalid type").count(), 1, "{err}");
    assert!(!dir.join("a").exists(), "a directory was left: {err}");
    // And a refusal every process meets in its checks before the first sum.
    let case = write_case(dir, "case", &cavity("none"));
    let mut cmd = knudsen_cmd(3);
    cmd.args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out", out.to_str().unwrap()]);
    cmd.args(["--restart", dir.join("nowhere").to_str().unwrap()]);
    let (code, err) = within(cmd, Duration::from_secs(60));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.matches("nowhere").count(), 1, "{err}");
    assert!(!err.contains("rank "), "{err}");
    assert!(!dir.join("a").exists(), "a directory was left: {err}");
    // And a backend that no process has (CUDA, where no driver answers: CI's machines).
    if let Err(why) = knudsen::backend::cuda_available() {
        let mut cmd = knudsen_cmd(3);
        cmd.args([
            "run",
            case.to_str().unwrap(),
            "--backend",
            "cuda",
            "--threads",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        let (code, err) = within(cmd, Duration::from_secs(60));
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.matches(&format!("--backend cuda: {why}")).count(), 1, "{err}");
        assert!(!dir.join("a").exists(), "a directory was left: {err}");
    } else {
        eprintln!("NOTE: the refused-CUDA leg not run: this machine has CUDA");
    }
}

#[test]
fn a_refused_case_exits_2_and_leaves_no_directory() {
    // The CPU's f32 sweep has no second order: refused on rank 0 once the case is built,
    // which ends the job with the refusal's exit code, and the directories it made go.
    let tmp = scratch("refused");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("none"));
    let out = dir.join("a").join("out");
    let o = knudsen_cmd(2)
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--precision", "f32"])
        .args(["--scheme", "second_order", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!dir.join("a").exists(), "a directory was left: {err}");
}

#[test]
fn validate_and_bench_refuse_a_launch_of_several() {
    // They run in one process: under mpirun each process would run all of it.
    let tmp = scratch("one-process");
    for args in [vec!["validate", "--fast", "--backend", "cpu"], vec!["bench", "--backend", "cpu", "--rows", "8x8"]] {
        let o = knudsen_cmd(2).args(&args).args(["--out"]).arg(tmp.path().join(args[0])).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("runs in one process"), "{args:?}: {err}");
        assert!(!tmp.path().join(args[0]).exists(), "{args:?}: {err}");
    }
}

#[test]
fn sigusr1_to_mpirun_stops_every_process_after_the_same_iteration() {
    // Open MPI's mpirun turns a Ctrl-C into SIGTERM and, a second later, SIGKILL for the
    // processes; SIGUSR1 it forwards. Every process stops after the same iteration, rank 0
    // writes the results and the checkpoint, and the job exits 138 (128 + SIGUSR1) saying
    // how to continue.
    let tmp = scratch("usr1");
    let dir = tmp.path();
    let mut v = cavity_json(10, 16, 4.0, 0.1);
    v["solver"] = serde_json::json!({"tolerance": 1e-25, "max_iterations": 400, "checkpoint_minutes": 1e-6,
                                     "acceleration": "none", "coarse_grids": 0});
    let case = write_case(dir, "case", &v);
    let out = dir.join("out");
    let mut child = knudsen_cmd(2)
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "1", "--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !out.join("checkpoint.h5").exists() {
        assert!(child.try_wait().unwrap().is_none(), "the job ended before its first checkpoint");
        assert!(t0.elapsed() < Duration::from_secs(120), "no checkpoint after 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Command::new("kill").args(["-USR1", &child.id().to_string()]).status().unwrap().success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(138), "{err}");
    assert!(err.contains("interrupted by SIGUSR1") && err.contains("continue with: knudsen run"), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["interrupted"].as_bool(), Some(true), "{err}");
    assert!(iterations(&out) < 400 && out.join("checkpoint.h5").exists(), "{err}");
}

#[test]
fn a_rank_refusing_after_rank_0_checked_the_output_leaves_no_directory() {
    // Rank 0 makes sure the results can be written once its own backend is set up; the
    // other rank, here given a memory budget too small for its batches, refuses at the same
    // point and aborts the job before rank 0 could remove what it made. The check therefore
    // leaves nothing made: the directory appears with the first file written.
    let tmp = scratch("refused-elsewhere");
    let dir = tmp.path();
    let case = write_case(dir, "case", &cavity("none"));
    let out = dir.join("a").join("out");
    let (exe, case, out) = (env!("CARGO_BIN_EXE_knudsen"), case.to_str().unwrap(), out.to_str().unwrap());
    let common = ["run", case, "--backend", "cpu", "--threads", "1", "--out", out];
    let mut mpmd = Command::new("mpirun");
    mpmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1").env("RUST_LOG", "warn");
    mpmd.args(["--oversubscribe", "-np", "1", exe]).args(common).args([":", "-np", "1", exe]).args(common);
    mpmd.args(["--memory-budget-mib", "0.0001"]);
    let (code, err) = within(mpmd, Duration::from_secs(60));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rank 1 of 2 failed"), "{err}");
    assert!(!dir.join("a").exists(), "a directory was left: {err}");
}
