//! The gateway's tests over real transports: HTTP on loopback, the embedded model, replay.

mod http;
mod logprobs;
pub mod loopback;
mod model;
mod pool;
mod replay;
mod scored;
pub mod scripted;
mod servers;
