// sweep_slice: one invocation per velocity of a chunk sweeps z-slice k of its distribution
// in upwind order, in place (docs/model.md, "Iteration").
// CPU twin: src/backend/wgpu/twin.rs::sweep_slice. Launcher: src/backend/wgpu/kernels.rs.
//
// Slice storage is [slot][slice cell][chunk velocity] (stride CH): neighbouring invocations touch
// neighbouring addresses, so every load and store of a warp is one coalesced transaction.
// The cell state is read by all invocations at the same cell at once (a broadcast).
// Slots: first order keeps f only; second order keeps f, then the face value each cell emits
// along x, y and z (shaders/upwind2.wgsl), read back by the next row (y), the next slice (z)
// and the face and wall stages.

// Keep in sync with src/backend/wgpu/layout.rs::StepParams.
struct StepParams {
    step: u32,   // z-step: +z velocities sweep slice `step`, -z velocities slice NZ-1-step
    count: u32,  // velocities in this chunk
    split: u32,  // velocities [0, split) move along +z, [split, count) along -z
    pad: u32,
}

override NX: u32;
override NY: u32;
override NZ: u32;
// Velocities per chunk slot: the stride of the slice storage.
override CH: u32;
// vec4 rows of shapes per velocity in `table`: 1 + ceil(bodies / 4).
override SROW: u32 = 1u;
// Whether the case has bodies: without, the wall-word tests fold away (they cost ~10% of the
// sweep on an H100, docs/performance.md).
override HAS_WALLS: bool = true;
// Velocity nodes per axis (partner slots).
override M: u32;
// Slices per velocity: 1 (first order) or 4 (second order). Keep in sync with
// src/config/solver.rs::Scheme::slices.
override SLOTS: u32 = 1u;
// Start of each face's partner inflow in `bnd` (specular and periodic faces, [face cell]
// [slot], shaders/partner.wgsl), or NONE: faces x_min, x_max, y_min, y_max, z_min, z_max.
// Without partner faces the partner reads fold away.
override PART0: u32 = 0xffffffffu;
override PART1: u32 = 0xffffffffu;
override PART2: u32 = 0xffffffffu;
override PART3: u32 = 0xffffffffu;
override PART4: u32 = 0xffffffffu;
override PART5: u32 = 0xffffffffu;
// Wall words (src/grid/solid.rs): solid cell = SOLID | body; fluid cell =
// (first wall face << 6) | side mask. Keep in sync with SOLID_BIT and SIDE_BITS there.
const SOLID: u32 = 0x80000000u;

@group(0) @binding(0) var<uniform> params: StepParams;
// Per cell, 3 x vec4 (layout.rs::CellCoeffs): (pref, 1/T, nu, wall word as f32 bits),
// (U, base), (s, 0); f^S = pref exp(-c^2/T) (base + (s.c)(2 c^2/T - 5)).
@group(0) @binding(1) var<storage, read> cells: array<vec4<f32>>;
// Read-only scalars, packed so the kernel binds four storage buffers (wgpu's downlevel
// minimum): 1/dx (NX), 1/dy (NY), 1/dz (NZ) (0 along a collapsed periodic axis); then the
// emission density per face cell of faces x_min, x_max, y_min, y_max, z_min, z_max; then
// per body wall face; then the partner inflow of specular and periodic faces (PART0..5).
@group(0) @binding(2) var<storage, read> bnd: array<f32>;
// Per chunk velocity, 1 + SROW rows: (xi, w); the unit-density inflow from its upwind
// x, y, z faces and the global velocity index (as f32 bits); then each body's unit
// Maxwellian, four bodies per row.
@group(0) @binding(3) var<storage, read> table: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> slices: array<f32>;

// face_offset(): shaders/face_offset.wgsl; NONE, slots(), slot(): shaders/partner.wgsl;
// solve_cell(): shaders/upwind2.wgsl; all appended by the host.

fn part_at(face: u32) -> u32 {
    switch face {
        case 0u: { return PART0; }
        case 1u: { return PART1; }
        case 2u: { return PART2; }
        case 3u: { return PART3; }
        case 4u: { return PART4; }
        default: { return PART5; }
    }
}

// The partner inflow of face cell `idx` at slot `sl`, from the face's data at `at` in bnd.
fn partner(at: u32, idx: u32, sl: u32) -> f32 {
    if sl == NONE {
        // A velocity parallel to the face: its upwind coefficient is zero.
        return 0.0;
    }
    return bnd[at + idx * slots() + sl];
}

// Start of the face densities in `bnd`.
fn dens() -> u32 {
    return NX + NY + NZ;
}

fn wall_base() -> u32 {
    return dens() + 2u * (NY * NZ + NX * NZ + NX * NY);
}

// Emission into velocity v of the wall face on side `side` of the fluid cell `cell` (word
// `word`): its wall density times its body's Maxwellian. The body is read from the solid
// neighbour's word.
fn wall_emission(word: u32, side: u32, cell: u32, v: u32) -> f32 {
    let mask = word & 63u;
    let w = (word >> 6u) + countOneBits(mask & ((1u << side) - 1u));
    let axis = side / 2u;
    let step = select(select(NX * NY, NX, axis == 1u), 1u, axis == 0u);
    let nb = select(cell - step, cell + step, (side & 1u) == 1u);
    let body = bitcast<u32>(cells[3u * nb].w) & ~SOLID;
    let row = table[v * (SROW + 1u) + 2u + body / 4u];
    return bnd[wall_base() + w] * row[body % 4u];
}

@compute @workgroup_size(64)
fn sweep_slice(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let v = gid.x + gid.y * nwg.x * 64u;
    if v >= params.count {
        return;
    }
    let vel = table[v * (SROW + 1u)];
    let xi = vel.xyz;
    let shape = table[v * (SROW + 1u) + 1u];
    let neg_x = xi.x < 0.0;
    let neg_y = xi.y < 0.0;
    let neg_z = xi.z < 0.0;
    let k = select(params.step, NZ - 1u - params.step, neg_z);
    let first = params.step == 0u;
    let x_face = dens() + face_offset(select(0u, 1u, neg_x));
    let y_face = dens() + face_offset(select(2u, 3u, neg_y));
    let z_face = dens() + face_offset(select(4u, 5u, neg_z));
    let c = abs(xi.z) * bnd[NX + NY + k];
    let gv = bitcast<u32>(shape.w);
    let x_part = part_at(select(0u, 1u, neg_x));
    let y_part = part_at(select(2u, 3u, neg_y));
    let z_part = part_at(select(4u, 5u, neg_z));
    let x_slot = slot(gv, 0u, !neg_x);
    let y_slot = slot(gv, 1u, !neg_y);
    let z_slot = slot(gv, 2u, !neg_z);
    let second = SLOTS > 1u;
    // Start of each slot in `slices`; the upwind y and z values are the emitted face values
    // under second order, the cell values under first.
    let slot_len = NX * NY * CH;
    let y_in = select(0u, 2u * slot_len, second);
    let z_in = select(0u, 3u * slot_len, second);
    for (var jj = 0u; jj < NY; jj++) {
        let j = select(jj, NY - 1u - jj, neg_y);
        let jup = select(j - 1u, j + 1u, neg_y);
        let b = abs(xi.y) * bnd[NX + j];
        // The x-upwind value is the cell just updated; it stays in a register.
        var fx = bnd[x_face + k * NY + j] * shape.x;
        if x_part != NONE {
            fx = partner(x_part, k * NY + j, x_slot);
        }
        for (var ii = 0u; ii < NX; ii++) {
            let i = select(ii, NX - 1u - ii, neg_x);
            let a = abs(xi.x) * bnd[i];
            let s = j * NX + i;
            // The upwind loads are issued before the cell's own coefficients are examined, so
            // their latency overlaps (a branch on the wall word first would serialise them:
            // 22% slower on an H100, docs/performance.md).
            var fy: f32;
            if jj == 0u {
                fy = bnd[y_face + k * NX + i] * shape.y;
                if y_part != NONE {
                    fy = partner(y_part, k * NX + i, y_slot);
                }
            } else {
                fy = slices[y_in + (jup * NX + i) * CH + v];
            }
            var fz: f32;
            if first {
                fz = bnd[z_face + s] * shape.z;
                if z_part != NONE {
                    fz = partner(z_part, s, z_slot);
                }
            } else {
                fz = slices[z_in + s * CH + v];
            }
            let cell = k * NX * NY + s;
            let e0 = cells[3u * cell];
            let word = select(0u, bitcast<u32>(e0.w), HAS_WALLS);
            if (word & SOLID) != 0u {
                // No gas inside a body: nothing to add to any moment.
                for (var o = 0u; o < SLOTS; o++) {
                    slices[o * slot_len + s * CH + v] = 0.0;
                }
                fx = 0.0;
                continue;
            }
            if word != 0u {
                let xs = select(0u, 1u, neg_x);
                let ys = select(2u, 3u, neg_y);
                let zs = select(4u, 5u, neg_z);
                if ((word >> xs) & 1u) != 0u {
                    fx = wall_emission(word, xs, cell, v);
                }
                if ((word >> ys) & 1u) != 0u {
                    fy = wall_emission(word, ys, cell, v);
                }
                if ((word >> zs) & 1u) != 0u {
                    fz = wall_emission(word, zs, cell, v);
                }
            }
            let e1 = cells[3u * cell + 1u];
            let cu = xi - e1.xyz;
            let c2 = dot(cu, cu);
            let sc = dot(cells[3u * cell + 2u].xyz, cu);
            let fs = e0.x * exp(-c2 * e0.y) * (e1.w + sc * (2.0 * c2 * e0.y - 5.0));
            if second {
                let u = solve_cell(vec3<f32>(a, b, c), vec3<f32>(fx, fy, fz), e0.z, fs);
                slices[s * CH + v] = u.f;
                slices[slot_len + s * CH + v] = u.out.x;
                slices[2u * slot_len + s * CH + v] = u.out.y;
                slices[3u * slot_len + s * CH + v] = u.out.z;
                fx = u.out.x;
                continue;
            }
            let f = (a * fx + b * fy + c * fz + e0.z * fs) / (a + b + c + e0.z);
            slices[s * CH + v] = f;
            fx = f;
        }
    }
}
