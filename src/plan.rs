//! Batch planning: how many velocities are swept together, from a memory budget.
//!
//! Slice storage per batch is `batch x slice_cells x bytes_per_value x slices_per_velocity`.
//! Batches never mix octants, because the sweep direction is a property of the batch.

use crate::grid::Octant;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub octant: Octant,
    /// Global velocity indices, increasing.
    pub velocities: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchPlan {
    pub batches: Vec<Batch>,
    /// Largest batch; the slice storage is sized for it.
    pub max_batch: usize,
    pub bytes_per_velocity: u64,
}

impl BatchPlan {
    /// Bytes of distribution-function storage the plan allocates.
    pub fn distribution_bytes(&self) -> u64 {
        self.max_batch as u64 * self.bytes_per_velocity
    }
}

/// The CPU backend's per-cell Gaussian tables are skipped (f^S evaluated with one
/// exponential per point) above this size.
pub const GAUSS_TABLE_MAX_BYTES: u64 = 1 << 30;

/// The host memory available now (Linux's `MemAvailable`), or None where it cannot be read.
pub fn available_host_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).map(|kib| kib * 1024))
    })
}

/// Bytes of host memory a run needs besides slice storage, for `cells` cells and `m`
/// velocity points per axis: per cell the solver's f64 fields (raw moments 13, sweep
/// coefficients 10, macroscopic state 16, conserved 5, volumes 1) and output buffers (~16);
/// per velocity its node and weight and the six faces' emission shapes; and the CPU
/// backend's per-cell Gaussian tables (3 m per cell): in f64 when it builds them (below
/// [`GAUSS_TABLE_MAX_BYTES`]), in f32 always under `precision = "f32"` (cpu/lanes.rs), with
/// the cell's f32 coefficients beside them (one 64-byte line per cell).
pub fn host_bytes(cells: [usize; 3], m: usize, f32_tables: bool) -> u64 {
    let cells = cells.iter().product::<usize>() as u64;
    let m = m as u64;
    let tables = 3 * m * cells * 8;
    let tables = if f32_tables {
        3 * m * cells * 4 + 64 * cells
    } else if tables <= GAUSS_TABLE_MAX_BYTES {
        tables
    } else {
        0
    };
    cells * (13 + 10 + 16 + 5 + 1 + 16) * 8 + m * m * m * (3 + 1 + 6) * 8 + tables
}

/// Host memory a GPU backend keeps per cell for its uploads and read-backs: CUDA's
/// page-locked moment read-back (16 values) and field upload (8 f64), 128 B per cell, 192 B
/// where the CUDA sweep is f64 (`f64_values`; wgpu's staging buffers are smaller).
pub fn gpu_host_buffer_bytes(cells: [usize; 3], f64_values: bool) -> u64 {
    let moments = if f64_values { 16 * 8 } else { 16 * 4 };
    (moments + 8 * 8) * cells.iter().product::<usize>() as u64
}

/// Device memory of the synthetic solve on a CUDA GPU (`solver::synthetic::cuda`), about:
/// per fine cell the operator (824 B) and line factors (600 B) with a seventh more for the
/// coarse levels, six work vectors per level (240 B, likewise), and up to 64 GMRES vectors
/// (2560 B).
pub fn synthetic_device_bytes(cells: [usize; 3]) -> u64 {
    let cells = cells.iter().product::<usize>() as u64;
    cells * ((1424 + 240) * 8 / 7 + 2560)
}

/// Host bytes of the synthetic solve (`solver.acceleration = "gsis"`), per cell: the operator
/// (seven 5x5 f64 blocks and six neighbour indices, 1424 B), the multigrid levels below it
/// (at most 1/7 of that) and their inverted diagonals, GMRES's 2 x 30 + 2 basis and
/// preconditioned vectors of 5 f64 (2480 B), and the correction's base state, right-hand
/// side and result (~160 B).
pub fn synthetic_bytes(cells: [usize; 3]) -> u64 {
    let cells = cells.iter().product::<usize>() as u64;
    cells * (1424 + 1424 / 7 + 200 + 2480 + 160)
}

/// The host part of [`synthetic_bytes`] when the solve runs on a GPU (CUDA or wgpu): all but
/// GMRES's vectors, which live on the device.
pub fn synthetic_host_bytes_beside_device(cells: [usize; 3]) -> u64 {
    synthetic_bytes(cells) - cells.iter().product::<usize>() as u64 * 2480
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanError(pub String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PlanError {}

/// Split each octant into the fewest batches that fit `budget_bytes`, of near-equal size.
pub fn plan_batches(
    octants: &[Vec<u32>; 8],
    slice_cells: usize,
    bytes_per_value: usize,
    slices_per_velocity: usize,
    budget_bytes: u64,
) -> Result<BatchPlan, PlanError> {
    let bytes_per_velocity = (slice_cells * bytes_per_value * slices_per_velocity) as u64;
    let fit = budget_bytes / bytes_per_velocity;
    if fit == 0 {
        return Err(PlanError(format!(
            "memory budget of {} bytes (solver.memory_budget_mib, --memory-budget-mib) is below the {bytes_per_velocity} bytes one velocity's slice needs",
            budget_bytes
        )));
    }
    let largest = octants.iter().map(Vec::len).max().unwrap_or(0);
    let cap = (fit as usize).min(largest.max(1));
    let mut batches = Vec::new();
    for (o, members) in octants.iter().enumerate() {
        if members.is_empty() {
            continue;
        }
        let n = members.len().div_ceil(cap);
        let base = members.len() / n;
        let extra = members.len() % n;
        let mut start = 0;
        for b in 0..n {
            let len = base + usize::from(b < extra);
            batches.push(Batch { octant: Octant(o as u8), velocities: members[start..start + len].to_vec() });
            start += len;
        }
    }
    let max_batch = batches.iter().map(|b| b.velocities.len()).max().unwrap_or(0);
    Ok(BatchPlan { batches, max_batch, bytes_per_velocity })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn octants(n: usize) -> [Vec<u32>; 8] {
        std::array::from_fn(|o| (0..n as u32).map(|v| v * 8 + o as u32).collect())
    }

    #[test]
    fn whole_octants_when_budget_allows() {
        let p = plan_batches(&octants(100), 16, 8, 1, 1 << 30).unwrap();
        assert_eq!(p.batches.len(), 8);
        assert_eq!(p.max_batch, 100);
        assert_eq!(p.distribution_bytes(), 100 * 128);
    }

    #[test]
    fn budget_splits_octants_evenly_and_never_mixes_them() {
        // 30 velocities of 128 bytes fit: 100 per octant -> 4 batches of 25.
        let p = plan_batches(&octants(100), 16, 8, 1, 30 * 128 + 5).unwrap();
        assert_eq!(p.batches.len(), 32);
        assert!(p.batches.iter().all(|b| b.velocities.len() == 25));
        for b in &p.batches {
            assert!(b.velocities.iter().all(|&v| v % 8 == b.octant.0 as u32));
        }
        let total: usize = p.batches.iter().map(|b| b.velocities.len()).sum();
        assert_eq!(total, 800);
    }

    #[test]
    fn refuses_budget_below_one_velocity() {
        let e = plan_batches(&octants(10), 16, 8, 1, 100).unwrap_err();
        assert!(e.0.contains("below"), "{e}");
    }
}
