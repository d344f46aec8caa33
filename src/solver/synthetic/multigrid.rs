//! An aggregation multigrid W-cycle, the preconditioner of the synthetic solve.
//!
//! The correction operator is diffusive on the scales that matter (Newton, Fourier and the
//! upwind split's dissipation), so a one-level preconditioner needs O(N) Krylov steps on an
//! N^3 grid. Here each level merges 2x2x2 cells (along axes longer than one cell) and takes
//! the Galerkin product P^T A P with piecewise-constant P: the coarse operator is again one
//! 5x5 block per cell and per side, so every level uses the same storage and product
//! ([`Operator`]). Smoothing is damped block Jacobi, or line relaxation on stretched grids
//! ([`Smoother`], [`super::lines`]); the coarsest level is solved exactly by dense LU. The cycle is a W (two coarse corrections per level): at 64^3 cells
//! it cut GMRES from 29 to 12 steps and its time by 2.3x against the V (2 CPU cores; a level
//! l costs 4^-l of the finest, so the W costs at most 4/3 of a V's finest-level work).

use super::flux::{self, NV, ZERO};
use super::krylov::{invert, Pool, Vector};
use super::lines::Lines;
use super::operator::{add_product, narrow, widen, OffBlock, Operator, NONE};
use rayon::prelude::*;

/// Smoothing sweeps before and after the coarse correction, and their damping.
pub(super) const SWEEPS: usize = 2;
pub(super) const DAMPING: f64 = 0.7;
/// Coarsen until at most this many cells remain, then solve densely.
const COARSEST: usize = 128;
/// Piecewise-constant interpolation makes each coarse correction too small (by about the
/// ratio of the Galerkin to the rediscretised coarse operator); a fixed over-correction
/// restores most of it (1.0 to 2.0 measured at 32^3: 1.6 needed the fewest steps).
pub(super) const OVER_CORRECTION: f64 = 1.6;
/// Line sweeps are exact along their axis and plain Jacobi across it; undamped, as
/// measured on the stretched cube grid (`super::lines`).
pub(super) const LINE_DAMPING: f64 = 1.0;

/// How each level is smoothed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Smoother {
    /// Two damped block-Jacobi sweeps before and after the coarse correction: the
    /// cheapest, and enough where cells are near cubes.
    Jacobi,
    /// One line sweep per axis before (x, y, z) and after (z, y, x) the coarse correction:
    /// robust to stretched cells, at about twice the cost per cycle.
    Lines,
}

struct Level {
    /// The operator of this level (None on the finest: `Multigrid::fine`).
    op: Option<Operator>,
    /// Inverted diagonal blocks, in f32 (Jacobi smoothing only; empty with lines). Like the
    /// neighbour blocks, they are read once per sweep and only shape the preconditioner.
    inv: Vec<OffBlock>,
    /// Per cell of the next level: its active members on this level; per cell of this
    /// level: its aggregate on the next (NONE when inactive). Empty on the coarsest.
    children: Vec<Vec<u32>>,
    parent: Vec<u32>,
    /// Line factors along each axis longer than one cell (empty with point smoothing).
    lines: Vec<Lines>,
}

/// A level as [`Multigrid::level`] shows it.
pub struct LevelView<'a> {
    pub op: &'a Operator,
    /// Inverted diagonal blocks (Jacobi smoothing; empty with lines and on the coarsest).
    pub inv: &'a [OffBlock],
    /// Line factors per axis longer than one cell (line smoothing; else empty).
    pub lines: &'a [Lines],
    /// Per cell of the next level its members here, and per cell here its aggregate (empty
    /// on the coarsest).
    pub children: &'a [Vec<u32>],
    pub parent: &'a [u32],
}

pub struct Multigrid {
    fine: Operator,
    levels: Vec<Level>,
    /// The coarsest operator as a dense LU factorisation (row-major, with pivots).
    lu: Vec<f64>,
    piv: Vec<usize>,
    /// Work vectors of every level, reused from cycle to cycle.
    pool: Pool,
}

fn index(d: [usize; 3], i: [usize; 3]) -> usize {
    (i[2] * d[1] + i[1]) * d[0] + i[0]
}

/// The Galerkin coarse operator of `op` on `dims`, and each aggregate's active members.
fn coarsen(op: &Operator, dims: [usize; 3], active: &[bool]) -> (Operator, [usize; 3], Vec<Vec<u32>>) {
    let cd: [usize; 3] = std::array::from_fn(|a| dims[a].div_ceil(2));
    let nc = cd[0] * cd[1] * cd[2];
    let parent = |c: usize| {
        let i = [c % dims[0], c / dims[0] % dims[1], c / (dims[0] * dims[1])];
        index(cd, [i[0] / 2, i[1] / 2, i[2] / 2])
    };
    let children: Vec<Vec<u32>> = (0..nc)
        .into_par_iter()
        .map(|pc| {
            let ci = [pc % cd[0], pc / cd[0] % cd[1], pc / (cd[0] * cd[1])];
            let mut list = Vec::with_capacity(8);
            for dz in 0..2 {
                for dy in 0..2 {
                    for dx in 0..2 {
                        let f = [2 * ci[0] + dx, 2 * ci[1] + dy, 2 * ci[2] + dz];
                        if (0..3).all(|a| f[a] < dims[a]) {
                            let c = index(dims, f);
                            if active[c] {
                                list.push(c as u32);
                            }
                        }
                    }
                }
            }
            list
        })
        .collect();
    let rows = children.par_iter().map(|members| {
        let mut diag = ZERO;
        let mut off = [ZERO; 6];
        let mut nbr = [NONE; 6];
        if members.is_empty() {
            // Inside a body: an identity row, never coupled.
            (0..NV).for_each(|k| diag[k][k] = 1.0);
        }
        for &c in members {
            let (c, pc) = (c as usize, parent(c as usize));
            flux::add_scaled(&mut diag, 1.0, &op.diag[c]);
            for s in 0..6 {
                let n = op.nbr[c][s];
                if n == NONE || !active[n as usize] {
                    continue;
                }
                let pn = parent(n as usize);
                let b = widen(&op.off[c][s]);
                if pn == pc {
                    flux::add_scaled(&mut diag, 1.0, &b);
                } else {
                    flux::add_scaled(&mut off[s], 1.0, &b);
                    nbr[s] = pn as u32;
                }
            }
        }
        (diag, off.map(|b| narrow(&b)), nbr)
    });
    let op = Operator::from_rows(rows);
    (op, cd, children)
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
                        a[(c * NV + r) * n + nb as usize * NV + k] += op.off[c][s][r][k] as f64;
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
    /// `factor_lines`: whether to factor the line smoother here (else a device does it, or
    /// [`Self::factor_lines`] later).
    pub fn new(
        fine: Operator,
        dims: [usize; 3],
        active: &[bool],
        smoother: Smoother,
        factor_lines: bool,
    ) -> anyhow::Result<Self> {
        let op = &fine;
        let mut ops: Vec<Operator> = Vec::new();
        let mut invs: Vec<Vec<OffBlock>> = Vec::new();
        let mut links: Vec<(Vec<Vec<u32>>, Vec<u32>)> = Vec::new();
        let mut d = dims;
        let mut act = active.to_vec();
        let mut line_sets: Vec<Vec<Lines>> = Vec::new();
        let use_lines = smoother == Smoother::Lines;
        let (lu, piv) = loop {
            let cur = ops.last().unwrap_or(op);
            let coarsest = cur.diag.len() <= COARSEST || d.iter().all(|&n| n == 1);
            let smooth_jacobi = !coarsest && !use_lines;
            invs.push(if smooth_jacobi {
                cur.diag.par_iter().map(|b| narrow(&invert(b).unwrap_or(ZERO))).collect()
            } else {
                Vec::new()
            });
            line_sets.push(if use_lines && !coarsest {
                (0..3)
                    .filter(|&a| d[a] > 1)
                    .map(|a| if factor_lines { Lines::new(cur, d, a) } else { Lines::unfactored(d, a) })
                    .collect()
            } else {
                Vec::new()
            });
            if coarsest {
                break dense_lu(cur)?;
            }
            let (coarse, cd, children) = coarsen(cur, d, &act);
            let mut parent = vec![NONE; cur.diag.len()];
            for (pc, members) in children.iter().enumerate() {
                for &c in members {
                    parent[c as usize] = pc as u32;
                }
            }
            links.push((children, parent));
            act = vec![true; coarse.diag.len()];
            ops.push(coarse);
            d = cd;
        };
        let mut ops = ops.into_iter();
        let mut links = links.into_iter();
        let levels = invs
            .into_iter()
            .zip(line_sets)
            .enumerate()
            .map(|(l, (inv, lines))| {
                let (children, parent) = links.next().unwrap_or_default();
                Level { op: if l == 0 { None } else { ops.next() }, inv, children, parent, lines }
            })
            .collect();
        Ok(Self { fine, levels, lu, piv, pool: Pool::default() })
    }

    /// The finest operator, the one the hierarchy was built from.
    /// The finest operator, its storage for the next build; the rest is dropped.
    pub fn into_operator(self) -> Operator {
        self.fine
    }

    pub fn operator(&self) -> &Operator {
        &self.fine
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Factor the line smoother on every level where it is not yet.
    pub fn factor_lines(&mut self) {
        for lv in &mut self.levels {
            let op = lv.op.as_ref().unwrap_or(&self.fine);
            lv.lines.iter_mut().filter(|ln| !ln.is_factored()).for_each(|ln| ln.factor(op));
        }
    }

    /// Level `l`'s operator, smoother factors and links to the next level, for the device
    /// twin of [`Self::apply`] (`super::cuda`).
    pub fn level(&self, l: usize) -> LevelView<'_> {
        let lv = &self.levels[l];
        LevelView { op: self.op(l), inv: &lv.inv, lines: &lv.lines, children: &lv.children, parent: &lv.parent }
    }

    /// The coarsest operator's inverse, column after column (`(A^-1)_{rk}` at `k n + r`).
    pub fn coarsest_inverse(&self) -> Vec<f64> {
        let n = self.piv.len();
        let cells = n / NV;
        (0..n)
            .into_par_iter()
            .flat_map_iter(|k| {
                let e: Vec<[f64; NV]> =
                    (0..cells).map(|c| std::array::from_fn(|i| if c * NV + i == k { 1.0 } else { 0.0 })).collect();
                let col = self.solve_coarsest(&e);
                let out: Vec<f64> = col.iter().flatten().copied().collect();
                self.pool.give(col);
                out
            })
            .collect()
    }

    fn op(&self, l: usize) -> &Operator {
        self.levels[l].op.as_ref().unwrap_or(&self.fine)
    }

    fn solve_coarsest(&self, b: &[[f64; NV]]) -> Vector {
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
        let mut out = self.pool.take(b.len());
        out.iter_mut().zip(x.chunks(NV)).for_each(|(o, c)| *o = std::array::from_fn(|k| c[k]));
        out
    }

    /// x ~ A^-1 b by one W-cycle from x = 0.
    pub fn apply(&self, b: &[[f64; NV]], x: &mut Vector) {
        let new = self.cycle(0, b);
        self.pool.give(std::mem::replace(x, new));
    }

    /// One damped Jacobi sweep, x_new = x + w D^-1 (b - A x) = (1 - w) x + w D^-1 (b - O x)
    /// with O the neighbour blocks: one pass over the rows that never reads the diagonal.
    fn jacobi(&self, l: usize, b: &[[f64; NV]], x: &[[f64; NV]], out: &mut [[f64; NV]]) {
        let (op, inv) = (self.op(l), &self.levels[l].inv);
        out.par_iter_mut().enumerate().for_each(|(c, o)| {
            let ox = op.off_row(c, x);
            let res: [f64; NV] = std::array::from_fn(|k| b[c][k] - ox[k]);
            let mut d = [0.0; NV];
            add_product(&mut d, &inv[c], &res);
            *o = std::array::from_fn(|k| (1.0 - DAMPING) * x[c][k] + DAMPING * d[k]);
        });
    }

    fn cycle(&self, l: usize, b: &[[f64; NV]]) -> Vec<[f64; NV]> {
        if l + 1 == self.levels.len() {
            return self.solve_coarsest(b);
        }
        let lv = &self.levels[l];
        let op = self.op(l);
        let mut tmp = self.pool.take(b.len());
        let mut x = self.pool.take(b.len());
        if lv.lines.is_empty() {
            // The first sweep from x = 0 needs no product.
            x.par_iter_mut().zip(b).zip(&lv.inv).for_each(|((o, bc), m)| {
                *o = [0.0; NV];
                add_product(o, m, bc);
                o.iter_mut().for_each(|v| *v *= DAMPING);
            });
            for _ in 1..SWEEPS {
                self.jacobi(l, b, &x, &mut tmp);
                std::mem::swap(&mut x, &mut tmp);
            }
        } else {
            for (i, lines) in lv.lines.iter().enumerate() {
                lines.relax(op, b, (i > 0).then_some(&x[..]), LINE_DAMPING, &mut tmp);
                std::mem::swap(&mut x, &mut tmp);
            }
        }
        let mut rc = self.pool.take(lv.children.len());
        rc.par_iter_mut().zip(&lv.children).for_each(|(t, members)| {
            *t = [0.0; NV];
            for &c in members {
                let ax = op.row(c as usize, &x);
                (0..NV).for_each(|k| t[k] += b[c as usize][k] - ax[k]);
            }
        });
        let mut xc = self.cycle(l + 1, &rc);
        if l + 2 < self.levels.len() {
            // W-cycle: a second coarse correction from the coarse residual.
            let opc = self.op(l + 1);
            let mut r2 = self.pool.take(rc.len());
            r2.par_iter_mut().enumerate().for_each(|(c, r)| {
                let a = opc.row(c, &xc);
                *r = std::array::from_fn(|k| rc[c][k] - a[k]);
            });
            let x2 = self.cycle(l + 1, &r2);
            xc.par_iter_mut().zip(&x2).for_each(|(a, b)| (0..NV).for_each(|k| a[k] += b[k]));
            self.pool.give(r2);
            self.pool.give(x2);
        }
        self.pool.give(rc);
        let oc = OVER_CORRECTION;
        x.par_iter_mut().zip(&lv.parent).for_each(|(xv, &pc)| {
            if pc != NONE {
                (0..NV).for_each(|k| xv[k] += oc * xc[pc as usize][k]);
            }
        });
        if lv.lines.is_empty() {
            for _ in 0..SWEEPS {
                self.jacobi(l, b, &x, &mut tmp);
                std::mem::swap(&mut x, &mut tmp);
            }
        } else {
            for lines in lv.lines.iter().rev() {
                lines.relax(op, b, Some(&x), LINE_DAMPING, &mut tmp);
                std::mem::swap(&mut x, &mut tmp);
            }
        }
        self.pool.give(xc);
        self.pool.give(tmp);
        x
    }
}
