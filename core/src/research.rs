//! The measurements the generative-agents paper made, runnable on any recording: how a
//! piece of information spreads (who knows it, hour by hour), how dense the town's web of
//! relationships grows, and a scripted interview battery in the paper's five categories.
//! The first two are folds of the log (no model); the battery asks each agent its
//! questions from memory, on a scratch fork (`cli/research.rs`).

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::event::{Account, AgentId, MayorAct, Tile};
use hamlet_log::{Body, Event, EventId};
use serde::{Deserialize, Serialize};

/// The town's relationships at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DensityRow {
    /// Simulated seconds.
    pub at_secs: u64,
    /// Agents in town.
    pub agents: u32,
    /// Pairs of agents that have talked by then.
    pub pairs: u32,
    /// `pairs` over every possible pair (0 to 1).
    pub density: f64,
}

/// Who knows something at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffusionRow {
    /// Simulated seconds.
    pub at_secs: u64,
    /// Agents in town.
    pub agents: u32,
    /// Those whose memory stream holds it by then.
    pub knowing: Vec<String>,
    /// Their share of the town (0 to 1).
    pub share: f64,
}

/// The most rows a measurement over time gives: past it, the interval widens to fit.
pub const MAX_ROWS: u64 = 10_000;

/// The moments to measure at: every `every_secs` from the town's start (its first agent's
/// joining; wider when that would give more than [`MAX_ROWS`]), and the end.
fn moments(events: &[Event], every_secs: u64) -> Vec<u64> {
    let joined = events.iter().find(|e| matches!(e.body, Body::AgentJoined(_)));
    let (Some(first), Some(last)) = (joined.or(events.first()), events.last()) else {
        return Vec::new();
    };
    let (start, end) = (first.sim_time_secs(), last.sim_time_secs().max(first.sim_time_secs()));
    let every = every_secs.max(1).max((end - start) / MAX_ROWS + 1);
    let mut out: Vec<u64> = (0..)
        .map_while(|i: u64| start.checked_add(i.checked_mul(every)?))
        .take_while(|t| *t < end)
        .collect();
    out.push(end);
    out
}

/// Folds `events` into `state` with `fold` and takes a row with `row` at each of the
/// [`moments`]: a measurement over time.
fn over_time<S, R>(
    events: &[Event],
    every_secs: u64,
    mut state: S,
    fold: impl Fn(&mut S, &Event),
    row: impl Fn(&S, u64) -> R,
) -> Vec<R> {
    let mut next = events.iter().peekable();
    let mut rows = Vec::new();
    for at in moments(events, every_secs) {
        while let Some(e) = next.next_if(|e| e.sim_time_secs() <= at) {
            fold(&mut state, e);
        }
        rows.push(row(&state, at));
    }
    rows
}

/// Relationship network density over time: two agents are related once they have talked
/// (a conversation between them started). Measured every `every_secs` and at the end.
pub fn network_density(events: &[Event], every_secs: u64) -> Vec<DensityRow> {
    type Met = (BTreeSet<AgentId>, BTreeSet<(AgentId, AgentId)>);
    let fold = |(agents, pairs): &mut Met, e: &Event| match &e.body {
        Body::AgentJoined(j) => {
            agents.insert(j.agent);
        }
        Body::ConversationStarted(c) => {
            for (i, a) in c.agents.iter().enumerate() {
                for b in &c.agents[i + 1..] {
                    pairs.insert(((*a).min(*b), (*a).max(*b)));
                }
            }
        }
        _ => {}
    };
    let row = |(agents, pairs): &Met, at: u64| {
        let n = agents.len() as u32;
        let possible = f64::from(n) * f64::from(n.saturating_sub(1)) / 2.0;
        let p = pairs.len() as u32;
        DensityRow {
            at_secs: at,
            agents: n,
            pairs: p,
            density: if possible > 0.0 { f64::from(p) / possible } else { 0.0 },
        }
    };
    over_time(events, every_secs, Met::default(), fold, row)
}

/// Information diffusion over time, from memory: an agent knows the fact once a memory of
/// its holds every one of `keywords` (any case). Measured every `every_secs` and at the end.
pub fn diffusion(events: &[Event], keywords: &[String], every_secs: u64) -> Vec<DiffusionRow> {
    type Known = (BTreeMap<AgentId, String>, BTreeSet<AgentId>);
    let keywords: Vec<String> = keywords.iter().map(|k| k.to_lowercase()).collect();
    let fold = |(names, knowing): &mut Known, e: &Event| match &e.body {
        Body::AgentJoined(j) => {
            names.insert(j.agent, j.name.clone());
        }
        Body::MemoryAdded(m) => {
            let text = m.description.to_lowercase();
            if !keywords.is_empty() && keywords.iter().all(|k| text.contains(k.as_str())) {
                knowing.insert(m.agent);
            }
        }
        _ => {}
    };
    let row = |(names, knowing): &Known, at: u64| {
        let n = names.len() as u32;
        let who: Vec<String> = knowing.iter().filter_map(|a| names.get(a).cloned()).collect();
        DiffusionRow {
            at_secs: at,
            agents: n,
            share: if n > 0 { who.len() as f64 / f64::from(n) } else { 0.0 },
            knowing: who,
        }
    };
    over_time(events, every_secs, Known::default(), fold, row)
}

/// The relationship graph at a moment: every agent in town by then, and every pair that
/// had talked, with how many conversations (the edges of [`network_density`]'s count).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RelationshipGraph {
    /// The moment.
    pub at_secs: u64,
    /// The agents, by name, in the order they joined.
    pub agents: Vec<String>,
    /// `(i, j, conversations)`: agents `i < j` (indexes into `agents`) had talked so often.
    pub edges: Vec<(u32, u32, u32)>,
}

/// [`RelationshipGraph`] at `at_secs`, from the events up to it.
pub fn relationships(events: &[Event], at_secs: u64) -> RelationshipGraph {
    let mut order: Vec<AgentId> = Vec::new();
    let mut names: BTreeMap<AgentId, String> = BTreeMap::new();
    let mut talks: BTreeMap<(AgentId, AgentId), u32> = BTreeMap::new();
    for e in events.iter().take_while(|e| e.sim_time_secs() <= at_secs) {
        match &e.body {
            Body::AgentJoined(j) if names.insert(j.agent, j.name.clone()).is_none() => {
                order.push(j.agent);
            }
            Body::ConversationStarted(c) => {
                for (i, a) in c.agents.iter().enumerate() {
                    for b in &c.agents[i + 1..] {
                        *talks.entry(((*a).min(*b), (*a).max(*b))).or_default() += 1;
                    }
                }
            }
            _ => {}
        }
    }
    let index = |a: AgentId| order.iter().position(|x| *x == a).map(|i| i as u32);
    let mut edges: Vec<(u32, u32, u32)> = talks
        .iter()
        .filter_map(|(&(a, b), &n)| {
            let (i, j) = (index(a)?, index(b)?);
            Some((i.min(j), i.max(j), n))
        })
        .collect();
    edges.sort_unstable();
    RelationshipGraph {
        at_secs,
        agents: order.iter().filter_map(|a| names.get(a).cloned()).collect(),
        edges,
    }
}

/// What the model cost in one stretch of simulated time, for one agent, purpose or model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CostRow {
    /// The stretch's start.
    pub at_secs: u64,
    /// `agent`, `purpose` or `model`: what `key` is.
    pub by: &'static str,
    /// The agent's name (`(town)` for calls for no agent), the purpose, or the model.
    pub key: String,
    /// Model calls (first tries).
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Dollars, by `prices` (0 for the embedded models).
    pub money: f64,
}

/// Cost over simulated time: for each stretch of `every_secs` from the town's start, each
/// agent's and each purpose's calls, tokens and money ([`crate::cost::report`] of
/// the stretch's events).
pub fn cost_over_time(
    events: &[Event],
    every_secs: u64,
    prices: &BTreeMap<String, crate::cost::Price>,
) -> Vec<CostRow> {
    let names: BTreeMap<u32, String> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => Some((j.agent.0, j.name.clone())),
            _ => None,
        })
        .collect();
    let at = moments(events, every_secs);
    let mut rows = Vec::new();
    let mut rest = events;
    for (i, &start) in at.iter().enumerate() {
        let end = at.get(i + 1).copied();
        let n = rest.iter().take_while(|e| end.is_none_or(|end| e.sim_time_secs() < end)).count();
        let (stretch, later) = rest.split_at(n);
        rest = later;
        let report =
            crate::cost::report(stretch.iter().map(|e| (e.sim_time_secs(), &e.body)), prices);
        let row = |by: &'static str, key: String, t: &crate::cost::Tally| CostRow {
            at_secs: start,
            by,
            key,
            calls: t.calls,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            money: t.money,
        };
        for (agent, t) in &report.by_agent {
            let name =
                agent.and_then(|a| names.get(&a).cloned()).unwrap_or_else(|| "(town)".to_owned());
            rows.push(row("agent", name, t));
        }
        for (purpose, t) in &report.by_purpose {
            rows.push(row("purpose", purpose.clone(), t));
        }
        for (model, t) in &report.by_model {
            rows.push(row("model", model.clone(), t));
        }
    }
    rows
}

/// How a run's conversations went: how long, and how often a line said again what was
/// already said in the same conversation ([`repeats`](crate::mind::validate::repeats)).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DialogueStats {
    /// Conversations with at least one line.
    pub conversations: u32,
    /// Lines said.
    pub lines: u32,
    /// Lines that repeat an earlier line of their conversation.
    pub repeated: u32,
    /// Why conversations ended, and how often.
    pub endings: BTreeMap<String, u32>,
}

impl DialogueStats {
    /// Lines per conversation.
    pub fn average_lines(&self) -> f64 {
        f64::from(self.lines) / f64::from(self.conversations.max(1))
    }

    /// The share of lines that repeat an earlier one.
    pub fn repeat_share(&self) -> f64 {
        f64::from(self.repeated) / f64::from(self.lines.max(1))
    }
}

/// Measures the conversations of `events` (see [`DialogueStats`]).
pub fn dialogue(events: &[Event]) -> DialogueStats {
    let mut said: BTreeMap<hamlet_log::EventId, Vec<String>> = BTreeMap::new();
    let mut stats = DialogueStats::default();
    for e in events {
        match &e.body {
            Body::DialogueTurn(t) if !t.text.trim().is_empty() => {
                let lines = said.entry(t.conversation).or_default();
                if lines.iter().any(|l| crate::mind::validate::repeats(l, &t.text)) {
                    stats.repeated += 1;
                }
                lines.push(t.text.clone());
                stats.lines += 1;
            }
            Body::ConversationEnded(c) => {
                // The loop's reasons name the speaker: grouped by what happened.
                let kind = if c.reason.contains("said again") {
                    "a line repeated"
                } else if c.reason.ends_with("ended it") {
                    "a speaker ended it"
                } else if c.reason.contains("fell silent") {
                    "a speaker fell silent"
                } else {
                    c.reason.as_str()
                };
                *stats.endings.entry(kind.to_owned()).or_default() += 1;
            }
            _ => {}
        }
    }
    stats.conversations = said.len() as u32;
    stats
}

/// The interview battery's categories, as the paper grouped its questions.
pub const CATEGORIES: [&str; 5] = ["self-knowledge", "memory", "plans", "reactions", "reflections"];

/// The battery, with `other` (another agent of the town) named where a question is about
/// someone: (category, question), two questions a category. Written for Hamlet.
pub fn battery(other: &str) -> Vec<(&'static str, String)> {
    vec![
        ("self-knowledge", "Who are you, in two or three sentences?".to_owned()),
        ("self-knowledge", "What do you do for a living, and what do you like about it?".to_owned()),
        ("memory", format!("Who is {other}, and what do you know about them?")),
        ("memory", "Who have you talked with today, and about what?".to_owned()),
        ("plans", "What will you be doing at ten tomorrow morning?".to_owned()),
        ("plans", "What is the next thing you mean to do today?".to_owned()),
        ("reactions", "The pot on your stove has boiled over and smoke fills the kitchen. What do you do?".to_owned()),
        ("reactions", format!("{other} stops you in the street and asks for your help right now. What do you say?")),
        ("reflections", "If you could spend an hour with anyone in town, who would it be, and why?".to_owned()),
        ("reflections", "What have you come to understand about your life lately?".to_owned()),
    ]
}

/// Quotes a CSV field when it needs it.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A measurement as a table: its header and its rows of cells, the same for the CLI's table
/// and CSV and for the CSV the window saves beside a chart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// The column names.
    pub header: Vec<&'static str>,
    /// The rows, a cell per column.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table of `rows`, each made into cells by `cells`.
    pub fn of<T>(header: &[&'static str], rows: &[T], cells: impl Fn(&T) -> Vec<String>) -> Table {
        Table { header: header.to_vec(), rows: rows.iter().map(cells).collect() }
    }

    /// The table as CSV: the header row, then each row, fields quoted where they must be;
    /// every line ends in a newline.
    pub fn csv(&self) -> String {
        let mut out = self.header.join(",");
        out.push('\n');
        for row in &self.rows {
            let fields: Vec<String> = row.iter().map(|c| csv_field(c)).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }
}

/// [`network_density`]'s rows as a table.
pub fn density_table(rows: &[DensityRow]) -> Table {
    Table::of(&["time", "agents", "pairs_talked", "density"], rows, |r| {
        vec![
            crate::describe::sim_time(r.at_secs),
            r.agents.to_string(),
            r.pairs.to_string(),
            format!("{:.3}", r.density),
        ]
    })
}

/// [`diffusion`]'s rows as a table.
pub fn diffusion_table(rows: &[DiffusionRow]) -> Table {
    Table::of(&["time", "agents", "knowing", "share", "who"], rows, |r| {
        vec![
            crate::describe::sim_time(r.at_secs),
            r.agents.to_string(),
            r.knowing.len().to_string(),
            format!("{:.2}", r.share),
            r.knowing.join("; "),
        ]
    })
}

/// A [`RelationshipGraph`]'s edges as a table, each agent by name.
pub fn relationships_table(graph: &RelationshipGraph) -> Table {
    let name = |k: u32| graph.agents.get(k as usize).cloned().unwrap_or_default();
    Table::of(&["a", "b", "conversations"], &graph.edges, |&(i, j, n)| {
        vec![name(i), name(j), n.to_string()]
    })
}

/// [`cost_over_time`]'s rows as a table.
pub fn cost_table(rows: &[CostRow]) -> Table {
    let header = ["time", "by", "key", "calls", "prompt_tokens", "completion_tokens", "usd"];
    Table::of(&header, rows, |r| {
        vec![
            crate::describe::sim_time(r.at_secs),
            r.by.to_owned(),
            r.key.clone(),
            r.calls.to_string(),
            r.prompt_tokens.to_string(),
            r.completion_tokens.to_string(),
            format!("{:.6}", r.money),
        ]
    })
}

/// One agent's time at a place within a window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attendee {
    /// Who.
    pub agent: String,
    /// When they were first there in the window (simulated seconds).
    pub first_secs: u64,
    /// Seconds of the window they spent there.
    pub secs: u64,
}

/// Who was at a place during a window, from where each agent stood: `positions` are
/// (simulated seconds, agent, tile) in log order — where each agent joined, then every
/// move — and `inside` says whether a tile is in the place. Each agent who stood inside
/// for any part of `[from, until)`, with when they first were and for how long, in order
/// of arrival (then name).
pub fn presence(
    positions: impl IntoIterator<Item = (u64, String, Tile)>,
    inside: impl Fn(Tile) -> bool,
    from: u64,
    until: u64,
) -> Vec<Attendee> {
    let mut at: BTreeMap<String, (u64, Tile)> = BTreeMap::new();
    let mut seen: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut stay = |who: &str, since: u64, to: u64, tile: Tile| {
        let (start, end) = (since.max(from), to.min(until));
        if start < end && inside(tile) {
            let entry = seen.entry(who.to_owned()).or_insert((start, 0));
            entry.0 = entry.0.min(start);
            entry.1 += end - start;
        }
    };
    for (secs, who, tile) in positions {
        if secs >= until {
            break;
        }
        if let Some((since, was)) = at.insert(who.clone(), (secs, tile)) {
            stay(&who, since, secs, was);
        }
    }
    for (who, (since, tile)) in &at {
        stay(who, *since, until, *tile);
    }
    let mut out: Vec<Attendee> = seen
        .into_iter()
        .map(|(agent, (first_secs, secs))| Attendee { agent, first_secs, secs })
        .collect();
    out.sort_by(|a, b| a.first_secs.cmp(&b.first_secs).then(a.agent.cmp(&b.agent)));
    out
}

/// [`presence`] over a recording's events: `place` is a sector (`Marigold café`) or an
/// arena (`Marigold café:counter`), any case, of the town the recording loaded or a building
/// added to it while it ran (a business a mayor founded).
pub fn attendance(
    events: &[Event],
    place: &str,
    from: u64,
    until: u64,
) -> Result<Vec<Attendee>, String> {
    let town = crate::town::build::recorded_town(events)
        .ok_or("the recording holds no town, or one that does not load")?;
    let want = place.trim().to_lowercase();
    let inside = |tile: Tile| {
        town.address_of(tile).is_some_and(|a| {
            let a = a.to_lowercase();
            a == want || a.starts_with(&format!("{want}:"))
        })
    };
    let known = town.sectors.iter().any(|s| {
        s.arenas.iter().any(|a| {
            let a = format!("{}:{}", s.name, a.name).to_lowercase();
            a == want || a.starts_with(&format!("{want}:"))
        })
    });
    if !known {
        let sectors: Vec<&str> = town.sectors.iter().map(|s| s.name.as_str()).collect();
        return Err(format!("the town has no place `{place}`; its places: {}", sectors.join(", ")));
    }
    let mut names: BTreeMap<AgentId, String> = BTreeMap::new();
    let mut positions = Vec::new();
    for e in events {
        match &e.body {
            Body::AgentJoined(j) => {
                names.insert(j.agent, j.name.clone());
                positions.push((e.sim_time_secs(), j.name.clone(), j.tile));
            }
            Body::Moved(m) => {
                let name = names.get(&m.agent).cloned().unwrap_or_else(|| m.agent.0.to_string());
                positions.push((e.sim_time_secs(), name, m.to));
            }
            _ => {}
        }
    }
    Ok(presence(positions, inside, from, until))
}

/// The mayor's book at one moment (`hamlet research mayor`): what the town's treasury holds,
/// and what the mayor's acts came to by then.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MayorRow {
    /// The moment.
    pub at_secs: u64,
    /// The treasury, in cents.
    pub treasury_cents: i64,
    /// The mayor's acts so far.
    pub acts: u32,
    /// Businesses founded.
    pub founded: u32,
    /// Jobs posted.
    pub jobs_posted: u32,
    /// Jobs taken.
    pub jobs_taken: u32,
    /// Wages paid from the treasury, in cents.
    pub wages_paid_cents: i64,
    /// Paid from the treasury to found businesses, in cents.
    pub founding_paid_cents: i64,
}

/// A job a mayor posted, and what came of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobRow {
    /// When it was posted.
    pub posted_secs: u64,
    /// Who posted it: the mayor agent's name, or "the person" at the viewer.
    pub posted_by: String,
    /// Where the work is.
    pub sector: String,
    /// The job.
    pub title: String,
    /// Its wage per hour, in cents.
    pub cents_per_hour: i64,
    /// Who took it, and when.
    pub taken: Option<(String, u64)>,
    /// Wages paid from the treasury for it (to whoever took it, for work at its sector).
    pub paid_cents: i64,
    /// When it was first paid (first worked).
    pub first_paid_secs: Option<u64>,
}

/// The mayor's book over time, every `every_secs` and at the end, and every job posted with
/// who took it and what it paid (no model). Empty for a town without a mayor.
pub fn mayor(events: &[Event], every_secs: u64) -> (Vec<MayorRow>, Vec<JobRow>) {
    #[derive(Default)]
    struct State {
        led: bool,
        names: BTreeMap<AgentId, String>,
        row: MayorRow,
        jobs: Vec<(EventId, JobRow, Option<AgentId>)>,
    }
    let fold = |s: &mut State, e: &Event| match &e.body {
        Body::AgentJoined(j) => {
            s.names.insert(j.agent, j.name.clone());
        }
        Body::MayorActed(m) => {
            s.led = true;
            s.row.acts += 1;
            match &m.act {
                MayorAct::Found { .. } => s.row.founded += 1,
                MayorAct::PostJob { sector, title, cents_per_hour } => {
                    s.row.jobs_posted += 1;
                    let posted_by = m.mayor.map_or_else(
                        || "the person".to_owned(),
                        |a| s.names.get(&a).cloned().unwrap_or_else(|| format!("agent {}", a.0)),
                    );
                    let job = JobRow {
                        posted_secs: e.sim_time_secs(),
                        posted_by,
                        sector: sector.clone(),
                        title: title.clone(),
                        cents_per_hour: *cents_per_hour,
                        taken: None,
                        paid_cents: 0,
                        first_paid_secs: None,
                    };
                    s.jobs.push((e.id, job, None));
                }
                _ => {}
            }
        }
        Body::JobTaken(t) => {
            if let Some((_, job, by)) = s.jobs.iter_mut().find(|(id, ..)| *id == t.job) {
                let name = s.names.get(&t.agent).cloned().unwrap_or_default();
                job.taken = Some((name, e.sim_time_secs()));
                *by = Some(t.agent);
                s.row.jobs_taken += 1;
            }
        }
        Body::CashMoved(c) => {
            if c.to == Account::Town {
                s.led = true;
                s.row.treasury_cents += c.amount_cents;
            }
            if c.from == Account::Town {
                s.row.treasury_cents -= c.amount_cents;
                match &c.to {
                    Account::Agent(agent) => {
                        s.row.wages_paid_cents += c.amount_cents;
                        // The latest job it took at the sector the wage names.
                        let at = c.reason.strip_prefix("wage at ").unwrap_or_default();
                        let job = s
                            .jobs
                            .iter_mut()
                            .rev()
                            .find(|(_, j, by)| *by == Some(*agent) && j.sector == at);
                        if let Some((_, job, _)) = job {
                            job.paid_cents += c.amount_cents;
                            job.first_paid_secs.get_or_insert(e.sim_time_secs());
                        }
                    }
                    _ => s.row.founding_paid_cents += c.amount_cents,
                }
            }
        }
        _ => {}
    };
    let rows = over_time(events, every_secs, State::default(), fold, |s: &State, at| {
        s.led.then(|| MayorRow { at_secs: at, ..s.row.clone() })
    });
    // The jobs as they stand at the end.
    let mut end = State::default();
    for e in events {
        fold(&mut end, e);
    }
    let jobs = end.jobs.into_iter().map(|(_, j, _)| j).collect();
    (rows.into_iter().flatten().collect(), jobs)
}

/// [`mayor`]'s book over time as a table.
pub fn mayor_table(rows: &[MayorRow]) -> Table {
    let header = [
        "time",
        "treasury",
        "acts",
        "founded",
        "jobs posted",
        "jobs taken",
        "wages paid",
        "founding paid",
    ];
    Table::of(&header, rows, |r| {
        vec![
            crate::describe::sim_time(r.at_secs),
            crate::describe::cents(r.treasury_cents),
            r.acts.to_string(),
            r.founded.to_string(),
            r.jobs_posted.to_string(),
            r.jobs_taken.to_string(),
            crate::describe::cents(r.wages_paid_cents),
            crate::describe::cents(r.founding_paid_cents),
        ]
    })
}

/// [`mayor`]'s jobs as a table.
pub fn jobs_table(rows: &[JobRow]) -> Table {
    let header =
        ["posted", "by", "job", "at", "wage", "taken by", "taken", "wages paid", "first paid"];
    Table::of(&header, rows, |r| {
        vec![
            crate::describe::sim_time(r.posted_secs),
            r.posted_by.clone(),
            r.title.clone(),
            r.sector.clone(),
            crate::describe::cents(r.cents_per_hour),
            r.taken.as_ref().map(|t| t.0.clone()).unwrap_or_default(),
            r.taken.as_ref().map(|t| crate::describe::sim_time(t.1)).unwrap_or_default(),
            crate::describe::cents(r.paid_cents),
            r.first_paid_secs.map(crate::describe::sim_time).unwrap_or_default(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_one_csv_for_every_front_end() {
        let rows = vec![DiffusionRow {
            at_secs: 7 * 3600,
            agents: 10,
            knowing: vec!["Tobias Ashcombe".into(), "Delphine \"Del\" Ashcombe".into()],
            share: 0.2,
        }];
        let table = diffusion_table(&rows);
        assert_eq!(table.header, ["time", "agents", "knowing", "share", "who"]);
        assert_eq!(
            table.csv(),
            "time,agents,knowing,share,who\nday 0 07:00:00,10,2,0.20,\"Tobias Ashcombe; Delphine \"\"Del\"\" Ashcombe\"\n"
        );
    }

    /// Events of `bodies` at their times, each one's id its index in every byte.
    fn numbered(bodies: impl IntoIterator<Item = (u64, Body)>) -> Vec<Event> {
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, (at, body))| Event {
                id: hamlet_log::EventId([i as u8; 32]),
                parent: hamlet_log::EventId::NONE,
                branch: hamlet_log::BranchId(hamlet_log::EventId::NONE),
                header: hamlet_log::event::Header {
                    seq: i as u64,
                    sim_time_secs: at,
                    causes: Vec::new(),
                },
                body,
            })
            .collect()
    }

    #[test]
    fn a_goals_progress_is_what_the_log_counts_toward_its_measure() {
        use crate::town::{Measure, GOAL_TRAIT, MEASURE_TRAIT};
        use hamlet_log::event::{AgentJoined, CashMoved, ConversationStarted};
        let joined = |agent: u32, name: &str, measure: Option<Measure>| {
            let mut traits = vec![(GOAL_TRAIT.to_owned(), format!("{name} wants something"))];
            if let Some(m) = measure {
                traits.push((MEASURE_TRAIT.to_owned(), m.to_trait()));
            }
            Body::AgentJoined(AgentJoined {
                agent: AgentId(agent),
                name: name.into(),
                persona: String::new(),
                traits,
                tile: Tile::default(),
                cash_cents: 0,
            })
        };
        let paid = |to: u32, cents: i64, reason: &str| {
            Body::CashMoved(CashMoved {
                from: Account::World,
                to: Account::Agent(AgentId(to)),
                amount_cents: cents,
                reason: reason.into(),
            })
        };
        let bought = |from: u32, reason: &str| {
            Body::CashMoved(CashMoved {
                from: Account::Agent(AgentId(from)),
                to: Account::Shop("bakery".into()),
                amount_cents: 300,
                reason: reason.into(),
            })
        };
        let talk = |a: u32, b: u32| {
            Body::ConversationStarted(ConversationStarted {
                agents: vec![AgentId(a), AgentId(b)],
                address: "café:counter".into(),
            })
        };
        let acted = |mayor: Option<u32>, act: MayorAct| {
            Body::MayorActed(hamlet_log::event::MayorActed { mayor: mayor.map(AgentId), act })
        };
        let found = || MayorAct::Found {
            template: "café".into(),
            name: "bakery".into(),
            site: "north lot".into(),
            cost_cents: 100,
        };
        let job = |title: &str| MayorAct::PostJob {
            sector: "café".into(),
            title: title.into(),
            cents_per_hour: 1500,
        };
        let taken = |agent: u32, posted: u8| {
            Body::JobTaken(hamlet_log::event::JobTaken {
                agent: AgentId(agent),
                job: hamlet_log::EventId([posted; 32]),
            })
        };
        let h = |hour: u64| hour * 3600;
        let bodies = [
            (h(7), joined(0, "Ada", Some(Measure::Earn { cents: 1000 }))),
            (h(7), joined(1, "Bo", Some(Measure::Buy { item: "Bread".into(), times: 2 }))),
            (h(7), joined(2, "Cy", Some(Measure::Meet { name: "Ada".into() }))),
            (h(7), joined(3, "Di", None)),
            (h(7), joined(4, "Ed", Some(Measure::Hire { count: 2 }))),
            (h(7), joined(5, "Fay", Some(Measure::Found { count: 1 }))),
            (h(8), paid(0, 600, "wage")),
            (h(8), bought(1, "a loaf of bread")),
            (h(8), bought(1, "coffee")),
            (h(9), paid(0, 600, "wage")),
            (h(9), talk(1, 2)),
            (h(10), talk(2, 0)),
            (h(10), bought(1, "bread rolls")),
            // Events 13 on: Fay founds; Ed posts a job (14), the person at the viewer one (15).
            (h(10), acted(Some(5), found())),
            (h(10), acted(Some(4), job("baker"))),
            (h(10), acted(None, job("clerk"))),
            (h(11), taken(1, 14)),
            (h(11), taken(2, 15)),
            (h(11), acted(Some(4), job("porter"))),
            (h(12), taken(3, 18)),
        ];
        let events = numbered(bodies);
        let rows = goals(&events, 3600);
        let at = |agent: &str, secs: u64| {
            rows.iter().find(|r| r.agent == agent && r.at_secs == secs).unwrap().clone()
        };
        // Money paid to Ada: 600 by 08:00, 1200 by 09:00 (reached at 09:00).
        assert_eq!((at("Ada", h(8)).count, at("Ada", h(8)).progress), (600, Some(0.6)));
        assert_eq!(at("Ada", h(9)).progress, Some(1.0));
        assert_eq!(at("Ada", h(10)).reached_secs, Some(h(9)));
        // Bread bought by Bo, any case, coffee not: once by 08:00, twice by 10:00.
        assert_eq!(at("Bo", h(9)).count, 1);
        assert_eq!((at("Bo", h(10)).count, at("Bo", h(10)).reached_secs), (2, Some(h(10))));
        // Cy meets Ada at 10:00, not at the talk with Bo.
        assert_eq!(at("Cy", h(9)).count, 0);
        assert_eq!(at("Cy", h(10)).reached_secs, Some(h(10)));
        // Fay founded a business at 10:00; Ed's first posted job was taken at 11:00, the
        // person's not counted, his second at 12:00.
        assert_eq!(at("Fay", h(10)).reached_secs, Some(h(10)));
        assert_eq!((at("Ed", h(11)).count, at("Ed", h(11)).reached_secs), (1, None));
        assert_eq!((at("Ed", h(12)).count, at("Ed", h(12)).reached_secs), (2, Some(h(12))));
        assert_eq!(at("Ed", h(12)).measure, "hire 2 people");
        assert_eq!(Measure::from_trait("hire 2"), Some(Measure::Hire { count: 2 }));
        assert_eq!(Measure::from_trait("found 1"), Some(Measure::Found { count: 1 }));
        // A goal without a measure: listed, with none.
        assert_eq!((at("Di", h(10)).measure.as_str(), at("Di", h(10)).progress), ("", None));
        let table = goals_table(&rows);
        assert!(table.csv().starts_with("time,agent,goal,measure,count,target,progress,reached\n"));
        assert!(table
            .csv()
            .contains("Ada,Ada wants something,earn $10.00,1200,1000,100%,day 0 09:00:00"));
        assert_eq!(
            Measure::from_trait("buy 2 Bread"),
            Some(Measure::Buy { item: "Bread".into(), times: 2 })
        );
        assert_eq!(
            Measure::from_trait("meet Mei Lin"),
            Some(Measure::Meet { name: "Mei Lin".into() })
        );
        assert_eq!(Measure::from_trait("fly 3"), None);
    }

    #[test]
    fn the_mayors_book_counts_the_treasury_the_acts_and_what_each_job_paid() {
        use hamlet_log::event::{AgentJoined, CashMoved, JobTaken, MayorActed};
        let joined = |agent: u32, name: &str| {
            Body::AgentJoined(AgentJoined {
                agent: AgentId(agent),
                name: name.into(),
                persona: String::new(),
                traits: Vec::new(),
                tile: Tile::default(),
                cash_cents: 0,
            })
        };
        let moved = |from: Account, to: Account, cents: i64, reason: &str| {
            Body::CashMoved(CashMoved { from, to, amount_cents: cents, reason: reason.into() })
        };
        let acted = |mayor: Option<u32>, act: MayorAct| {
            Body::MayorActed(MayorActed { mayor: mayor.map(AgentId), act })
        };
        let job = |sector: &str, title: &str| MayorAct::PostJob {
            sector: sector.into(),
            title: title.into(),
            cents_per_hour: 1500,
        };
        let worker = || Account::Agent(AgentId(1));
        let h = |hour: u64| hour * 3600;
        let bodies = [
            (h(7), joined(0, "Ada")),
            (h(7), joined(1, "Tom")),
            (h(7), moved(Account::World, Account::Town, 100_000, "the town's funds")),
            (
                h(8),
                acted(
                    Some(0),
                    MayorAct::Found {
                        template: "café".into(),
                        name: "bakery".into(),
                        site: "north lot".into(),
                        cost_cents: 40_000,
                    },
                ),
            ),
            (h(8), moved(Account::Town, Account::World, 40_000, "founds bakery")),
            // Event 5: Ada's job at the bakery; 6: the person's at the café, never taken.
            (h(8), acted(Some(0), job("bakery", "baker"))),
            (h(8), acted(None, job("café", "waiter"))),
            (
                h(9),
                Body::JobTaken(JobTaken { agent: AgentId(1), job: hamlet_log::EventId([5; 32]) }),
            ),
            (h(10), moved(Account::Town, worker(), 1_500, "wage at bakery")),
            (h(11), moved(Account::Town, worker(), 1_500, "wage at bakery")),
            // A wage from outside the town is not the treasury's.
            (h(11), moved(Account::World, worker(), 900, "wage at café")),
        ];
        let events = numbered(bodies);
        let (rows, jobs) = mayor(&events, 3600);
        let at = |secs: u64| rows.iter().find(|r| r.at_secs == secs).unwrap().clone();
        assert_eq!(at(h(8)).treasury_cents, 60_000);
        assert_eq!((at(h(8)).acts, at(h(8)).founded, at(h(8)).jobs_posted), (3, 1, 2));
        assert_eq!(at(h(8)).founding_paid_cents, 40_000);
        let end = rows.last().unwrap();
        assert_eq!((end.at_secs, end.jobs_taken, end.wages_paid_cents), (h(11), 1, 3_000));
        assert_eq!(end.treasury_cents, 57_000);
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].posted_by, "Ada");
        assert_eq!(jobs[0].taken, Some(("Tom".to_owned(), h(9))));
        assert_eq!((jobs[0].paid_cents, jobs[0].first_paid_secs), (3_000, Some(h(10))));
        assert_eq!(
            (jobs[1].posted_by.as_str(), &jobs[1].taken, jobs[1].paid_cents),
            ("the person", &None, 0)
        );
        let table = jobs_table(&jobs).csv();
        assert!(
            table.contains("Ada,baker,bakery,$15.00,Tom,day 0 09:00:00,$30.00,day 0 10:00:00"),
            "{table}"
        );
        // A town without a mayor has no book.
        assert_eq!(mayor(&events[..2], 3600), (Vec::new(), Vec::new()));
    }

    #[test]
    fn a_line_repeats_when_most_of_its_words_were_said_before() {
        use crate::mind::validate::repeats;
        assert!(repeats(
            "Hi Tobias, are you coming to the party?",
            "hi tobias are you coming to the party"
        ));
        assert!(repeats("See you at five at the café.", "See you at five at the café, then!"));
        assert!(!repeats("See you at five at the café.", "I will bring the cake my mother baked."));
        assert!(!repeats("", ""));
    }

    #[test]
    fn the_battery_covers_the_five_categories_twice_and_names_the_other() {
        let questions = battery("Ben");
        for c in CATEGORIES {
            assert_eq!(questions.iter().filter(|(k, _)| *k == c).count(), 2, "{c}");
        }
        assert!(questions.iter().any(|(_, q)| q.contains("Ben")));
    }

    #[test]
    fn presence_counts_the_time_each_agent_stood_inside_the_window() {
        let tile = |x: u16| Tile { x, y: 0 };
        // Inside is x >= 10. The window is 100..200.
        let positions = vec![
            (0, "Ann".to_owned(), tile(10)),  // inside from the start
            (0, "Ben".to_owned(), tile(1)),   // comes in at 150, leaves at 170
            (0, "Cy".to_owned(), tile(1)),    // never comes
            (120, "Ann".to_owned(), tile(2)), // leaves at 120
            (150, "Ben".to_owned(), tile(11)),
            (170, "Ben".to_owned(), tile(3)),
            (190, "Ann".to_owned(), tile(12)), // back for the last 10
            (250, "Cy".to_owned(), tile(10)),  // after the window
        ];
        let rows = presence(positions, |t| t.x >= 10, 100, 200);
        assert_eq!(
            rows,
            vec![
                Attendee { agent: "Ann".into(), first_secs: 100, secs: 30 },
                Attendee { agent: "Ben".into(), first_secs: 150, secs: 20 },
            ]
        );
    }

    #[test]
    fn csv_fields_are_quoted_when_they_must_be() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\"\nthen"), "\"say \"\"hi\"\"\nthen\"");
    }
}

/// How believable one agent's lines and actions were (see [`believability`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BelievabilityRow {
    /// The agent's name ("all" for the whole recording).
    pub agent: String,
    /// Lines it said.
    pub lines: u32,
    /// Lines that repeat a line of an earlier conversation (anyone's):
    /// [`validate::repeats_line`](crate::mind::validate::repeats_line).
    pub repeats_earlier: u32,
    /// Lines in which it names itself.
    pub names_itself: u32,
    /// Lines that narrate (stage directions, someone described in the third person).
    pub narrates: u32,
    /// Lines that name the wrong spouse, workplace or home for it, as the town file tells.
    pub identity_slips: u32,
    /// Lines that speak as an assistant ("I'm sorry, but I can't help with that").
    pub out_of_character: u32,
    /// Lines that call the one spoken to by another resident's name
    /// ([`validate::misnames`](crate::mind::validate::misnames)): an identity slip too.
    pub misnames: u32,
    /// Lines in the planner's words ("540 minutes free", "at 07:01"):
    /// [`validate::planner_words`](crate::mind::validate::planner_words).
    pub planner_words: u32,
    /// Actions it started from its plans.
    pub actions: u32,
    /// Actions that copy one of its persona's statements.
    pub copies_persona: u32,
    /// Actions at an hour they contradict.
    pub odd_hours: u32,
}

impl BelievabilityRow {
    fn add(&mut self, other: &BelievabilityRow) {
        self.lines += other.lines;
        self.repeats_earlier += other.repeats_earlier;
        self.names_itself += other.names_itself;
        self.narrates += other.narrates;
        self.identity_slips += other.identity_slips;
        self.out_of_character += other.out_of_character;
        self.misnames += other.misnames;
        self.planner_words += other.planner_words;
        self.actions += other.actions;
        self.copies_persona += other.copies_persona;
        self.odd_hours += other.odd_hours;
    }

    /// `n` as a percentage of the lines.
    pub fn of_lines(&self, n: u32) -> f64 {
        100.0 * f64::from(n) / f64::from(self.lines.max(1))
    }

    /// `n` as a percentage of the actions.
    pub fn of_actions(&self, n: u32) -> f64 {
        100.0 * f64::from(n) / f64::from(self.actions.max(1))
    }
}

/// Believability of a recording's lines and actions, per agent and in all (the last row,
/// `all`): the checks of [`crate::mind::validate`] counted over what was said and done. A
/// line is checked against every line of the conversations before its own; actions are those
/// started from a plan, at the time they started.
pub fn believability(events: &[Event]) -> Vec<BelievabilityRow> {
    use crate::mind::validate::{self, Facts};
    let town = events.iter().find_map(|e| match &e.body {
        Body::TownLoaded(t) => crate::town::Definition::parse("the recorded town", &t.source).ok(),
        _ => None,
    });
    let sectors: Vec<String> =
        town.iter().flat_map(|t| t.sectors.iter().map(|s| s.name.clone())).collect();
    let everyone: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => Some(j.name.clone()),
            _ => None,
        })
        .collect();
    let mut names: BTreeMap<AgentId, String> = BTreeMap::new();
    let mut facts: BTreeMap<AgentId, Facts> = BTreeMap::new();
    let mut seeds: BTreeMap<AgentId, Vec<String>> = BTreeMap::new();
    let mut rows: BTreeMap<AgentId, BelievabilityRow> = BTreeMap::new();
    let mut members: BTreeMap<hamlet_log::EventId, Vec<AgentId>> = BTreeMap::new();
    // Lines of conversations that ended, and of the open ones, by conversation.
    let mut earlier: Vec<BTreeSet<String>> = Vec::new();
    let mut open: BTreeMap<hamlet_log::EventId, Vec<BTreeSet<String>>> = BTreeMap::new();
    for e in events {
        match &e.body {
            Body::AgentJoined(j) => {
                let trait_of =
                    |k: &str| j.traits.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
                let seed = crate::mind::memory::seed_statements(&j.persona);
                facts.insert(
                    j.agent,
                    Facts::of(
                        &j.name,
                        &seed,
                        trait_of("home").unwrap_or(""),
                        trait_of("workplace"),
                        &everyone,
                        &sectors,
                    ),
                );
                seeds.insert(j.agent, seed.into_iter().map(str::to_owned).collect());
                names.insert(j.agent, j.name.clone());
                rows.entry(j.agent).or_default().agent = j.name.clone();
            }
            Body::ConversationStarted(c) => {
                members.insert(e.id, c.agents.clone());
            }
            Body::DialogueTurn(t) if !t.text.trim().is_empty() => {
                let speaker = names.get(&t.speaker).cloned().unwrap_or_default();
                let others: Vec<String> = members
                    .get(&t.conversation)
                    .into_iter()
                    .flatten()
                    .filter(|a| **a != t.speaker)
                    .filter_map(|a| names.get(a).cloned())
                    .collect();
                let row = rows.entry(t.speaker).or_default();
                row.lines += 1;
                let words = validate::words(&t.text);
                if earlier.iter().any(|w| validate::repeats_line(w, &words)) {
                    row.repeats_earlier += 1;
                }
                if validate::names_itself(&t.text, &speaker) {
                    row.names_itself += 1;
                }
                let mut all: Vec<&str> = vec![speaker.as_str()];
                all.extend(others.iter().map(String::as_str));
                if validate::narrates(&t.text, &all) {
                    row.narrates += 1;
                }
                if facts.get(&t.speaker).and_then(|f| f.slip(&t.text)).is_some() {
                    row.identity_slips += 1;
                }
                if validate::out_of_character(&t.text) {
                    row.out_of_character += 1;
                }
                let listeners: Vec<&str> = others.iter().map(String::as_str).collect();
                if validate::misnames(&t.text, &speaker, &listeners, &everyone).is_some() {
                    row.misnames += 1;
                }
                if validate::planner_words(&t.text).is_some() {
                    row.planner_words += 1;
                }
                open.entry(t.conversation).or_default().push(words);
            }
            Body::ConversationEnded(c) => {
                earlier.extend(open.remove(&c.conversation).unwrap_or_default());
            }
            Body::ActionStarted(a) if a.plan_item.is_some() => {
                let name = names.get(&a.agent).cloned().unwrap_or_default();
                let seed: Vec<&str> =
                    seeds.get(&a.agent).into_iter().flatten().map(String::as_str).collect();
                let minute = (e.sim_time_secs() % 86_400 / 60) as u16;
                let row = rows.entry(a.agent).or_default();
                row.actions += 1;
                match validate::check_action(&a.description, minute, &name, &seed) {
                    Some(validate::ActionFault::CopiesPersona(_)) => row.copies_persona += 1,
                    Some(validate::ActionFault::OddHour(_)) => row.odd_hours += 1,
                    None => {}
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<BelievabilityRow> = rows.into_values().collect();
    let mut all = BelievabilityRow { agent: "all".into(), ..Default::default() };
    for row in &out {
        all.add(row);
    }
    out.push(all);
    out
}

/// One commitment an agent made (a `CommitmentMade`), for [`commitments`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommitmentRow {
    /// When it was agreed, simulated seconds.
    pub made_secs: u64,
    /// Who agreed.
    pub agent: String,
    /// With whom.
    pub with: Vec<String>,
    /// What.
    pub what: String,
    /// Where (`sector:arena`).
    pub address: String,
    /// From when.
    pub start_secs: u64,
    /// Until when.
    pub end_secs: u64,
}

/// Every commitment of `events` (in the order made) at `place` (a sector or `sector:arena`,
/// any case; every place when empty) that overlaps `[from, until)`.
pub fn commitments(events: &[Event], place: &str, from: u64, until: u64) -> Vec<CommitmentRow> {
    let mut names: BTreeMap<AgentId, String> = BTreeMap::new();
    let place = place.to_lowercase();
    let mut out = Vec::new();
    for e in events {
        match &e.body {
            Body::AgentJoined(j) => {
                names.insert(j.agent, j.name.clone());
            }
            Body::CommitmentMade(c) => {
                let end = c.start_secs + u64::from(c.duration_secs);
                let address = c.address.to_lowercase();
                let here = place.is_empty()
                    || address == place
                    || address.starts_with(&format!("{place}:"));
                if !here || end <= from || c.start_secs >= until {
                    continue;
                }
                let name =
                    |a: &AgentId| names.get(a).cloned().unwrap_or_else(|| format!("#{}", a.0));
                out.push(CommitmentRow {
                    made_secs: e.sim_time_secs(),
                    agent: name(&c.agent),
                    with: c.with.iter().map(name).collect(),
                    what: c.what.clone(),
                    address: c.address.clone(),
                    start_secs: c.start_secs,
                    end_secs: end,
                });
            }
            _ => {}
        }
    }
    out
}

/// An agent's progress toward its life goal at one moment, for [`goals`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GoalRow {
    /// The moment.
    pub at_secs: u64,
    /// The agent.
    pub agent: String,
    /// Its goal, in its town's words.
    pub goal: String,
    /// How the log counts its progress, in words; empty when its town gave no measure.
    pub measure: String,
    /// What the log counts so far: cents earned, purchases, conversations.
    pub count: i64,
    /// What the measure asks for.
    pub target: i64,
    /// `count` over `target`, at most 1; `None` without a measure.
    pub progress: Option<f64>,
    /// When the count first reached the target, if it has.
    pub reached_secs: Option<u64>,
}

/// Each agent with a life goal, at each moment `every_secs` apart (and the last event's):
/// what the log counts toward the goal's measure (money paid to it; purchases whose reason
/// names the item; conversations with the person), and when it was reached. Agents whose
/// goal has no measure are listed with none.
pub fn goals(events: &[Event], every_secs: u64) -> Vec<GoalRow> {
    use crate::town::{Measure, GOAL_TRAIT, MEASURE_TRAIT};
    struct Aim {
        name: String,
        goal: String,
        measure: Option<Measure>,
        count: i64,
        reached: Option<u64>,
    }
    #[derive(Default)]
    struct State {
        aims: BTreeMap<AgentId, Aim>,
        names: BTreeMap<AgentId, String>,
        /// Jobs a mayor agent posted: the posting event, and who posted it.
        posted: BTreeMap<EventId, AgentId>,
    }
    let target = |m: &Option<Measure>| match m {
        Some(Measure::Earn { cents }) => *cents,
        Some(Measure::Buy { times, .. }) => i64::from(*times),
        Some(Measure::Meet { .. }) => 1,
        Some(Measure::Found { count } | Measure::Hire { count }) => i64::from(*count),
        None => 0,
    };
    let fold = |s: &mut State, e: &Event| {
        let add = |s: &mut State, agent: AgentId, by: i64| {
            if let Some(aim) = s.aims.get_mut(&agent) {
                aim.count += by;
                if aim.reached.is_none()
                    && aim.measure.is_some()
                    && aim.count >= target(&aim.measure)
                {
                    aim.reached = Some(e.sim_time_secs());
                }
            }
        };
        match &e.body {
            Body::AgentJoined(j) => {
                s.names.insert(j.agent, j.name.clone());
                let t = |k: &str| j.traits.iter().find(|(key, _)| key == k).map(|(_, v)| v);
                if let Some(goal) = t(GOAL_TRAIT) {
                    let measure = t(MEASURE_TRAIT).and_then(|m| Measure::from_trait(m));
                    let aim = Aim {
                        name: j.name.clone(),
                        goal: goal.clone(),
                        measure,
                        count: 0,
                        reached: None,
                    };
                    s.aims.insert(j.agent, aim);
                }
            }
            Body::CashMoved(c) => {
                if let Account::Agent(to) = &c.to {
                    if matches!(
                        s.aims.get(to).map(|a| &a.measure),
                        Some(Some(Measure::Earn { .. }))
                    ) {
                        add(s, *to, c.amount_cents);
                    }
                }
                if let (Account::Agent(from), Account::Shop(_)) = (&c.from, &c.to) {
                    let buys = match s.aims.get(from).map(|a| &a.measure) {
                        Some(Some(Measure::Buy { item, .. })) => {
                            c.reason.to_lowercase().contains(&item.to_lowercase())
                        }
                        _ => false,
                    };
                    if buys {
                        add(s, *from, 1);
                    }
                }
            }
            Body::MayorActed(m) => {
                if let Some(mayor) = m.mayor {
                    match (&m.act, s.aims.get(&mayor).map(|a| &a.measure)) {
                        (MayorAct::Found { .. }, Some(Some(Measure::Found { .. }))) => {
                            add(s, mayor, 1);
                        }
                        (MayorAct::PostJob { .. }, _) => {
                            s.posted.insert(e.id, mayor);
                        }
                        _ => {}
                    }
                }
            }
            Body::JobTaken(j) => {
                if let Some(&mayor) = s.posted.get(&j.job) {
                    if matches!(
                        s.aims.get(&mayor).map(|a| &a.measure),
                        Some(Some(Measure::Hire { .. }))
                    ) {
                        add(s, mayor, 1);
                    }
                }
            }
            Body::ConversationStarted(c) => {
                let named: Vec<(AgentId, String)> = c
                    .agents
                    .iter()
                    .filter_map(|a| s.names.get(a).map(|n| (*a, n.clone())))
                    .collect();
                for (a, _) in &named {
                    let meets = match s.aims.get(a).map(|x| &x.measure) {
                        Some(Some(Measure::Meet { name })) => {
                            named.iter().any(|(b, n)| b != a && n == name)
                        }
                        _ => false,
                    };
                    if meets {
                        add(s, *a, 1);
                    }
                }
            }
            _ => {}
        }
    };
    let rows = over_time(events, every_secs, State::default(), fold, |s: &State, at| {
        s.aims
            .values()
            .map(|a| {
                let goal_target = target(&a.measure);
                GoalRow {
                    at_secs: at,
                    agent: a.name.clone(),
                    goal: a.goal.clone(),
                    measure: a.measure.as_ref().map(Measure::words).unwrap_or_default(),
                    count: a.count,
                    target: goal_target,
                    progress: a
                        .measure
                        .as_ref()
                        .map(|_| (a.count as f64 / goal_target.max(1) as f64).clamp(0.0, 1.0)),
                    reached_secs: a.reached,
                }
            })
            .collect::<Vec<_>>()
    });
    rows.into_iter().flatten().collect()
}

/// [`goals`]' rows as a table.
pub fn goals_table(rows: &[GoalRow]) -> Table {
    let header = ["time", "agent", "goal", "measure", "count", "target", "progress", "reached"];
    Table::of(&header, rows, |r| {
        vec![
            crate::describe::sim_time(r.at_secs),
            r.agent.clone(),
            r.goal.clone(),
            r.measure.clone(),
            if r.measure.is_empty() { String::new() } else { r.count.to_string() },
            if r.measure.is_empty() { String::new() } else { r.target.to_string() },
            r.progress.map(|p| format!("{:.0}%", 100.0 * p)).unwrap_or_default(),
            r.reached_secs.map(crate::describe::sim_time).unwrap_or_default(),
        ]
    })
}

/// One branch in a comparison of forks (`hamlet research forks`): how it runs, and what came
/// of it by one moment, the same moment for every branch compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForkRow {
    /// The branch's name.
    pub branch: String,
    /// How it runs: its rulebook and what that leaves out, and a strategy every agent runs.
    pub runs: String,
    /// The moment measured at (simulated seconds): its last event at or before it.
    pub until_secs: u64,
    /// Agents in town by then.
    pub agents: u32,
    /// Conversations with at least one line.
    pub conversations: u32,
    /// Lines said.
    pub lines: u32,
    /// For each fact followed, as [`diffusion`] follows it: the agents whose memory holds it.
    pub heard: Vec<u32>,
    /// Pairs of agents who have talked, over all pairs ([`network_density`]).
    pub density: f64,
    /// Agents holding a commitment made by then ([`commitments`]).
    pub committed: u32,
    /// The believability counts over every agent: [`believability`]'s `all` row.
    pub believability: BelievabilityRow,
    /// Model calls by then, each try counted.
    pub calls: u32,
}

/// Measures a branch's history (`events`: its ancestry, then its own) up to `until_secs`,
/// for a comparison of forks: see [`ForkRow`]. `spreads` are the facts followed, each as
/// the keywords every memory of it holds.
pub fn fork_row(
    branch: &str,
    events: &[Event],
    until_secs: u64,
    spreads: &[Vec<String>],
) -> ForkRow {
    // A branch's history is in time order (the store refuses an event before its time).
    let cut = events.iter().position(|e| e.sim_time_secs() > until_secs).unwrap_or(events.len());
    let events = &events[..cut];
    let settings = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            Body::RunConfigured(c) => Some(c.settings.as_slice()),
            _ => None,
        })
        .unwrap_or_default();
    let mut runs = match crate::rulebook::Rulebook::recorded(settings) {
        Ok(rulebook) => rulebook.to_string(),
        Err(e) => format!("a rulebook this Hamlet does not know ({e})"),
    };
    if let Some((_, s)) = settings.iter().find(|(k, _)| k == crate::rulebook::STRATEGY_SETTING) {
        runs.push_str(&format!("; every agent {s}"));
    }
    let density = network_density(events, u64::MAX).pop();
    let heard = spreads
        .iter()
        .map(|keywords| {
            let last = diffusion(events, keywords, u64::MAX).pop();
            last.map_or(0, |row| row.knowing.len() as u32)
        })
        .collect();
    let committed: BTreeSet<String> =
        commitments(events, "", 0, u64::MAX).into_iter().map(|c| c.agent).collect();
    let talk = dialogue(events);
    ForkRow {
        branch: branch.to_owned(),
        runs,
        until_secs: events.last().map_or(0, Event::sim_time_secs),
        agents: density.as_ref().map_or(0, |d| d.agents),
        conversations: talk.conversations,
        lines: talk.lines,
        heard,
        density: density.map_or(0.0, |d| d.density),
        committed: committed.len() as u32,
        believability: believability(events).pop().unwrap_or_default(),
        calls: events.iter().filter(|e| matches!(e.body, Body::LlmRequested(_))).count() as u32,
    }
}

/// What the agents thinking with one model did in a run, for a comparison of models
/// (`hamlet bench models`): costs from the log, and every measure of the others.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRow {
    /// The name its agents think with (`default`, `small`, or a config file's profile).
    pub model: String,
    /// The models that answered their calls, as the calls recorded them.
    pub answered_by: Vec<String>,
    /// Its agents.
    pub agents: u32,
    /// Simulated hours from the first agent's joining to the last event, times `agents`.
    pub agent_hours: f64,
    /// Their calls (first tries).
    pub calls: u64,
    /// Tries, first ones included.
    pub tries: u64,
    /// Tries that failed (transport errors and answers that did not validate).
    pub failures: u64,
    /// Calls answered by the documented fallback.
    pub fallbacks: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Of the prompt tokens, those the backend reused from its cache.
    pub cached_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Dollars, by the config file's prices (0 for the embedded models).
    pub money: f64,
    /// Their believability counts, added up ([`believability`]).
    pub believability: BelievabilityRow,
    /// Of their agents with a measured life goal: how many, their mean progress, and how
    /// many reached it ([`goals`]).
    pub goals_measured: u32,
    /// Mean progress toward a measured goal (0 to 1); `None` with no measured goal.
    pub goal_progress: Option<f64>,
    /// Agents whose measured goal was reached.
    pub goals_reached: u32,
    /// For each fact followed, as [`diffusion`] follows it: how many of its agents hold it.
    pub heard: Vec<u32>,
}

impl ModelRow {
    /// Calls per agent-hour.
    pub fn calls_per_agent_hour(&self) -> f64 {
        self.calls as f64 / self.agent_hours.max(1e-9)
    }

    /// Line faults (every believability count of a line) per 100 lines said.
    pub fn line_faults(&self) -> f64 {
        let b = &self.believability;
        let n = b.repeats_earlier
            + b.names_itself
            + b.narrates
            + b.identity_slips
            + b.out_of_character
            + b.misnames
            + b.planner_words;
        b.of_lines(n)
    }

    /// Actions that copy a persona statement or sit at an odd hour, per 100 actions.
    pub fn action_faults(&self) -> f64 {
        let b = &self.believability;
        b.of_actions(b.copies_persona + b.odd_hours)
    }
}

/// A run's agents grouped by the model each thinks with (the `model` trait its joining
/// recorded; `default` without one), one [`ModelRow`] per model, in name order. `spreads`
/// are the facts followed, each as the keywords every memory of it holds.
pub fn model_rows(
    events: &[Event],
    spreads: &[Vec<String>],
    prices: &BTreeMap<String, crate::cost::Price>,
) -> Vec<ModelRow> {
    // Each agent's name and model.
    let mut agents: BTreeMap<AgentId, (String, String)> = BTreeMap::new();
    let mut start = None;
    for e in events {
        if let Body::AgentJoined(j) = &e.body {
            start.get_or_insert(e.sim_time_secs());
            let model = j.traits.iter().find(|(k, _)| k == crate::town::MODEL_TRAIT);
            let model = model.map_or_else(|| "default".to_owned(), |m| m.1.clone());
            agents.insert(j.agent, (j.name.clone(), model));
        }
    }
    let end = events.last().map_or(0, Event::sim_time_secs);
    let hours = end.saturating_sub(start.unwrap_or(end)) as f64 / 3600.0;
    let report = crate::cost::report(events.iter().map(|e| (e.sim_time_secs(), &e.body)), prices);
    let believable = believability(events);
    let goal_rows = goals(events, u64::MAX);
    let last_goals: Vec<&GoalRow> = match goal_rows.last() {
        Some(last) => goal_rows.iter().filter(|r| r.at_secs == last.at_secs).collect(),
        None => Vec::new(),
    };
    let knowing: Vec<BTreeSet<String>> = spreads
        .iter()
        .map(|k| diffusion(events, k, u64::MAX).pop().map(|r| r.knowing).unwrap_or_default())
        .map(|names| names.into_iter().collect())
        .collect();
    let mut answered: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for e in events {
        if let Body::LlmRequested(r) = &e.body {
            if let Some(a) = r.agent {
                answered.entry(a.0).or_default().insert(r.model.clone());
            }
        }
    }
    let mut rows: BTreeMap<String, ModelRow> = BTreeMap::new();
    for (agent, (name, model)) in &agents {
        let row = rows.entry(model.clone()).or_insert_with(|| ModelRow {
            model: model.clone(),
            heard: vec![0; spreads.len()],
            ..ModelRow::default()
        });
        row.agents += 1;
        row.agent_hours += hours;
        if let Some(t) = report.by_agent.get(&Some(agent.0)) {
            row.calls += t.calls;
            row.tries += t.tries;
            row.failures += t.failures;
            row.fallbacks += t.fallbacks;
            row.prompt_tokens += t.prompt_tokens;
            row.cached_tokens += t.cached_tokens;
            row.completion_tokens += t.completion_tokens;
            row.money += t.money;
        }
        for m in answered.get(&agent.0).into_iter().flatten() {
            if !row.answered_by.contains(m) {
                row.answered_by.push(m.clone());
                row.answered_by.sort();
            }
        }
        if let Some(b) = believable.iter().find(|b| b.agent == *name) {
            row.believability.add(b);
        }
        if let Some(g) = last_goals.iter().find(|g| g.agent == *name) {
            if let Some(p) = g.progress {
                let before = row.goal_progress.unwrap_or(0.0) * f64::from(row.goals_measured);
                row.goals_measured += 1;
                row.goal_progress = Some((before + p) / f64::from(row.goals_measured));
                row.goals_reached += u32::from(g.reached_secs.is_some());
            }
        }
        for (heard, knowing) in row.heard.iter_mut().zip(&knowing) {
            *heard += u32::from(knowing.contains(name));
        }
    }
    for row in rows.values_mut() {
        row.believability.agent = row.model.clone();
    }
    rows.into_values().collect()
}
