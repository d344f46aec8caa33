//! The correction operator's hierarchy: when it is rebuilt, about which state, and the build
//! beside the sweep.
//!
//! The operator is linearised about the fields the sweep starts from, W^n, not about the
//! sweep's moments W*: any nonsingular operator leaves the fixed point as it is (`super`),
//! the two differ by what one sweep changes, and W^n is known before the sweep. So the
//! solver builds a new hierarchy on a thread of its own while the backend sweeps
//! ([`crate::solver::Strategy::build_beside`]) and the solve after the sweep finds it ready:
//! on the GPU backends the host is idle during the sweep, and a build took 0.05 s of the
//! paper cavity's 0.21 s iterations and 0.5-1 s of the paper cube's (H200, H100). The
//! choice of which hierarchy a solve uses depends on the fields only, never on the clock, so
//! the path is the same however long a build takes.

use super::flux::Base;
use super::{multigrid, operator, smoother, Gsis};
use crate::model::Macro;
use crate::problem::Problem;
use rayon::prelude::*;

/// The operator is rebuilt only when some fluid cell's density, temperature or velocity
/// (in thermal speeds) has moved by more than this since it was built. Measured (64^3
/// cavity, Kn 1, 2 CPU cores, 10^3 velocities): 16 sweeps to 1e-6 with 2 builds, as with 16.
const REBUILD_DRIFT: f64 = 0.05;

/// [`REBUILD_DRIFT`], or `KNUDSEN_GSIS_REBUILD_DRIFT` (measurements).
fn rebuild_drift() -> f64 {
    std::env::var("KNUDSEN_GSIS_REBUILD_DRIFT").ok().and_then(|v| v.parse().ok()).unwrap_or(REBUILD_DRIFT)
}

/// The correction operator and its multigrid hierarchy, with the state they were
/// linearised about.
pub(super) struct Hierarchy {
    pub(super) base: Vec<Base>,
    pub(super) mg: multigrid::Multigrid,
}

impl Hierarchy {
    /// `factor_lines`: factor the line smoother here (else the device that solves does).
    pub(super) fn build(p: &Problem, base: Vec<Base>, factor_lines: bool) -> anyhow::Result<Self> {
        let solids = &p.bodies.solids;
        let volumes = p.grid.volumes();
        let t = std::time::Instant::now();
        let mut op = operator::Operator::assemble(p, &base, 0.0);
        let t_assemble = t.elapsed().as_secs_f64();
        if p.bounds.closed() {
            let shift = operator::closed_shift(p, &op, &base, &volumes);
            op.diag.par_iter_mut().zip(volumes.par_iter()).enumerate().for_each(|(c, (d, v))| {
                if !solids.is_solid(c) {
                    d[0][0] += shift * v;
                }
            });
        }
        let active: Vec<bool> = (0..p.grid.cells()).into_par_iter().map(|c| !solids.is_solid(c)).collect();
        let t = std::time::Instant::now();
        let mg = multigrid::Multigrid::new(op, p.grid.dims(), &active, smoother(p), factor_lines)?;
        log::debug!(
            "gsis: operator assembled in {t_assemble:.3} s, levels built in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        Ok(Self { base, mg })
    }
}

/// The state the operator is linearised about: the fields the sweep started from in fluid
/// cells, a gas at rest elsewhere (solid cells keep an identity row).
pub(super) fn operator_base(p: &Problem, fields: &[Macro]) -> Vec<Base> {
    let solids = &p.bodies.solids;
    fields
        .par_iter()
        .enumerate()
        .map(|(c, f)| {
            if solids.is_solid(c) {
                Base { rho: 1.0, u: [0.0; 3], t: 1.0 }
            } else {
                Base { rho: f.rho, u: f.u, t: f.t }
            }
        })
        .collect()
}

/// The largest change of a fluid cell's state since `old`, relative to its density,
/// temperature and thermal speed.
fn drift(old: &[Base], new: &[Base], fluid: &(dyn Fn(usize) -> bool + Sync)) -> f64 {
    (0..new.len())
        .into_par_iter()
        .filter(|&c| fluid(c))
        .map(|c| {
            let (a, b) = (&old[c], &new[c]);
            let du = (0..3).map(|i| (b.u[i] - a.u[i]).powi(2)).sum::<f64>().sqrt() / a.t.sqrt();
            ((b.rho - a.rho).abs() / a.rho).max((b.t - a.t).abs() / a.t).max(du)
        })
        .reduce(|| 0.0, f64::max)
}

/// A hierarchy to build: the state to linearise about, and whether the host factors the
/// line smoother.
pub struct BuildJob {
    base: Vec<Base>,
    factor_lines: bool,
}

/// A hierarchy built beside the sweep, and the seconds it took.
pub struct Built(Hierarchy, f64);

impl BuildJob {
    pub fn run(self, p: &Problem) -> anyhow::Result<Built> {
        let t = std::time::Instant::now();
        let h = Hierarchy::build(p, self.base, self.factor_lines)?;
        Ok(Built(h, t.elapsed().as_secs_f64()))
    }
}

impl Gsis {
    /// The hierarchy the next solve needs, if it is not the one held: a restored one, or
    /// one linearised about `fields` (the next sweep's) once they have drifted more than
    /// [`REBUILD_DRIFT`] from the held one's state.
    pub(super) fn next_build(&mut self, p: &Problem, fields: &[Macro]) -> Option<BuildJob> {
        let solids = &p.bodies.solids;
        let fluid = |c: usize| !solids.is_solid(c);
        let now = operator_base(p, fields);
        let held = self.pending.as_ref().or(self.hierarchy.as_ref().map(|h| &h.base));
        let base = match held {
            Some(b) if drift(b, &now, &fluid) <= rebuild_drift() => self.pending.take()?,
            _ => {
                self.pending = None;
                now
            }
        };
        // The old hierarchy is of no more use (a device keeps its own copy until the next
        // upload): freed before the new one is built, so the host never holds two.
        self.hierarchy = None;
        Some(BuildJob { base, factor_lines: self.host_factors() })
    }

    /// Take a hierarchy built beside the sweep (or in line).
    pub(super) fn adopt(&mut self, built: Built) {
        let Built(h, seconds) = built;
        self.hierarchy = Some(h);
        self.builds += 1;
        self.generation += 1;
        self.built_seconds = seconds;
        self.fresh = true;
    }

    /// Build in line what [`Gsis::next_build`] asks, unless it was built beside the sweep.
    pub(super) fn ensure_hierarchy(&mut self, p: &Problem, fields: &[Macro]) -> anyhow::Result<bool> {
        if std::mem::take(&mut self.decided) {
            return Ok(false);
        }
        let Some(job) = self.next_build(p, fields) else { return Ok(false) };
        let built = job.run(p)?;
        self.adopt(built);
        Ok(true)
    }
}
