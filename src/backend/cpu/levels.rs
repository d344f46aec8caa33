//! The z-march of one batch with each level's stages beside the next level's sweep.
//!
//! Every group of velocities keeps two slices: level `step` is swept into half `step % 2`
//! of the batch's storage from the z-upwind values in the other half, so the moment, face and
//! wall stages of the level before, which only read that other half, run beside it
//! (`rayon::join`), and idle threads of either take the other's tasks. Done one after the
//! other, each level waited at two joins for the slowest core, and on hosts whose cores
//! differ in speed under load that wait was the parallel loss (docs/performance.md, "The
//! moments beside the next level's sweep"). The arithmetic and the order of every sum are
//! those of the sequential form. First order only: the second-order sweep overwrites its
//! stored face values in place.

/// March `nz` levels over `store` (two halves of equal length): `sweep(step, prev, cur)`
/// sweeps level `step` into `cur` from `prev` (the level before; unused at step 0), and
/// `stages(step, values)` takes a swept level's values. Returns the seconds of the levels
/// and of the last level's stages, for the debug log.
pub fn march<T: Send + Sync>(
    nz: usize,
    store: &mut [T],
    sweep: impl Fn(usize, &[T], &mut [T]) + Sync,
    mut stages: impl FnMut(usize, &[T]) + Send,
) -> (f64, f64) {
    let half = store.len() / 2;
    let (h0, h1) = store.split_at_mut(half);
    let mut halves = [h0, h1];
    let mut t_levels = 0.0;
    for step in 0..nz {
        let t0 = std::time::Instant::now();
        let [a, b] = &mut halves;
        let (cur, prev) = if step % 2 == 0 { (a, &**b) } else { (b, &**a) };
        if step == 0 {
            sweep(step, prev, cur);
        } else {
            rayon::join(|| stages(step - 1, prev), || sweep(step, prev, cur));
        }
        t_levels += t0.elapsed().as_secs_f64();
    }
    let t0 = std::time::Instant::now();
    if nz > 0 {
        stages(nz - 1, &*halves[(nz - 1) % 2]);
    }
    (t_levels, t0.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_reads_the_one_before_and_every_level_reaches_the_stages_in_order() {
        // A running sum down the levels: level s holds s + (level s - 1) per entry, so a
        // level read from the wrong half or a stage given the wrong half shows in the sums.
        for nz in [1, 2, 5] {
            let mut store = vec![0u64; 2 * 64];
            let mut seen = Vec::new();
            march(
                nz,
                &mut store,
                |step, prev, cur| {
                    for (c, p) in cur.iter_mut().zip(prev) {
                        *c = step as u64 + if step == 0 { 0 } else { *p };
                    }
                },
                |step, values| seen.push((step, values[0], values[63])),
            );
            let expect: Vec<_> = (0..nz).map(|s| (s, (s * (s + 1) / 2) as u64, (s * (s + 1) / 2) as u64)).collect();
            assert_eq!(seen, expect, "nz {nz}");
        }
    }
}
