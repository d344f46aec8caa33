// The synthetic solve's operator products, multigrid transfers, Jacobi and dense stages
// and GMRES's vector operations (after synthetic_common.cuh, which has the layouts).

// Operator::row and HostSpace::residual: out = A x, or b - A x when has_b. Five lanes per
// cell, one per block row, six cells per warp (lanes 30 and 31 idle): with a thread per cell
// each load of a warp touched 32 rows 850 B apart, and the finest level's product ran at
// half the memory bandwidth; a lane's row is the same sums in the same order as the cell's
// thread made for it (Operator::off_row's order, then the diagonal block's product).
#define SYN_ROW_CELLS_PER_WARP 6u
extern "C" __global__ void syn_row(unsigned cells, const double* __restrict__ diag, const float* __restrict__ off,
                                   const unsigned* __restrict__ nbr, unsigned has_b, const double* __restrict__ b,
                                   const double* __restrict__ x, double* __restrict__ out) {
    const unsigned lane = threadIdx.x % 32u;
    const unsigned c = (syn_thread() / 32u) * SYN_ROW_CELLS_PER_WARP + lane / SYN_NV;
    const unsigned r = lane % SYN_NV;
    if (lane >= SYN_NV * SYN_ROW_CELLS_PER_WARP || c >= cells) {
        return;
    }
    double acc = 0.0;
    for (unsigned s = 0u; s < 6u; s++) {
        const unsigned n = nbr[c * 6u + s];
        if (n != SYN_NONE) {
            acc += 1.0 * syn_row_product(off + ((size_t)c * 6u + s) * 25u + r * SYN_NV, x + (size_t)n * SYN_NV);
        }
    }
    const double* d = diag + (size_t)c * 25u + r * SYN_NV;
    const double* xc = x + (size_t)c * SYN_NV;
    double t = 0.0;
    for (unsigned k = 0u; k < SYN_NV; k++) {
        t += d[k] * xc[k];
    }
    acc += t;
    out[(size_t)c * SYN_NV + r] = has_b != 0u ? b[(size_t)c * SYN_NV + r] - acc : acc;
}

// Multigrid::cycle's restriction: an aggregate's residual is the sum of its members', in
// member order.
extern "C" __global__ void syn_restrict(unsigned coarse, const unsigned* __restrict__ children,
                                        const double* __restrict__ r, double* __restrict__ rc) {
    const unsigned p = syn_thread();
    if (p >= coarse) {
        return;
    }
    double t[SYN_NV] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (unsigned m = 0u; m < 8u; m++) {
        const unsigned c = children[p * 8u + m];
        if (c == SYN_NONE) {
            break;
        }
        for (unsigned k = 0u; k < SYN_NV; k++) {
            t[k] += r[(size_t)c * SYN_NV + k];
        }
    }
    for (unsigned k = 0u; k < SYN_NV; k++) {
        rc[(size_t)p * SYN_NV + k] = t[k];
    }
}

// Multigrid::cycle's prolongation: x += oc xc(parent), piecewise constant.
extern "C" __global__ void syn_prolong(unsigned cells, const unsigned* __restrict__ parent, double oc,
                                       const double* __restrict__ xc, double* __restrict__ x) {
    const unsigned c = syn_thread();
    if (c >= cells) {
        return;
    }
    const unsigned p = parent[c];
    if (p == SYN_NONE) {
        return;
    }
    for (unsigned k = 0u; k < SYN_NV; k++) {
        x[(size_t)c * SYN_NV + k] += oc * xc[(size_t)p * SYN_NV + k];
    }
}

// Multigrid::cycle's first Jacobi sweep from x = 0: x = w D^-1 b.
extern "C" __global__ void syn_jacobi_first(unsigned cells, const float* __restrict__ inv, const double* __restrict__ b,
                                            double w, double* __restrict__ x) {
    const unsigned c = syn_thread();
    if (c >= cells) {
        return;
    }
    double o[SYN_NV] = {0.0, 0.0, 0.0, 0.0, 0.0};
    syn_add_product(o, inv + (size_t)c * 25u, b + (size_t)c * SYN_NV, 1.0);
    for (unsigned k = 0u; k < SYN_NV; k++) {
        x[(size_t)c * SYN_NV + k] = o[k] * w;
    }
}

// Multigrid::jacobi: out = (1 - w) x + w D^-1 (b - O x). Five lanes per cell as in syn_row
// (a thread per cell read 32 rows 850 B apart per load): lane r sums row r of O x, the five
// residuals are exchanged within the cell's lanes, and lane r forms row r of D^-1 times them;
// each with the host's sums (Operator::off_row, operator.rs::add_product) in their order.
extern "C" __global__ void syn_jacobi(unsigned cells, const float* __restrict__ off, const unsigned* __restrict__ nbr,
                                      const float* __restrict__ inv, const double* __restrict__ b,
                                      const double* __restrict__ x, double w, double* __restrict__ out) {
    const unsigned lane = threadIdx.x % 32u;
    const unsigned c = (syn_thread() / 32u) * SYN_ROW_CELLS_PER_WARP + lane / SYN_NV;
    const unsigned r = lane % SYN_NV;
    const bool active = lane < SYN_NV * SYN_ROW_CELLS_PER_WARP && c < cells;
    double res = 0.0;
    if (active) {
        double ox = 0.0;
        for (unsigned s = 0u; s < 6u; s++) {
            const unsigned n = nbr[c * 6u + s];
            if (n != SYN_NONE) {
                ox += 1.0 * syn_row_product(off + ((size_t)c * 6u + s) * 25u + r * SYN_NV, x + (size_t)n * SYN_NV);
            }
        }
        res = b[(size_t)c * SYN_NV + r] - ox;
    }
    // Every lane takes part in the exchange (idle ones read lanes they never use).
    const unsigned first = (lane / SYN_NV) * SYN_NV;
    double rs[SYN_NV];
    for (unsigned k = 0u; k < SYN_NV; k++) {
        rs[k] = __shfl_sync(0xffffffffu, res, (first + k) % 32u);
    }
    if (!active) {
        return;
    }
    double d = 0.0;
    d += 1.0 * syn_row_product(inv + (size_t)c * 25u + r * SYN_NV, rs);
    out[(size_t)c * SYN_NV + r] = (1.0 - w) * x[(size_t)c * SYN_NV + r] + w * d;
}

// Multigrid::solve_coarsest: x = A^-1 b with the coarsest operator's inverse, stored by
// columns (inv_t[k n + r] = (A^-1)_{rk}) so that the threads of a warp read neighbours.
extern "C" __global__ void syn_dense(unsigned n, const double* __restrict__ inv_t, const double* __restrict__ b,
                                     double* __restrict__ x) {
    const unsigned r = syn_thread();
    if (r >= n) {
        return;
    }
    double t = 0.0;
    for (unsigned k = 0u; k < n; k++) {
        t += inv_t[(size_t)k * n + r] * b[k];
    }
    x[r] = t;
}

// y += s x over len doubles.
extern "C" __global__ void syn_axpy(unsigned len, double s, const double* __restrict__ x, double* __restrict__ y) {
    const unsigned i = syn_thread();
    if (i < len) {
        y[i] += s * x[i];
    }
}

// y *= s over len doubles.
extern "C" __global__ void syn_scale(unsigned len, double s, double* __restrict__ y) {
    const unsigned i = syn_thread();
    if (i < len) {
        y[i] *= s;
    }
}

// A block's sum of its threads' values, by a fixed tree (deterministic).
__device__ double syn_block_sum(double v) {
    __shared__ double part[SYN_BLOCK];
    part[threadIdx.x] = v;
    __syncthreads();
    for (unsigned h = SYN_BLOCK / 2u; h > 0u; h /= 2u) {
        if (threadIdx.x < h) {
            part[threadIdx.x] += part[threadIdx.x + h];
        }
        __syncthreads();
    }
    return part[0];
}

// krylov::dot, first stage: block g sums a.b over the elements i = g SYN_BLOCK + t + k
// gridDim SYN_BLOCK, in that order per thread, then by a fixed tree. The grid size depends
// only on len, so the sum's grouping, and its bits, are the same on every run.
extern "C" __global__ void syn_dot(unsigned len, const double* __restrict__ a, const double* __restrict__ b,
                                   double* __restrict__ partials) {
    double t = 0.0;
    for (unsigned i = blockIdx.x * SYN_BLOCK + threadIdx.x; i < len; i += gridDim.x * SYN_BLOCK) {
        t += a[i] * b[i];
    }
    const double s = syn_block_sum(t);
    if (threadIdx.x == 0u) {
        partials[blockIdx.x] = s;
    }
}

// krylov::dot, second stage: one block adds the partials.
extern "C" __global__ void syn_dot_total(unsigned parts, const double* __restrict__ partials,
                                         double* __restrict__ total) {
    double t = 0.0;
    for (unsigned i = threadIdx.x; i < parts; i += SYN_BLOCK) {
        t += partials[i];
    }
    const double s = syn_block_sum(t);
    if (threadIdx.x == 0u) {
        total[0] = s;
    }
}
