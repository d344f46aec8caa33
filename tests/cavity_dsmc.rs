//! The 1 mm argon cavity of the DSMC study in docs/data/cavity-dsmc/ (Kn 1 and 0.1) on a
//! coarse grid, CPU, second order, f64: its profiles along the diagonal (1,1,0) -> (0,0,1),
//! through `knudsen run` and `knudsen line --from --to`, against the DSMC profiles at the
//! points at least 0.05 L from every wall. docs/validation.md ("The cubic cavity against
//! DSMC") has the fine-grid comparison on the GPU; this guards the case's set-up against
//! gross errors (the lid speed, units, orientation) and the solver's answer at a resolution
//! CI can afford.

use std::path::Path;
use std::process::Command;

const K_B: f64 = 1.380649e-23;
const T0: f64 = 273.0;
/// The DSMC input's molecular mass (kg) and number densities (m^-3), and its lid speed (m/s).
const MASS: f64 = 6.63e-26;
const LID: f64 = 50.0;

fn numbers(line: &str, sep: char) -> Vec<f64> {
    line.split(sep).filter(|v| !v.is_empty()).map(|v| v.parse().unwrap()).collect()
}

/// (n / n0, U_x / v0, U_y / v0, T / T0, P_xy / (n0 m v0^2)) at the DSMC file's 200 points.
fn dsmc(kn: &str, n0: f64) -> Vec<[f64; 5]> {
    let v0 = (2.0 * K_B * T0 / MASS).sqrt();
    let text = std::fs::read_to_string(format!("docs/data/cavity-dsmc/dsmc-kn{kn}.txt")).unwrap();
    // Columns: x_mm y_mm z_mm arc_m nden Ux Uy T p Pxy ...
    let stress = n0 * MASS * v0 * v0;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| numbers(l, ' '))
        .map(|r| [r[4] / n0, r[5] / v0, r[6] / v0, r[7] / T0, r[9] / stress])
        .collect()
}

/// One component column of `knudsen line`'s CSV.
fn column(csv: &Path, col: usize) -> Vec<f64> {
    let text = std::fs::read_to_string(csv).unwrap();
    text.lines().skip(2).map(|l| numbers(l, ',')[col]).collect()
}

/// Root-mean-square of (a - b) / scale over the points at least 0.05 L from every wall.
fn interior_rms(a: &[f64], b: &[f64], scale: f64) -> f64 {
    let n = a.len();
    let d: Vec<f64> = (0..n)
        .filter(|&i| (i as f64 / (n - 1) as f64).min(1.0 - i as f64 / (n - 1) as f64) >= 0.05 - 1e-12)
        .map(|i| (a[i] - b[i]) / scale)
        .collect();
    (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt()
}

fn knudsen(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen")).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Runs the study's case at Kn `kn` on 16^3 cells and 16^3 velocities and returns the
/// interior rms differences from DSMC: U_x and U_y in units of the lid speed, T in T0,
/// density in n0, P_xy in rho0 v0^2 (knudsen's unit of stress).
fn differences(kn: &str, n0: f64) -> [f64; 5] {
    let dir = tempfile::tempdir().unwrap();
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("tests/device/dsmc-cavity/kn{kn}.json")).unwrap())
            .unwrap();
    for a in ["x", "y", "z"] {
        c["grid"][a]["cells"] = serde_json::json!(16);
    }
    c["velocity"]["points"] = serde_json::json!(16);
    c["solver"]["tolerance"] = serde_json::json!(1e-6);
    let case = dir.path().join("case.json");
    std::fs::write(&case, c.to_string()).unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    knudsen(&["run", case.to_str().unwrap(), "--backend", "cpu", "--precision", "f64", "--out", o]);
    let line = |field: &str| {
        let csv = dir.path().join(format!("{field}.csv"));
        knudsen(&[
            "line",
            o,
            "--field",
            field,
            "--from",
            "1,1,0",
            "--to",
            "0,0,1",
            "--points",
            "200",
            "--out",
            csv.to_str().unwrap(),
        ]);
        csv
    };
    let (rho, vel, tem, stress) = (line("density"), line("velocity"), line("temperature"), line("stress"));
    let refs = dsmc(kn, n0);
    let r = |q: usize| refs.iter().map(|p| p[q]).collect::<Vec<_>>();
    let u_w = LID / (2.0 * K_B * T0 / MASS).sqrt();
    [
        interior_rms(&column(&vel, 4), &r(1), u_w),
        interior_rms(&column(&vel, 5), &r(2), u_w),
        interior_rms(&column(&tem, 4), &r(3), 1.0),
        interior_rms(&column(&rho, 4), &r(0), 1.0),
        // stress columns: xx yy zz xy xz yz (docs/output.md)
        interior_rms(&column(&stress, 7), &r(4), 1.0),
    ]
}

// Bounds: about 1.5 times what 16^3 cells and velocities gave when this test was written
// (Kn 1: U_x 1.06e-2, U_y 6.5e-3, T 1.2e-3, n 3.3e-3, P_xy 9.4e-4; Kn 0.1: U_x 1.03e-2,
// U_y 3.8e-3, T 3.2e-4, n 6.5e-4, P_xy 7.8e-4), the coarse grid's error and the DSMC's noise
// together; on 64^3 cells and velocities the same differences are 1.1 (Kn 0.1's density) to
// 6.7 (its U_x) times smaller (docs/validation.md). A lid at
// 0.1 v0 (the paper cavity's) instead of the study's 0.148 v0 fails both: the velocity rms
// becomes 2.5e-2 and 2.7e-2 at Kn 0.1 and U_y's 1.6e-2 at Kn 1. Smaller errors in the
// set-up (a delta off by 10-20%) stay inside the coarse grid's own error.

#[test]
fn the_argon_cavity_at_kn_1_follows_dsmc_along_the_diagonal() {
    let [ux, uy, t, n, pxy] = differences("1", 1.67912e21);
    assert!(ux < 1.6e-2 && uy < 1.0e-2, "velocity rms {ux:.3e}, {uy:.3e} of the lid speed");
    assert!(t < 1.8e-3 && n < 5e-3, "temperature rms {t:.3e}, density rms {n:.3e}");
    assert!(pxy < 1.4e-3, "P_xy rms {pxy:.3e}");
}

#[test]
fn the_argon_cavity_at_kn_0_1_follows_dsmc_along_the_diagonal() {
    let [ux, uy, t, n, pxy] = differences("0.1", 1.67912e22);
    assert!(ux < 1.6e-2 && uy < 6e-3, "velocity rms {ux:.3e}, {uy:.3e} of the lid speed");
    assert!(t < 5e-4 && n < 1e-3, "temperature rms {t:.3e}, density rms {n:.3e}");
    assert!(pxy < 1.2e-3, "P_xy rms {pxy:.3e}");
}
