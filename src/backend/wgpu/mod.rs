//! The wgpu backend: the same iteration as the CPU backend, on any Vulkan, Metal or DX12
//! GPU, in f32, or in f64 on adapters with f64 shaders (`real.rs`; docs/gpu.md).
//!
//! Per iteration the host uploads the per-cell sweep coefficients and the face and wall
//! densities, records every wave, z-step and chunk into one command buffer (sweep_slice,
//! moment_slice, and wall_load_slice on slices that cut a body), submits once and reads back
//! the raw moments and incident fluxes: 13 floats per cell, one per box-face cell and five
//! per body wall face. The solver loop then does in f64 what the CPU
//! backend's caller does: mass rescaling, the new macroscopic state, the wall densities and
//! the residual. That readback is about 1/4000 of the bytes the sweeps move.

mod bandwidth;
mod build;
pub mod device;
pub mod faults;
pub mod fused;
pub mod group;
pub mod kernels;
pub mod layout;
pub mod limits;
mod plan;
pub mod prewarm;
mod quiet;
pub mod real;
pub mod records;
pub mod records_f64;
pub mod schedule;
pub mod shaders;
mod specialise;
mod stage_check;
pub mod twin;
pub mod twin2;
pub mod twin_wall;

pub use build::sweep_rows;

use super::{Backend, PlanSummary, SweepInput, SweepOutput};
use crate::backend::fault::{Fault, FaultKind};
use crate::problem::Problem;
use anyhow::anyhow;
use kernels::{encode_moment_slice, encode_sweep_slice, encode_wall_load_slice, Kernel};
use layout::PARAMS_STRIDE;
use schedule::GpuSchedule;
use std::sync::Arc;

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
    /// The sweep kernel to run (tests; otherwise `KNUDSEN_SWEEP` or the fused kernel
    /// wherever it applies), and the fused kernel's tile (otherwise the largest that fits).
    pub sweep: Option<crate::backend::fused::SweepKernel>,
    pub fused_tile: Option<[usize; 2]>,
    /// Moments per fused_moments invocation, 1 or 13 (tests; otherwise by grid size,
    /// backend/fused.rs::moments_per_thread).
    pub fused_moments_per_thread: Option<usize>,
}

/// Default slice budget where the device's memory is not known (wgpu does not report it):
/// one that fits desktop GPUs; raise it with --memory-budget-mib on large cards.
pub const DEFAULT_BUDGET_MIB: f64 = 2048.0;

/// The budget when none is given: half the memory of a discrete GPU reached through Vulkan
/// (as the CUDA backend takes half the device's), else [`DEFAULT_BUDGET_MIB`].
pub fn default_budget_bytes(adapter: &wgpu::Adapter) -> u64 {
    let fallback = (DEFAULT_BUDGET_MIB * 1048576.0) as u64;
    device::discrete_memory_bytes(adapter).map_or(fallback, |m| (m / 2).max(fallback))
}

/// sweep_slice, moment_slice and wall_load_slice, the global-slice path's three stages.
struct SliceKernels {
    sweep: Kernel,
    /// Invocations per velocity of `sweep` (its ROWS).
    rows: u32,
    moment: Kernel,
    wall_load: Kernel,
}

pub struct WgpuBackend {
    problem: Arc<Problem>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    subgroups: bool,
    schedule: GpuSchedule,
    max_per_dim: u32,
    /// The slice path's kernels; None with the fused sweep, which needs none of them
    /// (their pipelines cost set-up time for nothing).
    slice_kernels: Option<SliceKernels>,
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
    /// The cell records from the fields on the device (records.rs): in f64 where the
    /// device has it (the default), in f32 when `KNUDSEN_CELL_RECORDS=device-f32` asks;
    /// None: from `SweepInput::eq` on the host, in f64 (devices without f64, or `host`).
    records: Option<records::Records>,
    faults: faults::Faults,
    /// The fused on-chip sweep where the case and adapter allow it (then no slices are
    /// allocated); else why not.
    fused: Result<fused::FusedGpu, String>,
    // Kept alive for the bind groups.
    _buffers: Vec<wgpu::Buffer>,
    slices: Vec<wgpu::Buffer>,
    /// The slice path in f64 (`real.rs`): f64 buffers, host records, no fused sweep.
    f64: bool,
}

impl WgpuBackend {
    /// Choose an adapter, plan, and allocate. The plan is checked against the adapter's
    /// limits before anything is allocated.
    /// `budget_bytes`: None for the adapter's default ([`default_budget_bytes`]).
    pub fn new(problem: Arc<Problem>, budget_bytes: Option<u64>, opts: &WgpuOptions) -> anyhow::Result<Self> {
        let t = std::time::Instant::now();
        let adapter = match device::kept_adapter() {
            Some(a) if opts.allow_software || !device::is_software(&a.get_info()) => a,
            _ => device::pick(device::adapters(), opts.allow_software).map_err(|e| anyhow!(e))?,
        };
        log::debug!("wgpu: adapter chosen in {:.3} s", t.elapsed().as_secs_f64());
        let budget = budget_bytes.unwrap_or_else(|| default_budget_bytes(&adapter));
        Self::with_adapter(problem, budget, opts, &adapter)
    }

    pub fn with_adapter(
        problem: Arc<Problem>,
        budget_bytes: u64,
        opts: &WgpuOptions,
        adapter: &wgpu::Adapter,
    ) -> anyhow::Result<Self> {
        let info = adapter.get_info();
        let requested = opts.limits.clone().unwrap_or_else(|| adapter.limits());
        let (sched, mut fused_plan) = Self::plan(&problem, budget_bytes, opts, adapter, &requested)?;
        let tables = super::gpu_io::device_tables(&problem)?;
        if let (Ok(plan), Some(n)) = (&mut fused_plan, opts.fused_moments_per_thread) {
            plan.moments_per_thread = n;
        }
        let t = std::time::Instant::now();
        let (device, queue) = device::open_or_kept(adapter, requested.clone(), !opts.no_subgroups)
            .map_err(|e| Fault::error(FaultKind::Device, e))?;
        log::debug!("wgpu: device opened in {:.3} s", t.elapsed().as_secs_f64());
        let t_build = std::time::Instant::now();
        let has_f64 = device.features().contains(wgpu::Features::SHADER_F64);
        let records = real::records_stage(&problem, has_f64)?;
        let subgroups = device.features().contains(wgpu::Features::SUBGROUP);
        let faults = faults::Faults::watch(&device);
        let built = faults::built_within_scopes(&device, || {
            Self::build(
                problem.clone(),
                device.clone(),
                queue.clone(),
                info.clone(),
                subgroups,
                sched,
                tables,
                requested.max_compute_workgroups_per_dimension,
                faults,
                fused_plan,
                records,
            )
        })?;
        if let Some(fault) = built.faults.take() {
            return Err(Fault::error(FaultKind::Device, format!("{}: {fault}", built.info.name)));
        }
        log::debug!("wgpu: pipelines and buffers built in {:.3} s", t_build.elapsed().as_secs_f64());
        log::info!(
            "wgpu sweep kernel: {}{}",
            fused::describe(&built.fused),
            built
                .slice_kernels
                .as_ref()
                .map_or(String::new(), |k| format!(", {} invocation(s) per velocity (rows in flight)", k.rows))
        );
        log::info!(
            "wgpu cell records: {}",
            match built.records.as_ref().map(records::Records::is_f64) {
                None => "on the host, f64",
                Some(true) => "on the device, f64",
                Some(false) => "on the device, f32 (KNUDSEN_CELL_RECORDS=device-f32)",
            }
        );
        Ok(built)
    }

    /// Which sweep kernel runs, and why.
    pub fn sweep_kernel(&self) -> String {
        fused::describe(&self.fused)
    }

    fn params_index(max_groups: usize, nz: usize, w: usize, g: usize, step: usize) -> u64 {
        ((w * max_groups + g) * nz + step) as u64
    }

    /// Upload the cell coefficients and face densities, and start a command encoder whose
    /// first commands clear the moment and incident sums.
    fn begin_iteration(&mut self, input: &SweepInput) -> wgpu::CommandEncoder {
        real::write_densities(&self.queue, &self.bnd, self.dens_at, input, self.f64);
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("iteration") });
        // A caller that gives no fields (the stage checks) gets the host's records.
        match &mut self.records {
            Some(r) if input.fields.len() == self.problem.grid.cells() => r.encode(&self.queue, &mut enc, input.fields),
            _ => real::write_host_records(&self.queue, &self.cells, &self.problem, input, self.f64),
        }
        enc.clear_buffer(&self.moments, 0, None);
        enc.clear_buffer(&self.incident, 0, None);
        enc.clear_buffer(&self.wall_sums, 0, None);
        enc
    }

    pub fn schedule(&self) -> &GpuSchedule {
        &self.schedule
    }

    /// Whether moment_slice reduces with subgroups (never in f64: the workgroup tree).
    pub fn uses_subgroups(&self) -> bool {
        self.subgroups && !self.f64
    }
}

impl Backend for WgpuBackend {
    fn wgpu_handles(&self) -> Option<crate::backend::WgpuHandles> {
        // The synthetic solve on the wgpu device is f32, and a coarse start would prewarm
        // the fused sweep (f32 only): an f64 sweep keeps its solve on the host, in f64.
        (!self.f64).then(|| (self.device.clone(), self.queue.clone(), self.info.name.clone()))
    }

    fn kind(&self) -> &'static str {
        "wgpu"
    }

    fn device(&self) -> String {
        format!(
            "{} ({:?}, {}{}{})",
            self.info.name,
            self.info.backend,
            self.info.driver,
            if self.uses_subgroups() { ", subgroups" } else { "" },
            if self.f64 { ", f64" } else { "" }
        )
    }

    fn plan_summary(&self) -> PlanSummary {
        let mut s = super::gpu_io::plan_summary(&self.schedule);
        if let Ok(f) = &self.fused {
            s.in_flight = f.plan.stride;
            s.distribution_bytes = f.plan.bytes();
            s.traffic_per_point = Some(f.plan.traffic_per_point());
        }
        s
    }

    fn device_bytes(&self) -> Option<u64> {
        let fixed = [&self.cells, &self.bnd, &self.wall_sums, &self.moments, &self.incident, &self.staging];
        let fused =
            self.fused.as_ref().map_or(0, |f| f.device_bytes()) + self.records.as_ref().map_or(0, |r| r.device_bytes());
        Some(fixed.into_iter().chain(&self._buffers).chain(&self.slices).map(|b| b.size()).sum::<u64>() + fused)
    }

    fn copy_bandwidth(&mut self) -> anyhow::Result<f64> {
        bandwidth::copy_bandwidth(&self.device, &self.queue, self.info.device_type == wgpu::DeviceType::Cpu)
    }

    fn derives_coefficients(&self) -> bool {
        self.records.is_some()
    }

    fn bytes_per_value(&self) -> usize {
        crate::backend::gpu_bytes_per_value(self.f64)
    }

    fn residual_floor(&self) -> f64 {
        if self.f64 {
            return 0.0;
        }
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
            let max_groups = self.schedule.max_groups();
            let (do_sweep, do_moment) = if self.first_output.is_some() { self.stages } else { (true, true) };
            if let Ok(f) = &self.fused {
                f.encode(&mut pass);
            }
            // The slice path's kernels exist exactly when the fused sweep does not run.
            let (k, slice_waves) = match &self.slice_kernels {
                Some(k) => (Some(k), &self.schedule.waves[..]),
                None => (None, &[][..]),
            };
            for (w, wave) in slice_waves.iter().enumerate() {
                let k = k.expect("slice waves come with their kernels");
                for step in 0..nz {
                    // All groups' sweeps first, then their moment and wall stages: the
                    // sweeps of different groups touch different slices.
                    for (g, grp) in wave.groups.iter().enumerate().filter(|_| do_sweep) {
                        let off = (Self::params_index(max_groups, nz, w, g, step) * PARAMS_STRIDE) as u32;
                        encode_sweep_slice(
                            &mut pass,
                            &k.sweep,
                            &self.sweep_groups[w][g],
                            off,
                            (grp.count, k.rows),
                            self.max_per_dim,
                        );
                    }
                    for g in (0..wave.groups.len()).filter(|_| do_moment) {
                        let off = (Self::params_index(max_groups, nz, w, g, step) * PARAMS_STRIDE) as u32;
                        encode_moment_slice(
                            &mut pass,
                            &k.moment,
                            &self.moment_groups[w][g],
                            off,
                            self.schedule.moment_grid,
                        );
                        let faces = self.slice_walls[step].max(self.slice_walls[nz - 1 - step]);
                        if faces > 0 {
                            encode_wall_load_slice(
                                &mut pass,
                                &k.wall_load,
                                &self.wall_groups[w][g],
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
        // wgpu's submit does host work of its own (resource tracking, clears of buffers not
        // yet written); timed apart so that the wait below is the GPU's alone.
        let t_submit = t0.elapsed().as_secs_f64();

        let slice = self.staging.slice(..);
        let f = self.faults.clone();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            if let Err(e) = r {
                f.record(format!("reading the results back failed: {e}"));
            }
        });
        faults::wait(&self.device, Some(&self.faults)).map_err(|e| anyhow!("{}: {e}", self.info.name))?;
        let t_gpu = t0.elapsed().as_secs_f64();
        {
            let view = slice.get_mapped_range().map_err(|e| anyhow!("mapping the results: {e:?}"))?;
            real::unpack(out, &view, [mbytes, wall_at].map(|b| b as usize), self.f64, &self.tables_layout);
        }
        self.staging.unmap();
        log::debug!(
            "wgpu sweep: upload + encode {t_encode:.4} s, submit {:.4} s, GPU {:.4} s, readback {:.4} s",
            t_submit - t_encode,
            t_gpu - t_submit,
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
