//! [`super::Reduce`] through memory the processes of one machine share (an MPI-3 shared
//! window), for jobs whose processes all run on one machine.
//!
//! The collective sum of [`super::mpi`] packs the output, hands pieces to the library, which
//! copies them through its own shared-memory buffers, and unpacks the total: on a 2-GPU
//! machine at 128^3 cells it spent 0.24 s per iteration on a 218 MB buffer, a fifth of the
//! iteration (`docs/benchmarks.md`, "MPI"). Here every process packs straight into its own
//! part of a window the others can read, adds its chunk of every process's output in rank
//! order into its part of a result that the others can read, and unpacks from the result
//! parts of all processes. No message is sent; each value is written twice and read
//! twice, by all threads of every process. The additions are those of the collective sum
//! (same chunks, same rank order), so both give the same bits.

use super::{pack_into, packed_len, sum_runs_in_rank_order, unpack_segments, Reduce, SumClock};
use crate::backend::SweepOutput;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::Instant;

/// One process's part of the window: its packed output, padded to `ranks` chunks, then its
/// summed chunk.
struct Window {
    win: ffi::MPI_Win,
    /// Every process's part, in rank order, mapped into this process.
    bases: Vec<*mut f64>,
    /// Values of the packed output and of a chunk.
    len: usize,
    chunk: usize,
}

impl Window {
    /// Values of chunk `r` within the packed output (the last may be short, later ones empty).
    fn chunk_len(&self, r: usize) -> usize {
        self.chunk.min(self.len.saturating_sub(r * self.chunk))
    }
    /// Process `r`'s packed output (padded).
    fn input(&self, r: usize) -> *mut f64 {
        self.bases[r]
    }
    /// Process `r`'s summed chunk.
    fn result(&self, r: usize) -> *mut f64 {
        // SAFETY: within process r's part, which holds (ranks + 1) chunks.
        unsafe { self.bases[r].add(self.bases.len() * self.chunk) }
    }
}

pub struct SharedReduce<'a> {
    world: &'a SimpleCommunicator,
    window: Option<Window>,
    clock: SumClock,
}

impl<'a> SharedReduce<'a> {
    /// Only for a communicator whose processes share one machine's memory.
    pub fn new(world: &'a SimpleCommunicator) -> Self {
        let clock = SumClock::new("shared memory: ", ["pack", "barrier", "sum", "barrier", "unpack"]);
        Self { world, window: None, clock }
    }

    /// The window for a packed output of `len` values (allocated once; collective).
    fn window(&mut self, len: usize) -> anyhow::Result<()> {
        if self.window.as_ref().is_some_and(|w| w.len != len) {
            anyhow::bail!("the packed sweep output changed length ({len} values)");
        }
        if self.window.is_none() {
            let n = self.world.size() as usize;
            let chunk = len.div_ceil(n);
            let bytes = (n * chunk + chunk) * std::mem::size_of::<f64>();
            let mut base: *mut f64 = std::ptr::null_mut();
            // SAFETY: MPI-3 calls on a valid communicator; the window outlives its use
            // (freed in Drop, collectively, as every process drops its reducer).
            let win = unsafe {
                let mut win: ffi::MPI_Win = ffi::RSMPI_WIN_NULL;
                let rc = ffi::MPI_Win_allocate_shared(
                    bytes as ffi::MPI_Aint,
                    std::mem::size_of::<f64>() as i32,
                    ffi::RSMPI_INFO_NULL,
                    self.world.as_raw(),
                    &mut base as *mut *mut f64 as *mut std::ffi::c_void,
                    &mut win,
                );
                anyhow::ensure!(rc == 0, "MPI_Win_allocate_shared of {bytes} bytes failed (error {rc})");
                // One passive epoch for the whole run; MPI_Win_sync orders the accesses.
                ffi::MPI_Win_lock_all(0, win);
                win
            };
            let mut bases = Vec::with_capacity(n);
            for r in 0..n {
                let (mut size, mut unit, mut at): (ffi::MPI_Aint, i32, *mut f64) = (0, 0, std::ptr::null_mut());
                // SAFETY: as above.
                let rc = unsafe {
                    ffi::MPI_Win_shared_query(
                        win,
                        r as i32,
                        &mut size,
                        &mut unit,
                        &mut at as *mut *mut f64 as *mut std::ffi::c_void,
                    )
                };
                anyhow::ensure!(rc == 0 && size as usize == bytes, "MPI_Win_shared_query of process {r} failed");
                bases.push(at);
            }
            self.window = Some(Window { win, bases, len, chunk });
        }
        Ok(())
    }

    /// A barrier that also orders this process's window stores before the others' loads.
    fn fence(world: &SimpleCommunicator, w: &Window) {
        // SAFETY: the window is locked for the run (see `window`).
        unsafe { ffi::MPI_Win_sync(w.win) };
        world.barrier();
        unsafe { ffi::MPI_Win_sync(w.win) };
    }
}

impl Reduce for SharedReduce<'_> {
    fn largest(&self, x: f64) -> f64 {
        largest_over(self.world, x)
    }

    fn reduce(&mut self, out: &mut SweepOutput, stop: usize) -> anyhow::Result<usize> {
        // Also keeps a fast process from writing its next output while a slow one still
        // reads the previous results.
        self.clock.wait(|| self.world.barrier());
        let t0 = Instant::now();
        let (n, r) = (self.world.size() as usize, self.world.rank() as usize);
        let world = self.world;
        self.window(packed_len(out))?;
        let w = self.window.as_ref().expect("allocated above");
        let (len, c) = (w.len, w.chunk);
        // SAFETY: this process alone writes its input part, and only between the barriers
        // that separate it from the others' reads.
        pack_into(out, stop, unsafe { std::slice::from_raw_parts_mut(w.input(r), len) });
        let t1 = Instant::now();
        Self::fence(world, w);
        let t2 = Instant::now();
        let here = w.chunk_len(r);
        // SAFETY: between the fences every input part is only read, and this process alone
        // writes its result part.
        let runs: Vec<&[f64]> =
            (0..n).map(|s| unsafe { std::slice::from_raw_parts(w.input(s).add(r * c), here) }).collect();
        let sum = unsafe { std::slice::from_raw_parts_mut(w.result(r), here) };
        sum_runs_in_rank_order(&runs, sum);
        // The stop requests are signal numbers: the largest, not their sum.
        if here > 0 && (len - 1) / c == r {
            let i = (len - 1) % c;
            sum[i] = runs.iter().map(|run| run[i]).fold(0.0, f64::max);
        }
        let t3 = Instant::now();
        Self::fence(world, w);
        let t4 = Instant::now();
        // SAFETY: until the next call's first barrier no process writes a result part.
        let segments: Vec<&[f64]> =
            (0..n).map(|s| unsafe { std::slice::from_raw_parts(w.result(s) as *const f64, w.chunk_len(s)) }).collect();
        let stop = unpack_segments(&segments, out);
        self.clock.book([t0, t1, t2, t3, t4, Instant::now()]);
        Ok(stop)
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        if let Some(mut w) = self.window.take() {
            // SAFETY: every process calls this once, after the same last sum; no slice into
            // the window outlives `reduce`.
            unsafe {
                ffi::MPI_Win_unlock_all(w.win);
                ffi::MPI_Win_free(&mut w.win);
            }
        }
        Ok(())
    }

    fn clock(&self) -> &SumClock {
        &self.clock
    }
}

impl Drop for SharedReduce<'_> {
    fn drop(&mut self) {
        // Without `finish` the run failed on this process, which will abort the job: freeing
        // the window here would wait for processes that wait in the next sum for this one.
        // The memory goes with the job.
        if self.window.is_some() {
            log::debug!("the shared sum's window is left to the job's end (the run did not finish)");
        }
    }
}

/// The largest `x` over the processes of `world` (`Reduce::largest` of both sums; here, not
/// in `mpi.rs`, which builds on this file).
pub(super) fn largest_over(world: &SimpleCommunicator, x: f64) -> f64 {
    let mut out = x;
    world.all_reduce_into(&x, &mut out, mpi::collective::SystemOperation::max());
    out
}
