//! The GPU's copy bandwidth through wgpu: the better of a compute-shader copy
//! (shaders/copy_bandwidth.wgsl) and buffer-to-buffer copies, each repeated in one submission,
//! the fastest of a few submissions.
//! On an NVIDIA H100 under Vulkan the buffer copy reaches 840 GB/s, the compute copy about
//! three times that (docs/benchmarks.md): the kernels' floor is the compute copy's.

use super::super::bandwidth::{REPEATS, ROUNDS};
use std::time::Instant;

/// At most this much per buffer (software adapters get a quarter), within the adapter's
/// buffer limit.
const COPY_BYTES: u64 = 1 << 30;

pub fn copy_bandwidth(device: &wgpu::Device, queue: &wgpu::Queue, software: bool) -> anyhow::Result<f64> {
    let cap = if software { COPY_BYTES / 4 } else { COPY_BYTES };
    // A multiple of 16 bytes (whole vec4), within one binding.
    let limit = device.limits().max_buffer_size.min(device.limits().max_storage_buffer_binding_size);
    let bytes = cap.min(limit) & !15;
    let make = |label: &str, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage,
            mapped_at_creation: false,
        })
    };
    let storage = wgpu::BufferUsages::STORAGE;
    let src = make("copy source", wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST | storage);
    let dst = make("copy destination", wgpu::BufferUsages::COPY_DST | storage);
    let time = |n: usize, encode: &dyn Fn(&mut wgpu::CommandEncoder)| -> anyhow::Result<f64> {
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bandwidth") });
        for _ in 0..n {
            encode(&mut enc);
        }
        let t0 = Instant::now();
        queue.submit([enc.finish()]);
        super::faults::wait(device, None)?;
        Ok(t0.elapsed().as_secs_f64())
    };
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some("copy_bandwidth"),
        source: wgpu::ShaderSource::Wgsl(super::shaders::COPY_BANDWIDTH.into()),
    };
    // Without runtime checks, as the kernels it is the yardstick for run (kernels.rs::kernel):
    // its loop stops at arrayLength(&src), and `dst` is as long as `src`.
    let module = if super::kernels::shader_checks() {
        device.create_shader_module(desc)
    } else {
        // SAFETY: every index is below arrayLength(&src) = arrayLength(&dst) (both buffers
        // are `bytes` long, allocated above).
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("copy_bandwidth"),
        layout: None,
        module: &module,
        entry_point: Some("copy_bandwidth"),
        compilation_options: Default::default(),
        cache: None,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: src.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: dst.as_entire_binding() },
        ],
    });
    // Enough workgroups to fill any GPU; each invocation then copies a few vec4.
    let groups = ((bytes / 16).div_ceil(256) as u32).clamp(1, 16384);
    let kernel = |enc: &mut wgpu::CommandEncoder| {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    };
    let copy = |enc: &mut wgpu::CommandEncoder| enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
    // One of each first: the first touch of the memory, pipeline creation and the submission
    // path are not bandwidth.
    time(1, &kernel)?;
    time(1, &copy)?;
    let rate = |seconds: f64| 2.0 * (bytes * REPEATS as u64) as f64 / seconds;
    let fastest = |encode: &dyn Fn(&mut wgpu::CommandEncoder)| -> anyhow::Result<f64> {
        (0..ROUNDS).try_fold(f64::INFINITY, |best, _| Ok(best.min(time(REPEATS, encode)?)))
    };
    let by_kernel = rate(fastest(&kernel)?);
    let by_copy = rate(fastest(&copy)?);
    log::debug!("wgpu copy bandwidth: compute copy {:.0} GB/s, buffer copy {:.0} GB/s", by_kernel / 1e9, by_copy / 1e9);
    Ok(by_kernel.max(by_copy))
}
