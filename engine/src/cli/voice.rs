//! `hamlet interview` and `hamlet inner-voice`: the user's voice in a stored run.

use std::path::PathBuf;

use clap::Args;
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_gateway::config;

use super::llm::LlmArgs;
use super::Outcome;

/// `hamlet interview`.
#[derive(Debug, Args)]
pub struct InterviewArgs {
    /// The question
    question: String,
    /// The agent asked (its name, any case)
    #[arg(long)]
    agent: String,
    /// The store holding the run
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch whose head the agent answers from
    #[arg(long, default_value = "main")]
    branch: String,
    /// Let the agent keep the exchange as a memory: the interview is written on the branch
    /// itself and shapes what the agent does next. Without it, the interview is written on
    /// a new fork of the branch's head, and the run is untouched.
    #[arg(long)]
    remember: bool,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet inner-voice`.
#[derive(Debug, Args)]
pub struct InnerVoiceArgs {
    /// The instruction, as the agent's own thought (e.g. "you want to throw a party")
    instruction: String,
    /// The agent who hears it (its name, any case)
    #[arg(long)]
    agent: String,
    /// The store holding the run
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch written (the agent re-plans from its head; `hamlet run --resume` goes on)
    #[arg(long, default_value = "main")]
    branch: String,
    #[command(flatten)]
    llm: LlmArgs,
}

/// Opens the run on `branch`, forking its head into a fresh branch first when `fork`.
fn open(
    store_dir: &PathBuf,
    branch: &str,
    fork: bool,
    llm: &LlmArgs,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<(Sim<hamlet_engine::store::FsStorage>, String)> {
    let (_, settings) = llm.settings()?;
    let mut store = Store::open(store_dir)?;
    let info = store.find_branch(branch)?;
    let (id, name) = if fork {
        let taken: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
        let name = (1..)
            .map(|n| format!("{}-interview-{n}", info.name))
            .find(|n| !taken.contains(n))
            .unwrap_or_default();
        (store.fork(info.id, info.head_seq, &name)?, name)
    } else {
        (info.id, info.name.clone())
    };
    let gateway = config::gateway(
        &settings,
        config::llm_backend(&settings)?,
        config::embed_backend(&settings)?,
    );
    let sim = rt.block_on(Sim::resume(store, id, gateway, SimSettings::default()))?;
    Ok((sim, name))
}

fn agent_of<S: hamlet_engine::store::Storage>(
    sim: &Sim<S>,
    name: &str,
) -> anyhow::Result<hamlet_log::event::AgentId> {
    sim.agent_named(name).ok_or_else(|| {
        let names: Vec<&str> = sim.state().agents.values().map(|a| a.name.as_str()).collect();
        anyhow::anyhow!("no agent named `{name}`; the town has {}", names.join(", "))
    })
}

pub fn interview(a: InterviewArgs) -> anyhow::Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let (mut sim, branch) = open(&a.store, &a.branch, !a.remember, &a.llm, &rt)?;
    let agent = agent_of(&sim, &a.agent)?;
    let answer = rt.block_on(sim.interview(agent, &a.question, a.remember))?;
    let name = &sim.state().agents[&agent].name;
    if answer.is_empty() {
        println!("{name} gave no answer (the model's answer did not validate; see `hamlet log --store {} --branch {branch} --kind LlmFailed`)", a.store.display());
    } else {
        println!("{name}: {answer}");
    }
    if a.remember {
        println!("written on branch {branch}; {name} remembers it");
    } else {
        println!("written on branch {branch} (a fork of {}); the run is untouched", a.branch);
    }
    Ok(Outcome::Done)
}

pub fn inner_voice(a: InnerVoiceArgs) -> anyhow::Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let (mut sim, branch) = open(&a.store, &a.branch, false, &a.llm, &rt)?;
    let agent = agent_of(&sim, &a.agent)?;
    let intention = rt.block_on(sim.inner_voice(agent, &a.instruction))?;
    println!("{intention}");
    println!(
        "written on branch {branch}; go on with `hamlet run --resume --store {} --branch {branch}`",
        a.store.display()
    );
    Ok(Outcome::Done)
}
