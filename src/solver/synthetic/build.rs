//! The correction operator's hierarchy, and when it is rebuilt.

use super::flux::Base;
use super::{multigrid, operator, smoother, Gsis};
use crate::problem::Problem;
use rayon::prelude::*;

/// The operator is linearised about the sweep's state; any nonsingular operator leaves the
/// fixed point as it is, so it is rebuilt only when some fluid cell's density, temperature
/// or velocity (in thermal speeds) has moved by more than this since it was built. Measured
/// at 0.05 (64^3 cavity, Kn 1, 2 CPU cores, 10^3 velocities): 16 sweeps to 1e-6 with 2
/// builds, as with 16. At 0.2 (2026-11-26): the validation suite's 41 runs (CPU) take the
/// same sweeps as at 0.05, their values within 1e-9; the paper cavity the same 12 sweeps
/// with 1 build instead of 2, the paper cube the same 11 with 4 instead of 5, 1.5-3% sooner
/// (CUDA, H100; `docs/performance.md`, "The synthetic operator's rebuild drift").
///
/// The state matters for the rate, not for the fixed point: linearised about the fields the
/// sweep starts from instead (known before the sweep, so that the build could run beside
/// it), the paper cube took 14 sweeps against 11 (CUDA, H200, 2026-11-26), while the cavity
/// and planar cases kept their counts.
pub(super) const REBUILD_DRIFT: f64 = 0.2;

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
        Self::rebuild(p, base, factor_lines, None)
    }

    /// [`Hierarchy::build`] in `old`'s finest operator's storage (the same values as a fresh
    /// build: [`operator::Operator::assemble_reusing`]).
    fn rebuild(
        p: &Problem,
        base: Vec<Base>,
        factor_lines: bool,
        old: Option<operator::Operator>,
    ) -> anyhow::Result<Self> {
        let solids = &p.bodies.solids;
        let volumes = p.grid.volumes();
        let t = std::time::Instant::now();
        let mut op = operator::Operator::assemble_reusing(p, &base, 0.0, old);
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

impl Gsis {
    /// Hold the hierarchy this solve needs: a restored one first (a continued run rebuilds
    /// the operator its predecessor was using), then one linearised about `base` (the
    /// sweep's state) where none is held or the held one's state has drifted more than
    /// [`REBUILD_DRIFT`] from it. Whether it built one.
    pub(super) fn ensure_hierarchy(&mut self, p: &Problem, base: &[Base]) -> anyhow::Result<bool> {
        if let Some(saved) = self.pending.take() {
            self.hierarchy = Some(Hierarchy::build(p, saved, self.host_factors())?);
            self.generation += 1;
        }
        let fluid = |c: usize| !p.bodies.solids.is_solid(c);
        let rebuild = match &self.hierarchy {
            Some(h) => drift(&h.base, base, &fluid) > rebuild_drift(),
            None => true,
        };
        if rebuild {
            // The old one's coarse levels are freed before the new are built; its finest
            // operator and state arrays take the new values.
            let (old_op, mut new_base) = match self.hierarchy.take() {
                Some(h) => (Some(h.mg.into_operator()), h.base),
                None => (None, Vec::new()),
            };
            new_base.clear();
            new_base.extend_from_slice(base);
            self.hierarchy = Some(Hierarchy::rebuild(p, new_base, self.host_factors(), old_op)?);
            self.builds += 1;
            self.generation += 1;
        }
        Ok(rebuild)
    }
}
