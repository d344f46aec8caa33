//! The `KNUDSEN_*` environment switches (docs/performance.md, "Profiling switches"), checked
//! once as a command starts. The code that reads a switch falls back to its default on a
//! value it cannot use, so a mistyped value would otherwise measure the default under the
//! switch's name; here it is refused before anything runs (exit 2), and a `KNUDSEN_*` name
//! that is no switch (a misspelt one) is warned about.

use super::failure::Failure;

/// What a switch accepts.
enum Accepts {
    /// One of these words.
    Words(&'static [&'static str]),
    /// A whole number in this range.
    Count(usize, usize),
    /// A finite number above the first bound (or at it, where the flag says so) and below the
    /// second.
    Number { above: f64, or_equal: bool, below: f64 },
    /// Anything (a path, or a value the plan itself checks with its own message).
    Any,
}

use Accepts::*;

const POSITIVE: Accepts = Number { above: 0.0, or_equal: false, below: f64::INFINITY };

/// Every switch the code reads, with what it accepts. Keep in sync with the `env::var`
/// reads named here.
const SWITCHES: &[(&str, Accepts)] = &[
    ("KNUDSEN_CELL_RECORDS", Words(&["host", "device", "device-f32"])), // backend/gpu_io.rs
    ("KNUDSEN_FUSED_LEVELS", Words(&["four", "full", "first", "one"])), // backend/wgpu/specialise.rs
    ("KNUDSEN_STAGES", Words(&["all", "sweep", "moment"])),             // backend/wgpu/build.rs
    ("KNUDSEN_SLICE_BINDINGS", Count(1, usize::MAX)),                   // backend/wgpu/group.rs
    ("KNUDSEN_MAX_SLICE_BINDING_MIB", POSITIVE),                        // backend/wgpu/schedule.rs
    ("KNUDSEN_SHADER_CHECKS", Words(&["0", "1"])),                      // backend/wgpu/kernels.rs
    ("KNUDSEN_FUSED_TILE", Any),                                        // backend/fused.rs: the plan says why
    ("KNUDSEN_GAUSS_TABLES", Words(&["0", "1"])),                       // backend/cpu/mod.rs
    ("KNUDSEN_FUSED_MOMENTS", Words(&["split", "cell"])),               // backend/fused.rs
    ("KNUDSEN_SWEEP", Words(&["fused", "slices"])),                     // backend/fused.rs
    ("KNUDSEN_FUSED_MIN_BLOCKS", Count(1, 16)),                         // backend/fused.rs
    ("KNUDSEN_SLICE_ROWS", Words(&["1", "2", "4", "8", "16", "32"])),   // backend/slice_rows.rs
    ("KNUDSEN_KERNEL_CACHE", Any),                                      // backend/cuda/kernel_cache.rs
    ("KNUDSEN_MPI_SUM", Words(&["collective", "shared"])),              // parallel/mpi.rs
    ("KNUDSEN_GSIS_TRIAL_THREADS", Count(1, usize::MAX)),               // solver/synthetic/auto.rs
    ("KNUDSEN_GSIS_DEVICE", Words(&["host", "device"])),                // solver/synthetic/placement.rs
    ("KNUDSEN_GSIS_REBUILD_DRIFT", Number { above: 0.0, or_equal: true, below: f64::INFINITY }), // synthetic/build.rs
    ("KNUDSEN_GSIS_SMOOTHER", Words(&["jacobi", "lines"])),             // solver/synthetic/mod.rs
    // A relative tolerance: 1 or more would stop the solve before it starts.
    ("KNUDSEN_GSIS_INNER_TOLERANCE", Number { above: 0.0, or_equal: false, below: 1.0 }), // synthetic/mod.rs
    ("KNUDSEN_GSIS_CLOSED_SHIFT", POSITIVE), // solver/synthetic/operator.rs
    ("KNUDSEN_PTX_DUMP", Any),               // cli/nvrtc.rs
    ("KNUDSEN_PYTHON", Any),                 // the tests' Python (tests/common)
    ("KNUDSEN_COMMIT", Any),                 // build.rs's, which cargo also sets where it runs tests
];

/// Why `value` is not what `accepts` takes, if it is not.
fn refusal(accepts: &Accepts, value: &str) -> Option<String> {
    match accepts {
        Words(w) if !w.contains(&value) => Some(format!("expected one of {}", w.join(", "))),
        Count(lo, hi) => match value.parse::<usize>() {
            Ok(n) if (*lo..=*hi).contains(&n) => None,
            _ if *hi == usize::MAX => Some(format!("expected a whole number of at least {lo}")),
            _ => Some(format!("expected a whole number from {lo} to {hi}")),
        },
        Number { above, or_equal, below } => match value.parse::<f64>() {
            Ok(x) if x.is_finite() && (x > *above || (*or_equal && x == *above)) && x < *below => None,
            _ => {
                let low = if *or_equal { format!("at least {above}") } else { format!("above {above}") };
                let high = if below.is_finite() { format!(" and below {below}") } else { String::new() };
                Some(format!("expected a finite number {low}{high}"))
            }
        },
        _ => None,
    }
}

/// Refuse a switch set to a value its code would not use; warn about `KNUDSEN_*` names that
/// are no switch.
pub fn check_switches() -> Result<(), Failure> {
    check_in(std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned()))))
}

fn check_in(vars: impl Iterator<Item = (String, String)>) -> Result<(), Failure> {
    for (name, value) in vars.filter(|(k, _)| k.starts_with("KNUDSEN_")) {
        match SWITCHES.iter().find(|(n, _)| *n == name) {
            Some((_, accepts)) => {
                if let Some(why) = refusal(accepts, &value) {
                    return Err(Failure::BadInput(format!(
                        "{name}={value}: {why} (docs/performance.md, \"Profiling switches\")"
                    )));
                }
            }
            None => log::warn!(
                "{name} is set but is no knudsen switch; ignored (docs/performance.md, \"Profiling switches\")"
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, value: &str) -> Result<(), String> {
        check_in(std::iter::once((name.to_string(), value.to_string()))).map_err(|f| f.message())
    }

    #[test]
    fn values_the_code_reads_pass_and_others_are_refused_by_name() {
        for (n, v) in [
            ("KNUDSEN_GSIS_INNER_TOLERANCE", "1e-4"),
            ("KNUDSEN_GSIS_REBUILD_DRIFT", "0"),
            ("KNUDSEN_FUSED_MIN_BLOCKS", "16"),
            ("KNUDSEN_SWEEP", "slices"),
            ("KNUDSEN_FUSED_TILE", "whatever: the plan refuses it"),
            ("KNUDSEN_NOT_A_SWITCH", "x"),
        ] {
            assert!(check(n, v).is_ok(), "{n}={v}");
        }
        for (n, v, says) in [
            ("KNUDSEN_GSIS_INNER_TOLERANCE", "abc", "above 0 and below 1"),
            ("KNUDSEN_GSIS_INNER_TOLERANCE", "1", "below 1"),
            ("KNUDSEN_GSIS_INNER_TOLERANCE", "NaN", "finite"),
            ("KNUDSEN_GSIS_REBUILD_DRIFT", "-0.1", "at least 0"),
            ("KNUDSEN_FUSED_MIN_BLOCKS", "17", "from 1 to 16"),
            ("KNUDSEN_SLICE_BINDINGS", "0", "at least 1"),
            ("KNUDSEN_GSIS_SMOOTHER", "Jacobi", "jacobi, lines"),
        ] {
            let e = check(n, v).expect_err(&format!("{n}={v} passed"));
            assert!(e.contains(&format!("{n}={v}")) && e.contains(says), "{e}");
        }
    }

    #[test]
    fn every_switch_the_sources_read_is_listed() {
        // A switch added to the code without a line here would pass unchecked and be warned
        // about as unknown: every `KNUDSEN_` name in an `env::var` read must be in SWITCHES.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut read = std::collections::BTreeSet::new();
        let mut stack = vec![src];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap().map(Result::unwrap) {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for part in text.split("env::var").skip(1) {
                        let arg = part.strip_prefix("(\"").or_else(|| part.strip_prefix("_os(\""));
                        if let Some(name) = arg.and_then(|a| a.split('"').next()).filter(|n| n.starts_with("KNUDSEN_"))
                        {
                            read.insert(name.to_string());
                        }
                    }
                }
            }
        }
        assert!(read.len() >= 15, "{read:?}");
        for name in &read {
            assert!(SWITCHES.iter().any(|(n, _)| n == name), "{name} is read but not checked");
        }
    }
}
