//! Linearised face fluxes of the synthetic (correction) equations, `docs/model.md`.
//!
//! Unknowns per cell are the primitive corrections `dW = (d rho, d U_x, d U_y, d U_z, d T)`;
//! rows are the fluxes of the collision invariants psi = (1, xi_x, xi_y, xi_z, |xi|^2), the
//! quantities the kinetic sweep conserves. The flux along +e_a through a face between a
//! minus-side cell (lower coordinate) and a plus-side cell is written
//!
//! ```text
//! dF = J_minus dW_minus + J_plus dW_plus,
//! J_minus = J_c / 2 + D / 2 + G,     J_plus = J_c / 2 - D / 2 - G,
//! ```
//!
//! - `J_c`: the Jacobian of the Euler flux (central part of the upwind kinetic flux);
//! - `D = sum_v w |xi_a| psi dW(f_M)`: the upwind split's dissipation, from half-range
//!   moments of the Maxwellian at rest (the upwind sweep carries exactly this numerical
//!   diffusion between cells, so the correction must model it);
//! - `G`: Newton and Fourier conduction between the cell centres. Together with `D` it is
//!   the upwind scheme's effective viscosity mu + rho h sqrt(T / pi) / 2 (its modified
//!   equation's Chapman-Enskog limit).
//!
//! Any stable approximation here changes only how fast the outer iteration converges, never
//! its fixed point (see `super`).

/// Unknowns per cell.
pub const NV: usize = 5;
pub type Block = [[f64; NV]; NV];

pub const ZERO: Block = [[0.0; NV]; NV];

/// The state the fluxes are linearised about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Base {
    pub rho: f64,
    pub u: [f64; 3],
    pub t: f64,
}

impl Base {
    pub fn mean(a: &Base, b: &Base) -> Base {
        Base { rho: 0.5 * (a.rho + b.rho), u: std::array::from_fn(|i| 0.5 * (a.u[i] + b.u[i])), t: 0.5 * (a.t + b.t) }
    }
}

/// Transport coefficients in the units of `crate::model`: mu = T^omega / (2 delta),
/// kappa = 5 mu / (4 Pr) (c_p = 5 R / 2 with R = 1/2).
#[derive(Debug, Clone, Copy)]
pub struct Gas {
    pub delta: f64,
    pub omega: f64,
    pub prandtl: f64,
}

impl Gas {
    pub fn viscosity(&self, t: f64) -> f64 {
        t.powf(self.omega) / (2.0 * self.delta)
    }

    /// Maxwell's slip length: mu / (rho sqrt(T / pi)), the mean free path of the
    /// slip coefficient 1 (full accommodation).
    pub fn slip_length(&self, b: &Base) -> f64 {
        self.viscosity(b.t) / (b.rho * (b.t / std::f64::consts::PI).sqrt())
    }

    /// Conductances (momentum, |xi|^2-flux) of a face whose centres are `d` apart. Not
    /// limited where cells are thinner than a mean free path: the error modes the
    /// correction must remove are smooth, and on their scale the kinetic response is
    /// diffusive. Overestimating the conduction only shortens the correction; under-
    /// estimating it makes the correction overshoot.
    pub fn conductances(&self, b: &Base, d: f64) -> [f64; 2] {
        let mu = self.viscosity(b.t);
        // The |xi|^2 flux carries 2 q = -2 kappa grad T.
        [mu / d, 2.0 * 5.0 * mu / (4.0 * self.prandtl) / d]
    }
}

/// Jacobian of the Euler flux along e_a, sum w xi_a psi f_M, with respect to (rho, U, T):
/// mass rho U_a; momentum rho U_i U_a + p delta_ia; |xi|^2 flux 5 p U_a + rho U_a |U|^2;
/// p = rho T / 2.
pub fn central(b: &Base, a: usize) -> Block {
    let (rho, u, t) = (b.rho, b.u, b.t);
    let un = u[a];
    let u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    let p = 0.5 * rho * t;
    let mut j = ZERO;
    j[0][0] = un;
    j[0][1 + a] = rho;
    for i in 0..3 {
        let row = &mut j[1 + i];
        row[0] = u[i] * un;
        for k in 0..3 {
            row[1 + k] = rho * (if i == k { un } else { 0.0 } + if k == a { u[i] } else { 0.0 });
        }
        if i == a {
            row[0] += 0.5 * t;
            row[4] = 0.5 * rho;
        }
    }
    j[4][0] = 2.5 * t * un + un * u2;
    for k in 0..3 {
        j[4][1 + k] = 2.0 * rho * un * u[k] + if k == a { 5.0 * p + rho * u2 } else { 0.0 };
    }
    j[4][4] = 2.5 * rho * un;
    j
}

/// The upwind split's dissipation: [`dissipation_at_rest`] plus |U_a| dC/dW, which upwinds
/// the convection of a drifting gas (where the half-range sums tend to |J_c|; without it the
/// correction of a supersonic flow is a central difference with too little dissipation and
/// neither the smoother nor GMRES converge).
pub fn dissipation(b: &Base, a: usize) -> Block {
    let mut d = dissipation_at_rest(b, a);
    let un = b.u[a].abs();
    if un > 0.0 {
        let u2 = b.u[0] * b.u[0] + b.u[1] * b.u[1] + b.u[2] * b.u[2];
        // C = (rho, rho U, rho |U|^2 + 3 rho T / 2).
        d[0][0] += un;
        for i in 0..3 {
            d[1 + i][0] += un * b.u[i];
            d[1 + i][1 + i] += un * b.rho;
            d[4][1 + i] += un * 2.0 * b.rho * b.u[i];
        }
        d[4][0] += un * (u2 + 1.5 * b.t);
        d[4][4] += un * 1.5 * b.rho;
    }
    d
}

/// sum w |xi_a| psi dW(f_M) for the Maxwellian at rest, s = sqrt(T / pi):
/// mass (s, 0, rho s / (2T)); normal momentum 2 rho s; tangential rho s; |xi|^2 (2 T s, 3 rho s).
pub fn dissipation_at_rest(b: &Base, a: usize) -> Block {
    let (rho, t) = (b.rho, b.t);
    let s = (t / std::f64::consts::PI).sqrt();
    let mut d = ZERO;
    d[0][0] = s;
    d[0][4] = rho * s / (2.0 * t);
    for i in 0..3 {
        d[1 + i][1 + i] = if i == a { 2.0 * rho * s } else { rho * s };
    }
    d[4][0] = 2.0 * t * s;
    d[4][4] = 3.0 * rho * s;
    d
}

/// The normal-stress coefficient of the correction's Newton term. Navier-Stokes has 4/3;
/// the correction converges faster with less, because where cells are thinner than a mean
/// free path the sweep's normal-velocity response is not viscous, and a stiff normal stress
/// leaves the pressure and normal-velocity error to plain source iteration. Sweeps to the
/// case's tolerance (2 CPU cores; 4/3, 1.0, 0.6, 0.3, 0): planar heat transfer, S-model,
/// delta = 1, 200 cells: 60, 35, 27, 29, 31 (source iteration 35); 16^3 cavity at Kn 0.1:
/// 16, 16, 14, 14, 14; at Kn 1: 12, -, 13, 13, 15; at Kn 10: 18, -, 18, 19, 19; planar
/// heat transfer at delta = 10, 400 cells: 32, -, 26, 27, 27. Only the rate depends on it.
const NORMAL_STRESS: f64 = 0.6;

/// Newton and Fourier terms: -NORMAL_STRESS mu dU_a / d, -mu dU_t / d, -2 kappa dT / d.
fn conduction(g: [f64; 2], a: usize) -> Block {
    let mut c = ZERO;
    for i in 0..3 {
        c[1 + i][1 + i] = if i == a { NORMAL_STRESS * g[0] } else { g[0] };
    }
    c[4][4] = g[1];
    c
}

/// (J_minus, J_plus) of a face along e_a; `g` from [`Gas::conductances`].
pub fn face(b: &Base, a: usize, g: [f64; 2]) -> (Block, Block) {
    let (jc, d, c) = (central(b, a), dissipation(b, a), conduction(g, a));
    let mut minus = ZERO;
    let mut plus = ZERO;
    for r in 0..NV {
        for k in 0..NV {
            minus[r][k] = 0.5 * jc[r][k] + 0.5 * d[r][k] + c[r][k];
            plus[r][k] = 0.5 * jc[r][k] - 0.5 * d[r][k] - c[r][k];
        }
    }
    (minus, plus)
}

pub fn mul(a: &Block, b: &Block) -> Block {
    std::array::from_fn(|r| std::array::from_fn(|k| (0..NV).map(|m| a[r][m] * b[m][k]).sum()))
}

pub fn add_scaled(acc: &mut Block, s: f64, b: &Block) {
    for r in 0..NV {
        for k in 0..NV {
            acc[r][k] += s * b[r][k];
        }
    }
}

pub fn apply(a: &Block, x: &[f64; NV]) -> [f64; NV] {
    std::array::from_fn(|r| (0..NV).map(|k| a[r][k] * x[k]).sum())
}

/// What a boundary face's ghost state does with the cell's correction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ghost {
    /// A diffuse wall: its velocity and temperature are fixed; its density is whatever
    /// makes the mass flux zero (the sweep's rho_w).
    Wall,
    /// The mirror image: normal velocity reversed.
    Mirror,
    /// Fixed: the free stream.
    Fixed,
}

/// The outflow block of a boundary face for the cell beside it: the linearised flux out of
/// the cell per unit area, as a block acting on the cell's correction. `cell_is_minus`: the
/// face is the cell's upper face along `a` (outward normal +e_a).
pub fn boundary(b: &Base, a: usize, g: [f64; 2], ghost: Ghost, cell_is_minus: bool) -> Block {
    let (minus, plus) = face(b, a, g);
    let (cell, other) = if cell_is_minus { (minus, plus) } else { (plus, minus) };
    let map = match ghost {
        Ghost::Fixed => ZERO,
        Ghost::Mirror => {
            let mut m = ZERO;
            for (k, row) in m.iter_mut().enumerate() {
                row[k] = if k == 1 + a { -1.0 } else { 1.0 };
            }
            m
        }
        Ghost::Wall => {
            // other[0][0] d rho_g + cell[0] . dW = 0.
            let mut m = ZERO;
            for k in 0..NV {
                m[0][k] = -cell[0][k] / other[0][0];
            }
            m
        }
    };
    let mut out = cell;
    add_scaled(&mut out, 1.0, &mul(&other, &map));
    let sign = if cell_is_minus { 1.0 } else { -1.0 };
    out.iter_mut().for_each(|r| r.iter_mut().for_each(|x| *x *= sign));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Quadrature;
    use crate::grid::VelocityGrid;
    use crate::model::maxwellian;

    /// 1D nodes and weights on [-8, 8]: composite Simpson on each half, so the kink of |xi|
    /// at 0 sits on a panel end (a trapezoid rule across it is only O(h^2) accurate).
    fn rule() -> (Vec<f64>, Vec<f64>) {
        let (n, len) = (400, 8.0);
        let h = len / n as f64;
        let (mut x, mut w) = (Vec::new(), Vec::new());
        for half in [-1.0, 1.0] {
            for i in 0..=n {
                let c = if i == 0 || i == n {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                x.push(half * i as f64 * h);
                w.push(c * h / 3.0);
            }
        }
        (x, w)
    }

    /// sum w xi_a or |xi_a| times psi f_M(W) over the tensor rule, axis a on the fine
    /// split rule and the others on a 48-point trapezoid (smooth integrands: spectral).
    fn half_range(w: [f64; 5], a: usize, abs: bool) -> [f64; NV] {
        let (fx, fw) = rule();
        let v = VelocityGrid::new(48, 6.0, Quadrature::Trapezoid);
        let mut s = [0.0; NV];
        for (&xa, &wa) in fx.iter().zip(&fw) {
            for (&xb, &wb) in v.nodes.iter().zip(&v.weights_1d) {
                for (&xc, &wc) in v.nodes.iter().zip(&v.weights_1d) {
                    let mut x = [0.0; 3];
                    (x[a], x[(a + 1) % 3], x[(a + 2) % 3]) = (xa, xb, xc);
                    let f =
                        wa * wb * wc * maxwellian(w[0], [w[1], w[2], w[3]], w[4], x) * if abs { xa.abs() } else { xa };
                    let psi = [1.0, x[0], x[1], x[2], x[0] * x[0] + x[1] * x[1] + x[2] * x[2]];
                    for r in 0..NV {
                        s[r] += psi[r] * f;
                    }
                }
            }
        }
        s
    }

    fn fd_jacobian(w0: [f64; 5], a: usize, abs: bool) -> Block {
        let mut j = ZERO;
        for k in 0..NV {
            let h = 1e-5;
            let (mut wp, mut wm) = (w0, w0);
            wp[k] += h;
            wm[k] -= h;
            let (fp, fm) = (half_range(wp, a, abs), half_range(wm, a, abs));
            for r in 0..NV {
                j[r][k] = (fp[r] - fm[r]) / (2.0 * h);
            }
        }
        j
    }

    #[test]
    fn euler_jacobian_and_dissipation_match_velocity_sums() {
        // Reference: central differences (step 1e-5, error ~1e-10 times the third
        // derivative) of quadrature sums whose error is ~1e-9 (Simpson, h = 0.02, across the
        // kink; spectral elsewhere; tails beyond |xi| = 6 below e^-36). 1e-6 bounds both,
        // scaled by the largest entries (~5).
        let b = Base { rho: 1.3, u: [0.2, -0.1, 0.05], t: 0.9 };
        for a in 0..3 {
            let jc = central(&b, a);
            let fd = fd_jacobian([b.rho, b.u[0], b.u[1], b.u[2], b.t], a, false);
            for r in 0..NV {
                for k in 0..NV {
                    assert!(
                        (jc[r][k] - fd[r][k]).abs() < 1e-6,
                        "central a {a} [{r}][{k}]: {} vs {}",
                        jc[r][k],
                        fd[r][k]
                    );
                }
            }
        }
        let rest = Base { u: [0.0; 3], ..b };
        for a in 0..3 {
            let d = dissipation(&rest, a);
            let fd = fd_jacobian([rest.rho, 0.0, 0.0, 0.0, rest.t], a, true);
            for r in 0..NV {
                for k in 0..NV {
                    assert!(
                        (d[r][k] - fd[r][k]).abs() < 1e-6,
                        "dissipation a {a} [{r}][{k}]: {} vs {}",
                        d[r][k],
                        fd[r][k]
                    );
                }
            }
        }
    }

    #[test]
    fn a_wall_passes_no_mass_and_a_mirror_no_mass_or_tangential_momentum() {
        let b = Base { rho: 1.1, u: [0.0, 0.3, 0.0], t: 1.2 };
        let g = Gas { delta: 5.0, omega: 0.81, prandtl: 2.0 / 3.0 }.conductances(&b, 0.05);
        for minus in [true, false] {
            let w = boundary(&b, 0, g, Ghost::Wall, minus);
            assert!(w[0].iter().all(|x| x.abs() < 1e-14), "{:?}", w[0]);
            // A tangential velocity correction is resisted (shear flows into the wall).
            assert!(w[2][2] > 0.0);
            let m = boundary(&b, 0, g, Ghost::Mirror, minus);
            assert!(m[0].iter().all(|x| x.abs() < 1e-14), "{:?}", m[0]);
            assert!(m[2].iter().all(|x| x.abs() < 1e-14) && m[4][4].abs() < 1e-14, "{m:?}");
        }
    }
}
