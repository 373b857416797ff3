//! Subcommands over recording files: synth, inspect, verify, recover, replay, log.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use hamlet_engine::describe::{agents_of, printable, sim_time, summary};
use hamlet_engine::fold::Town;
use hamlet_engine::history::{state_at, Moment};
use hamlet_engine::log::{Branch, Log};
use hamlet_engine::query::EventRecord;
use hamlet_engine::reader::Reader;
use hamlet_engine::synth::{write_recording_in, SynthSpec};
use hamlet_engine::town::{Definition, WILLOWMERE};
use hamlet_engine::why::CauseIndex;
use hamlet_log::event::{kind_by_name, kind_name, AgentId, Event, KNOWN_KINDS};
use hamlet_log::verify::{Outcome as Recovery, Problem};
use hamlet_log::{BranchId, Recording};
use indicatif::{ProgressBar, ProgressStyle};

use super::{parse_moment, Outcome, Source};

/// Reads a whole recording, saying which file failed.
pub fn read_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read recording {}", path.display()))
}

/// Writes a file whole: to a temporary name, synced, then renamed over `path`.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("hamlet-partial");
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}

fn open<'a>(bytes: &'a [u8], path: &Path) -> anyhow::Result<Recording<'a>> {
    Recording::open(bytes).with_context(|| format!("cannot open recording {}", path.display()))
}

/// Verifies and opens a recording, the state at each checkpoint re-derived from the
/// events; reads then trust the hashes verify checked, and start seeks at checkpoints only
/// if every one held. A file that is not sound is still read (every chunk hashed as it is
/// read, every seek folded from the first event), with a warning.
fn open_checked<'a>(
    bytes: &'a [u8],
    path: &Path,
) -> anyhow::Result<(Recording<'a>, hamlet_log::verify::Report)> {
    hamlet_engine::log::open_checked(bytes)
        .with_context(|| format!("cannot open recording {}", path.display()))
}

fn warn_unsound(report: &hamlet_log::verify::Report, path: &Path) {
    if let Some(first) = report.problems.first() {
        #[expect(clippy::print_stderr, reason = "a warning for the person at the terminal")]
        {
            eprintln!(
                "warning: {} is not sound ({} problems; first: {first}); reading what can be read",
                path.display(),
                report.problems.len()
            );
        }
    }
}

fn pick_branch(rec: &Recording<'_>, name: Option<&str>) -> anyhow::Result<BranchId> {
    Ok(picked(rec, "recording", name)?.id)
}

/// The branch `name` names in `log` (a `what`: recording or store), or its default branch
/// (the glossary's rule); an error that lists the branches there are.
pub fn picked(log: &dyn Log, what: &str, name: Option<&str>) -> anyhow::Result<Branch> {
    let branches = log.branches();
    match (hamlet_engine::log::pick(&branches, name), name) {
        (Some(branch), _) => Ok(branch.clone()),
        (None, Some(name)) => bail!(
            "no branch `{name}` in this {what}; it has: {}",
            branches.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
        (None, None) => bail!("the {what} has no branch"),
    }
}

fn bytes_human(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// `hamlet synth`.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// How many events to write (at least)
    #[arg(long, value_name = "N")]
    events: u64,
    /// Where to write the recording
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// How many agents live in the town
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    agents: u32,
    /// The seed: the same seed writes the same bytes
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Walk the agents in a real town: a town file, or `willowmere` for the shipped one
    /// [default: open ground, no map]
    #[arg(long, value_name = "FILE")]
    town: Option<PathBuf>,
    /// Overwrite FILE if it exists
    #[arg(long)]
    force: bool,
}

pub fn synth(a: SynthArgs) -> anyhow::Result<Outcome> {
    if a.out.exists() && !a.force {
        bail!("{} exists; pass --force to overwrite it", a.out.display());
    }
    let bar = ProgressBar::new(a.events).with_style(
        ProgressStyle::with_template(
            "{spinner} writing events {human_pos}/{human_len} {wide_bar} {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let town = match &a.town {
        None => None,
        Some(p) if p.as_os_str() == "willowmere" => {
            Some(Definition::parse("willowmere.toml", WILLOWMERE))
        }
        Some(p) => Some(hamlet_engine::town::load(p)),
    }
    .transpose()
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let spec = SynthSpec { n_events: a.events, n_agents: a.agents, seed: a.seed };
    let bytes = write_recording_in(spec, town.as_ref(), Vec::new(), |n| bar.set_position(n))
        .context("cannot build the synthetic recording")?;
    bar.finish_and_clear();
    write_file(&a.out, &bytes)?;
    let rec = open(&bytes, &a.out)?;
    let stats = &rec.summary().statistics;
    println!(
        "wrote {}: {} events in {} chunks, {} agents, {} to {} ({}, {:.0} bytes per event)",
        a.out.display(),
        stats.n_events,
        stats.n_chunks,
        a.agents,
        sim_time(stats.time_first),
        sim_time(stats.time_last),
        bytes_human(bytes.len() as u64),
        bytes.len() as f64 / stats.n_events.max(1) as f64
    );
    Ok(Outcome::Done)
}

/// `hamlet inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The recording
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub fn inspect(a: InspectArgs) -> anyhow::Result<Outcome> {
    let bytes = read_file(&a.file)?;
    let (rec, report) = open_checked(&bytes, &a.file)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let stats = &rec.summary().statistics;
    writeln!(
        out,
        "recording    {} ({}, written by {})",
        a.file.display(),
        bytes_human(bytes.len() as u64),
        rec.writer()
    )?;
    if report.is_clean() {
        writeln!(out, "verified     yes: every hash, chain, index and count checks out")?;
    } else {
        writeln!(
            out,
            "verified     NO: {} problems; the first: {}",
            report.problems.len(),
            report.problems[0]
        )?;
        writeln!(out, "             run `hamlet verify {}` for all of them", a.file.display())?;
    }
    let root = pick_branch(&rec, None)?;
    let town = state_at(&rec, root, Moment::End).ok();
    if let Some(town) = &town {
        let names: Vec<String> = town.agents.values().map(|a| printable(&a.name)).collect();
        let shown = names.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        let more = if names.len() > 8 {
            format!(", … ({} more)", names.len() - 8)
        } else {
            String::new()
        };
        writeln!(
            out,
            "town         {}",
            if town.town_name.is_empty() { "(unnamed)" } else { &town.town_name }
        )?;
        writeln!(out, "agents       {}: {shown}{more}", names.len())?;
        let models: Vec<String> =
            town.llm.models.iter().map(|(m, n)| format!("{m} ({n} calls)")).collect();
        writeln!(
            out,
            "models       {}",
            if models.is_empty() { "none".into() } else { models.join(", ") }
        )?;
        writeln!(
            out,
            "LLM          {} calls, {} answers, {} failures, {} prompt + {} completion tokens",
            town.llm.n_requests,
            town.llm.n_responses,
            town.llm.n_failures,
            town.llm.tokens_prompt,
            town.llm.tokens_completion
        )?;
    }
    writeln!(out, "time         {} → {}", sim_time(stats.time_first), sim_time(stats.time_last))?;
    writeln!(
        out,
        "events       {} in {} chunks, {:.0} bytes per event all in",
        stats.n_events,
        stats.n_chunks,
        bytes.len() as f64 / stats.n_events.max(1) as f64
    )?;
    writeln!(out, "branches     {}", rec.branches().len())?;
    for b in rec.branches() {
        let name = |id: BranchId| rec.branch(id).map_or_else(|| id.to_string(), |b| b.name.clone());
        let origin = match (b.parent, b.fork_seq) {
            (Some(p), Some(s)) => format!("forks {} at #{s}; ", name(p)),
            _ => String::new(),
        };
        writeln!(
            out,
            "  {:<12} {}  {origin}{} events of its own, head #{}",
            b.name, b.id, b.n_events, b.head_seq
        )?;
    }
    writeln!(out, "checkpoints  {}", rec.summary().checkpoints.len())?;
    writeln!(out, "by kind")?;
    for (kind, n) in &stats.kinds {
        writeln!(out, "  {:<20} {n}", kind_name(*kind))?;
    }
    out.flush()?;
    Ok(Outcome::Done)
}

/// `hamlet verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The recording
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub fn verify(a: VerifyArgs) -> anyhow::Result<Outcome> {
    let bytes = read_file(&a.file)?;
    // A file whose summary cannot be read (cut short, say) is still verified, for all that
    // is wrong with it; one that opens has its checkpoints re-derived too.
    let (checkpoints, report) = match Recording::open(&bytes) {
        Ok(_) => {
            let (rec, report) = open_checked(&bytes, &a.file)?;
            (rec.summary().checkpoints.len(), report)
        }
        Err(_) => (0, hamlet_log::verify::verify(&bytes)),
    };
    if report.is_clean() {
        let states = match checkpoints {
            0 => "no checkpoints".to_owned(),
            1 => "the state at its checkpoint re-derived from the events".to_owned(),
            n => format!("the state at each of its {n} checkpoints re-derived from the events"),
        };
        println!(
            "{}: sound ({} events in {} chunks, {} branches; {states})",
            a.file.display(),
            report.n_events,
            report.n_chunks,
            report.n_branches,
        );
        return Ok(Outcome::Done);
    }
    println!("{}: {} problems", a.file.display(), report.problems.len());
    for (i, p) in report.problems.iter().enumerate() {
        println!("  {}. {p}", i + 1);
    }
    // Every hash holds, yet a checkpoint is not its events' state: the file was made to lie.
    if report.problems.iter().all(|p| matches!(p, Problem::Checkpoint { .. })) {
        println!(
            "hint: its events are sound, and readers fold them from the start; `hamlet convert \
             {} --out FIXED` writes them again without the false checkpoints",
            a.file.display()
        );
        return Ok(Outcome::FalseCheckpoints);
    }
    println!(
        "hint: `hamlet recover {} --out FIXED` keeps the longest valid prefix",
        a.file.display()
    );
    Ok(Outcome::ProblemsFound)
}

/// `hamlet recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The damaged recording (never modified)
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Where to write what could be kept
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn recover(a: RecoverArgs) -> anyhow::Result<Outcome> {
    if a.out == a.file {
        bail!("--out must differ from the damaged file: recover never modifies its input");
    }
    let bytes = read_file(&a.file)?;
    let recovered =
        hamlet_log::verify::recover(&bytes, concat!("hamlet recover ", env!("CARGO_PKG_VERSION")));
    match recovered.outcome {
        Recovery::Clean => {
            write_file(&a.out, &recovered.bytes)?;
            println!("{} is sound: nothing lost; copied to {}", a.file.display(), a.out.display());
            Ok(Outcome::Done)
        }
        Recovery::Prefix => {
            write_file(&a.out, &recovered.bytes)?;
            println!(
                "kept {} events in {} chunks, written to {}; lost what followed",
                recovered.n_events,
                recovered.n_chunks,
                a.out.display()
            );
            if let Some(first) = recovered.problems.first() {
                println!("first problem: {first}");
            }
            Ok(Outcome::PrefixRecovered)
        }
        Recovery::Nothing => {
            println!("nothing could be kept from {}", a.file.display());
            if let Some(first) = recovered.problems.first() {
                println!("first problem: {first}");
            }
            Ok(Outcome::ProblemsFound)
        }
    }
}

/// `hamlet convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The recording (never modified)
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Where to write it
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// 2: chunks compressed with Zstandard; 1: uncompressed, for builds from before format 2
    #[arg(long, default_value_t = hamlet_log::format::FORMAT_VERSION,
          value_parser = clap::value_parser!(u16).range(1..=i64::from(hamlet_log::format::FORMAT_VERSION)))]
    format_version: u16,
}

pub fn convert(a: ConvertArgs) -> anyhow::Result<Outcome> {
    if a.out == a.file {
        bail!("--out must differ from the input: convert never modifies it");
    }
    let bytes = read_file(&a.file)?;
    let (rec, report) = open_checked(&bytes, &a.file)?;
    let false_checkpoints =
        report.problems.iter().filter(|p| matches!(p, Problem::Checkpoint { .. })).count();
    if let Some(first) = report.problems.iter().find(|p| !matches!(p, Problem::Checkpoint { .. })) {
        bail!(
            "{} is not sound ({} problems; the first: {first}): `hamlet recover` keeps what can \
             be kept, then convert that",
            a.file.display(),
            report.problems.len()
        );
    }
    let writer = concat!("hamlet convert ", env!("CARGO_PKG_VERSION"));
    // Written as it is made (a few chunks in memory, however large the output): to a
    // temporary name, synced, then renamed over `--out`.
    let tmp = a.out.with_extension("hamlet-partial");
    let written = (|| -> anyhow::Result<u64> {
        let file = std::fs::File::create(&tmp)?;
        let out =
            hamlet_log::writer::rewrite(&rec, BufWriter::new(file), writer, a.format_version)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let len = file.metadata()?.len();
        std::fs::rename(&tmp, &a.out)?;
        if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(len)
    })();
    let out_len = match written {
        Ok(len) => len,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.context(format!("cannot convert {}", a.file.display())));
        }
    };
    if false_checkpoints > 0 {
        println!(
            "{}: {false_checkpoints} checkpoints hold states its events do not fold to; \
             written without checkpoints",
            a.file.display()
        );
    }
    let n_events = rec.summary().statistics.n_events;
    println!(
        "{}: format {} → {}, {} → {} ({:.0}%), {n_events} events, ids unchanged",
        a.out.display(),
        rec.version(),
        a.format_version,
        bytes_human(bytes.len() as u64),
        bytes_human(out_len),
        100.0 * out_len as f64 / bytes.len().max(1) as f64,
    );
    Ok(Outcome::Done)
}

/// `hamlet replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The branch, by name or id prefix [default: main, else the first root by name]
    #[arg(long)]
    branch: Option<String>,
    /// Where to stop: `#<seq>`, `day<N> <HH:MM[:SS]>`, `<HH:MM>`, `<seconds>s` or `end`
    #[arg(long, default_value = "end", value_parser = parse_moment)]
    to: Moment,
}

pub fn replay(a: ReplayArgs) -> anyhow::Result<Outcome> {
    let bytes = read_file(&a.file)?;
    let (rec, report) = open_checked(&bytes, &a.file)?;
    warn_unsound(&report, &a.file);
    let branch = pick_branch(&rec, a.branch.as_deref())?;
    let town = state_at(&rec, branch, a.to).context("cannot fold the recording")?;
    // The branch whose event was folded last, by its name in the file: a rename is the
    // recording's, not the town's (which keeps the name the branch was created with).
    let seq = town.head.map_or(0, |(s, _)| s);
    let name = rec
        .ancestry(branch)?
        .into_iter()
        .find(|part| part.until_seq.is_none_or(|until| seq <= until))
        .and_then(|part| rec.branch(part.branch))
        .map_or_else(|| town.branch_name.clone(), |b| b.name.clone());
    print_town(&town, &name)?;
    Ok(Outcome::Done)
}

fn print_town(town: &Town, branch_name: &str) -> anyhow::Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let (seq, id) = town.head.map_or((0, String::from("none")), |(s, id)| (s, id.to_string()));
    writeln!(out, "state hash   {}", town.state_hash())?;
    writeln!(
        out,
        "at           #{seq} ({id}), {}, step {}",
        sim_time(town.sim_time_secs),
        town.step
    )?;
    writeln!(out, "branch       {branch_name}")?;
    writeln!(out, "town         {}", town.town_name)?;
    writeln!(
        out,
        "events       {} folded ({} of unknown kinds, {} anomalies)",
        town.n_events, town.n_unknown, town.n_anomalies
    )?;
    writeln!(
        out,
        "LLM          {} calls, {} prompt + {} completion tokens",
        town.llm.n_requests, town.llm.tokens_prompt, town.llm.tokens_completion
    )?;
    writeln!(out, "agents       {}", town.agents.len())?;
    for (id, agent) in &town.agents {
        let doing = agent.action.as_ref().map_or_else(
            || "idle".to_owned(),
            |a| {
                let at = hamlet_engine::town::at_place(&a.address);
                printable(&format!("{} {} {at}", a.emoji, a.description))
            },
        );
        writeln!(
            out,
            "  {:>3} {:<20} ({:>3},{:>3})  ${:>7.2}  {:>5} memories  {doing}",
            id.0,
            printable(&agent.name),
            agent.tile.x,
            agent.tile.y,
            agent.cash_cents as f64 / 100.0,
            agent.memories.len()
        )?;
    }
    out.flush()?;
    Ok(())
}

/// `hamlet log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    source: Source,
    /// Only events at or after this moment (`day<N> <HH:MM>`, `#<seq>`, …)
    #[arg(long, value_parser = parse_moment)]
    from: Option<Moment>,
    /// Only events at or before this moment
    #[arg(long, value_parser = parse_moment)]
    to: Option<Moment>,
    /// Only events about this agent (name or number)
    #[arg(long)]
    agent: Option<String>,
    /// Only events of these kinds (comma-separated, e.g. Moved,DialogueTurn)
    #[arg(long, value_delimiter = ',')]
    kind: Vec<String>,
    /// Print at most this many events
    #[arg(long)]
    limit: Option<u64>,
    /// `text`: one line per event; `jsonl`: one JSON object per line, every field of the
    /// event (seq, id, parent, branch, sim_time_secs, time, kind, causes, agents, summary,
    /// body), for analysis tools
    #[arg(long, value_enum, default_value = "text")]
    format: LogFormat,
}

/// How `hamlet log` prints events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line per event, for people.
    Text,
    /// JSON Lines: one object per event (its fields are listed in docs/commands.md).
    Jsonl,
}

/// [`source_events`] without the bulk that views of the town and the research measures never
/// read ([`hamlet_engine::query::without_bulk`]): a big town's day is gigabytes less.
pub fn source_events_light(source: &Source) -> anyhow::Result<Vec<Event>> {
    events_mapped(source, hamlet_engine::query::without_bulk)
}

/// Every event of the chosen branch (with its ancestry) of a recording or a store.
pub fn source_events(source: &Source) -> anyhow::Result<Vec<Event>> {
    events_mapped(source, |e| e)
}

/// [`source_events`], each event passed through `map` as it is decoded (from a recording;
/// a store's come all at once).
fn events_mapped(source: &Source, map: fn(Event) -> Event) -> anyhow::Result<Vec<Event>> {
    with_reader(source.file.as_deref(), source.store.as_deref(), |reader, what| {
        let branch = picked(reader.log(), what, source.branch.as_deref())?;
        branch_events(reader, &branch, map)
    })
}

/// Opens a recording `file` (checked; an unsound one is read with a warning) or a store to
/// read, and gives it to `read` with what it is ("recording" or "store").
fn with_reader<T>(
    file: Option<&Path>,
    store: Option<&Path>,
    read: impl FnOnce(&Reader, &str) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let bytes;
    let reader = match (file, store) {
        (Some(file), _) => {
            bytes = read_file(file)?;
            let (rec, report) = open_checked(&bytes, file)?;
            warn_unsound(&report, file);
            Reader::Recording(rec)
        }
        (None, Some(dir)) => Reader::Store(
            super::store_read_only(dir)
                .with_context(|| format!("cannot open store {}", dir.display()))?,
        ),
        (None, None) => bail!("give a recording FILE or --store DIR"),
    };
    let what = if reader.store().is_some() { "store" } else { "recording" };
    read(&reader, what)
}

/// Every event of `branch` (its ancestry, then its own), each passed through `map`.
fn branch_events(
    reader: &Reader,
    branch: &Branch,
    map: fn(Event) -> Event,
) -> anyhow::Result<Vec<Event>> {
    let mut events = Vec::new();
    reader
        .log()
        .for_each_event(branch.id, 0, branch.head_seq, &mut |e| {
            events.push(map(e));
            true
        })
        .with_context(|| format!("cannot read the events of branch `{}`", branch.name))?;
    Ok(events)
}

/// The branch `of` names (as [`picked`] picks it) of a recording `file` or a store, and each
/// branch forked from it, with every event of each (its ancestry, then its own) passed
/// through `map`: the branch first, then its forks in the order branches are listed.
pub fn fork_histories(
    file: Option<&Path>,
    store: Option<&Path>,
    of: Option<&str>,
    map: fn(Event) -> Event,
) -> anyhow::Result<Vec<(Branch, Vec<Event>)>> {
    with_reader(file, store, |reader, what| {
        let parent = picked(reader.log(), what, of)?;
        let forks = reader.log().branches().into_iter().filter(|b| b.parent == Some(parent.id));
        std::iter::once(parent.clone())
            .chain(forks)
            .map(|branch| Ok((branch.clone(), branch_events(reader, &branch, map)?)))
            .collect()
    })
}

pub fn log(a: LogArgs) -> anyhow::Result<Outcome> {
    let kinds: Vec<u16> = a
        .kind
        .iter()
        .map(|k| {
            kind_by_name(k).with_context(|| {
                let known: Vec<&str> = KNOWN_KINDS.iter().map(|k| kind_name(*k)).collect();
                format!("no event kind `{k}`; the kinds are: {}", known.join(", "))
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let events = source_events(&a.source)?;
    let history = CauseIndex::new(&events);
    let agent = match &a.agent {
        Some(who) => Some(super::agent_named(&history, who)?),
        None => None,
    };
    if a.from == Some(Moment::End) {
        bail!("--from end selects nothing; use --to end, or leave --from out");
    }
    let inside = |e: &Event, m: Option<Moment>, after: bool| match m {
        None | Some(Moment::End) => true,
        Some(Moment::Seq(s)) => {
            if after {
                e.seq() >= s
            } else {
                e.seq() <= s
            }
        }
        Some(Moment::Time(t)) => {
            if after {
                e.sim_time_secs() >= t
            } else {
                e.sim_time_secs() <= t
            }
        }
    };
    let name_of = |id: AgentId| history.name(id);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut shown = 0u64;
    for event in &events {
        if !inside(event, a.from, true) || !inside(event, a.to, false) {
            continue;
        }
        if !kinds.is_empty() && !kinds.contains(&event.body.kind()) {
            continue;
        }
        if let Some(agent) = agent {
            if !agents_of(&event.body).contains(&agent) {
                continue;
            }
        }
        if a.limit.is_some_and(|l| shown >= l) {
            break;
        }
        match a.format {
            LogFormat::Text => writeln!(
                out,
                "#{:<8} {}  {}  {:<19} {}",
                event.seq(),
                sim_time(event.sim_time_secs()),
                event.id,
                kind_name(event.body.kind()),
                printable(&summary(&event.body, &name_of))
            )?,
            LogFormat::Jsonl => {
                serde_json::to_writer(&mut out, &EventRecord::new(event, &name_of))?;
                writeln!(out)?;
            }
        }
        shown += 1;
    }
    out.flush()?;
    Ok(Outcome::Done)
}
