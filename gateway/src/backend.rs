//! What every backend implements: one try at a completion, one try at an embedding.
//!
//! A backend does not retry, parse, validate or record: the [`Gateway`](crate::Gateway)
//! does that, the same way for every backend, so that every attempt is an event.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use hamlet_log::event::{FailureKind, StructuredForm};

use crate::request::{Call, EmbedCall, Params};

/// A boxed future, as backends return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One try at a completion.
#[derive(Clone, Debug)]
pub struct Attempt<'a> {
    /// The question.
    pub call: &'a Call,
    /// Sampling settings.
    pub params: &'a Params,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// The canonical request's hash.
    pub request_hash: [u8; 32],
    /// 1 for the first try.
    pub attempt: u32,
    /// How to ask for the answer's structure on this try.
    pub structured: StructuredForm,
}

/// What a model returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The answer, verbatim.
    pub text: String,
    /// Prompt tokens.
    pub tokens_prompt: u32,
    /// Completion tokens.
    pub tokens_completion: u32,
    /// "stop" or "length".
    pub finish_reason: String,
    /// The model that answered, as the server named it.
    pub response_model: String,
    /// The server's id for the answer.
    pub response_id: String,
    /// For an answer read from the model's probabilities (`StructuredForm::Probabilities`):
    /// per item, the probability of each answer 1 to 10, in ten-thousandths. Empty when
    /// the answer was generated.
    pub probabilities: Vec<Vec<u16>>,
    /// Of the prompt tokens, those the model found in its cache (0 when it does not say).
    pub tokens_cached: u32,
}

/// Vectors an embedding model returned.
#[derive(Clone, Debug, PartialEq)]
pub struct Vectors {
    /// One per text.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens read.
    pub tokens: u32,
    /// True when the server answered one vector per token and these are their means.
    pub pooled: bool,
}

/// One failed try.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct BackendError {
    /// How it failed; decides whether the gateway retries.
    pub kind: FailureKind,
    /// What the backend said (never a key).
    pub message: String,
    /// How long the server asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// What a person can change so the next run works (never recorded: it is advice).
    pub hint: Option<String>,
}

impl BackendError {
    /// A failure of `kind`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> BackendError {
        BackendError { kind, message: message.into(), retry_after: None, hint: None }
    }

    /// The same failure, with advice.
    pub fn with_hint(mut self, hint: impl Into<String>) -> BackendError {
        self.hint = Some(hint.into());
        self
    }

    /// True when another try may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::Timeout
                | FailureKind::RateLimited
                | FailureKind::ServerError
                | FailureKind::Connection
        )
    }
}

/// A language model.
pub trait LlmBackend: Send + Sync {
    /// "openai", "local", "replay", or a test double's name.
    fn name(&self) -> &str;
    /// The server's address without credentials; empty for an embedded model.
    fn server(&self) -> String;
    /// The model asked.
    fn model(&self) -> String;
    /// One try.
    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>>;
    /// The forms this backend can ask a structured answer in, best first: the gateway
    /// starts with the first and steps down when the server refuses one. A server's:
    /// `json_schema`, `json_object` with the schema, `json_object`, the prompt alone.
    fn structured_forms(&self) -> &[StructuredForm] {
        &[
            StructuredForm::JsonSchema,
            StructuredForm::JsonObjectSchema,
            StructuredForm::JsonObject,
            StructuredForm::Prompt,
        ]
    }
    /// For a recording: the form the try about to be made for `request_hash` was asked
    /// in, which the gateway uses instead of its own choice (so a re-run asks the same).
    fn recorded_form(&self, _request_hash: [u8; 32]) -> Option<StructuredForm> {
        None
    }
    /// True when answers come from a recording: the gateway then never sleeps between
    /// tries (the waits already happened when the recording was made).
    fn is_recorded(&self) -> bool {
        false
    }
    /// For a recording: the latency recorded for the try just answered for `request_hash`,
    /// which the gateway records again instead of its own (so a re-run's events are
    /// byte-identical).
    fn recorded_latency_ms(&self, _request_hash: [u8; 32]) -> Option<u32> {
        None
    }
    /// What the backend has counted so far, in a line for a benchmark's report (the embedded
    /// model: prompt tokens read and found cached, prefixes shared and dropped); `None` when
    /// it counts nothing of its own.
    fn counters(&self) -> Option<String> {
        None
    }
}

/// An embedding model.
pub trait EmbedBackend: Send + Sync {
    /// "openai", "local", "replay", or a test double's name.
    fn name(&self) -> &str;
    /// The server's address without credentials; empty for an embedded model.
    fn server(&self) -> String;
    /// The model asked.
    fn model(&self) -> String;
    /// One try.
    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        request_hash: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>>;
    /// True when answers come from a recording.
    fn is_recorded(&self) -> bool {
        false
    }
    /// For a recording: the latency recorded for the try just answered.
    fn recorded_latency_ms(&self, _request_hash: [u8; 32]) -> Option<u32> {
        None
    }
}
