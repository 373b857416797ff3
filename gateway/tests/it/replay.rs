//! Replay answers from recorded events with no model, reproduces the recorded tries, and
//! names what differs when a call was never recorded.

use std::sync::Arc;
use std::time::Duration;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::backend::BackendError;
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Call, Gateway, GatewayError, Params, RetryPolicy};
use hamlet_log::event::FailureKind;

use crate::scripted::ScriptedLlm;

fn policy() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        ..RetryPolicy::default()
    }
}

fn gateway(llm: Arc<dyn hamlet_gateway::LlmBackend>, replay_embed: Arc<Replay>) -> Gateway {
    Gateway::new(llm, replay_embed, Params::default(), policy(), 2)
}

fn plan_call(day: &str) -> Call {
    Call::chat(
        "day_plan",
        "You plan a day for Mei Lin, a college student who loves painting.",
        &format!("Plan {day} in 5 to 8 broad strokes."),
        Shape::day_plan(),
    )
}

#[tokio::test]
async fn replay_reproduces_every_try_without_a_model() {
    let plan = r#"{"steps":[{"start":"07:00","activity":"wake up and stretch","minutes":60},
        {"start":"08:00","activity":"breakfast","minutes":60},{"start":"09:00","activity":"classes","minutes":180},
        {"start":"12:00","activity":"lunch with Tamsin","minutes":60},{"start":"13:00","activity":"paint at the studio","minutes":240}]}"#;
    let scripted = ScriptedLlm::new(vec![
        Err(BackendError {
            kind: FailureKind::RateLimited,
            message: "429".into(),
            retry_after: None,
            hint: None,
        }),
        Ok("I will wake up at 25:00".into()),
        Ok(plan.into()),
    ]);
    let empty = Arc::new(Replay::from_events(&[]));
    let live = gateway(Arc::new(scripted), empty).ask(&plan_call("Tuesday")).await.unwrap();
    assert!(matches!(live.answer, Answer::Plan(ref steps) if steps.len() == 5));

    let replay = Arc::new(Replay::from_events(&live.events));
    let again = gateway(replay.clone(), replay.clone()).ask(&plan_call("Tuesday")).await.unwrap();
    assert_eq!(again.answer, live.answer);
    assert_eq!(again.events, live.events, "the recorded latencies too: byte-identical");
    assert_eq!(replay.unused(), 0, "every recorded outcome was used");
}

#[tokio::test]
async fn a_call_that_was_not_recorded_is_a_clear_error() {
    let scripted = ScriptedLlm::new(vec![Ok(r#"{"steps":[]}"#.into()); 3]);
    let empty = Arc::new(Replay::from_events(&[]));
    let live = gateway(Arc::new(scripted), empty).ask(&plan_call("Tuesday")).await.unwrap();
    let replay = Arc::new(Replay::from_events(&live.events));
    let error = gateway(replay.clone(), replay).ask(&plan_call("Wednesday")).await.unwrap_err();
    let GatewayError::NotRecorded(message) = &error else { panic!("{error}") };
    assert!(message.contains("day_plan"), "{message}");
    assert!(message.contains("prompt: message 2 (user)"), "{message}");
    assert!(message.contains("Wednesday"), "{message}");
    assert!(error.events().is_empty(), "a miss records nothing");
}
