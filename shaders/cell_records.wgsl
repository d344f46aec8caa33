// cell_records: the sweep's per-cell records from the macroscopic fields, on the device, in
// f32 (WGSL has no portable f64). The twin is src/backend/wgpu/records.rs::cell_records_twin,
// line for line; in value it is src/backend/gpu_io.rs::cell_records, which the host computes
// in f64 from src/model.rs::EqCoeffs::new_on_grid (the same formulas; the 1D Gaussian sums
// here take one exp per node instead of the host's recurrence, whose f32 round-off would
// grow along the nodes). One invocation per cell.
// Keep in sync with src/backend/wgpu/records.rs (RecordParams), gpu_io.rs (RECORD_FIELDS) and
// src/backend/wgpu/layout.rs::CellCoeffs (the record: (pref, 1/T, nu, wall word), (U, base),
// (s, log2(e)/T)).

struct RecordParams {
    prandtl: f32,
    delta: f32,
    omega: f32,
    ncell: u32,
    // Invocations along x of the dispatch (2D where cells exceed one dimension's groups).
    row: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Velocity nodes per axis.
override M: u32;
// Whether the case has bodies: without, `words` is not read.
override HAS_WALLS: bool = true;
// Wall words (src/grid/solid.rs): keep in sync with SOLID_BIT there.
const SOLID: u32 = 0x80000000u;

@group(0) @binding(0) var<uniform> params: RecordParams;
// Per cell (rho, U_x, U_y, U_z), (T, q_x, q_y, q_z).
@group(0) @binding(1) var<storage, read> fields: array<vec4<f32>>;
// The M nodes of one axis, then their M 1D weights.
@group(0) @binding(2) var<storage, read> vgrid: array<f32>;
@group(0) @binding(3) var<storage, read> words: array<u32>;
@group(0) @binding(4) var<storage, read_write> cells: array<vec4<f32>>;

// sum_i w_i g_i (x_i - u)^n, n = 0..3, g_i = exp(-(x_i - u)^2 / t).
fn gaussian_moments(u: f32, t: f32) -> vec4<f32> {
    var m = vec4<f32>(0.0);
    for (var i = 0u; i < M; i++) {
        let x = vgrid[i] - u;
        let wg = vgrid[M + i] * exp(-(x * x) / t);
        m += vec4<f32>(wg, wg * x, wg * x * x, wg * x * x * x);
    }
    return m;
}

// src/model.rs::matched_maxwellian_by, line for line in f32: the parameters (u, t) of the
// grid Maxwellian whose discrete momentum and energy are the state's, and their sums g.
// Keep MATCH_* in sync with src/model.rs (MATCH_TOL_F32 here).
const MATCH_UPDATES: u32 = 8u;
const MATCH_TOL: f32 = 2e-7;
const MATCH_REACH: f32 = 0.25;

struct Matched {
    u: vec3<f32>,
    t: f32,
    g: array<vec4<f32>, 3>,
}

fn matched_maxwellian(u: vec3<f32>, t: f32) -> Matched {
    var m = Matched(u, t, array<vec4<f32>, 3>(gaussian_moments(u.x, t), gaussian_moments(u.y, t), gaussian_moments(u.z, t)));
    for (var k = 0u; k < MATCH_UPDATES; k++) {
        let g = m.g;
        let mean = vec3<f32>(g[0].y / g[0].x, g[1].y / g[1].x, g[2].y / g[2].x);
        let var_sum = (g[0].z / g[0].x - mean.x * mean.x) + (g[1].z / g[1].x - mean.y * mean.y)
            + (g[2].z / g[2].x - mean.z * mean.z);
        let shift = m.u + mean - u;
        let heat = (var_sum - 1.5 * t) / 1.5;
        // Each defect squared against the tolerance's, in units of T (mean) and T^2 (variance).
        let b = MATCH_TOL * MATCH_TOL * t;
        if heat * heat / t <= b && shift.x * shift.x <= b && shift.y * shift.y <= b && shift.z * shift.z <= b {
            break;
        }
        // Only the defects beyond it move their parameter: a drift that is zero stays exactly
        // zero instead of taking the round-off of its mean.
        let v1 = m.u - select(vec3<f32>(0.0), shift, shift * shift > vec3<f32>(b));
        let s1 = select(m.t, m.t - heat, heat * heat / t > b);
        // Written so that a NaN counts as too far.
        let r2 = MATCH_REACH * MATCH_REACH;
        let d = vec4<f32>(v1 - u, s1 - t);
        if !(d.x * d.x <= r2 * t && d.y * d.y <= r2 * t && d.z * d.z <= r2 * t && d.w * d.w <= r2 * t * t && s1 > 0.0) {
            // The grid cannot carry this Maxwellian: the last parameters within reach (the
            // plain ones where the first update leaves it) and their sums.
            return m;
        }
        m.u = v1;
        m.t = s1;
        m.g = array<vec4<f32>, 3>(gaussian_moments(m.u.x, m.t), gaussian_moments(m.u.y, m.t), gaussian_moments(m.u.z, m.t));
    }
    return m;
}

@compute @workgroup_size(64)
fn cell_records(@builtin(global_invocation_id) gid: vec3<u32>) {
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
    let f0 = fields[2u * c];
    let f1 = fields[2u * c + 1u];
    let rho = f0.x;
    let t = f1.x;
    let ks = (1.0 - params.prandtl) * 4.0 / (5.0 * rho * t * t);
    let s = ks * f1.yzw;
    let nu = params.delta * rho * pow(t, 1.0 - params.omega);
    // The sweep's Maxwellian takes the matched parameters; nu and s the state's.
    let matched = matched_maxwellian(f0.yzw, t);
    let u = matched.u;
    let inv_t = 1.0 / matched.t;
    var g = matched.g;
    let z = g[0].x * g[1].x * g[2].x;
    let pref = rho / z;
    var base = 1.0;
    if any(s != vec3<f32>(0.0)) {
        var corr = 0.0;
        for (var a = 0u; a < 3u; a++) {
            let b = (a + 1u) % 3u;
            let e = (a + 2u) % 3u;
            let cube = g[a].w * g[b].x * g[e].x + g[a].y * g[b].z * g[e].x + g[a].y * g[b].x * g[e].z;
            corr += s[a] * (2.0 * inv_t * cube - 5.0 * g[a].y * g[b].x * g[e].x);
        }
        base = 1.0 - corr / z;
    }
    cells[3u * c] = vec4<f32>(pref, inv_t, nu, bitcast<f32>(word));
    cells[3u * c + 1u] = vec4<f32>(u, base);
    cells[3u * c + 2u] = vec4<f32>(s, inv_t * 1.442695041);
}
