//! The Shakhov kinetic model in non-dimensional form (`docs/model.md`).
//!
//! Units: length L, temperature T0, density rho0, speed v0 = sqrt(2 R T0). Then R T = T / 2,
//! p = rho T / 2 and the Maxwellian is
//!
//! ```text
//! f_M = rho / (pi T)^{3/2} exp(-|xi - U|^2 / T)
//! ```
//!
//! and the Shakhov equilibrium
//!
//! ```text
//! f_S = f_M [1 + (1 - Pr) 4 (c . q) / (5 rho T^2) (2 |c|^2 / T - 5)],   c = xi - U.
//! ```

use std::f64::consts::PI;

/// Number of raw moments accumulated per cell (see [`raw`]).
pub const NRAW: usize = 13;

/// Indices into a raw-moment record: sums of w f times 1, xi_i, xi_i xi_j, xi_i |xi|^2.
pub mod raw {
    pub const RHO: usize = 0;
    /// rho U_x, rho U_y, rho U_z.
    pub const MOM: usize = 1;
    /// sum w xi_i xi_j f in the order xx, yy, zz, xy, xz, yz.
    pub const M2: usize = 4;
    /// sum w xi_i |xi|^2 f.
    pub const M3: usize = 10;
}

/// Pairs (i, j) of the symmetric-tensor order xx, yy, zz, xy, xz, yz used everywhere.
pub const SYM_PAIRS: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)];

/// delta from the Knudsen number of the paper's eq. (mu_ref):
/// Kn = (5 - 2 omega)(7 - 2 omega) / (15 sqrt(pi) delta).
pub fn delta_from_kn(kn: f64, omega: f64) -> f64 {
    (5.0 - 2.0 * omega) * (7.0 - 2.0 * omega) / (15.0 * PI.sqrt() * kn)
}

pub fn kn_from_delta(delta: f64, omega: f64) -> f64 {
    (5.0 - 2.0 * omega) * (7.0 - 2.0 * omega) / (15.0 * PI.sqrt() * delta)
}

/// Collision frequency nu = 1 / tau = p / mu = delta rho T^(1 - omega).
pub fn collision_frequency(delta: f64, omega: f64, rho: f64, t: f64) -> f64 {
    delta * rho * t.powf(1.0 - omega)
}

/// The Maxwellian f_M(rho, u, t) at velocity xi.
pub fn maxwellian(rho: f64, u: [f64; 3], t: f64, xi: [f64; 3]) -> f64 {
    let c2 = (xi[0] - u[0]).powi(2) + (xi[1] - u[1]).powi(2) + (xi[2] - u[2]).powi(2);
    rho / (PI * t).powf(1.5) * (-c2 / t).exp()
}

/// The complementary error function, to relative error 1.2e-7 everywhere (the Chebyshev
/// fit of Press et al., Numerical Recipes, 2nd ed., section 6.2, "erfcc").
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

pub fn erf(x: f64) -> f64 {
    1.0 - erfc(x)
}

/// Macroscopic state of a cell, derived from raw moments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Macro {
    pub rho: f64,
    pub u: [f64; 3],
    pub t: f64,
    pub q: [f64; 3],
    /// Pressure tensor P_ij = sum w c_i c_j f, order xx, yy, zz, xy, xz, yz.
    pub p: [f64; 6],
}

impl Macro {
    pub fn equilibrium(rho: f64, u: [f64; 3], t: f64) -> Self {
        let pr = rho * t / 2.0;
        Self { rho, u, t, q: [0.0; 3], p: [pr, pr, pr, 0.0, 0.0, 0.0] }
    }

    /// Scalar pressure p = tr(P) / 3 = rho T / 2.
    pub fn pressure(&self) -> f64 {
        self.rho * self.t / 2.0
    }

    /// Central moments computed exactly from raw moments of one iterate; U is not lagged.
    ///
    /// With c = xi - U and m0, m1, m2, m3 the raw sums:
    /// P_ij = m2_ij - rho U_i U_j, (3/2) rho T = tr P,
    /// 2 q_i = m3_i - 2 U_j m2_ij - U_i tr m2 + 2 rho U_i |U|^2.
    pub fn from_raw(m: &[f64; NRAW]) -> Self {
        let rho = m[raw::RHO];
        let u = [m[raw::MOM] / rho, m[raw::MOM + 1] / rho, m[raw::MOM + 2] / rho];
        let m2 = |i: usize, j: usize| {
            let (a, b) = if i <= j { (i, j) } else { (j, i) };
            let s = SYM_PAIRS.iter().position(|&pq| pq == (a, b)).unwrap();
            m[raw::M2 + s]
        };
        let mut p = [0.0; 6];
        for (s, &(i, j)) in SYM_PAIRS.iter().enumerate() {
            p[s] = m[raw::M2 + s] - rho * u[i] * u[j];
        }
        let t = 2.0 / 3.0 * (p[0] + p[1] + p[2]) / rho;
        let tr_m2 = m[raw::M2] + m[raw::M2 + 1] + m[raw::M2 + 2];
        let u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        let mut q = [0.0; 3];
        for i in 0..3 {
            let u_m2: f64 = (0..3).map(|j| u[j] * m2(i, j)).sum();
            q[i] = 0.5 * (m[raw::M3 + i] - 2.0 * u_m2 - u[i] * tr_m2 + 2.0 * rho * u[i] * u2);
        }
        Self { rho, u, t, q, p }
    }
}

/// Add the raw-moment contribution w f at velocity xi.
#[inline(always)]
pub fn accumulate_raw(acc: &mut [f64; NRAW], xi: [f64; 3], wf: f64) {
    let [x, y, z] = xi;
    let xi2 = x * x + y * y + z * z;
    acc[raw::RHO] += wf;
    acc[raw::MOM] += wf * x;
    acc[raw::MOM + 1] += wf * y;
    acc[raw::MOM + 2] += wf * z;
    acc[raw::M2] += wf * x * x;
    acc[raw::M2 + 1] += wf * y * y;
    acc[raw::M2 + 2] += wf * z * z;
    acc[raw::M2 + 3] += wf * x * y;
    acc[raw::M2 + 4] += wf * x * z;
    acc[raw::M2 + 5] += wf * y * z;
    acc[raw::M3] += wf * x * xi2;
    acc[raw::M3 + 1] += wf * y * xi2;
    acc[raw::M3 + 2] += wf * z * xi2;
}

/// sum_i w_i exp(-(x_i - u)^2 / t) over uniformly spaced nodes x_i (see [`gaussian_moments`]).
pub fn gaussian_sum(nodes: &[f64], w1: &[f64], u: f64, t: f64) -> f64 {
    gaussian_moments(nodes, w1, u, t)[0]
}

/// sum_i w_i g_i (x_i - u)^n for n = 0..3, g_i = exp(-(x_i - u)^2 / t), over uniformly
/// spaced nodes, by the recurrence g_{i+1} = g_i r_i, r_{i+1} = r_i exp(-2 h^2 / t), run
/// outward from the node nearest u so the largest terms carry the least accumulated
/// round-off: five exponentials instead of one per node (the host evaluates this for every
/// cell and axis, every iteration).
pub fn gaussian_moments(nodes: &[f64], w1: &[f64], u: f64, t: f64) -> [f64; 4] {
    gaussian_moments_of(nodes, w1, [u], t)[0]
}

/// [`gaussian_moments`] of A axes at once: the same terms in the same order per axis (the
/// same bits), with the axes' recurrences interleaved, so that A independent chains of
/// multiplications are in flight instead of one (the host's field update spends most of its
/// time here: ~0.36 of 0.40 us per cell at 32 points per axis, one axis at a time).
pub fn gaussian_moments_of<const A: usize>(nodes: &[f64], w1: &[f64], u: [f64; A], t: f64) -> [[f64; 4]; A] {
    let n = nodes.len();
    let add = |m: &mut [f64; 4], w: f64, g: f64, x: f64| {
        let wg = w * g;
        m[0] += wg;
        m[1] += wg * x;
        m[2] += wg * x * x;
        m[3] += wg * x * x * x;
    };
    let mut m = [[0.0; 4]; A];
    if n < 2 {
        for a in 0..A {
            for (&x, &w) in nodes.iter().zip(w1) {
                add(&mut m[a], w, (-(x - u[a]).powi(2) / t).exp(), x - u[a]);
            }
        }
        return m;
    }
    let h = nodes[1] - nodes[0];
    let c = (-2.0 * h * h / t).exp();
    let k: [usize; A] = std::array::from_fn(|a| (((u[a] - nodes[0]) / h).round().max(0.0) as usize).min(n - 1));
    // Outward from node k: up over k..n, then down over k-1..0 (no steps where k = 0).
    for (dir, first, count) in [(1isize, k, k.map(|k| n - k)), (-1, k.map(|k| k.max(1) - 1), k)] {
        let dh = dir as f64 * h;
        let mut g = [0.0; A];
        let mut r = [0.0; A];
        for a in 0..A {
            let d = nodes[first[a]] - u[a];
            g[a] = (-d * d / t).exp();
            r[a] = (-(2.0 * d * dh + h * h) / t).exp();
        }
        for step in 0..count.iter().copied().max().unwrap_or(0) {
            for a in 0..A {
                if step < count[a] {
                    let i = (first[a] as isize + dir * step as isize) as usize;
                    add(&mut m[a], w1[i], g[a], nodes[i] - u[a]);
                    g[a] *= r[a];
                    r[a] *= c;
                }
            }
        }
    }
    m
}

/// Per-cell coefficients of the sweep: everything f^S and the collision term need, computed
/// once per cell and iteration instead of once per velocity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EqCoeffs {
    /// rho / (pi T)^{3/2}
    pub pref: f64,
    pub inv_t: f64,
    pub u: [f64; 3],
    /// (1 - Pr) 4 q / (5 rho T^2): the Shakhov term is (s . c)(2 |c|^2 / T - 5).
    pub s: [f64; 3],
    /// Collision frequency nu = 1 / tau.
    pub nu: f64,
    /// The constant term of the Shakhov factor, 1 - kappa: f^S = f_M (base + (s . c)(...)).
    /// kappa = 0 in the continuum; on the grid it removes the small mass the correction term
    /// would otherwise carry, so the collision term conserves mass exactly.
    pub base: f64,
}

impl EqCoeffs {
    pub fn new(m: &Macro, prandtl: f64, delta: f64, omega: f64) -> Self {
        let k = (1.0 - prandtl) * 4.0 / (5.0 * m.rho * m.t * m.t);
        Self {
            pref: m.rho / (PI * m.t).powf(1.5),
            inv_t: 1.0 / m.t,
            u: m.u,
            s: [k * m.q[0], k * m.q[1], k * m.q[2]],
            nu: collision_frequency(delta, omega, m.rho, m.t),
            base: 1.0,
        }
    }

    /// As [`EqCoeffs::new`], with f^S normalised on the velocity grid so that
    /// sum_v w_v f^S(xi_v) = rho exactly and the collision term conserves mass discretely:
    /// the Maxwellian is scaled by its grid sum (the continuous normalisation loses the tails
    /// beyond the bound), and the Shakhov correction, whose grid sum is not exactly zero when
    /// the grid is not symmetric about U or truncates the tails, is shifted by a constant
    /// kappa f_M. Both are sums of a tensor-product Gaussian, so they factorise into 1D sums
    /// G_a^n = sum_i w_i g(x_i - U_a) (x_i - U_a)^n:
    ///
    /// ```text
    /// Z = G_x^0 G_y^0 G_z^0,
    /// sum w f_M (s.c)(2|c|^2/T - 5) = pref sum_a s_a [ (2/T)(G_a^3 G_b^0 G_c^0 + G_a^1 G_b^2 G_c^0
    ///                                  + G_a^1 G_b^0 G_c^2) - 5 G_a^1 G_b^0 G_c^0 ],
    /// kappa = that sum / (pref Z).
    /// ```
    pub fn new_on_grid(m: &Macro, prandtl: f64, delta: f64, omega: f64, nodes: &[f64], w1: &[f64]) -> Self {
        let mut e = Self::new(m, prandtl, delta, omega);
        let g = gaussian_moments_of(nodes, w1, m.u, m.t);
        let z = g[0][0] * g[1][0] * g[2][0];
        e.pref = m.rho / z;
        if e.s != [0.0; 3] {
            let mut corr = 0.0;
            for a in 0..3 {
                let (b, c) = ((a + 1) % 3, (a + 2) % 3);
                let cube = g[a][3] * g[b][0] * g[c][0] + g[a][1] * g[b][2] * g[c][0] + g[a][1] * g[b][0] * g[c][2];
                corr += e.s[a] * (2.0 * e.inv_t * cube - 5.0 * g[a][1] * g[b][0] * g[c][0]);
            }
            // corr is already relative to pref: kappa = pref corr / (pref Z).
            e.base = 1.0 - corr / z;
        }
        e
    }

    /// The Shakhov equilibrium f^S at velocity xi.
    #[inline(always)]
    pub fn shakhov(&self, xi: [f64; 3]) -> f64 {
        let c = [xi[0] - self.u[0], xi[1] - self.u[1], xi[2] - self.u[2]];
        let c2 = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
        let sc = self.s[0] * c[0] + self.s[1] * c[1] + self.s[2] * c[2];
        self.pref * (-c2 * self.inv_t).exp() * (self.base + sc * (2.0 * c2 * self.inv_t - 5.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_sum_recurrence_matches_direct_sum() {
        let g = crate::grid::VelocityGrid::new(64, 4.0, crate::config::Quadrature::Trapezoid);
        for (u, t) in [(0.0, 1.0), (0.3, 0.7), (-0.45, 1.6), (0.1, 0.2)] {
            let direct: f64 =
                g.nodes.iter().zip(&g.weights_1d).map(|(&x, &w)| w * (-(x - u) * (x - u) / t).exp()).sum();
            let fast = gaussian_sum(&g.nodes, &g.weights_1d, u, t);
            // The i-th term carries ~i^2/2 ulps from the recurrence; weighted by the Gaussian
            // that averages to (sigma / h)^2 / 2 ~ 15-30 ulps for these grids: 64 ulps bound it.
            assert!((fast - direct).abs() < 64.0 * f64::EPSILON * direct, "u {u}, t {t}: {fast} vs {direct}");
        }
    }

    #[test]
    fn three_axes_at_once_give_each_axis_bits() {
        // Nearest nodes at both ends, in the middle and past the grid, odd and even counts.
        for m in [2, 7, 12, 33] {
            let g = crate::grid::VelocityGrid::new(m, 4.0, crate::config::Quadrature::Trapezoid);
            for (u, t) in [([0.0, 0.3, -0.45], 1.0), ([-4.5, 4.5, 3.9], 0.7), ([0.1, -3.99, 2.0], 1.6)] {
                let three = gaussian_moments_of(&g.nodes, &g.weights_1d, u, t);
                for a in 0..3 {
                    let one = gaussian_moments(&g.nodes, &g.weights_1d, u[a], t);
                    assert_eq!(three[a].map(f64::to_bits), one.map(f64::to_bits), "m {m}, u {u:?}, axis {a}");
                }
            }
        }
    }

    #[test]
    fn shakhov_on_grid_conserves_mass_exactly() {
        // A coarse, truncated grid and a drifting, heat-conducting state: the plain Shakhov
        // correction carries grid mass; the shifted one must not (to round-off).
        let g = crate::grid::VelocityGrid::new(12, 3.0, crate::config::Quadrature::Trapezoid);
        let m = Macro { rho: 1.3, u: [0.7, -0.2, 0.1], t: 1.2, q: [0.05, 0.02, -0.03], p: [0.78; 6] };
        let e = EqCoeffs::new_on_grid(&m, 2.0 / 3.0, 1.0, 0.81, &g.nodes, &g.weights_1d);
        let mass: f64 = g.xi.iter().zip(&g.w).map(|(&x, &w)| w * e.shakhov(x)).sum();
        assert!((mass - m.rho).abs() < 1e-13, "{mass}");
        let mut plain = e;
        plain.base = 1.0;
        let pm: f64 = g.xi.iter().zip(&g.w).map(|(&x, &w)| w * plain.shakhov(x)).sum();
        assert!((pm - m.rho).abs() > 1e-6, "the test needs a grid where the shift matters: {pm}");
    }

    #[test]
    fn erfc_matches_tabulated_values() {
        // Abramowitz & Stegun, table 7.1: erf(0.5) = 0.5204998778, erf(1) = 0.8427007929,
        // erf(2) = 0.9953222650.
        for (x, e) in [(0.5, 0.5204998778), (1.0, 0.8427007929), (2.0, 0.9953222650)] {
            assert!((erf(x) - e).abs() < 2e-7, "{x}");
            assert!((erf(-x) + e).abs() < 2e-7, "{x}");
        }
        assert!((erfc(0.0) - 1.0).abs() < 2e-7);
    }

    #[test]
    fn kn_delta_round_trip_and_argon_value() {
        // The VHS mean free path from the viscosity (Bird, "Molecular Gas Dynamics and the
        // Direct Simulation of Gas Flows", 1994) gives Kn delta = (5 - 2 omega)(7 - 2 omega)
        // / (15 sqrt(pi)): 0.6839 for argon's omega = 0.81, 0.9027 for hard spheres (0.5),
        // the values the non-dimensional notes tabulate; to 1e-4, their four digits.
        let d = delta_from_kn(1.0, 0.81);
        assert!((d - 0.6839).abs() < 1e-4, "{d}");
        assert!((kn_from_delta(d, 0.81) - 1.0).abs() < 1e-14);
        // Hard spheres: Kn = 0.9027 / delta.
        assert!((delta_from_kn(1.0, 0.5) - 0.9027).abs() < 1e-4);
    }

    #[test]
    fn from_raw_inverts_equilibrium_raw_moments() {
        // Raw moments of a drifting Maxwellian with heat flux, written analytically:
        // m2_ij = P_ij + rho U_i U_j, m3_i = 2 q_i + 2 U_j P_ij + U_i tr P + rho U_i |U|^2.
        let (rho, u, t) = (1.3, [0.2, -0.1, 0.05], 0.9);
        let q = [0.01, -0.02, 0.003];
        let pp = [0.6, 0.55, 0.6050, 0.01, -0.02, 0.03];
        let pm = |i: usize, j: usize| {
            let (a, b) = if i <= j { (i, j) } else { (j, i) };
            pp[SYM_PAIRS.iter().position(|&x| x == (a, b)).unwrap()]
        };
        let tr_p = pp[0] + pp[1] + pp[2];
        let u2: f64 = u.iter().map(|x| x * x).sum();
        let mut m = [0.0; NRAW];
        m[raw::RHO] = rho;
        for i in 0..3 {
            m[raw::MOM + i] = rho * u[i];
            let up: f64 = (0..3).map(|j| u[j] * pm(i, j)).sum();
            m[raw::M3 + i] = 2.0 * q[i] + 2.0 * up + u[i] * tr_p + rho * u[i] * u2;
        }
        for (s, &(i, j)) in SYM_PAIRS.iter().enumerate() {
            m[raw::M2 + s] = pp[s] + rho * u[i] * u[j];
        }
        let mac = Macro::from_raw(&m);
        let _ = t;
        assert!((mac.rho - rho).abs() < 1e-15);
        for i in 0..3 {
            assert!((mac.u[i] - u[i]).abs() < 1e-15);
            assert!((mac.q[i] - q[i]).abs() < 1e-14, "q{i}: {} vs {}", mac.q[i], q[i]);
        }
        for (a, b) in mac.p.iter().zip(&pp) {
            assert!((a - b).abs() < 1e-14);
        }
        assert!((mac.t - 2.0 / 3.0 * tr_p / rho).abs() < 1e-15);
    }
}
