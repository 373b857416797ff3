//! `hamlet-log`: the vocabulary and the bytes of a town's history.
//!
//! An [`Event`] is an immutable fact — an observation, an LLM call, a plan, a payment —
//! with an envelope naming its id, parent, branch, `seq`, simulated time and causes. Events
//! are chained by blake3 ([`EventId::chain`]) and stored in chunks; a `.hamlet` recording
//! is chunks, a summary that indexes them, and a footer that locates the summary
//! (`log-format/FORMAT.md` specifies every byte).
//!
//! # Brief overview
//! * [`event`]: the bodies an event can carry, and the stored bytes of one event.
//! * [`id`]: event and branch ids and the hash chain.
//! * [`format`]: record framing, chunks, summary records, footer.
//! * [`reader`]: a sans-IO reader of records, fed bytes in any pieces.
//! * [`writer`]: writes recordings; refuses any chunk a reader would reject.
//! * [`recording`]: random access to a finished recording (branches, seek, checkpoints).
//! * [`verify`]: checks every invariant; keeps the longest valid prefix of a damaged file.
//!
//! # Which time is which?
//! * `seq`: position on a branch, 0-based. The only order that matters.
//! * `sim_time_secs`: simulated seconds since midnight of day 0, chosen by the engine.
//! * `latency_ms`: wall-clock length of an LLM call; recorded data, never a fold input.
//!
//! This crate knows nothing of the engine, sled, tokio or LLMs, and its readers never
//! panic on bytes from outside. It builds for `wasm32-unknown-unknown` too: there, chunks
//! are decompressed by a pure-Rust Zstandard decoder, written uncompressed, and read on one
//! thread.

pub mod event;
pub mod format;
pub mod id;
pub mod reader;
pub mod recording;
pub mod samples;
pub mod verify;
pub mod writer;

pub use event::{Body, Event, Header, NewEvent};
pub use id::{BranchId, EventId};
pub use recording::Recording;
pub use writer::RecordingWriter;

/// Whether this target runs threads: readers and `verify` spread work over a second thread
/// (or several) where it does, and do it all in turn where it does not (wasm32).
pub(crate) const THREADS: bool = !cfg!(target_arch = "wasm32");

/// The crates whose types appear in this crate's API.
pub mod external {
    pub use blake3;
    pub use postcard;
}
