//! `knudsen run` as one of several MPI processes that share the velocities
//! (`docs/parallel.md`): one voice (rank 0 logs and writes, a failure every process meets alike
//! is said once), every process given the same run, and a process that fails alone ends the
//! job with its error instead of leaving the others waiting in the next sum.

use super::failure::Failure;
use super::group::{Group, Prepared};
use super::out_dir::remove_made_dirs;
use super::resume::Resume;
use knudsen::config::Config;
use knudsen::parallel::mpi::Mpi;
use std::path::Path;

/// `knudsen run` on process `m.rank` of `m.ranks`: `prepare` reads the case and checks the
/// options, as a single process does, and `solve` (`run.rs`) solves the case (its config,
/// output directory and continuation arguments) as this process of the group.
pub fn run_on_ranks(
    m: &Mpi,
    prepare: impl FnOnce() -> Result<Prepared, Failure>,
    solve: impl FnOnce(&Config, &Path, &str, Group<'_>) -> Result<(), Failure>,
    resume: &Resume,
) -> Result<(), Failure> {
    knudsen::backend::set_device_slot(m.local_rank);
    if m.rank > 0 {
        // One voice: rank 0 logs, draws the progress and writes; the others warn.
        log::set_max_level(log::LevelFilter::Warn);
    }
    let Prepared { cfg, dir, made, again } = one_voice(m, prepare())?;
    // Every process refuses alike (exit 2, nothing made) where they were not given the same
    // case and run: otherwise they would sum different sweeps into a wrong answer, or wait
    // for one another's next sum when their stops differ.
    let same = match m.all_agree(run_fingerprint(&cfg, resume)) {
        true => Ok(()),
        false => Err(Failure::BadInput(format!(
            "the {} processes were not given the same case and run: the case's solution-shaping keys, `tolerance`, `max_iterations`, `acceleration`, `partner_relaxation`, `coarse_grids`, `stall_sweeps` and --restart must agree (precision and backend may differ: docs/parallel.md)",
            m.ranks
        ))),
    };
    one_voice(m, same)?;
    let reduce = match m.reducer() {
        Ok(r) => r,
        Err(e) => {
            say(format!("rank {} of {} failed: {e:#}\n", m.rank, m.ranks));
            m.abort(1)
        }
    };
    // The coarse start's levels each take a sum of their own (coarse.rs).
    let more = || m.reducer();
    // The case's own checks (host memory, the share of the velocities, --restart) every
    // process makes before the first sum: said once where all fail alike.
    let agree = |r| one_voice(m, r);
    let group = Group { rank: m.rank, ranks: m.ranks, reduce: Some(reduce), more: Some(&more), agree: Some(&agree) };
    // Rank 0 alone makes and writes the output directory, so it alone removes what it made
    // and left empty. A failure on another rank ends the job before it could: hence the
    // directory is made only by the first file written (out_dir.rs).
    match solve(&cfg, &dir, &again, group) {
        // Every process stopped alike, or met the same failure, which rank 0 said: each
        // ends with its code.
        Err(f @ (Failure::Interrupted { .. } | Failure::Said(_))) => {
            if m.rank == 0 {
                remove_made_dirs(&made);
            }
            Err(f)
        }
        Err(f) => {
            // The other ranks wait in the next sum: end them all, with this error.
            say(format!("rank {} of {} failed:\n{}\n", m.rank, m.ranks, f.message()));
            if m.rank == 0 {
                remove_made_dirs(&made);
            }
            m.abort(i32::from(f.code()))
        }
        ok => ok,
    }
}

/// `r` as every process of the job met it, before any sum began: a failure they all met alike
/// (the same message and exit code: a case file's error, a refused option) is said by rank 0
/// alone and every process exits with its code; a failure of some processes only is said by
/// each of them and ends the job (the others would wait for them). Every process calls it.
fn one_voice<T>(m: &Mpi, r: Result<T, Failure>) -> Result<T, Failure> {
    let key = match &r {
        Ok(_) => 0,
        Err(f) => knudsen::config::fnv1a(&format!("{} {}", f.code(), f.message())).max(1),
    };
    if m.all_agree(key) {
        let Err(f) = r else { return r };
        if m.rank == 0 {
            say(format!("{}\n", f.message()));
        }
        // The launcher ends the job when the first process exits with an error: the others
        // wait until rank 0 has said it.
        m.barrier();
        return Err(Failure::Said(f.code()));
    }
    match r {
        // Ended by the failing processes' abort, at the latest in its next sum.
        Ok(v) => Ok(v),
        Err(f) => {
            say(format!("rank {} of {} failed:\n{}\n", m.rank, m.ranks, f.message()));
            m.abort(i32::from(f.code()))
        }
    }
}

/// One message on stderr in one write: `eprintln!` writes its pieces one by one, and Open
/// MPI's abort notice (from another process, on the same stream) once landed between "rank 0"
/// and " of 3 failed" (tests/mpi.rs).
fn say(line: String) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// What the processes of one MPI run must share: the case's solution-shaping keys (as a
/// restart compares them), the stop and the path (tolerance, iterations, acceleration,
/// partner relaxation, coarse start, stall rule) and what they continue. Precision, backend,
/// memory budget and output may differ between processes (MPMD launches).
fn run_fingerprint(cfg: &Config, resume: &Resume) -> u64 {
    let s = &cfg.solver;
    let text = format!(
        "{}|{:e}|{}|{}|{:?}|{}|{}|{:?}|{}",
        cfg.state_hash(),
        s.tolerance,
        s.max_iterations,
        s.acceleration.name(),
        s.partner_relaxation,
        s.coarse_grids,
        s.stall_sweeps,
        resume.from,
        resume.force
    );
    knudsen::config::fnv1a(&text)
}
