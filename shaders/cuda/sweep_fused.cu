// sweep_fused: the on-chip sweep (src/backend/fused.rs has the plan and the byte count).
// A block is BV velocities of one octant and one TX x TY tile of cells, (a, b) in the
// velocities' upwind frame, on the tile diagonal a + b = diag of this launch. Each thread
// sweeps its velocity through the tile's column of cells over all z in upwind order with the
// z-carry (the previous z-level of the tile) in its own row of the shared array `red`, where
// the level's values are overwritten in place and then reduced; the tile's x- and y-inflows are
// the face buffers its upwind neighbour tiles wrote in the previous launch, and its outflows
// replace them there for the next. After each z-level the block reduces the level's 13 raw
// moments per cell over its velocities in shared memory and writes one partial per cell;
// fused_moments (fused_moments.cu) adds the partials of the launch into the moment sums in
// a fixed order.
// Launcher: src/backend/cuda/fused.rs. Sizes: NX NY NZ M SROW (common.cuh), TX TY BV FCH.
// This file: the definitions and the first-order level (sweep_level); the second-order
// level is sweep_fused2.cu's sweep_level2, and the march and the kernel follow in
// sweep_fused_march.cu (the host joins them in that order, src/backend/cuda/kernels.rs).

#define TXTY (TX * TY)
#define NTX ((NX + TX - 1u) / TX)
#define NTY ((NY + TY - 1u) / TY)
// The raw moments per cell; the partials per (block, cell) add, under second order, the
// face fluxes of the emitted face values along x, y, z (backend/fused.rs::FACE_PARTIALS),
// and its face buffers carry three planes (sweep_fused2.cu).
#define NMOM 13u
#if SLOTS > 1u
#define NPART 16u
#define FPLANES 3u
#else
#define NPART 13u
#define FPLANES 1u
#endif
// Threads summing each cell of a level (BV / TXTY; fused.rs checks the division).
#define PARTS (BV / TXTY)
// The tile must divide the block (fused.rs::tile_fits); a preprocessor test, as NVRTC 11
// (Kepler) rejects static_assert here.
#if BV % TXTY != 0
#error "the fused sweep's tile does not divide its block (fused.rs::tile_fits)"
#endif

// Face buffer entry of row `row` (k NY + j for x-faces, k NX + i for y-faces) and velocity v:
// [row][velocity], so a warp's accesses coalesce. 64-bit: 128^3 cells at 2^20 velocities
// exceed 2^32 values.
__device__ __forceinline__ size_t face_at(unsigned row, unsigned v) { return (size_t)row * FCH + v; }

// Partial m of cell c (in the tile) at level k of block vb, tile slot t: [t][vb][k][m][c], so
// the writes (threads on c) and fused_moments' reads (threads on cells) coalesce.
__device__ __forceinline__ size_t partial_at(unsigned t, unsigned vb, unsigned blocks, unsigned k, unsigned m,
                                             unsigned c) {
    return ((((size_t)t * blocks + vb) * NZ + k) * NPART + m) * TXTY + c;
}

// Fast intrinsics with denormals flushed (the sweep is f32 throughout; a value below
// 1e-38 is zero to it): 2^x and 1/x in one MUFU instruction each.
__device__ __forceinline__ float ex2_ftz(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float rcp_ftz(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// What a thread keeps of its velocity.
struct Ray {
    float4 vel, shape;
    // |xi|^2: with it the exponent of f^S is a polynomial in xi (fused_coeffs).
    float xi2;
    unsigned v, x_face, y_face, z_face;
    bool neg_x, neg_y;
    // Specular and periodic faces: the velocity's slot along each axis (common.cuh::slot;
    // NONE parallel to the face), the partner data of its upwind faces and the exits of its
    // downwind faces (PART*, EXIT*: NONE where the face has none, and the reads and writes
    // fold away).
    unsigned x_slot, y_slot, z_slot, x_part, y_part, z_part, x_exit, y_exit, z_exit;
};

__device__ __forceinline__ unsigned exit_at(unsigned face) {
    switch (face) {
        case 0u: return EXIT0;
        case 1u: return EXIT1;
        case 2u: return EXIT2;
        case 3u: return EXIT3;
        case 4u: return EXIT4;
        default: return EXIT5;
    }
}

// What velocity r carries out of the domain at face cell `idx` of a specular or periodic
// face (moment_slice.cu::record_exits): the partner of that face reads it next iteration.
// Ghost slots (zero weight) record nothing.
__device__ __forceinline__ void record_exit(float* __restrict__ incident, unsigned at, unsigned idx, unsigned sl,
                                            const Ray& r, float f) {
    if (at != NONE && sl != NONE && r.vel.w != 0.0f) {
        incident[at + idx * slots() + sl] = f;
    }
}

// One z-level of the tile for one velocity: the cells in upwind order, the x- and y-inflows
// from the face buffers (or the box faces), the z-inflow from `own` (the thread's row of
// `red`: the previous level's values, or, FIRST, the box face); `own` becomes this level's
// values and the outflows go to the face buffers. FULL: the tile lies inside the domain (no
// edge tests). WALLS: the tile has a wall cell at this level (the wall paths are compiled
// in; a copy without them serves the other levels). Why `own` and not registers: a 64-value
// carry held 64 of the 255 registers and left 2 blocks per SM; in shared memory it costs one
// load per point, and the level's values are already where the reduction reads them.
template <bool FULL, bool FIRST, bool WALLS>
__device__ __forceinline__ void sweep_level(float* own, const Ray& r, const float4* cf, const float (&fin)[TX + TY],
                                            const unsigned* words, const float* inv_w,
                                            const float4* __restrict__ cells,
                                            const float* __restrict__ bnd, const float4* __restrict__ table,
                                            float* __restrict__ xface, float* __restrict__ yface,
                                            float* __restrict__ incident, unsigned a, unsigned b, unsigned k,
                                            unsigned kk, float cz, bool first_level) {
    // The wall variant is one copy for every level (sweep_level_walls): there the first
    // level is a run-time flag.
    const bool first = WALLS ? first_level : FIRST;
    const float ux = fabsf(r.vel.x), uy = fabsf(r.vel.y);
    // This level's previous row: the y-inflows of the next (a tile's first row is inside
    // the domain, so every row that reads it has one before it).
    float row[TX];
#pragma unroll
    for (unsigned ii = 0u; ii < TX; ii++) {
        row[ii] = 0.0f;
    }
#pragma unroll
    for (unsigned jj = 0u; jj < TY; jj++) {
        const unsigned ju = b * TY + jj;
        if (!FULL && ju >= NY) {
            // Rows past the domain's edge repeat the last real one, whose values the
            // y-outflow below then writes.
#pragma unroll
            for (unsigned ii = 0u; ii < TX; ii++) {
                own[jj * TX + ii] = row[ii];
            }
            continue;
        }
        const unsigned j = r.neg_y ? NY - 1u - ju : ju;
        const float by = uy * inv_w[TX + jj];
        // The denominator's terms shared by the row.
        const float byz = by + cz;
        float fx = fin[jj];
        if (a == 0u) {
            fx = r.x_part != NONE ? partner(bnd, r.x_part, k * NY + j, r.x_slot) : bnd[r.x_face + k * NY + j] * r.shape.x;
        }
#pragma unroll
        for (unsigned ii = 0u; ii < TX; ii++) {
            const unsigned iu = a * TX + ii;
            if (!FULL && iu >= NX) {
                own[jj * TX + ii] = fx;
                row[ii] = fx;
                continue;
            }
            const unsigned i = r.neg_x ? NX - 1u - iu : iu;
            const float ax = ux * inv_w[ii];
            float fy = row[ii];
            if (jj == 0u) {
                fy = fin[TY + ii];
                if (b == 0u) {
                    fy = r.y_part != NONE ? partner(bnd, r.y_part, k * NX + i, r.y_slot)
                                          : bnd[r.y_face + k * NX + i] * r.shape.y;
                }
            }
            float fz;
            if (first) {
                fz = r.z_part != NONE ? partner(bnd, r.z_part, j * NX + i, r.z_slot) : bnd[r.z_face + j * NX + i] * r.shape.z;
            } else {
                fz = own[jj * TX + ii];
            }
            bool solid = false;
            if (WALLS) {
                // The cell's wall word (src/grid/solid.rs), the same for the whole block: a
                // uniform branch. As in sweep_slice: a solid cell holds no gas; a wall side
                // upwind of a fluid cell emits its body's Maxwellian.
                const unsigned word = words[jj * TX + ii];
                solid = (word & SOLID) != 0u;
                if (!solid && word != 0u) {
                    const unsigned cell = (k * NY + j) * NX + i;
                    const unsigned xs = r.neg_x ? 1u : 0u, ys = r.neg_y ? 3u : 2u, zs = r.vel.z < 0.0f ? 5u : 4u;
                    if (((word >> xs) & 1u) != 0u) fx = wall_emission(cells, bnd, table, word, xs, cell, r.v);
                    if (((word >> ys) & 1u) != 0u) fy = wall_emission(cells, bnd, table, word, ys, cell, r.v);
                    if (((word >> zs) & 1u) != 0u) fz = wall_emission(cells, bnd, table, word, zs, cell, r.v);
                }
            }
            const float4 e0 = cf[3u * (jj * TX + ii)];
            const float4 e1 = cf[3u * (jj * TX + ii) + 1u];
            const float4 e2 = cf[3u * (jj * TX + ii) + 2u];
            // The collision term's nu f^S = 2^ell (base + s.c (2 |c|^2 / T - 5)) from
            // polynomials in xi with the cell's constants (fused_coeffs): ell = log2 of nu
            // times the Maxwellian factor, and the Shakhov term's s.c.
            const float ell = fmaf(e1.x, r.vel.x, fmaf(e1.y, r.vel.y, fmaf(e1.z, r.vel.z, fmaf(e0.x, r.xi2, e2.w))));
            const float sc = fmaf(e2.x, r.vel.x, fmaf(e2.y, r.vel.y, fmaf(e2.z, r.vel.z, e0.z)));
            const float shakhov = fmaf(sc, fmaf(ell, -1.38629436f, e0.w), e1.w);
            const float num = fmaf(ex2_ftz(ell), shakhov, fmaf(ax, fx, fmaf(by, fy, cz * fz)));
            // No gas in a solid cell (it adds nothing to any moment).
            const float f = solid ? 0.0f : num * rcp_ftz(ax + byz + e0.y);
            own[jj * TX + ii] = f;
            row[ii] = f;
            fx = f;
            if (iu == NX - 1u) record_exit(incident, r.x_exit, k * NY + j, r.x_slot, r, f);
            if (ju == NY - 1u) record_exit(incident, r.y_exit, k * NX + i, r.y_slot, r, f);
            if (kk == NZ - 1u) record_exit(incident, r.z_exit, j * NX + i, r.z_slot, r, f);
        }
        xface[face_at(k * NY + j, r.v)] = fx;
    }
#pragma unroll
    for (unsigned ii = 0u; ii < TX; ii++) {
        const unsigned iu = a * TX + ii;
        if (FULL || iu < NX) {
            yface[face_at(k * NX + (r.neg_x ? NX - 1u - iu : iu), r.v)] = row[ii];
        }
    }
}

// The levels whose tile has a wall cell: one variant (edge tests kept, the first level a
// run-time flag) in a function of its own. With a wall variant inlined per tile shape and
// level kind the kernel held eight copies of the TX x TY level, and with bodies NVRTC and
// the driver took 28 s to compile it in an H100 host's first run; as one function, 12.8 s,
// for a sweep 1.5% slower on the paper cube (two functions, one per tile shape, were 3%
// slower; docs/performance.md, "The wall levels in one function"). Called only at wall
// levels (a uniform branch in march_level); the inflows and the ray come by value, so that
// the callers keep theirs in registers.
struct Inflows {
    float v[TX + TY];
};
__device__ __noinline__ void sweep_level_walls(float* own, const Ray r, const float4* cf, const Inflows fin,
                                               const unsigned* words, const float* inv_w,
                                               const float4* __restrict__ cells, const float* __restrict__ bnd,
                                               const float4* __restrict__ table, float* __restrict__ xface,
                                               float* __restrict__ yface, float* __restrict__ incident, unsigned a,
                                               unsigned b, unsigned k, unsigned kk, float cz, bool first_level) {
    sweep_level<false, false, true>(own, r, cf, fin.v, words, inv_w, cells, bnd, table, xface, yface, incident, a, b,
                                    k, kk, cz, first_level);
}

