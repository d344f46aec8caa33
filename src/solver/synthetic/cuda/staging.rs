//! Uploads of the synthetic operator through page-locked memory. From pageable memory the
//! driver copies a build's ~5 GB (the paper cube's finest operator) at ~5-6 GB/s, 0.8-1.1 s
//! per build on an H100's host; through two page-locked buffers filled on the rayon threads,
//! each filled while the other's copy runs, the copy runs at the bus's rate.

use anyhow::Context;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use rayon::prelude::*;
use std::sync::Arc;

/// Bytes per staging buffer: large enough that a copy's fixed cost is small against its
/// transfer (64 MB take ~2.5 ms at 25 GB/s), small enough to allocate once per device.
const CHUNK: usize = 64 << 20;

/// Arrays smaller than this go straight from pageable memory: the buffers' allocation
/// (~15 ms) would cost a small hierarchy's upload (the 64^3 cavity's, 0.04 s) more than it saves.
const STAGED_MIN: usize = 4 * CHUNK;

/// Two page-locked buffers (allocated for the first large array) and, per buffer, the
/// event after its last copy.
#[derive(Default)]
pub struct Staging {
    bufs: Option<[PinnedHostSlice<u8>; 2]>,
    done: [Option<CudaEvent>; 2],
}

impl Staging {
    fn buffers(&mut self, stream: &Arc<CudaStream>) -> anyhow::Result<&mut [PinnedHostSlice<u8>; 2]> {
        if self.bufs.is_none() {
            let alloc = || {
                // SAFETY: the buffers are written before any copy reads them (`put`).
                unsafe { stream.context().alloc_pinned::<u8>(CHUNK) }
                    .with_context(|| format!("allocating {} MiB of page-locked host memory", CHUNK >> 20))
            };
            self.bufs = Some([alloc()?, alloc()?]);
        }
        Ok(self.bufs.as_mut().expect("allocated above"))
    }

    /// `src` in a new device buffer, copied in `stream`'s order. On return the copies may
    /// still run; a buffer is refilled only after its last copy (`done`), and anything the
    /// stream runs later sees the data.
    pub fn put<T: DeviceRepr + ValidAsZeroBits + bytemuck::Pod + Send + Sync>(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &[T],
    ) -> anyhow::Result<CudaSlice<T>> {
        if std::mem::size_of_val(src) < STAGED_MIN {
            return Ok(stream.clone_htod(src)?);
        }
        let mut dst = stream.alloc_zeros::<T>(src.len())?;
        let per = CHUNK / std::mem::size_of::<T>().max(1);
        for (i, part) in src.chunks(per).enumerate() {
            let k = i % 2;
            if let Some(e) = self.done[k].take() {
                e.synchronize().context("waiting for a staging copy")?;
            }
            // The buffer's own event is never recorded (it is only ever copied from as a
            // plain slice), so this does not wait; `done` above did.
            let bytes = self.buffers(stream)?[k].as_mut_slice()?;
            let typed: &mut [T] = bytemuck::cast_slice_mut(&mut bytes[..std::mem::size_of_val(part)]);
            typed.par_chunks_mut(1 << 14).zip(part.par_chunks(1 << 14)).for_each(|(d, s)| d.copy_from_slice(s));
            let at = i * per;
            stream.memcpy_htod(&*typed, &mut dst.slice_mut(at..at + part.len()))?;
            self.done[k] = Some(stream.record_event(None)?);
        }
        Ok(dst)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The buffers are freed after this: no copy may still read them.
        for e in self.done.iter().flatten() {
            let _ = e.synchronize();
        }
    }
}
