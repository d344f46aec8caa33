//! CPU twins of the WGSL kernels, written line for line like the shaders (same layouts,
//! same f32 arithmetic) so each GPU stage can be checked on its own against them.

use super::layout::{CellCoeffs, StepParams, MSTRIDE, NACC};

/// The `override` constants of the shaders.
#[derive(Debug, Clone, Copy)]
pub struct Consts {
    pub nx: u32,
    pub ny: u32,
    pub nz: u32,
    pub ch: u32,
    /// Shape rows per velocity in `table` (SROW).
    pub srow: u32,
    /// HAS_WALLS.
    pub has_walls: bool,
    /// Velocity nodes per axis (M).
    pub m: u32,
    /// PART0..5 (sweep_slice) and EXIT0..5 (moment_slice); u32::MAX for none.
    pub part_at: [u32; 6],
    pub exit_at: [u32; 6],
    /// SLOTS: slices per velocity (1, or 4 for the second-order scheme).
    pub slots: u32,
}

const NONE: u32 = u32::MAX;

impl Consts {
    /// The constants the backend bakes into its kernels for `p`, with slice stride `ch` and
    /// the buffer layout `t` (`gpu_io::device_tables`).
    pub fn of(p: &crate::problem::Problem, ch: usize, t: &crate::backend::gpu_io::DeviceTables) -> Self {
        let g = &p.grid;
        Self {
            nx: g.nx() as u32,
            ny: g.ny() as u32,
            nz: g.nz() as u32,
            ch: ch as u32,
            srow: crate::backend::gpu_tables::shape_rows(p) as u32,
            has_walls: p.bodies.solids.any(),
            m: p.vgrid.m as u32,
            part_at: t.part_at,
            exit_at: t.exit_at,
            slots: p.config.solver.scheme.slices() as u32,
        }
    }

    fn dens(&self) -> u32 {
        self.nx + self.ny + self.nz
    }

    fn wall_base(&self) -> u32 {
        self.dens() + 2 * (self.ny * self.nz + self.nx * self.nz + self.nx * self.ny)
    }

    /// Twin of partner.wgsl's `slots`.
    fn slots(&self) -> u32 {
        self.m * self.m * (self.m / 2)
    }

    /// Twin of partner.wgsl's `slot`.
    fn slot(&self, g: u32, axis: u32, positive: bool) -> u32 {
        let m = self.m;
        let half = m / 2;
        let mut idx = [g % m, (g / m) % m, g / (m * m)];
        let i = idx[axis as usize];
        if positive {
            if i < m - half {
                return NONE;
            }
            idx[axis as usize] = i - (m - half);
        } else if i >= half {
            return NONE;
        }
        let mut dims = [m, m, m];
        dims[axis as usize] = half;
        (idx[2] * dims[1] + idx[1]) * dims[0] + idx[0]
    }

    fn face_offset(&self, face: u32) -> u32 {
        let (nx, ny, nz) = (self.nx, self.ny, self.nz);
        let nyz = ny * nz;
        let nxz = nx * nz;
        match face {
            0 => 0,
            1 => nyz,
            2 => 2 * nyz,
            3 => 2 * nyz + nxz,
            4 => 2 * nyz + 2 * nxz,
            _ => 2 * nyz + 2 * nxz + nx * ny,
        }
    }
}

/// The bindings of sweep_slice.wgsl.
pub struct SweepBindings<'a> {
    pub params: StepParams,
    pub cells: &'a [CellCoeffs],
    /// Inverse widths, then face densities, then wall densities, then partner inflows.
    pub bnd: &'a [f32],
    /// Per velocity 1 + SROW rows: (xi, w), face shapes, body shapes.
    pub table: &'a [[f32; 4]],
}

const SOLID: u32 = 0x8000_0000;

/// Twin of a dispatch group's slice bindings (shaders.rs::slice_bindings): one storage per
/// chunk. `load` is the moment and wall kernels' `slice_load`; `store` (and `load` in the
/// sweep's twin) stands for the sweep's direct access to its chunk's binding `slices<c>`
/// (shaders.rs::per_binding).
#[derive(Debug, Clone, PartialEq)]
pub struct Slices(pub Vec<Vec<f32>>);

impl Slices {
    pub fn load(&self, c: u32, i: u32) -> f32 {
        self.0[c as usize][i as usize]
    }
    pub fn store(&mut self, c: u32, i: u32, x: f32) {
        self.0[c as usize][i as usize] = x;
    }
}

/// Twin of `wall_emission`.
fn wall_emission(k_: &Consts, b: &SweepBindings, word: u32, side: u32, cell: u32, v: u32) -> f32 {
    let mask = word & 63;
    let w = (word >> 6) + (mask & ((1 << side) - 1)).count_ones();
    let axis = side / 2;
    let step = select(select(k_.nx * k_.ny, k_.nx, axis == 1), 1, axis == 0);
    let nb = select(cell.wrapping_sub(step), cell + step, side & 1 == 1);
    let body = b.cells[nb as usize].rows[0][3].to_bits() & !SOLID;
    let row = b.table[(v * (k_.srow + 1) + 2 + body / 4) as usize];
    b.bnd[(k_.wall_base() + w) as usize] * row[(body % 4) as usize]
}

fn select<T>(f: T, t: T, cond: bool) -> T {
    if cond {
        t
    } else {
        f
    }
}

/// Twin of `sweep_slice` for invocation `v`, with one invocation per velocity (ROWS = 1):
/// the rows in flight sweep the same cells with the same operations in a wavefront order
/// that only the device's parallelism needs (tests/slice_rows.rs checks the bits agree).
pub fn sweep_slice(k_: &Consts, b: &SweepBindings, v: u32, slices: &mut Slices) {
    let (nx, ny, nz, ch) = (k_.nx, k_.ny, k_.nz, k_.ch);
    let params = &b.params;
    if v >= params.count {
        return;
    }
    let bind = v / ch;
    let lv = v % ch;
    let vel = b.table[(v * (k_.srow + 1)) as usize];
    let xi = [vel[0], vel[1], vel[2]];
    let shape = b.table[(v * (k_.srow + 1) + 1) as usize];
    let neg_x = xi[0] < 0.0;
    let neg_y = xi[1] < 0.0;
    let neg_z = xi[2] < 0.0;
    let k = select(params.step, nz - 1 - params.step, neg_z);
    let first = params.step == 0;
    let x_face = k_.dens() + k_.face_offset(select(0, 1, neg_x));
    let y_face = k_.dens() + k_.face_offset(select(2, 3, neg_y));
    let z_face = k_.dens() + k_.face_offset(select(4, 5, neg_z));
    let c = xi[2].abs() * b.bnd[(nx + ny + k) as usize];
    let gv = shape[3].to_bits();
    let x_part = k_.part_at[select(0, 1, neg_x)];
    let y_part = k_.part_at[select(2, 3, neg_y)];
    let z_part = k_.part_at[select(4, 5, neg_z)];
    let x_slot = k_.slot(gv, 0, !neg_x);
    let y_slot = k_.slot(gv, 1, !neg_y);
    let z_slot = k_.slot(gv, 2, !neg_z);
    let second = k_.slots > 1;
    let slot_len = nx * ny * ch;
    let y_in = select(0, 2 * slot_len, second);
    let z_in = select(0, 3 * slot_len, second);
    let ys = select(2, 3, neg_y);
    let zs = select(4, 5, neg_z);
    let partner = |at: u32, idx: u32, sl: u32| {
        if sl == NONE {
            0.0
        } else {
            b.bnd[(at + idx * k_.slots() + sl) as usize]
        }
    };
    for jj in 0..ny {
        let j = select(jj, ny - 1 - jj, neg_y);
        let jup = select(j.wrapping_sub(1), j + 1, neg_y);
        let bb = xi[1].abs() * b.bnd[(nx + j) as usize];
        let mut fx = b.bnd[(x_face + k * ny + j) as usize] * shape[0];
        let mut west = [0.0f32; 2];
        let mut west_ok = false;
        if x_part != NONE {
            fx = partner(x_part, k * ny + j, x_slot);
        }
        for ii in 0..nx {
            let i = select(ii, nx - 1 - ii, neg_x);
            let a = xi[0].abs() * b.bnd[i as usize];
            let s = j * nx + i;
            let mut south = [0.0f32; 2];
            let mut below = [0.0f32; 2];
            let mut fy = if jj == 0 {
                if y_part != NONE {
                    partner(y_part, k * nx + i, y_slot)
                } else {
                    b.bnd[(y_face + k * nx + i) as usize] * shape[1]
                }
            } else {
                let fy = slices.load(bind, y_in + (jup * nx + i) * ch + lv);
                if second {
                    south = [
                        slices.load(bind, slot_len + (jup * nx + i) * ch + lv),
                        slices.load(bind, 3 * slot_len + (jup * nx + i) * ch + lv),
                    ];
                }
                fy
            };
            let mut fz = if first {
                if z_part != NONE {
                    partner(z_part, s, z_slot)
                } else {
                    b.bnd[(z_face + s) as usize] * shape[2]
                }
            } else {
                let fz = slices.load(bind, z_in + s * ch + lv);
                if second {
                    below = [slices.load(bind, slot_len + s * ch + lv), slices.load(bind, 2 * slot_len + s * ch + lv)];
                }
                fz
            };
            let cell = k * nx * ny + s;
            let e = &b.cells[cell as usize].rows;
            let word = select(0, e[0][3].to_bits(), k_.has_walls);
            if word & SOLID != 0 {
                for o in 0..k_.slots {
                    slices.store(bind, o * slot_len + s * ch + lv, 0.0);
                }
                fx = 0.0;
                west_ok = false;
                continue;
            }
            if word != 0 {
                let xs = select(0, 1, neg_x);
                if (word >> xs) & 1 != 0 {
                    fx = wall_emission(k_, b, word, xs, cell, v);
                }
                if (word >> ys) & 1 != 0 {
                    fy = wall_emission(k_, b, word, ys, cell, v);
                }
                if (word >> zs) & 1 != 0 {
                    fz = wall_emission(k_, b, word, zs, cell, v);
                }
            }
            let cu = [xi[0] - e[1][0], xi[1] - e[1][1], xi[2] - e[1][2]];
            let c2 = cu[0] * cu[0] + cu[1] * cu[1] + cu[2] * cu[2];
            let sc = e[2][0] * cu[0] + e[2][1] * cu[1] + e[2][2] * cu[2];
            let fs = e[0][0] * (-c2 * e[0][1]).exp() * (e[1][3] + sc * (2.0 * c2 * e[0][1] - 5.0));
            if second {
                // A neighbour counts where it is upwind and fluid; otherwise the cell's own
                // inflow stands in (sweep_slice.wgsl).
                let w_ok = west_ok && a > 0.0;
                let s_ok = jj > 0 && bb > 0.0 && (word >> ys) & 1 == 0;
                let b_ok = !first && c > 0.0 && (word >> zs) & 1 == 0;
                let side0 = [select(fx, south[0], s_ok), select(fy, west[0], w_ok), select(fz, west[1], w_ok)];
                let side1 = [select(fx, below[0], b_ok), select(fy, below[1], b_ok), select(fz, south[1], s_ok)];
                let u = super::twin2::solve_cell([a, bb, c], [fx, fy, fz], e[0][2], fs, side0, side1);
                slices.store(bind, s * ch + lv, u.f);
                for d in 0..3 {
                    slices.store(bind, (d + 1) * slot_len + s * ch + lv, u.out[d as usize]);
                }
                fx = u.out[0];
                west = [u.out[1], u.out[2]];
                west_ok = true;
                continue;
            }
            let f = (a * fx + bb * fy + c * fz + e[0][2] * fs) / (a + bb + c + e[0][2]);
            slices.store(bind, s * ch + lv, f);
            fx = f;
        }
    }
}

/// The velocity grid as moment_slice.wgsl rebuilds it: M points, node step, and its index
/// buffer: the 1D weights as f32 bits (M), then per chunk slot the global velocity index or
/// GHOST.
pub struct VelocityIndex<'a> {
    pub m: u32,
    pub step: f32,
    pub vidx: &'a [u32],
}

/// Twin of `moment_slice` for the workgroup of slice cell `s`. The shader reduces with a
/// tree; the twin sums in order, so the two agree to f32 round-off, not bit for bit.
pub fn moment_slice(
    k_: &Consts,
    params: &StepParams,
    vi: &VelocityIndex,
    slices: &Slices,
    s: u32,
    moments: &mut [f32],
    incident: &mut [f32],
) {
    let (nx, ny, nz, ch) = (k_.nx, k_.ny, k_.nz, k_.ch);
    if s >= nx * ny {
        return;
    }
    let i = s % nx;
    let j = s / nx;
    let on_x = i == 0 || i == nx - 1;
    let on_y = j == 0 || j == ny - 1;
    for part in 0..2u32 {
        let lo = select(0, params.split, part == 1);
        let hi = select(params.split, params.count, part == 1);
        if lo == hi {
            continue;
        }
        let k = select(params.step, nz - 1 - params.step, part == 1);
        let on_z = k == 0 || k == nz - 1;
        let mut acc = [0.0f32; NACC];
        for v in lo..hi {
            let g = vi.vidx[(vi.m + v) as usize];
            let m = vi.m;
            let (ix, iy, iz) = (g % m, (g / m) % m, (g / m / m) % m);
            let node = |i: u32| (2 * i as i32 - (m as i32 - 1)) as f32 * vi.step;
            let (x, y, z) = (node(ix), node(iy), node(iz));
            let w1 = |i: u32| f32::from_bits(vi.vidx[i as usize]);
            let w = if g == u32::MAX { 0.0 } else { w1(ix) * w1(iy) * w1(iz) };
            let (bind, lv) = (v / ch, v % ch);
            let wf = w * slices.load(bind, s * ch + lv);
            // What the velocity carries through the faces: the emitted face values (slots
            // 1-3) under second order, the cell value under first.
            let slot_len = nx * ny * ch;
            let face: [f32; 3] = std::array::from_fn(|d| {
                let at = select(0, (d as u32 + 1) * slot_len, k_.slots > 1 && (on_x || on_y || on_z));
                slices.load(bind, at + s * ch + lv)
            });
            let xi2 = x * x + y * y + z * z;
            acc[0] += wf;
            acc[1] += wf * x;
            acc[2] += wf * y;
            acc[3] += wf * z;
            acc[4] += wf * x * x;
            acc[5] += wf * y * y;
            acc[6] += wf * z * z;
            acc[7] += wf * x * y;
            acc[8] += wf * x * z;
            acc[9] += wf * y * z;
            acc[10] += wf * x * xi2;
            acc[11] += wf * y * xi2;
            acc[12] += wf * z * xi2;
            if on_x {
                acc[13] += w * face[0] * (-x).max(0.0);
                acc[14] += w * face[0] * x.max(0.0);
            }
            if on_y {
                acc[15] += w * face[1] * (-y).max(0.0);
                acc[16] += w * face[1] * y.max(0.0);
            }
            if on_z {
                acc[17] += w * face[2] * (-z).max(0.0);
                acc[18] += w * face[2] * z.max(0.0);
            }
            if on_x || on_y || on_z {
                record_exits(k_, g, i, j, k, face, incident);
            }
        }
        let cell = (k * nx * ny + s) as usize;
        for m in 0..13 {
            moments[cell * MSTRIDE + m] += acc[m];
        }
        if i == 0 {
            incident[(k_.face_offset(0) + k * ny + j) as usize] += acc[13];
        }
        if i == nx - 1 {
            incident[(k_.face_offset(1) + k * ny + j) as usize] += acc[14];
        }
        if j == 0 {
            incident[(k_.face_offset(2) + k * nx + i) as usize] += acc[15];
        }
        if j == ny - 1 {
            incident[(k_.face_offset(3) + k * nx + i) as usize] += acc[16];
        }
        if k == 0 {
            incident[(k_.face_offset(4) + s) as usize] += acc[17];
        }
        if k == nz - 1 {
            incident[(k_.face_offset(5) + s) as usize] += acc[18];
        }
    }
}

/// Twin of moment_slice.wgsl's `record_exits`.
fn record_exits(k_: &Consts, g: u32, i: u32, j: u32, k: u32, f: [f32; 3], incident: &mut [f32]) {
    if g == u32::MAX {
        return;
    }
    let (nx, ny, nz) = (k_.nx, k_.ny, k_.nz);
    let s = j * nx + i;
    let e = &k_.exit_at;
    let mut put = |at: u32, idx: u32, sl: u32, axis: usize| {
        if sl != NONE {
            incident[(at + idx * k_.slots() + sl) as usize] = f[axis];
        }
    };
    if i == 0 && e[0] != NONE {
        put(e[0], k * ny + j, k_.slot(g, 0, false), 0);
    }
    if i == nx - 1 && e[1] != NONE {
        put(e[1], k * ny + j, k_.slot(g, 0, true), 0);
    }
    if j == 0 && e[2] != NONE {
        put(e[2], k * nx + i, k_.slot(g, 1, false), 1);
    }
    if j == ny - 1 && e[3] != NONE {
        put(e[3], k * nx + i, k_.slot(g, 1, true), 1);
    }
    if k == 0 && e[4] != NONE {
        put(e[4], s, k_.slot(g, 2, false), 2);
    }
    if k == nz - 1 && e[5] != NONE {
        put(e[5], s, k_.slot(g, 2, true), 2);
    }
}

pub use super::twin_wall::wall_load_slice;
