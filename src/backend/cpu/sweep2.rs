//! The CPU backend's second-order sweep (`solver.scheme = "second_order"`; the cell update
//! is in `backend/upwind2.rs`).
//!
//! Each batch velocity owns four slices, `[slot][j][i]`: the cell values f (slot 0, what
//! the moments read) and the face value each cell emits along x, y and z (slots 1-3). Slices
//! are updated in place: a cell reads the z-face value its upstream neighbour in slice k-1
//! left at the same position, and the y-face value of the row before it in this slice; the
//! x-face value of the cell before it in the row is still in a register. The limiter's
//! neighbour faces (upwind2.rs) come from the same places: the row before's x and z values,
//! the x and y values slice k-1 left at s (read before the cell overwrites them), and the
//! previous cell's y and z values, kept beside its x value.

use super::context::SliceContext;
use super::gauss::GaussTables;
use crate::backend::upwind2::solve_cell;
use crate::backend::SweepInput;
use crate::grid::solid::{wall_of, SOLID_BIT};
use crate::grid::Octant;
use crate::problem::Problem;

/// Slices per velocity of the second-order scheme: f and the three face values.
pub const SLOTS: usize = 4;

/// A batch's slice storage: `[batch velocity][slot][j][i]`, `slots` per velocity (1 for
/// first order, where the face value is the cell value).
#[derive(Clone, Copy)]
pub struct SliceSlots<'a> {
    pub data: &'a [f64],
    pub nxy: usize,
    pub slots: usize,
}

impl<'a> SliceSlots<'a> {
    /// Velocity b's slot `slot`.
    #[inline]
    pub fn slice(&self, b: usize, slot: usize) -> &'a [f64] {
        let at = (b * self.slots + slot) * self.nxy;
        &self.data[at..at + self.nxy]
    }
}

/// The value batch velocity `b` carries out of slice cell `s` through its downwind face
/// along `axis`: the stored face value of the second-order scheme, the cell value for first
/// order.
#[inline]
pub fn face_out(stored: SliceSlots, b: usize, s: usize, axis: usize) -> f64 {
    if stored.slots == 1 {
        stored.slice(b, 0)[s]
    } else {
        stored.slice(b, 1 + axis)[s]
    }
}

/// Sweep one velocity over z-slice `k` with the second-order update, in place in its four
/// slots (see the module docs); `first` for the first slice of the velocity's sweep.
#[allow(clippy::too_many_arguments)]
pub fn sweep_slice2(
    p: &Problem,
    inp: &SweepInput,
    gauss: Option<&GaussTables>,
    v: usize,
    oct: Octant,
    k: usize,
    first: bool,
    slots: &mut [f64],
) {
    let g = &p.grid;
    let (nx, ny) = (g.nx(), g.ny());
    let nxy = nx * ny;
    let cx = SliceContext::new(p, inp, gauss, v, oct, k);
    let (speed, c) = (cx.speed, cx.c);
    let (f, faces) = slots.split_at_mut(nxy);
    let (fx_out, rest) = faces.split_at_mut(nxy);
    let (fy_out, fz_out) = rest.split_at_mut(nxy);
    for jj in 0..ny {
        let j = if oct.negative(1) { ny - 1 - jj } else { jj };
        let jup = if oct.negative(1) { j + 1 } else { j.wrapping_sub(1) };
        let b = speed[1] / g.y.widths[j];
        // The x inflow: the face's at the row start, then the face value the previous cell
        // emitted (a register), as are that cell's y and z face values, two of the limiter's
        // neighbour faces (upwind2.rs); `None` at the row start and after a solid cell.
        let mut fx = cx.ghost(0, k * ny + j);
        let mut west: Option<[f64; 2]> = None;
        for ii in 0..nx {
            let i = if oct.negative(0) { nx - 1 - ii } else { ii };
            let a = speed[0] / g.x.widths[i];
            let s = j * nx + i;
            let mut up = [
                fx,
                if jj == 0 { cx.ghost(1, k * nx + i) } else { fy_out[jup * nx + i] },
                if first { cx.ghost(2, s) } else { fz_out[s] },
            ];
            let mut word = 0;
            if let Some(w) = cx.word(s) {
                if w & SOLID_BIT != 0 {
                    // No gas inside a body: nothing to add to any moment or face.
                    [&mut f[s], &mut fx_out[s], &mut fy_out[s], &mut fz_out[s]].into_iter().for_each(|x| *x = 0.0);
                    fx = 0.0;
                    west = None;
                    continue;
                }
                up = cx.wall_inflows(w, up);
                word = w;
            }
            // The upwind neighbours across y (the row before) and z (the slice before, whose
            // face values are still in place at s): fluid cells of the domain only.
            let fluid = |axis: usize| wall_of(word, cx.faces[axis]).is_none();
            let south = (jj > 0 && b > 0.0 && fluid(1)).then(|| [fx_out[jup * nx + i], fz_out[jup * nx + i]]);
            let below = (!first && c > 0.0 && fluid(2)).then(|| [fx_out[s], fy_out[s]]);
            let west_ = west.filter(|_| a > 0.0);
            let side = [
                [south.map_or(up[0], |n| n[0]), below.map_or(up[0], |n| n[0])],
                [west_.map_or(up[1], |n| n[0]), below.map_or(up[1], |n| n[1])],
                [west_.map_or(up[2], |n| n[1]), south.map_or(up[2], |n| n[1])],
            ];
            let u = solve_cell([a, b, c], up, cx.eq[s].nu, cx.equilibrium(s), side);
            f[s] = u.f;
            fx_out[s] = u.out[0];
            fy_out[s] = u.out[1];
            fz_out[s] = u.out[2];
            fx = u.out[0];
            west = Some([u.out[1], u.out[2]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::face_zeros;
    use crate::boundary::Face;
    use crate::model::{EqCoeffs, Macro};

    #[test]
    fn a_jump_in_the_inflow_creates_no_new_extrema_and_no_negative_values() {
        // Nearly collisionless gas (delta 1e-3) on 24 x 24 x 1 cells: the x_min face emits 1
        // into its lower half and 0 into its upper half, the y_min face 0, the z face 0.5. The
        // jump travels obliquely across the slice; every cell value and reconstructed face
        // value must stay within [0, 1] (the range of the face inflows and of f^S: every
        // limiter range is made of those and of values emitted upwind; a maximum principle
        // the first-order scheme has), for every velocity of the octant.
        let n = 24;
        let cfg = crate::config::walled_box([n, n, 1], 10);
        let p = Problem::new(&cfg);
        let e = EqCoeffs::new(&Macro::equilibrium(1.0, [0.0; 3], 1.0), 1.0, 1e-3, 0.81);
        let eq = vec![e; n * n];
        let partner = face_zeros(&p.grid).map(|_| Vec::new());
        let mut checked = 0;
        for (v, xi) in p.vgrid.xi.iter().enumerate().filter(|(_, x)| x.iter().all(|&c| c > 0.0)) {
            let mut dens = face_zeros(&p.grid);
            let shape = |f: Face| p.bounds.faces[f.id()].shape[v];
            for (j, d) in dens[Face::XMin.id()].iter_mut().enumerate() {
                *d = if j < n / 2 { 1.0 / shape(Face::XMin) } else { 0.0 };
            }
            dens[Face::ZMin.id()].iter_mut().for_each(|d| *d = 0.5 / shape(Face::ZMin));
            let inp = SweepInput { eq: &eq, fields: &[], face_density: &dens, wall_density: &[], partner: &partner };
            let mut stored = vec![0.0; SLOTS * n * n];
            sweep_slice2(&p, &inp, None, v, Octant::of(*xi), 0, true, &mut stored);
            let fs = e.shakhov(*xi);
            assert!((0.0..=1.0).contains(&fs));
            let view = SliceSlots { data: &stored, nxy: n * n, slots: SLOTS };
            for j in 0..n {
                for i in 0..n {
                    let f = stored[j * n + i];
                    assert!((0.0..=1.0).contains(&f), "velocity {xi:?}, cell ({i}, {j}): {f}");
                    for axis in 0..3 {
                        let face = face_out(view, 0, j * n + i, axis);
                        assert!((0.0..=1.0).contains(&face), "velocity {xi:?}, face {axis} of ({i}, {j}): {face}");
                    }
                }
            }
            checked += 1;
        }
        assert!(checked > 0);
    }
}
