//! The six faces of the box, and the numbering of the cells that touch each.
//!
//! Face cells are numbered along the face's two tangential axes, slow then fast:
//! x faces (k, j) -> k ny + j; y faces (k, i) -> k nx + i; z faces (j, i) -> j nx + i.

use super::Grid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    XMin,
    XMax,
    YMin,
    YMax,
    ZMin,
    ZMax,
}

impl Face {
    pub const ALL: [Face; 6] = [Face::XMin, Face::XMax, Face::YMin, Face::YMax, Face::ZMin, Face::ZMax];

    pub fn id(self) -> usize {
        self as usize
    }
    pub fn axis(self) -> usize {
        self.id() / 2
    }
    pub fn is_max(self) -> bool {
        self.id() % 2 == 1
    }
    /// Sign of the normal pointing into the gas, along the face's axis.
    pub fn inward(self) -> f64 {
        if self.is_max() {
            -1.0
        } else {
            1.0
        }
    }
    pub fn name(self) -> &'static str {
        ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"][self.id()]
    }
    /// Number of face cells.
    pub fn cells(self, g: &Grid) -> usize {
        match self.axis() {
            0 => g.ny() * g.nz(),
            1 => g.nx() * g.nz(),
            _ => g.nx() * g.ny(),
        }
    }
    /// The grid cell of face cell `fc` (numbering above).
    pub fn cell(self, g: &Grid, fc: usize) -> usize {
        let [nx, ny, nz] = g.dims();
        let edge = |n: usize| if self.is_max() { n - 1 } else { 0 };
        match self.axis() {
            0 => g.index(edge(nx), fc % ny, fc / ny),
            1 => g.index(fc % nx, edge(ny), fc / nx),
            _ => g.index(fc % nx, fc / nx, edge(nz)),
        }
    }
    /// xi . n_in for a velocity: positive when the face emits into it, negative when the
    /// velocity carries molecules into the face.
    #[inline(always)]
    pub fn normal_speed(self, xi: [f64; 3]) -> f64 {
        xi[self.axis()] * self.inward()
    }
}

/// Per-face arrays, one value per face cell, indexed by `Face::id()`.
pub type FaceData = [Vec<f64>; 6];

pub fn face_zeros(g: &Grid) -> FaceData {
    std::array::from_fn(|f| vec![0.0; Face::ALL[f].cells(g)])
}
