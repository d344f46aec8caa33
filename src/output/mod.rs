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

/// Write every result file of a finished run into `dir` (created if needed). An earlier
/// run's `summary.json` goes first and the new one is written last, so that a summary never
/// stands beside files it does not describe, even if a write in between fails.
pub fn write_all(dir: &Path, problem: &Problem, result: &RunResult, summary: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
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
