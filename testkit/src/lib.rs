//! Hamlet's test doubles and test servers, shared by every crate's tests and benchmarks so
//! that no test code is included across crates by path. Test code only: nothing here is a
//! production default, and every double is named as one.
//!
//! * [`loopback`]: an OpenAI-compatible test server on 127.0.0.1 that plays a script of
//!   replies (answers, failures, slow answers, malformed JSON, dropped connections).
//! * [`machine`]: the machine a benchmark ran on, printed before its numbers.
//! * `rules` (feature `engine`): model doubles that answer every prompt template by rule.
//! * `forge` (feature `engine`): recordings sound by every hash and false in what they say.

#![allow(missing_docs, reason = "test code")]

#[cfg(feature = "engine")]
pub mod forge;
pub mod loopback;
pub mod machine;
#[cfg(feature = "engine")]
pub mod rules;
