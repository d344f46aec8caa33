//! `knudsen line --from --to --points`: a field along any segment, trilinear between cell
//! centres, checked against the same weights computed here from the stored centres, and
//! against the axis-parallel form where the segment runs along an axis.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn knudsen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knudsen")).args(args).output().unwrap()
}

/// A 6 x 5 x 4 cavity with 12^3 velocities after 2 sweeps (a field that varies along every
/// axis), on the CPU; x from 0 to `x_max`.
fn result(dir: &Path) -> PathBuf {
    result_to(dir, 1.0)
}

fn result_to(dir: &Path, x_max: f64) -> PathBuf {
    let mut v = cavity_json(5, 12, 4.0, 0.1);
    v["grid"]["x"]["cells"] = serde_json::json!(6);
    v["grid"]["x"]["max"] = serde_json::json!(x_max);
    v["grid"]["z"]["cells"] = serde_json::json!(4);
    v["solver"] = serde_json::json!({"max_iterations": 2});
    let case = dir.join("case.json");
    std::fs::write(&case, pinned(&v).to_string()).unwrap();
    let out = dir.join("out");
    let o =
        knudsen(&["run", case.to_str().unwrap(), "--backend", "cpu", "--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn rows(csv: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(csv).unwrap();
    text.lines().skip(2).map(|l| l.split(',').map(|v| v.parse().unwrap()).collect()).collect()
}

/// `knudsen line OUT --from FROM --to TO --points N --out OUT/NAME`, which must succeed: the
/// CSV's path.
fn segment(out: &Path, from: &str, to: &str, points: usize, name: &str) -> PathBuf {
    let csv = out.join(name);
    let n = points.to_string();
    let args =
        ["line", out.to_str().unwrap(), "--from", from, "--to", to, "--points", &n, "--out", csv.to_str().unwrap()];
    let o = knudsen(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    csv
}

/// Weight of the upper neighbour between centres, clamped to the outermost centres.
fn lerp_at(centres: &[f64], p: f64) -> (usize, usize, f64) {
    let n = centres.len();
    if p <= centres[0] {
        return (0, 0, 0.0);
    }
    if p >= centres[n - 1] {
        return (n - 1, n - 1, 0.0);
    }
    let i1 = (1..n).find(|&i| centres[i] > p).unwrap();
    (i1 - 1, i1, (p - centres[i1 - 1]) / (centres[i1] - centres[i1 - 1]))
}

#[test]
fn a_segment_is_trilinear_between_centres_and_matches_the_axis_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = result(dir.path());
    let f = hdf5::File::open(out.join("fields.h5")).unwrap();
    let u: Vec<f64> = f.dataset("velocity").unwrap().read_raw().unwrap();
    let c: [Vec<f64>; 3] = ["x", "y", "z"].map(|a| f.dataset(a).unwrap().read_raw().unwrap());
    let (nx, ny) = (c[0].len(), c[1].len());

    // An oblique segment from a corner of the box, whose points fall between centres on all
    // three axes and outside the outermost centres at its ends.
    let diag = segment(&out, "1,1,0", "0,0.2,1", 9, "diag.csv");
    let got = rows(&diag);
    assert_eq!(got.len(), 9, "one row per point, both ends included");
    let (from, to) = ([1.0, 1.0, 0.0], [0.0, 0.2, 1.0]);
    let length = (1.0f64 + 0.64 + 1.0).sqrt();
    for (n, row) in got.iter().enumerate() {
        let t = n as f64 / 8.0;
        let p: [f64; 3] = std::array::from_fn(|d| from[d] + t * (to[d] - from[d]));
        // The arc length and the point: a few roundings of t (printed shortest-exact).
        assert!((row[0] - t * length).abs() < 1e-15, "arc length of row {n}");
        for d in 0..3 {
            assert!((row[1 + d] - p[d]).abs() < 1e-15, "coordinate {d} of row {n}");
        }
        let w = [0, 1, 2].map(|d| lerp_at(&c[d], p[d]));
        for comp in 0..3 {
            let mut terms = Vec::new();
            for corner in 0..8usize {
                let pick = |d: usize| if corner >> d & 1 == 1 { (w[d].1, w[d].2) } else { (w[d].0, 1.0 - w[d].2) };
                let [(i, a), (j, b), (k, g)] = [pick(0), pick(1), pick(2)];
                terms.push(a * b * g * u[((k * ny + j) * nx + i) * 3 + comp]);
            }
            let want: f64 = terms.iter().sum();
            // The same weights from the same centres, summed in another order: a few
            // roundings of the terms apart.
            let tol = 1e-14 * terms.iter().map(|t| t.abs()).sum::<f64>();
            assert!((row[4 + comp] - want).abs() <= tol, "row {n}, component {comp}: {} against {want}", row[4 + comp]);
        }
    }
    // The field varies along the segment (a constant would pass any weights).
    assert!((got[2][4] - got[6][4]).abs() > 1e-6);

    // Along y through x = 0.45, z = 0.3, from the first centre to the last: the points are
    // the centres, so the segment gives the axis form's rows.
    let (y0, y1) = (c[1][0], c[1][ny - 1]);
    let seg = segment(&out, &format!("0.45,{y0},0.3"), &format!("0.45,{y1},0.3"), ny, "seg.csv");
    let axis = out.join("axis.csv");
    let (o, a) = (out.to_str().unwrap(), axis.to_str().unwrap());
    let o = knudsen(&["line", o, "--along", "y", "--through", "0.45,0.3", "--out", a]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (s, l) in rows(&seg).iter().zip(rows(&axis)) {
        assert!((s[2] - l[0]).abs() < 1e-15, "y {} against {}", s[2], l[0]);
        for comp in 0..3 {
            let (x, y) = (s[4 + comp], l[1 + comp]);
            assert!((x - y).abs() <= 1e-14 * x.abs().max(y.abs()), "component {comp} at y = {}: {x} against {y}", l[0]);
        }
    }
}

#[test]
fn a_segment_outside_the_grid_or_malformed_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = result(dir.path());
    let csv = out.join("bad.csv");
    for (args, says) in [
        (["--from", "1,1,2", "--to", "0,0,1", "--points", "5"], "outside the grid's faces"),
        (["--from", "1,1", "--to", "0,0,1", "--points", "5"], "takes three coordinates"),
        (["--from", "1,1,1", "--to", "0,0,nan", "--points", "5"], "finite"),
        (["--from", "1,1,1", "--to", "0,0,1", "--points", "1"], "at least 2"),
        (["--from", "1,1,1", "--to", "0,0,1", "--points", "1000001"], "at most 1000000"),
    ] {
        let mut all = vec!["line", out.to_str().unwrap()];
        all.extend(args);
        all.extend(["--out", csv.to_str().unwrap()]);
        let o = knudsen(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!csv.exists(), "{args:?} left a file");
    }
    // One of the two forms is needed, and they are exclusive.
    let o = knudsen(&["line", out.to_str().unwrap(), "--out", csv.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--along") && err.contains("--from"), "{err}");
    let (o, c) = (out.to_str().unwrap(), csv.to_str().unwrap());
    let o =
        knudsen(&["line", o, "--along", "y", "--through", "0.5,0.5", "--from", "0,0,0", "--to", "1,1,1", "--out", c]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!csv.exists());
}

#[test]
fn a_segment_ending_on_a_face_keeps_its_last_point_on_it() {
    // From x = 0.3 to the face x = 0.9: 0.3 + (0.9 - 0.3) rounds to 0.9000000000000001, past
    // the face (checked to fail with the points formed so); they are formed so that the
    // ends are exact.
    let dir = tempfile::tempdir().unwrap();
    let out = result_to(dir.path(), 0.9);
    let csv = segment(&out, "0.3,0.5,0.5", "0.9,0.5,0.5", 7, "edge.csv");
    let got = rows(&csv);
    assert_eq!((got[0][1], got[6][1]), (0.3, 0.9), "the ends are --from and --to exactly");
    assert!(got.iter().all(|r| r[1] >= 0.3 && r[1] <= 0.9 && r[4].is_finite()));
}
