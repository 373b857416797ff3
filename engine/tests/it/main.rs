//! Integration tests of `hamlet-engine`: one binary (`cargo test -p hamlet-engine --test it`).

mod crash;
mod day;
mod fold;
mod goals;
mod golden;
mod intervene;
mod mayor;
mod mind;
mod models;
mod ops;
mod power_loss;
mod query;
mod read_only;
mod scale;
mod sim;
mod store_model;
mod support;
mod tidy;
mod town;
mod view;

pub use hamlet_testkit::{loopback, rules};
