// Multigrid::solve_coarsest (CUDA twin: syn_dense): v2 = A^-1 v0 with the coarsest
// operator's inverse in aux0, by columns (aux0[k n + r] = (A^-1)_{rk}), so that neighbouring
// invocations read neighbouring entries. prm.n: the order, 5 x cells.
@compute @workgroup_size(256)
fn syn_dense(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let r = syn_index(wid, nwg, lid);
    let n = prm.n;
    if r >= n {
        return;
    }
    var t = 0.0;
    for (var k = 0u; k < n; k++) {
        t += aux0[k * n + r] * v0[k];
    }
    v2[r] = t;
}
