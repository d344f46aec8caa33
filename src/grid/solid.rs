//! Solid bodies on the physical grid: the cell mask and the wall faces between fluid and
//! solid cells.
//!
//! A wall face is one side of a fluid cell whose neighbour across that side is solid. Sides
//! are named like the box faces ([`Face`]): the `XMin` side of cell i faces cell i - 1. A wall
//! face on side d behaves exactly like box face d does for the domain: it emits into the
//! velocities with `d.normal_speed(xi) > 0` (the body's outward normal is the box face's
//! inward one) and absorbs the others.
//!
//! Wall faces are numbered in cell order, then side order, so the faces of one z-slice are
//! contiguous and a cell's faces are consecutive. Per cell the GPU reads one 32-bit word
//! (keep in sync with shaders/sweep_slice.wgsl):
//! - solid cell: `SOLID_BIT | body`;
//! - fluid cell: `(first wall face << 6) | side mask`, bit d of the mask set when side d is a
//!   wall; wall face of side d = first + popcount(mask & ((1 << d) - 1)).

use super::{Face, Grid};

pub const SOLID_BIT: u32 = 1 << 31;
pub const SIDE_BITS: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallFace {
    /// Cell index (x fastest).
    pub cell: u32,
    pub side: Face,
    pub body: u16,
}

#[derive(Debug, Clone, Default)]
pub struct Solids {
    /// Per cell: body index + 1, or 0 for fluid. Empty when there are no bodies.
    pub body_of: Vec<u16>,
    pub walls: Vec<WallFace>,
    /// Per cell: the wall word (see module docs). Empty when there are no bodies.
    pub words: Vec<u32>,
    /// Per z-slice: the range of its wall faces in `walls`.
    pub slice_walls: Vec<std::ops::Range<usize>>,
}

impl Solids {
    /// Mark the cells of each box (cell index ranges [lo, hi) per axis) solid; a cell in
    /// several boxes belongs to the first.
    pub fn new(g: &Grid, boxes: &[[[usize; 2]; 3]]) -> Self {
        let nz = g.nz();
        if boxes.is_empty() {
            return Self { slice_walls: vec![0..0; nz], ..Default::default() };
        }
        let [nx, ny, _] = g.dims();
        let mut body_of = vec![0u16; g.cells()];
        for (b, bx) in boxes.iter().enumerate().rev() {
            for k in bx[2][0]..bx[2][1] {
                for j in bx[1][0]..bx[1][1] {
                    for i in bx[0][0]..bx[0][1] {
                        body_of[g.index(i, j, k)] = b as u16 + 1;
                    }
                }
            }
        }
        let mut walls = Vec::new();
        let mut words = vec![0u32; g.cells()];
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let c = g.index(i, j, k);
                    if body_of[c] != 0 {
                        words[c] = SOLID_BIT | (body_of[c] as u32 - 1);
                        continue;
                    }
                    let first = walls.len() as u32;
                    let mut mask = 0u32;
                    for side in Face::ALL {
                        let nb = neighbour(g, [i, j, k], side);
                        if let Some(n) = nb.filter(|&n| body_of[n] != 0) {
                            mask |= 1 << side.id();
                            walls.push(WallFace { cell: c as u32, side, body: body_of[n] - 1 });
                        }
                    }
                    if mask != 0 {
                        words[c] = first << SIDE_BITS | mask;
                    }
                }
            }
        }
        let nxy = g.slice_cells() as u32;
        let slice_walls = (0..nz as u32)
            .map(|k| {
                let lo = walls.partition_point(|w| w.cell < k * nxy);
                let hi = walls.partition_point(|w| w.cell < (k + 1) * nxy);
                lo..hi
            })
            .collect();
        Self { body_of, walls, words, slice_walls }
    }

    pub fn any(&self) -> bool {
        !self.body_of.is_empty()
    }

    #[inline(always)]
    pub fn is_solid(&self, cell: usize) -> bool {
        self.any() && self.body_of[cell] != 0
    }

    /// Area of a wall face: the product of the cell's two tangential widths.
    pub fn area(&self, g: &Grid, w: &WallFace) -> f64 {
        let [i, j, k] = g.coords(w.cell as usize);
        match w.side.axis() {
            0 => g.y.widths[j] * g.z.widths[k],
            1 => g.x.widths[i] * g.z.widths[k],
            _ => g.x.widths[i] * g.y.widths[j],
        }
    }

    /// Centre of a wall face.
    pub fn centre(&self, g: &Grid, w: &WallFace) -> [f64; 3] {
        let [i, j, k] = g.coords(w.cell as usize);
        let mut c = [g.x.centres[i], g.y.centres[j], g.z.centres[k]];
        let axis = [&g.x, &g.y, &g.z][w.side.axis()];
        let idx = [i, j, k][w.side.axis()];
        c[w.side.axis()] = if w.side.is_max() { axis.faces[idx + 1] } else { axis.faces[idx] };
        c
    }
}

/// The wall face of side `side` of a fluid cell with word `word`, if that side is a wall.
#[inline(always)]
pub fn wall_of(word: u32, side: Face) -> Option<usize> {
    let d = side.id() as u32;
    if word & SOLID_BIT != 0 || word >> d & 1 == 0 {
        return None;
    }
    let mask = word & ((1 << SIDE_BITS) - 1);
    Some(((word >> SIDE_BITS) + (mask & ((1 << d) - 1)).count_ones()) as usize)
}

fn neighbour(g: &Grid, [i, j, k]: [usize; 3], side: Face) -> Option<usize> {
    let mut c = [i as isize, j as isize, k as isize];
    c[side.axis()] += if side.is_max() { 1 } else { -1 };
    let dims = g.dims();
    if (0..3).all(|d| c[d] >= 0 && (c[d] as usize) < dims[d]) {
        Some(g.index(c[0] as usize, c[1] as usize, c[2] as usize))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_solid_cell_has_six_wall_faces_with_consistent_words() {
        let g = Grid::uniform([3, 3, 3], [1.0; 3]);
        let s = Solids::new(&g, &[[[1, 2], [1, 2], [1, 2]]]);
        assert_eq!(s.walls.len(), 6);
        let centre = g.index(1, 1, 1);
        assert!(s.is_solid(centre));
        assert_eq!(s.words[centre], SOLID_BIT);
        // The cell left of the solid has the solid on its XMax side.
        let left = g.index(0, 1, 1);
        let w = wall_of(s.words[left], Face::XMax).unwrap();
        assert_eq!(s.walls[w], WallFace { cell: left as u32, side: Face::XMax, body: 0 });
        assert_eq!(wall_of(s.words[left], Face::XMin), None);
        for (n, wf) in s.walls.iter().enumerate() {
            assert_eq!(wall_of(s.words[wf.cell as usize], wf.side), Some(n));
        }
        // z-slices: slice 0 holds the face below the solid, slice 1 four, slice 2 one.
        assert_eq!(s.slice_walls.iter().map(|r| r.len()).collect::<Vec<_>>(), [1, 4, 1]);
    }

    #[test]
    fn a_cell_between_two_bodies_numbers_both_sides() {
        let g = Grid::uniform([3, 1, 1], [1.0; 3]);
        let s = Solids::new(&g, &[[[0, 1], [0, 1], [0, 1]], [[2, 3], [0, 1], [0, 1]]]);
        let w = s.words[1];
        assert_eq!(w & 0x3f, 0b11);
        assert_eq!(s.walls[wall_of(w, Face::XMin).unwrap()].body, 0);
        assert_eq!(s.walls[wall_of(w, Face::XMax).unwrap()].body, 1);
    }
}
