//! `knudsen run CASE`: load, plan, solve, write.

use super::args::Overrides;
use super::failure::Failure;
use super::load::{check_host_memory, load, mib};
use super::out_dir::{output_dir, probe_output_dir};
use super::progress::Progress;
use super::LOG;
use knudsen::backend::{self, Backend, BackendChoice};
use knudsen::config::Config;
use knudsen::output::{write_all, Summary, SummaryInput};
use knudsen::problem::Problem;
use knudsen::solver::Solver;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn run(
    path: &Path,
    choice: BackendChoice,
    out: Option<PathBuf>,
    threads: Option<usize>,
    restart: Option<PathBuf>,
    overrides: Overrides,
) -> Result<(), Failure> {
    let cfg = load(path, overrides)?;
    let dir = output_dir(path, &cfg, out);
    if threads == Some(0) {
        return Err(Failure::BadInput("--threads must be at least 1".into()));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::BadInput(format!("output path {} exists and is not a directory", dir.display())));
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    let pool = pool.build().map_err(|e| Failure::Run(e.into()))?;
    pool.install(|| run_in_pool(path, &cfg, choice, &dir, restart.as_deref()))
}

fn run_in_pool(
    path: &Path,
    cfg: &Config,
    choice: BackendChoice,
    dir: &Path,
    restart: Option<&Path>,
) -> Result<(), Failure> {
    check_host_memory(cfg)?;
    for w in cfg.warnings() {
        log::warn!(target: LOG, "{w}");
    }
    let problem = Arc::new(Problem::new(cfg));
    let restart = match restart {
        Some(r) => Some(
            knudsen::output::read_restart(r, &problem)
                .map_err(|e| Failure::BadInput(format!("--restart {}: {e:#}", r.display())))?,
        ),
        None => None,
    };
    let (backend, fallback) = backend::create(choice, problem.clone(), cfg.solver.memory_budget_mib)
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    // The plan is checked; before the solve, make sure its results can be written.
    probe_output_dir(dir).map_err(Failure::BadInput)?;
    if let Some(why) = fallback {
        log::warn!(target: LOG, "{why}");
    }
    log_case(path, cfg, &problem, &*backend);

    let tol = cfg.solver.tolerance;
    let mut progress = Progress::new(cfg.solver.max_iterations, tol);
    let mut solver = Solver::new(&problem, backend);
    if let Some(r) = restart {
        log::info!(target: LOG, "continuing after iteration {}", r.history.len());
        solver = solver.with_restart(r);
    }
    let result = solver.run(|rec| progress.observe(rec))?;
    progress.finish();

    let summary = Summary::new(SummaryInput { problem: &problem, backend: &*solver.backend, result: &result });
    write_all(dir, &problem, &result, &summary)?;
    if result.converged {
        log::info!(target: LOG,
            "converged in {} iterations ({:.2} s); results in {}",
            result.iterations(),
            result.total_seconds,
            dir.display()
        );
    } else {
        log::warn!(target: LOG,
            "not converged: residual {:.3e} > tolerance {tol:.1e} after {} iterations; results written to {}",
            result.final_residual(),
            result.iterations(),
            dir.display()
        );
    }
    Ok(())
}

/// The case and the plan, before the first iteration.
fn log_case(path: &Path, cfg: &Config, problem: &Problem, backend: &dyn Backend) {
    let plan = backend.plan_summary();
    log::info!(target: LOG,
        "{}: {} cells x {} velocities = {:.3e} phase-space points; Kn = {:.4}, delta = {:.4}, Pr = {:.4}",
        path.display(),
        problem.grid.cells(),
        problem.vgrid.len(),
        problem.phase_points() as f64,
        cfg.kn(),
        cfg.delta(),
        cfg.gas.prandtl
    );
    log::info!(target: LOG,
        "backend {} on {}; {} batches of up to {} velocities, {} in flight, {:.1} MiB of distribution storage",
        backend.kind(),
        backend.device(),
        plan.batches,
        plan.max_batch,
        plan.in_flight,
        mib(plan.distribution_bytes)
    );
}
