//! `boundaries`: what each of the six box faces is.

use super::{positive_finite, ConfigError, VelocityConfig};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundariesConfig {
    pub x_min: FaceConfig,
    pub x_max: FaceConfig,
    pub y_min: FaceConfig,
    pub y_max: FaceConfig,
    pub z_min: FaceConfig,
    pub z_max: FaceConfig,
}

/// What a box face is. New kinds (free stream, specular, periodic) are new variants.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaceConfig {
    /// Maxwell diffuse wall: molecules leave with the wall's Maxwellian.
    DiffuseWall {
        temperature: f64,
        /// Wall velocity; must be tangential to the face.
        #[serde(default)]
        velocity: [f64; 3],
    },
    /// Molecules enter with the free-stream Maxwellian (`free_stream`); those that reach
    /// the face leave the domain.
    FreeStream {},
    /// Specular reflection (a symmetry plane): the molecule leaving with xi re-enters with
    /// the normal component reversed.
    Specular {},
    /// Molecules leaving through this face enter through the opposite one, which must be
    /// periodic too.
    Periodic {},
}

impl FaceConfig {
    pub fn is_periodic(&self) -> bool {
        matches!(self, FaceConfig::Periodic {})
    }
}

impl BoundariesConfig {
    /// The six faces in the order of `crate::boundary::Face::ALL`.
    pub fn faces(&self) -> [(&'static str, &FaceConfig); 6] {
        [
            ("x_min", &self.x_min),
            ("x_max", &self.x_max),
            ("y_min", &self.y_min),
            ("y_max", &self.y_max),
            ("z_min", &self.z_min),
            ("z_max", &self.z_max),
        ]
    }

    /// Whether a face holds the gas's temperature: a diffuse wall or a free stream (specular
    /// and periodic faces exchange no energy with anything outside).
    pub fn any_thermal(&self) -> bool {
        self.faces().iter().any(|(_, f)| matches!(f, FaceConfig::DiffuseWall { .. } | FaceConfig::FreeStream {}))
    }

    /// True when no face lets mass in or out (walls, symmetry planes, periodic pairs).
    pub fn closed(&self) -> bool {
        self.faces().iter().all(|(_, f)| !matches!(f, FaceConfig::FreeStream {}))
    }

    /// Check each face in order. Lowers `t_min` to the coldest wall; returns whether a face
    /// uses the free stream (`has_free_stream`: the top-level section is there).
    pub fn validate(&self, v: &VelocityConfig, has_free_stream: bool, t_min: &mut f64) -> Result<bool, ConfigError> {
        let mut uses_free_stream = false;
        for (name, face) in self.faces() {
            match face {
                FaceConfig::DiffuseWall { temperature, velocity } => {
                    positive_finite(&format!("boundaries.{name}.temperature"), *temperature)?;
                    let axis = match &name[..1] {
                        "x" => 0,
                        "y" => 1,
                        _ => 2,
                    };
                    if velocity[axis] != 0.0 {
                        return Err(ConfigError::new(
                            format!("boundaries.{name}.velocity"),
                            format!("a wall moves tangentially: component {} must be 0", &name[..1]),
                        ));
                    }
                    if velocity.iter().any(|c| !c.is_finite()) {
                        return Err(ConfigError::new(format!("boundaries.{name}.velocity"), "must be finite"));
                    }
                    v.check_fits(&format!("the wall boundaries.{name}"), *velocity, *temperature)?;
                    *t_min = t_min.min(*temperature);
                }
                FaceConfig::FreeStream {} => {
                    if !has_free_stream {
                        return Err(ConfigError::new(
                            format!("boundaries.{name}"),
                            "a free_stream face needs the top-level `free_stream` section",
                        ));
                    }
                    uses_free_stream = true;
                }
                FaceConfig::Specular {} => {}
                FaceConfig::Periodic {} => {
                    let other = match name {
                        "x_min" => ("x_max", &self.x_max),
                        "x_max" => ("x_min", &self.x_min),
                        "y_min" => ("y_max", &self.y_max),
                        "y_max" => ("y_min", &self.y_min),
                        "z_min" => ("z_max", &self.z_max),
                        _ => ("z_min", &self.z_min),
                    };
                    if !other.1.is_periodic() {
                        return Err(ConfigError::new(
                            format!("boundaries.{}", other.0),
                            format!("must be periodic too: {name} is periodic"),
                        ));
                    }
                }
            }
        }
        Ok(uses_free_stream)
    }
}
