//! Box-face boundary conditions.
//!
//! A face supplies the distribution of molecules entering the domain through it. For every
//! kind so far this factorises as `ghost(v, face cell) = density[face cell] * shape[v]`:
//! a diffuse wall emits its unit-density Maxwellian scaled by the wall density rho_w of that
//! face cell; a free stream would use a constant density and its own Maxwellian. Kinds that
//! need per-velocity partner data (specular, periodic) add a variant with its own storage.
//!
//! Face cells are numbered along the face's two tangential axes, slow then fast:
//! x faces (k, j) -> k ny + j; y faces (k, i) -> k nx + i; z faces (j, i) -> j nx + i.

use crate::config::{Config, FaceConfig};
use crate::grid::{Grid, VelocityGrid};
use crate::model::{gaussian_sum, maxwellian};

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

#[derive(Debug, Clone, PartialEq)]
pub enum FaceKind {
    DiffuseWall {
        temperature: f64,
        velocity: [f64; 3],
    },
    /// Emits the free-stream Maxwellian at fixed density.
    FreeStream {
        density: f64,
        velocity: [f64; 3],
        temperature: f64,
    },
}

#[derive(Debug, Clone)]
pub struct FaceBc {
    pub face: Face,
    pub kind: FaceKind,
    /// Per velocity: the unit-density distribution emitted into the domain (zero for
    /// velocities that do not leave the face).
    pub shape: Vec<f64>,
    /// sum over emitted velocities of w (xi . n_in) shape: the flux of a unit-density
    /// emission. rho_w = incident flux / emit_norm balances the discrete fluxes exactly.
    pub emit_norm: f64,
}

impl FaceBc {
    /// The distribution entering the domain through face cell `idx` at velocity `v`, given
    /// the face's per-cell densities. Kinds with their own partner data (specular, periodic)
    /// answer here from it.
    #[inline(always)]
    pub fn inflow(&self, density: &[f64], idx: usize, v: usize) -> f64 {
        density[idx] * self.shape[v]
    }
}

#[derive(Debug, Clone)]
pub struct Boundaries {
    pub faces: Vec<FaceBc>,
}

impl Boundaries {
    pub fn new(cfg: &Config, v: &VelocityGrid) -> Self {
        let faces = cfg
            .boundaries
            .faces()
            .iter()
            .zip(Face::ALL)
            .map(|((_, fc), face)| {
                let kind = match fc {
                    FaceConfig::DiffuseWall { temperature, velocity } => {
                        FaceKind::DiffuseWall { temperature: *temperature, velocity: *velocity }
                    }
                    FaceConfig::FreeStream {} => {
                        let fs = cfg.free_stream.as_ref().expect("validated");
                        FaceKind::FreeStream {
                            density: fs.density,
                            velocity: fs.velocity(),
                            temperature: fs.temperature,
                        }
                    }
                };
                let emitted = |x: [f64; 3]| face.normal_speed(x) > 0.0;
                let shape: Vec<f64> = match kind {
                    FaceKind::DiffuseWall { temperature, velocity } => {
                        v.xi.iter()
                            .map(|&x| if emitted(x) { maxwellian(1.0, velocity, temperature, x) } else { 0.0 })
                            .collect()
                    }
                    // Unit density on the grid: the discrete free stream carries exactly the
                    // configured density (the grid is a tensor product, so the normaliser is
                    // a product of three 1D sums).
                    FaceKind::FreeStream { velocity, temperature, .. } => {
                        let z: f64 =
                            (0..3).map(|a| gaussian_sum(&v.nodes, &v.weights_1d, velocity[a], temperature)).product();
                        v.xi.iter()
                            .map(|&x| {
                                if emitted(x) {
                                    maxwellian(1.0, velocity, temperature, x)
                                        * (std::f64::consts::PI * temperature).powf(1.5)
                                        / z
                                } else {
                                    0.0
                                }
                            })
                            .collect()
                    }
                };
                let emit_norm =
                    v.xi.iter().zip(&v.w).zip(&shape).map(|((&x, &w), &s)| w * face.normal_speed(x).max(0.0) * s).sum();
                FaceBc { face, kind, shape, emit_norm }
            })
            .collect();
        Self { faces }
    }

    /// Every face is impermeable, so total mass is an invariant of the exact solution.
    pub fn closed(&self) -> bool {
        self.faces.iter().all(|f| matches!(f.kind, FaceKind::DiffuseWall { .. }))
    }

    /// Incident flux at each face cell when the whole domain holds f_M(rho, u, t): the wall
    /// state that the initial field is in balance with.
    pub fn uniform_incident(&self, g: &Grid, v: &VelocityGrid, rho: f64, u: [f64; 3], t: f64) -> FaceData {
        std::array::from_fn(|f| {
            let face = Face::ALL[f];
            let flux: f64 =
                v.xi.iter()
                    .zip(&v.w)
                    .map(|(&x, &w)| w * (-face.normal_speed(x)).max(0.0) * maxwellian(rho, u, t, x))
                    .sum();
            vec![flux; face.cells(g)]
        })
    }

    /// Emission densities of each face cell from the incident fluxes (eq. rho_wall, in its
    /// discrete form so the wall conserves mass exactly on the velocity grid).
    pub fn densities(&self, incident: &FaceData) -> FaceData {
        std::array::from_fn(|f| {
            let bc = &self.faces[f];
            match bc.kind {
                FaceKind::DiffuseWall { .. } => incident[f].iter().map(|&fl| fl / bc.emit_norm).collect(),
                FaceKind::FreeStream { density, .. } => vec![density; incident[f].len()],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Quadrature;

    #[test]
    fn face_geometry() {
        assert_eq!(Face::XMax.axis(), 0);
        assert!(Face::XMax.is_max());
        assert_eq!(Face::ZMin.axis(), 2);
        assert_eq!(Face::YMin.inward(), 1.0);
        assert_eq!(Face::YMax.normal_speed([0.0, 2.0, 0.0]), -2.0);
    }

    #[test]
    fn resting_wall_density_equals_gas_density() {
        // A wall at the gas temperature in balance with gas at rest emits with rho_w = rho,
        // by the symmetry of the velocity grid; zero normal components count on neither side.
        let wall = r#"{"type": "diffuse_wall", "temperature": 1.0}"#;
        let json = format!(
            r#"{{"gas": {{"kn": 1.0}}, "grid": {{"x": {{"min": 0, "max": 1, "cells": 2}},
            "y": {{"min": 0, "max": 1, "cells": 3}}, "z": {{"min": 0, "max": 1, "cells": 4}}}},
            "velocity": {{"points": 9}}, "boundaries": {{"x_min": {wall}, "x_max": {wall},
            "y_min": {wall}, "y_max": {wall}, "z_min": {wall}, "z_max": {wall}}}}}"#
        );
        let cfg = Config::from_json(&json).unwrap();
        let v = VelocityGrid::new(9, 4.0, Quadrature::Trapezoid);
        let b = Boundaries::new(&cfg, &v);
        let g = Grid::uniform([2, 3, 4], [1.0; 3]);
        let inc = b.uniform_incident(&g, &v, 0.7, [0.0; 3], 1.0);
        let rho = b.densities(&inc);
        for f in 0..6 {
            assert_eq!(rho[f].len(), Face::ALL[f].cells(&g));
            for &r in &rho[f] {
                assert!((r - 0.7).abs() < 1e-14, "{}: {r}", Face::ALL[f].name());
            }
        }
    }
}
