// The neighbour-block products of one binding, offB (synthetic_common.wgsl): the host
// (src/solver/synthetic/wgpu/kernels.rs::source) writes one copy of this file per binding,
// offB and _B replaced by off0 and _0, ... The dispatch to a copy happens once per block row
// (off_x, off_v), not once per entry: a switch per entry cost 150 branches per cell.

// Row r of block s of the cell at local index i times the vector v1 of cell n, summed over
// k in order (operator.rs::product's row).
fn off_x_B(i: u32, s: u32, r: u32, n: u32) -> f32 {
    let a = (i * 6u + s) * 25u + r * NV;
    var t = 0.0;
    for (var k = 0u; k < NV; k++) {
        t += offB[a + k] * v1[n * NV + k];
    }
    return t;
}

// The same row times a vector held by the invocation.
fn off_v_B(i: u32, s: u32, r: u32, v: array<f32, 5>) -> f32 {
    let a = (i * 6u + s) * 25u + r * NV;
    var t = 0.0;
    for (var k = 0u; k < NV; k++) {
        t += offB[a + k] * v[k];
    }
    return t;
}

// The whole block s of the cell at local index i.
fn off_block_B(i: u32, s: u32) -> array<f32, 25> {
    let a = (i * 6u + s) * 25u;
    var b: array<f32, 25>;
    for (var e = 0u; e < 25u; e++) {
        b[e] = offB[a + e];
    }
    return b;
}
