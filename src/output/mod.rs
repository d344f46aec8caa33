//! Results on disk (`docs/output.md`): `fields.h5` + `fields.xmf`, `residuals.csv`,
//! `summary.json`. Every file is written to a temporary name in the output directory and
//! renamed into place, so a reader never sees a half-written result under its final name.

mod atomic;
mod cell_field;
mod csv;
mod fields;
mod line;
mod restart;
mod summary;
mod xdmf;

pub use atomic::{write_atomic, write_atomic_bytes};
pub use cell_field::{BadRequest, CellField};
pub use fields::{compare_fields, write_fields, write_plane_csv};
pub use line::{write_line_csv, write_segment_csv};
pub use restart::{read_restart, restart_file, stored_config};
pub use summary::{Summary, SummaryInput};

use crate::problem::Problem;
use crate::solver::RunResult;
use std::path::Path;

/// The names a run writes in its output directory (`write_all`, and the checkpoint).
pub const RESULT_FILES: [&str; 5] = ["fields.h5", "fields.xmf", "residuals.csv", "summary.json", "checkpoint.h5"];

/// Open the result at `path`: a `fields.h5` file, or the output directory holding one. What
/// is not there is said in words (not as HDF5's "unable to open file"), as a [`BadRequest`]:
/// the caller's request gone wrong, not a failure.
pub fn open_result(path: &Path) -> anyhow::Result<hdf5::File> {
    let bad = |what: String| anyhow::Error::new(BadRequest(what));
    if !path.exists() {
        return Err(bad(format!("{}: no such file or directory", path.display())));
    }
    let file = if path.is_dir() { path.join("fields.h5") } else { path.to_path_buf() };
    if !file.exists() {
        let only = if path.join("checkpoint.h5").exists() {
            " (only a checkpoint.h5: the run did not finish; `knudsen run --restart` continues it)"
        } else {
            ""
        };
        return Err(bad(format!("{} holds no fields.h5, so no result{only}", path.display())));
    }
    hdf5::File::open(&file).map_err(|_| bad(format!("{}: not a readable HDF5 result", file.display())))
}

/// Remove a `summary.json` an earlier run left in `dir`, before this run writes anything
/// there (its results, or its first checkpoint): a summary vouches for the files beside it.
pub fn remove_summary(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("summary.json");
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            anyhow::bail!("cannot remove the earlier run's {}: {e}", path.display())
        }
        _ => Ok(()),
    }
}

/// `create_dir_all`, tried again where a parent it made went before the child was made:
/// another run's output check removes the parents it made while empty (`knudsen run`), and
/// two runs into siblings under a new parent may meet there.
pub fn make_dir(dir: &Path) -> anyhow::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::create_dir_all(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 5 => tries += 1,
            Err(e) => anyhow::bail!("cannot create output directory {}: {e}", dir.display()),
            Ok(()) => return Ok(()),
        }
    }
}

/// Write every result file of a finished run into `dir` (created if needed). An earlier
/// run's `summary.json` goes first and the new one is written last, so that a summary never
/// stands beside files it does not describe, even if a write in between fails.
pub fn write_all(dir: &Path, problem: &Problem, result: &RunResult, summary: &Summary) -> anyhow::Result<()> {
    make_dir(dir)?;
    let summary_path = dir.join("summary.json");
    remove_summary(dir)?;
    write_fields(&dir.join("fields.h5"), problem, result)?;
    write_atomic_bytes(
        &dir.join("fields.xmf"),
        xdmf::fields_xdmf("fields.h5", &problem.grid, problem.bodies.solids.any(), problem.bodies.solids.walls.len())
            .as_bytes(),
    )?;
    write_atomic_bytes(&dir.join("residuals.csv"), csv::residuals_csv(&result.history).as_bytes())?;
    write_atomic_bytes(&summary_path, serde_json::to_string_pretty(summary)?.as_bytes())?;
    Ok(())
}
