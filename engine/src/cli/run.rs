//! `hamlet run`: a town, simulated with the configured model, into a store.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::config;

use super::llm::LlmArgs;
use super::Outcome;

/// `hamlet run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The town file
    #[arg(long, value_name = "FILE", default_value = "engine/towns/willowmere.toml")]
    town: PathBuf,
    /// Simulated hours to run
    #[arg(long, default_value_t = 2.0)]
    hours: f64,
    /// The store to write (created; must not hold a branch of the same name)
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch to start
    #[arg(long, default_value = "main")]
    branch: String,
    /// The run's seed
    #[arg(long = "run-seed", default_value_t = 0)]
    run_seed: u64,
    #[command(flatten)]
    llm: LlmArgs,
}

pub fn run(a: RunArgs) -> anyhow::Result<Outcome> {
    let town = Definition::load(&a.town).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (_, settings) = a.llm.settings()?;
    let llm = config::llm_backend(&settings)?;
    let embedder = config::embed_backend(&settings)?;
    let gateway = config::gateway(&settings, llm, embedder);
    std::fs::create_dir_all(&a.store)
        .with_context(|| format!("cannot create {}", a.store.display()))?;
    let store = Store::open(&a.store)?;
    let steps =
        ((a.hours * 3600.0) / f64::from(town.seconds_per_step.max(1))).ceil().max(1.0) as u64;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let bar = indicatif::ProgressBar::new(steps);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] step {pos}/{len} · {elapsed} · ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let hash = rt.block_on(async {
        bar.set_message("seed memories");
        let mut sim =
            Sim::start(store, &a.branch, town, a.run_seed, gateway, SimSettings::default()).await?;
        for _ in 0..steps {
            sim.step().await?;
            let s = sim.state();
            bar.set_message(hamlet_engine::describe::sim_time(s.sim_time_secs));
            bar.inc(1);
        }
        anyhow::Ok(sim.state().state_hash())
    })?;
    bar.finish_and_clear();
    println!("ran {steps} steps into {} (branch {}); state {hash}", a.store.display(), a.branch);
    println!("export it: hamlet export --store {} --out run.hamlet", a.store.display());
    Ok(Outcome::Done)
}
