//! The simulation loop over the shipped town with a rule-based test double for the model:
//! agents plan, decompose, choose places, act and walk; the same answers give the same log,
//! byte for byte, and so does a re-simulation against the recording with no model.

use std::sync::Arc;

use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::backend::{
    Attempt, BackendError, BoxFuture, Completion, EmbedBackend, LlmBackend, Vectors,
};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{EmbedCall, Gateway, Params, RetryPolicy};
use hamlet_log::event::{PlanLevel, Prompt};
use hamlet_log::{Body, EventId};

/// A test double: answers each prompt template by rule, instantly.
struct RuleModel;

fn between(text: &str) -> (u32, u32) {
    // "From HH:MM to HH:MM"
    let from = text.find("From ").map(|i| &text[i + 5..i + 10]).unwrap_or("07:00");
    let to = text.find(" to ").map(|i| &text[i + 4..i + 9]).unwrap_or("08:00");
    let m = |s: &str| {
        let (h, m) = s.split_once(':').unwrap_or(("7", "0"));
        h.parse::<u32>().unwrap_or(7) * 60 + m.parse::<u32>().unwrap_or(0)
    };
    (m(from), m(to))
}

fn hhmm(m: u32) -> String {
    format!("{:02}:{:02}", m / 60, m % 60)
}

impl LlmBackend for RuleModel {
    fn name(&self) -> &str {
        "rule-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "rules".into()
    }
    fn complete<'a>(&'a self, a: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let user = match &a.call.prompt {
            Prompt::Chat(m) => m.last().map(|m| m.content.clone()).unwrap_or_default(),
            Prompt::Text(t) => t.clone(),
        };
        let text = match a.call.template.as_str() {
            "importance" => r#"{"rating": 3}"#.to_owned(),
            "day_plan" => r#"{"steps":[{"start":"07:00","activity":"get ready for the day","minutes":60},
                {"start":"08:00","activity":"work","minutes":240},{"start":"12:00","activity":"lunch","minutes":60},
                {"start":"13:00","activity":"work","minutes":240},{"start":"17:00","activity":"free time","minutes":300}]}"#
                .to_owned(),
            "hour_parts" => {
                let (from, to) = between(&user);
                format!(r#"{{"steps":[{{"start":"{}","activity":"the first part","minutes":{}}}]}}"#, hhmm(from), (to - from).clamp(15, 120))
            }
            "hour_plan" => {
                let (from, _) = between(&user);
                let steps: Vec<String> = (0..4)
                    .map(|i| format!(r#"{{"start":"{}","activity":"step {i}","minutes":15}}"#, hhmm(from + 15 * i)))
                    .collect();
                format!(r#"{{"steps":[{}]}}"#, steps.join(","))
            }
            "location" => {
                let options = user.lines().find_map(|l| l.strip_prefix("Options: ")).unwrap_or("");
                let first = options.split(" | ").next().unwrap_or("");
                format!(r#"{{"choice": {}}}"#, serde_json::to_string(first).unwrap())
            }
            "reflection_questions" => "What matters to them?\nWho do they see?\nWhat do they do?".into(),
            _ => "not an answer".into(),
        };
        Box::pin(async move {
            Ok(Completion {
                tokens_prompt: 50,
                tokens_completion: 10,
                text,
                finish_reason: "stop".into(),
                response_model: "rules".into(),
                response_id: String::new(),
            })
        })
    }
}

/// A test double: a 4-dimensional embedding from the text's length and letters.
struct LetterEmbedder;

impl EmbedBackend for LetterEmbedder {
    fn name(&self) -> &str {
        "letters-test-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "letters".into()
    }
    fn embed<'a>(
        &'a self,
        call: &'a EmbedCall,
        _: [u8; 32],
    ) -> BoxFuture<'a, Result<Vectors, BackendError>> {
        let vectors = call
            .texts
            .iter()
            .map(|t| {
                let n = |c: char| t.chars().filter(|x| x.eq_ignore_ascii_case(&c)).count() as f32;
                vec![n('a') + 1.0, n('e'), n('o'), t.len() as f32 / 10.0]
            })
            .collect();
        Box::pin(async move { Ok(Vectors { vectors, tokens: 4 }) })
    }
}

fn town() -> Definition {
    Definition::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/willowmere.toml"),
    )
    .unwrap()
}

fn run(gateway: Gateway, steps: usize) -> (tempfile::TempDir, Vec<hamlet_log::Event>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let events = rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", town(), 7, gateway, SimSettings::default()).await.unwrap();
        for _ in 0..steps {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    (tmp, events)
}

fn rules() -> Gateway {
    Gateway::new(
        Arc::new(RuleModel),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        4,
    )
}

#[test]
fn agents_plan_act_and_walk_and_the_same_answers_give_the_same_log() {
    let (_a, first) = run(rules(), 12);
    let count = |f: &dyn Fn(&Body) -> bool| first.iter().filter(|e| f(&e.body)).count();
    let agents = town().personas.len();
    assert_eq!(count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Day)), agents);
    assert!(count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Hour)) >= agents);
    assert!(count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Action)) >= agents);
    assert!(count(&|b| matches!(b, Body::ActionStarted(_))) >= agents, "every agent acts");
    assert!(count(&|b| matches!(b, Body::Moved(_))) > 0, "someone walks");
    assert!(count(&|b| matches!(b, Body::MemoryAdded(_))) > agents, "seeds and more");
    // Every action names the plan item it carries out, and that plan is in the log.
    for e in &first {
        if let Body::ActionStarted(a) = &e.body {
            let item = a.plan_item.expect("an action carries out a plan item");
            assert!(e.header.causes.contains(&item.plan));
            assert!(first.iter().any(|p| p.id == item.plan));
            assert!(!a.address.is_empty(), "{}", a.description);
        }
    }
    let ids = |events: &[hamlet_log::Event]| events.iter().map(|e| e.id).collect::<Vec<EventId>>();
    let (_b, second) = run(rules(), 12);
    assert!(ids(&first) == ids(&second), "same answers, same log");

    // Re-simulated against the recording, with no model at all: byte for byte the same.
    let bodies: Vec<Body> = first.iter().map(|e| e.body.clone()).collect();
    let replay = Arc::new(Replay::from_events(&bodies));
    let params = replay.recorded_params().unwrap_or_default();
    let gateway = Gateway::new(replay.clone(), replay.clone(), params, RetryPolicy::default(), 4);
    let (_c, again) = run(gateway, 12);
    let differ = first.iter().zip(&again).position(|(a, b)| a.id != b.id);
    if let Some(i) = differ {
        panic!("the re-simulation differs at #{i}:\n{:?}\n{:?}", first[i].body, again[i].body);
    }
    assert_eq!(first.len(), again.len(), "the re-simulation is identical");
    assert_eq!(replay.unused(), 0);
}
