//! Integration tests of `hamlet-engine`: one binary (`cargo test -p hamlet-engine --test it`).

mod cli;
mod crash;
mod day;
mod fold;
mod golden;
mod intervene;
mod llm;
#[path = "../../../gateway/tests/it/loopback.rs"]
#[allow(dead_code, reason = "shared with the gateway's tests, which use all of it")]
mod loopback;
mod mind;
mod ops;
mod power_loss;
mod query;
mod rules;
mod run;
mod scale;
mod sim;
mod store_model;
mod support;
mod tidy;
mod town;
mod view;
