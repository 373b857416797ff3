//! Meeting servers where they are, over real HTTP on loopback: the structured-output form
//! negotiated (and recorded, and replayed), failures a retry cannot fix stopped after one
//! try with a hint, per-token embeddings pooled, wrong or empty vectors refused, slow
//! servers given longer, and the calls in flight visible.
//!
//! The refusals the loopback server plays are worded as the servers named in
//! `gateway/README.md`'s compatibility table word them.

use std::sync::Arc;
use std::time::Duration;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Call, EmbedCall, Gateway, GatewayError, Params, RetryPolicy};
use hamlet_log::event::{FailureKind, StructuredForm};
use hamlet_log::Body;

use crate::loopback::{LoopbackServer, Received, Reply};

fn gateway(server: &LoopbackServer, policy: RetryPolicy) -> Gateway {
    crate::loopback::gateway(server, "", policy)
}

/// Backoff so long that a test waiting it out would time out: a refusal of the form, and a
/// failure that is not transient, must never wait.
fn no_waiting() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 6,
        max_bad_answers: 3,
        base_delay: Duration::from_secs(120),
        max_delay: Duration::from_secs(120),
        timeout: Duration::from_secs(20),
    }
}

/// Runs `f` with a bound far below the backoff of [`no_waiting`].
async fn promptly<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the call waited out a backoff it should never have waited")
}

fn importance() -> Call {
    Call::chat(
        "importance",
        "Rate how poignant a memory is, from 1 (mundane) to 10 (life-changing).",
        "Memory: Mei Lin was accepted to the college she dreamed of.",
        Shape::Importance,
    )
}

/// (form, outcome) of every try, from the events.
fn tries(events: &[Body]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut form = String::new();
    for e in events {
        match e {
            Body::LlmRequested(r) => form = r.structured.name().to_owned(),
            Body::LlmResponded(r) if r.parsed.is_some() => {
                out.push((form.clone(), "answer".into()))
            }
            Body::LlmFailed(f) if f.kind != FailureKind::BadAnswer => {
                out.push((form.clone(), format!("{:?}", f.kind)))
            }
            _ => {}
        }
    }
    out
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

fn format_type(r: &Received) -> Option<String> {
    r.body.get("response_format").map(|f| f["type"].as_str().unwrap_or("?").to_owned())
}

/// The last message's content as sent.
fn last_message(r: &Received) -> String {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

/// A server that constrains answers with `json_object` and a schema, and refuses
/// `json_schema` with a 500 naming the form (the failure this issue began with).
fn json_object_schema_only(r: &Received) -> Reply {
    match (format_type(r).as_deref(), r.body["response_format"].get("schema")) {
        (Some("json_schema"), _) => Reply::Status(
            500,
            None,
            r#"{"error":{"message":"1 validation error: response_format.type: Input should be 'text' or 'json_object'","type":"internal_server_error"}}"#.into(),
        ),
        (Some("json_object"), Some(_)) => Reply::Chat(r#"{"rating": 9}"#.into()),
        _ => Reply::Chat("I would say nine.".into()),
    }
}

#[tokio::test]
async fn a_server_refusing_json_schema_is_asked_in_the_next_form_at_once_and_it_is_kept() {
    let server = LoopbackServer::start(vec![], Reply::Rules(json_object_schema_only)).await;
    let gw = gateway(&server, no_waiting());
    let answered = promptly(gw.ask(&importance())).await.unwrap();
    assert_eq!(answered.answer, Answer::Importance(9));
    assert_eq!(
        tries(&answered.events),
        pairs(&[("json_schema", "FormRefused"), ("json_object_schema", "answer")])
    );
    let sent = server.requests();
    assert_eq!(format_type(&sent[0]).as_deref(), Some("json_schema"));
    assert_eq!(format_type(&sent[1]).as_deref(), Some("json_object"));
    assert_eq!(sent[1].body["response_format"]["schema"]["required"][0], "rating");
    assert_eq!(gw.structured_form(), StructuredForm::JsonObjectSchema, "learned for the run");

    // The next call starts in the form that works: one request, no refusal.
    let second =
        promptly(gw.ask(&importance().for_agent(hamlet_log::event::AgentId(2)))).await.unwrap();
    assert_eq!(tries(&second.events), pairs(&[("json_object_schema", "answer")]));
    assert_eq!(server.requests().len(), 3);
}

/// Takes `json_object` but refuses a `schema` beside it; says nothing of the form otherwise.
fn json_object_only(r: &Received) -> Reply {
    match format_type(r).as_deref() {
        Some("json_schema") => Reply::Status(
            400,
            None,
            r#"{"error":{"message":"'json_schema' is not one of ['json_object', 'text'] - 'response_format.type'"}}"#.into(),
        ),
        Some("json_object") if r.body["response_format"].get("schema").is_some() => {
            Reply::Status(400, None, r#"{"error":{"message":"Bad Request"}}"#.into())
        }
        Some("json_object") if last_message(r).contains(r#""rating""#) => {
            Reply::Chat(r#"{"rating": 4}"#.into())
        }
        _ => Reply::Chat(r#"{"something": "else"}"#.into()),
    }
}

#[tokio::test]
async fn json_object_without_a_schema_gets_the_schema_and_an_example_in_the_prompt() {
    let server = LoopbackServer::start(vec![], Reply::Rules(json_object_only)).await;
    let gw = gateway(&server, no_waiting());
    let answered = promptly(gw.ask(&importance())).await.unwrap();
    assert_eq!(answered.answer, Answer::Importance(4));
    assert_eq!(
        tries(&answered.events),
        pairs(&[
            ("json_schema", "FormRefused"),
            ("json_object_schema", "FormRefused"),
            ("json_object", "answer")
        ])
    );
    let sent = &server.requests()[2];
    assert_eq!(sent.body["response_format"], serde_json::json!({ "type": "json_object" }));
    let asked = last_message(sent);
    assert!(asked.starts_with("Memory: Mei Lin"), "the prompt is kept, and added to: {asked}");
    assert!(asked.contains(r#""maximum":10"#), "the schema is in the prompt: {asked}");
    assert!(asked.contains(r#"{"rating":1}"#), "and an example answer: {asked}");
    // The events record the prompt as it was sent; the request hash stays the call's.
    let Body::LlmRequested(r) = &answered.events[4] else { panic!("{:?}", answered.events[4]) };
    assert_eq!(r.structured, StructuredForm::JsonObject);
    assert!(format!("{:?}", r.prompt).contains("JSON Schema"));
    assert_eq!(r.request_hash, answered.request_hash);
}

/// Refuses every `response_format` (a 422 naming it).
fn no_response_format(r: &Received) -> Reply {
    match format_type(r) {
        Some(_) => Reply::Status(
            422,
            None,
            r#"{"detail":[{"loc":["body","response_format"],"msg":"extra fields not permitted"}]}"#
                .into(),
        ),
        None if last_message(r).contains("JSON Schema") => {
            Reply::Chat(r#"{"answer": "yes"}"#.into())
        }
        None => Reply::Chat("Yes.".into()),
    }
}

#[tokio::test]
async fn a_server_taking_no_response_format_is_asked_with_the_schema_in_the_prompt_alone() {
    let server = LoopbackServer::start(vec![], Reply::Rules(no_response_format)).await;
    let gw = gateway(&server, no_waiting());
    let call = Call::chat("react", "Answer yes or no.", "Should Mei greet Tamsin?", Shape::YesNo);
    let answered = promptly(gw.ask(&call)).await.unwrap();
    assert_eq!(answered.answer, Answer::YesNo(true));
    let forms: Vec<String> = tries(&answered.events).into_iter().map(|(f, _)| f).collect();
    assert_eq!(forms, ["json_schema", "json_object_schema", "json_object", "prompt"]);
    let last = server.requests().pop().unwrap();
    assert!(last.body.get("response_format").is_none(), "{}", last.body);
    // Free text is never constrained, whatever was learned.
    let text = Call::chat("summary", "Say something.", "Describe Mei in one line.", Shape::Text);
    let said = promptly(gw.ask(&text)).await.unwrap();
    assert_eq!(tries(&said.events), pairs(&[("none", "answer")]));
}

#[tokio::test]
async fn a_form_set_by_the_user_is_the_only_one_tried_and_its_refusal_says_what_to_change() {
    let server = LoopbackServer::start(vec![], Reply::Rules(json_object_schema_only)).await;
    let gw = gateway(&server, no_waiting()).with_structured(Some(StructuredForm::JsonSchema));
    let error = promptly(gw.ask(&importance())).await.unwrap_err();
    assert!(matches!(error, GatewayError::Refused { .. }), "{error}");
    assert_eq!(tries(error.events()), pairs(&[("json_schema", "FormRefused")]));
    let hint = error.hint().unwrap_or_default();
    assert!(hint.contains("--structured") && hint.contains("json_object"), "{hint}");

    let set =
        gateway(&server, no_waiting()).with_structured(Some(StructuredForm::JsonObjectSchema));
    let answered = promptly(set.ask(&importance())).await.unwrap();
    assert_eq!(tries(&answered.events), pairs(&[("json_object_schema", "answer")]));
}

#[tokio::test]
async fn a_negotiated_call_replays_to_the_same_events_without_a_server() {
    let server = LoopbackServer::start(vec![], Reply::Rules(json_object_only)).await;
    let recorded = promptly(gateway(&server, no_waiting()).ask(&importance())).await.unwrap();
    let replay = Arc::new(Replay::from_events(recorded.events.iter()));
    let again = Gateway::new(replay.clone(), replay, Params::default(), no_waiting(), 1);
    let replayed = promptly(again.ask(&importance())).await.unwrap();
    assert_eq!(replayed.events, recorded.events, "the same forms, prompts and outcomes");
}

/// Asserts one try, refused, whose hint mentions `hint_has`.
fn stopped_at_once(error: &GatewayError, hint_has: &str) {
    assert!(matches!(error, GatewayError::Refused { .. }), "{error}");
    let failed: Vec<&Body> =
        error.events().iter().filter(|e| matches!(e, Body::LlmFailed(_))).collect();
    assert_eq!(failed.len(), 1, "one try: {:?}", error.events());
    let hint = error.hint().unwrap_or_default();
    assert!(hint.contains(hint_has), "hint {hint:?} should mention {hint_has}");
}

#[tokio::test]
async fn a_server_without_embeddings_stops_after_one_try_with_the_hint_to_embed_locally() {
    let bodies = [
        (
            501,
            r#"{"error":{"code":501,"message":"This server does not support embeddings. Start it with `--embeddings`","type":"not_supported_error"}}"#,
        ),
        (
            500,
            r#"{"error":{"message":"Llama model must be created with embedding=True to call this method","type":"internal_server_error"}}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"Pooling type 'none' is not OAI compatible. Please use a different pooling type","type":"invalid_request_error"}}"#,
        ),
    ];
    let call = EmbedCall::new("memory", vec!["a stove".into()]);
    for (status, body) in bodies {
        let server = LoopbackServer::start(vec![], Reply::Status(status, None, body.into())).await;
        let error = promptly(gateway(&server, no_waiting()).embed(&call)).await.unwrap_err();
        stopped_at_once(&error, "--embed local");
        let said = error.to_string().to_lowercase();
        assert!(
            said.contains("embedding") || said.contains("pooling"),
            "the server's words: {error}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn an_unknown_model_or_an_unreadable_request_stops_after_one_try() {
    let cases = [
        (
            404,
            r#"{"error":{"message":"model \"qwen9\" not found, try pulling it first"}}"#,
            "--model",
        ),
        (400, r#"{"error":{"message":"The model `qwen9` does not exist"}}"#, "--model"),
        (
            500,
            r#"{"error":{"message":"failed to parse the request body as JSON"}}"#,
            "could not read",
        ),
    ];
    for (status, body, hint) in cases {
        let server = LoopbackServer::start(vec![], Reply::Status(status, None, body.into())).await;
        let error = promptly(gateway(&server, no_waiting()).ask(&importance())).await.unwrap_err();
        stopped_at_once(&error, hint);
        assert_eq!(server.requests().len(), 1, "{body}");
    }
    // The same words without a structured form in play: still one try.
    let server = LoopbackServer::start(
        vec![],
        Reply::Status(400, None, r#"{"error":{"message":"could not parse JSON"}}"#.into()),
    )
    .await;
    let text = Call::chat("summary", "Say something.", "Describe Mei.", Shape::Text);
    let error = promptly(gateway(&server, no_waiting()).ask(&text)).await.unwrap_err();
    stopped_at_once(&error, "could not read");
}

fn per_token(vectors: &[Vec<Vec<f32>>]) -> Reply {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| serde_json::json!({ "object": "embedding", "index": i, "embedding": v }))
        .collect();
    let body = serde_json::json!({ "object": "list", "model": "m", "data": data,
        "usage": { "prompt_tokens": 5, "total_tokens": 5 } });
    Reply::Status(200, None, body.to_string())
}

#[tokio::test]
async fn per_token_vectors_are_mean_pooled_normalised_and_said_to_be() {
    let server = LoopbackServer::start(
        vec![per_token(&[vec![vec![1.0, 0.0], vec![3.0, 4.0]], vec![vec![0.0, 2.0]]])],
        Reply::Status(500, None, "x".into()),
    )
    .await;
    let call = EmbedCall::new("memory", vec!["a stove".into(), "a fridge".into()]);
    let embedded = promptly(gateway(&server, no_waiting()).embed(&call)).await.unwrap();
    // The mean of (1,0) and (3,4) is (2,2); unit length: (0.7071, 0.7071).
    let h = std::f32::consts::FRAC_1_SQRT_2;
    assert!((embedded.vectors[0][0] - h).abs() < 1e-6 && (embedded.vectors[0][1] - h).abs() < 1e-6);
    assert_eq!(embedded.vectors[1], vec![0.0, 1.0]);
    let Some(Body::EmbeddingReturned(r)) = embedded.events.last() else { panic!() };
    assert!(r.pooled, "the event says the vectors were pooled");
    assert_eq!(r.tokens, 5);
}

#[tokio::test]
async fn an_empty_answer_or_a_changed_dimension_is_a_clear_error_at_once() {
    let empty = serde_json::json!({ "object": "list", "data": [], "model": "m",
        "usage": { "prompt_tokens": 0, "total_tokens": 0 } })
    .to_string();
    let server = LoopbackServer::start(vec![], Reply::Status(200, None, empty)).await;
    let call = EmbedCall::new("memory", vec!["a stove".into()]);
    let error = promptly(gateway(&server, no_waiting()).embed(&call)).await.unwrap_err();
    assert!(error.to_string().contains("no vectors"), "{error}");
    stopped_at_once(&error, "--embed local");

    let server = LoopbackServer::start(
        vec![Reply::Embed(vec![vec![1.0, 0.0, 0.0]]), Reply::Embed(vec![vec![1.0, 0.0]])],
        Reply::Embed(vec![vec![1.0, 0.0]]),
    )
    .await;
    let gw = gateway(&server, no_waiting());
    let first = promptly(gw.embed(&call)).await.unwrap();
    let error = promptly(gw.embed(&call)).await.unwrap_err();
    assert!(
        error.to_string().contains("vectors of 2 numbers") && error.to_string().contains("3"),
        "{error}"
    );
    stopped_at_once(&error, "one embedding model");

    // A resumed run learns the length from its log: another model is refused at its first
    // answer, not mixed into the memories.
    let server = LoopbackServer::start(vec![], Reply::Embed(vec![vec![1.0, 0.0]])).await;
    let resumed = gateway(&server, no_waiting());
    resumed.learn_from(&first.events);
    let error = promptly(resumed.embed(&call)).await.unwrap_err();
    assert!(error.to_string().contains("have 3"), "{error}");
}

#[tokio::test]
async fn a_slow_server_gets_twice_as_long_after_a_timeout_and_its_call_shows_in_flight() {
    let answer = || Reply::Chat(r#"{"rating": 3}"#.into());
    let server = LoopbackServer::start(
        vec![Reply::Slow(Duration::from_millis(1500), Box::new(answer()))],
        Reply::Slow(Duration::from_millis(1500), Box::new(answer())),
    )
    .await;
    let policy = RetryPolicy {
        max_attempts: 3,
        max_bad_answers: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(5),
        timeout: Duration::from_millis(1000),
    };
    let gw = gateway(&server, policy);
    let watcher = gw.clone();
    let call = importance();
    let asking = tokio::spawn(async move { gw.ask(&call).await });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let flights = watcher.in_flight();
    assert_eq!(flights.len(), 1, "{flights:?}");
    assert_eq!((flights[0].purpose.as_str(), flights[0].attempt), ("importance", 1));
    assert!(flights[0].seconds > 0.1);
    let answered = asking.await.unwrap().unwrap();
    // 1 s was too short for a 1.5 s answer; the second try had 2 s.
    assert_eq!(
        tries(&answered.events),
        pairs(&[("json_schema", "Timeout"), ("json_schema", "answer")])
    );
    assert!(watcher.in_flight().is_empty(), "a finished call leaves the list");
    // Three times the longest answer so far (≈ 1.5 s) is now above the 1 s setting.
    assert!(watcher.try_timeout(0) >= Duration::from_millis(4_000), "{:?}", watcher.try_timeout(0));
}
