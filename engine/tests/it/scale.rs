//! Goal: however a server's latencies fall, and however many requests are in flight, the
//! log is the same and keeps every try once. Method: runs against the loopback test-double
//! server answering by rule after a random wait; two runs whose waits differ are compared
//! event by event, with event ids mapped to the positions of the events they name (an
//! answer's measured latency is part of its bytes, so every id after it differs).

use std::sync::Arc;
use std::time::Duration;

use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::openai::{Endpoint, OpenAi, OpenAiEmbed};
use hamlet_gateway::{Gateway, Params, RetryPolicy};
use hamlet_log::{Body, Event};

use crate::loopback::{LoopbackServer, Reply};
use crate::rules::over_http;

/// Runs `town` for `steps` steps against `server` with `in_flight` requests allowed at once.
async fn run(
    server: &LoopbackServer,
    town: Definition,
    steps: u64,
    in_flight: usize,
) -> Vec<Event> {
    let endpoint = |model: &str| Endpoint {
        base_url: server.base_url(),
        api_key: "sk-loopback".into(),
        model: model.into(),
    };
    let gateway = Gateway::new(
        Arc::new(OpenAi::new(endpoint("rules")).unwrap()),
        Arc::new(OpenAiEmbed::new(endpoint("letters")).unwrap()),
        Params::default(),
        RetryPolicy {
            timeout: Duration::from_secs(60),
            base_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        },
        in_flight,
    );
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let mut sim =
        Sim::start(store, "main", town, 1, gateway, SimSettings::default()).await.unwrap();
    for _ in 0..steps {
        sim.step().await.unwrap();
    }
    let head = sim.store().branch(sim.branch()).unwrap().head_seq;
    sim.store().events(sim.branch(), 0, head).unwrap()
}

/// Each event as text with what only the wall clock decides taken out: measured latencies,
/// response ids and the server's address (each run has a server of its own) cleared, and every event id (`ev_` and 12 hex digits, as ids print)
/// replaced by the position of the event it names.
fn normalised(events: &[Event]) -> Vec<String> {
    let positions: std::collections::BTreeMap<String, usize> =
        events.iter().enumerate().map(|(i, e)| (e.id.to_string(), i)).collect();
    events
        .iter()
        .map(|e| {
            let mut body = e.body.clone();
            match &mut body {
                // Which server: each run has its own, on a port of its own.
                Body::LlmRequested(r) => r.server.clear(),
                Body::EmbeddingRequested(r) => r.server.clear(),
                Body::LlmResponded(r) => {
                    r.latency_ms = 0;
                    r.response_id.clear();
                }
                Body::LlmFailed(f) => f.latency_ms = 0,
                Body::EmbeddingReturned(r) => r.latency_ms = 0,
                _ => {}
            }
            let text = format!("{:?} {:?} {body:?}", e.header, e.parent);
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(at) = rest.find("ev_") {
                out.push_str(&rest[..at]);
                let id = rest.get(at..at + 15).unwrap_or(&rest[at..]);
                match positions.get(id) {
                    Some(p) => out.push_str(&format!("#{p}")),
                    None => out.push_str(id),
                }
                rest = &rest[at + id.len()..];
            }
            out.push_str(rest);
            out
        })
        .collect()
}

fn first_difference(a: &[String], b: &[String]) -> Option<(usize, String, String)> {
    a.iter()
        .zip(b)
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| (i, x.clone(), y.clone()))
}

fn count(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| hamlet_log::event::kind_name(e.body.kind()) == kind).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_whose_server_latencies_differ_make_the_same_log() {
    let town = || {
        hamlet_engine::town::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/willowmere.toml"),
        )
        .unwrap()
    };
    let mut logs = Vec::new();
    for seed in [1, 2] {
        let server = LoopbackServer::start(
            vec![],
            Reply::Jitter(Duration::from_millis(40), seed, Box::new(Reply::Rules(over_http))),
        )
        .await;
        logs.push(run(&server, town(), 60, 16).await);
    }
    let (a, b) = (&logs[0], &logs[1]);
    assert!(count(a, "LlmResponded") > 100, "the runs asked the model");
    // The raw logs part at the first answer (its latency is in its bytes)...
    assert_ne!(a.last().unwrap().id, b.last().unwrap().id);
    // ...and are the same event for event once the wall clock is taken out.
    let (na, nb) = (normalised(a), normalised(b));
    assert_eq!(na.len(), nb.len());
    if let Some((i, x, y)) = first_difference(&na, &nb) {
        panic!("the logs part at #{i}:\n  {x}\n  {y}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_requests_in_flight_are_each_recorded_once_in_the_same_order() {
    let text = hamlet_engine::town::generate::generate(&hamlet_engine::town::generate::Spec {
        agents: 600,
        seed: 3,
        name: "Manyford".into(),
    });
    let town = || Definition::parse("manyford.toml", &text).unwrap();
    let mut logs = Vec::new();
    for seed in [1, 2] {
        // Every request waits 200 to 300 ms (long enough for hundreds to overlap on a busy
        // machine); about one in 25 fails once with a 503 first.
        let server = LoopbackServer::start(
            vec![],
            Reply::FailFirst(
                25,
                Box::new(Reply::Slow(
                    Duration::from_millis(200),
                    Box::new(Reply::Jitter(
                        Duration::from_millis(100),
                        seed,
                        Box::new(Reply::Rules(over_http)),
                    )),
                )),
            ),
        )
        .await;
        let events = run(&server, town(), 1, 600).await;
        let received = server.requests();
        let chat = received.iter().filter(|r| r.line.contains("/chat/completions")).count();
        let embed = received.iter().filter(|r| r.line.contains("/embeddings")).count();
        assert!(
            server.max_in_flight() >= 500,
            "{} requests in flight at most",
            server.max_in_flight()
        );
        // Every request the server answered is one event: an answer, or a failure that is
        // not an answer found wanting (those follow the answer they judge), or vectors. A
        // failed embedding request is an `LlmFailed` too; a fallback is no request.
        let answers = events
            .iter()
            .filter(|e| matches!(&e.body, Body::LlmResponded(r) if !r.fallback))
            .count();
        let failures = events
            .iter()
            .filter(|e| {
                matches!(&e.body, Body::LlmFailed(f) if f.kind != hamlet_log::event::FailureKind::BadAnswer)
            })
            .count();
        let served_503 = events
            .iter()
            .filter(
                |e| matches!(&e.body, Body::LlmFailed(f) if f.message.contains("busy, try again")),
            )
            .count();
        let embedded = count(&events, "EmbeddingReturned");
        assert!(served_503 > 100, "the 503s were recorded: {served_503}");
        assert_eq!(chat + embed, answers + failures + embedded);
        logs.push(events);
    }
    let (na, nb) = (normalised(&logs[0]), normalised(&logs[1]));
    assert_eq!(na.len(), nb.len());
    if let Some((i, x, y)) = first_difference(&na, &nb) {
        panic!("the logs part at #{i}:\n  {x}\n  {y}");
    }
}
