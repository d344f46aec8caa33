//! Backends run one source iteration: sweep every velocity, batch by batch and slice by
//! slice, and return the new raw moments and wall incident fluxes. The solver loop
//! (`crate::solver`) owns everything else, so a GPU backend only implements [`Backend`].

pub mod cpu;

use crate::boundary::{face_zeros, FaceData};
use crate::model::{EqCoeffs, NRAW};
use crate::plan::BatchPlan;
use crate::problem::Problem;

/// What an iteration reads: per-cell sweep coefficients (cell order) and, per face cell,
/// the density of the distribution the face emits.
pub struct SweepInput<'a> {
    pub eq: &'a [EqCoeffs],
    pub face_density: &'a FaceData,
}

/// What an iteration produces: raw moments per cell and the incident flux per face cell,
/// sum over velocities moving into the face of w |xi . n| f.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOutput {
    pub raw: Vec<[f64; NRAW]>,
    pub incident: FaceData,
}

impl SweepOutput {
    pub fn zeros(p: &Problem) -> Self {
        Self {
            raw: vec![[0.0; NRAW]; p.grid.cells()],
            incident: face_zeros(&p.grid),
        }
    }

    pub fn clear(&mut self) {
        self.raw.iter_mut().for_each(|m| *m = [0.0; NRAW]);
        self.incident
            .iter_mut()
            .for_each(|f| f.iter_mut().for_each(|x| *x = 0.0));
    }
}

pub trait Backend {
    /// "cpu", "wgpu", "cuda".
    fn kind(&self) -> &'static str;
    /// Human-readable device name.
    fn device(&self) -> String;
    fn plan(&self) -> &BatchPlan;
    /// One iteration of eq. (iter_outer): f^{n+1} from f^{S,n}, reduced to moments.
    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()>;
}

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// A hardware GPU when one is usable, otherwise the CPU.
    Auto,
    Cpu,
}

/// Bytes per distribution value in each backend's slice storage.
pub const CPU_BYTES_PER_VALUE: usize = 8;
/// The GPU backends store f in f32.
pub const GPU_BYTES_PER_VALUE: usize = 4;

/// Create the backend for `choice`. Returns the backend and, when auto had to fall back,
/// the reason.
pub fn create(
    choice: BackendChoice,
    problem: std::sync::Arc<Problem>,
    budget_bytes: u64,
) -> anyhow::Result<(Box<dyn Backend>, Option<String>)> {
    match choice {
        BackendChoice::Cpu => Ok((Box::new(cpu::CpuBackend::new(problem, budget_bytes)?), None)),
        BackendChoice::Auto => {
            let why =
                "no GPU backend is built into this binary yet; using the CPU backend".to_string();
            Ok((
                Box::new(cpu::CpuBackend::new(problem, budget_bytes)?),
                Some(why),
            ))
        }
    }
}
