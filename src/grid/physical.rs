//! Physical grid: a tensor product of three axes, each built from its face coordinates so that
//! nonuniform spacings need no special case anywhere downstream.

use crate::config::{AxisConfig, GridConfig};

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
        let h = (max - min) / cells as f64;
        // The last face is set exactly so the domain length has no round-off.
        let faces = (0..=cells).map(|i| if i == cells { max } else { min + h * i as f64 }).collect();
        Self::from_faces(faces)
    }

    pub fn from_config(a: &AxisConfig) -> Self {
        Self::uniform(a.min, a.max, a.cells)
    }

    pub fn len(&self) -> usize {
        self.widths.len()
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
        Self { x: Axis::from_config(&g.x), y: Axis::from_config(&g.y), z: Axis::from_config(&g.z) }
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
    fn index_is_x_fastest() {
        let g = Grid::uniform([3, 4, 5], [1.0; 3]);
        assert_eq!(g.index(1, 0, 0), 1);
        assert_eq!(g.index(0, 1, 0), 3);
        assert_eq!(g.index(0, 0, 1), 12);
        assert_eq!(g.cells(), 60);
    }
}
