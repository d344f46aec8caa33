//! Line relaxation, the multigrid smoother of the synthetic solve.
//!
//! Point (block Jacobi) smoothing damps an error only along the directions in which a cell
//! is strongly coupled to its neighbours, and only where no direction dominates: on the
//! stretched grid of an external flow (cells ten times longer than wide) and in a
//! supersonic stream (where the upwind split makes the coupling one-sided along the flow)
//! it leaves whole families of smooth-looking errors alone, and GMRES needed 50-90 steps.
//! A line smoother solves every line of cells along one axis exactly, given the current
//! values of the other lines: the coupling along that axis, however strong or one-sided,
//! is then removed at once. Alternating the axis covers any direction.
//!
//! Each line is block tridiagonal, `L_i x_{i-1} + D_i x_i + U_i x_{i+1} = r_i`, and is
//! solved by block Thomas elimination:
//!
//! ```text
//! Dp_0 = D_0,    M_i = L_i Dp_{i-1}^-1,    Dp_i = D_i - M_i U_{i-1},
//! y_i = r_i - M_i y_{i-1},                 x_i = Dp_i^-1 (y_i - U_i x_{i+1}).
//! ```
//!
//! M_i and Dp_i^-1 depend on the operator only, so they are factored once per hierarchy
//! and stored in f32 (like the neighbour blocks: this is a preconditioner, and any fixed
//! linear preconditioner leaves GMRES's answer as it is). A line ends where a cell has no
//! neighbour along the axis (a wall, a body, the domain's end); a periodic wrap is coupled
//! as an off-line neighbour.

use super::flux::{self, NV, ZERO};
use super::krylov::invert;
use super::operator::{add_product, narrow, sub_product, widen, OffBlock, Operator, NONE};
use rayon::prelude::*;

/// Lines per work unit across y and z lines (see [`Lines::units`]).
const UNIT: usize = 32;

/// The block-tridiagonal factors of the lines of one level along one axis.
pub struct Lines {
    axis: usize,
    dims: [usize; 3],
    /// Per cell: M (zero at a line's first cell) and Dp^-1.
    m: Vec<OffBlock>,
    dinv: Vec<OffBlock>,
}

/// A raw view of a per-cell output, written by disjoint lines in parallel.
struct Out<T>(*mut T);
// SAFETY: every cell lies on exactly one line of an axis, and every line in exactly one
// work unit, so the parallel units write disjoint elements.
unsafe impl<T> Sync for Out<T> {}
unsafe impl<T> Send for Out<T> {}

impl Lines {
    pub fn axis(&self) -> usize {
        self.axis
    }

    pub fn dims(&self) -> [usize; 3] {
        self.dims
    }

    /// Per cell, M and Dp^-1 (empty when not factored here).
    pub fn factors(&self) -> (&[OffBlock], &[OffBlock]) {
        (&self.m, &self.dinv)
    }

    fn stride(&self) -> usize {
        [1, self.dims[0], self.dims[0] * self.dims[1]][self.axis]
    }

    /// Work units: runs of `width` neighbouring lines that start at consecutive cells, so
    /// that a march along the axis reads each step's cells contiguously (lines along y or
    /// z taken one at a time would read one cell per cache line of every vector).
    fn units(&self) -> Vec<(usize, usize)> {
        let d = self.dims;
        match self.axis {
            0 => (0..d[1] * d[2]).map(|l| (l * d[0], 1)).collect(),
            1 => (0..d[2])
                .flat_map(|k| (0..d[0]).step_by(UNIT).map(move |i| (k * d[0] * d[1] + i, UNIT.min(d[0] - i))))
                .collect(),
            _ => (0..d[0] * d[1]).step_by(UNIT).map(|p| (p, UNIT.min(d[0] * d[1] - p))).collect(),
        }
    }

    /// Whether cell `c`, the `i`-th of its line, is coupled to the previous cell of the line.
    fn joined(&self, op: &Operator, c: usize, i: usize) -> bool {
        i > 0 && op.nbr[c][2 * self.axis] as usize == c - self.stride()
    }

    /// Factor every line of `op` (a grid of `dims` cells) along `axis`.
    pub fn new(op: &Operator, dims: [usize; 3], axis: usize) -> Self {
        let mut lines = Self::unfactored(dims, axis);
        lines.factor(op);
        lines
    }

    /// The lines of a grid along `axis`, their factors not computed (a device computes
    /// them: `super::cuda`; or [`Self::factor`]).
    pub fn unfactored(dims: [usize; 3], axis: usize) -> Self {
        Lines { axis, dims, m: Vec::new(), dinv: Vec::new() }
    }

    pub fn is_factored(&self) -> bool {
        !self.m.is_empty()
    }

    /// Compute the factors of `op`'s lines.
    pub fn factor(&mut self, op: &Operator) {
        let cells = self.dims.iter().product::<usize>();
        let lines = self;
        lines.m = vec![[[0.0; NV]; NV]; cells];
        lines.dinv = vec![[[0.0; NV]; NV]; cells];
        let (n, stride, axis) = (lines.dims[lines.axis], lines.stride(), lines.axis);
        let (mp, dp) = (Out(lines.m.as_mut_ptr()), Out(lines.dinv.as_mut_ptr()));
        let (mp, dp) = (&mp, &dp);
        let units = lines.units();
        let lines = &*lines;
        units.into_par_iter().for_each(|(c0, width)| {
            let mut prev_inv = vec![ZERO; width];
            for i in 0..n {
                for (q, prev) in prev_inv.iter_mut().enumerate() {
                    let c = c0 + q + i * stride;
                    let mut d = op.diag[c];
                    let mut m = ZERO;
                    if lines.joined(op, c, i) {
                        m = flux::mul(&widen(&op.off[c][2 * axis]), prev);
                        let mu = flux::mul(&m, &widen(&op.off[c - stride][2 * axis + 1]));
                        flux::add_scaled(&mut d, -1.0, &mu);
                    }
                    // A singular pivot ends the line there (zero rows never arise from a
                    // physical operator; this only keeps a bad one finite).
                    *prev = invert(&d).unwrap_or(ZERO);
                    // SAFETY: cell c belongs to this unit only (see `Out`).
                    unsafe {
                        *mp.0.add(c) = narrow(&m);
                        *dp.0.add(c) = narrow(prev);
                    }
                }
            }
        });
    }

    /// One damped line-Jacobi sweep: `out = x + w (x_line - x)`, where `x_line` solves
    /// every line exactly with the other lines' values from `x` (`None`: x = 0).
    pub fn relax(&self, op: &Operator, b: &[[f64; NV]], x: Option<&[[f64; NV]]>, w: f64, out: &mut [[f64; NV]]) {
        let (n, stride, axis) = (self.dims[self.axis], self.stride(), self.axis);
        let dst = Out(out.as_mut_ptr());
        let dst = &dst;
        self.units().into_par_iter().for_each_init(Vec::new, |y: &mut Vec<[f64; NV]>, (c0, width)| {
            y.resize(n * width, [0.0; NV]);
            for i in 0..n {
                for q in 0..width {
                    let c = c0 + q + i * stride;
                    let mut r = b[c];
                    let prev = self.joined(op, c, i);
                    let next = i + 1 < n && self.joined(op, c + stride, i + 1);
                    if let Some(x) = x {
                        for s in 0..6 {
                            let nb = op.nbr[c][s];
                            let inline = (s == 2 * axis && prev) || (s == 2 * axis + 1 && next);
                            if nb != NONE && !inline {
                                sub_product(&mut r, &op.off[c][s], &x[nb as usize]);
                            }
                        }
                    }
                    if prev {
                        sub_product(&mut r, &self.m[c], &y[(i - 1) * width + q]);
                    }
                    y[i * width + q] = r;
                }
            }
            for i in (0..n).rev() {
                for q in 0..width {
                    let c = c0 + q + i * stride;
                    let mut t = y[i * width + q];
                    if i + 1 < n && self.joined(op, c + stride, i + 1) {
                        sub_product(&mut t, &op.off[c][2 * axis + 1], &y[(i + 1) * width + q]);
                    }
                    let mut xl = [0.0; NV];
                    add_product(&mut xl, &self.dinv[c], &t);
                    // y of a solved cell now holds its line solution, for the cell before.
                    y[i * width + q] = xl;
                    let old = x.map_or([0.0; NV], |x| x[c]);
                    // SAFETY: cell c belongs to this unit only (see `Out`).
                    unsafe { *dst.0.add(c) = std::array::from_fn(|k| old[k] + w * (xl[k] - old[k])) };
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Problem;
    use crate::solver::synthetic::flux::Base;

    #[test]
    fn a_line_sweep_solves_a_grid_that_is_one_line() {
        // On a grid of one line along the axis every coupling is in the line, so one
        // undamped sweep from zero is the exact solve: A x = b to the f32 rounding of the
        // stored factors (1e-7 relative per entry, amplified by the line's conditioning).
        for axis in 0..3 {
            let mut dims = [1; 3];
            dims[axis] = 9;
            let p = Problem::new(&crate::config::walled_box(dims, 10));
            let base: Vec<Base> = (0..9).map(|c| Base { rho: 1.0 + 0.05 * c as f64, u: [0.02; 3], t: 1.0 }).collect();
            let op = Operator::assemble(&p, &base, 0.0);
            let lines = Lines::new(&op, dims, axis);
            let b: Vec<[f64; NV]> = (0..9).map(|c| std::array::from_fn(|k| ((c * 3 + k) % 5) as f64 - 2.0)).collect();
            let mut x = vec![[0.0; NV]; 9];
            lines.relax(&op, &b, None, 1.0, &mut x);
            let mut ax = vec![[0.0; NV]; 9];
            op.apply(&x, &mut ax);
            let err =
                ax.iter().zip(&b).flat_map(|(p, q)| (0..NV).map(move |k| (p[k] - q[k]).abs())).fold(0.0, f64::max);
            assert!(err < 1e-4, "axis {axis}: residual {err}");
        }
    }

    #[test]
    fn across_lines_the_sweep_is_block_jacobi() {
        // Along an axis of one cell every line is a single cell, so the sweep must equal
        // a damped block-Jacobi step x + w D^-1 (b - A x).
        let dims = [4, 3, 1];
        let p = Problem::new(&crate::config::walled_box(dims, 10));
        let base: Vec<Base> = (0..12).map(|c| Base { rho: 1.0, u: [0.01 * c as f64, 0.0, 0.0], t: 1.1 }).collect();
        let op = Operator::assemble(&p, &base, 0.0);
        let lines = Lines::new(&op, dims, 2);
        let b: Vec<[f64; NV]> = (0..12).map(|c| std::array::from_fn(|k| ((c + 2 * k) % 3) as f64)).collect();
        let x: Vec<[f64; NV]> = (0..12).map(|c| std::array::from_fn(|k| ((c * 5 + k) % 4) as f64 * 0.1)).collect();
        let mut out = vec![[0.0; NV]; 12];
        lines.relax(&op, &b, Some(&x), 0.7, &mut out);
        for c in 0..12 {
            let ax = op.row(c, &x);
            let r: [f64; NV] = std::array::from_fn(|k| b[c][k] - ax[k]);
            let d = flux::apply(&invert(&op.diag[c]).unwrap(), &r);
            for k in 0..NV {
                let want = x[c][k] + 0.7 * d[k];
                // The factors are stored in f32 (module header): a few f32 ulps of O(1)
                // values, 1e-5 with margin.
                assert!((out[c][k] - want).abs() < 1e-5 * (1.0 + want.abs()), "cell {c}: {:?}", out[c]);
            }
        }
    }
}
