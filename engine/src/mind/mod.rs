//! What goes on in an agent's head, as folds of the log: the memory stream and retrieval.
//!
//! * [`memory`]: each agent's memory stream — every `MemoryAdded` for it, with its
//!   last-accessed time moved forward by every `Retrieved` that returned it.
//! * [`retrieval`]: the paper's retrieval function over a memory stream: recency,
//!   importance and relevance, each min–max normalised, weighted, top k — producing the
//!   `Retrieved` event that records the scores.
//! * [`plan`]: the day plan, its decomposition into hours and actions, and where each
//!   happens, chosen from the agent's spatial memory.
//! * [`goal`]: planning toward a life goal (`goal_qa`): questions, answers, then a place
//!   and a purpose there, asked again when it is done.
//! * [`respond`]: continue or react, a line of dialogue, an interview answer, an inner
//!   voice.
//! * [`social`]: around a conversation (rulebook 4): what each speaker wants from it, and
//!   afterwards each one's planning note and the commitments it agreed to.
//! * [`schedule`]: where each agent is in its plans, and so what it needs next.
//! * [`think`]: remembering (importance rated, text embedded) and recalling through the
//!   gateway, as batches of events that name their causes.
//! * [`validate`]: what makes a line or an action not sound like a person, checked without
//!   a model (the loop asks again; `hamlet research believability` counts).
//! * [`prompt`]: the versioned prompt templates of `engine/prompts/`, rendered for chat or
//!   completion models.
//!
//! The folds never ask a model or read a clock; `think` asks the gateway and returns events,
//! which the agent loop commits in canonical order and the folds read back.

pub mod goal;
pub mod plan;
pub mod prompt;
pub mod respond;
pub mod social;
pub mod think;

// The folds are `hamlet-core`'s.
pub use hamlet_core::mind::{memory, retrieval, schedule, validate};
