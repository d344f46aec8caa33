//! `knudsen check --device-memory-mib`: the CUDA plan of the paper's cases on a 12 GB Tesla
//! K40 (no Kepler card is reachable here; this is the planning half, docs/platforms.md).

use std::process::Command;

fn check(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_knudsen")).arg("check").args(args).output().unwrap();
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// The number just before `key` in `line`.
fn number_before(line: &str, key: &str) -> f64 {
    let head = &line[..line.find(key).unwrap_or_else(|| panic!("{key} in {line}"))];
    head.split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn paper_cases_plan_within_a_k40() {
    let root = env!("CARGO_MANIFEST_DIR");
    for (case, scheme) in
        [("cavity-kn1", "first_order"), ("cube-ma2-kn1", "first_order"), ("cube-ma2-kn1", "second_order")]
    {
        let path = format!("{root}/configs/{case}.json");
        let (ok, out, err) = check(&[&path, "--device-memory-mib", "12288", "--scheme", scheme]);
        assert!(ok, "{case}: {err}");
        let line =
            out.lines().find(|l| l.starts_with("cuda (f32) on a 12288 MiB device")).unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains("within the 12288 MiB"), "{line}");
        // Slices within the default budget (half the card), everything within the card.
        let slices = number_before(line, " MiB, fields");
        let all = number_before(line, " MiB in all");
        assert!(slices <= 6144.0 && slices < all && all <= 12288.0, "{line}");
        // The cube sets GSIS: its synthetic solve (~26 GiB for 6.3 million cells) cannot sit
        // beside the sweep on a 12 GB card, and `check` must say it would run on the host.
        if case == "cube-ma2-kn1" {
            let syn = out.lines().find(|l| l.starts_with("cuda synthetic solve")).unwrap_or_else(|| panic!("{out}"));
            assert!(syn.contains("would run on the host"), "{syn}");
        }
    }
}

#[test]
fn a_device_too_small_for_one_wave_says_so() {
    // The cube's fields alone are 670 MiB; a 256 MiB device cannot hold them.
    let path = format!("{}/configs/cube-ma2-kn1.json", env!("CARGO_MANIFEST_DIR"));
    let (ok, out, _) = check(&[&path, "--device-memory-mib", "256"]);
    assert!(ok);
    let line = out.lines().find(|l| l.starts_with("cuda (f32)")).unwrap();
    assert!(line.contains("DOES NOT FIT") || line.contains("does not fit"), "{line}");
    let (ok, _, err) = check(&[&path, "--device-memory-mib", "0"]);
    assert!(!ok && err.contains("--device-memory-mib"), "{err}");
}

#[test]
fn check_names_the_shared_memory_the_fused_kernel_needs() {
    // `check` plans without a device, so it prints what the fused kernel needs per block: a
    // first-order block of 8 x 8 tiles fits the 64 KiB per block of sm_75, a second-order
    // block of 4 x 4 does not (its three face planes and z-carry), so there the backend runs
    // the slice kernels (backend/fused.rs::cuda_plan).
    let path = format!("{}/configs/cavity-kn1.json", env!("CARGO_MANIFEST_DIR"));
    for (scheme, over_64) in [("first_order", false), ("second_order", true)] {
        let (ok, out, err) = check(&[&path, "--scheme", scheme, "--device-memory-mib", "81920"]);
        assert!(ok, "{err}");
        let kernel = out.lines().find(|l| l.starts_with("cuda sweep kernel: ")).unwrap_or_else(|| panic!("{out}"));
        assert!(kernel.contains("fused on-chip sweep"), "{kernel}");
        let line = out.lines().find(|l| l.starts_with("cuda sweep kernel needs:")).unwrap_or_else(|| panic!("{out}"));
        let kib = number_before(line, " KiB of shared memory per block");
        assert_eq!(kib > 64.0, over_64, "{scheme}: {line}");
    }
}
