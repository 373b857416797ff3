//! `hamlet set-object`, `hamlet happen`, `hamlet edit-persona`, `hamlet add-agent`,
//! `hamlet add-building`, `hamlet mayor`:
//! the user changes the town on a branch — usually a fork (`hamlet fork`), so the run it
//! came from stays as it was — and `hamlet run --resume --branch` goes on from the change.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use hamlet_log::event::{MayorAct, Tile};

use super::llm::LlmArgs;
use super::voice::{finish_step, open};
use super::Outcome;

/// Where the change is written.
#[derive(Debug, Args)]
pub struct Target {
    /// The store holding the run
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The branch changed (fork first with `hamlet fork` to keep the run as it was)
    #[arg(long, default_value = "main")]
    branch: String,
}

/// `hamlet set-object`.
#[derive(Debug, Args)]
pub struct SetObjectArgs {
    /// The object's address, `sector:arena:object` (`hamlet town show` lists them)
    address: String,
    /// Its new state, in words ("out of order", "brewing coffee")
    state: String,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet happen`.
#[derive(Debug, Args)]
pub struct HappenArgs {
    /// What is going on, in words ("a fire alarm is ringing")
    text: String,
    /// Where: a sector ("Marigold café") or a `sector:arena` (`hamlet town show` lists them)
    #[arg(long)]
    place: String,
    /// For how long from the branch's head: 90s, 30m, 2h
    #[arg(long = "for", value_name = "DURATION", default_value = "1h",
          value_parser = super::research::parse_duration)]
    lasts: u64,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet edit-persona`.
#[derive(Debug, Args)]
pub struct EditPersonaArgs {
    /// The new seed paragraph: statements separated by `;` (give it, `--thinks-with`, or both)
    #[arg(required_unless_present = "thinks_with")]
    persona: Option<String>,
    /// The agent (name or number)
    #[arg(long)]
    agent: String,
    /// The model it thinks with from now on: `default` or `small` (the embedded models), or
    /// a profile of the config file (`[models.NAME]`); `--model` is the one this change asks
    #[arg(long = "thinks-with", value_name = "NAME")]
    thinks_with: Option<String>,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet add-agent`.
#[derive(Debug, Args)]
pub struct AddAgentArgs {
    /// The seed paragraph: statements separated by `;`
    persona: String,
    /// The new agent's name
    #[arg(long)]
    name: String,
    /// Where it lives and starts, a `sector:arena` of the town
    #[arg(long)]
    home: String,
    /// How it thinks: full, no_reflection or no_reflection_no_planning
    #[arg(long, default_value = "full")]
    strategy: String,
    /// Its cash, in cents
    #[arg(long, default_value_t = 2000)]
    cash_cents: i64,
    /// The model it thinks with: `default` or `small` (the embedded models), or a profile of
    /// the config file (`[models.NAME]`) [default: the run's; `--model` is the one this change
    /// asks]
    #[arg(long = "thinks-with", value_name = "NAME")]
    thinks_with: Option<String>,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// `hamlet add-building`.
#[derive(Debug, Args)]
pub struct AddBuildingArgs {
    /// The sector copied: its rooms, walls, doors, objects and prices
    #[arg(long)]
    template: String,
    /// The new sector's name
    #[arg(long)]
    name: String,
    /// The north-west corner of its walls, `X,Y`; past the map's edge the map grows
    #[arg(long, value_parser = parse_tile)]
    at: Tile,
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// Parses `X,Y`.
pub fn parse_tile(text: &str) -> Result<Tile, String> {
    let err = || format!("`{text}` is not a tile; write `X,Y` (e.g. 74,2)");
    let (x, y) = text.split_once(',').ok_or_else(err)?;
    Ok(Tile { x: x.trim().parse().map_err(|_| err())?, y: y.trim().parse().map_err(|_| err())? })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?)
}

fn go_on(t: &Target, branch: &str) {
    println!(
        "written on branch {branch}; go on with `hamlet run --resume --store {} --branch {branch}`",
        t.store.display()
    );
}

pub fn set_object(a: SetObjectArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let (mut sim, branch, _) =
        open(&a.target.store, &a.target.branch, None, false, &a.llm, &[], &rt)?;
    sim.check_set_object(&a.address, &a.state)?;
    finish_step(&mut sim, &rt)?;
    sim.set_object(&a.address, &a.state)?;
    println!("{} is now {}", a.address, a.state);
    go_on(&a.target, &branch);
    Ok(Outcome::Done)
}

pub fn happen(a: HappenArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let (mut sim, branch, _) =
        open(&a.target.store, &a.target.branch, None, false, &a.llm, &[], &rt)?;
    let until =
        |sim: &hamlet_engine::sim::Sim<_>| sim.state().sim_time_secs.saturating_add(a.lasts);
    sim.check_happen(&a.place, &a.text, until(&sim))?;
    finish_step(&mut sim, &rt)?;
    let (from, until) = (sim.state().sim_time_secs, until(&sim));
    sim.happen(&a.place, &a.text, until)?;
    println!(
        "from {} to {}, at {}: {}",
        hamlet_engine::describe::sim_time(from),
        hamlet_engine::describe::sim_time(until),
        a.place,
        a.text.trim()
    );
    println!("whoever is there notices it when the run goes on");
    go_on(&a.target, &branch);
    Ok(Outcome::Done)
}

pub fn edit_persona(a: EditPersonaArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let target = &a.target;
    let more: Vec<&str> = a.thinks_with.as_deref().into_iter().collect();
    let (mut sim, branch, agent) =
        open(&target.store, &target.branch, Some(&a.agent), false, &a.llm, &more, &rt)?;
    let agent = agent.ok_or_else(|| anyhow::anyhow!("no agent `{}`", a.agent))?;
    if let Some(persona) = &a.persona {
        sim.check_edit_persona(agent, persona)?;
    }
    if let Some(model) = &a.thinks_with {
        sim.check_set_model(agent, model)?;
    }
    finish_step(&mut sim, &rt)?;
    let name = sim.state().agents.get(&agent).map_or("", |x| x.name.as_str()).to_owned();
    if let Some(model) = &a.thinks_with {
        sim.set_model(agent, model)?;
        println!("{name} thinks with the model `{model}` from now on");
    }
    if let Some(persona) = &a.persona {
        let new = rt.block_on(sim.edit_persona(agent, persona))?;
        println!("{name}'s seed paragraph is rewritten; {} new seed memories:", new.len());
        for statement in &new {
            println!("  {statement}");
        }
    }
    go_on(target, &branch);
    Ok(Outcome::Done)
}

pub fn add_agent(a: AddAgentArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let target = &a.target;
    let more: Vec<&str> = a.thinks_with.as_deref().into_iter().collect();
    let (mut sim, branch, _) =
        open(&target.store, &target.branch, None, false, &a.llm, &more, &rt)?;
    let model = a.thinks_with.as_deref();
    sim.check_add_agent(&a.name, &a.persona, &a.home, &a.strategy, a.cash_cents, model)?;
    finish_step(&mut sim, &rt)?;
    let added = sim.add_agent(&a.name, &a.persona, &a.home, &a.strategy, a.cash_cents, model);
    let agent = rt.block_on(added)?;
    println!("{} joins the town at {} (agent {})", a.name, a.home, agent.0);
    go_on(target, &branch);
    Ok(Outcome::Done)
}

pub fn add_building(a: AddBuildingArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let target = &a.target;
    let (mut sim, branch, _) = open(&target.store, &target.branch, None, false, &a.llm, &[], &rt)?;
    sim.check_add_building(&a.template, &a.name, a.at)?;
    finish_step(&mut sim, &rt)?;
    sim.add_building(&a.template, &a.name, a.at)?;
    let grid = &sim.definition().grid;
    println!(
        "{} (a copy of {}) stands at ({}, {}); the map is {} × {} tiles",
        a.name,
        a.template,
        a.at.x,
        a.at.y,
        grid.width(),
        grid.height()
    );
    go_on(target, &branch);
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_parse_as_x_comma_y() {
        assert_eq!(parse_tile("74, 2"), Ok(Tile { x: 74, y: 2 }));
        for bad in ["74", "x,2", "1,2,3", "-1,0", "70000,0"] {
            assert!(parse_tile(bad).unwrap_err().contains("X,Y"), "{bad}");
        }
    }
}

/// `hamlet mayor`: the person at the viewer acts as the town's mayor.
#[derive(Debug, Args)]
pub struct MayorArgs {
    #[command(subcommand)]
    act: MayorCommand,
}

/// Where a mayor's act is written, and the model flags every command takes.
#[derive(Debug, Args)]
pub struct On {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    llm: LlmArgs,
}

/// What the mayor does.
#[derive(Debug, Subcommand)]
pub enum MayorCommand {
    /// Post a job at a sector, paid from the treasury for each hour worked; it is offered to
    /// one agent at a time until one takes it
    PostJob {
        /// Where the work is: a sector
        #[arg(long)]
        sector: String,
        /// The job, in words ("baker")
        #[arg(long)]
        title: String,
        /// The wage per hour, in dollars (15 or 15.50)
        #[arg(long, value_parser = dollars)]
        wage: i64,
        #[command(flatten)]
        on: On,
    },
    /// Found a business: a copy of a template sector on one of the town file's sites, paid
    /// from the treasury
    Found {
        /// The sector copied (`hamlet town show` lists them)
        #[arg(long)]
        template: String,
        /// The new business's name
        #[arg(long)]
        name: String,
        /// The site (the town file's `[[mayor.site]]`)
        #[arg(long)]
        site: String,
        #[command(flatten)]
        on: On,
    },
    /// Set the wage of work at a sector from now on
    SetWage {
        /// The sector
        #[arg(long)]
        sector: String,
        /// The wage per hour, in dollars
        #[arg(long, value_parser = dollars)]
        wage: i64,
        #[command(flatten)]
        on: On,
    },
    /// Call everyone to a meeting at a place and time
    Meeting {
        #[command(flatten)]
        errand: Errand,
        #[command(flatten)]
        on: On,
    },
    /// Give one agent a task at a place and time
    Task {
        /// To whom (name or number)
        #[arg(long)]
        agent: String,
        #[command(flatten)]
        errand: Errand,
        #[command(flatten)]
        on: On,
    },
}

/// What a meeting or a task is, where and when.
#[derive(Debug, Args)]
pub struct Errand {
    /// What it is about
    #[arg(long)]
    what: String,
    /// Where: a sector or `sector:arena`
    #[arg(long)]
    place: String,
    /// When: `day<N> HH:MM` or `HH:MM` (day 0)
    #[arg(long, value_parser = super::parse_moment)]
    at: hamlet_engine::history::Moment,
    /// How long
    #[arg(long = "for", value_name = "DURATION", default_value = "1h",
              value_parser = super::research::parse_duration)]
    lasts: u64,
}

/// Dollars as cents: `15`, `15.5`, `15.50`.
fn dollars(text: &str) -> Result<i64, String> {
    let err = || format!("`{text}` is not an amount in dollars (15, 15.50)");
    let (whole, part) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if part.len() > 2 || (whole.is_empty() && part.is_empty()) {
        return Err(err());
    }
    let whole: i64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| err())? };
    let cents: i64 = format!("{part:0<2}").parse().map_err(|_| err())?;
    let total = whole.checked_mul(100).and_then(|w| w.checked_add(cents)).ok_or_else(err)?;
    (total > 0).then_some(total).ok_or_else(|| format!("`{text}`: a wage is more than 0"))
}

/// A moment given as a time, in simulated seconds.
fn time_of(at: &hamlet_engine::history::Moment) -> anyhow::Result<u64> {
    match at {
        hamlet_engine::history::Moment::Time(t) => Ok(*t),
        _ => anyhow::bail!("--at takes a time: `day<N> HH:MM` or `HH:MM`"),
    }
}

pub fn mayor(a: MayorArgs) -> anyhow::Result<Outcome> {
    let rt = runtime()?;
    let on = match &a.act {
        MayorCommand::PostJob { on, .. }
        | MayorCommand::Found { on, .. }
        | MayorCommand::SetWage { on, .. }
        | MayorCommand::Meeting { on, .. }
        | MayorCommand::Task { on, .. } => on,
    };
    let agent_name = match &a.act {
        MayorCommand::Task { agent, .. } => Some(agent.as_str()),
        _ => None,
    };
    let (mut sim, branch, agent) =
        open(&on.target.store, &on.target.branch, agent_name, false, &on.llm, &[], &rt)?;
    let act = match &a.act {
        MayorCommand::PostJob { sector, title, wage, .. } => MayorAct::PostJob {
            sector: sector.clone(),
            title: title.clone(),
            cents_per_hour: *wage,
        },
        MayorCommand::Found { template, name, site, .. } => {
            let cost = sim.definition().mayor.as_ref().map_or(0, |m| m.found_cents);
            MayorAct::Found {
                template: template.clone(),
                name: name.clone(),
                site: site.clone(),
                cost_cents: cost,
            }
        }
        MayorCommand::SetWage { sector, wage, .. } => {
            MayorAct::SetWage { sector: sector.clone(), cents_per_hour: *wage }
        }
        MayorCommand::Meeting { errand: e, .. } => MayorAct::CallMeeting {
            what: e.what.clone(),
            place: e.place.clone(),
            start_secs: time_of(&e.at)?,
            duration_secs: u32::try_from(e.lasts).unwrap_or(u32::MAX),
        },
        MayorCommand::Task { errand: e, .. } => MayorAct::AssignTask {
            agent: agent
                .ok_or_else(|| anyhow::anyhow!("no agent `{}`", agent_name.unwrap_or_default()))?,
            what: e.what.clone(),
            place: e.place.clone(),
            start_secs: time_of(&e.at)?,
            duration_secs: u32::try_from(e.lasts).unwrap_or(u32::MAX),
        },
    };
    sim.check_mayor_act(act.clone())?;
    finish_step(&mut sim, &rt)?;
    sim.mayor_act(act.clone())?;
    let names = |id: hamlet_log::event::AgentId| {
        sim.state().agents.get(&id).map_or_else(|| format!("agent {}", id.0), |x| x.name.clone())
    };
    let body = hamlet_log::Body::MayorActed(hamlet_log::event::MayorActed { mayor: None, act });
    println!("{}", hamlet_engine::describe::summary(&body, &names));
    if let Some(book) = &sim.state().mayor {
        println!("the treasury holds {}", hamlet_engine::describe::cents(book.treasury_cents));
    }
    println!("every agent reads it as a notice when the run goes on");
    go_on(&on.target, &branch);
    Ok(Outcome::Done)
}
