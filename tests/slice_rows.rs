//! The slice sweep with several invocations (threads) per velocity, each sweeping a row of a
//! block of rows a step behind its neighbour (`KNUDSEN_SLICE_ROWS`, src/backend/slice_rows.rs;
//! shaders/sweep_slice.wgsl and shaders/cuda/sweep_slice.cu): every cell's arithmetic is the
//! one-per-velocity sweep's, so the fields must be the same bits at any number of rows, on
//! cases with a body, partner and free-stream faces, a stretched axis, second order and f64.
//! On wgpu (lavapipe in CI, whose rule picks one row: the switch forces more) and on CUDA
//! where a device answers. Exact equality is the tolerance: a row that reads its neighbour's
//! value before it is written, or the wrong cell's, changes bits, not only round-off. (A
//! missing barrier may go unseen where a velocity's invocations run in lockstep, as on
//! lavapipe and in a converged warp: the barriers' presence is checked on the WGSL text,
//! wgpu/shaders.rs's tests.) Each run's log must name the rows it was given, so a case that
//! fell back to one row cannot pass as a comparison of two.

mod common;
use common::*;
use knudsen::output::CellField;
use std::path::Path;

const FIELDS: [&str; 5] = ["density", "velocity", "temperature", "stress", "heat_flux"];

/// Three sweeps of `case` on `backend` with the slice kernels and `rows` rows in flight;
/// the fields' bits.
fn fields(case: &Path, backend: &str, precision: &str, scheme: &str, rows: u32, out: &Path) -> Vec<Vec<u64>> {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", case.to_str().unwrap(), "--backend", backend, "--precision", precision])
        .args(["--scheme", scheme, "--max-iterations", "3", "--tolerance", "1e-30", "--coarse-grids", "0"])
        .arg("--out")
        .arg(out)
        .env("KNUDSEN_SWEEP", "slices")
        .env("KNUDSEN_SLICE_ROWS", rows.to_string())
        .env("RUST_LOG", "knudsen=info")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{backend} {precision} {scheme} rows {rows}: {log}");
    let named = format!(", {rows} {} per velocity", if backend == "cuda" { "thread(s)" } else { "invocation(s)" });
    assert!(log.contains(&named), "{backend} {precision} {scheme}: the log does not say `{named}`:\n{log}");
    FIELDS.iter().map(|f| CellField::read(out, f).unwrap().data.iter().map(|x| x.to_bits()).collect()).collect()
}

fn same_bits_at_every_row_count(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut body = pinned(&body_case_json());
    // An odd cell count across y: the last block of rows is short.
    body["grid"]["y"]["cells"] = serde_json::json!(7);
    let open = pinned(&open_box_json([5, 6, 3]));
    for (name, case, precision, scheme) in [
        ("body", &body, "f32", "second_order"),
        ("body", &body, "f64", "first_order"),
        ("open box", &open, "f64", "second_order"),
        ("open box", &open, "f32", "first_order"),
    ] {
        let path = dir.path().join("case.json");
        std::fs::write(&path, case.to_string()).unwrap();
        let one = fields(&path, backend, precision, scheme, 1, &dir.path().join("one"));
        for rows in [4, 8] {
            let many = fields(&path, backend, precision, scheme, rows, &dir.path().join(format!("r{rows}")));
            for (f, (a, b)) in FIELDS.iter().zip(many.iter().zip(&one)) {
                assert!(a == b, "{backend}, {name}, {precision}, {scheme}: {f} differs with {rows} rows in flight");
            }
        }
    }
}

#[test]
fn wgpu_slice_sweep_gives_the_same_bits_at_every_row_count() {
    if gpu_adapter().is_some() {
        same_bits_at_every_row_count("wgpu");
    }
}

/// `knudsen check` names the wgpu slice sweep's rows as the backend would take them: the
/// switch's, or the rule's, which is one on any adapter but a discrete GPU (lavapipe in CI).
#[test]
fn check_names_the_wgpu_slice_sweep_s_rows() {
    let Some(adapter) = gpu_adapter() else { return };
    let quick = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/cavity-quick.json");
    let rule_takes_one = adapter.get_info().device_type != wgpu::DeviceType::DiscreteGpu;
    for (rows, want) in [(Some(4), 4), (None, 1)] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"));
        c.args(["check", quick]).env("KNUDSEN_SWEEP", "slices").env_remove("KNUDSEN_SLICE_ROWS");
        if let Some(r) = rows {
            c.env("KNUDSEN_SLICE_ROWS", r.to_string());
        } else if !rule_takes_one {
            continue;
        }
        let o = c.output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
        let line = out.lines().find(|l| l.starts_with("wgpu sweep kernel: ")).unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(&format!(", {want} invocation(s) per velocity")), "{line}");
    }
}

#[test]
fn cuda_slice_sweep_gives_the_same_bits_at_every_row_count() {
    if cuda_here("the CUDA rows test") {
        same_bits_at_every_row_count("cuda");
    }
}
