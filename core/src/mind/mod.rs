//! The folds of an agent's head: what it remembers and recalls, where it is in its plans,
//! and what makes a line or an action not sound like a person. None asks a model or reads
//! a clock; the engine's `mind` adds the parts that ask the gateway.
//!
//! * [`memory`]: each agent's memory stream — every `MemoryAdded` for it, with its
//!   last-accessed time moved forward by every `Retrieved` that returned it.
//! * [`retrieval`]: the paper's retrieval function over a memory stream: recency,
//!   importance and relevance, each min–max normalised, weighted, top k — producing the
//!   `Retrieved` event that records the scores.
//! * [`schedule`]: where each agent is in its plans, and so what it needs next.
//! * [`validate`]: what makes a line or an action not sound like a person, checked without
//!   a model (the loop asks again; `hamlet research believability` counts).

pub mod memory;
pub mod retrieval;
pub mod schedule;
pub mod validate;
