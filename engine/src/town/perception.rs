//! What an agent perceives in a step: the agents and objects within its vision radius and
//! in sight (its own room, or from the open ground the open ground: walls stop sight),
//! nearest first, at most its attention bandwidth of them, leaving out what it perceived
//! within the retention window. A pure function of the definition and the folded town; the
//! engine records its result as a `Perceived` event.

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, Percept, Tile};

use super::Definition;
use crate::fold::Town;

/// What an agent with no action, or an object with no declared state, is seen doing.
const IDLE: &str = "idle";

fn distance_sq(a: Tile, b: Tile) -> u32 {
    let dx = u32::from(a.x.abs_diff(b.x));
    let dy = u32::from(a.y.abs_diff(b.y));
    dx * dx + dy * dy
}

/// What `agent` perceives at `step`. `last_seen` maps a subject (an agent's name or an
/// object's address) to the step it was last perceived; those seen within the town's
/// retention window are left out. Ties in distance break by subject, so the result is the
/// same on every machine.
pub fn perceive(
    town: &Definition,
    state: &Town,
    agent: AgentId,
    step: u64,
    last_seen: &BTreeMap<String, u64>,
) -> Vec<Percept> {
    let Some(me) = state.agents.get(&agent) else { return Vec::new() };
    let radius = u32::from(town.perception.vision_radius_tiles);
    let fresh = |subject: &str| {
        last_seen
            .get(subject)
            .is_none_or(|&at| step.saturating_sub(at) > u64::from(town.perception.retention_steps))
    };
    // Walls stop sight: an agent sees its own room (arena), and from the open ground the
    // open ground, as the map says.
    let here = town.grid.arena_at(me.tile);
    let in_sight = |tile: Tile| town.grid.arena_at(tile) == here;
    let mut seen: Vec<(u32, Percept)> = Vec::new();
    for (id, other) in &state.agents {
        if *id == agent
            || distance_sq(me.tile, other.tile) > radius * radius
            || !in_sight(other.tile)
            || !fresh(&other.name)
        {
            continue;
        }
        let doing = other.action.as_ref().map_or(IDLE, |a| a.description.as_str());
        seen.push((
            distance_sq(me.tile, other.tile),
            Percept {
                subject: other.name.clone(),
                description: doing.to_owned(),
                tile: other.tile,
            },
        ));
    }
    for sector in &town.sectors {
        for arena in &sector.arenas {
            for object in &arena.objects {
                if distance_sq(me.tile, object.at) > radius * radius || !in_sight(object.at) {
                    continue;
                }
                let address = format!("{}:{}:{}", sector.name, arena.name, object.name);
                if !fresh(&address) {
                    continue;
                }
                let resting = object.states.first().map_or(IDLE, String::as_str);
                let state_now = state.objects.get(&address).map_or(resting, String::as_str);
                seen.push((
                    distance_sq(me.tile, object.at),
                    Percept {
                        subject: address,
                        description: state_now.to_owned(),
                        tile: object.at,
                    },
                ));
            }
        }
    }
    seen.sort_by(|a, b| (a.0, &a.1.subject).cmp(&(b.0, &b.1.subject)));
    seen.truncate(usize::from(town.perception.attention_bandwidth));
    seen.into_iter().map(|(_, p)| p).collect()
}

/// A percept as the observation an agent remembers, in words: "Tobias Ashcombe is busy: Eat
/// breakfast", "Tobias Ashcombe is idle", "the stove in the kitchen of Ashcombe house is
/// idle". An object's subject is its address (`sector:arena:object`); anything else is an
/// agent's name. Action descriptions are written by the model in the imperative ("Eat
/// breakfast"), so they follow a colon rather than "is", as written.
pub fn observation(percept: &Percept) -> String {
    let state = percept.description.as_str();
    let mut parts = percept.subject.splitn(3, ':');
    if let (Some(sector), Some(arena), Some(object)) = (parts.next(), parts.next(), parts.next()) {
        return format!("the {object} in the {arena} of {sector} is {state}");
    }
    let name = percept.subject.as_str();
    if state == IDLE {
        return format!("{name} is idle");
    }
    format!("{name} is busy: {state}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn percept(subject: &str, description: &str) -> Percept {
        Percept {
            subject: subject.to_owned(),
            description: description.to_owned(),
            tile: Tile { x: 0, y: 0 },
        }
    }

    #[test]
    fn observations_read_as_words() {
        assert_eq!(
            observation(&percept("Tobias Ashcombe", "Eat breakfast")),
            "Tobias Ashcombe is busy: Eat breakfast"
        );
        assert_eq!(observation(&percept("Tobias Ashcombe", "idle")), "Tobias Ashcombe is idle");
        assert_eq!(
            observation(&percept("Ashcombe house:kitchen:stove", "cooking")),
            "the stove in the kitchen of Ashcombe house is cooking"
        );
    }
}
