// Multigrid's block-Jacobi smoothing with the inverted diagonals in aux0; right-hand side
// v0, iterate v1, result v2.

// Multigrid::cycle's first sweep from x = 0 (CUDA twin: syn_jacobi_first): v2 = w D^-1 v0.
@compute @workgroup_size(256)
fn syn_jacobi_first(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let c = syn_index(wid, nwg, lid);
    if c >= prm.n {
        return;
    }
    for (var r = 0u; r < NV; r++) {
        var t = 0.0;
        for (var k = 0u; k < NV; k++) {
            t += aux0[c * 25u + r * NV + k] * v0[c * NV + k];
        }
        v2[c * NV + r] = t * prm.w;
    }
}

// Multigrid::jacobi (CUDA twin: syn_jacobi): v2 = (1 - w) v1 + w D^-1 (v0 - O v1).
@compute @workgroup_size(256)
fn syn_jacobi(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let c = syn_index(wid, nwg, lid);
    if c >= prm.n {
        return;
    }
    let ox = off_row(c);
    var res: array<f32, 5>;
    for (var k = 0u; k < NV; k++) {
        res[k] = v0[c * NV + k] - ox[k];
    }
    for (var r = 0u; r < NV; r++) {
        var t = 0.0;
        for (var k = 0u; k < NV; k++) {
            t += aux0[c * 25u + r * NV + k] * res[k];
        }
        v2[c * NV + r] = (1.0 - prm.w) * v1[c * NV + r] + prm.w * t;
    }
}
