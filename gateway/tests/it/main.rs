//! The gateway's tests over real transports: HTTP on loopback, the embedded model, replay.

mod http;
mod logprobs;
mod model;
mod pool;
mod replay;
mod scored;
pub mod scripted;
mod servers;

pub use hamlet_testkit::loopback;
