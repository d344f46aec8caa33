// sweep_fused2: the fused on-chip sweep under the second-order scheme (docs/model.md,
// "Second-order sweep" and "Limiter"), the WGSL form of shaders/cuda/sweep_fused2.cu's
// sweep_level2 with sweep_fused_march.cu's second-order march. The host
// (src/backend/wgpu/fused.rs::source) puts it after fused_common.wgsl (bindings, workgroup
// arrays, helpers) with NPART = 16, and appends upwind2.wgsl, whose solve_cell is the cell
// update of the slice kernel as well. No wall paths: cases with bodies run the slice kernels
// (backend/fused.rs::ineligible). Opt-in (`KNUDSEN_SWEEP=fused`): measured slower than the
// slice kernels on an H100 (docs/performance.md, "The fused second-order sweep in WGSL").
//
// Where each of the cell's inputs comes from (sweep_fused2.cu's names):
// - along x, the previous cell's three face values (fx; west_y, west_z), in registers, or at
//   the tile's first column the x-face buffer's three planes (the upwind tile's last cell);
// - along y, the previous row's three face values of the same column (fy; south_x,
//   south_z), read back from `outs`, or at the tile's first row the y-face buffer's planes;
// - along z, the cell's own three face values of the previous level (fz; below_x,
//   below_y), in `outs`, overwritten in place with this level's once the cell is done.
// The cell value goes to `red`, which the reduction reads. The cell loops are rolled, as in
// CUDA, where unrolled copies of solve_cell made the kernel three times slower. The face
// buffers' inflows are read where they are used: loaded one level ahead and kept in
// workgroup memory, as CUDA copies them, they made the kernel 47% slower at 4 x 2 (H100;
// docs/performance.md, "The fused second-order sweep in WGSL").

const NMOM: u32 = 13u;
// Row stride of `red` and of each plane of `outs` (TXTY + 1: bank-conflict free, as `red`).
const ROW: u32 = TXTY + 1u;
// One plane of `outs`.
const PLANE: u32 = BV * ROW;
// Partials per pass of the shares' sum through `red` (PLANE floats hold PARTS x SHARE_M x
// TXTY): all 16 in one pass from 4 x 4 tiles on, two at the default 4 x 2 and at 2 x 4, four
// at 2 x 2.
const SHARE_M: u32 = min(NPART, ROW);

// [3][BV][ROW]: each invocation's face values along x, y, z per cell of the tile: the
// z-carry, overwritten in place by the level's.
var<workgroup> outs: array<f32, 3u * PLANE>;

// Plane q (0: the outflow along the buffer's axis; 1, 2: the cell's two other face values)
// of the x-face buffer (rows k NY + j) and of the y-face buffer (rows k NX + i).
fn xface2_at(q: u32, row: u32, v: u32) -> u32 {
    return (q * NZ * NY + row) * FCH + v;
}
fn yface2_at(q: u32, row: u32, v: u32) -> u32 {
    return (q * NZ * NX + row) * FCH + v;
}

// The inflow at face cell `idx` of a box face: its partner data (specular, periodic) or its
// density times the velocity's inflow shape.
fn box_inflow(part: u32, face: u32, idx: u32, sl: u32, shape: f32) -> f32 {
    if part != NONE {
        return partner(part, idx, sl);
    }
    return bnd[face + idx] * shape;
}

@compute @workgroup_size(128)
fn sweep_fused2(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
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
    // The tile's real rows and columns (fewer on the grid's far edges).
    let nj = min(TY, NY - b * TY);
    let ni = min(TX, NX - a * TX);
    // The tile reaches a downwind face of the domain along x or y: the face fluxes count.
    let edge_xy = a == (NX + TX - 1u) / TX - 1u || b == (NY + TY - 1u) / TY - 1u;
    // This invocation's row of `red` and of each plane of `outs`.
    let own = lid * ROW;
    for (var kk = 0u; kk < NZ; kk++) {
        let k = select(kk, NZ - 1u - kk, neg_z);
        let cur = (kk & 1u) * NCOEF;
        let first = kk == 0u;
        // The next level's coefficients, loaded now and stored after this level's update.
        var next: CellConst;
        if kk + 1u < NZ && lid < TXTY {
            next = cell_coeffs(lid, a, b, select(k + 1u, k - 1u, neg_z), neg_x, neg_y);
        }
        let cz = uz * bnd[NX + NY + k];
        for (var jj = 0u; jj < nj; jj++) {
            let ju = b * TY + jj;
            let j = select(ju, NY - 1u - ju, neg_y);
            let by = uy * inv_w[TX + jj];
            // The x-inflow and the west cell's y and z face values; at the domain's face no
            // west cell (its limiter side falls back to the cell's own inflows).
            var fx: f32;
            var west_y = 0.0;
            var west_z = 0.0;
            var west_ok = a > 0u;
            if a == 0u {
                fx = box_inflow(x_part, x_face, k * NY + j, x_slot, shape.x);
            } else {
                fx = xface[xface2_at(0u, k * NY + j, v)];
                west_y = xface[xface2_at(1u, k * NY + j, v)];
                west_z = xface[xface2_at(2u, k * NY + j, v)];
            }
            for (var ii = 0u; ii < ni; ii++) {
                let iu = a * TX + ii;
                let i = select(iu, NX - 1u - iu, neg_x);
                let c = jj * TX + ii;
                let ax = ux * inv_w[ii];
                var fy: f32;
                var south_x = 0.0;
                var south_z = 0.0;
                var south_ok = true;
                if jj == 0u {
                    south_ok = b > 0u;
                    if b == 0u {
                        fy = box_inflow(y_part, y_face, k * NX + i, y_slot, shape.y);
                    } else {
                        fy = yface[yface2_at(0u, k * NX + i, v)];
                        south_x = yface[yface2_at(1u, k * NX + i, v)];
                        south_z = yface[yface2_at(2u, k * NX + i, v)];
                    }
                } else {
                    fy = outs[PLANE + own + c - TX];
                    south_x = outs[own + c - TX];
                    south_z = outs[2u * PLANE + own + c - TX];
                }
                var fz: f32;
                var below_x = 0.0;
                var below_y = 0.0;
                if first {
                    fz = box_inflow(z_part, z_face, j * NX + i, z_slot, shape.z);
                } else {
                    fz = outs[2u * PLANE + own + c];
                    below_x = outs[own + c];
                    below_y = outs[PLANE + own + c];
                }
                let e0 = coef[cur + 3u * c];
                let e1 = coef[cur + 3u * c + 1u];
                let e2 = coef[cur + 3u * c + 2u];
                // nu f^S as in sweep_fused.wgsl (cell_coeffs' polynomials), then f^S itself
                // for the limiter's ranges: nu = e0.y.
                let ell = fma(e1.x, vel.x, fma(e1.y, vel.y, fma(e1.z, vel.z, fma(e0.x, xi2, e2.w))));
                let sc = fma(e2.x, vel.x, fma(e2.y, vel.y, fma(e2.z, vel.z, e0.z)));
                let shakhov = fma(sc, fma(ell, -1.38629436, e0.w), e1.w);
                let nu = e0.y;
                let fs = exp2(ell) * shakhov / nu;
                // A neighbour counts where it is upwind (and, without bodies, always fluid);
                // otherwise the cell's own inflow stands in, which leaves the range as it is.
                let w_ok = west_ok && ax > 0.0;
                let s_ok = south_ok && by > 0.0;
                let b_ok = !first && cz > 0.0;
                let side0 = vec3<f32>(select(fx, south_x, s_ok), select(fy, west_y, w_ok), select(fz, west_z, w_ok));
                let side1 = vec3<f32>(select(fx, below_x, b_ok), select(fy, below_y, b_ok), select(fz, south_z, s_ok));
                let u = solve_cell(vec3<f32>(ax, by, cz), vec3<f32>(fx, fy, fz), nu, fs, side0, side1);
                red[own + c] = u.f;
                outs[own + c] = u.out.x;
                outs[PLANE + own + c] = u.out.y;
                outs[2u * PLANE + own + c] = u.out.z;
                fx = u.out.x;
                west_y = u.out.y;
                west_z = u.out.z;
                west_ok = true;
                if iu == NX - 1u {
                    record_exit(x_exit, k * NY + j, x_slot, vel.w, u.out.x);
                }
                if ju == NY - 1u {
                    record_exit(y_exit, k * NX + i, y_slot, vel.w, u.out.y);
                }
                if kk == NZ - 1u {
                    record_exit(z_exit, j * NX + i, z_slot, vel.w, u.out.z);
                }
            }
            xface[xface2_at(0u, k * NY + j, v)] = fx;
            xface[xface2_at(1u, k * NY + j, v)] = west_y;
            xface[xface2_at(2u, k * NY + j, v)] = west_z;
        }
        // The y-outflow: the tile's last real row.
        let last = own + (nj - 1u) * TX;
        for (var ii = 0u; ii < ni; ii++) {
            let iu = a * TX + ii;
            let row = k * NX + select(iu, NX - 1u - iu, neg_x);
            yface[yface2_at(0u, row, v)] = outs[PLANE + last + ii];
            yface[yface2_at(1u, row, v)] = outs[last + ii];
            yface[yface2_at(2u, row, v)] = outs[2u * PLANE + last + ii];
        }
        // Every invocation's values are in `red` and `outs`; the previous level's readers of
        // the other coefficient buffer are done.
        workgroupBarrier();
        if kk + 1u < NZ && lid < TXTY {
            store_cell(lid, next, (kk + 1u) & 1u);
        }
        let edge = edge_xy || kk == NZ - 1u;
        var acc: array<f32, NPART>;
        for (var r = part_runs[rh]; r < part_runs[rh + 1u]; r++) {
            let u0 = runs[r];
            let u1 = min(runs[r + 1u], (rh + 1u) * TXTY);
            let s = run_sums(u0, u1, rc);
            let y = xs[u0].y;
            let z = xs[u0].z;
            if edge {
                // The face fluxes of the emitted face values, w x F_x, w F_y, w F_z along
                // the run (y and z are the run's): fused_moments adds them on the box faces,
                // where under second order they differ from the momentum sums.
                var tx = 0.0;
                var ty = 0.0;
                var tz = 0.0;
                for (var u = u0; u < u1; u++) {
                    let w = wpow[u];
                    tx = fma(w.y, outs[u * ROW + rc], tx);
                    ty = fma(w.x, outs[PLANE + u * ROW + rc], ty);
                    tz = fma(w.x, outs[2u * PLANE + u * ROW + rc], tz);
                }
                acc[NMOM] += tx;
                acc[NMOM + 1u] += y * ty;
                acc[NMOM + 2u] += z * tz;
            }
            add_run(&acc, s, y, z);
        }
        // The shares of each (cell, partial) added in share order (deterministic) through
        // `red`, SHARE_M partials per pass, by all invocations at once.
        for (var m0 = 0u; m0 < NPART; m0 += SHARE_M) {
            workgroupBarrier();
            // @unroll
            for (var m = 0u; m < NPART; m++) {
                if m >= m0 && m < m0 + SHARE_M {
                    red[(rh * SHARE_M + m - m0) * TXTY + rc] = acc[m];
                }
            }
            workgroupBarrier();
            for (var t = lid; t < SHARE_M * TXTY; t += BV) {
                let mm = t / TXTY;
                let c = t % TXTY;
                if m0 + mm < NPART && a * TX + c % TX < NX && b * TY + c / TX < NY {
                    var sum = red[mm * TXTY + c];
                    for (var h = 1u; h < PARTS; h++) {
                        sum += red[(h * SHARE_M + mm) * TXTY + c];
                    }
                    partials[(((wg.y * params.blocks + wg.x) * NZ + k) * NPART + m0 + mm) * TXTY + c] = sum;
                }
            }
        }
        // The next level's sweep writes `red`: its reads end here.
        workgroupBarrier();
    }
}
