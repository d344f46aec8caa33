//! The command line as clap parses it. `docs/` and the README describe every option.

use clap::{Parser, Subcommand};
use knudsen::backend::BackendChoice;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "knudsen", version, about = "Steady rarefied gas flows: Shakhov-model DVM with memory-reduced sweeps")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Subcommands taking numbers let a negative one through, so that the option's own check
// names it and says what it must be, not clap's "unexpected argument '-3'".
#[derive(Subcommand)]
pub enum Command {
    /// Run a case to convergence and write its results.
    #[command(allow_negative_numbers = true)]
    Run {
        /// JSON case file.
        config: PathBuf,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendChoice,
        /// Output directory (default: the config's output.dir, else out/<case file stem>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads for the CPU backend (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Continue the run whose results are in this directory (same case); the
        /// iteration limit then counts new iterations.
        #[arg(long)]
        restart: Option<PathBuf>,
        /// With --restart: continue even if the case differs from the one that wrote the
        /// state (the changed keys are listed).
        #[arg(long, requires = "restart")]
        force: bool,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Compare two results (fields.h5 files or output directories): relative L2
    /// difference of each field.
    Compare {
        /// A result: fields.h5 or an output directory.
        a: PathBuf,
        /// The result compared against (the differences are relative to it).
        b: PathBuf,
    },
    /// Write one cell plane of a result's field as CSV (the two in-plane coordinates of
    /// each cell centre, then the field's components): the plane of cells normal to `axis`
    /// whose centres lie nearest `at` (a point outside the grid is refused).
    Slice {
        /// fields.h5 or an output directory.
        result: PathBuf,
        #[arg(long, default_value = "temperature")]
        field: String,
        #[arg(long, value_parser = ["x", "y", "z"], default_value = "z")]
        axis: String,
        /// The plane's coordinate along `axis` (negative values too: `--at -0.5`).
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        at: f64,
        /// CSV file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write a result's field along a line as CSV, interpolated between cell centres: either
    /// parallel to an axis (`--along`, `--through`: the coordinate along it, then the
    /// components, at each cell centre along it), the profiles papers compare, e.g. `--field
    /// velocity --along y --through 0.5,0.5`; or any segment (`--from`, `--to`, `--points`:
    /// the arc length, x, y, z, then the components, trilinear), e.g. a cavity's diagonal
    /// `--from 1,1,0 --to 0,0,1`.
    #[command(group = clap::ArgGroup::new("line").args(["along", "from"]).required(true))]
    Line {
        /// fields.h5 or an output directory.
        result: PathBuf,
        #[arg(long, default_value = "velocity")]
        field: String,
        /// The axis the line runs along.
        #[arg(long, value_parser = ["x", "y", "z"], conflicts_with_all = ["from", "to", "points"], requires = "through")]
        along: Option<String>,
        /// The line's other two coordinates, in x, y, z order (for `--along y`: x,z).
        #[arg(long, value_delimiter = ',', value_name = "P,Q", allow_hyphen_values = true, requires = "along")]
        through: Vec<f64>,
        /// The segment's first end, x,y,z.
        #[arg(long, value_delimiter = ',', value_name = "X,Y,Z", allow_hyphen_values = true, requires = "to")]
        from: Vec<f64>,
        /// The segment's last end, x,y,z.
        #[arg(long, value_delimiter = ',', value_name = "X,Y,Z", allow_hyphen_values = true, requires = "from")]
        to: Vec<f64>,
        /// Equally spaced points along the segment, both ends included: 2 to 1000000
        /// (default 201, every half percent of it).
        #[arg(long, requires = "from")]
        points: Option<usize>,
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
        /// Virtual architecture to compile for (compute_35 is Kepler, the K40; NVRTC 12+
        /// no longer targets it).
        #[arg(long, default_value = "compute_90")]
        arch: String,
    },
    /// What the Vulkan driver compiled the fused sweep's WGSL to: registers, spills and the
    /// other statistics of VK_KHR_pipeline_executable_properties, per tile, for a bench row.
    #[command(hide = true)]
    VkStats {
        /// A `knudsen bench` row (CxV, or cube).
        #[arg(long, default_value = "64x64")]
        row: String,
        /// Tiles, TXxTY, comma-separated (default 4x4,8x4,4x8,8x8; second order
        /// 4x2,2x4,2x2,4x4). Tiles over the device's workgroup memory are skipped.
        #[arg(long)]
        tiles: Option<String>,
        /// The scheme: second_order builds sweep_fused2.
        #[arg(long, value_enum, default_value = "first_order")]
        scheme: knudsen::config::Scheme,
        /// Write the driver's internal representations of each executable (where it gives
        /// any: disassembly, intermediate code) into this folder.
        #[arg(long)]
        ir: Option<std::path::PathBuf>,
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
        /// solver.acceleration of every point that does not set its own (here gsis by
        /// default, whose path does not depend on timings: the iteration counts recorded
        /// in the results stay comparable between runs).
        #[arg(long, value_enum, default_value = "gsis")]
        acceleration: knudsen::config::Acceleration,
        /// solver.precision of every point that does not set its own (default: the backend's
        /// own; "f64" with `--backend cuda` or `wgpu` runs the suite on the f64 slice kernels).
        #[arg(long, value_enum)]
        precision: Option<knudsen::config::Precision>,
        /// Directory of results-<subset>.json (made if missing).
        #[arg(long, default_value = "out/validation")]
        out: PathBuf,
    },
    /// Time fixed cases (the cavity at CxV cells x velocities, the paper cube) on the
    /// backends given, after warm-up, against the floor the measured copy bandwidth sets;
    /// print a table and write OUT/bench.csv.
    #[command(allow_negative_numbers = true)]
    Bench {
        #[command(flatten)]
        args: BenchArgs,
    },
    /// List the CPU, every GPU adapter (backend, type, key limits and features), the CUDA
    /// devices, and what `--backend auto` picks.
    Info,
    /// Validate a case and print its derived quantities without running it.
    #[command(allow_negative_numbers = true)]
    Check {
        /// JSON case file.
        config: PathBuf,
        /// Also plan the CUDA backend on a device with this much memory (e.g. 12288 for a
        /// Tesla K40), with the CUDA backend's default budget of half of it.
        #[arg(long, allow_hyphen_values = true)]
        device_memory_mib: Option<f64>,
        #[command(flatten)]
        overrides: Overrides,
    },
}

/// Options that override the case file's solver settings.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Overrides {
    /// Distribution-function memory budget in MiB (overrides solver.memory_budget_mib).
    #[arg(long, allow_hyphen_values = true)]
    pub memory_budget_mib: Option<f64>,
    /// Overrides solver.max_iterations.
    #[arg(long)]
    pub max_iterations: Option<usize>,
    /// Overrides solver.tolerance.
    // Hyphen values: clap takes "-1e-3" for a flag, not a negative number.
    #[arg(long, allow_hyphen_values = true)]
    pub tolerance: Option<f64>,
    /// Overrides solver.acceleration.
    #[arg(long, value_enum)]
    pub acceleration: Option<knudsen::config::Acceleration>,
    /// Overrides solver.scheme.
    #[arg(long, value_enum)]
    pub scheme: Option<knudsen::config::Scheme>,
    /// Overrides solver.precision (default: f64 on the CPU, f32 on the GPUs; "f64" on CUDA,
    /// and on wgpu adapters with f64 shaders, sweeps with the f64 slice kernels).
    #[arg(long, value_enum)]
    pub precision: Option<knudsen::config::Precision>,
    /// Overrides solver.coarse_grids (0: start from the initial state).
    #[arg(long)]
    pub coarse_grids: Option<usize>,
}

impl Overrides {
    /// Every option given but `--coarse-grids` (a continued run makes no coarse start) and
    /// `--max-iterations` (a continued run counts new iterations, so the hint gives those
    /// left: `cli/run.rs`), as a command line repeats them: what the hint to continue an
    /// interrupted run must carry, so that the continued run solves the same case the same
    /// way (the solution-shaping `--scheme` among them, `config/compare.rs`; `--precision`,
    /// which a continued run may change, so that it goes on in the same arithmetic).
    /// `backend` (unless `auto`) and `threads`, the run's own options, come first.
    pub fn continue_args(&self, backend: BackendChoice, threads: Option<usize>) -> String {
        fn name(v: impl clap::ValueEnum) -> String {
            v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
        }
        let mut s = String::new();
        if backend != BackendChoice::Auto {
            s += &format!(" --backend {}", name(backend));
        }
        if let Some(n) = threads {
            s += &format!(" --threads {n}");
        }
        if let Some(x) = self.memory_budget_mib {
            s += &format!(" --memory-budget-mib {x}");
        }
        if let Some(x) = self.tolerance {
            s += &format!(" --tolerance {x:e}");
        }
        if let Some(x) = self.acceleration {
            s += &format!(" --acceleration {}", name(x));
        }
        if let Some(x) = self.scheme {
            s += &format!(" --scheme {}", name(x));
        }
        if let Some(x) = self.precision {
            s += &format!(" --precision {}", name(x));
        }
        s
    }
}

/// `knudsen bench`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Backends to time (comma-separated or repeated; default: the CPU, CUDA where it
    /// works, and wgpu where a hardware adapter is found).
    #[arg(long = "backend", value_enum, value_delimiter = ',')]
    pub backends: Vec<BackendChoice>,
    /// Rows: CxV (the cavity on C^3 cells and V^3 velocities) or `cube`.
    #[arg(long, value_delimiter = ',', default_value = "32x32,64x64,128x64,cube")]
    pub rows: Vec<knudsen::bench::Row>,
    /// Timed iterations per row.
    #[arg(long, default_value_t = 3)]
    pub iterations: usize,
    /// Untimed iterations before them.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Untimed runs of `--warmup` iterations (each from the case's initial state) repeat
    /// before the timed run until this many seconds have passed since the backend was built.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub warmup_seconds: f64,
    #[arg(long, value_enum, default_value = "first_order")]
    pub scheme: knudsen::config::Scheme,
    /// The CPU rows' precision (the GPU rows time their default, f32).
    #[arg(long, value_enum, default_value = "f64")]
    pub precision: knudsen::config::Precision,
    /// Distribution-storage budget in MiB (default: 16384 on GPUs, the CPU's own default).
    #[arg(long, allow_hyphen_values = true)]
    pub memory_budget_mib: Option<f64>,
    /// Rows with more phase-space points are skipped (and listed so) on the CPU and on
    /// software GPU adapters.
    #[arg(long, default_value_t = 2e9, allow_hyphen_values = true)]
    pub cpu_max_points: f64,
    /// Worker threads for the CPU backend (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Directory of bench.csv (made if missing).
    #[arg(long, default_value = "out/bench")]
    pub out: PathBuf,
}
