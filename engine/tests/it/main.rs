//! Integration tests of `hamlet-engine`: one binary (`cargo test -p hamlet-engine --test it`).

mod cli;
mod crash;
mod fold;
mod golden;
mod power_loss;
mod store_model;
mod support;
mod tidy;
mod town;
