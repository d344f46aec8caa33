use anyhow::Context;
use std::path::{Path, PathBuf};

/// Temporary sibling of `path`: same directory (so the rename is atomic), hidden name.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Let `write` create the file at a temporary path, then rename it to `path`. On error the
/// temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, write: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let tmp = temp_path(path);
    let result = write(&tmp).and_then(|()| {
        std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    // The error names the file asked for first; the temporary name only says where it failed.
    result.with_context(|| format!("writing {}", path.display()))
}

pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomic(path, |tmp| {
        use std::io::Write;
        let mut f = std::fs::File::create(tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        Ok(())
    })
}
