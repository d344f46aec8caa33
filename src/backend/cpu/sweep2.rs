//! The CPU backend's second-order sweep (`solver.scheme = "second_order"`; the cell update
//! is in `backend/upwind2.rs`).
//!
//! Each batch velocity owns four slices, `[slot][j][i]`: the cell values f (slot 0, what
//! the moments read) and the face value each cell emits along x, y and z (slots 1-3). Slices
//! are updated in place: a cell reads the z-face value its upstream neighbour in slice k-1
//! left at the same position, and the y-face value of the row before it in this slice; the
//! x-face value of the cell before it in the row is still in a register.

use super::gauss::GaussTables;
use super::{equilibrium, gauss_rows, upwind_faces, upwind_walls};
use crate::backend::upwind2::solve_cell;
use crate::backend::SweepInput;
use crate::boundary::Face;
use crate::grid::solid::SOLID_BIT;
use crate::grid::Octant;
use crate::problem::Problem;

/// Slices per velocity of the second-order scheme: f and the three face values.
pub const SLOTS: usize = 4;

/// A batch's slice storage: `[batch velocity][slot][j][i]`, `slots` per velocity (1 for
/// first order, where the face value is the cell value).
#[derive(Clone, Copy)]
pub struct Ring<'a> {
    pub data: &'a [f64],
    pub nxy: usize,
    pub slots: usize,
}

impl<'a> Ring<'a> {
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
pub fn face_out(ring: Ring, b: usize, s: usize, axis: usize) -> f64 {
    if ring.slots == 1 {
        ring.slice(b, 0)[s]
    } else {
        ring.slice(b, 1 + axis)[s]
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
    let xi = p.vgrid.xi[v];
    let [fx_face, fy_face, fz_face] = upwind_faces(oct);
    let m = p.vgrid.m;
    let ghost = |face: Face, idx: usize| {
        p.bounds.faces[face.id()].inflow(&inp.face_density[face.id()], &inp.partner[face.id()], m, idx, v)
    };
    // A collapsed periodic axis has no upwind term (boundary.rs).
    let speed: [f64; 3] = std::array::from_fn(|a| if p.bounds.collapsed[a] { 0.0 } else { xi[a].abs() });
    let solids = &p.bodies.solids;
    let words = &solids.words[if solids.any() { k * nxy..(k + 1) * nxy } else { 0..0 }];
    let emission = |w: usize| inp.wall_density[w] * p.bodies.bodies[solids.walls[w].body as usize].shape[v];
    let c = speed[2] / g.z.widths[k];
    let eq = &inp.eq[k * nxy..(k + 1) * nxy];
    let slab = k * nxy..(k + 1) * nxy;
    let rows = gauss_rows(gauss, v, m, slab);
    let (f, faces) = slots.split_at_mut(nxy);
    let (fx_out, rest) = faces.split_at_mut(nxy);
    let (fy_out, fz_out) = rest.split_at_mut(nxy);
    for jj in 0..ny {
        let j = if oct.negative(1) { ny - 1 - jj } else { jj };
        let jup = if oct.negative(1) { j + 1 } else { j.wrapping_sub(1) };
        let b = speed[1] / g.y.widths[j];
        let mut fx = ghost(fx_face, k * ny + j);
        for ii in 0..nx {
            let i = if oct.negative(0) { nx - 1 - ii } else { ii };
            let a = speed[0] / g.x.widths[i];
            let s = j * nx + i;
            if ii == 0 {
                fx = ghost(fx_face, k * ny + j);
            }
            let mut fy = if jj == 0 { ghost(fy_face, k * nx + i) } else { fy_out[jup * nx + i] };
            let mut fz = if first { ghost(fz_face, s) } else { fz_out[s] };
            if let Some(&word) = words.get(s).filter(|&&w| w != 0) {
                if word & SOLID_BIT != 0 {
                    // No gas inside a body: nothing to add to any moment or face.
                    [&mut f[s], &mut fx_out[s], &mut fy_out[s], &mut fz_out[s]].into_iter().for_each(|x| *x = 0.0);
                    fx = 0.0;
                    continue;
                }
                let [wx, wy, wz] = upwind_walls(word, [fx_face, fy_face, fz_face]);
                fx = wx.map_or(fx, emission);
                fy = wy.map_or(fy, emission);
                fz = wz.map_or(fz, emission);
            }
            let fs = equilibrium(&eq[s], xi, rows, s);
            let u = solve_cell([a, b, c], [fx, fy, fz], eq[s].nu, fs);
            f[s] = u.f;
            fx_out[s] = u.out[0];
            fy_out[s] = u.out[1];
            fz_out[s] = u.out[2];
            fx = u.out[0];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::face_zeros;
    use crate::model::{EqCoeffs, Macro};

    #[test]
    fn a_jump_in_the_inflow_creates_no_new_extrema_and_no_negative_values() {
        // Nearly collisionless gas (delta 1e-3) on 24 x 24 x 1 cells: the x_min face emits 1
        // into its lower half and 0 into its upper half, the y_min face 0, the z face 0.5. The
        // jump travels obliquely across the slice; every cell value and reconstructed face
        // value must stay within [0, 1] (the range of the inflows and of f^S, a maximum
        // principle the first-order scheme has), for every velocity of the octant.
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
            let inp = SweepInput { eq: &eq, face_density: &dens, wall_density: &[], partner: &partner };
            let mut ring = vec![0.0; SLOTS * n * n];
            sweep_slice2(&p, &inp, None, v, Octant::of(*xi), 0, true, &mut ring);
            let fs = e.shakhov(*xi);
            assert!((0.0..=1.0).contains(&fs));
            let view = Ring { data: &ring, nxy: n * n, slots: SLOTS };
            for j in 0..n {
                for i in 0..n {
                    let f = ring[j * n + i];
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
