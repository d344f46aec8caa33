//! Tests of the fused sweep's plan (backend/fused.rs), without a GPU.

use super::*;
use crate::config::Quadrature;
use crate::grid::{Octant, VelocityGrid};

#[test]
fn blocks_never_mix_octants_and_every_velocity_is_swept_once() {
    let v = VelocityGrid::new(13, 4.0, Quadrature::Trapezoid);
    let p = plan(&v.octant_members(), [10, 7, 5], [8, 8], false, 1 << 20, FusedLimits::CUDA).unwrap();
    assert!(p.waves.len() > 1, "a small budget splits the velocities into waves");
    let sizes: Vec<usize> = p.waves.iter().map(FusedWave::blocks).collect();
    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "unbalanced waves {sizes:?}");
    let mut seen = vec![0u32; v.xi.len()];
    for w in &p.waves {
        assert_eq!(w.velocities.len() % BLOCK_VELOCITIES, 0);
        for (b, block) in w.velocities.chunks(BLOCK_VELOCITIES).enumerate() {
            let real: Vec<u32> = block.iter().copied().filter(|&g| g != GHOST).collect();
            let o = Octant::of(v.xi[real[0] as usize]).0 as usize;
            assert!(real.iter().all(|&g| Octant::of(v.xi[g as usize]).0 as usize == o));
            // Ghosts only after the block's real velocities (the velocity table copies
            // the one before a ghost).
            assert!(block[..real.len()].iter().all(|&g| g != GHOST));
            assert!((w.ranges[2 * o] as usize..w.ranges[2 * o + 1] as usize).contains(&b));
            real.iter().for_each(|&g| seen[g as usize] += 1);
        }
        assert!(w.velocities.len() <= p.stride);
    }
    assert!(seen.iter().all(|&n| n == 1));
}

#[test]
fn the_register_cap_asks_for_the_blocks_the_shared_memory_holds() {
    // 19552 B static (ptxas with walls: 19568, with alignment; without bodies it drops the
    // wall words: 19040) and 36608 B dynamic at 8 x 8.
    assert_eq!(block_shared_bytes([8, 8], false), 56160);
    if std::env::var("KNUDSEN_FUSED_MIN_BLOCKS").is_err() {
        // H100/H200 (228 KiB per SM), A100 (164 KiB), sm_86/89 (100 KiB), unknown.
        let fits = [233472, 167936, 102400].map(|b| min_blocks([8, 8], false, Some(b)));
        assert_eq!(fits, [4, 2, 1]);
        assert_eq!(min_blocks([8, 8], false, None), 4);
        assert_eq!(min_blocks([4, 4], false, Some(233472)), 4, "never above the measured best");
    }
}

#[test]
fn second_order_carries_three_face_values_and_the_face_fluxes() {
    let v = VelocityGrid::new(16, 4.0, Quadrature::Trapezoid);
    let dims = [20, 12, 9];
    let one = plan(&v.octant_members(), dims, [4, 4], false, 1 << 30, FusedLimits::CUDA).unwrap();
    let two = plan(&v.octant_members(), dims, [4, 4], true, 1 << 30, FusedLimits::CUDA).unwrap();
    assert_eq!(two.face_floats(), one.face_floats().map(|n| 3 * n));
    assert_eq!(two.partial_floats() * PARTIALS, one.partial_floats() * (PARTIALS + FACE_PARTIALS));
    // 4 x 4: 3 x 2 (4 + 4) / 16 x 4 B of faces and 2 x 16 x 4 / 128 B of partials.
    assert!((two.traffic_per_point() - (12.0 + 1.0)).abs() < 1e-12, "{}", two.traffic_per_point());
    assert!((one.traffic_per_point() - (4.0 + 0.8125)).abs() < 1e-12);
    // Fewer velocities per wave where the budget binds: the face buffers are three times
    // as large per velocity.
    let budget = one.bytes() / 2;
    let [w1, w2] =
        [false, true].map(|s| plan(&v.octant_members(), dims, [4, 4], s, budget, FusedLimits::CUDA).unwrap());
    assert!(w2.waves.len() > w1.waves.len());
}

#[test]
fn second_order_blocks_fit_the_shared_memory_they_ask_for() {
    // 4 x 4: red 128 x 17, shares 7 x 16 x 16, outs 3 x 128 x 17, inflows 2 x 3 x 8 x 128
    // floats dynamic (66560 B), and the static arrays without the inflows (6384 B; ptxas
    // reports 6256 without the wall words). ncu on an H200 found 3 blocks per SM.
    assert_eq!(shared_bytes([4, 4], true), 66560);
    assert_eq!(block_shared_bytes([4, 4], true), 66560 + 6384);
    if std::env::var("KNUDSEN_FUSED_MIN_BLOCKS").is_err() {
        assert_eq!(min_blocks([4, 4], true, Some(233472)), 3);
        // 8 x 8 holds one block per SM of an H100; on sm_86 (99 KiB a block) cuda_plan refuses it.
        assert_eq!(min_blocks([8, 8], true, Some(233472)), 1);
        assert_eq!(min_blocks([8, 8], true, Some(102400)), 1);
    }
}

#[test]
fn gpus_sweep_second_order_on_chip_except_around_bodies() {
    use crate::config::{walled_box, Scheme};
    let mut cfg = walled_box([10, 10, 8], 10);
    cfg.solver.scheme = Scheme::SecondOrder;
    let p = Problem::new(&cfg);
    assert!(ineligible(&p).is_none());
    let plan = cuda_plan(&p, 1 << 30, [4, 4], None, None).unwrap();
    assert!(plan.second && plan.face_planes() == 3 && plan.partials() == 16);
    // 72944 B a block at 4 x 4: more than sm_75's 64 KiB, which falls back to the slices.
    let e = cuda_plan(&p, 1 << 30, [4, 4], Some((7, 5)), Some(65536)).unwrap_err();
    assert!(e.contains("shared memory"), "{e}");
    cfg.bodies.push(
        serde_json::from_value(
            serde_json::json!({"min": [0.3, 0.3, 0.25], "max": [0.6, 0.6, 0.5], "temperature": 1.0}),
        )
        .unwrap(),
    );
    let e = ineligible(&Problem::new(&cfg)).unwrap();
    assert!(e.contains("bodies"), "{e}");
    cfg.solver.scheme = Scheme::FirstOrder;
    assert!(ineligible(&Problem::new(&cfg)).is_none());
}

#[test]
fn diagonals_cover_every_tile_once() {
    let v = VelocityGrid::new(4, 4.0, Quadrature::Trapezoid);
    for (dims, tile) in [([64, 64, 8], [8, 8]), ([10, 7, 3], [8, 8]), ([5, 13, 2], [4, 4]), ([1, 1, 4], [8, 8])] {
        let p = plan(&v.octant_members(), dims, tile, false, 1 << 30, FusedLimits::CUDA).unwrap();
        let [tx, ty] = p.tiles();
        let mut hit = vec![0; tx * ty];
        for d in 0..p.diagonals() {
            let (lo, hi) = p.diagonal(d);
            for a in lo..=hi {
                assert!(d - a < ty, "{dims:?}: diagonal {d} column {a}");
                hit[(d - a) * tx + a] += 1;
            }
        }
        assert!(hit.iter().all(|&n| n == 1), "{dims:?} {tile:?}");
    }
}

#[test]
fn tiles_that_overflow_the_reduction_array_are_refused() {
    let fits = |t| tile_fits(t, false);
    assert!(fits([8, 8]) && fits([4, 4]) && fits([16, 8]) && fits([2, 8]));
    assert!(!fits([2, 2]) && !fits([2, 4]) && !fits([3, 8]) && !fits([16, 16]));
    // Second order adds the shares in passes: any tile that divides the block.
    let second = |t| tile_fits(t, true);
    assert!(second([2, 2]) && second([2, 4]) && second([1, 1]) && second([4, 4]));
    assert!(!second([3, 8]) && !second([16, 16]) && !second([0, 4]));
}

#[test]
fn a_budget_below_one_block_is_refused() {
    let v = VelocityGrid::new(8, 4.0, Quadrature::Trapezoid);
    let e = plan(&v.octant_members(), [64, 64, 64], [8, 8], false, 1000, FusedLimits::CUDA).unwrap_err();
    assert!(e.0.contains("one block"), "{e}");
}

#[test]
fn binding_and_grid_limits_split_the_waves() {
    let v = VelocityGrid::new(32, 4.0, Quadrature::Trapezoid);
    let dims = [64, 64, 64];
    let lim = FusedLimits { max_binding: 128 << 20, max_blocks: 100 };
    let p = plan(&v.octant_members(), dims, [8, 8], false, u64::MAX, lim).unwrap();
    assert!(p.waves.iter().all(|w| w.blocks() <= 100));
    let [x, y] = p.face_floats();
    for floats in [x, y, p.partial_floats()] {
        assert!(floats as u64 * 4 <= 128 << 20);
    }
    let tiny = FusedLimits { max_binding: 1 << 10, max_blocks: 100 };
    assert!(plan(&v.octant_members(), dims, [8, 8], false, u64::MAX, tiny).unwrap_err().0.contains("one buffer"));
}
