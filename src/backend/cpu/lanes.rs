//! The CPU backend in f32 (`solver.precision = "f32"`): the first-order sweep vectorised
//! over velocities.
//!
//! A batch's velocities (one octant) are grouped [`L`] at a time; a group's slice storage is
//! `[j][i][lane]`. All lanes of a group walk the cells in the same upwind order (their
//! octant's), so one cell's update for `L` velocities is a loop over `L` contiguous values
//! with no branch, which LLVM turns into SIMD instructions (std::simd is unstable; fixed-size
//! arrays are what it vectorises reliably). f^S takes its Maxwellian factor from per-cell 1D
//! Gaussian tables in f32, laid out `[cell][axis][node]` so that a cell's rows sit together.
//!
//! Exact as the f64 path (`mod.rs`) in everything but the precision of f: the face inflows,
//! the wall words of bodies (per lane, through [`SliceContext`]), the face fluxes, exits and
//! wall loads (the f64 path's stages, reading this layout through [`LaneSlots`]). Moments
//! are summed lane by lane over blocks of up to 32 groups in f32, then over the lanes and
//! the blocks in f64: the f64 sums keep the round-off of the cancelling momentum sums at
//! the level of f's own.

use super::context::SliceContext;
pub use super::lane_tables::LaneTables;
use crate::backend::{SweepInput, SweepOutput};
use crate::grid::solid::SOLID_BIT;
use crate::model::NRAW;
use crate::plan::{Batch, BatchPlan};
use crate::problem::Problem;
use rayon::prelude::*;

/// Velocities per group: eight f32, one AVX register (two SSE ones).
pub const L: usize = 8;

/// Run `$body` (a call of an `#[inline(always)]` function) compiled for AVX2 with FMA when
/// the CPU has them, else for the baseline x86-64 (SSE2) or the target's own instruction set.
/// Release binaries are built for the baseline, so the wide lanes would otherwise go unused.
/// The two paths give the same bits: Rust never contracts `a * b + c` into an FMA, so they
/// differ only in register width.
macro_rules! simd {
    ($body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn wide<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                // Built outside the unsafe block, so `$body` gets no unsafe rights from it.
                let body = || $body;
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                unsafe { wide(body) }
            } else {
                $body
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $body
        }
    }};
}

/// A batch's velocities in groups of [`L`]; `None` pads the last group (a lane with no
/// velocity: zero speed, zero weight).
pub fn groups(batch: &Batch) -> Vec<[Option<u32>; L]> {
    batch.velocities.chunks(L).map(|c| std::array::from_fn(|l| c.get(l).copied())).collect()
}

/// Sweep group `g` over z-slice `k` into `f` (one slice of `[j][i][lane]`), reading the
/// z-upwind values from `prev`, the group's previous slice (unused for the `first` slice of
/// its sweep, which takes the face's inflow). The f64 path's `sweep_slice`, lane by lane.
/// Compiled twice, for the baseline instruction set and for AVX2 with FMA, chosen at run
/// time (`simd`).
#[allow(clippy::too_many_arguments)]
pub fn sweep_slice_lanes(
    p: &Problem,
    inp: &SweepInput,
    tables: &LaneTables,
    g: &[Option<u32>; L],
    oct: crate::grid::Octant,
    k: usize,
    first: bool,
    prev: &[f32],
    f: &mut [f32],
) {
    simd!(sweep_slice_lanes_body(p, inp, tables, g, oct, k, first, prev, f))
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sweep_slice_lanes_body(
    p: &Problem,
    inp: &SweepInput,
    tables: &LaneTables,
    g: &[Option<u32>; L],
    oct: crate::grid::Octant,
    k: usize,
    first: bool,
    prev: &[f32],
    f: &mut [f32],
) {
    let grid = &p.grid;
    let (nx, ny) = (grid.nx(), grid.ny());
    let nxy = nx * ny;
    let m = p.vgrid.m;
    let real = g.iter().flatten().next().map_or(0, |&v| v as usize);
    // Padding lanes borrow the first lane's nodes (valid table rows) but move nowhere.
    let cx: [Option<SliceContext>; L] =
        std::array::from_fn(|l| g[l].map(|v| SliceContext::new(p, inp, None, v as usize, oct, k)));
    let lane = |l: usize| g[l].map_or(real, |v| v as usize);
    let node: [[usize; L]; 3] = [
        std::array::from_fn(|l| lane(l) % m),
        std::array::from_fn(|l| lane(l) / m % m),
        std::array::from_fn(|l| lane(l) / (m * m)),
    ];
    let shared_yz = (node[1].iter().all(|&n| n == node[1][0]) && node[2].iter().all(|&n| n == node[2][0]))
        .then_some((node[1][0], node[2][0]));
    let xi: [[f32; L]; 3] = std::array::from_fn(|a| std::array::from_fn(|l| p.vgrid.xi[lane(l)][a] as f32));
    let speed: [[f32; L]; 3] =
        std::array::from_fn(|a| std::array::from_fn(|l| cx[l].as_ref().map_or(0.0, |c| c.speed[a] as f32)));
    // A padding lane's z-rate is 1, not 0: its update's denominator then stays positive even
    // where a cell's collision frequency rounds to 0 in f32 (0/0 would put a NaN into the
    // moment sums despite the lane's zero weight). Its inflows are 0; its values are
    // finite and never used.
    let c: [f32; L] = std::array::from_fn(|l| cx[l].as_ref().map_or(1.0, |c| c.c as f32));
    let ghost = |axis: usize, idx: usize| -> [f32; L] {
        std::array::from_fn(|l| cx[l].as_ref().map_or(0.0, |c| c.ghost(axis, idx) as f32))
    };
    let words = &p.bodies.solids.words;
    let slab = k * nxy;
    for jj in 0..ny {
        let j = if oct.negative(1) { ny - 1 - jj } else { jj };
        let jup = if oct.negative(1) { j + 1 } else { j.wrapping_sub(1) };
        let inv_dy = (1.0 / grid.y.widths[j]) as f32;
        let b: [f32; L] = std::array::from_fn(|l| speed[1][l] * inv_dy);
        let mut fx = ghost(0, k * ny + j);
        for ii in 0..nx {
            let i = if oct.negative(0) { nx - 1 - ii } else { ii };
            let s = j * nx + i;
            let inv_dx = (1.0 / grid.x.widths[i]) as f32;
            let a: [f32; L] = std::array::from_fn(|l| speed[0][l] * inv_dx);
            let mut fy: [f32; L] = if jj == 0 {
                ghost(1, k * nx + i)
            } else {
                f[(jup * nx + i) * L..(jup * nx + i + 1) * L].try_into().unwrap()
            };
            let mut fz: [f32; L] = if first { ghost(2, s) } else { prev[s * L..(s + 1) * L].try_into().unwrap() };
            if jj + 1 < ny && !first {
                let below = if oct.negative(1) { j - 1 } else { j + 1 } * nx + i;
                prefetch(prev.as_ptr().wrapping_add(below * L));
            }
            let word = words.get(slab + s).copied().unwrap_or(0);
            if word & SOLID_BIT != 0 {
                f[s * L..(s + 1) * L].fill(0.0);
                fx = [0.0; L];
                continue;
            }
            if word != 0 {
                for l in 0..L {
                    if let Some(cl) = &cx[l] {
                        let up = cl.wall_inflows(word, [fx[l] as f64, fy[l] as f64, fz[l] as f64]);
                        (fx[l], fy[l], fz[l]) = (up[0] as f32, up[1] as f32, up[2] as f32);
                    }
                }
            }
            let e = &tables.coeffs[slab + s];
            let (pref, inv_t, nu, base, u, sv) = (e.pref, e.inv_t, e.nu, e.base, e.u, e.s);
            let [gx, gy, gz] = tables.rows(slab + s);
            // The table loads first (gathers, bounds-checked), then the update with neither a
            // branch nor a check, which is what lets it vectorise. Where the lanes share
            // their y and z nodes (most groups: x is the fastest index), two loads serve all.
            let g3: [f32; L] = match shared_yz {
                Some((ny0, nz0)) => {
                    let gyz = gy[ny0] * gz[nz0];
                    std::array::from_fn(|l| gx[node[0][l]] * gyz)
                }
                None => std::array::from_fn(|l| gx[node[0][l]] * (gy[node[1][l]] * gz[node[2][l]])),
            };
            let mut out = [0.0f32; L];
            for l in 0..L {
                let g3 = g3[l];
                let cv = [xi[0][l] - u[0], xi[1][l] - u[1], xi[2][l] - u[2]];
                let c2 = cv[0] * cv[0] + cv[1] * cv[1] + cv[2] * cv[2];
                let sc = sv[0] * cv[0] + sv[1] * cv[1] + sv[2] * cv[2];
                let fs = pref * g3 * (base + sc * (2.0 * c2 * inv_t - 5.0));
                // Only a[l] fx[l] waits for the previous cell: the rest of the numerator and
                // the reciprocal of the denominator are computed beside the chain, which is
                // then a multiply, an add and a multiply instead of four steps and a division
                // (the division's latency was the sweep's largest single stall).
                let rest = b[l] * fy[l] + c[l] * fz[l] + nu * fs;
                let inv = 1.0 / (a[l] + b[l] + c[l] + nu);
                out[l] = (rest + a[l] * fx[l]) * inv;
            }
            f[s * L..(s + 1) * L].copy_from_slice(&out);
            fx = out;
        }
    }
}

/// Asks for the cache line at `at` ahead of its use (a hint: no effect on results, and
/// none where the target has no such instruction).
#[inline(always)]
fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(at as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// The 13 raw-moment weights of each lane, w (1, x, y, z, x^2, ..., x |xi|^2, ...), in f32
/// (zero for padding lanes), `[moment][lane]`.
pub fn moment_weights(p: &Problem, g: &[Option<u32>; L]) -> [[f32; L]; NRAW] {
    let mut out = [[0.0f32; L]; NRAW];
    for (l, v) in g.iter().enumerate() {
        if let Some(v) = v {
            let mut acc = [0.0f64; NRAW];
            crate::model::accumulate_raw(&mut acc, p.vgrid.xi[*v as usize], p.vgrid.w[*v as usize]);
            for mo in 0..NRAW {
                out[mo][l] = acc[mo] as f32;
            }
        }
    }
    out
}

/// Add slice `k` of every group to the raw moments of its cells: runs of `MOMENT_CELLS`
/// cells in parallel (not rows: 32 rows on 16 cores of unequal speed left the slowest with
/// the last ones); within a run, lane-wise f32 sums over blocks of 32 groups in order
/// (vectorised like the sweep), then each cell's lanes summed and added in f64. Each cell's
/// sums are the same, term for term, whatever the runs. f32 sums of 256 terms keep the
/// moments to a relative 1e-6 or better, the GPU backends' level, and the f64 sums add no
/// more.
pub fn moment_slice_lanes(weights: &[[[f32; L]; NRAW]], slices: &[f32], nxy: usize, raw_slab: &mut [[f64; NRAW]]) {
    debug_assert_eq!(raw_slab.len(), nxy);
    raw_slab
        .par_chunks_mut(MOMENT_CELLS)
        .enumerate()
        .for_each(|(r, run)| simd!(moment_run(weights, slices, nxy, r * MOMENT_CELLS, run)));
}

/// Cells per parallel task of the moment stage.
const MOMENT_CELLS: usize = 16;

#[inline(always)]
fn moment_run(weights: &[[[f32; L]; NRAW]], slices: &[f32], nxy: usize, start: usize, run: &mut [[f64; NRAW]]) {
    // Groups in blocks of GROUP_BLOCK; within a block, cell by cell, the 13 lane-wise sums stay
    // in registers while the block's groups stream by. A group's row is 4 KiB or less, each in
    // another page: a block's pages stay in the TLB across the run, all of a batch's would not.
    for (b, block) in weights.chunks(GROUP_BLOCK).enumerate() {
        let first = b * GROUP_BLOCK;
        for (i, out) in run.iter_mut().enumerate() {
            let at = (start + i) * L;
            let mut acc = [[0.0f32; L]; NRAW];
            for (gi, wt) in block.iter().enumerate() {
                let base = (first + gi) * nxy * L + at;
                let fl: &[f32; L] = slices[base..base + L].try_into().unwrap();
                for mo in 0..NRAW {
                    for l in 0..L {
                        acc[mo][l] += wt[mo][l] * fl[l];
                    }
                }
            }
            for mo in 0..NRAW {
                out[mo] += acc[mo].iter().map(|&x| x as f64).sum::<f64>();
            }
        }
    }
}

/// Groups per block of the moment stage (`moment_run`).
const GROUP_BLOCK: usize = 32;

/// Each lane's weight in the incident flux of each downwind face of the batch (axis order):
/// w max(-xi . n, 0), n the face's inward normal; zero for padding lanes.
pub fn flux_weights(p: &Problem, g: &[Option<u32>; L], oct: crate::grid::Octant) -> [[f32; L]; 3] {
    let faces = super::downwind_faces(oct);
    std::array::from_fn(|a| {
        std::array::from_fn(|l| {
            g[l].map_or(0.0, |v| {
                let v = v as usize;
                (p.vgrid.w[v] * (-faces[a].normal_speed(p.vgrid.xi[v])).max(0.0)) as f32
            })
        })
    })
}

/// Add slice `k` of every group to the incident flux of the box-face cells it touches: the
/// f64 path's `wall_flux_slice` without its exits, vectorised over lanes like the moments
/// (f32 sums over blocks of groups, f64 across blocks). Exits, which only specular and
/// periodic faces keep, go through that function.
pub fn incident_slice_lanes(
    p: &Problem,
    oct: crate::grid::Octant,
    k: usize,
    weights: &[[[f32; L]; 3]],
    slices: &[f32],
    incident: &mut crate::boundary::FaceData,
) {
    let nxy = p.grid.slice_cells();
    for (a, face) in super::downwind_faces(oct).into_iter().enumerate() {
        let Some((first, count, cell_of)) = super::face_cells(p, face, k) else { continue };
        incident[face.id()][first..first + count].par_iter_mut().enumerate().for_each(|(t, acc)| {
            let at = cell_of(t) * L;
            for (b, block) in weights.chunks(GROUP_BLOCK).enumerate() {
                let mut sum = [0.0f32; L];
                for (gi, wt) in block.iter().enumerate() {
                    let base = (b * GROUP_BLOCK + gi) * nxy * L + at;
                    let fl: &[f32; L] = slices[base..base + L].try_into().unwrap();
                    for l in 0..L {
                        sum[l] += wt[a][l] * fl[l];
                    }
                }
                *acc += sum.iter().map(|&x| x as f64).sum::<f64>();
            }
        });
    }
}

/// Group storage read as the f64 path's per-velocity slots: batch velocity b is lane b % L
/// of group b / L.
#[derive(Clone, Copy)]
pub struct LaneSlots<'a> {
    pub data: &'a [f32],
    pub nxy: usize,
}

impl LaneSlots<'_> {
    #[inline]
    pub fn value(&self, b: usize, s: usize) -> f64 {
        self.data[(b / L * self.nxy + s) * L + b % L] as f64
    }
}

/// One iteration of the f32 path over the plan's batches, each batch's levels marched with
/// their stages beside the next level's sweep ([`super::levels`]).
pub fn sweep_all(
    p: &Problem,
    plan: &BatchPlan,
    input: &SweepInput,
    tables: &LaneTables,
    slices: &mut [f32],
    out: &mut SweepOutput,
) {
    let nxy = p.grid.slice_cells();
    let nz = p.grid.nz();
    // Seconds of the levels and of each batch's last level's stages, for
    // `RUST_LOG=knudsen=debug`.
    let (mut t_levels, mut t_last) = (0.0f64, 0.0f64);
    for batch in &plan.batches {
        let gs = groups(batch);
        let weights: Vec<_> = gs.iter().map(|g| moment_weights(p, g)).collect();
        let flux: Vec<_> = gs.iter().map(|g| flux_weights(p, g, batch.octant)).collect();
        let keeps_exits = out.exits.iter().any(|e| !e.is_empty());
        let level = |step: usize| if batch.octant.negative(2) { nz - 1 - step } else { step };
        let (tl, ts) = super::levels::march(
            nz,
            &mut slices[..2 * gs.len() * nxy * L],
            |step, prev, cur| {
                let k = level(step);
                cur.par_chunks_mut(nxy * L).zip(prev.par_chunks(nxy * L)).zip(&gs).for_each(|((f, fp), g)| {
                    sweep_slice_lanes(p, input, tables, g, batch.octant, k, step == 0, fp, f);
                });
            },
            |step, store| {
                let k = level(step);
                moment_slice_lanes(&weights, store, nxy, &mut out.raw[k * nxy..(k + 1) * nxy]);
                incident_slice_lanes(p, batch.octant, k, &flux, store, &mut out.incident);
                let stored = LaneSlots { data: store, nxy };
                let value = |b: usize, s: usize, _axis: usize| stored.value(b, s);
                if keeps_exits {
                    // Only the exits: the incident sums above are already in.
                    super::wall_flux_slice(p, batch, k, &value, None, &mut out.exits);
                }
                super::wall_load_slice(p, batch, k, &value, &mut out.wall);
            },
        );
        (t_levels, t_last) = (t_levels + tl, t_last + ts);
    }
    log::debug!("cpu f32 stages: levels (sweep beside the previous level's moments) {t_levels:.4} s, last levels' moments {t_last:.4} s");
}
