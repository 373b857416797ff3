//! Changes from outside the town: the user's voice (`interview`, `inner_voice`) and the
//! user's edits (`set_object`, `happen`, `edit_persona`, `add_agent`, `add_building`), each written
//! as an `Intervened` event and what follows from it, and each `check_*` that refuses one
//! before anything is written. Must not: write anything for a refused change, or change a
//! fold except by committing events.

use std::collections::BTreeSet;

use hamlet_log::event::{
    AgentId, AgentJoined, Intervened, Intervention, MemoryKind, PlanItem, PlanLevel, Tile,
};
use hamlet_log::{Body, EventId};

use crate::describe::sim_time;
use crate::mind::memory::seed_statements;
use crate::mind::plan::{decompose, summarise};
use crate::mind::respond::{answer_interview, hear_inner_voice, judge_goal, Situation};
use crate::mind::think::{remember, Who};
use crate::pending::{Cause, Pending};
use crate::store::Storage;
use crate::town::find_arena;

use super::state::Strategy;
use super::{Sim, SimError};

impl<S: Storage> Sim<S> {
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
        self.check_voice(agent, question)?;
        let asked = Intervention::Interview { agent, question: question.to_owned(), remember };
        let question_event = self.intervene(asked)?;
        let now = self.folds.state.sim_time_secs;
        let mut pending = Pending::new();
        let result = {
            let (summary, time, status) =
                (self.summary(agent), self.town.moment_words(now), self.status(agent, now));
            let name = self.folds.state.agents.get(&agent).map_or("", |a| a.name.as_str());
            let who = Situation {
                town: &self.town.name,
                agent,
                name,
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.folds.minds.stream(agent),
                rulebook: self.settings.rulebook,
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

    /// The agents with a life goal, and each one's goal.
    pub fn goals(&self) -> Vec<(AgentId, String)> {
        self.folds.goals.iter().map(|(a, g)| (*a, g.clone())).collect()
    }

    /// How far `agent` has come toward its life goal, from 1 to 10, as `judge` rates it from
    /// the memories that bear on the goal (`None`: the judge gave no rating). The recall and
    /// the judge's calls are written to this branch: make it a scratch fork, so the branch
    /// measured stays untouched.
    pub async fn judge_goal(
        &mut self,
        agent: AgentId,
        judge: &hamlet_gateway::Gateway,
    ) -> Result<Option<u8>, SimError> {
        let Some(goal) = self.folds.goals.get(&agent).cloned() else {
            return Err(SimError::refused("agent", format!("agent {} has no goal", agent.0)));
        };
        let now = self.folds.state.sim_time_secs;
        let mut pending = Pending::new();
        let result = {
            let (summary, time, status) =
                (self.summary(agent), self.town.moment_words(now), self.status(agent, now));
            let name = self.folds.state.agents.get(&agent).map_or("", |a| a.name.as_str());
            let who = Situation {
                town: &self.town.name,
                agent,
                name,
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.folds.minds.stream(agent),
                rulebook: self.settings.rulebook,
            };
            judge_goal(
                &self.gateway,
                judge,
                self.settings.style,
                &who,
                &goal,
                now,
                &self.settings.retrieval,
                &mut pending,
            )
            .await
        };
        self.commit(pending)?;
        Ok(result?)
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
        self.check_voice(agent, instruction)?;
        let heard = Intervention::InnerVoice { agent, text: instruction.to_owned() };
        let instruction_event = self.intervene(heard)?;
        let now = self.folds.state.sim_time_secs;
        let style = self.settings.style;
        let mut pending = Pending::new();
        let result = async {
            let (summary, time, status) =
                (self.summary(agent), self.town.moment_words(now), self.status(agent, now));
            let name = self.folds.state.agents.get(&agent).map_or("", |a| a.name.as_str());
            let who = Situation {
                town: &self.town.name,
                agent,
                name,
                summary: &summary,
                time: &time,
                status: &status,
                stream: self.folds.minds.stream(agent),
                rulebook: self.settings.rulebook,
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
            let (what, of) = match self.folds.schedules.of(agent).hour_under_way(now) {
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
                &Who { town: &self.town.name, agent, name, summary: &summary },
                &self.town.day_words(start / 86_400),
                &what,
                of,
                PlanLevel::Action,
                self.settings.rulebook,
                self.action_checks(agent).as_deref(),
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

    /// Whether [`Sim::interview`] or [`Sim::inner_voice`] would be refused, and why: the
    /// agent must be in the town and the words not empty.
    pub fn check_voice(&self, agent: AgentId, text: &str) -> Result<(), SimError> {
        if !self.folds.state.agents.contains_key(&agent) {
            return Err(SimError::refused("agent", format!("no agent {}", agent.0)));
        }
        if text.trim().is_empty() {
            return Err(SimError::refused("text", "say something: the text is empty"));
        }
        Ok(())
    }

    /// The user sets an object's state by hand: the object at `address`
    /// (`sector:arena:object`) takes `state`, and agents see it when they next look.
    /// Refused, writing nothing, when the town has no such object.
    pub fn set_object(&mut self, address: &str, state: &str) -> Result<EventId, SimError> {
        self.check_set_object(address, state)?;
        let set = Intervention::SetObjectState { address: address.into(), state: state.into() };
        self.intervene(set)
    }

    /// The user makes something go on at a place until `until_secs` (a fire alarm ringing
    /// at the café, a street musician in the square): whoever is there, or comes, notices it
    /// as out of the ordinary, may stop to deal with it, and remembers it. `place` is a
    /// sector or a `sector:arena`. Refused, writing nothing, when the town has no such
    /// place, the text is empty, or the moment has passed.
    pub fn happen(
        &mut self,
        place: &str,
        text: &str,
        until_secs: u64,
    ) -> Result<EventId, SimError> {
        self.check_happen(place, text, until_secs)?;
        let happening =
            Intervention::Happening { place: place.into(), text: text.trim().into(), until_secs };
        self.intervene(happening)
    }

    /// Whether [`Sim::happen`] would be refused, and why.
    pub fn check_happen(&self, place: &str, text: &str, until_secs: u64) -> Result<(), SimError> {
        let known = match place.split_once(':') {
            Some(_) => find_arena(&self.town.sectors, place).is_some(),
            None => self.town.sectors.iter().any(|s| s.name == place),
        };
        if !known {
            return Err(SimError::refused(
                "place",
                format!(
                    "no place `{place}` in the town (a place is a sector or `sector:arena`; \
                 `hamlet town show` lists them)"
                ),
            ));
        }
        if text.trim().is_empty() {
            return Err(SimError::refused("text", "say what is happening: the text is empty"));
        }
        let now = self.folds.state.sim_time_secs;
        if until_secs <= now {
            return Err(SimError::refused(
                "until",
                format!(
                    "a happening must last past now ({}); it would end at {}",
                    sim_time(now),
                    sim_time(until_secs)
                ),
            ));
        }
        Ok(())
    }

    /// Whether [`Sim::set_object`] would be refused, and why.
    pub fn check_set_object(&self, address: &str, state: &str) -> Result<(), SimError> {
        let exists = self.town.sectors.iter().any(|s| {
            s.arenas.iter().any(|a| {
                a.objects.iter().any(|o| format!("{}:{}:{}", s.name, a.name, o.name) == address)
            })
        });
        if !exists {
            return Err(SimError::refused(
                "address",
                format!(
                    "no object `{address}` in the town (an address is `sector:arena:object`; \
                 `hamlet town show` lists them)"
                ),
            ));
        }
        if state.trim().is_empty() {
            return Err(SimError::refused("state", "an object's state is not empty"));
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
            .folds
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
        let (now, style) = (self.folds.state.sim_time_secs, self.settings.style);
        let mut pending = Pending::new();
        let summary = self.summary(agent);
        let result = remember(
            &self.gateway,
            style,
            &Who { town: &self.town.name, agent, name: &name, summary: &summary },
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
            self.folds.minds.stream(agent),
            now,
            &self.settings.retrieval,
            &mut pending,
        )
        .await;
        self.commit(pending)?;
        result?;
        Ok(new)
    }

    /// The user sets the model `agent` thinks with from now on: `model` names the run's
    /// model or one its gateway has (`Gateway::add_model`). Refused, writing nothing, when
    /// the agent or the model is unknown.
    pub fn set_model(&mut self, agent: AgentId, model: &str) -> Result<EventId, SimError> {
        self.check_set_model(agent, model)?;
        self.intervene(Intervention::SetModel { agent, model: model.to_owned() })
    }

    /// Whether [`Sim::set_model`] would be refused, and why.
    pub fn check_set_model(&self, agent: AgentId, model: &str) -> Result<(), SimError> {
        if !self.folds.state.agents.contains_key(&agent) {
            return Err(SimError::refused("agent", format!("no agent {}", agent.0)));
        }
        if let Some(problem) = crate::town::model_name_problem(model) {
            return Err(SimError::refused("model", problem));
        }
        if !self.gateway.has_model(model) {
            return Err(SimError::refused(
                "model",
                format!(
                    "this run has no model named `{model}`: name `default`, `small`, or a \
                     profile of the config file (`[models.{model}]`)"
                ),
            ));
        }
        Ok(())
    }

    /// Whether [`Sim::edit_persona`] would be refused, and why; else the agent's name.
    pub fn check_edit_persona(&self, agent: AgentId, persona: &str) -> Result<String, SimError> {
        let Some(name) = self.folds.state.agents.get(&agent).map(|a| a.name.clone()) else {
            return Err(SimError::refused("agent", format!("no agent {}", agent.0)));
        };
        if seed_statements(persona).is_empty() {
            return Err(SimError::refused("persona", "the seed paragraph is empty"));
        }
        Ok(name)
    }

    /// The user adds an agent: `name`, with the seed paragraph `persona`, joins at its
    /// `home` (a `sector:arena` of the town, which it knows from the start) with `strategy`
    /// and `cash_cents`, thinking with `model` (a name the run's gateway has, or the run's
    /// model); its seed memories are rated and embedded now, and it plans its day on its next
    /// waking step, as everyone does. Refused, writing nothing, when the name is taken or a
    /// value is wrong. Returns its id.
    pub async fn add_agent(
        &mut self,
        name: &str,
        persona: &str,
        home: &str,
        strategy: &str,
        cash_cents: i64,
        model: Option<&str>,
    ) -> Result<AgentId, SimError> {
        let tile = self.check_add_agent(name, persona, home, strategy, cash_cents, model)?;
        let statements: Vec<String> =
            seed_statements(persona).into_iter().map(str::to_owned).collect();
        let agent = AgentId(self.folds.state.agents.keys().next_back().map_or(0, |a| a.0 + 1));
        let added = Intervention::AddAgent { name: name.into(), persona: persona.into() };
        let added = self.intervene(added)?;
        let now = self.folds.state.sim_time_secs;
        let mut pending = Pending::new();
        let mut traits = vec![
            ("home".to_owned(), home.to_owned()),
            ("strategy".to_owned(), strategy.to_owned()),
        ];
        if let Some(m) = model {
            traits.push((crate::town::MODEL_TRAIT.to_owned(), m.to_owned()));
        }
        traits.sort();
        let joined = AgentJoined {
            agent,
            name: name.to_owned(),
            persona: persona.to_owned(),
            traits,
            tile,
            cash_cents,
        };
        pending.push(now, Body::AgentJoined(joined), &[Cause::Logged(added)]);
        let joined_at = self.commit(pending)?;
        let mut pending = Pending::new();
        let summary = self.summary(agent);
        let result = remember(
            &self.gateway,
            self.settings.style,
            &Who { town: &self.town.name, agent, name, summary: &summary },
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
        model: Option<&str>,
    ) -> Result<Tile, SimError> {
        let refuse = |field, why: String| Err(SimError::refused(field, why));
        if name.trim().is_empty() {
            return refuse("name", "an agent's name is not empty".into());
        }
        if self.folds.state.agents.values().any(|a| a.name.eq_ignore_ascii_case(name)) {
            return refuse("name", format!("the town has an agent named `{name}` already"));
        }
        let statements: Vec<String> =
            seed_statements(persona).into_iter().map(str::to_owned).collect();
        if statements.is_empty() {
            return refuse("persona", "the seed paragraph is empty".into());
        }
        let Some((si, ai)) = crate::town::find_arena(&self.town.sectors, home) else {
            return refuse("home", format!("`{home}` is not a `sector:arena` of the town"));
        };
        let Some(tile) = self.town.sectors[si].arenas[ai].tiles.first().copied() else {
            return refuse("home", format!("`{home}` has no floor"));
        };
        if Strategy::named(strategy).is_none() {
            return refuse(
                "strategy",
                format!(
                    "`{strategy}` is not a strategy; the strategies are: {}",
                    crate::town::STRATEGIES.join(", ")
                ),
            );
        }
        if cash_cents < 0 {
            return refuse("cash_cents", "cash is not negative".into());
        }
        if let Some(m) = model {
            if let Some(problem) = crate::town::model_name_problem(m) {
                return refuse("model", problem);
            }
            if !self.gateway.has_model(m) {
                return refuse(
                    "model",
                    format!(
                        "this run has no model named `{m}`: name `default`, `small`, or a \
                         profile of the config file (`[models.{m}]`)"
                    ),
                );
            }
        }
        Ok(tile)
    }

    /// The user adds a building: a copy of the sector `template` named `name`, its walls'
    /// north-west corner at `origin` (past the map's edge, the map grows). Refused, writing
    /// nothing, when it does not fit ([`Definition::add_building`] says why).
    ///
    /// [`Definition::add_building`]: crate::town::Definition::add_building
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
        trial.add_building(template, name, origin).map_err(|why| {
            // The town's words name what is wrong: the template, the name, or where it goes.
            let field = if why.starts_with("no sector") || why.contains("no floor to copy") {
                "template"
            } else if why.contains("not a sector name") || why.contains("exists already") {
                "name"
            } else {
                "origin"
            };
            SimError::refused(field, why)
        })?;
        if let Some(a) = self.folds.state.agents.values().find(|a| !trial.grid.is_walkable(a.tile))
        {
            return Err(SimError::refused(
                "origin",
                format!(
                    "{} stands at ({}, {}), where the building would put a wall",
                    a.name, a.tile.x, a.tile.y
                ),
            ));
        }
        Ok(())
    }

    /// Commits what the user did, alone; returns its id.
    fn intervene(&mut self, intervention: Intervention) -> Result<EventId, SimError> {
        let now = self.folds.state.sim_time_secs;
        let mut pending = Pending::new();
        pending.push(now, Body::Intervened(Intervened { intervention }), &[]);
        let ids = self.commit(pending)?;
        ids.first().copied().ok_or_else(|| SimError::Resume("nothing was committed".into()))
    }
}
