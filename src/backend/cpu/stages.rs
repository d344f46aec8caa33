//! The CPU's stages for one z-slice, in f64: the reference the GPU kernels of the same names
//! copy (`shaders/sweep_slice.wgsl`, `moment_slice.wgsl`, `wall_load_slice.wgsl` and their
//! CUDA counterparts), one function per stage, in the order [`super::CpuBackend`] runs them.

use super::context::SliceContext;
use super::gauss::GaussTables;
use super::sweep2::SliceSlots;
use crate::backend::SweepInput;
use crate::body::{add_wall_sums, WALL_SUMS};
use crate::boundary::{slot, slots_per_cell, Face, FaceData};
use crate::grid::solid::SOLID_BIT;
use crate::grid::Octant;
use crate::model::{accumulate_raw, NRAW};
use crate::plan::Batch;
use crate::problem::Problem;
use rayon::prelude::*;

/// Sweep one velocity over z-slice `k` in upwind order into `f`, the z-upwind values from
/// `prev` (the velocity's slice of the level before; unused when `first`).
///
/// For xi with all components positive (other octants mirror it), first-order upwind gives
/// `f_ijk = (a f_(i-1)jk + b f_i(j-1)k + c f_ij(k-1) + nu f^S) / (a + b + c + nu)`,
/// a = |xi_x| / dx_i, b = |xi_y| / dy_j, c = |xi_z| / dz_k. Upwind values outside the domain
/// come from the face the velocity enters through. A zero component makes its coefficient
/// zero, and the face emits nothing into that velocity, so no special case is needed.
///
/// Bodies: a solid cell holds 0 (it adds nothing to any moment), and a fluid cell whose
/// upwind side along an axis is a wall face takes that face's emission rho_w shape_b(xi) as
/// its upwind value instead of the solid neighbour's (grid/solid.rs for the wall words).
///
/// With `gauss`, f^S takes its Maxwellian factor from the per-cell tables (equal to the
/// direct exponential to round-off); without, from [`crate::model::EqCoeffs::shakhov`].
#[allow(clippy::too_many_arguments)]
pub fn sweep_slice(
    p: &Problem,
    inp: &SweepInput,
    gauss: Option<&GaussTables>,
    v: usize,
    oct: Octant,
    k: usize,
    first: bool,
    prev: &[f64],
    f: &mut [f64],
) {
    let g = &p.grid;
    let (nx, ny) = (g.nx(), g.ny());
    let cx = SliceContext::new(p, inp, gauss, v, oct, k);
    let (speed, c) = (cx.speed, cx.c);
    for jj in 0..ny {
        let j = if oct.negative(1) { ny - 1 - jj } else { jj };
        let jup = if oct.negative(1) { j + 1 } else { j.wrapping_sub(1) };
        let b = speed[1] / g.y.widths[j];
        for ii in 0..nx {
            let i = if oct.negative(0) { nx - 1 - ii } else { ii };
            let iup = if oct.negative(0) { i + 1 } else { i.wrapping_sub(1) };
            let a = speed[0] / g.x.widths[i];
            let s = j * nx + i;
            let mut up = [
                if ii == 0 { cx.ghost(0, k * ny + j) } else { f[j * nx + iup] },
                if jj == 0 { cx.ghost(1, k * nx + i) } else { f[jup * nx + i] },
                if first { cx.ghost(2, s) } else { prev[s] },
            ];
            if let Some(word) = cx.word(s) {
                if word & SOLID_BIT != 0 {
                    f[s] = 0.0;
                    continue;
                }
                up = cx.wall_inflows(word, up);
            }
            let e = &cx.eq[s];
            let fs = cx.equilibrium(s);
            f[s] = (a * up[0] + b * up[1] + c * up[2] + e.nu * fs) / (a + b + c + e.nu);
        }
    }
}

/// The faces a velocity of octant `oct` enters through, per axis.
pub fn upwind_faces(oct: Octant) -> [Face; 3] {
    let pick = |axis: usize, min: Face, max: Face| if oct.negative(axis) { max } else { min };
    [pick(0, Face::XMin, Face::XMax), pick(1, Face::YMin, Face::YMax), pick(2, Face::ZMin, Face::ZMax)]
}

/// Add slice `k` of the batch to the raw moments `raw_slab` (the cells of slice k).
/// Rows run in parallel; each cell sums over batch velocities in order.
pub fn moment_slice(p: &Problem, batch: &Batch, _k: usize, stored: SliceSlots, raw_slab: &mut [[f64; NRAW]]) {
    let nx = p.grid.nx();
    raw_slab.par_chunks_mut(nx).enumerate().for_each(|(j, raw_row)| {
        for (b, &v) in batch.velocities.iter().enumerate() {
            let (xi, w) = (p.vgrid.xi[v as usize], p.vgrid.w[v as usize]);
            let row = &stored.slice(b, 0)[j * nx..(j + 1) * nx];
            for (acc, &f) in raw_row.iter_mut().zip(row) {
                accumulate_raw(acc, xi, w * f);
            }
        }
    });
}

/// What batch velocity `b` carries out of slice cell `s` through its downwind face along
/// `axis` ([`super::sweep2::face_out`] for the f64 storage, [`super::lanes::LaneSlots`] for the f32 one).
pub type FaceValue<'a> = dyn Fn(usize, usize, usize) -> f64 + Sync + 'a;

/// Add slice `k` of the batch to the incident flux of every face cell it touches (unless
/// `incident` is None), and record the outgoing values of faces that keep exits (partner
/// data, boundary.rs). Both carry the face value (`out`). A batch moves into at most one face per axis (its octant's downwind
/// faces).
pub fn wall_flux_slice(
    p: &Problem,
    batch: &Batch,
    k: usize,
    out: &FaceValue,
    mut incident: Option<&mut FaceData>,
    exits: &mut FaceData,
) {
    let m = p.vgrid.m;
    let per_cell = slots_per_cell(m);
    for face in downwind_faces(batch.octant) {
        let axis = face.axis();
        let out = |b: usize, s: usize| out(b, s, axis);
        let Some((first, count, cell_of)) = face_cells(p, face, k) else { continue };
        if let Some(incident) = incident.as_deref_mut() {
            let target = &mut incident[face.id()][first..first + count];
            target.par_iter_mut().enumerate().for_each(|(t, acc)| {
                let s = cell_of(t);
                for (b, &v) in batch.velocities.iter().enumerate() {
                    let v = v as usize;
                    let speed = (-face.normal_speed(p.vgrid.xi[v])).max(0.0);
                    *acc += p.vgrid.w[v] * speed * out(b, s);
                }
            });
        }
        let ex = &mut exits[face.id()];
        if ex.is_empty() {
            continue;
        }
        ex[first * per_cell..(first + count) * per_cell].par_chunks_mut(per_cell).enumerate().for_each(|(t, row)| {
            let s = cell_of(t);
            for (b, &v) in batch.velocities.iter().enumerate() {
                if let Some(sl) = slot(m, face.axis(), v as usize, face.is_max()) {
                    row[sl] = out(b, s);
                }
            }
        });
    }
}

/// The face cells of `face` in z-slice `k`: the first one's index in the face's arrays, how
/// many, and the slice cell each one sits against; None when slice k does not touch the face.
pub type FaceCells = (usize, usize, Box<dyn Fn(usize) -> usize + Sync>);

pub fn face_cells(p: &Problem, face: Face, k: usize) -> Option<FaceCells> {
    let g = &p.grid;
    let (nx, ny, nz) = (g.nx(), g.ny(), g.nz());
    match face.axis() {
        0 => {
            let ib = if face.is_max() { nx - 1 } else { 0 };
            Some((k * ny, ny, Box::new(move |j| j * nx + ib)))
        }
        1 => {
            let jb = if face.is_max() { ny - 1 } else { 0 };
            Some((k * nx, nx, Box::new(move |i| jb * nx + i)))
        }
        _ => {
            let kb = if face.is_max() { nz - 1 } else { 0 };
            (k == kb).then(|| (0, nx * ny, Box::new(|s| s) as Box<dyn Fn(usize) -> usize + Sync>))
        }
    }
}

/// Add slice `k` of the batch to the incident sums of the body wall faces in that slice.
/// A face's velocities are those moving into it (`side.normal_speed < 0`).
pub fn wall_load_slice(p: &Problem, batch: &Batch, k: usize, out: &FaceValue, wall: &mut [[f64; WALL_SUMS]]) {
    let solids = &p.bodies.solids;
    if !solids.any() {
        return;
    }
    let nxy = p.grid.slice_cells();
    let range = solids.slice_walls[k].clone();
    wall[range.clone()].par_iter_mut().zip(&solids.walls[range]).for_each(|(acc, wf)| {
        let s = wf.cell as usize - k * nxy;
        for (b, &v) in batch.velocities.iter().enumerate() {
            let x = p.vgrid.xi[v as usize];
            let un = wf.side.normal_speed(x);
            if un < 0.0 {
                let f = out(b, s, wf.side.axis());
                add_wall_sums(acc, x, p.vgrid.w[v as usize] * -un * f);
            }
        }
    });
}

/// The faces a velocity of octant `oct` can move into, per axis.
pub fn downwind_faces(oct: Octant) -> [Face; 3] {
    let pick = |axis: usize, min: Face, max: Face| if oct.negative(axis) { min } else { max };
    [pick(0, Face::XMin, Face::XMax), pick(1, Face::YMin, Face::YMax), pick(2, Face::ZMin, Face::ZMax)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::face_zeros;
    use crate::grid::Axis;
    use crate::model::{EqCoeffs, Macro};

    #[test]
    fn sweep_uses_each_cells_own_widths() {
        // A 2 x 2 x 1 grid with unequal widths, one velocity with all components positive,
        // uniform f^S and nu, and inflow 1 from the x and y faces, 0 from z. The first-order
        // upwind update of each cell, worked by hand, must match.
        let cfg = crate::config::walled_box([2, 2, 1], 10);
        let mut p = Problem::new(&cfg);
        p.grid.x = Axis::from_faces(vec![0.0, 0.25, 1.0]);
        p.grid.y = Axis::from_faces(vec![0.0, 0.6, 1.0]);
        let v = p.vgrid.xi.iter().position(|x| x.iter().all(|&c| c > 0.5)).unwrap();
        let xi = p.vgrid.xi[v];
        let oct = Octant::of(xi);
        let e = EqCoeffs::new(&Macro::equilibrium(1.0, [0.0; 3], 1.0), 1.0, 2.0, 0.81);
        let eq = vec![e; 4];
        // Densities that make the ghost values 1 (x, y faces) and 0 (z face).
        let mut dens = face_zeros(&p.grid);
        for f in [Face::XMin, Face::YMin] {
            let shape = p.bounds.faces[f.id()].shape[v];
            dens[f.id()].iter_mut().for_each(|d| *d = 1.0 / shape);
        }
        let mut f = vec![0.0; 4];
        let partner = face_zeros(&p.grid).map(|_| Vec::new());
        let inp = SweepInput { eq: &eq, fields: &[], face_density: &dens, wall_density: &[], partner: &partner };
        sweep_slice(&p, &inp, None, v, oct, 0, true, &[], &mut f);
        // The Gaussian tables give the same update to round-off.
        let mut tables = GaussTables::default();
        tables.fill(&p, &eq);
        let mut ft = vec![0.0; 4];
        sweep_slice(&p, &inp, Some(&tables), v, oct, 0, true, &[], &mut ft);
        for (a, b) in f.iter().zip(&ft) {
            assert!((a - b).abs() <= 4.0 * f64::EPSILON * a.abs(), "{a} vs {b}");
        }
        let fs = e.shakhov(xi);
        let (dx, dy, dz) = ([0.25, 0.75], [0.6, 0.4], 1.0);
        let mut want = [[0.0; 2]; 2];
        for j in 0..2 {
            for i in 0..2 {
                let (a, b, c) = (xi[0] / dx[i], xi[1] / dy[j], xi[2] / dz);
                let fx = if i == 0 { 1.0 } else { want[j][0] };
                let fy = if j == 0 { 1.0 } else { want[0][i] };
                want[j][i] = (a * fx + b * fy + c * 0.0 + e.nu * fs) / (a + b + c + e.nu);
            }
        }
        for j in 0..2 {
            for i in 0..2 {
                let got = f[j * 2 + i];
                assert!(
                    (got - want[j][i]).abs() < 1e-14 * want[j][i].abs(),
                    "cell ({i}, {j}): {got} vs {}",
                    want[j][i]
                );
            }
        }
    }
}
