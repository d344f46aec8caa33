// The value type of the slice kernels in f64 (`solver.precision = "f64"`, adapters with
// SHADER_F64): the names of real_f32.wgsl, which see. Prepended by the host, with
// shaders/exp64.wgsl appended. Keep in sync with src/backend/wgpu/real.rs.

alias real = f64;

// A wall word or velocity index stored in a value slot: its exact value (below 2^53).
fn bits(x: f64) -> u32 {
    return u32(x);
}

fn real_exp(x: f64) -> f64 {
    return exp64(x);
}

// A 1D weight in two f32 words: w = hi + lo, hi = f32(w), lo = f32(w - hi), within
// 2^-48 of w relative (real.rs::weight_words).
const WEIGHT_WORDS: u32 = 2u;
fn weight_of(lo: u32, hi: u32) -> f64 {
    return f64(bitcast<f32>(lo)) + f64(bitcast<f32>(hi));
}

// The CPU reference's value (src/backend/upwind2.rs::PIECE_AGREE).
const PIECE_AGREE: f64 = 1e-14;
