//! `bodies`: solid axis-aligned boxes whose surfaces are diffuse walls.

use super::grid::face_index;
use super::{positive_finite, ConfigError, VelocityConfig};
use serde::{Deserialize, Serialize};

/// A solid axis-aligned box. Its faces must lie on cell faces of the grid.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub min: [f64; 3],
    pub max: [f64; 3],
    pub temperature: f64,
    /// Velocity of the body's surface (e.g. a belt); the wall density still makes the net
    /// mass flux through every surface face zero.
    #[serde(default)]
    pub velocity: [f64; 3],
}

/// Body surface faces are numbered in 25 bits of the GPU's per-cell wall word
/// (`crate::grid::solid`); more would run into its solid bit.
pub const MAX_WALL_FACES: usize = 1 << 25;

/// Refuse bodies whose surfaces could hold more than [`MAX_WALL_FACES`] cell faces, before
/// the solid mask is built. The count is the sum of the boxes' surfaces: overlapping or
/// touching boxes share faces, so the true count is never larger.
pub fn check_wall_faces(bodies: &[BodyConfig], faces: &[Vec<f64>; 3]) -> Result<(), ConfigError> {
    let mut total: u64 = 0;
    for b in bodies {
        let n: [u64; 3] = std::array::from_fn(|d| {
            let lo = face_index(&faces[d], b.min[d]).unwrap_or(0);
            let hi = face_index(&faces[d], b.max[d]).unwrap_or(lo);
            hi.saturating_sub(lo) as u64
        });
        total += 2 * (n[0] * n[1] + n[1] * n[2] + n[2] * n[0]);
    }
    if total > MAX_WALL_FACES as u64 {
        return Err(ConfigError::new(
            "bodies",
            format!("the body surfaces have up to {total} cell faces; at most {MAX_WALL_FACES} are supported"),
        ));
    }
    Ok(())
}

/// A body's cells along axis `d`, as the face indices [lo, hi) (unaligned planes, refused
/// before these checks, read as empty).
pub(super) fn cell_range(b: &BodyConfig, faces: &[Vec<f64>; 3], d: usize) -> (usize, usize) {
    let lo = face_index(&faces[d], b.min[d]).unwrap_or(0);
    (lo, face_index(&faces[d], b.max[d]).unwrap_or(lo))
}

/// Refuse bodies that leave no gas cell: the union of the boxes, on the grid compressed to
/// their faces (at most 2 B + 1 slabs per axis for B bodies), covers every compressed cell.
/// Such a case has nothing to solve (its moments and residuals are NaN).
pub fn check_gas_left(bodies: &[BodyConfig], faces: &[Vec<f64>; 3]) -> Result<(), ConfigError> {
    if bodies.is_empty() {
        return Ok(());
    }
    // Each body's cell range per axis, as face indices.
    let range = |b: &BodyConfig, d: usize| cell_range(b, faces, d);
    // Bodies holding fewer cells together than the grid leave gas, whatever their overlaps:
    // the common case, decided without the union.
    let cells: f64 = (0..3).map(|d| (faces[d].len() - 1) as f64).product();
    let held: f64 =
        bodies.iter().map(|b| (0..3).map(|d| range(b, d)).map(|(lo, hi)| (hi - lo) as f64).product::<f64>()).sum();
    if held < cells {
        return Ok(());
    }
    // Per axis, the sorted face indices where some body begins or ends, with the grid's ends.
    let cuts: [Vec<usize>; 3] = std::array::from_fn(|d| {
        let mut c: Vec<usize> =
            bodies.iter().flat_map(|b| <[usize; 2]>::from(range(b, d))).chain([0, faces[d].len() - 1]).collect();
        c.sort_unstable();
        c.dedup();
        c
    });
    // Each body's range of compressed cells per axis.
    let n: [usize; 3] = std::array::from_fn(|d| cuts[d].len() - 1);
    let boxes: Vec<[(usize, usize); 3]> = bodies
        .iter()
        .map(|b| {
            std::array::from_fn(|d| {
                let (lo, hi) = range(b, d);
                (cuts[d].partition_point(|&c| c < lo), cuts[d].partition_point(|&c| c < hi))
            })
        })
        .collect();
    if covers_all(&boxes, n, 1 << 27) {
        return Err(ConfigError::new("bodies", "the bodies fill the whole domain: no gas cell is left"));
    }
    Ok(())
}

/// Whether boxes (ranges of compressed cells per axis) cover all `n` compressed cells. Painted
/// once where up to `paint_limit` cells fit (tiling bodies cover a few each); beyond it
/// (thousands of overlapping bodies with distinct faces) each cell is tested until one is
/// gas, slow only where the bodies do fill the domain.
fn covers_all(boxes: &[[(usize, usize); 3]], n: [usize; 3], paint_limit: usize) -> bool {
    let count = n[0].saturating_mul(n[1]).saturating_mul(n[2]);
    if count <= paint_limit {
        let mut solid = vec![false; count];
        for r in boxes {
            for z in r[2].0..r[2].1 {
                for y in r[1].0..r[1].1 {
                    solid[(z * n[1] + y) * n[0] + r[0].0..(z * n[1] + y) * n[0] + r[0].1].fill(true);
                }
            }
        }
        return solid.iter().all(|&s| s);
    }
    let inside = |c: [usize; 3]| boxes.iter().any(|r| (0..3).all(|d| r[d].0 <= c[d] && c[d] < r[d].1));
    (0..n[2]).all(|z| (0..n[1]).all(|y| (0..n[0]).all(|x| inside([x, y, z]))))
}

/// Refuse a body that ends on a periodic face where the gas across the wrap is not solid
/// too. The sweep finds a body's wall faces within the box and does not wrap them across a
/// periodic face, so the gas cell beside such a face would take its inflow from the partner
/// data of a solid cell (nothing) instead of the wall's emission: an absorbing face, missing
/// from the loads as well. A body that continues across the wrap (the same cross-section on
/// the other side, as a body split in two boxes there) has no gas cell there, and passes.
pub fn check_periodic_wrap(
    bodies: &[BodyConfig],
    faces: &[Vec<f64>; 3],
    periodic: [bool; 3],
) -> Result<(), ConfigError> {
    let range = |b: &BodyConfig, d: usize| cell_range(b, faces, d);
    for d in (0..3).filter(|&d| periodic[d]) {
        let last = faces[d].len() - 2;
        // Only bodies holding a cell of either end layer matter.
        let at_end: Vec<(usize, &BodyConfig)> = bodies
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                let (lo, hi) = range(b, d);
                lo == 0 || hi == last + 1
            })
            .collect();
        if at_end.is_empty() {
            continue;
        }
        let [a, c] = [(d + 1) % 3, (d + 2) % 3];
        // The cross-section compressed to the end bodies' faces: each compressed cell is
        // solid or not as a whole, so its first cell stands for it.
        let starts = |e: usize| {
            let mut v: Vec<usize> =
                at_end.iter().flat_map(|(_, b)| <[usize; 2]>::from(range(b, e))).chain([0]).collect();
            v.retain(|&i| i < faces[e].len() - 1);
            v.sort_unstable();
            v.dedup();
            v
        };
        let holder = |layer: usize, ia: usize, ic: usize| {
            at_end.iter().find(|(_, b)| {
                let inside = |e: usize, i: usize| {
                    let (lo, hi) = range(b, e);
                    lo <= i && i < hi
                };
                inside(d, layer) && inside(a, ia) && inside(c, ic)
            })
        };
        for &ia in &starts(a) {
            for &ic in &starts(c) {
                let (low, high) = (holder(0, ia, ic), holder(last, ia, ic));
                if let Some(&(i, _)) = low.xor(high) {
                    let axis = ["x", "y", "z"][d];
                    let (on, across) = if low.is_some() { ("min", "max") } else { ("max", "min") };
                    return Err(ConfigError::new(
                        format!("bodies[{i}]"),
                        format!(
                            "ends on the periodic face {axis}_{on}, and the gas across the wrap (at {axis}_{across}) would meet it without a wall (a wall across a periodic face is not modelled): move the body off the face, or continue it across the wrap with a box of the same cross-section at {axis}_{across}"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

impl BodyConfig {
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("body{index}"))
    }

    /// Check body `b` against the velocity grid and the grid's face coordinates per axis.
    /// Lowers `t_min` to the body's temperature.
    pub fn validate(
        &self,
        b: usize,
        v: &VelocityConfig,
        faces: &[Vec<f64>; 3],
        t_min: &mut f64,
    ) -> Result<(), ConfigError> {
        let (key, body) = (format!("bodies[{b}]"), self);
        positive_finite(&format!("{key}.temperature"), body.temperature)?;
        if body.velocity.iter().any(|c| !c.is_finite()) {
            return Err(ConfigError::new(format!("{key}.velocity"), "must be finite"));
        }
        v.check_fits(&format!("the body {key}"), body.velocity, body.temperature)?;
        *t_min = t_min.min(body.temperature);
        for (d, axis) in faces.iter().enumerate() {
            let an = ["x", "y", "z"][d];
            let (lo, hi) = (body.min[d], body.max[d]);
            if !(lo.is_finite() && hi.is_finite() && hi > lo) {
                return Err(ConfigError::new(
                    format!("{key}.max"),
                    format!("{an}: max must exceed min ({hi} <= {lo})"),
                ));
            }
            let (d0, d1) = (axis[0], *axis.last().unwrap());
            if lo < d0 || hi > d1 {
                return Err(ConfigError::new(
                    key.clone(),
                    format!("{an} extent [{lo}, {hi}] leaves the domain [{d0}, {d1}]"),
                ));
            }
            for (what, c) in [("min", lo), ("max", hi)] {
                if face_index(axis, c).is_none() {
                    let near = axis.iter().cloned().min_by(|p, q| (p - c).abs().total_cmp(&(q - c).abs())).unwrap();
                    return Err(ConfigError::new(
                        format!("{key}.{what}"),
                        format!("{an} = {c} is not on a cell face of grid.{an} (nearest face {near}); bodies are not approximated, align the grid with them"),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::grid::uniform_faces;

    fn cube(i: usize, j: usize, k: usize, h: f64) -> BodyConfig {
        let at = |n: usize| n as f64 * h;
        BodyConfig {
            name: None,
            min: [at(i), at(j), at(k)],
            max: [at(i + 1), at(j + 1), at(k + 1)],
            temperature: 1.0,
            velocity: [0.0; 3],
        }
    }

    #[test]
    fn thousands_of_tiling_bodies_are_checked_by_their_union() {
        // 12^3 one-cell bodies on a 12^3 grid fill it; without the last one a cell is gas.
        // (The union is painted once: enumerating boxes against every body took 1728^2 tests.)
        let n = 12;
        let h = 1.0 / n as f64;
        let faces: [Vec<f64>; 3] = std::array::from_fn(|_| uniform_faces(0.0, 1.0, n));
        let mut bodies: Vec<BodyConfig> = (0..n * n * n).map(|c| cube(c % n, (c / n) % n, c / (n * n), h)).collect();
        assert!(check_gas_left(&bodies, &faces).is_err());
        let last = bodies.remove(700);
        assert!(check_gas_left(&bodies, &faces).is_ok());
        // A duplicate brings the bodies' cells back to the grid's count: the union still
        // leaves the removed cell gas.
        bodies.push(bodies[0].clone());
        assert!(check_gas_left(&bodies, &faces).is_ok());
        bodies.push(last);
        assert!(check_gas_left(&bodies, &faces).is_err());
    }

    #[test]
    fn the_union_without_room_to_paint_is_tested_cell_by_cell() {
        // The same answers from both ways of covers_all: two slabs filling a 3 x 2 x 1 grid,
        // then with a gap.
        let slabs = [[(0, 2), (0, 2), (0, 1)], [(1, 3), (0, 2), (0, 1)]];
        let gap = [[(0, 1), (0, 2), (0, 1)], [(2, 3), (0, 2), (0, 1)]];
        for limit in [0, 1 << 27] {
            assert!(covers_all(&slabs, [3, 2, 1], limit));
            assert!(!covers_all(&gap, [3, 2, 1], limit));
        }
    }
}
