//! Where each agent is in its plans, as a fold of `PlanMade` events: the day plan, its
//! hour parts, their actions — and so what the agent needs next at a moment: a day plan, a
//! decomposition of the item under way, or to act on the action under way.

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, PlanItem, PlanLevel, PlanMade, PlanRef};
use hamlet_log::{Body, Event, EventId};

/// The plan item that ends every day plan, from the engine's bedtime to midnight: the agent
/// is asleep (the loop leaves it be and the clock may skip), and it is acted on as it
/// stands, never broken down.
pub const SLEEP: &str = "sleeping";

/// One agent's plans.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    day: Option<(EventId, PlanMade)>,
    /// The simulated day the day plan is for.
    day_number: u64,
    parts: BTreeMap<PlanRef, (EventId, PlanMade)>,
    /// The latest plan made moment to moment (actions decomposing nothing), by agents whose
    /// strategy does not plan ahead.
    loose: Option<(EventId, PlanMade)>,
    /// The latest purpose (an hour-level plan decomposing nothing: a stretch of time at a
    /// place, for a reason), by agents that plan toward their life goal (`goal_qa`). It is
    /// broken into actions as an hour part is.
    purpose: Option<(EventId, PlanMade)>,
}

/// What an agent needs next.
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// No plan for today: plan the day.
    PlanDay,
    /// Today's plan is empty and nothing covers now: decide the next few minutes.
    Moment,
    /// The item under way is not yet broken down to this level.
    Decompose {
        /// The item.
        item: PlanRef,
        /// Its words and times.
        what: PlanItem,
        /// The level to break it into.
        level: PlanLevel,
    },
    /// The action under way.
    Act {
        /// The action item.
        item: PlanRef,
        /// Its words, place and times.
        what: PlanItem,
    },
    /// The plan has nothing at this moment (before its first item or after its last).
    Free,
}

fn covering(plan: &PlanMade, now: u64) -> Option<(u16, &PlanItem)> {
    plan.items.iter().enumerate().find_map(|(i, item)| {
        let end = item.start_secs.saturating_add(u64::from(item.duration_secs));
        (item.start_secs <= now && now < end).then_some((i as u16, item))
    })
}

impl Schedule {
    /// What the agent needs at `now` (simulated seconds); a day plan made on another day
    /// does not count.
    pub fn need(&self, now: u64) -> Need {
        // Without a day plan, a plan made moment to moment may cover now.
        let loose = || {
            let (id, plan) = self.loose.as_ref()?;
            let (index, item) = covering(plan, now)?;
            Some(Need::Act { item: PlanRef { plan: *id, item: index }, what: item.clone() })
        };
        let Some((day_id, day)) = &self.day else {
            return loose().or_else(|| self.purpose_need(now)).unwrap_or(Need::PlanDay);
        };
        if self.day_number != now / 86_400 {
            return Need::PlanDay;
        }
        if day.items.is_empty() {
            // The day plan came back empty (the fallback): the day is lived a quarter hour
            // at a time, as by an agent that does not plan ahead.
            return loose().unwrap_or(Need::Moment);
        }
        let mut plan_id = *day_id;
        let mut plan = day;
        for level in [PlanLevel::Hour, PlanLevel::Action] {
            let Some((index, item)) = covering(plan, now) else { return Need::Free };
            let item_ref = PlanRef { plan: plan_id, item: index };
            if item.description == SLEEP {
                // Sleep is not broken down: the agent sleeps until the day ends.
                return Need::Act { item: item_ref, what: item.clone() };
            }
            match self.parts.get(&item_ref) {
                Some((id, parts)) if !parts.items.is_empty() => {
                    plan_id = *id;
                    plan = parts;
                }
                // An empty decomposition (a fallback) leaves the item itself to act on.
                Some(_) => return Need::Act { item: item_ref, what: item.clone() },
                None => return Need::Decompose { item: item_ref, what: item.clone(), level },
            }
        }
        match covering(plan, now) {
            Some((index, item)) => {
                Need::Act { item: PlanRef { plan: plan_id, item: index }, what: item.clone() }
            }
            None => Need::Free,
        }
    }

    /// What the purpose under way needs at `now`, if one covers it: to be broken into
    /// actions, or the action under way (or nothing, between its actions).
    fn purpose_need(&self, now: u64) -> Option<Need> {
        let (id, plan) = self.purpose.as_ref()?;
        let (index, item) = covering(plan, now)?;
        let item_ref = PlanRef { plan: *id, item: index };
        if item.description == SLEEP {
            return Some(Need::Act { item: item_ref, what: item.clone() });
        }
        Some(match self.parts.get(&item_ref) {
            Some((parts_id, parts)) if !parts.items.is_empty() => match covering(parts, now) {
                Some((i, action)) => {
                    Need::Act { item: PlanRef { plan: *parts_id, item: i }, what: action.clone() }
                }
                None => Need::Free,
            },
            Some(_) => Need::Act { item: item_ref, what: item.clone() },
            None => {
                Need::Decompose { item: item_ref, what: item.clone(), level: PlanLevel::Action }
            }
        })
    }

    /// The hour part under way at `now` (the item an action plan decomposes), if the day
    /// plan has been broken down that far; without a day plan, the purpose under way.
    pub fn hour_under_way(&self, now: u64) -> Option<(PlanRef, PlanItem)> {
        let Some((day_id, day)) = self.day.as_ref() else {
            let (id, plan) = self.purpose.as_ref()?;
            let (index, item) = covering(plan, now)?;
            return (item.description != SLEEP)
                .then(|| (PlanRef { plan: *id, item: index }, item.clone()));
        };
        if self.day_number != now / 86_400 {
            return None;
        }
        let (index, _) = covering(day, now)?;
        let (parts_id, parts) = self.parts.get(&PlanRef { plan: *day_id, item: index })?;
        let (index, item) = covering(parts, now)?;
        Some((PlanRef { plan: *parts_id, item: index }, item.clone()))
    }

    /// The plan that breaks `item` down, if it has been.
    pub fn parts_of(&self, item: PlanRef) -> Option<&PlanMade> {
        self.parts.get(&item).map(|(_, p)| p)
    }

    /// The day plan, if any.
    pub fn day(&self) -> Option<&PlanMade> {
        self.day.as_ref().map(|(_, p)| p)
    }
}

/// Every agent's schedule, folded from the log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedules {
    by_agent: BTreeMap<AgentId, Schedule>,
}

impl Schedules {
    /// Folds one event in: a day plan replaces the agent's plans; a decomposition is kept
    /// under the item it decomposes.
    pub fn apply(&mut self, event: &Event) {
        let Body::PlanMade(plan) = &event.body else { return };
        let schedule = self.by_agent.entry(plan.agent).or_default();
        match (plan.level, plan.decomposes) {
            (PlanLevel::Day, _) => {
                // The day its items are on; an empty plan (a fallback) is for the day it
                // was made.
                schedule.day_number =
                    plan.items.first().map_or(event.sim_time_secs(), |i| i.start_secs) / 86_400;
                schedule.day = Some((event.id, plan.clone()));
                schedule.parts.clear();
            }
            (_, Some(of)) => {
                schedule.parts.insert(of, (event.id, plan.clone()));
            }
            (PlanLevel::Action, None) => schedule.loose = Some((event.id, plan.clone())),
            (PlanLevel::Hour, None) => schedule.purpose = Some((event.id, plan.clone())),
        }
    }

    /// An agent's schedule (empty if it has none).
    pub fn of(&self, agent: AgentId) -> &Schedule {
        // (Borrowed: a day's plans are hundreds of items, and every agent's step asks.)
        static NONE: Schedule = Schedule {
            day: None,
            day_number: 0,
            parts: BTreeMap::new(),
            loose: None,
            purpose: None,
        };
        self.by_agent.get(&agent).unwrap_or(&NONE)
    }
}

#[cfg(test)]
mod tests {
    use hamlet_log::event::Header;
    use hamlet_log::BranchId;

    use super::*;

    const MEI: AgentId = AgentId(0);
    const DAY1: u64 = 86_400;

    fn item(what: &str, start_min: u64, minutes: u32) -> PlanItem {
        PlanItem {
            description: what.into(),
            address: String::new(),
            start_secs: DAY1 + start_min * 60,
            duration_secs: minutes * 60,
        }
    }

    fn plan(n: u8, level: PlanLevel, decomposes: Option<PlanRef>, items: Vec<PlanItem>) -> Event {
        Event {
            id: EventId([n; 32]),
            parent: EventId::NONE,
            branch: BranchId(EventId([0xbb; 32])),
            header: Header { seq: u64::from(n), sim_time_secs: DAY1, causes: vec![] },
            body: Body::PlanMade(PlanMade { agent: MEI, level, decomposes, items }),
        }
    }

    #[test]
    fn needs_go_from_day_plan_to_parts_to_actions_to_acting() {
        let mut s = Schedules::default();
        let at = |m: u64| DAY1 + m * 60;
        assert_eq!(s.of(MEI).need(at(420)), Need::PlanDay);
        s.apply(&plan(
            1,
            PlanLevel::Day,
            None,
            vec![item("morning", 420, 180), item("paint", 600, 240)],
        ));
        let day = PlanRef { plan: EventId([1; 32]), item: 0 };
        assert!(
            matches!(s.of(MEI).need(at(430)), Need::Decompose { item, level: PlanLevel::Hour, .. } if item == day)
        );
        assert_eq!(s.of(MEI).need(at(300)), Need::Free, "before the first item");
        s.apply(&plan(
            2,
            PlanLevel::Hour,
            Some(day),
            vec![item("wash", 420, 60), item("breakfast", 480, 60)],
        ));
        let hour = PlanRef { plan: EventId([2; 32]), item: 1 };
        assert!(
            matches!(s.of(MEI).need(at(485)), Need::Decompose { item, level: PlanLevel::Action, .. } if item == hour)
        );
        s.apply(&plan(
            3,
            PlanLevel::Action,
            Some(hour),
            vec![item("cook eggs", 480, 10), item("eat", 490, 15)],
        ));
        match s.of(MEI).need(at(495)) {
            Need::Act { item, what } => {
                assert_eq!(item, PlanRef { plan: EventId([3; 32]), item: 1 });
                assert_eq!(what.description, "eat");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s.of(MEI).need(at(510)),
            Need::Free,
            "between the last action and the hour's end"
        );
        // The next day needs a new plan; a new day plan replaces everything.
        assert_eq!(s.of(MEI).need(DAY1 + 86_400 + 3600), Need::PlanDay);
        s.apply(&plan(4, PlanLevel::Day, None, vec![item("rest", 420, 600)]));
        assert!(s.of(MEI).day().is_some_and(|d| d.items.len() == 1));
    }

    #[test]
    fn an_empty_decomposition_means_acting_on_the_item_itself() {
        let mut s = Schedules::default();
        s.apply(&plan(1, PlanLevel::Day, None, vec![item("morning", 420, 180)]));
        let day = PlanRef { plan: EventId([1; 32]), item: 0 };
        s.apply(&plan(2, PlanLevel::Hour, Some(day), vec![]));
        assert!(matches!(s.of(MEI).need(DAY1 + 430 * 60), Need::Act { item, .. } if item == day));
        // An empty day plan is still today's plan (it is not asked for again): the day is
        // lived moment to moment; tomorrow needs a new one.
        s.apply(&plan(3, PlanLevel::Day, None, vec![]));
        assert_eq!(s.of(MEI).need(DAY1 + 600), Need::Moment);
        s.apply(&plan(4, PlanLevel::Action, None, vec![item("read", 10, 15)]));
        assert!(
            matches!(s.of(MEI).need(DAY1 + 700), Need::Act { what, .. } if what.description == "read")
        );
        assert_eq!(s.of(MEI).need(DAY1 + 26 * 60), Need::Moment, "then the next moment");
        assert_eq!(s.of(MEI).need(DAY1 + 86_400 + 600), Need::PlanDay);
    }

    #[test]
    fn a_plan_made_moment_to_moment_covers_only_its_minutes() {
        let mut s = Schedules::default();
        s.apply(&plan(1, PlanLevel::Action, None, vec![item("sketch the pond", 420, 15)]));
        assert!(matches!(
            s.of(MEI).need(DAY1 + 425 * 60),
            Need::Act { what, .. } if what.description == "sketch the pond"
        ));
        assert_eq!(s.of(MEI).need(DAY1 + 436 * 60), Need::PlanDay, "then it needs another");
        assert_eq!(s.of(MEI).hour_under_way(DAY1 + 425 * 60), None);
    }

    #[test]
    fn a_purpose_is_broken_into_actions_and_asked_again_when_its_time_is_up() {
        let mut s = Schedules::default();
        let at = |m: u64| DAY1 + m * 60;
        let mut bake = item("bakes bread for the stall", 480, 90);
        bake.address = "Oak Hill bakery:kitchen".into();
        s.apply(&plan(1, PlanLevel::Hour, None, vec![bake]));
        let purpose = PlanRef { plan: EventId([1; 32]), item: 0 };
        assert!(matches!(
            s.of(MEI).need(at(490)),
            Need::Decompose { item, level: PlanLevel::Action, what } if item == purpose && what.address == "Oak Hill bakery:kitchen"
        ));
        assert_eq!(s.of(MEI).hour_under_way(at(490)).map(|(r, _)| r), Some(purpose));
        s.apply(&plan(2, PlanLevel::Action, Some(purpose), vec![item("kneads dough", 480, 30)]));
        assert!(
            matches!(s.of(MEI).need(at(500)), Need::Act { what, .. } if what.description == "kneads dough")
        );
        assert_eq!(s.of(MEI).need(at(530)), Need::Free, "between its actions");
        assert_eq!(s.of(MEI).need(at(570)), Need::PlanDay, "done: the next purpose is asked");
        s.apply(&plan(3, PlanLevel::Hour, None, vec![item(SLEEP, 1350, 90)]));
        assert!(
            matches!(s.of(MEI).need(at(1360)), Need::Act { what, .. } if what.description == SLEEP)
        );
        assert_eq!(s.of(MEI).hour_under_way(at(1360)), None, "sleep is not an hour part");
    }

    #[test]
    fn the_hour_under_way_is_the_part_an_action_plan_decomposes() {
        let mut s = Schedules::default();
        s.apply(&plan(1, PlanLevel::Day, None, vec![item("morning", 420, 180)]));
        let day = PlanRef { plan: EventId([1; 32]), item: 0 };
        assert_eq!(s.of(MEI).hour_under_way(DAY1 + 430 * 60), None, "not broken down yet");
        s.apply(&plan(
            2,
            PlanLevel::Hour,
            Some(day),
            vec![item("wash", 420, 60), item("eat", 480, 60)],
        ));
        let (at, what) = s.of(MEI).hour_under_way(DAY1 + 490 * 60).expect("an hour part");
        assert_eq!(at, PlanRef { plan: EventId([2; 32]), item: 1 });
        assert_eq!(what.description, "eat");
    }
}
