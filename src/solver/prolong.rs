//! A coarse run's state carried to a finer grid ([`super::coarse`]): fields, box-face
//! densities and body-wall densities.
//!
//! Interpolation is linear in each axis between cell centres (trilinear in the volume,
//! bilinear on a face), constant beyond the outermost centres; coarse cells that are solid
//! take no weight (the others' weights are renormalised), and a fine cell whose eight coarse
//! neighbours are all solid takes the nearest fluid value along the search below, or the
//! case's initial state.

use super::{Restart, RunResult};
use crate::damping::DensitySteps;
use crate::grid::{Face, Grid};
use crate::model::Macro;
use crate::problem::Problem;
use rayon::prelude::*;

/// The lower bracketing centre and the weight of the upper one for coordinate `x` among
/// `centres` (constant beyond the ends: weight 0 at the first, 1 at the last).
fn bracket(centres: &[f64], x: f64) -> (usize, f64) {
    let n = centres.len();
    if n == 1 || x <= centres[0] {
        return (0, 0.0);
    }
    if x >= centres[n - 1] {
        return (n - 2, 1.0);
    }
    let i = centres.partition_point(|&c| c <= x) - 1;
    (i, (x - centres[i]) / (centres[i + 1] - centres[i]))
}

/// The two coarse indices and weights along one axis.
fn stencil(centres: &[f64], x: f64) -> [(usize, f64); 2] {
    let (i, t) = bracket(centres, x);
    let j = (i + 1).min(centres.len() - 1);
    [(i, 1.0 - t), (j, t)]
}

fn blend(parts: &[(f64, &Macro)]) -> Macro {
    let total: f64 = parts.iter().map(|p| p.0).sum();
    let mut m = Macro { rho: 0.0, u: [0.0; 3], t: 0.0, q: [0.0; 3], p: [0.0; 6] };
    for &(w, s) in parts {
        let w = w / total;
        m.rho += w * s.rho;
        m.t += w * s.t;
        (0..3).for_each(|i| {
            m.u[i] += w * s.u[i];
            m.q[i] += w * s.q[i];
        });
        (0..6).for_each(|i| m.p[i] += w * s.p[i]);
    }
    m
}

/// The coarse fields at each fine cell (solid fine cells keep `solid`).
fn prolong_fields(coarse: &Problem, fields: &[Macro], fine: &Problem, solid: Macro, initial: Macro) -> Vec<Macro> {
    let (cg, fg) = (&coarse.grid, &fine.grid);
    let c_solid = |c: usize| coarse.bodies.solids.is_solid(c);
    (0..fg.cells())
        .into_par_iter()
        .map(|c| {
            if fine.bodies.solids.is_solid(c) {
                return solid;
            }
            let [i, j, k] = fg.coords(c);
            let sx = stencil(&cg.x.centres, fg.x.centres[i]);
            let sy = stencil(&cg.y.centres, fg.y.centres[j]);
            let sz = stencil(&cg.z.centres, fg.z.centres[k]);
            let mut parts: Vec<(f64, &Macro)> = Vec::with_capacity(8);
            for &(kz, wz) in &sz {
                for &(jy, wy) in &sy {
                    for &(ix, wx) in &sx {
                        let cc = cg.index(ix, jy, kz);
                        let w = wx * wy * wz;
                        if w > 0.0 && !c_solid(cc) {
                            parts.push((w, &fields[cc]));
                        }
                    }
                }
            }
            if parts.is_empty() {
                // Every neighbour with weight is solid (a fine cell beside a body that the
                // coarse grid fills): the nearest fluid coarse cell along the axes, else the
                // initial state.
                let near = [sx[0].0, sy[0].0, sz[0].0];
                return nearest_fluid(cg, &c_solid, near).map_or(initial, |cc| fields[cc]);
            }
            blend(&parts)
        })
        .collect()
}

/// The nearest fluid cell to (i, j, k) among its neighbours within a few cells (Chebyshev
/// distance, smallest first), if any.
fn nearest_fluid(g: &Grid, solid: &impl Fn(usize) -> bool, at: [usize; 3]) -> Option<usize> {
    let dims = g.dims();
    for r in 1..=4isize {
        for dk in -r..=r {
            for dj in -r..=r {
                for di in -r..=r {
                    let p = [at[0] as isize + di, at[1] as isize + dj, at[2] as isize + dk];
                    if (0..3).any(|a| p[a] < 0 || p[a] >= dims[a] as isize) {
                        continue;
                    }
                    let c = g.index(p[0] as usize, p[1] as usize, p[2] as usize);
                    if !solid(c) {
                        return Some(c);
                    }
                }
            }
        }
    }
    None
}

/// The face cell's two tangential centres (slow, fast) and the axes they lie on.
fn face_axes(face: Face) -> [usize; 2] {
    match face.axis() {
        0 => [2, 1],
        1 => [2, 0],
        _ => [1, 0],
    }
}

/// One face's values (coarse face cells) at the fine face cells, bilinear.
fn prolong_face(cg: &Grid, coarse: &[f64], fg: &Grid, face: Face) -> Vec<f64> {
    let [slow, fast] = face_axes(face);
    let (c_axes, f_axes) = ([&cg.x, &cg.y, &cg.z], [&fg.x, &fg.y, &fg.z]);
    let c_fast = c_axes[fast].centres.len();
    let mut out = Vec::with_capacity(face.cells(fg));
    for s in &f_axes[slow].centres {
        let ss = stencil(&c_axes[slow].centres, *s);
        for f in &f_axes[fast].centres {
            let sf = stencil(&c_axes[fast].centres, *f);
            let mut v = 0.0;
            for &(a, wa) in &ss {
                for &(b, wb) in &sf {
                    v += wa * wb * coarse[a * c_fast + b];
                }
            }
            out.push(v);
        }
    }
    out
}

/// Each fine body wall's density from the coarse wall of the same body and side whose cell
/// centre is nearest; where the coarse grid has no such wall, the fine state's own value.
fn prolong_walls(coarse: &Problem, c_density: &[f64], fine: &Problem, f_density: &mut [f64]) {
    let (cg, fg) = (&coarse.grid, &fine.grid);
    let centre = |g: &Grid, c: u32| {
        let [i, j, k] = g.coords(c as usize);
        [g.x.centres[i], g.y.centres[j], g.z.centres[k]]
    };
    // The coarse walls by body and side: their centres and densities.
    type Walls = Vec<([f64; 3], f64)>;
    let mut groups: std::collections::HashMap<(u16, usize), Walls> = Default::default();
    for (w, d) in coarse.bodies.solids.walls.iter().zip(c_density) {
        groups.entry((w.body, w.side.id())).or_default().push((centre(cg, w.cell), *d));
    }
    f_density.par_iter_mut().zip(fine.bodies.solids.walls.par_iter()).for_each(|(d, w)| {
        let x = centre(fg, w.cell);
        let dist = |y: &[f64; 3]| (0..3).map(|a| (x[a] - y[a]).powi(2)).sum::<f64>();
        if let Some(near) =
            groups.get(&(w.body, w.side.id())).and_then(|g| g.iter().min_by(|a, b| dist(&a.0).total_cmp(&dist(&b.0))))
        {
            *d = near.1;
        }
    });
}

/// The fine case's starting state from a coarse run's result: fields, box-face and body-wall
/// densities interpolated; partner data (specular and periodic faces) and the damping state
/// those of the fine case's initial state; no history.
pub fn prolong(coarse: &Problem, result: &RunResult, fine: &Problem) -> Restart {
    let t = std::time::Instant::now();
    let m0 = fine.initial_macro();
    let solid = Macro { rho: f64::NAN, u: [f64::NAN; 3], t: f64::NAN, q: [f64::NAN; 3], p: [f64::NAN; 6] };
    let fields = prolong_fields(coarse, &result.fields, fine, solid, m0);
    let face_density =
        std::array::from_fn(|f| prolong_face(&coarse.grid, &result.next_face_density[f], &fine.grid, Face::ALL[f]));
    // As State::initial has them: the walls where the coarse grid has none of their body
    // and side, and the partner data.
    let mut wall_density = fine.bodies.densities(&fine.bodies.uniform_incident(&fine.vgrid, m0.rho, m0.u, m0.t));
    prolong_walls(coarse, &result.next_wall_density, fine, &mut wall_density);
    let partner = fine.bounds.partner_inflow(&fine.bounds.uniform_exits(&fine.grid, &fine.vgrid, m0.rho, m0.u, m0.t));
    log::debug!(
        "coarse start: state interpolated onto {:?} cells in {:.3} s",
        fine.grid.dims(),
        t.elapsed().as_secs_f64()
    );
    Restart {
        fields,
        face_density,
        wall_density,
        partner,
        steps: DensitySteps::default(),
        history: Vec::new(),
        strategy_state: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AxisConfig, Config};

    fn problem(faces: [Vec<f64>; 3], body: bool) -> Problem {
        let mut c = Config::from_json(include_str!("../../configs/cavity-quick.json")).unwrap();
        let axis = |f: &Vec<f64>| AxisConfig { faces: Some(f.clone()), ..Default::default() };
        c.grid = crate::config::GridConfig { x: axis(&faces[0]), y: axis(&faces[1]), z: axis(&faces[2]) };
        if body {
            c.bodies = vec![crate::config::BodyConfig {
                name: None,
                min: [0.4, 0.4, 0.4],
                max: [0.6, 0.6, 0.6],
                temperature: 1.0,
                velocity: [0.0; 3],
            }];
        }
        c.validate().unwrap();
        Problem::new(&c)
    }

    /// Stretched faces on [0, 1] (geometric, ratio 1.15) with the faces 0.4 and 0.6 in them.
    fn stretched(n: usize) -> Vec<f64> {
        let mut w: Vec<f64> = (0..n).map(|i| 1.15f64.powi(i as i32)).collect();
        let s: f64 = w.iter().sum();
        w.iter_mut().for_each(|x| *x /= s);
        let mut f = vec![0.0];
        w.iter().for_each(|x| f.push(f.last().unwrap() + x));
        f
    }

    /// Faces with 0.4 and 0.6 among them: 7 growing cells, 3 across the body (an odd count,
    /// so its far face has an odd index), 6 growing cells.
    fn around_body() -> Vec<f64> {
        let part = |lo: f64, hi: f64, n: usize, r: f64| -> Vec<f64> {
            let w: Vec<f64> = (0..n).map(|i| r.powi(i as i32)).collect();
            let s: f64 = w.iter().sum();
            let mut f = vec![lo];
            w.iter().for_each(|x| f.push(f.last().unwrap() + x / s * (hi - lo)));
            f
        };
        let mut f = part(0.0, 0.4, 7, 1.0 / 1.1);
        f.pop();
        f.extend(part(0.4, 0.6, 3, 1.0));
        f.pop();
        f.extend(part(0.6, 1.0, 6, 1.1));
        *f.last_mut().unwrap() = 1.0;
        f
    }

    fn linear(x: [f64; 3]) -> Macro {
        let v = 1.0 + 0.3 * x[0] - 0.2 * x[1] + 0.1 * x[2];
        Macro { rho: v, u: [v, 2.0 * v, -v], t: 1.0 + 0.5 * x[2], q: [x[0], x[1], x[2]], p: [v; 6] }
    }

    fn centre(g: &Grid, c: usize) -> [f64; 3] {
        let [i, j, k] = g.coords(c);
        [g.x.centres[i], g.y.centres[j], g.z.centres[k]]
    }

    #[test]
    fn a_linear_field_is_reproduced_between_the_coarse_centres_and_held_beyond_them() {
        let fine_faces = [stretched(16), stretched(12), (0..=10).map(|i| i as f64 / 10.0).collect::<Vec<_>>()];
        let coarse_faces = fine_faces.clone().map(|f| crate::solver::coarse::coarse_faces(&f, &[]).unwrap());
        let (fine, coarse) = (problem(fine_faces, false), problem(coarse_faces, false));
        let cg = &coarse.grid;
        let fields: Vec<Macro> = (0..cg.cells()).map(|c| linear(centre(cg, c))).collect();
        let nan = Macro { rho: f64::NAN, u: [f64::NAN; 3], t: f64::NAN, q: [f64::NAN; 3], p: [f64::NAN; 6] };
        let out = prolong_fields(&coarse, &fields, &fine, nan, fine.initial_macro());
        let fg = &fine.grid;
        let axes = [&cg.x, &cg.y, &cg.z];
        for (c, m) in out.iter().enumerate() {
            let x = centre(fg, c);
            // Beyond the outermost coarse centres the value is held: clamp the coordinate.
            let xc: [f64; 3] =
                std::array::from_fn(|a| x[a].clamp(axes[a].centres[0], *axes[a].centres.last().unwrap()));
            let want = linear(xc);
            // Trilinear weights reproduce a linear function to rounding (values of order 1).
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12;
            assert!(close(m.rho, want.rho) && close(m.t, want.t), "cell {c}: {} vs {}", m.rho, want.rho);
            assert!((0..3).all(|i| close(m.u[i], want.u[i]) && close(m.q[i], want.q[i])), "cell {c}");
        }
    }

    #[test]
    fn solid_coarse_cells_give_no_weight_and_fluid_cells_stay_finite() {
        let f = around_body();
        let fine = problem([f.clone(), f.clone(), f.clone()], true);
        let keep: Vec<usize> = [0.4, 0.6].iter().map(|&c| crate::config::grid::face_index(&f, c).unwrap()).collect();
        let cf = crate::solver::coarse::coarse_faces(&f, &keep).unwrap();
        let coarse = problem([cf.clone(), cf.clone(), cf], true);
        let cs = &coarse.bodies.solids;
        let nan = Macro { rho: f64::NAN, u: [f64::NAN; 3], t: f64::NAN, q: [f64::NAN; 3], p: [f64::NAN; 6] };
        // Fluid 2, solid NaN: any weight on a solid cell would show.
        let fields: Vec<Macro> = (0..coarse.grid.cells())
            .map(|c| if cs.is_solid(c) { nan } else { Macro::equilibrium(2.0, [0.0; 3], 1.0) })
            .collect();
        let out = prolong_fields(&coarse, &fields, &fine, nan, fine.initial_macro());
        for (c, m) in out.iter().enumerate() {
            if fine.bodies.solids.is_solid(c) {
                assert!(m.rho.is_nan(), "solid cell {c}");
            } else {
                // The renormalised weights sum to 1 within a few ulps.
                assert!((m.rho - 2.0).abs() <= 1e-14, "fluid cell {c}: {}", m.rho);
            }
        }
        // Each fine wall takes the density of a coarse wall of its side.
        let c_density: Vec<f64> = cs.walls.iter().map(|w| w.side.id() as f64).collect();
        let mut f_density = vec![-1.0; fine.bodies.solids.walls.len()];
        prolong_walls(&coarse, &c_density, &fine, &mut f_density);
        for (w, d) in fine.bodies.solids.walls.iter().zip(&f_density) {
            assert_eq!(*d, w.side.id() as f64);
        }
    }

    #[test]
    fn a_face_takes_its_bilinear_values() {
        let f: Vec<f64> = (0..=12).map(|i| i as f64 / 12.0).collect();
        let cf = crate::solver::coarse::coarse_faces(&f, &[]).unwrap();
        let (fine, coarse) = (problem([f.clone(), f.clone(), f], false), problem([cf.clone(), cf.clone(), cf], false));
        let (cg, fg) = (&coarse.grid, &fine.grid);
        for face in Face::ALL {
            let [slow, fast] = face_axes(face);
            let (ca, fa) = ([&cg.x, &cg.y, &cg.z], [&fg.x, &fg.y, &fg.z]);
            let value = |s: f64, t: f64| 1.0 + s - 2.0 * t;
            let mut coarse_vals = Vec::new();
            for s in &ca[slow].centres {
                for t in &ca[fast].centres {
                    coarse_vals.push(value(*s, *t));
                }
            }
            let out = prolong_face(cg, &coarse_vals, fg, face);
            let (lo, hi) = (ca[0].centres[0], *ca[0].centres.last().unwrap());
            let mut n = 0;
            for s in &fa[slow].centres {
                for t in &fa[fast].centres {
                    let want = value(s.clamp(lo, hi), t.clamp(lo, hi));
                    assert!((out[n] - want).abs() < 1e-12, "{face:?} {n}");
                    n += 1;
                }
            }
        }
    }
}
