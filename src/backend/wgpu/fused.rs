//! Host side of the fused on-chip sweep in WGSL (shaders/sweep_fused.wgsl,
//! shaders/fused_moments.wgsl; the plan in backend/fused.rs): the tile the adapter's
//! workgroup memory allows, the kernels, their buffers and bind groups, and per wave one
//! sweep_fused dispatch per tile diagonal, each followed by the fused_moments dispatch that
//! adds that diagonal's partials.

use super::kernels::{self, Kernel};
use super::layout::PARAMS_STRIDE;
use super::schedule::grid_2d;
use super::specialise::{levels, levels_from_env, unroll, Levels};
use crate::backend::fused::{self, FusedLimits, FusedPlan, SweepKernel, BLOCK_VELOCITIES, PARTIALS};
use crate::backend::gpu_tables::{shape_rows, velocity_table};
use crate::plan::PlanError;
use crate::problem::Problem;
use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

const COMMON: &str = include_str!("../../../shaders/fused_common.wgsl");
const SWEEP: &str = include_str!("../../../shaders/sweep_fused.wgsl");
const SWEEP_WALLS: &str = include_str!("../../../shaders/sweep_fused_walls.wgsl");
const SWEEP2: &str = include_str!("../../../shaders/sweep_fused2.wgsl");
const MOMENTS: &str = include_str!("../../../shaders/fused_moments.wgsl");
const FACE_OFFSET: &str = include_str!("../../../shaders/face_offset.wgsl");
const PARTNER: &str = include_str!("../../../shaders/partner.wgsl");

/// Per-dispatch parameters. Keep in sync with `FusedParams` in shaders/sweep_fused.wgsl and
/// shaders/fused_moments.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct FusedParams {
    pub diag: u32,
    pub a_lo: u32,
    pub blocks: u32,
    pub pad: u32,
}

/// Storage buffers sweep_fused binds (cells, bnd, table, xface, yface, partials, incident).
pub const STORAGE_BUFFERS: u32 = 7;

/// The sources ([`source`]) of the sweep and of the moments' sum under each scheme; the
/// entry points are `sweep_fused`, `sweep_fused2` and `fused_moments`.
pub fn kernel_names(second: bool) -> [&'static str; 2] {
    if second {
        ["sweep_fused2", "fused_moments2"]
    } else {
        ["sweep_fused", "fused_moments"]
    }
}

/// A kernel's source with the tile set: `const TX` and `const TY` replaced, the z-loop
/// marked `// @levels` copied per kind of level (only the whole-tile copies where the tile
/// divides `dims`' x and y), the loops marked `// @unroll` unrolled, face_offset appended.
/// The sweeps follow fused_common.wgsl; `sweep_fused2` (second order) has 16 partials and
/// the cell update of upwind2.wgsl after it; `fused_moments2` is fused_moments.wgsl with 16
/// partials.
pub fn source(kernel: &str, tile: [usize; 2], dims: [usize; 3]) -> String {
    let second = kernel.ends_with('2');
    let npart = fused::PARTIALS + if second { fused::FACE_PARTIALS } else { 0 };
    let src = match kernel {
        "sweep_fused" => format!("{COMMON}\n{SWEEP_WALLS}\n{SWEEP}"),
        "sweep_fused2" => format!("{COMMON}\n{SWEEP2}\n{}", super::shaders::UPWIND2),
        _ => MOMENTS.to_string(),
    };
    let tx = "const TX: u32 = 8u;";
    let ty = "const TY: u32 = 8u;";
    let np = "const NPART: u32 = 13u;";
    assert!(src.contains(tx) && src.contains(ty) && src.contains(np), "{kernel}: the tile constants moved");
    let s = src
        .replace(tx, &format!("const TX: u32 = {}u;", tile[0]))
        .replace(ty, &format!("const TY: u32 = {}u;", tile[1]))
        .replace(np, &format!("const NPART: u32 = {npart}u;"));
    let n = tile[0] * tile[1];
    // SUMQ: the unrolled steps per invocation of sweep_fused.wgsl's shares' sum, one
    // (moment, cell) pair each.
    let sumq = (npart * n).div_ceil(BLOCK_VELOCITIES);
    let rawq = (3 * n).div_ceil(BLOCK_VELOCITIES);
    let bounds = [("TX", tile[0]), ("TY", tile[1]), ("TXTY", n), ("NPART", npart), ("SUMQ", sumq), ("RAWQ", rawq)];
    let sweep = if kernel.starts_with("sweep") {
        format!("{}\n{}\n{PARTNER}", super::shaders::REAL_F32, super::shaders::SWEEP_COMMON)
    } else {
        String::new()
    };
    let whole = dims[0] % tile[0] == 0 && dims[1] % tile[1] == 0;
    let s = levels(&s, Levels { whole, ..levels_from_env() });
    format!("{}\n{FACE_OFFSET}\n{sweep}", unroll(&s, &bounds))
}

/// Workgroup memory of sweep_fused with `tile`: red, xs, wpow, runs, part_runs, halves, coef,
/// words, inv_w, walls_at (fused_common.wgsl); and under second order (sweep_fused2) `outs`.
/// Keep in sync with the `var<workgroup>` declarations there.
pub fn workgroup_bytes(tile: [usize; 2], second: bool) -> u32 {
    let (n, bv) = (tile[0] * tile[1], BLOCK_VELOCITIES);
    let parts = bv / n;
    let flags = 4 * 2;
    let words = 4 * 2 * n;
    let outs = if second { 4 * 3 * bv * (n + 1) } else { 0 };
    (4 * bv * (n + 1)
        + 2 * 16 * bv
        + 4 * (bv + parts + 1)
        + 4 * (parts + 1)
        + 4
        + 16 * 2 * 3 * n
        + words
        + 4 * (tile[0] + tile[1])
        + outs) as u32
        + flags
}

/// The fused plan on an adapter with `limits`, or why the slice kernels run instead:
/// `KNUDSEN_SWEEP` as on CUDA; the tile is 4x4 (second order 4x2, else 2x2; or
/// `KNUDSEN_FUSED_TILE`), where its workgroup memory fits. Under second order only when
/// asked for (`asked` or `KNUDSEN_SWEEP=fused`): on an H100 through the NVIDIA Vulkan driver sweep_fused2 took
/// 2.2-2.7 s per iteration at 64^3 x 64^3 against the slice kernels' 1.62 s, and 0.038-0.050
/// against 0.042 s at 32^3 x 32^3 (docs/performance.md, "The fused second-order sweep in
/// WGSL").
pub fn choose(
    p: &Problem,
    budget: u64,
    limits: &wgpu::Limits,
    asked: Option<SweepKernel>,
    tile: Option<[usize; 2]>,
) -> anyhow::Result<Result<FusedPlan, String>> {
    let second = p.config.solver.scheme.slices() > 1;
    let opted_in = asked.map_or_else(fused::sweep_from_env, |k| Ok(Some(k))).ok().flatten() == Some(SweepKernel::Fused);
    let plan = || -> Result<FusedPlan, String> {
        if let Some(why) = fused::ineligible(p) {
            return Err(why);
        }
        // The fused sweep is f32 only; f64 sweeps take the slice kernels (real.rs).
        if super::real::wants_f64(p) {
            return Err("solver.precision \"f64\": the f64 slice kernels".into());
        }
        if second && !opted_in {
            return Err(
                "under second order the WGSL fused sweep was measured slower than the slice kernels (KNUDSEN_SWEEP=fused runs it)"
                    .into(),
            );
        }
        if limits.max_storage_buffers_per_shader_stage < STORAGE_BUFFERS {
            return Err(format!(
                "the adapter allows {} storage buffers per stage; it needs {STORAGE_BUFFERS}",
                limits.max_storage_buffers_per_shader_stage
            ));
        }
        let tiles = match (tile, std::env::var("KNUDSEN_FUSED_TILE")) {
            (Some(t), _) if fused::tile_fits(t, second) => vec![t],
            (Some(t), _) => return Err(format!("tile {t:?} does not fit the block")),
            (None, Ok(_)) => vec![fused::tile_from_env(second).map_err(|PlanError(e)| e)?],
            // 4x4 first: measured fastest through Vulkan on an H200 (docs/performance.md),
            // where 8x8's 64-value carry costs the driver's register allocation. Second
            // order (opt-in): 4x2 (24 KiB), the fastest measured on an H100, else 2x2.
            (None, Err(_)) if second => vec![[4, 2], [2, 2]],
            (None, Err(_)) => vec![[4, 4]],
        };
        let tile = tiles
            .into_iter()
            .find(|&t| workgroup_bytes(t, second) <= limits.max_compute_workgroup_storage_size)
            .ok_or_else(|| {
                format!(
                    "its workgroup memory exceeds the adapter's {} bytes",
                    limits.max_compute_workgroup_storage_size
                )
            })?;
        let lim = FusedLimits {
            max_binding: limits.max_storage_buffer_binding_size.min(super::schedule::MAX_INDEXED_BINDING),
            max_blocks: limits.max_compute_workgroups_per_dimension as usize,
        };
        fused::plan(&p.vgrid.octant_members(), p.grid.dims(), tile, second, budget, lim).map_err(|PlanError(e)| e)
    };
    fused::decide(asked, plan)
}

/// What one kernel is compiled from: entry point, source, bindings, override constants.
#[derive(Clone, PartialEq)]
pub struct KernelSpec {
    pub name: &'static str,
    pub source: String,
    pub entries: Vec<wgpu::BindGroupLayoutEntry>,
    pub constants: Vec<(&'static str, f64)>,
}

/// The sweep's and the moments' sum's [`KernelSpec`] for `plan`: everything their
/// pipelines depend on, so that two equal specs give the same kernels (`super::prewarm`, which
/// compiles from them, as the backend's build does where it has none compiled).
/// `part_at`, `exit_at`: where each face's partner inflows and exits lie (`gpu_io::table_layout`),
/// which the sizes alone give, so the tables need not be built for the specs.
pub fn kernel_specs(p: &Problem, plan: &FusedPlan, part_at: [u32; 6], exit_at: [u32; 6]) -> [KernelSpec; 2] {
    let [nx, ny, nz] = plan.dims.map(|n| n as f64);
    let walls = f64::from(u8::from(p.bodies.solids.any()));
    let mpt = plan.moments_per_thread;
    let mut sweep_constants = vec![
        ("NX", nx),
        ("NY", ny),
        ("NZ", nz),
        ("FCH", plan.stride as f64),
        ("SROW", shape_rows(p) as f64),
        ("HAS_WALLS", walls),
        ("M", p.vgrid.m as f64),
    ];
    const PART: [&str; 6] = ["PART0", "PART1", "PART2", "PART3", "PART4", "PART5"];
    const EXIT: [&str; 6] = ["EXIT0", "EXIT1", "EXIT2", "EXIT3", "EXIT4", "EXIT5"];
    sweep_constants.extend(PART.iter().zip(part_at).map(|(&n, x)| (n, x as f64)));
    sweep_constants.extend(EXIT.iter().zip(exit_at).map(|(&n, x)| (n, x as f64)));
    // Params, three read-only storage buffers, then `rw` read-write ones.
    let entries = |rw: u32| {
        let mut e = vec![kernels::params_entry()];
        e.extend((1..4 + rw).map(|n| kernels::storage(n, n < 4)));
        e
    };
    let [sweep_name, moments_name] = kernel_names(plan.second);
    [
        KernelSpec {
            name: sweep_name,
            source: source(sweep_name, plan.tile, plan.dims),
            entries: entries(4),
            constants: sweep_constants,
        },
        KernelSpec {
            name: "fused_moments",
            source: source(moments_name, plan.tile, plan.dims),
            entries: entries(3),
            constants: vec![("NX", nx), ("NY", ny), ("NZ", nz), ("HAS_WALLS", walls), ("MPT", mpt as f64)],
        },
    ]
}

/// The sweep and moments kernels of `specs`.
pub fn compile(device: &wgpu::Device, specs: &[KernelSpec; 2]) -> (Kernel, Kernel) {
    let [s, m] = specs.each_ref().map(|k| kernels::kernel_with(device, k.name, &k.source, &k.entries, &k.constants));
    (s, m)
}

pub struct FusedGpu {
    pub plan: FusedPlan,
    sweep: Kernel,
    moments: Kernel,
    /// Per wave: the bind groups of both kernels.
    groups: Vec<(wgpu::BindGroup, wgpu::BindGroup)>,
    buffers: Vec<wgpu::Buffer>,
    max_per_dim: u32,
}

impl FusedGpu {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &wgpu::Device,
        (sweep, moments_k): (Kernel, Kernel),
        p: &Problem,
        plan: FusedPlan,
        cells: &wgpu::Buffer,
        bnd: &wgpu::Buffer,
        moments: &wgpu::Buffer,
        incident: &wgpu::Buffer,
        wall_sums: &wgpu::Buffer,
        max_per_dim: u32,
    ) -> Self {
        let storage = wgpu::BufferUsages::STORAGE;
        let make = |label: &str, floats: usize| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (4 * floats.max(1)) as u64,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let init = |label: &str, data: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: data, usage })
        };
        let [fx, fy] = plan.face_floats();
        let (xface, yface, partials) = (make("xface", fx), make("yface", fy), make("partials", plan.partial_floats()));
        // One record per (wave, diagonal), at PARAMS_STRIDE.
        let nd = plan.diagonals();
        let mut params = vec![0u8; plan.waves.len() * nd * PARAMS_STRIDE as usize];
        for (w, wave) in plan.waves.iter().enumerate() {
            for d in 0..nd {
                let rec = FusedParams {
                    diag: d as u32,
                    a_lo: plan.diagonal(d).0 as u32,
                    blocks: wave.blocks() as u32,
                    pad: 0,
                };
                let at = (w * nd + d) * PARAMS_STRIDE as usize;
                params[at..at + 16].copy_from_slice(bytemuck::bytes_of(&rec));
            }
        }
        let params = init("fused params", &params, wgpu::BufferUsages::UNIFORM);
        let mut buffers = Vec::new();
        let mut groups = Vec::new();
        for wave in &plan.waves {
            let table = init("fused table", bytemuck::cast_slice(&velocity_table(p, &wave.velocities)), storage);
            let ranges = init("fused ranges", bytemuck::cast_slice(&wave.ranges), storage);
            let s = kernels::bind(device, &sweep, &params, &[cells, bnd, &table, &xface, &yface, &partials, incident]);
            let m =
                kernels::bind(device, &moments_k, &params, &[&ranges, &partials, cells, moments, incident, wall_sums]);
            groups.push((s, m));
            buffers.extend([table, ranges]);
        }
        buffers.extend([xface, yface, partials, params]);
        Self { plan, sweep, moments: moments_k, groups, buffers, max_per_dim }
    }

    pub fn device_bytes(&self) -> u64 {
        self.buffers.iter().map(|b| b.size()).sum()
    }

    /// Record every wave's dispatches into `pass` (moments and incident cleared before).
    pub fn encode(&self, pass: &mut wgpu::ComputePass) {
        let nd = self.plan.diagonals();
        let cells = self.plan.dims.iter().product::<usize>();
        // PARTIALS / MPT invocations per cell (fused_moments.wgsl).
        let per_cell = PARTIALS / self.plan.moments_per_thread;
        let (mx, my) =
            grid_2d((cells * per_cell).div_ceil(128), self.max_per_dim).expect("cells fit the dispatch grid");
        for (w, (sg, mg)) in self.groups.iter().enumerate() {
            let blocks = self.plan.waves[w].blocks() as u32;
            for d in 0..nd {
                let (lo, hi) = self.plan.diagonal(d);
                let off = ((w * nd + d) as u64 * PARAMS_STRIDE) as u32;
                pass.set_pipeline(&self.sweep.pipeline);
                pass.set_bind_group(0, sg, &[off]);
                pass.dispatch_workgroups(blocks, (hi - lo + 1) as u32, 1);
                pass.set_pipeline(&self.moments.pipeline);
                pass.set_bind_group(0, mg, &[off]);
                pass.dispatch_workgroups(mx, my, 1);
            }
        }
    }
}

/// One line on what runs, for the log.
pub fn describe(f: &Result<FusedGpu, String>) -> String {
    fused::describe_choice(f.as_ref().map(|g| &g.plan).map_err(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_shaders_parse_and_validate_for_every_tile() {
        // Grids the tiles divide (whole-tile copies only) and grids they do not.
        for dims in [[32, 32, 8], [31, 29, 8]] {
            for tile in [[8, 8], [8, 4], [4, 4], [16, 8], [2, 4], [4, 2], [2, 2]] {
                for k in ["sweep_fused", "fused_moments", "sweep_fused2", "fused_moments2"] {
                    if !fused::tile_fits(tile, k.ends_with('2')) {
                        continue;
                    }
                    super::super::shaders::validate(&source(k, tile, dims), false)
                        .unwrap_or_else(|e| panic!("{k} {tile:?} {dims:?}:\n{e}"));
                }
            }
        }
    }

    #[test]
    fn the_workgroup_memory_count_matches_the_shader() {
        // naga's layout of sweep_fused's workgroup variables, summed, against ours.
        for (tile, second) in [([8, 8], false), ([4, 4], false), ([4, 4], true), ([2, 4], true)] {
            let kernel = kernel_names(second)[0];
            let m = super::super::shaders::validate(&source(kernel, tile, [32, 32, 8]), false).unwrap();
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(m.to_ctx()).unwrap();
            let bytes: u32 = m
                .global_variables
                .iter()
                .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
                .map(|(_, g)| layouter[g.ty].size)
                .sum();
            assert_eq!(bytes, workgroup_bytes(tile, second), "{tile:?}, second order {second}");
        }
        assert!(
            workgroup_bytes([8, 8], false) > 32 << 10,
            "8x8 exceeds lavapipe's 32 KiB: the fallback tiles get tested"
        );
        // Second order: 4x4 within the NVIDIA Vulkan driver's 48 KiB, 2x4 within lavapipe's 32.
        assert!(workgroup_bytes([4, 4], true) <= 48 << 10 && workgroup_bytes([4, 4], true) > 32 << 10);
        assert!(workgroup_bytes([2, 4], true) <= 32 << 10);
        assert_eq!(crate::backend::fused::PARTIALS, 13);
    }
}
