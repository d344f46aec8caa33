//! `velocity`: the discrete velocity cube, and the rules that keep every Maxwellian of the
//! case inside it and resolved by it.

use super::{positive_finite, ConfigError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quadrature {
    Trapezoid,
    Simpson,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VelocityConfig {
    /// Points per axis; the grid has points^3 velocities.
    pub points: usize,
    /// Half-width a of the cube [-a, a]^3, in units of v0.
    #[serde(default = "default_vmax")]
    pub max: f64,
    #[serde(default = "default_quadrature")]
    pub quadrature: Quadrature,
}

fn default_vmax() -> f64 {
    4.0
}
fn default_quadrature() -> Quadrature {
    Quadrature::Trapezoid
}

/// A Maxwellian centred this many thermal widths sqrt(T) inside the velocity bound loses
/// erfc(2)/2 = 2.3e-3 of its one-sided tail to truncation; closer than that is rejected. The
/// Maxwellians are normalised on the grid, so the mass is kept; the tail shapes the higher
/// moments. Between 2 and 3 widths (erfc(3)/2 = 1.1e-5) is accepted with a warning: the
/// paper's Ma = 2 cube (|U| = 1.83, a = 4) sits at 2.2.
pub const MIN_THERMAL_WIDTHS_INSIDE: f64 = 2.0;
pub const WARN_THERMAL_WIDTHS_INSIDE: f64 = 3.0;

/// M^3 velocity indices must fit 32 bits (1625^3 < 2^32); 1024 is far beyond any useful grid.
pub const MAX_VELOCITY_POINTS: usize = 1024;

impl VelocityConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let v = self;
        positive_finite("velocity.max", v.max)?;
        if v.points < 2 {
            return Err(ConfigError::new(
                "velocity.points",
                format!("need at least 2 points per axis, got {}", v.points),
            ));
        }
        if v.points > MAX_VELOCITY_POINTS {
            return Err(ConfigError::new(
                "velocity.points",
                format!(
                    "at most {MAX_VELOCITY_POINTS} points per axis (velocity indices are 32-bit), got {}",
                    v.points
                ),
            ));
        }
        if v.quadrature == Quadrature::Simpson && v.points % 2 == 0 {
            return Err(ConfigError::new(
                "velocity.points",
                format!("composite Simpson needs an odd number of points, got {}", v.points),
            ));
        }
        Ok(())
    }

    /// A drifting Maxwellian (u, t), the state of `what` (a face, a body, the initial state or
    /// the free stream), must sit well inside the velocity cube. Refused under `velocity.max`,
    /// the key that always helps (the state may have no speed at all: a hot wall at rest).
    pub fn check_fits(&self, what: &str, u: [f64; 3], t: f64) -> Result<(), ConfigError> {
        let a = self.max;
        let umax = u.iter().fold(0.0f64, |m, c| m.max(c.abs()));
        let need = umax + MIN_THERMAL_WIDTHS_INSIDE * t.sqrt();
        if need > a {
            // Rounded up, so that the value printed is one the check takes.
            let enough = (need * 1e4).ceil() / 1e4;
            return Err(ConfigError::new(
                "velocity.max",
                format!(
                    "{a} is too small, too near the velocity bound for {what} (largest velocity component {umax}, T = {t}): its Maxwellian needs max |u_i| + {MIN_THERMAL_WIDTHS_INSIDE} sqrt(T) <= velocity.max; raise velocity.max to at least {enough:.4}, or lower that speed or temperature"
                ),
            ));
        }
        Ok(())
    }

    /// The grid spacing must resolve the narrowest Maxwellian, exp(-c^2 / T_min). Composite
    /// Simpson is (4 T_h - T_2h) / 3 and carries the error of the trapezoid rule at twice the
    /// spacing: at h = sqrt(T) its second moment, the temperature, is off by 11-29% (9 and 11
    /// points on [-4, 4]; 2e-3 for the trapezoid rule), so it must resolve at 2h.
    pub fn check_resolves(&self, t_min: f64) -> Result<(), ConfigError> {
        let simpson = self.quadrature == Quadrature::Simpson;
        let step = if simpson { 2 } else { 1 };
        let h = 2.0 * self.max / (self.points - 1) as f64;
        if step as f64 * h > t_min.sqrt() {
            // As a float first: a very cold wall asks for more points than any usize holds.
            let need_f = (step as f64 * 2.0 * self.max / t_min.sqrt()).ceil() + 1.0;
            let mut need = need_f.min(MAX_VELOCITY_POINTS as f64 + 1.0) as usize;
            if simpson && need % 2 == 0 {
                need += 1;
            }
            let advice = if need <= MAX_VELOCITY_POINTS {
                format!("use at least {need} points")
            } else {
                format!("more than the {MAX_VELOCITY_POINTS} points allowed would be needed: raise the coldest temperature or lower velocity.max")
            };
            let width =
                if t_min.sqrt() >= 1e-3 { format!("{:.3}", t_min.sqrt()) } else { format!("{:.3e}", t_min.sqrt()) };
            let which =
                if simpson { " (composite Simpson: twice the spacing, the step of its coarse half)" } else { "" };
            return Err(ConfigError::new(
                "velocity.points",
                format!(
                    "spacing {:.3} v0{which} does not resolve the coldest Maxwellian (width sqrt(T) = {width}); {advice}",
                    step as f64 * h,
                ),
            ));
        }
        Ok(())
    }

    /// The warning for a Maxwellian (u, t) between [`MIN_THERMAL_WIDTHS_INSIDE`] and
    /// [`WARN_THERMAL_WIDTHS_INSIDE`] widths inside the bound, if it is there, without the
    /// name of what emits it (several may share one line).
    pub fn tail_warning(&self, u: [f64; 3], t: f64) -> Option<String> {
        let a = self.max;
        let umax = u.iter().fold(0.0f64, |m, c| m.max(c.abs()));
        let widths = (a - umax) / t.sqrt();
        (widths < WARN_THERMAL_WIDTHS_INSIDE).then(|| {
            format!(
                "the Maxwellian sits {widths:.2} thermal widths inside velocity.max = {a}; its truncated tail (erfc({widths:.2})/2 = {:.1e}) distorts heat flux and stress slightly",
                0.5 * crate::model::erfc(widths)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Quadrature, VelocityConfig, MAX_VELOCITY_POINTS};
    use crate::config::{walled_box, BodyConfig, FaceConfig};

    #[test]
    fn the_points_advised_for_a_cold_wall_stay_within_the_limit() {
        // A wall at T = 0.01 on [-4, 4] needs 81 points; at 1e-30 or 1e-320 no count within
        // the limit would do (the advice once read 8000000000000002 and 0 points).
        let v = VelocityConfig { points: 16, max: 4.0, quadrature: Quadrature::Trapezoid };
        let e = v.check_resolves(0.01).unwrap_err();
        assert!(e.reason.ends_with("use at least 81 points"), "{e}");
        for t in [1e-30, 1e-320] {
            let e = v.check_resolves(t).unwrap_err();
            assert!(e.reason.contains(&format!("more than the {MAX_VELOCITY_POINTS} points")), "{t}: {e}");
        }
    }

    #[test]
    fn walls_and_bodies_near_the_bound_are_warned_of_once_per_state() {
        // 16 points on [-4, 4]: walls at rest and T = 1 sit 4 widths inside, no warning. A
        // lid at 1.8 sits 2.2 widths inside; a body moving at 1.7 along x 2.3: one line each,
        // naming it, and the walls alike share one line.
        let mut c = walled_box([4, 4, 4], 16);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
        c.boundaries.y_max = FaceConfig::DiffuseWall { temperature: 1.0, velocity: [1.8, 0.0, 0.0] };
        c.bodies.push(BodyConfig {
            name: None,
            min: [0.0, 0.25, 0.25],
            max: [1.0, 0.5, 0.5],
            temperature: 1.0,
            velocity: [1.7, 0.0, 0.0],
        });
        let w = c.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("boundaries.y_max: ") && w[0].contains("2.20 thermal widths"), "{w:?}");
        assert!(w[1].starts_with("bodies[0]: ") && w[1].contains("2.30 thermal widths"), "{w:?}");
        c.boundaries.y_min = FaceConfig::DiffuseWall { temperature: 1.0, velocity: [1.8, 0.0, 0.0] };
        assert!(c.warnings()[0].starts_with("boundaries.y_min, boundaries.y_max: "), "{:?}", c.warnings());
    }

    #[test]
    fn a_coarse_velocity_grid_at_small_kn_is_noted_where_synthetic_solves_are_made() {
        let mut c = walled_box([4, 4, 4], 9);
        c.gas.kn = Some(5e-5);
        let noted =
            |c: &crate::config::Config| c.warnings().iter().any(|w| w.starts_with("velocity.points: 9 per axis"));
        assert!(noted(&c), "{:?}", c.warnings());
        assert!(c.warnings()[0].ends_with("use at least 10"), "{:?}", c.warnings());
        c.solver.acceleration = crate::config::Acceleration::None;
        assert!(!noted(&c), "source iteration makes no synthetic solve");
        c.solver.acceleration = crate::config::Acceleration::Gsis;
        c.gas.kn = Some(1e-4);
        assert!(!noted(&c), "not from Kn 1e-4 up");
        c.gas.kn = Some(5e-5);
        c.velocity.points = 10;
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }
}
