// krylov::dot's first stage (CUDA twin: syn_dot): workgroup g sums v0 . v1 over the elements
// i = g WG + t + k (workgroups) WG, in that order per invocation, then by a fixed tree, into
// v2[g]. The host adds the partials in f64. The number of workgroups depends only on the
// length, so the sum's grouping, and its bits, are the same on every run.
var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn syn_dot(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    var t = 0.0;
    for (var i = wid.x * WG + lid; i < prm.n; i += nwg.x * WG) {
        t += v0[i] * v1[i];
    }
    red[lid] = t;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if lid < h {
            red[lid] += red[lid + h];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        v2[wid.x] = red[0];
    }
}
