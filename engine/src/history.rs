//! The town at any moment, and the checkpoints that make it quick: a store read as a
//! [`Log`] (so `state_at(&store, branch, moment)` answers as it does over a recording), and
//! checkpoints written into a store or an exported recording. Checkpoints are derived data:
//! deleting them changes nothing but speed.

use hamlet_core::log::{fold_into, in_order, Branch, Log, LogError};
use hamlet_log::format::StoredRef;
use hamlet_log::recording::ReadError;
use hamlet_log::{BranchId, RecordingWriter};

use crate::fold::Town;
use crate::store::{Storage, Store, StoreError};

pub use hamlet_core::log::{state_at, Moment, CHECKPOINT_EVERY};

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

impl From<LogError> for HistoryError {
    fn from(e: LogError) -> HistoryError {
        match e {
            LogError::Read(e) => HistoryError::Read(e),
            LogError::Container(e) => match e.downcast::<StoreError>() {
                Ok(e) => HistoryError::Store(*e),
                Err(e) => HistoryError::Store(StoreError::Corrupt {
                    path: String::new(),
                    offset: 0,
                    problem: e.to_string(),
                }),
            },
            LogError::NoBranch(id) => HistoryError::Store(StoreError::NoBranch(id.to_string())),
            LogError::BeforeStart => HistoryError::BeforeStart,
        }
    }
}

/// A store's error, as a log's.
fn contained(e: StoreError) -> LogError {
    LogError::Container(Box::new(e))
}

impl<S: Storage> Log for Store<S> {
    fn branches(&self) -> Vec<Branch> {
        in_order(Store::branches(self))
    }

    fn branch(&self, id: BranchId) -> Result<Branch, LogError> {
        Store::branch(self, id).ok_or(LogError::NoBranch(id))
    }

    fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), LogError> {
        Store::for_each_stored(self, branch, from, to, f).map_err(contained)
    }

    fn seq_at_time(&self, branch: BranchId, secs: u64) -> Result<Option<u64>, LogError> {
        Store::seq_at_time(self, branch, secs).map_err(contained)
    }

    fn checkpoint(&self, branch: BranchId, seq: u64) -> Result<Option<(u64, Town)>, LogError> {
        Ok(self
            .checkpoint_at(branch, seq)
            .map_err(contained)?
            .and_then(|(at, bytes)| Town::from_checkpoint(&bytes).map(|town| (at, town))))
    }
}

/// Folds events `from..=to` of `branch` (with its ancestry) into `town`, from their bytes.
fn fold_store<S: Storage>(
    store: &Store<S>,
    branch: BranchId,
    from: u64,
    to: u64,
    town: &mut Town,
) -> Result<(), HistoryError> {
    Ok(fold_into(store, branch, from, to, town)?)
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
        Some(fork_seq) => state_at(store, branch, Moment::Seq(fork_seq))?,
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
            Some(s) => state_at(store, entry.parent.unwrap_or(entry.id), Moment::Seq(s))?,
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
