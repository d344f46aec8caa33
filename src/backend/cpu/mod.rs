//! The CPU reference backend: f64, rayon across the velocities of a batch.
//!
//! Each iteration walks the batches of the plan; for each batch it visits the z-slices in
//! upwind order and runs three stages, the same stages the GPU backends run as kernels:
//!
//! 1. [`sweep_slice`]: every batch velocity updates its slice in place (one slice per
//!    velocity suffices: the z-upwind value of a cell is read just before it is overwritten);
//! 2. [`moment_slice`]: the slice's contribution is added to the raw moments of its cells;
//! 3. [`wall_flux_slice`]: the slice's contribution is added to the incident fluxes of the
//!    box-face cells it touches;
//! 4. [`wall_load_slice`]: the same for the body wall faces of the slice, with the momentum
//!    and energy the molecules carry in (surface loads).
//!
//! Determinism: every cell and face-cell sum runs over the batch velocities in their fixed
//! order and over batches in plan order, whatever the thread count; threads only split the
//! independent cells or velocities. Results are bit-identical for any `--threads`.
//!
//! Layout: the slice storage is `[velocity][j][i]`, so one velocity's sweep walks memory
//! contiguously, and the moment stage reads each velocity's row contiguously.

pub mod context;
pub mod gauss;
pub mod lane_tables;
pub mod lanes;
pub mod levels;
pub mod stages;
pub mod sweep2;

use super::{Backend, SweepInput, SweepOutput, CPU_BYTES_PER_VALUE};
use crate::config::Precision;
use crate::plan::{plan_batches, BatchPlan, GAUSS_TABLE_MAX_BYTES};
use crate::problem::Problem;
use gauss::GaussTables;
use rayon::prelude::*;
pub use stages::{
    downwind_faces, face_cells, moment_slice, sweep_slice, upwind_faces, wall_flux_slice, wall_load_slice,
};
use std::sync::Arc;
use sweep2::{face_out, SliceSlots};

pub struct CpuBackend {
    problem: Arc<Problem>,
    plan: BatchPlan,
    slices: Vec<f64>,
    /// The per-cell 1D Gaussians of the iteration ([`GaussTables`]); empty when they would
    /// not fit [`GAUSS_TABLE_MAX_BYTES`].
    gauss: GaussTables,
    /// `solver.precision = "f32"`: the vectorised sweep ([`lanes`]), its storage and tables.
    f32: bool,
    slices32: Vec<f32>,
    lane_tables: lanes::LaneTables,
}

impl CpuBackend {
    pub fn new(problem: Arc<Problem>, budget_bytes: u64) -> anyhow::Result<Self> {
        if let Some(why) = f32_scheme_refusal(&problem.config) {
            anyhow::bail!(why);
        }
        let plan = cpu_plan(&problem, budget_bytes)?;
        check_host_storage(&plan, crate::plan::available_host_bytes())?;
        Ok(Self::with_plan(problem, plan))
    }

    /// Replace the plan (tests use it to compare batchings); storage is resized to fit.
    pub fn with_plan(problem: Arc<Problem>, plan: BatchPlan) -> Self {
        let slots = cpu_slices(problem.config.solver.scheme);
        let f32 = Precision::on_cpu(problem.config.solver.precision) == Precision::F32;
        let nxy = problem.grid.slice_cells();
        let (slices, slices32) = if f32 {
            (Vec::new(), vec![0.0; slots * plan.max_batch.div_ceil(lanes::L) * lanes::L * nxy])
        } else {
            (vec![0.0; plan.max_batch * nxy * slots], Vec::new())
        };
        Self { problem, plan, slices, gauss: GaussTables::default(), f32, slices32, lane_tables: Default::default() }
    }
}

/// Refuse a plan whose distribution storage exceeds the host memory `available` (a budget
/// set above it would end in a failed allocation, an abort, instead of an error naming it).
pub fn check_host_storage(plan: &BatchPlan, available: Option<u64>) -> anyhow::Result<()> {
    match available {
        Some(avail) if plan.distribution_bytes() > avail => anyhow::bail!(
            "the cpu backend's distribution storage, {:.1} GiB at this memory budget (solver.memory_budget_mib, --memory-budget-mib), exceeds the {:.1} GiB of host memory available; lower the budget (the batches then hold fewer velocities)",
            plan.distribution_bytes() as f64 / 1073741824.0,
            avail as f64 / 1073741824.0
        ),
        _ => Ok(()),
    }
}

/// Slices the CPU backend keeps per velocity: two at first order (levels.rs), the scheme's
/// four, swept in place, at second order.
pub fn cpu_slices(scheme: crate::config::Scheme) -> usize {
    scheme.slices().max(2)
}

/// The CPU plan: per batch velocity two slices (the level being swept and the one before,
/// whose moments are summed meanwhile: levels.rs) of f64, or of f32 under
/// `solver.precision = "f32"`; four f64 slices, swept in place, for the second-order scheme.
pub fn cpu_plan(p: &Problem, budget_bytes: u64) -> Result<BatchPlan, crate::plan::PlanError> {
    let slices = cpu_slices(p.config.solver.scheme);
    plan_batches(&p.vgrid.octant_members(), p.grid.slice_cells(), value_bytes(p), slices, budget_bytes)
}

/// Why the CPU backend refuses `cfg`'s precision and scheme, if it does: its f32 sweep
/// ([`lanes`]) is first order only (the GPU backends sweep both schemes in f32).
pub fn f32_scheme_refusal(cfg: &crate::config::Config) -> Option<String> {
    let s = &cfg.solver;
    (Precision::on_cpu(s.precision) == Precision::F32 && s.scheme != crate::config::Scheme::FirstOrder).then(|| {
        "solver.precision / --precision \"f32\": the CPU backend's f32 sweep is first order only; use \"f64\" (its default) with the second-order scheme, or a GPU backend".to_string()
    })
}

/// Bytes per stored distribution value on the CPU: 8, or 4 in the f32 mode.
pub fn value_bytes(p: &Problem) -> usize {
    match Precision::on_cpu(p.config.solver.precision) {
        Precision::F64 => CPU_BYTES_PER_VALUE,
        Precision::F32 => 4,
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> &'static str {
        "cpu"
    }

    fn bytes_per_value(&self) -> usize {
        value_bytes(&self.problem)
    }

    fn device(&self) -> String {
        if self.f32 {
            format!("{}, f32", cpu_name())
        } else {
            cpu_name()
        }
    }

    fn residual_floor(&self) -> f64 {
        // f stored in f32: the same floor as the GPU backends' (wgpu/mod.rs measures it),
        // though the moments are summed in f64 here.
        if self.f32 {
            1e-5
        } else {
            0.0
        }
    }

    fn plan_summary(&self) -> super::PlanSummary {
        self.plan.summary()
    }

    fn copy_bandwidth(&mut self) -> anyhow::Result<f64> {
        Ok(super::bandwidth::host_copy_bandwidth())
    }

    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()> {
        let p = &*self.problem;
        let nxy = p.grid.slice_cells();
        let nz = p.grid.nz();
        out.clear();
        if self.f32 {
            self.lane_tables.fill(p, input.eq);
            lanes::sweep_all(p, &self.plan, input, &self.lane_tables, &mut self.slices32, out);
            return Ok(());
        }
        // KNUDSEN_GAUSS_TABLES=0 evaluates f^S directly (performance comparisons).
        let use_tables = GaussTables::bytes(p) <= GAUSS_TABLE_MAX_BYTES
            && std::env::var("KNUDSEN_GAUSS_TABLES").map_or(true, |v| v != "0");
        if use_tables {
            self.gauss.fill(p, input.eq);
        }
        let gauss = use_tables.then_some(&self.gauss);
        let slots = p.config.solver.scheme.slices();
        for batch in &self.plan.batches {
            let level = |step: usize| if batch.octant.negative(2) { nz - 1 - step } else { step };
            let stages = |k: usize, slices: &[f64], out: &mut SweepOutput| {
                let stored = SliceSlots { data: slices, nxy, slots };
                moment_slice(p, batch, k, stored, &mut out.raw[k * nxy..(k + 1) * nxy]);
                let value = |b: usize, s: usize, axis: usize| face_out(stored, b, s, axis);
                wall_flux_slice(p, batch, k, &value, Some(&mut out.incident), &mut out.exits);
                wall_load_slice(p, batch, k, &value, &mut out.wall);
            };
            let store = &mut self.slices[..batch.velocities.len() * nxy * cpu_slices(p.config.solver.scheme)];
            if slots > 1 {
                // Second order: the stored face values are overwritten in place, level by level.
                for step in 0..nz {
                    let k = level(step);
                    store.par_chunks_mut(nxy * slots).zip(batch.velocities.par_iter()).for_each(|(f, &v)| {
                        sweep2::sweep_slice2(p, input, gauss, v as usize, batch.octant, k, step == 0, f)
                    });
                    stages(k, store, out);
                }
            } else {
                let (t_levels, t_last) = levels::march(
                    nz,
                    store,
                    |step, prev, cur| {
                        let k = level(step);
                        cur.par_chunks_mut(nxy).zip(prev.par_chunks(nxy)).zip(batch.velocities.par_iter()).for_each(
                            |((f, fp), &v)| sweep_slice(p, input, gauss, v as usize, batch.octant, k, step == 0, fp, f),
                        );
                    },
                    |step, values| stages(level(step), values, out),
                );
                log::trace!("cpu f64 levels {t_levels:.4} s, last level's stages {t_last:.4} s");
            }
        }
        Ok(())
    }
}

/// The CPU model name from /proc/cpuinfo, with the thread count.
pub fn cpu_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model} ({} threads)", rayon::current_num_threads())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_beyond_the_host_memory_is_refused() {
        let p = Problem::new(&crate::config::walled_box([4, 4, 4], 10));
        let plan = cpu_plan(&p, 1 << 20).unwrap();
        let need = plan.distribution_bytes();
        assert!(check_host_storage(&plan, Some(need)).is_ok());
        assert!(check_host_storage(&plan, None).is_ok(), "unknown memory refuses nothing");
        let e = check_host_storage(&plan, Some(need - 1)).unwrap_err().to_string();
        assert!(e.contains("memory_budget_mib") && e.contains("host memory available"), "{e}");
    }
}
