//! The WGSL stages of the synthetic solve: their sources, the one pipeline layout they share
//! and their pipelines (`shaders/synthetic_*.wgsl`, each after `synthetic_common.wgsl`).

use crate::backend::wgpu::kernels::storage;
use std::sync::Arc;

/// Keep in sync with `SynParams` in shaders/synthetic_common.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SynParams {
    pub n: u32,
    pub flag: u32,
    pub axis: u32,
    pub d0: u32,
    pub d1: u32,
    pub d2: u32,
    pub w: f32,
    pub pad: u32,
}

/// Invocations per workgroup of every stage but syn_lines (WG in the shaders).
pub const WG: u32 = 256;
/// Invocations per workgroup of syn_jacobi (JACOBI_WG: 32 cells of five rows).
pub const JACOBI_WG: u32 = 160;
/// Lines per workgroup of syn_lines (LINES_PER_WG: five invocations per line, of 64).
pub const LINES_PER_WG: usize = 12;
/// Neighbour-block bindings (off0..off3).
pub const OFF_BINDINGS: usize = 4;
/// Storage buffers one stage binds: the level's ten and the launch's four vectors.
pub const STORAGE_BUFFERS: u32 = 14;

const COMMON: &str = include_str!("../../../../shaders/synthetic_common.wgsl");

/// Each stage's file and its entries.
pub const STAGES: [(&str, &[&str]); 9] = [
    (include_str!("../../../../shaders/synthetic_row.wgsl"), &["syn_row"]),
    (include_str!("../../../../shaders/synthetic_restrict.wgsl"), &["syn_restrict"]),
    (include_str!("../../../../shaders/synthetic_prolong.wgsl"), &["syn_prolong"]),
    (include_str!("../../../../shaders/synthetic_jacobi.wgsl"), &["syn_jacobi_first", "syn_jacobi"]),
    (include_str!("../../../../shaders/synthetic_lines.wgsl"), &["syn_lines"]),
    (include_str!("../../../../shaders/synthetic_line_factor.wgsl"), &["syn_line_factor"]),
    (include_str!("../../../../shaders/synthetic_dense.wgsl"), &["syn_dense"]),
    (include_str!("../../../../shaders/synthetic_vector.wgsl"), &["syn_axpy", "syn_scale"]),
    (include_str!("../../../../shaders/synthetic_dot.wgsl"), &["syn_dot"]),
];

const OFF: &str = include_str!("../../../../shaders/synthetic_off.wgsl");

/// Every stage as a shader variant (validation and translation tests), one per entry.
pub fn variants() -> Vec<crate::backend::wgpu::shaders::Variant> {
    use crate::backend::wgpu::shaders::Variant;
    STAGES
        .iter()
        .flat_map(|(src, entries)| {
            entries.iter().map(move |&e| Variant {
                label: e.to_string(),
                entry: e,
                source: source(src),
                subgroups: false,
                f64: false,
            })
        })
        .collect()
}

/// A stage's full source: the common part, one copy of synthetic_off.wgsl per
/// neighbour-block binding, then the stage.
pub fn source(stage: &str) -> String {
    let copies: String =
        (0..OFF_BINDINGS).map(|b| OFF.replace("offB", &format!("off{b}")).replace("_B(", &format!("_{b}("))).collect();
    format!("{COMMON}\n{copies}\n{stage}")
}

pub struct Kernels {
    pub row: wgpu::ComputePipeline,
    pub restrict: wgpu::ComputePipeline,
    pub prolong: wgpu::ComputePipeline,
    pub jacobi_first: wgpu::ComputePipeline,
    pub jacobi: wgpu::ComputePipeline,
    pub lines: wgpu::ComputePipeline,
    pub line_factor: wgpu::ComputePipeline,
    pub dense: wgpu::ComputePipeline,
    pub axpy: wgpu::ComputePipeline,
    pub scale: wgpu::ComputePipeline,
    pub dot: wgpu::ComputePipeline,
    /// Group 0 (a level), 1 (the vectors), 2 (the parameters, at a dynamic offset).
    pub layouts: [wgpu::BindGroupLayout; 3],
}

/// Kernels compiled without an error, with the `off_cells` and shader-check setting they
/// were compiled for. The stages bake in no grid size, so a coarse start's levels and the
/// case after them, on one kept device, share them (`backend::wgpu::device::keep_with_device`)
/// instead of compiling all eleven again for each (0.4 s on an H200 host, each time).
pub struct Compiled {
    off_cells: u32,
    checks: bool,
    kernels: Arc<Kernels>,
}

impl Compiled {
    pub fn new(off_cells: u32, kernels: Arc<Kernels>) -> Self {
        Self { off_cells, checks: crate::backend::wgpu::kernels::shader_checks(), kernels }
    }

    /// These kernels, if they were compiled for `off_cells` with today's shader checks.
    pub fn fits(&self, off_cells: u32) -> Option<Arc<Kernels>> {
        (self.off_cells == off_cells && self.checks == crate::backend::wgpu::kernels::shader_checks())
            .then(|| self.kernels.clone())
    }
}

impl Kernels {
    /// Compile every stage with `off_cells` cells per neighbour-block binding.
    pub fn new(device: &wgpu::Device, off_cells: u32) -> anyhow::Result<Self> {
        let layout = |label, entries: &[wgpu::BindGroupLayoutEntry]| {
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries })
        };
        let level: Vec<_> = (0..10).map(|b| storage(b, true)).collect();
        let vectors = [storage(0, true), storage(1, true), storage(2, false), storage(3, false)];
        let params = wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(std::mem::size_of::<SynParams>() as u64),
            },
            count: None,
        };
        let layouts = [layout("syn level", &level), layout("syn vectors", &vectors), layout("syn params", &[params])];
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("synthetic"),
            bind_group_layouts: &[Some(&layouts[0]), Some(&layouts[1]), Some(&layouts[2])],
            ..Default::default()
        });
        // One thread per stage: the driver compiles pipelines from several threads at once,
        // and the solve's first update waits for the slowest stage, not for their sum
        // (docs/performance.md, "The synthetic kernels compiled on a thread each"). Error
        // scopes are per thread, so each thread catches its own and hands it back.
        let compiled: Vec<anyhow::Result<Vec<(&str, wgpu::ComputePipeline)>>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = STAGES
                .iter()
                .map(|&(src, entries)| {
                    let pl = &pl;
                    scope.spawn(move || {
                        let caught = super::catch(device);
                        let made = compile_stage(device, pl, src, entries, off_cells);
                        caught.check(format!("compiling {}", entries[0])).map(|()| made)
                    })
                })
                .collect();
            jobs.into_iter().map(|j| j.join().expect("a compile thread panicked")).collect()
        });
        let mut made = std::collections::HashMap::new();
        for stage in compiled {
            made.extend(stage?);
        }
        let mut take = |n: &str| made.remove(n).expect("every entry of STAGES is compiled");
        Ok(Self {
            row: take("syn_row"),
            restrict: take("syn_restrict"),
            prolong: take("syn_prolong"),
            jacobi_first: take("syn_jacobi_first"),
            jacobi: take("syn_jacobi"),
            lines: take("syn_lines"),
            line_factor: take("syn_line_factor"),
            dense: take("syn_dense"),
            axpy: take("syn_axpy"),
            scale: take("syn_scale"),
            dot: take("syn_dot"),
            layouts,
        })
    }
}

/// One stage's module and its entries' pipelines.
fn compile_stage<'e>(
    device: &wgpu::Device,
    pl: &wgpu::PipelineLayout,
    src: &str,
    entries: &[&'e str],
    off_cells: u32,
) -> Vec<(&'e str, wgpu::ComputePipeline)> {
    let t = std::time::Instant::now();
    let desc =
        wgpu::ShaderModuleDescriptor { label: Some(entries[0]), source: wgpu::ShaderSource::Wgsl(source(src).into()) };
    let module = if crate::backend::wgpu::kernels::shader_checks() {
        device.create_shader_module(desc)
    } else {
        // SAFETY: as for the sweep's kernels (backend/wgpu/kernels.rs), the runtime
        // checks (a clamp per storage index, a guard per division) cost time in the
        // stages' inner loops. The indices stay in range by construction: every stage
        // returns or idles past its prm.n cells (or lines), reads a vector slot only
        // when it is bound (prm.flag), and indexes as its host twin does with checked
        // indexing (synthetic/wgpu/tests.rs compares them); the divisors are
        // OFF_CELLS >= 1, NV and the level's sizes >= 1. `KNUDSEN_SHADER_CHECKS=1`
        // turns the checks back on.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    let constants = [("OFF_CELLS", off_cells as f64)];
    let made = entries
        .iter()
        .map(|&entry| {
            let p = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(pl),
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
                cache: None,
            });
            (entry, p)
        })
        .collect();
    log::debug!("gsis: wgpu stage {} compiled in {:.3} s", entries[0], t.elapsed().as_secs_f64());
    made
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_stage_parses_and_validates() {
        let all = super::variants();
        assert_eq!(all.len(), 11, "one variant per entry of STAGES");
        for v in all {
            crate::backend::wgpu::shaders::validate(&v.source, false).unwrap_or_else(|e| panic!("{}:\n{e}", v.label));
        }
    }
}
