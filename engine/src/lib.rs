//! Hamlet engine.
