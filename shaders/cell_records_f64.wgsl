// cell_records_f64: the sweep's per-cell records from the macroscopic fields, on the device,
// in f64, on adapters with the SHADER_F64 feature. The same formulas, in the same order, as
// the host's src/model.rs::EqCoeffs::new_on_grid (its Gaussian sums by the recurrence of
// gaussian_moments_of) and as shaders/cuda/cell_records.cu; rounded to f32 only in the record.
// The CPU twin, line for line, is src/backend/wgpu/records_f64.rs::cell_records_f64_twin.
// exp and log are written out (exp64, log64): the builtins are not usable on f64 (lavapipe's
// f64 exp returns garbage, NVIDIA's is f32-accurate: ../shared/platform-facts.md), and only
// +, -, *, / and conversions are asked of the device in f64. One invocation per cell.
// Keep in sync with src/backend/wgpu/records_f64.rs (RecordParams64), gpu_io.rs
// (RECORD_FIELDS) and src/backend/wgpu/layout.rs::CellCoeffs (the record: (pref, 1/T, nu,
// wall word), (U, base), (s, log2(e)/T)).

struct RecordParams64 {
    prandtl: f64,
    delta: f64,
    omega: f64,
    ncell: u32,
    // Invocations along x of the dispatch (2D where cells exceed one dimension's groups).
    row: u32,
}

// Velocity nodes per axis.
override M: u32;
// Whether the case has bodies: without, `words` is not read.
override HAS_WALLS: bool = true;
// Wall words (src/grid/solid.rs): keep in sync with SOLID_BIT there.
const SOLID: u32 = 0x80000000u;

@group(0) @binding(0) var<uniform> params: RecordParams64;
// Per cell (rho, U_x, U_y, U_z, T, q_x, q_y, q_z).
@group(0) @binding(1) var<storage, read> fields: array<f64>;
// The M nodes of one axis, then their M 1D weights.
@group(0) @binding(2) var<storage, read> vgrid: array<f64>;
@group(0) @binding(3) var<storage, read> words: array<u32>;
@group(0) @binding(4) var<storage, read_write> cells: array<vec4<f32>>;

// exp64(), pow2(): shaders/exp64.wgsl, appended by the host.

// ln t for t > 0: the f32 logarithm, then two Newton steps on e^y = t in f64 (each squares
// the relative error: 1e-7, 1e-14, below an ulp).
fn log64(t: f64) -> f64 {
    var y = f64(log(f32(t)));
    y += t * exp64(-y) - 1.0lf;
    y += t * exp64(-y) - 1.0lf;
    return y;
}

// sum_i w_i g_i (x_i - u)^n, n = 0..3, g_i = exp(-(x_i - u)^2 / t), by the recurrence of
// src/model.rs::gaussian_moments_of: outward from the node nearest u, up then down.
fn gaussian_moments(u: f64, t: f64) -> array<f64, 4> {
    var m = array<f64, 4>(0.0lf, 0.0lf, 0.0lf, 0.0lf);
    if M < 2u {
        for (var i = 0u; i < M; i++) {
            let x = vgrid[i] - u;
            let wg = vgrid[M + i] * exp64(-(x * x) / t);
            m[0] += wg;
            m[1] += wg * x;
            m[2] += wg * x * x;
            m[3] += wg * x * x * x;
        }
        return m;
    }
    let h = vgrid[1] - vgrid[0];
    let c = exp64(-2.0lf * h * h / t);
    // Rust's f64::round (halves away from zero) of v clamped to >= 0: floor(v + 1/2), less one
    // where v + 1/2 rounded up to the next integer (v = 0.49999999999999994 gives 1.0).
    let v = select((u - vgrid[0]) / h, 0.0lf, u < vgrid[0]);
    var kr = u32(v + 0.5lf);
    if f64(kr) - v > 0.5lf {
        kr -= 1u;
    }
    let k = min(kr, M - 1u);
    for (var half = 0u; half < 2u; half++) {
        let up = half == 0u;
        let first = select(select(0u, k - 1u, k > 0u), k, up);
        let count = select(k, M - k, up);
        let dh = select(-h, h, up);
        let d = vgrid[first] - u;
        var g = exp64(-d * d / t);
        var r = exp64(-(2.0lf * d * dh + h * h) / t);
        for (var step = 0u; step < count; step++) {
            let i = select(first - step, first + step, up);
            let x = vgrid[i] - u;
            let wg = vgrid[M + i] * g;
            m[0] += wg;
            m[1] += wg * x;
            m[2] += wg * x * x;
            m[3] += wg * x * x * x;
            g *= r;
            r *= c;
        }
    }
    return m;
}

// src/model.rs::matched_maxwellian, line for line: the parameters (u, t) of the grid
// Maxwellian whose discrete momentum and energy are the state's, and their sums g.
// Keep MATCH_* in sync with src/model.rs.
const MATCH_UPDATES: u32 = 8u;
const MATCH_TOL: f64 = 1e-13lf;
const MATCH_REACH: f64 = 0.25lf;

struct Matched {
    u: array<f64, 3>,
    t: f64,
    g: array<array<f64, 4>, 3>,
}

fn matched_maxwellian(u: array<f64, 3>, t: f64) -> Matched {
    var m = Matched(u, t, array<array<f64, 4>, 3>(gaussian_moments(u[0], t), gaussian_moments(u[1], t), gaussian_moments(u[2], t)));
    for (var k = 0u; k < MATCH_UPDATES; k++) {
        let g = m.g;
        let mean = array<f64, 3>(g[0][1] / g[0][0], g[1][1] / g[1][0], g[2][1] / g[2][0]);
        let var_sum = (g[0][2] / g[0][0] - mean[0] * mean[0]) + (g[1][2] / g[1][0] - mean[1] * mean[1])
            + (g[2][2] / g[2][0] - mean[2] * mean[2]);
        let shift = array<f64, 3>(m.u[0] + mean[0] - u[0], m.u[1] + mean[1] - u[1], m.u[2] + mean[2] - u[2]);
        let heat = (var_sum - 1.5lf * t) / 1.5lf;
        // Each defect squared against the tolerance's, in units of T (mean) and T^2 (variance).
        let b = MATCH_TOL * MATCH_TOL * t;
        if heat * heat / t <= b && shift[0] * shift[0] <= b && shift[1] * shift[1] <= b && shift[2] * shift[2] <= b {
            break;
        }
        // Only the defects beyond it move their parameter: a drift that is zero stays exactly
        // zero instead of taking the round-off of its mean.
        var v1 = m.u;
        var s1 = m.t;
        for (var a = 0u; a < 3u; a++) {
            if shift[a] * shift[a] > b {
                v1[a] = m.u[a] - shift[a];
            }
        }
        if heat * heat / t > b {
            s1 = m.t - heat;
        }
        // Written so that a NaN counts as too far.
        let r2 = MATCH_REACH * MATCH_REACH;
        let d = array<f64, 4>(v1[0] - u[0], v1[1] - u[1], v1[2] - u[2], s1 - t);
        if !(d[0] * d[0] <= r2 * t && d[1] * d[1] <= r2 * t && d[2] * d[2] <= r2 * t && d[3] * d[3] <= r2 * t * t && s1 > 0.0lf) {
            // The grid cannot carry this Maxwellian: the last parameters within reach (the
            // plain ones where the first update leaves it) and their sums.
            return m;
        }
        m.u = v1;
        m.t = s1;
        m.g = array<array<f64, 4>, 3>(
            gaussian_moments(m.u[0], m.t),
            gaussian_moments(m.u[1], m.t),
            gaussian_moments(m.u[2], m.t),
        );
    }
    return m;
}

@compute @workgroup_size(64)
fn cell_records_f64(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.y * params.row + gid.x;
    if c >= params.ncell {
        return;
    }
    var word = 0u;
    if HAS_WALLS {
        word = words[c];
    }
    if (word & SOLID) != 0u {
        // Solid cells hold zero coefficients (src/solver/state.rs) and their word.
        cells[3u * c] = vec4<f32>(0.0, 0.0, 0.0, bitcast<f32>(word));
        cells[3u * c + 1u] = vec4<f32>(0.0);
        cells[3u * c + 2u] = vec4<f32>(0.0);
        return;
    }
    let at = 8u * c;
    let rho = fields[at];
    let t = fields[at + 4u];
    let ks = (1.0lf - params.prandtl) * 4.0lf / (5.0lf * rho * t * t);
    let s = array<f64, 3>(ks * fields[at + 5u], ks * fields[at + 6u], ks * fields[at + 7u]);
    let nu = params.delta * rho * exp64((1.0lf - params.omega) * log64(t));
    // The sweep's Maxwellian takes the matched parameters; nu and s the state's.
    let matched = matched_maxwellian(array<f64, 3>(fields[at + 1u], fields[at + 2u], fields[at + 3u]), t);
    let u = matched.u;
    let inv_t = 1.0lf / matched.t;
    var g = matched.g;
    let z = g[0][0] * g[1][0] * g[2][0];
    let pref = rho / z;
    var base = 1.0lf;
    if s[0] != 0.0lf || s[1] != 0.0lf || s[2] != 0.0lf {
        var corr = 0.0lf;
        for (var a = 0u; a < 3u; a++) {
            let b = (a + 1u) % 3u;
            let e = (a + 2u) % 3u;
            let cube = g[a][3] * g[b][0] * g[e][0] + g[a][1] * g[b][2] * g[e][0] + g[a][1] * g[b][0] * g[e][2];
            corr += s[a] * (2.0lf * inv_t * cube - 5.0lf * g[a][1] * g[b][0] * g[e][0]);
        }
        base = 1.0lf - corr / z;
    }
    cells[3u * c] = vec4<f32>(f32(pref), f32(inv_t), f32(nu), bitcast<f32>(word));
    cells[3u * c + 1u] = vec4<f32>(f32(u[0]), f32(u[1]), f32(u[2]), f32(base));
    cells[3u * c + 2u] = vec4<f32>(f32(s[0]), f32(s[1]), f32(s[2]), f32(inv_t * 1.4426950408889634lf));
}
