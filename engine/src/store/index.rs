//! The sled index: what the store looks up. Everything here is derived from the segment
//! files and can be rebuilt from them; sled types never leave this module.
//!
//! Trees (keys big-endian so that sled's byte order is numeric order):
//! * `branches`: branch id → [`BranchRow`]
//! * `chunks`: branch id ‖ first seq → [`ChunkLoc`] (the sequence index)
//! * `times`: branch id ‖ first time ‖ first seq → nothing (the time index)
//! * `llm`: request hash ‖ branch id → seq of the `LlmResponded` event
//! * `checkpoints`: branch id ‖ seq → folded state
//! * `segments`: segment file name → its indexed length (how "behind" is detected)

use std::path::{Path, PathBuf};

use hamlet_log::{BranchId, EventId};
use serde::{Deserialize, Serialize};

/// Bumped when the index's layout changes: an index of another version is rebuilt.
const INDEX_VERSION: &[u8] = b"hamlet index 2";

/// A branch as the index holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRow {
    /// Its name.
    pub name: String,
    /// Its parent branch.
    pub parent: Option<BranchId>,
    /// The last shared seq on the parent.
    pub fork_seq: Option<u64>,
    /// The `nonce` of its `BranchCreated`.
    pub nonce: u64,
    /// Its last event's seq.
    pub head_seq: u64,
    /// Its last event's id.
    pub head_id: EventId,
    /// Its last event's simulated time.
    pub head_time: u64,
    /// Events of its own.
    pub n_events: u64,
    /// Its segment files, in order.
    pub segments: Vec<String>,
}

/// Where a chunk lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkLoc {
    /// The segment file.
    pub segment: String,
    /// Offset of the chunk's record in it.
    pub offset: u64,
    /// Length of the record.
    pub len_bytes: u64,
    /// First event's seq.
    pub first_seq: u64,
    /// Last event's seq.
    pub last_seq: u64,
    /// First event's simulated time.
    pub time_first: u64,
    /// Last event's simulated time.
    pub time_last: u64,
}

/// Why the index failed.
#[derive(Debug, thiserror::Error)]
#[error("sled index at {path}: {source}")]
pub struct IndexError {
    path: PathBuf,
    #[source]
    source: sled::Error,
}

/// The sled database and its trees.
pub struct Index {
    path: PathBuf,
    db: sled::Db,
    branches: sled::Tree,
    chunks: sled::Tree,
    times: sled::Tree,
    llm: sled::Tree,
    checkpoints: sled::Tree,
    segments: sled::Tree,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("path", &self.path).finish()
    }
}

fn key(branch: BranchId, n: u64) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..32].copy_from_slice(&branch.0 .0);
    out[32..].copy_from_slice(&n.to_be_bytes());
    out
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<T> {
    postcard::from_bytes(bytes).ok()
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).unwrap_or_else(|e| panic!("index rows encode: {e}"))
}

impl Index {
    /// Opens (or creates) the index at `path`. `Ok((index, fresh))`: `fresh` when it had to
    /// be created or was of another version (and was cleared).
    pub fn open(path: &Path) -> Result<(Index, bool), IndexError> {
        let err = |source| IndexError { path: path.to_owned(), source };
        let db = sled::Config::new().path(path).open().map_err(err)?;
        let index = Index::over(db, path)?;
        let version = index.db.get("version").map_err(err)?;
        let fresh = version.as_deref() != Some(INDEX_VERSION);
        if fresh {
            index.clear()?;
        }
        Ok((index, fresh))
    }

    /// Opens the index at `path` as it stands, to read it: `None` when there is none, it is
    /// of another version, or it does not open (another reader holds it). Never created,
    /// cleared or removed; sled writes nothing to a database it only reads.
    pub fn open_existing(path: &Path) -> Option<Index> {
        if !path.join("conf").is_file() || !path.join("db").is_file() {
            return None;
        }
        // A store closed a moment ago in this process may hold sled's lock a little longer
        // (its flusher ends after it); another reader holds it for good.
        let mut tries = 0;
        let db = loop {
            match sled::Config::new().path(path).open() {
                Ok(db) => break db,
                Err(_) if tries < 10 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(_) => return None,
            }
        };
        // The version first: opening the trees of another version's index would add them.
        if db.get("version").ok()?.as_deref() != Some(INDEX_VERSION) {
            return None;
        }
        Index::over(db, path).ok()
    }

    /// An index in a temporary database outside the store (sled removes it when dropped):
    /// where a store opened read-only keeps the index it builds from its segments.
    pub fn temporary() -> Result<Index, IndexError> {
        let path = Path::new("(a temporary index)");
        let db = sled::Config::new()
            .temporary(true)
            .open()
            .map_err(|source| IndexError { path: path.to_owned(), source })?;
        let index = Index::over(db, path)?;
        index.clear()?;
        Ok(index)
    }

    fn over(db: sled::Db, path: &Path) -> Result<Index, IndexError> {
        let err = |source| IndexError { path: path.to_owned(), source };
        let tree = |name: &str| db.open_tree(name).map_err(err);
        Ok(Index {
            branches: tree("branches")?,
            chunks: tree("chunks")?,
            times: tree("times")?,
            llm: tree("llm")?,
            checkpoints: tree("checkpoints")?,
            segments: tree("segments")?,
            path: path.to_owned(),
            db,
        })
    }

    fn err(&self) -> impl Fn(sled::Error) -> IndexError + '_ {
        |source| IndexError { path: self.path.clone(), source }
    }

    /// Empties every tree (before a rebuild).
    pub fn clear(&self) -> Result<(), IndexError> {
        for tree in [&self.branches, &self.chunks, &self.times, &self.llm, &self.segments] {
            tree.clear().map_err(self.err())?;
        }
        self.checkpoints.clear().map_err(self.err())?;
        self.db.insert("version", INDEX_VERSION).map_err(self.err())?;
        Ok(())
    }

    /// Writes sled's buffers out (sled 0.34's flush is not a device flush: the index is
    /// derived data and need not be durable).
    pub fn flush(&self) -> Result<(), IndexError> {
        self.db.flush().map(drop).map_err(self.err())
    }

    /// Every branch.
    pub fn branches(&self) -> Result<Vec<(BranchId, BranchRow)>, IndexError> {
        let mut out = Vec::new();
        for item in self.branches.iter() {
            let (k, v) = item.map_err(self.err())?;
            let (Ok(id), Some(row)) = (<[u8; 32]>::try_from(&k[..]), decode::<BranchRow>(&v))
            else {
                continue;
            };
            out.push((BranchId(EventId(id)), row));
        }
        Ok(out)
    }

    /// Sets a branch's row.
    pub fn put_branch(&self, id: BranchId, row: &BranchRow) -> Result<(), IndexError> {
        self.branches.insert(id.0 .0, encode(row)).map(drop).map_err(self.err())
    }

    /// Records a chunk in the sequence and time indexes.
    pub fn put_chunk(&self, branch: BranchId, loc: &ChunkLoc) -> Result<(), IndexError> {
        self.chunks.insert(key(branch, loc.first_seq), encode(loc)).map_err(self.err())?;
        let mut time_key = key(branch, loc.time_first).to_vec();
        time_key.extend_from_slice(&loc.first_seq.to_be_bytes());
        self.times.insert(time_key, &[]).map(drop).map_err(self.err())
    }

    /// The chunk of `branch`'s own events that holds `seq`.
    pub fn chunk_at_seq(&self, branch: BranchId, seq: u64) -> Result<Option<ChunkLoc>, IndexError> {
        let hit = self.chunks.range(key(branch, 0)..=key(branch, seq)).next_back();
        let Some(item) = hit else { return Ok(None) };
        let (_, v) = item.map_err(self.err())?;
        Ok(decode::<ChunkLoc>(&v).filter(|loc| loc.last_seq >= seq))
    }

    /// `branch`'s own chunks from the one holding `from_seq` to the one holding `to_seq`, in
    /// seq order: O(log n + k).
    pub fn chunks_from(
        &self,
        branch: BranchId,
        from_seq: u64,
        to_seq: u64,
    ) -> Result<Vec<ChunkLoc>, IndexError> {
        let start = match self.chunk_at_seq(branch, from_seq)? {
            Some(loc) => loc.first_seq,
            None => from_seq,
        };
        let mut out = Vec::new();
        for item in self.chunks.range(key(branch, start)..=key(branch, to_seq.max(start))) {
            let (_, v) = item.map_err(self.err())?;
            if let Some(loc) = decode::<ChunkLoc>(&v) {
                out.push(loc);
            }
        }
        Ok(out)
    }

    /// The first seq of the last chunk of `branch` whose first event is at or before
    /// `sim_time_secs`.
    pub fn chunk_at_time(
        &self,
        branch: BranchId,
        sim_time_secs: u64,
    ) -> Result<Option<u64>, IndexError> {
        let mut end = key(branch, sim_time_secs).to_vec();
        end.extend_from_slice(&u64::MAX.to_be_bytes());
        let start = key(branch, 0).to_vec();
        let hit = self.times.range(start..=end).next_back();
        let Some(item) = hit else { return Ok(None) };
        let (k, _) = item.map_err(self.err())?;
        Ok(k.get(40..48).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes))
    }

    /// Records where an answer to an LLM request is (every answer: a request may be
    /// answered again, on the same branch or another).
    pub fn put_llm(
        &self,
        request_hash: [u8; 32],
        branch: BranchId,
        seq: u64,
    ) -> Result<(), IndexError> {
        let mut k = request_hash.to_vec();
        k.extend_from_slice(&key(branch, seq));
        self.llm.insert(k, &[]).map(drop).map_err(self.err())
    }

    /// The seq of the latest answer to an LLM request among `branch`'s own events up to
    /// `until`.
    pub fn llm(
        &self,
        request_hash: [u8; 32],
        branch: BranchId,
        until: u64,
    ) -> Result<Option<u64>, IndexError> {
        let mut low = request_hash.to_vec();
        low.extend_from_slice(&key(branch, 0));
        let mut high = request_hash.to_vec();
        high.extend_from_slice(&key(branch, until));
        let Some(item) = self.llm.range(low..=high).next_back() else { return Ok(None) };
        let (k, _) = item.map_err(self.err())?;
        Ok(k.get(64..72).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes))
    }

    /// Every LLM entry (for checks).
    pub fn llm_entries(&self) -> Result<Vec<Vec<u8>>, IndexError> {
        self.llm.iter().keys().map(|k| k.map(|k| k.to_vec()).map_err(self.err())).collect()
    }

    /// Stores a checkpoint.
    pub fn put_checkpoint(
        &self,
        branch: BranchId,
        seq: u64,
        state: &[u8],
    ) -> Result<(), IndexError> {
        self.checkpoints.insert(key(branch, seq), state).map(drop).map_err(self.err())
    }

    /// The latest checkpoint of `branch`'s own events at or before `seq`.
    pub fn checkpoint_at(
        &self,
        branch: BranchId,
        seq: u64,
    ) -> Result<Option<(u64, Vec<u8>)>, IndexError> {
        let hit = self.checkpoints.range(key(branch, 0)..=key(branch, seq)).next_back();
        let Some(item) = hit else { return Ok(None) };
        let (k, v) = item.map_err(self.err())?;
        let at = k.get(32..40).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes);
        Ok(at.map(|at| (at, v.to_vec())))
    }

    /// Every checkpoint key (branch, seq).
    pub fn checkpoint_keys(&self) -> Result<Vec<(BranchId, u64)>, IndexError> {
        let mut out = Vec::new();
        for k in self.checkpoints.iter().keys() {
            let k = k.map_err(self.err())?;
            if let (Some(b), Some(s)) = (k.get(..32), k.get(32..40)) {
                if let (Ok(b), Ok(s)) = (<[u8; 32]>::try_from(b), <[u8; 8]>::try_from(s)) {
                    out.push((BranchId(EventId(b)), u64::from_be_bytes(s)));
                }
            }
        }
        Ok(out)
    }

    /// Removes every checkpoint.
    pub fn clear_checkpoints(&self) -> Result<(), IndexError> {
        self.checkpoints.clear().map_err(self.err())
    }

    /// Records a segment's indexed length.
    pub fn put_segment_len(&self, name: &str, len: u64) -> Result<(), IndexError> {
        self.segments.insert(name, &len.to_be_bytes()).map(drop).map_err(self.err())
    }

    /// Every segment's indexed length, sorted by name.
    pub fn segment_lens(&self) -> Result<Vec<(String, u64)>, IndexError> {
        let mut out = Vec::new();
        for item in self.segments.iter() {
            let (k, v) = item.map_err(self.err())?;
            let len = <[u8; 8]>::try_from(&v[..]).map(u64::from_be_bytes).unwrap_or(u64::MAX);
            out.push((String::from_utf8_lossy(&k).into_owned(), len));
        }
        Ok(out)
    }

    /// Every chunk entry, in key order (for checks).
    pub fn all_chunks(&self) -> Result<Vec<(BranchId, ChunkLoc)>, IndexError> {
        let mut out = Vec::new();
        for item in self.chunks.iter() {
            let (k, v) = item.map_err(self.err())?;
            let (Some(b), Some(loc)) = (k.get(..32), decode::<ChunkLoc>(&v)) else { continue };
            if let Ok(b) = <[u8; 32]>::try_from(b) {
                out.push((BranchId(EventId(b)), loc));
            }
        }
        Ok(out)
    }
}
