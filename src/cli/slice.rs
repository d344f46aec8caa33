//! `knudsen slice DIR --field F --axis A --at X --out FILE`: one cell plane as CSV.

use super::failure::Failure;
use std::path::Path;

pub fn slice(result: &Path, field: &str, axis: &str, at: f64, out: &Path) -> Result<(), Failure> {
    knudsen::output::write_plane_csv(result, field, axis, at, out).map_err(Failure::Run)
}
