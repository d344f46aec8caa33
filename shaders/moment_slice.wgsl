// moment_slice: one workgroup per cell of the z-slices just swept reduces the chunk's
// velocities into the cell's 13 raw moments and, at the domain boundary, into the incident
// flux of the face cells it touches. Deterministic: fixed reduction tree, no atomics; each
// cell and face cell is written by one workgroup per dispatch.
// CPU twin: src/backend/wgpu/twin.rs::moment_slice. Launcher: src/backend/wgpu/kernels.rs.
// The reduction `reduce_all` comes from reduce_workgroup.wgsl or reduce_subgroup.wgsl,
// appended by the host according to the adapter's features.

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
// Velocity grid: M points per axis at xi_i = (2 i - (M - 1)) STEP.
override M: u32;
override STEP: f32;
// Slices per velocity: 1 (first order) or 4 (second order: f, then the face values emitted
// along x, y, z, which the face fluxes and exits carry). Keep in sync with
// src/config/solver.rs::Scheme::slices.
override SLOTS: u32 = 1u;
// A padding slot of a chunk (schedule.rs: GHOST): zero weight.
const GHOST: u32 = 0xffffffffu;
// Start of each face's exits in `incident` (faces that keep them for specular and periodic
// partners, [face cell][slot], shaders/partner.wgsl), or NONE: x_min, x_max, ..., z_max.
override EXIT0: u32 = 0xffffffffu;
override EXIT1: u32 = 0xffffffffu;
override EXIT2: u32 = 0xffffffffu;
override EXIT3: u32 = 0xffffffffu;
override EXIT4: u32 = 0xffffffffu;
override EXIT5: u32 = 0xffffffffu;

// Workgroup size of the reduction; 19 sums x 128 x 4 bytes = 9.7 KiB of workgroup memory
// fits WebGPU's 16 KiB minimum.
const MWG: u32 = 128u;
// 13 raw moments (src/model.rs::raw) then 6 face fluxes (x_min, x_max, ..., z_max).
const NACC: u32 = 19u;
// Raw moments are stored with a stride of 16 floats per cell (four vec4-aligned rows).
const MSTRIDE: u32 = 16u;

@group(0) @binding(0) var<uniform> params: StepParams;
// The 1D quadrature weights (M, as f32 bits: w = w1[ix] w1[iy] w1[iz]), then per chunk
// velocity its global index v = (iz M + iy) M + ix, or GHOST. The velocity and its weight
// are rebuilt from the index: 4 bytes per point instead of a 16-byte table entry
// (docs/performance.md). One buffer, so the kernel binds four storage buffers.
@group(0) @binding(1) var<storage, read> vidx: array<u32>;
// Read as vec4: one 16-byte load covers a quad of velocities (see sweep_slice.wgsl).
@group(0) @binding(2) var<storage, read> slices: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> moments: array<f32>;
// The incident flux per box-face cell, then the exits (EXIT0..5).
@group(0) @binding(4) var<storage, read_write> incident: array<f32>;

fn w1(i: u32) -> f32 {
    return bitcast<f32>(vidx[i]);
}

var<workgroup> red: array<f32, 2432>; // NACC * MWG

// face_offset(): shaders/face_offset.wgsl; NONE, slots(), slot(): shaders/partner.wgsl;
// both appended by the host.

// Record the value velocity g emits at slice cell (i, j) of slice k (along x, y, z in `f`)
// for every face that keeps exits and that g leaves through there. Each (face cell, slot)
// is written by one invocation.
fn record_exits(g: u32, i: u32, j: u32, k: u32, f: vec3<f32>) {
    if g == GHOST {
        return;
    }
    let s = j * NX + i;
    if i == 0u && EXIT0 != NONE {
        let sl = slot(g, 0u, false);
        if sl != NONE {
            incident[EXIT0 + (k * NY + j) * slots() + sl] = f.x;
        }
    }
    if i == NX - 1u && EXIT1 != NONE {
        let sl = slot(g, 0u, true);
        if sl != NONE {
            incident[EXIT1 + (k * NY + j) * slots() + sl] = f.x;
        }
    }
    if j == 0u && EXIT2 != NONE {
        let sl = slot(g, 1u, false);
        if sl != NONE {
            incident[EXIT2 + (k * NX + i) * slots() + sl] = f.y;
        }
    }
    if j == NY - 1u && EXIT3 != NONE {
        let sl = slot(g, 1u, true);
        if sl != NONE {
            incident[EXIT3 + (k * NX + i) * slots() + sl] = f.y;
        }
    }
    if k == 0u && EXIT4 != NONE {
        let sl = slot(g, 2u, false);
        if sl != NONE {
            incident[EXIT4 + s * slots() + sl] = f.z;
        }
    }
    if k == NZ - 1u && EXIT5 != NONE {
        let sl = slot(g, 2u, true);
        if sl != NONE {
            incident[EXIT5 + s * slots() + sl] = f.z;
        }
    }
}

@compute @workgroup_size(128)
fn moment_slice(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let s = wid.x + wid.y * nwg.x;
    if s >= NX * NY {
        return;
    }
    let i = s % NX;
    let j = s / NX;
    let on_x = i == 0u || i == NX - 1u;
    let on_y = j == 0u || j == NY - 1u;
    // Part 0: the +z velocities, in slice `step`; part 1: the -z ones, in slice NZ-1-step.
    for (var part = 0u; part < 2u; part++) {
        let lo = select(0u, params.split, part == 1u);
        let hi = select(params.split, params.count, part == 1u);
        if lo == hi {
            continue;
        }
        let k = select(params.step, NZ - 1u - params.step, part == 1u);
        let on_z = k == 0u || k == NZ - 1u;
        var acc: array<f32, 19>;
        // lo and hi are whole quads (the host pads batches and splits chunks on quads).
        for (var q = lo / 4u + lid; q < hi / 4u; q += MWG) {
          let f4 = slices[s * (CH / 4u) + q];
          // At the domain boundary, what each velocity carries through the faces: the
          // emitted face values under second order, the cell values under first.
          var fx4 = f4;
          var fy4 = f4;
          var fz4 = f4;
          if SLOTS > 1u && (on_x || on_y || on_z) {
              let slot4 = NX * NY * (CH / 4u);
              fx4 = slices[slot4 + s * (CH / 4u) + q];
              fy4 = slices[2u * slot4 + s * (CH / 4u) + q];
              fz4 = slices[3u * slot4 + s * (CH / 4u) + q];
          }
          for (var lane = 0u; lane < 4u; lane++) {
            let g = vidx[M + 4u * q + lane];
            let ix = g % M;
            let iy = (g / M) % M;
            let iz = (g / M / M) % M;
            let x = f32(i32(2u * ix) - i32(M - 1u)) * STEP;
            let y = f32(i32(2u * iy) - i32(M - 1u)) * STEP;
            let z = f32(i32(2u * iz) - i32(M - 1u)) * STEP;
            let w = select(w1(ix) * w1(iy) * w1(iz), 0.0, g == GHOST);
            let wf = w * f4[lane];
            let face = vec3<f32>(fx4[lane], fy4[lane], fz4[lane]);
            let xi2 = x * x + y * y + z * z;
            acc[0] += wf;
            acc[1] += wf * x;
            acc[2] += wf * y;
            acc[3] += wf * z;
            acc[4] += wf * x * x;
            acc[5] += wf * y * y;
            acc[6] += wf * z * z;
            acc[7] += wf * x * y;
            acc[8] += wf * x * z;
            acc[9] += wf * y * z;
            acc[10] += wf * x * xi2;
            acc[11] += wf * y * xi2;
            acc[12] += wf * z * xi2;
            if on_x {
                acc[13] += w * face.x * max(-x, 0.0);
                acc[14] += w * face.x * max(x, 0.0);
            }
            if on_y {
                acc[15] += w * face.y * max(-y, 0.0);
                acc[16] += w * face.y * max(y, 0.0);
            }
            if on_z {
                acc[17] += w * face.z * max(-z, 0.0);
                acc[18] += w * face.z * max(z, 0.0);
            }
            if on_x || on_y || on_z {
                record_exits(g, i, j, k, face);
            }
          }
        }
        reduce_all(&acc, lid);
        if lid == 0u {
            let cell = k * NX * NY + s;
            for (var m = 0u; m < 13u; m++) {
                moments[cell * MSTRIDE + m] += red[m * MWG];
            }
            if i == 0u {
                incident[face_offset(0u) + k * NY + j] += red[13u * MWG];
            }
            if i == NX - 1u {
                incident[face_offset(1u) + k * NY + j] += red[14u * MWG];
            }
            if j == 0u {
                incident[face_offset(2u) + k * NX + i] += red[15u * MWG];
            }
            if j == NY - 1u {
                incident[face_offset(3u) + k * NX + i] += red[16u * MWG];
            }
            if k == 0u {
                incident[face_offset(4u) + s] += red[17u * MWG];
            }
            if k == NZ - 1u {
                incident[face_offset(5u) + s] += red[18u * MWG];
            }
        }
        // `red` is reused by the next part.
        workgroupBarrier();
    }
}
