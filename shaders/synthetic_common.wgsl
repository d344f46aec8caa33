// The synthetic (GSIS) solve on a wgpu device: what every stage shares. Each stage file
// (synthetic_row.wgsl, ..._lines.wgsl, ...) is compiled after this one; each entry is the
// device twin of a host function of src/solver/synthetic (named beside it) and of the CUDA
// kernel of the same name in shaders/cuda/synthetic.cu, in f32 throughout (WGSL has no
// portable f64): vectors, blocks and sums. Host launchers: src/solver/synthetic/wgpu/.
//
// Layouts (keep in sync with src/solver/synthetic/wgpu/kernels.rs): a vector holds NV = 5
// floats per cell. Per cell the diagonal block is 25 floats (row-major), the neighbour blocks
// 6 x 25 (sides in Face::ALL order), the neighbours 6 u32 (NONE: none); Jacobi's inverted
// diagonals and the line factors 25 floats per cell; an aggregate's members 8 u32
// (NONE-padded). Blocks are stored cell by cell, as on the host, because one invocation
// reads all of a cell's 700 bytes: neighbouring invocations then read neighbouring memory,
// and the host's arrays upload without a transpose. The neighbour blocks of a large level
// exceed one binding (2 GiB on Vulkan: 3.6 million cells), so they are cut by cells into up
// to four bindings of OFF_CELLS cells each; a cell's six blocks always share one.

// Keep in sync with SynParams in src/solver/synthetic/wgpu/kernels.rs.
struct SynParams {
    // Cells of the launch, the vector length (syn_axpy, syn_scale, syn_dot) or the dense
    // order (syn_dense).
    n: u32,
    // syn_row: b - A x instead of A x; syn_lines: a previous iterate x.
    flag: u32,
    axis: u32,
    d0: u32,
    d1: u32,
    d2: u32,
    // Damping, over-correction or the scalar of syn_axpy / syn_scale.
    w: f32,
    pad: u32,
}

const NV: u32 = 5u;
const NONE: u32 = 0xffffffffu;
const WG: u32 = 256u;
// Cells per neighbour-block binding (set by the host from the adapter's binding limit).
override OFF_CELLS: u32;

// One level's operator and smoother (bound once per level and smoother).
@group(0) @binding(0) var<storage, read> diag: array<f32>;
@group(0) @binding(1) var<storage, read> nbr: array<u32>;
@group(0) @binding(2) var<storage, read> off0: array<f32>;
@group(0) @binding(3) var<storage, read> off1: array<f32>;
@group(0) @binding(4) var<storage, read> off2: array<f32>;
@group(0) @binding(5) var<storage, read> off3: array<f32>;
// Jacobi's inverted diagonals, a line's factors M (with aux1 = its D^-1), or on the
// coarsest level its dense inverse by columns.
@group(0) @binding(6) var<storage, read> aux0: array<f32>;
@group(0) @binding(7) var<storage, read> aux1: array<f32>;
// Members of each next-level cell, and each cell's aggregate there.
@group(0) @binding(8) var<storage, read> children: array<u32>;
@group(0) @binding(9) var<storage, read> parent: array<u32>;

// The launch's vectors: two inputs, two outputs (a stage's comment names them).
@group(1) @binding(0) var<storage, read> v0: array<f32>;
@group(1) @binding(1) var<storage, read> v1: array<f32>;
@group(1) @binding(2) var<storage, read_write> v2: array<f32>;
@group(1) @binding(3) var<storage, read_write> v3: array<f32>;

@group(2) @binding(0) var<uniform> prm: SynParams;

// The invocation's index in a 2D grid of WG-wide workgroups (a vector of the paper cube
// needs more workgroups than one dimension allows).
fn syn_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid;
}

// Row r of cell c's block on side s times the vector v1 of cell n (synthetic_off.wgsl).
fn off_x(c: u32, s: u32, r: u32, n: u32) -> f32 {
    let part = c / OFF_CELLS;
    let i = c - part * OFF_CELLS;
    switch part {
        case 0u: { return off_x_0(i, s, r, n); }
        case 1u: { return off_x_1(i, s, r, n); }
        case 2u: { return off_x_2(i, s, r, n); }
        default: { return off_x_3(i, s, r, n); }
    }
}

// Row r of cell c's block on side s times v.
fn off_v(c: u32, s: u32, r: u32, v: array<f32, 5>) -> f32 {
    let part = c / OFF_CELLS;
    let i = c - part * OFF_CELLS;
    switch part {
        case 0u: { return off_v_0(i, s, r, v); }
        case 1u: { return off_v_1(i, s, r, v); }
        case 2u: { return off_v_2(i, s, r, v); }
        default: { return off_v_3(i, s, r, v); }
    }
}

// Row r of Operator::off_row: the neighbours' part of (A x) of cell c, x in v1, sides in
// order.
fn off_row_r(c: u32, r: u32) -> f32 {
    var acc = 0.0;
    for (var s = 0u; s < 6u; s++) {
        let n = nbr[c * 6u + s];
        if n != NONE {
            acc += off_x(c, s, r, n);
        }
    }
    return acc;
}

// Cell c's whole block on side s.
fn off_block(c: u32, s: u32) -> array<f32, 25> {
    let part = c / OFF_CELLS;
    let i = c - part * OFF_CELLS;
    switch part {
        case 0u: { return off_block_0(i, s); }
        case 1u: { return off_block_1(i, s); }
        case 2u: { return off_block_2(i, s); }
        default: { return off_block_3(i, s); }
    }
}

// The t-th line of cells along prm.axis (Lines::units' order): its length n, the number of
// lines, the stride between its cells and its first cell. Lines along y and z start at
// consecutive cells for consecutive t, so neighbouring invocations read neighbouring cells.
struct Line {
    n: u32,
    count: u32,
    stride: u32,
    c0: u32,
}

// The lines' length, from uniform values only: syn_lines' barriers sit in loops bounded by
// it, which WGSL's uniformity analysis must see as uniform (a call with a per-invocation
// argument, as syn_line(t), would not be).
fn syn_line_length() -> u32 {
    return select(select(prm.d2, prm.d1, prm.axis == 1u), prm.d0, prm.axis == 0u);
}

fn syn_line(t: u32) -> Line {
    let axis = prm.axis;
    let n = syn_line_length();
    let stride = select(select(prm.d0 * prm.d1, prm.d0, axis == 1u), 1u, axis == 0u);
    var c0 = t;
    if axis == 0u {
        c0 = t * prm.d0;
    } else if axis == 1u {
        c0 = (t / prm.d0) * prm.d0 * prm.d1 + t % prm.d0;
    }
    return Line(n, prm.d0 * prm.d1 * prm.d2 / n, stride, c0);
}
