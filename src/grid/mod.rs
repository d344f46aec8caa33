//! Grids: the physical nonuniform Cartesian grid and the discrete velocity grid.

mod physical;
mod velocity;

pub use physical::{Axis, Grid};
pub use velocity::{Octant, VelocityGrid};
