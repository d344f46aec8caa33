// wall_load_slice: one workgroup per body wall face of the z-slices just swept reduces the
// chunk's velocities moving into the face to its incident sums: number flux, momentum flux
// (3) and energy flux, each sum w |xi . n| (1, xi, |xi|^2 / 2) f. Deterministic: fixed
// reduction tree, no atomics; each wall face is written by one workgroup per dispatch
// (also in the middle slice of an odd NZ, where both z-parts meet).
// CPU twin: src/backend/wgpu/twin.rs::wall_load_slice. Launcher: src/backend/wgpu/kernels.rs.

// Keep in sync with src/backend/wgpu/layout.rs::StepParams.
struct StepParams {
    step: u32,
    count: u32,
    split: u32,
    pad: u32,
}

override NX: u32;
override NY: u32;
override NZ: u32;
override CH: u32;
// Shape rows per velocity in `table` (see sweep_slice.wgsl).
override SROW: u32 = 1u;
// Slices per velocity: 1 (first order) or 4 (second order: f, then the face values emitted
// along x, y, z; a wall face receives the value emitted along its axis). Keep in sync with
// src/config/solver.rs::Scheme::slices.
override SLOTS: u32 = 1u;

const WWG: u32 = 64u;
// Sums per wall face; keep in sync with src/body.rs::WALL_SUMS.
const NSUM: u32 = 5u;

@group(0) @binding(0) var<uniform> params: StepParams;
// sweep_slice's velocity table: per chunk velocity 1 + SROW rows, the first (xi, w);
// padding slots have w = 0.
@group(0) @binding(1) var<storage, read> table: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> slices: array<f32>;
// First NZ entries: (first, count, 0, 0) of slice k's wall faces; then per wall face
// (slice cell, side, wall face index, 0), in wall-face order (src/grid/solid.rs).
@group(0) @binding(3) var<storage, read> walls: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> wall_sums: array<f32>;

var<workgroup> red: array<f32, 320>; // NSUM * WWG

@compute @workgroup_size(64)
fn wall_load_slice(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    // Part 0: the +z velocities, in slice `step`; part 1: the -z ones, in slice NZ-1-step.
    let part = wid.z;
    let lo = select(0u, params.split, part == 1u);
    let hi = select(params.split, params.count, part == 1u);
    let k = select(params.step, NZ - 1u - params.step, part == 1u);
    let range = walls[k];
    let n = wid.x + wid.y * nwg.x;
    // In the middle slice of an odd NZ both parts sit in slice `step` and would add to the
    // same wall faces from two workgroups at once, losing one update: there part 0 takes
    // the whole chunk and part 1 leaves.
    let middle = params.step == NZ - 1u - params.step;
    let hi_all = select(hi, params.count, middle);
    // Uniform across the workgroup: the whole workgroup leaves together.
    if lo == hi_all || n >= range.y || (middle && part == 1u) {
        return;
    }
    let face = walls[NZ + range.x + n];
    let s = face.x;
    let axis = face.y / 2u;
    // Inward normal of the side as a box face: +1 on a min side, -1 on a max side.
    let inward = select(1.0, -1.0, (face.y & 1u) == 1u);
    let emitted_at = select(0u, (1u + axis) * NX * NY * CH, SLOTS > 1u);
    var acc: array<f32, 5>;
    for (var v = lo + lid; v < hi_all; v += WWG) {
        let vel = table[v * (SROW + 1u)];
        let un = vel[axis] * inward;
        if un < 0.0 {
            let wf = vel.w * (-un) * slices[emitted_at + s * CH + v];
            acc[0] += wf;
            acc[1] += wf * vel.x;
            acc[2] += wf * vel.y;
            acc[3] += wf * vel.z;
            acc[4] += wf * 0.5 * dot(vel.xyz, vel.xyz);
        }
    }
    for (var m = 0u; m < NSUM; m++) {
        red[m * WWG + lid] = acc[m];
    }
    workgroupBarrier();
    for (var off = WWG / 2u; off > 0u; off >>= 1u) {
        if lid < off {
            for (var m = 0u; m < NSUM; m++) {
                red[m * WWG + lid] += red[m * WWG + lid + off];
            }
        }
        workgroupBarrier();
    }
    if lid == 0u {
        for (var m = 0u; m < NSUM; m++) {
            wall_sums[face.z * NSUM + m] += red[m * WWG];
        }
    }
}
