//! The wgpu backend's plan, made before its device is opened or anything allocated: the
//! schedule under the adapter's limits, the partner tables against its binding limit, the
//! precision (and `KNUDSEN_CELL_RECORDS`) against its features, and the sweep kernel.

use super::schedule::{self, GpuLimits, GpuSchedule};
use super::{fused, real, WgpuBackend, WgpuOptions};
use crate::problem::Problem;
use anyhow::anyhow;

impl WgpuBackend {
    /// What [`Self::with_adapter`] decides before it opens the device or allocates: the
    /// schedule under the adapter's limits, the partner tables against its binding limit, and
    /// the sweep kernel. Its refusals are the case's: `knudsen run` asks it once the first
    /// coarse level's backend has chosen the adapter (and opened its device), before that
    /// level sweeps, so that a case this adapter cannot run is refused before the levels run.
    pub fn check_plan(
        problem: &Problem,
        budget_bytes: u64,
        opts: &WgpuOptions,
        adapter: &wgpu::Adapter,
    ) -> anyhow::Result<()> {
        let requested = opts.limits.clone().unwrap_or_else(|| adapter.limits());
        Self::plan(problem, budget_bytes, opts, adapter, &requested).map(|_| ())
    }

    pub(super) fn plan(
        p: &Problem,
        budget_bytes: u64,
        opts: &WgpuOptions,
        adapter: &wgpu::Adapter,
        requested: &wgpu::Limits,
    ) -> anyhow::Result<(GpuSchedule, Result<crate::backend::fused::FusedPlan, String>)> {
        let info = &adapter.get_info();
        if let Some(why) = real::f64_refusal(p, adapter.features(), &info.name) {
            anyhow::bail!(why);
        }
        // A `KNUDSEN_CELL_RECORDS` the adapter or the precision cannot take.
        real::records_stage(p, adapter.features().contains(wgpu::Features::SHADER_F64))?;
        let f64 = real::wants_f64(p);
        let vb = crate::backend::gpu_bytes_per_value(f64);
        let limits = GpuLimits::from_wgpu(requested);
        let sched = schedule::schedule(
            &p.vgrid.octant_members(),
            &p.vgrid.xi,
            p.grid.dims(),
            budget_bytes,
            &limits,
            opts.max_slice_binding.or_else(schedule::slice_binding_cap_from_env),
            p.config.solver.scheme.slices(),
            vb,
        )
        .map_err(|e| anyhow!("{} cannot run this case: {e}", info.name))?;
        let layout = crate::backend::gpu_io::table_layout(p)?;
        let max_binding = requested.max_storage_buffer_binding_size.min(schedule::MAX_INDEXED_BINDING);
        for (what, floats) in [("bnd", layout.bnd_len), ("incident", layout.incident_len)] {
            anyhow::ensure!(
                (floats * vb) as u64 <= max_binding,
                "{}: the `{what}` buffer ({} MiB, mostly specular/periodic partner data) exceeds the adapter's {} MiB storage binding limit; use the CUDA or CPU backend, or fewer velocity points",
                info.name,
                ((floats * vb) as u64) >> 20,
                max_binding >> 20
            );
        }
        let fused_plan = fused::choose(p, budget_bytes, requested, opts.sweep, opts.fused_tile)?;
        Ok((sched, fused_plan))
    }
}
