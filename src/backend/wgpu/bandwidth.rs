//! The GPU's copy bandwidth through wgpu: buffer-to-buffer copies in one submission.

use super::super::bandwidth::REPEATS;
use std::time::Instant;

/// At most this much per buffer (software adapters get a quarter), within the adapter's
/// buffer limit.
const COPY_BYTES: u64 = 1 << 30;

pub fn copy_bandwidth(device: &wgpu::Device, queue: &wgpu::Queue, software: bool) -> anyhow::Result<f64> {
    let cap = if software { COPY_BYTES / 4 } else { COPY_BYTES };
    let bytes = cap.min(device.limits().max_buffer_size) & !3;
    let make = |label: &str, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage,
            mapped_at_creation: false,
        })
    };
    let src = make("copy source", wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST);
    let dst = make("copy destination", wgpu::BufferUsages::COPY_DST);
    let copies = |n: usize| -> anyhow::Result<f64> {
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bandwidth") });
        for _ in 0..n {
            enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
        }
        let t0 = Instant::now();
        queue.submit([enc.finish()]);
        device.poll(wgpu::PollType::wait_indefinitely())?;
        Ok(t0.elapsed().as_secs_f64())
    };
    // One copy first: the first touch of the memory and the submission path are not bandwidth.
    copies(1)?;
    let seconds = copies(REPEATS)?;
    Ok(2.0 * (bytes * REPEATS as u64) as f64 / seconds)
}
