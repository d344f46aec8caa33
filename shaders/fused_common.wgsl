// Shared by the fused sweeps sweep_fused.wgsl (first order) and sweep_fused2.wgsl (second
// order), which the host (src/backend/wgpu/fused.rs::source) puts after it: their constants,
// bindings, workgroup arrays and the helpers both use. The CUDA forms are in
// shaders/cuda/sweep_fused.cu and sweep_fused_march.cu.
//
// TX and TY are `const`, set by the host (src/backend/wgpu/fused.rs::source), which also
// unrolls the loops marked `// @unroll` (WGSL has no unroll attribute): every index into
// `carry` is then a constant, and the compiler keeps it in registers.

const TX: u32 = 8u;
const TY: u32 = 8u;
// Keep in sync with src/backend/fused.rs::BLOCK_VELOCITIES and PARTIALS.
const BV: u32 = 128u;
const NPART: u32 = 13u;
const TXTY: u32 = TX * TY;
const PARTS: u32 = BV / TXTY;
const NCOEF: u32 = 3u * TXTY;
// Record entries (vec4) per invocation when the next level's records are loaded.
const RAWQ: u32 = (NCOEF + BV - 1u) / BV;
// Wall words (src/grid/solid.rs): keep in sync with SOLID_BIT there.
const SOLID: u32 = 0x80000000u;

// Keep in sync with src/backend/wgpu/fused.rs::FusedParams.
struct FusedParams {
    diag: u32,   // the tile diagonal a + b of this dispatch
    a_lo: u32,   // its first tile column
    blocks: u32, // workgroups along x: the wave's blocks of BV velocities
    pad: u32,
}

override NX: u32;
override NY: u32;
override NZ: u32;
// Velocity stride of the face buffers.
override FCH: u32;
override SROW: u32 = 1u;
// Velocity nodes per axis (partner slots), and per face the start of its partner inflow in
// `bnd` and of its exits in `incident` (specular and periodic faces; NONE elsewhere, and the
// reads and writes fold away): as in sweep_slice.wgsl and moment_slice.wgsl.
override M: u32;
override PART0: u32 = 0xffffffffu;
override PART1: u32 = 0xffffffffu;
override PART2: u32 = 0xffffffffu;
override PART3: u32 = 0xffffffffu;
override PART4: u32 = 0xffffffffu;
override PART5: u32 = 0xffffffffu;
override EXIT0: u32 = 0xffffffffu;
override EXIT1: u32 = 0xffffffffu;
override EXIT2: u32 = 0xffffffffu;
override EXIT3: u32 = 0xffffffffu;
override EXIT4: u32 = 0xffffffffu;
override EXIT5: u32 = 0xffffffffu;
// Whether the case has bodies: without, the wall-word tests fold away.
override HAS_WALLS: bool = true;

@group(0) @binding(0) var<uniform> params: FusedParams;
// As in sweep_slice.wgsl: per cell 3 x vec4 (layout.rs::CellCoeffs); the inverse widths
// and face densities; per velocity (xi, w), its face inflow shapes, then body rows.
@group(0) @binding(1) var<storage, read> cells: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> bnd: array<f32>;
@group(0) @binding(3) var<storage, read> table: array<vec4<f32>>;
// [k NY + j][velocity] and [k NX + i][velocity]: a warp's accesses coalesce.
@group(0) @binding(4) var<storage, read_write> xface: array<f32>;
@group(0) @binding(5) var<storage, read_write> yface: array<f32>;
// [tile slot][block][k][moment][tile cell].
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;
// The exits of specular and periodic faces, after the incident fluxes (gpu_io::DeviceTables).
@group(0) @binding(7) var<storage, read_write> incident: array<f32>;

// Row stride TXTY + 1: writes (invocations on velocities) and reads (invocations on cells)
// fall in distinct banks.
var<workgroup> red: array<f32, BV * (TXTY + 1u)>;
var<workgroup> xs: array<vec4<f32>, BV>;
// Per velocity (w, w x, w x^2, w x^3): the reduction's factors.
var<workgroup> wpow: array<vec4<f32>, BV>;
// Runs of equal (y, z) in the workgroup's velocities, cut at the shares' bounds.
var<workgroup> runs: array<u32, BV + PARTS + 1u>;
var<workgroup> part_runs: array<u32, PARTS + 1u>;
// 1 where every run starts at a multiple of TXTY / 2: each half of a share is then within
// one run (48 points per axis at 4x4: rows of 24 x-nodes), and the reduction takes a
// straight path (sweep_fused.wgsl).
var<workgroup> halves: u32;
// The tile's coefficients, this level's and the next's; the columns' and rows' 1/width.
var<workgroup> coef: array<vec4<f32>, 2u * NCOEF>;
// Per coefficient buffer the cells' wall words (`mark_walls`; only with bodies).
var<workgroup> words: array<u32, 2u * TXTY>;
var<workgroup> inv_w: array<f32, TX + TY>;
// Per coefficient buffer: whether any of the tile's cells at that level has a wall word
// (a solid cell or a wall side). Only levels with take the sweep's form with wall paths
// (sweep_fused_walls.wgsl::sweep_level_walls): with them inlined in every cell the kernel's
// code was 2.7 times the size.
var<workgroup> walls_at: array<atomic<u32>, 2>;

// Cell c's wall word, kept in coefficient buffer `at`'s `words`; a word that is not zero
// sets that buffer's flag (never where the case has no bodies).
fn mark_walls(c: u32, word: u32, at: u32) {
    if HAS_WALLS {
        words[at * TXTY + c] = word;
        if word != 0u {
            atomicOr(&walls_at[at], 1u);
        }
    }
}

// A cell's three coefficient entries in the update's form, and its wall word.
struct CellConst {
    e0: vec4<f32>,
    e1: vec4<f32>,
    e2: vec4<f32>,
    word: u32,
}

// Where tile cell c's record at level k starts in `cells`, or NONE outside the domain.
fn record_at(c: u32, a: u32, b: u32, k: u32, neg_x: bool, neg_y: bool) -> u32 {
    let iu = a * TX + c % TX;
    let ju = b * TY + c / TX;
    if iu >= NX || ju >= NY {
        return NONE;
    }
    let i = select(iu, NX - 1u - iu, neg_x);
    let j = select(ju, NY - 1u - ju, neg_y);
    return 3u * ((k * NY + j) * NX + i);
}

// Cell c of the tile at level k as the update's constants (`cell_const`), or zeros outside
// the domain (never read).
fn cell_coeffs(c: u32, a: u32, b: u32, k: u32, neg_x: bool, neg_y: bool) -> CellConst {
    let at = record_at(c, a, b, k, neg_x, neg_y);
    if at == NONE {
        var r: CellConst;
        return r;
    }
    return cell_const(cells[at], cells[at + 1u], cells[at + 2u]);
}

// Entry e % 3 of tile cell e / 3's record at level k, or zeros outside the domain.
fn cell_record(e: u32, a: u32, b: u32, k: u32, neg_x: bool, neg_y: bool) -> vec4<f32> {
    let at = record_at(e / 3u, a, b, k, neg_x, neg_y);
    if at == NONE {
        return vec4<f32>();
    }
    return cells[at + e % 3u];
}

// A cell's constants from its record (r0, r1, r2); a record of zeros (outside the domain)
// gives constants no sweep reads. The record
// (layout.rs::CellCoeffs: (rho / (pi T)^{3/2}, 1/T, nu, wall), (U, base), (s, log2(e) / T))
// is turned into the update's per-cell constants once, by one invocation per cell, so that
// no invocation recomputes them per velocity. With l = log2(e) / T,
// G = nu rho / (pi T)^{3/2} and g = log2 G, the collision term's
// nu f^S = 2^ell (base + s.c (2 |c|^2 / T - 5)), c = xi - U, becomes
//   ell = -l |xi|^2 + 2 l U.xi + (g - l |U|^2),   s.c = s.xi - s.U,
//   2 |c|^2 / T - 5 = -2 ln(2) ell + (2 ln(2) g - 5),
// polynomials in the invocation's xi (as sweep_fused.cu's fused_coeffs): the entries become
// (-l, nu, -s.U, 2 ln(2) g - 5), (2 l U, base), (s, g - l |U|^2).
fn cell_const(r0: vec4<f32>, r1: vec4<f32>, r2: vec4<f32>) -> CellConst {
    var r: CellConst;
    let l = r2.w;
    // The floor keeps log2 finite in solid cells (no gas: their value is replaced by 0); every
    // fluid cell's G is far above it.
    let g = log2(max(r0.x * r0.z, 1e-30));
    r.e0 = vec4<f32>(-l, r0.z, -dot(r2.xyz, r1.xyz), fma(1.38629436, g, -5.0));
    r.e1 = vec4<f32>(2.0 * l * r1.xyz, r1.w);
    r.e2 = vec4<f32>(r2.xyz, fma(-l, dot(r1.xyz, r1.xyz), g));
    if HAS_WALLS {
        r.word = bitcast<u32>(r0.w);
    }
    return r;
}

// Cell c's constants into coefficient buffer `at`.
fn store_cell(c: u32, r: CellConst, at: u32) {
    coef[at * NCOEF + 3u * c] = r.e0;
    coef[at * NCOEF + 3u * c + 1u] = r.e1;
    coef[at * NCOEF + 3u * c + 2u] = r.e2;
    mark_walls(c, r.word, at);
}

fn exit_at(face: u32) -> u32 {
    switch face {
        case 0u: { return EXIT0; }
        case 1u: { return EXIT1; }
        case 2u: { return EXIT2; }
        case 3u: { return EXIT3; }
        case 4u: { return EXIT4; }
        default: { return EXIT5; }
    }
}

// What a velocity carries out at face cell `idx` of a specular or periodic face
// (moment_slice.wgsl's exits); ghost slots (zero weight) record nothing.
fn record_exit(at: u32, idx: u32, sl: u32, w: f32, f: f32) {
    if at != NONE && sl != NONE && w != 0.0 {
        incident[at + idx * slots() + sl] = f;
    }
}

// A run's sums s = (w, w x, w x^2, w x^3) f over its velocities, whose y and z are the
// run's, expanded into the 13 raw moments.
fn add_run(acc: ptr<function, array<f32, NPART>>, s: vec4<f32>, y: f32, z: f32) {
    let r2 = y * y + z * z;
    let q = fma(r2, s.x, s.z);
    (*acc)[0] += s.x;
    (*acc)[1] += s.y;
    (*acc)[2] += y * s.x;
    (*acc)[3] += z * s.x;
    (*acc)[4] += s.z;
    (*acc)[5] += y * y * s.x;
    (*acc)[6] += z * z * s.x;
    (*acc)[7] += y * s.y;
    (*acc)[8] += z * s.y;
    (*acc)[9] += y * z * s.x;
    (*acc)[10] += fma(r2, s.y, s.w);
    (*acc)[11] += y * q;
    (*acc)[12] += z * q;
}


// The workgroup's velocity `lid`: its (xi, w), and the weighted powers of x the reduction
// sums with.
fn store_velocity(lid: u32, vel: vec4<f32>) {
    xs[lid] = vel;
    wpow[lid] = vec4<f32>(vel.w, vel.w * vel.x, vel.w * vel.x * vel.x, vel.w * vel.x * vel.x * vel.x);
}

// The tile's columns' and rows' inverse widths in its velocities' upwind frame (zero past
// the grid's edge): one invocation each.
fn store_inv_w(lid: u32, a: u32, b: u32, neg_x: bool, neg_y: bool) {
    if lid < TX + TY {
        let on_x = lid < TX;
        let n = select(b * TY + lid - TX, a * TX + lid, on_x);
        let nn = select(NY, NX, on_x);
        let neg = select(neg_y, neg_x, on_x);
        var w = 0.0;
        if n < nn {
            w = bnd[select(NX, 0u, on_x) + select(n, nn - 1u - n, neg)];
        }
        inv_w[lid] = w;
    }
}

// The runs of equal (y, z) in each share of the workgroup's velocities (`xs`, stored before a
// barrier), and the `halves` flag, by one invocation; the others read them after the next
// barrier.
fn build_runs() {
    var n = 0u;
    var on_halves = 1u;
    for (var h = 0u; h < PARTS; h++) {
        part_runs[h] = n;
        for (var u = h * TXTY; u < (h + 1u) * TXTY; u++) {
            if u == h * TXTY || xs[u].y != xs[u - 1u].y || xs[u].z != xs[u - 1u].z {
                runs[n] = u;
                n++;
                if u % (TXTY / 2u) != 0u {
                    on_halves = 0u;
                }
            }
        }
    }
    part_runs[PARTS] = n;
    runs[n] = BV;
    halves = on_halves;
}

// The sums of w x^p f (p = 0..3) of cell rc along the run [u0, u1).
fn run_sums(u0: u32, u1: u32, rc: u32) -> vec4<f32> {
    var s0 = 0.0;
    var s1 = 0.0;
    var s2 = 0.0;
    var s3 = 0.0;
    for (var u = u0; u < u1; u++) {
        let f = red[u * (TXTY + 1u) + rc];
        let w = wpow[u];
        s0 = fma(w.x, f, s0);
        s1 = fma(w.y, f, s1);
        s2 = fma(w.z, f, s2);
        s3 = fma(w.w, f, s3);
    }
    return vec4<f32>(s0, s1, s2, s3);
}
