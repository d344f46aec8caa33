//! Grid sequencing (`solver.coarse_grids`): a start from the same case converged on coarser
//! grids. Each coarse level has every second face of each axis and, where the velocity grid
//! stays fine enough, half the velocity points per axis; it is converged to
//! [`COARSE_TOLERANCE`] (or the case's tolerance, if looser), and its fields, box-face and
//! body-wall densities are interpolated onto the next finer grid ([`super::prolong`]) as that
//! level's first state. The case's own iteration then starts with the coarse grid's
//! discretisation error (a few per cent at first order) instead of the uniform initial
//! state's, and stops by the same test at the same fixed point: only its start differs.
//!
//! Why it pays: GSIS removes the error at a rate of about 0.3 per sweep at Kn ~ 1, so the
//! sweeps a run needs grow with the logarithm of its starting error; a coarse sweep has an
//! eighth of the phase-space points (a sixty-fourth with half the velocities; a coarse
//! iteration measured on the GPUs at a seventh to a twentieth of a fine one's time), plus its
//! backend's set-up. Measured in `docs/performance.md`, "The coarse
//! start".

use super::{prolong, Solver};
use crate::backend::Backend;
use crate::config::{AxisConfig, Config, GridConfig, Quadrature};
use crate::parallel::Reduce;
use crate::problem::Problem;
use serde::Serialize;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Instant;

/// An axis is coarsened only while it keeps at least this many cells: a coarser one carries
/// too little of the flow to be a useful start.
pub const MIN_COARSE_CELLS: usize = 4;
/// The velocity grid is coarsened only while it keeps at least this many points per axis.
pub const MIN_COARSE_VELOCITY_POINTS: usize = 16;
/// The residual each coarse level is converged to. The coarse and fine fixed points differ
/// by a few per cent at first order, so converging further buys the next level nothing
/// (measured: 1e-2, 3e-3 and 1e-3 gave the same fine sweeps, `docs/performance.md`).
pub const COARSE_TOLERANCE: f64 = 1e-2;
/// The iteration limit of each coarse level, whatever the case's: a run stopped by its own
/// limit and continued then takes the same path as one that was not (the continued part
/// makes no coarse start).
pub const COARSE_MAX_ITERATIONS: usize = 100;
/// A level must have at most this fraction of the phase-space points of the grid above it:
/// one that keeps most of them (an axis crowded with body faces, or one axis of a few
/// coarsened) would cost nearly as much as the sweeps it saves.
pub const MAX_POINTS_RATIO: f64 = 0.25;
pub use crate::config::solver::MAX_COARSE_GRIDS;

/// The faces of the coarse axis: every second face between the faces that must stay (the
/// ends and `keep`, the indices of the faces bodies lie on), so that bodies stay aligned; an
/// odd run leaves one cell of the fine width at its end. None where the coarse axis would
/// have fewer than [`MIN_COARSE_CELLS`] cells or no fewer than the fine one.
pub fn coarse_faces(faces: &[f64], keep: &[usize]) -> Option<Vec<f64>> {
    let n = faces.len() - 1;
    let mut anchors: Vec<usize> = keep.iter().copied().filter(|&k| k <= n).chain([0, n]).collect();
    anchors.sort_unstable();
    anchors.dedup();
    let mut out = vec![faces[0]];
    for pair in anchors.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        out.extend((a + 2..b).step_by(2).map(|i| faces[i]));
        out.push(faces[b]);
    }
    let cells = out.len() - 1;
    (cells >= MIN_COARSE_CELLS && cells < n).then_some(out)
}

/// About half the velocity points per axis (composite Simpson keeps an odd count), or None below
/// [`MIN_COARSE_VELOCITY_POINTS`].
pub fn coarse_points(points: usize, quadrature: Quadrature) -> Option<usize> {
    let half = match quadrature {
        Quadrature::Trapezoid => points / 2,
        // Every second node of an odd count; composite Simpson needs the result odd too.
        Quadrature::Simpson => points.div_ceil(2) | 1,
    };
    (half >= MIN_COARSE_VELOCITY_POINTS && half < points).then_some(half)
}

/// The next coarser level of a case: its grid coarsened where an axis allows it, its velocity
/// grid where the coarse one still resolves the case's Maxwellians, converged to
/// [`COARSE_TOLERANCE`] with no coarse start of its own. None where no axis can be coarsened,
/// or where the level would keep more than [`MAX_POINTS_RATIO`] of the phase-space points.
pub fn coarser(cfg: &Config) -> Option<Config> {
    let c = coarser_grids(cfg)?;
    let points = |c: &Config| {
        let [x, y, z] = c.grid.cell_counts();
        (x * y * z) as f64 * (c.velocity.points as f64).powi(3)
    };
    (points(&c) <= MAX_POINTS_RATIO * points(cfg)).then_some(c)
}

fn coarser_grids(cfg: &Config) -> Option<Config> {
    let faces = cfg.grid.validate().ok()?;
    // The face indices each axis's bodies lie on (validated: every body is aligned).
    let keep = |a: usize| -> Vec<usize> {
        let on = |c: f64| crate::config::grid::face_index(&faces[a], c);
        cfg.bodies.iter().flat_map(|b| [on(b.min[a]), on(b.max[a])]).flatten().collect()
    };
    let coarse: Vec<Option<Vec<f64>>> = (0..3).map(|a| coarse_faces(&faces[a], &keep(a))).collect();
    if coarse.iter().all(Option::is_none) {
        return None;
    }
    let axis = |a: usize| AxisConfig {
        faces: Some(coarse[a].clone().unwrap_or_else(|| faces[a].clone())),
        ..Default::default()
    };
    let mut c = cfg.clone();
    c.grid = GridConfig { x: axis(0), y: axis(1), z: axis(2) };
    c.solver.tolerance = cfg.solver.tolerance.max(COARSE_TOLERANCE);
    c.solver.max_iterations = COARSE_MAX_ITERATIONS;
    c.solver.coarse_grids = 0;
    if let Some(m) = coarse_points(cfg.velocity.points, cfg.velocity.quadrature) {
        let mut v = c.clone();
        v.velocity.points = m;
        if v.validate().is_ok() {
            return Some(v);
        }
    }
    c.validate().is_ok().then_some(c)
}

/// What `check` and `run` say where `solver.coarse_grids` asks for levels and the case has
/// none ([`coarser`]'s reasons).
pub const NO_LEVEL: &str = "coarse start: none (no axis has cells enough to coarsen with any bodies' faces kept, or a coarser level would keep more than a quarter of the phase-space points); the case starts from `initial`";

/// The coarse levels of a case, finest first: up to `solver.coarse_grids` of them.
pub fn levels(cfg: &Config) -> Vec<Config> {
    let mut out: Vec<Config> = Vec::new();
    while out.len() < cfg.solver.coarse_grids {
        match coarser(out.last().unwrap_or(cfg)) {
            Some(c) => out.push(c),
            None => break,
        }
    }
    out
}

/// One coarse level as it ran (`summary.json`'s `coarse_start`).
#[derive(Debug, Clone, Serialize)]
pub struct CoarseLevel {
    pub cells: [usize; 3],
    pub velocity_points: usize,
    pub iterations: usize,
    pub final_residual: f64,
    /// Wall seconds of the level's iterations and of the interpolation onto it: what
    /// `total_seconds` counts of a run's own level.
    pub seconds: f64,
    /// Wall seconds of building the level's problem and backend (a run's own backend is not
    /// counted in its `total_seconds` either).
    pub setup_seconds: f64,
    /// The residual after each of the level's iterations (as `residuals.csv`'s `residual`).
    pub residuals: Vec<f64>,
}

/// What the coarse start did, coarsest level first.
#[derive(Debug, Clone, Serialize)]
pub struct CoarseStart {
    pub levels: Vec<CoarseLevel>,
    /// The levels' `seconds` and the interpolation onto the case's grid: counted in the
    /// run's `total_seconds` (summary.json).
    pub seconds: f64,
    /// The levels' `setup_seconds`, not counted there.
    pub setup_seconds: f64,
    /// Wall seconds of the whole coarse start, both of the above.
    pub wall_seconds: f64,
}

/// How the caller builds each level's problem, backend and process sum: the same way as the
/// case's own (the process's share of the velocities under MPI, the chosen backend).
pub struct Hooks<'h, 'r> {
    pub problem: &'h dyn Fn(&Config) -> anyhow::Result<Problem>,
    pub backend: &'h mut dyn FnMut(Arc<Problem>) -> anyhow::Result<Box<dyn Backend>>,
    /// A fresh process sum per level (MPI; every process calls it in the same order).
    pub reduce: Option<&'h mut dyn FnMut() -> anyhow::Result<Box<dyn Reduce + 'r>>>,
    pub stop: Option<Arc<AtomicUsize>>,
}

pub enum Outcome {
    /// The fine case's first state, and the report.
    Ready(Box<super::Restart>, CoarseStart),
    /// Stopped on request during a coarse level (its cells given): nothing to continue from.
    Interrupted([usize; 3]),
}

/// Run the coarse levels of `cfg` (coarsest first), each starting from the one below, and
/// return the state they give `fine` (the case's own problem). None where the case has no
/// coarse level.
pub fn start(cfg: &Config, fine: &Problem, hooks: Hooks) -> anyhow::Result<Option<Outcome>> {
    let chain = levels(cfg);
    if chain.is_empty() {
        return Ok(None);
    }
    let t0 = Instant::now();
    let Hooks { problem, backend, mut reduce, stop } = hooks;
    let mut report = Vec::new();
    // The level below (coarser) and how it ended.
    let mut below: Option<(Arc<Problem>, super::RunResult)> = None;
    for c in chain.iter().rev() {
        let t = Instant::now();
        let p = Arc::new(problem(c)?);
        let mut solver = Solver::new(&p, backend(p.clone())?);
        let setup = t.elapsed().as_secs_f64();
        let t = Instant::now();
        if let Some(s) = below.take().map(|(bp, r)| prolong::prolong(&bp, &r, &p)) {
            solver = solver.with_restart(s);
        }
        if let Some(flag) = &stop {
            solver = solver.with_stop(flag.clone());
        }
        if let Some(make) = reduce.as_mut() {
            solver = solver.with_reduce(make()?);
        }
        let dims = p.grid.dims();
        let result = solver.run(|rec| {
            log::debug!("coarse start on {dims:?} cells: iteration {} residual {:.3e}", rec.iteration, rec.residual());
        })?;
        // The backend's teardown counts with its set-up, not with the iterations.
        let seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        drop(solver);
        let setup = setup + t.elapsed().as_secs_f64();
        if result.interrupted {
            return Ok(Some(Outcome::Interrupted(dims)));
        }
        let level = CoarseLevel {
            cells: dims,
            velocity_points: p.vgrid.m,
            iterations: result.iterations(),
            final_residual: result.final_residual(),
            seconds,
            setup_seconds: setup,
            residuals: result.history.iter().map(|r| r.residual()).collect(),
        };
        log::info!(
            "coarse start: {} x {} x {} cells x {}^3 velocities, {} iterations to residual {:.2e} ({:.2} s, and {:.2} s to set it up)",
            dims[0],
            dims[1],
            dims[2],
            level.velocity_points,
            level.iterations,
            level.final_residual,
            level.seconds,
            level.setup_seconds
        );
        if !result.converged {
            log::warn!(
                "coarse start: the {} x {} x {}-cell level stopped at residual {:.2e} after its {} sweeps; starting the next from there",
                dims[0],
                dims[1],
                dims[2],
                level.final_residual,
                COARSE_MAX_ITERATIONS
            );
        }
        report.push(level);
        below = Some((p, result));
    }
    let (bp, r) = below.expect("the chain is not empty");
    let t = Instant::now();
    let first = prolong::prolong(&bp, &r, fine);
    let last = t.elapsed().as_secs_f64();
    let seconds = report.iter().map(|l| l.seconds).sum::<f64>() + last;
    let setup_seconds = report.iter().map(|l| l.setup_seconds).sum();
    let wall_seconds = t0.elapsed().as_secs_f64();
    Ok(Some(Outcome::Ready(Box::new(first), CoarseStart { levels: report, seconds, setup_seconds, wall_seconds })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(text: &str) -> Config {
        Config::from_json(text).unwrap()
    }

    #[test]
    fn every_second_face_stays_and_the_bodies_faces_with_them() {
        let f: Vec<f64> = (0..=9).map(|i| i as f64).collect();
        // 9 cells: a run of 9 from 0 to 9 keeps 0, 2, 4, 6, 8 and the end.
        assert_eq!(coarse_faces(&f, &[]).unwrap(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 9.0]);
        // A body face at 3 splits the runs: 0, 2, 3 | 5, 7, 9.
        assert_eq!(coarse_faces(&f, &[3]).unwrap(), vec![0.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
        // Fewer than MIN_COARSE_CELLS coarse cells: no coarse axis.
        assert_eq!(coarse_faces(&f[..7], &[]), None);
        // Faces that keep every fine cell (anchors one apart) are no coarsening.
        assert_eq!(coarse_faces(&f[..5], &[1, 2, 3]), None);
    }

    #[test]
    fn velocity_points_halve_while_they_stay_resolved() {
        assert_eq!(coarse_points(64, Quadrature::Trapezoid), Some(32));
        assert_eq!(coarse_points(48, Quadrature::Trapezoid), Some(24));
        assert_eq!(coarse_points(20, Quadrature::Trapezoid), None);
        assert_eq!(coarse_points(33, Quadrature::Simpson), Some(17));
        // 31 -> 16 would be even: 17, still odd for composite Simpson.
        assert_eq!(coarse_points(31, Quadrature::Simpson), Some(17));
        assert_eq!(coarse_points(17, Quadrature::Simpson), None);
    }

    #[test]
    fn coarse_levels_halve_the_grid_keep_bodies_aligned_and_stop_at_the_smallest() {
        let mut cavity = case(include_str!("../../configs/cavity-quick.json"));
        cavity.solver.coarse_grids = 3;
        let lv = levels(&cavity);
        // 16^3 -> 8^3 -> 4^3; 2^3 is below MIN_COARSE_CELLS.
        assert_eq!(lv.iter().map(|c| c.grid.cell_counts()).collect::<Vec<_>>(), vec![[8; 3], [4; 3]]);
        assert!(lv.iter().all(|c| c.solver.tolerance == COARSE_TOLERANCE && c.solver.coarse_grids == 0));
        assert!(lv.iter().all(|c| c.solver.max_iterations == COARSE_MAX_ITERATIONS));
        // The paper cube: its body's faces are odd indices of the fine grid, and every level
        // validates (bodies aligned); its velocity grid halves to 24 points.
        let cube = case(include_str!("../../configs/cube-ma2-kn1.json"));
        let c = coarser(&cube).expect("the cube coarsens");
        assert!(c.validate().is_ok());
        assert_eq!(c.velocity.points, 24);
        // The body's two faces split each axis into three runs, each halved and rounded up:
        // 191 cells along x give 96, 181 along y and z (75 + 31 + 75) give 38 + 16 + 38 = 92.
        assert_eq!(c.grid.cell_counts(), [96, 92, 92]);
        cavity.solver.coarse_grids = 0;
        assert!(levels(&cavity).is_empty());
    }

    /// `start` on the CPU backend for `cfg` (cavity-quick), with `stop` as the stop flag.
    fn start_on_cpu(cfg: &Config, stop: usize) -> Option<Outcome> {
        let fine = Problem::new(cfg);
        let problem = |c: &Config| Ok(Problem::new(c));
        let mut backend = |p: Arc<Problem>| -> anyhow::Result<Box<dyn Backend>> {
            Ok(Box::new(crate::backend::cpu::CpuBackend::new(p, 64 << 20)?))
        };
        let hooks = Hooks {
            problem: &problem,
            backend: &mut backend,
            reduce: None,
            stop: Some(Arc::new(AtomicUsize::new(stop))),
        };
        start(cfg, &fine, hooks).unwrap()
    }

    #[test]
    fn a_coarse_start_gives_the_case_its_state_or_stops_when_asked() {
        let mut c = case(include_str!("../../configs/cavity-quick.json"));
        c.solver.acceleration = crate::config::Acceleration::Gsis;
        let Some(Outcome::Ready(first, report)) = start_on_cpu(&c, 0) else { panic!("no state") };
        assert_eq!(first.fields.len(), 16 * 16 * 16);
        assert!(first.history.is_empty() && first.strategy_state.is_none());
        assert_eq!(report.levels.len(), 1);
        assert_eq!(report.levels[0].cells, [8; 3]);
        assert!(report.levels[0].final_residual < COARSE_TOLERANCE);
        // The lid drags the gas: the interpolated state moves along x, unlike the initial one.
        assert!(first.fields.iter().any(|m| m.u[0] > 1e-3));
        // A stop already asked for ends the first level after one sweep: no state.
        assert!(matches!(start_on_cpu(&c, 2), Some(Outcome::Interrupted([8, 8, 8]))));
    }

    #[test]
    fn too_many_coarse_grids_is_refused_by_name() {
        let mut c = case(include_str!("../../configs/cavity-quick.json"));
        c.solver.coarse_grids = MAX_COARSE_GRIDS + 1;
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "solver.coarse_grids");
    }
}
