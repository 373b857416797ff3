//! The bytes of a `.hamlet` recording and of the store's segment files: magic, record
//! framing, chunks, summary records and footer. `log-format/FORMAT.md` specifies them;
//! this module is that text in code.
//!
//! Nothing here panics on bytes from outside: every read goes through [`Bytes`], which
//! answers `None` past the end, and every length is checked against what is left.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

use crate::event::{parse_header, DecodeError, HeaderRef};
use crate::id::{BranchId, EventId};

/// The first and last 8 bytes of a recording; the first 8 of a segment file.
pub const MAGIC: [u8; 8] = *b"\x89HAMLET\n";
/// The newest file format version this build reads and writes. Version 0 is never valid.
/// Version 2 allows compressed chunks ([`compression`]); version 1 files hold none.
pub const FORMAT_VERSION: u16 = 2;
/// The version of files whose chunks are all uncompressed: the store's segment files, and
/// recordings written without compression. Every reader of version 2 reads it.
pub const FORMAT_VERSION_UNCOMPRESSED: u16 = 1;

/// The codes of a chunk header's `compression` byte (FORMAT.md §5.5).
pub mod compression {
    /// The event data is stored as it is.
    pub const NONE: u8 = 0;
    /// The event data is its length (`u64`) and a Zstandard stream (RFC 8878). Format
    /// version 2 and later.
    pub const ZSTD: u8 = 1;
    /// The Zstandard level writers use: measured on real recordings, higher levels save
    /// little more and write much slower.
    pub const ZSTD_LEVEL: i32 = 3;
    /// The decompressed data may be at most this many times the stored data's length (and
    /// never over [`MAX_RAW_LEN`]), so a small file cannot make a reader allocate a
    /// gigabyte. A writer stores a chunk that compresses better than this uncompressed.
    pub const MAX_RATIO: u64 = 256;
    /// The most a compressed chunk's data may decompress to: what a writer can make. A
    /// writer closes a chunk once it holds `COMPRESSED_CHUNK_TARGET_LEN` bytes, so its
    /// last event (at most `MAX_EVENT_LEN`, with its framing) ends it: 18 MiB. Writers
    /// store a longer chunk uncompressed, and no reader is made to allocate more for one.
    pub const MAX_RAW_LEN: u64 =
        super::COMPRESSED_CHUNK_TARGET_LEN as u64 + super::MAX_EVENT_LEN as u64 + (1 << 20);
}

/// Record opcodes.
pub mod op {
    /// Format version and the writer's name. Always the first record.
    pub const HEADER: u8 = 0x01;
    /// A run of consecutive events of one branch.
    pub const CHUNK: u8 = 0x02;
    /// A folded state (derived data, opaque to this crate), indexed by the summary.
    pub const CHECKPOINT_STATE: u8 = 0x03;
    /// First summary record: the hash of the data section (see [`super::data_hash`]).
    pub const DATA_HASH: u8 = 0x10;
    /// One branch of the branch table.
    pub const BRANCH: u8 = 0x11;
    /// The chunk index: one fixed-size entry per chunk.
    pub const CHUNK_INDEX: u8 = 0x12;
    /// Where one checkpoint's state record is, and its hash.
    pub const CHECKPOINT: u8 = 0x13;
    /// Counts of events by kind, and the time range.
    pub const STATISTICS: u8 = 0x14;
    /// The last record: where the summary starts and its hash.
    pub const FOOTER: u8 = 0xff;
}

/// Bytes of a record's framing: opcode and length.
pub const RECORD_PREFIX_LEN: usize = 9;
/// Bytes of a chunk's fixed header.
pub const CHUNK_HEADER_LEN: usize = 136;
/// Bytes of a chunk's trailing hash.
pub const CHUNK_HASH_LEN: usize = 32;
/// Bytes of one chunk index entry.
pub const CHUNK_INDEX_ENTRY_LEN: usize = 112;
/// Bytes of the footer record's body.
pub const FOOTER_BODY_LEN: usize = 40;
/// Bytes from the footer record's opcode to the end of the file.
pub const FOOTER_LEN: usize = RECORD_PREFIX_LEN + FOOTER_BODY_LEN + MAGIC.len();
/// No record may be longer than this, whatever its length field says.
pub const MAX_RECORD_LEN: u64 = 1 << 30;
/// No stored event may be longer than this.
pub const MAX_EVENT_LEN: u32 = 16 << 20;
/// The most events one chunk may hold.
pub const MAX_CHUNK_EVENTS: u32 = 1 << 20;
/// Writers start a new chunk once this many data bytes are buffered.
pub const CHUNK_TARGET_LEN: usize = 256 << 10;
/// Writers start a new chunk once this many events are buffered.
pub const CHUNK_TARGET_EVENTS: usize = 2048;
/// Writers of compressed chunks start a new chunk once this many data bytes are buffered:
/// larger chunks compress better (a real day: 35% of its event data in chunks of 256 KiB,
/// 31% in chunks of 1 MiB), and a seek still decompresses one in under a millisecond.
pub const COMPRESSED_CHUNK_TARGET_LEN: usize = 1 << 20;
/// Writers of compressed chunks start a new chunk once this many events are buffered.
pub const COMPRESSED_CHUNK_TARGET_EVENTS: usize = 8192;

const CHUNK_CONTEXT: &str = "hamlet 2026-11-22 chunk";
const DATA_CONTEXT: &str = "hamlet 2026-11-22 data section";
const SUMMARY_CONTEXT: &str = "hamlet 2026-11-22 summary";
const CHECKPOINT_CONTEXT: &str = "hamlet 2026-11-22 checkpoint";

/// Bytes of one checkpoint index entry.
pub const CHECKPOINT_ENTRY_LEN: usize = 120;
/// Bytes ahead of each stored event in a chunk: its length and its id.
pub const EVENT_PREFIX_LEN: usize = 4 + 32;

/// The hash of a checkpoint's state bytes.
pub fn checkpoint_hash(state: &[u8]) -> [u8; 32] {
    *blake3::Hasher::new_derive_key(CHECKPOINT_CONTEXT).update(state).finalize().as_bytes()
}

/// A hasher for a chunk's header and data.
pub fn chunk_hasher() -> blake3::Hasher {
    blake3::Hasher::new_derive_key(CHUNK_CONTEXT)
}
/// A hasher for the data section (everything before the summary, each chunk by its framing
/// and hash): see [`data_hash`].
pub fn data_hasher() -> blake3::Hasher {
    blake3::Hasher::new_derive_key(DATA_CONTEXT)
}

/// Feeds one whole record (framing and body) of the data section to its hasher. A chunk
/// record contributes its 9 framing bytes and the 32-byte hash that ends its body, not the
/// body itself: the chunk's own hash covers that, so every byte is hashed once, not twice.
pub fn feed_data_record(hasher: &mut blake3::Hasher, record: &[u8]) {
    let n = record.len();
    match (
        record.first(),
        record.get(..RECORD_PREFIX_LEN),
        record.get(n.saturating_sub(CHUNK_HASH_LEN)..),
    ) {
        (Some(&op::CHUNK), Some(framing), Some(hash))
            if n >= RECORD_PREFIX_LEN + CHUNK_HASH_LEN =>
        {
            hasher.update(framing);
            hasher.update(hash);
        }
        _ => {
            hasher.update(record);
        }
    }
}

/// The data section's hash: the preamble (magic and header record) as it is, then each
/// record through [`feed_data_record`]. Bytes that do not frame as records are hashed as
/// they are.
pub fn data_hash(section: &[u8], preamble_len: usize) -> [u8; 32] {
    let mut hasher = data_hasher();
    hasher.update(section.get(..preamble_len).unwrap_or(section));
    let mut at = preamble_len;
    while at < section.len() {
        let rest = section.get(at..).unwrap_or(&[]);
        match parse_record(rest, at as u64) {
            Ok(Some(record)) => {
                let len = record.len_total() as usize;
                feed_data_record(&mut hasher, rest.get(..len).unwrap_or(rest));
                at += len;
            }
            _ => {
                hasher.update(rest);
                break;
            }
        }
    }
    *hasher.finalize().as_bytes()
}
/// A hasher for the summary section.
pub fn summary_hasher() -> blake3::Hasher {
    blake3::Hasher::new_derive_key(SUMMARY_CONTEXT)
}

/// A cursor over bytes from outside: every read is checked, none panics.
#[derive(Clone, Debug)]
pub struct Bytes<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Bytes<'a> {
        Bytes { bytes, pos: 0 }
    }
    /// Bytes read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = self.bytes.get(self.pos..).unwrap_or(&[]);
        self.pos = self.bytes.len();
        out
    }
    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    /// A byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }
    /// A little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }
    /// A little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }
    /// A little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
    /// An event id.
    pub fn id(&mut self) -> Option<EventId> {
        self.array().map(EventId)
    }
}

/// What is wrong with a record or a chunk, with where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The bytes end inside a record.
    #[error("record at byte {offset} needs {needed} bytes, but only {available} remain")]
    Truncated {
        /// Where the record starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// A length field past the hard limit.
    #[error("record at byte {offset} claims {len_bytes} bytes, over the limit of {limit}")]
    TooLong {
        /// Where the record starts.
        offset: u64,
        /// The claimed length.
        len_bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The file does not start with the magic.
    #[error("not a Hamlet file: the first 8 bytes are {found}, expected {}", crate::id::hex(&MAGIC))]
    BadMagic {
        /// What was found, in hex.
        found: String,
    },
    /// The first record is not a valid header.
    #[error("header record at byte 8: {problem}")]
    BadHeader {
        /// What is wrong.
        problem: String,
    },
    /// A chunk is malformed.
    #[error("chunk at byte {offset}: {problem}")]
    BadChunk {
        /// Where the chunk's record starts.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
    /// An event inside a chunk does not decode.
    #[error("chunk at byte {offset}, event #{seq}: {source}")]
    BadEvent {
        /// Where the chunk's record starts.
        offset: u64,
        /// The event's seq as the chunk places it.
        seq: u64,
        /// What is wrong.
        #[source]
        source: DecodeError,
    },
    /// A summary record is malformed.
    #[error("summary record {op:#04x} at byte {offset}: {problem}")]
    BadSummary {
        /// The opcode.
        op: u8,
        /// Where the record starts.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
}

/// One record found in a byte slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The opcode.
    pub op: u8,
    /// Absolute offset of the opcode byte.
    pub offset: u64,
    /// The body.
    pub body: &'a [u8],
}

impl RecordRef<'_> {
    /// Framing plus body.
    pub fn len_total(&self) -> u64 {
        RECORD_PREFIX_LEN as u64 + self.body.len() as u64
    }
}

/// Reads the record framing at the start of `bytes` (whose first byte is at absolute
/// `offset`). `Ok(None)` when `bytes` is empty.
pub fn parse_record(bytes: &[u8], offset: u64) -> Result<Option<RecordRef<'_>>, FormatError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut cur = Bytes::new(bytes);
    let truncated =
        |needed: u64| FormatError::Truncated { offset, needed, available: bytes.len() as u64 };
    let (Some(op), Some(len)) = (cur.u8(), cur.u64()) else {
        return Err(truncated(RECORD_PREFIX_LEN as u64));
    };
    if len > MAX_RECORD_LEN {
        return Err(FormatError::TooLong { offset, len_bytes: len, limit: MAX_RECORD_LEN });
    }
    let Some(body) = usize::try_from(len).ok().and_then(|n| cur.take(n)) else {
        return Err(truncated(RECORD_PREFIX_LEN as u64 + len));
    };
    Ok(Some(RecordRef { op, offset, body }))
}

/// Appends a record's framing and body to `out`.
pub fn push_record(out: &mut Vec<u8>, op: u8, body: &[u8]) {
    out.push(op);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
}

/// The magic and header record every recording and segment file starts with.
///
/// # Panics
/// On a version this build does not write.
pub fn file_preamble(version: u16, writer: &str) -> Vec<u8> {
    #[allow(clippy::panic, reason = "the write path asserts hard")]
    if version == 0 || version > FORMAT_VERSION {
        panic!("format version {version} is not one this build writes");
    }
    let mut body = Vec::with_capacity(8 + writer.len());
    body.extend_from_slice(&version.to_le_bytes());
    body.extend_from_slice(&[0; 6]);
    body.extend_from_slice(writer.as_bytes());
    let mut out = MAGIC.to_vec();
    push_record(&mut out, op::HEADER, &body);
    out
}

/// What a file's header record says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preamble {
    /// The format version, 1 to [`FORMAT_VERSION`].
    pub version: u16,
    /// The writer's name.
    pub writer: String,
    /// The offset of the first record after the header.
    pub end: usize,
}

impl Preamble {
    /// Whether a chunk with this `compression` code may appear in the file.
    pub fn allows(&self, code: u8) -> bool {
        code == compression::NONE || (code == compression::ZSTD && self.version >= 2)
    }
}

/// Checks the magic and header record.
pub fn parse_preamble(bytes: &[u8]) -> Result<Preamble, FormatError> {
    let magic = bytes.get(..MAGIC.len()).unwrap_or(bytes);
    if magic != MAGIC {
        return Err(FormatError::BadMagic { found: crate::id::hex(magic) });
    }
    let rest = bytes.get(MAGIC.len()..).unwrap_or(&[]);
    let record = parse_record(rest, MAGIC.len() as u64)?
        .ok_or(FormatError::BadHeader { problem: "the file ends after the magic".into() })?;
    let bad = |problem: String| FormatError::BadHeader { problem };
    if record.op != op::HEADER {
        return Err(bad(format!("opcode is {:#04x}, expected {:#04x}", record.op, op::HEADER)));
    }
    let mut cur = Bytes::new(record.body);
    let version = cur.u16().ok_or_else(|| bad("body shorter than 8 bytes".into()))?;
    let reserved = cur.array::<6>().ok_or_else(|| bad("body shorter than 8 bytes".into()))?;
    if version == 0 || version > FORMAT_VERSION {
        return Err(bad(format!(
            "format version {version}; this build reads 1 to {FORMAT_VERSION}"
        )));
    }
    if reserved != [0; 6] {
        return Err(bad("reserved bytes are not zero".into()));
    }
    let writer = std::str::from_utf8(cur.rest())
        .map_err(|_| bad("writer name is not UTF-8".into()))?
        .to_owned();
    Ok(Preamble { version, writer, end: MAGIC.len() + RECORD_PREFIX_LEN + record.body.len() })
}

/// A chunk's fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkHeader {
    /// The branch whose chain the events continue.
    pub branch: BranchId,
    /// The id of the event before the first one ([`EventId::NONE`] at the root).
    pub parent: EventId,
    /// The id of the last event.
    pub last_id: EventId,
    /// The first event's seq; the rest follow one by one.
    pub first_seq: u64,
    /// How many events.
    pub n_events: u32,
    /// 0: none. No other value is defined yet.
    pub compression: u8,
    /// The first event's simulated time.
    pub time_first: u64,
    /// The last event's simulated time.
    pub time_last: u64,
    /// Bytes of event data that follow the header.
    pub data_len: u64,
}

impl ChunkHeader {
    /// The last event's seq.
    pub fn last_seq(&self) -> u64 {
        self.first_seq.saturating_add(u64::from(self.n_events.saturating_sub(1)))
    }

    /// The fixed 136 bytes.
    pub fn encode(&self) -> [u8; CHUNK_HEADER_LEN] {
        let mut out = [0u8; CHUNK_HEADER_LEN];
        let fields: [&[u8]; 10] = [
            &self.branch.0 .0,
            &self.parent.0,
            &self.last_id.0,
            &self.first_seq.to_le_bytes(),
            &self.n_events.to_le_bytes(),
            &[self.compression, 0, 0, 0],
            &self.time_first.to_le_bytes(),
            &self.time_last.to_le_bytes(),
            &self.data_len.to_le_bytes(),
            &[],
        ];
        let mut at = 0;
        for field in fields {
            if let Some(slot) = out.get_mut(at..at + field.len()) {
                slot.copy_from_slice(field);
            }
            at += field.len();
        }
        out
    }

    fn decode(cur: &mut Bytes<'_>) -> Option<(ChunkHeader, [u8; 3])> {
        let header = ChunkHeader {
            branch: BranchId(cur.id()?),
            parent: cur.id()?,
            last_id: cur.id()?,
            first_seq: cur.u64()?,
            n_events: cur.u32()?,
            compression: cur.u8()?,
            time_first: 0,
            time_last: 0,
            data_len: 0,
        };
        let reserved = cur.array::<3>()?;
        let (time_first, time_last, data_len) = (cur.u64()?, cur.u64()?, cur.u64()?);
        Some((ChunkHeader { time_first, time_last, data_len, ..header }, reserved))
    }
}

/// A chunk read from bytes, structurally checked and hashed, its events not yet walked.
#[derive(Clone, Copy, Debug)]
pub struct ChunkRef<'a> {
    /// The fixed header.
    pub header: ChunkHeader,
    /// The event data.
    pub data: &'a [u8],
    /// The stored hash (equal to the computed one, or parsing fails).
    pub hash: [u8; 32],
    /// Absolute offset of the chunk's record.
    pub offset: u64,
}

impl<'a> ChunkRef<'a> {
    /// Parses a chunk record's body: header, data length, reserved bytes, hash.
    pub fn parse(record: RecordRef<'a>) -> Result<ChunkRef<'a>, FormatError> {
        ChunkRef::parse_with(record, true)
    }

    /// Like [`ChunkRef::parse`], without recomputing the chunk's hash: only for bytes that
    /// `verify` has already found sound (it checked every hash). Structure is still checked.
    pub fn parse_verified(record: RecordRef<'a>) -> Result<ChunkRef<'a>, FormatError> {
        ChunkRef::parse_with(record, false)
    }

    fn parse_with(record: RecordRef<'a>, check_hash: bool) -> Result<ChunkRef<'a>, FormatError> {
        let offset = record.offset;
        let bad = |problem: String| FormatError::BadChunk { offset, problem };
        if record.op != op::CHUNK {
            return Err(bad(format!("opcode {:#04x} is not a chunk", record.op)));
        }
        let mut cur = Bytes::new(record.body);
        let (header, reserved) = ChunkHeader::decode(&mut cur).ok_or_else(|| {
            bad(format!("body is {} bytes, shorter than its header", record.body.len()))
        })?;
        let expected = header.data_len.checked_add((CHUNK_HEADER_LEN + CHUNK_HASH_LEN) as u64);
        if Some(record.body.len() as u64) != expected {
            return Err(bad(format!(
                "body is {} bytes, but its header says {} of data",
                record.body.len(),
                header.data_len
            )));
        }
        if reserved != [0; 3] {
            return Err(bad("reserved bytes are not zero".into()));
        }
        if header.compression > compression::ZSTD {
            return Err(bad(format!("compression {} is not defined", header.compression)));
        }
        if header.n_events == 0 || header.n_events > MAX_CHUNK_EVENTS {
            return Err(bad(format!(
                "holds {} events; a chunk holds 1 to {MAX_CHUNK_EVENTS}",
                header.n_events
            )));
        }
        if header.first_seq.checked_add(u64::from(header.n_events)).is_none() {
            return Err(bad(format!("seqs from #{} overflow", header.first_seq)));
        }
        if header.time_first > header.time_last {
            return Err(bad(format!(
                "time range runs backwards: {} to {}",
                header.time_first, header.time_last
            )));
        }
        let data =
            cur.take(header.data_len as usize).ok_or_else(|| bad("data cut short".into()))?;
        let hash = cur.array::<32>().ok_or_else(|| bad("hash cut short".into()))?;
        let head_bytes = record.body.get(..CHUNK_HEADER_LEN).unwrap_or(&[]);
        let computed = match check_hash {
            true => *chunk_hasher().update(head_bytes).update(data).finalize().as_bytes(),
            false => hash,
        };
        if computed != hash {
            return Err(bad(format!(
                "hash is {}, but the bytes hash to {}",
                &crate::id::hex(&hash)[..16],
                &crate::id::hex(&computed)[..16]
            )));
        }
        // Check 10's bounds, after the hash (decompressing is `open`'s).
        if header.compression == compression::ZSTD {
            raw_len(data).map_err(bad)?;
        }
        Ok(ChunkRef { header, data, hash, offset })
    }

    /// The bytes [`ChunkRef::open`] allocates: the declared decompressed length of a
    /// compressed chunk (within the limits, checked by `parse`); 0 for one stored as it is,
    /// which is borrowed.
    pub fn inflated_len(&self) -> u64 {
        match self.header.compression {
            compression::ZSTD => raw_len(self.data).map_or(0, |n| n as u64),
            _ => 0,
        }
    }

    /// The chunk's event data, decompressed if it was stored compressed (borrowed from the
    /// file if it was not), ready to walk. Fails when the stored data does not decompress
    /// to exactly the length it declares.
    pub fn open(&self) -> Result<Chunk<'a>, FormatError> {
        let data = match self.header.compression {
            compression::ZSTD => std::borrow::Cow::Owned(
                inflate(self.data)
                    .map_err(|problem| FormatError::BadChunk { offset: self.offset, problem })?,
            ),
            _ => std::borrow::Cow::Borrowed(self.data),
        };
        Ok(Chunk { header: self.header, data, offset: self.offset })
    }

    /// The chunk's record encoded again: its event data compressed with Zstandard when
    /// `compress` and that makes it smaller within [`compression::MAX_RATIO`] (as writers of
    /// format version 2 store chunks), else stored as it is (as version 1 files hold every
    /// chunk). The events and their ids are the same either way; the chunk hash is not.
    pub fn recoded(&self, compress: bool) -> Result<Vec<u8>, FormatError> {
        Ok(self.open()?.encoded(compress).0)
    }
}

/// The length a compressed chunk's data declares, checked against the limits (§5.5).
fn raw_len(data: &[u8]) -> Result<usize, String> {
    let mut cur = Bytes::new(data);
    let len = cur.u64().ok_or_else(|| "compressed data shorter than its length".to_string())?;
    let stored = data.len() as u64;
    if len > compression::MAX_RAW_LEN || len > stored.saturating_mul(compression::MAX_RATIO) {
        return Err(format!(
            "compressed data of {stored} bytes claims {len} bytes decompressed, over the limit"
        ));
    }
    usize::try_from(len).map_err(|_| format!("{len} bytes decompressed do not fit in memory"))
}

/// Decompresses a compressed chunk's data: the declared length, then a Zstandard stream that
/// must decompress to exactly that many bytes. With the pure-Rust decoder on wasm32
/// ([`inflate_pure`]).
#[cfg(target_arch = "wasm32")]
fn inflate(data: &[u8]) -> Result<Vec<u8>, String> {
    inflate_pure(data)
}

/// [`inflate`] by the pure-Rust Zstandard decoder (`ruzstd`): what a browser reads chunks
/// with; tests hold it to the C library's answers.
#[cfg(any(target_arch = "wasm32", test))]
fn inflate_pure(data: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let len = raw_len(data)?;
    let mut stream = data.get(8..).unwrap_or(&[]);
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| format!("cannot allocate {len} bytes"))?;
    let decoded = ruzstd::decoding::StreamingDecoder::new(&mut stream)
        .map_err(|e| e.to_string())
        // One byte more than declared is enough to tell a stream that holds too much.
        .and_then(|d| d.take(len as u64 + 1).read_to_end(&mut out).map_err(|e| e.to_string()));
    match decoded {
        Ok(n) if n == len => Ok(out),
        Ok(n) if n > len => Err(format!("compressed data declares {len} bytes, but holds more")),
        Ok(n) => Err(format!("compressed data declares {len} bytes, but holds {n}")),
        Err(e) => Err(format!("compressed data does not decompress to its {len} bytes: {e}")),
    }
}

/// Decompresses a compressed chunk's data: the declared length, then a Zstandard stream that
/// must decompress to exactly that many bytes.
#[cfg(not(target_arch = "wasm32"))]
fn inflate(data: &[u8]) -> Result<Vec<u8>, String> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    let len = raw_len(data)?;
    let stream = data.get(8..).unwrap_or(&[]);
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| format!("cannot allocate {len} bytes"))?;
    let written = DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        match cell.as_mut() {
            Some(d) => d.decompress_to_buffer(stream, &mut out).map_err(|e| e.to_string()),
            None => Err("no decompressor".to_string()),
        }
    });
    match written {
        Ok(n) if n == len => Ok(out),
        Ok(n) => Err(format!("compressed data declares {len} bytes, but holds {n}")),
        Err(e) => Err(format!("compressed data does not decompress to its {len} bytes: {e}")),
    }
}

/// `raw` as a Zstandard stream, if it can be; never on wasm32, where chunks are written as
/// they are (a reader there reads both).
#[cfg(not(target_arch = "wasm32"))]
fn deflate(raw: &[u8]) -> Option<Vec<u8>> {
    zstd::bulk::compress(raw, compression::ZSTD_LEVEL).ok()
}

/// [`deflate`] where there is no Zstandard encoder: never.
#[cfg(target_arch = "wasm32")]
fn deflate(_raw: &[u8]) -> Option<Vec<u8>> {
    None
}

/// A chunk record for `header`'s events whose (uncompressed) event data is `raw`: compressed
/// with Zstandard when `compress` and it pays, else stored as it is. With its chunk hash.
fn encode_chunk(header: ChunkHeader, raw: &[u8], compress: bool) -> (Vec<u8>, [u8; 32]) {
    let packed = (compress && raw.len() as u64 <= compression::MAX_RAW_LEN)
        .then(|| deflate(raw))
        .flatten()
        .map(|stream| {
            let mut data = Vec::with_capacity(8 + stream.len());
            data.extend_from_slice(&(raw.len() as u64).to_le_bytes());
            data.extend_from_slice(&stream);
            data
        })
        .filter(|data| {
            data.len() < raw.len()
                && (raw.len() as u64) <= (data.len() as u64).saturating_mul(compression::MAX_RATIO)
        });
    let (code, data) = match &packed {
        Some(data) => (compression::ZSTD, data.as_slice()),
        None => (compression::NONE, raw),
    };
    let header = ChunkHeader { compression: code, data_len: data.len() as u64, ..header };
    let head = header.encode();
    let hash = chunk_hasher().update(&head).update(data).finalize();
    let body_len = CHUNK_HEADER_LEN + data.len() + CHUNK_HASH_LEN;
    let mut record = Vec::with_capacity(RECORD_PREFIX_LEN + body_len);
    record.push(op::CHUNK);
    record.extend_from_slice(&(body_len as u64).to_le_bytes());
    record.extend_from_slice(&head);
    record.extend_from_slice(data);
    record.extend_from_slice(hash.as_bytes());
    (record, *hash.as_bytes())
}

/// A chunk's events ready to walk: its header and its event data, decompressed.
#[derive(Clone, Debug)]
pub struct Chunk<'a> {
    /// The fixed header (as stored: `compression` and `data_len` describe the stored data).
    pub header: ChunkHeader,
    /// The event data: `n_events` × (length, id, stored bytes).
    pub data: std::borrow::Cow<'a, [u8]>,
    /// Absolute offset of the chunk's record.
    pub offset: u64,
}

impl Chunk<'_> {
    /// The chunk's record encoded again, and its chunk hash: see [`ChunkRef::recoded`].
    pub fn encoded(&self, compress: bool) -> (Vec<u8>, [u8; 32]) {
        encode_chunk(self.header, &self.data, compress)
    }

    /// The chunk's events in order: stored bytes with their ids, chained from the header's
    /// parent. The iterator checks framing, seq order and time order, and stops at the
    /// first problem.
    ///
    /// Ids are read as stored: the chunk's hash, checked when it was parsed, vouches for
    /// them. [`Chunk::events_checked`] recomputes the chain instead.
    pub fn events(&self) -> ChunkEvents<'_> {
        ChunkEvents {
            cur: Bytes::new(&self.data),
            header: self.header,
            parent: self.header.parent,
            index: 0,
            last_time: self.header.time_first,
            failed: false,
            offset: self.offset,
            check_chain: false,
        }
    }

    /// Like [`Chunk::events`], but each id is recomputed from its parent and stored
    /// bytes and must equal the stored one.
    pub fn events_checked(&self) -> ChunkEvents<'_> {
        ChunkEvents { check_chain: true, ..self.events() }
    }

    /// The name given by the last `BranchRenamed` among the chunk's events (all of them its
    /// branch's own), if any: the branch's name from there on (FORMAT.md §6.4). Only
    /// events of that kind are decoded; one that does not decode names nothing.
    pub fn last_rename(&self) -> Option<String> {
        self.events()
            .filter_map(Result::ok)
            .filter(|e| e.kind == crate::event::BRANCH_RENAMED)
            .filter_map(|e| match crate::event::decode_body(e.kind, e.schema, e.body) {
                Ok(crate::event::Body::BranchRenamed(r)) => Some(r.name),
                _ => None,
            })
            .last()
    }

    /// Walks every event: framing, header decoding, seq and time order, and that the chain
    /// from the header's parent ends at the header's last id. Returns the kinds seen.
    pub fn verify_events(&self) -> Result<Vec<u16>, FormatError> {
        let mut kinds = Vec::with_capacity(self.header.n_events as usize);
        let mut last = self.header.parent;
        for item in self.events_checked() {
            let event = item?;
            kinds.push(event.kind);
            last = event.id;
        }
        if last != self.header.last_id {
            return Err(FormatError::BadChunk {
                offset: self.offset,
                problem: format!(
                    "events chain to {last}, but the header's last id is {}",
                    self.header.last_id
                ),
            });
        }
        Ok(kinds)
    }
}

/// One event inside a chunk, not yet decoded beyond its header.
#[derive(Clone, Debug)]
pub struct StoredRef<'a> {
    /// Its id.
    pub id: EventId,
    /// Its parent's id.
    pub parent: EventId,
    /// The kind tag.
    pub kind: u16,
    /// The schema version.
    pub schema: u16,
    /// The header, borrowed.
    pub header: HeaderRef<'a>,
    /// The stored bytes (prefix, header, body).
    pub stored: &'a [u8],
    /// The body's bytes.
    pub body: &'a [u8],
}

/// Iterator over a chunk's events; see [`ChunkRef::events`].
#[derive(Clone, Debug)]
pub struct ChunkEvents<'a> {
    cur: Bytes<'a>,
    header: ChunkHeader,
    parent: EventId,
    index: u32,
    last_time: u64,
    failed: bool,
    offset: u64,
    check_chain: bool,
}

impl<'a> ChunkEvents<'a> {
    fn step(&mut self) -> Result<StoredRef<'a>, FormatError> {
        let offset = self.offset;
        let seq = self.header.first_seq.saturating_add(u64::from(self.index));
        let bad = |problem: String| FormatError::BadChunk { offset, problem };
        let len =
            self.cur.u32().ok_or_else(|| bad(format!("data ends before event #{seq}'s length")))?;
        if len > MAX_EVENT_LEN {
            return Err(bad(format!("event #{seq} claims {len} bytes, over the limit")));
        }
        let id = self.cur.id().ok_or_else(|| bad(format!("data ends inside event #{seq}'s id")))?;
        let stored = self
            .cur
            .take(len as usize)
            .ok_or_else(|| bad(format!("event #{seq} claims {len} bytes, past the data's end")))?;
        let (kind, schema, header, body) =
            parse_header(stored).map_err(|source| FormatError::BadEvent { offset, seq, source })?;
        if header.seq != seq {
            return Err(bad(format!("event #{seq} says its seq is {}", header.seq)));
        }
        if header.sim_time_secs < self.last_time || header.sim_time_secs > self.header.time_last {
            return Err(bad(format!(
                "event #{seq} at time {} is outside {}..={} or before its predecessor",
                header.sim_time_secs, self.last_time, self.header.time_last
            )));
        }
        if self.index == 0 && header.sim_time_secs != self.header.time_first {
            return Err(bad(format!(
                "first event's time {} is not the header's {}",
                header.sim_time_secs, self.header.time_first
            )));
        }
        self.last_time = header.sim_time_secs;
        if self.check_chain {
            let chained = EventId::chain(self.parent, stored);
            if chained != id {
                return Err(bad(format!(
                    "event #{seq} is stored as {id}, but its bytes chain to {chained}"
                )));
            }
        }
        let parent = std::mem::replace(&mut self.parent, id);
        self.index += 1;
        if self.index == self.header.n_events {
            if self.cur.remaining() != 0 {
                return Err(bad(format!("{} bytes follow the last event", self.cur.remaining())));
            }
            if header.sim_time_secs != self.header.time_last {
                return Err(bad(format!(
                    "last event's time {} is not the header's {}",
                    header.sim_time_secs, self.header.time_last
                )));
            }
            if id != self.header.last_id {
                return Err(bad(format!(
                    "last event is {id}, but the header's last id is {}",
                    self.header.last_id
                )));
            }
        }
        Ok(StoredRef { id, parent, kind, schema, header, stored, body })
    }
}

impl<'a> Iterator for ChunkEvents<'a> {
    type Item = Result<StoredRef<'a>, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.index >= self.header.n_events {
            return None;
        }
        let item = self.step();
        self.failed = item.is_err();
        Some(item)
    }
}

/// Builds one chunk from stored events, chaining their ids.
#[derive(Clone, Debug)]
pub struct ChunkBuilder {
    branch: BranchId,
    parent: EventId,
    last_id: EventId,
    first_seq: u64,
    n_events: u32,
    time_first: u64,
    time_last: u64,
    data: Vec<u8>,
}

#[allow(clippy::panic, reason = "the write path asserts hard: a bad event must never be written")]
impl ChunkBuilder {
    /// An empty chunk continuing `branch` after the event `parent`, starting at `first_seq`.
    pub fn new(branch: BranchId, parent: EventId, first_seq: u64) -> ChunkBuilder {
        ChunkBuilder {
            branch,
            parent,
            last_id: parent,
            first_seq,
            n_events: 0,
            time_first: 0,
            time_last: 0,
            data: Vec::new(),
        }
    }

    /// Appends an event's stored bytes and returns its id.
    ///
    /// # Panics
    /// When the event's seq or time does not follow the chunk's: the write path refuses to
    /// build a chunk that the reader would reject.
    pub fn push(&mut self, stored: &[u8]) -> EventId {
        let (_, _, header, _) =
            parse_header(stored).unwrap_or_else(|e| panic!("pushing an undecodable event: {e}"));
        let seq = self.first_seq + u64::from(self.n_events);
        assert_eq!(header.seq, seq, "{}: event out of order in chunk", self.branch);
        if self.n_events == 0 {
            self.time_first = header.sim_time_secs;
        } else {
            assert!(header.sim_time_secs >= self.time_last, "event #{seq}: time runs backwards");
        }
        assert!(stored.len() <= MAX_EVENT_LEN as usize, "event #{seq} is too long");
        self.time_last = header.sim_time_secs;
        self.last_id = EventId::chain(self.last_id, stored);
        self.data.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        self.data.extend_from_slice(&self.last_id.0);
        self.data.extend_from_slice(stored);
        self.n_events += 1;
        self.last_id
    }

    /// The seq the next event pushed must have.
    pub fn next_seq(&self) -> u64 {
        self.first_seq + u64::from(self.n_events)
    }
    /// How many events so far.
    pub fn n_events(&self) -> u32 {
        self.n_events
    }
    /// Bytes of data so far.
    pub fn len_bytes(&self) -> usize {
        self.data.len()
    }
    /// The id of the last event pushed (the parent, if none).
    pub fn last_id(&self) -> EventId {
        self.last_id
    }
    /// Whether the chunk has reached its target size.
    pub fn is_full(&self) -> bool {
        self.is_full_for(false)
    }

    /// Whether the chunk has reached its target size for a writer that stores chunks
    /// compressed (`compressed`, larger targets) or not.
    pub fn is_full_for(&self, compressed: bool) -> bool {
        let (len, events) = match compressed {
            true => (COMPRESSED_CHUNK_TARGET_LEN, COMPRESSED_CHUNK_TARGET_EVENTS),
            false => (CHUNK_TARGET_LEN, CHUNK_TARGET_EVENTS),
        };
        self.data.len() >= len || self.n_events as usize >= events
    }

    /// The chunk's record: framing, header, data and hash.
    ///
    /// # Panics
    /// On an empty chunk, which the format does not allow.
    pub fn finish(self) -> (ChunkHeader, Vec<u8>) {
        assert!(self.n_events > 0, "an empty chunk is never written");
        let header = ChunkHeader {
            branch: self.branch,
            parent: self.parent,
            last_id: self.last_id,
            first_seq: self.first_seq,
            n_events: self.n_events,
            compression: 0,
            time_first: self.time_first,
            time_last: self.time_last,
            data_len: self.data.len() as u64,
        };
        let (record, _) = encode_chunk(header, &self.data, false);
        (header, record)
    }
}

/// One entry of the chunk index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkIndexEntry {
    /// Absolute offset of the chunk's record.
    pub offset: u64,
    /// Length of the record, framing included.
    pub len_bytes: u64,
    /// Its branch.
    pub branch: BranchId,
    /// First event's seq.
    pub first_seq: u64,
    /// Last event's seq.
    pub last_seq: u64,
    /// First event's simulated time.
    pub time_first: u64,
    /// Last event's simulated time.
    pub time_last: u64,
    /// The chunk's hash, repeated so that a misdirected write cannot vouch for itself.
    pub hash: [u8; 32],
}

impl ChunkIndexEntry {
    /// Appends the fixed 112 bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len_bytes.to_le_bytes());
        out.extend_from_slice(&self.branch.0 .0);
        for n in [self.first_seq, self.last_seq, self.time_first, self.time_last] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.hash);
    }

    fn decode(cur: &mut Bytes<'_>) -> Option<ChunkIndexEntry> {
        Some(ChunkIndexEntry {
            offset: cur.u64()?,
            len_bytes: cur.u64()?,
            branch: BranchId(cur.id()?),
            first_seq: cur.u64()?,
            last_seq: cur.u64()?,
            time_first: cur.u64()?,
            time_last: cur.u64()?,
            hash: cur.array()?,
        })
    }
}

/// One branch of the branch table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// The branch's id (its first event's id).
    pub id: BranchId,
    /// The branch it forked from.
    pub parent: Option<BranchId>,
    /// The last shared seq on the parent.
    pub fork_seq: Option<u64>,
    /// Its last event's id in this file.
    pub head_id: EventId,
    /// Its last event's seq in this file.
    pub head_seq: u64,
    /// Events of its own (after the fork point) in this file.
    pub n_events: u64,
    /// Its name: that of the last `BranchRenamed` among its own events in this file, else
    /// its `BranchCreated`'s.
    pub name: String,
}

impl BranchEntry {
    /// The record body: fixed fields, then the name.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(120 + self.name.len());
        out.extend_from_slice(&self.id.0 .0);
        out.extend_from_slice(&self.parent.map(|p| p.0 .0).unwrap_or([0; 32]));
        out.extend_from_slice(&self.fork_seq.unwrap_or(u64::MAX).to_le_bytes());
        out.extend_from_slice(&self.head_id.0);
        out.extend_from_slice(&self.head_seq.to_le_bytes());
        out.extend_from_slice(&self.n_events.to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out
    }

    fn decode(body: &[u8]) -> Option<BranchEntry> {
        let mut cur = Bytes::new(body);
        let id = BranchId(cur.id()?);
        let parent = cur.id()?;
        let fork_seq = cur.u64()?;
        let (head_id, head_seq, n_events) = (cur.id()?, cur.u64()?, cur.u64()?);
        let name = std::str::from_utf8(cur.rest()).ok()?.to_owned();
        Some(BranchEntry {
            id,
            parent: (!parent.is_none()).then_some(BranchId(parent)),
            fork_seq: (fork_seq != u64::MAX).then_some(fork_seq),
            head_id,
            head_seq,
            n_events,
            name,
        })
    }
}

/// A checkpoint's place in the file: its state bytes are the body of a
/// [`op::CHECKPOINT_STATE`] record in the data section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointEntry {
    /// The branch.
    pub branch: BranchId,
    /// The seq of the last event folded into the state.
    pub seq: u64,
    /// The state's hash, as the engine computes it.
    pub state_hash: [u8; 32],
    /// Absolute offset of the state bytes (the record's body).
    pub offset: u64,
    /// Their length.
    pub len_bytes: u64,
    /// [`checkpoint_hash`] of the state bytes.
    pub hash: [u8; 32],
}

impl CheckpointEntry {
    /// Appends the fixed 120 bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.branch.0 .0);
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.state_hash);
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len_bytes.to_le_bytes());
        out.extend_from_slice(&self.hash);
    }

    fn decode(body: &[u8]) -> Option<CheckpointEntry> {
        if body.len() != CHECKPOINT_ENTRY_LEN {
            return None;
        }
        let mut cur = Bytes::new(body);
        Some(CheckpointEntry {
            branch: BranchId(cur.id()?),
            seq: cur.u64()?,
            state_hash: cur.array()?,
            offset: cur.u64()?,
            len_bytes: cur.u64()?,
            hash: cur.array()?,
        })
    }
}

/// Counts of the events in a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Events, all branches.
    pub n_events: u64,
    /// Chunks.
    pub n_chunks: u64,
    /// Earliest simulated time.
    pub time_first: u64,
    /// Latest simulated time.
    pub time_last: u64,
    /// Events per kind tag, sorted by tag.
    pub kinds: Vec<(u16, u64)>,
}

impl Statistics {
    /// The record body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(36 + 10 * self.kinds.len());
        for n in [self.n_events, self.n_chunks, self.time_first, self.time_last] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&(self.kinds.len() as u32).to_le_bytes());
        for (kind, count) in &self.kinds {
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        out
    }

    fn decode(body: &[u8]) -> Option<Statistics> {
        let mut cur = Bytes::new(body);
        let (n_events, n_chunks, time_first, time_last) =
            (cur.u64()?, cur.u64()?, cur.u64()?, cur.u64()?);
        let n = cur.u32()? as usize;
        if n.checked_mul(10)? != cur.remaining() {
            return None;
        }
        let mut kinds = Vec::with_capacity(n);
        for _ in 0..n {
            kinds.push((cur.u16()?, cur.u64()?));
        }
        Some(Statistics { n_events, n_chunks, time_first, time_last, kinds })
    }

    /// Counts one event of `kind` (kinds stay sorted).
    pub fn count(&mut self, kind: u16) {
        self.count_n(kind, 1);
    }

    /// Counts `n` events of `kind` (kinds stay sorted).
    pub fn count_n(&mut self, kind: u16, n: u64) {
        match self.kinds.binary_search_by_key(&kind, |(k, _)| *k) {
            Ok(i) => {
                if let Some((_, count)) = self.kinds.get_mut(i) {
                    *count += n;
                }
            }
            Err(i) => self.kinds.insert(i, (kind, n)),
        }
    }
}

/// Everything the summary says, as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Where the summary starts (= length of the data section).
    pub offset: u64,
    /// The data section's hash.
    pub data_hash: [u8; 32],
    /// The branch table, in file order.
    pub branches: Vec<BranchEntry>,
    /// The chunk index, in file order.
    pub chunks: Vec<ChunkIndexEntry>,
    /// Checkpoints, in file order.
    pub checkpoints: Vec<CheckpointEntry>,
    /// Counts.
    pub statistics: Statistics,
}

/// What is wrong at the end of a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FooterError {
    /// Too short to hold magic, header and footer.
    #[error("file is {len_bytes} bytes, too short to be a complete recording")]
    TooShort {
        /// Its length.
        len_bytes: u64,
    },
    /// The last 8 bytes are not the magic: the file was cut short or is not finished.
    #[error("file does not end in the magic (cut short, or never finished)")]
    NoEndMagic,
    /// The footer record is malformed.
    #[error("footer at byte {offset}: {problem}")]
    BadFooter {
        /// Where the footer starts.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
    /// The summary does not hash to what the footer says.
    #[error("summary (bytes {start}..{end}) does not match the hash in the footer")]
    SummaryHash {
        /// Where it starts.
        start: u64,
        /// Where it ends.
        end: u64,
    },
    /// A summary record is malformed.
    #[error(transparent)]
    Summary(#[from] FormatError),
}

/// Reads the footer and the summary it points at, checking the summary's hash (not the
/// data section's: that is [`crate::verify`]'s work).
pub fn read_summary(bytes: &[u8]) -> Result<Summary, FooterError> {
    let len = bytes.len();
    let min = MAGIC.len() + RECORD_PREFIX_LEN + 8 + FOOTER_LEN;
    if len < min {
        return Err(FooterError::TooShort { len_bytes: len as u64 });
    }
    if bytes.get(len - MAGIC.len()..) != Some(&MAGIC[..]) {
        return Err(FooterError::NoEndMagic);
    }
    let footer_at = len - FOOTER_LEN;
    let bad = |problem: String| FooterError::BadFooter { offset: footer_at as u64, problem };
    let mut cur = Bytes::new(bytes.get(footer_at..).unwrap_or(&[]));
    let (Some(opcode), Some(body_len), Some(summary_offset), Some(summary_hash)) =
        (cur.u8(), cur.u64(), cur.u64(), cur.array::<32>())
    else {
        return Err(bad("cut short".into()));
    };
    if opcode != op::FOOTER || body_len != FOOTER_BODY_LEN as u64 {
        return Err(bad(format!(
            "opcode {opcode:#04x} and length {body_len}, expected {:#04x} and {FOOTER_BODY_LEN}",
            op::FOOTER
        )));
    }
    let (start, end) = (summary_offset, footer_at as u64);
    if start > end || start < (MAGIC.len() + RECORD_PREFIX_LEN) as u64 {
        return Err(bad(format!("summary offset {start} is outside the file's body")));
    }
    let section = bytes.get(start as usize..end as usize).unwrap_or(&[]);
    if summary_hasher().update(section).finalize().as_bytes() != &summary_hash {
        return Err(FooterError::SummaryHash { start, end });
    }
    Ok(parse_summary(section, start)?)
}

fn parse_summary(section: &[u8], start: u64) -> Result<Summary, FormatError> {
    let mut summary = Summary { offset: start, ..Summary::default() };
    let mut at = 0usize;
    let mut seen_data_hash = false;
    let mut seen_stats = false;
    while let Some(record) = parse_record(section.get(at..).unwrap_or(&[]), start + at as u64)? {
        let bad = |problem: &str| FormatError::BadSummary {
            op: record.op,
            offset: record.offset,
            problem: problem.to_owned(),
        };
        match record.op {
            op::DATA_HASH => {
                if at != 0 {
                    return Err(bad("the data hash must be the summary's first record"));
                }
                summary.data_hash =
                    record.body.try_into().map_err(|_| bad("body is not 32 bytes"))?;
                seen_data_hash = true;
            }
            op::BRANCH => summary
                .branches
                .push(BranchEntry::decode(record.body).ok_or_else(|| bad("malformed branch"))?),
            op::CHUNK_INDEX => {
                if record.body.len() % CHUNK_INDEX_ENTRY_LEN != 0 {
                    return Err(bad("length is not a multiple of 112"));
                }
                let mut cur = Bytes::new(record.body);
                while cur.remaining() > 0 {
                    summary
                        .chunks
                        .push(ChunkIndexEntry::decode(&mut cur).ok_or_else(|| bad("cut short"))?);
                }
            }
            op::CHECKPOINT => {
                let entry = CheckpointEntry::decode(record.body)
                    .ok_or_else(|| bad("body is not 120 bytes"))?;
                if entry.offset.checked_add(entry.len_bytes).is_none_or(|end| end > start) {
                    return Err(bad("checkpoint lies outside the data section"));
                }
                summary.checkpoints.push(entry);
            }
            op::STATISTICS => {
                summary.statistics =
                    Statistics::decode(record.body).ok_or_else(|| bad("malformed statistics"))?;
                seen_stats = true;
            }
            op::HEADER | op::CHUNK | op::CHECKPOINT_STATE | op::FOOTER => {
                return Err(bad("this record does not belong in the summary"));
            }
            _ => {} // Unknown summary records are skipped; the summary hash covered them.
        }
        at += record.len_total() as usize;
    }
    if !seen_data_hash || !seen_stats {
        return Err(FormatError::BadSummary {
            op: if seen_data_hash { op::STATISTICS } else { op::DATA_HASH },
            offset: start,
            problem: "required record missing".into(),
        });
    }
    Ok(summary)
}

impl ChunkBuilder {
    /// Starts a new branch: computes the branch's id from its `BranchCreated` event (which
    /// follows `parent` at `first_seq`), and returns it with a chunk that already holds it.
    pub fn new_branch(
        created: &crate::event::NewEvent,
        parent: EventId,
        first_seq: u64,
    ) -> (BranchId, ChunkBuilder) {
        assert!(
            matches!(created.body, crate::event::Body::BranchCreated(_)),
            "a branch opens with BranchCreated"
        );
        let stored = created.encode(first_seq);
        let branch = BranchId(EventId::chain(parent, &stored));
        let mut chunk = ChunkBuilder::new(branch, parent, first_seq);
        chunk.push(&stored);
        (branch, chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compressed chunk's data: the declared length, then `stream`.
    fn data(declared: usize, stream: &[u8]) -> Vec<u8> {
        let mut data = (declared as u64).to_le_bytes().to_vec();
        data.extend_from_slice(stream);
        data
    }

    #[test]
    fn the_pure_decoder_reads_what_the_c_library_wrote() {
        let town = "Tamsin Hale walks to Marigold café. ".repeat(400);
        let noise: Vec<u8> =
            (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for raw in [town.as_bytes(), &noise, b"", b"x"] {
            let stream = zstd::bulk::compress(raw, compression::ZSTD_LEVEL).unwrap();
            let whole = data(raw.len(), &stream);
            assert_eq!(inflate_pure(&whole).unwrap(), raw);
            assert_eq!(inflate_pure(&whole), inflate(&whole));
            // A length that lies either way, and a cut stream, are refused by both.
            for bad in [data(raw.len() + 1, &stream), data(raw.len().saturating_sub(1), &stream)] {
                if bad == whole {
                    continue;
                }
                assert!(inflate_pure(&bad).is_err(), "{} bytes declared", raw.len());
                assert!(inflate(&bad).is_err());
            }
            let cut = data(raw.len(), stream.get(..stream.len() / 2).unwrap());
            assert!(inflate_pure(&cut).is_err() && inflate(&cut).is_err());
        }
    }
}
