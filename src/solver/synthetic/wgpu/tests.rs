//! The wgpu solve against the host's, on whatever adapter the machine has (lavapipe in CI,
//! where a missing adapter fails the test).
use super::*;
use crate::solver::synthetic::fixtures::{cases, host_solve, rel, state, true_residual};
use crate::solver::synthetic::flux::Base;
use crate::solver::synthetic::krylov::Space;
use crate::solver::synthetic::multigrid::Multigrid;
use crate::solver::synthetic::operator::Operator;

/// The device, or None where there is no adapter outside CI.
fn device() -> Option<(wgpu::Device, wgpu::Queue, String)> {
    use crate::backend::wgpu::device;
    let Ok(adapter) = device::pick(device::adapters(), true) else {
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
        return None;
    };
    let (d, q) = device::open(&adapter, None, false).unwrap();
    Some((d, q, adapter.get_info().name))
}

#[test]
fn the_wgpu_cycle_and_solve_match_the_hosts() {
    let Some((device, queue, name)) = device() else { return };
    for (p, smoother) in cases() {
        let n = p.grid.cells();
        let (active, base, b) = state(&p);
        let mg = Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, true).unwrap();
        // The device factors the lines of its own copy (syn_line_factor, f32).
        let unfactored =
            Multigrid::new(Operator::assemble(&p, &base, 1e-3), p.grid.dims(), &active, smoother, false).unwrap();
        // The neighbour blocks in one binding, and split over four (the paper cube's finest
        // level needs two); both must give the same answer.
        let mut split = WgpuSynthetic::with_off_cells(
            device.clone(),
            queue.clone(),
            name.clone(),
            30,
            Some(n.div_ceil(4)),
            None,
            None,
        )
        .unwrap();
        split.upload(&unfactored).unwrap();
        let mut dev = WgpuSynthetic::new(device.clone(), queue.clone(), name.clone(), 30, None, None).unwrap();
        dev.upload(&unfactored).unwrap();
        // The device's line factors against the host's (f64, rounded to f32): f32 rounding
        // grown along the line's elimination, 1e-5 of the largest entry.
        for l in 0..mg.levels() {
            for (host, d) in mg.level(l).lines.iter().zip(&dev.hierarchy.as_ref().unwrap().levels[l].lines) {
                let cells = mg.level(l).op.diag.len();
                let (m, dinv) = host.factors();
                for (what, h, b) in [("M", m, &d.m), ("Dp^-1", dinv, &d.dinv)] {
                    let h: &[f32] = bytemuck::cast_slice(h);
                    let got = dev.read(b, cells * 25, None).unwrap();
                    let scale = h.iter().fold(0.0f32, |a, x| a.max(x.abs()));
                    let err = h.iter().zip(&got).fold(0.0f32, |a, (x, y)| a.max((x - y).abs()));
                    assert!(err <= 1e-5 * scale, "{what}, level {l}: {err:e} of {scale:e}");
                }
            }
        }
        assert!(split.off_cells * 3 < n && dev.off_cells >= n);
        // One W-cycle: the host's arithmetic in f32. Its error is f32 rounding (6e-8) grown
        // through the cycle's few dozen smoothing steps and the coarsest inverse.
        let mut host = vec![[0.0; NV]; n];
        mg.apply(&b, &mut host);
        let h = dev.hierarchy.as_ref().unwrap();
        let space = DeviceSpace { s: &dev, h };
        let bd = space.take().unwrap();
        let b32: Vec<f32> = b.iter().flatten().map(|&x| x as f32).collect();
        queue.write_buffer(&bd, 0, bytemuck::cast_slice(&b32));
        let mut z = space.take().unwrap();
        space.precondition(&bd, &mut z).unwrap();
        let zd: Vec<[f64; NV]> = dev
            .read(&z, n * NV, None)
            .unwrap()
            .chunks_exact(NV)
            .map(|c| std::array::from_fn(|k| c[k] as f64))
            .collect();
        let cycle = rel(&zd, &host);
        assert!(cycle < 1e-5, "{smoother:?}: one cycle differs by {cycle:e}");
        // A dot product of f32 vectors, summed in f32 within workgroups: 1e-6 relative.
        let dh: f64 = b32.iter().zip(zd.iter().flatten()).map(|(&x, y)| x as f64 * y).sum();
        let dd = space.dot(&bd, &z).unwrap();
        assert!((dd - dh).abs() <= 1e-6 * dh.abs(), "dot {dd} vs {dh}");
        // Whole solves to 1e-4, the synthetic solve's tightest inner tolerance: about the
        // host's steps, and a true residual (the host's operator, in f64) within the
        // tolerance plus the f32 product's rounding.
        let (xh, oh) = host_solve(&mg, &b, 1e-4);
        let (xd, od) = dev.solve(&b, 1e-4, 2000).unwrap();
        let (xs, os) = split.solve(&b, 1e-4, 2000).unwrap();
        assert_eq!(od.iterations, os.iterations);
        assert_eq!(xd, xs, "{smoother:?}: the split bindings change the arithmetic");
        assert!(od.relative_residual <= 1e-4, "{od:?}");
        assert!(oh.iterations.abs_diff(od.iterations) <= 1, "host {oh:?}, device {od:?}");
        let r = true_residual(&mg, &xd, &b);
        assert!(r <= 1.1e-4, "true residual {r:e}");
        eprintln!(
            "{smoother:?}: cycle {cycle:.2e}, steps host {} device {}, solutions differ by {:.2e}",
            oh.iterations,
            od.iterations,
            rel(&xd, &xh)
        );
        space.give(z);
        space.give(bd);
        // A rebuilt operator uploaded into the previous build's buffers (reused by size)
        // must solve as on a device that never held another.
        let warmer: Vec<Base> = base.iter().map(|q| Base { t: q.t * 1.3, ..*q }).collect();
        let mg2 =
            Multigrid::new(Operator::assemble(&p, &warmer, 1e-3), p.grid.dims(), &active, smoother, false).unwrap();
        dev.upload(&mg2).unwrap();
        let mut fresh = WgpuSynthetic::new(device.clone(), queue.clone(), name.clone(), 30, None, None).unwrap();
        fresh.upload(&mg2).unwrap();
        let (x2, _) = dev.solve(&b, 1e-4, 2000).unwrap();
        let (x3, _) = fresh.solve(&b, 1e-4, 2000).unwrap();
        assert_eq!(x2, x3, "{smoother:?}: a reused upload differs from a fresh one");
        assert_ne!(x2, xd, "the rebuilt operator must change the solution");
    }
}

#[test]
fn a_caught_error_is_the_steps_and_other_threads_need_their_own_scope() {
    // Why upload.rs gives each copying task its own scopes: wgpu keeps error scopes per
    // thread, so an error on another thread escapes the caller's and becomes a fault that
    // the next sweep would end the run with (backend/wgpu/faults.rs).
    let Some((device, _queue, _)) = device() else { return };
    let faults = crate::backend::wgpu::faults::Faults::watch(&device);
    // MAP_READ with STORAGE needs a feature no device was asked for: a validation error.
    let invalid = |d: &wgpu::Device| {
        d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("invalid"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let scope = catch(&device);
    let _a = invalid(&device);
    assert!(scope.check("step").is_err(), "caught on this thread");
    assert!(faults.take().is_none(), "and not a fault");
    let scope = catch(&device);
    std::thread::scope(|s| {
        s.spawn(|| invalid(&device));
    });
    assert!(scope.check("step").is_ok(), "another thread's error escapes this thread's scope");
    assert!(faults.take().is_some(), "and is a fault");
}

#[test]
fn a_solve_takes_kept_kernels_that_fit_and_compiles_its_own_otherwise() {
    // A coarse start's level keeps its kernels with the device; the case's solve after it
    // must take them (compiling them again cost 0.4 s on an H200 host), a solve with
    // another binding split must not.
    let Some((device, queue, name)) = device() else { return };
    let a = WgpuSynthetic::new(device.clone(), queue.clone(), name.clone(), 30, None, None).unwrap();
    let kept = std::sync::Arc::new(a.compiled().1);
    let b = WgpuSynthetic::new(device.clone(), queue.clone(), name.clone(), 30, Some(kept.clone()), None).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a.k, &b.k), "the kept kernels were compiled again");
    let split = WgpuSynthetic::with_off_cells(device, queue, name, 30, Some(7), Some(kept), None).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a.k, &split.k), "kernels for another binding split were taken");
}
