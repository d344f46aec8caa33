//! The device solve against the host's (run on a CUDA machine: `tests/device/gsis.sh device`).
use super::*;
use crate::solver::synthetic::fixtures::{cases, host_solve, rel, state, true_residual};

// Ignored where no CUDA device can be (CI), so that it never passes there by not running;
// `tests/device/gsis.sh device` runs it on the GPU with --include-ignored.
#[test]
#[ignore = "needs a CUDA device; tests/device/gsis.sh device runs it"]
fn the_device_cycle_and_solve_match_the_hosts() {
    crate::backend::cuda::available().expect("a CUDA device");
    for (p, smoother) in cases() {
        let n = p.grid.cells();
        let (active, base, b) = state(&p);
        let mg = Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, true).unwrap();
        // The device factors the lines of its own copy; without contracted multiply-adds
        // (kernels::compile_synthetic_ptx) it rounds as the host does: the same bits.
        let unfactored =
            Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, false).unwrap();
        let mut dev = CudaSynthetic::new(30, super::PtxJob::start()).unwrap();
        dev.upload(&unfactored).unwrap();
        for l in 0..mg.levels() {
            for (host, d) in mg.level(l).lines.iter().zip(&dev.hierarchy.as_ref().unwrap().levels[l].lines) {
                let (m, dinv) = host.factors();
                assert_eq!(
                    bytemuck::cast_slice::<_, f32>(m),
                    &dev.stream.clone_dtoh(&d.m).unwrap()[..],
                    "M, level {l}"
                );
                let got = dev.stream.clone_dtoh(&d.dinv).unwrap();
                assert_eq!(bytemuck::cast_slice::<_, f32>(dinv), &got[..], "Dp^-1, level {l}");
            }
        }
        // One W-cycle: the same arithmetic per cell in the same order, rounded alike; the
        // one difference is the coarsest solve (an explicit inverse's product instead of
        // LU substitution: rounding of 1e-16 per operation, grown through a few dozen
        // smoothing steps): 1e-12 relative.
        let mut host = vec![[0.0; NV]; n];
        mg.apply(&b, &mut host);
        let h = dev.hierarchy.as_ref().unwrap();
        let space = DeviceSpace { s: &dev, h };
        let bd = dev.stream.clone_htod(bytemuck::cast_slice::<_, f64>(&b)).unwrap();
        let mut z = space.take().unwrap();
        space.precondition(&bd, &mut z).unwrap();
        let zd: Vec<[f64; NV]> =
            dev.stream.clone_dtoh(&z).unwrap().chunks_exact(NV).map(|c| std::array::from_fn(|k| c[k])).collect();
        assert!(rel(&zd, &host) < 1e-12, "{smoother:?}: one cycle differs by {:e}", rel(&zd, &host));
        // Dot products: a different grouping of the same terms, 1e-15 relative.
        let dh: f64 = b.iter().flatten().zip(host.iter().flatten()).map(|(x, y)| x * y).sum();
        let dd = space.dot(&bd, &z).unwrap();
        assert!((dd - dh).abs() <= 1e-13 * dh.abs(), "dot {dd} vs {dh}");
        // Whole solves to 1e-9: the same number of steps (give or take the one a
        // rounding-level difference can move across the tolerance), and solutions within
        // the tolerance times the operator's conditioning (1e-6).
        let (xh, oh) = host_solve(&mg, &b, 1e-9);
        let (xd, od) = dev.solve(&b, 1e-9, 2000).unwrap();
        assert!(od.relative_residual <= 1e-9, "{od:?}");
        assert!(oh.iterations.abs_diff(od.iterations) <= 1, "host {oh:?}, device {od:?}");
        assert!(rel(&xd, &xh) < 1e-6, "{smoother:?}: solutions differ by {:e}", rel(&xd, &xh));
        // The true residual of the device's answer, from the host's operator.
        let r = true_residual(&mg, &xd, &b);
        assert!(r <= 1.01e-9, "true residual {r:e}");
        space.give(z);
    }
}
