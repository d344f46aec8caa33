//! Rows in flight of the GPU slice sweeps (`SLICE_ROWS` in shaders/cuda/sweep_slice.cu,
//! `ROWS` in shaders/sweep_slice.wgsl):
//! how many threads share one velocity's slice, each sweeping one row of a block of as many
//! rows, one step behind its neighbour (a wavefront inside the slice).
//!
//! One thread per velocity leaves the GPU starved where few velocities are in flight: 32^3
//! velocities are about a third of an H200's resident threads at the f64 kernel's
//! occupancy, and each thread walks a chain of NX x NY dependent cells per z-step
//! (docs/performance.md, "The slice kernels in f64"). R rows in flight multiply the threads
//! by R and cut each chain to about (NX + R - 1) NY / R cells, for the same arithmetic per
//! cell (the same bits). R is capped where a warp's accesses would split a 32-byte sector:
//! a warp holds 32 / R velocities of a row, whose values are contiguous, so R <= the value's
//! bytes (4 in f32, 8 in f64) keeps every sector whole.

/// The most rows a velocity's threads may take: a warp's 32 threads.
pub const MAX: u32 = 32;

/// Blocks of 64 threads per SM that sweep_slice.cu's `__launch_bounds__` asks for: f32, f64.
/// Keep in sync with SWEEP_MIN_BLOCKS in shaders/cuda/sweep_slice.cu.
pub const SWEEP_MIN_BLOCKS: [usize; 2] = [18, 8];

/// `KNUDSEN_SLICE_ROWS` (a power of two, 1 to [`MAX`]), for experiments; None when unset.
pub fn from_env() -> Result<Option<u32>, String> {
    match std::env::var("KNUDSEN_SLICE_ROWS") {
        Err(_) => Ok(None),
        Ok(s) => match s.trim().parse::<u32>() {
            Ok(r) if r.is_power_of_two() && r <= MAX => Ok(Some(r)),
            _ => Err(format!("KNUDSEN_SLICE_ROWS={s}: expected a power of two from 1 to {MAX}")),
        },
    }
}

/// The threads of one wave of CUDA's sweep_slice on `sms` multiprocessors, each holding at
/// most `blocks_per_sm` blocks and `threads_per_sm` threads: its `__launch_bounds__` blocks
/// of 64 threads, or fewer where the SM holds fewer (16 blocks on sm_86/87, 1024 threads on
/// sm_75). Registers may leave room for more blocks than the launch bounds ask, so on a
/// device that holds them all this counts low.
pub fn cuda_wave(sms: usize, blocks_per_sm: usize, threads_per_sm: usize, f64: bool) -> usize {
    let blocks = SWEEP_MIN_BLOCKS[usize::from(f64)].min(blocks_per_sm).min(threads_per_sm / 64);
    64 * blocks.max(1) * sms.max(1)
}

/// The invocations the wgpu rule fills: wgpu tells no multiprocessor count, so this is what
/// measured best on an H200 through Vulkan (docs/performance.md, "Rows in flight": 4 rows
/// for 32^3 velocities in f32 and in f64, 131072 invocations, where 8 rows, 262144, were
/// slower in f64; 1 row for 64^3 velocities). A GPU that holds fewer threads at once may
/// be slower with the rows this asks for than with one: past one wave, rows cost the
/// H200's CUDA sweep 21-86% (64^3 velocities). Only discrete GPUs get rows from the rule
/// (wgpu/build.rs); `KNUDSEN_SLICE_ROWS` sets them elsewhere.
pub const WGPU_WAVE: usize = 131072;

/// The rows for launches of up to `velocities` velocities, given `wave` threads in one wave
/// of resident blocks, `value_bytes` per value (4 or 8) and `ny` rows in a slice: the most
/// that keep the threads within one wave (measured best on an H200: beyond one wave the
/// extra threads only queue, and their scattered cell loads cost more than the shorter
/// chains gain; docs/performance.md, "Rows in flight"), at most the value's bytes (whole
/// sectors) and no more than the slice's rows; 1 where the velocities alone fill half a
/// wave.
pub fn choose(velocities: usize, wave: usize, value_bytes: usize, ny: usize) -> u32 {
    let cap = value_bytes.min(MAX as usize).min(ny.max(1)) as u32;
    let mut rows = 1u32;
    while rows * 2 <= cap && velocities * (rows as usize) * 2 <= wave {
        rows *= 2;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::{choose, cuda_wave, SWEEP_MIN_BLOCKS};

    #[test]
    fn rows_fill_one_wave_of_the_kernels_blocks() {
        // The H200's measured best (132 SMs; docs/performance.md, "Rows in flight"):
        // 32^3 velocities in f32 (a wave: 152064 threads): four rows.
        assert_eq!(choose(32768, cuda_wave(132, 32, 2048, false), 4, 32), 4);
        // In f64 (a wave: 67584 threads): two; half as many velocities a launch: four.
        assert_eq!(choose(32768, cuda_wave(132, 32, 2048, true), 8, 32), 2);
        assert_eq!(choose(16384, cuda_wave(132, 32, 2048, true), 8, 64), 4);
        // 64^3 velocities fill 1.7 waves alone: one row.
        assert_eq!(choose(262144, cuda_wave(132, 32, 2048, false), 4, 64), 1);
        // Few velocities: the sector cap (4 in f32, 8 in f64), and never more rows than the
        // slice has.
        assert_eq!(choose(100, cuda_wave(132, 32, 2048, false), 4, 64), 4);
        assert_eq!(choose(100, cuda_wave(132, 32, 2048, true), 8, 64), 8);
        assert_eq!(choose(100, cuda_wave(132, 32, 2048, true), 8, 3), 2);
        assert_eq!(choose(100, cuda_wave(132, 32, 2048, true), 8, 1), 1);
        // wgpu on an H200: four rows for 32^3 velocities in f32 and f64, one for 64^3.
        assert_eq!(choose(32768, super::WGPU_WAVE, 4, 32), 4);
        assert_eq!(choose(32768, super::WGPU_WAVE, 8, 64), 4);
        assert_eq!(choose(262144, super::WGPU_WAVE, 4, 64), 1);
        // An SM of 1024 threads (sm_75), or of 16 blocks (sm_86), caps the f32 wave below 18
        // blocks of 64; f64's 8 fit both.
        assert_eq!(cuda_wave(40, 16, 1024, false), 1024 * 40);
        assert_eq!(cuda_wave(84, 16, 1536, false), 1024 * 84);
        assert_eq!(cuda_wave(84, 16, 1536, true), 512 * 84);
    }

    /// The launch bounds the rule counts are the kernel's: f64's under `#if KN_F64`, then
    /// f32's under `#else`.
    #[test]
    fn sweep_min_blocks_match_the_kernel() {
        let cu = include_str!("../../shaders/cuda/sweep_slice.cu");
        let at = |blocks: usize| cu.find(&format!("#define SWEEP_MIN_BLOCKS {blocks}\n"));
        let (f32_at, f64_at) = (at(SWEEP_MIN_BLOCKS[0]), at(SWEEP_MIN_BLOCKS[1]));
        assert!(f64_at.is_some() && f32_at.is_some() && f64_at < f32_at, "sweep_slice.cu's SWEEP_MIN_BLOCKS differ");
    }
}
