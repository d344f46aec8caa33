//! The quick lid-driven cavity (configs/cavity-quick.json): convergence, symmetry, mass,
//! thread-count determinism and batching independence.

mod common;
use common::*;
use knudsen::backend::{cpu::CpuBackend, BackendChoice};
use knudsen::plan::plan_batches;
use knudsen::problem::Problem;
use knudsen::solver::Solver;
use std::sync::Arc;

#[test]
fn quick_cavity_converges_symmetric_mass_conserving_and_thread_independent() {
    let cfg = load_config("cavity-quick.json");
    for b in backends() {
        let (p, r2) = run(&cfg, b, 2);
        assert!(r2.converged, "{b:?}: not converged after {} iterations", r2.iterations());
        // f32 backends stop at their residual floor (1e-5) instead of the case's 1e-9.
        let (tol, sym_tol) = match b {
            BackendChoice::Cpu => (cfg.solver.tolerance, 1e-10),
            // Mirror-image velocities are summed in different orders in f32: round-off of
            // thermal-scale sums, ~1e-7 of v0 (docs/gpu.md, "Precision"); 1e-6 bounds it.
            _ => (1e-5, 1e-6),
        };
        assert!(r2.final_residual() < tol, "{b:?}: residual {:e}", r2.final_residual());
        let g = &p.grid;
        let [nx, ny, nz] = g.dims();

        // Mirror symmetry about the z mid-plane: scalars and U_x, U_y even, U_z odd. The
        // scheme is symmetric exactly; only summation order differs, so 1e-10 is generous
        // in f64.
        let mut worst = 0.0f64;
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let a = r2.fields[g.index(i, j, k)];
                    let m = r2.fields[g.index(i, j, nz - 1 - k)];
                    for (x, y) in [(a.rho, m.rho), (a.t, m.t), (a.u[0], m.u[0]), (a.u[1], m.u[1]), (a.u[2], -m.u[2])] {
                        worst = worst.max((x - y).abs());
                    }
                }
            }
        }
        assert!(worst < sym_tol, "{b:?}: z-mirror asymmetry {worst:e}");

        // Mass: rescaled to the initial mass (1 in a unit box) every iteration; 1e-12 allows
        // the round-off of summing 4096 cells.
        let mass: f64 = r2.fields.iter().zip(g.volumes()).map(|(m, v)| m.rho * v).sum();
        assert!((mass - 1.0).abs() < 1e-12, "{b:?}: mass {mass}");

        // Physics: the lid drags the gas along +x beneath it, the return flow runs along -x
        // near the bottom, and viscous heating warms the gas (walls are at T = 1).
        let top = r2.fields[g.index(nx / 2, ny - 1, nz / 2)];
        let bottom = r2.fields[g.index(nx / 2, 0, nz / 2)];
        assert!(top.u[0] > 0.01 && bottom.u[0] < 0.0, "{b:?}: top {:?}, bottom {:?}", top.u, bottom.u);
        let tmax = r2.fields.iter().map(|m| m.t).fold(0.0, f64::max);
        assert!(tmax > 1.0, "{b:?}: Tmax {tmax}");

        // One thread gives the same bits as two.
        if b == BackendChoice::Cpu {
            let (_, r1) = run(&cfg, b, 1);
            assert_eq!(r1.iterations(), r2.iterations());
            assert!(r1.raw == r2.raw, "1 and 2 threads differ");
            assert!(r1.incident == r2.incident, "1 and 2 threads differ at the walls");
        }
    }
}

#[test]
fn batching_does_not_change_the_answer() {
    // One batch per octant against batches of 7 velocities: the same sweeps, summed in
    // another grouping. After 5 iterations the fields may differ only by round-off
    // accumulated over 1000 velocities per cell: 1e-12 relative.
    let mut v = cavity_json(6, 10, 4.0, 0.1);
    v["solver"] = serde_json::json!({"max_iterations": 5, "tolerance": 1e-30});
    let cfg = config(&v);
    let p = Arc::new(Problem::new(&cfg));
    let octants = p.vgrid.octant_members();
    let big = plan_batches(&octants, p.grid.slice_cells(), 8, 1, 1 << 30).unwrap();
    let small = plan_batches(&octants, p.grid.slice_cells(), 8, 1, 7 * 36 * 8).unwrap();
    assert_eq!(big.batches.len(), 8);
    assert!(small.max_batch == 7 && small.batches.len() > 100);
    let ra = Solver::new(&p, Box::new(CpuBackend::with_plan(p.clone(), big))).run(|_| {}).unwrap();
    let rb = Solver::new(&p, Box::new(CpuBackend::with_plan(p.clone(), small))).run(|_| {}).unwrap();
    let apart = |x: &[f64], y: &[f64]| (0..x.len()).any(|c| (x[c] - y[c]).abs() > 1e-12 * (x[0].abs() + x[c].abs()));
    for (a, b) in ra.raw.iter().zip(&rb.raw) {
        assert!(!apart(a, b), "{a:?} vs {b:?}");
    }
    // And a lid 1e-9 faster fails that same comparison, so it has teeth.
    let mut v0 = v.clone();
    v0["boundaries"]["y_max"]["velocity"] = serde_json::json!([0.1 + 1e-9, 0.0, 0.0]);
    let (_, rc) = run(&config(&v0), BackendChoice::Cpu, 2);
    assert!(ra.raw.iter().zip(&rc.raw).any(|(a, b)| apart(a, b)), "a lid 1e-9 faster passes the comparison");
}
