//! Running a suite: every point of a subset to convergence, then the verdict of its kind
//! (reference values, observed order of convergence, or agreement with the first point).

use super::{measure, Kind, Measure, PlotSpec, Point, Suite};
use crate::backend::BackendChoice;
use crate::config::{Acceleration, Precision};
use crate::problem::Problem;
use crate::solver::Solver;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One point's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct PointResult {
    pub set: BTreeMap<String, serde_json::Value>,
    pub measured: f64,
    pub reference: Option<f64>,
    pub tolerance: Option<f64>,
    pub source: Option<String>,
    pub note: Option<String>,
    /// Relative difference from the reference (or from the first point, agreement suites).
    pub relative_error: Option<f64>,
    pub pass: Option<bool>,
    pub iterations: usize,
    /// `solver.acceleration` of the run.
    pub acceleration: String,
    /// `solver.precision` of the run, where given (else the backend's own: f64 on the CPU,
    /// f32 on the GPUs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    pub converged: bool,
    /// The lowest residual of a run stopped at the f32 round-off floor (`solver.stall_sweeps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled_at: Option<f64>,
    /// The residual the run stopped at where its backend's floor raised the case's tolerance
    /// to it (f32 arithmetic: `Backend::residual_floor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_raised_to: Option<f64>,
    pub seconds: f64,
    pub backend: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SuiteResult {
    pub name: String,
    pub title: String,
    pub kind: Kind,
    pub measure: Measure,
    pub subset: String,
    pub points: Vec<PointResult>,
    /// Convergence suites: observed order and Richardson error estimate of the finest point
    /// (absolute, and relative to its value).
    pub observed_order: Option<f64>,
    pub richardson_error: Option<f64>,
    pub richardson_relative: Option<f64>,
    pub order_range: Option<[f64; 2]>,
    pub sources: BTreeMap<String, String>,
    pub plot: Option<PlotSpec>,
    pub pass: bool,
    /// Why the suite failed, when it did.
    pub failures: Vec<String>,
}

/// Run the points of `subset` ("fast" or "full") on `backend` with `given` acceleration and
/// precision (unless a point sets its own `solver.acceleration` or `solver.precision`; no
/// precision: the backend's own); `log` sees a line per point. A point whose run
/// fails (no backend, a non-physical state) fails the suite with its error; the suite's
/// other points still run and are reported (each is a run of its own), but a convergence or
/// agreement verdict needs them all and is not judged.
pub fn run_suite(
    suite: &Suite,
    subset: &str,
    backend: BackendChoice,
    given: (Acceleration, Option<Precision>),
    log: &mut dyn FnMut(&str),
) -> SuiteResult {
    let mut points = Vec::new();
    // Each result's index among the subset's points, for the messages below.
    let mut index = Vec::new();
    let mut failures = Vec::new();
    for (n, p) in suite.points_in(subset).into_iter().enumerate() {
        match run_point(suite, p, backend, given, log) {
            Ok(r) => {
                points.push(r);
                index.push(n);
            }
            Err(e) => {
                let why = format!("point {n} ({}) failed: {e:#}", describe(&p.set));
                log(&format!("  {why}"));
                failures.push(why);
            }
        }
    }
    let ran_all = failures.is_empty();
    for (p, n) in points.iter().zip(&index) {
        if let Some(lowest) = p.stalled_at {
            failures.push(format!(
                "point {n} stalled at the f32 round-off floor (lowest residual {lowest:.2e}) after {} iterations",
                p.iterations
            ));
        } else if !p.converged {
            failures.push(format!("point {n} did not converge in {} iterations", p.iterations));
        }
        // A point that did not converge is reported as such above, not by its value.
        if p.pass == Some(false) && p.converged {
            failures.push(format!(
                "point {n}: {:.6} vs reference {:.6} ({:+.2}%, tolerance {:.2}%)",
                p.measured,
                p.reference.unwrap(),
                100.0 * p.relative_error.unwrap(),
                100.0 * p.tolerance.unwrap()
            ));
        }
    }
    // A suite with a failed point has no order or agreement to judge.
    let (order, rich, rich_rel) = match suite.kind {
        Kind::Convergence if ran_all => judge_convergence(suite, &points, &mut failures),
        Kind::Agreement if ran_all => {
            judge_agreement(suite, &mut points, &mut failures);
            (None, None, None)
        }
        _ => (None, None, None),
    };
    SuiteResult {
        name: suite.name.clone(),
        title: suite.title.clone(),
        kind: suite.kind,
        measure: suite.measure,
        subset: subset.into(),
        pass: failures.is_empty() && !points.is_empty(),
        points,
        observed_order: order,
        richardson_error: rich,
        richardson_relative: rich_rel,
        order_range: suite.order,
        sources: suite.sources.clone(),
        plot: suite.plot.clone(),
        failures,
    }
}

/// A point's settings as `key = value, ...`, for the progress line and errors.
fn describe(set: &BTreeMap<String, serde_json::Value>) -> String {
    set.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
}

/// One point to convergence, measured and compared with its own reference if it has one.
fn run_point(
    suite: &Suite,
    p: &Point,
    backend: BackendChoice,
    (acceleration, precision): (Acceleration, Option<Precision>),
    log: &mut dyn FnMut(&str),
) -> anyhow::Result<PointResult> {
    let mut cfg = suite.config_of(p)?;
    if !p.set.contains_key("solver.acceleration") {
        cfg.solver.acceleration = acceleration;
    }
    if !p.set.contains_key("solver.precision") && precision.is_some() {
        cfg.solver.precision = precision;
        cfg.validate()?;
    }
    let problem = Arc::new(Problem::new(&cfg));
    let (b, fallback) = crate::backend::create(backend, problem.clone(), cfg.solver.memory_budget_mib)?;
    if let Some(why) = fallback {
        crate::backend::warn_step_down(module_path!(), &why);
    }
    let kind = b.kind().to_string();
    let floor = b.residual_floor();
    let result = Solver::new(&problem, b).run(|_| {})?;
    let measured = measure(suite.measure, &problem, &result)?;
    // A value that is not a number (a scale of 0, such as walls at rest for the Couette
    // shear) fails the point saying so; it would reach the results file as null.
    anyhow::ensure!(measured.is_finite(), "the measured value is {measured}: the case gives the measure no scale");
    let mut r = PointResult {
        set: p.set.clone(),
        measured,
        reference: p.reference,
        tolerance: p.tolerance,
        source: p.source.clone(),
        note: p.note.clone(),
        relative_error: None,
        pass: None,
        iterations: result.iterations(),
        acceleration: cfg.solver.acceleration.name().into(),
        precision: cfg.solver.precision.map(|x| x.name().into()),
        converged: result.converged,
        stalled_at: result.stalled.map(|(r, _)| r),
        stop_raised_to: (cfg.solver.tolerance < floor).then_some(floor),
        seconds: result.total_seconds,
        backend: kind,
    };
    if let (Some(rf), Some(tol)) = (p.reference, p.tolerance) {
        let e = (measured - rf) / rf.abs();
        r.relative_error = Some(e);
        r.pass = Some(e.abs() <= tol && result.converged);
    }
    log(&format!(
        "  {:<40} {:>12.6} {} ({} it {}, {:.1} s)",
        describe(&p.set),
        measured,
        match (r.reference, r.relative_error) {
            (Some(rf), Some(e)) => format!("ref {rf:.6} err {:+.2}%", 100.0 * e),
            _ => String::new(),
        },
        r.iterations,
        r.acceleration,
        r.seconds
    ));
    Ok(r)
}

/// Observed order from the last three points (successive halvings) and the Richardson
/// estimate of the finest point's error: (order, absolute error, relative error).
fn judge_convergence(
    suite: &Suite,
    points: &[PointResult],
    failures: &mut Vec<String>,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    if points.len() < 3 {
        failures.push("a convergence study needs three points".into());
        return (None, None, None);
    }
    let q: Vec<f64> = points[points.len() - 3..].iter().map(|p| p.measured).collect();
    let (d1, d2) = (q[0] - q[1], q[1] - q[2]);
    if d1 * d2 > 0.0 {
        let p = (d1 / d2).log2();
        let e = d2 / (2f64.powf(p) - 1.0);
        let [lo, hi] = suite.order.unwrap();
        if !(p >= lo && p <= hi) {
            failures.push(format!("observed order {p:.3} outside [{lo}, {hi}]"));
        }
        (Some(p), Some(e), Some(e / q[2].abs()))
    } else {
        // Not monotone: no order; the last change bounds the error, and passes only under
        // the suite's `tolerance`.
        let change = (d2 / q[2]).abs();
        match suite.tolerance {
            Some(tol) if change <= tol => {}
            _ => failures.push(format!(
                "not monotone (changes {d1:.3e}, {d2:.3e}); last relative change {change:.2e} above the suite tolerance {:?}",
                suite.tolerance
            )),
        }
        (None, Some(d2.abs()), Some(change))
    }
}

/// Every point against the first, within the suite's tolerance. Where a point's stop was
/// raised to its backend's f32 floor, the failure says that the comparison needs f64: an
/// agreement suite compares runs converged below that floor (cavity-slip: 1e-8).
fn judge_agreement(suite: &Suite, points: &mut [PointResult], failures: &mut Vec<String>) {
    let tol = suite.tolerance.unwrap();
    let first = points[0].measured;
    let raised =
        points.iter().filter_map(|p| p.stop_raised_to).fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    for (n, p) in points.iter_mut().enumerate().skip(1) {
        let e = (p.measured - first) / first.abs();
        p.relative_error = Some(e);
        p.pass = Some(e.abs() <= tol);
        if e.abs() > tol {
            let why = raised.map_or(String::new(), |r| {
                format!("; the runs' stop was raised from the case's tolerance to residual {r:.1e}, their backend's f32 floor: an agreement this close needs f64 (`--precision f64` on the CPU, CUDA, or wgpu with f64 shaders)")
            });
            failures.push(format!("point {n} differs from point 0 by {e:+.2e} relative (tolerance {tol:.1e}){why}"));
        }
    }
}
