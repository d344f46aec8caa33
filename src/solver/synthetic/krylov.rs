//! Restarted GMRES with right preconditioning, on vectors of per-cell 5-blocks (f64).
//!
//! The correction operator is nonsymmetric (convection, the wall ghosts), so GMRES; right
//! preconditioning so the residual it minimises is the true one, whatever the
//! preconditioner (block Jacobi here, the multigrid W-cycle of `super::multigrid` in use).

use super::flux::{Block, NV};
use super::operator::Operator;
use rayon::prelude::*;

pub type Vector = Vec<[f64; NV]>;

/// Vectors kept for reuse. A solve takes dozens of cell vectors per step (Krylov basis,
/// multigrid levels); allocated fresh, each one arrives as new pages from the kernel, whose
/// faults and zeroing cost as much as the arithmetic on 16 threads (measured: 12% of the
/// synthetic solve's profile on 2 cores, and its time per step grew only 3x from 2 to 16
/// cores). A taken vector holds stale values: the taker overwrites every element.
#[derive(Default)]
pub struct Pool(std::sync::Mutex<Vec<Vector>>);

impl Pool {
    /// A vector of `n` cells with unspecified contents.
    pub fn take(&self, n: usize) -> Vector {
        let mut free = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match free.iter().position(|v| v.len() == n) {
            Some(i) => free.swap_remove(i),
            None => vec![[0.0; NV]; n],
        }
    }

    pub fn give(&self, v: Vector) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(v);
    }
}

/// Cells per partial sum of [`dot`].
const DOT_CHUNK: usize = 4096;

/// The sum of fixed chunks' partial sums, in chunk order: the same bits for any number of
/// threads (a plain parallel sum groups terms by how the work was split).
fn dot(a: &[[f64; NV]], b: &[[f64; NV]]) -> f64 {
    let partial: Vec<f64> = a
        .par_chunks(DOT_CHUNK)
        .zip(b.par_chunks(DOT_CHUNK))
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| (0..NV).map(|k| p[k] * q[k]).sum::<f64>()).sum())
        .collect();
    partial.iter().sum()
}

#[cfg(test)]
fn norm(a: &[[f64; NV]]) -> f64 {
    dot(a, a).sqrt()
}

/// y += s x
fn axpy(y: &mut [[f64; NV]], s: f64, x: &[[f64; NV]]) {
    y.par_iter_mut().zip(x).for_each(|(a, b)| (0..NV).for_each(|k| a[k] += s * b[k]));
}

/// Inverse of a 5x5 block by Gauss-Jordan elimination with partial pivoting; `None` when
/// singular.
pub fn invert(a: &Block) -> Option<Block> {
    let mut m = *a;
    let mut inv: Block = std::array::from_fn(|r| std::array::from_fn(|k| if r == k { 1.0 } else { 0.0 }));
    for col in 0..NV {
        let piv = (col..NV).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[piv][col] == 0.0 || !m[piv][col].is_finite() {
            return None;
        }
        m.swap(col, piv);
        inv.swap(col, piv);
        let d = 1.0 / m[col][col];
        for k in 0..NV {
            m[col][k] *= d;
            inv[col][k] *= d;
        }
        for r in 0..NV {
            if r != col {
                let f = m[r][col];
                if f != 0.0 {
                    for k in 0..NV {
                        m[r][k] -= f * m[col][k];
                        inv[r][k] -= f * inv[col][k];
                    }
                }
            }
        }
    }
    Some(inv)
}

/// How a solve ended.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub iterations: usize,
    /// ||b - A x|| / ||b||.
    pub relative_residual: f64,
    /// Seconds in the preconditioner, in products with the operator and in the rest
    /// (orthogonalisation, updates), for the debug log.
    pub seconds: [f64; 3],
}

/// A preconditioner: out ~ A^-1 v.
pub type Preconditioner<'a> = dyn Fn(&[[f64; NV]], &mut Vector) + Sync + 'a;

/// The inverses of the diagonal blocks, as a preconditioner.
pub fn block_jacobi(op: &Operator) -> anyhow::Result<impl Fn(&[[f64; NV]], &mut Vector) + Sync> {
    let pre: Vec<Block> = op
        .diag
        .par_iter()
        .enumerate()
        .map(|(c, d)| invert(d).ok_or(c))
        .collect::<Result<_, _>>()
        .map_err(|c| anyhow::anyhow!("synthetic solve: the diagonal block of cell {c} is singular"))?;
    Ok(move |v: &[[f64; NV]], out: &mut Vector| {
        out.par_iter_mut().zip(v).zip(&pre).for_each(|((o, x), m)| *o = super::flux::apply(m, x));
    })
}

/// The vector space GMRES works in, with the operator and the preconditioner: host vectors
/// ([`HostSpace`]) or device buffers (`super::cuda`). The algorithm ([`gmres_in`]) is written
/// once over it, so both take the same steps.
pub trait Space {
    type V;
    /// A vector of the operator's size with unspecified contents.
    fn take(&self) -> anyhow::Result<Self::V>;
    fn give(&self, v: Self::V);
    fn dot(&self, a: &Self::V, b: &Self::V) -> anyhow::Result<f64>;
    /// y += s x
    fn axpy(&self, y: &mut Self::V, s: f64, x: &Self::V) -> anyhow::Result<()>;
    /// y *= s
    fn scale(&self, y: &mut Self::V, s: f64) -> anyhow::Result<()>;
    fn zero(&self, y: &mut Self::V) -> anyhow::Result<()>;
    fn copy(&self, dst: &mut Self::V, src: &Self::V) -> anyhow::Result<()>;
    /// y = A x
    fn apply(&self, x: &Self::V, y: &mut Self::V) -> anyhow::Result<()>;
    /// r = b - A x
    fn residual(&self, b: &Self::V, x: &Self::V, r: &mut Self::V) -> anyhow::Result<()>;
    /// z ~ A^-1 v
    fn precondition(&self, v: &Self::V, z: &mut Self::V) -> anyhow::Result<()>;
    /// Wait for queued work (a device's), so that the timings of the log are true.
    fn finish(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Host vectors of per-cell 5-blocks, with the operator and a preconditioner.
pub struct HostSpace<'a> {
    pub op: &'a Operator,
    pub precondition: &'a Preconditioner<'a>,
    pub pool: &'a Pool,
}

impl Space for HostSpace<'_> {
    type V = Vector;
    fn take(&self) -> anyhow::Result<Vector> {
        Ok(self.pool.take(self.op.diag.len()))
    }
    fn give(&self, v: Vector) {
        self.pool.give(v)
    }
    fn dot(&self, a: &Vector, b: &Vector) -> anyhow::Result<f64> {
        Ok(dot(a, b))
    }
    fn axpy(&self, y: &mut Vector, s: f64, x: &Vector) -> anyhow::Result<()> {
        axpy(y, s, x);
        Ok(())
    }
    fn scale(&self, y: &mut Vector, s: f64) -> anyhow::Result<()> {
        y.par_iter_mut().for_each(|x| *x = x.map(|v| v * s));
        Ok(())
    }
    fn zero(&self, y: &mut Vector) -> anyhow::Result<()> {
        y.par_iter_mut().for_each(|c| *c = [0.0; NV]);
        Ok(())
    }
    fn copy(&self, dst: &mut Vector, src: &Vector) -> anyhow::Result<()> {
        dst.copy_from_slice(src);
        Ok(())
    }
    fn apply(&self, x: &Vector, y: &mut Vector) -> anyhow::Result<()> {
        self.op.apply(x, y);
        Ok(())
    }
    fn residual(&self, b: &Vector, x: &Vector, r: &mut Vector) -> anyhow::Result<()> {
        let op = self.op;
        r.par_iter_mut().enumerate().for_each(|(c, rc)| {
            let a = op.row(c, x);
            *rc = std::array::from_fn(|k| b[c][k] - a[k]);
        });
        Ok(())
    }
    fn precondition(&self, v: &Vector, z: &mut Vector) -> anyhow::Result<()> {
        (self.precondition)(v, z);
        Ok(())
    }
}

/// Solve A x = b from x = 0 to `rtol` relative residual, at most `max_iterations` inner
/// steps, restarting every `restart`, right-preconditioned by `precondition`.
pub fn gmres(
    op: &Operator,
    b: &Vector,
    rtol: f64,
    restart: usize,
    max_iterations: usize,
    precondition: &Preconditioner,
    pool: &Pool,
) -> anyhow::Result<(Vector, Outcome)> {
    gmres_in(&HostSpace { op, precondition, pool }, b, rtol, restart, max_iterations)
}

/// [`gmres`] in any [`Space`].
pub fn gmres_in<S: Space>(
    s: &S,
    b: &S::V,
    rtol: f64,
    restart: usize,
    max_iterations: usize,
) -> anyhow::Result<(S::V, Outcome)> {
    let t_start = std::time::Instant::now();
    let mut seconds = [0.0; 3];
    let mut x = s.take()?;
    s.zero(&mut x)?;
    let bnorm = s.dot(b, b)?.sqrt();
    if bnorm == 0.0 {
        return Ok((x, Outcome { iterations: 0, relative_residual: 0.0, seconds: [0.0; 3] }));
    }
    // A non-finite right-hand side or residual never falls below the tolerance: without
    // this, every step up to the limit would run on it (thousands, seconds each at scale).
    if !bnorm.is_finite() {
        anyhow::bail!("the synthetic system's right-hand side is not finite (norm {bnorm})");
    }
    let mut r = s.take()?;
    s.copy(&mut r, b)?;
    let mut total = 0;
    let mut rel = 1.0;
    while total < max_iterations {
        let beta = s.dot(&r, &r)?.sqrt();
        if !beta.is_finite() {
            anyhow::bail!("GMRES: the residual's norm is {beta} after {total} steps");
        }
        rel = beta / bnorm;
        if rel <= rtol {
            break;
        }
        let m = restart.min(max_iterations - total);
        let mut v: Vec<S::V> = Vec::with_capacity(m + 1);
        let mut v0 = s.take()?;
        s.copy(&mut v0, &r)?;
        s.scale(&mut v0, 1.0 / beta)?;
        v.push(v0);
        let mut h = vec![vec![0.0; m]; m + 1];
        let (mut cs, mut sn) = (vec![0.0; m], vec![0.0; m]);
        let mut g = vec![0.0; m + 1];
        g[0] = beta;
        let mut z: Vec<S::V> = Vec::with_capacity(m);
        let mut k_used = 0;
        for k in 0..m {
            let mut zk = s.take()?;
            let t = std::time::Instant::now();
            s.precondition(&v[k], &mut zk)?;
            s.finish()?;
            let t_pre = t.elapsed().as_secs_f64();
            let mut w = s.take()?;
            s.apply(&zk, &mut w)?;
            s.finish()?;
            seconds[0] += t_pre;
            seconds[1] += t.elapsed().as_secs_f64() - t_pre;
            z.push(zk);
            // Modified Gram-Schmidt.
            for (i, vi) in v.iter().enumerate() {
                h[i][k] = s.dot(&w, vi)?;
                s.axpy(&mut w, -h[i][k], vi)?;
            }
            h[k + 1][k] = s.dot(&w, &w)?.sqrt();
            for i in 0..k {
                let t = cs[i] * h[i][k] + sn[i] * h[i + 1][k];
                h[i + 1][k] = -sn[i] * h[i][k] + cs[i] * h[i + 1][k];
                h[i][k] = t;
            }
            let den = h[k][k].hypot(h[k + 1][k]);
            (cs[k], sn[k]) = if den == 0.0 { (1.0, 0.0) } else { (h[k][k] / den, h[k + 1][k] / den) };
            h[k][k] = den;
            h[k + 1][k] = 0.0;
            g[k + 1] = -sn[k] * g[k];
            g[k] *= cs[k];
            k_used = k + 1;
            total += 1;
            if g[k + 1].abs() / bnorm <= rtol || den == 0.0 {
                s.give(w);
                break;
            }
            let wn = s.dot(&w, &w)?.sqrt();
            if wn == 0.0 {
                s.give(w);
                break;
            }
            s.scale(&mut w, 1.0 / wn)?;
            v.push(w);
        }
        // Back substitution for the Krylov coefficients, then x += Z y.
        let mut y = vec![0.0; k_used];
        for i in (0..k_used).rev() {
            let t: f64 = (i + 1..k_used).map(|j| h[i][j] * y[j]).sum();
            y[i] = (g[i] - t) / h[i][i];
        }
        for (zi, yi) in z.iter().zip(&y) {
            s.axpy(&mut x, *yi, zi)?;
        }
        v.into_iter().chain(z).for_each(|u| s.give(u));
        s.residual(b, &x, &mut r)?;
        rel = s.dot(&r, &r)?.sqrt() / bnorm;
        if rel <= rtol {
            break;
        }
    }
    s.give(r);
    s.finish()?;
    seconds[2] = t_start.elapsed().as_secs_f64() - seconds[0] - seconds[1];
    Ok((x, Outcome { iterations: total, relative_residual: rel, seconds }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Problem;
    use crate::solver::synthetic::flux::Base;

    #[test]
    fn block_inverse_inverts() {
        let a: Block =
            std::array::from_fn(|r| std::array::from_fn(|k| if r == k { 4.0 } else { ((r * 3 + k) % 4) as f64 - 1.5 }));
        let inv = invert(&a).unwrap();
        let id = super::super::flux::mul(&a, &inv);
        for (r, row) in id.iter().enumerate() {
            for (k, &x) in row.iter().enumerate() {
                assert!((x - if r == k { 1.0 } else { 0.0 }).abs() < 1e-14);
            }
        }
        assert!(invert(&[[0.0; NV]; NV]).is_none());
    }

    #[test]
    fn gmres_solves_the_correction_operator_of_an_open_box_with_either_preconditioner() {
        // A box with one free-stream face is nonsingular; the solve must reach the asked
        // relative residual, checked here by an independent product A x.
        let mut cfg = crate::config::walled_box([12, 10, 8], 10);
        cfg.boundaries.x_max = crate::config::FaceConfig::FreeStream {};
        cfg.free_stream = Some(serde_json::from_str(r#"{"mach": 0.1, "temperature": 1.0}"#).unwrap());
        let p = Problem::new(&cfg);
        let base: Vec<Base> = (0..p.grid.cells()).map(|_| Base { rho: 1.0, u: [0.05, 0.0, 0.0], t: 1.0 }).collect();
        let op = Operator::assemble(&p, &base, 0.0);
        let b: Vector = (0..p.grid.cells()).map(|c| std::array::from_fn(|k| ((c * 5 + k) % 7) as f64 - 3.0)).collect();
        let jacobi = block_jacobi(&op).unwrap();
        let pool = Pool::default();
        let (x, out) = gmres(&op, &b, 1e-10, 30, 2000, &jacobi, &pool).unwrap();
        use super::super::multigrid::{Multigrid, Smoother};
        for smoother in [Smoother::Jacobi, Smoother::Lines] {
            let fine = Operator::assemble(&p, &base, 0.0);
            let mg = Multigrid::new(fine, p.grid.dims(), &vec![true; b.len()], smoother, true).unwrap();
            let (y, with_mg) =
                gmres(&op, &b, 1e-10, 30, 2000, &|v: &[[f64; NV]], o: &mut Vector| mg.apply(v, o), &pool).unwrap();
            // The W-cycle must help: fewer steps than block Jacobi, the same solution.
            assert!(with_mg.iterations < out.iterations, "{smoother:?} multigrid {with_mg:?} vs Jacobi {out:?}");
            let diff: f64 =
                x.iter().zip(&y).map(|(p, q)| (0..NV).map(|k| (p[k] - q[k]).powi(2)).sum::<f64>()).sum::<f64>().sqrt();
            assert!(diff <= 1e-8 * norm(&x), "{diff}");
        }
        let mut ax = vec![[0.0; NV]; b.len()];
        op.apply(&x, &mut ax);
        let r: f64 =
            ax.iter().zip(&b).map(|(p, q)| (0..NV).map(|k| (p[k] - q[k]).powi(2)).sum::<f64>()).sum::<f64>().sqrt();
        assert!(r <= 1.01e-10 * norm(&b), "{out:?}, true residual {r}");
    }
}
