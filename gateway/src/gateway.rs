//! The gateway: the one door every model call goes through.
//!
//! For each try it records an `LlmRequested` event, then an `LlmResponded` (the raw text,
//! and the parsed answer when it validates) or an `LlmFailed`. Transient failures (time
//! out, 429, 5xx, a dropped connection) are retried with exponential backoff and jitter,
//! honouring `Retry-After`; answers that do not validate are retried a bounded number of
//! times; after that the shape's documented fallback is used and recorded as a fallback
//! (`fallback: true`, empty text), never as if the model had said it. A request the server
//! refuses (a 4xx other than 429: a bad key, an unknown model; or any status whose message
//! says no retry can help: no embeddings loaded, a request it cannot parse) stops after that
//! one try with the server's message and a hint: no amount of retrying fixes configuration.
//!
//! Structured answers are negotiated per server: a call starts in the form learned so far
//! for this gateway's server and model (else the backend's best, see
//! [`LlmBackend::structured_forms`]); when the server refuses the form, the call is asked
//! again at once in the next one — not counted as a failed try, no backoff — and the form
//! that works is kept for the calls after it (in a simulation, for the calls after its
//! events are committed: [`Gateway::learn_from_the_log`]). Each `LlmRequested` records its
//! form.
//!
//! Slow servers: a try may take the configured timeout, or three times the longest answer
//! seen so far in this run if that is longer, and twice as long after each try of the same
//! call that timed out (at most an hour). [`Gateway::in_flight`] tells a progress line
//! what is being waited for, and for how long.
//!
//! Several models in one run: a gateway may hold other gateways by the name a persona gives
//! its model ([`Gateway::add_model`]) and send each agent's calls to the one it was routed
//! to ([`Gateway::route`]); embeddings, and calls for no agent, stay with this one.
//!
//! The gateway returns the events of a call with its answer instead of writing them: the
//! simulation commits the calls of a step in a canonical order, so a concurrent run and a
//! serial run produce the same log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hamlet_log::event::{
    AgentId, EmbeddingRequested, EmbeddingReturned, FailureKind, LlmFailed, LlmRequested,
    LlmResponded, StructuredForm,
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
        /// What to change.
        hint: Option<String>,
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
        /// What to change.
        hint: Option<String>,
        /// The events recorded.
        events: Vec<Body>,
    },
    /// Replay found no recorded answer for this call.
    #[error("{0}")]
    NotRecorded(String),
    /// The agent thinks with a model this run was not given.
    #[error(
        "this run has no model named `{name}` ({purpose}): name `default`, `small`, or a \
         profile of the config file (`[models.{name}]`, with its base_url and model)"
    )]
    NoModel {
        /// The call's purpose.
        purpose: String,
        /// The name.
        name: String,
    },
}

impl GatewayError {
    /// The events recorded before the error: commit them too.
    pub fn events(&self) -> &[Body] {
        match self {
            GatewayError::Refused { events, .. } | GatewayError::Exhausted { events, .. } => events,
            GatewayError::NotRecorded(_) | GatewayError::NoModel { .. } => &[],
        }
    }

    /// What a person can change so that the call works.
    pub fn hint(&self) -> Option<&str> {
        match self {
            GatewayError::Refused { hint, .. } | GatewayError::Exhausted { hint, .. } => {
                hint.as_deref()
            }
            GatewayError::NotRecorded(_) | GatewayError::NoModel { .. } => None,
        }
    }
}

/// A call waiting for its answer.
#[derive(Clone, Debug, PartialEq)]
pub struct InFlight {
    /// The call's purpose.
    pub purpose: String,
    /// For whom.
    pub agent: Option<AgentId>,
    /// Which try.
    pub attempt: u32,
    /// Seconds since the try was sent.
    pub seconds: f64,
}

/// What the gateway has learned of its server in this run.
#[derive(Default)]
struct Learned {
    /// The structured form that works (or was set).
    form: Option<StructuredForm>,
    /// The backend refused ratings read from probabilities (a server without `logprobs`):
    /// ratings are generated from then on.
    no_probabilities: bool,
    /// The longest answer so far, in milliseconds.
    longest_ms: u32,
    /// The length of the embedding vectors so far.
    dims: Option<usize>,
    /// What tries find out about the server is learned only through
    /// [`Gateway::learn_from`], once their events are in the log.
    from_log: bool,
    /// Tries being waited for, by a number of their own.
    flights: BTreeMap<u64, (String, Option<AgentId>, u32, Stopwatch)>,
    next_flight: u64,
    /// Tries sent that were not their call's first.
    again: u64,
}

/// The tries a gateway has sent so far in this run: for a progress line's throughput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tries {
    /// Every try sent (model calls and embeddings).
    pub sent: u64,
    /// Those that were not their call's first: after a failure, a timeout or an answer
    /// that did not validate.
    pub again: u64,
}

/// Removes a try from the in-flight list when it ends, however it ends.
struct Flight<'a>(&'a Mutex<Learned>, u64);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if let Ok(mut learned) = self.0.lock() {
            learned.flights.remove(&self.1);
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
    /// Set by the user: the one form to use, with no stepping down.
    structured: Option<StructuredForm>,
    learned: Arc<Mutex<Learned>>,
    routes: Arc<Mutex<Routes>>,
}

/// The other models of a run and which agents think with each.
#[derive(Default)]
struct Routes {
    /// The names that mean this gateway's own model.
    own: Vec<String>,
    /// Other models' gateways, by name.
    models: BTreeMap<String, Gateway>,
    /// Agents routed to a name; one not among `models` (nor `own`) gets an error per call.
    agents: BTreeMap<AgentId, String>,
    /// Whether [`Gateway::learn_from_the_log`] was called: passed on to models added later.
    from_log: bool,
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
            structured: None,
            learned: Arc::new(Mutex::new(Learned::default())),
            routes: Arc::new(Mutex::new(Routes::default())),
        }
    }

    /// `names` mean this gateway's own model (`default` where it runs the embedded default):
    /// an agent routed to one stays here.
    pub fn call_own(&self, names: impl IntoIterator<Item = String>) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.own.extend(names);
    }

    /// Another model of this run, by the name personas give it. Its own routes are not used.
    pub fn add_model(&self, name: &str, gateway: Gateway) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        if routes.from_log {
            gateway.learn_from_the_log();
        }
        routes.models.insert(name.to_owned(), gateway);
    }

    /// Whether `name` is this gateway's model or one added to it.
    pub fn has_model(&self, name: &str) -> bool {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.own.iter().any(|n| n == name) || routes.models.contains_key(name)
    }

    /// The names of the models added to this gateway, with each one's model as recorded.
    pub fn models(&self) -> Vec<(String, String)> {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.models.iter().map(|(n, g)| (n.clone(), g.llm.model())).collect()
    }

    /// From now on `agent`'s calls go to the model named `name`: this gateway's own, or one
    /// added with [`Gateway::add_model`]. A name this run has no model for fails each of the
    /// agent's calls, saying so (a run checks its names before it starts).
    pub fn route(&self, agent: AgentId, name: &str) {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.agents.insert(agent, name.to_owned());
    }

    /// Where `agent`'s calls go: `Ok(None)` here, `Ok(Some(g))` another model's gateway, or
    /// the name that has no model.
    fn routed(&self, agent: Option<AgentId>) -> Result<Option<Gateway>, String> {
        let Some(agent) = agent else { return Ok(None) };
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(name) = routes.agents.get(&agent) else { return Ok(None) };
        if routes.own.iter().any(|n| n == name) {
            return Ok(None);
        }
        routes.models.get(name).cloned().map(Some).ok_or_else(|| name.clone())
    }

    fn other_models(&self) -> Vec<Gateway> {
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        routes.models.values().cloned().collect()
    }

    /// The same gateway, asking every structured answer in `form` (no negotiation).
    pub fn with_structured(mut self, form: Option<StructuredForm>) -> Gateway {
        self.structured = form;
        self
    }

    /// From now on, what a try finds out about the server (the structured form that works,
    /// ratings refused from probabilities) is learned only when its events are given to
    /// [`Gateway::learn_from`] — by a simulation, as it commits them. Calls under way together
    /// then all ask as the log so far says, whichever of them is answered first: a run writes
    /// the same log whatever its latencies, and a run resumed from its log goes on asking
    /// exactly as the run that went straight on. (Latencies, which only set timeouts, are
    /// still learned at once.)
    pub fn learn_from_the_log(&self) {
        if let Ok(mut learned) = self.learned.lock() {
            learned.from_log = true;
        }
        let others = {
            let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
            routes.from_log = true;
            routes.models.values().cloned().collect::<Vec<_>>()
        };
        for g in others {
            g.learn_from_the_log();
        }
    }

    /// True unless [`Gateway::learn_from_the_log`] was called.
    fn learns_live(&self) -> bool {
        self.learned.lock().is_ok_and(|l| !l.from_log)
    }

    /// The structured form the next call will start in: the one set, else the one learned
    /// so far, else the backend's best.
    pub fn structured_form(&self) -> StructuredForm {
        self.structured
            .or_else(|| self.learned.lock().ok().and_then(|l| l.form))
            .or_else(|| self.llm.structured_forms().first().copied())
            .unwrap_or(StructuredForm::Prompt)
    }

    /// The tries waiting for an answer now, the longest-waiting first.
    pub fn in_flight(&self) -> Vec<InFlight> {
        let mut out: Vec<InFlight> =
            self.other_models().iter().flat_map(Gateway::in_flight).collect();
        let Ok(learned) = self.learned.lock() else { return out };
        out.extend(learned.flights.values().map(|(purpose, agent, attempt, watch)| InFlight {
            purpose: purpose.clone(),
            agent: *agent,
            attempt: *attempt,
            seconds: f64::from(watch.millis()) / 1000.0,
        }));
        out.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        out
    }

    /// The tries sent so far in this run.
    pub fn tries(&self) -> Tries {
        let others =
            self.other_models().iter().map(Gateway::tries).fold(Tries::default(), |a, b| Tries {
                sent: a.sent + b.sent,
                again: a.again + b.again,
            });
        let learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        Tries { sent: others.sent + learned.next_flight, again: others.again + learned.again }
    }

    fn fly(&self, purpose: &str, agent: Option<AgentId>, attempt: u32) -> Flight<'_> {
        let mut learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        let n = learned.next_flight;
        learned.next_flight += 1;
        if attempt > 1 {
            learned.again += 1;
        }
        learned.flights.insert(n, (purpose.to_owned(), agent, attempt, Stopwatch::start()));
        Flight(&self.learned, n)
    }

    /// How long a try may take: the configured timeout, or three times the longest answer
    /// so far if that is longer, doubled for each earlier try of the call that timed out.
    pub fn try_timeout(&self, timeouts_before: u32) -> Duration {
        let longest = self.learned.lock().map_or(0, |l| l.longest_ms);
        let measured = Duration::from_millis(u64::from(longest).saturating_mul(3));
        let base = self.policy.timeout.max(measured);
        base.saturating_mul(1u32 << timeouts_before.min(12)).min(Duration::from_secs(3600))
    }

    fn note_latency(&self, ms: u32) {
        if let Ok(mut learned) = self.learned.lock() {
            learned.longest_ms = learned.longest_ms.max(ms);
        }
    }

    /// The forms a call of this shape may be asked in, in order, starting from `start`.
    fn forms_for(&self, call: &Call) -> Vec<StructuredForm> {
        if call.shape.json_schema().is_none() {
            return vec![StructuredForm::None];
        }
        let offered = self.llm.structured_forms();
        // A rating asked item by item, where the backend reads ratings from probabilities;
        // if that try fails, the same question is generated in the backend's usual form.
        let refused = self.learned.lock().is_ok_and(|l| l.no_probabilities);
        let scored = call.scored.is_some()
            && offered.contains(&StructuredForm::Probabilities)
            && self.structured.is_none()
            && !refused;
        if let Some(form) = self.structured {
            return vec![form];
        }
        let all: Vec<StructuredForm> =
            offered.iter().copied().filter(|f| *f != StructuredForm::Probabilities).collect();
        let start = self.structured_form();
        let from = all.iter().position(|f| *f == start).unwrap_or(0);
        let mut forms = all.get(from..).unwrap_or_default().to_vec();
        if forms.is_empty() {
            forms.push(StructuredForm::Grammar);
        }
        if scored {
            forms.insert(0, StructuredForm::Probabilities);
        }
        forms
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
        match self.routed(call.agent) {
            Ok(None) => self.ask_here(call).await,
            Ok(Some(other)) => other.ask_here(call).await,
            Err(name) => Err(GatewayError::NoModel { purpose: call.purpose.clone(), name }),
        }
    }

    /// [`Gateway::ask`] of this gateway's own model.
    async fn ask_here(&self, call: &Call) -> Result<Answered, GatewayError> {
        let model = self.llm.model();
        // A call may sample warmer than the gateway's default (a line of dialogue).
        let params = match call.temperature {
            Some(t) => Params { temperature: t, ..self.params.clone() },
            None => self.params.clone(),
        };
        let hash = request_hash(call, &params, &model);
        let max_tokens = call.max_tokens.unwrap_or(params.max_tokens);
        let mut out = Answered {
            answer: call.shape.fallback(),
            fallback: true,
            request_hash: hash,
            events: Vec::new(),
            tokens_prompt: 0,
            tokens_completion: 0,
        };
        let forms = self.forms_for(call);
        let mut form_at = 0usize;
        // Made only if a form puts the schema in the prompt, or asks item by item.
        let mut with_schema: Option<Call> = None;
        let mut item_by_item: Option<Call> = None;
        let (mut transient, mut bad, mut timeouts) = (0u32, 0u32, 0u32);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let form = self.llm.recorded_form(hash).unwrap_or(forms[form_at.min(forms.len() - 1)]);
            let sent = if form == StructuredForm::Probabilities {
                match call.by_probabilities() {
                    Some(c) => &*item_by_item.get_or_insert(c),
                    None => call,
                }
            } else if form.in_prompt() {
                &*with_schema.get_or_insert_with(|| call.with_schema_in_prompt())
            } else {
                call
            };
            out.events.push(Body::LlmRequested(
                self.requested(sent, &model, hash, max_tokens, attempt, form),
            ));
            let try_ = Attempt {
                call: sent,
                params: &params,
                max_tokens,
                request_hash: hash,
                attempt,
                structured: form,
            };
            let watch = Stopwatch::start();
            let timeout = self.try_timeout(timeouts);
            let result = {
                let _permit =
                    self.permits.acquire().await.map_err(|_| GatewayError::Exhausted {
                        purpose: call.purpose.clone(),
                        attempts: attempt,
                        message: "the gateway is shutting down".into(),
                        hint: None,
                        events: Vec::new(),
                    })?;
                let _flight = self.fly(&call.purpose, call.agent, attempt);
                match tokio::time::timeout(timeout, self.llm.complete(try_)).await {
                    Ok(result) => result,
                    Err(_) => Err(BackendError::new(
                        FailureKind::Timeout,
                        format!("no answer within {}", seconds(timeout)),
                    )),
                }
            };
            let latency_ms = self.llm.recorded_latency_ms(hash).unwrap_or_else(|| watch.millis());
            let failure = match result {
                Ok(completion) => {
                    self.note_latency(latency_ms);
                    if self.learns_live() {
                        self.learn_form(form);
                    }
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
                        probabilities: completion.probabilities,
                        tokens_cached: completion.tokens_cached,
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
            // A rating the backend could not read from probabilities is generated instead.
            let scoring_failed = form == StructuredForm::Probabilities && !failure.is_transient();
            if scoring_failed && failure.kind != FailureKind::BadAnswer && self.learns_live() {
                self.refuse_probabilities();
            }
            if failure.kind == FailureKind::FormRefused || scoring_failed {
                // Not a failed try: the same call at once in the next form, if there is one.
                // (A recording's forms leave out `Probabilities`: what follows it is the
                // first of them.)
                let after = forms.iter().position(|f| *f == form).map(|i| i + 1);
                let after = after.or((form == StructuredForm::Probabilities).then_some(0));
                match after {
                    Some(next) if next < forms.len() => {
                        form_at = next;
                        if self.learns_live() {
                            self.learn_form(forms[next]);
                        }
                        continue;
                    }
                    _ => {
                        return Err(GatewayError::Refused {
                            purpose: call.purpose.clone(),
                            message: failure.message,
                            hint: Some(format!(
                                "the server refused the structured form `{}`{}; set another \
                                 with --structured (json_schema, json_object_schema, \
                                 json_object, prompt) or `structured` in the config file",
                                form.name(),
                                if self.structured.is_some() { ", which is set" } else { "" }
                            )),
                            events: out.events,
                        })
                    }
                }
            }
            if !failure.is_transient() {
                return Err(GatewayError::Refused {
                    purpose: call.purpose.clone(),
                    message: failure.message,
                    hint: failure.hint,
                    events: out.events,
                });
            }
            transient += 1;
            if failure.kind == FailureKind::Timeout {
                timeouts += 1;
            }
            if transient >= self.policy.max_attempts {
                let hint = failure.hint.clone().or_else(|| slow_hint(&failure, timeouts));
                return Err(GatewayError::Exhausted {
                    purpose: call.purpose.clone(),
                    attempts: attempt,
                    message: failure.message,
                    hint,
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
            probabilities: Vec::new(),
            tokens_cached: 0,
        }));
        Ok(out)
    }

    /// Asks ratings by generating them from now on: the backend refused to read them from
    /// probabilities (a server that gives no `logprobs`). Not for a recording, whose tries
    /// say their own forms.
    fn refuse_probabilities(&self) {
        if self.llm.is_recorded() {
            return;
        }
        if let Ok(mut learned) = self.learned.lock() {
            learned.no_probabilities = true;
        }
    }

    /// Learns from tries already made — a resumed run's branch — what this gateway would
    /// have learned making them: the structured form that answered (down the list only),
    /// the longest answer's latency, whether ratings read from probabilities were refused,
    /// and the length of the embedding vectors (a resumed run embedded by another model is
    /// refused, not compared across two spaces). A run resumed so asks as the run before it
    /// would have gone on asking.
    ///
    /// With other models added, each try is learned by the gateway whose model it was asked
    /// of (as its `LlmRequested` records it): what one server takes says nothing of another.
    pub fn learn_from<'a>(&self, events: impl IntoIterator<Item = &'a Body>) {
        let models = self.other_models();
        if models.is_empty() {
            return self.learn_here(events);
        }
        let own = self.llm.model();
        let mut mine: Vec<&Body> = Vec::new();
        let mut theirs: Vec<Vec<&Body>> = vec![Vec::new(); models.len()];
        // Each try's model, by its request hash: `None` for this gateway's own.
        let mut whose: BTreeMap<[u8; 32], Option<usize>> = BTreeMap::new();
        for body in events {
            let to = match body {
                Body::LlmRequested(r) => {
                    let to = if r.model == own {
                        Some(None)
                    } else {
                        models.iter().position(|g| g.llm.model() == r.model).map(Some)
                    };
                    if let Some(to) = to {
                        whose.insert(r.request_hash, to);
                    }
                    to
                }
                Body::LlmResponded(r) => whose.get(&r.request_hash).copied(),
                Body::LlmFailed(f) => whose.get(&f.request_hash).copied(),
                _ => Some(None),
            };
            match to {
                Some(None) => mine.push(body),
                Some(Some(i)) => theirs[i].push(body),
                None => {}
            }
        }
        self.learn_here(mine);
        for (g, bodies) in models.iter().zip(theirs) {
            g.learn_here(bodies);
        }
    }

    fn learn_here<'a>(&self, events: impl IntoIterator<Item = &'a Body>) {
        let mut asked: BTreeMap<[u8; 32], StructuredForm> = BTreeMap::new();
        for body in events {
            match body {
                Body::LlmRequested(r) => {
                    asked.insert(r.request_hash, r.structured);
                }
                Body::LlmResponded(r) if !r.fallback && r.parsed.is_some() => {
                    self.note_latency(r.latency_ms);
                    if let Some(form) = asked.get(&r.request_hash) {
                        self.learn_form(*form);
                    }
                }
                Body::EmbeddingReturned(e) => {
                    // The run's vectors so far set the length every later answer must have.
                    if let (Some(dims), Ok(mut learned)) =
                        (e.vectors.first().map(Vec::len), self.learned.lock())
                    {
                        learned.dims.get_or_insert(dims);
                    }
                }
                Body::LlmFailed(f) => {
                    let transient = matches!(
                        f.kind,
                        FailureKind::Timeout
                            | FailureKind::RateLimited
                            | FailureKind::ServerError
                            | FailureKind::Connection
                    );
                    let form = asked.get(&f.request_hash).copied();
                    if form == Some(StructuredForm::Probabilities)
                        && !transient
                        && f.kind != FailureKind::BadAnswer
                    {
                        self.refuse_probabilities();
                    }
                }
                _ => {}
            }
        }
    }

    /// Keeps `form` as the one that works, unless the user set one.
    fn learn_form(&self, form: StructuredForm) {
        // Probabilities answer only ratings asked item by item: never the form for others.
        if self.structured.is_some()
            || self.llm.is_recorded()
            || matches!(form, StructuredForm::None | StructuredForm::Probabilities)
        {
            return;
        }
        if let Ok(mut learned) = self.learned.lock() {
            // Only ever down the list: a call that started before a refusal was learned
            // must not undo it.
            let rank = |f: StructuredForm| self.llm.structured_forms().iter().position(|x| *x == f);
            if learned.form.is_none_or(|had| rank(form) > rank(had)) {
                learned.form = Some(form);
            }
        }
    }

    fn requested(
        &self,
        call: &Call,
        model: &str,
        hash: [u8; 32],
        max_tokens: u32,
        attempt: u32,
        structured: StructuredForm,
    ) -> LlmRequested {
        LlmRequested {
            request_hash: hash,
            purpose: call.purpose.clone(),
            agent: call.agent,
            backend: self.llm.name().to_owned(),
            server: self.llm.server(),
            model: model.to_owned(),
            temperature_milli: milli(call.temperature.unwrap_or(self.params.temperature)),
            top_p_milli: milli(self.params.top_p),
            max_tokens,
            seed: self.params.seed,
            stop: self.params.stop.clone(),
            prompt: call.prompt.clone(),
            template: call.template.clone(),
            template_version: call.template_version,
            schema_hash: call.shape.schema_hash(),
            attempt,
            structured,
            items: call.items.clone(),
            avoid: call.avoid.clone(),
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
        let mut timeouts = 0;
        loop {
            attempt += 1;
            let watch = Stopwatch::start();
            let timeout = self.try_timeout(timeouts);
            let result = {
                let _permit = self.permits.acquire().await.map_err(|_| {
                    GatewayError::NotRecorded("the gateway is shutting down".into())
                })?;
                let _flight = self.fly(&call.purpose, call.agent, attempt);
                match tokio::time::timeout(timeout, self.embedder.embed(call, hash)).await {
                    Ok(result) => result,
                    Err(_) => Err(BackendError::new(
                        FailureKind::Timeout,
                        format!("no answer within {}", seconds(timeout)),
                    )),
                }
            };
            let latency_ms =
                self.embedder.recorded_latency_ms(hash).unwrap_or_else(|| watch.millis());
            // Recorded vectors were normalised when recorded: scaling them again would move
            // their last bits, and a re-run must be byte-identical.
            let normalise = !self.embedder.is_recorded();
            let checked = result
                .map_err(|f| (f, None))
                .and_then(|v| checked_vectors(v, call.texts.len(), normalise))
                .and_then(|v| self.same_dims(v));
            let (failure, retry) = match checked {
                Ok(v) => {
                    events.push(Body::EmbeddingReturned(EmbeddingReturned {
                        request_hash: hash,
                        vectors: v.vectors.clone(),
                        tokens: v.tokens,
                        latency_ms,
                        pooled: v.pooled,
                    }));
                    return Ok(Embedded { vectors: v.vectors, events });
                }
                Err((failure, retry)) => {
                    let retry = retry.unwrap_or_else(|| failure.is_transient());
                    (failure, retry)
                }
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
            if !retry {
                return Err(GatewayError::Refused {
                    purpose: call.purpose.clone(),
                    message: failure.message,
                    hint: failure.hint,
                    events,
                });
            }
            if failure.kind == FailureKind::Timeout {
                timeouts += 1;
            }
            if attempt >= self.policy.max_attempts {
                let hint = failure.hint.clone().or_else(|| slow_hint(&failure, timeouts));
                return Err(GatewayError::Exhausted {
                    purpose: call.purpose.clone(),
                    attempts: attempt,
                    message: failure.message,
                    hint,
                    events,
                });
            }
            if !self.embedder.is_recorded() {
                tokio::time::sleep(backoff(&self.policy, hash, attempt, failure.retry_after)).await;
            }
        }
    }

    /// Vectors as long as every earlier answer's in this run: memories embedded in two
    /// spaces cannot be compared.
    fn same_dims(
        &self,
        v: crate::backend::Vectors,
    ) -> Result<crate::backend::Vectors, (BackendError, Option<bool>)> {
        // An answer with no vectors (nothing was asked) says nothing about the model.
        let Some(dims) = v.vectors.first().map(Vec::len) else { return Ok(v) };
        let Ok(mut learned) = self.learned.lock() else { return Ok(v) };
        match learned.dims {
            Some(had) if had != dims => Err((
                BackendError::new(
                    FailureKind::BadAnswer,
                    format!(
                        "the embedding model answered vectors of {dims} numbers, where this \
                         run's earlier ones have {had}"
                    ),
                )
                .with_hint(
                    "memories embedded by two models cannot be compared: keep one embedding \
                     model for a whole run (`--embed-model`, or `--embed local`)",
                ),
                Some(false),
            )),
            _ => {
                learned.dims = Some(dims);
                Ok(v)
            }
        }
    }
}

/// Seconds, as a person reads them.
fn seconds(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Advice when every try timed out.
fn slow_hint(failure: &BackendError, timeouts: u32) -> Option<String> {
    (failure.kind == FailureKind::Timeout && timeouts > 0).then(|| {
        "the server is slower than the timeout allows: raise it (`--timeout SECS`, or \
         `timeout_secs` in the config file), and give a server that answers one call at a time \
         one call at once (`--concurrency 1`)"
            .to_owned()
    })
}

/// One vector per text, all of one length, finite; scaled to unit length if `normalise`.
/// A failure says whether another try may help (`Some(false)`: the server will answer the
/// same again).
fn checked_vectors(
    mut v: crate::backend::Vectors,
    texts: usize,
    normalise: bool,
) -> Result<crate::backend::Vectors, (BackendError, Option<bool>)> {
    let bad =
        |m: String, retry: bool| Err((BackendError::new(FailureKind::BadAnswer, m), Some(retry)));
    if v.vectors.is_empty() && texts > 0 {
        return Err((
            BackendError::new(
                FailureKind::BadAnswer,
                format!("the embedding server answered no vectors for {texts} texts"),
            )
            .with_hint(
                "check that the server serves an embedding model (`--embed-model`), or use the \
                 embedded one (`--embed local`)",
            ),
            Some(false),
        ));
    }
    if v.vectors.len() != texts {
        return bad(format!("{} vectors for {texts} texts", v.vectors.len()), false);
    }
    let dims = v.vectors.first().map_or(0, Vec::len);
    for (i, vector) in v.vectors.iter_mut().enumerate() {
        if dims == 0 {
            return bad(format!("vector {i} is empty"), false);
        }
        if vector.len() != dims {
            return bad(format!("vector {i} has {} dimensions, not {dims}", vector.len()), false);
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return bad(format!("vector {i} holds a value that is not a finite number"), true);
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
