//! The synthetic correction operator on the physical grid: one 5x5 block per cell and per
//! neighbour, from the face fluxes of [`super::flux`]. Row c is the net outflow of mass,
//! momentum and |xi|^2 from cell c (area times outward flux, summed over its six sides).
//!
//! Each side of a fluid cell is one of: a fluid neighbour (an interior face, or a periodic
//! wrap), a solid neighbour (a body wall), or a box face (wall, specular, free stream). A
//! collapsed periodic axis carries no flux. At a diffuse wall the Newton and Fourier terms
//! act over the half cell plus Maxwell's slip length (in series with the slip), the upwind
//! split adds the ballistic exchange with the wall. Solid cells keep an identity row and a zero
//! right-hand side, so their correction stays zero.

use super::flux::{self, Base, Block, Gas, Ghost, NV, ZERO};
use crate::boundary::{Face, FaceKind};
use crate::problem::Problem;
use rayon::prelude::*;

/// No neighbour on that side.
pub const NONE: u32 = u32::MAX;

/// A neighbour block, stored in f32: the products are memory-bound (a cell's row is read
/// once per product and reused nowhere), and L is a model whose f32 rounding (1e-7) is far
/// below what it already approximates; the fixed point does not depend on it.
pub type OffBlock = [[f32; NV]; NV];

pub fn narrow(b: &Block) -> OffBlock {
    std::array::from_fn(|r| std::array::from_fn(|k| b[r][k] as f32))
}

pub fn widen(b: &OffBlock) -> Block {
    std::array::from_fn(|r| std::array::from_fn(|k| b[r][k] as f64))
}

/// A x with an f32 block, in f64.
#[inline(always)]
fn product(a: &OffBlock, x: &[f64; NV]) -> [f64; NV] {
    std::array::from_fn(|r| {
        let mut t = 0.0;
        for k in 0..NV {
            t += a[r][k] as f64 * x[k];
        }
        t
    })
}

/// y += A x with an f32 block, in f64.
#[inline(always)]
pub fn add_product(y: &mut [f64; NV], a: &OffBlock, x: &[f64; NV]) {
    let t = product(a, x);
    (0..NV).for_each(|r| y[r] += t[r]);
}

/// y -= A x with an f32 block, in f64.
#[inline(always)]
pub fn sub_product(y: &mut [f64; NV], a: &OffBlock, x: &[f64; NV]) {
    let t = product(a, x);
    (0..NV).for_each(|r| y[r] -= t[r]);
}

pub struct Operator {
    /// The diagonal blocks, in f64 (they are inverted for smoothing).
    pub diag: Vec<Block>,
    /// Per cell and side (the order of [`Face::ALL`]), the block of the neighbour's
    /// correction, and the neighbour (or [`NONE`]).
    pub off: Vec<[OffBlock; 6]>,
    pub nbr: Vec<[u32; 6]>,
}

/// The neighbour of cell `c` across `side`, wrapping on periodic axes; `None` at a box face.
fn neighbour(p: &Problem, c: usize, side: Face) -> Option<usize> {
    let dims = p.grid.dims();
    let a = side.axis();
    let mut ijk = p.grid.coords(c);
    let n = dims[a];
    let periodic = p.bounds.faces[side.id()].kind == FaceKind::Periodic;
    if side.is_max() {
        if ijk[a] + 1 < n {
            ijk[a] += 1;
        } else if periodic {
            ijk[a] = 0;
        } else {
            return None;
        }
    } else if ijk[a] > 0 {
        ijk[a] -= 1;
    } else if periodic {
        ijk[a] = n - 1;
    } else {
        return None;
    }
    Some(p.grid.index(ijk[0], ijk[1], ijk[2]))
}

impl Operator {
    /// Linearised about `base` (per cell; solid cells ignored). `regularise` adds that much
    /// times the cell volume to every diagonal entry (closed domains: see `super`).
    pub fn assemble(p: &Problem, base: &[Base], regularise: f64) -> Self {
        Self::assemble_reusing(p, base, regularise, None)
    }

    /// [`Operator::assemble`], written into `old`'s arrays where it has this grid's cells:
    /// fresh arrays cost a rebuild their page faults (5.3 GB on the paper cube).
    pub fn assemble_reusing(p: &Problem, base: &[Base], regularise: f64, old: Option<Operator>) -> Self {
        let gas = Gas { delta: p.delta, omega: p.omega, prandtl: p.prandtl };
        let axes = [&p.grid.x, &p.grid.y, &p.grid.z];
        let solids = &p.bodies.solids;
        let row = |c: usize| {
            let mut diag = ZERO;
            let mut off = [ZERO; 6];
            let mut nbr = [NONE; 6];
            if solids.is_solid(c) {
                (0..NV).for_each(|k| diag[k][k] = 1.0);
                return (diag, off.map(|b| narrow(&b)), nbr);
            }
            let ijk = p.grid.coords(c);
            let widths: [f64; 3] = std::array::from_fn(|a| axes[a].widths[ijk[a]]);
            for side in Face::ALL {
                let a = side.axis();
                if p.bounds.collapsed[a] {
                    continue;
                }
                let area = widths[(a + 1) % 3] * widths[(a + 2) % 3];
                let upper = side.is_max();
                let mut at_rest = base[c];
                at_rest.u[a] = 0.0;
                match neighbour(p, c, side) {
                    Some(n) if !solids.is_solid(n) => {
                        let wn = axes[a].widths[p.grid.coords(n)[a]];
                        let b = Base::mean(&base[c], &base[n]);
                        let (minus, plus) = flux::face(&b, a, gas.conductances(&b, 0.5 * (widths[a] + wn)));
                        // Outflow through the upper face is +F, through the lower -F.
                        let (own, other, sign) = if upper { (minus, plus, 1.0) } else { (plus, minus, -1.0) };
                        flux::add_scaled(&mut diag, sign * area, &own);
                        flux::add_scaled(&mut off[side.id()], sign * area, &other);
                        nbr[side.id()] = n as u32;
                    }
                    Some(_) => {
                        let g = gas.conductances(&at_rest, 0.5 * widths[a] + gas.slip_length(&at_rest));
                        flux::add_scaled(&mut diag, area, &flux::boundary(&at_rest, a, g, Ghost::Wall, upper));
                    }
                    None => {
                        let (ghost, b, d) = match p.bounds.faces[side.id()].kind {
                            FaceKind::DiffuseWall { .. } => {
                                (Ghost::Wall, at_rest, 0.5 * widths[a] + gas.slip_length(&at_rest))
                            }
                            FaceKind::Specular => (Ghost::Mirror, at_rest, widths[a]),
                            FaceKind::FreeStream { .. } => (Ghost::Fixed, base[c], 0.5 * widths[a]),
                            FaceKind::Periodic => unreachable!("periodic faces always have a neighbour"),
                        };
                        let blk = flux::boundary(&b, a, gas.conductances(&b, d), ghost, upper);
                        flux::add_scaled(&mut diag, area, &blk);
                    }
                }
            }
            let vol = widths[0] * widths[1] * widths[2];
            (0..NV).for_each(|k| diag[k][k] += regularise * vol);
            (diag, off.map(|b| narrow(&b)), nbr)
        };
        let cells = p.grid.cells();
        match old {
            Some(mut op) if op.diag.len() == cells && op.off.len() == cells && op.nbr.len() == cells => {
                (&mut op.diag, &mut op.off, &mut op.nbr).into_par_iter().enumerate().for_each(|(c, (d, o, n))| {
                    (*d, *o, *n) = row(c);
                });
                op
            }
            _ => Self::from_rows((0..cells).into_par_iter().map(row)),
        }
    }

    /// From per-cell rows (diagonal, neighbour blocks, neighbours), in cell order. Collected
    /// in parallel straight into the three arrays: a serial copy through one array of rows
    /// took most of a 64^3 build (0.3 s of it on 16 cores).
    pub fn from_rows(rows: impl IndexedParallelIterator<Item = (Block, [OffBlock; 6], [u32; 6])>) -> Self {
        let (diag, (off, nbr)) = rows.map(|(d, o, n)| (d, (o, n))).unzip();
        Operator { diag, off, nbr }
    }

    /// (A x) of cell c.
    #[inline(always)]
    pub fn row(&self, c: usize, x: &[[f64; NV]]) -> [f64; NV] {
        let mut acc = self.off_row(c, x);
        let d = flux::apply(&self.diag[c], &x[c]);
        (0..NV).for_each(|k| acc[k] += d[k]);
        acc
    }

    /// The neighbours' part of (A x) of cell c, without the diagonal block.
    #[inline(always)]
    pub fn off_row(&self, c: usize, x: &[[f64; NV]]) -> [f64; NV] {
        let mut acc = [0.0; NV];
        for s in 0..6 {
            let n = self.nbr[c][s];
            if n != NONE {
                add_product(&mut acc, &self.off[c][s], &x[n as usize]);
            }
        }
        acc
    }

    /// y = A x.
    pub fn apply(&self, x: &[[f64; NV]], y: &mut [[f64; NV]]) {
        y.par_iter_mut().enumerate().for_each(|(c, yc)| *yc = self.row(c, x));
    }
}

/// Diagonal shift of the mass rows of a closed domain, per unit volume. A closed domain
/// conserves mass, so its mass rows sum to zero and a uniform density change is a null mode
/// of L. The shift pins it: the shifted rows sum to the shift times the mass change, whose
/// right-hand side is projected to zero, so the correction keeps the total mass whatever
/// the shift. Elsewhere it stiffens the density, and through it an isobaric temperature
/// error spanning the domain.
///
/// It is `CLOSED_SHIFT` times the mass rows' mean diagonal per volume (about
/// sum_a s / h_a, s = sqrt(T / pi)), capped at `sigma(N) sum_a s / L_a` (L_a the extent of
/// each axis with more than one cell, N the most cells along one), with
/// `sigma(N) = CLOSED_SHIFT_DOMAIN (N / 400)^(1/3)`. Below 400 cells per axis the per-cell
/// rule is the smaller and applies (every 3D case shipped; the 16^3 cavity at Kn 0.1 and
/// 0.01 takes 20 and 17 sweeps with any shift from 1e-4 to 1e-2 of the diagonal).
///
/// Why a cap, and why this one (planar Couette, BGK, and heat transfer, S-model, at delta =
/// 100, 16^3 velocities, sweeps to 1e-10, CPU). The diagonal grows as 1 / h, while the
/// smooth modes GSIS must remove pass through the mass rows at the rate s / L, so on fine
/// grids the per-cell rule swamped them: 29 and 35 sweeps on 400 cells, 179 and 158 on
/// 4000. The shift cannot be small either: below a threshold an isobaric temperature mode
/// grows, alternating in sign (the walls' alternation damping of `crate::damping` takes
/// part in it), and that threshold rises with N: unstable at sigma = 0.04 on 400 cells, at
/// 0.2 on 4000 and at 0.4 on 8000 (measured with the damping at every reversal, before
/// 2026-11-27; the delta = 100 points take the same sweeps under today's rule). sigma(N)
/// keeps 2-6 times above it: 4000 cells 53 and 36 sweeps, 8000 cells 59 and 45.
pub fn closed_shift(p: &Problem, op: &Operator, base: &[Base], volumes: &[f64]) -> f64 {
    let fluid: Vec<usize> = (0..p.grid.cells()).filter(|&c| !p.bodies.solids.is_solid(c)).collect();
    let mean_diag =
        |k: usize| fluid.iter().map(|&c| op.diag[c][k][k].abs() / volumes[c]).sum::<f64>() / fluid.len() as f64;
    let g = &p.grid;
    let axes: Vec<_> = [&g.x, &g.y, &g.z].into_iter().filter(|a| a.len() > 1).collect();
    let inverse_extents: f64 = axes.iter().map(|a| 1.0 / (a.faces[a.len()] - a.faces[0])).sum();
    let most_cells = axes.iter().map(|a| a.len()).max().unwrap_or(1) as f64;
    match mean_diag(0) {
        d if d > 0.0 => {
            let s = fluid.iter().map(|&c| (base[c].t / std::f64::consts::PI).sqrt()).sum::<f64>() / fluid.len() as f64;
            let sigma = closed_shift_domain() * (most_cells / 400.0).cbrt();
            (CLOSED_SHIFT * d).min(sigma * s * inverse_extents)
        }
        // Mass crosses only faces between fluid cells; with none (a single cell between
        // walls) the mass rows are empty, and the scale is taken from the other rows.
        _ => CLOSED_SHIFT * (1..NV).map(mean_diag).fold(0.0, f64::max).max(f64::MIN_POSITIVE),
    }
}

/// The shift of [`closed_shift`] relative to the mass rows' mean diagonal per volume.
const CLOSED_SHIFT: f64 = 1e-3;
/// Its cap at 400 cells across, relative to the domain's rate sum_a s / L_a.
const CLOSED_SHIFT_DOMAIN: f64 = 0.4;

/// [`CLOSED_SHIFT_DOMAIN`], or `KNUDSEN_GSIS_CLOSED_SHIFT` (measurements).
fn closed_shift_domain() -> f64 {
    std::env::var("KNUDSEN_GSIS_CLOSED_SHIFT").ok().and_then(|v| v.parse().ok()).unwrap_or(CLOSED_SHIFT_DOMAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_assembled_in_old_storage_equals_a_fresh_one() {
        // Bit for bit: the same rows written in place. The old operator (another state) must
        // leave nothing behind, and one of another size is not reused.
        let p = Problem::new(&crate::config::walled_box([5, 4, 3], 10));
        let state = |s: f64| -> Vec<Base> {
            (0..p.grid.cells()).map(|c| Base { rho: 1.0 + s * c as f64, u: [s, 0.0, -s], t: 1.0 + s }).collect()
        };
        let fresh = Operator::assemble(&p, &state(0.01), 0.0);
        let reused = Operator::assemble_reusing(&p, &state(0.01), 0.0, Some(Operator::assemble(&p, &state(0.3), 0.0)));
        let bits = |o: &Operator| {
            let d: Vec<u64> = o.diag.iter().flatten().flatten().map(|x| x.to_bits()).collect();
            let f: Vec<u32> = o.off.iter().flatten().flatten().flatten().map(|x| x.to_bits()).collect();
            (d, f, o.nbr.clone())
        };
        assert!(bits(&fresh) == bits(&reused));
        let small = Problem::new(&crate::config::walled_box([2, 2, 2], 10));
        let other = Operator::assemble(&small, &state(0.0)[..8], 0.0);
        let from_small = Operator::assemble_reusing(&p, &state(0.01), 0.0, Some(other));
        assert!(bits(&fresh) == bits(&from_small));
    }

    #[test]
    fn mass_rows_of_a_closed_box_sum_to_zero_and_a_uniform_state_balances() {
        // Every face either passes mass between two cells or passes none (walls), so the
        // mass rows sum to zero for any correction; that is the left null vector the
        // solver projects out. Exactly so in f64; the neighbour blocks are stored in f32,
        // so to their rounding (6e-8 relative per entry): 1e-6 of the rows' size.
        let p = Problem::new(&crate::config::walled_box([3, 4, 2], 10));
        let base: Vec<Base> =
            (0..p.grid.cells()).map(|c| Base { rho: 1.0 + 0.01 * c as f64, u: [0.01, 0.0, -0.02], t: 1.0 }).collect();
        let op = Operator::assemble(&p, &base, 0.0);
        let x: Vec<[f64; NV]> =
            (0..p.grid.cells()).map(|c| std::array::from_fn(|k| ((c * 7 + k * 3) % 5) as f64 - 2.0)).collect();
        let mut y = vec![[0.0; NV]; x.len()];
        op.apply(&x, &mut y);
        let mass: f64 = y.iter().map(|r| r[0]).sum();
        let scale: f64 = y.iter().map(|r| r[0].abs()).sum();
        assert!(mass.abs() < 1e-6 * scale.max(1.0), "{mass} of {scale}");
    }

    /// Net upwind outflow of psi from cell c when every cell holds the Maxwellian of `w`
    /// (the sweep's face fluxes with no collisions), interior cells only.
    fn kinetic_outflow(p: &Problem, w: &[[f64; NV]], c: usize) -> [f64; NV] {
        let axes = [&p.grid.x, &p.grid.y, &p.grid.z];
        let ijk = p.grid.coords(c);
        let mut out = [0.0; NV];
        for side in Face::ALL {
            let a = side.axis();
            let n = neighbour(p, c, side).unwrap();
            let area = axes[(a + 1) % 3].widths[ijk[(a + 1) % 3]] * axes[(a + 2) % 3].widths[ijk[(a + 2) % 3]];
            for (&x, &wt) in p.vgrid.xi.iter().zip(&p.vgrid.w) {
                let xn = if side.is_max() { x[a] } else { -x[a] };
                let src = if xn > 0.0 { &w[c] } else { &w[n] };
                let f = crate::model::maxwellian(src[0], [src[1], src[2], src[3]], src[4], x);
                let psi = [1.0, x[0], x[1], x[2], x[0] * x[0] + x[1] * x[1] + x[2] * x[2]];
                for r in 0..NV {
                    out[r] += area * wt * xn * f * psi[r];
                }
            }
        }
        out
    }

    #[test]
    fn without_conduction_the_operator_is_the_linearised_upwind_flux_of_the_sweep() {
        // Reference: finite differences of the discrete upwind (sweep) fluxes of cell-wise
        // Maxwellians, at rest, on a 24^3 velocity grid. What differs is the velocity
        // quadrature of half-range moments (the |xi_a| kink: O(h_v^2) ~ 1e-2 relative), so
        // the tolerance is 3% of each row's largest entry.
        let mut cfg = crate::config::walled_box([4, 4, 4], 24);
        cfg.velocity.max = 5.0;
        let mut p = Problem::new(&cfg);
        p.delta = 1e12; // no Newton/Fourier terms
        let base: Vec<Base> = (0..p.grid.cells()).map(|_| Base { rho: 1.2, u: [0.0; 3], t: 0.8 }).collect();
        let op = Operator::assemble(&p, &base, 0.0);
        let w0: Vec<[f64; NV]> = base.iter().map(|b| [b.rho, b.u[0], b.u[1], b.u[2], b.t]).collect();
        let dw: Vec<[f64; NV]> =
            (0..w0.len()).map(|c| std::array::from_fn(|k| (((c * 7 + k * 3) % 5) as f64 - 2.0) * 0.1)).collect();
        let mut ldw = vec![[0.0; NV]; w0.len()];
        op.apply(&dw, &mut ldw);
        let eps = 1e-6;
        let wp: Vec<[f64; NV]> = w0.iter().zip(&dw).map(|(a, d)| std::array::from_fn(|k| a[k] + eps * d[k])).collect();
        let wm: Vec<[f64; NV]> = w0.iter().zip(&dw).map(|(a, d)| std::array::from_fn(|k| a[k] - eps * d[k])).collect();
        for c in [p.grid.index(1, 1, 1), p.grid.index(2, 1, 2), p.grid.index(2, 2, 2)] {
            let (fp, fm) = (kinetic_outflow(&p, &wp, c), kinetic_outflow(&p, &wm, c));
            let fd: [f64; NV] = std::array::from_fn(|r| (fp[r] - fm[r]) / (2.0 * eps));
            let scale = fd.iter().chain(&ldw[c]).fold(0.0f64, |m, x| m.max(x.abs()));
            for r in 0..NV {
                assert!(
                    (fd[r] - ldw[c][r]).abs() < 0.03 * scale,
                    "cell {c} row {r}: kinetic {fd:?} vs operator {:?}",
                    ldw[c]
                );
            }
        }
    }
}
