//! What `knudsen run` tells its user around the solve: the case and plan before the first
//! iteration, and how the run ended (converged, stalled, stopped short, or interrupted with
//! the command that continues it).

use super::failure::Failure;
use super::load::mib;
use super::resume::{shell_word, signal_name};
use super::LOG;
use knudsen::backend::Backend;
use knudsen::config::Config;
use knudsen::problem::Problem;
use knudsen::solver::RunResult;
use std::path::Path;

/// The case and the plan, before the first iteration.
pub fn log_case(path: &Path, cfg: &Config, problem: &Problem, backend: &dyn Backend) {
    let plan = backend.plan_summary();
    if backend.residual_floor() > 0.0 {
        if let Some(n) = cfg.f32_floor_note() {
            log::warn!(target: LOG, "{n}");
        }
    }
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

/// The failure of a run stopped by the signal whose exit code is `code`, its results and
/// checkpoint written in `dir`: what it did and the command that continues it. `left` is
/// the iterations this run had left; `again`, the options the continued run must repeat.
pub fn interrupted(
    code: usize,
    result: &RunResult,
    left: usize,
    max_iterations: usize,
    path: &Path,
    dir: &Path,
    again: &str,
) -> Failure {
    // The continued run counts its own iterations: given those this run had left, it ends
    // where this run would have ended had it not been stopped.
    let limit = if left > 0 { format!(" --max-iterations {left}") } else { String::new() };
    let note = if left > 0 {
        String::new()
    } else {
        format!(" (its limit of {max_iterations} iterations was reached: --max-iterations N gives N more)")
    };
    Failure::Interrupted {
        code: code as u8,
        message: format!(
            "interrupted by {} after iteration {}; results (not converged) and checkpoint.h5 are in {}; continue with: knudsen run {}{}{limit} --restart {d} --out {d}{note}",
            signal_name(code),
            result.iterations(),
            dir.display(),
            shell_word(&path.display().to_string()),
            again,
            d = shell_word(&dir.display().to_string())
        ),
    }
}

/// How a run that was not interrupted ended, its results written in `dir`.
pub fn log_ending(result: &RunResult, tolerance: f64, dir: &Path) {
    if result.converged {
        match &result.coarse_start {
            Some(c) => log::info!(
                target: LOG,
                "converged in {} iterations after a coarse start ({:.2} s in all, {:.2} s of them the coarse levels' iterations, besides {:.2} s setting them up); results in {}",
                result.iterations(),
                result.seconds_in_all(),
                c.seconds,
                c.setup_seconds,
                dir.display()
            ),
            None => log::info!(
                target: LOG,
                "converged in {} iterations ({:.2} s); results in {}",
                result.iterations(),
                result.total_seconds,
                dir.display()
            ),
        }
    } else if let Some((lowest, at)) = result.stalled {
        log::warn!(
            target: LOG,
            "not converged: stalled at the f32 round-off floor; the residual stayed above its lowest, {lowest:.3e} at iteration {at}, for {} sweeps, above the tolerance {:.1e} (`solver.stall_sweeps`; docs/configs.md, \"The f32 floor\": `--precision f64` on `--backend cuda`, `--backend wgpu` (adapters with f64 shaders) or `--backend cpu` goes further); results written to {}",
            result.iterations() - at,
            tolerance,
            dir.display()
        );
    } else {
        log::warn!(
            target: LOG,
            "not converged: residual {:.3e} > tolerance {:.1e} after {} iterations; results written to {}",
            result.final_residual(),
            tolerance,
            result.iterations(),
            dir.display()
        );
    }
}
