//! `knudsen slice DIR --field F --axis A --at X --out FILE`: one cell plane as CSV;
//! `knudsen line DIR --field F --along A --through P,Q --out FILE`: one line as CSV;
//! `knudsen line DIR --field F --from X,Y,Z --to X,Y,Z [--points N] --out FILE`: a segment.

use super::failure::Failure;
use std::path::Path;

pub fn slice(result: &Path, field: &str, axis: &str, at: f64, out: &Path) -> Result<(), Failure> {
    check_out(out)?;
    knudsen::output::write_plane_csv(result, field, axis, at, out).map_err(failure)
}

/// An `--out` that cannot take a file is the request's fault (exit 2), found before reading.
fn check_out(out: &Path) -> Result<(), Failure> {
    if out.is_dir() {
        return Err(Failure::BadInput(format!("--out {}: is a directory; name a file", out.display())));
    }
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !folder.is_dir() {
        return Err(Failure::BadInput(format!(
            "--out {}: the folder {} does not exist",
            out.display(),
            folder.display()
        )));
    }
    Ok(())
}

/// A request the result cannot answer is bad input (exit 2); anything else a failure.
fn failure(e: anyhow::Error) -> Failure {
    if e.downcast_ref::<knudsen::output::BadRequest>().is_some() {
        Failure::BadInput(format!("{e:#}"))
    } else {
        Failure::Run(e)
    }
}

pub fn line(result: &Path, field: &str, along: &str, through: &[f64], out: &Path) -> Result<(), Failure> {
    let along = ["x", "y", "z"].iter().position(|&a| a == along).expect("clap allows x, y, z");
    let &[p, q] = through else {
        return Err(Failure::BadInput(format!("--through takes two coordinates, got {}", through.len())));
    };
    check_out(out)?;
    knudsen::output::write_line_csv(result, field, along, [p, q], out).map_err(failure)
}

/// Points along a segment when `--points` is not given: 201, every half percent of it.
pub const SEGMENT_POINTS: usize = 201;
/// The most points a segment takes: a million rows, about 0.1 GB of CSV for a stress field.
pub const MAX_SEGMENT_POINTS: usize = 1_000_000;

pub fn segment(
    result: &Path,
    field: &str,
    ends: [&[f64]; 2],
    points: Option<usize>,
    out: &Path,
) -> Result<(), Failure> {
    let end = |v: &[f64], name: &str| -> Result<[f64; 3], Failure> {
        match *v {
            [x, y, z] if [x, y, z].iter().all(|c| c.is_finite()) => Ok([x, y, z]),
            [_, _, _] => Err(Failure::BadInput(format!("--{name}: coordinates must be finite numbers, got {v:?}"))),
            _ => Err(Failure::BadInput(format!("--{name} takes three coordinates x,y,z, got {}", v.len()))),
        }
    };
    let (from, to) = (end(ends[0], "from")?, end(ends[1], "to")?);
    let points = points.unwrap_or(SEGMENT_POINTS);
    if points < 2 {
        return Err(Failure::BadInput(format!("--points {points}: a segment needs at least 2")));
    }
    // The CSV is built in memory before its atomic write: a bound, not an allocation failure.
    if points > MAX_SEGMENT_POINTS {
        return Err(Failure::BadInput(format!("--points {points}: at most {MAX_SEGMENT_POINTS}")));
    }
    check_out(out)?;
    knudsen::output::write_segment_csv(result, field, from, to, points, out).map_err(failure)
}
