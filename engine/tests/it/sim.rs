//! The simulation loop over the shipped town with a rule-based test double for the model:
//! agents plan, decompose, choose places, act, walk, react to each other, talk and re-plan;
//! the same answers give the same log, byte for byte, and so does a re-simulation against
//! the recording with no model; strategies switch reflection and planning off per agent; a
//! run interrupted between steps or inside one resumes to the same log.

use std::sync::Arc;

use hamlet_engine::mind::think::ReflectionSettings;
use hamlet_engine::rulebook::{Mechanism, Rulebook};
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Gateway, Params, RetryPolicy};
use hamlet_log::event::{AgentId, CommitmentMade, MemoryKind, PlanLevel};
use hamlet_log::{Body, EventId};

use crate::rules::{LetterEmbedder, RuleModel};

pub(crate) fn town() -> Definition {
    hamlet_engine::town::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/willowmere.toml"),
    )
    .unwrap()
}

fn run(gateway: Gateway, steps: usize) -> (tempfile::TempDir, Vec<hamlet_log::Event>) {
    run_town(town(), SimSettings::default(), gateway, steps)
}

pub(crate) fn run_town(
    town: Definition,
    settings: SimSettings,
    gateway: Gateway,
    steps: usize,
) -> (tempfile::TempDir, Vec<hamlet_log::Event>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let events = rt.block_on(async {
        let mut sim = Sim::start(store, "main", town, 7, gateway, settings).await.unwrap();
        for _ in 0..steps {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    (tmp, events)
}

/// Asserts that the engine run again over `log` with every answer from it makes the same
/// events, id for id.
pub(crate) fn assert_resim_identical(log: &[hamlet_log::Event]) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    match rt.block_on(hamlet_engine::resim::resimulate(log, scratch.path(), |_, _| {})).unwrap() {
        hamlet_engine::resim::Verdict::Identical { events } => assert_eq!(events, log.len()),
        other => panic!("the re-run parted: {other:?}"),
    }
}

pub(crate) fn rules() -> Gateway {
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
    // The shipped town runs the full architecture for everyone; one agent here plans
    // nothing ahead, so both ways of acting are in the log.
    let mixed = town().source.replacen(
        "strategy = \"full\"",
        "strategy = \"no_reflection_no_planning\"",
        1,
    );
    let mixed = Definition::parse("mixed.toml", &mixed).unwrap();
    let (_a, first) = run_town(mixed.clone(), SimSettings::default(), rules(), 12);
    let count = |f: &dyn Fn(&Body) -> bool| first.iter().filter(|e| f(&e.body)).count();
    let agents = mixed.personas.len();
    let planners =
        mixed.personas.iter().filter(|p| p.strategy != "no_reflection_no_planning").count();
    assert_eq!(planners + 1, agents);
    // One day plan each, and one again for each commitment made for today.
    let revised = first
        .iter()
        .filter(|e| {
            matches!(&e.body, Body::PlanMade(p) if p.level == PlanLevel::Day)
                && e.header.causes.iter().any(|c| {
                    first.iter().any(|x| x.id == *c && matches!(x.body, Body::CommitmentMade(_)))
                })
        })
        .count();
    assert_eq!(
        count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Day)),
        planners + revised
    );
    assert!(count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Hour)) >= planners);
    assert!(count(&|b| matches!(b, Body::PlanMade(p) if p.level == PlanLevel::Action)) >= agents);
    assert!(count(&|b| matches!(b, Body::ActionStarted(_))) >= agents, "every agent acts");
    assert!(count(&|b| matches!(b, Body::Moved(_))) > 0, "someone walks");
    assert!(count(&|b| matches!(b, Body::MemoryAdded(_))) > agents, "seeds and more");
    // Every action names the plan item it carries out (or the conversation it follows),
    // and that plan is in the log.
    for e in &first {
        if let Body::ActionStarted(a) = &e.body {
            if a.description.starts_with("talking with") {
                assert!(a.plan_item.is_none());
                continue;
            }
            let item = a.plan_item.expect("an action carries out a plan item");
            assert!(e.header.causes.contains(&item.plan));
            assert!(first.iter().any(|p| p.id == item.plan));
            assert!(!a.address.is_empty(), "{}", a.description);
        }
    }
    // From an action back to the prompt that planned it: action → its plan → the answer →
    // the request, whose prompt names the hour being broken down.
    let by_id: std::collections::BTreeMap<EventId, &hamlet_log::Event> =
        first.iter().map(|e| (e.id, e)).collect();
    let action = first
        .iter()
        .find(|e| matches!(&e.body, Body::ActionStarted(a) if a.plan_item.is_some()))
        .expect("an action");
    let mut frontier = action.header.causes.clone();
    let mut seen = std::collections::BTreeSet::new();
    let mut prompts = std::collections::BTreeMap::new();
    while let Some(id) = frontier.pop() {
        if !seen.insert(id) {
            continue;
        }
        let e = by_id[&id];
        if let Body::LlmRequested(r) = &e.body {
            prompts.entry(r.purpose.clone()).or_insert_with(|| format!("{:?}", r.prompt));
        }
        frontier.extend(e.header.causes.iter().copied());
    }
    let planned = prompts.get("hour_plan").expect("the action leads back to its plan's prompt");
    assert!(planned.contains("concrete actions") && planned.contains("Times: "), "{planned}");
    assert!(prompts.contains_key("location"), "and to the choice of its place: {prompts:?}");
    let ids = |events: &[hamlet_log::Event]| events.iter().map(|e| e.id).collect::<Vec<EventId>>();
    let (_b, second) = run_town(mixed.clone(), SimSettings::default(), rules(), 12);
    assert!(ids(&first) == ids(&second), "same answers, same log");

    // Re-simulated against the recording, with no model at all: byte for byte the same.
    let bodies: Vec<Body> = first.iter().map(|e| e.body.clone()).collect();
    let replay = Arc::new(Replay::from_events(&bodies));
    let params = replay.recorded_params().unwrap_or_default();
    let gateway = Gateway::new(replay.clone(), replay.clone(), params, RetryPolicy::default(), 4);
    let (_c, again) = run_town(mixed, SimSettings::default(), gateway, 12);
    let differ = first.iter().zip(&again).position(|(a, b)| a.id != b.id);
    if let Some(i) = differ {
        panic!("the re-simulation differs at #{i}:\n{:?}\n{:?}", first[i].body, again[i].body);
    }
    assert_eq!(first.len(), again.len(), "the re-simulation is identical");
    assert_eq!(replay.unused(), 0);
}

#[test]
fn agents_who_meet_react_talk_in_turn_remember_it_and_replan() {
    // Without commitments, every talk re-plans the rest of the hour (with them, a
    // commitment for today re-plans the day instead: see the next test).
    // (Without inviting, too: the host would otherwise go to talk without a question, as
    // `a_hosted_event_is_the_hosts_appointment_and_whom_she_meets_she_invites` shows.)
    let rulebook = Rulebook::CURRENT
        .without(Mechanism::Commitments)
        .and_then(|r| r.without(Mechanism::Inviting))
        .unwrap();
    let settings = SimSettings { rulebook, ..SimSettings::default() };
    let (_a, log) = run_town(town(), settings, rules(), 12);
    let by_id = |id: EventId| log.iter().find(|e| e.id == id).expect("a cause is in the log");
    let started: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::ConversationStarted(c) => Some((e, c)),
            _ => None,
        })
        .collect();
    assert!(!started.is_empty(), "agents who see each other talk");
    let mut replans = 0;
    for (event, conversation) in &started {
        // Started because the first agent decided to react: the cause is its yes.
        let cause = by_id(event.header.causes[0]);
        assert!(
            matches!(&cause.body, Body::LlmResponded(r) if r.text.contains("yes")),
            "{:?}",
            cause.body
        );
        let turns: Vec<_> = log
            .iter()
            .filter_map(|e| match &e.body {
                Body::DialogueTurn(t) if t.conversation == event.id => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(turns.len(), 3, "the double ends on the third line");
        for (i, t) in turns.iter().enumerate() {
            assert_eq!(t.speaker, conversation.agents[i % 2], "speakers alternate");
        }
        assert!(turns[2].ends && !turns[0].ends);
        let ended = log
            .iter()
            .find(|e| matches!(&e.body, Body::ConversationEnded(x) if x.conversation == event.id))
            .expect("the conversation ends");
        // Both remember what was said (so it can spread), caused by the end.
        for agent in &conversation.agents {
            let memory = log.iter().find(|e| {
                matches!(&e.body, Body::MemoryAdded(m) if m.agent == *agent
                    && m.kind == MemoryKind::Chat
                    && m.description.contains("the market opens late on Sunday"))
                    && e.header.causes.contains(&ended.id)
            });
            assert!(memory.is_some(), "{agent:?} remembers the conversation");
            // ...where it was: by rulebook 9 the open ground is "the roadside", never "at .".
            let place = match conversation.address.as_str() {
                "" => "the roadside".to_owned(),
                address => address.replace(':', ", "),
            };
            let Some(Body::MemoryAdded(m)) = memory.map(|e| &e.body) else { unreachable!() };
            assert!(m.description.contains(&format!(" at {place}. ")), "{}", m.description);
            // ...and, if it was acting on an hour's actions, re-plans the rest of the hour
            // from the end of the talk.
            let acting = log.iter().any(|e| {
                e.header.seq < event.header.seq
                    && matches!(&e.body, Body::PlanMade(p) if p.agent == *agent
                        && p.level == PlanLevel::Action)
            });
            let replan = log.iter().find(|e| {
                e.header.seq > ended.header.seq
                    && matches!(&e.body, Body::PlanMade(p) if p.agent == *agent
                        && p.level == PlanLevel::Action
                        && p.items.first().is_some_and(|i| i.start_secs > ended.sim_time_secs()))
            });
            if acting {
                assert!(replan.is_some(), "{agent:?} re-plans after talking");
                replans += 1;
                // At the hour's place, as its actions were planned (not wherever the agent
                // went for an action done at home).
                let Some(Body::PlanMade(again)) = replan.map(|e| &e.body) else { unreachable!() };
                let before = log.iter().rev().find_map(|e| match &e.body {
                    Body::PlanMade(p)
                        if e.header.seq < event.header.seq
                            && p.agent == *agent
                            && p.decomposes == again.decomposes =>
                    {
                        Some(p)
                    }
                    _ => None,
                });
                let before = before.expect("the hour's actions were planned before the talk");
                assert_eq!(again.items[0].address, before.items[0].address);
            }
        }
    }
    assert!(replans > 0, "a conversation interrupted someone's actions");
    // The same pair does not start again within the cooldown.
    let mut pairs: Vec<_> = started.iter().map(|(_, c)| c.agents.clone()).collect();
    pairs.iter_mut().for_each(|p| p.sort());
    let n = pairs.len();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), n);
}

#[test]
fn what_was_agreed_in_a_talk_is_noted_committed_and_kept_in_the_days_plan() {
    // (Without the host's invitations: what is agreed here comes from the talk itself.)
    let rulebook = Rulebook::CURRENT.without(Mechanism::Inviting).unwrap();
    let settings = SimSettings { rulebook, ..SimSettings::default() };
    let (_a, log) = run_town(town(), settings, rules(), 12);
    let by_id = |id: EventId| log.iter().find(|e| e.id == id).expect("a cause is in the log");
    let commitments: Vec<(&hamlet_log::Event, &CommitmentMade)> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::CommitmentMade(c) => Some((e, c)),
            _ => None,
        })
        .collect();
    assert!(!commitments.is_empty(), "the double's talks arrange to meet");
    for (event, c) in &commitments {
        // Made from the answer of a `talk_notes` call about that conversation.
        let answer = by_id(event.header.causes[0]);
        assert!(matches!(&answer.body, Body::LlmResponded(_)), "{:?}", answer.body);
        assert!(matches!(by_id(c.conversation).body, Body::ConversationStarted(_)));
        assert!(c.start_secs > event.sim_time_secs(), "agreed for later");
        assert!(c.address.starts_with("Fernside market:"), "{}", c.address);
        // Remembered, and kept: the agent's next day plan holds it as an item of its own.
        assert!(log.iter().any(|e| matches!(&e.body, Body::MemoryAdded(m) if m.agent == c.agent
            && m.kind == MemoryKind::Plan && m.description.contains("agreed with"))));
        let kept = log.iter().find(|e| {
            e.header.seq > event.header.seq
                && matches!(&e.body, Body::PlanMade(p) if p.agent == c.agent && p.level == PlanLevel::Day)
        });
        let Some(Body::PlanMade(day)) = kept.map(|e| &e.body) else {
            panic!("{:?} plans its day again around the commitment", c.agent)
        };
        assert!(day.items.iter().any(|i| i.start_secs == c.start_secs
            && i.duration_secs == c.duration_secs
            && i.address == c.address
            && i.description == c.what));
        // The day stays covered: each item ends where the next begins.
        for w in day.items.windows(2) {
            assert_eq!(w[0].start_secs + u64::from(w[0].duration_secs), w[1].start_secs);
        }
    }
    // Planning notes are remembered by both.
    let notes = log
        .iter()
        .filter(|e| {
            matches!(&e.body, Body::MemoryAdded(m) if m.description.starts_with("For ")
            && m.description.contains("'s planning: "))
        })
        .count();
    assert!(notes >= 2, "{notes}");
    // What each speaker wanted from the talk was asked before its first line, once each.
    let intentions = log
        .iter()
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "intention"))
        .count();
    let talks = log.iter().filter(|e| matches!(e.body, Body::ConversationStarted(_))).count();
    assert_eq!(intentions, 2 * talks);
    // And each conversation was written with both.
    let turn = log
        .iter()
        .find_map(|e| match &e.body {
            Body::LlmRequested(r) if r.template == "script" => Some(r),
            _ => None,
        })
        .unwrap();
    let hamlet_log::event::Prompt::Chat(messages) = &turn.prompt else { panic!() };
    assert!(
        messages[1].content.contains("wants from this talk: to tell the other that the market"),
        "{}",
        messages[1].content
    );
}

#[test]
fn strategies_switch_reflection_and_planning_off_per_agent() {
    let source = town().source.clone();
    let edited = source
        .replacen("strategy = \"full\"", "strategy = \"no_reflection\"", 1)
        .replacen("strategy = \"full\"", "strategy = \"no_reflection_no_planning\"", 1);
    let town = Definition::parse("strategies.toml", &edited).unwrap();
    let settings = SimSettings {
        reflection: ReflectionSettings { threshold: 20, ..ReflectionSettings::default() },
        ..SimSettings::default()
    };
    let (_a, log) = run_town(town, settings, rules(), 20);
    let (plain, moment, full) = (AgentId(0), AgentId(1), AgentId(2));
    let reflected = |a: AgentId| {
        log.iter().any(|e| matches!(&e.body, Body::ReflectionStarted(r) if r.agent == a))
    };
    assert!(reflected(full), "the full architecture reflects past a low threshold");
    assert!(!reflected(plain) && !reflected(moment), "the ablations never reflect");
    let plans = |a: AgentId, level: PlanLevel| {
        log.iter()
            .filter(|e| matches!(&e.body, Body::PlanMade(p) if p.agent == a && p.level == level))
            .count()
    };
    assert!(plans(plain, PlanLevel::Day) >= 1, "no reflection still plans the day");
    assert_eq!(plans(moment, PlanLevel::Day), 0, "no planning: no day plan");
    assert_eq!(plans(moment, PlanLevel::Hour), 0);
    let loose: Vec<EventId> = log
        .iter()
        .filter(|e| {
            matches!(&e.body, Body::PlanMade(p) if p.agent == moment && p.decomposes.is_none()
                && p.level == PlanLevel::Action && !p.items.is_empty())
        })
        .map(|e| e.id)
        .collect();
    assert_eq!(loose.len(), 1, "no planning: actions decided a quarter hour at a time");
    let acted = log.iter().any(|e| {
        matches!(&e.body, Body::ActionStarted(a) if a.agent == moment
            && a.plan_item.is_some_and(|i| loose.contains(&i.plan)))
    });
    assert!(acted, "and carried out");
}

#[test]
fn a_run_interrupted_anywhere_resumes_to_the_same_log() {
    let steps = 8;
    let (_a, whole) = run(rules(), steps);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Cut the log after every kind of place a run can stop: after a clock step (its thinking not
    // yet written), after the agents' batch with a conversation just started (its lines not
    // yet written), and between steps.
    let clock_step = whole.iter().rposition(|e| matches!(e.body, Body::ClockStepped(_))).unwrap();
    // (A batch is written whole or not at all: cut after the last conversation it starts.)
    let mut talk =
        whole.iter().position(|e| matches!(e.body, Body::ConversationStarted(_))).unwrap();
    while matches!(whole[talk + 1].body, Body::ConversationStarted(_)) {
        talk += 1;
    }
    let between = whole.iter().position(|e| matches!(e.body, Body::ClockStepped(_))).unwrap() - 1;
    for cut in [clock_step + 1, talk + 1, between + 1] {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = Store::open(tmp.path()).unwrap();
        let branch = store.create_root("main").unwrap();
        let copy: Vec<_> = whole[1..cut]
            .iter()
            .map(|e| {
                let mut n = hamlet_log::NewEvent::new(e.sim_time_secs(), e.body.clone());
                n.causes = e.header.causes.clone();
                n
            })
            .collect();
        store.append_durable(branch, &copy).unwrap();
        let events = rt.block_on(async {
            let mut sim =
                Sim::resume(store, branch, rules(), SimSettings::default()).await.unwrap();
            while sim.state().step < steps as u64 || sim.mid_step() {
                sim.step().await.unwrap();
            }
            let head = sim.store().branch(sim.branch()).unwrap().head_seq;
            sim.store().events(sim.branch(), 0, head).unwrap()
        });
        let differ = whole.iter().zip(&events).position(|(a, b)| a.id != b.id);
        if let Some(i) = differ {
            panic!("cut at #{cut}: differs at #{i}:\n{:?}\n{:?}", whole[i].body, events[i].body);
        }
        assert_eq!(whole.len(), events.len(), "cut at #{cut}");
    }
}

#[test]
fn on_waking_each_agent_describes_itself_from_memory_and_plans_its_day_from_that() {
    let (_a, events) = run(rules(), 1);
    let agents = town().personas.len();
    let asked: Vec<&hamlet_log::event::LlmRequested> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.template == "summary" => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), agents, "one summary per agent on its first waking step");
    // From three retrievals: who it is, what it does each day, how life is going.
    let queries: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::Retrieved(r) if r.query.contains("at heart") => Some(r.query.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(queries.len(), agents);
    // The day plan is made from the description just written, not the seed paragraph.
    let day_plans: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.template == "day_plan" => Some(format!("{:?}", r.prompt)),
            _ => None,
        })
        .collect();
    assert!(!day_plans.is_empty());
    for prompt in &day_plans {
        assert!(prompt.contains("keeps the café and cares about the market"), "{prompt}");
    }
    // Once a day: the next steps ask for no summary.
    let (_b, later) = run(rules(), 6);
    let summaries = later
        .iter()
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "summary"))
        .count();
    assert_eq!(summaries, agents);
}

#[test]
fn while_everyone_sleeps_the_clock_skips_to_the_first_waking_in_one_tick() {
    let mut town = town();
    town.start_secs = 5 * 3600; // day 0, 05:00: two hours before anyone wakes
    let (_a, events) = run_town(town.clone(), SimSettings::default(), rules(), 2);
    let clock_steps: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::ClockStepped(c) => Some((c.step, e.sim_time_secs())),
            _ => None,
        })
        .collect();
    let per_step = u64::from(town.seconds_per_step);
    assert_eq!(
        clock_steps[0],
        (7 * 3600 / per_step - 5 * 3600 / per_step, 7 * 3600),
        "{clock_steps:?}"
    );
    assert_eq!(
        clock_steps[1],
        (clock_steps[0].0 + 1, 7 * 3600 + per_step),
        "awake: one step at a time"
    );
    let asked_before_waking = events.iter().any(|e| {
        matches!(&e.body, Body::LlmRequested(r) if r.template != "ratings" && r.template != "importance")
            && e.sim_time_secs() < 7 * 3600
    });
    assert!(!asked_before_waking, "nobody thinks in their sleep");
}

#[test]
fn why_walks_from_an_action_to_its_prompts_and_the_memories_recalled_with_their_scores() {
    use hamlet_engine::why::{CauseIndex, WhyLink};
    let (_a, events) = run(rules(), 12);
    let history = CauseIndex::new(&events);
    let end = events.last().unwrap().seq();
    // Someone talked (the double says yes to every reaction): its action's why goes back
    // through the conversation to the lines' prompts and what the speakers recalled.
    let talker = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            Body::ActionStarted(a) if a.description.starts_with("talking with") => Some(a.agent),
            _ => None,
        })
        .expect("a conversation in twelve steps");
    let seq = events
        .iter()
        .rev()
        .find(|e| matches!(&e.body, Body::ActionStarted(a) if a.agent == talker && a.description.starts_with("talking with")))
        .unwrap()
        .seq();
    let why = history.why(talker, seq, 10_000).unwrap();
    assert!(!why.truncated);
    assert_eq!(why.graph[why.root].kind, "ActionStarted");
    let kinds: Vec<&str> = why.graph.node_weights().map(|n| n.kind.as_str()).collect();
    for kind in [
        "ConversationEnded",
        "DialogueTurn",
        "LlmRequested",
        "LlmResponded",
        "Retrieved",
        "MemoryAdded",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let recalled: Vec<&WhyLink> =
        why.graph.edge_weights().filter(|l| matches!(l, WhyLink::Recalled { .. })).collect();
    assert!(!recalled.is_empty(), "retrievals lead to the memories they returned");
    for link in recalled {
        let WhyLink::Recalled { recency, importance, relevance, .. } = link else { unreachable!() };
        for s in [recency, importance, relevance] {
            assert!((0.0..=1.0).contains(s), "normalised scores: {link:?}");
        }
    }
    let prompts = why.graph.node_weights().filter(|n| n.kind == "LlmRequested").count();
    assert!(prompts >= 2, "the lines and the decision to talk");
    assert!(why.depth() >= 4, "a chain, not a star: {}", why.depth());
    let tree = why.tree(true);
    assert!(tree.contains("recalled (score "), "{tree}");
    assert!(
        tree.contains("(see above)")
            || why.graph.node_count() == tree.lines().filter(|l| !l.contains('│')).count()
    );
    // A node limit stops the walk and says so.
    let small = history.why(talker, seq, 3).unwrap();
    assert!(small.truncated && small.graph.node_count() == 3);
    assert!(small.tree(false).contains("raise --max-nodes"));
    // Before an agent acted there is nothing to explain.
    let first = events.iter().position(|e| matches!(&e.body, Body::ActionStarted(_))).unwrap();
    let someone = match &events[first].body {
        Body::ActionStarted(a) => a.agent,
        _ => unreachable!(),
    };
    assert!(history.why(someone, events[first].seq() - 1, 10).is_err());
    assert!(history.why(someone, end, 10).is_ok());
}

#[test]
fn after_midnight_nobody_acts_until_waking_then_the_summary_comes_before_the_day_plan() {
    let mut town = town();
    town.start_secs = 23 * 3600 + 50 * 60; // day 0, 23:50
    let per_step = u64::from(town.seconds_per_step);
    // Ten minutes to midnight, the skip to 07:00, and a step of the new day.
    let steps = (600 / per_step) as usize + 2;
    let (_a, events) = run_town(town, SimSettings::default(), rules(), steps);
    let day1 = 86_400;
    let clock_steps: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.body, Body::ClockStepped(_)))
        .map(|e| e.sim_time_secs())
        .collect();
    assert!(
        clock_steps.contains(&(day1 + 7 * 3600)),
        "the night is one clock step: {:?}",
        &clock_steps[clock_steps.len() - 3..]
    );
    assert!(
        !clock_steps.iter().any(|&t| t > day1 && t < day1 + 7 * 3600),
        "no step between midnight and waking"
    );
    let asleep = events.iter().any(|e| {
        e.sim_time_secs() >= day1
            && e.sim_time_secs() < day1 + 7 * 3600
            && matches!(&e.body, Body::LlmRequested(_) | Body::ActionStarted(_) | Body::PlanMade(_))
    });
    assert!(!asleep, "nothing is decided before waking");
    // On day 1: each planner's summary, then its day plan, made from it and from yesterday's.
    let by_id: std::collections::BTreeMap<EventId, &hamlet_log::Event> =
        events.iter().map(|e| (e.id, e)).collect();
    let day_plans: Vec<&hamlet_log::Event> = events
        .iter()
        .filter(|e| e.sim_time_secs() >= day1)
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "day_plan"))
        .collect();
    assert!(!day_plans.is_empty());
    for request in day_plans {
        let Body::LlmRequested(r) = &request.body else { unreachable!() };
        let prompt = format!("{:?}", r.prompt);
        assert!(prompt.contains("keeps the café"), "from the summary: {prompt}");
        assert!(
            prompt.contains(
                "planned: 07:00 wakes up and gets ready for the day (60 min); 08:00 work"
            ),
            "and yesterday: {prompt}"
        );
        let cause = request.header.causes.first().map(|c| &by_id[c].body);
        assert!(
            matches!(cause, Some(Body::LlmResponded(_))),
            "the day plan names the summary's answer as its cause: {cause:?}"
        );
    }
}

#[test]
fn a_run_resimulates_identically_with_its_interventions_and_the_first_difference_is_found() {
    use hamlet_engine::resim::{resimulate, Verdict};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    // Not the store's first root: its id depends on that, and the re-run makes it again.
    store.create_root("an earlier run").unwrap();
    let events = rt.block_on(async {
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..6 {
            sim.step().await.unwrap();
        }
        // Renamed between steps, twice: made again where it was, the run goes on the same.
        sim.rename_branch("high-street").unwrap();
        let tamsin = *sim.state().agents.iter().find(|(_, a)| a.name == "Tamsin Hale").unwrap().0;
        sim.inner_voice(tamsin, "You want to bake bread for the neighbours").await.unwrap();
        sim.interview(tamsin, "What are you doing today?", true).await.unwrap();
        for _ in 0..2 {
            sim.step().await.unwrap();
        }
        sim.rename_branch("evening").unwrap();
        for _ in 0..2 {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    assert!(events.iter().any(|e| matches!(e.body, Body::Intervened(_))));
    assert_eq!(events.iter().filter(|e| matches!(e.body, Body::BranchRenamed(_))).count(), 2);
    let resim = |recorded: &[hamlet_log::Event]| {
        let scratch = tempfile::tempdir().unwrap();
        rt.block_on(resimulate(recorded, scratch.path(), |_, _| {})).unwrap()
    };
    match resim(&events) {
        Verdict::Identical { events: n } => assert_eq!(n, events.len()),
        Verdict::Diverged(d) => panic!("{d:?}"),
    }

    // A recording that stops part way through a step (after its clock step) is reproduced whole.
    let clock_step = events.iter().rposition(|e| matches!(e.body, Body::ClockStepped(_))).unwrap();
    match resim(&events[..=clock_step]) {
        Verdict::Identical { events: n } => assert_eq!(n, clock_step + 1),
        Verdict::Diverged(d) => panic!("{d:?}"),
    }

    // A recorded event that is not what the engine makes: found where it is.
    let k = events.iter().rposition(|e| matches!(e.body, Body::MemoryAdded(_))).unwrap();
    let mut changed = events.clone();
    changed[k].id.0[0] ^= 1;
    match resim(&changed) {
        Verdict::Diverged(d) => {
            assert_eq!(d.index, k);
            assert_eq!(d.produced.as_ref().map(|e| e.id), Some(events[k].id));
        }
        other => panic!("{other:?}"),
    }

    // A question the recording never answered (as when a prompt changed): the engine stops
    // there, and says what differs from the nearest recorded question.
    let k = events
        .iter()
        .position(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "hour_plan"))
        .unwrap();
    let Body::LlmRequested(asked) = &events[k].body else { unreachable!() };
    let hash = asked.request_hash;
    let mut unanswered = events.clone();
    for e in &mut unanswered {
        match &mut e.body {
            Body::LlmRequested(r) if r.request_hash == hash => r.request_hash = [0; 32],
            Body::LlmResponded(r) if r.request_hash == hash => r.request_hash = [0; 32],
            Body::LlmFailed(r) if r.request_hash == hash => r.request_hash = [0; 32],
            _ => {}
        }
    }
    match resim(&unanswered) {
        Verdict::Diverged(d) => {
            assert_eq!(d.index, k, "{d:?}");
            let cause = d.cause.expect("the replay says why");
            assert!(cause.contains("hour_plan"), "{cause}");
        }
        other => panic!("{other:?}"),
    }
}

/// Goal: renames re-simulate where they were made, on both sides of a fork, and an
/// ancestor's rename never names the fork. Method: the rule-based run renamed, then forked
/// after the rename (so the rename is in the fork's history); the fork run on, renamed
/// itself, run on; both histories re-simulated.
#[test]
fn a_fork_of_a_renamed_run_renamed_in_turn_resimulates_identically() {
    use hamlet_engine::resim::{resimulate, Verdict};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (parent, fork) = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..3 {
            sim.step().await.unwrap();
        }
        sim.rename_branch("high-street").unwrap();
        sim.step().await.unwrap();
        let main = sim.branch();
        let mut store = sim.into_store();
        let head = store.branch(main).unwrap().head_seq;
        let fork = store.fork(main, head, "what-if").unwrap();
        let mut sim = Sim::resume(store, fork, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..2 {
            sim.step().await.unwrap();
        }
        sim.rename_branch("plan-b").unwrap();
        for _ in 0..2 {
            sim.step().await.unwrap();
        }
        let store = sim.into_store();
        let names: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["high-street", "plan-b"], "the parent's rename is not the fork's");
        let history = |id| store.events(id, 0, store.branch(id).unwrap().head_seq).unwrap();
        (history(main), history(fork))
    });
    let made_again: [(&[hamlet_log::Event], &[&str]); 2] =
        [(&parent, &["high-street"]), (&fork, &["high-street", "plan-b"])];
    for (log, want) in made_again {
        let scratch = tempfile::tempdir().unwrap();
        match rt.block_on(resimulate(log, scratch.path(), |_, _| {})).unwrap() {
            Verdict::Identical { events } => assert_eq!(events, log.len()),
            Verdict::Diverged(d) => panic!("{d:?}"),
        }
        let again = Store::open(scratch.path()).unwrap();
        let mut names: Vec<String> = again.branches().into_iter().map(|b| b.name).collect();
        names.sort();
        assert_eq!(names, want, "made again under the names it had");
    }
}

fn echoing() -> Gateway {
    Gateway::new(
        Arc::new(crate::rules::ECHOING_RULES),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        4,
    )
}

/// Why each conversation of `log` ended, in order (at least one).
fn end_reasons(log: &[hamlet_log::Event]) -> Vec<&str> {
    let ended: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::ConversationEnded(c) => Some(c.reason.as_str()),
            _ => None,
        })
        .collect();
    assert!(!ended.is_empty(), "people talked");
    ended
}

#[test]
fn a_conversation_written_whole_is_said_without_its_repeats() {
    let (_a, log) = run(echoing(), 12);
    let ended = end_reasons(&log);
    for reason in &ended {
        assert!(reason.ends_with("ended it (2 faulty lines left out)"), "{reason}");
    }
    // The script said the greeting three times; it was asked again once with what was wrong,
    // then said without its repeats.
    let turns = log.iter().filter(|e| matches!(e.body, Body::DialogueTurn(_))).count();
    assert_eq!(turns, ended.len(), "the greeting alone is said");
    let scripts: Vec<&hamlet_log::event::LlmRequested> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.template == "script" => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(scripts.len(), 2 * ended.len());
    let hamlet_log::event::Prompt::Chat(messages) = &scripts[1].prompt else { panic!() };
    assert!(messages[1].content.contains("was not used"), "{}", messages[1].content);
    assert!(messages[1].content.contains("says again what was already said"));
}

#[test]
fn a_conversation_that_echoes_itself_ends_at_the_first_repeat() {
    // Line by line, as rulebook 4 talks.
    let settings = SimSettings {
        rulebook: hamlet_engine::rulebook::Rulebook::numbered(4).unwrap(),
        ..SimSettings::default()
    };
    let (_a, log) = run_town(town(), settings, echoing(), 12);
    let ended = end_reasons(&log);
    for reason in &ended {
        assert!(reason.ends_with("had nothing new to say"), "{reason}");
    }
    let turns: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::DialogueTurn(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(turns.len(), 2 * ended.len(), "a greeting, then the echo's turn");
    let said = turns.iter().filter(|t| !t.is_empty()).count();
    assert_eq!(said, ended.len(), "the echo is recorded as silence, never said");
}

#[test]
fn a_run_decides_by_the_rulebook_it_started_with_and_knows_the_towns_public_places() {
    use hamlet_engine::rulebook::Rulebook;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let configured = |events: &[hamlet_log::Event]| {
        events.iter().find_map(|e| match &e.body {
            Body::RunConfigured(c) => Some(c.settings.clone()),
            _ => None,
        })
    };
    rt.block_on(async {
        // A run by the first rulebook (as every run before rulebooks were numbered) records
        // none; resumed by an engine whose new runs take the current one, it keeps the first.
        let first = SimSettings { rulebook: Rulebook::FIRST, ..SimSettings::default() };
        let store = Store::open(tmp.path()).unwrap();
        let mut sim = Sim::start(store, "old", town(), 7, rules(), first).await.unwrap();
        sim.step().await.unwrap();
        let old = sim.branch();
        let head = sim.store().branch(old).unwrap().head_seq;
        let events = sim.store().events(old, 0, head).unwrap();
        let settings = configured(&events).unwrap();
        assert!(settings.iter().all(|(k, _)| k != "rulebook"), "{settings:?}");
        let store = sim.into_store();
        let sim = Sim::resume(store, old, rules(), SimSettings::default()).await.unwrap();
        assert_eq!(sim.rulebook(), Rulebook::FIRST);

        // A new run records the current rulebook, and a resumed one reads it back.
        let store = sim.into_store();
        let mut sim =
            Sim::start(store, "new", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..12 {
            sim.step().await.unwrap();
        }
        let new = sim.branch();
        let head = sim.store().branch(new).unwrap().head_seq;
        let events = sim.store().events(new, 0, head).unwrap();
        let settings = configured(&events).unwrap();
        let recorded = ("rulebook".to_owned(), Rulebook::CURRENT.number().to_string());
        assert!(settings.contains(&recorded), "{settings:?}");
        let mut sorted = settings.clone();
        sorted.sort();
        assert_eq!(settings, sorted, "settings stay sorted by key");
        let sim =
            Sim::resume(sim.into_store(), new, rules(), SimSettings::default()).await.unwrap();
        assert_eq!(sim.rulebook(), Rulebook::CURRENT);

        // Where to go is chosen among the town's public places too, not only an agent's home
        // and workplace: Tobias (a pharmacist at the market) is offered Marigold café.
        let tobias = events
            .iter()
            .find_map(|e| match &e.body {
                Body::AgentJoined(j) if j.name == "Tobias Ashcombe" => Some(j.agent),
                _ => None,
            })
            .unwrap();
        let offered: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.body {
                Body::LlmRequested(r) if r.purpose == "location" && r.agent == Some(tobias) => {
                    Some(format!("{:?}", r.prompt))
                }
                _ => None,
            })
            .collect();
        assert!(!offered.is_empty(), "Tobias chose a place");
        assert!(
            offered.iter().any(|p| p.contains("Marigold café")),
            "the café is among Tobias's places: {offered:?}"
        );
    });
}

#[test]
fn an_event_of_the_towns_own_spreads_by_talk_and_is_kept_the_next_day() {
    // Not the party: two neighbours at home in the evening; one is organising a clean-up of
    // the park tomorrow morning. Only the town file says so (a `currently`).
    let source = town()
        .source
        .replace("start = \"day0 07:00\"", "start = \"day0 20:00\"")
        .replace(
            "strategy = \"full\"\n\n[[persona]]\nname = \"Wendell Penhallow\"",
            "strategy = \"full\"\ncurrently = \"Sefa Okafor is organising a clean-up of Millbrook park tomorrow from 10:00 to 12:00 and asks everyone to come\"\n\n[[persona]]\nname = \"Wendell Penhallow\"",
        );
    assert!(source.contains("clean-up of Millbrook park"), "the scenario is in the town");
    let mut town = Definition::parse("clean-up.toml", &source).unwrap();
    town.personas.retain(|p| p.name == "Nnamdi Okafor" || p.name == "Sefa Okafor");
    let gateway = Gateway::new(
        Arc::new(crate::rules::ScenarioRules),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        4,
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let log = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town, 7, gateway, SimSettings::default()).await.unwrap();
        while sim.state().sim_time_secs < 86_400 + 10 * 3600 + 30 * 60 {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    let nnamdi = AgentId(0);
    // He heard of it in a talk, and agreed to it for the next morning.
    let agreed = log.iter().find_map(|e| match &e.body {
        Body::CommitmentMade(c) if c.agent == nnamdi => Some(c),
        _ => None,
    });
    let said: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::DialogueTurn(t) => Some(format!("{:?}: {}", t.speaker, t.text)),
            Body::LlmResponded(r) if r.text.contains("promised") => Some(r.text.clone()),
            Body::ConversationEnded(c) => Some(c.reason.clone()),
            _ => None,
        })
        .collect();
    let agreed = agreed.unwrap_or_else(|| panic!("Nnamdi agreed to come: {said:#?}"));
    // Sefa's intention named the place and the time: an invitation, which he accepted (the
    // double's answer names the activity).
    assert_eq!(agreed.what, "goes where it was invited");
    assert_eq!(agreed.start_secs, 86_400 + 10 * 3600);
    assert_eq!(agreed.duration_secs, 2 * 3600);
    assert!(agreed.address.starts_with("Millbrook park:"), "{}", agreed.address);
    // The next day's plan keeps it, and at 10:30 he is there.
    let day1 = log.iter().rev().find_map(|e| match &e.body {
        Body::PlanMade(p) if p.agent == nnamdi && p.level == PlanLevel::Day => Some(p),
        _ => None,
    });
    let day1 = day1.expect("a plan for day 1");
    assert!(day1
        .items
        .iter()
        .any(|i| i.start_secs == agreed.start_secs && i.address == agreed.address));
    let there = hamlet_engine::research::attendance(
        &log,
        "Millbrook park",
        86_400 + 10 * 3600,
        86_400 + 10 * 3600 + 30 * 60,
    )
    .unwrap();
    assert!(there.iter().any(|a| a.agent == "Nnamdi Okafor"), "{there:?}");
    // And on the morning of day 1 each renewed its `currently`.
    let renewed = log
        .iter()
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "currently"))
        .count();
    assert_eq!(renewed, 2);
}

/// Runs `town` with the scenario double from its start until `until` (simulated seconds).
fn run_scenario(
    town: Definition,
    settings: SimSettings,
    until: u64,
) -> (tempfile::TempDir, Vec<hamlet_log::Event>) {
    let gateway = Gateway::new(
        Arc::new(crate::rules::ScenarioRules),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        4,
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let log = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim = Sim::start(store, "main", town, 7, gateway, settings).await.unwrap();
        while sim.state().sim_time_secs < until {
            sim.step().await.unwrap();
        }
        let head = sim.store().branch(sim.branch()).unwrap().head_seq;
        sim.store().events(sim.branch(), 0, head).unwrap()
    });
    (tmp, log)
}

#[test]
fn a_hosted_event_is_the_hosts_appointment_and_whom_she_meets_she_invites() {
    // Not the party, and no `currently`: Sefa hosts a reading at the college library
    // tomorrow morning; only her `hosts` says so.
    let source = town()
        .source
        .replace("start = \"day0 07:00\"", "start = \"day0 20:00\"")
        .replace(
            "strategy = \"full\"\n\n[[persona]]\nname = \"Wendell Penhallow\"",
            "strategy = \"full\"\nhosts = [{ what = \"Sefa Okafor's reading of local history\", place = \"Willowmere college:library\", from = \"day1 10:00\", until = \"day1 11:30\" }]\n\n[[persona]]\nname = \"Wendell Penhallow\"",
        );
    assert!(source.contains("reading of local history"), "the scenario is in the town");
    let mut town = Definition::parse("reading.toml", &source).unwrap();
    town.personas.retain(|p| p.name == "Nnamdi Okafor" || p.name == "Sefa Okafor");
    // (She thinks first, so her going to talk is not pre-empted by his.)
    town.personas.reverse();
    let (sefa, nnamdi) = (AgentId(0), AgentId(1));
    let start = 86_400 + 10 * 3600;
    let (_a, log) = run_scenario(town.clone(), SimSettings::default(), start + 30 * 60);
    let by_id = |id: EventId| log.iter().find(|e| e.id == id).expect("a cause is in the log");
    // Sefa saw Nnamdi and went to talk: the talk's cause is what she perceived, no question.
    let invited = log
        .iter()
        .find(|e| {
            matches!(&e.body, Body::ConversationStarted(c) if c.agents == [sefa, nnamdi])
                && matches!(&by_id(e.header.causes[0]).body, Body::Perceived(p) if p.agent == sefa)
        })
        .unwrap_or_else(|| {
            let talks: Vec<String> = log
                .iter()
                .filter_map(|e| match &e.body {
                    Body::ConversationStarted(c) => Some(format!(
                        "{} {:?} {:?}",
                        e.sim_time_secs(),
                        c.agents,
                        by_id(e.header.causes[0]).body
                    )),
                    _ => None,
                })
                .collect();
            panic!("Sefa starts a talk with Nnamdi when she sees him: {talks:#?}")
        });
    // She was not asked what she wants from it (her intention is the invitation) ...
    let asked_intention = log.iter().any(|e| {
        matches!(&e.body, Body::LlmRequested(r) if r.template == "intention" && r.agent == Some(sefa))
            && e.header.causes.contains(&invited.id)
    });
    assert!(!asked_intention);
    let script = log
        .iter()
        .find_map(|e| match &e.body {
            Body::LlmRequested(r)
                if r.template == "script" && e.header.causes.contains(&invited.id) =>
            {
                Some(r)
            }
            _ => None,
        })
        .expect("the talk is written");
    let hamlet_log::event::Prompt::Chat(messages) = &script.prompt else { panic!() };
    assert!(
        messages[1].content.contains(
            "Sefa Okafor wants from this talk: to invite Nnamdi Okafor to Sefa Okafor's reading \
             of local history at Willowmere college, library on"
        ),
        "{}",
        messages[1].content
    );
    // ... and he was asked whether he goes, once: she invites nobody twice.
    let asked: Vec<&hamlet_log::Event> = log
        .iter()
        .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "invitation"))
        .collect();
    assert_eq!(asked.len(), 1, "one invitation");
    let Body::LlmRequested(r) = &asked[0].body else { unreachable!() };
    assert_eq!(r.agent, Some(nnamdi));
    // He said yes: a commitment to the event as the town file gives it.
    let agreed = log
        .iter()
        .find_map(|e| match &e.body {
            Body::CommitmentMade(c) if c.agent == nnamdi => Some(c),
            _ => None,
        })
        .expect("Nnamdi promised to go");
    assert_eq!((agreed.start_secs, agreed.duration_secs), (start, 90 * 60));
    assert!(agreed.address.starts_with("Willowmere college:"), "{}", agreed.address);
    // Her day 1 plan holds the reading as her own item, where the town file puts it.
    let day1 = log
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            Body::PlanMade(p) if p.agent == sefa && p.level == PlanLevel::Day => Some(p),
            _ => None,
        })
        .expect("Sefa plans day 1");
    assert!(
        day1.items.iter().any(|i| i.start_secs == start
            && i.duration_secs == 90 * 60
            && i.address == "Willowmere college:library"
            && i.description == "hosts Sefa Okafor's reading of local history"),
        "{:#?}",
        day1.items
    );
    // And at 10:20 both are there.
    let there = hamlet_engine::research::attendance(
        &log,
        "Willowmere college",
        start + 10 * 60,
        start + 30 * 60,
    )
    .unwrap();
    for name in ["Sefa Okafor", "Nnamdi Okafor"] {
        assert!(there.iter().any(|a| a.agent == name), "{name}: {there:?}");
    }
    // By rulebook 5 the same town knows nothing of it: no talk from a glance, no hosting.
    let five = SimSettings { rulebook: Rulebook::numbered(5).unwrap(), ..SimSettings::default() };
    let (_b, log5) = run_scenario(town, five, 86_400 + 9 * 3600);
    assert!(!log5
        .iter()
        .any(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "invitation")));
    assert!(!log5.iter().any(|e| matches!(&e.body, Body::PlanMade(p)
        if p.items.iter().any(|i| i.description.contains("reading of local history")))));
}

#[test]
fn a_fork_runs_without_a_mechanism_or_as_an_ablation_and_resimulates_identically() {
    use hamlet_engine::resim::{resimulate, Verdict};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (parent, fork, fork_from) = rt.block_on(async {
        let store = Store::open(tmp.path()).unwrap();
        let mut sim =
            Sim::start(store, "main", town(), 7, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..4 {
            sim.step().await.unwrap();
        }
        let main = sim.branch();
        let mut store = sim.into_store();
        let head = store.branch(main).unwrap().head_seq;
        let fork = store.fork(main, head, "plain-talk").unwrap();
        let changes = [
            ("rulebook.off".to_owned(), "intentions,commitments".to_owned()),
            ("strategy".to_owned(), "no_reflection".to_owned()),
        ];
        // A mistake is refused and writes nothing.
        let wrong = [("strategy".to_owned(), "dreamy".to_owned())];
        let refused = hamlet_engine::ops::reconfigure(&mut store, fork, &wrong).unwrap_err();
        assert!(refused.to_string().contains("not a strategy"), "{refused}");
        hamlet_engine::ops::reconfigure(&mut store, fork, &changes).unwrap();
        let mut sim = Sim::resume(store, fork, rules(), SimSettings::default()).await.unwrap();
        assert!(!sim.rulebook().uses(Mechanism::Intentions));
        assert!(sim.rulebook().uses(Mechanism::Currently));
        assert!(sim
            .state()
            .agents
            .keys()
            .all(|a| sim.strategy(*a) == hamlet_engine::sim::Strategy::NoReflection));
        for _ in 0..8 {
            sim.step().await.unwrap();
        }
        let mut main_sim =
            Sim::resume(sim.into_store(), main, rules(), SimSettings::default()).await.unwrap();
        for _ in 0..8 {
            main_sim.step().await.unwrap();
        }
        let store = main_sim.into_store();
        let history = |id| store.events(id, 0, store.branch(id).unwrap().head_seq).unwrap();
        (history(main), history(fork), head)
    });
    // The fork asked nothing of what it leaves out; its parent went on with it all.
    let after = |log: &[hamlet_log::Event], template: &str| {
        log.iter()
            .filter(|e| e.seq() > fork_from + 1)
            .filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == template))
            .count()
    };
    assert!(after(&parent, "intention") > 0 && after(&parent, "talk_notes") > 0);
    assert_eq!((after(&fork, "intention"), after(&fork, "talk_notes")), (0, 0));
    assert!(after(&fork, "script") > 0, "the fork's agents still talk");
    // `hamlet research forks`: each measured to the same moment, saying how it runs.
    use hamlet_engine::research::{believability, dialogue, fork_row};
    let spreads = [vec!["party".to_owned()]];
    let until = parent.last().unwrap().sim_time_secs().min(fork.last().unwrap().sim_time_secs());
    let (p, f) = (
        fork_row("main", &parent, until, &spreads),
        fork_row("plain-talk", &fork, until, &spreads),
    );
    assert_eq!(p.runs, Rulebook::CURRENT.to_string());
    assert_eq!(
        f.runs,
        format!("{} without commitments, intentions; every agent no_reflection", Rulebook::CURRENT)
    );
    assert!(p.until_secs <= until && f.until_secs <= until);
    let cut: Vec<_> = fork.iter().filter(|e| e.sim_time_secs() <= until).cloned().collect();
    assert_eq!((f.conversations, f.lines), {
        let d = dialogue(&cut);
        (d.conversations, d.lines)
    });
    assert_eq!(Some(&f.believability), believability(&cut).last());
    assert_eq!(f.heard.len(), 1);
    assert!(f.calls > 0 && f.agents > 0);
    // Before the fork point the two are one history.
    let before = fork.iter().find(|e| e.seq() > fork_from).unwrap().sim_time_secs() - 1;
    let (p0, f0) =
        (fork_row("x", &parent, before, &spreads), fork_row("x", &fork, before, &spreads));
    assert_eq!(p0, f0);
    assert!(p0.calls < p.calls.min(f.calls), "each went on from the fork point");
    for log in [&parent, &fork] {
        let scratch = tempfile::tempdir().unwrap();
        match rt.block_on(resimulate(log, scratch.path(), |_, _| {})).unwrap() {
            Verdict::Identical { events } => assert_eq!(events, log.len()),
            Verdict::Diverged(d) => panic!("{d:?}"),
        }
    }
}

#[test]
fn by_rulebook_8_an_object_seen_in_a_declared_state_is_rated_by_rule_not_by_a_call() {
    use hamlet_engine::rulebook::ROUTINE_IMPORTANCE;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let run = |rulebook: Rulebook| {
        let tmp = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let settings = SimSettings { rulebook, ..SimSettings::default() };
            let store = Store::open(tmp.path()).unwrap();
            let mut sim = Sim::start(store, "main", town(), 7, rules(), settings).await.unwrap();
            for _ in 0..12 {
                sim.step().await.unwrap();
            }
            let main = sim.branch();
            let head = sim.store().branch(main).unwrap().head_seq;
            sim.store().events(main, 0, head).unwrap()
        })
    };
    // Each observation, whether a model's answer caused it (its rating), and what it says.
    let observations = |log: &[hamlet_log::Event]| {
        let answers: std::collections::BTreeSet<EventId> =
            log.iter().filter(|e| matches!(e.body, Body::LlmResponded(_))).map(|e| e.id).collect();
        let people: Vec<String> = log
            .iter()
            .filter_map(|e| match &e.body {
                Body::AgentJoined(j) => Some(j.name.clone()),
                _ => None,
            })
            .collect();
        log.iter()
            .filter_map(|e| match &e.body {
                Body::MemoryAdded(m) if m.kind == MemoryKind::Observation => Some((
                    e.header.causes.iter().any(|c| answers.contains(c)),
                    m.importance,
                    people.iter().any(|p| m.description.starts_with(p.as_str())),
                    m.description.clone(),
                )),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // Whether a rating call (one memory or a numbered list) named it.
    let asked = |log: &[hamlet_log::Event], description: &str| {
        log.iter().any(|e| {
            matches!(&e.body, Body::LlmRequested(r)
                if (r.template == "importance" || r.template == "ratings")
                    && (r.items.iter().any(|i| i.contains(description))
                        || matches!(&r.prompt, hamlet_log::event::Prompt::Chat(m)
                            if m.iter().any(|m| m.content.contains(description)))))
        })
    };
    let seven = run(Rulebook::numbered(7).unwrap());
    let old = observations(&seven);
    assert!(old.iter().any(|(_, _, person, _)| !person), "objects were seen");
    assert!(old.iter().all(|(by_model, ..)| *by_model), "by rulebook 7 the model rates each");

    let eight = run(Rulebook::CURRENT);
    let new = observations(&eight);
    let by_rule: Vec<_> = new.iter().filter(|(by_model, ..)| !by_model).collect();
    assert!(!by_rule.is_empty(), "{new:?}");
    for (_, importance, person, description) in &by_rule {
        assert_eq!(*importance, ROUTINE_IMPORTANCE, "{description}");
        assert!(!person, "only objects are routine sights: {description}");
        assert!(!asked(&eight, description), "no call rated `{description}`");
    }
    assert!(new.iter().any(|(by_model, _, person, _)| *by_model && *person), "people still are");
}
