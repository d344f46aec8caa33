// Operator::row and HostSpace::residual (CUDA twin: syn_row): v2 = A v1, or v0 - A v1 when
// prm.flag is set.
@compute @workgroup_size(256)
fn syn_row(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let c = syn_index(wid, nwg, lid);
    if c >= prm.n {
        return;
    }
    var acc = off_row(c);
    for (var r = 0u; r < NV; r++) {
        var t = 0.0;
        for (var k = 0u; k < NV; k++) {
            t += diag[c * 25u + r * NV + k] * v1[c * NV + k];
        }
        acc[r] += t;
    }
    for (var r = 0u; r < NV; r++) {
        if prm.flag != 0u {
            v2[c * NV + r] = v0[c * NV + r] - acc[r];
        } else {
            v2[c * NV + r] = acc[r];
        }
    }
}
