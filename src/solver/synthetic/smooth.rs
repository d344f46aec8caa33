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
//! cells of about three mean free paths, diverged by 13-20% per sweep; `docs/model.md`, "The
//! correction's filter"). This is the inconsistency that makes diffusion synthetic
//! acceleration unstable for diamond-differenced transport in optically thick cells (Adams
//! and Larsen, Prog. Nucl. Energy 40 (2002) 3).
//!
//! The cure kept here acts on the correction alone: a binomial filter, on equal cells
//!
//! ```text
//! dW_c <- dW_c / 2 + (dW_{c-1} + dW_{c+1}) / 4
//! ```
//!
//! along each axis of at least three cells, one axis after the other, which removes the
//! alternating component of dW along every axis (its gain there is 0) and scales a smooth
//! mode of wavenumber k by `cos^2(k h / 2)`, so `1 - O(k^2 h^2)`. It is written as an
//! exchange across faces ([`binomial`]), so it keeps the volume-weighted sum of dW on any
//! cells, and each cell takes a share [`strength`] of it: 1 unless the cell is many mean free
//! paths thick, where the sweep is nearly first order and the full filter only slowed the
//! smooth modes. The filter is linear, maps 0 to 0 and is invertible: the correction still
//! vanishes exactly where the sweep's defect does, and the fixed point is the second-order
//! sweep's own (`docs/model.md`, "Why the fixed point is unchanged", with `L^-1` replaced by
//! the filtered `L^-1`).
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
/// would only slow the correction's smooth modes. The factor 4 was chosen by the sweeps to
/// 1e-7 of the Kn 0.002-0.02 cavity on 16^3 cells against 0 (no filter), full strength, 1,
/// 2 and 8 (`docs/model.md`, "The correction's filter"; `docs/data/gsis-second-order-filter-cpu.txt`).
pub fn strength(p: &Problem, base: &[Base], beta: &mut Vec<f64>) {
    let inv: [Vec<f64>; 3] = std::array::from_fn(|a| p.sweep_inv_widths(a));
    beta.resize(base.len(), 0.0);
    beta.par_iter_mut().enumerate().for_each(|(c, out)| {
        let [i, j, k] = p.grid.coords(c);
        let b = &base[c];
        let nu = collision_frequency(p.delta, p.omega, b.rho, b.t);
        let a = (b.t / std::f64::consts::PI).sqrt() * (inv[0][i] + inv[1][j] + inv[2][k]);
        *out = (4.0 * a / nu).min(1.0);
    });
}

/// What the filter needs of the grid: per cell its volume and share `beta` (from
/// [`strength`]; 1 for the full binomial filter), whether it is solid, and which axes wrap
/// around (periodic faces).
pub struct Cells<'a> {
    pub grid: &'a Grid,
    pub volumes: &'a [f64],
    pub beta: &'a [f64],
    pub solid: &'a (dyn Fn(usize) -> bool + Sync),
    pub periodic: [bool; 3],
}

/// Filter `dw` (one correction per cell, `grid.index` order) in place, axis by axis, as an
/// exchange across each face between two fluid cells c and n:
///
/// ```text
/// V_c dW_c += sum_n k_cn (dW_n - dW_c),   k_cn = min(beta_c, beta_n) min(V_c, V_n) / 4,
/// ```
///
/// which on equal cells at full strength is `dW_c / 2 + (dW_{c-1} + dW_{c+1}) / 4`. The
/// exchange is symmetric, so the filter keeps `sum_c V_c dW_c` (a closed domain's total
/// mass correction, which the synthetic solve set, stays as it was); a face on the domain's
/// edge or against a body exchanges nothing. Each cell keeps at least half its own value, so
/// the filter is invertible and the fixed point argument of `docs/model.md` carries over.
/// Axes of fewer than three cells are left alone (one cell has no neighbour; two are a
/// single face, whose alternating mode is the only non-uniform one). `scratch` holds the
/// previous pass.
pub fn binomial(cells: &Cells, dw: &mut [[f64; NV]], scratch: &mut Vec<[f64; NV]>) {
    let Cells { grid, volumes, beta, solid, periodic } = *cells;
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
            let n_axis = dims[axis] as isize;
            let beside = |step: isize| {
                let mut n = at[axis] as isize + step;
                if periodic[axis] {
                    n = n.rem_euclid(n_axis);
                } else if n < 0 || n >= n_axis {
                    return None;
                }
                let mut q = at;
                q[axis] = n as usize;
                let m = grid.index(q[0], q[1], q[2]);
                (!solid(m)).then_some(m)
            };
            let mut acc = old[c];
            for n in [beside(-1), beside(1)].into_iter().flatten() {
                let k = 0.25 * beta[c].min(beta[n]) * volumes[c].min(volumes[n]) / volumes[c];
                for v in 0..NV {
                    acc[v] += k * (old[n][v] - old[c][v]);
                }
            }
            *out = acc;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: [usize; 3]) -> Grid {
        Grid::uniform(n, [1.0; 3])
    }

    /// Filter `dw` at full strength on `g` (uniform volumes unless given).
    fn filter(g: &Grid, solid: &(dyn Fn(usize) -> bool + Sync), periodic: [bool; 3], dw: &mut [[f64; NV]]) {
        let (volumes, beta) = (g.volumes(), vec![1.0; g.cells()]);
        binomial(&Cells { grid: g, volumes: &volumes, beta: &beta, solid, periodic }, dw, &mut Vec::new());
    }

    fn alternating(g: &Grid) -> Vec<[f64; NV]> {
        (0..g.cells())
            .map(|c| {
                let [i, j, _] = g.coords(c);
                [if (i + j) % 2 == 0 { 1.0 } else { -1.0 }; NV]
            })
            .collect()
    }

    #[test]
    fn the_alternating_mode_vanishes_and_a_uniform_correction_passes() {
        // Alternating along x and y on 6 x 5 cells. An end cell of an axis exchanges with one
        // neighbour only: +-1 -> 1/2 of it after that axis's pass. So after both passes the
        // interior is 0, the edges 0 (one pass zeroes them), the four corners +-1/4.
        let g = grid([6, 5, 1]);
        let mut dw = alternating(&g);
        filter(&g, &|_| false, [false; 3], &mut dw);
        for (c, d) in dw.iter().enumerate() {
            let [i, j, _] = g.coords(c);
            let corner = (i == 0 || i == 5) && (j == 0 || j == 4);
            let want = if corner { 0.25 * if (i + j) % 2 == 0 { 1.0 } else { -1.0 } } else { 0.0 };
            assert!(d.iter().all(|x| (x - want).abs() < 1e-15), "cell ({i}, {j}): {d:?}, want {want}");
        }
        let mut dw = vec![[0.3, -1.0, 2.0, 0.5, 7.0]; g.cells()];
        filter(&g, &|_| false, [false; 3], &mut dw);
        assert!(dw.iter().all(|d| *d == [0.3, -1.0, 2.0, 0.5, 7.0]));
    }

    #[test]
    fn a_periodic_axis_wraps_so_its_seam_is_filtered_too() {
        // 6 x 5 cells, x periodic: the alternating mode along x (6 cells, even) wraps without
        // a break, so every cell's x-pass gives 0 and nothing is left for y.
        let g = grid([6, 5, 1]);
        let mut dw = alternating(&g);
        filter(&g, &|_| false, [true, false, false], &mut dw);
        assert!(dw.iter().flatten().all(|x| x.abs() < 1e-15), "{dw:?}");
    }

    #[test]
    fn a_smooth_mode_loses_only_its_second_order_part() {
        // Along x, n equal cells, dW = sin(k x_c): the interior gain is cos^2(k h / 2).
        let n = 64;
        let g = grid([n, 1, 1]);
        let k = 2.0 * std::f64::consts::PI;
        let h = 1.0 / n as f64;
        let x = |i: usize| (i as f64 + 0.5) * h;
        let mut dw: Vec<[f64; NV]> = (0..n).map(|i| [(k * x(i)).sin(); NV]).collect();
        filter(&g, &|_| false, [false; 3], &mut dw);
        let gain = (0.5 * k * h).cos().powi(2);
        for (i, d) in dw.iter().enumerate().take(n - 1).skip(1) {
            // Rounding of a few products and sums of values of size 1: a few ulps.
            assert!((d[0] - gain * (k * x(i)).sin()).abs() < 1e-14, "cell {i}");
        }
    }

    #[test]
    fn the_volume_weighted_sum_is_kept_on_stretched_cells_with_varying_strength() {
        let faces = |n: usize| (0..=n).map(|i| (i as f64 / n as f64).powf(1.7)).collect::<Vec<_>>();
        let axis = |f: Vec<f64>| crate::grid::Axis::from_faces(f);
        let g = Grid { x: axis(faces(7)), y: axis(faces(5)), z: axis(vec![0.0, 1.0]) };
        let volumes = g.volumes();
        let beta: Vec<f64> = (0..g.cells()).map(|c| 0.2 + 0.8 * ((c * 37) % 11) as f64 / 10.0).collect();
        let mut dw: Vec<[f64; NV]> = (0..g.cells()).map(|c| [((c * 13) % 7) as f64 - 3.0; NV]).collect();
        let sum = |dw: &[[f64; NV]]| dw.iter().zip(&volumes).map(|(d, v)| v * d[0]).sum::<f64>();
        let before = sum(&dw);
        let cells = Cells { grid: &g, volumes: &volumes, beta: &beta, solid: &|_| false, periodic: [false; 3] };
        binomial(&cells, &mut dw, &mut Vec::new());
        // Sums of 35 terms of size ~1: rounding at 1e-14.
        assert!((sum(&dw) - before).abs() < 1e-13, "{} vs {before}", sum(&dw));
    }

    #[test]
    fn solid_cells_keep_their_value_and_do_not_leak() {
        let g = grid([5, 1, 1]);
        let mut dw: Vec<[f64; NV]> = vec![[1.0; NV], [1.0; NV], [9.0; NV], [4.0; NV], [4.0; NV]];
        filter(&g, &|c| c == 2, [false; 3], &mut dw);
        // Cells 1 and 3 exchange only with 0 and 4, which hold the same values.
        assert_eq!(dw.iter().map(|d| d[0]).collect::<Vec<_>>(), [1.0, 1.0, 9.0, 4.0, 4.0]);
    }

    #[test]
    fn the_strength_is_the_weight_of_a_fast_velocity() {
        // Kn = 0.01 (delta = 68.4 for omega 0.81) on 8 x 8 cells of width 1/8, z periodic and
        // one cell (collapsed: no 1/width): 4 sqrt(1 / pi) (8 + 8) / delta = 0.53 at rho = T = 1.
        let v = serde_json::json!({
            "gas": {"kn": 0.01},
            "grid": {"x": {"min": 0.0, "max": 1.0, "cells": 8}, "y": {"min": 0.0, "max": 1.0, "cells": 8},
                     "z": {"min": 0.0, "max": 1.0, "cells": 1}},
            "velocity": {"points": 9},
            "boundaries": {"x_min": {"type": "diffuse_wall", "temperature": 1.0}, "x_max": {"type": "diffuse_wall", "temperature": 1.0},
                           "y_min": {"type": "diffuse_wall", "temperature": 1.0}, "y_max": {"type": "diffuse_wall", "temperature": 1.0},
                           "z_min": {"type": "periodic"}, "z_max": {"type": "periodic"}}
        });
        let cfg = crate::config::Config::from_json(&v.to_string()).unwrap();
        let p = Problem::new(&cfg);
        let base = vec![Base { rho: 1.0, u: [0.0; 3], t: 1.0 }, Base { rho: 4.0, u: [0.0; 3], t: 1.0 }];
        let mut beta = Vec::new();
        strength(&p, &base, &mut beta);
        let nu = p.delta;
        let want = 4.0 * std::f64::consts::PI.recip().sqrt() * 16.0 / nu;
        assert!(want < 1.0, "the case must be thick enough for a strength below 1: {want}");
        // Rounding of a handful of operations.
        assert!((beta[0] - want).abs() < 1e-14 * want, "{} vs {want}", beta[0]);
        assert!((beta[1] - want / 4.0).abs() < 1e-14 * want, "four times the density, a quarter of it");
    }
}
