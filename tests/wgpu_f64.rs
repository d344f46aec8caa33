//! `solver.precision = "f64"` on the wgpu backend: on adapters with f64 shaders (SHADER_F64,
//! which wgpu offers on Vulkan only: lavapipe in CI, most discrete GPUs) the slice kernels are compiled with
//! `real = f64` (shaders/real_f64.wgsl, src/backend/wgpu/real.rs) and compared here with the
//! CPU's f64 reference; an adapter without them refuses the case, naming the key. With
//! `CI=true` a missing adapter fails these tests (tests/common, `gpu_adapter`).
//!
//! Tolerance, sweep for sweep: both paths are f64 throughout, with the same weights (exact in
//! three f32 words, real.rs::weight_words) and velocities, and differ in the order of their
//! sums (the workgroup trees against the CPU's batch order) and in the last places of exp64
//! against the CPU's exp (a few ulps) and of the divisions: about 1e-16 relative per
//! operation; after four sweeps the fields differ by 5e-16 to 1.6e-13 (the heat flux, a
//! difference of third moments hundreds of times its size, the largest; lavapipe and an
//! H200). 1e-10 keeps a margin of over 600 and is two orders below the f32 sweep's difference
//! from f64 (5e-8 to 1.4e-5), which the test checks the same comparison tells apart.

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

/// Several chunks per wave, dispatch groups of up to three slice bindings with the last one
/// short (so a spare buffer fills its third binding, sized for a vec4 of f64), and several
/// waves: the f64 sweep of the body case gives the CPU's answer as the one-binding plan does.
/// Only the grouping of the f64 sums differs between the plans (1e-16 a value; measured up to
/// 5.1e-15 in the fields): 1e-12 leaves a margin of 200 and is a hundredth of the CPU
/// comparison's 1e-10, whose reason is at the top.
#[test]
fn wgpu_in_f64_splits_bindings_and_waves_to_the_same_answer() {
    use knudsen::backend::wgpu::{WgpuBackend, WgpuOptions};
    use knudsen::config::{Precision, Scheme};
    let Some(adapter) = f64_adapter() else { return };
    let cfg = gpu_f64::fixed(&body_case_json(), 4, Scheme::FirstOrder, Some(Precision::F64));
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let cpu = run(&cfg, BackendChoice::Cpu, 2).1;
    let with = |budget: u64, opts: WgpuOptions| WgpuBackend::with_adapter(p.clone(), budget, &opts, &adapter).unwrap();
    let one = with(64 << 20, WgpuOptions::default());
    // One binding (here two waves, of 896 and 128 velocity slots: the body case's octants of
    // 125 velocities, each padded to 128).
    let (one_waves, one_bindings) = (one.schedule().waves.len(), one.schedule().slice_bindings);
    assert_eq!(one_bindings, 1);
    // WebGPU's default limits (16 KiB of workgroup memory) hold the f32 reduction tree but
    // not the f64 one (19 KiB): refused by name, before anything is allocated.
    let webgpu = WgpuOptions { limits: Some(wgpu::Limits::default()), ..Default::default() };
    let e = WgpuBackend::with_adapter(p.clone(), 64 << 20, &webgpu, &adapter).err().expect("refused").to_string();
    assert!(e.contains("19456 bytes of workgroup memory"), "{e}");
    // 8 KiB per binding: 32 velocities (30 slice cells x 8 B = 240 B each, 34 rounded down to
    // whole quads) per chunk; three bindings per dispatch group (six storage buffers per
    // stage, three fixed).
    let narrow = wgpu::Limits { max_storage_buffers_per_shader_stage: 6, ..adapter.limits() };
    let split =
        with(64 << 20, WgpuOptions { max_slice_binding: Some(8 << 10), limits: Some(narrow), ..Default::default() });
    let s = split.schedule();
    assert_eq!(s.slice_bindings, 3, "{:?}", s.waves[0].groups.len());
    assert!(s.waves.iter().any(|w| w.groups.iter().any(|g| g.chunks < 3)), "no group leaves a spare binding");
    // 32 KiB of slices in all: more waves, of one dispatch group each.
    let waves = with(32 << 10, WgpuOptions::default());
    assert!(waves.schedule().waves.len() > one_waves, "{} waves", waves.schedule().waves.len());
    let fluid = |r: &knudsen::solver::RunResult| -> Vec<knudsen::model::Macro> {
        (0..p.grid.cells()).filter(|&c| !p.bodies.solids.is_solid(c)).map(|c| r.fields[c]).collect()
    };
    let r_one = fluid(&run_with(&p, Box::new(one)));
    for (what, b) in [("split bindings", split), ("several waves", waves)] {
        let r = fluid(&run_with(&p, Box::new(b)));
        for ((name, d), (_, dc)) in field_differences(&r, &r_one).into_iter().zip(field_differences(&r, &fluid(&cpu))) {
            eprintln!("{what}: {name} {d:.2e} from one binding, {dc:.2e} from the CPU's f64");
            assert!(d < 1e-12 && dc < 1e-10, "{what}: {name} {d:e}, {dc:e}");
        }
    }
}

/// `knudsen check` plans wgpu in f64 (eight bytes a value) on an adapter that has it, and
/// `run --backend wgpu --precision f64` sweeps there and says so; an adapter without f64
/// refuses the case before anything is written (src/backend/wgpu/real.rs, `f64_refusal`,
/// unit-tested there; here through GL where Mesa's GL driver is installed), as does a
/// `KNUDSEN_CELL_RECORDS` that the f64 sweep cannot take.
#[test]
fn check_and_run_name_the_f64_wgpu_sweep() {
    let Some(adapter) = f64_adapter() else { return };
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case.json");
    std::fs::write(&case, pinned(&cavity_json(4, 10, 4.0, 0.1)).to_string()).unwrap();
    let knudsen =
        |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_knudsen")).args(args).output().unwrap();
    let c = case.to_str().unwrap();
    // The wgpu line's slice storage for the quick cavity, in MiB, as `check` plans it in
    // `precision`.
    let quick = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/cavity-quick.json");
    let storage = |precision: &str| -> f64 {
        let o = knudsen(&["check", "--precision", precision, quick]);
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
        let line =
            stdout.lines().find(|l| l.starts_with(&format!("wgpu ({precision}) on {}", adapter.get_info().name)));
        let line = line.unwrap_or_else(|| panic!("{stdout}"));
        let at = line.find("distribution storage ").unwrap() + "distribution storage ".len();
        line[at..].split(' ').next().unwrap().parse().unwrap()
    };
    // The same velocities in flight at eight bytes a value instead of four.
    assert_eq!(storage("f64"), 2.0 * storage("f32"));
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
    // `run --backend wgpu --precision f64` of `case` with one environment variable set, which
    // must refuse it: exit 2, nothing written; its stderr.
    let refused = |name: &str, case: &str, var: (&str, &str)| -> String {
        let out = dir.path().join(name);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["run", "--backend", "wgpu", "--precision", "f64", "--out", out.to_str().unwrap(), case])
            .env(var.0, var.1)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{name}: {stderr}");
        assert!(!out.exists(), "{name}: {stderr}");
        stderr
    };
    // Through the GL backend (Mesa's llvmpipe, where installed: wgpu gives GL no f64) the
    // case is refused, once, before a coarse level is built.
    let stderr = refused("gl", c, ("WGPU_BACKEND", "gl"));
    if stderr.contains("no f64 shaders") {
        assert_eq!(stderr.matches("solver.precision \"f64\"").count(), 1, "{stderr}");
    } else {
        // CI installs llvmpipe (tests/gpu_gl.rs needs it): there the refusal must be seen.
        assert!(!in_ci(), "CI=true but the f64 refusal through GL was not seen: {stderr}");
        eprintln!("NOTE: no GL adapter here, the f64 refusal through GL not seen: {stderr}");
    }
    // A records stage the f64 sweep cannot take (the stages write f32 records) is refused
    // the same way: once, before a coarse level (the quick cavity has one; where the level's
    // backend refused it instead, the coarse start's failure was reported first).
    let stderr = refused("records", quick, ("KNUDSEN_CELL_RECORDS", "device"));
    assert_eq!(stderr.matches("KNUDSEN_CELL_RECORDS").count(), 1, "{stderr}");
}
