// Operator::row and HostSpace::residual (CUDA twin: syn_row): v2 = A v1, or v0 - A v1 when
// prm.flag is set. One invocation per row of a cell (five per cell): one per cell read
// its 700 bytes at a 700-byte stride, 32 cache lines per warp load (an H100 reached 210 GB/s
// on the paper cube); five per cell read a block row of 20 bytes each, 7 lines per load.
@compute @workgroup_size(256)
fn syn_row(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = syn_index(wid, nwg, lid);
    let c = i / NV;
    let r = i - c * NV;
    if c >= prm.n {
        return;
    }
    var acc = off_row_r(c, r);
    var t = 0.0;
    for (var k = 0u; k < NV; k++) {
        t += diag[c * 25u + r * NV + k] * v1[c * NV + k];
    }
    acc += t;
    if prm.flag != 0u {
        v2[i] = v0[i] - acc;
    } else {
        v2[i] = acc;
    }
}
