//! [`super::Reduce`] over MPI (rsmpi on the system's MPI library).
//!
//! The sum is a reduce-scatter and an all-gather written out, so that its order is ours:
//! the packed output is cut into one chunk per process; an all-to-all hands every process
//! the pieces of its chunk from all processes, which it adds in rank order; an all-gather
//! returns the summed chunks to everyone. Each process sends and receives about twice the
//! packed output, as a ring all-reduce would, but the bits do not depend on the library's
//! choice of algorithm.

use super::{pack, sum_in_rank_order, unpack, Reduce, SumClock};
use crate::backend::SweepOutput;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::Instant;

/// This process's place among those started together.
pub struct Mpi {
    pub world: SimpleCommunicator,
    pub rank: usize,
    pub ranks: usize,
    /// Rank among the processes on this machine (the GPU it takes).
    pub local_rank: usize,
    /// Processes on this machine.
    pub local_ranks: usize,
    // Dropped last: finalises MPI.
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// MPI, when this process was started by a launcher (`mpirun`, `srun`); None otherwise,
    /// so a plain `knudsen run` never touches the MPI library.
    pub fn init_if_launched() -> anyhow::Result<Option<Self>> {
        if super::launched_processes().is_none() {
            return Ok(None);
        }
        let universe = mpi::initialize().ok_or_else(|| anyhow::anyhow!("MPI was initialised twice"))?;
        let world = universe.world();
        let local = world.split_shared(world.rank());
        Ok(Some(Self {
            rank: world.rank() as usize,
            ranks: world.size() as usize,
            local_rank: local.rank() as usize,
            local_ranks: local.size() as usize,
            world,
            _universe: universe,
        }))
    }

    /// Whether every process holds the same `x` (each gets the same answer).
    pub fn all_agree(&self, x: u64) -> bool {
        let (mut lo, mut hi) = (x, x);
        self.world.all_reduce_into(&x, &mut lo, mpi::collective::SystemOperation::min());
        self.world.all_reduce_into(&x, &mut hi, mpi::collective::SystemOperation::max());
        lo == hi
    }

    /// Waits until every process has come here.
    pub fn barrier(&self) {
        use mpi::collective::CommunicatorCollectives;
        self.world.barrier();
    }

    /// Ends every process of the job (a failing rank must not leave the others waiting).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// The sum for this job: through shared memory when every process runs on this
    /// machine, through the library's collectives otherwise; `KNUDSEN_MPI_SUM=collective`
    /// (or `shared`, refused across machines) chooses (measurements, `docs/parallel.md`).
    pub fn reducer(&self) -> anyhow::Result<Box<dyn Reduce + '_>> {
        let one_machine = self.local_ranks == self.ranks;
        let asked = std::env::var("KNUDSEN_MPI_SUM");
        // 0: shared, 1: collective, 2: refused. Every process must take the same path (a
        // mix would deadlock), so they agree on the largest code before taking one.
        let code: i32 = match asked.as_deref() {
            Ok("collective") => 1,
            Ok("shared") if one_machine => 0,
            Err(std::env::VarError::NotPresent) => i32::from(!one_machine),
            _ => 2,
        };
        let mut agreed = 0;
        self.world.all_reduce_into(&code, &mut agreed, mpi::collective::SystemOperation::max());
        match agreed {
            0 => Ok(Box::new(super::shared::SharedReduce::new(&self.world))),
            1 => Ok(Box::new(self.collective())),
            _ => match asked {
                Ok(v) if v == "shared" => anyhow::bail!(
                    "KNUDSEN_MPI_SUM=shared, but the {} processes run on more than one machine ({} on this one)",
                    self.ranks,
                    self.local_ranks
                ),
                Ok(v) if v != "collective" => {
                    anyhow::bail!("KNUDSEN_MPI_SUM={v}: expected \"shared\" or \"collective\"")
                }
                Err(std::env::VarError::NotUnicode(v)) => {
                    anyhow::bail!("KNUDSEN_MPI_SUM={v:?}: expected \"shared\" or \"collective\"")
                }
                _ => anyhow::bail!("another process refused its KNUDSEN_MPI_SUM"),
            },
        }
    }

    /// The sum through the library's all-to-all and all-gather.
    pub fn collective(&self) -> MpiReduce<'_> {
        MpiReduce {
            world: &self.world,
            send: Vec::new(),
            recv: Vec::new(),
            full: Vec::new(),
            chunk: Vec::new(),
            clock: SumClock::new("", ["pack", "all-to-all", "sum", "all-gather", "unpack"]),
        }
    }
}

pub struct MpiReduce<'a> {
    world: &'a SimpleCommunicator,
    send: Vec<f64>,
    recv: Vec<f64>,
    full: Vec<f64>,
    chunk: Vec<f64>,
    clock: SumClock,
}

impl Reduce for MpiReduce<'_> {
    fn largest(&self, x: f64) -> f64 {
        super::shared::largest_over(self.world, x)
    }

    fn reduce(&mut self, out: &mut SweepOutput, stop: usize) -> anyhow::Result<usize> {
        // The barrier separates waiting for the slowest process from the sum itself.
        self.clock.wait(|| self.world.barrier());
        let t0 = Instant::now();
        let (n, r) = (self.world.size() as usize, self.world.rank() as usize);
        pack(out, stop, &mut self.send);
        let t1 = Instant::now();
        let len = self.send.len();
        let c = len.div_ceil(n);
        self.send.resize(n * c, 0.0);
        self.recv.resize(n * c, 0.0);
        self.world.all_to_all_into(&self.send[..], &mut self.recv[..]);
        let t2 = Instant::now();
        self.chunk.resize(c, 0.0);
        sum_in_rank_order(&self.recv, n, &mut self.chunk);
        let chunk = &mut self.chunk;
        // The stop requests are signal numbers: the largest, not their sum.
        if (len - 1) / c == r {
            let i = (len - 1) % c;
            chunk[i] = (0..n).map(|s| self.recv[s * c + i]).fold(0.0, f64::max);
        }
        self.full.resize(n * c, 0.0);
        let t3 = Instant::now();
        self.world.all_gather_into(&self.chunk[..], &mut self.full[..]);
        let t4 = Instant::now();
        let stop = unpack(&self.full[..len], out);
        self.clock.book([t0, t1, t2, t3, t4, Instant::now()]);
        Ok(stop)
    }

    fn clock(&self) -> &SumClock {
        &self.clock
    }
}
