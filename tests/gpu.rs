//! The wgpu backend against the f64 CPU reference (lavapipe in CI).
//!
//! Tolerances. The GPU stores f and sums moments in f32 (unit round-off 6e-8). Density,
//! velocity, temperature, pressure and stress are sums whose terms' magnitudes are within a
//! factor ~25 of the result (velocity: sum |w xi f| ~ 0.5 against |rho U| ~ 0.02), so
//! 6e-8 x 25 x a few = 1e-5 bounds their relative L2 difference after the same iterations.
//! The heat flux q ~ 1e-3 is the difference of third moments of size ~0.5: the same f32
//! round-off is amplified ~500 times, so it is held to 1e-4. Converged solutions differ
//! further by the f32 run's earlier stop (its tolerance floor, 1e-5, divided by the
//! contraction of ~0.5 per iteration at Kn = 1): 1e-4 for every field.

mod common;
use common::*;
use knudsen::backend::cpu::CpuBackend;
use knudsen::backend::fused::SweepKernel;
use knudsen::backend::wgpu::{WgpuBackend, WgpuOptions};
use knudsen::backend::BackendChoice;
use knudsen::problem::Problem;
use std::sync::Arc;

fn fixed_iterations(cfg: &knudsen::config::Config, n: usize) -> knudsen::config::Config {
    let mut c = cfg.clone();
    c.solver.max_iterations = n;
    c.solver.tolerance = 1e-30;
    c
}

fn wgpu(p: &Arc<Problem>, budget_mib: u64, opts: WgpuOptions, adapter: &wgpu::Adapter) -> WgpuBackend {
    WgpuBackend::with_adapter(p.clone(), budget_mib << 20, &opts, adapter).unwrap()
}

fn assert_close(what: &str, a: &[knudsen::model::Macro], b: &[knudsen::model::Macro], tol: f64, tol_q: f64) {
    for (name, d) in field_differences(a, b) {
        let t = if name == "heat_flux" { tol_q } else { tol };
        eprintln!("{what}: {name} relative L2 difference {d:.2e} (tolerance {t:.0e})");
        assert!(d < t, "{what}: {name} differs by {d:e} > {t:e}");
    }
}

#[test]
fn quick_cavity_wgpu_matches_cpu_after_same_iterations() {
    let Some(adapter) = gpu_adapter() else { return };
    let cfg = fixed_iterations(&load_config("cavity-quick.json"), 6);
    let p = Arc::new(Problem::new(&cfg));
    let cpu = run_with(&p, Box::new(CpuBackend::new(p.clone(), 512 << 20).unwrap()));
    let gpu = run_with(&p, Box::new(wgpu(&p, 512, WgpuOptions::default(), &adapter)));
    assert_eq!(gpu.iterations(), 6);
    assert_close("6 iterations", &gpu.fields, &cpu.fields, 1e-5, 1e-4);
    // The comparison has teeth: one iteration more moves the fields by far more.
    let cfg7 = fixed_iterations(&cfg, 7);
    let p7 = Arc::new(Problem::new(&cfg7));
    let cpu7 = run_with(&p7, Box::new(CpuBackend::new(p7.clone(), 512 << 20).unwrap()));
    let moved = field_differences(&cpu7.fields, &cpu.fields)[1].1;
    assert!(moved > 1e-4, "iteration 7 changed velocity by only {moved:e}");
}

#[test]
fn quick_cavity_wgpu_converges_to_cpu_solution() {
    let Some(_) = gpu_adapter() else { return };
    let cfg = load_config("cavity-quick.json");
    let (_, cpu) = run(&cfg, BackendChoice::Cpu, 2);
    let (_, gpu) = run(&cfg, BackendChoice::Wgpu, 2);
    assert!(cpu.converged && gpu.converged);
    assert!(gpu.final_residual() < 1e-5);
    assert_close("converged", &gpu.fields, &cpu.fields, 1e-4, 1e-4);
}

#[test]
fn batching_and_binding_splits_do_not_change_the_answer() {
    let Some(adapter) = gpu_adapter() else { return };
    let cfg = fixed_iterations(&load_config("cavity-quick.json"), 4);
    let p = Arc::new(Problem::new(&cfg));
    // The slice kernels' schedule is what this test splits.
    let slices = WgpuOptions { sweep: Some(SweepKernel::Slices), ..Default::default() };
    // All 4096 velocities in one wave and one binding.
    let one = wgpu(&p, 512, slices.clone(), &adapter);
    assert_eq!((one.schedule().waves.len(), one.schedule().slice_buffers), (1, 1));
    // 256 KiB budget: 256 velocities of 1 KiB per wave, 2 batches per octant.
    let many = WgpuBackend::with_adapter(p.clone(), 256 << 10, &slices, &adapter).unwrap();
    assert_eq!(many.schedule().waves.len(), 16);
    assert_eq!(many.schedule().batch_count(), 16);
    // Bindings capped at 400 KiB: one wave over 11 bindings of up to 400 velocities.
    let split = WgpuOptions { max_slice_binding: Some(400 << 10), ..slices.clone() };
    let split = wgpu(&p, 512, split, &adapter);
    assert_eq!(split.schedule().waves.len(), 1);
    assert_eq!(split.schedule().slice_buffers, 11);
    // One dispatch covers all 11 (group.rs), where the adapter allows 14 storage buffers.
    assert_eq!((split.schedule().waves[0].groups.len(), split.schedule().slice_bindings), (1, 11));
    // With four storage buffers per stage (wgpu's downlevel minimum), one dispatch each.
    let narrow = wgpu::Limits { max_storage_buffers_per_shader_stage: 4, ..adapter.limits() };
    let serial = WgpuOptions { max_slice_binding: Some(400 << 10), limits: Some(narrow), ..slices.clone() };
    let serial = wgpu(&p, 512, serial, &adapter);
    assert_eq!((serial.schedule().waves[0].groups.len(), serial.schedule().slice_bindings), (11, 1));
    let r_one = run_with(&p, Box::new(one));
    let r_many = run_with(&p, Box::new(many));
    let r_split = run_with(&p, Box::new(split));
    let r_serial = run_with(&p, Box::new(serial));
    // Only the grouping of f32 sums differs: f32 round-off, with the tolerances argued at
    // the top (velocity differences of 3-5e-6 are measured).
    assert_close("many batches", &r_many.fields, &r_one.fields, 1e-5, 1e-4);
    assert_close("split bindings", &r_split.fields, &r_one.fields, 1e-5, 1e-4);
    assert_close("one dispatch per binding", &r_serial.fields, &r_one.fields, 1e-5, 1e-4);
}

#[test]
fn subgroup_and_workgroup_reductions_agree() {
    let Some(adapter) = gpu_adapter() else { return };
    if !adapter.features().contains(wgpu::Features::SUBGROUP) {
        // CI's lavapipe offers subgroups: there their reduction must be compared.
        assert!(!in_ci(), "CI=true but the adapter has no subgroups: the subgroup reduction is not tested");
        eprintln!("NOTE: adapter has no subgroups; only the workgroup reduction ran");
        return;
    }
    let cfg = fixed_iterations(&load_config("cavity-quick.json"), 3);
    let p = Arc::new(Problem::new(&cfg));
    // The reductions of the slice kernels' moment stage.
    let slices = WgpuOptions { sweep: Some(SweepKernel::Slices), ..Default::default() };
    let sub = wgpu(&p, 512, slices.clone(), &adapter);
    assert!(sub.uses_subgroups());
    // WebGPU's default limits and no SUBGROUP feature: the workgroup-memory tree.
    let plain = WgpuOptions { limits: Some(wgpu::Limits::default()), no_subgroups: true, ..slices };
    let plain = wgpu(&p, 512, plain, &adapter);
    assert!(!plain.uses_subgroups());
    let a = run_with(&p, Box::new(sub));
    let b = run_with(&p, Box::new(plain));
    assert_close("subgroup vs workgroup", &a.fields, &b.fields, 1e-5, 1e-4);
}

#[test]
fn minimum_limits_give_the_same_answer() {
    // The device created under wgpu's downlevel defaults (4 storage buffers per stage, 128
    // MiB bindings, 256 invocations and ~16 KiB of workgroup memory per workgroup, no
    // subgroups) and under WebGPU's default limits: the same 6 iterations as the CPU, to the
    // same tolerances as the full-limit run.
    let Some(adapter) = gpu_adapter() else { return };
    let cfg = fixed_iterations(&load_config("cavity-quick.json"), 6);
    let p = Arc::new(Problem::new(&cfg));
    let cpu = run_with(&p, Box::new(CpuBackend::new(p.clone(), 512 << 20).unwrap()));
    for (name, limits) in
        [("downlevel", wgpu::Limits::downlevel_defaults()), ("WebGPU default", wgpu::Limits::default())]
    {
        // Both sweep kernels where the limits allow the fused one (WebGPU's: 4x4 tiles in
        // 16 KiB of workgroup memory; downlevel's four storage buffers: slices only).
        for sweep in [SweepKernel::Slices, SweepKernel::Fused] {
            let opts = WgpuOptions {
                limits: Some(limits.clone()),
                no_subgroups: true,
                sweep: Some(sweep),
                ..Default::default()
            };
            let Ok(b) = WgpuBackend::with_adapter(p.clone(), 512 << 20, &opts, &adapter) else {
                assert!(sweep == SweepKernel::Fused && name == "downlevel", "{name} {sweep:?} refused");
                continue;
            };
            assert!(!b.uses_subgroups());
            let r = run_with(&p, Box::new(b));
            assert_close(&format!("{name}, {sweep:?}"), &r.fields, &cpu.fields, 1e-5, 1e-4);
        }
    }
}
