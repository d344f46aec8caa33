//! An aggregation multigrid V-cycle, the preconditioner of the synthetic solve.
//!
//! The correction operator is diffusive on the scales that matter (Newton, Fourier and the
//! upwind split's dissipation), so a one-level preconditioner needs O(N) Krylov steps on an
//! N^3 grid. Here each level merges 2x2x2 cells (along axes longer than one cell) and takes
//! the Galerkin product P^T A P with piecewise-constant P: the coarse operator is again one
//! 5x5 block per cell and per side, so every level uses the same storage and product
//! ([`Operator`]). Smoothing is damped block Jacobi (parallel); the coarsest level is solved
//! exactly by dense LU.

use super::flux::{self, Block, NV, ZERO};
use super::krylov::invert;
use super::operator::{Operator, NONE};
use rayon::prelude::*;

/// Smoothing sweeps before and after the coarse correction, and their damping.
const SWEEPS: usize = 2;
const DAMPING: f64 = 0.7;
/// Coarsen until at most this many cells remain, then solve densely.
const COARSEST: usize = 128;
/// Piecewise-constant interpolation makes each coarse correction too small (by about the
/// ratio of the Galerkin to the rediscretised coarse operator); a fixed over-correction
/// restores most of it.
const OVER_CORRECTION: f64 = 1.6;

struct Level {
    op: Operator,
    /// Inverted diagonal blocks.
    inv: Vec<Block>,
    /// Per cell: its aggregate on the next level (or NONE when it takes no part: solid).
    parent: Vec<u32>,
}

pub struct Multigrid {
    levels: Vec<Level>,
    /// The coarsest operator as a dense LU factorisation (row-major, with pivots).
    lu: Vec<f64>,
    piv: Vec<usize>,
}

fn index(d: [usize; 3], i: [usize; 3]) -> usize {
    (i[2] * d[1] + i[1]) * d[0] + i[0]
}

/// The Galerkin coarse operator of `op` on `dims`, and each fine cell's aggregate.
fn coarsen(op: &Operator, dims: [usize; 3], active: &[bool]) -> (Operator, [usize; 3], Vec<u32>) {
    let cd: [usize; 3] = std::array::from_fn(|a| dims[a].div_ceil(2));
    let nc = cd[0] * cd[1] * cd[2];
    let parent: Vec<u32> = (0..op.diag.len())
        .map(|c| {
            if !active[c] {
                return NONE;
            }
            let i = [c % dims[0], c / dims[0] % dims[1], c / (dims[0] * dims[1])];
            index(cd, [i[0] / 2, i[1] / 2, i[2] / 2]) as u32
        })
        .collect();
    let mut coarse = Operator { diag: vec![ZERO; nc], off: vec![[ZERO; 6]; nc], nbr: vec![[NONE; 6]; nc] };
    let mut members = vec![0usize; nc];
    for c in 0..op.diag.len() {
        let pc = parent[c];
        if pc == NONE {
            continue;
        }
        let pc = pc as usize;
        members[pc] += 1;
        flux::add_scaled(&mut coarse.diag[pc], 1.0, &op.diag[c]);
        for s in 0..6 {
            let n = op.nbr[c][s];
            if n == NONE || parent[n as usize] == NONE {
                continue;
            }
            let pn = parent[n as usize] as usize;
            if pn == pc {
                flux::add_scaled(&mut coarse.diag[pc], 1.0, &op.off[c][s]);
            } else {
                flux::add_scaled(&mut coarse.off[pc][s], 1.0, &op.off[c][s]);
                coarse.nbr[pc][s] = pn as u32;
            }
        }
    }
    // Aggregates with no active member (inside a body): an identity row, never coupled.
    for (d, &m) in coarse.diag.iter_mut().zip(&members) {
        if m == 0 {
            (0..NV).for_each(|k| d[k][k] = 1.0);
        }
    }
    (coarse, cd, parent)
}

fn dense_lu(op: &Operator) -> anyhow::Result<(Vec<f64>, Vec<usize>)> {
    let n = op.diag.len() * NV;
    let mut a = vec![0.0; n * n];
    for c in 0..op.diag.len() {
        for r in 0..NV {
            for k in 0..NV {
                a[(c * NV + r) * n + c * NV + k] += op.diag[c][r][k];
            }
            for s in 0..6 {
                let nb = op.nbr[c][s];
                if nb != NONE {
                    for k in 0..NV {
                        a[(c * NV + r) * n + nb as usize * NV + k] += op.off[c][s][r][k];
                    }
                }
            }
        }
    }
    let mut piv = vec![0; n];
    for col in 0..n {
        let p = (col..n).max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs())).unwrap();
        if a[p * n + col] == 0.0 {
            anyhow::bail!("synthetic solve: the coarsest multigrid operator is singular");
        }
        piv[col] = p;
        if p != col {
            for k in 0..n {
                a.swap(col * n + k, p * n + k);
            }
        }
        let d = a[col * n + col];
        for r in col + 1..n {
            let f = a[r * n + col] / d;
            a[r * n + col] = f;
            if f != 0.0 {
                for k in col + 1..n {
                    a[r * n + k] -= f * a[col * n + k];
                }
            }
        }
    }
    Ok((a, piv))
}

impl Multigrid {
    /// Build the hierarchy of `op` on a grid of `dims` cells; `active` marks the cells that
    /// carry unknowns (fluid).
    pub fn new(op: &Operator, dims: [usize; 3], active: &[bool]) -> anyhow::Result<Self> {
        let mut levels = Vec::new();
        let mut cur = Operator { diag: op.diag.clone(), off: op.off.clone(), nbr: op.nbr.clone() };
        let mut d = dims;
        let mut act = active.to_vec();
        loop {
            let inv = cur.diag.par_iter().map(|b| invert(b).unwrap_or(ZERO)).collect();
            if cur.diag.len() <= COARSEST || d.iter().all(|&n| n == 1) {
                let (lu, piv) = dense_lu(&cur)?;
                levels.push(Level { op: cur, inv, parent: Vec::new() });
                return Ok(Self { levels, lu, piv });
            }
            let (coarse, cd, parent) = coarsen(&cur, d, &act);
            act = vec![true; coarse.diag.len()];
            levels.push(Level { op: cur, inv, parent });
            cur = coarse;
            d = cd;
        }
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    fn solve_coarsest(&self, b: &[[f64; NV]]) -> Vec<[f64; NV]> {
        let n = b.len() * NV;
        let mut x: Vec<f64> = b.iter().flatten().copied().collect();
        for col in 0..n {
            x.swap(col, self.piv[col]);
        }
        for r in 0..n {
            let s: f64 = (0..r).map(|k| self.lu[r * n + k] * x[k]).sum();
            x[r] -= s;
        }
        for r in (0..n).rev() {
            let s: f64 = (r + 1..n).map(|k| self.lu[r * n + k] * x[k]).sum();
            x[r] = (x[r] - s) / self.lu[r * n + r];
        }
        x.chunks(NV).map(|c| std::array::from_fn(|k| c[k])).collect()
    }

    /// x ~ A^-1 b by one V-cycle from x = 0.
    pub fn apply(&self, b: &[[f64; NV]], x: &mut Vec<[f64; NV]>) {
        *x = self.cycle(0, b);
    }

    fn cycle(&self, l: usize, b: &[[f64; NV]]) -> Vec<[f64; NV]> {
        if l + 1 == self.levels.len() {
            return self.solve_coarsest(b);
        }
        let lv = &self.levels[l];
        let n = b.len();
        let mut x = vec![[0.0; NV]; n];
        let mut r = vec![[0.0; NV]; n];
        let smooth = |x: &mut Vec<[f64; NV]>, r: &mut Vec<[f64; NV]>| {
            for _ in 0..SWEEPS {
                lv.op.apply(x, r);
                x.par_iter_mut().zip(r.par_iter()).zip(b).zip(&lv.inv).for_each(|(((xc, ac), bc), m)| {
                    let res: [f64; NV] = std::array::from_fn(|k| bc[k] - ac[k]);
                    let d = flux::apply(m, &res);
                    (0..NV).for_each(|k| xc[k] += DAMPING * d[k]);
                });
            }
        };
        smooth(&mut x, &mut r);
        lv.op.apply(&x, &mut r);
        let nc = self.levels[l + 1].op.diag.len();
        let mut rc = vec![[0.0; NV]; nc];
        for c in 0..n {
            let pc = lv.parent[c];
            if pc != NONE {
                let t = &mut rc[pc as usize];
                (0..NV).for_each(|k| t[k] += b[c][k] - r[c][k]);
            }
        }
        let xc = self.cycle(l + 1, &rc);
        x.par_iter_mut().zip(&lv.parent).for_each(|(xv, &pc)| {
            if pc != NONE {
                (0..NV).for_each(|k| xv[k] += OVER_CORRECTION * xc[pc as usize][k]);
            }
        });
        smooth(&mut x, &mut r);
        x
    }
}
