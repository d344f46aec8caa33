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
    /// Seconds spent adding up so far, not counting [`Reduce::waiting`].
    fn seconds(&self) -> f64;
    /// Seconds spent waiting for the slowest process before the sums.
    fn waiting(&self) -> f64 {
        0.0
    }
    /// Where the time went, for the log.
    fn detail(&self) -> String {
        String::new()
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

/// `out` and `stop` as one buffer (resized to [`packed_len`]). Plain copies of contiguous
/// arrays: at 128^3 cells the buffer is 218 MB, and it is packed every iteration.
pub fn pack(out: &SweepOutput, stop: usize, buf: &mut Vec<f64>) {
    buf.clear();
    buf.extend_from_slice(out.raw.as_flattened());
    out.incident.iter().for_each(|f| buf.extend_from_slice(f));
    buf.extend_from_slice(out.wall.as_flattened());
    out.exits.iter().for_each(|f| buf.extend_from_slice(f));
    buf.push(stop as f64);
}

/// The inverse of [`pack`]; returns the stop request.
pub fn unpack(buf: &[f64], out: &mut SweepOutput) -> usize {
    let mut at = 0;
    let mut take = |dst: &mut [f64]| {
        dst.copy_from_slice(&buf[at..at + dst.len()]);
        at += dst.len();
    };
    take(out.raw.as_flattened_mut());
    out.incident.iter_mut().for_each(|f| take(f));
    take(out.wall.as_flattened_mut());
    out.exits.iter_mut().for_each(|f| take(f));
    assert_eq!(at + 1, buf.len(), "packed length");
    buf[at] as usize
}

/// `parts` holds `ranks` runs of `sum.len()` values, one per process in rank order; `sum`
/// receives their elementwise sum, each element added in rank order (the same bits
/// whatever the timing or the threads).
pub fn sum_in_rank_order(parts: &[f64], ranks: usize, sum: &mut [f64]) {
    use rayon::prelude::*;
    let len = sum.len();
    assert_eq!(parts.len(), ranks * len);
    sum.par_chunks_mut(1 << 14).enumerate().for_each(|(k, s)| {
        let at = k << 14;
        s.copy_from_slice(&parts[at..at + s.len()]);
        for r in 1..ranks {
            s.iter_mut().zip(&parts[r * len + at..]).for_each(|(a, x)| *a += x);
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
