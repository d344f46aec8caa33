//! What the iteration carries from one sweep to the next: the macroscopic fields and their
//! sweep coefficients, the box-face and wall densities, the partner data of specular and
//! periodic faces, the density-damping state and the conserved fields of the last iterate.

use super::convergence::conserved_from_macro;
use super::IterationRecord;
use crate::backend::SweepOutput;
use crate::boundary::FaceData;
use crate::damping::{damped_update, DensitySteps};
use crate::model::{EqCoeffs, Macro};
use crate::problem::Problem;
use rayon::prelude::*;

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
    /// The iteration strategy's own state (`super::Strategy::saved`), if the run kept one.
    pub strategy_state: Option<Vec<[f64; 5]>>,
    /// The conserved variables of the last sweep's output, which the next residual compares
    /// against (a synthetic correction's fields no longer give them). None in results of
    /// older versions and after a coarse start: then they come from the fields.
    pub sweep_conserved: Option<Vec<[f64; 5]>>,
}

#[derive(Clone)]
pub struct State {
    pub fields: Vec<Macro>,
    /// The sweep coefficients of `fields`, kept up to date only while `host_eq`.
    pub eq: Vec<EqCoeffs>,
    /// Whether the host computes `eq` after each update; false where the backend derives
    /// the coefficients from the fields itself (`Backend::derives_coefficients`).
    pub host_eq: bool,
    /// The densities the next sweep emits with.
    pub face_density: FaceData,
    pub wall_density: Vec<f64>,
    /// The wall densities the last sweep used (with its incident sums they give the
    /// discrete surface fluxes; `crate::loads`).
    pub used_wall_density: Vec<f64>,
    pub partner: FaceData,
    pub steps: DensitySteps,
    /// Density, momentum and energy per cell of the last iterate (residuals).
    pub conserved: Vec<[f64; 5]>,
}

impl State {
    /// The uniform initial state of the case, with the box-face, wall and partner data of
    /// that state.
    pub fn initial(p: &Problem) -> Self {
        let ncell = p.grid.cells();
        let m0 = p.initial_macro();
        let solids = &p.bodies.solids;
        // Solid cells hold no gas: NaN fields (ParaView blanks them) and zero coefficients.
        let solid_macro = Macro { rho: f64::NAN, u: [f64::NAN; 3], t: f64::NAN, q: [f64::NAN; 3], p: [f64::NAN; 6] };
        let fields: Vec<Macro> = (0..ncell).map(|c| if solids.is_solid(c) { solid_macro } else { m0 }).collect();
        let eq0 = p.eq_coeffs(&m0);
        let eq = (0..ncell).map(|c| if solids.is_solid(c) { EqCoeffs::default() } else { eq0 }).collect();
        let face_density = p.bounds.densities(&p.bounds.uniform_incident(&p.grid, &p.vgrid, m0.rho, m0.u, m0.t));
        let (wall_density, partner) = initial_walls_and_partners(p);
        let conserved = conserved_of(p, &fields);
        Self {
            used_wall_density: wall_density.clone(),
            fields,
            eq,
            host_eq: true,
            face_density,
            wall_density,
            partner,
            steps: DensitySteps::default(),
            conserved,
        }
    }

    /// The state a previous run left.
    pub fn restart(p: &Problem, r: Restart) -> Self {
        let solids = &p.bodies.solids;
        let eq = r
            .fields
            .par_iter()
            .enumerate()
            .map(|(c, f)| if solids.is_solid(c) { EqCoeffs::default() } else { p.eq_coeffs(f) })
            .collect();
        let conserved = r.sweep_conserved.unwrap_or_else(|| conserved_of(p, &r.fields));
        Self {
            used_wall_density: r.wall_density.clone(),
            fields: r.fields,
            eq,
            host_eq: true,
            face_density: r.face_density,
            wall_density: r.wall_density,
            partner: r.partner,
            steps: r.steps,
            conserved,
        }
    }

    /// Fail on a fluid cell with non-positive (or NaN) density or temperature, naming the
    /// iteration, the cell, its values and the backend. A cause is named only where the
    /// sweep's own output shows it: a fluid cell whose raw moments are all zero or not
    /// finite received nothing from the sweep, which is a backend fault, not physics.
    pub fn check_physical(
        &self,
        p: &Problem,
        iteration: usize,
        backend: &str,
        raw: &[[f64; crate::model::NRAW]],
    ) -> anyhow::Result<()> {
        let solids = &p.bodies.solids;
        // Written as !(x > 0) so that NaN counts as non-physical.
        #[allow(clippy::nonminimal_bool)]
        let bad = self
            .fields
            .par_iter()
            .enumerate()
            .position_first(|(c, f)| !solids.is_solid(c) && !(f.rho > 0.0 && f.t > 0.0));
        let Some(c) = bad else { return Ok(()) };
        let f = &self.fields[c];
        let [i, j, k] = p.grid.coords(c);
        let cause = if raw[c].iter().all(|&x| x == 0.0) {
            "; the sweep added nothing to this cell's moments: a fault of the backend, not of the case (please report it)"
        } else if raw[c].iter().any(|x| !x.is_finite()) {
            "; the sweep returned non-finite moments for this cell"
        } else {
            ""
        };
        anyhow::bail!(
            "iteration {iteration}: non-physical state in cell {c} (i, j, k = {i}, {j}, {k}) on the {backend} backend: rho = {}, T = {}, U = [{}, {}, {}]{cause}",
            f.rho,
            f.t,
            f.u[0],
            f.u[1],
            f.u[2]
        )
    }

    /// The error of a sweep that gave a non-finite value (`what`: its residual or its total
    /// mass): the first fluid cell whose raw moments are not finite, where there is one.
    /// Raised before the mass rescale, which would spread the value to every cell, and
    /// before the macroscopic update, which would otherwise spend its time on it (a
    /// synthetic solve's GMRES ran to its step limit) and be blamed for it.
    pub fn non_finite_sweep(
        p: &Problem,
        iteration: usize,
        backend: &str,
        raw: &[[f64; crate::model::NRAW]],
        what: &str,
    ) -> anyhow::Error {
        let solids = &p.bodies.solids;
        let bad =
            raw.par_iter().enumerate().position_first(|(c, m)| !solids.is_solid(c) && m.iter().any(|x| !x.is_finite()));
        match bad {
            Some(c) => {
                let [i, j, k] = p.grid.coords(c);
                anyhow::anyhow!(
                    "iteration {iteration}: the sweep on the {backend} backend returned non-finite moments in cell {c} (i, j, k = {i}, {j}, {k}): {:?}",
                    raw[c]
                )
            }
            None => {
                // A fluid cell the sweep added nothing to (its zero density divides the
                // residual) is the backend's fault.
                let empty = raw
                    .par_iter()
                    .enumerate()
                    .position_first(|(c, m)| !solids.is_solid(c) && m.iter().all(|&x| x == 0.0));
                match empty {
                    Some(c) => {
                        let [i, j, k] = p.grid.coords(c);
                        anyhow::anyhow!(
                            "iteration {iteration}: {what}: the sweep on the {backend} backend added nothing to cell {c} (i, j, k = {i}, {j}, {k}), a fault of the backend, not of the case (please report it)"
                        )
                    }
                    None => anyhow::anyhow!("iteration {iteration}: {what} on the {backend} backend"),
                }
            }
        }
    }

    /// The box-face, wall and partner data of the next sweep from this sweep's incident
    /// fluxes and exits, damped where successive updates alternate (`crate::damping`).
    /// `predicted`: the update moved the incident fluxes to predict a synthetic correction.
    /// In an open domain the damping is then left out: the correction's prediction assumes
    /// the walls follow it in full, and a wall held back by the damping let mass leave or
    /// enter through the free-stream faces each sweep (a box with one free-stream face
    /// oscillated at residual 0.3-0.6 for 300 sweeps with it, and converged in 33 without;
    /// `tests/gsis.rs`). A closed domain's mass rescale keeps that mode in check, and the
    /// damping stays there (parallel plates near the free-molecular limit need it), unless the
    /// gas is collisional ([`PLAIN_AFTER_CORRECTION_DELTA`]).
    pub fn update_boundaries(&mut self, p: &Problem, out: &SweepOutput, predicted: bool) {
        self.partner = p.bounds.partner_inflow(&out.exits);
        self.used_wall_density = self.wall_density.clone();
        let (fresh_face, fresh_wall) = (p.bounds.densities(&out.incident), p.bodies.densities(&out.wall));
        let plain_after_correction = predicted && (!p.bounds.closed() || collisional(p));
        let damp = p.config.solver.wall_density_damping && !plain_after_correction;
        if damp {
            for ((d, f), st) in self.face_density.iter_mut().zip(fresh_face).zip(self.steps.face.iter_mut()) {
                damped_update(d, f, st);
            }
            damped_update(&mut self.wall_density, fresh_wall, &mut self.steps.wall);
        } else {
            (self.face_density, self.wall_density) = (fresh_face, fresh_wall);
            // No state to carry: a later damped restart starts from undamped steps.
            self.steps = DensitySteps::default();
        }
    }
}

/// Mean free paths across the box's shortest side from which the update after a synthetic
/// correction is the plain one in a closed domain too. The damping answers walls that face
/// each other across a nearly collisionless gap; in a collisional gas collisions damp that
/// mode, and the damping, holding walls back from the correction's predicted fluxes, made GSIS
/// diverge (a 2 x 2 x 4-cell box with a body and 12^3 velocities from delta ~ 23 on, while it
/// converged at 13.7: `tests/wall_damping.rs`). Parallel plates at delta 0.1 still need it
/// after corrections (140 sweeps without, 26 with); at delta 10 they take 27 either way.
pub const PLAIN_AFTER_CORRECTION_DELTA: f64 = 10.0;

/// Whether the gas is collisional across the box's shortest side ([`PLAIN_AFTER_CORRECTION_DELTA`]):
/// the shortest of the axes with a diffuse wall on either side (walls face each other across
/// them; the width of a periodic or specular axis, a collapsed one above all, is whatever the
/// case gives it), or where no axis has one (bodies between periodic or specular faces), of
/// the axes that are not collapsed.
fn collisional(p: &Problem) -> bool {
    use crate::boundary::FaceKind;
    let g = &p.grid;
    let width = |a: usize| [&g.x, &g.y, &g.z][a].length();
    let walled =
        |a: usize| p.bounds.faces[2 * a..2 * a + 2].iter().any(|f| matches!(f.kind, FaceKind::DiffuseWall { .. }));
    let shortest = |keep: &dyn Fn(usize) -> bool| (0..3).filter(|&a| keep(a)).map(width).fold(f64::INFINITY, f64::min);
    let across_walls = shortest(&walled);
    let shortest = if across_walls.is_finite() { across_walls } else { shortest(&|a| !p.bounds.collapsed[a]) };
    p.delta * shortest >= PLAIN_AFTER_CORRECTION_DELTA
}

/// The body walls' densities and the partner data (specular and periodic faces) of the
/// case's uniform initial state: the walls in balance with it, the partner faces reading
/// its exits.
pub(super) fn initial_walls_and_partners(p: &Problem) -> (Vec<f64>, FaceData) {
    let m0 = p.initial_macro();
    let wall_density = p.bodies.densities(&p.bodies.uniform_incident(&p.vgrid, m0.rho, m0.u, m0.t));
    let partner = p.bounds.partner_inflow(&p.bounds.uniform_exits(&p.grid, &p.vgrid, m0.rho, m0.u, m0.t));
    (wall_density, partner)
}

fn conserved_of(p: &Problem, fields: &[Macro]) -> Vec<[f64; 5]> {
    let solids = &p.bodies.solids;
    fields
        .iter()
        .enumerate()
        .map(|(c, f)| if solids.is_solid(c) { [0.0; 5] } else { conserved_from_macro(f) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NRAW;

    fn problem() -> Problem {
        Problem::new(&crate::config::walled_box([2, 2, 2], 10))
    }

    #[test]
    fn a_non_physical_state_names_iteration_cell_values_and_backend() {
        let p = problem();
        let mut s = State::initial(&p);
        let mut raw = vec![[1.0; NRAW]; p.grid.cells()];
        assert!(s.check_physical(&p, 1, "cpu", &raw).is_ok());
        s.fields[5].t = -0.25;
        let e = s.check_physical(&p, 7, "wgpu", &raw).unwrap_err().to_string();
        assert!(e.contains("iteration 7") && e.contains("cell 5 (i, j, k = 1, 0, 1)"), "{e}");
        assert!(e.contains("wgpu backend") && e.contains("T = -0.25"), "{e}");
        // Finite moments: no cause is claimed.
        assert!(!e.contains("fault"), "{e}");
        // Moments the sweep never wrote: the backend is named as the cause.
        raw[5] = [0.0; NRAW];
        s.fields[5].rho = 0.0;
        let e = s.check_physical(&p, 1, "cuda", &raw).unwrap_err().to_string();
        assert!(e.contains("added nothing") && e.contains("fault of the backend"), "{e}");
    }
}
