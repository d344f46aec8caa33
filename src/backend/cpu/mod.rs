//! The CPU reference backend: f64, rayon across the velocities of a batch.
//!
//! Each iteration walks the batches of the plan; for each batch it visits the z-slices in
//! upwind order and runs three stages, the same stages the GPU backends run as kernels:
//!
//! 1. [`sweep_slice`]: every batch velocity updates its slice in place (one slice per
//!    velocity suffices: the z-upwind value of a cell is read just before it is overwritten);
//! 2. [`moment_slice`]: the slice's contribution is added to the raw moments of its cells;
//! 3. [`wall_flux_slice`]: the slice's contribution is added to the incident fluxes of the
//!    box-face cells it touches;
//! 4. [`wall_load_slice`]: the same for the body wall faces of the slice, with the momentum
//!    and energy the molecules carry in (surface loads).
//!
//! Determinism: every cell and face-cell sum runs over the batch velocities in their fixed
//! order and over batches in plan order, whatever the thread count; threads only split the
//! independent cells or velocities. Results are bit-identical for any `--threads`.
//!
//! Layout: the slice storage is `[velocity][j][i]`, so one velocity's sweep walks memory
//! contiguously, and the moment stage reads each velocity's row contiguously.

pub mod context;
pub mod gauss;
pub mod lane_tables;
pub mod lanes;
pub mod levels;
pub mod sweep2;

use super::{Backend, SweepInput, SweepOutput, CPU_BYTES_PER_VALUE};
use crate::body::{add_wall_sums, WALL_SUMS};
use crate::boundary::{slot, slots_per_cell, Face, FaceData};
use crate::config::Precision;
use crate::grid::solid::SOLID_BIT;
use crate::grid::Octant;
use crate::model::{accumulate_raw, NRAW};
use crate::plan::{plan_batches, Batch, BatchPlan, GAUSS_TABLE_MAX_BYTES};
use crate::problem::Problem;
use context::SliceContext;
use gauss::GaussTables;
use rayon::prelude::*;
use std::sync::Arc;
use sweep2::{face_out, SliceSlots};

pub struct CpuBackend {
    problem: Arc<Problem>,
    plan: BatchPlan,
    slices: Vec<f64>,
    /// The per-cell 1D Gaussians of the iteration ([`GaussTables`]); empty when they would
    /// not fit [`GAUSS_TABLE_MAX_BYTES`].
    gauss: GaussTables,
    /// `solver.precision = "f32"`: the vectorised sweep ([`lanes`]), its storage and tables.
    f32: bool,
    slices32: Vec<f32>,
    lane_tables: lanes::LaneTables,
}

impl CpuBackend {
    pub fn new(problem: Arc<Problem>, budget_bytes: u64) -> anyhow::Result<Self> {
        if let Some(why) = f32_scheme_refusal(&problem.config) {
            anyhow::bail!(why);
        }
        let plan = cpu_plan(&problem, budget_bytes)?;
        check_host_storage(&plan, crate::plan::available_host_bytes())?;
        Ok(Self::with_plan(problem, plan))
    }

    /// Replace the plan (tests use it to compare batchings); storage is resized to fit.
    pub fn with_plan(problem: Arc<Problem>, plan: BatchPlan) -> Self {
        let slots = cpu_slices(problem.config.solver.scheme);
        let f32 = Precision::on_cpu(problem.config.solver.precision) == Precision::F32;
        let nxy = problem.grid.slice_cells();
        let (slices, slices32) = if f32 {
            (Vec::new(), vec![0.0; slots * plan.max_batch.div_ceil(lanes::L) * lanes::L * nxy])
        } else {
            (vec![0.0; plan.max_batch * nxy * slots], Vec::new())
        };
        Self { problem, plan, slices, gauss: GaussTables::default(), f32, slices32, lane_tables: Default::default() }
    }
}

/// Refuse a plan whose distribution storage exceeds the host memory `available` (a budget
/// set above it would end in a failed allocation, an abort, instead of an error naming it).
pub fn check_host_storage(plan: &BatchPlan, available: Option<u64>) -> anyhow::Result<()> {
    match available {
        Some(avail) if plan.distribution_bytes() > avail => anyhow::bail!(
            "the cpu backend's distribution storage, {:.1} GiB at this memory budget (solver.memory_budget_mib, --memory-budget-mib), exceeds the {:.1} GiB of host memory available; lower the budget (the batches then hold fewer velocities)",
            plan.distribution_bytes() as f64 / 1073741824.0,
            avail as f64 / 1073741824.0
        ),
        _ => Ok(()),
    }
}

/// Slices the CPU backend keeps per velocity: two at first order (levels.rs), the scheme's
/// four, swept in place, at second order.
pub fn cpu_slices(scheme: crate::config::Scheme) -> usize {
    scheme.slices().max(2)
}

/// The CPU plan: per batch velocity two slices (the level being swept and the one before,
/// whose moments are summed meanwhile: levels.rs) of f64, or of f32 under
/// `solver.precision = "f32"`; four f64 slices, swept in place, for the second-order scheme.
pub fn cpu_plan(p: &Problem, budget_bytes: u64) -> Result<BatchPlan, crate::plan::PlanError> {
    let slices = cpu_slices(p.config.solver.scheme);
    plan_batches(&p.vgrid.octant_members(), p.grid.slice_cells(), value_bytes(p), slices, budget_bytes)
}

/// Why the CPU backend refuses `cfg`'s precision and scheme, if it does: its f32 sweep
/// ([`lanes`]) is first order only (the GPU backends sweep both schemes in f32).
pub fn f32_scheme_refusal(cfg: &crate::config::Config) -> Option<String> {
    let s = &cfg.solver;
    (Precision::on_cpu(s.precision) == Precision::F32 && s.scheme != crate::config::Scheme::FirstOrder).then(|| {
        "solver.precision / --precision \"f32\": the CPU backend's f32 sweep is first order only; use \"f64\" (its default) with the second-order scheme, or a GPU backend".to_string()
    })
}

/// Bytes per stored distribution value on the CPU: 8, or 4 in the f32 mode.
pub fn value_bytes(p: &Problem) -> usize {
    match Precision::on_cpu(p.config.solver.precision) {
        Precision::F64 => CPU_BYTES_PER_VALUE,
        Precision::F32 => 4,
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> &'static str {
        "cpu"
    }

    fn bytes_per_value(&self) -> usize {
        value_bytes(&self.problem)
    }

    fn device(&self) -> String {
        if self.f32 {
            format!("{}, f32", cpu_name())
        } else {
            cpu_name()
        }
    }

    fn residual_floor(&self) -> f64 {
        // f stored in f32: the same floor as the GPU backends' (wgpu/mod.rs measures it),
        // though the moments are summed in f64 here.
        if self.f32 {
            1e-5
        } else {
            0.0
        }
    }

    fn plan_summary(&self) -> super::PlanSummary {
        self.plan.summary()
    }

    fn copy_bandwidth(&mut self) -> anyhow::Result<f64> {
        Ok(super::bandwidth::host_copy_bandwidth())
    }

    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()> {
        let p = &*self.problem;
        let nxy = p.grid.slice_cells();
        let nz = p.grid.nz();
        out.clear();
        if self.f32 {
            self.lane_tables.fill(p, input.eq);
            lanes::sweep_all(p, &self.plan, input, &self.lane_tables, &mut self.slices32, out);
            return Ok(());
        }
        // KNUDSEN_GAUSS_TABLES=0 evaluates f^S directly (performance comparisons).
        let use_tables = GaussTables::bytes(p) <= GAUSS_TABLE_MAX_BYTES
            && std::env::var("KNUDSEN_GAUSS_TABLES").map_or(true, |v| v != "0");
        if use_tables {
            self.gauss.fill(p, input.eq);
        }
        let gauss = use_tables.then_some(&self.gauss);
        let slots = p.config.solver.scheme.slices();
        for batch in &self.plan.batches {
            let level = |step: usize| if batch.octant.negative(2) { nz - 1 - step } else { step };
            let stages = |k: usize, slices: &[f64], out: &mut SweepOutput| {
                let stored = SliceSlots { data: slices, nxy, slots };
                moment_slice(p, batch, k, stored, &mut out.raw[k * nxy..(k + 1) * nxy]);
                let value = |b: usize, s: usize, axis: usize| face_out(stored, b, s, axis);
                wall_flux_slice(p, batch, k, &value, Some(&mut out.incident), &mut out.exits);
                wall_load_slice(p, batch, k, &value, &mut out.wall);
            };
            let store = &mut self.slices[..batch.velocities.len() * nxy * cpu_slices(p.config.solver.scheme)];
            if slots > 1 {
                // Second order: the stored face values are overwritten in place, level by level.
                for step in 0..nz {
                    let k = level(step);
                    store.par_chunks_mut(nxy * slots).zip(batch.velocities.par_iter()).for_each(|(f, &v)| {
                        sweep2::sweep_slice2(p, input, gauss, v as usize, batch.octant, k, step == 0, f)
                    });
                    stages(k, store, out);
                }
            } else {
                let (t_levels, t_last) = levels::march(
                    nz,
                    store,
                    |step, prev, cur| {
                        let k = level(step);
                        cur.par_chunks_mut(nxy).zip(prev.par_chunks(nxy)).zip(batch.velocities.par_iter()).for_each(
                            |((f, fp), &v)| sweep_slice(p, input, gauss, v as usize, batch.octant, k, step == 0, fp, f),
                        );
                    },
                    |step, values| stages(level(step), values, out),
                );
                log::trace!("cpu f64 levels {t_levels:.4} s, last level's stages {t_last:.4} s");
            }
        }
        Ok(())
    }
}

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
/// `axis` ([`face_out`] for the f64 storage, [`lanes::LaneSlots`] for the f32 one).
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

/// The CPU model name from /proc/cpuinfo, with the thread count.
pub fn cpu_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model} ({} threads)", rayon::current_num_threads())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::SweepInput;
    use crate::boundary::face_zeros;
    use crate::grid::Axis;
    use crate::model::{EqCoeffs, Macro};

    #[test]
    fn storage_beyond_the_host_memory_is_refused() {
        let p = Problem::new(&crate::config::walled_box([4, 4, 4], 10));
        let plan = cpu_plan(&p, 1 << 20).unwrap();
        let need = plan.distribution_bytes();
        assert!(check_host_storage(&plan, Some(need)).is_ok());
        assert!(check_host_storage(&plan, None).is_ok(), "unknown memory refuses nothing");
        let e = check_host_storage(&plan, Some(need - 1)).unwrap_err().to_string();
        assert!(e.contains("memory_budget_mib") && e.contains("host memory available"), "{e}");
    }

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
