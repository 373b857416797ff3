//! `hamlet-engine`: a town of generative agents as an event-sourced simulation.
//!
//! # Brief overview
//! * [`store`]: the durable truth (hash-chained segment files, `fdatasync`ed at commit
//!   points) and the sled index derived from it; fork, import, export.
//! * [`fold`]: the town as a pure, total function of its events, and its state hash.
//! * [`history`]: the town at any moment (`state_at`), from the nearest checkpoint.
//! * [`mind`]: memory streams and retrieval, folded from the log; remembering and recalling
//!   through the gateway.
//! * [`pending`]: batches of events whose causes point into the batch.
//! * [`synth`]: synthetic, town-shaped event streams for benchmarks and tests.
//! * [`rng`]: `SimRng`, the engine's only randomness, seeded from events.
//! * [`rulebook`]: the numbered rules a run decides by, recorded with it.
//! * [`view`]: what the desktop viewer shows (frames, timeline, map, panels, "why?" laid
//!   out), answered from a recording or a store.
//!
//! The engine never prints: the `hamlet` binary is its only voice.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod describe;
pub mod diff;
pub mod economy;
pub mod fold;
pub mod history;
pub mod mind;
pub mod ops;
pub mod pending;
pub mod query;
pub mod research;
pub mod resim;
pub mod rng;
pub mod rulebook;
pub mod sim;
pub mod store;
pub mod synth;
pub mod town;
pub mod view;
pub mod why;
