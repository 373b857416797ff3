//! `hamlet bench models`: one town from one seed, run once per model assignment (every agent
//! on one model, or a mix), and what each model's agents did set side by side — costs from
//! the log, the believability counts, goal progress, the spread of followed facts, and a
//! quiz asked of every agent on scratch forks. Each run is an ordinary store.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use hamlet_engine::describe::sim_time;
use hamlet_engine::history::Moment;
use hamlet_engine::ops::seq_for;
use hamlet_engine::research::{model_rows, ModelRow, Table};
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::{FsStorage, Store};
use hamlet_engine::town::{Definition, WILLOWMERE};
use hamlet_gateway::config;
use hamlet_log::event::AgentId;
use hamlet_log::Body;
use serde::Serialize;

use super::super::llm::LlmArgs;
use super::super::research::{parse_duration, quiz_score, read_quiz, write_table, TableFormat};
use super::super::Outcome;

/// The columns of the facts followed.
const HEARD: [&str; 5] = ["heard_1", "heard_2", "heard_3", "heard_4", "heard_5"];

/// `hamlet bench models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// An assignment of models to run the town with (give one per run): a model name for every
    /// agent (`default`, `small`, or a `[models.NAME]` profile of the config file), or
    /// `PERSONA=MODEL` pairs, comma-separated, with a bare name for every other agent
    #[arg(long = "assign", value_name = "MODELS", required = true)]
    assign: Vec<String>,
    /// The town file [default: Willowmere, the shipped town]
    #[arg(long, value_name = "FILE")]
    town: Option<PathBuf>,
    /// Only these personas (names, comma-separated) [default: all]
    #[arg(long, value_delimiter = ',')]
    agents: Vec<String>,
    /// Simulated hours each run goes, from the town's start
    #[arg(long, default_value_t = 2.0)]
    hours: f64,
    /// The seed of every run
    #[arg(long = "run-seed", default_value_t = 0)]
    run_seed: u64,
    /// A fact to follow, as keywords every memory of it holds (comma-separated); give the flag
    /// once per fact
    #[arg(long, value_name = "KEYWORDS")]
    spread: Vec<String>,
    /// Questions to ask every agent (a TOML file of `[[question]]` with `ask` and `expect`,
    /// as `hamlet research quiz` reads), on scratch forks, each answer scored by the share of
    /// `expect`'s words it holds
    #[arg(long, value_name = "FILE")]
    questions: Option<PathBuf>,
    /// Ask the questions every so much simulated time from the start (30m, 2h), and at the
    /// end [default: at the end only]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    every: Option<u64>,
    /// Keep each run's store in DIR/<n>-<assignment> (a new directory) [default: temporary
    /// stores, removed]
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// How to write the comparison
    #[arg(long, value_enum, default_value = "table")]
    format: TableFormat,
    #[command(flatten)]
    llm: LlmArgs,
}

/// Which model each agent thinks with in one run.
#[derive(Clone, Debug, PartialEq)]
struct Assignment {
    /// As given.
    label: String,
    /// The model of every agent not named.
    everyone: Option<String>,
    /// Personas named, each with its model.
    each: Vec<(String, String)>,
}

/// Parses `small`, `Delphine Ashcombe=small`, `default,Delphine Ashcombe=small`.
fn parse_assignment(text: &str) -> Result<Assignment, String> {
    let mut a = Assignment { label: text.trim().to_owned(), everyone: None, each: Vec::new() };
    for part in text.split(',').map(str::trim) {
        match part.split_once('=') {
            _ if part.is_empty() => {
                return Err(format!("--assign `{text}`: an empty part between commas"));
            }
            Some((persona, model)) => {
                let (persona, model) = (persona.trim(), model.trim());
                if persona.is_empty() || model.is_empty() {
                    return Err(format!("--assign `{text}`: `{part}` is not PERSONA=MODEL"));
                }
                if a.each.iter().any(|(p, _)| p.eq_ignore_ascii_case(persona)) {
                    return Err(format!("--assign `{text}`: {persona} is named twice"));
                }
                a.each.push((persona.to_owned(), model.to_owned()));
            }
            None if a.everyone.is_some() => {
                return Err(format!(
                    "--assign `{text}`: two models for everyone else; name one, and persona=model for the rest"
                ));
            }
            None => a.everyone = Some(part.to_owned()),
        }
    }
    Ok(a)
}

impl Assignment {
    /// The town with each persona's model set; an error naming a persona the town lacks.
    fn apply(&self, town: &Definition) -> anyhow::Result<Definition> {
        let mut town = town.clone();
        for (persona, _) in &self.each {
            if !town.personas.iter().any(|p| p.name.eq_ignore_ascii_case(persona)) {
                let all: Vec<&str> = town.personas.iter().map(|p| p.name.as_str()).collect();
                anyhow::bail!(
                    "--assign `{}`: no persona `{persona}` among the agents run; they are: {}",
                    self.label,
                    all.join(", ")
                );
            }
        }
        for p in &mut town.personas {
            let named = self.each.iter().find(|(n, _)| n.eq_ignore_ascii_case(&p.name));
            if let Some(model) = named.map(|(_, m)| m).or(self.everyone.as_ref()) {
                p.model = Some(model.clone());
            }
        }
        Ok(town)
    }

    /// Every model it names.
    fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = self.everyone.iter().cloned().collect();
        out.extend(self.each.iter().map(|(_, m)| m.clone()));
        out.sort();
        out.dedup();
        out
    }

    /// A directory name: its number and its words.
    fn dir_name(&self, n: usize) -> String {
        let mut slug = String::new();
        for c in self.label.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug: String = slug.trim_matches('-').chars().take(40).collect();
        format!("{n}-{slug}")
    }
}

/// One model's row in one run: [`ModelRow`] and what the bench adds to it.
#[derive(Debug, Serialize)]
struct Compared {
    assignment: String,
    #[serde(flatten)]
    row: ModelRow,
    /// The whole run's wall time per agent-hour (shared by every model of a mixed run).
    wall_minutes_per_agent_hour: f64,
    /// The mean score of its agents' scored answers, if any were asked.
    quiz_score: Option<f64>,
    /// Its agents' scored answers.
    quiz_answers: u32,
}

pub fn models(a: ModelsArgs) -> anyhow::Result<Outcome> {
    let (file, settings) = a.llm.settings()?;
    if !(a.hours.is_finite() && a.hours > 0.0) {
        anyhow::bail!("--hours must be a positive number of simulated hours, not {}", a.hours);
    }
    if a.every.is_some() && a.questions.is_none() {
        anyhow::bail!("--every says when to ask --questions, and no --questions file is given");
    }
    let spreads: Vec<Vec<String>> = a
        .spread
        .iter()
        .map(|s| s.split(',').map(|w| w.trim().to_owned()).filter(|w| !w.is_empty()).collect())
        .collect();
    if spreads.iter().any(Vec::is_empty) {
        anyhow::bail!("--spread needs at least one keyword");
    }
    if spreads.len() > HEARD.len() {
        anyhow::bail!("follow at most {} facts at once (--spread)", HEARD.len());
    }
    let quiz = a.questions.as_deref().map(read_quiz).transpose()?;
    let mut town = match &a.town {
        Some(path) => hamlet_engine::town::load(path),
        None => Definition::parse("willowmere.toml", WILLOWMERE),
    }
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    super::super::run::choose_agents(&mut town, &a.agents)?;
    let assignments: Vec<Assignment> = a
        .assign
        .iter()
        .map(|s| parse_assignment(s))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    // Every name and persona checked before any model is loaded.
    let var = |k: &str| std::env::var(k).ok();
    let mut towns = Vec::new();
    for assignment in &assignments {
        for name in assignment.models() {
            config::model_settings(&settings, &file, &name, &var)?;
        }
        towns.push(assignment.apply(&town)?);
    }
    let (root, temporary) = match &a.store {
        Some(dir) if dir.exists() && dir.read_dir().map_or(true, |mut d| d.next().is_some()) => {
            anyhow::bail!("{} exists and is not empty: give a new directory", dir.display())
        }
        Some(dir) => (dir.clone(), false),
        None => {
            (std::env::temp_dir().join(format!("hamlet-bench-models-{}", std::process::id())), true)
        }
    };
    let outcome =
        compare(&a, &file, &settings, &assignments, towns, &spreads, quiz.as_ref(), &root);
    if temporary {
        let _ = std::fs::remove_dir_all(&root);
    }
    let rows = outcome?;
    let n_agents = town.personas.len();
    if a.format == TableFormat::Table {
        println!("hamlet bench models");
        println!("machine: {}", super::machine());
        println!(
            "town: {}, {n_agents} agents, {} simulated hours from the start, seed {}",
            town.name, a.hours, a.run_seed
        );
        println!("reproduce: {}", reproduce());
    }
    let mut header = vec![
        "assignment",
        "model",
        "answered by",
        "agents",
        "calls/agent-h",
        "prompt tok/agent-h",
        "completion tok/agent-h",
        "cached",
        "cost $",
        "failed tries",
        "fallbacks",
        "lines",
        "line faults/100",
        "actions",
        "action faults/100",
        "goal progress",
        "goals reached",
    ];
    header.extend(&HEARD[..spreads.len()]);
    header.extend(["quiz", "wall min/agent-h"]);
    let table = Table::of(&header, &rows, |c| {
        let r = &c.row;
        let per_hour = |n: u64| format!("{:.0}", n as f64 / r.agent_hours.max(1e-9));
        let mut cells = vec![
            c.assignment.clone(),
            r.model.clone(),
            r.answered_by.join(" "),
            r.agents.to_string(),
            format!("{:.1}", r.calls_per_agent_hour()),
            per_hour(r.prompt_tokens),
            per_hour(r.completion_tokens),
            format!("{:.0}%", 100.0 * r.cached_tokens as f64 / r.prompt_tokens.max(1) as f64),
            format!("{:.4}", r.money),
            r.failures.to_string(),
            r.fallbacks.to_string(),
            r.believability.lines.to_string(),
            format!("{:.1}", r.line_faults()),
            r.believability.actions.to_string(),
            format!("{:.1}", r.action_faults()),
            r.goal_progress.map(|p| format!("{:.0}%", 100.0 * p)).unwrap_or_else(|| "-".into()),
            if r.goals_measured == 0 {
                "-".into()
            } else {
                format!("{}/{}", r.goals_reached, r.goals_measured)
            },
        ];
        cells.extend(r.heard.iter().map(|h| format!("{h}/{}", r.agents)));
        cells.push(c.quiz_score.map_or_else(|| "-".into(), |s| format!("{s:.2}")));
        cells.push(format!("{:.2}", c.wall_minutes_per_agent_hour));
        cells
    });
    write_table(a.format, &table, &rows)?;
    if a.format == TableFormat::Table {
        for (column, keywords) in HEARD.iter().zip(&a.spread) {
            println!("{column}: its agents holding a memory with every word of `{keywords}`");
        }
    }
    if !temporary && a.format == TableFormat::Table {
        println!("the runs are in {} (one store each; hamlet view --store DIR)", root.display());
    }
    Ok(Outcome::Done)
}

/// The command line that made this, quoted for a shell.
fn reproduce() -> String {
    let quoted: Vec<String> = std::env::args()
        .map(|arg| {
            if !arg.is_empty()
                && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@".contains(c))
            {
                arg
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}

/// Runs every assignment in turn, each into its own store under `root`, and measures it.
#[expect(clippy::too_many_arguments, reason = "one call, the command's parts")]
fn compare(
    a: &ModelsArgs,
    file: &config::ConfigFile,
    settings: &config::Settings,
    assignments: &[Assignment],
    towns: Vec<Definition>,
    spreads: &[Vec<String>],
    quiz: Option<&super::super::research::Quiz>,
    root: &Path,
) -> anyhow::Result<Vec<Compared>> {
    let mut out = Vec::new();
    for (i, (assignment, town)) in assignments.iter().zip(towns).enumerate() {
        let dir = root.join(assignment.dir_name(i + 1));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        eprintln!("run {} of {}: {}", i + 1, assignments.len(), assignment.label);
        // A run of one model has it for its own (calls for no agent included).
        let run_settings = match &assignment.everyone {
            Some(name) if assignment.each.is_empty() => {
                config::model_settings(settings, file, name, &|k| std::env::var(k).ok())?
            }
            _ => settings.clone(),
        };
        let gateway =
            super::super::llm::gateway_with_models(file, &run_settings, &assignment.models())?;
        let rt =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let (events, wall, answers) = rt.block_on(async {
            let store = super::super::store_at(&dir)?;
            let began = super::stopwatch();
            let sim = Sim::start(
                store,
                "main",
                town,
                a.run_seed,
                gateway.clone(),
                SimSettings::default(),
            )
            .await?;
            let sim = run_for(sim, a.hours, &assignment.label).await?;
            let wall = began.elapsed().as_secs_f64();
            let branch = sim.branch();
            let head = sim.store().branch(branch).map_or(0, |b| b.head_seq);
            let events = sim.store().events(branch, 0, head)?;
            let answers = match quiz {
                Some(quiz) => ask_quiz(sim.into_store(), &events, quiz, a.every, &gateway).await?,
                None => Vec::new(),
            };
            anyhow::Ok((events, wall, answers))
        })?;
        let prices = &file.prices;
        let rows = model_rows(&events, spreads, prices);
        let agent_hours: f64 = rows.iter().map(|r| r.agent_hours).sum();
        let model_of = models_of(&events);
        for row in rows {
            let scores: Vec<f64> = answers
                .iter()
                .filter(|(agent, _)| model_of.get(agent) == Some(&row.model))
                .filter_map(|(_, s)| *s)
                .collect();
            out.push(Compared {
                assignment: assignment.label.clone(),
                quiz_score: (!scores.is_empty())
                    .then(|| scores.iter().sum::<f64>() / scores.len() as f64),
                quiz_answers: scores.len() as u32,
                wall_minutes_per_agent_hour: wall / 60.0 / agent_hours.max(1e-9),
                row,
            });
        }
    }
    Ok(out)
}

/// Each agent's model, as its joining recorded it (`default` without one).
fn models_of(events: &[hamlet_log::Event]) -> std::collections::BTreeMap<AgentId, String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => {
                let m = j.traits.iter().find(|(k, _)| k == hamlet_engine::town::MODEL_TRAIT);
                Some((j.agent, m.map_or_else(|| "default".to_owned(), |m| m.1.clone())))
            }
            _ => None,
        })
        .collect()
}

/// Steps `sim` to `hours` from the town's start (the step under way finished), with a bar.
async fn run_for(
    mut sim: Sim<FsStorage>,
    hours: f64,
    label: &str,
) -> anyhow::Result<Sim<FsStorage>> {
    let per_step = u64::from(sim.definition().seconds_per_step.max(1));
    let target = ((hours * 3600.0) / per_step as f64).ceil().max(1.0) as u64;
    let bar = indicatif::ProgressBar::new(target);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} steps · {msg} · ETA {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    while sim.state().step < target || sim.mid_step() {
        sim.step().await?;
        bar.set_position(sim.state().step.min(target));
        bar.set_message(format!("{label} · {}", sim_time(sim.state().sim_time_secs)));
    }
    bar.finish_and_clear();
    Ok(sim)
}

/// Asks every agent the quiz on a scratch fork of `main` at each moment (every `every` from
/// the first agent's joining, and the end): each answer's agent and score.
async fn ask_quiz(
    mut store: Store,
    events: &[hamlet_log::Event],
    quiz: &super::super::research::Quiz,
    every: Option<u64>,
    gateway: &hamlet_gateway::Gateway,
) -> anyhow::Result<Vec<(AgentId, Option<f64>)>> {
    let start = events
        .iter()
        .find(|e| matches!(e.body, Body::AgentJoined(_)))
        .map_or(0, hamlet_log::Event::sim_time_secs);
    let end = events.last().map_or(0, hamlet_log::Event::sim_time_secs);
    let mut moments: Vec<u64> = match every {
        Some(every) => (1u64..)
            .map_while(|i| start.checked_add(i.checked_mul(every)?))
            .take_while(|t| *t < end)
            .collect(),
        None => Vec::new(),
    };
    moments.push(end);
    let agents: Vec<AgentId> = models_of(events).into_keys().collect();
    let mut out = Vec::new();
    for at in moments {
        let main = store.find_branch("main")?;
        let seq = seq_for(&store, &main, Moment::Time(at))?;
        let name = format!("quiz-{}", sim_time(at).replace([' ', ':'], "-"));
        store.fork(main.id, seq, &name)?;
        let id = store.find_branch(&name)?.id;
        let mut sim = Sim::resume(store, id, gateway.clone(), SimSettings::default()).await?;
        for agent in &agents {
            for question in &quiz.question {
                let answer = sim.interview(*agent, question.ask.trim(), false).await?;
                out.push((*agent, quiz_score(&answer, &question.expect)));
            }
        }
        store = sim.into_store();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_parse_a_model_for_everyone_and_one_per_persona() {
        let a = parse_assignment("small").unwrap();
        assert_eq!((a.everyone.as_deref(), a.each.len()), (Some("small"), 0));
        let a = parse_assignment(" default , Delphine Ashcombe = small ").unwrap();
        assert_eq!(a.everyone.as_deref(), Some("default"));
        assert_eq!(a.each, vec![("Delphine Ashcombe".to_owned(), "small".to_owned())]);
        assert_eq!(a.models(), vec!["default".to_owned(), "small".to_owned()]);
        assert_eq!(a.dir_name(3), "3-default-delphine-ashcombe-small");
        for bad in ["", "a,,b", "a,b", "=small", "Delphine=", "X=a,x=b"] {
            assert!(parse_assignment(bad).unwrap_err().starts_with("--assign"), "{bad}");
        }
    }

    #[test]
    fn an_assignment_sets_each_persona_and_refuses_one_the_town_lacks() {
        let town = Definition::parse("w.toml", WILLOWMERE).unwrap();
        let first = town.personas[0].name.clone();
        let a = parse_assignment(&format!("default,{}=small", first.to_uppercase())).unwrap();
        let set = a.apply(&town).unwrap();
        assert_eq!(set.personas[0].model.as_deref(), Some("small"));
        assert!(set.personas[1..].iter().all(|p| p.model.as_deref() == Some("default")));
        let only = parse_assignment(&format!("{first}=small")).unwrap().apply(&town).unwrap();
        assert_eq!(
            only.personas[1].model, town.personas[1].model,
            "the others as the town has them"
        );
        let err = parse_assignment("Nobody Here=small").unwrap().apply(&town).unwrap_err();
        assert!(err.to_string().contains("no persona `Nobody Here`"), "{err}");
    }
}
