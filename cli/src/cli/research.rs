//! `hamlet research`: the paper's measurements on any recording or store — relationship
//! network density and information diffusion over time (from the log, no model), and
//! questions put to every agent (a fact they may know, or the scripted interview battery),
//! answered from memory on a scratch fork so the run itself is untouched.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use hamlet_engine::describe::{printable, sim_time};
use hamlet_engine::history::Moment;
use hamlet_engine::research::{
    attendance, battery, believability, commitments, density_table, dialogue, diffusion,
    diffusion_table, fork_row, goals, goals_table, jobs_table, mayor, mayor_table, network_density,
    ForkRow, Table,
};
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_gateway::config;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::llm::LlmArgs;
use super::recording::source_events_light;
use super::{agent_named, parse_moment, Outcome, Source};
use hamlet_engine::ops::{seq_for, unused_name};

/// The measurements.
#[derive(Debug, Subcommand)]
pub enum ResearchCommand {
    /// Relationship network density over time: pairs of agents who have talked, over all
    /// pairs (no model)
    #[command(
        after_help = "Example:\n  hamlet research network run.hamlet --every 1h --format csv > density.csv"
    )]
    Network(NetworkArgs),
    /// Information diffusion over time: who holds a memory with every keyword (no model)
    #[command(
        after_help = "Example:\n  hamlet research diffusion run.hamlet --keywords party,café --every 30m"
    )]
    Diffusion(DiffusionArgs),
    /// How the conversations went: how many, lines per conversation, the share of lines
    /// that say again what was already said in the same conversation (60% of words in
    /// common), and why they ended (no model)
    #[command(after_help = "Example:\n  hamlet research dialogue run.hamlet")]
    Dialogue(DialogueArgs),
    /// How much the lines and actions sound like people, per agent and in all (no model).
    /// Lines: repeating a line of any earlier conversation (both lines of 4 words or more,
    /// 60% of their words in common, over all their words); the speaker naming itself;
    /// narrating (a stage direction in *asterisks* or brackets, or a sentence opening with a
    /// name, "he" or "she" and a verb of description such as "smiles" or "looks"); an
    /// identity slip the town file can show (a spouse after "my husband"/"my wife", a sector
    /// after "I work at/in" or "I live at/in", that is not the speaker's); out of character
    /// (speaking as an assistant: "I'm sorry, but I can't help with that"); misnaming the one
    /// spoken to (another resident's first name as an address: "Hi Sefa!", "…, Sefa?" said to
    /// Nnamdi; an identity slip too); the planner's words (a clock time on a minute that is
    /// not a multiple of five, "540 minutes", "minutes free"). Actions started
    /// from a plan: copying a persona statement (60% of words in common, the name aside);
    /// at an hour they contradict (waking up outside 04:00–12:00, breakfast outside
    /// 05:00–11:30, lunch outside 11:00–15:30, dinner outside 16:30–23:00, going to bed
    /// between 03:00 and 19:00)
    #[command(
        after_help = "Example:\n  hamlet research believability run.hamlet --format csv > believability.csv"
    )]
    Believability(BelievabilityArgs),
    /// Each agent's progress toward its life goal over time, where its town gave the goal a
    /// measure the log can count (no model): money paid to it (`earn_cents`), purchases whose
    /// reason names an item (`buy`, `times`), conversations with someone (`meet`), a mayor's
    /// businesses founded (`found`) and jobs posted that someone took (`hire`); when it
    /// was reached. Agents whose goal has no measure are listed without one
    #[command(after_help = "Example:\n  hamlet research goals run.hamlet --every 2h --format csv")]
    Goals(NetworkArgs),
    /// A town with a mayor: the mayor's book over time — the treasury, the acts, businesses
    /// founded, jobs posted and taken, wages paid from the treasury and what founding cost —
    /// then every job posted: by whom, where, its wage, who took it and when, the wages it
    /// has paid and when it was first worked (no model)
    #[command(after_help = "Example:\n  hamlet research mayor run.hamlet --every 2h\n  \
hamlet research mayor run.hamlet --jobs --format csv > jobs.csv")]
    Mayor(MayorArgs),
    /// How far each agent with a life goal has come toward it, rated 1 to 10 by the model
    /// the flags name (a judge, not the agent) from the memories that bear on the goal, on a
    /// scratch fork at the moment asked: every recall and rating is an event there, and the
    /// branch measured stays untouched
    #[command(
        after_help = "Example:\n  hamlet research judge-goals --store run/ --at end --model small"
    )]
    JudgeGoals(OverTime),
    /// Questions from a file asked of every agent (each with the model it thinks with) on a
    /// scratch fork at the moment asked, and every `--every` before it, each answer scored by
    /// the share of the question's `expect` words it holds (any case; AgentSims' periodic
    /// questions). The file: `[[question]]` tables with `ask = "..."` and `expect = [...]`
    #[command(
        after_help = "Example:\n  hamlet research quiz --store run/ --questions quiz.toml --every 4h --format csv\n\n\
quiz.toml:\n  [[question]]\n  ask = \"Is anything happening at Marigold café on Saturday?\"\n  \
expect = [\"party\"]"
    )]
    Quiz(QuizArgs),
    /// What agents agreed to in conversations (an invitation accepted, a meeting arranged):
    /// each commitment at a place during a window, and how many agents hold one (no model)
    #[command(
        after_help = "Example:\n  hamlet research commitments run.hamlet --place 'Marigold café' \
--from 'day1 17:00' --until 'day1 19:00'"
    )]
    Commitments(CommitmentsArgs),
    /// Who was at a place during a window of time (the party at the café): each agent who
    /// stood there, when they first were, and for how long (no model)
    #[command(
        after_help = "Example:\n  hamlet research attendance run.hamlet --place 'Marigold café' \
--from 'day0 17:00' --until 'day0 19:00'"
    )]
    Attendance(AttendanceArgs),
    /// A branch and its forks side by side, each measured up to the same moment: how each
    /// runs (its rulebook, the mechanisms it leaves out, a strategy every agent runs), its
    /// conversations and lines, who has heard each fact followed, network density, who holds
    /// a commitment, the believability counts over every agent, and its model calls (no
    /// model). Made for forks that leave a mechanism out (`hamlet fork --without`) or run an
    /// ablation (`--strategy`): what each buys, measured against their parent
    #[command(after_help = "Example:\n  hamlet research forks run.hamlet --until 'day0 11:00' \
--spread party --spread wendell,council")]
    Forks(ForksArgs),
    /// Ask every agent one question at a moment, from memory, on a scratch fork (e.g. "Do
    /// you know about a party?"); answers beginning with "yes" are counted
    #[command(after_help = "Example:\n  hamlet research ask --store run/ --at 'day1 12:00' \
'Have you heard about a party at Marigold café?'")]
    Ask(AskArgs),
    /// The scripted interview battery (self-knowledge, memory, plans, reactions,
    /// reflections; two questions each) for every agent, on a scratch fork
    #[command(
        after_help = "Example:\n  hamlet research battery --store run/ --at end --format csv > battery.csv"
    )]
    Battery(BatteryArgs),
}

/// How results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// A table for people.
    Table,
    /// CSV with a header row.
    Csv,
    /// JSON.
    Json,
}

/// `hamlet research network`.
#[derive(Debug, Args)]
pub struct NetworkArgs {
    #[command(flatten)]
    source: Source,
    /// How often to measure (`30m`, `1h`, `90s`)
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    every: u64,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research mayor`.
#[derive(Debug, Args)]
pub struct MayorArgs {
    #[command(flatten)]
    source: Source,
    /// How often to measure the book (`30m`, `1h`, `90s`)
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    every: u64,
    /// Only the jobs posted (for CSV and JSON, which hold one table; the table format shows
    /// both)
    #[arg(long)]
    jobs: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research dialogue`.
#[derive(Debug, Args)]
pub struct DialogueArgs {
    #[command(flatten)]
    source: Source,
    /// Output format (table or JSON)
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research believability`.
#[derive(Debug, Args)]
pub struct BelievabilityArgs {
    #[command(flatten)]
    source: Source,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research commitments`.
#[derive(Debug, Args)]
pub struct CommitmentsArgs {
    #[command(flatten)]
    source: Source,
    /// Only commitments at this place: a sector (`Marigold café`) or an arena, any case
    /// [default: every place]
    #[arg(long, default_value = "")]
    place: String,
    /// Only commitments that overlap a window from this time (`day<N> <HH:MM>`)
    #[arg(long, value_parser = parse_time, default_value = "0s")]
    from: u64,
    /// ... until this time [default: no end]
    #[arg(long, value_parser = parse_time)]
    until: Option<u64>,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research attendance`.
#[derive(Debug, Args)]
pub struct AttendanceArgs {
    #[command(flatten)]
    source: Source,
    /// The place: a sector (`Marigold café`) or an arena (`Marigold café:counter`), any case
    #[arg(long)]
    place: String,
    /// The window's start (`day<N> <HH:MM>`, `<HH:MM>` on day 0)
    #[arg(long, value_parser = parse_time)]
    from: u64,
    /// The window's end
    #[arg(long, value_parser = parse_time)]
    until: u64,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// `hamlet research forks`.
#[derive(Debug, Args)]
pub struct ForksArgs {
    /// A recording file (.hamlet)
    #[arg(value_name = "FILE", required_unless_present = "store", conflicts_with = "store")]
    file: Option<PathBuf>,
    /// A store directory, instead of a file
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// The branch whose forks are compared with it [default: main, else the first root by
    /// name]
    #[arg(long = "of", value_name = "BRANCH")]
    of: Option<String>,
    /// Measure every branch up to this time (`day<N> <HH:MM>`) [default: the earliest head
    /// among them, so that each is measured over the same span]
    #[arg(long, value_parser = parse_time)]
    until: Option<u64>,
    /// A fact to follow, as words every memory of it holds (comma-separated, any case); give
    /// it again for another fact: columns heard_1, heard_2, …
    #[arg(long = "spread", value_name = "KEYWORDS")]
    spreads: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// A moment given as a simulated time (`day1 17:00`, `17:00`, `3600s`), in seconds.
fn parse_time(text: &str) -> Result<u64, String> {
    match parse_moment(text)? {
        Moment::Time(secs) => Ok(secs),
        _ => Err(format!("`{text}` is not a time of day; write e.g. `day0 17:00`")),
    }
}

/// `hamlet research diffusion`.
#[derive(Debug, Args)]
pub struct DiffusionArgs {
    #[command(flatten)]
    source: Source,
    /// The fact, as words every memory of it holds (comma-separated, any case)
    #[arg(long, value_delimiter = ',', required = true)]
    keywords: Vec<String>,
    /// How often to measure (`30m`, `1h`, `90s`)
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    every: u64,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
}

/// Where questions are asked.
#[derive(Debug, Args)]
pub struct Asked {
    /// The store holding the run
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch asked
    #[arg(long, default_value = "main")]
    branch: String,
    /// The moment the agents answer from (`day<N> <HH:MM>`, `<HH:MM>`, `#<seq>`, `end`)
    #[arg(long, value_parser = parse_moment, default_value = "end")]
    at: Moment,
    /// Only these agents (names, comma-separated) [default: every agent]
    #[arg(long, value_delimiter = ',')]
    agents: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
    #[command(flatten)]
    llm: LlmArgs,
}

/// The flags of a measurement asked on scratch forks over time.
#[derive(Debug, Args)]
pub struct OverTime {
    #[command(flatten)]
    asked: Asked,
    /// Also judge at every such step from the branch's start to the moment (`2h`, `30m`),
    /// each on a scratch fork of its own
    #[arg(long, value_parser = parse_duration)]
    every: Option<u64>,
}

/// `hamlet research quiz`.
#[derive(Debug, Args)]
pub struct QuizArgs {
    /// The questions: a TOML file of `[[question]]` tables (`ask`, `expect`)
    #[arg(long, value_name = "FILE")]
    questions: PathBuf,
    #[command(flatten)]
    over: OverTime,
}

/// `hamlet research ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question
    question: String,
    #[command(flatten)]
    asked: Asked,
}

/// `hamlet research battery`.
#[derive(Debug, Args)]
pub struct BatteryArgs {
    #[command(flatten)]
    asked: Asked,
}

/// Parses `90s`, `30m`, `1h` into seconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let err = || format!("`{text}` is not a duration; write e.g. 90s, 30m or 1h");
    let (number, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?);
    let n: u64 = number.parse().map_err(|_| err())?;
    let secs = match unit {
        "s" => n,
        "m" => n.checked_mul(60).ok_or_else(err)?,
        "h" => n.checked_mul(3600).ok_or_else(err)?,
        _ => return Err(err()),
    };
    (secs > 0).then_some(secs).ok_or_else(err)
}

fn write_rows<T: Serialize>(
    format: TableFormat,
    header: &[&'static str],
    rows: &[T],
    cells: impl Fn(&T) -> Vec<String>,
) -> anyhow::Result<()> {
    write_table(format, &Table::of(header, rows, cells), rows)
}

/// Writes a measurement: `rows` as JSON, or `table` (the one table the window saves too)
/// as CSV or aligned columns.
pub(super) fn write_table<T: Serialize>(
    format: TableFormat,
    table: &Table,
    rows: &[T],
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match format {
        TableFormat::Json => {
            serde_json::to_writer_pretty(&mut out, rows)?;
            writeln!(out)?;
        }
        TableFormat::Csv => write!(out, "{}", table.csv())?,
        TableFormat::Table => {
            let mut widths: Vec<usize> = table.header.iter().map(|h| h.chars().count()).collect();
            for row in &table.rows {
                for (w, c) in widths.iter_mut().zip(row) {
                    *w = (*w).max(c.chars().count().min(60));
                }
            }
            let line = |cells: &[String]| {
                let padded: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{:w$}", printable(c)))
                    .collect();
                padded.join("  ").trim_end().to_owned()
            };
            let header: Vec<String> = table.header.iter().map(|h| h.to_string()).collect();
            writeln!(out, "{}", line(&header))?;
            for row in &table.rows {
                writeln!(out, "{}", line(row))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

pub fn research(c: ResearchCommand) -> anyhow::Result<Outcome> {
    match c {
        ResearchCommand::Dialogue(a) => {
            let stats = dialogue(&source_events_light(&a.source)?);
            if a.format == TableFormat::Json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
                return Ok(Outcome::Done);
            }
            if a.format == TableFormat::Csv {
                anyhow::bail!("`research dialogue` writes a table or JSON, not CSV");
            }
            println!("conversations: {}", stats.conversations);
            println!("lines: {} ({:.1} per conversation)", stats.lines, stats.average_lines());
            println!(
                "lines that repeat an earlier line of their conversation: {} ({:.1}%)",
                stats.repeated,
                100.0 * stats.repeat_share()
            );
            for (why, n) in &stats.endings {
                println!("ended: {why}: {n}");
            }
        }
        ResearchCommand::Attendance(a) => {
            if a.until <= a.from {
                anyhow::bail!(
                    "--until ({}) is not after --from ({})",
                    sim_time(a.until),
                    sim_time(a.from)
                );
            }
            let events = source_events_light(&a.source)?;
            let rows =
                attendance(&events, &a.place, a.from, a.until).map_err(anyhow::Error::msg)?;
            write_rows(a.format, &["agent", "first_there", "minutes"], &rows, |r| {
                vec![
                    r.agent.clone(),
                    sim_time(r.first_secs),
                    format!("{:.0}", r.secs as f64 / 60.0),
                ]
            })?;
            if a.format == TableFormat::Table {
                println!(
                    "\n{} agent{} at {} between {} and {}",
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" },
                    a.place,
                    sim_time(a.from),
                    sim_time(a.until)
                );
            }
        }
        ResearchCommand::Commitments(a) => {
            let events = source_events_light(&a.source)?;
            let agents = events
                .iter()
                .filter(|e| matches!(e.body, hamlet_log::Body::AgentJoined(_)))
                .count();
            let rows = commitments(&events, &a.place, a.from, a.until.unwrap_or(u64::MAX));
            let header = ["agreed_at", "agent", "with", "what", "where", "from", "until"];
            write_rows(a.format, &header, &rows, |r| {
                vec![
                    sim_time(r.made_secs),
                    r.agent.clone(),
                    r.with.join("; "),
                    r.what.clone(),
                    r.address.clone(),
                    sim_time(r.start_secs),
                    sim_time(r.end_secs),
                ]
            })?;
            if a.format == TableFormat::Table {
                let holders: std::collections::BTreeSet<&str> =
                    rows.iter().map(|r| r.agent.as_str()).collect();
                println!(
                    "agents holding a commitment: {} of {agents} ({:.0}%)",
                    holders.len(),
                    100.0 * holders.len() as f64 / agents.max(1) as f64
                );
            }
        }
        ResearchCommand::Believability(a) => {
            let rows = believability(&source_events_light(&a.source)?);
            let header = [
                "agent",
                "lines",
                "repeats_earlier",
                "names_itself",
                "narrates",
                "identity_slips",
                "out_of_character",
                "misnames",
                "planner_words",
                "actions",
                "copies_persona",
                "odd_hours",
            ];
            write_rows(a.format, &header, &rows, |r| {
                let lines = |n: u32| format!("{n} ({:.1}%)", r.of_lines(n));
                let acts = |n: u32| format!("{n} ({:.1}%)", r.of_actions(n));
                if a.format == TableFormat::Csv {
                    return [
                        r.agent.clone(),
                        r.lines.to_string(),
                        r.repeats_earlier.to_string(),
                        r.names_itself.to_string(),
                        r.narrates.to_string(),
                        r.identity_slips.to_string(),
                        r.out_of_character.to_string(),
                        r.misnames.to_string(),
                        r.planner_words.to_string(),
                        r.actions.to_string(),
                        r.copies_persona.to_string(),
                        r.odd_hours.to_string(),
                    ]
                    .to_vec();
                }
                vec![
                    r.agent.clone(),
                    r.lines.to_string(),
                    lines(r.repeats_earlier),
                    lines(r.names_itself),
                    lines(r.narrates),
                    lines(r.identity_slips),
                    lines(r.out_of_character),
                    lines(r.misnames),
                    lines(r.planner_words),
                    r.actions.to_string(),
                    acts(r.copies_persona),
                    acts(r.odd_hours),
                ]
            })?;
        }
        ResearchCommand::Goals(a) => {
            let events = source_events_light(&a.source)?;
            let rows = goals(&events, a.every);
            write_table(a.format, &goals_table(&rows), &rows)?;
            if a.format == TableFormat::Table && rows.is_empty() {
                println!("no agent here has a goal (a persona's `goal` in the town file)");
            }
        }
        ResearchCommand::Mayor(a) => {
            let events = source_events_light(&a.source)?;
            let (rows, jobs) = mayor(&events, a.every);
            if a.format == TableFormat::Table && rows.is_empty() {
                println!("this town has no mayor (a `[mayor]` in the town file)");
            } else if a.jobs {
                write_table(a.format, &jobs_table(&jobs), &jobs)?;
            } else {
                write_table(a.format, &mayor_table(&rows), &rows)?;
                if a.format == TableFormat::Table {
                    println!();
                    if jobs.is_empty() {
                        println!("no job was posted");
                    } else {
                        write_table(a.format, &jobs_table(&jobs), &jobs)?;
                    }
                }
            }
        }
        ResearchCommand::JudgeGoals(a) => judge_goals(&a)?,
        ResearchCommand::Quiz(a) => quiz(&a)?,
        ResearchCommand::Network(a) => {
            let events = source_events_light(&a.source)?;
            let rows = network_density(&events, a.every);
            write_table(a.format, &density_table(&rows), &rows)?;
        }
        ResearchCommand::Diffusion(a) => {
            let events = source_events_light(&a.source)?;
            let rows = diffusion(&events, &a.keywords, a.every);
            write_table(a.format, &diffusion_table(&rows), &rows)?;
        }
        ResearchCommand::Forks(a) => forks(&a)?,
        ResearchCommand::Ask(a) => {
            let question = a.question.clone();
            let rows = ask(&a.asked, |_| vec![("question", question.clone())])?;
            let yes = rows.iter().filter(|r| r.answer.to_lowercase().starts_with("yes")).count();
            write_rows(a.asked.format, &["agent", "answer"], &rows, |r| {
                vec![r.agent.clone(), r.answer.clone()]
            })?;
            if a.asked.format == TableFormat::Table {
                println!("\n{yes} of {} answered yes", rows.len());
            }
        }
        ResearchCommand::Battery(a) => {
            let rows = ask(&a.asked, battery)?;
            write_rows(a.asked.format, &["agent", "category", "question", "answer"], &rows, |r| {
                vec![r.agent.clone(), r.category.clone(), r.question.clone(), r.answer.clone()]
            })?;
        }
    }
    Ok(Outcome::Done)
}

/// `hamlet research forks`: the branch and each of its forks, measured to one moment.
fn forks(a: &ForksArgs) -> anyhow::Result<()> {
    let spreads: Vec<Vec<String>> = a
        .spreads
        .iter()
        .map(|s| s.split(',').map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).collect())
        .collect();
    if let Some(i) = spreads.iter().position(Vec::is_empty) {
        anyhow::bail!("--spread `{}` names no word to follow", a.spreads[i]);
    }
    let histories = super::recording::fork_histories(
        a.file.as_deref(),
        a.store.as_deref(),
        a.of.as_deref(),
        hamlet_engine::query::without_bulk,
    )?;
    let until = a
        .until
        .unwrap_or_else(|| histories.iter().map(|(b, _)| b.head_time).min().unwrap_or(u64::MAX));
    let rows: Vec<ForkRow> =
        histories.iter().map(|(b, events)| fork_row(&b.name, events, until, &spreads)).collect();
    let heard: Vec<&'static str> = ["heard_1", "heard_2", "heard_3", "heard_4", "heard_5"]
        .into_iter()
        .take(spreads.len())
        .collect();
    if heard.len() < spreads.len() {
        anyhow::bail!("follow at most {} facts at once (--spread)", heard.len());
    }
    let mut header = vec!["branch", "runs", "until", "agents", "conversations", "lines"];
    header.extend(&heard);
    header.extend([
        "density",
        "committed",
        "repeats_earlier",
        "names_itself",
        "narrates",
        "identity_slips",
        "misnames",
        "planner_words",
        "actions",
        "copies_persona",
        "odd_hours",
        "calls",
    ]);
    let csv = a.format == TableFormat::Csv;
    write_rows(a.format, &header, &rows, |r| {
        let v = &r.believability;
        let share = |n: u32, of: f64| {
            if csv {
                n.to_string()
            } else {
                format!("{n} ({of:.1}%)")
            }
        };
        let mut cells = vec![
            r.branch.clone(),
            r.runs.clone(),
            sim_time(r.until_secs),
            r.agents.to_string(),
            r.conversations.to_string(),
            r.lines.to_string(),
        ];
        cells.extend(r.heard.iter().map(u32::to_string));
        cells.extend([
            format!("{:.3}", r.density),
            r.committed.to_string(),
            share(v.repeats_earlier, v.of_lines(v.repeats_earlier)),
            share(v.names_itself, v.of_lines(v.names_itself)),
            share(v.narrates, v.of_lines(v.narrates)),
            share(v.identity_slips, v.of_lines(v.identity_slips)),
            share(v.misnames, v.of_lines(v.misnames)),
            share(v.planner_words, v.of_lines(v.planner_words)),
            v.actions.to_string(),
            share(v.copies_persona, v.of_actions(v.copies_persona)),
            share(v.odd_hours, v.of_actions(v.odd_hours)),
            r.calls.to_string(),
        ]);
        cells
    })?;
    if a.format == TableFormat::Table {
        println!();
        for (column, keywords) in heard.iter().zip(&a.spreads) {
            println!("{column}: agents whose memory holds every one of `{keywords}`");
        }
        println!(
            "{} branch{} measured to {}",
            rows.len(),
            if rows.len() == 1 { "" } else { "es" },
            sim_time(until)
        );
    }
    Ok(())
}

/// One answer.
#[derive(Debug, Serialize)]
struct Answered {
    agent: String,
    category: String,
    question: String,
    answer: String,
}

/// A scratch fork of the branch asked, at the moment asked, with the agents asked.
struct Scratch {
    sim: Sim<hamlet_engine::store::FsStorage>,
    rt: tokio::runtime::Runtime,
    /// Every agent's name.
    names: std::collections::BTreeMap<hamlet_log::event::AgentId, String>,
    /// The agents asked, in order.
    agents: Vec<hamlet_log::event::AgentId>,
    /// Every agent, in the town's order.
    everyone: Vec<hamlet_log::event::AgentId>,
    /// Where it was made, in words for the end.
    said: String,
    /// When the branch's first agent joined, and the moment forked at, simulated seconds.
    span: (u64, u64),
}

/// Forks `a`'s branch at its moment into a scratch branch, resumed with the gateway
/// `gateway(settings and config file, the models the branch's agents think with)` makes.
fn open_scratch(
    a: &Asked,
    at: Moment,
    gateway: impl FnOnce(
        &hamlet_gateway::config::ConfigFile,
        &hamlet_gateway::config::Settings,
        &[String],
    ) -> anyhow::Result<hamlet_gateway::Gateway>,
) -> anyhow::Result<Scratch> {
    if !a.store.is_dir() {
        anyhow::bail!("no store at {} (`hamlet run --store DIR` makes one)", a.store.display());
    }
    let (file, settings) = a.llm.settings()?;
    let mut store = super::store_at(&a.store)
        .with_context(|| format!("cannot open store {}", a.store.display()))?;
    let from = store.find_branch(&a.branch)?;
    let seq = seq_for(&store, &from, at)?;
    let events = store.events(from.id, 0, seq)?;
    let joined = events.iter().find(|e| matches!(e.body, hamlet_log::Body::AgentJoined(_)));
    let span = (
        joined.map_or(0, hamlet_log::Event::sim_time_secs),
        events.last().map_or(0, hamlet_log::Event::sim_time_secs),
    );
    let gateway = gateway(&file, &settings, &super::llm::models_named(&events))?;
    let history = hamlet_engine::why::CauseIndex::new(&events);
    let mut agents = Vec::new();
    if a.agents.is_empty() {
        agents.extend(history.agents().keys().copied());
    }
    for who in &a.agents {
        agents.push(agent_named(&history, who)?);
    }
    let scratch = unused_name(&store, &format!("{}-research", from.name));
    store.fork(from.id, seq, &scratch)?;
    let scratch_id = store.find_branch(&scratch)?.id;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let sim = rt.block_on(Sim::resume(store, scratch_id, gateway, SimSettings::default()))?;
    let everyone: Vec<_> = history.agents().keys().copied().collect();
    let names = everyone.iter().map(|a| (*a, history.name(*a))).collect();
    let said = format!(
        "on the scratch branch `{scratch}` (a fork of `{}` after #{seq}); `{}` is untouched",
        from.name, from.name
    );
    Ok(Scratch { sim, rt, names, agents, everyone, said, span })
}

/// Forks the branch at the moment into a scratch branch and asks each agent the questions
/// `questions(other agent's name)` gives, not remembered.
fn ask(
    a: &Asked,
    questions: impl Fn(&str) -> Vec<(&'static str, String)>,
) -> anyhow::Result<Vec<Answered>> {
    // Each agent answers with the model it thinks with.
    let Scratch { mut sim, rt, names, agents, everyone, said, .. } =
        open_scratch(a, a.at, |file, settings, models| {
            super::llm::gateway_with_models(file, settings, models)
        })?;
    let total: usize = agents.iter().map(|_| questions("").len()).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:30} {pos}/{len} answers · {msg} · ETA {eta}",
    )?);
    let mut rows = Vec::new();
    for agent in agents {
        let name = names.get(&agent).cloned().unwrap_or_default();
        // The agent asked about: the next one in the town's order.
        let at = everyone.iter().position(|a| *a == agent).unwrap_or(0);
        let other = everyone.get((at + 1) % everyone.len().max(1)).and_then(|o| names.get(o));
        for (category, question) in questions(other.map_or("a neighbour", String::as_str)) {
            bar.set_message(name.clone());
            let answer = rt.block_on(sim.interview(agent, &question, false))?;
            rows.push(Answered {
                agent: name.clone(),
                category: category.to_owned(),
                question,
                answer: answer.trim().to_owned(),
            });
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    eprintln!("asked {said}");
    Ok(rows)
}

/// Runs `at` at the moment `a` asks, then at every `every` from the branch's start before it
/// (each time on a scratch fork of its own, which `at` opens): the moments' spans.
fn at_moments(
    a: &Asked,
    every: Option<u64>,
    mut at: impl FnMut(Moment) -> anyhow::Result<(u64, u64)>,
) -> anyhow::Result<()> {
    let (start, end) = at(a.at)?;
    if let Some(every) = every {
        let earlier: Vec<u64> = (1u64..)
            .map_while(|i| start.checked_add(i.checked_mul(every)?))
            .take_while(|t| *t < end)
            .collect();
        for t in earlier {
            at(Moment::Time(t))?;
        }
    }
    Ok(())
}

/// `hamlet research judge-goals`: each agent with a goal, rated 1 to 10 by the model the
/// flags name, on a scratch fork at the moment asked (and every `--every` before it).
fn judge_goals(j: &OverTime) -> anyhow::Result<()> {
    let a = &j.asked;
    let (_, settings) = a.llm.settings()?;
    // The judge is the model named; the scratch branches only recall (embeddings).
    let judge = config::gateway(
        &settings,
        config::llm_backend(&settings)?,
        config::embed_backend(&settings)?,
    );
    let mut rows = Vec::new();
    at_moments(a, j.every, |at| {
        let Scratch { mut sim, rt, names, agents, said, span, .. } =
            open_scratch(a, at, |_, _, _| Ok(judge.clone()))?;
        let goals = sim.goals();
        for agent in agents {
            let Some((_, goal)) = goals.iter().find(|(g, _)| *g == agent) else { continue };
            let rating = rt.block_on(sim.judge_goal(agent, &judge))?;
            let name = names.get(&agent).cloned().unwrap_or_default();
            rows.push((span.1, name, goal.clone(), rating));
        }
        eprintln!("judged by {} {said}", judge.llm().model());
        Ok(span)
    })?;
    rows.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
    let header = ["time", "agent", "goal", "rating"];
    write_rows(a.format, &header, &rows, |(at, agent, goal, rating)| {
        let rating = rating.map_or_else(|| "no rating".to_owned(), |r| r.to_string());
        vec![sim_time(*at), agent.clone(), goal.clone(), rating]
    })?;
    if rows.is_empty() {
        eprintln!("no agent asked has a goal (a persona's `goal` in the town file)");
    }
    Ok(())
}

/// A quiz file's question: what is asked, and the words a right answer holds.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuizQuestion {
    pub ask: String,
    #[serde(default)]
    pub expect: Vec<String>,
}

/// A quiz file: `[[question]]`s.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Quiz {
    pub question: Vec<QuizQuestion>,
}

/// Reads a quiz file; an error for one that does not parse or asks nothing.
pub(super) fn read_quiz(path: &std::path::Path) -> anyhow::Result<Quiz> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let quiz: Quiz =
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if quiz.question.is_empty() {
        anyhow::bail!("{}: no [[question]] in it", path.display());
    }
    if let Some(i) = quiz.question.iter().position(|x| x.ask.trim().is_empty()) {
        anyhow::bail!("{}: question {} asks nothing", path.display(), i + 1);
    }
    Ok(quiz)
}

/// The share of `expect`'s words (any case) that `answer` holds; `None` with none expected.
pub(super) fn quiz_score(answer: &str, expect: &[String]) -> Option<f64> {
    if expect.is_empty() {
        return None;
    }
    let answer = answer.to_lowercase();
    let found = expect.iter().filter(|w| answer.contains(&w.trim().to_lowercase())).count();
    Some(found as f64 / expect.len() as f64)
}

/// `hamlet research quiz`: a file's questions asked of every agent asked, each with its own
/// model, on scratch forks at the moment (and every `--every` before it), each answer scored
/// by the words it holds.
fn quiz(q: &QuizArgs) -> anyhow::Result<()> {
    let quiz = read_quiz(&q.questions)?;
    let a = &q.over.asked;
    let mut rows = Vec::new();
    at_moments(a, q.over.every, |at| {
        let Scratch { mut sim, rt, names, agents, said, span, .. } =
            open_scratch(a, at, |file, settings, models| {
                super::llm::gateway_with_models(file, settings, models)
            })?;
        for agent in agents {
            let name = names.get(&agent).cloned().unwrap_or_default();
            for question in &quiz.question {
                let answer = rt.block_on(sim.interview(agent, question.ask.trim(), false))?;
                let score = quiz_score(&answer, &question.expect);
                rows.push((span.1, name.clone(), question.ask.trim().to_owned(), answer, score));
            }
        }
        eprintln!("asked {said}");
        Ok(span)
    })?;
    rows.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
    let header = ["time", "agent", "question", "answer", "score"];
    write_rows(a.format, &header, &rows, |(at, agent, question, answer, score)| {
        let score = score.map(|s| format!("{s:.2}")).unwrap_or_default();
        vec![sim_time(*at), agent.clone(), question.clone(), answer.trim().to_owned(), score]
    })?;
    if a.format == TableFormat::Table {
        let mut by_time: std::collections::BTreeMap<u64, (f64, u32)> = Default::default();
        for (at, _, _, _, score) in &rows {
            if let Some(s) = score {
                let e = by_time.entry(*at).or_default();
                (e.0, e.1) = (e.0 + s, e.1 + 1);
            }
        }
        for (at, (sum, n)) in by_time {
            println!(
                "{}: mean score {:.2} over {n} scored answers",
                sim_time(at),
                sum / f64::from(n)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_seconds_minutes_and_hours() {
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("30m"), Ok(1800));
        assert_eq!(parse_duration("2h"), Ok(7200));
        for bad in ["", "h", "10", "0m", "5d", "-1h", "99999999999999999999h"] {
            assert!(parse_duration(bad).unwrap_err().contains("30m"), "{bad}");
        }
    }
}
