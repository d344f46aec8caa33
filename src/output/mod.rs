//! Results on disk (`docs/output.md`): `fields.h5` + `fields.xmf`, `residuals.csv`,
//! `summary.json`. Every file is written to a temporary name in the output directory and
//! renamed into place, so a reader never sees a half-written result under its final name.

mod atomic;
mod csv;
mod fields;
mod restart;
mod summary;
mod xdmf;

pub use atomic::{write_atomic, write_atomic_bytes};
pub use fields::{compare_fields, write_fields, write_plane_csv};
pub use restart::{read_restart, restart_file, stored_config};
pub use summary::{Summary, SummaryInput};

use crate::problem::Problem;
use crate::solver::RunResult;
use std::path::Path;

/// Write every result file of a finished run into `dir` (created if needed).
pub fn write_all(dir: &Path, problem: &Problem, result: &RunResult, summary: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    write_fields(&dir.join("fields.h5"), problem, result)?;
    write_atomic_bytes(
        &dir.join("fields.xmf"),
        xdmf::fields_xdmf("fields.h5", &problem.grid, problem.bodies.solids.any(), problem.bodies.solids.walls.len())
            .as_bytes(),
    )?;
    write_atomic_bytes(&dir.join("residuals.csv"), csv::residuals_csv(&result.history).as_bytes())?;
    write_atomic_bytes(&dir.join("summary.json"), serde_json::to_string_pretty(summary)?.as_bytes())?;
    Ok(())
}
