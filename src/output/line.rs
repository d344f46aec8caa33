//! A field along a line parallel to an axis (`knudsen line`): the profiles papers plot
//! against DSMC, such as U_x on a cavity's vertical centre line. The line rarely runs through
//! cell centres (an even cell count puts the centre plane on a face), so the value at each
//! cell centre along it is interpolated bilinearly from the four cell rows around it:
//!
//! ```text
//! f(s; u, v) = (1 - a)(1 - b) f[i0, j0] + a (1 - b) f[i1, j0] + (1 - a) b f[i0, j1] + a b f[i1, j1],
//! a = (u - u_i0) / (u_i1 - u_i0),   b = (v - v_j0) / (v_j1 - v_j0),
//! ```
//!
//! with (u, v) the line's transverse coordinates and u_i0 <= u <= u_i1 neighbouring cell
//! centres. Between the outermost centre and the boundary face the nearest row is taken as
//! it is (the cell value, which is what a finite-volume field holds there). A solid cell
//! among the four with a weight above zero gives NaN.

use super::write_atomic_bytes;
use std::path::Path;

/// The neighbouring centres around `p` and the weight of the upper one, or why `p` lies
/// outside the faces.
pub fn bracket(centres: &[f64], faces: &[f64], p: f64) -> Result<(usize, usize, f64), String> {
    let (lo, hi) = (faces[0], faces[faces.len() - 1]);
    if !(lo..=hi).contains(&p) {
        return Err(format!("{p} lies outside the grid's faces [{lo}, {hi}]"));
    }
    let last = centres.len() - 1;
    if p <= centres[0] {
        return Ok((0, 0, 0.0));
    }
    if p >= centres[last] {
        return Ok((last, last, 0.0));
    }
    // The first centre above p; centres increase strictly.
    let i1 = centres.partition_point(|&c| c <= p);
    let i0 = i1 - 1;
    Ok((i0, i1, (p - centres[i0]) / (centres[i1] - centres[i0])))
}

/// Write `name` along the axis `along` (0, 1, 2 = x, y, z) through the transverse point
/// `through` (the other two coordinates in x, y, z order) of the result `result` (fields.h5
/// or its directory) as CSV: the centre coordinate along the line, then the components.
pub fn write_line_csv(result: &Path, name: &str, along: usize, through: [f64; 2], out: &Path) -> anyhow::Result<()> {
    let field = super::CellField::read(result, name)?;
    let (centres, comps) = (&field.centres, field.comps);
    let names = ["x", "y", "z"];
    let faces = [field.array("x_faces")?, field.array("y_faces")?, field.array("z_faces")?];
    let (u, v) = [(1, 2), (0, 2), (0, 1)][along];
    let at = |d: usize, p: f64| {
        bracket(&centres[d], &faces[d], p).map_err(|e| super::BadRequest(format!("--through: {} = {e}", names[d])))
    };
    let ((i0, i1, a), (j0, j1, b)) = (at(u, through[0])?, at(v, through[1])?);
    let value = |s: usize, i: usize, j: usize, c: usize| {
        let mut ijk = [0; 3];
        (ijk[along], ijk[u], ijk[v]) = (s, i, j);
        field.at(ijk, c)
    };
    let mut csv = format!(
        "# {name} along {} through {} = {}, {} = {} (bilinear between the cell rows {i0}-{i1} and {j0}-{j1})\n{}{}\n",
        names[along],
        names[u],
        through[0],
        names[v],
        through[1],
        names[along],
        field.columns(name)
    );
    for (s, coord) in centres[along].iter().enumerate() {
        csv.push_str(&coord.to_string());
        for c in 0..comps {
            // Terms of weight zero left out: a line through a fluid row beside a solid one
            // keeps its values.
            let f: f64 = [(1.0 - a) * (1.0 - b), a * (1.0 - b), (1.0 - a) * b, a * b]
                .into_iter()
                .zip([(i0, j0), (i1, j0), (i0, j1), (i1, j1)])
                .filter(|&(w, _)| w != 0.0)
                .map(|(w, (i, j))| w * value(s, i, j, c))
                .sum();
            csv.push_str(&format!(",{f}"));
        }
        csv.push('\n');
    }
    write_atomic_bytes(out, csv.as_bytes())
}

/// Write `name` at `points` equally spaced points of the segment `from` -> `to` (both ends
/// included) of the result `result` as CSV: the arc length from `from`, x, y, z, then the
/// components, trilinear between the eight cell centres around each point,
///
/// ```text
/// f(p) = sum over (i, j, k) in {i0, i1} x {j0, j1} x {k0, k1} of wx_i wy_j wz_k f[i, j, k],
/// ```
///
/// with the weights of `bracket` per axis (wx_i1 = a, wx_i0 = 1 - a): the profiles along
/// a cavity's diagonal that DSMC studies plot. Between the outermost centres and the faces
/// the nearest cells are taken as they are; a solid cell of weight above zero gives NaN.
pub fn write_segment_csv(
    result: &Path,
    name: &str,
    from: [f64; 3],
    to: [f64; 3],
    points: usize,
    out: &Path,
) -> anyhow::Result<()> {
    let field = super::CellField::read(result, name)?;
    let names = ["x", "y", "z"];
    let faces = [field.array("x_faces")?, field.array("y_faces")?, field.array("z_faces")?];
    let at = |d: usize, p: f64, end: &str| {
        bracket(&field.centres[d], &faces[d], p).map_err(|e| super::BadRequest(format!("--{end}: {} = {e}", names[d])))
    };
    for d in 0..3 {
        at(d, from[d], "from")?;
        at(d, to[d], "to")?;
    }
    let length = (0..3).map(|d| (to[d] - from[d]).powi(2)).sum::<f64>().sqrt();
    let mut csv = format!(
        "# {name} along the segment ({}, {}, {}) -> ({}, {}, {}), {points} points (trilinear between cell centres)\ns,x,y,z{}\n",
        from[0],
        from[1],
        from[2],
        to[0],
        to[1],
        to[2],
        field.columns(name)
    );
    for n in 0..points {
        let t = n as f64 / (points - 1) as f64;
        // Both ends exact (t = 1 gives `to` to the bit, so an end on a face stays on it), and
        // no rounding past the ends.
        let p: [f64; 3] = std::array::from_fn(|d| {
            let (lo, hi) = (from[d].min(to[d]), from[d].max(to[d]));
            ((1.0 - t) * from[d] + t * to[d]).clamp(lo, hi)
        });
        let w: Vec<(usize, usize, f64)> = (0..3).map(|d| at(d, p[d], "to")).collect::<Result<_, _>>()?;
        csv.push_str(&format!("{},{},{},{}", t * length, p[0], p[1], p[2]));
        for c in 0..field.comps {
            let mut f = 0.0;
            for corner in 0..8 {
                let pick = |d: usize| {
                    let (i0, i1, a) = w[d];
                    if corner >> d & 1 == 1 {
                        (i1, a)
                    } else {
                        (i0, 1.0 - a)
                    }
                };
                let [(i, wi), (j, wj), (k, wk)] = [pick(0), pick(1), pick(2)];
                // Terms of weight zero left out, as along an axis: a point beside a solid
                // cell keeps its value.
                if wi * wj * wk != 0.0 {
                    f += wi * wj * wk * field.at([i, j, k], c);
                }
            }
            csv.push_str(&format!(",{f}"));
        }
        csv.push('\n');
    }
    write_atomic_bytes(out, csv.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::bracket;

    #[test]
    fn points_between_centres_weigh_their_neighbours_and_edges_take_the_nearest_cell() {
        // Stretched cells: faces 0, 1, 3, 6; centres 0.5, 2, 4.5.
        let (faces, centres) = ([0.0, 1.0, 3.0, 6.0], [0.5, 2.0, 4.5]);
        assert_eq!(bracket(&centres, &faces, 2.0), Ok((1, 2, 0.0)));
        assert_eq!(bracket(&centres, &faces, 1.25), Ok((0, 1, 0.5)));
        assert_eq!(bracket(&centres, &faces, 4.0), Ok((1, 2, 0.8)));
        assert_eq!(bracket(&centres, &faces, 0.2), Ok((0, 0, 0.0)));
        assert_eq!(bracket(&centres, &faces, 6.0), Ok((2, 2, 0.0)));
        assert!(bracket(&centres, &faces, 6.5).unwrap_err().contains("outside"));
        assert!(bracket(&centres, &faces, f64::NAN).is_err());
    }
}
