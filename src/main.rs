//! The `knudsen` command line: parse, then hand the command to its file in `src/cli/`.

mod cli;

use clap::Parser;
use cli::args::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Check { .. } | Command::Info | Command::Compare { .. }) {
        quiet_on_closed_pipe();
    }
    cli::logger::init();
    if let Err(failure) = cli::switches::check_switches() {
        return failure.report();
    }
    let result = match cli.command {
        Command::Run { config, backend, out, threads, restart, force, overrides } => {
            cli::run::run(&config, backend, out, threads, cli::resume::Resume { from: restart, force }, overrides)
        }
        Command::Bench { args } => cli::bench::bench(args),
        Command::Info => cli::info::info(),
        Command::Validate { files, fast, backend, acceleration, precision, out } => {
            cli::validate::validate(files, fast, backend, (acceleration, precision), &out)
        }
        Command::NvrtcCheck { source, arch } => cli::nvrtc::nvrtc_check(source.as_deref(), arch),
        Command::VkStats { row, tiles, scheme, ir } => {
            cli::vk_stats::vk_stats(&row, tiles.as_deref(), scheme, ir.as_deref())
        }
        Command::Compare { a, b } => cli::compare::compare(&a, &b),
        Command::Slice { result, field, axis, at, out } => cli::slice::slice(&result, &field, &axis, at, &out),
        Command::Line { result, field, along, through, from, to, points, out } => match along {
            Some(along) => cli::slice::line(&result, &field, &along, &through, &out),
            None => cli::slice::segment(&result, &field, [&from, &to], points, &out),
        },
        Command::Check { config, device_memory_mib, overrides } => {
            cli::check::check(&config, device_memory_mib, overrides)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// The commands that only print end quietly when their reader goes (`knudsen check CASE |
/// head`), as other command-line tools do, instead of panicking in `println!`: the Rust
/// runtime ignores SIGPIPE, and this restores its default. Not for `run`, `bench` or
/// `validate`, whose results must not be lost with their log's reader.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: at start-up, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
