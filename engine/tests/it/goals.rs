//! Life goals: a persona's `goal` is part of who the agent is in every prompt that says who
//! it is, and only its own; a goal is one line.

use hamlet_engine::sim::SimSettings;
use hamlet_engine::town::Definition;
use hamlet_log::event::Prompt;
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
    ] {
        let e = Definition::parse("bad.toml", &with(&extra)).unwrap_err().to_string();
        assert!(e.contains(".measure") && e.contains(why), "{extra}: {e}");
    }
}
