//! Host structs and buffer layouts shared with the WGSL shaders.

use crate::model::EqCoeffs;
use bytemuck::{Pod, Zeroable};

/// Per-dispatch parameters. Keep in sync with `StepParams` in shaders/sweep_slice.wgsl and
/// shaders/moment_slice.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct StepParams {
    /// z-step: +z velocities sweep slice `step`, -z velocities slice nz - 1 - step.
    pub step: u32,
    /// Velocities in the chunk.
    pub count: u32,
    /// Velocities [0, split) move along +z, [split, count) along -z.
    pub split: u32,
    pub pad: u32,
}

/// Per-cell sweep coefficients as the sweep reads them: three vec4 rows,
/// (pref, 1/T, nu, wall word), (U, base), (s, log2(e)/T), with U and T the grid Maxwellian's
/// parameters (model.rs::EqCoeffs), not the state's; the wall word (src/grid/solid.rs) is stored
/// as the bits of an f32 so one 16-byte load brings it with the coefficients it guards.
/// Keep in sync with `cells` in shaders/sweep_slice.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct CellCoeffs {
    pub rows: [[f32; 4]; 3],
}

impl CellCoeffs {
    /// A solid cell's record: no gas (zero coefficients), and its wall word.
    pub fn solid(wall_word: u32) -> Self {
        Self { rows: [[0.0, 0.0, 0.0, f32::from_bits(wall_word)], [0.0; 4], [0.0; 4]] }
    }

    pub fn from_eq(e: &EqCoeffs, wall_word: u32) -> Self {
        Self {
            rows: [
                [e.pref as f32, e.inv_t as f32, e.nu as f32, f32::from_bits(wall_word)],
                [e.u[0] as f32, e.u[1] as f32, e.u[2] as f32, e.base as f32],
                // 1/T log2(e): the fused sweeps' exponent for exp2 (sweep_fused.wgsl/.cu).
                [e.s[0] as f32, e.s[1] as f32, e.s[2] as f32, (e.inv_t * std::f64::consts::LOG2_E) as f32],
            ],
        }
    }
}

/// Floats per cell in the moments buffer (13 used). Keep in sync with MSTRIDE in
/// shaders/moment_slice.wgsl.
pub const MSTRIDE: usize = 16;
/// Sums a moment workgroup reduces: 13 raw moments and 6 face fluxes (moment_slice.wgsl).
pub const NACC: usize = 19;
/// Workgroup sizes (shaders: `@workgroup_size`).
pub const SWEEP_WG: u32 = 64;
pub const MOMENT_WG: u32 = 128;

/// Bytes of one StepParams record in the params buffer: the dynamic-offset alignment.
pub const PARAMS_STRIDE: u64 = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_structs_match_shader_layout() {
        // The shaders declare StepParams as four u32 and cells as array<vec4<real>> (f32) read in
        // threes; naga reports the WGSL sizes, which must equal the Rust sizes.
        let module = naga::front::wgsl::parse_str(&crate::backend::wgpu::shaders::sweep_source(1, false, 1)).unwrap();
        let ty = module.types.iter().find(|(_, t)| t.name.as_deref() == Some("StepParams")).unwrap().0;
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        assert_eq!(layouter[ty].size as usize, std::mem::size_of::<StepParams>());
        if let naga::TypeInner::Struct { members, .. } = &module.types[ty].inner {
            let names: Vec<_> = members.iter().map(|m| m.name.clone().unwrap()).collect();
            assert_eq!(names, ["step", "count", "split", "pad"]);
            let offsets: Vec<u32> = members.iter().map(|m| m.offset).collect();
            assert_eq!(offsets, [0, 4, 8, 12]);
        }
        assert_eq!(std::mem::size_of::<CellCoeffs>(), 3 * 16);
        let src = crate::backend::wgpu::shaders::moment_source(false, 1, false);
        assert!(src.contains(&format!("const MSTRIDE: u32 = {MSTRIDE}u;")));
        assert!(src.contains(&format!("const NACC: u32 = {NACC}u;")));
        assert!(src.contains(&format!("const MWG: u32 = {MOMENT_WG}u;")));
        assert!(src.contains(&format!("array<real, {}>; // NACC * MWG", NACC * MOMENT_WG as usize)));
        assert!(src.contains(&format!("@workgroup_size({MOMENT_WG})")));
        assert!(
            crate::backend::wgpu::shaders::sweep_source(1, false, 1).contains(&format!("@workgroup_size({SWEEP_WG})"))
        );
    }
}
