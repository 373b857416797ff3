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
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, CompletionFinishReason, CreateChatCompletionRequest,
    FinishReason, Prompt as ApiPrompt, ResponseFormat, ResponseFormatJsonSchema, StopConfiguration,
};
use async_openai::types::completions::CreateCompletionRequest;
use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use async_openai::Client;
use hamlet_log::event::{FailureKind, Prompt};

use crate::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
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

    async fn chat(
        &self,
        attempt: Attempt<'_>,
        messages: &[hamlet_log::event::ChatMessage],
    ) -> Result<Completion, BackendError> {
        let messages = messages
            .iter()
            .map(|m| match m.role.as_str() {
                "system" => {
                    ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage::from(
                        ChatCompletionRequestSystemMessageContent::from(m.content.clone()),
                    ))
                }
                "assistant" => ChatCompletionRequestMessage::Assistant(
                    ChatCompletionRequestAssistantMessage::from(
                        ChatCompletionRequestAssistantMessageContent::from(m.content.clone()),
                    ),
                ),
                _ => ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage::from(
                    ChatCompletionRequestUserMessageContent::from(m.content.clone()),
                )),
            })
            .collect();
        let shape = &attempt.call.shape;
        let response_format = shape.json_schema().map(|schema| ResponseFormat::JsonSchema {
            json_schema: ResponseFormatJsonSchema {
                description: None,
                name: format!("hamlet_{}", shape.name()),
                schema,
                strict: Some(true),
            },
        });
        // `max_tokens` is what every compatible server reads; OpenAI still accepts it for
        // the chat models this project targets.
        #[allow(deprecated)]
        let request = CreateChatCompletionRequest {
            messages,
            model: self.endpoint.model.clone(),
            max_tokens: Some(attempt.max_tokens),
            temperature: Some(attempt.params.temperature),
            top_p: Some(attempt.params.top_p),
            seed: attempt.params.seed.map(|s| s as i64),
            stop: stop(&attempt.params.stop),
            response_format,
            ..Default::default()
        };
        let response = self.client.chat().create(request).await.map_err(failure)?;
        let (usage_p, usage_c) =
            response.usage.as_ref().map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        let Some(choice) = response.choices.into_iter().next() else {
            return Err(BackendError::new(FailureKind::ServerError, "the answer has no choices"));
        };
        Ok(Completion {
            text: choice.message.content.unwrap_or_default(),
            tokens_prompt: usage_p,
            tokens_completion: usage_c,
            finish_reason: match choice.finish_reason {
                Some(FinishReason::Stop) | None => "stop",
                Some(FinishReason::Length) => "length",
                Some(FinishReason::ContentFilter) => "content_filter",
                Some(FinishReason::ToolCalls) => "tool_calls",
                Some(FinishReason::FunctionCall) => "function_call",
            }
            .to_owned(),
            response_model: response.model,
            response_id: response.id,
        })
    }

    async fn text(&self, attempt: Attempt<'_>, prompt: &str) -> Result<Completion, BackendError> {
        let request = CreateCompletionRequest {
            model: self.endpoint.model.clone(),
            prompt: ApiPrompt::String(prompt.to_owned()),
            max_tokens: Some(attempt.max_tokens),
            temperature: Some(attempt.params.temperature),
            top_p: Some(attempt.params.top_p),
            seed: attempt.params.seed.map(|s| s as i64),
            stop: stop(&attempt.params.stop),
            ..Default::default()
        };
        let response = self.client.completions().create(request).await.map_err(failure)?;
        let (usage_p, usage_c) =
            response.usage.as_ref().map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        let Some(choice) = response.choices.into_iter().next() else {
            return Err(BackendError::new(FailureKind::ServerError, "the answer has no choices"));
        };
        Ok(Completion {
            text: choice.text,
            tokens_prompt: usage_p,
            tokens_completion: usage_c,
            finish_reason: match choice.finish_reason {
                Some(CompletionFinishReason::Stop) | None => "stop",
                Some(CompletionFinishReason::Length) => "length",
                Some(CompletionFinishReason::ContentFilter) => "content_filter",
            }
            .to_owned(),
            response_model: response.model,
            response_id: response.id,
        })
    }
}

fn stop(stop: &[String]) -> Option<StopConfiguration> {
    (!stop.is_empty()).then(|| StopConfiguration::StringArray(stop.to_vec()))
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

    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        Box::pin(async move {
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
            let request = CreateEmbeddingRequest {
                model: self.0.endpoint.model.clone(),
                input: EmbeddingInput::StringArray(call.texts.clone()),
                ..Default::default()
            };
            let response = self.0.client.embeddings().create(request).await.map_err(failure)?;
            let mut data = response.data;
            data.sort_by_key(|e| e.index);
            Ok(Vectors {
                vectors: data.into_iter().map(|e| e.embedding).collect(),
                tokens: response.usage.prompt_tokens,
            })
        })
    }
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

/// How a failed try is classified.
fn failure(error: OpenAIError) -> BackendError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpStatus>() {
            Ok(s) => {
                let kind = match s.status {
                    429 => FailureKind::RateLimited,
                    408 => FailureKind::Timeout,
                    500..=599 => FailureKind::ServerError,
                    _ => FailureKind::Refused,
                };
                BackendError { kind, message: s.to_string(), retry_after: s.retry_after }
            }
            Err(other) => BackendError::new(FailureKind::Other, other.to_string()),
        },
        OpenAIError::Reqwest(e) if e.is_timeout() => {
            BackendError::new(FailureKind::Timeout, e.to_string())
        }
        OpenAIError::Reqwest(e) if e.is_decode() || e.is_body() => {
            BackendError::new(FailureKind::Connection, format!("the answer broke off: {e}"))
        }
        OpenAIError::Reqwest(e) => BackendError::new(FailureKind::Connection, e.to_string()),
        OpenAIError::ApiError(api) => {
            let kind = match api.status_code.as_u16() {
                429 => FailureKind::RateLimited,
                500..=599 => FailureKind::ServerError,
                _ => FailureKind::Refused,
            };
            BackendError::new(kind, api.to_string())
        }
        OpenAIError::JSONDeserialize(e, content) => BackendError::new(
            FailureKind::ServerError,
            format!(
                "the server's answer is not the expected JSON ({e}): {}",
                content.chars().take(200).collect::<String>()
            ),
        ),
        OpenAIError::InvalidArgument(m) => BackendError::new(FailureKind::Refused, m),
        other => BackendError::new(FailureKind::Other, other.to_string()),
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
}
