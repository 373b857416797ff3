//! The vocabulary of a town's history: every [`Body`] an [`Event`] can carry, and how an
//! event is stored.
//!
//! # Stored bytes
//! ```text
//! kind: u16 LE | schema: u16 LE | postcard(Header { seq, sim_time_secs, causes }) | postcard(body)
//! ```
//! The id is computed over exactly these bytes ([`EventId::chain`]). A reader that does not
//! know a kind (or a newer schema of it) still reads the header and keeps the event as
//! [`Body::Unknown`]: it can verify and count it, and the fold skips it.
//!
//! # Growth rules
//! A kind's tag never changes and is never reused. A body struct never changes shape
//! within a schema version; a change is a new version, and [`decode_body`] upcasts every
//! older version it has ever written. Nested enums only grow at the end (postcard stores a
//! variant as its position). No `HashMap` anywhere: encoding must be canonical.
//!
//! # Which time is which?
//! * `seq`: position on a branch, 0-based, counted from the root of its ancestry.
//! * `sim_time_secs`: simulated seconds since midnight of day 0, chosen by the engine.
//! * `latency_ms`: wall-clock length of an LLM call; recorded data, never a fold input.

use serde::{Deserialize, Serialize};

use crate::id::{BranchId, EventId};

/// The schema version a kind is written with today: 1, except for kinds that have grown.
/// Readers decode every version up to this one and upcast the older ones.
pub const fn schema_version(kind: u16) -> u16 {
    match kind {
        // LlmRequested v2 added the structured form the answer was asked in; v3 the items a
        // call rates from the model's probabilities; v4 the texts whose words an answer
        // should not say again.
        10 => 4,
        // LlmResponded v2 added the probabilities a rating was read from.
        11 => 2,
        // LlmFailed v2: the same fields, and a new kind of failure (`FormRefused`) that a
        // schema-1 reader would not know.
        12 => 2,
        // EmbeddingRequested v2 added the purpose, the agent and the server.
        13 => 2,
        // EmbeddingReturned v2 added whether the vectors were pooled from per-token ones.
        14 => 2,
        // CashMoved v2: the same shape, and a new account (`Town`, the treasury a mayor
        // spends) that a schema-1 reader would not know. Only a payment naming it is written
        // at v2 ([`stored_schema`]), so every other payment keeps its bytes and its id.
        22 => 2,
        // Intervened v2: the same shape, and a new intervention (`Happening`) that a
        // schema-1 reader would not know; v3 another (`SetModel`).
        23 => 3,
        _ => 1,
    }
}

/// The schema an event's body is written with: its kind's [`schema_version`], except a
/// `CashMoved` that names no [`Account::Town`], written at schema 1 as before the treasury
/// was (so a re-run of an older recording writes its payments byte for byte).
pub fn stored_schema(body: &Body) -> u16 {
    match body {
        Body::CashMoved(c) if c.from != Account::Town && c.to != Account::Town => 1,
        other => schema_version(other.kind()),
    }
}

/// Bytes before the postcard header: kind tag and schema version.
pub const PREFIX_LEN: usize = 4;

/// An agent, numbered in the order it joined the town.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AgentId(pub u32);

/// A tile of the town's grid.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub struct Tile {
    /// Column, from the west edge.
    pub x: u16,
    /// Row, from the north edge.
    pub y: u16,
}

/// The envelope fields that are part of the stored bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Position on the branch, 0-based from the root of its ancestry.
    pub seq: u64,
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    /// The events that led to this one (memories retrieved, the plan item, the LLM call).
    pub causes: Vec<EventId>,
}

/// An event as the log holds it: its envelope and its decoded body.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The chained hash of `parent` and the stored bytes.
    pub id: EventId,
    /// The previous event on this branch's ancestry ([`EventId::NONE`] for the first).
    pub parent: EventId,
    /// The branch whose chain holds the event.
    pub branch: BranchId,
    /// Position, simulated time and causes.
    pub header: Header,
    /// What happened.
    pub body: Body,
}

impl Event {
    /// Position on the branch.
    pub fn seq(&self) -> u64 {
        self.header.seq
    }
    /// Simulated seconds since midnight of day 0.
    pub fn sim_time_secs(&self) -> u64 {
        self.header.sim_time_secs
    }
}

/// An event before it is committed: the store gives it its seq, parent and id.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    /// The events that led to this one.
    pub causes: Vec<EventId>,
    /// What happened.
    pub body: Body,
}

impl NewEvent {
    /// An event with no causes.
    pub fn new(sim_time_secs: u64, body: Body) -> NewEvent {
        NewEvent { sim_time_secs, causes: Vec::new(), body }
    }

    /// Encodes the stored bytes for position `seq`.
    pub fn encode(&self, seq: u64) -> Vec<u8> {
        encode_stored(
            &Header { seq, sim_time_secs: self.sim_time_secs, causes: self.causes.clone() },
            &self.body,
        )
    }
}

/// Encodes the stored bytes of an event.
///
/// # Panics
/// On [`Body::Unknown`], which is only ever read, never written: writing one would store
/// bytes this build cannot vouch for.
pub fn encode_stored(header: &Header, body: &Body) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(&body.kind().to_le_bytes());
    out.extend_from_slice(&stored_schema(body).to_le_bytes());
    out = postcard::to_extend(header, out).unwrap_or_else(|e| panic!("header encodes: {e}"));
    body.encode_into(out)
}

/// What went wrong decoding one stored event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer than the four prefix bytes.
    #[error("stored event is {len_bytes} bytes, shorter than its 4-byte kind and schema prefix")]
    TooShort {
        /// Length found.
        len_bytes: usize,
    },
    /// Schema version 0 never existed; one flipped bit turns 1 into 0.
    #[error("stored event of kind {kind} has schema version 0, which no writer uses")]
    SchemaZero {
        /// The kind tag.
        kind: u16,
    },
    /// The header does not decode.
    #[error("event header does not decode: {0}")]
    Header(postcard::Error),
    /// The body of a known kind does not decode.
    #[error("body of kind {kind} ({name}) schema {schema} does not decode: {error}")]
    Body {
        /// The kind tag.
        kind: u16,
        /// The kind's name.
        name: &'static str,
        /// Its schema version.
        schema: u16,
        /// postcard's complaint.
        error: postcard::Error,
    },
    /// Bytes left over after the body.
    #[error("body of kind {kind} ({name}) leaves {extra} bytes undecoded")]
    Trailing {
        /// The kind tag.
        kind: u16,
        /// The kind's name.
        name: &'static str,
        /// Bytes left.
        extra: usize,
    },
}

/// The envelope fields of stored bytes, borrowed: the causes stay raw (32 bytes each) until
/// asked for. Reading it allocates nothing, which matters on the fold's hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    /// Position on the branch.
    pub seq: u64,
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    // Invariant: a whole number of 32-byte ids.
    causes: &'a [u8],
}

impl HeaderRef<'_> {
    /// How many causes.
    pub fn n_causes(&self) -> usize {
        self.causes.len() / 32
    }

    /// The causes, in order.
    pub fn causes(&self) -> impl Iterator<Item = EventId> + '_ {
        self.causes.chunks_exact(32).filter_map(|c| c.try_into().ok()).map(EventId)
    }

    /// The owned header.
    pub fn to_header(&self) -> Header {
        Header { seq: self.seq, sim_time_secs: self.sim_time_secs, causes: self.causes().collect() }
    }
}

/// A postcard varint (LEB128) of a u64, under postcard's own rules: at most 10 bytes, and a
/// 10th byte of at most 1.
fn varint_u64(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    for i in 0..10 {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        out |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return (i < 9 || byte <= 1).then_some(out);
        }
    }
    None
}

/// Splits stored bytes into kind, schema, the borrowed header and the body's bytes. The
/// header is read by hand (it is postcard's encoding of [`Header`]: a test holds the two
/// equal), because it is read for every event.
pub fn parse_header(stored: &[u8]) -> Result<(u16, u16, HeaderRef<'_>, &[u8]), DecodeError> {
    let (Some(kind), Some(schema)) = (stored.get(0..2), stored.get(2..4)) else {
        return Err(DecodeError::TooShort { len_bytes: stored.len() });
    };
    let kind = u16::from_le_bytes([kind[0], kind[1]]);
    let schema = u16::from_le_bytes([schema[0], schema[1]]);
    if schema == 0 {
        return Err(DecodeError::SchemaZero { kind });
    }
    let bad = || DecodeError::Header(postcard::Error::DeserializeUnexpectedEnd);
    let mut pos = PREFIX_LEN;
    let seq = varint_u64(stored, &mut pos).ok_or_else(bad)?;
    let sim_time_secs = varint_u64(stored, &mut pos).ok_or_else(bad)?;
    let n = varint_u64(stored, &mut pos).ok_or_else(bad)?;
    let len = usize::try_from(n).ok().and_then(|n| n.checked_mul(32)).ok_or_else(bad)?;
    let end = pos.checked_add(len).ok_or_else(bad)?;
    let causes = stored.get(pos..end).ok_or_else(bad)?;
    let body = stored.get(end..).ok_or_else(bad)?;
    Ok((kind, schema, HeaderRef { seq, sim_time_secs, causes }, body))
}

/// Splits stored bytes into kind, schema, header and the body's bytes.
pub fn decode_header(stored: &[u8]) -> Result<(u16, u16, Header, &[u8]), DecodeError> {
    parse_header(stored)
        .map(|(kind, schema, header, body)| (kind, schema, header.to_header(), body))
}

/// Decodes stored bytes into header and body, upcasting older schema versions.
pub fn decode_stored(stored: &[u8]) -> Result<(Header, Body), DecodeError> {
    let (kind, schema, header, body) = decode_header(stored)?;
    Ok((header, decode_body(kind, schema, body)?))
}

fn take_exact<'a, T: Deserialize<'a>>(
    kind: u16,
    schema: u16,
    bytes: &'a [u8],
) -> Result<T, DecodeError> {
    let name = kind_name(kind);
    let (value, rest) = postcard::take_from_bytes::<T>(bytes)
        .map_err(|error| DecodeError::Body { kind, name, schema, error })?;
    if !rest.is_empty() {
        return Err(DecodeError::Trailing { kind, name, extra: rest.len() });
    }
    Ok(value)
}

/// What serialising a body of an unknown kind gives.
#[derive(Serialize)]
struct UnknownBody {
    kind: u16,
    schema: u16,
}

macro_rules! bodies {
    ($( $(#[$doc:meta])* $tag:literal $variant:ident($ty:ty), )*) => {
        /// What an event says happened. Each variant's tag is fixed forever.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Body {
            $( $(#[$doc])* $variant($ty), )*
            /// A kind (or schema version) this build does not know: kept so that it can
            /// be verified, counted and skipped.
            Unknown {
                /// The kind tag.
                kind: u16,
                /// Its schema version.
                schema: u16,
            },
        }

        impl Body {
            /// The kind tag stored ahead of the body.
            pub fn kind(&self) -> u16 {
                match self {
                    $( Body::$variant(_) => $tag, )*
                    Body::Unknown { kind, .. } => *kind,
                }
            }

            fn encode_into(&self, out: Vec<u8>) -> Vec<u8> {
                let encoded = match self {
                    $( Body::$variant(inner) => postcard::to_extend(inner, out), )*
                    Body::Unknown { kind, .. } => {
                        panic!("an event of unknown kind {kind} is never written")
                    }
                };
                encoded.unwrap_or_else(|e| panic!("event body encodes: {e}"))
            }
        }

        /// A body serialises as its own fields, with no tag (the kind travels beside it, as
        /// in `hamlet log --format jsonl`); one of an unknown kind as `{kind, schema}`.
        /// The log never stores this: stored bytes come from `encode_into`.
        impl Serialize for Body {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Body::$variant(inner) => inner.serialize(s), )*
                    Body::Unknown { kind, schema } => {
                        UnknownBody { kind: *kind, schema: *schema }.serialize(s)
                    }
                }
            }
        }

        /// Every kind tag this build knows, in tag order.
        pub const KNOWN_KINDS: &[u16] = &[$($tag),*];

        /// The name of a kind, as `hamlet log --kind` takes it ("unknown" if not known).
        pub fn kind_name(kind: u16) -> &'static str {
            match kind {
                $( $tag => stringify!($variant), )*
                _ => "unknown",
            }
        }

        /// The kind tag for a name, case-insensitively.
        pub fn kind_by_name(name: &str) -> Option<u16> {
            $( if name.eq_ignore_ascii_case(stringify!($variant)) { return Some($tag); } )*
            None
        }

        /// Decodes a body of `kind` written with schema version `schema`.
        ///
        /// Upcasting lives here: when a kind gains version 2, version 1 bytes are decoded
        /// into the old struct and converted. Versions newer than this build become
        /// [`Body::Unknown`].
        pub fn decode_body(kind: u16, schema: u16, bytes: &[u8]) -> Result<Body, DecodeError> {
            if schema > schema_version(kind) {
                return Ok(Body::Unknown { kind, schema });
            }
            match (kind, schema) {
                (10, 1) => take_exact::<LlmRequestedV1>(kind, schema, bytes).map(|v1| {
                    Body::LlmRequested(LlmRequestedV3::from(LlmRequestedV2::from(v1)).into())
                }),
                (10, 2) => take_exact::<LlmRequestedV2>(kind, schema, bytes)
                    .map(|v2| Body::LlmRequested(LlmRequestedV3::from(v2).into())),
                (10, 3) => take_exact::<LlmRequestedV3>(kind, schema, bytes)
                    .map(|v3| Body::LlmRequested(v3.into())),
                (11, 1) => take_exact::<LlmRespondedV1>(kind, schema, bytes)
                    .map(|v1| Body::LlmResponded(v1.into())),
                (13, 1) => take_exact::<EmbeddingRequestedV1>(kind, schema, bytes)
                    .map(|v1| Body::EmbeddingRequested(v1.into())),
                (14, 1) => take_exact::<EmbeddingReturnedV1>(kind, schema, bytes)
                    .map(|v1| Body::EmbeddingReturned(v1.into())),
                $( ($tag, _) => take_exact::<$ty>(kind, schema, bytes).map(Body::$variant), )*
                _ => Ok(Body::Unknown { kind, schema }),
            }
        }
    };
}

bodies! {
    /// The first event of every branch; the branch's id is this event's id.
    1 BranchCreated(BranchCreated),
    /// The run's configuration: seed, step length, engine version, settings.
    2 RunConfigured(RunConfigured),
    /// The town definition the run started from, verbatim.
    3 TownLoaded(TownLoaded),
    /// An agent enters the town.
    4 AgentJoined(AgentJoined),
    /// The clock advanced one step; the envelope's time is the new time.
    5 ClockStepped(ClockStepped),
    /// An agent moved one tile.
    6 Moved(Moved),
    /// What an agent noticed this step.
    7 Perceived(Perceived),
    /// A memory enters an agent's memory stream; the memory's id is the event's id.
    8 MemoryAdded(MemoryAdded),
    /// A retrieval and the scores of what it returned (recorded, never recomputed).
    9 Retrieved(Retrieved),
    /// A call to a language model is sent.
    10 LlmRequested(LlmRequested),
    /// A language model answered.
    11 LlmResponded(LlmResponded),
    /// A call to a language model failed.
    12 LlmFailed(LlmFailed),
    /// Texts are sent to an embedding model.
    13 EmbeddingRequested(EmbeddingRequested),
    /// An embedding model answered.
    14 EmbeddingReturned(EmbeddingReturned),
    /// A plan, or the decomposition of one plan item.
    15 PlanMade(PlanMade),
    /// An agent starts an action.
    16 ActionStarted(ActionStarted),
    /// Two or more agents start talking.
    17 ConversationStarted(ConversationStarted),
    /// One utterance of a conversation.
    18 DialogueTurn(DialogueTurn),
    /// A conversation ends.
    19 ConversationEnded(ConversationEnded),
    /// An agent decides to reflect, and on what.
    20 ReflectionStarted(ReflectionStarted),
    /// An object's state changes.
    21 ObjectStateChanged(ObjectStateChanged),
    /// Money moves between accounts.
    22 CashMoved(CashMoved),
    /// Something the user did to the town.
    23 Intervened(Intervened),
    /// An agent answers an interview question.
    24 InterviewAnswered(InterviewAnswered),
    /// A random seed is drawn for one purpose.
    25 SeedDrawn(SeedDrawn),
    /// A branch takes a new name: appended to the branch it renames, at its head's time.
    26 BranchRenamed(BranchRenamed),
    /// An agent agreed in a conversation to be at a place at a time.
    27 CommitmentMade(CommitmentMade),
    /// The town's mayor acted: a job posted, a business founded, a wage set, a meeting
    /// called, a task assigned.
    28 MayorActed(MayorActed),
    /// An agent took a job the mayor posted.
    29 JobTaken(JobTaken),
}

/// The kind tag of [`BranchRenamed`], which readers look for to name a branch.
pub const BRANCH_RENAMED: u16 = 26;

/// The first event of a branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchCreated {
    /// The name people use for the branch ("main" for the root).
    pub name: String,
    /// The branch forked from, `None` for the root.
    pub parent_branch: Option<BranchId>,
    /// The last shared event's seq on the parent, `None` for the root.
    pub fork_seq: Option<u64>,
    /// Makes two forks of the same point with the same name distinct.
    pub nonce: u64,
}

/// A branch's new name. A branch is named by the last `BranchRenamed` among its **own**
/// events (never an ancestor's: a parent renamed before the fork point leaves the fork's
/// name alone), else by its [`BranchCreated`]. The name is not hashed into the branch id,
/// so a rename changes no id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRenamed {
    /// The name people use for the branch from this event on.
    pub name: String,
}

/// What an agent agreed to in a conversation: to be at a place at a time (an invitation
/// accepted, a meeting arranged). Its day and hour plans keep it as a fixed appointment; a
/// later commitment of the same agent that overlaps it replaces it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitmentMade {
    /// Who agreed.
    pub agent: AgentId,
    /// The `ConversationStarted` event of the conversation where it was agreed.
    pub conversation: EventId,
    /// Whom with: the conversation's other participants.
    pub with: Vec<AgentId>,
    /// What, in words ("goes to Delphine's party at Marigold café").
    pub what: String,
    /// Where: `sector` or `sector:arena`.
    pub address: String,
    /// When it starts, in simulated seconds since midnight of day 0.
    pub start_secs: u64,
    /// How long it lasts, in seconds.
    pub duration_secs: u32,
}

/// The town's mayor acted (a town file's `[mayor]`): an agent, or the person at the viewer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MayorActed {
    /// The mayor: an agent, or `None` for the person at the viewer.
    pub mayor: Option<AgentId>,
    /// What the mayor did.
    pub act: MayorAct,
}

/// What a mayor does. Variants only grow at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MayorAct {
    /// A job offered at a sector, at a wage; open until an agent takes it.
    PostJob {
        /// Where the work is: a sector.
        sector: String,
        /// The job, in words ("baker").
        title: String,
        /// The wage, paid from the town's treasury for each hour worked.
        cents_per_hour: i64,
    },
    /// A business founded from a template (an existing sector, copied) on a free site,
    /// paid for from the town's treasury.
    Found {
        /// The sector copied.
        template: String,
        /// The new sector's name.
        name: String,
        /// The site it stands on (a town file's `[[mayor.site]]`).
        site: String,
        /// What it cost.
        cost_cents: i64,
    },
    /// The wage of every job at a sector, from now on.
    SetWage {
        /// The sector.
        sector: String,
        /// The wage per hour worked.
        cents_per_hour: i64,
    },
    /// A meeting everyone is called to.
    CallMeeting {
        /// What it is about, in words.
        what: String,
        /// Where: a sector or `sector:arena`.
        place: String,
        /// When it starts, in simulated seconds since midnight of day 0.
        start_secs: u64,
        /// How long it lasts, in seconds.
        duration_secs: u32,
    },
    /// A task given to one agent, to do at a place and time.
    AssignTask {
        /// To whom.
        agent: AgentId,
        /// What, in words.
        what: String,
        /// Where: a sector or `sector:arena`.
        place: String,
        /// When it starts, in simulated seconds since midnight of day 0.
        start_secs: u64,
        /// How long it lasts, in seconds.
        duration_secs: u32,
    },
}

/// An agent took a job a mayor posted: the sector is its workplace from now on, and its
/// hours there are paid the job's wage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobTaken {
    /// Who took it.
    pub agent: AgentId,
    /// The `MayorActed` event that posted it.
    pub job: EventId,
}

/// The run's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunConfigured {
    /// The version of the engine that started the run.
    pub engine_version: String,
    /// The run's seed: every random stream derives from it.
    pub seed: u64,
    /// Simulated seconds per step.
    pub seconds_per_step: u32,
    /// Every other setting, sorted by key.
    pub settings: Vec<(String, String)>,
}

/// The town definition, verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TownLoaded {
    /// The town's name.
    pub name: String,
    /// The definition's format ("toml").
    pub format: String,
    /// The definition's text.
    pub source: String,
}

/// An agent enters the town.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentJoined {
    /// Its number.
    pub agent: AgentId,
    /// Its name.
    pub name: String,
    /// Its `;`-separated seed paragraph.
    pub persona: String,
    /// Named traits and strategies ("memory" = "full", …), sorted by key.
    pub traits: Vec<(String, String)>,
    /// Where it appears.
    pub tile: Tile,
    /// Its cash, in cents.
    pub cash_cents: i64,
}

/// The clock advanced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockStepped {
    /// The step number reached.
    pub step: u64,
}

/// An agent moved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moved {
    /// Who.
    pub agent: AgentId,
    /// From where.
    pub from: Tile,
    /// To where.
    pub to: Tile,
}

/// One thing noticed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percept {
    /// An agent's name, an object's address (`sector:arena:object`), or, for a happening,
    /// its place with the object left empty (`sector:arena:`, or `sector::` for a whole
    /// sector).
    pub subject: String,
    /// What it is doing or its state, in words.
    pub description: String,
    /// Where it was.
    pub tile: Tile,
}

/// What an agent noticed this step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Perceived {
    /// Who noticed.
    pub agent: AgentId,
    /// What, nearest first, at most the attention bandwidth.
    pub percepts: Vec<Percept>,
}

/// The kinds of memory in a memory stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MemoryKind {
    /// A statement of the persona's seed paragraph.
    Seed,
    /// Something perceived (the paper's "event" memory).
    Observation,
    /// Something said in a conversation.
    Chat,
    /// An insight drawn by reflection (the paper's "thought").
    Reflection,
    /// A plan.
    Plan,
}

/// A memory enters a memory stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryAdded {
    /// Whose memory.
    pub agent: AgentId,
    /// What kind of memory.
    pub kind: MemoryKind,
    /// The memory in words.
    pub description: String,
    /// Poignancy, 1 to 10, as the LLM rated it (or a marked fallback).
    pub importance: u8,
    /// The embedding of `description`, copied verbatim from the embedding model.
    pub embedding: Vec<f32>,
    /// For a reflection: the memories it cites.
    pub evidence: Vec<EventId>,
}

/// One memory a retrieval returned, with the scores it was ranked by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalHit {
    /// The memory (its `MemoryAdded` event).
    pub memory: EventId,
    /// Normalised recency, 0 to 1.
    pub recency: f32,
    /// Normalised importance, 0 to 1.
    pub importance: f32,
    /// Normalised relevance, 0 to 1.
    pub relevance: f32,
    /// The weighted sum the ranking used.
    pub score: f32,
}

/// A retrieval. Scores are stored, not recomputed: they depend on `powf` and embeddings,
/// and a viewer on another machine must show the numbers the agent actually used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retrieved {
    /// Whose memory stream.
    pub agent: AgentId,
    /// The query, in words.
    pub query: String,
    /// Weights of recency, importance and relevance.
    pub weights: [f32; 3],
    /// The recency decay per simulated hour.
    pub decay: f32,
    /// What was returned, best first; each memory's last-accessed time becomes the
    /// event's time.
    pub hits: Vec<RetrievalHit>,
}

/// A message of a chat prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// "system", "user" or "assistant".
    pub role: String,
    /// The text.
    pub content: String,
}

/// What is sent to a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Prompt {
    /// A plain completion prompt, for base models.
    Text(String),
    /// Chat messages, for instruction models.
    Chat(Vec<ChatMessage>),
}

/// A call to a language model. Secrets (API keys) never enter this event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmRequested {
    /// The blake3 hash of the canonical request: replay matches answers by it.
    #[serde(with = "crate::id::hash_hex")]
    pub request_hash: [u8; 32],
    /// Why the call is made ("importance", "day_plan", "react", …).
    pub purpose: String,
    /// For whom, if for an agent.
    pub agent: Option<AgentId>,
    /// "openai" or "local" (a replay records the backend that first answered).
    pub backend: String,
    /// The server's address without credentials, empty for an embedded model.
    pub server: String,
    /// The model asked.
    pub model: String,
    /// Sampling temperature, in thousandths.
    pub temperature_milli: u32,
    /// Top-p, in thousandths.
    pub top_p_milli: u32,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// The sampling seed sent.
    pub seed: Option<u64>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// The prompt.
    pub prompt: Prompt,
    /// The prompt template's name.
    pub template: String,
    /// The prompt template's version.
    pub template_version: u32,
    /// The blake3 hash of the answer's JSON Schema or grammar, if constrained.
    #[serde(with = "crate::id::hash_hex::option")]
    pub schema_hash: Option<[u8; 32]>,
    /// 1 for the first try, counting up on retries.
    pub attempt: u32,
    /// How the answer's structure was asked for on this try (schema 2).
    pub structured: StructuredForm,
    /// Texts rated each on its own from the model's probabilities, after the prompt (schema
    /// 3): in a [`StructuredForm::Probabilities`] call, item *i* is added to the end of the
    /// prompt's last message and the answer is read from the model's probabilities over
    /// the possible answers, without generating. Empty for every other call.
    pub items: Vec<String>,
    /// Texts whose words the answer should not say again (schema 4): for a line of
    /// dialogue, the conversation's earlier lines. The embedded model weighs those words
    /// down as it does the answer's own (a repetition penalty); a server is not told. Empty
    /// for every other call.
    pub avoid: Vec<String>,
}

/// How a call asks for a structured answer. Servers differ in what they take, so the
/// gateway steps down this list, in this order, when a server refuses a form; the answer is
/// validated the same way whatever the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StructuredForm {
    /// No structure asked for: a free-text answer.
    None,
    /// The embedded model: a grammar (GBNF) made from the schema constrains every token.
    Grammar,
    /// `response_format: {"type": "json_schema", "json_schema": {…, "strict": true}}`.
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": …}`, as several local servers
    /// take it.
    JsonObjectSchema,
    /// `response_format: {"type": "json_object"}`, with the schema and an example in the
    /// prompt.
    JsonObject,
    /// No `response_format`: the schema and an example in the prompt only.
    Prompt,
    /// Nothing generated: each of the call's items is rated from the model's probabilities
    /// over the possible answers (1 to 10), in one forward pass, and the answer is their
    /// expected value, rounded. The embedded model only.
    Probabilities,
}

impl StructuredForm {
    /// Every form, in the order of [`StructuredForm`].
    pub const ALL: [StructuredForm; 7] = [
        StructuredForm::None,
        StructuredForm::Grammar,
        StructuredForm::JsonSchema,
        StructuredForm::JsonObjectSchema,
        StructuredForm::JsonObject,
        StructuredForm::Prompt,
        StructuredForm::Probabilities,
    ];

    /// The name the config file, the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            StructuredForm::None => "none",
            StructuredForm::Grammar => "grammar",
            StructuredForm::JsonSchema => "json_schema",
            StructuredForm::JsonObjectSchema => "json_object_schema",
            StructuredForm::JsonObject => "json_object",
            StructuredForm::Prompt => "prompt",
            StructuredForm::Probabilities => "probabilities",
        }
    }

    /// The form named `name` (as [`StructuredForm::name`] spells it).
    pub fn from_name(name: &str) -> Option<StructuredForm> {
        StructuredForm::ALL.into_iter().find(|f| f.name() == name)
    }

    /// True when the prompt carries the schema and an example.
    pub fn in_prompt(self) -> bool {
        matches!(self, StructuredForm::JsonObject | StructuredForm::Prompt)
    }
}

/// [`LlmRequested`] as schema 1 wrote it, before the structured form.
#[derive(Deserialize)]
struct LlmRequestedV1 {
    request_hash: [u8; 32],
    purpose: String,
    agent: Option<AgentId>,
    backend: String,
    server: String,
    model: String,
    temperature_milli: u32,
    top_p_milli: u32,
    max_tokens: u32,
    seed: Option<u64>,
    stop: Vec<String>,
    prompt: Prompt,
    template: String,
    template_version: u32,
    schema_hash: Option<[u8; 32]>,
    attempt: u32,
}

impl From<LlmRequestedV1> for LlmRequestedV2 {
    /// Schema-1 writers asked servers with `json_schema` and the embedded model with a
    /// grammar, whenever the answer had a schema.
    fn from(v1: LlmRequestedV1) -> LlmRequestedV2 {
        let structured = match (&v1.schema_hash, v1.backend.as_str()) {
            (None, _) => StructuredForm::None,
            (Some(_), "local") => StructuredForm::Grammar,
            (Some(_), _) => StructuredForm::JsonSchema,
        };
        LlmRequestedV2 {
            request_hash: v1.request_hash,
            purpose: v1.purpose,
            agent: v1.agent,
            backend: v1.backend,
            server: v1.server,
            model: v1.model,
            temperature_milli: v1.temperature_milli,
            top_p_milli: v1.top_p_milli,
            max_tokens: v1.max_tokens,
            seed: v1.seed,
            stop: v1.stop,
            prompt: v1.prompt,
            template: v1.template,
            template_version: v1.template_version,
            schema_hash: v1.schema_hash,
            attempt: v1.attempt,
            structured,
        }
    }
}

/// [`LlmRequested`] as schema 2 wrote it, before scored items.
#[derive(Deserialize)]
struct LlmRequestedV2 {
    request_hash: [u8; 32],
    purpose: String,
    agent: Option<AgentId>,
    backend: String,
    server: String,
    model: String,
    temperature_milli: u32,
    top_p_milli: u32,
    max_tokens: u32,
    seed: Option<u64>,
    stop: Vec<String>,
    prompt: Prompt,
    template: String,
    template_version: u32,
    schema_hash: Option<[u8; 32]>,
    attempt: u32,
    structured: StructuredForm,
}

impl From<LlmRequestedV2> for LlmRequestedV3 {
    /// Schema-2 writers rated nothing from probabilities: no items.
    fn from(v2: LlmRequestedV2) -> LlmRequestedV3 {
        LlmRequestedV3 {
            request_hash: v2.request_hash,
            purpose: v2.purpose,
            agent: v2.agent,
            backend: v2.backend,
            server: v2.server,
            model: v2.model,
            temperature_milli: v2.temperature_milli,
            top_p_milli: v2.top_p_milli,
            max_tokens: v2.max_tokens,
            seed: v2.seed,
            stop: v2.stop,
            prompt: v2.prompt,
            template: v2.template,
            template_version: v2.template_version,
            schema_hash: v2.schema_hash,
            attempt: v2.attempt,
            structured: v2.structured,
            items: Vec::new(),
        }
    }
}

/// [`LlmRequested`] as schema 3 wrote it, before the texts to avoid.
#[derive(Deserialize)]
struct LlmRequestedV3 {
    request_hash: [u8; 32],
    purpose: String,
    agent: Option<AgentId>,
    backend: String,
    server: String,
    model: String,
    temperature_milli: u32,
    top_p_milli: u32,
    max_tokens: u32,
    seed: Option<u64>,
    stop: Vec<String>,
    prompt: Prompt,
    template: String,
    template_version: u32,
    schema_hash: Option<[u8; 32]>,
    attempt: u32,
    structured: StructuredForm,
    items: Vec<String>,
}

impl From<LlmRequestedV3> for LlmRequested {
    /// Schema-3 writers asked no answer to avoid any text.
    fn from(v3: LlmRequestedV3) -> LlmRequested {
        LlmRequested {
            request_hash: v3.request_hash,
            purpose: v3.purpose,
            agent: v3.agent,
            backend: v3.backend,
            server: v3.server,
            model: v3.model,
            temperature_milli: v3.temperature_milli,
            top_p_milli: v3.top_p_milli,
            max_tokens: v3.max_tokens,
            seed: v3.seed,
            stop: v3.stop,
            prompt: v3.prompt,
            template: v3.template,
            template_version: v3.template_version,
            schema_hash: v3.schema_hash,
            attempt: v3.attempt,
            structured: v3.structured,
            items: v3.items,
            avoid: Vec::new(),
        }
    }
}

/// A language model answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResponded {
    /// The request answered.
    #[serde(with = "crate::id::hash_hex")]
    pub request_hash: [u8; 32],
    /// The answer, verbatim.
    pub text: String,
    /// The answer parsed into its type, as canonical JSON; `None` if it did not parse.
    pub parsed: Option<String>,
    /// True when `parsed` is the documented fallback, not the model's answer.
    pub fallback: bool,
    /// Prompt tokens billed.
    pub tokens_prompt: u32,
    /// Completion tokens billed.
    pub tokens_completion: u32,
    /// Wall-clock latency; recorded, never a fold input.
    pub latency_ms: u32,
    /// Why generation stopped ("stop", "length").
    pub finish_reason: String,
    /// The model that answered, as the server named it.
    pub response_model: String,
    /// The server's id for the answer.
    pub response_id: String,
    /// For a [`StructuredForm::Probabilities`] call, per item, the model's probability of
    /// each possible answer (1 to 10) in ten-thousandths, summing to about 10,000; empty
    /// for a generated answer (schema 2).
    pub probabilities: Vec<Vec<u16>>,
    /// Of `tokens_prompt`, how many the model found in its cache and did not read again,
    /// as the backend reported it (0 when it does not say); recorded, never a fold input
    /// (schema 2).
    pub tokens_cached: u32,
}

/// [`LlmResponded`] as schema 1 wrote it, before probabilities.
#[derive(Deserialize)]
struct LlmRespondedV1 {
    request_hash: [u8; 32],
    text: String,
    parsed: Option<String>,
    fallback: bool,
    tokens_prompt: u32,
    tokens_completion: u32,
    latency_ms: u32,
    finish_reason: String,
    response_model: String,
    response_id: String,
}

impl From<LlmRespondedV1> for LlmResponded {
    /// Schema-1 answers were all generated.
    fn from(v1: LlmRespondedV1) -> LlmResponded {
        LlmResponded {
            request_hash: v1.request_hash,
            text: v1.text,
            parsed: v1.parsed,
            fallback: v1.fallback,
            tokens_prompt: v1.tokens_prompt,
            tokens_completion: v1.tokens_completion,
            latency_ms: v1.latency_ms,
            finish_reason: v1.finish_reason,
            response_model: v1.response_model,
            response_id: v1.response_id,
            probabilities: Vec::new(),
            tokens_cached: 0,
        }
    }
}

/// How a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureKind {
    /// No answer in time.
    Timeout,
    /// The server said 429.
    RateLimited,
    /// The server said 5xx.
    ServerError,
    /// The connection failed or dropped.
    Connection,
    /// An answer came but did not parse or validate.
    BadAnswer,
    /// The request itself was refused (4xx other than 429), or the server said why no
    /// retry can help (no embeddings loaded, an unknown model, a request it cannot parse).
    Refused,
    /// Anything else.
    Other,
    /// The server refused the structured-output form it was sent: the gateway asks again in
    /// the next form, and this is not counted as a failed try (LlmFailed schema 2).
    FormRefused,
}

/// A call to a language model failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmFailed {
    /// The request that failed.
    #[serde(with = "crate::id::hash_hex")]
    pub request_hash: [u8; 32],
    /// How.
    pub kind: FailureKind,
    /// What the backend said.
    pub message: String,
    /// Which try.
    pub attempt: u32,
    /// Wall-clock time spent; recorded, never a fold input.
    pub latency_ms: u32,
}

/// Texts sent to an embedding model (schema 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingRequested {
    /// The blake3 hash of the canonical request.
    #[serde(with = "crate::id::hash_hex")]
    pub request_hash: [u8; 32],
    /// Why ("memory", "query", …); empty in schema 1.
    pub purpose: String,
    /// For whom, if for an agent.
    pub agent: Option<AgentId>,
    /// "openai" or "local" (a replay records the backend that first answered).
    pub backend: String,
    /// The server's address without credentials, empty for an embedded model.
    pub server: String,
    /// The model asked.
    pub model: String,
    /// The texts.
    pub texts: Vec<String>,
}

/// [`EmbeddingRequested`] as schema 1 wrote it, before purpose, agent and server.
#[derive(Deserialize)]
struct EmbeddingRequestedV1 {
    request_hash: [u8; 32],
    backend: String,
    model: String,
    texts: Vec<String>,
}

impl From<EmbeddingRequestedV1> for EmbeddingRequested {
    fn from(v1: EmbeddingRequestedV1) -> EmbeddingRequested {
        EmbeddingRequested {
            request_hash: v1.request_hash,
            purpose: String::new(),
            agent: None,
            backend: v1.backend,
            server: String::new(),
            model: v1.model,
            texts: v1.texts,
        }
    }
}

/// An embedding model answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingReturned {
    /// The request answered.
    #[serde(with = "crate::id::hash_hex")]
    pub request_hash: [u8; 32],
    /// One vector per text, verbatim.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens billed.
    pub tokens: u32,
    /// Wall-clock latency; recorded, never a fold input.
    pub latency_ms: u32,
    /// True when the server answered one vector per token and these are their mean,
    /// normalised (schema 2).
    pub pooled: bool,
}

/// [`EmbeddingReturned`] as schema 1 wrote it, before `pooled`.
#[derive(Deserialize)]
struct EmbeddingReturnedV1 {
    request_hash: [u8; 32],
    vectors: Vec<Vec<f32>>,
    tokens: u32,
    latency_ms: u32,
}

impl From<EmbeddingReturnedV1> for EmbeddingReturned {
    fn from(v1: EmbeddingReturnedV1) -> EmbeddingReturned {
        EmbeddingReturned {
            request_hash: v1.request_hash,
            vectors: v1.vectors,
            tokens: v1.tokens,
            latency_ms: v1.latency_ms,
            pooled: false,
        }
    }
}

/// How fine a plan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PlanLevel {
    /// The day in 5 to 8 broad strokes.
    Day,
    /// Hour-long chunks of one stroke.
    Hour,
    /// 5- to 15-minute actions of one hour.
    Action,
}

/// One item of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// What, in words.
    pub description: String,
    /// Where: `sector:arena[:object]` in the agent's spatial memory.
    pub address: String,
    /// When it starts, in simulated seconds.
    pub start_secs: u64,
    /// How long, in simulated seconds.
    pub duration_secs: u32,
}

/// A plan item, by the event that planned it and its index there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlanRef {
    /// The `PlanMade` event.
    pub plan: EventId,
    /// The item's index in it.
    pub item: u16,
}

/// A plan or a decomposition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanMade {
    /// Whose plan.
    pub agent: AgentId,
    /// How fine.
    pub level: PlanLevel,
    /// The item decomposed, for hour and action plans.
    pub decomposes: Option<PlanRef>,
    /// The items, in time order.
    pub items: Vec<PlanItem>,
}

/// An agent starts an action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionStarted {
    /// Who.
    pub agent: AgentId,
    /// What, in words.
    pub description: String,
    /// A short emoji for the map.
    pub emoji: String,
    /// Where: `sector:arena[:object]`.
    pub address: String,
    /// How long, in simulated seconds.
    pub duration_secs: u32,
    /// The plan item it carries out, if any.
    pub plan_item: Option<PlanRef>,
}

/// Agents start talking. The conversation's id is this event's id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationStarted {
    /// Who talks, the initiator first.
    pub agents: Vec<AgentId>,
    /// Where.
    pub address: String,
}

/// One utterance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialogueTurn {
    /// The `ConversationStarted` event.
    pub conversation: EventId,
    /// Who speaks.
    pub speaker: AgentId,
    /// What is said.
    pub text: String,
    /// Whether the speaker ends the conversation with it.
    pub ends: bool,
}

/// A conversation ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationEnded {
    /// The `ConversationStarted` event.
    pub conversation: EventId,
    /// Why ("said goodbye", "turn limit", "walked away").
    pub reason: String,
}

/// An agent reflects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflectionStarted {
    /// Who.
    pub agent: AgentId,
    /// The summed importance that passed the threshold.
    pub importance_sum: u32,
    /// The salient questions asked.
    pub questions: Vec<String>,
}

/// An object's state changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStateChanged {
    /// The object's address `sector:arena:object`.
    pub address: String,
    /// The new state ("idle", "brewing coffee").
    pub state: String,
    /// The agent whose action changed it.
    pub by: Option<AgentId>,
}

/// Who holds money.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Account {
    /// An agent's purse.
    Agent(AgentId),
    /// A shop's till, by the shop's sector name.
    Shop(String),
    /// Outside the town: the documented source of wages and sink of purchases from outside.
    World,
    /// The town's treasury, which its mayor spends (since `CashMoved` schema 2).
    Town,
}

/// Money moves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CashMoved {
    /// Paid by.
    pub from: Account,
    /// Paid to.
    pub to: Account,
    /// How much, in cents, more than zero.
    pub amount_cents: i64,
    /// Why ("wage", "coffee").
    pub reason: String,
}

/// Something the user did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Intervention {
    /// An instruction the agent hears as its own thought and acts on.
    InnerVoice {
        /// To whom.
        agent: AgentId,
        /// The instruction.
        text: String,
    },
    /// A question to be answered from memory.
    Interview {
        /// To whom.
        agent: AgentId,
        /// The question.
        question: String,
        /// Whether the agent keeps the exchange as a memory.
        remember: bool,
    },
    /// A new seed paragraph for an agent.
    EditPersona {
        /// Whose.
        agent: AgentId,
        /// The new paragraph.
        persona: String,
    },
    /// A building from a template, placed on the map.
    AddBuilding {
        /// The template's name.
        template: String,
        /// The new sector's name.
        name: String,
        /// Its north-west corner.
        origin: Tile,
    },
    /// An object's state, set by hand.
    SetObjectState {
        /// The object's address.
        address: String,
        /// The state.
        state: String,
    },
    /// A new agent (its `AgentJoined` follows, caused by this event).
    AddAgent {
        /// The name.
        name: String,
        /// The seed paragraph.
        persona: String,
    },
    /// Something going on at a place for a while (a fire alarm ringing, a street musician
    /// playing): whoever is there notices it. Since `Intervened` schema 2.
    Happening {
        /// Where: a sector, or a `sector:arena`.
        place: String,
        /// What, in words ("a fire alarm is ringing").
        text: String,
        /// When it ends, in simulated seconds since midnight of day 0.
        until_secs: u64,
    },
    /// The model an agent thinks with from now on, by the name a town file would give it
    /// (`default`, `small`, a config file's profile). Since `Intervened` schema 3.
    SetModel {
        /// Whose.
        agent: AgentId,
        /// The model's name.
        model: String,
    },
}

/// Something the user did to the town.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intervened {
    /// What.
    pub intervention: Intervention,
}

/// An interview answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterviewAnswered {
    /// Who answered.
    pub agent: AgentId,
    /// The `Intervened` event that asked.
    pub question: EventId,
    /// The answer.
    pub answer: String,
}

/// A random seed drawn for a purpose.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedDrawn {
    /// What it seeds.
    pub purpose: String,
    /// The seed.
    pub seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_bytes_round_trip_and_start_with_kind_and_schema() {
        let event = NewEvent {
            sim_time_secs: 3600,
            causes: vec![EventId::chain(EventId::NONE, b"x")],
            body: Body::Moved(Moved {
                agent: AgentId(3),
                from: Tile { x: 1, y: 2 },
                to: Tile { x: 2, y: 2 },
            }),
        };
        let stored = event.encode(42);
        assert_eq!(&stored[..4], &[6, 0, 1, 0]);
        let (header, body) = decode_stored(&stored).unwrap();
        assert_eq!(header.seq, 42);
        assert_eq!(header.sim_time_secs, 3600);
        assert_eq!(header.causes, event.causes);
        assert_eq!(body, event.body);
    }

    #[test]
    fn unknown_kinds_and_newer_schemas_read_as_unknown() {
        let mut stored = NewEvent::new(5, Body::ClockStepped(ClockStepped { step: 1 })).encode(0);
        stored[0] = 0xee;
        let (header, body) = decode_stored(&stored).unwrap();
        assert_eq!(header.seq, 0);
        assert_eq!(body, Body::Unknown { kind: 0xee, schema: 1 });
        stored[0] = 5;
        stored[2] = 9;
        assert_eq!(decode_stored(&stored).unwrap().1, Body::Unknown { kind: 5, schema: 9 });
        stored[2] = 0;
        assert_eq!(decode_stored(&stored), Err(DecodeError::SchemaZero { kind: 5 }));
    }

    /// The hand-written header reader reads what postcard reads, and refuses what it refuses.
    #[test]
    fn the_header_reader_agrees_with_postcard() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for (seq, time, n) in
            [(0u64, 0u64, 0usize), (127, 128, 1), (u64::MAX, 1 << 40, 3), (300, u64::MAX, 2)]
        {
            let header = Header {
                seq,
                sim_time_secs: time,
                causes: (0..n).map(|i| EventId([i as u8; 32])).collect(),
            };
            cases.push(postcard::to_allocvec(&header).unwrap());
        }
        // Padded, overlong and cut varints; counts past the end.
        cases.push(vec![0x80, 0x00, 0x00, 0x00]);
        cases.push(vec![0xff; 11]);
        cases.push(vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0]);
        cases.push(vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0]);
        cases.push(vec![1, 2, 5, 0, 0]);
        cases.push(vec![1]);
        for (i, case) in cases.iter().enumerate() {
            for cut in 0..=case.len() {
                let mut stored = vec![5, 0, 1, 0];
                stored.extend_from_slice(&case[..cut]);
                let ours = parse_header(&stored).map(|(_, _, h, body)| (h.to_header(), body.len()));
                let theirs = postcard::take_from_bytes::<Header>(&stored[PREFIX_LEN..])
                    .map(|(h, rest)| (h, rest.len()));
                assert_eq!(ours.is_ok(), theirs.is_ok(), "case {i} cut {cut}");
                if let (Ok(a), Ok(b)) = (ours, theirs) {
                    assert_eq!(a, b, "case {i} cut {cut}");
                }
            }
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut stored = NewEvent::new(5, Body::ClockStepped(ClockStepped { step: 1 })).encode(0);
        stored.push(0);
        assert!(matches!(decode_stored(&stored), Err(DecodeError::Trailing { extra: 1, .. })));
    }

    #[test]
    fn the_rename_tag_is_the_kinds() {
        assert_eq!(kind_by_name("BranchRenamed"), Some(BRANCH_RENAMED));
        let body = Body::BranchRenamed(BranchRenamed { name: "x".into() });
        assert_eq!(body.kind(), BRANCH_RENAMED);
    }

    #[test]
    fn kind_names_round_trip() {
        for &kind in KNOWN_KINDS {
            assert_eq!(kind_by_name(kind_name(kind)), Some(kind));
        }
        assert_eq!(kind_name(9999), "unknown");
    }
}
