//! General synthetic iterative scheme (GSIS): after each sweep, a macroscopic correction
//! carries the change of mass, momentum and energy across the whole domain at once, instead
//! of one mean free path per sweep. `docs/model.md` derives it; in short:
//!
//! The sweep solves `xi . grad f* = nu (f^S(W^n) - f*)`. Summed against the collision
//! invariants psi, the upwind fluxes of f* leave each cell with a net outflow equal to the
//! collision's moment, `vol nu (C(W^n) - C(W*))`, where `C(rho, U, T) = (rho, rho U,
//! rho |U|^2 + 3 rho T / 2)` and W* are the sweep's moments. The converged solution has zero
//! net outflow, so the missing correction dW obeys
//!
//! ```text
//! L dW = -vol nu (C(W^n) - C(W*)),      W^{n+1} = W* + dW,
//! ```
//!
//! with L the linearised Navier-Stokes-Fourier outflow of the upwind-split fluxes
//! ([`operator`], [`flux`]). This is GSIS's synthetic system with the high-order terms
//! discretised by the sweep itself: the kinetic stress and heat flux enter through the
//! sweep's exact conservation defect rather than through cell-averaged moments.
//!
//! **Same fixed point.** The right-hand side vanishes exactly when W^n = W*, i.e. at source
//! iteration's fixed point, and then dW = 0; conversely a fixed point of this map has
//! (I + L^-1 vol nu C') (W^n - W*) = 0, so W^n = W*. L only decides how fast the iteration
//! gets there. The heat flux and pressure tensor of the fields stay the sweep's.
//!
//! **Walls.** Diffuse walls emit with the density that balances the incident flux of the
//! previous sweep. After a correction that flux is stale, so [`walls`] moves it by the
//! half-range flux of the correction; without that the wall lags the corrected gas by one
//! sweep and the density and normal-velocity modes grow (measured: planar Couette at
//! delta = 100). The change vanishes with the correction. Specular and periodic faces read
//! the previous sweep's exits, stale in the same way; `partners` moves each by the change
//! of its face cell's Maxwellian.
//!
//! **Closed domains.** No mass crosses a wall, so the mass rows of L sum to zero: the mass
//! part of the right-hand side is projected to zero total, and a small multiple of the volume
//! on the mass diagonal picks the solution that keeps the total mass (the mass rescale's).
//!
//! **Second-order sweep.** L models the first-order sweep; the diamond difference answers a
//! cell-to-cell alternating mode far more strongly, which made the correction over-shoot it in
//! cells a few mean free paths thick. After a second-order sweep dW is filtered first
//! (`smooth`), which keeps the fixed point (the filter maps 0 to 0).

mod auto;
mod build;
#[cfg(feature = "cuda-driver")]
pub mod cuda;
#[cfg(test)]
mod fixtures;
pub mod flux;
mod job;
pub mod krylov;
pub mod ledger;
pub mod lines;
pub mod multigrid;
pub mod operator;
mod partners;
mod placement;
mod smooth;
pub use placement::solves_on_device;
pub mod walls;
pub mod wgpu;

use super::state::State;
use super::{source_iteration, Strategy, Sweep};
use crate::backend::SweepOutput;
use crate::boundary::FaceKind;
use crate::config::Scheme;
use crate::model::{collision_frequency, Macro};
use crate::problem::Problem;
use build::Hierarchy;
use flux::{Base, NV};
use ledger::Update;
use placement::Device;
use rayon::prelude::*;

/// Relative residual of each synthetic solve: `INNER_SCALE / delta_D`, kept within
/// [`INNER_TIGHTEST`, `INNER_LOOSEST`], where delta_D is the rarefaction parameter on the
/// domain's largest extent ([`inner_tolerance`]). The correction only has to be accurate to
/// the fraction of the error that one sweep leaves, and an error left in it is carried by the
/// next sweep about as far as a mean free path, so the denser the gas across the domain the
/// tighter the solve. Any tolerance keeps the fixed point (the right-hand side vanishes
/// there). Measured, sweeps to 1e-6 at eta = 1e-4 / 1e-3 / 1e-2 / 1e-1 (CPU):
/// - 16^3 cavity, 12^3 velocities, Kn 0.01 / 0.1 / 1 / 10: 13/13/13/16, 14/14/14/14,
///   13/13/13/13, 19/19/19/19; GMRES steps summed over the run fall from 92-171 to 33-94;
/// - 32^3 cavity at Kn 0.01 (`configs/cavity-kn0.01.json`): 16/16/16/17;
/// - 64^3 cavity at Kn 1 (10^3 velocities): 16/-/16/16, with 12 / - / 7 / 5 GMRES steps
///   per sweep.
///
/// The formula gives 1e-3 at Kn 0.01, 1e-2 at Kn 0.1 and 0.1 from Kn 1 up on the unit
/// cavity: one decade inside the loosest tolerance measured to cost no sweeps.
pub const INNER_SCALE: f64 = 0.07;
pub const INNER_TIGHTEST: f64 = 1e-4;
pub const INNER_LOOSEST: f64 = 0.1;
/// GMRES restart length and iteration cap per outer iteration.
const RESTART: usize = 30;
const MAX_INNER: usize = 2000;
/// The largest ratio of the widest to the thinnest cell width for which block Jacobi
/// smooths well enough (see [`smoother`]).
const MAX_JACOBI_ASPECT: f64 = 2.0;
/// A correction may lower density or temperature by at most this fraction of the sweep's
/// value; a larger one is scaled down as a whole (early iterations from a far guess).
const MAX_DROP: f64 = 0.5;

/// What the last synthetic solve did (logs and summary).
#[derive(Debug, Clone, Copy, Default)]
pub struct SolveStats {
    pub inner_iterations: usize,
    pub relative_residual: f64,
    /// The scale applied to the correction (1 unless it would have made a cell non-physical).
    pub scale: f64,
}

#[derive(Default)]
pub struct Gsis {
    /// Where the solve runs (`Gsis::for_backend`).
    device: Device,
    /// Hierarchies built in this run, counting restored ones (tells when to upload).
    generation: u64,
    pub last: SolveStats,
    /// Where the last solve ran.
    place: Option<&'static str>,
    /// GMRES's work vectors, kept from one solve to the next.
    pool: krylov::Pool,
    /// The operator in use and the state it was built from: reused while the state stays
    /// within `build::REBUILD_DRIFT` of it, and saved with the restart data, so that a continued
    /// run takes exactly the same path as one never stopped.
    hierarchy: Option<Hierarchy>,
    /// A restored linearisation state, built at the first iteration (it needs the problem).
    pending: Option<Vec<Base>>,
    /// Operator builds in this run (logs).
    builds: usize,
    /// `solver.acceleration: "auto"`: when to solve ([`auto`]).
    auto: Option<auto::Auto>,
    /// Synthetic solves made, iterations run.
    solves: [usize; 2],
    /// Seconds spent starting the device (kernels), kept out of a solve's measured cost.
    start_up: f64,
    scratch: Scratch,
    /// The last update was a synthetic correction, which moved the incident wall fluxes
    /// (`Strategy::predicted_walls`).
    predicted: bool,
}

/// Line smoothing where the grid has stretched cells (or only one axis, where a line sweep
/// is the exact solve); block Jacobi where every cell is near a cube. Measured on the
/// half-resolution paper cube (widths spanning 1:10): 57 GMRES steps with Jacobi, 22
/// with lines; on the same flow on a uniform grid 13 against 9, and on the uniform 64^3
/// cavity 12 against 11 at 1.6 times the cost per step. `KNUDSEN_GSIS_SMOOTHER=jacobi|lines`
/// forces one.
fn smoother(p: &Problem) -> multigrid::Smoother {
    use multigrid::Smoother::{Jacobi, Lines};
    match std::env::var("KNUDSEN_GSIS_SMOOTHER").as_deref() {
        Ok("jacobi") => Jacobi,
        Ok("lines") => Lines,
        _ => grid_smoother(p),
    }
}

/// The synthetic solve's relative tolerance for this problem ([`INNER_SCALE`]);
/// `KNUDSEN_GSIS_INNER_TOLERANCE` overrides it (measurements).
pub fn inner_tolerance(p: &Problem) -> f64 {
    if let Some(t) = std::env::var("KNUDSEN_GSIS_INNER_TOLERANCE").ok().and_then(|v| v.parse::<f64>().ok()) {
        return t;
    }
    (INNER_SCALE / domain_delta(p)).clamp(INNER_TIGHTEST, INNER_LOOSEST)
}

/// The rarefaction parameter on the domain's largest extent, delta_D.
pub fn domain_delta(p: &Problem) -> f64 {
    let axes = [&p.grid.x, &p.grid.y, &p.grid.z];
    let extent = |a: &&crate::grid::Axis| a.length();
    // Axes of one cell carry no transport; with none other, the widest cell sets the scale.
    let live = axes.iter().filter(|a| a.widths.len() > 1).map(extent).fold(0.0f64, f64::max);
    let extent = if live > 0.0 { live } else { axes.iter().map(extent).fold(0.0f64, f64::max) };
    p.delta * extent
}

fn grid_smoother(p: &Problem) -> multigrid::Smoother {
    use multigrid::Smoother::{Jacobi, Lines};
    let axes = [&p.grid.x, &p.grid.y, &p.grid.z];
    let live: Vec<usize> = (0..3).filter(|&a| axes[a].widths.len() > 1).collect();
    if live.len() == 1 {
        return Lines;
    }
    let (lo, hi) = live.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &a| {
        let w = &axes[a].widths;
        (w.iter().copied().fold(lo, f64::min), w.iter().copied().fold(hi, f64::max))
    });
    if hi > MAX_JACOBI_ASPECT * lo {
        Lines
    } else {
        Jacobi
    }
}

fn conserved(rho: f64, u: [f64; 3], t: f64) -> [f64; NV] {
    let u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    [rho, rho * u[0], rho * u[1], rho * u[2], rho * u2 + 1.5 * rho * t]
}

impl Strategy for Gsis {
    fn name(&self) -> &'static str {
        "gsis"
    }

    fn saved(&self) -> Option<Vec<[f64; 5]>> {
        let base = self.hierarchy.as_ref().map(|h| &h.base).or(self.pending.as_ref())?;
        Some(base.iter().map(|b| [b.rho, b.u[0], b.u[1], b.u[2], b.t]).collect())
    }

    fn solved_on(&self) -> Option<&'static str> {
        self.place
    }

    fn restore(&mut self, saved: Vec<[f64; 5]>) {
        self.hierarchy = None;
        self.pending = Some(saved.iter().map(|s| Base { rho: s[0], u: [s[1], s[2], s[3]], t: s[4] }).collect());
    }

    fn update_fields(
        &mut self,
        p: &Problem,
        out: &mut SweepOutput,
        state: &mut State,
        sweep: Sweep,
    ) -> anyhow::Result<()> {
        let (t, start_up) = (std::time::Instant::now(), self.start_up);
        let update = self.next_update(p, out, state, sweep);
        self.predicted = update == Update::Solve;
        match update {
            Update::Solve => self.correct(p, out, state)?,
            Update::Source => source_iteration::update(p, out, state),
        }
        self.updated(update, t.elapsed().as_secs_f64(), self.start_up - start_up, sweep);
        Ok(())
    }

    fn fix_path(&mut self) {
        if self.auto.take().is_some() {
            log::info!("gsis: auto solves after every sweep with several processes (a choice from the clock could differ between them)");
        }
    }

    fn solves(&self) -> Option<[usize; 2]> {
        Some(self.solves)
    }

    fn predicted_walls(&self) -> bool {
        self.predicted
    }
}

/// Per-cell work arrays of one synthetic update, kept from one sweep to the next: at 64^3
/// cells they are ~60 MB, and allocating them afresh cost each update its page faults.
#[derive(Default)]
struct Scratch {
    /// The sweep's moments W*.
    star: Vec<Macro>,
    /// The state the operator is linearised about.
    base: Vec<Base>,
    /// The right-hand side `-vol nu (C(W^n) - C(W*))`.
    rhs: krylov::Vector,
    /// The correction as applied (scaled).
    change: krylov::Vector,
    /// The filter's copy of the correction before each pass, and its strength per cell
    /// (second-order sweep).
    filtered: krylov::Vector,
    beta: Vec<f64>,
    /// The cells' volumes (the grid's; filled on the first update).
    volumes: Vec<f64>,
}

/// Fill `w` with the sweep's moments, the state the operator is linearised about, and the
/// right-hand side `-vol nu (C(W^n) - C(W*))` (with zero total mass in a closed domain).
fn linearisation(p: &Problem, out: &SweepOutput, state: &State, w: &mut Scratch) {
    let solids = &p.bodies.solids;
    if w.volumes.len() != p.grid.cells() {
        w.volumes = p.grid.volumes();
    }
    let volumes = &w.volumes;
    let fluid = |c: usize| !solids.is_solid(c);
    let cells = out.raw.len();
    w.star.resize(cells, Macro::equilibrium(1.0, [0.0; 3], 1.0));
    w.base.resize(cells, Base { rho: 1.0, u: [0.0; 3], t: 1.0 });
    w.rhs.resize(cells, [0.0; NV]);
    (&mut w.star, &mut w.base, &mut w.rhs).into_par_iter().enumerate().for_each(|(c, (star, base, rhs))| {
        *star = Macro::from_raw(&out.raw[c]);
        if !fluid(c) {
            *base = Base { rho: 1.0, u: [0.0; 3], t: 1.0 };
            *rhs = [0.0; NV];
            return;
        }
        *base = Base { rho: star.rho, u: star.u, t: star.t };
        let n = &state.fields[c];
        let (cn, cs) = (conserved(n.rho, n.u, n.t), conserved(star.rho, star.u, star.t));
        // The sweep's collision frequency (EqCoeffs::nu of these fields).
        let k = -volumes[c] * collision_frequency(p.delta, p.omega, n.rho, n.t);
        *rhs = std::array::from_fn(|i| k * (cn[i] - cs[i]));
    });
    if p.bounds.closed() {
        // Serial sums: the same bits whatever the thread count.
        let fluid_volume: f64 = (0..cells).filter(|&c| fluid(c)).map(|c| volumes[c]).sum();
        let mean = (0..cells).filter(|&c| fluid(c)).map(|c| w.rhs[c][0]).sum::<f64>() / fluid_volume;
        w.rhs.par_iter_mut().enumerate().filter(|(c, _)| fluid(*c)).for_each(|(c, r)| r[0] -= mean * volumes[c]);
    }
}

impl Gsis {
    /// The synthetic correction (GSIS's update).
    fn correct(&mut self, p: &Problem, out: &mut SweepOutput, state: &mut State) -> anyhow::Result<()> {
        let t_start = std::time::Instant::now();
        let fluid = |c: usize| !p.bodies.solids.is_solid(c);
        let solid = |c: usize| p.bodies.solids.is_solid(c);
        let mut w = std::mem::take(&mut self.scratch);
        linearisation(p, out, state, &mut w);
        let (base, rhs) = (&w.base, &w.rhs);
        let t0 = std::time::Instant::now();
        let rebuild = self.ensure_hierarchy(p, base)?;
        let mg = &self.hierarchy.as_ref().expect("built above").mg;
        let t_setup = t0.elapsed().as_secs_f64();
        let levels = mg.levels();
        let (mut dw, outcome, place) = self.solve(rhs, inner_tolerance(p))?;
        let t_solve = t0.elapsed().as_secs_f64() - t_setup;
        if p.config.solver.scheme == Scheme::SecondOrder {
            // The second-order sweep answers alternating modes unlike L: filter them out of
            // the correction (smooth.rs).
            smooth::strength(p, base, &mut w.beta);
            let periodic = std::array::from_fn(|a| p.bounds.faces[2 * a].kind == FaceKind::Periodic);
            let cells = smooth::Cells { grid: &p.grid, volumes: &w.volumes, beta: &w.beta, solid: &solid, periodic };
            smooth::binomial(&cells, &mut dw, &mut w.filtered);
        }
        // Largest fraction of dW that keeps every density and temperature above MAX_DROP
        // of the sweep's.
        let scale = (0..dw.len()).into_par_iter().filter(|&c| fluid(c)).map(|c| {
            let lim = |x: f64, d: f64| if d < 0.0 { (MAX_DROP * x / -d).min(1.0) } else { 1.0 };
            lim(base[c].rho, dw[c][0]).min(lim(base[c].t, dw[c][4]))
        });
        // min is exact, so the parallel grouping gives the same value as a serial fold.
        let scale = scale.reduce(|| 1.0f64, f64::min);
        // (Not `par_iter().flatten()`: that makes a parallel iterator of every cell's array,
        // measured at 13 ms per update at 64^3 cells on two cores.)
        if !scale.is_finite() || dw.par_iter().any(|d| d.iter().any(|x| !x.is_finite())) {
            anyhow::bail!(
                "the synthetic solve gave a non-finite correction ({} GMRES steps, relative residual {:e}); `--acceleration none` runs without it",
                outcome.iterations,
                outcome.relative_residual
            );
        }
        self.place = Some(place);
        self.last =
            SolveStats { inner_iterations: outcome.iterations, relative_residual: outcome.relative_residual, scale };
        log::debug!(
            "gsis: {} inner iterations, relative residual {:.2e}, correction scale {scale}; operator {} ({} builds in this run, {t_setup:.3} s), {levels} levels, GMRES on the {place} {t_solve:.3} s (preconditioner {:.3} s, products {:.3} s, the rest {:.3} s)",
            outcome.iterations,
            outcome.relative_residual,
            if rebuild { "rebuilt" } else { "reused" },
            self.builds,
            outcome.seconds[0],
            outcome.seconds[1],
            outcome.seconds[2]
        );
        let t_post = std::time::Instant::now();
        w.change.resize(dw.len(), [0.0; NV]);
        w.change.par_iter_mut().zip(dw.par_iter()).for_each(|(c, d)| *c = d.map(|x| scale * x));
        walls::predict_incident(p, &w.base, &w.change, out);
        partners::predict_exits(p, &w.base, &w.change, out);
        let host_eq = state.host_eq;
        state.fields.par_iter_mut().zip(state.eq.par_iter_mut()).enumerate().for_each(|(c, (f, e))| {
            if fluid(c) {
                let (b, d) = (&w.base[c], &w.change[c]);
                let u = std::array::from_fn(|i| b.u[i] + d[1 + i]);
                *f = Macro { rho: b.rho + d[0], u, t: b.t + d[4], q: w.star[c].q, p: w.star[c].p };
                if host_eq {
                    *e = p.eq_coeffs(f);
                }
            }
        });
        log::debug!(
            "gsis: host work {:.3} s before the solve, {:.3} s after",
            t0.duration_since(t_start).as_secs_f64(),
            t_post.elapsed().as_secs_f64()
        );
        self.scratch = w;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multigrid::Smoother;

    #[test]
    fn stretched_and_one_axis_grids_get_line_smoothing_and_cubic_cells_jacobi() {
        let cube = crate::config::Config::from_json(include_str!("../../../configs/cube-quick.json")).unwrap();
        assert_eq!(grid_smoother(&Problem::new(&cube)), Smoother::Lines, "cube-quick: widths 1:7");
        assert_eq!(grid_smoother(&Problem::new(&crate::config::walled_box([6, 5, 4], 10))), Smoother::Jacobi);
        assert_eq!(grid_smoother(&Problem::new(&crate::config::walled_box([1, 1, 9], 10))), Smoother::Lines);
    }

    #[test]
    fn the_inner_tolerance_tightens_with_the_collisions_across_the_domain() {
        let cavity = |kn: f64| {
            let mut c = crate::config::Config::from_json(include_str!("../../../configs/cavity-quick.json")).unwrap();
            c.gas.kn = Some(kn);
            inner_tolerance(&Problem::new(&c))
        };
        // delta = 68.4 Kn^-1 on the unit cavity (omega 0.81): 0.07 / delta.
        let rel = |a: f64, b: f64| (a - b).abs() / b;
        assert!(rel(cavity(0.01), 0.07 / 68.38) < 1e-3, "{}", cavity(0.01));
        assert!(rel(cavity(0.1), 0.07 / 6.838) < 1e-3, "{}", cavity(0.1));
        assert_eq!(cavity(1.0), INNER_LOOSEST);
        assert_eq!(cavity(1e-4), INNER_TIGHTEST);
    }
}
