//! The CUDA kernels (shaders/cuda/*.cu) compiled by NVRTC, without a GPU: NVRTC comes from
//! PyPI's nvidia-cuda-nvrtc (tests/deps.sh installs it into target/test-venv). The compile
//! runs in a child `knudsen nvrtc-check` whose LD_LIBRARY_PATH points there (the dynamic
//! loader reads that variable only at process start). With CI=true a missing NVRTC is a
//! failure.
#![cfg(feature = "cuda-driver")]

use std::path::PathBuf;
use std::process::Command;

/// The venv directory `site-packages/nvidia/<sub>` that holds `lib`, installed by
/// tests/deps.sh from PyPI's `package`. Without it: a failure under CI=true, otherwise a note.
fn venv_nvrtc(sub: &str, lib: &str, package: &str) -> Option<PathBuf> {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/lib");
    let found = std::fs::read_dir(&venv).ok().and_then(|entries| {
        entries
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("site-packages/nvidia").join(sub))
            .find(|p| p.join(lib).exists())
    });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI=true but no {lib} under {} (tests/deps.sh installs {package})", venv.display());
        }
        eprintln!("NOTE: NVRTC test not run: run tests/deps.sh to install {package}");
    }
    found
}

fn nvrtc_dir() -> Option<PathBuf> {
    venv_nvrtc("cu13/lib", "libnvrtc.so.13", "nvidia-cuda-nvrtc")
}

/// NVRTC 11.8 (PyPI's nvidia-cuda-nvrtc-cu11). Its library is `libnvrtc.so.11.2`, a name
/// cudarc does not try, so a temporary directory links it as `libnvrtc.so`; its builtins
/// library stays beside it.
fn nvrtc11_dirs() -> Option<(tempfile::TempDir, PathBuf)> {
    let lib = venv_nvrtc("cuda_nvrtc/lib", "libnvrtc.so.11.2", "nvidia-cuda-nvrtc-cu11")?;
    let link = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(lib.join("libnvrtc.so.11.2"), link.path().join("libnvrtc.so")).unwrap();
    Some((link, lib))
}

fn nvrtc_check(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_knudsen"))
        .arg("nvrtc-check")
        .args(extra)
        .env("LD_LIBRARY_PATH", dir)
        // A check compiles: no kernels from (or into) the user's cache.
        .env("KNUDSEN_KERNEL_CACHE", "off")
        .output()
        .unwrap()
}

#[test]
fn cuda_kernels_compile_for_kepler_with_nvrtc_11() {
    let Some((link, lib)) = nvrtc11_dirs() else { return };
    let path = format!("{}:{}", link.path().display(), lib.display());
    let o = nvrtc_check(std::path::Path::new(&path), &["--arch", "compute_35"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_compiled(&out, "11.8", "35");
    assert_eq!(out.matches("(.target sm_35)").count(), 7, "{out}");
}

#[test]
fn cuda_kernels_compile_with_nvrtc() {
    let Some(dir) = nvrtc_dir() else { return };
    let o = nvrtc_check(&dir, &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.matches("bytes of PTX").count(), 7, "{out}");
    assert_compiled(&out, "13.0", "90");
}

/// `knudsen nvrtc-check`'s report: both size sets (first order with body walls; second order
/// with specular faces), each in f32 and in f64, and the synthetic solve's three programs compiled by NVRTC `version`
/// to PTX for compute_`sm`, and the three also to machine code for sm_`sm`, the form the
/// solver loads where NVRTC knows the card.
fn assert_compiled(out: &str, version: &str, sm: &str) {
    assert_eq!(out.matches(&format!("NVRTC {version}: compute_{sm}")).count(), 7, "{out}");
    assert_eq!(out.matches(", f64: ").count(), 2, "{out}");
    for file in ["synthetic.cu", "synthetic_lines.cu", "synthetic_factor.cu"] {
        assert!(out.contains(&format!("compute_{sm}, {file}: ")), "{out}");
        assert!(out.contains(&format!("NVRTC {version}: sm_{sm}, {file}: ")), "{out}");
    }
    assert_eq!(out.matches("bytes of CUBIN").count(), 3, "{out}");
}

#[test]
fn a_kernel_syntax_error_fails_the_check() {
    let Some(dir) = nvrtc_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.cu");
    let program = knudsen::backend::cuda::kernels::program().replace("fx = f;", "fx = f");
    std::fs::write(&bad, program).unwrap();
    let o = nvrtc_check(&dir, &["--source", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("NVRTC"), "{err}");
    // The compiler's log as it reads, one message per line, not one escaped string.
    assert!(err.lines().any(|l| l.contains("error: expected a \";\"")) && !err.contains("\\n"), "{err}");
}

#[test]
fn a_second_compile_of_the_same_kernels_comes_from_the_cache() {
    let Some(dir) = nvrtc_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("tiny.cu");
    std::fs::write(&src, "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= NX; }\n").unwrap();
    let cache = tmp.path().join("kernels");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_knudsen"))
            .args(["nvrtc-check", "--source", src.to_str().unwrap()])
            .env("LD_LIBRARY_PATH", &dir)
            .env("KNUDSEN_KERNEL_CACHE", &cache)
            .env("RUST_LOG", "knudsen=debug")
            .output()
            .unwrap()
    };
    let first = run();
    let log = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{log}");
    assert!(!log.contains("kernels loaded from"), "{log}");
    // The check's four size sets (different -D sizes): four entries.
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 4);
    let second = run();
    let log = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{log}");
    assert_eq!(log.matches("kernels loaded from").count(), 4, "{log}");
    assert_eq!(first.stdout, second.stdout);
}
