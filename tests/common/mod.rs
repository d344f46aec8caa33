//! Helpers shared by the integration tests.
#![allow(dead_code)]

use knudsen::backend::{self, BackendChoice};
use knudsen::config::Config;
use knudsen::problem::Problem;
use knudsen::solver::{RunResult, Solver};
use std::sync::Arc;

/// Every backend the tests run on: the CPU, and wgpu when an adapter (lavapipe in CI) is
/// present. Each physics test loops over this list. With CI=true a missing adapter fails
/// the test instead of dropping wgpu from the list.
pub fn backends() -> Vec<BackendChoice> {
    let mut list = vec![BackendChoice::Cpu];
    if gpu_adapter().is_some() {
        list.push(BackendChoice::Wgpu);
    }
    if cuda_here("the CUDA backend's leg of this test") {
        list.push(BackendChoice::Cuda);
    }
    list
}

/// Whether the CUDA tests run here: where the binary has CUDA and an NVIDIA driver answers
/// (the device machine). CI has no NVIDIA GPU and checks the CUDA kernels by compiling them
/// (tests/cuda_nvrtc.rs), so elsewhere a skip is a note; the device scripts set
/// TESTS_REQUIRE_CUDA=1 (tests/device/setup.sh), under which it is a failure instead.
pub fn cuda_here(what: &str) -> bool {
    match knudsen::backend::cuda_available() {
        Ok(()) => true,
        Err(why) => {
            if std::env::var("TESTS_REQUIRE_CUDA").is_ok_and(|v| v == "1") {
                panic!("TESTS_REQUIRE_CUDA=1 but {what} cannot run: {why}");
            }
            if cfg!(feature = "cuda-driver") {
                eprintln!("NOTE: {what} not run: {why}");
            }
            false
        }
    }
}

/// The adapter `--backend wgpu` would use. Without one: a failure under CI=true, otherwise
/// a loud note on stderr.
pub fn gpu_adapter() -> Option<wgpu::Adapter> {
    match knudsen::backend::wgpu::device::pick(knudsen::backend::wgpu::device::adapters(), true) {
        Ok(a) => Some(a),
        Err(e) => {
            if in_ci() {
                panic!("CI=true but no wgpu adapter: {e} (tests/deps.sh installs mesa-vulkan-drivers)");
            }
            eprintln!("NOTE: wgpu tests not run: {e}; run tests/deps.sh to install lavapipe");
            None
        }
    }
}

/// Whether this is CI (CI=true), where a test that cannot run fails instead of noting it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Relative L2 difference ||a - b|| / ||b|| of two fields.
pub fn rel_l2(a: impl Iterator<Item = f64>, b: impl Iterator<Item = f64>) -> f64 {
    let (mut d, mut n) = (0.0, 0.0);
    for (x, y) in a.zip(b) {
        d += (x - y) * (x - y);
        n += y * y;
    }
    (d / n).sqrt()
}

/// Relative L2 differences of density, velocity, temperature, pressure, stress, heat flux.
pub fn field_differences(a: &[knudsen::model::Macro], b: &[knudsen::model::Macro]) -> [(&'static str, f64); 6] {
    [
        ("density", rel_l2(a.iter().map(|m| m.rho), b.iter().map(|m| m.rho))),
        ("velocity", rel_l2(a.iter().flat_map(|m| m.u), b.iter().flat_map(|m| m.u))),
        ("temperature", rel_l2(a.iter().map(|m| m.t), b.iter().map(|m| m.t))),
        ("pressure", rel_l2(a.iter().map(|m| m.pressure()), b.iter().map(|m| m.pressure()))),
        ("stress", rel_l2(a.iter().flat_map(|m| m.p), b.iter().flat_map(|m| m.p))),
        ("heat_flux", rel_l2(a.iter().flat_map(|m| m.q), b.iter().flat_map(|m| m.q))),
    ]
}

pub fn wall(t: f64) -> serde_json::Value {
    serde_json::json!({"type": "diffuse_wall", "temperature": t})
}

/// A box of `n` cells per side with walls at T = 1; the y_max wall moves along x at `lid`.
pub fn cavity_json(n: usize, m: usize, vmax: f64, lid: f64) -> serde_json::Value {
    let axis = serde_json::json!({"min": 0.0, "max": 1.0, "cells": n});
    serde_json::json!({
        "gas": {"kn": 1.0},
        "grid": {"x": axis, "y": axis, "z": axis},
        "velocity": {"points": m, "max": vmax},
        "boundaries": {
            "x_min": wall(1.0), "x_max": wall(1.0), "y_min": wall(1.0),
            "y_max": {"type": "diffuse_wall", "temperature": 1.0, "velocity": [lid, 0.0, 0.0]},
            "z_min": wall(1.0), "z_max": wall(1.0)
        }
    })
}

/// A box open through y_max to a free stream (Mach 0.3 along x, Kn 0.5, 10^3 velocities):
/// x faces periodic, z faces specular, y_min a diffuse wall at T = 0.9; `cells` per axis.
/// The partner faces' data and the free stream's in and out flow, in one small case.
pub fn open_box_json(cells: [usize; 3]) -> serde_json::Value {
    let axis = |n: usize| serde_json::json!({"min": 0.0, "max": 1.0, "cells": n});
    serde_json::json!({
        "gas": {"kn": 0.5},
        "grid": {"x": axis(cells[0]), "y": axis(cells[1]), "z": axis(cells[2])},
        "velocity": {"points": 10, "max": 4.0},
        "free_stream": {"mach": 0.3, "direction": [1.0, 0.0, 0.0], "density": 1.0, "temperature": 1.0},
        "boundaries": {
            "x_min": {"type": "periodic"}, "x_max": {"type": "periodic"},
            "y_min": {"type": "diffuse_wall", "temperature": 0.9},
            "y_max": {"type": "free_stream"},
            "z_min": {"type": "specular"}, "z_max": {"type": "specular"}
        }
    })
}

/// `v` with `solver.acceleration = "none"` where it names none. A case's default, `"auto"`,
/// chooses its updates from timings, so its path (and its bits) can differ between two runs;
/// a test that compares runs, counts iterations or times them names its acceleration, or
/// runs source iteration.
pub fn pinned(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    if v["solver"].get("acceleration").is_none() {
        if !v["solver"].is_object() {
            v["solver"] = serde_json::json!({});
        }
        v["solver"]["acceleration"] = serde_json::json!("none");
    }
    v
}

/// `cfg` with the given acceleration, tolerance and sweep budget.
pub fn with(mut cfg: Config, acc: knudsen::config::Acceleration, tol: f64, max: usize) -> Config {
    cfg.solver.acceleration = acc;
    cfg.solver.tolerance = tol;
    cfg.solver.max_iterations = max;
    cfg
}

/// The case `v` ([`pinned`]).
pub fn config(v: &serde_json::Value) -> Config {
    Config::from_json(&pinned(v).to_string()).expect("valid test config")
}

/// A shipped case ([`pinned`]).
pub fn load_config(name: &str) -> Config {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs").join(name);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    Config::from_json(&pinned(&v).to_string()).expect("valid shipped config")
}

/// Run `cfg` on a given backend object.
pub fn run_with(p: &Arc<Problem>, b: Box<dyn knudsen::backend::Backend>) -> RunResult {
    Solver::new(p, b).run(|_| {}).unwrap()
}

/// Run `cfg` on `choice` with `threads` worker threads.
pub fn run(cfg: &Config, choice: BackendChoice, threads: usize) -> (Arc<Problem>, RunResult) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let p = Arc::new(Problem::new(cfg));
        let (b, _) = backend::create(choice, p.clone(), cfg.solver.memory_budget_mib).unwrap();
        let r = Solver::new(&p, b).run(|_| {}).unwrap();
        (p, r)
    })
}

/// A 6^3 lid cavity (10^3 velocities) with a body (solid cells, wall emission and loads),
/// specular y_min and z_min (partner inflow and exits), a stretched x axis and an odd
/// velocity count per octant: every path of a sweep in one small case.
pub fn body_case_json() -> serde_json::Value {
    let mut v = cavity_json(6, 10, 4.0, 0.1);
    v["boundaries"]["y_min"] = serde_json::json!({"type": "specular"});
    v["boundaries"]["z_min"] = serde_json::json!({"type": "specular"});
    v["grid"]["x"] = serde_json::json!({"faces": [0.0, 0.1, 0.25, 0.45, 0.7, 1.0]});
    // A rod across y (cut by the specular y_min), moving along itself: a wall velocity in
    // the emission, tangential to every face that meets gas.
    v["bodies"] = serde_json::json!([{"min": [0.25, 0.0, 2.0 / 6.0], "max": [0.7, 1.0, 4.0 / 6.0], "temperature": 1.3,
        "velocity": [0.0, 0.1, 0.0]}]);
    v
}
pub mod gpu_f64;

/// A backend whose every sweep is followed by `after(n, out)`, `n` counting its sweeps from
/// 1: a fault injected where a test needs one (non-finite moments, a failed sweep).
pub struct Hooked<F> {
    pub inner: Box<dyn backend::Backend>,
    pub sweeps: usize,
    pub after: F,
}

impl<F: FnMut(usize, &mut backend::SweepOutput) -> anyhow::Result<()>> backend::Backend for Hooked<F> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn device(&self) -> String {
        self.inner.device()
    }
    fn plan_summary(&self) -> backend::PlanSummary {
        self.inner.plan_summary()
    }
    fn bytes_per_value(&self) -> usize {
        self.inner.bytes_per_value()
    }
    fn sweep(&mut self, input: &backend::SweepInput, out: &mut backend::SweepOutput) -> anyhow::Result<()> {
        self.inner.sweep(input, out)?;
        self.sweeps += 1;
        (self.after)(self.sweeps, out)
    }
    fn copy_bandwidth(&mut self) -> anyhow::Result<f64> {
        self.inner.copy_bandwidth()
    }
}
