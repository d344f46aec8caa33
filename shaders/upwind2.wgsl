// solve_cell: the second-order cell update (solver.scheme = "second_order"; the limited
// diamond difference of docs/model.md). Appended to sweep_slice.wgsl by the host.
// Reference: src/backend/upwind2.rs::solve_cell (f64), which this file follows line for line
// in f32 and in vector form.
//
// Per axis d (active when a_d > 0) the cell emits
//   F_d = max(0, f + minmod(f - inflow_d, bound_d))   where it has a fluid upstream cell
//         (bound_d = L s (inflow_d - f_up), `limited`),
//   F_d = clamp(2 f - inflow_d, lo, hi)               where the upstream side is a face or a
//         wall ([lo, hi]: the range of fs and the active inflows),
// and f solves sum_d a_d (F_d - inflow_d) + nu (f - fs) = 0: the diamond difference where
// nothing limits, else interpolation between the nearest kinks of the piecewise-linear left
// side (at most four per axis, known beforehand): a fixed cost.

struct CellUpdate {
    f: f32,
    // The face value emitted along x, y, z (f itself along an inactive axis).
    out: vec3<f32>,
}

fn minmod3(x: vec3<f32>, y: vec3<f32>) -> vec3<f32> {
    return select(select(y, x, abs(x) <= abs(y)), vec3<f32>(0.0), x * y <= vec3<f32>(0.0));
}

fn emitted(a: vec3<f32>, inflow: vec3<f32>, bound: vec3<f32>, limited: vec3<bool>, lo: f32, hi: f32,
           f: f32) -> vec3<f32> {
    let lim = max(vec3<f32>(f) + minmod3(vec3<f32>(f) - inflow, bound), vec3<f32>(0.0));
    let edge = clamp(2.0 * f - inflow, vec3<f32>(lo), vec3<f32>(hi));
    return select(vec3<f32>(f), select(edge, lim, limited), a > vec3<f32>(0.0));
}

fn balance_lhs(a: vec3<f32>, inflow: vec3<f32>, bound: vec3<f32>, limited: vec3<bool>, nu: f32, lo: f32,
               hi: f32, f: f32) -> f32 {
    return nu * f + dot(a, emitted(a, inflow, bound, limited, lo, hi, f));
}

// The bracket [kl, kh] of the root with the left side's values there.
struct Bracket {
    kl: f32,
    kh: f32,
    gl: f32,
    gh: f32,
}

// Narrow the bracket to the kink `kk` when it lies inside. The kinks are visited by a call
// each rather than a loop over axes: dynamic indexing of vectors made the kernel five times
// slower on an NVIDIA Vulkan driver (docs/performance.md).
fn narrow(br: Bracket, kk: f32, on: bool, a: vec3<f32>, inflow: vec3<f32>, bound: vec3<f32>,
          limited: vec3<bool>, nu: f32, lo: f32, hi: f32, rhs: f32) -> Bracket {
    if !on || kk <= br.kl || kk >= br.kh {
        return br;
    }
    let gk = balance_lhs(a, inflow, bound, limited, nu, lo, hi, kk);
    if gk <= rhs {
        return Bracket(kk, br.kh, gk, br.gh);
    }
    return Bracket(br.kl, kk, br.gl, gk);
}

fn solve_cell(a: vec3<f32>, inflow: vec3<f32>, bound: vec3<f32>, limited: vec3<bool>, nu: f32,
              fs: f32) -> CellUpdate {
    let moving = a > vec3<f32>(0.0);
    let big = 3.0e38;
    let lo = min(fs, min(min(select(big, inflow.x, moving.x), select(big, inflow.y, moving.y)),
                         select(big, inflow.z, moving.z)));
    let hi = max(fs, max(max(select(-big, inflow.x, moving.x), select(-big, inflow.y, moving.y)),
                         select(-big, inflow.z, moving.z)));
    let top = select(vec3<f32>(-big), inflow + select(vec3<f32>(0.0), abs(bound), limited), moving);
    let f_hi = max(hi, max(max(top.x, top.y), top.z));
    let rhs = dot(a, inflow) + nu * fs;
    let sum_a = a.x + a.y + a.z;
    var f = (2.0 * rhs - nu * fs) / (2.0 * sum_a + nu);
    let dd = emitted(a, inflow, bound, limited, lo, hi, f) == 2.0 * f - inflow;
    if !all(dd | !moving) {
        var br = Bracket(0.0, f_hi, balance_lhs(a, inflow, bound, limited, nu, lo, hi, 0.0),
                         balance_lhs(a, inflow, bound, limited, nu, lo, hi, f_hi));
        if rhs <= 0.0 || br.gl > rhs || br.gh < rhs {
            // A Shakhov f^S slightly negative in a far tail: the first-order value.
            let f1 = rhs / (sum_a + nu);
            return CellUpdate(f1, vec3<f32>(f1));
        }
        let k1 = select(0.5 * (inflow + vec3<f32>(lo)), inflow, limited);
        let k2 = select(0.5 * (inflow + vec3<f32>(hi)), inflow + bound, limited);
        let k3 = 0.5 * inflow;
        let k4 = -bound;
        let lx = moving.x && limited.x;
        let ly = moving.y && limited.y;
        let lz = moving.z && limited.z;
        br = narrow(br, k1.x, moving.x, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k2.x, moving.x, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k3.x, lx, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k4.x, lx, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k1.y, moving.y, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k2.y, moving.y, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k3.y, ly, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k4.y, ly, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k1.z, moving.z, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k2.z, moving.z, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k3.z, lz, a, inflow, bound, limited, nu, lo, hi, rhs);
        br = narrow(br, k4.z, lz, a, inflow, bound, limited, nu, lo, hi, rhs);
        f = select(br.kl, br.kl + (rhs - br.gl) * (br.kh - br.kl) / (br.gh - br.gl), br.gh > br.gl);
    }
    return CellUpdate(f, emitted(a, inflow, bound, limited, lo, hi, f));
}
