//! `hamlet bench`: what the configured model costs and how well it judges, on Hamlet's own
//! work, printed with the machine it ran on. Figures about the model's behaviour come from
//! the model itself; nothing here is a test double.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use hamlet_engine::describe::sim_time;
use hamlet_engine::mind::prompt::Style;
use hamlet_engine::mind::think::{rating_call, Who, RATINGS_PER_CALL};
use hamlet_engine::rulebook::Rulebook;
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::town::{Definition, WILLOWMERE};
use hamlet_gateway::{config, Answer};
use hamlet_log::event::AgentId;
use hamlet_log::Body;
use serde::Deserialize;

use super::llm::LlmArgs;
use super::Outcome;

mod models;

/// The labelled memories `hamlet bench ratings` rates unless given others.
const LABELS: &str = include_str!("../../data/importance-labels.toml");

/// `hamlet bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Run the shipped town with the configured model for a slice of simulated time and
    /// print wall time per agent-hour, calls per agent-hour by purpose, prompt tokens read
    /// and reused from the cache, and completion tokens
    #[command(after_help = "Examples:\n  hamlet bench town --hours 1\n  \
hamlet bench town --agents 'Delphine Ashcombe,Tobias Ashcombe' --hours 0.5 --store bench/")]
    Town(TownArgs),
    /// Rate a labelled set of memories (routine chores to life events) with the configured
    /// model, as the town rates them, and print Spearman's rank correlation with the labels
    #[command(after_help = "Examples:\n  hamlet bench ratings\n  \
hamlet bench ratings --details\n  hamlet bench ratings --llm openai --model qwen2.5:7b")]
    Ratings(RatingsArgs),
    /// Ask the configured model one question, as `hamlet llm complete` does, and print the
    /// time to load the model, the time of the call, and the process's peak resident memory
    #[command(after_help = "Examples:\n  hamlet bench call\n  \
hamlet bench call --memory 2G\n  hamlet bench call --slots 64   # what a town plans")]
    Call(CallArgs),
    /// Run one town from one seed once per model assignment (every agent on one model, or a
    /// mix) and print, per model: calls and tokens per agent-hour, cost, failed tries and
    /// fallbacks, the believability counts, goal progress, the spread of followed facts, and
    /// a quiz's scores, with the machine and the command to reproduce it
    #[command(after_help = "Examples:\n  \
hamlet bench models --assign default --assign small --hours 2 --spread party\n  \
hamlet bench models --assign default --assign 'default,Delphine Ashcombe=small' \\\n    \
--questions quiz.toml --every 1h --store compare/\n  \
hamlet bench models --assign gpt --assign small --config models.toml   # [models.gpt] a server\n\n\
A quiz file:\n\n  [[question]]\n  ask = \"Who is giving a party, and when?\"\n  \
expect = [\"Delphine\", \"17:00\"]")]
    Models(models::ModelsArgs),
}

/// `hamlet bench call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet bench town`.
#[derive(Debug, Args)]
pub struct TownArgs {
    /// Simulated hours from the town's start
    #[arg(long, default_value_t = 1.0)]
    hours: f64,
    /// Only these personas (names, comma-separated) [default: all]
    #[arg(long, value_delimiter = ',')]
    agents: Vec<String>,
    /// Keep the run in this store (a new directory) [default: a temporary one, removed]
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Decide by this older rulebook (a number), to compare the cost of what the engine
    /// decides now with what it decided then on one machine [default: the newest]
    #[arg(long, value_name = "N")]
    rulebook: Option<u32>,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet bench ratings`.
#[derive(Debug, Args)]
pub struct RatingsArgs {
    /// A TOML file of `[[memory]]` entries with `agent`, `memory` and `label` (1 to 10)
    /// [default: the set in cli/data/importance-labels.toml]
    #[arg(long, value_name = "FILE")]
    labels: Option<PathBuf>,
    /// Print every memory with its label and rating
    #[arg(long)]
    details: bool,
    #[command(flatten)]
    llm: LlmArgs,
}

pub fn run(command: BenchCommand) -> anyhow::Result<Outcome> {
    match command {
        BenchCommand::Town(a) => town(a),
        BenchCommand::Ratings(a) => ratings(a),
        BenchCommand::Call(a) => call(a),
        BenchCommand::Models(a) => models::models(a),
    }
}

/// The most memory this process has held resident so far (`VmHWM`), in bytes.
fn peak_resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn peak_line() -> String {
    peak_resident().map_or_else(
        || "not measured here (no /proc/self/status)".to_owned(),
        |b| format!("{:.2} GB ({} MiB)", b as f64 / (1u64 << 30) as f64, b >> 20),
    )
}

/// The embedded model's memory plan, for a benchmark's header.
fn plan_line(settings: &config::Settings) -> anyhow::Result<String> {
    Ok(match settings.backend {
        config::Kind::Local => {
            let (_, plan) = config::local_plan(settings)?;
            format!("{} slots; planned {}", settings.slots, plan.describe())
        }
        config::Kind::OpenAi => "a server: nothing planned here".to_owned(),
    })
}

fn call(a: CallArgs) -> anyhow::Result<Outcome> {
    let (_, mut settings) = a.llm.settings()?;
    if !a.llm.slots_given() {
        settings.slots = 1;
    }
    let plan = plan_line(&settings)?;
    let began = stopwatch();
    let llm = config::llm_backend(&settings)?;
    let loaded = began.elapsed().as_secs_f64();
    let gateway = config::gateway(&settings, llm, std::sync::Arc::new(super::llm::NoEmbeddings));
    let call = hamlet_gateway::Call {
        purpose: "bench".into(),
        agent: None,
        template: "bench".into(),
        template_version: 1,
        prompt: hamlet_log::event::Prompt::Chat(vec![
            hamlet_log::event::ChatMessage {
                role: "system".into(),
                content: "Rate how poignant a memory is, from 1 (mundane) to 10 (life-changing)."
                    .into(),
            },
            hamlet_log::event::ChatMessage {
                role: "user".into(),
                content: "Memory: Mei Lin was accepted to the college of her dreams.".into(),
            },
        ]),
        shape: hamlet_gateway::Shape::Importance,
        max_tokens: None,
        temperature: None,
        items: Vec::new(),
        scored: None,
        avoid: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let asked = stopwatch();
    let answered = rt.block_on(gateway.ask(&call))?;
    let call_secs = asked.elapsed().as_secs_f64();
    let total = began.elapsed().as_secs_f64();
    println!("hamlet bench call");
    println!("machine: {}", machine());
    println!("model: {} ({} backend), {plan}", settings.model, backend_name(&settings));
    println!(
        "load {loaded:.1} s · call {call_secs:.1} s · together {total:.1} s · {} prompt tokens, {} generated · answer {:?}",
        answered.tokens_prompt, answered.tokens_completion, answered.answer
    );
    println!("peak resident memory: {}", peak_line());
    Ok(Outcome::Done)
}

/// A wall clock for a benchmark's figures (never an input to the town).
#[expect(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
fn stopwatch() -> Instant {
    Instant::now()
}

/// The CPU's name and the cores this process may use.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cpu}, {cores} core{}", if cores == 1 { "" } else { "s" })
}

fn town(a: TownArgs) -> anyhow::Result<Outcome> {
    let (_, settings) = a.llm.settings()?;
    if !(a.hours.is_finite() && a.hours > 0.0) {
        anyhow::bail!("--hours must be a positive number of simulated hours, not {}", a.hours);
    }
    let mut town =
        Definition::parse("willowmere.toml", WILLOWMERE).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !a.agents.is_empty() {
        let all: Vec<String> = town.personas.iter().map(|p| p.name.clone()).collect();
        for name in &a.agents {
            if !all.iter().any(|p| p.eq_ignore_ascii_case(name.trim())) {
                anyhow::bail!(
                    "--agents: no persona `{name}` in Willowmere; it has: {}",
                    all.join(", ")
                );
            }
        }
        town.personas.retain(|p| a.agents.iter().any(|n| p.name.eq_ignore_ascii_case(n.trim())));
    }
    let rulebook = match a.rulebook {
        None => Rulebook::CURRENT,
        Some(n) => Rulebook::numbered(n).ok_or_else(|| {
            anyhow::anyhow!(
                "--rulebook {n}: this Hamlet decides by rulebooks {} to {}",
                Rulebook::FIRST.number(),
                Rulebook::CURRENT.number()
            )
        })?,
    };
    let n_agents = town.personas.len();
    let plan = plan_line(&settings)?;
    let (dir, temporary) = match &a.store {
        Some(dir) if dir.exists() => {
            anyhow::bail!("{} exists: give a new directory to keep the run in", dir.display())
        }
        Some(dir) => (dir.clone(), false),
        None => (std::env::temp_dir().join(format!("hamlet-bench-{}", std::process::id())), true),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let llm = config::llm_backend(&settings)?;
    let backend = llm.clone();
    let embedder = config::embed_backend(&settings)?;
    let gateway = config::gateway(&settings, llm, embedder);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    eprintln!(
        "hamlet bench town: Willowmere, {n_agents} agents, {} simulated hours, {rulebook}, model {} ({})",
        a.hours,
        settings.model,
        machine()
    );
    let measured = rt.block_on(async {
        let store = super::store_at(&dir)?;
        let began = stopwatch();
        let sim_settings = SimSettings { rulebook, ..SimSettings::default() };
        let mut sim = Sim::start(store, "main", town, 0, gateway, sim_settings).await?;
        let start_wall = began.elapsed().as_secs_f64();
        let start_seq = sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq);
        let start_secs = sim.state().sim_time_secs;
        let per_step = u64::from(sim.definition().seconds_per_step.max(1));
        let target = ((a.hours * 3600.0) / per_step as f64).ceil().max(1.0) as u64;
        let looped = stopwatch();
        let mut last_line = 0;
        while sim.state().step < target || sim.mid_step() {
            sim.step().await?;
            let now = sim.state().sim_time_secs;
            if now / 600 != last_line {
                last_line = now / 600;
                eprintln!(
                    "  {} · {:.1} min of wall time in the loop",
                    sim_time(now),
                    looped.elapsed().as_secs_f64() / 60.0
                );
            }
        }
        let loop_wall = looped.elapsed().as_secs_f64();
        let head = sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq);
        let start = sim.store().events(sim.branch(), 0, start_seq)?;
        let looped_events = sim.store().events(sim.branch(), start_seq + 1, head)?;
        let sim_hours = (sim.state().sim_time_secs - start_secs) as f64 / 3600.0;
        anyhow::Ok((
            start_wall,
            loop_wall,
            sim_hours,
            tally(start.iter().map(|e| &e.body)),
            tally(looped_events.iter().map(|e| &e.body)),
        ))
    });
    let (start_wall, loop_wall, sim_hours, start, looped) = match measured {
        Ok(m) => m,
        Err(e) => {
            if temporary {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(e);
        }
    };
    let agent_hours = n_agents as f64 * sim_hours;
    println!("hamlet bench town");
    println!("machine: {}", machine());
    println!("model: {} ({} backend), {}", settings.model, backend_name(&settings), plan);
    println!("town: Willowmere, {n_agents} agents, {sim_hours:.2} simulated hours from the start = {agent_hours:.2} agent-hours, {rulebook}");
    println!(
        "start (seed memories): {:.1} min of wall time, {} calls, {} prompt tokens ({} reused from the cache)",
        start_wall / 60.0,
        start.calls(),
        start.prompt,
        start.cached
    );
    println!(
        "loop: {:.1} min of wall time = {:.2} min per agent-hour",
        loop_wall / 60.0,
        loop_wall / 60.0 / agent_hours.max(1e-9)
    );
    let by_purpose: Vec<String> = looped
        .by_purpose
        .iter()
        .map(|(p, n)| format!("{p} {:.1}", *n as f64 / agent_hours.max(1e-9)))
        .collect();
    println!(
        "calls per agent-hour: {:.1} ({})",
        looped.calls() as f64 / agent_hours.max(1e-9),
        by_purpose.join(", ")
    );
    println!(
        "prompt tokens: {} · reused from the cache {} ({:.0}%) · read {}",
        looped.prompt,
        looped.cached,
        100.0 * looped.cached as f64 / (looped.prompt.max(1)) as f64,
        looped.prompt.saturating_sub(looped.cached)
    );
    println!(
        "completion tokens: {} · tries that failed {} · fallbacks {}",
        looped.completion, looped.failed, looped.fallbacks
    );
    if let Some(counters) = backend.counters() {
        println!("{counters}");
    }
    println!("peak resident memory: {}", peak_line());
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!(
            "the run is in {} (hamlet export --store {} --out bench.hamlet)",
            dir.display(),
            dir.display()
        );
    }
    Ok(Outcome::Done)
}

fn backend_name(settings: &config::Settings) -> &'static str {
    match settings.backend {
        config::Kind::Local => "embedded",
        config::Kind::OpenAi => "OpenAI-compatible",
    }
}

/// Model calls and tokens of a stretch of events.
#[derive(Debug, Default)]
struct Tally {
    by_purpose: BTreeMap<String, u64>,
    prompt: u64,
    cached: u64,
    completion: u64,
    failed: u64,
    fallbacks: u64,
}

impl Tally {
    fn calls(&self) -> u64 {
        self.by_purpose.values().sum()
    }
}

fn tally<'a>(bodies: impl Iterator<Item = &'a Body>) -> Tally {
    let mut t = Tally::default();
    for body in bodies {
        match body {
            Body::LlmRequested(r) if r.attempt == 1 => {
                *t.by_purpose.entry(r.purpose.clone()).or_default() += 1;
            }
            Body::LlmResponded(r) => {
                t.prompt += u64::from(r.tokens_prompt);
                t.cached += u64::from(r.tokens_cached.min(r.tokens_prompt));
                t.completion += u64::from(r.tokens_completion);
                t.fallbacks += u64::from(r.fallback);
            }
            Body::LlmFailed(_) => t.failed += 1,
            _ => {}
        }
    }
    t
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelFile {
    memory: Vec<Labelled>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labelled {
    agent: String,
    memory: String,
    label: u8,
}

fn ratings(a: RatingsArgs) -> anyhow::Result<Outcome> {
    let (_, settings) = a.llm.settings()?;
    let text = match &a.labels {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        None => LABELS.to_owned(),
    };
    let file: LabelFile = toml::from_str(&text).context("the labels file")?;
    if let Some(bad) = file.memory.iter().find(|m| !(1..=10).contains(&m.label)) {
        anyhow::bail!("label {} of `{}` is not 1 to 10", bad.label, bad.memory);
    }
    if file.memory.len() < 3 {
        anyhow::bail!("{} labelled memories are too few to correlate", file.memory.len());
    }
    let town =
        Definition::parse("willowmere.toml", WILLOWMERE).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Each agent's memories in file order, rated in calls of up to RATINGS_PER_CALL, as the
    // town rates a step's observations.
    let mut by_agent: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, m) in file.memory.iter().enumerate() {
        by_agent.entry(m.agent.as_str()).or_default().push(i);
    }
    let llm = config::llm_backend(&settings)?;
    let embedder = config::embed_backend(&settings)?;
    let gateway = config::gateway(&settings, llm, embedder);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let began = stopwatch();
    let mut rated: Vec<Option<(u8, Option<f64>)>> = vec![None; file.memory.len()];
    let mut flat = Vec::new();
    let (mut calls, mut fallbacks) = (0, 0);
    for (agent, indices) in &by_agent {
        let persona = town.personas.iter().position(|p| p.name == *agent);
        let summary = persona
            .map(|i| town.personas[i].seed_statements().join("; "))
            .unwrap_or_else(|| format!("{agent} lives in {}.", town.name));
        let who = Who {
            town: &town.name,
            agent: AgentId(persona.unwrap_or(0) as u32),
            name: agent,
            summary: &summary,
        };
        for group in indices.chunks(RATINGS_PER_CALL) {
            let texts: Vec<String> = group.iter().map(|&i| file.memory[i].memory.clone()).collect();
            let call = rating_call(&who, Style::Chat, &texts)?;
            let answered = rt.block_on(gateway.ask(&call))?;
            calls += 1;
            fallbacks += usize::from(answered.fallback);
            let values = match &answered.answer {
                Answer::Importance(r) => vec![*r],
                Answer::Ratings(rs) => rs.clone(),
                other => anyhow::bail!("the rating call was answered with {}", other.to_json()),
            };
            let expected = answered.events.iter().rev().find_map(|e| match e {
                Body::LlmResponded(r) if !r.probabilities.is_empty() => Some(
                    r.probabilities
                        .iter()
                        .map(|p| {
                            let total: f64 = p.iter().map(|&x| f64::from(x)).sum();
                            p.iter()
                                .enumerate()
                                .map(|(k, &x)| (k + 1) as f64 * f64::from(x))
                                .sum::<f64>()
                                / total.max(1.0)
                        })
                        .collect::<Vec<f64>>(),
                ),
                _ => None,
            });
            for (j, &i) in group.iter().enumerate() {
                let ev = expected.as_ref().and_then(|e| e.get(j).copied());
                rated[i] = values.get(j).map(|&r| (r, ev));
            }
            let labels: Vec<u8> = group.iter().map(|&i| file.memory[i].label).collect();
            if values.len() > 1
                && values.windows(2).all(|w| w[0] == w[1])
                && labels.iter().any(|l| *l != labels[0])
            {
                flat.push(format!("{agent}: all {} rated {}", values.len(), values[0]));
            }
        }
    }
    let wall = began.elapsed().as_secs_f64();
    let labels: Vec<f64> = file.memory.iter().map(|m| f64::from(m.label)).collect();
    let given: Vec<f64> = rated.iter().map(|r| r.map_or(f64::NAN, |(v, _)| f64::from(v))).collect();
    println!("hamlet bench ratings");
    println!("machine: {}", machine());
    println!("model: {} ({} backend)", settings.model, backend_name(&settings));
    println!(
        "{} labelled memories of {} agents, rated in {calls} calls ({fallbacks} fell back) in {:.1} min",
        file.memory.len(),
        by_agent.len(),
        wall / 60.0
    );
    if a.details {
        for (m, r) in file.memory.iter().zip(&rated) {
            let (value, ev) = r.map_or((0, None), |(v, e)| (v, e));
            let ev = ev.map(|e| format!(" (expected {e:.2})")).unwrap_or_default();
            println!("  label {:>2} · rated {value:>2}{ev} · {}: {}", m.label, m.agent, m.memory);
        }
    }
    let rho = spearman(&labels, &given);
    println!(
        "Spearman's rank correlation, labels vs ratings: {}",
        rho.map_or("undefined (no spread)".to_owned(), |r| format!("{r:.3}"))
    );
    let expected: Option<Vec<f64>> = rated.iter().map(|r| r.and_then(|(_, e)| e)).collect();
    if let Some(expected) = expected {
        if let Some(r) = spearman(&labels, &expected) {
            println!("Spearman's rank correlation, labels vs expected values (unrounded): {r:.3}");
        }
    }
    let distinct: std::collections::BTreeSet<u8> =
        rated.iter().flatten().map(|(v, _)| *v).collect();
    println!(
        "ratings used: {:?} · batches rated all alike though their labels differ: {}",
        distinct,
        if flat.is_empty() { "none".to_owned() } else { flat.join("; ") }
    );
    Ok(Outcome::Done)
}

/// Ranks with ties given their average rank (1-based).
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let average = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = average;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation (Pearson's over average ranks); `None` when either side has
/// no spread, the lengths differ, or a value is not a number.
fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 || a.iter().chain(b).any(|v| v.is_nan()) {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_follows_ranks_and_handles_ties() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((spearman(&a, &[10.0, 20.0, 30.0, 40.0, 50.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((spearman(&a, &[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        // Everything rated alike: no correlation to speak of.
        assert_eq!(spearman(&a, &[5.0; 5]), None);
        assert_eq!(spearman(&a, &[1.0, 2.0]), None);
        assert_eq!(spearman(&a, &[1.0, 2.0, f64::NAN, 4.0, 5.0]), None);
        // A known value: one swap among five gives 1 - 6·2/(5·24) = 0.9.
        assert!((spearman(&a, &[1.0, 2.0, 4.0, 3.0, 5.0]).unwrap() - 0.9).abs() < 1e-12);
    }

    #[test]
    fn the_shipped_labels_span_the_scale() {
        let file: LabelFile = toml::from_str(LABELS).unwrap();
        assert!(file.memory.len() >= 40, "{}", file.memory.len());
        let town = Definition::parse("willowmere.toml", WILLOWMERE).unwrap();
        for m in &file.memory {
            assert!((1..=10).contains(&m.label), "{}", m.memory);
            assert!(town.personas.iter().any(|p| p.name == m.agent), "{}", m.agent);
        }
        for band in [1..=2, 3..=4, 5..=6, 7..=8, 9..=10] {
            let n = file.memory.iter().filter(|m| band.contains(&m.label)).count();
            assert!(n >= 5, "labels {band:?}: {n}");
        }
    }
}
