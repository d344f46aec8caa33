//! Loading a case for `run` and `check`: the file, the command-line overrides, and the
//! host-memory check that runs before anything is allocated.

use super::args::Overrides;
use super::failure::Failure;
use knudsen::config::Config;
use std::path::Path;

/// Load and validate the case, applying the command-line overrides.
pub fn load(path: &Path, o: Overrides) -> Result<Config, Failure> {
    let mut cfg = Config::from_file(path)?;
    cfg.solver.memory_budget_mib = o.memory_budget_mib.or(cfg.solver.memory_budget_mib);
    cfg.solver.max_iterations = o.max_iterations.unwrap_or(cfg.solver.max_iterations);
    cfg.solver.tolerance = o.tolerance.unwrap_or(cfg.solver.tolerance);
    cfg.solver.acceleration = o.acceleration.unwrap_or(cfg.solver.acceleration);
    cfg.solver.scheme = o.scheme.unwrap_or(cfg.solver.scheme);
    cfg.solver.precision = o.precision.unwrap_or(cfg.solver.precision);
    cfg.validate().map_err(|mut e| {
        // Name the option when the bad value came from the command line.
        let flag = match e.key.as_str() {
            "solver.memory_budget_mib" if o.memory_budget_mib.is_some() => Some("--memory-budget-mib"),
            "solver.max_iterations" if o.max_iterations.is_some() => Some("--max-iterations"),
            "solver.tolerance" if o.tolerance.is_some() => Some("--tolerance"),
            "solver.precision" if o.precision.is_some() => Some("--precision"),
            _ => None,
        };
        if let Some(f) = flag {
            e.key = f.to_string();
        }
        e
    })?;
    Ok(cfg)
}

/// Refuse a case whose host fields cannot fit the memory available now. `gpu_solve`: the
/// run asked for a GPU backend, where GSIS keeps GMRES's vectors on the device (the
/// synthetic solve falls back to the host only when the device fails it).
pub fn check_host_memory(cfg: &Config, gpu_solve: bool) -> Result<(), Failure> {
    let f32_tables = cfg.solver.precision == knudsen::config::Precision::F32;
    let mut need = knudsen::plan::host_bytes(cfg.cell_counts(), cfg.velocity.points, f32_tables);
    if cfg.solver.acceleration.synthetic() {
        need += if gpu_solve && std::env::var("KNUDSEN_GSIS_DEVICE").map_or(true, |v| v != "host") {
            knudsen::plan::synthetic_host_bytes_beside_device(cfg.cell_counts())
        } else {
            knudsen::plan::synthetic_bytes(cfg.cell_counts())
        };
    }
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).map(|kib| kib * 1024))
    });
    match available {
        Some(avail) if need > avail => Err(Failure::BadInput(format!(
            "config error: `grid`/`velocity`: the case needs {:.1} GiB of host memory for its fields; {:.1} GiB are available",
            need as f64 / 1073741824.0,
            avail as f64 / 1073741824.0
        ))),
        _ => Ok(()),
    }
}

pub fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}
