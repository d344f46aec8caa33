//! The device twin of the W-cycle ([`Multigrid::apply`](super::super::multigrid::Multigrid))
//! and GMRES's vector space on wgpu buffers: each method launches the stage named after the
//! host function it mirrors (`shaders/synthetic_*.wgsl`), in the CUDA twin's order
//! (`super::super::cuda`).

use super::kernels::{SynParams, JACOBI_WG, LINES_PER_WG, WG};
use super::{Uploaded, WgpuSynthetic, Work, DOT_GROUPS};
use crate::solver::synthetic::flux::NV;
use crate::solver::synthetic::krylov::Space;
use crate::solver::synthetic::multigrid::{DAMPING, LINE_DAMPING, OVER_CORRECTION, SWEEPS};
use anyhow::Context;

pub(super) struct DeviceSpace<'a> {
    pub(super) s: &'a WgpuSynthetic,
    pub(super) h: &'a Uploaded,
}

fn groups(threads: usize) -> usize {
    threads.div_ceil(WG as usize)
}

fn n(len: usize, w: f64) -> SynParams {
    SynParams { n: len as u32, w: w as f32, ..Default::default() }
}

impl DeviceSpace<'_> {
    fn len(&self) -> usize {
        self.h.levels[0].cells * NV
    }

    /// out = A x (b None) or b - A x, on level `l`.
    fn row(&self, l: usize, b: Option<&wgpu::Buffer>, x: &wgpu::Buffer, out: &wgpu::Buffer) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        let p = SynParams { n: lv.cells as u32, flag: b.is_some() as u32, ..Default::default() };
        // Five invocations per cell (synthetic_row.wgsl).
        self.s.launch(&self.s.k.row, &lv.group, [b, Some(x), Some(out), None], p, groups(lv.cells * NV))
    }

    /// Lines::relax on level `l` along its `i`-th line axis.
    fn relax(
        &self,
        l: usize,
        i: usize,
        b: &wgpu::Buffer,
        x: Option<&wgpu::Buffer>,
        y: &wgpu::Buffer,
        out: &wgpu::Buffer,
    ) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        let ln = &lv.lines[i];
        let [d0, d1, d2] = lv.dims;
        let lines = (d0 * d1 * d2 / lv.dims[ln.axis as usize]) as usize;
        let p = SynParams {
            flag: x.is_some() as u32,
            axis: ln.axis,
            d0,
            d1,
            d2,
            w: LINE_DAMPING as f32,
            ..Default::default()
        };
        self.s.launch(&self.s.k.lines, &ln.group, [Some(b), x, Some(out), Some(y)], p, lines.div_ceil(LINES_PER_WG))
    }

    /// Pre- or post-smoothing of level `l` (Multigrid::cycle), the result in `x`.
    fn smooth(
        &self,
        l: usize,
        b: &wgpu::Buffer,
        x: &mut wgpu::Buffer,
        tmp: &mut wgpu::Buffer,
        y: &wgpu::Buffer,
        pre: bool,
    ) -> anyhow::Result<()> {
        let lv = &self.h.levels[l];
        if lv.lines.is_empty() {
            anyhow::ensure!(lv.jacobi, "a level with neither lines nor Jacobi inverses");
            let mut sweeps = SWEEPS;
            let k = &self.s.k;
            if pre {
                // The first sweep from x = 0 needs no product.
                let g = groups(lv.cells * NV);
                self.s.launch(&k.jacobi_first, &lv.group, [Some(b), None, Some(x), None], n(lv.cells, DAMPING), g)?;
                sweeps -= 1;
            }
            for _ in 0..sweeps {
                let g = (lv.cells * NV).div_ceil(JACOBI_WG as usize);
                self.s.launch(&k.jacobi, &lv.group, [Some(b), Some(x), Some(tmp), None], n(lv.cells, DAMPING), g)?;
                std::mem::swap(x, tmp);
            }
        } else {
            let count = lv.lines.len();
            for j in 0..count {
                let i = if pre { j } else { count - 1 - j };
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
        let b: &wgpu::Buffer = if from_r2 { r2 } else { b };
        let lv = &self.h.levels[l];
        let k = &self.s.k;
        let Some(coarse) = lv.coarse else {
            let order = lv.cells * NV;
            return self.s.launch(&k.dense, &lv.group, [Some(b), None, Some(x), None], n(order, 0.0), groups(order));
        };
        self.smooth(l, b, x, tmp, y, true)?;
        // The restricted residual, the next level's right-hand side.
        self.row(l, Some(b), x, tmp)?;
        self.s.launch(
            &k.restrict,
            &lv.group,
            [None, Some(tmp), Some(&tail[0].b), None],
            n(coarse, 0.0),
            groups(coarse),
        )?;
        self.cycle(l + 1, tail, false)?;
        if l + 2 < self.h.levels.len() {
            // W-cycle: a second coarse correction from the coarse residual.
            let c = &mut tail[0];
            self.row(l + 1, Some(&c.b), &c.x, &c.r2)?;
            std::mem::swap(&mut c.x, &mut c.xc);
            self.cycle(l + 1, tail, true)?;
            let c = &tail[0];
            let len = coarse * NV;
            self.s.launch(&k.axpy, &lv.group, [Some(&c.x), None, Some(&c.xc), None], n(len, 1.0), groups(len))?;
        } else {
            let c = &mut tail[0];
            std::mem::swap(&mut c.x, &mut c.xc);
        }
        let p = n(lv.cells, OVER_CORRECTION);
        self.s.launch(&k.prolong, &lv.group, [Some(&tail[0].xc), None, Some(x), None], p, groups(lv.cells))?;
        self.smooth(l, b, x, tmp, y, false)
    }
}

impl Space for DeviceSpace<'_> {
    type V = wgpu::Buffer;

    fn take(&self) -> anyhow::Result<wgpu::Buffer> {
        match self.s.pool.borrow_mut().pop() {
            Some(v) => Ok(v),
            None => Ok(self.s.vector(self.len())),
        }
    }

    fn give(&self, v: wgpu::Buffer) {
        self.s.pool.borrow_mut().push(v);
    }

    /// Partial sums per workgroup on the device, added in f64 on the host in workgroup
    /// order.
    fn dot(&self, a: &wgpu::Buffer, b: &wgpu::Buffer) -> anyhow::Result<f64> {
        let len = self.len();
        let parts = groups(len).clamp(1, DOT_GROUPS);
        let lv = &self.h.levels[0];
        // syn_dot strides by the workgroups of its grid's x dimension: one row of them.
        self.s.launch(
            &self.s.k.dot,
            &lv.group,
            [Some(a), Some(b), Some(&self.s.partials), None],
            n(len, 0.0),
            parts,
        )?;
        let partials = self.s.read(&self.s.partials, parts, Some(&self.s.readback))?;
        Ok(partials.iter().map(|&p| p as f64).sum())
    }

    fn axpy(&self, y: &mut wgpu::Buffer, s: f64, x: &wgpu::Buffer) -> anyhow::Result<()> {
        let len = self.len();
        self.s.launch(&self.s.k.axpy, &self.h.levels[0].group, [Some(x), None, Some(y), None], n(len, s), groups(len))
    }

    fn scale(&self, y: &mut wgpu::Buffer, s: f64) -> anyhow::Result<()> {
        let len = self.len();
        self.s.launch(&self.s.k.scale, &self.h.levels[0].group, [None, None, Some(y), None], n(len, s), groups(len))
    }

    fn zero(&self, y: &mut wgpu::Buffer) -> anyhow::Result<()> {
        self.s.encode(|e| e.clear_buffer(y, 0, None));
        Ok(())
    }

    fn copy(&self, dst: &mut wgpu::Buffer, src: &wgpu::Buffer) -> anyhow::Result<()> {
        let bytes = (self.len() * 4) as u64;
        self.s.encode(|e| e.copy_buffer_to_buffer(src, 0, dst, 0, bytes));
        Ok(())
    }

    fn apply(&self, x: &wgpu::Buffer, y: &mut wgpu::Buffer) -> anyhow::Result<()> {
        self.row(0, None, x, y)
    }

    fn residual(&self, b: &wgpu::Buffer, x: &wgpu::Buffer, r: &mut wgpu::Buffer) -> anyhow::Result<()> {
        self.row(0, Some(b), x, r)
    }

    fn precondition(&self, v: &wgpu::Buffer, z: &mut wgpu::Buffer) -> anyhow::Result<()> {
        let mut work = self.h.work.borrow_mut();
        let bytes = (self.len() * 4) as u64;
        self.s.encode(|e| e.copy_buffer_to_buffer(v, 0, &work[0].b, 0, bytes));
        self.cycle(0, &mut work, false)?;
        std::mem::swap(z, &mut work[0].x);
        Ok(())
    }

    fn finish(&self) -> anyhow::Result<()> {
        self.s.flush();
        crate::backend::wgpu::faults::wait(&self.s.device, None).context("the synthetic solve")?;
        Ok(())
    }
}
