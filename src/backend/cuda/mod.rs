//! The CUDA backend (feature `cuda`): the wgpu backend's kernels written in CUDA C
//! (`shaders/cuda/*.cu`, same names, same structure, same buffers), compiled at run time by
//! NVRTC with the grid sizes as `-D` constants, and launched through cudarc's driver API.
//! It uses the wgpu backend's scheduler (`wgpu::schedule`), buffer layouts
//! (`wgpu::layout`) and host tables (`velocity_table`, `moment_index`), so the two GPU paths
//! differ only in the kernel language and the API; on the same GPU their ratio measures what
//! portability costs (docs/benchmarks.md).
//!
//! cudarc loads libcuda and libnvrtc at run time: the feature builds without a CUDA toolkit,
//! and a machine without the driver gets an error, not a panic ([`available`]).

mod bandwidth;
mod fused;
mod kernel_cache;
pub mod kernels;
pub mod plan;
mod real;
mod records;
mod sizes;
pub use real::wants_f64;
use real::{Buffers, Real};
/// Page-locked host buffers, also for the synthetic solve's transfers.
pub(crate) use records::Pinned;

use super::gpu_tables::{moment_index_as, velocity_table_as};
use super::wgpu::layout::MSTRIDE;
use super::wgpu::schedule::{grid_2d, GpuSchedule};
use super::{gpu_io, Backend, PlanSummary, SweepInput, SweepOutput};
use crate::body::WALL_SUMS;
use crate::problem::Problem;
use anyhow::{anyhow, Context};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Whether the CUDA driver library can be loaded and reports a device; the reason if not.
/// cudarc panics on first use when the library is missing, so this is checked first.
pub fn available() -> Result<(), String> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so) on this machine".into());
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err("the CUDA driver reports no device".into()),
        Err(e) => Err(format!("the CUDA driver failed to start: {e}")),
    }
}

/// One line per CUDA device, for `knudsen info`.
pub fn describe_devices() -> Result<Vec<String>, String> {
    available()?;
    let n = CudaContext::device_count().map_err(|e| e.to_string())?;
    (0..n as usize)
        .map(|i| {
            let ctx = CudaContext::new(i).map_err(|e| e.to_string())?;
            let name = ctx.name().map_err(|e| e.to_string())?;
            let (major, minor) = ctx.compute_capability().map_err(|e| e.to_string())?;
            let mem = ctx.total_mem().map_err(|e| e.to_string())?;
            Ok(format!("{i}: {name}, compute capability {major}.{minor}, {} MiB", mem >> 20))
        })
        .collect()
}

/// The CUDA backend for `problem`: f64 slice kernels where `solver.precision` is "f64"
/// ([`wants_f64`]), else f32 (the fused sweep where the case allows it).
pub fn create(problem: Arc<Problem>, budget_bytes: Option<u64>) -> anyhow::Result<Box<dyn Backend>> {
    Ok(match wants_f64(&problem) {
        true => Box::new(CudaBackend::<f64>::new(problem, budget_bytes)?),
        false => Box::new(CudaBackend::<f32>::new(problem, budget_bytes)?),
    })
}

/// The slice sweep's rows in flight on this device for the plan's largest launch
/// (`KNUDSEN_SLICE_ROWS` if set; backend::slice_rows).
fn slice_rows(ctx: &CudaContext, sched: &GpuSchedule, f64: bool, ny: usize) -> anyhow::Result<u32> {
    if let Some(r) = super::slice_rows::from_env().map_err(|e| anyhow!(e))? {
        return Ok(r);
    }
    use cudarc::driver::sys::CUdevice_attribute as A;
    let attr = |a: A, what: &str| ctx.attribute(a).with_context(|| format!("querying the {what}")).map(|n| n as usize);
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count")?;
    let threads = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per multiprocessor")?;
    let blocks = attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks per multiprocessor")?;
    let largest = sched.waves.iter().flat_map(|w| &w.chunks).map(|c| c.velocities.len()).max().unwrap_or(0);
    let wave = super::slice_rows::cuda_wave(sms, blocks, threads, f64);
    Ok(super::slice_rows::choose(largest, wave, crate::backend::gpu_bytes_per_value(f64), ny))
}

/// `T`: the slice path's value type (real.rs).
pub struct CudaBackend<T: Real = f32> {
    problem: Arc<Problem>,
    name: String,
    stream: Arc<CudaStream>,
    schedule: GpuSchedule,
    sweep: CudaFunction,
    /// Threads per velocity of `sweep` (SLICE_ROWS; backend::slice_rows).
    slice_rows: u32,
    moment: CudaFunction,
    wall_load: CudaFunction,
    bufs: Buffers<T>,
    dens_at: usize,
    walls: CudaSlice<u32>,
    slices: Vec<CudaSlice<T>>,
    /// Per wave, per chunk: sweep_slice's velocity table and moment_slice's index buffer.
    tables: Vec<Vec<CudaSlice<T>>>,
    vidx: Vec<Vec<CudaSlice<u32>>>,
    slice_walls: Vec<usize>,
    /// Face, partner and exit layout (gpu_io).
    layout: gpu_io::DeviceTables,
    /// The fused on-chip sweep, where the case allows it (then no slices are allocated);
    /// else why not.
    fused: Result<fused::Fused, String>,
    /// The cell records from the fields on the device; None: from `SweepInput::eq` on the
    /// host (`KNUDSEN_CELL_RECORDS=host`).
    records: Option<records::CellRecords>,
    /// Read-back buffers in page-locked host memory, kept across iterations: a copy into
    /// fresh pageable memory pays its page faults and a staging copy each time.
    host: real::ReadBack<T>,
}

/// Threads per block: the WGSL workgroup sizes (layout.rs).
const SWEEP_BLOCK: u32 = super::wgpu::layout::SWEEP_WG;
const MOMENT_BLOCK: u32 = super::wgpu::layout::MOMENT_WG;
const WALL_BLOCK: u32 = 64;

impl<T: Real> CudaBackend<T> {
    /// Device [`super::device_slot`] modulo the devices present, the plan for `budget_bytes` of slices (default: half the device memory),
    /// the kernels compiled for this problem's sizes.
    fn new(problem: Arc<Problem>, budget_bytes: Option<u64>) -> anyhow::Result<Self> {
        // The program and the plan follow the case's precision ([`create`] picks T by it).
        anyhow::ensure!(T::F64 == wants_f64(&problem), "the CUDA backend's value type differs from solver.precision");
        available().map_err(|e| anyhow!(e))?;
        let ctx = plan::context()?;
        let p = &*problem;
        let plan::Planned { name, sched, fused_plan, records_on_device } = plan::plan(&ctx, p, budget_bytes)?;
        debug_assert!(!(T::F64 && fused_plan.is_ok()), "plan::plan refuses the fused sweep in f64");
        let t = gpu_io::device_tables(p)?;
        let mut sizes = kernels::Sizes::of(p, sched.chunk_stride, &t);
        if let Ok(f) = &fused_plan {
            sizes.tile = f.tile.map(|n| n as u32);
            sizes.fused_stride = f.stride as u32;
            let sm_shared = ctx
                .attribute(
                    cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                )
                .ok()
                .map(|b| b as u32);
            sizes.fused_min_blocks = crate::backend::fused::min_blocks(f.tile, f.second, sm_shared);
        }
        if fused_plan.is_err() {
            sizes.slice_rows = slice_rows(&ctx, &sched, T::F64, p.grid.dims()[1])?;
        }
        let module = kernels::compile(&ctx, &sizes).context("compiling the CUDA kernels with NVRTC")?;
        let load = |n: &str| module.load_function(n).with_context(|| format!("loading kernel {n}"));
        let (sweep, moment, wall_load) = (load("sweep_slice")?, load("moment_slice")?, load("wall_load_slice")?);
        let stream = ctx.default_stream();
        let records = match records_on_device {
            true => Some(records::CellRecords::new(p, &module, &stream)?),
            false => None,
        };

        let g = &p.grid;
        let nwalls = p.bodies.solids.walls.len();
        // One element at least: cudarc does not allocate empty buffers.
        let mut walls: Vec<u32> = t.walls.iter().flatten().copied().collect();
        walls.resize(walls.len().max(4), 0);
        let alloc = |n: usize| stream.alloc_zeros::<T>(n.max(1));
        // The fused sweep keeps no slices.
        let slice_len = sched.chunk_stride * sched.slice_cells * sched.slots;
        let slice_buffers = if fused_plan.is_ok() { 0 } else { sched.slice_buffers };
        let mut tables = Vec::new();
        let mut vidx = Vec::new();
        for wave in sched.waves.iter().filter(|_| fused_plan.is_err()) {
            let mut t = Vec::new();
            let mut v = Vec::new();
            for chunk in &wave.chunks {
                let table: Vec<T> =
                    velocity_table_as(p, &chunk.velocities, T::of, T::of_bits).into_iter().flatten().collect();
                t.push(stream.clone_htod(&table)?);
                v.push(stream.clone_htod(&moment_index_as(p, &chunk.velocities, T::weight_words))?);
            }
            tables.push(t);
            vidx.push(v);
        }
        let incident_len = t.incident_len;
        // gpu_io::device_tables's `bnd` in T: the inverse widths, unrounded in f64.
        let mut bnd: Vec<T> = (0..3).flat_map(|a| p.sweep_inv_widths(a)).map(T::of).collect();
        bnd.resize(t.bnd.len(), T::default());
        let backend = Self {
            bufs: Buffers {
                cells: alloc(g.cells() * 12).context("allocating the cell coefficients")?,
                bnd: stream.clone_htod(&bnd)?,
                moments: alloc(g.cells() * MSTRIDE).context("allocating the moment sums")?,
                incident: alloc(t.incident_len)?,
                wall_sums: alloc(nwalls * WALL_SUMS)?,
            },
            dens_at: t.dens_at,
            walls: stream.clone_htod(&walls)?,
            slices: (0..slice_buffers)
                .map(|_| alloc(slice_len))
                .collect::<Result<_, _>>()
                .context("allocating the slices; lower --memory-budget-mib")?,
            tables,
            vidx,
            slice_walls: t.slice_walls.clone(),
            layout: t,
            fused: match fused_plan {
                Ok(plan) => Ok(fused::Fused::new(p, plan, &module, &stream)?),
                Err(why) => Err(why),
            },
            records,
            host: [
                records::Pinned::readable(&stream, g.cells() * MSTRIDE)?,
                records::Pinned::readable(&stream, incident_len)?,
                records::Pinned::readable(&stream, nwalls * WALL_SUMS)?,
            ],
            problem,
            name,
            stream,
            schedule: sched,
            sweep,
            slice_rows: sizes.slice_rows,
            moment,
            wall_load,
        };
        log::info!(
            "cuda sweep kernel: {}{}{}",
            backend.sweep_kernel(),
            if backend.fused.is_err() {
                format!(", {} thread(s) per velocity (rows in flight)", sizes.slice_rows)
            } else {
                String::new()
            },
            if T::F64 { ", in f64" } else { "" }
        );
        Ok(backend)
    }

    /// Which sweep kernel runs, and why (for logs and `knudsen check`).
    pub fn sweep_kernel(&self) -> String {
        super::fused::describe_choice(self.fused.as_ref().map(|f| &f.plan).map_err(String::as_str))
    }

    pub fn schedule(&self) -> &GpuSchedule {
        &self.schedule
    }

    fn launch_all(&mut self) -> anyhow::Result<()> {
        let nz = self.problem.grid.nz();
        let stream = self.stream.clone();
        let grid = self.schedule.moment_grid;
        for (w, wave) in self.schedule.waves.iter().enumerate() {
            for step in 0..nz as u32 {
                for (c, chunk) in wave.chunks.iter().enumerate() {
                    let (count, split) = (chunk.velocities.len() as u32, chunk.split as u32);
                    let threads = chunk.velocities.len() * self.slice_rows as usize;
                    let (gx, gy) = grid_2d(threads.div_ceil(SWEEP_BLOCK as usize), 65535).expect("scheduled");
                    let cfg =
                        LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (SWEEP_BLOCK, 1, 1), shared_mem_bytes: 0 };
                    let mut l = stream.launch_builder(&self.sweep);
                    l.arg(&step)
                        .arg(&count)
                        .arg(&split)
                        .arg(&self.bufs.cells)
                        .arg(&self.bufs.bnd)
                        .arg(&self.tables[w][c]);
                    l.arg(&mut self.slices[c]);
                    // SAFETY: the argument list matches sweep_slice.cu's signature.
                    unsafe { l.launch(cfg) }.context("launching sweep_slice")?;
                }
                for (c, chunk) in wave.chunks.iter().enumerate() {
                    let (count, split) = (chunk.velocities.len() as u32, chunk.split as u32);
                    let cfg = LaunchConfig {
                        grid_dim: (grid.0, grid.1, 1),
                        block_dim: (MOMENT_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    let mut l = stream.launch_builder(&self.moment);
                    l.arg(&step).arg(&count).arg(&split).arg(&self.vidx[w][c]).arg(&self.slices[c]);
                    l.arg(&mut self.bufs.moments).arg(&mut self.bufs.incident);
                    // SAFETY: the argument list matches moment_slice.cu's signature.
                    unsafe { l.launch(cfg) }.context("launching moment_slice")?;
                    let faces = self.slice_walls[step as usize].max(self.slice_walls[nz - 1 - step as usize]);
                    if faces > 0 {
                        let (gx, gy) = grid_2d(faces, 65535).expect("wall faces per slice fit the grid");
                        let cfg =
                            LaunchConfig { grid_dim: (gx, gy, 2), block_dim: (WALL_BLOCK, 1, 1), shared_mem_bytes: 0 };
                        let mut l = stream.launch_builder(&self.wall_load);
                        l.arg(&step).arg(&count).arg(&split).arg(&self.tables[w][c]).arg(&self.slices[c]);
                        l.arg(&self.walls).arg(&mut self.bufs.wall_sums);
                        // SAFETY: the argument list matches wall_load_slice.cu's signature.
                        unsafe { l.launch(cfg) }.context("launching wall_load_slice")?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl<T: Real> Backend for CudaBackend<T> {
    fn kind(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> String {
        format!("{} (CUDA{})", self.name, if T::F64 { ", f64" } else { "" })
    }

    fn plan_summary(&self) -> PlanSummary {
        let mut s = gpu_io::plan_summary(&self.schedule);
        if let Ok(f) = &self.fused {
            s.in_flight = f.plan.waves.iter().map(|w| w.velocities.len()).max().unwrap_or(0);
            s.distribution_bytes = f.plan.bytes();
            s.traffic_per_point = Some(f.plan.traffic_per_point());
        }
        s
    }

    fn device_bytes(&self) -> Option<u64> {
        let fixed: usize = self.bufs.bytes()
            + self.slices.iter().chain(self.tables.iter().flatten()).map(|b| b.num_bytes()).sum::<usize>();
        let ints: usize = std::iter::once(&self.walls).chain(self.vidx.iter().flatten()).map(|b| b.num_bytes()).sum();
        let records = self.records.as_ref().map_or(0, |r| r.device_bytes());
        Some((fixed + ints + records + self.fused.as_ref().map_or(0, |f| f.device_bytes())) as u64)
    }

    fn copy_bandwidth(&mut self) -> anyhow::Result<f64> {
        bandwidth::copy_bandwidth(&self.stream)
    }

    fn derives_coefficients(&self) -> bool {
        self.records.is_some()
    }

    fn bytes_per_value(&self) -> usize {
        T::BYTES
    }

    fn residual_floor(&self) -> f64 {
        // f32 storage and sums, as on wgpu (wgpu/mod.rs gives the measurement); none in f64,
        // as on the CPU.
        if T::F64 {
            0.0
        } else {
            1e-5
        }
    }

    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()> {
        let t0 = std::time::Instant::now();
        let stream = self.stream.clone();
        // A caller that gives no fields gets the host's records.
        match &mut self.records {
            Some(r) if input.fields.len() == self.problem.grid.cells() => {
                r.launch(&stream, input.fields, &mut self.bufs.cells)?
            }
            _ => {
                let cells = T::host_records(&self.problem, input);
                stream.memcpy_htod(&cells, &mut self.bufs.cells)?;
            }
        }
        let dens = gpu_io::densities(input, T::of);
        let mut tail = self.bufs.bnd.slice_mut(self.dens_at..);
        stream.memcpy_htod(&dens, &mut tail)?;
        stream.memset_zeros(&mut self.bufs.moments)?;
        stream.memset_zeros(&mut self.bufs.incident)?;
        stream.memset_zeros(&mut self.bufs.wall_sums)?;
        let t_prep = t0.elapsed().as_secs_f64();
        match (&mut self.fused, T::as_f32(&mut self.bufs)) {
            (Ok(f), Some(b)) => {
                f.launch_all(&stream, &b.cells, &b.bnd, &mut b.moments, &mut b.incident, &mut b.wall_sums)?
            }
            _ => self.launch_all()?,
        }
        let [moments, incident, wall_sums] = &mut self.host;
        moments.read(&self.bufs.moments)?;
        incident.read(&self.bufs.incident)?;
        wall_sums.read(&self.bufs.wall_sums)?;
        stream.synchronize().context("waiting for the GPU")?;
        let t_gpu = t0.elapsed().as_secs_f64();
        gpu_io::unpack(out, moments.get()?, incident.get()?, wall_sums.get()?, &self.layout);
        let t = t0.elapsed().as_secs_f64();
        log::debug!(
            "cuda sweep: {t:.4} s (records and uploads {t_prep:.4} s, kernels and read-back {:.4} s, unpack {:.4} s)",
            t_gpu - t_prep,
            t - t_gpu
        );
        Ok(())
    }
}
