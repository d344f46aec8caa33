//! Velocity-space decomposition over processes (`docs/parallel.md`).
//!
//! Every process holds the whole physical grid and the macroscopic state, and sweeps its
//! share of every octant's velocities ([`crate::grid::VelocityGrid::with_share`]). What a
//! sweep returns is a sum over velocities (raw moments, incident and wall sums) or, for the
//! face exits, a value written by the one process that owns the velocity and zero elsewhere,
//! so the processes' outputs simply add. After the sum every process holds the output of
//! the whole sweep and runs the same host update (source iteration or GSIS) on the same
//! numbers, so their states stay identical without a broadcast.
//!
//! The sum is taken in rank order, chunk by chunk ([`sum_in_rank_order`]), never in an
//! order the communication library chooses, so a rerun on the same number of processes
//! gives the same bits.

#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "mpi")]
pub mod shared;

use crate::backend::SweepOutput;
use crate::grid::VelocityGrid;

/// The variable each launcher (Open MPI's `mpirun`, MPICH/Hydra and other PMI launchers,
/// Slurm's `srun`) sets to the number of processes it started.
const LAUNCHER_SIZE_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"];

/// How many processes a launcher started together with this one; None when none did.
pub fn launched_processes() -> Option<usize> {
    LAUNCHER_SIZE_VARS.iter().find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// The part of `v` that process `rank` of `ranks` sweeps, or why there is none: every
/// process needs at least one velocity of every octant.
pub fn share_velocities(v: &VelocityGrid, rank: usize, ranks: usize) -> Result<VelocityGrid, String> {
    let fewest = v.octant_members().iter().map(Vec::len).min().unwrap_or(0);
    if fewest < ranks {
        return Err(format!(
            "{ranks} processes share the velocities, but an octant has only {fewest}: use at most {fewest} processes or more velocity points"
        ));
    }
    Ok(v.clone().with_share(rank, ranks))
}

/// Adds up the sweep outputs of every process; each gets the total. `stop` is this
/// process's stop request (a signal number, 0 for none); the largest over all processes is
/// returned, so that every process stops after the same iteration.
pub trait Reduce {
    fn reduce(&mut self, out: &mut SweepOutput, stop: usize) -> anyhow::Result<usize>;
    /// Called by every process after the last sum of a run that ends normally (converged,
    /// out of iterations or stopped by a signal): releases what the processes share, which
    /// takes all of them. Never called after an error: a failing process must not wait for
    /// the others, whom it is about to abort (`cli/run.rs`).
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Where the time of the sums went so far.
    fn clock(&self) -> &SumClock;
    /// The largest `x` over the processes; every process calls it at the same point. The
    /// solver takes the backends' round-off floors so (`Solver::run_for`): a process whose
    /// backend fell back to the CPU would otherwise stop by other rules than the rest, and
    /// wait for them in the next sum.
    fn largest(&self, x: f64) -> f64;
}

/// The time of a sum's five phases, and the waiting for the slowest process before them.
#[derive(Debug, Clone)]
pub struct SumClock {
    label: &'static str,
    names: [&'static str; 5],
    phases: [f64; 5],
    /// Seconds spent adding up, not counting `waiting`.
    pub seconds: f64,
    /// Seconds spent waiting for the slowest process before the sums.
    pub waiting: f64,
}

impl SumClock {
    pub fn new(label: &'static str, names: [&'static str; 5]) -> Self {
        Self { label, names, phases: [0.0; 5], seconds: 0.0, waiting: 0.0 }
    }

    /// Runs `barrier` and books its time as waiting.
    pub fn wait(&mut self, barrier: impl FnOnce()) {
        let t = std::time::Instant::now();
        barrier();
        self.waiting += t.elapsed().as_secs_f64();
    }

    /// Books the phases between six instants: phase k from `t[k]` to `t[k + 1]`.
    pub fn book(&mut self, t: [std::time::Instant; 6]) {
        for k in 0..5 {
            self.phases[k] += (t[k + 1] - t[k]).as_secs_f64();
        }
        self.seconds += (t[5] - t[0]).as_secs_f64();
    }

    /// Where the time went, for the log.
    pub fn detail(&self) -> String {
        let phases: Vec<String> = self.names.iter().zip(self.phases).map(|(n, s)| format!("{n} {s:.3} s")).collect();
        format!("{}{}", self.label, phases.join(", "))
    }
}

/// Values in one packed sweep output: raw moments, incident sums, wall sums, exits, and
/// the stop request.
pub fn packed_len(out: &SweepOutput) -> usize {
    let faces = |d: &crate::grid::FaceData| d.iter().map(Vec::len).sum::<usize>();
    out.raw.len() * crate::model::NRAW
        + faces(&out.incident)
        + out.wall.iter().map(|w| w.len()).sum::<usize>()
        + faces(&out.exits)
        + 1
}

/// Values copied or added per rayon task: large enough that a task's overhead is small
/// against its copy, small enough to spread one 218 MB buffer (128^3 cells) over every
/// thread. One thread packed that buffer in 0.05 s (2-GPU run, `docs/benchmarks.md`, "MPI").
const PIECE: usize = 1 << 15;

/// The arrays of `out` in packed order.
fn parts(out: &SweepOutput) -> Vec<&[f64]> {
    let mut v = vec![out.raw.as_flattened()];
    v.extend(out.incident.iter().map(Vec::as_slice));
    v.push(out.wall.as_flattened());
    v.extend(out.exits.iter().map(Vec::as_slice));
    v
}

fn parts_mut(out: &mut SweepOutput) -> Vec<&mut [f64]> {
    let mut v = vec![out.raw.as_flattened_mut()];
    v.extend(out.incident.iter_mut().map(Vec::as_mut_slice));
    v.push(out.wall.as_flattened_mut());
    v.extend(out.exits.iter_mut().map(Vec::as_mut_slice));
    v
}

/// Pairs two sequences of slices with the same total length into pieces of equal length
/// (at most `piece` values) that together cover both in order.
fn pair_pieces<'a, 'b>(dst: Vec<&'a mut [f64]>, src: Vec<&'b [f64]>, piece: usize) -> Vec<(&'a mut [f64], &'b [f64])> {
    let mut pairs = Vec::new();
    let (mut dst, mut src) = (dst.into_iter(), src.into_iter());
    let (mut d, mut s): (&'a mut [f64], &'b [f64]) = (&mut [], &[]);
    loop {
        if d.is_empty() {
            match dst.next() {
                Some(x) => d = x,
                None => break,
            }
            continue;
        }
        if s.is_empty() {
            s = src.next().expect("the sources end before the destinations");
            continue;
        }
        let n = d.len().min(s.len()).min(piece);
        let (d0, d1) = std::mem::take(&mut d).split_at_mut(n);
        let (s0, s1) = s.split_at(n);
        pairs.push((d0, s0));
        (d, s) = (d1, s1);
    }
    assert!(s.is_empty() && src.all(|x| x.is_empty()), "the destinations end before the sources");
    pairs
}

/// Copies `src` (concatenated) into `dst` (concatenated) on the rayon threads.
fn copy_pieces(dst: Vec<&mut [f64]>, src: Vec<&[f64]>, piece: usize) {
    use rayon::prelude::*;
    pair_pieces(dst, src, piece).into_par_iter().for_each(|(d, s)| d.copy_from_slice(s));
}

/// `out` and `stop` as one buffer of [`packed_len`] values.
pub fn pack_into(out: &SweepOutput, stop: usize, buf: &mut [f64]) {
    assert_eq!(buf.len(), packed_len(out), "packed length");
    let (body, last) = buf.split_at_mut(buf.len() - 1);
    copy_pieces(vec![body], parts(out), PIECE);
    last[0] = stop as f64;
}

/// [`pack_into`] a vector resized to fit.
pub fn pack(out: &SweepOutput, stop: usize, buf: &mut Vec<f64>) {
    buf.resize(packed_len(out), 0.0);
    pack_into(out, stop, buf);
}

/// The inverse of [`pack`]; returns the stop request.
pub fn unpack(buf: &[f64], out: &mut SweepOutput) -> usize {
    unpack_segments(&[buf], out)
}

/// [`unpack`] from a packed buffer held in consecutive segments (each process's summed
/// chunk, where the sum leaves them in place).
pub fn unpack_segments(segments: &[&[f64]], out: &mut SweepOutput) -> usize {
    let len = packed_len(out);
    assert_eq!(segments.iter().map(|s| s.len()).sum::<usize>(), len, "packed length");
    let (mut body, mut left) = (Vec::new(), len - 1);
    for s in segments {
        let n = s.len().min(left);
        body.push(&s[..n]);
        left -= n;
    }
    let stop = segments.iter().rev().find(|s| !s.is_empty()).map_or(0.0, |s| s[s.len() - 1]);
    copy_pieces(parts_mut(out), body, PIECE);
    stop as usize
}

/// `parts` holds `ranks` runs of `sum.len()` values, one per process in rank order; `sum`
/// receives their elementwise sum, each element added in rank order (the same bits
/// whatever the timing or the threads).
pub fn sum_in_rank_order(parts: &[f64], ranks: usize, sum: &mut [f64]) {
    let len = sum.len();
    assert_eq!(parts.len(), ranks * len);
    let runs: Vec<&[f64]> = parts.chunks(len.max(1)).collect();
    sum_runs_in_rank_order(&runs, sum);
}

/// [`sum_in_rank_order`] of runs that need not be adjacent in memory:
/// `sum[i] = runs[0][i] + runs[1][i] + ...`, added left to right.
pub fn sum_runs_in_rank_order(runs: &[&[f64]], sum: &mut [f64]) {
    use rayon::prelude::*;
    assert!(runs.iter().all(|r| r.len() == sum.len()), "every run as long as the sum");
    sum.par_chunks_mut(PIECE).enumerate().for_each(|(k, s)| {
        let at = k * PIECE;
        s.copy_from_slice(&runs[0][at..at + s.len()]);
        for r in &runs[1..] {
            s.iter_mut().zip(&r[at..]).for_each(|(a, x)| *a += x);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::walled_box;
    use crate::problem::Problem;

    #[test]
    fn a_packed_output_unpacks_to_itself() {
        let p = Problem::new(&walled_box([3, 4, 2], 10));
        let mut out = SweepOutput::zeros(&p);
        let mut k = 0.0;
        let mut next = || {
            k += 1.0;
            k
        };
        out.raw.iter_mut().flatten().for_each(|x| *x = next());
        out.incident.iter_mut().flatten().for_each(|x| *x = next());
        out.wall.iter_mut().flatten().for_each(|x| *x = next());
        out.exits.iter_mut().flatten().for_each(|x| *x = next());
        let mut buf = Vec::new();
        pack(&out, 15, &mut buf);
        assert_eq!(buf.len(), packed_len(&out));
        let mut back = SweepOutput::zeros(&p);
        assert_eq!(unpack(&buf, &mut back), 15);
        assert_eq!(back, out);
    }

    #[test]
    fn pieces_cover_both_sides_across_every_boundary() {
        // Boundaries of the two sides fall at different places, and pieces of 3 cut both.
        let src: Vec<f64> = (0..17).map(f64::from).collect();
        let (a, b) = src.split_at(5);
        let (b, c) = b.split_at(1);
        let mut dst = vec![0.0; 17];
        let (x, y) = dst.split_at_mut(8);
        copy_pieces(vec![x, y], vec![a, b, &[], c], 3);
        assert_eq!(dst, src);
        let pairs_len: Vec<usize> =
            pair_pieces(vec![&mut [0.0; 7][..]], vec![&src[..4], &src[4..7]], 3).iter().map(|p| p.0.len()).collect();
        assert_eq!(pairs_len, [3, 1, 3]);
    }

    #[test]
    fn a_packed_output_unpacks_from_segments() {
        let p = Problem::new(&walled_box([3, 4, 2], 10));
        let mut out = SweepOutput::zeros(&p);
        out.raw.iter_mut().flatten().enumerate().for_each(|(i, x)| *x = i as f64 + 0.5);
        out.incident.iter_mut().flatten().for_each(|x| *x = -1.0);
        let mut buf = Vec::new();
        pack(&out, 9, &mut buf);
        // Cut as a 4-process sum leaves it: chunks of ceil(len / 4), the last one short.
        let c = buf.len().div_ceil(4);
        let segments: Vec<&[f64]> = buf.chunks(c).collect();
        let mut back = SweepOutput::zeros(&p);
        assert_eq!(unpack_segments(&segments, &mut back), 9);
        assert_eq!(back, out);
    }

    #[test]
    fn more_processes_than_an_octant_has_velocities_are_refused_by_name() {
        // Nodes -1, 0, 1: a single velocity has every component negative.
        let v = VelocityGrid::new(3, 1.0, crate::config::Quadrature::Trapezoid);
        assert!(share_velocities(&v, 0, 1).is_ok());
        let e = share_velocities(&v, 1, 2).unwrap_err();
        assert!(e.contains("an octant has only 1"), "{e}");
    }

    #[test]
    fn the_sum_runs_in_rank_order() {
        // (1 + 1e16) - 1e16 is 0 in f64; 1 + (1e16 - 1e16), the reverse order, is 1.
        let parts = [1.0, 1e16, -1e16];
        let mut sum = [f64::NAN];
        sum_in_rank_order(&parts, 3, &mut sum);
        assert_eq!(sum, [0.0]);
    }
}
