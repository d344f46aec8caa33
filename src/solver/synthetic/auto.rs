//! `solver.acceleration: "auto"`: GSIS's correction where its measured cost pays, source
//! iteration's update elsewhere; [`super::ledger`] weighs them after every sweep.
//!
//! A solve's cost has to be measured before it can be weighed. With the sweep on a GPU and
//! the solve on the host, the host only waits during the sweep, so the first solve is made
//! there, on a thread of its own, while source updates go on. It is not free (the sweeps'
//! host side shares the cores), so it is made only where source iteration's measured rate
//! leaves enough sweeps for a solve to pay ([`MIN_SWEEPS_LEFT`]). Elsewhere the first
//! update is a solve, timed in line.

use super::ledger::{Ledger, Update};
use super::placement::{device_forced, host_solve, Device, DEVICE_MIN_CELLS};
use super::{inner_tolerance, krylov, linearisation, Base, Gsis, Hierarchy, Scratch};
use crate::backend::{SweepOutput, WgpuHandles};
use crate::config::Config;
use crate::problem::Problem;
use crate::solver::state::State;
use crate::solver::Sweep;
use std::thread::JoinHandle;

type Trial = JoinHandle<anyhow::Result<(Hierarchy, f64)>>;

pub(super) struct Auto {
    ledger: Ledger,
    /// The first solve is measured beside the sweeps (else in line).
    beside: bool,
    trial: Option<Trial>,
    /// The run's tolerance (as the backend's floor leaves it).
    tolerance: f64,
}

/// A solve is measured beside the sweeps only while source iteration, at its measured rate,
/// has more sweeps than this left: the measurement slows the GPU sweep's host side (by
/// 15-25% on cavity-quick, H100, while it runs), and a solve can save only part of the
/// sweeps left (a fifth to a half from Kn 1 up, where source iteration needs 15-20 sweeps in
/// all). The collision bound is not used here: on cube-quick it says ~60 sweeps where 17 are
/// needed. Where source iteration's early ratios flatter it (Kn 0.01), they still say
/// 40-50 sweeps, and a rate that slows later starts the measurement then.
pub const MIN_SWEEPS_LEFT: f64 = 20.0;

/// The least core-seconds a host solve takes per cell, build included. Measured: 31e-6 on
/// the 16^3 cavity (H100 host, 8 threads, build and solve), 9.4e-6 for GMRES alone on the
/// 64^3 cavity (2 cores); this floor lies 2.3 times below the least of them, so that a
/// solve judged unable to pay at it cannot pay at all.
pub const HOST_SOLVE_FLOOR_CORE_SECONDS_PER_CELL: f64 = 4e-6;

/// The least seconds a host solve of `cells` cells takes on `threads` threads.
fn solve_floor(cells: usize, threads: usize) -> f64 {
    HOST_SOLVE_FLOOR_CORE_SECONDS_PER_CELL * cells as f64 / threads as f64
}

/// Threads of the solve measured beside the sweeps: half the cores (the sweep's host side
/// keeps the rest), or `KNUDSEN_GSIS_TRIAL_THREADS`.
fn trial_threads() -> usize {
    std::env::var("KNUDSEN_GSIS_TRIAL_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(rayon::current_num_threads() / 2)
        .max(1)
}

/// Build the hierarchy and solve once, on a thread of its own; the seconds it took.
/// It owns what it needs (the problem is rebuilt from the config: the solver's borrow
/// cannot outlive the iteration that spawns it).
fn trial(config: Config, base: Vec<Base>, rhs: krylov::Vector) -> anyhow::Result<(Hierarchy, f64)> {
    let p = Problem::new(&config);
    let t = std::time::Instant::now();
    let h = Hierarchy::build(&p, base, true)?;
    host_solve(&h.mg, &rhs, inner_tolerance(&p), &krylov::Pool::default())?;
    Ok((h, t.elapsed().as_secs_f64()))
}

impl Gsis {
    /// GSIS that solves only where it pays. Fewer than `DEVICE_MIN_CELLS` cells are
    /// solved on the host with every backend (a first device solve there costs its
    /// start-up, tenths of a second, and the host's solve can be measured beside the sweep).
    /// Source iteration's rate is bounded by the collisions across the domain (`ledger`).
    pub fn auto(kind: &str, wgpu: Option<WgpuHandles>, p: &Problem, tolerance: f64) -> Self {
        let cells = p.grid.cells();
        let small = cells < DEVICE_MIN_CELLS && !device_forced();
        let mut g = if small { Self::default() } else { Self::for_backend(kind, wgpu, cells) };
        let beside = kind != "cpu" && matches!(g.device, Device::Host);
        let d = super::domain_delta(p);
        g.auto = Some(Auto { ledger: Ledger::new(d / (1.0 + d)), beside, trial: None, tolerance });
        g
    }

    /// Which update follows this sweep (always a solve without `auto`).
    pub(super) fn next_update(&mut self, p: &Problem, out: &SweepOutput, state: &State, sweep: Sweep) -> Update {
        self.solves[1] += 1;
        let Some(a) = &mut self.auto else { return Update::Solve };
        a.ledger.sweep(sweep.seconds, sweep.residual);
        if a.trial.as_ref().is_some_and(|t| t.is_finished()) {
            let joined = a.trial.take().expect("checked").join();
            match joined.unwrap_or_else(|_| Err(anyhow::anyhow!("its thread panicked"))) {
                Ok((h, seconds)) => {
                    log::info!(
                        "gsis auto: a synthetic solve took {seconds:.3} s beside the sweeps (a sweep {:.3} s)",
                        sweep.seconds
                    );
                    a.ledger.measured_solve(seconds);
                    if self.hierarchy.is_none() && self.pending.is_none() {
                        self.hierarchy = Some(h);
                        self.builds += 1;
                        self.generation += 1;
                    }
                }
                Err(e) => {
                    log::warn!("gsis auto: the solve measured beside the sweeps failed ({e:#}); the next is in line");
                    a.beside = false;
                }
            }
        }
        let update = a.ledger.choose(!a.beside);
        if update == Update::Source
            && a.beside
            && a.trial.is_none()
            && a.ledger.solve_seconds().is_none()
            && a.ledger.measured_sweeps_left(sweep.residual, a.tolerance).is_some_and(|n| n > MIN_SWEEPS_LEFT)
            && a.ledger.worth_measuring(solve_floor(p.grid.cells(), trial_threads()))
        {
            // Arrays of its own: the trial's thread keeps them.
            let mut w = Scratch::default();
            linearisation(p, out, state, &mut w);
            let (base, rhs) = (w.base, w.rhs);
            let config = p.config.clone();
            a.trial = Some(std::thread::spawn(move || {
                // A pool of its own, so that the source updates' parallel loops do not queue
                // behind the trial's; half the cores (the sweep's host side keeps the rest).
                let pool = rayon::ThreadPoolBuilder::new().num_threads(trial_threads()).build()?;
                pool.install(|| trial(config, base, rhs))
            }));
        }
        if a.ledger.current() != Some(update) {
            let why = match a.ledger.costs() {
                Some([g, s]) => format!("{g:.3} s per decade with solves, {s:.3} s without"),
                None => match a.ledger.solve_seconds() {
                    Some(tg) => format!("a solve {tg:.3} s, a sweep {:.3} s", sweep.seconds),
                    None if a.trial.is_some() || !a.beside => "the cost of a solve is being measured".into(),
                    None => match a.ledger.measured_sweeps_left(sweep.residual, a.tolerance) {
                        Some(n) if n <= MIN_SWEEPS_LEFT => format!(
                            "source iteration has about {n:.0} sweeps left, too few to measure a solve beside them"
                        ),
                        Some(_) => format!(
                            "source iteration's rate is too fast for a solve of at least {:.4} s to pay",
                            solve_floor(p.grid.cells(), trial_threads())
                        ),
                        None => "source iteration's rate is being measured".into(),
                    },
                },
            };
            let what = match update {
                Update::Solve => "synthetic solves",
                Update::Source => "source-iteration updates",
            };
            log::info!("gsis auto: {what} from this run's update {} ({why})", self.solves[1]);
        }
        update
    }

    /// Book an update of `seconds` (less any device start-up it included).
    pub(super) fn updated(&mut self, update: Update, seconds: f64, start_up: f64, sweep: Sweep) {
        if update == Update::Solve {
            self.solves[0] += 1;
        }
        if let Some(a) = &mut self.auto {
            a.ledger.update(update, (seconds - start_up).max(0.0), sweep.residual);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::Strategy;

    #[test]
    fn several_processes_solve_after_every_sweep() {
        // Small grids solve on the host on every backend; with the sweep on a GPU the first
        // solve is measured beside it.
        let small = Problem::new(&crate::config::walled_box([6, 5, 4], 10));
        let g = Gsis::auto("wgpu", None, &small, 1e-6);
        assert!(matches!(g.device, Device::Host) && g.auto.as_ref().is_some_and(|a| a.beside));
        assert!(!Gsis::auto("cpu", None, &small, 1e-6).auto.unwrap().beside);
        let mut g = g;
        g.fix_path();
        assert!(g.auto.is_none(), "a choice from the clock could differ between processes");
    }
}
