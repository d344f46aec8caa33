// The line smoother's factors on the GPU: the twins of src/solver/synthetic/lines.rs
// (factor) and of krylov::invert (after synthetic_common.cuh); launcher:
// src/solver/synthetic/cuda/mod.rs.

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
