//! Continuing a run (`--restart DIR`), and stopping one cleanly on SIGINT, SIGTERM or
//! SIGUSR1.

use super::failure::Failure;
use super::LOG;
use knudsen::problem::Problem;
use knudsen::solver::Restart;
use std::path::{Path, PathBuf};

/// `--restart DIR` and `--force`.
pub struct Resume {
    pub from: Option<PathBuf>,
    pub force: bool,
}
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

/// The state in `dir` (or the file `dir` names), refused when its case differs from
/// `problem`'s in a key that shapes the solution, unless `force`.
pub fn load_restart(dir: &Path, problem: &Problem, force: bool) -> Result<Restart, Failure> {
    let bad = |e: anyhow::Error| Failure::BadInput(format!("--restart {}: {e:#}", dir.display()));
    let mut file = knudsen::output::restart_file(dir).map_err(bad)?;
    let stored = knudsen::output::stored_config(&file).map_err(bad)?;
    let mut changed = problem.config.state_changes(&stored);
    // A directory may hold an earlier case's fields.h5 beside this case's checkpoint (a run
    // of another case killed there, or the reverse): the file this case wrote is the one to
    // continue, even with fewer iterations.
    if !changed.is_empty() && dir.is_dir() {
        let other = ["fields.h5", "checkpoint.h5"].map(|n| dir.join(n)).into_iter().find(|p| *p != file && p.exists());
        if let Some(other) = other {
            let fits =
                knudsen::output::stored_config(&other).is_ok_and(|s| problem.config.state_changes(&s).is_empty());
            if fits {
                log::info!(target: LOG, "{} was written by another case; {} by this one", file.display(), other.display());
                file = other;
                changed.clear();
            }
        }
    }
    if !changed.is_empty() {
        if !force {
            // --force continues a changed case, never another grid or bodies: offered only
            // where the state would load.
            let hint = match knudsen::output::read_restart(&file, problem) {
                Ok(_) => "add --force to continue anyway".to_string(),
                Err(e) => format!("--force cannot continue it either: {e:#}"),
            };
            return Err(Failure::BadInput(format!(
                "--restart {}: the case differs from the one that wrote {} in {}; {hint}",
                dir.display(),
                file.display(),
                changed.join(", ")
            )));
        }
        log::warn!(target: LOG, "--force: continuing {} although the case changed in {}", file.display(), changed.join(", "));
    }
    log::info!(target: LOG, "continuing from {}", file.display());
    knudsen::output::read_restart(&file, problem).map_err(bad)
}

/// A flag that SIGINT sets to 130, SIGTERM to 143 and SIGUSR1 to 138 (128 + the signal: the
/// exit code shells expect). SIGUSR1 is for MPI runs: Open MPI's mpirun forwards it to every
/// process, where a Ctrl-C on mpirun reaches them as SIGTERM followed a second later by
/// SIGKILL (docs/parallel.md). A second signal while the first is being handled ends the
/// process at once, saying so, with the signal's code, for a user who does not want to wait
/// for the iteration to finish.
pub fn stop_on_signals() -> anyhow::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
    let stop = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicBool::new(false));
    for (sig, code) in [(SIGINT, 130), (SIGTERM, 143), (SIGUSR1, 138)] {
        // A second signal ends the process at once, saying so (a launcher such as GNU
        // `timeout` may send two at once: the process and its group), with the signal's code.
        let again: &'static [u8] = match sig {
            SIGINT => b"knudsen: a second SIGINT: ending at once (results and checkpoints already written stay)\n",
            SIGTERM => b"knudsen: a second SIGTERM: ending at once (results and checkpoints already written stay)\n",
            _ => b"knudsen: a second SIGUSR1: ending at once (results and checkpoints already written stay)\n",
        };
        let seen = asked.clone();
        // SAFETY: the action only loads an atomic and calls write(2) and _exit(2), both
        // async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if seen.load(std::sync::atomic::Ordering::SeqCst) {
                    libc::write(2, again.as_ptr().cast(), again.len());
                    libc::_exit(code as i32);
                }
            })?;
        }
        signal_hook::flag::register(sig, asked.clone())?;
        signal_hook::flag::register_usize(sig, stop.clone(), code)?;
    }
    // Say at once that the signal was heard: an iteration of a large case takes minutes, and
    // the handler itself may not print. The thread ends with the process.
    let seen = stop.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let code = seen.load(std::sync::atomic::Ordering::SeqCst);
        if code != 0 {
            log::warn!(
                target: LOG,
                "{}: stopping after the current iteration (a second signal ends the process at once)",
                signal_name(code)
            );
            return;
        }
    });
    Ok(stop)
}

/// The name of the signal behind an exit code of [`stop_on_signals`].
pub fn signal_name(code: usize) -> &'static str {
    match code {
        143 => "SIGTERM",
        138 => "SIGUSR1",
        _ => "SIGINT",
    }
}

/// `s` as one word of a POSIX shell command line: as it is where it holds only characters no
/// shell treats specially, else in single quotes (a quote inside as '\''), so that the
/// printed command to continue a run pastes as it reads.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn paths_quote_where_a_shell_would_split_them() {
        assert_eq!(shell_word("out/cavity-quick"), "out/cavity-quick");
        assert_eq!(shell_word("sp dir/my case.json"), "'sp dir/my case.json'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
    }
}
