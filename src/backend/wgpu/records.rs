//! The sweep's cell records computed on the device from the macroscopic fields, instead of
//! on the host from [`crate::model::EqCoeffs`] (`gpu_io::cell_records`): the Shakhov
//! coefficients' grid sums cost the host ~0.4 us of one core per cell every iteration. Two
//! stages share the host side here:
//!
//! - f64 (shaders/cell_records_f64.wgsl, records_f64.rs), on devices with SHADER_F64: the
//!   host's formulas and recurrence, so the records are the host's up to rounding; the
//!   default where the device has f64 (`gpu_io::RecordsAt::Device`).
//! - f32 (shaders/cell_records.wgsl, one exp per node; [`cell_records_twin`] is its CPU twin,
//!   line for line), opt-in (`KNUDSEN_CELL_RECORDS=device-f32`): measured on an H100 it took
//!   10% off the 32^3 x 32^3 iteration and 3-4% off the 64^3 and cube rows, but the f32 sums
//!   (each exp a few ulps off) normalise f^S less exactly than f64 ones, and at Kn 0.01 the
//!   converged cavity's fields moved by 1.4e-6 in density and 7.5e-4 in heat flux (relative
//!   L2), five and three times what separates wgpu from CUDA there (docs/benchmarks.md).

use super::kernels::{kernel_with, storage, Kernel};
use super::records_f64::RecordParams64;
use super::schedule::grid_2d;
use crate::backend::wgpu::layout::CellCoeffs;
use crate::grid::solid::SOLID_BIT;
use crate::model::Macro;
use crate::problem::Problem;
use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

use crate::backend::gpu_io::{pack_fields, RECORD_FIELDS as FIELDS};
/// Invocations per workgroup (`@workgroup_size`).
const GROUP: u32 = 64;

/// Keep in sync with `RecordParams` in shaders/cell_records.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RecordParams {
    pub prandtl: f32,
    pub delta: f32,
    pub omega: f32,
    pub ncell: u32,
    pub row: u32,
    pub pad: [u32; 3],
}

/// The fields as uploaded: f32 (packed here, then copied) or f64 (packed straight into
/// wgpu's staging memory, `records_f64::pack_into`).
enum HostFields {
    F32(Vec<f32>),
    F64,
}

pub struct Records {
    kernel: Kernel,
    group: wgpu::BindGroup,
    fields: wgpu::Buffer,
    dispatch: (u32, u32),
    host: HostFields,
}

impl Records {
    /// The stage for `p`, writing into `cells`, in f64 (`f64`: the device must have been
    /// opened with SHADER_F64) or f32; None where the dispatch cannot be laid out.
    pub fn new(p: &Problem, device: &wgpu::Device, cells: &wgpu::Buffer, max_per_dim: u32, f64: bool) -> Option<Self> {
        let ncell = p.grid.cells();
        let groups = ncell.div_ceil(GROUP as usize);
        let dispatch = grid_2d(groups, max_per_dim)?;
        let row = dispatch.0 * GROUP;
        let params32 = RecordParams {
            prandtl: p.prandtl as f32,
            delta: p.delta as f32,
            omega: p.omega as f32,
            ncell: ncell as u32,
            row,
            pad: [0; 3],
        };
        let params64 = RecordParams64 { prandtl: p.prandtl, delta: p.delta, omega: p.omega, ncell: ncell as u32, row };
        // As kernels::Sizes::constants("cell_records").
        let constants = [("M", p.vgrid.m as f64), ("HAS_WALLS", if p.bodies.solids.any() { 1.0 } else { 0.0 })];
        let entries = [
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
            storage(1, true),
            storage(2, true),
            storage(3, true),
            storage(4, false),
        ];
        let kernel = match f64 {
            true => kernel_with(
                device,
                "cell_records_f64",
                &super::shaders::cell_records_f64_source(),
                &entries,
                &constants,
            ),
            false => kernel_with(device, "cell_records", super::shaders::CELL_RECORDS, &entries, &constants),
        };
        let init = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents, usage })
        };
        let params = match f64 {
            true => bytemuck::bytes_of(&params64),
            false => bytemuck::bytes_of(&params32),
        };
        let params = init("record params", params, wgpu::BufferUsages::UNIFORM);
        let nodes = p.vgrid.nodes.iter().chain(&p.vgrid.weights_1d);
        let vgrid = match f64 {
            true => bytemuck::cast_slice::<f64, u8>(&nodes.copied().collect::<Vec<f64>>()).to_vec(),
            false => bytemuck::cast_slice::<f32, u8>(&nodes.map(|&x| x as f32).collect::<Vec<f32>>()).to_vec(),
        };
        let vgrid = init("record vgrid", &vgrid, wgpu::BufferUsages::STORAGE);
        let width = if f64 { 8 } else { 4 };
        let mut words = p.bodies.solids.words.clone();
        words.resize(words.len().max(1), 0);
        let words = init("record words", bytemuck::cast_slice(&words), wgpu::BufferUsages::STORAGE);
        let fields = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("record fields"),
            size: (ncell * FIELDS * width) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("cell_records"),
            layout: &kernel.layout,
            entries: &[&params, &fields, &vgrid, &words, cells]
                .iter()
                .enumerate()
                .map(|(n, b)| wgpu::BindGroupEntry { binding: n as u32, resource: b.as_entire_binding() })
                .collect::<Vec<_>>(),
        });
        let host = match f64 {
            true => HostFields::F64,
            false => HostFields::F32(vec![0.0; ncell * FIELDS]),
        };
        Some(Self { kernel, group, fields, dispatch, host })
    }

    pub fn device_bytes(&self) -> u64 {
        self.fields.size()
    }

    /// Whether this is the f64 stage.
    pub fn is_f64(&self) -> bool {
        matches!(self.host, HostFields::F64)
    }

    /// Upload `fields` and encode the stage (before the sweep, in the same submission).
    pub fn encode(&mut self, queue: &wgpu::Queue, enc: &mut wgpu::CommandEncoder, fields: &[Macro]) {
        match &mut self.host {
            HostFields::F32(h) => {
                pack_fields(fields, h, |x| x as f32);
                queue.write_buffer(&self.fields, 0, bytemuck::cast_slice(h));
            }
            HostFields::F64 => {
                let size = wgpu::BufferSize::new(self.fields.size()).expect("a grid has cells");
                // None only where wgpu rejects the write, which it then reports as an error.
                if let Some(mut view) = queue.write_buffer_with(&self.fields, 0, size) {
                    super::records_f64::pack_into(fields, view.slice(..));
                }
            }
        }
        let mut pass = enc
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("cell_records"), timestamp_writes: None });
        pass.set_pipeline(&self.kernel.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(self.dispatch.0, self.dispatch.1, 1);
    }
}

/// The stage's CPU twin, line for line in f32 (shaders/cell_records.wgsl).
pub fn cell_records_twin(p: &Problem, fields: &[f32]) -> Vec<CellCoeffs> {
    let m = p.vgrid.m;
    let vgrid: Vec<f32> = p.vgrid.nodes.iter().chain(&p.vgrid.weights_1d).map(|&x| x as f32).collect();
    let (prandtl, delta, omega) = (p.prandtl as f32, p.delta as f32, p.omega as f32);
    let gaussian_moments = |u: f32, t: f32| {
        let mut g = [0.0f32; 4];
        for i in 0..m {
            let x = vgrid[i] - u;
            let wg = vgrid[m + i] * (-(x * x) / t).exp();
            let add = [wg, wg * x, wg * x * x, wg * x * x * x];
            g.iter_mut().zip(add).for_each(|(a, b)| *a += b);
        }
        g
    };
    (0..p.grid.cells())
        .map(|c| {
            let word = p.bodies.solids.words.get(c).copied().unwrap_or(0);
            if word & SOLID_BIT != 0 {
                return CellCoeffs::solid(word);
            }
            let f = &fields[FIELDS * c..FIELDS * (c + 1)];
            let (rho, u, t) = (f[0], [f[1], f[2], f[3]], f[4]);
            let ks = (1.0 - prandtl) * 4.0 / (5.0 * rho * t * t);
            let s = [ks * f[5], ks * f[6], ks * f[7]];
            let nu = delta * rho * t.powf(1.0 - omega);
            // The sweep's Maxwellian takes the matched parameters; nu and s the state's.
            let moments = |v: [f32; 3], t: f32| v.map(|va| gaussian_moments(va, t));
            let (u, tm, g) = crate::model::matched_maxwellian_by(moments, u, t, crate::model::MATCH_TOL_F32);
            let inv_t = 1.0 / tm;
            let z = g[0][0] * g[1][0] * g[2][0];
            let pref = rho / z;
            let base = super::records_f64::shakhov_base(&g, s, inv_t, z);
            CellCoeffs {
                rows: [
                    [pref, inv_t, nu, f32::from_bits(word)],
                    [u[0], u[1], u[2], base],
                    [s[0], s[1], s[2], inv_t * std::f32::consts::LOG2_E],
                ],
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::wgpu::device;
    use crate::model::Macro;

    /// Fields that vary from cell to cell: drifts both ways, hot and cold, heat flux.
    pub(crate) fn fields_of(p: &Problem) -> Vec<Macro> {
        (0..p.grid.cells())
            .map(|c| {
                let x = c as f64;
                let u = [0.3 * (0.7 * x).sin(), -0.2 * (0.3 * x).cos(), 0.05 * (x * 0.11).sin()];
                let q = [0.02 * (0.5 * x).cos(), 0.01, -0.015 * (0.2 * x).sin()];
                let t = 1.0 + 0.4 * (0.13 * x).sin();
                Macro { rho: 1.0 + 0.3 * (0.17 * x).cos(), u, t, q, p: [0.5; 6] }
            })
            .collect()
    }

    /// [`fields_of`] with a few cells at the edges of the Gaussian sums' recurrence: drifts
    /// past the velocity grid's ends (the nearest node clamped) and onto a node near them,
    /// no heat flux (base = 1), a cold and a hot cell.
    pub(crate) fn edge_fields(p: &Problem) -> Vec<Macro> {
        let mut f = fields_of(p);
        let half = p.vgrid.half_width;
        let edges = [
            ([half + 0.5, -half - 0.5, -half + 0.01], 1.0, [0.01, 0.0, 0.0]),
            ([0.0, 0.0, 0.0], 1.0, [0.0; 3]),
            ([0.1, -0.2, 0.05], 0.05, [0.001, 0.0, -0.001]),
            ([0.1, -0.2, 0.05], 20.0, [0.3, 0.1, 0.0]),
            ([half, -half, 0.0], 2.0, [0.0, 0.02, 0.0]),
        ];
        let fluid = (0..f.len()).filter(|&c| p.bodies.solids.words[c] & SOLID_BIT == 0);
        for (c, (u, t, q)) in fluid.zip(edges) {
            f[c] = Macro { rho: 0.8, u, t, q, p: [0.4; 6] };
        }
        f
    }

    /// The host's records of `fields` (`gpu_io::cell_records`' path: f64, rounded once).
    pub(crate) fn host_records(p: &Problem, fields: &[Macro]) -> Vec<CellCoeffs> {
        let words = &p.bodies.solids.words;
        let word = |c: usize| words.get(c).copied().unwrap_or(0);
        (0..fields.len())
            .map(|c| match word(c) & SOLID_BIT {
                0 => CellCoeffs::from_eq(&p.eq_coeffs(&fields[c]), word(c)),
                _ => CellCoeffs::solid(word(c)),
            })
            .collect()
    }

    /// Records computed in f64 by other means agree with the host's after the rounding to
    /// f32: identical, or one f32 ulp apart where the two f64 values straddle a rounding
    /// boundary (their own difference is a few f64 ulps: exp64 against the C library's exp).
    pub(crate) fn assert_within_an_ulp(p: &Problem, got: &[CellCoeffs], host: &[CellCoeffs], what: &str) {
        let words = &p.bodies.solids.words;
        let solid = (0..got.len()).filter(|&c| words[c] & SOLID_BIT != 0).count();
        assert!(solid > 0 && solid < got.len(), "the case needs solid and fluid cells");
        let mut differ = 0;
        for c in 0..got.len() {
            // The wall word, bit for bit.
            assert_eq!(got[c].rows[0][3].to_bits(), host[c].rows[0][3].to_bits(), "{what}, cell {c}: wall word");
            for row in 0..3 {
                for k in 0..4 {
                    let (a, b) = (got[c].rows[row][k], host[c].rows[row][k]);
                    assert!(
                        (a - b).abs() <= f32::EPSILON * a.abs().max(b.abs()),
                        "{what}, cell {c} [{row}][{k}]: {a} against the host's {b}"
                    );
                    differ += usize::from(a.to_bits() != b.to_bits());
                }
            }
        }
        // Straddled boundaries are rare: 1% of the values bounds them (measured on lavapipe,
        // the quick cube with edge cells: 0 of 139392 for the stage and for its twin).
        assert!(differ * 100 <= got.len() * 12, "{what}: {differ} values of {} differ", got.len() * 12);
    }

    /// Run the stage (`f64` or f32) on `fields` on the test adapter; None without one
    /// (outside CI) or, for f64, on an adapter without SHADER_F64 (CI's lavapipe has it).
    fn run_stage(p: &Problem, fields: &[Macro], f64: bool) -> Option<(Vec<CellCoeffs>, Records)> {
        let Ok(adapter) = device::pick(device::adapters(), true) else {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but no wgpu adapter");
            return None;
        };
        if f64 && !adapter.features().contains(wgpu::Features::SHADER_F64) {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true but the adapter has no f64");
            return None;
        }
        let (dev, queue) = device::open(&adapter, None, false).unwrap();
        let n = p.grid.cells();
        let cells = dev.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (n * std::mem::size_of::<CellCoeffs>()) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut r = Records::new(p, &dev, &cells, 65535, f64).unwrap();
        let mut enc = dev.create_command_encoder(&Default::default());
        r.encode(&queue, &mut enc, fields);
        let staging = dev.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: cells.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        enc.copy_buffer_to_buffer(&cells, 0, &staging, 0, cells.size());
        queue.submit([enc.finish()]);
        staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        dev.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let gpu: Vec<CellCoeffs> = bytemuck::cast_slice(&staging.slice(..).get_mapped_range().unwrap()).to_vec();
        Some((gpu, r))
    }

    /// The quick cube: a body (solid cells and wall words), stretched cells, 12^3 velocities.
    fn cube_quick() -> Problem {
        let cfg = crate::config::Config::from_json(include_str!("../../../configs/cube-quick.json")).unwrap();
        Problem::new(&cfg)
    }

    #[test]
    fn the_f64_stage_gives_the_hosts_records() {
        let p = cube_quick();
        let fields = edge_fields(&p);
        let Some((gpu, r)) = run_stage(&p, &fields, true) else { return };
        assert!(r.is_f64());
        let mut packed = vec![0.0f64; fields.len() * FIELDS];
        pack_fields(&fields, &mut packed, |x| x);
        let twin = super::super::records_f64::cell_records_f64_twin(&p, &packed);
        assert_within_an_ulp(&p, &gpu, &twin, "f64 stage against its twin");
        assert_within_an_ulp(&p, &gpu, &host_records(&p, &fields), "f64 stage");
    }

    #[test]
    fn the_stage_matches_its_twin_and_the_hosts_f64_records() {
        let p = cube_quick();
        let n = p.grid.cells();
        let fields = edge_fields(&p);
        let Some((gpu, r)) = run_stage(&p, &fields, false) else { return };
        let HostFields::F32(packed) = &r.host else { panic!("the f32 stage keeps f32 fields") };
        let twin = cell_records_twin(&p, packed);
        let host = host_records(&p, &fields);
        let words = &p.bodies.solids.words;
        for c in 0..n {
            let (g, t, h) = (gpu[c].rows, twin[c].rows, host[c].rows);
            // The wall word, bit for bit; zeros in solid cells.
            assert_eq!(g[0][3].to_bits(), words[c], "cell {c}");
            if words[c] & SOLID_BIT != 0 {
                assert_eq!(g, t, "solid cell {c}");
                continue;
            }
            for (row, k) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3)] {
                let (a, b, e) = (g[row][k], t[row][k], h[row][k]);
                // f32 sums of 12 exp terms per axis, each term a few ulps off (Vulkan allows
                // 3 + 2|x| ulps for exp, pow's error grows with its argument): 4e-6 relative
                // of the larger, plus 1e-7 absolute for the small Shakhov vector, bound both
                // the twin's and the f64 host's records. The drift U is the matched one
                // (model.rs::matched_maxwellian_by), moved by the f32 sums' mean, whose
                // round-off is absolute, a few ulps of sqrt(T) ~ 1: 5e-7 there.
                let abs = if row == 1 && k < 3 { 5e-7 } else { 1e-7 };
                let tol = |x: f32, y: f32| 4e-6 * x.abs().max(y.abs()) + abs;
                assert!((a - b).abs() <= tol(a, b), "cell {c} [{row}][{k}]: GPU {a} twin {b}");
                assert!((a - e).abs() <= tol(a, e), "cell {c} [{row}][{k}]: GPU {a} f64 host {e}");
            }
        }
    }
}
