//! Source iteration (paper eq. iter_outer): the next sweep's macroscopic state is the one
//! the last sweep's moments give, cell by cell. Information crosses about one mean free
//! path per iteration, so the error shrinks by a factor 1 - O(1/delta) each time.

use super::state::State;
use super::{Strategy, Sweep};
use crate::backend::SweepOutput;
use crate::model::Macro;
use crate::problem::Problem;
use rayon::prelude::*;

pub struct SourceIteration;

impl Strategy for SourceIteration {
    fn name(&self) -> &'static str {
        "none"
    }

    fn update_fields(&mut self, p: &Problem, out: &mut SweepOutput, state: &mut State, _: Sweep) -> anyhow::Result<()> {
        update(p, out, state);
        Ok(())
    }
}

/// The next fields and sweep coefficients from the sweep's moments, cell by cell.
pub fn update(p: &Problem, out: &SweepOutput, state: &mut State) {
    let solids = &p.bodies.solids;
    let host_eq = state.host_eq;
    // Cells are independent: update them in parallel (the sweep coefficients' grid
    // normalisation costs ~3M multiplications and 13 exponentials per cell).
    state.fields.par_iter_mut().zip(state.eq.par_iter_mut()).zip(out.raw.par_iter()).enumerate().for_each(
        |(c, ((f, e), m))| {
            if !solids.is_solid(c) {
                *f = Macro::from_raw(m);
                if host_eq {
                    *e = p.eq_coeffs(f);
                }
            }
        },
    );
}
