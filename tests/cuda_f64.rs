//! `solver.precision = "f64"` on CUDA: its slice kernels compiled in f64 (`KN_F64`,
//! src/backend/cuda/real.rs), compared with the CPU's f64 reference (wgpu's f64:
//! tests/wgpu_f64.rs). The CUDA tests run where a CUDA device answers
//! (the device machine); elsewhere they say so on stderr (CI has no NVIDIA GPU and compiles
//! the f64 kernels instead, tests/cuda_nvrtc.rs).
//!
//! Tolerance, sweep for sweep: both paths are f64 throughout and differ only in the order of
//! their sums (warp trees against the CPU's batch order) and in the last place of exp and
//! the divisions, about 1e-16 relative per operation; after four sweeps the fields differ by
//! 1e-16 to 1e-13 (the largest, 1.6e-13, the heat flux, a difference of third moments ~500
//! times its size, on an H200). 1e-11 keeps a margin of 60 over that and is still three
//! orders below the f32 sweep's difference from f64 (5.6e-8 to 1.6e-5), which the test
//! checks the same comparison tells apart.

mod common;
use common::gpu_f64;
use common::*;
use knudsen::backend::BackendChoice;
use knudsen::config::Precision;

#[test]
fn cuda_in_f64_matches_the_cpu_sweep_for_sweep() {
    if cuda_here("the CUDA f64 test") {
        gpu_f64::matches_the_cpu_sweep_for_sweep(BackendChoice::Cuda, "CUDA", 1e-11);
    }
}

#[test]
fn cuda_in_f64_converges_at_kn_0_001_where_f32_stalls() {
    if cuda_here("the CUDA f64 test") {
        gpu_f64::converges_at_kn_0_001_where_f32_stalls(BackendChoice::Cuda, "CUDA");
    }
}

/// `knudsen check --device-memory-mib` plans CUDA in f64 (eight bytes a value, the slice
/// kernels). Left out, the precision is each backend's own and is not written into the
/// case's JSON. (wgpu in f64: tests/wgpu_f64.rs.)
#[test]
fn check_plans_the_f64_cuda_sweep() {
    let cfg = config(&cavity_json(4, 10, 4.0, 0.1));
    assert!(!serde_json::to_string(&cfg).unwrap().contains("precision"));
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("case.json");
    std::fs::write(&case, pinned(&cavity_json(4, 10, 4.0, 0.1)).to_string()).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .args(["check", "--precision", "f64", "--device-memory-mib", "12288", case.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("cuda (f64) on a 12288 MiB device"), "{stdout}");
    assert!(stdout.contains("the f64 slice kernels"), "{stdout}");
}

/// The CUDA f64 sweep's records from the host (`SweepInput::fields` empty: real.rs's
/// `host_records`, from `EqCoeffs`) and from the device (`cell_records.cu` in f64, from the
/// fields) give the same sweep. Both are f64 evaluations of the same formulas, apart in the
/// last place of exp and pow (1e-16 relative), so the raw moments, incident fluxes and wall
/// sums agree to about 1e-15; 1e-12 leaves room, and f32 records would differ by 1e-7.
#[test]
fn cuda_in_f64_takes_the_same_records_from_the_host_and_the_device() {
    use knudsen::backend::{SweepInput, SweepOutput};
    use knudsen::boundary::Face;
    if !cuda_here("the CUDA f64 test") {
        return;
    }
    let mut v = body_case_json();
    v["gas"]["prandtl"] = (2.0 / 3.0).into();
    let mut cfg = config(&v);
    cfg.solver.precision = Some(Precision::F64);
    let p = std::sync::Arc::new(knudsen::problem::Problem::new(&cfg));
    let g = &p.grid;
    // A state that varies from cell to cell, with a heat flux (the Shakhov terms).
    let fields: Vec<knudsen::model::Macro> = (0..g.cells())
        .map(|c| {
            let t = 1.0 + 0.1 * ((c % 7) as f64 / 7.0);
            let mut m = knudsen::model::Macro::equilibrium(1.0 + 0.05 * ((c % 5) as f64 / 5.0), [0.05, -0.03, 0.02], t);
            m.q = [0.01, -0.02, 0.005];
            m
        })
        .collect();
    let eq: Vec<_> = fields.iter().map(|m| p.eq_coeffs(m)).collect();
    let dens: knudsen::boundary::FaceData =
        std::array::from_fn(|f| (0..Face::ALL[f].cells(g)).map(|i| 0.9 + 0.01 * (i % 9) as f64).collect());
    let wall: Vec<f64> = (0..p.bodies.solids.walls.len()).map(|w| 0.8 + 0.03 * (w % 7) as f64).collect();
    let partner: knudsen::boundary::FaceData = std::array::from_fn(|f| {
        let n = if p.bounds.stores_inflow(Face::ALL[f]) {
            Face::ALL[f].cells(g) * knudsen::boundary::slots_per_cell(p.vgrid.m)
        } else {
            0
        };
        (0..n).map(|i| 0.01 + 0.001 * (i % 13) as f64).collect()
    });
    let (mut b, _) = knudsen::backend::create(BackendChoice::Cuda, p.clone(), None).unwrap();
    assert!(b.derives_coefficients() && b.residual_floor() == 0.0);
    let sweep = |b: &mut Box<dyn knudsen::backend::Backend>, fields: &[knudsen::model::Macro]| {
        let input = SweepInput { eq: &eq, fields, face_density: &dens, wall_density: &wall, partner: &partner };
        let mut out = SweepOutput::zeros(&p);
        b.sweep(&input, &mut out).unwrap();
        out
    };
    let (host, device) = (sweep(&mut b, &[]), sweep(&mut b, &fields));
    let flat = |o: &SweepOutput| -> Vec<f64> {
        o.raw.iter().flatten().chain(o.incident.iter().flatten()).chain(o.wall.iter().flatten()).copied().collect()
    };
    let d = rel_l2(flat(&host).into_iter(), flat(&device).into_iter());
    eprintln!("host against device records, CUDA f64: sums {d:.2e}");
    assert!(d < 1e-12, "{d:e}");
    assert!(flat(&device).iter().any(|&x| x != 0.0));
}
