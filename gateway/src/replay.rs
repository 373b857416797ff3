//! The replay backend: answers from recorded calls, with no model at all.
//!
//! Calls are matched by the hash of their canonical request. Each hash keeps its recorded
//! outcomes in order (answers, and transient failures such as a 429), so the gateway's
//! retry loop runs exactly as it did when the recording was made and records the same
//! events (the recorded backend and server included: only latencies differ). A call that
//! was never recorded is an error that names the call and says what
//! differs from the nearest recorded call with the same purpose and agent.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use hamlet_log::event::{FailureKind, LlmRequested, Prompt, StructuredForm};
use hamlet_log::Body;

use crate::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
use crate::request::{hex, milli, EmbedCall, Params};

/// How every replay miss's message begins.
pub const MISS: &str = "replay: no recorded";

enum Outcome {
    Answer(Completion),
    Vectors(Vectors),
    Failed(BackendError),
}

/// An outcome with the latency recorded for it.
type Timed = (Outcome, u32);

/// Answers from a recording.
pub struct Replay {
    backend: String,
    server: String,
    embed_backend: String,
    embed_server: String,
    model: String,
    embed_model: String,
    params: Option<Params>,
    outcomes: Mutex<BTreeMap<[u8; 32], VecDeque<Timed>>>,
    latencies: Mutex<BTreeMap<[u8; 32], u32>>,
    forms: Mutex<BTreeMap<[u8; 32], VecDeque<StructuredForm>>>,
    requests: Vec<LlmRequested>,
}

impl Replay {
    /// Collects the recorded calls from a recording's events, in log order.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Body>) -> Replay {
        let mut outcomes: BTreeMap<[u8; 32], VecDeque<Timed>> = BTreeMap::new();
        let mut requests = Vec::new();
        let mut forms: BTreeMap<[u8; 32], VecDeque<StructuredForm>> = BTreeMap::new();
        let (mut model, mut embed_model, mut params) = (String::new(), String::new(), None);
        let (mut backend, mut server) = (String::new(), String::new());
        let (mut embed_backend, mut embed_server) = (String::new(), String::new());
        for body in events {
            match body {
                Body::LlmRequested(r) => {
                    if model.is_empty() {
                        model = r.model.clone();
                        backend = r.backend.clone();
                        server = r.server.clone();
                        params = Some(Params {
                            temperature: r.temperature_milli as f32 / 1000.0,
                            top_p: r.top_p_milli as f32 / 1000.0,
                            max_tokens: r.max_tokens,
                            seed: r.seed,
                            stop: r.stop.clone(),
                        });
                    }
                    forms.entry(r.request_hash).or_default().push_back(r.structured);
                    if r.attempt == 1 {
                        requests.push(r.clone());
                    }
                }
                Body::LlmResponded(r) if !r.fallback => {
                    let answer = Outcome::Answer(Completion {
                        text: r.text.clone(),
                        tokens_prompt: r.tokens_prompt,
                        tokens_completion: r.tokens_completion,
                        finish_reason: r.finish_reason.clone(),
                        response_model: r.response_model.clone(),
                        response_id: r.response_id.clone(),
                        probabilities: r.probabilities.clone(),
                        tokens_cached: r.tokens_cached,
                    });
                    outcomes.entry(r.request_hash).or_default().push_back((answer, r.latency_ms));
                }
                // Bad answers are the gateway's verdict on a recorded answer, not an outcome.
                Body::LlmFailed(f) if f.kind != FailureKind::BadAnswer => {
                    let failed = Outcome::Failed(BackendError::new(f.kind, f.message.clone()));
                    outcomes.entry(f.request_hash).or_default().push_back((failed, f.latency_ms));
                }
                Body::EmbeddingRequested(r) if embed_model.is_empty() => {
                    embed_model = r.model.clone();
                    embed_backend = r.backend.clone();
                    embed_server = r.server.clone();
                }
                Body::EmbeddingReturned(r) => {
                    let vectors = Outcome::Vectors(Vectors {
                        vectors: r.vectors.clone(),
                        tokens: r.tokens,
                        pooled: r.pooled,
                    });
                    outcomes.entry(r.request_hash).or_default().push_back((vectors, r.latency_ms));
                }
                _ => {}
            }
        }
        Replay {
            backend,
            server,
            embed_backend,
            embed_server,
            model,
            embed_model,
            params,
            outcomes: Mutex::new(outcomes),
            latencies: Mutex::new(BTreeMap::new()),
            forms: Mutex::new(forms),
            requests,
        }
    }

    /// The sampling settings of the first recorded call: a replay must ask the same
    /// questions with the same settings to find their answers.
    pub fn recorded_params(&self) -> Option<Params> {
        self.params.clone()
    }

    /// How many recorded outcomes have not been asked for.
    pub fn unused(&self) -> usize {
        self.outcomes.lock().map(|o| o.values().map(VecDeque::len).sum()).unwrap_or(0)
    }

    fn next(&self, hash: [u8; 32]) -> Option<Outcome> {
        let (outcome, latency) = self.outcomes.lock().ok()?.get_mut(&hash)?.pop_front()?;
        if let Ok(mut latencies) = self.latencies.lock() {
            latencies.insert(hash, latency);
        }
        Some(outcome)
    }

    fn latency(&self, hash: [u8; 32]) -> Option<u32> {
        self.latencies.lock().ok()?.remove(&hash)
    }

    fn miss(&self, attempt: &Attempt<'_>) -> BackendError {
        let call = attempt.call;
        let who = call.agent.map_or_else(|| "no agent".to_owned(), |a| format!("agent {}", a.0));
        let mut message = format!(
            "{MISS} answer for call {} ({}, {who}, template {} v{}, try {})",
            &hex(&attempt.request_hash)[..16],
            call.purpose,
            call.template,
            call.template_version,
            attempt.attempt,
        );
        let same: Vec<&LlmRequested> = self
            .requests
            .iter()
            .filter(|r| r.purpose == call.purpose && r.agent == call.agent)
            .collect();
        let nearest = same
            .iter()
            .map(|r| (differences(r, attempt, &self.model), *r))
            .min_by_key(|(d, _)| d.len());
        match nearest {
            Some((d, _)) if d.is_empty() => message.push_str(
                "; a call exactly like it was recorded, but its recorded answers are used up \
                 (the run asked it more often than the recording did)",
            ),
            Some((d, _)) => {
                message.push_str(&format!(
                    "; the nearest recorded call for that purpose and agent differs in: {}",
                    d.join("; ")
                ));
            }
            None => message.push_str(&format!(
                "; the recording has no call with that purpose for that agent ({} calls in all)",
                self.requests.len()
            )),
        }
        BackendError::new(FailureKind::Refused, message)
    }
}

/// What differs between a recorded request and a new try, field by field.
fn differences(recorded: &LlmRequested, now: &Attempt<'_>, model: &str) -> Vec<String> {
    let mut d = Vec::new();
    let mut field = |name: &str, was: String, is: String| {
        if was != is {
            d.push(format!("{name}: recorded {was}, now {is}"));
        }
    };
    let p = now.params;
    field("model", recorded.model.clone(), model.to_owned());
    field("temperature", recorded.temperature_milli.to_string(), milli(p.temperature).to_string());
    field("top_p", recorded.top_p_milli.to_string(), milli(p.top_p).to_string());
    field("max_tokens", recorded.max_tokens.to_string(), now.max_tokens.to_string());
    field("seed", format!("{:?}", recorded.seed), format!("{:?}", p.seed));
    field("stop", format!("{:?}", recorded.stop), format!("{:?}", p.stop));
    field("template", recorded.template.clone(), now.call.template.clone());
    field(
        "template version",
        recorded.template_version.to_string(),
        now.call.template_version.to_string(),
    );
    field(
        "answer schema",
        recorded.schema_hash.map(|h| hex(&h[..8])).unwrap_or_default(),
        now.call.shape.schema_hash().map(|h| hex(&h[..8])).unwrap_or_default(),
    );
    if let Some(where_) = prompt_difference(&recorded.prompt, &now.call.prompt) {
        d.push(format!("prompt: {where_}"));
    }
    d
}

/// Where two prompts first differ, with a little of each side.
fn prompt_difference(recorded: &Prompt, now: &Prompt) -> Option<String> {
    let texts = |p: &Prompt| -> Vec<(String, String)> {
        match p {
            Prompt::Text(t) => vec![("text".into(), t.clone())],
            Prompt::Chat(m) => m.iter().map(|m| (m.role.clone(), m.content.clone())).collect(),
        }
    };
    let (a, b) = (texts(recorded), texts(now));
    if a.len() != b.len() {
        return Some(format!("recorded {} messages, now {}", a.len(), b.len()));
    }
    for (i, ((ra, ta), (rb, tb))) in a.iter().zip(&b).enumerate() {
        if ra != rb {
            return Some(format!("message {} is {ra} in the recording, {rb} now", i + 1));
        }
        if ta != tb {
            let at = ta.chars().zip(tb.chars()).take_while(|(x, y)| x == y).count();
            let show = |t: &str| t.chars().skip(at.saturating_sub(10)).take(40).collect::<String>();
            return Some(format!(
                "message {} ({ra}) from character {at}: recorded {:?}, now {:?}",
                i + 1,
                show(ta),
                show(tb)
            ));
        }
    }
    None
}

impl LlmBackend for Replay {
    /// The recorded backend: a replay re-enacts the recorded calls, so the events it
    /// records are the recorded ones (latency apart).
    fn name(&self) -> &str {
        if self.backend.is_empty() {
            "replay"
        } else {
            &self.backend
        }
    }

    fn server(&self) -> String {
        self.server.clone()
    }

    fn model(&self) -> String {
        self.model.clone()
    }

    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        Box::pin(async move {
            match self.next(attempt.request_hash) {
                Some(Outcome::Answer(c)) => Ok(c),
                Some(Outcome::Failed(f)) => Err(f),
                Some(Outcome::Vectors(_)) | None => Err(self.miss(&attempt)),
            }
        })
    }

    fn is_recorded(&self) -> bool {
        true
    }

    fn recorded_latency_ms(&self, request_hash: [u8; 32]) -> Option<u32> {
        self.latency(request_hash)
    }

    fn recorded_form(&self, request_hash: [u8; 32]) -> Option<StructuredForm> {
        self.forms.lock().ok()?.get_mut(&request_hash)?.pop_front()
    }
}

impl EmbedBackend for Replay {
    fn name(&self) -> &str {
        if self.embed_backend.is_empty() {
            "replay"
        } else {
            &self.embed_backend
        }
    }

    fn server(&self) -> String {
        self.embed_server.clone()
    }

    fn model(&self) -> String {
        self.embed_model.clone()
    }

    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        request_hash: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>> {
        Box::pin(async move {
            match self.next(request_hash) {
                Some(Outcome::Vectors(v)) => Ok(v),
                Some(Outcome::Failed(f)) => Err(f),
                Some(Outcome::Answer(_)) | None => Err(BackendError::new(
                    FailureKind::Refused,
                    format!(
                        "{MISS} embedding for {} texts ({}), first {:?}",
                        call.texts.len(),
                        call.purpose,
                        call.texts.first().map(|t| t.chars().take(60).collect::<String>())
                    ),
                )),
            }
        })
    }

    fn is_recorded(&self) -> bool {
        true
    }

    fn recorded_latency_ms(&self, request_hash: [u8; 32]) -> Option<u32> {
        self.latency(request_hash)
    }
}
