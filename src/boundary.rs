//! Box-face boundary conditions.
//!
//! A face supplies the distribution of molecules entering the domain through it. For walls
//! and free streams this factorises as `ghost(v, face cell) = density[face cell] * shape[v]`:
//! a diffuse wall emits its unit-density Maxwellian scaled by the wall density rho_w of that
//! face cell; a free stream uses a constant density and its own Maxwellian.
//!
//! Specular and periodic faces take per-velocity *partner data* instead: what left the
//! domain at the partner location (the same face cell with the normal component reversed,
//! or the same face cell of the opposite face with the same velocity). The partner value of
//! a velocity is produced by another batch, or at the other end of the z-sweep, so, like
//! rho_w, it is lagged: iteration n reads what iteration n-1 wrote (the *exits*), remapped
//! by [`Boundaries::partner_inflow`]. A periodic axis one cell thick needs no partner data:
//! the cell is its own upwind neighbour along that axis, and the exact upwind update
//! `f = (a f + R) / (a + D)` reduces to `f = R / D`, so the sweep drops the term
//! ([`Boundaries::collapsed`]). That turns the 3D solver into a 2D or 1D one, exactly.
//!
//! Partner storage of a face is `[face cell][slot]`: the slot numbers the velocities that
//! cross the face in one direction (see [`slot`]), so one velocity's neighbours in a batch
//! are neighbours in memory.
//!
//! The faces themselves and the numbering of their cells are geometry: `crate::grid::face`.

use crate::config::{Config, FaceConfig};
pub use crate::grid::face::{face_zeros, Face, FaceData};
use crate::grid::{Grid, VelocityGrid};
use crate::model::{gaussian_sum, maxwellian};

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
    Specular,
    Periodic,
}

impl FaceKind {
    /// Whether the face takes its inflow from partner data.
    pub fn has_partner(&self) -> bool {
        matches!(self, FaceKind::Specular | FaceKind::Periodic)
    }
}

/// Slot of velocity `v` in the partner storage of a face on `axis`, among the velocities whose
/// component along it is positive (`positive`) or negative; `None` for the others. With M
/// nodes per axis, half = floor(M / 2) nodes lie on each side (odd M: the zero node crosses
/// no face); the slot is the velocity's index with the axis index counted within its half.
#[inline(always)]
pub fn slot(m: usize, axis: usize, v: usize, positive: bool) -> Option<usize> {
    let half = m / 2;
    let mut idx = [v % m, v / m % m, v / (m * m)];
    let i = idx[axis];
    idx[axis] = if positive { i.checked_sub(m - half)? } else { (i < half).then_some(i)? };
    let mut dims = [m; 3];
    dims[axis] = half;
    Some((idx[2] * dims[1] + idx[1]) * dims[0] + idx[0])
}

/// Partner slots per face cell: the velocities crossing a face in one direction.
pub fn slots_per_cell(m: usize) -> usize {
    m * m * (m / 2)
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
    pub fn inflow(&self, density: &[f64], partner: &[f64], m: usize, idx: usize, v: usize) -> f64 {
        if partner.is_empty() {
            density[idx] * self.shape[v]
        } else {
            // A velocity parallel to the face (the zero node of an odd velocity grid) has no
            // slot; its upwind coefficient along this axis is zero, so any value serves (the
            // GPU kernels' `partner` returns 0 alike).
            match slot(m, self.face.axis(), v, !self.face.is_max()) {
                Some(s) => partner[idx * slots_per_cell(m) + s],
                None => {
                    let a = self.face.axis() as u32;
                    debug_assert!(
                        m % 2 == 1 && (v / m.pow(a)) % m == m / 2,
                        "velocity {v} enters face {:?} but has no partner slot",
                        self.face
                    );
                    0.0
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Boundaries {
    pub faces: Vec<FaceBc>,
    /// Per axis: periodic and one cell thick, so the sweep drops that axis's upwind term.
    pub collapsed: [bool; 3],
    /// Velocity nodes per axis (partner slots).
    pub m: usize,
}

impl Boundaries {
    pub fn new(cfg: &Config, dims: [usize; 3], v: &VelocityGrid) -> Self {
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
                    FaceConfig::Specular {} => FaceKind::Specular,
                    FaceConfig::Periodic {} => FaceKind::Periodic,
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
                    FaceKind::Specular | FaceKind::Periodic => vec![0.0; v.len()],
                };
                let emit_norm =
                    v.xi.iter().zip(&v.w).zip(&shape).map(|((&x, &w), &s)| w * face.normal_speed(x).max(0.0) * s).sum();
                FaceBc { face, kind, shape, emit_norm }
            })
            .collect::<Vec<FaceBc>>();
        let collapsed = std::array::from_fn(|a| faces[2 * a].kind == FaceKind::Periodic && dims[a] == 1);
        Self { faces, collapsed, m: v.m }
    }

    /// Every face is impermeable, so total mass is an invariant of the exact solution.
    pub fn closed(&self) -> bool {
        self.faces.iter().all(|f| !matches!(f.kind, FaceKind::FreeStream { .. }))
    }

    /// Whether the sweep reads partner data for the velocities entering `face`.
    pub fn stores_inflow(&self, face: Face) -> bool {
        self.faces[face.id()].kind.has_partner() && !self.collapsed[face.axis()]
    }

    /// Whether the sweep records what leaves through `face`: it is specular, or the
    /// opposite face is periodic (and the axis is not collapsed).
    pub fn stores_exits(&self, face: Face) -> bool {
        let opposite = Face::ALL[face.id() ^ 1];
        !self.collapsed[face.axis()]
            && (self.faces[face.id()].kind == FaceKind::Specular
                || self.faces[opposite.id()].kind == FaceKind::Periodic)
    }

    /// Per face, an empty vector or room for its exits ([`Self::stores_exits`]).
    pub fn exit_zeros(&self, g: &Grid) -> FaceData {
        std::array::from_fn(|f| {
            let face = Face::ALL[f];
            if self.stores_exits(face) {
                vec![0.0; face.cells(g) * slots_per_cell(self.m)]
            } else {
                Vec::new()
            }
        })
    }

    /// The exits of a domain filled with f_M(rho, u, t): the partner data of the first
    /// iteration.
    pub fn uniform_exits(&self, g: &Grid, v: &VelocityGrid, rho: f64, u: [f64; 3], t: f64) -> FaceData {
        let mut ex = self.exit_zeros(g);
        let s = slots_per_cell(self.m);
        for face in Face::ALL {
            let e = &mut ex[face.id()];
            if e.is_empty() {
                continue;
            }
            for (vi, &x) in v.xi.iter().enumerate() {
                if let Some(sl) = slot(self.m, face.axis(), vi, face.is_max()) {
                    let f = maxwellian(rho, u, t, x);
                    e.iter_mut().skip(sl).step_by(s).for_each(|y| *y = f);
                }
            }
        }
        ex
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
                FaceKind::Specular | FaceKind::Periodic => vec![0.0; incident[f].len()],
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
        let cfg = crate::config::walled_box([2, 3, 4], 9);
        let v = VelocityGrid::new(9, 4.0, Quadrature::Trapezoid);
        let b = Boundaries::new(&cfg, [2, 3, 4], &v);
        let g = Grid::uniform([2, 3, 4], [1.0; 3]);
        let inc = b.uniform_incident(&g, &v, 0.7, [0.0; 3], 1.0);
        let rho = b.densities(&inc);
        for (face, rho_f) in Face::ALL.iter().zip(&rho) {
            assert_eq!(rho_f.len(), face.cells(&g));
            for &r in rho_f {
                assert!((r - 0.7).abs() < 1e-14, "{}: {r}", face.name());
            }
        }
    }

    #[test]
    fn partner_slots_are_a_bijection_and_remap_to_the_partner_velocity() {
        for m in [4usize, 5, 6] {
            let s = slots_per_cell(m);
            for axis in 0..3 {
                for positive in [false, true] {
                    let mut seen = vec![false; s];
                    for v in 0..m * m * m {
                        let i = [v % m, v / m % m, v / (m * m)][axis];
                        let crosses = if positive { 2 * i > m - 1 } else { 2 * i < m - 1 };
                        match slot(m, axis, v, positive) {
                            Some(sl) => {
                                assert!(crosses && !seen[sl], "m {m} axis {axis} v {v}");
                                seen[sl] = true;
                            }
                            None => assert!(!crosses, "m {m} axis {axis} v {v} has no slot"),
                        }
                    }
                    assert!(seen.iter().all(|&x| x));
                }
            }
        }
        // Exits holding their velocity's index: each entering velocity must read its mirror
        // image (specular y_min) or itself (periodic x).
        let wall = r#"{"type": "diffuse_wall", "temperature": 1.0}"#;
        let json = format!(
            r#"{{"gas": {{"kn": 1.0}}, "grid": {{"x": {{"min": 0, "max": 1, "cells": 2}},
            "y": {{"min": 0, "max": 1, "cells": 2}}, "z": {{"min": 0, "max": 1, "cells": 1}}}},
            "velocity": {{"points": 9}}, "boundaries": {{"x_min": {{"type": "periodic"}},
            "x_max": {{"type": "periodic"}}, "y_min": {{"type": "specular"}}, "y_max": {wall},
            "z_min": {wall}, "z_max": {wall}}}}}"#
        );
        let cfg = Config::from_json(&json).unwrap();
        let v = VelocityGrid::new(5, 4.0, Quadrature::Trapezoid);
        let b = Boundaries::new(&cfg, [2, 2, 1], &v);
        let g = Grid::uniform([2, 2, 1], [1.0; 3]);
        let mut ex = b.exit_zeros(&g);
        assert!(!ex[Face::XMin.id()].is_empty() && !ex[Face::YMin.id()].is_empty() && ex[Face::YMax.id()].is_empty());
        let s = slots_per_cell(5);
        for face in Face::ALL {
            let e = &mut ex[face.id()];
            for vi in 0..125 {
                if let Some(sl) = slot(5, face.axis(), vi, face.is_max()) {
                    for c in 0..e.len() / s {
                        e[c * s + sl] = vi as f64;
                    }
                }
            }
        }
        let inflow = b.partner_inflow(&ex);
        let none: FaceData = Default::default();
        for vi in 0..125 {
            let x = v.xi[vi];
            if x[1] > 0.0 {
                let mirror = vi + (4 - 2 * (vi / 5 % 5)) * 5;
                assert_eq!(v.xi[mirror], [x[0], -x[1], x[2]]);
                let got = b.faces[Face::YMin.id()].inflow(&none[0], &inflow[Face::YMin.id()], 5, 1, vi);
                assert_eq!(got, mirror as f64);
            }
            if x[0] > 0.0 {
                let got = b.faces[Face::XMin.id()].inflow(&none[0], &inflow[Face::XMin.id()], 5, 1, vi);
                assert_eq!(got, vi as f64);
            }
        }
    }
}
