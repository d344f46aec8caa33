//! A validated case turned into the objects every backend shares.

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
    pub delta: f64,
    pub omega: f64,
    pub prandtl: f64,
}

impl Problem {
    /// `config` must have passed [`Config::validate`].
    pub fn new(config: &Config) -> Self {
        let vgrid = VelocityGrid::from_config(&config.velocity);
        let bounds = Boundaries::new(&config.boundaries, &vgrid);
        Self {
            grid: Grid::from_config(&config.grid),
            bounds,
            vgrid,
            delta: config.delta() / config.gas.length,
            omega: config.gas.omega,
            prandtl: config.gas.prandtl,
            config: config.clone(),
        }
    }

    /// Sweep coefficients of a cell state.
    pub fn eq_coeffs(&self, m: &Macro) -> EqCoeffs {
        EqCoeffs::new_on_grid(m, self.prandtl, self.delta, self.omega, &self.vgrid.nodes, &self.vgrid.weights_1d)
    }

    pub fn initial_macro(&self) -> Macro {
        let i = &self.config.initial;
        Macro::equilibrium(i.density, i.velocity, i.temperature)
    }

    /// Phase-space points: cells x velocities.
    pub fn phase_points(&self) -> u64 {
        self.grid.cells() as u64 * self.vgrid.len() as u64
    }
}
