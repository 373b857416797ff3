//! Actions and the objects they use: starting an action at an object puts the object into
//! the state the action gives it; when the action's time is up, the object returns to rest.
//! Both are events, made here and committed by the engine.

use hamlet_log::event::{ActionStarted, AgentId, Body, NewEvent, PlanRef};

use super::objects::{object, rest, set_state, ObjectError};
use super::Definition;
use crate::fold::Town;

/// An action to start.
#[derive(Clone, Debug)]
pub struct Start<'a> {
    /// Who acts.
    pub agent: AgentId,
    /// What, in words.
    pub description: &'a str,
    /// For the map.
    pub emoji: &'a str,
    /// Where: `sector:arena` or `sector:arena:object`.
    pub address: &'a str,
    /// For how long.
    pub duration_secs: u32,
    /// The state the object takes, if the action uses one.
    pub object_state: Option<&'a str>,
    /// The plan item it carries out.
    pub plan_item: Option<PlanRef>,
}

/// The events that start an action at `now`: the object the agent leaves returns to rest,
/// the action starts, the object it uses takes its state.
pub fn start(
    town: &Definition,
    state: &Town,
    action: &Start<'_>,
    now: u64,
) -> Result<Vec<NewEvent>, ObjectError> {
    let mut events = Vec::new();
    if let Some(previous) = state.agents.get(&action.agent).and_then(|a| a.action.as_ref()) {
        // An action cut short rests its object here; one that is over, in `finish_due`.
        let under_way =
            previous.started_secs.saturating_add(u64::from(previous.duration_secs)) > now;
        if under_way
            && object(town, &previous.address).is_some()
            && state.objects.contains_key(&previous.address)
        {
            events.push(rest(town, &previous.address, Some(action.agent), now)?);
        }
    }
    events.push(NewEvent::new(
        now,
        Body::ActionStarted(ActionStarted {
            agent: action.agent,
            description: action.description.into(),
            emoji: action.emoji.into(),
            address: action.address.into(),
            duration_secs: action.duration_secs,
            plan_item: action.plan_item,
        }),
    ));
    if let Some(object_state) = action.object_state {
        events.push(set_state(town, action.address, object_state, Some(action.agent), now)?);
    }
    Ok(events)
}

/// The objects whose users' actions are over by `now`, back to rest.
pub fn finish_due(town: &Definition, state: &Town, now: u64) -> Vec<NewEvent> {
    let mut events = Vec::new();
    for (agent, a) in &state.agents {
        let Some(action) = &a.action else { continue };
        let over = action.started_secs.saturating_add(u64::from(action.duration_secs)) <= now;
        if over && state.objects.contains_key(&action.address) {
            if let Ok(event) = rest(town, &action.address, Some(*agent), now) {
                events.push(event);
            }
        }
    }
    events
}
