//! Random access to a finished recording held in memory: the summary, each branch with
//! its ancestry, events by seq or simulated time in O(log n) chunks, and checkpoints.
//!
//! Opening checks the preamble, the footer and the summary's hash; chunks are checked as
//! they are read. [`crate::verify::verify`] checks everything at once.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

use crate::event::{decode_body, Event};
use crate::format::{
    parse_preamble, parse_record, read_summary, BranchEntry, CheckpointEntry, Chunk,
    ChunkIndexEntry, ChunkRef, FooterError, FormatError, StoredRef, Summary,
};
use crate::id::BranchId;

/// Why a recording cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The start is wrong.
    #[error(transparent)]
    Preamble(FormatError),
    /// The end is wrong.
    #[error(transparent)]
    Footer(#[from] FooterError),
}

/// An error reading an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The chunk or event is damaged.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The summary points at something that is not there.
    #[error("the chunk index entry for byte {offset} does not match the file: {problem}")]
    Index {
        /// The entry's offset.
        offset: u64,
        /// What differs.
        problem: String,
    },
    /// A branch the caller named is not in the file.
    #[error("branch {0} is not in this recording")]
    NoBranch(BranchId),
}

/// A finished recording, opened over its bytes.
#[derive(Debug, Clone)]
pub struct Recording<'a> {
    bytes: &'a [u8],
    preamble: crate::format::Preamble,
    summary: Summary,
    // Each branch's own chunks (indexes into `summary.chunks`), in seq order.
    by_branch: std::collections::BTreeMap<BranchId, Vec<usize>>,
    // `verify` found these bytes sound: chunk hashes need not be recomputed on read.
    verified: bool,
    // Every checkpoint's state was found equal to its events' fold: seeks may start there.
    checkpoints_trusted: bool,
}

/// One stretch of a branch's history: a branch's chunks up to a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch {
    /// The branch whose chunks hold the events.
    pub branch: BranchId,
    /// The last seq taken from it (the fork point, for an ancestor), or `None` for all.
    pub until_seq: Option<u64>,
}

impl<'a> Recording<'a> {
    /// Opens a recording: preamble, footer and summary hash are checked.
    pub fn open(bytes: &'a [u8]) -> Result<Recording<'a>, OpenError> {
        let preamble = parse_preamble(bytes).map_err(OpenError::Preamble)?;
        let summary = read_summary(bytes)?;
        let mut by_branch: std::collections::BTreeMap<BranchId, Vec<usize>> = Default::default();
        for (i, chunk) in summary.chunks.iter().enumerate() {
            by_branch.entry(chunk.branch).or_default().push(i);
        }
        for list in by_branch.values_mut() {
            list.sort_by_key(|&i| summary.chunks.get(i).map_or(0, |c| c.first_seq));
        }
        Ok(Recording {
            bytes,
            preamble,
            summary,
            by_branch,
            verified: false,
            checkpoints_trusted: false,
        })
    }

    /// Verifies the bytes, then opens them; reads then skip re-hashing each chunk (the
    /// verification checked every hash). The report says what, if anything, is wrong; the
    /// recording is read as verified only when it is clean.
    pub fn open_verified(
        bytes: &'a [u8],
    ) -> Result<(Recording<'a>, crate::verify::Report), OpenError> {
        let report = crate::verify::verify(bytes);
        let mut rec = Recording::open(bytes)?;
        rec.verified = report.is_clean();
        Ok((rec, report))
    }

    /// Whether reads skip re-hashing chunks because `verify` found the bytes sound.
    pub fn is_verified(&self) -> bool {
        self.verified
    }

    /// Lets readers start a seek at a checkpoint. A checkpoint's hash proves only that its
    /// bytes are the ones its author wrote, not that they are the state its events fold
    /// to: call this only after folding the events and finding every checkpoint equal
    /// (`hamlet_core::log::open_checked` does). Ignored unless the file verified clean.
    pub fn trust_checkpoints(&mut self) {
        self.checkpoints_trusted = self.verified;
    }

    /// Whether checkpoints were found equal to the fold (see
    /// [`Recording::trust_checkpoints`]); until then readers fold from the start.
    pub fn checkpoints_trusted(&self) -> bool {
        self.checkpoints_trusted
    }

    /// The program that wrote it.
    pub fn writer(&self) -> &str {
        &self.preamble.writer
    }
    /// The file's format version (1: no chunk is compressed; 2: chunks may be).
    pub fn version(&self) -> u16 {
        self.preamble.version
    }
    /// The summary as read.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
    /// The file's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The branch table, each branch under its current name (its last own `BranchRenamed`'s,
    /// else its `BranchCreated`'s: the writer puts it there and `verify` checks it).
    pub fn branches(&self) -> &[BranchEntry] {
        &self.summary.branches
    }

    /// A branch by id.
    pub fn branch(&self, id: BranchId) -> Option<&BranchEntry> {
        self.summary.branches.iter().find(|b| b.id == id)
    }

    /// A branch by its current name, or by a prefix of its hex id (`br_3fa2…` or `3fa2…`).
    /// A name a branch had before a rename no longer finds it.
    pub fn find_branch(&self, name: &str) -> Option<&BranchEntry> {
        if let Some(b) = self.summary.branches.iter().find(|b| b.name == name) {
            return Some(b);
        }
        let hex = name.strip_prefix("br_").unwrap_or(name).to_ascii_lowercase();
        let mut hits = self.summary.branches.iter().filter(|b| b.id.to_hex().starts_with(&hex));
        match (hex.len() >= 4, hits.next(), hits.next()) {
            (true, Some(b), None) => Some(b),
            _ => None,
        }
    }

    /// The root branch (the first one with no parent).
    pub fn root(&self) -> Option<&BranchEntry> {
        self.summary.branches.iter().find(|b| b.parent.is_none())
    }

    /// The stretches of history that make up `branch`, root first. A cycle or a missing
    /// ancestor ends the walk.
    pub fn ancestry(&self, branch: BranchId) -> Result<Vec<Stretch>, ReadError> {
        let mut out = vec![Stretch { branch, until_seq: None }];
        let mut entry = self.branch(branch).ok_or(ReadError::NoBranch(branch))?;
        let mut limit = u64::MAX;
        while let (Some(parent), Some(fork_seq)) = (entry.parent, entry.fork_seq) {
            if out.len() > self.summary.branches.len() {
                break;
            }
            // An ancestor is taken only up to the lowest fork point below it.
            limit = limit.min(fork_seq);
            out.push(Stretch { branch: parent, until_seq: Some(limit) });
            entry = self.branch(parent).ok_or(ReadError::NoBranch(parent))?;
        }
        out.reverse();
        // Each ancestor is cut at the next fork point, not at its own head.
        Ok(out)
    }

    /// The index entries of `branch`'s own chunks, in seq order.
    pub fn own_chunks(&self, branch: BranchId) -> Vec<&ChunkIndexEntry> {
        self.by_branch
            .get(&branch)
            .map(|list| list.iter().filter_map(|&i| self.summary.chunks.get(i)).collect())
            .unwrap_or_default()
    }

    /// Every chunk that holds events of `branch` or its ancestry, with the last seq to take
    /// from each, in seq order.
    pub fn chunks(&self, branch: BranchId) -> Result<Vec<(ChunkIndexEntry, u64)>, ReadError> {
        let mut out = Vec::new();
        for stretch in self.ancestry(branch)? {
            let limit = stretch.until_seq.unwrap_or(u64::MAX);
            for chunk in self.own_chunks(stretch.branch) {
                if chunk.first_seq <= limit {
                    out.push((*chunk, chunk.last_seq.min(limit)));
                }
            }
        }
        Ok(out)
    }

    /// Reads one chunk named by the index, checking that it is what the index says.
    pub fn chunk(&self, entry: &ChunkIndexEntry) -> Result<ChunkRef<'a>, ReadError> {
        let problem =
            |problem: &str| ReadError::Index { offset: entry.offset, problem: problem.into() };
        let start = usize::try_from(entry.offset).map_err(|_| problem("offset too large"))?;
        let bytes = self.bytes.get(start..).ok_or_else(|| problem("offset past the end"))?;
        let record = parse_record(bytes, entry.offset)?.ok_or_else(|| problem("no record"))?;
        if record.len_total() != entry.len_bytes {
            return Err(problem("record length differs"));
        }
        let chunk = if self.verified {
            ChunkRef::parse_verified(record)?
        } else {
            ChunkRef::parse(record)?
        };
        let h = &chunk.header;
        if !self.preamble.allows(h.compression) {
            return Err(problem("a compressed chunk in a format version 1 file"));
        }
        if h.branch != entry.branch
            || h.first_seq != entry.first_seq
            || h.last_seq() != entry.last_seq
            || h.time_first != entry.time_first
            || h.time_last != entry.time_last
            || chunk.hash != entry.hash
        {
            return Err(problem("header differs from the index entry"));
        }
        Ok(chunk)
    }

    /// Calls `f` with every stored event of `branch` (with its ancestry) from `from` to
    /// `to` inclusive, in seq order, until `f` returns false. The event is lent, not moved:
    /// on a fold's hot path this is measurably faster than [`Recording::events`].
    ///
    /// In a file whose chunks may be compressed, a read of several chunks opens (hashes
    /// and decompresses) the next chunks on a second thread while `f` walks this one.
    pub fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        mut f: impl FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), ReadError> {
        // The chunks to read, each with the last seq to take from it.
        let mut plan: Vec<(&ChunkIndexEntry, u64)> = Vec::new();
        for stretch in self.ancestry(branch)? {
            let list = self.own_list(stretch.branch);
            let limit = stretch.until_seq.unwrap_or(u64::MAX).min(to);
            // The first chunk that ends at or after `from`: O(log n).
            let start = list.partition_point(|&i| self.entry(i).is_some_and(|c| c.last_seq < from));
            for entry in list.get(start..).unwrap_or(&[]).iter().filter_map(|&i| self.entry(i)) {
                if entry.first_seq > limit {
                    break;
                }
                plan.push((entry, limit));
            }
        }
        // Walks one opened chunk; false once `f` asks to stop.
        let mut walk = |chunk: &Chunk<'_>, branch: BranchId, limit: u64| {
            for event in chunk.events() {
                let event = event?;
                if event.header.seq > limit {
                    break;
                }
                if event.header.seq >= from && !f(branch, &event) {
                    return Ok(false);
                }
            }
            Ok::<bool, ReadError>(true)
        };
        if self.preamble.version < 2 || plan.len() < 2 || !crate::THREADS {
            for (entry, limit) in plan {
                if !walk(&self.chunk(entry)?.open()?, entry.branch, limit)? {
                    break;
                }
            }
            return Ok(());
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Chunk<'a>, ReadError>>(2);
            let entries: Vec<&ChunkIndexEntry> = plan.iter().map(|(e, _)| *e).collect();
            scope.spawn(move || {
                for entry in entries {
                    let opened = self.chunk(entry).and_then(|c| Ok(c.open()?));
                    let failed = opened.is_err();
                    // A closed channel: the reader stopped early.
                    if tx.send(opened).is_err() || failed {
                        break;
                    }
                }
            });
            for (entry, limit) in plan {
                let chunk = rx.recv().map_err(|_| ReadError::Index {
                    offset: entry.offset,
                    problem: "the chunk was not read".into(),
                })??;
                if !walk(&chunk, entry.branch, limit)? {
                    break;
                }
            }
            Ok(())
        })
    }

    /// The decoded events of `branch` with its ancestry, in seq order, from seq `from`,
    /// decoded a chunk at a time.
    pub fn events(&self, branch: BranchId, from: u64) -> Result<BranchEvents<'_, 'a>, ReadError> {
        let chunks = self.chunks(branch)?;
        let start = chunks.partition_point(|(_, last)| *last < from);
        let mut chunks = chunks.into_iter();
        chunks.by_ref().take(start).for_each(drop);
        Ok(BranchEvents {
            rec: self,
            chunks,
            ready: Default::default(),
            from,
            failed: false,
            current: None,
        })
    }

    /// The last seq of `branch` whose event's simulated time is at most `sim_time_secs`
    /// (`None` if every event is later). O(log n) chunks, then one chunk's events.
    pub fn seq_at_time(
        &self,
        branch: BranchId,
        sim_time_secs: u64,
    ) -> Result<Option<u64>, ReadError> {
        // Simulated time never runs backwards along a branch's history, ancestry included:
        // search the latest stretch first, then earlier ones.
        for stretch in self.ancestry(branch)?.into_iter().rev() {
            let list = self.own_list(stretch.branch);
            let until = stretch.until_seq.unwrap_or(u64::MAX);
            let n_in =
                list.partition_point(|&i| self.entry(i).is_some_and(|c| c.first_seq <= until));
            let before = list
                .get(..n_in)
                .unwrap_or(&[])
                .partition_point(|&i| self.entry(i).is_some_and(|c| c.time_first <= sim_time_secs));
            let Some(entry) =
                before.checked_sub(1).and_then(|k| list.get(k)).and_then(|&i| self.entry(i))
            else {
                continue;
            };
            let mut found = None;
            for event in self.chunk(entry)?.open()?.events() {
                let event = event?;
                if event.header.seq > until || event.header.sim_time_secs > sim_time_secs {
                    break;
                }
                found = Some(event.header.seq);
            }
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    fn own_list(&self, branch: BranchId) -> &[usize] {
        self.by_branch.get(&branch).map_or(&[], Vec::as_slice)
    }

    fn entry(&self, index: usize) -> Option<&ChunkIndexEntry> {
        self.summary.chunks.get(index)
    }

    /// The checkpoints on `branch`'s ancestry, latest first, with their state bytes. Not
    /// yet checked against their hashes: see [`Recording::checkpoint_bytes`].
    pub fn checkpoints(
        &self,
        branch: BranchId,
    ) -> Result<Vec<(CheckpointEntry, &'a [u8])>, ReadError> {
        let ancestry = self.ancestry(branch)?;
        let mut out = Vec::new();
        for cp in &self.summary.checkpoints {
            let on_path = ancestry
                .iter()
                .any(|s| s.branch == cp.branch && s.until_seq.is_none_or(|until| cp.seq <= until));
            let bytes = usize::try_from(cp.offset)
                .ok()
                .zip(cp.offset.checked_add(cp.len_bytes).and_then(|end| usize::try_from(end).ok()))
                .and_then(|(a, b)| self.bytes.get(a..b));
            if let (true, Some(bytes)) = (on_path, bytes) {
                out.push((*cp, bytes));
            }
        }
        out.sort_by_key(|(cp, _)| std::cmp::Reverse(cp.seq));
        Ok(out)
    }

    /// A checkpoint's state bytes if they match its hash (always, in a verified recording,
    /// where `verify` already checked them). Only the checkpoint a seek uses is hashed.
    pub fn checkpoint_bytes<'b>(
        &self,
        entry: &CheckpointEntry,
        bytes: &'b [u8],
    ) -> Option<&'b [u8]> {
        (self.verified || crate::format::checkpoint_hash(bytes) == entry.hash).then_some(bytes)
    }
}

/// The decoded events of a branch with its ancestry; see [`Recording::events`].
#[derive(Debug)]
pub struct BranchEvents<'r, 'a> {
    rec: &'r Recording<'a>,
    chunks: std::vec::IntoIter<(ChunkIndexEntry, u64)>,
    ready: std::collections::VecDeque<Result<Event, ReadError>>,
    from: u64,
    failed: bool,
    /// The chunk being decoded, a few megabytes of it at a time.
    current: Option<Current<'a>>,
}

/// An opened chunk with the part of it left to decode.
#[derive(Debug)]
struct Current<'a> {
    chunk: crate::format::Chunk<'a>,
    branch: BranchId,
    /// The last seq to take from it.
    last: u64,
    /// The next seq to decode.
    next: u64,
}

/// Stored bytes decoded at once: a body can take many times its size once decoded, so a
/// large chunk is decoded a few events at a time, never whole.
const DECODE_AT_ONCE: usize = 4 << 20;

impl BranchEvents<'_, '_> {
    /// Decodes the next events in range into `ready`; false when none is left.
    fn refill(&mut self) -> bool {
        if self.current.is_none() {
            let Some((entry, last)) = self.chunks.next() else { return false };
            match self.rec.chunk(&entry).and_then(|c| Ok(c.open()?)) {
                Ok(chunk) => {
                    let next = self.from;
                    self.current = Some(Current { chunk, branch: entry.branch, last, next });
                }
                Err(e) => {
                    self.ready.push_back(Err(e));
                    return true;
                }
            }
        }
        let (ready, Some(current)) = (&mut self.ready, self.current.as_mut()) else {
            return false;
        };
        let Current { chunk, branch, last, next } = current;
        let mut decoded = 0;
        let mut more = false;
        for event in chunk.events() {
            match event {
                Ok(e) if e.header.seq > *last => break,
                Ok(e) if e.header.seq < *next => continue,
                Ok(_) if decoded >= DECODE_AT_ONCE => {
                    more = true;
                    break;
                }
                Ok(e) => {
                    decoded += e.body.len();
                    *next = e.header.seq.saturating_add(1);
                    ready.push_back(to_event(*branch, e));
                }
                Err(e) => {
                    ready.push_back(Err(e.into()));
                    break;
                }
            }
        }
        if !more {
            self.current = None;
        }
        true
    }
}

impl Iterator for BranchEvents<'_, '_> {
    type Item = Result<Event, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            if let Some(item) = self.ready.pop_front() {
                self.failed = item.is_err();
                return Some(item);
            }
            if !self.refill() {
                return None;
            }
        }
        None
    }
}

/// Decodes a stored event into an [`Event`].
pub fn to_event(branch: BranchId, stored: StoredRef<'_>) -> Result<Event, ReadError> {
    let body = decode_body(stored.kind, stored.schema, stored.body)
        .map_err(|source| FormatError::BadEvent { offset: 0, seq: stored.header.seq, source })?;
    Ok(Event {
        id: stored.id,
        parent: stored.parent,
        branch,
        header: stored.header.to_header(),
        body,
    })
}
