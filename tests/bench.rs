//! `knudsen bench` end to end on a small row: the CSV has a timed line per backend with
//! consistent numbers, the floor comes from the bandwidth measured in the same run, and bad
//! input is refused before anything runs or is written.

mod common;

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_knudsen")).arg("bench").args(args).output().unwrap()
}

#[test]
fn bench_times_each_backend_and_writes_the_csv() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("b");
    let mut backends = vec!["cpu"];
    if common::gpu_adapter().is_some() {
        backends.push("wgpu");
    }
    let list = backends.join(",");
    let d = dir.to_str().unwrap();
    let o =
        bench(&["--backend", &list, "--rows", "6x10,cube", "--iterations", "2", "--warmup-seconds", "0.3", "--out", d]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.join("bench.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<String>> = lines.map(split_csv).collect();
    assert_eq!(rows.len(), 2 * backends.len(), "{csv}");
    for b in &backends {
        let timed = rows.iter().find(|r| r[col("backend")] == *b && r[col("row")] == "6x10").unwrap();
        assert_eq!(timed[col("status")], "ok");
        let num = |c: &str| timed[col(c)].parse::<f64>().unwrap();
        // 6^3 cells x 10^3 velocities.
        assert_eq!(num("phase_points"), 216000.0);
        assert_eq!(num("timed_iterations"), 2.0);
        // Warm-up runs repeat until 0.3 s have passed (each of this row's runs takes less).
        assert!(num("warmup_s") >= 0.3, "{timed:?}");
        let s = num("s_per_iter");
        assert!(s > 0.0 && num("s_min") <= s && s <= num("s_max"), "{timed:?}");
        // The columns are printed to 7 significant digits: products of three of them agree
        // to a few 1e-7; 1e-5 leaves room and still catches a wrong formula.
        assert!((num("point_updates_per_s") * s / 216000.0 - 1.0).abs() < 1e-5, "{timed:?}");
        let floor = num("phase_points") * num("bytes_per_point") / (num("copy_gb_s") * 1e9);
        assert!((num("floor_s") / floor - 1.0).abs() < 1e-5, "{timed:?}");
        assert!((num("of_floor") * s / num("floor_s") - 1.0).abs() < 1e-5, "{timed:?}");
        // f64 values read and written on the CPU; on wgpu the fused sweep's 4x4 tiles: face
        // values 2 (4 + 4) / 16 x 4 B and partials 2 x 13 x 4 / 128 B.
        assert_eq!(num("bytes_per_point"), if *b == "cpu" { 16.0 } else { 4.0 + 0.8125 });
        // The cube is beyond --cpu-max-points on the CPU and on lavapipe: listed, not run.
        let cube = rows.iter().find(|r| r[col("backend")] == *b && r[col("row")] == "cube").unwrap();
        assert!(cube[col("status")].starts_with("skipped"), "{cube:?}");
    }
    assert!(stdout.contains("copy bandwidth") && stdout.contains("of floor"), "{stdout}");
}

#[test]
fn a_row_runs_every_sweep_asked_for_past_the_f32_floor() {
    // The 4^3-cell Kn 1 cavity reaches f32's 1e-5 in about 25 sweeps; 40 asked for once
    // stopped there and failed the row.
    let out = tempfile::tempdir().unwrap();
    let d = out.path().join("b");
    let args =
        ["--backend", "cpu", "--precision", "f32", "--rows", "4x9", "--iterations", "40", "--warmup-seconds", "0"];
    let o = bench(&[&args[..], &["--out", d.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(d.join("bench.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row = split_csv(csv.lines().nth(1).unwrap());
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!((row[col("status")].as_str(), row[col("timed_iterations")].as_str()), ("ok", "40"), "{csv}");
}

#[test]
fn bench_refuses_bad_input_before_running() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("b");
    let d = dir.to_str().unwrap();
    for (args, needle) in [
        (vec!["--rows", "64"], "expected CxV"),
        (vec!["--rows", "6x4"], "velocity.points"),
        (vec!["--backend", "auto", "--rows", "6x10"], "--backend auto"),
        (vec!["--iterations", "0", "--rows", "6x10"], "--iterations"),
        (vec!["--warmup-seconds", "-1", "--rows", "6x10"], "--warmup-seconds"),
        (vec!["--warmup-seconds", "NaN", "--rows", "6x10"], "--warmup-seconds"),
    ] {
        let mut a = args.clone();
        a.extend(["--out", d]);
        let o = bench(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} wrote {}", dir.display());
    }
    // bench.csv taken by a directory: refused before the rows run, not after.
    std::fs::create_dir_all(dir.join("bench.csv")).unwrap();
    let o = bench(&["--backend", "cpu", "--rows", "6x10", "--out", d]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bench.csv is a directory"), "{err}");
}

/// Split one CSV line, keeping quoted fields (device names hold commas) whole.
fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}
