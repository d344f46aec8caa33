// The value type of the slice kernels (sweep_slice, moment_slice, wall_load_slice and
// upwind2's solve_cell): f32, the default. Prepended by the host; real_f64.wgsl is the f64
// form (`solver.precision = "f64"`), with the same names. Keep the two in sync, and with
// src/backend/wgpu/real.rs (the host's side) and shaders/cuda/common.cuh (CUDA's `real`).

alias real = f32;

// A wall word or velocity index stored in a value slot (gpu_tables.rs, gpu_io.rs): its bits.
fn bits(x: f32) -> u32 {
    return bitcast<u32>(x);
}

fn real_exp(x: f32) -> f32 {
    return exp(x);
}

// One of moment_slice's 1D weights from its WEIGHT_WORDS words in `vidx`
// (gpu_tables::moment_index; moment_slice passes the one word three times): the f32's bits.
const WEIGHT_WORDS: u32 = 1u;
fn weight_of(w0: u32, w1: u32, w2: u32) -> f32 {
    return bitcast<f32>(w0);
}

// upwind2.wgsl: two solves within this share of the ranges' top agree (a few round-offs).
const PIECE_AGREE: f32 = 1e-6;
