//! How the solver measures convergence: the relative L2 change of the conserved fields
//! between two iterates, and the record each iteration leaves.

use crate::model::{raw, Macro, NRAW};

/// Names of the residual components, in [`IterationRecord::residuals`] order.
pub const RESIDUAL_NAMES: [&str; 5] = ["density", "momentum_x", "momentum_y", "momentum_z", "energy"];

/// Momentum changes are measured relative to max(||rho U||, MOMENTUM_FLOOR ||rho|| v0), so
/// a gas at rest (||rho U|| at round-off) does not turn round-off noise into O(1) residuals;
/// flows faster than 1e-3 v0 get a truly relative measure.
pub const MOMENTUM_FLOOR: f64 = 1e-3;

/// The same on f32 arithmetic (a backend with a residual floor): its sums resolve the momentum
/// to about 1e-8 - 1e-7 of ||rho|| v0 (the noise of the stalled runs in `docs/configs.md`,
/// "The f32 floor"), which relative to 1e-3 ||rho|| v0 is 1e-5 - 1e-4, at or above the f32
/// stop; relative to 1e-2 ||rho|| v0 it is 1e-6 - 1e-5. Flows faster than 0.01 v0 (the lid
/// cavities: 0.0104) keep the relative measure.
pub const MOMENTUM_FLOOR_F32: f64 = 1e-2;

/// The momentum floor for a backend's residual floor (`Backend::residual_floor`, 0 in f64).
pub fn momentum_floor(residual_floor: f64) -> f64 {
    if residual_floor > 0.0 {
        MOMENTUM_FLOOR_F32
    } else {
        MOMENTUM_FLOOR
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IterationRecord {
    pub iteration: usize,
    /// Relative L2 changes: density, momentum x/y/z, energy.
    pub residuals: [f64; 5],
    /// Seconds since the run started, at the end of this iteration.
    pub elapsed: f64,
    /// Seconds this iteration took.
    pub seconds: f64,
    /// With a body and a free stream: the first body's drag coefficient from this sweep,
    /// to watch the load converge alongside the residual.
    pub drag: Option<f64>,
}

impl IterationRecord {
    /// The convergence measure: the largest component.
    /// The largest component; NaN if any is (`f64::max` would drop it, and a run whose
    /// fields went NaN would count as converged).
    pub fn residual(&self) -> f64 {
        max_or_nan(&self.residuals)
    }
}

/// The largest of `x`, or NaN if any is NaN.
pub fn max_or_nan(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m: f64, &r| if r.is_nan() || m.is_nan() { f64::NAN } else { m.max(r) })
}

/// Density, momentum and total energy per cell: rho, rho U, rho E = (1/2) sum w |xi|^2 f.
pub fn conserved_from_raw(m: &[f64; NRAW]) -> [f64; 5] {
    let e = 0.5 * (m[raw::M2] + m[raw::M2 + 1] + m[raw::M2 + 2]);
    [m[raw::RHO], m[raw::MOM], m[raw::MOM + 1], m[raw::MOM + 2], e]
}

pub fn conserved_from_macro(m: &Macro) -> [f64; 5] {
    let u2 = m.u.iter().map(|u| u * u).sum::<f64>();
    // rho E = rho |U|^2 / 2 + (3/2) p with p = rho T / 2.
    [m.rho, m.rho * m.u[0], m.rho * m.u[1], m.rho * m.u[2], 0.5 * m.rho * u2 + 0.75 * m.rho * m.t]
}

/// Relative L2 change of each conserved field between two iterates; momentum relative to at
/// least `momentum_floor` ||rho|| v0 ([`momentum_floor`]).
pub fn residuals(old: &[[f64; 5]], new: &[[f64; 5]], momentum_floor: f64) -> [f64; 5] {
    let sums = ordered_sum(old.len(), |range| {
        let mut acc = [0.0f64; 10];
        for (a, b) in old[range.clone()].iter().zip(&new[range]) {
            for c in 0..5 {
                acc[c] += (b[c] - a[c]).powi(2);
                acc[5 + c] += b[c] * b[c];
            }
        }
        acc
    });
    let (diff2, norm2): ([f64; 5], [f64; 5]) = (std::array::from_fn(|c| sums[c]), std::array::from_fn(|c| sums[5 + c]));
    let mom = (norm2[1] + norm2[2] + norm2[3]).sqrt().max(momentum_floor * norm2[0].sqrt());
    let denom = [norm2[0].sqrt(), mom, mom, mom, norm2[4].sqrt()];
    std::array::from_fn(|c| if diff2[c] == 0.0 { 0.0 } else { diff2[c].sqrt() / denom[c] })
}

/// Cells per part of [`ordered_sum`]: fixed, so the parts, and the bits of the sum, do not
/// depend on the number of threads.
const SUM_PART: usize = 4096;

/// The sum over `0..n` of `part(range)`, computed part by part in parallel over ranges of
/// `SUM_PART` cells and added in order: the same bits on any number of threads.
pub fn ordered_sum<const K: usize>(n: usize, part: impl Fn(std::ops::Range<usize>) -> [f64; K] + Sync) -> [f64; K] {
    use rayon::prelude::*;
    let parts: Vec<[f64; K]> =
        (0..n.div_ceil(SUM_PART)).into_par_iter().map(|k| part(k * SUM_PART..((k + 1) * SUM_PART).min(n))).collect();
    parts.iter().fold([0.0; K], |mut s, p| {
        (0..K).for_each(|c| s[c] += p[c]);
        s
    })
}

/// A run on f32 arithmetic stops as stalled (`solver.stall_sweeps`) only once its lowest
/// residual is below this: f32 round-off amplified by the synthetic correction leaves
/// residuals of 1e-5 to 1e-4 at Kn 0.001 (`docs/model.md`, "The f32 floor at small Kn"),
/// far below the level of a transient that merely pauses.
pub const STALL_BELOW: f64 = 1e-3;

/// Whether a run has stalled: `sweeps` or more since its lowest residual `lowest` (set at
/// iteration `at`), that residual below [`STALL_BELOW`], on a backend with a round-off
/// `floor` (0 for f64 arithmetic, which is never stopped so); `sweeps` 0 never stalls.
pub fn stalled(iteration: usize, (lowest, at): (f64, usize), floor: f64, sweeps: usize) -> bool {
    // `iteration - at`, not `at + sweeps`: a huge `sweeps` (meant as never) must not wrap.
    floor > 0.0 && sweeps > 0 && lowest < STALL_BELOW && iteration.saturating_sub(at) >= sweeps
}

/// The tolerance a run stops at: the asked one, or the backends' round-off floor when the
/// asked one is below what their arithmetic resolves ([`warn_if_raised`] says so).
pub fn effective_tolerance(tolerance: f64, floor: f64) -> f64 {
    tolerance.max(floor)
}

/// Say once, where a run starts, that its stop is raised to `floor`: the f32 arithmetic of
/// this process's backend (`backend`), or with several processes (`own_floor` below `floor`)
/// that of another process's, since every process stops by the largest floor among them.
pub fn warn_if_raised(tolerance: f64, floor: f64, own_floor: f64, backend: &str) {
    if tolerance >= floor {
        return;
    }
    if own_floor < floor {
        log::warn!(
            "tolerance {tolerance:.1e} is below what the f32 arithmetic of another process's backend resolves (the processes stop together, at the largest floor among them); stopping at {floor:.1e}"
        );
    } else {
        log::warn!(
            "tolerance {tolerance:.1e} is below what the {backend} backend's f32 arithmetic resolves; stopping at {floor:.1e}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_stalls_only_on_f32_below_the_level_after_the_sweeps() {
        // 30 sweeps after a lowest of 4e-5 at iteration 10: stalled at 40, not at 39.
        assert!(stalled(40, (4e-5, 10), 1e-5, 30));
        assert!(!stalled(39, (4e-5, 10), 1e-5, 30));
        // f64 arithmetic, the rule off, or a lowest above the level: never.
        assert!(!stalled(1000, (4e-5, 10), 0.0, 30));
        assert!(!stalled(1000, (4e-5, 10), 1e-5, 0));
        assert!(!stalled(1000, (2e-3, 10), 1e-5, 30));
        assert!(!stalled(1000, (4e-5, 10), 1e-5, usize::MAX), "a huge count is never");
    }

    #[test]
    fn residual_is_relative_and_zero_for_no_change() {
        let a = vec![[1.0, 0.1, 0.0, 0.0, 1.0]; 4];
        assert_eq!(residuals(&a, &a, MOMENTUM_FLOOR), [0.0; 5]);
        let mut b = a.clone();
        b[0][0] = 1.1;
        let r = residuals(&a, &b, MOMENTUM_FLOOR);
        // ||d rho|| = 0.1, ||rho|| = sqrt(3 + 1.21).
        assert!((r[0] - 0.1 / (3.0f64 + 1.21).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn momentum_floor_guards_gas_at_rest() {
        let a = vec![[1.0, 0.0, 0.0, 0.0, 0.75]; 4];
        let mut b = a.clone();
        b[1][1] = 1e-17;
        let r = residuals(&a, &b, MOMENTUM_FLOOR);
        assert!(r[1] < 1e-13, "{r:?}");
    }

    #[test]
    fn f32_arithmetic_measures_slow_flows_against_its_momentum_floor() {
        // A flow at 0.002 v0 whose momentum moves by 1e-7 (f32's resolution): relative to its
        // own momentum 5e-5, above the f32 stop; relative to 1e-2 ||rho|| v0, 1e-5.
        let a = vec![[1.0, 0.002, 0.0, 0.0, 0.75]; 4];
        let mut b = a.clone();
        b.iter_mut().for_each(|c| c[1] += 1e-7);
        // Within the 5e-5 relative shift of the norm, taken from the new iterate.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-4 * y;
        assert!(close(residuals(&a, &b, momentum_floor(0.0))[1], 5e-5));
        assert!(close(residuals(&a, &b, momentum_floor(1e-5))[1], 1e-5));
        // A flow faster than 0.01 v0 keeps the relative measure on either.
        let fast = vec![[1.0, 0.1, 0.0, 0.0, 0.75]; 4];
        let mut moved = fast.clone();
        moved.iter_mut().for_each(|c| c[1] += 1e-7);
        assert_eq!(residuals(&fast, &moved, momentum_floor(0.0)), residuals(&fast, &moved, momentum_floor(1e-5)));
    }

    #[test]
    fn a_nan_component_makes_the_residual_nan() {
        // f64::max drops NaN: a run whose fields went NaN would have stopped as converged.
        assert!(max_or_nan(&[0.0, f64::NAN, 1e-3]).is_nan());
        assert!(max_or_nan(&[f64::NAN, 0.0]).is_nan());
        assert_eq!(max_or_nan(&[1e-3, 2e-3, 0.0]), 2e-3);
        let rec = IterationRecord {
            iteration: 1,
            residuals: [0.0, f64::NAN, 0.0, 0.0, 0.0],
            elapsed: 0.0,
            seconds: 0.0,
            drag: None,
        };
        assert!(rec.residual().is_nan());
    }
}
