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

#[test]
fn a_point_that_cannot_be_measured_fails_its_suite_and_the_others_still_run() {
    // Two suites: the first's point has a specular y_max, where the Couette shear has no
    // wall speed to scale by, so its run ends in an error after solving; the second is the
    // plain free-molecular point. The error fails its suite only: the second still runs and
    // passes, the results file holds both, and the command exits 1 naming the first. The
    // first suite's own later point (the plain one again) still runs and is reported.
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/validation/couette-bgk.json")).unwrap();
    let mut good: serde_json::Value = serde_json::from_str(&src).unwrap();
    good["points"].as_array_mut().unwrap().retain(|p| p["set"]["gas.delta"] == 0.001);
    let mut bad = good.clone();
    bad["name"] = serde_json::json!("unmeasurable");
    bad["points"][0]["set"]["boundaries.y_max"] = serde_json::json!({"type": "specular"});
    let plain = good["points"][0].clone();
    bad["points"].as_array_mut().unwrap().push(plain);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fa, fb) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&fa, bad.to_string()).unwrap();
    std::fs::write(&fb, good.to_string()).unwrap();
    let validate = |out: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["validate", "--fast", "--out"])
            .arg(out)
            .arg(&fa)
            .arg(&fb)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let run = validate(&dir.join("out"));
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("point 0 (") && stdout.contains(") failed: the measure needs a diffuse wall at y_max"),
        "{stdout}"
    );
    assert!(stderr.contains("1 of 2 suites failed: unmeasurable"), "{stderr}");
    // The progress line names the settings as keys and values, not as a debug dump.
    assert!(stdout.contains("gas.delta = 0.001") && !stdout.contains("Number("), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/results-fast.json")).unwrap()).unwrap();
    assert_eq!(doc["suites"][0]["pass"], false);
    assert_eq!(doc["suites"][1]["pass"], true);
    let after = &doc["suites"][0]["points"];
    assert_eq!(after.as_array().map(Vec::len), Some(1), "{after}");
    assert_eq!(after[0]["pass"], true, "{after}");
    // An --out that is a file is refused before any suite runs: exit 2.
    let file = dir.join("plain");
    std::fs::write(&file, b"x").unwrap();
    let run = validate(&file);
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a directory") && stdout.is_empty(), "{stdout}{stderr}");
}

/// `--precision` sets the points' `solver.precision` (here the CPU's f32, on one Couette
/// point) and the results record it; a point's own setting would win.
#[test]
fn the_given_precision_runs_and_is_recorded() {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/configs/validation/couette-bgk.json")).unwrap();
    let mut suite: serde_json::Value = serde_json::from_str(&src).unwrap();
    suite["points"].as_array_mut().unwrap().retain(|p| p["set"]["gas.delta"] == 0.001);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("one.json");
    std::fs::write(&file, suite.to_string()).unwrap();
    let run = |precision: Option<&str>| {
        let out = tmp.path().join(precision.unwrap_or("default"));
        let mut c = Command::new(env!("CARGO_BIN_EXE_knudsen"));
        c.args(["validate", "--fast", "--out"]).arg(&out).arg(&file).env("RUST_LOG", "warn");
        if let Some(p) = precision {
            c.args(["--precision", p]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results-fast.json")).unwrap()).unwrap();
        doc["suites"][0]["points"][0].clone()
    };
    let (f32, own) = (run(Some("f32")), run(None));
    assert_eq!(f32["precision"], "f32", "{f32}");
    assert!(own.get("precision").is_none(), "{own}");
    // The f32 run is a run of its own: its value differs from f64's in the last digits.
    assert_ne!(f32["measured"], own["measured"]);
}
