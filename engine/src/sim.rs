//! The simulation loop, one step at a time.
//!
//! A step is three commits:
//! 1. the clock (`ClockStepped`, alone);
//! 2. every agent's thinking, built **concurrently** (each agent reads the town as folded
//!    at the tick and writes its own batch: perceive, remember what is new, maybe decide to
//!    react to someone, plan/decompose/choose a place/start an action/walk by its schedule,
//!    reflect when due), then joined in agent order with the conversations the reactions
//!    start, and committed as one batch;
//! 3. every open conversation, run concurrently to its end (alternating lines, then both
//!    agents remember it, spend the next minutes talking, and re-plan the rest of their hour),
//!    joined in conversation order and committed as one batch.
//!
//! Batches are joined in canonical order, so the log does not depend on which model answer
//! came first. All state the loop reads is folded from the log, so a run resumes from its
//! store: a tick with nothing after it means the step's thinking is still to do, and an open
//! conversation is continued from its last line.

use std::collections::{BTreeMap, BTreeSet};

use hamlet_gateway::Gateway;
use hamlet_log::event::{
    AgentId, AgentJoined, ConversationEnded, ConversationStarted, Intervened, Intervention,
    MemoryKind, Perceived, PlanItem, PlanLevel, PlanMade, Tile,
};
use hamlet_log::{Body, BranchId, Event, EventId};

use crate::describe::sim_time;
use crate::fold::Town;
use crate::mind::memory::{seed_statements, Minds};
use crate::mind::plan::{choose_place, decompose, plan_day, plan_steps, summarise};
use crate::mind::prompt::Style;
use crate::mind::respond::{answer_interview, hear_inner_voice, should_react, speak, Situation};
use crate::mind::retrieval::RetrievalSettings;
use crate::mind::schedule::{Need, Schedules};
use crate::mind::think::{reflect, reflection_due, remember, ReflectionSettings, ThinkError};
use crate::pending::{Cause, Pending, PendingId};
use crate::store::{Storage, Store, StoreError};
use crate::town::spatial::SpatialMemory;
use crate::town::{actions, clock, genesis, perception, walk, Definition};

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
    /// An intervention that cannot be made (nothing is written).
    #[error("{0}")]
    Refused(String),
}

/// Which parts of the architecture an agent uses: the paper's full architecture and its
/// ablations, chosen per agent in the town file (`strategy`), so the paper's comparison can
/// be rerun in one town.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// Memory, reflection, planning, reacting.
    Full,
    /// No reflection.
    NoReflection,
    /// No reflection, and no planning ahead: actions are decided a quarter hour at a time.
    NoReflectionNoPlanning,
}

impl Strategy {
    /// The strategy named in a town file (see [`crate::town::STRATEGIES`]).
    pub fn named(name: &str) -> Option<Strategy> {
        match name {
            "full" => Some(Strategy::Full),
            "no_reflection" => Some(Strategy::NoReflection),
            "no_reflection_no_planning" => Some(Strategy::NoReflectionNoPlanning),
            _ => None,
        }
    }

    /// Whether the agent reflects.
    pub fn reflects(self) -> bool {
        self == Strategy::Full
    }

    /// Whether the agent plans its day ahead (and re-plans after reacting).
    pub fn plans(self) -> bool {
        self != Strategy::NoReflectionNoPlanning
    }
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
        }
    }
}

/// How many of an agent's latest memories are checked before remembering an observation
/// again (one made within the hour is not made twice).
const RECENT_OBSERVATIONS: usize = 200;

/// The query of the continue-or-react question's second retrieval, after the agent's name
/// (see [`should_react`]).
const RELATIONSHIP: &str = "'s relationship with ";

/// An open conversation, as the loop folds it.
#[derive(Clone, Debug, Default)]
struct Dialogue {
    agents: Vec<AgentId>,
    address: String,
    /// The lines so far: speaker, words (empty when the speaker fell silent).
    lines: Vec<(AgentId, String)>,
}

/// What one agent's thinking leads to beyond its own batch.
#[derive(Clone, Copy, Debug)]
struct Talk {
    /// Whom it decided to talk to.
    with: AgentId,
    /// The decision's last event, in the agent's batch.
    decided: PendingId,
}

/// A running town: the store it writes, and the folds it reads.
pub struct Sim<S: Storage> {
    store: Store<S>,
    branch: BranchId,
    town: Definition,
    gateway: Gateway,
    settings: SimSettings,
    state: Town,
    minds: Minds,
    schedules: Schedules,
    spatial: BTreeMap<AgentId, SpatialMemory>,
    last_seen: BTreeMap<AgentId, BTreeMap<String, u64>>,
    last_reflection: BTreeMap<AgentId, u64>,
    strategies: BTreeMap<AgentId, Strategy>,
    /// When each pair (lower id first) last started talking.
    last_talk: BTreeMap<(AgentId, AgentId), u64>,
    /// Open conversations: who, where, and the lines so far (speaker, words).
    dialogues: BTreeMap<EventId, Dialogue>,
    /// Inner-voice instructions heard since each agent's last day plan (its next day plan
    /// is made with them in mind).
    intentions: BTreeMap<AgentId, Vec<String>>,
    /// Open conversations in the order they started (ids depend on measured latencies, so
    /// they must not decide an order).
    started: Vec<EventId>,
    /// Until when each agent spends the minutes after a conversation talking.
    talking_until: BTreeMap<AgentId, u64>,
    /// When each agent last asked itself whether to react to another (folded from the
    /// relationship retrieval that question makes).
    considered: BTreeMap<(AgentId, AgentId), u64>,
    /// Each agent's summary description, the day it was last asked for, and the answer it
    /// came from (folded from the `summary` call's events; a day whose answer was the
    /// fallback keeps the description it had).
    summaries: BTreeMap<AgentId, (u64, String, Option<EventId>)>,
    /// The `summary` calls asked, by request hash, so their answers are folded.
    summary_asked: BTreeMap<[u8; 32], AgentId>,
    /// Each agent's latest day plan (yesterday's, when it plans today).
    day_plans: BTreeMap<AgentId, PlanMade>,
    /// The places each agent knows from the start: its home and workplace (`sector:arena`,
    /// from the traits it joined with).
    places: BTreeMap<AgentId, Vec<String>>,
    /// The head is a tick whose thinking is still to do.
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
        store.append_durable(branch, &genesis::genesis(&town, seed))?;
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
        let head = store.branch(branch).map_or(0, |b| b.head_seq);
        let events = store.events(branch, 0, head)?;
        let source = events
            .iter()
            .find_map(|e| match &e.body {
                Body::TownLoaded(t) => Some(t.source.clone()),
                _ => None,
            })
            .ok_or_else(|| SimError::Resume(format!("branch {branch} holds no town to resume")))?;
        let town = Definition::parse("the recorded town", &source)
            .map_err(|e| SimError::Resume(format!("the recorded town does not load: {e}")))?;
        let mut sim = Sim::new(store, branch, town, gateway, settings);
        sim.refold()?;
        sim.remember_seeds().await?;
        Ok(sim)
    }

    /// Before the first step, every agent's seed statements that are not yet memories
    /// (all of them at the start; the rest if a start was interrupted) are rated, embedded
    /// and committed, agent by agent.
    async fn remember_seeds(&mut self) -> Result<(), SimError> {
        let now = self.state.sim_time_secs;
        let missing: Vec<(AgentId, String, Vec<String>)> = self
            .state
            .agents
            .iter()
            .filter_map(|(id, a)| {
                let have: BTreeSet<&str> = self
                    .minds
                    .stream(*id)
                    .recent(usize::MAX)
                    .iter()
                    .map(|m| m.description.as_str())
                    .collect();
                let rest: Vec<String> = seed_statements(&a.persona)
                    .into_iter()
                    .filter(|s| !have.contains(s))
                    .map(str::to_owned)
                    .collect();
                (self.state.step == 0 && !rest.is_empty()).then(|| (*id, a.name.clone(), rest))
            })
            .collect();
        for (agent, name, seeds) in missing {
            let mut pending = Pending::new();
            let style = self.settings.style;
            let result = remember(
                &self.gateway,
                style,
                agent,
                &name,
                MemoryKind::Seed,
                &seeds,
                &[],
                &[],
                now,
                &mut pending,
            )
            .await;
            self.commit(pending)?;
            result?;
        }
        Ok(())
    }

    fn new(
        store: Store<S>,
        branch: BranchId,
        town: Definition,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Sim<S> {
        Sim {
            store,
            branch,
            town,
            gateway,
            settings,
            state: Town::default(),
            minds: Minds::default(),
            schedules: Schedules::default(),
            spatial: BTreeMap::new(),
            last_seen: BTreeMap::new(),
            last_reflection: BTreeMap::new(),
            strategies: BTreeMap::new(),
            last_talk: BTreeMap::new(),
            dialogues: BTreeMap::new(),
            started: Vec::new(),
            intentions: BTreeMap::new(),
            talking_until: BTreeMap::new(),
            considered: BTreeMap::new(),
            summaries: BTreeMap::new(),
            summary_asked: BTreeMap::new(),
            day_plans: BTreeMap::new(),
            places: BTreeMap::new(),
            at_tick: false,
        }
    }

    /// Folds the whole branch again.
    fn refold(&mut self) -> Result<(), StoreError> {
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let events = self.store.events(self.branch, 0, head)?;
        self.state = Town::default();
        self.minds = Minds::default();
        self.schedules = Schedules::default();
        self.spatial.clear();
        self.last_seen.clear();
        self.last_reflection.clear();
        self.strategies.clear();
        self.last_talk.clear();
        self.dialogues.clear();
        self.started.clear();
        self.intentions.clear();
        self.talking_until.clear();
        self.considered.clear();
        self.summaries.clear();
        self.summary_asked.clear();
        self.day_plans.clear();
        self.places.clear();
        for event in &events {
            self.fold(event);
        }
        Ok(())
    }

    fn fold(&mut self, event: &Event) {
        self.state.apply(event);
        self.minds.apply(event);
        self.schedules.apply(event);
        // (A fork's first event does not end the step its parent stopped in.)
        if !matches!(event.body, Body::BranchCreated(_)) {
            self.at_tick = matches!(event.body, Body::ClockStepped(_));
        }
        match &event.body {
            Body::Perceived(p) => {
                self.spatial.entry(p.agent).or_default().apply(p.agent, event);
                let seen = self.last_seen.entry(p.agent).or_default();
                for percept in &p.percepts {
                    seen.insert(percept.subject.clone(), self.state.step);
                }
            }
            Body::ReflectionStarted(r) => {
                self.last_reflection.insert(r.agent, event.sim_time_secs());
            }
            Body::Intervened(i) => match &i.intervention {
                Intervention::InnerVoice { agent, text } => {
                    self.intentions.entry(*agent).or_default().push(text.clone());
                }
                // Checked before it was written; a resumed run's town may hold it already.
                Intervention::AddBuilding { template, name, origin }
                    if self.town.sectors.iter().all(|s| s.name != *name) =>
                {
                    let _ = self.town.add_building(template, name, *origin);
                }
                _ => {}
            },
            Body::PlanMade(p) if p.level == PlanLevel::Day => {
                self.intentions.remove(&p.agent);
                self.day_plans.insert(p.agent, p.clone());
            }
            Body::LlmRequested(r) if r.template == "summary" => {
                if let Some(agent) = r.agent {
                    self.summary_asked.insert(r.request_hash, agent);
                }
            }
            Body::LlmResponded(r) if r.fallback || r.parsed.is_some() => {
                // A summary's answer, or the empty fallback: either way the day is done.
                if let Some(agent) = self.summary_asked.remove(&r.request_hash) {
                    let day = event.sim_time_secs() / 86_400;
                    let entry = self.summaries.entry(agent).or_insert((day, String::new(), None));
                    entry.0 = day;
                    if !r.fallback {
                        (entry.1, entry.2) = (r.text.trim().to_owned(), Some(event.id));
                    }
                }
            }
            Body::AgentJoined(j) => {
                let named = j.traits.iter().find(|(k, _)| k == "strategy");
                let strategy = named.and_then(|(_, v)| Strategy::named(v));
                self.strategies.insert(j.agent, strategy.unwrap_or(Strategy::Full));
                let place = |key: &str| j.traits.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                let known = place("home").into_iter().chain(place("workplace")).cloned();
                self.places.insert(j.agent, known.collect());
            }
            Body::ConversationStarted(c) => {
                if let [a, b] = c.agents[..] {
                    self.last_talk.insert((a.min(b), a.max(b)), event.sim_time_secs());
                }
                // Only a conversation the town took (its agents exist) is run.
                if self.state.conversations.contains_key(&event.id) {
                    let dialogue = Dialogue {
                        agents: c.agents.clone(),
                        address: c.address.clone(),
                        lines: Vec::new(),
                    };
                    self.dialogues.insert(event.id, dialogue);
                    self.started.push(event.id);
                }
            }
            Body::DialogueTurn(t) => {
                if let Some(d) = self.dialogues.get_mut(&t.conversation) {
                    d.lines.push((t.speaker, t.text.clone()));
                }
            }
            Body::Retrieved(r) => {
                // The continue-or-react question recalls "A's relationship with B".
                let me = self.state.agents.get(&r.agent).map(|a| a.name.as_str());
                let about = me
                    .and_then(|me| r.query.strip_prefix(me))
                    .and_then(|rest| rest.strip_prefix(RELATIONSHIP));
                let other = about.and_then(|name| {
                    self.state.agents.iter().find(|(_, a)| a.name == name).map(|(id, _)| *id)
                });
                if let Some(other) = other {
                    self.considered.insert((r.agent, other), event.sim_time_secs());
                }
            }
            Body::ConversationEnded(e) => {
                self.started.retain(|c| *c != e.conversation);
                if let Some(d) = self.dialogues.remove(&e.conversation) {
                    let said = d.lines.iter().filter(|(_, text)| !text.is_empty()).count();
                    let until = event.sim_time_secs() + self.talk_secs(said);
                    for agent in d.agents {
                        self.talking_until.insert(agent, until);
                    }
                }
            }
            _ => {}
        }
    }

    /// Commits a batch and folds what was committed.
    fn commit(&mut self, pending: Pending) -> Result<Vec<EventId>, StoreError> {
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let from = self.store.branch(self.branch).map_or(0, |b| b.head_seq) + 1;
        let ids = pending.commit(&mut self.store, self.branch)?;
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        for event in self.store.events(self.branch, from, head)? {
            self.fold(&event);
        }
        Ok(ids)
    }

    /// The town as folded so far.
    pub fn state(&self) -> &Town {
        &self.state
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
    pub fn town(&self) -> &Definition {
        &self.town
    }

    /// The gateway the agents think through.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// True when the last step stopped part way (its thinking or its conversations still to
    /// do): the next [`Sim::step`] finishes it without moving the clock.
    pub fn mid_step(&self) -> bool {
        self.at_tick || !self.dialogues.is_empty()
    }

    /// An agent's strategy.
    pub fn strategy(&self, agent: AgentId) -> Strategy {
        self.strategies.get(&agent).copied().unwrap_or(Strategy::Full)
    }

    /// One step: the clock, every agent's thinking, then every open conversation to its end
    /// — or, when the last step stopped part way ([`Sim::mid_step`]), the rest of it.
    pub async fn step(&mut self) -> Result<(), SimError> {
        if !self.at_tick && !self.dialogues.is_empty() {
            // A step stopped after its agents' batch: finish its conversations.
            return self.converse_all().await;
        }
        if !self.at_tick {
            // While everyone sleeps, the clock skips to the first waking in one tick.
            let now = self.state.sim_time_secs;
            let wakes: Vec<Option<u64>> =
                self.state.agents.keys().map(|&a| self.wakes_at(a, now)).collect();
            let steps =
                if wakes.is_empty() { 1 } else { clock::steps_until(&self.town, now, &wakes) };
            let tick = clock::advance(&self.town, &self.state, steps);
            self.store.append_durable(self.branch, &[tick])?;
            let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
            let event = self.store.event_at(self.branch, head)?;
            self.fold(&event);
        }
        // Every agent thinks, concurrently, each into its own batch.
        let ids: Vec<AgentId> = self.state.agents.keys().copied().collect();
        let this = &*self;
        let thoughts = futures::future::join_all(ids.iter().map(|&a| this.think(a))).await;
        let mut batch = Pending::new();
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
            let now = self.state.sim_time_secs;
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

    /// Runs every open conversation to its end, concurrently; commits them in order.
    async fn converse_all(&mut self) -> Result<(), SimError> {
        let open = self.started.clone();
        if open.is_empty() {
            return Ok(());
        }
        let this = &*self;
        let talked = futures::future::join_all(open.iter().map(|&c| this.converse(c))).await;
        let mut batch = Pending::new();
        let mut failure = None;
        for (pending, result) in talked {
            batch.append(pending);
            if let Err(e) = result {
                failure = failure.or(Some(e));
            }
        }
        self.commit(batch)?;
        failure.map_or(Ok(()), Err)
    }

    fn address_of(&self, agent: AgentId) -> String {
        let tile = self.state.agents.get(&agent).map(|a| a.tile);
        tile.and_then(|t| self.town.address_of(t)).unwrap_or_default()
    }

    /// An agent's summary description: the latest it wrote from its memories, or (before
    /// the first, or when the model gave none) its seed paragraph.
    fn summary(&self, agent: AgentId) -> String {
        match self.summaries.get(&agent) {
            Some((_, text, _)) if !text.is_empty() => text.clone(),
            _ => {
                let persona = self.state.agents.get(&agent).map_or("", |a| a.persona.as_str());
                seed_statements(persona).join("; ")
            }
        }
    }

    /// What `agent` did yesterday, in words, for its day plan: yesterday's day plan (the
    /// paper's summary of the previous day), and what it was told to keep in mind since.
    fn yesterday(&self, agent: AgentId, name: &str, now: u64) -> String {
        let today = now / 86_400;
        let planned = self
            .day_plans
            .get(&agent)
            .filter(|p| p.items.first().is_some_and(|i| i.start_secs / 86_400 + 1 == today));
        let mut words = match planned {
            Some(plan) => format!("{name} planned: {}", plan_steps(plan)),
            None => "an ordinary day".to_owned(),
        };
        if let Some(thoughts) = self.intentions.get(&agent) {
            words.push_str(&format!("; {name} has in mind: {}", thoughts.join("; ")));
        }
        words
    }

    /// What `agent` is doing at `now`, in words.
    fn status(&self, agent: AgentId, now: u64) -> String {
        let action = self.state.agents.get(&agent).and_then(|a| a.action.as_ref());
        match action {
            Some(a) if a.started_secs + u64::from(a.duration_secs) > now => a.description.clone(),
            _ => "idle".to_owned(),
        }
    }

    /// True while `agent` talks, or spends the minutes after a conversation talking.
    fn busy(&self, agent: AgentId, now: u64) -> bool {
        let Some(a) = self.state.agents.get(&agent) else { return true };
        a.conversation.is_some() || self.talking_until.get(&agent).is_some_and(|&t| now < t)
    }

    /// How long a conversation of `lines` lines takes: two steps for the first line and
    /// one for each further one, at least a minute.
    fn talk_secs(&self, lines: usize) -> u64 {
        let step = u64::from(self.town.seconds_per_step.max(1));
        ((lines as u64 + 1) * step).max(60)
    }

    /// True between midnight and the waking time.
    fn before_waking(&self, now: u64) -> bool {
        now % 86_400 < u64::from(self.settings.wake_minute) * 60
    }

    /// True while `agent` sleeps (its action says so) or has not yet woken today.
    fn asleep(&self, agent: AgentId, now: u64) -> bool {
        self.before_waking(now) || self.status(agent, now).to_ascii_lowercase().contains("sleep")
    }

    /// When a sleeping `agent` next needs to think: its waking time, or the end of its
    /// sleep when that comes first (it then decides what next). `None` while it is awake.
    fn wakes_at(&self, agent: AgentId, now: u64) -> Option<u64> {
        if !self.asleep(agent, now) || self.busy(agent, now) {
            return None;
        }
        let me = self.state.agents.get(&agent)?;
        // Still on its way to its bed (or anywhere): not while it walks.
        if let Some(a) = &me.action {
            if walk::step_towards(&self.town, &self.state, agent, &a.address, now).is_some() {
                return None;
            }
        }
        let wake = u64::from(self.settings.wake_minute) * 60;
        let midnight = now - now % 86_400;
        if self.before_waking(now) {
            // Before waking nobody thinks: straight to the waking time.
            return Some(midnight + wake);
        }
        let waking = midnight + 86_400 + wake;
        let sleep_ends = me.action.as_ref().and_then(|a| {
            let end = a.started_secs + u64::from(a.duration_secs);
            (end > now && a.description.to_ascii_lowercase().contains("sleep")).then_some(end)
        });
        Some(sleep_ends.map_or(waking, |end| end.min(waking)))
    }

    /// One agent's step, as a batch (also when a call failed: its events are kept).
    async fn think(&self, agent: AgentId) -> (Pending, Result<Option<Talk>, SimError>) {
        let mut pending = Pending::new();
        let result = self.think_into(agent, &mut pending).await;
        (pending, result)
    }

    async fn think_into(
        &self,
        agent: AgentId,
        pending: &mut Pending,
    ) -> Result<Option<Talk>, SimError> {
        let now = self.state.sim_time_secs;
        let step = self.state.step;
        let style = self.settings.style;
        let strategy = self.strategy(agent);
        let Some(me) = self.state.agents.get(&agent) else { return Ok(None) };
        if me.conversation.is_some() {
            return Ok(None);
        }
        let name = me.name.as_str();
        // Perceive, and remember what is new.
        let seen = self.last_seen.get(&agent).cloned().unwrap_or_default();
        let percepts = perception::perceive(&self.town, &self.state, agent, step, &seen);
        if !percepts.is_empty() {
            let at = pending.push(
                now,
                Body::Perceived(Perceived { agent, percepts: percepts.clone() }),
                &[],
            );
            // What the agent already remembers noticing this past hour (the stove still
            // idle) is not a new memory: only what changed is rated and embedded.
            let stream = self.minds.stream(agent);
            let known: BTreeSet<&str> = stream
                .recent(RECENT_OBSERVATIONS)
                .iter()
                .filter(|m| m.created_secs + 3600 > now)
                .map(|m| m.description.as_str())
                .collect();
            let observations: Vec<String> = percepts
                .iter()
                .map(perception::observation)
                .filter(|o| !known.contains(o.as_str()))
                .collect();
            if !observations.is_empty() {
                remember(
                    &self.gateway,
                    style,
                    agent,
                    name,
                    MemoryKind::Observation,
                    &observations,
                    &[],
                    &[Cause::Pending(at)],
                    now,
                    pending,
                )
                .await?;
            }
        }
        // A new day: the agent describes itself afresh from what it remembers (once a day,
        // on waking, before it plans).
        let mut summary = self.summary(agent);
        let today = now / 86_400;
        let written = self.summaries.get(&agent).is_some_and(|(day, _, _)| *day >= today);
        // What the summary was made from: its answer, so a plan made from it names it.
        let mut summary_cause =
            self.summaries.get(&agent).and_then(|(_, _, at)| *at).map(Cause::Logged);
        if !written && !self.asleep(agent, now) {
            let (text, at) = summarise(
                &self.gateway,
                style,
                agent,
                name,
                self.minds.stream(agent),
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            if text.is_some() {
                summary_cause = at.map(Cause::Pending);
            }
            summary = text.unwrap_or(summary);
        }
        // React to someone newly noticed? (At most one question a step: the nearest. An
        // agent that plans ahead plans its day first.)
        let planned = |a: AgentId| {
            !self.strategy(a).plans() || self.schedules.of(a).need(now) != Need::PlanDay
        };
        if planned(agent) && !self.busy(agent, now) && !self.asleep(agent, now) {
            let candidate = percepts.iter().find_map(|p| {
                let (&other, o) = self.state.agents.iter().find(|(_, o)| o.name == p.subject)?;
                let pair = (agent.min(other), agent.max(other));
                let recent = self
                    .last_talk
                    .get(&pair)
                    .is_some_and(|&t| now.saturating_sub(t) < self.settings.talk_cooldown_secs);
                // Someone considered lately is not considered again (an agent sharing a room
                // with its family would otherwise ask every minute).
                let considered = self
                    .considered
                    .get(&(agent, other))
                    .is_some_and(|&t| now.saturating_sub(t) < self.settings.reconsider_secs);
                let free = planned(other) && !self.busy(other, now) && !self.asleep(other, now);
                (free && !recent && !considered)
                    .then(|| (other, o.name.clone(), perception::observation(p)))
            });
            if let Some((other, other_name, observation)) = candidate {
                let time = sim_time(now);
                let status = self.status(agent, now);
                let who = Situation {
                    agent,
                    name,
                    summary: &summary,
                    time: &time,
                    status: &status,
                    stream: self.minds.stream(agent),
                };
                let (react, at) = should_react(
                    &self.gateway,
                    style,
                    &who,
                    &observation,
                    &other_name,
                    now,
                    &self.settings.retrieval,
                    pending,
                )
                .await?;
                if let (true, Some(decided)) = (react, at) {
                    return Ok(Some(Talk { with: other, decided }));
                }
            }
        }
        // Before waking nobody acts (so a new day is planned on waking, from the day's
        // summary).
        if !self.busy(agent, now) && !self.before_waking(now) {
            self.act(agent, strategy, &summary, summary_cause, now, pending).await?;
        }
        // Reflect when the recent memories pass the threshold.
        if strategy.reflects() {
            let since = self.last_reflection.get(&agent).copied().unwrap_or(0);
            let stream = self.minds.stream(agent);
            if let Some(sum) = reflection_due(stream, since, &self.settings.reflection) {
                reflect(
                    &self.gateway,
                    style,
                    agent,
                    name,
                    stream,
                    sum,
                    now,
                    &self.settings.reflection,
                    &self.settings.retrieval,
                    pending,
                )
                .await?;
            }
        }
        Ok(None)
    }

    /// Plans, decomposes or acts by the agent's schedule.
    async fn act(
        &self,
        agent: AgentId,
        strategy: Strategy,
        summary: &str,
        summary_cause: Option<Cause>,
        now: u64,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let style = self.settings.style;
        let Some(me) = self.state.agents.get(&agent) else { return Ok(()) };
        let name = me.name.as_str();
        match self.schedules.of(agent).need(now) {
            Need::PlanDay if strategy.plans() => {
                let day_start = now - now % 86_400;
                let day = self.yesterday(agent, name, now);
                plan_day(
                    &self.gateway,
                    style,
                    agent,
                    name,
                    summary,
                    &day,
                    self.settings.wake_minute,
                    day_start,
                    summary_cause.as_slice(),
                    now,
                    pending,
                )
                .await?;
            }
            Need::PlanDay | Need::Moment => {
                // No planning ahead (or no usable day plan): the next quarter hour, decided now (from the minute
                // under way, so the plan covers now).
                let start = now - now % 60;
                let moment = PlanItem {
                    description: format!("whatever {name} would do next"),
                    address: String::new(),
                    start_secs: start,
                    duration_secs: self.settings.moment_minutes * 60,
                };
                decompose(
                    &self.gateway,
                    style,
                    agent,
                    name,
                    summary,
                    &moment,
                    None,
                    PlanLevel::Action,
                    now,
                    pending,
                )
                .await?;
            }
            Need::Decompose { item, what, level } => {
                // The place is chosen once for an hour part, and its actions happen there.
                let mut what = what;
                let mut chose = None;
                if level == PlanLevel::Action && what.address.is_empty() {
                    let (address, at) =
                        self.place_for(agent, &what.description, now, pending).await?;
                    (what.address, chose) = (address, at);
                }
                let (_, planned) = decompose(
                    &self.gateway,
                    style,
                    agent,
                    name,
                    summary,
                    &what,
                    Some(item),
                    level,
                    now,
                    pending,
                )
                .await?;
                if let Some(chose) = chose {
                    pending.link(planned, Cause::Pending(chose));
                }
            }
            Need::Act { item, what } => {
                let doing = me.action.as_ref().filter(|a| a.plan_item == Some(item));
                let address = match doing {
                    Some(a) => a.address.clone(),
                    None => {
                        let (address, chose) = if what.address.is_empty() {
                            let here = self.town.address_of(me.tile).unwrap_or_default();
                            let mut parts = here.splitn(3, ':');
                            let here = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                            let known = self.known(agent);
                            choose_place(
                                &self.gateway,
                                style,
                                agent,
                                name,
                                &known,
                                here,
                                &what.description,
                                now,
                                pending,
                            )
                            .await?
                        } else {
                            (what.address.clone(), None)
                        };
                        let end = what.start_secs + u64::from(what.duration_secs);
                        let start = actions::Start {
                            agent,
                            description: &what.description,
                            emoji: "",
                            address: &address,
                            duration_secs: u32::try_from(end.saturating_sub(now))
                                .unwrap_or(u32::MAX),
                            object_state: None,
                            plan_item: Some(item),
                        };
                        if let Ok(events) = actions::start(&self.town, &self.state, &start, now) {
                            let mut causes = vec![Cause::Logged(item.plan)];
                            causes.extend(chose.map(Cause::Pending));
                            for e in events {
                                pending.push(now, e.body, &causes);
                            }
                        }
                        address
                    }
                };
                if let Some(moved) =
                    walk::step_towards(&self.town, &self.state, agent, &address, now)
                {
                    pending.push(now, moved.body, &[]);
                }
            }
            Need::Free => {}
        }
        Ok(())
    }

    /// Where `agent` does `activity`, chosen down its spatial tree (see [`choose_place`]),
    /// and the position of the last choice's event.
    async fn place_for(
        &self,
        agent: AgentId,
        activity: &str,
        now: u64,
        pending: &mut Pending,
    ) -> Result<(String, Option<PendingId>), SimError> {
        let Some(me) = self.state.agents.get(&agent) else { return Ok((String::new(), None)) };
        let here = self.town.address_of(me.tile).unwrap_or_default();
        let mut parts = here.splitn(3, ':');
        let here = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let known = self.known(agent);
        let style = self.settings.style;
        let chosen = choose_place(
            &self.gateway,
            style,
            agent,
            &me.name,
            &known,
            here,
            activity,
            now,
            pending,
        )
        .await?;
        Ok(chosen)
    }

    /// One open conversation, to its end: the agents speak in turn (the one who started
    /// first) until one ends it, falls silent, or the turn limit; then each remembers it,
    /// spends the next minutes talking, and re-plans the rest of the hour it interrupted.
    async fn converse(&self, conversation: EventId) -> (Pending, Result<(), SimError>) {
        let mut pending = Pending::new();
        let result = self.converse_into(conversation, &mut pending).await;
        (pending, result)
    }

    async fn converse_into(
        &self,
        conversation: EventId,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let now = self.state.sim_time_secs;
        let style = self.settings.style;
        let Some(open) = self.dialogues.get(&conversation) else { return Ok(()) };
        let (agents, address, said) = (open.agents.clone(), &open.address, &open.lines);
        if agents.len() < 2 {
            let ended = ConversationEnded { conversation, reason: "nobody to talk with".into() };
            pending.push(now, Body::ConversationEnded(ended), &[Cause::Logged(conversation)]);
            return Ok(());
        }
        let names: Vec<String> = agents
            .iter()
            .map(|a| self.state.agents.get(a).map_or_else(String::new, |x| x.name.clone()))
            .collect();
        let place = address.replace(':', ", ");
        let time = sim_time(now);
        let mut dialogue: Vec<(String, String)> = said
            .iter()
            .map(|(speaker, text)| {
                let i = agents.iter().position(|a| a == speaker).unwrap_or(0);
                (names[i].clone(), text.clone())
            })
            .collect();
        let mut last = None;
        let mut reason = "the turn limit".to_owned();
        let n = agents.len().max(1);
        while dialogue.len() < self.settings.max_turns {
            let i = dialogue.len() % n;
            let (speaker, other) = (agents[i], &names[(i + 1) % n]);
            let summary = self.summary(speaker);
            let status = format!("talking with {other}");
            let who = Situation {
                agent: speaker,
                name: &names[i],
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.minds.stream(speaker),
            };
            let (turn, at) = speak(
                &self.gateway,
                style,
                &who,
                other,
                &place,
                conversation,
                &dialogue,
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            last = Some(at);
            if turn.say.is_empty() {
                reason = format!("{} fell silent", names[i]);
                break;
            }
            // A line that says again what was already said ends it: small models, answering
            // greedily, otherwise echo each other to the turn limit.
            let words = |t: &str| -> String {
                t.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
            };
            let echo = dialogue.iter().any(|(_, earlier)| words(earlier) == words(&turn.say));
            dialogue.push((names[i].clone(), turn.say));
            if turn.end {
                reason = format!("{} ended it", names[i]);
                break;
            }
            if echo {
                reason = format!("{} said again what was already said", names[i]);
                break;
            }
        }
        let causes = match last {
            Some(at) => vec![Cause::Pending(at)],
            None => vec![Cause::Logged(conversation)],
        };
        let ended = pending.push(
            now,
            Body::ConversationEnded(ConversationEnded { conversation, reason }),
            &causes,
        );
        let talk_secs = self.talk_secs(dialogue.len());
        let lines: Vec<String> =
            dialogue.iter().map(|(speaker, text)| format!("{speaker}: \"{text}\"")).collect();
        for (i, &agent) in agents.iter().enumerate() {
            let other = &names[(i + 1) % n];
            let memory = if lines.is_empty() {
                format!("{} and {other} met at {place} but did not talk", names[i])
            } else {
                format!("{} talked with {other} at {place}. {}", names[i], lines.join(" "))
            };
            remember(
                &self.gateway,
                style,
                agent,
                &names[i],
                MemoryKind::Chat,
                &[memory],
                &[],
                &[Cause::Pending(ended)],
                now,
                pending,
            )
            .await?;
            let description = format!("talking with {other}");
            let here = self.address_of(agent);
            let start = actions::Start {
                agent,
                description: &description,
                emoji: "💬",
                address: &here,
                duration_secs: talk_secs as u32,
                object_state: None,
                plan_item: None,
            };
            if let Ok(events) = actions::start(&self.town, &self.state, &start, now) {
                for e in events {
                    pending.push(now, e.body, &[Cause::Pending(ended)]);
                }
            }
            // Re-plan the rest of the hour the conversation interrupted.
            let Some((hour, what)) = self.schedules.of(agent).hour_under_way(now) else {
                continue;
            };
            if !self.strategy(agent).plans() {
                continue;
            }
            let resume_at = (now + talk_secs).div_ceil(60) * 60;
            let hour_end = what.start_secs + u64::from(what.duration_secs);
            if hour_end < resume_at + 5 * 60 {
                continue;
            }
            // The hour's place is where its actions were (chosen once for the hour).
            let place = self.state.agents.get(&agent).and_then(|a| a.action.as_ref());
            let place = place.filter(|a| a.plan_item.is_some()).map(|a| a.address.clone());
            let rest = PlanItem {
                description: format!("{} (after talking with {other})", what.description),
                address: place.unwrap_or_else(|| what.address.clone()),
                start_secs: resume_at,
                duration_secs: (hour_end - resume_at) as u32,
            };
            let summary = self.summary(agent);
            decompose(
                &self.gateway,
                style,
                agent,
                &names[i],
                &summary,
                &rest,
                Some(hour),
                PlanLevel::Action,
                now,
                pending,
            )
            .await?;
        }
        Ok(())
    }

    /// The user interviews `agent`: the question (an `Intervened` event) is answered from
    /// the agent's memory at the branch's head, and everything is committed. The agent
    /// keeps the exchange as a memory only if `remember` (`hamlet interview` writes an
    /// interview that is not remembered on a fork, so the run itself stays untouched).
    /// Returns the answer (empty when the model gave none).
    pub async fn interview(
        &mut self,
        agent: AgentId,
        question: &str,
        remember: bool,
    ) -> Result<String, SimError> {
        let asked = Intervention::Interview { agent, question: question.to_owned(), remember };
        let question_event = self.intervene(asked)?;
        let now = self.state.sim_time_secs;
        let mut pending = Pending::new();
        let result = {
            let (summary, time, status) =
                (self.summary(agent), sim_time(now), self.status(agent, now));
            let name = self.state.agents.get(&agent).map_or("", |a| a.name.as_str());
            let who = Situation {
                agent,
                name,
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.minds.stream(agent),
            };
            answer_interview(
                &self.gateway,
                self.settings.style,
                &who,
                question_event,
                question,
                remember,
                now,
                &self.settings.retrieval,
                &mut pending,
            )
            .await
        };
        self.commit(pending)?;
        Ok(result?.0)
    }

    /// The user speaks as `agent`'s inner voice: the instruction (an `Intervened` event)
    /// becomes the agent's intention, remembered as a plan memory, and the agent re-plans
    /// from it — the rest of the hour under way (or, without planning ahead, its next
    /// quarter hour) is decomposed again with the intention first; with no hour under way,
    /// the next day plan is made with it in mind. Returns the intention, and whether the
    /// agent re-planned now.
    pub async fn inner_voice(
        &mut self,
        agent: AgentId,
        instruction: &str,
    ) -> Result<(String, bool), SimError> {
        let heard = Intervention::InnerVoice { agent, text: instruction.to_owned() };
        let instruction_event = self.intervene(heard)?;
        let now = self.state.sim_time_secs;
        let style = self.settings.style;
        let mut pending = Pending::new();
        let result = async {
            let (summary, time, status) =
                (self.summary(agent), sim_time(now), self.status(agent, now));
            let name = self.state.agents.get(&agent).map_or("", |a| a.name.as_str());
            let who = Situation {
                agent,
                name,
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.minds.stream(agent),
            };
            let intention = hear_inner_voice(
                &self.gateway,
                style,
                &who,
                instruction_event,
                instruction,
                now,
                &mut pending,
            )
            .await?;
            let start = now - now % 60;
            let (what, of) = match self.schedules.of(agent).hour_under_way(now) {
                Some((hour, item)) if self.strategy(agent).plans() => {
                    let end = item.start_secs + u64::from(item.duration_secs);
                    let rest = PlanItem {
                        description: format!("{intention}; then: {}", item.description),
                        address: item.address.clone(),
                        start_secs: start,
                        duration_secs: end.saturating_sub(start).max(300) as u32,
                    };
                    (rest, Some(hour))
                }
                Some(_) | None if !self.strategy(agent).plans() => {
                    let moment = PlanItem {
                        description: intention.clone(),
                        address: String::new(),
                        start_secs: start,
                        duration_secs: self.settings.moment_minutes * 60,
                    };
                    (moment, None)
                }
                _ => return Ok((intention, false)),
            };
            decompose(
                &self.gateway,
                style,
                agent,
                name,
                &summary,
                &what,
                of,
                PlanLevel::Action,
                now,
                &mut pending,
            )
            .await?;
            Ok::<(String, bool), SimError>((intention, true))
        }
        .await;
        self.commit(pending)?;
        result
    }

    /// The user sets an object's state by hand: the object at `address`
    /// (`sector:arena:object`) takes `state`, and agents see it when they next look.
    /// Refused, writing nothing, when the town has no such object.
    pub fn set_object(&mut self, address: &str, state: &str) -> Result<EventId, SimError> {
        self.check_set_object(address, state)?;
        let set = Intervention::SetObjectState { address: address.into(), state: state.into() };
        self.intervene(set)
    }

    /// Whether [`Sim::set_object`] would be refused, and why.
    pub fn check_set_object(&self, address: &str, state: &str) -> Result<(), SimError> {
        let exists = self.town.sectors.iter().any(|s| {
            s.arenas.iter().any(|a| {
                a.objects.iter().any(|o| format!("{}:{}:{}", s.name, a.name, o.name) == address)
            })
        });
        if !exists {
            return Err(SimError::Refused(format!(
                "no object `{address}` in the town (an address is `sector:arena:object`; \
                 `hamlet town show` lists them)"
            )));
        }
        if state.trim().is_empty() {
            return Err(SimError::Refused("an object's state is not empty".into()));
        }
        Ok(())
    }

    /// The user rewrites `agent`'s seed paragraph: it is the agent's from now on; each
    /// statement it did not hold before becomes a seed memory (rated and embedded, caused
    /// by the edit), and the agent describes itself afresh from memory, so what it plans
    /// and says next follows from the new paragraph. Returns the new statements.
    pub async fn edit_persona(
        &mut self,
        agent: AgentId,
        persona: &str,
    ) -> Result<Vec<String>, SimError> {
        let name = self.check_edit_persona(agent, persona)?;
        let held: BTreeSet<&str> = self
            .minds
            .stream(agent)
            .memories()
            .iter()
            .filter(|m| m.kind == MemoryKind::Seed)
            .map(|m| m.description.as_str())
            .collect();
        let new: Vec<String> = seed_statements(persona)
            .into_iter()
            .filter(|s| !held.contains(s))
            .map(str::to_owned)
            .collect();
        let edit = Intervention::EditPersona { agent, persona: persona.to_owned() };
        let edited = self.intervene(edit)?;
        let (now, style) = (self.state.sim_time_secs, self.settings.style);
        let mut pending = Pending::new();
        let result = remember(
            &self.gateway,
            style,
            agent,
            &name,
            MemoryKind::Seed,
            &new,
            &[],
            &[Cause::Logged(edited)],
            now,
            &mut pending,
        )
        .await;
        self.commit(pending)?;
        result?;
        let mut pending = Pending::new();
        let result = summarise(
            &self.gateway,
            style,
            agent,
            &name,
            self.minds.stream(agent),
            now,
            &self.settings.retrieval,
            &mut pending,
        )
        .await;
        self.commit(pending)?;
        result?;
        Ok(new)
    }

    /// Whether [`Sim::edit_persona`] would be refused, and why; else the agent's name.
    pub fn check_edit_persona(&self, agent: AgentId, persona: &str) -> Result<String, SimError> {
        let Some(name) = self.state.agents.get(&agent).map(|a| a.name.clone()) else {
            return Err(SimError::Refused(format!("no agent {}", agent.0)));
        };
        if seed_statements(persona).is_empty() {
            return Err(SimError::Refused("the seed paragraph is empty".into()));
        }
        Ok(name)
    }

    /// The user adds an agent: `name`, with the seed paragraph `persona`, joins at its
    /// `home` (a `sector:arena` of the town, which it knows from the start) with `strategy`
    /// and `cash_cents`; its seed memories are rated and embedded now, and it plans its day
    /// on its next waking step, as everyone does. Refused, writing nothing, when the name is
    /// taken or a value is wrong. Returns its id.
    pub async fn add_agent(
        &mut self,
        name: &str,
        persona: &str,
        home: &str,
        strategy: &str,
        cash_cents: i64,
    ) -> Result<AgentId, SimError> {
        let tile = self.check_add_agent(name, persona, home, strategy, cash_cents)?;
        let statements: Vec<String> =
            seed_statements(persona).into_iter().map(str::to_owned).collect();
        let agent = AgentId(self.state.agents.keys().next_back().map_or(0, |a| a.0 + 1));
        let added = Intervention::AddAgent { name: name.into(), persona: persona.into() };
        let added = self.intervene(added)?;
        let now = self.state.sim_time_secs;
        let mut pending = Pending::new();
        let joined = AgentJoined {
            agent,
            name: name.to_owned(),
            persona: persona.to_owned(),
            traits: vec![
                ("home".to_owned(), home.to_owned()),
                ("strategy".to_owned(), strategy.to_owned()),
            ],
            tile,
            cash_cents,
        };
        pending.push(now, Body::AgentJoined(joined), &[Cause::Logged(added)]);
        let joined_at = self.commit(pending)?;
        let mut pending = Pending::new();
        let result = remember(
            &self.gateway,
            self.settings.style,
            agent,
            name,
            MemoryKind::Seed,
            &statements,
            &[],
            &joined_at.into_iter().map(Cause::Logged).collect::<Vec<_>>(),
            now,
            &mut pending,
        )
        .await;
        self.commit(pending)?;
        result?;
        Ok(agent)
    }

    /// Whether [`Sim::add_agent`] would be refused, and why; else the tile it would join on.
    pub fn check_add_agent(
        &self,
        name: &str,
        persona: &str,
        home: &str,
        strategy: &str,
        cash_cents: i64,
    ) -> Result<Tile, SimError> {
        let refuse = |why: String| Err(SimError::Refused(why));
        if name.trim().is_empty() {
            return refuse("an agent's name is not empty".into());
        }
        if self.state.agents.values().any(|a| a.name.eq_ignore_ascii_case(name)) {
            return refuse(format!("the town has an agent named `{name}` already"));
        }
        let statements: Vec<String> =
            seed_statements(persona).into_iter().map(str::to_owned).collect();
        if statements.is_empty() {
            return refuse("the seed paragraph is empty".into());
        }
        let Some((si, ai)) = crate::town::find_arena(&self.town.sectors, home) else {
            return refuse(format!("`{home}` is not a `sector:arena` of the town"));
        };
        let Some(tile) = self.town.sectors[si].arenas[ai].tiles.first().copied() else {
            return refuse(format!("`{home}` has no floor"));
        };
        if Strategy::named(strategy).is_none() {
            return refuse(format!(
                "`{strategy}` is not a strategy; the strategies are: {}",
                crate::town::STRATEGIES.join(", ")
            ));
        }
        if cash_cents < 0 {
            return refuse("cash is not negative".into());
        }
        Ok(tile)
    }

    /// The user adds a building: a copy of the sector `template` named `name`, its walls'
    /// north-west corner at `origin` (past the map's edge, the map grows). Refused, writing
    /// nothing, when it does not fit ([`Definition::add_building`] says why).
    pub fn add_building(
        &mut self,
        template: &str,
        name: &str,
        origin: Tile,
    ) -> Result<EventId, SimError> {
        self.check_add_building(template, name, origin)?;
        let building =
            Intervention::AddBuilding { template: template.into(), name: name.into(), origin };
        self.intervene(building)
    }

    /// Whether [`Sim::add_building`] would be refused, and why.
    pub fn check_add_building(
        &self,
        template: &str,
        name: &str,
        origin: Tile,
    ) -> Result<(), SimError> {
        let mut trial = self.town.clone();
        trial.add_building(template, name, origin).map_err(SimError::Refused)?;
        if let Some(a) = self.state.agents.values().find(|a| !trial.grid.is_walkable(a.tile)) {
            return Err(SimError::Refused(format!(
                "{} stands at ({}, {}), where the building would put a wall",
                a.name, a.tile.x, a.tile.y
            )));
        }
        Ok(())
    }

    /// Commits what the user did, alone; returns its id.
    fn intervene(&mut self, intervention: Intervention) -> Result<EventId, SimError> {
        let now = self.state.sim_time_secs;
        let mut pending = Pending::new();
        pending.push(now, Body::Intervened(Intervened { intervention }), &[]);
        let ids = self.commit(pending)?;
        ids.first().copied().ok_or_else(|| SimError::Resume("nothing was committed".into()))
    }

    /// What `agent` knows of the town: what it has perceived, plus its home and workplace
    /// (known from the start, as the paper seeds them).
    fn known(&self, agent: AgentId) -> SpatialMemory {
        let mut known = self.spatial.get(&agent).cloned().unwrap_or_default();
        if let Some(places) = self.places.get(&agent) {
            for address in places {
                let mut parts = address.splitn(2, ':');
                if let (Some(sector), Some(arena)) = (parts.next(), parts.next()) {
                    let objects = known
                        .known
                        .entry(sector.to_owned())
                        .or_default()
                        .entry(arena.to_owned())
                        .or_default();
                    if let Some((s, a)) = crate::town::find_arena(&self.town.sectors, address) {
                        for o in &self.town.sectors[s].arenas[a].objects {
                            objects.entry(o.name.clone()).or_insert_with(|| "unknown".to_owned());
                        }
                    }
                }
            }
        }
        known
    }
}
