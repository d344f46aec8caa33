//! Uploading a hierarchy: the host's levels into device buffers (the previous build's,
//! reused by size), the line smoother factored on the device.

use super::kernels::{SynParams, OFF_BINDINGS};
use super::{buffer, catch, DevLevel, DevLines, Uploaded, WgpuSynthetic, Work, COPY_PIECE, STORAGE, UPLOAD_PIECE};
use crate::solver::synthetic::flux::NV;
use crate::solver::synthetic::multigrid::Multigrid;
use crate::solver::synthetic::operator::NONE;
use anyhow::Context;
use rayon::prelude::*;
use std::cell::RefCell;

impl WgpuSynthetic {
    /// A storage buffer of `floats`: the previous build's of this size, if any (every build
    /// of a run has the same sizes, and a fresh multi-GiB allocation per build costs time),
    /// else a new one. Its contents are unspecified.
    pub(super) fn reused(&self, floats: usize) -> wgpu::Buffer {
        let bytes = (floats as u64 * 4).max(16);
        let spare = {
            let mut spare = self.spare.borrow_mut();
            spare.iter().position(|b| b.size() == bytes).map(|i| spare.swap_remove(i))
        };
        spare.unwrap_or_else(|| buffer(&self.device, "syn level", bytes, STORAGE))
    }

    pub(super) fn storage_from(&self, label: &str, data: &[u8]) -> anyhow::Result<wgpu::Buffer> {
        self.storage_filled(label, data.len(), |at, out| out.copy_from_slice(&data[at..at + out.len()]))
    }

    /// A storage buffer of `values` f64 converted to f32 as they are copied: no f32 copy of
    /// the whole array on the host first (for the paper cube's diagonal blocks that copy,
    /// 0.6 GB collected by rayon, took 0.53-0.63 s of a 0.9-1.3 s upload).
    pub(super) fn storage_from_f64(&self, label: &str, values: &[f64]) -> anyhow::Result<wgpu::Buffer> {
        self.storage_filled(label, values.len() * 4, |at, out| {
            // Converted a block at a time on the stack, then copied: the view is write-only.
            const BLOCK: usize = 4096;
            let mut tmp = [0.0f32; BLOCK];
            let src = &values[at / 4..at / 4 + out.len() / 4];
            for (b, chunk) in src.chunks(BLOCK).enumerate() {
                for (t, &x) in tmp.iter_mut().zip(chunk) {
                    *t = x as f32;
                }
                let start = b * BLOCK * 4;
                out.slice(start..start + chunk.len() * 4).copy_from_slice(bytemuck::cast_slice(&tmp[..chunk.len()]));
            }
        })
    }

    /// A storage buffer of `bytes` whose pieces `fill(offset, piece)` writes. Pieces are
    /// written on the rayon threads (an upload of the paper cube's hierarchy moves ~10 GB
    /// through host memory per build), a group at a time: submitting frees each group's
    /// staging memory once its copies have run. Offsets and sizes are multiples of 4.
    fn storage_filled(
        &self,
        label: &str,
        bytes: usize,
        fill: impl Fn(usize, &mut wgpu::QueueWriteBufferView) + Sync,
    ) -> anyhow::Result<wgpu::Buffer> {
        self.fits(label, bytes)?;
        let b = self.reused(bytes / 4);
        let (device, queue, name) = (&self.device, &self.queue, &self.name);
        for g in (0..bytes).step_by(UPLOAD_PIECE) {
            let group = g..(g + UPLOAD_PIECE).min(bytes);
            let pieces: Vec<usize> = group.clone().step_by(COPY_PIECE).collect();
            pieces.into_par_iter().try_for_each(|at| {
                let len = COPY_PIECE.min(group.end - at);
                let size = wgpu::BufferSize::new(len as u64).context("an empty upload")?;
                // This thread's own scopes: the caller's do not see its errors.
                let scope = catch(device);
                if let Some(mut view) = queue.write_buffer_with(&b, at as u64, size) {
                    fill(at, &mut view);
                }
                scope.check(format!("{name}: uploading the synthetic solve's `{label}`"))
            })?;
            self.queue.submit([]);
        }
        Ok(b)
    }

    pub(super) fn fits(&self, label: &str, bytes: usize) -> anyhow::Result<()> {
        anyhow::ensure!(
            bytes as u64 <= self.max_binding,
            "{}: the synthetic solve's `{label}` needs {} MiB in one binding, the adapter allows {} MiB",
            self.name,
            bytes >> 20,
            self.max_binding >> 20
        );
        Ok(())
    }

    /// A zeroed vector of `floats`.
    pub(super) fn vector(&self, floats: usize) -> wgpu::Buffer {
        buffer(&self.device, "syn vector", floats as u64 * 4, STORAGE)
    }

    /// Replace the device's hierarchy by `mg`'s (factored on the host). Fails, leaving none
    /// on the device, when a buffer exceeds the adapter's bindings or its memory (the caller
    /// then solves on the host).
    pub fn upload(&mut self, mg: &Multigrid) -> anyhow::Result<()> {
        self.groups.borrow_mut().clear();
        if let Some(old) = self.hierarchy.take() {
            let mut spare = self.spare.borrow_mut();
            for l in old.levels {
                spare.extend(l._buffers);
                spare.extend(l.lines.into_iter().flat_map(|d| [d.m, d.dinv]));
            }
        }
        self.pool.borrow_mut().clear();
        let scope = catch(&self.device);
        let built = self.build(mg);
        self.spare.borrow_mut().clear();
        let t = std::time::Instant::now();
        // The line factors' launches, queued after the uploads they read.
        self.flush();
        scope.check(format!("{}: the synthetic solve's hierarchy does not fit or was rejected", self.name))?;
        crate::backend::wgpu::faults::wait(&self.device, None).context("the synthetic solve's upload")?;
        log::debug!(
            "gsis: wgpu upload: the last copies and the line factors waited for {:.3} s",
            t.elapsed().as_secs_f64()
        );
        self.hierarchy = Some(built?);
        Ok(())
    }

    pub(super) fn build(&self, mg: &Multigrid) -> anyhow::Result<Uploaded> {
        let mut levels = Vec::new();
        let mut work = Vec::new();
        let last = mg.levels() - 1;
        // Seconds in the diagonal blocks' upload (converted to f32 on the way), in the other
        // copies, and in the solve's work vectors, for `RUST_LOG=knudsen=debug`.
        let (mut t_convert, mut t_copy, mut t_vectors) = (0.0, 0.0, 0.0);
        let t_build = std::time::Instant::now();
        for l in 0..mg.levels() {
            let v = mg.level(l);
            let cells = v.op.diag.len();
            let t = std::time::Instant::now();
            let diag: &[f64] = bytemuck::cast_slice(&v.op.diag);
            let mut bufs = vec![self.storage_from_f64("diagonal blocks", diag)?];
            t_convert += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            bufs.push(self.storage_from("neighbours", bytemuck::cast_slice(&v.op.nbr))?);
            let parts = cells.div_ceil(self.off_cells).max(1);
            anyhow::ensure!(
                parts <= OFF_BINDINGS,
                "{}: the synthetic solve's neighbour blocks of {cells} cells need {parts} bindings, at most {OFF_BINDINGS}",
                self.name
            );
            for p in 0..OFF_BINDINGS {
                let range = (p * self.off_cells).min(cells)..((p + 1) * self.off_cells).min(cells);
                bufs.push(if range.is_empty() {
                    self.vector(4)
                } else {
                    self.storage_from("neighbour blocks", bytemuck::cast_slice(&v.op.off[range]))?
                });
            }
            t_copy += t.elapsed().as_secs_f64();
            let aux = if l == last {
                let inv: Vec<f32> = mg.coarsest_inverse().iter().map(|&x| x as f32).collect();
                Some(self.storage_from("coarsest inverse", bytemuck::cast_slice(&inv))?)
            } else if !v.inv.is_empty() {
                Some(self.storage_from("inverted diagonals", bytemuck::cast_slice(v.inv))?)
            } else {
                None
            };
            let (children, parent) = if v.children.is_empty() {
                (None, None)
            } else {
                let members: Vec<u32> =
                    v.children.iter().flat_map(|m| (0..8).map(move |i| m.get(i).copied().unwrap_or(NONE))).collect();
                (
                    Some(self.storage_from("aggregates", bytemuck::cast_slice(&members))?),
                    Some(self.storage_from("parents", bytemuck::cast_slice(v.parent))?),
                )
            };
            let unused = &self.dummy[0];
            let group = |aux0: Option<&wgpu::Buffer>, aux1: Option<&wgpu::Buffer>| {
                let list: [&wgpu::Buffer; 10] = [
                    &bufs[0],
                    &bufs[1],
                    &bufs[2],
                    &bufs[3],
                    &bufs[4],
                    &bufs[5],
                    aux0.unwrap_or(unused),
                    aux1.unwrap_or(unused),
                    children.as_ref().unwrap_or(unused),
                    parent.as_ref().unwrap_or(unused),
                ];
                let entries: Vec<_> = list
                    .iter()
                    .enumerate()
                    .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
                    .collect();
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("syn level"),
                    layout: &self.k.layouts[0],
                    entries: &entries,
                })
            };
            let base = group(aux.as_ref(), None);
            let mut line_groups = Vec::new();
            for ln in v.lines {
                let (m, dinv) = if ln.is_factored() {
                    let (m, dinv) = ln.factors();
                    let m = self.storage_from("line factors", bytemuck::cast_slice(m))?;
                    (m, self.storage_from("line inverses", bytemuck::cast_slice(dinv))?)
                } else {
                    // Factored here (syn_line_factor), after the operator's upload.
                    self.fits("line factors", cells * 100)?;
                    let (m, dinv) = (self.reused(cells * 25), self.reused(cells * 25));
                    let [d0, d1, d2] = ln.dims().map(|d| d as u32);
                    let axis = ln.axis() as u32;
                    let count = (d0 * d1 * d2 / [d0, d1, d2][axis as usize]) as usize;
                    let p = SynParams { axis, d0, d1, d2, ..Default::default() };
                    self.launch(
                        &self.k.line_factor,
                        &base,
                        [None, None, Some(&m), Some(&dinv)],
                        p,
                        count.div_ceil(64),
                    )?;
                    (m, dinv)
                };
                line_groups.push(DevLines { axis: ln.axis() as u32, group: group(Some(&m), Some(&dinv)), m, dinv });
            }
            bufs.extend(aux);
            bufs.extend(children);
            bufs.extend(parent);

            let t = std::time::Instant::now();
            let vec = || self.vector(cells * NV);
            work.push(Work { b: vec(), r2: vec(), x: vec(), tmp: vec(), y: vec(), xc: vec() });
            t_vectors += t.elapsed().as_secs_f64();
            let dims = if v.lines.is_empty() { [0; 3] } else { v.lines[0].dims().map(|d| d as u32) };
            levels.push(DevLevel {
                cells,
                dims,
                group: base,
                lines: line_groups,
                jacobi: !v.inv.is_empty(),
                coarse: (!v.children.is_empty()).then_some(v.children.len()),
                _buffers: bufs,
            });
        }
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let result = buffer(&self.device, "syn result", (mg.operator().diag.len() * NV * 4) as u64, usage);
        log::debug!(
            "gsis: wgpu upload: built in {:.3} s, of which the diagonal blocks (to f32) {t_convert:.3} s, the neighbours and their blocks {t_copy:.3} s, the work vectors {t_vectors:.3} s",
            t_build.elapsed().as_secs_f64()
        );
        Ok(Uploaded { levels, work: RefCell::new(work), result })
    }
}
