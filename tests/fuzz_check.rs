//! Fuzzing the `check` path: parse + validate + plan, on arbitrary JSON and on mutations of
//! the shipped cases. Every input ends in Ok or a ConfigError/PlanError, never a panic, and
//! none takes long: sizes are checked before anything is allocated.
//!
//! CI runs `FUZZ_CASES` inputs of each kind (default 3000). The recorded run in
//! `docs/reliability.md` used `FUZZ_CASES=500000` (1e6 inputs in all).

use knudsen::backend::wgpu::schedule::{schedule, GpuLimits};
use knudsen::backend::CPU_BYTES_PER_VALUE;
use knudsen::config::Config;
use knudsen::grid::{Grid, VelocityGrid};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Cases whose host fields exceed this are refused by the CLI on small machines (it checks
/// the memory available); the fuzzer stops there too, so no input allocates much.
const HOST_BYTES_CAP: u64 = 256 << 20;

/// What `knudsen check` does before printing: parse and validate, the host-memory rule,
/// the grids, and the CPU and wgpu plans. Returns how far the input got: 0 refused by
/// validation, 1 valid but too large for the cap, 2 planned.
fn check_path(text: &str) -> usize {
    let Ok(cfg) = Config::from_json(text) else { return 0 };
    let cells = cfg.cell_counts();
    if knudsen::plan::host_bytes(
        cells,
        cfg.velocity.points,
        cfg.solver.precision == Some(knudsen::config::Precision::F32),
    ) > HOST_BYTES_CAP
    {
        return 1;
    }
    let grid = Grid::from_config(&cfg.grid);
    let v = VelocityGrid::from_config(&cfg.velocity);
    let budget = (cfg.solver.memory_budget_mib.unwrap_or(512.0) * 1048576.0) as u64;
    let _ = knudsen::plan::plan_batches(&v.octant_members(), grid.slice_cells(), CPU_BYTES_PER_VALUE, 1, budget);
    let _ = schedule(&v.octant_members(), &v.xi, grid.dims(), budget, &GpuLimits::webgpu_default(), None, 1, 4);
    2
}

fn cases() -> usize {
    std::env::var("FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(3000)
}

/// Keys of the schema and values near its limits, so random documents reach deep checks.
const KEYS: [&str; 30] = [
    "gas",
    "kn",
    "delta",
    "omega",
    "prandtl",
    "length",
    "grid",
    "x",
    "y",
    "z",
    "min",
    "max",
    "cells",
    "faces",
    "stretched",
    "uniform",
    "ratio_min",
    "ratio_max",
    "velocity",
    "points",
    "quadrature",
    "boundaries",
    "type",
    "temperature",
    "free_stream",
    "mach",
    "bodies",
    "solver",
    "tolerance",
    "initial",
];

/// Numbers at the edges of what the keys accept, and of f64 (coordinates whose cells round
/// onto one another, lengths that overflow).
const EDGES: [f64; 15] =
    [0.0, -1.0, 1.0, 0.5, 2.0, 1.5, 4.0, 16384.0, 16385.0, 1025.0, 2147483648.0, 1e300, 1e308, -1e308, 1e16];

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON numbers are finite", |x| x.is_finite()).prop_map(Value::from),
        prop::sample::select(EDGES.to_vec()).prop_map(Value::from),
        (0u64..40).prop_map(Value::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        prop::sample::select(KEYS.to_vec()).prop_map(Value::from),
        prop::sample::select(vec!["diffuse_wall", "free_stream", "specular", "periodic", "simpson"])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

fn shipped() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut out = Vec::new();
    for d in [dir.clone(), dir.join("bench")] {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                out.push(serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap());
            }
        }
    }
    out
}

/// Every path into a document (object keys and array indices).
fn paths(v: &Value, at: Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            let mut p = at.clone();
            p.push(Value::from(k.as_str()));
            out.push(p.clone());
            paths(x, p, out);
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
            let mut p = at.clone();
            p.push(Value::from(i));
            out.push(p.clone());
            paths(x, p, out);
        }),
        _ => {}
    }
}

/// Replace (or, with `None`, delete) the value at `path`.
fn mutate(mut doc: Value, path: &[Value], with: Option<Value>) -> Value {
    let mut at = &mut doc;
    for key in &path[..path.len() - 1] {
        at = match key {
            Value::String(k) => at.get_mut(k.as_str()).unwrap(),
            k => at.get_mut(k.as_u64().unwrap() as usize).unwrap(),
        };
    }
    match (path.last().unwrap(), with) {
        (Value::String(k), Some(w)) => drop(at.as_object_mut().unwrap().insert(k.clone(), w)),
        (Value::String(k), None) => drop(at.as_object_mut().unwrap().remove(k)),
        (i, Some(w)) => at[i.as_u64().unwrap() as usize] = w,
        (i, None) => drop(at.as_array_mut().unwrap().remove(i.as_u64().unwrap() as usize)),
    }
    doc
}

/// Run `strategy` through the check path, timing each input; the slowest must stay under
/// `limit` (generous: CI machines are shared), and at least the share `planned_share` of the
/// inputs must get through validation to the plans, so that a validation refusing
/// everything cannot pass as "no panic".
fn fuzz(name: &str, strategy: impl Strategy<Value = String>, limit: Duration, planned_share: f64) {
    let mut runner =
        TestRunner::new(RunnerConfig { cases: cases() as u32, failure_persistence: None, ..Default::default() });
    let slowest = std::cell::RefCell::new((Duration::ZERO, String::new()));
    let reached = std::cell::RefCell::new([0usize; 3]);
    let t0 = Instant::now();
    runner
        .run(&strategy, |text| {
            let t = Instant::now();
            reached.borrow_mut()[check_path(&text)] += 1;
            let dt = t.elapsed();
            let mut worst = slowest.borrow_mut();
            if dt > worst.0 {
                *worst = (dt, text);
            }
            Ok(())
        })
        .unwrap();
    let slowest = slowest.into_inner();
    let [refused, large, planned] = reached.into_inner();
    eprintln!(
        "{name}: {} inputs in {:.1} s ({refused} refused, {large} valid but over the size cap, {planned} planned), slowest {:.3} s: {}",
        cases(),
        t0.elapsed().as_secs_f64(),
        slowest.0.as_secs_f64(),
        slowest.1.chars().take(300).collect::<String>()
    );
    assert!(slowest.0 < limit, "{name}: an input took {:?}: {}", slowest.0, slowest.1);
    assert!(planned as f64 >= planned_share * cases() as f64, "{name}: only {planned} of {} inputs planned", cases());
}

#[test]
fn arbitrary_json_never_panics_or_hangs() {
    // Random documents are (almost) never valid cases: none need reach the plans.
    fuzz("arbitrary JSON", json().prop_map(|v| v.to_string()), Duration::from_secs(2), 0.0);
}

/// A replacement for a value: anything (None deletes it), or, for a number, a nearby or
/// extreme one, so that many mutants stay valid and reach the plan.
fn replacement() -> impl Strategy<Value = Option<(Value, f64)>> {
    prop_oneof![
        3 => prop::option::weighted(0.85, json()).prop_map(|v| v.map(|v| (v, f64::NAN))),
        2 => prop::sample::select(vec![0.5, 2.0, -1.0, 1.01, 0.99, 10.0, 0.1, 3.0, 1e6, 1e16, 1e300])
            .prop_map(|f| Some((Value::Null, f))),
    ]
}

#[test]
fn mutated_shipped_cases_never_panic_or_hang() {
    let docs = shipped();
    let strategy = (0..docs.len(), any::<prop::sample::Index>(), replacement()).prop_map(move |(d, pick, with)| {
        let mut all = Vec::new();
        paths(&docs[d], Vec::new(), &mut all);
        let path = &all[pick.index(all.len())];
        let with = match with {
            // A factor: scale the number there (other values are left alone).
            Some((_, f)) if !f.is_nan() => {
                let mut at = &docs[d];
                for k in path {
                    at = match k {
                        Value::String(k) => &at[k.as_str()],
                        k => &at[k.as_u64().unwrap() as usize],
                    };
                }
                match at {
                    Value::Number(n) if n.is_u64() => {
                        Some(Value::from((n.as_u64().unwrap() as f64 * f.abs()).round() as u64))
                    }
                    Value::Number(n) => Some(Value::from(n.as_f64().unwrap() * f)),
                    other => Some(other.clone()),
                }
            }
            other => other.map(|(v, _)| v),
        };
        mutate(docs[d].clone(), path, with).to_string()
    });
    // 15% of the recorded run's mutants were planned (docs/reliability.md); 5% leaves room
    // for a smaller sample's spread.
    fuzz("mutated cases", strategy, Duration::from_secs(2), 0.05);
}

#[test]
fn the_reported_hang_is_refused_at_once() {
    // grid.y.cells = 2^31 used to allocate the faces before the size check.
    let mut v = shipped().into_iter().find(|v| v["grid"]["y"]["cells"].is_u64()).unwrap();
    v["grid"]["y"]["cells"] = Value::from(2147483648u64);
    let t = Instant::now();
    let err = Config::from_json(&v.to_string()).unwrap_err();
    assert!(t.elapsed() < Duration::from_millis(100), "{:?}", t.elapsed());
    assert_eq!(err.key, "grid.y");
    assert!(err.reason.contains("at most 16384"), "{err}");
}

#[test]
fn axes_beyond_f64_are_refused_not_a_panic() {
    // A uniform axis whose length overflows, one whose faces round onto each other far from
    // 0, and a stretched one of both: each once passed validation and panicked in the grid.
    let mut base = shipped().into_iter().find(|v| v["grid"]["x"]["cells"].is_u64()).unwrap();
    for (axis, key) in [
        (serde_json::json!({"min": -1e308, "max": 1e308, "cells": 4}), "grid.x"),
        (serde_json::json!({"min": 1e16, "max": 1.0000000000000016e16, "cells": 16}), "grid.x.cells"),
        (
            serde_json::json!({"min": -1e308, "max": 1e308, "stretched": {"uniform": [-1e308, 1e308], "cells": 4}}),
            "grid.x",
        ),
    ] {
        base["grid"]["x"] = axis.clone();
        assert_eq!(check_path(&base.to_string()), 0, "{axis}");
        assert_eq!(Config::from_json(&base.to_string()).unwrap_err().key, key, "{axis}");
    }
}

/// The fuzzer's seeds are the shipped cases; each of them must itself be valid, or a
/// broken case file would only show as fewer mutants reaching the plan.
#[test]
fn every_shipped_case_is_valid() {
    let docs = shipped();
    assert!(docs.len() >= 12, "configs/ and configs/bench/ hold {} cases", docs.len());
    for d in docs {
        let name = d["name"].as_str().unwrap_or("?").to_string();
        if let Err(e) = Config::from_json(&d.to_string()) {
            panic!("shipped case {name}: {e}");
        }
    }
}
