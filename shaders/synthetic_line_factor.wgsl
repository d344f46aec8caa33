// Lines::factor (CUDA twin: syn_line_factor): one invocation per line of cells along
// prm.axis, the block-tridiagonal factors M_i = L_i Dp_{i-1}^-1 into v2 and Dp_i^-1 into v3,
// with Dp_i = D_i - M_i U_{i-1}, 25 floats per cell. In f32 (the host factors in f64 and
// stores f32): the factors only shape the preconditioner. Factored here, the lines need no
// host time and no upload (on the paper cube 3.8 GB per build).

// krylov::invert: a 5x5 inverse by Gauss-Jordan elimination with partial pivoting (the last
// of equal pivots, as the host's max_by); false when singular or the pivot not finite. (WGSL
// need not keep NaNs, so a NaN elsewhere in a column is not detected as on the host; a NaN
// operator fails the correction's finiteness check anyway.)
fn syn_invert(a: array<f32, 25>, inv: ptr<function, array<f32, 25>>) -> bool {
    var m = a;
    for (var i = 0u; i < 25u; i++) {
        (*inv)[i] = select(0.0, 1.0, i / NV == i % NV);
    }
    for (var col = 0u; col < NV; col++) {
        var piv = col;
        for (var i = col + 1u; i < NV; i++) {
            if abs(m[i * NV + col]) >= abs(m[piv * NV + col]) {
                piv = i;
            }
        }
        let p = m[piv * NV + col];
        // Zero, or not finite (NaN fails every comparison; infinity passes the first).
        if !(abs(p) > 0.0 && abs(p) <= 3.4e38) {
            return false;
        }
        if piv != col {
            for (var k = 0u; k < NV; k++) {
                var t = m[col * NV + k];
                m[col * NV + k] = m[piv * NV + k];
                m[piv * NV + k] = t;
                t = (*inv)[col * NV + k];
                (*inv)[col * NV + k] = (*inv)[piv * NV + k];
                (*inv)[piv * NV + k] = t;
            }
        }
        let d = 1.0 / m[col * NV + col];
        for (var k = 0u; k < NV; k++) {
            m[col * NV + k] *= d;
            (*inv)[col * NV + k] *= d;
        }
        for (var r = 0u; r < NV; r++) {
            let f = m[r * NV + col];
            if r != col && f != 0.0 {
                for (var k = 0u; k < NV; k++) {
                    m[r * NV + k] -= f * m[col * NV + k];
                    (*inv)[r * NV + k] -= f * (*inv)[col * NV + k];
                }
            }
        }
    }
    return true;
}

@compute @workgroup_size(64)
fn syn_line_factor(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let t = (wid.y * nwg.x + wid.x) * 64u + lid;
    let axis = prm.axis;
    let line = syn_line(t);
    if t >= line.count {
        return;
    }
    let n = line.n;
    let stride = line.stride;
    let c0 = line.c0;
    let s_prev = 2u * axis;
    let s_next = s_prev + 1u;
    var prev: array<f32, 25>;
    for (var i = 0u; i < n; i++) {
        let c = c0 + i * stride;
        var d: array<f32, 25>;
        var m: array<f32, 25>;
        for (var e = 0u; e < 25u; e++) {
            d[e] = diag[c * 25u + e];
        }
        if i > 0u && nbr[c * 6u + s_prev] == c - stride {
            let l = off_block(c, s_prev);
            let u = off_block(c - stride, s_next);
            // flux::mul, twice: m = L Dp^-1, then d -= m U.
            for (var r = 0u; r < NV; r++) {
                for (var k = 0u; k < NV; k++) {
                    var s = 0.0;
                    for (var j = 0u; j < NV; j++) {
                        s += l[r * NV + j] * prev[j * NV + k];
                    }
                    m[r * NV + k] = s;
                }
            }
            for (var r = 0u; r < NV; r++) {
                for (var k = 0u; k < NV; k++) {
                    var s = 0.0;
                    for (var j = 0u; j < NV; j++) {
                        s += m[r * NV + j] * u[j * NV + k];
                    }
                    d[r * NV + k] -= s;
                }
            }
        }
        // A singular pivot stores a zero inverse (the host's unwrap_or(ZERO)).
        var inv: array<f32, 25>;
        if !syn_invert(d, &inv) {
            inv = array<f32, 25>();
        }
        prev = inv;
        for (var e = 0u; e < 25u; e++) {
            v2[c * 25u + e] = m[e];
            v3[c * 25u + e] = inv[e];
        }
    }
}
