//! The device twin of the W-cycle ([`Multigrid::apply`](super::super::multigrid::Multigrid))
//! and GMRES's vector space on device buffers: each method launches the kernel named after
//! the host function it mirrors (`shaders/cuda/synthetic.cu`, `synthetic_lines.cu`).

use super::{launch_cfg, CudaSynthetic, Uploaded, Work, BLOCK, DOT_BLOCKS, LINES_PER_WARP, ROW_CELLS_PER_WARP};
use crate::solver::synthetic::flux::NV;
use crate::solver::synthetic::krylov::Space;
use crate::solver::synthetic::multigrid::{DAMPING, LINE_DAMPING, OVER_CORRECTION, SWEEPS};
use anyhow::Context;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

pub(super) struct DeviceSpace<'a> {
    pub(super) s: &'a CudaSynthetic,
    pub(super) h: &'a Uploaded,
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
        // SAFETY: the arguments match syn_row's signature; every buffer holds `cells` rows;
        // 32 threads per ROW_CELLS_PER_WARP cells.
        unsafe { a.launch(launch_cfg(op.cells.div_ceil(ROW_CELLS_PER_WARP) * 32)) }.context("syn_row")?;
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
        // SAFETY: the arguments match syn_jacobi's signature; 32 threads per
        // ROW_CELLS_PER_WARP cells.
        unsafe { a.launch(launch_cfg(lv.op.cells.div_ceil(ROW_CELLS_PER_WARP) * 32)) }.context("syn_jacobi")?;
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
