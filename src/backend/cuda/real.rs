//! The value type of the CUDA slice path: f32, the default, or f64 (`solver.precision =
//! "f64"`), where the slice kernels, their records, tables and sums are compiled with
//! `KN_F64=1` (shaders/cuda/common.cuh; keep in sync). In f64 the GSIS residual is not held
//! at the f32 sweep's round-off floor (`docs/model.md`, "The f32 floor at small Kn"), at
//! twice the slice storage and without the fused on-chip sweep, which is f32 only.

use super::records::Pinned;
use crate::backend::gpu_io;
use crate::backend::SweepInput;
use crate::problem::Problem;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

/// Whether `p` asks the CUDA backend for f64 sweeps: only where `solver.precision` names
/// "f64" (the GPU backends' default is f32).
pub fn wants_f64(p: &Problem) -> bool {
    p.config.solver.names_f64()
}

/// The buffers every sweep kernel reads or adds to, in the slice path's value type.
pub struct Buffers<T> {
    /// 12 values per cell: shaders/cuda/cell_records.cu (`CellCoeffs` in f32).
    pub cells: CudaSlice<T>,
    pub bnd: CudaSlice<T>,
    pub moments: CudaSlice<T>,
    pub incident: CudaSlice<T>,
    pub wall_sums: CudaSlice<T>,
}

impl<T> Buffers<T> {
    pub fn bytes(&self) -> usize {
        [&self.cells, &self.bnd, &self.moments, &self.incident, &self.wall_sums].iter().map(|b| b.num_bytes()).sum()
    }
}

pub trait Real:
    DeviceRepr + ValidAsZeroBits + Default + Clone + Copy + Into<f64> + Send + Sync + Unpin + 'static
{
    const F64: bool;
    /// Bytes of one value.
    const BYTES: usize = std::mem::size_of::<Self>();
    fn of(x: f64) -> Self;
    /// A wall word or velocity index as the kernels read it back (`R_BITS`): the f32's bits,
    /// or the exact value in f64.
    fn of_bits(u: u32) -> Self;
    /// moment_slice's index words of a 1D weight (`WEIGHT1`): its f32 bits, or its f64's
    /// low and high words.
    fn weight_words(w: f64) -> Vec<u32>;
    /// The buffers as f32 ones, for the fused sweep; None in f64.
    fn as_f32(b: &mut Buffers<Self>) -> Option<&mut Buffers<f32>>;
    /// The host's records of `input` (12 values per cell), where the device does not
    /// compute them.
    fn host_records(p: &Problem, input: &SweepInput) -> Vec<Self>;
}

impl Real for f32 {
    const F64: bool = false;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn of_bits(u: u32) -> Self {
        f32::from_bits(u)
    }
    fn weight_words(w: f64) -> Vec<u32> {
        vec![(w as f32).to_bits()]
    }
    fn as_f32(b: &mut Buffers<f32>) -> Option<&mut Buffers<f32>> {
        Some(b)
    }
    fn host_records(p: &Problem, input: &SweepInput) -> Vec<f32> {
        bytemuck::cast_slice(&gpu_io::cell_records(p, input)).to_vec()
    }
}

impl Real for f64 {
    const F64: bool = true;
    fn of(x: f64) -> Self {
        x
    }
    fn of_bits(u: u32) -> Self {
        u as f64
    }
    fn weight_words(w: f64) -> Vec<u32> {
        let b = w.to_bits();
        vec![b as u32, (b >> 32) as u32]
    }
    fn as_f32(_: &mut Buffers<f64>) -> Option<&mut Buffers<f32>> {
        None
    }
    fn host_records(p: &Problem, input: &SweepInput) -> Vec<f64> {
        gpu_io::cell_records_f64(p, input)
    }
}

/// Page-locked read-back buffers of the three sums (moments, incident fluxes and exits, wall
/// sums).
pub type ReadBack<T> = [Pinned<T>; 3];
