//! The value type of the wgpu slice path: f32, the default, or f64 (`solver.precision =
//! "f64"`) on adapters with the SHADER_F64 feature (Vulkan and DX12 on most discrete GPUs and
//! on lavapipe; never Metal). In f64 the slice kernels are compiled with `real = f64`
//! (shaders/real_f64.wgsl; keep in sync) and every buffer they read or add to holds f64: the
//! records (from the host, in f64), the inverse widths and densities, the velocity tables, the
//! slices and the sums. As on CUDA (src/backend/cuda/real.rs), the GSIS residual is then not
//! held at the f32 sweep's round-off floor (`docs/model.md`, "The f32 floor at small Kn"), at
//! twice the slice storage, without the fused on-chip sweep (f32 only), and at the device's
//! f64 rate, with e^x written out (shaders/exp64.wgsl).

use crate::backend::gpu_io::{self, DeviceTables};
use crate::backend::gpu_tables::{moment_index_as, velocity_table_as};
use crate::backend::SweepInput;
use crate::problem::Problem;

/// Whether `p` asks for f64 sweeps: only where `solver.precision` names "f64".
pub fn wants_f64(p: &Problem) -> bool {
    p.config.solver.names_f64()
}

/// Bytes of one value of the slice path.
pub fn value_bytes(f64: bool) -> usize {
    if f64 {
        8
    } else {
        crate::backend::GPU_BYTES_PER_VALUE
    }
}

/// Values as the kernels' bytes: f32 (rounded) or f64.
pub fn to_bytes(values: impl IntoIterator<Item = f64>, f64: bool) -> Vec<u8> {
    if f64 {
        values.into_iter().flat_map(f64::to_le_bytes).collect()
    } else {
        values.into_iter().flat_map(|x| (x as f32).to_le_bytes()).collect()
    }
}

/// A 1D weight's words in moment_slice's index buffer (`weight_of` in real_f32.wgsl /
/// real_f64.wgsl): its f32 bits; in f64 two f32s, hi = f32(w) and lo = f32(w - hi), whose
/// sum in f64 is within 2^-48 of w relative (moment_slice rebuilds w from 32-bit words,
/// as WGSL has no bitcast to f64).
pub fn weight_words(w: f64, f64: bool) -> Vec<u32> {
    let hi = w as f32;
    if f64 {
        vec![hi.to_bits(), ((w - hi as f64) as f32).to_bits()]
    } else {
        vec![hi.to_bits()]
    }
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

/// The host's cell records of `input` (layout.rs::CellCoeffs, 12 values per cell), as bytes.
pub fn host_records(p: &Problem, input: &SweepInput, f64: bool) -> Vec<u8> {
    if f64 {
        bytemuck::cast_slice(&gpu_io::cell_records_f64(p, input)).to_vec()
    } else {
        bytemuck::cast_slice(&gpu_io::cell_records(p, input)).to_vec()
    }
}

/// The face and wall densities and partner inflows of `input`, as bytes.
pub fn densities(input: &SweepInput, f64: bool) -> Vec<u8> {
    if f64 {
        bytemuck::cast_slice(&gpu_io::densities(input, |x| x)).to_vec()
    } else {
        bytemuck::cast_slice(&gpu_io::densities(input, |x| x as f32)).to_vec()
    }
}

/// Why this adapter cannot sweep `p` in f64, if `p` asks for it and the adapter lacks
/// SHADER_F64.
pub fn f64_refusal(p: &Problem, features: wgpu::Features, adapter: &str) -> Option<String> {
    (wants_f64(p) && !features.contains(wgpu::Features::SHADER_F64)).then(|| {
        format!("solver.precision \"f64\": {adapter} has no f64 shaders (wgpu's SHADER_F64; Metal never has); use --backend cuda (an NVIDIA GPU) or --backend cpu for f64, or leave the precision out for f32")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_words_carry_a_weight_to_two_to_the_minus_48() {
        for w in [0.123_456_789_012_345_68, 1.0 / 3.0, 2.5e-9, 0.75] {
            let words = weight_words(w, true);
            let back = f32::from_bits(words[0]) as f64 + f32::from_bits(words[1]) as f64;
            // hi holds 24 bits, lo the next 24: the rest is at most half an ulp of lo.
            assert!((back - w).abs() <= w * 2f64.powi(-48), "{w}: {back}");
            assert_eq!(weight_words(w, false), vec![(w as f32).to_bits()]);
        }
        // The check has teeth: one f32 alone misses w by far more.
        let w = 1.0 / 3.0;
        assert!(((w as f32) as f64 - w).abs() > w * 2f64.powi(-30));
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
