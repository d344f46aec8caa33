//! Helpers shared by the integration tests.
#![allow(dead_code)]

use knudsen::backend::{self, BackendChoice};
use knudsen::config::Config;
use knudsen::problem::Problem;
use knudsen::solver::{RunResult, Solver};
use std::sync::Arc;

/// Every backend the tests run on. Each physics test loops over this list, so a new
/// backend is tested by adding it here.
pub fn backends() -> Vec<BackendChoice> {
    vec![BackendChoice::Cpu]
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

pub fn config(v: &serde_json::Value) -> Config {
    Config::from_json(&v.to_string()).expect("valid test config")
}

pub fn load_config(name: &str) -> Config {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(name);
    Config::from_file(&path).expect("valid shipped config")
}

/// Run `cfg` on `choice` with `threads` worker threads.
pub fn run(cfg: &Config, choice: BackendChoice, threads: usize) -> (Arc<Problem>, RunResult) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let p = Arc::new(Problem::new(cfg));
        let (b, _) = backend::create(choice, p.clone(), cfg.solver.memory_budget_mib).unwrap();
        let r = Solver::new(&p, b).run(|_| {}).unwrap();
        (p, r)
    })
}
