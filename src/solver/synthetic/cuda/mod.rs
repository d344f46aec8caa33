//! The synthetic solve on a CUDA device (feature `cuda`): the same GMRES
//! ([`super::krylov::gmres_in`]) and the same multigrid W-cycle as the host's
//! ([`Multigrid::apply`]), on device buffers, with the kernels of `shaders/cuda/synthetic.cu`
//! (each the twin of a host function, named beside it).
//!
//! The host still assembles the operator and builds the hierarchy (coarse operators, line
//! factors, the coarsest inverse); each build is uploaded once and then serves every solve
//! until the next. Why: a W-cycle reads about 1.4 KB per cell and level visit, so on the
//! paper cube (6.3 million cells) one GMRES step moves ~60 GB, about 1 s at the host's
//! measured 60-90 GB/s and ~20 ms at an H100's 3 TB/s (`docs/performance.md`).
//!
//! Vectors stay in f64 and blocks in f32, as on the host; the sums are grouped differently
//! (dot products by blocks of threads), so the device solve takes about the same steps to the
//! same tolerance, not the same bits. Any solve to the tolerance leaves the fixed point as it
//! is (`super`).

mod cycle;
mod staging;
#[cfg(test)]
mod tests;

use super::flux::NV;
use super::job::Job;
use super::krylov::{Outcome, Space};
use super::multigrid::Multigrid;
use super::operator::{Operator, NONE};
use crate::backend::cuda::{kernels, Pinned};
use anyhow::Context;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cycle::DeviceSpace;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::Arc;

/// Threads per block: SYN_BLOCK in synthetic.cu.
const BLOCK: u32 = 256;
/// First-stage blocks of a dot product (syn_dot); fixed per length, so sums are reproducible.
const DOT_BLOCKS: usize = 1024;
/// Lines per warp of syn_lines (SYN_LINES_PER_WARP: five lanes per line).
const LINES_PER_WARP: usize = 6;
/// Cells per warp of syn_row and syn_jacobi (SYN_ROW_CELLS_PER_WARP: five lanes per cell).
const ROW_CELLS_PER_WARP: usize = 6;
/// Device memory left free beyond the solve's own (the driver, the sweep's transients).
const MARGIN: u64 = 512 << 20;

fn launch_cfg(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

struct Kernels {
    row: CudaFunction,
    restrict: CudaFunction,
    prolong: CudaFunction,
    jacobi_first: CudaFunction,
    jacobi: CudaFunction,
    lines: CudaFunction,
    dense: CudaFunction,
    axpy: CudaFunction,
    scale: CudaFunction,
    dot: CudaFunction,
    dot_total: CudaFunction,
    line_factor: CudaFunction,
}

impl Kernels {
    /// Each kernel from the module of the part that defines it (kernels::SYNTHETIC, in
    /// order).
    fn load(modules: &[Arc<CudaModule>]) -> anyhow::Result<Self> {
        let f = |n: &str| {
            let part = kernels::SYNTHETIC.iter().position(|p| p.kernels.contains(&n));
            let m = part.and_then(|i| modules.get(i)).with_context(|| format!("no module defines kernel {n}"))?;
            m.load_function(n).with_context(|| format!("loading kernel {n}"))
        };
        Ok(Self {
            row: f("syn_row")?,
            restrict: f("syn_restrict")?,
            prolong: f("syn_prolong")?,
            jacobi_first: f("syn_jacobi_first")?,
            jacobi: f("syn_jacobi")?,
            lines: f("syn_lines")?,
            dense: f("syn_dense")?,
            axpy: f("syn_axpy")?,
            scale: f("syn_scale")?,
            dot: f("syn_dot")?,
            dot_total: f("syn_dot_total")?,
            line_factor: f("syn_line_factor")?,
        })
    }
}

struct DevOp {
    cells: usize,
    diag: CudaSlice<f64>,
    off: CudaSlice<f32>,
    nbr: CudaSlice<u32>,
}

struct DevLines {
    axis: u32,
    dims: [u32; 3],
    m: CudaSlice<f32>,
    dinv: CudaSlice<f32>,
}

struct DevLevel {
    op: DevOp,
    /// Jacobi's inverted diagonals (None with lines and on the coarsest).
    inv: Option<CudaSlice<f32>>,
    lines: Vec<DevLines>,
    /// Members of each next-level cell (8 per cell, NONE-padded) and each cell's aggregate;
    /// None on the coarsest.
    links: Option<(usize, CudaSlice<u32>, CudaSlice<u32>)>,
}

/// Work vectors of one level (Multigrid::cycle's `x`, `tmp`, the line sweep's `y`; the
/// restricted residual `b`, the W-cycle's second right-hand side `r2` and first correction
/// `xc`, which belong to this level as the one below sees them).
struct Work {
    b: CudaSlice<f64>,
    r2: CudaSlice<f64>,
    x: CudaSlice<f64>,
    tmp: CudaSlice<f64>,
    y: CudaSlice<f64>,
    xc: CudaSlice<f64>,
}

/// A hierarchy on the device.
struct Uploaded {
    levels: Vec<DevLevel>,
    inverse: CudaSlice<f64>,
    work: RefCell<Vec<Work>>,
}

pub struct CudaSynthetic {
    stream: Arc<CudaStream>,
    k: Kernels,
    pub device: String,
    hierarchy: Option<Uploaded>,
    /// GMRES's vectors, kept from one solve to the next (fine-level length).
    pool: RefCell<Vec<CudaSlice<f64>>>,
    partials: RefCell<CudaSlice<f64>>,
    total: RefCell<CudaSlice<f64>>,
    restart: usize,
    /// The correction's way back, kept from one solve to the next: from page-locked memory
    /// the 10 MB of a 64^3-cell correction came back in a fraction of the 8 ms that the
    /// pageable copy into a fresh vector took on an H100's host.
    back: RefCell<Option<Pinned<f64>>>,
    /// Page-locked buffers for the hierarchy's uploads (allocated at the first).
    staging: Option<staging::Staging>,
}

fn bytes_of_op(op: &Operator) -> u64 {
    op.diag.len() as u64 * (25 * 8 + 6 * 25 * 4 + 6 * 4)
}

/// The device the CUDA backend uses: [`crate::backend::device_slot`] modulo the devices.
fn ordinal() -> anyhow::Result<usize> {
    crate::backend::cuda::available().map_err(|e| anyhow::anyhow!(e))?;
    let count = CudaContext::device_count().context("counting CUDA devices")?.max(1) as usize;
    Ok(crate::backend::device_slot() % count)
}

/// NVRTC's compile of the synthetic kernels (`kernels::SYNTHETIC`, three programs side by
/// side), started on a thread of its own when the solver is set up, so that it runs beside
/// the first sweep instead of after it (`super::job`: joined when dropped). The job's
/// result: a module per part, and whether they are machine code (CUBIN) rather than PTX.
pub struct PtxJob(Job<(Vec<cudarc::nvrtc::Ptx>, bool)>);

/// A job started before the backend was built ([`PtxJob::start_early`]), until the solver
/// takes it.
static EARLY: std::sync::Mutex<Option<PtxJob>> = std::sync::Mutex::new(None);

impl PtxJob {
    /// The job the solver's synthetic solve waits for: the early one if it was started.
    pub fn start() -> Self {
        EARLY.lock().ok().and_then(|mut e| e.take()).unwrap_or_else(Self::spawn)
    }

    /// Start the compile before the CUDA backend is built: the backend's own NVRTC compile
    /// and, on a machine's first run, NVRTC's and the driver's cold start take seconds, in
    /// which this one finishes, where from the solver's set-up it outlasted the first sweep
    /// by 0.48 s on a fresh H100 machine. [`PtxJob::discard_early`] ends a job nobody took.
    pub fn start_early() {
        if let Ok(mut e) = EARLY.lock() {
            *e = Some(Self::spawn());
        }
    }

    /// Wait for and drop an early job the solver did not take (another backend, or no
    /// synthetic solve), so that the process never exits with NVRTC mid-call.
    pub fn discard_early() {
        let job = EARLY.lock().ok().and_then(|mut e| e.take());
        drop(job);
    }

    fn spawn() -> Self {
        Self(Job::spawn("nvrtc-synthetic", || {
            let t0 = std::time::Instant::now();
            let out = kernels::compile_synthetic_for(ordinal()?);
            log::debug!(
                "gsis: the synthetic kernels compiled by NVRTC (or read from the kernel cache) in {:.3} s",
                t0.elapsed().as_secs_f64()
            );
            out
        }))
    }

    fn wait(self) -> anyhow::Result<(Vec<cudarc::nvrtc::Ptx>, bool)> {
        self.0.wait()
    }
}

impl CudaSynthetic {
    /// On the device the CUDA backend uses, with the kernels `ptx` compiles (NVRTC);
    /// `restart`: GMRES's restart length, which bounds the vectors a solve holds.
    pub fn new(restart: usize, ptx: PtxJob) -> anyhow::Result<Self> {
        let ordinal = ordinal()?;
        let ctx = CudaContext::new(ordinal).with_context(|| format!("CUDA device {ordinal}"))?;
        let device = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let (ptx, machine_code) = ptx.wait().context("compiling the synthetic kernels (shaders/cuda/synthetic*.cu)")?;
        let load = |ptx: Vec<cudarc::nvrtc::Ptx>| -> Result<Vec<_>, _> {
            ptx.into_iter().map(|p| ctx.load_module(p)).collect()
        };
        let modules = match load(ptx) {
            Ok(m) => m,
            // A driver older than NVRTC may refuse its machine code; PTX it JIT-compiles.
            Err(e) if machine_code => {
                log::debug!("gsis: the driver refused the synthetic kernels' CUBIN ({e}); loading PTX");
                load(kernels::compile_synthetic_ptx_for(ordinal)?).context("loading the synthetic kernels")?
            }
            Err(e) => return Err(e).context("loading the synthetic kernels"),
        };
        let stream = ctx.default_stream();
        let partials = RefCell::new(stream.alloc_zeros::<f64>(DOT_BLOCKS)?);
        let total = RefCell::new(stream.alloc_zeros::<f64>(1)?);
        Ok(Self {
            k: Kernels::load(&modules)?,
            stream,
            device,
            hierarchy: None,
            pool: RefCell::default(),
            partials,
            total,
            restart,
            back: RefCell::default(),
            staging: None,
        })
    }

    /// Replace the device's hierarchy by `mg`'s. The old one is freed first, so that its
    /// memory counts as free; when the device lacks the memory for the new one and a full
    /// restart's vectors this fails with none on the device (the caller then solves on the
    /// host).
    pub fn upload(&mut self, mg: &Multigrid) -> anyhow::Result<()> {
        self.hierarchy = None;
        self.pool.borrow_mut().clear();
        // Freed buffers return to the device once the stream has passed their last use.
        self.stream.synchronize()?;
        let fine = mg.operator().diag.len();
        let mut need = (2 * self.restart as u64 + 4) * fine as u64 * 40;
        for l in 0..mg.levels() {
            let v = mg.level(l);
            need += bytes_of_op(v.op) + v.op.diag.len() as u64 * (6 * 40 + 100 * (v.inv.len().min(1) as u64) + 36);
            need += v.lines.len() as u64 * v.op.diag.len() as u64 * 200;
        }
        let (free, _) = self.stream.context().mem_get_info().context("querying free device memory")?;
        anyhow::ensure!(
            need + MARGIN <= free as u64,
            "{}: the synthetic solve needs {} MiB of device memory, {} MiB are free",
            self.device,
            need >> 20,
            free >> 20
        );
        let mut st = self.staging.take().unwrap_or_default();
        let s = &self.stream;
        let mut levels = Vec::new();
        let mut work = Vec::new();
        for l in 0..mg.levels() {
            let v = mg.level(l);
            let cells = v.op.diag.len();
            let op = DevOp {
                cells,
                diag: st.put(s, bytemuck::cast_slice::<_, f64>(&v.op.diag))?,
                off: st.put(s, bytemuck::cast_slice::<_, f32>(&v.op.off))?,
                nbr: st.put(s, bytemuck::cast_slice::<_, u32>(&v.op.nbr))?,
            };
            let inv = if v.inv.is_empty() { None } else { Some(st.put(s, bytemuck::cast_slice::<_, f32>(v.inv))?) };
            let lines = v
                .lines
                .iter()
                .map(|ln| {
                    let (m, dinv) = ln.factors();
                    let (axis, dims) = (ln.axis() as u32, ln.dims().map(|d| d as u32));
                    if ln.is_factored() {
                        let m = st.put(s, bytemuck::cast_slice::<_, f32>(m))?;
                        let dinv = st.put(s, bytemuck::cast_slice::<_, f32>(dinv))?;
                        return Ok(DevLines { axis, dims, m, dinv });
                    }
                    let mut d =
                        DevLines { axis, dims, m: s.alloc_zeros(cells * 25)?, dinv: s.alloc_zeros(cells * 25)? };
                    self.factor(&op, &mut d)?;
                    Ok(d)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let links = if v.children.is_empty() {
                None
            } else {
                let members: Vec<u32> =
                    v.children.iter().flat_map(|m| (0..8).map(move |i| m.get(i).copied().unwrap_or(NONE))).collect();
                Some((v.children.len(), st.put(s, &members)?, st.put(s, v.parent)?))
            };
            let vec = || s.alloc_zeros::<f64>(cells * NV);
            work.push(Work { b: vec()?, r2: vec()?, x: vec()?, tmp: vec()?, y: vec()?, xc: vec()? });
            levels.push(DevLevel { op, inv, lines, links });
        }
        let inverse = st.put(s, &mg.coarsest_inverse())?;
        self.staging = Some(st);
        self.hierarchy = Some(Uploaded { levels, inverse, work: RefCell::new(work) });
        Ok(())
    }

    /// Lines::factor on the device (syn_line_factor): the factors of `op`'s lines.
    fn factor(&self, op: &DevOp, ln: &mut DevLines) -> anyhow::Result<()> {
        let [d0, d1, d2] = ln.dims;
        let lines = (d0 * d1 * d2 / ln.dims[ln.axis as usize]) as usize;
        let mut a = self.stream.launch_builder(&self.k.line_factor);
        a.arg(&ln.axis).arg(&d0).arg(&d1).arg(&d2).arg(&op.diag).arg(&op.off).arg(&op.nbr);
        a.arg(&mut ln.m).arg(&mut ln.dinv);
        // SAFETY: the arguments match syn_line_factor's signature; every buffer holds the
        // level's cells.
        unsafe { a.launch(launch_cfg(lines)) }.context("syn_line_factor")?;
        Ok(())
    }

    /// Solve A x = b with the uploaded hierarchy (see [`super::krylov::gmres`]).
    pub fn solve(
        &self,
        b: &[[f64; NV]],
        rtol: f64,
        max_iterations: usize,
    ) -> anyhow::Result<(Vec<[f64; NV]>, Outcome)> {
        let h = self.hierarchy.as_ref().context("no hierarchy on the device")?;
        let space = DeviceSpace { s: self, h };
        let t = std::time::Instant::now();
        let mut bd = space.take()?;
        self.stream.memcpy_htod(bytemuck::cast_slice::<_, f64>(b), &mut bd)?;
        let t_up = t.elapsed().as_secs_f64();
        let (x, outcome) = super::krylov::gmres_in(&space, &bd, rtol, self.restart, max_iterations)?;
        let t = std::time::Instant::now();
        let mut back = self.back.borrow_mut();
        if back.as_ref().is_none_or(|p| p.len() != b.len() * NV) {
            *back = Some(Pinned::readable(&self.stream, b.len() * NV)?);
        }
        let back = back.as_mut().expect("allocated above");
        back.read(&x)?;
        // The copy into the caller's vector in parallel: its page faults are spread over the cores.
        let out: Vec<[f64; NV]> = back.get()?.par_chunks_exact(NV).map(|c| std::array::from_fn(|k| c[k])).collect();
        space.give(x);
        space.give(bd);
        log::debug!(
            "gsis: right-hand side to the device {t_up:.3} s, correction back {:.3} s",
            t.elapsed().as_secs_f64()
        );
        Ok((out, outcome))
    }
}
