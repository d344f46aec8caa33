// The sweep's per-cell records from the macroscopic fields, on the device: the twin of
// src/backend/gpu_io.rs::cell_records, which takes them from the host's
// src/model.rs::EqCoeffs::new_on_grid (same formulas, same order of terms; f64 throughout,
// rounded to the record's `real` only at the end). Not the same bits in f64: the device's exp
// and pow and NVRTC's contracted multiply-adds differ from the host's in the last place or
// two, which the f32 records' rounding hides (tests/device/records.sh: the same fields) and
// the f64 ones keep (about 1e-16: docs/benchmarks.md, "CUDA in f64"). One thread per cell. The host used to spend ~0.4 us of
// one core per cell on the grid sums below, every iteration; here a 64^3 grid takes
// microseconds, and the host uploads the fields instead of the records.
//
// fields: CELL_FIELDS doubles per cell, (rho, U_x, U_y, U_z, T, q_x, q_y, q_z)
//   (src/backend/gpu_io.rs::pack_fields, RECORD_FIELDS);
// vgrid:  the M velocity nodes of one axis, then their M 1D weights;
// words:  the wall word of each cell (src/grid/solid.rs), read only when HAS_WALLS;
// cells:  12 values per cell (f32, or f64 under KN_F64: common.cuh), the layout of src/backend/wgpu/layout.rs::CellCoeffs:
//   (pref, 1/T, nu, wall word), (U, base), (s, log2(e)/T), U and T the matched parameters
//   (matched_maxwellian below), not the state's.
// Keep in sync with those three.

#define CELL_FIELDS 8u

// sum_i w_i g_i (x_i - u)^n, n = 0..3, g_i = exp(-(x_i - u)^2 / t), by the recurrence of
// src/model.rs::gaussian_moments_of: outward from the node nearest u, up then down.
__device__ void gaussian_moments(const double* __restrict__ nodes, const double* __restrict__ w1, double u,
                                 double t, double m[4]) {
    m[0] = 0.0; m[1] = 0.0; m[2] = 0.0; m[3] = 0.0;
    if (M < 2u) {
        for (unsigned i = 0u; i < M; ++i) {
            const double x = nodes[i] - u;
            const double wg = w1[i] * exp(-(x * x) / t);
            m[0] += wg; m[1] += wg * x; m[2] += wg * x * x; m[3] += wg * x * x * x;
        }
        return;
    }
    const double h = nodes[1] - nodes[0];
    const double c = exp(-2.0 * h * h / t);
    // round() halves away from zero, as Rust's f64::round; clamped before the conversion.
    const unsigned k = (unsigned)fmin(fmax(round((u - nodes[0]) / h), 0.0), (double)(M - 1u));
    for (int pass = 0; pass < 2; ++pass) {
        const int dir = pass == 0 ? 1 : -1;
        const unsigned first = pass == 0 ? k : (k > 0u ? k - 1u : 0u);
        const unsigned count = pass == 0 ? M - k : k;
        const double dh = (double)dir * h;
        const double d = nodes[first] - u;
        double g = exp(-d * d / t);
        double r = exp(-(2.0 * d * dh + h * h) / t);
        for (unsigned step = 0u; step < count; ++step) {
            const unsigned i = (unsigned)((int)first + dir * (int)step);
            const double x = nodes[i] - u;
            const double wg = w1[i] * g;
            m[0] += wg; m[1] += wg * x; m[2] += wg * x * x; m[3] += wg * x * x * x;
            g *= r;
            r *= c;
        }
    }
}

// src/model.rs::matched_maxwellian, line for line: the parameters (v, s) of the grid
// Maxwellian whose discrete momentum and energy are the state's (u, t), and their sums g.
// Keep MATCH_* in sync with src/model.rs.
#define MATCH_UPDATES 8
#define MATCH_TOL 1e-13
#define MATCH_REACH 0.25
__device__ void matched_maxwellian(const double* __restrict__ vgrid, const double u[3], double t, double v[3],
                                   double* s, double g[3][4]) {
    for (int a = 0; a < 3; ++a) {
        v[a] = u[a];
        gaussian_moments(vgrid, vgrid + M, u[a], t, g[a]);
    }
    *s = t;
    for (int k = 0; k < MATCH_UPDATES; ++k) {
        double mean[3], shift[3];
        for (int a = 0; a < 3; ++a) mean[a] = g[a][1] / g[a][0];
        const double var = (g[0][2] / g[0][0] - mean[0] * mean[0]) + (g[1][2] / g[1][0] - mean[1] * mean[1]) +
                           (g[2][2] / g[2][0] - mean[2] * mean[2]);
        for (int a = 0; a < 3; ++a) shift[a] = v[a] + mean[a] - u[a];
        const double heat = (var - 1.5 * t) / 1.5;
        // Each defect squared against the tolerance's, in units of T (mean) and T^2 (variance).
        const double b = MATCH_TOL * MATCH_TOL * t;
        if (heat * heat / t <= b && shift[0] * shift[0] <= b && shift[1] * shift[1] <= b && shift[2] * shift[2] <= b)
            break;
        // Only the defects beyond it move their parameter: a drift that is zero stays exactly
        // zero instead of taking the round-off of its mean.
        double v1[3] = {v[0], v[1], v[2]}, s1 = *s;
        for (int a = 0; a < 3; ++a)
            if (shift[a] * shift[a] > b) v1[a] = v[a] - shift[a];
        if (heat * heat / t > b) s1 = *s - heat;
        // Written so that a NaN counts as too far.
        const double r2 = MATCH_REACH * MATCH_REACH;
        const double d[4] = {v1[0] - u[0], v1[1] - u[1], v1[2] - u[2], s1 - t};
        if (!(d[0] * d[0] <= r2 * t && d[1] * d[1] <= r2 * t && d[2] * d[2] <= r2 * t && d[3] * d[3] <= r2 * t * t && s1 > 0.0)) {
            // The grid cannot carry this Maxwellian: the last parameters within reach (the
            // plain ones where the first update leaves it) and their sums, as they are.
            return;
        }
        for (int a = 0; a < 3; ++a) v[a] = v1[a];
        *s = s1;
        for (int a = 0; a < 3; ++a) gaussian_moments(vgrid, vgrid + M, v[a], *s, g[a]);
    }
}

extern "C" __global__ void cell_records(const double* __restrict__ fields, const double* __restrict__ vgrid,
                                        const unsigned* __restrict__ words, double prandtl, double delta,
                                        double omega, unsigned ncell, real* __restrict__ cells) {
    const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ncell) return;
    const unsigned word = HAS_WALLS ? words[c] : 0u;
    real* rec = cells + 12u * c;
    if ((word & SOLID) != 0u) {
        // Solid cells hold zero coefficients (src/solver/state.rs) and their word.
        for (unsigned n = 0u; n < 12u; ++n) rec[n] = 0.0;
        rec[3] = R_OF_BITS(word);
        return;
    }
    const double* f = fields + (size_t)CELL_FIELDS * c;
    const double rho = f[0], t = f[4];
    const double ut[3] = {f[1], f[2], f[3]};
    const double ks = (1.0 - prandtl) * 4.0 / (5.0 * rho * t * t);
    const double s[3] = {ks * f[5], ks * f[6], ks * f[7]};
    const double nu = delta * rho * pow(t, 1.0 - omega);
    // The sweep's Maxwellian takes the matched parameters; nu and s the state's.
    double u[3], tm, g[3][4];
    matched_maxwellian(vgrid, ut, t, u, &tm, g);
    const double inv_t = 1.0 / tm;
    const double z = g[0][0] * g[1][0] * g[2][0];
    const double pref = rho / z;
    double base = 1.0;
    if (s[0] != 0.0 || s[1] != 0.0 || s[2] != 0.0) {
        double corr = 0.0;
        for (int a = 0; a < 3; ++a) {
            const int b = (a + 1) % 3, e = (a + 2) % 3;
            const double cube = g[a][3] * g[b][0] * g[e][0] + g[a][1] * g[b][2] * g[e][0] + g[a][1] * g[b][0] * g[e][2];
            corr += s[a] * (2.0 * inv_t * cube - 5.0 * g[a][1] * g[b][0] * g[e][0]);
        }
        base = 1.0 - corr / z;
    }
    rec[0] = (real)pref; rec[1] = (real)inv_t; rec[2] = (real)nu; rec[3] = R_OF_BITS(word);
    rec[4] = (real)u[0]; rec[5] = (real)u[1]; rec[6] = (real)u[2]; rec[7] = (real)base;
    rec[8] = (real)s[0]; rec[9] = (real)s[1]; rec[10] = (real)s[2];
    rec[11] = (real)(inv_t * 1.4426950408889634);
}
