//! `knudsen bench`: the rows of `knudsen::bench` on each backend asked for, one table and
//! OUT/bench.csv. A row that fails (a plan that does not fit, a device error) is reported
//! in its line and the exit status, and the others still run.

use super::args::BenchArgs;
use super::failure::Failure;
use super::out_dir::probe_output_dir;
use knudsen::backend::{cuda_available, wgpu::device, BackendChoice};
use knudsen::bench::{time_row, Row, Timing};

/// The GPU budget when none is given: every velocity of the paper's rows in flight
/// (64^3 x 64^3 first order needs 4 GiB of slices, 128^3 x 64^3 16 GiB).
const GPU_BUDGET_MIB: f64 = 16384.0;

enum Outcome {
    Timed(Timing),
    Skipped(String),
    Failed(String),
}

struct Line {
    backend: &'static str,
    /// The precision of the row's distribution storage and sweep.
    precision: &'static str,
    row: Row,
    bandwidth: Option<f64>,
    outcome: Outcome,
}

fn name(b: BackendChoice) -> &'static str {
    match b {
        BackendChoice::Cpu => "cpu",
        BackendChoice::Wgpu => "wgpu",
        BackendChoice::Cuda => "cuda",
        BackendChoice::Auto => "auto",
    }
}

/// The backends to time and, for each, whether it runs on the CPU (the CPU backend or a
/// software adapter), where `--cpu-max-points` applies.
fn backends(asked: &[BackendChoice]) -> Result<Vec<(BackendChoice, bool)>, Failure> {
    if asked.is_empty() {
        let mut v = vec![(BackendChoice::Cpu, true)];
        if cuda_available().is_ok() {
            v.push((BackendChoice::Cuda, false));
        }
        if device::pick(device::adapters(), false).is_ok() {
            v.push((BackendChoice::Wgpu, false));
        }
        return Ok(v);
    }
    let mut v: Vec<(BackendChoice, bool)> = Vec::new();
    for &b in asked {
        if v.iter().any(|(x, _)| *x == b) {
            continue;
        }
        let slow = match b {
            BackendChoice::Auto => {
                return Err(Failure::BadInput("--backend auto: name the backends to time (cpu, wgpu, cuda)".into()))
            }
            BackendChoice::Cpu => true,
            BackendChoice::Cuda => {
                cuda_available().map_err(|e| Failure::BadInput(format!("--backend cuda: {e}")))?;
                false
            }
            BackendChoice::Wgpu => {
                let adapter = device::pick(device::adapters(), true)
                    .map_err(|e| Failure::BadInput(format!("--backend wgpu: {e}")))?;
                adapter.get_info().device_type == wgpu::DeviceType::Cpu
            }
        };
        v.push((b, slow));
    }
    Ok(v)
}

pub fn bench(a: BenchArgs) -> Result<(), Failure> {
    super::failure::one_process("bench")?;
    if a.iterations == 0 {
        return Err(Failure::BadInput("--iterations must be at least 1".into()));
    }
    let most = knudsen::config::MAX_ITERATIONS;
    // A row's case runs warm-up and timed sweeps alike: their sum is its iteration limit.
    if a.iterations.saturating_add(a.warmup) > most {
        return Err(Failure::BadInput(format!(
            "--iterations plus --warmup must be at most {most}, got {} and {}",
            a.iterations, a.warmup
        )));
    }
    if a.threads == Some(0) {
        return Err(Failure::BadInput("--threads must be at least 1".into()));
    }
    if !(a.warmup_seconds.is_finite() && a.warmup_seconds >= 0.0) {
        return Err(Failure::BadInput(format!("--warmup-seconds must be zero or more, got {}", a.warmup_seconds)));
    }
    if a.cpu_max_points.is_nan() || a.cpu_max_points <= 0.0 {
        return Err(Failure::BadInput(format!("--cpu-max-points must be positive, got {}", a.cpu_max_points)));
    }
    // Every row's case is checked before anything runs.
    let sweeps = a.warmup + a.iterations;
    for row in &a.rows {
        row.config(a.scheme, Some(a.precision), a.memory_budget_mib, sweeps)
            .map_err(|e| Failure::BadInput(format!("{e:#}")))?;
    }
    let list = backends(&a.backends)?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| Failure::BadInput(format!("cannot create {}: {e}", a.out.display())))?;
    probe_output_dir(&a.out).map_err(Failure::BadInput)?;
    // The table's file taken by a directory would fail its rename after every row has run.
    let table = a.out.join("bench.csv");
    if table.is_dir() {
        return Err(Failure::BadInput(format!("{} is a directory; move it or choose another --out", table.display())));
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = a.threads {
        pool = pool.num_threads(n);
    }
    pool.build_global().map_err(|e| Failure::Run(e.into()))?;

    let mut lines = Vec::new();
    for &(choice, slow) in &list {
        let mut bandwidth = None;
        for &row in &a.rows {
            let budget = a.memory_budget_mib.or((choice != BackendChoice::Cpu).then_some(GPU_BUDGET_MIB));
            // The precision selects the CPU rows' path; the GPU rows time their default, f32.
            let precision = (choice == BackendChoice::Cpu).then_some(a.precision);
            let cfg =
                row.config(a.scheme, precision, budget, sweeps).map_err(|e| Failure::BadInput(format!("{e:#}")))?;
            let points = cfg.cell_counts().iter().product::<usize>() as f64 * (cfg.velocity.points as f64).powi(3);
            let outcome = if slow && points > a.cpu_max_points {
                Outcome::Skipped(format!("{points:.2e} points > --cpu-max-points {:.2e}", a.cpu_max_points))
            } else {
                match time_row(&cfg, choice, a.warmup, a.warmup_seconds, a.iterations, &mut bandwidth) {
                    Ok(t) => Outcome::Timed(t),
                    Err(e) => Outcome::Failed(format!("{e:#}")),
                }
            };
            let precision = if choice == BackendChoice::Cpu { a.precision.name() } else { "f32" };
            let line = Line { backend: name(choice), precision, row, bandwidth, outcome };
            eprintln!("{}", short(&line));
            lines.push(line);
        }
    }
    print_table(&lines);
    let path = a.out.join("bench.csv");
    knudsen::output::write_atomic_bytes(&path, csv(&lines, a.scheme).as_bytes()).map_err(Failure::Run)?;
    println!("written {}", path.display());
    let failed = lines.iter().filter(|l| matches!(l.outcome, Outcome::Failed(_))).count();
    if failed > 0 {
        return Err(Failure::Run(anyhow::anyhow!("{failed} of {} rows failed", lines.len())));
    }
    Ok(())
}

fn short(l: &Line) -> String {
    match &l.outcome {
        Outcome::Timed(t) => format!("{} {}: {:.4} s per iteration", l.backend, l.row, t.median()),
        Outcome::Skipped(why) => format!("{} {}: skipped ({why})", l.backend, l.row),
        Outcome::Failed(why) => format!("{} {}: failed: {why}", l.backend, l.row),
    }
}

fn print_table(lines: &[Line]) {
    let mut seen = Vec::new();
    for l in lines {
        if let (Outcome::Timed(t), Some(bw)) = (&l.outcome, l.bandwidth) {
            if !seen.contains(&l.backend) {
                seen.push(l.backend);
                println!("{}: {}; copy bandwidth {:.1} GB/s (read + write)", l.backend, t.device, bw / 1e9);
            }
        }
    }
    println!(
        "{:<6} {:<4} {:<8} {:>10} {:>9} {:>10} {:>11} {:>10} {:>9} {:>8}",
        "back", "prec", "row", "points", "in flight", "s/iter", "points/s", "dev MiB", "floor s", "of floor"
    );
    for l in lines {
        match &l.outcome {
            Outcome::Timed(t) => {
                let floor = l.bandwidth.map(|b| t.floor_seconds(b));
                println!(
                    "{:<6} {:<4} {:<8} {:>10.3e} {:>9} {:>10.4} {:>11.3e} {:>10} {:>9} {:>8}",
                    l.backend,
                    l.precision,
                    l.row.to_string(),
                    t.phase_points as f64,
                    t.in_flight,
                    t.median(),
                    t.point_updates_per_second(),
                    t.device_bytes.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1048576.0)),
                    floor.map_or("-".into(), |f| format!("{f:.4}")),
                    floor.map_or("-".into(), |f| format!("{:.2}", f / t.median())),
                );
            }
            Outcome::Skipped(why) => println!("{:<6} {:<8} skipped: {why}", l.backend, l.row.to_string()),
            Outcome::Failed(why) => println!("{:<6} {:<8} failed: {why}", l.backend, l.row.to_string()),
        }
    }
}

pub const CSV_HEADER: &str = "backend,device,row,scheme,precision,phase_points,in_flight,timed_iterations,s_per_iter,s_min,s_max,point_updates_per_s,device_mib,copy_gb_s,bytes_per_point,floor_s,of_floor,warmup_s,status";

fn csv(lines: &[Line], scheme: knudsen::config::Scheme) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    let scheme = serde_json::to_value(scheme).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    for l in lines {
        let bw = l.bandwidth.map_or(String::new(), |b| format!("{:.6e}", b / 1e9));
        match &l.outcome {
            Outcome::Timed(t) => {
                let min = t.seconds.iter().copied().fold(f64::INFINITY, f64::min);
                let max = t.seconds.iter().copied().fold(0.0, f64::max);
                let floor = l.bandwidth.map(|b| t.floor_seconds(b));
                s += &format!(
                    "{},\"{}\",{},{scheme},{},{},{},{},{:.6e},{:.6e},{:.6e},{:.6e},{},{bw},{},{},{},{:.3},ok\n",
                    l.backend,
                    t.device.replace('"', "'"),
                    l.row,
                    l.precision,
                    t.phase_points,
                    t.in_flight,
                    t.seconds.len(),
                    t.median(),
                    min,
                    max,
                    t.point_updates_per_second(),
                    t.device_bytes.map_or(String::new(), |b| format!("{:.1}", b as f64 / 1048576.0)),
                    t.bytes_per_point,
                    floor.map_or(String::new(), |f| format!("{f:.6e}")),
                    floor.map_or(String::new(), |f| format!("{:.6e}", f / t.median())),
                    t.warmup_seconds,
                );
            }
            Outcome::Skipped(why) | Outcome::Failed(why) => {
                let status = if matches!(l.outcome, Outcome::Skipped(_)) { "skipped" } else { "failed" };
                s += &format!(
                    "{},,{},{scheme},{},,,,,,,,,{bw},,,,,\"{status}: {}\"\n",
                    l.backend,
                    l.row,
                    l.precision,
                    why.replace('"', "'").replace('\n', " ")
                );
            }
        }
    }
    s
}
