// sweep_slice: SLICE_ROWS threads per velocity of a chunk sweep z-slice k of its distribution
// in upwind order, in place. The CUDA form of shaders/sweep_slice.wgsl: same structure, same
// buffers and layouts (slice storage [slice cell][chunk velocity], stride CH, so a warp's
// loads and stores coalesce). Launcher: src/backend/cuda/mod.rs.
//
// Rows in flight (SLICE_ROWS, src/backend/slice_rows.rs): the SLICE_ROWS threads of a
// velocity, neighbours in one warp, take a block of as many rows and sweep them as a
// wavefront, thread t one step behind thread t - 1, so that the y-upwind value a thread reads
// is the one its neighbour wrote in the step before (`__syncwarp` orders them). With few
// velocities in flight (32^3 velocities: a third of an H200's wave, one thread per velocity)
// this multiplies the threads by SLICE_ROWS and shortens each one's chain of dependent cells
// by about as much; every cell's arithmetic is the one it had with one thread per velocity,
// so the results are the same bits. SLICE_ROWS = 1 is the plain row-by-row sweep.
#ifndef SLICE_ROWS
#define SLICE_ROWS 1u
#endif

// Start of the face densities in `bnd` (after 1/dx, 1/dy, 1/dz).
__device__ __forceinline__ unsigned dens() { return NX + NY + NZ; }
__device__ __forceinline__ unsigned wall_base() { return dens() + 2u * (NY * NZ + NX * NZ + NX * NY); }

// Emission into velocity v of the wall face on side `side` of fluid cell `cell`: its wall
// density times its body's Maxwellian; the body is read from the solid neighbour's word.
__device__ real wall_emission(const real4* __restrict__ cells, const real* __restrict__ bnd,
                               const real4* __restrict__ table, unsigned word, unsigned side,
                               unsigned cell, unsigned v) {
    const unsigned mask = word & 63u;
    const unsigned w = (word >> 6u) + __popc(mask & ((1u << side) - 1u));
    const unsigned axis = side / 2u;
    const unsigned step = axis == 0u ? 1u : (axis == 1u ? NX : NX * NY);
    const unsigned nb = (side & 1u) == 1u ? cell + step : cell - step;
    const unsigned body = R_BITS(cells[3u * nb].w) & ~SOLID;
    const real4 row = table[v * (SROW + 1u) + 2u + body / 4u];
    const real r[4] = {row.x, row.y, row.z, row.w};
    return bnd[wall_base() + w] * r[body % 4u];
}

__device__ __forceinline__ unsigned part_at(unsigned face) {
    switch (face) {
        case 0u: return PART0;
        case 1u: return PART1;
        case 2u: return PART2;
        case 3u: return PART3;
        case 4u: return PART4;
        default: return PART5;
    }
}

// The partner inflow of face cell `idx` at slot `sl`, from the face's data at `at` in bnd.
__device__ __forceinline__ real partner(const real* __restrict__ bnd, unsigned at, unsigned idx, unsigned sl) {
    // A velocity parallel to the face: its upwind coefficient is zero.
    return sl == NONE ? 0.0f : bnd[at + idx * slots() + sl];
}

// solve_cell(), the second-order cell update: shaders/cuda/upwind2.cu, before this file.

// In f64 twice the registers per value: 8 blocks (128 registers) instead of 18. Keep in sync
// with SWEEP_MIN_BLOCKS in src/backend/slice_rows.rs (its rule counts the resident threads).
#if KN_F64
#define SWEEP_MIN_BLOCKS 8
#else
#define SWEEP_MIN_BLOCKS 18
#endif
// 64 threads (SWEEP_WG) and 18 blocks per SM: 56 registers, 36 warps per SM. Without the cap the
// second-order update (upwind2.cu::piece_root) takes 69 and 28 warps, and the sweep was 9%
// slower (docs/performance.md, "The clamped cells' root"); first order needs 40-45.
extern "C" __global__ void __launch_bounds__(64, SWEEP_MIN_BLOCKS) sweep_slice(unsigned step, unsigned count, unsigned split,
                                       const real4* __restrict__ cells, const real* __restrict__ bnd,
                                       const real4* __restrict__ table, real* __restrict__ slices) {
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x + blockIdx.y * gridDim.x * blockDim.x;
    const unsigned v = g / SLICE_ROWS;
    const unsigned lane = g % SLICE_ROWS;
    // Threads past the last velocity stay for the warp's `__syncwarp`s, doing nothing.
    const bool live = v < count;
    if (SLICE_ROWS == 1u && !live) {
        return;
    }
    const unsigned vt = live ? v : 0u;
    const real4 vel = table[vt * (SROW + 1u)];
    const real4 shape = table[vt * (SROW + 1u) + 1u];
    const bool neg_x = vel.x < 0.0f;
    const bool neg_y = vel.y < 0.0f;
    const bool neg_z = vel.z < 0.0f;
    const unsigned k = neg_z ? NZ - 1u - step : step;
    const bool first = step == 0u;
    const unsigned x_face = dens() + face_offset(neg_x ? 1u : 0u);
    const unsigned y_face = dens() + face_offset(neg_y ? 3u : 2u);
    const unsigned z_face = dens() + face_offset(neg_z ? 5u : 4u);
    const real c = R_ABS(vel.z) * bnd[NX + NY + k];
    const unsigned gv = R_BITS(shape.w);
    const unsigned x_part = part_at(neg_x ? 1u : 0u);
    const unsigned y_part = part_at(neg_y ? 3u : 2u);
    const unsigned z_part = part_at(neg_z ? 5u : 4u);
    const unsigned x_slot = slot(gv, 0u, !neg_x);
    const unsigned y_slot = slot(gv, 1u, !neg_y);
    const unsigned z_slot = slot(gv, 2u, !neg_z);
    // Under second order the upwind y and z values are the emitted face values (slots 2, 3).
    const bool second = SLOTS > 1u;
    const size_t y_in = second ? slot_at(2u) : 0u;
    const size_t z_in = second ? slot_at(3u) : 0u;
    const unsigned ys = neg_y ? 3u : 2u;
    const unsigned zs = neg_z ? 5u : 4u;
    for (unsigned jb = 0u; jb < NY; jb += SLICE_ROWS) {
        const unsigned jj = jb + lane;
        const bool row = live && jj < NY;
        const unsigned j = neg_y ? NY - 1u - jj : jj;
        const unsigned jup = neg_y ? j + 1u : j - 1u;
        real b = 0.0f;
        // The x-upwind value is the cell just updated; it stays in a register.
        real fx = 0.0f;
        if (row) {
            b = R_ABS(vel.y) * bnd[NX + j];
            fx = x_part != NONE ? partner(bnd, x_part, k * NY + j, x_slot) : bnd[x_face + k * NY + j] * shape.x;
        }
        // Second order: the previous cell's y and z face values, two of the limiter's
        // neighbour faces (upwind2.cu), unset at the row start and after a solid cell.
        real west_y = 0.0f, west_z = 0.0f;
        bool west_ok = false;
        // Step `st` of the wavefront: this thread's row takes cell ii = st - lane.
        for (unsigned st = 0u; st < NX + SLICE_ROWS - 1u; st++) {
            const unsigned ii = st - lane;
            // `break` leaves the cell (a solid one), not the wavefront.
            if (row && st >= lane && ii < NX) {
                do {
                    const unsigned i = neg_x ? NX - 1u - ii : ii;
                    const real a = R_ABS(vel.x) * bnd[i];
                    const unsigned s = j * NX + i;
                    // Upwind loads first, then the cell's own data (sweep_slice.wgsl says why).
                    real fy = jj == 0u ? (y_part != NONE ? partner(bnd, y_part, k * NX + i, y_slot)
                                                          : bnd[y_face + k * NX + i] * shape.y)
                                        : slices[y_in + slice_at(jup * NX + i, v)];
                    real fz = first ? (z_part != NONE ? partner(bnd, z_part, s, z_slot) : bnd[z_face + s] * shape.z)
                                     : slices[z_in + slice_at(s, v)];
                    // Second order: the face values the row before (south: x, z) and the slice before
                    // (below: x, y, still in place at s) emitted beside this cell's faces.
                    real south_x = 0.0f, south_z = 0.0f, below_x = 0.0f, below_y = 0.0f;
                    if (second && jj > 0u) {
                        south_x = slices[slot_at(1u) + slice_at(jup * NX + i, v)];
                        south_z = slices[slot_at(3u) + slice_at(jup * NX + i, v)];
                    }
                    if (second && !first) {
                        below_x = slices[slot_at(1u) + slice_at(s, v)];
                        below_y = slices[slot_at(2u) + slice_at(s, v)];
                    }
                    const unsigned cell = k * NX * NY + s;
                    const real4 e0 = cells[3u * cell];
                    const unsigned word = HAS_WALLS ? R_BITS(e0.w) : 0u;
                    if ((word & SOLID) != 0u) {
                        // No gas inside a body: nothing to add to any moment.
                        for (unsigned o = 0u; o < SLOTS; o++) {
                            slices[slot_at(o) + slice_at(s, v)] = 0.0f;
                        }
                        fx = 0.0f;
                        west_ok = false;
                        break;
                    }
                    if (word != 0u) {
                        const unsigned xs = neg_x ? 1u : 0u;
                        if (((word >> xs) & 1u) != 0u) {
                            fx = wall_emission(cells, bnd, table, word, xs, cell, v);
                        }
                        if (((word >> ys) & 1u) != 0u) {
                            fy = wall_emission(cells, bnd, table, word, ys, cell, v);
                        }
                        if (((word >> zs) & 1u) != 0u) {
                            fz = wall_emission(cells, bnd, table, word, zs, cell, v);
                        }
                    }
                    const real4 e1 = cells[3u * cell + 1u];
                    const real4 e2 = cells[3u * cell + 2u];
                    const real cx = vel.x - e1.x, cy = vel.y - e1.y, cz = vel.z - e1.z;
                    const real c2 = cx * cx + cy * cy + cz * cz;
                    const real sc = e2.x * cx + e2.y * cy + e2.z * cz;
                    const real fs = e0.x * R_EXP(-c2 * e0.y) * (e1.w + sc * (2.0f * c2 * e0.y - 5.0f));
                    if (second) {
                        const real av[3] = {a, b, c};
                        const real in[3] = {fx, fy, fz};
                        // A neighbour counts where it is upwind and fluid; otherwise the cell's own
                        // inflow stands in, which leaves the range as it is.
                        const bool w_ok = west_ok && a > 0.0f;
                        const bool s_ok = jj > 0u && b > 0.0f && ((word >> ys) & 1u) == 0u;
                        const bool b_ok = !first && c > 0.0f && ((word >> zs) & 1u) == 0u;
                        const real side0[3] = {s_ok ? south_x : fx, w_ok ? west_y : fy, w_ok ? west_z : fz};
                        const real side1[3] = {b_ok ? below_x : fx, b_ok ? below_y : fy, s_ok ? south_z : fz};
                        const CellUpdate u = solve_cell(av, in, e0.z, fs, side0, side1);
                        slices[slice_at(s, v)] = u.f;
                        for (unsigned d = 0u; d < 3u; d++) {
                            slices[slot_at(1u + d) + slice_at(s, v)] = u.out[d];
                        }
                        fx = u.out[0];
                        west_y = u.out[1];
                        west_z = u.out[2];
                        west_ok = true;
                        break;
                    }
                    const real f = (a * fx + b * fy + c * fz + e0.z * fs) / (a + b + c + e0.z);
                    slices[slice_at(s, v)] = f;
                    fx = f;
                } while (false);
            }
            if (SLICE_ROWS > 1u) {
                // The next step's y-upwind loads read what the neighbour thread just wrote.
                __syncwarp();
            }
        }
    }
}
