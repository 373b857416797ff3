//! The simulation loop, one step at a time: the clock advances; each agent perceives,
//! remembers what is new, plans (day, hour parts, actions) when its schedule needs it,
//! chooses where to act, starts the action and walks one tile; reflects when its recent
//! memories pass the threshold. Every agent's events form one batch; batches are committed
//! in agent order, so the log does not depend on which model answer came first. All state
//! the loop reads is folded from the log, so a run resumes from its store.
//!
//! Still to come (see the agent-minds issue): conversations when agents meet, reactions
//! re-planning, per-agent strategies, concurrency within a step, `hamlet run`.

use std::collections::BTreeMap;

use hamlet_gateway::Gateway;
use hamlet_log::event::{AgentId, MemoryKind, Perceived};
use hamlet_log::{Body, BranchId, Event};

use crate::fold::Town;
use crate::mind::memory::{seed_statements, Minds};
use crate::mind::plan::{choose_place, decompose, plan_day};
use crate::mind::prompt::Style;
use crate::mind::retrieval::RetrievalSettings;
use crate::mind::schedule::{Need, Schedules};
use crate::mind::think::{reflect, reflection_due, remember, ReflectionSettings, ThinkError};
use crate::pending::{Cause, Pending};
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
}

impl Default for SimSettings {
    fn default() -> SimSettings {
        SimSettings {
            style: Style::Chat,
            retrieval: RetrievalSettings::default(),
            reflection: ReflectionSettings::default(),
            wake_minute: 7 * 60,
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
    state: Town,
    minds: Minds,
    schedules: Schedules,
    spatial: BTreeMap<AgentId, SpatialMemory>,
    last_seen: BTreeMap<AgentId, BTreeMap<String, u64>>,
    last_reflection: BTreeMap<AgentId, u64>,
}

impl<S: Storage> Sim<S> {
    /// Starts a run of `town` on a new root branch `name`: genesis, then every agent's seed
    /// memories (rated and embedded).
    pub async fn start(
        mut store: Store<S>,
        name: &str,
        town: Definition,
        seed: u64,
        gateway: Gateway,
        settings: SimSettings,
    ) -> Result<Sim<S>, SimError> {
        let branch = store.create_root(name)?;
        store.append_durable(branch, &genesis::genesis(&town, seed))?;
        let mut sim = Sim {
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
        };
        sim.refold()?;
        let now = sim.state.sim_time_secs;
        let agents: Vec<(AgentId, String, String)> = sim
            .state
            .agents
            .iter()
            .map(|(id, a)| (*id, a.name.clone(), a.persona.clone()))
            .collect();
        for (agent, name, persona) in agents {
            let mut pending = Pending::new();
            let seeds = seed_statements(&persona);
            let style = sim.settings.style;
            let result = remember(
                &sim.gateway,
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
            sim.commit(pending)?;
            result?;
        }
        Ok(sim)
    }

    /// Folds the whole branch again (on start and resume).
    fn refold(&mut self) -> Result<(), StoreError> {
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let events = self.store.events(self.branch, 0, head)?;
        self.state = Town::default();
        self.minds = Minds::default();
        self.schedules = Schedules::default();
        self.spatial.clear();
        for event in &events {
            self.fold(event);
        }
        Ok(())
    }

    fn fold(&mut self, event: &Event) {
        self.state.apply(event);
        self.minds.apply(event);
        self.schedules.apply(event);
        if let Body::Perceived(p) = &event.body {
            self.spatial.entry(p.agent).or_default().apply(p.agent, event);
            let seen = self.last_seen.entry(p.agent).or_default();
            for percept in &p.percepts {
                seen.insert(percept.subject.clone(), self.state.step);
            }
        }
        if let Body::ReflectionStarted(r) = &event.body {
            self.last_reflection.insert(r.agent, event.sim_time_secs());
        }
    }

    /// Commits a batch and folds what was committed.
    fn commit(&mut self, pending: Pending) -> Result<(), StoreError> {
        if pending.is_empty() {
            return Ok(());
        }
        let from = self.store.branch(self.branch).map_or(0, |b| b.head_seq) + 1;
        pending.commit(&mut self.store, self.branch)?;
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        for event in self.store.events(self.branch, from, head)? {
            self.fold(&event);
        }
        Ok(())
    }

    /// The town as folded so far.
    pub fn state(&self) -> &Town {
        &self.state
    }

    /// The store.
    pub fn store(&self) -> &Store<S> {
        &self.store
    }

    /// The branch written.
    pub fn branch(&self) -> BranchId {
        self.branch
    }

    /// One step of the clock and of every agent.
    pub async fn step(&mut self) -> Result<(), SimError> {
        let tick = clock::advance(&self.town, &self.state, 1);
        self.store.append_durable(self.branch, &[tick])?;
        self.refold_tail()?;
        let ids: Vec<AgentId> = self.state.agents.keys().copied().collect();
        for agent in ids {
            let batch = self.think(agent).await;
            let (pending, result) = match batch {
                Ok(p) => (p, Ok(())),
                Err((p, e)) => (p, Err(e)),
            };
            self.commit(pending)?;
            result?;
        }
        Ok(())
    }

    fn refold_tail(&mut self) -> Result<(), StoreError> {
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let event = self.store.event_at(self.branch, head)?;
        self.fold(&event);
        Ok(())
    }

    /// One agent's step, as a batch (also when a call failed: its events are kept).
    async fn think(&mut self, agent: AgentId) -> Result<Pending, (Pending, SimError)> {
        let mut pending = Pending::new();
        match self.think_into(agent, &mut pending).await {
            Ok(()) => Ok(pending),
            Err(e) => Err((pending, e)),
        }
    }

    async fn think_into(&mut self, agent: AgentId, pending: &mut Pending) -> Result<(), SimError> {
        let now = self.state.sim_time_secs;
        let step = self.state.step;
        let style = self.settings.style;
        let Some(me) = self.state.agents.get(&agent).cloned() else { return Ok(()) };
        let name = me.name.clone();
        // Perceive, and remember what is new.
        let seen = self.last_seen.get(&agent).cloned().unwrap_or_default();
        let percepts = perception::perceive(&self.town, &self.state, agent, step, &seen);
        if !percepts.is_empty() {
            let at = pending.push(
                now,
                Body::Perceived(Perceived { agent, percepts: percepts.clone() }),
                &[],
            );
            let observations: Vec<String> =
                percepts.iter().map(|p| format!("{} is {}", p.subject, p.description)).collect();
            remember(
                &self.gateway,
                style,
                agent,
                &name,
                MemoryKind::Observation,
                &observations,
                &[],
                &[Cause::Pending(at)],
                now,
                pending,
            )
            .await?;
        }
        let summary = seed_statements(&me.persona).join("; ");
        // Plan, decompose or act.
        match self.schedules.of(agent).need(now) {
            Need::PlanDay => {
                let day_start = now - now % 86_400;
                plan_day(
                    &self.gateway,
                    style,
                    agent,
                    &name,
                    &summary,
                    "an ordinary day",
                    self.settings.wake_minute,
                    day_start,
                    now,
                    pending,
                )
                .await?;
            }
            Need::Decompose { item, what, level } => {
                decompose(
                    &self.gateway,
                    style,
                    agent,
                    &name,
                    &summary,
                    &what,
                    item,
                    level,
                    now,
                    pending,
                )
                .await?;
            }
            Need::Act { item, what } => {
                let doing = me.action.as_ref().filter(|a| a.plan_item == Some(item));
                let address = match doing {
                    Some(a) => a.address.clone(),
                    None => {
                        let here = self.town.address_of(me.tile).unwrap_or_default();
                        let mut parts = here.splitn(3, ':');
                        let here = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                        let known = self.known(agent);
                        let (address, chose) = choose_place(
                            &self.gateway,
                            style,
                            agent,
                            &name,
                            &known,
                            here,
                            &what.description,
                            now,
                            pending,
                        )
                        .await?;
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
        // Reflect when the recent memories pass the threshold.
        let since = self.last_reflection.get(&agent).copied().unwrap_or(0);
        if let Some(sum) =
            reflection_due(self.minds.stream(agent), since, &self.settings.reflection)
        {
            let stream = self.minds.stream(agent).clone();
            reflect(
                &self.gateway,
                style,
                agent,
                &name,
                &stream,
                sum,
                now,
                &self.settings.reflection,
                &self.settings.retrieval,
                pending,
            )
            .await?;
        }
        Ok(())
    }

    /// What `agent` knows of the town: what it has perceived, plus its home and workplace
    /// (known from the start, as the paper seeds them).
    fn known(&self, agent: AgentId) -> SpatialMemory {
        let mut known = self.spatial.get(&agent).cloned().unwrap_or_default();
        if let Some(p) = self.town.personas.get(agent.0 as usize) {
            for address in std::iter::once(&p.home).chain(p.workplace.iter()) {
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
