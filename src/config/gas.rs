//! `gas`: rarefaction (Kn or delta), viscosity index and Prandtl number.

use super::{one, positive_finite, ConfigError};
use serde::{Deserialize, Serialize};

/// The smallest rarefaction parameter delta a case may have (`GasConfig::validate`).
pub const MIN_DELTA: f64 = 1e-15;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GasConfig {
    /// Knudsen number of the VHS mean free path (paper eq. mu_ref) on `length`.
    #[serde(default)]
    pub kn: Option<f64>,
    /// Rarefaction parameter delta = p0 L / (mu0 v0) on `length`.
    #[serde(default)]
    pub delta: Option<f64>,
    /// VHS viscosity index: mu = mu0 T^omega.
    #[serde(default = "default_omega")]
    pub omega: f64,
    /// Prandtl number of the Shakhov model; 1 gives BGK.
    #[serde(default = "default_prandtl")]
    pub prandtl: f64,
    /// Reference length of Kn and delta, in units of L.
    #[serde(default = "one")]
    pub length: f64,
}

fn default_omega() -> f64 {
    0.81
}
fn default_prandtl() -> f64 {
    2.0 / 3.0
}

impl GasConfig {
    /// Rarefaction parameter delta on the reference length (model.md, "Rarefaction").
    pub fn delta(&self) -> f64 {
        match (self.delta, self.kn) {
            (Some(d), _) => d,
            (None, Some(kn)) => crate::model::delta_from_kn(kn, self.omega),
            (None, None) => unreachable!("validated"),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let g = self;
        match (g.kn, g.delta) {
            (Some(_), Some(_)) => return Err(ConfigError::new("gas", "give either `kn` or `delta`, not both")),
            (None, None) => return Err(ConfigError::new("gas", "missing `kn` or `delta`")),
            (Some(kn), None) => positive_finite("gas.kn", kn)?,
            (None, Some(d)) => positive_finite("gas.delta", d)?,
        }
        // Past this the collision term is below f64's round-off beside the streaming term:
        // the flow is free-molecular long before (Kn of 1e3 is), and far past it (measured
        // at delta 1e-41 and 1e-50) the synthetic solve's coefficients leave f64's range.
        if self.delta() < MIN_DELTA {
            let (key, given) = match g.kn {
                Some(kn) => ("gas.kn", format!("{kn}, delta {:e}", self.delta())),
                None => ("gas.delta", format!("{:e}", self.delta())),
            };
            return Err(ConfigError::new(
                key,
                format!("rarefaction beyond delta = {MIN_DELTA:e} (Kn near 1e15), where collisions are below f64's round-off: got {given}; any Kn above about 1e3 is free-molecular flow"),
            ));
        }
        if !(g.omega.is_finite() && (0.5..=1.0).contains(&g.omega)) {
            return Err(ConfigError::new(
                "gas.omega",
                format!("must lie in [0.5, 1] (0.5 hard spheres, 1 Maxwell molecules), got {}", g.omega),
            ));
        }
        // The Shakhov correction keeps f^S positive only for moderate heat flux; Pr outside
        // (0, 1.5] is far from any monatomic or polyatomic gas.
        if !(g.prandtl.is_finite() && g.prandtl > 0.0 && g.prandtl <= 1.5) {
            return Err(ConfigError::new("gas.prandtl", format!("must lie in (0, 1.5], got {}", g.prandtl)));
        }
        positive_finite("gas.length", g.length)
    }
}

#[cfg(test)]
mod tests {
    use super::{GasConfig, MIN_DELTA};

    fn gas(kn: Option<f64>, delta: Option<f64>) -> GasConfig {
        GasConfig { kn, delta, omega: 0.81, prandtl: 2.0 / 3.0, length: 1.0 }
    }

    #[test]
    fn rarefaction_past_round_off_is_refused_by_the_key_given() {
        // Kn 1e40 once passed and ended in a non-finite synthetic correction.
        assert!(gas(Some(1e14), None).validate().is_ok());
        assert!(gas(None, Some(MIN_DELTA)).validate().is_ok());
        let e = gas(Some(1e40), None).validate().unwrap_err();
        assert_eq!(e.key, "gas.kn", "{e}");
        let e = gas(None, Some(1e-20)).validate().unwrap_err();
        assert_eq!(e.key, "gas.delta", "{e}");
        assert!(e.reason.contains("free-molecular"), "{e}");
    }
}
