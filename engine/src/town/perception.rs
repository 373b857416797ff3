//! What an agent perceives in a step: the agents and objects within its vision radius,
//! nearest first, at most its attention bandwidth of them, leaving out what it perceived
//! within the retention window. A pure function of the definition and the folded town; the
//! engine records its result as a `Perceived` event.

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, Percept, Tile};

use super::Definition;
use crate::fold::Town;

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
    let mut seen: Vec<(u32, Percept)> = Vec::new();
    for (id, other) in &state.agents {
        if *id == agent || distance_sq(me.tile, other.tile) > radius * radius || !fresh(&other.name)
        {
            continue;
        }
        let doing = other.action.as_ref().map_or("idle", |a| a.description.as_str());
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
                if distance_sq(me.tile, object.at) > radius * radius {
                    continue;
                }
                let address = format!("{}:{}:{}", sector.name, arena.name, object.name);
                if !fresh(&address) {
                    continue;
                }
                let resting = object.states.first().map_or("idle", String::as_str);
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
