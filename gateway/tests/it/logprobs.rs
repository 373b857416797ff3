//! Ratings read from a server's `logprobs`: each item asked on its own with the top 20
//! alternatives requested, the rating the expected value over the answers 1 to 10, the
//! distributions recorded and replayed; a server that gives no `logprobs` generates its
//! ratings, from its first refusal on.

use std::sync::Arc;
use std::time::Duration;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::request::Scored;
use hamlet_gateway::{Call, Gateway, Params, RetryPolicy};
use hamlet_log::event::{ChatMessage, Prompt, StructuredForm};
use hamlet_log::Body;

use crate::loopback::{chat_body, LoopbackServer, Received, Reply};

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        max_bad_answers: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        timeout: Duration::from_secs(20),
    }
}

fn rating_call() -> Call {
    let items: Vec<String> =
        ["Mei brushed her teeth", "Mei was invited to a party", "Mei got into college"]
            .map(str::to_owned)
            .to_vec();
    let listed: Vec<String> =
        items.iter().enumerate().map(|(i, m)| format!("{}. {m}", i + 1)).collect();
    let mut call = Call::chat(
        "importance",
        "This is about Mei Lin.",
        &format!("Rate each moment.\n{}", listed.join("\n")),
        Shape::Ratings { count: 3 },
    );
    call.scored = Some(Scored {
        prompt: Prompt::Chat(vec![
            ChatMessage { role: "system".into(), content: "This is about Mei Lin.".into() },
            ChatMessage { role: "user".into(), content: "Rate the moment:".into() },
        ]),
        items,
    });
    call
}

/// The last message's content as sent.
fn last_message(r: &Received) -> String {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

/// One token of a chat answer's `logprobs.content`, with its alternatives.
fn token(text: &str, top: &[(&str, f64)]) -> serde_json::Value {
    let logprob = top.iter().find(|(t, _)| *t == text).map_or(-30.0, |(_, p)| p.ln());
    let top: Vec<serde_json::Value> = top
        .iter()
        .map(|(t, p)| serde_json::json!({ "token": t, "logprob": p.ln(), "bytes": null }))
        .collect();
    serde_json::json!({ "token": text, "logprob": logprob, "bytes": null, "top_logprobs": top })
}

/// A chat answer `{"rating": <digits>}` whose number's tokens carry `number`'s
/// alternatives (one list per token of the number).
fn rated(digits: &[(&str, &[(&str, f64)])]) -> Reply {
    let content: String = digits.iter().map(|(t, _)| *t).collect();
    let mut tokens = vec![token("{\"", &[("{\"", 1.0)]), token("rating", &[("rating", 1.0)])];
    tokens.push(token("\":", &[("\":", 1.0)]));
    tokens.push(token(" ", &[(" ", 1.0)]));
    tokens.extend(digits.iter().map(|(t, top)| token(t, top)));
    tokens.push(token("}", &[("}", 1.0)]));
    let mut body: serde_json::Value =
        serde_json::from_str(&chat_body(&format!("{{\"rating\": {content}}}"))).unwrap();
    body["choices"][0]["logprobs"] = serde_json::json!({ "content": tokens });
    Reply::Json(body.to_string())
}

/// A server that gives `logprobs` when asked: teeth mostly 1, the party 5 or 6, college
/// "1" then "0" (10) mostly; a question without `logprobs` is answered in words.
fn with_logprobs(r: &Received) -> Reply {
    if r.body["logprobs"] != serde_json::json!(true) {
        return Reply::Chat(r#"{"ratings": [2, 2, 2]}"#.into());
    }
    let item = last_message(r);
    if item.ends_with("teeth") {
        rated(&[("1", &[("1", 0.7), ("2", 0.3)])])
    } else if item.ends_with("party") {
        rated(&[("5", &[("5", 0.5), ("6", 0.5)])])
    } else {
        rated(&[("1", &[("1", 0.95), ("9", 0.05)]), ("0", &[("0", 0.9), ("}", 0.1)])])
    }
}

/// A server that ignores `logprobs` (answers without them), and generates `[1, 6, 10]`.
fn without_logprobs(r: &Received) -> Reply {
    if r.body["logprobs"] == serde_json::json!(true) {
        Reply::Chat(r#"{"rating": 3}"#.into())
    } else {
        Reply::Chat(r#"{"ratings": [1, 6, 10]}"#.into())
    }
}

#[tokio::test]
async fn a_server_with_logprobs_rates_each_item_from_them_and_the_rating_replays() {
    let server = LoopbackServer::start(Vec::new(), Reply::Rules(with_logprobs)).await;
    let gw = crate::loopback::gateway(&server, "", policy());
    let live = gw.ask(&rating_call()).await.unwrap();
    // Teeth 1.3 → 1; the party 5.5 → 6; college 0.855 × 10 + 0.095 × 1 + 0.05 × 9 = 9.1 → 9.
    assert_eq!(live.answer, Answer::Ratings(vec![1, 6, 9]));
    let [Body::LlmRequested(asked), Body::LlmResponded(answered)] = live.events.as_slice() else {
        panic!("one try, answered: {:?}", live.events)
    };
    assert_eq!(asked.structured, StructuredForm::Probabilities);
    assert_eq!(asked.items.len(), 3);
    assert_eq!(answered.text, r#"{"ratings": [1, 6, 9]}"#);
    assert_eq!(answered.finish_reason, "probabilities");
    assert_eq!(answered.probabilities.len(), 3);
    assert_eq!((answered.probabilities[0][0], answered.probabilities[0][1]), (7000, 3000));
    assert_eq!(answered.probabilities[2][9], 8550, "\"1\" then \"0\" is 10");
    assert_eq!(answered.tokens_prompt, 3 * 21, "every item's request counted");

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one request per item: {requests:?}");
    for (r, item) in requests.iter().zip(["teeth", "party", "college"]) {
        assert_eq!(r.body["logprobs"], serde_json::json!(true));
        assert_eq!(r.body["top_logprobs"], serde_json::json!(20));
        assert_eq!(r.body["max_tokens"], serde_json::json!(12));
        assert!(r.body.get("response_format").is_none(), "no form: the number is read, not parsed");
        assert!(last_message(r).starts_with("Rate the moment:\n"), "{}", last_message(r));
        assert!(last_message(r).ends_with(item));
    }

    let replay = Arc::new(Replay::from_events(&live.events));
    let again = Gateway::new(replay.clone(), replay.clone(), Params::default(), policy(), 2)
        .ask(&rating_call())
        .await
        .unwrap();
    assert_eq!(again.events, live.events, "replayed with the distributions");
    assert_eq!(server.requests().len(), 3, "and without the server");
}

#[tokio::test]
async fn a_server_without_logprobs_generates_its_ratings_from_its_first_refusal_on() {
    let server = LoopbackServer::start(Vec::new(), Reply::Rules(without_logprobs)).await;
    let gw = crate::loopback::gateway(&server, "", policy());
    let first = gw.ask(&rating_call()).await.unwrap();
    assert_eq!(first.answer, Answer::Ratings(vec![1, 6, 10]));
    assert!(!first.fallback);
    let forms: Vec<(StructuredForm, &str)> = first
        .events
        .iter()
        .filter_map(|e| match e {
            Body::LlmRequested(r) => Some((r.structured, "asked")),
            Body::LlmFailed(f) => Some((StructuredForm::None, &*f.message)),
            _ => None,
        })
        .collect();
    assert_eq!(forms.len(), 3, "{forms:?}");
    assert_eq!(forms[0].0, StructuredForm::Probabilities);
    assert!(forms[1].1.contains("no `logprobs`"), "{forms:?}");
    assert_eq!(forms[2].0, StructuredForm::JsonSchema);

    let second = gw.ask(&rating_call()).await.unwrap();
    let asked: Vec<StructuredForm> = second
        .events
        .iter()
        .filter_map(|e| match e {
            Body::LlmRequested(r) => Some(r.structured),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![StructuredForm::JsonSchema], "not asked for logprobs again");
    assert_eq!(server.requests().len(), 3);

    // A run resumed over these tries asks as this gateway would have gone on asking.
    let resumed = crate::loopback::gateway(&server, "", policy());
    resumed.learn_from(&first.events);
    let third = resumed.ask(&rating_call()).await.unwrap();
    assert!(
        matches!(third.events.first(), Some(Body::LlmRequested(r)) if r.structured == StructuredForm::JsonSchema),
        "{:?}",
        third.events
    );
    assert_eq!(server.requests().len(), 4);
    let unlearned = crate::loopback::gateway(&server, "", policy());
    let fourth = unlearned.ask(&rating_call()).await.unwrap();
    assert!(
        matches!(fourth.events.first(), Some(Body::LlmRequested(r)) if r.structured == StructuredForm::Probabilities),
        "a gateway that learned nothing tries logprobs first"
    );
}

#[tokio::test]
async fn a_gateway_that_learns_from_the_log_learns_a_refusal_only_once_it_is_given_the_events() {
    let server = LoopbackServer::start(Vec::new(), Reply::Rules(without_logprobs)).await;
    let gw = crate::loopback::gateway(&server, "", policy());
    gw.learn_from_the_log();
    let first_asked = |events: &[Body]| match events.first() {
        Some(Body::LlmRequested(r)) => r.structured,
        other => panic!("{other:?}"),
    };
    let first = gw.ask(&rating_call()).await.unwrap();
    assert_eq!(first_asked(&first.events), StructuredForm::Probabilities);
    assert_eq!(first.answer, Answer::Ratings(vec![1, 6, 10]));
    // A call after the refusal, its events not yet committed, asks as the log says: as a
    // call that was under way with it would have (whichever was answered first).
    let second = gw.ask(&rating_call()).await.unwrap();
    assert_eq!(first_asked(&second.events), StructuredForm::Probabilities);
    let forms = |events: &[Body]| -> Vec<StructuredForm> {
        events
            .iter()
            .filter_map(|e| match e {
                Body::LlmRequested(r) => Some(r.structured),
                _ => None,
            })
            .collect()
    };
    assert_eq!(forms(&second.events), forms(&first.events), "asked alike");
    assert_eq!(second.answer, first.answer);
    // Once committed, the refusal is learned.
    gw.learn_from(&first.events);
    let third = gw.ask(&rating_call()).await.unwrap();
    assert_eq!(first_asked(&third.events), StructuredForm::JsonSchema);
    assert_eq!(server.requests().len(), 2 + 2 + 1, "a refused try and an answer, twice; then one");
}
