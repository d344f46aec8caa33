//! Discrete velocity grid: a tensor product of one uniform 1D rule on [-a, a].
//!
//! Nodes are xi_i = (2 i - (M - 1)) a / (M - 1), i = 0..M, so the grid is exactly symmetric
//! and, for odd M, holds an exact zero. Velocities are numbered v = (iz M + iy) M + ix.

use crate::config::{Quadrature, VelocityConfig};

/// One of the eight sweep directions. Bit d is set when the velocity's component d is
/// negative. A zero component counts as positive, so every velocity belongs to exactly one
/// octant; its upwind coefficient along that axis is zero, so the sweep order there is moot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Octant(pub u8);

impl Octant {
    pub const ALL: [Octant; 8] =
        [Octant(0), Octant(1), Octant(2), Octant(3), Octant(4), Octant(5), Octant(6), Octant(7)];

    pub fn of(xi: [f64; 3]) -> Self {
        Octant((xi[0] < 0.0) as u8 | ((xi[1] < 0.0) as u8) << 1 | ((xi[2] < 0.0) as u8) << 2)
    }

    /// True when the sweep along `axis` runs from high index to low.
    #[inline(always)]
    pub fn negative(self, axis: usize) -> bool {
        self.0 >> axis & 1 == 1
    }
}

/// Part `r` of `len` items cut into `n` contiguous runs whose lengths differ by at most one.
pub fn share_range(len: usize, r: usize, n: usize) -> std::ops::Range<usize> {
    (r * len / n)..((r + 1) * len / n)
}

#[derive(Debug, Clone)]
pub struct VelocityGrid {
    /// Points per axis.
    pub m: usize,
    pub half_width: f64,
    pub quadrature: Quadrature,
    /// 1D nodes and weights.
    pub nodes: Vec<f64>,
    pub weights_1d: Vec<f64>,
    /// All M^3 velocities and their weights w = w_x w_y w_z.
    pub xi: Vec<[f64; 3]>,
    pub w: Vec<f64>,
    /// The part of every octant this process sweeps (MPI ranks, `docs/parallel.md`):
    /// `(rank, ranks)`, `(0, 1)` for all of it.
    pub share: (usize, usize),
}

impl VelocityGrid {
    pub fn new(m: usize, half_width: f64, quadrature: Quadrature) -> Self {
        assert!(m >= 2);
        let step = half_width / (m - 1) as f64;
        let h = 2.0 * step;
        let nodes: Vec<f64> = (0..m).map(|i| (2 * i as i64 - (m as i64 - 1)) as f64 * step).collect();
        let weights_1d: Vec<f64> = match quadrature {
            Quadrature::Trapezoid => (0..m).map(|i| if i == 0 || i == m - 1 { 0.5 * h } else { h }).collect(),
            Quadrature::Simpson => {
                assert!(m % 2 == 1, "Simpson needs odd M");
                (0..m)
                    .map(|i| {
                        let c = if i == 0 || i == m - 1 {
                            1.0
                        } else if i % 2 == 1 {
                            4.0
                        } else {
                            2.0
                        };
                        c * h / 3.0
                    })
                    .collect()
            }
        };
        let mut xi = Vec::with_capacity(m * m * m);
        let mut w = Vec::with_capacity(m * m * m);
        for iz in 0..m {
            for iy in 0..m {
                for ix in 0..m {
                    xi.push([nodes[ix], nodes[iy], nodes[iz]]);
                    w.push(weights_1d[ix] * weights_1d[iy] * weights_1d[iz]);
                }
            }
        }
        Self { m, half_width, quadrature, nodes, weights_1d, xi, w, share: (0, 1) }
    }

    pub fn from_config(v: &VelocityConfig) -> Self {
        Self::new(v.points, v.max, v.quadrature)
    }

    pub fn len(&self) -> usize {
        self.xi.len()
    }

    pub fn is_empty(&self) -> bool {
        self.xi.is_empty()
    }

    /// Velocity indices of each octant that this process sweeps, in increasing index order.
    /// With `share = (r, n)` each octant's velocities are cut into n contiguous runs whose
    /// lengths differ by at most one and run r is kept: every rank gets the same share of
    /// every octant, so the phase-space points balance, and a batch still never mixes
    /// octants.
    pub fn octant_members(&self) -> [Vec<u32>; 8] {
        let mut out: [Vec<u32>; 8] = Default::default();
        for (v, &x) in self.xi.iter().enumerate() {
            out[Octant::of(x).0 as usize].push(v as u32);
        }
        let (r, n) = self.share;
        if n > 1 {
            for o in out.iter_mut() {
                let range = share_range(o.len(), r, n);
                *o = o[range].to_vec();
            }
        }
        out
    }

    /// This grid, of which only part `rank` of `ranks` is swept here.
    pub fn with_share(mut self, rank: usize, ranks: usize) -> Self {
        assert!(ranks >= 1 && rank < ranks);
        self.share = (rank, ranks);
        self
    }

    /// sum_v w_v g(xi_v), summed in velocity order.
    pub fn integrate(&self, g: impl Fn([f64; 3]) -> f64) -> f64 {
        self.xi.iter().zip(&self.w).map(|(&x, &w)| w * g(x)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_symmetric_with_exact_zero_for_odd_m() {
        let g = VelocityGrid::new(9, 4.0, Quadrature::Trapezoid);
        assert_eq!(g.nodes[4], 0.0);
        for i in 0..9 {
            assert_eq!(g.nodes[i], -g.nodes[8 - i]);
        }
        assert_eq!(g.nodes[0], -4.0);
        assert_eq!(g.nodes[8], 4.0);
    }

    #[test]
    fn the_shares_of_the_ranks_cover_every_octant_once_and_balance() {
        let g = VelocityGrid::new(9, 4.0, Quadrature::Trapezoid);
        let all = g.octant_members();
        for n in [2, 3, 5] {
            for (o, members) in all.iter().enumerate() {
                let mut joined = Vec::new();
                for r in 0..n {
                    let part = g.clone().with_share(r, n).octant_members()[o].clone();
                    assert!(part.len() * n + n > members.len() && part.len() * n < members.len() + n);
                    joined.extend(part);
                }
                assert_eq!(&joined, members, "octant {o}, {n} ranks");
            }
        }
    }

    #[test]
    fn every_velocity_in_exactly_one_octant() {
        for m in [8, 9] {
            let g = VelocityGrid::new(m, 4.0, Quadrature::Trapezoid);
            let oct = g.octant_members();
            let mut seen = vec![0u8; g.len()];
            for (o, members) in oct.iter().enumerate() {
                for &v in members {
                    seen[v as usize] += 1;
                    let x = g.xi[v as usize];
                    for (d, &c) in x.iter().enumerate() {
                        assert_eq!(Octant(o as u8).negative(d), c < 0.0);
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "m = {m}");
        }
    }

    #[test]
    fn simpson_is_exact_for_cubics_and_trapezoid_is_not() {
        // Composite Simpson integrates polynomials up to degree 3 exactly on each panel pair;
        // the trapezoid rule misses x^2 by h^2/12 (f'(a) - f'(-a)) = h^2 a / 3.
        let a = 4.0;
        let exact = 2.0 * a * a * a / 3.0;
        let s = VelocityGrid::new(9, a, Quadrature::Simpson);
        let sum: f64 = s.nodes.iter().zip(&s.weights_1d).map(|(x, w)| w * (x * x + x * x * x)).sum();
        assert!((sum - exact).abs() < 1e-12, "{sum} vs {exact}");
        let t = VelocityGrid::new(9, a, Quadrature::Trapezoid);
        let sum: f64 = t.nodes.iter().zip(&t.weights_1d).map(|(x, w)| w * x * x).sum();
        let h = 1.0;
        assert!((sum - exact - h * h * a / 3.0).abs() < 1e-12, "{sum}");
    }

    #[test]
    fn weights_sum_to_cube_volume() {
        for (m, q) in [(16, Quadrature::Trapezoid), (17, Quadrature::Simpson)] {
            let g = VelocityGrid::new(m, 4.0, q);
            let s: f64 = g.w.iter().sum();
            assert!((s - 512.0).abs() < 1e-10 * 512.0, "{q:?}: {s}");
        }
    }
}
