//! The GPU host scheduler: a pure function from the problem's sizes, the adapter's limits
//! and a memory budget to the batches, waves and chunks the wgpu backend runs.
//!
//! - A **batch** is a set of velocities of one octant (as on the CPU).
//! - A **wave** is the set of batches swept together: one dispatch per z-step covers all
//!   of them, so the GPU sees up to `budget / slice bytes` independent velocities, not one
//!   octant. Its +z velocities come first, its -z velocities after (they sweep different
//!   slices at the same step).
//! - A **chunk** is the part of a wave whose slices live in one storage binding; a wave is
//!   cut into near-equal chunks so that no binding exceeds the adapter's limit.

use super::group;
pub use super::group::{Chunk, Group, GHOST};
pub use super::limits::{GpuLimits, MAX_INDEXED_BINDING};
use crate::plan::{plan_batches, Batch, PlanError};

/// Requirements of the kernels (keep in sync with the shaders): every kernel binds three
/// storage buffers and at least one slice binding, four in all, wgpu's downlevel minimum
/// (`kernels.rs`); more slice bindings where the adapter allows (group.rs).
pub const KERNEL_STORAGE_BUFFERS: u32 = 4;
/// In f32; twice that in f64 (`real` in shaders/moment_slice.wgsl).
pub const MOMENT_WORKGROUP_BYTES: u32 = (super::layout::NACC as u32) * super::layout::MOMENT_WG * 4;

/// Velocities per vec4 of slice storage: moment_slice.wgsl reads slices as vec4, so chunks
/// and their +z/-z split fall on whole quads. Keep in sync with that shader.
pub const LANES: usize = 4;
#[derive(Debug, Clone, PartialEq)]
pub struct Wave {
    pub batches: Vec<Batch>,
    pub chunks: Vec<Chunk>,
    /// The chunks one dispatch covers (wgpu; CUDA keeps a wave in one chunk).
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GpuSchedule {
    pub waves: Vec<Wave>,
    /// Velocity slots per chunk: the stride of slice storage, a multiple of the sweep's
    /// workgroup size where the binding allows, so rows start aligned.
    pub chunk_stride: usize,
    /// Slice buffers allocated (the most chunks in any wave).
    pub slice_buffers: usize,
    /// Slice bindings each wgpu kernel declares: the most chunks in any group.
    pub slice_bindings: usize,
    pub slice_cells: usize,
    /// Slices per velocity (`config::Scheme::slices`): each slice buffer holds `slots`
    /// slices of `slice_cells x chunk_stride` values, one after another.
    pub slots: usize,
    /// Bytes of all slice buffers: the distribution-function storage.
    pub distribution_bytes: u64,
    /// Bytes of the per-cell buffers (coefficients, moments) and face buffers.
    pub field_bytes: u64,
    /// Workgroup grid of the moment kernel, (x, y), covering the slice cells.
    pub moment_grid: (u32, u32),
}

impl GpuSchedule {
    pub fn max_batch(&self) -> usize {
        self.waves.iter().flat_map(|w| w.batches.iter()).map(|b| b.velocities.len()).max().unwrap_or(0)
    }
    pub fn batch_count(&self) -> usize {
        self.waves.iter().map(|w| w.batches.len()).sum()
    }
    /// The most dispatch groups in any wave.
    pub fn max_groups(&self) -> usize {
        self.waves.iter().map(|w| w.groups.len()).max().unwrap_or(0)
    }
    pub fn in_flight(&self) -> usize {
        self.waves.iter().map(|w| w.chunks.iter().map(|c| c.velocities.len()).sum::<usize>()).max().unwrap_or(0)
    }
}

/// Workgroup grid (x, y) with at most `max` per dimension covering `n` groups.
pub fn grid_2d(n: usize, max: u32) -> Option<(u32, u32)> {
    let x = n.min(max as usize).max(1);
    let y = n.div_ceil(x);
    (y <= max as usize).then_some((x as u32, y as u32))
}

/// `KNUDSEN_MAX_SLICE_BINDING_MIB`, a diagnostic: cap every slice binding (chunk) of either
/// GPU backend at this many MiB, to time the same case split into more chunks
/// (docs/performance.md, "Why wgpu trails CUDA on large rows").
pub fn slice_binding_cap_from_env() -> Option<u64> {
    let v = std::env::var("KNUDSEN_MAX_SLICE_BINDING_MIB").ok()?;
    match v.parse::<f64>() {
        Ok(mib) if mib > 0.0 => Some((mib * 1048576.0) as u64),
        _ => {
            log::warn!("KNUDSEN_MAX_SLICE_BINDING_MIB={v} is not a positive number; ignored");
            None
        }
    }
}

/// Plan a run. Refuses, with the reason, anything the adapter cannot hold, before any
/// allocation. `slots` slices per velocity of `value_bytes` per value (4; 8 for the f64
/// slice kernels of either GPU backend).
// Each argument is one the callers already hold; a struct for two of them would only move
// the list.
#[allow(clippy::too_many_arguments)]
pub fn schedule(
    octants: &[Vec<u32>; 8],
    xi: &[[f64; 3]],
    dims: [usize; 3],
    budget_bytes: u64,
    limits: &GpuLimits,
    max_slice_binding: Option<u64>,
    slots: usize,
    value_bytes: usize,
) -> Result<GpuSchedule, PlanError> {
    let [nx, ny, nz] = dims;
    let nxy = nx * ny;
    let cells = (nxy * nz) as u64;
    let binding = limits.max_storage_binding.min(limits.max_buffer);
    let need = |what: &str, bytes: u64| -> Result<(), PlanError> {
        if bytes > binding {
            Err(PlanError(format!(
                "{what} needs {bytes} bytes in one binding; the adapter allows {binding} (max_storage_buffer_binding_size / max_buffer_size)"
            )))
        } else {
            Ok(())
        }
    };
    let vb = value_bytes as u64;
    need("the cell coefficients", cells * 12 * vb)?;
    need("the moment sums", cells * vb * super::layout::MSTRIDE as u64)?;
    if limits.max_storage_buffers_per_stage < KERNEL_STORAGE_BUFFERS {
        return Err(PlanError(format!(
            "the kernels need {KERNEL_STORAGE_BUFFERS} storage buffers per stage; the adapter allows {}",
            limits.max_storage_buffers_per_stage
        )));
    }
    let tree = MOMENT_WORKGROUP_BYTES / 4 * value_bytes as u32;
    if limits.max_workgroup_storage < tree || limits.max_invocations_per_workgroup < super::layout::MOMENT_WG {
        return Err(PlanError(format!(
            "the moment kernel needs {tree} bytes of workgroup memory and {} invocations per workgroup",
            super::layout::MOMENT_WG
        )));
    }
    let moment_grid = grid_2d(nxy, limits.max_workgroups_per_dim)
        .ok_or_else(|| PlanError(format!("a slice of {nxy} cells exceeds the adapter's workgroup grid")))?;

    let bytes_per_velocity = (nxy * value_bytes * slots) as u64;
    let slice_binding = max_slice_binding.map_or(binding, |cap| cap.min(binding));
    // Chunks hold whole quads (LANES velocities of one octant, one vec4 of slice storage).
    let per_binding = (slice_binding / bytes_per_velocity) as usize / LANES * LANES;
    if per_binding == 0 {
        return Err(PlanError(format!(
            "the slices of {LANES} velocities ({} bytes) exceed the binding limit of {slice_binding} bytes",
            LANES as u64 * bytes_per_velocity
        )));
    }
    let total: usize = octants.iter().map(Vec::len).sum();
    let in_flight = ((budget_bytes / bytes_per_velocity) as usize).min(total);
    if in_flight == 0 {
        return Err(PlanError(format!(
            "memory budget of {budget_bytes} bytes (solver.memory_budget_mib, --memory-budget-mib) is below the {bytes_per_velocity} bytes one velocity's slice needs"
        )));
    }
    // Batches as large as the budget allows (never more than an octant), then packed into
    // waves of at most `in_flight` velocities.
    let plan = plan_batches(octants, nxy, value_bytes, slots, budget_bytes)?;
    let mut waves: Vec<Vec<Batch>> = Vec::new();
    let mut filled = 0;
    for b in plan.batches {
        let len = b.velocities.len().div_ceil(LANES) * LANES;
        if waves.is_empty() || filled + len > in_flight.max(len) {
            waves.push(Vec::new());
            filled = 0;
        }
        filled += len;
        waves.last_mut().unwrap().push(b);
    }

    let max_sweep_groups = limits.max_workgroups_per_dim as u64 * limits.max_workgroups_per_dim as u64;
    let mut stride = 0usize;
    let waves: Vec<Wave> = waves
        .into_iter()
        .map(|batches| {
            // Each batch padded with GHOST slots to whole quads (a ghost copies its batch's
            // octant, so quads never mix octants).
            let padded = |b: &Batch| {
                let n = b.velocities.len().div_ceil(LANES) * LANES;
                b.velocities.iter().copied().chain(std::iter::repeat(GHOST)).take(n).collect::<Vec<u32>>()
            };
            let up: Vec<u32> = batches.iter().filter(|b| !b.octant.negative(2)).flat_map(padded).collect();
            let down: Vec<u32> = batches.iter().filter(|b| b.octant.negative(2)).flat_map(padded).collect();
            let n_up = up.len();
            let ordered: Vec<u32> = up.into_iter().chain(down).collect();
            let n = ordered.len().div_ceil(per_binding);
            let size = ordered.len().div_ceil(n).div_ceil(LANES) * LANES;
            let chunks: Vec<Chunk> = ordered
                .chunks(size)
                .enumerate()
                .map(|(c, vs)| {
                    let start = c * size;
                    let split = n_up.clamp(start, start + vs.len()) - start;
                    debug_assert!(vs[..split].iter().all(|&v| v == GHOST || xi[v as usize][2] >= 0.0));
                    Chunk { velocities: vs.to_vec(), split }
                })
                .collect();
            stride = stride.max(size);
            Wave { batches, chunks, groups: Vec::new() }
        })
        .collect();
    // Round the stride up to the sweep workgroup where the binding has room.
    let wg = super::layout::SWEEP_WG as usize;
    let rounded = stride.div_ceil(wg) * wg;
    let chunk_stride = if rounded <= per_binding { rounded } else { stride };
    if chunk_stride.div_ceil(wg) as u64 > max_sweep_groups {
        return Err(PlanError("a chunk has more velocities than the adapter's workgroup grid can launch".into()));
    }
    let slice_buffers = waves.iter().map(|w| w.chunks.len()).max().unwrap_or(0);
    let width = group::width(limits.max_storage_buffers_per_stage);
    let mut waves = waves;
    for w in &mut waves {
        w.groups = group::groups(&w.chunks, chunk_stride, width);
    }
    // One sweep dispatch covers a whole group, so the group (not one chunk) must fit the grid.
    let largest_group = waves.iter().flat_map(|w| w.groups.iter().map(|g| g.count)).max().unwrap_or(0);
    if grid_2d(largest_group.div_ceil(wg), limits.max_workgroups_per_dim).is_none() {
        return Err(PlanError(format!(
            "a dispatch group of {largest_group} velocities exceeds the adapter's workgroup grid"
        )));
    }
    let slice_bindings = waves.iter().flat_map(|w| w.groups.iter().map(|g| g.chunks)).max().unwrap_or(1);
    let faces = 2 * (ny * nz + nx * nz + nx * ny) as u64;
    Ok(GpuSchedule {
        waves,
        chunk_stride,
        slice_buffers,
        slice_bindings,
        slice_cells: nxy,
        slots,
        distribution_bytes: slice_buffers as u64 * chunk_stride as u64 * bytes_per_velocity,
        field_bytes: cells * vb * (12 + super::layout::MSTRIDE as u64) + faces * 2 * vb + nz as u64 * 4,
        moment_grid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Quadrature;
    use crate::grid::VelocityGrid;

    fn plan(m: usize, n: usize, budget_mib: u64, limits: GpuLimits) -> Result<GpuSchedule, PlanError> {
        let v = VelocityGrid::new(m, 4.0, Quadrature::Trapezoid);
        schedule(&v.octant_members(), &v.xi, [n, n, n], budget_mib << 20, &limits, None, 1, 4)
    }

    /// 128^3 cells x 128^3 velocities on an 80 GB device with a 70000 MiB budget: 2^20
    /// velocities in flight (64 GiB of slices), which once wrapped the 32-bit slice index
    /// of the CUDA kernels. wgpu: the binding cap splits the flight into chunks whose every
    /// element index is below 2^30. CUDA: one chunk of 2^34 values, so its kernels must
    /// index the slices in 64 bits, which every access does through `slice_at`.
    #[test]
    fn the_largest_plans_keep_every_index_in_range() {
        let device = 80u64 << 30;
        // A Metal-like adapter reporting the whole memory as its binding limit.
        let wgpu_like = GpuLimits::from_wgpu(&wgpu::Limits {
            max_storage_buffer_binding_size: u32::MAX as _,
            max_buffer_size: device,
            ..wgpu::Limits::default()
        });
        // What the CUDA backend reports: no binding limit below the device memory.
        let cuda_like = GpuLimits {
            max_storage_binding: device,
            max_buffer: device,
            max_workgroups_per_dim: 65535,
            max_invocations_per_workgroup: 1024,
            max_workgroup_storage: 48 << 10,
            max_storage_buffers_per_stage: u32::MAX,
        };
        for (name, limits) in [("wgpu", wgpu_like), ("cuda", cuda_like)] {
            let s = plan(128, 128, 70000, limits).unwrap();
            // Waves of four whole octants (the budget holds 1.12 million velocities).
            assert_eq!(s.in_flight(), 1 << 20, "{name}");
            let elements = s.chunk_stride as u64 * s.slice_cells as u64;
            if name == "wgpu" {
                assert!(elements * 4 <= MAX_INDEXED_BINDING, "a slice binding of {} bytes", elements * 4);
                assert!(elements - 1 < 1 << 30, "the largest slice index, in 32 bits with room");
                assert!(s.slice_buffers >= 16);
            } else {
                assert_eq!(s.slice_buffers, 1, "CUDA keeps the wave in one chunk");
                assert!(elements > 1 << 32, "the case that needs 64-bit slice indices");
            }
            check_invariants(&s, 128, &limits);
            // The second-order scheme's four slots share each binding: still in range.
            let v = VelocityGrid::new(128, 4.0, Quadrature::Trapezoid);
            let s4 = schedule(&v.octant_members(), &v.xi, [128; 3], 70000 << 20, &limits, None, 4, 4).unwrap();
            let elements = (s4.chunk_stride * s4.slice_cells * s4.slots) as u64;
            if name == "wgpu" {
                assert!(elements * 4 <= MAX_INDEXED_BINDING && elements - 1 < 1 << 30, "{elements} values");
            }
            assert_eq!(s4.in_flight(), (1 << 20) / 4, "{name}: a quarter of the velocities fit");
            check_invariants(&s4, 128, &limits);
        }
        // Every access to the slices in the CUDA kernels goes through the 64-bit slice_at
        // (plus, for the second-order slots, a size_t slot start from slot_at).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/cuda");
        for name in ["sweep_slice.cu", "moment_slice.cu", "wall_load_slice.cu"] {
            let src = std::fs::read_to_string(dir.join(name)).unwrap();
            for (n, line) in src.lines().enumerate().filter(|(_, l)| l.contains("slices[")) {
                let wide = line.contains("slices[slice_at(")
                    || (line.contains("slice_at(")
                        && ["slot_at(", "y_in + ", "z_in + "].iter().any(|w| line.contains(w)));
                assert!(wide, "{name}:{}: {line}", n + 1);
            }
        }
    }

    fn check_invariants(s: &GpuSchedule, m: usize, limits: &GpuLimits) {
        let v = VelocityGrid::new(m, 4.0, Quadrature::Trapezoid);
        let oct = |x: u32| crate::grid::Octant::of(v.xi[x as usize]);
        let mut seen = vec![0u8; v.len()];
        for w in &s.waves {
            let in_wave = w.chunks.iter().flat_map(|c| &c.velocities).filter(|&&x| x != GHOST).count();
            assert_eq!(in_wave, w.batches.iter().map(|b| b.velocities.len()).sum::<usize>());
            for c in &w.chunks {
                assert!(c.velocities.len() <= s.chunk_stride);
                let bytes = (s.chunk_stride * s.slice_cells * s.slots * 4) as u64;
                assert!(bytes <= limits.max_storage_binding.min(limits.max_buffer));
                assert!(!c.velocities.is_empty());
                assert_eq!((c.velocities.len() % LANES, c.split % LANES), (0, 0), "partial quads");
                for quad in c.velocities.chunks(LANES) {
                    let real: Vec<u32> = quad.iter().copied().filter(|&x| x != GHOST).collect();
                    assert!(!real.is_empty(), "an all-ghost quad");
                    assert!(quad[0] != GHOST, "a quad takes its octant from its first lane");
                    assert!(real.iter().all(|&x| oct(x) == oct(real[0])), "quad mixes octants");
                }
                for (n, &vel) in c.velocities.iter().enumerate().filter(|(_, &x)| x != GHOST) {
                    seen[vel as usize] += 1;
                    assert_eq!(n < c.split, v.xi[vel as usize][2] >= 0.0, "split misplaced");
                }
            }
            for b in &w.batches {
                assert!(b.velocities.iter().all(|&x| oct(x) == b.octant));
            }
            // Groups cover the chunks in order, each within the kernels' slice bindings.
            let covered: Vec<usize> = w.groups.iter().flat_map(|g| g.first..g.first + g.chunks).collect();
            assert_eq!(covered, (0..w.chunks.len()).collect::<Vec<_>>());
            assert!(w.groups.iter().all(|g| g.chunks <= s.slice_bindings));
            assert!(s.slice_bindings <= (limits.max_storage_buffers_per_stage - 3) as usize);
        }
        assert!(seen.iter().all(|&c| c == 1), "every velocity exactly once");
    }

    #[test]
    fn paper_case_on_nvidia_runs_all_octants_in_one_wave_over_several_bindings() {
        // 64^3 x 64^3 with an 8 GiB budget: all 262144 velocities in flight, 4 GiB of slices,
        // cut into 3 chunks under the 2 GiB binding limit.
        let l = GpuLimits::nvidia_h200();
        let s = plan(64, 64, 8192, l).unwrap();
        assert_eq!(s.waves.len(), 1);
        assert_eq!(s.in_flight(), 64 * 64 * 64);
        assert_eq!(s.slice_buffers, 3);
        // One dispatch group: the three chunks are swept by one dispatch.
        assert_eq!((s.waves[0].groups.len(), s.slice_bindings), (1, 3));
        check_invariants(&s, 64, &l);
    }

    #[test]
    fn budget_sets_waves() {
        let l = GpuLimits::nvidia_h200();
        let s = plan(64, 64, 2048, l).unwrap();
        // 2 GiB hold 131072 velocities of 16 KiB: four octants per wave.
        assert_eq!(s.waves.len(), 2);
        assert_eq!(s.in_flight(), 131072);
        assert!(s.distribution_bytes <= 2048 << 20);
        check_invariants(&s, 64, &l);
    }

    #[test]
    fn lavapipe_binding_limit_cuts_chunks() {
        // 128 MiB bindings hold 8192 velocities of a 64^2 slice.
        let l = GpuLimits::lavapipe();
        let s = plan(32, 64, 1024, l).unwrap();
        assert!(s.waves.iter().all(|w| w.chunks.len() >= 2));
        assert!(s.chunk_stride <= 8192);
        check_invariants(&s, 32, &l);
    }

    #[test]
    fn webgpu_default_limits_plan_the_quick_cavity() {
        let l = GpuLimits::webgpu_default();
        let s = plan(16, 16, 512, l).unwrap();
        check_invariants(&s, 16, &l);
    }

    #[test]
    fn downlevel_limits_plan_the_quick_cavity() {
        // wgpu's downlevel defaults: 4 storage buffers per stage, 128 MiB bindings, 256
        // invocations and 16352 bytes of workgroup memory per workgroup.
        let l = GpuLimits::downlevel();
        assert_eq!(l.max_storage_buffers_per_stage, KERNEL_STORAGE_BUFFERS);
        let s = plan(16, 16, 512, l).unwrap();
        check_invariants(&s, 16, &l);
    }

    #[test]
    fn odd_velocity_counts_keep_zero_z_in_the_up_part() {
        let l = GpuLimits::lavapipe();
        let s = plan(9, 8, 1, l).unwrap();
        check_invariants(&s, 9, &l);
    }

    #[test]
    fn refuses_what_cannot_fit() {
        let l = GpuLimits::webgpu_default();
        // A 4096^2 slice is 64 MiB per velocity; the cell buffers of 4096^2 x 8 cells
        // (6 GiB) cannot fit a 128 MiB binding.
        let e = plan(16, 512, 512, l).unwrap_err();
        assert!(e.0.contains("binding"), "{e}");
        let e = plan(16, 16, 0, l).unwrap_err();
        assert!(e.0.contains("budget"), "{e}");
        let mut tiny = l;
        tiny.max_storage_buffers_per_stage = 3;
        assert!(plan(16, 16, 512, tiny).unwrap_err().0.contains("storage buffers"));
        let mut small_wg = l;
        small_wg.max_workgroup_storage = 4096;
        assert!(plan(16, 16, 512, small_wg).unwrap_err().0.contains("workgroup memory"));
    }

    #[test]
    fn grid_2d_covers() {
        assert_eq!(grid_2d(100, 65535), Some((100, 1)));
        assert_eq!(grid_2d(70000, 65535), Some((65535, 2)));
        assert_eq!(grid_2d(10, 3), None);
    }
}
