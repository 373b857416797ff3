//! Writes `.hamlet` recordings: preamble, chunks as they come, then the summary and the
//! footer. The writer refuses a chunk that is malformed or does not continue its branch
//! (seq, parent id, time); a fork's first chunk must name a fork point among its parent's
//! own events already written. It cannot check the fork point's id without keeping every
//! id: callers (the store, `recover`) check that, and `verify` checks everything. Each
//! branch's summary record carries its current name: that of the last `BranchRenamed` among
//! its own events written, else its `BranchCreated`'s.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::event::{decode_body, Body};
use crate::format::{
    file_preamble, op, push_record, BranchEntry, ChunkIndexEntry, ChunkRef, FormatError,
    Statistics, FOOTER_BODY_LEN, FORMAT_VERSION, MAGIC,
};
use crate::id::{BranchId, EventId};

/// Why a chunk was refused or the file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output failed.
    #[error("cannot write the recording")]
    Io(#[from] io::Error),
    /// The chunk is malformed.
    #[error("chunk refused")]
    Format(#[from] FormatError),
    /// The chunk does not continue its branch.
    #[error("chunk refused: {0}")]
    Refused(String),
}

/// Writes one recording.
#[derive(Debug)]
pub struct RecordingWriter<W: Write> {
    out: W,
    offset: u64,
    data: blake3::Hasher,
    index: Vec<ChunkIndexEntry>,
    branches: BTreeMap<BranchId, BranchEntry>,
    branch_order: Vec<BranchId>,
    stats: Statistics,
    checkpoints: Vec<crate::format::CheckpointEntry>,
    head_times: BTreeMap<BranchId, u64>,
    // Format version 2: chunks are stored compressed (when that makes them smaller).
    compress: bool,
}

impl<W: Write> RecordingWriter<W> {
    /// Starts a recording of the newest format version ([`FORMAT_VERSION`], chunks stored
    /// compressed): writes the magic and the header record naming `writer`.
    pub fn new(out: W, writer: &str) -> io::Result<RecordingWriter<W>> {
        RecordingWriter::with_version(out, writer, FORMAT_VERSION)
    }

    /// Starts a recording of format `version`: 1 stores every chunk uncompressed (readable
    /// by every build), 2 stores chunks compressed with Zstandard when that makes them
    /// smaller. Chunks given in the other form are stored again in this one: the events and
    /// their ids are the same.
    ///
    /// # Panics
    /// On a version this build does not write.
    pub fn with_version(mut out: W, writer: &str, version: u16) -> io::Result<RecordingWriter<W>> {
        let preamble = file_preamble(version, writer);
        out.write_all(&preamble)?;
        let mut data = crate::format::data_hasher();
        data.update(&preamble);
        Ok(RecordingWriter {
            out,
            offset: preamble.len() as u64,
            data,
            index: Vec::new(),
            branches: BTreeMap::new(),
            branch_order: Vec::new(),
            stats: Statistics::default(),
            checkpoints: Vec::new(),
            head_times: BTreeMap::new(),
            compress: version >= 2,
        })
    }

    /// Whether chunks are stored compressed (format version 2): callers that cut events
    /// into chunks aim at [`crate::format::ChunkBuilder::is_full_for`] this.
    pub fn compresses(&self) -> bool {
        self.compress
    }

    /// The branches written so far, in the order they first appeared.
    pub fn branches(&self) -> impl Iterator<Item = &BranchEntry> {
        self.branch_order.iter().filter_map(|id| self.branches.get(id))
    }

    /// Appends a chunk record (as [`crate::format::ChunkBuilder::finish`] or a segment file
    /// holds it). It must continue its branch's chain, or start a new branch with its
    /// `BranchCreated` event; a fork's parent branch must already be written up to the
    /// fork point.
    pub fn write_chunk(&mut self, record: &[u8]) -> Result<(), WriteError> {
        let Some(parsed) = crate::format::parse_record(record, self.offset)? else {
            return Err(WriteError::Refused("empty record".into()));
        };
        if parsed.len_total() as usize != record.len() {
            return Err(WriteError::Refused("bytes after the record".into()));
        }
        let stored = ChunkRef::parse(parsed)?;
        let chunk = stored.open()?;
        let kinds = chunk.verify_events()?;
        let header = stored.header;
        // Stored in this file's form: compressed in version 2, not in version 1.
        let recoded;
        let (record, hash) = match (self.compress, header.compression) {
            (false, crate::format::compression::NONE)
            | (true, crate::format::compression::ZSTD) => (record, stored.hash),
            _ => {
                recoded = chunk.encoded(self.compress);
                (recoded.0.as_slice(), recoded.1)
            }
        };
        match self.branches.get(&header.branch) {
            Some(entry) => {
                let time = self.head_times.get(&header.branch).copied().unwrap_or(0);
                if header.time_first < time {
                    return Err(WriteError::Refused(format!(
                        "{}: chunk at #{} starts at time {}, before the branch's head at {time}",
                        header.branch, header.first_seq, header.time_first
                    )));
                }
                if header.parent != entry.head_id
                    || header.first_seq != entry.head_seq.wrapping_add(1)
                {
                    return Err(WriteError::Refused(format!(
                        "{}: chunk starts at #{} after {}, but the branch's head is #{} {}",
                        header.branch,
                        header.first_seq,
                        header.parent,
                        entry.head_seq,
                        entry.head_id
                    )));
                }
            }
            None => {
                let first = chunk.events().next().transpose()?;
                let Some(first) = first else {
                    return Err(WriteError::Refused("empty chunk".into()));
                };
                let created = match decode_body(first.kind, first.schema, first.body) {
                    Ok(Body::BranchCreated(created)) => created,
                    _ => {
                        return Err(WriteError::Refused(format!(
                            "{}: a branch's first chunk must open with BranchCreated",
                            header.branch
                        )))
                    }
                };
                if first.id != header.branch.0 {
                    return Err(WriteError::Refused(format!(
                        "{}: its first event's id is {}",
                        header.branch, first.id
                    )));
                }
                match (created.parent_branch, created.fork_seq) {
                    (None, None) if header.first_seq == 0 && header.parent == EventId::NONE => {}
                    (Some(parent), Some(fork_seq))
                        if fork_seq.checked_add(1) == Some(header.first_seq) =>
                    {
                        let own_first =
                            |p: &BranchEntry| p.fork_seq.map_or(0, |s| s.saturating_add(1));
                        let known = self
                            .branches
                            .get(&parent)
                            .is_some_and(|p| p.head_seq >= fork_seq && own_first(p) <= fork_seq);
                        if !known {
                            return Err(WriteError::Refused(format!(
                                "{}: forks {parent} at #{fork_seq}, which is not written yet",
                                header.branch
                            )));
                        }
                    }
                    _ => {
                        return Err(WriteError::Refused(format!(
                            "{}: its BranchCreated does not match where the chunk starts",
                            header.branch
                        )))
                    }
                }
                self.branch_order.push(header.branch);
                self.branches.insert(
                    header.branch,
                    BranchEntry {
                        id: header.branch,
                        parent: created.parent_branch,
                        fork_seq: created.fork_seq,
                        head_id: header.parent,
                        head_seq: header.first_seq.wrapping_sub(1),
                        n_events: 0,
                        name: created.name,
                    },
                );
            }
        }
        // A rename among the chunk's events (its branch's own) names the branch from then on.
        let renamed = match kinds.contains(&crate::event::BRANCH_RENAMED) {
            true => chunk.last_rename(),
            false => None,
        };
        self.out.write_all(record)?;
        crate::format::feed_data_record(&mut self.data, record);
        self.head_times.insert(header.branch, header.time_last);
        if let Some(entry) = self.branches.get_mut(&header.branch) {
            entry.head_id = header.last_id;
            entry.head_seq = header.last_seq();
            entry.n_events += u64::from(header.n_events);
            if let Some(name) = renamed {
                entry.name = name;
            }
        }
        if self.stats.n_chunks == 0 {
            self.stats.time_first = header.time_first;
        }
        self.stats.time_first = self.stats.time_first.min(header.time_first);
        self.stats.time_last = self.stats.time_last.max(header.time_last);
        self.stats.n_chunks += 1;
        self.stats.n_events += u64::from(header.n_events);
        for kind in kinds {
            self.stats.count(kind);
        }
        self.index.push(ChunkIndexEntry {
            offset: self.offset,
            len_bytes: record.len() as u64,
            branch: header.branch,
            first_seq: header.first_seq,
            last_seq: header.last_seq(),
            time_first: header.time_first,
            time_last: header.time_last,
            hash,
        });
        self.offset += record.len() as u64;
        Ok(())
    }

    /// Writes a checkpoint: the engine's folded state after event `seq` of `branch`, with
    /// the state's hash. A record of the data section, indexed by the summary; derived
    /// data, which readers may ignore.
    pub fn add_checkpoint(
        &mut self,
        branch: BranchId,
        seq: u64,
        state_hash: [u8; 32],
        state: &[u8],
    ) -> io::Result<()> {
        let mut record = Vec::with_capacity(crate::format::RECORD_PREFIX_LEN + state.len());
        push_record(&mut record, op::CHECKPOINT_STATE, state);
        self.out.write_all(&record)?;
        crate::format::feed_data_record(&mut self.data, &record);
        self.checkpoints.push(crate::format::CheckpointEntry {
            branch,
            seq,
            state_hash,
            offset: self.offset + crate::format::RECORD_PREFIX_LEN as u64,
            len_bytes: state.len() as u64,
            hash: crate::format::checkpoint_hash(state),
        });
        self.offset += record.len() as u64;
        Ok(())
    }

    /// Writes the summary and the footer, and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        let summary_offset = self.offset;
        let mut summary = Vec::new();
        push_record(&mut summary, op::DATA_HASH, self.data.finalize().as_bytes());
        for id in &self.branch_order {
            if let Some(entry) = self.branches.get(id) {
                push_record(&mut summary, op::BRANCH, &entry.encode());
            }
        }
        let mut index = Vec::with_capacity(self.index.len() * 112);
        for entry in &self.index {
            entry.encode_into(&mut index);
        }
        push_record(&mut summary, op::CHUNK_INDEX, &index);
        for entry in &self.checkpoints {
            let mut body = Vec::with_capacity(crate::format::CHECKPOINT_ENTRY_LEN);
            entry.encode_into(&mut body);
            push_record(&mut summary, op::CHECKPOINT, &body);
        }
        push_record(&mut summary, op::STATISTICS, &self.stats.encode());
        let summary_hash = crate::format::summary_hasher().update(&summary).finalize();
        let mut footer = Vec::with_capacity(FOOTER_BODY_LEN);
        footer.extend_from_slice(&summary_offset.to_le_bytes());
        footer.extend_from_slice(summary_hash.as_bytes());
        push_record(&mut summary, op::FOOTER, &footer);
        summary.extend_from_slice(&MAGIC);
        self.out.write_all(&summary)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes `rec` again in format `version` (1: chunks uncompressed; 2: compressed): the same
/// branches, events and ids, cut into chunks afresh at the targets of that version, and its
/// checkpoints if the fold vouched for them ([`crate::Recording::trust_checkpoints`]); none
/// otherwise (a checkpoint is derived data). A damaged chunk stops it with an error.
pub fn rewrite<W: Write>(
    rec: &crate::Recording<'_>,
    out: W,
    writer: &str,
    version: u16,
) -> Result<W, WriteError> {
    let mut w = RecordingWriter::with_version(out, writer, version)?;
    for branch in rec.branches() {
        let mut builder: Option<crate::format::ChunkBuilder> = None;
        for entry in rec.own_chunks(branch.id) {
            let chunk = rec.chunk(entry).map_err(|e| WriteError::Refused(e.to_string()))?.open()?;
            for event in chunk.events() {
                let event = event?;
                let current = builder.get_or_insert_with(|| {
                    crate::format::ChunkBuilder::new(branch.id, event.parent, event.header.seq)
                });
                if current.push(event.stored) != event.id {
                    return Err(WriteError::Refused(format!(
                        "event #{} is stored as {}, which its bytes do not chain to",
                        event.header.seq, event.id
                    )));
                }
                if current.is_full_for(w.compresses()) {
                    if let Some(full) = builder.take() {
                        w.write_chunk(&full.finish().1)?;
                    }
                }
            }
        }
        if let Some(rest) = builder.take() {
            w.write_chunk(&rest.finish().1)?;
        }
    }
    let checkpoints = match rec.checkpoints_trusted() {
        true => rec.summary().checkpoints.as_slice(),
        false => &[],
    };
    for cp in checkpoints {
        let state = usize::try_from(cp.offset)
            .ok()
            .zip(cp.offset.checked_add(cp.len_bytes).and_then(|end| usize::try_from(end).ok()))
            .and_then(|(a, b)| rec.bytes().get(a..b))
            .and_then(|bytes| rec.checkpoint_bytes(cp, bytes));
        if let Some(state) = state {
            w.add_checkpoint(cp.branch, cp.seq, cp.state_hash, state)?;
        }
    }
    Ok(w.finish()?)
}
