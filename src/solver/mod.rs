//! The iteration around a [`Backend`]. Each iteration runs these stages, each in its file:
//!
//! 1. **sweep** (the backend): every velocity with f^{S,n}, tau^n and the wall densities
//!    rho_w^n, giving raw moments, incident fluxes and exits;
//! 2. **mass rescale** (here): a closed domain's mass back to its initial value;
//! 3. **residual** ([`convergence`]): the change of density, momentum and energy;
//! 4. **macroscopic update** (a [`Strategy`]): the fields and sweep coefficients of the
//!    next sweep. [`source_iteration`] takes them from the sweep's moments; an
//!    acceleration scheme (a synthetic solve between two sweeps) is another `Strategy` in a
//!    file beside it;
//! 5. **boundaries** ([`state`]): rho_w^{n+1}, face densities and partner data from the
//!    incident fluxes, damped where they alternate;
//! 6. **stop** below the tolerance, at the iteration limit, or where f32 round-off holds
//!    the residual above the tolerance ([`convergence::stalled`]).
//!
//! [`state::State`] is everything carried from one iteration to the next, and
//! [`state::Restart`] what a run leaves to continue from. Between iterations the solver can
//! hand a snapshot to a checkpoint writer ([`Solver::with_checkpoints`]) and stop early
//! when asked to ([`Solver::with_stop`], set by a signal handler).

pub mod coarse;
pub mod convergence;
pub mod prolong;
mod run_result;
pub mod source_iteration;
pub mod state;
pub mod synthetic;

pub use convergence::{residuals, IterationRecord, MOMENTUM_FLOOR, RESIDUAL_NAMES};
pub use run_result::RunResult;
pub use state::Restart;

use crate::backend::{Backend, SweepInput, SweepOutput};
use crate::config::Acceleration;
use crate::model::raw;
use crate::problem::Problem;
use convergence::{conserved_from_raw, effective_tolerance, warn_if_raised};
use rayon::prelude::*;
use state::State;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What happens between two sweeps: the macroscopic fields and sweep coefficients of the
/// next sweep from this sweep's output. Boundary data, residuals and the stop are common to
/// every strategy and stay in the solver.
pub trait Strategy {
    /// The value of `solver.acceleration` that selects it.
    fn name(&self) -> &'static str;
    /// Update `state.fields` and `state.eq` of every fluid cell. A strategy that moves the
    /// fields away from the sweep's may also update the incident wall fluxes in `out` to
    /// match them (they set the next wall densities); it must leave them unchanged at its
    /// fixed point.
    /// `sweep`: how long the sweep took and the residual it left (a strategy may weigh its
    /// own cost against them).
    fn update_fields(
        &mut self,
        p: &Problem,
        out: &mut SweepOutput,
        state: &mut State,
        sweep: Sweep,
    ) -> anyhow::Result<()>;
    /// What of its own a continued run needs to take exactly the same path (5 values per
    /// cell), written with the restart data; `None` when it keeps nothing between iterations.
    fn saved(&self) -> Option<Vec<[f64; 5]>> {
        None
    }
    /// Take back what [`Strategy::saved`] gave, before the first iteration of a continued run.
    fn restore(&mut self, _saved: Vec<[f64; 5]>) {}
    /// Where its own solve last ran ("host", "cuda", "wgpu"); None for a strategy without one.
    fn solved_on(&self) -> Option<&'static str> {
        None
    }
    /// Take the same path on every process: no choice from the clock (MPI runs, where
    /// each process makes the update for itself).
    fn fix_path(&mut self) {}
    /// Synthetic solves made and iterations run; None for a strategy without them.
    fn solves(&self) -> Option<[usize; 2]> {
        None
    }
    /// Whether the last update moved the incident wall fluxes to predict its correction
    /// (GSIS's `walls::predict_incident`): the wall densities then follow the correction,
    /// which the wall-density damping must not hold back in an open domain
    /// ([`state::State::update_boundaries`]).
    fn predicted_walls(&self) -> bool {
        false
    }
}

/// The sweep just made, as a [`Strategy`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// Wall seconds of the sweep (with the processes' sum).
    pub seconds: f64,
    /// The largest relative change of the conserved variables it made.
    pub residual: f64,
}

/// Receives a snapshot of the run (a [`RunResult`] with `converged` false) to write.
pub type CheckpointWriter<'a> = Box<dyn FnMut(&RunResult) -> anyhow::Result<()> + 'a>;

pub struct Solver<'a> {
    pub problem: &'a Problem,
    pub backend: Box<dyn Backend + 'a>,
    strategy: Box<dyn Strategy + 'a>,
    restart: Option<Restart>,
    checkpoints: Option<(Duration, CheckpointWriter<'a>)>,
    /// Sums the sweep outputs of the processes that share the velocities (MPI ranks).
    reduce: Option<Box<dyn crate::parallel::Reduce + 'a>>,
    stop: Option<Arc<AtomicUsize>>,
}

impl<'a> Solver<'a> {
    /// A solver with the case's `solver.acceleration`.
    pub fn new(problem: &'a Problem, backend: Box<dyn Backend + 'a>) -> Self {
        let strategy: Box<dyn Strategy + 'a> = match problem.config.solver.acceleration {
            Acceleration::None => Box::new(source_iteration::SourceIteration),
            Acceleration::Gsis => {
                Box::new(synthetic::Gsis::for_backend(backend.kind(), backend.wgpu_handles(), problem.grid.cells()))
            }
            Acceleration::Auto => Box::new(synthetic::Gsis::auto(
                backend.kind(),
                backend.wgpu_handles(),
                problem,
                effective_tolerance(problem.config.solver.tolerance, backend.residual_floor()),
            )),
        };
        Self { problem, backend, strategy, restart: None, checkpoints: None, stop: None, reduce: None }
    }

    /// Hand a snapshot to `write` whenever `every` has passed since the last one (or the
    /// start), after a whole iteration.
    pub fn with_checkpoints(mut self, every: Duration, write: CheckpointWriter<'a>) -> Self {
        self.checkpoints = Some((every, write));
        self
    }

    /// Stop after the current iteration once `flag` is nonzero; the result is then
    /// marked `interrupted`.
    /// Sweep only this process's share of the velocities (`problem.vgrid.share`) and add up
    /// every process's sweep output with `reduce` before the host update.
    pub fn with_reduce(mut self, reduce: Box<dyn crate::parallel::Reduce + 'a>) -> Self {
        self.reduce = Some(reduce);
        self.strategy.fix_path();
        self
    }

    /// Seconds spent adding up the processes' outputs, and waiting for the slowest one
    /// first (None in a single process).
    pub fn reduce_seconds(&self) -> Option<(f64, f64, String)> {
        self.reduce.as_ref().map(|r| (r.clock().seconds, r.clock().waiting, r.clock().detail()))
    }

    pub fn with_stop(mut self, flag: Arc<AtomicUsize>) -> Self {
        self.stop = Some(flag);
        self
    }

    /// Continue from a previous run's state; `max_iterations` then counts the new
    /// iterations only.
    pub fn with_restart(mut self, r: Restart) -> Self {
        self.restart = Some(r);
        self
    }

    /// Iterate to `tolerance` or `max_iterations`; `observe` sees each iteration.
    pub fn run(&mut self, mut observe: impl FnMut(&IterationRecord)) -> anyhow::Result<RunResult> {
        let p = self.problem;
        let s = &p.config.solver;
        self.run_for(s.max_iterations, s.tolerance, &mut observe)
    }

    /// Iterate to `tolerance` (raised to the backends' round-off floor) or `max_iterations`;
    /// a `tolerance` of 0 runs all `max_iterations` (`knudsen bench`'s fixed count).
    pub fn run_for(
        &mut self,
        max_iterations: usize,
        tolerance: f64,
        observe: &mut dyn FnMut(&IterationRecord),
    ) -> anyhow::Result<RunResult> {
        let p = self.problem;
        // Every process stops by the same rules: the largest floor of their backends.
        let own_floor = self.backend.residual_floor();
        let floor = self.reduce.as_ref().map_or(own_floor, |r| r.largest(own_floor));
        // A tolerance of 0 asks for every sweep (`knudsen bench`'s fixed count), also past
        // the floor, where the residual no longer falls and a raised stop would end the run.
        let tolerance = if tolerance > 0.0 {
            warn_if_raised(tolerance, floor, own_floor, self.backend.kind());
            effective_tolerance(tolerance, floor)
        } else {
            0.0
        };
        let start = Instant::now();
        let (mut state, mut history) = match self.restart.take() {
            Some(mut r) => {
                let history = std::mem::take(&mut r.history);
                if let Some(saved) = r.strategy_state.take() {
                    self.strategy.restore(saved);
                }
                (State::restart(p, r), history)
            }
            None => (State::initial(p), Vec::new()),
        };
        state.host_eq = !self.backend.derives_coefficients();
        let elapsed0 = history.last().map_or(0.0, |h: &IterationRecord| h.elapsed);
        let volumes = p.grid.volumes();
        // The gas's mass: solid cells hold none (their moments are zero, so `mass_of` counts
        // the gas alone, and so must this).
        let solids = &p.bodies.solids;
        let mass0: f64 = volumes
            .iter()
            .enumerate()
            .filter(|(c, _)| !solids.is_solid(*c))
            .map(|(_, v)| v * p.initial_macro().rho)
            .sum();

        let mut out = SweepOutput::zeros(p);
        let relax = p.partner_relaxation();
        // The next iterate's conserved variables, swapped with the state's each iteration
        // (a fresh vector per iteration cost its page faults).
        let mut spare_conserved = state.conserved.clone();
        // The sweep's own incident fluxes and wall sums, kept while a synthetic correction
        // moves them to predict the next wall densities (walls::predict_incident): the loads,
        // mass fluxes and drag reported are the sweep's, measured with the densities it used;
        // and into the next iteration, for the checkpoint of a sweep that fails.
        let (mut sweep_incident, mut sweep_wall) = (out.incident.clone(), out.wall.clone());
        let (mut converged, mut interrupted, mut stalled) = (false, false, None);
        // The lowest residual so far and its iteration, over the history a continued run
        // brings too, so that it stops where the run never stopped would.
        let mut lowest = history
            .iter()
            .map(|h: &IterationRecord| (h.residual(), h.iteration))
            .fold((f64::INFINITY, 0usize), |m, h| if h.0 < m.0 { h } else { m });
        // The floor the rule is for is the one the synthetic correction raises; source
        // iteration's (f stored in f32, about 2e-6) lies below the stop, and near the
        // continuum its residual falls by a fraction of a percent a sweep, slowly enough
        // that round-off could hide the fall for a while.
        let stall_sweeps = if p.config.solver.acceleration.synthetic() { p.config.solver.stall_sweeps } else { 0 };
        let mut last_checkpoint = Instant::now();
        // The iteration the last checkpoint holds.
        let mut saved_at = None;
        let first = history.len() + 1;
        for iteration in first..first.saturating_add(max_iterations) {
            let t0 = Instant::now();
            let input = SweepInput {
                eq: &state.eq,
                fields: &state.fields,
                face_density: &state.face_density,
                wall_density: &state.wall_density,
                partner: &state.partner,
            };
            if let Err(e) = self.backend.sweep(&input, &mut out) {
                // The state is still the last whole iteration's, untouched by the failed
                // sweep: kept as a checkpoint where one is written and this run has made an
                // iteration since the last (the loads of an earlier one are not at hand).
                if iteration > first && saved_at != Some(iteration - 1) {
                    let last = SweepOutput { raw: Vec::new(), incident: sweep_incident, wall: sweep_wall, ..out };
                    let seconds = elapsed0 + start.elapsed().as_secs_f64();
                    if let Err(w) = self.checkpoint(&state, last, &history, seconds, tolerance) {
                        return Err(
                            e.context(format!("writing its last whole iteration as a checkpoint failed too: {w:#}"))
                        );
                    }
                }
                return Err(e);
            }
            // Every process stops after the same iteration: the largest request wins.
            let mut stop = self.stop.as_ref().map_or(0, |f| f.load(Ordering::SeqCst));
            if let Some(r) = &mut self.reduce {
                stop = r.reduce(&mut out, stop)?;
            }
            let t_sweep = t0.elapsed().as_secs_f64();
            let mut split = [0.0f64; 4];
            let mut lap = Instant::now();
            let mut mark = |k: usize| {
                split[k] = lap.elapsed().as_secs_f64();
                lap = Instant::now();
            };
            let factor = p.config.mass_rescale().then(|| mass0 / mass_of(&out, &volumes));
            if let Some(f) = factor.filter(|f| !f.is_finite()) {
                let what = format!("the mass rescale's factor is {f}");
                return Err(State::non_finite_sweep(p, iteration, self.backend.kind(), &out.raw, &what));
            }
            rescale_and_conserve(&mut out, factor, &mut spare_conserved);
            let res = residuals(&state.conserved, &spare_conserved, convergence::momentum_floor(floor));
            let residual = convergence::max_or_nan(&res);
            if !residual.is_finite() {
                let what = format!("residual is {residual}");
                return Err(State::non_finite_sweep(p, iteration, self.backend.kind(), &out.raw, &what));
            }
            std::mem::swap(&mut state.conserved, &mut spare_conserved);
            // The partner data's relaxation acts on the sweep's exits before a synthetic
            // correction moves them, so the move is taken whole. Not on a run's first sweep:
            // its partner data came from the initial state or a coarse level's start, not
            // from a sweep, and half of it would linger for sweeps.
            if let Some(theta) = relax.filter(|_| iteration > 1) {
                p.bounds.relax_exits(&mut out.exits, &state.partner, theta);
            }
            mark(0);
            let sweep = Sweep { seconds: t_sweep, residual };
            sweep_incident.clone_from(&out.incident);
            sweep_wall.clone_from(&out.wall);
            self.strategy.update_fields(p, &mut out, &mut state, sweep)?;
            mark(1);
            state.check_physical(p, iteration, self.backend.kind(), &out.raw)?;
            mark(2);
            state.update_boundaries(p, &out, self.strategy.predicted_walls());
            // Copied back, not swapped: the copies stay the sweep's own into the next
            // iteration, where a failed sweep's checkpoint takes them.
            if self.strategy.predicted_walls() {
                out.incident.clone_from(&sweep_incident);
                out.wall.clone_from(&sweep_wall);
            }
            mark(3);
            log::debug!(
                "iteration {iteration}: backend {t_sweep:.4} s, host update {:.4} s (rescale and residual {:.4} s, fields {:.4} s, check {:.4} s, boundaries {:.4} s)",
                t0.elapsed().as_secs_f64() - t_sweep,
                split[0],
                split[1],
                split[2],
                split[3]
            );
            let mut rec = IterationRecord {
                iteration,
                residuals: res,
                elapsed: elapsed0 + start.elapsed().as_secs_f64(),
                seconds: t0.elapsed().as_secs_f64(),
                drag: None,
            };
            if p.bodies.solids.any() && p.config.free_stream.is_some() {
                let surf = crate::loads::surface(p, &out.wall, &state.used_wall_density);
                rec.drag = crate::loads::body_loads(p, &surf, &out.wall).first().and_then(|l| l.drag_coefficient);
            }
            let r = rec.residual();
            observe(&rec);
            history.push(rec);
            if !r.is_finite() {
                anyhow::bail!("iteration {iteration}: residual is {r}");
            }
            if r < tolerance {
                converged = true;
                break;
            }
            if r < lowest.0 {
                lowest = (r, iteration);
            } else if convergence::stalled(iteration, lowest, floor, stall_sweeps) {
                stalled = Some(lowest);
                break;
            }
            if self.reduce.is_none() {
                stop = self.stop.as_ref().map_or(0, |f| f.load(Ordering::SeqCst));
            }
            if stop != 0 {
                if let Some(f) = &self.stop {
                    f.store(stop, Ordering::SeqCst);
                }
                interrupted = true;
                break;
            }
            if self.checkpoints.as_ref().is_some_and(|(every, _)| last_checkpoint.elapsed() >= *every) {
                let seconds = elapsed0 + start.elapsed().as_secs_f64();
                self.checkpoint(&state, out.clone(), &history, seconds, tolerance)?;
                saved_at = Some(iteration);
                last_checkpoint = Instant::now();
            }
        }
        if let Some(r) = &mut self.reduce {
            r.finish()?;
        }
        let seconds = elapsed0 + start.elapsed().as_secs_f64();
        let r = run_result::assemble(
            state,
            out,
            history,
            [converged, interrupted],
            seconds,
            self.strategy.saved(),
            tolerance,
        );
        let synthetic_solves = self.strategy.solves().map(|s| s[0]);
        Ok(RunResult { synthetic_solve: self.strategy.solved_on(), synthetic_solves, stalled, ..r })
    }
}

impl Solver<'_> {
    /// Hand the run as it stands (`state` after the sweep that gave `out`) to the checkpoint
    /// writer, if there is one.
    fn checkpoint(
        &mut self,
        state: &State,
        out: SweepOutput,
        history: &[IterationRecord],
        seconds: f64,
        tolerance: f64,
    ) -> anyhow::Result<()> {
        let saved = self.strategy.saved();
        let (solved_on, solves) = (self.strategy.solved_on(), self.strategy.solves().map(|s| s[0]));
        let Some((_, write)) = &mut self.checkpoints else { return Ok(()) };
        let r = run_result::assemble(state.clone(), out, history.to_vec(), [false; 2], seconds, saved, tolerance);
        write(&RunResult { synthetic_solve: solved_on, synthetic_solves: solves, ..r })
    }
}

/// The lagged wall density lets the mass drift slightly; rescaling f (hence every raw
/// moment and incident flux) restores it, as in the paper.
/// The sweep's total mass, in an order that does not depend on threads (in parallel: 0.1 s
/// serially at 128^3 cells).
fn mass_of(out: &SweepOutput, volumes: &[f64]) -> f64 {
    let moments = &out.raw;
    let [mass] = convergence::ordered_sum(moments.len(), |r| {
        [moments[r.clone()].iter().zip(&volumes[r]).map(|(m, v)| m[raw::RHO] * v).sum()]
    });
    mass
}

/// Scale everything the sweep produced by `factor` (the mass rescale), if any, and write each
/// cell's conserved variables of the scaled moments into `conserved`: one pass over the
/// moments instead of two.
fn rescale_and_conserve(out: &mut SweepOutput, factor: Option<f64>, conserved: &mut [[f64; 5]]) {
    out.raw.par_iter_mut().zip(conserved.par_iter_mut()).for_each(|(m, c)| {
        if let Some(f) = factor {
            m.iter_mut().for_each(|x| *x *= f);
        }
        *c = conserved_from_raw(m);
    });
    if let Some(factor) = factor {
        out.incident.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
        out.wall.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
        out.exits.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
    }
}
