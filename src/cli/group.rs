//! What `knudsen run` hands from its set-up to its solve, the same in one process and in
//! each of several MPI processes (`run.rs`, `run_mpi.rs`): the prepared case, and this
//! process's place among those sharing the velocities.

use super::coarse::MakeReduce;
use super::failure::Failure;
use knudsen::config::Config;
use std::path::PathBuf;

/// The case with its overrides, where its results go, and the directories a failed run
/// removes again.
pub struct Prepared {
    pub cfg: Config,
    pub dir: PathBuf,
    /// The directories that `dir` needs made, found before any process makes one.
    pub made: Vec<PathBuf>,
    /// What the command to continue an interrupted run must repeat.
    pub again: String,
}

/// This process among those sharing the velocities (one, without MPI).
pub struct Group<'a> {
    pub rank: usize,
    pub ranks: usize,
    pub reduce: Option<Box<dyn knudsen::parallel::Reduce + 'a>>,
    /// Further sums, for the coarse start's levels.
    pub more: Option<MakeReduce<'a>>,
    /// The processes' checks before the first sum, made as one (`run_mpi::one_voice`).
    pub agree: Option<Agree<'a>>,
}

/// Every process's outcome of the same checks, as all of them must take it.
pub type Agree<'a> = &'a dyn Fn(Result<(), Failure>) -> Result<(), Failure>;
