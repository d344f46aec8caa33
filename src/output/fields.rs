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
        write_h5(tmp, p, r).with_context(|| format!("writing {}", path.display()))
    })
}

fn write_h5(path: &Path, p: &Problem, r: &RunResult) -> anyhow::Result<()> {
    let g = &p.grid;
    let [nx, ny, nz] = g.dims();
    let file = hdf5::File::create(path)?;
    let f = &r.fields;
    let scalar = |name: &str, data: Vec<f64>| -> anyhow::Result<()> {
        file.new_dataset::<f64>()
            .shape([nz, ny, nx])
            .create(name)?
            .write_raw(&data)?;
        Ok(())
    };
    let vector = |name: &str, n: usize, data: Vec<f64>| -> anyhow::Result<()> {
        file.new_dataset::<f64>()
            .shape([nz, ny, nx, n])
            .create(name)?
            .write_raw(&data)?;
        Ok(())
    };
    scalar("density", f.iter().map(|m| m.rho).collect())?;
    scalar("temperature", f.iter().map(|m| m.t).collect())?;
    scalar("pressure", f.iter().map(|m| m.pressure()).collect())?;
    vector("velocity", 3, f.iter().flat_map(|m| m.u).collect())?;
    vector("heat_flux", 3, f.iter().flat_map(|m| m.q).collect())?;
    vector("stress", 6, f.iter().flat_map(|m| m.p).collect())?;
    for (name, axis) in [("x", &g.x), ("y", &g.y), ("z", &g.z)] {
        file.new_dataset::<f64>()
            .shape([axis.len()])
            .create(name)?
            .write_raw(&axis.centres)?;
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
        file.new_attr::<VarLenUnicode>()
            .create(name)?
            .write_scalar(&s)?;
        Ok(())
    };
    attr_f64("kn", p.config.kn())?;
    attr_f64("delta", p.config.delta())?;
    attr_f64("prandtl", p.prandtl)?;
    attr_f64("omega", p.omega)?;
    attr_f64("final_residual", r.final_residual())?;
    file.new_attr::<u64>()
        .create("iterations")?
        .write_scalar(&(r.iterations() as u64))?;
    file.new_attr::<u8>()
        .create("converged")?
        .write_scalar(&u8::from(r.converged))?;
    attr_str("config", &serde_json::to_string(&p.config)?)?;
    attr_str("units", "non-dimensional: length L, temperature T0, density rho0, speed v0 = sqrt(2 R T0), pressure rho0 v0^2")?;
    attr_str("stress_components", "xx yy zz xy xz yz")?;
    file.close()?;
    Ok(())
}
