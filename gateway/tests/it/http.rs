//! async-openai against the loopback server: structured answers, every failure the issue
//! names, retries and their events, and the key kept out of every event.

use std::time::Duration;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::{Call, EmbedCall, Gateway, GatewayError, RetryPolicy};
use hamlet_log::event::FailureKind;
use hamlet_log::Body;

use crate::loopback::{LoopbackServer, Reply};

const KEY: &str = "sk-loopback-secret-4242";

fn gateway(server: &LoopbackServer, policy: RetryPolicy) -> Gateway {
    crate::loopback::gateway(server, KEY, policy)
}

fn quick() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 8,
        max_bad_answers: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(50),
        timeout: Duration::from_millis(700),
    }
}

fn importance() -> Call {
    Call::chat(
        "importance",
        "Rate how poignant a memory is, from 1 (mundane) to 10 (life-changing).",
        "Memory: Mei Lin was accepted to the college she dreamed of.",
        Shape::Importance,
    )
}

fn kinds(events: &[Body]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Body::LlmRequested(r) => format!("request#{}", r.attempt),
            Body::LlmResponded(r) if r.fallback => "fallback".into(),
            Body::LlmResponded(r) if r.parsed.is_some() => "answer".into(),
            Body::LlmResponded(_) => "unparsed".into(),
            Body::LlmFailed(f) => format!("{:?}", f.kind),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_structured_answer_comes_back_typed_with_its_schema_sent() {
    let server = LoopbackServer::start(vec![], Reply::Chat(r#"{"rating": 9}"#.into())).await;
    let answered = gateway(&server, quick()).ask(&importance()).await.unwrap();
    assert_eq!(answered.answer, Answer::Importance(9));
    assert!(!answered.fallback);
    assert_eq!(kinds(&answered.events), ["request#1", "answer"]);
    let Body::LlmResponded(r) = &answered.events[1] else { unreachable!() };
    assert_eq!((r.tokens_prompt, r.tokens_completion), (21, 4));
    assert_eq!(r.response_model, "loopback-model");
    let Body::LlmRequested(q) = &answered.events[0] else { unreachable!() };
    assert_eq!(q.server, server.base_url());
    assert_eq!(q.backend, "openai");
    let sent = &server.requests()[0];
    assert!(sent.line.starts_with("POST /v1/chat/completions"), "{}", sent.line);
    assert_eq!(sent.authorization.as_deref(), Some(&*format!("Bearer {KEY}")));
    assert_eq!(sent.body["response_format"]["type"], "json_schema");
    assert_eq!(
        sent.body["response_format"]["json_schema"]["schema"]["properties"]["rating"]["maximum"],
        10
    );
    assert_eq!(sent.body["model"], "loopback-model");
    assert_eq!(sent.body["seed"], 0);
    let recorded = format!("{:?}", answered.events);
    assert!(!recorded.contains(KEY), "the key never enters an event");
}

#[tokio::test]
async fn every_failure_is_retried_and_recorded_until_an_answer_comes() {
    let script = vec![
        Reply::Status(500, None, r#"{"error":{"message":"boom","type":"server_error"}}"#.into()),
        Reply::Status(
            429,
            Some(0),
            r#"{"error":{"message":"slow down","type":"rate_limit"}}"#.into(),
        ),
        Reply::Slow(Duration::from_secs(3), Box::new(Reply::Chat(r#"{"rating": 2}"#.into()))),
        Reply::Malformed,
        Reply::Drop,
        Reply::Status(503, None, "unavailable".into()),
    ];
    let server = LoopbackServer::start(script, Reply::Chat(r#"{"rating": 8}"#.into())).await;
    let answered = gateway(&server, quick()).ask(&importance()).await.unwrap();
    assert_eq!(answered.answer, Answer::Importance(8));
    assert_eq!(
        kinds(&answered.events),
        [
            "request#1",
            "ServerError",
            "request#2",
            "RateLimited",
            "request#3",
            "Timeout",
            "request#4",
            "ServerError",
            "request#5",
            "Connection",
            "request#6",
            "ServerError",
            "request#7",
            "answer",
        ]
    );
    assert_eq!(server.requests().len(), 7, "one HTTP request per recorded try, no hidden retries");
}

#[tokio::test]
async fn a_server_that_keeps_failing_ends_in_a_clean_error_with_every_try_recorded() {
    let server =
        LoopbackServer::start(vec![], Reply::Status(502, None, "bad gateway".into())).await;
    let policy = RetryPolicy { max_attempts: 3, ..quick() };
    let error = gateway(&server, policy).ask(&importance()).await.unwrap_err();
    let GatewayError::Exhausted { attempts, events, .. } = &error else { panic!("{error}") };
    assert_eq!(*attempts, 3);
    assert_eq!(
        kinds(events),
        ["request#1", "ServerError", "request#2", "ServerError", "request#3", "ServerError"]
    );
}

#[tokio::test]
async fn a_refused_request_is_not_retried() {
    let body =
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
    let server = LoopbackServer::start(vec![], Reply::Status(401, None, body.into())).await;
    let error = gateway(&server, quick()).ask(&importance()).await.unwrap_err();
    assert!(matches!(error, GatewayError::Refused { .. }), "{error}");
    assert_eq!(kinds(error.events()), ["request#1", "Refused"]);
    assert!(error.to_string().contains("Incorrect API key"), "{error}");
    assert!(!error.to_string().contains(KEY));
}

#[tokio::test]
async fn hostile_answers_are_retried_then_replaced_by_a_marked_fallback() {
    let server =
        LoopbackServer::start(vec![], Reply::Chat(r#"{"rating": 1000000000000000}"#.into())).await;
    let answered = gateway(&server, quick()).ask(&importance()).await.unwrap();
    assert!(answered.fallback);
    assert_eq!(answered.answer, Answer::Importance(5));
    assert_eq!(
        kinds(&answered.events),
        [
            "request#1",
            "unparsed",
            "BadAnswer",
            "request#2",
            "unparsed",
            "BadAnswer",
            "request#3",
            "unparsed",
            "BadAnswer",
            "fallback"
        ]
    );
    let Some(Body::LlmResponded(last)) = answered.events.last() else { unreachable!() };
    assert!(last.text.is_empty(), "the fallback is never stored as if the model said it");
    assert_eq!(last.finish_reason, "fallback");
}

#[tokio::test]
async fn embeddings_come_back_one_per_text_and_unit_length() {
    let server = LoopbackServer::start(
        vec![
            Reply::Status(500, None, "x".into()),
            Reply::Embed(vec![vec![3.0, 4.0], vec![0.0, 2.0]]),
        ],
        Reply::Status(500, None, "x".into()),
    )
    .await;
    let call = EmbedCall::new("memory", vec!["a stove".into(), "a fridge".into()]);
    let embedded = gateway(&server, quick()).embed(&call).await.unwrap();
    assert_eq!(embedded.vectors, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
    assert!(
        matches!(embedded.events[0], Body::EmbeddingRequested(ref r) if r.purpose == "memory" && r.server == server.base_url())
    );
    assert!(
        matches!(embedded.events[1], Body::LlmFailed(ref f) if f.kind == FailureKind::ServerError)
    );
    assert!(matches!(embedded.events[2], Body::EmbeddingReturned(ref r) if r.tokens == 7));
    // A wrong count of vectors is a bad answer, not a result.
    let short = LoopbackServer::start(vec![], Reply::Embed(vec![vec![1.0]])).await;
    let policy = RetryPolicy { max_attempts: 2, ..quick() };
    assert!(gateway(&short, policy).embed(&call).await.is_err());
}

#[tokio::test]
async fn concurrent_calls_are_bounded_and_all_answered() {
    let server = LoopbackServer::start(
        vec![],
        Reply::Slow(Duration::from_millis(30), Box::new(Reply::Chat(r#"{"answer":"yes"}"#.into()))),
    )
    .await;
    let gw = gateway(&server, quick());
    let calls: Vec<Call> = (0..12)
        .map(|i| {
            Call::chat(
                "react",
                "Answer yes or no.",
                &format!("Should agent {i} react?"),
                Shape::YesNo,
            )
        })
        .collect();
    let answers = futures_join(gw, calls).await;
    assert_eq!(answers.len(), 12);
    assert!(answers.iter().all(|a| a.answer == Answer::YesNo(true)));
}

async fn futures_join(gw: Gateway, calls: Vec<Call>) -> Vec<hamlet_gateway::Answered> {
    let mut handles = Vec::new();
    for call in calls {
        let gw = gw.clone();
        handles.push(tokio::spawn(async move { gw.ask(&call).await.unwrap() }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// A key or password in the base URL itself never reaches a failure's message, an event or
/// the error: reqwest names the URL it could not reach, and it is scrubbed first.
#[tokio::test]
async fn secrets_in_the_base_url_never_reach_an_event() {
    use hamlet_gateway::openai::{Endpoint, OpenAi, OpenAiEmbed};
    use std::sync::Arc;
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = |model: &str| Endpoint {
        base_url: format!("http://someone:pw-in-the-url@127.0.0.1:{port}/v1?key=sk-in-the-query"),
        api_key: KEY.into(),
        model: model.into(),
    };
    let gateway = Gateway::new(
        Arc::new(OpenAi::new(endpoint("m")).unwrap()),
        Arc::new(OpenAiEmbed::new(endpoint("e")).unwrap()),
        hamlet_gateway::Params::default(),
        RetryPolicy { max_attempts: 2, ..quick() },
        4,
    );
    let error = gateway.ask(&importance()).await.unwrap_err();
    let failures: Vec<&str> = error
        .events()
        .iter()
        .filter_map(|e| match e {
            Body::LlmFailed(f) => Some(f.message.as_str()),
            _ => None,
        })
        .collect();
    assert!(!failures.is_empty(), "{error}");
    for said in failures.iter().copied().chain([error.to_string().as_str()]) {
        for secret in ["pw-in-the-url", "sk-in-the-query", KEY] {
            assert!(!said.contains(secret), "{secret} in {said}");
        }
    }
    assert!(failures.iter().any(|m| m.contains("127.0.0.1")), "{failures:?}");
    for e in error.events() {
        let debug = format!("{e:?}");
        assert!(!debug.contains("pw-in-the-url") && !debug.contains("sk-in-the-query"), "{debug}");
    }
}
