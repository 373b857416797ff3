//! "Why?" laid out for drawing: the causal graph in layers (the event asked about in the
//! first column, each cause one column further than the nearest thing it led to), each
//! column ordered by where the things it led to sit (one barycentre pass), and the same
//! graph as an indented tree. The page only draws boxes and lines at the given places.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use serde::Serialize;

use crate::why::{Why, WhyLink};

/// A node box's width, in the drawing's units.
pub const NODE_W: u32 = 240;
/// A node box's height.
pub const NODE_H: u32 = 48;
/// Between columns.
pub const GAP_X: u32 = 80;
/// Between boxes in a column.
pub const GAP_Y: u32 = 16;

/// A "why?" graph, placed.
#[derive(Clone, Debug, Serialize)]
pub struct WhyGraph {
    /// The event asked about: an index into `nodes`.
    pub root: usize,
    /// True when the walk stopped with causes left unexplored.
    pub truncated: bool,
    /// The drawing's size.
    pub width: u32,
    /// The drawing's height.
    pub height: u32,
    /// The events.
    pub nodes: Vec<PlacedNode>,
    /// What led to what: `from` is the effect, `to` its cause.
    pub edges: Vec<PlacedEdge>,
    /// The graph as an indented tree, the root first; a node met again is listed with
    /// `again` and not expanded.
    pub tree: Vec<TreeLine>,
}

/// An event in the drawing.
#[derive(Clone, Debug, Serialize)]
pub struct PlacedNode {
    /// Its id: 64 hex digits.
    pub id: String,
    /// Its seq.
    pub seq: u64,
    /// Its simulated time in words.
    pub time: String,
    /// Its kind.
    pub kind: String,
    /// One line saying what happened.
    pub summary: String,
    /// The full text behind it (prompt, answer, memory, line), if any.
    pub detail: Option<String>,
    /// Its column.
    pub layer: u32,
    /// Its box.
    pub x: u32,
    /// Its box.
    pub y: u32,
    /// Its box.
    pub w: u32,
    /// Its box.
    pub h: u32,
}

/// A link in the drawing.
#[derive(Clone, Debug, Serialize)]
pub struct PlacedEdge {
    /// The effect (index into `nodes`).
    pub from: usize,
    /// The cause.
    pub to: usize,
    /// `cause`, `recalled` or `evidence`.
    pub link: &'static str,
    /// For `recalled`: the scores the memory was ranked by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<[f32; 4]>,
}

/// A line of the indented tree.
#[derive(Clone, Debug, Serialize)]
pub struct TreeLine {
    /// The node (index into `nodes`).
    pub node: usize,
    /// How deep.
    pub depth: u32,
    /// How it was reached: `cause`, `recalled`, `evidence` (empty for the root).
    pub link: &'static str,
    /// Met before: shown, not expanded again.
    pub again: bool,
}

fn link_name(link: &WhyLink) -> &'static str {
    match link {
        WhyLink::Cause => "cause",
        WhyLink::Recalled { .. } => "recalled",
        WhyLink::Evidence => "evidence",
    }
}

impl WhyGraph {
    /// Places `why`'s nodes.
    pub fn of(why: &Why) -> WhyGraph {
        let g = &why.graph;
        // Columns: the fewest links from the root.
        let mut layer: BTreeMap<NodeIndex, u32> = BTreeMap::from([(why.root, 0)]);
        let mut queue = VecDeque::from([why.root]);
        while let Some(n) = queue.pop_front() {
            let next = layer[&n] + 1;
            for m in g.neighbors_directed(n, Direction::Outgoing) {
                if let std::collections::btree_map::Entry::Vacant(e) = layer.entry(m) {
                    e.insert(next);
                    queue.push_back(m);
                }
            }
        }
        let n_layers = layer.values().copied().max().unwrap_or(0) + 1;
        let mut columns: Vec<Vec<NodeIndex>> = vec![Vec::new(); n_layers as usize];
        // Each column in order of where what it led to sits (the barycentre of its effects
        // in the column before), ties by seq.
        let mut row: BTreeMap<NodeIndex, f64> = BTreeMap::from([(why.root, 0.0)]);
        columns[0].push(why.root);
        for l in 1..n_layers {
            let mut here: Vec<(f64, u64, NodeIndex)> = layer
                .iter()
                .filter(|(_, &x)| x == l)
                .map(|(&n, _)| {
                    let effects: Vec<f64> = g
                        .neighbors_directed(n, Direction::Incoming)
                        .filter_map(|e| row.get(&e).copied())
                        .collect();
                    let bary = if effects.is_empty() {
                        f64::MAX
                    } else {
                        effects.iter().sum::<f64>() / effects.len() as f64
                    };
                    (bary, g[n].seq, n)
                })
                .collect();
            here.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (i, (_, _, n)) in here.iter().enumerate() {
                row.insert(*n, i as f64);
            }
            columns[l as usize] = here.into_iter().map(|(_, _, n)| n).collect();
        }
        let tallest = columns.iter().map(Vec::len).max().unwrap_or(1) as u32;
        let mut index: BTreeMap<NodeIndex, usize> = BTreeMap::new();
        let mut nodes = Vec::with_capacity(g.node_count());
        for (l, column) in columns.iter().enumerate() {
            // Columns are centred on the tallest.
            let offset = (tallest - column.len() as u32) * (NODE_H + GAP_Y) / 2;
            for (i, &n) in column.iter().enumerate() {
                index.insert(n, nodes.len());
                let w = &g[n];
                nodes.push(PlacedNode {
                    id: w.event.to_hex(),
                    seq: w.seq,
                    time: w.time.clone(),
                    kind: w.kind.clone(),
                    summary: w.summary.clone(),
                    detail: w.detail.clone(),
                    layer: l as u32,
                    x: l as u32 * (NODE_W + GAP_X),
                    y: offset + i as u32 * (NODE_H + GAP_Y),
                    w: NODE_W,
                    h: NODE_H,
                });
            }
        }
        let edges = g
            .edge_references()
            .filter_map(|e| {
                let scores = match e.weight() {
                    WhyLink::Recalled { recency, importance, relevance, score } => {
                        Some([*recency, *importance, *relevance, *score])
                    }
                    _ => None,
                };
                Some(PlacedEdge {
                    from: *index.get(&e.source())?,
                    to: *index.get(&e.target())?,
                    link: link_name(e.weight()),
                    scores,
                })
            })
            .collect();
        // The tree: depth first, causes in log order.
        let mut tree = Vec::new();
        let mut shown = BTreeSet::new();
        let mut stack = vec![(why.root, 0u32, "")];
        while let Some((n, depth, link)) = stack.pop() {
            let again = !shown.insert(n);
            let Some(&node) = index.get(&n) else { continue };
            tree.push(TreeLine { node, depth, link, again });
            if again {
                continue;
            }
            let mut next: Vec<(u64, NodeIndex, &'static str)> = g
                .edges_directed(n, Direction::Outgoing)
                .map(|e| (g[e.target()].seq, e.target(), link_name(e.weight())))
                .collect();
            next.sort_by_key(|(seq, _, _)| std::cmp::Reverse(*seq));
            stack.extend(next.into_iter().map(|(_, m, l)| (m, depth + 1, l)));
        }
        WhyGraph {
            root: index.get(&why.root).copied().unwrap_or(0),
            truncated: why.truncated,
            width: n_layers * (NODE_W + GAP_X) - GAP_X,
            height: tallest * (NODE_H + GAP_Y) - GAP_Y,
            nodes,
            edges,
            tree,
        }
    }
}
