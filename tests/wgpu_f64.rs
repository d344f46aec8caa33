//! `solver.precision = "f64"` on the wgpu backend: on adapters with f64 shaders (SHADER_F64:
//! lavapipe in CI, Vulkan and DX12 on most discrete GPUs) the slice kernels are compiled with
//! `real = f64` (shaders/real_f64.wgsl, src/backend/wgpu/real.rs) and compared here with the
//! CPU's f64 reference; an adapter without them refuses the case, naming the key. With
//! `CI=true` a missing adapter fails these tests (tests/common, `gpu_adapter`).
//!
//! Tolerance, sweep for sweep: both paths are f64 throughout and differ in the order of their
//! sums (the workgroup trees against the CPU's batch order), in the last places of exp64
//! against the CPU's exp (a few ulps) and of the divisions, and in moment_slice's weights
//! (two f32 words, within 2^-48 = 3.6e-15 of the f64 weight, real.rs::weight_words) and
//! velocities (rebuilt from the node step): about 1e-15 relative per value; after four
//! sweeps the fields differ by 5e-16 to 1.6e-13 on lavapipe (the heat flux, a difference of
//! third moments hundreds of times its size, the largest). 1e-10 keeps a margin of over 600
//! and is two orders below the f32 sweep's difference from f64 (5e-8 to 1.4e-5), which the
//! test checks the same comparison tells apart.

mod common;
use common::gpu_f64;
use common::*;
use knudsen::backend::BackendChoice;

/// The adapter, where it offers f64 shaders; None (with a note) where it does not, or where
/// there is none outside CI.
fn f64_adapter() -> Option<wgpu::Adapter> {
    let a = gpu_adapter()?;
    if a.features().contains(wgpu::Features::SHADER_F64) {
        return Some(a);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true but the adapter {} has no SHADER_F64 (lavapipe has it)", a.get_info().name);
    }
    eprintln!("NOTE: wgpu f64 tests not run: {} has no SHADER_F64", a.get_info().name);
    None
}

#[test]
fn wgpu_in_f64_matches_the_cpu_sweep_for_sweep() {
    if f64_adapter().is_some() {
        gpu_f64::matches_the_cpu_sweep_for_sweep(BackendChoice::Wgpu, "wgpu", 1e-10);
    }
}

/// At Kn 0.001 (its synthetic solve then runs on the host, in f64: the device's is f32).
#[test]
fn wgpu_in_f64_converges_at_kn_0_001_where_f32_stalls() {
    if f64_adapter().is_some() {
        gpu_f64::converges_at_kn_0_001_where_f32_stalls(BackendChoice::Wgpu, "wgpu");
    }
}

/// `knudsen check` plans wgpu in f64 (eight bytes a value) on an adapter that has it, and
/// `run --backend wgpu --precision f64` sweeps there and says so; an adapter without f64
/// refuses the case before anything is written (src/backend/wgpu/real.rs, `f64_refusal`,
/// unit-tested there; here through GL where Mesa's GL driver is installed).
#[test]
fn check_and_run_name_the_f64_wgpu_sweep() {
    let Some(adapter) = f64_adapter() else { return };
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case.json");
    std::fs::write(&case, pinned(&cavity_json(4, 10, 4.0, 0.1)).to_string()).unwrap();
    let knudsen =
        |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_knudsen")).args(args).output().unwrap();
    let c = case.to_str().unwrap();
    let o = knudsen(&["check", "--precision", "f64", c]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains(&format!("wgpu (f64) on {}", adapter.get_info().name)), "{stdout}");
    let out = dir.path().join("out");
    let o = knudsen(&[
        "run",
        "--backend",
        "wgpu",
        "--precision",
        "f64",
        "--max-iterations",
        "2",
        "--out",
        out.to_str().unwrap(),
        c,
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("the f64 slice kernels"), "{stderr}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["backend"], "wgpu", "{s}");
    assert!(s["device"].as_str().unwrap().contains("f64"), "{s}");
    // Through the GL backend (Mesa's llvmpipe, where installed: wgpu gives GL no f64) the
    // case is refused, exit 2, once, before a coarse level is built; nothing is written.
    let gl_out = dir.path().join("gl");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", "--backend", "wgpu", "--precision", "f64", "--out", gl_out.to_str().unwrap(), c])
        .env("WGPU_BACKEND", "gl")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(!gl_out.exists(), "{stderr}");
    if stderr.contains("no f64 shaders") {
        assert_eq!(stderr.matches("solver.precision \"f64\"").count(), 1, "{stderr}");
    } else {
        eprintln!("NOTE: no GL adapter here, the f64 refusal through GL not seen: {stderr}");
    }
}
