//! The GPU's copy bandwidth through the CUDA driver: device-to-device copies on the stream, the
//! fastest of a few rounds.

use super::super::bandwidth::{REPEATS, ROUNDS};
use anyhow::Context;
use cudarc::driver::CudaStream;
use std::sync::Arc;
use std::time::Instant;

/// At most this much per buffer, and at most a quarter of the free memory.
const COPY_BYTES: usize = 1 << 30;

pub fn copy_bandwidth(stream: &Arc<CudaStream>) -> anyhow::Result<f64> {
    let (free, _) = stream.context().mem_get_info().context("querying free device memory")?;
    let n = (COPY_BYTES.min(free / 4) / 4).max(1);
    let src = stream.alloc_zeros::<f32>(n).context("allocating the copy source")?;
    let mut dst = stream.alloc_zeros::<f32>(n).context("allocating the copy destination")?;
    // One copy first: the first touch of the memory is not bandwidth.
    stream.memcpy_dtod(&src, &mut dst)?;
    stream.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        for _ in 0..REPEATS {
            stream.memcpy_dtod(&src, &mut dst)?;
        }
        stream.synchronize()?;
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Ok(2.0 * (4 * n * REPEATS) as f64 / best)
}
