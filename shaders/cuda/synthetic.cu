// The synthetic (GSIS) solve on the GPU: the correction operator's products, the multigrid
// W-cycle's stages and GMRES's vector operations. Each kernel is the device twin of a host
// function of src/solver/synthetic (named beside it), with the same arithmetic in the same
// order per cell; the host launcher is src/solver/synthetic/cuda.rs.
//
// Layouts (keep in sync with operator.rs, lines.rs, multigrid.rs): a vector holds NV = 5
// doubles per cell; per cell the diagonal block is 25 doubles (row-major), the neighbour
// blocks 6 x 25 floats (sides in Face::ALL order), the neighbours 6 unsigned (NONE: none);
// line factors and inverted diagonals 25 floats per cell; an aggregate's members 8 unsigned
// (NONE-padded). The blocks are stored cell by cell (not split per entry) because a thread
// reads all of a cell's 850 bytes: consecutive threads then read consecutive memory.
// Independent of the case's sizes: compiled once per run without -D constants.

#define SYN_NV 5u
#define SYN_NONE 0xffffffffu
#define SYN_BLOCK 256u

__device__ __forceinline__ unsigned syn_thread() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

// operator.rs::add_product / sub_product: y += (or -=) A x, A an f32 block, in f64; the
// product is summed first, as on the host.
__device__ __forceinline__ void syn_add_product(double y[SYN_NV], const float* __restrict__ a,
                                                const double* __restrict__ x, double sign) {
    for (unsigned r = 0u; r < SYN_NV; r++) {
        double t = 0.0;
        for (unsigned k = 0u; k < SYN_NV; k++) {
            t += (double)a[r * SYN_NV + k] * x[k];
        }
        y[r] += sign * t;
    }
}

// Operator::off_row: the neighbours' part of (A x) of cell c.
__device__ __forceinline__ void syn_off_row(unsigned c, const float* __restrict__ off,
                                            const unsigned* __restrict__ nbr, const double* __restrict__ x,
                                            double acc[SYN_NV]) {
    for (unsigned k = 0u; k < SYN_NV; k++) {
        acc[k] = 0.0;
    }
    for (unsigned s = 0u; s < 6u; s++) {
        const unsigned n = nbr[c * 6u + s];
        if (n != SYN_NONE) {
            syn_add_product(acc, off + ((size_t)c * 6u + s) * 25u, x + (size_t)n * SYN_NV, 1.0);
        }
    }
}

// Operator::row and HostSpace::residual: out = A x, or b - A x when has_b.
extern "C" __global__ void syn_row(unsigned cells, const double* __restrict__ diag, const float* __restrict__ off,
                                   const unsigned* __restrict__ nbr, unsigned has_b, const double* __restrict__ b,
                                   const double* __restrict__ x, double* __restrict__ out) {
    const unsigned c = syn_thread();
    if (c >= cells) {
        return;
    }
    double acc[SYN_NV];
    syn_off_row(c, off, nbr, x, acc);
    const double* d = diag + (size_t)c * 25u;
    const double* xc = x + (size_t)c * SYN_NV;
    for (unsigned r = 0u; r < SYN_NV; r++) {
        double t = 0.0;
        for (unsigned k = 0u; k < SYN_NV; k++) {
            t += d[r * SYN_NV + k] * xc[k];
        }
        acc[r] += t;
    }
    for (unsigned r = 0u; r < SYN_NV; r++) {
        out[(size_t)c * SYN_NV + r] = has_b != 0u ? b[(size_t)c * SYN_NV + r] - acc[r] : acc[r];
    }
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

// Multigrid::jacobi: out = (1 - w) x + w D^-1 (b - O x).
extern "C" __global__ void syn_jacobi(unsigned cells, const float* __restrict__ off, const unsigned* __restrict__ nbr,
                                      const float* __restrict__ inv, const double* __restrict__ b,
                                      const double* __restrict__ x, double w, double* __restrict__ out) {
    const unsigned c = syn_thread();
    if (c >= cells) {
        return;
    }
    double ox[SYN_NV];
    syn_off_row(c, off, nbr, x, ox);
    double res[SYN_NV];
    for (unsigned k = 0u; k < SYN_NV; k++) {
        res[k] = b[(size_t)c * SYN_NV + k] - ox[k];
    }
    double d[SYN_NV] = {0.0, 0.0, 0.0, 0.0, 0.0};
    syn_add_product(d, inv + (size_t)c * 25u, res, 1.0);
    for (unsigned k = 0u; k < SYN_NV; k++) {
        out[(size_t)c * SYN_NV + k] = (1.0 - w) * x[(size_t)c * SYN_NV + k] + w * d[k];
    }
}

// Lines::relax: five lanes per line, one per row of the 5x5 block products, six lines per
// warp (lanes 30 and 31 idle). One thread per line left the GPU nearly empty (33,000 lines on
// the paper cube's finest level: 8 warps per SM) and each thread's march latency-bound;
// five lanes per line read each block row by row and fill five times the warps. A lane holds
// its row of the vector the march carries (the previous cell's y forward, the next cell's
// solution backward) and gets the other rows by shuffles, which every lane of the warp runs
// (the lines of a warp may break at different cells). Forward elimination into y, then back
// substitution; out = x + w (x_line - x), with x = 0 when has_x is 0. Each row's sums run
// over k in the host's order.
#define SYN_LANES 5u
#define SYN_LINES_PER_WARP 6u
extern "C" __global__ void syn_lines(unsigned axis, unsigned d0, unsigned d1, unsigned d2,
                                     const float* __restrict__ off, const unsigned* __restrict__ nbr,
                                     const float* __restrict__ m, const float* __restrict__ dinv,
                                     const double* __restrict__ b, unsigned has_x, const double* __restrict__ x,
                                     double w, double* __restrict__ y, double* __restrict__ out) {
    const unsigned tid = syn_thread();
    const unsigned lane = threadIdx.x % 32u;
    const unsigned t = (tid / 32u) * SYN_LINES_PER_WARP + lane / SYN_LANES;
    const unsigned row = lane % SYN_LANES;
    const unsigned base = lane - row;
    const unsigned n = axis == 0u ? d0 : (axis == 1u ? d1 : d2);
    const unsigned lines = d0 * d1 * d2 / n;
    const bool active = lane < SYN_LANES * SYN_LINES_PER_WARP && t < lines;
    const unsigned stride = axis == 0u ? 1u : (axis == 1u ? d0 : d0 * d1);
    // Lines along y and z start at consecutive cells for consecutive lines (coalesced).
    const unsigned c0 = axis == 0u ? t * d0 : (axis == 1u ? (t / d0) * d0 * d1 + t % d0 : t);
    const unsigned s_prev = 2u * axis, s_next = 2u * axis + 1u;
    double carry = 0.0;
    for (unsigned i = 0u; i < n; i++) {
        const unsigned c = c0 + i * stride;
        double r = 0.0;
        bool prev = false;
        if (active) {
            r = b[(size_t)c * SYN_NV + row];
            // Lines::joined: coupled to the previous cell of the line.
            prev = i > 0u && nbr[c * 6u + s_prev] == c - stride;
            const bool next = i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c;
            if (has_x != 0u) {
                for (unsigned s = 0u; s < 6u; s++) {
                    const unsigned nb = nbr[c * 6u + s];
                    const bool inline_ = (s == s_prev && prev) || (s == s_next && next);
                    if (nb != SYN_NONE && !inline_) {
                        const float* a = off + ((size_t)c * 6u + s) * 25u + row * SYN_NV;
                        const double* xn = x + (size_t)nb * SYN_NV;
                        double tt = 0.0;
                        for (unsigned k = 0u; k < SYN_NV; k++) {
                            tt += (double)a[k] * xn[k];
                        }
                        r -= tt;
                    }
                }
            }
        }
        double ck[SYN_NV];
        for (unsigned k = 0u; k < SYN_NV; k++) {
            ck[k] = __shfl_sync(0xffffffffu, carry, base + k);
        }
        if (active) {
            if (prev) {
                const float* a = m + (size_t)c * 25u + row * SYN_NV;
                double tt = 0.0;
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    tt += (double)a[k] * ck[k];
                }
                r -= tt;
            }
            y[(size_t)c * SYN_NV + row] = r;
            carry = r;
        }
    }
    for (unsigned j = n; j > 0u; j--) {
        const unsigned i = j - 1u;
        const unsigned c = c0 + i * stride;
        double xn[SYN_NV];
        for (unsigned k = 0u; k < SYN_NV; k++) {
            xn[k] = __shfl_sync(0xffffffffu, carry, base + k);
        }
        double tt = 0.0;
        if (active) {
            tt = y[(size_t)c * SYN_NV + row];
            if (i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c) {
                const float* a = off + ((size_t)c * 6u + s_next) * 25u + row * SYN_NV;
                double u = 0.0;
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    u += (double)a[k] * xn[k];
                }
                tt -= u;
            }
        }
        double tk[SYN_NV];
        for (unsigned k = 0u; k < SYN_NV; k++) {
            tk[k] = __shfl_sync(0xffffffffu, tt, base + k);
        }
        if (active) {
            const float* a = dinv + (size_t)c * 25u + row * SYN_NV;
            double xl = 0.0;
            for (unsigned k = 0u; k < SYN_NV; k++) {
                xl += (double)a[k] * tk[k];
            }
            // The carry now holds this cell's line solution, for the cell before.
            carry = xl;
            const double old = has_x != 0u ? x[(size_t)c * SYN_NV + row] : 0.0;
            out[(size_t)c * SYN_NV + row] = old + w * (xl - old);
        }
    }
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

// krylov::invert: a 5x5 inverse by Gauss-Jordan elimination with partial pivoting (the
// last of equal pivots, as the host's max_by); false when singular.
__device__ bool syn_invert(const double a[25], double inv[25]) {
    double m[25];
    for (unsigned i = 0u; i < 25u; i++) {
        m[i] = a[i];
        inv[i] = (i / SYN_NV == i % SYN_NV) ? 1.0 : 0.0;
    }
    for (unsigned col = 0u; col < SYN_NV; col++) {
        unsigned piv = col;
        for (unsigned i = col + 1u; i < SYN_NV; i++) {
            if (fabs(m[i * SYN_NV + col]) >= fabs(m[piv * SYN_NV + col])) {
                piv = i;
            }
        }
        const double p = m[piv * SYN_NV + col];
        if (p == 0.0 || !isfinite(p)) {
            return false;
        }
        if (piv != col) {
            for (unsigned k = 0u; k < SYN_NV; k++) {
                double t = m[col * SYN_NV + k];
                m[col * SYN_NV + k] = m[piv * SYN_NV + k];
                m[piv * SYN_NV + k] = t;
                t = inv[col * SYN_NV + k];
                inv[col * SYN_NV + k] = inv[piv * SYN_NV + k];
                inv[piv * SYN_NV + k] = t;
            }
        }
        const double d = 1.0 / m[col * SYN_NV + col];
        for (unsigned k = 0u; k < SYN_NV; k++) {
            m[col * SYN_NV + k] *= d;
            inv[col * SYN_NV + k] *= d;
        }
        for (unsigned r = 0u; r < SYN_NV; r++) {
            const double f = m[r * SYN_NV + col];
            if (r != col && f != 0.0) {
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    m[r * SYN_NV + k] -= f * m[col * SYN_NV + k];
                    inv[r * SYN_NV + k] -= f * inv[col * SYN_NV + k];
                }
            }
        }
    }
    return true;
}

// Lines::factor: one thread per line (as syn_lines), the block-tridiagonal factors
// M_i = L_i Dp_{i-1}^-1 and Dp_i^-1 with Dp_i = D_i - M_i U_{i-1}, stored in f32; Dp^-1 is
// carried in f64 along the line, as on the host. A singular pivot stores a zero inverse.
extern "C" __global__ void syn_line_factor(unsigned axis, unsigned d0, unsigned d1, unsigned d2,
                                           const double* __restrict__ diag, const float* __restrict__ off,
                                           const unsigned* __restrict__ nbr, float* __restrict__ m_out,
                                           float* __restrict__ dinv_out) {
    const unsigned t = syn_thread();
    const unsigned n = axis == 0u ? d0 : (axis == 1u ? d1 : d2);
    const unsigned lines = d0 * d1 * d2 / n;
    if (t >= lines) {
        return;
    }
    const unsigned stride = axis == 0u ? 1u : (axis == 1u ? d0 : d0 * d1);
    const unsigned c0 = axis == 0u ? t * d0 : (axis == 1u ? (t / d0) * d0 * d1 + t % d0 : t);
    const unsigned s_prev = 2u * axis, s_next = 2u * axis + 1u;
    double prev[25];
    for (unsigned i = 0u; i < 25u; i++) {
        prev[i] = 0.0;
    }
    for (unsigned i = 0u; i < n; i++) {
        const unsigned c = c0 + i * stride;
        double d[25], m[25];
        for (unsigned e = 0u; e < 25u; e++) {
            d[e] = diag[(size_t)c * 25u + e];
            m[e] = 0.0;
        }
        if (i > 0u && nbr[c * 6u + s_prev] == c - stride) {
            const float* l = off + ((size_t)c * 6u + s_prev) * 25u;
            const float* u = off + ((size_t)(c - stride) * 6u + s_next) * 25u;
            // flux::mul, twice: m = L Dp^-1, then d -= m U.
            for (unsigned r = 0u; r < SYN_NV; r++) {
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    double s = 0.0;
                    for (unsigned j = 0u; j < SYN_NV; j++) {
                        s += (double)l[r * SYN_NV + j] * prev[j * SYN_NV + k];
                    }
                    m[r * SYN_NV + k] = s;
                }
            }
            for (unsigned r = 0u; r < SYN_NV; r++) {
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    double s = 0.0;
                    for (unsigned j = 0u; j < SYN_NV; j++) {
                        s += m[r * SYN_NV + j] * (double)u[j * SYN_NV + k];
                    }
                    d[r * SYN_NV + k] += -1.0 * s;
                }
            }
        }
        if (!syn_invert(d, prev)) {
            for (unsigned e = 0u; e < 25u; e++) {
                prev[e] = 0.0;
            }
        }
        for (unsigned e = 0u; e < 25u; e++) {
            m_out[(size_t)c * 25u + e] = (float)m[e];
            dinv_out[(size_t)c * 25u + e] = (float)prev[e];
        }
    }
}
