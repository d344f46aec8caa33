// moment_slice: one block (128 threads) per cell of the z-slices just swept reduces the
// chunk's velocities into the cell's 13 raw moments and, at the domain boundary, into the
// incident flux of the face cells it touches. The CUDA form of shaders/moment_slice.wgsl
// with its subgroup reduction: warp shuffles in a fixed order, then the warps' sums in
// order; no atomics, so results are deterministic. Launcher: src/backend/cuda/mod.rs.

#define MWG 128u
#define NACC 19u
#define MSTRIDE 16u
// vidx: the 1D weights, then the chunk's velocity indices (src/backend/gpu_tables.rs::
// moment_index): a weight is its f32 bits, or under KN_F64 its f64 in two words (low, high).
#if KN_F64
#define WEIGHT1(i) __hiloint2double((int)vidx[2u * (i) + 1u], (int)vidx[2u * (i)])
#define VIDX_AT (2u * M)
#else
#define WEIGHT1(i) __uint_as_float(vidx[i])
#define VIDX_AT M
#endif

// Record the value velocity g emits at slice cell (i, j) of slice k (along x, y, z in f) for
// every face that keeps exits and that g leaves through there (moment_slice.wgsl::record_exits).
__device__ __forceinline__ void record_exits(real* __restrict__ incident, unsigned g, unsigned i, unsigned j,
                                             unsigned k, const real f[3]) {
    if (g == GHOST) {
        return;
    }
    const unsigned s = j * NX + i;
    if (i == 0u && EXIT0 != NONE) {
        const unsigned sl = slot(g, 0u, false);
        if (sl != NONE) incident[EXIT0 + (k * NY + j) * slots() + sl] = f[0];
    }
    if (i == NX - 1u && EXIT1 != NONE) {
        const unsigned sl = slot(g, 0u, true);
        if (sl != NONE) incident[EXIT1 + (k * NY + j) * slots() + sl] = f[0];
    }
    if (j == 0u && EXIT2 != NONE) {
        const unsigned sl = slot(g, 1u, false);
        if (sl != NONE) incident[EXIT2 + (k * NX + i) * slots() + sl] = f[1];
    }
    if (j == NY - 1u && EXIT3 != NONE) {
        const unsigned sl = slot(g, 1u, true);
        if (sl != NONE) incident[EXIT3 + (k * NX + i) * slots() + sl] = f[1];
    }
    if (k == 0u && EXIT4 != NONE) {
        const unsigned sl = slot(g, 2u, false);
        if (sl != NONE) incident[EXIT4 + s * slots() + sl] = f[2];
    }
    if (k == NZ - 1u && EXIT5 != NONE) {
        const unsigned sl = slot(g, 2u, true);
        if (sl != NONE) incident[EXIT5 + s * slots() + sl] = f[2];
    }
}

extern "C" __global__ void moment_slice(unsigned step, unsigned count, unsigned split,
                                        const unsigned* __restrict__ vidx, const real4* __restrict__ slices,
                                        real* __restrict__ moments, real* __restrict__ incident) {
    __shared__ real red[MWG / 32u][NACC];
    const unsigned s = blockIdx.x + blockIdx.y * gridDim.x;
    if (s >= NX * NY) {
        return;
    }
    const unsigned lid = threadIdx.x;
    const unsigned i = s % NX;
    const unsigned j = s / NX;
    const bool on_x = i == 0u || i == NX - 1u;
    const bool on_y = j == 0u || j == NY - 1u;
    // Part 0: the +z velocities, in slice `step`; part 1: the -z ones, in slice NZ-1-step.
    for (unsigned part = 0u; part < 2u; part++) {
        const unsigned lo = part == 1u ? split : 0u;
        const unsigned hi = part == 1u ? count : split;
        if (lo == hi) {
            continue;
        }
        const unsigned k = part == 1u ? NZ - 1u - step : step;
        const bool on_z = k == 0u || k == NZ - 1u;
        real acc[NACC];
        for (unsigned m = 0u; m < NACC; m++) {
            acc[m] = 0.0f;
        }
        // lo and hi are whole quads (the host pads batches and splits chunks on quads).
        for (unsigned q = lo / 4u + lid; q < hi / 4u; q += MWG) {
            // real4 q of cell s: slice_at(s, 4q) / 4, in 64 bits.
            const real4 f4 = slices[slice_at(s, 4u * q) / 4u];
            const real fl[4] = {f4.x, f4.y, f4.z, f4.w};
            // At the domain boundary, what each velocity carries through the faces: the
            // emitted face values under second order, the cell values under first.
            real fa[3][4];
            for (unsigned d = 0u; d < 3u; d++) {
                real4 e4 = f4;
                if (SLOTS > 1u && (on_x || on_y || on_z)) {
                    e4 = slices[(slot_at(1u + d) + slice_at(s, 4u * q)) / 4u];
                }
                fa[d][0] = e4.x;
                fa[d][1] = e4.y;
                fa[d][2] = e4.z;
                fa[d][3] = e4.w;
            }
            for (unsigned lane = 0u; lane < 4u; lane++) {
                const unsigned g = vidx[VIDX_AT + 4u * q + lane];
                const unsigned ix = g % M;
                const unsigned iy = (g / M) % M;
                const unsigned iz = (g / M / M) % M;
                const real x = (real)((int)(2u * ix) - (int)(M - 1u)) * STEP;
                const real y = (real)((int)(2u * iy) - (int)(M - 1u)) * STEP;
                const real z = (real)((int)(2u * iz) - (int)(M - 1u)) * STEP;
                const real w = g == GHOST ? 0.0f
                                           : WEIGHT1(ix) * WEIGHT1(iy) * WEIGHT1(iz);
                const real wf = w * fl[lane];
                const real face[3] = {fa[0][lane], fa[1][lane], fa[2][lane]};
                const real xi2 = x * x + y * y + z * z;
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
                if (on_x) {
                    acc[13] += w * face[0] * R_MAX(-x, 0.0f);
                    acc[14] += w * face[0] * R_MAX(x, 0.0f);
                }
                if (on_y) {
                    acc[15] += w * face[1] * R_MAX(-y, 0.0f);
                    acc[16] += w * face[1] * R_MAX(y, 0.0f);
                }
                if (on_z) {
                    acc[17] += w * face[2] * R_MAX(-z, 0.0f);
                    acc[18] += w * face[2] * R_MAX(z, 0.0f);
                }
                if (on_x || on_y || on_z) {
                    record_exits(incident, g, i, j, k, face);
                }
            }
        }
        for (unsigned m = 0u; m < NACC; m++) {
            real x = acc[m];
            for (int off = 16; off > 0; off >>= 1) {
                x += __shfl_down_sync(0xffffffffu, x, off);
            }
            if ((lid & 31u) == 0u) {
                red[lid / 32u][m] = x;
            }
        }
        __syncthreads();
        if (lid == 0u) {
            real tot[NACC];
            for (unsigned m = 0u; m < NACC; m++) {
                tot[m] = red[0][m];
                for (unsigned wq = 1u; wq < MWG / 32u; wq++) {
                    tot[m] += red[wq][m];
                }
            }
            const unsigned cell = k * NX * NY + s;
            for (unsigned m = 0u; m < 13u; m++) {
                moments[cell * MSTRIDE + m] += tot[m];
            }
            if (i == 0u) {
                incident[face_offset(0u) + k * NY + j] += tot[13];
            }
            if (i == NX - 1u) {
                incident[face_offset(1u) + k * NY + j] += tot[14];
            }
            if (j == 0u) {
                incident[face_offset(2u) + k * NX + i] += tot[15];
            }
            if (j == NY - 1u) {
                incident[face_offset(3u) + k * NX + i] += tot[16];
            }
            if (k == 0u) {
                incident[face_offset(4u) + s] += tot[17];
            }
            if (k == NZ - 1u) {
                incident[face_offset(5u) + s] += tot[18];
            }
        }
        // `red` is reused by the next part.
        __syncthreads();
    }
}
