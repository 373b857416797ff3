//! `verify` checks every invariant of a recording and reports all that fail; `recover`
//! keeps the longest valid prefix of a damaged one.
//!
//! What is checked: the preamble; the footer and the summary's hash; the data section's
//! hash; every chunk's framing, hash, events, seq order, time order and chain; the chunk
//! index against the chunks; each branch's chain across chunks, its first event, its fork
//! point, its head and its name (its last own `BranchRenamed`, else its `BranchCreated`)
//! against the branch table; the statistics against the data.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

use std::collections::BTreeMap;
use std::fmt;

use crate::event::{decode_body, Body};
use crate::format::{
    op, parse_preamble, parse_record, read_summary, BranchEntry, ChunkIndexEntry, ChunkRef,
    FooterError, FormatError, Statistics,
};
use crate::id::{BranchId, EventId};
use crate::writer::RecordingWriter;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The magic or header record.
    Preamble(FormatError),
    /// The footer or the summary.
    Footer(FooterError),
    /// The data section does not hash to what the summary says.
    DataHash,
    /// A record or chunk in the data section.
    Chunk(FormatError),
    /// A record that does not belong in the data section.
    StrayRecord {
        /// Its opcode.
        op: u8,
        /// Where it starts.
        offset: u64,
    },
    /// The chunk index disagrees with the chunks.
    Index(String),
    /// A branch's chain, first event or fork point.
    Branch {
        /// Which branch.
        branch: BranchId,
        /// What is wrong.
        problem: String,
    },
    /// The statistics disagree with the data.
    Statistics(String),
    /// A checkpoint whose state is not the one its events fold to: its hash holds, so its
    /// author wrote it so. Found by folding (`hamlet_core::log::check_checkpoints`), which
    /// this crate cannot do; `verify` here never reports it.
    Checkpoint {
        /// Its branch.
        branch: BranchId,
        /// The seq it says it was folded to.
        seq: u64,
        /// What differs.
        problem: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Preamble(e) => write!(f, "preamble: {e}"),
            Problem::Footer(e) => write!(f, "footer: {e}"),
            Problem::DataHash => write!(f, "data section does not match the hash in the summary"),
            Problem::Chunk(e) => write!(f, "{e}"),
            Problem::StrayRecord { op, offset } => {
                write!(f, "record {op:#04x} at byte {offset} does not belong before the summary")
            }
            Problem::Index(s) => write!(f, "chunk index: {s}"),
            Problem::Branch { branch, problem } => write!(f, "branch {branch}: {problem}"),
            Problem::Statistics(s) => write!(f, "statistics: {s}"),
            Problem::Checkpoint { branch, seq, problem } => {
                write!(f, "checkpoint at {branch} #{seq}: {problem}")
            }
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every broken invariant, in the order found.
    pub problems: Vec<Problem>,
    /// Events in sound chunks.
    pub n_events: u64,
    /// Sound chunks.
    pub n_chunks: u64,
    /// Branches in the branch table.
    pub n_branches: usize,
}

impl Report {
    /// Whether the file is sound.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// A chunk found while scanning the data section, with what its events said.
#[derive(Debug, Clone)]
struct Found {
    entry: ChunkIndexEntry,
    parent: EventId,
    last_id: EventId,
    n_events: u32,
    /// Events per kind, sorted by kind.
    kinds: Vec<(u16, u64)>,
    created: Option<crate::event::BranchCreated>,
    created_id: EventId,
    /// The name of the chunk's last `BranchRenamed`, if it holds one.
    renamed: Option<String>,
}

/// The most bytes of decompressed chunks `verify`'s threads hold at once: with
/// [`crate::format::compression::MAX_RAW_LEN`], what keeps a hostile file's demands on
/// memory to a few hundred megabytes however many cores walk it.
pub const INFLATE_BUDGET: u64 = 256 << 20;

/// The most bytes the walking threads' decoded large bodies may hold at once, counted as
/// [`MAX_EXPANSION`] times their stored length: one body of `MAX_EVENT_LEN` takes it all.
pub const DECODE_BUDGET: u64 = crate::format::MAX_EVENT_LEN as u64 * MAX_EXPANSION;

/// How many times its stored length a body can take once decoded, at most: an empty
/// string is one byte stored and 24 in memory.
pub const MAX_EXPANSION: u64 = 24;

/// Bodies up to this many bytes are decoded without asking the budget.
const LARGE_BODY: usize = 64 << 10;

/// Bytes shared by the walking threads: each takes what it will decompress before it does,
/// and waits while others hold too much. A chunk larger than the whole budget waits for
/// all of it.
struct Budget {
    whole: u64,
    left: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

impl Budget {
    fn new(whole: u64) -> Budget {
        Budget { whole, left: std::sync::Mutex::new(whole), freed: std::sync::Condvar::new() }
    }

    /// Waits until `n` bytes (at most the whole budget) are free, and takes them.
    fn take(&self, n: u64) -> u64 {
        let n = n.min(self.whole);
        if n == 0 {
            return 0;
        }
        // A poisoned lock still counts bytes: a walk that panicked gave nothing back, and
        // readers never panic.
        let mut left = self.left.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *left < n {
            left = self.freed.wait(left).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *left -= n;
        n
    }

    /// Gives back what [`Budget::take`] took.
    fn give(&self, n: u64) {
        if n > 0 {
            let mut left = self.left.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *left += n;
            self.freed.notify_all();
        }
    }
}

/// Scans records from `start` to `end`, checking each chunk by itself.
fn scan(
    bytes: &[u8],
    preamble: &crate::format::Preamble,
    start: usize,
    end: usize,
    problems: &mut Vec<Problem>,
    stop_at_error: bool,
    states: &mut Vec<(u64, u64)>,
) -> Vec<Found> {
    let mut at = start;
    let mut raw = Vec::new();
    while at < end {
        let slice = bytes.get(at..end).unwrap_or(&[]);
        let record = match parse_record(slice, at as u64) {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) => {
                problems.push(Problem::Chunk(e));
                break;
            }
        };
        at += record.len_total() as usize;
        match record.op {
            op::CHUNK => raw.push(record),
            op::HEADER
            | op::DATA_HASH
            | op::BRANCH
            | op::CHUNK_INDEX
            | op::CHECKPOINT
            | op::STATISTICS
            | op::FOOTER => {
                if stop_at_error {
                    break;
                }
                problems.push(Problem::StrayRecord { op: record.op, offset: record.offset });
            }
            op::CHECKPOINT_STATE => {
                states.push((
                    record.offset + crate::format::RECORD_PREFIX_LEN as u64,
                    record.body.len() as u64,
                ));
            }
            _ => {} // Unknown kinds are skipped; the data hash covers their bytes.
        }
    }
    // Walking events is the costly part: spread the chunks over the machine's cores, the
    // bytes they decompress at once within one budget.
    let n_threads = match crate::THREADS {
        true => std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8),
        false => 1,
    };
    let per = raw.len().div_ceil(n_threads).max(1);
    let budgets = (Budget::new(INFLATE_BUDGET), Budget::new(DECODE_BUDGET));
    let walk_part = |part: &[crate::format::RecordRef<'_>]| -> Vec<Result<Found, FormatError>> {
        part.iter()
            .map(|r| {
                ChunkRef::parse(*r).and_then(|c| {
                    let taken = budgets.0.take(c.inflated_len());
                    let found = walk(&c, preamble, &budgets.1);
                    budgets.0.give(taken);
                    found
                })
            })
            .collect()
    };
    let walked: Vec<Result<Found, FormatError>> = if n_threads == 1 {
        walk_part(&raw)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                raw.chunks(per).map(|part| scope.spawn(move || walk_part(part))).collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    };
    let mut out = Vec::with_capacity(walked.len());
    for item in walked {
        match item {
            Ok(found) => out.push(found),
            Err(e) => {
                problems.push(Problem::Chunk(e));
                if stop_at_error {
                    break;
                }
            }
        }
    }
    out
}

fn walk(
    chunk: &ChunkRef<'_>,
    preamble: &crate::format::Preamble,
    decoding: &Budget,
) -> Result<Found, FormatError> {
    if !preamble.allows(chunk.header.compression) {
        return Err(FormatError::BadChunk {
            offset: chunk.offset,
            problem: format!(
                "compression {} in a format version {} file",
                chunk.header.compression, preamble.version
            ),
        });
    }
    let opened = chunk.open()?;
    // One pass: the chain is recomputed, and every body of a known kind must decode, not
    // just frame, since a reader will decode it.
    // Counted here, on the walking threads; runs of one kind are common.
    let mut kinds = Statistics::default();
    let mut run: Option<(u16, u64)> = None;
    let mut created = None;
    let mut created_id = EventId::NONE;
    let mut renamed = None;
    for event in opened.events_checked() {
        let event = event?;
        // A large body may decode to many times its size: such bodies take their share of
        // the decoding budget first (small ones, however many, hold little at once).
        let charge = match event.body.len() {
            n if n > LARGE_BODY => (n as u64).saturating_mul(MAX_EXPANSION),
            _ => 0,
        };
        let taken = decoding.take(charge);
        let decoded = decode_body(event.kind, event.schema, event.body);
        let body = decoded.map_err(|source| {
            decoding.give(taken);
            FormatError::BadEvent { offset: chunk.offset, seq: event.header.seq, source }
        })?;
        match body {
            Body::BranchCreated(b) if event.header.seq == chunk.header.first_seq => {
                created = Some(b);
                created_id = event.id;
            }
            Body::BranchRenamed(r) => renamed = Some(r.name),
            other => drop(other),
        }
        decoding.give(taken);
        run = match run {
            Some((kind, n)) if kind == event.kind => Some((kind, n + 1)),
            Some((kind, n)) => {
                kinds.count_n(kind, n);
                Some((event.kind, 1))
            }
            None => Some((event.kind, 1)),
        };
    }
    if let Some((kind, n)) = run {
        kinds.count_n(kind, n);
    }
    let kinds = kinds.kinds;
    let h = chunk.header;
    Ok(Found {
        entry: ChunkIndexEntry {
            offset: chunk.offset,
            len_bytes: (crate::format::RECORD_PREFIX_LEN
                + crate::format::CHUNK_HEADER_LEN
                + chunk.data.len()
                + crate::format::CHUNK_HASH_LEN) as u64,
            branch: h.branch,
            first_seq: h.first_seq,
            last_seq: h.last_seq(),
            time_first: h.time_first,
            time_last: h.time_last,
            hash: chunk.hash,
        },
        parent: h.parent,
        last_id: h.last_id,
        n_events: h.n_events,
        kinds,
        created,
        created_id,
        renamed,
    })
}

/// The id of the event at `seq` in a chunk found earlier.
fn id_at(bytes: &[u8], found: &Found, seq: u64) -> Option<(EventId, u64)> {
    let record =
        parse_record(bytes.get(found.entry.offset as usize..)?, found.entry.offset).ok()??;
    let chunk = ChunkRef::parse(record).ok()?.open().ok()?;
    chunk
        .events()
        .filter_map(Result::ok)
        .find(|e| e.header.seq == seq)
        .map(|e| (e.id, e.header.sim_time_secs))
}

/// Chains chunks into branches; returns the branch table they imply.
fn link(bytes: &[u8], found: &[Found], problems: &mut Vec<Problem>) -> Vec<BranchEntry> {
    let mut by_branch: BTreeMap<BranchId, Vec<&Found>> = BTreeMap::new();
    let mut order = Vec::new();
    for f in found {
        let list = by_branch.entry(f.entry.branch).or_default();
        if list.is_empty() {
            order.push(f.entry.branch);
        }
        list.push(f);
    }
    let mut table = Vec::new();
    for branch in order {
        let chunks = by_branch.get(&branch).cloned().unwrap_or_default();
        let mut bad = |problem: String| problems.push(Problem::Branch { branch, problem });
        let Some(first) = chunks.first() else { continue };
        let Some(created) = &first.created else {
            bad("its first chunk does not open with BranchCreated".into());
            continue;
        };
        if first.created_id != branch.0 {
            bad(format!("its first event's id is {}, not the branch's id", first.created_id));
        }
        match (created.parent_branch, created.fork_seq) {
            (None, None) => {
                if first.entry.first_seq != 0 || first.parent != EventId::NONE {
                    bad("a root branch must start at #0 with no parent".into());
                }
            }
            (Some(parent), Some(fork_seq)) => {
                let fork_point = by_branch.get(&parent).and_then(|list| {
                    list.iter()
                        .find(|c| c.entry.first_seq <= fork_seq && fork_seq <= c.entry.last_seq)
                        .and_then(|c| id_at(bytes, c, fork_seq))
                });
                match fork_point {
                    None => bad(format!("its fork point {parent} #{fork_seq} is not in the file")),
                    Some((id, time)) => {
                        if id != first.parent
                            || fork_seq.checked_add(1) != Some(first.entry.first_seq)
                        {
                            bad(format!(
                                "it does not continue its fork point {parent} #{fork_seq}"
                            ));
                        }
                        if first.entry.time_first < time {
                            bad("its first event is earlier than its fork point".into());
                        }
                    }
                }
            }
            _ => bad("its BranchCreated names a parent without a fork point".into()),
        }
        for pair in chunks.windows(2) {
            if let [a, b] = pair {
                if b.parent != a.last_id
                    || a.entry.last_seq.checked_add(1) != Some(b.entry.first_seq)
                {
                    bad(format!(
                        "chain broken at #{}: parent is {}, but the previous event is #{} {}",
                        b.entry.first_seq, b.parent, a.entry.last_seq, a.last_id
                    ));
                }
                if b.entry.time_first < a.entry.time_last {
                    bad(format!("simulated time runs backwards at #{}", b.entry.first_seq));
                }
            }
        }
        let last = chunks.last().unwrap_or(first);
        table.push(BranchEntry {
            id: branch,
            parent: created.parent_branch,
            fork_seq: created.fork_seq,
            head_id: last.last_id,
            head_seq: last.entry.last_seq,
            n_events: chunks.iter().map(|c| u64::from(c.n_events)).sum(),
            // Its own chunks only: an ancestor's rename never names a fork.
            name: chunks
                .iter()
                .rev()
                .find_map(|c| c.renamed.clone())
                .unwrap_or_else(|| created.name.clone()),
        });
    }
    table
}

fn statistics(found: &[Found]) -> Statistics {
    let mut stats = Statistics::default();
    for f in found {
        if stats.n_chunks == 0 {
            stats.time_first = f.entry.time_first;
        }
        stats.time_first = stats.time_first.min(f.entry.time_first);
        stats.time_last = stats.time_last.max(f.entry.time_last);
        stats.n_chunks += 1;
        stats.n_events += u64::from(f.n_events);
        for &(kind, n) in &f.kinds {
            stats.count_n(kind, n);
        }
    }
    stats
}

/// Checks every invariant of a recording; reports all that fail.
pub fn verify(bytes: &[u8]) -> Report {
    let mut problems = Vec::new();
    let preamble = match parse_preamble(bytes) {
        Ok(preamble) => Some(preamble),
        Err(e) => {
            problems.push(Problem::Preamble(e));
            None
        }
    };
    let summary = match read_summary(bytes) {
        Ok(s) => Some(s),
        Err(e) => {
            problems.push(Problem::Footer(e));
            None
        }
    };
    let data_end = summary.as_ref().map_or(bytes.len(), |s| s.offset as usize).min(bytes.len());
    let Some(preamble) = preamble else {
        return Report { problems, ..Report::default() };
    };
    let data_start = preamble.end;
    let mut states = Vec::new();
    let n_before = problems.len();
    // The data section's hash runs on its own thread while the chunks are walked.
    let hash = || crate::format::data_hash(bytes.get(..data_end).unwrap_or(&[]), data_start);
    let (found, data_hash) = match crate::THREADS {
        true => std::thread::scope(|scope| {
            let hashing = scope.spawn(hash);
            let found =
                scan(bytes, &preamble, data_start, data_end, &mut problems, false, &mut states);
            (found, hashing.join().ok())
        }),
        false => {
            let found =
                scan(bytes, &preamble, data_start, data_end, &mut problems, false, &mut states);
            (found, Some(hash()))
        }
    };
    if let Some(summary) = &summary {
        if data_hash != Some(summary.data_hash) {
            problems.insert(n_before, Problem::DataHash);
        }
    }
    let table = link(bytes, &found, &mut problems);
    let stats = statistics(&found);
    if let Some(summary) = &summary {
        let actual: Vec<ChunkIndexEntry> = found.iter().map(|f| f.entry).collect();
        if summary.chunks != actual {
            let first_diff = summary
                .chunks
                .iter()
                .zip(&actual)
                .find(|(a, b)| a != b)
                .map(|(a, _)| format!("first difference at the chunk of byte {}", a.offset))
                .unwrap_or_default();
            problems.push(Problem::Index(format!(
                "lists {} chunks, the file holds {} sound ones; {first_diff}",
                summary.chunks.len(),
                actual.len()
            )));
        }
        if summary.branches != table {
            problems.push(Problem::Index(format!(
                "the branch table ({} branches) does not match the chains in the file ({})",
                summary.branches.len(),
                table.len()
            )));
        }
        if summary.statistics != stats {
            problems.push(Problem::Statistics(format!(
                "say {} events in {} chunks, the file holds {} in {}",
                summary.statistics.n_events,
                summary.statistics.n_chunks,
                stats.n_events,
                stats.n_chunks
            )));
        }
        for cp in &summary.checkpoints {
            let on_branch = table.iter().any(|b| {
                b.id == cp.branch && cp.seq <= b.head_seq && b.fork_seq.is_none_or(|f| cp.seq > f)
            });
            if !on_branch {
                problems.push(Problem::Index(format!(
                    "checkpoint at {} #{} is not among its branch's own events",
                    cp.branch, cp.seq
                )));
            }
            let body = usize::try_from(cp.offset)
                .ok()
                .zip(cp.offset.checked_add(cp.len_bytes).and_then(|e| usize::try_from(e).ok()))
                .and_then(|(a, b)| bytes.get(a..b));
            let sound = states.contains(&(cp.offset, cp.len_bytes))
                && body.is_some_and(|b| crate::format::checkpoint_hash(b) == cp.hash);
            if !sound {
                problems.push(Problem::Index(format!(
                    "checkpoint at {} #{} does not match its state record at byte {}",
                    cp.branch, cp.seq, cp.offset
                )));
            }
        }
    }
    Report { problems, n_events: stats.n_events, n_chunks: stats.n_chunks, n_branches: table.len() }
}

/// How much `recover` kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The file was sound: the output is the input.
    Clean,
    /// A valid prefix was kept; the rest was lost.
    Prefix,
    /// Nothing could be kept.
    Nothing,
}

/// What `recover` made.
#[derive(Debug, Clone)]
pub struct Recovered {
    /// How much was kept.
    pub outcome: Outcome,
    /// The recovered recording (empty for [`Outcome::Nothing`]).
    pub bytes: Vec<u8>,
    /// Events kept.
    pub n_events: u64,
    /// Chunks kept.
    pub n_chunks: u64,
    /// The problems that made recovery necessary.
    pub problems: Vec<Problem>,
}

/// Keeps the longest valid prefix of a recording: every chunk from the start that is
/// sound by itself and continues its branch, up to the first that is not.
pub fn recover(bytes: &[u8], writer_name: &str) -> Recovered {
    let report = verify(bytes);
    if report.is_clean() {
        return Recovered {
            outcome: Outcome::Clean,
            bytes: bytes.to_vec(),
            n_events: report.n_events,
            n_chunks: report.n_chunks,
            problems: Vec::new(),
        };
    }
    let nothing = |problems| Recovered {
        outcome: Outcome::Nothing,
        bytes: Vec::new(),
        n_events: 0,
        n_chunks: 0,
        problems,
    };
    let Ok(preamble) = parse_preamble(bytes) else {
        return nothing(report.problems);
    };
    let mut ignored = Vec::new();
    let found =
        scan(bytes, &preamble, preamble.end, bytes.len(), &mut ignored, true, &mut Vec::new());
    // The recovered file keeps the damaged one's format version (and so its compression).
    let Ok(mut writer) = RecordingWriter::with_version(Vec::new(), writer_name, preamble.version)
    else {
        return nothing(report.problems);
    };
    let mut kept: Vec<&Found> = Vec::new();
    for f in &found {
        // A fork's first chunk must continue a fork point that was kept.
        if let Some(created) = f.created.as_ref().filter(|_| f.created_id == f.entry.branch.0) {
            if let (Some(parent), Some(fork_seq)) = (created.parent_branch, created.fork_seq) {
                let point = kept
                    .iter()
                    .find(|c| {
                        c.entry.branch == parent
                            && c.entry.first_seq <= fork_seq
                            && fork_seq <= c.entry.last_seq
                    })
                    .and_then(|c| id_at(bytes, c, fork_seq));
                let sound =
                    point.is_some_and(|(id, time)| id == f.parent && f.entry.time_first >= time);
                if !sound {
                    break;
                }
            }
        }
        let record =
            bytes.get(f.entry.offset as usize..(f.entry.offset + f.entry.len_bytes) as usize);
        match record.map(|r| writer.write_chunk(r)) {
            Some(Ok(())) => kept.push(f),
            _ => break,
        }
    }
    if kept.is_empty() {
        return nothing(report.problems);
    }
    match writer.finish() {
        Ok(out) => Recovered {
            outcome: Outcome::Prefix,
            bytes: out,
            n_events: kept.iter().map(|f| u64::from(f.n_events)).sum(),
            n_chunks: kept.len() as u64,
            problems: report.problems,
        },
        Err(_) => nothing(report.problems),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::Budget;

    #[test]
    fn the_walkers_never_hold_more_than_the_budget() {
        let budget = Budget::new(100);
        let (held, most) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|scope| {
            for i in 0..8u64 {
                let (budget, held, most) = (&budget, &held, &most);
                scope.spawn(move || {
                    for n in [30, 60, 100, 250, 0, 45 + i] {
                        let taken = budget.take(n);
                        assert_eq!(taken, n.min(100));
                        let now = held.fetch_add(taken, Ordering::SeqCst) + taken;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        held.fetch_sub(taken, Ordering::SeqCst);
                        budget.give(taken);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 100, "{}", most.load(Ordering::SeqCst));
        assert_eq!(*budget.left.lock().unwrap(), 100, "everything given back");
    }
}
