//! The copy bandwidth `knudsen bench` divides by: how fast this machine moves bytes when it
//! does nothing else. A sweep moves at least its slices' bytes once in and once out, so the
//! bytes it must move over this bandwidth is the floor of its time (`docs/benchmarks.md`).

use rayon::prelude::*;
use std::time::Instant;

/// Bytes per buffer of the host copy: far beyond any cache, small beside host memory.
const HOST_COPY_BYTES: usize = 512 << 20;
/// Timed repetitions after one untimed one (which also faults the pages in).
pub const REPEATS: usize = 5;
/// The GPUs time [`REPEATS`] copies in one submission, this many times, and keep the fastest:
/// one round in the first process on a fresh H100 machine measured wgpu's copy at 1589 GB/s,
/// against 2777 GB/s in the next process (docs/benchmarks.md, 2026-11-26), and the floor a
/// bench row is held against should not depend on such a hiccup.
pub const ROUNDS: usize = 3;

/// Host memory, all threads of rayon's pool each copying a contiguous part: bytes read plus
/// bytes written per second, the best of [`REPEATS`].
pub fn host_copy_bandwidth() -> f64 {
    let n = HOST_COPY_BYTES / 8;
    let src: Vec<f64> = (0..n).into_par_iter().map(|i| i as f64).collect();
    let mut dst = vec![0.0f64; n];
    let chunk = n.div_ceil(rayon::current_num_threads()).max(1);
    let mut best = f64::INFINITY;
    for r in 0..=REPEATS {
        let t0 = Instant::now();
        dst.par_chunks_mut(chunk).zip(src.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s));
        let dt = t0.elapsed().as_secs_f64();
        if r > 0 {
            best = best.min(dt);
        }
    }
    // Keep the copy observable.
    assert_eq!(dst[n - 1], (n - 1) as f64);
    2.0 * HOST_COPY_BYTES as f64 / best
}
