// GMRES's vector updates over prm.n floats (krylov.rs: axpy, HostSpace::scale; CUDA twins
// syn_axpy, syn_scale).

// v2 += w v0
@compute @workgroup_size(256)
fn syn_axpy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = syn_index(wid, nwg, lid);
    if i < prm.n {
        v2[i] += prm.w * v0[i];
    }
}

// v2 *= w
@compute @workgroup_size(256)
fn syn_scale(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = syn_index(wid, nwg, lid);
    if i < prm.n {
        v2[i] *= prm.w;
    }
}
