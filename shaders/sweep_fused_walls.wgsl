// sweep_fused's cell update, and its level for tiles with a wall cell (the WGSL form of
// shaders/cuda/sweep_fused.cu's sweep_level_walls). The host puts this file after
// fused_common.wgsl and before sweep_fused.wgsl (src/backend/wgpu/fused.rs::source).

// What an invocation keeps of its velocity (sweep_fused builds it once; sweep_fused.cu's Ray).
struct Ray {
    vel: vec4<f32>,
    shape: vec4<f32>,
    xi2: f32,
    ux: f32,
    uy: f32,
    v: u32,
    neg_x: bool,
    neg_y: bool,
    neg_z: bool,
    x_face: u32,
    y_face: u32,
    z_face: u32,
    x_slot: u32,
    y_slot: u32,
    z_slot: u32,
    x_part: u32,
    y_part: u32,
    z_part: u32,
    x_exit: u32,
    y_exit: u32,
    z_exit: u32,
}

// The first-order update of one cell from its inflows fx, fy, fz: the collision term's
// nu f^S = 2^ell (base + s.c (2 |c|^2 / T - 5)) from polynomials in xi with the cell's
// constants at `coef[at]` (`cell_const`): ell = log2 of nu times the Maxwellian factor, and
// the Shakhov term's s.c. `byz` = by + cz, shared by the row.
fn cell_update(at: u32, fx: f32, fy: f32, fz: f32, ax: f32, by: f32, byz: f32, cz: f32, vel: vec4<f32>, xi2: f32) -> f32 {
    let e0 = coef[at];
    let e1 = coef[at + 1u];
    let e2 = coef[at + 2u];
    let ell = fma(e1.x, vel.x, fma(e1.y, vel.y, fma(e1.z, vel.z, fma(e0.x, xi2, e2.w))));
    let sc = fma(e2.x, vel.x, fma(e2.y, vel.y, fma(e2.z, vel.z, e0.z)));
    let shakhov = fma(sc, fma(ell, -1.38629436, e0.w), e1.w);
    let num = fma(exp2(ell), shakhov, fma(ax, fx, fma(by, fy, cz * fz)));
    return num / (ax + byz + e0.y);
}

// One z-level of the tile, `carry` in and out, where the tile has a wall cell at this level:
// sweep_fused's level with each cell's wall word read (a solid cell holds no gas; a wall
// side upwind of a fluid cell emits its body's Maxwellian, as in sweep_slice), the edge
// tests and the first level at run time, in rolled loops. Why apart and rolled: such levels
// are a few in a thousand of a body case's (the paper cube: about 0.3% of its tile levels),
// while the wall paths unrolled into each cell of each of the z-loop's four copies made the
// kernel's first build on the NVIDIA Vulkan driver take 9.3-9.7 s (2.7 s now) and 1.0-1.1 s
// from the driver's cache (0.2 s), for a sweep 1.6% faster (docs/performance.md, "The wall
// levels rolled, in one function"; each row's cells unrolled, 3% slower than before). The
// carry is copied in and out, so that only the copy `c` is indexed at run time and `carry`
// stays in registers.
fn sweep_level_walls(carry: array<f32, TXTY>, fin_in: array<f32, TX + TY>, r: Ray, a: u32, b: u32, k: u32, kk: u32,
                     cur: u32, cz: f32, first: bool) -> array<f32, TXTY> {
    var c = carry;
    var fin = fin_in;
    for (var jj = 0u; jj < TY; jj++) {
        let ju = b * TY + jj;
        if ju >= NY {
            // Rows past the domain's edge repeat the last real one (jj > 0 here).
            for (var ii = 0u; ii < TX; ii++) {
                c[jj * TX + ii] = c[(max(jj, 1u) - 1u) * TX + ii];
            }
            continue;
        }
        let j = select(ju, NY - 1u - ju, r.neg_y);
        let by = r.uy * inv_w[TX + jj];
        let byz = by + cz;
        var fx: f32;
        if a == 0u {
            if r.x_part != NONE {
                fx = partner(r.x_part, k * NY + j, r.x_slot);
            } else {
                fx = bnd[r.x_face + k * NY + j] * r.shape.x;
            }
        } else {
            fx = fin[jj];
        }
        for (var ii = 0u; ii < TX; ii++) {
            let iu = a * TX + ii;
            if iu >= NX {
                c[jj * TX + ii] = fx;
                continue;
            }
            let i = select(iu, NX - 1u - iu, r.neg_x);
            let ax = r.ux * inv_w[ii];
            var fy: f32;
            if jj > 0u {
                fy = c[(max(jj, 1u) - 1u) * TX + ii];
            } else if b == 0u {
                if r.y_part != NONE {
                    fy = partner(r.y_part, k * NX + i, r.y_slot);
                } else {
                    fy = bnd[r.y_face + k * NX + i] * r.shape.y;
                }
            } else {
                fy = fin[TY + ii];
            }
            var fz: f32;
            if first {
                if r.z_part != NONE {
                    fz = partner(r.z_part, j * NX + i, r.z_slot);
                } else {
                    fz = bnd[r.z_face + j * NX + i] * r.shape.z;
                }
            } else {
                fz = c[jj * TX + ii];
            }
            let word = words[(kk & 1u) * TXTY + jj * TX + ii];
            let solid = (word & SOLID) != 0u;
            if !solid && word != 0u {
                let cell = (k * NY + j) * NX + i;
                let xs = select(0u, 1u, r.neg_x);
                let ys = select(2u, 3u, r.neg_y);
                let zs = select(4u, 5u, r.neg_z);
                if ((word >> xs) & 1u) != 0u {
                    fx = wall_emission(word, xs, cell, r.v);
                }
                if ((word >> ys) & 1u) != 0u {
                    fy = wall_emission(word, ys, cell, r.v);
                }
                if ((word >> zs) & 1u) != 0u {
                    fz = wall_emission(word, zs, cell, r.v);
                }
            }
            var f = cell_update(cur + 3u * (jj * TX + ii), fx, fy, fz, ax, by, byz, cz, r.vel, r.xi2);
            if solid {
                f = 0.0;
            }
            c[jj * TX + ii] = f;
            fx = f;
            if iu == NX - 1u {
                record_exit(r.x_exit, k * NY + j, r.x_slot, r.vel.w, f);
            }
            if ju == NY - 1u {
                record_exit(r.y_exit, k * NX + i, r.y_slot, r.vel.w, f);
            }
            if kk == NZ - 1u {
                record_exit(r.z_exit, j * NX + i, r.z_slot, r.vel.w, f);
            }
        }
        xface[(k * NY + j) * FCH + r.v] = fx;
    }
    return c;
}
