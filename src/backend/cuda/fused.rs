//! Host side of the fused on-chip sweep (shaders/cuda/sweep_fused.cu; the plan in
//! backend/fused.rs): its buffers and, per wave, one `sweep_fused` launch per tile
//! diagonal followed by the `fused_moments` launch that adds that diagonal's partials.

use super::super::fused::{self, FusedPlan, BLOCK_VELOCITIES, PARTIALS};
use super::super::gpu_tables::velocity_table;
use crate::plan::PlanError;
use crate::problem::Problem;
use anyhow::Context;
use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Which sweep kernel a case gets (`fused::decide`): the fused one wherever it applies and
/// fits, unless `KNUDSEN_SWEEP` says otherwise.
pub fn choose(
    p: &Problem,
    budget: u64,
    capability: (i32, i32),
    block_shared: Option<u32>,
) -> anyhow::Result<Result<FusedPlan, String>> {
    let tile = fused::cuda_tile(p).map_err(|PlanError(e)| anyhow::anyhow!(e))?;
    fused::decide(None, || fused::cuda_plan(p, budget, tile, Some(capability), block_shared))
}

pub struct Fused {
    pub plan: FusedPlan,
    sweep: CudaFunction,
    moments: CudaFunction,
    tables: Vec<CudaSlice<f32>>,
    ranges: Vec<CudaSlice<u32>>,
    xface: CudaSlice<f32>,
    yface: CudaSlice<f32>,
    partials: CudaSlice<f32>,
}

impl Fused {
    pub fn new(
        p: &Problem,
        plan: FusedPlan,
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
    ) -> anyhow::Result<Self> {
        let load = |n: &str| module.load_function(n).with_context(|| format!("loading kernel {n}"));
        let sweep = load("sweep_fused")?;
        let shared = fused::shared_bytes(plan.tile, plan.second);
        sweep
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )
            .context("allowing sweep_fused its shared memory")?;
        // The most shared memory the SM can give, so that the blocks `__launch_bounds__` asks
        // for fit beside each other (the driver's default may keep part of it as L1).
        sweep
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                100,
            )
            .context("asking the most shared memory for sweep_fused")?;
        log::debug!(
            "sweep_fused: {} registers, {} B static + {shared} B dynamic shared memory",
            sweep.num_regs().unwrap_or(-1),
            sweep.shared_size_bytes().unwrap_or(-1)
        );
        let mut tables = Vec::new();
        let mut ranges = Vec::new();
        for w in &plan.waves {
            let t: Vec<f32> = velocity_table(p, &w.velocities).into_iter().flatten().collect();
            tables.push(stream.clone_htod(&t)?);
            ranges.push(stream.clone_htod(&w.ranges)?);
        }
        let [x, y] = plan.face_floats();
        let alloc = |n: usize, what: &str| {
            stream.alloc_zeros::<f32>(n.max(1)).with_context(|| format!("allocating the fused sweep's {what}"))
        };
        Ok(Self {
            sweep,
            moments: load(match plan.moments_per_thread {
                1 => "fused_moments_split",
                _ => "fused_moments",
            })?,
            tables,
            ranges,
            xface: alloc(x, "x-face buffer")?,
            yface: alloc(y, "y-face buffer")?,
            partials: alloc(plan.partial_floats(), "moment partials")?,
            plan,
        })
    }

    pub fn device_bytes(&self) -> usize {
        let f = [&self.xface, &self.yface, &self.partials].into_iter().chain(&self.tables).map(|b| b.num_bytes());
        f.sum::<usize>() + self.ranges.iter().map(|b| b.num_bytes()).sum::<usize>()
    }

    /// Sweep every wave; `moments`, `incident` and `wall_sums` must be zero on entry.
    pub fn launch_all(
        &mut self,
        stream: &Arc<CudaStream>,
        cells: &CudaSlice<f32>,
        bnd: &CudaSlice<f32>,
        moments: &mut CudaSlice<f32>,
        incident: &mut CudaSlice<f32>,
        wall_sums: &mut CudaSlice<f32>,
    ) -> anyhow::Result<()> {
        let ncells = self.plan.dims.iter().product::<usize>() as u32;
        const REDUCE_BLOCK: u32 = 128;
        // fused_moments.cu: NMOM (the 13 moments, PARTIALS) / MPT threads per cell.
        let threads_per_cell = (PARTIALS / self.plan.moments_per_thread) as u32;
        for (w, wave) in self.plan.waves.iter().enumerate() {
            let blocks = wave.blocks() as u32;
            for d in 0..self.plan.diagonals() {
                let (lo, hi) = self.plan.diagonal(d);
                let (diag, a_lo) = (d as u32, lo as u32);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, (hi - lo + 1) as u32, 1),
                    block_dim: (BLOCK_VELOCITIES as u32, 1, 1),
                    shared_mem_bytes: fused::shared_bytes(self.plan.tile, self.plan.second),
                };
                let mut l = stream.launch_builder(&self.sweep);
                l.arg(&diag).arg(&a_lo).arg(cells).arg(bnd).arg(&self.tables[w]);
                l.arg(&mut self.xface).arg(&mut self.yface).arg(&mut self.partials).arg(&mut *incident);
                // SAFETY: the argument list matches sweep_fused.cu's signature; the grid
                // covers the wave's blocks and the diagonal's tiles, as the kernel assumes.
                unsafe { l.launch(cfg) }.context("launching sweep_fused")?;
                let cfg = LaunchConfig {
                    grid_dim: ((ncells * threads_per_cell).div_ceil(REDUCE_BLOCK), 1, 1),
                    block_dim: (REDUCE_BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut l = stream.launch_builder(&self.moments);
                l.arg(&diag).arg(&blocks).arg(&self.ranges[w]).arg(&self.partials).arg(cells);
                l.arg(&mut *moments).arg(&mut *incident).arg(&mut *wall_sums);
                // SAFETY: the argument list matches fused_moments' signature.
                unsafe { l.launch(cfg) }.context("launching fused_moments")?;
            }
        }
        Ok(())
    }
}
