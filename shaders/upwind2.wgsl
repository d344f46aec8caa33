// solve_cell: the second-order cell update (solver.scheme = "second_order"; the bounded
// diamond difference of docs/model.md). Appended to sweep_slice.wgsl by the host.
// CPU reference: src/backend/upwind2.rs::solve_cell (f64); twin:
// src/backend/wgpu/twin2.rs::solve_cell (f32, line for line like this file).
//
// Solves sum_d a_d (clamp((1 + w) f - w inflow_d, lo, hi) - inflow_d) + nu (f - fs) = 0,
// where [lo, hi] is the range of fs and the inflows of the active axes (a_d > 0) and
// w = min(1, sum_d a_d / nu) the diamond weight. Unclamped, the answer is the weighted
// diamond difference; otherwise the root is interpolated between the nearest kinks of the
// piecewise-linear left side (at most six, known beforehand): a fixed cost.

struct CellUpdate {
    f: f32,
    // The face value emitted along x, y, z (f itself along an inactive axis).
    out: vec3<f32>,
}

fn emitted(a: vec3<f32>, inflow: vec3<f32>, w: f32, lo: f32, hi: f32, f: f32) -> vec3<f32> {
    return select(vec3<f32>(f), clamp((1.0 + w) * f - w * inflow, vec3<f32>(lo), vec3<f32>(hi)), a > vec3<f32>(0.0));
}

fn balance_lhs(a: vec3<f32>, inflow: vec3<f32>, w: f32, nu: f32, lo: f32, hi: f32, f: f32) -> f32 {
    return nu * f + dot(a, emitted(a, inflow, w, lo, hi, f));
}

fn solve_cell(a: vec3<f32>, inflow: vec3<f32>, nu: f32, fs: f32) -> CellUpdate {
    var lo = fs;
    var hi = fs;
    for (var d = 0u; d < 3u; d++) {
        if a[d] > 0.0 {
            lo = min(lo, inflow[d]);
            hi = max(hi, inflow[d]);
        }
    }
    let sum_a = a.x + a.y + a.z;
    // The diamond weight: 1 in cells thinner than a mean free path along the characteristic,
    // sum_a / nu in thicker ones (src/backend/upwind2.rs).
    let w = min(1.0, sum_a / nu);
    let rhs = dot(a, inflow) + nu * fs;
    var f = (rhs + w * (rhs - nu * fs)) / ((1.0 + w) * sum_a + nu);
    let x = (1.0 + w) * f - w * inflow;
    let clamped = any((a > vec3<f32>(0.0)) & ((x < vec3<f32>(lo)) | (x > vec3<f32>(hi))));
    if clamped {
        var kl = lo;
        var kh = hi;
        var gl = balance_lhs(a, inflow, w, nu, lo, hi, lo);
        var gh = balance_lhs(a, inflow, w, nu, lo, hi, hi);
        for (var d = 0u; d < 3u; d++) {
            if a[d] > 0.0 {
                for (var e = 0u; e < 2u; e++) {
                    let kk = (w * inflow[d] + select(lo, hi, e == 1u)) / (1.0 + w);
                    if kk > kl && kk < kh {
                        let gk = balance_lhs(a, inflow, w, nu, lo, hi, kk);
                        if gk <= rhs {
                            kl = kk;
                            gl = gk;
                        } else {
                            kh = kk;
                            gh = gk;
                        }
                    }
                }
            }
        }
        f = select(kl, kl + (rhs - gl) * (kh - kl) / (gh - gl), gh > gl);
    }
    // [lo, hi] holds the root; the clamp removes round-off (an exact maximum principle).
    f = clamp(f, lo, hi);
    return CellUpdate(f, emitted(a, inflow, w, lo, hi, f));
}
