//! Host launchers of the WGSL kernels: pipelines, bind-group layouts and the dispatch of
//! one step. Named like their shader entries (shaders/sweep_slice.wgsl::sweep_slice,
//! shaders/moment_slice.wgsl::moment_slice) and their CPU twins (twin.rs).

use super::layout::{StepParams, SWEEP_WG};
use super::schedule::grid_2d;
use super::shaders;

/// Override constants: the grid and the chunk stride (both kernels), and the velocity grid
/// (points per axis and node step) that moment_slice rebuilds velocities from.
pub struct Sizes {
    pub nx: u32,
    pub ny: u32,
    pub nz: u32,
    pub chunk_stride: u32,
    pub m: u32,
    /// The velocity grid's node step, in the kernels' value type (`STEP: real`).
    pub step: f64,
    /// vec4 rows of shapes per velocity in sweep_slice's `table`: 1 + ceil(bodies / 4).
    pub srow: u32,
    /// The case has bodies (sweep_slice's HAS_WALLS).
    pub walls: bool,
    /// Partner inflow starts in `bnd` (PART0..5) and exit starts in `incident` (EXIT0..5),
    /// or gpu_io::NONE.
    pub part_at: [u32; 6],
    pub exit_at: [u32; 6],
    /// Slices per velocity (SLOTS, all three kernels): 1 or 4 (config::Scheme::slices).
    pub slots: u32,
    /// The slice kernels in f64 (shaders/real_f64.wgsl), with the workgroup reduction.
    pub f64: bool,
    /// Invocations per velocity of sweep_slice (ROWS; backend::slice_rows).
    pub rows: u32,
}

const PART: [&str; 6] = ["PART0", "PART1", "PART2", "PART3", "PART4", "PART5"];
const EXIT: [&str; 6] = ["EXIT0", "EXIT1", "EXIT2", "EXIT3", "EXIT4", "EXIT5"];

impl Sizes {
    /// The pipeline-overridable constants knudsen sets for `kernel` (an entry point name).
    pub fn constants(&self, kernel: &str) -> Vec<(&'static str, f64)> {
        if kernel == "copy_bandwidth" {
            // The bandwidth probe (bandwidth.rs) depends on no case.
            return Vec::new();
        }
        if kernel == "cell_records" || kernel == "cell_records_f64" {
            // Per cell, not per slice (records.rs sets the same two).
            return vec![("M", self.m as f64), ("HAS_WALLS", f64::from(u8::from(self.walls)))];
        }
        let mut c = vec![
            ("NX", self.nx as f64),
            ("NY", self.ny as f64),
            ("NZ", self.nz as f64),
            ("CH", self.chunk_stride as f64),
            ("SLOTS", self.slots as f64),
        ];
        match kernel {
            "moment_slice" => {
                c.extend([("M", self.m as f64), ("STEP", self.step)]);
                c.extend(EXIT.iter().zip(self.exit_at).map(|(&n, x)| (n, x as f64)));
            }
            "sweep_slice" => {
                c.extend([("SROW", self.srow as f64), ("HAS_WALLS", f64::from(u8::from(self.walls)))]);
                c.push(("M", self.m as f64));
                c.push(("ROWS", self.rows as f64));
                c.extend(PART.iter().zip(self.part_at).map(|(&n, x)| (n, x as f64)));
            }
            "wall_load_slice" => c.push(("SROW", self.srow as f64)),
            _ => {}
        }
        c
    }
}

pub fn storage(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

pub fn params_entry() -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: wgpu::BufferSize::new(std::mem::size_of::<StepParams>() as u64),
        },
        count: None,
    }
}

/// Whether to keep wgpu's shader runtime checks (`KNUDSEN_SHADER_CHECKS=1`, a diagnostic).
pub fn shader_checks() -> bool {
    std::env::var("KNUDSEN_SHADER_CHECKS").is_ok_and(|v| v == "1")
}

pub struct Kernel {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

fn kernel(
    device: &wgpu::Device,
    name: &str,
    src: &str,
    entries: &[wgpu::BindGroupLayoutEntry],
    sizes: &Sizes,
) -> Kernel {
    kernel_with(device, name, src, entries, &sizes.constants(name))
}

/// A kernel from its source, bindings and override constants.
pub fn kernel_with(
    device: &wgpu::Device,
    name: &str,
    src: &str,
    entries: &[wgpu::BindGroupLayoutEntry],
    constants: &[(&str, f64)],
) -> Kernel {
    let t = std::time::Instant::now();
    let desc = wgpu::ShaderModuleDescriptor { label: Some(name), source: wgpu::ShaderSource::Wgsl(src.into()) };
    let module = if shader_checks() {
        device.create_shader_module(desc)
    } else {
        // SAFETY: wgpu's runtime checks clamp every storage index to its binding, bound
        // every loop by a counter and guard every integer division, instructions in the
        // sweep's latency-bound inner loop: 17-19% of the time on the H100 (docs/
        // benchmarks.md). Our
        // indices stay in range by construction: the scheduler sizes every binding for the
        // indices the kernels form (schedule.rs tests the largest plans), the CPU twins index
        // the same way with Rust's checked indexing (tests/gpu_stages.rs), loops run to
        // override constants or `params.count`, and no divisor is zero (NX, NY, NZ, CH, M
        // are validated sizes). `KNUDSEN_SHADER_CHECKS=1` turns the checks back on.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(name), entries });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(name),
        bind_group_layouts: &[Some(&layout)],
        ..Default::default()
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(name),
        layout: Some(&pl),
        module: &module,
        entry_point: Some(name),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            // Workgroup memory is fully written before it is read.
            zero_initialize_workgroup_memory: false,
        },
        cache: None,
    });
    log::debug!("wgpu: kernel {name} built in {:.3} s", t.elapsed().as_secs_f64());
    Kernel { pipeline, layout }
}

/// The layout entries: params, the kernel's three fixed storage buffers (`fixed_read_only`
/// says which are read-only), then `slices` slice bindings (shaders.rs::slice_bindings).
fn entries(fixed_read_only: [bool; 3], slices: usize, slices_read_only: bool) -> Vec<wgpu::BindGroupLayoutEntry> {
    let mut e = vec![params_entry()];
    e.extend(fixed_read_only.iter().enumerate().map(|(n, &ro)| storage(n as u32 + 1, ro)));
    e.extend((0..slices).map(|c| storage(shaders::FIRST_SLICE_BINDING + c as u32, slices_read_only)));
    e
}

/// Bindings: params, cells, bnd (inverse widths and densities), table (velocities and
/// shapes), then the group's slices (rw).
pub fn sweep_slice_kernel(device: &wgpu::Device, sizes: &Sizes, slices: usize) -> Kernel {
    let e = entries([true, true, true], slices, false);
    kernel(device, "sweep_slice", &shaders::sweep_source(slices, sizes.f64, sizes.rows), &e, sizes)
}

/// Bindings: params, vidx (1D weights and velocity indices), moments (rw), incident (rw),
/// then the group's slices.
pub fn moment_slice_kernel(device: &wgpu::Device, sizes: &Sizes, subgroups: bool, slices: usize) -> Kernel {
    let e = entries([true, false, false], slices, true);
    kernel(device, "moment_slice", &shaders::moment_source(subgroups && !sizes.f64, slices, sizes.f64), &e, sizes)
}

/// Bindings: params, table (sweep_slice's), walls, wall_sums (rw), then the group's slices.
pub fn wall_load_slice_kernel(device: &wgpu::Device, sizes: &Sizes, slices: usize) -> Kernel {
    let e = entries([true, true, false], slices, true);
    kernel(device, "wall_load_slice", &shaders::wall_load_source(slices, sizes.f64), &e, sizes)
}

/// A bind group: params, then `buffers` in binding order (the fixed ones, then the slices).
pub fn bind(device: &wgpu::Device, k: &Kernel, params: &wgpu::Buffer, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: params,
            offset: 0,
            size: wgpu::BufferSize::new(std::mem::size_of::<StepParams>() as u64),
        }),
    }];
    for (n, b) in buffers.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry { binding: n as u32 + 1, resource: b.as_entire_binding() });
    }
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &k.layout, entries: &entries })
}

/// Dispatch sweep_slice over `count` velocity slots: `rows` invocations per slot (its ROWS).
pub fn encode_sweep_slice(
    pass: &mut wgpu::ComputePass,
    k: &Kernel,
    bg: &wgpu::BindGroup,
    offset: u32,
    (count, rows): (usize, u32),
    max_per_dim: u32,
) {
    let (x, y) = grid_2d((count * rows as usize).div_ceil(SWEEP_WG as usize), max_per_dim).expect("scheduled");
    pass.set_pipeline(&k.pipeline);
    pass.set_bind_group(0, bg, &[offset]);
    pass.dispatch_workgroups(x, y, 1);
}

/// Dispatch moment_slice over the slice cells.
pub fn encode_moment_slice(
    pass: &mut wgpu::ComputePass,
    k: &Kernel,
    bg: &wgpu::BindGroup,
    offset: u32,
    grid: (u32, u32),
) {
    pass.set_pipeline(&k.pipeline);
    pass.set_bind_group(0, bg, &[offset]);
    pass.dispatch_workgroups(grid.0, grid.1, 1);
}

/// Dispatch wall_load_slice: one workgroup per wall face of the larger of the two slices of
/// the step (z = 2 parts: +z and -z velocities).
pub fn encode_wall_load_slice(
    pass: &mut wgpu::ComputePass,
    k: &Kernel,
    bg: &wgpu::BindGroup,
    offset: u32,
    faces: usize,
    max_per_dim: u32,
) {
    let (x, y) = grid_2d(faces, max_per_dim).expect("wall faces per slice fit the dispatch grid");
    pass.set_pipeline(&k.pipeline);
    pass.set_bind_group(0, bg, &[offset]);
    pass.dispatch_workgroups(x, y, 2);
}
