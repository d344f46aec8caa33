//! `knudsen compare A B`: relative L2 difference of each field of two results.

use super::failure::Failure;
use std::path::Path;

pub fn compare(a: &Path, b: &Path) -> Result<(), Failure> {
    // Results on grids that do not coincide are a bad request (exit 2), not a failure.
    let d = knudsen::output::compare_fields(a, b).map_err(|e| {
        if e.downcast_ref::<knudsen::output::BadRequest>().is_some() {
            Failure::BadInput(format!("{e:#}"))
        } else {
            Failure::Run(e)
        }
    })?;
    println!("relative L2 difference ||a - b|| / ||b|| per field ({} vs {}):", a.display(), b.display());
    for (name, x) in d {
        println!("  {name:<12} {x:.3e}");
    }
    Ok(())
}
