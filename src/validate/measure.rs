//! The quantities a validation suite measures from a converged run.

use super::Measure;
use crate::model::Macro;
use crate::problem::Problem;
use crate::solver::RunResult;
use anyhow::{anyhow, bail};

/// Width-weighted mean over all cells of a per-cell quantity.
fn mean_over(p: &Problem, fields: &[Macro], f: impl Fn(&Macro) -> f64) -> f64 {
    let vol = p.grid.volumes();
    let (s, v) = fields.iter().zip(&vol).fold((0.0, 0.0), |(s, t), (m, &w)| (s + w * f(m), t + w));
    s / v
}

fn wall_of(p: &Problem, face: crate::boundary::Face) -> anyhow::Result<([f64; 3], f64)> {
    match p.bounds.faces[face.id()].kind {
        crate::boundary::FaceKind::DiffuseWall { temperature, velocity } => Ok((velocity, temperature)),
        _ => bail!("the measure needs a diffuse wall at {}", face.name()),
    }
}

/// The measured quantity of a converged run.
pub fn measure(m: Measure, p: &Problem, r: &RunResult) -> anyhow::Result<f64> {
    use crate::boundary::Face;
    let sqrt_pi = std::f64::consts::PI.sqrt();
    let ini = p.initial_macro();
    let p0 = ini.pressure();
    Ok(match m {
        Measure::CouetteShear => {
            let (lo, _) = wall_of(p, Face::YMin)?;
            let (hi, _) = wall_of(p, Face::YMax)?;
            let u = hi[0] - lo[0];
            mean_over(p, &r.fields, |c| -c.p[3]) / (p0 * u / sqrt_pi)
        }
        Measure::FourierHeatFlux => {
            let (_, tlo) = wall_of(p, Face::YMin)?;
            let (_, thi) = wall_of(p, Face::YMax)?;
            let eps = (thi - tlo) / ini.t;
            mean_over(p, &r.fields, |c| -c.q[1]) / (p0 * eps / sqrt_pi)
        }
        Measure::CentreVelocity => {
            let (lid, _) = wall_of(p, Face::YMax)?;
            let g = &p.grid;
            let at = [0, 1, 2].map(|a| {
                let ax = [&g.x, &g.y, &g.z][a];
                0.5 * (ax.faces[0] + ax.faces[ax.len()])
            });
            interpolate(p, &r.fields, at, |c| c.u[0]) / lid[0]
        }
        Measure::LidShear => {
            let (lid, _) = wall_of(p, Face::YMax)?;
            let g = &p.grid;
            let j = g.ny() - 1;
            let (mut s, mut a) = (0.0, 0.0);
            for k in 0..g.nz() {
                for i in 0..g.nx() {
                    let w = g.x.widths[i] * g.z.widths[k];
                    s += w * -r.fields[g.index(i, j, k)].p[3];
                    a += w;
                }
            }
            s / a / (p0 * lid[0])
        }
        Measure::DragCoefficient => {
            let surf = crate::loads::surface(p, &r.wall, &r.wall_density);
            crate::loads::body_loads(p, &surf, &r.wall)
                .first()
                .and_then(|l| l.drag_coefficient)
                .ok_or_else(|| anyhow!("the drag coefficient needs a body and a free stream"))?
        }
    })
}

/// Trilinear interpolation of a cell-centred quantity at a point inside the centres' hull.
fn interpolate(p: &Problem, fields: &[Macro], at: [f64; 3], f: impl Fn(&Macro) -> f64) -> f64 {
    let g = &p.grid;
    let axes = [&g.x, &g.y, &g.z];
    let mut lo = [0usize; 3];
    let mut t = [0.0; 3];
    for a in 0..3 {
        let c = &axes[a].centres;
        if c.len() == 1 {
            continue;
        }
        let i = c.partition_point(|&x| x <= at[a]).clamp(1, c.len() - 1) - 1;
        lo[a] = i;
        t[a] = ((at[a] - c[i]) / (c[i + 1] - c[i])).clamp(0.0, 1.0);
    }
    let mut s = 0.0;
    for corner in 0..8 {
        let mut w = 1.0;
        let mut idx = [0usize; 3];
        for a in 0..3 {
            let up = (corner >> a) & 1 == 1;
            let n = axes[a].centres.len();
            idx[a] = if up { (lo[a] + 1).min(n - 1) } else { lo[a] };
            w *= if up { t[a] } else { 1.0 - t[a] };
        }
        if w != 0.0 {
            s += w * f(&fields[g.index(idx[0], idx[1], idx[2])]);
        }
    }
    s
}
