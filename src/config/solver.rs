//! `solver`: when to stop, how much memory the sweep may hold, mass rescale and damping.

use super::{positive_finite, ConfigError};
use serde::{Deserialize, Serialize};

/// `solver.coarse_grids` may ask for at most this many levels (`crate::solver::coarse`).
pub const MAX_COARSE_GRIDS: usize = 3;

/// The smallest `solver.partner_relaxation` taken. The stop test measures each sweep's change
/// of the fields; with a share theta of the partner data's change taken per sweep, the fields
/// stop about tolerance / theta from the fixed point (measured on a 6^3 cavity with a
/// specular face, GSIS, to 1e-9: velocity 1.2e-9 at 0.5, 2.5e-8 at 0.05, 1.3e-7 at 0.01), and
/// below ~1e-3 the fields settle on the frozen partner data instead, "converged" 5e-2 off.
pub const MIN_PARTNER_RELAXATION: f64 = 0.05;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverConfig {
    /// Stop when the largest relative L2 change of density, momentum and energy is below this.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    #[serde(default = "default_max_iterations")]
    pub max_iterations: usize,
    /// Budget for distribution-function storage, MiB. Sets the batch size. Default: the
    /// backend's (CPU 512 MiB; CUDA half the device's memory; wgpu half a discrete Vulkan
    /// GPU's memory, at least 2048 MiB, else 2048; `docs/configs.md`).
    #[serde(default)]
    pub memory_budget_mib: Option<f64>,
    /// Rescale the gas's mass to its initial value after each iteration. Defaults to true
    /// when no face is a free stream (walls, specular and periodic faces keep the mass in),
    /// false otherwise.
    #[serde(default)]
    pub mass_rescale: Option<bool>,
    /// Damp wall-density updates that reverse the previous one when that one reversed its
    /// own predecessor (`crate::damping`).
    #[serde(default = "default_true")]
    pub wall_density_damping: bool,
    /// Minutes between checkpoints (`checkpoint.h5` in the output directory) of `knudsen run`.
    #[serde(default = "default_checkpoint_minutes")]
    pub checkpoint_minutes: f64,
    /// What happens between two sweeps (`docs/model.md`): plain source iteration, or a
    /// synthetic correction that reaches the same fixed point in far fewer sweeps.
    #[serde(default)]
    pub acceleration: Acceleration,
    /// The sweep's spatial discretisation (`docs/model.md`, "Second-order sweep"): first-order
    /// upwind, or the bounded diamond difference, second order, which keeps four slices per
    /// velocity (the cell values and the face values it emits along x, y and z).
    #[serde(default)]
    pub scheme: Scheme,
    /// The sweep's arithmetic and distribution storage (`docs/configs.md`); None: each
    /// backend's own, f64 on the CPU (the reference) and f32 on the GPUs. "f32" on the CPU
    /// vectorises the first-order sweep over velocities; "f64" on CUDA sweeps with the f64
    /// slice kernels, and so does wgpu on adapters with f64 shaders (others refuse it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// Coarser grids the run starts on (`knudsen run`; `docs/model.md`, "Coarse start"):
    /// the case is first converged to 1e-2 on grids with every second face (and, where fine
    /// enough, half the velocity points), each starting the next. 0 starts from the initial
    /// state.
    #[serde(default = "default_coarse_grids")]
    pub coarse_grids: usize,
    /// The share of each sweep's change that the data of specular and periodic faces takes,
    /// in (0, 1]; 1 takes the sweep's exits as they are. Default: 0.5 where the second-order
    /// sweep needs it, 1 elsewhere (`Config::partner_relaxation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner_relaxation: Option<f64>,
    /// Sweeps without a new lowest residual after which a run on f32 arithmetic (the GPU
    /// backends, the CPU's `"f32"`) with synthetic solves stops as stalled at its round-off
    /// floor, once that lowest
    /// residual is below `solver::convergence::STALL_BELOW`; 0 never stops so (`docs/configs.md`).
    #[serde(default = "default_stall_sweeps")]
    pub stall_sweeps: usize,
}

/// `solver.precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f64 storage and arithmetic: the reference.
    F64,
    /// f32 storage and sweep (on the CPU vectorised over velocities, moments summed in f64).
    F32,
}

impl SolverConfig {
    /// Whether the case names "f64": every backend then sweeps in f64 (CUDA's and wgpu's f64
    /// slice kernels), or refuses (a wgpu adapter without f64 shaders).
    pub fn names_f64(&self) -> bool {
        self.precision == Some(Precision::F64)
    }
}

impl Precision {
    /// The CPU backend's: `precision` where given, else f64.
    pub fn on_cpu(precision: Option<Precision>) -> Precision {
        precision.unwrap_or(Precision::F64)
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}

/// `solver.scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// First-order upwind: one slice per velocity.
    #[default]
    #[value(name = "first_order")]
    FirstOrder,
    /// The diamond difference with each outflow bounded by the cell's inflows, f^S and the
    /// upwind neighbours' face values along its axis: four slices per velocity.
    #[value(name = "second_order")]
    SecondOrder,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::FirstOrder => "first_order",
            Scheme::SecondOrder => "second_order",
        }
    }

    /// Slices of distribution storage per velocity: the cell values, and for second order
    /// the face values each cell emits along x, y, z (all updated in place).
    pub fn slices(self) -> usize {
        match self {
            Scheme::FirstOrder => 1,
            Scheme::SecondOrder => 4,
        }
    }
}

/// `solver.acceleration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Acceleration {
    /// Source iteration: the next sweep's equilibrium from this sweep's moments.
    None,
    /// The general synthetic iterative scheme: a macroscopic correction after every sweep.
    Gsis,
    /// GSIS's correction where its measured cost pays, source iteration's update elsewhere
    /// (`solver/synthetic/ledger.rs`); the path depends on timings, the fixed point does not.
    /// The case files' default: the fastest to the same answer on every shipped case
    /// measured (`docs/configs.md`, "Choosing `acceleration`"). With several MPI processes
    /// it solves after every sweep, as `Gsis`.
    #[default]
    Auto,
}

impl Acceleration {
    pub fn name(self) -> &'static str {
        match self {
            Acceleration::None => "none",
            Acceleration::Gsis => "gsis",
            Acceleration::Auto => "auto",
        }
    }

    /// Whether synthetic solves may be made (and their memory is needed).
    pub fn synthetic(self) -> bool {
        self != Acceleration::None
    }
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self {
            tolerance: default_tolerance(),
            max_iterations: default_max_iterations(),
            memory_budget_mib: None,
            mass_rescale: None,
            wall_density_damping: true,
            checkpoint_minutes: default_checkpoint_minutes(),
            acceleration: Acceleration::default(),
            scheme: Scheme::default(),
            precision: None,
            coarse_grids: default_coarse_grids(),
            partner_relaxation: None,
            stall_sweeps: default_stall_sweeps(),
        }
    }
}

fn default_true() -> bool {
    true
}
fn default_tolerance() -> f64 {
    1e-9
}
/// The most iterations a run (or a bench row's warm-up and timing, each) may ask for.
pub const MAX_ITERATIONS: usize = 1_000_000_000;

fn default_max_iterations() -> usize {
    1000
}
fn default_coarse_grids() -> usize {
    1
}
fn default_stall_sweeps() -> usize {
    30
}
fn default_checkpoint_minutes() -> f64 {
    10.0
}

impl SolverConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        positive_finite("solver.tolerance", self.tolerance)?;
        if self.max_iterations == 0 {
            return Err(ConfigError::new("solver.max_iterations", "must be at least 1"));
        }
        // Iteration numbers add up past it without overflow (a run of 1e9 sweeps is years).
        if self.max_iterations > MAX_ITERATIONS {
            return Err(ConfigError::new(
                "solver.max_iterations",
                format!("at most {MAX_ITERATIONS}, got {}", self.max_iterations),
            ));
        }
        if let Some(b) = self.memory_budget_mib {
            positive_finite("solver.memory_budget_mib", b)?;
        }
        let most = MAX_COARSE_GRIDS;
        if self.coarse_grids > most {
            return Err(ConfigError::new(
                "solver.coarse_grids",
                format!("at most {most} (each halves the cells per axis), got {}", self.coarse_grids),
            ));
        }
        if let Some(t) = self.partner_relaxation {
            if !(t > 0.0 && t <= 1.0) {
                return Err(ConfigError::new("solver.partner_relaxation", format!("must lie in (0, 1], got {t}")));
            }
            if t < MIN_PARTNER_RELAXATION {
                return Err(ConfigError::new(
                    "solver.partner_relaxation",
                    format!("{t} is below {MIN_PARTNER_RELAXATION}: the stop measures each sweep's change, and with a share theta of it taken the fields stop about tolerance / theta from the answer (at 1e-3, 5e-2 in velocity at a tolerance of 1e-9)"),
                ));
            }
        }
        positive_finite("solver.checkpoint_minutes", self.checkpoint_minutes)
    }
}
