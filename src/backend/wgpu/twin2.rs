//! CPU twin of shaders/upwind2.wgsl (the second-order cell update), line for line in f32;
//! `twin::sweep_slice` calls it as the shader's sweep_slice does. Reference in f64:
//! `backend::upwind2::solve_cell`.

/// Twin of `CellUpdate`.
#[derive(Debug, Clone, Copy)]
pub struct CellUpdate {
    pub f: f32,
    pub out: [f32; 3],
}

fn emitted(a: [f32; 3], inflow: [f32; 3], w: f32, lo: [f32; 3], hi: [f32; 3], f: f32) -> [f32; 3] {
    std::array::from_fn(|d| if a[d] > 0.0 { ((1.0 + w) * f - w * inflow[d]).clamp(lo[d], hi[d]) } else { f })
}

fn balance_lhs(a: [f32; 3], inflow: [f32; 3], w: f32, nu: f32, lo: [f32; 3], hi: [f32; 3], f: f32) -> f32 {
    let e = emitted(a, inflow, w, lo, hi, f);
    nu * f + (a[0] * e[0] + a[1] * e[1] + a[2] * e[2])
}

/// Twin of `PIECE_SOLVES` (`backend::upwind2::PIECE_SOLVES`).
const PIECE_SOLVES: u32 = crate::backend::upwind2::PIECE_SOLVES as u32;
/// Twin of `PIECE_AGREE`.
const PIECE_AGREE: f32 = 1e-6;

/// Twin of `piece_root`: the root and whether it settled.
#[allow(clippy::too_many_arguments)]
fn piece_root(
    a: [f32; 3],
    inflow: [f32; 3],
    w: f32,
    nu: f32,
    fs: f32,
    lo: [f32; 3],
    hi: [f32; 3],
    lmin: f32,
    hmax: f32,
    f0: f32,
) -> (f32, bool) {
    if hmax - lmin <= PIECE_AGREE * hmax {
        return (f0.clamp(lmin, hmax), true);
    }
    let mut f = f0;
    let mut last_piece = 0u32;
    let mut last_f = f;
    for solve in 0..=PIECE_SOLVES {
        let x: [f32; 3] = std::array::from_fn(|d| (1.0 + w) * f - w * inflow[d]);
        let below: [bool; 3] = std::array::from_fn(|d| x[d] < lo[d]);
        let above: [bool; 3] = std::array::from_fn(|d| x[d] > hi[d]);
        let bound: [f32; 3] = std::array::from_fn(|d| {
            if below[d] {
                lo[d]
            } else if above[d] {
                hi[d]
            } else {
                fs
            }
        });
        let sd: [f32; 3] = std::array::from_fn(|d| if below[d] || above[d] { a[d] } else { (1.0 + w) * a[d] });
        let term: [f32; 3] = std::array::from_fn(|d| sd[d] * (bound[d] - inflow[d]));
        let num = term[0] + term[1] + term[2];
        let lin: [f32; 3] = std::array::from_fn(|d| if below[d] || above[d] { 0.0 } else { sd[d] });
        let den = nu + (lin[0] + lin[1] + lin[2]);
        let code: [u32; 3] = std::array::from_fn(|d| {
            if a[d] > 0.0 {
                if below[d] {
                    1
                } else if above[d] {
                    2
                } else {
                    0
                }
            } else {
                0
            }
        });
        let piece = code[0] | (code[1] << 2) | (code[2] << 4);
        if solve > 0 && (piece == last_piece || (f - last_f).abs() <= PIECE_AGREE * hmax) {
            return (f, true);
        }
        if solve == PIECE_SOLVES {
            break;
        }
        last_piece = piece;
        last_f = f;
        f = (fs - num / den).clamp(lmin, hmax);
    }
    (f, false)
}

/// Twin of `bracket_root`.
#[allow(clippy::too_many_arguments)]
fn bracket_root(
    a: [f32; 3],
    inflow: [f32; 3],
    w: f32,
    nu: f32,
    rhs: f32,
    lo: [f32; 3],
    hi: [f32; 3],
    lmin: f32,
    hmax: f32,
) -> f32 {
    let (mut kl, mut kh) = (lmin, hmax);
    let mut gl = balance_lhs(a, inflow, w, nu, lo, hi, lmin);
    let mut gh = balance_lhs(a, inflow, w, nu, lo, hi, hmax);
    for d in 0..3 {
        if a[d] > 0.0 {
            for e in 0..2 {
                let kk = (w * inflow[d] + if e == 1 { hi[d] } else { lo[d] }) / (1.0 + w);
                if kk > kl && kk < kh {
                    let gk = balance_lhs(a, inflow, w, nu, lo, hi, kk);
                    if gk <= rhs {
                        kl = kk;
                        gl = gk;
                    } else {
                        kh = kk;
                        gh = gk;
                    }
                }
            }
        }
    }
    if gh > gl {
        kl + (rhs - gl) * (kh - kl) / (gh - gl)
    } else {
        kl
    }
}

/// Twin of `solve_cell`.
pub fn solve_cell(a: [f32; 3], inflow: [f32; 3], nu: f32, fs: f32, side0: [f32; 3], side1: [f32; 3]) -> CellUpdate {
    let mut lo0 = fs;
    let mut hi0 = fs;
    let mut side_lo = fs;
    let mut side_hi = fs;
    for d in 0..3 {
        if a[d] > 0.0 {
            lo0 = lo0.min(inflow[d]);
            hi0 = hi0.max(inflow[d]);
            side_lo = side_lo.min(side0[d].min(side1[d]));
            side_hi = side_hi.max(side0[d].max(side1[d]));
        }
    }
    let lo: [f32; 3] = std::array::from_fn(|d| lo0.min(side0[d].min(side1[d])));
    let hi: [f32; 3] = std::array::from_fn(|d| hi0.max(side0[d].max(side1[d])));
    let lmin = lo0.min(side_lo);
    let hmax = hi0.max(side_hi);
    let sum_a = a[0] + a[1] + a[2];
    let w = (sum_a / nu).min(1.0);
    let rhs = a[0] * inflow[0] + a[1] * inflow[1] + a[2] * inflow[2] + nu * fs;
    let mut f = (rhs + w * (rhs - nu * fs)) / ((1.0 + w) * sum_a + nu);
    let clamped = (0..3).any(|d| {
        let x = (1.0 + w) * f - w * inflow[d];
        a[d] > 0.0 && (x < lo[d] || x > hi[d])
    });
    if clamped {
        let (root, solved) = piece_root(a, inflow, w, nu, fs, lo, hi, lmin, hmax, f);
        f = if solved { root } else { bracket_root(a, inflow, w, nu, rhs, lo, hi, lmin, hmax) };
    }
    f = f.clamp(lmin, hmax);
    CellUpdate { f, out: emitted(a, inflow, w, lo, hi, f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_f32_twin_follows_the_f64_reference() {
        // Random data, thin and thick cells: the f32 update must match the f64 one to f32
        // round-off of a few operations on values of order 1 (1e-5 relative).
        let mut seed = 777u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for t in 0..20000 {
            let a: [f64; 3] = std::array::from_fn(|_| if rnd() < 0.2 { 0.0 } else { 10.0 * rnd() });
            let inflow: [f64; 3] = std::array::from_fn(|_| 0.1 + 2.0 * rnd());
            let (nu, fs) = (20.0 * rnd() * rnd() + 1e-3, 0.1 + rnd());
            // Half the cells without neighbours' faces (the inflows stand in), half with.
            let side: [[f64; 2]; 3] = if t % 2 == 0 {
                crate::backend::upwind2::no_side(inflow)
            } else {
                std::array::from_fn(|_| [0.1 + 2.0 * rnd(), 0.1 + 2.0 * rnd()])
            };
            let r = crate::backend::upwind2::solve_cell(a, inflow, nu, fs, side);
            let (side0, side1) = (side.map(|s| s[0] as f32), side.map(|s| s[1] as f32));
            let t = solve_cell(a.map(|x| x as f32), inflow.map(|x| x as f32), nu as f32, fs as f32, side0, side1);
            for (x, y) in std::iter::once((r.f, t.f)).chain(r.out.into_iter().zip(t.out)) {
                assert!(
                    (x - y as f64).abs() < 1e-5 * x.abs().max(1.0),
                    "{x} vs {y}: {a:?} {inflow:?} {nu} {fs} {side:?}"
                );
            }
        }
    }

    #[test]
    fn near_uniform_cells_settle_without_the_bracket() {
        // A gas near equilibrium gives cells whose inflows, f^S and neighbour faces differ by
        // a few f32 ulps: their ranges are a few ulps wide, round-off decides which bound
        // each outflow takes, and about 40% of such cells clamp (the quick cavity's first
        // sweep). Newton on the pieces must settle there too, since a warp runs the bracket
        // whenever one of its lanes needs it. Also the root must stay in [lmin, hmax].
        let mut seed = 99u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut clamped, mut gave_up) = (0usize, 0usize);
        for _ in 0..200000 {
            let c = 10f64.powf(-9.0 * rnd()) as f32;
            let a: [f32; 3] = std::array::from_fn(|_| 60.0 * rnd() as f32);
            let nu = 0.01 + rnd() as f32;
            let mut near = || c * (1.0 + f32::EPSILON * (8.0 * rnd() as f32 - 4.0).round());
            let inflow: [f32; 3] = std::array::from_fn(|_| near());
            let (side0, side1): ([f32; 3], [f32; 3]) =
                (std::array::from_fn(|_| near()), std::array::from_fn(|_| near()));
            let fs = near();
            let lo: [f32; 3] = std::array::from_fn(|d| {
                fs.min(inflow.iter().copied().fold(f32::MAX, f32::min)).min(side0[d].min(side1[d]))
            });
            let hi: [f32; 3] =
                std::array::from_fn(|d| fs.max(inflow.iter().copied().fold(0.0, f32::max)).max(side0[d].max(side1[d])));
            let (lmin, hmax) = (lo.iter().copied().fold(f32::MAX, f32::min), hi.iter().copied().fold(0.0, f32::max));
            let sum_a = a[0] + a[1] + a[2];
            let w = (sum_a / nu).min(1.0);
            let rhs = a[0] * inflow[0] + a[1] * inflow[1] + a[2] * inflow[2] + nu * fs;
            let f0 = (rhs + w * (rhs - nu * fs)) / ((1.0 + w) * sum_a + nu);
            if !(0..3).any(|d| {
                let x = (1.0 + w) * f0 - w * inflow[d];
                x < lo[d] || x > hi[d]
            }) {
                continue;
            }
            clamped += 1;
            let (f, solved) = piece_root(a, inflow, w, nu, fs, lo, hi, lmin, hmax, f0);
            assert!(f >= lmin && f <= hmax, "{f} outside [{lmin}, {hmax}]");
            gave_up += usize::from(!solved);
        }
        eprintln!("{clamped} clamped, {gave_up} left to the bracket");
        assert!(clamped > 20000, "near-uniform cells should clamp often: {clamped}");
        assert!(gave_up * 100 <= clamped, "{gave_up} of {clamped} near-uniform clamped cells left to the bracket");
    }
}
