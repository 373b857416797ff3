//! The clock: the town advances in steps of `seconds_per_step`, each a `ClockStepped` event
//! whose envelope carries the new time. When every agent sleeps, the engine may skip ahead
//! many steps in one event: the skip is recorded, so replays and forks land on the same
//! steps, and no draw of randomness depends on steps that were skipped.

use hamlet_log::event::{Body, ClockStepped, NewEvent};

use super::Definition;
use crate::fold::Town;

/// Simulated seconds as (day, hour, minute, second).
pub fn time_of_day(sim_time_secs: u64) -> (u64, u8, u8, u8) {
    let secs = sim_time_secs % 86_400;
    (sim_time_secs / 86_400, (secs / 3600) as u8, (secs / 60 % 60) as u8, (secs % 60) as u8)
}

/// The next `n` steps in one event (`n` ≥ 1): one step, or a skip while everyone sleeps.
pub fn advance(town: &Definition, state: &Town, n: u64) -> NewEvent {
    let n = n.max(1);
    let step = state.step.saturating_add(n);
    let time =
        state.sim_time_secs.saturating_add(n.saturating_mul(u64::from(town.seconds_per_step)));
    NewEvent::new(time, Body::ClockStepped(ClockStepped { step }))
}

/// How many steps to skip while everyone sleeps: up to the earliest moment an agent wakes
/// (`wake_secs` for each agent asleep; `None` if anyone is awake), at least one step.
pub fn steps_until(town: &Definition, now_secs: u64, wake_secs: &[Option<u64>]) -> u64 {
    let mut earliest = None::<u64>;
    for wake in wake_secs {
        let Some(wake) = wake else { return 1 }; // someone is awake
        earliest = Some(earliest.map_or(*wake, |e| e.min(*wake)));
    }
    let Some(earliest) = earliest else { return 1 };
    earliest.saturating_sub(now_secs).div_ceil(u64::from(town.seconds_per_step)).max(1)
}
