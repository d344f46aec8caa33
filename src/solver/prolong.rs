//! A coarse run's state carried to a finer grid ([`super::coarse`]): fields, box-face
//! densities and body-wall densities.
//!
//! Interpolation is linear in each axis between cell centres (trilinear in the volume,
//! bilinear on a face), constant beyond the outermost centres; coarse cells that are solid
//! take no weight (the others' weights are renormalised). On a face, a face cell whose
//! adjacent cell is solid takes no weight either (a solid cell emits nothing, so its wall
//! density is no gas's).

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
                // Not reached while bodies are aligned with both grids (coarse.rs keeps their
                // faces): the coarse cell holding a fluid fine cell is fluid, and it is one of
                // the eight with weight. Kept so that any other grid still starts.
                return initial;
            }
            blend(&parts)
        })
        .collect()
}

/// The face cell's two tangential centres (slow, fast) and the axes they lie on.
fn face_axes(face: Face) -> [usize; 2] {
    match face.axis() {
        0 => [2, 1],
        1 => [2, 0],
        _ => [1, 0],
    }
}

/// One face's values (coarse face cells) at the fine face cells, bilinear; coarse face
/// cells backed by a solid cell take no weight (0 where every one with weight is).
fn prolong_face(coarse: &Problem, values: &[f64], fine: &Problem, face: Face) -> Vec<f64> {
    let (cg, fg) = (&coarse.grid, &fine.grid);
    let [slow, fast] = face_axes(face);
    let (c_axes, f_axes) = ([&cg.x, &cg.y, &cg.z], [&fg.x, &fg.y, &fg.z]);
    let c_fast = c_axes[fast].centres.len();
    let edge = if face.is_max() { c_axes[face.axis()].centres.len() - 1 } else { 0 };
    // The coarse cell behind face cell (a, b).
    let behind = |a: usize, b: usize| {
        let mut at = [0; 3];
        (at[face.axis()], at[slow], at[fast]) = (edge, a, b);
        cg.index(at[0], at[1], at[2])
    };
    let mut out = Vec::with_capacity(face.cells(fg));
    for s in &f_axes[slow].centres {
        let ss = stencil(&c_axes[slow].centres, *s);
        for f in &f_axes[fast].centres {
            let sf = stencil(&c_axes[fast].centres, *f);
            let (mut v, mut total) = (0.0, 0.0);
            for &(a, wa) in &ss {
                for &(b, wb) in &sf {
                    if wa * wb > 0.0 && !coarse.bodies.solids.is_solid(behind(a, b)) {
                        v += wa * wb * values[a * c_fast + b];
                        total += wa * wb;
                    }
                }
            }
            out.push(if total > 0.0 { v / total } else { 0.0 });
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
    let face_density = std::array::from_fn(|f| prolong_face(coarse, &result.next_face_density[f], fine, Face::ALL[f]));
    // As State::initial has them: the walls where the coarse grid has none of their body
    // and side, and the partner data.
    let (mut wall_density, partner) = super::state::initial_walls_and_partners(fine);
    prolong_walls(coarse, &result.next_wall_density, fine, &mut wall_density);
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
        sweep_conserved: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AxisConfig, Config};

    fn problem(faces: [Vec<f64>; 3], body: bool) -> Problem {
        problem_with(faces, body.then_some(([0.4; 3], [0.6; 3])))
    }

    fn problem_with(faces: [Vec<f64>; 3], body: Option<([f64; 3], [f64; 3])>) -> Problem {
        let mut c = Config::from_json(include_str!("../../configs/cavity-quick.json")).unwrap();
        let axis = |f: &Vec<f64>| AxisConfig { faces: Some(f.clone()), ..Default::default() };
        c.grid = crate::config::GridConfig { x: axis(&faces[0]), y: axis(&faces[1]), z: axis(&faces[2]) };
        if let Some((min, max)) = body {
            c.bodies = vec![crate::config::BodyConfig { name: None, min, max, temperature: 1.0, velocity: [0.0; 3] }];
        }
        c.validate().unwrap();
        Problem::new(&c)
    }

    /// Stretched faces on [0, 1] (geometric, ratio 1.15).
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
        // Each fine wall takes the density of the nearest coarse wall of its side: coarse
        // densities that tell side and place apart, against a search over every coarse wall.
        let (cg, fg) = (&coarse.grid, &fine.grid);
        let c_density: Vec<f64> = cs
            .walls
            .iter()
            .map(|w| {
                let x = centre(cg, w.cell as usize);
                100.0 * w.side.id() as f64 + x[0] + 3.0 * x[1] + 9.0 * x[2]
            })
            .collect();
        let mut f_density = vec![-1.0; fine.bodies.solids.walls.len()];
        prolong_walls(&coarse, &c_density, &fine, &mut f_density);
        let dist = |a: [f64; 3], b: [f64; 3]| (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>();
        for (w, d) in fine.bodies.solids.walls.iter().zip(&f_density) {
            let x = centre(fg, w.cell as usize);
            let near = cs
                .walls
                .iter()
                .enumerate()
                .filter(|(_, c)| c.side == w.side)
                .map(|(n, c)| (dist(x, centre(cg, c.cell as usize)), n))
                .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a });
            assert_eq!(*d, c_density[near.1], "wall at {x:?}, side {:?}", w.side);
        }
    }

    #[test]
    fn a_box_face_beside_a_body_that_touches_it_takes_no_weight_from_the_body() {
        // The body fills the x_min face cells behind it: their wall density is 0 (a solid cell
        // emits nothing); the fluid face cells next to them must keep the gas's 1.
        let f = around_body();
        let body = Some(([0.0, 0.4, 0.4], [0.4, 0.6, 0.6]));
        let fine = problem_with([f.clone(), f.clone(), f.clone()], body);
        let keep: Vec<usize> =
            [0.0, 0.4, 0.6].iter().map(|&c| crate::config::grid::face_index(&f, c).unwrap()).collect();
        let cf = crate::solver::coarse::coarse_faces(&f, &keep).unwrap();
        let coarse = problem_with([cf.clone(), cf.clone(), cf], body);
        let (cg, fg) = (&coarse.grid, &fine.grid);
        // x_min face cells (k, j): k ny + j; the cell behind is (0, j, k).
        let values: Vec<f64> = (0..Face::XMin.cells(cg))
            .map(|n| if coarse.bodies.solids.is_solid(cg.index(0, n % cg.ny(), n / cg.ny())) { 0.0 } else { 1.0 })
            .collect();
        assert!(values.contains(&0.0), "the body reaches the face");
        let out = prolong_face(&coarse, &values, &fine, Face::XMin);
        for (n, v) in out.iter().enumerate() {
            if !fine.bodies.solids.is_solid(fg.index(0, n % fg.ny(), n / fg.ny())) {
                assert!((v - 1.0).abs() < 1e-14, "fluid face cell {n}: {v}");
            }
        }
    }

    #[test]
    fn a_face_takes_its_bilinear_values_in_the_face_cells_order() {
        // A non-cubic grid, the face cells numbered as src/grid/face.rs has them (x faces
        // k ny + j, y faces k nx + i, z faces j nx + i), and a linear function with another
        // slope along each axis: a face whose two axes were swapped or misnumbered fails.
        let uniform = |n: usize| (0..=n).map(|i| i as f64 / n as f64).collect::<Vec<f64>>();
        let ff = [uniform(12), uniform(8), uniform(16)];
        let cf = ff.clone().map(|f| crate::solver::coarse::coarse_faces(&f, &[]).unwrap());
        let (fine, coarse) = (problem(ff, false), problem(cf, false));
        let value = |x: [f64; 3]| 1.0 + 0.5 * x[0] + 2.0 * x[1] - 3.0 * x[2];
        // Face cell n's centre on grid g, by face.rs's numbering.
        let at = |g: &Grid, face: Face, n: usize| -> [f64; 3] {
            let (nx, ny) = (g.nx(), g.ny());
            let (i, j, k) = match face.axis() {
                0 => (0, n % ny, n / ny),
                1 => (n % nx, 0, n / nx),
                _ => (n % nx, n / nx, 0),
            };
            let mut x = [g.x.centres[i], g.y.centres[j], g.z.centres[k]];
            x[face.axis()] = 0.0;
            x
        };
        let (cg, fg) = (&coarse.grid, &fine.grid);
        let axes = [&cg.x, &cg.y, &cg.z];
        for face in Face::ALL {
            let values: Vec<f64> = (0..face.cells(cg)).map(|n| value(at(cg, face, n))).collect();
            let out = prolong_face(&coarse, &values, &fine, face);
            assert_eq!(out.len(), face.cells(fg));
            for (n, v) in out.iter().enumerate() {
                let x = at(fg, face, n);
                // Held beyond the outermost coarse centres (the normal coordinate stays 0).
                let mut xc: [f64; 3] =
                    std::array::from_fn(|a| x[a].clamp(axes[a].centres[0], *axes[a].centres.last().unwrap()));
                xc[face.axis()] = 0.0;
                let want = value(xc);
                // Bilinear weights reproduce a linear function to rounding (values of order 1).
                assert!((v - want).abs() < 1e-12, "{face:?} cell {n}: {v} against {want}");
            }
        }
    }
}
