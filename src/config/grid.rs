//! `grid`: the three axes of the physical grid, each in one of three forms, turned here into
//! the face coordinates that `crate::grid::Axis` is built from.

use super::{one, ConfigError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridConfig {
    pub x: AxisConfig,
    pub y: AxisConfig,
    pub z: AxisConfig,
}

/// One axis of the physical grid, in one of three forms (docs/configs.md):
/// uniform `{min, max, cells}`; explicit `{faces: [...]}`; or stretched
/// `{min, max, stretched: {...}}` (uniform across a body, geometric toward both ends).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<usize>,
    /// Strictly increasing face coordinates (cells + 1 of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faces: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stretched: Option<StretchConfig>,
}

/// Uniform cells over `uniform = [a, b]`, then cells growing geometrically by `ratio_min`
/// toward `min` and by `ratio_max` toward `max`. The number of growing cells on a side is
/// the rounded count that reaches the end at the given ratio; the ratio is then adjusted so
/// the last face lands exactly on the end. A side of a few cells whose steps that leaves
/// above `MAX_STRETCH_RATIO` gets another count or equal cells instead (`side_cells`).
/// `knudsen check` prints the result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StretchConfig {
    pub uniform: [f64; 2],
    /// Cells across [a, b].
    pub cells: usize,
    #[serde(default = "one")]
    pub ratio_min: f64,
    #[serde(default = "one")]
    pub ratio_max: f64,
}

/// Growth ratios above this make first-order upwinding on the stretched part too coarse to
/// be useful; 1 (no growth) is the lower bound.
pub const MAX_STRETCH_RATIO: f64 = 1.5;

/// Cell indices within a slice and face arrays are 32-bit on GPUs.
pub const MAX_CELLS_PER_AXIS: usize = 16384;

impl GridConfig {
    /// Check the three axes; their face coordinates, x, y, z.
    pub fn validate(&self) -> Result<[Vec<f64>; 3], ConfigError> {
        let mut axes = Vec::new();
        for (name, a) in [("x", &self.x), ("y", &self.y), ("z", &self.z)] {
            let faces = a.faces().map_err(|e| ConfigError::new(format!("grid.{name}{}", e.key), e.reason))?;
            axes.push(faces);
        }
        Ok(axes.try_into().expect("three axes"))
    }

    /// Cells per axis (validated config).
    pub fn cell_counts(&self) -> [usize; 3] {
        [&self.x, &self.y, &self.z].map(|a| a.faces().map_or(0, |f| f.len() - 1))
    }
}

impl AxisConfig {
    pub fn uniform(min: f64, max: f64, cells: usize) -> Self {
        Self { min: Some(min), max: Some(max), cells: Some(cells), ..Default::default() }
    }

    /// The strictly increasing face coordinates of the axis; the error's key is relative
    /// to the axis (e.g. `.stretched.cells`).
    pub fn faces(&self) -> Result<Vec<f64>, ConfigError> {
        let err = |k: &str, r: String| Err(ConfigError::new(k, r));
        match (self.min, self.max, self.cells, &self.faces, &self.stretched) {
            (Some(lo), Some(hi), Some(n), None, None) => {
                check_ends(lo, hi)?;
                if n == 0 {
                    return err(".cells", "must be at least 1".into());
                }
                check_cell_count(n)?;
                check_built(uniform_faces(lo, hi, n), ".cells")
            }
            (None, None, None, Some(f), None) => {
                if f.len() < 2 {
                    return err(".faces", format!("need at least 2 faces (one cell), got {}", f.len()));
                }
                if f.iter().any(|x| !x.is_finite()) {
                    return err(".faces", "must be finite".into());
                }
                if let Some(i) = f.windows(2).position(|w| w[1] <= w[0]) {
                    return err(
                        ".faces",
                        format!("must increase strictly: faces[{}] = {} >= faces[{}] = {}", i, f[i], i + 1, f[i + 1]),
                    );
                }
                check_cell_count(f.len() - 1)?;
                Ok(f.clone())
            }
            (Some(lo), Some(hi), None, None, Some(st)) => {
                check_ends(lo, hi)?;
                check_built(stretched_faces(lo, hi, st)?, ".stretched")
            }
            _ => err("", "give one of {min, max, cells} (uniform), {faces} (explicit) or {min, max, stretched}".into()),
        }
    }
}

/// `cells` equal cells over [min, max]. The last face is set exactly so the domain length has
/// no round-off.
pub fn uniform_faces(min: f64, max: f64, cells: usize) -> Vec<f64> {
    let h = (max - min) / cells as f64;
    (0..=cells).map(|i| if i == cells { max } else { min + h * i as f64 }).collect()
}

/// The index of the face at coordinate `c`, if `c` is on a face (to 1e-9 of the
/// neighbouring widths, so decimal configs match computed faces).
pub fn face_index(faces: &[f64], c: f64) -> Option<usize> {
    let width = |k: usize| Some(faces.get(k.checked_add(1)?)? - faces.get(k)?);
    let i = faces.partition_point(|&f| f < c);
    [i.wrapping_sub(1), i].into_iter().filter(|&k| k < faces.len()).find(|&k| {
        let w = width(k).or(width(k.wrapping_sub(1))).unwrap_or(1.0);
        (faces[k] - c).abs() <= 1e-9 * w
    })
}

/// Uniform cells over `st.uniform`, geometric growth toward both ends (StretchConfig).
pub fn stretched_faces(lo: f64, hi: f64, st: &StretchConfig) -> Result<Vec<f64>, ConfigError> {
    let [a, b] = st.uniform;
    if !(a.is_finite() && b.is_finite() && lo <= a && a < b && b <= hi) {
        return Err(ConfigError::new(
            ".stretched.uniform",
            format!("[{a}, {b}] must be an increasing interval inside [{lo}, {hi}]"),
        ));
    }
    if st.cells == 0 {
        return Err(ConfigError::new(".stretched.cells", "must be at least 1"));
    }
    for (k, r) in [("ratio_min", st.ratio_min), ("ratio_max", st.ratio_max)] {
        if !(r.is_finite() && (1.0..=MAX_STRETCH_RATIO).contains(&r)) {
            return Err(ConfigError::new(
                format!(".stretched.{k}"),
                format!("must lie in [1, {MAX_STRETCH_RATIO}], got {r}"),
            ));
        }
    }
    check_cell_count(st.cells)?;
    let h = (b - a) / st.cells as f64;
    // Count before building: a narrow uniform part in a long domain asks for many cells.
    let (n_low, n_high) = (growing_count(a - lo, h, st.ratio_min), growing_count(hi - b, h, st.ratio_max));
    check_cell_count(n_low.saturating_add(st.cells).saturating_add(n_high))?;
    let low = side_cells(a - lo, h, n_low);
    let high = side_cells(hi - b, h, n_high);
    check_cell_count(low.len() + st.cells + high.len())?;
    let mut faces = Vec::with_capacity(low.len() + st.cells + high.len() + 1);
    let mut x = a;
    faces.push(a);
    for w in low {
        x -= w;
        faces.push(x);
    }
    faces.reverse();
    *faces.first_mut().unwrap() = lo;
    for i in 1..=st.cells {
        faces.push(if i == st.cells { b } else { a + h * i as f64 });
    }
    let mut x = b;
    let n_high = high.len();
    for (i, w) in high.into_iter().enumerate() {
        x += w;
        faces.push(if i + 1 == n_high { hi } else { x });
    }
    Ok(faces)
}

fn check_ends(lo: f64, hi: f64) -> Result<(), ConfigError> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(ConfigError::new("", "min and max must be finite"));
    }
    if hi <= lo {
        return Err(ConfigError::new(".max", format!("must exceed min ({hi} <= {lo})")));
    }
    if !(hi - lo).is_finite() {
        return Err(ConfigError::new("", format!("the length max - min overflows f64 ({hi} - {lo})")));
    }
    Ok(())
}

/// Faces computed from min, max and a cell count must still increase strictly in f64: cells
/// far narrower than their distance from 0 round onto one another (1e16 + 1 == 1e16).
fn check_built(faces: Vec<f64>, key: &str) -> Result<Vec<f64>, ConfigError> {
    match faces.windows(2).position(|w| !w[1].is_finite() || w[1] <= w[0]) {
        None => Ok(faces),
        Some(i) => Err(ConfigError::new(
            key,
            format!(
                "the cells are too narrow for f64 at this distance from 0: faces {i} and {} round to {} and {}; move the domain nearer 0 or use fewer cells",
                i + 1,
                faces[i],
                faces[i + 1]
            ),
        )),
    }
}

/// The number of cells growing from width h by r per cell that reach `len` (rounded; 0
/// when there is no room). Saturates instead of overflowing, for the size check.
fn growing_count(len: f64, h: f64, r: f64) -> usize {
    if len <= 0.0 {
        return 0;
    }
    let n = if r == 1.0 {
        (len / h).round()
    } else {
        // h (r^n - 1) / (r - 1) = len
        ((len * (r - 1.0) / h + 1.0).ln() / r.ln()).round()
    };
    // `as` saturates: NaN gives 0, hence the max(1).
    (n.max(1.0) as usize).max(1)
}

/// The largest step between neighbours, either way, from the uniform width h across `w`.
fn largest_step(h: f64, w: &[f64]) -> f64 {
    std::iter::once(&h).chain(w).zip(w).map(|(a, b)| (a / b).max(b / a)).fold(1.0, f64::max)
}

/// The outer cells of one side, n from [`growing_count`]. The geometric series from h
/// ([`growing_cells`]) is kept wherever its largest step stays within `MAX_STRETCH_RATIO`,
/// which is every side of more than a few cells, so such grids (and their checkpoints) do
/// not depend on this choice. Where rounding leaves a few cells on a long side, the re-solved
/// ratio can pass it (2.5 widths in 2 cells need 1.56), and one cell more or fewer can
/// shrink instead (1.55 widths as [h, 0.55 h], a step of 1.82): the fewest cells within the
/// bound are then taken from the series with up to two fewer or three more cells and from
/// `len` split evenly, which always qualifies (a side of `m` widths within half a width splits
/// into steps of at most 1.5, 1.25 from two cells on). A side shorter than one uniform cell is
/// a single narrower cell, which no count improves.
fn side_cells(len: f64, h: f64, n: usize) -> Vec<f64> {
    let first = growing_cells(len, h, n);
    // A count whose ratio leaves the bisection's bracket does not reach `len` exactly.
    let within = |w: &[f64]| {
        largest_step(h, w) <= MAX_STRETCH_RATIO * (1.0 + 1e-12) && (w.iter().sum::<f64>() - len).abs() <= 1e-9 * len
    };
    if len <= h || within(&first) {
        return first;
    }
    let even = (len / h).round().max(1.0) as usize;
    let mut options: Vec<Vec<f64>> = (n.saturating_sub(2).max(1)..=n + 3).map(|k| growing_cells(len, h, k)).collect();
    if even <= MAX_CELLS_PER_AXIS {
        options.push(vec![len / even as f64; even]);
    }
    options
        .into_iter()
        .min_by(|p, q| {
            let key = |w: &[f64]| (!within(w), if within(w) { w.len() as f64 } else { largest_step(h, w) });
            key(p).partial_cmp(&key(q)).unwrap()
        })
        .unwrap_or(first)
}

/// Axes longer than this are refused before their faces are allocated.
fn check_cell_count(n: usize) -> Result<(), ConfigError> {
    if n > MAX_CELLS_PER_AXIS {
        return Err(ConfigError::new("", format!("at most {MAX_CELLS_PER_AXIS} cells per axis, got {n}")));
    }
    Ok(())
}

/// Widths of the n cells growing from width h across length `len` (n from
/// [`side_cells`]); the
/// ratio is then re-solved (bisection) so that h (1 + r + ... + r^(n-1)) = len exactly. The
/// first outer cell has the width h of the uniform part; each next one is r times wider.
fn growing_cells(len: f64, h: f64, n: usize) -> Vec<f64> {
    if len <= 0.0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![len];
    }
    let sum = |r: f64, n: usize| -> f64 { (0..n).map(|k| h * r.powi(k as i32)).sum() };
    // sum(r, n) increases with r; find r' with sum(r', n) = len. r' may fall below 1 when
    // the rounding leaves too many cells: cells then shrink slightly, which is harmless.
    let (mut a, mut b) = (0.5f64, 2.0f64);
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if sum(m, n) < len {
            a = m;
        } else {
            b = m;
        }
    }
    let rr = 0.5 * (a + b);
    (0..n).map(|k| h * rr.powi(k as i32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_faces_end_exactly() {
        let f = uniform_faces(-0.5, 0.7, 7);
        assert_eq!(f[0], -0.5);
        assert_eq!(*f.last().unwrap(), 0.7);
        let total: f64 = f.windows(2).map(|w| w[1] - w[0]).sum();
        assert!((total - 1.2).abs() < 1e-15);
    }

    #[test]
    fn axes_beyond_f64_are_refused_by_key() {
        // Each of these once passed validation and then panicked building the grid.
        let refused = |a: AxisConfig| a.faces().unwrap_err();
        let e = refused(AxisConfig::uniform(-1e308, 1e308, 4));
        assert!(e.reason.contains("overflows"), "{e}");
        let e = refused(AxisConfig::uniform(1e16, 1.0000000000000016e16, 16));
        assert!(e.key == ".cells" && e.reason.contains("too narrow"), "{e}");
        let st = StretchConfig { uniform: [1e16, 1.000000000000002e16], cells: 64, ratio_min: 1.0, ratio_max: 1.0 };
        let a =
            AxisConfig { min: Some(1e16), max: Some(1.000000000000002e16), stretched: Some(st), ..Default::default() };
        let e = refused(a);
        assert!(e.key == ".stretched" && e.reason.contains("too narrow"), "{e}");
        assert!(AxisConfig::uniform(1e6, 1e6 + 1.0, 16384).faces().is_ok());
    }

    #[test]
    fn no_neighbour_step_passes_the_largest_allowed() {
        // Few outer cells: the rounded count once left 2.5 widths to 2 cells (a ratio of 1.56),
        // and one more cell turned 1.55 widths into [h, 0.55 h] (a shrink of 1.82). Both ways
        // count, across the whole axis, wherever a side is at least one uniform cell long.
        let mut checked = 0;
        for r in [1.0, 1.1, 1.3, 1.45, 1.5] {
            for cells in [1, 2, 3, 5, 31] {
                for end in (1..=60).map(|k| 0.5 + 0.1 * k as f64) {
                    let st = StretchConfig { uniform: [-0.5, 0.5], cells, ratio_min: r, ratio_max: r };
                    let f = stretched_faces(-end, end + 0.037, &st).unwrap();
                    assert_eq!((f[0], f[f.len() - 1]), (-end, end + 0.037));
                    let h = 1.0 / cells as f64;
                    if end - 0.5 < h {
                        continue;
                    }
                    let w: Vec<f64> = f.windows(2).map(|p| p[1] - p[0]).collect();
                    let worst = w.windows(2).map(|p| (p[1] / p[0]).max(p[0] / p[1])).fold(1.0f64, f64::max);
                    assert!(worst <= MAX_STRETCH_RATIO * (1.0 + 1e-9), "r {r}, end {end}, {cells} cells: step {worst}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn the_reviewed_short_side_splits_evenly() {
        // 1.55 uniform widths on the high side at ratio 1.3: one cell is a step of 1.55, the
        // series from h two cells [h, 0.55 h]; two even cells step by 1.29.
        let st = StretchConfig { uniform: [-0.5, 0.5], cells: 2, ratio_min: 1.0, ratio_max: 1.3 };
        let f = stretched_faces(-0.5, 1.275, &st).unwrap();
        let w: Vec<f64> = f.windows(2).map(|p| p[1] - p[0]).collect();
        assert_eq!(w.len(), 4);
        assert!((w[2] - 0.3875).abs() < 1e-12 && (w[3] - 0.3875).abs() < 1e-12, "{w:?}");
    }

    #[test]
    fn stretched_axis_is_uniform_across_the_body_and_grows_outside() {
        let st = StretchConfig { uniform: [-0.5, 0.5], cells: 31, ratio_min: 1.02, ratio_max: 1.02 };
        let f = stretched_faces(-6.0, 6.0, &st).unwrap();
        let w: Vec<f64> = f.windows(2).map(|w| w[1] - w[0]).collect();
        // 5.5 / (1/31) at ratio 1.02: 74.9 -> 75 cells a side (the paper's 181).
        assert_eq!(w.len(), 181);
        assert_eq!(f[0], -6.0);
        assert_eq!(*f.last().unwrap(), 6.0);
        let i0 = face_index(&f, -0.5).unwrap();
        let i1 = face_index(&f, 0.5).unwrap();
        assert_eq!(i1 - i0, 31);
        for w in &w[i0..i1] {
            assert!((w - 1.0 / 31.0).abs() < 1e-12);
        }
        // Adjusted ratio stays within 1% of the asked 1.02 and is constant on each side.
        let r = w[i1 + 1] / w[i1];
        assert!((r - 1.02).abs() < 0.01 * 1.02, "{r}");
        assert!((w[i1 + 40] / w[i1 + 39] - r).abs() < 1e-9);
        let growth = w.windows(2).map(|p| (p[1] / p[0]).max(p[0] / p[1])).fold(1.0, f64::max);
        assert!(growth < 1.03);
    }

    #[test]
    fn face_index_matches_only_faces() {
        let f = uniform_faces(0.0, 1.0, 10);
        assert_eq!(face_index(&f, 0.3), Some(3));
        assert_eq!(face_index(&f, 1.0), Some(10));
        assert_eq!(face_index(&f, 0.35), None);
    }
}
