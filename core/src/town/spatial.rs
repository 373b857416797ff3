//! An agent's spatial memory: the part of the environment tree it has seen, with each
//! object's state as last seen. It is a fold of the agent's own `Perceived` events, so it
//! goes stale while the agent is away and is brought up to date when it returns. Prompts
//! describe places from it, never from the town's true state.

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, Body, Event, Tile};

use super::Definition;

/// What one agent knows of the town.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpatialMemory {
    /// Sector → arena → object → state as last seen.
    pub known: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>,
}

impl SpatialMemory {
    /// Folds one event: only `agent`'s perceptions of objects change it.
    pub fn apply(&mut self, agent: AgentId, event: &Event) {
        let Body::Perceived(p) = &event.body else { return };
        if p.agent != agent {
            return;
        }
        for percept in &p.percepts {
            let mut parts = percept.subject.splitn(3, ':');
            if let (Some(sector), Some(arena), Some(object)) =
                (parts.next(), parts.next(), parts.next())
            {
                self.known
                    .entry(sector.to_owned())
                    .or_default()
                    .entry(arena.to_owned())
                    .or_default()
                    .insert(object.to_owned(), percept.description.clone());
            }
        }
    }

    /// Whether the agent knows of a sector.
    pub fn knows_sector(&self, sector: &str) -> bool {
        self.known.contains_key(sector)
    }
}

/// A place in words, from what `name` knows: where it stands and what it remembers there.
/// "Mei Lin is in Lin house, in the kitchen; there is a stove (cooking) and a fridge here."
pub fn describe_place(town: &Definition, memory: &SpatialMemory, name: &str, tile: Tile) -> String {
    let Some(address) = town.address_of(tile) else {
        return format!("{name} is outdoors in {}.", town.name);
    };
    let (sector, arena) = address.split_once(':').unwrap_or((&address, ""));
    let objects: Vec<String> = memory
        .known
        .get(sector)
        .and_then(|arenas| arenas.get(arena))
        .map(|objects| {
            objects
                .iter()
                .map(|(object, state)| {
                    let resting = super::objects::object(town, &format!("{address}:{object}"))
                        .and_then(|o| o.states.first())
                        .is_some_and(|r| r == state);
                    if resting {
                        format!("a {object}")
                    } else {
                        format!("a {object} ({state})")
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    match objects.as_slice() {
        [] => format!("{name} is in {sector}, in the {arena}."),
        [one] => format!("{name} is in {sector}, in the {arena}; there is {one} here."),
        [init @ .., last] => format!(
            "{name} is in {sector}, in the {arena}; there is {} and {last} here.",
            init.join(", ")
        ),
    }
}
