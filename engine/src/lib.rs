//! `hamlet-engine`: a town of generative agents as an event-sourced simulation.
//!
//! # Brief overview
//! * [`store`]: the durable truth (hash-chained segment files, `fdatasync`ed at commit
//!   points) and the sled index derived from it; fork, import, export.
//! * [`history`]: the town at any moment (`state_at`), from the nearest checkpoint.
//! * [`mind`]: remembering, recalling, planning and speaking through the gateway, beside
//!   the folds of an agent's head.
//! * [`sim`]: the loop; [`resim`]: the loop again with every answer from a recording.
//! * [`pending`]: batches of events whose causes point into the batch.
//! * [`reader`]: a recording or a store, opened and read as a log — the one way in.
//! * [`ops`]: what a person does to a store (fork, rename, intervene), for the CLI and the
//!   window.
//! * [`view`]: what the desktop viewer shows (frames, timeline, map, panels, "why?" laid
//!   out), answered from a recording or a store.
//!
//! The read path — [`fold`], [`town`]'s types, the memory folds, [`query`], [`why`],
//! [`research`], [`rulebook`], [`rng`], [`synth`] — is `hamlet-core`'s, re-exported here
//! under the same names.
//!
//! The engine never prints: the `hamlet` binary is its only voice.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod hints;
pub mod history;
pub mod mind;
pub mod ops;
pub mod pending;
pub mod reader;
pub mod resim;
pub mod sim;
pub mod store;
pub mod town;
pub mod view;

// The read path lives in `hamlet-core`; it is the engine's under the same names.
pub use hamlet_core::{
    describe, diff, economy, fold, log, query, research, rng, rulebook, synth, why,
};
