//! Bad case files: a one-line error naming the key and the reason, exit code 2, nothing
//! written.

mod common;
use common::*;
use knudsen::config::Config;
use std::process::Command;

fn body(min: [f64; 3], max: [f64; 3]) -> serde_json::Value {
    serde_json::json!([{"min": min, "max": max, "temperature": 1.0}])
}

/// (description, mutation of a valid config, key the error must name, words of the reason)
fn cases() -> Vec<(&'static str, serde_json::Value, &'static str, &'static str)> {
    let base = cavity_json(4, 16, 4.0, 0.1);
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = base.clone();
        f(&mut v);
        v
    };
    vec![
        (
            "periodic on one side only",
            with(&|v| v["boundaries"]["x_min"] = serde_json::json!({"type": "periodic"})),
            "boundaries.x_max",
            "must be periodic too",
        ),
        (
            "specular face with a temperature",
            with(&|v| v["boundaries"]["z_max"] = serde_json::json!({"type": "specular", "temperature": 1.0})),
            "boundaries.z_max",
            "unknown field `temperature`",
        ),
        ("unknown top-level key", with(&|v| v["solvr"] = serde_json::json!({})), "solvr", "unknown field `solvr`"),
        ("unknown nested key", with(&|v| v["gas"]["kns"] = serde_json::json!(1.0)), "gas.kns", "unknown field `kns`"),
        ("zero cells", with(&|v| v["grid"]["y"]["cells"] = serde_json::json!(0)), "grid.y.cells", "at least 1"),
        ("negative cells", with(&|v| v["grid"]["x"]["cells"] = serde_json::json!(-3)), "grid.x.cells", "invalid value"),
        ("empty domain", with(&|v| v["grid"]["z"]["max"] = serde_json::json!(0.0)), "grid.z.max", "must exceed min"),
        (
            "partner relaxation too small for the stop to see",
            with(&|v| v["solver"]["partner_relaxation"] = serde_json::json!(1e-3)),
            "solver.partner_relaxation",
            "is below 0.05",
        ),
        ("zero Kn", with(&|v| v["gas"]["kn"] = serde_json::json!(0.0)), "gas.kn", "positive"),
        ("negative Kn", with(&|v| v["gas"]["kn"] = serde_json::json!(-1.0)), "gas.kn", "positive"),
        ("Kn and delta", with(&|v| v["gas"]["delta"] = serde_json::json!(1.0)), "gas", "not both"),
        (
            "empty velocity grid",
            with(&|v| v["velocity"]["points"] = serde_json::json!(0)),
            "velocity.points",
            "at least 2",
        ),
        (
            "coarse velocity grid",
            with(&|v| v["velocity"]["points"] = serde_json::json!(6)),
            "velocity.points",
            "does not resolve",
        ),
        (
            "narrow velocity grid",
            with(&|v| v["velocity"]["max"] = serde_json::json!(1.8)),
            "velocity.max",
            "too near the velocity bound for the initial state",
        ),
        (
            "hot wall at rest near the bound",
            with(&|v| v["boundaries"]["x_max"]["temperature"] = serde_json::json!(10.0)),
            "velocity.max",
            "for the wall boundaries.x_max (largest velocity component 0, T = 10)",
        ),
        (
            "lid speed near the bound",
            with(&|v| v["boundaries"]["y_max"]["velocity"] = serde_json::json!([2.5, 0.0, 0.0])),
            "velocity.max",
            "too near the velocity bound for the wall boundaries.y_max (largest velocity component 2.5",
        ),
        (
            "wall moving through itself",
            with(&|v| v["boundaries"]["y_max"]["velocity"] = serde_json::json!([0.0, 0.1, 0.0])),
            "boundaries.y_max.velocity",
            "tangentially",
        ),
        (
            "zero wall temperature",
            with(&|v| v["boundaries"]["x_min"]["temperature"] = serde_json::json!(0.0)),
            "boundaries.x_min.temperature",
            "positive",
        ),
        (
            "negative wall temperature",
            with(&|v| v["boundaries"]["z_max"]["temperature"] = serde_json::json!(-1.0)),
            "boundaries.z_max.temperature",
            "positive",
        ),
        (
            "unknown face type",
            with(&|v| v["boundaries"]["z_max"]["type"] = serde_json::json!("sticky")),
            "boundaries.z_max.type",
            "unknown variant `sticky`",
        ),
        (
            "Simpson with even points",
            with(&|v| v["velocity"]["quadrature"] = serde_json::json!("simpson")),
            "velocity.points",
            "odd",
        ),
        (
            "zero tolerance",
            with(&|v| v["solver"] = serde_json::json!({"tolerance": 0.0})),
            "solver.tolerance",
            "positive",
        ),
        (
            "more iterations than a run can count",
            with(&|v| v["solver"] = serde_json::json!({"max_iterations": 2_000_000_000u64})),
            "solver.max_iterations",
            "at most 1000000000",
        ),
        (
            "zero budget",
            with(&|v| v["solver"] = serde_json::json!({"memory_budget_mib": 0.0})),
            "solver.memory_budget_mib",
            "positive",
        ),
        (
            "body off the cell faces",
            with(&|v| v["bodies"] = body([0.25, 0.25, 0.3], [0.75, 0.75, 0.75])),
            "bodies[0].min",
            "not on a cell face",
        ),
        (
            "body moving through its own face",
            with(&|v| {
                v["bodies"] = body([0.25, 0.25, 0.25], [0.75, 0.75, 0.75]);
                v["bodies"][0]["velocity"] = serde_json::json!([0.0, 0.0, 0.1]);
            }),
            "bodies[0].velocity",
            "face at z = 0.25 meets gas",
        ),
        (
            "body leaving the domain",
            with(&|v| v["bodies"] = body([0.25, 0.25, 0.25], [0.75, 1.25, 0.75])),
            "bodies[0]",
            "leaves the domain",
        ),
        (
            "two bodies of one name",
            with(&|v| {
                v["bodies"] = serde_json::json!([
                    {"name": "b", "min": [0.0, 0.0, 0.0], "max": [0.25, 0.25, 0.25], "temperature": 1.0},
                    {"name": "b", "min": [0.5, 0.5, 0.5], "max": [0.75, 0.75, 0.75], "temperature": 1.0}
                ])
            }),
            "bodies[1].name",
            "\"b\" is the name of bodies[1] and the name of bodies[0]",
        ),
        (
            "a name that is an unnamed body's label",
            with(&|v| {
                v["bodies"] = serde_json::json!([
                    {"name": "body1", "min": [0.0, 0.0, 0.0], "max": [0.25, 0.25, 0.25], "temperature": 1.0},
                    {"min": [0.5, 0.5, 0.5], "max": [0.75, 0.75, 0.75], "temperature": 1.0}
                ])
            }),
            "bodies[0].name",
            "\"body1\" is the label of the unnamed bodies[1] and the name of bodies[0]",
        ),
        (
            "a body ending on a periodic face with gas across the wrap",
            with(&|v| {
                for f in ["x_min", "x_max"] {
                    v["boundaries"][f] = serde_json::json!({"type": "periodic"});
                }
                v["bodies"] = body([0.5, 0.25, 0.25], [1.0, 0.75, 0.75]);
            }),
            "bodies[0]",
            "ends on the periodic face x_max, and the gas across the wrap (at x_min)",
        ),
        (
            "Simpson with the points the trapezoid rule resolves with",
            with(&|v| v["velocity"] = serde_json::json!({"points": 11, "max": 4.0, "quadrature": "simpson"})),
            "velocity.points",
            "composite Simpson: twice the spacing",
        ),
        (
            "a body filling the domain",
            with(&|v| v["bodies"] = body([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])),
            "bodies",
            "no gas cell is left",
        ),
        (
            "two bodies filling the domain together",
            with(&|v| {
                v["bodies"] = serde_json::json!([
                    {"min": [0.0, 0.0, 0.0], "max": [0.5, 1.0, 1.0], "temperature": 1.0},
                    {"min": [0.25, 0.0, 0.0], "max": [1.0, 1.0, 1.0], "temperature": 1.0}
                ])
            }),
            "bodies",
            "no gas cell is left",
        ),
        (
            "a closed box of specular and periodic faces without a body",
            with(&|v| {
                for f in ["x_min", "x_max", "y_min", "y_max"] {
                    v["boundaries"][f] = serde_json::json!({"type": "specular"});
                }
                for f in ["z_min", "z_max"] {
                    v["boundaries"][f] = serde_json::json!({"type": "periodic"});
                }
            }),
            "boundaries",
            "nothing sets the gas's temperature",
        ),
        (
            "free-stream face without a free stream",
            with(&|v| v["boundaries"]["x_min"] = serde_json::json!({"type": "free_stream"})),
            "boundaries.x_min",
            "needs the top-level `free_stream`",
        ),
        (
            "free stream with Mach and velocity",
            with(&|v| {
                v["boundaries"]["x_min"] = serde_json::json!({"type": "free_stream"});
                v["free_stream"] = serde_json::json!({"mach": 1.0, "velocity": [0.5, 0.0, 0.0]});
            }),
            "free_stream",
            "not both",
        ),
        (
            "free stream too fast for the velocity grid",
            with(&|v| {
                v["boundaries"]["x_min"] = serde_json::json!({"type": "free_stream"});
                v["free_stream"] = serde_json::json!({"mach": 2.5});
            }),
            "velocity.max",
            "too near the velocity bound for the free stream",
        ),
        (
            "stretch ratio out of range",
            with(&|v| {
                v["grid"]["x"] = serde_json::json!({"min": -3.0, "max": 3.0,
                    "stretched": {"uniform": [-0.5, 0.5], "cells": 4, "ratio_min": 2.0}})
            }),
            "grid.x.stretched.ratio_min",
            "must lie in [1, 1.5]",
        ),
        (
            "three ends for a uniform part",
            with(&|v| {
                v["grid"]["x"] = serde_json::json!({"min": -3.0, "max": 3.0,
                    "stretched": {"uniform": [-0.5, 0.0, 0.5], "cells": 4}})
            }),
            "grid.x.stretched.uniform",
            "too many elements",
        ),
        (
            "faces not increasing",
            with(&|v| v["grid"]["y"] = serde_json::json!({"faces": [0.0, 0.5, 0.4, 1.0]})),
            "grid.y.faces",
            "increase strictly",
        ),
        (
            "two axis forms at once",
            with(&|v| v["grid"]["z"]["faces"] = serde_json::json!([0.0, 1.0])),
            "grid.z",
            "give one of",
        ),
        (
            "missing gas",
            with(&|v| {
                v.as_object_mut().unwrap().remove("gas");
            }),
            "",
            "missing field `gas`",
        ),
    ]
}

#[test]
fn each_bad_config_names_key_and_reason() {
    assert!(Config::from_json(&cavity_json(4, 16, 4.0, 0.1).to_string()).is_ok(), "the base config must be valid");
    for (what, v, key, words) in cases() {
        let e = Config::from_json(&v.to_string()).expect_err(what);
        assert_eq!(e.key, key, "{what}: {e}");
        assert!(e.reason.contains(words), "{what}: {e}");
    }
}

#[test]
fn text_after_the_case_is_an_error() {
    let good = cavity_json(4, 16, 4.0, 0.1).to_string();
    for tail in [" {\"gas\": {\"kn\": 99}}", " garbage"] {
        let e = Config::from_json(&format!("{good}{tail}")).expect_err(tail);
        assert!(e.reason.contains("trailing characters"), "{tail}: {e}");
    }
    assert!(Config::from_json(&format!("{good}\n  \n")).is_ok(), "whitespace after the case is fine");
    // A byte-order mark before it is fine too (some editors write one).
    assert!(Config::from_json(&format!("\u{feff}{good}")).is_ok(), "a byte-order mark");
    // Nor is the case an array of its sections.
    let e = Config::from_json("[]").expect_err("an array");
    assert!(e.reason.contains("a case is a JSON object"), "{e}");
}

#[test]
fn cli_rejects_bad_configs_with_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, v, key, _)) in cases().into_iter().enumerate() {
        let cfg = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&cfg, v.to_string()).unwrap();
        let out = dir.path().join(format!("out{i}"));
        for sub in ["run", "check"] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_knudsen"));
            cmd.arg(sub).arg(&cfg);
            if sub == "run" {
                cmd.arg("--out").arg(&out);
            }
            let o = cmd.output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{what} ({sub})");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(err.trim().lines().count(), 1, "{what}: one line expected, got {err}");
            assert!(err.contains("error") && err.contains(key), "{what}: {err}");
            assert!(!out.exists(), "{what}: output written");
        }
    }
    // Budget too small for one velocity's slice: refused before anything is allocated. With
    // a coarse start (16^3 cells), whose probe makes the output directory first: the
    // directories made for it go again, parent included.
    let cfg = dir.path().join("ok.json");
    std::fs::write(&cfg, cavity_json(16, 16, 4.0, 0.1).to_string()).unwrap();
    let out = dir.path().join("out-budget").join("deep");
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["run", cfg.to_str().unwrap(), "--memory-budget-mib", "0.0001", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("memory budget"));
    assert!(!dir.path().join("out-budget").exists());
    // A missing file is bad input too.
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen")).args(["check", "/nonexistent.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_negative_option_value_is_named_by_its_option() {
    // Refused by the option's own check, or by its type, which names the option; not
    // clap's "unexpected argument '-1'", which read "-1e-3" as a flag and told the user to
    // write "-- -1".
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ok.json");
    std::fs::write(&cfg, cavity_json(4, 16, 4.0, 0.1).to_string()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let out = dir.path().join("out");
    for (args, named) in [
        (vec!["run", cfg, "--tolerance", "-1e-3"], "--tolerance"),
        (vec!["run", cfg, "--max-iterations", "-3"], "--max-iterations"),
        (vec!["run", cfg, "--memory-budget-mib", "-1e3"], "--memory-budget-mib"),
        (vec!["check", cfg, "--device-memory-mib", "-5"], "--device-memory-mib"),
        (vec!["bench", "--warmup-seconds", "-1e-3"], "--warmup-seconds"),
        (vec!["bench", "--iterations", "-3"], "--iterations"),
        // Not a negative number, but the sum that is the rows' iteration limit: named as
        // the options given, not as the row case's `solver.max_iterations`.
        (vec!["bench", "--iterations", "999999999", "--warmup", "5"], "--iterations plus --warmup"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_knudsen"));
        cmd.args(&args);
        if args[0] != "check" {
            cmd.arg("--out").arg(&out);
        }
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(named) && !err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: output written");
    }
}

#[test]
fn check_ends_quietly_when_its_reader_goes() {
    // `knudsen check CASE | head -1`: the reader closes before check prints; without the
    // default SIGPIPE disposition (src/main.rs) `println!` panicked on the closed pipe.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["check", concat!(env!("CARGO_MANIFEST_DIR"), "/configs/cube-ma2-kn1.json")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_body_continued_across_a_periodic_face_is_accepted() {
    // The same body split in two boxes at the wrap (x in [0.75, 1] and [0, 0.25]): no gas
    // cell meets it across the wrap. Also along z, the body spanning the whole axis.
    let mut v = cavity_json(4, 16, 4.0, 0.1);
    for f in ["x_min", "x_max", "z_min", "z_max"] {
        v["boundaries"][f] = serde_json::json!({"type": "periodic"});
    }
    v["bodies"] = serde_json::json!([
        {"name": "right", "min": [0.75, 0.25, 0.0], "max": [1.0, 0.75, 1.0], "temperature": 1.0},
        {"name": "left", "min": [0.0, 0.25, 0.0], "max": [0.25, 0.75, 1.0], "temperature": 1.0}
    ]);
    config(&v);
    // Cross-sections that differ across the wrap: refused.
    v["bodies"][1]["max"] = serde_json::json!([0.25, 0.5, 1.0]);
    let err = Config::from_json(&v.to_string()).unwrap_err().to_string();
    assert!(err.contains("periodic face x_"), "{err}");
}
