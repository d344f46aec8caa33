//! `knudsen check CASE`: validate a case and print what it derives (physics, grid, memory,
//! the plan of each backend) without running it.

use super::args::Overrides;
use super::failure::Failure;
use super::load::{host_memory_for_check, load, mib};
use knudsen::backend::wgpu::schedule::{schedule, GpuLimits};
use knudsen::backend::{self, cpu::cpu_plan};
use knudsen::boundary::FaceKind;
use knudsen::config::Config;
use knudsen::plan::available_host_bytes;
use knudsen::problem::Problem;
use std::path::Path;

pub fn check(path: &Path, device_memory_mib: Option<f64>, overrides: Overrides) -> Result<(), Failure> {
    if let Some(m) = device_memory_mib {
        if !(m.is_finite() && m > 0.0) {
            return Err(Failure::BadInput(format!("--device-memory-mib must be positive, got {m}")));
        }
    }
    let cfg = load(path, overrides)?;
    // `check` plans every backend; `run` refuses by the backend it is given.
    let (cfg, notes) = host_memory_for_check(&cfg, available_host_bytes()).map_err(Failure::BadInput)?;
    for note in notes {
        println!("note: {note}");
    }
    let p = Problem::new(&cfg);
    // A budget too small for the CPU backend's one velocity is refused before anything is
    // printed (print_plans prints the plan, and would print `valid` above the refusal).
    let cpu_budget = cfg.solver.memory_budget_mib.unwrap_or(backend::CPU_DEFAULT_BUDGET_MIB);
    if let Err(e) = cpu_plan(&p, (cpu_budget * 1048576.0) as u64) {
        return Err(Failure::BadInput(format!("`solver.memory_budget_mib` / --memory-budget-mib: {e} (cpu backend)")));
    }
    println!("case {}: valid", cfg.name.as_deref().unwrap_or(&path.display().to_string()));
    print_gas(&cfg, &p);
    print_grid(&cfg, &p);
    print_plans(&cfg, &p)?;
    if let Some(m) = device_memory_mib {
        print_cuda_plan(&cfg, &p, m)?;
    }
    Ok(())
}

/// What a GPU backend uploads of `p`'s face data, partner data and wall table.
fn gpu_table_bytes(p: &Problem, value_bytes: usize) -> Result<u64, Failure> {
    let layout = knudsen::backend::gpu_io::table_layout(p).map_err(Failure::Run)?;
    Ok(backend::gpu_table_bytes(&layout, p.grid.nz(), p.bodies.solids.walls.len(), value_bytes))
}

/// The CUDA backend's plan on a device of `total_mib`: the schedule it would build (its
/// default budget is half the memory) and what it would allocate, against that memory.
fn print_cuda_plan(cfg: &Config, p: &Problem, total_mib: f64) -> Result<(), Failure> {
    let total = (total_mib * 1048576.0) as u64;
    let budget = cfg.solver.memory_budget_mib.map_or(total / 2, |b| (b * 1048576.0) as u64);
    let (g, v) = (&p.grid, &p.vgrid);
    let slots = cfg.solver.scheme.slices();
    let f64 = cfg.solver.names_f64();
    let value_bytes = backend::gpu_bytes_per_value(f64);
    let table_bytes = gpu_table_bytes(p, value_bytes)?;
    let precision = if f64 { "f64" } else { "f32" };
    let head = format!("cuda ({precision}) on a {total_mib} MiB device, budget {:.1} MiB", mib(budget));
    match schedule(&v.octant_members(), &v.xi, g.dims(), budget, &GpuLimits::cuda(total), None, slots, value_bytes) {
        Ok(s) => {
            let need = s.distribution_bytes + s.field_bytes + table_bytes;
            println!(
                "{head}: {} velocities in flight in {} waves, {} chunks of {} velocities; slices {:.1} MiB, fields {:.1} MiB, tables {:.1} MiB: {:.1} MiB in all, {} the {total_mib} MiB (the driver keeps a few hundred MiB)",
                s.in_flight(),
                s.waves.len(),
                s.slice_buffers,
                s.chunk_stride,
                mib(s.distribution_bytes),
                mib(s.field_bytes),
                mib(table_bytes),
                mib(need),
                if need <= total { "within" } else { "DOES NOT FIT" }
            );
        }
        Err(e) => println!("{head}: does not fit: {e}"),
    }
    // As the backend plans it (cuda/fused.rs::choose), without a device: what the device
    // must offer for it is printed beside it, since the backend falls back where it does not.
    let tile = knudsen::backend::fused::cuda_tile(p).map_err(|e| Failure::BadInput(e.0))?;
    let plan = knudsen::backend::fused::cuda_plan(p, budget, tile, None, None);
    let sweep = knudsen::backend::fused::describe_choice(plan.as_ref().map_err(String::as_str));
    println!("cuda sweep kernel: {sweep}");
    if let Ok(f) = &plan {
        let need = knudsen::backend::fused::block_shared_bytes(f.tile, f.second);
        println!(
            "cuda sweep kernel needs: compute capability 7.0 or later and {:.1} KiB of shared memory per block; a device with less (64 KiB per block on sm_75, 99 KiB on sm_86/89) runs the slice kernels instead, and the run's log says so",
            need as f64 / 1024.0
        );
    }
    if cfg.solver.acceleration.synthetic() {
        // The device keeps what the sweep leaves; a hierarchy that does not fit there is
        // solved on the host (synthetic/placement.rs).
        let syn = knudsen::plan::synthetic_device_bytes(cfg.cell_counts());
        let left = total.saturating_sub(budget);
        println!(
            "cuda synthetic solve: at most {:.1} MiB of device memory; {}",
            mib(syn),
            if syn <= left {
                format!("fits beside the sweep's {:.1} MiB", mib(budget))
            } else {
                format!(
                    "more than the {:.1} MiB beside the sweep's budget: it would run on the host, with {:.1} MiB of host memory (or run with --acceleration none)",
                    mib(left),
                    mib(knudsen::plan::synthetic_bytes(cfg.cell_counts()))
                )
            }
        );
    }
    Ok(())
}

fn print_gas(cfg: &Config, p: &Problem) {
    // Fixed decimals where they read well, else an exponent (Kn 1e300 printed 300 digits).
    let num = |x: f64, d: usize| if (1e-4..1e6).contains(&x.abs()) { format!("{x:.d$}") } else { format!("{x:.d$e}") };
    println!(
        "gas: Kn = {}, delta = {} (reference length {}), omega = {}, Pr = {:.6} ({})",
        num(cfg.kn(), 6),
        num(cfg.delta(), 6),
        cfg.gas.length,
        cfg.gas.omega,
        cfg.gas.prandtl,
        if cfg.gas.prandtl == 1.0 { "BGK" } else { "Shakhov" }
    );
    for w in cfg.warnings() {
        println!("warning: {w}");
    }
    if let Some(n) = cfg.f32_floor_note() {
        println!("note: {n}");
    }
    let ini = cfg.initial_state();
    let mut temps = vec![ini.temperature];
    for b in &p.bounds.faces {
        match b.kind {
            FaceKind::DiffuseWall { temperature, .. } | FaceKind::FreeStream { temperature, .. } => {
                temps.push(temperature)
            }
            FaceKind::Specular | FaceKind::Periodic => {}
        }
    }
    temps.extend(p.bodies.bodies.iter().map(|b| b.temperature));
    let tau = |t: f64| 1.0 / knudsen::model::collision_frequency(p.delta, p.omega, ini.density, t);
    let (tmin, tmax) = temps.iter().fold((f64::MAX, f64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    println!(
        "relaxation time tau = 1/nu at rho = {}: {} (T = {tmin}) .. {} (T = {tmax}), in units L / v0",
        ini.density,
        num(tau(tmin).min(tau(tmax)), 4),
        num(tau(tmin).max(tau(tmax)), 4)
    );
}

fn print_grid(cfg: &Config, p: &Problem) {
    let (g, v) = (&p.grid, &p.vgrid);
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
    let levels = knudsen::solver::coarse::levels(cfg);
    if levels.is_empty() && cfg.solver.coarse_grids > 0 {
        println!("{}", knudsen::solver::coarse::NO_LEVEL);
    }
    if !levels.is_empty() {
        let each: Vec<String> = levels
            .iter()
            .rev()
            .map(|c| {
                let n = c.grid.cell_counts();
                format!("{} x {} x {} cells x {}^3 velocities", n[0], n[1], n[2], c.velocity.points)
            })
            .collect();
        println!(
            "coarse start (solver.coarse_grids = {}): {}, each to residual {:.0e}, then the case",
            cfg.solver.coarse_grids,
            each.join(", then "),
            levels[0].solver.tolerance
        );
    }
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
}

/// Host storage, then the plan of the CPU backend and of every wgpu adapter found.
fn print_plans(cfg: &Config, p: &Problem) -> Result<(), Failure> {
    let (g, v) = (&p.grid, &p.vgrid);
    // Per-cell fields held by the solver: raw moments (13), sweep coefficients (10),
    // macroscopic state (16) and conserved variables (5), all f64.
    let host_bytes = g.cells() as u64 * (13 + 10 + 16 + 5) * 8;
    println!("host field storage: {:.1} MiB (the per-cell fields; `run` adds the velocity tables, the GPU buffers' host copies and a host synthetic solve)", mib(host_bytes));
    match cfg.solver.acceleration {
        a @ (knudsen::config::Acceleration::Gsis | knudsen::config::Acceleration::Auto) => println!(
            "acceleration: {}{} (synthetic solve to a relative residual of {:.1e}: on the GPU from 8192 cells (the CUDA backend in f64, wgpu in f32 beside its f32 sweep; with \"gsis\" on CUDA at any size), at most {:.1} MiB of device memory beside {:.1} MiB on the host; on the host otherwise, {:.1} MiB)",
            a.name(),
            if a == knudsen::config::Acceleration::Auto {
                ": synthetic solves where their measured cost pays, source-iteration updates elsewhere"
            } else {
                ""
            },
            knudsen::solver::synthetic::inner_tolerance(p),
            mib(knudsen::plan::synthetic_device_bytes(cfg.cell_counts())),
            mib(knudsen::plan::synthetic_host_bytes_beside_device(cfg.cell_counts())),
            mib(knudsen::plan::synthetic_bytes(cfg.cell_counts())),
        ),
        knudsen::config::Acceleration::None => println!("acceleration: none (source iteration)"),
    }
    let slots = cfg.solver.scheme.slices();
    match cfg.solver.scheme {
        knudsen::config::Scheme::FirstOrder => println!("scheme: first_order (1 slice per velocity)"),
        knudsen::config::Scheme::SecondOrder => println!(
            "scheme: second_order ({slots} slices per velocity: the cell values and the face values emitted along x, y, z; {} more than first order)",
            slots - 1
        ),
    }
    if let Some(theta) = p.partner_relaxation() {
        println!("partner data (specular and periodic faces): takes {theta} of each sweep's change (solver.partner_relaxation)");
    }
    let cpu_budget = cfg.solver.memory_budget_mib.unwrap_or(backend::CPU_DEFAULT_BUDGET_MIB);
    // A CPU that refuses the case has no plan to print (the budget is still checked).
    let refusal = knudsen::backend::cpu::f32_scheme_refusal(cfg);
    if let Some(why) = &refusal {
        println!("cpu: refuses: {why} (`run --backend cpu` exits 2)");
    }
    match cpu_plan(p, (cpu_budget * 1048576.0) as u64) {
        Ok(_) if refusal.is_some() => {}
        Ok(pl) => {
            if let Err(e) = knudsen::backend::cpu::check_host_storage(&pl, knudsen::plan::available_host_bytes()) {
                println!("note: {e:#}: `run --backend cpu` would refuse it");
            }
            println!(
            "cpu ({}{}), budget {cpu_budget} MiB: batch {} velocities in {} batches, {} slices per velocity{}; distribution storage {:.1} MiB",
            knudsen::config::Precision::on_cpu(cfg.solver.precision).name(),
            if cfg.solver.precision == Some(knudsen::config::Precision::F32) { ", vectorised over 8 velocities" } else { "" },
            pl.max_batch,
            pl.batches.len(),
            knudsen::backend::cpu::cpu_slices(cfg.solver.scheme),
            if slots == 1 { " (the level swept and the one before)" } else { "" },
            mib(pl.distribution_bytes())
        )
        }
        Err(e) => {
            return Err(Failure::BadInput(format!(
                "`solver.memory_budget_mib` / --memory-budget-mib: {e} (cpu backend)"
            )))
        }
    }
    // The plan on the adapter `--backend wgpu` would use (one line: the same adapter can be
    // listed once per graphics API), else on WebGPU's default limits; with that adapter's
    // default budget (half a discrete Vulkan GPU's memory) unless one is given.
    let (name, wlimits, adapter_budget, features, device_type) =
        match backend::wgpu::device::pick(backend::wgpu::device::adapters(), true) {
            Ok(a) => {
                let i = a.get_info();
                (
                    format!("{} ({:?})", i.name, i.backend),
                    a.limits(),
                    backend::wgpu::default_budget_bytes(&a) as f64 / 1048576.0,
                    Some(a.features()),
                    Some(i.device_type),
                )
            }
            Err(_) => (
                "no adapter found; WebGPU default limits".into(),
                wgpu::Limits::default(),
                backend::wgpu::DEFAULT_BUDGET_MIB,
                None,
                None,
            ),
        };
    let gpu_budget = cfg.solver.memory_budget_mib.unwrap_or(adapter_budget);
    let limits = GpuLimits::from_wgpu(&wlimits);
    let f64 = cfg.solver.names_f64();
    match features {
        Some(f) => {
            if let Some(why) = backend::wgpu::real::f64_refusal(p, f, &name) {
                println!("wgpu: refuses: {why} (`--backend auto` takes CUDA or the CPU instead)");
                return Ok(());
            }
        }
        None if f64 => {
            println!(
                "wgpu: no adapter found; solver.precision \"f64\" needs one with f64 shaders (SHADER_F64, Vulkan only)"
            );
            return Ok(());
        }
        None => {}
    }
    let precision = if f64 { "f64" } else { "f32" };
    let value_bytes = backend::gpu_bytes_per_value(f64);
    let table_bytes = gpu_table_bytes(p, value_bytes)?;
    let sched = schedule(
        &v.octant_members(),
        &v.xi,
        g.dims(),
        (gpu_budget * 1048576.0) as u64,
        &limits,
        knudsen::backend::wgpu::schedule::slice_binding_cap_from_env(),
        slots,
        value_bytes,
    );
    match &sched {
        Ok(s) => println!(
            "wgpu ({precision}) on {name}, budget {gpu_budget} MiB: {} velocities in flight in {} waves, {} bindings of {} velocities swept by {} dispatch(es) per z-step of each wave; distribution storage {:.1} MiB; GPU fields {:.1} MiB; tables {:.1} MiB",
            s.in_flight(),
            s.waves.len(),
            s.slice_buffers,
            s.chunk_stride,
            s.max_groups(),
            mib(s.distribution_bytes),
            mib(s.field_bytes),
            mib(table_bytes)
        ),
        Err(e) => println!("wgpu ({precision}) on {name}: does not fit: {e}"),
    }
    let budget = (gpu_budget * 1048576.0) as u64;
    let plan = backend::wgpu::fused::choose(p, budget, &wlimits, None, None).map_err(Failure::Run)?;
    let sweep = backend::fused::describe_choice(plan.as_ref().map_err(String::as_str));
    // The slice sweep's rows in flight, as the backend would choose them on this adapter.
    let rows = match (&plan, &sched, device_type) {
        (Err(_), Ok(s), Some(d)) => {
            format!(
                ", {} invocation(s) per velocity (rows in flight)",
                backend::wgpu::sweep_rows(s, g.dims()[1], f64, d)
            )
        }
        _ => String::new(),
    };
    println!("wgpu sweep kernel: {sweep}{rows}");
    Ok(())
}
