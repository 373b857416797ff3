//! What a person does to a store, for the command line and the viewer alike: fork a branch
//! at a moment, import a recording, run a branch on until a step or until told to stop.
//! Nothing here prints; each operation answers what it did, or an error in words ready to
//! show. The engine operations themselves live in `store` and `sim`: this module only joins
//! them the way both front ends need.

use std::sync::atomic::{AtomicBool, Ordering};

use hamlet_log::{BranchId, Event};

use crate::describe::sim_time;
use crate::history::{checkpoint_store, HistoryError, Moment};
use crate::sim::{Sim, SimError};
use crate::store::{BranchInfo, Storage, Store, StoreError};

/// Why an operation could not be done. Nothing was written unless it says so.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// No branch by that name (or id prefix); the store's branches are listed.
    #[error("no branch `{name}`; the store has: {has}")]
    NoBranch {
        /// The name asked for.
        name: String,
        /// The store's branch names, comma-separated.
        has: String,
    },
    /// The moment is not on the branch.
    #[error("{0}")]
    NoMoment(String),
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Checkpoints could not be written.
    #[error("cannot write checkpoints: {0}")]
    History(#[from] HistoryError),
    /// The simulation stopped; what was committed before it stays.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A step wrote nothing and is still not finished.
    #[error("the step wrote nothing and is still not finished; the store may be damaged")]
    Stuck,
}

/// A branch by name or id prefix, or an error listing the store's branches.
pub fn branch_named<S: Storage>(store: &Store<S>, name: &str) -> Result<BranchInfo, OpsError> {
    store.find_branch(name).map_err(|_| OpsError::NoBranch {
        name: name.to_owned(),
        has: store.branches().into_iter().map(|b| b.name).collect::<Vec<_>>().join(", "),
    })
}

/// `BASE-1`, `BASE-2`, …: the first that names no branch of the store.
pub fn unused_name<S: Storage>(store: &Store<S>, base: &str) -> String {
    let taken: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
    (1..).map(|n| format!("{base}-{n}")).find(|n| !taken.contains(n)).unwrap_or_default()
}

/// The seq of the last event of `from` at or before `at`.
pub fn seq_for<S: Storage>(
    store: &Store<S>,
    from: &BranchInfo,
    at: Moment,
) -> Result<u64, OpsError> {
    match at {
        Moment::End => Ok(from.head_seq),
        Moment::Seq(s) if s <= from.head_seq => Ok(s),
        Moment::Seq(s) => Err(OpsError::NoMoment(format!(
            "#{s} is past the end of `{}` (#{})",
            from.name, from.head_seq
        ))),
        Moment::Time(t) => store.seq_at_time(from.id, t)?.ok_or_else(|| {
            OpsError::NoMoment(format!("`{}` has no event at or before {}", from.name, sim_time(t)))
        }),
    }
}

/// A fork made by [`fork_at`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Forked {
    /// The new branch.
    #[serde(skip)]
    pub id: BranchId,
    /// Its name.
    pub name: String,
    /// The branch forked, untouched.
    pub parent: String,
    /// The parent's last event the fork keeps.
    pub seq: u64,
    /// That event's simulated time.
    pub secs: u64,
    /// The fork point is inside a step: the fork leaves the rest of that step undone, and
    /// going on finishes it first (a fork at a time keeps whole steps).
    pub inside_step: bool,
}

/// Forks branch `from` after its last event at or before `at`, as a new branch `name`: one
/// event, made durable with the index. The parent is untouched.
pub fn fork_at<S: Storage>(
    store: &mut Store<S>,
    from: &str,
    at: Moment,
    name: &str,
) -> Result<Forked, OpsError> {
    let from = branch_named(store, from)?;
    let seq = seq_for(store, &from, at)?;
    let point = store.event_at(from.id, seq)?;
    // A step's events share its time: a fork inside one leaves the rest of that step undone.
    let inside_step = seq < from.head_seq
        && store.event_at(from.id, seq + 1)?.sim_time_secs() == point.sim_time_secs();
    let id = store.fork(from.id, seq, name)?;
    store.flush_index()?;
    Ok(Forked {
        id,
        name: name.to_owned(),
        parent: from.name,
        seq,
        secs: point.sim_time_secs(),
        inside_step,
    })
}

/// Imports a recording's bytes (verified first; events already held are skipped), writes
/// each branch's checkpoints and makes the index durable. Answers how many events were new.
pub fn import<S: Storage>(store: &mut Store<S>, bytes: &[u8]) -> Result<u64, OpsError> {
    let new = store.import(bytes)?;
    for branch in store.branches() {
        checkpoint_store(store, branch.id)?;
    }
    store.flush_index()?;
    Ok(new)
}

/// How a run goes, after each step: what [`run_until`] hands its caller.
pub struct Stepped<'a> {
    /// The events the step committed.
    pub events: &'a [Event],
    /// The step reached, and the step aimed at.
    pub step: u64,
    /// The step aimed at.
    pub target: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The target step was reached (and no step is left part way).
    Done,
    /// `stop` was set: the run stopped after the step under way; nothing is lost, and
    /// running again goes on identically.
    Stopped,
}

/// The step a run of `hours` simulated hours from the town's start ends at.
pub fn target_step<S: Storage>(sim: &Sim<S>, hours: f64) -> u64 {
    let per_step = u64::from(sim.town().seconds_per_step.max(1));
    ((hours * 3600.0) / per_step as f64).ceil().max(1.0) as u64
}

/// Steps `sim` until its step reaches `target` (and a step stopped part way is finished),
/// or until `stop` is set, which is checked between steps. After each step `stepped` is
/// told the events it committed. On an error, what was committed before it stays.
pub async fn run_until<S: Storage>(
    sim: &mut Sim<S>,
    target: u64,
    stop: &AtomicBool,
    mut stepped: impl FnMut(&Sim<S>, Stepped<'_>),
) -> Result<RunEnd, OpsError> {
    while sim.state().step < target || sim.mid_step() {
        if stop.load(Ordering::SeqCst) {
            return Ok(RunEnd::Stopped);
        }
        let before = head(sim);
        sim.step().await?;
        if head(sim) == before && sim.mid_step() {
            return Err(OpsError::Stuck);
        }
        let events = sim.store().events(sim.branch(), before + 1, head(sim))?;
        let step = sim.state().step;
        stepped(sim, Stepped { events: &events, step, target });
    }
    Ok(RunEnd::Done)
}

/// The last seq of the branch a simulation writes.
pub fn head<S: Storage>(sim: &Sim<S>) -> u64 {
    sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq)
}
