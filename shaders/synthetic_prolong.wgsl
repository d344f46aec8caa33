// Multigrid::cycle's prolongation (CUDA twin: syn_prolong): v2 += prm.w v0(parent),
// piecewise constant; v0 holds the next level's correction.
@compute @workgroup_size(256)
fn syn_prolong(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let c = syn_index(wid, nwg, lid);
    if c >= prm.n {
        return;
    }
    let p = parent[c];
    if p == NONE {
        return;
    }
    for (var k = 0u; k < NV; k++) {
        v2[c * NV + k] += prm.w * v0[p * NV + k];
    }
}
