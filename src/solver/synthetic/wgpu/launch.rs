//! Queueing work: launches of the stages (one compute pass per submission, parameters in
//! a ring of uniform slots), copies, submission and reading back.

use super::kernels::SynParams;
use super::{buffer, WgpuSynthetic, SLOT, SLOTS};
use anyhow::{anyhow, Context};

/// Vector bind groups kept at most (a W-cycle on the paper cube uses a few hundred).
const GROUPS_CACHED: usize = 4096;

impl WgpuSynthetic {
    /// Queue one launch of `pipeline` over `groups` workgroups (2D when needed).
    pub(super) fn launch(
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
    pub(super) fn vector_group(&self, vectors: [Option<&wgpu::Buffer>; 4]) -> wgpu::BindGroup {
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
        let mut groups = self.groups.borrow_mut();
        // GMRES's vectors rotate through the cycle's work slots, so combinations keep
        // appearing; a bound keeps the cache (and the buffers it holds) small.
        if groups.len() >= GROUPS_CACHED {
            groups.clear();
        }
        groups.insert(bufs, g.clone());
        g
    }

    /// Queue a copy or clear (after the open pass).
    pub(super) fn encode(&self, f: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut pending = self.pending.borrow_mut();
        pending.pass = None;
        let enc = pending.encoder.get_or_insert_with(|| {
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("synthetic") })
        });
        f(enc);
    }

    /// Submit what is queued, its parameters first.
    pub(super) fn flush(&self) {
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
    pub(super) fn read(
        &self,
        src: &wgpu::Buffer,
        floats: usize,
        staging: Option<&wgpu::Buffer>,
    ) -> anyhow::Result<Vec<f32>> {
        let bytes = floats as u64 * 4;
        let owned;
        let dst = match staging {
            Some(s) => s,
            None => {
                owned = buffer(
                    &self.device,
                    "syn read",
                    bytes,
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                );
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
        crate::backend::wgpu::faults::wait(&self.device, None).context("the synthetic solve")?;
        rx.recv().context("the map callback never ran")?.map_err(|e| anyhow!("reading back: {e}"))?;
        let out = {
            let view = slice.get_mapped_range().map_err(|e| anyhow!("mapping: {e:?}"))?;
            bytemuck::cast_slice::<_, f32>(&view).to_vec()
        };
        dst.unmap();
        Ok(out)
    }
}
