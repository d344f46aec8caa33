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
//!
//! This file holds the suite file's schema and its checks; [`run`] runs a suite and judges
//! it, [`measure`](mod@measure) turns a converged run into the quantity a suite compares.

pub mod measure;
pub mod run;

pub use measure::measure;
pub use run::{run_suite, PointResult, SuiteResult};

use crate::config::Config;
use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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
    pub(crate) fn name(self) -> &'static str {
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
            // A relative difference needs a nonzero reference, and a tolerance that a
            // difference can meet: otherwise the point could only fail, after its run.
            if let Some(r) = p.reference.filter(|r| !(r.is_finite() && *r != 0.0)) {
                bail!("point {n}: `reference` must be finite and nonzero (the difference is relative to it), got {r}");
            }
            if let Some(t) = p.tolerance.filter(|t| !(t.is_finite() && *t > 0.0)) {
                bail!("point {n}: `tolerance` must be positive and finite, got {t}");
            }
        }
        if let Some(t) = self.tolerance.filter(|t| !(t.is_finite() && *t > 0.0)) {
            bail!("`tolerance` must be positive and finite, got {t}");
        }
        if let Some([lo, hi]) = self.order.filter(|[lo, hi]| !(lo.is_finite() && hi.is_finite() && lo < hi)) {
            bail!("`order` must be an increasing range [lo, hi], got [{lo}, {hi}]");
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

    pub(crate) fn points_in(&self, subset: &str) -> Vec<&Point> {
        self.points.iter().filter(|p| p.subsets.iter().any(|s| s == subset)).collect()
    }
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
    fn values_that_could_only_fail_are_rejected_before_any_run() {
        // Each of these once ran every point and then failed the suite (exit 1).
        let c = suite("configs/validation", "couette-bgk.json");
        let refused = |edit: &dyn Fn(&mut Suite), words: &str| {
            let mut s = c.clone();
            edit(&mut s);
            let err = s.check().unwrap_err().to_string();
            assert!(err.contains(words), "{words}: {err}");
        };
        c.check().unwrap();
        refused(&|s| s.points[0].tolerance = Some(-0.5), "`tolerance` must be positive");
        refused(&|s| s.points[0].reference = Some(0.0), "`reference` must be finite and nonzero");
        let mut v = suite("configs/validation", "couette-refinement.json");
        v.check().unwrap();
        v.order = Some([2.0, 0.5]);
        assert!(v.check().unwrap_err().to_string().contains("increasing range"));
        let mut a = suite("configs/validation", "cavity-slip.json");
        a.check().unwrap();
        a.tolerance = Some(-1.0);
        assert!(a.check().unwrap_err().to_string().contains("`tolerance` must be positive"));
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
