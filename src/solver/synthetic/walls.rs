//! The incident number flux that diffuse walls see after a correction.
//!
//! A wall's emission density is incident flux / emitted flux per unit density, computed from
//! the sweep. The correction changes the gas beside the wall by dW, and with it the flux
//! that gas sends into the wall, to first order the half-range flux of the Maxwellian's
//! change (`super::flux::dissipation` and the Euler Jacobian, at rest):
//!
//! ```text
//! d(incident) = s/2 d rho + rho/2 dU_out + rho s / (4 T) dT,     s = sqrt(T / pi),
//! ```
//!
//! with U_out the velocity component towards the wall.

use super::flux::{Base, NV};
use crate::backend::SweepOutput;
use crate::boundary::{Face, FaceKind};
use crate::problem::Problem;

fn incident_change(b: &Base, d: &[f64; NV], side: Face) -> f64 {
    let s = (b.t / std::f64::consts::PI).sqrt();
    let out = -side.inward() * d[1 + side.axis()];
    0.5 * s * d[0] + 0.5 * b.rho * out + b.rho * s / (4.0 * b.t) * d[4]
}

/// Add the incident-flux change of `change` (per cell, about `base`) to the diffuse box
/// faces' and body walls' incident fluxes in `out`.
pub fn predict_incident(p: &Problem, base: &[Base], change: &[[f64; NV]], out: &mut SweepOutput) {
    for face in Face::ALL {
        if !matches!(p.bounds.faces[face.id()].kind, FaceKind::DiffuseWall { .. }) {
            continue;
        }
        for (fc, inc) in out.incident[face.id()].iter_mut().enumerate() {
            let c = face.cell(&p.grid, fc);
            *inc += incident_change(&base[c], &change[c], face);
        }
    }
    for (w, sums) in p.bodies.solids.walls.iter().zip(out.wall.iter_mut()) {
        let c = w.cell as usize;
        sums[0] += incident_change(&base[c], &change[c], w.side);
    }
}
