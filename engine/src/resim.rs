//! Re-simulation: the engine runs a recorded branch again from its first event, every model
//! answer taken from the recording (the replay backend), and each event it produces is
//! compared with the recorded one, id for id. Identical ids mean identical bytes, causes and
//! history; the first difference is reported with both events and, when the engine asked
//! something the recording never answered, what differs from the nearest recorded question
//! (a changed prompt shows as a prompt diff).
//!
//! The user's interventions in the recording (inner voice, interviews, objects set, personas
//! edited, agents and buildings added) are made again where they were made, and so is each
//! rename of a branch (a `BranchRenamed`, between steps); a fork is made again at its fork
//! point (same name and nonce), after its parent's part; where the
//! recorded run stopped on a model failure and was resumed, the re-run is resumed there
//! too; a recording that stops part way through a step (a crash, a second Ctrl-C) is
//! identical when everything it holds is made again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Gateway, GatewayError, RetryPolicy};
use hamlet_log::event::{AgentId, Intervention};
use hamlet_log::{Body, Event};

use crate::mind::think::ThinkError;
use crate::rulebook::Rulebook;
use crate::sim::{Sim, SimError, SimSettings};
use crate::store::{Store, StoreError};
use crate::town::{Definition, MODEL_TRAIT};

/// What a re-simulation found.
#[derive(Debug)]
pub enum Verdict {
    /// Every event produced equals the recorded one.
    Identical {
        /// How many events were compared.
        events: usize,
    },
    /// The first difference.
    Diverged(Box<Divergence>),
}

/// Where a re-simulation first differs from its recording.
#[derive(Debug)]
pub struct Divergence {
    /// The position (0-based) in the branch's history.
    pub index: usize,
    /// The recorded event there (none: the engine made more than was recorded).
    pub expected: Option<Event>,
    /// The event the engine made there (none: it stopped short, see `cause`).
    pub produced: Option<Event>,
    /// Why, when known: the replay backend's account of a question it has no answer to.
    pub cause: Option<String>,
}

/// Why a re-simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ResimError {
    /// The recording holds no run to re-simulate.
    #[error("{0}")]
    NotARun(String),
    /// The scratch store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine failed for another reason than a missing answer.
    #[error(transparent)]
    Sim(SimError),
}

/// Re-simulates `recorded` (a branch's events with its ancestry, in order) in a scratch store at
/// `scratch` (an empty directory). `progress` is told how many events matched so far, out
/// of how many.
pub async fn resimulate(
    recorded: &[Event],
    scratch: &Path,
    mut progress: impl FnMut(usize, usize),
) -> Result<Verdict, ResimError> {
    let (name, nonce) = match recorded.first().map(|e| &e.body) {
        Some(Body::BranchCreated(b)) if b.parent_branch.is_none() => (b.name.clone(), b.nonce),
        _ => return Err(ResimError::NotARun("the history does not start a branch".into())),
    };
    // Where the history passes from a branch to a fork of it: (index, name, nonce).
    let mut forks: Vec<(usize, String, u64)> = recorded
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, e)| match &e.body {
            Body::BranchCreated(b) => Some((i, b.name.clone(), b.nonce)),
            _ => None,
        })
        .collect();
    forks.reverse();
    let mut name = name;
    let source = recorded.iter().find_map(|e| match &e.body {
        Body::TownLoaded(t) => Some(t.source.clone()),
        _ => None,
    });
    let configured = recorded.iter().find_map(|e| match &e.body {
        Body::RunConfigured(c) => Some(c),
        _ => None,
    });
    let seed = configured.map(|c| c.seed);
    let (Some(source), Some(seed)) = (source, seed) else {
        return Err(ResimError::NotARun(
            "the history holds no run (no TownLoaded and RunConfigured): nothing to re-simulate"
                .into(),
        ));
    };
    // Made again by the rulebook it was made by.
    let rulebook = Rulebook::recorded(configured.map_or(&[][..], |c| &c.settings[..]))
        .map_err(ResimError::NotARun)?;
    let mut town = Definition::parse("the recorded town", &source)
        .map_err(|e| ResimError::NotARun(format!("the recorded town does not load: {e}")))?;
    // A run of some of the town's personas (`hamlet run --agents`) recorded the whole town
    // and joined only those: they are the `AgentJoined` events right after the town.
    let joined: Vec<&str> = recorded
        .iter()
        .skip_while(|e| !matches!(e.body, Body::TownLoaded(_)))
        .skip(1)
        .map_while(|e| match &e.body {
            Body::AgentJoined(j) => Some(j.name.as_str()),
            _ => None,
        })
        .collect();
    town.personas.retain(|p| joined.contains(&p.name.as_str()));
    let params =
        Replay::from_events(recorded.iter().map(|e| &e.body)).recorded_params().unwrap_or_default();
    // Each part of the history (a branch's, up to where its fork begins) answers from its
    // own events: a parent run that goes past the fork point must not use up the fork's.
    // Each model the run asked answers from its own calls (a request's hash covers its
    // model's name), under the name its agents gave it.
    let (main_model, named) = models_of(recorded);
    let answering = |part: &[Event]| {
        let replay = |keep: &dyn Fn(&str) -> bool| {
            let replay = Arc::new(Replay::from_events(bodies_of(part, keep)));
            Gateway::new(replay.clone(), replay, params.clone(), RetryPolicy::default(), 4)
        };
        let routed: Vec<&str> = named.values().flatten().map(String::as_str).collect();
        let gateway = replay(&|m| Some(m) == main_model.as_deref() || !routed.contains(&m));
        for (name, model) in &named {
            gateway.add_model(name, replay(&|m| Some(m) == model.as_deref()));
        }
        gateway
    };
    let first_limit = forks.last().map_or(recorded.len(), |(i, _, _)| *i);
    let mut gateway = answering(&recorded[..first_limit]);

    let mut compared = 0usize;
    let store = Store::open(scratch)?;
    let settings = SimSettings { rulebook, ..SimSettings::default() };
    let started = Sim::start_as(store, &name, nonce, town, seed, gateway.clone(), settings).await;
    let mut running = match started {
        Ok(sim) => Some(sim),
        Err(e) => {
            // Stopped among the seed memories: what it wrote is read back from the store.
            let store = Store::open(scratch)?;
            let written = match store.find_branch(&name) {
                Ok(b) => store.events(b.id, 0, b.head_seq)?,
                Err(_) => Vec::new(),
            };
            drop(store);
            match stopped(&recorded[..first_limit], &mut compared, written, e)? {
                Some(Verdict::Identical { .. }) if first_limit < recorded.len() => None,
                Some(verdict) => return Ok(verdict),
                None => None,
            }
        }
    };
    let mut stuck_at = None;
    loop {
        // The history up to the next fork is its parent's: compared up to there, then the
        // fork is made again where it was, and the run goes on as the fork.
        let limit = forks.last().map_or(recorded.len(), |(i, _, _)| *i);
        if compared == limit && limit < recorded.len() {
            let (_, fork, fork_nonce) = forks.pop().unwrap_or_default();
            let parent = running.take().map(|sim| sim.branch());
            let mut store = Store::open(scratch)?;
            let parent = match parent {
                Some(p) => p,
                None => store.find_branch(&name)?.id,
            };
            let at = recorded[compared - 1].seq();
            store.fork_as(parent, at, &fork, fork_nonce)?;
            drop(store);
            name = fork;
            let next = forks.last().map_or(recorded.len(), |(i, _, _)| *i);
            gateway = answering(&recorded[compared..next]);
            continue;
        }
        let upto = &recorded[..limit];
        // After a failure the recording went on from (the model refused, or gave up), the
        // run is resumed from its store, as `hamlet run --resume` did.
        let sim = match &mut running {
            Some(sim) => sim,
            None => {
                let store = Store::open(scratch)?;
                let branch = store.find_branch(&name)?.id;
                let resumed = Sim::resume(store, branch, gateway.clone(), SimSettings::default());
                running.insert(resumed.await.map_err(ResimError::Sim)?)
            }
        };
        // Compare what the engine has written since the last look.
        let written = written_since(sim, compared)?;
        match compare(upto, &mut compared, written, None) {
            // Past a fork point: the parent went on, the fork is made next.
            Some(d) if d.expected.is_none() && limit < recorded.len() => continue,
            // Past the recording's end: the rest of a step the recording stopped in.
            Some(d) if d.expected.is_none() => {
                return Ok(Verdict::Identical { events: recorded.len() })
            }
            Some(d) => return Ok(Verdict::Diverged(Box::new(d))),
            None => {}
        }
        progress(compared, recorded.len());
        if compared == limit && limit < recorded.len() {
            continue;
        }
        let Some(next) = recorded.get(compared) else {
            return Ok(Verdict::Identical { events: compared });
        };
        // The user's voice, where the recording has it (after any step it finished).
        let done = match &next.body {
            // A rename, where it was made: the run goes on under the new name.
            Body::BranchRenamed(r) if !sim.mid_step() => {
                let renamed = sim.rename_branch(&r.name);
                if renamed.is_ok() {
                    name.clone_from(&r.name);
                }
                renamed
            }
            // A fork that runs by other rules, where it was made.
            Body::RunConfigured(c) if compared > 0 && !sim.mid_step() => {
                sim.reconfigure(&c.settings)
            }
            // The person at the viewer acting as mayor (an agent mayor's acts are its own).
            Body::MayorActed(m) if m.mayor.is_none() && !sim.mid_step() => {
                sim.mayor_act(m.act.clone()).map(|_| ())
            }
            Body::Intervened(i) if !sim.mid_step() => match &i.intervention {
                Intervention::InnerVoice { agent, text } => {
                    sim.inner_voice(*agent, text).await.map(|_| ())
                }
                Intervention::Interview { agent, question, remember } => {
                    sim.interview(*agent, question, *remember).await.map(|_| ())
                }
                Intervention::SetObjectState { address, state } => {
                    sim.set_object(address, state).map(|_| ())
                }
                Intervention::Happening { place, text, until_secs } => {
                    sim.happen(place, text, *until_secs).map(|_| ())
                }
                Intervention::EditPersona { agent, persona } => {
                    sim.edit_persona(*agent, persona).await.map(|_| ())
                }
                Intervention::SetModel { agent, model } => sim.set_model(*agent, model).map(|_| ()),
                Intervention::AddBuilding { template, name, origin } => {
                    sim.add_building(template, name, *origin).map(|_| ())
                }
                Intervention::AddAgent { name, persona } => {
                    // Where it joined, how it thinks and its cash are in the recorded
                    // `AgentJoined` that the intervention caused.
                    let joined = recorded[compared..].iter().find_map(|e| match &e.body {
                        Body::AgentJoined(j) if e.header.causes.contains(&next.id) => Some(j),
                        _ => None,
                    });
                    let Some(j) = joined else {
                        return Err(ResimError::NotARun(format!(
                            "#{}: an added agent that never joined",
                            next.seq()
                        )));
                    };
                    let trait_of = |key: &str| {
                        j.traits.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
                    };
                    let (home, strategy) = (trait_of("home"), trait_of("strategy"));
                    let model = j.traits.iter().find(|(k, _)| k == MODEL_TRAIT).map(|(_, v)| v);
                    sim.add_agent(
                        name,
                        persona,
                        home,
                        strategy,
                        j.cash_cents,
                        model.map(String::as_str),
                    )
                    .await
                    .map(|_| ())
                }
            },
            _ => sim.step().await,
        };
        if let Err(e) = done {
            let written = written_since(sim, compared)?;
            match stopped(upto, &mut compared, written, e)? {
                // The parent's part is all made: on to the fork.
                Some(Verdict::Identical { .. }) if limit < recorded.len() => continue,
                Some(verdict) => return Ok(verdict),
                None => {}
            }
            // The same failure twice with nothing new in between: it is not the recording's.
            if stuck_at.replace(compared) == Some(compared) {
                return Err(ResimError::NotARun(format!(
                    "the engine fails again at #{compared} where the recording goes on"
                )));
            }
            // Dropping the run releases its store for the resume.
            running = None;
        }
    }
}

/// After the engine stopped with `e`, having written `written` since position `compared`:
/// the verdict, or `None` when the recording goes on past a failure it recorded too (the
/// run is then resumed). A question the recording never answered is a divergence with its
/// cause; the end of a recording that stopped part way through a step is identical.
fn stopped(
    recorded: &[Event],
    compared: &mut usize,
    written: Vec<Event>,
    e: SimError,
) -> Result<Option<Verdict>, ResimError> {
    let cause = match e {
        SimError::Think(ThinkError::Gateway(GatewayError::NotRecorded(why))) => Some(why),
        SimError::Think(ThinkError::Gateway(_)) => None,
        other => return Err(ResimError::Sim(other)),
    };
    match compare(recorded, compared, written, cause.clone()) {
        // What the engine made past the recording's end is the rest of a step the recording
        // stopped in.
        Some(d) if d.expected.is_none() => {
            return Ok(Some(Verdict::Identical { events: recorded.len() }))
        }
        Some(d) => return Ok(Some(Verdict::Diverged(Box::new(d)))),
        None => {}
    }
    if *compared >= recorded.len() {
        return Ok(Some(Verdict::Identical { events: recorded.len() }));
    }
    match cause {
        Some(cause) => Ok(Some(Verdict::Diverged(Box::new(Divergence {
            index: *compared,
            expected: recorded.get(*compared).cloned(),
            produced: None,
            cause: Some(cause),
        })))),
        // A recorded failure, and the recording goes on: resume.
        None => Ok(None),
    }
}

/// Compares events the engine wrote, from position `compared` on, with the recording;
/// moves `compared` past those that match. The first that does not is the divergence.
fn compare(
    recorded: &[Event],
    compared: &mut usize,
    written: Vec<Event>,
    cause: Option<String>,
) -> Option<Divergence> {
    for event in written {
        match recorded.get(*compared) {
            Some(expected) if expected.id == event.id => *compared += 1,
            expected => {
                return Some(Divergence {
                    index: *compared,
                    expected: expected.cloned(),
                    produced: Some(event),
                    cause,
                })
            }
        }
    }
    None
}

/// The events the engine has written at and after position `from`.
fn written_since(
    sim: &Sim<crate::store::FsStorage>,
    from: usize,
) -> Result<Vec<Event>, StoreError> {
    let head = sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq);
    if from as u64 > head {
        return Ok(Vec::new());
    }
    sim.store().events(sim.branch(), from as u64, head)
}

/// The model the run's own calls were asked of (calls for no agent, or for an agent that
/// named none), and each name agents gave a model with the model its calls were asked of
/// (`None` if none was asked): from `AgentJoined` traits and `SetModel` interventions, as
/// each agent's name stood when it asked.
fn models_of(recorded: &[Event]) -> (Option<String>, BTreeMap<String, Option<String>>) {
    let mut now: BTreeMap<AgentId, String> = BTreeMap::new();
    let (mut main, mut named) = (None, BTreeMap::<String, Option<String>>::new());
    for e in recorded {
        match &e.body {
            Body::AgentJoined(j) => {
                if let Some((_, m)) = j.traits.iter().find(|(k, _)| k == MODEL_TRAIT) {
                    now.insert(j.agent, m.clone());
                    named.entry(m.clone()).or_default();
                }
            }
            Body::Intervened(i) => {
                if let Intervention::SetModel { agent, model } = &i.intervention {
                    now.insert(*agent, model.clone());
                    named.entry(model.clone()).or_default();
                }
            }
            Body::LlmRequested(r) => match r.agent.and_then(|a| now.get(&a)) {
                Some(name) => {
                    named.entry(name.clone()).or_default().get_or_insert_with(|| r.model.clone());
                }
                None => {
                    main.get_or_insert_with(|| r.model.clone());
                }
            },
            _ => {}
        }
    }
    (main, named)
}

/// The bodies of `part` a replay answers: the model calls whose recorded model `keep` keeps,
/// each with its answers and failures, and every event that is not a model call's.
fn bodies_of<'a>(part: &'a [Event], keep: &dyn Fn(&str) -> bool) -> Vec<&'a Body> {
    let mut asked: BTreeMap<[u8; 32], bool> = BTreeMap::new();
    part.iter()
        .map(|e| &e.body)
        .filter(|body| match body {
            Body::LlmRequested(r) => *asked.entry(r.request_hash).or_insert_with(|| keep(&r.model)),
            Body::LlmResponded(r) => asked.get(&r.request_hash).copied().unwrap_or(false),
            Body::LlmFailed(f) => asked.get(&f.request_hash).copied().unwrap_or(false),
            _ => true,
        })
        .collect()
}
