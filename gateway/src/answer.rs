//! Structured answers: what shape an answer must have, how it is asked for (a JSON Schema
//! for OpenAI-compatible servers, the equivalent GBNF grammar for the embedded model), and
//! how the text a model returns is parsed into its type, once, here.
//!
//! An answer that does not parse or validate is never passed on as if the model said it:
//! the gateway retries, and after its last try uses [`Shape::fallback`] and marks the
//! event as a fallback. The fallbacks, and why each is the safe choice:
//!
//! | shape | fallback | why |
//! |---|---|---|
//! | importance | 5 | the middle of the scale: neither forgotten nor dominating retrieval |
//! | ratings | 5 for each | as importance |
//! | yes/no | no | the conservative choice: keep the current plan, do not start a conversation |
//! | plan, schedule | no steps | the agent keeps the plan it has (or idles where it is) |
//! | choice | the first option | agent code offers the current or most likely option first |
//! | insights | none | a reflection without insights stores nothing |
//! | dialogue turn | silence, and the conversation ends | nothing invented is said |
//! | text | empty | agent code stores nothing |

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What an answer must look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Free text.
    Text,
    /// `{"rating": 1..=10}`: how poignant a memory is.
    Importance,
    /// `{"ratings": [1..=10, …]}`: the importance of several numbered memories, one
    /// rating each, in order (one call instead of one per memory).
    Ratings {
        /// How many memories, and so ratings.
        count: u16,
    },
    /// `{"answer": "yes" | "no"}`.
    YesNo,
    /// `{"steps": [{"start": "HH:MM", "activity": "…", "minutes": n}, …]}`.
    Plan {
        /// Fewest steps.
        min_steps: u8,
        /// Most steps.
        max_steps: u8,
        /// Shortest step, in minutes.
        min_minutes: u16,
        /// Longest step, in minutes.
        max_minutes: u16,
    },
    /// `{"steps": [{"start": "HH:MM", "activity": "…"}, …]}` with the start times given:
    /// a day in broad strokes whose times are the caller's, the model saying only what
    /// happens at each. Each step lasts until the next one starts, the last until `until`.
    /// A small model asked for its own times leaves the afternoon and evening out; here the
    /// day is covered by construction.
    Schedule {
        /// Each step's start, minutes after midnight, ascending.
        starts: Vec<u16>,
        /// When the last step ends, minutes after midnight.
        until: u16,
        /// The words each activity opens with, one per start (the last one for any start
        /// beyond): the agent's name and a space, say, or "At lunchtime, " and the name. The
        /// grammar writes them, so a small model goes on about that person at that time of
        /// day, and parsing takes them off again. Empty for none.
        leads: Vec<String>,
        /// Emoji to pick one from for each step (`"emoji"`, after the activity), as the
        /// step's icon. Empty: none asked.
        icons: Vec<String>,
    },
    /// `{"choice": one of the options}`.
    Choice(Vec<String>),
    /// `{"insights": [{"insight": "…", "evidence": [1-based statement numbers]}, …]}`.
    Insights {
        /// How many insights.
        count: u8,
        /// How many numbered statements the prompt offered.
        statements: u16,
    },
    /// `{"say": "…", "end": bool}`: one line of dialogue, and whether it ends the talk.
    Turn,
    /// Any JSON Schema (from `hamlet llm complete --schema FILE`). The answer is checked
    /// against the schema's `type`, `enum`, `const`, `properties`, `required`,
    /// `additionalProperties: false`, `items`, `minItems`, `maxItems`, `minimum`, `maximum`,
    /// `minLength` and `maxLength`; other keywords are not checked.
    Json(Value),
}

/// A validated answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// Free text, trimmed.
    Text(String),
    /// A rating from 1 to 10.
    Importance(u8),
    /// Ratings from 1 to 10, one per memory, in order.
    Ratings(Vec<u8>),
    /// Yes (true) or no.
    YesNo(bool),
    /// Plan steps in time order.
    Plan(Vec<PlanStep>),
    /// The option chosen, spelled as offered.
    Choice(String),
    /// Insights with their evidence.
    Insights(Vec<Insight>),
    /// A line of dialogue.
    Turn(Turn),
    /// An answer to a caller's JSON Schema.
    Json(Value),
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// Minutes after midnight.
    pub start_minute: u16,
    /// What, in words.
    pub activity: String,
    /// How long, in minutes.
    pub minutes: u16,
    /// The step's icon, when one was asked for (one of [`Shape::Schedule`]'s `icons`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
}

/// One insight of a reflection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Insight {
    /// The insight, in words.
    pub text: String,
    /// The statements it rests on, 1-based as numbered in the prompt, ascending, distinct.
    pub evidence: Vec<u16>,
}

/// One line of dialogue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// What is said.
    pub say: String,
    /// True when the speaker ends the conversation.
    pub end: bool,
}

/// An answer that follows `schema`, made from the schema alone (the first of an enum, the
/// smallest allowed number, the fewest items, the required properties): shown to models
/// that are told the schema in the prompt.
pub fn example(schema: &Value) -> Value {
    example_at(schema, 0)
}

fn example_at(schema: &Value, depth: u32) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().find_map(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    };
    match kind {
        "object" => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = serde_json::Map::new();
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (name, property) in properties {
                    if required.is_empty() || required.contains(&name.as_str()) {
                        out.insert(name.clone(), example_at(property, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).clamp(1, 3);
            let item = schema.get("items").map_or(Value::Null, |i| example_at(i, depth + 1));
            Value::Array(vec![item; n as usize])
        }
        "integer" | "number" => {
            let min = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
            json!(min)
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => match schema.get("pattern").and_then(Value::as_str) {
            // The one pattern Hamlet's own shapes use: a time of day.
            Some(p) if p.contains("[0-5][0-9]") => json!("08:00"),
            _ => json!("..."),
        },
    }
}

/// Why an answer was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

fn invalid<T>(why: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(why.into()))
}

/// The longest string a structured answer may carry.
const MAX_STRING: usize = 600;

impl Shape {
    /// A short name, as events and the CLI show it.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Text => "text",
            Shape::Importance => "importance",
            Shape::Ratings { .. } => "ratings",
            Shape::YesNo => "yes_no",
            Shape::Plan { .. } => "plan",
            Shape::Schedule { .. } => "schedule",
            Shape::Choice(_) => "choice",
            Shape::Insights { .. } => "insights",
            Shape::Turn => "turn",
            Shape::Json(_) => "json",
        }
    }

    /// A day plan in 5 to 8 broad strokes of half an hour to ten hours.
    pub fn day_plan() -> Shape {
        Shape::Plan { min_steps: 5, max_steps: 8, min_minutes: 30, max_minutes: 600 }
    }

    /// A stretch of the day in parts of about an hour (15 to 120 minutes).
    pub fn hour_parts() -> Shape {
        Shape::Plan { min_steps: 1, max_steps: 12, min_minutes: 15, max_minutes: 120 }
    }

    /// An hour decomposed into 5- to 15-minute actions.
    pub fn hour_plan() -> Shape {
        Shape::Plan { min_steps: 2, max_steps: 12, min_minutes: 5, max_minutes: 15 }
    }

    /// The JSON Schema of the answer, or `None` for free text.
    pub fn json_schema(&self) -> Option<Value> {
        let string = json!({ "type": "string", "minLength": 1, "maxLength": MAX_STRING });
        let object = |properties: Value, required: &[&str]| {
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        };
        Some(match self {
            Shape::Text => return None,
            Shape::Json(schema) => schema.clone(),
            Shape::Importance => object(
                json!({ "rating": { "type": "integer", "minimum": 1, "maximum": 10 } }),
                &["rating"],
            ),
            Shape::Ratings { count } => object(
                json!({ "ratings": {
                    "type": "array",
                    "items": { "type": "integer", "minimum": 1, "maximum": 10 },
                    "minItems": count, "maxItems": count,
                }}),
                &["ratings"],
            ),
            Shape::YesNo => object(
                json!({ "answer": { "type": "string", "enum": ["yes", "no"] } }),
                &["answer"],
            ),
            Shape::Plan { min_steps, max_steps, min_minutes, max_minutes } => {
                let step = object(
                    json!({
                        "start": { "type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$" },
                        "activity": string,
                        "minutes": { "type": "integer", "minimum": min_minutes, "maximum": max_minutes },
                    }),
                    &["start", "activity", "minutes"],
                );
                object(
                    json!({ "steps": {
                        "type": "array", "items": step,
                        "minItems": min_steps, "maxItems": max_steps,
                    }}),
                    &["steps"],
                )
            }
            Shape::Schedule { starts, icons, .. } => {
                let times: Vec<String> = starts.iter().map(|m| hhmm(*m)).collect();
                let step = if icons.is_empty() {
                    object(
                        json!({
                            "start": { "type": "string", "enum": times },
                            "activity": string,
                        }),
                        &["start", "activity"],
                    )
                } else {
                    object(
                        json!({
                            "start": { "type": "string", "enum": times },
                            "activity": string,
                            "emoji": { "type": "string", "enum": icons },
                        }),
                        &["start", "activity", "emoji"],
                    )
                };
                object(
                    json!({ "steps": {
                        "type": "array", "items": step,
                        "minItems": starts.len(), "maxItems": starts.len(),
                    }}),
                    &["steps"],
                )
            }
            Shape::Choice(options) => {
                object(json!({ "choice": { "type": "string", "enum": options } }), &["choice"])
            }
            Shape::Insights { count, statements } => {
                let insight = object(
                    json!({
                        "insight": string,
                        "evidence": {
                            "type": "array",
                            "items": { "type": "integer", "minimum": 1, "maximum": statements },
                            "minItems": 1, "maxItems": 5,
                        },
                    }),
                    &["insight", "evidence"],
                );
                object(
                    json!({ "insights": {
                        "type": "array", "items": insight, "minItems": count, "maxItems": count,
                    }}),
                    &["insights"],
                )
            }
            Shape::Turn => {
                object(json!({ "say": string, "end": { "type": "boolean" } }), &["say", "end"])
            }
        })
    }

    /// The blake3 hash of the answer's JSON Schema (keys sorted), `None` for free text.
    pub fn schema_hash(&self) -> Option<[u8; 32]> {
        self.json_schema().map(|schema| *blake3::hash(schema.to_string().as_bytes()).as_bytes())
    }

    /// The GBNF grammar that makes llama.cpp emit exactly this JSON, `None` for free text.
    pub fn gbnf(&self) -> Option<String> {
        const COMMON: &str = r#"
ws ::= [ ]?
string ::= "\"" char+ "\""
char ::= [^"\\\x00-\x1F\x7F] | "\\" ["\\/bfnrt]
int ::= [1-9] [0-9]?
"#;
        let key = |k: &str| format!(r#""\"{k}\"" ws ":" ws"#);
        let root = match self {
            // The embedded backend converts a caller's schema with llama.cpp's converter.
            Shape::Text | Shape::Json(_) => return None,
            Shape::Importance => {
                format!(
                    r#"root ::= "{{" ws {} rating ws "}}"
rating ::= "10" | [1-9]"#,
                    key("rating")
                )
            }
            Shape::Ratings { count } => {
                let more = count.saturating_sub(1);
                format!(
                    r#"root ::= "{{" ws {} "[" ws rating ("," ws rating){{{more}}} ws "]" ws "}}"
rating ::= "10" | [1-9]"#,
                    key("ratings")
                )
            }
            Shape::YesNo => {
                format!(r#"root ::= "{{" ws {} ("\"yes\"" | "\"no\"") ws "}}""#, key("answer"))
            }
            Shape::Plan { min_steps, max_steps, min_minutes, max_minutes } => {
                let more_min = min_steps.saturating_sub(1);
                let more_max = max_steps.saturating_sub(1).max(more_min);
                format!(
                    r#"root ::= "{{" ws {steps} "[" ws step ("," ws step){{{more_min},{more_max}}} ws "]" ws "}}"
step ::= "{{" ws {start} "\"" hh ":" mm "\"" ws "," ws {activity} activity ws "," ws {minutes} minutes ws "}}" ws
hh ::= [01] [0-9] | "2" [0-3]
mm ::= [0-5] [0-9]
activity ::= "\"" char{{1,{ACTIVITY_CHARS}}} "\""
minutes ::= {range}"#,
                    steps = key("steps"),
                    start = key("start"),
                    activity = key("activity"),
                    minutes = key("minutes"),
                    range = gbnf_range(u32::from(*min_minutes), u32::from(*max_minutes)),
                )
            }
            Shape::Schedule { starts, leads, icons, .. } => {
                // Every start is a literal, and so is each activity's lead: the model writes
                // only what the activities are (and picks each one's icon from the list).
                let icon = if icons.is_empty() {
                    String::new()
                } else {
                    format!(r#" ws "," ws {} icon"#, key("emoji"))
                };
                let lead = |i: usize| {
                    let words = leads.get(i).or(leads.last()).map_or("", String::as_str);
                    if words.is_empty() {
                        String::new()
                    } else {
                        format!("{} ", gbnf_literal(json_string(words).trim_matches('"')))
                    }
                };
                let steps: Vec<String> = starts
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        format!(
                            r#""{{" ws {start} {time} ws "," ws {activity} "\"" {lead}activity{icon} ws "}}""#,
                            start = key("start"),
                            time = gbnf_literal(&json_string(&hhmm(*m))),
                            activity = key("activity"),
                            lead = lead(i),
                        )
                    })
                    .collect();
                let icon_rule = if icons.is_empty() {
                    String::new()
                } else {
                    let alternatives: Vec<String> =
                        icons.iter().map(|i| gbnf_literal(&json_string(i))).collect();
                    format!("\nicon ::= {}", alternatives.join(" | "))
                };
                format!(
                    r#"root ::= "{{" ws {steps} "[" ws {list} ws "]" ws "}}"
activity ::= char{{1,{ACTIVITY_CHARS}}} "\""{icon_rule}"#,
                    steps = key("steps"),
                    list = if steps.is_empty() { String::new() } else { steps.join(r#" "," ws "#) },
                )
            }
            Shape::Choice(options) => {
                let alternatives: Vec<String> =
                    options.iter().map(|o| gbnf_literal(&json_string(o))).collect();
                format!(
                    r#"root ::= "{{" ws {} ({}) ws "}}""#,
                    key("choice"),
                    if alternatives.is_empty() {
                        "\"\\\"\\\"\"".to_owned()
                    } else {
                        alternatives.join(" | ")
                    }
                )
            }
            Shape::Insights { count, statements } => {
                let more = count.saturating_sub(1);
                // Evidence cites only the statements offered (a small model counts on past them).
                format!(
                    r#"root ::= "{{" ws {insights} "[" ws insight ("," ws insight){{{more}}} ws "]" ws "}}"
insight ::= "{{" ws {text} "\"" char{{1,{INSIGHT_CHARS}}} "\"" ws "," ws {evidence} "[" cite ("," ws cite){{0,4}} "]" ws "}}" ws
cite ::= {range}"#,
                    insights = key("insights"),
                    text = key("insight"),
                    evidence = key("evidence"),
                    range = gbnf_range(1, u32::from(*statements).max(1)),
                )
            }
            Shape::Turn => format!(
                r#"root ::= "{{" ws {} string ws "," ws {} ("true" | "false") ws "}}""#,
                key("say"),
                key("end")
            ),
        };
        Some(format!("{root}\n{}", COMMON.trim_start()))
    }

    /// Parses and validates a model's text into an answer.
    pub fn parse(&self, text: &str) -> Result<Answer, Invalid> {
        if let Shape::Text = self {
            let text = text.trim();
            if text.is_empty() {
                return invalid("the answer is empty");
            }
            return Ok(Answer::Text(text.to_owned()));
        }
        let value = json_in(text)?;
        if let Shape::Json(schema) = self {
            check_schema(&value, schema, "the answer")?;
            return Ok(Answer::Json(value));
        }
        let Some(fields) = value.as_object() else {
            return invalid("the answer is not a JSON object");
        };
        let field = |name: &str| {
            fields.get(name).ok_or_else(|| Invalid(format!("the answer has no `{name}`")))
        };
        match self {
            Shape::Text | Shape::Json(_) => unreachable!("handled above"),
            Shape::Importance => {
                let rating = int_in(field("rating")?, "rating", 1, 10)?;
                Ok(Answer::Importance(rating as u8))
            }
            Shape::Ratings { count } => {
                let Some(items) = field("ratings")?.as_array() else {
                    return invalid("`ratings` is not a list");
                };
                if items.len() != usize::from(*count) {
                    return invalid(format!("{} ratings, not {count}", items.len()));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(int_in(item, &format!("rating {}", i + 1), 1, 10)? as u8);
                }
                Ok(Answer::Ratings(out))
            }
            Shape::YesNo => {
                match field("answer")?.as_str().map(|s| s.trim().to_ascii_lowercase()) {
                    Some(s) if s == "yes" => Ok(Answer::YesNo(true)),
                    Some(s) if s == "no" => Ok(Answer::YesNo(false)),
                    _ => invalid("`answer` is neither \"yes\" nor \"no\""),
                }
            }
            Shape::Plan { min_steps, max_steps, min_minutes, max_minutes } => {
                let Some(steps) = field("steps")?.as_array() else {
                    return invalid("`steps` is not a list");
                };
                if steps.len() < usize::from(*min_steps) || steps.len() > usize::from(*max_steps) {
                    return invalid(format!(
                        "{} steps, outside {min_steps}..={max_steps}",
                        steps.len()
                    ));
                }
                let mut out = Vec::with_capacity(steps.len());
                for (i, step) in steps.iter().enumerate() {
                    let n = i + 1;
                    let start = step
                        .get("start")
                        .and_then(Value::as_str)
                        .and_then(clock_minute)
                        .ok_or_else(|| Invalid(format!("step {n}: `start` is not HH:MM")))?;
                    let activity = string_in(step.get("activity"), &format!("step {n}: activity"))?;
                    let minutes = int_in(
                        step.get("minutes").unwrap_or(&Value::Null),
                        &format!("step {n}: minutes"),
                        i64::from(*min_minutes),
                        i64::from(*max_minutes),
                    )?;
                    if let Some(previous) = out.last().map(|p: &PlanStep| p.start_minute) {
                        if start < previous {
                            return invalid(format!("step {n} starts before step {i}"));
                        }
                    }
                    out.push(PlanStep {
                        start_minute: start,
                        activity,
                        minutes: minutes as u16,
                        emoji: None,
                    });
                }
                Ok(Answer::Plan(out))
            }
            Shape::Schedule { starts, until, leads, icons } => {
                let Some(steps) = field("steps")?.as_array() else {
                    return invalid("`steps` is not a list");
                };
                if steps.is_empty() || steps.len() > 2 * starts.len().max(1) {
                    return invalid(format!(
                        "{} steps, where {} start times were given",
                        steps.len(),
                        starts.len()
                    ));
                }
                // A server may move a time or leave one out: its times are kept, in order,
                // and each step lasts until the next (one time twice keeps the first).
                let mut timed: Vec<(u16, String, Option<String>)> = Vec::with_capacity(steps.len());
                for (i, step) in steps.iter().enumerate() {
                    let n = i + 1;
                    let start = match step.get("start") {
                        Some(v) => v
                            .as_str()
                            .and_then(clock_minute)
                            .ok_or_else(|| Invalid(format!("step {n}: `start` is not HH:MM")))?,
                        None => *starts
                            .get(i)
                            .ok_or_else(|| Invalid(format!("step {n}: no `start`")))?,
                    };
                    if start >= *until {
                        continue; // past the end: nothing to plan there
                    }
                    let activity = string_in(step.get("activity"), &format!("step {n}: activity"))?;
                    // The longest lead it opens with goes (a server may move a step).
                    let rest = leads
                        .iter()
                        .filter(|l| !l.is_empty())
                        .filter_map(|l| activity.strip_prefix(l.as_str()))
                        .filter(|rest| !rest.trim().is_empty())
                        .min_by_key(|rest| rest.len());
                    let activity = rest.map_or(activity.clone(), |r| r.trim().to_owned());
                    // An icon outside the list (a server's own pick) is left out.
                    let emoji = step
                        .get("emoji")
                        .and_then(|e| e.as_str())
                        .filter(|e| icons.iter().any(|i| i == e))
                        .map(str::to_owned);
                    timed.push((start, activity, emoji));
                }
                if timed.is_empty() {
                    return invalid("every step starts after the end");
                }
                timed.sort_by_key(|(start, ..)| *start);
                timed.dedup_by_key(|(start, ..)| *start);
                let ends: Vec<u16> =
                    timed.iter().skip(1).map(|(start, ..)| *start).chain([*until]).collect();
                let out = timed
                    .into_iter()
                    .zip(ends)
                    .map(|((start_minute, activity, emoji), end)| PlanStep {
                        start_minute,
                        activity,
                        minutes: end - start_minute,
                        emoji,
                    })
                    .collect();
                Ok(Answer::Plan(out))
            }
            Shape::Choice(options) => {
                let said = field("choice")?.as_str().unwrap_or_default().trim();
                options
                    .iter()
                    .find(|o| o.as_str() == said)
                    .or_else(|| options.iter().find(|o| o.eq_ignore_ascii_case(said)))
                    // An option copied with what it holds: "kitchen [stove]".
                    .or_else(|| {
                        let name = said.split(" [").next().unwrap_or(said).trim();
                        options.iter().find(|o| o.eq_ignore_ascii_case(name))
                    })
                    .map(|o| Answer::Choice(o.clone()))
                    .ok_or_else(|| Invalid(format!("`choice` {said:?} is not one of the options")))
            }
            Shape::Insights { count, statements } => {
                let Some(items) = field("insights")?.as_array() else {
                    return invalid("`insights` is not a list");
                };
                if items.len() != usize::from(*count) {
                    return invalid(format!("{} insights, not {count}", items.len()));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let n = i + 1;
                    let text = string_in(item.get("insight"), &format!("insight {n}"))?;
                    let Some(cited) = item.get("evidence").and_then(Value::as_array) else {
                        return invalid(format!("insight {n}: `evidence` is not a list"));
                    };
                    let mut evidence = Vec::with_capacity(cited.len());
                    for c in cited {
                        let c = int_in(
                            c,
                            &format!("insight {n}: evidence"),
                            1,
                            i64::from(*statements),
                        )?;
                        evidence.push(c as u16);
                    }
                    evidence.sort_unstable();
                    evidence.dedup();
                    if evidence.is_empty() {
                        return invalid(format!("insight {n} cites no evidence"));
                    }
                    out.push(Insight { text, evidence });
                }
                Ok(Answer::Insights(out))
            }
            Shape::Turn => {
                let say = string_in(fields.get("say"), "say")?;
                let Some(end) = field("end")?.as_bool() else {
                    return invalid("`end` is not true or false");
                };
                Ok(Answer::Turn(Turn { say, end }))
            }
        }
    }

    /// The documented fallback (see the module's table).
    pub fn fallback(&self) -> Answer {
        match self {
            Shape::Text => Answer::Text(String::new()),
            Shape::Importance => Answer::Importance(5),
            Shape::Ratings { count } => Answer::Ratings(vec![5; usize::from(*count)]),
            Shape::YesNo => Answer::YesNo(false),
            Shape::Plan { .. } | Shape::Schedule { .. } => Answer::Plan(Vec::new()),
            Shape::Choice(options) => Answer::Choice(options.first().cloned().unwrap_or_default()),
            Shape::Insights { .. } => Answer::Insights(Vec::new()),
            Shape::Turn => Answer::Turn(Turn { say: String::new(), end: true }),
            Shape::Json(_) => Answer::Json(Value::Null),
        }
    }
}

impl Answer {
    /// The answer as canonical JSON, as `LlmResponded::parsed` stores it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| panic!("an answer always encodes: {e}"))
    }
}

/// The JSON object in a model's text: the whole text, or else the first `{` to the last
/// `}` (models like to wrap JSON in prose or code fences).
fn json_in(text: &str) -> Result<Value, Invalid> {
    let text = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok(value);
    }
    if let (Some(open), Some(close)) = (text.find('{'), text.rfind('}')) {
        if open < close {
            if let Ok(value) = serde_json::from_str::<Value>(&text[open..=close]) {
                return Ok(value);
            }
        }
    }
    let shown: String = text.chars().take(80).collect();
    invalid(format!("the answer is not JSON: {shown:?}"))
}

fn int_in(value: &Value, what: &str, min: i64, max: i64) -> Result<i64, Invalid> {
    let n = value
        .as_i64()
        .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64))
        .or_else(|| value.as_str().and_then(|s| s.trim().parse::<i64>().ok()));
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(n) => invalid(format!("{what} is {n}, outside {min}..={max}")),
        None => invalid(format!("{what} is not a whole number")),
    }
}

fn string_in(value: Option<&Value>, what: &str) -> Result<String, Invalid> {
    match value.and_then(Value::as_str).map(str::trim) {
        Some("") => invalid(format!("{what} is empty")),
        Some(s) if s.chars().count() > MAX_STRING => {
            invalid(format!("{what} is longer than {MAX_STRING} characters"))
        }
        Some(s) => Ok(s.to_owned()),
        None => invalid(format!("{what} is not a string")),
    }
}

/// Checks `value` against the supported keywords of `schema` (see [`Shape::Json`]).
fn check_schema(value: &Value, schema: &Value, at: &str) -> Result<(), Invalid> {
    let Some(rules) = schema.as_object() else { return Ok(()) };
    if let Some(t) = rules.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let fits = |t: &str| match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            _ => true,
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| fits(t)) {
            return invalid(format!("{at} is not of type {}", allowed.join(" or ")));
        }
    }
    if let Some(options) = rules.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return invalid(format!("{at} is not one of the allowed values"));
        }
    }
    if let Some(c) = rules.get("const") {
        if c != value {
            return invalid(format!("{at} is not {c}"));
        }
    }
    let limit = |k: &str| rules.get(k).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if limit("minimum").is_some_and(|m| n < m) || limit("maximum").is_some_and(|m| n > m) {
            return invalid(format!("{at} is {n}, out of range"));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as f64;
        if limit("minLength").is_some_and(|m| len < m)
            || limit("maxLength").is_some_and(|m| len > m)
        {
            return invalid(format!("{at} has {len} characters, out of range"));
        }
    }
    if let Some(items) = value.as_array() {
        let n = items.len() as f64;
        if limit("minItems").is_some_and(|m| n < m) || limit("maxItems").is_some_and(|m| n > m) {
            return invalid(format!("{at} has {n} items, out of range"));
        }
        if let Some(item_schema) = rules.get("items") {
            for (i, item) in items.iter().enumerate() {
                check_schema(item, item_schema, &format!("{at}[{i}]"))?;
            }
        }
    }
    if let Some(fields) = value.as_object() {
        let properties = rules.get("properties").and_then(Value::as_object);
        for name in rules.get("required").and_then(Value::as_array).into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !fields.contains_key(name) {
                return invalid(format!("{at} has no `{name}`"));
            }
        }
        for (name, field) in fields {
            match properties.and_then(|p| p.get(name)) {
                Some(rule) => check_schema(field, rule, &format!("{at}.{name}"))?,
                None if rules.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return invalid(format!("{at} has an unexpected `{name}`"));
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// "HH:MM" as minutes after midnight.
fn clock_minute(s: &str) -> Option<u16> {
    let (h, m) = s.trim().split_once(':')?;
    let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// `HH:MM` for minutes after midnight.
fn hhmm(minute: u16) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|e| panic!("a string always encodes: {e}"))
}

/// The longest insight a reflection may draw, in characters: one sentence. Without a bound
/// a small model runs one insight on until the answer's token budget is spent and the JSON
/// never closes. Enforced by the grammar only.
pub const INSIGHT_CHARS: usize = 160;

/// The longest activity a plan step may name, in characters: a few words, which keeps a
/// small model's plans short (and inside their token budget). Enforced by the grammar only;
/// longer activities from a server are kept as they are.
pub const ACTIVITY_CHARS: usize = 80;

/// A GBNF expression matching exactly the decimal integers `lo..=hi` (no leading zeros), so
/// a local model cannot answer out of range.
fn gbnf_range(lo: u32, hi: u32) -> String {
    let (lo, hi) = (u64::from(lo.min(hi)), u64::from(lo.max(hi)));
    let mut alternatives = Vec::new();
    let mut from = lo;
    // Split into runs of one digit count, then each run into digit patterns.
    while from <= hi {
        let digits = from.to_string().len() as u32;
        let top = (10u64.pow(digits) - 1).min(hi);
        alternatives.extend(same_length(&from.to_string(), &top.to_string()));
        from = top + 1;
    }
    format!("({})", alternatives.join(" | "))
}

/// Digit patterns matching `lo..=hi`, two numbers of the same length.
fn same_length(lo: &str, hi: &str) -> Vec<String> {
    let (Some(l), Some(h)) = (lo.chars().next(), hi.chars().next()) else {
        return vec![String::new()];
    };
    let (lo_rest, hi_rest) = (&lo[1..], &hi[1..]);
    let join = |head: String, tail: &str| {
        if tail.is_empty() {
            head
        } else {
            format!("{head} {tail}")
        }
    };
    if l == h {
        return same_length(lo_rest, hi_rest)
            .into_iter()
            .map(|tail| join(format!("\"{l}\""), &tail))
            .collect();
    }
    let any = vec!["[0-9]"; lo_rest.len()].join(" ");
    let mut out = Vec::new();
    let mut first = l as u8;
    if lo_rest.chars().any(|c| c != '0') {
        let nines = "9".repeat(lo_rest.len());
        out.extend(
            same_length(lo_rest, &nines).into_iter().map(|tail| join(format!("\"{l}\""), &tail)),
        );
        first += 1;
    }
    let mut last = h as u8;
    let hi_side = hi_rest.chars().any(|c| c != '9');
    if hi_side {
        last -= 1;
    }
    if first <= last {
        out.push(join(format!("[{}-{}]", first as char, last as char), &any));
    }
    if hi_side {
        let zeros = "0".repeat(hi_rest.len());
        out.extend(
            same_length(&zeros, hi_rest).into_iter().map(|tail| join(format!("\"{h}\""), &tail)),
        );
    }
    out
}

/// A GBNF literal matching exactly `s`.
fn gbnf_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn importance_is_one_to_ten_and_nothing_else() {
        let s = Shape::Importance;
        assert_eq!(s.parse(r#"{"rating": 7}"#), Ok(Answer::Importance(7)));
        assert_eq!(s.parse("```json\n{\"rating\": 10}\n```"), Ok(Answer::Importance(10)));
        assert!(s.parse(r#"{"rating": 1000000000000000}"#).is_err());
        assert!(s.parse(r#"{"rating": 0}"#).is_err());
        assert!(s.parse(r#"{"rating": 2.5}"#).is_err());
        assert!(s.parse("this is blank").is_err());
        assert!(s.parse("").is_err());
    }

    #[test]
    fn ratings_are_one_per_memory_each_one_to_ten() {
        let s = Shape::Ratings { count: 3 };
        assert_eq!(s.parse(r#"{"ratings": [2, 9, 10]}"#), Ok(Answer::Ratings(vec![2, 9, 10])));
        assert!(s.parse(r#"{"ratings": [2, 9]}"#).is_err(), "too few");
        assert!(s.parse(r#"{"ratings": [2, 9, 4, 4]}"#).is_err(), "too many");
        assert!(s.parse(r#"{"ratings": [2, 11, 4]}"#).is_err());
        assert!(s.parse(r#"{"ratings": "high"}"#).is_err());
        assert_eq!(s.fallback(), Answer::Ratings(vec![5, 5, 5]));
        let g = s.gbnf().unwrap_or_default();
        assert!(g.contains(r#"("," ws rating){2}"#), "{g}");
    }

    #[test]
    fn plans_have_times_durations_and_order() {
        let s = Shape::day_plan();
        let steps: Vec<String> = (0..5)
            .map(|i| format!(r#"{{"start":"{:02}:00","activity":"step {i}","minutes":60}}"#, 7 + i))
            .collect();
        let ok = format!(r#"{{"steps":[{}]}}"#, steps.join(","));
        let Ok(Answer::Plan(plan)) = s.parse(&ok) else { panic!("a sound plan parses") };
        assert_eq!(plan.len(), 5);
        assert_eq!(plan[0].start_minute, 7 * 60);
        assert!(s.parse(&ok.replace("\"07:00\"", "\"25:00\"")).is_err(), "no 25 o'clock");
        assert!(s.parse(&ok.replace("\"11:00\"", "\"06:00\"")).is_err(), "time order");
        let short = format!(r#"{{"steps":[{}]}}"#, steps[..4].join(","));
        assert!(s.parse(&short).is_err(), "a day plan has at least 5 steps");
    }

    /// Whether `text` matches a pattern of `gbnf_range`: alternatives of `"d"` literals and
    /// `[a-b]` classes separated by spaces.
    fn matches_range(pattern: &str, text: &str) -> bool {
        let inner = pattern.trim_start_matches('(').trim_end_matches(')');
        inner.split(" | ").any(|alternative| {
            let parts: Vec<&str> = alternative.split(' ').collect();
            parts.len() == text.len()
                && parts.iter().zip(text.chars()).all(|(p, c)| {
                    if let Some(lit) = p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
                        lit.len() == 1 && lit.starts_with(c)
                    } else {
                        let b = p.as_bytes();
                        b.len() == 5 && b[0] == b'[' && (b[1] as char..=b[3] as char).contains(&c)
                    }
                })
        })
    }

    #[test]
    fn number_ranges_in_grammars_match_exactly_the_range() {
        for (lo, hi) in
            [(30, 600), (5, 15), (15, 120), (1, 10), (0, 9), (7, 7), (99, 101), (10, 1000)]
        {
            let pattern = gbnf_range(lo, hi);
            for n in 0..=1200u32 {
                assert_eq!(
                    matches_range(&pattern, &n.to_string()),
                    (lo..=hi).contains(&n),
                    "{n} against {lo}..={hi}: {pattern}"
                );
            }
            assert!(!matches_range(&pattern, "030"), "no leading zeros: {pattern}");
        }
        let plan = Shape::day_plan().gbnf().unwrap();
        assert!(plan.contains(&format!("char{{1,{ACTIVITY_CHARS}}}")), "{plan}");
        assert!(plan.contains(&gbnf_range(30, 600)), "{plan}");
        let insights = Shape::Insights { count: 2, statements: 9 }.gbnf().unwrap();
        assert!(insights.contains(&format!("cite ::= {}", gbnf_range(1, 9))), "{insights}");
        assert!(!insights.contains(" int"), "evidence is not any integer: {insights}");
    }

    #[test]
    fn a_schedule_has_the_given_times_and_each_step_lasts_until_the_next() {
        let s = Shape::Schedule {
            starts: vec![7 * 60, 9 * 60, 17 * 60],
            until: 22 * 60,
            leads: vec!["Mei Lin ".into()],
            icons: Vec::new(),
        };
        let grammar = s.gbnf().unwrap();
        for time in ["07:00", "09:00", "17:00"] {
            assert!(grammar.contains(&format!(r#""\"{time}\"""#)), "{time} is literal: {grammar}");
        }
        assert!(grammar.contains(r#""\"" "Mei Lin " activity"#), "the lead is written: {grammar}");
        assert!(!grammar.contains("hh"), "the model writes no times: {grammar}");
        let ok = r#"{"steps":[{"start":"07:00","activity":"Mei Lin opens the café"},
            {"start":"09:00","activity":"serves breakfast"},
            {"start":"17:00","activity":"hosts the party"}]}"#;
        let Ok(Answer::Plan(plan)) = s.parse(ok) else { panic!("a sound schedule parses") };
        let lengths: Vec<u16> = plan.iter().map(|p| p.minutes).collect();
        assert_eq!(lengths, [120, 480, 300], "until the next start, the last until the end");
        assert_eq!(plan[2].activity, "hosts the party");
        assert_eq!(plan[0].activity, "opens the café", "the lead is taken off");
        // A server that reorders or repeats a time: its times are kept, sorted, first wins.
        let odd = r#"{"steps":[{"start":"17:00","activity":"party"},
            {"start":"07:00","activity":"wakes"},{"start":"07:00","activity":"again"}]}"#;
        let Ok(Answer::Plan(plan)) = s.parse(odd) else { panic!("parses") };
        let kept: Vec<(u16, u16)> = plan.iter().map(|p| (p.start_minute, p.minutes)).collect();
        assert_eq!(kept, [(420, 600), (1020, 300)]);
        assert!(s.parse(r#"{"steps":[]}"#).is_err(), "no steps");
        let late = ok.replace("17:00", "23:00");
        let Ok(Answer::Plan(plan)) = s.parse(&late) else { panic!("parses") };
        assert_eq!(plan.len(), 2, "a step past the end is left out");
        let all_late = r#"{"steps":[{"start":"22:00","activity":"sleeps"}]}"#;
        assert!(s.parse(all_late).is_err(), "nothing before the end");
        assert!(plan.iter().all(|p| p.emoji.is_none()), "no icon asked, none given");

        // A lead for each time of day, taken off whichever step it opens.
        let s = Shape::Schedule {
            starts: vec![7 * 60, 12 * 60],
            until: 14 * 60,
            leads: vec!["Mei ".into(), "At lunchtime, Mei ".into()],
            icons: Vec::new(),
        };
        let grammar = s.gbnf().unwrap();
        assert!(grammar.contains(r#""\"" "At lunchtime, Mei " activity"#), "{grammar}");
        let ok = r#"{"steps":[{"start":"07:00","activity":"Mei wakes"},
            {"start":"12:00","activity":"At lunchtime, Mei eats soup"}]}"#;
        let Ok(Answer::Plan(plan)) = s.parse(ok) else { panic!("parses") };
        assert_eq!([plan[0].activity.as_str(), &plan[1].activity], ["wakes", "eats soup"]);
    }

    #[test]
    fn a_schedule_may_ask_each_step_for_an_icon_from_a_list() {
        let plain = Shape::Schedule {
            starts: vec![420, 480],
            until: 540,
            leads: Vec::new(),
            icons: Vec::new(),
        };
        let s = Shape::Schedule {
            starts: vec![420, 480],
            until: 540,
            leads: Vec::new(),
            icons: vec!["☕".into(), "🎨".into()],
        };
        let grammar = s.gbnf().unwrap();
        assert!(grammar.contains(r#"icon ::= "\"☕\"" | "\"🎨\"""#), "{grammar}");
        assert!(grammar.contains(r#"activity ws "," ws "\"emoji\"" ws ":" ws icon"#), "{grammar}");
        assert!(!plain.gbnf().unwrap().contains("icon"), "none asked");
        assert_ne!(s.schema_hash(), plain.schema_hash(), "the icons are part of the question");
        let answer = r#"{"steps":[{"start":"07:00","activity":"makes coffee","emoji":"☕"},
            {"start":"08:00","activity":"paints","emoji":"🚀"}]}"#;
        let Ok(Answer::Plan(plan)) = s.parse(answer) else { panic!("parses") };
        assert_eq!(plan[0].emoji.as_deref(), Some("☕"));
        assert_eq!(plan[1].emoji, None, "an icon off the list is left out");
    }

    #[test]
    fn a_choice_is_one_of_the_options() {
        let s = Shape::Choice(vec!["Lin house:kitchen".into(), "Marigold café:counter".into()]);
        assert_eq!(
            s.parse(r#"{"choice":"marigold café:counter"}"#),
            Ok(Answer::Choice("Marigold café:counter".into()))
        );
        assert!(s.parse(r#"{"choice":"the moon"}"#).is_err());
        assert_eq!(s.fallback(), Answer::Choice("Lin house:kitchen".into()));
        // An option copied with what the prompt said it holds.
        assert_eq!(
            s.parse(r#"{"choice":"Lin house:kitchen [stove, fridge]"}"#),
            Ok(Answer::Choice("Lin house:kitchen".into()))
        );
        assert!(s.parse(r#"{"choice":"the moon [stove]"}"#).is_err());
    }

    #[test]
    fn insights_cite_statements_that_exist() {
        let s = Shape::Insights { count: 2, statements: 4 };
        let ok =
            r#"{"insights":[{"insight":"a","evidence":[2,1,2]},{"insight":"b","evidence":[4]}]}"#;
        let Ok(Answer::Insights(found)) = s.parse(ok) else { panic!("parses") };
        assert_eq!(found[0].evidence, vec![1, 2], "sorted and distinct");
        assert!(s.parse(&ok.replace("[4]", "[5]")).is_err(), "statement 5 does not exist");
        assert!(s.parse(&ok.replace("[4]", "[]")).is_err(), "no evidence");
    }

    #[test]
    fn a_turn_says_something_and_may_end() {
        let s = Shape::Turn;
        assert_eq!(
            s.parse(r#"{"say":"Hello, Mei!","end":false}"#),
            Ok(Answer::Turn(Turn { say: "Hello, Mei!".into(), end: false }))
        );
        assert!(s.parse(r#"{"say":"  ","end":true}"#).is_err());
        assert!(s.parse(r#"{"say":"hi","end":"maybe"}"#).is_err());
    }

    #[test]
    fn a_callers_schema_is_checked() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mood": { "type": "string", "enum": ["calm", "tense"] },
                "score": { "type": "integer", "minimum": 0, "maximum": 3 },
            },
            "required": ["mood", "score"],
            "additionalProperties": false,
        });
        let s = Shape::Json(schema);
        assert!(s.parse(r#"{"mood":"calm","score":2}"#).is_ok());
        assert!(s.parse(r#"{"mood":"angry","score":2}"#).is_err());
        assert!(s.parse(r#"{"mood":"calm","score":7}"#).is_err());
        assert!(s.parse(r#"{"mood":"calm"}"#).is_err());
        assert!(s.parse(r#"{"mood":"calm","score":1,"extra":true}"#).is_err());
        assert!(s.parse(r#"{"mood":"calm","score":1.5}"#).is_err());
    }

    #[test]
    fn every_structured_shape_has_a_schema_and_a_grammar() {
        let shapes = [
            Shape::Importance,
            Shape::Ratings { count: 4 },
            Shape::YesNo,
            Shape::day_plan(),
            Shape::Schedule {
                starts: vec![420, 540],
                until: 1350,
                leads: vec!["Mei ".into()],
                icons: vec!["☕".into()],
            },
            Shape::Choice(vec!["a \"quoted\" place".into()]),
            Shape::Insights { count: 3, statements: 10 },
            Shape::Turn,
        ];
        let mut hashes = Vec::new();
        for s in &shapes {
            assert!(s.json_schema().is_some(), "{}", s.name());
            let g = s.gbnf().unwrap_or_default();
            assert!(g.starts_with("root ::= "), "{}: {g}", s.name());
            hashes.push(s.schema_hash());
        }
        hashes.sort();
        hashes.dedup();
        assert_eq!(hashes.len(), shapes.len(), "distinct shapes hash apart");
        assert!(Shape::Text.gbnf().is_none() && Shape::Text.schema_hash().is_none());
    }
}
