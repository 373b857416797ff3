//! The gateway: the one door every model call goes through.
//!
//! For each try it records an `LlmRequested` event, then an `LlmResponded` (the raw text,
//! and the parsed answer when it validates) or an `LlmFailed`. Transient failures (time
//! out, 429, 5xx, a dropped connection) are retried with exponential backoff and jitter,
//! honouring `Retry-After`; answers that do not validate are retried a bounded number of
//! times; after that the shape's documented fallback is used and recorded as a fallback
//! (`fallback: true`, empty text), never as if the model had said it. A request the server
//! refuses (a 4xx other than 429: a bad key, an unknown model) stops with an error: no
//! amount of retrying fixes configuration.
//!
//! The gateway returns the events of a call with its answer instead of writing them: the
//! simulation commits the calls of a step in a canonical order, so a concurrent run and a
//! serial run produce the same log.

use std::sync::Arc;
use std::time::Duration;

use hamlet_log::event::{
    EmbeddingRequested, EmbeddingReturned, FailureKind, LlmFailed, LlmRequested, LlmResponded,
};
use hamlet_log::Body;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use tokio::sync::Semaphore;

use crate::answer::Answer;
use crate::backend::{Attempt, BackendError, EmbedBackend, LlmBackend};
use crate::request::{embed_hash, milli, request_hash, Call, EmbedCall, Params};
use crate::stopwatch::Stopwatch;

/// How hard the gateway tries.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Most tries for transient failures (timeouts, 429, 5xx, connection errors).
    pub max_attempts: u32,
    /// Most answers that fail to validate before the fallback is used.
    pub max_bad_answers: u32,
    /// The first backoff; it doubles each try.
    pub base_delay: Duration,
    /// The longest backoff, and the longest `Retry-After` honoured.
    pub max_delay: Duration,
    /// How long one try may take.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            max_bad_answers: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            timeout: Duration::from_secs(120),
        }
    }
}

/// An answer, with the events that record how it was obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    /// The validated answer, or the fallback.
    pub answer: Answer,
    /// True when `answer` is the shape's fallback, not the model's.
    pub fallback: bool,
    /// The canonical request's hash.
    pub request_hash: [u8; 32],
    /// Every try, in order: `LlmRequested`, then `LlmResponded` or `LlmFailed`.
    pub events: Vec<Body>,
    /// Prompt tokens over all tries.
    pub tokens_prompt: u32,
    /// Completion tokens over all tries.
    pub tokens_completion: u32,
}

/// Embedding vectors, with their events.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedded {
    /// One unit-length vector per text.
    pub vectors: Vec<Vec<f32>>,
    /// `EmbeddingRequested` then `EmbeddingReturned`, or failures.
    pub events: Vec<Body>,
}

/// A call that could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The server refuses the request itself: retrying will not help.
    #[error("the model server refused the call ({purpose}): {message}")]
    Refused {
        /// The call's purpose.
        purpose: String,
        /// What the server said.
        message: String,
        /// The events recorded before giving up.
        events: Vec<Body>,
    },
    /// Every try failed.
    #[error("the call ({purpose}) failed {attempts} times; the last: {message}")]
    Exhausted {
        /// The call's purpose.
        purpose: String,
        /// Tries made.
        attempts: u32,
        /// The last failure.
        message: String,
        /// The events recorded.
        events: Vec<Body>,
    },
    /// Replay found no recorded answer for this call.
    #[error("{0}")]
    NotRecorded(String),
}

impl GatewayError {
    /// The events recorded before the error: commit them too.
    pub fn events(&self) -> &[Body] {
        match self {
            GatewayError::Refused { events, .. } | GatewayError::Exhausted { events, .. } => events,
            GatewayError::NotRecorded(_) => &[],
        }
    }
}

/// The gateway: backends, sampling settings, retry policy and a bound on concurrent calls.
#[derive(Clone)]
pub struct Gateway {
    llm: Arc<dyn LlmBackend>,
    embedder: Arc<dyn EmbedBackend>,
    params: Params,
    policy: RetryPolicy,
    permits: Arc<Semaphore>,
}

impl Gateway {
    /// A gateway over these backends, at most `concurrency` calls at once.
    pub fn new(
        llm: Arc<dyn LlmBackend>,
        embedder: Arc<dyn EmbedBackend>,
        params: Params,
        policy: RetryPolicy,
        concurrency: usize,
    ) -> Gateway {
        Gateway {
            llm,
            embedder,
            params,
            policy,
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    /// The language model's backend.
    pub fn llm(&self) -> &dyn LlmBackend {
        &*self.llm
    }

    /// The embedding backend.
    pub fn embedder(&self) -> &dyn EmbedBackend {
        &*self.embedder
    }

    /// The sampling settings.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Asks, retries, validates, and falls back as documented.
    pub async fn ask(&self, call: &Call) -> Result<Answered, GatewayError> {
        let model = self.llm.model();
        let hash = request_hash(call, &self.params, &model);
        let max_tokens = call.max_tokens.unwrap_or(self.params.max_tokens);
        let mut out = Answered {
            answer: call.shape.fallback(),
            fallback: true,
            request_hash: hash,
            events: Vec::new(),
            tokens_prompt: 0,
            tokens_completion: 0,
        };
        let (mut transient, mut bad) = (0u32, 0u32);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            out.events
                .push(Body::LlmRequested(self.requested(call, &model, hash, max_tokens, attempt)));
            let try_ =
                Attempt { call, params: &self.params, max_tokens, request_hash: hash, attempt };
            let watch = Stopwatch::start();
            let result = {
                let _permit =
                    self.permits.acquire().await.map_err(|_| GatewayError::Exhausted {
                        purpose: call.purpose.clone(),
                        attempts: attempt,
                        message: "the gateway is shutting down".into(),
                        events: Vec::new(),
                    })?;
                match tokio::time::timeout(self.policy.timeout, self.llm.complete(try_)).await {
                    Ok(result) => result,
                    Err(_) => Err(BackendError::new(
                        FailureKind::Timeout,
                        format!("no answer within {:?}", self.policy.timeout),
                    )),
                }
            };
            let latency_ms = self.llm.recorded_latency_ms(hash).unwrap_or_else(|| watch.millis());
            let failure = match result {
                Ok(completion) => {
                    out.tokens_prompt = out.tokens_prompt.saturating_add(completion.tokens_prompt);
                    out.tokens_completion =
                        out.tokens_completion.saturating_add(completion.tokens_completion);
                    let parsed = call.shape.parse(&completion.text);
                    out.events.push(Body::LlmResponded(LlmResponded {
                        request_hash: hash,
                        text: completion.text,
                        parsed: parsed.as_ref().ok().map(Answer::to_json),
                        fallback: false,
                        tokens_prompt: completion.tokens_prompt,
                        tokens_completion: completion.tokens_completion,
                        latency_ms,
                        finish_reason: completion.finish_reason,
                        response_model: completion.response_model,
                        response_id: completion.response_id,
                    }));
                    match parsed {
                        Ok(answer) => {
                            out.answer = answer;
                            out.fallback = false;
                            return Ok(out);
                        }
                        Err(invalid) => {
                            bad += 1;
                            out.events.push(Body::LlmFailed(LlmFailed {
                                request_hash: hash,
                                kind: FailureKind::BadAnswer,
                                message: invalid.0,
                                attempt,
                                latency_ms: 0,
                            }));
                            if bad >= self.policy.max_bad_answers {
                                break;
                            }
                            continue;
                        }
                    }
                }
                Err(failure) => failure,
            };
            if self.llm.is_recorded() && failure.message.starts_with(crate::replay::MISS) {
                return Err(GatewayError::NotRecorded(failure.message));
            }
            out.events.push(Body::LlmFailed(LlmFailed {
                request_hash: hash,
                kind: failure.kind,
                message: failure.message.clone(),
                attempt,
                latency_ms,
            }));
            if !failure.is_transient() {
                return Err(GatewayError::Refused {
                    purpose: call.purpose.clone(),
                    message: failure.message,
                    events: out.events,
                });
            }
            transient += 1;
            if transient >= self.policy.max_attempts {
                return Err(GatewayError::Exhausted {
                    purpose: call.purpose.clone(),
                    attempts: attempt,
                    message: failure.message,
                    events: out.events,
                });
            }
            if !self.llm.is_recorded() {
                tokio::time::sleep(backoff(&self.policy, hash, transient, failure.retry_after))
                    .await;
            }
        }
        // Out of tries with answers that never validated: the documented fallback.
        out.events.push(Body::LlmResponded(LlmResponded {
            request_hash: hash,
            text: String::new(),
            parsed: Some(out.answer.to_json()),
            fallback: true,
            tokens_prompt: 0,
            tokens_completion: 0,
            latency_ms: 0,
            finish_reason: "fallback".into(),
            response_model: String::new(),
            response_id: String::new(),
        }));
        Ok(out)
    }

    fn requested(
        &self,
        call: &Call,
        model: &str,
        hash: [u8; 32],
        max_tokens: u32,
        attempt: u32,
    ) -> LlmRequested {
        LlmRequested {
            request_hash: hash,
            purpose: call.purpose.clone(),
            agent: call.agent,
            backend: self.llm.name().to_owned(),
            server: self.llm.server(),
            model: model.to_owned(),
            temperature_milli: milli(self.params.temperature),
            top_p_milli: milli(self.params.top_p),
            max_tokens,
            seed: self.params.seed,
            stop: self.params.stop.clone(),
            prompt: call.prompt.clone(),
            template: call.template.clone(),
            template_version: call.template_version,
            schema_hash: call.shape.schema_hash(),
            attempt,
        }
    }

    /// Embeds texts, retrying transient failures; vectors are checked (one per text, one
    /// length, finite) and normalised to unit length.
    pub async fn embed(&self, call: &EmbedCall) -> Result<Embedded, GatewayError> {
        let model = self.embedder.model();
        let hash = embed_hash(call, &model);
        let mut events = vec![Body::EmbeddingRequested(EmbeddingRequested {
            request_hash: hash,
            purpose: call.purpose.clone(),
            agent: call.agent,
            backend: self.embedder.name().to_owned(),
            server: self.embedder.server(),
            model,
            texts: call.texts.clone(),
        })];
        let mut attempt = 0;
        loop {
            attempt += 1;
            let watch = Stopwatch::start();
            let result = {
                let _permit = self.permits.acquire().await.map_err(|_| {
                    GatewayError::NotRecorded("the gateway is shutting down".into())
                })?;
                match tokio::time::timeout(self.policy.timeout, self.embedder.embed(call, hash))
                    .await
                {
                    Ok(result) => result,
                    Err(_) => Err(BackendError::new(
                        FailureKind::Timeout,
                        format!("no answer within {:?}", self.policy.timeout),
                    )),
                }
            };
            let latency_ms =
                self.embedder.recorded_latency_ms(hash).unwrap_or_else(|| watch.millis());
            // Recorded vectors were normalised when recorded: scaling them again would move
            // their last bits, and a re-run must be byte-identical.
            let normalise = !self.embedder.is_recorded();
            let failure = match result.and_then(|v| checked_vectors(v, call.texts.len(), normalise))
            {
                Ok(v) => {
                    events.push(Body::EmbeddingReturned(EmbeddingReturned {
                        request_hash: hash,
                        vectors: v.vectors.clone(),
                        tokens: v.tokens,
                        latency_ms,
                    }));
                    return Ok(Embedded { vectors: v.vectors, events });
                }
                Err(failure) => failure,
            };
            if self.embedder.is_recorded() && failure.message.starts_with(crate::replay::MISS) {
                return Err(GatewayError::NotRecorded(failure.message));
            }
            events.push(Body::LlmFailed(LlmFailed {
                request_hash: hash,
                kind: failure.kind,
                message: failure.message.clone(),
                attempt,
                latency_ms,
            }));
            let retry = failure.is_transient() || failure.kind == FailureKind::BadAnswer;
            if !retry || attempt >= self.policy.max_attempts {
                return Err(GatewayError::Exhausted {
                    purpose: call.purpose.clone(),
                    attempts: attempt,
                    message: failure.message,
                    events,
                });
            }
            if !self.embedder.is_recorded() {
                tokio::time::sleep(backoff(&self.policy, hash, attempt, failure.retry_after)).await;
            }
        }
    }
}

/// One vector per text, all of one length, finite; scaled to unit length if `normalise`.
fn checked_vectors(
    mut v: crate::backend::Vectors,
    texts: usize,
    normalise: bool,
) -> Result<crate::backend::Vectors, BackendError> {
    let bad = |m: String| Err(BackendError::new(FailureKind::BadAnswer, m));
    if v.vectors.len() != texts {
        return bad(format!("{} vectors for {texts} texts", v.vectors.len()));
    }
    let dims = v.vectors.first().map_or(0, Vec::len);
    for (i, vector) in v.vectors.iter_mut().enumerate() {
        if vector.len() != dims || dims == 0 {
            return bad(format!("vector {i} has {} dimensions, not {dims}", vector.len()));
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return bad(format!("vector {i} holds a value that is not a finite number"));
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if normalise && norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
    }
    Ok(v)
}

/// Exponential backoff with jitter, from a stream seeded by the request and the try
/// (no wall clock, no global randomness), never shorter than the server's `Retry-After`.
pub fn backoff(
    policy: &RetryPolicy,
    request_hash: [u8; 32],
    failures: u32,
    retry_after: Option<Duration>,
) -> Duration {
    let exp = policy.base_delay.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    let ceiling = exp.min(policy.max_delay);
    let mut seed = request_hash;
    seed[..4].copy_from_slice(&failures.to_le_bytes());
    let draw = rand_chacha::ChaCha8Rng::from_seed(seed).next_u32();
    // Half the ceiling plus a random part of the other half.
    let jittered = ceiling / 2 + ceiling.mul_f64(f64::from(draw) / f64::from(u32::MAX) / 2.0);
    match retry_after {
        Some(asked) => jittered.max(asked.min(policy.max_delay)),
        None => jittered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_jittered_bounded_and_honours_retry_after() {
        let policy = RetryPolicy::default();
        let h = [7u8; 32];
        let first = backoff(&policy, h, 1, None);
        assert!(first >= Duration::from_millis(250) && first <= Duration::from_millis(500));
        let fourth = backoff(&policy, h, 4, None);
        assert!(fourth >= Duration::from_secs(2) && fourth <= Duration::from_secs(4));
        assert!(backoff(&policy, h, 40, None) <= policy.max_delay);
        assert_eq!(backoff(&policy, h, 3, None), backoff(&policy, h, 3, None), "reproducible");
        assert_ne!(backoff(&policy, h, 3, None), backoff(&policy, [8; 32], 3, None), "jittered");
        let asked = backoff(&policy, h, 1, Some(Duration::from_secs(7)));
        assert_eq!(asked, Duration::from_secs(7));
        let greedy = backoff(&policy, h, 1, Some(Duration::from_secs(3600)));
        assert_eq!(greedy, policy.max_delay);
    }
}
