//! Where a run writes, and making sure it can before the solve starts.

use knudsen::config::Config;
use std::path::{Path, PathBuf};

/// `--out`, else the case's `output.dir`, else `out/<config file stem>`.
pub fn output_dir(path: &Path, cfg: &Config, out: Option<PathBuf>) -> PathBuf {
    out.or_else(|| cfg.output.dir.as_ref().map(PathBuf::from)).unwrap_or_else(|| {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "case".into());
        PathBuf::from("out").join(stem)
    })
}

/// Make sure results can be written before spending time on the solve: create the
/// directory, write and remove a probe file in it, and find no directory under a result's
/// name. The directories made for the probe go again: the first file written makes them
/// anew (`knudsen::output::make_dir`), so that a run ended from outside before it wrote anything (an
/// MPI job aborted by another process's failure) leaves no empty directory behind.
pub fn probe_output_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("output path {} exists and is not a directory", dir.display()));
    }
    let made = missing_dirs(dir);
    let probed = probe(dir);
    remove_made_dirs(&made);
    probed
}

fn probe(dir: &Path) -> Result<(), String> {
    knudsen::output::make_dir(dir).map_err(|e| format!("{e:#}"))?;
    let probe = dir.join(format!(".knudsen-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write to output directory {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    // A result's final name taken by a directory would fail the rename after the solve.
    for name in knudsen::output::RESULT_FILES {
        let p = dir.join(name);
        if p.is_dir() {
            return Err(format!("{} is a directory; the run writes a file there", p.display()));
        }
    }
    Ok(())
}

/// The directories `probe_output_dir` would make for `dir`, the deepest first: `dir` and each
/// missing parent, so that a run stopped before writing can remove what it made.
pub fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    dir.ancestors().filter(|p| !p.as_os_str().is_empty()).take_while(|p| !p.exists()).map(Path::to_path_buf).collect()
}

/// Remove the directories of [`missing_dirs`], the deepest first, each only while empty.
pub fn remove_made_dirs(made: &[PathBuf]) {
    for d in made {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
    }
}
