//! What the viewer answers about an open recording or store, over any [`Log`]: the branches,
//! the map, the timeline, the town at a moment (a frame), an agent as it was, "why?" laid out
//! as a graph, two branches compared, a measurement, model calls. A [`Session`] keeps what
//! was opened and what it has read of each branch; the log itself is handed to each call, so
//! the same session serves a recording's bytes (in the desktop window or a browser) and a
//! store (the engine's `view`, which adds the changes only a store can make).
//!
//! Frames are the hot path (one per scrub input): the town comes from the nearest
//! checkpoint and the fold forward, or from the last frame's town folded forward when the new
//! moment is a little later; only the few events a frame draws beyond the town (trails, the
//! lines of conversations under way) are decoded. Panels that need a whole prefix of the log
//! (an agent, "why?", calls) decode the branch's events once and keep them.

use std::collections::BTreeMap;
use std::path::Path;

use hamlet_log::event::AgentId;
use hamlet_log::recording::ReadError;
use hamlet_log::{BranchId, Event, Recording};
use serde::Serialize;

use super::{decode_if, kinds, timeline, Frame, MapView, Timeline, Tracks, WhyGraph};
use crate::fold::Town;
use crate::log::{Branch, Log, LogError, Moment, CHECKPOINT_EVERY};
use crate::query::{AgentView, CallView, ConversationView, Past};
use crate::town::build::recorded_town;
use crate::town::Definition;

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
    /// The log failed otherwise (a store's error, kept whole; a branch gone).
    #[error(transparent)]
    Log(LogError),
    /// A measurement that cannot be made as asked.
    #[error("{0}")]
    Research(String),
}

impl From<LogError> for ViewError {
    fn from(e: LogError) -> ViewError {
        match e {
            LogError::Read(e) => ViewError::Read(e),
            LogError::BeforeStart => ViewError::BeforeStart,
            e => ViewError::Log(e),
        }
    }
}

/// What was opened, as the window's title bar and status bar show it.
#[derive(Clone, Debug, Serialize)]
pub struct Opened {
    /// The file or folder name.
    pub title: String,
    /// Its path, as given.
    pub path: String,
    /// `recording` or `store`.
    pub kind: &'static str,
    /// Whether `verify` found the recording sound (a store is checked as it opens).
    pub sound: bool,
    /// What `verify` found wrong, one line each.
    pub findings: Vec<String>,
    /// Every branch, roots first (empty when the recording is unsound).
    pub branches: Vec<Branch>,
    /// The branch to show first: `main`, else the first root.
    pub branch: String,
}

/// The branch to show first ([`first_shown`](crate::log::first_shown)), by name.
fn first_shown(branches: &[Branch]) -> String {
    crate::log::first_shown(branches).map(|b| b.name.clone()).unwrap_or_default()
}

/// What is kept about one branch once it has been looked at.
#[derive(Default)]
struct BranchCache {
    scan: Option<timeline::Scan>,
    definition: Option<Option<Definition>>,
    events: Option<Vec<Event>>,
    /// The last frame's town, to fold forward from when the next moment is a little later.
    warm: Option<Town>,
}

/// What is open and what has been read of it (see the module's documentation); the log is
/// given to each call.
pub struct Session {
    opened: Opened,
    cache: BTreeMap<BranchId, BranchCache>,
}

impl Session {
    /// Opens a recording over its bytes: verifies it first. An unsound recording opens with
    /// its findings and no branches; bytes that are not a recording are an error (`path`
    /// names the file in it, and in the title).
    pub fn recording<'a>(
        bytes: &'a [u8],
        path: &Path,
    ) -> Result<(Recording<'a>, Session), ViewError> {
        let shown = path.display().to_string();
        let (rec, report) = crate::log::open_checked(bytes)
            .map_err(|e| ViewError::NotARecording { path: shown, reason: e.to_string() })?;
        let sound = report.is_clean();
        let findings = report.problems.iter().map(ToString::to_string).collect();
        let branches = if sound { Log::branches(&rec) } else { Vec::new() };
        Ok((rec, Session::new("recording", path, sound, findings, branches)))
    }

    /// A session on something opened: `kind` (`recording` or `store`), its path, whether it
    /// is sound and what was found wrong, and its branches.
    pub fn new(
        kind: &'static str,
        path: &Path,
        sound: bool,
        findings: Vec<String>,
        branches: Vec<Branch>,
    ) -> Session {
        let branch = first_shown(&branches);
        let title = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let opened = Opened {
            title,
            path: path.display().to_string(),
            kind,
            sound,
            findings,
            branches,
            branch,
        };
        Session { opened, cache: BTreeMap::new() }
    }

    /// What was opened.
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    /// Takes the branches read again (a store changed): what was kept of any branch that
    /// changed or is gone is forgotten; a branch shown that is gone gives way to the first.
    pub fn branches_changed(&mut self, branches: Vec<Branch>) {
        let same =
            |id: &BranchId, head: u64| branches.iter().any(|b| b.id == *id && b.head_seq == head);
        let old: BTreeMap<BranchId, u64> =
            self.opened.branches.iter().map(|b| (b.id, b.head_seq)).collect();
        self.cache.retain(|id, _| old.get(id).is_some_and(|&head| same(id, head)));
        if !branches.iter().any(|b| b.name == self.opened.branch) {
            self.opened.branch = first_shown(&branches);
        }
        self.opened.branches = branches;
    }

    /// A branch was renamed from `old` to `new`: if it was the one shown, it still is.
    pub fn branch_renamed(&mut self, old: &str, new: &str) {
        if self.opened.branch == old {
            new.clone_into(&mut self.opened.branch);
        }
    }

    /// The branch named `name` (an unsound recording has none to give).
    pub fn branch(&self, name: &str) -> Result<&Branch, ViewError> {
        if !self.opened.sound {
            return Err(ViewError::Unsound(self.opened.findings.len()));
        }
        self.opened.branches.iter().find(|b| b.name == name).ok_or_else(|| ViewError::NoBranch {
            name: name.to_owned(),
            known: self
                .opened
                .branches
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    fn cache(&mut self, id: BranchId) -> &mut BranchCache {
        self.cache.entry(id).or_default()
    }

    fn scan(&mut self, log: &dyn Log, name: &str) -> Result<(BranchId, u64), ViewError> {
        let b = self.branch(name)?;
        let (id, head) = (b.id, b.head_seq);
        if self.cache(id).scan.is_none() {
            let scan = timeline::Scan::of(log, id, head)?;
            self.cache(id).scan = Some(scan);
        }
        Ok((id, head))
    }

    /// The timeline of a branch, its density drawn in `buckets` columns.
    pub fn timeline(
        &mut self,
        log: &dyn Log,
        name: &str,
        buckets: usize,
    ) -> Result<Timeline, ViewError> {
        let (id, head) = self.scan(log, name)?;
        let scan = self.cache(id).scan.as_ref().ok_or(ViewError::BeforeStart)?;
        Ok(scan.timeline(name, head, buckets))
    }

    /// The town's map on a branch: the recorded town file with the buildings added since,
    /// or, for a recording without one, open ground as far as its agents went.
    pub fn map(&mut self, log: &dyn Log, name: &str) -> Result<MapView, ViewError> {
        let (id, _) = self.scan(log, name)?;
        let definition = self.definition(log, name)?;
        let scan = self.cache(id).scan.as_ref().ok_or(ViewError::BeforeStart)?;
        Ok(match definition {
            Some(d) => MapView::of(&d),
            None => MapView::open_ground(&scan.town_name, scan.extent),
        })
    }

    fn definition(&mut self, log: &dyn Log, name: &str) -> Result<Option<Definition>, ViewError> {
        let b = self.branch(name)?;
        let (id, head) = (b.id, b.head_seq);
        if let Some(d) = &self.cache(id).definition {
            return Ok(d.clone());
        }
        // Only the events that shape the map are decoded.
        let mut shaping = Vec::new();
        log.for_each_stored(id, 0, head, &mut |b, e| {
            if let Some(e) = decode_if(b, e, &[kinds::TOWN_LOADED, kinds::INTERVENED]) {
                shaping.push(e);
            }
            true
        })?;
        let d = recorded_town(&shaping);
        self.cache(id).definition = Some(d.clone());
        Ok(d)
    }

    /// The seq a simulated time falls on (the last event at or before it; the branch's
    /// first event for a time before it).
    pub fn seq_at(&mut self, log: &dyn Log, name: &str, secs: u64) -> Result<u64, ViewError> {
        let id = self.branch(name)?.id;
        let first = self.first_seq(log, name)?;
        Ok(log.seq_at_time(id, secs)?.unwrap_or(first).max(first))
    }

    fn first_seq(&mut self, log: &dyn Log, name: &str) -> Result<u64, ViewError> {
        let (id, _) = self.scan(log, name)?;
        Ok(self.cache(id).scan.as_ref().map_or(0, |s| s.first_seq))
    }

    /// The moment one event or one clock step from `seq`, forwards (`dir` > 0) or back.
    pub fn step(
        &mut self,
        log: &dyn Log,
        name: &str,
        seq: u64,
        by_step: bool,
        dir: i32,
    ) -> Result<u64, ViewError> {
        let (id, head) = self.scan(log, name)?;
        let scan = self.cache(id).scan.as_ref().ok_or(ViewError::BeforeStart)?;
        let first = scan.first_seq;
        let seq = seq.clamp(first, head);
        Ok(if by_step {
            scan.step_from(seq, dir, head)
        } else if dir > 0 {
            (seq + 1).min(head)
        } else {
            seq.saturating_sub(1).max(first)
        })
    }

    /// Everything the map draws as it changes along a branch, for the page to keep: with
    /// it a scrub draws at once (see [`tracks`](super::tracks)). One fold of the branch.
    pub fn tracks(&mut self, log: &dyn Log, name: &str) -> Result<Tracks, ViewError> {
        let (id, head) = self.scan(log, name)?;
        let first = self.cache(id).scan.as_ref().map_or(0, |s| s.first_seq);
        Ok(Tracks::of(log, id, first, head)?)
    }

    /// The town at `seq` as the map draws it.
    pub fn frame(&mut self, log: &dyn Log, name: &str, seq: u64) -> Result<Frame, ViewError> {
        let (id, head) = self.scan(log, name)?;
        let first = self.cache(id).scan.as_ref().map_or(0, |s| s.first_seq);
        let seq = seq.clamp(first, head);
        let town = self.town_at(log, id, seq)?;
        let scan =
            self.cache.get(&id).and_then(|c| c.scan.as_ref()).ok_or(ViewError::BeforeStart)?;
        let frame = Frame::of(log, id, &town, scan)?;
        self.cache(id).warm = Some(town);
        Ok(frame)
    }

    /// The town at `seq`: the last frame's town folded forward if it is at most a
    /// checkpoint's spacing behind, else from the nearest checkpoint.
    fn town_at(&mut self, log: &dyn Log, id: BranchId, seq: u64) -> Result<Town, ViewError> {
        let warm = self.cache(id).warm.take();
        if let Some(mut town) = warm {
            let at = town.head.map_or(0, |(s, _)| s);
            if at == seq {
                return Ok(town);
            }
            if at < seq && seq - at <= CHECKPOINT_EVERY {
                log.for_each_stored(id, at + 1, seq, &mut |_, e| {
                    town.apply_stored(e);
                    true
                })?;
                return Ok(town);
            }
        }
        Ok(crate::log::state_at(log, id, Moment::Seq(seq))?)
    }

    fn events(&mut self, log: &dyn Log, name: &str) -> Result<(BranchId, &[Event]), ViewError> {
        let b = self.branch(name)?;
        let (id, head) = (b.id, b.head_seq);
        if self.cache(id).events.is_none() {
            let events = log.events(id, 0, head)?;
            self.cache(id).events = Some(events);
        }
        Ok((id, self.cache(id).events.as_deref().unwrap_or(&[])))
    }

    /// An agent as it was at `seq`, and the conversations it took part in by then.
    pub fn agent(
        &mut self,
        log: &dyn Log,
        name: &str,
        seq: u64,
        agent: u32,
    ) -> Result<AgentPanel, ViewError> {
        let (_, events) = self.events(log, name)?;
        let past = Past::new(Past::cut(events, seq));
        let view = past.agent(AgentId(agent)).ok_or(ViewError::NoAgent(agent))?;
        let conversations =
            past.conversations().into_iter().filter(|c| c.agents.contains(&view.name)).collect();
        Ok(AgentPanel { agent: view, conversations })
    }

    /// "Why?" for an agent's action at `seq`, laid out as a graph.
    pub fn why_action(
        &mut self,
        log: &dyn Log,
        name: &str,
        seq: u64,
        agent: u32,
    ) -> Result<WhyGraph, ViewError> {
        let (_, events) = self.events(log, name)?;
        let events = Past::cut(events, seq);
        let history = crate::why::CauseIndex::new(events);
        let why = history.why(AgentId(agent), seq, WHY_MAX_NODES)?;
        Ok(WhyGraph::of(&why))
    }

    /// "Why?" for any event of the branch (a plan, a memory, a line of dialogue, …), named
    /// by its id: 64 hex digits, or a prefix of them as ids are shown (`ev_4ac4068cd864`).
    pub fn why_event(
        &mut self,
        log: &dyn Log,
        name: &str,
        event: &str,
    ) -> Result<WhyGraph, ViewError> {
        let hex = event.strip_prefix("ev_").unwrap_or(event).to_ascii_lowercase();
        let unknown = || ViewError::NoEvent(event.to_owned());
        if hex.len() < 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(unknown());
        }
        let (_, events) = self.events(log, name)?;
        let at = events.iter().position(|e| e.id.to_hex().starts_with(&hex)).ok_or_else(unknown)?;
        let history = crate::why::CauseIndex::new(&events[..=at]);
        let why = history.why_of(&events[at], WHY_MAX_NODES);
        Ok(WhyGraph::of(&why))
    }

    /// Two branches side by side from where they part: `hamlet diff`'s content, each agent
    /// with when its days first differ.
    pub fn compare(
        &mut self,
        log: &dyn Log,
        a: &str,
        b: &str,
    ) -> Result<crate::diff::BranchDiff, ViewError> {
        self.events(log, a)?;
        self.events(log, b)?;
        let (ia, ib) = (self.branch(a)?.id, self.branch(b)?.id);
        let of = |id| self.cache.get(&id).and_then(|c| c.events.as_deref()).unwrap_or_default();
        Ok(crate::diff::diff(a, of(ia), b, of(ib)))
    }

    /// One of the paper's measurements over a branch, as a chart draws it: `diffusion` (of
    /// `keywords`), `density`, `relationships` (at `at_secs`) or `cost` (per agent and
    /// purpose), measured every `every_secs`; with its table as CSV.
    pub fn research(
        &mut self,
        log: &dyn Log,
        name: &str,
        ask: &ResearchAsk,
    ) -> Result<ResearchAnswer, ViewError> {
        let (_, events) = self.events(log, name)?;
        let every = ask.every_secs.max(60);
        use crate::research::{cost_table, density_table, diffusion_table, relationships_table};
        let (rows, table) = match ask.what.as_str() {
            "diffusion" => {
                let keywords: Vec<String> = ask
                    .keywords
                    .iter()
                    .map(|k| k.trim().to_owned())
                    .filter(|k| !k.is_empty())
                    .collect();
                if keywords.is_empty() {
                    return Err(ViewError::Research(
                        "say what to follow: one keyword or more".into(),
                    ));
                }
                let rows = crate::research::diffusion(events, &keywords, every);
                (serde_json::to_value(&rows), diffusion_table(&rows))
            }
            "density" => {
                let rows = crate::research::network_density(events, every);
                (serde_json::to_value(&rows), density_table(&rows))
            }
            "relationships" => {
                let graph = crate::research::relationships(events, ask.at_secs.unwrap_or(u64::MAX));
                (serde_json::to_value(&graph), relationships_table(&graph))
            }
            "cost" => {
                let rows = crate::research::cost_over_time(events, every, &ask.prices);
                (serde_json::to_value(&rows), cost_table(&rows))
            }
            "goals" => {
                let rows = crate::research::goals(events, every);
                (serde_json::to_value(&rows), crate::research::goals_table(&rows))
            }
            other => {
                return Err(ViewError::Research(format!(
                    "no measurement `{other}`: diffusion, density, relationships, cost or goals"
                )))
            }
        };
        let csv = table.csv();
        let rows = rows.map_err(|e| ViewError::Research(e.to_string()))?;
        Ok(ResearchAnswer { what: ask.what.clone(), rows, csv })
    }

    /// The model calls made in `from..=to` (seqs), by one agent or all.
    pub fn calls(
        &mut self,
        log: &dyn Log,
        name: &str,
        from: u64,
        to: u64,
        agent: Option<u32>,
    ) -> Result<Vec<CallView>, ViewError> {
        let (_, events) = self.events(log, name)?;
        let past = Past::new(events);
        Ok(past.calls(from, to, agent.map(AgentId)))
    }
}

/// A measurement the window asks of a branch ([`Session::research`]).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct ResearchAsk {
    /// `diffusion`, `density`, `relationships` or `cost`.
    pub what: String,
    /// What `diffusion` follows: a memory holding every keyword (any case).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Seconds between rows (at least 60).
    #[serde(default = "hourly")]
    pub every_secs: u64,
    /// The moment of `relationships` (default: the end).
    #[serde(default)]
    pub at_secs: Option<u64>,
    /// Prices by model, for `cost` (the desktop window passes its config file's).
    #[serde(skip)]
    pub prices: BTreeMap<String, crate::cost::Price>,
}

fn hourly() -> u64 {
    3600
}

/// A measurement's rows (as `hamlet research --format json` has them) and its table as CSV.
#[derive(Clone, Debug, Serialize)]
pub struct ResearchAnswer {
    /// What was measured.
    pub what: String,
    /// The rows.
    pub rows: serde_json::Value,
    /// The same as CSV, a header first.
    pub csv: String,
}

/// The most events a "why?" graph walks before it stops (and says so).
pub const WHY_MAX_NODES: usize = 400;

/// An agent as the agent panel shows it.
#[derive(Clone, Debug, Serialize)]
pub struct AgentPanel {
    /// The agent as it was.
    #[serde(flatten)]
    pub agent: AgentView,
    /// The conversations it took part in by then, in the order they started.
    pub conversations: Vec<ConversationView>,
}
