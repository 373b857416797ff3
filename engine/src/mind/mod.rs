//! What goes on in an agent's head, as folds of the log: the memory stream and retrieval.
//!
//! * [`memory`]: each agent's memory stream — every `MemoryAdded` for it, with its
//!   last-accessed time moved forward by every `Retrieved` that returned it.
//! * [`retrieval`]: the paper's retrieval function over a memory stream: recency,
//!   importance and relevance, each min–max normalised, weighted, top k — producing the
//!   `Retrieved` event that records the scores.
//! * [`prompt`]: the versioned prompt templates of `engine/prompts/`, rendered for chat or
//!   completion models.
//!
//! Nothing here asks a model or reads a clock: the agent loop asks the gateway, commits the
//! answers as events, and these folds read them back.

pub mod memory;
pub mod prompt;
pub mod retrieval;
