//! Dispatch groups: the chunks of a wave that one dispatch of each kernel covers, each
//! chunk in its own slice binding.
//!
//! A binding holds at most 2 GiB on Vulkan, so a large wave is cut into chunks. Dispatched
//! one after another, each chunk of a large case left most of the GPU idle: the paper cube's
//! 110592 velocities in flight became 8 dispatches of ~14000 velocities, and wgpu ran it at a
//! fifth of CUDA's speed (docs/performance.md). A group binds up to `width` chunks side by
//! side, so one dispatch sweeps all of them; the kernels pick a velocity's binding with a
//! switch that is uniform across a warp (shaders.rs, `slice_bindings`).
//!
//! Within a group, velocity slot `u` lives in chunk `u / CH` at slot `u % CH`; every chunk
//! but the last is padded to CH slots with GHOSTs, so the group's +z velocities still come
//! before its -z ones and the kernels see one `count` and one `split`.

/// A padding slot that completes a batch's last quad: swept like a velocity of its batch's
/// octant but with zero weight and no inflow, so it adds nothing to any sum.
pub const GHOST: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Global velocity indices, each batch padded to whole quads with GHOST: the +z ones,
    /// then the -z ones.
    pub velocities: Vec<u32>,
    pub split: usize,
}

/// Storage buffers every kernel binds besides its slices (shaders.rs).
pub const FIXED_STORAGE_BUFFERS: u32 = 3;
/// The most slice bindings one kernel declares: the switch that picks one grows with them.
pub const MAX_SLICE_BINDINGS: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Index of the group's first chunk in its wave.
    pub first: usize,
    /// Chunks in the group: bindings `0..chunks` of the group's kernels.
    pub chunks: usize,
    /// Velocity slots the kernels run over: CH per chunk but the last, which runs its own
    /// length.
    pub count: usize,
    /// Slots [0, split) move along +z, [split, count) along -z.
    pub split: usize,
}

/// Slice bindings per kernel the adapter allows: its storage buffers per stage less the
/// kernels' fixed ones, at most [`MAX_SLICE_BINDINGS`]; `KNUDSEN_SLICE_BINDINGS` lowers it (a
/// diagnostic: 1 dispatches every chunk on its own, as before groups).
pub fn width(max_storage_buffers_per_stage: u32) -> usize {
    let adapter = max_storage_buffers_per_stage.saturating_sub(FIXED_STORAGE_BUFFERS).max(1) as usize;
    let env = std::env::var("KNUDSEN_SLICE_BINDINGS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 0);
    adapter.min(MAX_SLICE_BINDINGS).min(env.unwrap_or(usize::MAX))
}

/// Cut a wave's chunks into groups of at most `width`, as even as possible.
pub fn groups(chunks: &[Chunk], stride: usize, width: usize) -> Vec<Group> {
    let n = chunks.len().div_ceil(width.max(1));
    let per = chunks.len().div_ceil(n.max(1));
    (0..chunks.len())
        .step_by(per.max(1))
        .map(|first| {
            let members = &chunks[first..(first + per).min(chunks.len())];
            let last = members.len() - 1;
            let count = last * stride + members[last].velocities.len();
            // The first chunk that holds -z velocities places the split; chunks before it
            // are all +z (their padding too), chunks after it all -z.
            let split = members
                .iter()
                .enumerate()
                .find(|(_, c)| c.split < c.velocities.len())
                .map_or(count, |(n, c)| n * stride + c.split);
            Group { first, chunks: members.len(), count, split }
        })
        .collect()
}

/// The group's velocities by slot: its chunks', each but the last padded to `stride`.
pub fn velocities(chunks: &[Chunk], g: &Group, stride: usize) -> Vec<u32> {
    let members = &chunks[g.first..g.first + g.chunks];
    let mut out = Vec::with_capacity(g.count);
    for (n, c) in members.iter().enumerate() {
        out.extend_from_slice(&c.velocities);
        if n + 1 < members.len() {
            out.resize(out.len() + stride - c.velocities.len(), GHOST);
        }
    }
    debug_assert_eq!(out.len(), g.count);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(up: usize, down: usize) -> Chunk {
        Chunk { velocities: (0..(up + down) as u32).collect(), split: up }
    }

    #[test]
    fn groups_cover_every_chunk_once_and_place_the_split() {
        // Five chunks: two all +z, one mixed, two all -z; stride 16.
        let chunks = [chunk(16, 0), chunk(16, 0), chunk(8, 4), chunk(0, 16), chunk(0, 8)];
        for width in 1..=6 {
            let gs = groups(&chunks, 16, width);
            assert!(gs.iter().all(|g| g.chunks <= width && g.chunks > 0));
            let covered: Vec<usize> = gs.iter().flat_map(|g| g.first..g.first + g.chunks).collect();
            assert_eq!(covered, (0..5).collect::<Vec<_>>(), "width {width}");
            for g in &gs {
                let v = velocities(&chunks, g, 16);
                assert_eq!(v.len(), g.count);
                // Every real slot before the split is a +z velocity of its chunk, every one
                // after it a -z one.
                for (u, &x) in v.iter().enumerate().filter(|(_, &x)| x != GHOST) {
                    let c = &chunks[g.first + u / 16];
                    assert_eq!(u < g.split, (x as usize) < c.split, "width {width}, slot {u}");
                }
            }
        }
        let one = groups(&chunks, 16, 8);
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].count, one[0].split), (4 * 16 + 8, 2 * 16 + 8));
        // Even groups: 5 chunks in bindings of 4 become 3 + 2, not 4 + 1.
        assert_eq!(groups(&chunks, 16, 4).iter().map(|g| g.chunks).collect::<Vec<_>>(), [3, 2]);
    }

    #[test]
    fn width_follows_the_adapter() {
        assert_eq!(width(4), 1, "wgpu's downlevel minimum leaves one slice binding");
        assert_eq!(width(8), 5);
        assert_eq!(width(1 << 20), MAX_SLICE_BINDINGS);
    }
}
