//! Planning toward a life goal, for an agent whose persona says `planning = "goal_qa"`: it
//! asks itself a few questions about what to do next for its goal (`goal_questions`),
//! answers them from what it recalls (`goal_answers`), then picks a place it knows and a
//! purpose there for a while (`goal_purpose`). The purpose is one `PlanMade` at the hour
//! level that decomposes nothing: the schedule breaks it into actions as it does an hour
//! part, and the agent asks again when its time is up. Three calls and one retrieval a
//! purpose; sleep and what the agent agreed to are kept by rule, without a call.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, Shape};
use hamlet_gateway::Gateway;
use hamlet_log::event::{MemoryKind, PlanItem, PlanLevel, PlanMade};
use hamlet_log::Body;
use serde_json::{json, Value};

use super::memory::MemoryStream;
use super::prompt::{template, Style};
use super::retrieval::RetrievalSettings;
use super::think::{ask, recall, recent_lines, remember, ThinkError, Who};
use crate::pending::{Cause, Pending, PendingId};

/// The shortest and longest purpose, in minutes.
pub const PURPOSE_MINUTES: (u64, u64) = (30, 120);

/// How many of its latest memories the questions are asked from, and in how many characters.
const RECENT: (usize, usize) = (20, 1200);

/// How many recalled memories the answers are given.
const RECALLED: usize = 6;

/// The questions an agent asks when the model gave none it could use.
fn fallback_questions(name: &str) -> String {
    format!("What should {name} do next to come closer to what {name} wants?")
}

/// The questions of a `goal_questions` answer: its lines that ask something (up to three),
/// with any numbering or bullet taken off.
pub fn questions_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim().trim_start_matches(|c: char| c.is_ascii_digit() || "-*.)•".contains(c)))
        .map(str::trim)
        .filter(|l| l.ends_with('?') && l.split_whitespace().count() >= 3)
        .take(3)
        .map(str::to_owned)
        .collect()
}

/// The JSON Schema of `goal_purpose`'s answer, the places named from `places`.
pub fn purpose_schema(places: &[String]) -> Value {
    let (shortest, longest) = PURPOSE_MINUTES;
    json!({
        "type": "object",
        "properties": {
            "place": { "type": "string", "enum": places },
            "purpose": { "type": "string", "minLength": 3, "maxLength": 120 },
            "minutes": { "type": "integer", "minimum": shortest, "maximum": longest },
        },
        "required": ["place", "purpose", "minutes"],
        "additionalProperties": false,
    })
}

/// What an agent planning toward its goal is asked from.
pub struct Toward<'a> {
    /// Its goal, in its town's words.
    pub goal: &'a str,
    /// The time, in words.
    pub time: &'a str,
    /// Its memory stream.
    pub stream: &'a MemoryStream,
    /// The places it may go (`sector:arena`), where it is first.
    pub places: &'a [String],
    /// The latest a purpose may end (bedtime, or what it agreed to do next), simulated secs.
    pub until: u64,
}

/// Plans `who`'s next purpose toward its goal (see the module's words): the three calls, a
/// `PlanMade` of one hour-level item (its place one of `places`, from the minute under way
/// for the minutes the model said, cut at `until`), and the plan as a memory. The purpose
/// when the model's answer is the fallback or names no place given: the first place (where
/// it is), "thinks over what to do next", for the shortest purpose.
#[allow(clippy::too_many_arguments)]
pub async fn plan_purpose(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    toward: &Toward<'_>,
    settings: &RetrievalSettings,
    because: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(PlanMade, PendingId), ThinkError> {
    let name = who.name;
    let mut vars: BTreeMap<&str, String> = who.vars();
    vars.insert("goal", toward.goal.to_owned());
    vars.insert("time", toward.time.to_owned());
    let recent = recent_lines(toward.stream.recent(RECENT.0), RECENT.1);
    let recent = if recent.is_empty() { "- nothing yet".to_owned() } else { recent.join("\n") };
    vars.insert("recent", recent);
    // Role one: the questions.
    let mut call = template("goal_questions")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(90);
    let (answered, asked) = ask(gateway, call, because, now, pending).await?;
    let mut questions = match &answered.answer {
        Answer::Text(t) if !answered.fallback => questions_of(t),
        _ => Vec::new(),
    };
    if questions.is_empty() {
        questions.push(fallback_questions(name));
    }
    // Role two: the answers, from what the questions recall.
    let (recalled, recalled_at) = recall(
        gateway,
        who.agent,
        toward.stream,
        &format!("{} {}", toward.goal, questions.join(" ")),
        now,
        settings,
        pending,
    )
    .await?;
    let memories: Vec<String> = recalled
        .hits
        .iter()
        .filter_map(|h| toward.stream.get(h.memory))
        .take(RECALLED)
        .map(|m| format!("- {}", m.description))
        .collect();
    vars.insert(
        "memories",
        if memories.is_empty() { "- nothing yet".to_owned() } else { memories.join("\n") },
    );
    vars.insert("questions", questions.join("\n"));
    let mut call = template("goal_answers")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(120);
    let mut causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
    causes.push(Cause::Pending(recalled_at));
    let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
    let answers = match &answered.answer {
        Answer::Text(t) if !answered.fallback && !t.trim().is_empty() => {
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        _ => "nothing clear yet".to_owned(),
    };
    // Role three: a place and a purpose.
    vars.insert("answers", answers);
    vars.insert("places", toward.places.join(", "));
    let shape = Shape::Json(purpose_schema(toward.places));
    let mut call = template("goal_purpose")?.call(&vars, style, shape)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(90);
    let causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
    let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
    let value = match answered.answer {
        Answer::Json(v) if !answered.fallback => v,
        _ => Value::Null,
    };
    let item = purpose_item(&value, name, toward.places, now, toward.until);
    let plan =
        PlanMade { agent: who.agent, level: PlanLevel::Hour, decomposes: None, items: vec![item] };
    let causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
    let at = pending.push(now, Body::PlanMade(plan.clone()), &causes);
    let words = purpose_words(name, &plan.items[0]);
    remember(
        gateway,
        style,
        who,
        MemoryKind::Plan,
        &[words],
        &[],
        &[Cause::Pending(at)],
        now,
        pending,
    )
    .await?;
    Ok((plan, at))
}

/// The purpose a `goal_purpose` answer gives (see [`plan_purpose`]): from the minute under
/// way, its minutes within [`PURPOSE_MINUTES`] and ending by `until`.
pub fn purpose_item(
    value: &Value,
    name: &str,
    places: &[String],
    now: u64,
    until: u64,
) -> PlanItem {
    let start = now - now % 60;
    let place =
        value.get("place").and_then(Value::as_str).filter(|p| places.iter().any(|x| x == p));
    let purpose = value.get("purpose").and_then(Value::as_str).map(str::trim);
    let (address, description, minutes) = match (place, purpose) {
        (Some(place), Some(purpose)) if purpose.split_whitespace().count() >= 2 => {
            let minutes = value.get("minutes").and_then(Value::as_u64).unwrap_or(PURPOSE_MINUTES.0);
            (
                place.to_owned(),
                purpose.to_owned(),
                minutes.clamp(PURPOSE_MINUTES.0, PURPOSE_MINUTES.1),
            )
        }
        _ => (
            places.first().cloned().unwrap_or_default(),
            format!("{name} thinks over what to do next"),
            PURPOSE_MINUTES.0,
        ),
    };
    let end = (start + minutes * 60).min(until.max(start + 60));
    PlanItem { description, address, start_secs: start, duration_secs: (end - start) as u32 }
}

/// A purpose in words, as it is remembered.
fn purpose_words(name: &str, item: &PlanItem) -> String {
    let clock = |secs: u64| format!("{:02}:{:02}", secs % 86_400 / 3600, secs % 3600 / 60);
    let end = item.start_secs + u64::from(item.duration_secs);
    let place = item.address.replace(':', ", ");
    let (from, to) = (clock(item.start_secs), clock(end));
    format!("{name}'s purpose from {from} to {to}, at {place}: {}", item.description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_the_lines_that_ask_numbering_taken_off() {
        let text = "1. What does the bakery still need?\n- Who could help me?\nI should go.\n\
                    3) Where is flour sold cheaply?\n4. Why?\n5. Is there a fifth question here?";
        assert_eq!(
            questions_of(text),
            vec![
                "What does the bakery still need?",
                "Who could help me?",
                "Where is flour sold cheaply?"
            ]
        );
        assert!(questions_of("I will bake.").is_empty());
    }

    #[test]
    fn a_purpose_keeps_to_the_places_given_and_its_minutes_and_ends_by_until() {
        let places = vec!["Oak Hill bakery:kitchen".to_owned(), "Home:bedroom".to_owned()];
        let now = 8 * 3600 + 125;
        let answer = json!({"place": "Oak Hill bakery:kitchen", "purpose": "Mei bakes bread", "minutes": 500});
        let item = purpose_item(&answer, "Mei", &places, now, u64::MAX);
        assert_eq!(item.address, "Oak Hill bakery:kitchen");
        assert_eq!((item.start_secs, item.duration_secs), (8 * 3600 + 120, 120 * 60));
        let cut = purpose_item(&answer, "Mei", &places, now, 9 * 3600);
        assert_eq!(cut.start_secs + u64::from(cut.duration_secs), 9 * 3600, "cut at until");
        for bad in [json!({"place": "Mars", "purpose": "Mei flies", "minutes": 60}), Value::Null] {
            let item = purpose_item(&bad, "Mei", &places, now, u64::MAX);
            assert_eq!(item.address, places[0]);
            assert_eq!(item.description, "Mei thinks over what to do next");
            assert_eq!(item.duration_secs, 30 * 60);
        }
        assert_eq!(
            purpose_words("Mei", &item),
            "Mei's purpose from 08:02 to 10:02, at Oak Hill bakery, kitchen: Mei bakes bread"
        );
    }
}
