// Multigrid::cycle's restriction (CUDA twin: syn_restrict): an aggregate's residual v2 is
// the sum of its members' in v1, in member order. prm.n: the next level's cells.
@compute @workgroup_size(256)
fn syn_restrict(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let p = syn_index(wid, nwg, lid);
    if p >= prm.n {
        return;
    }
    var t = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
    for (var m = 0u; m < 8u; m++) {
        let c = children[p * 8u + m];
        if c == NONE {
            break;
        }
        for (var k = 0u; k < NV; k++) {
            t[k] += v1[c * NV + k];
        }
    }
    for (var k = 0u; k < NV; k++) {
        v2[p * NV + k] = t[k];
    }
}
