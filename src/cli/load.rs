//! Loading a case for `run` and `check`: the file, the command-line overrides, and the
//! host-memory check that runs before anything is allocated.

use super::args::Overrides;
use super::failure::Failure;
use knudsen::config::{Acceleration, Config};
use knudsen::plan::available_host_bytes;
use std::path::Path;

/// Load and validate the case, applying the command-line overrides.
pub fn load(path: &Path, o: Overrides) -> Result<Config, Failure> {
    let mut cfg = Config::from_file(path)?;
    cfg.solver.memory_budget_mib = o.memory_budget_mib.or(cfg.solver.memory_budget_mib);
    cfg.solver.max_iterations = o.max_iterations.unwrap_or(cfg.solver.max_iterations);
    cfg.solver.tolerance = o.tolerance.unwrap_or(cfg.solver.tolerance);
    cfg.solver.acceleration = o.acceleration.unwrap_or(cfg.solver.acceleration);
    cfg.solver.scheme = o.scheme.unwrap_or(cfg.solver.scheme);
    cfg.solver.coarse_grids = o.coarse_grids.unwrap_or(cfg.solver.coarse_grids);
    cfg.solver.precision = o.precision.or(cfg.solver.precision);
    cfg.validate().map_err(|mut e| {
        // Name the option when the bad value came from the command line.
        let flag = match e.key.as_str() {
            "solver.memory_budget_mib" if o.memory_budget_mib.is_some() => Some("--memory-budget-mib"),
            "solver.max_iterations" if o.max_iterations.is_some() => Some("--max-iterations"),
            "solver.tolerance" if o.tolerance.is_some() => Some("--tolerance"),
            "solver.precision" if o.precision.is_some() => Some("--precision"),
            "solver.coarse_grids" if o.coarse_grids.is_some() => Some("--coarse-grids"),
            _ => None,
        };
        if let Some(f) = flag {
            e.key = f.to_string();
        }
        e
    })?;
    Ok(cfg)
}

/// Host bytes the case needs: its fields, and the synthetic solve's where `synthetic`.
fn host_need(cfg: &Config, gpu_solve: bool, synthetic: bool) -> u64 {
    let f32_tables = cfg.solver.precision == Some(knudsen::config::Precision::F32);
    let mut need = knudsen::plan::host_bytes(cfg.cell_counts(), cfg.velocity.points, f32_tables);
    if gpu_solve {
        need += knudsen::plan::gpu_host_buffer_bytes(cfg.cell_counts(), cfg.solver.names_f64());
    }
    if synthetic {
        need += if gpu_solve && std::env::var("KNUDSEN_GSIS_DEVICE").map_or(true, |v| v != "host") {
            knudsen::plan::synthetic_host_bytes_beside_device(cfg.cell_counts())
        } else {
            knudsen::plan::synthetic_bytes(cfg.cell_counts())
        };
    }
    need
}

/// The acceleration the run can afford: `auto` becomes source iteration, with a warning,
/// where the synthetic solve's host memory does not fit beside the fields but the fields
/// alone do (a solve that cannot be made cannot pay). `gsis`, asked for by name, is left to
/// [`check_host_memory`] to refuse.
pub fn affordable_acceleration(cfg: &Config, gpu_solve: bool) -> (Acceleration, Option<String>) {
    affordable_with(cfg, gpu_solve, available_host_bytes())
}

fn affordable_with(cfg: &Config, gpu_solve: bool, available: Option<u64>) -> (Acceleration, Option<String>) {
    let a = cfg.solver.acceleration;
    match available {
        Some(avail)
            if a == Acceleration::Auto
                && host_need(cfg, gpu_solve, true) > avail
                && host_need(cfg, gpu_solve, false) <= avail =>
        {
            let why = format!(
                "solver.acceleration = \"auto\": the synthetic solve would need {:.1} GiB of host memory beside the fields' {:.1} GiB, and {:.1} GiB are available; running source iteration (\"none\")",
                (host_need(cfg, gpu_solve, true) - host_need(cfg, gpu_solve, false)) as f64 / 1073741824.0,
                host_need(cfg, gpu_solve, false) as f64 / 1073741824.0,
                avail as f64 / 1073741824.0
            );
            (Acceleration::None, Some(why))
        }
        _ => (a, None),
    }
}

/// Refuse a case whose host fields cannot fit the memory available now. `gpu_solve`: the
/// run asked for a GPU backend, where GSIS keeps GMRES's vectors on the device (the
/// synthetic solve falls back to the host only when the device fails it).
pub fn check_host_memory(cfg: &Config, gpu_solve: bool, processes: usize) -> Result<(), Failure> {
    host_memory_refusal_now(cfg, gpu_solve, processes).map_or(Ok(()), |why| Err(Failure::BadInput(why)))
}

/// `knudsen check`'s view of the host memory: the case refused only where no backend would
/// run it (the CPU backend keeps the synthetic solve on the host, a GPU backend keeps host
/// copies of its buffers: either may need more), with notes for a backend that would refuse
/// it or fall back to source iteration (the same rules as `run`'s). Returns the case as a
/// GPU run would make it (`auto` may become `none`), which `check` plans.
pub fn host_memory_for_check(cfg: &Config, available: Option<u64>) -> Result<(Config, Vec<String>), String> {
    let mut notes = Vec::new();
    let mut gpu = cfg.clone();
    if let (a, Some(why)) = affordable_with(cfg, true, available) {
        notes.push(why);
        gpu.solver.acceleration = a;
    }
    let mut cpu = cfg.clone();
    let cpu_note = match affordable_with(cfg, false, available) {
        (a, Some(why)) => {
            cpu.solver.acceleration = a;
            Some(format!("with --backend cpu, {why}"))
        }
        (_, None) => None,
    };
    match (host_memory_refusal(&gpu, true, 1, available), host_memory_refusal(&cpu, false, 1, available)) {
        (Some(why), Some(_)) => return Err(why),
        (Some(why), None) => notes.push(format!("`run` on a GPU backend would refuse the case: {why}")),
        (None, Some(why)) => notes.push(format!("`run --backend cpu` would refuse the case: {why}")),
        (None, None) => {}
    }
    notes.extend(cpu_note);
    Ok((gpu, notes))
}

/// Why [`check_host_memory`] would refuse the case with the memory available now, if it would.
pub fn host_memory_refusal_now(cfg: &Config, gpu_solve: bool, processes: usize) -> Option<String> {
    host_memory_refusal(cfg, gpu_solve, processes, available_host_bytes())
}

/// Why the case does not fit `available` host bytes, naming what to change: the synthetic
/// solve (`solver.acceleration`) where the fields alone would fit, else the grids.
/// With several `processes`, `"auto"` makes the solve as `"gsis"` does (`run`), so only
/// `"none"` is offered.
fn host_memory_refusal(cfg: &Config, gpu_solve: bool, processes: usize, available: Option<u64>) -> Option<String> {
    let gib = |b: u64| b as f64 / 1073741824.0;
    let fields = host_need(cfg, gpu_solve, false);
    let need = host_need(cfg, gpu_solve, cfg.solver.acceleration.synthetic());
    let avail = available.filter(|&a| need > a)?;
    Some(if fields <= avail {
        format!(
            "config error: `solver.acceleration`: \"{}\" needs {:.1} GiB of host memory for the synthetic solve beside the fields' {:.1} GiB, and {:.1} GiB are available; use {}",
            cfg.solver.acceleration.name(),
            gib(need - fields),
            gib(fields),
            gib(avail),
            if processes > 1 {
                "\"none\" (with several processes \"auto\" solves after every sweep too)"
            } else {
                "\"auto\" (source iteration where the solve does not fit) or \"none\""
            }
        )
    } else {
        format!(
            "config error: `grid`/`velocity`: the case needs {:.1} GiB of host memory for its fields; {:.1} GiB are available",
            gib(fields),
            gib(avail)
        )
    })
}

pub fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_runs_source_iteration_where_the_solve_does_not_fit() {
        let mut cfg = Config::from_json(include_str!("../../configs/cavity-quick.json")).unwrap();
        let (fields, all) = (host_need(&cfg, false, false), host_need(&cfg, false, true));
        assert!(all > fields);
        cfg.solver.acceleration = Acceleration::Auto;
        assert_eq!(affordable_with(&cfg, false, Some(all)), (Acceleration::Auto, None));
        let (a, why) = affordable_with(&cfg, false, Some(all - 1));
        assert_eq!(a, Acceleration::None);
        assert!(why.unwrap().contains("running source iteration"));
        // Too little even for the fields: left to check_host_memory to refuse.
        assert_eq!(affordable_with(&cfg, false, Some(fields - 1)).0, Acceleration::Auto);
        // GSIS named in the case is never swapped; it is refused, naming the key.
        cfg.solver.acceleration = Acceleration::Gsis;
        assert_eq!(affordable_with(&cfg, false, Some(all - 1)), (Acceleration::Gsis, None));
        let why = host_memory_refusal(&cfg, false, 1, Some(all - 1)).unwrap();
        assert!(why.contains("`solver.acceleration`") && why.contains("\"auto\" (source"), "{why}");
        // With several processes "auto" solves as "gsis": only "none" is offered.
        cfg.solver.acceleration = Acceleration::Auto;
        let why = host_memory_refusal(&cfg, false, 2, Some(all - 1)).unwrap();
        assert!(why.contains("use \"none\"") && !why.contains("\"auto\" (source"), "{why}");
        assert!(host_memory_refusal(&cfg, false, 1, Some(fields - 1)).unwrap().contains("`grid`/`velocity`"));
        assert!(host_memory_refusal(&cfg, false, 1, Some(all)).is_none());
    }

    #[test]
    fn check_refuses_only_what_no_backend_would_run() {
        // Without a synthetic solve a GPU run needs more host memory than a CPU run (host
        // copies of its buffers): between the two, `check` once refused a case `run --backend
        // cpu` takes.
        let mut cfg = Config::from_json(include_str!("../../configs/cavity-quick.json")).unwrap();
        cfg.solver.acceleration = Acceleration::None;
        let (cpu, gpu) = (host_need(&cfg, false, false), host_need(&cfg, true, false));
        assert!(gpu > cpu, "{gpu} {cpu}");
        let (_, notes) = host_memory_for_check(&cfg, Some(cpu)).unwrap();
        assert!(notes.len() == 1 && notes[0].starts_with("`run` on a GPU backend would refuse"), "{notes:?}");
        assert!(host_memory_for_check(&cfg, Some(gpu)).unwrap().1.is_empty());
        let why = host_memory_for_check(&cfg, Some(cpu - 1)).unwrap_err();
        assert!(why.contains("`grid`/`velocity`"), "{why}");
        // GSIS named: the CPU's host solve needs more than a GPU run with its solve on the
        // device, so the note is the CPU's.
        cfg.solver.acceleration = Acceleration::Gsis;
        let (cpu, gpu) = (host_need(&cfg, false, true), host_need(&cfg, true, true));
        assert!(cpu > gpu, "{gpu} {cpu}");
        let (_, notes) = host_memory_for_check(&cfg, Some(gpu)).unwrap();
        assert!(notes.len() == 1 && notes[0].starts_with("`run --backend cpu` would refuse"), "{notes:?}");
    }
}
