//! Case files: JSON, parsed with serde and validated before anything runs.
//!
//! Every quantity is non-dimensional in the units of `docs/model.md` (length L, temperature
//! T0, density rho0, speed v0 = sqrt(2 R T0)). `docs/configs.md` documents every field.
//! A bad file yields a [`ConfigError`] naming the key and the reason; nothing is written.
//!
//! One file per section of the case, each beside its own validation: [`gas`], [`grid`],
//! [`velocity`], [`boundaries`], [`bodies`], [`free_stream`] (with `initial`), [`solver`],
//! [`output`]. This module holds the whole case, the order in which the sections are checked
//! (the first problem found is reported) and the quantities derived from several sections.
//! The schema depends on nothing else in the crate but `crate::model`'s formulas.

pub mod bodies;
mod body_motion;
pub mod boundaries;
mod compare;
pub mod free_stream;
pub mod gas;
pub mod grid;
pub mod output;
pub mod partner_layout;
pub mod solver;
pub mod velocity;

pub use bodies::{BodyConfig, MAX_WALL_FACES};
pub use boundaries::{BoundariesConfig, FaceConfig};
pub use compare::fnv1a;
pub use free_stream::{FreeStreamConfig, InitialConfig, GAMMA};
pub use gas::GasConfig;
pub use grid::{AxisConfig, GridConfig, StretchConfig, MAX_CELLS_PER_AXIS, MAX_STRETCH_RATIO};
pub use output::OutputConfig;
pub use solver::{Acceleration, Precision, Scheme, SolverConfig, MAX_ITERATIONS};
pub use velocity::{
    Quadrature, VelocityConfig, MAX_VELOCITY_POINTS, MIN_THERMAL_WIDTHS_INSIDE, WARN_THERMAL_WIDTHS_INSIDE,
};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A config error: the dotted key that is wrong and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub key: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "config error: {}", self.reason)
        } else {
            write!(f, "config error: `{}`: {}", self.key, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Free text naming the case; copied into the outputs.
    #[serde(default)]
    pub name: Option<String>,
    pub gas: GasConfig,
    pub grid: GridConfig,
    pub velocity: VelocityConfig,
    pub boundaries: BoundariesConfig,
    /// The undisturbed gas that `free_stream` faces emit (external flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_stream: Option<FreeStreamConfig>,
    /// Solid axis-aligned boxes inside the domain; their surfaces are diffuse walls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bodies: Vec<BodyConfig>,
    /// Initial state; defaults to the free stream when there is one, else gas at rest at
    /// density 1 and temperature 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<InitialConfig>,
    #[serde(default)]
    pub solver: SolverConfig,
    #[serde(default)]
    pub output: OutputConfig,
}

fn one() -> f64 {
    1.0
}

fn positive_finite(key: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(key, format!("must be positive and finite, got {v}")))
    }
}

impl Config {
    /// Parse JSON text; unknown keys and wrong types are errors naming the key.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        // Editors on some systems begin a UTF-8 file with a byte-order mark, which JSON
        // parsers may skip (RFC 8259, 8.1).
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // serde would also read a struct from an array of its fields in order; a case is an
        // object of named sections.
        let first = text.trim_start().chars().next();
        if first.is_some_and(|c| c != '{') {
            return Err(ConfigError::new("", "a case is a JSON object ({ \"gas\": ..., \"grid\": ..., ... })"));
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: Config = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
            let key = e.path().to_string();
            // "." is the document root and "?" a position the parser could not name (syntax
            // errors); neither is a key.
            let key = if key == "." || key == "?" { String::new() } else { key };
            let reason = e.into_inner().to_string();
            // serde_json's word for a fixed-length array given more elements than it holds.
            let reason = match reason.strip_prefix("trailing characters") {
                Some(at) if !key.is_empty() => format!("too many elements{at}"),
                _ => reason,
            };
            ConfigError::new(key, reason)
        })?;
        // Anything after the case's object (a second object pasted in, say) is an error, not
        // ignored.
        de.end().map_err(|e| ConfigError::new("", format!("{e} after the case's object")))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new("", format!("cannot read {}: {e}", path.display())))?;
        Self::from_json(&text)
    }

    /// Check every value, section by section; the first problem found is returned.
    /// Sections that depend on others come after them: walls, the free stream and bodies
    /// need the velocity cube, bodies the grid, and the velocity spacing the coldest
    /// temperature of all of them.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.gas.validate()?;
        let faces = self.grid.validate()?;
        let v = &self.velocity;
        v.validate()?;
        let ini = self.initial_state();
        // Without `initial` a free stream is the initial state; it is checked under its own key.
        if self.initial.is_some() || self.free_stream.is_none() {
            ini.validate(v)?;
        }
        let mut t_min = ini.temperature;
        let uses_free_stream = self.boundaries.validate(v, self.free_stream.is_some(), &mut t_min)?;
        if let Some(fs) = &self.free_stream {
            fs.validate(v, uses_free_stream, &mut t_min)?;
        }
        for (b, body) in self.bodies.iter().enumerate() {
            body.validate(b, v, &faces, &mut t_min)?;
            // Loads and surface data are reported by name: two bodies of one name would be
            // told apart only by their order.
            if let Some(first) = (0..b).find(|&o| self.bodies[o].label(o) == body.label(b)) {
                // An unnamed body is labelled by its index ("body1"), so the clash may be
                // with a name given to another body: the key named is a name that was given.
                let said = |o: usize| {
                    if self.bodies[o].name.is_some() {
                        "the name of"
                    } else {
                        "the label of the unnamed"
                    }
                };
                let key = if body.name.is_some() { b } else { first };
                return Err(ConfigError::new(
                    format!("bodies[{key}].name"),
                    format!(
                        "\"{}\" is {} bodies[{b}] and {} bodies[{first}]: give each body its own name",
                        body.label(b),
                        said(b),
                        said(first)
                    ),
                ));
            }
        }
        bodies::check_wall_faces(&self.bodies, &faces)?;
        bodies::check_gas_left(&self.bodies, &faces)?;
        let f = self.boundaries.faces();
        bodies::check_periodic_wrap(&self.bodies, &faces, std::array::from_fn(|d| f[2 * d].1.is_periodic()))?;
        body_motion::check_tangential(&self.bodies, &faces)?;
        if !self.boundaries.any_thermal() && self.bodies.is_empty() {
            // Nothing outside the gas sets its temperature: the uniform initial state is the
            // answer, and the discrete collision operator, which conserves energy only to the
            // velocity quadrature's accuracy, makes the temperature drift by about 1e-7 per
            // sweep (a synthetic correction amplifies the drift), so no run would converge.
            return Err(ConfigError::new(
                "boundaries",
                "no face is a diffuse wall or a free stream and there is no body: nothing sets the gas's temperature, so the uniform initial state is the answer and there is nothing to solve (the discrete model would only drift from it)",
            ));
        }
        v.check_resolves(t_min)?;
        self.solver.validate()?;
        self.output.validate()
    }

    /// Rarefaction parameter delta on the reference length (model.md, "Rarefaction").
    pub fn delta(&self) -> f64 {
        self.gas.delta()
    }

    pub fn kn(&self) -> f64 {
        crate::model::kn_from_delta(self.delta(), self.gas.omega)
    }

    /// True when no face lets mass in or out (walls, symmetry planes, periodic pairs).
    pub fn closed(&self) -> bool {
        self.boundaries.closed()
    }

    pub fn mass_rescale(&self) -> bool {
        self.solver.mass_rescale.unwrap_or_else(|| self.closed())
    }

    /// Cells per axis (validated config).
    pub fn cell_counts(&self) -> [usize; 3] {
        self.grid.cell_counts()
    }

    /// The initial state: `initial`, else the free stream, else rest at (1, 1).
    pub fn initial_state(&self) -> InitialConfig {
        match (&self.initial, &self.free_stream) {
            (Some(i), _) => i.clone(),
            (None, Some(fs)) => {
                InitialConfig { density: fs.density, temperature: fs.temperature, velocity: fs.velocity() }
            }
            (None, None) => InitialConfig::default(),
        }
    }

    /// Non-fatal remarks on a valid case (printed by `run` and `check`).
    pub fn warnings(&self) -> Vec<String> {
        let ini = self.initial_state();
        let faces = self.boundaries.faces();
        // Walls and bodies emit Maxwellians too, as close to the grid's bound as the check on
        // them allows (docs/configs.md, "velocity").
        let states = std::iter::once(("initial state".to_string(), ini.velocity, ini.temperature))
            .chain(self.free_stream.iter().map(|fs| ("free stream".to_string(), fs.velocity(), fs.temperature)))
            .chain(faces.iter().filter_map(|(name, f)| match f {
                FaceConfig::DiffuseWall { temperature, velocity } => {
                    Some((format!("boundaries.{name}"), *velocity, *temperature))
                }
                _ => None,
            }))
            .chain(self.bodies.iter().enumerate().map(|(i, b)| (format!("bodies[{i}]"), b.velocity, b.temperature)));
        // One line per distinct warning, naming every source it holds for (six walls alike).
        let mut tails: Vec<(String, Vec<String>)> = Vec::new();
        for (name, u, t) in states {
            let Some(tail) = self.velocity.tail_warning(u, t) else { continue };
            match tails.iter_mut().find(|(r, _)| *r == tail) {
                Some((_, names)) => names.push(name),
                None => tails.push((tail, vec![name])),
            }
        }
        let mut w: Vec<String> =
            tails.into_iter().map(|(tail, names)| format!("{}: {tail}", names.join(", "))).collect();
        w.extend(self.partner_orbit_warning());
        w.extend(self.coarse_velocities_note());
        w
    }

    /// A note where the synthetic correction meets a velocity grid too coarse for it: below
    /// Kn [`COARSE_VELOCITIES_KN`] with fewer than [`FINE_VELOCITY_POINTS`] points per axis.
    pub fn coarse_velocities_note(&self) -> Option<String> {
        let (kn, points) = (self.kn(), self.velocity.points);
        // Composite Simpson takes odd counts only.
        let simpson = self.velocity.quadrature == velocity::Quadrature::Simpson;
        let advice = FINE_VELOCITY_POINTS + usize::from(simpson);
        (kn < COARSE_VELOCITIES_KN && points < FINE_VELOCITY_POINTS && self.solver.acceleration.synthetic()).then(|| {
            format!(
                "velocity.points: {points} per axis at Kn {kn:.1e} may keep the synthetic correction from converging (measured on 12^3 lid cavities, f64: 9 points diverged at Kn 2e-5 and 5e-5, where 10, 12 and 16 converged in 13-17 sweeps at Kn 1e-5, and 12 at 5e-6); use at least {advice}"
            )
        })
    }
}

/// Below this Kn a velocity grid of fewer than [`FINE_VELOCITY_POINTS`] points per axis is
/// noted (`Config::coarse_velocities_note`). Since the collision term conserves momentum and
/// energy on the grid (`model::matched_maxwellian`), 9 points converged down to Kn 1e-4.
pub const COARSE_VELOCITIES_KN: f64 = 1e-4;

/// The velocity points per axis from which the synthetic correction converged at Kn 1e-5 on
/// 12^3 lid cavities (10, 12 and 16 points: 17, 14 and 13 sweeps, f64; 12 also at Kn 5e-6),
/// where 9 diverged at Kn 2e-5 and 5e-5.
pub const FINE_VELOCITY_POINTS: usize = 10;

/// Below this Kn the synthetic correction on f32 arithmetic may stall above the 1e-5 stop:
/// on the 16^3 cavity the CPU's f32 path stalled at 4.5e-5, 1.8e-5 and 1.1e-5 at Kn 0.001,
/// 0.002 and 0.003 and converged at 0.005, and CUDA and wgpu at 4.8e-5 at Kn 0.001 on 32^3
/// (`docs/model.md`, "The f32 floor at small Kn").
pub const F32_FLOOR_KN: f64 = 0.004;

impl Config {
    /// What to expect of this case on f32 arithmetic (the GPU backends, the CPU's `"f32"`),
    /// where the synthetic correction raises the round-off floor: a note below
    /// [`F32_FLOOR_KN`] with an acceleration that makes synthetic solves.
    pub fn f32_floor_note(&self) -> Option<String> {
        // With "f64" no backend sweeps in f32 (a wgpu adapter without f64 refuses it).
        let f64 = self.solver.names_f64();
        (self.kn() < F32_FLOOR_KN && self.solver.acceleration.synthetic() && !f64).then(|| {
            format!(
                "at Kn {:.2e} the synthetic correction amplifies f32 round-off: on f32 arithmetic (the GPU backends, the CPU's \"f32\") the residual may stall above 1e-5, and the run then stops as stalled (solver.stall_sweeps); f64 converges: --precision f64 with --backend cuda or wgpu (the f64 slice kernels; wgpu on adapters with f64 shaders) or --backend cpu (docs/configs.md, \"The f32 floor\")",
                self.kn()
            )
        })
    }
}

/// A unit box of `cells` with diffuse walls at T = 1 all round, Kn = 1 and `points`^3
/// velocities: the case the unit tests build on.
#[cfg(test)]
pub(crate) fn walled_box(cells: [usize; 3], points: usize) -> Config {
    let wall = r#"{"type": "diffuse_wall", "temperature": 1.0}"#;
    let axis = |n: usize| format!(r#"{{"min": 0, "max": 1, "cells": {n}}}"#);
    Config::from_json(&format!(
        r#"{{"gas": {{"kn": 1.0}}, "grid": {{"x": {}, "y": {}, "z": {}}},
            "velocity": {{"points": {points}}},
            "boundaries": {{"x_min": {wall}, "x_max": {wall}, "y_min": {wall}, "y_max": {wall},
                            "z_min": {wall}, "z_max": {wall}}}}}"#,
        axis(cells[0]),
        axis(cells[1]),
        axis(cells[2])
    ))
    .expect("a valid test case")
}
