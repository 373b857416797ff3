//! Two branches side by side: where they part (the last event they share) and, for each
//! agent, how its time since then differs — actions, places, conversations, memories,
//! cash. Answered from the events alone, like every query.

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::event::AgentId;
use hamlet_log::{Body, Event};
use serde::{Deserialize, Serialize};

use crate::describe::{cents, clock, sim_time};
use crate::query::memory_kind;

/// How two branches differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BranchDiff {
    /// The first branch's name.
    pub a: String,
    /// The second's.
    pub b: String,
    /// Events both hold (they share seqs `0..shared`).
    pub shared: u64,
    /// The simulated time of the last shared event.
    pub parted_secs: Option<u64>,
    /// Events the first holds past the shared ones.
    pub a_after: u64,
    /// Events the second holds past the shared ones.
    pub b_after: u64,
    /// Every agent of either branch, by name.
    pub agents: Vec<AgentDiff>,
}

/// One agent on both branches since they parted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentDiff {
    /// Its name.
    pub name: String,
    /// On the first branch.
    pub a: AgentSince,
    /// On the second.
    pub b: AgentSince,
    /// When its days first differ: the earliest action or conversation one branch has and
    /// the other has not at that point (`None`: the same actions and conversations on both;
    /// its memories or cash may still differ, which [`AgentDiff::same`] says).
    #[serde(default)]
    pub first_secs: Option<u64>,
}

/// The earliest time two lists of timed things part: the first position where they hold
/// different things (or one has ended), at the earlier of the two times there.
fn first_parting<T: PartialEq>(a: &[(u64, T)], b: &[(u64, T)]) -> Option<u64> {
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(i), b.get(i)) {
        (None, None) => None,
        (Some(x), None) => Some(x.0),
        (None, Some(y)) => Some(y.0),
        (Some(x), Some(y)) => Some(x.0.min(y.0)),
    }
}

impl AgentDiff {
    fn first_secs(a: &AgentSince, b: &AgentSince, parted: Option<u64>) -> Option<u64> {
        if a.present != b.present {
            return parted.or(Some(0));
        }
        let actions = |s: &AgentSince| -> Vec<(u64, (String, String))> {
            s.actions.iter().map(|x| (x.0, (x.2.clone(), x.3.clone()))).collect()
        };
        let talks = |s: &AgentSince| -> Vec<(u64, (Vec<String>, u32))> {
            s.conversations.iter().map(|c| (c.0, (c.1.clone(), c.2))).collect()
        };
        [first_parting(&actions(a), &actions(b)), first_parting(&talks(a), &talks(b))]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the agent did, said and remembered the same on both.
    pub fn same(&self) -> bool {
        self.a == self.b
    }
}

/// What one agent did on one branch after the branches parted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentSince {
    /// Whether it is on this branch at all.
    pub present: bool,
    /// Its actions: (start, emoji, description, address).
    pub actions: Vec<(u64, String, String, String)>,
    /// The sectors it was in, in the order it entered them.
    pub places: Vec<String>,
    /// Its conversations: (start, the others' names, lines said in it by anyone).
    pub conversations: Vec<(u64, Vec<String>, u32)>,
    /// Memories added, by kind.
    pub memories: BTreeMap<String, u32>,
    /// Cash at the branch's end, in cents.
    pub cash_cents: i64,
}

fn names(events: &[Event]) -> BTreeMap<AgentId, String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            Body::AgentJoined(j) => Some((j.agent, j.name.clone())),
            _ => None,
        })
        .collect()
}

/// Each agent's time on a branch from event index `from` on.
fn since(events: &[Event], from: usize) -> BTreeMap<String, AgentSince> {
    let names = names(events);
    let name = |a: AgentId| names.get(&a).cloned().unwrap_or_else(|| format!("agent {}", a.0));
    let town = crate::fold::fold(events);
    let mut out: BTreeMap<String, AgentSince> = BTreeMap::new();
    for (id, n) in &names {
        let entry = out.entry(n.clone()).or_default();
        entry.present = true;
        entry.cash_cents = town.agents.get(id).map_or(0, |a| a.cash_cents);
    }
    let mut talking: BTreeMap<hamlet_log::EventId, Vec<AgentId>> = BTreeMap::new();
    for e in events.get(from..).unwrap_or_default() {
        match &e.body {
            Body::ActionStarted(a) => {
                let who = out.entry(name(a.agent)).or_default();
                who.actions.push((
                    e.sim_time_secs(),
                    a.emoji.clone(),
                    a.description.clone(),
                    a.address.clone(),
                ));
                let sector = a.address.split(':').next().unwrap_or_default().to_owned();
                if !sector.is_empty() && who.places.last() != Some(&sector) {
                    who.places.push(sector);
                }
            }
            Body::ConversationStarted(c) => {
                for agent in &c.agents {
                    let others = c.agents.iter().filter(|o| *o != agent).map(|o| name(*o));
                    let record = (e.sim_time_secs(), others.collect(), 0);
                    out.entry(name(*agent)).or_default().conversations.push(record);
                }
                talking.insert(e.id, c.agents.clone());
            }
            Body::DialogueTurn(t) if !t.text.trim().is_empty() => {
                if let Some(agents) = talking.get(&t.conversation) {
                    for agent in agents {
                        let who = out.entry(name(*agent)).or_default();
                        // An agent is in one conversation at a time: its latest.
                        if let Some(c) = who.conversations.last_mut() {
                            c.2 += 1;
                        }
                    }
                }
            }
            Body::MemoryAdded(m) => {
                let who = out.entry(name(m.agent)).or_default();
                *who.memories.entry(memory_kind(m.kind)).or_default() += 1;
            }
            _ => {}
        }
    }
    out
}

/// How branch `a` (its events with ancestry, in order) and branch `b` differ.
pub fn diff(a_name: &str, a: &[Event], b_name: &str, b: &[Event]) -> BranchDiff {
    let shared = a.iter().zip(b).take_while(|(x, y)| x.id == y.id).count();
    let parted_secs = shared.checked_sub(1).and_then(|i| a.get(i)).map(Event::sim_time_secs);
    let (mut on_a, mut on_b) = (since(a, shared), since(b, shared));
    let everyone: BTreeSet<String> = on_a.keys().chain(on_b.keys()).cloned().collect();
    let agents = everyone
        .into_iter()
        .map(|name| {
            let (on_a, on_b) =
                (on_a.remove(&name).unwrap_or_default(), on_b.remove(&name).unwrap_or_default());
            let first_secs = AgentDiff::first_secs(&on_a, &on_b, parted_secs);
            AgentDiff { a: on_a, b: on_b, first_secs, name }
        })
        .collect();
    BranchDiff {
        a: a_name.to_owned(),
        b: b_name.to_owned(),
        shared: shared as u64,
        parted_secs,
        a_after: (a.len() - shared) as u64,
        b_after: (b.len() - shared) as u64,
        agents,
    }
}

impl BranchDiff {
    /// The difference in words: where the branches part, then each agent whose time
    /// differs (actions only one branch has, places, conversations, memories, cash);
    /// `all` lists the agents that did the same too.
    pub fn text(&self, all: bool) -> String {
        let mut out = String::new();
        let parted = match self.parted_secs {
            Some(t) => {
                format!("share #0 to #{} (to {})", self.shared.saturating_sub(1), sim_time(t))
            }
            None => "share nothing".to_owned(),
        };
        out.push_str(&format!(
            "`{}` and `{}` {parted}; then `{}` has {} events and `{}` {}.\n",
            self.a, self.b, self.a, self.a_after, self.b, self.b_after
        ));
        let differ = self.agents.iter().filter(|d| !d.same()).count();
        out.push_str(&format!("{differ} of {} agents differ since.\n", self.agents.len()));
        for d in &self.agents {
            if d.same() && !all {
                continue;
            }
            out.push_str(&format!("\n{}{}\n", d.name, if d.same() { " (the same)" } else { "" }));
            if d.a.present != d.b.present {
                let on = if d.a.present { &self.a } else { &self.b };
                out.push_str(&format!("  only on `{on}`\n"));
            }
            let key = |x: &(u64, String, String, String)| (x.0, x.2.clone());
            let a_keys: BTreeSet<_> = d.a.actions.iter().map(key).collect();
            let b_keys: BTreeSet<_> = d.b.actions.iter().map(key).collect();
            out.push_str(&format!(
                "  actions        {:>4} on `{}`, {:>4} on `{}`\n",
                d.a.actions.len(),
                self.a,
                d.b.actions.len(),
                self.b
            ));
            for (side, actions, other) in
                [(&self.a, &d.a.actions, &b_keys), (&self.b, &d.b.actions, &a_keys)]
            {
                let only: Vec<_> = actions.iter().filter(|x| !other.contains(&key(x))).collect();
                for x in only.iter().take(8) {
                    out.push_str(&format!(
                        "    only `{side}`: {} {} {} @ {}\n",
                        clock(x.0),
                        x.1,
                        x.2,
                        x.3
                    ));
                }
                if only.len() > 8 {
                    out.push_str(&format!("    only `{side}`: … {} more\n", only.len() - 8));
                }
            }
            if d.a.places != d.b.places {
                out.push_str(&format!("  places on `{}`: {}\n", self.a, d.a.places.join(" → ")));
                out.push_str(&format!("  places on `{}`: {}\n", self.b, d.b.places.join(" → ")));
            }
            if d.a.conversations != d.b.conversations {
                for (side, talks) in [(&self.a, &d.a.conversations), (&self.b, &d.b.conversations)]
                {
                    let said: Vec<String> = talks
                        .iter()
                        .map(|(t, with, n)| {
                            format!("{} with {} ({n} lines)", clock(*t), with.join(", "))
                        })
                        .collect();
                    let said = if said.is_empty() { "none".to_owned() } else { said.join("; ") };
                    out.push_str(&format!("  talks on `{side}`: {said}\n"));
                }
            }
            if d.a.memories != d.b.memories {
                for (side, m) in [(&self.a, &d.a.memories), (&self.b, &d.b.memories)] {
                    let total: u32 = m.values().sum();
                    let kinds: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
                    let kinds = if kinds.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", kinds.join(", "))
                    };
                    out.push_str(&format!("  memories on `{side}`: +{total}{kinds}\n"));
                }
            }
            if d.a.cash_cents != d.b.cash_cents {
                out.push_str(&format!(
                    "  cash           {} on `{}`, {} on `{}`\n",
                    cents(d.a.cash_cents),
                    self.a,
                    cents(d.b.cash_cents),
                    self.b
                ));
            }
        }
        out
    }
}
