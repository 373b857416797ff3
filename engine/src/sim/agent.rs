//! One agent's turn: perceive and remember what is new, describe itself on a new day, maybe
//! decide to react to someone, plan / decompose / choose a place / act by its schedule,
//! reflect when due — all into its own pending batch, read from the folds as of the clock step.
//! Must not: commit, fold, or read another agent's batch (the step joins them in order);
//! nor run a conversation (a reaction only says whom to talk to).

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::event::{AgentId, MemoryKind, Perceived, PlanItem, PlanLevel, PlanMade};
use hamlet_log::{Body, EventId};

use crate::economy;
use crate::mind::goal::{plan_purpose, Toward};
use crate::mind::memory::Memory;
use crate::mind::plan::{
    at_home, choose_place, decompose, icon_of, plan_day, plan_steps, renew_currently, summarise,
    BEDTIME_MINUTE, SLEEP,
};
use crate::mind::respond::{should_attend, should_react, Situation};
use crate::mind::schedule::Need;
use crate::mind::think::{recall, reflect, reflection_due, remember_rated, update_picture, Who};
use crate::pending::{Cause, Pending, PendingId};
use crate::rulebook::{Mechanism, ROUTINE_IMPORTANCE};
use crate::store::Storage;
use crate::town::{actions, objects, perception, walk};

use super::state::{Strategy, Talk};
use super::{Sim, SimError};

/// How many memories of what is arranged for the day a day plan is given.
const TODAY_MEMORIES: usize = 3;

/// How many of its latest memories an agent of the `long_short` memory module writes its
/// picture of a place from, on leaving it.
const PLACE_MEMORIES: usize = 10;

/// How many of an agent's latest memories are checked before remembering an observation
/// again (one made within the hour is not made twice).
const RECENT_OBSERVATIONS: usize = 200;

impl<S: Storage> Sim<S> {
    /// What `agent` did yesterday, in words, for its day plan: yesterday's day plan (the
    /// paper's summary of the previous day), and what it was told to keep in mind since.
    fn yesterday(&self, agent: AgentId, name: &str, now: u64) -> String {
        let today = now / 86_400;
        let planned = self
            .folds
            .day_plans
            .get(&agent)
            .filter(|p| p.items.first().is_some_and(|i| i.start_secs / 86_400 + 1 == today));
        let mut words = match planned {
            Some(plan) => format!("{name} planned: {}", plan_steps(plan)),
            None => "an ordinary day".to_owned(),
        };
        if let Some(thoughts) = self.folds.intentions.get(&agent) {
            words.push_str(&format!("; {name} has in mind: {}", thoughts.join("; ")));
        }
        words
    }

    /// When a sleeping `agent` next needs to think: its waking time, or the end of its
    /// sleep when that comes first (it then decides what next). `None` while it is awake.
    pub(super) fn wakes_at(&self, agent: AgentId, now: u64) -> Option<u64> {
        if !self.asleep(agent, now) || self.busy(agent, now) {
            return None;
        }
        let me = self.folds.state.agents.get(&agent)?;
        // Still on its way to its bed (or anywhere): not while it walks.
        if let Some(a) = &me.action {
            if walk::step_towards(&self.town, &self.folds.state, agent, &a.address, now).is_some() {
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
    pub(super) async fn think(&self, agent: AgentId) -> (Pending, Result<Option<Talk>, SimError>) {
        let mut pending = Pending::new();
        let result = self.think_into(agent, &mut pending).await;
        (pending, result)
    }

    async fn think_into(
        &self,
        agent: AgentId,
        pending: &mut Pending,
    ) -> Result<Option<Talk>, SimError> {
        let now = self.folds.state.sim_time_secs;
        let step = self.folds.state.step;
        let style = self.settings.style;
        let strategy = self.strategy(agent);
        let Some(me) = self.folds.state.agents.get(&agent) else { return Ok(None) };
        if me.conversation.is_some() {
            return Ok(None);
        }
        let name = me.name.as_str();
        // What it has just noticed that is out of the ordinary: something going on where it
        // is (a happening), or an object in a state it does not declare (out of order, on
        // fire) — both set by the user.
        let mut unusual: Vec<String> = Vec::new();
        // Perceive, and remember what is new.
        // (Borrowed: an agent of a big town has seen hundreds of subjects by evening.)
        static NOTHING_SEEN: BTreeMap<String, u64> = BTreeMap::new();
        let seen = self.folds.last_seen.get(&agent).unwrap_or(&NOTHING_SEEN);
        let percepts = perception::perceive(&self.town, &self.folds.state, agent, step, seen);
        let mut perceived = None;
        if !percepts.is_empty() {
            let at = pending.push(
                now,
                Body::Perceived(Perceived { agent, percepts: percepts.clone() }),
                &[],
            );
            perceived = Some(at);
            // What the agent already remembers noticing this past hour (the stove still
            // idle) is not a new memory: only what changed is rated and embedded.
            let stream = self.folds.minds.stream(agent);
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
            // Rulebook 8: an object in a state its town declares is a routine sight, rated
            // by rule; the rest by the model.
            let mut routine: BTreeSet<String> = BTreeSet::new();
            for p in &percepts {
                let words = perception::observation(p);
                let object = objects::object(&self.town, &p.subject);
                let odd = perception::is_happening(p)
                    || object.is_some_and(|object| !object.states.contains(&p.description));
                if odd && observations.contains(&words) {
                    unusual.push(words);
                } else if !odd && object.is_some() {
                    routine.insert(words);
                }
            }
            if !observations.is_empty() {
                let by_rule: Vec<Option<u8>> = observations
                    .iter()
                    .map(|o| {
                        let by_rule =
                            self.settings.rulebook.rates_routine_sights() && routine.contains(o);
                        by_rule.then_some(ROUTINE_IMPORTANCE)
                    })
                    .collect();
                let summary = self.summary(agent);
                let evidence = vec![Vec::new(); observations.len()];
                remember_rated(
                    &self.gateway,
                    style,
                    &Who { town: &self.town.name, agent, name, summary: &summary },
                    MemoryKind::Observation,
                    &observations,
                    &by_rule,
                    &evidence,
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
        let written = self.folds.summaries.get(&agent).is_some_and(|(day, _, _)| *day >= today);
        // What the summary was made from: its answer, so a plan made from it names it.
        let mut summary_cause =
            self.folds.summaries.get(&agent).and_then(|(_, _, at)| *at).map(Cause::Logged);
        if !written && !self.asleep(agent, now) {
            let (text, at) = summarise(
                &self.gateway,
                style,
                agent,
                name,
                self.folds.minds.stream(agent),
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            if text.is_some() {
                summary_cause = at.map(Cause::Pending);
            }
            if let Some(text) = text {
                summary = self.identity(agent, text);
            }
        }
        // Rulebook 4: from the second day, on waking, before it plans, the agent writes
        // afresh what it is busy with (its `currently`), from the day before.
        let renewed = self.folds.currently.get(&agent).is_some_and(|(day, _, _)| *day >= today);
        let first_day = self.town.start_secs / 86_400;
        if self.settings.rulebook.uses(Mechanism::Currently)
            && today > first_day
            && !renewed
            && !self.asleep(agent, now)
        {
            let base = match self.folds.summaries.get(&agent) {
                Some((_, text, _)) if !text.is_empty() => text.clone(),
                _ => summary.clone(),
            };
            let yesterday = self.yesterday(agent, name, now);
            let (text, at) = renew_currently(
                &self.gateway,
                style,
                &Who { town: &self.town.name, agent, name, summary: &summary },
                self.folds.minds.stream(agent),
                &self.town.day_words(today),
                &yesterday,
                now,
                &self.settings.retrieval,
                pending,
            )
            .await?;
            if let Some(text) = text {
                summary = format!("{}\nCurrently: {text}", self.with_goal(agent, base));
                summary_cause = at.map(Cause::Pending).or(summary_cause);
            }
        }
        // The mayor's notices, read when it is up and free; then a job offered, if it is
        // the one to ask.
        if !self.folds.notices.is_empty() && !self.busy(agent, now) && !self.asleep(agent, now) {
            let who = Who { town: &self.town.name, agent, name, summary: &summary };
            self.read_notices(agent, &who, now, pending).await?;
            if let Some(job) = self.job_to_offer(agent, now) {
                self.offer_job(agent, &who, job, now, pending).await?;
            }
        }
        // The mayor, when it is one of the agents, decides what to do for the town.
        if self.town.mayor.is_some() && self.mayor_due(agent, now) {
            let who = Who { town: &self.town.name, agent, name, summary: &summary };
            self.mayor_decides(agent, &who, now, pending).await?;
        }
        // An agent that plans ahead plans its day before anything else.
        let planned = |a: AgentId| {
            !self.strategy(a).plans() || self.folds.schedules.of(a).need(now) != Need::PlanDay
        };
        // Something out of the ordinary, noticed for the first time: stop to deal with it?
        // Yes re-plans the rest of the hour around it.
        if let Some(observation) = unusual.first() {
            if planned(agent) && !self.busy(agent, now) && !self.asleep(agent, now) {
                let time = self.town.moment_words(now);
                let status = self.status(agent, now);
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
                let (attend, at) = should_attend(
                    &self.gateway,
                    style,
                    &who,
                    observation,
                    now,
                    &self.settings.retrieval,
                    pending,
                )
                .await?;
                if let (true, Some(decided)) = (attend, at) {
                    let why = format!("after noticing that {observation}");
                    if let Some(planned) =
                        self.replan_rest_of_hour(agent, name, &why, now, now, pending).await?
                    {
                        pending.link(planned, Cause::Pending(decided));
                    }
                    return Ok(None);
                }
            }
        }
        // Rulebook 6: someone newly noticed whom it means to invite (to an event it hosts or
        // has promised to go to), and who is free: it goes to talk, no question asked.
        let free = |a: AgentId| planned(a) && !self.busy(a, now) && !self.asleep(a, now);
        if let (Some(at), true) = (perceived, free(agent)) {
            let invitee = percepts.iter().find_map(|p| {
                let (&other, _) =
                    self.folds.state.agents.iter().find(|(_, o)| o.name == p.subject)?;
                (free(other) && self.invitation_for(agent, other, now).is_some()).then_some(other)
            });
            if let Some(with) = invitee {
                return Ok(Some(Talk { with, decided: at }));
            }
        }
        // React to someone newly noticed? (At most one question a step: the nearest.)
        if planned(agent) && !self.busy(agent, now) && !self.asleep(agent, now) {
            let rulebook = self.settings.rulebook;
            let candidate = percepts.iter().find_map(|p| {
                let (&other, o) =
                    self.folds.state.agents.iter().find(|(_, o)| o.name == p.subject)?;
                let pair = (agent.min(other), agent.max(other));
                let recent = self.folds.last_talk.get(&pair).is_some_and(|&t| {
                    now.saturating_sub(t)
                        < rulebook.talk_cooldown_secs(self.settings.talk_cooldown_secs)
                });
                // Someone considered lately is not considered again (an agent sharing a room
                // with its family would otherwise ask every minute).
                let considered = self
                    .folds
                    .considered
                    .get(&(agent, other))
                    .is_some_and(|&t| now.saturating_sub(t) < self.settings.reconsider_secs);
                let free = planned(other) && !self.busy(other, now) && !self.asleep(other, now);
                (free && !recent && !considered)
                    .then(|| (other, o.name.clone(), perception::observation(p)))
            });
            if let Some((other, other_name, observation)) = candidate {
                let time = self.town.moment_words(now);
                let status = self.status(agent, now);
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
            let since = self.folds.last_reflection.get(&agent).copied().unwrap_or(0);
            let stream = self.folds.minds.stream(agent);
            if let Some(sum) = reflection_due(stream, since, &self.settings.reflection) {
                reflect(
                    &self.gateway,
                    style,
                    &Who { town: &self.town.name, agent, name, summary: &summary },
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
        let Some(me) = self.folds.state.agents.get(&agent) else { return Ok(()) };
        let name = me.name.as_str();
        let who = Who { town: &self.town.name, agent, name, summary };
        let date = self.town.day_words(now / 86_400);
        match self.folds.schedules.of(agent).need(now) {
            Need::PlanDay if strategy.plans() && self.folds.goal_planners.contains(&agent) => {
                self.plan_toward_goal(agent, &who, summary_cause, now, pending).await?;
            }
            Need::PlanDay if strategy.plans() => {
                let day_start = now - now % 86_400;
                let day = self.yesterday(agent, name, now);
                // What it remembers of today (a party it is giving, an appointment): one
                // retrieval, no model call, so the plan can keep what was arranged.
                let stream = self.folds.minds.stream(agent);
                let query = format!("what {name} has planned or arranged for {date}");
                let (recalled, recalled_at) = recall(
                    &self.gateway,
                    agent,
                    stream,
                    &query,
                    now,
                    &self.settings.retrieval,
                    pending,
                )
                .await?;
                let today: Vec<&str> = recalled
                    .hits
                    .iter()
                    .filter_map(|h| stream.get(h.memory))
                    .map(|m| m.description.as_str())
                    .take(TODAY_MEMORIES)
                    .collect();
                let mut because: Vec<Cause> = summary_cause.into_iter().collect();
                because.push(Cause::Pending(recalled_at));
                plan_day(
                    &self.gateway,
                    style,
                    &who,
                    &date,
                    &day,
                    &today.join(" "),
                    self.settings.wake_minute,
                    day_start,
                    &self.appointments_on(agent, day_start / 86_400),
                    self.action_checks(agent).as_deref(),
                    &because,
                    now,
                    self.settings.rulebook,
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
                    &who,
                    &date,
                    &moment,
                    None,
                    PlanLevel::Action,
                    self.settings.rulebook,
                    self.action_checks(agent).as_deref(),
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
                    &who,
                    &date,
                    &what,
                    Some(item),
                    level,
                    self.settings.rulebook,
                    self.action_checks(agent).as_deref(),
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
                        let (icon, words) = icon_of(&what.description);
                        // An action done at home goes home even when its hour was placed
                        // elsewhere ("wakes up" in an hour that ends at work).
                        let home = self.home_of(&me.name);
                        let away = |h: &str| !what.address.starts_with(&format!("{h}:"));
                        let (address, chose) = if what.address.is_empty()
                            || (at_home(words) && home.is_some_and(away))
                        {
                            let here = self.town.address_of(me.tile).unwrap_or_default();
                            let mut parts = here.splitn(3, ':');
                            let here = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                            let known = self.known(agent);
                            choose_place(
                                &self.gateway,
                                style,
                                &who,
                                &known,
                                here,
                                home,
                                words,
                                self.settings.rulebook.goes_where_named(),
                                now,
                                pending,
                            )
                            .await?
                        } else {
                            // Within its hour's building, at what it is done at (breakfast
                            // at the kitchen table, not in bed).
                            let fitting = objects::object_for(&self.town, &what.address, words);
                            (fitting.unwrap_or_else(|| what.address.clone()), None)
                        };
                        // Leaving a place, an agent remembering by `long_short` writes
                        // its picture of it again from what it last saw and heard.
                        let left = me.action.as_ref().and_then(|a| a.address.split(':').next());
                        let left = left.filter(|s| !s.is_empty());
                        let stream = self.folds.minds.stream(agent);
                        if let (Some(left), true) = (left, stream.long_short()) {
                            if address.split(':').next() != Some(left) {
                                let latest: Vec<&Memory> = stream
                                    .memories()
                                    .iter()
                                    .rev()
                                    .filter(|m| !stream.is_picture(m))
                                    .take(PLACE_MEMORIES)
                                    .collect();
                                let recent: Vec<String> = latest
                                    .iter()
                                    .rev()
                                    .map(|m| format!("- {}", m.description))
                                    .collect();
                                let cited: Vec<EventId> = latest.iter().map(|m| m.id).collect();
                                update_picture(
                                    &self.gateway,
                                    style,
                                    &who,
                                    stream,
                                    left,
                                    &recent,
                                    &cited,
                                    &[Cause::Logged(item.plan)],
                                    now,
                                    pending,
                                )
                                .await?;
                            }
                        }
                        let end = what.start_secs + u64::from(what.duration_secs);
                        let start = actions::Start {
                            agent,
                            description: words,
                            emoji: icon,
                            address: &address,
                            duration_secs: u32::try_from(end.saturating_sub(now))
                                .unwrap_or(u32::MAX),
                            // The object used takes its in-use state; it rests when done.
                            object_state: objects::in_use(&self.town, &address),
                            plan_item: Some(item),
                        };
                        if let Ok(mut events) =
                            actions::start(&self.town, &self.folds.state, &start, now)
                        {
                            // Wages for the work left, a purchase at a shop.
                            let workplace = self.workplace_of(agent);
                            let workplace = workplace.as_deref().and_then(|w| w.split(':').next());
                            events.extend(economy::on_action_start(
                                &self.town,
                                &self.folds.state,
                                agent,
                                workplace,
                                &what.description,
                                &address,
                                now,
                            ));
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
                    walk::step_towards(&self.town, &self.folds.state, agent, &address, now)
                {
                    pending.push(now, moved.body, &[]);
                }
            }
            Need::Free => {}
        }
        Ok(())
    }

    /// Re-plans the rest of the hour under way from `from_secs` (rounded up to the minute),
    /// `why` saying what interrupted it ("after talking with Tobias Ashcombe"): the hour's
    /// actions decomposed again, at the hour's place. Nothing when the agent does not plan
    /// ahead, is not in a planned hour, or less than five minutes of it are left.
    pub(super) async fn replan_rest_of_hour(
        &self,
        agent: AgentId,
        name: &str,
        why: &str,
        from_secs: u64,
        now: u64,
        pending: &mut Pending,
    ) -> Result<Option<PendingId>, SimError> {
        let Some((hour, what)) = self.folds.schedules.of(agent).hour_under_way(now) else {
            return Ok(None);
        };
        if !self.strategy(agent).plans() {
            return Ok(None);
        }
        let resume_at = from_secs.div_ceil(60) * 60;
        let hour_end = what.start_secs + u64::from(what.duration_secs);
        if hour_end < resume_at + 5 * 60 {
            return Ok(None);
        }
        // The hour's place is where its actions were planned (chosen once for the hour),
        // not where the agent is: an action done at home went home from an hour placed
        // elsewhere, and the rest of the hour goes on there.
        let schedule = self.folds.schedules.of(agent);
        let planned = schedule.parts_of(hour).and_then(|p| p.items.first());
        let planned = planned.map(|i| i.address.clone()).filter(|a| !a.is_empty());
        let doing = self.folds.state.agents.get(&agent).and_then(|a| a.action.as_ref());
        let doing = doing.filter(|a| a.plan_item.is_some()).map(|a| a.address.clone());
        let rest = PlanItem {
            description: format!("{} ({why})", what.description),
            address: planned.or(doing).unwrap_or_else(|| what.address.clone()),
            start_secs: resume_at,
            duration_secs: (hour_end - resume_at) as u32,
        };
        let summary = self.summary(agent);
        let (_, planned) = decompose(
            &self.gateway,
            self.settings.style,
            &Who { town: &self.town.name, agent, name, summary: &summary },
            &self.town.day_words(now / 86_400),
            &rest,
            Some(hour),
            PlanLevel::Action,
            self.settings.rulebook,
            self.action_checks(agent).as_deref(),
            now,
            pending,
        )
        .await?;
        Ok(Some(planned))
    }

    /// Plans `agent`'s next purpose toward its life goal (`goal_qa`,
    /// [`crate::mind::goal`]): from bedtime, sleep until midnight; while something it agreed
    /// to (or hosts) is under way, that, to its end — both by rule; else the three calls of
    /// [`plan_purpose`], the purpose ending by bedtime or the next thing agreed.
    async fn plan_toward_goal(
        &self,
        agent: AgentId,
        who: &Who<'_>,
        summary_cause: Option<Cause>,
        now: u64,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let midnight = now - now % 86_400;
        let bedtime = midnight + u64::from(BEDTIME_MINUTE) * 60;
        let start = now - now % 60;
        let by_rule = |item: PlanItem| PlanMade {
            agent,
            level: PlanLevel::Hour,
            decomposes: None,
            items: vec![item],
        };
        if now >= bedtime {
            let sleep = PlanItem {
                description: SLEEP.to_owned(),
                address: String::new(),
                start_secs: start,
                duration_secs: (midnight + 86_400 - start) as u32,
            };
            pending.push(now, Body::PlanMade(by_rule(sleep)), &[]);
            return Ok(());
        }
        let appointments = self.appointments_on(agent, midnight / 86_400);
        let end_of = |a: &PlanItem| a.start_secs + u64::from(a.duration_secs);
        if let Some(a) = appointments.iter().find(|a| a.start_secs <= now && now < end_of(a)) {
            let kept = PlanItem {
                start_secs: start,
                duration_secs: (end_of(a) - start) as u32,
                ..a.clone()
            };
            pending.push(now, Body::PlanMade(by_rule(kept)), &[]);
            return Ok(());
        }
        let next = appointments.iter().map(|a| a.start_secs).filter(|s| *s > now).min();
        let goal = self.folds.goals.get(&agent).map_or("", String::as_str);
        let time = self.town.moment_words(now);
        let toward = Toward {
            goal,
            time: &time,
            stream: self.folds.minds.stream(agent),
            places: &self.purpose_places(agent),
            until: next.unwrap_or(bedtime).min(bedtime),
        };
        let because: Vec<Cause> = summary_cause.into_iter().collect();
        let retrieval = &self.settings.retrieval;
        plan_purpose(
            &self.gateway,
            self.settings.style,
            who,
            &toward,
            retrieval,
            &because,
            now,
            pending,
        )
        .await?;
        Ok(())
    }

    /// The places a purpose may be at: every arena `agent` knows (`sector:arena`), the one
    /// it is in first.
    fn purpose_places(&self, agent: AgentId) -> Vec<String> {
        let here = self.folds.state.agents.get(&agent).and_then(|a| self.town.address_of(a.tile));
        let here = here.unwrap_or_default();
        let here: Vec<&str> = here.splitn(3, ':').take(2).collect();
        let here = here.join(":");
        let mut places: Vec<String> = self
            .known(agent)
            .known
            .iter()
            .flat_map(|(sector, arenas)| {
                arenas.keys().map(move |arena| format!("{sector}:{arena}"))
            })
            .collect();
        if let Some(i) = places.iter().position(|p| *p == here) {
            let first = places.remove(i);
            places.insert(0, first);
        }
        places
    }

    /// The home (`sector:arena`) of the persona named `name`.
    fn home_of(&self, name: &str) -> Option<&str> {
        self.town.personas.iter().find(|p| p.name == name).map(|p| p.home.as_str())
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
        let Some(me) = self.folds.state.agents.get(&agent) else {
            return Ok((String::new(), None));
        };
        let here = self.town.address_of(me.tile).unwrap_or_default();
        let mut parts = here.splitn(3, ':');
        let here = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let known = self.known(agent);
        let style = self.settings.style;
        let summary = self.summary(agent);
        let chosen = choose_place(
            &self.gateway,
            style,
            &Who { town: &self.town.name, agent, name: &me.name, summary: &summary },
            &known,
            here,
            // An hour part is placed by the model ("wakes up and goes to work" is not an
            // hour in bed); its actions done at home go home (`act`).
            None,
            activity,
            self.settings.rulebook.goes_where_named(),
            now,
            pending,
        )
        .await?;
        Ok(chosen)
    }
}
