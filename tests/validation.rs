//! The fast subset of the validation suite (configs/validation/*.json, docs/validation.md):
//! `knudsen validate --fast` must pass every suite, on the CPU reference backend.

use std::process::Command;

#[test]
fn fast_validation_subset_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["validate", "--fast", "--out"])
        .arg(&out)
        .env("RUST_LOG", "warn")
        .output()
        .expect("running knudsen validate");
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "knudsen validate --fast failed");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results-fast.json")).unwrap()).unwrap();
    let suites = doc["suites"].as_array().unwrap();
    // Every suite file took part, with at least two points each, and every point converged.
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/validation")).unwrap().count();
    assert_eq!(suites.len(), files);
    for s in suites {
        assert_eq!(s["pass"], true, "{}", s["name"]);
        let pts = s["points"].as_array().unwrap();
        assert!(pts.len() >= 2, "{}: {} points", s["name"], pts.len());
        assert!(pts.iter().all(|p| p["converged"] == true), "{}", s["name"]);
    }
}

#[test]
fn a_failing_case_fails_the_command() {
    // The same Couette case with a reference 5% off must fail, with exit status 1.
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/validation/couette-bgk.json")).unwrap();
    let mut suite: serde_json::Value = serde_json::from_str(&src).unwrap();
    let points = suite["points"].as_array_mut().unwrap();
    points.retain(|p| p["set"]["gas.delta"] == 0.001);
    points[0]["reference"] = serde_json::json!(1.05);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let file = dir.join("bad.json");
    std::fs::write(&file, suite.to_string()).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["validate", "--fast", "--out"])
        .arg(dir)
        .arg(&file)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results-fast.json")).unwrap()).unwrap();
    assert_eq!(doc["suites"][0]["pass"], false);
}
