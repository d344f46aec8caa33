//! The synthetic solve on a wgpu device: the same GMRES ([`super::krylov::gmres_in`]) and
//! the same multigrid W-cycle as the host's ([`Multigrid::apply`]), on the device the wgpu
//! backend sweeps on, with the stages of `shaders/synthetic_*.wgsl` (each the twin of a host
//! function and of a CUDA kernel of the same name, `shaders/cuda/synthetic.cu`).
//!
//! In f32 throughout, vectors included (WGSL has no portable f64): the solve reaches the
//! inner tolerance (1e-4 at the tightest, [`super::inner_tolerance`]) in about the host's
//! steps, and any solve leaves the fixed point as it is (`super`). The host assembles the
//! operator, builds the hierarchy and factors the lines; each build is uploaded once and
//! then serves every solve until the next. Why on the device: a W-cycle reads about 1.4 KB
//! per cell and level visit, ~9 GB on the paper cube, seconds per GMRES step on the host
//! (`docs/performance.md`).

mod cycle;
#[cfg(test)]
mod tests;

use super::flux::NV;
use super::krylov::Outcome;
use super::multigrid::Multigrid;
use super::operator::NONE;
use anyhow::{anyhow, Context};
use cycle::DeviceSpace;
use kernels::{Kernels, SynParams, OFF_BINDINGS, STORAGE_BUFFERS};
use rayon::prelude::*;
use std::cell::RefCell;

pub mod kernels;

/// Bytes per parameter slot: the largest uniform offset alignment a device may ask.
const SLOT: u64 = 256;
/// Parameter slots per submission; a W-cycle on the paper cube takes about 150.
const SLOTS: u64 = 2048;
/// First-stage workgroups of a dot product, fixed per length so sums are reproducible.
const DOT_GROUPS: usize = 512;
/// Bytes per write of an upload: each goes through a staging buffer of its size.
const UPLOAD_PIECE: usize = 256 << 20;
/// Bytes per parallel copy within a write (a multiple of 4, as writes must be).
const COPY_PIECE: usize = 16 << 20;

/// A level on the device: its operator and smoother buffers and their bind groups.
struct DevLevel {
    cells: usize,
    dims: [u32; 3],
    /// Group 0 with Jacobi's inverses (or nothing) in aux0.
    group: wgpu::BindGroup,
    /// Each line axis's factors.
    lines: Vec<DevLines>,
    jacobi: bool,
    /// Cells on the next level (None on the coarsest).
    coarse: Option<usize>,
    _buffers: Vec<wgpu::Buffer>,
}

/// The factors of one axis's lines on one level, and group 0 with them as aux0 and aux1.
struct DevLines {
    axis: u32,
    group: wgpu::BindGroup,
    m: wgpu::Buffer,
    dinv: wgpu::Buffer,
}

/// Work vectors of one level, as in the CUDA twin (`super::cuda`).
pub(super) struct Work {
    b: wgpu::Buffer,
    r2: wgpu::Buffer,
    x: wgpu::Buffer,
    tmp: wgpu::Buffer,
    y: wgpu::Buffer,
    xc: wgpu::Buffer,
}

struct Uploaded {
    levels: Vec<DevLevel>,
    work: RefCell<Vec<Work>>,
}

/// Commands queued since the last submission, with their parameter slots.
#[derive(Default)]
struct Pending {
    encoder: Option<wgpu::CommandEncoder>,
    /// The open compute pass: consecutive launches share one (wgpu puts the barriers
    /// between them); a copy or clear ends it.
    pass: Option<wgpu::ComputePass<'static>>,
    params: Vec<SynParams>,
    /// Launches and seconds spent encoding them since the last solve began (logs).
    launches: usize,
    encoding: f64,
}

pub struct WgpuSynthetic {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pub name: String,
    k: Kernels,
    off_cells: usize,
    max_binding: u64,
    max_groups: u32,
    params: wgpu::Buffer,
    params_group: wgpu::BindGroup,
    /// Bound where a stage reads or writes nothing (read-only slots, then the two writable).
    dummy: [wgpu::Buffer; 3],
    partials: wgpu::Buffer,
    readback: wgpu::Buffer,
    pending: RefCell<Pending>,
    hierarchy: Option<Uploaded>,
    /// Bind groups of vector combinations seen (`vector_group`); emptied with the hierarchy,
    /// whose work vectors they hold.
    groups: RefCell<std::collections::HashMap<[wgpu::Buffer; 4], wgpu::BindGroup>>,
    /// The previous hierarchy's buffers during an upload, for reuse.
    spare: RefCell<Vec<wgpu::Buffer>>,
    /// GMRES's vectors, kept from one solve to the next (fine-level length).
    pool: RefCell<Vec<wgpu::Buffer>>,
    restart: usize,
}

fn buffer(device: &wgpu::Device, label: &str, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage, mapped_at_creation: false })
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

impl WgpuSynthetic {
    /// On the wgpu backend's own device and queue; `restart`: GMRES's restart length.
    pub fn new(device: wgpu::Device, queue: wgpu::Queue, name: String, restart: usize) -> anyhow::Result<Self> {
        Self::with_off_cells(device, queue, name, restart, None)
    }

    /// [`Self::new`] with at most `cells` cells per neighbour-block binding (tests: a small
    /// case split over several bindings, as the paper cube's finest level is).
    fn with_off_cells(
        device: wgpu::Device,
        queue: wgpu::Queue,
        name: String,
        restart: usize,
        cells: Option<usize>,
    ) -> anyhow::Result<Self> {
        let l = device.limits();
        anyhow::ensure!(
            l.max_storage_buffers_per_shader_stage >= STORAGE_BUFFERS,
            "{name} allows {} storage buffers per stage, the synthetic solve needs {STORAGE_BUFFERS}",
            l.max_storage_buffers_per_shader_stage
        );
        let max_binding = l.max_storage_buffer_binding_size.min(l.max_buffer_size);
        // Whole cells of six 25-float blocks per binding.
        let off_cells = ((max_binding / (6 * 25 * 4)) as usize).min(cells.unwrap_or(usize::MAX));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let k = Kernels::new(&device, off_cells as u32);
        let params = buffer(&device, "syn params", SLOTS * SLOT, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
        let params_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("syn params"),
            layout: &k.layouts[2],
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &params,
                    offset: 0,
                    size: wgpu::BufferSize::new(std::mem::size_of::<SynParams>() as u64),
                }),
            }],
        });
        let dummy = std::array::from_fn(|_| buffer(&device, "syn unused", 16, STORAGE));
        let partials = buffer(&device, "syn partials", DOT_GROUPS as u64 * 4, STORAGE);
        let readback = buffer(
            &device,
            "syn readback",
            DOT_GROUPS as u64 * 4,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(anyhow!("{name} rejected the synthetic solve's pipelines: {e}"));
        }
        Ok(Self {
            max_groups: l.max_compute_workgroups_per_dimension,
            device,
            queue,
            name,
            k,
            off_cells,
            max_binding,
            params,
            params_group,
            dummy,
            partials,
            readback,
            pending: RefCell::default(),
            hierarchy: None,
            groups: RefCell::default(),
            spare: RefCell::default(),
            pool: RefCell::default(),
            restart,
        })
    }

    /// A storage buffer of `floats`: the previous build's of this size, if any (every build
    /// of a run has the same sizes, and a fresh multi-GiB allocation per build costs time),
    /// else a new one. Its contents are unspecified.
    fn reused(&self, floats: usize) -> wgpu::Buffer {
        let bytes = (floats as u64 * 4).max(16);
        let spare = {
            let mut spare = self.spare.borrow_mut();
            spare.iter().position(|b| b.size() == bytes).map(|i| spare.swap_remove(i))
        };
        spare.unwrap_or_else(|| buffer(&self.device, "syn level", bytes, STORAGE))
    }

    fn storage_from(&self, label: &str, data: &[u8]) -> anyhow::Result<wgpu::Buffer> {
        self.fits(label, data.len())?;
        let b = self.reused(data.len() / 4);
        // Pieces written on the rayon threads (an upload of the paper cube's hierarchy moves
        // ~10 GB through host memory per build), a group at a time: submitting frees each
        // group's staging memory once its copies have run.
        let (queue, name) = (&self.queue, &self.name);
        for (g, group) in data.chunks(UPLOAD_PIECE).enumerate() {
            group.par_chunks(COPY_PIECE).enumerate().try_for_each(|(i, piece)| {
                let at = (g * UPLOAD_PIECE + i * COPY_PIECE) as u64;
                let size = wgpu::BufferSize::new(piece.len() as u64).context("an empty upload")?;
                let mut view = queue
                    .write_buffer_with(&b, at, size)
                    .ok_or_else(|| anyhow!("{name}: no staging memory for the synthetic solve's `{label}`"))?;
                view.copy_from_slice(piece);
                Ok::<_, anyhow::Error>(())
            })?;
            self.queue.submit([]);
        }
        Ok(b)
    }

    fn fits(&self, label: &str, bytes: usize) -> anyhow::Result<()> {
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
    fn vector(&self, floats: usize) -> wgpu::Buffer {
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
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let built = self.build(mg);
        self.spare.borrow_mut().clear();
        // The line factors' launches, queued after the uploads they read.
        self.flush();
        let invalid = pollster::block_on(validation.pop());
        let out_of_memory = pollster::block_on(oom.pop());
        self.device.poll(wgpu::PollType::wait_indefinitely()).context("waiting for the upload")?;
        if let Some(e) = out_of_memory {
            return Err(anyhow!("{}: out of memory for the synthetic solve: {e}", self.name));
        }
        if let Some(e) = invalid {
            return Err(anyhow!("{}: the synthetic solve's buffers were rejected: {e}", self.name));
        }
        self.hierarchy = Some(built?);
        Ok(())
    }

    fn build(&self, mg: &Multigrid) -> anyhow::Result<Uploaded> {
        let mut levels = Vec::new();
        let mut work = Vec::new();
        let last = mg.levels() - 1;
        for l in 0..mg.levels() {
            let v = mg.level(l);
            let cells = v.op.diag.len();
            let diag: Vec<f32> = v.op.diag.par_iter().flat_map_iter(|b| b.iter().flatten().map(|&x| x as f32)).collect();
            let mut bufs = vec![self.storage_from("diagonal blocks", bytemuck::cast_slice(&diag))?];
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
                    self.launch(&self.k.line_factor, &base, [None, None, Some(&m), Some(&dinv)], p, count.div_ceil(64))?;
                    (m, dinv)
                };
                line_groups.push(DevLines { axis: ln.axis() as u32, group: group(Some(&m), Some(&dinv)), m, dinv });
            }
            bufs.extend(aux);
            bufs.extend(children);
            bufs.extend(parent);

            let vec = || self.vector(cells * NV);
            work.push(Work { b: vec(), r2: vec(), x: vec(), tmp: vec(), y: vec(), xc: vec() });
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
        Ok(Uploaded { levels, work: RefCell::new(work) })
    }

    /// Queue one launch of `pipeline` over `groups` workgroups (2D when needed).
    fn launch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        level: &wgpu::BindGroup,
        vectors: [Option<&wgpu::Buffer>; 4],
        p: SynParams,
        groups: usize,
    ) -> anyhow::Result<()> {
        let t = std::time::Instant::now();
        if self.pending.borrow().params.len() as u64 == SLOTS {
            self.flush();
        }
        let (gx, gy) = crate::backend::wgpu::schedule::grid_2d(groups.max(1), self.max_groups)
            .ok_or_else(|| anyhow!("{}: {groups} workgroups exceed the adapter's grid", self.name))?;
        let vg = self.vector_group(vectors);
        let mut guard = self.pending.borrow_mut();
        let pending = &mut *guard;
        let offset = (pending.params.len() as u64 * SLOT) as u32;
        pending.params.push(p);
        if pending.pass.is_none() {
            let enc = pending.encoder.get_or_insert_with(|| {
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("synthetic") })
            });
            let desc = wgpu::ComputePassDescriptor { label: None, timestamp_writes: None };
            pending.pass = Some(enc.begin_compute_pass(&desc).forget_lifetime());
        }
        let pass = pending.pass.as_mut().expect("opened above");
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, level, &[]);
        pass.set_bind_group(1, &vg, &[]);
        pass.set_bind_group(2, &self.params_group, &[offset]);
        pass.dispatch_workgroups(gx, gy, 1);
        pending.launches += 1;
        pending.encoding += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// The bind group of a launch's vectors (unused slots get the dummies), made once per
    /// combination: a W-cycle on the paper cube launches ~900 stages, and the same few
    /// hundred combinations recur in every cycle.
    fn vector_group(&self, vectors: [Option<&wgpu::Buffer>; 4]) -> wgpu::BindGroup {
        let slot = [0usize, 0, 1, 2];
        let bufs: [wgpu::Buffer; 4] = std::array::from_fn(|i| vectors[i].unwrap_or(&self.dummy[slot[i]]).clone());
        if let Some(g) = self.groups.borrow().get(&bufs) {
            return g.clone();
        }
        let entries: Vec<_> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
            .collect();
        let g = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("syn vectors"),
            layout: &self.k.layouts[1],
            entries: &entries,
        });
        self.groups.borrow_mut().insert(bufs, g.clone());
        g
    }

    /// Queue a copy or clear (after the open pass).
    fn encode(&self, f: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut pending = self.pending.borrow_mut();
        pending.pass = None;
        let enc = pending.encoder.get_or_insert_with(|| {
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("synthetic") })
        });
        f(enc);
    }

    /// Submit what is queued, its parameters first.
    fn flush(&self) {
        let mut pending = self.pending.borrow_mut();
        pending.pass = None;
        if let Some(enc) = pending.encoder.take() {
            let mut bytes = vec![0u8; pending.params.len() * SLOT as usize];
            for (i, p) in pending.params.iter().enumerate() {
                let at = i * SLOT as usize;
                bytes[at..at + std::mem::size_of::<SynParams>()].copy_from_slice(bytemuck::bytes_of(p));
            }
            if !bytes.is_empty() {
                self.queue.write_buffer(&self.params, 0, &bytes);
            }
            self.queue.submit([enc.finish()]);
        }
        pending.params.clear();
    }

    /// Copy `floats` of `src` into host memory (everything queued runs first).
    fn read(&self, src: &wgpu::Buffer, floats: usize, staging: Option<&wgpu::Buffer>) -> anyhow::Result<Vec<f32>> {
        let bytes = floats as u64 * 4;
        let owned;
        let dst = match staging {
            Some(s) => s,
            None => {
                owned = buffer(&self.device, "syn read", bytes, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
                &owned
            }
        };
        self.encode(|e| e.copy_buffer_to_buffer(src, 0, dst, 0, bytes));
        self.flush();
        let slice = dst.slice(..bytes);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).context("waiting for the synthetic solve")?;
        rx.recv().context("the map callback never ran")?.map_err(|e| anyhow!("reading back: {e}"))?;
        let out = {
            let view = slice.get_mapped_range().map_err(|e| anyhow!("mapping: {e:?}"))?;
            bytemuck::cast_slice::<_, f32>(&view).to_vec()
        };
        dst.unmap();
        Ok(out)
    }

    /// Solve A x = b with the uploaded hierarchy (see [`super::krylov::gmres`]).
    pub fn solve(
        &self,
        b: &[[f64; NV]],
        rtol: f64,
        max_iterations: usize,
    ) -> anyhow::Result<(Vec<[f64; NV]>, Outcome)> {
        let h = self.hierarchy.as_ref().context("no hierarchy on the device")?;
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let space = DeviceSpace { s: self, h };
        let run = || -> anyhow::Result<(Vec<[f64; NV]>, Outcome)> {
            let bd = super::krylov::Space::take(&space)?;
            let b32: Vec<f32> = b.par_iter().flat_map_iter(|c| c.map(|x| x as f32)).collect();
            self.queue.write_buffer(&bd, 0, bytemuck::cast_slice(&b32));
            let (x, outcome) = super::krylov::gmres_in(&space, &bd, rtol, self.restart, max_iterations)?;
            let x32 = self.read(&x, b.len() * NV, None)?;
            super::krylov::Space::give(&space, x);
            super::krylov::Space::give(&space, bd);
            let out = x32.par_chunks(NV).map(|c| std::array::from_fn(|k| c[k] as f64)).collect();
            Ok((out, outcome))
        };
        {
            let mut p = self.pending.borrow_mut();
            (p.launches, p.encoding) = (0, 0.0);
        }
        let result = run();
        let p = self.pending.borrow();
        log::debug!("gsis: {} launches on {}, encoded in {:.3} s", p.launches, self.name, p.encoding);
        drop(p);
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(anyhow!("{}: the synthetic solve failed: {e}", self.name));
        }
        result
    }
}
