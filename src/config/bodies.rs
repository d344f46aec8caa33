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

/// Refuse bodies that leave no gas cell: the union of the boxes, on the grid compressed to
/// their faces (at most 2 B + 1 slabs per axis for B bodies), covers every compressed cell.
/// Such a case has nothing to solve (its moments and residuals are NaN).
pub fn check_gas_left(bodies: &[BodyConfig], faces: &[Vec<f64>; 3]) -> Result<(), ConfigError> {
    if bodies.is_empty() {
        return Ok(());
    }
    // Per axis, the sorted face indices where some body begins or ends, with the grid's ends.
    let cuts: [Vec<usize>; 3] = std::array::from_fn(|d| {
        let n = faces[d].len() - 1;
        let mut c: Vec<usize> = bodies
            .iter()
            .flat_map(|b| [face_index(&faces[d], b.min[d]), face_index(&faces[d], b.max[d])])
            .flatten()
            .chain([0, n])
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    });
    let index = |d: usize, c: f64| face_index(&faces[d], c).unwrap_or(0);
    let covered = |lo: [usize; 3]| {
        bodies.iter().any(|b| (0..3).all(|d| index(d, b.min[d]) <= lo[d] && lo[d] < index(d, b.max[d])))
    };
    for &x in &cuts[0][..cuts[0].len() - 1] {
        for &y in &cuts[1][..cuts[1].len() - 1] {
            for &z in &cuts[2][..cuts[2].len() - 1] {
                if !covered([x, y, z]) {
                    return Ok(());
                }
            }
        }
    }
    Err(ConfigError::new("bodies", "the bodies fill the whole domain: no gas cell is left"))
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
        v.check_fits(&format!("{key}.velocity"), body.velocity, body.temperature)?;
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
