//! The loop's side of the social mechanisms of rulebook 4 (`mind::social` asks the model):
//! after a conversation, each participant's planning note and commitments are remembered and
//! recorded, and a commitment for today re-plans the day around it; a day plan keeps the
//! day's commitments as fixed appointments; a line is checked against the speaker's facts.
//! From rulebook 6, the events a persona hosts are its appointments too, and who means to
//! invite to one is found here.
//! Must not: run a conversation (`converse.rs`) or decide what an agent plans (`mind::plan`).

use hamlet_log::event::{AgentId, CommitmentMade, MemoryKind, PlanItem, PlanLevel, PlanMade};
use hamlet_log::{Body, EventId};

use crate::mind::plan::with_appointments;
use crate::mind::social::{talk_notes, Agreed};
use crate::mind::think::{remember, Who};
use crate::mind::validate::Facts;
use crate::pending::{Cause, Pending, PendingId};
use crate::rulebook::Mechanism;
use crate::store::Storage;
use crate::town::{Definition, Hosted};

use super::state::Folds;
use super::{Sim, SimError};

impl<S: Storage> Sim<S> {
    /// What the town file says of the persona named `name` that a line can get wrong; `None`
    /// for an agent the town file does not have.
    pub(super) fn facts_of(&self, name: &str) -> Option<Facts> {
        let p = self.town.personas.iter().find(|p| p.name == name)?;
        let everyone: Vec<String> = self.town.personas.iter().map(|p| p.name.clone()).collect();
        let sectors: Vec<String> = self.town.sectors.iter().map(|s| s.name.clone()).collect();
        Some(Facts::of(
            &p.name,
            &p.seed_statements(),
            &p.home,
            p.workplace.as_deref(),
            &everyone,
            &sectors,
        ))
    }

    /// What `agent`'s planned actions are checked against (rulebook 4,
    /// [`Mechanism::Validators`]): its persona's seed statements; `None` when the run leaves
    /// the mechanism out.
    pub(super) fn action_checks(&self, agent: AgentId) -> Option<Vec<String>> {
        if !self.settings.rulebook.uses(Mechanism::Validators) {
            return None;
        }
        let persona = self.folds.state.agents.get(&agent).map_or("", |a| a.persona.as_str());
        Some(crate::mind::memory::seed_statements(persona).into_iter().map(str::to_owned).collect())
    }

    /// `agent`'s commitments on simulated day `day`, as plan items (rulebook 4; none when
    /// the run leaves the mechanism out): of two that overlap, the later made stands. From
    /// rulebook 6 the events it hosts that day stand over them all ([`Mechanism::Hosting`]).
    pub(super) fn appointments_on(&self, agent: AgentId, day: u64) -> Vec<PlanItem> {
        // A job's hours first: whatever else is kept today stands over them.
        let mut kept: Vec<PlanItem> = self.shift_on(agent, day);
        if self.settings.rulebook.uses(Mechanism::Commitments) {
            for c in self.folds.commitments.get(&agent).into_iter().flatten() {
                if c.start_secs / 86_400 == day {
                    keep(&mut kept, commitment_item(c));
                }
            }
        }
        for item in self.hosted_on(agent, day) {
            keep(&mut kept, item);
        }
        // The mayor's meetings and tasks stand over both.
        for item in self.mayor_appointments(agent, day) {
            keep(&mut kept, item);
        }
        kept.sort_by_key(|k| k.start_secs);
        kept
    }

    /// The events `agent` hosts that begin on simulated day `day`, as plan items (rulebook 6,
    /// [`Mechanism::Hosting`]; none when the run leaves it out).
    fn hosted_on(&self, agent: AgentId, day: u64) -> Vec<PlanItem> {
        if !self.settings.rulebook.uses(Mechanism::Hosting) {
            return Vec::new();
        }
        let name = self.folds.state.agents.get(&agent).map_or("", |a| a.name.as_str());
        let persona = self.town.personas.iter().find(|p| p.name == name);
        let hosted = persona.into_iter().flat_map(|p| &p.hosts);
        hosted
            .filter(|h| h.start_secs / 86_400 == day)
            .map(|h| PlanItem {
                description: format!("hosts {}", h.what),
                address: self.hosted_address(agent, &h.place),
                start_secs: h.start_secs,
                duration_secs: h.duration_secs,
            })
            .collect()
    }

    /// Where a hosted event at `place` (a sector or `sector:arena`) is kept: the arena it
    /// names, else as an appointment in the sector is.
    fn hosted_address(&self, agent: AgentId, place: &str) -> String {
        match place.split_once(':') {
            Some(_) => place.to_owned(),
            None => self.appointment_address(agent, place),
        }
    }

    /// The invitation `inviter` would make `invitee` now (rulebook 6,
    /// [`Mechanism::Inviting`]), as the fold finds it: none when the run leaves the
    /// mechanism out.
    pub(super) fn invitation_for(
        &self,
        inviter: AgentId,
        invitee: AgentId,
        now: u64,
    ) -> Option<Invitation> {
        if !self.settings.rulebook.uses(Mechanism::Inviting) {
            return None;
        }
        invitation(&self.town, &self.folds, inviter, invitee, now)
    }

    /// The intention an invitation gives its inviter's side of the talk, and what the one
    /// invited is asked to: the event as the town file says it, where and when.
    pub(super) fn invitation_words(&self, invitation: &Invitation) -> (String, Agreed) {
        let hosted = &self.town.personas[invitation.host].hosts[invitation.event];
        let host = &self.town.personas[invitation.host].name;
        let invitee =
            self.folds.state.agents.get(&invitation.invitee).map_or("", |a| a.name.as_str());
        let end = hosted.start_secs + u64::from(hosted.duration_secs);
        let sector = hosted.place.split(':').next().unwrap_or(&hosted.place).to_owned();
        let intent = format!(
            "to invite {invitee} to {} at {} on {} from {:02}:{:02} to {:02}:{:02} ({host} hosts \
             it)",
            hosted.what,
            hosted.place.replace(':', ", "),
            self.town.day_words(hosted.start_secs / 86_400),
            hosted.start_secs / 3600 % 24,
            hosted.start_secs / 60 % 60,
            end / 3600 % 24,
            end / 60 % 60,
        );
        let agreed = Agreed {
            what: hosted.what.clone(),
            sector,
            start_secs: hosted.start_secs,
            duration_secs: hosted.duration_secs,
        };
        (intent, agreed)
    }

    /// Where in `sector` an appointment of `agent` is kept: its workplace's room when it
    /// works there (a host at her counter), else the sector's first public room, else its
    /// first.
    pub(super) fn appointment_address(&self, agent: AgentId, sector: &str) -> String {
        let name = self.folds.state.agents.get(&agent).map_or("", |a| a.name.as_str());
        let work =
            self.town.personas.iter().find(|p| p.name == name).and_then(|p| p.workplace.as_deref());
        if let Some(w) = work.filter(|w| w.split(':').next() == Some(sector)) {
            return w.to_owned();
        }
        let Some(s) = self.town.sectors.iter().find(|s| s.name == sector) else {
            return sector.to_owned();
        };
        let room = s.arenas.iter().find(|a| a.public).or(s.arenas.first());
        room.map_or_else(|| sector.to_owned(), |a| format!("{sector}:{}", a.name))
    }

    /// After a conversation (rulebook 4): `agent`'s planning note, remembered; each
    /// commitment it agreed to, recorded (`CommitmentMade`) and remembered; and when one is
    /// for today, the day plan made again around it (the day's items cut around the
    /// appointment; no model call). Returns whether the day was re-planned.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn take_notes(
        &self,
        agent: AgentId,
        who: &Who<'_>,
        other: &str,
        place: &str,
        time: &str,
        lines: &[String],
        conversation: EventId,
        with: &[AgentId],
        invited: &[(Agreed, Option<PendingId>)],
        ended: PendingId,
        now: u64,
        pending: &mut Pending,
    ) -> Result<bool, SimError> {
        let style = self.settings.style;
        let places: Vec<String> = self.known(agent).known.keys().cloned().collect();
        let today = now / 86_400;
        let days: Vec<String> = (today..today + 3).map(|d| self.town.day_words(d)).collect();
        let (note, agreed, asked) = talk_notes(
            &self.gateway,
            style,
            who,
            other,
            place,
            time,
            lines,
            &places,
            &days,
            &[Cause::Pending(ended)],
            now,
            pending,
        )
        .await?;
        let because: Vec<Cause> = asked.map(Cause::Pending).into_iter().collect();
        let mut memories = Vec::new();
        if !note.is_empty() {
            memories.push(format!("For {}'s planning: {note}", who.name));
        }
        // An invitation accepted (rulebook 5) stands over what the note says was agreed at
        // the same place and time.
        let overlaps = |a: &Agreed, b: &Agreed| {
            a.sector == b.sector
                && a.start_secs < b.start_secs + u64::from(b.duration_secs)
                && b.start_secs < a.start_secs + u64::from(a.duration_secs)
        };
        let noted = agreed
            .iter()
            .filter(|a| !invited.iter().any(|(b, _)| overlaps(a, b)))
            .map(|a| (a, because.clone()));
        let accepted =
            invited.iter().map(|(a, at)| (a, at.map(Cause::Pending).into_iter().collect()));
        let all: Vec<(&Agreed, Vec<Cause>)> = accepted.chain(noted).collect();
        let mut made = Vec::new();
        for (a, because) in &all {
            let end = a.start_secs + u64::from(a.duration_secs);
            let day = self.town.day_words(a.start_secs / 86_400);
            memories.push(format!(
                "{} agreed with {other} to be at {} on {day} from {:02}:{:02} to {:02}:{:02}: {}",
                who.name,
                a.sector,
                a.start_secs / 3600 % 24,
                a.start_secs / 60 % 60,
                end / 3600 % 24,
                end / 60 % 60,
                a.what
            ));
            let body = Body::CommitmentMade(CommitmentMade {
                agent,
                conversation,
                with: with.to_vec(),
                what: a.what.clone(),
                address: self.appointment_address(agent, &a.sector),
                start_secs: a.start_secs,
                duration_secs: a.duration_secs,
            });
            made.push((pending.push(now, body.clone(), because), body));
        }
        if !memories.is_empty() {
            let because: Vec<Cause> = all
                .iter()
                .flat_map(|(_, b)| b.iter().copied())
                .chain(because.iter().copied())
                .fold(Vec::new(), |mut out, c| {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                    out
                });
            remember(
                &self.gateway,
                style,
                who,
                MemoryKind::Plan,
                &memories,
                &[],
                &because,
                now,
                pending,
            )
            .await?;
        }
        // A commitment for today: the day plan again, the appointment kept in it.
        let for_today: Vec<&(PendingId, Body)> = made
            .iter()
            .filter(|(_, b)| matches!(b, Body::CommitmentMade(c) if c.start_secs / 86_400 == today))
            .collect();
        if self.folds.goal_planners.contains(&agent) {
            return Ok(self.cut_purpose(agent, &for_today, now, pending));
        }
        let day_plan = self
            .folds
            .day_plans
            .get(&agent)
            .filter(|p| p.items.first().is_some_and(|i| i.start_secs / 86_400 == today));
        let (Some(day_plan), false) = (day_plan, for_today.is_empty()) else { return Ok(false) };
        if !self.strategy(agent).plans() {
            return Ok(false);
        }
        let mut appointments = self.appointments_on(agent, today);
        for (_, body) in &for_today {
            if let Body::CommitmentMade(c) = body {
                keep(&mut appointments, commitment_item(c));
            }
        }
        // (What it hosts stands over a promise: rulebook 6.)
        for item in self.hosted_on(agent, today) {
            keep(&mut appointments, item);
        }
        appointments.sort_by_key(|k| k.start_secs);
        let items = with_appointments(day_plan.items.clone(), &appointments);
        let plan = PlanMade { agent, level: PlanLevel::Day, decomposes: None, items };
        let causes: Vec<Cause> = for_today.iter().map(|(at, _)| Cause::Pending(*at)).collect();
        pending.push(now, Body::PlanMade(plan), &causes);
        Ok(true)
    }
}

/// `item` added to `kept`, and every item it overlaps dropped.
impl<S: Storage> Sim<S> {
    /// For an agent planning toward its goal (`goal_qa`): a purpose under way that runs into
    /// what it just agreed to do today ends where that starts, as a purpose of its own (from
    /// the minute under way; broken into actions again). Whether it was cut.
    fn cut_purpose(
        &self,
        agent: AgentId,
        made: &[&(PendingId, Body)],
        now: u64,
        pending: &mut Pending,
    ) -> bool {
        let start = now - now % 60;
        let next = made
            .iter()
            .filter_map(|(at, b)| match b {
                Body::CommitmentMade(c) if c.start_secs > start + 60 => Some((c.start_secs, *at)),
                _ => None,
            })
            .min();
        let Some((agreed, at)) = next else { return false };
        self.cut_purpose_at(agent, agreed, Cause::Pending(at), now, pending)
    }

    /// A goal planner's purpose under way that runs past `at` (simulated seconds) ends there:
    /// the rest of it, from the minute under way, as a purpose of its own, caused by `cause`.
    /// Whether it was cut.
    pub(super) fn cut_purpose_at(
        &self,
        agent: AgentId,
        at: u64,
        cause: Cause,
        now: u64,
        pending: &mut Pending,
    ) -> bool {
        let start = now - now % 60;
        if at <= start + 60 {
            return false;
        }
        let Some((_, item)) = self.folds.schedules.of(agent).hour_under_way(now) else {
            return false;
        };
        if item.start_secs + u64::from(item.duration_secs) <= at {
            return false;
        }
        let rest = PlanItem { start_secs: start, duration_secs: (at - start) as u32, ..item };
        let plan = PlanMade { agent, level: PlanLevel::Hour, decomposes: None, items: vec![rest] };
        pending.push(now, Body::PlanMade(plan), &[cause]);
        true
    }
}

fn keep(kept: &mut Vec<PlanItem>, item: PlanItem) {
    let (s, e) = (item.start_secs, item.start_secs + u64::from(item.duration_secs));
    kept.retain(|k| k.start_secs + u64::from(k.duration_secs) <= s || k.start_secs >= e);
    kept.push(item);
}

/// A commitment as a plan item.
fn commitment_item(c: &CommitmentMade) -> PlanItem {
    PlanItem {
        description: c.what.clone(),
        address: c.address.clone(),
        start_secs: c.start_secs,
        duration_secs: c.duration_secs,
    }
}

/// An invitation to a hosted event (rulebook 6): who asks whom, to which event (the host's
/// index among the town file's personas, and the event's among its `hosts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Invitation {
    pub(super) inviter: AgentId,
    pub(super) invitee: AgentId,
    pub(super) host: usize,
    pub(super) event: usize,
}

/// Whether `agent` has promised to go to `hosted`: a commitment in its sector that overlaps
/// it.
fn promised(folds: &Folds, agent: AgentId, hosted: &Hosted) -> bool {
    let sector = hosted.place.split(':').next().unwrap_or(&hosted.place);
    let end = hosted.start_secs + u64::from(hosted.duration_secs);
    folds.commitments.get(&agent).into_iter().flatten().any(|c| {
        c.address.split(':').next() == Some(sector)
            && c.start_secs < end
            && hosted.start_secs < c.start_secs + u64::from(c.duration_secs)
    })
}

/// The first event of the town file, not yet over at `now`, that `inviter` hosts or has
/// promised to go to, and to which `invitee` — neither its host nor promised to go — has not
/// been invited by `inviter`.
pub(super) fn invitation(
    town: &Definition,
    folds: &Folds,
    inviter: AgentId,
    invitee: AgentId,
    now: u64,
) -> Option<Invitation> {
    let name = |a: AgentId| folds.state.agents.get(&a).map(|x| x.name.as_str());
    let (inviter_name, invitee_name) = (name(inviter)?, name(invitee)?);
    if inviter == invitee {
        return None;
    }
    for (host, persona) in town.personas.iter().enumerate() {
        for (event, hosted) in persona.hosts.iter().enumerate() {
            let over = now >= hosted.start_secs + u64::from(hosted.duration_secs);
            let asks = persona.name == inviter_name || promised(folds, inviter, hosted);
            let asked = persona.name == invitee_name || promised(folds, invitee, hosted);
            let it = Invitation { inviter, invitee, host, event };
            if !over && asks && !asked && !folds.invited.contains(&it) {
                return Some(it);
            }
        }
    }
    None
}
