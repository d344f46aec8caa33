//! What a run gives back: the final fields and sweep sums, the state a continued run starts
//! from, the history and how it stopped.

use super::coarse;
use super::convergence::IterationRecord;
use super::state::State;
use crate::backend::SweepOutput;
use crate::body::WALL_SUMS;
use crate::boundary::FaceData;
use crate::damping::DensitySteps;
use crate::model::{Macro, NRAW};

#[derive(Debug, Clone)]
pub struct RunResult {
    /// Final macroscopic state per cell.
    pub fields: Vec<Macro>,
    /// The final sweep's raw moments (empty in a snapshot written after a failed sweep).
    pub raw: Vec<[f64; NRAW]>,
    /// The conserved variables of the final sweep's moments, after the mass rescale: what a
    /// continued run's first residual compares against (`restart/sweep_conserved`).
    pub sweep_conserved: Vec<[f64; 5]>,
    pub incident: FaceData,
    /// Body wall faces: the incident sums of the final sweep and the wall densities that
    /// sweep used (together they give the exact discrete surface fluxes; `crate::loads`).
    pub wall: Vec<[f64; WALL_SUMS]>,
    pub wall_density: Vec<f64>,
    /// The inputs of the next iteration, so a run can be continued (`Restart`).
    pub next_face_density: FaceData,
    pub next_wall_density: Vec<f64>,
    /// Partner data of the next iteration (specular and periodic faces).
    pub next_partner: FaceData,
    /// The damping state of the next wall-density update (`crate::damping`).
    pub next_steps: DensitySteps,
    /// The strategy's own state ([`super::Strategy::saved`]).
    pub strategy_state: Option<Vec<[f64; 5]>>,
    pub history: Vec<IterationRecord>,
    pub converged: bool,
    /// Stopped on request ([`super::Solver::with_stop`]) before convergence or the iteration limit.
    pub interrupted: bool,
    /// Stopped because the residual had not fallen below its lowest for
    /// `solver.stall_sweeps` sweeps at the f32 arithmetic's floor ([`super::convergence::stalled`]):
    /// that lowest residual and its iteration.
    pub stalled: Option<(f64, usize)>,
    /// The tolerance the stop used: the case's, or where that lies below it the largest
    /// round-off floor of the processes' backends ([`super::convergence::effective_tolerance`]).
    pub stop_tolerance: f64,
    pub total_seconds: f64,
    /// Where the strategy's solve last ran ([`super::Strategy::solved_on`]).
    pub synthetic_solve: Option<&'static str>,
    /// Synthetic solves made in this run ([`super::Strategy::solves`]).
    pub synthetic_solves: Option<usize>,
    /// The coarse levels the run started from (`knudsen run`, [`coarse`]); `total_seconds`
    /// does not count them ([`RunResult::seconds_in_all`] does).
    pub coarse_start: Option<coarse::CoarseStart>,
}

impl RunResult {
    pub fn iterations(&self) -> usize {
        self.history.len()
    }
    pub fn final_residual(&self) -> f64 {
        self.history.last().map_or(f64::NAN, IterationRecord::residual)
    }
    /// Seconds to this result: the iterations' and the coarse start's.
    pub fn seconds_in_all(&self) -> f64 {
        self.total_seconds + self.coarse_start.as_ref().map_or(0.0, |c| c.seconds)
    }
}

pub(super) fn assemble(
    state: State,
    out: SweepOutput,
    history: Vec<IterationRecord>,
    [converged, interrupted]: [bool; 2],
    total_seconds: f64,
    strategy_state: Option<Vec<[f64; 5]>>,
    stop_tolerance: f64,
) -> RunResult {
    RunResult {
        strategy_state,
        fields: state.fields,
        raw: out.raw,
        sweep_conserved: state.conserved,
        incident: out.incident,
        wall: out.wall,
        wall_density: state.used_wall_density,
        next_face_density: state.face_density,
        next_wall_density: state.wall_density,
        next_partner: state.partner,
        next_steps: state.steps,
        history,
        converged,
        interrupted,
        stalled: None,
        stop_tolerance,
        total_seconds,
        synthetic_solve: None,
        synthetic_solves: None,
        coarse_start: None,
    }
}
