//! The synthetic solve's kernels compiled from the moment a kept device opens (`knudsen run`
//! with a coarse start): on a thread of their own, beside the level's own set-up, whose
//! largest item is the driver's build of the level's fused sweep.
//!
//! Without this the level's solver starts them beside its first sweep, which on a coarse
//! level lasts milliseconds: the first synthetic update then waited for them, 0.54-0.59 s on
//! an H200 with the NVIDIA driver's shader cache cold (0.02 s warm; `docs/performance.md`,
//! "The synthetic kernels compiled as the device opens"). The stages bake in no grid size, so
//! the same kernels serve the level and the case ([`super::Compiled`]).

use super::kernels::Kernels;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The compile in flight, kept with the device (`backend::wgpu::device::keep_with_device`),
/// with the `off_cells` and shader-check setting it compiles for.
pub struct Precompiled {
    off_cells: u32,
    checks: bool,
    handle: Mutex<Option<JoinHandle<Option<Arc<Kernels>>>>>,
}

impl Drop for Precompiled {
    /// Kernels nobody took: wait for the compile, so that the process never ends with the
    /// thread inside the driver.
    fn drop(&mut self) {
        if let Some(h) = self.handle.get_mut().ok().and_then(Option::take) {
            let _ = h.join();
        }
    }
}

impl Precompiled {
    /// The kernels, waiting for their compile, if they are for `off_cells` with today's
    /// shader checks and compiled without an error (once: the taker keeps them as
    /// [`super::Compiled`]).
    pub fn take(&self, off_cells: u32) -> Option<Arc<Kernels>> {
        if self.off_cells != off_cells || self.checks != crate::backend::wgpu::kernels::shader_checks() {
            return None;
        }
        let handle = self.handle.lock().ok()?.take()?;
        handle.join().ok().flatten()
    }
}

/// Start compiling the synthetic solve's kernels for `device` (the kept device just opened),
/// and keep the compile with it. For `backend::wgpu::device::on_keeping_open`.
pub fn precompile(device: &wgpu::Device) {
    let Some(off_cells) = super::off_cells(&device.limits(), None) else { return };
    let dev = device.clone();
    let handle = std::thread::Builder::new().name("wgpu-synthetic-precompile".into()).spawn(move || {
        let t = std::time::Instant::now();
        // Error scopes are per thread: an error here stays here, and the solve then compiles
        // its own kernels inside its own checks.
        let scope = super::catch(&dev);
        let made = Kernels::new(&dev, off_cells);
        match scope.check("the synthetic kernels compiled as the device opened").and(made) {
            Ok(k) => {
                log::debug!("gsis: wgpu kernels compiled as the device opened, in {:.3} s", t.elapsed().as_secs_f64());
                Some(Arc::new(k))
            }
            Err(e) => {
                log::debug!("gsis: {e:#}");
                None
            }
        }
    });
    if let Ok(h) = handle {
        let checks = crate::backend::wgpu::kernels::shader_checks();
        let pre = Precompiled { off_cells, checks, handle: Mutex::new(Some(h)) };
        crate::backend::wgpu::device::keep_with_device(device, Arc::new(pre));
    }
}
