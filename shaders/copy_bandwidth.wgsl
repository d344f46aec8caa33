// copy_bandwidth: copies `src` to `dst` as vec4, a grid-stride loop over the whole buffer. It
// measures the bandwidth the kernels themselves reach (`knudsen bench`'s floor): a buffer copy
// (`copy_buffer_to_buffer`) runs at a third of it on an NVIDIA H100 under Vulkan
// (docs/benchmarks.md). Launcher: src/backend/wgpu/bandwidth.rs.

@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(256)
fn copy_bandwidth(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = arrayLength(&src);
    let stride = nwg.x * nwg.y * 256u;
    for (var i = gid.x + gid.y * nwg.x * 256u; i < n; i += stride) {
        dst[i] = src[i];
    }
}
