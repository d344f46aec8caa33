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

// A 1D weight in three f32 words, w = a + b + c exactly: a = f32(w), b = f32(w - a),
// c = w - a - b (real.rs::weight_words; WGSL has no bitcast to f64).
const WEIGHT_WORDS: u32 = 3u;
fn weight_of(w0: u32, w1: u32, w2: u32) -> f64 {
    return f64(bitcast<f32>(w0)) + f64(bitcast<f32>(w1)) + f64(bitcast<f32>(w2));
}

// The CPU reference's value (src/backend/upwind2.rs::PIECE_AGREE).
const PIECE_AGREE: f64 = 1e-14;
