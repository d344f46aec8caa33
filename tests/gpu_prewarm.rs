//! The case's fused kernels compiled while a coarse level runs on the kept device
//! (`backend::wgpu::prewarm`): the case's backend takes them where they are its own and
//! compiles its own where they are not, and either way sweeps the bits a backend built alone
//! sweeps (lavapipe in CI); and the synthetic solve's kernels, compiled as the first level's
//! device opens (`solver::synthetic::wgpu::precompile`).

mod common;
use common::*;
use knudsen::backend::wgpu::{device, prewarm, WgpuBackend, WgpuOptions};
use knudsen::problem::Problem;
use std::sync::Arc;

/// The Kn 1 cavity on `n`^3 cells and 10^3 velocities, three sweeps.
fn cavity(n: usize) -> Arc<Problem> {
    let mut v = cavity_json(n, 10, 4.0, 0.2);
    v["solver"] = serde_json::json!({"max_iterations": 3, "tolerance": 1e-30});
    Arc::new(Problem::new(&config(&v)))
}

fn backend(p: &Arc<Problem>) -> Box<dyn knudsen::backend::Backend> {
    Box::new(WgpuBackend::new(p.clone(), None, &WgpuOptions { allow_software: true, ..Default::default() }).unwrap())
}

/// The fields after three sweeps of `case` on a backend built while devices are kept, after
/// a coarse level of 4^3 cells on the same device with `prewarmed` compiled meanwhile.
fn after_a_level(case: &Arc<Problem>, prewarmed: &Arc<Problem>) -> Vec<knudsen::model::Macro> {
    device::keep_devices(true);
    let level = backend(&cavity(4));
    let (dev, _, _) = level.wgpu_handles().unwrap();
    prewarm::start(prewarmed, None, &device::kept_adapter().unwrap(), &dev);
    drop(level);
    let fields = run_with(case, backend(case)).fields;
    device::keep_devices(false);
    fields
}

#[test]
fn the_case_sweeps_the_same_bits_with_kernels_compiled_beside_a_coarse_level() {
    if gpu_adapter().is_none() {
        return;
    }
    let case = cavity(6);
    let alone = run_with(&case, backend(&case)).fields;
    let bits = |f: &[knudsen::model::Macro]| {
        f.iter().flat_map(|m| [m.rho, m.t, m.u[0], m.u[1], m.q[2]]).map(f64::to_bits).collect::<Vec<_>>()
    };
    // Its own kernels compiled beside the level, and another case's (5^3 cells: other
    // sizes baked into the source), which the case must not take.
    for prewarmed in [case.clone(), cavity(5)] {
        assert_eq!(bits(&after_a_level(&case, &prewarmed)), bits(&alone), "prewarmed for {:?}", prewarmed.grid.dims());
    }
}

#[test]
fn kernels_are_taken_only_where_their_specs_are_the_case_s() {
    // The same check as above at the level of the specs: equal problems give equal specs,
    // another grid gives others (the sizes are override constants and unrolled loops).
    if gpu_adapter().is_none() {
        return;
    }
    let spec = |p: &Problem| {
        let limits = gpu_adapter().unwrap().limits();
        let plan = knudsen::backend::wgpu::fused::choose(p, 1 << 30, &limits, None, None).unwrap().unwrap();
        let layout = knudsen::backend::gpu_io::table_layout(p).unwrap();
        knudsen::backend::wgpu::fused::kernel_specs(p, &plan, layout.part_at, layout.exit_at)
    };
    assert!(spec(&cavity(6)) == spec(&cavity(6)));
    assert!(spec(&cavity(6)) != spec(&cavity(5)));
}

#[test]
fn knudsen_run_on_wgpu_compiles_the_case_s_kernels_beside_its_coarse_level() {
    if gpu_adapter().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two levels (4^3 and 8^3 cells): the second level's backend, whose kernels differ,
    // must leave the compiled ones for the case.
    let mut v = cavity_json(16, 10, 4.0, 0.2);
    v["solver"] = serde_json::json!({"max_iterations": 3, "coarse_grids": 2, "acceleration": "none"});
    let path = dir.path().join("case.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let log = run_on_wgpu(
        &path,
        &dir.path().join("out"),
        "knudsen::backend::wgpu::prewarm=debug,knudsen::solver::coarse=info",
        false,
    );
    assert_eq!(log.matches("coarse start: ").count(), 2, "{log}");
    assert!(log.contains("the fused kernels compiled beside the coarse start taken for 16 x 16 x 16 cells"), "{log}");
}

#[test]
fn knudsen_run_on_wgpu_compiles_the_synthetic_kernels_as_the_first_device_opens() {
    // The synthetic solve on the device (forced below 8192 cells): its kernels start
    // compiling when the first level's device opens (`synthetic::wgpu::precompile`), and
    // the level's first solve takes them instead of compiling its own; the case then keeps
    // them from the level. Without a level, the case's device opening starts them.
    if gpu_adapter().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut v = cavity_json(12, 10, 4.0, 0.2);
    v["solver"] = serde_json::json!({"max_iterations": 3, "coarse_grids": 1, "acceleration": "gsis"});
    let path = dir.path().join("case.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let log = run_on_wgpu(&path, &dir.path().join("out"), "knudsen::solver::synthetic=debug", true);
    assert!(log.contains("gsis: wgpu kernels compiled as the device opened (waited"), "{log}");
    assert!(log.contains("gsis: wgpu kernels kept from the solve before on this device"), "{log}");
    assert!(!log.contains("gsis: wgpu kernels compiled in"), "compiled twice: {log}");
    // Without a coarse start (as after a restart) the case's own device opening starts them.
    v["solver"]["coarse_grids"] = serde_json::json!(0);
    std::fs::write(&path, v.to_string()).unwrap();
    let log = run_on_wgpu(&path, &dir.path().join("plain"), "knudsen::solver::synthetic=debug", true);
    assert!(log.contains("gsis: wgpu kernels compiled as the device opened (waited"), "{log}");
    assert!(!log.contains("gsis: wgpu kernels compiled in"), "compiled twice: {log}");
}

/// `knudsen run CASE --backend wgpu --out OUT` with `RUST_LOG=log` (and the synthetic solve
/// on the device at any size where `gsis_on_device`); its log, after checking it succeeded.
fn run_on_wgpu(case: &std::path::Path, out: &std::path::Path, log: &str, gsis_on_device: bool) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"));
    cmd.args(["run", case.to_str().unwrap(), "--backend", "wgpu", "--out", out.to_str().unwrap()]).env("RUST_LOG", log);
    if gsis_on_device {
        cmd.env("KNUDSEN_GSIS_DEVICE", "device");
    }
    let o = cmd.output().unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{log}");
    log
}
