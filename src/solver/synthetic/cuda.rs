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

use super::flux::NV;
use super::krylov::{Outcome, Space};
use super::multigrid::{Multigrid, DAMPING, LINE_DAMPING, OVER_CORRECTION, SWEEPS};
use super::operator::{Operator, NONE};
use crate::backend::cuda::kernels;
use anyhow::Context;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::cell::RefCell;
use std::sync::Arc;

/// Threads per block: SYN_BLOCK in synthetic.cu.
const BLOCK: u32 = 256;
/// First-stage blocks of a dot product (syn_dot); fixed per length, so sums are reproducible.
const DOT_BLOCKS: usize = 1024;
/// Lines per warp of syn_lines (SYN_LINES_PER_WARP: five lanes per line).
const LINES_PER_WARP: usize = 6;
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
    fn load(m: &Arc<CudaModule>) -> anyhow::Result<Self> {
        let f = |n: &str| m.load_function(n).with_context(|| format!("loading kernel {n}"));
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
}

fn bytes_of_op(op: &Operator) -> u64 {
    op.diag.len() as u64 * (25 * 8 + 6 * 25 * 4 + 6 * 4)
}

impl CudaSynthetic {
    /// On the device the CUDA backend uses ([`crate::backend::device_slot`] modulo the
    /// devices), with kernels compiled by NVRTC; `restart`: GMRES's restart length, which
    /// bounds the vectors a solve holds.
    pub fn new(restart: usize) -> anyhow::Result<Self> {
        crate::backend::cuda::available().map_err(|e| anyhow::anyhow!(e))?;
        let count = CudaContext::device_count().context("counting CUDA devices")?.max(1) as usize;
        let ordinal = crate::backend::device_slot() % count;
        let ctx = CudaContext::new(ordinal).with_context(|| format!("CUDA device {ordinal}"))?;
        let device = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let module = kernels::compile_synthetic(&ctx).context("compiling shaders/cuda/synthetic.cu")?;
        let stream = ctx.default_stream();
        let partials = RefCell::new(stream.alloc_zeros::<f64>(DOT_BLOCKS)?);
        let total = RefCell::new(stream.alloc_zeros::<f64>(1)?);
        Ok(Self {
            k: Kernels::load(&module)?,
            stream,
            device,
            hierarchy: None,
            pool: RefCell::default(),
            partials,
            total,
            restart,
        })
    }

    /// Replace the device's hierarchy by `mg`'s. Fails, touching nothing, when the device
    /// lacks the memory for it and a full restart's vectors.
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
        let s = &self.stream;
        let mut levels = Vec::new();
        let mut work = Vec::new();
        for l in 0..mg.levels() {
            let v = mg.level(l);
            let cells = v.op.diag.len();
            let op = DevOp {
                cells,
                diag: s.clone_htod(bytemuck::cast_slice::<_, f64>(&v.op.diag))?,
                off: s.clone_htod(bytemuck::cast_slice::<_, f32>(&v.op.off))?,
                nbr: s.clone_htod(bytemuck::cast_slice::<_, u32>(&v.op.nbr))?,
            };
            let inv = if v.inv.is_empty() { None } else { Some(s.clone_htod(bytemuck::cast_slice::<_, f32>(v.inv))?) };
            let lines = v
                .lines
                .iter()
                .map(|ln| {
                    let (m, dinv) = ln.factors();
                    let (axis, dims) = (ln.axis() as u32, ln.dims().map(|d| d as u32));
                    if ln.is_factored() {
                        let m = s.clone_htod(bytemuck::cast_slice::<_, f32>(m))?;
                        let dinv = s.clone_htod(bytemuck::cast_slice::<_, f32>(dinv))?;
                        return Ok(DevLines { axis, dims, m, dinv });
                    }
                    let mut d = DevLines { axis, dims, m: s.alloc_zeros(cells * 25)?, dinv: s.alloc_zeros(cells * 25)? };
                    self.factor(&op, &mut d)?;
                    Ok(d)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let links = if v.children.is_empty() {
                None
            } else {
                let members: Vec<u32> =
                    v.children.iter().flat_map(|m| (0..8).map(move |i| m.get(i).copied().unwrap_or(NONE))).collect();
                Some((v.children.len(), s.clone_htod(&members)?, s.clone_htod(v.parent)?))
            };
            let vec = || s.alloc_zeros::<f64>(cells * NV);
            work.push(Work { b: vec()?, r2: vec()?, x: vec()?, tmp: vec()?, y: vec()?, xc: vec()? });
            levels.push(DevLevel { op, inv, lines, links });
        }
        let inverse = s.clone_htod(&mg.coarsest_inverse())?;
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
        let mut out = vec![[0.0; NV]; b.len()];
        self.stream.memcpy_dtoh(&x, bytemuck::cast_slice_mut::<_, f64>(&mut out))?;
        self.stream.synchronize()?;
        space.give(x);
        space.give(bd);
        log::debug!("gsis: right-hand side to the device {t_up:.3} s, correction back {:.3} s", t.elapsed().as_secs_f64());
        Ok((out, outcome))
    }
}

struct DeviceSpace<'a> {
    s: &'a CudaSynthetic,
    h: &'a Uploaded,
}

impl DeviceSpace<'_> {
    fn len(&self) -> usize {
        self.h.levels[0].op.cells * NV
    }

    /// out = A x (has_b false) or b - A x, on level `l`.
    fn row(
        &self,
        l: usize,
        b: Option<&CudaSlice<f64>>,
        x: &CudaSlice<f64>,
        out: &mut CudaSlice<f64>,
    ) -> anyhow::Result<()> {
        let op = &self.h.levels[l].op;
        let (cells, has_b) = (op.cells as u32, b.is_some() as u32);
        let mut a = self.s.stream.launch_builder(&self.s.k.row);
        a.arg(&cells).arg(&op.diag).arg(&op.off).arg(&op.nbr).arg(&has_b).arg(b.unwrap_or(x)).arg(x).arg(out);
        // SAFETY: the arguments match syn_row's signature; every buffer holds `cells` rows.
        unsafe { a.launch(launch_cfg(op.cells)) }.context("syn_row")?;
        Ok(())
    }

    /// Lines::relax on level `l`.
    fn relax(
        &self,
        l: usize,
        i: usize,
        b: &CudaSlice<f64>,
        x: Option<&CudaSlice<f64>>,
        y: &mut CudaSlice<f64>,
        out: &mut CudaSlice<f64>,
    ) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        let ln = &lv.lines[i];
        let (axis, [d0, d1, d2]) = (ln.axis, ln.dims);
        let lines = (d0 * d1 * d2 / ln.dims[axis as usize]) as usize;
        let (has_x, w) = (x.is_some() as u32, LINE_DAMPING);
        let mut a = self.s.stream.launch_builder(&self.s.k.lines);
        a.arg(&axis).arg(&d0).arg(&d1).arg(&d2).arg(&lv.op.off).arg(&lv.op.nbr).arg(&ln.m).arg(&ln.dinv);
        a.arg(b).arg(&has_x).arg(x.unwrap_or(b)).arg(&w).arg(y).arg(out);
        // SAFETY: the arguments match syn_lines's signature; 32 threads per LINES_PER_WARP
        // lines.
        unsafe { a.launch(launch_cfg(lines.div_ceil(LINES_PER_WARP) * 32)) }.context("syn_lines")?;
        Ok(())
    }

    fn jacobi(&self, l: usize, b: &CudaSlice<f64>, x: &CudaSlice<f64>, out: &mut CudaSlice<f64>) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        let (cells, w) = (lv.op.cells as u32, DAMPING);
        let inv = lv.inv.as_ref().context("a Jacobi level without inverses")?;
        let mut a = self.s.stream.launch_builder(&self.s.k.jacobi);
        a.arg(&cells).arg(&lv.op.off).arg(&lv.op.nbr).arg(inv).arg(b).arg(x).arg(&w).arg(out);
        // SAFETY: the arguments match syn_jacobi's signature.
        unsafe { a.launch(launch_cfg(lv.op.cells)) }.context("syn_jacobi")?;
        Ok(())
    }

    /// Pre- or post-smoothing of level `l` (Multigrid::cycle), the result in `w.x`.
    fn smooth(
        &self,
        l: usize,
        b: &CudaSlice<f64>,
        x: &mut CudaSlice<f64>,
        tmp: &mut CudaSlice<f64>,
        y: &mut CudaSlice<f64>,
        pre: bool,
    ) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        if lv.lines.is_empty() {
            let mut sweeps = SWEEPS;
            if pre {
                // The first sweep from x = 0 needs no product.
                let (cells, d) = (lv.op.cells as u32, DAMPING);
                let inv = lv.inv.as_ref().context("a Jacobi level without inverses")?;
                let mut a = self.s.stream.launch_builder(&self.s.k.jacobi_first);
                a.arg(&cells).arg(inv).arg(b).arg(&d).arg(&mut *x);
                // SAFETY: the arguments match syn_jacobi_first's signature.
                unsafe { a.launch(launch_cfg(lv.op.cells)) }.context("syn_jacobi_first")?;
                sweeps -= 1;
            }
            for _ in 0..sweeps {
                self.jacobi(l, b, x, tmp)?;
                std::mem::swap(x, tmp);
            }
        } else {
            let n = lv.lines.len();
            for j in 0..n {
                let i = if pre { j } else { n - 1 - j };
                self.relax(l, i, b, (!pre || j > 0).then_some(&*x), y, tmp)?;
                std::mem::swap(x, tmp);
            }
        }
        Ok(())
    }

    /// Multigrid::cycle on level `l`: the W-cycle from x = 0 for the right-hand side
    /// `work[0].b` (or `work[0].r2`), the result in `work[0].x`.
    fn cycle(&self, l: usize, work: &mut [Work], from_r2: bool) -> anyhow::Result<()> {
        let (head, tail) = work.split_first_mut().context("work for every level")?;
        let Work { b, r2, x, tmp, y, .. } = head;
        let b: &CudaSlice<f64> = if from_r2 { r2 } else { b };
        let lv = &self.h.levels[l];
        let stream = &self.s.stream;
        let Some((coarse, children, parent)) = &lv.links else {
            let n = (lv.op.cells * NV) as u32;
            let mut a = stream.launch_builder(&self.s.k.dense);
            a.arg(&n).arg(&self.h.inverse).arg(b).arg(&mut *x);
            // SAFETY: the arguments match syn_dense's signature; the inverse is n x n.
            unsafe { a.launch(launch_cfg(n as usize)) }.context("syn_dense")?;
            return Ok(());
        };
        self.smooth(l, b, x, tmp, y, true)?;
        // The restricted residual, the next level's right-hand side.
        self.row(l, Some(b), x, tmp)?;
        {
            let nc = *coarse as u32;
            let mut a = stream.launch_builder(&self.s.k.restrict);
            a.arg(&nc).arg(children).arg(&*tmp).arg(&mut tail[0].b);
            // SAFETY: the arguments match syn_restrict's signature.
            unsafe { a.launch(launch_cfg(*coarse)) }.context("syn_restrict")?;
        }
        self.cycle(l + 1, tail, false)?;
        if l + 2 < self.h.levels.len() {
            // W-cycle: a second coarse correction from the coarse residual.
            let c = &mut tail[0];
            self.row(l + 1, Some(&c.b), &c.x, &mut c.r2)?;
            std::mem::swap(&mut c.x, &mut c.xc);
            self.cycle(l + 1, tail, true)?;
            let c = &mut tail[0];
            let len = (c.x.len()) as u32;
            let one = 1.0f64;
            let mut a = stream.launch_builder(&self.s.k.axpy);
            a.arg(&len).arg(&one).arg(&c.x).arg(&mut c.xc);
            // SAFETY: the arguments match syn_axpy's signature.
            unsafe { a.launch(launch_cfg(len as usize)) }.context("syn_axpy")?;
        } else {
            let c = &mut tail[0];
            std::mem::swap(&mut c.x, &mut c.xc);
        }
        {
            let (cells, oc) = (lv.op.cells as u32, OVER_CORRECTION);
            let mut a = stream.launch_builder(&self.s.k.prolong);
            a.arg(&cells).arg(parent).arg(&oc).arg(&tail[0].xc).arg(&mut *x);
            // SAFETY: the arguments match syn_prolong's signature.
            unsafe { a.launch(launch_cfg(lv.op.cells)) }.context("syn_prolong")?;
        }
        self.smooth(l, b, x, tmp, y, false)
    }
}

impl Space for DeviceSpace<'_> {
    type V = CudaSlice<f64>;

    fn take(&self) -> anyhow::Result<CudaSlice<f64>> {
        match self.s.pool.borrow_mut().pop() {
            Some(v) => Ok(v),
            // SAFETY: a taken vector's contents are unspecified; every user overwrites them.
            None => Ok(unsafe { self.s.stream.alloc::<f64>(self.len()) }?),
        }
    }

    fn give(&self, v: CudaSlice<f64>) {
        self.s.pool.borrow_mut().push(v);
    }

    fn dot(&self, a: &CudaSlice<f64>, b: &CudaSlice<f64>) -> anyhow::Result<f64> {
        let len = self.len();
        let parts = len.div_ceil(BLOCK as usize).clamp(1, DOT_BLOCKS);
        let (n, p) = (len as u32, parts as u32);
        let (mut partials, mut total) = (self.s.partials.borrow_mut(), self.s.total.borrow_mut());
        let stream = &self.s.stream;
        let mut l = stream.launch_builder(&self.s.k.dot);
        l.arg(&n).arg(a).arg(b).arg(&mut *partials);
        let cfg = LaunchConfig { grid_dim: (p, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the arguments match syn_dot's signature; `parts` partials fit the buffer.
        unsafe { l.launch(cfg) }.context("syn_dot")?;
        let mut l = stream.launch_builder(&self.s.k.dot_total);
        l.arg(&p).arg(&*partials).arg(&mut *total);
        // SAFETY: the arguments match syn_dot_total's signature.
        unsafe { l.launch(launch_cfg(BLOCK as usize)) }.context("syn_dot_total")?;
        Ok(stream.clone_dtoh(&*total)?[0])
    }

    fn axpy(&self, y: &mut CudaSlice<f64>, s: f64, x: &CudaSlice<f64>) -> anyhow::Result<()> {
        let len = self.len() as u32;
        let mut l = self.s.stream.launch_builder(&self.s.k.axpy);
        l.arg(&len).arg(&s).arg(x).arg(y);
        // SAFETY: the arguments match syn_axpy's signature.
        unsafe { l.launch(launch_cfg(len as usize)) }.context("syn_axpy")?;
        Ok(())
    }

    fn scale(&self, y: &mut CudaSlice<f64>, s: f64) -> anyhow::Result<()> {
        let len = self.len() as u32;
        let mut l = self.s.stream.launch_builder(&self.s.k.scale);
        l.arg(&len).arg(&s).arg(y);
        // SAFETY: the arguments match syn_scale's signature.
        unsafe { l.launch(launch_cfg(len as usize)) }.context("syn_scale")?;
        Ok(())
    }

    fn zero(&self, y: &mut CudaSlice<f64>) -> anyhow::Result<()> {
        Ok(self.s.stream.memset_zeros(y)?)
    }

    fn copy(&self, dst: &mut CudaSlice<f64>, src: &CudaSlice<f64>) -> anyhow::Result<()> {
        Ok(self.s.stream.memcpy_dtod(src, dst)?)
    }

    fn apply(&self, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) -> anyhow::Result<()> {
        self.row(0, None, x, y)
    }

    fn residual(&self, b: &CudaSlice<f64>, x: &CudaSlice<f64>, r: &mut CudaSlice<f64>) -> anyhow::Result<()> {
        self.row(0, Some(b), x, r)
    }

    fn precondition(&self, v: &CudaSlice<f64>, z: &mut CudaSlice<f64>) -> anyhow::Result<()> {
        let mut work = self.h.work.borrow_mut();
        self.s.stream.memcpy_dtod(v, &mut work[0].b)?;
        self.cycle(0, &mut work, false)?;
        std::mem::swap(z, &mut work[0].x);
        Ok(())
    }

    fn finish(&self) -> anyhow::Result<()> {
        Ok(self.s.stream.synchronize()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Problem;
    use crate::solver::synthetic::flux::Base;
    use crate::solver::synthetic::krylov::{gmres, Pool, Vector};
    use crate::solver::synthetic::multigrid::Smoother;

    /// Whether to run: on a machine without CUDA (CI has none) this says so and returns
    /// false, unless KNUDSEN_REQUIRE_CUDA=1 (tests/device/gsis_cuda.sh sets it), which makes
    /// a missing device a failure.
    fn cuda_here() -> bool {
        match crate::backend::cuda::available() {
            Ok(()) => true,
            Err(why) if std::env::var("KNUDSEN_REQUIRE_CUDA").is_ok_and(|v| v == "1") => {
                panic!("KNUDSEN_REQUIRE_CUDA=1 but {why}")
            }
            Err(why) => {
                eprintln!("NOTE: device synthetic solve not tested: {why}");
                false
            }
        }
    }

    fn rel(a: &[[f64; NV]], b: &[[f64; NV]]) -> f64 {
        let d: f64 = a.iter().zip(b).flat_map(|(p, q)| (0..NV).map(move |k| (p[k] - q[k]).powi(2))).sum();
        let n: f64 = b.iter().flatten().map(|x| x * x).sum();
        (d / n).sqrt()
    }

    /// The paper cube's geometry at small size (stretched cells, a body, free-stream faces:
    /// line smoothing) and a closed box of cubic cells (Jacobi smoothing).
    fn cases() -> Vec<(Problem, Smoother)> {
        let cube = crate::config::Config::from_json(include_str!("../../../configs/cube-quick.json")).unwrap();
        let boxed = crate::config::walled_box([9, 7, 6], 10);
        vec![(Problem::new(&cube), Smoother::Lines), (Problem::new(&boxed), Smoother::Jacobi)]
    }

    #[test]
    fn the_device_cycle_and_solve_match_the_hosts() {
        if !cuda_here() {
            return;
        }
        for (p, smoother) in cases() {
            let n = p.grid.cells();
            let active: Vec<bool> = (0..n).map(|c| !p.bodies.solids.is_solid(c)).collect();
            let base: Vec<Base> = (0..n)
                .map(|c| Base {
                    rho: 1.0 + 0.1 * (c % 7) as f64 / 7.0,
                    u: [0.3, 0.05 * (c % 3) as f64, 0.0],
                    t: 1.0 + 0.02 * (c % 5) as f64,
                })
                .collect();
            let mg = Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, true).unwrap();
            // The device factors the lines of its own copy; without contracted multiply-adds
            // (kernels::compile_synthetic_ptx) it rounds as the host does: the same bits.
            let unfactored =
                Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, false).unwrap();
            let b: Vector =
                (0..n)
                    .map(|c| {
                        if active[c] {
                            std::array::from_fn(|k| ((c * 5 + 3 * k) % 11) as f64 - 5.0)
                        } else {
                            [0.0; NV]
                        }
                    })
                    .collect();
            let mut dev = CudaSynthetic::new(30).unwrap();
            dev.upload(&unfactored).unwrap();
            for l in 0..mg.levels() {
                for (host, d) in mg.level(l).lines.iter().zip(&dev.hierarchy.as_ref().unwrap().levels[l].lines) {
                    let (m, dinv) = host.factors();
                    assert_eq!(bytemuck::cast_slice::<_, f32>(m), &dev.stream.clone_dtoh(&d.m).unwrap()[..], "M, level {l}");
                    let got = dev.stream.clone_dtoh(&d.dinv).unwrap();
                    assert_eq!(bytemuck::cast_slice::<_, f32>(dinv), &got[..], "Dp^-1, level {l}");
                }
            }
            // One W-cycle: the same arithmetic per cell in the same order, rounded alike; the
            // one difference is the coarsest solve (an explicit inverse's product instead of
            // LU substitution: rounding of 1e-16 per operation, grown through a few dozen
            // smoothing steps): 1e-12 relative.
            let mut host = vec![[0.0; NV]; n];
            mg.apply(&b, &mut host);
            let h = dev.hierarchy.as_ref().unwrap();
            let space = DeviceSpace { s: &dev, h };
            let bd = dev.stream.clone_htod(bytemuck::cast_slice::<_, f64>(&b)).unwrap();
            let mut z = space.take().unwrap();
            space.precondition(&bd, &mut z).unwrap();
            let zd: Vec<[f64; NV]> =
                dev.stream.clone_dtoh(&z).unwrap().chunks_exact(NV).map(|c| std::array::from_fn(|k| c[k])).collect();
            assert!(rel(&zd, &host) < 1e-12, "{smoother:?}: one cycle differs by {:e}", rel(&zd, &host));
            // Dot products: a different grouping of the same terms, 1e-15 relative.
            let dh: f64 = b.iter().flatten().zip(host.iter().flatten()).map(|(x, y)| x * y).sum();
            let dd = space.dot(&bd, &z).unwrap();
            assert!((dd - dh).abs() <= 1e-13 * dh.abs(), "dot {dd} vs {dh}");
            // Whole solves to 1e-9: the same number of steps (give or take the one a
            // rounding-level difference can move across the tolerance), and solutions within
            // the tolerance times the operator's conditioning (1e-6).
            let pool = Pool::default();
            let (xh, oh) =
                gmres(mg.operator(), &b, 1e-9, 30, 2000, &|v: &[[f64; NV]], o: &mut Vector| mg.apply(v, o), &pool)
                    .unwrap();
            let (xd, od) = dev.solve(&b, 1e-9, 2000).unwrap();
            assert!(od.relative_residual <= 1e-9, "{od:?}");
            assert!(oh.iterations.abs_diff(od.iterations) <= 1, "host {oh:?}, device {od:?}");
            assert!(rel(&xd, &xh) < 1e-6, "{smoother:?}: solutions differ by {:e}", rel(&xd, &xh));
            // The true residual of the device's answer, from the host's operator.
            let mut ax = vec![[0.0; NV]; n];
            mg.operator().apply(&xd, &mut ax);
            let r: Vec<[f64; NV]> = ax.iter().zip(&b).map(|(a, q)| std::array::from_fn(|k| q[k] - a[k])).collect();
            let norm = |v: &[[f64; NV]]| v.iter().flatten().map(|x| x * x).sum::<f64>().sqrt();
            assert!(norm(&r) <= 1.01e-9 * norm(&b), "true residual {:e}", norm(&r) / norm(&b));
            space.give(z);
        }
    }
}
