//! NVRTC's output kept on disk between runs, under a key of everything that decides it: the
//! source, NVRTC's options (the grid's `-D` sizes among them) and architecture, NVRTC's
//! version. A later run of the same case shape loads its kernels instead of compiling them:
//! on the developer machine NVRTC took 12-14 s for the paper cube's sweep kernels, its start
//! included, on every run (docs/performance.md, "NVRTC's output kept between runs").
//!
//! `KNUDSEN_KERNEL_CACHE`: the folder to use, or `off` for none; by default
//! `$XDG_CACHE_HOME/knudsen/kernels`, else `$HOME/.cache/knudsen/kernels`. Failing to read or
//! write there only means compiling. A file is used only if its header equals the key's in
//! full (source length and two hashes of the source among it); one that does not is compiled
//! again and replaced. Files are written under a temporary name and renamed, so concurrent
//! runs (MPI ranks) never read a half-written one.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// Where compiled kernels are kept, or None when `KNUDSEN_KERNEL_CACHE=off` or no home
/// folder is known.
pub fn folder() -> Option<PathBuf> {
    match std::env::var_os("KNUDSEN_KERNEL_CACHE") {
        Some(v) if v == "off" || v == "0" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
            .map(|c| c.join("knudsen").join("kernels")),
    }
}

/// One compile's identity: the file name and the header its file must start with.
pub struct Key {
    name: String,
    header: Vec<u8>,
}

fn hash_of(parts: &[&[u8]]) -> u64 {
    // A hash that changes between Rust releases only costs a recompile: the stored header
    // then differs from the one this binary computes.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The key of compiling `source` with `options` for `arch` (None: NVRTC's default) by
/// NVRTC `nvrtc` (its version), into `kind` ("ptx", "cubin").
pub fn key(kind: &str, source: &str, options: &[String], arch: Option<&str>, nvrtc: &str) -> Key {
    let s = source.as_bytes();
    let header = format!(
        "knudsen kernel cache 1\nkind {kind}\nnvrtc {nvrtc}\narch {arch:?}\noptions {options:?}\nsource {} {:016x} {:016x}\n\0",
        s.len(),
        hash_of(&[b"a", s]),
        hash_of(&[b"b", s])
    )
    .into_bytes();
    let name = format!("{kind}-{:016x}.bin", hash_of(&[&header]));
    Key { name, header }
}

/// `compile`'s output for `key`: from `dir` where an earlier run stored it, else compiled and
/// stored there (an error from `compile` is returned and nothing is stored).
pub fn cached(
    dir: Option<&Path>,
    key: &Key,
    compile: impl FnOnce() -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    let Some(dir) = dir else { return compile() };
    let path = dir.join(&key.name);
    if let Ok(mut bytes) = std::fs::read(&path) {
        if bytes.starts_with(&key.header) {
            log::debug!("kernels loaded from {}", path.display());
            bytes.drain(..key.header.len());
            return Ok(bytes);
        }
    }
    let body = compile()?;
    if let Err(e) = store(dir, &path, key, &body) {
        log::debug!("kernels not kept in {}: {e}", dir.display());
    }
    Ok(body)
}

/// [`cached`] in the folder [`folder`] names.
pub fn load_or_compile(key: &Key, compile: impl FnOnce() -> Result<Vec<u8>, String>) -> Result<Vec<u8>, String> {
    cached(folder().as_deref(), key, compile)
}

fn store(dir: &Path, path: &Path, key: &Key, body: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".{}.{}.{nanos}.tmp", key.name, std::process::id()));
    let mut all = Vec::with_capacity(key.header.len() + body.len());
    all.extend_from_slice(&key.header);
    all.extend_from_slice(body);
    let written = std::fs::write(&tmp, &all).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_second_compile_of_the_same_key_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("ptx", "kernel source", &opts(&["-DNX=8"]), Some("compute_90"), "13.0");
        let first = cached(Some(dir.path()), &k, || Ok(b"compiled".to_vec())).unwrap();
        assert_eq!(first, b"compiled");
        let again = cached(Some(dir.path()), &k, || panic!("compiled again")).unwrap();
        assert_eq!(again, b"compiled");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn anything_that_decides_the_output_changes_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let base = ("kernel source", opts(&["-DNX=8"]), Some("compute_90"), "13.0");
        let k = key("ptx", base.0, &base.1, base.2, base.3);
        cached(Some(dir.path()), &k, || Ok(b"base".to_vec())).unwrap();
        let others = [
            key("cubin", base.0, &base.1, base.2, base.3),
            key("ptx", "kernel sourcE", &base.1, base.2, base.3),
            key("ptx", base.0, &opts(&["-DNX=9"]), base.2, base.3),
            key("ptx", base.0, &base.1, Some("compute_80"), base.3),
            key("ptx", base.0, &base.1, None, base.3),
            key("ptx", base.0, &base.1, base.2, "12.4"),
        ];
        for (n, k) in others.iter().enumerate() {
            let got = cached(Some(dir.path()), k, || Ok(format!("other {n}").into_bytes())).unwrap();
            assert_eq!(got, format!("other {n}").into_bytes(), "key {n} read the base's output");
        }
    }

    #[test]
    fn a_file_whose_header_differs_is_compiled_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("ptx", "kernel source", &[], None, "13.0");
        // Same name, other contents (a truncated or foreign file).
        std::fs::write(dir.path().join(&k.name), b"knudsen kernel cache 1\nkind ptx\n").unwrap();
        let got = cached(Some(dir.path()), &k, || Ok(b"fresh".to_vec())).unwrap();
        assert_eq!(got, b"fresh");
        assert_eq!(cached(Some(dir.path()), &k, || panic!("compiled again")).unwrap(), b"fresh");
    }

    #[test]
    fn errors_are_not_kept_and_an_unwritable_folder_only_means_compiling() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("ptx", "bad source", &[], None, "13.0");
        assert_eq!(cached(Some(dir.path()), &k, || Err("syntax error".into())).unwrap_err(), "syntax error");
        assert_eq!(cached(Some(dir.path()), &k, || Ok(b"now fine".to_vec())).unwrap(), b"now fine");
        // A folder under a plain file cannot be created: the compile's output still comes back.
        let file = dir.path().join("plain");
        std::fs::write(&file, b"").unwrap();
        let blocked = file.join("kernels");
        assert_eq!(cached(Some(&blocked), &k, || Ok(b"compiled".to_vec())).unwrap(), b"compiled");
        assert_eq!(cached(None, &k, || Ok(b"no cache".to_vec())).unwrap(), b"no cache");
    }
}
