// sweep_level2: one z-level of the fused sweep's tile under the second-order scheme
// (SLOTS > 1; docs/model.md, "Second-order sweep" and "Limiter"). sweep_slice.cu's
// second-order cell, line for line, with its slices replaced by what the fused kernel keeps
// on chip: the cell update is upwind2.cu's solve_cell, the same function the slice kernel
// calls. Between sweep_fused.cu (Ray, the face buffers, record_exit) and
// sweep_fused_march.cu (which calls it). No wall paths: cases with bodies run the slice
// kernels (backend/fused.rs::ineligible).
//
// Where each of the cell's inputs comes from (the slice kernel's names in brackets):
// - along x, the previous cell's three face values (fx; west_y, west_z), in registers, or at
//   the tile's first column the x-face buffer's three planes (the upwind tile's last cell);
// - along y, the previous row's three face values of the same column (fy; south_x,
//   south_z), in registers, or at the tile's first row the y-face buffer's three planes;
// - along z, the cell's own three face values of the previous level (fz; below_x,
//   below_y), each thread's rows of `outs` in shared memory: `zx`, `zy`, `zz`, overwritten
//   in place with this level's once the cell is done.
// The cell value goes to `own` (the thread's row of `red`), which the reduction reads.

// Plane q (0: the outflow along the buffer's axis; 1, 2: the cell's two other face values)
// of the x-face buffer (rows k NY + j) and of the y-face buffer (rows k NX + i).
__device__ __forceinline__ size_t xface2_at(unsigned q, unsigned row, unsigned v) {
    return (size_t)q * NZ * NY * FCH + face_at(row, v);
}
__device__ __forceinline__ size_t yface2_at(unsigned q, unsigned row, unsigned v) {
    return (size_t)q * NZ * NX * FCH + face_at(row, v);
}

// One copy of the loop body in the kernel (sweep_fused_march.cu marches every level through
// one variant), with the tile's shape and the first level as run-time flags and the cell
// loops rolled: unrolled and specialised like sweep_level (16 inlined copies of solve_cell
// in each of 4 variants, 40,000 instructions, 650 KB of code) the kernel ran 3 times slower
// than the slice kernel, its instruction fetch the likely bottleneck, and NVRTC took
// minutes over 8 x 8 tiles (docs/performance.md, "The fused second-order sweep"). The previous row's face values are
// read back from `outs` (already this level's there), the inflows from this level's half of
// the double-buffered `fin` ([plane][x rows (TY), y columns (TX)], stride BV from this
// thread's slot): x planes (out_x, out_y, out_z) and y planes (out_y, out_x, out_z) of the
// upwind cell.
__device__ __forceinline__ void sweep_level2(float* own, float* zx, float* zy, float* zz, const Ray& r,
                                             const float4* cf, const float* fin, const float* inv_w,
                                             const float* __restrict__ bnd, float* __restrict__ xface,
                                             float* __restrict__ yface, float* __restrict__ incident, unsigned a,
                                             unsigned b, unsigned k, unsigned kk, float cz, bool first) {
    const float ux = fabsf(r.vel.x), uy = fabsf(r.vel.y);
    const unsigned nj = b * TY + TY <= NY ? TY : NY - b * TY;
    const unsigned ni = a * TX + TX <= NX ? TX : NX - a * TX;
#pragma unroll 1
    for (unsigned jj = 0u; jj < nj; jj++) {
        const unsigned ju = b * TY + jj;
        const unsigned j = r.neg_y ? NY - 1u - ju : ju;
        const float by = uy * inv_w[TX + jj];
        // The x-inflow and the west cell's y and z face values; at the domain's face no west
        // cell (its limiter side falls back to the cell's own inflows, as in sweep_slice).
        float fx, west_y = 0.0f, west_z = 0.0f;
        bool west_ok = a > 0u;
        if (a == 0u) {
            fx = r.x_part != NONE ? partner(bnd, r.x_part, k * NY + j, r.x_slot) : bnd[r.x_face + k * NY + j] * r.shape.x;
        } else {
            fx = fin[jj * BV];
            west_y = fin[((TX + TY) + jj) * BV];
            west_z = fin[(2u * (TX + TY) + jj) * BV];
        }
#pragma unroll 1
        for (unsigned ii = 0u; ii < ni; ii++) {
            const unsigned iu = a * TX + ii;
            const unsigned i = r.neg_x ? NX - 1u - iu : iu;
            const unsigned c = jj * TX + ii;
            const float ax = ux * inv_w[ii];
            float fy, south_x = 0.0f, south_z = 0.0f;
            bool south_ok = true;
            if (jj == 0u) {
                south_ok = b > 0u;
                if (b == 0u) {
                    fy = r.y_part != NONE ? partner(bnd, r.y_part, k * NX + i, r.y_slot)
                                          : bnd[r.y_face + k * NX + i] * r.shape.y;
                } else {
                    fy = fin[(TY + ii) * BV];
                    south_x = fin[((TX + TY) + TY + ii) * BV];
                    south_z = fin[(2u * (TX + TY) + TY + ii) * BV];
                }
            } else {
                fy = zy[c - TX];
                south_x = zx[c - TX];
                south_z = zz[c - TX];
            }
            float fz, below_x = 0.0f, below_y = 0.0f;
            if (first) {
                fz = r.z_part != NONE ? partner(bnd, r.z_part, j * NX + i, r.z_slot) : bnd[r.z_face + j * NX + i] * r.shape.z;
            } else {
                fz = zz[c];
                below_x = zx[c];
                below_y = zy[c];
            }
            const float4 e0 = cf[3u * c];
            const float4 e1 = cf[3u * c + 1u];
            const float4 e2 = cf[3u * c + 2u];
            // nu f^S as in sweep_level (fused_coeffs' polynomials), then f^S itself for the
            // limiter's ranges: nu = e0.y.
            const float ell = fmaf(e1.x, r.vel.x, fmaf(e1.y, r.vel.y, fmaf(e1.z, r.vel.z, fmaf(e0.x, r.xi2, e2.w))));
            const float sc = fmaf(e2.x, r.vel.x, fmaf(e2.y, r.vel.y, fmaf(e2.z, r.vel.z, e0.z)));
            const float shakhov = fmaf(sc, fmaf(ell, -1.38629436f, e0.w), e1.w);
            const float nu = e0.y;
            const float fs = __fdividef(ex2_ftz(ell) * shakhov, nu);
            const float av[3] = {ax, by, cz};
            const float in[3] = {fx, fy, fz};
            // A neighbour counts where it is upwind (and, without bodies, always fluid);
            // otherwise the cell's own inflow stands in, which leaves the range as it is.
            const bool w_ok = west_ok && ax > 0.0f;
            const bool s_ok = south_ok && by > 0.0f;
            const bool b_ok = !first && cz > 0.0f;
            const float side0[3] = {s_ok ? south_x : fx, w_ok ? west_y : fy, w_ok ? west_z : fz};
            const float side1[3] = {b_ok ? below_x : fx, b_ok ? below_y : fy, s_ok ? south_z : fz};
            const CellUpdate u = solve_cell(av, in, nu, fs, side0, side1);
            own[c] = u.f;
            zx[c] = u.out[0];
            zy[c] = u.out[1];
            zz[c] = u.out[2];
            fx = u.out[0];
            west_y = u.out[1];
            west_z = u.out[2];
            west_ok = true;
            if (iu == NX - 1u) record_exit(incident, r.x_exit, k * NY + j, r.x_slot, r, u.out[0]);
            if (ju == NY - 1u) record_exit(incident, r.y_exit, k * NX + i, r.y_slot, r, u.out[1]);
            if (kk == NZ - 1u) record_exit(incident, r.z_exit, j * NX + i, r.z_slot, r, u.out[2]);
        }
        xface[xface2_at(0u, k * NY + j, r.v)] = fx;
        xface[xface2_at(1u, k * NY + j, r.v)] = west_y;
        xface[xface2_at(2u, k * NY + j, r.v)] = west_z;
    }
    // The y-outflow: the tile's last real row.
    const unsigned last = (nj - 1u) * TX;
#pragma unroll 1
    for (unsigned ii = 0u; ii < ni; ii++) {
        const unsigned iu = a * TX + ii;
        const unsigned row = k * NX + (r.neg_x ? NX - 1u - iu : iu);
        yface[yface2_at(0u, row, r.v)] = zy[last + ii];
        yface[yface2_at(1u, row, r.v)] = zx[last + ii];
        yface[yface2_at(2u, row, r.v)] = zz[last + ii];
    }
}
