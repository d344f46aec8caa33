//! The wgpu backend: the same iteration as the CPU backend, on any Vulkan, Metal or DX12
//! GPU, in f32 (docs/gpu.md).
//!
//! Per iteration the host uploads the per-cell sweep coefficients and the face and wall
//! densities, records every wave, z-step and chunk into one command buffer (sweep_slice,
//! moment_slice, and wall_load_slice on slices that cut a body), submits once and reads back
//! the raw moments and incident fluxes: 13 floats per cell, one per box-face cell and five
//! per body wall face. The solver loop then does in f64 what the CPU
//! backend's caller does: mass rescaling, the new macroscopic state, the wall densities and
//! the residual. That readback is about 1/4000 of the bytes the sweeps move.

pub mod device;
pub mod kernels;
pub mod layout;
pub mod schedule;
pub mod shaders;
pub mod twin;

use super::{Backend, PlanSummary, SweepInput, SweepOutput};
use crate::body::WALL_SUMS;
use crate::grid::Octant;
use crate::problem::Problem;
use anyhow::{anyhow, Context};
use kernels::{encode_moment_slice, encode_sweep_slice, encode_wall_load_slice, Kernel, Sizes};
use layout::{CellCoeffs, StepParams, MSTRIDE, PARAMS_STRIDE};
use schedule::{GpuLimits, GpuSchedule};
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// Options for creating the backend beyond the problem itself.
#[derive(Debug, Clone, Default)]
pub struct WgpuOptions {
    /// Allow software adapters (lavapipe). `--backend wgpu` sets it; auto does not.
    pub allow_software: bool,
    /// Device limits to request instead of the adapter's (tests: WebGPU's minimum).
    pub limits: Option<wgpu::Limits>,
    /// Cap on bytes per slice binding, below the adapter's (tests: force several chunks).
    pub max_slice_binding: Option<u64>,
    /// Do not request SUBGROUP even where offered (tests: the workgroup-memory reduction).
    pub no_subgroups: bool,
}

/// Default slice budget: wgpu does not report device memory, so a budget that fits
/// desktop GPUs; raise it with --memory-budget-mib on large cards.
pub const DEFAULT_BUDGET_MIB: f64 = 2048.0;

pub struct WgpuBackend {
    problem: Arc<Problem>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    subgroups: bool,
    schedule: GpuSchedule,
    max_per_dim: u32,
    sweep: Kernel,
    moment: Kernel,
    wall_load: Kernel,
    cells: wgpu::Buffer,
    /// Inverse widths, then the face and wall densities from float `dens_at`.
    bnd: wgpu::Buffer,
    dens_at: usize,
    wall_sums: wgpu::Buffer,
    /// Per z-slice: the number of body wall faces in it.
    slice_walls: Vec<usize>,
    moments: wgpu::Buffer,
    incident: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Per wave, per chunk.
    sweep_groups: Vec<Vec<wgpu::BindGroup>>,
    moment_groups: Vec<Vec<wgpu::BindGroup>>,
    wall_groups: Vec<Vec<wgpu::BindGroup>>,
    /// Face, partner and exit layout (gpu_io).
    tables_layout: super::gpu_io::DeviceTables,
    /// Which stages run: (sweep, moment). Both, unless KNUDSEN_STAGES=sweep or =moment asks
    /// for one alone to time it; then every iteration after the first returns the first
    /// iteration's moments, and the results are meaningless.
    stages: (bool, bool),
    first_output: Option<SweepOutput>,
    // Kept alive for the bind groups.
    _buffers: Vec<wgpu::Buffer>,
    slices: Vec<wgpu::Buffer>,
}

impl WgpuBackend {
    /// Choose an adapter, plan, and allocate. The plan is checked against the adapter's
    /// limits before anything is allocated.
    pub fn new(problem: Arc<Problem>, budget_bytes: u64, opts: &WgpuOptions) -> anyhow::Result<Self> {
        let adapter = device::pick(device::adapters(), opts.allow_software).map_err(|e| anyhow!(e))?;
        Self::with_adapter(problem, budget_bytes, opts, &adapter)
    }

    pub fn with_adapter(
        problem: Arc<Problem>,
        budget_bytes: u64,
        opts: &WgpuOptions,
        adapter: &wgpu::Adapter,
    ) -> anyhow::Result<Self> {
        let info = adapter.get_info();
        let requested = opts.limits.clone().unwrap_or_else(|| adapter.limits());
        let limits = GpuLimits::from_wgpu(&requested);
        let p = &*problem;
        let sched = schedule::schedule(
            &p.vgrid.octant_members(),
            &p.vgrid.xi,
            p.grid.dims(),
            budget_bytes,
            &limits,
            opts.max_slice_binding,
        )
        .map_err(|e| anyhow!("{} cannot run this case: {e}", info.name))?;
        let tables = super::gpu_io::device_tables(p)?;
        let max_binding = requested.max_storage_buffer_binding_size;
        for (what, floats) in [("bnd", tables.bnd.len()), ("incident", tables.incident_len)] {
            anyhow::ensure!(
                floats as u64 * 4 <= max_binding,
                "{}: the `{what}` buffer ({} MiB, mostly specular/periodic partner data) exceeds the adapter's {} MiB storage binding limit; use the CUDA or CPU backend, or fewer velocity points",
                info.name,
                (floats as u64 * 4) >> 20,
                max_binding >> 20
            );
        }
        let (device, queue) =
            device::open(adapter, Some(requested.clone()), !opts.no_subgroups).map_err(|e| anyhow!(e))?;
        let subgroups = device.features().contains(wgpu::Features::SUBGROUP);
        let scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let built = Self::build(
            problem.clone(),
            device.clone(),
            queue.clone(),
            info.clone(),
            subgroups,
            sched,
            tables,
            requested.max_compute_workgroups_per_dimension,
        );
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(anyhow!("wgpu rejected the pipelines or buffers: {e}"));
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(anyhow!("out of GPU memory allocating the case: {e}; lower --memory-budget-mib"));
        }
        Ok(built)
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        problem: Arc<Problem>,
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        subgroups: bool,
        sched: GpuSchedule,
        tables: super::gpu_io::DeviceTables,
        max_per_dim: u32,
    ) -> Self {
        let p = &*problem;
        let g = &p.grid;
        let [nx, ny, nz] = g.dims();
        // KNUDSEN_ROW_IN_WORKGROUP=0 turns the row buffer off (performance comparisons).
        let sizes = Sizes {
            nx: nx as u32,
            ny: ny as u32,
            nz: nz as u32,
            chunk_stride: sched.chunk_stride as u32,
            m: p.vgrid.m as u32,
            step: (p.vgrid.half_width / (p.vgrid.m - 1) as f64) as f32,
            srow: shape_rows(p) as u32,
            walls: p.bodies.solids.any(),
            part_at: tables.part_at,
            exit_at: tables.exit_at,
        };
        let sweep = kernels::sweep_slice_kernel(&device, &sizes);
        let moment = kernels::moment_slice_kernel(&device, &sizes, subgroups);
        let wall_load = kernels::wall_load_slice_kernel(&device, &sizes);

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

        let cells = make("cells", (g.cells() * std::mem::size_of::<CellCoeffs>()) as u64, storage);
        let incident_len = tables.incident_len;
        let nwalls = p.bodies.solids.walls.len();
        let dens_at = tables.dens_at;
        let bnd = init("bnd", bytemuck::cast_slice(&tables.bnd), storage);
        let walls = init("walls", bytemuck::cast_slice(&tables.walls), storage);
        let wall_sums_bytes = (nwalls * WALL_SUMS * 4) as u64;
        let wall_sums = make("wall_sums", wall_sums_bytes, storage | wgpu::BufferUsages::COPY_SRC);
        let moments_bytes = (g.cells() * MSTRIDE * 4) as u64;
        let moments = make("moments", moments_bytes, storage | wgpu::BufferUsages::COPY_SRC);
        let incident = make("incident", incident_len as u64 * 4, storage | wgpu::BufferUsages::COPY_SRC);
        let staging = make(
            "staging",
            moments_bytes + incident_len as u64 * 4 + wall_sums_bytes,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let slice_bytes = (sched.chunk_stride * sched.slice_cells * 4) as u64;
        let slices: Vec<wgpu::Buffer> = (0..sched.slice_buffers)
            .map(|_| make("slices", slice_bytes, storage | wgpu::BufferUsages::COPY_SRC))
            .collect();

        // Step parameters for every (wave, chunk, step), addressed by dynamic offset.
        let max_chunks = sched.slice_buffers;
        let mut params = vec![0u8; sched.waves.len() * max_chunks * nz * PARAMS_STRIDE as usize];
        for (w, wave) in sched.waves.iter().enumerate() {
            for (c, chunk) in wave.chunks.iter().enumerate() {
                for step in 0..nz {
                    let rec = StepParams {
                        step: step as u32,
                        count: chunk.velocities.len() as u32,
                        split: chunk.split as u32,
                        pad: 0,
                    };
                    let at = Self::params_index(max_chunks, nz, w, c, step) as usize * PARAMS_STRIDE as usize;
                    params[at..at + 16].copy_from_slice(bytemuck::bytes_of(&rec));
                }
            }
        }
        let params = init("params", &params, wgpu::BufferUsages::UNIFORM);

        let mut keep = vec![walls.clone()];
        let mut sweep_groups = Vec::new();
        let mut moment_groups = Vec::new();
        let mut wall_groups = Vec::new();
        for wave in &sched.waves {
            let mut sg = Vec::new();
            let mut mg = Vec::new();
            let mut wg = Vec::new();
            for (c, chunk) in wave.chunks.iter().enumerate() {
                let table = init("table", bytemuck::cast_slice(&velocity_table(p, &chunk.velocities)), storage);
                let vidx = init("vidx", bytemuck::cast_slice(&moment_index(p, &chunk.velocities)), storage);
                sg.push(kernels::bind(&device, &sweep, &params, &[&cells, &bnd, &table, &slices[c]]));
                mg.push(kernels::bind(&device, &moment, &params, &[&vidx, &slices[c], &moments, &incident]));
                wg.push(kernels::bind(&device, &wall_load, &params, &[&table, &slices[c], &walls, &wall_sums]));
                keep.push(table);
                keep.push(vidx);
            }
            sweep_groups.push(sg);
            moment_groups.push(mg);
            wall_groups.push(wg);
        }
        let slice_walls = tables.slice_walls.clone();
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
            sweep,
            moment,
            wall_load,
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
            stages: match std::env::var("KNUDSEN_STAGES").as_deref() {
                Ok("sweep") => (true, false),
                Ok("moment") => (false, true),
                _ => (true, true),
            },
            first_output: None,
            slices: slice_buffers,
            _buffers: keep,
        }
    }

    fn params_index(max_chunks: usize, nz: usize, w: usize, c: usize, step: usize) -> u64 {
        ((w * max_chunks + c) * nz + step) as u64
    }

    /// Run only the first two z-steps of chunk 0 of wave 0 (sweep_slice, moment_slice,
    /// wall_load_slice, twice) and return that chunk's slice storage, the moment sums, the
    /// incident sums and the wall sums, so each stage can be compared with its CPU twin.
    pub fn first_steps_for_check(&mut self, input: &SweepInput) -> anyhow::Result<[Vec<f32>; 4]> {
        let nz = self.problem.grid.nz();
        let mut enc = self.begin_iteration(input);
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            let count = self.schedule.waves[0].chunks[0].velocities.len();
            for step in 0..2.min(nz) {
                let off = (Self::params_index(self.schedule.slice_buffers, nz, 0, 0, step) * PARAMS_STRIDE) as u32;
                encode_sweep_slice(&mut pass, &self.sweep, &self.sweep_groups[0][0], off, count, self.max_per_dim);
                encode_moment_slice(&mut pass, &self.moment, &self.moment_groups[0][0], off, self.schedule.moment_grid);
                let faces = self.slice_walls[step].max(self.slice_walls[nz - 1 - step]);
                if faces > 0 {
                    let wg = &self.wall_groups[0][0];
                    encode_wall_load_slice(&mut pass, &self.wall_load, wg, off, faces, self.max_per_dim);
                }
            }
        }
        let read = |enc: &mut wgpu::CommandEncoder, b: &wgpu::Buffer| {
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: b.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            enc.copy_buffer_to_buffer(b, 0, &staging, 0, b.size());
            staging
        };
        let bufs = [
            read(&mut enc, &self.slices[0]),
            read(&mut enc, &self.moments),
            read(&mut enc, &self.incident),
            read(&mut enc, &self.wall_sums),
        ];
        self.queue.submit([enc.finish()]);
        for b in &bufs {
            b.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        }
        self.device.poll(wgpu::PollType::wait_indefinitely()).context("waiting for the GPU")?;
        let mut out = bufs.iter().map(|b| -> anyhow::Result<Vec<f32>> {
            let view = b.slice(..).get_mapped_range().map_err(|e| anyhow!("mapping: {e:?}"))?;
            Ok(bytemuck::cast_slice(&view).to_vec())
        });
        Ok([out.next().unwrap()?, out.next().unwrap()?, out.next().unwrap()?, out.next().unwrap()?])
    }

    /// Upload the cell coefficients and face densities, and start a command encoder whose
    /// first commands clear the moment and incident sums.
    fn begin_iteration(&self, input: &SweepInput) -> wgpu::CommandEncoder {
        let cells = super::gpu_io::cell_records(&self.problem, input);
        self.queue.write_buffer(&self.cells, 0, bytemuck::cast_slice(&cells));
        let dens = super::gpu_io::densities(input);
        self.queue.write_buffer(&self.bnd, (self.dens_at * 4) as u64, bytemuck::cast_slice(&dens));
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("iteration") });
        enc.clear_buffer(&self.moments, 0, None);
        enc.clear_buffer(&self.incident, 0, None);
        enc.clear_buffer(&self.wall_sums, 0, None);
        enc
    }

    pub fn schedule(&self) -> &GpuSchedule {
        &self.schedule
    }

    pub fn uses_subgroups(&self) -> bool {
        self.subgroups
    }
}

/// vec4 rows of shapes per velocity in the velocity table (after its (xi, w) row): the face
/// inflows, then four bodies per row.
pub fn shape_rows(p: &Problem) -> usize {
    1 + p.bodies.bodies.len().div_ceil(4)
}

/// sweep_slice's velocity table: per chunk velocity, 1 + `shape_rows` rows: (xi, w); the
/// unit-density inflow from its upwind x, y, z faces and the global velocity index (f32
/// bits, for partner slots); then each body's unit Maxwellian, four per row. A GHOST slot
/// copies the velocity before it (the same octant) with zero weight and zero inflow.
pub fn velocity_table(p: &Problem, velocities: &[u32]) -> Vec<[f32; 4]> {
    let rows = shape_rows(p);
    let mut last = [0.0f32; 3];
    let mut last_index = 0u32;
    let mut table = Vec::with_capacity(velocities.len() * (rows + 1));
    for &v in velocities {
        if v == schedule::GHOST {
            table.push([last[0], last[1], last[2], 0.0]);
            table.push([0.0, 0.0, 0.0, f32::from_bits(last_index)]);
            table.extend(std::iter::repeat_n([0.0; 4], rows - 1));
            continue;
        }
        last_index = v;
        let v = v as usize;
        let x = p.vgrid.xi[v];
        let faces = super::cpu::upwind_faces(Octant::of(x));
        let shape = |a: usize| p.bounds.faces[faces[a].id()].shape[v] as f32;
        last = [x[0] as f32, x[1] as f32, x[2] as f32];
        table.push([last[0], last[1], last[2], p.vgrid.w[v] as f32]);
        table.push([shape(0), shape(1), shape(2), f32::from_bits(v as u32)]);
        for r in 1..rows {
            table
                .push(std::array::from_fn(|q| p.bodies.bodies.get(4 * (r - 1) + q).map_or(0.0, |b| b.shape[v] as f32)));
        }
    }
    table
}

/// moment_slice's index buffer: the 1D weights as f32 bits, then the chunk's velocity
/// indices.
pub fn moment_index(p: &Problem, velocities: &[u32]) -> Vec<u32> {
    p.vgrid.weights_1d.iter().map(|&w| (w as f32).to_bits()).chain(velocities.iter().copied()).collect()
}

impl Backend for WgpuBackend {
    fn kind(&self) -> &'static str {
        "wgpu"
    }

    fn device(&self) -> String {
        format!(
            "{} ({:?}, {}{})",
            self.info.name,
            self.info.backend,
            self.info.driver,
            if self.subgroups { ", subgroups" } else { "" }
        )
    }

    fn plan_summary(&self) -> PlanSummary {
        super::gpu_io::plan_summary(&self.schedule)
    }

    fn residual_floor(&self) -> f64 {
        // With f stored in f32, momentum sums of thermal-scale terms (|w xi f| ~ 0.5 in
        // total, cancelling to rho U ~ 0.02) carry ~1e-7 absolute round-off, so relative
        // momentum changes stall near 2e-6 on the quick cavity (measured on lavapipe);
        // 1e-5 leaves margin above that floor.
        1e-5
    }

    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()> {
        let p = &*self.problem;
        let nz = p.grid.nz();
        let t0 = std::time::Instant::now();
        let mut enc = self.begin_iteration(input);
        {
            let mut pass =
                enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sweeps"), timestamp_writes: None });
            let max_chunks = self.schedule.slice_buffers;
            let (do_sweep, do_moment) = if self.first_output.is_some() { self.stages } else { (true, true) };
            for (w, wave) in self.schedule.waves.iter().enumerate() {
                for step in 0..nz {
                    for (c, chunk) in wave.chunks.iter().enumerate().filter(|_| do_sweep) {
                        let off = (Self::params_index(max_chunks, nz, w, c, step) * PARAMS_STRIDE) as u32;
                        encode_sweep_slice(
                            &mut pass,
                            &self.sweep,
                            &self.sweep_groups[w][c],
                            off,
                            chunk.velocities.len(),
                            self.max_per_dim,
                        );
                    }
                    for c in (0..wave.chunks.len()).filter(|_| do_moment) {
                        let off = (Self::params_index(max_chunks, nz, w, c, step) * PARAMS_STRIDE) as u32;
                        encode_moment_slice(
                            &mut pass,
                            &self.moment,
                            &self.moment_groups[w][c],
                            off,
                            self.schedule.moment_grid,
                        );
                        let faces = self.slice_walls[step].max(self.slice_walls[nz - 1 - step]);
                        if faces > 0 {
                            encode_wall_load_slice(
                                &mut pass,
                                &self.wall_load,
                                &self.wall_groups[w][c],
                                off,
                                faces,
                                self.max_per_dim,
                            );
                        }
                    }
                }
            }
        }
        let mbytes = self.moments.size();
        enc.copy_buffer_to_buffer(&self.moments, 0, &self.staging, 0, mbytes);
        enc.copy_buffer_to_buffer(&self.incident, 0, &self.staging, mbytes, self.incident.size());
        let wall_at = mbytes + self.incident.size();
        if !out.wall.is_empty() {
            enc.copy_buffer_to_buffer(&self.wall_sums, 0, &self.staging, wall_at, self.wall_sums.size());
        }
        let t_encode = t0.elapsed().as_secs_f64();
        self.queue.submit([enc.finish()]);

        let slice = self.staging.slice(..);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        self.device.poll(wgpu::PollType::wait_indefinitely()).context("waiting for the GPU")?;
        let t_gpu = t0.elapsed().as_secs_f64();
        {
            let view = slice.get_mapped_range().map_err(|e| anyhow!("mapping the results: {e:?}"))?;
            let data: &[f32] = bytemuck::cast_slice(&view);
            let (moments, rest) = data.split_at(mbytes as usize / 4);
            let sums = &data[wall_at as usize / 4..];
            super::gpu_io::unpack(out, moments, rest, sums, &self.tables_layout);
        }
        self.staging.unmap();
        log::debug!(
            "wgpu sweep: upload + encode {t_encode:.4} s, GPU {:.4} s, readback {:.4} s",
            t_gpu - t_encode,
            t0.elapsed().as_secs_f64() - t_gpu
        );
        if self.stages != (true, true) {
            match &self.first_output {
                None => self.first_output = Some(out.clone()),
                Some(first) => *out = first.clone(),
            }
        }
        Ok(())
    }
}
