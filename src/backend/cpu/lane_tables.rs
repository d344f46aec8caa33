//! The f32 sweep's per-cell tables (`lanes.rs`): each cell's 1D Gaussians on the velocity
//! nodes and its equilibrium coefficients, in f32, rebuilt once per iteration from the f64
//! sweep coefficients.

use crate::problem::Problem;
use rayon::prelude::*;

/// Per-cell 1D Gaussians exp(-(x_i - U_a)^2 / T) in f32, `[cell][axis][node]`, and the
/// cell's equilibrium coefficients in f32 (`LaneCoeffs`).
#[derive(Debug, Clone, Default)]
pub struct LaneTables {
    m: usize,
    g: Vec<f32>,
    pub(super) coeffs: Vec<LaneCoeffs>,
}

/// A cell's [`crate::model::EqCoeffs`] in f32, one cache line: every group reads every
/// cell's coefficients once per slice, and the f64 struct (88 bytes over two lines, ten
/// conversions) cost more there than converting once per cell and iteration.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(super) struct LaneCoeffs {
    pub pref: f32,
    pub inv_t: f32,
    pub nu: f32,
    pub base: f32,
    pub u: [f32; 3],
    pub s: [f32; 3],
}

impl LaneTables {
    pub fn fill(&mut self, p: &Problem, eq: &[crate::model::EqCoeffs]) {
        let m = p.vgrid.m;
        self.m = m;
        self.g.resize(3 * m * eq.len(), 0.0);
        let nodes = &p.vgrid.nodes;
        self.g.par_chunks_mut(3 * m).zip(eq).for_each(|(out, e)| {
            for (r, o) in out.iter_mut().enumerate() {
                let d = nodes[r % m] - e.u[r / m];
                *o = (-d * d * e.inv_t).exp() as f32;
            }
        });
        self.coeffs.resize(eq.len(), LaneCoeffs::default());
        self.coeffs.par_iter_mut().zip(eq).for_each(|(c, e)| {
            *c = LaneCoeffs {
                pref: e.pref as f32,
                inv_t: e.inv_t as f32,
                nu: e.nu as f32,
                base: e.base as f32,
                u: e.u.map(|x| x as f32),
                s: e.s.map(|x| x as f32),
            }
        });
    }

    /// Cell `cell`'s three rows, one per axis, of M nodes each.
    #[inline(always)]
    pub(super) fn rows(&self, cell: usize) -> [&[f32]; 3] {
        let m = self.m;
        let r = &self.g[cell * 3 * m..(cell + 1) * 3 * m];
        [&r[..m], &r[m..2 * m], &r[2 * m..]]
    }
}
