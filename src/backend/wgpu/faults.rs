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
