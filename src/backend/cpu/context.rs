//! What both CPU sweeps (first order in `mod.rs`, second order in `sweep2.rs`) need of one
//! velocity at one z-slice: its upwind faces and inflows, the wall emission of bodies, the
//! slice's cell coefficients and f^S.

use super::gauss::GaussTables;
use super::upwind_faces;
use crate::backend::SweepInput;
use crate::boundary::Face;
use crate::grid::solid::wall_of;
use crate::grid::Octant;
use crate::model::EqCoeffs;
use crate::problem::Problem;

/// Velocity `v` of octant `oct` at z-slice `k`.
pub struct SliceContext<'a> {
    p: &'a Problem,
    inp: &'a SweepInput<'a>,
    v: usize,
    pub xi: [f64; 3],
    /// The faces the velocity enters through, per axis.
    pub faces: [Face; 3],
    /// |xi| per axis; 0 along a collapsed periodic axis, which has no upwind term
    /// (boundary.rs).
    pub speed: [f64; 3],
    /// The z coefficient |xi_z| / dz_k.
    pub c: f64,
    /// The slice's wall words (empty without bodies) and cell coefficients.
    words: &'a [u32],
    pub eq: &'a [EqCoeffs],
    /// The per-cell 1D Gaussians of the velocity over the slice, when the tables are in use.
    rows: Option<[&'a [f64]; 3]>,
}

impl<'a> SliceContext<'a> {
    pub fn new(
        p: &'a Problem,
        inp: &'a SweepInput<'a>,
        gauss: Option<&'a GaussTables>,
        v: usize,
        oct: Octant,
        k: usize,
    ) -> Self {
        let nxy = p.grid.slice_cells();
        let slab = k * nxy..(k + 1) * nxy;
        let xi = p.vgrid.xi[v];
        let speed: [f64; 3] = std::array::from_fn(|a| if p.bounds.collapsed[a] { 0.0 } else { xi[a].abs() });
        let solids = &p.bodies.solids;
        let m = p.vgrid.m;
        let rows = gauss.map(|t| {
            let idx = [v % m, v / m % m, v / (m * m)];
            std::array::from_fn(|d| &t.row(d, idx[d])[slab.clone()])
        });
        Self {
            p,
            inp,
            v,
            xi,
            faces: upwind_faces(oct),
            speed,
            c: speed[2] / p.grid.z.widths[k],
            words: if solids.any() { &solids.words[slab.clone()] } else { &[] },
            eq: &inp.eq[slab],
            rows,
        }
    }

    /// The inflow from the face of `axis` at its face cell `idx`.
    #[inline]
    pub fn ghost(&self, axis: usize, idx: usize) -> f64 {
        let id = self.faces[axis].id();
        self.p.bounds.faces[id].inflow(&self.inp.face_density[id], &self.inp.partner[id], self.p.vgrid.m, idx, self.v)
    }

    /// The wall word of slice cell `s` when it is not 0 (a solid cell or a fluid cell beside
    /// a wall).
    #[inline]
    pub fn word(&self, s: usize) -> Option<u32> {
        self.words.get(s).copied().filter(|&w| w != 0)
    }

    /// The upwind values of a fluid cell with wall word `word`, each replaced by the wall's
    /// emission rho_w shape_b(xi) where that upwind side is a body wall.
    #[inline]
    pub fn wall_inflows(&self, word: u32, up: [f64; 3]) -> [f64; 3] {
        let solids = &self.p.bodies.solids;
        std::array::from_fn(|d| match wall_of(word, self.faces[d]) {
            Some(w) => self.inp.wall_density[w] * self.p.bodies.bodies[solids.walls[w].body as usize].shape[self.v],
            None => up[d],
        })
    }

    /// f^S at slice cell `s`: the Maxwellian factor from the Gaussian tables, or the direct
    /// exponential ([`EqCoeffs::shakhov`]); equal to round-off.
    #[inline]
    pub fn equilibrium(&self, s: usize) -> f64 {
        let (e, xi) = (&self.eq[s], self.xi);
        match self.rows {
            Some([gx, gy, gz]) => {
                let cv = [xi[0] - e.u[0], xi[1] - e.u[1], xi[2] - e.u[2]];
                let c2 = cv[0] * cv[0] + cv[1] * cv[1] + cv[2] * cv[2];
                let sc = e.s[0] * cv[0] + e.s[1] * cv[1] + e.s[2] * cv[2];
                e.pref * gx[s] * gy[s] * gz[s] * (e.base + sc * (2.0 * c2 * e.inv_t - 5.0))
            }
            None => e.shakhov(xi),
        }
    }
}
