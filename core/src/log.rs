//! A log to read — a recording's bytes, a store, or events in memory — behind one trait,
//! [`Log`], and what is answered the same way over any of them: the branch rows
//! ([`Branch`]), the branch shown first ([`first_shown`]), and the town at a moment
//! ([`state_at`]).
//!
//! A recording ([`Recording`]) and events in memory ([`EventsLog`]) implement it here; the
//! engine's store implements it beside its writes. Nothing here writes, spawns or reads a
//! clock.

use std::collections::BTreeSet;
use std::fmt;

use hamlet_log::event::parse_header;
use hamlet_log::format::{CheckpointEntry, StoredRef};
use hamlet_log::recording::{OpenError, ReadError};
use hamlet_log::verify::{Problem, Report};
use hamlet_log::{BranchId, Event, EventId, Recording};
use serde::Serialize;

use crate::fold::Town;

/// A branch as every reader lists it (and as the window's page receives it: the JSON names
/// the parent by name and the id as `br_` and 64 hex digits).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Branch {
    /// Its name.
    pub name: String,
    /// The branch it forked from, by name.
    #[serde(rename = "parent")]
    pub parent_name: Option<String>,
    /// The last seq it shares with its parent.
    pub fork_seq: Option<u64>,
    /// Its last event's seq.
    pub head_seq: u64,
    /// Events of its own (after the fork point).
    pub own_events: u64,
    /// Its id (its first event's id).
    #[serde(serialize_with = "branch_hex")]
    pub id: BranchId,
    /// The branch it forked from.
    #[serde(skip)]
    pub parent: Option<BranchId>,
    /// Its last event's id.
    #[serde(skip)]
    pub head_id: EventId,
    /// Its last event's simulated time.
    #[serde(skip)]
    pub head_time: u64,
}

fn branch_hex<S: serde::Serializer>(id: &BranchId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&id.0.to_hex())
}

/// Branch rows with each parent named (`parent_name` from `parent`), in the order of
/// [`in_order`]: how a container's list becomes [`Log::branches`].
pub fn rows(mut branches: Vec<Branch>) -> Vec<Branch> {
    let names: Vec<(BranchId, String)> = branches.iter().map(|b| (b.id, b.name.clone())).collect();
    for b in &mut branches {
        b.parent_name =
            b.parent.and_then(|p| names.iter().find(|(id, _)| *id == p).map(|(_, n)| n.clone()));
    }
    in_order(branches)
}

/// Branches in the order every [`Log::branches`] answers: roots first, then forks, each
/// group by name.
pub fn in_order(mut branches: Vec<Branch>) -> Vec<Branch> {
    branches.sort_by(|a, b| (a.parent.is_some(), &a.name).cmp(&(b.parent.is_some(), &b.name)));
    branches
}

/// The default branch, wherever one is not named (the CLI, the window): `main` if there is
/// one, else the first root by name (branches listed as [`in_order`] lists them).
pub fn first_shown(branches: &[Branch]) -> Option<&Branch> {
    branches.iter().find(|b| b.name == "main").or_else(|| branches.first())
}

/// The branch `name` names — its current name, or a prefix of 4 or more hex digits of its
/// id (`br_3fa2…` or `3fa2…`) that no other branch shares — or, with no name, the default
/// branch ([`first_shown`]). The one rule of every reader.
pub fn pick<'b>(branches: &'b [Branch], name: Option<&str>) -> Option<&'b Branch> {
    let Some(name) = name else { return first_shown(branches) };
    if let Some(b) = branches.iter().find(|b| b.name == name) {
        return Some(b);
    }
    let hex = name.strip_prefix("br_").unwrap_or(name).to_ascii_lowercase();
    let mut hits = branches.iter().filter(|b| b.id.to_hex().starts_with(&hex));
    match (hex.len() >= 4, hits.next(), hits.next()) {
        (true, Some(b), None) => Some(b),
        _ => None,
    }
}

/// Why a log could not answer.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The recording's bytes failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The container behind the log failed (a store's error, kept whole).
    #[error(transparent)]
    Container(Box<dyn std::error::Error + Send + Sync>),
    /// No branch has this id.
    #[error("no branch {0}")]
    NoBranch(BranchId),
    /// The moment is before the branch's first event.
    #[error("no event of this branch is at or before that moment")]
    BeforeStart,
}

/// The fewest events between checkpoints (the engine writes them so). A seek folds at most
/// the gap between two checkpoints after decoding one.
pub const CHECKPOINT_EVERY: u64 = 8192;

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

/// A log to read: branches of events, each with its ancestry, in seq order.
pub trait Log {
    /// Every branch: roots first, then forks, each group by name ([`in_order`]).
    fn branches(&self) -> Vec<Branch>;

    /// Calls `f` with every stored event of `branch` (with its ancestry) from `from` to `to`
    /// inclusive, in seq order, until `f` returns false.
    fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), LogError>;

    /// The last seq of `branch` whose simulated time is at most `secs` (`None` if every
    /// event is later).
    fn seq_at_time(&self, branch: BranchId, secs: u64) -> Result<Option<u64>, LogError>;

    /// The latest checkpointed town on `branch`'s ancestry at or before `seq`, with the seq
    /// it was folded to; `None` when there is none to use.
    fn checkpoint(&self, branch: BranchId, seq: u64) -> Result<Option<(u64, Town)>, LogError>;

    /// Whether every byte was checked before it is read (a verified recording, a store):
    /// the fold takes its fast road then, and the strict one otherwise.
    fn is_verified(&self) -> bool {
        true
    }

    /// The branch with this id.
    fn branch(&self, id: BranchId) -> Result<Branch, LogError> {
        self.branches().into_iter().find(|b| b.id == id).ok_or(LogError::NoBranch(id))
    }

    /// The decoded events of `branch` with its ancestry from `from` to `to` inclusive.
    fn events(&self, branch: BranchId, from: u64, to: u64) -> Result<Vec<Event>, LogError> {
        let mut out = Vec::new();
        self.for_each_event(branch, from, to, &mut |e| {
            out.push(e);
            true
        })?;
        Ok(out)
    }

    /// Calls `f` with each decoded event of `branch` (with its ancestry) from `from` to `to`
    /// inclusive, in seq order, until it returns false; an event that does not decode ends
    /// the walk with its error.
    fn for_each_event(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(Event) -> bool,
    ) -> Result<(), LogError> {
        let mut failed = None;
        self.for_each_stored(branch, from, to, &mut |b, e| match hamlet_log::recording::to_event(
            b,
            e.clone(),
        ) {
            Ok(event) => f(event),
            Err(err) => {
                failed = Some(err);
                false
            }
        })?;
        match failed {
            Some(err) => Err(err.into()),
            None => Ok(()),
        }
    }
}

/// Folds events `from..=to` of `branch` (with its ancestry) into `town`, by the road the
/// log's checks allow.
pub fn fold_into(
    log: &dyn Log,
    branch: BranchId,
    from: u64,
    to: u64,
    town: &mut Town,
) -> Result<(), LogError> {
    let verified = log.is_verified();
    log.for_each_stored(branch, from, to, &mut |_, event| {
        if verified {
            town.apply_stored(event);
        } else {
            town.apply_stored_strict(event);
        }
        true
    })
}

/// The town on `branch` at `moment`: from the nearest checkpoint, folded forward.
pub fn state_at(log: &dyn Log, branch: BranchId, moment: Moment) -> Result<Town, LogError> {
    let head = log.branch(branch)?.head_seq;
    let seq = match moment {
        Moment::Seq(s) => s.min(head),
        Moment::End => head,
        Moment::Time(t) => log.seq_at_time(branch, t)?.ok_or(LogError::BeforeStart)?,
    };
    let (mut town, from) = match log.checkpoint(branch, seq)? {
        Some((at, town)) => (town, at.saturating_add(1)),
        None => (Town::default(), 0),
    };
    if from <= seq {
        fold_into(log, branch, from, seq, &mut town)?;
    }
    Ok(town)
}

impl Log for Recording<'_> {
    fn branches(&self) -> Vec<Branch> {
        rows(
            Recording::branches(self)
                .iter()
                .map(|b| Branch {
                    name: b.name.clone(),
                    parent_name: None,
                    fork_seq: b.fork_seq,
                    head_seq: b.head_seq,
                    own_events: b.n_events,
                    id: b.id,
                    parent: b.parent,
                    head_id: b.head_id,
                    head_time: self.own_chunks(b.id).last().map_or(0, |c| c.time_last),
                })
                .collect(),
        )
    }

    fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), LogError> {
        Ok(Recording::for_each_stored(self, branch, from, to, f)?)
    }

    fn seq_at_time(&self, branch: BranchId, secs: u64) -> Result<Option<u64>, LogError> {
        Ok(Recording::seq_at_time(self, branch, secs)?)
    }

    fn checkpoint(&self, branch: BranchId, seq: u64) -> Result<Option<(u64, Town)>, LogError> {
        // A checkpoint's hash vouches for its bytes, not for its state: until the fold has
        // vouched for it too (`open_checked`), seeks start from the first event.
        if !self.checkpoints_trusted() {
            return Ok(None);
        }
        let found = self.checkpoints(branch)?.into_iter().filter(|(cp, _)| cp.seq <= seq).find_map(
            |(cp, bytes)| {
                let bytes = self.checkpoint_bytes(&cp, bytes)?;
                // A state that does not say it was folded up to its own seq is not used.
                Town::from_checkpoint(bytes)
                    .filter(|t| t.head.map(|(s, _)| s) == Some(cp.seq))
                    .map(|t| (cp.seq, t))
            },
        );
        Ok(found)
    }

    fn is_verified(&self) -> bool {
        Recording::is_verified(self)
    }
}

/// Verifies a recording (`hamlet_log::verify`), then, if it is sound, re-derives the state
/// at every checkpoint by folding its events ([`check_checkpoints`]): a checkpoint that
/// differs is a problem in the report (`Problem::Checkpoint`). Readers start seeks at
/// checkpoints only when all of them held; otherwise they fold from the first event.
pub fn open_checked(bytes: &[u8]) -> Result<(Recording<'_>, Report), OpenError> {
    let (mut rec, mut report) = Recording::open_verified(bytes)?;
    if report.is_clean() {
        match check_checkpoints(&rec) {
            Ok(found) if found.is_empty() => rec.trust_checkpoints(),
            Ok(found) => report.problems.extend(found),
            Err(e) => report.problems.push(Problem::Index(format!(
                "its checkpoints could not be checked against its events: {e}"
            ))),
        }
    }
    Ok((rec, report))
}

/// Folds every branch of a recording once and compares the state at each of its
/// checkpoints with the one the checkpoint holds; answers each that differs. A branch's
/// fold starts at the latest checkpoint of its ancestry already found true (parents are
/// checked before their forks), so every event is folded about once. A checkpoint's bytes
/// are compared with the fold's encoding, never decoded. One in another state version than
/// this build's is one no reader uses, and is left alone.
pub fn check_checkpoints(rec: &Recording<'_>) -> Result<Vec<Problem>, LogError> {
    let branches: BTreeSet<BranchId> =
        rec.summary().checkpoints.iter().map(|cp| cp.branch).collect();
    let mut order: Vec<(usize, BranchId)> = Vec::new();
    for branch in branches {
        order.push((rec.ancestry(branch)?.len(), branch));
    }
    order.sort();
    let mut found = Vec::new();
    let mut trusted: BTreeSet<(BranchId, u64)> = BTreeSet::new();
    for (_, branch) in order {
        // Every checkpoint on the branch's ancestry with its bytes, latest first.
        let on_path = rec.checkpoints(branch)?;
        let own: Vec<&(CheckpointEntry, &[u8])> =
            on_path.iter().rev().filter(|(cp, _)| cp.branch == branch).collect();
        let first_own = own.first().map_or(0, |(cp, _)| cp.seq);
        // The latest ancestor checkpoint found true, below this branch's own.
        let start = on_path
            .iter()
            .filter(|(cp, _)| cp.branch != branch && cp.seq < first_own)
            .find(|(cp, _)| trusted.contains(&(cp.branch, cp.seq)))
            .and_then(|(cp, bytes)| {
                Town::from_checkpoint(bytes).map(|t| (cp.seq.saturating_add(1), t))
            });
        let (mut next, mut town) = start.unwrap_or_default();
        for &&(cp, bytes) in &own {
            if cp.seq >= next {
                fold_into(rec, branch, next, cp.seq, &mut town)?;
                next = cp.seq.saturating_add(1);
            }
            if bytes.get(..2) != Some(&crate::fold::CHECKPOINT_VERSION.to_le_bytes()[..]) {
                continue;
            }
            // Compared as bytes, never decoded: a state from outside could decode to many
            // times its size, and the fold's encoding is canonical.
            let folded = town.state_hash();
            let problem = if town.head.map(|(s, _)| s) != Some(cp.seq) {
                Some(format!("its branch has no event #{}", cp.seq))
            } else if town.to_checkpoint() != bytes {
                Some(format!("its state is not the one its events fold to ({folded})"))
            } else if cp.state_hash != folded.0 {
                Some(format!(
                    "the summary gives its state as {}, its events fold to {folded}",
                    crate::fold::StateHash(cp.state_hash)
                ))
            } else {
                None
            };
            match problem {
                Some(problem) => found.push(Problem::Checkpoint { branch, seq: cp.seq, problem }),
                None => {
                    trusted.insert((branch, cp.seq));
                }
            }
        }
    }
    Ok(found)
}

/// One branch of events held in memory, read as a log: what a test, a tool or a page that
/// was handed events (not bytes) folds and explains. The events must be one root branch's,
/// in seq order from 0; [`EventsLog::new`] refuses others.
pub struct EventsLog<'a> {
    events: &'a [Event],
    /// Each event's stored bytes, encoded once.
    stored: Vec<Vec<u8>>,
    name: String,
}

impl fmt::Debug for EventsLog<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventsLog")
            .field("name", &self.name)
            .field("events", &self.events.len())
            .finish()
    }
}

impl<'a> EventsLog<'a> {
    /// A log of `events`, one root branch named `name`; `None` unless they are a branch's
    /// whole run (seq 0, 1, 2, … on one branch, none of an unknown kind).
    pub fn new(name: &str, events: &'a [Event]) -> Option<EventsLog<'a>> {
        let branch = events.first()?.branch;
        let whole = events.iter().enumerate().all(|(i, e)| {
            e.branch == branch
                && e.seq() == i as u64
                && !matches!(e.body, hamlet_log::Body::Unknown { .. })
        });
        whole.then(|| EventsLog {
            events,
            stored: events
                .iter()
                .map(|e| hamlet_log::event::encode_stored(&e.header, &e.body))
                .collect(),
            name: name.to_owned(),
        })
    }

    fn id(&self) -> BranchId {
        self.events.first().map_or(BranchId(EventId([0; 32])), |e| e.branch)
    }
}

impl Log for EventsLog<'_> {
    fn branches(&self) -> Vec<Branch> {
        let last = self.events.last();
        vec![Branch {
            name: self.name.clone(),
            parent_name: None,
            fork_seq: None,
            head_seq: last.map_or(0, Event::seq),
            own_events: self.events.len() as u64,
            id: self.id(),
            parent: None,
            head_id: last.map_or(EventId([0; 32]), |e| e.id),
            head_time: last.map_or(0, Event::sim_time_secs),
        }]
    }

    fn for_each_stored(
        &self,
        branch: BranchId,
        from: u64,
        to: u64,
        f: &mut dyn FnMut(BranchId, &StoredRef<'_>) -> bool,
    ) -> Result<(), LogError> {
        if branch != self.id() {
            return Err(LogError::NoBranch(branch));
        }
        let (from, to) = (
            usize::try_from(from).unwrap_or(usize::MAX),
            usize::try_from(to).unwrap_or(usize::MAX),
        );
        for (event, stored) in self
            .events
            .iter()
            .zip(&self.stored)
            .skip(from)
            .take(to.saturating_sub(from).saturating_add(1))
        {
            let Ok((kind, schema, header, body)) = parse_header(stored) else { continue };
            let stored_ref = StoredRef {
                id: event.id,
                parent: event.parent,
                kind,
                schema,
                header,
                stored,
                body,
            };
            if !f(branch, &stored_ref) {
                break;
            }
        }
        Ok(())
    }

    fn seq_at_time(&self, branch: BranchId, secs: u64) -> Result<Option<u64>, LogError> {
        if branch != self.id() {
            return Err(LogError::NoBranch(branch));
        }
        let n = self.events.partition_point(|e| e.sim_time_secs() <= secs);
        Ok(n.checked_sub(1).map(|i| i as u64))
    }

    fn checkpoint(&self, _branch: BranchId, _seq: u64) -> Result<Option<(u64, Town)>, LogError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, id: u8, parent: Option<u8>) -> Branch {
        let id_of = |b: u8| BranchId(EventId([b; 32]));
        Branch {
            name: name.to_owned(),
            parent_name: None,
            fork_seq: parent.map(|_| 3),
            head_seq: 9,
            own_events: 4,
            id: id_of(id),
            parent: parent.map(id_of),
            head_id: EventId([id; 32]),
            head_time: 60,
        }
    }

    #[test]
    fn rows_name_parents_and_put_roots_first() {
        let rows = rows(vec![
            listed("b-fork", 2, Some(1)),
            listed("zeta", 1, None),
            listed("alpha", 3, None),
        ]);
        let names: Vec<&str> = rows.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["alpha", "zeta", "b-fork"]);
        assert_eq!(rows[2].parent_name.as_deref(), Some("zeta"));
        assert_eq!(first_shown(&rows).map(|b| b.name.as_str()), Some("alpha"));
        let with_main = super::rows(vec![listed("alpha", 3, None), listed("main", 1, None)]);
        assert_eq!(first_shown(&with_main).map(|b| b.name.as_str()), Some("main"));
        assert!(first_shown(&[]).is_none());
        let hex = BranchId(EventId([2; 32])).0.to_hex();
        assert_eq!(pick(&rows, Some("zeta")).map(|b| b.id), Some(rows[1].id));
        assert_eq!(
            pick(&rows, Some(&format!("br_{}", &hex[..6]))).map(|b| b.name.as_str()),
            Some("b-fork")
        );
        assert!(pick(&rows, Some(&hex[..3])).is_none(), "three hex digits are too few");
        assert!(pick(&rows, Some("nobody")).is_none());
        assert_eq!(pick(&rows, None).map(|b| b.name.as_str()), Some("alpha"));
    }

    #[test]
    fn a_branch_row_is_the_json_the_page_reads() {
        let row = &rows(vec![listed("main", 1, None), listed("fork", 2, Some(1))])[1];
        let json = serde_json::to_string(row).unwrap();
        let hex = BranchId(EventId([2; 32])).0.to_hex();
        assert_eq!(
            json,
            format!(
                r#"{{"name":"fork","parent":"main","fork_seq":3,"head_seq":9,"own_events":4,"id":"{hex}"}}"#
            )
        );
    }

    #[test]
    fn a_recording_and_its_events_in_memory_answer_alike() {
        let spec = crate::synth::SynthSpec { n_events: 3000, n_agents: 4, seed: 7 };
        let bytes = crate::synth::write_recording(spec, Vec::new(), |_| {}).unwrap();
        let (rec, report) = Recording::open_verified(&bytes).unwrap();
        assert!(report.is_clean());
        let root = Log::branches(&rec)[0].clone();
        let events = Log::events(&rec, root.id, 0, root.head_seq).unwrap();
        assert_eq!(events.len() as u64, root.head_seq + 1);
        let memory = EventsLog::new(&root.name, &events).unwrap();
        let row = &memory.branches()[0];
        assert_eq!((row.id, row.head_seq, row.head_id), (root.id, root.head_seq, root.head_id));
        assert_eq!(row.head_time, root.head_time, "the same last simulated time");
        for moment in
            [Moment::Seq(0), Moment::Seq(root.head_seq / 3), Moment::Time(600), Moment::End]
        {
            let a = state_at(&rec, root.id, moment).unwrap();
            let b = state_at(&memory, root.id, moment).unwrap();
            assert_eq!(a.state_hash(), b.state_hash(), "{moment:?}");
        }
        assert!(matches!(
            state_at(&memory, BranchId(EventId([9; 32])), Moment::End),
            Err(LogError::NoBranch(_))
        ));
        assert!(EventsLog::new("cut", &events[1..]).is_none(), "a run must start at seq 0");
        assert!(EventsLog::new("none", &[]).is_none());
    }
}
