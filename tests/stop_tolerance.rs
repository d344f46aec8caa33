//! The tolerance a run stops at, where the case asks for less than f32 arithmetic resolves:
//! said once, recorded in summary.json and named by the "not converged" message; with MPI
//! processes on backends of different floors, every process stops at the largest, and a
//! process whose own arithmetic is f64 says whose floor it is.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

fn case(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("case.json");
    std::fs::write(&path, pinned(&cavity_json(6, 12, 4.0, 0.1)).to_string()).unwrap();
    path
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

const RAISED: &str = "is below what";

#[test]
fn an_f32_run_below_its_floor_says_so_once_and_records_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o: Output = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", case(dir.path()).to_str().unwrap(), "--backend", "cpu", "--precision", "f32", "--threads", "2"])
        .args([
            "--tolerance",
            "1e-9",
            "--max-iterations",
            "2",
            "--acceleration",
            "auto",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // "auto" decides with the raised tolerance too; it used to say so a second time.
    assert_eq!(err.matches(RAISED).count(), 1, "{err}");
    assert!(err.contains("the cpu backend's f32 arithmetic resolves; stopping at 1.0e-5"), "{err}");
    let s = summary(&out);
    assert_eq!(s["tolerance"], 1e-5, "summary.json records the tolerance the stop used");
    assert!(err.contains("> tolerance 1.0e-5 after 2 iterations"), "the message names the stop's tolerance: {err}");
}

/// One f64 and one f32 process (MPMD): both stop at the f32 floor, and the f64 one says
/// that the floor is another process's.
#[cfg(feature = "mpi")]
#[test]
fn mpi_processes_of_different_floors_stop_together_at_the_largest() {
    let dir = tempfile::tempdir().unwrap();
    let (case, out) = (case(dir.path()), dir.path().join("out"));
    let (case, out) = (case.to_str().unwrap(), out.to_str().unwrap());
    let rank = |precision: &'static str| {
        let exe = env!("CARGO_BIN_EXE_knudsen");
        let args = ["-np", "1", exe, "run", case, "--backend", "cpu", "--precision", precision, "--threads", "1"];
        args.into_iter().chain(["--tolerance", "1e-9", "--out", out]).map(String::from).collect::<Vec<_>>()
    };
    let o = Command::new("mpirun")
        .arg("--oversubscribe")
        .arg("--tag-output")
        .args(rank("f64"))
        .arg(":")
        .args(rank("f32"))
        // CI runs as root; OpenMPI refuses that unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(RAISED)).collect();
    assert_eq!(lines.len(), 2, "one warning per process: {err}");
    let of = |rank: &str| lines.iter().find(|l| l.starts_with(&format!("[1,{rank}]"))).copied().unwrap_or_default();
    assert!(of("0").contains("another process's backend"), "the f64 process: {err}");
    assert!(of("1").contains("the cpu backend's f32 arithmetic"), "the f32 process: {err}");
    let s = summary(Path::new(out));
    assert_eq!(s["tolerance"], 1e-5, "rank 0 (f64) records the floor the processes stopped at");
    assert_eq!(s["converged"], true);
    assert!(s["final_residual"].as_f64().unwrap() < 1e-5);
}
