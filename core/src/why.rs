//! "Why?": for an agent at a moment, the causal graph behind what it is doing — from the
//! action back through its plans, the model calls that made them (prompt and answer), the
//! retrievals that fed those prompts (each recalled memory with its recency, importance and
//! relevance), the memories' own origins (observations, reflections and their evidence,
//! conversations). Built from the events' recorded causes alone: no model is asked, nothing
//! is recomputed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use hamlet_log::event::{kind_name, AgentId, Prompt};
use hamlet_log::{Body, Event, EventId};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use serde::Serialize;

use crate::describe::{printable, sim_time, summary};

/// One event in a "why?" graph.
#[derive(Clone, Debug, Serialize)]
pub struct WhyNode {
    /// The event's id, as shown (`ev_` and 12 hex digits).
    pub id: String,
    /// The event's id.
    #[serde(skip)]
    pub event: EventId,
    /// Its position on the branch.
    pub seq: u64,
    /// Its simulated time, `day D HH:MM:SS`.
    pub time: String,
    /// Its kind (`ActionStarted`, `LlmRequested`, …).
    pub kind: String,
    /// One line saying what happened.
    pub summary: String,
    /// The full text behind it, when there is one: a prompt, a model's answer, a memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How one event led to another.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "link", rename_all = "snake_case")]
pub enum WhyLink {
    /// The later event names the earlier one among its causes.
    Cause,
    /// A retrieval returned this memory, with these scores (each normalised to 0–1, and the
    /// weighted sum that ranked it).
    Recalled {
        /// Recency.
        recency: f32,
        /// Importance.
        importance: f32,
        /// Relevance.
        relevance: f32,
        /// The weighted sum.
        score: f32,
    },
    /// A reflection cites this memory as evidence.
    Evidence,
}

/// The causal graph of one agent's action: edges run from an event to what led to it.
#[derive(Debug)]
pub struct Why {
    /// The graph.
    pub graph: DiGraph<WhyNode, WhyLink>,
    /// The action asked about.
    pub root: NodeIndex,
    /// True when the walk stopped at `max_nodes` with causes still unexplored.
    pub truncated: bool,
}

/// Why could not be answered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WhyError {
    /// The agent had not acted yet at that moment.
    #[error("{0} has done nothing yet at that moment")]
    NoAction(String),
}

/// The events of a branch up to a moment, with what the "why?" walk needs to look them up.
pub struct CauseIndex<'a> {
    events: &'a [Event],
    by_id: BTreeMap<EventId, usize>,
    names: BTreeMap<AgentId, String>,
}

impl<'a> CauseIndex<'a> {
    /// Indexes `events` (a branch's, with its ancestry, in order, up to the moment asked).
    pub fn new(events: &'a [Event]) -> CauseIndex<'a> {
        let mut by_id = BTreeMap::new();
        let mut names = BTreeMap::new();
        for (i, e) in events.iter().enumerate() {
            by_id.insert(e.id, i);
            if let Body::AgentJoined(j) = &e.body {
                names.insert(j.agent, j.name.clone());
            }
        }
        CauseIndex { events, by_id, names }
    }

    /// An agent's name (or `agent N`).
    pub fn name(&self, agent: AgentId) -> String {
        self.names.get(&agent).cloned().unwrap_or_else(|| format!("agent {}", agent.0))
    }

    /// The agents, by name.
    pub fn agents(&self) -> &BTreeMap<AgentId, String> {
        &self.names
    }

    /// The agent named `who` (any case) or numbered `who`.
    pub fn find_agent(&self, who: &str) -> Option<AgentId> {
        self.names
            .iter()
            .find(|(id, name)| name.eq_ignore_ascii_case(who) || id.0.to_string() == who)
            .map(|(id, _)| *id)
    }

    /// The action `agent` was carrying out after the last event at or before `seq`.
    pub fn action_at(&self, agent: AgentId, seq: u64) -> Option<&'a Event> {
        self.events
            .iter()
            .rev()
            .filter(|e| e.seq() <= seq)
            .find(|e| matches!(&e.body, Body::ActionStarted(a) if a.agent == agent))
    }

    fn node(&self, event: &Event) -> WhyNode {
        let name = |a: AgentId| self.name(a);
        let detail = match &event.body {
            Body::LlmRequested(r) => Some(match &r.prompt {
                Prompt::Chat(messages) => messages
                    .iter()
                    .map(|m| format!("[{}]\n{}", m.role, m.content))
                    .collect::<Vec<_>>()
                    .join("\n"),
                Prompt::Text(text) => text.clone(),
            }),
            Body::LlmResponded(r) => Some(r.text.clone()),
            Body::MemoryAdded(m) => Some(m.description.clone()),
            Body::DialogueTurn(t) => Some(t.text.clone()),
            _ => None,
        };
        WhyNode {
            id: event.id.to_string(),
            event: event.id,
            seq: event.seq(),
            time: sim_time(event.sim_time_secs()),
            kind: kind_name(event.body.kind()).to_owned(),
            summary: printable(&summary(&event.body, &name)),
            detail: detail.map(|d| printable_block(&d)),
        }
    }

    /// The causal graph behind `agent`'s action at `seq`: a breadth-first walk from the
    /// action over recorded causes, the memories each retrieval returned (with their scores)
    /// and each reflection's evidence, up to `max_nodes` events.
    pub fn why(&self, agent: AgentId, seq: u64, max_nodes: usize) -> Result<Why, WhyError> {
        let action =
            self.action_at(agent, seq).ok_or_else(|| WhyError::NoAction(self.name(agent)))?;
        Ok(self.why_of(action, max_nodes))
    }

    /// The causal graph behind any event (a plan, a memory, a line of dialogue, …), walked
    /// as [`CauseIndex::why`] walks it from an action.
    pub fn why_of(&self, start: &'a Event, max_nodes: usize) -> Why {
        let mut graph = DiGraph::new();
        let mut index: BTreeMap<EventId, NodeIndex> = BTreeMap::new();
        let root = graph.add_node(self.node(start));
        index.insert(start.id, root);
        let mut queue = VecDeque::from([start]);
        let mut truncated = false;
        // One edge per (effect, cause, kind of link): a hostile event repeating a cause a
        // million times adds one edge.
        let mut linked: BTreeSet<(NodeIndex, NodeIndex, u8)> = BTreeSet::new();
        while let Some(event) = queue.pop_front() {
            let from = index[&event.id];
            for (cause, link) in self.links(event) {
                let Some(&i) = self.by_id.get(&cause) else { continue };
                let to = match index.get(&cause) {
                    Some(&to) => to,
                    None if graph.node_count() >= max_nodes => {
                        truncated = true;
                        continue;
                    }
                    None => {
                        let e = &self.events[i];
                        let to = graph.add_node(self.node(e));
                        index.insert(cause, to);
                        queue.push_back(e);
                        to
                    }
                };
                let kind = match link {
                    WhyLink::Cause => 0,
                    WhyLink::Recalled { .. } => 1,
                    WhyLink::Evidence => 2,
                };
                if linked.insert((from, to, kind)) {
                    graph.add_edge(from, to, link);
                }
            }
        }
        Why { graph, root, truncated }
    }

    /// What led to `event`: its recorded causes, then what its body points at.
    fn links(&self, event: &Event) -> Vec<(EventId, WhyLink)> {
        let mut links: Vec<(EventId, WhyLink)> =
            event.header.causes.iter().map(|&c| (c, WhyLink::Cause)).collect();
        match &event.body {
            Body::Retrieved(r) => links.extend(r.hits.iter().map(|h| {
                let scores = WhyLink::Recalled {
                    recency: h.recency,
                    importance: h.importance,
                    relevance: h.relevance,
                    score: h.score,
                };
                (h.memory, scores)
            })),
            Body::MemoryAdded(m) => {
                links.extend(m.evidence.iter().map(|&e| (e, WhyLink::Evidence)));
            }
            _ => {}
        }
        links
    }
}

/// Text from a recording made safe to print: control characters other than newlines
/// become spaces.
fn printable_block(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' { ' ' } else { c }).collect()
}

impl Why {
    /// The longest chain of causes from the action (in events).
    pub fn depth(&self) -> usize {
        let mut best = BTreeMap::from([(self.root, 0usize)]);
        let mut queue = VecDeque::from([self.root]);
        // Recorded causes run back in time, but ids in a file nobody verified may form a
        // cycle: no chain is longer than the graph has nodes.
        let limit = self.graph.node_count();
        while let Some(n) = queue.pop_front() {
            let d = best[&n];
            if d + 1 >= limit {
                continue;
            }
            for next in self.graph.neighbors_directed(n, Direction::Outgoing) {
                if best.get(&next).is_none_or(|&b| b < d + 1) {
                    best.insert(next, d + 1);
                    queue.push_back(next);
                }
            }
        }
        best.values().copied().max().unwrap_or(0)
    }

    /// The graph as an indented tree, the action first and each cause under what it led
    /// to; an event met again is named and not expanded twice. With `details`, prompts,
    /// answers and memories are printed in full under their line.
    pub fn tree(&self, details: bool) -> String {
        let mut out = String::new();
        let mut shown = BTreeSet::new();
        // (node, depth, how it was reached)
        let mut stack = vec![(self.root, 0usize, None::<WhyLink>)];
        while let Some((n, depth, link)) = stack.pop() {
            let node = &self.graph[n];
            let pad = "  ".repeat(depth);
            let how = match &link {
                Some(WhyLink::Recalled { recency, importance, relevance, score }) => format!(
                    "recalled (score {score:.2} = recency {recency:.2}, importance {importance:.2}, relevance {relevance:.2}) "
                ),
                Some(WhyLink::Evidence) => "evidence ".to_owned(),
                _ => String::new(),
            };
            let again = !shown.insert(n);
            let _ = writeln!(
                out,
                "{pad}{how}#{} {} {:<16} {}{}",
                node.seq,
                node.time,
                node.kind,
                node.summary,
                if again { "  (see above)" } else { "" }
            );
            if again {
                continue;
            }
            if let (true, Some(detail)) = (details, &node.detail) {
                for line in detail.lines() {
                    let _ = writeln!(out, "{pad}    │ {line}");
                }
            }
            // Causes in log order, the earliest printed first.
            let mut next: Vec<(u64, NodeIndex, WhyLink)> = self
                .graph
                .edges_directed(n, Direction::Outgoing)
                .map(|e| (self.graph[e.target()].seq, e.target(), e.weight().clone()))
                .collect();
            next.sort_by_key(|(seq, _, _)| std::cmp::Reverse(*seq));
            for (_, target, link) in next {
                stack.push((target, depth + 1, Some(link)));
            }
        }
        if self.truncated {
            out.push_str("… (more causes not shown: raise --max-nodes)\n");
        }
        out
    }

    /// The graph as JSON: `{"root": id, "truncated": bool, "nodes": [...], "edges":
    /// [{"from", "to", "link", scores…}]}`.
    pub fn json(&self) -> serde_json::Value {
        let nodes: Vec<&WhyNode> = self.graph.node_weights().collect();
        let edges: Vec<serde_json::Value> = self
            .graph
            .edge_references()
            .map(|e| {
                let mut v = serde_json::to_value(e.weight()).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("from".into(), self.graph[e.source()].id.clone().into());
                    o.insert("to".into(), self.graph[e.target()].id.clone().into());
                }
                v
            })
            .collect();
        serde_json::json!({
            "root": self.graph[self.root].id,
            "truncated": self.truncated,
            "nodes": nodes,
            "edges": edges,
        })
    }

    /// The graph in Graphviz DOT.
    pub fn dot(&self) -> String {
        // Inside a quoted DOT string: quotes and backslashes escaped, control characters
        // gone (a line break is written as DOT's own `\n`).
        let escape = |s: &str| -> String {
            s.chars()
                .flat_map(|c| match c {
                    '"' => vec!['\\', '"'],
                    '\\' => vec!['\\', '\\'],
                    c if c.is_control() => vec![' '],
                    c => vec![c],
                })
                .collect()
        };
        let mut out = String::from("digraph why {\n  rankdir=LR;\n  node [shape=box];\n");
        for n in self.graph.node_indices() {
            let node = &self.graph[n];
            let label = format!(
                "{}\\n{}",
                escape(&format!("#{} {}", node.seq, node.kind)),
                escape(&clip(&node.summary, 80))
            );
            let _ = writeln!(out, "  n{} [label=\"{label}\"];", n.index());
        }
        for e in self.graph.edge_references() {
            let label = match e.weight() {
                WhyLink::Cause => String::new(),
                WhyLink::Recalled { score, .. } => {
                    format!(" [label=\"recalled {score:.2}\"]")
                }
                WhyLink::Evidence => " [label=\"evidence\"]".to_owned(),
            };
            let _ = writeln!(out, "  n{} -> n{}{label};", e.source().index(), e.target().index());
        }
        out.push_str("}\n");
        out
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
