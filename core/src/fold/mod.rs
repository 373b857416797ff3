//! The fold: the town as a pure function of its events. `Town::apply` is pure and total —
//! no IO, no clock, no randomness, no hash-order iteration, and no panic whatever the
//! event says (an event naming an unknown agent is counted as an anomaly and skipped).
//!
//! A [`Town`] encodes canonically (postcard over `BTreeMap`s), so its blake3
//! [`StateHash`] lets two machines compare states. The same encoding, behind a version
//! tag, is the checkpoint format: checkpoints are derived data, and one this build cannot
//! read is ignored (the fold then starts from the beginning).

use std::collections::BTreeMap;
use std::fmt;

pub mod change;

use change::{AccountRef, Change};
use hamlet_log::event::{decode_body, AgentId, Event, MemoryKind, PlanRef, Tile};
use hamlet_log::format::StoredRef;
use hamlet_log::EventId;
use serde::{Deserialize, Serialize};

const STATE_CONTEXT: &str = "hamlet 2026-11-22 state";
/// Version of the checkpoint encoding; bump it whenever [`Town`] changes shape.
pub const CHECKPOINT_VERSION: u16 = 1;

/// The blake3 hash of a canonically encoded [`Town`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateHash(pub [u8; 32]);

impl fmt::Display for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "st_{}", hamlet_log::id::hex(&self.0))
    }
}

impl fmt::Debug for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The whole town after some prefix of a branch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Town {
    /// The last event folded.
    pub head: Option<(u64, EventId)>,
    /// The name of the branch whose events were folded last.
    pub branch_name: String,
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    /// Steps taken.
    pub step: u64,
    /// The run's seed.
    pub seed: Option<u64>,
    /// Simulated seconds per step.
    pub seconds_per_step: u32,
    /// The town's name.
    pub town_name: String,
    /// Every agent.
    pub agents: BTreeMap<AgentId, Agent>,
    /// Object states by address; absent means idle.
    pub objects: BTreeMap<String, String>,
    /// Conversations under way.
    pub conversations: BTreeMap<EventId, Conversation>,
    /// Shop tills, in cents.
    pub shops: BTreeMap<String, i64>,
    /// Money that entered from outside (wages), in cents.
    pub world_paid_cents: i64,
    /// Money that left to outside, in cents.
    pub world_received_cents: i64,
    /// Language-model totals.
    pub llm: LlmTotals,
    /// Events folded.
    pub n_events: u64,
    /// Events of kinds this build does not know.
    pub n_unknown: u64,
    /// Events that named something that does not exist (skipped).
    pub n_anomalies: u64,
    /// User interventions.
    pub n_interventions: u64,
    /// What is going on at places now (happenings the user set, not yet over), in the order
    /// they began. Encoded after every other field, and only when there is one (see
    /// [`Town::encode`]).
    #[serde(skip)]
    pub happenings: Vec<Happening>,
    /// The mayor's book (the treasury, the jobs posted, the wages set), once a mayor or the
    /// treasury has done anything. Encoded after the happenings, and only then (see
    /// [`Town::encode`]).
    #[serde(skip)]
    pub mayor: Option<MayorBook>,
}

/// What a town's mayor keeps account of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MayorBook {
    /// The treasury, in cents.
    pub treasury_cents: i64,
    /// Every job posted, in the order posted.
    pub jobs: Vec<Job>,
    /// Wages set by sector, per hour worked.
    pub wages: BTreeMap<String, i64>,
    /// The mayor's acts.
    pub acts: u64,
}

/// A job a mayor posted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The `MayorActed` event that posted it.
    pub posted: EventId,
    /// Where the work is.
    pub sector: String,
    /// The job, in words.
    pub title: String,
    /// Its wage per hour worked (a wage set for its sector later stands over it).
    pub cents_per_hour: i64,
    /// Who took it, once someone has.
    pub taken_by: Option<AgentId>,
}

/// Something going on at a place for a while (an `Intervention::Happening`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Happening {
    /// The `Intervened` event that set it.
    pub event: EventId,
    /// Where: a sector, or a `sector:arena`.
    pub place: String,
    /// What, in words.
    pub text: String,
    /// When it ends.
    pub until_secs: u64,
}

/// One agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// Its seed paragraph.
    pub persona: String,
    /// Where it is.
    pub tile: Tile,
    /// Cash, in cents.
    pub cash_cents: i64,
    /// What it is doing.
    pub action: Option<Action>,
    /// Its memory stream, by memory id (the `MemoryAdded` event).
    #[serde(deserialize_with = "sorted_map")]
    pub memories: BTreeMap<EventId, Memory>,
    /// Its latest plan at each level.
    pub plans: Vec<EventId>,
    /// Summed importance since its last reflection.
    pub importance_since_reflection: u32,
    /// Reflections made.
    pub n_reflections: u32,
    /// The conversation it is in.
    pub conversation: Option<EventId>,
    /// Things perceived.
    pub n_percepts: u64,
}

/// What an agent is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// In words.
    pub description: String,
    /// For the map.
    pub emoji: String,
    /// Where.
    pub address: String,
    /// Started at.
    pub started_secs: u64,
    /// For how long.
    pub duration_secs: u32,
    /// The `ActionStarted` event.
    pub event: EventId,
    /// The plan item it carries out.
    pub plan_item: Option<PlanRef>,
}

/// A memory's place in a memory stream (its text stays in the log, under its id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// What kind.
    pub kind: MemoryKind,
    /// Poignancy 1 to 10.
    pub importance: u8,
    /// Created at.
    pub created_secs: u64,
    /// Last retrieved at (or created).
    pub last_accessed_secs: u64,
}

/// A conversation under way.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Who talks.
    pub agents: Vec<AgentId>,
    /// Turns so far.
    pub n_turns: u32,
}

/// Language-model totals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmTotals {
    /// Requests sent.
    pub n_requests: u64,
    /// Answers received.
    pub n_responses: u64,
    /// Failures.
    pub n_failures: u64,
    /// Fallbacks used.
    pub n_fallbacks: u64,
    /// Prompt tokens.
    pub tokens_prompt: u64,
    /// Completion tokens.
    pub tokens_completion: u64,
    /// Embedding requests.
    pub n_embeddings: u64,
    /// Requests per model.
    pub models: BTreeMap<String, u64>,
}

impl Town {
    /// Folds one more event. Pure and total.
    pub fn apply(&mut self, event: &Event) {
        self.apply_change(
            event.id,
            event.seq(),
            event.sim_time_secs(),
            change::from_body(&event.body),
        );
    }

    /// Folds one more event straight from its stored bytes (the fast road: see
    /// [`change`]). Equal to [`Town::apply`] on the decoded event whenever the body decodes
    /// — always, for bytes a store wrote or `verify` passed. For other bytes use
    /// [`Town::apply_stored_strict`]: prefixes read only what they need and would not notice a
    /// malformed tail.
    #[inline]
    pub fn apply_stored(&mut self, event: &StoredRef<'_>) {
        let (id, seq, now) = (event.id, event.header.seq, event.header.sim_time_secs);
        // Most events are moves: they skip the general road (`Change`), doing exactly what
        // `apply_change` does for `Change::Moved`.
        const MOVED: u16 = 6;
        if event.kind == MOVED && event.schema == 1 {
            if let Some((agent, to)) = change::moved_fields(event.body) {
                self.head = Some((seq, id));
                self.sim_time_secs = self.sim_time_secs.max(now);
                self.n_events = self.n_events.saturating_add(1);
                match self.agents.get_mut(&agent) {
                    Some(a) => a.tile = to,
                    None => self.n_anomalies = self.n_anomalies.saturating_add(1),
                }
                return;
            }
        }
        match change::from_stored(event.kind, event.schema, event.body) {
            Some(change) => self.apply_change(id, seq, now, change),
            None => match decode_body(event.kind, event.schema, event.body) {
                Ok(body) => self.apply_change(id, seq, now, change::from_body(&body)),
                // A known kind that does not decode: the fold stays total and counts it.
                Err(_) => {
                    self.apply_change(id, seq, now, Change::Nothing);
                    self.n_anomalies = self.n_anomalies.saturating_add(1);
                }
            },
        }
    }

    /// Folds one more event from its stored bytes, decoding the whole body first: exactly
    /// [`Town::apply`] on the decoded event, with a body that does not decode counted as an
    /// anomaly. For bytes nobody has verified.
    pub fn apply_stored_strict(&mut self, event: &StoredRef<'_>) {
        let (id, seq, now) = (event.id, event.header.seq, event.header.sim_time_secs);
        match decode_body(event.kind, event.schema, event.body) {
            Ok(body) => self.apply_change(id, seq, now, change::from_body(&body)),
            Err(_) => {
                self.apply_change(id, seq, now, Change::Nothing);
                self.n_anomalies = self.n_anomalies.saturating_add(1);
            }
        }
    }

    fn apply_change(&mut self, id: EventId, seq: u64, now: u64, change: Change<'_>) {
        self.head = Some((seq, id));
        self.sim_time_secs = self.sim_time_secs.max(now);
        self.n_events = self.n_events.saturating_add(1);
        let ok = match change {
            Change::Branch { name } => {
                set(&mut self.branch_name, name);
                true
            }
            Change::Config { seed, seconds_per_step } => {
                self.seed = Some(seed);
                self.seconds_per_step = seconds_per_step;
                true
            }
            Change::Town { name } => {
                set(&mut self.town_name, name);
                true
            }
            Change::Joined { agent, name, persona, tile, cash_cents } => {
                let agent = self.agents.entry(agent).or_default();
                set(&mut agent.name, name);
                set(&mut agent.persona, persona);
                agent.tile = tile;
                agent.cash_cents = cash_cents;
                true
            }
            Change::Step { step } => {
                self.step = step;
                if !self.happenings.is_empty() {
                    let now = self.sim_time_secs;
                    self.happenings.retain(|h| h.until_secs > now);
                }
                true
            }
            Change::Moved { agent, to } => self.agent(agent).map(|a| a.tile = to).is_some(),
            Change::Perceived { agent, n } => {
                self.agent(agent).map(|a| a.n_percepts = a.n_percepts.saturating_add(n)).is_some()
            }
            Change::Memory { agent, kind, importance } => self
                .agent(agent)
                .map(|a| {
                    a.memories.insert(
                        id,
                        Memory { kind, importance, created_secs: now, last_accessed_secs: now },
                    );
                    if kind == MemoryKind::Reflection {
                        a.n_reflections = a.n_reflections.saturating_add(1);
                    } else {
                        a.importance_since_reflection =
                            a.importance_since_reflection.saturating_add(importance.into());
                    }
                })
                .is_some(),
            Change::Retrieved { agent, memories } => self
                .agent(agent)
                .map(|a| {
                    for memory in memories.iter() {
                        if let Some(memory) = a.memories.get_mut(&memory) {
                            memory.last_accessed_secs = now;
                        }
                    }
                })
                .is_some(),
            Change::LlmRequest { model } => {
                self.llm.n_requests = self.llm.n_requests.saturating_add(1);
                match self.llm.models.get_mut(model) {
                    Some(n) => *n = n.saturating_add(1),
                    None => {
                        self.llm.models.insert(model.to_owned(), 1);
                    }
                }
                true
            }
            Change::LlmResponse { fallback, tokens_prompt, tokens_completion } => {
                self.llm.n_responses = self.llm.n_responses.saturating_add(1);
                self.llm.n_fallbacks = self.llm.n_fallbacks.saturating_add(u64::from(fallback));
                self.llm.tokens_prompt =
                    self.llm.tokens_prompt.saturating_add(u64::from(tokens_prompt));
                self.llm.tokens_completion =
                    self.llm.tokens_completion.saturating_add(u64::from(tokens_completion));
                true
            }
            Change::LlmFailure => {
                self.llm.n_failures = self.llm.n_failures.saturating_add(1);
                true
            }
            Change::EmbeddingRequest => {
                self.llm.n_embeddings = self.llm.n_embeddings.saturating_add(1);
                true
            }
            Change::Plan { agent, level } => {
                let level = level as usize;
                self.agent(agent)
                    .map(|a| {
                        a.plans.truncate(level);
                        a.plans.resize(level, EventId::NONE);
                        a.plans.push(id);
                    })
                    .is_some()
            }
            Change::Action { agent, description, emoji, address, duration_secs, plan_item } => self
                .agent(agent)
                .map(|a| {
                    a.action = Some(Action {
                        description: description.to_owned(),
                        emoji: emoji.to_owned(),
                        address: address.to_owned(),
                        started_secs: now,
                        duration_secs,
                        event: id,
                        plan_item,
                    })
                })
                .is_some(),
            Change::ConversationStarted { agents } => {
                let known = agents.iter().all(|a| self.agents.contains_key(a));
                if known {
                    for agent in &agents {
                        if let Some(a) = self.agents.get_mut(agent) {
                            a.conversation = Some(id);
                        }
                    }
                    self.conversations.insert(id, Conversation { agents, n_turns: 0 });
                }
                known
            }
            Change::Turn { conversation } => self
                .conversations
                .get_mut(&conversation)
                .map(|c| c.n_turns = c.n_turns.saturating_add(1))
                .is_some(),
            Change::ConversationEnded { conversation } => {
                match self.conversations.remove(&conversation) {
                    Some(c) => {
                        for agent in c.agents {
                            if let Some(a) = self.agents.get_mut(&agent) {
                                a.conversation = None;
                            }
                        }
                        true
                    }
                    None => false,
                }
            }
            Change::Reflection { agent } => {
                self.agent(agent).map(|a| a.importance_since_reflection = 0).is_some()
            }
            Change::Object { address, state } => {
                if state == "idle" {
                    self.objects.remove(address);
                } else {
                    self.objects.insert(address.to_owned(), state.to_owned());
                }
                true
            }
            Change::Cash { from, to, amount_cents } => self.move_cash(from, to, amount_cents),
            Change::EditPersona { agent, persona } => {
                self.n_interventions = self.n_interventions.saturating_add(1);
                self.agent(agent).map(|a| set(&mut a.persona, persona)).is_some()
            }
            Change::SetObject { address, state } => {
                self.n_interventions = self.n_interventions.saturating_add(1);
                self.objects.insert(address.to_owned(), state.to_owned());
                true
            }
            Change::Happening { place, text, until_secs } => {
                self.n_interventions = self.n_interventions.saturating_add(1);
                if until_secs > self.sim_time_secs {
                    let (place, text) = (place.to_owned(), text.to_owned());
                    self.happenings.push(Happening { event: id, place, text, until_secs });
                }
                true
            }
            Change::Intervened => {
                self.n_interventions = self.n_interventions.saturating_add(1);
                true
            }
            Change::Job { sector, title, cents_per_hour } => {
                let book = self.mayor.get_or_insert_with(MayorBook::default);
                book.acts += 1;
                book.jobs.push(Job {
                    posted: id,
                    sector: sector.to_owned(),
                    title: title.to_owned(),
                    cents_per_hour,
                    taken_by: None,
                });
                true
            }
            Change::Wage { sector, cents_per_hour } => {
                let book = self.mayor.get_or_insert_with(MayorBook::default);
                book.acts += 1;
                book.wages.insert(sector.to_owned(), cents_per_hour);
                true
            }
            Change::MayorActed => {
                self.mayor.get_or_insert_with(MayorBook::default).acts += 1;
                true
            }
            Change::JobTaken { agent, job } => {
                let known = self.agents.contains_key(&agent);
                let book = self.mayor.get_or_insert_with(MayorBook::default);
                match book.jobs.iter_mut().find(|j| j.posted == job && j.taken_by.is_none()) {
                    Some(j) if known => {
                        j.taken_by = Some(agent);
                        true
                    }
                    _ => false,
                }
            }
            Change::Nothing => true,
            Change::Unknown => {
                self.n_unknown = self.n_unknown.saturating_add(1);
                true
            }
        };
        if !ok {
            self.n_anomalies = self.n_anomalies.saturating_add(1);
        }
    }

    fn agent(&mut self, id: AgentId) -> Option<&mut Agent> {
        self.agents.get_mut(&id)
    }

    fn balance(&mut self, account: AccountRef<'_>) -> Option<&mut i64> {
        match account {
            AccountRef::Agent(id) => self.agents.get_mut(&id).map(|a| &mut a.cash_cents),
            AccountRef::Shop(name) => {
                if !self.shops.contains_key(name) {
                    self.shops.insert(name.to_owned(), 0);
                }
                self.shops.get_mut(name)
            }
            AccountRef::World => None,
            AccountRef::Town => {
                Some(&mut self.mayor.get_or_insert_with(MayorBook::default).treasury_cents)
            }
        }
    }

    fn move_cash(&mut self, from: AccountRef<'_>, to: AccountRef<'_>, amount: i64) -> bool {
        let known = |t: &Town, a: AccountRef<'_>| match a {
            AccountRef::Agent(id) => t.agents.contains_key(&id),
            _ => true,
        };
        if amount <= 0 || !known(self, from) || !known(self, to) {
            return false;
        }
        match self.balance(from) {
            Some(b) => *b = b.saturating_sub(amount),
            None => self.world_paid_cents = self.world_paid_cents.saturating_add(amount),
        }
        match self.balance(to) {
            Some(b) => *b = b.saturating_add(amount),
            None => self.world_received_cents = self.world_received_cents.saturating_add(amount),
        }
        true
    }

    /// The canonical encoding (also the checkpoint body): the fields in order, then, only
    /// when something is going on, the happenings, then, only when there is a mayor's book,
    /// the book (after the happenings, empty or not) — so a town with neither encodes, and
    /// hashes, as towns did before they existed (the golden corpus's pinned states).
    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            postcard::to_allocvec(self).unwrap_or_else(|e| panic!("a town always encodes: {e}"));
        if !self.happenings.is_empty() || self.mayor.is_some() {
            out = postcard::to_extend(&self.happenings, out)
                .unwrap_or_else(|e| panic!("happenings always encode: {e}"));
        }
        if let Some(book) = &self.mayor {
            out = postcard::to_extend(book, out)
                .unwrap_or_else(|e| panic!("a mayor's book always encodes: {e}"));
        }
        out
    }

    /// The blake3 hash of the canonical encoding.
    pub fn state_hash(&self) -> StateHash {
        let bytes = self.encode();
        StateHash(
            *blake3::Hasher::new_derive_key(STATE_CONTEXT).update(&bytes).finalize().as_bytes(),
        )
    }

    /// A checkpoint: version tag, then the canonical encoding.
    pub fn to_checkpoint(&self) -> Vec<u8> {
        let mut out = CHECKPOINT_VERSION.to_le_bytes().to_vec();
        out.extend_from_slice(&self.encode());
        out
    }

    /// Reads a checkpoint; `None` if this build cannot (then fold from the start).
    pub fn from_checkpoint(bytes: &[u8]) -> Option<Town> {
        let (version, body) = (bytes.get(..2)?, bytes.get(2..)?);
        if version != CHECKPOINT_VERSION.to_le_bytes() {
            return None;
        }
        let (mut town, rest): (Town, &[u8]) = postcard::take_from_bytes(body).ok()?;
        if !rest.is_empty() {
            let (happenings, rest): (Vec<Happening>, &[u8]) =
                postcard::take_from_bytes(rest).ok()?;
            town.happenings = happenings;
            if !rest.is_empty() {
                town.mayor = Some(postcard::from_bytes(rest).ok()?);
            }
        }
        Some(town)
    }

    /// Money held inside the town (agents, shops and the treasury), in cents.
    pub fn cash_inside_cents(&self) -> i64 {
        self.agents.values().map(|a| a.cash_cents).sum::<i64>()
            + self.shops.values().sum::<i64>()
            + self.mayor.as_ref().map_or(0, |m| m.treasury_cents)
    }
}

/// Reads a map written in key order (as a `BTreeMap` serializes) in one bulk build rather
/// than one insert per key: postcard writes a map exactly as a sequence of pairs. This is
/// most of a checkpoint's decoding time, and so of a seek's.
fn sorted_map<'de, D, K, V>(deserializer: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: Ord + Deserialize<'de>,
    V: Deserialize<'de>,
{
    let pairs = Vec::<(K, V)>::deserialize(deserializer)?;
    if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err(serde::de::Error::custom("map keys are not in strictly increasing order"));
    }
    Ok(pairs.into_iter().collect())
}

/// Sets `slot` to `text`, reusing its allocation.
fn set(slot: &mut String, text: &str) {
    slot.clear();
    slot.push_str(text);
}

/// Folds events from an empty town.
pub fn fold<'a>(events: impl IntoIterator<Item = &'a Event>) -> Town {
    let mut town = Town::default();
    for event in events {
        town.apply(event);
    }
    town
}
