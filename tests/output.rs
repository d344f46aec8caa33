//! End to end through the CLI: the files of docs/output.md, readable by HDF5 and by VTK's
//! XDMF reader (the one ParaView uses).

mod common;
use common::*;
use std::process::Command;

fn run_cli(cfg: &serde_json::Value, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("case.json");
    std::fs::write(&path, pinned(cfg).to_string()).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", path.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// `knudsen run CASE --restart DIR --out DIR`: continue the run in `dir` in place.
fn continue_cli(case: &std::path::Path, dir: &std::path::Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--restart"])
        .args([dir.to_str().unwrap(), "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `cfg` run for `total` iterations in `dir/full`, and for `first` in `dir/part`, continued
/// there for the rest: the two result folders, which must agree bit for bit on the CPU.
fn full_and_continued(
    cfg: &serde_json::Value,
    dir: &std::path::Path,
    total: usize,
    first: usize,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut v = cfg.clone();
    for d in ["full", "part"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    v["solver"]["max_iterations"] = serde_json::json!(total);
    let full = run_cli(&v, &dir.join("full"));
    v["solver"]["max_iterations"] = serde_json::json!(first);
    let part = run_cli(&v, &dir.join("part"));
    // A continued run's limit counts its new iterations.
    v["solver"]["max_iterations"] = serde_json::json!(total - first);
    let path = dir.join("part").join("case.json");
    std::fs::write(&path, pinned(&v).to_string()).unwrap();
    continue_cli(&path, &part);
    (full, part)
}

/// A cavity of 6 x 5 x 4 cells and 12^3 velocities with `solver`.
fn small_cavity(solver: serde_json::Value) -> serde_json::Value {
    let mut v = cavity_json(5, 12, 4.0, 0.1);
    v["grid"]["x"]["cells"] = serde_json::json!(6);
    v["grid"]["z"]["cells"] = serde_json::json!(4);
    v["solver"] = solver;
    v
}

#[test]
fn run_writes_every_result_file() {
    let dir = tempfile::tempdir().unwrap();
    let v = small_cavity(serde_json::json!({"tolerance": 1e-6}));
    let out = run_cli(&v, dir.path());

    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["fields.h5", "fields.xmf", "residuals.csv", "summary.json"], "stray or missing files");

    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["converged"], true);
    assert_eq!(s["backend"], "cpu");
    assert_eq!(s["cells"], serde_json::json!([6, 5, 4]));
    assert_eq!(s["phase_space_points"], 6 * 5 * 4 * 12 * 12 * 12);
    let iters = s["iterations"].as_u64().unwrap();
    assert!(s["final_residual"].as_f64().unwrap() < 1e-6);
    // Two f64 slices (the level swept and the one before) per velocity of the largest batch:
    // a whole octant here (216 velocities).
    assert_eq!(s["distribution_bytes"], 2 * 216 * 6 * 5 * 8);

    let csv = std::fs::read_to_string(out.join("residuals.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "iteration,density,momentum_x,momentum_y,momentum_z,energy,residual,seconds,elapsed_s");
    assert_eq!(lines.len() as u64, iters + 1);

    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    assert_eq!(f.dataset("density").unwrap().shape(), [4, 5, 6]);
    assert_eq!(f.dataset("velocity").unwrap().shape(), [4, 5, 6, 3]);
    assert_eq!(f.dataset("stress").unwrap().shape(), [4, 5, 6, 6]);
    assert_eq!(f.dataset("x_faces").unwrap().shape(), [7]);
    let rho: Vec<f64> = f.dataset("density").unwrap().read_raw().unwrap();
    let t: Vec<f64> = f.dataset("temperature").unwrap().read_raw().unwrap();
    let p: Vec<f64> = f.dataset("pressure").unwrap().read_raw().unwrap();
    let stress: Vec<f64> = f.dataset("stress").unwrap().read_raw().unwrap();
    for c in 0..rho.len() {
        // p = rho T / 2 = tr(P) / 3, the two definitions of docs/model.md: to f64 round-off
        // (a few ulps of values of order 1) after source iteration's update.
        assert!((p[c] - rho[c] * t[c] / 2.0).abs() < 1e-14);
        let tr = stress[6 * c] + stress[6 * c + 1] + stress[6 * c + 2];
        assert!((p[c] - tr / 3.0).abs() < 1e-13);
    }
    let cfg_attr: hdf5::types::VarLenUnicode = f.attr("config").unwrap().read_scalar().unwrap();
    let back = knudsen::config::Config::from_json(cfg_attr.as_str()).expect("stored config re-reads");
    assert_eq!(back.grid.x.cells, Some(6));

    // ParaView's reader: VTK's vtkXdmfReader, from the Python vtk package.
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/read_xdmf.py");
    let o = Command::new(test_python())
        .arg(&script)
        .arg(&out)
        .output()
        .expect("python3 is needed (tests/deps.sh installs it)");
    assert!(
        o.status.success(),
        "VTK could not read fields.xmf (run tests/deps.sh for vtk and h5py):\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn body_surface_reaches_vtk_and_a_run_continues_exactly() {
    // A cube in a free stream, 2 iterations then 2 more from the first run's results: the
    // surface grid and the solid mask must reach VTK, and the continued run must equal a
    // 4-iteration run (CPU, f64: bit for bit).
    let dir = tempfile::tempdir().unwrap();
    let fs = serde_json::json!({"type": "free_stream"});
    let v = serde_json::json!({
        "gas": {"kn": 1.0},
        "grid": {"x": {"min": -1.0, "max": 2.0, "cells": 6}, "y": {"min": -1.0, "max": 1.0, "cells": 4},
                 "z": {"faces": [-1.0, -0.5, 0.0, 0.5, 1.0]}},
        "velocity": {"points": 10, "max": 4.0},
        "free_stream": {"mach": 1.0},
        "bodies": [{"name": "cube", "min": [-0.5, -0.5, -0.5], "max": [0.5, 0.5, 0.5], "temperature": 1.2}],
        "boundaries": {"x_min": fs, "x_max": fs, "y_min": fs, "y_max": fs, "z_min": fs, "z_max": fs},
        "solver": {"max_iterations": 4, "tolerance": 1e-12}
    });
    let (full, part) = full_and_continued(&v, dir.path(), 4, 2);
    let read = |d: &std::path::Path, name: &str| -> Vec<f64> {
        hdf5::File::open(d.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
    };
    for name in ["density", "velocity", "temperature", "heat_flux", "surface/pressure", "surface/heat_flux"] {
        let (a, b) = (read(&part, name), read(&full, name));
        assert!(a.iter().zip(&b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan())), "{name} differs");
    }
    // Each quadrilateral winds counter-clockwise seen from the gas: (p1 - p0) x (p3 - p0)
    // along its outward normal, on the faces down each axis as on those up it.
    let read_u64 = |d: &std::path::Path, name: &str| -> Vec<u64> {
        hdf5::File::open(d.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
    };
    let (points, conn, normal) =
        (read(&full, "surface/points"), read_u64(&full, "surface/connectivity"), read(&full, "surface/normal"));
    for (f, q) in conn.chunks(4).enumerate() {
        let p = |c: usize| &points[3 * q[c] as usize..3 * q[c] as usize + 3];
        let (a, b) = ([0, 1, 2].map(|d| p(1)[d] - p(0)[d]), [0, 1, 2].map(|d| p(3)[d] - p(0)[d]));
        let cross = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
        let along: f64 = (0..3).map(|d| cross[d] * normal[3 * f + d]).sum();
        assert!(along > 0.0, "face {f} winds against its normal {:?}", &normal[3 * f..3 * f + 3]);
    }
    let csv = std::fs::read_to_string(part.join("residuals.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "the continued history has 4 iterations:\n{csv}");
    assert!(csv.lines().next().unwrap().ends_with(",drag_coefficient"));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(full.join("summary.json")).unwrap()).unwrap();
    assert!(s["bodies"][0]["drag_coefficient"].as_f64().unwrap() > 0.5);
    assert_eq!(s["bodies"][0]["name"], "cube");

    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/read_xdmf.py");
    let o = Command::new(test_python()).arg(&script).arg(&full).output().expect("python3");
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("surface: 24 faces"),
        "VTK could not read the surface:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_loads_written_are_the_last_sweeps_whatever_update_follows_it() {
    // Loads and mass fluxes are measured on the last sweep, with the wall densities it used.
    // A synthetic correction after it moves the incident fluxes to predict the next wall
    // densities (walls::predict_incident); that prediction once reached the written mass
    // fluxes. Three GSIS iterations against two continued by one with source iteration's
    // update: the same three sweeps, so the same loads, bit for bit (CPU, f64).
    let dir = tempfile::tempdir().unwrap();
    let fs = serde_json::json!({"type": "free_stream"});
    let mut v = serde_json::json!({
        "gas": {"kn": 0.1},
        "grid": {"x": {"min": -1.0, "max": 2.0, "cells": 6}, "y": {"min": -1.0, "max": 1.0, "cells": 4},
                 "z": {"min": -1.0, "max": 1.0, "cells": 4}},
        "velocity": {"points": 10, "max": 4.0},
        "free_stream": {"mach": 1.0},
        "bodies": [{"name": "cube", "min": [-0.5, -0.5, -0.5], "max": [0.5, 0.5, 0.5], "temperature": 1.2}],
        "boundaries": {"x_min": fs, "x_max": fs, "y_min": fs, "y_max": fs, "z_min": fs, "z_max": fs},
        "solver": {"max_iterations": 3, "tolerance": 1e-12, "acceleration": "gsis", "coarse_grids": 0}
    });
    std::fs::create_dir_all(dir.path().join("full")).unwrap();
    std::fs::create_dir_all(dir.path().join("part")).unwrap();
    let full = run_cli(&v, &dir.path().join("full"));
    v["solver"]["max_iterations"] = serde_json::json!(2);
    let part = run_cli(&v, &dir.path().join("part"));
    v["solver"]["max_iterations"] = serde_json::json!(1);
    v["solver"]["acceleration"] = serde_json::json!("none");
    let path = dir.path().join("part").join("case.json");
    std::fs::write(&path, pinned(&v).to_string()).unwrap();
    continue_cli(&path, &part);
    let summary = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    let (a, b) = (summary(&full), summary(&part));
    assert_eq!(b["iterations"].as_u64(), Some(3));
    for key in ["net_mass_flux", "incident_mass_flux", "drag_coefficient", "heat_transfer_coefficient"] {
        let (x, y) = (&a["bodies"][0][key], &b["bodies"][0][key]);
        assert!(x.is_f64() && x == y, "{key}: {x} after a correction, {y} after source iteration's update");
    }
    let read = |d: &std::path::Path, name: &str| -> Vec<f64> {
        hdf5::File::open(d.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
    };
    for name in ["surface/mass_flux", "surface/pressure", "surface/heat_flux"] {
        assert!(read(&full, name) == read(&part, name), "{name} differs");
    }
    // The fields do differ: the two updates after the third sweep are not the same.
    assert!(read(&full, "density") != read(&part, "density"));
}

#[test]
fn a_directory_under_a_results_name_is_refused_before_the_solve() {
    // fields.h5 (or summary.json) taken by a directory would fail the rename at the end of
    // the run and lose it: refused up front, exit 2, no solve (no residuals.csv written).
    for name in ["fields.h5", "summary.json"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.json");
        std::fs::write(&path, pinned(&small_cavity(serde_json::json!({"max_iterations": 2}))).to_string()).unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join(name)).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", path.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(name) && err.contains("is a directory"), "{name}: {err}");
        assert!(!out.join("residuals.csv").exists(), "{name}: the run went ahead");
    }
}

#[test]
fn compare_takes_refined_grids_and_refuses_grids_that_do_not_coincide() {
    // The small cavity against itself on twice the cells (the faces of one every second face
    // of the other): compared. On [0, 2] along x with the same cell counts, or one finer along
    // x and the other along y: refused, exit 2.
    let run = |v: &serde_json::Value| {
        let dir = tempfile::tempdir().unwrap();
        let out = run_cli(v, dir.path());
        (dir, out)
    };
    let base = small_cavity(serde_json::json!({"max_iterations": 2}));
    let mut fine = base.clone();
    for (axis, n) in [("x", 12), ("y", 10), ("z", 8)] {
        fine["grid"][axis]["cells"] = serde_json::json!(n);
    }
    let mut wide = base.clone();
    wide["grid"]["x"]["max"] = serde_json::json!(2.0);
    // Finer along y only: against `fine_x` (finer along x only) neither refines the other.
    let (mut fine_x, mut fine_y) = (base.clone(), base.clone());
    fine_x["grid"]["x"]["cells"] = serde_json::json!(12);
    fine_y["grid"]["y"]["cells"] = serde_json::json!(10);
    let ((d0, a), (_d1, b), (_d2, c)) = (run(&base), run(&fine), run(&wide));
    let ((_d3, fx), (_d4, fy)) = (run(&fine_x), run(&fine_y));
    let compare = |p: &std::path::Path, q: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_knudsen")).args(["compare"]).arg(p).arg(q).output().unwrap()
    };
    let o = compare(&a, &b);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = compare(&a, &c);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("the grids differ along x"), "{err}");
    let o = compare(&fx, &fy);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("finer along x and the second along y"), "{err}");
    // The same grid with a body in one result only: its solid cells are gas in the other,
    // which no difference measures (it once printed NaN and exited 0).
    let mut body = base.clone();
    body["bodies"] =
        serde_json::json!([{"min": [1.0 / 3.0, 0.4, 0.25], "max": [2.0 / 3.0, 0.6, 0.5], "temperature": 1.0}]);
    let (_d5, with_body) = run(&body);
    let o = compare(&with_body, &a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bodies differ"), "{err}");
    // A path that holds no result is the request's fault too: exit 2, naming the file.
    let (missing, text) = (d0.path().join("none.h5"), d0.path().join("note.h5"));
    std::fs::write(&text, b"not hdf5").unwrap();
    for bad in [&missing, &text] {
        let o = compare(bad, &b);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&*bad.to_string_lossy()), "{err}");
    }
}

#[test]
fn failed_write_leaves_nothing_under_the_final_name() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("result.bin");
    let r = knudsen::output::write_atomic(&target, |tmp| {
        std::fs::write(tmp, b"partial")?;
        anyhow::bail!("disk full")
    });
    assert!(r.is_err());
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "temporary file left behind");
    knudsen::output::write_atomic_bytes(&target, b"whole").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"whole");
}

#[test]
fn a_line_interpolates_between_cell_rows() {
    // `knudsen line`: velocity along y through (x, z) = (0.45, 0.3), between the third and
    // fourth columns and the first and second layers, against the bilinear weights of the
    // four cells computed here from the stored centres; and a point outside refused.
    let dir = tempfile::tempdir().unwrap();
    let v = small_cavity(serde_json::json!({"max_iterations": 3}));
    let out = run_cli(&v, dir.path());
    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    let u: Vec<f64> = f.dataset("velocity").unwrap().read_raw().unwrap();
    let (x, z): (Vec<f64>, Vec<f64>) =
        (f.dataset("x").unwrap().read_raw().unwrap(), f.dataset("z").unwrap().read_raw().unwrap());
    let (a, b) = ((0.45 - x[2]) / (x[3] - x[2]), (0.3 - z[0]) / (z[1] - z[0]));
    assert!(a > 0.1 && a < 0.9 && b > 0.1 && b < 0.9, "{a} {b}");
    let line = out.join("line.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["line", out.to_str().unwrap(), "--along", "y", "--through", "0.45,0.3", "--out"])
        .arg(&line)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&line)
        .unwrap()
        .lines()
        .skip(2)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 5, "one row per cell along y");
    for (j, row) in rows.iter().enumerate() {
        assert!((row[0] - (j as f64 + 0.5) / 5.0).abs() < 1e-15, "y of row {j}: {}", row[0]);
        for c in 0..3 {
            let cell = |i: usize, k: usize| u[((k * 5 + j) * 6 + i) * 3 + c];
            let terms = [
                (1.0 - a) * (1.0 - b) * cell(2, 0),
                a * (1.0 - b) * cell(3, 0),
                (1.0 - a) * b * cell(2, 1),
                a * b * cell(3, 1),
            ];
            let want: f64 = terms.iter().sum();
            // The same weights from the same centres; the CSV prints the shortest form that
            // reads back as the same f64: at most a few roundings of the terms apart.
            let tol = 1e-15 * terms.iter().map(|t| t.abs()).sum::<f64>();
            assert!((row[1 + c] - want).abs() <= tol, "row {j}, component {c}: {} against {want}", row[1 + c]);
        }
    }
    // The layers differ (no symmetry makes a wrong pair of cells look right).
    assert!((u[(5 * 6 + 2) * 3] - u[2 * 3]).abs() > 1e-6);
    let outside = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["line", out.to_str().unwrap(), "--along", "y", "--through", "1.5,0.5", "--out"])
        .arg(out.join("outside.csv"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&outside.stderr).contains("outside the grid's faces"));
    assert_eq!(outside.status.code(), Some(2), "a bad request exits 2, as bad input does");
    // A dataset that is not a cell field (the centres) is a bad request too, not a panic.
    let coords = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["line", out.to_str().unwrap(), "--field", "x", "--along", "y", "--through", "0.45,0.3", "--out"])
        .arg(out.join("coords.csv"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&coords.stderr).contains("is not a cell field"), "{coords:?}");
    assert_eq!(coords.status.code(), Some(2));
    assert!(!out.join("outside.csv").exists());
    // What is not there is said in words, and a mistyped field is answered with those there.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let absent = dir.path().join("absent");
    for (result, field, said) in [
        (out.as_path(), "temprature", "no field `temprature` (the cell fields: density, heat_flux, pressure"),
        (empty.as_path(), "temperature", "holds no fields.h5, so no result"),
        (absent.as_path(), "temperature", "absent: no such file or directory"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .arg("line")
            .arg(result)
            .args(["--field", field, "--along", "y", "--through", "0.45,0.3", "--out"])
            .arg(out.join("bad.csv"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(said) && !err.contains("H5Fopen"), "{err}");
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen")).arg("compare").arg(result).arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if field == "temperature" {
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(err.contains(said), "{err}");
        }
    }
    assert!(!out.join("bad.csv").exists());
}

#[test]
fn a_slice_holds_one_plane_and_refuses_a_point_outside_the_grid() {
    // `knudsen slice`: the temperature on the plane x = 0.45 is the stored column i = 2 (centre
    // 5/12, the nearest); a negative coordinate is read as a value and, like NaN and a point
    // past the faces, refused with exit 2 and nothing written.
    let dir = tempfile::tempdir().unwrap();
    let v = small_cavity(serde_json::json!({"max_iterations": 2}));
    let out = run_cli(&v, dir.path());
    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    let t: Vec<f64> = f.dataset("temperature").unwrap().read_raw().unwrap();
    let slice = |at: &str, name: &str| {
        Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["slice", out.to_str().unwrap(), "--axis", "x", "--at", at, "--out"])
            .arg(out.join(name))
            .output()
            .unwrap()
    };
    let o = slice("0.45", "plane.csv");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("plane.csv")).unwrap();
    assert!(text.starts_with("# temperature on the plane x = "), "{text}");
    let rows: Vec<Vec<f64>> =
        text.lines().skip(2).map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), 5 * 4, "one row per cell of the plane (y, then z)");
    for (r, row) in rows.iter().enumerate() {
        let (j, k) = (r % 5, r / 5);
        assert_eq!(row[2], t[(k * 5 + j) * 6 + 2], "row {r}");
    }
    for (at, name) in [("-0.5", "neg.csv"), ("1.5", "far.csv"), ("nan", "nan.csv")] {
        let o = slice(at, name);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--at {at}: {err}");
        assert!(err.contains("outside the grid's faces"), "--at {at}: {err}");
        assert!(!out.join(name).exists());
    }
    // An --out that names a directory, or a file in a folder that does not exist: exit 2,
    // naming the --out given (not a temporary file).
    std::fs::create_dir(out.join("taken.csv")).unwrap();
    for (name, says) in [("taken.csv", "is a directory"), ("none/plane.csv", "does not exist")] {
        let o = slice("0.45", name);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("--out {}", out.join(name).display())) && err.contains(says), "{err}");
        let base = std::path::Path::new(name).file_name().unwrap().to_string_lossy().into_owned();
        assert!(!err.contains(&format!(".{base}.")), "a temporary name: {err}");
    }
}

#[test]
fn a_line_beside_a_body_keeps_its_values_and_one_through_it_is_nan() {
    // The quick cube after one sweep: the unit cube at the origin, solid cells NaN.
    let dir = tempfile::tempdir().unwrap();
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/cube-quick.json");
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--max-iterations", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    let y: Vec<f64> = f.dataset("y").unwrap().read_raw().unwrap();
    let line = |through: String| -> Vec<(f64, f64)> {
        let path = out.join("line.csv");
        let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["line", out.to_str().unwrap(), "--field", "density", "--along", "x", "--through", &through])
            .args(["--out", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&path).unwrap();
        text.lines()
            .skip(2)
            .map(|l| l.split_once(',').unwrap())
            .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
            .collect()
    };
    // Through the cube's middle: NaN inside it, numbers outside.
    for (x, rho) in line("0,0".into()) {
        assert_eq!(rho.is_nan(), x.abs() < 0.5, "x = {x}: {rho}");
    }
    // On the centres of the gas row just below the cube, whose upper neighbour is solid
    // there: that neighbour's weight is zero, and every value is a number.
    let below = y.iter().copied().filter(|&c| c < -0.5).fold(f64::MIN, f64::max);
    let rows = line(format!("{below},0"));
    assert!(rows.iter().all(|(_, rho)| rho.is_finite()), "{rows:?}");
}

#[test]
fn a_failed_write_leaves_no_earlier_summary_beside_the_new_files() {
    // An earlier run's summary.json, and fields.xmf taken by a directory, so that writing
    // fails after fields.h5 has been replaced: the old summary must not vouch for it.
    // (`knudsen run` refuses that directory before its solve, so the writer is called
    // directly: the order matters for any write that fails midway, a full disk say.)
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("fields.xmf").join("blocker")).unwrap();
    std::fs::write(out.join("summary.json"), b"{\"earlier\": true}").unwrap();
    let mut v = cavity_json(4, 12, 4.0, 0.1);
    v["solver"] = serde_json::json!({"max_iterations": 2});
    let cfg = config(&v);
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let (b, _) = knudsen::backend::create(knudsen::backend::BackendChoice::Cpu, p.clone(), None).unwrap();
    let r = knudsen::solver::Solver::new(&p, b).run(|_| {}).unwrap();
    let (b, _) = knudsen::backend::create(knudsen::backend::BackendChoice::Cpu, p.clone(), None).unwrap();
    let summary =
        knudsen::output::Summary::new(knudsen::output::SummaryInput { problem: &p, backend: &*b, result: &r });
    let e = knudsen::output::write_all(&out, &p, &r, &summary).expect_err("the write into a directory should fail");
    assert!(format!("{e:#}").contains("fields.xmf"), "{e:#}");
    assert!(out.join("fields.h5").exists(), "the fields are written before the failing file: {e:#}");
    assert!(!out.join("summary.json").exists(), "the earlier summary.json is still there");
}

/// The Python that tests/deps.sh prepared (target/test-venv), else KNUDSEN_PYTHON, else python3.
fn test_python() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("KNUDSEN_PYTHON") {
        return p.into();
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python3");
    if venv.exists() {
        venv
    } else {
        "python3".into()
    }
}

#[test]
fn a_damped_run_continues_exactly() {
    // Parallel plates near the free-molecular limit: the wall-density damping acts from the
    // third iteration on, on the second reversal in a row (src/damping.rs), so a restart after
    // iteration 2 must carry its state through fields.h5 (`restart/*_density_step` and
    // `restart/*_density_reversed`) to match an uninterrupted run.
    let dir = tempfile::tempdir().unwrap();
    let far = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 1});
    let periodic = serde_json::json!({"type": "periodic"});
    let wall = |t: f64| serde_json::json!({"type": "diffuse_wall", "temperature": t});
    let mut v = serde_json::json!({
        "gas": {"delta": 0.001},
        "grid": {"x": far, "y": {"min": 0.0, "max": 1.0, "cells": 6}, "z": far},
        "velocity": {"points": 10},
        "boundaries": {"x_min": periodic, "x_max": periodic, "y_min": wall(0.9), "y_max": wall(1.1),
                       "z_min": periodic, "z_max": periodic},
        "solver": {"max_iterations": 5, "tolerance": 1e-14}
    });
    let (full, part) = full_and_continued(&v, dir.path(), 5, 2);
    std::fs::create_dir_all(dir.path().join("old")).unwrap();
    v["solver"]["max_iterations"] = serde_json::json!(2);
    let old = run_cli(&v, &dir.path().join("old"));
    v["solver"]["max_iterations"] = serde_json::json!(3);
    let path = dir.path().join("old").join("case.json");
    std::fs::write(&path, pinned(&v).to_string()).unwrap();
    // A file from before the reversal flags (steps only) still continues; the walls' second
    // reversal in a row is then taken as a first, so the continuation departs from `full`.
    {
        let f = hdf5::File::open_rw(old.join("fields.h5")).unwrap();
        f.unlink("restart/face_density_reversed").unwrap();
        f.unlink("restart/wall_density_reversed").unwrap();
    }
    continue_cli(&path, &old);
    let read = |d: &std::path::Path, name: &str| -> Vec<f64> {
        hdf5::File::open(d.join("fields.h5")).unwrap().dataset(name).unwrap().read_raw().unwrap()
    };
    for name in ["density", "temperature", "heat_flux", "restart/face_density", "restart/face_density_step"] {
        assert_eq!(read(&part, name), read(&full, name), "{name} differs");
    }
    let flags = |d: &std::path::Path| -> Vec<u8> {
        hdf5::File::open(d.join("fields.h5"))
            .unwrap()
            .dataset("restart/face_density_reversed")
            .unwrap()
            .read_raw()
            .unwrap()
    };
    assert_eq!(flags(&part), flags(&full), "restart/face_density_reversed differs");
    // The steps were not all zero and the walls kept reversing: the damping did act.
    // (Dropping the steps on reading makes the continued density differ from the
    // uninterrupted one: checked by hand; dropping the flags does, as `old` shows.)
    assert!(read(&full, "restart/face_density_step").iter().any(|&s| s != 0.0));
    assert!(flags(&full).iter().any(|&r| r != 0));
    assert_ne!(read(&old, "restart/face_density"), read(&full, "restart/face_density"));
}

#[test]
fn a_run_with_a_body_continues_exactly() {
    // The body walls' damping state (`restart/wall_density_step`, `_reversed`) travels through
    // fields.h5 like the box faces': a restart after iteration 2 matches an uninterrupted run.
    // (`body_surface_reaches_vtk_and_a_run_continues_exactly` checks the fields and surface of
    // another body case, where no wall reverses twice by then; on this one the walls' state
    // decides the continuation.)
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("../configs/cube-quick.json")).expect("cube-quick parses");
    v["velocity"]["points"] = serde_json::json!(10);
    v["solver"] = serde_json::json!({"tolerance": 1e-14});
    let (full, part) = full_and_continued(&v, dir.path(), 4, 2);
    let file = |d: &std::path::Path| hdf5::File::open(d.join("fields.h5")).unwrap();
    for name in ["density", "heat_flux", "restart/wall_density", "restart/wall_density_step"] {
        // Bits, so that the solid cells' NaN fields compare equal.
        let read = |d: &std::path::Path| -> Vec<u64> {
            file(d).dataset(name).unwrap().read_raw::<f64>().unwrap().into_iter().map(f64::to_bits).collect()
        };
        assert_eq!(read(&part), read(&full), "{name} differs");
    }
    let flags = |d: &std::path::Path| -> Vec<u8> {
        file(d).dataset("restart/wall_density_reversed").unwrap().read_raw().unwrap()
    };
    assert_eq!(flags(&part), flags(&full), "restart/wall_density_reversed differs");
    // The body has wall faces, each with a step taken. (Dropping the wall steps on reading
    // makes `restart/wall_density` differ: checked by hand.)
    let steps: Vec<f64> = file(&full).dataset("restart/wall_density_step").unwrap().read_raw().unwrap();
    assert!(!steps.is_empty() && steps.iter().any(|&s| s != 0.0));
}

#[test]
fn summary_names_the_tolerance_the_stop_used() {
    // The CPU's f32 mode stops at 1e-5 whatever the case asks below it; summary.json said
    // the case's 1e-9 beside `converged: true` at a residual above it.
    let dir = tempfile::tempdir().unwrap();
    let mut v = small_cavity(serde_json::json!({"tolerance": 1e-9, "max_iterations": 200, "precision": "f32"}));
    v["solver"]["coarse_grids"] = serde_json::json!(0);
    let out = run_cli(&v, dir.path());
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["tolerance"].as_f64(), Some(1e-5), "{s}");
    assert!(s["converged"].as_bool().unwrap() && s["final_residual"].as_f64().unwrap() < 1e-5, "{s}");
}
