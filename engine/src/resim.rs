//! Re-simulation: the engine runs a recorded branch again from its first event, every model
//! answer taken from the recording (the replay backend), and each event it produces is
//! compared with the recorded one, id for id. Identical ids mean identical bytes, causes and
//! history; the first difference is reported with both events and, when the engine asked
//! something the recording never answered, what differs from the nearest recorded question
//! (a changed prompt shows as a prompt diff).
//!
//! The user's interventions in the recording (inner voice, remembered interviews) are made
//! again where they were made.

use std::path::Path;
use std::sync::Arc;

use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Gateway, GatewayError, RetryPolicy};
use hamlet_log::event::Intervention;
use hamlet_log::{Body, Event};

use crate::mind::think::ThinkError;
use crate::sim::{Sim, SimError, SimSettings};
use crate::store::{Store, StoreError};
use crate::town::Definition;

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

/// Re-simulates `recorded` (a root branch's events, in order) in a scratch store at
/// `scratch` (an empty directory). `progress` is told how many events matched so far, out
/// of how many.
pub async fn resimulate(
    recorded: &[Event],
    scratch: &Path,
    mut progress: impl FnMut(usize, usize),
) -> Result<Verdict, ResimError> {
    let name = match recorded.first().map(|e| &e.body) {
        Some(Body::BranchCreated(b)) if b.parent_branch.is_none() => b.name.clone(),
        Some(Body::BranchCreated(_)) => {
            return Err(ResimError::NotARun(
                "the branch is a fork; re-simulating forks is not supported yet: re-simulate its root branch".into(),
            ))
        }
        _ => return Err(ResimError::NotARun("the history does not start a branch".into())),
    };
    if let Some(fork) = recorded.iter().skip(1).find(|e| matches!(e.body, Body::BranchCreated(_))) {
        return Err(ResimError::NotARun(format!(
            "the history forks at #{}; re-simulating forks is not supported yet: re-simulate its root branch",
            fork.seq()
        )));
    }
    let source = recorded.iter().find_map(|e| match &e.body {
        Body::TownLoaded(t) => Some(t.source.clone()),
        _ => None,
    });
    let seed = recorded.iter().find_map(|e| match &e.body {
        Body::RunConfigured(c) => Some(c.seed),
        _ => None,
    });
    let (Some(source), Some(seed)) = (source, seed) else {
        return Err(ResimError::NotARun(
            "the history holds no run (no TownLoaded and RunConfigured): nothing to re-simulate"
                .into(),
        ));
    };
    let town = Definition::parse("the recorded town", &source)
        .map_err(|e| ResimError::NotARun(format!("the recorded town does not load: {e}")))?;
    let bodies: Vec<&Body> = recorded.iter().map(|e| &e.body).collect();
    let replay = Arc::new(Replay::from_events(bodies));
    let params = replay.recorded_params().unwrap_or_default();
    let gateway = Gateway::new(replay.clone(), replay, params, RetryPolicy::default(), 4);

    let store = Store::open(scratch)?;
    let mut compared = 0usize;
    let started = Sim::start(store, &name, town, seed, gateway, SimSettings::default()).await;
    let mut sim = match started {
        Ok(sim) => sim,
        Err(e) => {
            // Stopped among the seed memories: compare what it wrote, from the store.
            let cause = not_recorded(e)?;
            let store = Store::open(scratch)?;
            let written = match store.find_branch(&name) {
                Ok(b) => store.events(b.id, 0, b.head_seq)?,
                Err(_) => Vec::new(),
            };
            return Ok(Verdict::Diverged(Box::new(
                compare(recorded, &mut compared, written, Some(cause.clone())).unwrap_or(
                    Divergence {
                        index: compared,
                        expected: recorded.get(compared).cloned(),
                        produced: None,
                        cause: Some(cause),
                    },
                ),
            )));
        }
    };
    loop {
        // Compare what the engine has written since the last look.
        let written = written_since(&sim, compared)?;
        if let Some(d) = compare(recorded, &mut compared, written, None) {
            return Ok(Verdict::Diverged(Box::new(d)));
        }
        progress(compared, recorded.len());
        let Some(next) = recorded.get(compared) else {
            return Ok(Verdict::Identical { events: compared });
        };
        // The user's voice, where the recording has it (after any step it finished).
        let done = match &next.body {
            Body::Intervened(i) if !sim.mid_step() => match &i.intervention {
                Intervention::InnerVoice { agent, text } => {
                    sim.inner_voice(*agent, text).await.map(|_| ())
                }
                Intervention::Interview { agent, question, remember } => {
                    sim.interview(*agent, question, *remember).await.map(|_| ())
                }
                other => {
                    return Err(ResimError::NotARun(format!(
                        "#{}: re-simulating the intervention {other:?} is not supported yet",
                        next.seq()
                    )))
                }
            },
            _ => sim.step().await,
        };
        if let Err(e) = done {
            // The engine asked what the recording never answered (anything else is an
            // error). What it wrote before it stopped is compared first.
            let cause = not_recorded(e)?;
            let written = written_since(&sim, compared)?;
            if let Some(d) = compare(recorded, &mut compared, written, Some(cause.clone())) {
                return Ok(Verdict::Diverged(Box::new(d)));
            }
            if compared >= recorded.len() {
                // The recording stops part way through a step: all of it was reproduced.
                return Ok(Verdict::Identical { events: compared });
            }
            return Ok(Verdict::Diverged(Box::new(Divergence {
                index: compared,
                expected: recorded.get(compared).cloned(),
                produced: None,
                cause: Some(cause),
            })));
        }
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

/// The replay backend's account of a question the recording does not answer; any other
/// failure is an error.
fn not_recorded(e: SimError) -> Result<String, ResimError> {
    match e {
        SimError::Think(ThinkError::Gateway(GatewayError::NotRecorded(why))) => Ok(why),
        other => Err(ResimError::Sim(other)),
    }
}
