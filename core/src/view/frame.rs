//! A frame: the town at a moment as the map draws it — every agent's tile, initials, emoji
//! and action, who talks with whom, the trail each walked over the last simulated minute,
//! the latest line of each conversation under way, and the objects not at rest. The town
//! comes folded; only trails and lines are read from events, a few at a time.

use std::collections::BTreeMap;

use hamlet_log::event::AgentId;
use hamlet_log::{Body, BranchId};
use serde::Serialize;

use super::timeline::Scan;
use super::{decode_if, kinds};
use crate::describe::{printable, sim_time};
use crate::fold::Town;
use crate::log::{Log, LogError};

/// How far back a trail reaches, in simulated seconds.
pub const TRAIL_SECS: u64 = 60;
/// The most events read after a conversation's start to find its latest line.
pub const LINES_READ: u64 = 4096;

/// The town at a moment, for the map.
#[derive(Clone, Debug, Serialize)]
pub struct Frame {
    /// The last event folded.
    pub seq: u64,
    /// Its simulated time.
    pub secs: u64,
    /// The same in words.
    pub time: String,
    /// Clock steps taken.
    pub step: u64,
    /// Every agent, in id order.
    pub agents: Vec<AgentMark>,
    /// The latest line of each conversation under way.
    pub bubbles: Vec<Bubble>,
    /// Objects not at rest: address → state.
    pub objects: BTreeMap<String, String>,
}

/// An agent on the map.
#[derive(Clone, Debug, Serialize)]
pub struct AgentMark {
    /// Its number.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Up to two initials.
    pub initials: String,
    /// Where it stands, `[x, y]`.
    pub tile: [u16; 2],
    /// Its action's emoji (empty when none was recorded).
    pub emoji: String,
    /// What it is doing, in words (empty when idle).
    pub action: String,
    /// Where it does it.
    pub address: String,
    /// Whom it is talking with.
    pub talking_with: Vec<String>,
    /// The tiles it stood on over the last [`TRAIL_SECS`], oldest first, ending where it
    /// stands (empty when it did not move).
    pub trail: Vec<[u16; 2]>,
    /// Cash, in cents.
    pub cash_cents: i64,
}

/// A line spoken in a conversation under way.
#[derive(Clone, Debug, Serialize)]
pub struct Bubble {
    /// Who said it.
    pub speaker: String,
    /// What.
    pub text: String,
    /// Where the speaker stands.
    pub tile: [u16; 2],
}

/// Up to two initials of a name: "Delphine Ashcombe" → "DA".
pub fn initials(name: &str) -> String {
    name.split_whitespace()
        .filter_map(|w| w.chars().next())
        .take(2)
        .flat_map(char::to_uppercase)
        .collect()
}

impl Frame {
    /// The frame of `town` (folded on `branch` of `source`), with its trails and lines read
    /// from the log; `scan` is the branch's [`Scan`].
    pub fn of(
        source: &dyn Log,
        branch: BranchId,
        town: &Town,
        scan: &Scan,
    ) -> Result<Frame, LogError> {
        let seq = town.head.map_or(0, |(s, _)| s);
        let secs = town.sim_time_secs;
        let name = |a: &AgentId| {
            town.agents.get(a).map_or_else(|| format!("agent {}", a.0), |x| printable(&x.name))
        };

        // Trails: the moves of the last simulated minute.
        let from = source
            .seq_at_time(branch, secs.saturating_sub(TRAIL_SECS))?
            .map_or(scan.first_seq, |s| s + 1)
            .min(seq);
        let mut trails: BTreeMap<AgentId, Vec<[u16; 2]>> = BTreeMap::new();
        source.for_each_stored(branch, from, seq, &mut |b, stored| {
            if let Some(Body::Moved(m)) = decode_if(b, stored, &[kinds::MOVED]).map(|e| e.body) {
                let trail = trails.entry(m.agent).or_default();
                if trail.is_empty() {
                    trail.push([m.from.x, m.from.y]);
                }
                trail.push([m.to.x, m.to.y]);
            }
            true
        })?;

        // Bubbles: the latest line of each conversation under way.
        let mut bubbles = Vec::new();
        for id in town.conversations.keys() {
            let Some(&start) = scan.conversations.get(id) else { continue };
            let mut last = None;
            source.for_each_stored(
                branch,
                start,
                seq.min(start.saturating_add(LINES_READ)),
                &mut |b, stored| {
                    if let Some(Body::DialogueTurn(t)) =
                        decode_if(b, stored, &[kinds::DIALOGUE_TURN]).map(|e| e.body)
                    {
                        if t.conversation == *id {
                            last = Some(t);
                        }
                    }
                    true
                },
            )?;
            if let Some(t) = last {
                let tile = town.agents.get(&t.speaker).map_or([0, 0], |a| [a.tile.x, a.tile.y]);
                bubbles.push(Bubble { speaker: name(&t.speaker), text: printable(&t.text), tile });
            }
        }

        let agents = town
            .agents
            .iter()
            .map(|(id, a)| {
                let talking_with = a
                    .conversation
                    .and_then(|c| town.conversations.get(&c))
                    .map(|c| c.agents.iter().filter(|o| *o != id).map(&name).collect())
                    .unwrap_or_default();
                let (emoji, action, address) =
                    a.action.as_ref().map_or_else(Default::default, |x| {
                        (printable(&x.emoji), printable(&x.description), printable(&x.address))
                    });
                AgentMark {
                    id: id.0,
                    name: printable(&a.name),
                    initials: initials(&printable(&a.name)),
                    tile: [a.tile.x, a.tile.y],
                    emoji,
                    action,
                    address,
                    talking_with,
                    trail: trails.remove(id).unwrap_or_default(),
                    cash_cents: a.cash_cents,
                }
            })
            .collect();
        Ok(Frame {
            seq,
            secs,
            time: sim_time(secs),
            step: town.step,
            agents,
            bubbles,
            objects: town.objects.iter().map(|(k, v)| (printable(k), printable(v))).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::initials;

    #[test]
    fn initials_are_the_first_letters_of_two_words() {
        assert_eq!(initials("Delphine Ashcombe"), "DA");
        assert_eq!(initials("juniper quill the third"), "JQ");
        assert_eq!(initials("Ølse"), "Ø");
        assert_eq!(initials(""), "");
    }
}
