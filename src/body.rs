//! Solid bodies: the Maxwell diffuse walls on their surfaces.
//!
//! Every wall face (see [`crate::grid::solid`]) emits `rho_w shape_b(xi)` into the velocities
//! leaving the body, with `shape_b` the unit Maxwellian of its body's temperature and
//! velocity, and `rho_w = incident flux / emit_norm[b][side]` from the previous iteration,
//! face by face (the paper's rho_wall, in discrete form so that each face conserves mass
//! exactly on the velocity grid).

use crate::boundary::Face;
use crate::config::Config;
use crate::grid::{Grid, Solids, VelocityGrid};
use crate::model::maxwellian;

#[derive(Debug, Clone)]
pub struct BodyBc {
    pub name: String,
    pub temperature: f64,
    pub velocity: [f64; 3],
    /// Per velocity: the unit-density Maxwellian of the wall (not masked: the sweep only
    /// reads it for velocities leaving the wall).
    pub shape: Vec<f64>,
    /// Per side d: sum over emitted velocities (d.normal_speed > 0) of w (xi . n) shape.
    pub emit_norm: [f64; 6],
    /// Per side: the emitted momentum flux sum w (xi . n) xi shape, and energy flux
    /// sum w (xi . n) |xi|^2 / 2 shape, of a unit-density emission.
    pub emit_momentum: [[f64; 3]; 6],
    pub emit_energy: [f64; 6],
}

#[derive(Debug, Clone, Default)]
pub struct Bodies {
    pub bodies: Vec<BodyBc>,
    pub solids: Solids,
}

/// Per wall face, the incident sums of one sweep: number flux sum w |xi . n| f, momentum flux
/// sum w |xi . n| xi f (3), energy flux sum w |xi . n| |xi|^2/2 f, over velocities moving into
/// the wall.
pub const WALL_SUMS: usize = 5;

/// The boxes of all bodies, as cell index ranges [lo, hi) per axis (validated config).
fn body_cells(cfg: &Config, g: &Grid) -> Vec<[[usize; 2]; 3]> {
    let axes = [&g.x, &g.y, &g.z];
    cfg.bodies
        .iter()
        .map(|b| {
            std::array::from_fn(|d| [axes[d].face_index(b.min[d]).unwrap(), axes[d].face_index(b.max[d]).unwrap()])
        })
        .collect()
}

impl Bodies {
    pub fn new(cfg: &Config, g: &Grid, v: &VelocityGrid) -> Self {
        let solids = Solids::new(g, &body_cells(cfg, g));
        let bodies = cfg
            .bodies
            .iter()
            .enumerate()
            .map(|(b, bc)| {
                let shape: Vec<f64> = v.xi.iter().map(|&x| maxwellian(1.0, bc.velocity, bc.temperature, x)).collect();
                let mut emit_norm = [0.0; 6];
                let mut emit_momentum = [[0.0; 3]; 6];
                let mut emit_energy = [0.0; 6];
                for side in Face::ALL {
                    let d = side.id();
                    for ((&x, &w), &s) in v.xi.iter().zip(&v.w).zip(&shape) {
                        let un = side.normal_speed(x);
                        if un > 0.0 {
                            let wf = w * un * s;
                            emit_norm[d] += wf;
                            for a in 0..3 {
                                emit_momentum[d][a] += wf * x[a];
                            }
                            emit_energy[d] += wf * 0.5 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
                        }
                    }
                }
                BodyBc {
                    name: bc.label(b),
                    temperature: bc.temperature,
                    velocity: bc.velocity,
                    shape,
                    emit_norm,
                    emit_momentum,
                    emit_energy,
                }
            })
            .collect();
        Self { bodies, solids }
    }

    /// Wall densities from the incident sums of the last sweep.
    pub fn densities(&self, wall: &[[f64; WALL_SUMS]]) -> Vec<f64> {
        self.solids
            .walls
            .iter()
            .zip(wall)
            .map(|(w, s)| s[0] / self.bodies[w.body as usize].emit_norm[w.side.id()])
            .collect()
    }

    /// Incident sums on every wall face when the whole domain holds f_M(rho, u, t).
    pub fn uniform_incident(&self, v: &VelocityGrid, rho: f64, u: [f64; 3], t: f64) -> Vec<[f64; WALL_SUMS]> {
        let per_side: [[f64; WALL_SUMS]; 6] = std::array::from_fn(|d| {
            let side = Face::ALL[d];
            let mut s = [0.0; WALL_SUMS];
            for (&x, &w) in v.xi.iter().zip(&v.w) {
                let un = side.normal_speed(x);
                if un < 0.0 {
                    let wf = w * -un * maxwellian(rho, u, t, x);
                    add_wall_sums(&mut s, x, wf);
                }
            }
            s
        });
        self.solids.walls.iter().map(|w| per_side[w.side.id()]).collect()
    }
}

/// Add one velocity's contribution w |xi . n| f (= `wf`) to a wall face's incident sums.
#[inline(always)]
pub fn add_wall_sums(s: &mut [f64; WALL_SUMS], x: [f64; 3], wf: f64) {
    s[0] += wf;
    s[1] += wf * x[0];
    s[2] += wf * x[1];
    s[3] += wf * x[2];
    s[4] += wf * 0.5 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
}
