//! What an agent perceives in a step: what is going on where it stands (a happening at its
//! room or its building), then the agents and objects within its vision radius and in sight
//! (its own room, or from the open ground the open ground: walls stop sight), nearest
//! first, at most its attention bandwidth of them, leaving out what it perceived within the
//! retention window. A pure function of the definition and the folded town; the
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
    // What is going on here, as near as can be: its subject is its place with the object
    // left empty (`sector:arena:`, or `sector::` for a whole building).
    if let Some(address) = town.address_of(me.tile).filter(|_| !state.happenings.is_empty()) {
        let sector = address.split(':').next().unwrap_or_default();
        for h in &state.happenings {
            let subject = if h.place == address {
                format!("{address}:")
            } else if h.place == sector {
                format!("{sector}::")
            } else {
                continue;
            };
            if fresh(&subject) {
                seen.push((0, Percept { subject, description: h.text.clone(), tile: me.tile }));
            }
        }
    }
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
    // An object stands on a tile of its own arena (a town's check holds it), and walls stop
    // sight: only the objects of the agent's own room can be in sight, so only they are
    // looked at (the town's other objects, thousands in a big town, never are).
    let own_room = here.and_then(|(s, a)| {
        let sector = town.sectors.get(s)?;
        Some((sector, sector.arenas.get(a)?))
    });
    if let Some((sector, arena)) = own_room {
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
                Percept { subject: address, description: state_now.to_owned(), tile: object.at },
            ));
        }
    }
    // What is going on here first, whatever stands at the agent's feet.
    let key = |(distance, p): &(u32, Percept)| (!is_happening(p), *distance, p.subject.clone());
    seen.sort_by_cached_key(key);
    seen.truncate(usize::from(town.perception.attention_bandwidth));
    seen.into_iter().map(|(_, p)| p).collect()
}

/// A percept as the observation an agent remembers, in words: "Tobias Ashcombe is busy: Eat
/// breakfast", "Tobias Ashcombe is idle", "the stove in the kitchen of Ashcombe house is
/// idle", "in the café of Marigold café: a fire alarm is ringing". An object's subject is
/// its address (`sector:arena:object`), a happening's its place with no object (see
/// [`is_happening`]); anything else is an agent's name. Action descriptions are written by
/// the model in the imperative ("Eat
/// breakfast"), so they follow a colon rather than "is", as written.
pub fn observation(percept: &Percept) -> String {
    let state = percept.description.as_str();
    let mut parts = percept.subject.splitn(3, ':');
    if let (Some(sector), Some(arena), Some(object)) = (parts.next(), parts.next(), parts.next()) {
        return match (arena, object) {
            ("", "") => format!("at {sector}: {state}"),
            (_, "") => format!("in the {arena} of {sector}: {state}"),
            _ => format!("the {object} in the {arena} of {sector} is {state}"),
        };
    }
    let name = percept.subject.as_str();
    if state == IDLE {
        return format!("{name} is idle");
    }
    format!("{name} is busy: {state}")
}

/// Whether a percept is of something going on at the agent's place (a happening): its
/// subject is a place with the object left empty.
pub fn is_happening(percept: &Percept) -> bool {
    percept.subject.ends_with(':') && percept.subject.matches(':').count() == 2
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
        let here = percept("Marigold café:café:", "a fire alarm is ringing");
        assert_eq!(observation(&here), "in the café of Marigold café: a fire alarm is ringing");
        let building = percept("Marigold café::", "a fire alarm is ringing");
        assert_eq!(observation(&building), "at Marigold café: a fire alarm is ringing");
        assert!(is_happening(&here) && is_happening(&building));
        assert!(!is_happening(&percept("Ashcombe house:kitchen:stove", "idle")));
        assert!(!is_happening(&percept("Tobias Ashcombe", "idle")));
    }
}
