//! Walking: when an action names a place, the agent goes there one tile per step, each step
//! a `Moved` event, along the shortest walk the grid gives.

use hamlet_log::event::{AgentId, Body, Moved, NewEvent, Tile};

use super::{find_arena, Definition};
use crate::fold::Town;

/// Where an address (`sector:arena` or `sector:arena:object`) can be reached: the object's
/// tile, or every floor tile of the arena.
pub fn destinations(town: &Definition, address: &str) -> Vec<Tile> {
    let mut parts = address.splitn(3, ':');
    let (Some(sector), Some(arena)) = (parts.next(), parts.next()) else { return Vec::new() };
    let Some((si, ai)) = find_arena(&town.sectors, &format!("{sector}:{arena}")) else {
        return Vec::new();
    };
    let Some(arena) = town.sectors.get(si).and_then(|s| s.arenas.get(ai)) else {
        return Vec::new();
    };
    match parts.next() {
        Some(object) => arena.objects.iter().filter(|o| o.name == object).map(|o| o.at).collect(),
        None => arena.tiles.clone(),
    }
}

/// The next step of `agent` towards `address`: a `Moved` event at `now`, or `None` when it
/// is there already (or the place does not exist or cannot be reached). Among the place's
/// tiles, the nearest by walk is the goal, ties broken by tile order.
pub fn step_towards(
    town: &Definition,
    state: &Town,
    agent: AgentId,
    address: &str,
    now: u64,
) -> Option<NewEvent> {
    let here = state.agents.get(&agent)?.tile;
    let goals = destinations(town, address);
    if goals.contains(&here) {
        return None;
    }
    let best = goals
        .iter()
        .filter_map(|&g| town.grid.path(here, g))
        .min_by(|a, b| (a.len(), a.last()).cmp(&(b.len(), b.last())))?;
    let next = *best.get(1)?;
    Some(NewEvent::new(now, Body::Moved(Moved { agent, from: here, to: next })))
}
