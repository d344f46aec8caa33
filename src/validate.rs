//! `knudsen validate`: the validation suite (configs/validation/*.json, docs/validation.md).
//!
//! A suite file holds a base case, the points to run (each a set of overrides of the case,
//! by dotted key), what to measure, and the reference with its tolerance and source:
//!
//! - `"kind": "reference"`: each point is compared with its own `reference` value; it passes
//!   when |measured - reference| <= tolerance |reference|.
//! - `"kind": "convergence"`: the points are successive refinements by a factor of two; the
//!   last three give the observed order p = log2((q1 - q2) / (q2 - q3)) and the Richardson
//!   estimate of the finest error, (q2 - q3) / (2^p - 1). The suite passes when p lies in
//!   `order` = [lo, hi].
//! - `"kind": "agreement"`: every point is compared with the first one (relative
//!   difference within `tolerance`), e.g. a quarter domain with symmetry planes against the
//!   full domain.
//!
//! Each point belongs to the `fast` subset (run in CI), the `full` one, or both.

use crate::backend::BackendChoice;
use crate::config::Config;
use crate::model::Macro;
use crate::problem::Problem;
use crate::solver::{RunResult, Solver};
use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    pub title: String,
    pub kind: Kind,
    pub measure: Measure,
    /// The case every point starts from (a complete case file).
    pub case: serde_json::Value,
    pub points: Vec<Point>,
    /// Where the references come from, by key (a point's `source`).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Convergence suites: accepted range of the observed order.
    #[serde(default)]
    pub order: Option<[f64; 2]>,
    /// Agreement suites: accepted relative difference from the first point.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// The x-axis of the report's plot (a key of `set`), and whether it is logarithmic.
    #[serde(default)]
    pub plot: Option<PlotSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Reference,
    Convergence,
    Agreement,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Reference => "reference",
            Kind::Convergence => "convergence",
            Kind::Agreement => "agreement",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct PlotSpec {
    pub x: String,
    #[serde(default)]
    pub log_x: bool,
    #[serde(default)]
    pub log_y: bool,
    /// A curve to draw with the points: "couette_slip" (sqrt(pi) / (x + 2 sigma_P)) or
    /// "fourier_jump_s" / "fourier_jump_bgk" (the heat-flux slip asymptotes).
    #[serde(default)]
    pub curve: Option<serde_json::Value>,
}

/// What a point measures from its converged fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Planar Couette flow (walls normal to y moving along x): the shear stress -P_xy,
    /// averaged over the gap, over its free-molecular value p0 U / (sqrt(pi) v0).
    CouetteShear,
    /// Planar heat transfer (walls normal to y): -q_y averaged over the gap over its
    /// free-molecular value p0 v0 eps / sqrt(pi), eps = (T(y_max) - T(y_min)) / T0.
    FourierHeatFlux,
    /// u_x at the domain centre (trilinear interpolation of cell centres), over the
    /// lid speed (the y_max wall's x velocity).
    CentreVelocity,
    /// -P_xy averaged over the cells next to the lid (the y_max wall), over p0 U.
    LidShear,
    /// The first body's drag coefficient.
    DragCoefficient,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Overrides of the case by dotted key ("gas.delta", "grid.y.cells").
    pub set: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub reference: Option<f64>,
    /// Relative tolerance against `reference`.
    #[serde(default)]
    pub tolerance: Option<f64>,
    #[serde(default)]
    pub source: Option<String>,
    /// Subsets the point belongs to: "fast" (CI) and/or "full".
    #[serde(default = "full_only")]
    pub subsets: Vec<String>,
    /// Shown in the report beside the point.
    #[serde(default)]
    pub note: Option<String>,
}

fn full_only() -> Vec<String> {
    vec!["full".into()]
}

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
    pub converged: bool,
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

impl Suite {
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let s: Suite = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        s.check().with_context(|| format!("{}", path.display()))?;
        Ok(s)
    }

    /// Every point's case must be a valid config, and the suite's fields must fit its kind.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.points.is_empty() {
            bail!("no points");
        }
        for (n, p) in self.points.iter().enumerate() {
            self.config_of(p).with_context(|| format!("point {n}"))?;
            if let Some(s) = &p.source {
                if !self.sources.contains_key(s) {
                    bail!("point {n}: source `{s}` is not in `sources`");
                }
            }
            if p.subsets.iter().any(|s| s != "fast" && s != "full") {
                bail!("point {n}: subsets are \"fast\" and \"full\", got {:?}", p.subsets);
            }
            if self.kind == Kind::Reference && (p.reference.is_none() || p.tolerance.is_none()) {
                bail!("point {n}: a reference suite needs `reference` and `tolerance` on every point");
            }
        }
        // Both subsets must be able to judge the suite: CI runs `fast`, the report `full`.
        let needed = match self.kind {
            Kind::Reference => 1,
            Kind::Agreement => 2,
            Kind::Convergence => 3,
        };
        for subset in ["fast", "full"] {
            let n = self.points_in(subset).len();
            if n < needed {
                bail!(
                    "the `{subset}` subset has {n} point(s); a {} suite needs at least {needed} in each subset",
                    self.kind.name()
                );
            }
        }
        match self.kind {
            Kind::Convergence if self.order.is_none() => bail!("a convergence suite needs `order`"),
            Kind::Agreement if self.tolerance.is_none() => bail!("an agreement suite needs `tolerance`"),
            _ => Ok(()),
        }
    }

    /// The validated case of a point: the base case with the point's overrides.
    pub fn config_of(&self, p: &Point) -> anyhow::Result<Config> {
        let mut case = self.case.clone();
        for (key, value) in &p.set {
            let mut at = &mut case;
            let parts: Vec<&str> = key.split('.').collect();
            for part in &parts[..parts.len() - 1] {
                at = at.get_mut(*part).ok_or_else(|| anyhow!("`{key}`: the case has no `{part}`"))?;
            }
            let obj = at.as_object_mut().ok_or_else(|| anyhow!("`{key}`: not inside an object"))?;
            obj.insert(parts[parts.len() - 1].to_string(), value.clone());
        }
        Config::from_json(&case.to_string()).map_err(|e| anyhow!("{e}"))
    }

    fn points_in(&self, subset: &str) -> Vec<&Point> {
        self.points.iter().filter(|p| p.subsets.iter().any(|s| s == subset)).collect()
    }
}

/// Run the points of `subset` ("fast" or "full") on `backend`; `log` sees a line per point.
pub fn run_suite(
    suite: &Suite,
    subset: &str,
    backend: BackendChoice,
    log: &mut dyn FnMut(&str),
) -> anyhow::Result<SuiteResult> {
    let mut points = Vec::new();
    for p in suite.points_in(subset) {
        let cfg = suite.config_of(p)?;
        let problem = Arc::new(Problem::new(&cfg));
        let (b, fallback) = crate::backend::create(backend, problem.clone(), cfg.solver.memory_budget_mib)?;
        if let Some(why) = fallback {
            log::warn!("{why}");
        }
        let kind = b.kind().to_string();
        let result = Solver::new(&problem, b).run(|_| {})?;
        let measured = measure(suite.measure, &problem, &result)?;
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
            converged: result.converged,
            seconds: result.total_seconds,
            backend: kind,
        };
        if let (Some(rf), Some(tol)) = (p.reference, p.tolerance) {
            let e = (measured - rf) / rf.abs();
            r.relative_error = Some(e);
            r.pass = Some(e.abs() <= tol && result.converged);
        }
        log(&format!(
            "  {:<40} {:>12.6} {} ({} it, {:.1} s)",
            format!("{:?}", p.set).chars().take(40).collect::<String>(),
            measured,
            match (r.reference, r.relative_error) {
                (Some(rf), Some(e)) => format!("ref {rf:.6} err {:+.2}%", 100.0 * e),
                _ => String::new(),
            },
            r.iterations,
            r.seconds
        ));
        points.push(r);
    }
    let mut failures = Vec::new();
    for (n, p) in points.iter().enumerate() {
        if !p.converged {
            failures.push(format!("point {n} did not converge in {} iterations", p.iterations));
        }
        if p.pass == Some(false) {
            failures.push(format!(
                "point {n}: {:.6} vs reference {:.6} ({:+.2}%, tolerance {:.2}%)",
                p.measured,
                p.reference.unwrap(),
                100.0 * p.relative_error.unwrap(),
                100.0 * p.tolerance.unwrap()
            ));
        }
    }
    let (mut order, mut rich, mut rich_rel) = (None, None, None);
    match suite.kind {
        Kind::Convergence => {
            if points.len() < 3 {
                failures.push("a convergence study needs three points".into());
            } else {
                let q: Vec<f64> = points[points.len() - 3..].iter().map(|p| p.measured).collect();
                let (d1, d2) = (q[0] - q[1], q[1] - q[2]);
                if d1 * d2 > 0.0 {
                    let p = (d1 / d2).log2();
                    order = Some(p);
                    let e = d2 / (2f64.powf(p) - 1.0);
                    rich = Some(e);
                    rich_rel = Some(e / q[2].abs());
                    let [lo, hi] = suite.order.unwrap();
                    if !(p >= lo && p <= hi) {
                        failures.push(format!("observed order {p:.3} outside [{lo}, {hi}]"));
                    }
                } else {
                    // Not monotone: no order; the last change bounds the error, and passes
                    // only under the suite's `tolerance`.
                    let change = (d2 / q[2]).abs();
                    rich_rel = Some(change);
                    rich = Some(d2.abs());
                    match suite.tolerance {
                        Some(tol) if change <= tol => {}
                        _ => failures.push(format!(
                            "not monotone (changes {d1:.3e}, {d2:.3e}); last relative change {change:.2e} above the suite tolerance {:?}",
                            suite.tolerance
                        )),
                    }
                }
            }
        }
        Kind::Agreement => {
            let tol = suite.tolerance.unwrap();
            let first = points[0].measured;
            for (n, p) in points.iter_mut().enumerate().skip(1) {
                let e = (p.measured - first) / first.abs();
                p.relative_error = Some(e);
                p.pass = Some(e.abs() <= tol);
                if e.abs() > tol {
                    failures.push(format!(
                        "point {n} differs from point 0 by {:+.3}% (tolerance {:.2}%)",
                        100.0 * e,
                        100.0 * tol
                    ));
                }
            }
        }
        Kind::Reference => {}
    }
    Ok(SuiteResult {
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
    })
}

/// Width-weighted mean over all cells of a per-cell quantity.
fn mean_over(p: &Problem, fields: &[Macro], f: impl Fn(&Macro) -> f64) -> f64 {
    let vol = p.grid.volumes();
    let (s, v) = fields.iter().zip(&vol).fold((0.0, 0.0), |(s, t), (m, &w)| (s + w * f(m), t + w));
    s / v
}

fn wall_of(p: &Problem, face: crate::boundary::Face) -> anyhow::Result<([f64; 3], f64)> {
    match p.bounds.faces[face.id()].kind {
        crate::boundary::FaceKind::DiffuseWall { temperature, velocity } => Ok((velocity, temperature)),
        _ => bail!("the measure needs a diffuse wall at {}", face.name()),
    }
}

/// The measured quantity of a converged run.
pub fn measure(m: Measure, p: &Problem, r: &RunResult) -> anyhow::Result<f64> {
    use crate::boundary::Face;
    let sqrt_pi = std::f64::consts::PI.sqrt();
    let ini = p.initial_macro();
    let p0 = ini.pressure();
    Ok(match m {
        Measure::CouetteShear => {
            let (lo, _) = wall_of(p, Face::YMin)?;
            let (hi, _) = wall_of(p, Face::YMax)?;
            let u = hi[0] - lo[0];
            mean_over(p, &r.fields, |c| -c.p[3]) / (p0 * u / sqrt_pi)
        }
        Measure::FourierHeatFlux => {
            let (_, tlo) = wall_of(p, Face::YMin)?;
            let (_, thi) = wall_of(p, Face::YMax)?;
            let eps = (thi - tlo) / ini.t;
            mean_over(p, &r.fields, |c| -c.q[1]) / (p0 * eps / sqrt_pi)
        }
        Measure::CentreVelocity => {
            let (lid, _) = wall_of(p, Face::YMax)?;
            let g = &p.grid;
            let at = [0, 1, 2].map(|a| {
                let ax = [&g.x, &g.y, &g.z][a];
                0.5 * (ax.faces[0] + ax.faces[ax.len()])
            });
            interpolate(p, &r.fields, at, |c| c.u[0]) / lid[0]
        }
        Measure::LidShear => {
            let (lid, _) = wall_of(p, Face::YMax)?;
            let g = &p.grid;
            let j = g.ny() - 1;
            let (mut s, mut a) = (0.0, 0.0);
            for k in 0..g.nz() {
                for i in 0..g.nx() {
                    let w = g.x.widths[i] * g.z.widths[k];
                    s += w * -r.fields[g.index(i, j, k)].p[3];
                    a += w;
                }
            }
            s / a / (p0 * lid[0])
        }
        Measure::DragCoefficient => {
            let surf = crate::loads::surface(p, &r.wall, &r.wall_density);
            crate::loads::body_loads(p, &surf, &r.wall)
                .first()
                .and_then(|l| l.drag_coefficient)
                .ok_or_else(|| anyhow!("the drag coefficient needs a body and a free stream"))?
        }
    })
}

/// Trilinear interpolation of a cell-centred quantity at a point inside the centres' hull.
fn interpolate(p: &Problem, fields: &[Macro], at: [f64; 3], f: impl Fn(&Macro) -> f64) -> f64 {
    let g = &p.grid;
    let axes = [&g.x, &g.y, &g.z];
    let mut lo = [0usize; 3];
    let mut t = [0.0; 3];
    for a in 0..3 {
        let c = &axes[a].centres;
        if c.len() == 1 {
            continue;
        }
        let i = c.partition_point(|&x| x <= at[a]).clamp(1, c.len() - 1) - 1;
        lo[a] = i;
        t[a] = ((at[a] - c[i]) / (c[i + 1] - c[i])).clamp(0.0, 1.0);
    }
    let mut s = 0.0;
    for corner in 0..8 {
        let mut w = 1.0;
        let mut idx = [0usize; 3];
        for a in 0..3 {
            let up = (corner >> a) & 1 == 1;
            let n = axes[a].centres.len();
            idx[a] = if up { (lo[a] + 1).min(n - 1) } else { lo[a] };
            w *= if up { t[a] } else { 1.0 - t[a] };
        }
        if w != 0.0 {
            s += w * f(&fields[g.index(idx[0], idx[1], idx[2])]);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(dir: &str, name: &str) -> Suite {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
        let text = std::fs::read_to_string(path).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn every_suite_in_the_repository_checks() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/validation");
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            Suite::from_file(&path).unwrap_or_else(|err| panic!("{}: {err:#}", path.display()));
        }
    }

    #[test]
    fn a_convergence_suite_short_of_points_in_a_subset_is_rejected() {
        let mut s = suite("configs/validation", "couette-velocity.json");
        s.check().unwrap();
        // Move every fast point to `full` only: the fast run could not judge the order.
        for p in &mut s.points {
            p.subsets.retain(|x| x != "fast");
            if p.subsets.is_empty() {
                p.subsets.push("full".into());
            }
        }
        let err = s.check().unwrap_err().to_string();
        assert!(err.contains("`fast` subset has 0 point(s)") && err.contains("at least 3"), "{err}");
    }
}
