//! The fused on-chip sweeps (shaders/sweep_fused.wgsl; second order sweep_fused2.wgsl) against the slice kernels on the same
//! adapter (lavapipe in CI), after the same iterations: on grids whose sizes are no multiple
//! of the tile (partial tiles at both edges), a stretched and an explicit axis, a one-cell
//! axis, free-stream faces, an odd velocity grid (a zero node), several tile shapes and
//! waves; and bit-identical reruns.
//!
//! Tolerances: the two kernels compute every point's update the same way but sum the moments
//! in a different order (per tile and block, against per slice and chunk), so they differ by
//! f32 round-off: 1e-5 relative L2 for the fields, 1e-4 for the heat flux, as argued in
//! tests/gpu.rs (measured: 1e-7 and 1e-6).

mod common;
use common::*;
use knudsen::backend::fused::SweepKernel;
use knudsen::backend::wgpu::{WgpuBackend, WgpuOptions};
use knudsen::problem::Problem;
use std::sync::Arc;

fn odd_case() -> knudsen::config::Config {
    config(&serde_json::json!({
        "gas": {"kn": 0.5, "prandtl": 0.6666666666666666},
        "grid": {
            "x": {"min": -2.0, "max": 2.0, "stretched": {"uniform": [-0.5, 0.5], "cells": 5, "ratio_min": 1.2, "ratio_max": 1.2}},
            "y": {"faces": [0.0, 0.1, 0.25, 0.4, 0.6, 0.75, 0.9, 1.0, 1.2, 1.4, 1.5]},
            "z": {"min": 0.0, "max": 0.6, "cells": 6}
        },
        "velocity": {"points": 11},
        "free_stream": {"mach": 0.5},
        "boundaries": {
            "x_min": {"type": "free_stream"}, "x_max": {"type": "free_stream"},
            "y_min": wall(1.5), "y_max": {"type": "diffuse_wall", "temperature": 1.0, "velocity": [0.2, 0.0, 0.1]},
            "z_min": wall(0.8), "z_max": wall(1.0)
        },
        "solver": {"max_iterations": 3, "tolerance": 1e-30}
    }))
}

fn thin_case() -> knudsen::config::Config {
    let axis = |n: usize| serde_json::json!({"min": 0.0, "max": 1.0, "cells": n});
    config(&serde_json::json!({
        "gas": {"kn": 0.2, "prandtl": 1.0},
        "grid": {"x": axis(1), "y": axis(9), "z": axis(7)},
        "velocity": {"points": 12},
        "boundaries": {
            "x_min": wall(1.2), "x_max": wall(1.0), "y_min": wall(1.0),
            "y_max": {"type": "diffuse_wall", "temperature": 1.0, "velocity": [0.0, 0.0, 0.3]},
            "z_min": wall(1.0), "z_max": wall(1.0)
        },
        "solver": {"max_iterations": 3, "tolerance": 1e-30}
    }))
}

/// A hot box in a free stream, on a grid with partial tiles: bodies are fused too (wall
/// words in the sweep, wall loads from the moments).
fn body_case() -> knudsen::config::Config {
    let axis = |n: usize| serde_json::json!({"min": 0.0, "max": n as f64, "cells": n});
    config(&serde_json::json!({
        "gas": {"kn": 0.5, "length": 6.0},
        "grid": {"x": axis(9), "y": axis(6), "z": axis(7)},
        "velocity": {"points": 10},
        "free_stream": {"mach": 0.8},
        "boundaries": {
            "x_min": {"type": "free_stream"}, "x_max": {"type": "free_stream"},
            "y_min": {"type": "free_stream"}, "y_max": {"type": "free_stream"},
            "z_min": wall(1.0), "z_max": wall(1.0)
        },
        "bodies": [{"min": [3.0, 2.0, 2.0], "max": [5.0, 4.0, 5.0], "temperature": 1.5}],
        "solver": {"max_iterations": 3, "tolerance": 1e-30}
    }))
}

/// A cold box in a Mach 10 stream: the fused sweep's exponent of f^S is a polynomial in xi
/// whose terms grow as (|xi| + |U|)^2 (docs/performance.md, "The exponent as a polynomial in
/// xi"); here |U| is about 9 in the stream and about 0 at the box.
fn hypersonic_case() -> knudsen::config::Config {
    let axis = |n: usize| serde_json::json!({"min": 0.0, "max": n as f64, "cells": n});
    config(&serde_json::json!({
        "gas": {"kn": 1.0, "length": 4.0},
        "grid": {"x": axis(6), "y": axis(4), "z": axis(3)},
        "velocity": {"points": 30, "max": 13.0},
        "free_stream": {"mach": 10.0},
        "boundaries": {
            "x_min": {"type": "free_stream"}, "x_max": {"type": "free_stream"},
            "y_min": {"type": "free_stream"}, "y_max": {"type": "free_stream"},
            "z_min": {"type": "free_stream"}, "z_max": {"type": "free_stream"}
        },
        "bodies": [{"min": [2.0, 1.0, 1.0], "max": [4.0, 3.0, 2.0], "temperature": 1.0}],
        "solver": {"max_iterations": 3, "tolerance": 1e-30}
    }))
}

/// The fields of the gas cells (solid cells hold none: their fields are not numbers).
fn gas(p: &Problem, r: &knudsen::solver::RunResult) -> Vec<knudsen::model::Macro> {
    let words = &p.bodies.solids.words;
    let solid = |c: usize| words.get(c).is_some_and(|&w| w & knudsen::grid::solid::SOLID_BIT != 0);
    r.fields.iter().enumerate().filter(|&(c, _)| !solid(c)).map(|(_, m)| *m).collect()
}

/// Specular y_min and z_min (a quarter of a cavity, odd M with its zero node), and a
/// periodic x axis three cells long: partner inflows on the tiles at the domain's faces,
/// exits at its far faces.
fn partner_cases() -> [knudsen::config::Config; 2] {
    let mut quarter = cavity_json(5, 9, 4.0, 0.2);
    quarter["grid"]["x"] = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 7});
    quarter["boundaries"]["y_min"] = serde_json::json!({"type": "specular"});
    quarter["boundaries"]["z_min"] = serde_json::json!({"type": "specular"});
    quarter["solver"] = serde_json::json!({"max_iterations": 3, "tolerance": 1e-30});
    let mut channel = cavity_json(6, 10, 4.0, 0.2);
    channel["grid"]["x"] = serde_json::json!({"min": 0.0, "max": 0.5, "cells": 3});
    channel["boundaries"]["x_min"] = serde_json::json!({"type": "periodic"});
    channel["boundaries"]["x_max"] = serde_json::json!({"type": "periodic"});
    channel["solver"] = serde_json::json!({"max_iterations": 3, "tolerance": 1e-30});
    [config(&quarter), config(&channel)]
}

/// A cavity of 8 x 8 x 4 cells: every tile tried (4x4, 8x4, 2x8) divides it, so the sweep
/// holds only its whole-tile level copies (`wgpu/specialise.rs::levels`).
fn whole_tiles_case() -> knudsen::config::Config {
    let mut v = cavity_json(8, 10, 4.0, 0.3);
    v["grid"]["z"] = serde_json::json!({"min": 0.0, "max": 0.5, "cells": 4});
    v["solver"] = serde_json::json!({"max_iterations": 3, "tolerance": 1e-30});
    config(&v)
}

fn assert_close(p: &Problem, what: &str, a: &knudsen::solver::RunResult, b: &knudsen::solver::RunResult) {
    for (name, d) in field_differences(&gas(p, a), &gas(p, b)) {
        let t = if name == "heat_flux" { 1e-4 } else { 1e-5 };
        eprintln!("{what}: {name} relative L2 difference {d:.2e} (tolerance {t:.0e})");
        assert!(d < t, "{what}: {name} differs by {d:e} > {t:e}");
    }
}

fn backend(
    p: &Arc<Problem>,
    a: &wgpu::Adapter,
    sweep: SweepKernel,
    tile: Option<[usize; 2]>,
    budget: u64,
) -> WgpuBackend {
    let opts = WgpuOptions { sweep: Some(sweep), fused_tile: tile, ..Default::default() };
    let b = WgpuBackend::with_adapter(p.clone(), budget, &opts, a).unwrap();
    assert_eq!(b.sweep_kernel().starts_with("fused"), sweep == SweepKernel::Fused, "{}", b.sweep_kernel());
    b
}

#[test]
fn fused_sweep_matches_the_slice_kernels() {
    let Some(adapter) = gpu_adapter() else { return };
    let [quarter, channel] = partner_cases();
    for (name, cfg) in [
        ("odd grid, free stream", odd_case()),
        ("one-cell x axis", thin_case()),
        ("body", body_case()),
        ("body in a Mach 10 stream", hypersonic_case()),
        ("specular quarter", quarter),
        ("periodic channel", channel),
        ("whole tiles", whole_tiles_case()),
    ] {
        let p = Arc::new(Problem::new(&cfg));
        let slices = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Slices, None, 64 << 20)));
        // The default tile (4x4, 8 shares per cell), the largest lavapipe's 32 KiB of workgroup
        // memory allows (8x4), a tile wider than the one-cell axis.
        for tile in [None, Some([8, 4]), Some([2, 8])] {
            let fused = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Fused, tile, 64 << 20)));
            assert_eq!(fused.iterations(), slices.iterations());
            assert_close(&p, &format!("{name}, tile {tile:?}"), &fused, &slices);
            // Each body wall face's incident number flux: f32 sums of a few hundred positive
            // terms in another order, relative round-off ~1e-6, bounded by 1e-5 of the
            // face's flux. A face the flow hardly reaches sums far tails of a Maxwellian
            // (on the Mach 10 box's lee side 2.4e-10 of the front's 9.5), whose exponents f32
            // resolves only to a few 1e-5 relative on every GPU path (measured on lavapipe:
            // the slice kernels 4.6e-5 from the f64 CPU backend, the fused sweep 7.5e-5 from
            // the slice kernels before its exponent became a polynomial in xi and 1.3e-4
            // after), so the bound adds 1e-8 of the body's largest face flux.
            let largest = slices.wall.iter().map(|b| b[0].abs()).fold(0.0f64, f64::max);
            let mut worst = 0.0f64;
            for (a, b) in fused.wall.iter().zip(&slices.wall) {
                worst = worst.max((a[0] - b[0]).abs() / (1e-5 * b[0].abs() + 1e-8 * largest));
            }
            eprintln!("{name}, tile {tile:?}: wall number fluxes differ by {worst:.2e} of their bound at most");
            assert!(worst <= 1.0, "{name}: wall fluxes differ by {worst:e} of their bound");
            assert_eq!(fused.wall.len(), slices.wall.len());
        }
    }
}

#[test]
fn fused_reduction_over_whole_runs_and_half_shares_matches_the_slice_kernels() {
    // sweep_fused.wgsl's straight reduction paths at the default 4x4 tile (shares of 16
    // velocities). 32 velocity points per axis put 16 x-nodes in each octant's rows: each
    // share is one run of equal (y, z). 48 points (the paper cube's) put 24: a share is one
    // run or two halves of 8 from two runs. Grids whose rows are neither a multiple of 16
    // nor of 8 x-nodes (20 points, cube-quick's) take the loop.
    let Some(adapter) = gpu_adapter() else { return };
    for points in [32, 48] {
        let mut v = cavity_json(3, points, 4.0, 0.5);
        v["grid"]["y"] = serde_json::json!({"min": 0.0, "max": 1.0, "cells": 4});
        v["grid"]["z"] = serde_json::json!({"min": 0.0, "max": 0.5, "cells": 2});
        v["solver"] = serde_json::json!({"max_iterations": 2, "tolerance": 1e-30});
        let cfg = config(&v);
        let p = Arc::new(Problem::new(&cfg));
        let slices = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Slices, None, 64 << 20)));
        let fused = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Fused, Some([4, 4]), 64 << 20)));
        assert_close(&p, &format!("{points}^3 velocities, tile 4x4"), &fused, &slices);
    }
}

#[test]
fn fused_sweep_over_several_waves_repeats_bit_for_bit() {
    let Some(adapter) = gpu_adapter() else { return };
    let cfg = odd_case();
    let p = Arc::new(Problem::new(&cfg));
    // A 1 MiB budget splits the 1331 velocities into several waves.
    let small = backend(&p, &adapter, SweepKernel::Fused, Some([4, 4]), 1 << 20);
    assert!(
        small.sweep_kernel().contains("wave(s)") && !small.sweep_kernel().contains(" 1 wave(s)"),
        "{}",
        small.sweep_kernel()
    );
    let a = run_with(&p, Box::new(small));
    let b = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Fused, Some([4, 4]), 1 << 20)));
    let bits = |r: &knudsen::solver::RunResult| -> Vec<u64> {
        r.fields.iter().flat_map(|m| [m.rho, m.t, m.u[0], m.u[2], m.q[1]]).map(f64::to_bits).collect()
    };
    assert!(bits(&a) == bits(&b), "two runs differ");
    let one_wave = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Fused, Some([4, 4]), 64 << 20)));
    assert_close(&p, "several waves against one", &a, &one_wave);
}

#[test]
fn fused_moments_per_cell_and_per_moment_give_the_same_bits() {
    // Both shapes of fused_moments (shaders/fused_moments.wgsl) add each sum term for term
    // in the same order, so the fields and the wall loads agree exactly; bodies and partner
    // faces exercise the wall and incident-flux shares of each moment.
    let Some(adapter) = gpu_adapter() else { return };
    let [quarter, channel] = partner_cases();
    let mut second = quarter.clone();
    second.solver.scheme = knudsen::config::Scheme::SecondOrder;
    for (name, cfg) in [
        ("body", body_case()),
        ("specular quarter", quarter),
        ("periodic channel", channel),
        // The face-flux partials (sweep_fused2.wgsl) on the box faces.
        ("specular quarter, second order", second),
    ] {
        let p = Arc::new(Problem::new(&cfg));
        let run = |mpt: usize| {
            let opts = WgpuOptions {
                sweep: Some(SweepKernel::Fused),
                fused_moments_per_thread: Some(mpt),
                ..Default::default()
            };
            run_with(&p, Box::new(WgpuBackend::with_adapter(p.clone(), 64 << 20, &opts, &adapter).unwrap()))
        };
        let (split, cell) = (run(1), run(13));
        for (field, d) in field_differences(&gas(&p, &split), &gas(&p, &cell)) {
            assert!(d == 0.0, "{name}: {field} differs by {d:e}");
        }
        assert!(split.wall == cell.wall, "{name}: the wall loads differ");
    }
}

#[test]
fn second_order_fused_sweep_matches_the_slice_kernels() {
    // shaders/sweep_fused2.wgsl against the second-order slice kernels: every input of the
    // limiter (the face values carried along x in registers, along y through `outs`, along z
    // level to level, and between tiles through the face buffers' three planes), the
    // face-flux partials on the box faces (free stream and walls), partner inflows and
    // exits. lavapipe's 32 KiB of workgroup memory holds the kernel at 4x2 (the default
    // tile), 2x4, 2x2 (the fallback, four passes of the shares' sum) and 1x8, not at 4x4
    // (40 KiB). Tolerances as for first order.
    let Some(adapter) = gpu_adapter() else { return };
    let [quarter, channel] = partner_cases();
    for (name, mut cfg) in [
        ("odd grid, free stream", odd_case()),
        ("one-cell x axis", thin_case()),
        ("specular quarter", quarter),
        ("periodic channel", channel),
    ] {
        cfg.solver.scheme = knudsen::config::Scheme::SecondOrder;
        let p = Arc::new(Problem::new(&cfg));
        let slices = run_with(&p, Box::new(backend(&p, &adapter, SweepKernel::Slices, None, 64 << 20)));
        for tile in [None, Some([2, 4]), Some([2, 2]), Some([1, 8])] {
            let b = backend(&p, &adapter, SweepKernel::Fused, tile, 64 << 20);
            assert!(b.sweep_kernel().contains("second order"), "{}", b.sweep_kernel());
            let fused = run_with(&p, Box::new(b));
            assert_eq!(fused.iterations(), slices.iterations());
            assert_close(&p, &format!("second order, {name}, tile {tile:?}"), &fused, &slices);
        }
    }
}

#[test]
fn cases_outside_the_fused_kernel_say_why_and_refuse_when_it_is_forced() {
    let Some(adapter) = gpu_adapter() else { return };
    // The second-order scheme around a body: the slice kernels run, and the reason is given.
    let mut cfg = body_case();
    cfg.solver.scheme = knudsen::config::Scheme::SecondOrder;
    let p = Arc::new(Problem::new(&cfg));
    let auto = WgpuBackend::with_adapter(p.clone(), 64 << 20, &WgpuOptions::default(), &adapter).unwrap();
    assert!(auto.sweep_kernel().contains("bodies"), "{}", auto.sweep_kernel());
    let forced = WgpuOptions { sweep: Some(SweepKernel::Fused), ..Default::default() };
    let e = WgpuBackend::with_adapter(p.clone(), 64 << 20, &forced, &adapter).err().expect("refused");
    assert!(e.to_string().contains("bodies"), "{e}");
    // Without a body the fused second-order sweep runs only when asked for (measured slower
    // than the slice kernels through the NVIDIA Vulkan driver).
    cfg.bodies.clear();
    let p = Arc::new(Problem::new(&cfg));
    let auto = WgpuBackend::with_adapter(p.clone(), 64 << 20, &WgpuOptions::default(), &adapter).unwrap();
    assert!(auto.sweep_kernel().contains("measured slower"), "{}", auto.sweep_kernel());
    let fused = WgpuBackend::with_adapter(p.clone(), 64 << 20, &forced, &adapter).unwrap();
    assert!(fused.sweep_kernel().contains("second order"), "{}", fused.sweep_kernel());
}
