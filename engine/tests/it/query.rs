//! Queries at any moment (`hamlet_engine::query`): the town, an agent as it was then,
//! conversations, events in a window and model calls, answered from the events up to the
//! moment. `Past` is built from events alone — no gateway is in reach, so no query can ask
//! a model — and each answer is checked here against the log it came from.

use std::collections::{BTreeMap, BTreeSet};

use hamlet_engine::fold::fold;
use hamlet_engine::mind::think::ReflectionSettings;
use hamlet_engine::query::{AgentView, Past, TownView};
use hamlet_engine::sim::SimSettings;
use hamlet_log::event::{AgentId, MemoryKind, PlanLevel};
use hamlet_log::{Body, Event, EventId};

use crate::sim::{rules, run_town, town};

fn recorded_run() -> (tempfile::TempDir, Vec<Event>) {
    let settings = SimSettings {
        reflection: ReflectionSettings { threshold: 20, ..ReflectionSettings::default() },
        ..SimSettings::default()
    };
    run_town(town(), settings, rules(), 20)
}

fn first(log: &[Event], f: impl Fn(&Body) -> bool) -> &Event {
    log.iter().find(|e| f(&e.body)).expect("the run has such an event")
}

#[test]
fn the_town_at_a_moment_is_the_fold_of_the_log_up_to_it() {
    let (_dir, log) = recorded_run();
    let turn = first(&log, |b| matches!(b, Body::DialogueTurn(_)));
    let Body::DialogueTurn(line) = &turn.body else { unreachable!() };
    let cut = Past::cut(&log, turn.seq());
    assert_eq!(cut.last().map(Event::seq), Some(turn.seq()));
    let past = Past::new(cut);
    let view = past.town();
    let folded = fold(cut);
    assert_eq!(view.state_hash, folded.state_hash().to_string());
    assert_eq!((view.seq, view.sim_time_secs), (turn.seq(), turn.sim_time_secs()));
    assert_eq!(view.agents.len(), folded.agents.len());
    for brief in &view.agents {
        let agent = &folded.agents[&AgentId(brief.id)];
        assert_eq!(brief.tile, [agent.tile.x, agent.tile.y], "{}", brief.name);
        assert_eq!(brief.action.as_ref().map(|a| a.event), agent.action.as_ref().map(|a| a.event));
        assert_eq!(brief.cash_cents, agent.cash_cents);
    }
    // One line into the first conversation: it is under way, with that line, and its
    // speakers are talking with each other.
    let under_way = view
        .conversations
        .iter()
        .find(|c| c.id == line.conversation)
        .expect("the conversation is under way");
    assert_eq!(under_way.lines.len(), 1);
    assert_eq!(under_way.lines[0].text, line.text);
    assert!(under_way.ended.is_none());
    let speaker = past.name(line.speaker);
    let listener = under_way.agents.iter().find(|n| **n != speaker).expect("two agents");
    let brief = |name: &str| view.agents.iter().find(|a| a.name == name).unwrap().clone();
    assert_eq!(brief(&speaker).talking_with, vec![listener.clone()]);
    assert_eq!(brief(listener).talking_with, vec![speaker.clone()]);
    // At the end of the run the conversation has ended and is no longer under way, but
    // the list of conversations still has it, with all its lines and why it ended.
    let end = Past::new(&log);
    assert!(end.town().conversations.iter().all(|c| c.id != line.conversation));
    let whole = end.conversations().into_iter().find(|c| c.id == line.conversation).unwrap();
    let turns = log
        .iter()
        .filter(|e| matches!(&e.body, Body::DialogueTurn(t) if t.conversation == line.conversation))
        .count();
    assert_eq!(whole.lines.len(), turns);
    assert!(whole.ended.is_some());
    assert!(whole.markdown().contains(&format!("**{speaker}:** {}", line.text.trim())));
    // Serialisable both ways.
    let json = serde_json::to_string(&view).unwrap();
    assert_eq!(serde_json::from_str::<TownView>(&json).unwrap(), view);
}

#[test]
fn an_agent_as_it_was_then_from_its_memories_scores_plans_and_talks() {
    let (_dir, log) = recorded_run();
    let reflection =
        first(&log, |b| matches!(b, Body::MemoryAdded(m) if m.kind == MemoryKind::Reflection));
    let Body::MemoryAdded(m) = &reflection.body else { unreachable!() };
    let agent = m.agent;
    let past = Past::new(&log);
    let view = past.agent(agent).expect("the agent is in town");

    // The memory stream: every memory the agent was given, oldest first, with the scores
    // of the last retrieval that returned it, exactly as recorded.
    let added: Vec<EventId> = log
        .iter()
        .filter(|e| matches!(&e.body, Body::MemoryAdded(m) if m.agent == agent))
        .map(|e| e.id)
        .collect();
    assert_eq!(view.memories.iter().map(|m| m.id).collect::<Vec<_>>(), added);
    let mut last_hit = BTreeMap::new();
    for e in &log {
        if let Body::Retrieved(r) = &e.body {
            if r.agent == agent {
                for hit in &r.hits {
                    last_hit.insert(hit.memory, (e.id, hit.score, hit.relevance));
                }
            }
        }
    }
    assert!(!last_hit.is_empty(), "the agent recalled something");
    for memory in &view.memories {
        let scores = memory.last_retrieval.as_ref().map(|s| (s.event, s.score, s.relevance));
        assert_eq!(scores, last_hit.get(&memory.id).copied(), "{}", memory.description);
    }

    // Reflections, with their evidence from the same stream, and a depth.
    assert!(view.reflections.iter().any(|r| r.id == reflection.id));
    let ids: BTreeSet<EventId> = added.iter().copied().collect();
    for r in &view.reflections {
        assert!(r.depth >= 1);
        assert!(!r.evidence.is_empty());
        assert!(r.evidence.iter().all(|e| ids.contains(&e.id) && !e.description.is_empty()));
    }

    // The summary it wrote on waking: the model's answer to its `summary` call.
    let summary = view.summary.as_ref().expect("a summary on waking");
    let Body::LlmResponded(answer) = &log.iter().find(|e| e.id == summary.event).unwrap().body
    else {
        panic!("the summary is a model's answer");
    };
    assert_eq!(summary.text, answer.text.trim());

    // Plans: today's day plan first, then decompositions, each of an item of a plan
    // listed before it.
    let day = view.plans.first().expect("a planner has plans");
    assert_eq!(day.level, "day");
    assert!(!day.items.is_empty());
    for (i, plan) in view.plans.iter().enumerate().skip(1) {
        let (of, item) = plan.decomposes.expect("a decomposition says of what");
        let parent = view.plans[..i].iter().find(|p| p.event == of).expect("its parent is listed");
        assert!(usize::from(item) < parent.items.len());
    }
    // (The hour plans of today's latest day plan: one made again around a commitment starts
    // the day's decompositions afresh.)
    let latest_day = log
        .iter()
        .rposition(|e| matches!(&e.body, Body::PlanMade(p) if p.agent == agent && p.level == PlanLevel::Day))
        .unwrap();
    let hour_plans = log[latest_day..]
        .iter()
        .filter(|e| matches!(&e.body, Body::PlanMade(p) if p.agent == agent && p.level == PlanLevel::Hour))
        .count();
    assert_eq!(view.plans.iter().filter(|p| p.level == "hour").count(), hour_plans);

    // What it knows of the town: the places it has seen.
    assert!(!view.spatial.is_empty());
    assert_eq!(view.cash_cents, fold(&log).agents[&agent].cash_cents);
    let json = serde_json::to_string(&view).unwrap();
    assert_eq!(serde_json::from_str::<AgentView>(&json).unwrap(), view);

    // As it was earlier: before the reflection, the stream is shorter and holds no
    // reflection; before it joined, there is no agent at all.
    let before = Past::new(Past::cut(&log, reflection.seq() - 1)).agent(agent).unwrap();
    assert!(before.memories.len() < view.memories.len());
    assert!(before.memories.iter().all(|m| m.id != reflection.id));
    assert!(before.reflections.iter().all(|r| r.id != reflection.id));
    assert!(Past::new(Past::cut(&log, 1)).agent(agent).is_none());
}

#[test]
fn relationships_come_from_conversations_and_memories() {
    let (_dir, log) = recorded_run();
    let started = first(&log, |b| matches!(b, Body::ConversationStarted(_)));
    let Body::ConversationStarted(c) = &started.body else { unreachable!() };
    let (a, b) = (c.agents[0], c.agents[1]);
    let past = Past::new(&log);
    let view = past.agent(a).unwrap();
    let other = past.name(b);
    let with = view.relationships.iter().find(|r| r.name == other).expect("a relationship");
    assert!(with.conversations >= 1);
    assert!(with.last_talked_secs.is_some_and(|t| t >= started.sim_time_secs()));
    let said_last = log.iter().rev().find_map(|e| match &e.body {
        Body::DialogueTurn(t) if t.speaker == b && !t.text.trim().is_empty() => {
            let mine = log.iter().any(|s| {
                s.id == t.conversation
                    && matches!(&s.body, Body::ConversationStarted(x) if x.agents.contains(&a))
            });
            mine.then(|| t.text.clone())
        }
        _ => None,
    });
    assert_eq!(with.last_words, said_last);
    assert!(with.memories >= 1, "the conversation is remembered, naming the other");
    // Nobody has a relationship with itself.
    assert!(view.relationships.iter().all(|r| r.name != view.name));
}

#[test]
fn calls_and_events_in_a_window_come_with_every_try() {
    let (_dir, log) = recorded_run();
    let past = Past::new(&log);
    let end = log.last().unwrap().seq();
    let calls = past.calls(0, end, None);
    let first_tries =
        log.iter().filter(|e| matches!(&e.body, Body::LlmRequested(r) if r.attempt == 1)).count();
    assert_eq!(calls.len(), first_tries, "one call per first try");
    // A try is a request: each sent once, retries included.
    let requests = log.iter().filter(|e| matches!(&e.body, Body::LlmRequested(_))).count();
    assert_eq!(calls.iter().map(|c| c.tries.len()).sum::<usize>(), requests);
    for call in &calls {
        assert!(call.answer.is_some(), "every call of a finished run was answered");
        assert!(!call.prompt.is_empty());
        let Body::LlmRequested(r) = &log.iter().find(|e| e.id == call.event).unwrap().body else {
            panic!("a call is its first request");
        };
        assert_eq!(call.template, r.template);
        // Each try shows the structured form its request was asked in.
        // (The same question may be asked again later: this call's requests are its first
        // and the retries before the hash's next first try.)
        let at = log.iter().position(|e| e.id == call.event).unwrap();
        let forms: Vec<&str> = log[at..]
            .iter()
            .filter_map(|e| match &e.body {
                Body::LlmRequested(q) if q.request_hash == r.request_hash => Some(q),
                _ => None,
            })
            .enumerate()
            .take_while(|(i, q)| *i == 0 || q.attempt > 1)
            .map(|(_, q)| q.structured.name())
            .collect();
        let shown: Vec<&str> = call.tries.iter().map(|t| t.structured.as_str()).collect();
        assert_eq!(shown, forms, "{}", call.request);
    }
    // A window and an agent narrow both queries.
    let agent = AgentId(1);
    let (from, to) = (end / 3, 2 * end / 3);
    let name = past.name(agent);
    let some = past.calls(from, to, Some(agent));
    assert!(!some.is_empty());
    assert!(some
        .iter()
        .all(|c| (from..=to).contains(&c.seq) && c.agent.as_deref() == Some(&*name)));
    let events = past.events(from, to, Some(agent));
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| (from..=to).contains(&e.seq) && e.agents.contains(&name)));
    // Asking again gives the same answers: the past does not change.
    assert_eq!(past.calls(from, to, Some(agent)), some);
}

#[test]
fn network_density_and_diffusion_grow_with_conversations() {
    use hamlet_engine::research::{diffusion, network_density};
    let (_dir, log) = recorded_run();
    let rows = network_density(&log, 60);
    assert!(rows.len() >= 2);
    assert!(rows.windows(2).all(|w| w[0].pairs <= w[1].pairs && w[0].at_secs < w[1].at_secs));
    let last = rows.last().unwrap();
    assert_eq!(last.at_secs, log.last().unwrap().sim_time_secs());
    let mut pairs = BTreeSet::new();
    for e in &log {
        if let Body::ConversationStarted(c) = &e.body {
            pairs.insert((c.agents[0].min(c.agents[1]), c.agents[0].max(c.agents[1])));
        }
    }
    assert!(!pairs.is_empty());
    assert_eq!(last.pairs as usize, pairs.len());
    assert_eq!(last.agents as usize, town().personas.len());
    let possible = (last.agents * (last.agents - 1) / 2) as f64;
    assert!((last.density - pairs.len() as f64 / possible).abs() < 1e-9);

    // What the rule double's conversations say spreads to those who talked, and no further.
    let words = vec!["market".to_owned(), "LATE on sunday".to_owned()];
    let spread = diffusion(&log, &words, 60);
    assert_eq!(spread.first().unwrap().knowing.len(), 0);
    let knowing: BTreeSet<&str> =
        spread.last().unwrap().knowing.iter().map(String::as_str).collect();
    let talked: BTreeSet<String> =
        pairs.iter().flat_map(|(a, b)| [*a, *b]).map(|a| Past::new(&log).name(a)).collect();
    assert_eq!(knowing, talked.iter().map(String::as_str).collect());
    assert!(spread.windows(2).all(|w| w[0].knowing.len() <= w[1].knowing.len()));
    assert!(diffusion(&log, &["no such words anywhere".to_owned()], 60)
        .iter()
        .all(|r| r.knowing.is_empty()));
}
