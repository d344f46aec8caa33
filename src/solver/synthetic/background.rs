//! The operator's rebuild, off the critical path: when the state has drifted from the one
//! the operator was linearised about ([`super::REBUILD_DRIFT`]), the new operator and its
//! hierarchy are built on a host thread while the next sweep runs (on a GPU backend the host
//! is idle then), and installed at the next iteration; the solve in between uses the
//! previous operator. Any nonsingular operator leaves the fixed point as it is, and the
//! measured sweep counts did not change (CPU: the 16^3 cavities at Kn 1, 0.1 and 0.01 and
//! cube-quick, 18, 22, 22 and 14 sweeps either way). What runs does not depend on timing: a
//! build started after sweep n is always installed after sweep n + 1, so runs stay
//! reproducible, and the restart data names the state being built (`Gsis::saved`), which a
//! continued run builds first, as the uninterrupted one installs it.

use super::flux::Base;
use super::Hierarchy;
use crate::problem::Problem;
use std::sync::Arc;
use std::thread::JoinHandle;

pub struct Build {
    /// The state the operator is linearised about.
    pub base: Vec<Base>,
    handle: JoinHandle<anyhow::Result<Hierarchy>>,
}

impl Build {
    pub fn start(p: Arc<Problem>, base: Vec<Base>, factor_lines: bool) -> anyhow::Result<Self> {
        let copy = base.clone();
        let handle = std::thread::Builder::new()
            .name("gsis-build".into())
            .spawn(move || Hierarchy::build(&p, copy, factor_lines))?;
        Ok(Self { base, handle })
    }

    /// The built hierarchy, waiting for it if need be.
    pub fn finish(self) -> anyhow::Result<Hierarchy> {
        self.handle.join().map_err(|_| anyhow::anyhow!("the synthetic operator's build panicked"))?
    }
}
