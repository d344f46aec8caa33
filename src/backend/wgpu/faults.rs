//! GPU faults that wgpu reports out of band: validation errors outside an error scope (by
//! default wgpu panics on them), a lost device and failed buffer mappings. Each is kept, the
//! first one wins, and the next sweep returns it as an error naming the adapter, so a fault
//! ends the run with one clear message instead of a panic or a hang.

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A validation error outside any error scope (wgpu's default handler panics on it) is
    /// recorded once and handed out once.
    #[test]
    fn an_uncaptured_validation_error_is_recorded_not_panicked() {
        let Ok(adapter) = super::super::device::pick(super::super::device::adapters(), true) else {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
            return;
        };
        let (device, _queue) = super::super::device::open(&adapter, None, false).unwrap();
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
}
