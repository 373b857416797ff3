//! What one event changes in the town, borrowed from the event: the fold's input.
//!
//! Two roads lead here, and a test holds them equal. [`from_body`] takes a decoded
//! [`Body`]. [`from_stored`] reads the stored bytes directly through *prefixes*: borrowed
//! structs whose fields mirror, in order, the first of the real body's fields. postcard is
//! sequential, so a prefix decodes just those fields — a `MemoryAdded` never touches its
//! embedding, a `Perceived` reads only how many percepts it holds, and strings the fold
//! skips are borrowed as bytes, neither copied nor validated. This is what makes seeking
//! fast. Prefixes exist for schema 1, and read later schemas that only added what they
//! skip; other schemas go through [`from_body`] after upcasting.

use hamlet_log::event::{
    Account, AgentId, Body, Intervention, MayorAct, MemoryKind, PlanLevel, PlanRef, Tile,
};
use hamlet_log::EventId;
use serde::Deserialize;

/// A list of memory ids: borrowed from the stored bytes (each id at a fixed stride), or
/// owned. Equal when they hold the same ids.
#[derive(Clone, Debug)]
pub enum Ids<'a> {
    /// `bytes` holds ids at every `stride` bytes.
    Raw {
        /// The bytes.
        bytes: &'a [u8],
        /// Bytes from one id to the next.
        stride: usize,
    },
    /// Decoded ids.
    Owned(Vec<EventId>),
}

impl Ids<'_> {
    /// The ids, in order.
    pub fn iter(&self) -> impl Iterator<Item = EventId> + '_ {
        let (raw, owned) = match self {
            Ids::Raw { bytes, stride } => (Some(bytes.chunks_exact(*stride)), None),
            Ids::Owned(ids) => (None, Some(ids.iter().copied())),
        };
        raw.into_iter()
            .flatten()
            .filter_map(|c| c.get(..32).and_then(|id| id.try_into().ok()).map(EventId))
            .chain(owned.into_iter().flatten())
    }
}

impl PartialEq for Ids<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// A cursor reading postcard by hand, under postcard's rules, for the hottest prefixes.
struct Postcard<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Postcard<'a> {
    /// A varint of a `bits`-bit integer: at most ⌈bits/7⌉ bytes, the last holding only the
    /// bits that fit (postcard's `varint_max` and `max_of_last_byte`).
    fn varint<const BITS: u32>(&mut self) -> Option<u64> {
        let max_len = const { BITS.div_ceil(7) };
        let last_max = const { (1u16 << (BITS % 7)).wrapping_sub(1) };
        let mut out = 0u64;
        for i in 0..max_len {
            let byte = *self.bytes.get(self.pos)?;
            self.pos += 1;
            out |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                let fits = i + 1 < max_len || u16::from(byte) <= last_max;
                return fits.then_some(out);
            }
        }
        None
    }
    fn u16(&mut self) -> Option<u16> {
        self.varint::<16>().map(|v| v as u16)
    }
    fn agent(&mut self) -> Option<AgentId> {
        self.varint::<32>().map(|v| AgentId(v as u32))
    }
    fn tile(&mut self) -> Option<Tile> {
        Some(Tile { x: self.u16()?, y: self.u16()? })
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint::<64>()?).ok()?;
        self.take(n)
    }
}

/// `Moved`: agent, from, to.
fn moved(body: &[u8]) -> Option<Change<'_>> {
    moved_fields(body).map(|(agent, to)| Change::Moved { agent, to })
}

/// The agent and destination of a schema-1 `Moved` body: the fold's hottest read.
#[inline]
pub fn moved_fields(body: &[u8]) -> Option<(AgentId, Tile)> {
    let mut p = Postcard { bytes: body, pos: 0 };
    let agent = p.agent()?;
    let _from = p.tile()?;
    Some((agent, p.tile()?))
}

/// `Retrieved`: agent, query, weights (3 × f32), decay (f32), then the hits, each a 32-byte
/// id and 4 × f32 (48 bytes).
fn retrieved(body: &[u8]) -> Option<Change<'_>> {
    let mut p = Postcard { bytes: body, pos: 0 };
    let agent = p.agent()?;
    let _query = p.bytes()?;
    let _weights_and_decay = p.take(16)?;
    let n = usize::try_from(p.varint::<64>()?).ok()?;
    let bytes = p.take(n.checked_mul(48)?)?;
    Some(Change::Retrieved { agent, memories: Ids::Raw { bytes, stride: 48 } })
}

/// An account, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum AccountRef<'a> {
    /// An agent's purse.
    Agent(AgentId),
    /// A shop's till.
    Shop(&'a str),
    /// Outside the town.
    World,
    /// The town's treasury.
    Town,
}

/// What one event changes. Fields are named as in the bodies they come from.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs, reason = "each field is the body field of the same name")]
pub enum Change<'a> {
    /// A branch begins.
    Branch { name: &'a str },
    /// The run is configured.
    Config { seed: u64, seconds_per_step: u32 },
    /// The town is loaded.
    Town { name: &'a str },
    /// An agent joins.
    Joined { agent: AgentId, name: &'a str, persona: &'a str, tile: Tile, cash_cents: i64 },
    /// The clock steps.
    Step { step: u64 },
    /// An agent moves.
    Moved { agent: AgentId, to: Tile },
    /// An agent perceives `n` things.
    Perceived { agent: AgentId, n: u64 },
    /// A memory enters a stream (its id is the event's).
    Memory { agent: AgentId, kind: MemoryKind, importance: u8 },
    /// A retrieval touches memories.
    Retrieved { agent: AgentId, memories: Ids<'a> },
    /// A model call is sent.
    LlmRequest { model: &'a str },
    /// A model answers.
    LlmResponse { fallback: bool, tokens_prompt: u32, tokens_completion: u32 },
    /// A model call fails.
    LlmFailure,
    /// An embedding call is sent.
    EmbeddingRequest,
    /// A plan is made (its id is the event's).
    Plan { agent: AgentId, level: PlanLevel },
    /// An action starts (its id is the event's).
    Action {
        agent: AgentId,
        description: &'a str,
        emoji: &'a str,
        address: &'a str,
        duration_secs: u32,
        plan_item: Option<PlanRef>,
    },
    /// A conversation starts (its id is the event's).
    ConversationStarted { agents: Vec<AgentId> },
    /// A turn of a conversation.
    Turn { conversation: EventId },
    /// A conversation ends.
    ConversationEnded { conversation: EventId },
    /// An agent reflects.
    Reflection { agent: AgentId },
    /// An object's state changes.
    Object { address: &'a str, state: &'a str },
    /// Money moves.
    Cash { from: AccountRef<'a>, to: AccountRef<'a>, amount_cents: i64 },
    /// The user edits a persona.
    EditPersona { agent: AgentId, persona: &'a str },
    /// The user sets an object's state.
    SetObject { address: &'a str, state: &'a str },
    /// Something goes on at a place until a moment.
    Happening { place: &'a str, text: &'a str, until_secs: u64 },
    /// Another intervention.
    Intervened,
    /// A mayor posts a job.
    Job { sector: &'a str, title: &'a str, cents_per_hour: i64 },
    /// A mayor sets a sector's wage.
    Wage { sector: &'a str, cents_per_hour: i64 },
    /// A mayor's other acts (a business founded, a meeting called, a task given).
    MayorActed,
    /// An agent takes a posted job.
    JobTaken { agent: AgentId, job: EventId },
    /// Nothing the fold keeps.
    Nothing,
    /// A kind (or schema) this build does not know.
    Unknown,
}

fn account(a: &Account) -> AccountRef<'_> {
    match a {
        Account::Agent(id) => AccountRef::Agent(*id),
        Account::Shop(s) => AccountRef::Shop(s),
        Account::World => AccountRef::World,
        Account::Town => AccountRef::Town,
    }
}

/// The change a decoded body makes.
pub fn from_body(body: &Body) -> Change<'_> {
    match body {
        Body::BranchCreated(b) => Change::Branch { name: &b.name },
        Body::RunConfigured(c) => {
            Change::Config { seed: c.seed, seconds_per_step: c.seconds_per_step }
        }
        Body::TownLoaded(t) => Change::Town { name: &t.name },
        Body::AgentJoined(j) => Change::Joined {
            agent: j.agent,
            name: &j.name,
            persona: &j.persona,
            tile: j.tile,
            cash_cents: j.cash_cents,
        },
        Body::ClockStepped(c) => Change::Step { step: c.step },
        Body::Moved(m) => Change::Moved { agent: m.agent, to: m.to },
        Body::Perceived(p) => Change::Perceived { agent: p.agent, n: p.percepts.len() as u64 },
        Body::MemoryAdded(m) => {
            Change::Memory { agent: m.agent, kind: m.kind, importance: m.importance }
        }
        Body::Retrieved(r) => Change::Retrieved {
            agent: r.agent,
            memories: Ids::Owned(r.hits.iter().map(|h| h.memory).collect()),
        },
        Body::LlmRequested(r) => Change::LlmRequest { model: &r.model },
        Body::LlmResponded(r) => Change::LlmResponse {
            fallback: r.fallback,
            tokens_prompt: r.tokens_prompt,
            tokens_completion: r.tokens_completion,
        },
        Body::LlmFailed(_) => Change::LlmFailure,
        Body::EmbeddingRequested(_) => Change::EmbeddingRequest,
        Body::PlanMade(p) => Change::Plan { agent: p.agent, level: p.level },
        Body::ActionStarted(a) => Change::Action {
            agent: a.agent,
            description: &a.description,
            emoji: &a.emoji,
            address: &a.address,
            duration_secs: a.duration_secs,
            plan_item: a.plan_item,
        },
        Body::ConversationStarted(c) => Change::ConversationStarted { agents: c.agents.clone() },
        Body::DialogueTurn(t) => Change::Turn { conversation: t.conversation },
        Body::ConversationEnded(e) => Change::ConversationEnded { conversation: e.conversation },
        Body::ReflectionStarted(r) => Change::Reflection { agent: r.agent },
        Body::ObjectStateChanged(o) => Change::Object { address: &o.address, state: &o.state },
        Body::CashMoved(c) => Change::Cash {
            from: account(&c.from),
            to: account(&c.to),
            amount_cents: c.amount_cents,
        },
        Body::Intervened(i) => match &i.intervention {
            Intervention::EditPersona { agent, persona } => {
                Change::EditPersona { agent: *agent, persona }
            }
            Intervention::SetObjectState { address, state } => Change::SetObject { address, state },
            Intervention::Happening { place, text, until_secs } => {
                Change::Happening { place, text, until_secs: *until_secs }
            }
            _ => Change::Intervened,
        },
        Body::MayorActed(m) => match &m.act {
            MayorAct::PostJob { sector, title, cents_per_hour } => {
                Change::Job { sector, title, cents_per_hour: *cents_per_hour }
            }
            MayorAct::SetWage { sector, cents_per_hour } => {
                Change::Wage { sector, cents_per_hour: *cents_per_hour }
            }
            _ => Change::MayorActed,
        },
        Body::JobTaken(j) => Change::JobTaken { agent: j.agent, job: j.job },
        // A branch's new name is the store's and the recording's business, not the town's:
        // a rename changes nothing folded, so no state hash depends on a branch's name
        // beyond the one its `BranchCreated` gave.
        Body::EmbeddingReturned(_)
        | Body::InterviewAnswered(_)
        | Body::SeedDrawn(_)
        | Body::BranchRenamed(_)
        // A commitment is the agent's to keep (its plans), not a change to the town.
        | Body::CommitmentMade(_) => Change::Nothing,
        Body::Unknown { .. } => Change::Unknown,
    }
}

// Prefixes of schema 1: each mirrors, in order, a prefix of its body's fields. Skipped
// strings are `&[u8]` (the same wire form as a string, without the UTF-8 check).
mod v1 {
    use super::*;

    #[derive(Deserialize)]
    pub struct BranchCreated<'a> {
        #[serde(borrow)]
        pub name: &'a str,
    }
    #[derive(Deserialize)]
    pub struct RunConfigured<'a> {
        pub _engine_version: &'a [u8],
        pub seed: u64,
        pub seconds_per_step: u32,
    }
    #[derive(Deserialize)]
    pub struct TownLoaded<'a> {
        pub name: &'a str,
    }
    #[derive(Deserialize)]
    pub struct AgentJoined<'a> {
        pub agent: AgentId,
        pub name: &'a str,
        pub persona: &'a str,
        #[serde(borrow)]
        pub _traits: Vec<(&'a [u8], &'a [u8])>,
        pub tile: Tile,
        pub cash_cents: i64,
    }
    #[derive(Deserialize)]
    pub struct ClockStepped {
        pub step: u64,
    }
    #[derive(Deserialize)]
    pub struct Perceived {
        pub agent: AgentId,
        pub n_percepts: u64,
    }
    #[derive(Deserialize)]
    pub struct MemoryAdded<'a> {
        pub agent: AgentId,
        pub kind: MemoryKind,
        pub _description: &'a [u8],
        pub importance: u8,
    }
    #[derive(Deserialize)]
    pub struct LlmRequested<'a> {
        pub _request_hash: [u8; 32],
        pub _purpose: &'a [u8],
        pub _agent: Option<AgentId>,
        pub _backend: &'a [u8],
        pub _server: &'a [u8],
        pub model: &'a str,
    }
    #[derive(Deserialize)]
    pub struct LlmResponded<'a> {
        pub _request_hash: [u8; 32],
        pub _text: &'a [u8],
        pub _parsed: Option<&'a [u8]>,
        pub fallback: bool,
        pub tokens_prompt: u32,
        pub tokens_completion: u32,
    }
    #[derive(Deserialize)]
    pub struct PlanMade {
        pub agent: AgentId,
        pub level: PlanLevel,
    }
    #[derive(Deserialize)]
    pub struct ActionStarted<'a> {
        pub agent: AgentId,
        pub description: &'a str,
        pub emoji: &'a str,
        pub address: &'a str,
        pub duration_secs: u32,
        pub plan_item: Option<PlanRef>,
    }
    #[derive(Deserialize)]
    pub struct ConversationStarted {
        pub agents: Vec<AgentId>,
    }
    #[derive(Deserialize)]
    pub struct ConversationRef {
        pub conversation: EventId,
    }
    #[derive(Deserialize)]
    pub struct AgentOnly {
        pub agent: AgentId,
    }
    #[derive(Deserialize)]
    pub struct ObjectStateChanged<'a> {
        pub address: &'a str,
        pub state: &'a str,
    }
    #[derive(Deserialize)]
    pub struct CashMoved<'a> {
        #[serde(borrow)]
        pub from: AccountRef<'a>,
        #[serde(borrow)]
        pub to: AccountRef<'a>,
        pub amount_cents: i64,
    }
    /// `Intervention`'s variants, in order.
    #[derive(Deserialize)]
    pub enum Intervention<'a> {
        InnerVoice { _agent: AgentId, _text: &'a [u8] },
        Interview { _agent: AgentId, _question: &'a [u8], _remember: bool },
        EditPersona { agent: AgentId, persona: &'a str },
        AddBuilding { _template: &'a [u8], _name: &'a [u8], _origin: Tile },
        SetObjectState { address: &'a str, state: &'a str },
        AddAgent { _name: &'a [u8], _persona: &'a [u8] },
        Happening { place: &'a str, text: &'a str, until_secs: u64 },
        SetModel { _agent: AgentId, _model: &'a [u8] },
    }
    #[derive(Deserialize)]
    pub struct MayorActed<'a> {
        pub _mayor: Option<AgentId>,
        #[serde(borrow)]
        pub act: MayorAct<'a>,
    }
    /// `MayorAct`'s variants, in order.
    #[derive(Deserialize)]
    pub enum MayorAct<'a> {
        PostJob {
            sector: &'a str,
            title: &'a str,
            cents_per_hour: i64,
        },
        Found {
            _template: &'a [u8],
            _name: &'a [u8],
            _site: &'a [u8],
            _cost_cents: i64,
        },
        SetWage {
            sector: &'a str,
            cents_per_hour: i64,
        },
        CallMeeting {
            _what: &'a [u8],
            _place: &'a [u8],
            _start_secs: u64,
            _duration_secs: u32,
        },
        AssignTask {
            _agent: AgentId,
            _what: &'a [u8],
            _place: &'a [u8],
            _start_secs: u64,
            _duration_secs: u32,
        },
    }
    #[derive(Deserialize)]
    pub struct JobTaken {
        pub agent: AgentId,
        pub job: EventId,
    }
}

fn prefix<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
    postcard::take_from_bytes(bytes).ok().map(|(value, _)| value)
}

/// The change stored body bytes make, read through the prefixes; `None` when this build has
/// no prefix for the kind and schema (or the bytes do not decode): decode the body instead.
pub fn from_stored(kind: u16, schema: u16, body: &[u8]) -> Option<Change<'_>> {
    // Later schemas of these kinds only added fields after the ones their prefixes read (or
    // their prefixes read none), so they read the same way.
    let same_prefix = match kind {
        10 => schema <= 4,
        // Intervened 2 and 3 each added a variant at the end of `Intervention`; CashMoved 2
        // one at the end of `Account`.
        11..=14 => schema <= 2,
        22 => schema <= 2,
        23 => schema <= 3,
        _ => schema == 1,
    };
    if !same_prefix {
        return None;
    }
    Some(match kind {
        1 => Change::Branch { name: prefix::<v1::BranchCreated>(body)?.name },
        2 => {
            let c = prefix::<v1::RunConfigured>(body)?;
            Change::Config { seed: c.seed, seconds_per_step: c.seconds_per_step }
        }
        3 => Change::Town { name: prefix::<v1::TownLoaded>(body)?.name },
        4 => {
            let j = prefix::<v1::AgentJoined>(body)?;
            Change::Joined {
                agent: j.agent,
                name: j.name,
                persona: j.persona,
                tile: j.tile,
                cash_cents: j.cash_cents,
            }
        }
        5 => Change::Step { step: prefix::<v1::ClockStepped>(body)?.step },
        6 => moved(body)?,
        7 => {
            let p = prefix::<v1::Perceived>(body)?;
            Change::Perceived { agent: p.agent, n: p.n_percepts }
        }
        8 => {
            let m = prefix::<v1::MemoryAdded>(body)?;
            Change::Memory { agent: m.agent, kind: m.kind, importance: m.importance }
        }
        9 => retrieved(body)?,
        10 => Change::LlmRequest { model: prefix::<v1::LlmRequested>(body)?.model },
        11 => {
            let r = prefix::<v1::LlmResponded>(body)?;
            Change::LlmResponse {
                fallback: r.fallback,
                tokens_prompt: r.tokens_prompt,
                tokens_completion: r.tokens_completion,
            }
        }
        12 => Change::LlmFailure,
        13 => Change::EmbeddingRequest,
        14 | 24 | 25 | 26 | 27 => Change::Nothing,
        15 => {
            let p = prefix::<v1::PlanMade>(body)?;
            Change::Plan { agent: p.agent, level: p.level }
        }
        16 => {
            let a = prefix::<v1::ActionStarted>(body)?;
            Change::Action {
                agent: a.agent,
                description: a.description,
                emoji: a.emoji,
                address: a.address,
                duration_secs: a.duration_secs,
                plan_item: a.plan_item,
            }
        }
        17 => {
            Change::ConversationStarted { agents: prefix::<v1::ConversationStarted>(body)?.agents }
        }
        18 => Change::Turn { conversation: prefix::<v1::ConversationRef>(body)?.conversation },
        19 => Change::ConversationEnded {
            conversation: prefix::<v1::ConversationRef>(body)?.conversation,
        },
        20 => Change::Reflection { agent: prefix::<v1::AgentOnly>(body)?.agent },
        21 => {
            let o = prefix::<v1::ObjectStateChanged>(body)?;
            Change::Object { address: o.address, state: o.state }
        }
        22 => {
            let c = prefix::<v1::CashMoved>(body)?;
            Change::Cash { from: c.from, to: c.to, amount_cents: c.amount_cents }
        }
        23 => match prefix::<v1::Intervention>(body)? {
            v1::Intervention::EditPersona { agent, persona } => {
                Change::EditPersona { agent, persona }
            }
            v1::Intervention::SetObjectState { address, state } => {
                Change::SetObject { address, state }
            }
            v1::Intervention::Happening { place, text, until_secs } => {
                Change::Happening { place, text, until_secs }
            }
            _ => Change::Intervened,
        },
        28 => match prefix::<v1::MayorActed>(body)?.act {
            v1::MayorAct::PostJob { sector, title, cents_per_hour } => {
                Change::Job { sector, title, cents_per_hour }
            }
            v1::MayorAct::SetWage { sector, cents_per_hour } => {
                Change::Wage { sector, cents_per_hour }
            }
            _ => Change::MayorActed,
        },
        29 => {
            let j = prefix::<v1::JobTaken>(body)?;
            Change::JobTaken { agent: j.agent, job: j.job }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hamlet_log::event::{decode_stored, KNOWN_KINDS};
    use hamlet_log::samples::{one_body_per_kind, stored_samples};

    /// The prefixes read what the full decoding reads, for every kind.
    use proptest::prelude::*;

    proptest! {
        /// The hand-read prefixes read what postcard reads, for any values, and refuse
        /// rather than misread bytes cut short.
        #[test]
        fn hand_read_prefixes_agree_with_postcard(
            agent in any::<u32>(), x in any::<u16>(), y in any::<u16>(),
            query in ".{0,40}", n_hits in 0..40usize, seed in any::<u8>(),
        ) {
            use hamlet_log::event::{Moved, RetrievalHit, Retrieved};
            let bodies = [
                Body::Moved(Moved { agent: AgentId(agent), from: Tile { x: y, y: x }, to: Tile { x, y } }),
                Body::Retrieved(Retrieved {
                    agent: AgentId(agent),
                    query,
                    weights: [0.5, 3.0, 2.0],
                    decay: 0.995,
                    hits: (0..n_hits)
                        .map(|i| RetrievalHit {
                            memory: EventId([seed.wrapping_add(i as u8); 32]),
                            recency: 0.1, importance: 0.2, relevance: 0.3, score: 0.6,
                        })
                        .collect(),
                }),
            ];
            for body in bodies {
                let stored = hamlet_log::event::NewEvent::new(0, body.clone()).encode(0);
                let (kind, schema, _, bytes) = hamlet_log::event::parse_header(&stored).unwrap();
                prop_assert_eq!(from_stored(kind, schema, bytes).unwrap(), from_body(&body));
                for cut in 0..bytes.len() {
                    prop_assert!(from_stored(kind, schema, &bytes[..cut]).is_none(), "cut at {}", cut);
                }
            }
        }
    }

    fn varint_of(bits: u32, bytes: &[u8]) -> Option<u64> {
        let mut p = Postcard { bytes, pos: 0 };
        match bits {
            16 => p.varint::<16>(),
            32 => p.varint::<32>(),
            _ => p.varint::<64>(),
        }
    }

    #[test]
    fn postcard_varint_rules_are_mirrored() {
        for value in [0u64, 1, 127, 128, 300, u64::from(u16::MAX), u64::from(u32::MAX), u64::MAX] {
            let cases = [
                (16, postcard::to_allocvec(&(value as u16)).unwrap(), value as u16 as u64),
                (32, postcard::to_allocvec(&(value as u32)).unwrap(), value as u32 as u64),
                (64, postcard::to_allocvec(&value).unwrap(), value),
            ];
            for (bits, bytes, expected) in cases {
                assert_eq!(varint_of(bits, &bytes), Some(expected));
            }
        }
        // Just past the largest value of each width: postcard refuses, and so must we.
        for (bits, bytes) in
            [(16u32, vec![0xff, 0xff, 0x04]), (32, vec![0xff, 0xff, 0xff, 0xff, 0x10])]
        {
            let theirs = if bits == 16 {
                postcard::from_bytes::<u16>(&bytes).is_err()
            } else {
                postcard::from_bytes::<u32>(&bytes).is_err()
            };
            assert!(theirs);
            assert_eq!(varint_of(bits, &bytes), None, "{bits} bits");
        }
        let too_long = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(postcard::from_bytes::<u64>(&too_long).is_err());
        assert_eq!(varint_of(64, &too_long), None);
    }

    #[test]
    fn prefixes_agree_with_decoded_bodies() {
        assert_eq!(stored_samples().len(), KNOWN_KINDS.len());
        for stored in stored_samples() {
            let (_, body) = decode_stored(&stored).unwrap();
            let (kind, schema, _, bytes) = hamlet_log::event::decode_header(&stored).unwrap();
            let read = from_stored(kind, schema, bytes)
                .unwrap_or_else(|| panic!("no prefix of kind {kind}"));
            assert_eq!(read, from_body(&body), "kind {kind}");
        }
        // Every variant of the nested enums too.
        use hamlet_log::event::{Intervened, NewEvent};
        let interventions = [
            Intervention::InnerVoice { agent: AgentId(1), text: "a".into() },
            Intervention::Interview { agent: AgentId(1), question: "q".into(), remember: true },
            Intervention::EditPersona { agent: AgentId(2), persona: "p".into() },
            Intervention::AddBuilding {
                template: "t".into(),
                name: "n".into(),
                origin: Tile { x: 1, y: 2 },
            },
            Intervention::SetObjectState { address: "a".into(), state: "s".into() },
            Intervention::AddAgent { name: "n".into(), persona: "p".into() },
            Intervention::Happening { place: "p".into(), text: "t".into(), until_secs: 9 },
            Intervention::SetModel { agent: AgentId(2), model: "small".into() },
        ];
        for intervention in interventions {
            let body = Body::Intervened(Intervened { intervention });
            let stored = NewEvent::new(0, body.clone()).encode(0);
            let (kind, schema, _, bytes) = hamlet_log::event::decode_header(&stored).unwrap();
            assert_eq!(from_stored(kind, schema, bytes).unwrap(), from_body(&body));
        }
        let acts = [
            MayorAct::PostJob { sector: "s".into(), title: "t".into(), cents_per_hour: 5 },
            MayorAct::Found {
                template: "t".into(),
                name: "n".into(),
                site: "x".into(),
                cost_cents: 9,
            },
            MayorAct::SetWage { sector: "s".into(), cents_per_hour: 7 },
            MayorAct::CallMeeting {
                what: "w".into(),
                place: "p".into(),
                start_secs: 1,
                duration_secs: 2,
            },
            MayorAct::AssignTask {
                agent: AgentId(1),
                what: "w".into(),
                place: "p".into(),
                start_secs: 1,
                duration_secs: 2,
            },
        ];
        for act in acts {
            let body = Body::MayorActed(hamlet_log::event::MayorActed { mayor: None, act });
            let stored = NewEvent::new(0, body.clone()).encode(0);
            let (kind, schema, _, bytes) = hamlet_log::event::decode_header(&stored).unwrap();
            assert_eq!(from_stored(kind, schema, bytes).unwrap(), from_body(&body));
        }
        // A payment to or from the treasury (CashMoved schema 2).
        let body = Body::CashMoved(hamlet_log::event::CashMoved {
            from: Account::Town,
            to: Account::Agent(AgentId(1)),
            amount_cents: 3,
            reason: "wage".into(),
        });
        let stored = NewEvent::new(0, body.clone()).encode(0);
        let (kind, schema, _, bytes) = hamlet_log::event::decode_header(&stored).unwrap();
        assert_eq!(schema, 2);
        assert_eq!(from_stored(kind, schema, bytes).unwrap(), from_body(&body));
        let _ = one_body_per_kind();
    }
}
