//! What the CUDA backend decides before it allocates anything (the schedule, the sweep kernel,
//! the buffers the kernels index in 32 bits, the device memory the plan needs), and the
//! context it decides it on.
//!
//! [`check_plan`] asks the same of a case without building its backend: `knudsen run` asks
//! it in the first coarse level's set-up, before that level's backend is built, so that a
//! case this device cannot run is refused before the coarse levels have run (and taken their
//! time) instead of after.

use super::fused;
use crate::backend::fused::FusedPlan;
use crate::backend::gpu_io;
use crate::backend::wgpu::layout::MSTRIDE;
use crate::backend::wgpu::schedule::{self, GpuLimits, GpuSchedule};
use crate::problem::Problem;
use anyhow::{anyhow, Context};
use cudarc::driver::CudaContext;
use std::sync::{Arc, Mutex};

pub struct Planned {
    pub name: String,
    pub sched: GpuSchedule,
    pub fused_plan: Result<FusedPlan, String>,
    /// The cell records computed on the device (`KNUDSEN_CELL_RECORDS`, default on).
    pub records_on_device: bool,
}

/// The context of the device this process uses ([`crate::backend::device_slot`] modulo the
/// devices present), bound to the calling thread: the kept one while contexts are kept
/// ([`keep_context`]).
pub fn context() -> anyhow::Result<Arc<CudaContext>> {
    let count = CudaContext::device_count().context("counting CUDA devices")?.max(1) as usize;
    let ordinal = crate::backend::device_slot() % count;
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = kept.as_ref().filter(|c| c.ordinal() == ordinal) {
        ctx.bind_to_thread().context("binding the kept CUDA context")?;
        return Ok(ctx.clone());
    }
    let ctx = CudaContext::new(ordinal).with_context(|| format!("creating a CUDA context on device {ordinal}"))?;
    if KEEPING.load(std::sync::atomic::Ordering::SeqCst) {
        *kept = Some(ctx.clone());
    }
    Ok(ctx)
}

static KEEPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static KEPT: Mutex<Option<Arc<CudaContext>>> = Mutex::new(None);

/// While on, the context [`context`] makes is kept, so that the backends built one after the
/// other (the coarse start's levels, then the case) share the device's primary context
/// instead of the driver destroying it when one backend drops and creating it again for the
/// next. Off releases it. Memory a dropped backend freed returns to the device at the next
/// synchronisation (the default pool's release threshold is 0), which [`plan`] makes before
/// it reads the free memory.
pub fn keep_context(on: bool) {
    KEEPING.store(on, std::sync::atomic::Ordering::SeqCst);
    if !on {
        let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(kept);
    }
}

/// The refusals [`super::create`] would make for `p` before it allocates: on the
/// device this process uses, with its free memory now. The driver must answer
/// ([`super::available`]).
pub fn check_plan(p: &Problem, budget_bytes: Option<u64>) -> anyhow::Result<()> {
    let ctx = context()?;
    plan(&ctx, p, budget_bytes).map(|_| ())
}

/// The plan for `budget_bytes` of distribution storage (default: half the device memory),
/// refused where the kernels cannot index a buffer or the device has not the memory free.
pub fn plan(ctx: &CudaContext, p: &Problem, budget_bytes: Option<u64>) -> anyhow::Result<Planned> {
    let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
    let total = ctx.total_mem().context("querying device memory")? as u64;
    let budget = budget_bytes.unwrap_or(total / 2);
    let f64 = super::wants_f64(p);
    let value_bytes = crate::backend::gpu_bytes_per_value(f64);
    let sched = schedule::schedule(
        &p.vgrid.octant_members(),
        &p.vgrid.xi,
        p.grid.dims(),
        budget,
        &GpuLimits::cuda(total),
        schedule::slice_binding_cap_from_env(),
        p.config.solver.scheme.slices(),
        value_bytes,
    )
    .map_err(|e| anyhow!("{name} cannot run this case: {e}"))?;
    let layout = gpu_io::table_layout(p)?;
    // The kernels index every buffer but the slices in 32 bits (schedule::MAX_INDEXED_BINDING).
    let cells = p.grid.cells();
    for (what, floats) in [
        ("bnd", layout.bnd_len),
        ("incident", layout.incident_len),
        ("cells", cells * 12),
        ("moments", cells * MSTRIDE),
    ] {
        anyhow::ensure!(
            // 32-bit element indices: the limit counts f32-sized elements whatever the type.
            floats as u64 * 4 <= schedule::MAX_INDEXED_BINDING,
            "{name}: the `{what}` buffer ({} MiB) exceeds the {} MiB the kernels can index; use the CPU backend, or fewer cells or (with specular and periodic faces) velocity points",
            (floats as u64 * value_bytes as u64) >> 20,
            schedule::MAX_INDEXED_BINDING >> 20
        );
    }
    let block_shared = ctx
        .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .ok()
        .map(|b| b as u32);
    let fused_plan = fused::choose(p, budget, ctx.compute_capability()?, block_shared)?;
    let distribution = fused_plan.as_ref().map_or(sched.distribution_bytes, |f| f.bytes());
    // Refuse a plan that cannot fit before allocating any of it; what a backend dropped
    // before this one freed is returned to the device at a synchronisation.
    ctx.synchronize().context("synchronising the CUDA context")?;
    let (free, _) = ctx.mem_get_info().context("querying free device memory")?;
    let records_on_device = match gpu_io::records_from_env(gpu_io::RecordsAt::Device)? {
        gpu_io::RecordsAt::Device => true,
        gpu_io::RecordsAt::Host => false,
        gpu_io::RecordsAt::DeviceF32 if f64 => {
            anyhow::bail!("KNUDSEN_CELL_RECORDS=device-f32: the f64 sweep (solver.precision \"f64\") takes f64 records")
        }
        gpu_io::RecordsAt::DeviceF32 => {
            anyhow::bail!("KNUDSEN_CELL_RECORDS=device-f32: the CUDA backend's records are f64 (device) or host")
        }
    };
    // The fields the cell records are computed from (records.rs), beside the records.
    let record_fields = if records_on_device { (cells * gpu_io::RECORD_FIELDS * 8) as u64 } else { 0 };
    let need = distribution
        + sched.field_bytes
        + record_fields
        + value_bytes as u64 * (layout.bnd_len + layout.incident_len) as u64;
    anyhow::ensure!(
        need <= free as u64,
        "{name}: the plan needs {} MiB of device memory ({} MiB of distribution storage); {} MiB are free; lower --memory-budget-mib",
        need >> 20,
        distribution >> 20,
        free >> 20
    );
    Ok(Planned { name, sched, fused_plan, records_on_device })
}
