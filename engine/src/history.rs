//! The town at any moment: `state_at(branch, seq | time)` folds from the nearest
//! checkpoint, over a store or over a recording. Checkpoints are derived data: deleting
//! them changes nothing but speed.

use hamlet_log::recording::ReadError;
use hamlet_log::{BranchId, Recording, RecordingWriter};

use crate::fold::Town;
use crate::store::{Storage, Store, StoreError};

/// The fewest events between checkpoints. A seek folds at most the gap between two
/// checkpoints after decoding one.
pub const CHECKPOINT_EVERY: u64 = 8192;
/// Checkpoint bytes allowed per event, amortised: a new checkpoint is written only when
/// the events since the last one, times this, reach the size of the last one. A town's
/// state grows with its memory streams, so fixed spacing would make checkpoints grow
/// quadratically with the log; this keeps them a bounded share of a recording.
pub const CHECKPOINT_BYTES_PER_EVENT: u64 = 80;

/// Decides where checkpoints go as a branch is folded in blocks of [`CHECKPOINT_EVERY`].
#[derive(Debug, Default)]
struct Spacing {
    since: u64,
    last_len: u64,
}

impl Spacing {
    /// After `n` more events: should a checkpoint be written now?
    fn due(&mut self, n: u64) -> bool {
        self.since += n;
        self.since >= CHECKPOINT_EVERY && self.since * CHECKPOINT_BYTES_PER_EVENT >= self.last_len
    }
    fn written(&mut self, len: usize) {
        self.since = 0;
        self.last_len = len as u64;
    }
}

/// A moment on a branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// After the event at this seq.
    Seq(u64),
    /// After the last event at or before this simulated time.
    Time(u64),
    /// After the branch's last event.
    End,
}

/// Why a state could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recording failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The moment is before the branch's first event.
    #[error("no event of this branch is at or before that moment")]
    BeforeStart,
}

/// Folds events `from..=to` of `branch` (with its ancestry) into `town`, from their bytes.
fn fold_store<S: Storage>(
    store: &Store<S>,
    branch: BranchId,
    from: u64,
    to: u64,
    town: &mut Town,
) -> Result<(), StoreError> {
    store.for_each_stored(branch, from, to, |_, event| {
        town.apply_stored(event);
        true
    })
}

/// The town on `branch` at `moment`, over a store.
pub fn state_at_store<S: Storage>(
    store: &Store<S>,
    branch: BranchId,
    moment: Moment,
) -> Result<Town, HistoryError> {
    let info = store.branch(branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
    let seq = match moment {
        Moment::Seq(s) => s.min(info.head_seq),
        Moment::End => info.head_seq,
        Moment::Time(t) => store.seq_at_time(branch, t)?.ok_or(HistoryError::BeforeStart)?,
    };
    let (mut town, from) = match store.checkpoint_at(branch, seq)? {
        Some((at, bytes)) => match Town::from_checkpoint(&bytes) {
            Some(town) => (town, at.saturating_add(1)),
            None => (Town::default(), 0),
        },
        None => (Town::default(), 0),
    };
    if from <= seq {
        fold_store(store, branch, from, seq, &mut town)?;
    }
    Ok(town)
}

/// Folds a whole branch of a store, writing checkpoints among its own events, spaced as
/// [`CHECKPOINT_EVERY`] and [`CHECKPOINT_BYTES_PER_EVENT`] say. Returns the final town.
pub fn checkpoint_store<S: Storage>(
    store: &Store<S>,
    branch: BranchId,
) -> Result<Town, HistoryError> {
    let info = store.branch(branch).ok_or_else(|| StoreError::NoBranch(branch.to_string()))?;
    let own_first = info.fork_seq.map_or(0, |s| s + 1);
    let mut town = match info.fork_seq {
        Some(fork_seq) => state_at_store(store, branch, Moment::Seq(fork_seq))?,
        None => Town::default(),
    };
    let mut from = own_first;
    let mut spacing = Spacing::default();
    while from <= info.head_seq {
        let to = (from + CHECKPOINT_EVERY - 1).min(info.head_seq);
        fold_store(store, branch, from, to, &mut town)?;
        if spacing.due(to + 1 - from) && to < info.head_seq {
            let state = town.to_checkpoint();
            store.put_checkpoint(branch, to, &state)?;
            spacing.written(state.len());
        }
        from = to + 1;
    }
    Ok(town)
}

/// The town on `branch` at `moment`, over a recording (from its nearest checkpoint).
pub fn state_at_recording(
    rec: &Recording<'_>,
    branch: BranchId,
    moment: Moment,
) -> Result<Town, HistoryError> {
    let seq = match moment {
        Moment::Seq(s) => s,
        Moment::End => rec.branch(branch).ok_or(ReadError::NoBranch(branch))?.head_seq,
        Moment::Time(t) => rec.seq_at_time(branch, t)?.ok_or(HistoryError::BeforeStart)?,
    };
    let checkpoint = rec.checkpoints(branch)?.into_iter().filter(|(cp, _)| cp.seq <= seq).find_map(
        |(cp, bytes)| {
            let bytes = rec.checkpoint_bytes(&cp, bytes)?;
            // A state that does not say it was folded up to its own seq is not used.
            Town::from_checkpoint(bytes)
                .filter(|t| t.head.map(|(s, _)| s) == Some(cp.seq))
                .map(|t| (cp.seq, t))
        },
    );
    let (mut town, from) = match checkpoint {
        Some((at, town)) => (town, at.saturating_add(1)),
        None => (Town::default(), 0),
    };
    if from <= seq {
        // The fast road for bytes `verify` passed; the strict one for bytes nobody checked.
        let verified = rec.is_verified();
        rec.for_each_stored(branch, from, seq, |_, event| {
            if verified {
                town.apply_stored(event);
            } else {
                town.apply_stored_strict(event);
            }
            true
        })?;
    }
    Ok(town)
}

/// Exports from a store to a recording, with checkpoints among each written branch's own
/// events, spaced as [`CHECKPOINT_EVERY`] and [`CHECKPOINT_BYTES_PER_EVENT`] say.
pub fn export_with_checkpoints<S: Storage, W: std::io::Write>(
    store: &Store<S>,
    branch: Option<BranchId>,
    out: W,
) -> Result<W, HistoryError> {
    export_until_with_checkpoints(store, branch, None, out)
}

/// [`export_with_checkpoints`] of `branch` cut after seq `until` ([`Store::export_until`]).
pub fn export_until_with_checkpoints<S: Storage, W: std::io::Write>(
    store: &Store<S>,
    branch: Option<BranchId>,
    until: Option<u64>,
    out: W,
) -> Result<W, HistoryError> {
    let mut writer = RecordingWriter::new(out, concat!("hamlet ", env!("CARGO_PKG_VERSION")))
        .map_err(|source| StoreError::Io { op: "write", path: "the recording".into(), source })?;
    store.export_until(branch, until, &mut writer)?;
    let entries: Vec<_> = writer.branches().cloned().collect();
    for entry in entries {
        let first = entry.fork_seq.map_or(0, |s| s + 1);
        let mut town = match entry.fork_seq {
            Some(s) => state_at_store(store, entry.parent.unwrap_or(entry.id), Moment::Seq(s))?,
            None => Town::default(),
        };
        let mut seq = first;
        let mut spacing = Spacing::default();
        while seq <= entry.head_seq {
            let to = (seq + CHECKPOINT_EVERY - 1).min(entry.head_seq);
            fold_store(store, entry.id, seq, to, &mut town)?;
            if spacing.due(to + 1 - seq) && to < entry.head_seq {
                let state = town.to_checkpoint();
                writer.add_checkpoint(entry.id, to, town.state_hash().0, &state).map_err(
                    |source| StoreError::Io { op: "write", path: "the recording".into(), source },
                )?;
                spacing.written(state.len());
            }
            seq = to + 1;
        }
    }
    writer.finish().map_err(|source| {
        StoreError::Io { op: "write", path: "the recording".into(), source }.into()
    })
}
