//! A moving body's surface must move within itself: the check on `bodies[i].velocity`.
//!
//! The diffuse wall emits a Maxwellian drifting with the wall's velocity, and its density
//! makes the net mass flux through each face zero. That is a steady wall only where the
//! velocity is tangential to the face: a box face moving along its normal would be a
//! surface that advances into the gas, which no steady solution holds (the boundary faces
//! refuse a normal velocity for the same reason: `boundaries.rs`). A box has faces normal to
//! every axis, so a body may move along an axis only where it has no face against gas
//! normal to that axis: it reaches across the domain that way (to walls or symmetry planes,
//! or on across a periodic wrap), as a belt, a rod or a plate does, or other bodies cover
//! those faces.

use super::bodies::{cell_range, BodyConfig};
use super::ConfigError;

/// Refuse a body with a velocity component along an axis where one of its faces normal to
/// that axis meets gas. A cell in several boxes belongs to the first (`grid/solid.rs`), so a
/// face counts for the body that owns its solid cell. Faces on the domain's boundary meet no
/// gas; those on a periodic face continue across the wrap (`check_periodic_wrap`, run first).
pub fn check_tangential(bodies: &[BodyConfig], faces: &[Vec<f64>; 3]) -> Result<(), ConfigError> {
    let range = |b: &BodyConfig, d: usize| cell_range(b, faces, d);
    let inside = |b: &BodyConfig, cell: [usize; 3]| {
        (0..3).all(|d| {
            let (lo, hi) = range(b, d);
            lo <= cell[d] && cell[d] < hi
        })
    };
    for (i, body) in bodies.iter().enumerate() {
        for d in (0..3).filter(|&d| body.velocity[d] != 0.0) {
            let [a, c] = [(d + 1) % 3, (d + 2) % 3];
            let (lo, hi) = range(body, d);
            // The body's cross-section compressed to every body's faces: each compressed cell
            // is inside or outside each box as a whole, so its first cell stands for it.
            let starts = |e: usize| {
                let (blo, bhi) = range(body, e);
                let mut v: Vec<usize> = bodies
                    .iter()
                    .flat_map(|o| <[usize; 2]>::from(range(o, e)))
                    .chain([blo])
                    .filter(|&k| blo <= k && k < bhi)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            // (the body's layer, the layer across its face, the face's coordinate)
            let mut sides = Vec::new();
            if lo > 0 {
                sides.push((lo, lo - 1, body.min[d]));
            }
            if hi < faces[d].len() - 1 {
                sides.push((hi - 1, hi, body.max[d]));
            }
            for (own, across, plane) in sides {
                for &ia in &starts(a) {
                    for &ic in &starts(c) {
                        let cell = |layer: usize| {
                            let mut x = [0; 3];
                            (x[d], x[a], x[c]) = (layer, ia, ic);
                            x
                        };
                        let owned = !bodies[..i].iter().any(|o| inside(o, cell(own)));
                        let gas = !bodies.iter().any(|o| inside(o, cell(across)));
                        if owned && gas {
                            let axis = ["x", "y", "z"][d];
                            return Err(ConfigError::new(
                                format!("bodies[{i}].velocity"),
                                format!(
                                    "component {axis} must be 0: the body's face at {axis} = {plane} meets gas, and a wall moves only tangentially to itself; a body moving along {axis} must reach across the domain along {axis} (to walls, symmetry planes or across a periodic wrap), as a belt or a plate does"
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::grid::uniform_faces;

    fn body(min: [f64; 3], max: [f64; 3], velocity: [f64; 3]) -> BodyConfig {
        BodyConfig { name: None, min, max, temperature: 1.0, velocity }
    }

    #[test]
    fn a_body_moves_only_along_axes_it_spans() {
        let faces: [Vec<f64>; 3] = std::array::from_fn(|_| uniform_faces(0.0, 1.0, 4));
        let check = |b: &[BodyConfig]| check_tangential(b, &faces);
        // A box inside the gas, still: fine; moving along y: its y faces advance into the gas.
        assert!(check(&[body([0.25; 3], [0.75; 3], [0.0; 3])]).is_ok());
        let e = check(&[body([0.25; 3], [0.75; 3], [0.0, 0.1, 0.0])]).unwrap_err().to_string();
        assert!(e.contains("bodies[0].velocity") && e.contains("y = 0.25"), "{e}");
        // A rod across the whole y extent moves along y (a belt); not along x.
        let rod = |v| body([0.25, 0.0, 0.25], [0.75, 1.0, 0.75], v);
        assert!(check(&[rod([0.0, 0.1, 0.0])]).is_ok());
        assert!(check(&[rod([0.1, 0.0, 0.0])]).is_err());
        // A slab from y = 0.5 to the top: its lower face meets gas.
        assert!(check(&[body([0.25, 0.5, 0.25], [0.75, 1.0, 0.75], [0.0, 0.1, 0.0])]).is_err());
        // ... unless another body covers that face entirely; partly is not enough.
        let slab = body([0.25, 0.5, 0.25], [0.75, 1.0, 0.75], [0.0, 0.1, 0.0]);
        let under = |x1| body([0.25, 0.0, 0.25], [x1, 0.5, 0.75], [0.0; 3]);
        assert!(check(&[slab.clone(), under(0.75)]).is_ok());
        assert!(check(&[slab.clone(), under(0.5)]).is_err());
        // Where an earlier body owns the cells at the face, the face is that body's (still).
        let first = body([0.25, 0.5, 0.25], [0.75, 0.75, 0.75], [0.0; 3]);
        assert!(check(&[first.clone(), body([0.25, 0.5, 0.25], [0.75, 1.0, 0.75], [0.0, 0.1, 0.0])]).is_ok());
        // ... and the moving body's own face is refused where it owns the cells.
        let e = check(&[body([0.25, 0.5, 0.25], [0.75, 1.0, 0.75], [0.0, 0.1, 0.0]), first]).unwrap_err().to_string();
        assert!(e.contains("bodies[0]"), "{e}");
    }
}
