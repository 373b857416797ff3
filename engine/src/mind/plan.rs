//! Planning, top down as the paper does it: a day in broad strokes from the agent's summary
//! and yesterday; a stroke decomposed into hour-long parts, then into actions of a quarter
//! hour or less; and where each happens, chosen by walking the agent's own spatial tree
//! (sector → arena → object), where it already is offered first. Plans are `PlanMade`
//! events (a decomposition names the item it decomposes) and enter the memory stream.
//!
//! At every level the times are given and the model says what happens at each
//! ([`Shape::Schedule`]): the day from an hour after waking (the first hour is [`MORNING`],
//! as the paper's plans begin) and at [`DAY_TIMES`], a stroke's parts on the
//! hour, a part's actions on the quarter hour; each item lasts until the next, and the day
//! ends in [`SLEEP`] at [`BEDTIME_MINUTE`]. A 1.5B model asked for its own times and lengths
//! planned the morning in half hours and stopped at lunch, and spent most of its tokens on
//! them; the grammar now writes the times (and the agent's name before each activity, which
//! keeps the model on that person), so the plan covers the day by construction.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, PlanStep, Shape};
use hamlet_gateway::Gateway;
use hamlet_log::event::{AgentId, MemoryKind, PlanItem, PlanLevel, PlanMade, PlanRef};
use hamlet_log::Body;

use super::memory::MemoryStream;
use super::prompt::{template, Style};
use super::retrieval::RetrievalSettings;
use super::think::{ask, recall, remember, ThinkError, Who};
use super::validate;
use crate::pending::{Cause, Pending, PendingId};
use crate::rulebook::Rulebook;
use crate::town::spatial::SpatialMemory;

/// "HH:MM" of minutes after midnight.
fn clock(minute: u64) -> String {
    format!("{:02}:{:02}", (minute / 60) % 24, minute % 60)
}

fn items(steps: &[PlanStep], day_start_secs: u64) -> Vec<PlanItem> {
    let mut items: Vec<PlanItem> = steps
        .iter()
        .map(|s| PlanItem {
            description: match &s.emoji {
                Some(icon) => format!("{icon} {}", without_clock(&s.activity)),
                None => without_clock(&s.activity).to_owned(),
            },
            address: String::new(),
            start_secs: day_start_secs + u64::from(s.start_minute) * 60,
            duration_secs: u32::from(s.minutes) * 60,
        })
        .collect();
    plausible(&mut items);
    items
}

/// An activity without a time the model tacked on ("goes to work at 09:00", "works until
/// 17:00"): the plan item has its own times.
fn without_clock(activity: &str) -> &str {
    let trimmed = activity.trim_end_matches(['.', ' ']);
    let Some((head, time)) = trimmed.rsplit_once(' ') else { return activity };
    let is_clock = time.len() == 5
        && time.as_bytes()[2] == b':'
        && time.bytes().enumerate().all(|(i, b)| i == 2 || b.is_ascii_digit());
    if !is_clock {
        return activity;
    }
    for word in [" at", " until", " by", " from", " around"] {
        if let Some(rest) = head.strip_suffix(word) {
            if !rest.trim().is_empty() {
                return rest.trim_end_matches([',', ' ']);
            }
        }
    }
    activity
}

/// The icons an action may carry: the model picks one for each action it plans (the
/// paper's emoji), from this list, which the grammar holds it to. One code point each.
pub const ACTION_ICONS: &[&str] = &[
    "😴", "🚿", "🪥", "👕", "🍳", "☕", "🍽", "🥪", "🍰", "🛒", "💼", "💻", "📚", "✍", "🎨", "🎵",
    "🧹", "🧺", "🌱", "🔧", "📦", "🧾", "🚶", "🏃", "🧘", "💬", "📞", "🎉", "🍺", "📺", "🛋", "🏛",
];

/// A planned action's icon and its words: an action's plan item opens with the icon the
/// model picked ("☕ makes coffee"); ("", the description) when it has none.
pub fn icon_of(description: &str) -> (&str, &str) {
    match description.split_once(' ') {
        Some((head, rest)) if ACTION_ICONS.contains(&head) => (head, rest),
        _ => ("", description),
    }
}

/// Words of activities that are done at home, whatever a small model picks (asked where
/// to wake up, it chose the café its agent owns).
const AT_HOME: &[&str] = &[
    "wake", "wakes", "waking", "sleep", "sleeps", "sleeping", "asleep", "bed", "shower", "showers",
    "bath", "brush", "brushes", "teeth", "dressed", "dresses", "pyjamas",
];

/// True when `activity` is done at home ([`AT_HOME`]).
pub fn at_home(activity: &str) -> bool {
    activity
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| AT_HOME.contains(&w.to_lowercase().as_str()))
}

/// Everyday activities and the most minutes each takes: nobody brushes their teeth for
/// two and a half hours, whatever a small model plans.
const EVERYDAY: &[(&str, u32)] = &[
    ("brush", 10),
    ("teeth", 10),
    ("shower", 30),
    ("get dressed", 15),
    ("gets dressed", 15),
    ("make the bed", 10),
    ("makes the bed", 10),
    ("make coffee", 15),
    ("makes coffee", 15),
];

/// The most minutes an everyday activity takes, if `activity` names one.
pub fn everyday_limit(activity: &str) -> Option<u32> {
    let words = activity.to_lowercase();
    EVERYDAY.iter().filter(|(w, _)| words.contains(w)).map(|(_, m)| *m).min()
}

/// Cuts everyday activities planned too long to their limit; the next item starts where the
/// cut one now ends (so the day stays covered).
fn plausible(items: &mut [PlanItem]) {
    for i in 0..items.len() {
        let Some(limit) = everyday_limit(&items[i].description) else { continue };
        if items[i].duration_secs <= limit * 60 {
            continue;
        }
        items[i].duration_secs = limit * 60;
        let end = items[i].start_secs + u64::from(limit) * 60;
        if let Some(next) = items.get_mut(i + 1) {
            if next.start_secs > end {
                let gap = next.start_secs - end;
                next.start_secs = end;
                next.duration_secs = next.duration_secs.saturating_add(gap as u32);
            }
        }
    }
}

/// Keeps each everyday part of a decomposition to its bound while the parts still cover
/// their stretch of time (rulebook 2, [`Rulebook::bounds_everyday_actions`]): the part after one
/// cut short begins earlier; a last part cut short begins later, the part before it lasting
/// until then; a part alone is only cut (the rest of its stretch is free time). `parts`
/// are in time order, each lasting until the next begins.
fn keep_everyday_bounds(parts: &mut [PlanItem]) {
    for i in 0..parts.len() {
        let Some(limit) = everyday_limit(&parts[i].description) else { continue };
        let limit_secs = limit * 60;
        let over = parts[i].duration_secs.saturating_sub(limit_secs);
        if over == 0 {
            continue;
        }
        if i + 1 < parts.len() {
            parts[i + 1].start_secs -= u64::from(over);
            parts[i + 1].duration_secs = parts[i + 1].duration_secs.saturating_add(over);
        } else if i > 0 && everyday_limit(&parts[i - 1].description).is_none() {
            parts[i].start_secs += u64::from(over);
            parts[i - 1].duration_secs = parts[i - 1].duration_secs.saturating_add(over);
        }
        parts[i].duration_secs = limit_secs;
    }
}

/// The words a plan is remembered by.
pub fn plan_words(name: &str, plan: &PlanMade) -> String {
    format!("{name} plans: {}", plan_steps(plan))
}

/// A plan's items in words: `HH:MM what (N min); …`.
pub fn plan_steps(plan: &PlanMade) -> String {
    let parts: Vec<String> = plan
        .items
        .iter()
        .map(|i| {
            let words = icon_of(&i.description).1;
            format!("{} {} ({} min)", clock(i.start_secs / 60), words, i.duration_secs / 60)
        })
        .collect();
    parts.join("; ")
}

/// The three retrievals an agent's summary description is made from: who it is, what it
/// does each day, and how its life is going.
pub fn summary_queries(name: &str) -> [String; 3] {
    [
        format!("who {name} is at heart"),
        format!("what {name} does each day"),
        format!("how {name} feels about how life is going lately"),
    ]
}

/// Writes `agent`'s summary description from what it remembers (the paper's cached agent
/// summary): three retrievals ([`summary_queries`]), their memories in one `summary` call.
/// Returns the description (`None` when the answer was the empty fallback) and the position
/// of the answer's last event. The loop folds the description from the answer's events.
#[allow(clippy::too_many_arguments)]
pub async fn summarise(
    gateway: &Gateway,
    style: Style,
    agent: AgentId,
    name: &str,
    stream: &MemoryStream,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(Option<String>, Option<PendingId>), ThinkError> {
    let mut causes = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for query in summary_queries(name) {
        let (retrieved, at) =
            recall(gateway, agent, stream, &query, now, retrieval, pending).await?;
        causes.push(Cause::Pending(at));
        for hit in &retrieved.hits {
            let Some(memory) = stream.get(hit.memory) else { continue };
            if !lines.contains(&memory.description.as_str()) {
                lines.push(&memory.description);
            }
        }
    }
    let memories: Vec<String> = lines.iter().map(|l| format!("- {l}")).collect();
    let vars = BTreeMap::from([("agent", name.to_owned()), ("memories", memories.join("\n"))]);
    let mut call = template("summary")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(agent);
    call.max_tokens = Some(160);
    let (answered, at) = ask(gateway, call, &causes, now, pending).await?;
    let text = match answered.answer {
        Answer::Text(t) if !t.trim().is_empty() => Some(t.trim().to_owned()),
        _ => None,
    };
    Ok((text, at))
}

/// What `who` renews its `currently` from each morning (rulebook 4): one retrieval.
pub fn currently_query(name: &str) -> String {
    format!("what {name} is busy with, has promised, was invited to and looks forward to")
}

/// Renews `who`'s `currently` on the morning of `date` (rulebook 4): what it remembers of
/// what it is busy with ([`currently_query`]) and yesterday's plan, in one `currently` call
/// (the old line is in the identity its prompt opens with). Returns the new line (`None`
/// when the answer was the fallback or empty) and the position of the answer's last event;
/// the loop folds the line from the answer's events.
#[allow(clippy::too_many_arguments)]
pub async fn renew_currently(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    stream: &MemoryStream,
    date: &str,
    yesterday: &str,
    now: u64,
    retrieval: &RetrievalSettings,
    pending: &mut Pending,
) -> Result<(Option<String>, Option<PendingId>), ThinkError> {
    let (recalled, at) =
        recall(gateway, who.agent, stream, &currently_query(who.name), now, retrieval, pending)
            .await?;
    let mut found: Vec<(usize, &str)> = recalled
        .hits
        .iter()
        .filter_map(|h| {
            let i = stream.position(h.memory)?;
            Some((i, stream.memories()[i].description.as_str()))
        })
        .collect();
    found.sort_by_key(|(i, _)| *i);
    let memories: Vec<&str> = found.into_iter().map(|(_, d)| d).collect();
    let mut vars = who.vars();
    vars.insert("date", date.to_owned());
    vars.insert("yesterday", yesterday.to_owned());
    vars.insert(
        "memories",
        if memories.is_empty() { "nothing in particular".to_owned() } else { memories.join("; ") },
    );
    let mut call = template("currently")?.call(&vars, style, Shape::Text)?;
    call.agent = Some(who.agent);
    call.max_tokens = Some(90);
    let (answered, asked) = ask(gateway, call, &[Cause::Pending(at)], now, pending).await?;
    let text = match answered.answer {
        Answer::Text(t) if !answered.fallback => Some(super::respond::one_line(&t)),
        _ => None,
    };
    Ok((text.filter(|t| !t.is_empty()), asked))
}

/// Every day plan's first stroke, from waking for [`MORNING_MINUTES`], not asked of the
/// model: the paper's plans begin the same way ("wake up and complete the morning
/// routine"), and asked for it, the 1.5B model planned "wakes up and goes to bed" and slept
/// through the morning.
pub const MORNING: &str = "wakes up and gets ready for the day";

/// How long [`MORNING`] lasts.
pub const MORNING_MINUTES: u16 = 60;

/// The times of day a day plan has a stroke for (after the morning, whose end always has
/// one), minutes after midnight: the model says what happens at each, and each stroke lasts
/// until the next. A small model asked for its own times plans the morning in half hours and
/// stops at lunch; given the times, its day reaches the evening.
pub const DAY_TIMES: [u16; 6] = [9 * 60, 12 * 60, 14 * 60, 17 * 60, 19 * 60, 21 * 60];

/// When agents go to bed, minutes after midnight: the day plan's last stroke ends here and
/// [`SLEEP`] takes the rest of the day.
pub const BEDTIME_MINUTE: u16 = 22 * 60 + 30;

pub use crate::mind::schedule::SLEEP;

/// The words a day plan's stroke starting at `minute` opens with, before the agent's name
/// ("At lunchtime, "): told only "12:00", a small model put lunch in the evening and dinner
/// at noon. Nothing before nine (the stroke at waking).
pub fn time_of_day(minute: u16) -> &'static str {
    match minute / 60 {
        0..=8 => "",
        9..=11 => "In the morning, ",
        12..=13 => "At lunchtime, ",
        14..=16 => "In the afternoon, ",
        17..=18 => "In the early evening, ",
        19..=20 => "In the evening, ",
        _ => "Late in the evening, ",
    }
}

/// The start times the model plans a day at, for an agent who wakes at `wake_minute`: the
/// end of [`MORNING`], then each of [`DAY_TIMES`] at least half an hour later.
pub fn day_times(wake_minute: u16) -> Vec<u16> {
    let first = wake_minute + MORNING_MINUTES;
    std::iter::once(first)
        .chain(DAY_TIMES.iter().copied().filter(|t| *t >= first + 30))
        .filter(|t| *t < BEDTIME_MINUTE)
        .collect()
}

/// Plans `agent`'s day starting at `day_start_secs` (midnight of that day) from its summary,
/// yesterday's plan and what it remembers of today (`today`; the request is caused by
/// `because`: the summary's answer and that retrieval): [`MORNING`] from waking, then one
/// stroke at each of [`day_times`] (a stroke a server put before the morning's end is left
/// out), then [`SLEEP`] from bedtime; adds the call's events, the
/// `PlanMade` and the plan as a memory to the batch. An empty plan (the documented fallback)
/// is recorded and not remembered.
#[allow(clippy::too_many_arguments)]
pub async fn plan_day(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    date: &str,
    yesterday: &str,
    today: &str,
    wake_minute: u16,
    day_start_secs: u64,
    appointments: &[PlanItem],
    checks: Option<&[String]>,
    because: &[Cause],
    now: u64,
    rulebook: Rulebook,
    pending: &mut Pending,
) -> Result<(PlanMade, PendingId), ThinkError> {
    let (agent, name) = (who.agent, who.name);
    let starts = day_times(wake_minute);
    let fixed = appointment_words(appointments);
    let today = if fixed.is_empty() {
        today.to_owned()
    } else {
        format!("{today} Fixed appointments today: {fixed}.").trim().to_owned()
    };
    let today = today.as_str();
    let times: Vec<String> = starts.iter().map(|m| clock(u64::from(*m))).collect();
    let mut vars = who.vars();
    vars.insert("yesterday", yesterday.to_owned());
    let today = if today.trim().is_empty() { "nothing in particular" } else { today };
    vars.insert("today", today.to_owned());
    vars.insert("date", date.to_owned());
    vars.insert("wake", clock(u64::from(wake_minute)));
    vars.insert("ready", clock(u64::from(wake_minute + MORNING_MINUTES)));
    vars.insert("times", times.join(", "));
    let leads = starts.iter().map(|m| format!("{}{name} ", time_of_day(*m))).collect();
    let shape = Shape::Schedule { starts, until: BEDTIME_MINUTE, leads, icons: Vec::new() };
    let mut causes_now = because.to_vec();
    let mut corrected = false;
    let (asked, steps) = loop {
        let mut call = template("day_plan")?.call(&vars, style, shape.clone())?;
        call.agent = Some(agent);
        // Each stroke is about 20 tokens of JSON around a few words (a wordy one twice that).
        call.max_tokens = Some(rulebook.day_plan_tokens_per_stroke() * times.len() as u32 + 16);
        let (answered, asked) = ask(gateway, call, &causes_now, now, pending).await?;
        let mut steps = match &answered.answer {
            Answer::Plan(steps) => steps.clone(),
            _ => Vec::new(),
        };
        // Rulebook 4: a stroke that copies a persona statement, contradicts its hour, or
        // wakes up again after the morning is asked for again once; one still wrong merges
        // into the stroke before it.
        let Some(seed) = checks else { break (asked, steps) };
        let faults: Vec<Option<String>> = steps
            .iter()
            .map(|st| stroke_fault(&st.activity, st.start_minute, name, seed))
            .collect();
        if faults.iter().all(Option::is_none) {
            break (asked, steps);
        }
        if corrected {
            merge_faulty(&mut steps, &faults);
            break (asked, steps);
        }
        corrected = true;
        let told: Vec<String> = steps
            .iter()
            .zip(&faults)
            .filter_map(|(st, f)| {
                let why = f.as_ref()?;
                Some(format!("\"{}\" at {}: {why}", st.activity, clock(u64::from(st.start_minute))))
            })
            .collect();
        vars.insert(
            "times",
            format!(
                "{}\n(Planned before and not used: {}. Plan these times again.)",
                times.join(", "),
                told.join("; ")
            ),
        );
        causes_now = because.to_vec();
        causes_now.extend(asked.map(Cause::Pending));
    };
    let first = u64::from(wake_minute + MORNING_MINUTES) * 60;
    let mut items: Vec<PlanItem> = items(&steps, day_start_secs)
        .into_iter()
        .filter(|i| i.start_secs >= day_start_secs + first)
        .collect();
    if !items.is_empty() {
        items.insert(
            0,
            PlanItem {
                description: MORNING.to_owned(),
                address: String::new(),
                start_secs: day_start_secs + u64::from(wake_minute) * 60,
                duration_secs: u32::from(MORNING_MINUTES) * 60,
            },
        );
        let bedtime = u64::from(BEDTIME_MINUTE) * 60;
        items.push(PlanItem {
            description: SLEEP.to_owned(),
            address: String::new(),
            start_secs: day_start_secs + bedtime,
            duration_secs: (86_400 - bedtime) as u32,
        });
    }
    // What was agreed is kept as agreed, whatever the model planned then.
    let items = if items.is_empty() { items } else { with_appointments(items, appointments) };
    let plan = PlanMade { agent, level: PlanLevel::Day, decomposes: None, items };
    let causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
    let at = pending.push(now, Body::PlanMade(plan.clone()), &causes);
    if !plan.items.is_empty() {
        let words = plan_words(name, &plan);
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
    }
    Ok((plan, at))
}

/// What is wrong with a day plan's stroke (rulebook 4): what [`validate::check_action`]
/// finds, or waking up again after the morning (which [`MORNING`] already is).
fn stroke_fault(activity: &str, minute: u16, name: &str, seed: &[String]) -> Option<String> {
    let seed: Vec<&str> = seed.iter().map(String::as_str).collect();
    if let Some(fault) = validate::check_action(activity, minute, name, &seed) {
        return Some(fault.why());
    }
    let lower = activity.to_lowercase();
    ["wakes up", "wake up", "waking up"]
        .iter()
        .any(|w| lower.contains(w))
        .then(|| "the morning routine is already planned: say what comes after it".to_owned())
}

/// Merges each faulty step (`faults[i]` set) into the good step before it, which then lasts
/// until the next; faulty steps before the first good one go to it, which starts earlier.
/// With no good step, the steps stay as they are.
fn merge_faulty(steps: &mut Vec<PlanStep>, faults: &[Option<String>]) {
    if faults.iter().all(Option::is_some) {
        return;
    }
    let mut kept: Vec<PlanStep> = Vec::with_capacity(steps.len());
    let mut head: Option<(u16, u16)> = None; // (start, minutes) of faulty steps at the head
    for (step, fault) in steps.drain(..).zip(faults) {
        match (fault, kept.last_mut()) {
            (Some(_), Some(before)) => before.minutes = before.minutes.saturating_add(step.minutes),
            (Some(_), None) => {
                let (start, minutes) = head.unwrap_or((step.start_minute, 0));
                head = Some((start, minutes.saturating_add(step.minutes)));
            }
            (None, _) => {
                let mut step = step;
                if let Some((start, minutes)) = head.take() {
                    step.start_minute = start;
                    step.minutes = step.minutes.saturating_add(minutes);
                }
                kept.push(step);
            }
        }
    }
    *steps = kept;
}

/// Appointments in words for a day plan's prompt: "17:00–19:00 goes to Delphine's party
/// (Marigold café); …".
pub fn appointment_words(appointments: &[PlanItem]) -> String {
    let words: Vec<String> = appointments
        .iter()
        .map(|a| {
            let end = a.start_secs + u64::from(a.duration_secs);
            let place = a.address.split(':').next().unwrap_or("");
            format!("{}–{} {} ({place})", clock(a.start_secs / 60), clock(end / 60), a.description)
        })
        .collect();
    words.join("; ")
}

/// A day's items with `appointments` kept as fixed items (rulebook 4, what was agreed in
/// conversations): each item an appointment overlaps is cut around it (the part before and
/// the part after keep its words and place), the appointment goes in, all in time order.
/// The day stays covered as it was; the appointments take their stretches.
pub fn with_appointments(items: Vec<PlanItem>, appointments: &[PlanItem]) -> Vec<PlanItem> {
    let mut out = items;
    for a in appointments {
        let (s, e) = (a.start_secs, a.start_secs + u64::from(a.duration_secs));
        let mut cut = Vec::with_capacity(out.len() + 2);
        for item in out {
            let (b, f) = (item.start_secs, item.start_secs + u64::from(item.duration_secs));
            if f <= s || b >= e {
                cut.push(item);
                continue;
            }
            if b < s {
                cut.push(PlanItem { duration_secs: (s - b) as u32, ..item.clone() });
            }
            if f > e {
                cut.push(PlanItem { start_secs: e, duration_secs: (f - e) as u32, ..item });
            }
        }
        cut.push(a.clone());
        cut.sort_by_key(|i| i.start_secs);
        out = cut;
    }
    out
}

/// How long an hour part is: the parts of a day's stroke start on the hour.
const PART_MINUTES: u16 = 60;

/// How long an action is: an hour part's actions start on the quarter hour (the paper's
/// actions last 5 to 15 minutes; an everyday one planned longer is cut, [`everyday_limit`],
/// and by rulebook 2 it stays cut inside the hour, [`keep_everyday_bounds`]).
const ACTION_MINUTES: u16 = 15;

/// Start times from `first` to before `until` (minutes after midnight): `first`, then every
/// multiple of `every` after it, leaving out one less than a third of `every` after the
/// previous (a stroke that begins at 07:55 is not given a part at 08:00).
pub fn step_times(first: u16, until: u16, every: u16) -> Vec<u16> {
    let every = every.max(1);
    let mut times = vec![first];
    let mut next = (first / every + 1) * every;
    while next < until {
        if next - times[times.len() - 1] >= every / 3 {
            times.push(next);
        }
        next += every;
    }
    times
}

/// Decomposes one committed plan item into finer items: hour-long parts of a day stroke, or
/// 5–15-minute actions of an hour (`level`). The new plan names the item it decomposes and
/// is caused by it. With `of` = `None`, `item` is a stretch of time not in any plan, and the
/// actions are planned moment to moment (agents whose strategy does not plan ahead).
#[allow(clippy::too_many_arguments)]
pub async fn decompose(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    date: &str,
    item: &PlanItem,
    of: Option<PlanRef>,
    level: PlanLevel,
    rulebook: Rulebook,
    checks: Option<&[String]>,
    now: u64,
    pending: &mut Pending,
) -> Result<(PlanMade, PendingId), ThinkError> {
    let start = item.start_secs / 60;
    let end = start + u64::from(item.duration_secs) / 60;
    let agent = who.agent;
    let mut vars = who.vars();
    vars.insert("date", date.to_owned());
    vars.insert("start", clock(start));
    vars.insert("end", clock(end));
    vars.insert("activity", item.description.clone());
    let (name_of_template, every) = match level {
        PlanLevel::Action => ("hour_plan", ACTION_MINUTES),
        _ => ("hour_parts", PART_MINUTES),
    };
    // The times are given (on the hour, or on the quarter hour, from the item's start): the
    // model says only what happens at each, as for the day plan.
    let day_minute = |secs: u64| ((secs % 86_400) / 60) as u16;
    let first = day_minute(item.start_secs);
    let until = u16::try_from(u64::from(first) + u64::from(item.duration_secs) / 60)
        .unwrap_or(u16::MAX)
        .min(24 * 60);
    let starts = step_times(first, until, every);
    vars.insert(
        "times",
        starts.iter().map(|m| clock(u64::from(*m))).collect::<Vec<_>>().join(", "),
    );
    let steps = starts.len() as u32;
    // Actions carry an icon each (the model's pick from ACTION_ICONS); parts of the day do not.
    let icons: Vec<String> = match level {
        PlanLevel::Action => ACTION_ICONS.iter().map(|i| (*i).to_owned()).collect(),
        _ => Vec::new(),
    };
    let per_step = if icons.is_empty() { 40 } else { 52 };
    let shape = Shape::Schedule { starts, until, leads: vec![format!("{} ", who.name)], icons };
    let because: Vec<Cause> = of.iter().map(|r| Cause::Logged(r.plan)).collect();
    let day_start = item.start_secs - item.start_secs % 86_400;
    let mut causes_now = because.clone();
    let mut corrected = false;
    let (asked, mut parts) = loop {
        let mut call = template(name_of_template)?.call(&vars, style, shape.clone())?;
        call.agent = Some(agent);
        call.max_tokens = Some(per_step * steps + 16);
        let (answered, asked) = ask(gateway, call, &causes_now, now, pending).await?;
        let mut parts = match &answered.answer {
            Answer::Plan(steps) => items(steps, day_start),
            _ => Vec::new(),
        };
        // Rulebook 4: an action that copies a persona statement or contradicts its hour is
        // asked for again once, with what was wrong; one still wrong is left out (the part
        // before it lasts until the next).
        let Some(seed) = checks else { break (asked, parts) };
        let seed: Vec<&str> = seed.iter().map(String::as_str).collect();
        let faults: Vec<String> = parts
            .iter()
            .filter_map(|p| {
                let words = icon_of(&p.description).1;
                let fault =
                    validate::check_action(words, day_minute(p.start_secs), who.name, &seed)?;
                Some(format!("\"{words}\" at {}: {}", clock(p.start_secs / 60), fault.why()))
            })
            .collect();
        if faults.is_empty() {
            break (asked, parts);
        }
        if corrected {
            let good = |p: &PlanItem| {
                let words = icon_of(&p.description).1;
                validate::check_action(words, day_minute(p.start_secs), who.name, &seed).is_none()
            };
            if parts.iter().any(good) {
                parts.retain(good);
                // The first good part takes the time of the faulty ones before it.
                if let Some(first) = parts.iter_mut().min_by_key(|p| p.start_secs) {
                    first.start_secs = first.start_secs.min(item.start_secs.max(day_start));
                }
            }
            break (asked, parts);
        }
        corrected = true;
        let times = vars.get("times").cloned().unwrap_or_default();
        vars.insert(
            "times",
            format!(
                "{times}\n(Planned before and not used: {}. Plan these times again.)",
                faults.join("; ")
            ),
        );
        causes_now = because.clone();
        causes_now.extend(asked.map(Cause::Pending));
    };
    // Parts keep to the item's time: what starts outside it is dropped, what runs past its
    // end is cut there. And they cover it: each part lasts until the next begins, the last
    // until the item ends (a small model often plans only the first minutes of an hour,
    // which would leave the agent with nothing to do for the rest).
    let item_end = item.start_secs + u64::from(item.duration_secs);
    parts.retain(|p| p.start_secs >= item.start_secs && p.start_secs < item_end);
    parts.sort_by_key(|p| p.start_secs);
    parts.dedup_by_key(|p| p.start_secs);
    let ends: Vec<u64> =
        parts.iter().skip(1).map(|p| p.start_secs).chain(std::iter::once(item_end)).collect();
    for (p, end) in parts.iter_mut().zip(ends) {
        p.duration_secs = u32::try_from(end - p.start_secs).unwrap_or(u32::MAX);
        p.address = item.address.clone();
    }
    if rulebook.bounds_everyday_actions() {
        keep_everyday_bounds(&mut parts);
    }
    // A moment with no usable answer is acted on as it is (as an empty decomposition of a
    // planned item is), so the agent does not ask again every step.
    if of.is_none() && parts.is_empty() {
        parts.push(item.clone());
    }
    let plan = PlanMade { agent, level, decomposes: of, items: parts };
    let mut causes = because;
    causes.extend(asked.map(Cause::Pending));
    let at = pending.push(now, Body::PlanMade(plan.clone()), &causes);
    Ok((plan, at))
}

/// What the agent knows to be inside `option`, a place one level below `chosen`: a sector's
/// areas, or an area's objects.
fn contents(known: &SpatialMemory, chosen: &[String], option: &str) -> Vec<String> {
    match chosen {
        [] => known.known.get(option).map(|a| a.keys().cloned().collect()).unwrap_or_default(),
        [sector] => known
            .known
            .get(sector)
            .and_then(|a| a.get(option))
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Where an agent on the open ground is, in the `location` prompt (rulebook 9).
const OPEN_GROUND_HERE: &str = "the street";

/// The words before a place's name that say the activity is done there.
const THERE: [&str; 5] = ["at", "in", "to", "into", "inside"];

/// The one of `names` that `activity` says it is done at ("works at Hearth café", "goes to
/// the Marigold café"), if any: after one of [`THERE`] and an optional "the", as a whole
/// word, case aside; the longest name wins. "Leaves Hearth café" names none.
pub fn named_place<'a>(activity: &str, names: impl Iterator<Item = &'a String>) -> Option<&'a str> {
    let text = activity.to_lowercase();
    let mut names: Vec<&String> = names.filter(|n| !n.trim().is_empty()).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.chars().count()));
    names.into_iter().map(String::as_str).find(|name| {
        let name = name.to_lowercase();
        text.match_indices(&name).any(|(i, _)| {
            let after = text[i + name.len()..].chars().next();
            if after.is_some_and(char::is_alphanumeric) {
                return false;
            }
            if !text[..i].ends_with(char::is_whitespace) {
                return false;
            }
            let before = text[..i].trim_end();
            let before = match before.strip_suffix("the") {
                Some(rest) if rest.ends_with(char::is_whitespace) => rest.trim_end(),
                _ => before,
            };
            let word = before.rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
            THERE.contains(&word)
        })
    })
}

/// Where `agent` does `activity`: a sector, an arena in it and (if it knows any) an object
/// in that, each chosen from its spatial memory with where it is offered first. A level with
/// one option asks nothing; by rulebook 9 (`by_name`) a sector or arena the activity names
/// ([`named_place`]) is taken without asking. Returns `sector:arena[:object]` (empty when it
/// knows no place) and the position of the last choice's event.
#[allow(clippy::too_many_arguments)]
pub async fn choose_place(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    known: &SpatialMemory,
    here: (&str, &str),
    home: Option<&str>,
    activity: &str,
    by_name: bool,
    now: u64,
    pending: &mut Pending,
) -> Result<(String, Option<PendingId>), ThinkError> {
    let mut last: Option<PendingId> = None;
    let mut chosen: Vec<String> = Vec::new();
    // What is done at home is done at home: only the object there is asked.
    if let Some((sector, arena)) =
        home.filter(|_| at_home(activity)).and_then(|h| h.split_once(':'))
    {
        if known.known.get(sector).is_some_and(|a| a.contains_key(arena)) {
            chosen = vec![sector.to_owned(), arena.to_owned()];
        }
    }
    if by_name && chosen.is_empty() {
        if let Some(sector) = named_place(activity, known.known.keys()) {
            chosen.push(sector.to_owned());
            let arenas = known.known.get(sector).into_iter().flat_map(|a| a.keys());
            if let Some(arena) = named_place(activity, arenas) {
                chosen.push(arena.to_owned());
            }
        }
    }
    let here_text = if by_name && here.0.trim().is_empty() {
        OPEN_GROUND_HERE.to_owned()
    } else {
        format!("{}, {}", here.0, here.1)
    };
    let first = |names: Vec<&String>, prefer: &str| -> Vec<String> {
        let mut v: Vec<String> = names.into_iter().cloned().collect();
        if let Some(i) = v.iter().position(|n| n == prefer) {
            let p = v.remove(i);
            v.insert(0, p);
        }
        v
    };
    let sectors = first(known.known.keys().collect(), here.0);
    let level_options = |chosen: &[String]| -> Vec<String> {
        match chosen.len() {
            0 => sectors.clone(),
            1 => known
                .known
                .get(&chosen[0])
                .map(|arenas| {
                    let prefer = if chosen[0] == here.0 { here.1 } else { "" };
                    first(arenas.keys().collect(), prefer)
                })
                .unwrap_or_default(),
            _ => known
                .known
                .get(&chosen[0])
                .and_then(|a| a.get(&chosen[1]))
                .map(|objects| objects.keys().cloned().collect())
                .unwrap_or_default(),
        }
    };
    while chosen.len() < 3 {
        let options = level_options(&chosen);
        match options.len() {
            0 => break,
            1 => chosen.push(options[0].clone()),
            _ => {
                // Each place with what it holds, so the choice can follow the activity.
                let shown: Vec<String> = options
                    .iter()
                    .map(|o| {
                        let inside = contents(known, &chosen, o);
                        if inside.is_empty() {
                            o.clone()
                        } else {
                            format!("{o} [{}]", inside.join(", "))
                        }
                    })
                    .collect();
                let mut vars = who.vars();
                vars.insert("here", here_text.clone());
                vars.insert("activity", activity.to_owned());
                vars.insert("options", shown.join(" | "));
                let mut call =
                    template("location")?.call(&vars, style, Shape::Choice(options.clone()))?;
                call.agent = Some(who.agent);
                call.max_tokens = Some(48);
                let causes: Vec<Cause> = last.into_iter().map(Cause::Pending).collect();
                let (answered, asked) = ask(gateway, call, &causes, now, pending).await?;
                last = asked.or(last);
                match answered.answer {
                    Answer::Choice(c) => chosen.push(c),
                    _ => chosen.push(options[0].clone()),
                }
            }
        }
    }
    Ok((chosen.join(":"), last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(description: &str, start_min: u64, minutes: u32) -> PlanItem {
        PlanItem {
            description: description.to_owned(),
            address: String::new(),
            start_secs: start_min * 60,
            duration_secs: minutes * 60,
        }
    }

    fn spans(parts: &[PlanItem]) -> Vec<(u64, u32)> {
        parts.iter().map(|p| (p.start_secs / 60, p.duration_secs / 60)).collect()
    }

    #[test]
    fn an_activity_names_the_place_it_is_done_at() {
        let names: Vec<String> =
            ["Hart's Bakery", "Hearth café", "Green common", "Marigold café", "counter"]
                .map(String::from)
                .to_vec();
        let named = |activity: &str| named_place(activity, names.iter());
        assert_eq!(named("Hugo Pike works at Hearth café"), Some("Hearth café"));
        assert_eq!(named("goes to the Marigold Café for a coffee"), Some("Marigold café"));
        assert_eq!(named("sits in Green common, reading"), Some("Green common"));
        assert_eq!(named("serves customers at the counter"), Some("counter"));
        // Leaving a place, or naming it otherwise, is not doing it there.
        assert_eq!(named("leaves Hearth café"), None);
        assert_eq!(named("talks about Hart's Bakery"), None);
        assert_eq!(named("goes to work at the old Oak Hill bakery"), None);
        // A name inside a longer word is not the name.
        assert_eq!(named("works at Hearth cafés"), None);
        assert_eq!(named("works at xHearth café"), None);
    }

    #[test]
    fn everyday_parts_keep_their_bound_and_the_hour_stays_covered() {
        // 07:00 an hour of quarter-hour actions, as a decomposition stretches them.
        let mut parts = vec![
            part("Delphine brushes her teeth", 420, 15),
            part("Delphine gets dressed", 435, 15),
            part("Delphine eats breakfast", 450, 15),
            part("Delphine brushes her teeth again", 465, 15),
        ];
        keep_everyday_bounds(&mut parts);
        // Teeth 10 min, dressing from 07:10 (20 min stretched to its 15: breakfast from
        // 07:25), the last teeth cut to 10 and begun later, breakfast lasting until then.
        assert_eq!(spans(&parts), vec![(420, 10), (430, 15), (445, 25), (470, 10)]);
        for w in parts.windows(2) {
            assert_eq!(w[0].start_secs + u64::from(w[0].duration_secs), w[1].start_secs);
        }
        assert_eq!(parts[3].start_secs + u64::from(parts[3].duration_secs), 480 * 60);
        // A part alone is cut; one within its bound is left as it is.
        let mut alone = vec![part("Tobias takes a shower", 420, 60)];
        keep_everyday_bounds(&mut alone);
        assert_eq!(spans(&alone), vec![(420, 30)]);
        let mut fine = vec![part("Tobias makes the bed", 420, 5), part("Tobias reads", 425, 10)];
        keep_everyday_bounds(&mut fine);
        assert_eq!(spans(&fine), vec![(420, 5), (425, 10)]);
    }

    #[test]
    fn an_appointment_takes_its_stretch_of_the_day_and_the_rest_stays_covered() {
        let day = vec![
            part("works at the pharmacy", 9 * 60, 8 * 60),
            part("has dinner at home", 17 * 60, 2 * 60),
            part(SLEEP, 22 * 60 + 30, 90),
        ];
        let party = PlanItem {
            address: "Marigold café:dining room".into(),
            ..part("goes to Delphine's party", 16 * 60 + 30, 2 * 60)
        };
        let kept = with_appointments(day, std::slice::from_ref(&party));
        assert_eq!(
            spans(&kept),
            vec![(540, 450), (990, 120), (1110, 30), (1350, 90)],
            "work until 16:30, the party, dinner from 18:30, sleep"
        );
        assert_eq!(kept[1], party);
        assert_eq!(kept[2].description, "has dinner at home");
        assert_eq!(
            appointment_words(&[party]),
            "16:30–18:30 goes to Delphine's party (Marigold café)"
        );
        // Inside one item: it is split in two around it.
        let one = with_appointments(vec![part("reads", 600, 180)], &[part("meets Rowan", 660, 30)]);
        assert_eq!(spans(&one), vec![(600, 60), (660, 30), (690, 90)]);
    }

    #[test]
    fn a_stroke_still_wrong_after_asking_again_gives_its_time_to_the_one_before() {
        let step = |start_minute: u16, activity: &str, minutes: u16| PlanStep {
            start_minute,
            activity: activity.to_owned(),
            minutes,
            emoji: None,
        };
        let seed = vec!["Nnamdi Okafor opens the Crooked Lamp bar at 16:00 every day".to_owned()];
        let mut steps = vec![
            step(480, "wakes up and is ready for the day", 60),
            step(540, "buys supplies at Thistle supply store", 60),
            step(600, "opens the Crooked Lamp bar at 16:00 every day", 60),
            step(660, "wakes up again", 180),
            step(840, "works at the bar", 180),
        ];
        let faults: Vec<Option<String>> = steps
            .iter()
            .map(|s| stroke_fault(&s.activity, s.start_minute, "Nnamdi Okafor", &seed))
            .collect();
        assert!(faults[0].as_deref().is_some_and(|f| f.contains("morning")), "{faults:?}");
        assert!(faults[2].as_deref().is_some_and(|f| f.contains("copies")), "{faults:?}");
        assert!(faults[3].as_deref().is_some_and(|f| f.contains("morning")), "{faults:?}");
        assert!(faults[1].is_none() && faults[4].is_none());
        merge_faulty(&mut steps, &faults);
        let kept: Vec<(u16, u16)> = steps.iter().map(|s| (s.start_minute, s.minutes)).collect();
        // The errand starts at 08:00 in place of waking again, and lasts until the bar.
        assert_eq!(kept, vec![(480, 360), (840, 180)]);
        assert_eq!(steps[0].activity, "buys supplies at Thistle supply store");
        // All wrong: left as they were.
        let mut all = vec![step(480, "wakes up", 60)];
        merge_faulty(&mut all, &[Some("x".into())]);
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn a_time_tacked_on_an_activity_is_taken_off() {
        assert_eq!(
            without_clock("goes to work at Marigold café at 09:00"),
            "goes to work at Marigold café"
        );
        assert_eq!(without_clock("works until 17:00."), "works");
        assert_eq!(without_clock("wakes up at 07:00"), "wakes up");
        assert_eq!(without_clock("meets Tobias at 09:00 sharp"), "meets Tobias at 09:00 sharp");
        assert_eq!(without_clock("at 09:00"), "at 09:00", "nothing would be left");
        assert_eq!(without_clock("reads the news"), "reads the news");
    }

    #[test]
    fn what_is_done_at_home_is_known_by_its_words() {
        for home in ["wakes up", "Brushes her teeth", "takes a shower", "gets dressed", SLEEP] {
            assert!(at_home(home), "{home}");
        }
        for out in ["goes to work at the café", "opens the bedroom window shop", "reads"] {
            assert!(!at_home(out), "{out}");
        }
    }

    #[test]
    fn an_action_keeps_its_icon_in_front_of_its_words() {
        let steps = [
            PlanStep {
                start_minute: 420,
                activity: "makes coffee at 07:00".into(),
                minutes: 15,
                emoji: Some("☕".into()),
            },
            PlanStep { start_minute: 435, activity: "reads".into(), minutes: 15, emoji: None },
        ];
        let planned = items(&steps, 0);
        assert_eq!(planned[0].description, "☕ makes coffee");
        assert_eq!(icon_of(&planned[0].description), ("☕", "makes coffee"));
        assert_eq!(icon_of(&planned[1].description), ("", "reads"));
        assert_eq!(icon_of("I paint"), ("", "I paint"), "a word is not an icon");
        for icon in ACTION_ICONS {
            assert_eq!(icon.chars().count(), 1, "{icon} is one code point");
        }
    }

    #[test]
    fn plans_are_asked_for_given_times_that_cover_the_day() {
        // The day: an hour after waking, then the fixed times; none too close after it.
        assert_eq!(day_times(7 * 60), [480, 540, 720, 840, 1020, 1140, 1260]);
        assert_eq!(day_times(7 * 60 + 45), [525, 720, 840, 1020, 1140, 1260], "09:00 is too close");
        // Hour parts on the hour, actions on the quarter hour, from the item's own start.
        assert_eq!(step_times(9 * 60, 12 * 60, 60), [540, 600, 660]);
        assert_eq!(step_times(7 * 60 + 55, 10 * 60, 60), [475, 540], "08:00 is too close");
        assert_eq!(step_times(7 * 60 + 3, 8 * 60, 15), [423, 435, 450, 465]);
        assert_eq!(step_times(600, 610, 15), [600], "a short stretch is one step");
        let leads: Vec<&str> = day_times(7 * 60).into_iter().map(time_of_day).collect();
        assert_eq!(leads[..3], ["", "In the morning, ", "At lunchtime, "]);
        assert_eq!(day_times(6 * 60)[..2], [420, 540], "an early riser plans from 07:00");
        assert_eq!(leads.last(), Some(&"Late in the evening, "));
    }

    #[test]
    fn everyday_activities_planned_too_long_are_cut_and_the_next_starts_sooner() {
        let step = |start_minute: u16, activity: &str, minutes: u16| PlanStep {
            start_minute,
            activity: activity.to_owned(),
            minutes,
            emoji: None,
        };
        let made = items(
            &[
                step(420, "Brush teeth", 150),
                step(570, "Open the café", 240),
                step(810, "Take a shower", 15),
            ],
            86_400,
        );
        assert_eq!(made[0].duration_secs, 600, "ten minutes of teeth");
        assert_eq!(made[1].start_secs, 86_400 + 430 * 60, "the café opens when teeth are done");
        assert_eq!(made[1].duration_secs, (240 + 140) * 60);
        assert_eq!(made[2].duration_secs, 15 * 60, "a plausible shower is kept");
        assert_eq!(everyday_limit("Paint at the studio"), None);
    }
}
