//! How a command fails, and the exit code each failure gives.

use knudsen::config::ConfigError;
use std::process::ExitCode;

/// Exit code for a bad case file or option: nothing was run or written.
pub const EXIT_BAD_INPUT: u8 = 2;

pub enum Failure {
    /// The input (case file, option, path) is wrong; exit 2.
    BadInput(String),
    /// The run itself failed; exit 1.
    Run(anyhow::Error),
    /// A signal stopped the run after writing its state; exit 128 + the signal (130 for
    /// SIGINT, 143 for SIGTERM), with a line saying how to continue.
    Interrupted { code: u8, message: String },
    /// Said by another process of the job, which met the same failure (`run_mpi.rs`): this
    /// one exits with the code and says nothing.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Said(u8),
}

impl Failure {
    /// A backend that could not be built: the run failed (exit 1) where the machine did
    /// (`backend::fault`), else the case does not fit what was asked for (exit 2).
    pub fn of_backend(e: anyhow::Error) -> Self {
        match knudsen::backend::fault::fault_kind(&e) {
            Some(_) => Failure::Run(e),
            None => Failure::BadInput(format!("{e:#}")),
        }
    }

    /// The line `report` prints.
    pub fn message(&self) -> String {
        match self {
            Failure::BadInput(msg) => format!("error: {msg}"),
            Failure::Run(e) => format!("error: {e:#}"),
            Failure::Interrupted { message, .. } => message.clone(),
            Failure::Said(_) => String::new(),
        }
    }

    /// The process's exit code for this failure.
    pub fn code(&self) -> u8 {
        match self {
            Failure::BadInput(_) => EXIT_BAD_INPUT,
            Failure::Run(_) => 1,
            Failure::Interrupted { code, .. } => *code,
            Failure::Said(code) => *code,
        }
    }

    /// Print the error on stderr and give the exit code.
    pub fn report(self) -> ExitCode {
        if !matches!(self, Failure::Said(_)) {
            eprintln!("{}", self.message());
        }
        ExitCode::from(self.code())
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure::BadInput(e.to_string())
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Run(e)
    }
}

/// Refuse a command that runs in one process (`validate`, `bench`) when a launcher started it
/// as several: each would run all of it, and all would write the same files.
pub fn one_process(command: &str) -> Result<(), Failure> {
    match knudsen::parallel::launched_processes().filter(|&n| n > 1) {
        Some(n) => Err(Failure::BadInput(format!(
            "knudsen {command} runs in one process, but it was started as one of {n} (mpirun, srun): each would run all of it; start it without the launcher (only `knudsen run` shares the work: docs/parallel.md)"
        ))),
        None => Ok(()),
    }
}
