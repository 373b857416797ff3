//! What the viewer shows, answered from a recording or a store: the read commands are
//! `hamlet_core::view::session`'s (the branches, the map, the timeline, frames, an agent,
//! "why?", compare, research, calls), over whichever is open, and the window asks them
//! through the same door the browser's build does ([`Viewer::dispatch`]). `src-tauri` calls
//! these and nothing else; every answer is a plain serde type, tested here without a window
//! (`engine/tests/it/view.rs`).
//!
//! A viewer on a recording only reads it. On a store it also makes, renames and deletes
//! forks (through `ops`, as `hamlet fork`, `hamlet rename-branch` and `hamlet delete-branch`
//! do) and reads the store's branches again after any change (`refresh`).

pub use hamlet_core::view::session::{
    AgentPanel, Opened, ResearchAnswer, ResearchAsk, Session, WHY_MAX_NODES,
};
pub use hamlet_core::view::{decode_if, dispatch, frame, kinds, layout, map, timeline, tracks};

use std::collections::BTreeMap;
use std::path::Path;

use hamlet_core::view::session::ViewError as SessionError;
use hamlet_log::recording::ReadError;

use crate::history::{HistoryError, Moment};
use crate::query::CallView;
use crate::reader::Reader;
use crate::store::{FsStorage, Store, StoreError};
use hamlet_core::log::{Log, LogError};

pub use frame::Frame;
pub use layout::WhyGraph;
pub use map::MapView;
pub use timeline::Timeline;
pub use tracks::Tracks;

/// Why the viewer could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The file is not a recording at all.
    #[error("{path} is not a Hamlet recording: {reason}")]
    NotARecording {
        /// The file.
        path: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// The recording failed `verify`: nothing in it is trusted.
    #[error("this recording failed verification ({0} problems): nothing in it is shown")]
    Unsound(usize),
    /// No such branch.
    #[error("no branch `{name}`; there are: {known}")]
    NoBranch {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
    /// No such agent at that moment.
    #[error("no agent {0} had joined by then")]
    NoAgent(u32),
    /// No such event on the branch.
    #[error("no event {0} on this branch")]
    NoEvent(String),
    /// "Why?" had nothing to start from.
    #[error("{0}")]
    Why(#[from] crate::why::WhyError),
    /// The moment is before the branch's first event.
    #[error("nothing happened on this branch before that moment")]
    BeforeStart,
    /// Reading the recording failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A change asked of a recording.
    #[error("a recording is read-only: import it into a store to fork it or change it")]
    ReadOnly,
    /// A measurement that cannot be made as asked.
    #[error("{0}")]
    Research(String),
    /// A change asked while a run holds the store.
    #[error("the town is running on: wait for it, or cancel it, to change anything else")]
    Busy,
    /// A fork or a deletion could not be made.
    #[error(transparent)]
    Ops(#[from] crate::ops::OpsError),
}

impl From<LogError> for ViewError {
    fn from(e: LogError) -> ViewError {
        HistoryError::from(e).into()
    }
}

impl From<SessionError> for ViewError {
    fn from(e: SessionError) -> ViewError {
        match e {
            SessionError::NotARecording { path, reason } => {
                ViewError::NotARecording { path, reason }
            }
            SessionError::Unsound(n) => ViewError::Unsound(n),
            SessionError::NoBranch { name, known } => ViewError::NoBranch { name, known },
            SessionError::NoAgent(a) => ViewError::NoAgent(a),
            SessionError::NoEvent(e) => ViewError::NoEvent(e),
            SessionError::Why(e) => ViewError::Why(e),
            SessionError::BeforeStart => ViewError::BeforeStart,
            SessionError::Read(e) => ViewError::Read(e),
            SessionError::Log(e) => ViewError::from(e),
            SessionError::Research(e) => ViewError::Research(e),
        }
    }
}

impl From<HistoryError> for ViewError {
    fn from(e: HistoryError) -> ViewError {
        match e {
            HistoryError::Store(e) => ViewError::Store(e),
            HistoryError::Read(e) => ViewError::Read(e),
            HistoryError::BeforeStart => ViewError::BeforeStart,
        }
    }
}

/// A recording or a store, open in the viewer.
pub struct Viewer<'a> {
    source: Reader<'a>,
    session: Session,
}

/// What a viewer on a store knows, kept while its store is lent to a run (see
/// [`Viewer::into_parts`]): what was opened, and what it has read of each branch.
pub struct ViewState {
    session: Session,
}

impl Viewer<'static> {
    /// A viewer on a store taken apart: the store (to lend to a run that writes it) and what
    /// the viewer knows; a viewer on a recording is given back as it was.
    pub fn into_parts(self) -> Result<(Store<FsStorage>, ViewState), Box<Viewer<'static>>> {
        match self.source {
            Reader::Store(store) => Ok((store, ViewState { session: self.session })),
            source => Err(Box::new(Viewer { source, session: self.session })),
        }
    }

    /// A viewer on `store` again, knowing what it knew ([`Viewer::into_parts`]); the
    /// branches are read again.
    pub fn from_parts(store: Store<FsStorage>, state: ViewState) -> Viewer<'static> {
        let mut viewer = Viewer { source: Reader::Store(store), session: state.session };
        viewer.refresh();
        viewer
    }
}

impl<'a> Viewer<'a> {
    /// A viewer on a store a run holds, for the queries answered between its steps: it
    /// reads, and refuses changes ([`ViewError::Busy`]). The branches are read again.
    pub fn borrowing(store: &'a Store<FsStorage>, state: ViewState) -> Viewer<'a> {
        let mut viewer = Viewer { source: Reader::Borrowed(store), session: state.session };
        viewer.refresh();
        viewer
    }

    /// What a borrowing viewer knew, to make the next one with ([`Viewer::borrowing`]).
    pub fn into_state(self) -> ViewState {
        ViewState { session: self.session }
    }
}

impl<'a> Viewer<'a> {
    /// Opens a recording over its bytes: verifies it first. An unsound recording opens with
    /// its findings and no branches; bytes that are not a recording are an error.
    pub fn recording(bytes: &'a [u8], path: &Path) -> Result<Viewer<'a>, ViewError> {
        let (rec, session) = Session::recording(bytes, path)?;
        Ok(Viewer { source: Reader::Recording(rec), session })
    }

    /// Opens a store (its index rebuilt if it must be, as `Store::open` does).
    pub fn store(dir: &Path) -> Result<Viewer<'static>, ViewError> {
        let store = Store::open(dir)?;
        let branches = Log::branches(&store);
        let session = Session::new("store", dir, true, Vec::new(), branches);
        Ok(Viewer { source: Reader::Store(store), session })
    }

    /// What was opened.
    pub fn opened(&self) -> &Opened {
        self.session.opened()
    }

    /// Answers a read command through the one door the browser's build answers through too
    /// ([`dispatch`]): a command's name and its arguments as JSON in, JSON out. A store's
    /// branches are read again first.
    pub fn dispatch(
        &mut self,
        command: &str,
        args: &str,
        prices: &BTreeMap<String, hamlet_core::cost::Price>,
    ) -> Result<String, String> {
        if command == "branches" {
            self.refresh();
        }
        dispatch::dispatch(&mut self.session, self.source.log(), command, args, prices)
    }

    /// Whether the viewer can change what it shows: a store can be; a recording is read
    /// only (import it into a store first).
    pub fn writable(&self) -> bool {
        self.source.store().is_some()
    }

    fn store_mut(&mut self) -> Result<&mut Store<FsStorage>, ViewError> {
        match &mut self.source {
            Reader::Store(store) => Ok(store),
            Reader::Borrowed(_) => Err(ViewError::Busy),
            Reader::Recording(_) => Err(ViewError::ReadOnly),
        }
    }

    /// Forks branch `from` after its last event at or before `at` as `name` (by default
    /// `FROM-what-if-N`); the parent is untouched. The branches are read again.
    pub fn fork(
        &mut self,
        from: &str,
        at: Moment,
        name: Option<&str>,
    ) -> Result<crate::ops::Forked, ViewError> {
        let store = self.store_mut()?;
        let name = match name.map(str::trim) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => crate::ops::unused_name(store, &format!("{from}-what-if")),
        };
        let forked = crate::ops::fork_at(store, from, at, &name)?;
        self.refresh();
        Ok(forked)
    }

    /// Renames branch `name` to `new` (spaces around it dropped), as `hamlet rename-branch`
    /// does: a `BranchRenamed` at its head. The store refuses, and says why, a name another
    /// branch has, an empty one or the branch's own, and so does `ops` while the branch's
    /// last step is part way; a recording is read-only. The branches are read again: what
    /// was kept of the branch is forgotten (its head moved), and if it was the branch shown
    /// it is still shown, under its new name.
    pub fn rename_branch(
        &mut self,
        name: &str,
        new: &str,
    ) -> Result<crate::ops::Renamed, ViewError> {
        let store = self.store_mut()?;
        let renamed = crate::ops::rename_branch(store, name, new.trim())?;
        self.session.branch_renamed(&renamed.old, &renamed.name);
        self.refresh();
        Ok(renamed)
    }

    /// Deletes a fork (never a root, nor a branch others fork from: the store refuses, and
    /// says why); answers how many events went with it. The branches are read again.
    pub fn delete_branch(&mut self, name: &str) -> Result<u64, ViewError> {
        let store = self.store_mut()?;
        let branch = crate::ops::branch_named(store, name)?;
        let gone = store.delete_branch(branch.id)?;
        store.flush_index()?;
        self.refresh();
        Ok(gone)
    }

    /// Reads a store's branches again (after a fork, a rename, a deletion, or a run that wrote),
    /// forgetting what was kept of any branch that changed or is gone. A recording never
    /// changes.
    pub fn refresh(&mut self) {
        let Some(store) = self.source.store() else { return };
        self.session.branches_changed(Log::branches(store));
    }

    /// The timeline of a branch, its density drawn in `buckets` columns.
    pub fn timeline(&mut self, name: &str, buckets: usize) -> Result<Timeline, ViewError> {
        Ok(self.session.timeline(self.source.log(), name, buckets)?)
    }

    /// The town's map on a branch: the recorded town file with the buildings added since,
    /// or, for a recording without one, open ground as far as its agents went.
    pub fn map(&mut self, name: &str) -> Result<MapView, ViewError> {
        Ok(self.session.map(self.source.log(), name)?)
    }

    /// The seq a simulated time falls on (the last event at or before it; the branch's
    /// first event for a time before it).
    pub fn seq_at(&mut self, name: &str, secs: u64) -> Result<u64, ViewError> {
        Ok(self.session.seq_at(self.source.log(), name, secs)?)
    }

    /// The moment one event or one clock step from `seq`, forwards (`dir` > 0) or back.
    pub fn step(
        &mut self,
        name: &str,
        seq: u64,
        by_step: bool,
        dir: i32,
    ) -> Result<u64, ViewError> {
        Ok(self.session.step(self.source.log(), name, seq, by_step, dir)?)
    }

    /// Everything the map draws as it changes along a branch, for the page to keep: with
    /// it a scrub draws at once (see [`tracks`]). One fold of the branch.
    pub fn tracks(&mut self, name: &str) -> Result<Tracks, ViewError> {
        Ok(self.session.tracks(self.source.log(), name)?)
    }

    /// The town at `seq` as the map draws it.
    pub fn frame(&mut self, name: &str, seq: u64) -> Result<Frame, ViewError> {
        Ok(self.session.frame(self.source.log(), name, seq)?)
    }

    /// An agent as it was at `seq`, and the conversations it took part in by then.
    pub fn agent(&mut self, name: &str, seq: u64, agent: u32) -> Result<AgentPanel, ViewError> {
        Ok(self.session.agent(self.source.log(), name, seq, agent)?)
    }

    /// "Why?" for an agent's action at `seq`, laid out as a graph.
    pub fn why_action(&mut self, name: &str, seq: u64, agent: u32) -> Result<WhyGraph, ViewError> {
        Ok(self.session.why_action(self.source.log(), name, seq, agent)?)
    }

    /// "Why?" for any event of the branch (a plan, a memory, a line of dialogue, …), named
    /// by its id: 64 hex digits, or a prefix of them as ids are shown (`ev_4ac4068cd864`).
    pub fn why_event(&mut self, name: &str, event: &str) -> Result<WhyGraph, ViewError> {
        Ok(self.session.why_event(self.source.log(), name, event)?)
    }

    /// Two branches side by side from where they part: `hamlet diff`'s content, each agent
    /// with when its days first differ.
    pub fn compare(&mut self, a: &str, b: &str) -> Result<crate::diff::BranchDiff, ViewError> {
        Ok(self.session.compare(self.source.log(), a, b)?)
    }

    /// One of the paper's measurements over a branch, as a chart draws it: `diffusion` (of
    /// `keywords`), `density`, `relationships` (at `at_secs`) or `cost` (per agent and
    /// purpose), measured every `every_secs`; with its table as CSV.
    pub fn research(&mut self, name: &str, ask: &ResearchAsk) -> Result<ResearchAnswer, ViewError> {
        Ok(self.session.research(self.source.log(), name, ask)?)
    }

    /// A branch with its ancestry as a recording's bytes (checkpoints included), cut after
    /// seq `until` if given: a store's branch only (a recording is a file already).
    pub fn export(&mut self, name: &str, until: Option<u64>) -> Result<Vec<u8>, ViewError> {
        let id = self.session.branch(name)?.id;
        let Some(store) = self.source.store() else { return Err(ViewError::ReadOnly) };
        crate::history::export_until_with_checkpoints(store, Some(id), until, Vec::new())
            .map_err(ViewError::from)
    }

    /// The model calls made in `from..=to` (seqs), by one agent or all.
    pub fn calls(
        &mut self,
        name: &str,
        from: u64,
        to: u64,
        agent: Option<u32>,
    ) -> Result<Vec<CallView>, ViewError> {
        Ok(self.session.calls(self.source.log(), name, from, to, agent)?)
    }
}
