//! Grids: the physical nonuniform Cartesian grid and the discrete velocity grid.

pub mod face;
mod physical;
pub mod solid;
mod velocity;

pub use face::{Face, FaceData};
pub use physical::{Axis, Grid};
pub use solid::{Solids, WallFace};
pub use velocity::{Octant, VelocityGrid};
