//! `knudsen bench`: seconds per iteration of fixed cases, after warm-up, against the floor
//! that the memory's copy bandwidth sets.
//!
//! A row is the paper's lid-driven cavity (`configs/cavity-kn1.json`: Kn 1, argon) on C^3
//! cells and V^3 velocities, written `CxV`, or the paper's Ma 2 cube (`cube`,
//! `configs/cube-ma2-kn1.json`). Each runs source iteration for `warmup + iterations`
//! sweeps from the case's initial state; the warm-up sweeps are not timed and the row's
//! time is the median of the others. Before that run, runs of `warmup` sweeps from the
//! initial state repeat until `warmup_seconds` have passed since the backend was built, so
//! that a row whose sweeps take milliseconds is not timed while the device and its driver
//! are still cold (a row of seconds per sweep needs none).
//!
//! **Floor.** A sweep reads every phase-space point's upwind value and writes its own at
//! least once, so it moves at least `points x bytes_per_point` bytes:
//!
//! ```text
//! floor = points * b / B,     b = value bytes * (reads + writes) per point,
//! ```
//!
//! with B the copy bandwidth (bytes read plus written per second) measured in the same run
//! (before and after the backend's first row, the larger of the two: a fresh machine's first
//! wgpu process has measured half its later bandwidth before its first row and the full one
//! by its second, `docs/benchmarks.md`),
//! and `(reads, writes) = (1, 1)` for the first-order sweep and `(6, 4)` for the second-order
//! one (it reads the y and z face values and the limiter's four neighbour face values, and
//! writes the cell value and three face values).
//! `of floor` = floor / measured: 1 is the bandwidth limit of slices kept in memory. The
//! fused on-chip sweep keeps no slices; its rows count what it moves instead, the face
//! values between tiles and the moment partials (`FusedPlan::traffic_per_point`: 2.8 B at
//! 8 x 8 tiles, 4.8 B at 4 x 4; under second order 13 B at 4 x 4: CUDA, and wgpu where asked), so its floor is
//! lower and its `of floor` smaller at the same speed.

use crate::backend::{self, BackendChoice};
use crate::config::{Acceleration, Config, Precision, Scheme};
use crate::problem::Problem;
use crate::solver::Solver;
use std::sync::Arc;

const CAVITY: &str = include_str!("../configs/cavity-kn1.json");
const CUBE: &str = include_str!("../configs/cube-ma2-kn1.json");

/// A benchmark row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// The cavity on `cells`^3 cells and `points`^3 velocities.
    Cavity { cells: usize, points: usize },
    /// The paper's cube case as shipped.
    Cube,
}

impl std::str::FromStr for Row {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "cube" {
            return Ok(Row::Cube);
        }
        let bad = || format!("row `{s}`: expected CxV (cells and velocity points per axis, e.g. 64x64) or `cube`");
        let (c, v) = s.split_once('x').ok_or_else(bad)?;
        let cells = c.parse().map_err(|_| bad())?;
        let points = v.parse().map_err(|_| bad())?;
        Ok(Row::Cavity { cells, points })
    }
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Row::Cavity { cells, points } => write!(f, "{cells}x{points}"),
            Row::Cube => write!(f, "cube"),
        }
    }
}

impl Row {
    /// The row's case: source iteration, the given scheme and budget, no stopping early.
    pub fn config(
        self,
        scheme: Scheme,
        precision: Option<Precision>,
        budget_mib: Option<f64>,
        sweeps: usize,
    ) -> anyhow::Result<Config> {
        let mut v: serde_json::Value = serde_json::from_str(if self == Row::Cube { CUBE } else { CAVITY })?;
        if let Row::Cavity { cells, points } = self {
            for a in ["x", "y", "z"] {
                v["grid"][a]["cells"] = cells.into();
            }
            v["velocity"]["points"] = points.into();
            v["name"] = format!("bench-{self}").into();
        }
        let mut cfg = Config::from_json(&v.to_string()).map_err(|e| anyhow::anyhow!("row {self}: {e}"))?;
        let s = &mut cfg.solver;
        s.acceleration = Acceleration::None;
        s.scheme = scheme;
        s.precision = precision;
        s.max_iterations = sweeps;
        // A row times a fixed number of sweeps.
        s.stall_sweeps = 0;
        s.memory_budget_mib = budget_mib.or(s.memory_budget_mib);
        cfg.validate().map_err(|e| anyhow::anyhow!("row {self}: {e}"))?;
        Ok(cfg)
    }
}

/// Bytes a sweep must move per phase-space point (module docs).
pub fn bytes_per_point(scheme: Scheme, value_bytes: usize) -> usize {
    match scheme {
        Scheme::FirstOrder => 2 * value_bytes,
        Scheme::SecondOrder => 10 * value_bytes,
    }
}

/// One row on one backend.
#[derive(Debug, Clone)]
pub struct Timing {
    pub device: String,
    pub phase_points: u64,
    pub in_flight: usize,
    /// Timed sweeps (whole iterations: sweep, residual and field update), in seconds.
    pub seconds: Vec<f64>,
    pub device_bytes: Option<u64>,
    /// The slices' count ([`bytes_per_point`]), or the fused sweep's traffic.
    pub bytes_per_point: f64,
    /// Seconds of untimed runs before the timed one (the `warmup_seconds` loop).
    pub warmup_seconds: f64,
}

impl Timing {
    pub fn median(&self) -> f64 {
        let mut s = self.seconds.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        }
    }

    pub fn point_updates_per_second(&self) -> f64 {
        self.phase_points as f64 / self.median()
    }

    /// The floor of the row's time at `bandwidth` bytes per second.
    pub fn floor_seconds(&self, bandwidth: f64) -> f64 {
        self.phase_points as f64 * self.bytes_per_point / bandwidth
    }
}

/// Build the backend for `cfg`, measure the copy bandwidth if `bandwidth` is still unknown
/// (before the sweeps and again after them, keeping the larger), and time `warmup +
/// iterations` sweeps.
pub fn time_row(
    cfg: &Config,
    choice: BackendChoice,
    warmup: usize,
    warmup_seconds: f64,
    iterations: usize,
    bandwidth: &mut Option<f64>,
) -> anyhow::Result<Timing> {
    anyhow::ensure!(iterations >= 1, "at least one timed iteration");
    let problem = Arc::new(Problem::new(cfg));
    let (mut be, _) = backend::create(choice, problem.clone(), cfg.solver.memory_budget_mib)?;
    let first = bandwidth.is_none();
    if first {
        *bandwidth = Some(be.copy_bandwidth()?);
    }
    let value_bytes = be.bytes_per_value();
    // Every sweep asked for, timed: no stop on the residual, not even at an f32 floor that
    // a small row reaches in 15-25 sweeps (it then stopped short and the row failed).
    let tolerance = 0.0;
    let (device, plan, device_bytes) = (be.device(), be.plan_summary(), be.device_bytes());
    let mut solver = Solver::new(&problem, be);
    let warm = std::time::Instant::now();
    while warmup > 0 && warm.elapsed().as_secs_f64() < warmup_seconds {
        solver.run_for(warmup, tolerance, &mut |_| {})?;
    }
    let warmed = warm.elapsed().as_secs_f64();
    let mut seconds = Vec::new();
    let result = solver.run_for(warmup + iterations, tolerance, &mut |rec| seconds.push(rec.seconds))?;
    anyhow::ensure!(
        result.iterations() == warmup + iterations,
        "the row stopped after {} of {} sweeps (residual {:.2e})",
        result.iterations(),
        warmup + iterations,
        result.final_residual()
    );
    if first {
        let after = solver.backend.copy_bandwidth()?;
        *bandwidth = bandwidth.map(|before| before.max(after));
    }
    Ok(Timing {
        device,
        phase_points: problem.phase_points(),
        in_flight: plan.in_flight,
        seconds: seconds.split_off(warmup),
        device_bytes,
        bytes_per_point: plan.traffic_per_point.unwrap_or(bytes_per_point(cfg.solver.scheme, value_bytes) as f64),
        warmup_seconds: warmed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_print() {
        assert_eq!("64x32".parse::<Row>(), Ok(Row::Cavity { cells: 64, points: 32 }));
        assert_eq!("cube".parse::<Row>(), Ok(Row::Cube));
        for bad in ["64", "x32", "64x", "64xx32", "cubes"] {
            assert!(bad.parse::<Row>().unwrap_err().contains(bad), "{bad}");
        }
        assert_eq!(Row::Cavity { cells: 128, points: 64 }.to_string(), "128x64");
    }

    #[test]
    fn row_cases_are_the_shipped_ones_resized() {
        let c = Row::Cavity { cells: 8, points: 10 }
            .config(Scheme::SecondOrder, Some(Precision::F64), Some(64.0), 3)
            .unwrap();
        assert_eq!(c.cell_counts(), [8, 8, 8]);
        assert_eq!(c.velocity.points, 10);
        assert_eq!(c.solver.acceleration, Acceleration::None);
        assert_eq!(
            (c.solver.scheme, c.solver.max_iterations, c.solver.memory_budget_mib),
            (Scheme::SecondOrder, 3, Some(64.0))
        );
        let cube = Row::Cube.config(Scheme::FirstOrder, Some(Precision::F64), None, 2).unwrap();
        assert_eq!(cube.cell_counts(), Config::from_json(CUBE).unwrap().cell_counts());
        // Zero cells is the case's own error, named.
        let e =
            Row::Cavity { cells: 0, points: 8 }.config(Scheme::FirstOrder, Some(Precision::F64), None, 1).unwrap_err();
        assert!(format!("{e}").contains("row 0x8") && format!("{e}").contains("grid"), "{e}");
    }

    #[test]
    fn median_and_floor() {
        let t = Timing {
            device: "d".into(),
            phase_points: 1000,
            in_flight: 1,
            seconds: vec![3.0, 1.0, 2.0, 10.0],
            device_bytes: None,
            bytes_per_point: 8.0,
            warmup_seconds: 0.0,
        };
        assert_eq!(t.median(), 2.5);
        assert_eq!(t.floor_seconds(4000.0), 2.0);
        assert_eq!(t.point_updates_per_second(), 400.0);
    }
}
