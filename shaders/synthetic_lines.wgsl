// Lines::relax (CUDA twin: syn_lines): one block-tridiagonal line solve per line of cells
// along prm.axis, with the factors M in aux0 and D^-1 in aux1. Right-hand side v0, previous
// iterate v1 (when prm.flag is set; else x = 0), the forward elimination's y in v3, and
// v2 = x + w (x_line - x).
//
// Five invocations per line, one per row of the 5x5 block products, twelve lines per
// workgroup of 64 (four idle): one invocation per line left the GPU nearly empty (33,000
// lines on the paper cube's finest level) and each march latency-bound, as measured on the
// CUDA twin. An invocation keeps its row of the vector the march carries (the previous
// cell's y forward, the next cell's solution backward) in workgroup memory, where the
// line's other rows read it; the barriers sit outside every branch, since the lines of a
// workgroup may stop at different cells.
const LANES: u32 = 5u;
const LINES_PER_WG: u32 = 12u;

// 64 invocations; the idle four read up to index 64 + 3.
var<workgroup> carry: array<f32, 68>;
var<workgroup> part: array<f32, 68>;

// Row `row` of the 25-float block at aux (0: aux0, 1: aux1) of cell c times v.
fn aux_row(which: u32, c: u32, row: u32, v: array<f32, 5>) -> f32 {
    var t = 0.0;
    for (var k = 0u; k < NV; k++) {
        if which == 0u {
            t += aux0[c * 25u + row * NV + k] * v[k];
        } else {
            t += aux1[c * 25u + row * NV + k] * v[k];
        }
    }
    return t;
}

@compute @workgroup_size(64)
fn syn_lines(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lane: u32) {
    let g = wid.y * nwg.x + wid.x;
    let t = g * LINES_PER_WG + lane / LANES;
    let row = lane % LANES;
    let base = lane - row;
    let axis = prm.axis;
    let line = syn_line(t);
    let n = syn_line_length();
    let stride = line.stride;
    let c0 = line.c0;
    let live = lane < LANES * LINES_PER_WG && t < line.count;
    let s_prev = 2u * axis;
    let s_next = s_prev + 1u;
    let has_x = prm.flag != 0u;
    carry[lane] = 0.0;
    for (var i = 0u; i < n; i++) {
        let c = c0 + i * stride;
        var r = 0.0;
        var prev = false;
        if live {
            r = v0[c * NV + row];
            // Lines::joined: coupled to the previous cell of the line.
            prev = i > 0u && nbr[c * 6u + s_prev] == c - stride;
            let next = i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c;
            if has_x {
                for (var s = 0u; s < 6u; s++) {
                    let nb = nbr[c * 6u + s];
                    let in_line = (s == s_prev && prev) || (s == s_next && next);
                    if nb != NONE && !in_line {
                        r -= off_x(c, s, row, nb);
                    }
                }
            }
        }
        workgroupBarrier();
        var ck: array<f32, 5>;
        for (var k = 0u; k < NV; k++) {
            ck[k] = carry[base + k];
        }
        workgroupBarrier();
        if live {
            if prev {
                r -= aux_row(0u, c, row, ck);
            }
            v3[c * NV + row] = r;
            carry[lane] = r;
        }
    }
    for (var j = n; j > 0u; j--) {
        let i = j - 1u;
        let c = c0 + i * stride;
        workgroupBarrier();
        var xn: array<f32, 5>;
        for (var k = 0u; k < NV; k++) {
            xn[k] = carry[base + k];
        }
        var tt = 0.0;
        if live {
            tt = v3[c * NV + row];
            if i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c {
                tt -= off_v(c, s_next, row, xn);
            }
        }
        part[lane] = tt;
        workgroupBarrier();
        var tk: array<f32, 5>;
        for (var k = 0u; k < NV; k++) {
            tk[k] = part[base + k];
        }
        if live {
            let xl = aux_row(1u, c, row, tk);
            // The carry now holds this cell's line solution, for the cell before.
            carry[lane] = xl;
            var old = 0.0;
            if has_x {
                old = v1[c * NV + row];
            }
            v2[c * NV + row] = old + prm.w * (xl - old);
        }
    }
}
