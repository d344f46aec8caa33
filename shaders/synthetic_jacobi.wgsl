// Multigrid's block-Jacobi smoothing with the inverted diagonals in aux0; right-hand side
// v0, iterate v1, result v2. One invocation per row of a cell, as syn_row.

// Multigrid::cycle's first sweep from x = 0 (CUDA twin: syn_jacobi_first): v2 = w D^-1 v0.
@compute @workgroup_size(256)
fn syn_jacobi_first(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let i = syn_index(wid, nwg, lid);
    let c = i / NV;
    let r = i - c * NV;
    if c >= prm.n {
        return;
    }
    var t = 0.0;
    for (var k = 0u; k < NV; k++) {
        t += aux0[c * 25u + r * NV + k] * v0[c * NV + k];
    }
    v2[i] = t * prm.w;
}

// 32 cells of five rows per workgroup: a row's output needs every row of its cell's
// residual, shared through workgroup memory.
const JACOBI_WG: u32 = 160u;
var<workgroup> res: array<f32, 160>;

// Multigrid::jacobi (CUDA twin: syn_jacobi): v2 = (1 - w) v1 + w D^-1 (v0 - O v1).
@compute @workgroup_size(160)
fn syn_jacobi(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * JACOBI_WG + lid;
    let c = i / NV;
    let r = i - c * NV;
    let live = c < prm.n;
    if live {
        res[lid] = v0[i] - off_row_r(c, r);
    }
    workgroupBarrier();
    if live {
        let first = lid - r;
        var t = 0.0;
        for (var k = 0u; k < NV; k++) {
            t += aux0[c * 25u + r * NV + k] * res[first + k];
        }
        v2[i] = (1.0 - prm.w) * v1[i] + prm.w * t;
    }
}
