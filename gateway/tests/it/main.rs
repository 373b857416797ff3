//! The gateway's tests over real transports: HTTP on loopback, the embedded model, replay.

mod http;
pub mod loopback;
mod model;
mod replay;
mod scored;
pub mod scripted;
mod servers;
