//! Ratings read from the model's probabilities (`StructuredForm::Probabilities`): asked item
//! by item where the backend can, recorded with the distribution, replayed identically; a
//! backend that cannot (or a try that fails) gets the generated question instead.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::backend::{Attempt, BackendError, BoxFuture, Completion, LlmBackend};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::request::Scored;
use hamlet_gateway::{Call, Gateway, Params, RetryPolicy};
use hamlet_log::event::{FailureKind, Prompt, StructuredForm};
use hamlet_log::Body;

use crate::scripted::ScriptedLlm;

/// A test double that reads "ratings" item by item: item *i* gets the distribution that
/// puts all its weight on `(i % 10) + 1`, and generates nothing. It fails its first
/// `fail_first` probability tries, and answers a generated try with `generated`.
struct ScoringDouble {
    fail_first: u32,
    tries: AtomicU32,
    generated: String,
}

impl LlmBackend for ScoringDouble {
    fn name(&self) -> &str {
        "scoring-test-double"
    }

    fn server(&self) -> String {
        String::new()
    }

    fn model(&self) -> String {
        "scoring".into()
    }

    fn structured_forms(&self) -> &[StructuredForm] {
        &[StructuredForm::Probabilities, StructuredForm::Grammar]
    }

    fn complete<'a>(
        &'a self,
        attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let n = self.tries.fetch_add(1, Ordering::SeqCst);
        let call = attempt.call;
        let outcome = if attempt.structured == StructuredForm::Probabilities {
            if n < self.fail_first {
                Err(BackendError::new(FailureKind::Other, "the double's slot broke"))
            } else {
                assert!(!call.items.is_empty(), "a probabilities try carries its items");
                let ratings: Vec<u8> = (0..call.items.len()).map(|i| (i % 10) as u8 + 1).collect();
                let probabilities = ratings
                    .iter()
                    .map(|&r| (1..=10).map(|k| if k == r { 10_000 } else { 0 }).collect())
                    .collect();
                let listed: Vec<String> = ratings.iter().map(u8::to_string).collect();
                Ok(Completion {
                    text: format!("{{\"ratings\": [{}]}}", listed.join(", ")),
                    tokens_prompt: 40,
                    tokens_completion: 0,
                    finish_reason: "probabilities".into(),
                    response_model: "scoring".into(),
                    response_id: String::new(),
                    probabilities,
                    tokens_cached: 30,
                })
            }
        } else {
            assert!(call.items.is_empty(), "a generated try has no items");
            Ok(Completion {
                text: self.generated.clone(),
                tokens_prompt: 60,
                tokens_completion: 12,
                finish_reason: "stop".into(),
                response_model: "scoring".into(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: 0,
            })
        };
        Box::pin(async move { outcome })
    }
}

fn gateway(llm: Arc<dyn LlmBackend>, embed: Arc<Replay>) -> Gateway {
    let policy = RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        ..RetryPolicy::default()
    };
    Gateway::new(llm, embed, Params::default(), policy, 2)
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
            hamlet_log::event::ChatMessage {
                role: "system".into(),
                content: "This is about Mei Lin.".into(),
            },
            hamlet_log::event::ChatMessage {
                role: "user".into(),
                content: "Rate the moment:".into(),
            },
        ]),
        items,
    });
    call
}

#[tokio::test]
async fn a_rating_read_from_probabilities_is_recorded_with_them_and_replays() {
    let double =
        ScoringDouble { fail_first: 0, tries: AtomicU32::new(0), generated: String::new() };
    let empty = Arc::new(Replay::from_events(&[]));
    let live = gateway(Arc::new(double), empty).ask(&rating_call()).await.unwrap();
    assert_eq!(live.answer, Answer::Ratings(vec![1, 2, 3]));
    assert!(!live.fallback);
    let [Body::LlmRequested(asked), Body::LlmResponded(answered)] = live.events.as_slice() else {
        panic!("{:?}", live.events)
    };
    assert_eq!(asked.structured, StructuredForm::Probabilities);
    assert_eq!(asked.items.len(), 3, "the items are recorded");
    let Prompt::Chat(shared) = &asked.prompt else { panic!() };
    assert_eq!(shared[1].content, "Rate the moment:", "the prompt sent is the shared one");
    assert_eq!(answered.probabilities.len(), 3, "one distribution per item");
    assert_eq!(answered.probabilities[2][2], 10_000);
    assert_eq!((answered.tokens_completion, answered.tokens_cached), (0, 30));

    let replay = Arc::new(Replay::from_events(&live.events));
    let again = gateway(replay.clone(), replay.clone()).ask(&rating_call()).await.unwrap();
    assert_eq!(again.events, live.events, "replayed byte for byte, distributions included");
    assert_eq!(replay.unused(), 0);
}

#[tokio::test]
async fn a_failed_probabilities_try_falls_back_to_generating_and_others_generate() {
    let generated = r#"{"ratings": [1, 6, 10]}"#.to_owned();
    let double =
        ScoringDouble { fail_first: 5, tries: AtomicU32::new(0), generated: generated.clone() };
    let empty = Arc::new(Replay::from_events(&[]));
    let answered = gateway(Arc::new(double), empty.clone()).ask(&rating_call()).await.unwrap();
    assert_eq!(answered.answer, Answer::Ratings(vec![1, 6, 10]));
    let forms: Vec<StructuredForm> = answered
        .events
        .iter()
        .filter_map(|e| match e {
            Body::LlmRequested(r) => Some(r.structured),
            _ => None,
        })
        .collect();
    assert_eq!(forms.first(), Some(&StructuredForm::Probabilities));
    assert_eq!(forms.last(), Some(&StructuredForm::Grammar), "{forms:?}");

    // A backend that only generates is never sent the items.
    let plain = ScriptedLlm::new(vec![Ok(generated)]);
    let answered = gateway(Arc::new(plain), empty).ask(&rating_call()).await.unwrap();
    let Body::LlmRequested(asked) = &answered.events[0] else { panic!() };
    assert!(asked.items.is_empty());
    assert_ne!(asked.structured, StructuredForm::Probabilities);
    let Prompt::Chat(messages) = &asked.prompt else { panic!() };
    assert!(messages[1].content.contains("3. Mei got into college"), "the numbered list");
}
