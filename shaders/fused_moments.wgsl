// fused_moments: an invocation adds the partials of dispatch `diag` of sweep_fused for MPT
// moments of one cell into their sums and, on the box faces, into the incident fluxes:
// octant by octant in Octant order, block by block in wave order (fixed, so results are
// deterministic; no atomics). The WGSL form of fused_moments in shaders/cuda/sweep_fused.cu.
// Launcher: src/backend/wgpu/fused.rs. TX and TY are set by the host as in sweep_fused.wgsl,
// and NPART under the second-order scheme (sweep_fused2.wgsl) as 16.

const TX: u32 = 8u;
const TY: u32 = 8u;
// The raw moments per cell; the partials per (block, cell) add, under second order, the face
// fluxes of the emitted face values along x, y, z (backend/fused.rs::FACE_PARTIALS).
const NMOM: u32 = 13u;
const NPART: u32 = 13u;
const TXTY: u32 = TX * TY;
// Keep in sync with src/backend/wgpu/layout.rs::MSTRIDE.
const MSTRIDE: u32 = 16u;

// Keep in sync with src/backend/wgpu/fused.rs::FusedParams.
struct FusedParams {
    diag: u32,
    a_lo: u32,
    blocks: u32,
    pad: u32,
}

override NX: u32;
override NY: u32;
override NZ: u32;
override HAS_WALLS: bool = true;
// Moments per invocation: 1 or NMOM (src/backend/fused.rs::moments_per_thread).
override MPT: u32 = NMOM;
const SOLID: u32 = 0x80000000u;

@group(0) @binding(0) var<uniform> params: FusedParams;
// Per octant (Octant bits x | y << 1 | z << 2), its blocks [start, end) in the wave.
@group(0) @binding(1) var<storage, read> ranges: array<u32, 16>;
@group(0) @binding(2) var<storage, read> partials: array<f32>;
// For the wall words (sweep_fused.wgsl's `cells`).
@group(0) @binding(3) var<storage, read> cells: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> moments: array<f32>;
@group(0) @binding(5) var<storage, read_write> incident: array<f32>;
// Per body wall face: number, momentum (3) and energy flux into it (body.rs::WALL_SUMS).
@group(0) @binding(6) var<storage, read_write> wall_sums: array<f32>;

// A block's wall loads follow from its raw moments, as its face fluxes do: its velocities
// share their signs, so on a wall side d along axis a that they move into, w f |xi_a| =
// sign xi_a w f. For each such wall side of a fluid cell, add the octant's number, momentum
// and energy fluxes (body.rs::add_wall_sums; wall_load_slice.wgsl) to its wall face, as far
// as they come from the moments m0 .. m0 + MPT - 1 in `s` (s[mm] is moment m0 + mm): number
// from m = 1 + a, momentum b from the second moment in row a, column b, energy from
// m = 10 + a.
fn add_wall_sums(word: u32, o: u32, m0: u32, s: array<f32, NMOM>) {
    if (word & SOLID) != 0u || (word & 63u) == 0u {
        return;
    }
    // Second moments xx yy zz xy xz yz at 4..9: row a of the symmetric matrix.
    let rows = array<vec3<u32>, 3>(vec3<u32>(4u, 7u, 8u), vec3<u32>(7u, 5u, 9u), vec3<u32>(8u, 9u, 6u));
    for (var d = 0u; d < 6u; d++) {
        let a = d / 2u;
        let neg = ((o >> a) & 1u) != 0u;
        // Into a min side (d even) move the negative velocities, into a max side the others.
        if ((word >> d) & 1u) == 0u || neg != ((d & 1u) == 0u) {
            continue;
        }
        let sign = select(1.0, -1.0, neg);
        let n = (word >> 6u) + countOneBits((word & 63u) & ((1u << d) - 1u));
        let r = rows[a];
        // m - m0 < MPT: moment m is this invocation's (u32: below m0 it wraps).
        if 1u + a - m0 < MPT { wall_sums[n * 5u] += sign * s[1u + a - m0]; }
        if r.x - m0 < MPT { wall_sums[n * 5u + 1u] += sign * s[r.x - m0]; }
        if r.y - m0 < MPT { wall_sums[n * 5u + 2u] += sign * s[r.y - m0]; }
        if r.z - m0 < MPT { wall_sums[n * 5u + 3u] += sign * s[r.z - m0]; }
        if 10u + a - m0 < MPT { wall_sums[n * 5u + 4u] += sign * 0.5 * s[10u + a - m0]; }
    }
}

// An invocation adds MPT moments of one cell (the CUDA twin says why two shapes; the host
// sets MPT, backend/fused.rs::moments_per_thread). With MPT = 1, invocations run along the
// cells within one moment, so a subgroup's reads of a tile row coalesce.
@compute @workgroup_size(128)
fn fused_moments(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let ncells = NX * NY * NZ;
    let t = gid.x + gid.y * nwg.x * 128u;
    if t >= ncells * (NMOM / MPT) {
        return;
    }
    let m0 = (t / ncells) * MPT;
    let cell = t % ncells;
    let i = cell % NX;
    let j = (cell / NX) % NY;
    let k = cell / (NX * NY);
    let here = vec3<u32>(i, j, k);
    let last = vec3<u32>(NX - 1u, NY - 1u, NZ - 1u);
    let nty = (NY + TY - 1u) / TY;
    let diag = params.diag;
    let a_lo = select(0u, diag - (nty - 1u), diag >= nty);
    var acc: array<f32, NMOM>;
    // Fluxes towards x_min, x_max, y_min, y_max, z_min, z_max.
    var flux: array<f32, 6>;
    var hit = false;
    for (var o = 0u; o < 8u; o++) {
        let lo = ranges[2u * o];
        let hi = ranges[2u * o + 1u];
        let nx = (o & 1u) != 0u;
        let ny = (o & 2u) != 0u;
        let iu = select(i, NX - 1u - i, nx);
        let ju = select(j, NY - 1u - j, ny);
        let a = iu / TX;
        let b = ju / TY;
        if lo == hi || a + b != diag {
            continue;
        }
        hit = true;
        let c = (ju % TY) * TX + iu % TX;
        var s: array<f32, NMOM>;
        let step = NZ * NPART * TXTY;
        let at0 = ((((a - a_lo) * params.blocks + lo) * NZ + k) * NPART + m0) * TXTY + c;
        var at = at0;
        if MPT == 1u {
            // Four loads in flight before their adds, which stay in block order.
            var vb = lo;
            for (; vb + 4u <= hi; vb += 4u) {
                let p0 = partials[at];
                let p1 = partials[at + step];
                let p2 = partials[at + 2u * step];
                let p3 = partials[at + 3u * step];
                s[0] += p0;
                s[0] += p1;
                s[0] += p2;
                s[0] += p3;
                at += 4u * step;
            }
            for (; vb < hi; vb++) {
                s[0] += partials[at];
                at += step;
            }
        } else {
            for (var vb = lo; vb < hi; vb++) {
                for (var mm = 0u; mm < MPT; mm++) {
                    s[mm] += partials[at + mm * TXTY];
                }
                at += step;
            }
        }
        for (var mm = 0u; mm < MPT; mm++) {
            acc[mm] += s[mm];
        }
        // A block's velocities share their signs, so its momentum sums are its face fluxes
        // under first order; under second its face-flux partials are (summed here only on
        // the box faces, where they are not zero).
        for (var ax = 0u; ax < 3u; ax++) {
            if 1u + ax - m0 >= MPT {
                continue;
            }
            let neg = ((o >> ax) & 1u) != 0u;
            var v = s[1u + ax - m0];
            if NPART > NMOM && here[ax] == select(last[ax], 0u, neg) {
                v = 0.0;
                var at2 = at0 + (NMOM + ax - m0) * TXTY;
                for (var vb = lo; vb < hi; vb++) {
                    v += partials[at2];
                    at2 += step;
                }
            }
            if neg {
                if here[ax] == 0u { flux[2u * ax] -= v; }
            } else if here[ax] == last[ax] {
                flux[2u * ax + 1u] += v;
            }
        }
        if HAS_WALLS {
            add_wall_sums(bitcast<u32>(cells[3u * cell].w), o, m0, s);
        }
    }
    if !hit {
        return;
    }
    for (var mm = 0u; mm < MPT; mm++) {
        moments[cell * MSTRIDE + m0 + mm] += acc[mm];
    }
    let s = j * NX + i;
    if 1u - m0 < MPT && i == 0u { incident[face_offset(0u) + k * NY + j] += flux[0]; }
    if 1u - m0 < MPT && i == NX - 1u { incident[face_offset(1u) + k * NY + j] += flux[1]; }
    if 2u - m0 < MPT && j == 0u { incident[face_offset(2u) + k * NX + i] += flux[2]; }
    if 2u - m0 < MPT && j == NY - 1u { incident[face_offset(3u) + k * NX + i] += flux[3]; }
    if 3u - m0 < MPT && k == 0u { incident[face_offset(4u) + s] += flux[4]; }
    if 3u - m0 < MPT && k == NZ - 1u { incident[face_offset(5u) + s] += flux[5]; }
}
