//! `fields.h5`: cell fields in C order with shape (nz, ny, nx[, components]), so x varies
//! fastest as in the solver's cell numbering and as XDMF's 3DRectMesh expects.

use super::write_atomic;
use crate::problem::Problem;
use crate::solver::RunResult;
use anyhow::Context;
use hdf5::types::VarLenUnicode;
use std::path::Path;
use std::str::FromStr;

pub fn write_fields(path: &Path, p: &Problem, r: &RunResult) -> anyhow::Result<()> {
    write_atomic(path, |tmp| {
        write_h5(tmp, p, r)?;
        // Data on disk before the rename makes the file visible under its final name.
        std::fs::File::open(tmp)?.sync_all()?;
        Ok(())
    })
}

/// The fields `knudsen compare` compares, with their components per cell.
const COMPARED: [(&str, usize); 6] =
    [("density", 1), ("velocity", 3), ("temperature", 1), ("pressure", 1), ("stress", 6), ("heat_flux", 3)];

/// Relative L2 difference ||a - b|| / ||b|| of each field of two results (files or output
/// directories). When one grid refines the other by an integer factor per axis, the finer
/// fields are averaged over each coarse cell first (a restriction, exact for uniform grids),
/// which compares solutions at two resolutions.
pub fn compare_fields(a: &Path, b: &Path) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let (fa, fb) = (super::open_result(a)?, super::open_result(b)?);
    same_faces(&fa, &fb)?;
    COMPARED
        .iter()
        .map(|&(name, comps)| {
            let (da, db) = (need(&fa, name)?, need(&fb, name)?);
            let (sa, sb) = (da.shape(), db.shape());
            let x: Vec<f64> = da.read_raw()?;
            let y: Vec<f64> = db.read_raw()?;
            let (x, y) = if sa == sb {
                (x, y)
            } else if let Some(r) = refinement(&sa, &sb) {
                (restrict(&x, &sa, r, comps), y)
            } else if let Some(r) = refinement(&sb, &sa) {
                (x, restrict(&y, &sb, r, comps))
            } else {
                return Err(super::BadRequest(format!(
                    "{name}: grids {sa:?} and {sb:?} are neither equal nor integer refinements"
                ))
                .into());
            };
            // Solid cells are NaN in both results; they are left out. A cell solid in one
            // result only (other bodies) has no difference to measure.
            let one_sided = x.iter().zip(&y).filter(|(p, q)| p.is_nan() != q.is_nan()).count();
            if one_sided > 0 {
                return Err(super::BadRequest(format!(
                    "{name}: {one_sided} values are in a solid cell of one result and in gas in the other: the two cases' bodies differ"
                ))
                .into());
            }
            let pairs = || x.iter().zip(&y).filter(|(p, q)| !(p.is_nan() && q.is_nan()));
            let d: f64 = pairs().map(|(p, q)| (p - q) * (p - q)).sum();
            let n: f64 = pairs().map(|(_, q)| q * q).sum();
            Ok((name, (d / n).sqrt()))
        })
        .collect()
}

/// A dataset a result must hold; its absence is a bad request (the file is no knudsen result).
fn need(f: &hdf5::File, name: &str) -> anyhow::Result<hdf5::Dataset> {
    f.dataset(name)
        .map_err(|_| super::BadRequest(format!("{}: no dataset `{name}` (not a knudsen result?)", f.filename())).into())
}

/// Refuse results on grids that do not coincide: along each axis the coarser result's faces
/// must be every r-th face of the finer one's (r = 1: the same faces), to 1e-9 of the axis'
/// extent (the faces are stored as computed, in f64).
fn same_faces(fa: &hdf5::File, fb: &hdf5::File) -> anyhow::Result<()> {
    // Which result is finer along some axis, by name, to refuse a mix (A finer along x, B
    // along y), which neither restriction can compare.
    let mut finer: Option<(&str, bool)> = None;
    for axis in ["x", "y", "z"] {
        let name = format!("{axis}_faces");
        let (p, q): (Vec<f64>, Vec<f64>) = (need(fa, &name)?.read_raw()?, need(fb, &name)?.read_raw()?);
        if p.len() < 2 || q.len() < 2 {
            return Err(super::BadRequest(format!("`{name}` holds fewer than two faces: not a knudsen result")).into());
        }
        let (fine, coarse) = if p.len() >= q.len() { (&p, &q) } else { (&q, &p) };
        let (nf, nc) = (fine.len() - 1, coarse.len() - 1);
        let extent = (fine[nf] - fine[0]).abs().max(f64::MIN_POSITIVE);
        let fits = nc > 0
            && nf % nc == 0
            && coarse.iter().enumerate().all(|(i, c)| (fine[i * (nf / nc)] - c).abs() <= 1e-9 * extent);
        if !fits {
            return Err(super::BadRequest(format!(
                "the grids differ along {axis}: {} cells on [{}, {}] against {} on [{}, {}], and not by refining every cell alike",
                p.len() - 1,
                p[0],
                p[p.len() - 1],
                q.len() - 1,
                q[0],
                q[q.len() - 1]
            ))
            .into());
        }
        if nf != nc {
            let a_finer = p.len() > q.len();
            match finer {
                Some((other, was)) if was != a_finer => {
                    let (ax_a, ax_b) = if a_finer { (axis, other) } else { (other, axis) };
                    return Err(super::BadRequest(format!(
                        "the first result is finer along {ax_a} and the second along {ax_b}: one must refine the other along every axis"
                    ))
                    .into());
                }
                _ => finer = Some((axis, a_finer)),
            }
        }
    }
    Ok(())
}

/// Per-axis factors r with fine = r x coarse (shapes (nz, ny, nx[, c])).
fn refinement(fine: &[usize], coarse: &[usize]) -> Option<[usize; 3]> {
    if fine.len() != coarse.len() || fine[3..] != coarse[3..] {
        return None;
    }
    let r: Vec<usize> = (0..3).map(|d| if fine[d] % coarse[d] == 0 { fine[d] / coarse[d] } else { 0 }).collect();
    r.iter().all(|&x| x >= 1).then(|| [r[0], r[1], r[2]])
}

/// Average r-blocks of a fine (nz, ny, nx, comps) field onto the coarse grid.
fn restrict(x: &[f64], shape: &[usize], r: [usize; 3], comps: usize) -> Vec<f64> {
    let (nz, ny, nx) = (shape[0], shape[1], shape[2]);
    let (cz, cy, cx) = (nz / r[0], ny / r[1], nx / r[2]);
    let mut out = vec![0.0; cz * cy * cx * comps];
    let scale = 1.0 / (r[0] * r[1] * r[2]) as f64;
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let c = ((k / r[0]) * cy + j / r[1]) * cx + i / r[2];
                let f = (k * ny + j) * nx + i;
                for m in 0..comps {
                    out[c * comps + m] += scale * x[f * comps + m];
                }
            }
        }
    }
    out
}
fn write_h5(path: &Path, p: &Problem, r: &RunResult) -> anyhow::Result<()> {
    let g = &p.grid;
    let [nx, ny, nz] = g.dims();
    let file = hdf5::File::create(path)?;
    let f = &r.fields;
    let scalar = |name: &str, data: Vec<f64>| -> anyhow::Result<()> {
        file.new_dataset::<f64>().shape([nz, ny, nx]).create(name)?.write_raw(&data)?;
        Ok(())
    };
    let vector = |name: &str, n: usize, data: Vec<f64>| -> anyhow::Result<()> {
        file.new_dataset::<f64>().shape([nz, ny, nx, n]).create(name)?.write_raw(&data)?;
        Ok(())
    };
    scalar("density", f.iter().map(|m| m.rho).collect())?;
    scalar("temperature", f.iter().map(|m| m.t).collect())?;
    scalar("pressure", f.iter().map(|m| m.pressure()).collect())?;
    vector("velocity", 3, f.iter().flat_map(|m| m.u).collect())?;
    vector("heat_flux", 3, f.iter().flat_map(|m| m.q).collect())?;
    vector("stress", 6, f.iter().flat_map(|m| m.p).collect())?;
    // Each component again as a scalar, for XDMF readers that take no hyperslabs
    // (ParaView's Xdmf3 readers); `stress` stays the one that programs read.
    for (c, comp) in super::xdmf::STRESS_COMPONENTS.iter().enumerate() {
        scalar(&format!("stress_{comp}"), f.iter().map(|m| m.p[c]).collect())?;
    }
    if p.bodies.solids.any() {
        // Per cell: 0 for gas, body index + 1 for solid (the fields there are NaN).
        scalar("solid", p.bodies.solids.body_of.iter().map(|&b| b as f64).collect())?;
        write_surface(&file, p, r)?;
    }
    // The next iteration's boundary inputs, for `knudsen run --restart`.
    let rs = file.create_group("restart")?;
    let fd: Vec<f64> = r.next_face_density.iter().flatten().copied().collect();
    rs.new_dataset::<f64>().shape([fd.len()]).create("face_density")?.write_raw(&fd)?;
    let wd = &r.next_wall_density;
    rs.new_dataset::<f64>().shape([wd.len()]).create("wall_density")?.write_raw(wd)?;
    // The damping state (`crate::damping`), the box faces' in face order, then the walls'.
    let st = &r.next_steps;
    let (mut fs, mut fr) = (Vec::new(), Vec::new());
    for (steps, d) in st.face.iter().zip(&r.next_face_density) {
        let (s, rev) = steps.stored(d.len());
        fs.extend(s);
        fr.extend(rev);
    }
    let (ws, wr) = st.wall.stored(wd.len());
    for (name, data) in [("face_density_step", &fs), ("wall_density_step", &ws)] {
        rs.new_dataset::<f64>().shape([data.len()]).create(name)?.write_raw(data)?;
    }
    for (name, data) in [("face_density_reversed", &fr), ("wall_density_reversed", &wr)] {
        rs.new_dataset::<u8>().shape([data.len()]).create(name)?.write_raw(data)?;
    }
    for (face, data) in crate::boundary::Face::ALL.iter().zip(&r.next_partner) {
        if !data.is_empty() {
            let per = crate::boundary::slots_per_cell(p.vgrid.m);
            rs.new_dataset::<f64>()
                .shape([data.len() / per, per])
                .create(format!("partner_{}", face.name()).as_str())?
                .write_raw(data)?;
        }
    }
    if let Some(saved) = &r.strategy_state {
        let flat: Vec<f64> = saved.iter().flatten().copied().collect();
        rs.new_dataset::<f64>().shape([saved.len(), 5]).create("strategy_state")?.write_raw(&flat)?;
    }
    // The residual after a restart compares against the last sweep's output, which a
    // synthetic correction's fields no longer give (and source iteration's give only to
    // round-off, through the macroscopic variables).
    let sc: Vec<f64> = r.sweep_conserved.iter().flatten().copied().collect();
    rs.new_dataset::<f64>().shape([r.sweep_conserved.len(), 5]).create("sweep_conserved")?.write_raw(&sc)?;
    super::restart::write_history(&rs, &r.history)?;
    for (name, axis) in [("x", &g.x), ("y", &g.y), ("z", &g.z)] {
        file.new_dataset::<f64>().shape([axis.len()]).create(name)?.write_raw(&axis.centres)?;
        file.new_dataset::<f64>()
            .shape([axis.len() + 1])
            .create(format!("{name}_faces").as_str())?
            .write_raw(&axis.faces)?;
    }
    let attr_f64 = |name: &str, v: f64| -> anyhow::Result<()> {
        file.new_attr::<f64>().create(name)?.write_scalar(&v)?;
        Ok(())
    };
    let attr_str = |name: &str, v: &str| -> anyhow::Result<()> {
        let s = VarLenUnicode::from_str(v).map_err(|e| anyhow::anyhow!("attribute {name}: {e}"))?;
        file.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&s)?;
        Ok(())
    };
    attr_f64("kn", p.config.kn())?;
    attr_f64("delta", p.config.delta())?;
    attr_f64("prandtl", p.prandtl)?;
    attr_f64("omega", p.omega)?;
    attr_f64("final_residual", r.final_residual())?;
    file.new_attr::<u64>().create("iterations")?.write_scalar(&(r.iterations() as u64))?;
    file.new_attr::<u8>().create("converged")?.write_scalar(&u8::from(r.converged))?;
    file.new_attr::<u8>().create("interrupted")?.write_scalar(&u8::from(r.interrupted))?;
    file.new_attr::<u8>().create("stalled")?.write_scalar(&u8::from(r.stalled.is_some()))?;
    attr_str("config", &serde_json::to_string(&p.config)?)?;
    attr_str("config_hash", &p.config.state_hash())?;
    attr_str(
        "units",
        "non-dimensional: length L, temperature T0, density rho0, speed v0 = sqrt(2 R T0), pressure rho0 v0^2",
    )?;
    attr_str("stress_components", "xx yy zz xy xz yz")?;
    file.close()?;
    Ok(())
}

/// The `surface` group: one quadrilateral per body wall face, with four corners of its own
/// (4 N points), and per face the body index, outward normal, pressure, shear stress, heat
/// flux into the body and net mass flux (`crate::loads`). Each quadrilateral's corners run
/// counter-clockwise seen from the gas, so that their winding gives the outward normal (as
/// ParaView's normals and lighting take it).
fn write_surface(file: &hdf5::File, p: &Problem, r: &RunResult) -> anyhow::Result<()> {
    let g = &p.grid;
    let surf = crate::loads::surface(p, &r.wall, &r.wall_density);
    let n = surf.len();
    let grp = file.create_group("surface")?;
    let mut points = Vec::with_capacity(n * 12);
    for (wf, sp) in p.bodies.solids.walls.iter().zip(&surf) {
        let a = wf.side.axis();
        let (t1, t2) = ((a + 1) % 3, (a + 2) % 3);
        let [i, j, k] = g.coords(wf.cell as usize);
        let idx = [i, j, k];
        let axes = [&g.x, &g.y, &g.z];
        let span = |d: usize| (axes[d].faces[idx[d]], axes[d].faces[idx[d] + 1]);
        let (u0, u1) = span(t1);
        let (v0, v1) = span(t2);
        // Counter-clockwise in (t1, t2) winds about +e_a (t1, t2, a cyclic); a face whose
        // normal points down the axis takes its corners the other way round.
        let corners = if sp.normal[a] > 0.0 {
            [(u0, v0), (u1, v0), (u1, v1), (u0, v1)]
        } else {
            [(u0, v0), (u0, v1), (u1, v1), (u1, v0)]
        };
        for (u, v) in corners {
            let mut c = sp.centre;
            c[t1] = u;
            c[t2] = v;
            points.extend(c);
        }
    }
    let conn: Vec<u64> = (0..4 * n as u64).collect();
    grp.new_dataset::<f64>().shape([4 * n, 3]).create("points")?.write_raw(&points)?;
    grp.new_dataset::<u64>().shape([n, 4]).create("connectivity")?.write_raw(&conn)?;
    let scalar = |name: &str, data: Vec<f64>| -> anyhow::Result<()> {
        grp.new_dataset::<f64>().shape([n]).create(name)?.write_raw(&data)?;
        Ok(())
    };
    let vector = |name: &str, data: Vec<f64>| -> anyhow::Result<()> {
        grp.new_dataset::<f64>().shape([n, 3]).create(name)?.write_raw(&data)?;
        Ok(())
    };
    scalar("body", surf.iter().map(|s| s.body as f64).collect())?;
    scalar("area", surf.iter().map(|s| s.area).collect())?;
    scalar("pressure", surf.iter().map(|s| s.pressure).collect())?;
    scalar("heat_flux", surf.iter().map(|s| s.heat_flux).collect())?;
    scalar("mass_flux", surf.iter().map(|s| s.mass_flux).collect())?;
    vector("normal", surf.iter().flat_map(|s| s.normal).collect())?;
    vector("shear", surf.iter().flat_map(|s| s.shear).collect())?;
    Ok(())
}

/// Write the plane of cells normal to `axis` nearest coordinate `at` of field `name` as CSV:
/// the two in-plane centre coordinates, then the field's components.
pub fn write_plane_csv(result: &Path, name: &str, axis: &str, at: f64, out: &Path) -> anyhow::Result<()> {
    let field = super::CellField::read(result, name)?;
    let d = ["x", "y", "z"].iter().position(|&a| a == axis).context("axis must be x, y or z")?;
    let coords = &field.centres;
    let along = &coords[d];
    let faces = field.array(&format!("{axis}_faces"))?;
    let (lo, hi) = (faces[0], faces[faces.len() - 1]);
    // Written so that NaN is refused too.
    if !(lo..=hi).contains(&at) {
        return Err(super::BadRequest(format!("--at: {axis} = {at} lies outside the grid's faces [{lo}, {hi}]")).into());
    }
    let idx = (0..along.len()).min_by(|&a, &b| (along[a] - at).abs().total_cmp(&(along[b] - at).abs())).unwrap();
    let (u, v) = [(1, 2), (0, 2), (0, 1)][d];
    let names = ["x", "y", "z"];
    let mut csv = format!(
        "# {name} on the plane {axis} = {} (cell index {idx})\n{},{}{}\n",
        along[idx],
        names[u],
        names[v],
        field.columns(name)
    );
    for b in 0..coords[v].len() {
        for a in 0..coords[u].len() {
            let mut ijk = [0; 3];
            (ijk[d], ijk[u], ijk[v]) = (idx, a, b);
            csv.push_str(&format!("{},{}", coords[u][a], coords[v][b]));
            for c in 0..field.comps {
                csv.push_str(&format!(",{}", field.at(ijk, c)));
            }
            csv.push('\n');
        }
    }
    super::write_atomic_bytes(out, csv.as_bytes())
}
