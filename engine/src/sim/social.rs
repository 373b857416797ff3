//! The loop's side of the social mechanisms of rulebook 4 (`mind::social` asks the model):
//! after a conversation, each participant's planning note and commitments are remembered and
//! recorded, and a commitment for today re-plans the day around it; a day plan keeps the
//! day's commitments as fixed appointments; a line is checked against the speaker's facts.
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
    /// the run leaves the mechanism out): of two that overlap, the later made stands.
    pub(super) fn appointments_on(&self, agent: AgentId, day: u64) -> Vec<PlanItem> {
        if !self.settings.rulebook.uses(Mechanism::Commitments) {
            return Vec::new();
        }
        let mut kept: Vec<PlanItem> = Vec::new();
        for c in self.folds.commitments.get(&agent).into_iter().flatten() {
            if c.start_secs / 86_400 != day {
                continue;
            }
            let (s, e) = (c.start_secs, c.start_secs + u64::from(c.duration_secs));
            kept.retain(|k| k.start_secs + u64::from(k.duration_secs) <= s || k.start_secs >= e);
            kept.push(PlanItem {
                description: c.what.clone(),
                address: c.address.clone(),
                start_secs: c.start_secs,
                duration_secs: c.duration_secs,
            });
        }
        kept.sort_by_key(|k| k.start_secs);
        kept
    }

    /// Where in `sector` an appointment of `agent` is kept: its workplace's room when it
    /// works there (a host at her counter), else the sector's first public room, else its
    /// first.
    fn appointment_address(&self, agent: AgentId, sector: &str) -> String {
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
                let (s, e) = (c.start_secs, c.start_secs + u64::from(c.duration_secs));
                appointments.retain(|k| {
                    k.start_secs + u64::from(k.duration_secs) <= s || k.start_secs >= e
                });
                appointments.push(PlanItem {
                    description: c.what.clone(),
                    address: c.address.clone(),
                    start_secs: c.start_secs,
                    duration_secs: c.duration_secs,
                });
            }
        }
        appointments.sort_by_key(|k| k.start_secs);
        let items = with_appointments(day_plan.items.clone(), &appointments);
        let plan = PlanMade { agent, level: PlanLevel::Day, decomposes: None, items };
        let causes: Vec<Cause> = for_today.iter().map(|(at, _)| Cause::Pending(*at)).collect();
        pending.push(now, Body::PlanMade(plan), &causes);
        Ok(true)
    }
}
