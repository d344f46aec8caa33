// sweep_fused: the on-chip sweep, the WGSL form of shaders/cuda/sweep_fused.cu (same
// structure, buffers and layouts; src/backend/fused.rs has the plan and the byte count).
// A workgroup is BV velocities of one octant and one TX x TY tile of cells, (a, b) in the
// velocities' upwind frame, on the tile diagonal a + b = diag of this dispatch. Each
// invocation sweeps its velocity through the tile's column of cells over all z in upwind
// order with the z-carry (the tile's previous z-level) in `carry`; the tile's x- and
// y-inflows are the face buffers its upwind neighbour tiles wrote in the previous dispatch,
// and its outflows replace them there. After each z-level the workgroup reduces the
// level's 13 raw moments per cell over its velocities in workgroup memory and writes one
// partial per cell; fused_moments (shaders/fused_moments.wgsl) adds them up in a fixed
// order. Launcher: src/backend/wgpu/fused.rs. First order; the host puts fused_common.wgsl
// (constants, bindings, workgroup arrays, helpers) before it.
//
// The tile's inflows at level k from the face buffers its upwind tiles wrote: the rows'
// x-inflows where a > 0, then the columns' y-inflows where b > 0 (zero elsewhere: box faces
// are read where they are used).
fn face_inflows(k: u32, a: u32, b: u32, v: u32, neg_x: bool, neg_y: bool) -> array<f32, TX + TY> {
    var f: array<f32, TX + TY>;
    // @unroll
    for (var jj = 0u; jj < TY; jj++) {
        let ju = b * TY + jj;
        if a > 0u && ju < NY {
            f[jj] = xface[(k * NY + select(ju, NY - 1u - ju, neg_y)) * FCH + v];
        }
    }
    // @unroll
    for (var ii = 0u; ii < TX; ii++) {
        let iu = a * TX + ii;
        if b > 0u && iu < NX {
            f[TY + ii] = yface[(k * NX + select(iu, NX - 1u - iu, neg_x)) * FCH + v];
        }
    }
    return f;
}

@compute @workgroup_size(128)
fn sweep_fused(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let v = wg.x * BV + lid;
    let a = params.a_lo + wg.y;
    let b = params.diag - a;
    let vel = table[v * (SROW + 1u)];
    let shape = table[v * (SROW + 1u) + 1u];
    store_velocity(lid, vel);
    let neg_x = vel.x < 0.0;
    let neg_y = vel.y < 0.0;
    let neg_z = vel.z < 0.0;
    store_inv_w(lid, a, b, neg_x, neg_y);
    let k0 = select(0u, NZ - 1u, neg_z);
    if lid == 0u {
        atomicStore(&walls_at[0], 0u);
        atomicStore(&walls_at[1], 0u);
    }
    workgroupBarrier();
    if lid < TXTY {
        store_cell(lid, cell_coeffs(lid, a, b, k0, neg_x, neg_y), 0u);
    }
    workgroupBarrier();
    if lid == 0u {
        build_runs();
    }
    let x_face = dens() + face_offset(select(0u, 1u, neg_x));
    let y_face = dens() + face_offset(select(2u, 3u, neg_y));
    let z_face = dens() + face_offset(select(4u, 5u, neg_z));
    let gv = bitcast<u32>(shape.w);
    let x_slot = slot(gv, 0u, !neg_x);
    let y_slot = slot(gv, 1u, !neg_y);
    let z_slot = slot(gv, 2u, !neg_z);
    let x_part = part_at(select(0u, 1u, neg_x));
    let y_part = part_at(select(2u, 3u, neg_y));
    let z_part = part_at(select(4u, 5u, neg_z));
    let x_exit = exit_at(select(1u, 0u, neg_x));
    let y_exit = exit_at(select(3u, 2u, neg_y));
    let z_exit = exit_at(select(5u, 4u, neg_z));
    let xi2 = dot(vel.xyz, vel.xyz);
    let ux = abs(vel.x);
    let uy = abs(vel.y);
    let uz = abs(vel.z);
    let rc = lid % TXTY;
    let rh = lid / TXTY;
    let full = a * TX + TX <= NX && b * TY + TY <= NY;
    var carry: array<f32, TXTY>;
    // This level's x-inflows (rows) and y-inflows (columns) from the face buffers, loaded one
    // level ahead (`nfin`) so that no row waits on memory for them: the kernel has only two
    // workgroups per SM at 8x8, too few to hide a load at every row (`face_inflows`).
    var fin = face_inflows(k0, a, b, v, neg_x, neg_y);
    let ray = Ray(vel, shape, xi2, ux, uy, v, neg_x, neg_y, neg_z, x_face, y_face, z_face, x_slot, y_slot, z_slot,
                  x_part, y_part, z_part, x_exit, y_exit, z_exit);
    // @levels
    for (var kk = 0u; kk < NZ; kk++) {
        // Whether the tile lies wholly inside the grid, and whether this is the first level:
        // the host copies this loop four times with both as constants (wgpu/specialise.rs::levels),
        // so that each copy's body is one straight path, as sweep_fused.cu's march_level.
        let lvl_full = full;
        let lvl_first = kk == 0u;
        let k = select(kk, NZ - 1u - kk, neg_z);
        let cur = (kk & 1u) * NCOEF;
        // The next level's flag is cleared before the barrier after this level's sweep, after
        // which the next coefficients set it; every reader of it (at the previous level's
        // start) has passed that level's barriers.
        if lid == 0u && kk + 1u < NZ {
            atomicStore(&walls_at[(kk + 1u) & 1u], 0u);
        }
        let tile_walls = HAS_WALLS && atomicLoad(&walls_at[kk & 1u]) != 0u;
        // The next level's cell records, loaded now, one vec4 per invocation at tiles of up to
        // BV / 3 cells (4 registers held through the update, where a cell's converted
        // constants took 13), stored as they are after the sweep and turned into constants
        // in the reduction (`cell_const`), so that no warp's sweep waits on the conversion.
        var nraw: array<vec4<f32>, RAWQ>;
        var nfin: array<f32, TX + TY>;
        if kk + 1u < NZ {
            let kn = select(k + 1u, k - 1u, neg_z);
            // @unroll
            for (var q = 0u; q < RAWQ; q++) {
                if lid + q * BV < NCOEF {
                    nraw[q] = cell_record(lid + q * BV, a, b, kn, neg_x, neg_y);
                }
            }
            nfin = face_inflows(kn, a, b, v, neg_x, neg_y);
        }
        let cz = uz * bnd[NX + NY + k];
        // A level whose tile has a wall cell takes the rolled form with the wall paths
        // (sweep_fused_walls.wgsl), written once; every other level, and every level of a
        // case without bodies (where `tile_walls` folds to false), the unrolled one below.
        if tile_walls {
            carry = sweep_level_walls(carry, fin, ray, a, b, k, kk, cur, cz, lvl_first);
        } else {
        // @unroll
        for (var jj = 0u; jj < TY; jj++) {
            let ju = b * TY + jj;
            if lvl_full || ju < NY {
                let j = select(ju, NY - 1u - ju, neg_y);
                let by = uy * inv_w[TX + jj];
                // The denominator's terms shared by the row.
                let byz = by + cz;
                var fx: f32;
                if a == 0u {
                    if x_part != NONE {
                        fx = partner(x_part, k * NY + j, x_slot);
                    } else {
                        fx = bnd[x_face + k * NY + j] * shape.x;
                    }
                } else {
                    fx = fin[jj];
                }
                // @unroll
                for (var ii = 0u; ii < TX; ii++) {
                    let iu = a * TX + ii;
                    if lvl_full || iu < NX {
                        let i = select(iu, NX - 1u - iu, neg_x);
                        let ax = ux * inv_w[ii];
                        var fy: f32;
                        if jj > 0u {
                            fy = carry[(max(jj, 1u) - 1u) * TX + ii];
                        } else if b == 0u {
                            if y_part != NONE {
                                fy = partner(y_part, k * NX + i, y_slot);
                            } else {
                                fy = bnd[y_face + k * NX + i] * shape.y;
                            }
                        } else {
                            fy = fin[TY + ii];
                        }
                        var fz: f32;
                        if lvl_first {
                            if z_part != NONE {
                                fz = partner(z_part, j * NX + i, z_slot);
                            } else {
                                fz = bnd[z_face + j * NX + i] * shape.z;
                            }
                        } else {
                            fz = carry[jj * TX + ii];
                        }
                        let at = cur + 3u * (jj * TX + ii);
                        let f = cell_update(at, fx, fy, fz, ax, by, byz, cz, vel, xi2);
                        carry[jj * TX + ii] = f;
                        fx = f;
                        if iu == NX - 1u {
                            record_exit(x_exit, k * NY + j, x_slot, vel.w, f);
                        }
                        if ju == NY - 1u {
                            record_exit(y_exit, k * NX + i, y_slot, vel.w, f);
                        }
                        if kk == NZ - 1u {
                            record_exit(z_exit, j * NX + i, z_slot, vel.w, f);
                        }
                    } else {
                        carry[jj * TX + ii] = fx;
                    }
                }
                xface[(k * NY + j) * FCH + v] = fx;
            } else {
                // Rows past the domain's edge repeat the last real one (jj > 0 here), whose
                // values the y-outflow below then writes.
                // @unroll
                for (var ii = 0u; ii < TX; ii++) {
                    carry[jj * TX + ii] = carry[(max(jj, 1u) - 1u) * TX + ii];
                }
            }
        }
        }
        // @unroll
        for (var ii = 0u; ii < TX; ii++) {
            let iu = a * TX + ii;
            if lvl_full || iu < NX {
                yface[(k * NX + select(iu, NX - 1u - iu, neg_x)) * FCH + v] = carry[(TY - 1u) * TX + ii];
            }
        }
        // The previous level's shares' sum has read `red`, and its sweep, the other coefficient
        // buffer, which the next level's records now fill.
        workgroupBarrier();
        if kk + 1u < NZ {
            // @unroll
            for (var q = 0u; q < RAWQ; q++) {
                if lid + q * BV < NCOEF {
                    coef[((kk + 1u) & 1u) * NCOEF + lid + q * BV] = nraw[q];
                }
            }
            fin = nfin;
        }
        // @unroll
        for (var c = 0u; c < TXTY; c++) {
            red[lid * (TXTY + 1u) + c] = carry[c];
        }
        workgroupBarrier();
        // Each cell's invocation turns its three record entries into its constants in place;
        // nothing else reads that buffer until the next level's sweep, two barriers later.
        if kk + 1u < NZ && lid < TXTY {
            let at = ((kk + 1u) & 1u) * NCOEF + 3u * lid;
            store_cell(lid, cell_const(coef[at], coef[at + 1u], coef[at + 2u]), (kk + 1u) & 1u);
        }
        var acc: array<f32, NPART>;
        if part_runs[PARTS] == PARTS {
            // Every share is one run of TXTY velocities (an octant's x-nodes a multiple of
            // TXTY, as with 32 or 64 points per axis at 4x4): the run's loads unrolled, all in
            // flight at once, where run_sums' loop holds four (its sums in the same order).
            let u0 = rh * TXTY;
            var s0 = 0.0;
            var s1 = 0.0;
            var s2 = 0.0;
            var s3 = 0.0;
            // @unroll
            for (var n = 0u; n < TXTY; n++) {
                let f = red[(u0 + n) * (TXTY + 1u) + rc];
                let w = wpow[u0 + n];
                s0 = fma(w.x, f, s0);
                s1 = fma(w.y, f, s1);
                s2 = fma(w.z, f, s2);
                s3 = fma(w.w, f, s3);
            }
            add_run(&acc, vec4<f32>(s0, s1, s2, s3), xs[u0].y, xs[u0].z);
        } else if halves != 0u {
            // Each half of every share lies within one run (`build_runs`): both halves'
            // loads unrolled as above, each half's sums expanded with its own (y, z). Where
            // both halves are one run this adds its moments in two parts (the 13 moments are
            // linear in the sums).
            let u0 = rh * TXTY;
            var s0 = 0.0;
            var s1 = 0.0;
            var s2 = 0.0;
            var s3 = 0.0;
            // @unroll
            for (var n = 0u; n < TXTY; n++) {
                let f = red[(u0 + n) * (TXTY + 1u) + rc];
                let w = wpow[u0 + n];
                s0 = fma(w.x, f, s0);
                s1 = fma(w.y, f, s1);
                s2 = fma(w.z, f, s2);
                s3 = fma(w.w, f, s3);
                if n == TXTY / 2u - 1u || n == TXTY - 1u {
                    add_run(&acc, vec4<f32>(s0, s1, s2, s3), xs[u0 + n].y, xs[u0 + n].z);
                    s0 = 0.0;
                    s1 = 0.0;
                    s2 = 0.0;
                    s3 = 0.0;
                }
            }
        } else {
            for (var r = part_runs[rh]; r < part_runs[rh + 1u]; r++) {
                let u0 = runs[r];
                add_run(&acc, run_sums(u0, min(runs[r + 1u], (rh + 1u) * TXTY), rc), xs[u0].y, xs[u0].z);
            }
        }
        // The shares of each (cell, moment) added in share order (deterministic), through
        // `red`, by all invocations at once: with 4x4 tiles eight shares, which one
        // invocation per cell used to add while the others waited at the barrier.
        workgroupBarrier();
        // @unroll
        for (var m = 0u; m < NPART; m++) {
            red[(rh * NPART + m) * TXTY + rc] = acc[m];
        }
        workgroupBarrier();
        // Invocation lid adds the pairs t = m TXTY + c (moment m, cell c) = lid + q BV: their
        // shares lie at t in each share's block of `red` and their partial at part0 + t, so
        // that no address needs t's moment and cell apart (a loop that split t into m and c
        // for its addresses spent about 50 of its 72 instructions on them in the driver's
        // listing). The in-grid test folds away in the level copies for tiles inside the grid.
        let part0 = ((wg.y * params.blocks + wg.x) * NZ + k) * NPART * TXTY;
        // @unroll
        for (var q = 0u; q < SUMQ; q++) {
            let t = lid + q * BV;
            let c = t % TXTY;
            if t < NPART * TXTY && (lvl_full || (a * TX + c % TX < NX && b * TY + c / TX < NY)) {
                var sum = red[t];
                for (var h = 1u; h < PARTS; h++) {
                    sum += red[h * NPART * TXTY + t];
                }
                partials[part0 + t] = sum;
            }
        }
    }
}
