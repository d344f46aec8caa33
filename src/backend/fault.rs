//! Failures of the machine, told apart from the case's own refusals. Building a backend can
//! fail either way: a plan the case does not fit (a budget, an adapter's limits, a precision
//! the backend has no sweep for) is the input's fault, exit 2 ("bad input"), while a device
//! that cannot be opened, a driver error, memory the device does not have at allocation, or a
//! compiler that refuses the kernels is the machine's: the run failed, exit 1. `auto` also
//! steps down at once on a machine fault, instead of asking the same device again at a
//! quarter of the budget, which only memory can help.

use std::fmt;

/// What failed on the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The device or its driver: opening it, an internal error, a fault the device reported.
    Device,
    /// Device memory the allocation did not get.
    OutOfMemory,
    /// A compiler (NVRTC, the driver's shader compiler) that refused the kernels.
    Compile,
}

/// A machine fault in an error chain (`anyhow::Error::context` keeps it findable).
#[derive(Debug)]
pub struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

impl Fault {
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    /// `message` as an error carrying the fault.
    pub fn error(kind: FaultKind, message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Self::new(kind, message))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fault {}

/// The machine fault in `e`'s chain, if any: a [`Fault`], or a CUDA driver error (which
/// the CUDA backend passes on with `?`: out of memory, or the device's).
pub fn fault_kind(e: &anyhow::Error) -> Option<FaultKind> {
    e.chain().find_map(|c| {
        if let Some(f) = c.downcast_ref::<Fault>() {
            return Some(f.kind);
        }
        #[cfg(feature = "cuda-driver")]
        if let Some(d) = c.downcast_ref::<cudarc::driver::DriverError>() {
            use cudarc::driver::sys::CUresult;
            return Some(match d.0 {
                CUresult::CUDA_ERROR_OUT_OF_MEMORY => FaultKind::OutOfMemory,
                _ => FaultKind::Device,
            });
        }
        None
    })
}

/// Whether `auto` may ask the same device again with a smaller budget after `e`: where the
/// case's plan or memory was the trouble, not where the device or its compiler failed.
pub fn smaller_budget_may_help(e: &anyhow::Error) -> bool {
    matches!(fault_kind(e), None | Some(FaultKind::OutOfMemory))
}

/// The first of `build(budget)` over `budgets` (largest first) that succeeds, each failure
/// added to `tried` as `name: error`; a failure a smaller budget cannot help ends the tries.
pub fn try_budgets<T, B>(
    name: &str,
    budgets: impl IntoIterator<Item = T>,
    mut build: impl FnMut(T) -> anyhow::Result<B>,
    tried: &mut Vec<String>,
) -> Option<B> {
    for budget in budgets {
        match build(budget) {
            Ok(b) => return Some(b),
            Err(e) => {
                tried.push(format!("{name}: {e:#}"));
                if !smaller_budget_may_help(&e) {
                    break;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_smaller_budget_is_tried_after_memory_but_not_after_a_compiler_fault() {
        let mut asked = Vec::new();
        let mut tried = Vec::new();
        let oom_then_ok = |b: u64| {
            asked.push(b);
            match b {
                100 => Err(Fault::error(FaultKind::OutOfMemory, "out of memory")),
                _ => Ok(b),
            }
        };
        assert_eq!(try_budgets("CUDA", [100, 25], oom_then_ok, &mut tried), Some(25));
        assert_eq!((asked.as_slice(), tried.as_slice()), (&[100, 25][..], &["CUDA: out of memory".to_string()][..]));
        let mut asked = Vec::new();
        let mut tried = Vec::new();
        let compile = |b: u64| -> anyhow::Result<u64> {
            asked.push(b);
            Err(Fault::error(FaultKind::Compile, "NVRTC failed"))
        };
        assert_eq!(try_budgets("CUDA", [100, 25], compile, &mut tried), None);
        assert_eq!((asked.as_slice(), tried.len()), (&[100][..], 1));
        // A plan that does not fit is asked again smaller.
        let mut asked = Vec::new();
        let plan = |b: u64| -> anyhow::Result<u64> {
            asked.push(b);
            anyhow::bail!("the plan needs more than {b}")
        };
        assert_eq!(try_budgets("wgpu", [100, 25], plan, &mut tried), None);
        assert_eq!(asked, [100, 25]);
        assert_eq!(tried.len(), 3);
    }

    #[test]
    fn a_fault_is_found_under_context_and_a_plain_error_is_none() {
        let e = Fault::error(FaultKind::Compile, "NVRTC failed").context("building the CUDA backend");
        assert_eq!(fault_kind(&e), Some(FaultKind::Compile));
        assert!(!smaller_budget_may_help(&e));
        let e = Fault::error(FaultKind::OutOfMemory, "out of GPU memory").context("wgpu");
        assert!(smaller_budget_may_help(&e));
        let plan = anyhow::anyhow!("the case needs 3 GiB, more than the budget").context("--backend wgpu");
        assert_eq!(fault_kind(&plan), None);
        assert!(smaller_budget_may_help(&plan));
    }

    #[cfg(feature = "cuda-driver")]
    #[test]
    fn a_cuda_driver_error_is_the_machines_and_its_out_of_memory_is_memory() {
        use anyhow::Context;
        use cudarc::driver::{sys::CUresult, DriverError};
        let oom: anyhow::Result<()> = Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY).into());
        let oom = oom.context("allocating the slices").unwrap_err();
        assert_eq!(fault_kind(&oom), Some(FaultKind::OutOfMemory));
        let lost = anyhow::Error::new(DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert_eq!(fault_kind(&lost), Some(FaultKind::Device));
    }
}
