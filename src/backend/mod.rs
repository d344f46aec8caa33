//! Backends run one source iteration: sweep every velocity, batch by batch and slice by
//! slice, and return the new raw moments and wall incident fluxes. The solver loop
//! (`crate::solver`) owns everything else, so a GPU backend only implements [`Backend`].

#[cfg(all(feature = "cuda", feature = "cuda-11"))]
compile_error!("features `cuda` and `cuda-11` select two CUDA driver API levels; enable one");
#[cfg(all(feature = "cuda-driver", not(any(feature = "cuda", feature = "cuda-11"))))]
compile_error!("feature `cuda-driver` alone picks no CUDA driver API level; enable `cuda` or `cuda-11`");

pub mod bandwidth;
pub mod cpu;
#[cfg(feature = "cuda-driver")]
pub mod cuda;
pub mod fault;
pub mod fused;
pub mod gpu_io;
pub mod gpu_tables;
pub mod slice_rows;
pub mod upwind2;
pub mod wgpu;

use crate::body::WALL_SUMS;
use crate::boundary::{face_zeros, FaceData};
use crate::model::{EqCoeffs, Macro, NRAW};
use crate::plan::BatchPlan;
use serde::Serialize;

/// A backend's batching and storage, for logs and summary.json.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanSummary {
    pub batches: usize,
    pub max_batch: usize,
    /// Velocities swept at the same time.
    pub in_flight: usize,
    /// Bytes of distribution-function (slice) storage.
    pub distribution_bytes: u64,
    /// Device-memory bytes a sweep moves per phase-space point when it keeps no slices (the
    /// fused on-chip sweep: fused.rs); None: the slices' count (bench.rs).
    pub traffic_per_point: Option<f64>,
}

impl BatchPlan {
    /// Batches run one after another: one batch in flight.
    pub fn summary(&self) -> PlanSummary {
        PlanSummary {
            batches: self.batches.len(),
            max_batch: self.max_batch,
            in_flight: self.max_batch,
            distribution_bytes: self.distribution_bytes(),
            traffic_per_point: None,
        }
    }
}
use crate::problem::Problem;

/// What an iteration reads: per-cell sweep coefficients (cell order); per box-face cell,
/// the density of the distribution the face emits; per body wall face, its wall density;
/// per specular or periodic face, its partner data (`[face cell][slot]`, empty for other
/// faces; crate::boundary).
pub struct SweepInput<'a> {
    /// The sweep coefficients of `fields`; stale where the backend derives them itself
    /// ([`Backend::derives_coefficients`]).
    pub eq: &'a [EqCoeffs],
    /// The macroscopic fields the coefficients come from (NaN in solid cells); may be empty
    /// where `eq` is current (stage checks), and the backend then uses `eq`.
    pub fields: &'a [Macro],
    pub face_density: &'a FaceData,
    pub wall_density: &'a [f64],
    pub partner: &'a FaceData,
}

/// What an iteration produces: raw moments per cell (zero in solid cells), the incident flux
/// per box-face cell, sum over velocities moving into the face of w |xi . n| f, and per body
/// wall face the incident sums of [`crate::body::WALL_SUMS`]; per face that keeps them, the
/// exits: the distribution leaving through each face cell, `[face cell][slot]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOutput {
    pub raw: Vec<[f64; NRAW]>,
    pub incident: FaceData,
    pub wall: Vec<[f64; WALL_SUMS]>,
    pub exits: FaceData,
}

impl SweepOutput {
    pub fn zeros(p: &Problem) -> Self {
        Self {
            raw: vec![[0.0; NRAW]; p.grid.cells()],
            incident: face_zeros(&p.grid),
            wall: vec![[0.0; WALL_SUMS]; p.bodies.solids.walls.len()],
            exits: p.bounds.exit_zeros(&p.grid),
        }
    }

    pub fn clear(&mut self) {
        self.raw.iter_mut().for_each(|m| *m = [0.0; NRAW]);
        self.incident.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x = 0.0));
        self.wall.iter_mut().for_each(|m| *m = [0.0; WALL_SUMS]);
        self.exits.iter_mut().for_each(|f| f.iter_mut().for_each(|x| *x = 0.0));
    }
}

pub trait Backend {
    /// "cpu", "wgpu", "cuda".
    fn kind(&self) -> &'static str;
    /// Human-readable device name.
    fn device(&self) -> String;
    /// How the velocities are grouped and how much slice storage that takes.
    fn plan_summary(&self) -> PlanSummary;
    /// The smallest residual the backend's arithmetic can resolve; a tolerance below it is
    /// raised to it (f32 storage cannot show relative changes much below 1e-6).
    fn residual_floor(&self) -> f64 {
        0.0
    }
    /// Whether the backend computes the sweep coefficients from `SweepInput::fields` itself,
    /// so the solver need not keep `SweepInput::eq` up to date.
    fn derives_coefficients(&self) -> bool {
        false
    }
    /// One iteration of eq. (iter_outer): f^{n+1} from f^{S,n}, reduced to moments.
    fn sweep(&mut self, input: &SweepInput, out: &mut SweepOutput) -> anyhow::Result<()>;
    /// Bytes of one stored distribution value (4 for f32 slices, 8 for f64).
    fn bytes_per_value(&self) -> usize {
        GPU_BYTES_PER_VALUE
    }
    /// Bytes of device memory the backend holds. Every buffer is allocated when the backend
    /// is built and kept to the end, so this is also its peak. None on the CPU.
    fn device_bytes(&self) -> Option<u64> {
        None
    }
    /// The memory's copy bandwidth, measured now: bytes read plus bytes written per second
    /// by a large buffer-to-buffer copy (`knudsen bench`'s floor).
    fn copy_bandwidth(&mut self) -> anyhow::Result<f64>;
    /// The wgpu device and queue the backend sweeps on (the synthetic solve runs there too).
    fn wgpu_handles(&self) -> Option<WgpuHandles> {
        None
    }
}

/// A wgpu device and queue, and the adapter's name.
pub type WgpuHandles = (::wgpu::Device, ::wgpu::Queue, String);

static DEVICE_SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Which of the machine's GPUs this process takes, modulo their number: its rank among the
/// processes on the machine (MPI), 0 otherwise. CUDA counts its devices; wgpu the equally
/// good adapters it would choose from.
pub fn set_device_slot(slot: usize) {
    DEVICE_SLOT.store(slot, std::sync::atomic::Ordering::Relaxed);
}

pub fn device_slot() -> usize {
    DEVICE_SLOT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// CUDA where the binary has it and a device answers, else a hardware GPU through wgpu,
    /// else the CPU (each step down is logged).
    Auto,
    Cpu,
    /// wgpu on the best adapter, software (lavapipe) included.
    Wgpu,
    /// CUDA on device 0 (binaries built with `--features cuda`).
    Cuda,
}

/// Why the CUDA backend cannot be used here, or Ok when it can.
pub fn cuda_available() -> Result<(), String> {
    #[cfg(feature = "cuda-driver")]
    {
        cuda::available()
    }
    #[cfg(not(feature = "cuda-driver"))]
    {
        Err("this binary was built without CUDA support (build with `cargo build --release --features cuda`)".into())
    }
}

/// Bytes per distribution value in each backend's slice storage.
pub const CPU_BYTES_PER_VALUE: usize = 8;
/// The GPU backends store f in f32 unless asked for f64 (`Backend::bytes_per_value`).
pub const GPU_BYTES_PER_VALUE: usize = 4;

/// Bytes of one value of a GPU backend's slice path: f32, or f64 (`solver.precision = "f64"`).
pub fn gpu_bytes_per_value(f64: bool) -> usize {
    if f64 {
        8
    } else {
        GPU_BYTES_PER_VALUE
    }
}

/// The bytes of the face data, partner inflows and exits (`bnd`, `incident`: `layout`'s
/// values) and of the wall table (its `nz` slice headers, then the wall faces) that a GPU
/// backend uploads, at `value_bytes` a value.
pub fn gpu_table_bytes(layout: &gpu_io::TableLayout, nz: usize, wall_faces: usize, value_bytes: usize) -> u64 {
    (value_bytes * (layout.bnd_len + layout.incident_len)) as u64 + 16 * (nz + wall_faces) as u64
}

/// Default distribution-storage budgets when the case and the CLI give none.
pub const CPU_DEFAULT_BUDGET_MIB: f64 = 512.0;

/// Create the backend for `choice`. `budget_mib` is the case's or the CLI's budget, if any.
/// Returns the backend and, when auto had to fall back to the CPU, the reason. An error that
/// is the machine's, not the case's, carries a [`fault::Fault`] (or a CUDA driver error).
pub fn create(
    choice: BackendChoice,
    problem: std::sync::Arc<Problem>,
    budget_mib: Option<f64>,
) -> anyhow::Result<(Box<dyn Backend>, Option<String>)> {
    let bytes = |mib: f64| (mib * 1048576.0) as u64;
    let cpu = |p| -> anyhow::Result<Box<dyn Backend>> {
        Ok(Box::new(cpu::CpuBackend::new(p, bytes(budget_mib.unwrap_or(CPU_DEFAULT_BUDGET_MIB)))?))
    };
    // None: each adapter's own default (wgpu::default_budget_bytes).
    let gpu_budget = budget_mib.map(bytes);
    #[cfg(feature = "cuda-driver")]
    let cuda_budget = budget_mib.map(bytes);
    match choice {
        BackendChoice::Cpu => Ok((cpu(problem)?, None)),
        BackendChoice::Cuda => {
            cuda_available().map_err(|e| anyhow::anyhow!("--backend cuda: {e}"))?;
            #[cfg(feature = "cuda-driver")]
            {
                Ok((cuda::create(problem, cuda_budget)?, None))
            }
            #[cfg(not(feature = "cuda-driver"))]
            unreachable!("cuda_available() refuses without the feature")
        }
        BackendChoice::Wgpu => {
            Ok((Box::new(wgpu::WgpuBackend::new(problem, gpu_budget, &named_wgpu_options())?), None))
        }
        BackendChoice::Auto => {
            // Each GPU path with the budget, then with a quarter of it (smaller batches) where
            // the plan or memory was the trouble (not a device or compiler fault: `fault`),
            // then the CPU; every step down is said.
            let mut tried = Vec::new();
            #[cfg(feature = "cuda-driver")]
            if cuda::available().is_ok() {
                let budgets = [cuda_budget, Some(bytes(budget_mib.unwrap_or(wgpu::DEFAULT_BUDGET_MIB)) / 4)];
                let build = |budget| cuda::create(problem.clone(), budget);
                if let Some(b) = fault::try_budgets("CUDA", budgets, build, &mut tried) {
                    return Ok((b, fallback_note(&tried, "a smaller CUDA batch")));
                }
                // A context kept from a coarse start would hold its device memory while wgpu
                // allocates on the same GPU.
                cuda::plan::keep_context(false);
            }
            match wgpu::device::pick(wgpu::device::adapters(), false) {
                Ok(adapter) => {
                    let opts = wgpu::WgpuOptions::default();
                    let gpu_budget = gpu_budget.unwrap_or_else(|| wgpu::default_budget_bytes(&adapter));
                    // An adapter without f64 refuses "f64" whatever the budget: said once.
                    let refusal = wgpu::real::f64_refusal(&problem, adapter.features(), &adapter.get_info().name);
                    let budgets = if refusal.is_some() { vec![] } else { vec![gpu_budget, gpu_budget / 4] };
                    tried.extend(refusal.map(|why| format!("wgpu: {why}")));
                    let build = |budget| wgpu::WgpuBackend::with_adapter(problem.clone(), budget, &opts, &adapter);
                    if let Some(b) = fault::try_budgets("wgpu", budgets, build, &mut tried) {
                        return Ok((Box::new(b), fallback_note(&tried, "wgpu with a smaller batch")));
                    }
                }
                Err(why) => tried.push(why),
            }
            let why = tried.join("; ");
            Ok((cpu(problem)?, Some(format!("{why}; using the CPU backend"))))
        }
    }
}

/// `--backend wgpu`'s options: a software adapter is taken when named.
fn named_wgpu_options() -> wgpu::WgpuOptions {
    wgpu::WgpuOptions { allow_software: true, ..Default::default() }
}

/// [`cuda::plan::keep_context`] where the binary has CUDA; nothing otherwise.
pub fn cuda_keep_context(on: bool) {
    #[cfg(feature = "cuda-driver")]
    cuda::plan::keep_context(on);
    #[cfg(not(feature = "cuda-driver"))]
    let _ = on;
}

/// The refusals that [`create`] with `choice` would make for `problem` before allocating
/// anything, asked without building the backend: an explicitly chosen backend that cannot
/// run the case (a GPU's limits, its indexing, its free memory on CUDA; a precision the
/// backend has no sweep for). `auto` refuses nothing here (it steps down instead). For the
/// wgpu plan it needs the adapter the coarse start's
/// backend keeps (`wgpu::device::kept_adapter`), and says nothing before one is kept: another
/// adapter enumeration would cost what the check is meant to save.
pub fn check_case(choice: BackendChoice, problem: &Problem, budget_mib: Option<f64>) -> anyhow::Result<()> {
    let bytes = budget_mib.map(|mib| (mib * 1048576.0) as u64);
    match choice {
        BackendChoice::Auto => Ok(()),
        BackendChoice::Cpu => match cpu::f32_scheme_refusal(&problem.config) {
            Some(why) => anyhow::bail!("--backend cpu: {why}"),
            None => Ok(()),
        },
        BackendChoice::Cuda => {
            cuda_available().map_err(|e| anyhow::anyhow!("--backend cuda: {e}"))?;
            #[cfg(feature = "cuda-driver")]
            {
                cuda::plan::check_plan(problem, bytes)
            }
            #[cfg(not(feature = "cuda-driver"))]
            unreachable!("cuda_available() refuses without the feature")
        }
        BackendChoice::Wgpu => match wgpu::device::kept_adapter() {
            Some(adapter) => {
                let budget = bytes.unwrap_or_else(|| wgpu::default_budget_bytes(&adapter));
                wgpu::WgpuBackend::check_plan(problem, budget, &named_wgpu_options(), &adapter)
            }
            // "f64" asks the adapter's features, worth an enumeration: without them the
            // case is refused before a coarse level is built, not by the level's backend.
            None if wgpu::real::wants_f64(problem) => {
                let Ok(a) = wgpu::device::pick(wgpu::device::adapters(), true) else { return Ok(()) };
                match wgpu::real::f64_refusal(problem, a.features(), &a.get_info().name) {
                    Some(why) => anyhow::bail!("--backend wgpu: {why}"),
                    // And a `KNUDSEN_CELL_RECORDS` the f64 sweep cannot take.
                    None => wgpu::real::records_stage(problem, true)
                        .map(|_| ())
                        .map_err(|e| anyhow::anyhow!("--backend wgpu: {e}")),
                }
            }
            None => Ok(()),
        },
    }
}

/// Warn that `auto` stepped down (`why`, from [`create`]) under the log target `target`,
/// unless this process already said so: a run's coarse levels and its case, or a validation
/// suite's points, each meet the same missing GPU.
pub fn warn_step_down(target: &str, why: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.iter().any(|s| s == why) {
        log::debug!(target: target, "again: {why}");
    } else {
        log::warn!(target: target, "{why}");
        said.push(why.to_string());
    }
}

/// What `auto` says when it did not get its first choice: the failures before the one that
/// worked.
fn fallback_note(tried: &[String], now: &str) -> Option<String> {
    (!tried.is_empty()).then(|| format!("{}; using {now}", tried.join("; ")))
}
