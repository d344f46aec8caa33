//! Where the synthetic solve runs: on the host, or on the GPU the backend sweeps on (CUDA:
//! `super::cuda`, f64; wgpu: `super::wgpu`, f32), with the hierarchy uploaded once per
//! build. A device that cannot start, hold the hierarchy or finish a solve hands this solve
//! and every later one to the host, saying why.

use super::flux::NV;
use super::job::Job;
use super::{krylov, Gsis, MAX_INNER, RESTART};
use crate::backend::WgpuHandles;

/// GMRES steps per solve on the f32 wgpu device: an f32 residual that stalls above the
/// tolerance would otherwise run to [`MAX_INNER`]. The host and CUDA solves take 5-22
/// steps on the shipped cases (`docs/benchmarks.md`); whatever a capped solve returns, the
/// fixed point stays as it is (`super`).
const MAX_INNER_F32: usize = 4 * RESTART;

/// Fewer cells than this are solved on the host even with the wgpu backend. Measured on an
/// H100 with the pipelines built beside the first sweep ([`WgpuJob`]; `REPS=2
/// tests/device/gsis.sh threshold`, docs/benchmarks.md), solver seconds, device against
/// host: cavity-quick (4096 cells) 0.09-0.12 against 0.10, a tie; cube-quick (11616)
/// 0.20-0.23 against 0.30-0.34; the paper cavity (262144) 4.05-4.07 against 5.34-5.48.
/// (With the pipelines built at the first solve, as before, the device lost at 11616.)
pub(super) const DEVICE_MIN_CELLS: usize = 8192;

/// `KNUDSEN_GSIS_DEVICE=host`: the synthetic solve stays on the host (measurements).
fn host_forced() -> bool {
    std::env::var("KNUDSEN_GSIS_DEVICE").is_ok_and(|v| v == "host")
}

/// `KNUDSEN_GSIS_DEVICE=device`: on the GPU even below `DEVICE_MIN_CELLS` (measurements of
/// that threshold).
pub(super) fn device_forced() -> bool {
    std::env::var("KNUDSEN_GSIS_DEVICE").is_ok_and(|v| v == "device")
}

/// Whether a run with `acceleration` on `cells` cells asks a GPU backend for a device
/// solve: the choice [`Gsis::for_backend`] and [`Gsis::auto`] make (the CLI starts the CUDA
/// kernels' compile early on it, `cuda::PtxJob::start_early`).
pub fn solves_on_device(acceleration: crate::config::Acceleration, cells: usize) -> bool {
    use crate::config::Acceleration;
    !host_forced()
        && match acceleration {
            Acceleration::None => false,
            Acceleration::Gsis => true,
            Acceleration::Auto => cells >= DEVICE_MIN_CELLS || device_forced(),
        }
}

#[derive(Default)]
pub(super) enum Device {
    #[default]
    Host,
    /// Wanted, not started yet; its kernels compiling.
    #[cfg(feature = "cuda-driver")]
    CudaPending(super::cuda::PtxJob),
    /// On the CUDA device, with the hierarchy of the generation it holds.
    #[cfg(feature = "cuda-driver")]
    Cuda(Box<super::cuda::CudaSynthetic>, u64),
    /// Wanted, not started yet; its pipelines compiling.
    WgpuPending(WgpuJob),
    Wgpu(Box<super::wgpu::WgpuSynthetic>, u64),
}

/// The wgpu synthetic solve's pipelines (`super::wgpu::WgpuSynthetic::new`), built on a
/// thread of their own from the solver's set-up, so that the driver compiles them beside
/// the first sweep instead of after it: the NVIDIA Vulkan driver took 0.42 s for them on an
/// H200 host, longer than a 64^3 x 64^3 sweep (0.36 s). Building pipelines needs no queue,
/// so the sweep's submissions go on meanwhile.
pub(super) type WgpuJob = Job<super::wgpu::WgpuSynthetic>;

fn start_wgpu_job(handles: WgpuHandles) -> WgpuJob {
    let (device, queue, name) = handles;
    // A coarse start's level kept its kernels with the device (thread-local, so looked up
    // here, on the solver's thread).
    let kept = crate::backend::wgpu::device::kept_with_device::<super::wgpu::Compiled>(&device);
    let pre = crate::backend::wgpu::device::kept_with_device::<super::wgpu::Precompiled>(&device);
    Job::spawn("wgpu-synthetic", move || super::wgpu::WgpuSynthetic::new(device, queue, name, RESTART, kept, pre))
}

impl Gsis {
    /// The synthetic solve beside the sweep: on the backend's GPU (CUDA or wgpu; a W-cycle
    /// reads ~6 KB per cell, measured 13-20 times faster on an H100 than on its 16-core
    /// host), else on the host. `KNUDSEN_GSIS_DEVICE=host` keeps it on the host
    /// (measurements). `wgpu`: the wgpu backend's device; `cells`: the grid's cells (fewer
    /// than `DEVICE_MIN_CELLS` stay on the host with wgpu). The device's kernels start
    /// compiling here, beside the first sweep.
    pub fn for_backend(kind: &str, wgpu: Option<WgpuHandles>, cells: usize) -> Self {
        let device = match (kind, wgpu) {
            _ if host_forced() => Device::Host,
            #[cfg(feature = "cuda-driver")]
            ("cuda", _) => Device::CudaPending(super::cuda::PtxJob::start()),
            ("wgpu", Some(_)) if cells < DEVICE_MIN_CELLS && !device_forced() => {
                log::info!(
                    "gsis: the synthetic solve runs on the host ({cells} cells, fewer than the {DEVICE_MIN_CELLS} that pay for the GPU)"
                );
                Device::Host
            }
            // With `auto` the job may build pipelines no solve uses: CPU time beside the
            // first sweeps, on a GPU backend whose host is otherwise waiting.
            ("wgpu", Some(h)) => Device::WgpuPending(start_wgpu_job(h)),
            _ => Device::Host,
        };
        Self { device, ..Self::default() }
    }

    /// Whether the host factors the line smoother (a GPU factors its own; if it then does
    /// not solve, the host factors them before its solve).
    pub(super) fn host_factors(&self) -> bool {
        #[cfg(feature = "cuda-driver")]
        if matches!(self.device, Device::CudaPending(_) | Device::Cuda(..)) {
            return false;
        }
        !matches!(self.device, Device::WgpuPending(..) | Device::Wgpu(..))
    }

    /// Start the wanted device and upload the current hierarchy where it has not been.
    fn prepare(&mut self) {
        let mg = &self.hierarchy.as_ref().expect("built before the solve").mg;
        let t = std::time::Instant::now();
        match std::mem::take(&mut self.device) {
            #[cfg(feature = "cuda-driver")]
            Device::CudaPending(ptx) => {
                self.device = match super::cuda::CudaSynthetic::new(RESTART, ptx) {
                    Ok(d) => {
                        let s = t.elapsed().as_secs_f64();
                        self.start_up += s;
                        log::info!(
                            "gsis: the synthetic solve runs on {} (CUDA; kernels ready {s:.2} s after the first solve asked)",
                            d.device
                        );
                        Device::Cuda(Box::new(d), 0)
                    }
                    Err(e) => {
                        log::warn!("gsis: the synthetic solve runs on the host: {e:#}");
                        Device::Host
                    }
                }
            }
            Device::WgpuPending(job) => {
                self.device = match job.wait() {
                    Ok(d) => {
                        let (device, compiled) = d.compiled();
                        crate::backend::wgpu::device::keep_with_device(&device, std::sync::Arc::new(compiled));
                        let s = t.elapsed().as_secs_f64();
                        self.start_up += s;
                        log::info!(
                            "gsis: the synthetic solve runs on {} (wgpu, f32; kernels ready {s:.2} s after the first solve asked)",
                            d.name
                        );
                        Device::Wgpu(Box::new(d), 0)
                    }
                    Err(e) => {
                        log::warn!("gsis: the synthetic solve runs on the host: {e:#}");
                        Device::Host
                    }
                }
            }
            other => self.device = other,
        }
        let generation = self.generation;
        let uploaded = match &mut self.device {
            #[cfg(feature = "cuda-driver")]
            Device::Cuda(d, at) if *at != generation => Some(d.upload(mg).map(|()| *at = generation)),
            Device::Wgpu(d, at) if *at != generation => Some(d.upload(mg).map(|()| *at = generation)),
            _ => None,
        };
        if let Some(r) = uploaded {
            log::debug!("gsis: hierarchy uploaded in {:.3} s", t.elapsed().as_secs_f64());
            if let Err(e) = r {
                log::warn!("gsis: the synthetic solve moves to the host: {e:#}");
                self.device = Device::Host;
            }
        }
    }

    /// Solve with the current hierarchy, on the device when there is one.
    pub(super) fn solve(
        &mut self,
        rhs: &krylov::Vector,
        rtol: f64,
    ) -> anyhow::Result<(Vec<[f64; NV]>, krylov::Outcome, &'static str)> {
        self.prepare();
        let on_device = match &self.device {
            #[cfg(feature = "cuda-driver")]
            Device::Cuda(d, _) => Some((d.solve(rhs, rtol, MAX_INNER), "cuda")),
            Device::Wgpu(d, _) => Some((d.solve(rhs, rtol, MAX_INNER_F32), "wgpu")),
            _ => None,
        };
        match on_device {
            Some((Ok((x, o)), place)) if x.iter().flatten().all(|v| v.is_finite()) => return Ok((x, o, place)),
            // The device's arithmetic (f32 on wgpu) overflowed where the host's may not: its
            // answer is a failure like an error, and the host solves again.
            Some((Ok(_), place)) => {
                log::warn!("gsis: the {place} synthetic solve gave non-finite values; it moves to the host");
                self.device = Device::Host;
            }
            Some((Err(e), _)) => {
                log::warn!("gsis: the synthetic solve moves to the host: {e:#}");
                self.device = Device::Host;
            }
            None => {}
        }
        let mg = &mut self.hierarchy.as_mut().expect("built before the solve").mg;
        // Built for a device that then could not solve: the host factors its lines now.
        mg.factor_lines();
        let (x, o) = host_solve(mg, rhs, rtol, &self.pool)?;
        Ok((x, o, "host"))
    }
}

/// GMRES on the host with the W-cycle of `mg` as preconditioner.
pub(super) fn host_solve(
    mg: &super::multigrid::Multigrid,
    rhs: &krylov::Vector,
    rtol: f64,
    pool: &krylov::Pool,
) -> anyhow::Result<(krylov::Vector, krylov::Outcome)> {
    let vcycle = |v: &[[f64; NV]], o: &mut krylov::Vector| mg.apply(v, o);
    krylov::gmres(mg.operator(), rhs, rtol, RESTART, MAX_INNER, &vcycle, pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Acceleration;

    #[test]
    fn a_device_solve_is_asked_for_as_gsis_and_auto_decide() {
        // The CLI's early compile follows this; Gsis::for_backend and Gsis::auto decide so.
        // KNUDSEN_GSIS_DEVICE=host (if the environment sets it) asks for none at all.
        let device = !host_forced();
        assert!(!solves_on_device(Acceleration::None, 1 << 20));
        assert_eq!(solves_on_device(Acceleration::Gsis, 8), device);
        assert_eq!(solves_on_device(Acceleration::Auto, DEVICE_MIN_CELLS - 1), device && device_forced());
        assert_eq!(solves_on_device(Acceleration::Auto, DEVICE_MIN_CELLS), device);
    }
}
