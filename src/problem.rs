//! A validated case turned into the objects every backend shares.

use crate::body::Bodies;
use crate::boundary::Boundaries;
use crate::config::Config;
use crate::grid::{Grid, VelocityGrid};
use crate::model::{EqCoeffs, Macro};

#[derive(Debug, Clone)]
pub struct Problem {
    pub config: Config,
    pub grid: Grid,
    pub vgrid: VelocityGrid,
    pub bounds: Boundaries,
    pub bodies: Bodies,
    pub delta: f64,
    pub omega: f64,
    pub prandtl: f64,
}

impl Problem {
    /// `config` must have passed [`Config::validate`].
    pub fn new(config: &Config) -> Self {
        let vgrid = VelocityGrid::from_config(&config.velocity);
        let grid = Grid::from_config(&config.grid);
        let bounds = Boundaries::new(config, grid.dims(), &vgrid);
        let bodies = Bodies::new(config, &grid, &vgrid);
        Self {
            grid,
            bounds,
            bodies,
            vgrid,
            delta: config.delta() / config.gas.length,
            omega: config.gas.omega,
            prandtl: config.gas.prandtl,
            config: config.clone(),
        }
    }

    /// The sweep's 1/width along `axis`: zero along a collapsed periodic axis
    /// ([`Boundaries::collapsed`]), whose upwind term drops out exactly.
    pub fn sweep_inv_widths(&self, axis: usize) -> Vec<f64> {
        let a = [&self.grid.x, &self.grid.y, &self.grid.z][axis];
        a.widths.iter().map(|w| if self.bounds.collapsed[axis] { 0.0 } else { 1.0 / w }).collect()
    }

    /// Sweep coefficients of a cell state.
    pub fn eq_coeffs(&self, m: &Macro) -> EqCoeffs {
        EqCoeffs::new_on_grid(m, self.prandtl, self.delta, self.omega, &self.vgrid.nodes, &self.vgrid.weights_1d)
    }

    pub fn initial_macro(&self) -> Macro {
        let i = self.config.initial_state();
        Macro::equilibrium(i.density, i.velocity, i.temperature)
    }

    /// Fluid cells: all cells less the solid ones.
    pub fn fluid_cells(&self) -> usize {
        self.grid.cells() - self.bodies.solids.body_of.iter().filter(|&&b| b != 0).count()
    }

    /// Phase-space points: cells x velocities.
    /// The share of each sweep's change that the partner data takes
    /// (`Config::partner_relaxation`), where it is below 1 and a face keeps partner data;
    /// None where the exits are taken as they are.
    pub fn partner_relaxation(&self) -> Option<f64> {
        Some(self.config.partner_relaxation()).filter(|&t| t < 1.0 && self.bounds.keeps_partner_data())
    }

    pub fn phase_points(&self) -> u64 {
        self.grid.cells() as u64 * self.vgrid.len() as u64
    }
}
