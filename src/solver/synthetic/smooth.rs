//! The correction's binomial filter, applied after the second-order sweep.
//!
//! The synthetic operator `L` models the flux response of the first-order upwind sweep
//! (`flux.rs`). The weighted diamond difference of the second-order sweep answers a
//! cell-to-cell alternating change of f^S very differently: along an axis the velocity
//! crosses at a grazing angle, each face value passes the previous one on with a factor near
//! `-w`, so an alternating source drives the face values there with a gain of about
//! `(1 + w) / (1 - w)`, unbounded as `w -> 1`. The sweep's conservation defect for such a
//! mode is then far larger than `L` expects, the correction over-shoots, and the alternating
//! mode grows (measured: the Kn 0.01 cavity on 32^3 cells and the Kn 0.02 cavity on 16^3,
//! cells of about three mean free paths, diverged by 7-13% per sweep; `docs/model.md`, "The
//! correction's filter"). This is the inconsistency that makes diffusion synthetic
//! acceleration unstable for diamond-differenced transport in optically thick cells (Adams
//! and Larsen, Prog. Nucl. Energy 40 (2002) 3).
//!
//! The cure kept here acts on the correction alone: a binomial filter
//!
//! ```text
//! dW_c <- dW_c / 2 + (dW_{c-1} + dW_{c+1}) / 4
//! ```
//!
//! along each axis of at least three cells, one axis after the other, removes the
//! alternating component of dW along every axis (its gain there is 0) and scales a smooth
//! mode of wavenumber k by `cos^2(k h / 2)`, so `1 - O(k^2 h^2)`. Each cell takes a share
//! [`strength`] of it, 1 unless the cell is many mean free paths thick, where the sweep is
//! nearly first order and the full filter only slowed the smooth modes. A neighbour outside the
//! domain or inside a body stands in as the cell itself, so a uniform correction passes
//! unchanged. The filter is linear and maps 0 to 0: the correction still vanishes exactly
//! where the sweep's defect does, and the fixed point is the second-order sweep's own
//! ("Why the fixed point is unchanged" holds with `L^-1` replaced by the filtered `L^-1`).
//! The first-order sweep's correction is not filtered: its response is the one `L` models.

use super::flux::{Base, NV};
use crate::grid::Grid;
use crate::model::collision_frequency;
use crate::problem::Problem;
use rayon::prelude::*;

/// The filter's strength per cell, `min(1, 4 sqrt(T / pi) sum_d (1 / width_d) / nu)`: the
/// diamond weight `min(1, sum_d a_d / nu)` of a velocity at four times the cell's mean speed
/// along each axis (`sqrt(T / pi)`), about twice the thermal speed. The alternating face
/// values grow as `(1 + w) / (1 - w)`, so the resonance lives where w nears 1, and the fast
/// velocities get there first. In cells many mean free paths thick w is small for most
/// velocities, the sweep is close to the first-order one that `L` models, and a full filter
/// would only slow the correction's smooth modes. Measured (the Kn 0.001-0.02 cavity on
/// 16^3 cells, 12^3 velocities, GSIS to 1e-7; sweeps for the factor 0 (no filter) / full /
/// 1 / 2 / 4 / 8 in place of 4): Kn 0.02 diverged / 37 / 49 / 37 / 37; Kn 0.005 - / 45 / 42 /
/// 34 / 25 / 45; Kn 0.002 30 / > 80 / 26 / 25 / 21 / 24 (`docs/model.md`).
pub fn strength(p: &Problem, base: &[Base]) -> Vec<f64> {
    let inv: [Vec<f64>; 3] = std::array::from_fn(|a| p.sweep_inv_widths(a));
    (0..base.len())
        .into_par_iter()
        .map(|c| {
            let [i, j, k] = p.grid.coords(c);
            let b = &base[c];
            let nu = collision_frequency(p.delta, p.omega, b.rho, b.t);
            let a = (b.t / std::f64::consts::PI).sqrt() * (inv[0][i] + inv[1][j] + inv[2][k]);
            (4.0 * a / nu).min(1.0)
        })
        .collect()
}

/// Filter `dw` (one correction per cell, `grid.index` order) in place, axis by axis, each
/// cell by its share `beta` (from [`strength`]; 1 for the full binomial filter):
/// `dW_c <- dW_c + beta_c (dW_{c-1} + dW_{c+1} - 2 dW_c) / 4`. `scratch` holds the previous
/// pass. Cells where `solid` is true keep their value and count as absent for their
/// neighbours.
pub fn binomial(
    grid: &Grid,
    beta: &[f64],
    solid: &(dyn Fn(usize) -> bool + Sync),
    dw: &mut [[f64; NV]],
    scratch: &mut Vec<[f64; NV]>,
) {
    let dims = [grid.nx(), grid.ny(), grid.nz()];
    for axis in 0..3 {
        if dims[axis] < 3 {
            continue;
        }
        scratch.clear();
        scratch.extend_from_slice(dw);
        let old = &scratch[..];
        dw.par_iter_mut().enumerate().for_each(|(c, out)| {
            if solid(c) {
                return;
            }
            let at = grid.coords(c);
            let beside = |step: isize| {
                let n = at[axis] as isize + step;
                if n < 0 || n >= dims[axis] as isize {
                    return c;
                }
                let mut q = at;
                q[axis] = n as usize;
                let m = grid.index(q[0], q[1], q[2]);
                if solid(m) {
                    c
                } else {
                    m
                }
            };
            let (lo, hi, q) = (old[beside(-1)], old[beside(1)], 0.25 * beta[c]);
            *out = std::array::from_fn(|v| old[c][v] + q * (lo[v] + hi[v] - 2.0 * old[c][v]));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: [usize; 3]) -> Grid {
        Grid::uniform(n, [1.0; 3])
    }

    #[test]
    fn the_alternating_mode_vanishes_and_a_uniform_correction_passes() {
        let g = grid([6, 5, 1]);
        let none = |_: usize| false;
        let mut scratch = Vec::new();
        // Alternating along x and along y: every pass on an axis with the parity removes it
        // in the interior; the boundary cells (mirrored) keep a quarter of it.
        let mut dw: Vec<[f64; NV]> = (0..g.cells())
            .map(|c| {
                let [i, j, _] = g.coords(c);
                let s = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
                [s; NV]
            })
            .collect();
        binomial(&g, &vec![1.0; g.cells()], &none, &mut dw, &mut scratch);
        for (c, d) in dw.iter().enumerate() {
            let [i, j, _] = g.coords(c);
            if (1..5).contains(&i) && (1..4).contains(&j) {
                assert!(d.iter().all(|x| x.abs() < 1e-15), "cell {c}: {d:?}");
            }
        }
        let mut dw = vec![[0.3, -1.0, 2.0, 0.5, 7.0]; g.cells()];
        binomial(&g, &vec![1.0; g.cells()], &none, &mut dw, &mut scratch);
        assert!(dw.iter().all(|d| *d == [0.3, -1.0, 2.0, 0.5, 7.0]));
    }

    #[test]
    fn a_smooth_mode_loses_only_its_second_order_part() {
        // Along x, n cells, dW = sin(k x_c): the interior gain is cos^2(k h / 2).
        let n = 64;
        let g = grid([n, 1, 1]);
        let k = 2.0 * std::f64::consts::PI;
        let h = 1.0 / n as f64;
        let x = |i: usize| (i as f64 + 0.5) * h;
        let mut dw: Vec<[f64; NV]> = (0..n).map(|i| [(k * x(i)).sin(); NV]).collect();
        binomial(&g, &vec![1.0; n], &|_| false, &mut dw, &mut Vec::new());
        let gain = (0.5 * k * h).cos().powi(2);
        for (i, d) in dw.iter().enumerate().take(n - 1).skip(1) {
            // Rounding of three products and two sums: a few ulps of values of size 1.
            assert!((d[0] - gain * (k * x(i)).sin()).abs() < 1e-14, "cell {i}");
        }
    }

    #[test]
    fn solid_cells_keep_their_value_and_do_not_leak() {
        let g = grid([5, 1, 1]);
        let solid = |c: usize| c == 2;
        let mut dw: Vec<[f64; NV]> = vec![[1.0; NV], [1.0; NV], [9.0; NV], [4.0; NV], [4.0; NV]];
        binomial(&g, &[1.0; 5], &solid, &mut dw, &mut Vec::new());
        // Cell 1's neighbours: 0 (1.0) and the solid 2, which stands in as cell 1 itself.
        assert_eq!(dw[1][0], 1.0);
        assert_eq!(dw[2][0], 9.0);
        assert_eq!(dw[3][0], 4.0);
    }
}
