//! `free_stream` (the undisturbed gas of an external flow) and `initial` (the first iterate).

use super::{one, positive_finite, ConfigError, VelocityConfig};
use serde::{Deserialize, Serialize};

/// The free stream: density, temperature, and either a Mach number with a direction or a
/// velocity (units of v0). The gas is monatomic: the speed of sound is sqrt(5/6 T) v0.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreeStreamConfig {
    #[serde(default = "one")]
    pub density: f64,
    #[serde(default = "one")]
    pub temperature: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mach: Option<f64>,
    /// Direction of the flow for `mach`; normalised. Default +x.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<[f64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velocity: Option<[f64; 3]>,
}

/// Ratio of specific heats of a monatomic gas.
pub const GAMMA: f64 = 5.0 / 3.0;

impl FreeStreamConfig {
    /// Speed of sound sqrt(gamma R T) in units of v0 = sqrt(2 R T0).
    pub fn sound_speed(&self) -> f64 {
        (GAMMA / 2.0 * self.temperature).sqrt()
    }

    /// The free-stream velocity (validated config).
    pub fn velocity(&self) -> [f64; 3] {
        match (self.velocity, self.mach) {
            (Some(u), _) => u,
            (None, Some(ma)) => {
                let d = self.direction.unwrap_or([1.0, 0.0, 0.0]);
                let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let s = ma * self.sound_speed() / n;
                [d[0] * s, d[1] * s, d[2] * s]
            }
            (None, None) => [0.0; 3],
        }
    }

    pub fn mach(&self) -> f64 {
        let u = self.velocity();
        (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt() / self.sound_speed()
    }

    /// Check the section; `uses_free_stream`: some face has type free_stream. Lowers
    /// `t_min` to the free-stream temperature.
    pub fn validate(&self, v: &VelocityConfig, uses_free_stream: bool, t_min: &mut f64) -> Result<(), ConfigError> {
        let fs = self;
        if !uses_free_stream {
            return Err(ConfigError::new("free_stream", "given, but no face has type free_stream"));
        }
        positive_finite("free_stream.density", fs.density)?;
        positive_finite("free_stream.temperature", fs.temperature)?;
        match (fs.mach, fs.velocity) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    "free_stream",
                    "give either `mach` (and `direction`) or `velocity`, not both",
                ))
            }
            (None, None) => return Err(ConfigError::new("free_stream", "missing `mach` or `velocity`")),
            (Some(ma), None) => {
                if !(ma.is_finite() && ma >= 0.0) {
                    return Err(ConfigError::new("free_stream.mach", format!("must be finite and >= 0, got {ma}")));
                }
                if let Some(d) = fs.direction {
                    let n2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    if !(n2.is_finite() && n2 > 0.0) {
                        return Err(ConfigError::new("free_stream.direction", "must be a finite nonzero vector"));
                    }
                }
            }
            (None, Some(u)) => {
                if fs.direction.is_some() {
                    return Err(ConfigError::new("free_stream.direction", "goes with `mach`, not `velocity`"));
                }
                if u.iter().any(|c| !c.is_finite()) {
                    return Err(ConfigError::new("free_stream.velocity", "must be finite"));
                }
            }
        }
        v.check_fits("the free stream", fs.velocity(), fs.temperature)?;
        *t_min = t_min.min(fs.temperature);
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitialConfig {
    #[serde(default = "one")]
    pub density: f64,
    #[serde(default = "one")]
    pub temperature: f64,
    #[serde(default)]
    pub velocity: [f64; 3],
}

impl Default for InitialConfig {
    fn default() -> Self {
        Self { density: 1.0, temperature: 1.0, velocity: [0.0; 3] }
    }
}

impl InitialConfig {
    pub fn validate(&self, v: &VelocityConfig) -> Result<(), ConfigError> {
        positive_finite("initial.density", self.density)?;
        positive_finite("initial.temperature", self.temperature)?;
        v.check_fits("the initial state", self.velocity, self.temperature)
    }
}
