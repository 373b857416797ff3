//! `hamlet why`: the causal graph behind an agent's action at a moment.

use anyhow::Context;
use clap::{Args, ValueEnum};
use hamlet_engine::history::Moment;
use hamlet_engine::why::CauseIndex;
use hamlet_log::Event;

use super::recording::source_events;
use super::{agent_named, parse_moment, Outcome, Source};

/// How `hamlet why` prints its graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WhyFormat {
    /// An indented tree for people: the action, then what led to it, one level in per step.
    Tree,
    /// JSON: nodes (id, seq, time, kind, summary, detail) and edges (from, to, link, scores).
    Json,
    /// Graphviz DOT (`hamlet why … --format dot | dot -Tsvg > why.svg`).
    Dot,
}

/// `hamlet why`.
#[derive(Debug, Args)]
pub struct WhyArgs {
    #[command(flatten)]
    source: Source,
    /// The agent (name or number)
    #[arg(long)]
    agent: String,
    /// The moment (`day<N> <HH:MM>`, `<HH:MM>`, `#<seq>`, `end`): the action the agent was
    /// carrying out then is explained
    #[arg(long, value_parser = parse_moment, default_value = "end")]
    at: Moment,
    /// Output format
    #[arg(long, value_enum, default_value = "tree")]
    format: WhyFormat,
    /// Print prompts, answers and memories in full under their lines (tree format)
    #[arg(long)]
    details: bool,
    /// Stop the walk after this many events
    #[arg(long, default_value_t = 400)]
    max_nodes: usize,
}

/// The seq of the last event at or before `moment`.
pub fn seq_at(events: &[Event], moment: Moment) -> Option<u64> {
    match moment {
        Moment::End => events.last().map(Event::seq),
        Moment::Seq(s) => events.iter().take_while(|e| e.seq() <= s).last().map(Event::seq),
        Moment::Time(t) => {
            events.iter().take_while(|e| e.sim_time_secs() <= t).last().map(Event::seq)
        }
    }
}

pub fn why(a: WhyArgs) -> anyhow::Result<Outcome> {
    let events = source_events(&a.source)?;
    let history = CauseIndex::new(&events);
    let agent = agent_named(&history, &a.agent)?;
    let seq = seq_at(&events, a.at).context("no event is at or before that moment")?;
    let why = history.why(agent, seq, a.max_nodes.max(1))?;
    match a.format {
        WhyFormat::Tree => print!("{}", why.tree(a.details)),
        WhyFormat::Json => println!("{}", serde_json::to_string_pretty(&why.json())?),
        WhyFormat::Dot => print!("{}", why.dot()),
    }
    Ok(Outcome::Done)
}
