//! The exits that specular and periodic faces read after a correction.
//!
//! A partner face's inflow is what left the domain at the partner location in the previous
//! sweep (`crate::boundary`, "Specular and periodic faces"). After a correction dW those
//! exits are stale: they belong to f*, whose moments are W*, while the correction assumes
//! that the gas beside the face now holds W* + dW. Left alone, the next sweep feeds the
//! corrected gas one sweep's worth of old inflow through every partner face, and a box
//! open through a free-stream face with periodic or specular sides oscillated at residual
//! 0.4-0.6 for 300 sweeps that way (`tests/gsis.rs`). So each exit moves by the change of
//! the local Maxwellian, the synthetic model's own near-equilibrium perturbation:
//!
//! ```text
//! d f(xi) = f_M(W) [ d rho / rho + 2 c . dU / T + (|c|^2 / T - 3/2) dT / T ],   c = xi - U,
//! ```
//!
//! about the sweep's state W of the face cell. The move vanishes with the correction, so
//! the fixed point is unchanged; a value it would take below zero stops at zero (and that
//! stop, at most the move itself, vanishes with it too).

use super::flux::{Base, NV};
use crate::backend::SweepOutput;
use crate::boundary::{slot, slots_per_cell, Face};
use crate::model::maxwellian;
use crate::problem::Problem;
use rayon::prelude::*;

/// The change of f_M(`b`) at `xi` for the change `d` = (rho, U, T) of its state.
fn maxwellian_change(b: &Base, d: &[f64; NV], xi: [f64; 3]) -> f64 {
    let c: [f64; 3] = std::array::from_fn(|i| xi[i] - b.u[i]);
    let c2 = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    let cu = c[0] * d[1] + c[1] * d[2] + c[2] * d[3];
    let rel = d[0] / b.rho + 2.0 * cu / b.t + (c2 / b.t - 1.5) * d[4] / b.t;
    maxwellian(b.rho, b.u, b.t, xi) * rel
}

/// Move the exits in `out` (read by specular and periodic faces in the next sweep) by the
/// Maxwellian change of `change` (per cell, about `base`) in the face cell each left from.
pub fn predict_exits(p: &Problem, base: &[Base], change: &[[f64; NV]], out: &mut SweepOutput) {
    let m = p.bounds.m;
    let s = slots_per_cell(m);
    for face in Face::ALL {
        let exits = &mut out.exits[face.id()];
        if exits.is_empty() {
            continue;
        }
        // The velocities that leave through this face, by slot.
        let mut leaving = vec![[0.0; 3]; s];
        for (v, &xi) in p.vgrid.xi.iter().enumerate() {
            if let Some(sl) = slot(m, face.axis(), v, face.is_max()) {
                leaving[sl] = xi;
            }
        }
        exits.par_chunks_mut(s).enumerate().for_each(|(fc, cell)| {
            let c = face.cell(&p.grid, fc);
            let (b, d) = (&base[c], &change[c]);
            if d.iter().all(|&x| x == 0.0) {
                return;
            }
            for (f, &xi) in cell.iter_mut().zip(&leaving) {
                // Stops at zero a value the move would take below it; a value already
                // negative (f^S's tails can be) moves as it is, so that the move still
                // vanishes with the correction.
                let g = *f + maxwellian_change(b, d, xi);
                *f = if g < 0.0 && *f >= 0.0 { 0.0 } else { g };
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_change_is_the_derivative_of_the_maxwellian() {
        // Against central differences of f_M in each of rho, U and T (step 1e-6: the
        // difference's truncation, ~1e-12, and its rounding, ~1e-10, both far below 1e-7).
        let b = Base { rho: 1.3, u: [0.2, -0.1, 0.05], t: 0.9 };
        let xi = [0.7, -0.4, 1.1];
        let h = 1e-6;
        for k in 0..NV {
            let mut d = [0.0; NV];
            d[k] = 1.0;
            let at = |e: f64| {
                let u = std::array::from_fn(|i| b.u[i] + e * d[1 + i]);
                maxwellian(b.rho + e * d[0], u, b.t + e * d[4], xi)
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            let exact = maxwellian_change(&b, &d, xi);
            assert!((fd - exact).abs() <= 1e-7 * (1.0 + exact.abs()), "component {k}: {fd} vs {exact}");
        }
    }
}
