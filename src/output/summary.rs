use crate::backend::Backend;
use crate::loads::{body_loads, domain_mass_balance, surface, BodyLoads, MassBalance};
use crate::problem::Problem;
use crate::solver::RunResult;
use serde::Serialize;

/// `summary.json`: what ran, on what, how long, and whether it converged.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub name: Option<String>,
    pub knudsen_version: String,
    pub commit: String,
    pub backend: String,
    pub device: String,
    pub threads: usize,
    /// Processes that shared the velocities (MPI, `docs/parallel.md`); the batch fields
    /// below are rank 0's, for its share.
    pub processes: usize,
    pub cells: [usize; 3],
    pub velocity_points: [usize; 3],
    pub phase_space_points: u64,
    pub kn: f64,
    pub delta: f64,
    pub prandtl: f64,
    pub omega: f64,
    pub iterations: usize,
    pub converged: bool,
    /// Stopped by a signal before convergence or the iteration limit.
    pub interrupted: bool,
    /// Stopped at the f32 arithmetic's round-off floor (`solver.stall_sweeps`): the run's
    /// lowest residual and its iteration; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Stall>,
    /// The tolerance the stop used (the case's, or the backends' largest f32 floor where
    /// higher: with MPI, any process's).
    pub tolerance: f64,
    pub final_residual: f64,
    /// Seconds to the result, the coarse start's included.
    pub total_seconds: f64,
    /// The case's own iterations' seconds over their count.
    pub seconds_per_iteration: f64,
    /// Seconds building the case's own backend (device, kernels, buffers), which
    /// `total_seconds` leaves out; a coarse start's levels report theirs in `coarse_start`
    /// (absent where the caller did not time it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_seconds: Option<f64>,
    pub batches: usize,
    pub max_batch_velocities: usize,
    pub velocities_in_flight: usize,
    pub distribution_bytes: u64,
    /// The share of each sweep's change the specular and periodic faces' data took
    /// (`solver.partner_relaxation`), where it was below 1 and some face kept such data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partner_relaxation: Option<f64>,
    /// Where GSIS's synthetic solve ran last: "host", "cuda" or "wgpu" (absent without
    /// GSIS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic_solve: Option<String>,
    /// Synthetic solves made in this run: every iteration with `gsis`, those that paid with
    /// `auto` (absent without GSIS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic_solves: Option<usize>,
    /// The coarse levels the run started from (`solver.coarse_grids`), coarsest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coarse_start: Option<crate::solver::coarse::CoarseStart>,
    /// External flows: the free stream's Mach number and velocity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mach: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_stream_velocity: Option<[f64; 3]>,
    /// Mass through the box faces at the final iteration (open domains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_mass_balance: Option<MassBalance>,
    /// Loads on each body at the final iteration (`crate::loads`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bodies: Vec<BodyLoads>,
}

/// Where a stalled run's residual was lowest.
#[derive(Debug, Clone, Serialize)]
pub struct Stall {
    pub lowest_residual: f64,
    pub at_iteration: usize,
}

pub struct SummaryInput<'a> {
    pub problem: &'a Problem,
    pub backend: &'a dyn Backend,
    pub result: &'a RunResult,
}

impl Summary {
    pub fn new(s: SummaryInput) -> Self {
        let p = s.problem;
        let m = p.vgrid.m;
        let plan = s.backend.plan_summary();
        let it = s.result.iterations();
        Self {
            name: p.config.name.clone(),
            knudsen_version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("KNUDSEN_COMMIT").to_string(),
            backend: s.backend.kind().to_string(),
            device: s.backend.device(),
            threads: rayon::current_num_threads(),
            processes: p.vgrid.share.1,
            cells: p.grid.dims(),
            velocity_points: [m, m, m],
            phase_space_points: p.phase_points(),
            kn: p.config.kn(),
            delta: p.config.delta(),
            prandtl: p.prandtl,
            omega: p.omega,
            iterations: it,
            converged: s.result.converged,
            interrupted: s.result.interrupted,
            stalled: s.result.stalled.map(|(r, at)| Stall { lowest_residual: r, at_iteration: at }),
            // The one the stop used: f32 backends stop at their floor where the case asks for
            // less, every process at the largest floor among them
            // (`convergence::effective_tolerance`).
            tolerance: s.result.stop_tolerance,
            final_residual: s.result.final_residual(),
            total_seconds: s.result.seconds_in_all(),
            seconds_per_iteration: s.result.total_seconds / it.max(1) as f64,
            setup_seconds: None,
            batches: plan.batches,
            max_batch_velocities: plan.max_batch,
            velocities_in_flight: plan.in_flight,
            distribution_bytes: plan.distribution_bytes,
            partner_relaxation: p.partner_relaxation(),
            synthetic_solve: s.result.synthetic_solve.map(str::to_string),
            synthetic_solves: s.result.synthetic_solves,
            coarse_start: s.result.coarse_start.clone(),
            mach: p.config.free_stream.as_ref().map(|f| f.mach()),
            free_stream_velocity: p.config.free_stream.as_ref().map(|f| f.velocity()),
            domain_mass_balance: (!p.bounds.closed()).then(|| domain_mass_balance(p, &s.result.incident)),
            bodies: body_loads(p, &surface(p, &s.result.wall, &s.result.wall_density), &s.result.wall),
        }
    }
}
