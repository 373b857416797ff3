//! Planning, top down as the paper does it: a day in 5–8 broad strokes from the agent's
//! summary and yesterday; a stroke decomposed into hour-long parts, then into 5–15-minute
//! actions; and where each happens, chosen by walking the agent's own spatial tree
//! (sector → arena → object), where it already is offered first. Plans are `PlanMade`
//! events (a decomposition names the item it decomposes) and enter the memory stream.

use std::collections::BTreeMap;

use hamlet_gateway::answer::{Answer, PlanStep, Shape};
use hamlet_gateway::Gateway;
use hamlet_log::event::{AgentId, MemoryKind, PlanItem, PlanLevel, PlanMade, PlanRef};
use hamlet_log::Body;

use super::memory::MemoryStream;
use super::prompt::{template, Style};
use super::retrieval::RetrievalSettings;
use super::think::{ask, recall, remember, ThinkError, Who};
use crate::pending::{Cause, Pending, PendingId};
use crate::town::spatial::SpatialMemory;

/// "HH:MM" of minutes after midnight.
fn clock(minute: u64) -> String {
    format!("{:02}:{:02}", (minute / 60) % 24, minute % 60)
}

fn items(steps: &[PlanStep], day_start_secs: u64) -> Vec<PlanItem> {
    let mut items: Vec<PlanItem> = steps
        .iter()
        .map(|s| PlanItem {
            description: s.activity.clone(),
            address: String::new(),
            start_secs: day_start_secs + u64::from(s.start_minute) * 60,
            duration_secs: u32::from(s.minutes) * 60,
        })
        .collect();
    plausible(&mut items);
    items
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
            format!("{} {} ({} min)", clock(i.start_secs / 60), i.description, i.duration_secs / 60)
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

/// Plans `agent`'s day starting at `day_start_secs` (midnight of that day) from its summary
/// and yesterday's (the request caused by `because`: the summary's answer); adds the call's events, the `PlanMade` and the plan as a memory to the
/// batch. An empty plan (the documented fallback) is recorded and not remembered.
#[allow(clippy::too_many_arguments)]
pub async fn plan_day(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    date: &str,
    yesterday: &str,
    wake_minute: u16,
    day_start_secs: u64,
    because: &[Cause],
    now: u64,
    pending: &mut Pending,
) -> Result<(PlanMade, PendingId), ThinkError> {
    let (agent, name) = (who.agent, who.name);
    let mut vars = who.vars();
    vars.insert("yesterday", yesterday.to_owned());
    vars.insert("date", date.to_owned());
    vars.insert("wake", clock(u64::from(wake_minute)));
    let mut call = template("day_plan")?.call(&vars, style, Shape::day_plan())?;
    call.agent = Some(agent);
    call.max_tokens = Some(450);
    let (answered, asked) = ask(gateway, call, because, now, pending).await?;
    let steps = match &answered.answer {
        Answer::Plan(steps) => steps.clone(),
        _ => Vec::new(),
    };
    let plan = PlanMade {
        agent,
        level: PlanLevel::Day,
        decomposes: None,
        items: items(&steps, day_start_secs),
    };
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
    let (name_of_template, shape) = match (level, of) {
        // A quarter hour decided on the spot may be one action.
        (PlanLevel::Action, None) => (
            "hour_plan",
            Shape::Plan { min_steps: 1, max_steps: 3, min_minutes: 5, max_minutes: 15 },
        ),
        (PlanLevel::Action, Some(_)) => ("hour_plan", Shape::hour_plan()),
        _ => ("hour_parts", Shape::hour_parts()),
    };
    let mut call = template(name_of_template)?.call(&vars, style, shape)?;
    call.agent = Some(agent);
    call.max_tokens = Some(640);
    let because: Vec<Cause> = of.iter().map(|r| Cause::Logged(r.plan)).collect();
    let (answered, asked) = ask(gateway, call, &because, now, pending).await?;
    let day_start = item.start_secs - item.start_secs % 86_400;
    let mut parts = match &answered.answer {
        Answer::Plan(steps) => items(steps, day_start),
        _ => Vec::new(),
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

/// Where `agent` does `activity`: a sector, an arena in it and (if it knows any) an object
/// in that, each chosen from its spatial memory with where it is offered first. A level with
/// one option asks nothing. Returns `sector:arena[:object]` (empty when it knows no place)
/// and the position of the last choice's event.
#[allow(clippy::too_many_arguments)]
pub async fn choose_place(
    gateway: &Gateway,
    style: Style,
    who: &Who<'_>,
    known: &SpatialMemory,
    here: (&str, &str),
    activity: &str,
    now: u64,
    pending: &mut Pending,
) -> Result<(String, Option<PendingId>), ThinkError> {
    let mut last: Option<PendingId> = None;
    let mut chosen: Vec<String> = Vec::new();
    let here_text = format!("{}, {}", here.0, here.1);
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
    for _level in 0..3 {
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

    #[test]
    fn everyday_activities_planned_too_long_are_cut_and_the_next_starts_sooner() {
        let step = |start_minute: u16, activity: &str, minutes: u16| PlanStep {
            start_minute,
            activity: activity.to_owned(),
            minutes,
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
