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
        write_h5(tmp, p, r).with_context(|| format!("writing {}", path.display()))?;
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
    let open = |p: &Path| {
        let f = if p.is_dir() { p.join("fields.h5") } else { p.to_path_buf() };
        hdf5::File::open(&f).with_context(|| format!("opening {}", f.display()))
    };
    let (fa, fb) = (open(a)?, open(b)?);
    COMPARED
        .iter()
        .map(|&(name, comps)| {
            let (da, db) = (fa.dataset(name)?, fb.dataset(name)?);
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
                anyhow::bail!("{name}: grids {sa:?} and {sb:?} are neither equal nor integer refinements");
            };
            let d: f64 = x.iter().zip(&y).map(|(p, q)| (p - q) * (p - q)).sum();
            let n: f64 = y.iter().map(|q| q * q).sum();
            Ok((name, (d / n).sqrt()))
        })
        .collect()
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
    attr_str("config", &serde_json::to_string(&p.config)?)?;
    attr_str(
        "units",
        "non-dimensional: length L, temperature T0, density rho0, speed v0 = sqrt(2 R T0), pressure rho0 v0^2",
    )?;
    attr_str("stress_components", "xx yy zz xy xz yz")?;
    file.close()?;
    Ok(())
}
