//! Integration tests of the `hamlet` command line, at the process boundary: one binary
//! (`cargo test -p hamlet-cli --test it`).

mod bench;
mod cli;
mod llm;
mod run;
mod serve;

pub use hamlet_testkit::{forge, loopback, rules};
