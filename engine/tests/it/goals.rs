//! Life goals: a persona's `goal` is part of who the agent is in every prompt that says who
//! it is, and only its own; a goal is one line.

use hamlet_engine::sim::SimSettings;
use hamlet_engine::town::Definition;
use hamlet_log::event::{PlanLevel, PlanRef, Prompt};
use hamlet_log::Body;

use crate::sim::{rules, run_town, town};

const GOAL: &str = "wants to open a second café in Willowmere before the summer";

#[test]
fn an_agents_goal_is_in_every_prompt_that_says_who_it_is() {
    let first = town().personas[0].name.clone();
    let source = town().source.replacen(
        "strategy = \"full\"",
        &format!("strategy = \"full\"\ngoal = \"{first} {GOAL}\""),
        1,
    );
    let with_goal = Definition::parse("goal.toml", &source).unwrap();
    assert_eq!(with_goal.personas[0].goal.as_deref(), Some(format!("{first} {GOAL}").as_str()));
    let (_tmp, log) = run_town(with_goal, SimSettings::default(), rules(), 8);
    let (mut own, mut others) = (0, 0);
    for e in &log {
        let Body::LlmRequested(r) = &e.body else { continue };
        let Prompt::Chat(messages) = &r.prompt else { continue };
        let text: String = messages.iter().map(|m| m.content.as_str()).collect();
        if text.contains(&format!("Who {first} is:")) {
            assert!(text.contains(&format!("Life goal: {first} {GOAL}")), "{}: {text}", r.purpose);
            own += 1;
        } else if !text.contains(&first) {
            assert!(!text.contains("Life goal:"), "another agent's {} call: {text}", r.purpose);
            others += 1;
        }
    }
    assert!(own > 0 && others > 0, "{own} of its own calls, {others} of others'");
}

#[test]
fn a_goal_is_one_line_and_not_empty() {
    for (bad, why) in [("", "empty"), ("a\\nb", "one line")] {
        let source = town().source.replacen(
            "strategy = \"full\"",
            &format!("strategy = \"full\"\ngoal = \"{bad}\""),
            1,
        );
        let e = Definition::parse("bad.toml", &source).unwrap_err().to_string();
        assert!(e.contains(".goal") && e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn a_goals_measure_is_recorded_with_its_agent_and_checked_against_the_town() {
    let names: Vec<String> = town().personas.iter().map(|p| p.name.clone()).collect();
    let with = |extra: &str| {
        town().source.replacen("strategy = \"full\"", &format!("strategy = \"full\"\n{extra}"), 1)
    };
    let source = with(&format!(
        "goal = \"{} wants to see an old friend\"\nmeasure = {{ meet = \"{}\" }}",
        names[0], names[1]
    ));
    let town = Definition::parse("meet.toml", &source).unwrap();
    let (_tmp, log) = run_town(town, SimSettings::default(), rules(), 1);
    let traits = log
        .iter()
        .find_map(|e| match &e.body {
            Body::AgentJoined(j) if j.name == names[0] => Some(j.traits.clone()),
            _ => None,
        })
        .unwrap();
    assert!(traits.contains(&("measure".to_owned(), format!("meet {}", names[1]))), "{traits:?}");
    let rows = hamlet_engine::research::goals(&log, 3600);
    assert!(rows.iter().any(|r| r.agent == names[0] && r.measure == format!("meet {}", names[1])));

    for (extra, why) in [
        ("measure = { earn_cents = 100 }".to_owned(), "give one"),
        ("goal = \"g\"\nmeasure = { earn_cents = 100, meet = \"x\" }".to_owned(), "name one of"),
        ("goal = \"g\"\nmeasure = { earn_cents = 0 }".to_owned(), "more than 0"),
        ("goal = \"g\"\nmeasure = { meet = \"Nobody Here\" }".to_owned(), "another persona"),
        (format!("goal = \"g\"\nmeasure = {{ meet = \"{}\" }}", names[0]), "another persona"),
        ("goal = \"g\"\nmeasure = { earn_cents = 5, times = 2 }".to_owned(), "give `buy`"),
        ("goal = \"g\"\nmeasure = { hire = 1 }".to_owned(), "not the town's `[mayor] who`"),
        ("goal = \"g\"\nmeasure = { found = 0 }".to_owned(), "count from 1"),
    ] {
        let e = Definition::parse("bad.toml", &with(&extra)).unwrap_err().to_string();
        assert!(e.contains(".measure") && e.contains(why), "{extra}: {e}");
    }
}

/// Willowmere with its first persona given a goal and `planning = "goal_qa"`.
fn goal_planner() -> (Definition, String) {
    let first = town().personas[0].name.clone();
    let source = town().source.replacen(
        "strategy = \"full\"",
        &format!("strategy = \"full\"\ngoal = \"{first} {GOAL}\"\nplanning = \"goal_qa\""),
        1,
    );
    (Definition::parse("goal_qa.toml", &source).unwrap(), first)
}

#[test]
fn a_goal_planner_asks_questions_answers_them_and_picks_a_purpose_again_when_each_is_done() {
    let (town, first) = goal_planner();
    // From 07:00, ten seconds a step, past bedtime into the next morning.
    let (_tmp, log) = run_town(town, SimSettings::default(), rules(), 15 * 360 + 45 * 6);
    let me = log
        .iter()
        .find_map(|e| match &e.body {
            Body::AgentJoined(j) if j.name == first => Some(j.agent),
            _ => None,
        })
        .unwrap();
    let joined = log.iter().find_map(|e| match &e.body {
        Body::AgentJoined(j) if j.agent == me => Some(j.traits.clone()),
        _ => None,
    });
    assert!(joined.unwrap().contains(&("planning".to_owned(), "goal_qa".to_owned())));
    // Its calls: the three roles in turn, and never the paper's day plan; the others plan
    // their days as ever.
    let templates: Vec<&str> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::LlmRequested(r) if r.agent == Some(me) && r.attempt == 1 => {
                Some(r.template.as_str())
            }
            _ => None,
        })
        .filter(|t| t.starts_with("goal_") || *t == "day_plan")
        .collect();
    assert!(!templates.contains(&"day_plan"), "{templates:?}");
    let cycles =
        templates.chunks(3).filter(|c| c == &["goal_questions", "goal_answers", "goal_purpose"]);
    assert_eq!(cycles.count() * 3, templates.len(), "{templates:?}");
    assert!(templates.len() >= 3 * 12, "a day of hour-long purposes: {templates:?}");
    let others_plan = log.iter().any(|e| {
        matches!(&e.body,
        Body::LlmRequested(r) if r.template == "day_plan" && r.agent != Some(me))
    });
    assert!(others_plan);
    // Each purpose is one hour-level item at a place it knows, broken into actions that it
    // starts there.
    let purposes: Vec<&hamlet_log::Event> = log
        .iter()
        .filter(|e| matches!(&e.body, Body::PlanMade(p) if p.agent == me && p.level == PlanLevel::Hour && p.decomposes.is_none()))
        .collect();
    // From bedtime it sleeps, by rule: no call until it wakes (the clock skips the night),
    // and on waking it asks again.
    let bedtime = 22 * 3600 + 30 * 60;
    let slept: Vec<&hamlet_log::Event> = purposes
        .iter()
        .copied()
        .filter(|e| matches!(&e.body, Body::PlanMade(p) if p.items[0].description == hamlet_engine::mind::plan::SLEEP))
        .collect();
    assert_eq!(slept.len(), 1);
    let Body::PlanMade(sleep) = &slept[0].body else { unreachable!() };
    assert!(slept[0].sim_time_secs() >= bedtime);
    assert_eq!(sleep.items[0].start_secs + u64::from(sleep.items[0].duration_secs), 86_400);
    assert!(!log.iter().any(|e| (bedtime..86_400 + 7 * 3600).contains(&e.sim_time_secs())
        && matches!(&e.body, Body::LlmRequested(r) if r.agent == Some(me) && r.template.starts_with("goal_"))));
    assert!(
        purposes.iter().any(|e| e.sim_time_secs() >= 86_400 + 7 * 3600),
        "asked again on waking"
    );
    let purposes: Vec<&hamlet_log::Event> =
        purposes.iter().copied().filter(|e| e.id != slept[0].id).collect();
    // What it agreed to in a talk is kept by rule while it is under way: no call.
    let (asked, agreed): (Vec<&hamlet_log::Event>, Vec<&hamlet_log::Event>) = purposes
        .iter()
        .partition(|e| matches!(&e.body, Body::PlanMade(p) if p.items[0].description == "works toward the goal there"));
    for e in &agreed {
        let Body::PlanMade(p) = &e.body else { unreachable!() };
        let item = &p.items[0];
        let end = item.start_secs + u64::from(item.duration_secs);
        assert!(
            log.iter().any(|c| matches!(&c.body, Body::CommitmentMade(c) if c.agent == me
            && c.start_secs <= item.start_secs && c.start_secs + u64::from(c.duration_secs) == end
            && c.address == item.address)),
            "{item:?}"
        );
    }
    assert_eq!(asked.len() * 3, templates.len());
    for p in &asked {
        let Body::PlanMade(plan) = &p.body else { unreachable!() };
        let item = &plan.items[0];
        assert_eq!(item.description, "works toward the goal there");
        assert_eq!(item.address.matches(':').count(), 1, "sector:arena, {}", item.address);
        // An hour, or what is left of the day before bedtime.
        let end = item.start_secs + u64::from(item.duration_secs);
        assert!(item.duration_secs == 3600 || end % 86_400 == bedtime, "{item:?}");
    }
    let first_purpose = PlanRef { plan: purposes[0].id, item: 0 };
    let actions = log.iter().find_map(|e| match &e.body {
        Body::PlanMade(p) if p.decomposes == Some(first_purpose) => Some(e.id),
        _ => None,
    });
    let acted = log.iter().filter(|e| matches!(&e.body,
        Body::ActionStarted(a) if a.agent == me && a.plan_item.is_some_and(|i| Some(i.plan) == actions)));
    assert!(acted.count() > 0, "the first purpose's actions are acted on");
    // The plan is remembered, and the same answers give the same log.
    assert!(log.iter().any(|e| matches!(&e.body,
        Body::MemoryAdded(m) if m.agent == me && m.description.starts_with(&format!("{first}'s purpose from")))));
    crate::sim::assert_resim_identical(&log);
}

#[test]
fn modules_are_checked_and_goal_qa_needs_a_goal() {
    for (extra, why) in [
        ("planning = \"goal_qa\"", "give it a `goal`"),
        ("planning = \"dreams\"", "`dreams` is not one of paper, goal_qa"),
        ("memory = \"sieve\"", "`sieve` is not one of stream, long_short"),
    ] {
        let source = town().source.replacen(
            "strategy = \"full\"",
            &format!("strategy = \"full\"\n{extra}"),
            1,
        );
        let e = Definition::parse("bad.toml", &source).unwrap_err().to_string();
        assert!(e.contains(why), "{extra}: {e}");
    }
    // The defaults are not recorded, so a town naming none starts as it always has.
    let source = town().source.replacen(
        "strategy = \"full\"",
        "strategy = \"full\"\nplanning = \"paper\"\nmemory = \"stream\"",
        1,
    );
    let named = Definition::parse("defaults.toml", &source).unwrap();
    let traits = |t: &Definition| -> Vec<Vec<(String, String)>> {
        hamlet_engine::town::genesis::genesis(t, 7)
            .into_iter()
            .filter_map(|e| match e.body {
                Body::AgentJoined(j) => Some(j.traits),
                _ => None,
            })
            .collect()
    };
    assert_eq!(traits(&named), traits(&town()));
}

#[test]
fn a_long_short_agent_recalls_its_pictures_by_name_and_its_latest_memories_without_embedding() {
    let first = town().personas[0].name.clone();
    let source = town().source.replacen(
        "strategy = \"full\"",
        "strategy = \"full\"\nmemory = \"long_short\"",
        1,
    );
    let town = Definition::parse("long_short.toml", &source).unwrap();
    let (_tmp, log) = run_town(town, SimSettings::default(), rules(), 6 * 360);
    let me = log
        .iter()
        .find_map(|e| match &e.body {
            Body::AgentJoined(j) if j.name == first => Some(j.agent),
            _ => None,
        })
        .unwrap();
    // Its recalls embed nothing; the others' still do.
    let queries = |who: Option<hamlet_log::event::AgentId>| {
        log.iter()
            .filter(|e| matches!(&e.body, Body::EmbeddingRequested(r) if r.purpose == "query" && r.agent == who))
            .count()
    };
    let others = log.iter().find_map(|e| match &e.body {
        Body::AgentJoined(j) if j.agent != me => Some(j.agent),
        _ => None,
    });
    assert_eq!(queries(Some(me)), 0);
    assert!(queries(others) > 0);
    // Pictures: of the people it talked with, after each talk, and of the places it left.
    let pictures: Vec<(u64, String)> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m)
                if m.agent == me && m.kind == hamlet_log::event::MemoryKind::Reflection =>
            {
                hamlet_engine::mind::memory::picture_subject(&first, &m.description)
                    .map(|s| (e.sim_time_secs(), s.to_owned()))
            }
            _ => None,
        })
        .collect();
    let people: Vec<String> = town_names();
    assert!(pictures.iter().any(|(_, s)| people.contains(s)), "{pictures:?}");
    // A recall whose query names a subject it has a picture of returns that picture first.
    let named = log.iter().find_map(|e| match &e.body {
        Body::Retrieved(r) if r.agent == me => {
            let (at, subject) = pictures
                .iter()
                .find(|(at, s)| *at < e.sim_time_secs() && r.query.contains(s.as_str()))?;
            Some((r.clone(), *at, subject.clone()))
        }
        _ => None,
    });
    let (retrieved, _, subject) = named.expect("a recall naming a subject pictured before it");
    let first_hit = log.iter().find(|e| e.id == retrieved.hits[0].memory).unwrap();
    assert!(
        matches!(&first_hit.body, Body::MemoryAdded(m) if m.description.starts_with(&format!("{first}'s picture of {subject}: ")))
    );
    assert_eq!(retrieved.hits[0].relevance, 1.0);
}

#[test]
fn both_modules_together_an_agent_that_moves_by_its_purposes_pictures_the_places_it_leaves() {
    let (goal_qa, first) = goal_planner();
    let source = goal_qa.source.replacen(
        "planning = \"goal_qa\"",
        "planning = \"goal_qa\"\nmemory = \"long_short\"",
        1,
    );
    let town = Definition::parse("both.toml", &source).unwrap();
    let (_tmp, log) = run_town(town, SimSettings::default(), rules(), 4 * 360);
    let places: Vec<String> = log
        .iter()
        .filter_map(|e| match &e.body {
            Body::MemoryAdded(m) if m.kind == hamlet_log::event::MemoryKind::Reflection => {
                hamlet_engine::mind::memory::picture_subject(&first, &m.description)
                    .map(str::to_owned)
            }
            _ => None,
        })
        .filter(|s| !town_names().contains(s))
        .collect();
    let sectors: Vec<String> = goal_planner().0.sectors.iter().map(|s| s.name.clone()).collect();
    assert!(!places.is_empty() && places.iter().all(|p| sectors.contains(p)), "{places:?}");
    // Its purposes still come of the three questions, recalled without embedding.
    assert!(log
        .iter()
        .any(|e| matches!(&e.body, Body::LlmRequested(r) if r.template == "goal_answers")));
    // The same answers give the same log.
    crate::sim::assert_resim_identical(&log);
}

fn town_names() -> Vec<String> {
    town().personas.iter().map(|p| p.name.clone()).collect()
}
