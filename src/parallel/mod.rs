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
    /// Seconds spent in [`Reduce::reduce`] so far.
    fn seconds(&self) -> f64;
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

/// `out` and `stop` as one buffer (resized to [`packed_len`]).
pub fn pack(out: &SweepOutput, stop: usize, buf: &mut Vec<f64>) {
    buf.clear();
    buf.extend(out.raw.iter().flatten());
    buf.extend(out.incident.iter().flatten());
    buf.extend(out.wall.iter().flatten());
    buf.extend(out.exits.iter().flatten());
    buf.push(stop as f64);
}

/// The inverse of [`pack`]; returns the stop request.
pub fn unpack(buf: &[f64], out: &mut SweepOutput) -> usize {
    let mut it = buf.iter().copied();
    out.raw.iter_mut().flatten().for_each(|x| *x = it.next().expect("packed length"));
    out.incident.iter_mut().flatten().for_each(|x| *x = it.next().expect("packed length"));
    out.wall.iter_mut().flatten().for_each(|x| *x = it.next().expect("packed length"));
    out.exits.iter_mut().flatten().for_each(|x| *x = it.next().expect("packed length"));
    it.next().expect("packed length") as usize
}

/// `parts` holds `ranks` runs of `len` values, one per process in rank order; returns their
/// elementwise sum, added in rank order (the same bits whatever the timing).
pub fn sum_in_rank_order(parts: &[f64], ranks: usize, len: usize) -> Vec<f64> {
    assert_eq!(parts.len(), ranks * len);
    let mut sum = parts[..len].to_vec();
    for r in 1..ranks {
        sum.iter_mut().zip(&parts[r * len..(r + 1) * len]).for_each(|(s, x)| *s += x);
    }
    sum
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
        // 1e16 + 1 - 1e16 is 0 in f64 taken left to right and 1 taken right to left.
        let parts = [1e16, 1.0, -1e16];
        assert_eq!(sum_in_rank_order(&parts, 3, 1), vec![0.0]);
    }
}
