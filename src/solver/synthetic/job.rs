//! Work on a thread of its own, waited for once: the GPU solves' kernel builds (NVRTC's
//! compile for CUDA, `cuda::PtxJob`; the driver's pipeline builds for wgpu,
//! `placement::WgpuJob`), started when the solver is set up so that they run beside the
//! first sweep instead of after it. A job never waited for (a run that ends before its
//! first synthetic solve) is joined when dropped, so that the process never exits with a
//! driver or NVRTC mid-call.

use std::thread::JoinHandle;

pub struct Job<T: Send + 'static> {
    handle: Option<JoinHandle<anyhow::Result<T>>>,
    /// Why no thread could be started: [`Job::wait`] returns it, and the caller falls back
    /// to the host as for any failed build.
    not_started: Option<String>,
}

impl<T: Send + 'static> Job<T> {
    /// `work` on a thread named `name`.
    pub fn spawn(name: &str, work: impl FnOnce() -> anyhow::Result<T> + Send + 'static) -> Self {
        match std::thread::Builder::new().name(name.into()).spawn(work) {
            Ok(h) => Self { handle: Some(h), not_started: None },
            Err(e) => Self { handle: None, not_started: Some(format!("no thread for {name}: {e}")) },
        }
    }

    /// The work's result; a panic on its thread becomes an error with the panic's message.
    pub fn wait(mut self) -> anyhow::Result<T> {
        if let Some(why) = self.not_started.take() {
            anyhow::bail!(why);
        }
        let handle = self.handle.take().expect("a job is waited for once");
        let name = handle.thread().name().unwrap_or("a job").to_string();
        handle.join().map_err(|p| {
            let why = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            anyhow::anyhow!("the thread {name} panicked: {}", why.unwrap_or_default())
        })?
    }
}

impl<T: Send + 'static> Drop for Job<T> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            // Its result is of no use now; only its end is.
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Job;

    #[test]
    fn a_job_returns_its_result_or_its_panic_as_an_error() {
        assert_eq!(Job::spawn("adds", || Ok(2 + 2)).wait().unwrap(), 4);
        let e = Job::<()>::spawn("fails", || anyhow::bail!("no device")).wait().unwrap_err();
        assert_eq!(e.to_string(), "no device");
        let e = Job::<()>::spawn("panics", || panic!("out of {}", "luck")).wait().unwrap_err();
        assert!(e.to_string().contains("panics") && e.to_string().contains("out of luck"), "{e}");
    }

    #[test]
    fn a_job_not_waited_for_is_joined_when_dropped() {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        drop(Job::spawn("slow", move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            d.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }));
        assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    }
}
