//! Hamlet's LLM gateway: the one door every model call goes through.
//!
//! Agent code asks a [`Call`] with the [`Shape`] its answer must have; the [`Gateway`]
//! sends it to a backend — an OpenAI-compatible server ([`openai`]), the embedded
//! llama.cpp model ([`local`]), or a recording ([`replay`]) — validates the answer into
//! its type ([`answer`]), retries what can be retried, falls back as documented, and
//! returns the answer with the events that record every try. Embeddings go the same way
//! ([`embed`] for the embedded model). [`models`] fetches and verifies the embedded
//! models; [`cost`] adds up what calls cost.
//!
//! What this crate must not do: write to a store (the engine commits the events it
//! returns, in canonical order), read the wall clock for anything but latency, or let an
//! API key reach an event, an error or a log line.

pub mod answer;
pub mod backend;
pub mod config;
pub mod embed;
pub mod footprint;
pub mod gateway;
pub mod local;
pub mod models;
pub mod openai;
pub mod rating;
pub mod replay;
pub mod request;
mod stopwatch;

/// What calls cost: `hamlet-core`'s arithmetic over the log, here under its old name.
pub use hamlet_core::cost;

pub use answer::{Answer, Shape};
pub use backend::{EmbedBackend, LlmBackend};
pub use gateway::{Answered, Embedded, Gateway, GatewayError, InFlight, RetryPolicy};
pub use request::{Call, EmbedCall, Params};
