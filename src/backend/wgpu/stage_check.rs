//! One stage at a time on the GPU, for comparison with the CPU twins (tests/gpu_stages.rs).

use super::kernels::{encode_moment_slice, encode_sweep_slice, encode_wall_load_slice};
use super::layout::PARAMS_STRIDE;
use super::WgpuBackend;
use crate::backend::SweepInput;
use anyhow::anyhow;

/// The moment, incident and wall sums, and each chunk's slice storage.
pub type StageOutput = ([Vec<f32>; 3], Vec<Vec<f32>>);

impl WgpuBackend {
    /// Run only the first two z-steps of dispatch group 0 of wave 0 (sweep_slice,
    /// moment_slice, wall_load_slice, twice) and return the moment sums, the incident sums,
    /// the wall sums and the slice storage of each chunk of that group, so each stage can be
    /// compared with its CPU twin.
    pub fn first_steps_for_check(&mut self, input: &SweepInput) -> anyhow::Result<StageOutput> {
        let nz = self.problem.grid.nz();
        anyhow::ensure!(
            self.slice_kernels.is_some(),
            "the stage check needs the slice path (the fused sweep runs instead)"
        );
        // The twins are f32, as is this read-back; the f64 path is checked against the CPU's
        // f64 sweep instead (tests/wgpu_f64.rs).
        anyhow::ensure!(!self.f64, "the stage check compares the f32 kernels with their twins");
        let mut enc = self.begin_iteration(input);
        let k = self.slice_kernels.as_ref().expect("checked above");
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            let count = self.schedule.waves[0].groups[0].count;
            for step in 0..2.min(nz) {
                let off = (Self::params_index(self.schedule.max_groups(), nz, 0, 0, step) * PARAMS_STRIDE) as u32;
                encode_sweep_slice(
                    &mut pass,
                    &k.sweep,
                    &self.sweep_groups[0][0],
                    off,
                    (count, k.rows),
                    self.max_per_dim,
                );
                encode_moment_slice(&mut pass, &k.moment, &self.moment_groups[0][0], off, self.schedule.moment_grid);
                let faces = self.slice_walls[step].max(self.slice_walls[nz - 1 - step]);
                if faces > 0 {
                    let wg = &self.wall_groups[0][0];
                    encode_wall_load_slice(&mut pass, &k.wall_load, wg, off, faces, self.max_per_dim);
                }
            }
        }
        let read = |enc: &mut wgpu::CommandEncoder, b: &wgpu::Buffer| {
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: b.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            enc.copy_buffer_to_buffer(b, 0, &staging, 0, b.size());
            staging
        };
        let chunks = self.schedule.waves[0].groups[0].chunks;
        let bufs: Vec<wgpu::Buffer> = [&self.moments, &self.incident, &self.wall_sums]
            .into_iter()
            .chain(&self.slices[..chunks])
            .map(|b| read(&mut enc, b))
            .collect();
        self.queue.submit([enc.finish()]);
        for b in &bufs {
            b.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        }
        super::faults::wait(&self.device, None)?;
        let mut out = bufs
            .iter()
            .map(|b| -> anyhow::Result<Vec<f32>> {
                let view = b.slice(..).get_mapped_range().map_err(|e| anyhow!("mapping: {e:?}"))?;
                Ok(bytemuck::cast_slice(&view).to_vec())
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let slices = out.split_off(3);
        let sums: [Vec<f32>; 3] = out.try_into().expect("three sums");
        Ok((sums, slices))
    }
}
