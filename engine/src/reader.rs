//! The one reader: a recording or a store, opened and read as a
//! [`Log`](hamlet_core::log::Log). The CLI, the viewer and research read branches, events
//! and the town at a moment through `log()`, whichever container they were given, and pick
//! a branch by one rule ([`hamlet_core::log::pick`]: a name, an id prefix, else `main`,
//! else the first root).

use hamlet_core::log::{self, Log, LogError, Moment};
use hamlet_log::{BranchId, Recording};

use crate::fold::Town;
use crate::store::{FsStorage, Store};

/// A recording's bytes, a store, or a store a run holds and lends between its steps.
pub enum Reader<'a> {
    /// A recording, over its bytes.
    Recording(Recording<'a>),
    /// A store, opened by the reader.
    Store(Store<FsStorage>),
    /// A store lent by whoever holds it (a run, between its steps).
    Borrowed(&'a Store<FsStorage>),
}

impl Reader<'_> {
    /// What is open, as a log.
    pub fn log(&self) -> &dyn Log {
        match self {
            Reader::Recording(rec) => rec,
            Reader::Store(store) => store,
            Reader::Borrowed(store) => *store,
        }
    }

    /// The store, if a store is open (to write to it, or to ask what only a store knows).
    pub fn store(&self) -> Option<&Store<FsStorage>> {
        match self {
            Reader::Store(store) => Some(store),
            Reader::Borrowed(store) => Some(store),
            Reader::Recording(_) => None,
        }
    }

    /// The town on `branch` at `moment`.
    pub fn state_at(&self, branch: BranchId, moment: Moment) -> Result<Town, LogError> {
        log::state_at(self.log(), branch, moment)
    }
}
