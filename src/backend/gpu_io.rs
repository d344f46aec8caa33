//! Host-side marshalling shared by the GPU backends (wgpu and CUDA): the same buffer
//! contents in, the same sums out, so the two differ only in API and kernel language.

use super::wgpu::layout::{CellCoeffs, MSTRIDE};
use super::wgpu::schedule::GpuSchedule;
use super::{PlanSummary, SweepInput, SweepOutput};
use crate::body::WALL_SUMS;
use crate::boundary::{slots_per_cell, Face};
use crate::problem::Problem;
use rayon::prelude::*;

/// Where a GPU backend computes the sweep's cell records: on the host from
/// [`cell_records`] (f64), or on the device from the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordsAt {
    Host,
    /// On the device in f64 (CUDA; wgpu where the device has SHADER_F64): the host's
    /// records, rounded to the sweep's value type (f32, or CUDA's f64) in the same places.
    Device,
    /// On the device in f32 (wgpu only, opt-in): the slip-regime fields move by more than
    /// the f32 sweep's own spread (`docs/gpu.md`).
    DeviceF32,
}

/// `KNUDSEN_CELL_RECORDS=device|device-f32|host`, else the backend's `default` (CUDA, and
/// wgpu's f32 sweep on a device with f64: the device; wgpu without f64, and wgpu's f64
/// sweep: the host).
pub fn records_from_env(default: RecordsAt) -> anyhow::Result<RecordsAt> {
    match std::env::var("KNUDSEN_CELL_RECORDS").as_deref() {
        Err(_) => Ok(default),
        Ok("device") => Ok(RecordsAt::Device),
        Ok("device-f32") => Ok(RecordsAt::DeviceF32),
        Ok("host") => Ok(RecordsAt::Host),
        Ok(other) => anyhow::bail!("KNUDSEN_CELL_RECORDS={other}: expected \"device\", \"device-f32\" or \"host\""),
    }
}

/// Values per cell the device-side cell records read: (rho, U, T, q). Keep in sync with
/// shaders/cuda/cell_records.cu (CELL_FIELDS), shaders/cell_records.wgsl and
/// shaders/cell_records_f64.wgsl.
pub const RECORD_FIELDS: usize = 8;

/// (rho, U, T, q) of each cell into `out`, converted by `conv` (f64 for CUDA and wgpu's f64
/// stage, shaders/cell_records_f64.wgsl; f32 for wgpu's f32 stage);
/// solid cells' NaN fields pass through, the stages read only their wall word.
pub fn pack_fields<T: Send>(fields: &[crate::model::Macro], out: &mut [T], conv: impl Fn(f64) -> T + Sync) {
    out.par_chunks_mut(RECORD_FIELDS * 256).zip(fields.par_chunks(256)).for_each(|(o, f)| {
        for (o, m) in o.chunks_mut(RECORD_FIELDS).zip(f) {
            let v = [m.rho, m.u[0], m.u[1], m.u[2], m.t, m.q[0], m.q[1], m.q[2]];
            o.iter_mut().zip(v).for_each(|(d, s)| *d = conv(s));
        }
    });
}

/// Per-problem tables uploaded once.
pub struct DeviceTables {
    /// `bnd`: 1/dx, 1/dy, 1/dz, then room for the face and wall densities from `dens_at`.
    pub bnd: Vec<f32>,
    pub dens_at: usize,
    /// `walls`: per z-slice (first, count, 0, 0) of its wall faces, then per wall face
    /// (slice cell, side, wall face index, 0) (shaders/wall_load_slice.wgsl).
    pub walls: Vec<[u32; 4]>,
    /// Start of each box face's cells in the face arrays, and their total.
    pub face_offsets: [usize; 7],
    /// Start of each face's partner inflow in `bnd`, or NONE (shaders/partner.wgsl).
    pub part_at: [u32; 6],
    /// Start of each face's exits in `incident` (after the incident fluxes), or NONE.
    pub exit_at: [u32; 6],
    /// Floats in `incident`: the incident fluxes, then the exits.
    pub incident_len: usize,
    /// Wall faces per z-slice.
    pub slice_walls: Vec<usize>,
}

/// "No partner data" in `part_at` and `exit_at` (shaders/partner.wgsl: NONE).
pub const NONE: u32 = u32::MAX;

/// Where the partner data lies in `bnd` and `incident` ([`device_tables`]), without
/// building either: what a plan check needs to know of them.
pub struct TableLayout {
    pub face_offsets: [usize; 7],
    pub dens_at: usize,
    pub part_at: [u32; 6],
    pub exit_at: [u32; 6],
    /// Floats in `bnd` and in `incident`.
    pub bnd_len: usize,
    pub incident_len: usize,
}

pub fn table_layout(p: &Problem) -> anyhow::Result<TableLayout> {
    let g = &p.grid;
    let mut face_offsets = [0usize; 7];
    for f in Face::ALL {
        face_offsets[f.id() + 1] = face_offsets[f.id()] + f.cells(g);
    }
    // `bnd` opens with the three axes' inverse widths.
    let dens_at = g.dims().iter().sum::<usize>();
    // Partner inflow after the wall densities, exits after the incident fluxes; offsets are
    // 32-bit in the kernels.
    let per_face = |f: Face| f.cells(g) as u64 * slots_per_cell(p.vgrid.m) as u64;
    let mut at = (dens_at + face_offsets[6] + p.bodies.solids.walls.len()) as u64;
    let mut part_at = [NONE; 6];
    let mut ex = face_offsets[6] as u64;
    let mut exit_at = [NONE; 6];
    for f in Face::ALL {
        if p.bounds.stores_inflow(f) {
            part_at[f.id()] = at as u32;
            at += per_face(f);
        }
        if p.bounds.stores_exits(f) {
            exit_at[f.id()] = ex as u32;
            ex += per_face(f);
        }
    }
    anyhow::ensure!(
        at < NONE as u64 && ex < NONE as u64,
        "the specular/periodic partner data ({} values) exceeds the GPU kernels' 32-bit indexing; use the CPU backend or fewer velocity points",
        at.max(ex)
    );
    Ok(TableLayout { face_offsets, dens_at, part_at, exit_at, bnd_len: at as usize, incident_len: ex as usize })
}

pub fn device_tables(p: &Problem) -> anyhow::Result<DeviceTables> {
    let g = &p.grid;
    let nz = g.nz();
    let solids = &p.bodies.solids;
    let TableLayout { face_offsets, dens_at, part_at, exit_at, bnd_len, incident_len } = table_layout(p)?;
    // A collapsed periodic axis has 1/width 0: its upwind term drops (boundary.rs).
    let mut bnd: Vec<f32> = (0..3).flat_map(|a| p.sweep_inv_widths(a)).map(|x| x as f32).collect();
    debug_assert_eq!(bnd.len(), dens_at);
    bnd.resize(bnd_len, 0.0);
    let range = |k: usize| solids.slice_walls.get(k).cloned().unwrap_or(0..0);
    let mut walls: Vec<[u32; 4]> = (0..nz).map(|k| [range(k).start as u32, range(k).len() as u32, 0, 0]).collect();
    let nxy = g.slice_cells() as u32;
    walls.extend(solids.walls.iter().enumerate().map(|(n, w)| [w.cell % nxy, w.side.id() as u32, n as u32, 0]));
    let slice_walls = (0..nz).map(|k| range(k).len()).collect();
    Ok(DeviceTables { bnd, dens_at, walls, face_offsets, part_at, exit_at, incident_len, slice_walls })
}

/// The cell coefficients of an iteration with each cell's wall word.
pub fn cell_records(p: &Problem, input: &SweepInput) -> Vec<CellCoeffs> {
    let words = &p.bodies.solids.words;
    input.eq.par_iter().enumerate().map(|(c, e)| CellCoeffs::from_eq(e, words.get(c).copied().unwrap_or(0))).collect()
}

/// [`cell_records`] unrounded, for the f64 slice kernels (CUDA's and wgpu's): 12 values per
/// cell in CellCoeffs' order, the wall word as its exact value (solid cells' coefficients
/// are zero here too).
pub fn cell_records_f64(p: &Problem, input: &SweepInput) -> Vec<f64> {
    let words = &p.bodies.solids.words;
    input
        .eq
        .iter()
        .enumerate()
        .flat_map(|(c, e)| {
            let word = words.get(c).copied().unwrap_or(0) as f64;
            [
                e.pref,
                e.inv_t,
                e.nu,
                word,
                e.u[0],
                e.u[1],
                e.u[2],
                e.base,
                e.s[0],
                e.s[1],
                e.s[2],
                e.inv_t * std::f64::consts::LOG2_E,
            ]
        })
        .collect()
}

/// The face densities, the wall densities, then the partner inflows, as uploaded after
/// `dens_at` in `bnd`.
/// `of` rounds each to the kernels' value type.
pub fn densities<T>(input: &SweepInput, of: impl Fn(f64) -> T + Copy) -> Vec<T> {
    input
        .face_density
        .iter()
        .flat_map(|f| f.iter().map(move |&x| of(x)))
        .chain(input.wall_density.iter().map(|&x| of(x)))
        .chain(input.partner.iter().flat_map(|f| f.iter().map(move |&x| of(x))))
        .collect()
}

/// Read back: raw moments (MSTRIDE floats per cell), box-face incident fluxes and exits,
/// wall sums.
pub fn unpack<T: Copy + Into<f64> + Sync>(
    out: &mut SweepOutput,
    moments: &[T],
    incident: &[T],
    wall_sums: &[T],
    t: &DeviceTables,
) {
    let face_offsets = &t.face_offsets;
    for (f, ex) in out.exits.iter_mut().enumerate() {
        if t.exit_at[f] != NONE {
            let at = t.exit_at[f] as usize;
            let n = ex.len();
            ex.par_iter_mut().zip(&incident[at..at + n]).for_each(|(d, &s)| *d = s.into());
        }
    }
    out.raw.par_iter_mut().zip(moments.par_chunks(MSTRIDE)).for_each(|(m, d)| {
        for (x, &y) in m.iter_mut().zip(d) {
            *x = y.into();
        }
    });
    for f in 0..6 {
        let src = &incident[face_offsets[f]..face_offsets[f + 1]];
        for (d, &s) in out.incident[f].iter_mut().zip(src) {
            *d = s.into();
        }
    }
    for (d, s) in out.wall.iter_mut().zip(wall_sums.chunks(WALL_SUMS)) {
        for (x, &y) in d.iter_mut().zip(s) {
            *x = y.into();
        }
    }
}

pub fn plan_summary(s: &GpuSchedule) -> PlanSummary {
    PlanSummary {
        batches: s.batch_count(),
        max_batch: s.max_batch(),
        in_flight: s.in_flight(),
        distribution_bytes: s.distribution_bytes,
        traffic_per_point: None,
    }
}
