//! The compile-time constants of the CUDA sweep program, passed to NVRTC as `-D` definitions
//! (the CUDA counterpart of the WGSL `override`s), and the representative sets
//! `knudsen nvrtc-check` compiles.

use crate::problem::Problem;

/// The compile-time constants: the CUDA counterpart of the WGSL `override`s
/// (wgpu/kernels.rs::Sizes), passed as `-D` definitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    pub nx: u32,
    pub ny: u32,
    pub nz: u32,
    pub chunk_stride: u32,
    pub srow: u32,
    pub has_walls: bool,
    pub m: u32,
    /// The velocity grid's spacing over two (moment_slice.cu's STEP), rounded to the
    /// kernels' `real`.
    pub step: f64,
    /// The slice kernels in f64 (`KN_F64`, common.cuh): [`program_f64`](super::kernels::program_f64).
    pub f64: bool,
    /// Partner inflow starts in `bnd` and exit starts in `incident` (gpu_io::NONE: none).
    pub part_at: [u32; 6],
    pub exit_at: [u32; 6],
    /// Slices per velocity (SLOTS): 1 or 4 (config::Scheme::slices).
    pub slots: u32,
    /// The fused sweep's tile (TX, TY) and face-buffer stride (FCH); fused.rs.
    pub tile: [u32; 2],
    pub fused_stride: u32,
    /// sweep_fused's blocks per SM for `__launch_bounds__` (caps its registers).
    pub fused_min_blocks: u32,
    /// Threads per velocity of the slice sweep (SLICE_ROWS; backend::slice_rows).
    pub slice_rows: u32,
}

impl Sizes {
    pub fn of(p: &Problem, chunk_stride: usize, t: &crate::backend::gpu_io::DeviceTables) -> Self {
        let [nx, ny, nz] = p.grid.dims();
        Self {
            nx: nx as u32,
            ny: ny as u32,
            nz: nz as u32,
            chunk_stride: chunk_stride as u32,
            srow: crate::backend::gpu_tables::shape_rows(p) as u32,
            has_walls: p.bodies.solids.any(),
            m: p.vgrid.m as u32,
            step: p.vgrid.half_width / (p.vgrid.m - 1) as f64,
            f64: super::wants_f64(p),
            part_at: t.part_at,
            exit_at: t.exit_at,
            slots: p.config.solver.scheme.slices() as u32,
            tile: [8, 8],
            fused_stride: crate::backend::fused::BLOCK_VELOCITIES as u32,
            fused_min_blocks: crate::backend::fused::min_blocks([8, 8], false, None),
            slice_rows: 1,
        }
    }

    pub fn defines(&self) -> Vec<String> {
        let mut d = vec![
            format!("-DNX={}u", self.nx),
            format!("-DNY={}u", self.ny),
            format!("-DNZ={}u", self.nz),
            format!("-DCH={}u", self.chunk_stride),
            format!("-DSLOTS={}u", self.slots),
            format!("-DSROW={}u", self.srow),
            format!("-DHAS_WALLS={}", if self.has_walls { "true" } else { "false" }),
            format!("-DM={}u", self.m),
            // `{:?}` prints the shortest decimal that reads back as the same f32 (f64).
            match self.f64 {
                false => format!("-DSTEP={:?}f", self.step as f32),
                true => format!("-DSTEP={:?}", self.step),
            },
            format!("-DKN_F64={}", self.f64 as u32),
            format!("-DTX={}u", self.tile[0]),
            format!("-DTY={}u", self.tile[1]),
            format!("-DBV={}u", crate::backend::fused::BLOCK_VELOCITIES),
            format!("-DFCH={}u", self.fused_stride),
            format!("-DFUSED_MIN_BLOCKS={}", self.fused_min_blocks),
            format!("-DSLICE_ROWS={}u", self.slice_rows),
        ];
        for f in 0..6 {
            d.push(format!("-DPART{f}={}u", self.part_at[f]));
            d.push(format!("-DEXIT{f}={}u", self.exit_at[f]));
        }
        d
    }
}

/// Representative constants for compile checks: the paper's cube (large indices, one body)
/// and a small box without bodies, each in f32 and in f64 ([`program_f64`](super::kernels::program_f64)).
pub fn check_sizes() -> Vec<Sizes> {
    let f32 = vec![
        Sizes {
            nx: 191,
            ny: 181,
            nz: 181,
            chunk_stride: 110592,
            srow: 2,
            has_walls: true,
            m: 48,
            step: 4.0 / 47.0,
            f64: false,
            part_at: [u32::MAX; 6],
            exit_at: [u32::MAX; 6],
            slots: 1,
            tile: [8, 8],
            fused_stride: 262144,
            fused_min_blocks: 4,
            slice_rows: 1,
        },
        // Specular y_min and z_min (a quarter domain), with their exits.
        Sizes {
            nx: 6,
            ny: 5,
            nz: 4,
            chunk_stride: 1728,
            srow: 1,
            has_walls: false,
            m: 12,
            step: 4.0 / 11.0,
            f64: false,
            part_at: [u32::MAX, u32::MAX, 500, u32::MAX, 30000, u32::MAX],
            exit_at: [u32::MAX, u32::MAX, 200, u32::MAX, 30000, u32::MAX],
            // The second-order scheme's four slots.
            slots: 4,
            // A tile wider than the grid, and the smallest block-sized tile.
            tile: [4, 4],
            fused_stride: 128,
            fused_min_blocks: 1,
            // Rows in flight: more than the grid's five rows take two blocks of them.
            slice_rows: 4,
        },
    ];
    let f64 = f32.iter().map(|s| Sizes { f64: true, ..s.clone() }).collect::<Vec<_>>();
    f32.into_iter().chain(f64).collect()
}
