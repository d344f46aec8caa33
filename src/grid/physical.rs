//! Physical grid: a tensor product of three axes, each built from its face coordinates so that
//! nonuniform spacings need no special case anywhere downstream.

use crate::config::grid::{face_index, uniform_faces};
use crate::config::{AxisConfig, ConfigError, GridConfig};

/// One axis, defined by its n + 1 increasing face coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub faces: Vec<f64>,
    pub centres: Vec<f64>,
    pub widths: Vec<f64>,
}

impl Axis {
    /// From strictly increasing face coordinates.
    pub fn from_faces(faces: Vec<f64>) -> Self {
        assert!(faces.len() >= 2, "an axis needs at least one cell");
        assert!(faces.windows(2).all(|w| w[1] > w[0]), "faces must increase strictly");
        let centres = faces.windows(2).map(|w| 0.5 * (w[0] + w[1])).collect();
        let widths = faces.windows(2).map(|w| w[1] - w[0]).collect();
        Self { faces, centres, widths }
    }

    pub fn uniform(min: f64, max: f64, cells: usize) -> Self {
        Self::from_faces(uniform_faces(min, max, cells))
    }

    /// Build an axis from its config form (`AxisConfig::faces` checks it); the error's key
    /// is relative to the axis (e.g. `.stretched.cells`).
    pub fn from_config(a: &AxisConfig) -> Result<Self, ConfigError> {
        Ok(Self::from_faces(a.faces()?))
    }

    /// The index of the face at coordinate `c`, if `c` is on a face (to 1e-9 of the
    /// neighbouring widths, so decimal configs match computed faces).
    pub fn face_index(&self, c: f64) -> Option<usize> {
        face_index(&self.faces, c)
    }

    /// Largest ratio of neighbouring widths (>= 1).
    pub fn max_growth(&self) -> f64 {
        self.widths.windows(2).map(|w| (w[1] / w[0]).max(w[0] / w[1])).fold(1.0, f64::max)
    }

    pub fn len(&self) -> usize {
        self.widths.len()
    }

    /// The axis's extent, last face minus first.
    pub fn length(&self) -> f64 {
        self.faces[self.faces.len() - 1] - self.faces[0]
    }

    pub fn is_empty(&self) -> bool {
        self.widths.is_empty()
    }
}

/// Cells are numbered with x fastest: index = (k ny + j) nx + i. A z-slice is contiguous.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub x: Axis,
    pub y: Axis,
    pub z: Axis,
}

impl Grid {
    pub fn from_config(g: &GridConfig) -> Self {
        let axis = |a| Axis::from_config(a).expect("validated config");
        Self { x: axis(&g.x), y: axis(&g.y), z: axis(&g.z) }
    }

    pub fn uniform(n: [usize; 3], lengths: [f64; 3]) -> Self {
        Self {
            x: Axis::uniform(0.0, lengths[0], n[0]),
            y: Axis::uniform(0.0, lengths[1], n[1]),
            z: Axis::uniform(0.0, lengths[2], n[2]),
        }
    }

    pub fn nx(&self) -> usize {
        self.x.len()
    }
    pub fn ny(&self) -> usize {
        self.y.len()
    }
    pub fn nz(&self) -> usize {
        self.z.len()
    }
    pub fn dims(&self) -> [usize; 3] {
        [self.nx(), self.ny(), self.nz()]
    }
    /// Cells in one z-slice.
    pub fn slice_cells(&self) -> usize {
        self.nx() * self.ny()
    }
    pub fn cells(&self) -> usize {
        self.slice_cells() * self.nz()
    }
    #[inline(always)]
    pub fn index(&self, i: usize, j: usize, k: usize) -> usize {
        (k * self.ny() + j) * self.nx() + i
    }
    /// (i, j, k) of a cell index.
    #[inline(always)]
    pub fn coords(&self, c: usize) -> [usize; 3] {
        let (nx, ny) = (self.nx(), self.ny());
        [c % nx, c / nx % ny, c / (nx * ny)]
    }
    pub fn volume(&self, i: usize, j: usize, k: usize) -> f64 {
        self.x.widths[i] * self.y.widths[j] * self.z.widths[k]
    }
    /// Cell volumes in cell order.
    pub fn volumes(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.cells());
        for k in 0..self.nz() {
            for j in 0..self.ny() {
                for i in 0..self.nx() {
                    v.push(self.volume(i, j, k));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_axis_ends_exactly() {
        let a = Axis::uniform(-0.5, 0.7, 7);
        assert_eq!(a.faces[0], -0.5);
        assert_eq!(*a.faces.last().unwrap(), 0.7);
        let total: f64 = a.widths.iter().sum();
        assert!((total - 1.2).abs() < 1e-15);
    }

    #[test]
    fn face_index_matches_only_faces() {
        let a = Axis::uniform(0.0, 1.0, 10);
        assert_eq!(a.face_index(0.3), Some(3));
        assert_eq!(a.face_index(1.0), Some(10));
        assert_eq!(a.face_index(0.35), None);
    }

    #[test]
    fn index_is_x_fastest() {
        let g = Grid::uniform([3, 4, 5], [1.0; 3]);
        assert_eq!(g.index(1, 0, 0), 1);
        assert_eq!(g.index(0, 1, 0), 3);
        assert_eq!(g.index(0, 0, 1), 12);
        assert_eq!(g.cells(), 60);
    }
}
