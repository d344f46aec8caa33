//! Gas at rest between walls at its own temperature must stay at rest.

mod common;
use common::*;

#[test]
fn gas_at_rest_stays_at_rest_to_round_off() {
    // Odd M puts an exact zero in every velocity component (zero-speed and in-plane
    // velocities are exercised). With 25 points on [-6, 6] the quadrature reproduces the
    // Maxwellian's moments to ~1e-17 (aliasing 2 exp(-pi^2 / h^2), h = 0.5), so the initial
    // state is a fixed point of the discrete scheme and only round-off may move it.
    // Walls differ in nothing but their position; an unequal box tests nonuniform extents.
    let mut v = cavity_json(4, 25, 6.0, 0.0);
    v["grid"]["x"]["max"] = serde_json::json!(2.0);
    v["grid"]["z"]["cells"] = serde_json::json!(3);
    v["solver"] = serde_json::json!({"max_iterations": 4, "tolerance": 1e-30});
    let cfg = config(&v);
    for b in backends() {
        let (_p, r) = run(&cfg, b, 2);
        // f64 never reaches 1e-30: all four sweeps. f32 backends stop at their 1e-5 floor,
        // which a gas at rest reaches at once (its momentum is measured against 1e-2 ||rho||
        // v0 there, solver::convergence::momentum_floor): one sweep, held to the same bounds.
        let sweeps = if b == knudsen::backend::BackendChoice::Cpu { 4 } else { 1 };
        assert_eq!(r.iterations(), sweeps, "{b:?}");
        // Round-off of the backend's arithmetic (unit round-off u: f64 on the CPU, f32 on
        // GPUs): ~1000 u for rho and T, sums over 25^3 velocities per cell; ~100 u for U
        // and q, sums of terms that cancel pairwise by symmetry.
        let u = if b == knudsen::backend::BackendChoice::Cpu { f64::EPSILON / 2.0 } else { f32::EPSILON as f64 / 2.0 };
        for (c, m) in r.fields.iter().enumerate() {
            assert!((m.rho - 1.0).abs() < 1000.0 * u, "{b:?} cell {c}: rho {}", m.rho);
            assert!((m.t - 1.0).abs() < 1000.0 * u, "{b:?} cell {c}: T {}", m.t);
            for d in 0..3 {
                assert!(m.u[d].abs() < 100.0 * u, "{b:?} cell {c}: U {:?}", m.u);
                assert!(m.q[d].abs() < 100.0 * u, "{b:?} cell {c}: q {:?}", m.q);
            }
        }
    }
}

#[test]
fn gas_at_rest_around_a_body_keeps_its_density() {
    // The closed box of the test above with a solid block (one cell in 32) at the walls'
    // temperature: still a fixed point, the gas at its initial density in every fluid cell.
    // The mass rescale keeps the gas's mass: counted over every cell instead, it had scaled
    // the gas to 32/31 of it (solid cells hold none).
    let mut v = cavity_json(4, 25, 6.0, 0.0);
    v["grid"]["z"]["cells"] = serde_json::json!(2);
    v["bodies"] = serde_json::json!([{"min": [0.25, 0.5, 0.0], "max": [0.5, 0.75, 0.5], "temperature": 1.0}]);
    v["solver"] = serde_json::json!({"max_iterations": 4, "tolerance": 1e-30});
    let cfg = config(&v);
    for b in backends() {
        let (p, r) = run(&cfg, b, 2);
        let solid = (0..p.grid.cells()).filter(|&c| p.bodies.solids.is_solid(c)).count();
        assert_eq!(solid, 1, "the block is one cell");
        // As above: ~1000 u for rho and T (u the backend's unit round-off).
        let u = if b == knudsen::backend::BackendChoice::Cpu { f64::EPSILON / 2.0 } else { f32::EPSILON as f64 / 2.0 };
        for (c, m) in r.fields.iter().enumerate().filter(|(c, _)| !p.bodies.solids.is_solid(*c)) {
            assert!((m.rho - 1.0).abs() < 1000.0 * u, "{b:?} cell {c}: rho {}", m.rho);
            assert!((m.t - 1.0).abs() < 1000.0 * u, "{b:?} cell {c}: T {}", m.t);
        }
    }
}

#[test]
fn hot_wall_heats_the_gas() {
    // The same box with one hot wall: the fixed point is broken, the gas next to the hot
    // wall must warm, and the mass stays put. Guards against a boundary that ignores T_w.
    let mut v = cavity_json(4, 25, 6.0, 0.0);
    v["boundaries"]["x_max"] = wall(1.5);
    v["solver"] = serde_json::json!({"max_iterations": 3, "tolerance": 1e-30});
    let cfg = config(&v);
    for b in backends() {
        let (p, r) = run(&cfg, b, 2);
        let hot = r.fields[p.grid.index(3, 2, 2)].t;
        let cold = r.fields[p.grid.index(0, 2, 2)].t;
        // A tenth of the walls' difference (0.5): a wall whose T_w is ignored leaves the
        // rest state, a difference of 0.
        assert!(hot > cold + 0.05, "{b:?}: T near hot wall {hot}, near cold wall {cold}");
        // The closed box rescales its mass each sweep (`solver.mass_rescale` auto): the
        // unit density times the unit volume, to the backend's round-off summed over cells.
        let mass: f64 = r.fields.iter().zip(p.grid.volumes()).map(|(m, v)| m.rho * v).sum();
        let u = if b == knudsen::backend::BackendChoice::Cpu { f64::EPSILON } else { f32::EPSILON as f64 };
        assert!((mass - 1.0).abs() < 100.0 * u, "{b:?}: mass {mass}");
    }
}
