//! The GPU backends give the same answer on every run, and the CPU's, on the case that once
//! lost wall-load updates: an odd NZ whose middle z-slice cuts a body, swept by chunks that
//! hold both +z and -z velocities (both halves of a chunk then sum into the same wall faces
//! in that slice).

mod common;
use common::*;
use knudsen::backend::cpu::CpuBackend;
use knudsen::backend::wgpu::{WgpuBackend, WgpuOptions};
use knudsen::problem::Problem;
use std::sync::Arc;

/// A hot box in a 8 x 8 x 9 cavity; the box spans z cells 3..6, so slice 4 (the middle of
/// 9) cuts it. 12^3 velocities: octants of 216, whole quads, so one wave holds them all.
/// Three iterations, no stop.
fn middle_slice_case() -> knudsen::config::Config {
    let axis = |n: usize| serde_json::json!({"min": 0.0, "max": n as f64, "cells": n});
    let mut v = serde_json::json!({
        "gas": {"kn": 0.5, "length": 8.0},
        "grid": {"x": axis(8), "y": axis(8), "z": axis(9)},
        "velocity": {"points": 12},
        "boundaries": {"x_min": wall(1.0), "x_max": wall(1.0), "y_min": wall(1.0), "y_max": wall(1.0),
                       "z_min": wall(1.0), "z_max": wall(1.0)},
        "bodies": [{"min": [3.0, 2.0, 3.0], "max": [5.0, 6.0, 6.0], "temperature": 1.5}],
        "solver": {"max_iterations": 3, "tolerance": 1e-30}
    });
    v["solver"]["mass_rescale"] = serde_json::json!(true);
    config(&v)
}

#[test]
fn middle_slice_wall_loads_match_cpu_and_repeat_bit_for_bit() {
    let Some(adapter) = gpu_adapter() else { return };
    let cfg = middle_slice_case();
    let p = Arc::new(Problem::new(&cfg));
    let gpu = || WgpuBackend::with_adapter(p.clone(), 64 << 20, &WgpuOptions::default(), &adapter).unwrap();
    let b = gpu();
    // One wave, one chunk, holding +z and -z velocities: the case the race needs.
    let s = b.schedule();
    assert_eq!((s.waves.len(), s.slice_buffers), (1, 1));
    let chunk = &s.waves[0].chunks[0];
    assert!(chunk.split > 0 && chunk.split < chunk.velocities.len());
    let a = run_with(&p, Box::new(b));
    let again = run_with(&p, Box::new(gpu()));
    let cpu = run_with(&p, Box::new(CpuBackend::new(p.clone(), 64 << 20).unwrap()));
    // Bit-identical reruns: every sum has a fixed order on the GPU.
    assert!(a.wall == again.wall, "wall sums differ between two runs");
    let bits = |r: &knudsen::solver::RunResult| -> Vec<u64> {
        r.fields.iter().flat_map(|m| [m.rho, m.t, m.u[0], m.q[2]]).map(f64::to_bits).collect()
    };
    assert!(bits(&a) == bits(&again), "fields differ between two runs");
    // Against the f64 CPU: each face's number flux in f32 (relative round-off ~1e-6 for
    // sums of ~500 positive terms); a lost update would be off by tens of percent.
    assert!(!p.bodies.solids.walls.is_empty());
    let mut worst = 0.0f64;
    for (g, c) in a.wall.iter().zip(&cpu.wall) {
        worst = worst.max((g[0] - c[0]).abs() / c[0].abs());
    }
    eprintln!("largest relative difference of a wall face's incident number flux: {worst:.2e}");
    assert!(worst < 1e-4, "{worst:e}");
}

/// The property the race broke, checked on the CPU twin of wall_load_slice with no GPU: in
/// every z-step of the chunk, each wall face is written by one workgroup (part, n) at most,
/// including the middle slice where the +z and -z parts meet.
#[test]
fn no_two_workgroups_of_a_wall_load_dispatch_write_the_same_face() {
    use knudsen::backend::gpu_tables::velocity_table;
    use knudsen::backend::wgpu::layout::StepParams;
    use knudsen::backend::wgpu::schedule::{schedule, GpuLimits};
    use knudsen::backend::wgpu::twin::{self, Consts, Slices};
    let cfg = middle_slice_case();
    let p = Problem::new(&cfg);
    let (g, v) = (&p.grid, &p.vgrid);
    let s = schedule(&v.octant_members(), &v.xi, g.dims(), 64 << 20, &GpuLimits::lavapipe(), None, 1, 4).unwrap();
    let chunk = &s.waves[0].chunks[0];
    assert!(chunk.split > 0 && chunk.split < chunk.velocities.len(), "the chunk holds both z-parts");
    let layout = knudsen::backend::gpu_io::device_tables(&p).unwrap();
    let k = Consts::of(&p, s.chunk_stride, &layout);
    let table = velocity_table(&p, &chunk.velocities);
    let solids = &p.bodies.solids;
    let nxy = g.slice_cells() as u32;
    let mut walls: Vec<[u32; 4]> = solids.slice_walls.iter().map(|r| [r.start as u32, r.len() as u32, 0, 0]).collect();
    walls.extend(solids.walls.iter().enumerate().map(|(n, w)| [w.cell % nxy, w.side.id() as u32, n as u32, 0]));
    let nwalls = solids.walls.len();
    let slices = Slices(vec![vec![1.0f32; s.chunk_stride * g.slice_cells()]]);
    let mut middle_faces = 0;
    for step in 0..g.nz() as u32 {
        let params = StepParams { step, count: chunk.velocities.len() as u32, split: chunk.split as u32, pad: 0 };
        let mut writer: Vec<Option<(u32, u32)>> = vec![None; nwalls];
        for part in 0..2 {
            for n in 0..nwalls as u32 {
                let mut sums = vec![0.0f32; nwalls * 5];
                twin::wall_load_slice(&k, &params, &table, &slices, &walls, part, n, &mut sums);
                for face in (0..nwalls).filter(|&f| sums[5 * f..5 * f + 5].iter().any(|&x| x != 0.0)) {
                    if let Some(other) = writer[face] {
                        panic!("step {step}: wall face {face} written by workgroups {other:?} and {:?}", (part, n));
                    }
                    writer[face] = Some((part, n));
                    if 2 * step + 1 == g.nz() as u32 {
                        middle_faces += 1;
                    }
                }
            }
        }
    }
    assert!(middle_faces > 0, "the middle slice cuts the body");
}
