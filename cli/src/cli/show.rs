//! `hamlet show`, `hamlet calls`, `hamlet transcript`: the queries of `query.rs` on the
//! command line, as text for people or JSON for tools.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use hamlet_engine::describe::{cents, clock, printable, sim_time};
use hamlet_engine::history::Moment;
use hamlet_engine::query::{ActionView, AgentView, CallView, Past, TownView};
use hamlet_engine::town::at_place;
use hamlet_log::Event;

use super::recording::{source_events, source_events_light};
use super::why::seq_at;
use super::{agent_named, parse_moment, Outcome, Source};

/// Text for people or JSON for tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// Readable text.
    Text,
    /// JSON (the engine's query types; ids and hashes as hex).
    Json,
}

/// `hamlet show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    source: Source,
    /// The moment (`day<N> <HH:MM>`, `<HH:MM>`, `#<seq>`, `end`)
    #[arg(long, value_parser = parse_moment, default_value = "end")]
    at: Moment,
    /// Show this agent as it was then (name or number) instead of the whole town
    #[arg(long)]
    agent: Option<String>,
    /// Memories to list, most recent last (0: every one); JSON always has every one
    #[arg(long, default_value_t = 20)]
    memories: usize,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: ShowFormat,
}

/// `hamlet calls`.
#[derive(Debug, Args)]
pub struct CallsArgs {
    #[command(flatten)]
    source: Source,
    /// Only calls first sent at or after this moment
    #[arg(long, value_parser = parse_moment)]
    from: Option<Moment>,
    /// Only calls first sent at or before this moment
    #[arg(long, value_parser = parse_moment, default_value = "end")]
    to: Moment,
    /// Only this agent's calls (name or number)
    #[arg(long)]
    agent: Option<String>,
    /// Only calls made from this prompt template (`day_plan`, `turn`, `location`, …)
    #[arg(long)]
    template: Option<String>,
    /// Print each prompt in full under its call (text format)
    #[arg(long)]
    details: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: ShowFormat,
}

/// `hamlet transcript`.
#[derive(Debug, Args)]
pub struct TranscriptArgs {
    #[command(flatten)]
    source: Source,
    /// Only conversations started at or after this moment
    #[arg(long, value_parser = parse_moment)]
    from: Option<Moment>,
    /// Only conversations started at or before this moment (lines after it are left out)
    #[arg(long, value_parser = parse_moment, default_value = "end")]
    to: Moment,
    /// Only conversations this agent took part in (name or number)
    #[arg(long)]
    agent: Option<String>,
    /// Markdown, or JSON
    #[arg(long, value_enum, default_value = "markdown")]
    format: TranscriptFormat,
}

/// How `hamlet transcript` writes conversations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TranscriptFormat {
    /// A Markdown document: one section per conversation.
    Markdown,
    /// JSON: the conversations with their lines.
    Json,
}

/// The seq a moment falls on, or the error saying nothing is there.
fn seq_of(events: &[Event], moment: Moment) -> anyhow::Result<u64> {
    seq_at(events, moment).context("no event is at or before that moment")
}

/// The first seq at or after `moment` (0 for none given).
fn from_seq(events: &[Event], moment: Option<Moment>) -> anyhow::Result<u64> {
    Ok(match moment {
        None => 0,
        Some(Moment::End) => bail!("--from end selects nothing; leave --from out"),
        Some(Moment::Seq(s)) => s,
        Some(Moment::Time(t)) => {
            events.iter().find(|e| e.sim_time_secs() >= t).map_or(u64::MAX, Event::seq)
        }
    })
}

fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

pub fn show(a: ShowArgs) -> anyhow::Result<Outcome> {
    let events = source_events_light(&a.source)?;
    let seq = seq_of(&events, a.at)?;
    let past = Past::new(Past::cut(&events, seq));
    match &a.agent {
        Some(who) => {
            let agent = agent_named(past.history(), who)?;
            let view = past.agent(agent).context("the agent had not joined by then")?;
            match a.format {
                ShowFormat::Json => print_json(&view)?,
                ShowFormat::Text => {
                    print!("{}", agent_text(&view, &past.town(), a.memories));
                }
            }
        }
        None => match a.format {
            ShowFormat::Json => print_json(&past.town())?,
            ShowFormat::Text => print!("{}", town_text(&past.town())),
        },
    }
    Ok(Outcome::Done)
}

/// When an action runs: "since 07:30, until 07:45", or "07:30–07:34, over" once it ended
/// with nothing after it.
fn when(x: &ActionView, now: u64) -> String {
    let end = x.started_secs.saturating_add(u64::from(x.duration_secs));
    if end <= now {
        format!("{}–{}, over", clock(x.started_secs), clock(end))
    } else {
        format!("since {}, until {}", clock(x.started_secs), clock(end))
    }
}

/// The town in words.
pub fn town_text(t: &TownView) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · branch {} · {} · #{} · step {} · {}",
        printable(&t.town),
        printable(&t.branch),
        t.time,
        t.seq,
        t.step,
        t.state_hash
    );
    let _ = writeln!(out, "\nagents:");
    let width = t.agents.iter().map(|a| a.name.chars().count()).max().unwrap_or(0);
    for a in &t.agents {
        let doing = match &a.action {
            Some(x) => format!(
                "{} {} ({}) {}",
                printable(&x.emoji),
                printable(&x.description),
                when(x, t.sim_time_secs),
                at_place(&printable(&x.address))
            ),
            None => "nothing yet".into(),
        };
        let talking = if a.talking_with.is_empty() {
            String::new()
        } else {
            format!(" · talking with {}", a.talking_with.join(", "))
        };
        let _ = writeln!(
            out,
            "  {:width$}  ({:>3},{:>3})  {:>9}  {doing}{talking}",
            printable(&a.name),
            a.tile[0],
            a.tile[1],
            cents(a.cash_cents),
        );
    }
    if !t.objects.is_empty() {
        let _ = writeln!(out, "\nobjects in use:");
        for (address, state) in &t.objects {
            let _ = writeln!(out, "  {}: {}", printable(address), printable(state));
        }
    }
    if !t.happenings.is_empty() {
        let _ = writeln!(out, "\ngoing on:");
        for h in &t.happenings {
            let (place, text) = (printable(&h.place), printable(&h.text));
            let _ = writeln!(out, "  at {place} until {}: {text}", clock(h.until_secs));
        }
    }
    if !t.conversations.is_empty() {
        let _ = writeln!(out, "\nconversations under way:");
        for c in &t.conversations {
            let _ = writeln!(
                out,
                "  {} {}, since {}, {} lines so far",
                c.agents.join(" and "),
                at_place(&printable(&c.address)),
                clock(c.started_secs),
                c.lines.len()
            );
        }
    }
    out
}

/// An agent as it was, in words; `memories` limits the memory stream's listing (0: all).
pub fn agent_text(v: &AgentView, town: &TownView, memories: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} · as of {} (#{})", printable(&v.name), town.time, town.seq);
    let _ = writeln!(out, "persona: {}", printable(&v.persona));
    if !v.traits.is_empty() {
        let traits: Vec<String> = v.traits.iter().map(|(k, x)| format!("{k}={x}")).collect();
        let _ = writeln!(out, "traits: {}", printable(&traits.join(", ")));
    }
    match &v.summary {
        Some(s) => {
            let _ = writeln!(out, "summary (day {}): {}", s.day, printable(&s.text));
        }
        None => {
            let _ = writeln!(out, "summary: none written yet");
        }
    }
    let _ = writeln!(out, "cash: {}", cents(v.cash_cents));
    match &v.action {
        Some(x) => {
            let _ = writeln!(
                out,
                "doing: {} {} {} ({})",
                printable(&x.emoji),
                printable(&x.description),
                at_place(&printable(&x.address)),
                when(x, town.sim_time_secs)
            );
        }
        None => {
            let _ = writeln!(out, "doing: nothing yet");
        }
    }
    let _ = writeln!(out, "\nplans:");
    if v.plans.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for p in &v.plans {
        let of = match p.decomposes {
            Some((plan, item)) => format!(" of item {} of {plan}", item + 1),
            None => String::new(),
        };
        let _ = writeln!(out, "  {} plan{of} ({}):", p.level, p.event);
        for i in &p.items {
            let end = i.start_secs.saturating_add(u64::from(i.duration_secs));
            let place =
                if i.address.is_empty() { String::new() } else { format!(" @ {}", i.address) };
            let _ = writeln!(
                out,
                "    {}–{}  {}{}",
                clock(i.start_secs),
                clock(end),
                printable(&i.description),
                printable(&place)
            );
        }
    }
    let n = v.memories.len();
    let shown = if memories == 0 { n } else { memories.min(n) };
    let _ = writeln!(
        out,
        "\nmemory stream: {n} memories (the last {shown} shown; --memories 0 for all)"
    );
    for m in &v.memories[n - shown..] {
        let recalled = match &m.last_retrieval {
            Some(s) => format!(
                "  [recalled {}: score {:.2} = recency {:.2}, importance {:.2}, relevance {:.2}]",
                clock(s.at_secs),
                s.score,
                s.recency,
                s.importance,
                s.relevance
            ),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  {} {:<11} {:>2}  {}{recalled}",
            sim_time(m.created_secs),
            m.kind,
            m.importance,
            printable(&m.description)
        );
    }
    if !v.reflections.is_empty() {
        let _ = writeln!(out, "\nreflections:");
        for r in &v.reflections {
            let _ = writeln!(
                out,
                "  {} (depth {}, {}): {}",
                sim_time(r.created_secs),
                r.depth,
                r.id,
                printable(&r.description)
            );
            for e in &r.evidence {
                let _ = writeln!(out, "      ← {} {}: {}", e.kind, e.id, printable(&e.description));
            }
        }
    }
    if !v.relationships.is_empty() {
        let _ = writeln!(out, "\nrelationships:");
        for r in &v.relationships {
            let talked = match r.last_talked_secs {
                Some(at) => format!(
                    "{} conversation{}, the last at {}",
                    r.conversations,
                    if r.conversations == 1 { "" } else { "s" },
                    sim_time(at)
                ),
                None => "never talked".into(),
            };
            let said = match &r.last_words {
                Some(w) => format!("; last said: \"{}\"", printable(w)),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "  {}: {talked}; {} memories name them{said}",
                printable(&r.name),
                r.memories
            );
        }
    }
    let _ = writeln!(out, "\nspatial memory:");
    if v.spatial.is_empty() {
        let _ = writeln!(out, "  nothing seen yet");
    }
    for (sector, arenas) in &v.spatial {
        let _ = writeln!(out, "  {}", printable(sector));
        for (arena, objects) in arenas {
            let things: Vec<String> = objects
                .iter()
                .map(|(o, state)| format!("{} ({})", printable(o), printable(state)))
                .collect();
            let _ = writeln!(out, "    {}: {}", printable(arena), things.join(", "));
        }
    }
    out
}

pub fn calls(a: CallsArgs) -> anyhow::Result<Outcome> {
    let events = source_events(&a.source)?;
    let to = seq_of(&events, a.to)?;
    let from = from_seq(&events, a.from)?;
    let past = Past::new(Past::cut(&events, to));
    let agent = a.agent.as_deref().map(|who| agent_named(past.history(), who)).transpose()?;
    let mut calls = past.calls(from, to, agent);
    if let Some(t) = &a.template {
        calls.retain(|c| &c.template == t);
    }
    match a.format {
        ShowFormat::Json => print_json(&calls)?,
        ShowFormat::Text => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for c in &calls {
                out.write_all(call_text(c, a.details).as_bytes())?;
            }
            writeln!(out, "{} calls", calls.len())?;
            out.flush()?;
        }
    }
    Ok(Outcome::Done)
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {}\n", printable(l))).collect()
}

/// One call in words: when, whose, what for, every try, the answer used.
pub fn call_text(c: &CallView, details: bool) -> String {
    let mut out = String::new();
    let tries: Vec<String> = c
        .tries
        .iter()
        .map(|t| match t.structured.as_str() {
            "" | "none" => t.outcome.clone(),
            form => format!("{} ({form})", t.outcome),
        })
        .collect();
    let _ = writeln!(
        out,
        "#{} {}  {}  {} v{} ({}) · {} · tries: {}",
        c.seq,
        sim_time(c.sim_time_secs),
        c.agent.as_deref().map_or("the town".into(), printable),
        c.template,
        c.template_version,
        printable(&c.purpose),
        printable(&c.model),
        if tries.is_empty() { "none yet".into() } else { tries.join(", ") }
    );
    if details {
        let _ = writeln!(out, "  prompt:");
        out.push_str(&indent(&c.prompt));
        for t in c.tries.iter().filter(|t| t.outcome != "answered") {
            let _ = writeln!(out, "  try {} ({}): {}", t.attempt, t.outcome, printable(&t.problem));
            out.push_str(&indent(&t.text));
        }
    }
    match &c.answer {
        Some(answer) => {
            let label = if c.fallback { "fallback" } else { "answer" };
            let _ = writeln!(out, "  {label}:");
            out.push_str(&indent(answer));
        }
        None => {
            let _ = writeln!(out, "  no answer by then");
        }
    }
    out
}

pub fn transcript(a: TranscriptArgs) -> anyhow::Result<Outcome> {
    let events = source_events_light(&a.source)?;
    let to = seq_of(&events, a.to)?;
    let from = from_seq(&events, a.from)?;
    let past = Past::new(Past::cut(&events, to));
    let agent = a.agent.as_deref().map(|who| agent_named(past.history(), who)).transpose()?;
    let conversations: Vec<_> = past
        .conversations()
        .into_iter()
        .filter(|c| c.seq >= from)
        .filter(|c| agent.is_none_or(|id| c.agents.contains(&past.name(id))))
        .collect();
    match a.format {
        TranscriptFormat::Json => print_json(&conversations)?,
        TranscriptFormat::Markdown => {
            let town = past.town();
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            writeln!(
                out,
                "# Conversations in {}\n\nBranch `{}`, up to {}: {} conversation{}.\n",
                town.town,
                town.branch,
                town.time,
                conversations.len(),
                if conversations.len() == 1 { "" } else { "s" }
            )?;
            for c in &conversations {
                out.write_all(c.markdown().as_bytes())?;
            }
            out.flush()?;
        }
    }
    Ok(Outcome::Done)
}

/// `hamlet diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// A recording file (.hamlet)
    #[arg(value_name = "FILE", required_unless_present = "store", conflicts_with = "store")]
    file: Option<std::path::PathBuf>,
    /// A store directory, instead of a file
    #[arg(long, value_name = "DIR")]
    store: Option<std::path::PathBuf>,
    /// The two branches, by name or id prefix (`--branch main --branch what-if`)
    #[arg(long, num_args = 1, required = true)]
    branch: Vec<String>,
    /// List the agents that did the same on both too
    #[arg(long)]
    all: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    format: ShowFormat,
}

pub fn diff(a: DiffArgs) -> anyhow::Result<Outcome> {
    let [first, second] = a.branch.as_slice() else {
        bail!("give two branches: --branch A --branch B");
    };
    let load = |branch: &str| {
        source_events(&Source {
            file: a.file.clone(),
            store: a.store.clone(),
            branch: Some(branch.to_owned()),
        })
    };
    let (left, right) = (load(first)?, load(second)?);
    let d = hamlet_engine::diff::diff(first, &left, second, &right);
    match a.format {
        ShowFormat::Json => print_json(&d)?,
        ShowFormat::Text => print!("{}", d.text(a.all)),
    }
    Ok(Outcome::Done)
}
