//! Physical grid: a tensor product of three axes, each built from its face coordinates so that
//! nonuniform spacings need no special case anywhere downstream.

use crate::config::{AxisConfig, ConfigError, GridConfig, StretchConfig, MAX_STRETCH_RATIO};

/// One axis, defined by its n + 1 increasing face coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub faces: Vec<f64>,
    pub centres: Vec<f64>,
    pub widths: Vec<f64>,
}

impl Axis {
    /// From strictly increasing face coordinates.
    pub fn from_faces(faces: Vec<f64>) -> Self {
        assert!(faces.len() >= 2, "an axis needs at least one cell");
        assert!(faces.windows(2).all(|w| w[1] > w[0]), "faces must increase strictly");
        let centres = faces.windows(2).map(|w| 0.5 * (w[0] + w[1])).collect();
        let widths = faces.windows(2).map(|w| w[1] - w[0]).collect();
        Self { faces, centres, widths }
    }

    pub fn uniform(min: f64, max: f64, cells: usize) -> Self {
        let h = (max - min) / cells as f64;
        // The last face is set exactly so the domain length has no round-off.
        let faces = (0..=cells).map(|i| if i == cells { max } else { min + h * i as f64 }).collect();
        Self::from_faces(faces)
    }

    /// Build an axis from its config form; the error's key is relative to the axis
    /// (e.g. `.stretched.cells`).
    pub fn from_config(a: &AxisConfig) -> Result<Self, ConfigError> {
        let err = |k: &str, r: String| Err(ConfigError::new(k, r));
        match (a.min, a.max, a.cells, &a.faces, &a.stretched) {
            (Some(lo), Some(hi), Some(n), None, None) => {
                check_ends(lo, hi)?;
                if n == 0 {
                    return err(".cells", "must be at least 1".into());
                }
                Ok(Self::uniform(lo, hi, n))
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
                Ok(Self::from_faces(f.clone()))
            }
            (Some(lo), Some(hi), None, None, Some(st)) => {
                check_ends(lo, hi)?;
                Self::stretched(lo, hi, st)
            }
            _ => err("", "give one of {min, max, cells} (uniform), {faces} (explicit) or {min, max, stretched}".into()),
        }
    }

    /// Uniform cells over `st.uniform`, geometric growth toward both ends (StretchConfig).
    pub fn stretched(lo: f64, hi: f64, st: &StretchConfig) -> Result<Self, ConfigError> {
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
        let h = (b - a) / st.cells as f64;
        let low = growing_cells(a - lo, h, st.ratio_min);
        let high = growing_cells(hi - b, h, st.ratio_max);
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
        Ok(Self::from_faces(faces))
    }

    /// The index of the face at coordinate `c`, if `c` is on a face (to 1e-9 of the
    /// neighbouring widths, so decimal configs match computed faces).
    pub fn face_index(&self, c: f64) -> Option<usize> {
        let i = self.faces.partition_point(|&f| f < c);
        [i.wrapping_sub(1), i].into_iter().filter(|&k| k < self.faces.len()).find(|&k| {
            let w = self.widths.get(k).or(self.widths.get(k.wrapping_sub(1))).copied().unwrap_or(1.0);
            (self.faces[k] - c).abs() <= 1e-9 * w
        })
    }

    /// Largest ratio of neighbouring widths (>= 1).
    pub fn max_growth(&self) -> f64 {
        self.widths.windows(2).map(|w| (w[1] / w[0]).max(w[0] / w[1])).fold(1.0, f64::max)
    }

    pub fn len(&self) -> usize {
        self.widths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.widths.is_empty()
    }
}

fn check_ends(lo: f64, hi: f64) -> Result<(), ConfigError> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(ConfigError::new("", "min and max must be finite"));
    }
    if hi <= lo {
        return Err(ConfigError::new(".max", format!("must exceed min ({hi} <= {lo})")));
    }
    Ok(())
}

/// Widths of the cells growing from width h (times r per cell) across length `len`: the
/// count n is the one at which the geometric series at ratio r reaches `len`, rounded; the
/// ratio is then re-solved (bisection) so that h (1 + r + ... + r^(n-1)) = len exactly. The
/// first outer cell has the width h of the uniform part; each next one is r times wider.
fn growing_cells(len: f64, h: f64, r: f64) -> Vec<f64> {
    if len <= 0.0 {
        return Vec::new();
    }
    let sum = |r: f64, n: usize| -> f64 { (0..n).map(|k| h * r.powi(k as i32)).sum() };
    let n = if r == 1.0 {
        (len / h).round().max(1.0) as usize
    } else {
        // h (r^n - 1) / (r - 1) = len
        let n = ((len * (r - 1.0) / h + 1.0).ln() / r.ln()).round();
        n.max(1.0) as usize
    };
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

/// Cells are numbered with x fastest: index = (k ny + j) nx + i. A z-slice is contiguous.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub x: Axis,
    pub y: Axis,
    pub z: Axis,
}

impl Grid {
    pub fn from_config(g: &GridConfig) -> Self {
        let axis = |a| Axis::from_config(a).expect("validated config");
        Self { x: axis(&g.x), y: axis(&g.y), z: axis(&g.z) }
    }

    pub fn uniform(n: [usize; 3], lengths: [f64; 3]) -> Self {
        Self {
            x: Axis::uniform(0.0, lengths[0], n[0]),
            y: Axis::uniform(0.0, lengths[1], n[1]),
            z: Axis::uniform(0.0, lengths[2], n[2]),
        }
    }

    pub fn nx(&self) -> usize {
        self.x.len()
    }
    pub fn ny(&self) -> usize {
        self.y.len()
    }
    pub fn nz(&self) -> usize {
        self.z.len()
    }
    pub fn dims(&self) -> [usize; 3] {
        [self.nx(), self.ny(), self.nz()]
    }
    /// Cells in one z-slice.
    pub fn slice_cells(&self) -> usize {
        self.nx() * self.ny()
    }
    pub fn cells(&self) -> usize {
        self.slice_cells() * self.nz()
    }
    #[inline(always)]
    pub fn index(&self, i: usize, j: usize, k: usize) -> usize {
        (k * self.ny() + j) * self.nx() + i
    }
    /// (i, j, k) of a cell index.
    #[inline(always)]
    pub fn coords(&self, c: usize) -> [usize; 3] {
        let (nx, ny) = (self.nx(), self.ny());
        [c % nx, c / nx % ny, c / (nx * ny)]
    }
    pub fn volume(&self, i: usize, j: usize, k: usize) -> f64 {
        self.x.widths[i] * self.y.widths[j] * self.z.widths[k]
    }
    /// Cell volumes in cell order.
    pub fn volumes(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.cells());
        for k in 0..self.nz() {
            for j in 0..self.ny() {
                for i in 0..self.nx() {
                    v.push(self.volume(i, j, k));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_axis_ends_exactly() {
        let a = Axis::uniform(-0.5, 0.7, 7);
        assert_eq!(a.faces[0], -0.5);
        assert_eq!(*a.faces.last().unwrap(), 0.7);
        let total: f64 = a.widths.iter().sum();
        assert!((total - 1.2).abs() < 1e-15);
    }

    #[test]
    fn stretched_axis_is_uniform_across_the_body_and_grows_outside() {
        let st = StretchConfig { uniform: [-0.5, 0.5], cells: 31, ratio_min: 1.02, ratio_max: 1.02 };
        let a = Axis::stretched(-6.0, 6.0, &st).unwrap();
        // 5.5 / (1/31) at ratio 1.02: 74.9 -> 75 cells a side (the paper's 181).
        assert_eq!(a.len(), 181);
        assert_eq!(a.faces[0], -6.0);
        assert_eq!(*a.faces.last().unwrap(), 6.0);
        let i0 = a.face_index(-0.5).unwrap();
        let i1 = a.face_index(0.5).unwrap();
        assert_eq!(i1 - i0, 31);
        for w in &a.widths[i0..i1] {
            assert!((w - 1.0 / 31.0).abs() < 1e-12);
        }
        // Adjusted ratio stays within 1% of the asked 1.02 and is constant on each side.
        let r = a.widths[i1 + 1] / a.widths[i1];
        assert!((r - 1.02).abs() < 0.01 * 1.02, "{r}");
        assert!((a.widths[i1 + 40] / a.widths[i1 + 39] - r).abs() < 1e-9);
        assert!(a.max_growth() < 1.03);
    }

    #[test]
    fn face_index_matches_only_faces() {
        let a = Axis::uniform(0.0, 1.0, 10);
        assert_eq!(a.face_index(0.3), Some(3));
        assert_eq!(a.face_index(1.0), Some(10));
        assert_eq!(a.face_index(0.35), None);
    }

    #[test]
    fn index_is_x_fastest() {
        let g = Grid::uniform([3, 4, 5], [1.0; 3]);
        assert_eq!(g.index(1, 0, 0), 1);
        assert_eq!(g.index(0, 1, 0), 3);
        assert_eq!(g.index(0, 0, 1), 12);
        assert_eq!(g.cells(), 60);
    }
}
