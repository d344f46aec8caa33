//! Case files: JSON, parsed with serde and validated before anything runs.
//!
//! Every quantity is non-dimensional in the units of `docs/model.md` (length L, temperature
//! T0, density rho0, speed v0 = sqrt(2 R T0)). `docs/configs.md` documents every field.
//! A bad file yields a [`ConfigError`] naming the key and the reason; nothing is written.

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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridConfig {
    pub x: AxisConfig,
    pub y: AxisConfig,
    pub z: AxisConfig,
}

/// One axis of the physical grid, in one of three forms (docs/configs.md):
/// uniform `{min, max, cells}`; explicit `{faces: [...]}`; or stretched
/// `{min, max, stretched: {...}}` (uniform across a body, geometric toward both ends).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<usize>,
    /// Strictly increasing face coordinates (cells + 1 of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faces: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretched: Option<StretchConfig>,
}

impl AxisConfig {
    pub fn uniform(min: f64, max: f64, cells: usize) -> Self {
        Self { min: Some(min), max: Some(max), cells: Some(cells), ..Default::default() }
    }
}

/// Uniform cells over `uniform = [a, b]`, then cells growing geometrically by `ratio_min`
/// toward `min` and by `ratio_max` toward `max`. The number of growing cells on a side is
/// the rounded count that reaches the end at the given ratio; the ratio is then adjusted
/// (slightly) so the last face lands exactly on the end. `knudsen check` prints the result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StretchConfig {
    pub uniform: [f64; 2],
    /// Cells across [a, b].
    pub cells: usize,
    #[serde(default = "one")]
    pub ratio_min: f64,
    #[serde(default = "one")]
    pub ratio_max: f64,
}

/// Growth ratios above this make first-order upwinding on the stretched part too coarse to
/// be useful; 1 (no growth) is the lower bound.
pub const MAX_STRETCH_RATIO: f64 = 1.5;

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

impl BoundariesConfig {
    /// The six faces in the order of [`crate::boundary::Face::ALL`].
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
}

/// A solid axis-aligned box. Its faces must lie on cell faces of the grid.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub min: [f64; 3],
    pub max: [f64; 3],
    pub temperature: f64,
    /// Velocity of the body's surface (e.g. a belt); the wall density still makes the net
    /// mass flux through every surface face zero.
    #[serde(default)]
    pub velocity: [f64; 3],
}

impl BodyConfig {
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("body{index}"))
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverConfig {
    /// Stop when the largest relative L2 change of density, momentum and energy is below this.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    #[serde(default = "default_max_iterations")]
    pub max_iterations: usize,
    /// Budget for distribution-function slice storage, MiB. Sets the batch size. Default:
    /// the backend's (CPU 512 MiB, wgpu 2048 MiB).
    #[serde(default)]
    pub memory_budget_mib: Option<f64>,
    /// Rescale the total mass to its initial value after each iteration. Defaults to true
    /// when every face is a wall (closed domain), false otherwise.
    #[serde(default)]
    pub mass_rescale: Option<bool>,
    /// Damp wall-density updates that reverse the previous one (`crate::damping`).
    #[serde(default = "default_true")]
    pub wall_density_damping: bool,
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self {
            tolerance: default_tolerance(),
            max_iterations: default_max_iterations(),
            memory_budget_mib: None,
            mass_rescale: None,
            wall_density_damping: true,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Output directory; the CLI's `--out` overrides it. Default `out/<config file stem>`.
    #[serde(default)]
    pub dir: Option<String>,
}

fn one() -> f64 {
    1.0
}
fn default_omega() -> f64 {
    0.81
}
fn default_prandtl() -> f64 {
    2.0 / 3.0
}
fn default_vmax() -> f64 {
    4.0
}
fn default_quadrature() -> Quadrature {
    Quadrature::Trapezoid
}
fn default_true() -> bool {
    true
}

fn default_tolerance() -> f64 {
    1e-9
}
fn default_max_iterations() -> usize {
    1000
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
/// Cell indices within a slice and face arrays are 32-bit on GPUs.
pub const MAX_CELLS_PER_AXIS: usize = 16384;
/// Body surface faces are numbered in 25 bits of the GPU's per-cell wall word.
pub const MAX_WALL_FACES: usize = 1 << 25;

impl Config {
    /// Bytes of host memory a run needs besides slice storage: per cell the solver's f64
    /// fields (raw moments 13, sweep coefficients 10, macroscopic state 16, conserved 5,
    /// volumes 1) and output buffers (~16); per velocity its node and weight and the six
    /// faces' emission shapes; and the CPU backend's per-cell Gaussian tables.
    pub fn host_bytes(&self) -> u64 {
        let cells = self.cell_counts().iter().product::<usize>() as u64;
        let m = self.velocity.points as u64;
        // The CPU backend's Gaussian tables (3 M per cell), when it builds them.
        let tables = 3 * m * cells * 8;
        let tables = if tables <= crate::backend::cpu::GAUSS_TABLE_MAX_BYTES { tables } else { 0 };
        cells * (13 + 10 + 16 + 5 + 1 + 16) * 8 + m * m * m * (3 + 1 + 6) * 8 + tables
    }

    /// Cells per axis (validated config).
    pub fn cell_counts(&self) -> [usize; 3] {
        let g = &self.grid;
        [&g.x, &g.y, &g.z].map(|a| crate::grid::Axis::from_config(a).map_or(0, |a| a.len()))
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
        let mut w = Vec::new();
        let a = self.velocity.max;
        let mut states =
            vec![("initial state".to_string(), self.initial_state().velocity, self.initial_state().temperature)];
        if let Some(fs) = &self.free_stream {
            states.push(("free stream".into(), fs.velocity(), fs.temperature));
        }
        for (name, u, t) in states {
            let umax = u.iter().fold(0.0f64, |m, c| m.max(c.abs()));
            let widths = (a - umax) / t.sqrt();
            if widths < WARN_THERMAL_WIDTHS_INSIDE {
                w.push(format!(
                    "{name}: the Maxwellian sits {widths:.2} thermal widths inside velocity.max = {a}; its truncated tail (erfc({widths:.2})/2 = {:.1e}) distorts heat flux and stress slightly",
                    0.5 * crate::model::erfc(widths)
                ));
            }
        }
        w
    }

    /// Parse JSON text; unknown keys and wrong types are errors naming the key.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            // "." is the document root and "?" a position the parser could not name (syntax
            // errors); neither is a key.
            let key = if key == "." || key == "?" { String::new() } else { key };
            ConfigError::new(key, e.into_inner().to_string())
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::new("", format!("cannot read {}: {e}", path.display())))?;
        Self::from_json(&text)
    }

    /// Rarefaction parameter delta on the reference length (model.md, "Rarefaction").
    pub fn delta(&self) -> f64 {
        match (self.gas.delta, self.gas.kn) {
            (Some(d), _) => d,
            (None, Some(kn)) => crate::model::delta_from_kn(kn, self.gas.omega),
            (None, None) => unreachable!("validated"),
        }
    }

    pub fn kn(&self) -> f64 {
        crate::model::kn_from_delta(self.delta(), self.gas.omega)
    }

    /// True when no face lets mass in or out (walls, symmetry planes, periodic pairs).
    pub fn closed(&self) -> bool {
        self.boundaries.faces().iter().all(|(_, f)| !matches!(f, FaceConfig::FreeStream {}))
    }

    /// The boxes of all bodies, as cell index ranges [lo, hi) per axis (validated config).
    pub fn body_cells(&self, axes: [&crate::grid::Axis; 3]) -> Vec<[[usize; 2]; 3]> {
        self.bodies
            .iter()
            .map(|b| {
                std::array::from_fn(|d| [axes[d].face_index(b.min[d]).unwrap(), axes[d].face_index(b.max[d]).unwrap()])
            })
            .collect()
    }

    pub fn mass_rescale(&self) -> bool {
        self.solver.mass_rescale.unwrap_or_else(|| self.closed())
    }

    /// Check every value; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let g = &self.gas;
        match (g.kn, g.delta) {
            (Some(_), Some(_)) => return Err(ConfigError::new("gas", "give either `kn` or `delta`, not both")),
            (None, None) => return Err(ConfigError::new("gas", "missing `kn` or `delta`")),
            (Some(kn), None) => positive_finite("gas.kn", kn)?,
            (None, Some(d)) => positive_finite("gas.delta", d)?,
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
        positive_finite("gas.length", g.length)?;

        let mut axes = Vec::new();
        for (name, a) in [("x", &self.grid.x), ("y", &self.grid.y), ("z", &self.grid.z)] {
            let axis = crate::grid::Axis::from_config(a)
                .map_err(|e| ConfigError::new(format!("grid.{name}{}", e.key), e.reason))?;
            if axis.len() > MAX_CELLS_PER_AXIS {
                return Err(ConfigError::new(
                    format!("grid.{name}"),
                    format!("at most {MAX_CELLS_PER_AXIS} cells per axis, got {}", axis.len()),
                ));
            }
            axes.push(axis);
        }

        let v = &self.velocity;
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

        let ini = self.initial_state();
        // Without `initial` a free stream is the initial state; it is checked under its own key.
        if self.initial.is_some() || self.free_stream.is_none() {
            positive_finite("initial.density", ini.density)?;
            positive_finite("initial.temperature", ini.temperature)?;
            self.check_fits("initial.velocity", ini.velocity, ini.temperature)?;
        }

        let mut t_min = ini.temperature;
        let mut uses_free_stream = false;
        for (name, face) in self.boundaries.faces() {
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
                    self.check_fits(&format!("boundaries.{name}.velocity"), *velocity, *temperature)?;
                    t_min = t_min.min(*temperature);
                }
                FaceConfig::FreeStream {} => {
                    if self.free_stream.is_none() {
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
                        "x_min" => ("x_max", &self.boundaries.x_max),
                        "x_max" => ("x_min", &self.boundaries.x_min),
                        "y_min" => ("y_max", &self.boundaries.y_max),
                        "y_max" => ("y_min", &self.boundaries.y_min),
                        "z_min" => ("z_max", &self.boundaries.z_max),
                        _ => ("z_min", &self.boundaries.z_min),
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
        if let Some(fs) = &self.free_stream {
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
            let key = if fs.mach.is_some() { "free_stream.mach" } else { "free_stream.velocity" };
            self.check_fits(key, fs.velocity(), fs.temperature)?;
            t_min = t_min.min(fs.temperature);
        }
        for (b, body) in self.bodies.iter().enumerate() {
            let key = format!("bodies[{b}]");
            positive_finite(&format!("{key}.temperature"), body.temperature)?;
            if body.velocity.iter().any(|c| !c.is_finite()) {
                return Err(ConfigError::new(format!("{key}.velocity"), "must be finite"));
            }
            self.check_fits(&format!("{key}.velocity"), body.velocity, body.temperature)?;
            t_min = t_min.min(body.temperature);
            for (d, axis) in axes.iter().enumerate() {
                let an = ["x", "y", "z"][d];
                let (lo, hi) = (body.min[d], body.max[d]);
                if !(lo.is_finite() && hi.is_finite() && hi > lo) {
                    return Err(ConfigError::new(
                        format!("{key}.max"),
                        format!("{an}: max must exceed min ({hi} <= {lo})"),
                    ));
                }
                let (d0, d1) = (axis.faces[0], *axis.faces.last().unwrap());
                if lo < d0 || hi > d1 {
                    return Err(ConfigError::new(
                        key.clone(),
                        format!("{an} extent [{lo}, {hi}] leaves the domain [{d0}, {d1}]"),
                    ));
                }
                for (what, c) in [("min", lo), ("max", hi)] {
                    if axis.face_index(c).is_none() {
                        let near =
                            axis.faces.iter().cloned().min_by(|p, q| (p - c).abs().total_cmp(&(q - c).abs())).unwrap();
                        return Err(ConfigError::new(
                            format!("{key}.{what}"),
                            format!("{an} = {c} is not on a cell face of grid.{an} (nearest face {near}); bodies are not approximated, align the grid with them"),
                        ));
                    }
                }
            }
        }

        // The grid spacing must resolve the narrowest Maxwellian, exp(-c^2 / T_min).
        let h = 2.0 * v.max / (v.points - 1) as f64;
        if h > t_min.sqrt() {
            let need = (2.0 * v.max / t_min.sqrt()).ceil() as usize + 1;
            return Err(ConfigError::new(
                "velocity.points",
                format!(
                    "spacing {h:.3} v0 does not resolve the coldest Maxwellian (width sqrt(T) = {:.3}); use at least {need} points",
                    t_min.sqrt()
                ),
            ));
        }

        let s = &self.solver;
        positive_finite("solver.tolerance", s.tolerance)?;
        if s.max_iterations == 0 {
            return Err(ConfigError::new("solver.max_iterations", "must be at least 1"));
        }
        if let Some(b) = s.memory_budget_mib {
            positive_finite("solver.memory_budget_mib", b)?;
        }
        if let Some(dir) = &self.output.dir {
            if dir.trim().is_empty() {
                return Err(ConfigError::new("output.dir", "must not be empty"));
            }
        }
        Ok(())
    }

    /// A drifting Maxwellian (u, t) must sit well inside the velocity cube.
    fn check_fits(&self, key: &str, u: [f64; 3], t: f64) -> Result<(), ConfigError> {
        let a = self.velocity.max;
        let umax = u.iter().fold(0.0f64, |m, c| m.max(c.abs()));
        let margin = MIN_THERMAL_WIDTHS_INSIDE * t.sqrt();
        if umax + margin > a {
            return Err(ConfigError::new(
                key,
                format!(
                    "speed {umax} is too near the velocity bound {a}: the Maxwellian at T = {t} needs |u| + {MIN_THERMAL_WIDTHS_INSIDE} sqrt(T) <= velocity.max"
                ),
            ));
        }
        Ok(())
    }
}

fn positive_finite(key: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(key, format!("must be positive and finite, got {v}")))
    }
}
