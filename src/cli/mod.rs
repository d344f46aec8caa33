//! The `knudsen` commands, one file each: [`run`], [`check`], [`validate`], [`bench`], [`info`],
//! [`compare`], [`slice`] (planes and lines) and the hidden [`nvrtc`] and [`vk_stats`] diagnostics. The pieces they share: [`args`]
//! (what clap parses), [`load`] (the case with its command-line overrides), [`logger`] (the log, a coarse level's lines kept to `debug`),
//! [`out_dir`] (where results go), [`progress`] (what a run shows), [`group`] (what a run's set-up hands its solve), [`run_report`] (what a run says before and after), `run_mpi` (a run as one of several MPI processes) and [`failure`] (the
//! error and its exit code), [`switches`] (the `KNUDSEN_*` environment, checked first). A new command is a new file here and one arm in `main.rs`.

pub mod args;
pub mod bench;
pub mod check;
pub mod coarse;
pub mod compare;
pub mod failure;
pub mod group;
pub mod info;
pub mod load;
pub mod logger;
pub mod nvrtc;
pub mod out_dir;
pub mod progress;
pub mod resume;
pub mod run;
#[cfg(feature = "mpi")]
pub mod run_mpi;
pub mod run_report;
pub mod slice;
pub mod switches;
pub mod validate;
#[cfg(any(target_os = "linux", target_os = "windows"))]
pub mod vk_stats;
/// The Vulkan statistics need wgpu's Vulkan backend (Linux, Windows).
#[cfg(not(any(target_os = "linux", target_os = "windows")))]
pub mod vk_stats {
    pub fn vk_stats(
        _: &str,
        _: Option<&str>,
        _: knudsen::config::Scheme,
        _: Option<&std::path::Path>,
    ) -> Result<(), super::failure::Failure> {
        Err(super::failure::Failure::BadInput("vk-stats needs the Vulkan backend (Linux or Windows)".into()))
    }
}

/// The log target of the commands' own lines: `knudsen`, as the command line has always
/// printed them (the modules here would otherwise show as `knudsen::cli::...`).
pub const LOG: &str = "knudsen";
