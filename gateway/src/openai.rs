//! The OpenAI-compatible HTTP backend, through async-openai: OpenAI itself, Ollama, vLLM,
//! llama.cpp's server, LM Studio — anything that speaks `/v1/chat/completions`,
//! `/v1/completions` and `/v1/embeddings`.
//!
//! async-openai's own retry layer is replaced by a plain transport (one HTTP request per
//! try) so that the gateway sees, retries and records every attempt itself. The transport
//! turns a non-2xx status into an error that keeps the status and the `Retry-After` header,
//! which the client would otherwise drop.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::Client;
use hamlet_log::event::{FailureKind, Prompt, StructuredForm};
use serde_json::{json, Value};

use crate::answer::Shape;
use crate::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
use crate::rating::{self, TokenChoice};
use crate::request::EmbedCall;

/// Where and how to reach an OpenAI-compatible server. The key is held here only: it is
/// sent in the `Authorization` header and never enters an event or an error message.
#[derive(Clone)]
pub struct Endpoint {
    /// The API's base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// The API key; empty for servers that need none.
    pub api_key: String,
    /// The model to ask.
    pub model: String,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &public_address(&self.base_url))
            .field("api_key", &if self.api_key.is_empty() { "none" } else { "set, hidden" })
            .field("model", &self.model)
            .finish()
    }
}

/// The parts of a URL that may be secret: its user and password, and its query and
/// fragment.
fn secret_parts(url: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (address, rest) = match url.find(['?', '#']) {
        Some(at) => (&url[..at], &url[at + 1..]),
        None => (url, ""),
    };
    parts.push(rest);
    if let Some((_, after)) = address.split_once("://") {
        let authority = after.split('/').next().unwrap_or_default();
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            parts.push(userinfo);
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// `message` with every secret part of `url` it repeats (a key in the query string, a
/// password before the host) replaced by `…`: what may enter an event, a log or a screen.
pub fn scrub(message: &str, url: &str) -> String {
    secret_parts(url).into_iter().fold(message.to_owned(), |m, secret| m.replace(secret, "…"))
}

/// A URL without credentials, query or fragment: what events record as the server.
pub fn public_address(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{}", rest.trim_end_matches('/'))
        }
        None => url.trim_end_matches('/').to_owned(),
    }
}

/// An OpenAI-compatible server.
pub struct OpenAi {
    client: Client<OpenAIConfig>,
    endpoint: Endpoint,
    /// Plain completions (for base models) instead of chat completions for text prompts.
    server: String,
}

impl OpenAi {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint) -> Result<OpenAi, BackendError> {
        let config = OpenAIConfig::new()
            .with_api_base(endpoint.base_url.trim_end_matches('/'))
            .with_api_key(endpoint.api_key.clone());
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| BackendError::new(FailureKind::Other, format!("HTTP client: {e}")))?;
        let client = Client::with_config(config).with_http_service(OneTry { http });
        let server = public_address(&endpoint.base_url);
        Ok(OpenAi { client, endpoint, server })
    }

    /// A failed try as [`classify_failure`] sees it, its message scrubbed of whatever in
    /// the base URL may be secret (a message reaches an `LlmFailed` event).
    fn failure(&self, error: OpenAIError, form: StructuredForm) -> BackendError {
        let mut e = classify_failure(error, form);
        e.message = scrub(&e.message, &self.endpoint.base_url);
        e
    }

    /// The request's common fields, and `response_format` as `form` asks.
    fn body(&self, attempt: &Attempt<'_>, mut body: Value) -> Value {
        let p = attempt.params;
        body["model"] = json!(self.endpoint.model);
        // `max_tokens` is what every compatible server reads; OpenAI still accepts it for
        // the chat models this project targets.
        body["max_tokens"] = json!(attempt.max_tokens);
        body["temperature"] = json!(p.temperature);
        body["top_p"] = json!(p.top_p);
        if let Some(seed) = p.seed {
            body["seed"] = json!(seed);
        }
        if !p.stop.is_empty() {
            body["stop"] = json!(p.stop);
        }
        let shape = &attempt.call.shape;
        if let Some(schema) = shape.json_schema() {
            match attempt.structured {
                StructuredForm::JsonSchema => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": {
                            "name": format!("hamlet_{}", shape.name()),
                            "schema": schema,
                            "strict": true,
                        },
                    });
                }
                StructuredForm::JsonObjectSchema => {
                    body["response_format"] = json!({ "type": "json_object", "schema": schema });
                }
                StructuredForm::JsonObject => {
                    body["response_format"] = json!({ "type": "json_object" });
                }
                StructuredForm::None
                | StructuredForm::Grammar
                | StructuredForm::Prompt
                | StructuredForm::Probabilities => {}
            }
        }
        body
    }

    async fn chat(
        &self,
        attempt: Attempt<'_>,
        messages: &[hamlet_log::event::ChatMessage],
    ) -> Result<Completion, BackendError> {
        let response = self.ask_chat(&attempt, messages, |_| ()).await?;
        let choice = first_choice(&response)?;
        let text = match &choice["message"]["content"] {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        Ok(completion(&response, choice, text))
    }

    /// Sends `messages` as a chat completion, `more` adding to the request, and returns the
    /// answer as the server gave it.
    async fn ask_chat(
        &self,
        attempt: &Attempt<'_>,
        messages: &[hamlet_log::event::ChatMessage],
        more: impl FnOnce(&mut Value),
    ) -> Result<Value, BackendError> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                let role = match m.role.as_str() {
                    "system" | "assistant" => m.role.as_str(),
                    _ => "user",
                };
                json!({ "role": role, "content": m.content })
            })
            .collect();
        let mut request = self.body(attempt, json!({ "messages": messages }));
        more(&mut request);
        self.client
            .chat()
            .create_byot(request)
            .await
            .map_err(|e| self.failure(e, attempt.structured))
    }

    async fn text(&self, attempt: Attempt<'_>, prompt: &str) -> Result<Completion, BackendError> {
        let response = self.ask_text(&attempt, prompt, |_| ()).await?;
        let choice = first_choice(&response)?;
        let text = choice["text"].as_str().unwrap_or_default().to_owned();
        Ok(completion(&response, choice, text))
    }

    /// Sends `prompt` as a plain completion, `more` adding to the request.
    async fn ask_text(
        &self,
        attempt: &Attempt<'_>,
        prompt: &str,
        more: impl FnOnce(&mut Value),
    ) -> Result<Value, BackendError> {
        let mut request = self.body(attempt, json!({ "prompt": prompt }));
        more(&mut request);
        self.client
            .completions()
            .create_byot(request)
            .await
            .map_err(|e| self.failure(e, attempt.structured))
    }

    /// A rating asked item by item (`StructuredForm::Probabilities`): each item's prompt
    /// is sent on its own, one after another, with `logprobs` asked, and its rating is the
    /// expected value of the probabilities the server gives the answers 1 to 10 where its
    /// answer's number begins ([`rating::from_logprobs`]). A server that gives no
    /// `logprobs` fails the try as refused; the gateway then generates the rating, and
    /// every rating after it.
    async fn score(&self, attempt: &Attempt<'_>) -> Result<Completion, BackendError> {
        let call = attempt.call;
        let many = match call.shape {
            Shape::Importance if call.items.len() == 1 => false,
            Shape::Ratings { count } if usize::from(count) == call.items.len() => true,
            _ => {
                return Err(BackendError::new(
                    FailureKind::Refused,
                    format!(
                        "only ratings are read from probabilities, one per item: a `{}` answer \
                         with {} items",
                        call.shape.name(),
                        call.items.len()
                    ),
                ))
            }
        };
        let mut out = Completion {
            text: String::new(),
            tokens_prompt: 0,
            tokens_completion: 0,
            finish_reason: "probabilities".into(),
            response_model: String::new(),
            response_id: String::new(),
            probabilities: Vec::with_capacity(call.items.len()),
            tokens_cached: 0,
        };
        let mut ratings = Vec::with_capacity(call.items.len());
        for i in 0..call.items.len() {
            let Some(prompt) = call.item_prompt(i) else { break };
            // Enough tokens for `{"rating": 10}` and no more.
            let response = match &prompt {
                Prompt::Chat(messages) => {
                    self.ask_chat(attempt, messages, |r| {
                        r["max_tokens"] = json!(RATING_TOKENS);
                        r["logprobs"] = json!(true);
                        r["top_logprobs"] = json!(20);
                    })
                    .await?
                }
                Prompt::Text(text) => {
                    self.ask_text(attempt, text, |r| {
                        r["max_tokens"] = json!(RATING_TOKENS);
                        // The completions API lists at most five.
                        r["logprobs"] = json!(5);
                    })
                    .await?
                }
            };
            let choice = first_choice(&response)?;
            let done = completion(&response, choice, String::new());
            let Some(tokens) = token_choices(choice) else {
                return Err(BackendError::new(
                    FailureKind::Refused,
                    "the server gave no `logprobs` with its answer: ratings are generated instead",
                ));
            };
            let Some(p) = rating::from_logprobs(&tokens) else {
                return Err(BackendError::new(
                    FailureKind::BadAnswer,
                    format!(
                        "no rating 1 to 10 among the answer's likely tokens: {}",
                        cut(&tokens.iter().map(|t| t.token.as_str()).collect::<String>(), 80)
                    ),
                ));
            };
            let (rating, shares) = rating::expected_rating(&p);
            ratings.push(rating);
            out.probabilities.push(shares);
            out.tokens_prompt = out.tokens_prompt.saturating_add(done.tokens_prompt);
            out.tokens_completion = out.tokens_completion.saturating_add(done.tokens_completion);
            out.tokens_cached = out.tokens_cached.saturating_add(done.tokens_cached);
            if out.response_id.is_empty() {
                out.response_model = done.response_model;
                out.response_id = done.response_id;
            }
        }
        out.text = if many {
            let listed: Vec<String> = ratings.iter().map(u8::to_string).collect();
            format!("{{\"ratings\": [{}]}}", listed.join(", "))
        } else {
            format!("{{\"rating\": {}}}", ratings.first().copied().unwrap_or(5))
        };
        Ok(out)
    }
}

/// Most tokens a rating asked for `logprobs` may take: `{"rating": 10}` and a little more.
const RATING_TOKENS: u32 = 12;

/// The generated tokens of a choice with their listed alternatives: the chat form
/// (`logprobs.content[].top_logprobs[]`) or the completions form (`logprobs.tokens`,
/// `token_logprobs`, `top_logprobs[]` as maps). `None` when there are none.
fn token_choices(choice: &Value) -> Option<Vec<TokenChoice>> {
    let logprobs = choice.get("logprobs")?;
    if let Some(content) = logprobs.get("content").and_then(Value::as_array) {
        let tokens: Vec<TokenChoice> = content
            .iter()
            .filter_map(|t| {
                let top = t
                    .get("top_logprobs")
                    .and_then(Value::as_array)
                    .map(|top| {
                        top.iter()
                            .filter_map(|a| {
                                Some((
                                    a.get("token")?.as_str()?.to_owned(),
                                    a.get("logprob")?.as_f64()?,
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Some(TokenChoice {
                    token: t.get("token")?.as_str()?.to_owned(),
                    logprob: t.get("logprob")?.as_f64()?,
                    top,
                })
            })
            .collect();
        return (!tokens.is_empty()).then_some(tokens);
    }
    let tokens = logprobs.get("tokens")?.as_array()?;
    let chosen = logprobs.get("token_logprobs").and_then(Value::as_array);
    let tops = logprobs.get("top_logprobs").and_then(Value::as_array);
    let out: Vec<TokenChoice> = tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let top = tops
                .and_then(|tops| tops.get(i))
                .and_then(Value::as_object)
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
                .unwrap_or_default();
            Some(TokenChoice {
                token: t.as_str()?.to_owned(),
                logprob: chosen.and_then(|c| c.get(i)).and_then(Value::as_f64).unwrap_or(0.0),
                top,
            })
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// The answer's first choice, or why there is none.
fn first_choice(response: &Value) -> Result<&Value, BackendError> {
    match response.get("choices").and_then(Value::as_array).and_then(|c| c.first()) {
        Some(choice) => Ok(choice),
        None => Err(BackendError::new(
            FailureKind::ServerError,
            format!("the answer has no choices: {}", cut(&response.to_string(), 200)),
        )),
    }
}

/// A completion from an answer's fields, tolerating what servers leave out.
fn completion(response: &Value, choice: &Value, text: String) -> Completion {
    let count = |key: &str| {
        response["usage"][key].as_u64().map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    Completion {
        text,
        tokens_prompt: count("prompt_tokens"),
        tokens_completion: count("completion_tokens"),
        finish_reason: choice["finish_reason"].as_str().unwrap_or("stop").to_owned(),
        response_model: response["model"].as_str().unwrap_or_default().to_owned(),
        response_id: response["id"].as_str().unwrap_or_default().to_owned(),
        probabilities: Vec::new(),
        // OpenAI's usage names the prompt tokens served from its cache; llama.cpp's server
        // says the same in `timings.cache_n`.
        tokens_cached: response["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .or_else(|| response["timings"]["cache_n"].as_u64())
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

impl LlmBackend for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    fn server(&self) -> String {
        self.server.clone()
    }

    fn model(&self) -> String {
        self.endpoint.model.clone()
    }

    /// A server's forms, and ratings read from `logprobs` (last: only ratings asked item by
    /// item are asked so, until the server shows it gives none).
    fn structured_forms(&self) -> &[StructuredForm] {
        &[
            StructuredForm::JsonSchema,
            StructuredForm::JsonObjectSchema,
            StructuredForm::JsonObject,
            StructuredForm::Prompt,
            StructuredForm::Probabilities,
        ]
    }

    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        Box::pin(async move {
            if attempt.structured == StructuredForm::Probabilities {
                return self.score(&attempt).await;
            }
            match &attempt.call.prompt {
                Prompt::Chat(messages) => self.chat(attempt.clone(), messages.as_slice()).await,
                Prompt::Text(text) => self.text(attempt.clone(), text.as_str()).await,
            }
        })
    }
}

/// Embeddings from an OpenAI-compatible server.
pub struct OpenAiEmbed(OpenAi);

impl OpenAiEmbed {
    /// A client for `endpoint`, whose model is an embedding model.
    pub fn new(endpoint: Endpoint) -> Result<OpenAiEmbed, BackendError> {
        OpenAi::new(endpoint).map(OpenAiEmbed)
    }
}

impl EmbedBackend for OpenAiEmbed {
    fn name(&self) -> &str {
        "openai"
    }

    fn server(&self) -> String {
        self.0.server.clone()
    }

    fn model(&self) -> String {
        self.0.endpoint.model.clone()
    }

    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        _request_hash: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>> {
        Box::pin(async move {
            let request = json!({
                "model": self.0.endpoint.model,
                "input": call.texts,
                "encoding_format": "float",
            });
            let response: Value = self
                .0
                .client
                .embeddings()
                .create_byot(request)
                .await
                .map_err(|e| self.0.failure(e, StructuredForm::None))?;
            vectors(&response)
        })
    }
}

/// The vectors of an `/embeddings` answer, in input order. A server that answers one
/// vector per token (a list of lists) gets their mean, and the answer says it was pooled.
pub fn vectors(response: &Value) -> Result<Vectors, BackendError> {
    let bad = |m: String| BackendError::new(FailureKind::BadAnswer, m);
    let Some(data) = response.get("data").and_then(Value::as_array) else {
        return Err(bad(format!(
            "the embedding answer has no `data` list: {}",
            cut(&response.to_string(), 200)
        )));
    };
    let mut indexed = Vec::with_capacity(data.len());
    let mut pooled = false;
    for (i, item) in data.iter().enumerate() {
        let index = item.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
        let numbers = |v: &Value| -> Option<Vec<f32>> {
            v.as_array()?.iter().map(|x| x.as_f64().map(|x| x as f32)).collect()
        };
        let vector = match item.get("embedding") {
            Some(Value::Array(rows)) if rows.first().is_some_and(Value::is_array) => {
                let rows: Option<Vec<Vec<f32>>> = rows.iter().map(numbers).collect();
                let rows = rows.ok_or_else(|| bad(format!("vector {i} holds a non-number")))?;
                pooled = true;
                mean(&rows)
                    .ok_or_else(|| bad(format!("vector {i}'s token vectors differ in length")))?
            }
            Some(v @ Value::Array(_)) => {
                numbers(v).ok_or_else(|| bad(format!("vector {i} holds a non-number")))?
            }
            Some(Value::String(_)) => {
                return Err(bad("the server answered base64 though floats were asked".into()))
            }
            _ => return Err(bad(format!("item {i} of the embedding answer has no `embedding`"))),
        };
        indexed.push((index, vector));
    }
    indexed.sort_by_key(|(index, _)| *index);
    let tokens = response["usage"]["prompt_tokens"]
        .as_u64()
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    Ok(Vectors { vectors: indexed.into_iter().map(|(_, v)| v).collect(), tokens, pooled })
}

/// The mean of equally long vectors; `None` if they differ in length or there are none.
fn mean(rows: &[Vec<f32>]) -> Option<Vec<f32>> {
    let dims = rows.first()?.len();
    let mut sum = vec![0f64; dims];
    for row in rows {
        if row.len() != dims {
            return None;
        }
        for (s, x) in sum.iter_mut().zip(row) {
            *s += f64::from(*x);
        }
    }
    Some(sum.into_iter().map(|s| (s / rows.len() as f64) as f32).collect())
}

/// A non-2xx answer, with what the client would otherwise lose.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {body}")]
struct HttpStatus {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

/// The transport: exactly one HTTP request per call, statuses kept.
#[derive(Clone)]
struct OneTry {
    http: reqwest::Client,
}

impl tower::Service<HttpRequestFactory> for OneTry {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Duration::from_secs_f64(s.min(3600.0)));
            let body = response.text().await.unwrap_or_default();
            let body: String = body.chars().take(300).collect();
            Err(OpenAIError::Boxed(Box::new(HttpStatus {
                status: status.as_u16(),
                retry_after,
                body,
            })))
        })
    }
}

/// How a failed try is classified: what kind (and so whether the gateway tries again,
/// steps down the structured form, or stops), and a hint when a person must change
/// something.
fn classify_failure(error: OpenAIError, form: StructuredForm) -> BackendError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpStatus>() {
            Ok(s) => {
                let (kind, hint) = classify(s.status, &s.body, form);
                let mut e = BackendError::new(kind, s.to_string());
                e.retry_after = s.retry_after;
                e.hint = hint;
                e
            }
            Err(other) => BackendError::new(FailureKind::Other, other.to_string()),
        },
        OpenAIError::Reqwest(e) if e.is_timeout() => {
            BackendError::new(FailureKind::Timeout, e.to_string())
        }
        OpenAIError::Reqwest(e) if e.is_decode() || e.is_body() => {
            BackendError::new(FailureKind::Connection, format!("the answer broke off: {e}"))
        }
        OpenAIError::Reqwest(e) if e.is_connect() => {
            BackendError::new(FailureKind::Connection, format!("cannot connect: {e}"))
                .with_hint("is the server running, and is --base-url its address (ending in /v1)?")
        }
        OpenAIError::Reqwest(e) => BackendError::new(FailureKind::Connection, e.to_string()),
        OpenAIError::ApiError(api) => {
            let (kind, hint) = classify(api.status_code.as_u16(), &api.to_string(), form);
            let mut e = BackendError::new(kind, api.to_string());
            e.hint = hint;
            e
        }
        OpenAIError::JSONDeserialize(e, content) => BackendError::new(
            FailureKind::ServerError,
            format!("the server's answer is not the expected JSON ({e}): {}", cut(&content, 200)),
        ),
        OpenAIError::InvalidArgument(m) => BackendError::new(FailureKind::Refused, m),
        other => BackendError::new(FailureKind::Other, other.to_string()),
    }
}

/// A failed status, by what the server said. Servers word these freely, so the words are
/// matched loosely, and only to decide what a retry could change:
/// - a refusal that names the structured-output form sent (any 4xx or 5xx naming
///   `response_format`, `json_schema` or `json_object`; or a bare 400/422 when a form was
///   sent and nothing else is blamed) is [`FailureKind::FormRefused`];
/// - a failure the server will repeat (no embeddings loaded, an unknown model, a request it
///   cannot parse, 501) is [`FailureKind::Refused`], with a hint;
/// - 429, 408 and other 5xx are transient.
pub fn classify(status: u16, body: &str, form: StructuredForm) -> (FailureKind, Option<String>) {
    let b = body.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| b.contains(w));
    let format_sent = matches!(
        form,
        StructuredForm::JsonSchema | StructuredForm::JsonObjectSchema | StructuredForm::JsonObject
    );
    let names_format =
        has(&["response_format", "response format", "json_schema", "json_object", "json schema"]);
    let embeddings_off = b.contains("embedding")
        && has(&[
            "not support",
            "not enabled",
            "embedding=true",
            "--embedding",
            "not available",
            "unavailable",
            "pooling",
            "must be created",
            "not loaded",
        ]);
    // llama.cpp's server over a model whose pooling is `none` (most chat models).
    let no_pooling = b.contains("pooling") && has(&["not oai compatible", "pooling type"]);
    let unknown_model = b.contains("model")
        && has(&[
            "not found",
            "does not exist",
            "unknown model",
            "no such",
            "not loaded",
            "invalid model",
        ]);
    let cannot_parse = has(&[
        "cannot parse",
        "could not parse",
        "failed to parse",
        "unable to parse",
        "unprocessable",
        "validation error",
        "invalid json",
        "malformed",
        "json decode",
    ]);
    let other_blamed = unknown_model
        || embeddings_off
        || no_pooling
        || (cannot_parse && !names_format)
        || has(&[
            "context",
            "too long",
            "too many tokens",
            "api key",
            "unauthori",
            "token limit",
            "max_tokens",
        ]);
    match status {
        429 => (FailureKind::RateLimited, None),
        408 => (FailureKind::Timeout, None),
        401 | 403 => (
            FailureKind::Refused,
            Some(
                "the server refused the key: set OPENAI_API_KEY (or `api_key` in the config file)"
                    .into(),
            ),
        ),
        400..=599 if format_sent && names_format && !other_blamed => {
            (FailureKind::FormRefused, None)
        }
        400 | 422 if format_sent && !other_blamed => (FailureKind::FormRefused, None),
        _ if no_pooling => (
            FailureKind::Refused,
            Some(
                "the server embeds one vector per token and will not pool them: start it with \
                 a pooling type (llama.cpp's llama-server: `--pooling mean`), or use the \
                 embedded embeddings (`--embed local`, the default)"
                    .into(),
            ),
        ),
        _ if embeddings_off => (
            FailureKind::Refused,
            Some(
                "this server serves no embeddings: use the embedded ones (`--embed local`, the \
                 default), or start the server with embeddings on (llama.cpp's llama-server: \
                 `--embeddings`; llama-cpp-python: `--embedding true`)"
                    .into(),
            ),
        ),
        _ if unknown_model => (
            FailureKind::Refused,
            Some(
                "the server does not know that model: check --model (or --embed-model) against \
                 the names the server lists at BASE_URL/models"
                    .into(),
            ),
        ),
        _ if cannot_parse => (
            FailureKind::Refused,
            Some(
                "the server could not read the request: if it is about the answer's structure, \
                 try `--structured prompt`; otherwise check the server's version"
                    .into(),
            ),
        ),
        404 => (
            FailureKind::Refused,
            Some(
                "the server has no such endpoint: check --base-url (it usually ends in /v1)".into(),
            ),
        ),
        501 => (FailureKind::Refused, Some("the server does not implement this endpoint".into())),
        500..=599 => (FailureKind::ServerError, None),
        _ => (FailureKind::Refused, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_lose_their_credentials() {
        assert_eq!(
            public_address("https://user:sk-secret@api.example.com/v1/?key=sk-x#frag"),
            "https://api.example.com/v1"
        );
        assert_eq!(public_address("http://127.0.0.1:11434/v1"), "http://127.0.0.1:11434/v1");
        let e = Endpoint {
            base_url: "http://x/v1".into(),
            api_key: "sk-secret".into(),
            model: "m".into(),
        };
        assert!(!format!("{e:?}").contains("sk-secret"));
    }

    #[test]
    fn messages_lose_the_secret_parts_of_the_address() {
        let url = "https://user:sk-pass@api.example.com/v1?key=sk-query#frag";
        let said = format!("error sending request for url ({url}/chat/completions)");
        let scrubbed = scrub(&said, url);
        assert!(!scrubbed.contains("sk-pass") && !scrubbed.contains("sk-query"), "{scrubbed}");
        assert!(scrubbed.contains("api.example.com/v1"), "{scrubbed}");
        assert_eq!(scrub("nothing secret", "http://127.0.0.1:8080/v1"), "nothing secret");
    }
}
