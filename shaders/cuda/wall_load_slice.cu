// wall_load_slice: one block (64 threads) per body wall face of the z-slices just swept
// reduces the chunk's velocities moving into the face to its incident sums: number flux,
// momentum flux (3) and energy flux. The CUDA form of shaders/wall_load_slice.wgsl;
// deterministic (fixed shuffle order, no atomics). Launcher: src/backend/cuda/mod.rs.

#define WWG 64u
#define NSUM 5u

extern "C" __global__ void wall_load_slice(unsigned step, unsigned count, unsigned split,
                                           const real4* __restrict__ table, const real* __restrict__ slices,
                                           const uint4* __restrict__ walls, real* __restrict__ wall_sums) {
    __shared__ real red[WWG / 32u][NSUM];
    // Part 0: the +z velocities, in slice `step`; part 1: the -z ones, in slice NZ-1-step.
    const unsigned part = blockIdx.z;
    const unsigned lo = part == 1u ? split : 0u;
    const unsigned hi = part == 1u ? count : split;
    const unsigned k = part == 1u ? NZ - 1u - step : step;
    const uint4 range = walls[k];
    const unsigned n = blockIdx.x + blockIdx.y * gridDim.x;
    // In the middle slice of an odd NZ both parts sit in slice `step` and would add to the
    // same wall faces from two blocks at once, losing one update: there part 0 takes the
    // whole chunk and part 1 leaves.
    const bool middle = step == NZ - 1u - step;
    const unsigned hi_all = middle ? count : hi;
    // Uniform across the block: the whole block leaves together.
    if (lo == hi_all || n >= range.y || (middle && part == 1u)) {
        return;
    }
    const uint4 face = walls[NZ + range.x + n];
    const unsigned s = face.x;
    const unsigned axis = face.y / 2u;
    // Inward normal of the side as a box face: +1 on a min side, -1 on a max side.
    const real inward = (face.y & 1u) == 1u ? -1.0f : 1.0f;
    const unsigned lid = threadIdx.x;
    real acc[NSUM] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (unsigned v = lo + lid; v < hi_all; v += WWG) {
        const real4 vel = table[v * (SROW + 1u)];
        const real comp = axis == 0u ? vel.x : (axis == 1u ? vel.y : vel.z);
        const real un = comp * inward;
        if (un < 0.0f) {
            // Under second order the value emitted along the wall's axis (slot 1 + axis).
            const real wf = vel.w * (-un) * slices[(SLOTS > 1u ? slot_at(1u + axis) : 0u) + slice_at(s, v)];
            acc[0] += wf;
            acc[1] += wf * vel.x;
            acc[2] += wf * vel.y;
            acc[3] += wf * vel.z;
            acc[4] += wf * 0.5f * (vel.x * vel.x + vel.y * vel.y + vel.z * vel.z);
        }
    }
    for (unsigned m = 0u; m < NSUM; m++) {
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
        for (unsigned m = 0u; m < NSUM; m++) {
            wall_sums[face.z * NSUM + m] += red[0][m] + red[1][m];
        }
    }
}
