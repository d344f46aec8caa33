//! The per-chunk velocity tables both GPU backends upload (the same contents for WGSL and
//! CUDA): what sweep_slice reads per velocity, and what moment_slice reads to place each
//! velocity in the moment sums. Keep in sync with shaders/sweep_slice.wgsl,
//! shaders/moment_slice.wgsl and their CUDA twins.

use crate::grid::Octant;
use crate::problem::Problem;

/// vec4 rows of shapes per velocity in the velocity table (after its (xi, w) row): the face
/// inflows, then four bodies per row.
pub fn shape_rows(p: &Problem) -> usize {
    1 + p.bodies.bodies.len().div_ceil(4)
}

/// sweep_slice's velocity table: per chunk velocity, 1 + `shape_rows` rows: (xi, w); the
/// unit-density inflow from its upwind x, y, z faces and the global velocity index (f32
/// bits, for partner slots); then each body's unit Maxwellian, four per row. A GHOST slot
/// copies the velocity before it (the same octant) with zero weight and zero face and body
/// shapes; its partner reads (by the copied index) give finite values that weigh nothing.
pub fn velocity_table(p: &Problem, velocities: &[u32]) -> Vec<[f32; 4]> {
    velocity_table_as(p, velocities, |x| x as f32, f32::from_bits)
}

/// [`velocity_table`] in another value type: `of` rounds a value, `of_bits` carries the
/// velocity index (the f64 slice paths store it as an exact f64: src/backend/cuda/real.rs,
/// src/backend/wgpu/real.rs).
pub fn velocity_table_as<T: Copy + Default>(
    p: &Problem,
    velocities: &[u32],
    of: impl Fn(f64) -> T,
    of_bits: impl Fn(u32) -> T,
) -> Vec<[T; 4]> {
    let rows = shape_rows(p);
    let zero = T::default();
    let mut last = [zero; 3];
    let mut last_index = 0u32;
    let mut table = Vec::with_capacity(velocities.len() * (rows + 1));
    for &v in velocities {
        if v == super::wgpu::schedule::GHOST {
            table.push([last[0], last[1], last[2], zero]);
            table.push([zero, zero, zero, of_bits(last_index)]);
            table.extend(std::iter::repeat_n([zero; 4], rows - 1));
            continue;
        }
        last_index = v;
        let v = v as usize;
        let x = p.vgrid.xi[v];
        let faces = crate::backend::cpu::upwind_faces(Octant::of(x));
        let shape = |a: usize| of(p.bounds.faces[faces[a].id()].shape[v]);
        last = [of(x[0]), of(x[1]), of(x[2])];
        table.push([last[0], last[1], last[2], of(p.vgrid.w[v])]);
        table.push([shape(0), shape(1), shape(2), of_bits(v as u32)]);
        for r in 1..rows {
            table.push(std::array::from_fn(|q| p.bodies.bodies.get(4 * (r - 1) + q).map_or(zero, |b| of(b.shape[v]))));
        }
    }
    table
}

/// moment_slice's index buffer: the 1D weights as f32 bits, then the chunk's velocity
/// indices.
pub fn moment_index(p: &Problem, velocities: &[u32]) -> Vec<u32> {
    moment_index_as(p, velocities, |w| vec![(w as f32).to_bits()])
}

/// [`moment_index`] with each weight's words from `words` (in f64: two per weight for the
/// CUDA slice path, src/backend/cuda/real.rs; three for wgpu's, src/backend/wgpu/real.rs).
pub fn moment_index_as(p: &Problem, velocities: &[u32], words: impl Fn(f64) -> Vec<u32>) -> Vec<u32> {
    p.vgrid.weights_1d.iter().flat_map(|&w| words(w)).chain(velocities.iter().copied()).collect()
}
