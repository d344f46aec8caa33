// The line smoother of the synthetic solve's W-cycle on the GPU: the twin of
// src/solver/synthetic/lines.rs's relax (after synthetic_common.cuh; the factors are in
// synthetic_factor.cu); launcher: src/solver/synthetic/cuda/cycle.rs.

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
