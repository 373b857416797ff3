//! Each agent its own model: a persona's `model` sends that agent's calls to the model of
//! that name and everyone else's to the run's; an agent added with a model the run has
//! thinks with it, and one set to another model by hand thinks with that from then on; a
//! name the run has no model for is refused; and `resim` answers each call from the model
//! that answered it.

use std::sync::Arc;

use hamlet_engine::resim::{resimulate, Verdict};
use hamlet_engine::sim::{Sim, SimError, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::{Gateway, Params, RetryPolicy};
use hamlet_log::event::{AgentId, Intervention};
use hamlet_log::Body;
use hamlet_testkit::rules::{LetterEmbedder, SecondRuleModel};

use crate::sim::{rules, town};

fn second() -> Gateway {
    Gateway::new(
        Arc::new(SecondRuleModel),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        2,
    )
}

#[test]
fn each_agent_asks_the_model_its_persona_names_and_a_re_run_answers_each_from_its_own() {
    // The town's first persona thinks with `second`; the rest with the run's model.
    let source =
        town().source.replacen("strategy = \"full\"", "strategy = \"full\"\nmodel = \"second\"", 1);
    let mixed = Definition::parse("mixed.toml", &source).unwrap();
    let first = mixed.personas[0].name.clone();
    assert_eq!(mixed.personas[0].model.as_deref(), Some("second"));
    assert!(mixed.personas[1..].iter().all(|p| p.model.is_none()));

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let log = rt.block_on(async {
        let gateway = rules();
        gateway.add_model("second", second());
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", mixed, 7, gateway, SimSettings::default()).await.unwrap();
        for _ in 0..6 {
            sim.step().await.unwrap();
        }
        // A newcomer may think with a model the run has, and not with one it lacks.
        let dorm = "Reedbank dorm:common room";
        let ada = "Ada Brook is a new student at the college";
        let refused = sim.add_agent("Ada Brook", ada, dorm, "full", 0, Some("gpt-99")).await;
        assert!(matches!(refused, Err(SimError::Refused { field: "model", .. })), "{refused:?}");
        let added = sim.add_agent("Ada Brook", ada, dorm, "full", 0, Some("second")).await;
        assert!(added.is_ok(), "{added:?}");
        // The second persona, on the run's model so far, thinks with `second` from now on.
        let refused = sim.set_model(AgentId(1), "gpt-99");
        assert!(matches!(refused, Err(SimError::Refused { field: "model", .. })), "{refused:?}");
        sim.set_model(AgentId(1), "second").unwrap();
        for _ in 0..3 {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });

    let name_of = |agent: AgentId| {
        log.iter()
            .find_map(|e| match &e.body {
                Body::AgentJoined(j) if j.agent == agent => Some(j.name.clone()),
                _ => None,
            })
            .unwrap()
    };
    let (mut by_second, mut by_run) = (0, 0);
    let mut switched = false;
    let (mut agent1_before, mut agent1_after) = (0, 0);
    for e in &log {
        if let Body::Intervened(i) = &e.body {
            switched |= matches!(&i.intervention,
                Intervention::SetModel { agent: AgentId(1), model } if model == "second");
        }
        let Body::LlmRequested(r) = &e.body else { continue };
        let Some(agent) = r.agent else { continue };
        let name = name_of(agent);
        if agent == AgentId(1) {
            let expected = if switched { "rules-b" } else { "rules" };
            assert_eq!(r.model, expected, "agent 1's {} call", r.purpose);
            if switched {
                agent1_after += 1;
            } else {
                agent1_before += 1;
            }
            continue;
        }
        if name == first || name == "Ada Brook" {
            assert_eq!(r.model, "rules-b", "{name}'s {} call", r.purpose);
            by_second += 1;
        } else {
            assert_eq!(r.model, "rules", "{name}'s {} call", r.purpose);
            by_run += 1;
        }
    }
    assert!(by_second > 0 && by_run > 0, "{by_second} calls by `second`, {by_run} by the run's");
    assert!(agent1_before > 0 && agent1_after > 0, "{agent1_before} then {agent1_after}");
    // The newcomer's seed memories were rated by its own model.
    let ada = log.iter().find_map(|e| match &e.body {
        Body::AgentJoined(j) if j.name == "Ada Brook" => Some(j.agent),
        _ => None,
    });
    assert!(log.iter().any(|e| matches!(&e.body,
        Body::LlmRequested(r) if r.agent == ada && r.model == "rules-b")));

    let scratch = tempfile::tempdir().unwrap();
    match rt.block_on(resimulate(&log, scratch.path(), |_, _| {})).unwrap() {
        Verdict::Identical { events } => assert_eq!(events, log.len()),
        other => panic!("the re-run parted: {other:?}"),
    }
}

#[test]
fn an_agent_routed_to_a_model_the_run_lacks_fails_its_calls_saying_so() {
    let source = town().source.replacen(
        "strategy = \"full\"",
        "strategy = \"full\"\nmodel = \"nowhere\"",
        1,
    );
    let town = Definition::parse("lacking.toml", &source).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let failed: Option<SimError> = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            match Sim::start(store, "main", town, 7, rules(), SimSettings::default()).await {
                Ok(sim) => sim,
                Err(e) => return Some(e),
            };
        for _ in 0..20 {
            if let Err(e) = sim.step().await {
                return Some(e);
            }
        }
        None
    });
    let message = failed.expect("the agent's first call fails").to_string();
    assert!(message.contains("no model named `nowhere`"), "{message}");
}

#[test]
fn a_model_name_is_one_word() {
    for (bad, why) in [("", "empty"), ("gpt 4", "one word"), ("a/b", "one word")] {
        let source = town().source.replacen(
            "strategy = \"full\"",
            &format!("strategy = \"full\"\nmodel = \"{bad}\""),
            1,
        );
        let e = Definition::parse("bad.toml", &source).unwrap_err().to_string();
        assert!(e.contains(".model") && e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn each_model_learns_from_its_own_calls_what_its_server_takes() {
    use hamlet_log::event::StructuredForm;
    let gateway = rules();
    let b = second();
    gateway.add_model("second", b.clone());
    let first_form = gateway.structured_form();
    assert_eq!(first_form, b.structured_form(), "the two doubles start alike");
    assert_ne!(first_form, StructuredForm::JsonObject);
    // A call to `rules-b` answered in a form further down the list (its server refused the
    // ones before): `second` learns it, the run's own model does not.
    let samples = hamlet_log::samples::one_body_per_kind();
    let pick = |f: fn(&Body) -> bool| samples.iter().find(|b| f(b)).unwrap().clone();
    let mut requested = pick(|b| matches!(b, Body::LlmRequested(_)));
    let mut responded = pick(|b| matches!(b, Body::LlmResponded(_)));
    if let (Body::LlmRequested(r), Body::LlmResponded(a)) = (&mut requested, &mut responded) {
        (r.model, r.structured, r.request_hash) =
            ("rules-b".into(), StructuredForm::JsonObject, [9; 32]);
        (a.request_hash, a.fallback, a.parsed) = ([9; 32], false, Some("{}".into()));
    }
    gateway.learn_from([&requested, &responded]);
    assert_eq!(b.structured_form(), StructuredForm::JsonObject, "`second` learned its server's");
    assert_eq!(gateway.structured_form(), first_form, "the run's own model learned nothing");
    assert_eq!(gateway.models(), vec![("second".to_owned(), "rules-b".to_owned())]);
}
