//! Surface loads on bodies and the mass balance of the domain, from the exact discrete
//! fluxes of the final sweep.
//!
//! For a wall face of area A, outward body normal n (into the gas) and wall density rho_w,
//! with incident sums N, P, E ([`crate::body::WALL_SUMS`]) and the body's unit emission
//! sums N_e, P_e, E_e ([`crate::body::BodyBc`]):
//!
//! ```text
//! momentum given to the body per area   Delta = P - rho_w P_e     (a vector)
//! pressure  p = -Delta . n,   shear  tau = Delta + p n,   heat flux  q = E - rho_w E_e
//! net mass flux into the face           N - rho_w N_e            (zero at convergence)
//! ```
//!
//! The body's force is F = sum A Delta and its heat transfer rate Q = sum A q. With the free
//! stream (rho, U) and the frontal area A_f (the body's projection normal to U):
//! C_D = F . e_U / (rho U^2 A_f / 2), C_H = Q / (rho U^3 A_f / 2); lift and side coefficients
//! use the axes e_L = y - (y . e_U) e_U (normalised) and e_S = e_U x e_L.
//! Units: forces in rho0 v0^2 L^2, heat in rho0 v0^3 L^2 (docs/model.md).

use crate::body::WALL_SUMS;
use crate::boundary::{Face, FaceData};
use crate::grid::Grid;
use crate::problem::Problem;
use serde::Serialize;

/// Per wall face: what the surface output holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurfacePoint {
    pub body: u16,
    pub side: Face,
    pub area: f64,
    pub centre: [f64; 3],
    /// Outward body normal.
    pub normal: [f64; 3],
    pub pressure: f64,
    pub shear: [f64; 3],
    pub heat_flux: f64,
    /// Net mass flux into the wall per area.
    pub mass_flux: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BodyLoads {
    pub name: String,
    pub surface_area: f64,
    /// Force on the body (rho0 v0^2 L^2).
    pub force: [f64; 3],
    /// Heat transfer rate into the body (rho0 v0^3 L^2).
    pub heat_transfer: f64,
    /// Net mass flux into the body, and the incident mass flux it is measured against.
    pub net_mass_flux: f64,
    pub incident_mass_flux: f64,
    /// Present with a free stream: frontal area and coefficients.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontal_area: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drag_coefficient: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lift_coefficient: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_coefficient: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heat_transfer_coefficient: Option<f64>,
}

/// Surface data of every wall face, in wall-face order.
pub fn surface(p: &Problem, wall: &[[f64; WALL_SUMS]], wall_density: &[f64]) -> Vec<SurfacePoint> {
    let s = &p.bodies.solids;
    s.walls
        .iter()
        .zip(wall)
        .zip(wall_density)
        .map(|((wf, sums), &rho_w)| {
            let b = &p.bodies.bodies[wf.body as usize];
            let d = wf.side.id();
            let mut n = [0.0; 3];
            n[wf.side.axis()] = wf.side.inward();
            let delta: [f64; 3] = std::array::from_fn(|a| sums[1 + a] - rho_w * b.emit_momentum[d][a]);
            let pressure = -dot(delta, n);
            SurfacePoint {
                body: wf.body,
                side: wf.side,
                area: s.area(&p.grid, wf),
                centre: s.centre(&p.grid, wf),
                normal: n,
                pressure,
                shear: std::array::from_fn(|a| delta[a] + pressure * n[a]),
                heat_flux: sums[4] - rho_w * b.emit_energy[d],
                mass_flux: sums[0] - rho_w * b.emit_norm[d],
            }
        })
        .collect()
}

/// Loads per body from the surface data.
pub fn body_loads(p: &Problem, surf: &[SurfacePoint], wall: &[[f64; WALL_SUMS]]) -> Vec<BodyLoads> {
    let fs = p.config.free_stream.as_ref();
    p.bodies
        .bodies
        .iter()
        .enumerate()
        .map(|(bi, b)| {
            let mut l = BodyLoads {
                name: b.name.clone(),
                surface_area: 0.0,
                force: [0.0; 3],
                heat_transfer: 0.0,
                net_mass_flux: 0.0,
                incident_mass_flux: 0.0,
                frontal_area: None,
                drag_coefficient: None,
                lift_coefficient: None,
                side_coefficient: None,
                heat_transfer_coefficient: None,
            };
            for (sp, sums) in surf.iter().zip(wall).filter(|(sp, _)| sp.body as usize == bi) {
                l.surface_area += sp.area;
                for a in 0..3 {
                    l.force[a] += sp.area * (sp.shear[a] - sp.pressure * sp.normal[a]);
                }
                l.heat_transfer += sp.area * sp.heat_flux;
                l.net_mass_flux += sp.area * sp.mass_flux;
                l.incident_mass_flux += sp.area * sums[0];
            }
            if let Some(fs) = fs {
                let u = fs.velocity();
                let speed = dot(u, u).sqrt();
                if speed > 0.0 {
                    let e = u.map(|c| c / speed);
                    let cfg = &p.config.bodies[bi];
                    let ext: [f64; 3] = std::array::from_fn(|a| cfg.max[a] - cfg.min[a]);
                    let af = e[0].abs() * ext[1] * ext[2] + e[1].abs() * ext[0] * ext[2] + e[2].abs() * ext[0] * ext[1];
                    let q = 0.5 * fs.density * speed * speed * af;
                    // Lift along y made normal to U; along z where U is along y (whose
                    // projection would vanish, and the coefficients with it).
                    let y = if e[1].abs() > 0.99 { [0.0, 0.0, 1.0] } else { [0.0, 1.0, 0.0] };
                    let mut el: [f64; 3] = std::array::from_fn(|a| y[a] - dot(y, e) * e[a]);
                    let nl = dot(el, el).sqrt();
                    el = el.map(|c| c / nl);
                    let es = cross(e, el);
                    l.frontal_area = Some(af);
                    l.drag_coefficient = Some(dot(l.force, e) / q);
                    l.lift_coefficient = Some(dot(l.force, el) / q);
                    l.side_coefficient = Some(dot(l.force, es) / q);
                    l.heat_transfer_coefficient = Some(l.heat_transfer / (q * speed));
                }
            }
            l
        })
        .collect()
}

/// Mass flowing into and out of the domain through its box faces, from the final sweep's
/// incident fluxes (outflow) and each face's emission (inflow: free stream, and walls whose
/// emission balances their incident flux).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct MassBalance {
    pub inflow: f64,
    pub outflow: f64,
    /// (inflow - outflow) / inflow.
    pub relative: f64,
}

pub fn domain_mass_balance(p: &Problem, incident: &FaceData) -> MassBalance {
    let g = &p.grid;
    let dens = p.bounds.densities(incident);
    let (mut inflow, mut outflow) = (0.0, 0.0);
    for face in Face::ALL {
        let bc = &p.bounds.faces[face.id()];
        // Specular and periodic faces carry no net mass once converged.
        if bc.kind.has_partner() {
            continue;
        }
        for (idx, (&out, &rho)) in incident[face.id()].iter().zip(&dens[face.id()]).enumerate() {
            let a = face_cell_area(g, face, idx);
            outflow += a * out;
            // Every face kind emits rho x its unit emission (walls balance their incident flux).
            inflow += a * rho * bc.emit_norm;
        }
    }
    MassBalance { inflow, outflow, relative: (inflow - outflow) / inflow }
}

/// Area of box-face cell `idx` (numbering in src/boundary.rs).
pub fn face_cell_area(g: &Grid, face: Face, idx: usize) -> f64 {
    match face.axis() {
        0 => g.y.widths[idx % g.ny()] * g.z.widths[idx / g.ny()],
        1 => g.x.widths[idx % g.nx()] * g.z.widths[idx / g.nx()],
        _ => g.x.widths[idx % g.nx()] * g.y.widths[idx / g.nx()],
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
