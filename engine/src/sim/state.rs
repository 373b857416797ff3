//! The folds the loop keeps of the log, and what they tell about an agent now: its
//! strategy, summary, status and place, whether it is busy or asleep, what it knows of the
//! town. `fold` is the only way the loop learns anything; a resumed run refolds the branch.
//! Must not: use `agent.rs`, `converse.rs` or `intervene.rs` (they use this file), or
//! fold anything but the events (no clock, no model answer that is not in the log).

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::event::{
    AgentId, CommitmentMade, Intervention, MayorAct, MemoryKind, PlanLevel, PlanMade,
};
use hamlet_log::{Body, Event, EventId};

use crate::fold::Town;
use crate::mind::memory::{seed_statements, Minds};
use crate::mind::schedule::Schedules;
use crate::mind::think::{remember, Who};
use crate::pending::{Pending, PendingId};
use crate::rulebook::Mechanism;
use crate::store::{Storage, StoreError};
use crate::town::spatial::SpatialMemory;

use super::social::{invitation, Invitation};
use super::{Sim, SimError};

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

/// The query of the continue-or-react question's second retrieval, after the agent's name
/// (see [`should_react`]).
///
/// [`should_react`]: crate::mind::respond::should_react
const RELATIONSHIP: &str = "'s relationship with ";

/// The folds the loop keeps of the log (all empty before its first event; a refold starts
/// from them again).
#[derive(Default)]
pub(super) struct Folds {
    pub(super) state: Town,
    /// The model each agent thinks with, where its town or add-agent named one.
    pub(super) models: BTreeMap<AgentId, String>,
    /// Each agent's life goal, where its town gave one.
    pub(super) goals: BTreeMap<AgentId, String>,
    /// The agents that plan toward their goal (`planning = "goal_qa"`), not by the paper's
    /// day plan.
    pub(super) goal_planners: BTreeSet<AgentId>,
    /// The mayor's acts, in order: what every agent reads as a notice.
    pub(super) notices: Vec<super::mayor::Notice>,
    /// Which agent has read which notice (folded from the memories the notices caused).
    pub(super) noticed: BTreeSet<(AgentId, EventId)>,
    /// Which agent was offered which job (folded from the `job_offer` calls it caused).
    pub(super) job_asked: BTreeSet<(AgentId, EventId)>,
    /// When each agent took its last job of the mayor's (its `JobTaken`).
    pub(super) job_taken_at: BTreeMap<AgentId, u64>,
    /// When the mayor agent last decided what to do for the town (its `mayor_act` call).
    pub(super) mayor_decided: Option<u64>,
    pub(super) minds: Minds,
    pub(super) schedules: Schedules,
    pub(super) spatial: BTreeMap<AgentId, SpatialMemory>,
    pub(super) last_seen: BTreeMap<AgentId, BTreeMap<String, u64>>,
    pub(super) last_reflection: BTreeMap<AgentId, u64>,
    pub(super) strategies: BTreeMap<AgentId, Strategy>,
    /// When each pair (lower id first) last started talking.
    pub(super) last_talk: BTreeMap<(AgentId, AgentId), u64>,
    /// Open conversations: who, where, and the lines so far (speaker, words).
    pub(super) dialogues: BTreeMap<EventId, Dialogue>,
    /// Inner-voice instructions heard since each agent's last day plan (its next day plan
    /// is made with them in mind).
    pub(super) intentions: BTreeMap<AgentId, Vec<String>>,
    /// Open conversations in the order they started (ids depend on measured latencies, so
    /// they must not decide an order).
    pub(super) started: Vec<EventId>,
    /// Until when each agent spends the minutes after a conversation talking.
    pub(super) talking_until: BTreeMap<AgentId, u64>,
    /// When each agent last asked itself whether to react to another (folded from the
    /// relationship retrieval that question makes).
    pub(super) considered: BTreeMap<(AgentId, AgentId), u64>,
    /// Each agent's summary description, the day it was last asked for, and the answer it
    /// came from (folded from the `summary` call's events; a day whose answer was the
    /// fallback keeps the description it had).
    pub(super) summaries: BTreeMap<AgentId, (u64, String, Option<EventId>)>,
    /// The `summary` calls asked, by request hash, so their answers are folded.
    pub(super) summary_asked: BTreeMap<[u8; 32], AgentId>,
    /// Each agent's `currently` as it renewed it (rulebook 4), the day it was last asked for,
    /// and the answer it came from; before its first renewal, the town file's.
    pub(super) currently: BTreeMap<AgentId, (u64, String, Option<EventId>)>,
    /// The `currently` calls asked, by request hash, so their answers are folded.
    pub(super) currently_asked: BTreeMap<[u8; 32], AgentId>,
    /// Each agent's latest day plan (yesterday's, when it plans today).
    pub(super) day_plans: BTreeMap<AgentId, PlanMade>,
    /// What each speaker wants from an open conversation (rulebook 4), by conversation and
    /// speaker: folded from the `intention` calls, whose requests the conversation caused.
    pub(super) intents: BTreeMap<(EventId, AgentId), String>,
    /// The `intention` calls asked, by request hash: their conversation and speaker.
    pub(super) intent_asked: BTreeMap<[u8; 32], (EventId, AgentId)>,
    /// Every line said in a conversation that has ended, as words and text, in order: what a
    /// new line must not repeat (rulebook 4).
    pub(super) said: Vec<(BTreeSet<String>, String)>,
    /// Each agent's commitments, in the order made (rulebook 4).
    pub(super) commitments: BTreeMap<AgentId, Vec<CommitmentMade>>,
    /// The run's configuration as it stands: the last `RunConfigured` of the branch's history
    /// (a fork may run by other rules than its parent, [`Sim::reconfigure`]).
    pub(super) configured: Option<hamlet_log::event::RunConfigured>,
    /// The places each agent knows from the start: its home and workplace (`sector:arena`,
    /// from the traits it joined with).
    pub(super) places: BTreeMap<AgentId, Vec<String>>,
    /// Every invitation to a hosted event made so far (rulebook 6): at the start of each
    /// conversation, what each speaker would invite the other to (`social::invitation`).
    pub(super) invited: BTreeSet<Invitation>,
    /// The invitations of each open conversation.
    pub(super) inviting: BTreeMap<EventId, Vec<Invitation>>,
}

/// An open conversation, as the loop folds it.
#[derive(Clone, Debug, Default)]
pub(super) struct Dialogue {
    pub(super) agents: Vec<AgentId>,
    pub(super) address: String,
    /// The lines so far: speaker, words (empty when the speaker fell silent).
    pub(super) lines: Vec<(AgentId, String)>,
}

/// What one agent's thinking leads to beyond its own batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Talk {
    /// Whom it decided to talk to.
    pub(super) with: AgentId,
    /// The decision's last event, in the agent's batch.
    pub(super) decided: PendingId,
}

impl<S: Storage> Sim<S> {
    /// Before the first step, every agent's seed statements that are not yet memories
    /// (all of them at the start; the rest if a start was interrupted) are rated, embedded
    /// and committed, agent by agent.
    pub(super) async fn remember_seeds(&mut self) -> Result<(), SimError> {
        let now = self.folds.state.sim_time_secs;
        let missing: Vec<(AgentId, String, Vec<String>)> = self
            .folds
            .state
            .agents
            .iter()
            .filter_map(|(id, a)| {
                let have: BTreeSet<&str> = self
                    .folds
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
                (self.folds.state.step == 0 && !rest.is_empty())
                    .then(|| (*id, a.name.clone(), rest))
            })
            .collect();
        // The first agent's seeds alone, so that what they find out about the server (say,
        // that it gives no probabilities to read ratings from) is in the log before the
        // others ask; then every other agent's at once (their calls overlap at the gateway),
        // committed in agent order: the log is the one a loop over the agents would write.
        let style = self.settings.style;
        let jobs: Vec<(AgentId, String, Vec<String>, String)> = missing
            .into_iter()
            .map(|(agent, name, seeds)| (agent, name, seeds, self.summary(agent)))
            .collect();
        let (first, rest) = jobs.split_at(jobs.len().min(1));
        let mut first_error = None;
        for batch in [first, rest] {
            let gateway = &self.gateway;
            let town = self.town.name.as_str();
            let done = futures::future::join_all(batch.iter().map(
                |(agent, name, seeds, summary)| async move {
                    let mut pending = Pending::new();
                    let who = Who { town, agent: *agent, name, summary };
                    let result = remember(
                        gateway,
                        style,
                        &who,
                        MemoryKind::Seed,
                        seeds,
                        &[],
                        &[],
                        now,
                        &mut pending,
                    )
                    .await;
                    (pending, result)
                },
            ))
            .await;
            // Every call made is kept, those of agents after one that failed too.
            for (pending, result) in done {
                self.commit(pending)?;
                if let (Err(e), None) = (result, &first_error) {
                    first_error = Some(e);
                }
            }
            if first_error.is_some() {
                // (A server that refuses the first agent refuses the rest: ask it once.)
                break;
            }
        }
        first_error.map_or(Ok(()), |e| Err(e.into()))
    }

    /// Folds the whole branch again.
    pub(super) fn refold(&mut self) -> Result<(), StoreError> {
        let head = self.store.branch(self.branch).map_or(0, |b| b.head_seq);
        let events = self.store.events(self.branch, 0, head)?;
        self.folds = Folds::default();
        for event in &events {
            self.fold(event);
        }
        Ok(())
    }

    pub(super) fn fold(&mut self, event: &Event) {
        self.folds.state.apply(event);
        self.folds.minds.apply(event);
        self.folds.schedules.apply(event);
        // (A fork's first event does not end the step its parent stopped in, nor does a
        // rename: neither is part of a step.)
        if !matches!(event.body, Body::BranchCreated(_) | Body::BranchRenamed(_)) {
            self.at_tick = matches!(event.body, Body::ClockStepped(_));
        }
        match &event.body {
            Body::Perceived(p) => {
                self.folds.spatial.entry(p.agent).or_default().apply(p.agent, event);
                let seen = self.folds.last_seen.entry(p.agent).or_default();
                let step = self.folds.state.step;
                for percept in &p.percepts {
                    seen.insert(percept.subject.clone(), step);
                }
                // What was seen before the retention window counts as never seen: forgotten
                // now and then, so the map stays the size of what is around.
                if seen.len() > 64 {
                    let window = u64::from(self.town.perception.retention_steps);
                    seen.retain(|_, at| step.saturating_sub(*at) <= window);
                }
            }
            Body::RunConfigured(c) => {
                // A strategy for everyone (a fork of the paper's ablations).
                let all = c.settings.iter().find(|(k, _)| k == crate::rulebook::STRATEGY_SETTING);
                if let Some(strategy) = all.and_then(|(_, v)| Strategy::named(v)) {
                    self.folds.strategies.values_mut().for_each(|s| *s = strategy);
                }
                self.folds.configured = Some(c.clone());
            }
            Body::ReflectionStarted(r) => {
                self.folds.last_reflection.insert(r.agent, event.sim_time_secs());
            }
            Body::Intervened(i) => match &i.intervention {
                Intervention::InnerVoice { agent, text } => {
                    self.folds.intentions.entry(*agent).or_default().push(text.clone());
                }
                Intervention::SetModel { agent, model } => {
                    self.gateway.route(*agent, model);
                    self.folds.models.insert(*agent, model.clone());
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
                // A day plan made again on its own day (around a commitment) keeps what the
                // agent had in mind for the next.
                let day = |p: &PlanMade| p.items.first().map(|i| i.start_secs / 86_400);
                let again = self
                    .folds
                    .day_plans
                    .get(&p.agent)
                    .is_some_and(|old| day(old).is_some() && day(old) == day(p));
                if !again {
                    self.folds.intentions.remove(&p.agent);
                }
                self.folds.day_plans.insert(p.agent, p.clone());
            }
            Body::LlmRequested(r) if r.template == "summary" => {
                if let Some(agent) = r.agent {
                    self.folds.summary_asked.insert(r.request_hash, agent);
                }
            }
            Body::LlmRequested(r) if r.template == "intention" => {
                let conversation = event
                    .header
                    .causes
                    .iter()
                    .find(|c| self.folds.dialogues.contains_key(c))
                    .copied();
                if let (Some(agent), Some(conversation)) = (r.agent, conversation) {
                    self.folds.intent_asked.insert(r.request_hash, (conversation, agent));
                }
            }
            Body::CommitmentMade(c) => {
                self.folds.commitments.entry(c.agent).or_default().push(c.clone());
            }
            Body::LlmRequested(r) if r.template == "currently" => {
                if let Some(agent) = r.agent {
                    self.folds.currently_asked.insert(r.request_hash, agent);
                }
            }
            Body::LlmResponded(r) if r.fallback || r.parsed.is_some() => {
                // A summary's answer, or the empty fallback: either way the day is done.
                if let Some(agent) = self.folds.summary_asked.remove(&r.request_hash) {
                    let day = event.sim_time_secs() / 86_400;
                    let entry =
                        self.folds.summaries.entry(agent).or_insert((day, String::new(), None));
                    entry.0 = day;
                    if !r.fallback {
                        (entry.1, entry.2) = (r.text.trim().to_owned(), Some(event.id));
                    }
                }
                // An intention, as `social::intention` made it of the answer.
                if let Some(key) = self.folds.intent_asked.remove(&r.request_hash) {
                    let name = self.folds.state.agents.get(&key.1).map_or("", |a| a.name.as_str());
                    let text = crate::mind::social::as_intention(&r.text, name);
                    let text = if r.fallback || text.is_empty() {
                        crate::mind::social::NO_INTENTION.to_owned()
                    } else {
                        text
                    };
                    self.folds.intents.insert(key, text);
                }
                // A renewed `currently`, or the fallback: the day is done either way.
                if let Some(agent) = self.folds.currently_asked.remove(&r.request_hash) {
                    let day = event.sim_time_secs() / 86_400;
                    let entry =
                        self.folds.currently.entry(agent).or_insert((day, String::new(), None));
                    entry.0 = day;
                    let text = crate::mind::respond::one_line(&r.text);
                    if !r.fallback && !text.is_empty() {
                        (entry.1, entry.2) = (text, Some(event.id));
                    }
                }
            }
            Body::MayorActed(m) => {
                if let MayorAct::Found { template, name, site, .. } = &m.act {
                    let origin = self.town.mayor.as_ref().and_then(|rules| {
                        rules.sites.iter().find(|s| s.name == *site).map(|s| s.origin)
                    });
                    // Checked before it was written; a resumed run's town may hold it already.
                    if let Some(origin) = origin {
                        if self.town.sectors.iter().all(|s| s.name != *name) {
                            let _ = self.town.add_building(template, name, origin);
                        }
                    }
                }
                self.folds.notices.push(super::mayor::Notice {
                    event: event.id,
                    mayor: m.mayor,
                    act: m.act.clone(),
                });
            }
            Body::JobTaken(j) => {
                self.folds.job_taken_at.insert(j.agent, event.sim_time_secs());
            }
            Body::MemoryAdded(m) if !self.folds.notices.is_empty() => {
                for cause in &event.header.causes {
                    if self.folds.notices.iter().any(|n| n.event == *cause) {
                        self.folds.noticed.insert((m.agent, *cause));
                    }
                }
            }
            // A decision opens with `mayor_where` (runs before it asked `mayor_act` first).
            Body::LlmRequested(r)
                if (r.template == "mayor_where" || r.template == "mayor_act") && r.attempt == 1 =>
            {
                self.folds.mayor_decided = Some(event.sim_time_secs());
            }
            Body::LlmRequested(r) if r.template == "job_offer" => {
                if let Some(agent) = r.agent {
                    for cause in &event.header.causes {
                        self.folds.job_asked.insert((agent, *cause));
                    }
                }
            }
            Body::AgentJoined(j) => {
                // An agent its town (or add-agent) gave a model thinks with it.
                let model = j.traits.iter().find(|(k, _)| k == hamlet_core::town::MODEL_TRAIT);
                if let Some((_, name)) = model {
                    self.gateway.route(j.agent, name);
                    self.folds.models.insert(j.agent, name.clone());
                }
                let goal = j.traits.iter().find(|(k, _)| k == hamlet_core::town::GOAL_TRAIT);
                if let Some((_, goal)) = goal {
                    self.folds.goals.insert(j.agent, goal.clone());
                }
                let planning =
                    j.traits.iter().find(|(k, _)| k == hamlet_core::town::PLANNING_TRAIT);
                if planning.is_some_and(|(_, p)| p == "goal_qa") {
                    self.folds.goal_planners.insert(j.agent);
                }
                let named = j.traits.iter().find(|(k, _)| k == "strategy");
                // A run's strategy for everyone stands over the town file's.
                let all = self.folds.configured.as_ref().and_then(|c| {
                    c.settings.iter().find(|(k, _)| k == crate::rulebook::STRATEGY_SETTING)
                });
                let strategy = all.or(named).and_then(|(_, v)| Strategy::named(v));
                self.folds.strategies.insert(j.agent, strategy.unwrap_or(Strategy::Full));
                let place = |key: &str| j.traits.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                let known = place("home").into_iter().chain(place("workplace")).cloned();
                self.folds.places.insert(j.agent, known.collect());
            }
            Body::ConversationStarted(c) => {
                if let [a, b] = c.agents[..] {
                    self.folds.last_talk.insert((a.min(b), a.max(b)), event.sim_time_secs());
                }
                // Only a conversation the town took (its agents exist) is run.
                if self.folds.state.conversations.contains_key(&event.id) {
                    let dialogue = Dialogue {
                        agents: c.agents.clone(),
                        address: c.address.clone(),
                        lines: Vec::new(),
                    };
                    self.folds.dialogues.insert(event.id, dialogue);
                    self.folds.started.push(event.id);
                    // What each would invite the other to (read from rulebook 6 only).
                    if let [a, b] = c.agents[..] {
                        let now = event.sim_time_secs();
                        let asks: Vec<Invitation> = [(a, b), (b, a)]
                            .into_iter()
                            .filter_map(|(x, y)| invitation(&self.town, &self.folds, x, y, now))
                            .collect();
                        self.folds.invited.extend(asks.iter().copied());
                        if !asks.is_empty() {
                            self.folds.inviting.insert(event.id, asks);
                        }
                    }
                }
            }
            Body::DialogueTurn(t) => {
                if let Some(d) = self.folds.dialogues.get_mut(&t.conversation) {
                    d.lines.push((t.speaker, t.text.clone()));
                }
            }
            Body::Retrieved(r) => {
                // The continue-or-react question recalls "A's relationship with B".
                let me = self.folds.state.agents.get(&r.agent).map(|a| a.name.as_str());
                let about = me
                    .and_then(|me| r.query.strip_prefix(me))
                    .and_then(|rest| rest.strip_prefix(RELATIONSHIP));
                let other = about.and_then(|name| {
                    self.folds.state.agents.iter().find(|(_, a)| a.name == name).map(|(id, _)| *id)
                });
                if let Some(other) = other {
                    self.folds.considered.insert((r.agent, other), event.sim_time_secs());
                }
            }
            Body::ConversationEnded(e) => {
                self.folds.started.retain(|c| *c != e.conversation);
                self.folds.intents.retain(|(c, _), _| *c != e.conversation);
                self.folds.inviting.remove(&e.conversation);
                if let Some(d) = self.folds.dialogues.remove(&e.conversation) {
                    for (_, text) in d.lines.iter().filter(|(_, t)| !t.is_empty()) {
                        self.folds.said.push((crate::mind::validate::words(text), text.clone()));
                    }
                    let said = d.lines.iter().filter(|(_, text)| !text.is_empty()).count();
                    let until = event.sim_time_secs() + self.talk_secs(said);
                    for agent in d.agents {
                        self.folds.talking_until.insert(agent, until);
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn address_of(&self, agent: AgentId) -> String {
        let tile = self.folds.state.agents.get(&agent).map(|a| a.tile);
        tile.and_then(|t| self.town.address_of(t)).unwrap_or_default()
    }

    /// Who an agent is, as every one of its prompts opens: its summary description (the
    /// latest it wrote from its memories, or, before the first or when the model gave none,
    /// its seed paragraph), and by rulebook 4 what it is busy with ([`Sim::currently`]).
    pub(super) fn summary(&self, agent: AgentId) -> String {
        let summary = match self.folds.summaries.get(&agent) {
            Some((_, text, _)) if !text.is_empty() => text.clone(),
            _ => {
                let persona =
                    self.folds.state.agents.get(&agent).map_or("", |a| a.persona.as_str());
                seed_statements(persona).join("; ")
            }
        };
        self.identity(agent, summary)
    }

    /// `summary`, its life goal if its town gave one, and, by rulebook 4
    /// ([`Mechanism::Currently`]), the agent's `currently`, each on a line of its own: the
    /// identity block of its prompts.
    pub(super) fn identity(&self, agent: AgentId, summary: String) -> String {
        let mut out = self.with_goal(agent, summary);
        if let Some(now) = self.currently(agent) {
            out.push_str("\nCurrently: ");
            out.push_str(&now);
        }
        out
    }

    /// `summary` and the agent's life goal on a line of its own, if its town gave one.
    pub(super) fn with_goal(&self, agent: AgentId, summary: String) -> String {
        match self.folds.goals.get(&agent) {
            Some(goal) => format!("{summary}\nLife goal: {goal}"),
            None => summary,
        }
    }

    /// What `agent` is busy with, by rulebook 4: the line it renewed last, else its town
    /// file's `currently`; `None` when it has neither, or the run leaves the mechanism out.
    pub(super) fn currently(&self, agent: AgentId) -> Option<String> {
        if !self.settings.rulebook.uses(Mechanism::Currently) {
            return None;
        }
        if let Some((_, text, _)) = self.folds.currently.get(&agent).filter(|c| !c.1.is_empty()) {
            return Some(text.clone());
        }
        let name = self.folds.state.agents.get(&agent).map(|a| a.name.as_str())?;
        let persona = self.town.personas.iter().find(|p| p.name == name)?;
        persona.currently.clone()
    }

    /// What `agent` is doing at `now`, in words.
    pub(super) fn status(&self, agent: AgentId, now: u64) -> String {
        let action = self.folds.state.agents.get(&agent).and_then(|a| a.action.as_ref());
        match action {
            Some(a) if a.started_secs + u64::from(a.duration_secs) > now => a.description.clone(),
            _ => "idle".to_owned(),
        }
    }

    /// True while `agent` talks, or spends the minutes after a conversation talking.
    pub(super) fn busy(&self, agent: AgentId, now: u64) -> bool {
        let Some(a) = self.folds.state.agents.get(&agent) else { return true };
        a.conversation.is_some() || self.folds.talking_until.get(&agent).is_some_and(|&t| now < t)
    }

    /// How long a conversation of `lines` lines takes: two steps for the first line and
    /// one for each further one, at least a minute.
    pub(super) fn talk_secs(&self, lines: usize) -> u64 {
        let step = u64::from(self.town.seconds_per_step.max(1));
        ((lines as u64 + 1) * step).max(60)
    }

    /// True between midnight and the waking time.
    pub(super) fn before_waking(&self, now: u64) -> bool {
        now % 86_400 < u64::from(self.settings.wake_minute) * 60
    }

    /// True while `agent` sleeps (its action says so) or has not yet woken today.
    pub(super) fn asleep(&self, agent: AgentId, now: u64) -> bool {
        self.before_waking(now) || self.status(agent, now).to_ascii_lowercase().contains("sleep")
    }

    /// What `agent` knows of the town: what it has perceived, plus its home and workplace
    /// (known from the start, as the paper seeds them) and the town's public places (a town
    /// file that marks none leaves every agent knowing only its own places and what it has
    /// seen).
    pub(super) fn known(&self, agent: AgentId) -> SpatialMemory {
        let mut known = self.folds.spatial.get(&agent).cloned().unwrap_or_default();
        let public = self.town.sectors.iter().flat_map(|s| {
            s.arenas.iter().filter(|a| a.public).map(move |a| format!("{}:{}", s.name, a.name))
        });
        let own = self.folds.places.get(&agent).into_iter().flatten().cloned();
        for address in own.chain(public) {
            let Some((sector, arena)) = address.split_once(':') else { continue };
            let objects = known
                .known
                .entry(sector.to_owned())
                .or_default()
                .entry(arena.to_owned())
                .or_default();
            if let Some((s, a)) = crate::town::find_arena(&self.town.sectors, &address) {
                for o in &self.town.sectors[s].arenas[a].objects {
                    objects.entry(o.name.clone()).or_insert_with(|| "unknown".to_owned());
                }
            }
        }
        known
    }
}
