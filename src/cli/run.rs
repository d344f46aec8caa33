//! `knudsen run CASE`: load, plan, solve, write.

use super::args::Overrides;
use super::coarse::{coarse_start, compile_synthetic_as_the_device_opens, Share};
use super::failure::Failure;
use super::group::{Group, Prepared};
use super::load::{affordable_acceleration, check_host_memory, load};
use super::out_dir::{missing_dirs, output_dir, probe_output_dir, remove_made_dirs};
use super::progress::Progress;
use super::resume::{load_restart, stop_on_signals, Resume};
use super::run_report::{interrupted, log_case, log_ending};
use super::LOG;
use knudsen::backend::{self, BackendChoice};
use knudsen::config::{Config, SolverConfig};
use knudsen::output::{write_all, Summary, SummaryInput};
use knudsen::problem::Problem;
use knudsen::solver::Solver;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub fn run(
    path: &Path,
    choice: BackendChoice,
    out: Option<PathBuf>,
    threads: Option<usize>,
    resume: Resume,
    overrides: Overrides,
) -> Result<(), Failure> {
    let prepare = || prepare(path, choice, out, threads, overrides);
    // Before the case is read, so that the processes of a job say a case's error once.
    #[cfg(feature = "mpi")]
    if let Some(m) = knudsen::parallel::mpi::Mpi::init_if_launched().map_err(Failure::Run)?.filter(|m| m.ranks > 1) {
        let solve = |cfg: &Config, dir: &Path, again: &str, group: Group<'_>| {
            solve(path, cfg, choice, dir, &resume, again, group)
        };
        return super::run_mpi::run_on_ranks(&m, prepare, solve, &resume);
    }
    #[cfg(not(feature = "mpi"))]
    if let Some(n) = knudsen::parallel::launched_processes().filter(|&n| n > 1) {
        return Err(Failure::BadInput(format!(
            "started as one of {n} MPI processes, but this knudsen was built without the `mpi` feature: each would run the whole case (build with --features mpi; docs/parallel.md)"
        )));
    }
    let Prepared { cfg, dir, made, again } = prepare()?;
    let solved = solve(
        path,
        &cfg,
        choice,
        &dir,
        &resume,
        &again,
        Group { rank: 0, ranks: 1, reduce: None, more: None, agree: None },
    );
    if solved.is_err() {
        remove_made_dirs(&made);
    }
    solved
}

/// What every process does before the solve: the case read, the options checked, the
/// threads' pool built.
fn prepare(
    path: &Path,
    choice: BackendChoice,
    out: Option<PathBuf>,
    threads: Option<usize>,
    overrides: Overrides,
) -> Result<Prepared, Failure> {
    let cfg = load(path, overrides)?;
    let again = overrides.continue_args(choice, threads);
    let dir = output_dir(path, &cfg, out);
    if threads == Some(0) {
        return Err(Failure::BadInput("--threads must be at least 1".into()));
    }
    // Far more threads than CPUs slow every parallel pass by orders of magnitude (3000
    // threads on 2 CPUs: 195 s for an 8^3 sweep of 8 ms), and a signal then waits for it.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(n) = threads.filter(|&n| n > 4 * cpus) {
        log::warn!(target: LOG, "--threads {n} is more than four times this machine's {cpus} CPUs: each iteration will be far slower than with {cpus}");
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::BadInput(format!("output path {} exists and is not a directory", dir.display())));
    }
    // The solve runs on the main thread over rayon's global pool, whose workers live until
    // the process ends. A local pool would run it on a worker that exits when the pool is
    // dropped, racing the process's exit: with wgpu's GL backend that worker holds EGL
    // thread state, which libglvnd frees both at thread exit and at teardown. That race is
    // the likely cause of the "double free or corruption" abort seen in about one GL run in
    // ten (docs/reliability.md, "The GL backend").
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    pool.build_global().map_err(|e| Failure::Run(e.into()))?;
    // A run refused or stopped before it wrote anything leaves no directory it made: each
    // made directory goes only while empty, so results and checkpoints stay.
    let made = missing_dirs(&dir);
    Ok(Prepared { cfg, dir, made, again })
}

pub(super) fn solve(
    path: &Path,
    cfg: &Config,
    choice: BackendChoice,
    dir: &Path,
    resume: &Resume,
    again: &str,
    group: Group<'_>,
) -> Result<(), Failure> {
    let gpu_solve = matches!(choice, BackendChoice::Cuda | BackendChoice::Wgpu);
    let root = group.rank == 0;
    let affordable;
    // With several processes every one must make the same updates, and the memory each sees
    // may differ: there a process short of memory refuses (below) and ends them all.
    let cfg = match affordable_acceleration(cfg, gpu_solve) {
        (a, Some(why)) if group.ranks == 1 => {
            if root {
                log::warn!(target: LOG, "{why}");
            }
            affordable = Config { solver: SolverConfig { acceleration: a, ..cfg.solver.clone() }, ..cfg.clone() };
            &affordable
        }
        _ => cfg,
    };
    let checked = (|| {
        // Before the coarse start, whose levels would otherwise be the first to ask: there
        // each process of a job would say it alone.
        if choice == BackendChoice::Cuda {
            backend::cuda_available().map_err(|why| Failure::BadInput(format!("--backend cuda: {why}")))?;
        }
        check_host_memory(cfg, gpu_solve, group.ranks)?;
        let mut problem = Problem::new(cfg);
        if group.ranks > 1 {
            problem.vgrid = knudsen::parallel::share_velocities(&problem.vgrid, group.rank, group.ranks)
                .map_err(Failure::BadInput)?;
        }
        let problem = Arc::new(problem);
        let restart = match &resume.from {
            Some(r) => Some(load_restart(r, &problem, resume.force)?),
            None => None,
        };
        Ok((problem, restart))
    })();
    let (checked, failure) = match checked {
        Ok(v) => (Some(v), Ok(())),
        Err(f) => (None, Err(f)),
    };
    match group.agree {
        Some(agree) => agree(failure)?,
        None => failure?,
    }
    let (problem, restart) = checked.expect("a failure returned above");
    if root {
        for w in cfg.warnings() {
            log::warn!(target: LOG, "{w}");
        }
    }
    // The iterations before this run's, which its iteration limit does not count.
    let done_before = restart.as_ref().map_or(0, |r| r.history.len());
    let stop = stop_on_signals().map_err(Failure::Run)?;
    // Before the case's backend, whose memory the coarse levels' then no longer share; and
    // after making sure the results can be written, which the coarse levels' time would
    // otherwise precede.
    let mut coarse = None;
    let levels = knudsen::solver::coarse::levels(cfg);
    if restart.is_none() && levels.is_empty() && cfg.solver.coarse_grids > 0 && root {
        log::info!(target: LOG, "{}", knudsen::solver::coarse::NO_LEVEL);
    }
    if restart.is_none() && !levels.is_empty() {
        if root {
            probe_output_dir(dir).map_err(Failure::BadInput)?;
        }
        let share = Share { rank: group.rank, ranks: group.ranks, reduce: group.more };
        // An interrupt here ends the run with nothing written (`run` removes the directory).
        coarse = coarse_start(cfg, &problem, choice, &share, &stop)?;
    }
    let (restart, coarse) = match coarse {
        Some((first, report)) => (Some(first), Some(report)),
        None => (restart, None),
    };
    #[cfg(feature = "cuda-driver")]
    let _early = EarlySyntheticCompile::start(choice, cfg, problem.grid.cells());
    if coarse.is_none() {
        compile_synthetic_as_the_device_opens(cfg, &problem, choice);
    }
    let t_setup = std::time::Instant::now();
    let created = backend::create(choice, problem.clone(), cfg.solver.memory_budget_mib);
    let setup_seconds = t_setup.elapsed().as_secs_f64();
    let (backend, fallback) = created.map_err(Failure::of_backend)?;
    // The plan is checked; before the solve, make sure its results can be written.
    if root {
        probe_output_dir(dir).map_err(Failure::BadInput)?;
    }
    if let Some(why) = fallback {
        backend::warn_step_down(LOG, &why);
    }
    if root {
        log_case(path, cfg, &problem, &*backend);
    }
    if group.ranks > 1 {
        log::info!(
            target: LOG,
            "{} processes share the velocities; this one sweeps {} of {}",
            group.ranks,
            problem.vgrid.octant_members().iter().map(Vec::len).sum::<usize>(),
            problem.vgrid.len()
        );
    }

    // The ETA aims at the tolerance the stop will use: raised to this backend's f32 floor
    // where the case asks for less (with MPI processes of a higher floor, theirs: the ETA
    // then runs long).
    let tol = cfg.solver.tolerance.max(backend.residual_floor());
    let mut progress = root.then(|| Progress::new(cfg.solver.max_iterations, tol));
    let checkpoint = dir.join("checkpoint.h5");
    // Minutes beyond what a Duration holds (1e18, a way to ask for none) mean never.
    let every = Duration::try_from_secs_f64(cfg.solver.checkpoint_minutes * 60.0).unwrap_or(Duration::MAX);
    // The iteration of this run's last checkpoint, for the message of a run that fails later.
    let saved_after = std::cell::Cell::new(None);
    let mut solver = Solver::new(&problem, backend).with_stop(stop.clone());
    // The coarse start kept its device for the case's backend, and with it the synthetic
    // solve's kernels for the solver just set up (coarse.rs), or the case's backend kept its
    // own for the kernels compiled as it opened; nothing else takes them.
    knudsen::backend::wgpu::device::keep_devices(false);
    knudsen::backend::cuda_keep_context(false);
    if root {
        solver = solver.with_checkpoints(
            every,
            Box::new(|snapshot| {
                if saved_after.get().is_none() {
                    knudsen::output::make_dir(dir)?;
                    knudsen::output::remove_summary(dir)?;
                }
                knudsen::output::write_fields(&checkpoint, &problem, snapshot)?;
                saved_after.set(Some(snapshot.iterations()));
                log::debug!(target: LOG, "checkpoint after iteration {} in {}", snapshot.iterations(), checkpoint.display());
                Ok(())
            }),
        );
    }
    if let Some(reduce) = group.reduce {
        solver = solver.with_reduce(reduce);
    }
    if let Some(r) = restart {
        if coarse.is_none() {
            log::info!(target: LOG, "continuing after iteration {}", r.history.len());
        }
        solver = solver.with_restart(r);
    }
    let mut result = solver
        .run(|rec| {
            if let Some(p) = progress.as_mut() {
                p.observe(rec)
            }
        })
        .map_err(|e| {
            // Nothing of the failed run is written (its state is what failed); the last
            // checkpoint is what survives, and the user is told where.
            let kept = match saved_after.get() {
                Some(n) => format!("the checkpoint after iteration {n} is kept in {}", checkpoint.display()),
                None if root && checkpoint.exists() => {
                    format!("the earlier checkpoint in {} is kept", checkpoint.display())
                }
                None => "no checkpoint of this run was written".into(),
            };
            Failure::Run(e.context(format!("the run failed; {kept}")))
        })?;
    result.coarse_start = coarse;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some((s, w, detail)) = solver.reduce_seconds() {
        let n = result.history.len().max(1) as f64;
        log::info!(
            target: LOG,
            "sum over {} processes: {s:.3} s in all ({detail}), {:.4} s per iteration; waiting for the slowest before it {:.4} s per iteration",
            group.ranks,
            s / n,
            w / n
        );
    }
    if !root {
        return Ok(());
    }

    let mut summary = Summary::new(SummaryInput { problem: &problem, backend: &*solver.backend, result: &result });
    summary.setup_seconds = Some(setup_seconds);
    drop(solver);
    if result.interrupted {
        // The same state as fields.h5, under the name a killed run leaves too; before the
        // results, so that summary.json, written last, vouches for it as well.
        knudsen::output::make_dir(dir)?;
        knudsen::output::write_fields(&checkpoint, &problem, &result)?;
    }
    write_all(dir, &problem, &result, &summary)?;
    if result.interrupted {
        let code = stop.load(Ordering::SeqCst);
        let left = cfg.solver.max_iterations.saturating_sub(result.iterations() - done_before);
        return Err(interrupted(code, &result, left, cfg.solver.max_iterations, path, dir, again));
    }
    // fields.h5 now holds the final state; an older checkpoint would only mislead.
    if checkpoint.exists() {
        std::fs::remove_file(&checkpoint).map_err(|e| Failure::Run(e.into()))?;
    }
    log_ending(&result, summary.tolerance, dir);
    Ok(())
}

/// The synthetic solve's CUDA kernels compiled from before the backend is built
/// (`PtxJob::start_early`) where the run will want them; whatever the solver did not take is
/// joined when this is dropped, on every way out of [`solve`].
#[cfg(feature = "cuda-driver")]
struct EarlySyntheticCompile;

#[cfg(feature = "cuda-driver")]
impl EarlySyntheticCompile {
    /// `auto` tries CUDA first (`backend::create`), so it counts as CUDA where a driver is.
    fn start(choice: BackendChoice, cfg: &Config, cells: usize) -> Self {
        let wanted = matches!(choice, BackendChoice::Cuda | BackendChoice::Auto)
            && knudsen::solver::synthetic::solves_on_device(cfg.solver.acceleration, cells)
            && knudsen::backend::cuda::available().is_ok();
        if wanted {
            knudsen::solver::synthetic::cuda::PtxJob::start_early();
        }
        Self
    }
}

#[cfg(feature = "cuda-driver")]
impl Drop for EarlySyntheticCompile {
    fn drop(&mut self) {
        knudsen::solver::synthetic::cuda::PtxJob::discard_early();
    }
}
