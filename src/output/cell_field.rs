//! One cell field of a finished result read back (`knudsen slice`, `knudsen line`), and how
//! such a read fails when the request is at fault.

use std::path::Path;

/// What a command that reads a result was asked for and cannot give (no such file or field,
/// a dataset that is not a cell field, a point outside the grid): the request is at fault,
/// not the run; the CLI exits 2.
#[derive(Debug)]
pub struct BadRequest(pub String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadRequest {}

/// A cell field with the grid's centres, as `fields.h5` stores it: `data` in C order of
/// shape (nz, ny, nx, comps), so cell (i, j, k)'s component c is at
/// `((k ny + j) nx + i) comps + c`.
pub struct CellField {
    pub file: hdf5::File,
    pub data: Vec<f64>,
    pub comps: usize,
    /// Cell-centre coordinates along x, y, z.
    pub centres: [Vec<f64>; 3],
}

impl CellField {
    /// The field `name` of the result `result` (fields.h5 or its directory). A file that
    /// cannot be opened, a missing field, or a dataset not shaped (nz, ny, nx[, components])
    /// (the coordinates, the restart group's) is a [`BadRequest`].
    pub fn read(result: &Path, name: &str) -> anyhow::Result<Self> {
        let file = super::open_result(result)?;
        let f = Path::new(file.filename().as_str()).to_path_buf();
        let ds = file.dataset(name).map_err(|_| {
            BadRequest(format!(
                "{}: no field `{name}` (the cell fields: {})",
                f.display(),
                cell_fields(&file).join(", ")
            ))
        })?;
        let read = |a: &str| -> anyhow::Result<Vec<f64>> { Ok(file.dataset(a)?.read_raw()?) };
        let centres = [read("x")?, read("y")?, read("z")?];
        let cells = [centres[2].len(), centres[1].len(), centres[0].len()];
        let shape = ds.shape();
        if !(shape.len() == 3 || shape.len() == 4) || shape[..3] != cells {
            let msg = format!("{}: `{name}` is not a cell field (shape {shape:?}, cells {cells:?})", f.display());
            return Err(BadRequest(msg).into());
        }
        let comps = if shape.len() == 4 { shape[3] } else { 1 };
        let data = ds.read_raw()?;
        Ok(Self { file, data, comps, centres })
    }

    /// The CSV columns of the field's components: `,name`, or `,name_0,name_1,...`.
    pub fn columns(&self, name: &str) -> String {
        match self.comps {
            1 => format!(",{name}"),
            n => (0..n).map(|c| format!(",{name}_{c}")).collect(),
        }
    }

    /// Another array of the same file (e.g. the face coordinates `x_faces`).
    pub fn array(&self, name: &str) -> anyhow::Result<Vec<f64>> {
        Ok(self.file.dataset(name)?.read_raw()?)
    }

    /// Component `c` of cell `ijk`.
    pub fn at(&self, ijk: [usize; 3], c: usize) -> f64 {
        let [nx, ny] = [self.centres[0].len(), self.centres[1].len()];
        self.data[((ijk[2] * ny + ijk[1]) * nx + ijk[0]) * self.comps + c]
    }
}

/// The names of the cell fields in `file` (its root datasets of 3 or 4 dimensions), for a
/// message naming a field that is not there.
fn cell_fields(file: &hdf5::File) -> Vec<String> {
    let names = file.member_names().unwrap_or_default();
    names.into_iter().filter(|n| file.dataset(n).is_ok_and(|d| matches!(d.ndim(), 3 | 4))).collect()
}
