//! `hamlet-core`: what reads and explains a Hamlet log, with no I/O, threads, clock, store
//! or gateway — so a recording can be opened anywhere Rust compiles, a browser included.
//!
//! # Brief overview
//! * [`fold`]: the town as a pure, total function of its events, and its state hash.
//! * [`town`]: a town's definition (parsed from TOML text), its map, places and clock.
//! * [`mind`]: the folds of an agent's head: memory stream, retrieval, schedule, and the
//!   checks a line or an action must pass.
//! * [`rulebook`]: the numbered rules a run decides by, recorded with it.
//! * [`query`], [`why`], [`describe`], [`diff`]: what an agent knew, did and why, in words.
//! * [`research`]: the measures `hamlet research` prints.
//! * [`cost`]: calls, tokens and money, summed from the log.
//! * [`view`]: the viewer's layouts (the "why?" graph, the map).
//! * [`rng`]: `SimRng`, the engine's only randomness, seeded from events.
//! * [`synth`]: synthetic, town-shaped event streams for benchmarks and tests.
//!
//! The engine (`hamlet-engine`) adds the store, the gateway's minds and the loop; it
//! re-exports these modules under the same names.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cost;
pub mod describe;
pub mod diff;
pub mod economy;
pub mod fold;
pub mod log;
pub mod mind;
pub mod query;
pub mod research;
pub mod rng;
pub mod rulebook;
pub mod synth;
pub mod town;
pub mod view;
pub mod why;
