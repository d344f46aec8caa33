//! The command line's logger: env_logger's, except that what a coarse level says about
//! itself at `info` (its backend's kernels, its synthetic solve's choices) is kept to `debug`,
//! so that a run's log speaks of the case once, not of each level and then the case again;
//! the coarse start's own summary lines stay.

use log::{Level, Log, Metadata, Record};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set while a coarse level runs (`Levels`); every thread's lines count, the level's
/// helper threads' included.
static IN_LEVEL: AtomicBool = AtomicBool::new(false);

/// The coarse start's own lines, which say what its levels did: never demoted.
const LEVELS_TARGET: &str = "knudsen::solver::coarse";

struct Logger(env_logger::Logger);

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        self.0.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        let demote = record.level() == Level::Info
            && IN_LEVEL.load(Ordering::Relaxed)
            && !record.target().starts_with(LEVELS_TARGET);
        if !demote {
            return self.0.log(record);
        }
        let debug = Record::builder()
            .args(*record.args())
            .level(Level::Debug)
            .target(record.target())
            .module_path(record.module_path())
            .file(record.file())
            .line(record.line())
            .build();
        if self.0.enabled(debug.metadata()) {
            self.0.log(&debug);
        }
    }

    fn flush(&self) {
        self.0.flush()
    }
}

/// Install the logger: `RUST_LOG` as env_logger reads it, `info` by default.
pub fn init() {
    let inner = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp(None)
        .build();
    log::set_max_level(inner.filter());
    // Only main() installs it, once.
    log::set_boxed_logger(Box::new(Logger(inner))).expect("the logger is installed once");
}

/// While alive, the `info` lines of a coarse level are `debug` lines.
pub struct Levels;

impl Levels {
    pub fn quiet() -> Self {
        IN_LEVEL.store(true, Ordering::Relaxed);
        Levels
    }
}

impl Drop for Levels {
    fn drop(&mut self) {
        IN_LEVEL.store(false, Ordering::Relaxed);
    }
}
