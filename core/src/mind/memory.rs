//! The memory stream: every memory of an agent, in the order it entered, with what the
//! retrieval function needs (description, times, importance, embedding) and, for a
//! reflection, the memories it cites — so reflections on reflections form a tree.
//!
//! A memory's id is the id of its `MemoryAdded` event. Its created time is that event's
//! time; its last-accessed time is the time of the latest `Retrieved` event that returned
//! it (or its created time).

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, MemoryKind};
use hamlet_log::{Body, Event, EventId};

/// One memory object.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// The `MemoryAdded` event's id.
    pub id: EventId,
    /// Seed, observation, chat, reflection or plan.
    pub kind: MemoryKind,
    /// In words.
    pub description: String,
    /// Simulated seconds when it entered the stream.
    pub created_secs: u64,
    /// Simulated seconds when a retrieval last returned it.
    pub last_access_secs: u64,
    /// Poignancy, 1 to 10.
    pub importance: u8,
    /// The description's embedding.
    pub embedding: Vec<f32>,
    /// Its length ([`crate::mind::retrieval::norm`]), computed once.
    pub embedding_norm: f64,
    /// For a reflection: the memories it rests on.
    pub evidence: Vec<EventId>,
}

/// One agent's memory stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryStream {
    memories: Vec<Memory>,
    index: BTreeMap<EventId, usize>,
}

impl MemoryStream {
    /// Every memory, oldest first.
    pub fn memories(&self) -> &[Memory] {
        &self.memories
    }

    /// A memory by id.
    pub fn get(&self, id: EventId) -> Option<&Memory> {
        self.index.get(&id).map(|&i| &self.memories[i])
    }

    /// Where a memory stands in the stream (0: the first made).
    pub fn position(&self, id: EventId) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// The `n` most recent memories, oldest first.
    pub fn recent(&self, n: usize) -> &[Memory] {
        &self.memories[self.memories.len().saturating_sub(n)..]
    }

    /// Summed importance of the memories created after `since_secs` (the reflection
    /// trigger reads this).
    pub fn importance_since(&self, since_secs: u64) -> u32 {
        self.memories
            .iter()
            .rev()
            .take_while(|m| m.created_secs > since_secs)
            .map(|m| u32::from(m.importance))
            .sum()
    }

    /// How many memories.
    pub fn len(&self) -> usize {
        self.memories.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty()
    }
}

/// Every agent's memory stream, folded from the log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Minds {
    streams: BTreeMap<AgentId, MemoryStream>,
}

impl Minds {
    /// Folds one event in. Events of other kinds change nothing.
    pub fn apply(&mut self, event: &Event) {
        let now = event.sim_time_secs();
        match &event.body {
            Body::MemoryAdded(m) => {
                let stream = self.streams.entry(m.agent).or_default();
                stream.index.insert(event.id, stream.memories.len());
                stream.memories.push(Memory {
                    id: event.id,
                    kind: m.kind,
                    description: m.description.clone(),
                    created_secs: now,
                    last_access_secs: now,
                    importance: m.importance,
                    embedding: m.embedding.clone(),
                    embedding_norm: crate::mind::retrieval::norm(&m.embedding),
                    evidence: m.evidence.clone(),
                });
            }
            Body::Retrieved(r) => {
                if let Some(stream) = self.streams.get_mut(&r.agent) {
                    for hit in &r.hits {
                        if let Some(&i) = stream.index.get(&hit.memory) {
                            let m = &mut stream.memories[i];
                            m.last_access_secs = m.last_access_secs.max(now);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// An agent's memory stream (empty if it has none).
    pub fn stream(&self, agent: AgentId) -> &MemoryStream {
        static EMPTY: MemoryStream = MemoryStream { memories: Vec::new(), index: BTreeMap::new() };
        self.streams.get(&agent).unwrap_or(&EMPTY)
    }
}

pub use crate::town::seed_statements;
