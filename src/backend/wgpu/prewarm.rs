//! The case's fused sweep compiled on a thread of its own while the coarse start's level
//! runs on the same device (`knudsen run`, `solver.coarse_grids`).
//!
//! The case's wgpu backend is built after the level, on the device the level kept
//! (`device::keep_devices`), and its largest set-up item is the fused sweep's compile:
//! 0.157 s of the case's 0.33-0.35 s on an H200, most of it naga's translation of the
//! unrolled WGSL (docs/performance.md, "The coarse start"). The kernels depend on the case
//! and the adapter only, so they can be compiled as soon as the level's device is open. The
//! case's backend then takes them if they are the ones it would compile ([`KernelSpec`]s
//! equal), and compiles its own otherwise.

use super::device;
use super::fused::{self, KernelSpec};
use super::kernels::Kernel;
use crate::problem::Problem;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The compile in flight and the specs it compiles, kept with the device
/// (`device::keep_with_device`). The thread gives None where wgpu reported an error.
struct Prewarm {
    specs: [KernelSpec; 2],
    handle: Mutex<Option<Compile>>,
}

/// The compile's thread: the sweep and moments kernels, or None after an error.
type Compile = JoinHandle<Option<(Kernel, Kernel)>>;

impl Drop for Prewarm {
    /// Kernels nobody took (the case failed first, or the specs differed): wait for the
    /// compile, so that the process never ends with the thread inside the driver.
    fn drop(&mut self) {
        if let Some(h) = self.handle.get_mut().ok().and_then(Option::take) {
            let _ = h.join();
        }
    }
}

/// Start compiling the fused kernels of `case` on `device` (the kept device of `adapter`)
/// with the case's budget (`budget_bytes`, None: the adapter's default), as
/// `WgpuBackend::new` would plan them. Nothing happens where `device` is not the kept one,
/// a compile was started already, or the case would not run the fused sweep. The plan and
/// the sources are made here (milliseconds), the compile on the thread.
pub fn start(case: &Problem, budget_bytes: Option<u64>, adapter: &wgpu::Adapter, device: &wgpu::Device) {
    // On a device not kept the compile would be dropped, and joined, at once.
    if !device::is_kept(device) || device::kept_with_device::<Prewarm>(device).is_some() {
        return;
    }
    let budget = budget_bytes.unwrap_or_else(|| super::default_budget_bytes(adapter));
    let Ok(Ok(plan)) = fused::choose(case, budget, &adapter.limits(), None, None) else { return };
    let Ok(layout) = crate::backend::gpu_io::table_layout(case) else { return };
    let specs = fused::kernel_specs(case, &plan, layout.part_at, layout.exit_at);
    let (dev, todo) = (device.clone(), specs.clone());
    let handle = std::thread::Builder::new().name("fused prewarm".into()).spawn(move || {
        let t = std::time::Instant::now();
        // Error scopes belong to the thread that pushes them: without these an invalid
        // pipeline would reach the device's uncaptured-error handler (the coarse level's
        // fault watch) instead of the case's own checks. On an error the case compiles its
        // own kernels inside those checks.
        let scopes = [wgpu::ErrorFilter::OutOfMemory, wgpu::ErrorFilter::Validation, wgpu::ErrorFilter::Internal]
            .map(|f| dev.push_error_scope(f));
        let kernels = fused::compile(&dev, &todo);
        let errors: Vec<String> =
            scopes.into_iter().rev().filter_map(|s| pollster::block_on(s.pop())).map(|e| e.to_string()).collect();
        if !errors.is_empty() {
            log::debug!(
                "wgpu: the case's fused kernels compiled beside the coarse start failed: {}",
                errors.join("; ")
            );
            return None;
        }
        log::debug!(
            "wgpu: the case's fused kernels compiled beside the coarse start in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        Some(kernels)
    });
    if let Ok(h) = handle {
        device::keep_with_device(device, Arc::new(Prewarm { specs, handle: Mutex::new(Some(h)) }));
    }
}

/// The kernels compiled by [`start`] on `device`, if they are those of `specs` (waiting for
/// the compile if it is still running); taken once. A backend with other specs (a second
/// coarse level) leaves them for the case.
pub fn take(device: &wgpu::Device, specs: &[KernelSpec; 2]) -> Option<(Kernel, Kernel)> {
    let pre = device::kept_with_device::<Prewarm>(device)?;
    if &pre.specs != specs {
        return None;
    }
    let handle = pre.handle.lock().ok()?.take()?;
    let t = std::time::Instant::now();
    let kernels = handle.join().ok()??;
    let dim = |n: &str| specs[0].constants.iter().find(|c| c.0 == n).map_or(0.0, |c| c.1);
    log::debug!(
        "wgpu: the fused kernels compiled beside the coarse start taken for {} x {} x {} cells (waited {:.3} s)",
        dim("NX"),
        dim("NY"),
        dim("NZ"),
        t.elapsed().as_secs_f64()
    );
    Some(kernels)
}
