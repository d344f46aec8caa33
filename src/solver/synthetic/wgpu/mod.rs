//! The synthetic solve on a wgpu device: the same GMRES ([`super::krylov::gmres_in`]) and
//! the same multigrid W-cycle as the host's (`Multigrid::apply`), on the device the wgpu
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
mod launch;
mod precompile;
#[cfg(test)]
mod tests;
mod upload;

use super::flux::NV;
use super::krylov::Outcome;
use anyhow::{anyhow, Context};
use cycle::DeviceSpace;
pub use kernels::Compiled;
use kernels::{Kernels, SynParams, STORAGE_BUFFERS};
pub use precompile::{precompile, Precompiled};
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
#[cfg(not(test))]
const UPLOAD_PIECE: usize = 256 << 20;
/// Bytes per parallel copy within a write (a multiple of 4, as writes must be).
#[cfg(not(test))]
const COPY_PIECE: usize = 16 << 20;
// Small in the unit tests, so that their small hierarchies are uploaded in several groups of
// several pieces, with pieces that end inside a cell's block (upload.rs).
#[cfg(test)]
const UPLOAD_PIECE: usize = 24 << 10;
#[cfg(test)]
const COPY_PIECE: usize = 3 << 10;

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
    /// Where each solve's correction is read back (a fine-level vector).
    result: wgpu::Buffer,
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
    k: std::sync::Arc<Kernels>,
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

/// wgpu's errors on this thread from [`catch`] to [`Caught::check`]: out of memory,
/// validation and internal ones (a backend's failed compile) become the step's error, so the
/// solve can move to the host, instead of a fault that ends the run at the next sweep
/// (backend/wgpu/faults.rs). wgpu keeps error scopes per thread: work on other threads
/// needs its own.
pub(super) struct Caught([wgpu::ErrorScopeGuard; 3]);

pub(super) fn catch(device: &wgpu::Device) -> Caught {
    use wgpu::ErrorFilter::{Internal, OutOfMemory, Validation};
    Caught([OutOfMemory, Validation, Internal].map(|f| device.push_error_scope(f)))
}

impl Caught {
    pub(super) fn check(self, what: impl std::fmt::Display) -> anyhow::Result<()> {
        let [oom, validation, internal] = self.0;
        // The last pushed first.
        let errors = [internal, validation, oom].map(|g| pollster::block_on(g.pop()));
        match errors.into_iter().flatten().next() {
            Some(e) => Err(anyhow!("{what}: {e}")),
            None => Ok(()),
        }
    }
}

fn buffer(device: &wgpu::Device, label: &str, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage,
        mapped_at_creation: false,
    })
}

const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

/// The device's limits checked against the solve's needs: the cells of six 25-float blocks
/// per neighbour-block binding (at most `cells`, for tests) and the largest binding.
fn check_limits(l: &wgpu::Limits, name: &str, cells: Option<usize>) -> anyhow::Result<(usize, u64)> {
    anyhow::ensure!(
        l.max_storage_buffers_per_shader_stage >= STORAGE_BUFFERS,
        "{name} allows {} storage buffers per stage, the synthetic solve needs {STORAGE_BUFFERS}",
        l.max_storage_buffers_per_shader_stage
    );
    anyhow::ensure!(
        u64::from(l.min_uniform_buffer_offset_alignment) <= SLOT,
        "{name} aligns uniform offsets to {} bytes, the synthetic solve's parameter slots to {SLOT}",
        l.min_uniform_buffer_offset_alignment
    );
    // Capped as the sweep's bindings are: the stages index in u32.
    let max_binding = l
        .max_storage_buffer_binding_size
        .min(l.max_buffer_size)
        .min(crate::backend::wgpu::schedule::MAX_INDEXED_BINDING);
    let off_cells = ((max_binding / (6 * 25 * 4)) as usize).min(cells.unwrap_or(usize::MAX)).max(1);
    Ok((off_cells, max_binding))
}

/// The `off_cells` a solve on a device of limits `l` compiles its kernels for, if it can run.
fn off_cells(l: &wgpu::Limits, cells: Option<usize>) -> Option<u32> {
    check_limits(l, "", cells).ok().map(|(n, _)| n as u32)
}

impl WgpuSynthetic {
    /// On the wgpu backend's own device and queue; `restart`: GMRES's restart length.
    /// `kept`: kernels compiled for this device before (a coarse start's level), used where
    /// they fit instead of compiling the stages again; else `pre`: the kernels compiling since
    /// the device opened ([`precompile`]), waited for where they fit.
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        name: String,
        restart: usize,
        kept: Option<std::sync::Arc<Compiled>>,
        pre: Option<std::sync::Arc<Precompiled>>,
    ) -> anyhow::Result<Self> {
        Self::with_off_cells(device, queue, name, restart, None, kept, pre)
    }

    /// Its kernels, to keep with the device for the next solve on it.
    pub fn compiled(&self) -> (wgpu::Device, Compiled) {
        (self.device.clone(), Compiled::new(self.off_cells as u32, self.k.clone()))
    }

    /// [`Self::new`] with at most `cells` cells per neighbour-block binding (tests: a small
    /// case split over several bindings, as the paper cube's finest level is).
    fn with_off_cells(
        device: wgpu::Device,
        queue: wgpu::Queue,
        name: String,
        restart: usize,
        cells: Option<usize>,
        kept: Option<std::sync::Arc<Compiled>>,
        pre: Option<std::sync::Arc<Precompiled>>,
    ) -> anyhow::Result<Self> {
        let l = device.limits();
        let (off_cells, max_binding) = check_limits(&l, &name, cells)?;
        let scope = catch(&device);
        let t = std::time::Instant::now();
        let k = if let Some(k) = kept.and_then(|c| c.fits(off_cells as u32)) {
            log::debug!("gsis: wgpu kernels kept from the solve before on this device");
            k
        } else if let Some(k) = pre.and_then(|p| p.take(off_cells as u32)) {
            log::debug!("gsis: wgpu kernels compiled as the device opened (waited {:.3} s)", t.elapsed().as_secs_f64());
            k
        } else {
            // The scopes opened above close, innermost first, before a compile error is
            // returned: a scope guard dropped out of order panics in wgpu.
            let k = match Kernels::new(&device, off_cells as u32) {
                Ok(k) => std::sync::Arc::new(k),
                Err(e) => {
                    scope.check(format!("{name} rejected the synthetic solve's pipelines"))?;
                    return Err(e);
                }
            };
            log::debug!("gsis: wgpu kernels compiled in {:.3} s", t.elapsed().as_secs_f64());
            k
        };
        let params =
            buffer(&device, "syn params", SLOTS * SLOT, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
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
        scope.check(format!("{name} rejected the synthetic solve's pipelines"))?;
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

    /// Solve A x = b with the uploaded hierarchy (see [`super::krylov::gmres`]).
    pub fn solve(
        &self,
        b: &[[f64; NV]],
        rtol: f64,
        max_iterations: usize,
    ) -> anyhow::Result<(Vec<[f64; NV]>, Outcome)> {
        let h = self.hierarchy.as_ref().context("no hierarchy on the device")?;
        let scope = catch(&self.device);
        let space = DeviceSpace { s: self, h };
        let run = || -> anyhow::Result<(Vec<[f64; NV]>, Outcome)> {
            let bd = super::krylov::Space::take(&space)?;
            // An indexed map, which rayon collects in place; a `flat_map_iter` collects through
            // a list of pieces (0.5 s for the cube's 156 million diagonal values, upload.rs).
            let b32: Vec<f32> = bytemuck::cast_slice::<_, f64>(b).par_iter().map(|&x| x as f32).collect();
            self.queue.write_buffer(&bd, 0, bytemuck::cast_slice(&b32));
            let (x, outcome) = super::krylov::gmres_in(&space, &bd, rtol, self.restart, max_iterations)?;
            let x32 = self.read(&x, b.len() * NV, Some(&h.result))?;
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
        scope.check(format!("{}: the synthetic solve failed", self.name))?;
        result
    }
}
