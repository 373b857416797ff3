//! The loop's side of a town's mayor (a town file's `[mayor]`, after AgentSims' mayor mode):
//! an act is checked against the town and written as `MayorActed` (a business founded also
//! pays its cost from the treasury); every agent reads it as a notice the next time it
//! thinks; a meeting or a task is kept in plans as an appointment; a job is offered to one
//! agent at a time (in agent order, each once) until one takes it (`JobTaken`); its hours
//! ([`SHIFT_HOURS`]) are kept in the taker's plans, and the time worked there is paid from
//! the treasury (`economy::pay_wage`).
//! Must not: decide what the mayor does (the person, or the mayor's own calls).

use hamlet_log::event::{
    AgentId, CashMoved, JobTaken, MayorAct, MayorActed, MemoryKind, PlanItem, PlanLevel, PlanMade,
};
use hamlet_log::{Body, EventId};

use crate::describe::cents;
use crate::mind::prompt::template;
use crate::mind::think::{ask, remember_rated, Who};
use crate::pending::{Cause, Pending};
use crate::store::Storage;
use crate::town::MayorWho;

use super::{Sim, SimError};

/// The importance a notice from the mayor is remembered at, by rule.
pub const NOTICE_IMPORTANCE: u8 = 6;

/// The longest meeting or task, in seconds.
const LONGEST: u32 = 8 * 3600;

/// How often a mayor agent decides what to do for the town, in simulated seconds.
pub const MAYOR_EVERY_SECS: u64 = 2 * 3600;

/// The kinds of sector people live in: no job, wage or meeting of a mayor's there.
const HOMES: [&str; 2] = ["home", "dorm"];

/// The kinds of sector that are not workplaces: homes, and parks (a meeting there, no job).
const NOT_WORK: [&str; 3] = ["home", "dorm", "park"];

/// The hours of the day a job of the mayor's is worked: from 09:00 to 17:00.
const SHIFT_HOURS: std::ops::Range<u64> = 9..17;

/// A mayor agent's last option of where to act.
const NOWHERE: &str = "nowhere for now";

/// The most a mayor agent may offer an hour, in dollars.
const MOST_DOLLARS: i64 = 60;

impl<S: Storage> Sim<S> {
    /// The town's mayor agent, if its mayor is one of its agents.
    pub fn mayor_agent(&self) -> Option<AgentId> {
        match &self.town.mayor.as_ref()?.who {
            MayorWho::Agent(name) => {
                self.folds.state.agents.iter().find(|(_, a)| a.name == *name).map(|(id, _)| *id)
            }
            MayorWho::Player => None,
        }
    }

    /// The person at the viewer acts as the town's mayor: checked (a town whose mayor is
    /// someone else, or an act the town cannot take, is refused and nothing is written),
    /// then written with what it costs.
    pub fn mayor_act(&mut self, act: MayorAct) -> Result<EventId, SimError> {
        let bodies = self.check_mayor_act(act)?;
        let now = self.folds.state.sim_time_secs;
        let mut pending = Pending::new();
        let first = pending.push(now, bodies[0].clone(), &[]);
        for body in &bodies[1..] {
            pending.push(now, body.clone(), &[Cause::Pending(first)]);
        }
        let ids = self.commit(pending)?;
        ids.first().copied().ok_or_else(|| SimError::Resume("nothing was committed".into()))
    }

    /// Whether [`Sim::mayor_act`] would be refused, and why; else the events it would write.
    pub fn check_mayor_act(&self, act: MayorAct) -> Result<Vec<Body>, SimError> {
        match self.town.mayor.as_ref().map(|m| &m.who) {
            Some(MayorWho::Player) => {}
            Some(MayorWho::Agent(name)) => {
                return Err(SimError::refused(
                    "mayor",
                    format!("{}'s mayor is {name}, not the person at the viewer", self.town.name),
                ))
            }
            None => {
                return Err(SimError::refused(
                    "mayor",
                    format!(
                        "{} has no mayor: give its town file a [mayor] with who = \"player\"",
                        self.town.name
                    ),
                ))
            }
        }
        self.mayor_bodies(None, act)
    }

    /// The events of `mayor`'s act (the `MayorActed`, then what it pays), or why the town
    /// cannot take it.
    pub(super) fn mayor_bodies(
        &self,
        mayor: Option<AgentId>,
        act: MayorAct,
    ) -> Result<Vec<Body>, SimError> {
        let now = self.folds.state.sim_time_secs;
        let act = begun_by_now(act, now);
        let sector = |name: &str| self.town.sectors.iter().any(|s| s.name == name);
        let place = |place: &str| match place.split_once(':') {
            Some((s, a)) => self
                .town
                .sectors
                .iter()
                .any(|x| x.name == s && x.arenas.iter().any(|r| r.name == a)),
            None => sector(place),
        };
        let sectors = || {
            let names: Vec<&str> = self.town.sectors.iter().map(|s| s.name.as_str()).collect();
            names.join(", ")
        };
        // A wage at a workplace, and an errand (a meeting, a task): what, where, when.
        let wage_at = |s: &str, cents: i64| {
            if !sector(s) {
                Err(SimError::refused(
                    "sector",
                    format!("no sector `{s}`; there are {}", sectors()),
                ))
            } else if !self.workplaces().iter().any(|w| w == s) {
                Err(SimError::refused(
                    "sector",
                    format!(
                        "{s} is a home or a park, not a workplace; the workplaces are {}",
                        self.workplaces().join(", ")
                    ),
                ))
            } else if cents <= 0 {
                Err(SimError::refused("wage", "a wage is more than 0"))
            } else {
                Ok(())
            }
        };
        let errand = |what: &str, at: &str, start: u64, duration: u32| {
            if what.trim().is_empty() || what.contains('\n') {
                Err(SimError::refused("what", "what it is, in one line, not empty"))
            } else if !place(at) {
                Err(SimError::refused("place", format!("no place `{at}`; there are {}", sectors())))
            } else if start < now {
                Err(SimError::refused("start", "it would start before now"))
            } else if duration == 0 || duration > LONGEST {
                Err(SimError::refused("duration", "it lasts from a minute to eight hours"))
            } else {
                Ok(())
            }
        };
        let mut paid = Vec::new();
        match &act {
            MayorAct::PostJob { sector: s, title, cents_per_hour } => {
                if title.trim().is_empty() || title.contains('\n') {
                    return Err(SimError::refused("title", "a job's title is one line, not empty"));
                }
                wage_at(s, *cents_per_hour)?;
                let open = self.folds.state.mayor.iter().flat_map(|b| &b.jobs);
                if open
                    .filter(|j| j.taken_by.is_none() && j.sector == *s)
                    .any(|j| j.title.trim().eq_ignore_ascii_case(title.trim()))
                {
                    return Err(SimError::refused(
                        "title",
                        format!("a job as {} at {s} is open already", title.trim()),
                    ));
                }
            }
            MayorAct::SetWage { sector: s, cents_per_hour } => wage_at(s, *cents_per_hour)?,
            MayorAct::Found { template, name, site, cost_cents } => {
                let rules = self.town.mayor.as_ref();
                let Some(spot) = rules.and_then(|m| m.sites.iter().find(|x| x.name == *site))
                else {
                    let names: Vec<&str> = rules
                        .into_iter()
                        .flat_map(|m| m.sites.iter().map(|x| x.name.as_str()))
                        .collect();
                    return Err(SimError::refused(
                        "site",
                        format!("no site `{site}`; the town's sites are {}", names.join(", ")),
                    ));
                };
                if self.founded_on(site) {
                    return Err(SimError::refused("site", format!("{site} is built on already")));
                }
                let cost = rules.map_or(0, |m| m.found_cents);
                if *cost_cents != cost {
                    return Err(SimError::refused(
                        "cost",
                        format!("founding costs {}", cents(cost)),
                    ));
                }
                let treasury = self.folds.state.mayor.as_ref().map_or(0, |b| b.treasury_cents);
                if treasury < cost {
                    return Err(SimError::refused(
                        "cost",
                        format!(
                            "the treasury holds {}; founding costs {}",
                            cents(treasury),
                            cents(cost)
                        ),
                    ));
                }
                self.check_add_building(template, name, spot.origin)?;
                paid.push(Body::CashMoved(CashMoved {
                    from: hamlet_log::event::Account::Town,
                    to: hamlet_log::event::Account::World,
                    amount_cents: cost,
                    reason: format!("founds {name}"),
                }));
            }
            MayorAct::CallMeeting { what, place: at, start_secs, duration_secs } => {
                errand(what, at, *start_secs, *duration_secs)?;
            }
            MayorAct::AssignTask { agent, what, place: at, start_secs, duration_secs } => {
                if !self.folds.state.agents.contains_key(agent) {
                    return Err(SimError::refused("agent", format!("no agent {}", agent.0)));
                }
                errand(what, at, *start_secs, *duration_secs)?;
            }
        }
        let mut bodies = vec![Body::MayorActed(MayorActed { mayor, act })];
        bodies.extend(paid);
        Ok(bodies)
    }

    /// The sectors a job or a wage can be at, in the town's order: every sector but homes
    /// and parks (a business founded on a site is one once it stands).
    pub(super) fn workplaces(&self) -> Vec<String> {
        self.town
            .sectors
            .iter()
            .filter(|s| !NOT_WORK.contains(&s.kind.as_str()))
            .map(|s| s.name.clone())
            .collect()
    }

    /// Whether a business was founded on `site`.
    fn founded_on(&self, site: &str) -> bool {
        self.folds
            .notices
            .iter()
            .any(|n| matches!(&n.act, MayorAct::Found { site: s, .. } if s == site))
    }

    /// What `agent` reads of the mayor's acts it has not read yet, remembered as notices
    /// (one batch, importance by rule); a meeting or task for today is kept in its plans.
    pub(super) async fn read_notices(
        &self,
        agent: AgentId,
        who: &Who<'_>,
        now: u64,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let unread: Vec<&Notice> = self
            .folds
            .notices
            .iter()
            .filter(|n| !self.folds.noticed.contains(&(agent, n.event)))
            .collect();
        if unread.is_empty() {
            return Ok(());
        }
        let words: Vec<String> = unread.iter().map(|n| self.notice_words(n)).collect();
        let rule = vec![Some(NOTICE_IMPORTANCE); words.len()];
        let evidence = vec![Vec::new(); words.len()];
        let causes: Vec<Cause> = unread.iter().map(|n| Cause::Logged(n.event)).collect();
        remember_rated(
            &self.gateway,
            self.settings.style,
            who,
            MemoryKind::Observation,
            &words,
            &rule,
            &evidence,
            &causes,
            now,
            pending,
        )
        .await?;
        for n in unread {
            if let Some(item) = self.appointment_of(agent, n) {
                self.plan_around(agent, vec![item], Cause::Logged(n.event), now, pending);
            }
        }
        Ok(())
    }

    /// A notice in words, as agents remember it.
    fn notice_words(&self, n: &Notice) -> String {
        let name = |a: AgentId| {
            self.folds.state.agents.get(&a).map_or("someone", |x| x.name.as_str()).to_owned()
        };
        let clock = |secs: u64| {
            format!(
                "{} at {:02}:{:02}",
                self.town.day_words(secs / 86_400),
                secs % 86_400 / 3600,
                secs % 3600 / 60
            )
        };
        let from =
            n.mayor.map_or_else(|| "the mayor".to_owned(), |m| format!("the mayor, {}", name(m)));
        match &n.act {
            MayorAct::PostJob { sector, title, cents_per_hour } => format!(
                "A notice from {from}: a job as {title} at {sector}, paid {} an hour, is open",
                cents(*cents_per_hour)
            ),
            MayorAct::Found { name: business, site, .. } => {
                format!("A notice from {from}: {business} is founded on the {site}")
            }
            MayorAct::SetWage { sector, cents_per_hour } => format!(
                "A notice from {from}: work at {sector} is paid {} an hour from now on",
                cents(*cents_per_hour)
            ),
            MayorAct::CallMeeting { what, place, start_secs, .. } => format!(
                "A notice from {from}: everyone is called to a meeting at {place} on {}: {what}",
                clock(*start_secs)
            ),
            MayorAct::AssignTask { agent, what, place, start_secs, .. } => format!(
                "A notice from {from}: {} is asked to {what} at {place} on {}",
                name(*agent),
                clock(*start_secs)
            ),
        }
    }

    /// The meetings called and the tasks given to `agent` that begin on simulated day `day`,
    /// as plan items.
    pub(super) fn mayor_appointments(&self, agent: AgentId, day: u64) -> Vec<PlanItem> {
        let items = self.folds.notices.iter().filter_map(|n| self.appointment_of(agent, n));
        items.filter(|i| i.start_secs / 86_400 == day).collect()
    }

    /// The hours `agent` works on simulated day `day` at the job of the mayor's it holds, if
    /// it holds one: see [`shift`].
    pub(super) fn shift_on(&self, agent: AgentId, day: u64) -> Vec<PlanItem> {
        let job = self.folds.state.mayor.as_ref().and_then(|b| {
            b.jobs.iter().rev().find(|j| j.taken_by == Some(agent)).map(|j| j.posted)
        });
        let (Some(posted), Some(&taken)) = (job, self.folds.job_taken_at.get(&agent)) else {
            return Vec::new();
        };
        self.shift_of(agent, posted, taken, day)
    }

    /// The hours of the job posted by `posted`, taken by `agent` at `taken_secs`, on `day`.
    fn shift_of(
        &self,
        agent: AgentId,
        posted: EventId,
        taken_secs: u64,
        day: u64,
    ) -> Vec<PlanItem> {
        let book = self.folds.state.mayor.as_ref();
        let Some(job) = book.and_then(|b| b.jobs.iter().find(|j| j.posted == posted)) else {
            return Vec::new();
        };
        let address = self.appointment_address(agent, &job.sector);
        shift(&format!("works as {} at {}", job.title, job.sector), &address, taken_secs, day)
    }

    /// What a notice asks of `agent` at a time and place, as a plan item: a meeting (asked of
    /// everyone) or a task given to it.
    fn appointment_of(&self, agent: AgentId, n: &Notice) -> Option<PlanItem> {
        let (description, place, start_secs, duration_secs) = match &n.act {
            MayorAct::CallMeeting { what, place, start_secs, duration_secs } => {
                (format!("goes to the mayor's meeting: {what}"), place, *start_secs, *duration_secs)
            }
            MayorAct::AssignTask { agent: to, what, place, start_secs, duration_secs }
                if *to == agent =>
            {
                (what.clone(), place, *start_secs, *duration_secs)
            }
            _ => return None,
        };
        let address = match place.split_once(':') {
            Some(_) => place.clone(),
            None => self.appointment_address(agent, place),
        };
        Some(PlanItem { description, address, start_secs, duration_secs })
    }

    /// The open job `agent` is to be asked about now, if any: the first job posted that
    /// nobody has taken, when `agent` is the first agent (in agent order) who has no job of
    /// the mayor's, is not the mayor, has not been asked about it, and is free.
    pub(super) fn job_to_offer(
        &self,
        agent: AgentId,
        now: u64,
    ) -> Option<(EventId, String, String, i64)> {
        let book = self.folds.state.mayor.as_ref()?;
        let mayor = self.mayor_agent();
        let employed = |a: AgentId| book.jobs.iter().any(|j| j.taken_by == Some(a));
        for job in book.jobs.iter().filter(|j| j.taken_by.is_none()) {
            let candidate = self.folds.state.agents.keys().copied().find(|&a| {
                Some(a) != mayor
                    && !employed(a)
                    && !self.folds.job_asked.contains(&(a, job.posted))
                    && !self.busy(a, now)
                    && !self.asleep(a, now)
            });
            if candidate == Some(agent) {
                let rate = book.wages.get(&job.sector).copied().unwrap_or(job.cents_per_hour);
                return Some((job.posted, job.sector.clone(), job.title.clone(), rate));
            }
            if candidate.is_some() {
                return None;
            }
        }
        None
    }

    /// Asks `agent` whether it takes the job (`job_offer`); yes is a `JobTaken` and a
    /// memory of it.
    pub(super) async fn offer_job(
        &self,
        agent: AgentId,
        who: &Who<'_>,
        job: (EventId, String, String, i64),
        now: u64,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        let (posted, sector, title, rate) = job;
        let mut vars = who.vars();
        vars.insert("job", format!("{title} at {sector}, paid {} an hour", cents(rate)));
        let workplace = self.workplace_of(agent).unwrap_or_else(|| "no work".to_owned());
        vars.insert("work", workplace);
        vars.insert(
            "goal",
            self.folds.goals.get(&agent).cloned().unwrap_or_else(|| "not said".into()),
        );
        let shape = hamlet_gateway::answer::Shape::YesNo;
        let asking = template("job_offer").and_then(|t| t.call(&vars, self.settings.style, shape));
        let mut call = asking.map_err(crate::mind::think::ThinkError::from)?;
        call.agent = Some(agent);
        call.max_tokens = Some(16);
        let (answered, asked) =
            ask(&self.gateway, call, &[Cause::Logged(posted)], now, pending).await?;
        let yes = matches!(answered.answer, hamlet_gateway::answer::Answer::YesNo(true))
            && !answered.fallback;
        if !yes {
            return Ok(());
        }
        let causes: Vec<Cause> = asked.into_iter().map(Cause::Pending).collect();
        let at = pending.push(now, Body::JobTaken(JobTaken { agent, job: posted }), &causes);
        let words = format!(
            "{} took the job of {title} at {sector}, paid {} an hour, and works there from \
             {:02}:00 to {:02}:00 every day",
            who.name,
            cents(rate),
            SHIFT_HOURS.start,
            SHIFT_HOURS.end
        );
        remember_rated(
            &self.gateway,
            self.settings.style,
            who,
            MemoryKind::Plan,
            &[words],
            &[Some(NOTICE_IMPORTANCE + 1)],
            &[Vec::new()],
            &[Cause::Pending(at)],
            now,
            pending,
        )
        .await?;
        // Today's hours go into its plans at once (the fold does not know the job is taken).
        let hours = self.shift_of(agent, posted, now, now / 86_400);
        self.plan_around(agent, hours, Cause::Pending(at), now, pending);
        Ok(())
    }

    /// Where `agent` works: the sector of the last job of the mayor's it took, else its
    /// persona's workplace (`sector:arena`).
    pub(super) fn workplace_of(&self, agent: AgentId) -> Option<String> {
        let job = self.folds.state.mayor.as_ref().and_then(|b| {
            b.jobs.iter().rev().find(|j| j.taken_by == Some(agent)).map(|j| j.sector.clone())
        });
        job.or_else(|| {
            let name = self.folds.state.agents.get(&agent)?.name.as_str();
            self.town.personas.iter().find(|p| p.name == name)?.workplace.clone()
        })
    }

    /// A goal planner's purpose or a paper planner's day, kept around an appointment made
    /// today (a meeting called, a task given): see `social::take_notes`.
    pub(super) fn plan_around(
        &self,
        agent: AgentId,
        items: Vec<PlanItem>,
        cause: Cause,
        now: u64,
        pending: &mut Pending,
    ) {
        let today = now / 86_400;
        let items: Vec<PlanItem> =
            items.into_iter().filter(|i| i.start_secs / 86_400 == today).collect();
        let Some(first) = items.iter().map(|i| i.start_secs).min() else { return };
        if !self.strategy(agent).plans() {
            return;
        }
        if self.folds.goal_planners.contains(&agent) {
            self.cut_purpose_at(agent, first, cause, now, pending);
            return;
        }
        let Some(day_plan) = self
            .folds
            .day_plans
            .get(&agent)
            .filter(|p| p.items.first().is_some_and(|i| i.start_secs / 86_400 == today))
        else {
            return;
        };
        // What the fold knows stands over what is new (a job's hours, not yet folded): a
        // meeting read as a notice is among the appointments already.
        let mut appointments = self.appointments_on(agent, today);
        let end = |i: &PlanItem| i.start_secs + u64::from(i.duration_secs);
        for item in items {
            if appointments.iter().all(|a| end(a) <= item.start_secs || a.start_secs >= end(&item))
            {
                appointments.push(item);
            }
        }
        appointments.sort_by_key(|k| k.start_secs);
        let items = crate::mind::plan::with_appointments(day_plan.items.clone(), &appointments);
        let plan = PlanMade { agent, level: PlanLevel::Day, decomposes: None, items };
        pending.push(now, Body::PlanMade(plan), &[cause]);
    }
}

impl<S: Storage> Sim<S> {
    /// Whether `agent` is the town's mayor and due to decide (awake and free, and
    /// [`MAYOR_EVERY_SECS`] since it last did).
    pub(super) fn mayor_due(&self, agent: AgentId, now: u64) -> bool {
        self.mayor_agent() == Some(agent)
            && !self.busy(agent, now)
            && !self.asleep(agent, now)
            && self.folds.mayor_decided.is_none_or(|at| now >= at + MAYOR_EVERY_SECS)
    }

    /// A mayor agent decides what to do for the town: where (`mayor_where`: a place that
    /// stands, a free site the treasury can found a business on, or nowhere), what there
    /// (`mayor_act`: a job, a wage, a meeting or a task; founding on a site), then its
    /// details (`mayor_details`), checked as the person's would be. Asking for the place
    /// first is what lets a small model found what its goal needs: asked for an act, it
    /// posts a job whatever stands. An act the town cannot take is not written: the mayor
    /// remembers that it could not, and why.
    pub(super) async fn mayor_decides(
        &self,
        agent: AgentId,
        who: &Who<'_>,
        now: u64,
        pending: &mut Pending,
    ) -> Result<(), SimError> {
        use hamlet_gateway::answer::{Answer, Shape};
        let style = self.settings.style;
        let book = self.folds.state.mayor.clone().unwrap_or_default();
        let rules = self.town.mayor.as_ref();
        let found_cents = rules.map_or(0, |m| m.found_cents);
        // Founding is offered only while a site is free and the treasury can pay for it.
        let free: Vec<&str> = rules
            .into_iter()
            .flat_map(|m| m.sites.iter().map(|s| s.name.as_str()))
            .filter(|s| !self.founded_on(s) && book.treasury_cents >= found_cents)
            .collect();
        let workplaces = self.workplaces();
        let standing: Vec<(&str, &str)> = self
            .town
            .sectors
            .iter()
            .filter(|s| !HOMES.contains(&s.kind.as_str()))
            .map(|s| (s.name.as_str(), s.kind.as_str()))
            .collect();
        let jobs = |taken: bool| {
            let list: Vec<String> = book
                .jobs
                .iter()
                .filter(|j| j.taken_by.is_some() == taken)
                .map(|j| format!("{} at {}", j.title, j.sector))
                .collect();
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join("; ")
            }
        };
        let stream = self.folds.minds.stream(agent);
        let recent = crate::mind::think::recent_lines(stream.recent(12), 900);
        let mut vars = who.vars();
        vars.insert("time", self.town.moment_words(now));
        vars.insert(
            "goal",
            self.folds.goals.get(&agent).cloned().unwrap_or_else(|| "a town that thrives".into()),
        );
        vars.insert("treasury", cents(book.treasury_cents));
        vars.insert("found", cents(found_cents));
        vars.insert("jobs", jobs(false));
        vars.insert("taken", jobs(true));
        vars.insert(
            "recent",
            if recent.is_empty() { "- nothing yet".into() } else { recent.join("\n") },
        );
        let asked = |name: &str, vars: &std::collections::BTreeMap<&str, String>, shape: Shape| {
            template(name)
                .and_then(|t| t.call(vars, style, shape))
                .map_err(crate::mind::think::ThinkError::from)
        };
        let choose =
            |answered: &hamlet_gateway::Answered, options: &[String]| match &answered.answer {
                Answer::Choice(c) if !answered.fallback => options.iter().position(|o| o == c),
                _ => None,
            };

        // Where: a place that stands, a free site, or nowhere.
        let mut places: Vec<String> = standing
            .iter()
            .map(|(name, kind)| format!("{name} ({} that stands)", a_kind(kind)))
            .collect();
        places.extend(free.iter().map(|site| format!("{site} (a free site)")));
        places.push(NOWHERE.to_owned());
        vars.insert("options", places.join(" | "));
        let mut call = asked("mayor_where", &vars, Shape::Choice(places.clone()))?;
        call.agent = Some(agent);
        call.max_tokens = Some(32);
        let (answered, at) = ask(&self.gateway, call, &[], now, pending).await?;
        let Some(picked) = choose(&answered, &places).filter(|i| *i + 1 < places.len()) else {
            return Ok(());
        };
        let site = picked.checked_sub(standing.len()).map(|i| free[i]);
        let place = match site {
            Some(site) => site,
            None => standing[picked].0,
        };
        let is_workplace = workplaces.iter().any(|w| w == place);

        // What: founding on a site; a job, a wage, a meeting or a task at a place.
        let mut at = at;
        let chosen = match site {
            Some(_) => Act::Found,
            None => {
                let acts: Vec<Act> = if is_workplace {
                    vec![Act::PostJob, Act::SetWage, Act::CallMeeting, Act::AssignTask]
                } else {
                    vec![Act::CallMeeting, Act::AssignTask]
                };
                let options: Vec<String> = acts.iter().map(|a| a.words().to_owned()).collect();
                vars.insert("place", place.to_owned());
                vars.insert("options", options.join(" | "));
                let mut call = asked("mayor_act", &vars, Shape::Choice(options.clone()))?;
                call.agent = Some(agent);
                call.max_tokens = Some(24);
                let causes: Vec<Cause> = at.into_iter().map(Cause::Pending).collect();
                let (answered, then) = ask(&self.gateway, call, &causes, now, pending).await?;
                at = then;
                match choose(&answered, &options) {
                    Some(i) => acts[i],
                    None => return Ok(()),
                }
            }
        };

        // The details, in a form with the place given.
        let people: Vec<String> =
            self.folds.state.agents.values().map(|a| a.name.clone()).collect();
        let time =
            serde_json::json!({ "type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$" });
        let text =
            |most: u32| serde_json::json!({ "type": "string", "minLength": 3, "maxLength": most });
        let dollars =
            serde_json::json!({ "type": "integer", "minimum": 1, "maximum": MOST_DOLLARS });
        let one_of = |list: &[String]| serde_json::json!({ "type": "string", "enum": list });
        let (form, properties) = match chosen {
            Act::PostJob => (
                "{\"title\": \"...\", \"dollars_per_hour\": <1-60>}",
                serde_json::json!({ "title": text(40), "dollars_per_hour": dollars }),
            ),
            Act::Found => (
                "{\"like\": \"<a place to copy>\", \"name\": \"...\"}",
                serde_json::json!({ "like": one_of(&workplaces), "name": text(40) }),
            ),
            Act::SetWage => (
                "{\"dollars_per_hour\": <1-60>}",
                serde_json::json!({ "dollars_per_hour": dollars }),
            ),
            Act::CallMeeting => (
                "{\"what\": \"...\", \"from\": \"HH:MM\", \"until\": \"HH:MM\"}",
                serde_json::json!({ "what": text(80), "from": time, "until": time }),
            ),
            Act::AssignTask => (
                "{\"who\": \"...\", \"what\": \"...\", \"from\": \"HH:MM\", \"until\": \"HH:MM\"}",
                serde_json::json!({ "who": one_of(&people), "what": text(80), "from": time, "until": time }),
            ),
        };
        let required: Vec<&String> =
            properties.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        let schema = serde_json::json!({
            "type": "object", "properties": properties, "required": required, "additionalProperties": false,
        });
        let act_words = format!("{} {place}", chosen.at_words());
        vars.insert("act", act_words.clone());
        vars.insert("form", form.to_owned());
        vars.insert("places", workplaces.join(", "));
        vars.insert("people", people.join(", "));
        let mut call = asked("mayor_details", &vars, Shape::Json(schema))?;
        call.agent = Some(agent);
        call.max_tokens = Some(120);
        let causes: Vec<Cause> = at.into_iter().map(Cause::Pending).collect();
        let (answered, at) = ask(&self.gateway, call, &causes, now, pending).await?;
        let v = match answered.answer {
            Answer::Json(v) if !answered.fallback => v,
            _ => return Ok(()),
        };
        let s = |k: &str| {
            v.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().trim().to_owned()
        };
        let cents_of = |k: &str| v.get(k).and_then(serde_json::Value::as_i64).unwrap_or(0) * 100;
        let clock = |k: &str| crate::mind::social::times_named(&s(k)).first().copied();
        let day = now - now % 86_400;
        let span = || match (clock("from"), clock("until")) {
            (Some(a), Some(b)) if b > a => Some((day + a * 60, ((b - a) * 60) as u32)),
            (Some(a), _) => Some((day + a * 60, 3600)),
            _ => None,
        };
        let act = match chosen {
            Act::PostJob => Some(MayorAct::PostJob {
                sector: place.to_owned(),
                // "Baker at Hart's Bakery" at Hart's Bakery is a baker's job there.
                title: match s("title").rsplit_once(" at ") {
                    Some((title, at)) if at.eq_ignore_ascii_case(place) => title.trim().to_owned(),
                    _ => s("title"),
                },
                cents_per_hour: cents_of("dollars_per_hour"),
            }),
            Act::Found => Some(MayorAct::Found {
                template: s("like"),
                name: s("name"),
                site: place.to_owned(),
                cost_cents: found_cents,
            }),
            Act::SetWage => Some(MayorAct::SetWage {
                sector: place.to_owned(),
                cents_per_hour: cents_of("dollars_per_hour"),
            }),
            Act::CallMeeting => span().map(|(start_secs, duration_secs)| MayorAct::CallMeeting {
                what: s("what"),
                place: place.to_owned(),
                start_secs,
                duration_secs,
            }),
            Act::AssignTask => {
                let to = self
                    .folds
                    .state
                    .agents
                    .iter()
                    .find(|(_, a)| a.name == s("who"))
                    .map(|(id, _)| *id);
                match (to, span()) {
                    (Some(agent), Some((start_secs, duration_secs))) => {
                        Some(MayorAct::AssignTask {
                            agent,
                            what: s("what"),
                            place: place.to_owned(),
                            start_secs,
                            duration_secs,
                        })
                    }
                    _ => None,
                }
            }
        };
        let causes: Vec<Cause> = at.into_iter().map(Cause::Pending).collect();
        let refusal = match act.map(|act| self.mayor_bodies(Some(agent), act)) {
            Some(Ok(bodies)) => {
                let first = pending.push(now, bodies[0].clone(), &causes);
                for body in &bodies[1..] {
                    pending.push(now, body.clone(), &[Cause::Pending(first)]);
                }
                return Ok(());
            }
            Some(Err(SimError::Refused { why, .. })) => why,
            Some(Err(e)) => return Err(e),
            None => "its details did not say when, or for whom".to_owned(),
        };
        let words =
            format!("{} meant to {act_words} for the town but could not: {refusal}", who.name);
        remember_rated(
            &self.gateway,
            style,
            who,
            MemoryKind::Observation,
            &[words],
            &[Some(NOTICE_IMPORTANCE)],
            &[Vec::new()],
            &causes,
            now,
            pending,
        )
        .await?;
        Ok(())
    }
}

/// The hours of a job taken at `taken_secs`, on simulated day `day`, one plan item an hour
/// ([`SHIFT_HOURS`]; on the day it was taken, from the next whole hour): none before that
/// day. A job's hours are the least of an agent's appointments: an hour a meeting, a hosted
/// event or a promise overlaps is given to it.
fn shift(description: &str, address: &str, taken_secs: u64, day: u64) -> Vec<PlanItem> {
    let midnight = day * 86_400;
    let first = if taken_secs / 86_400 == day {
        taken_secs.div_ceil(3600) * 3600
    } else if taken_secs / 86_400 < day {
        midnight
    } else {
        return Vec::new();
    };
    SHIFT_HOURS
        .map(|h| midnight + h * 3600)
        .filter(|start| *start >= first)
        .map(|start_secs| PlanItem {
            description: description.to_owned(),
            address: address.to_owned(),
            start_secs,
            duration_secs: 3600,
        })
        .collect()
}

/// A meeting or task set for the hour under way that would start before now starts at the
/// next minute and ends when it was to (a mayor deciding at 09:00:10 calls a meeting "from
/// 09:00"); one from an earlier hour, or already over, is left to be refused.
fn begun_by_now(act: MayorAct, now: u64) -> MayorAct {
    let hour = now - now % 3600;
    let next_minute = now.div_ceil(60) * 60;
    let moved = |start: u64, duration: u32| {
        let end = start + u64::from(duration);
        if start < now && start >= hour && end > next_minute {
            (next_minute, u32::try_from(end - next_minute).unwrap_or(duration))
        } else {
            (start, duration)
        }
    };
    match act {
        MayorAct::CallMeeting { what, place, start_secs, duration_secs } => {
            let (start_secs, duration_secs) = moved(start_secs, duration_secs);
            MayorAct::CallMeeting { what, place, start_secs, duration_secs }
        }
        MayorAct::AssignTask { agent, what, place, start_secs, duration_secs } => {
            let (start_secs, duration_secs) = moved(start_secs, duration_secs);
            MayorAct::AssignTask { agent, what, place, start_secs, duration_secs }
        }
        other => other,
    }
}

/// What a mayor agent may do, once it has chosen where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    PostJob,
    Found,
    SetWage,
    CallMeeting,
    AssignTask,
}

impl Act {
    /// The option, as `mayor_act` offers it.
    fn words(self) -> &'static str {
        match self {
            Act::PostJob => "post a job",
            Act::Found => "found a business",
            Act::SetWage => "set a wage",
            Act::CallMeeting => "call a meeting",
            Act::AssignTask => "give someone a task",
        }
    }

    /// The act at a place, as the details and a refusal say it ("post a job at …").
    fn at_words(self) -> &'static str {
        match self {
            Act::PostJob => "post a job at",
            Act::Found => "found a business on",
            Act::SetWage => "set the wage at",
            Act::CallMeeting => "call a meeting at",
            Act::AssignTask => "give someone a task at",
        }
    }
}

/// "a café", "an office": a sector kind with its article.
fn a_kind(kind: &str) -> String {
    let word = if kind == "cafe" { "café" } else { kind };
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {word}")
    } else {
        format!("a {word}")
    }
}

/// A mayor's act as every agent reads it.
#[derive(Clone, Debug)]
pub(super) struct Notice {
    /// The `MayorActed` event.
    pub(super) event: EventId,
    /// Who acted.
    pub(super) mayor: Option<AgentId>,
    /// What.
    pub(super) act: MayorAct,
}
