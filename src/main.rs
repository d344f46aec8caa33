//! The `knudsen` command line: `run`, `check`.

use clap::{Parser, Subcommand};
use knudsen::backend::wgpu::schedule::{schedule, GpuLimits};
use knudsen::backend::{self, cpu::cpu_plan, BackendChoice};
use knudsen::config::{Config, ConfigError};
use knudsen::output::{write_all, Summary, SummaryInput};
use knudsen::problem::Problem;
use knudsen::solver::{Solver, RESIDUAL_NAMES};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "knudsen", version, about = "Steady rarefied gas flows: Shakhov-model DVM with memory-reduced sweeps")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a case to convergence and write its results.
    Run {
        /// JSON case file.
        config: PathBuf,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendChoice,
        /// Output directory (default: the config's output.dir, else out/<config name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads for the CPU backend (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Continue the run whose results are in this directory (same case); the
        /// iteration limit then counts new iterations.
        #[arg(long)]
        restart: Option<PathBuf>,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Compare two results (fields.h5 files or output directories): relative L2
    /// difference of each field.
    Compare { a: PathBuf, b: PathBuf },
    /// Write one cell plane of a result's field as CSV (x, y, value per cell centre, ...):
    /// the plane normal to `axis` through the cell nearest `at`.
    Slice {
        /// fields.h5 or an output directory.
        result: PathBuf,
        #[arg(long, default_value = "temperature")]
        field: String,
        #[arg(long, value_parser = ["x", "y", "z"], default_value = "z")]
        axis: String,
        #[arg(long, default_value_t = 0.0)]
        at: f64,
        /// CSV file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Compile the CUDA kernels with NVRTC for representative sizes (no GPU needed); with
    /// --source, compile that file instead. Exit 1 on a compile error.
    #[command(hide = true)]
    NvrtcCheck {
        #[arg(long)]
        source: Option<PathBuf>,
    },
    /// Run the validation suite (configs/validation/*.json, or the files given) and write
    /// measured against reference for every case to OUT/results-<subset>.json. Exit 1 if
    /// any case fails its tolerance.
    Validate {
        /// Suite files (default: every configs/validation/*.json).
        files: Vec<PathBuf>,
        /// Only the fast subset (what CI runs).
        #[arg(long)]
        fast: bool,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: BackendChoice,
        #[arg(long, default_value = "out/validation")]
        out: PathBuf,
    },
    /// List every GPU adapter with its backend, type, key limits and features.
    Info,
    /// Validate a case and print its derived quantities without running it.
    Check {
        config: PathBuf,
        #[command(flatten)]
        overrides: Overrides,
    },
}

/// Options that override the case file's solver settings.
#[derive(clap::Args, Debug, Clone, Copy)]
struct Overrides {
    /// Distribution-function memory budget in MiB (overrides solver.memory_budget_mib).
    #[arg(long)]
    memory_budget_mib: Option<f64>,
    /// Overrides solver.max_iterations.
    #[arg(long)]
    max_iterations: Option<usize>,
    /// Overrides solver.tolerance.
    #[arg(long)]
    tolerance: Option<f64>,
}

/// Exit code for a bad case file or option: nothing was run or written.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).format_timestamp(None).init();
    let result = match cli.command {
        Command::Run { config, backend, out, threads, restart, overrides } => {
            run(&config, backend, out, threads, restart, overrides)
        }
        Command::Info => info(),
        Command::Validate { files, fast, backend, out } => validate(files, fast, backend, &out),
        Command::NvrtcCheck { source } => nvrtc_check(source.as_deref()),
        Command::Compare { a, b } => compare(&a, &b),
        Command::Slice { result, field, axis, at, out } => {
            knudsen::output::write_plane_csv(&result, &field, &axis, at, &out).map_err(Failure::Run)
        }
        Command::Check { config, overrides } => check(&config, overrides),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(Failure::Run(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    BadInput(String),
    Run(anyhow::Error),
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure::BadInput(e.to_string())
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Run(e)
    }
}

/// Load and validate the case, applying the command-line overrides.
fn load(path: &Path, o: Overrides) -> Result<Config, Failure> {
    let mut cfg = Config::from_file(path)?;
    cfg.solver.memory_budget_mib = o.memory_budget_mib.or(cfg.solver.memory_budget_mib);
    cfg.solver.max_iterations = o.max_iterations.unwrap_or(cfg.solver.max_iterations);
    cfg.solver.tolerance = o.tolerance.unwrap_or(cfg.solver.tolerance);
    cfg.validate().map_err(|mut e| {
        // Name the option when the bad value came from the command line.
        let flag = match e.key.as_str() {
            "solver.memory_budget_mib" if o.memory_budget_mib.is_some() => Some("--memory-budget-mib"),
            "solver.max_iterations" if o.max_iterations.is_some() => Some("--max-iterations"),
            "solver.tolerance" if o.tolerance.is_some() => Some("--tolerance"),
            _ => None,
        };
        if let Some(f) = flag {
            e.key = f.to_string();
        }
        e
    })?;
    Ok(cfg)
}

/// Refuse a case whose host fields cannot fit the memory available now.
fn check_host_memory(cfg: &Config) -> Result<(), Failure> {
    let need = cfg.host_bytes();
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).map(|kib| kib * 1024))
    });
    match available {
        Some(avail) if need > avail => Err(Failure::BadInput(format!(
            "config error: `grid`/`velocity`: the case needs {:.1} GiB of host memory for its fields; {:.1} GiB are available",
            need as f64 / 1073741824.0,
            avail as f64 / 1073741824.0
        ))),
        _ => Ok(()),
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn output_dir(path: &Path, cfg: &Config, out: Option<PathBuf>) -> PathBuf {
    out.or_else(|| cfg.output.dir.as_ref().map(PathBuf::from)).unwrap_or_else(|| {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "case".into());
        PathBuf::from("out").join(stem)
    })
}

fn run(
    path: &Path,
    choice: BackendChoice,
    out: Option<PathBuf>,
    threads: Option<usize>,
    restart: Option<PathBuf>,
    overrides: Overrides,
) -> Result<(), Failure> {
    let cfg = load(path, overrides)?;
    let dir = output_dir(path, &cfg, out);
    if threads == Some(0) {
        return Err(Failure::BadInput("--threads must be at least 1".into()));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::BadInput(format!("output path {} exists and is not a directory", dir.display())));
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    let pool = pool.build().map_err(|e| Failure::Run(e.into()))?;
    pool.install(|| run_in_pool(path, &cfg, choice, &dir, restart.as_deref()))
}

/// Make sure results can be written before spending time on the solve: create the
/// directory and write and remove a probe file in it.
fn probe_output_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("output path {} exists and is not a directory", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    let probe = dir.join(format!(".knudsen-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write to output directory {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

fn run_in_pool(
    path: &Path,
    cfg: &Config,
    choice: BackendChoice,
    dir: &Path,
    restart: Option<&Path>,
) -> Result<(), Failure> {
    check_host_memory(cfg)?;
    for w in cfg.warnings() {
        log::warn!("{w}");
    }
    let problem = Arc::new(Problem::new(cfg));
    let restart = match restart {
        Some(r) => Some(
            knudsen::output::read_restart(r, &problem)
                .map_err(|e| Failure::BadInput(format!("--restart {}: {e:#}", r.display())))?,
        ),
        None => None,
    };
    let (backend, fallback) = backend::create(choice, problem.clone(), cfg.solver.memory_budget_mib)
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    // The plan is checked; before the solve, make sure its results can be written.
    probe_output_dir(dir).map_err(Failure::BadInput)?;
    if let Some(why) = fallback {
        log::warn!("{why}");
    }
    let plan = backend.plan_summary();
    log::info!(
        "{}: {} cells x {} velocities = {:.3e} phase-space points; Kn = {:.4}, delta = {:.4}, Pr = {:.4}",
        path.display(),
        problem.grid.cells(),
        problem.vgrid.len(),
        problem.phase_points() as f64,
        cfg.kn(),
        cfg.delta(),
        cfg.gas.prandtl
    );
    log::info!(
        "backend {} on {}; {} batches of up to {} velocities, {} in flight, {:.1} MiB of distribution storage",
        backend.kind(),
        backend.device(),
        plan.batches,
        plan.max_batch,
        plan.in_flight,
        mib(plan.distribution_bytes)
    );

    let tol = cfg.solver.tolerance;
    let bar = indicatif::ProgressBar::new(cfg.solver.max_iterations as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{spinner} iter {pos}/{len} {msg}").expect("valid template"));
    let mut last = f64::NAN;
    let mut solver = Solver::new(&problem, backend);
    if let Some(r) = restart {
        log::info!("continuing after iteration {}", r.history.len());
        solver = solver.with_restart(r);
    }
    let result = solver.run(|rec| {
        let r = rec.residual();
        // ETA from the observed contraction rate of the residual.
        let rate = r / last;
        let eta = if rate.is_finite() && rate < 1.0 && r > tol {
            format!("{:.0} s", (tol / r).ln() / rate.ln() * rec.seconds)
        } else {
            "-".into()
        };
        last = r;
        bar.set_position(rec.iteration as u64);
        bar.set_message(format!("residual {r:.3e} ({:.2} s/iter, ETA {eta})", rec.seconds));
        bar.suspend(|| {
            let parts: Vec<String> =
                RESIDUAL_NAMES.iter().zip(rec.residuals).map(|(n, x)| format!("{n} {x:.3e}")).collect();
            let drag = rec.drag.map_or(String::new(), |d| format!(" C_D {d:.5}"));
            log::info!(
                "iteration {} residual {r:.3e} [{}]{drag} {:.3} s",
                rec.iteration,
                parts.join(", "),
                rec.seconds
            );
        });
    })?;
    bar.finish_and_clear();

    let summary = Summary::new(SummaryInput { problem: &problem, backend: &*solver.backend, result: &result });
    write_all(dir, &problem, &result, &summary)?;
    if result.converged {
        log::info!(
            "converged in {} iterations ({:.2} s); results in {}",
            result.iterations(),
            result.total_seconds,
            dir.display()
        );
    } else {
        log::warn!(
            "not converged: residual {:.3e} > tolerance {tol:.1e} after {} iterations; results written to {}",
            result.final_residual(),
            result.iterations(),
            dir.display()
        );
    }
    Ok(())
}

fn info() -> Result<(), Failure> {
    let list = backend::wgpu::device::adapters();
    println!("knudsen {} ({})", env!("CARGO_PKG_VERSION"), env!("KNUDSEN_COMMIT"));
    println!("cpu: {}", backend::cpu::cpu_name());
    if list.is_empty() {
        println!("wgpu: no adapter found");
    }
    for a in &list {
        print!("wgpu: {}", backend::wgpu::device::describe(a));
    }
    let cuda = backend::cuda_available();
    #[cfg(feature = "cuda")]
    match backend::cuda::describe_devices() {
        Ok(devs) => devs.iter().for_each(|d| println!("cuda: {d}")),
        Err(why) => println!("cuda: {why}"),
    }
    #[cfg(not(feature = "cuda"))]
    println!("cuda: {}", cuda.as_ref().unwrap_err());
    if cuda.is_ok() {
        println!("--backend auto picks: cuda on device 0");
        return Ok(());
    }
    match backend::wgpu::device::pick(list, false) {
        Ok(a) => println!("--backend auto picks: wgpu on {}", a.get_info().name),
        Err(why) => println!("--backend auto picks: cpu ({why})"),
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn nvrtc_check(source: Option<&Path>) -> Result<(), Failure> {
    use knudsen::backend::cuda::kernels;
    let src = match source {
        Some(p) => std::fs::read_to_string(p).map_err(|e| Failure::BadInput(format!("{}: {e}", p.display())))?,
        None => kernels::program(),
    };
    for sizes in kernels::check_sizes() {
        let ptx = kernels::compile_ptx(&src, &sizes, Some("compute_90"))
            .map_err(|e| Failure::Run(anyhow::anyhow!("NVRTC, NX = {}: {e}", sizes.nx)))?;
        let text = ptx.to_src();
        for k in ["sweep_slice", "moment_slice", "wall_load_slice"] {
            if source.is_none() && !text.contains(&format!(".entry {k}")) {
                return Err(Failure::Run(anyhow::anyhow!("NVRTC output has no entry {k}")));
            }
        }
        println!("NVRTC: NX = {}: {} bytes of PTX", sizes.nx, text.len());
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn nvrtc_check(_: Option<&Path>) -> Result<(), Failure> {
    Err(Failure::BadInput(knudsen::backend::cuda_available().unwrap_err()))
}

fn validate(files: Vec<PathBuf>, fast: bool, backend: BackendChoice, out: &Path) -> Result<(), Failure> {
    use knudsen::validate::{run_suite, Suite};
    let files = if files.is_empty() {
        let dir = Path::new("configs/validation");
        let mut list: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| {
                Failure::BadInput(format!("{}: {e} (run from the repository root or name the files)", dir.display()))
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        list.sort();
        list
    } else {
        files
    };
    // Every file is read and checked before anything runs.
    let suites: Vec<Suite> = files
        .iter()
        .map(|f| Suite::from_file(f))
        .collect::<anyhow::Result<_>>()
        .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    let subset = if fast { "fast" } else { "full" };
    std::fs::create_dir_all(out).map_err(|e| Failure::Run(anyhow::anyhow!("creating {}: {e}", out.display())))?;
    let mut results = Vec::new();
    for s in &suites {
        println!("{} [{}]", s.title, s.name);
        let r = run_suite(s, subset, backend, &mut |line| println!("{line}")).map_err(Failure::Run)?;
        match (r.observed_order, r.richardson_relative) {
            (Some(p), Some(rel)) => println!(
                "  observed order {p:.3}, Richardson error of the finest {:.3e} ({:.3}%)",
                r.richardson_error.unwrap(),
                100.0 * rel
            ),
            (None, Some(rel)) => println!("  not monotone; last relative change {:.3}%", 100.0 * rel),
            _ => {}
        }
        println!("  {}", if r.pass { "PASS".to_string() } else { format!("FAIL: {}", r.failures.join("; ")) });
        results.push(r);
    }
    let path = out.join(format!("results-{subset}.json"));
    let doc = serde_json::json!({
        "knudsen": env!("CARGO_PKG_VERSION"),
        "subset": subset,
        "suites": results,
    });
    knudsen::output::write_atomic_bytes(&path, serde_json::to_string_pretty(&doc).unwrap().as_bytes())
        .map_err(Failure::Run)?;
    let failed: Vec<&str> = results.iter().filter(|r| !r.pass).map(|r| r.name.as_str()).collect();
    println!("results in {}", path.display());
    if failed.is_empty() {
        println!("all {} suites pass", results.len());
        Ok(())
    } else {
        Err(Failure::Run(anyhow::anyhow!("{} of {} suites failed: {}", failed.len(), results.len(), failed.join(", "))))
    }
}

fn compare(a: &Path, b: &Path) -> Result<(), Failure> {
    let d = knudsen::output::compare_fields(a, b).map_err(Failure::Run)?;
    println!("relative L2 difference ||a - b|| / ||b|| per field ({} vs {}):", a.display(), b.display());
    for (name, x) in d {
        println!("  {name:<12} {x:.3e}");
    }
    Ok(())
}

fn check(path: &Path, overrides: Overrides) -> Result<(), Failure> {
    let cfg = load(path, overrides)?;
    check_host_memory(&cfg)?;
    let p = Problem::new(&cfg);
    let g = &p.grid;
    let v = &p.vgrid;
    println!("case {}: valid", cfg.name.as_deref().unwrap_or(&path.display().to_string()));
    println!(
        "gas: Kn = {:.6}, delta = {:.6} (reference length {}), omega = {}, Pr = {:.6} ({})",
        cfg.kn(),
        cfg.delta(),
        cfg.gas.length,
        cfg.gas.omega,
        cfg.gas.prandtl,
        if cfg.gas.prandtl == 1.0 { "BGK" } else { "Shakhov" }
    );
    for w in cfg.warnings() {
        println!("warning: {w}");
    }
    let ini = cfg.initial_state();
    let mut temps = vec![ini.temperature];
    for b in &p.bounds.faces {
        match b.kind {
            knudsen::boundary::FaceKind::DiffuseWall { temperature, .. }
            | knudsen::boundary::FaceKind::FreeStream { temperature, .. } => temps.push(temperature),
            knudsen::boundary::FaceKind::Specular | knudsen::boundary::FaceKind::Periodic => {}
        }
    }
    temps.extend(p.bodies.bodies.iter().map(|b| b.temperature));
    let tau = |t: f64| 1.0 / knudsen::model::collision_frequency(p.delta, p.omega, ini.density, t);
    let (tmin, tmax) = temps.iter().fold((f64::MAX, f64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    println!(
        "relaxation time tau = 1/nu at rho = {}: {:.4} (T = {tmin}) .. {:.4} (T = {tmax}), in units L / v0",
        ini.density,
        tau(tmin).min(tau(tmax)),
        tau(tmin).max(tau(tmax))
    );
    println!(
        "grid: {} x {} x {} cells; velocities {}^3 in [-{a}, {a}]^3 ({:?}); phase-space points {:.4e}",
        g.nx(),
        g.ny(),
        g.nz(),
        v.m,
        v.quadrature,
        p.phase_points() as f64,
        a = v.half_width
    );
    for (name, a) in [("x", &g.x), ("y", &g.y), ("z", &g.z)] {
        let (wmin, wmax) = a.widths.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &w| (lo.min(w), hi.max(w)));
        if wmax > wmin * (1.0 + 1e-9) {
            println!(
                "  {name}: {} cells over [{}, {}], widths {wmin:.4} .. {wmax:.4}, largest neighbour ratio {:.4}",
                a.len(),
                a.faces[0],
                a.faces[a.len()],
                a.max_growth()
            );
        }
    }
    if let Some(fs) = &cfg.free_stream {
        let u = fs.velocity();
        println!(
            "free stream: rho = {}, T = {}, U = [{:.4}, {:.4}, {:.4}] v0 (Mach {:.4})",
            fs.density,
            fs.temperature,
            u[0],
            u[1],
            u[2],
            fs.mach()
        );
    }
    for (b, body) in p.bodies.bodies.iter().enumerate() {
        let faces = p.bodies.solids.walls.iter().filter(|w| w.body as usize == b).count();
        println!("body {}: T = {}, {faces} wall faces", body.name, body.temperature);
    }
    if p.bodies.solids.any() {
        println!("fluid cells: {} of {}", p.fluid_cells(), g.cells());
    }
    println!(
        "mass rescale: {}; tolerance {:.1e}; at most {} iterations",
        cfg.mass_rescale(),
        cfg.solver.tolerance,
        cfg.solver.max_iterations
    );
    // Per-cell fields held by the solver: raw moments (13), sweep coefficients (10),
    // macroscopic state (16) and conserved variables (5), all f64.
    let host_bytes = g.cells() as u64 * (13 + 10 + 16 + 5) * 8;
    println!("host field storage: {:.1} MiB", mib(host_bytes));
    let cpu_budget = cfg.solver.memory_budget_mib.unwrap_or(backend::CPU_DEFAULT_BUDGET_MIB);
    match cpu_plan(&p, (cpu_budget * 1048576.0) as u64) {
        Ok(pl) => println!(
            "cpu (f64), budget {cpu_budget} MiB: batch {} velocities in {} batches; distribution storage {:.1} MiB",
            pl.max_batch,
            pl.batches.len(),
            mib(pl.distribution_bytes())
        ),
        Err(e) => {
            return Err(Failure::BadInput(format!(
                "`solver.memory_budget_mib` / --memory-budget-mib: {e} (cpu backend)"
            )))
        }
    }
    let gpu_budget = cfg.solver.memory_budget_mib.unwrap_or(backend::wgpu::DEFAULT_BUDGET_MIB);
    let mut targets: Vec<(String, GpuLimits)> = backend::wgpu::device::adapters()
        .iter()
        .map(|a| (a.get_info().name, GpuLimits::from_wgpu(&a.limits())))
        .collect();
    if targets.is_empty() {
        targets.push(("no adapter found; WebGPU default limits".into(), GpuLimits::webgpu_default()));
    }
    for (name, limits) in targets {
        match schedule(&v.octant_members(), &v.xi, g.dims(), (gpu_budget * 1048576.0) as u64, &limits, None) {
            Ok(s) => println!(
                "wgpu (f32) on {name}, budget {gpu_budget} MiB: {} velocities in flight in {} waves, {} bindings of {} velocities; distribution storage {:.1} MiB; GPU fields {:.1} MiB",
                s.in_flight(),
                s.waves.len(),
                s.slice_buffers,
                s.chunk_stride,
                mib(s.distribution_bytes),
                mib(s.field_bytes)
            ),
            Err(e) => println!("wgpu (f32) on {name}: does not fit: {e}"),
        }
    }
    Ok(())
}
