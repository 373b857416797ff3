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
    /// The agent's name, from its joining (a picture names it).
    name: String,
    /// Whether the agent remembers by the `long_short` module (its persona's `memory`).
    long_short: bool,
    /// For `long_short`: its latest picture of each person and place, by subject.
    pictures: BTreeMap<String, usize>,
}

/// The words of a picture (`long_short`'s long-term memory of a person or place): what
/// `name` knows and thinks of `subject`, as its memory stream holds it.
pub fn picture_words(name: &str, subject: &str, text: &str) -> String {
    format!("{name}'s picture of {subject}: {text}")
}

/// The subject of a memory of `name`'s made by [`picture_words`], if it is one.
pub fn picture_subject<'a>(name: &str, description: &'a str) -> Option<&'a str> {
    let rest = description.strip_prefix(name)?.strip_prefix("'s picture of ")?;
    rest.split_once(": ").map(|(subject, _)| subject).filter(|s| !s.is_empty())
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

    /// Whether the agent remembers by the `long_short` module: what it recalls is its
    /// pictures of the people and places a query names and its latest memories
    /// ([`crate::mind::retrieval::recall_long_short`]), not a scored search.
    pub fn long_short(&self) -> bool {
        self.long_short
    }

    /// For `long_short`: its latest picture of each subject (the memory), by subject.
    pub fn pictures(&self) -> impl Iterator<Item = (&str, &Memory)> {
        self.pictures.iter().map(|(s, &i)| (s.as_str(), &self.memories[i]))
    }

    /// Whether `m` is one of its pictures (its latest of a subject, or an older one).
    pub fn is_picture(&self, m: &Memory) -> bool {
        self.long_short
            && m.kind == MemoryKind::Reflection
            && picture_subject(&self.name, &m.description).is_some()
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
            Body::AgentJoined(j) => {
                let stream = self.streams.entry(j.agent).or_default();
                stream.name = j.name.clone();
                let module = j.traits.iter().find(|(k, _)| k == crate::town::MEMORY_TRAIT);
                stream.long_short = module.is_some_and(|(_, m)| m == "long_short");
            }
            Body::MemoryAdded(m) => {
                let stream = self.streams.entry(m.agent).or_default();
                if stream.long_short && m.kind == MemoryKind::Reflection {
                    if let Some(subject) = picture_subject(&stream.name, &m.description) {
                        stream.pictures.insert(subject.to_owned(), stream.memories.len());
                    }
                }
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
        static EMPTY: MemoryStream = MemoryStream {
            memories: Vec::new(),
            index: BTreeMap::new(),
            name: String::new(),
            long_short: false,
            pictures: BTreeMap::new(),
        };
        self.streams.get(&agent).unwrap_or(&EMPTY)
    }
}

pub use crate::town::seed_statements;
