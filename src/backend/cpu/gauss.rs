//! The CPU sweep's Maxwellians from per-cell 1D Gaussian tables.

use crate::problem::Problem;
use rayon::prelude::*;

/// The Maxwellian of every cell factorised over the velocity axes:
/// exp(-|xi - U|^2 / T) = g_x(xi_x) g_y(xi_y) g_z(xi_z), g_a(x_i) = exp(-(x_i - U_a)^2 / T), so
/// the sweep's f^S costs three table loads instead of an exponential per phase point: 3 M
/// exponentials per cell and iteration instead of M^3. Layout `[axis][node][cell]`, so a
/// velocity's sweep over a slice reads each table row contiguously.
#[derive(Debug, Clone, Default)]
pub struct GaussTables {
    cells: usize,
    m: usize,
    g: Vec<f64>,
}

impl GaussTables {
    pub fn bytes(p: &Problem) -> u64 {
        3 * p.vgrid.m as u64 * p.grid.cells() as u64 * 8
    }

    /// Fill for the iteration's coefficients (cells in parallel).
    pub fn fill(&mut self, p: &Problem, eq: &[crate::model::EqCoeffs]) {
        let (m, cells) = (p.vgrid.m, eq.len());
        self.m = m;
        self.cells = cells;
        self.g.resize(3 * m * cells, 0.0);
        let nodes = &p.vgrid.nodes;
        self.g.par_chunks_mut(cells).enumerate().for_each(|(row, out)| {
            let (a, i) = (row / m, row % m);
            for (o, e) in out.iter_mut().zip(eq) {
                let d = nodes[i] - e.u[a];
                *o = (-d * d * e.inv_t).exp();
            }
        });
    }

    #[inline(always)]
    pub(super) fn row(&self, axis: usize, node: usize) -> &[f64] {
        let at = (axis * self.m + node) * self.cells;
        &self.g[at..at + self.cells]
    }
}
