//! Results on disk (`docs/output.md`): `fields.h5` + `fields.xmf`, `residuals.csv`,
//! `summary.json`. Every file is written to a temporary name in the output directory and
//! renamed into place, so a reader never sees a half-written result under its final name.

mod atomic;
mod csv;
mod fields;
mod line;
mod restart;
mod summary;
mod xdmf;

pub use atomic::{write_atomic, write_atomic_bytes};
pub use fields::{compare_fields, write_fields, write_plane_csv};
pub use line::write_line_csv;
pub use restart::{read_restart, restart_file, stored_config};
pub use summary::{Summary, SummaryInput};

use crate::problem::Problem;

/// What a command that reads a result was asked for and cannot give (no such file or field,
/// a point outside the grid): the request is at fault, not the run; the CLI exits 2.
#[derive(Debug)]
pub struct BadRequest(pub String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadRequest {}

/// The result file `result` names (fields.h5 or its directory), opened; a file that cannot
/// be opened is a [`BadRequest`].
pub fn open_result(result: &Path) -> anyhow::Result<hdf5::File> {
    let f = if result.is_dir() { result.join("fields.h5") } else { result.to_path_buf() };
    hdf5::File::open(&f).map_err(|e| BadRequest(format!("opening {}: {e}", f.display())).into())
}

/// The cell field `name` of a result, shaped (nz, ny, nx[, components]); a missing one, or a
/// dataset of another shape (the coordinates, the restart group's), is a [`BadRequest`].
pub fn result_field(file: &hdf5::File, name: &str) -> anyhow::Result<hdf5::Dataset> {
    let ds = file.dataset(name).map_err(|_| BadRequest(format!("{}: no field `{name}`", file.filename())))?;
    let len = |a: &str| file.dataset(a).map(|d| d.size()).unwrap_or(0);
    let cells = [len("z"), len("y"), len("x")];
    let shape = ds.shape();
    if !(shape.len() == 3 || shape.len() == 4) || shape[..3] != cells {
        return Err(BadRequest(format!(
            "{}: `{name}` is not a cell field (shape {shape:?}, cells {cells:?})",
            file.filename()
        ))
        .into());
    }
    Ok(ds)
}
use crate::solver::RunResult;
use std::path::Path;

/// Write every result file of a finished run into `dir` (created if needed). An earlier
/// run's `summary.json` goes first and the new one is written last, so that a summary never
/// stands beside files it does not describe, even if a write in between fails.
pub fn write_all(dir: &Path, problem: &Problem, result: &RunResult, summary: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    let summary_path = dir.join("summary.json");
    match std::fs::remove_file(&summary_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            anyhow::bail!("cannot remove the earlier run's {}: {e}", summary_path.display())
        }
        _ => {}
    }
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
