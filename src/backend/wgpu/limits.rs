//! The adapter limits the GPU scheduler plans against, and the cap the kernels' 32-bit
//! indexing puts on them.

/// The adapter limits the schedule depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuLimits {
    pub max_storage_binding: u64,
    pub max_buffer: u64,
    pub max_workgroups_per_dim: u32,
    pub max_invocations_per_workgroup: u32,
    pub max_workgroup_storage: u32,
    pub max_storage_buffers_per_stage: u32,
}

impl GpuLimits {
    /// A CUDA device with `total_mem` bytes as the scheduler sees it: no binding-size limit
    /// below the device memory (the scheduler caps bindings at `MAX_INDEXED_BINDING`, which
    /// the kernels' 32-bit indices need), grid dimensions y and z of 65535 (x is larger, but
    /// the launch grids are built like the wgpu ones), 1024 threads and 48 KiB of static
    /// shared memory per block (every CUDA device from Kepler on).
    pub fn cuda(total_mem: u64) -> Self {
        Self {
            max_storage_binding: total_mem,
            max_buffer: total_mem,
            max_workgroups_per_dim: 65535,
            max_invocations_per_workgroup: 1024,
            max_workgroup_storage: 48 << 10,
            max_storage_buffers_per_stage: u32::MAX,
        }
    }

    pub fn from_wgpu(l: &wgpu::Limits) -> Self {
        Self {
            max_storage_binding: l.max_storage_buffer_binding_size.min(MAX_INDEXED_BINDING),
            max_buffer: l.max_buffer_size,
            max_workgroups_per_dim: l.max_compute_workgroups_per_dimension,
            max_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_workgroup_storage: l.max_compute_workgroup_storage_size,
            max_storage_buffers_per_stage: l.max_storage_buffers_per_shader_stage,
        }
    }

    /// Mesa lavapipe 22.3 (measured, ../shared/platform-facts.md).
    pub fn lavapipe() -> Self {
        Self {
            max_storage_binding: 128 << 20,
            max_buffer: 2 << 30,
            max_workgroups_per_dim: 65535,
            max_invocations_per_workgroup: 1024,
            max_workgroup_storage: 32 << 10,
            max_storage_buffers_per_stage: 32,
        }
    }

    /// NVIDIA H200, Vulkan, driver 580 (measured).
    pub fn nvidia_h200() -> Self {
        Self {
            max_storage_binding: (2u64 << 30) - 4,
            max_buffer: 4 << 30,
            max_workgroups_per_dim: 65535,
            max_invocations_per_workgroup: 1024,
            max_workgroup_storage: 48 << 10,
            max_storage_buffers_per_stage: 1 << 20,
        }
    }

    /// WebGPU's default limits: what any conforming adapter offers.
    pub fn webgpu_default() -> Self {
        Self::from_wgpu(&wgpu::Limits::default())
    }

    pub fn downlevel() -> Self {
        Self::from_wgpu(&wgpu::Limits::downlevel_defaults())
    }
}

/// The largest binding a kernel indexes with 32-bit arithmetic. WGSL has no 64-bit
/// integers: with at most 2^32 bytes in a binding, a binding holds at most 2^30 f32 (or
/// 2^28 vec4) elements, so every index and every partial product of the index formulas
/// (`s * CH + v`, `cell * MSTRIDE + m`, `3 * cell + r`, partner offsets) is an element index
/// of that binding, below 2^30, far from wrapping. [`GpuLimits::from_wgpu`] caps the
/// binding limit here (Vulkan and DX12 report less already; Metal reports
/// `maxBufferLength`). CUDA keeps its chunks whole, for parallelism: its kernels index the
/// slices in 64 bits (`slice_at`, shaders/cuda/common.cuh) and every other buffer stays
/// under this cap (src/backend/cuda/mod.rs checks it).
pub const MAX_INDEXED_BINDING: u64 = 1 << 32;
