// The line smoother of the synthetic solve's W-cycle on the GPU: the twins of
// src/solver/synthetic/lines.rs (relax and factor) and of krylov::invert. Uses
// synthetic.cu's helpers (the host puts it after that file); launcher:
// src/solver/synthetic/cuda/cycle.rs and cuda/mod.rs.

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
// Cells of a line whose loads are issued together: the loads of a cell (its right-hand side,
// couplings, off-line products, factor rows) do not depend on the march's carry, so a chunk's
// are in flight at once instead of one cell's at a time, each cell having cost about one
// global-memory latency (~1.1-1.5 us per cell on an H100, whatever the level's size). The
// arithmetic and its order are the same as one cell at a time.
#define SYN_AHEAD 4u
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
    for (unsigned i0 = 0u; i0 < n; i0 += SYN_AHEAD) {
        double rs[SYN_AHEAD];
        bool pv[SYN_AHEAD];
        float mr[SYN_AHEAD][SYN_NV];
#pragma unroll
        for (unsigned a = 0u; a < SYN_AHEAD; a++) {
            const unsigned i = i0 + a;
            const unsigned c = c0 + i * stride;
            rs[a] = 0.0;
            pv[a] = false;
            for (unsigned k = 0u; k < SYN_NV; k++) {
                mr[a][k] = 0.0f;
            }
            if (active && i < n) {
                double r = b[(size_t)c * SYN_NV + row];
                // Lines::joined: coupled to the previous cell of the line.
                const bool prev = i > 0u && nbr[c * 6u + s_prev] == c - stride;
                const bool next = i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c;
                if (has_x != 0u) {
                    for (unsigned s = 0u; s < 6u; s++) {
                        const unsigned nb = nbr[c * 6u + s];
                        const bool inline_ = (s == s_prev && prev) || (s == s_next && next);
                        if (nb != SYN_NONE && !inline_) {
                            r -= syn_row_product(off + ((size_t)c * 6u + s) * 25u + row * SYN_NV,
                                                 x + (size_t)nb * SYN_NV);
                        }
                    }
                }
                rs[a] = r;
                pv[a] = prev;
                if (prev) {
                    for (unsigned k = 0u; k < SYN_NV; k++) {
                        mr[a][k] = m[(size_t)c * 25u + row * SYN_NV + k];
                    }
                }
            }
        }
#pragma unroll
        for (unsigned a = 0u; a < SYN_AHEAD; a++) {
            const unsigned i = i0 + a;
            // n is the launch's: every lane takes the same branch, as the shuffles need.
            if (i < n) {
                const unsigned c = c0 + i * stride;
                double ck[SYN_NV];
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    ck[k] = __shfl_sync(0xffffffffu, carry, base + k);
                }
                if (active) {
                    double r = rs[a];
                    if (pv[a]) {
                        r -= syn_row_product(mr[a], ck);
                    }
                    y[(size_t)c * SYN_NV + row] = r;
                    carry = r;
                }
            }
        }
    }
    for (unsigned j0 = n; j0 > 0u;) {
        const unsigned cnt = j0 < SYN_AHEAD ? j0 : SYN_AHEAD;
        double ts[SYN_AHEAD], olds[SYN_AHEAD];
        bool nx[SYN_AHEAD];
        float orow[SYN_AHEAD][SYN_NV], drow[SYN_AHEAD][SYN_NV];
#pragma unroll
        for (unsigned a = 0u; a < SYN_AHEAD; a++) {
            ts[a] = 0.0;
            olds[a] = 0.0;
            nx[a] = false;
            for (unsigned k = 0u; k < SYN_NV; k++) {
                orow[a][k] = 0.0f;
                drow[a][k] = 0.0f;
            }
            if (active && a < cnt) {
                const unsigned i = j0 - 1u - a;
                const unsigned c = c0 + i * stride;
                ts[a] = y[(size_t)c * SYN_NV + row];
                nx[a] = i + 1u < n && nbr[(c + stride) * 6u + s_prev] == c;
                if (nx[a]) {
                    for (unsigned k = 0u; k < SYN_NV; k++) {
                        orow[a][k] = off[((size_t)c * 6u + s_next) * 25u + row * SYN_NV + k];
                    }
                }
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    drow[a][k] = dinv[(size_t)c * 25u + row * SYN_NV + k];
                }
                olds[a] = has_x != 0u ? x[(size_t)c * SYN_NV + row] : 0.0;
            }
        }
#pragma unroll
        for (unsigned a = 0u; a < SYN_AHEAD; a++) {
            if (a < cnt) {
                const unsigned i = j0 - 1u - a;
                const unsigned c = c0 + i * stride;
                double xn[SYN_NV];
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    xn[k] = __shfl_sync(0xffffffffu, carry, base + k);
                }
                double tt = 0.0;
                if (active) {
                    tt = ts[a];
                    if (nx[a]) {
                        tt -= syn_row_product(orow[a], xn);
                    }
                }
                double tk[SYN_NV];
                for (unsigned k = 0u; k < SYN_NV; k++) {
                    tk[k] = __shfl_sync(0xffffffffu, tt, base + k);
                }
                if (active) {
                    // add_product into zero, as on the host (0 + t: the sign of a zero too).
                    const double xl = 0.0 + syn_row_product(drow[a], tk);
                    // The carry now holds this cell's line solution, for the cell before.
                    carry = xl;
                    out[(size_t)c * SYN_NV + row] = olds[a] + w * (xl - olds[a]);
                }
            }
        }
        j0 -= cnt;
    }
}

// krylov::invert: a 5x5 inverse by Gauss-Jordan elimination with partial pivoting (the
// last of equal pivots, as the host's max_by); false when singular or not finite.
__device__ bool syn_invert(const double a[25], double inv[25]) {
    double m[25];
    for (unsigned i = 0u; i < 25u; i++) {
        m[i] = a[i];
        inv[i] = (i / SYN_NV == i % SYN_NV) ? 1.0 : 0.0;
    }
    for (unsigned col = 0u; col < SYN_NV; col++) {
        unsigned piv = col;
        for (unsigned i = col + 1u; i < SYN_NV; i++) {
            // A NaN ranks above every number, as in total_cmp: then the block is singular.
            const double v = fabs(m[i * SYN_NV + col]), best = fabs(m[piv * SYN_NV + col]);
            if (isnan(v) || (!isnan(best) && v >= best)) {
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
