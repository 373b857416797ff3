//! Tracks: everything the map draws, as it changes along a branch — each agent's name,
//! tiles, action, conversation and cash, every conversation with its lines, the objects'
//! states and the clock — in one compact answer the page keeps. With it a scrub draws the
//! town at once, from the page's own memory, without asking the engine: what makes
//! dragging the scrubber immediate on a recording of any length.
//!
//! Tracks are made by one fold of the branch, noting after each event what changed of
//! what the map draws. [`Tracks::frame`] rebuilds from them the frame `Viewer::frame`
//! answers from the fold — a test holds the two equal at every moment of the shipped
//! recording and of a synthetic one — and `viewer/tracks.js` does the same in the page
//! (the end-to-end tests hold the page's equal to the engine's).
//!
//! Lists are flat arrays of numbers, a fixed number per entry, in seq order; text is a
//! number into `strings`. That keeps a million-event recording's tracks a few megabytes
//! of JSON.

use std::collections::BTreeMap;

use hamlet_log::event::{kind_by_name, AgentId, Body};
use hamlet_log::{BranchId, EventId};
use serde::Serialize;

use super::frame::{initials, AgentMark, Bubble, Frame, LINES_READ, TRAIL_SECS};
use super::{decode_if, kinds};
use crate::describe::{printable, sim_time};
use crate::fold::Town;
use crate::log::{Log, LogError};

/// The map's changes along a branch. Each list's entries are a fixed number of numbers,
/// oldest first; "seq" is the event after which the entry holds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tracks {
    /// The branch's first seq (a frame before it shows it).
    pub first_seq: u64,
    /// Its last.
    pub head_seq: u64,
    /// How far back a trail reaches, in simulated seconds.
    pub trail_secs: u64,
    /// The most events after a conversation's start that its latest line is looked for in.
    pub lines_read: u64,
    /// Every text the tracks name, each once.
    pub strings: Vec<String>,
    /// `[seq, secs, step]` whenever the time or the step changed.
    pub clock: Vec<u64>,
    /// Every agent that joined, in id order.
    pub agents: Vec<AgentTrack>,
    /// Every conversation, in the order the fold keeps them (by id).
    pub conversations: Vec<ConversationTrack>,
    /// Every object whose state ever changed, by address.
    pub objects: Vec<ObjectTrack>,
}

/// One agent's changes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AgentTrack {
    /// Its number.
    pub id: u32,
    /// `[seq, name, initials]` (strings): the first entry is when it joined.
    pub names: Vec<u64>,
    /// `[seq, x, y]` where it stands after each event that moved it; an entry whose seq is
    /// written `-seq - 1` is a tile it stood on without walking there (where it joined, or
    /// where a move said it came from when that was not the last tile noted). A trail
    /// starts at the entry just before its first move.
    pub tiles: Vec<i64>,
    /// `[seq, emoji, description, address]` (strings) when it starts an action.
    pub actions: Vec<u64>,
    /// `[seq, conversation]`: the index into `conversations` of the one it is in, or -1.
    pub talk: Vec<i64>,
    /// `[seq, cents]`.
    pub cash: Vec<i64>,
}

/// One conversation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConversationTrack {
    /// Its `ConversationStarted` event.
    pub start: u64,
    /// The event that ended it (it is under way up to the event before).
    pub end: Option<u64>,
    /// Who talks, by number.
    pub agents: Vec<u32>,
    /// `[seq, speaker, text]` (speaker by number, text a string).
    pub turns: Vec<u64>,
}

/// One object's states.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObjectTrack {
    /// Its address.
    pub address: String,
    /// `[seq, state]`: a string, or -1 at rest.
    pub states: Vec<i64>,
}

/// What the last entries say of an agent, to notice a change.
#[derive(Default)]
struct Noted {
    name: Option<String>,
    tile: Option<(u16, u16)>,
    action: Option<EventId>,
    conversation: Option<EventId>,
    cash: Option<i64>,
}

/// The tracks as they are made: keyed by the ids the fold keys by.
struct Builder {
    strings: Vec<String>,
    words: BTreeMap<String, u64>,
    clock: Vec<u64>,
    last_clock: Option<(u64, u64)>,
    noted: BTreeMap<AgentId, Noted>,
    agents: BTreeMap<AgentId, AgentTrack>,
    /// Each agent's `talk` entries by conversation id (made indexes at the end).
    talk: BTreeMap<AgentId, Vec<Option<EventId>>>,
    conversations: BTreeMap<EventId, ConversationTrack>,
    /// Each object's last state noted (`None` at rest) and its entries.
    objects: BTreeMap<String, (Option<String>, Vec<i64>)>,
}

/// A seq as the first number of a `tiles` entry for a tile not walked to.
fn not_walked(seq: u64) -> i64 {
    -(seq as i64) - 1
}

impl Builder {
    fn word(&mut self, text: &str) -> u64 {
        let text = printable(text);
        if let Some(&i) = self.words.get(&text) {
            return i;
        }
        let i = self.strings.len() as u64;
        self.strings.push(text.clone());
        self.words.insert(text, i);
        i
    }

    fn track(&mut self, id: AgentId) -> &mut AgentTrack {
        self.agents.entry(id).or_insert_with(|| AgentTrack { id: id.0, ..AgentTrack::default() })
    }

    fn clock(&mut self, town: &Town, seq: u64) {
        let now = (town.sim_time_secs, town.step);
        if self.last_clock != Some(now) {
            self.last_clock = Some(now);
            self.clock.extend([seq, now.0, now.1]);
        }
    }

    /// Notes what changed of one agent after the event at `seq`.
    fn agent(&mut self, town: &Town, id: AgentId, seq: u64) {
        let Some(a) = town.agents.get(&id) else { return };
        let noted = self.noted.entry(id).or_default();
        let tile = (a.tile.x, a.tile.y);
        let action = a.action.as_ref().map(|x| x.event);
        let name_changed = noted.name.as_deref() != Some(a.name.as_str());
        let tile_changed = noted.tile != Some(tile);
        let action_changed = noted.action != action;
        let talk_changed = noted.conversation != a.conversation;
        let cash_changed = noted.cash != Some(a.cash_cents);
        *noted = Noted {
            name: Some(a.name.clone()),
            tile: Some(tile),
            action,
            conversation: a.conversation,
            cash: Some(a.cash_cents),
        };
        if name_changed {
            let shown = printable(&a.name);
            let (name, initials) = (self.word(&shown), self.word(&initials(&shown)));
            self.track(id).names.extend([seq, name, initials]);
        }
        if tile_changed {
            self.track(id).tiles.extend([not_walked(seq), tile.0.into(), tile.1.into()]);
        }
        if let (true, Some(x)) = (action_changed, &a.action) {
            let entry =
                [seq, self.word(&x.emoji), self.word(&x.description), self.word(&x.address)];
            self.track(id).actions.extend(entry);
        }
        if talk_changed {
            // Pointed at its conversation's index at the end, once they are all known.
            self.track(id).talk.extend([seq as i64, -1]);
            self.talk.entry(id).or_default().push(a.conversation);
        }
        if cash_changed {
            self.track(id).cash.extend([seq as i64, a.cash_cents]);
        }
    }

    /// Notes a move: the tile it came from when that is not the last tile noted, then the
    /// tile it walked to.
    fn moved(&mut self, town: &Town, id: AgentId, from: (u16, u16), seq: u64) {
        let Some(a) = town.agents.get(&id) else { return };
        let to = (a.tile.x, a.tile.y);
        let noted = self.noted.entry(id).or_default();
        let elsewhere = noted.tile != Some(from);
        noted.tile = Some(to);
        let track = self.track(id);
        if elsewhere {
            track.tiles.extend([not_walked(seq), from.0.into(), from.1.into()]);
        }
        track.tiles.extend([seq as i64, to.0.into(), to.1.into()]);
    }

    /// Notes a line said in a conversation the fold keeps.
    fn turn(&mut self, conversation: EventId, speaker: AgentId, text: &str, seq: u64) {
        if !self.conversations.contains_key(&conversation) {
            return;
        }
        let text = self.word(text);
        if let Some(c) = self.conversations.get_mut(&conversation) {
            c.turns.extend([seq, u64::from(speaker.0), text]);
        }
    }

    fn conversations(&mut self, town: &Town, seq: u64) {
        for (id, c) in &town.conversations {
            self.conversations.entry(*id).or_insert_with(|| ConversationTrack {
                start: seq,
                end: None,
                agents: c.agents.iter().map(|a| a.0).collect(),
                turns: Vec::new(),
            });
        }
        for (id, c) in &mut self.conversations {
            if c.end.is_none() && !town.conversations.contains_key(id) {
                c.end = Some(seq);
            }
        }
    }

    fn objects(&mut self, town: &Town, seq: u64) {
        let mut changed: Vec<(String, Option<String>)> = Vec::new();
        for (address, state) in &town.objects {
            let last = self.objects.get(address).and_then(|(s, _)| s.as_ref());
            if last != Some(state) {
                changed.push((address.clone(), Some(state.clone())));
            }
        }
        for (address, (state, _)) in &self.objects {
            if state.is_some() && !town.objects.contains_key(address) {
                changed.push((address.clone(), None));
            }
        }
        for (address, state) in changed {
            let word = state.as_deref().map_or(-1, |s| self.word(s) as i64);
            let entry = self.objects.entry(address).or_default();
            entry.0 = state;
            entry.1.extend([seq as i64, word]);
        }
    }
}

/// Kinds whose events change nothing the map draws of agents, conversations or objects
/// (a move and a line said are noted on their own).
fn quiet_kinds() -> [bool; 64] {
    let mut quiet = [false; 64];
    for name in [
        "BranchCreated",
        "RunConfigured",
        "TownLoaded",
        "ClockStepped",
        "Perceived",
        "MemoryAdded",
        "Retrieved",
        "LlmRequested",
        "LlmResponded",
        "LlmFailed",
        "EmbeddingRequested",
        "EmbeddingReturned",
        "PlanMade",
        "DialogueTurn",
        "ReflectionStarted",
        "InterviewAnswered",
        "SeedDrawn",
        "BranchRenamed",
        "CommitmentMade",
    ] {
        let tag = kind_by_name(name).map(usize::from);
        if let Some(q) = tag.and_then(|t| quiet.get_mut(t)) {
            *q = true;
        }
    }
    quiet
}

impl Tracks {
    /// The tracks of a branch: one fold of its events up to `head_seq`.
    pub fn of(
        source: &dyn Log,
        branch: BranchId,
        first_seq: u64,
        head_seq: u64,
    ) -> Result<Tracks, LogError> {
        let quiet = quiet_kinds();
        let mut b = Builder {
            strings: Vec::new(),
            words: BTreeMap::new(),
            clock: Vec::new(),
            last_clock: None,
            noted: BTreeMap::new(),
            agents: BTreeMap::new(),
            talk: BTreeMap::new(),
            conversations: BTreeMap::new(),
            objects: BTreeMap::new(),
        };
        let mut town = Town::default();
        source.for_each_stored(branch, 0, head_seq, &mut |bid, stored| {
            let seq = stored.header.seq;
            let body =
                decode_if(bid, stored, &[kinds::MOVED, kinds::DIALOGUE_TURN]).map(|e| e.body);
            town.apply_stored(stored);
            b.clock(&town, seq);
            match body {
                Some(Body::Moved(m)) => b.moved(&town, m.agent, (m.from.x, m.from.y), seq),
                Some(Body::DialogueTurn(t)) => b.turn(t.conversation, t.speaker, &t.text, seq),
                _ if quiet.get(usize::from(stored.kind)).copied().unwrap_or(false) => {}
                _ => {
                    b.conversations(&town, seq);
                    let ids: Vec<AgentId> = town.agents.keys().copied().collect();
                    for id in ids {
                        b.agent(&town, id, seq);
                    }
                    b.objects(&town, seq);
                }
            }
            true
        })?;

        // Conversations in the fold's order (by id); agents' entries point at them.
        let index: BTreeMap<EventId, i64> =
            b.conversations.keys().enumerate().map(|(i, id)| (*id, i as i64)).collect();
        let mut agents = Vec::with_capacity(b.agents.len());
        for (id, mut track) in b.agents {
            let ids = b.talk.remove(&id).unwrap_or_default();
            for (entry, c) in track.talk.chunks_exact_mut(2).zip(ids) {
                entry[1] = c.and_then(|c| index.get(&c).copied()).unwrap_or(-1);
            }
            agents.push(track);
        }
        Ok(Tracks {
            first_seq,
            head_seq,
            trail_secs: TRAIL_SECS,
            lines_read: LINES_READ,
            strings: b.strings,
            clock: b.clock,
            agents,
            conversations: b.conversations.into_values().collect(),
            objects: b
                .objects
                .into_iter()
                .map(|(address, (_, states))| ObjectTrack { address: printable(&address), states })
                .collect(),
        })
    }

    fn text(&self, i: u64) -> String {
        usize::try_from(i).ok().and_then(|i| self.strings.get(i)).cloned().unwrap_or_default()
    }

    /// The seq a simulated time falls on (the last event at or before it), as
    /// `Viewer::seq_at` answers.
    pub fn seq_at(&self, secs: u64) -> u64 {
        self.seq_at_time(secs).unwrap_or(self.first_seq).max(self.first_seq)
    }

    /// The last event at or before `secs`; `None` before the first.
    fn seq_at_time(&self, secs: u64) -> Option<u64> {
        let n = self.clock.len() / 3;
        let k = split(n, |i| entry(&self.clock, 3, i).get(1).is_none_or(|&t| t > secs));
        if k == 0 {
            return None;
        }
        Some(if k < n {
            entry(&self.clock, 3, k).first().map_or(self.head_seq, |s| s.saturating_sub(1))
        } else {
            self.head_seq
        })
    }

    /// The town at `seq` as the map draws it: what `Viewer::frame` answers.
    pub fn frame(&self, seq: u64) -> Frame {
        let seq = seq.clamp(self.first_seq, self.head_seq);
        let (secs, step) = last_at(&self.clock, 3, seq).map_or((0, 0), |e| (e[1], e[2]));
        let from = self
            .seq_at_time(secs.saturating_sub(self.trail_secs))
            .map_or(self.first_seq, |s| s + 1)
            .min(seq);
        let name_of = |id: u32| {
            self.agents
                .iter()
                .find(|a| a.id == id)
                .and_then(|a| last_at(&a.names, 3, seq))
                .map_or_else(|| format!("agent {id}"), |e| self.text(e[1]))
        };
        let tile_of = |id: u32| {
            self.agents
                .iter()
                .find(|a| a.id == id)
                .and_then(|a| tile_at(&a.tiles, seq))
                .unwrap_or([0, 0])
        };
        let under_way = |c: &ConversationTrack| c.start <= seq && c.end.is_none_or(|e| seq < e);

        let mut agents = Vec::new();
        for a in &self.agents {
            let Some(names) = last_at(&a.names, 3, seq) else { continue };
            let name = self.text(names[1]);
            let (emoji, action, address) = last_at(&a.actions, 4, seq)
                .map_or_else(Default::default, |e| {
                    (self.text(e[1]), self.text(e[2]), self.text(e[3]))
                });
            let talking_with = last_at_signed(&a.talk, 2, seq)
                .and_then(|e| usize::try_from(e[1]).ok())
                .and_then(|i| self.conversations.get(i))
                .filter(|c| under_way(c))
                .map(|c| c.agents.iter().filter(|o| **o != a.id).map(|o| name_of(*o)).collect())
                .unwrap_or_default();
            agents.push(AgentMark {
                id: a.id,
                initials: self.text(names[2]),
                name,
                tile: tile_at(&a.tiles, seq).unwrap_or([0, 0]),
                emoji,
                action,
                address,
                talking_with,
                trail: trail(&a.tiles, from, seq),
                cash_cents: last_at_signed(&a.cash, 2, seq).map_or(0, |e| e[1]),
            });
        }

        let mut bubbles = Vec::new();
        for c in self.conversations.iter().filter(|c| under_way(c)) {
            let until = seq.min(c.start.saturating_add(self.lines_read));
            if let Some(t) = last_at(&c.turns, 3, until) {
                let speaker = u32::try_from(t[1]).unwrap_or(u32::MAX);
                bubbles.push(Bubble {
                    speaker: name_of(speaker),
                    text: self.text(t[2]),
                    tile: tile_of(speaker),
                });
            }
        }

        let objects = self
            .objects
            .iter()
            .filter_map(|o| {
                let state = last_at_signed(&o.states, 2, seq)?[1];
                Some((o.address.clone(), self.text(u64::try_from(state).ok()?)))
            })
            .collect();
        Frame { seq, secs, time: sim_time(secs), step, agents, bubbles, objects }
    }
}

/// How many of the `n` entries come before the first for which `after` holds (`after`
/// holds from some entry on).
fn split(n: usize, after: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if after(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Entry `i` of a flat list of `width`-number entries.
fn entry<T>(flat: &[T], width: usize, i: usize) -> &[T] {
    flat.get(i * width..(i + 1) * width).unwrap_or(&[])
}

/// The last entry of `width` numbers whose seq (its first number, through `key`) is at
/// most `seq`.
fn last_by<T: Copy>(flat: &[T], width: usize, seq: u64, key: impl Fn(T) -> u64) -> Option<&[T]> {
    let n = flat.len() / width;
    let k = split(n, |i| entry(flat, width, i).first().is_none_or(|&s| key(s) > seq));
    k.checked_sub(1).map(|k| entry(flat, width, k)).filter(|e| e.len() == width)
}

fn last_at(flat: &[u64], width: usize, seq: u64) -> Option<&[u64]> {
    last_by(flat, width, seq, |s| s)
}

/// The same for entries whose seq is signed (never negative there).
fn last_at_signed(flat: &[i64], width: usize, seq: u64) -> Option<&[i64]> {
    last_by(flat, width, seq, |s| u64::try_from(s).unwrap_or(0))
}

/// A `tiles` entry's seq, walked there or not.
fn tile_seq(s: i64) -> u64 {
    if s < 0 {
        (-(s + 1)) as u64
    } else {
        s as u64
    }
}

fn xy(e: &[i64]) -> [u16; 2] {
    let at = |i: usize| e.get(i).and_then(|&v| u16::try_from(v).ok()).unwrap_or(0);
    [at(1), at(2)]
}

/// Where an agent stands at `seq`.
fn tile_at(tiles: &[i64], seq: u64) -> Option<[u16; 2]> {
    last_by(tiles, 3, seq, tile_seq).map(xy)
}

/// The tiles walked over in `from..=seq`: the tile before the first move, then each tile
/// walked to.
fn trail(tiles: &[i64], from: u64, seq: u64) -> Vec<[u16; 2]> {
    let n = tiles.len() / 3;
    let at = |i: usize| entry(tiles, 3, i);
    let lo = split(n, |i| at(i).first().is_none_or(|&s| tile_seq(s) >= from));
    let hi = split(n, |i| at(i).first().is_none_or(|&s| tile_seq(s) > seq));
    let Some(first) = (lo..hi).find(|&i| at(i).first().is_some_and(|&s| s >= 0)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(before) = first.checked_sub(1) {
        out.push(xy(at(before)));
    }
    out.extend((first..hi).map(at).filter(|e| e.first().is_some_and(|&s| s >= 0)).map(xy));
    out
}
