//! `hamlet`: the command line, and the engine's only voice. `main` alone turns an outcome
//! into an exit status; every `hint:` comes from [`hamlet_engine::hints`], which the window
//! shares.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse(); // clap itself exits 2 on a usage error
    ExitCode::from(match cli::run(cli) {
        Ok(Outcome::Done) => 0,
        Ok(Outcome::ProblemsFound) => 1,
        Ok(Outcome::PrefixRecovered) => 3,
        Ok(Outcome::FalseCheckpoints) => 4,
        Err(err) if cli::is_broken_pipe(&err) => 0,
        Err(err) => {
            #[expect(clippy::print_stderr, reason = "main is where errors are reported")]
            {
                eprintln!("error: {err:#}");
                for hint in cli::hints_for(&err) {
                    eprintln!("hint: {hint}");
                }
            }
            2
        }
    })
}
