//! Allocating the wgpu backend: kernels, buffers, the step-parameter table and one bind
//! group per (wave, dispatch group) for each kernel.

use super::kernels::{self, Sizes};
use super::layout::{CellCoeffs, StepParams, MSTRIDE, PARAMS_STRIDE};
use super::schedule::GpuSchedule;
use super::{SliceKernels, WgpuBackend};
use crate::backend::gpu_io::DeviceTables;
use crate::backend::gpu_tables::shape_rows;
use crate::body::WALL_SUMS;
use crate::problem::Problem;
use std::sync::Arc;
use wgpu::util::DeviceExt;

impl WgpuBackend {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build(
        problem: Arc<Problem>,
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        subgroups: bool,
        sched: GpuSchedule,
        tables: DeviceTables,
        max_per_dim: u32,
        faults: super::faults::Faults,
        fused_plan: Result<crate::backend::fused::FusedPlan, String>,
        records: Option<bool>,
    ) -> Self {
        let p = &*problem;
        let g = &p.grid;
        let nz = g.nz();
        // The plan (mod.rs) refused f64 where the device lacks it.
        let f64 = super::real::wants_f64(p);
        let vb = crate::backend::gpu_bytes_per_value(f64);
        let nb = sched.slice_bindings;
        let rows = match fused_plan.is_err() {
            true => sweep_rows(&sched, p.grid.dims()[1], f64, info.device_type),
            false => 1,
        };
        let sizes = kernel_sizes(p, &sched, &tables, f64, rows);
        let slice_kernels = fused_plan.is_err().then(|| SliceKernels {
            sweep: kernels::sweep_slice_kernel(&device, &sizes, nb),
            rows,
            moment: kernels::moment_slice_kernel(&device, &sizes, subgroups, nb),
            wall_load: kernels::wall_load_slice_kernel(&device, &sizes, nb),
        });

        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let make = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage,
                mapped_at_creation: false,
            })
        };
        let init = |label: &str, data: &[u8], usage: wgpu::BufferUsages| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: data, usage })
        };

        // CellCoeffs' twelve values per cell, in the slice path's type.
        let cells = make("cells", (g.cells() * std::mem::size_of::<CellCoeffs>() / 4 * vb) as u64, storage);
        let incident_len = tables.incident_len;
        let nwalls = p.bodies.solids.walls.len();
        let dens_at = tables.dens_at;
        let bnd = init("bnd", &super::real::bnd(p, &tables, f64), storage);
        let walls = init("walls", bytemuck::cast_slice(&tables.walls), storage);
        let wall_sums_bytes = (nwalls * WALL_SUMS * vb) as u64;
        let wall_sums = make("wall_sums", wall_sums_bytes, storage | wgpu::BufferUsages::COPY_SRC);
        let moments_bytes = (g.cells() * MSTRIDE * vb) as u64;
        let moments = make("moments", moments_bytes, storage | wgpu::BufferUsages::COPY_SRC);
        let incident = make("incident", (incident_len * vb) as u64, storage | wgpu::BufferUsages::COPY_SRC);
        let staging = make(
            "staging",
            moments_bytes + (incident_len * vb) as u64 + wall_sums_bytes,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let slice_bytes = (sched.chunk_stride * sched.slice_cells * sched.slots * vb) as u64;
        // The fused sweep keeps no slices.
        let slice_buffers = if fused_plan.is_ok() { 0 } else { sched.slice_buffers };
        let slices: Vec<wgpu::Buffer> =
            (0..slice_buffers).map(|_| make("slices", slice_bytes, storage | wgpu::BufferUsages::COPY_SRC)).collect();

        let params = step_params(&sched, nz);
        let params = init("params", &params, wgpu::BufferUsages::UNIFORM);

        let mut keep = vec![walls.clone()];
        // A group with fewer chunks than the kernels' slice bindings binds a small buffer of
        // its own in each spare one (WebGPU forbids aliasing writable bindings).
        // One vec4 of the slice type: the least a binding of `array<vec4<real>>` may hold.
        let spare = (4 * vb) as u64;
        let spares: Vec<wgpu::Buffer> =
            (0..nb.saturating_sub(1)).map(|_| make("spare slices", spare, storage)).collect();
        let mut groups = [Vec::new(), Vec::new(), Vec::new()];
        for wave in sched.waves.iter().filter(|_| slice_kernels.is_some()) {
            let k = slice_kernels.as_ref().expect("filtered above");
            let mut wave_groups = [Vec::new(), Vec::new(), Vec::new()];
            for grp in &wave.groups {
                let vs = super::group::velocities(&wave.chunks, grp, sched.chunk_stride);
                let table = init("table", &super::real::velocity_table(p, &vs, f64), storage);
                let vidx = init("vidx", bytemuck::cast_slice(&super::real::moment_index(p, &vs, f64)), storage);
                let bound: Vec<&wgpu::Buffer> =
                    (0..nb).map(|c| if c < grp.chunks { &slices[grp.first + c] } else { &spares[c - 1] }).collect();
                let bind = |k: &kernels::Kernel, fixed: [&wgpu::Buffer; 3]| {
                    let all: Vec<&wgpu::Buffer> = fixed.into_iter().chain(bound.iter().copied()).collect();
                    kernels::bind(&device, k, &params, &all)
                };
                wave_groups[0].push(bind(&k.sweep, [&cells, &bnd, &table]));
                wave_groups[1].push(bind(&k.moment, [&vidx, &moments, &incident]));
                wave_groups[2].push(bind(&k.wall_load, [&table, &walls, &wall_sums]));
                keep.push(table);
                keep.push(vidx);
            }
            for (all, one) in groups.iter_mut().zip(wave_groups) {
                all.push(one);
            }
        }
        keep.extend(spares);
        let [sweep_groups, moment_groups, wall_groups] = groups;
        let slice_walls = tables.slice_walls.clone();
        let fused = fused_plan.map(|plan| {
            // The kernels a coarse start compiled beside its level, where they are this plan's.
            let specs = super::fused::kernel_specs(p, &plan, tables.part_at, tables.exit_at);
            let kernels =
                super::prewarm::take(&device, &specs).unwrap_or_else(|| super::fused::compile(&device, &specs));
            super::fused::FusedGpu::new(
                &device,
                kernels,
                p,
                plan,
                &cells,
                &bnd,
                &moments,
                &incident,
                &wall_sums,
                max_per_dim,
            )
        });
        // None in f64 (mod.rs): the records stages write f32 records.
        let records = records.and_then(|wide| super::records::Records::new(p, &device, &cells, max_per_dim, wide));
        let slice_buffers = slices;
        keep.push(params);
        Self {
            problem,
            device,
            queue,
            info,
            subgroups,
            schedule: sched,
            max_per_dim,
            slice_kernels,
            cells,
            bnd,
            dens_at,
            wall_sums,
            slice_walls,
            moments,
            incident,
            staging,
            sweep_groups,
            moment_groups,
            wall_groups,
            tables_layout: tables,
            records,
            stages: stages_from_env(),
            first_output: None,
            faults,
            slices: slice_buffers,
            f64,
            fused,
            _buffers: keep,
        }
    }
}

/// Step parameters for every (wave, dispatch group, step), addressed by dynamic offset
/// (`WgpuBackend::params_index`).
fn step_params(sched: &GpuSchedule, nz: usize) -> Vec<u8> {
    let max_groups = sched.max_groups();
    let mut params = vec![0u8; sched.waves.len() * max_groups * nz * PARAMS_STRIDE as usize];
    for (w, wave) in sched.waves.iter().enumerate() {
        for (g, grp) in wave.groups.iter().enumerate() {
            for step in 0..nz {
                let rec = StepParams { step: step as u32, count: grp.count as u32, split: grp.split as u32, pad: 0 };
                let at = WgpuBackend::params_index(max_groups, nz, w, g, step) as usize * PARAMS_STRIDE as usize;
                params[at..at + 16].copy_from_slice(bytemuck::bytes_of(&rec));
            }
        }
    }
    params
}

/// sweep_slice's invocations per velocity (backend::slice_rows): `KNUDSEN_SLICE_ROWS` if set,
/// else the rule for the largest dispatch group (slice_rows::WGPU_WAVE) on a discrete GPU;
/// 1 on any other adapter (a software adapter's invocations are CPU threads, which a barrier
/// per step only slows; an integrated or virtual GPU may hold fewer threads than the rule's
/// wave, past which rows cost time) and with more than one slice binding
/// (shaders.rs::sweep_rows_allowed).
pub fn sweep_rows(sched: &GpuSchedule, ny: usize, f64: bool, device: wgpu::DeviceType) -> u32 {
    use crate::backend::slice_rows;
    let asked = slice_rows::from_env().unwrap_or_else(|e| {
        // switches.rs refused such a value before anything ran; this is a library caller's.
        log::warn!("{e}; the rule's choice is used");
        None
    });
    let one_binding = super::shaders::sweep_rows_allowed(sched.slice_bindings);
    match asked {
        Some(r) if r > 1 && !one_binding => {
            log::warn!(
                "KNUDSEN_SLICE_ROWS={r}: the wgpu sweep takes one invocation per velocity with {} slice bindings",
                sched.slice_bindings
            );
            1
        }
        Some(r) => r,
        None if !one_binding || device != wgpu::DeviceType::DiscreteGpu => 1,
        None => {
            let largest = sched.waves.iter().flat_map(|w| &w.groups).map(|g| g.count).max().unwrap_or(0);
            slice_rows::choose(largest, slice_rows::WGPU_WAVE, crate::backend::gpu_bytes_per_value(f64), ny)
        }
    }
}

/// The sizes baked into the kernels as constants.
fn kernel_sizes(p: &Problem, sched: &GpuSchedule, tables: &DeviceTables, f64: bool, rows: u32) -> Sizes {
    let [nx, ny, nz] = p.grid.dims();
    Sizes {
        nx: nx as u32,
        ny: ny as u32,
        nz: nz as u32,
        chunk_stride: sched.chunk_stride as u32,
        m: p.vgrid.m as u32,
        step: {
            let step = p.vgrid.half_width / (p.vgrid.m - 1) as f64;
            if f64 {
                step
            } else {
                step as f32 as f64
            }
        },
        srow: shape_rows(p) as u32,
        walls: p.bodies.solids.any(),
        part_at: tables.part_at,
        exit_at: tables.exit_at,
        slots: sched.slots as u32,
        f64,
        rows,
    }
}

/// `KNUDSEN_STAGES=sweep` or `=moment` runs one stage alone, to time it (`WgpuBackend::stages`).
fn stages_from_env() -> (bool, bool) {
    match std::env::var("KNUDSEN_STAGES").as_deref() {
        Ok("sweep") => (true, false),
        Ok("moment") => (false, true),
        _ => (true, true),
    }
}
