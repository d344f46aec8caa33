//! The fused on-chip sweep's plan (shaders/cuda/sweep_fused.cu): which cases it runs, its
//! tiles, and how the velocities are packed into blocks and waves. A pure function of the
//! problem's sizes, tested here without a GPU.
//!
//! The fused kernel sweeps a velocity through a TX x TY column of cells over all z, its
//! z-carry on chip (registers on wgpu, shared memory on CUDA), so no slice lives in device
//! memory. The tile's x- and y-inflows
//! come from *face buffers* written by the upwind neighbour tiles (launched one tile
//! diagonal a + b earlier, in the velocity's own upwind frame), and the moments are reduced
//! over the block's velocities on chip into one partial per (block, cell). Device memory
//! per velocity: the face buffers, (NX + NY) NZ values, against NX NY for a slice; per point
//! swept, 2 (TX + TY) / (TX TY) x 4 bytes of face traffic (2 B at 8 x 8) against 8 B.
//!
//! A block holds BV velocities of one octant (GHOST-padded), so its threads walk the same
//! cells in the same order: the cell coefficients are broadcast loads and the on-chip
//! reduction sums one cell across the block.

use super::wgpu::schedule::GHOST;
use crate::plan::PlanError;
use crate::problem::Problem;

/// Velocities per block: 4 warps. Keep in sync with BV's use in sweep_fused.cu (passed as
/// a -D constant; the kernel's shared memory is BV x (TX TY + 1) floats).
pub const BLOCK_VELOCITIES: usize = 128;
/// Moment partials per (block, cell): the 13 raw moments (under first order the face fluxes
/// follow from the momentum sums, as a block never mixes signs).
pub const PARTIALS: usize = 13;
/// Partials the second-order scheme adds per (block, cell): the face fluxes sum_v w xi_d F_d
/// of the emitted face values F_d, d = x, y, z (which differ from the cell values there).
pub const FACE_PARTIALS: usize = 3;

/// Grids of fewer cells add their partials with one thread per cell and moment
/// (`fused_moments_split`), larger ones with one per cell (`fused_moments`); the sums are
/// the same, term for term. Measured on the H100 (`tests/device/fused_moments.sh`,
/// docs/performance.md): per cell and moment 10% faster per sweep at 32^3 cells, where one
/// thread per cell leaves ~8 warps per SM; 1-3.5% slower at 64^3, where one per cell already
/// fills it and keeps thirteen loads in flight per thread. Sizes in between are not measured.
pub const SPLIT_MOMENTS_BELOW_CELLS: usize = 1 << 17;

/// Moments each fused_moments thread adds: 1 or [`PARTIALS`] ([`SPLIT_MOMENTS_BELOW_CELLS`];
/// `KNUDSEN_FUSED_MOMENTS=split|cell` forces one, to compare them on one grid).
pub fn moments_per_thread(cells: usize) -> usize {
    match std::env::var("KNUDSEN_FUSED_MOMENTS").as_deref() {
        Ok("split") => 1,
        Ok("cell") => PARTIALS,
        _ if cells < SPLIT_MOMENTS_BELOW_CELLS => 1,
        _ => PARTIALS,
    }
}

/// Which sweep kernel a GPU backend runs, when asked for one (`KNUDSEN_SWEEP=slices|fused`,
/// or the wgpu backend's options); unasked, the fused kernel wherever it applies and fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepKernel {
    Slices,
    Fused,
}

/// `KNUDSEN_SWEEP`, if set.
pub fn sweep_from_env() -> Result<Option<SweepKernel>, String> {
    match std::env::var("KNUDSEN_SWEEP").ok().as_deref() {
        None => Ok(None),
        Some("slices") => Ok(Some(SweepKernel::Slices)),
        Some("fused") => Ok(Some(SweepKernel::Fused)),
        Some(other) => Err(format!("KNUDSEN_SWEEP={other}: expected `fused` or `slices`")),
    }
}

/// Why a case cannot use the fused kernels, WGSL or CUDA (None: it can): either scheme,
/// but the second-order one only without bodies (its wall loads would need the emitted face
/// values' momentum and energy sums, which its partials do not carry). First order runs with
/// any faces and bodies (wall words in the sweep, wall loads from the moments; partner
/// inflows at the tiles on the domain's faces, exits at its far faces).
pub fn ineligible(p: &Problem) -> Option<String> {
    if p.config.solver.scheme.slices() != 1 && p.bodies.solids.any() {
        return Some("the second-order fused sweep has no wall paths for bodies".into());
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
pub struct FusedWave {
    /// Global velocity indices, each octant's members padded with GHOST to whole blocks.
    pub velocities: Vec<u32>,
    /// Per octant (Octant bits: x | y << 1 | z << 2), its blocks [start, end) in this wave.
    pub ranges: [u32; 16],
}

impl FusedWave {
    pub fn blocks(&self) -> usize {
        self.velocities.len() / BLOCK_VELOCITIES
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FusedPlan {
    pub tile: [usize; 2],
    /// The second-order scheme: three face values per face cell (the outflow and the two
    /// the limiter reads beside it) and [`FACE_PARTIALS`] more partials per cell.
    pub second: bool,
    pub waves: Vec<FusedWave>,
    /// Velocity stride of the face buffers: the largest wave.
    pub stride: usize,
    pub dims: [usize; 3],
    /// Moments each fused_moments thread adds ([`moments_per_thread`]).
    pub moments_per_thread: usize,
}

impl FusedPlan {
    /// Tiles along x and y.
    pub fn tiles(&self) -> [usize; 2] {
        [self.dims[0].div_ceil(self.tile[0]), self.dims[1].div_ceil(self.tile[1])]
    }

    /// Tile diagonals a + b = d, one launch each per wave; and the first tile column of d.
    pub fn diagonals(&self) -> usize {
        let [tx, ty] = self.tiles();
        tx + ty - 1
    }

    /// The tile columns a of diagonal d: a_lo..=a_hi (b = d - a).
    pub fn diagonal(&self, d: usize) -> (usize, usize) {
        let [tx, ty] = self.tiles();
        (d.saturating_sub(ty - 1), d.min(tx - 1))
    }

    pub fn max_diagonal_tiles(&self) -> usize {
        (0..self.diagonals()).map(|d| self.diagonal(d).1 - self.diagonal(d).0 + 1).max().unwrap_or(0)
    }

    /// Values per face cell and velocity in the face buffers: the outflow, and under second
    /// order the cell's two other face values (the downwind tile's limiter reads them).
    pub fn face_planes(&self) -> usize {
        if self.second {
            3
        } else {
            1
        }
    }

    /// Partials per (block, cell): keep in sync with NPART in sweep_fused.cu.
    pub fn partials(&self) -> usize {
        PARTIALS + if self.second { FACE_PARTIALS } else { 0 }
    }

    /// Floats of the x- and y-face buffers.
    pub fn face_floats(&self) -> [usize; 2] {
        let [nx, ny, nz] = self.dims;
        let q = self.face_planes();
        [q * nz * ny * self.stride, q * nz * nx * self.stride]
    }

    /// Floats of the moment partials of one launch (the largest diagonal).
    pub fn partial_floats(&self) -> usize {
        let blocks = self.stride / BLOCK_VELOCITIES;
        self.max_diagonal_tiles() * blocks * self.dims[2] * self.partials() * self.tile[0] * self.tile[1]
    }

    /// Device-memory bytes moved per phase-space point and sweep: each face value between
    /// tiles written once and read once (2 (TX + TY) / (TX TY) x 4 B per plane), and each
    /// block's 13 (second order: 16) partials per cell written once and read once
    /// (2 x 13 x 4 / BV B). The slice kernels' count is 8 B (src/bench.rs).
    pub fn traffic_per_point(&self) -> f64 {
        let [tx, ty] = self.tile;
        (8 * self.face_planes() * (tx + ty)) as f64 / (tx * ty) as f64
            + (8 * self.partials()) as f64 / BLOCK_VELOCITIES as f64
    }

    /// Device bytes of the face buffers and partials: what replaces the slices.
    pub fn bytes(&self) -> u64 {
        let [x, y] = self.face_floats();
        4 * (x + y + self.partial_floats()) as u64
    }
}

/// Dynamic shared memory of a sweep_fused block: the reduction array, BV x (TX TY + 1)
/// floats, then the shares' sums, (BV / (TX TY) - 1) x NPART x TX TY floats, then under
/// second order the face values' z-carry, 3 x BV x (TX TY + 1) floats. Keep in sync with
/// `red`, `shares` and `outs` in sweep_fused_march.cu.
pub fn shared_bytes(tile: [usize; 2], second: bool) -> u32 {
    let (n, bv) = (tile[0] * tile[1], BLOCK_VELOCITIES);
    // Second order: the z-carried face values, then the inflows' two halves (this level's
    // and the next's; under first order they are a static array of one half).
    let (npart, carry) = if second {
        (PARTIALS + FACE_PARTIALS, 3 * bv * (n + 1) + 2 * 3 * (tile[0] + tile[1]) * bv)
    } else {
        (PARTIALS, 0)
    };
    ((bv * (n + 1) + (bv / n - 1) * npart * n + carry) * 4) as u32
}

/// Shared memory of one sweep_fused block with `tile`: the static arrays (xs, wpow, runs,
/// part_runs, coef, words, inv_w, fin, walls_at) and [`shared_bytes`]. Keep in sync with
/// sweep_fused_march.cu.
pub fn block_shared_bytes(tile: [usize; 2], second: bool) -> u32 {
    let (n, bv) = (tile[0] * tile[1], BLOCK_VELOCITIES);
    let parts = bv / n;
    let flags = 4 * 2;
    let words = 4 * 2 * n;
    let fixed = 16 * bv
        + 16 * bv
        + 4 * (bv + parts + 1)
        + 4 * (parts + 1)
        + 16 * 2 * 3 * n
        + words
        + 4 * (tile[0] + tile[1])
        + flags;
    let fin = if second { 0 } else { 4 * (tile[0] + tile[1]) * bv };
    (fixed + fin) as u32 + shared_bytes(tile, second)
}

/// Resident blocks per SM that sweep_fused's `__launch_bounds__` asks for, which caps its
/// registers at 65536 / (128 x n): `KNUDSEN_FUSED_MIN_BLOCKS` (1-16) for experiments, else
/// the measured best on an H100/H200 (docs/performance.md, "v7"): 4, at 128 registers, with
/// the z-carry in shared memory (5 or 6 with 8 x 4 tiles, or 2 and 3, were slower); fewer
/// where `sm_shared` (the SM's shared memory, bytes) holds fewer blocks of `tile`, as there
/// a tighter register cap would only add spills.
pub fn min_blocks(tile: [usize; 2], second: bool, sm_shared: Option<u32>) -> u32 {
    let asked = std::env::var("KNUDSEN_FUSED_MIN_BLOCKS").ok().and_then(|s| s.parse().ok());
    if let Some(n) = asked.filter(|n| (1..=16).contains(n)) {
        return n;
    }
    // The driver keeps 1 KiB per resident block (sm_80 and later).
    let fit = sm_shared.map_or(4, |s| s / (block_shared_bytes(tile, second) + 1024));
    fit.clamp(1, 4)
}

/// What a GPU backend runs: the plan `fused` makes, unless `asked` (else `KNUDSEN_SWEEP`)
/// asks for the slice kernels; the reason is kept where the slice kernels run. Asking for
/// the fused kernel on a case it cannot run is an error.
pub fn decide(
    asked: Option<SweepKernel>,
    fused: impl FnOnce() -> Result<FusedPlan, String>,
) -> anyhow::Result<Result<FusedPlan, String>> {
    let forced = match asked {
        Some(k) => Some(k),
        None => sweep_from_env().map_err(anyhow::Error::msg)?,
    };
    if forced == Some(SweepKernel::Slices) {
        return Ok(Err("the slice kernels were asked for".into()));
    }
    let plan = fused();
    if let (Err(why), Some(SweepKernel::Fused)) = (&plan, forced) {
        anyhow::bail!("the fused sweep was asked for, but this case cannot use it: {why}");
    }
    Ok(plan)
}

/// The CUDA backend's plan with `tile` (no binding limit), or why not; `capability`, the
/// device's compute capability where known (its shared memory, over 48 KiB per block, needs
/// 7.0 or later), and `block_shared`, the most shared memory a block may have there (64 KiB
/// on sm_75, which a second-order block of 4 x 4 passes).
pub fn cuda_plan(
    p: &Problem,
    budget: u64,
    tile: [usize; 2],
    capability: Option<(i32, i32)>,
    block_shared: Option<u32>,
) -> Result<FusedPlan, String> {
    // The fused sweep is f32 only; f64 sweeps take the slice kernels (cuda/real.rs).
    if p.config.solver.names_f64() {
        return Err("solver.precision \"f64\": the f64 slice kernels".into());
    }
    if let Some(why) = ineligible(p) {
        return Err(why);
    }
    if let Some((major, minor)) = capability.filter(|c| c.0 < 7) {
        return Err(format!("compute capability {major}.{minor} (7.0 or later needed)"));
    }
    let second = p.config.solver.scheme.slices() > 1;
    let need = block_shared_bytes(tile, second);
    if let Some(max) = block_shared.filter(|&m| need > m) {
        return Err(format!(
            "a block of {}x{} tiles needs {need} B of shared memory; the device allows {max} B",
            tile[0], tile[1]
        ));
    }
    plan(&p.vgrid.octant_members(), p.grid.dims(), tile, second, budget, FusedLimits::CUDA).map_err(|PlanError(e)| e)
}

/// The CUDA backend's tile: `KNUDSEN_FUSED_TILE` if set, else 8 x 8 under first order and
/// 4 x 4 under second, whose three z-carried face values per cell and velocity would hold
/// a block of 8 x 8 alone on an SM: measured on an H100, 4 x 4 was the fastest of 4 x 4,
/// 2 x 8, 8 x 4, 4 x 8 and 8 x 8 (1.13 s per sweep at 64^3 x 64^3 against 1.62-2.48;
/// docs/performance.md, "The fused second-order sweep").
pub fn cuda_tile(p: &Problem) -> Result<[usize; 2], PlanError> {
    match std::env::var("KNUDSEN_FUSED_TILE") {
        Ok(_) => tile_from_env(p.config.solver.scheme.slices() > 1),
        Err(_) if p.config.solver.scheme.slices() > 1 => Ok([4, 4]),
        Err(_) => Ok([8, 8]),
    }
}

/// One line on what a backend runs (logs and `knudsen check`).
pub fn describe_choice(choice: Result<&FusedPlan, &str>) -> String {
    match choice {
        Ok(f) => describe(f),
        Err(why) => format!("slices in device memory (the fused kernel does not apply: {why})"),
    }
}

/// One line on a plan: tiles, waves, launches, storage (logs and `knudsen check`).
pub fn describe(f: &FusedPlan) -> String {
    format!(
        "fused on-chip sweep{}, {}x{} tiles, {} wave(s) of up to {} velocities, {} launches per wave, face buffers and partials {:.1} MiB",
        if f.second { " (second order)" } else { "" },
        f.tile[0],
        f.tile[1],
        f.waves.len(),
        f.stride,
        2 * f.diagonals(),
        f.bytes() as f64 / 1048576.0
    )
}

/// Whether the kernels can use a tile under first order (`second` false) or second: TX TY
/// divides the block (sweep_fused.cu asserts it too), and under first order the shares of a
/// cell's partials, all BV / (TX TY) of them, 13 values each, fit in sweep_fused.wgsl's
/// reduction array of BV x (TX TY + 1) floats, which holds for TX TY >= 16
/// (sweep_fused2.wgsl adds them in passes, and sweep_fused.cu keeps them in an array of
/// their own).
pub fn tile_fits(t: [usize; 2], second: bool) -> bool {
    let (n, bv) = (t[0] * t[1], BLOCK_VELOCITIES);
    n > 0 && bv % n == 0 && (second || PARTIALS * bv <= bv * (n + 1))
}

/// The tile: 8 x 8 (2 B of face traffic per point; CUDA's; wgpu picks its own) unless
/// `KNUDSEN_FUSED_TILE=TXxTY` asks otherwise (for experiments; see [`tile_fits`]).
pub fn tile_from_env(second: bool) -> Result<[usize; 2], PlanError> {
    let Ok(s) = std::env::var("KNUDSEN_FUSED_TILE") else { return Ok([8, 8]) };
    let parse = |t: &str| t.trim().parse::<usize>().ok().filter(|&n| n > 0);
    match s.split_once('x').map(|(a, b)| (parse(a), parse(b))) {
        Some((Some(a), Some(b))) if tile_fits([a, b], second) => Ok([a, b]),
        _ => Err(PlanError(format!(
            "KNUDSEN_FUSED_TILE={s}: expected TXxTY with TX TY a divisor of {BLOCK_VELOCITIES}{}, e.g. 8x8",
            if second { "" } else { " of at least 16" }
        ))),
    }
}

/// What the device allows one buffer and one launch (wgpu: its binding size and grid;
/// CUDA: no binding limit, 64-bit face indices).
#[derive(Debug, Clone, Copy)]
pub struct FusedLimits {
    /// Bytes of one face buffer or of the partials.
    pub max_binding: u64,
    /// Blocks along a launch's x (one wave).
    pub max_blocks: usize,
}

impl FusedLimits {
    pub const CUDA: FusedLimits = FusedLimits { max_binding: u64::MAX, max_blocks: i32::MAX as usize };
}

/// Pack the octants' velocities into blocks of BLOCK_VELOCITIES and the blocks into waves
/// whose face buffers and partials fit `budget_bytes` and `limits`.
pub fn plan(
    octants: &[Vec<u32>; 8],
    dims: [usize; 3],
    tile: [usize; 2],
    second: bool,
    budget_bytes: u64,
    limits: FusedLimits,
) -> Result<FusedPlan, PlanError> {
    assert!(tile_fits(tile, second), "tile {tile:?} does not fit the block");
    let bv = BLOCK_VELOCITIES;
    let blocks: Vec<(usize, Vec<u32>)> = octants
        .iter()
        .enumerate()
        .flat_map(|(o, vs)| {
            vs.chunks(bv).map(move |c| (o, c.iter().copied().chain(std::iter::repeat(GHOST)).take(bv).collect()))
        })
        .collect();
    let probe =
        |stride: usize| FusedPlan { tile, second, waves: Vec::new(), stride, dims, moments_per_thread: PARTIALS };
    let per_block = probe(bv).bytes();
    let fit = (budget_bytes / per_block) as usize;
    if fit == 0 {
        return Err(PlanError(format!(
            "memory budget of {budget_bytes} bytes is below the {per_block} bytes one block of {bv} velocities needs in the fused sweep"
        )));
    }
    // Each face buffer and the partials within one binding.
    let one = probe(bv);
    let [fx, fy] = one.face_floats();
    let largest = 4 * fx.max(fy).max(one.partial_floats()) as u64;
    let per_wave = fit.min(limits.max_blocks).min((limits.max_binding / largest) as usize);
    if per_wave == 0 {
        return Err(PlanError(format!(
            "one block of {bv} velocities needs {largest} bytes in one buffer; the device allows {}",
            limits.max_binding
        )));
    }
    // Waves of near-equal size: a small last wave would cost as many launches as a full one.
    let n_waves = blocks.len().div_ceil(per_wave).max(1);
    let size = blocks.len().div_ceil(n_waves).max(1);
    let mut waves = Vec::new();
    for group in blocks.chunks(size) {
        let mut ranges = [0u32; 16];
        let mut velocities = Vec::with_capacity(group.len() * bv);
        for (n, (o, vs)) in group.iter().enumerate() {
            if ranges[2 * o] == ranges[2 * o + 1] {
                ranges[2 * o] = n as u32;
            }
            ranges[2 * o + 1] = n as u32 + 1;
            velocities.extend_from_slice(vs);
        }
        waves.push(FusedWave { velocities, ranges });
    }
    let stride = waves.iter().map(|w| w.velocities.len()).max().unwrap_or(bv);
    Ok(FusedPlan { tile, second, waves, stride, dims, moments_per_thread: moments_per_thread(dims.iter().product()) })
}

#[cfg(test)]
#[path = "fused_tests.rs"]
mod tests;
