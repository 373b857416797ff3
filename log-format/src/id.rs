//! Ids of events and branches, and the hash chain that links events.
//!
//! An [`EventId`] is a blake3 hash, keyed by a domain-separation context, of the parent's
//! id, the stored length and the stored bytes of the event. A [`BranchId`] is the id of
//! the branch's first event (its `BranchCreated`), so two forks can never share an id and
//! creating one costs a single event.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Key context of event ids. A format constant: chunk, data, summary and state hashes
/// have their own, so no hash can be mistaken for another kind.
pub const EVENT_ID_CONTEXT: &str = "hamlet 2026-11-22 event id";

/// The id of one event: the chained blake3 hash of its parent's id and its stored bytes.
/// Ordered as its bytes are (lexicographically): maps keyed by ids encode in that order.
///
/// Binary formats (postcard: events, checkpoints) carry the 32 bytes; human-readable ones
/// (JSON exports) carry the 64 hex digits (the command line shows `ev_` and the first 12 of
/// them, and takes either), so ids can key JSON objects.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventId(pub [u8; 32]);

/// How an id is written to a binary format: exactly what deriving serde on `EventId` wrote,
/// so the stored bytes never changed.
#[derive(Serialize, Deserialize)]
#[serde(rename = "EventId")]
struct RawEventId([u8; 32]);

impl Serialize for EventId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&self.to_hex())
        } else {
            RawEventId(self.0).serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EventId, D::Error> {
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            EventId::from_hex(&text).map_err(serde::de::Error::custom)
        } else {
            RawEventId::deserialize(d).map(|raw| EventId(raw.0))
        }
    }
}

/// Serde for a 32-byte hash field (a request or schema hash): the bytes in binary formats,
/// as deriving wrote them, and hex digits in human-readable ones.
pub mod hash_hex {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Serialises the hash.
    pub fn serialize<S: Serializer>(hash: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&super::hex(hash))
        } else {
            hash.serialize(s)
        }
    }

    /// Deserialises the hash.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            super::parse_full(&text, "").map_err(serde::de::Error::custom)
        } else {
            <[u8; 32]>::deserialize(d)
        }
    }

    /// The same for an optional hash.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        /// Serialises the hash, if any.
        pub fn serialize<S: Serializer>(hash: &Option<[u8; 32]>, s: S) -> Result<S::Ok, S::Error> {
            if s.is_human_readable() {
                hash.map(|h| super::super::hex(&h)).serialize(s)
            } else {
                hash.serialize(s)
            }
        }

        /// Deserialises the hash, if any.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u8; 32]>, D::Error> {
            if d.is_human_readable() {
                Option::<String>::deserialize(d)?
                    .map(|text| {
                        super::super::parse_full(&text, "").map_err(serde::de::Error::custom)
                    })
                    .transpose()
            } else {
                Option::<[u8; 32]>::deserialize(d)
            }
        }
    }
}

impl Ord for EventId {
    /// Byte order, compared eight bytes at a time (ids are map keys on the fold's hot path).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let words = |id: &EventId| {
            let mut out = [0u64; 4];
            for (word, bytes) in out.iter_mut().zip(id.0.chunks_exact(8)) {
                *word = u64::from_be_bytes(bytes.try_into().unwrap_or([0; 8]));
            }
            out
        };
        words(self).cmp(&words(other))
    }
}

impl PartialOrd for EventId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl EventId {
    /// The parent of the very first event of a log (genesis): all zeros.
    pub const NONE: EventId = EventId([0; 32]);

    /// Hashes the event as stored (kind tag, schema version, postcard header and body),
    /// never a re-encoding, so an event upcast to a newer schema keeps its id.
    pub fn chain(parent: EventId, stored: &[u8]) -> EventId {
        // Deriving the context's key is a compression of its own: do it once, then clone.
        static HASHER: std::sync::OnceLock<blake3::Hasher> = std::sync::OnceLock::new();
        let mut hasher =
            HASHER.get_or_init(|| blake3::Hasher::new_derive_key(EVENT_ID_CONTEXT)).clone();
        hasher.update(&parent.0);
        // The length keeps bytes from shifting between the parent and the body.
        hasher.update(&(stored.len() as u64).to_le_bytes());
        hasher.update(stored);
        EventId(*hasher.finalize().as_bytes())
    }

    /// All 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Whether this is [`EventId::NONE`].
    pub fn is_none(&self) -> bool {
        self.0 == [0; 32]
    }

    /// Parses 64 hex digits, with or without the `ev_` prefix.
    pub fn from_hex(text: &str) -> Result<EventId, IdError> {
        parse_full(text, "ev_").map(EventId)
    }

    /// Whether the hex of this id starts with `prefix` (hex digits, no `ev_`).
    pub fn starts_with_hex(&self, prefix: &str) -> bool {
        self.to_hex().starts_with(&prefix.to_ascii_lowercase())
    }
}

/// The id of a branch: the id of the branch's first event.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct BranchId(pub EventId);

impl BranchId {
    /// All 64 hex digits.
    pub fn to_hex(&self) -> String {
        self.0.to_hex()
    }

    /// Parses 64 hex digits, with or without the `br_` prefix.
    pub fn from_hex(text: &str) -> Result<BranchId, IdError> {
        parse_full(text, "br_").map(|bytes| BranchId(EventId(bytes)))
    }
}

/// An id that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The text has the other kind's prefix.
    #[error("`{text}` is a {found} id, but a {expected} id was expected")]
    WrongKind {
        /// What was given.
        text: String,
        /// The prefix expected.
        expected: &'static str,
        /// The prefix found.
        found: &'static str,
    },
    /// Not 64 hex digits.
    #[error("`{text}` is not an id: expected 64 hex digits{}", if prefix.is_empty() { String::new() } else { format!(" after `{prefix}`") })]
    NotHex {
        /// What was given.
        text: String,
        /// The optional prefix.
        prefix: &'static str,
    },
}

fn parse_full(text: &str, prefix: &'static str) -> Result<[u8; 32], IdError> {
    let other = if prefix == "ev_" { "br_" } else { "ev_" };
    if text.starts_with(other) {
        return Err(IdError::WrongKind { text: text.to_owned(), expected: prefix, found: other });
    }
    let digits = text.strip_prefix(prefix).unwrap_or(text);
    let not_hex = || IdError::NotHex { text: text.to_owned(), prefix };
    if digits.len() != 64 {
        return Err(not_hex());
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(digits.as_bytes().chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (hex_value(pair.first()), hex_value(pair.get(1))) else {
            return Err(not_hex());
        };
        *slot = hi << 4 | lo;
    }
    Ok(out)
}

fn hex_value(byte: Option<&u8>) -> Option<u8> {
    match byte? {
        b @ b'0'..=b'9' => Some(b - b'0'),
        b @ b'a'..=b'f' => Some(b - b'a' + 10),
        b @ b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Lower-case hex of any bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 15)] as char);
    }
    out
}

impl fmt::Display for EventId {
    /// `ev_` and the first 12 hex digits, as ids are shown to people.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ev_{}", &self.to_hex()[..12])
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for BranchId {
    /// `br_` and the first 12 hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "br_{}", &self.to_hex()[..12])
    }
}

impl fmt::Debug for BranchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for EventId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventId::from_hex(s)
    }
}

impl FromStr for BranchId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BranchId::from_hex(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_refuse_the_other_kind() {
        let id = EventId::chain(EventId::NONE, b"hello");
        assert_eq!(EventId::from_hex(&id.to_hex()), Ok(id));
        assert_eq!(EventId::from_hex(&format!("ev_{}", id.to_hex())), Ok(id));
        let err = EventId::from_hex(&format!("br_{}", id.to_hex())).unwrap_err();
        assert!(matches!(err, IdError::WrongKind { .. }), "{err}");
        assert!(BranchId::from_hex("br_zz").is_err());
        assert_eq!(id.to_string().len(), 15);
    }

    #[test]
    fn ids_order_as_their_bytes_do() {
        let ids: Vec<EventId> = (0..200u8)
            .map(|i| EventId::chain(EventId::NONE, &[i]))
            .chain([EventId([0; 32]), EventId([255; 32]), EventId([1; 32])])
            .collect();
        for a in &ids {
            for b in &ids {
                assert_eq!(a.cmp(b), a.0.cmp(&b.0));
            }
        }
    }

    #[test]
    fn chain_depends_on_parent_and_every_byte() {
        let a = EventId::chain(EventId::NONE, b"abc");
        assert_ne!(a, EventId::chain(a, b"abc"));
        assert_ne!(a, EventId::chain(EventId::NONE, b"abd"));
        // The length prefix keeps `parent || bytes` from being ambiguous.
        assert_ne!(EventId::chain(EventId::NONE, b""), EventId::chain(EventId::NONE, b"\0"));
    }
}
