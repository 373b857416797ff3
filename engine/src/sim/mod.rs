//! The simulation loop, one step at a time.
//!
//! A step is three commits:
//! 1. the clock (`ClockStepped`, alone);
//! 2. every agent's thinking, built **concurrently** (each agent reads the town as folded
//!    at the clock step and writes its own batch: perceive, remember what is new, maybe decide to
//!    react to someone, plan/decompose/choose a place/start an action/walk by its schedule,
//!    reflect when due), then joined in agent order with the conversations the reactions
//!    start, and committed as one batch;
//! 3. every open conversation, run concurrently to its end (alternating lines, then both
//!    agents remember it, spend the next minutes talking, and re-plan the rest of their hour),
//!    joined in conversation order and committed as one batch.
//!
//! Batches are joined in canonical order, so the log does not depend on which model answer
//! came first. All state the loop reads is folded from the log, so a run resumes from its
//! store: a clock step with nothing after it means the step's thinking is still to do, and an open
//! conversation is continued from its last line.
//!
//! This file owns `Sim`, `SimSettings` and `SimError`: start, resume, commit, and one step.
//! Each of the loop's other jobs has its own file: `state.rs`, the folds of the log and what
//! they tell about an agent now; `agent.rs`, one agent's turn; `converse.rs`, conversations;
//! `intervene.rs`, changes from outside; `social.rs`, notes and commitments after a
//! conversation (rulebook 4). Must not: think for an agent, run a conversation
//! or make an intervention here (the step only joins and commits what those files build).

mod agent;
mod converse;
mod intervene;
mod mayor;
mod social;
mod state;

pub use state::Strategy;

use std::collections::BTreeSet;

use hamlet_gateway::Gateway;
use hamlet_log::event::{AgentId, ConversationStarted};
use hamlet_log::{Body, BranchId, EventId};

use crate::fold::Town;
use crate::mind::prompt::Style;
use crate::mind::retrieval::RetrievalSettings;
use crate::mind::think::{ReflectionSettings, ThinkError};
use crate::pending::{Cause, Pending};
use crate::rulebook::Rulebook;
use crate::store::{Storage, Store, StoreError};
use crate::town::{actions, clock, genesis, Definition};

use state::{Folds, Talk};

/// Why the loop stopped.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A model call failed for good.
    #[error(transparent)]
    Think(#[from] ThinkError),
    /// The store holds no run to resume.
    #[error("{0}")]
    Resume(String),
    /// An intervention that cannot be made (nothing is written): the field of the change
    /// that is wrong (`agent`, `text`, `place`, `until`, `address`, `state`, `persona`,
    /// `name`, `home`, `strategy`, `cash_cents`, `template`, `origin`), and why.
    #[error("{why}")]
    Refused {
        /// The field at fault, as a form names it.
        field: &'static str,
        /// Why, in words for the user.
        why: String,
    },
}

impl SimError {
    /// A refusal of an intervention, for `field`.
    pub(crate) fn refused(field: &'static str, why: impl Into<String>) -> SimError {
        SimError::Refused { field, why: why.into() }
    }
}

/// Whether a branch stopped part way through a step, told from its log without resuming a
/// run on it: `last` is its last event of a step (its last that is not a `BranchCreated` or
/// a `BranchRenamed`, which belong to no step), `town` the branch folded to its head. A clock step
/// is the last (its agents' thinking is still to do), or a conversation is still open (the
/// step's conversations are). What [`Sim::mid_step`] says of a run resumed there.
pub fn stopped_mid_step(town: &Town, last: Option<&Body>) -> bool {
    matches!(last, Some(Body::ClockStepped(_))) || !town.conversations.is_empty()
}

/// How the agents think.
#[derive(Clone, Debug)]
pub struct SimSettings {
    /// Chat or completion prompts.
    pub style: Style,
    /// Retrieval weights and k.
    pub retrieval: RetrievalSettings,
    /// Reflection threshold and sizes.
    pub reflection: ReflectionSettings,
    /// When agents wake, minutes after midnight.
    pub wake_minute: u16,
    /// Lines in a conversation, at most (both speakers together).
    pub max_turns: usize,
    /// Simulated seconds before the same two agents may start talking again.
    pub talk_cooldown_secs: u64,
    /// Simulated seconds before an agent asks itself again whether to react to the same
    /// other agent.
    pub reconsider_secs: u64,
    /// How far ahead an agent without a day plan decides its actions, in minutes.
    pub moment_minutes: u32,
    /// The rulebook a new run decides by (recorded in its `RunConfigured`). A resumed run
    /// decides by the rulebook it recorded, whatever this says.
    pub rulebook: Rulebook,
}

impl Default for SimSettings {
    fn default() -> SimSettings {
        SimSettings {
            style: Style::Chat,
            retrieval: RetrievalSettings::default(),
            reflection: ReflectionSettings::default(),
            wake_minute: 7 * 60,
            max_turns: 8,
            talk_cooldown_secs: 3600,
            reconsider_secs: 1800,
            moment_minutes: 15,
            rulebook: Rulebook::CURRENT,
        }
    }
}

/// A running town: the store it writes, and the folds it reads.
pub struct Sim<S: Storage> {
    store: Store<S>,
    branch: BranchId,
    town: Definition,
    gateway: Gateway,
    settings: SimSettings,
    /// What the loop knows of the log, folded (see [`Folds`]).
    folds: Folds,
    /// The head is a clock step whose thinking is still to do.
    at_tick: bool,
}

impl<S: Storage> Sim<S> {
    /// Starts a run of `town` on a new root branch `name`: genesis, then every agent's seed
    /// memories (rated and embedded).
    pub async fn start(
        store: Store<S>,
        name: &str,
        town: Definition,
        seed: u64,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Result<Sim<S>, SimError> {
        let nonce = store.next_nonce();
        Sim::start_as(store, name, nonce, town, seed, gateway, settings).await
    }

    /// [`Sim::start`], with the root branch's `nonce` given (re-simulating a recorded run
    /// makes its root exactly as it was recorded).
    pub async fn start_as(
        mut store: Store<S>,
        name: &str,
        nonce: u64,
        town: Definition,
        seed: u64,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Result<Sim<S>, SimError> {
        let branch = store.create_root_as(name, nonce)?;
        store.append_durable(branch, &genesis::genesis_by(&town, seed, settings.rulebook))?;
        let mut sim = Sim::new(store, branch, town, gateway, settings);
        sim.refold()?;
        sim.remember_seeds().await?;
        Ok(sim)
    }

    /// Opens the run on `branch` of `store` again: the town is read from the branch's
    /// `TownLoaded` event and everything else is folded from the log, so the run goes on
    /// exactly where it stopped (an agent whose seed memories were not all written gets the
    /// rest first).
    pub async fn resume(
        store: Store<S>,
        branch: BranchId,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Result<Sim<S>, SimError> {
        Sim::resume_or_return(store, branch, gateway, settings).await.map_err(|(e, _)| e)
    }

    /// [`Sim::resume`], the store given back with the error when the run cannot go on (so
    /// a window holding the store keeps it).
    pub async fn resume_or_return(
        store: Store<S>,
        branch: BranchId,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Result<Sim<S>, (SimError, Store<S>)> {
        let head = store.branch(branch).map_or(0, |b| b.head_seq);
        let events = match store.events(branch, 0, head) {
            Ok(events) => events,
            Err(e) => return Err((e.into(), store)),
        };
        let source = events.iter().find_map(|e| match &e.body {
            Body::TownLoaded(t) => Some(t.source.clone()),
            _ => None,
        });
        let Some(source) = source else {
            return Err((
                SimError::Resume(format!("branch {branch} holds no town to resume")),
                store,
            ));
        };
        let town = match Definition::parse("the recorded town", &source) {
            Ok(town) => town,
            Err(e) => {
                let e = SimError::Resume(format!("the recorded town does not load: {e}"));
                return Err((e, store));
            }
        };
        // It decides by the rulebook it was started with (or a fork's own, the last).
        let recorded = events.iter().rev().find_map(|e| match &e.body {
            Body::RunConfigured(c) => Some(Rulebook::recorded(&c.settings)),
            _ => None,
        });
        let rulebook = match recorded {
            Some(Ok(rulebook)) => rulebook,
            Some(Err(why)) => return Err((SimError::Resume(why), store)),
            None => {
                let why = format!("branch {branch} holds no run configuration to resume");
                return Err((SimError::Resume(why), store));
            }
        };
        let settings = SimSettings { rulebook, ..settings };
        // Asked as the run before would have gone on asking (the forms its server took).
        gateway.learn_from(events.iter().map(|e| &e.body));
        let mut sim = Sim::new(store, branch, town, gateway, settings);
        if let Err(e) = sim.refold() {
            return Err((e.into(), sim.store));
        }
        if let Err(e) = sim.remember_seeds().await {
            return Err((e, sim.store));
        }
        Ok(sim)
    }

    fn new(
        store: Store<S>,
        branch: BranchId,
        town: Definition,
        gateway: Gateway,
        mut settings: SimSettings,
    ) -> Sim<S> {
        settings.retrieval.ties_by_creation = settings.rulebook.breaks_retrieval_ties_by_creation();
        // What the server is found to take is learned as the log says, at each commit: the
        // same log whatever the latencies, and a resumed run asks as the straight one did.
        gateway.learn_from_the_log();
        Sim { store, branch, town, gateway, settings, folds: Folds::default(), at_tick: false }
    }

    /// Commits a batch and folds what was committed.
    fn commit(&mut self, pending: Pending) -> Result<Vec<EventId>, StoreError> {
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let from = self.store.branch(self.branch).map_or(0, |b| b.head_seq) + 1;
        let ids = pending.commit(&mut self.store, self.branch)?;
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let events = self.store.events(self.branch, from, head)?;
        self.gateway.learn_from(events.iter().map(|e| &e.body));
        for event in &events {
            self.fold(event);
        }
        Ok(ids)
    }

    /// The town as folded so far.
    pub fn state(&self) -> &Town {
        &self.folds.state
    }

    /// The store.
    pub fn store(&self) -> &Store<S> {
        &self.store
    }

    /// The store back, the run done with.
    pub fn into_store(self) -> Store<S> {
        self.store
    }

    /// The branch written.
    pub fn branch(&self) -> BranchId {
        self.branch
    }

    /// The town run.
    pub fn definition(&self) -> &Definition {
        &self.town
    }

    /// Has the gateway learn again from the branch's whole log what its servers take: after
    /// models were added to it once the run was resumed, so each learns from its own calls.
    pub fn relearn(&self) -> Result<(), SimError> {
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let events = self.store.events(self.branch, 0, head)?;
        self.gateway.learn_from(events.iter().map(|e| &e.body));
        Ok(())
    }

    /// The models the agents think with besides the run's, by the names their town or
    /// add-agent gave, each once: what the gateway needs for this branch to go on.
    pub fn models_named(&self) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> = self.folds.models.values().collect();
        names.into_iter().cloned().collect()
    }

    /// The rulebook the run decides by.
    pub fn rulebook(&self) -> Rulebook {
        self.settings.rulebook
    }

    /// The gateway the agents think through.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// True when the last step stopped part way (its thinking or its conversations still to
    /// do): the next [`Sim::step`] finishes it without moving the clock.
    pub fn mid_step(&self) -> bool {
        self.at_tick || !self.folds.dialogues.is_empty()
    }

    /// Whether the last step is whole, as [`Sim::mid_step`] cannot tell alone: a step in
    /// which nobody did anything writes only its clock step, which reads as a step whose
    /// thinking is still to do. Such a head is thought through again without a model (any
    /// call fails, and nothing is written); when that writes nothing either, the step was
    /// whole, and the run knows it from here on. A step with thinking to do, or with a
    /// conversation open, stays part way (false).
    pub async fn settle_quiet_step(&mut self) -> bool {
        if !self.folds.dialogues.is_empty() {
            return false;
        }
        if !self.at_tick {
            return true;
        }
        let model = std::mem::replace(&mut self.gateway, crate::ops::no_model());
        let (_, thoughts) = self.think_all().await;
        let now = self.folds.state.sim_time_secs;
        let quiet = actions::finish_due(&self.town, &self.folds.state, now).is_empty()
            && thoughts
                .iter()
                .all(|(pending, talk)| pending.is_empty() && matches!(talk, Ok(None)));
        self.gateway = model;
        if quiet {
            self.at_tick = false;
        }
        quiet
    }

    /// Renames the branch the run writes ([`Store::rename_branch`]: a `BranchRenamed` at its
    /// head), between steps only; the run goes on as before, under the new name. How a
    /// re-simulation makes a recorded rename again.
    pub fn rename_branch(&mut self, name: &str) -> Result<(), SimError> {
        if self.mid_step() {
            return Err(SimError::refused(
                "name",
                "the branch's last step stopped part way: continue it first",
            ));
        }
        self.store.rename_branch(self.branch, name)?;
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let event = self.store.event_at(self.branch, head)?;
        self.fold(&event);
        Ok(())
    }

    /// Runs by other rules from here on (between steps only): a `RunConfigured` with the
    /// run's settings and `changes` made ([`crate::rulebook::settings_with`]: mechanisms left
    /// out, `rulebook.off`; one strategy for every agent, `strategy`), appended to the branch.
    /// How a fork of a recording runs without a mechanism, or as one of the paper's
    /// ablations; a re-simulation makes it again where it was recorded.
    pub fn reconfigure(&mut self, changes: &[(String, String)]) -> Result<(), SimError> {
        if self.mid_step() {
            return Err(SimError::refused(
                "settings",
                "the branch's last step stopped part way: continue it first",
            ));
        }
        let Some(now) = self.folds.configured.clone() else {
            return Err(SimError::refused("settings", "the branch holds no run configuration"));
        };
        let settings = crate::rulebook::settings_with(&now.settings, changes)
            .map_err(|why| SimError::refused("settings", why))?;
        let rulebook =
            Rulebook::recorded(&settings).map_err(|why| SimError::refused("settings", why))?;
        let at = self.folds.state.sim_time_secs;
        let event = hamlet_log::event::NewEvent::new(
            at,
            Body::RunConfigured(hamlet_log::event::RunConfigured { settings, ..now }),
        );
        self.store.append_durable(self.branch, &[event])?;
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let event = self.store.event_at(self.branch, head)?;
        self.fold(&event);
        self.settings.rulebook = rulebook;
        self.settings.retrieval.ties_by_creation = rulebook.breaks_retrieval_ties_by_creation();
        Ok(())
    }

    /// An agent's strategy.
    pub fn strategy(&self, agent: AgentId) -> Strategy {
        self.folds.strategies.get(&agent).copied().unwrap_or(Strategy::Full)
    }

    /// Every agent thinks, concurrently, each into its own batch: the agents in order, and
    /// each one's batch and what came of it (nothing is written).
    async fn think_all(&self) -> (Vec<AgentId>, Vec<(Pending, Result<Option<Talk>, SimError>)>) {
        let ids: Vec<AgentId> = self.folds.state.agents.keys().copied().collect();
        let thoughts = futures::future::join_all(ids.iter().map(|&a| self.think(a))).await;
        (ids, thoughts)
    }

    /// One step: the clock, every agent's thinking, then every open conversation to its end
    /// — or, when the last step stopped part way ([`Sim::mid_step`]), the rest of it.
    pub async fn step(&mut self) -> Result<(), SimError> {
        if !self.at_tick && !self.folds.dialogues.is_empty() {
            // A step stopped after its agents' batch: finish its conversations.
            return self.converse_all().await;
        }
        if !self.at_tick {
            // While everyone sleeps, the clock skips to the first waking in one clock step.
            let now = self.folds.state.sim_time_secs;
            let wakes: Vec<Option<u64>> =
                self.folds.state.agents.keys().map(|&a| self.wakes_at(a, now)).collect();
            let steps =
                if wakes.is_empty() { 1 } else { clock::steps_until(&self.town, now, &wakes) };
            let clock_step = clock::advance(&self.town, &self.folds.state, steps);
            self.store.append_durable(self.branch, &[clock_step])?;
            let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
            let event = self.store.event_at(self.branch, head)?;
            self.fold(&event);
        }
        let (ids, thoughts) = self.think_all().await;
        let mut batch = Pending::new();
        // Objects whose users' actions are over go back to rest.
        let now = self.folds.state.sim_time_secs;
        for rested in actions::finish_due(&self.town, &self.folds.state, now) {
            batch.push(now, rested.body, &[]);
        }
        let mut failure = None;
        let mut talks: Vec<(AgentId, Talk, usize)> = Vec::new();
        for (&agent, (pending, result)) in ids.iter().zip(thoughts) {
            let offset = batch.append(pending);
            match result {
                Ok(Some(talk)) => talks.push((agent, talk, offset)),
                Ok(None) => {}
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        // Reactions become conversations, first come (in agent order) first served.
        if failure.is_none() {
            let now = self.folds.state.sim_time_secs;
            let mut taken = BTreeSet::new();
            for (agent, talk, offset) in talks {
                if taken.contains(&agent) || taken.contains(&talk.with) {
                    continue;
                }
                taken.extend([agent, talk.with]);
                let address = self.address_of(agent);
                let started = ConversationStarted { agents: vec![agent, talk.with], address };
                let decided = Pending::shifted(talk.decided, offset);
                batch.push(now, Body::ConversationStarted(started), &[Cause::Pending(decided)]);
            }
        }
        self.commit(batch)?;
        // The step's thinking is written, even when nobody did anything.
        self.at_tick = false;
        if let Some(e) = failure {
            return Err(e);
        }
        self.converse_all().await
    }
}
