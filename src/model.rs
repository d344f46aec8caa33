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
use std::ops::{Add, Div, Mul, Sub};

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

/// Updates of the grid Maxwellian's parameters at most ([`matched_maxwellian`]). Each divides
/// the defect by 30 or more on a grid that resolves the Maxwellian: from the state's 2e-4 on
/// 10 points over +-4 (U = 0.1) one update leaves 3e-7 and three 1e-12; a Mach 2 stream's
/// 4e-3 lost to the truncated tails (the paper cube's, 2.2 thermal widths inside the bound)
/// falls by 30-40 per update, to 2e-13 after seven and 5e-15 after eight. Four left that
/// stream 5e-9 off, which
/// kept a uniform free stream 1e-7 from uniform (`tests/conservation.rs`).
pub const MATCH_UPDATES: usize = 8;
/// The defect below which [`matched_maxwellian`] stops, relative to sqrt(T) (mean) and to T
/// (variance): a few hundred ulps of f64, so that the host and the device, whose
/// exponentials differ in the last place, stop alike except within a hair of it.
pub const MATCH_TOL: f64 = 1e-13;
/// [`MATCH_TOL`] of the f32 records stage (`shaders/cell_records.wgsl`): its Gaussian sums
/// carry a few f32 ulps (1.2e-7 each), at which the updates only move the round-off.
pub const MATCH_TOL_F32: f32 = 2e-7;
/// The farthest the matched parameters may stray from the state's, in units of sqrt(T) (U)
/// and of T (T). A grid that needs more cannot carry the state's Maxwellian (one drifting
/// off its end, or narrower than the node spacing): the plain parameters are kept then.
pub const MATCH_REACH: f64 = 0.25;

/// The parameters (U', T') of the grid Maxwellian whose discrete moments are the state's:
/// sum_v w_v xi_v f_M' = rho U and sum_v w_v |xi_v|^2 f_M' = rho |U|^2 + 3 rho T / 2, with
/// f_M' = rho exp(-|xi - U'|^2 / T') / Z' (Z' its grid sum, which keeps the mass). This is
/// Mieussens' discrete equilibrium (Math. Models Methods Appl. Sci. 10 (2000) 1121), which
/// makes the collision term conserve momentum and energy on the grid as well as mass: exactly
/// for BGK or a state without heat flux; the Shakhov factor's polynomial keeps grid moments of
/// its own, the heat flux's s times the grid's aliasing of the fourth and fifth moments (at
/// U = 0.1, q = 0.01, T = 1 on 10 points over +-4, 3.8e-6 in momentum and 1.0e-5 in
/// energy, from 1.3e-5 and 2.7e-4 with the plain parameters).
///
/// The grid is a tensor product, so the moments factorise: along axis a the grid
/// Maxwellian's mean is U'_a + G_a^1 / G_a^0 and its variance G_a^2 / G_a^0 - (G_a^1 / G_a^0)^2
/// ([`gaussian_moments_of`]). Each update moves U'_a by its mean's defect and T' by 2/3 of the
/// summed variances' defect (the continuum's derivatives: 1 and 1/2 per axis). The tests
/// compare squares (no square root: the f64 shaders have only +, -, * and /).
///
/// Why: the plain parameters' defects are the trapezoid rule's aliasing error, about
/// exp(-pi^2 T / h^2) for a node spacing h (2e-5 in the mean at U = 0.1 on 10 points over
/// +-4, 1e-7 on 16 or more, where the tails' truncation takes over). The collision term then
/// makes nu times that much momentum and energy in every cell: at delta 7000 (Kn 1e-4) on 10
/// points a source that the synthetic correction, which assumes conservation, amplified
/// without end. Returns the parameters and their Gaussian sums.
pub fn matched_maxwellian(nodes: &[f64], w1: &[f64], u: [f64; 3], t: f64, tol: f64) -> ([f64; 3], f64, [[f64; 4]; 3]) {
    matched_maxwellian_by(|v, s| gaussian_moments_of(nodes, w1, v, s), u, t, tol)
}

/// [`matched_maxwellian`] with the Gaussian sums of three axes given by `moments`, in the
/// precision `T`: the host's f64 and the records stages' CPU twins (f64 and f32, their own
/// exponentials), which shaders/cell_records*.wgsl and shaders/cuda/cell_records.cu write
/// out line for line.
pub fn matched_maxwellian_by<T>(
    moments: impl Fn([T; 3], T) -> [[T; 4]; 3],
    u: [T; 3],
    t: T,
    tol: T,
) -> ([T; 3], T, [[T; 4]; 3])
where
    T: Copy + PartialOrd + From<f32> + Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Div<Output = T>,
{
    let (zero, three_halves, reach) = (T::from(0.0), T::from(1.5), T::from(MATCH_REACH as f32));
    let (mut v, mut s, mut g) = (u, t, moments(u, t));
    for _ in 0..MATCH_UPDATES {
        let mean: [T; 3] = std::array::from_fn(|a| g[a][1] / g[a][0]);
        let var = (g[0][2] / g[0][0] - mean[0] * mean[0])
            + (g[1][2] / g[1][0] - mean[1] * mean[1])
            + (g[2][2] / g[2][0] - mean[2] * mean[2]);
        let shift: [T; 3] = std::array::from_fn(|a| v[a] + mean[a] - u[a]);
        let heat = (var - three_halves * t) / three_halves;
        // Each defect squared against the tolerance's, in units of T (mean) and T^2 (variance).
        let b = tol * tol * t;
        if heat * heat / t <= b && shift[0] * shift[0] <= b && shift[1] * shift[1] <= b && shift[2] * shift[2] <= b {
            break;
        }
        // Only the defects beyond it move their parameter: a drift that is zero stays exactly
        // zero instead of taking the round-off of its mean.
        let (mut v1, mut s1) = (v, s);
        for a in 0..3 {
            if shift[a] * shift[a] > b {
                v1[a] = v[a] - shift[a];
            }
        }
        if heat * heat / t > b {
            s1 = s - heat;
        }
        // Written so that a NaN counts as too far.
        let r2 = reach * reach;
        let d = [v1[0] - u[0], v1[1] - u[1], v1[2] - u[2], s1 - t];
        if !(d[0] * d[0] <= r2 * t
            && d[1] * d[1] <= r2 * t
            && d[2] * d[2] <= r2 * t
            && d[3] * d[3] <= r2 * t * t
            && s1 > zero)
        {
            // The grid cannot carry this Maxwellian: the last parameters within reach (the
            // plain ones where the first update leaves it) and their sums, so that a state
            // near the edge of reach is not thrown back to the plain parameters' defect.
            return (v, s, g);
        }
        (v, s) = (v1, s1);
        g = moments(v, s);
    }
    (v, s, g)
}

/// Per-cell coefficients of the sweep: everything f^S and the collision term need, computed
/// once per cell and iteration instead of once per velocity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EqCoeffs {
    /// rho / Z', the grid Maxwellian's normaliser (rho / (pi T)^{3/2} in the continuum).
    pub pref: f64,
    /// 1 / T' and U': the grid Maxwellian's parameters ([`matched_maxwellian`]), not the
    /// state's T and U, which they differ from by the grid's quadrature error.
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
        let (u, t, g) = matched_maxwellian(nodes, w1, m.u, m.t, MATCH_TOL);
        e.u = u;
        e.inv_t = 1.0 / t;
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

    /// sum_v w_v (1, xi_v, |xi_v|^2) f^S(xi_v) on the grid `g`.
    fn grid_moments(g: &crate::grid::VelocityGrid, e: &EqCoeffs) -> [f64; 5] {
        let mut m = [0.0; 5];
        for (&x, &w) in g.xi.iter().zip(&g.w) {
            let wf = w * e.shakhov(x);
            m[0] += wf;
            for a in 0..3 {
                m[1 + a] += wf * x[a];
            }
            m[4] += wf * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        }
        m
    }

    #[test]
    fn the_grid_equilibrium_conserves_momentum_and_energy_exactly() {
        // 10 points over +-4 alias the Gaussian by ~exp(-pi^2 T / h^2): the state's own
        // parameters miss its momentum by ~1e-5 and its energy by ~1e-4 (asserted, so the
        // test sees the defect that the matching removes); the matched ones to round-off,
        // 1e-13 of the moment (sums of 1000 terms of a few ulps each, and the last update's
        // 1e-13 stop).
        let g = crate::grid::VelocityGrid::new(10, 4.0, crate::config::Quadrature::Trapezoid);
        for (u, t) in [([0.3, -0.1, 0.0], 0.9), ([0.1, 0.0, 0.0], 1.0), ([-0.5, 0.2, 0.4], 1.4)] {
            let m = Macro::equilibrium(1.2, u, t);
            let want =
                [1.2, 1.2 * u[0], 1.2 * u[1], 1.2 * u[2], 1.2 * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) + 1.8 * t];
            let e = EqCoeffs::new_on_grid(&m, 2.0 / 3.0, 1.0, 0.81, &g.nodes, &g.weights_1d);
            let got = grid_moments(&g, &e);
            for k in 0..5 {
                assert!(
                    (got[k] - want[k]).abs() < 1e-13 * want[4],
                    "u {u:?}, t {t}: moment {k}: {} vs {}",
                    got[k],
                    want[k]
                );
            }
            // A drift that is zero stays exactly zero.
            assert!((0..3).all(|a| u[a] != 0.0 || e.u[a] == 0.0), "{:?}", e.u);
            let mut plain = e;
            plain.u = m.u;
            plain.inv_t = 1.0 / t;
            plain.pref =
                m.rho / gaussian_moments_of(&g.nodes, &g.weights_1d, m.u, t).iter().map(|x| x[0]).product::<f64>();
            let old = grid_moments(&g, &plain);
            assert!(
                (old[4] - want[4]).abs() > 1e-6 * want[4],
                "u {u:?}, t {t}: the plain energy {} vs {}",
                old[4],
                want[4]
            );
        }
    }

    #[test]
    fn a_maxwellian_the_grid_cannot_carry_keeps_its_parameters() {
        // Drifting past the grid's end, and narrower than the spacing: no parameters nearby
        // match, and the state's own are kept, finite.
        let g = crate::grid::VelocityGrid::new(10, 4.0, crate::config::Quadrature::Trapezoid);
        for (u, t) in [([4.5, 0.0, 0.0], 1.0), ([0.1, 0.0, 0.0], 0.05)] {
            let (v, s, gs) = matched_maxwellian(&g.nodes, &g.weights_1d, u, t, MATCH_TOL);
            assert_eq!((v, s), (u, t), "u {u:?}, t {t}");
            assert!(gs.iter().flatten().all(|x| x.is_finite()), "{gs:?}");
        }
    }

    /// The largest defect of (u, t)'s grid Maxwellian against the state (u0, t0), relative to
    /// sqrt(t0) (mean) and t0 (variance).
    fn defect(g: &crate::grid::VelocityGrid, u: [f64; 3], t: f64, u0: [f64; 3], t0: f64) -> f64 {
        let gs = gaussian_moments_of(&g.nodes, &g.weights_1d, u, t);
        let mean: [f64; 3] = std::array::from_fn(|a| gs[a][1] / gs[a][0]);
        let var: f64 = (0..3).map(|a| gs[a][2] / gs[a][0] - mean[a] * mean[a]).sum();
        (0..3).map(|a| (u[a] + mean[a] - u0[a]).abs() / t0.sqrt()).fold((var - 1.5 * t0).abs() / (1.5 * t0), f64::max)
    }

    #[test]
    fn a_maxwellian_at_the_edge_of_reach_keeps_its_last_parameters_within_it() {
        // A cold stream near the bound: the updates cut the defect, then one would leave the
        // reach. The parameters before it are kept, not the plain ones (whose defect is 30
        // times larger), so that a state near the edge does not jump between the two.
        let g = crate::grid::VelocityGrid::new(20, 4.0, crate::config::Quadrature::Trapezoid);
        let (u, t) = ([3.5, 0.0, 0.0], 0.3);
        let (v, s, _) = matched_maxwellian(&g.nodes, &g.weights_1d, u, t, MATCH_TOL);
        assert!((v, s) != (u, t), "the plain parameters came back");
        let near = |d: f64, r: f64| d * d <= MATCH_REACH * MATCH_REACH * r;
        assert!(near(v[0] - u[0], t) && near(s - t, t * t), "{v:?} {s}");
        let (kept, plain) = (defect(&g, v, s, u, t), defect(&g, u, t, u, t));
        assert!(kept * 10.0 < plain, "defect {kept:.1e} kept against the plain {plain:.1e}");
    }

    #[test]
    fn the_records_shaders_share_the_matching_constants() {
        // A shader that stopped one update early or at another tolerance would move U' by
        // ~1e-12, which the records' f32 rounding hides from the stages' comparisons with the
        // host: hold the literals equal instead.
        let value = |src: &str, name: &str| -> f64 {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("const {name}:")) || l.starts_with(&format!("#define {name} ")));
            let line = line.unwrap_or_else(|| panic!("{name} not found"));
            let v = line.rsplit(['=', ' ']).find(|t| !t.is_empty()).unwrap().trim_end_matches(';');
            v.trim_end_matches("lf").trim_end_matches('u').parse().unwrap_or_else(|e| panic!("{name}: {v}: {e}"))
        };
        let f64_sources =
            [include_str!("../shaders/cell_records_f64.wgsl"), include_str!("../shaders/cuda/cell_records.cu")];
        let f32_source = include_str!("../shaders/cell_records.wgsl");
        for src in f64_sources {
            assert_eq!(value(src, "MATCH_TOL"), MATCH_TOL);
        }
        assert_eq!(value(f32_source, "MATCH_TOL") as f32, MATCH_TOL_F32);
        for src in f64_sources.into_iter().chain([f32_source]) {
            assert_eq!(value(src, "MATCH_UPDATES"), MATCH_UPDATES as f64);
            assert_eq!(value(src, "MATCH_REACH"), MATCH_REACH);
        }
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
