//! The value type of the wgpu slice path: f32, the default, or f64 (`solver.precision =
//! "f64"`) on adapters with the SHADER_F64 feature (wgpu offers it on Vulkan alone: most
//! discrete GPUs, and lavapipe; not Metal, DX12 or GL). In f64 the slice kernels are compiled with `real = f64`
//! (shaders/real_f64.wgsl; keep in sync) and every buffer they read or add to holds f64: the
//! records (from the host, in f64), the inverse widths and densities, the velocity tables, the
//! slices and the sums. As on CUDA (src/backend/cuda/real.rs), the GSIS residual is then not
//! held at the f32 sweep's round-off floor (`docs/model.md`, "The f32 floor at small Kn"), at
//! twice the slice storage, without the fused on-chip sweep (f32 only), and at the device's
//! f64 rate, with e^x written out (shaders/exp64.wgsl).

use crate::backend::gpu_io::{self, DeviceTables};
use crate::backend::gpu_tables::{moment_index_as, velocity_table_as};
use crate::backend::{SweepInput, SweepOutput};
use crate::problem::Problem;

/// Whether `p` asks for f64 sweeps: only where `solver.precision` names "f64".
pub fn wants_f64(p: &Problem) -> bool {
    p.config.solver.names_f64()
}

/// A 1D weight's words in moment_slice's index buffer (`weight_of` in real_f32.wgsl /
/// real_f64.wgsl): its f32 bits; in f64 three f32s, a = f32(w), b = f32(w - a) and
/// c = w - a - b, whose sum in f64 is w exactly (24 + 24 bits, and the last 5 of w's 53 in
/// c; moment_slice rebuilds w from 32-bit words, as WGSL has no bitcast to f64).
pub fn weight_words(w: f64, f64: bool) -> Vec<u32> {
    let a = w as f32;
    if !f64 {
        return vec![a.to_bits()];
    }
    let b = (w - a as f64) as f32;
    let c = (w - a as f64 - b as f64) as f32;
    vec![a.to_bits(), b.to_bits(), c.to_bits()]
}

/// sweep_slice's and wall_load_slice's velocity table of `velocities` (gpu_tables.rs): in
/// f64 the velocity index as its exact value (`bits` in real_f64.wgsl).
pub fn velocity_table(p: &Problem, velocities: &[u32], f64: bool) -> Vec<u8> {
    if f64 {
        let t = velocity_table_as(p, velocities, |x| x, |u| u as f64);
        bytemuck::cast_slice(&t).to_vec()
    } else {
        let t = velocity_table_as(p, velocities, |x| x as f32, f32::from_bits);
        bytemuck::cast_slice(&t).to_vec()
    }
}

/// moment_slice's index buffer of `velocities`.
pub fn moment_index(p: &Problem, velocities: &[u32], f64: bool) -> Vec<u32> {
    moment_index_as(p, velocities, |w| weight_words(w, f64))
}

/// The `bnd` buffer's initial contents: the inverse widths, then room for the densities and
/// partner inflows (written each iteration from `tables.dens_at`).
pub fn bnd(p: &Problem, tables: &DeviceTables, f64: bool) -> Vec<u8> {
    if !f64 {
        return bytemuck::cast_slice(&tables.bnd).to_vec();
    }
    let mut bnd: Vec<f64> = (0..3).flat_map(|a| p.sweep_inv_widths(a)).collect();
    bnd.resize(tables.bnd.len(), 0.0);
    bytemuck::cast_slice(&bnd).to_vec()
}

/// Upload the host's cell records of `input` (layout.rs::CellCoeffs, 12 values per cell) to
/// `cells`, in the kernels' type (written as computed: the paper cube's are 300 MB in f32).
pub fn write_host_records(queue: &wgpu::Queue, cells: &wgpu::Buffer, p: &Problem, input: &SweepInput, f64: bool) {
    if f64 {
        queue.write_buffer(cells, 0, bytemuck::cast_slice(&gpu_io::cell_records_f64(p, input)));
    } else {
        queue.write_buffer(cells, 0, bytemuck::cast_slice(&gpu_io::cell_records(p, input)));
    }
}

/// Upload the face and wall densities and partner inflows of `input` to `bnd` from value
/// `at`, in the kernels' type.
pub fn write_densities(queue: &wgpu::Queue, bnd: &wgpu::Buffer, at: usize, input: &SweepInput, f64: bool) {
    let offset = (at * crate::backend::gpu_bytes_per_value(f64)) as u64;
    if f64 {
        queue.write_buffer(bnd, offset, bytemuck::cast_slice(&gpu_io::densities(input, |x| x)));
    } else {
        queue.write_buffer(bnd, offset, bytemuck::cast_slice(&gpu_io::densities(input, |x| x as f32)));
    }
}

/// Which cell-records stage to build (`records_f64::choose`): in f64 none, since the stages
/// write f32 records and the f64 sweep takes the host's; a `KNUDSEN_CELL_RECORDS` asking for
/// one is refused by name.
pub fn records_stage(p: &Problem, has_f64: bool) -> anyhow::Result<Option<bool>> {
    use gpu_io::RecordsAt;
    if !wants_f64(p) {
        return super::records_f64::choose(gpu_io::records_from_env(super::records_f64::default_at(has_f64))?, has_f64);
    }
    match gpu_io::records_from_env(RecordsAt::Host)? {
        RecordsAt::Host => Ok(None),
        _ => anyhow::bail!(
            "KNUDSEN_CELL_RECORDS: the f64 sweep (solver.precision \"f64\") takes the host's f64 records; the wgpu records stages write f32 ones (use host, or leave it unset)"
        ),
    }
}

/// The read-back (`bytes`: the raw moments, then the incident fluxes and exits from byte
/// `at[0]`, then the wall sums from byte `at[1]`) into `out`.
pub fn unpack(out: &mut SweepOutput, bytes: &[u8], at: [usize; 2], f64: bool, t: &DeviceTables) {
    if f64 {
        // wgpu promises no alignment of a mapped range: the f64 values are copied out. The
        // f32 ones are read in place (400 MB of moments on the paper cube), relying on the
        // native mappings being page-aligned, as they are (a misaligned one would panic here,
        // not read wrong values).
        let (moments, rest) = bytes.split_at(at[0]);
        let (incident, sums) = rest.split_at(at[1] - at[0]);
        let f = |b: &[u8]| -> Vec<f64> { bytemuck::pod_collect_to_vec(b) };
        gpu_io::unpack(out, &f(moments), &f(incident), &f(sums), t);
    } else {
        let data: &[f32] = bytemuck::cast_slice(bytes);
        let (moments, rest) = data.split_at(at[0] / 4);
        gpu_io::unpack(out, moments, rest, &data[at[1] / 4..], t);
    }
}

/// Why this adapter cannot sweep `p` in f64, if `p` asks for it and the adapter lacks
/// SHADER_F64.
pub fn f64_refusal(p: &Problem, features: wgpu::Features, adapter: &str) -> Option<String> {
    (wants_f64(p) && !features.contains(wgpu::Features::SHADER_F64)).then(|| {
        format!("solver.precision \"f64\": {adapter} has no f64 shaders (wgpu's SHADER_F64, which it offers on Vulkan only: not Metal, DX12 or GL); use --backend cuda (an NVIDIA GPU) or --backend cpu for f64, or leave the precision out for f32")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_words_carry_a_weight_exactly() {
        // The weights of every grid the shipped cases use and more (2-128 points, half-widths
        // 1-9.5, both rules), and a few awkward values; summed left to right, as the shader.
        use crate::config::Quadrature;
        let mut weights = vec![0.123_456_789_012_345_68, 1.0 / 3.0, 2.5e-9, 0.75];
        // (Each grid is built whole, m^3 velocities: every count to 48, then a few large ones.)
        for m in (2..=48).chain([63, 64, 96, 127, 128]) {
            for hw in [1.0, 3.0, 4.0, 5.0, 6.0, 9.5] {
                // Simpson's rule takes odd counts only.
                let rules = if m % 2 == 1 {
                    &[Quadrature::Trapezoid, Quadrature::Simpson][..]
                } else {
                    &[Quadrature::Trapezoid]
                };
                for &q in rules {
                    weights.extend(crate::grid::VelocityGrid::new(m, hw, q).weights_1d);
                }
            }
        }
        for w in weights {
            let words = weight_words(w, true);
            let back = words.iter().map(|&u| f32::from_bits(u) as f64).fold(0.0, |s, x| s + x);
            assert_eq!(back, w, "{words:?}");
        }
        // The check has teeth: two f32s miss w (by up to 2^-48 of it).
        let w = 1.0 / 3.0;
        let two = weight_words(w, true)[..2].iter().map(|&u| f32::from_bits(u) as f64).sum::<f64>();
        assert_ne!(two, w);
    }

    #[test]
    fn an_adapter_without_f64_refuses_f64_alone() {
        let mut cfg = crate::config::Config::from_json(include_str!("../../../configs/cavity-quick.json")).unwrap();
        let none = wgpu::Features::empty();
        assert_eq!(f64_refusal(&Problem::new(&cfg), none, "A"), None);
        cfg.solver.precision = Some(crate::config::Precision::F64);
        let p = Problem::new(&cfg);
        let why = f64_refusal(&p, none, "A").expect("refused");
        assert!(why.contains("solver.precision \"f64\"") && why.contains("SHADER_F64"), "{why}");
        assert_eq!(f64_refusal(&p, wgpu::Features::SHADER_F64, "A"), None);
    }
}
