//! The source iteration (paper eq. iter_outer) around a [`Backend`]:
//!
//! 1. sweep every velocity with f^{S,n}, tau^n and the wall densities rho_w^n;
//! 2. rescale the mass of a closed domain to its initial value;
//! 3. derive the new macroscopic fields and rho_w^{n+1} from the incident fluxes;
//! 4. measure the change of density, momentum and energy; stop below the tolerance.

use crate::backend::{Backend, SweepInput, SweepOutput};
use crate::body::WALL_SUMS;
use crate::boundary::FaceData;
use crate::damping::{damped_update, DensitySteps};
use crate::model::{raw, EqCoeffs, Macro, NRAW};
use crate::problem::Problem;
use rayon::prelude::*;
use std::time::Instant;

/// Names of the residual components, in [`IterationRecord::residuals`] order.
pub const RESIDUAL_NAMES: [&str; 5] = ["density", "momentum_x", "momentum_y", "momentum_z", "energy"];

/// Momentum changes are measured relative to max(||rho U||, MOMENTUM_FLOOR ||rho|| v0), so
/// a gas at rest (||rho U|| at round-off) does not turn round-off noise into O(1) residuals;
/// flows faster than 1e-3 v0 get a truly relative measure.
pub const MOMENTUM_FLOOR: f64 = 1e-3;

#[derive(Debug, Clone, PartialEq)]
pub struct IterationRecord {
    pub iteration: usize,
    /// Relative L2 changes: density, momentum x/y/z, energy.
    pub residuals: [f64; 5],
    /// Seconds since the run started, at the end of this iteration.
    pub elapsed: f64,
    /// Seconds this iteration took.
    pub seconds: f64,
    /// With a body and a free stream: the first body's drag coefficient from this sweep,
    /// to watch the load converge alongside the residual.
    pub drag: Option<f64>,
}

impl IterationRecord {
    /// The convergence measure: the largest component.
    pub fn residual(&self) -> f64 {
        self.residuals.iter().cloned().fold(0.0, f64::max)
    }
}

#[derive(Debug, Clone)]
pub struct RunResult {
    /// Final macroscopic state per cell.
    pub fields: Vec<Macro>,
    pub raw: Vec<[f64; NRAW]>,
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
    pub history: Vec<IterationRecord>,
    pub converged: bool,
    pub total_seconds: f64,
}

impl RunResult {
    pub fn iterations(&self) -> usize {
        self.history.len()
    }
    pub fn final_residual(&self) -> f64 {
        self.history.last().map_or(f64::NAN, IterationRecord::residual)
    }
}

/// Density, momentum and total energy per cell: rho, rho U, rho E = (1/2) sum w |xi|^2 f.
fn conserved_from_raw(m: &[f64; NRAW]) -> [f64; 5] {
    let e = 0.5 * (m[raw::M2] + m[raw::M2 + 1] + m[raw::M2 + 2]);
    [m[raw::RHO], m[raw::MOM], m[raw::MOM + 1], m[raw::MOM + 2], e]
}

fn conserved_from_macro(m: &Macro) -> [f64; 5] {
    let u2 = m.u.iter().map(|u| u * u).sum::<f64>();
    // rho E = rho |U|^2 / 2 + (3/2) p with p = rho T / 2.
    [m.rho, m.rho * m.u[0], m.rho * m.u[1], m.rho * m.u[2], 0.5 * m.rho * u2 + 0.75 * m.rho * m.t]
}

/// Relative L2 change of each conserved field between two iterates (see MOMENTUM_FLOOR).
pub fn residuals(old: &[[f64; 5]], new: &[[f64; 5]]) -> [f64; 5] {
    let mut diff2 = [0.0f64; 5];
    let mut norm2 = [0.0f64; 5];
    for (a, b) in old.iter().zip(new) {
        for c in 0..5 {
            diff2[c] += (b[c] - a[c]).powi(2);
            norm2[c] += b[c] * b[c];
        }
    }
    let mom = (norm2[1] + norm2[2] + norm2[3]).sqrt().max(MOMENTUM_FLOOR * norm2[0].sqrt());
    let denom = [norm2[0].sqrt(), mom, mom, mom, norm2[4].sqrt()];
    std::array::from_fn(|c| if diff2[c] == 0.0 { 0.0 } else { diff2[c].sqrt() / denom[c] })
}

/// The state a finished run leaves to continue from: the macroscopic fields (which give
/// f^S and nu), the box-face and wall densities, partner data and density-damping state of the
/// next iteration, and the history so far. Continuing from it gives the same iterates as one uninterrupted run (up to the
/// backend's own round-off: the fields are stored in f64).
#[derive(Debug, Clone)]
pub struct Restart {
    pub fields: Vec<Macro>,
    pub face_density: FaceData,
    pub wall_density: Vec<f64>,
    pub partner: FaceData,
    pub steps: DensitySteps,
    pub history: Vec<IterationRecord>,
}

pub struct Solver<'a> {
    pub problem: &'a Problem,
    pub backend: Box<dyn Backend + 'a>,
    restart: Option<Restart>,
}

impl<'a> Solver<'a> {
    pub fn new(problem: &'a Problem, backend: Box<dyn Backend + 'a>) -> Self {
        Self { problem, backend, restart: None }
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

    pub fn run_for(
        &mut self,
        max_iterations: usize,
        tolerance: f64,
        observe: &mut dyn FnMut(&IterationRecord),
    ) -> anyhow::Result<RunResult> {
        let p = self.problem;
        let floor = self.backend.residual_floor();
        let tolerance = if tolerance < floor {
            log::warn!(
                "tolerance {tolerance:.1e} is below what the {} backend's f32 arithmetic resolves; stopping at {floor:.1e}",
                self.backend.kind()
            );
            floor
        } else {
            tolerance
        };
        let start = Instant::now();
        let ncell = p.grid.cells();
        let m0 = p.initial_macro();
        let solids = &p.bodies.solids;
        // Solid cells hold no gas: NaN fields (ParaView blanks them) and zero coefficients.
        let solid_macro = Macro { rho: f64::NAN, u: [f64::NAN; 3], t: f64::NAN, q: [f64::NAN; 3], p: [f64::NAN; 6] };
        let mut fields: Vec<Macro> = (0..ncell).map(|c| if solids.is_solid(c) { solid_macro } else { m0 }).collect();
        let eq0 = p.eq_coeffs(&m0);
        let mut eq: Vec<EqCoeffs> =
            (0..ncell).map(|c| if solids.is_solid(c) { EqCoeffs::default() } else { eq0 }).collect();
        let mut face_density = p.bounds.densities(&p.bounds.uniform_incident(&p.grid, &p.vgrid, m0.rho, m0.u, m0.t));
        let mut wall_density = p.bodies.densities(&p.bodies.uniform_incident(&p.vgrid, m0.rho, m0.u, m0.t));
        let mut used_wall_density = wall_density.clone();
        // Specular and periodic faces start from the exits of the uniform initial state.
        let mut partner = p.bounds.partner_inflow(&p.bounds.uniform_exits(&p.grid, &p.vgrid, m0.rho, m0.u, m0.t));
        let mut steps = DensitySteps::default();
        let mut history = Vec::new();
        let mut elapsed0 = 0.0;
        if let Some(r) = self.restart.take() {
            fields = r.fields;
            eq.par_iter_mut().zip(&fields).enumerate().for_each(|(c, (e, f))| {
                if !solids.is_solid(c) {
                    *e = p.eq_coeffs(f);
                }
            });
            face_density = r.face_density;
            wall_density = r.wall_density;
            partner = r.partner;
            steps = r.steps;
            used_wall_density = wall_density.clone();
            elapsed0 = r.history.last().map_or(0.0, |h| h.elapsed);
            history = r.history;
        }
        let mut conserved: Vec<[f64; 5]> = fields
            .iter()
            .enumerate()
            .map(|(c, f)| if solids.is_solid(c) { [0.0; 5] } else { conserved_from_macro(f) })
            .collect();
        let volumes = p.grid.volumes();
        let mass0: f64 = volumes.iter().map(|v| v * m0.rho).sum();
        let rescale = p.config.mass_rescale();

        let mut out = SweepOutput::zeros(p);
        let mut converged = false;
        let first = history.len() + 1;
        for iteration in first..first + max_iterations {
            let t0 = Instant::now();
            self.backend.sweep(
                &SweepInput { eq: &eq, face_density: &face_density, wall_density: &wall_density, partner: &partner },
                &mut out,
            )?;
            let t_sweep = t0.elapsed().as_secs_f64();

            if rescale {
                // The lagged wall density lets the mass drift slightly; rescaling f (hence
                // every raw moment and incident flux) restores it, as in the paper.
                let mass: f64 = out.raw.iter().zip(&volumes).map(|(m, v)| m[raw::RHO] * v).sum();
                let factor = mass0 / mass;
                out.raw.iter_mut().for_each(|m| m.iter_mut().for_each(|x| *x *= factor));
                out.incident.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
                out.wall.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
                out.exits.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x *= factor));
            }

            let new_conserved: Vec<[f64; 5]> = out.raw.par_iter().map(conserved_from_raw).collect();
            let res = residuals(&conserved, &new_conserved);
            conserved = new_conserved;
            // Cells are independent: update them in parallel (the sweep coefficients' grid
            // normalisation costs 3M exponentials per cell).
            fields.par_iter_mut().zip(eq.par_iter_mut()).zip(out.raw.par_iter()).enumerate().for_each(
                |(c, ((f, e), m))| {
                    if !solids.is_solid(c) {
                        *f = Macro::from_raw(m);
                        *e = p.eq_coeffs(f);
                    }
                },
            );
            // Written as !(x > 0) so that NaN counts as non-physical.
            #[allow(clippy::nonminimal_bool)]
            let bad = fields.iter().enumerate().position(|(c, f)| !solids.is_solid(c) && !(f.rho > 0.0 && f.t > 0.0));
            if let Some(c) = bad {
                anyhow::bail!(
                    "iteration {iteration}: non-physical state in cell {c} (rho = {}, T = {}); the velocity grid may be too coarse or too narrow",
                    fields[c].rho,
                    fields[c].t
                );
            }
            partner = p.bounds.partner_inflow(&out.exits);
            used_wall_density = wall_density.clone();
            let (fresh_face, fresh_wall) = (p.bounds.densities(&out.incident), p.bodies.densities(&out.wall));
            if p.config.solver.wall_density_damping {
                for ((d, f), st) in face_density.iter_mut().zip(fresh_face).zip(steps.face.iter_mut()) {
                    damped_update(d, f, st);
                }
                damped_update(&mut wall_density, fresh_wall, &mut steps.wall);
            } else {
                (face_density, wall_density) = (fresh_face, fresh_wall);
                // No state to carry: a later damped restart starts from undamped steps.
                steps = DensitySteps::default();
            }

            log::debug!(
                "iteration {iteration}: backend {t_sweep:.4} s, host update {:.4} s",
                t0.elapsed().as_secs_f64() - t_sweep
            );
            let rec = IterationRecord {
                iteration,
                residuals: res,
                elapsed: elapsed0 + start.elapsed().as_secs_f64(),
                seconds: t0.elapsed().as_secs_f64(),
                drag: None,
            };
            let mut rec = rec;
            if solids.any() && p.config.free_stream.is_some() {
                let surf = crate::loads::surface(p, &out.wall, &used_wall_density);
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
        }
        Ok(RunResult {
            fields,
            raw: out.raw,
            incident: out.incident,
            wall: out.wall,
            wall_density: used_wall_density,
            next_face_density: face_density,
            next_wall_density: wall_density,
            next_partner: partner,
            next_steps: steps,
            history,
            converged,
            total_seconds: elapsed0 + start.elapsed().as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residual_is_relative_and_zero_for_no_change() {
        let a = vec![[1.0, 0.1, 0.0, 0.0, 1.0]; 4];
        assert_eq!(residuals(&a, &a), [0.0; 5]);
        let mut b = a.clone();
        b[0][0] = 1.1;
        let r = residuals(&a, &b);
        // ||d rho|| = 0.1, ||rho|| = sqrt(3 + 1.21).
        assert!((r[0] - 0.1 / (3.0f64 + 1.21).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn momentum_floor_guards_gas_at_rest() {
        let a = vec![[1.0, 0.0, 0.0, 0.0, 0.75]; 4];
        let mut b = a.clone();
        b[1][1] = 1e-17;
        let r = residuals(&a, &b);
        assert!(r[1] < 1e-13, "{r:?}");
    }
}
