//! `hamlet interview` and `hamlet inner-voice`: the user's voice in a stored run.

use std::path::{Path, PathBuf};

use clap::Args;
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::FsStorage;
use hamlet_engine::why::CauseIndex;
use hamlet_log::event::AgentId;

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

/// Opens the run on `branch`, forking its head into a fresh branch first when `fork`, and
/// finds `agent` (a name in any case, or a number) when one is named. The store must
/// exist; the agent is checked and the model set up before anything is written. A step
/// stopped part way is left so: [`finish_step`] finishes it, once the change to be made
/// has been checked.
pub(super) fn open(
    store_dir: &Path,
    branch: &str,
    agent: Option<&str>,
    fork: bool,
    llm: &LlmArgs,
    more_models: &[&str],
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<(Sim<FsStorage>, String, Option<AgentId>)> {
    if !store_dir.is_dir() {
        anyhow::bail!("no store at {} (`hamlet run --store DIR` makes one)", store_dir.display());
    }
    let (file, settings) = llm.settings()?;
    let mut store = super::store_at(store_dir)?;
    let info = store.find_branch(branch)?;
    let mut models = super::llm::models_named(&store.events(info.id, 0, info.head_seq)?);
    models.extend(more_models.iter().map(|m| (*m).to_owned()));
    let gateway = super::llm::gateway_with_models(&file, &settings, &models)?;
    let id = match agent {
        Some(agent) => {
            let events = store.events(info.id, 0, info.head_seq)?;
            let history = CauseIndex::new(&events);
            let Some(id) = history.find_agent(agent) else {
                let names: Vec<&str> = history.agents().values().map(String::as_str).collect();
                anyhow::bail!("no agent named `{agent}`; the town has {}", names.join(", "));
            };
            Some(id)
        }
        None => None,
    };
    let (branch_id, name) = if fork {
        let name = hamlet_engine::ops::unused_name(&store, &format!("{}-interview", info.name));
        (store.fork(info.id, info.head_seq, &name)?, name)
    } else {
        (info.id, info.name.clone())
    };
    let sim = rt.block_on(Sim::resume(store, branch_id, gateway, SimSettings::default()))?;
    Ok((sim, name, id))
}

/// Finishes a step the run stopped part way through, so the user's voice or change lands
/// between steps.
pub(super) fn finish_step(
    sim: &mut Sim<FsStorage>,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
    if sim.mid_step() {
        eprintln!("the last step stopped part way; finishing it first");
        while sim.mid_step() {
            rt.block_on(sim.step())?;
        }
    }
    Ok(())
}

/// [`open`] for one agent.
fn open_for(
    store_dir: &Path,
    branch: &str,
    agent: &str,
    fork: bool,
    llm: &LlmArgs,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<(Sim<FsStorage>, String, AgentId)> {
    let (mut sim, name, id) = open(store_dir, branch, Some(agent), fork, llm, &[], rt)?;
    let id = id.ok_or_else(|| anyhow::anyhow!("no agent `{agent}`"))?;
    if !fork {
        finish_step(&mut sim, rt)?;
    }
    Ok((sim, name, id))
}

pub fn interview(a: InterviewArgs) -> anyhow::Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let (mut sim, branch, agent) =
        open_for(&a.store, &a.branch, &a.agent, !a.remember, &a.llm, &rt)?;
    let answer = rt.block_on(sim.interview(agent, &a.question, a.remember))?;
    let name = sim.state().agents.get(&agent).map_or("", |x| x.name.as_str());
    if answer.is_empty() {
        println!(
            "{name} gave no answer (the model's answer did not validate; \
             `hamlet log --store {} --branch {branch} --kind LlmFailed` shows why)",
            a.store.display()
        );
    } else {
        println!("{name}: {answer}");
    }
    match (a.remember, answer.is_empty()) {
        (true, false) => println!("written on branch {branch}; {name} remembers it"),
        (true, true) => println!("written on branch {branch}; there is nothing to remember"),
        (false, _) => {
            println!("written on branch {branch} (a fork of {}); the run is untouched", a.branch)
        }
    }
    Ok(Outcome::Done)
}

pub fn inner_voice(a: InnerVoiceArgs) -> anyhow::Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let (mut sim, branch, agent) = open_for(&a.store, &a.branch, &a.agent, false, &a.llm, &rt)?;
    let (intention, replanned) = rt.block_on(sim.inner_voice(agent, &a.instruction))?;
    println!("{intention}");
    if replanned {
        println!("(re-planned from now)");
    } else {
        println!("(nothing under way to re-plan: the next day plan is made with it in mind)");
    }
    println!(
        "written on branch {branch}; go on with `hamlet run --resume --store {} --branch {branch}`",
        a.store.display()
    );
    Ok(Outcome::Done)
}
