//! CPU twin of shaders/wall_load_slice.wgsl, line for line in f32 (twin.rs holds the other
//! stages' twins and re-exports this one).

use super::layout::StepParams;
use super::twin::{Consts, Slices};

fn select<T>(f: T, t: T, cond: bool) -> T {
    if cond {
        t
    } else {
        f
    }
}

/// Twin of `wall_load_slice` for the workgroup of wall face `n` of the step's slice in
/// `part` (0: +z velocities, 1: -z). The shader reduces with a tree, the twin in order.
#[allow(clippy::too_many_arguments)]
pub fn wall_load_slice(
    k_: &Consts,
    params: &StepParams,
    table: &[[f32; 4]],
    slices: &Slices,
    walls: &[[u32; 4]],
    part: u32,
    n: u32,
    wall_sums: &mut [f32],
) {
    let lo = select(0, params.split, part == 1);
    let hi = select(params.split, params.count, part == 1);
    let k = select(params.step, k_.nz - 1 - params.step, part == 1);
    let range = walls[k as usize];
    let middle = params.step == k_.nz - 1 - params.step;
    let hi_all = select(hi, params.count, middle);
    if lo == hi_all || n >= range[1] || (middle && part == 1) {
        return;
    }
    let face = walls[(k_.nz + range[0] + n) as usize];
    let s = face[0];
    let axis = (face[1] / 2) as usize;
    let inward = select(1.0f32, -1.0, face[1] & 1 == 1);
    let emitted_at = select(0, (1 + axis as u32) * k_.nx * k_.ny * k_.ch, k_.slots > 1);
    let mut acc = [0.0f32; 5];
    for v in lo..hi_all {
        let vel = table[(v * (k_.srow + 1)) as usize];
        let un = vel[axis] * inward;
        if un < 0.0 {
            let wf = vel[3] * (-un) * slices.load(v / k_.ch, emitted_at + s * k_.ch + v % k_.ch);
            acc[0] += wf;
            acc[1] += wf * vel[0];
            acc[2] += wf * vel[1];
            acc[3] += wf * vel[2];
            acc[4] += wf * 0.5 * (vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]);
        }
    }
    for m in 0..5 {
        wall_sums[(face[2] * 5 + m) as usize] += acc[m as usize];
    }
}
