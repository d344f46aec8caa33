//! The sweep's cell records computed on the device from the macroscopic fields
//! (shaders/cuda/cell_records.cu), instead of on the host from [`crate::model::EqCoeffs`]
//! (`gpu_io::cell_records`, the twin): the Shakhov coefficients' grid sums cost the host
//! ~0.4 us of one core per cell every iteration (0.9-1.0 ms of the 32^3 row's 5.9 ms on 16
//! threads, ~15 ms at 64^3), the device microseconds. The host packs and uploads eight f64
//! per cell instead of twelve f32.
//!
//! `KNUDSEN_CELL_RECORDS=host` keeps the host path (to compare the two).

use crate::model::Macro;
use crate::problem::Problem;
use anyhow::Context;
use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg,
    ValidAsZeroBits,
};
use std::sync::Arc;

use crate::backend::gpu_io::{pack_fields, RECORD_FIELDS as CELL_FIELDS};
const BLOCK: u32 = 128;

pub struct CellRecords {
    kernel: CudaFunction,
    fields: CudaSlice<f64>,
    vgrid: CudaSlice<f64>,
    words: CudaSlice<u32>,
    /// The packed fields on the host, kept across iterations.
    host: Pinned<f64>,
    constants: [f64; 3],
    ncell: u32,
}

impl CellRecords {
    pub fn new(p: &Problem, module: &Arc<CudaModule>, stream: &Arc<CudaStream>) -> anyhow::Result<Self> {
        let kernel = module.load_function("cell_records").context("loading kernel cell_records")?;
        let vgrid: Vec<f64> = p.vgrid.nodes.iter().chain(&p.vgrid.weights_1d).copied().collect();
        // One element at least: cudarc does not allocate empty buffers (no bodies: no words).
        let mut words = p.bodies.solids.words.clone();
        words.resize(words.len().max(1), 0);
        let ncell = p.grid.cells();
        Ok(Self {
            kernel,
            fields: stream.alloc_zeros::<f64>(ncell * CELL_FIELDS).context("allocating the cell fields")?,
            vgrid: stream.clone_htod(&vgrid)?,
            words: stream.clone_htod(&words)?,
            host: Pinned::writable(stream, ncell * CELL_FIELDS)?,
            constants: [p.prandtl, p.delta, p.omega],
            ncell: ncell as u32,
        })
    }

    pub fn device_bytes(&self) -> usize {
        self.fields.num_bytes() + self.vgrid.num_bytes() + self.words.num_bytes()
    }

    /// Upload `fields` and write the records of every cell into `cells` (12 values per cell,
    /// of the type the module was compiled for: real.rs).
    pub fn launch<T: DeviceRepr>(
        &mut self,
        stream: &Arc<CudaStream>,
        fields: &[Macro],
        cells: &mut CudaSlice<T>,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(fields.len() == self.ncell as usize, "{} fields for {} cells", fields.len(), self.ncell);
        pack_fields(fields, self.host.get_mut()?, |x| x);
        self.host.write_to(&mut self.fields)?;
        let cfg = LaunchConfig {
            grid_dim: (self.ncell.div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let [prandtl, delta, omega] = self.constants;
        let mut l = stream.launch_builder(&self.kernel);
        l.arg(&self.fields).arg(&self.vgrid).arg(&self.words).arg(&prandtl).arg(&delta).arg(&omega).arg(&self.ncell);
        l.arg(cells);
        // SAFETY: the argument list matches cell_records.cu's signature; `cells` holds 12
        // values per cell of the module's `real` (CudaBackend::<T>::new compiles and
        // allocates it so).
        unsafe { l.launch(cfg) }.context("launching cell_records")?;
        Ok(())
    }
}

/// A host buffer of `len` values in page-locked memory, which the device copies to and from
/// directly (about twice the bandwidth of pageable memory, and no page faults). At least one
/// element is allocated, as for device buffers. Copies run in `stream`'s order; cudarc
/// records no event for them on a default stream, so every host access ([`Pinned::get`],
/// [`Pinned::get_mut`]) and the release first wait for the stream: the host never reads a
/// copy in flight, and never frees or overwrites a buffer the device is still reading.
pub struct Pinned<T> {
    buf: PinnedHostSlice<T>,
    len: usize,
    stream: Arc<CudaStream>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Default + Clone> Pinned<T> {
    /// For read-back: cached memory (write-combined memory reads slowly on the host).
    pub fn readable(stream: &Arc<CudaStream>, len: usize) -> anyhow::Result<Self> {
        Self::alloc(stream, len, 0)
    }

    /// For uploads the host writes once, front to back: write-combined memory.
    pub fn writable(stream: &Arc<CudaStream>, len: usize) -> anyhow::Result<Self> {
        Self::alloc(stream, len, cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED)
    }

    fn alloc(stream: &Arc<CudaStream>, len: usize, flags: u32) -> anyhow::Result<Self> {
        // SAFETY: the contents are uninitialised; they are zeroed below before any read.
        let mut buf =
            unsafe { stream.context().alloc_pinned_with_flags::<T>(len.max(1), flags) }.with_context(|| {
                format!("allocating {} MiB of page-locked host memory", (len * std::mem::size_of::<T>()) >> 20)
            })?;
        buf.as_mut_slice()?.fill(T::default());
        Ok(Self { buf, len, stream: stream.clone() })
    }

    /// The first `len` values of `src`, copied in stream order.
    pub fn read(&mut self, src: &CudaSlice<T>) -> anyhow::Result<()> {
        if self.len > 0 {
            self.stream.memcpy_dtoh(&src.slice(..self.len), &mut self.buf)?;
        }
        Ok(())
    }

    /// Copy the whole buffer to `dst`, in stream order.
    pub fn write_to(&self, dst: &mut CudaSlice<T>) -> anyhow::Result<()> {
        self.stream.memcpy_htod(&self.buf, dst)?;
        Ok(())
    }

    /// The values the buffer holds (not counting the one allocated for an empty buffer).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self) -> anyhow::Result<&[T]> {
        self.stream.synchronize().context("waiting for the GPU")?;
        Ok(&self.buf.as_slice()?[..self.len])
    }

    pub fn get_mut(&mut self) -> anyhow::Result<&mut [T]> {
        self.stream.synchronize().context("waiting for the GPU")?;
        Ok(&mut self.buf.as_mut_slice()?[..self.len])
    }
}

impl<T> Drop for Pinned<T> {
    fn drop(&mut self) {
        // Before `buf` is freed (fields drop after this): no copy may still use it.
        let _ = self.stream.synchronize();
    }
}
