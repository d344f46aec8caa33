//! `knudsen run`'s coarse start (`solver.coarse_grids`, `knudsen::solver::coarse`): the coarse
//! levels built as the case's own problem and backend are, run before the case's backend
//! exists, so that their device memory is free again when it is allocated.

use super::failure::Failure;
use super::resume::signal_name;
use knudsen::backend::{self, BackendChoice};
use knudsen::config::{Acceleration, Config};
use knudsen::grid::VelocityGrid;
use knudsen::parallel::Reduce;
use knudsen::problem::Problem;
use knudsen::solver::coarse::{self, CoarseStart, Hooks, Outcome};
use knudsen::solver::Restart;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A fresh process sum for a coarse level (MPI).
pub type MakeReduce<'a> = &'a dyn Fn() -> anyhow::Result<Box<dyn Reduce + 'a>>;

/// This process's place among those sharing the velocities, as the coarse levels need it.
pub struct Share<'a> {
    pub rank: usize,
    pub ranks: usize,
    pub reduce: Option<MakeReduce<'a>>,
}

/// The coarse levels of `cfg` run on `choice`, and the first state they give the case's
/// `problem`; None where the case has none, or (one process) where a level failed, which is
/// logged. A signal during them ends the run with nothing written (there is nothing to
/// continue from).
pub fn coarse_start<'a>(
    cfg: &Config,
    problem: &Problem,
    choice: BackendChoice,
    share: &Share<'a>,
    stop: &Arc<AtomicUsize>,
) -> Result<Option<(Restart, CoarseStart)>, Failure> {
    let make_problem = |c: &Config| -> anyhow::Result<Problem> {
        let mut p = Problem::new(c);
        if share.ranks > 1 {
            p.vgrid = knudsen::parallel::share_velocities(&p.vgrid, share.rank, share.ranks)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        Ok(p)
    };
    // A coarse velocity grid may leave an octant fewer velocities than there are
    // processes: then no coarse start (every process takes the same decision).
    if share.ranks > 1 {
        for c in coarse::levels(cfg) {
            if let Err(why) =
                knudsen::parallel::share_velocities(&VelocityGrid::from_config(&c.velocity), share.rank, share.ranks)
            {
                if share.rank == 0 {
                    log::warn!("no coarse start: on its {}^3 velocities {why}", c.velocity.points);
                }
                return Ok(None);
            }
        }
    }
    let budget = cfg.solver.memory_budget_mib;
    // The case's backend is built after the levels: what it would refuse is asked first,
    // before the first level's backend (on CUDA in its set-up time, which then carries the
    // context's creation, as a plain run's set-up does), and on wgpu also once that backend
    // has chosen the adapter (which the case's then takes), so that no level sweeps for a
    // case that cannot run.
    // The levels' and the case's CUDA backends share one context (backend::cuda::plan).
    if matches!(choice, BackendChoice::Cuda | BackendChoice::Auto) {
        knudsen::backend::cuda_keep_context(true);
    }
    // Before the level for every named backend (the CPU's and wgpu's precision refusals
    // need no device), and for wgpu again once the level has chosen its adapter.
    let mut case_refused = None;
    let mut unchecked = [choice != BackendChoice::Auto, choice == BackendChoice::Wgpu];
    let mut check = |before_level: bool| -> anyhow::Result<()> {
        let pending = &mut unchecked[usize::from(!before_level)];
        if *pending {
            *pending = false;
            if let Err(e) = backend::check_case(choice, problem, budget) {
                let why = format!("{e:#}");
                case_refused = Some(e);
                anyhow::bail!("{why}");
            }
        }
        Ok(())
    };
    // With `auto`, a level's backend refused for the case's own reasons (a budget, a limit):
    // the case, larger, is refused too, with its own figures, once it is built.
    let level_refused = std::cell::Cell::new(false);
    let mut make_backend = |p: Arc<Problem>| {
        check(true)?;
        let (b, fallback) = backend::create(choice, p, budget).inspect_err(|e| {
            level_refused.set(knudsen::backend::fault::fault_kind(e).is_none());
        })?;
        if let Some(why) = fallback {
            backend::warn_step_down(super::LOG, &why);
        }
        check(false)?;
        // The case's wgpu backend will take this device: compile its fused sweep meanwhile.
        if let (Some((device, _, _)), Some(adapter)) =
            (b.wgpu_handles(), knudsen::backend::wgpu::device::kept_adapter())
        {
            let bytes = budget.map(|mib| (mib * 1048576.0) as u64);
            knudsen::backend::wgpu::prewarm::start(problem, bytes, &adapter, &device);
        }
        Ok(b)
    };
    let mut reduce = share.reduce.map(|make| move || make());
    let hooks = Hooks {
        problem: &make_problem,
        backend: &mut make_backend,
        reduce: reduce.as_mut().map(|r| r as &mut dyn FnMut() -> anyhow::Result<Box<dyn Reduce + 'a>>),
        stop: Some(stop.clone()),
    };
    // The case's own wgpu backend takes the last level's device (cleared in run.rs).
    knudsen::backend::wgpu::device::keep_devices(true);
    compile_synthetic_as_the_device_opens(cfg, problem, choice);
    let quiet = super::logger::Levels::quiet();
    let started = coarse::start(cfg, problem, hooks);
    drop(quiet);
    if let Some(e) = case_refused.take() {
        // The check opens the CUDA context: its driver errors are the machine's.
        return Err(Failure::of_backend(e));
    }
    let outcome = match started {
        Ok(o) => o,
        // One process: the case itself may still run from its initial state. Several: a
        // process that went on alone would wait for the others forever, so all end.
        Err(e) if share.ranks == 1 => {
            // A failed level may have left the kept device or context in error: the case
            // builds its own.
            knudsen::backend::cuda_keep_context(false);
            knudsen::backend::wgpu::device::keep_devices(false);
            // Only `auto` builds a level before asking anything of the case; a named backend
            // has passed the case's check, so its level's refusal is the level's own.
            if level_refused.get() && choice == BackendChoice::Auto {
                log::debug!("the coarse level's backend was refused ({e:#}); the case's is built next");
            } else {
                log::warn!("the coarse start failed ({e:#}); starting from the initial state instead");
            }
            None
        }
        Err(e) => return Err(Failure::Run(e.context("coarse start"))),
    };
    match outcome {
        None => Ok(None),
        Some(Outcome::Ready(first, report)) => Ok(Some((*first, report))),
        Some(Outcome::Interrupted(cells)) => {
            let code = stop.load(Ordering::SeqCst);
            Err(Failure::Interrupted {
                code: code as u8,
                message: format!(
                    "interrupted by {} during the coarse start ({} x {} x {} cells), before the case's first iteration: nothing written",
                    signal_name(code),
                    cells[0],
                    cells[1],
                    cells[2]
                ),
            })
        }
    }
}

/// Where the case's synthetic solve would run on a wgpu device: keep the next device this
/// thread opens, and start compiling the solve's kernels as it opens (they depend on the
/// device alone), beside the backend's own set-up: the coarse start's first level's, or the
/// case's where there is none (a restart). A solve's first update waited for them otherwise,
/// 0.5-0.8 s with a cold driver cache (`docs/performance.md`, "The synthetic kernels compiled
/// as the device opens"). `knudsen run` ends both once the case's solver is set up.
pub fn compile_synthetic_as_the_device_opens(cfg: &Config, problem: &Problem, choice: BackendChoice) {
    // An f64 sweep keeps its synthetic solve on the host (the wgpu device's is f32).
    let wgpu_solve = cfg.solver.acceleration != Acceleration::None
        && !cfg.solver.names_f64()
        && knudsen::solver::synthetic::solves_on_device(Acceleration::Auto, problem.grid.cells());
    if wgpu_solve && matches!(choice, BackendChoice::Wgpu | BackendChoice::Auto) {
        knudsen::backend::wgpu::device::keep_devices(true);
        knudsen::backend::wgpu::device::on_keeping_open(Some(std::rc::Rc::new(
            knudsen::solver::synthetic::wgpu::precompile,
        )));
    }
}
