//! The store: the durable truth of a town's history, and the index beside it.
//!
//! **The truth** is append-only, hash-chained segment files under `segments/`, one series
//! per branch (`<branch id, 32 hex>-<n, 6 digits>.seg`), each a file preamble followed by
//! chunk records in the recording format (`log-format/FORMAT.md`). **The index** is a sled
//! database under `index/`: branch table, sequence and time indexes, LLM answers by request
//! hash, checkpoints. It is derived: when it is missing, of another version, fails to open
//! or disagrees with the segment lengths, [`Store::open`] rebuilds it from the segments.
//!
//! # Commit points
//! 1. [`Store::append_durable`]: the batch's chunk records are appended to the branch's
//!    current segment, then the segment is `fdatasync`ed; only then are ids returned.
//! 2. A new segment file (a fork, a new branch, a segment roll): created, preamble written,
//!    file synced, then the `segments/` directory synced, before any event in it is
//!    acknowledged.
//! 3. A torn tail found on open (a crash mid-append) is cut back to the last complete chunk
//!    and the file synced. Nothing is cut silently: the cut bytes are first kept beside the
//!    segment (`….seg.cut-<offset>`), and [`Store::repairs`] says what was cut and whether
//!    the index had recorded those bytes as acknowledged (damage, not a torn write).
//!    [`inspect`] finds the same repairs without writing anything.
//!
//! After a failed write or sync the store refuses further writes until reopened: the page
//! cache's contents are then unknown, and acknowledged events must stay a prefix.
//!
//! # Reading only
//! [`Store::open_read_only`] (every command that only reads) repairs nothing and writes
//! nothing: no segment changes, the index is used when it agrees with the segments and is
//! otherwise built from them in a temporary database outside the store, and the repairs a
//! writer's open would make are listed, not made. Readers share `LOCK`; a writer excludes
//! them.
//!
//! # Renaming a branch
//! A branch's name is in its `BranchCreated`, which its id hashes, so a rename is an event:
//! [`Store::rename_branch`] appends a `BranchRenamed` to the branch (its own events, at its
//! head's time) through commit point 1, and the index row takes the new name only once it
//! is durable. A branch is named by the last `BranchRenamed` among its own segments, else
//! by its `BranchCreated`: the scan that rebuilds the index reads names so, and an import
//! brings a renamed branch in under its new name. A rename reaches a segment only through
//! `write_records`, which names the branch from it — made by `rename_branch`, or copied by
//! an import; `append_durable` asserts it never writes one — so the index cannot miss one.
//!
//! # Deleting a branch
//! [`Store::delete_branch`] removes a fork's own segments (its events after the fork point;
//! the history it shares lives in its parent's). A tombstone (`<branch prefix>.deleting`) is
//! written and synced first, so a deletion cut short by a crash is finished on the next
//! open instead of leaving a branch with its first segments missing.

mod index;
pub mod storage;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use hamlet_log::event::{
    decode_body, decode_header, Body, BranchCreated, BranchRenamed, Event, NewEvent,
};
use hamlet_log::format::{
    file_preamble, parse_preamble, parse_record, Chunk, ChunkBuilder, ChunkRef, FormatError,
    StoredRef,
};
use hamlet_log::verify::verify;
use hamlet_log::{BranchId, EventId, Recording, RecordingWriter};

use index::BranchRow;
use index::Index;
pub use index::{ChunkLoc, IndexError};
pub use storage::{FsStorage, Storage};

/// Segment files roll over past this size.
pub const SEGMENT_TARGET_LEN: u64 = 64 << 20;
const SEGMENT_DIR: &str = "segments";
const WRITER_NAME: &str = concat!("hamlet ", env!("CARGO_PKG_VERSION"));
/// Segment files hold uncompressed chunks: an append is one chunk of a few events, and the
/// store reads them back often. Recordings written from the store compress them.
const SEGMENT_VERSION: u16 = hamlet_log::format::FORMAT_VERSION_UNCOMPRESSED;

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed.
    #[error("cannot {op} {path}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// To which file, relative to the store.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// An earlier write or sync failed.
    #[error("the store refuses writes after a failed write or sync ({cause}); reopen it")]
    Poisoned {
        /// The failure.
        cause: String,
    },
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A segment holds damage that is not a torn tail.
    #[error("segment {path} is damaged at byte {offset}: {problem}")]
    Corrupt {
        /// The segment.
        path: String,
        /// Where.
        offset: u64,
        /// What.
        problem: String,
    },
    /// No such branch.
    #[error("no branch `{0}` in this store")]
    NoBranch(String),
    /// A branch of that name exists.
    #[error("a branch named `{0}` exists already")]
    NameTaken(String),
    /// A name no branch may take.
    #[error("cannot name a branch `{name}`: {why}")]
    BadName {
        /// The name asked for.
        name: String,
        /// Why not.
        why: &'static str,
    },
    /// A seq past a branch's head.
    #[error("branch `{name}` holds events #0 to #{head_seq}; #{seq} is past its head")]
    SeqOutOfRange {
        /// The branch's name.
        name: String,
        /// Its head.
        head_seq: u64,
        /// The seq asked for.
        seq: u64,
    },
    /// A recording to import is damaged.
    #[error("the recording is not sound ({n_problems} problems; first: {first})")]
    NotSound {
        /// How many.
        n_problems: usize,
        /// The first.
        first: String,
    },
    /// A recording disagrees with what the store holds.
    #[error("cannot import: {0}")]
    Conflict(String),
    /// Another process has the store open.
    #[error("store {dir} is in use by another process")]
    InUse {
        /// The store's directory.
        dir: String,
    },
    /// No store where one was to be read.
    #[error("no store at {dir} (no `{SEGMENT_DIR}` directory in it)")]
    NoStore {
        /// The directory.
        dir: String,
    },
    /// A write to a store opened to read.
    #[error("the store was opened read-only; {what} needs a command that writes")]
    ReadOnly {
        /// What was refused.
        what: &'static str,
    },
    /// A recording does not open.
    #[error(transparent)]
    Read(#[from] hamlet_log::recording::ReadError),
    /// A branch that cannot be deleted.
    #[error("cannot delete branch `{name}`: {why}")]
    Undeletable {
        /// The branch.
        name: String,
        /// Why not.
        why: String,
    },
}

fn io_err<'a>(op: &'static str, path: &'a str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io { op, path: path.to_owned(), source }
}

/// A branch as the store lists it: the one branch row of every reader.
pub use hamlet_core::log::Branch;

/// The store over some [`Storage`].
pub struct Store<S: Storage = FsStorage> {
    storage: S,
    index: Index,
    branches: BTreeMap<BranchId, BranchRow>,
    poisoned: Option<String>,
    rebuilt: bool,
    repairs: Vec<Repair>,
    /// Opened with [`Store::open_read_only`]: nothing in its directory is written.
    read_only: bool,
    /// Segments roll over past this size ([`SEGMENT_TARGET_LEN`]; tests set less).
    segment_target: u64,
    // Held for the store's life: one process at a time opens a store directory.
    _lock: Option<std::fs::File>,
}

impl<S: Storage> std::fmt::Debug for Store<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("branches", &self.branches.len()).finish()
    }
}

impl Store<FsStorage> {
    /// Opens the store in `dir` (created if missing), rebuilding its index if needed.
    ///
    /// The directory is locked (`LOCK`, an advisory lock) for as long as the store is open:
    /// a second process gets [`StoreError::InUse`] instead of repairing files under a live
    /// writer.
    pub fn open(dir: &Path) -> Result<Store<FsStorage>, StoreError> {
        let storage = FsStorage::new(dir).map_err(io_err("create the store directory", "."))?;
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("LOCK"))
            .map_err(io_err("create", "LOCK"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::InUse { dir: dir.display().to_string() })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err("lock", "LOCK")(e)),
        }
        let mut store = Store::open_with(storage, &dir.join("index"))?;
        store._lock = Some(lock);
        Ok(store)
    }

    /// Opens the store in `dir` to read it: no segment is created, changed or removed, the
    /// index is neither made, rebuilt nor written, and every write is refused
    /// ([`StoreError::ReadOnly`]). (sled has no read-only mode: opening its database may
    /// rewrite sled's own snapshot of it, never a row.)
    ///
    /// Its index is used when it agrees with the segments; otherwise (stale, missing, of
    /// another version, or a deletion left half done) an index is built from the segments
    /// in a temporary database outside the store. Damage a writer's open would repair is
    /// not repaired: what is sound is read, and [`Store::repairs`] lists what a repair
    /// would do (nothing kept yet). The `LOCK` is held shared: readers side by side, no
    /// writer among them.
    pub fn open_read_only(dir: &Path) -> Result<Store<FsStorage>, StoreError> {
        if !dir.join(SEGMENT_DIR).is_dir() {
            return Err(StoreError::NoStore { dir: dir.display().to_string() });
        }
        let lock = match std::fs::File::open(dir.join("LOCK")) {
            Ok(lock) => match lock.try_lock_shared() {
                Ok(()) => Some(lock),
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(StoreError::InUse { dir: dir.display().to_string() })
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io_err("lock", "LOCK")(e)),
            },
            // Every writer makes the file and holds it: without one, no writer is there.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("open", "LOCK")(e)),
        };
        let storage = FsStorage::new(dir).map_err(io_err("open the store directory", "."))?;
        let names = storage.list(SEGMENT_DIR).map_err(io_err("list", SEGMENT_DIR))?;
        let deleting: std::collections::BTreeSet<String> =
            names.iter().filter_map(|n| n.strip_suffix(".deleting").map(str::to_owned)).collect();
        let disk = Index::open_existing(&dir.join("index"));
        let from_disk = disk.is_some();
        let mut store = Store::over(storage, disk.map_or_else(Index::temporary, Ok)?);
        store.read_only = true;
        store._lock = lock;
        let mut indexed = BTreeMap::new();
        if from_disk {
            let files = store.segment_files()?;
            let lens = store.index.segment_lens()?;
            if deleting.is_empty() && files == lens {
                store.branches = store.index.branches()?.into_iter().collect();
                if store.index_agrees(&files) {
                    return Ok(store);
                }
            }
            indexed = lens.into_iter().collect();
            // The store's own index is left as it was; this one is built beside it.
            store.index = Index::temporary()?;
        }
        let (mut scanned, mut repairs) = scan(&store.storage)?;
        // A branch whose deletion was begun is gone: a writer's open finishes it.
        scanned.retain(|id, _| !deleting.contains(&id.to_hex()[..32]));
        repairs.retain(|r| !deleting.iter().any(|d| r.path().contains(d.as_str())));
        for repair in &mut repairs {
            if let Repair::Cut { path, indexed_len, .. } = repair {
                let name = path.rsplit('/').next().unwrap_or_default();
                *indexed_len = indexed.get(name).copied();
            }
        }
        store.fill_index(scanned)?;
        store.rebuilt = true;
        store.repairs = repairs;
        Ok(store)
    }
}

impl<S: Storage> Store<S> {
    fn over(storage: S, index: Index) -> Store<S> {
        Store {
            storage,
            index,
            branches: BTreeMap::new(),
            poisoned: None,
            rebuilt: false,
            repairs: Vec::new(),
            read_only: false,
            segment_target: SEGMENT_TARGET_LEN,
            _lock: None,
        }
    }

    /// Opens a store over `storage`, with its sled index at `index_dir`.
    pub fn open_with(mut storage: S, index_dir: &Path) -> Result<Store<S>, StoreError> {
        storage.create_dir_all(SEGMENT_DIR).map_err(io_err("create", SEGMENT_DIR))?;
        let finished_deletions = finish_deletions(&mut storage)?;
        let (index, fresh) = match Index::open(index_dir) {
            Ok(found) => found,
            Err(_) => {
                // Derived data that fails to open is rebuilt, never trusted or repaired.
                let _ = std::fs::remove_dir_all(index_dir);
                Index::open(index_dir)?
            }
        };
        let mut store = Store::over(storage, index);
        let files = store.segment_files()?;
        let indexed = store.index.segment_lens()?;
        let trusted = !fresh && !finished_deletions && files == indexed && {
            store.branches = store.index.branches()?.into_iter().collect();
            store.index_agrees(&files)
        };
        if !trusted {
            store.rebuild_index()?;
        }
        Ok(store)
    }

    /// Whether the index's branch rows agree with the segments: every branch's last chunk
    /// is where the index says, ends its last segment, and ends with the row's head. One
    /// chunk read per branch. Index writes can reach disk in any order before a crash;
    /// segment lengths alone do not prove the rows current.
    fn index_agrees(&self, files: &[(String, u64)]) -> bool {
        let prefixes: std::collections::BTreeSet<&str> =
            files.iter().filter_map(|(name, _)| parse_segment_name(name).map(|(p, _)| p)).collect();
        let rows: std::collections::BTreeSet<String> =
            self.branches.keys().map(|id| id.to_hex()[..32].to_owned()).collect();
        if prefixes.len() != rows.len() || !rows.iter().all(|r| prefixes.contains(r.as_str())) {
            return false;
        }
        self.branches.iter().all(|(id, row)| {
            let Ok(Some(loc)) = self.index.chunk_at_seq(*id, row.head_seq) else { return false };
            let file_len = files.iter().find(|(n, _)| *n == loc.segment).map(|(_, l)| *l);
            if row.segments.last() != Some(&loc.segment)
                || file_len != Some(loc.offset + loc.len_bytes)
            {
                return false;
            }
            let Ok(bytes) = self.read_chunk(&loc) else { return false };
            let header = parse_record(&bytes, loc.offset)
                .ok()
                .flatten()
                .and_then(|r| ChunkRef::parse(r).ok())
                .map(|c| c.header);
            header.is_some_and(|h| {
                h.branch == *id && h.last_id == row.head_id && h.last_seq() == row.head_seq
            })
        })
    }

    /// Whether opening had to rebuild the index (opened read-only: build one outside the
    /// store, its own left as it was).
    pub fn was_rebuilt(&self) -> bool {
        self.rebuilt
    }

    /// Rolls segments over past `len` bytes instead of [`SEGMENT_TARGET_LEN`]: for tests,
    /// whose batches must cross roll-overs. Any length reads back the same.
    pub fn set_segment_target(&mut self, len: u64) {
        self.segment_target = len.max(1);
    }

    /// The repairs made to the segment files since the store was opened (by opening it,
    /// or by [`Store::rebuild_index`]): each cut, where its bytes are kept, and whether it
    /// lost acknowledged events.
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The storage (tests take it back to simulate a crash).
    pub fn into_storage(self) -> S {
        self.storage
    }

    fn segment_files(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let names = self.storage.list(SEGMENT_DIR).map_err(io_err("list", SEGMENT_DIR))?;
        let mut out = Vec::new();
        for name in names.into_iter().filter(|n| parse_segment_name(n).is_some()) {
            let path = format!("{SEGMENT_DIR}/{name}");
            out.push((name, self.storage.len(&path).map_err(io_err("stat", &path))?));
        }
        Ok(out)
    }

    /// Rebuilds the index from the segment files, cutting torn tails first. Each cut keeps
    /// the bytes it removes in a file beside the segment (`….seg.cut-<offset>`, which no
    /// scan reads) and is listed in [`Store::repairs`].
    pub fn rebuild_index(&mut self) -> Result<(), StoreError> {
        self.check_writable("rebuilding the index")?;
        let (scanned, repairs) = scan(&self.storage)?;
        let indexed: BTreeMap<String, u64> = self.index.segment_lens()?.into_iter().collect();
        for mut repair in repairs {
            match &mut repair {
                Repair::Cut { path, len, file_len, indexed_len, kept } => {
                    let name = path.rsplit('/').next().unwrap_or_default();
                    *indexed_len = indexed.get(name).copied();
                    let tail = usize::try_from(file_len.saturating_sub(*len)).map_err(|e| {
                        io_err("read the tail of", path.as_str())(io::Error::other(e))
                    })?;
                    let cut = self
                        .storage
                        .read_at(path, *len, tail)
                        .map_err(io_err("read the tail of", path.as_str()))?;
                    let keep = format!("{path}.cut-{len}");
                    if self.storage.len(&keep).is_err() {
                        self.storage.create(&keep).map_err(io_err("create", &keep))?;
                        self.storage.append(&keep, &cut).map_err(io_err("write", &keep))?;
                        self.storage.sync(&keep).map_err(io_err("sync", &keep))?;
                        self.storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))?;
                    }
                    *kept = Some(keep);
                    self.storage
                        .truncate(path, *len)
                        .map_err(io_err("cut the torn tail of", path.as_str()))?;
                    self.storage.sync(path).map_err(io_err("sync", path.as_str()))?;
                }
                Repair::Remove { path } => {
                    self.storage.remove(path).map_err(io_err("remove", path.as_str()))?;
                    self.storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))?;
                }
                Repair::SetAside { path, kept, .. } => {
                    let keep = format!("{path}.cut-0");
                    self.storage.rename(path, &keep).map_err(io_err("set aside", path.as_str()))?;
                    self.storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))?;
                    *kept = Some(keep);
                }
            }
            self.repairs.push(repair);
        }
        self.fill_index(scanned)?;
        self.rebuilt = true;
        Ok(())
    }

    /// Replaces the index's rows with those of a scan.
    fn fill_index(&mut self, scanned: BTreeMap<BranchId, Scanned>) -> Result<(), StoreError> {
        self.index.clear()?;
        self.branches.clear();
        for (branch, found) in scanned {
            for (loc, llm) in &found.chunks {
                self.index.put_chunk(branch, loc)?;
                for (hash, seq) in llm {
                    self.index.put_llm(*hash, branch, *seq)?;
                }
            }
            self.index.put_branch(branch, &found.row)?;
            self.branches.insert(branch, found.row);
        }
        for (name, len) in self.segment_files()? {
            self.index.put_segment_len(&name, len)?;
        }
        self.index.flush()?;
        Ok(())
    }

    // ---- reading ----

    /// Every branch, parents before children, then by name.
    pub fn branches(&self) -> Vec<Branch> {
        let mut out: Vec<Branch> = Vec::new();
        let mut left: Vec<(&BranchId, &BranchRow)> = self.branches.iter().collect();
        left.sort_by(|a, b| (a.1.fork_seq, &a.1.name).cmp(&(b.1.fork_seq, &b.1.name)));
        while !left.is_empty() {
            let before = left.len();
            left.retain(|(id, row)| {
                let ready = row.parent.is_none_or(|p| out.iter().any(|o| o.id == p));
                if ready {
                    out.push(self.info(**id, row));
                }
                !ready
            });
            if left.len() == before {
                // An orphan (its parent is missing): list it anyway.
                out.extend(left.drain(..).map(|(id, row)| self.info(*id, row)));
            }
        }
        out
    }

    /// The row of branch `id`, its parent named.
    fn info(&self, id: BranchId, row: &BranchRow) -> Branch {
        Branch {
            name: row.name.clone(),
            parent_name: row.parent.and_then(|p| self.branches.get(&p)).map(|p| p.name.clone()),
            fork_seq: row.fork_seq,
            head_seq: row.head_seq,
            own_events: row.n_events,
            id,
            parent: row.parent,
            head_id: row.head_id,
            head_time: row.head_time,
        }
    }

    /// A branch by id.
    pub fn branch(&self, id: BranchId) -> Option<Branch> {
        self.branches.get(&id).map(|row| self.info(id, row))
    }

    /// A branch by name, or by a prefix (4+ hex digits) of its id.
    pub fn find_branch(&self, name: &str) -> Result<Branch, StoreError> {
        if let Some((id, row)) = self.branches.iter().find(|(_, r)| r.name == name) {
            return Ok(self.info(*id, row));
        }
        let hex = name.strip_prefix("br_").unwrap_or(name).to_ascii_lowercase();
        let hits: Vec<_> =
            self.branches.iter().filter(|(id, _)| id.to_hex().starts_with(&hex)).collect();
        match hits.as_slice() {
            [(id, row)] if hex.len() >= 4 => Ok(self.info(**id, row)),
            _ => Err(StoreError::NoBranch(name.to_owned())),
        }
    }

    /// The stretches of history of `branch`, root first: (branch, last seq taken).
    pub fn ancestry(&self, branch: BranchId) -> Result<Vec<(BranchId, u64)>, StoreError> {
        let mut row =
            self.branches.get(&branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        let mut out = vec![(branch, row.head_seq)];
        let mut limit = row.head_seq;
        while let (Some(parent), Some(fork_seq)) = (row.parent, row.fork_seq) {
            row = self
                .branches
                .get(&parent)
                .ok_or_else(|| StoreError::NoBranch(parent.to_string()))?;
            // An ancestor is taken only up to the lowest fork point below it.
            limit = limit.min(fork_seq);
            out.push((parent, limit));
            if out.len() > self.branches.len() {
                break;
            }
        }
        out.reverse();
        Ok(out)
    }

    fn read_chunk(&self, loc: &ChunkLoc) -> Result<Vec<u8>, StoreError> {
        let path = format!("{SEGMENT_DIR}/{}", loc.segment);
        if loc.len_bytes > hamlet_log::format::MAX_RECORD_LEN + 9 {
            return Err(StoreError::Corrupt {
                path,
                offset: loc.offset,
                problem: format!("the index gives a chunk of {} bytes", loc.len_bytes),
            });
        }
        self.storage
            .read_at(&path, loc.offset, loc.len_bytes as usize)
            .map_err(io_err("read", &path))
    }

    /// Calls `f` with the stored bytes of every event of `branch` (with its ancestry) from
    /// `from` to `to` inclusive, in seq order. `f` returns false to stop.
    pub fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        mut f: impl FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let mut start = 0u64;
        for (b, until) in self.ancestry(branch)? {
            let until = until.min(to);
            if from <= until {
                for loc in self.index.chunks_from(b, from.max(start), until)? {
                    if loc.first_seq > until {
                        break;
                    }
                    let bytes = self.read_chunk(&loc)?;
                    let corrupt = |problem: String| StoreError::Corrupt {
                        path: loc.segment.clone(),
                        offset: loc.offset,
                        problem,
                    };
                    let record = parse_record(&bytes, loc.offset)
                        .map_err(|e| corrupt(e.to_string()))?
                        .ok_or_else(|| corrupt("no record".into()))?;
                    let chunk = ChunkRef::parse(record)
                        .and_then(|c| c.open())
                        .map_err(|e| corrupt(e.to_string()))?;
                    for event in chunk.events() {
                        let event = event.map_err(|e| corrupt(e.to_string()))?;
                        let seq = event.header.seq;
                        if seq > until {
                            break;
                        }
                        if seq >= from && !f(b, &event) {
                            return Ok(());
                        }
                    }
                }
            }
            start = until.saturating_add(1);
            if until >= to {
                break;
            }
        }
        Ok(())
    }

    /// The decoded events of `branch` (with its ancestry) from `from` to `to` inclusive.
    pub fn events(&self, branch: BranchId, from: u64, to: u64) -> Result<Vec<Event>, StoreError> {
        let mut out = Vec::new();
        let mut failure = None;
        self.for_each_stored(branch, from, to, |b, event| {
            match decode_body(event.kind, event.schema, event.body) {
                Ok(body) => {
                    let (id, parent, header) = (event.id, event.parent, event.header.to_header());
                    out.push(Event { id, parent, branch: b, header, body });
                    true
                }
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        })?;
        match failure {
            Some(e) => {
                Err(StoreError::Corrupt { path: String::new(), offset: 0, problem: e.to_string() })
            }
            None => Ok(out),
        }
    }

    /// The event at `seq` of `branch` (with its ancestry).
    pub fn event_at(&self, branch: BranchId, seq: u64) -> Result<Event, StoreError> {
        let info = self.branch(branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        if seq > info.head_seq {
            return Err(StoreError::SeqOutOfRange {
                name: info.name,
                head_seq: info.head_seq,
                seq,
            });
        }
        self.events(branch, seq, seq)?.pop().ok_or_else(|| StoreError::SeqOutOfRange {
            name: info.name,
            head_seq: info.head_seq,
            seq,
        })
    }

    /// The last seq of `branch` (with its ancestry) at or before `sim_time_secs`.
    pub fn seq_at_time(
        &self,
        branch: BranchId,
        sim_time_secs: u64,
    ) -> Result<Option<u64>, StoreError> {
        let mut best = None;
        for (b, until) in self.ancestry(branch)? {
            let Some(first) = self.index.chunk_at_time(b, sim_time_secs)? else { continue };
            // A chunk of an ancestor may start past the fork point: start no later than it.
            let first = first.min(until);
            let mut found = None;
            self.for_each_stored(b, first, until, |_, event| {
                if event.header.sim_time_secs <= sim_time_secs {
                    found = Some(event.header.seq);
                    true
                } else {
                    false
                }
            })?;
            if found.is_some() {
                best = found;
            }
        }
        Ok(best)
    }

    /// Where the answer to an LLM request is on `branch`'s ancestry: its seq.
    pub fn llm_answer(
        &self,
        request_hash: [u8; 32],
        branch: BranchId,
    ) -> Result<Option<u64>, StoreError> {
        for (b, until) in self.ancestry(branch)?.into_iter().rev() {
            if let Some(seq) = self.index.llm(request_hash, b, until)? {
                return Ok(Some(seq));
            }
        }
        Ok(None)
    }

    /// Stores a checkpoint (derived data: a folded state after `seq`).
    pub fn put_checkpoint(
        &self,
        branch: BranchId,
        seq: u64,
        state: &[u8],
    ) -> Result<(), StoreError> {
        self.check_writable("writing a checkpoint")?;
        Ok(self.index.put_checkpoint(branch, seq, state)?)
    }

    /// The latest checkpoint on `branch`'s ancestry at or before `seq`: (seq, state).
    pub fn checkpoint_at(
        &self,
        branch: BranchId,
        seq: u64,
    ) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        for (b, until) in self.ancestry(branch)?.into_iter().rev() {
            if let Some(found) = self.index.checkpoint_at(b, seq.min(until))? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Every checkpoint (branch, seq).
    pub fn checkpoints(&self) -> Result<Vec<(BranchId, u64)>, StoreError> {
        Ok(self.index.checkpoint_keys()?)
    }

    /// Drops every checkpoint.
    pub fn clear_checkpoints(&self) -> Result<(), StoreError> {
        self.check_writable("dropping checkpoints")?;
        Ok(self.index.clear_checkpoints()?)
    }

    /// Checks that the segments are sound and the index agrees with them (read-only).
    pub fn check_index(&self) -> Result<(), String> {
        let (scanned, repairs) = scan(&self.storage).map_err(|e| e.to_string())?;
        if !repairs.is_empty() {
            let said: Vec<String> = repairs.iter().map(ToString::to_string).collect();
            return Err(format!("segments need repair: {}", said.join("; ")));
        }
        let index_branches: BTreeMap<BranchId, BranchRow> =
            self.index.branches().map_err(|e| e.to_string())?.into_iter().collect();
        let scan_branches: BTreeMap<BranchId, BranchRow> =
            scanned.iter().map(|(id, s)| (*id, s.row.clone())).collect();
        if index_branches != scan_branches || self.branches != scan_branches {
            return Err(format!(
                "branch table differs: index {index_branches:?}, segments {scan_branches:?}"
            ));
        }
        let scan_chunks: Vec<(BranchId, ChunkLoc)> = scanned
            .iter()
            .flat_map(|(id, s)| s.chunks.iter().map(move |(loc, _)| (*id, loc.clone())))
            .collect();
        let index_chunks = self.index.all_chunks().map_err(|e| e.to_string())?;
        if index_chunks != scan_chunks {
            return Err(format!(
                "sequence index differs: {} entries, segments hold {} chunks",
                index_chunks.len(),
                scan_chunks.len()
            ));
        }
        let n_llm: usize =
            scanned.values().flat_map(|s| s.chunks.iter()).map(|(_, l)| l.len()).sum();
        let index_llm = self.index.llm_entries().map_err(|e| e.to_string())?.len();
        if n_llm != index_llm {
            return Err(format!(
                "LLM index has {index_llm} entries, segments hold {n_llm} answers"
            ));
        }
        Ok(())
    }

    // ---- writing ----

    fn check_writable(&self, what: &'static str) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::ReadOnly { what });
        }
        match &self.poisoned {
            Some(cause) => Err(StoreError::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    fn poison<T>(&mut self, err: StoreError) -> Result<T, StoreError> {
        self.poisoned = Some(err.to_string());
        Err(err)
    }

    /// Deletes a fork: its own events (those after its fork point) and its name. Refused for
    /// a root branch (it is the run itself) and for a branch that others fork from (their
    /// history runs through it). The index is rebuilt afterwards, so checkpoints (derived
    /// data) are written again as seeks need them. Returns how many events went.
    pub fn delete_branch(&mut self, branch: BranchId) -> Result<u64, StoreError> {
        self.check_writable("deleting a branch")?;
        let row = self
            .branches
            .get(&branch)
            .cloned()
            .ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        let undeletable = |why: String| StoreError::Undeletable { name: row.name.clone(), why };
        if row.parent.is_none() {
            return Err(undeletable(
                "it is a root: the run itself (delete the store's directory to drop it)".into(),
            ));
        }
        let forks: Vec<&str> = self
            .branches
            .values()
            .filter(|r| r.parent == Some(branch))
            .map(|r| r.name.as_str())
            .collect();
        if !forks.is_empty() {
            return Err(undeletable(format!(
                "{} fork from it; delete those first",
                forks.join(", ")
            )));
        }
        let tombstone = format!("{SEGMENT_DIR}/{}.deleting", &branch.to_hex()[..32]);
        let written = self
            .storage
            .create(&tombstone)
            .and_then(|()| self.storage.sync(&tombstone))
            .and_then(|()| self.storage.sync_dir(SEGMENT_DIR));
        if let Err(e) = written {
            return self.poison(io_err("write", &tombstone)(e));
        }
        // From here the deletion is promised: a failure leaves it to the next open.
        if let Err(e) = finish_deletions(&mut self.storage).and_then(|_| self.rebuild_index()) {
            return self.poison(e);
        }
        Ok(row.n_events)
    }

    /// Whether `name` may name a branch of this store (`branch`, when it is renamed): the
    /// rules every name a branch takes follows, a fork's, an import's or a rename's. Not
    /// empty (nor only spaces), and no other branch's.
    fn check_name(&self, name: &str, branch: Option<BranchId>) -> Result<(), StoreError> {
        let bad = |why| Err(StoreError::BadName { name: name.to_owned(), why });
        if name.trim().is_empty() {
            return bad("a branch's name cannot be empty");
        }
        match self.branches.iter().find(|(_, r)| r.name == name) {
            Some((id, _)) if Some(*id) == branch => bad("the branch has that name already"),
            Some(_) => Err(StoreError::NameTaken(name.to_owned())),
            None => Ok(()),
        }
    }

    /// Renames `branch` to `name`: a `BranchRenamed` event appended to the branch (at its
    /// head's time, no causes) and made durable, then the index row renamed. Refused, with
    /// nothing written, for an unknown branch, an empty name, or a name another branch has
    /// (or this one has already). Returns the name it had.
    ///
    /// The branch's id does not change (it hashes its `BranchCreated`), nor does any other
    /// branch's name: a fork is named by its own events only, so renaming a parent leaves
    /// its forks as they are.
    pub fn rename_branch(&mut self, branch: BranchId, name: &str) -> Result<String, StoreError> {
        self.check_writable("renaming a branch")?;
        let row =
            self.branches.get(&branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        self.check_name(name, Some(branch))?;
        let (old, seq) = (row.name.clone(), row.head_seq + 1);
        let renamed = NewEvent::new(
            row.head_time,
            Body::BranchRenamed(BranchRenamed { name: name.to_owned() }),
        );
        let mut chunk = ChunkBuilder::new(branch, row.head_id, seq);
        chunk.push(&renamed.encode(seq));
        // `write_records` names the branch from the rename once the segment is synced.
        self.write_records(branch, vec![chunk.finish().1])?;
        debug_assert_eq!(self.branches.get(&branch).map(|r| r.name.as_str()), Some(name));
        Ok(old)
    }

    /// Starts a new root branch (the first event of a town's history) at time 0.
    pub fn create_root(&mut self, name: &str) -> Result<BranchId, StoreError> {
        self.create_root_as(name, self.next_nonce())
    }

    /// [`Store::create_root`] with the `nonce` that tells roots of the same name apart
    /// given (to make a recorded root again, id for id).
    pub fn create_root_as(&mut self, name: &str, nonce: u64) -> Result<BranchId, StoreError> {
        let created = NewEvent::new(
            0,
            Body::BranchCreated(BranchCreated {
                name: name.to_owned(),
                parent_branch: None,
                fork_seq: None,
                nonce,
            }),
        );
        self.start_branch(name, &created.encode(0), EventId::NONE)
    }

    /// Forks `from` after its event `at_seq`: one `BranchCreated` event in a new segment,
    /// whatever the log's length. The parent is untouched.
    pub fn fork(
        &mut self,
        from: BranchId,
        at_seq: u64,
        name: &str,
    ) -> Result<BranchId, StoreError> {
        self.fork_as(from, at_seq, name, self.next_nonce())
    }

    /// A nonce no branch of the store has had: one past the highest, so a branch made after
    /// a deletion never takes the deleted one's id.
    pub fn next_nonce(&self) -> u64 {
        self.branches.values().map(|r| r.nonce.saturating_add(1)).max().unwrap_or(0)
    }

    /// [`Store::fork`] with the `nonce` given (to make a recorded fork again, id for id).
    pub fn fork_as(
        &mut self,
        from: BranchId,
        at_seq: u64,
        name: &str,
        nonce: u64,
    ) -> Result<BranchId, StoreError> {
        let point = self.event_at(from, at_seq)?;
        // The fork's parent is the branch that holds the fork point as one of its own
        // events: forking `from` inside its ancestor's part of history forks that ancestor.
        let from = point.branch;
        let created = NewEvent::new(
            point.sim_time_secs(),
            Body::BranchCreated(BranchCreated {
                name: name.to_owned(),
                parent_branch: Some(from),
                fork_seq: Some(at_seq),
                nonce,
            }),
        );
        self.start_branch(name, &created.encode(at_seq + 1), point.id)
    }

    fn start_branch(
        &mut self,
        name: &str,
        stored: &[u8],
        parent: EventId,
    ) -> Result<BranchId, StoreError> {
        self.check_writable("making a branch")?;
        self.check_name(name, None)?;
        let (kind, schema, header, body) =
            decode_header(stored).unwrap_or_else(|e| panic!("branch event decodes: {e}"));
        let created = match decode_body(kind, schema, body) {
            Ok(Body::BranchCreated(b)) => b,
            _ => panic!("a branch opens with BranchCreated"),
        };
        let branch = BranchId(EventId::chain(parent, stored));
        let mut chunk = ChunkBuilder::new(branch, parent, header.seq);
        chunk.push(stored);
        let (_, record) = chunk.finish();
        let segment = segment_name(branch, 1);
        if let Err(e) = self.new_segment(&segment) {
            return self.poison(e);
        }
        let row = BranchRow {
            name: created.name,
            parent: created.parent_branch,
            fork_seq: created.fork_seq,
            nonce: created.nonce,
            head_seq: header.seq.wrapping_sub(1),
            head_id: parent,
            head_time: header.sim_time_secs,
            n_events: 0,
            segments: vec![segment],
        };
        self.branches.insert(branch, row);
        if let Err(e) = self.write_records(branch, vec![record]) {
            self.branches.remove(&branch);
            return Err(e);
        }
        Ok(branch)
    }

    fn new_segment(&mut self, name: &str) -> Result<(), StoreError> {
        let path = format!("{SEGMENT_DIR}/{name}");
        self.storage.create(&path).map_err(io_err("create", &path))?;
        self.storage
            .append(&path, &file_preamble(SEGMENT_VERSION, WRITER_NAME))
            .map_err(io_err("write", &path))?;
        self.storage.sync(&path).map_err(io_err("sync", &path))?;
        self.storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))
    }

    /// Appends events to `branch` and makes them durable: one chunk per
    /// [`hamlet_log::format::CHUNK_TARGET_EVENTS`], one `fdatasync` for the batch. Returns
    /// their ids once they are on disk.
    ///
    /// # Panics
    /// On an event the log must never hold: time before the branch's head, a
    /// `BranchCreated` (use [`Store::fork`]), a `BranchRenamed` (use
    /// [`Store::rename_branch`]), or an unknown kind.
    pub fn append_durable(
        &mut self,
        branch: BranchId,
        events: &[NewEvent],
    ) -> Result<Vec<EventId>, StoreError> {
        self.append_linked(branch, events, &[])
    }

    /// As [`Store::append_durable`], where an event may also name earlier events *of the
    /// same batch* as causes: `links[i]` lists the batch positions (all below `i`) whose ids
    /// are appended to event `i`'s causes as the batch is chained. `links` may be shorter
    /// than `events` (the rest have no in-batch causes).
    ///
    /// # Panics
    /// As `append_durable`, and on a link to the event itself or a later one.
    pub fn append_linked(
        &mut self,
        branch: BranchId,
        events: &[NewEvent],
        links: &[Vec<usize>],
    ) -> Result<Vec<EventId>, StoreError> {
        self.check_writable("appending events")?;
        let row =
            self.branches.get(&branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        let (mut seq, mut time) = (row.head_seq + 1, row.head_time);
        let mut builder = ChunkBuilder::new(branch, row.head_id, seq);
        let mut records = Vec::new();
        let mut ids = Vec::with_capacity(events.len());
        for (i, event) in events.iter().enumerate() {
            let linked;
            let event = match links.get(i).filter(|l| !l.is_empty()) {
                None => event,
                Some(link) => {
                    let mut with = event.clone();
                    for &j in link {
                        assert!(
                            j < i,
                            "{branch}: batch event {i} names batch event {j} as a cause"
                        );
                        with.causes.push(ids[j]);
                    }
                    linked = with;
                    &linked
                }
            };
            assert!(
                event.sim_time_secs >= time,
                "{branch}: event #{seq} at {}s is before the branch's head at {time}s",
                event.sim_time_secs
            );
            // A branch's first event comes from `fork`, a rename from `rename_branch`
            // (which names the branch in the index once it is durable): never from here.
            assert!(
                !matches!(
                    event.body,
                    Body::BranchCreated(_) | Body::BranchRenamed(_) | Body::Unknown { .. }
                ),
                "{branch}: event #{seq} is a {}, which append never writes",
                hamlet_log::event::kind_name(event.body.kind())
            );
            let stored = event.encode(seq);
            let id = builder.push(&stored);
            debug_assert_eq!(decode_header(&stored).map(|h| h.2.seq).ok(), Some(seq));
            ids.push(id);
            (seq, time) = (seq + 1, event.sim_time_secs);
            if builder.is_full() {
                let next = ChunkBuilder::new(branch, id, builder.next_seq());
                records.push(std::mem::replace(&mut builder, next).finish().1);
            }
        }
        if builder.n_events() > 0 {
            records.push(builder.finish().1);
        }
        self.write_records(branch, records)?;
        Ok(ids)
    }

    /// Appends already stored events (an import): their bytes are kept verbatim, so their
    /// ids are the same as where they came from.
    fn append_stored(
        &mut self,
        branch: BranchId,
        stored: &[&[u8]],
        expected_last: EventId,
    ) -> Result<(), StoreError> {
        let row =
            self.branches.get(&branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        let mut builder = ChunkBuilder::new(branch, row.head_id, row.head_seq + 1);
        let mut records = Vec::new();
        let mut last = row.head_id;
        for bytes in stored {
            last = builder.push(bytes);
            if builder.is_full() {
                let next = ChunkBuilder::new(branch, last, builder.next_seq());
                records.push(std::mem::replace(&mut builder, next).finish().1);
            }
        }
        assert_eq!(
            last, expected_last,
            "{branch}: imported events do not chain to the recording's ids"
        );
        if builder.n_events() > 0 {
            records.push(builder.finish().1);
        }
        self.write_records(branch, records)
    }

    fn write_records(&mut self, branch: BranchId, records: Vec<Vec<u8>>) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut row = self
            .branches
            .get(&branch)
            .cloned()
            .ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
        // The write path asserts before a byte is written: a chunk the store cannot read, or
        // one that does not continue its branch, must never reach a segment.
        let mut expect = (row.head_seq, row.head_id, row.head_time);
        let mut headers = Vec::with_capacity(records.len());
        // A rename among them (from `rename_branch`, or copied by an import) names the
        // branch once they are durable.
        let mut renamed = None;
        for record in &records {
            let parsed = parse_record(record, 0)
                .ok()
                .flatten()
                .and_then(|r| ChunkRef::parse(r).ok())
                .and_then(|c| c.open().ok())
                .unwrap_or_else(|| panic!("{branch}: the store built a chunk it cannot read"));
            let h = parsed.header;
            assert_eq!(h.parent, expect.1, "{branch}: commit out of order");
            assert_eq!(h.first_seq, expect.0.wrapping_add(1), "{branch}: seq gap");
            assert!(h.time_first >= expect.2, "{branch}: time runs backwards at #{}", h.first_seq);
            expect = (h.last_seq(), h.last_id, h.time_last);
            if let Some(name) = parsed.last_rename() {
                renamed = Some(name);
            }
            headers.push((h, llm_answers(&parsed)));
        }
        let mut segment = row.segments.last().cloned().unwrap_or_else(|| segment_name(branch, 1));
        let mut path = format!("{SEGMENT_DIR}/{segment}");
        let mut len = match self.storage.len(&path) {
            Ok(len) => len,
            Err(e) => return self.poison(io_err("stat", &path)(e)),
        };
        // What is acknowledged ends here; on a failed write or sync, the bytes after it are
        // taken back (the kernel may have dropped them from the page cache already).
        // Segments this write created: taken back with the rest on a failure.
        let mut acked = (path.clone(), len, Vec::new());
        let mut locs = Vec::with_capacity(records.len());
        let mut touched = vec![];
        for (record, (h, llm)) in records.iter().zip(headers) {
            if len + record.len() as u64 > self.segment_target
                && len > file_preamble(SEGMENT_VERSION, WRITER_NAME).len() as u64
            {
                // Roll over: the full segment is synced first, so acknowledged stays a prefix.
                if let Err(e) = self.storage.sync(&path).map_err(io_err("sync", &path)) {
                    return self.fail_write(&acked, e);
                }
                segment = segment_name(branch, row.segments.len() as u32 + 1);
                acked.2.push(format!("{SEGMENT_DIR}/{segment}"));
                if let Err(e) = self.new_segment(&segment) {
                    return self.fail_write(&acked, e);
                }
                row.segments.push(segment.clone());
                path = format!("{SEGMENT_DIR}/{segment}");
                len = match self.storage.len(&path) {
                    Ok(len) => len,
                    Err(e) => return self.fail_write(&acked, io_err("stat", &path)(e)),
                };
            }
            if let Err(e) = self.storage.append(&path, record) {
                return self.fail_write(&acked, io_err("append to", &path)(e));
            }
            row.head_seq = h.last_seq();
            row.head_id = h.last_id;
            row.head_time = h.time_last;
            row.n_events += u64::from(h.n_events);
            locs.push((
                ChunkLoc {
                    segment: segment.clone(),
                    offset: len,
                    len_bytes: record.len() as u64,
                    first_seq: h.first_seq,
                    last_seq: h.last_seq(),
                    time_first: h.time_first,
                    time_last: h.time_last,
                },
                llm,
            ));
            len += record.len() as u64;
            if touched.last() != Some(&(segment.clone(), len)) {
                touched.retain(|(name, _)| name != &segment);
                touched.push((segment.clone(), len));
            }
        }
        if let Err(e) = self.storage.sync(&path).map_err(io_err("sync", &path)) {
            return self.fail_write(&acked, e);
        }
        // Durable. The store's own state first; then the derived index, whose segment
        // lengths (what makes the index trusted on open) are written last. A failure here is
        // not lost data, but the index can no longer be trusted: refuse more writes.
        if let Some(name) = renamed {
            row.name = name;
        }
        self.branches.insert(branch, row.clone());
        let indexed = (|| -> Result<(), IndexError> {
            for (loc, llm) in &locs {
                self.index.put_chunk(branch, loc)?;
                for (hash, seq) in llm {
                    self.index.put_llm(*hash, branch, *seq)?;
                }
            }
            self.index.put_branch(branch, &row)?;
            for (name, len) in &touched {
                self.index.put_segment_len(name, *len)?;
            }
            Ok(())
        })();
        if let Err(e) = indexed {
            return self.poison(e.into());
        }
        Ok(())
    }

    /// A write or sync failed: take back the unacknowledged bytes if we can, then refuse
    /// further writes until the store is reopened.
    /// Takes back what a failed write wrote — the bytes after the acknowledged end of the
    /// segment it began in, and every segment it created — then refuses further writes.
    /// What cannot be taken back (a truncate or remove that fails too) the next open finds:
    /// a torn tail is cut, a segment that continues events no longer there is set aside.
    fn fail_write<T>(
        &mut self,
        acked: &(String, u64, Vec<String>),
        err: StoreError,
    ) -> Result<T, StoreError> {
        let (path, len, created) = acked;
        let _ = self.storage.truncate(path, *len);
        for new in created.iter().rev() {
            let _ = self.storage.remove(new);
        }
        if !created.is_empty() {
            let _ = self.storage.sync_dir(SEGMENT_DIR);
        }
        self.poison(err)
    }

    // ---- recordings ----

    /// Writes `branch` with its ancestry (or, with `None`, every branch) to a recording.
    /// Chunks are cut afresh from the event sequence, so export → import → export gives the
    /// same bytes. No checkpoints: [`crate::history::export_with_checkpoints`] adds them.
    pub fn export<W: io::Write>(&self, branch: Option<BranchId>, out: W) -> Result<W, StoreError> {
        let mut writer =
            RecordingWriter::new(out, WRITER_NAME).map_err(io_err("write", "the recording"))?;
        self.export_into(branch, &mut writer)?;
        writer.finish().map_err(io_err("write", "the recording"))
    }

    /// Like [`Store::export`], into a writer the caller finishes (to add checkpoints).
    pub fn export_into<W: io::Write>(
        &self,
        branch: Option<BranchId>,
        writer: &mut RecordingWriter<W>,
    ) -> Result<(), StoreError> {
        self.export_until(branch, None, writer)
    }

    /// [`Store::export_into`], the exported branch cut after seq `until` (its ancestry
    /// then ends there too; a moment before the branch's fork point gives its ancestor up to
    /// that moment). `None`: the whole branch.
    pub fn export_until<W: io::Write>(
        &self,
        branch: Option<BranchId>,
        until: Option<u64>,
        writer: &mut RecordingWriter<W>,
    ) -> Result<(), StoreError> {
        let plan: Vec<(BranchId, u64)> = match branch {
            Some(b) => self.ancestry(b)?,
            None => self.branches().iter().map(|b| (b.id, b.head_seq)).collect(),
        };
        for (b, until) in plan.into_iter().map(|(b, head)| (b, until.map_or(head, |u| u.min(head))))
        {
            let row = self.branches.get(&b).ok_or_else(|| StoreError::NoBranch(b.to_string()))?;
            let first = row.fork_seq.map_or(0, |s| s + 1);
            if first > until {
                // The cut comes before this branch forked: its ancestors end the recording.
                continue;
            }
            let mut builder: Option<ChunkBuilder> = None;
            let mut failure = None;
            let mut prev = None;
            self.for_each_stored(b, first, until, |_, event| {
                let current = builder
                    .get_or_insert_with(|| ChunkBuilder::new(b, event.parent, event.header.seq));
                current.push(event.stored);
                prev = Some(event.id);
                if current.is_full_for(writer.compresses()) {
                    if let Some(full) = builder.take() {
                        if let Err(e) = writer.write_chunk(&full.finish().1) {
                            failure = Some(e);
                            return false;
                        }
                    }
                }
                true
            })?;
            if let Some(rest) = builder.take().filter(|c| c.n_events() > 0) {
                if let Err(e) = writer.write_chunk(&rest.finish().1) {
                    failure = Some(e);
                }
            }
            if let Some(e) = failure {
                return Err(StoreError::Conflict(format!("export of {b} refused: {e}")));
            }
        }
        Ok(())
    }

    /// Imports a recording: every branch it holds, events byte for byte (so ids are the
    /// same). Events the store already holds are checked, not duplicated. Returns the
    /// number of new events.
    pub fn import(&mut self, bytes: &[u8]) -> Result<u64, StoreError> {
        self.check_writable("importing")?;
        let report = verify(bytes);
        if let Some(first) = report.problems.first() {
            return Err(StoreError::NotSound {
                n_problems: report.problems.len(),
                first: first.to_string(),
            });
        }
        let rec = Recording::open(bytes)
            .map_err(|e| StoreError::NotSound { n_problems: 1, first: e.to_string() })?;
        let mut n_new = 0;
        for entry in rec.branches().to_vec() {
            let own: Vec<_> = rec.own_chunks(entry.id).into_iter().copied().collect();
            for chunk in &own {
                let chunk =
                    rec.chunk(chunk)?.open().map_err(hamlet_log::recording::ReadError::from)?;
                // A chunk's new events are appended together, before the next is opened.
                let mut pending: Vec<&[u8]> = Vec::new();
                let mut last = EventId::NONE;
                for event in chunk.events() {
                    let event = event.map_err(hamlet_log::recording::ReadError::from)?;
                    let seq = event.header.seq;
                    match self.branches.get(&entry.id) {
                        Some(row) if seq <= row.head_seq => {
                            let have = self.event_at(entry.id, seq)?;
                            if have.id != event.id {
                                return Err(StoreError::Conflict(format!(
                                    "branch `{}` holds {} at #{seq}, the recording {}",
                                    entry.name, have.id, event.id
                                )));
                            }
                        }
                        Some(_) => {
                            pending.push(event.stored);
                            last = event.id;
                        }
                        None => {
                            // The branch's first event: its fork point must be here already.
                            if let (Some(parent), Some(fork_seq)) = (entry.parent, entry.fork_seq) {
                                let point = self.event_at(parent, fork_seq).map_err(|_| {
                                    StoreError::Conflict(format!(
                                        "branch `{}` forks {parent} at #{fork_seq}, which the store does not hold",
                                        entry.name
                                    ))
                                })?;
                                if point.id != event.parent {
                                    return Err(StoreError::Conflict(format!(
                                        "branch `{}` forks from {}, but the store holds {} there",
                                        entry.name, event.parent, point.id
                                    )));
                                }
                            }
                            if self.branches.values().any(|r| r.name == entry.name) {
                                return Err(StoreError::NameTaken(entry.name.clone()));
                            }
                            let branch =
                                self.start_branch(&entry.name, event.stored, event.parent)?;
                            debug_assert_eq!(branch, entry.id);
                            n_new += 1;
                        }
                    }
                }
                if !pending.is_empty() {
                    n_new += pending.len() as u64;
                    self.append_stored(entry.id, &pending, last)?;
                }
            }
        }
        self.index.flush()?;
        Ok(n_new)
    }

    /// Flushes the index's buffers (not needed for durability; the segments are the truth).
    pub fn flush_index(&self) -> Result<(), StoreError> {
        Ok(self.index.flush()?)
    }
}

/// Finishes every deletion a tombstone announces: the branch's segments are removed, then
/// the tombstone. Returns whether there was one.
fn finish_deletions<S: Storage>(storage: &mut S) -> Result<bool, StoreError> {
    let names = storage.list(SEGMENT_DIR).map_err(io_err("list", SEGMENT_DIR))?;
    let tombstones: Vec<&String> = names.iter().filter(|n| n.ends_with(".deleting")).collect();
    for tombstone in &tombstones {
        let prefix = tombstone.trim_end_matches(".deleting");
        for name in &names {
            if parse_segment_name(name).is_some_and(|(p, _)| p == prefix) {
                let path = format!("{SEGMENT_DIR}/{name}");
                storage.remove(&path).map_err(io_err("remove", &path))?;
            }
        }
        storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))?;
        let path = format!("{SEGMENT_DIR}/{tombstone}");
        storage.remove(&path).map_err(io_err("remove", &path))?;
        storage.sync_dir(SEGMENT_DIR).map_err(io_err("sync", SEGMENT_DIR))?;
    }
    Ok(!tombstones.is_empty())
}

fn segment_name(branch: BranchId, n: u32) -> String {
    format!("{}-{n:06}.seg", &branch.to_hex()[..32])
}

fn parse_segment_name(name: &str) -> Option<(&str, u32)> {
    let stem = name.strip_suffix(".seg")?;
    let (prefix, n) = stem.split_once('-')?;
    (prefix.len() == 32 && prefix.bytes().all(|b| b.is_ascii_hexdigit())).then_some(())?;
    Some((prefix, n.parse().ok()?))
}

/// The LLM answers in a chunk: (request hash, seq).
fn llm_answers(chunk: &Chunk<'_>) -> Vec<([u8; 32], u64)> {
    const LLM_RESPONDED: u16 = 11;
    chunk
        .events()
        .filter_map(Result::ok)
        .filter(|e| e.kind == LLM_RESPONDED)
        .filter_map(|e| match decode_body(e.kind, e.schema, e.body) {
            Ok(Body::LlmResponded(r)) => Some((r.request_hash, e.header.seq)),
            _ => None,
        })
        .collect()
}

/// A repair of the segment files: what a crash mid-write (or damage) left behind, found by
/// the scan and made when the index is rebuilt. Never silent: [`Store::repairs`] lists
/// what opening did, and [`inspect`] what it would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Cut a segment's tail: its last sound chunk ends at `len`, of `file_len` bytes.
    Cut {
        /// The segment, relative to the store.
        path: String,
        /// Where the cut is.
        len: u64,
        /// The file's length before it.
        file_len: u64,
        /// The segment's length when the index last recorded it, if it did: bytes below
        /// it were acknowledged to a writer, and cutting them loses events.
        indexed_len: Option<u64>,
        /// Where the cut bytes are kept (beside the segment), once cut.
        kept: Option<String>,
    },
    /// Remove a segment whose creation was cut short (it held no event).
    Remove {
        /// The segment, relative to the store.
        path: String,
    },
    /// Set a whole segment aside: it continues events that are no longer there (a write
    /// that rolled over into it failed), so nothing in it was acknowledged.
    SetAside {
        /// The segment, relative to the store.
        path: String,
        /// Its length.
        file_len: u64,
        /// Where it is kept (renamed beside its old name), once set aside.
        kept: Option<String>,
    },
}

impl Repair {
    /// The segment it repairs, relative to the store.
    pub fn path(&self) -> &str {
        match self {
            Repair::Cut { path, .. } | Repair::Remove { path } | Repair::SetAside { path, .. } => {
                path
            }
        }
    }

    /// Whether the repair loses events a writer was told were durable.
    pub fn loses_acknowledged(&self) -> bool {
        matches!(self, Repair::Cut { len, indexed_len: Some(acked), .. } if acked > len)
    }
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repair::Cut { path, len, file_len, indexed_len, kept } => {
                let cut = file_len.saturating_sub(*len);
                write!(f, "{path}: {cut} bytes cut at byte {len}")?;
                match indexed_len {
                    Some(acked) if acked > len => write!(
                        f,
                        " (damage: {} acknowledged bytes among them)",
                        acked.min(file_len).saturating_sub(*len)
                    )?,
                    Some(_) => write!(f, " (a write cut short, never acknowledged)")?,
                    None => write!(f, " (no index says whether they were acknowledged)")?,
                }
                match kept {
                    Some(kept) => write!(f, "; the cut bytes are kept in {kept}"),
                    None => Ok(()),
                }
            }
            Repair::Remove { path } => write!(f, "{path}: removed, its creation cut short"),
            Repair::SetAside { path, file_len, kept } => {
                write!(f, "{path}: {file_len} bytes set aside, a failed write's continuation")?;
                match kept {
                    Some(kept) => write!(f, "; kept as {kept}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// What opening the store in `dir` would repair, found without writing anything: the
/// segments are scanned read-only and the index is not opened.
pub fn inspect(dir: &Path) -> Result<Vec<Repair>, StoreError> {
    if !dir.join(SEGMENT_DIR).is_dir() {
        return Err(StoreError::Io {
            op: "find",
            path: format!("{}/{SEGMENT_DIR}", dir.display()),
            source: io::Error::new(io::ErrorKind::NotFound, "not a store: no such directory"),
        });
    }
    let storage = FsStorage::new(dir).map_err(io_err("open the store directory", "."))?;
    Ok(scan(&storage)?.1)
}

/// The LLM answers in a chunk: (request hash, seq).
type LlmAnswers = Vec<([u8; 32], u64)>;

/// One branch found by scanning segments.
#[derive(Debug)]
struct Scanned {
    row: BranchRow,
    /// The id the branch's first chunk continues (its fork point, or none).
    first_parent: EventId,
    chunks: Vec<(ChunkLoc, LlmAnswers)>,
}

/// Reads every segment: chunks checked, chains linked, fork points found. Read-only: the
/// torn tails it finds are returned as repairs.
fn scan<S: Storage>(storage: &S) -> Result<(BTreeMap<BranchId, Scanned>, Vec<Repair>), StoreError> {
    let names = storage.list(SEGMENT_DIR).map_err(io_err("list", SEGMENT_DIR))?;
    let mut by_prefix: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    for name in names {
        if let Some((prefix, n)) = parse_segment_name(&name) {
            by_prefix.entry(prefix.to_owned()).or_default().push((n, name.clone()));
        }
    }
    let mut out = BTreeMap::new();
    let mut repairs = Vec::new();
    for (_, mut segments) in by_prefix {
        segments.sort();
        let mut found: Option<(BranchId, Scanned)> = None;
        let n_segments = segments.len();
        let mut orphaned = false;
        for (i, (_, name)) in segments.into_iter().enumerate() {
            if orphaned {
                repairs.push(set_aside(storage, &name)?);
                continue;
            }
            orphaned = scan_segment(storage, &name, i + 1 == n_segments, &mut found, &mut repairs)?;
            if orphaned {
                repairs.push(set_aside(storage, &name)?);
            }
        }
        if let Some((id, scanned)) = found {
            out.insert(id, scanned);
        }
    }
    // Every fork point must be there, with the id the fork continues.
    for (id, s) in &out {
        let (Some(parent), Some(fork_seq)) = (s.row.parent, s.row.fork_seq) else { continue };
        let point = out.get(&parent).and_then(|p| {
            let (loc, _) =
                p.chunks.iter().find(|(l, _)| l.first_seq <= fork_seq && fork_seq <= l.last_seq)?;
            let path = format!("{SEGMENT_DIR}/{}", loc.segment);
            let bytes = storage.read_at(&path, loc.offset, loc.len_bytes as usize).ok()?;
            let chunk =
                ChunkRef::parse(parse_record(&bytes, loc.offset).ok()??).ok()?.open().ok()?;
            let hit = chunk.events().filter_map(Result::ok).find(|e| e.header.seq == fork_seq);
            hit.map(|e| e.id)
        });
        if point != Some(s.first_parent) {
            return Err(StoreError::Corrupt {
                path: format!(
                    "{SEGMENT_DIR}/{}",
                    s.row.segments.first().cloned().unwrap_or_default()
                ),
                offset: 0,
                problem: format!(
                    "branch {id} forks {parent} at #{fork_seq}, which the store does not hold"
                ),
            });
        }
    }
    Ok((out, repairs))
}

/// Setting aside the whole segment `name`: it continues events that are no longer there.
fn set_aside<S: Storage>(storage: &S, name: &str) -> Result<Repair, StoreError> {
    let path = format!("{SEGMENT_DIR}/{name}");
    let file_len = storage.len(&path).map_err(io_err("stat", &path))?;
    Ok(Repair::SetAside { path, file_len, kept: None })
}

/// A cut of `path` at `at`, of a file `file_len` bytes long, as the scan finds it.
fn cut(path: &str, at: usize, file_len: usize) -> Repair {
    Repair::Cut {
        path: path.to_owned(),
        len: at as u64,
        file_len: file_len as u64,
        indexed_len: None,
        kept: None,
    }
}

/// Scans one segment into `found`. True when the segment is orphaned: it opens with a
/// chunk that continues events no earlier segment holds (a write that rolled over, failed,
/// and could not take back the segment it had made), so nothing in it or after it was
/// acknowledged.
fn scan_segment<S: Storage>(
    storage: &S,
    name: &str,
    last_segment: bool,
    found: &mut Option<(BranchId, Scanned)>,
    repairs: &mut Vec<Repair>,
) -> Result<bool, StoreError> {
    let path = format!("{SEGMENT_DIR}/{name}");
    let bytes = storage.read(&path).map_err(io_err("read", &path))?;
    let corrupt =
        |offset: u64, problem: String| StoreError::Corrupt { path: path.clone(), offset, problem };
    let preamble_len = file_preamble(SEGMENT_VERSION, WRITER_NAME).len();
    let mut at = match parse_preamble(&bytes) {
        Ok(preamble) => preamble.end,
        // A segment whose creation was cut short holds nothing acknowledged.
        Err(_) if last_segment && bytes.len() <= preamble_len && is_cut_preamble(&bytes) => {
            repairs.push(Repair::Remove { path: path.clone() });
            return Ok(false);
        }
        Err(e) => return Err(corrupt(0, e.to_string())),
    };
    let mut n_chunks = 0;
    loop {
        let rest = bytes.get(at..).unwrap_or(&[]);
        let record = match parse_record(rest, at as u64) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(FormatError::Truncated { .. }) if last_segment => {
                repairs.push(cut(&path, at, bytes.len()));
                break;
            }
            Err(e) => return Err(corrupt(at as u64, e.to_string())),
        };
        let end = at + record.len_total() as usize;
        // Segments hold uncompressed chunks (format version 1); `open` borrows their data.
        let chunk = match ChunkRef::parse(record)
            .and_then(|c| c.open())
            .and_then(|c| c.verify_events().map(|_| c))
        {
            Ok(c) => c,
            // A damaged last record is a write the crash cut short.
            Err(_) if last_segment && end == bytes.len() => {
                repairs.push(cut(&path, at, bytes.len()));
                break;
            }
            Err(e) => return Err(corrupt(at as u64, e.to_string())),
        };
        let h = chunk.header;
        match found {
            None => {
                let first = chunk.events().next().and_then(Result::ok);
                let created =
                    first.as_ref().and_then(|f| match decode_body(f.kind, f.schema, f.body) {
                        Ok(Body::BranchCreated(b)) if f.id == h.branch.0 => Some(b),
                        _ => None,
                    });
                let Some(created) = created else {
                    return Err(corrupt(
                        at as u64,
                        "a branch's first chunk must open with its BranchCreated".into(),
                    ));
                };
                let root_ok = created.parent_branch.is_none()
                    && created.fork_seq.is_none()
                    && h.first_seq == 0
                    && h.parent == EventId::NONE;
                let fork_ok = created.parent_branch.is_some()
                    && created.fork_seq.and_then(|s| s.checked_add(1)) == Some(h.first_seq);
                if !(root_ok || fork_ok) {
                    return Err(corrupt(
                        at as u64,
                        "the BranchCreated does not match where its chunk starts".into(),
                    ));
                }
                *found = Some((
                    h.branch,
                    Scanned {
                        row: BranchRow {
                            name: created.name,
                            parent: created.parent_branch,
                            fork_seq: created.fork_seq,
                            nonce: created.nonce,
                            head_seq: h.last_seq(),
                            head_id: h.last_id,
                            head_time: h.time_last,
                            n_events: u64::from(h.n_events),
                            segments: vec![name.to_owned()],
                        },
                        first_parent: h.parent,
                        chunks: Vec::new(),
                    },
                ));
            }
            Some((id, s)) => {
                let row = &mut s.row;
                let first_of_segment = row.segments.last().map(String::as_str) != Some(name);
                if first_of_segment
                    && h.branch == *id
                    && (h.parent != row.head_id || h.first_seq != row.head_seq + 1)
                {
                    return Ok(true);
                }
                if h.branch != *id
                    || h.parent != row.head_id
                    || h.first_seq != row.head_seq + 1
                    || h.time_first < row.head_time
                {
                    return Err(corrupt(
                        at as u64,
                        format!("chunk does not continue its branch's chain at #{}", h.first_seq),
                    ));
                }
                row.head_seq = h.last_seq();
                row.head_id = h.last_id;
                row.head_time = h.time_last;
                row.n_events += u64::from(h.n_events);
                if row.segments.last().map(String::as_str) != Some(name) {
                    row.segments.push(name.to_owned());
                }
            }
        }
        // A branch is named by its last rename (its segments hold its own events only).
        if let (Some((_, s)), Some(renamed)) = (found.as_mut(), chunk.last_rename()) {
            s.row.name = renamed;
        }
        if let Some((_, s)) = found {
            s.chunks.push((
                ChunkLoc {
                    segment: name.to_owned(),
                    offset: at as u64,
                    len_bytes: record.len_total(),
                    first_seq: h.first_seq,
                    last_seq: h.last_seq(),
                    time_first: h.time_first,
                    time_last: h.time_last,
                },
                llm_answers(&chunk),
            ));
        }
        n_chunks += 1;
        at = end;
    }
    if n_chunks == 0 && last_segment {
        // Created, never written: nothing in it was acknowledged.
        repairs.push(Repair::Remove { path });
    }
    Ok(false)
}

/// Whether `bytes` is a prefix of a segment preamble (a creation cut short).
fn is_cut_preamble(bytes: &[u8]) -> bool {
    let preamble = file_preamble(SEGMENT_VERSION, WRITER_NAME);
    preamble.starts_with(bytes)
}
