//! The system graphics stack's own stderr lines during adapter enumeration.
//!
//! On a headless Linux machine the Vulkan loader's window-system probing prints "error:
//! XDG_RUNTIME_DIR is invalid or not set in the environment." (libwayland) once or twice
//! per enumeration, although nothing is wrong: knudsen opens no window. Enumeration runs
//! with stderr captured; that line goes to the debug log, every other captured line is
//! printed once, as it came.

/// Run `f` with file descriptor 2 redirected to a temporary file, then re-emit what was
/// written there (see the module doc). Where capturing is not possible, `f` just runs.
pub fn graphics_stack_quietly<T>(f: impl FnOnce() -> T) -> T {
    // fd 2 belongs to the whole process: two threads redirecting at once would restore each
    // other's temporary file as stderr. One enumeration at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(saved) = Redirect::start() else { return f() };
    let out = f();
    let text = saved.finish();
    let mut seen = std::collections::HashSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if !seen.insert(line.to_string()) {
            continue;
        }
        if line.contains("XDG_RUNTIME_DIR") {
            log::debug!("graphics stack (headless, harmless): {line}");
        } else {
            eprintln!("{line}");
        }
    }
    out
}

/// While alive, fd 2 goes to `file`; dropped (also on a panic in the closure), it goes
/// back to `saved`.
#[cfg(unix)]
struct Redirect {
    saved: libc::c_int,
    file: std::fs::File,
}

#[cfg(unix)]
impl Drop for Redirect {
    fn drop(&mut self) {
        // SAFETY: restores the descriptor saved in `start`, once.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}

#[cfg(unix)]
impl Redirect {
    fn start() -> Option<Self> {
        use std::os::fd::AsRawFd;
        let file = tempfile_in_tmp()?;
        // SAFETY: plain descriptor calls on valid descriptors; every failure is checked and
        // leaves fd 2 as it was.
        unsafe {
            let saved = libc::dup(2);
            if saved < 0 {
                return None;
            }
            if libc::dup2(file.as_raw_fd(), 2) < 0 {
                libc::close(saved);
                return None;
            }
            Some(Self { saved, file })
        }
    }

    fn finish(self) -> String {
        use std::io::{Read, Seek};
        let mut file = self.file.try_clone().ok();
        drop(self);
        let Some(file) = file.as_mut() else { return String::new() };
        let mut text = String::new();
        let _ = file.seek(std::io::SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
        text
    }
}

/// An anonymous file: created in the temporary directory and unlinked at once.
#[cfg(unix)]
fn tempfile_in_tmp() -> Option<std::fs::File> {
    let path =
        std::env::temp_dir().join(format!(".knudsen-stderr-{}-{:?}", std::process::id(), std::thread::current().id()));
    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).ok()?;
    let _ = std::fs::remove_file(&path);
    Some(file)
}

#[cfg(not(unix))]
struct Redirect;

#[cfg(not(unix))]
impl Redirect {
    fn start() -> Option<Self> {
        None
    }
    fn finish(self) -> String {
        String::new()
    }
}
