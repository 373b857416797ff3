//! `hamlet run`: a town, simulated with the configured model, into a store; `--resume`
//! goes on with a run that stopped. Ctrl-C stops after the step under way (a second Ctrl-C
//! stops at once; what was committed stays, and `--resume` finishes the step).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use hamlet_engine::describe::sim_time;
use hamlet_engine::ops;
use hamlet_engine::rulebook::{Mechanism, Rulebook};
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::town::{Definition, WILLOWMERE};

use super::llm::LlmArgs;
use super::Outcome;

/// `hamlet run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The town file [default: Willowmere, the shipped town] (not with --resume: the run
    /// goes on in the town it recorded)
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    town: Option<PathBuf>,
    /// Simulated hours, counted from the town's start (with --resume too: give the same
    /// number to finish the run, a larger one to extend it)
    #[arg(long, default_value_t = 2.0)]
    hours: f64,
    /// The store to write (created if missing)
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch to start (or, with --resume, to go on with)
    #[arg(long, default_value = "main")]
    branch: String,
    /// Only these of the town's personas join (names, comma-separated) [default: all] (not
    /// with --resume: the run goes on with the agents it has)
    #[arg(long, value_delimiter = ',', conflicts_with = "resume")]
    agents: Vec<String>,
    /// The run's seed
    #[arg(long = "run-seed", default_value_t = 0)]
    run_seed: u64,
    /// Go on with the run on --branch in --store where it stopped (after Ctrl-C, a crash,
    /// or to run it longer); nothing committed is redone
    #[arg(long)]
    resume: bool,
    /// Leave these social mechanisms out of a new run (comma-separated: currently,
    /// commitments, intentions, validators, script, invitations, hosting, inviting), to measure what each one
    /// buys; the run records it and keeps to it when resumed (not with --resume)
    #[arg(long, value_delimiter = ',', value_parser = mechanism, conflicts_with = "resume")]
    without: Vec<Mechanism>,
    #[command(flatten)]
    llm: LlmArgs,
}

/// A mechanism by name, for `--without`.
fn mechanism(name: &str) -> Result<Mechanism, String> {
    Mechanism::named(name).ok_or_else(|| {
        let known: Vec<&str> = Mechanism::ALL.iter().map(|m| m.name()).collect();
        format!("no mechanism `{name}`; the mechanisms are {}", known.join(", "))
    })
}

/// Keeps only the personas named in `names` (any case), in the town's order; all of them
/// when `names` is empty.
pub(super) fn choose_agents(town: &mut Definition, names: &[String]) -> anyhow::Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let all: Vec<String> = town.personas.iter().map(|p| p.name.clone()).collect();
    for name in names {
        if !all.iter().any(|p| p.eq_ignore_ascii_case(name.trim())) {
            anyhow::bail!(
                "--agents: no persona `{name}` in {}; it has: {}",
                town.name,
                all.join(", ")
            );
        }
    }
    town.personas.retain(|p| names.iter().any(|n| p.name.eq_ignore_ascii_case(n.trim())));
    Ok(())
}

pub fn run(a: RunArgs) -> anyhow::Result<Outcome> {
    let (file, settings) = a.llm.settings()?;
    if !(a.hours.is_finite() && a.hours > 0.0) {
        anyhow::bail!("--hours must be a positive number of simulated hours, not {}", a.hours);
    }
    if a.resume && !a.store.is_dir() {
        anyhow::bail!("no store at {} to resume", a.store.display());
    }
    std::fs::create_dir_all(&a.store)
        .with_context(|| format!("cannot create {}", a.store.display()))?;
    let store = super::store_at(&a.store)?;
    let existing = store.find_branch(&a.branch).ok();
    let town = match (&existing, a.resume) {
        (Some(_), false) => anyhow::bail!(
            "{} already holds a branch `{}`: go on with it with --resume, or start another with --branch NAME",
            a.store.display(),
            a.branch
        ),
        (None, true) => anyhow::bail!(
            "{} holds no branch `{}` to resume; it has: {}",
            a.store.display(),
            a.branch,
            store.branches().into_iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ),
        (None, false) => {
            let mut town = match &a.town {
                Some(path) => hamlet_engine::town::load(path),
                None => Definition::parse("willowmere.toml", WILLOWMERE),
            }
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            choose_agents(&mut town, &a.agents)?;
            Some(town)
        }
        (Some(_), true) => None,
    };
    // The models the agents think with besides the run's: from the town file, or from the
    // branch a run resumes.
    let models = match (&town, &existing) {
        (Some(town), _) => {
            let mut names: Vec<String> =
                town.personas.iter().filter_map(|p| p.model.clone()).collect();
            names.sort();
            names.dedup();
            names
        }
        (None, Some(info)) => super::llm::models_named(&store.events(info.id, 0, info.head_seq)?),
        (None, None) => Vec::new(),
    };
    super::llm::say_memory_plan(&settings);
    let gateway = super::llm::gateway_with_models(&file, &settings, &models)?;
    let watched = gateway.clone();
    let mut rulebook = Rulebook::CURRENT;
    for m in &a.without {
        rulebook = rulebook.without(*m).map_err(anyhow::Error::msg)?;
    }
    let sim_settings = SimSettings { rulebook, ..SimSettings::default() };

    // Ctrl-C: the first stops after the step under way, the second at once.
    let interrupts = Arc::new(AtomicU8::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let resume = format!(
        "hamlet run --resume --store {} --branch {} --hours {}",
        a.store.display(),
        a.branch,
        a.hours
    );
    {
        let (interrupts, stop, resume) = (interrupts.clone(), stop.clone(), resume.clone());
        rt.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                stop.store(true, Ordering::SeqCst);
                if interrupts.fetch_add(1, Ordering::SeqCst) >= 1 {
                    eprintln!("\nstopped; what was committed is kept: {resume}");
                    std::process::exit(130);
                }
                eprintln!("\nstopping after this step (Ctrl-C again to stop at once)");
            }
        });
    }

    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg}\n  [{bar:30}] step {pos}/{len} · {elapsed} · ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // What the bar says between steps, and the agents' names: the waiting line below adds
    // the calls in flight to it once a second, so a slow server shows what it is doing.
    let said = Arc::new(std::sync::Mutex::new(String::new()));
    let names = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
    // Requests in flight, tries per second over the last ten seconds, and tries that were
    // not their call's first: how busy the server is kept.
    let flow = Arc::new(std::sync::Mutex::new(String::new()));
    {
        let (bar, said, names, flow) = (bar.clone(), said.clone(), names.clone(), flow.clone());
        let terminal = std::io::stderr().is_terminal();
        rt.spawn(async move {
            let mut last_line = 0u64;
            let mut sent: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
            for tick in 1u64.. {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let flights = watched.in_flight();
                let tries = watched.tries();
                sent.push_back(tries.sent);
                if sent.len() > 11 {
                    sent.pop_front();
                }
                let oldest = sent.front().copied().unwrap_or(tries.sent);
                let rate = (tries.sent - oldest) as f64 / (sent.len() - 1).max(1) as f64;
                let flowing = flow_line(flights.len(), rate, tries.again);
                if let Ok(mut f) = flow.lock() {
                    f.clone_from(&flowing);
                }
                let waiting = names.lock().map(|n| waiting_line(&flights, &n)).unwrap_or_default();
                let base = said.lock().map(|s| s.clone()).unwrap_or_default();
                if terminal {
                    bar.set_message(format!("{base}{flowing}{waiting}"));
                } else if flights.first().is_some_and(|f| f.seconds >= 30.0)
                    && tick >= last_line + 30
                {
                    // Without a terminal, a line every 30 s while a call takes that long.
                    last_line = tick;
                    eprintln!("still{}", waiting.trim_start_matches(" ·"));
                }
            }
        });
    }
    let ran = rt.block_on(async {
        let mut sim = match town {
            Some(town) => {
                let seeds = "seed memories: rating and embedding every persona's paragraph";
                if !std::io::stderr().is_terminal() {
                    eprintln!("{seeds}");
                }
                bar.set_message(seeds);
                Sim::start(store, &a.branch, town, a.run_seed, gateway, sim_settings.clone())
                    .await?
            }
            None => {
                let branch = store.find_branch(&a.branch)?.id;
                bar.set_message("resuming");
                Sim::resume(store, branch, gateway, SimSettings::default()).await?
            }
        };
        // Known before the first step ends, so a resumed run's waiting line names its agents.
        if let Ok(mut names) = names.lock() {
            for (id, agent) in &sim.state().agents {
                names.entry(id.0).or_insert_with(|| agent.name.clone());
            }
        }
        let start = sim.definition().start_secs;
        let target = ops::target_step(&sim, ops::Hours::Until(a.hours));
        let first = sim.state().step;
        bar.set_length(target);
        bar.set_position(first.min(target));
        bar.reset_eta();
        let mut spent = ops::RunCost::default();
        let terminal = std::io::stderr().is_terminal();
        let mut last_line = None;
        let end = ops::run_until(&mut sim, target, &stop, |sim, stepped| {
            spent.add(stepped.events, &file.prices);
            let s = sim.state();
            let cost = match spent.money() {
                None => " · cost unknown (no price for a model)".to_owned(),
                Some(money) if money > 0.0 => format!(" · ${money:.4}"),
                Some(_) => String::new(),
            };
            let message = format!(
                "{} ({:.2} h) · {} calls · {} tokens{cost} · {} memories",
                sim_time(s.sim_time_secs),
                s.sim_time_secs.saturating_sub(start) as f64 / 3600.0,
                s.llm.n_requests,
                s.llm.tokens_prompt + s.llm.tokens_completion,
                s.agents.values().map(|x| x.memories.len()).sum::<usize>(),
            );
            // Without a terminal (a log file, CI) the bar is hidden: a line every ten
            // simulated minutes says how far the run is.
            let tenth = s.sim_time_secs / 600;
            if !terminal && last_line != Some(tenth) {
                last_line = Some(tenth);
                let flowing = flow.lock().map(|f| f.clone()).unwrap_or_default();
                eprintln!("step {}/{target} · {message}{flowing}", s.step.min(target));
            }
            if let Ok(mut names) = names.lock() {
                for (id, agent) in &s.agents {
                    names.entry(id.0).or_insert_with(|| agent.name.clone());
                }
            }
            if let Ok(mut said) = said.lock() {
                said.clone_from(&message);
            }
            bar.set_message(message);
            bar.set_position(s.step.min(target));
        })
        .await?;
        let stopped = end == ops::RunEnd::Stopped;
        anyhow::Ok((sim.state().state_hash(), sim.state().step.saturating_sub(first), stopped))
    });
    let (hash, steps, stopped) = match ran {
        Ok(ran) => ran,
        Err(e) => {
            bar.abandon();
            return Err(e.context(format!(
                "the run stopped; what was committed is kept: `{resume}` goes on"
            )));
        }
    };
    bar.finish_and_clear();
    if stopped {
        println!(
            "stopped after {steps} steps into {} (branch {}); state {hash}",
            a.store.display(),
            a.branch
        );
        println!("go on: {resume}");
    } else {
        println!(
            "ran {steps} steps into {} (branch {}); state {hash}",
            a.store.display(),
            a.branch
        );
        println!("export it: hamlet export --store {} --out run.hamlet", a.store.display());
    }
    Ok(Outcome::Done)
}

/// " · 512 in flight · 230.4 tries/s · 17 tried again", or nothing while the server is idle.
pub(crate) fn flow_line(in_flight: usize, tries_per_sec: f64, again: u64) -> String {
    if in_flight == 0 && tries_per_sec == 0.0 {
        return String::new();
    }
    let again = match again {
        0 => String::new(),
        n => format!(" · {n} tried again"),
    };
    format!(" · {in_flight} in flight · {tries_per_sec:.1} tries/s{again}")
}

/// " · waiting on 3 calls, the longest 2 min 10 s (day_plan for Juniper Quill, try 1)", or
/// nothing while no call has waited a second.
pub(crate) fn waiting_line(
    flights: &[hamlet_gateway::InFlight],
    names: &std::collections::BTreeMap<u32, String>,
) -> String {
    let Some(longest) = flights.first().filter(|f| f.seconds >= 1.0) else {
        return String::new();
    };
    let who =
        longest.agent.map(|a| names.get(&a.0).cloned().unwrap_or_else(|| format!("agent {}", a.0)));
    let secs = longest.seconds as u64;
    let waited =
        if secs >= 60 { format!("{} min {} s", secs / 60, secs % 60) } else { format!("{secs} s") };
    format!(
        " · waiting on {} call{}, the longest {waited} ({}{}, try {})",
        flights.len(),
        if flights.len() == 1 { "" } else { "s" },
        longest.purpose,
        who.map(|w| format!(" for {w}")).unwrap_or_default(),
        longest.attempt
    )
}
