//! GPU faults that wgpu reports out of band: validation errors outside an error scope (by
//! default wgpu panics on them), a lost device and failed buffer mappings. Each is kept, the
//! first one wins, and the next sweep returns it as an error naming the adapter, so a fault
//! ends the run with one clear message instead of a panic or a hang. The errors that building
//! a backend raises are caught in error scopes instead ([`built_within_scopes`]).

use crate::backend::fault::{Fault, FaultKind};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Faults(Arc<Mutex<Option<String>>>);

impl Faults {
    /// Route `device`'s uncaptured errors and loss here.
    pub fn watch(device: &wgpu::Device) -> Self {
        let faults = Self::default();
        let f = faults.clone();
        device.on_uncaptured_error(Arc::new(move |e| f.record(format!("wgpu error: {e}"))));
        let f = faults.clone();
        device.set_device_lost_callback(move |reason, msg| {
            f.record(format!("the GPU device was lost ({reason:?}): {msg}"))
        });
        faults
    }

    pub fn record(&self, what: String) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(what);
        }
    }

    /// The first fault since the last call, if any.
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Wait for everything submitted to `device` to finish, then hand out the first fault
/// `faults` recorded meanwhile, if any, as the error. wgpu's poll panics where the device was
/// lost (wgpu-core hands that error to its fatal handler): the panic becomes an error too,
/// so that the run ends with its message and exit code, and under MPI ends the others.
pub fn wait(device: &wgpu::Device, faults: Option<&Faults>) -> anyhow::Result<()> {
    wait_with(|| device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()), faults)
}

fn wait_with(poll: impl FnOnce() -> Result<(), wgpu::PollError>, faults: Option<&Faults>) -> anyhow::Result<()> {
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(poll));
    if let Some(fault) = faults.and_then(Faults::take) {
        anyhow::bail!("{fault}");
    }
    match polled {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => anyhow::bail!("waiting for the GPU: {e}"),
        Err(panic) => {
            let said = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "wgpu panicked".into());
            anyhow::bail!("waiting for the GPU: {}", said.trim())
        }
    }
}

/// `build()`, whose pipelines and buffers are made on `device`, with the errors they raise
/// caught (an error scope each) where `--backend auto` can still step down, not at the first
/// sweep: device memory the allocation did not get, the driver failing to compile a pipeline
/// (an internal error, after which wgpu may count the device lost), and wgpu's validation.
pub fn built_within_scopes<T>(device: &wgpu::Device, build: impl FnOnce() -> T) -> anyhow::Result<T> {
    let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let built = build();
    // Popped in the reverse order of their pushes, then reported memory first: a buffer that
    // failed to allocate is invalid, and binding it raises a validation error too.
    let internal = pollster::block_on(internal.pop());
    let validation = pollster::block_on(validation.pop());
    if let Some(e) = pollster::block_on(memory.pop()) {
        return Err(Fault::error(
            FaultKind::OutOfMemory,
            format!("out of GPU memory allocating the case: {e}; lower --memory-budget-mib"),
        ));
    }
    // The driver's compiler failing is the machine's fault; a validation error is a limit
    // wgpu checks that the plan did not foresee, which a smaller batch may meet.
    if let Some(e) = internal {
        return Err(Fault::error(FaultKind::Compile, format!("the GPU driver failed to build the pipelines: {e}")));
    }
    if let Some(e) = validation {
        anyhow::bail!("wgpu rejected the pipelines or buffers: {e}");
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device on any adapter (lavapipe in CI), or None outside CI where there is none.
    fn device() -> Option<(wgpu::Device, wgpu::Queue)> {
        let Ok(adapter) = super::super::device::pick(super::super::device::adapters(), true) else {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
            return None;
        };
        Some(super::super::device::open(&adapter, None, false).unwrap())
    }

    /// A validation error outside any error scope (wgpu's default handler panics on it) is
    /// recorded once and handed out once.
    #[test]
    fn an_uncaptured_validation_error_is_recorded_not_panicked() {
        let Some((device, _queue)) = device() else { return };
        let faults = Faults::watch(&device);
        // MAP_READ with STORAGE needs a feature no device was asked for: a validation error.
        let _buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("invalid"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let fault = faults.take().expect("the error was recorded");
        assert!(fault.starts_with("wgpu error") && fault.contains("invalid"), "{fault}");
        assert!(faults.take().is_none(), "handed out once");
    }

    /// A validation error while the backend is built is caught by its scope, as the case's
    /// (no machine fault: a smaller batch may help), and one that is not leaves the build's
    /// value.
    #[test]
    fn a_validation_error_building_is_the_builds_error_and_no_machine_fault() {
        let Some((device, _queue)) = device() else { return };
        let invalid = wgpu::BufferDescriptor {
            label: Some("invalid"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        };
        let e = built_within_scopes(&device, || device.create_buffer(&invalid)).unwrap_err();
        assert!(e.to_string().starts_with("wgpu rejected the pipelines or buffers"), "{e}");
        assert!(crate::backend::fault::smaller_budget_may_help(&e), "{e}");
        let fine = wgpu::BufferDescriptor { usage: wgpu::BufferUsages::STORAGE, ..invalid };
        assert_eq!(built_within_scopes(&device, || device.create_buffer(&fine).size()).unwrap(), 16);
    }

    /// A device destroyed while work was submitted: the loss, as recorded, is the error.
    #[test]
    fn a_lost_device_is_the_error_of_the_wait() {
        let Some((device, queue)) = device() else { return };
        let faults = Faults::watch(&device);
        device.destroy();
        queue.submit([device.create_command_encoder(&Default::default()).finish()]);
        let e = wait(&device, Some(&faults)).expect_err("a lost device");
        assert!(e.to_string().contains("device was lost"), "{e}");
    }

    /// A real loss (a GPU fault) makes wgpu's poll panic, which a destroyed device does not:
    /// the panic, as wgpu-core raises it, becomes the wait's error, and a recorded fault
    /// still comes first.
    #[test]
    fn a_panicking_poll_is_an_error() {
        let e = wait_with(|| panic!("Error in Device::poll: Parent device is lost"), None).unwrap_err();
        assert!(e.to_string().contains("Parent device is lost"), "{e}");
        let faults = Faults::default();
        faults.record("the GPU device was lost (Unknown): Xid 79".into());
        let e = wait_with(|| panic!("Error in Device::poll"), Some(&faults)).unwrap_err();
        assert!(e.to_string().contains("Xid 79"), "{e}");
        assert!(wait_with(|| Ok(()), Some(&faults)).is_ok(), "the fault was handed out once");
    }
}
