//! Continuing a run: the state in `fields.h5` (a finished or interrupted run) or
//! `checkpoint.h5` (written while it ran), and the case it belongs to.

use crate::problem::Problem;
use crate::solver::IterationRecord;
use anyhow::Context;
use hdf5::types::VarLenUnicode;
use std::path::{Path, PathBuf};

/// The file to continue from: `dir` itself if it is a file; else whichever of
/// `dir/fields.h5` and `dir/checkpoint.h5` holds more iterations (a run killed after a
/// checkpoint leaves only the latter, a finished one the former).
pub fn restart_file(dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.exists() {
        anyhow::bail!("no such file or directory");
    }
    if !dir.is_dir() {
        return Ok(dir.to_path_buf());
    }
    let iterations =
        |p: &Path| -> Option<u64> { hdf5::File::open(p).ok()?.attr("iterations").ok()?.read_scalar().ok() };
    ["fields.h5", "checkpoint.h5"]
        .iter()
        .map(|n| dir.join(n))
        .filter_map(|p| iterations(&p).map(|n| (n, p)))
        .max_by_key(|(n, _)| *n)
        .map(|(_, p)| p)
        .ok_or_else(|| anyhow::anyhow!("{}: neither fields.h5 nor checkpoint.h5 is a readable result", dir.display()))
}

/// The case stored with a result (its `config` attribute), as JSON.
pub fn stored_config(path: &Path) -> anyhow::Result<serde_json::Value> {
    let file = hdf5::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let text: VarLenUnicode = file
        .attr("config")
        .and_then(|a| a.read_scalar())
        .with_context(|| format!("{}: no `config` attribute", path.display()))?;
    serde_json::from_str(text.as_str()).with_context(|| format!("{}: the stored case is not JSON", path.display()))
}

/// The residual history, in `restart/history_*` (one dataset per column; drag NaN where
/// there is none).
pub fn write_history(group: &hdf5::Group, h: &[IterationRecord]) -> anyhow::Result<()> {
    let n = h.len();
    let it: Vec<u64> = h.iter().map(|r| r.iteration as u64).collect();
    group.new_dataset::<u64>().shape([n]).create("history_iteration")?.write_raw(&it)?;
    let res: Vec<f64> = h.iter().flat_map(|r| r.residuals).collect();
    group.new_dataset::<f64>().shape([n, 5]).create("history_residuals")?.write_raw(&res)?;
    for (name, col) in [
        ("history_elapsed", h.iter().map(|r| r.elapsed).collect::<Vec<_>>()),
        ("history_seconds", h.iter().map(|r| r.seconds).collect()),
        ("history_drag", h.iter().map(|r| r.drag.unwrap_or(f64::NAN)).collect()),
    ] {
        group.new_dataset::<f64>().shape([n]).create(name)?.write_raw(&col)?;
    }
    Ok(())
}

fn read_history(file: &hdf5::File) -> anyhow::Result<Option<Vec<IterationRecord>>> {
    let Ok(it) = file.dataset("restart/history_iteration") else { return Ok(None) };
    let it: Vec<u64> = it.read_raw()?;
    let col = |name: &str| -> anyhow::Result<Vec<f64>> { Ok(file.dataset(&format!("restart/{name}"))?.read_raw()?) };
    let (res, elapsed, seconds, drag) =
        (col("history_residuals")?, col("history_elapsed")?, col("history_seconds")?, col("history_drag")?);
    let n = it.len();
    anyhow::ensure!(
        res.len() == 5 * n && elapsed.len() == n && seconds.len() == n && drag.len() == n,
        "the stored residual history is inconsistent"
    );
    Ok(Some(
        (0..n)
            .map(|i| IterationRecord {
                iteration: it[i] as usize,
                residuals: std::array::from_fn(|c| res[5 * i + c]),
                elapsed: elapsed[i],
                seconds: seconds[i],
                drag: (!drag[i].is_nan()).then_some(drag[i]),
            })
            .collect(),
    ))
}

/// The state a run wrote (`fields.h5` or `checkpoint.h5`; see [`restart_file`]), to
/// continue it. The grid, boundaries and bodies must be those of `p`.
pub fn read_restart(dir: &Path, p: &Problem) -> anyhow::Result<crate::solver::Restart> {
    let path = restart_file(dir)?;
    let file = hdf5::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let [nx, ny, nz] = p.grid.dims();
    let read = |name: &str, comps: usize| -> anyhow::Result<Vec<f64>> {
        let ds = file.dataset(name).with_context(|| format!("{}: no `{name}`", path.display()))?;
        let mut want = vec![nz, ny, nx];
        if comps > 1 {
            want.push(comps);
        }
        anyhow::ensure!(
            ds.shape() == want,
            "{}: `{name}` has shape {:?}, this case needs {want:?}",
            path.display(),
            ds.shape()
        );
        Ok(ds.read_raw()?)
    };
    let (rho, u, t, q, pt) =
        (read("density", 1)?, read("velocity", 3)?, read("temperature", 1)?, read("heat_flux", 3)?, read("stress", 6)?);
    let fields = (0..p.grid.cells())
        .map(|c| crate::model::Macro {
            rho: rho[c],
            u: [u[3 * c], u[3 * c + 1], u[3 * c + 2]],
            t: t[c],
            q: [q[3 * c], q[3 * c + 1], q[3 * c + 2]],
            p: std::array::from_fn(|m| pt[6 * c + m]),
        })
        .collect();
    let fd: Vec<f64> = file
        .dataset("restart/face_density")
        .with_context(|| format!("{}: no restart data (written by knudsen 0.1 runs and later)", path.display()))?
        .read_raw()?;
    let wall_density: Vec<f64> = file.dataset("restart/wall_density")?.read_raw()?;
    let sizes: Vec<usize> = crate::boundary::Face::ALL.iter().map(|f| f.cells(&p.grid)).collect();
    anyhow::ensure!(
        fd.len() == sizes.iter().sum::<usize>(),
        "{}: box-face data does not match this grid",
        path.display()
    );
    anyhow::ensure!(
        wall_density.len() == p.bodies.solids.walls.len(),
        "{}: {} wall faces stored, this case has {}",
        path.display(),
        wall_density.len(),
        p.bodies.solids.walls.len()
    );
    // The same count of wall faces is not the same bodies (one moved by its size): the
    // solid cells must coincide, or the old solid cells' NaN fields would become gas.
    let stored: Vec<f64> = match file.dataset("solid") {
        Ok(ds) => ds.read_raw()?,
        // Written only where there are bodies: 0, gas, everywhere else.
        Err(_) => vec![0.0; p.grid.cells()],
    };
    // Empty where the case has no body.
    let body_of = |c: usize| p.bodies.solids.body_of.get(c).map_or(0.0, |&b| f64::from(b));
    if let Some(c) = (0..p.grid.cells()).find(|&c| stored.get(c) != Some(&body_of(c))) {
        let [i, j, k] = p.grid.coords(c);
        anyhow::bail!(
            "{}: its solid cells differ from this case's bodies (first at cell ({i}, {j}, {k})); a run continues only with the bodies it was made with",
            path.display()
        );
    }
    let mut at = 0;
    let face_density = std::array::from_fn(|f| {
        let v = fd[at..at + sizes[f]].to_vec();
        at += sizes[f];
        v
    });
    // Files from before density damping have no steps: the first continued update is undamped.
    // Files from before the reversal flags have steps only: the first continued reversal is
    // taken as it is, the next one in a row summed.
    let mut steps = crate::damping::DensitySteps::default();
    let (f, w) = (file.dataset("restart/face_density_step"), file.dataset("restart/wall_density_step"));
    anyhow::ensure!(
        f.is_ok() == w.is_ok(),
        "{}: one of restart/face_density_step and restart/wall_density_step is missing",
        path.display()
    );
    let (fr, wr) = (file.dataset("restart/face_density_reversed"), file.dataset("restart/wall_density_reversed"));
    anyhow::ensure!(
        fr.is_ok() == wr.is_ok() && (f.is_ok() || fr.is_err()),
        "{}: restart/face_density_reversed and restart/wall_density_reversed come as a pair, with the steps",
        path.display()
    );
    if let (Ok(f), Ok(w)) = (f, w) {
        let (fs, ws): (Vec<f64>, Vec<f64>) = (f.read_raw()?, w.read_raw()?);
        let (frs, wrs): (Vec<u8>, Vec<u8>) = match (fr, wr) {
            (Ok(fr), Ok(wr)) => (fr.read_raw()?, wr.read_raw()?),
            _ => (vec![0; fs.len()], vec![0; ws.len()]),
        };
        anyhow::ensure!(
            fs.len() == fd.len() && ws.len() == wall_density.len() && frs.len() == fs.len() && wrs.len() == ws.len(),
            "{}: the density-damping steps do not match the densities",
            path.display()
        );
        let mut at = 0;
        steps.face = std::array::from_fn(|f| {
            let (a, b) = (at, at + sizes[f]);
            at = b;
            crate::damping::Steps::from_stored(&fs[a..b], &frs[a..b])
        });
        steps.wall = crate::damping::Steps::from_stored(&ws, &wrs);
    }
    let mut partner: crate::boundary::FaceData = Default::default();
    for face in crate::boundary::Face::ALL {
        if p.bounds.stores_inflow(face) {
            let name = format!("restart/partner_{}", face.name());
            let ds = file.dataset(&name).with_context(|| format!("{}: no `{name}`", path.display()))?;
            let want = face.cells(&p.grid) * crate::boundary::slots_per_cell(p.vgrid.m);
            anyhow::ensure!(ds.size() == want, "{}: `{name}` does not match this grid", path.display());
            partner[face.id()] = ds.read_raw()?;
        }
    }
    // Files from before the history was stored in them: residuals.csv beside them.
    let history = match read_history(&file)? {
        Some(h) => h,
        None => {
            let csv = path.with_file_name("residuals.csv");
            match std::fs::read_to_string(&csv) {
                Ok(text) => {
                    super::csv::parse_residuals_csv(&text).with_context(|| format!("reading {}", csv.display()))?
                }
                Err(_) => Vec::new(),
            }
        }
    };
    // The synthetic solve's linearisation state, where the run kept one (absent otherwise,
    // and in results of older versions: the strategy then starts afresh); the last sweep's
    // conserved variables (older results: absent, and the first residual after the restart
    // then compares against the fields).
    let strategy_state = per_cell_5(&file, "restart/strategy_state", p.grid.cells(), &path)?;
    let sweep_conserved = per_cell_5(&file, "restart/sweep_conserved", p.grid.cells(), &path)?;
    Ok(crate::solver::Restart {
        fields,
        face_density,
        wall_density,
        partner,
        steps,
        history,
        strategy_state,
        sweep_conserved,
    })
}

/// An optional (cells, 5) dataset of `file`, refused by name where it does not fit the grid.
fn per_cell_5(file: &hdf5::File, name: &str, cells: usize, path: &Path) -> anyhow::Result<Option<Vec<[f64; 5]>>> {
    let Ok(ds) = file.dataset(name) else { return Ok(None) };
    let flat: Vec<f64> = ds.read_raw()?;
    anyhow::ensure!(
        flat.len() == 5 * cells,
        "{}: {name} has {} values, this grid needs {}",
        path.display(),
        flat.len(),
        5 * cells
    );
    Ok(Some(flat.chunks(5).map(|c| std::array::from_fn(|k| c[k])).collect()))
}
