//! The end of every example's command line, in one place: an error goes to stderr as
//! `<example>: <message>` (its Display: no quotes, no `Err(…)`) with exit status 1, and an
//! argument the example does not take is an error naming it, followed by the example's help.

use std::error::Error;
use std::process::ExitCode;

/// Runs the example `name`'s `run`: exit status 0 when it returns `Ok`, otherwise its error on
/// stderr after the example's name, and status 1.
pub fn main(name: &str, run: impl FnOnce() -> Result<(), Box<dyn Error>>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The error for an argument the example does not take: lexopt's message, then `help`.
pub fn unexpected(arg: lexopt::Arg<'_>, help: &str) -> Box<dyn Error> {
    format!("{}\n\n{help}", arg.unexpected()).into()
}
