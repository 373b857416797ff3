//! The timeline under the map: one pass over a branch's events (headers only, bodies of the
//! rare kinds that make markers) gives the density of events over simulated time, the
//! markers worth clicking (conversations, reflections, day plans, interventions), the
//! clock's steps for stepping, where each conversation started (for speech bubbles) and how
//! far agents walked (for a town recorded without a map).

use std::collections::BTreeMap;

use hamlet_log::event::{AgentId, PlanLevel};
use hamlet_log::{Body, BranchId, EventId};
use serde::Serialize;

use super::{decode_if, kinds};
use crate::describe::printable;
use crate::log::{Log, LogError};

/// Seconds of simulated time per density cell kept by a scan (rebucketed per request).
const CELL_SECS: u64 = 60;
/// The most markers a timeline carries; past it, the most telling kinds are kept.
pub const MAX_MARKERS: usize = 2000;
/// When night starts and ends, in seconds after midnight.
const NIGHT_FROM: u64 = 22 * 3600;
const NIGHT_TO: u64 = 6 * 3600;
const DAY: u64 = 86_400;

/// A branch's timeline, ready to draw.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    /// The branch.
    pub branch: String,
    /// The first seq of its history.
    pub first_seq: u64,
    /// Its last seq.
    pub head_seq: u64,
    /// Simulated time of its first event.
    pub start_secs: u64,
    /// Simulated time of its last event.
    pub end_secs: u64,
    /// Simulated seconds per clock step.
    pub seconds_per_step: u32,
    /// Events per bucket, buckets evenly over `start_secs..=end_secs`.
    pub density: Vec<u32>,
    /// Moments worth a marker, in seq order.
    pub markers: Vec<Marker>,
    /// Night hours (22:00–06:00) within the span, as `[from, to]` seconds.
    pub nights: Vec<[u64; 2]>,
}

/// A moment on the timeline worth clicking.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Marker {
    /// The event.
    pub seq: u64,
    /// Its simulated time.
    pub secs: u64,
    /// `intervention`, `reflection`, `conversation` or `plan`.
    pub kind: &'static str,
    /// In words (untrusted: names come from the recording).
    pub label: String,
}

/// What one pass over a branch found.
pub struct Scan {
    /// The first seq of the branch's history.
    pub first_seq: u64,
    start_secs: u64,
    end_secs: u64,
    seconds_per_step: u32,
    /// Events per [`CELL_SECS`] of simulated time from `start_secs`.
    cells: Vec<u32>,
    markers: Vec<Marker>,
    /// The seq of every `ClockStepped`, in order.
    steps: Vec<u64>,
    /// Where each conversation started.
    pub conversations: BTreeMap<EventId, u64>,
    /// One past the largest tile any agent stood on, `[x, y]`.
    pub extent: [u16; 2],
    /// The town's name, as its `TownLoaded` gives it.
    pub town_name: String,
}

impl Scan {
    /// One pass over `branch` up to seq `head`.
    pub fn of(source: &dyn Log, branch: BranchId, head: u64) -> Result<Scan, LogError> {
        let mut scan = Scan {
            first_seq: u64::MAX,
            start_secs: 0,
            end_secs: 0,
            seconds_per_step: 10,
            cells: Vec::new(),
            markers: Vec::new(),
            steps: Vec::new(),
            conversations: BTreeMap::new(),
            extent: [1, 1],
            town_name: String::new(),
        };
        let mut names: BTreeMap<AgentId, String> = BTreeMap::new();
        let mut clock_start: Option<u64> = None;
        let wanted = [
            kinds::RUN_CONFIGURED,
            kinds::TOWN_LOADED,
            kinds::AGENT_JOINED,
            kinds::MOVED,
            kinds::PLAN_MADE,
            kinds::CONVERSATION_STARTED,
            kinds::REFLECTION_STARTED,
            kinds::INTERVENED,
            kinds::MAYOR_ACTED,
        ];
        source.for_each_stored(branch, 0, head, &mut |b, stored| {
            let (seq, secs) = (stored.header.seq, stored.header.sim_time_secs);
            if scan.first_seq == u64::MAX {
                scan.first_seq = seq;
                scan.start_secs = secs;
            }
            scan.end_secs = secs;
            let cell = usize::try_from(secs.saturating_sub(scan.start_secs) / CELL_SECS)
                .unwrap_or(usize::MAX);
            if cell < (1 << 24) {
                if scan.cells.len() <= cell {
                    scan.cells.resize(cell + 1, 0);
                }
                scan.cells[cell] = scan.cells[cell].saturating_add(1);
            }
            if stored.kind == kinds::CLOCK_STEPPED {
                if scan.steps.is_empty() {
                    // The day starts with the clock, not with the run's set-up at midnight.
                    clock_start = Some(secs);
                }
                scan.steps.push(seq);
                return true;
            }
            let Some(event) = decode_if(b, stored, &wanted) else { return true };
            let name = |a: &AgentId, names: &BTreeMap<AgentId, String>| {
                names.get(a).cloned().unwrap_or_else(|| format!("agent {}", a.0))
            };
            let mut mark = |kind: &'static str, label: String| {
                scan.markers.push(Marker { seq, secs, kind, label: printable(&label) });
            };
            match &event.body {
                Body::RunConfigured(r) => scan.seconds_per_step = r.seconds_per_step.max(1),
                Body::TownLoaded(t) => scan.town_name = printable(&t.name),
                Body::AgentJoined(j) => {
                    names.insert(j.agent, j.name.clone());
                    scan.extent = [
                        scan.extent[0].max(j.tile.x.saturating_add(1)),
                        scan.extent[1].max(j.tile.y.saturating_add(1)),
                    ];
                }
                Body::Moved(m) => {
                    scan.extent = [
                        scan.extent[0].max(m.to.x.saturating_add(1)),
                        scan.extent[1].max(m.to.y.saturating_add(1)),
                    ];
                }
                Body::PlanMade(p) if p.level == PlanLevel::Day => {
                    mark("plan", format!("{} plans the day", name(&p.agent, &names)));
                }
                Body::ConversationStarted(c) => {
                    scan.conversations.insert(event.id, seq);
                    let who: Vec<String> = c.agents.iter().map(|a| name(a, &names)).collect();
                    mark("conversation", format!("{} talk", who.join(" and ")));
                }
                Body::ReflectionStarted(r) => {
                    mark("reflection", format!("{} reflects", name(&r.agent, &names)));
                }
                Body::Intervened(i) => {
                    let name = |a: AgentId| name(&a, &names);
                    mark(
                        "intervention",
                        crate::describe::summary(&Body::Intervened(i.clone()), &name),
                    );
                }
                Body::MayorActed(m) => {
                    let name = |a: AgentId| name(&a, &names);
                    mark("mayor", crate::describe::summary(&Body::MayorActed(m.clone()), &name));
                }
                _ => {}
            }
            true
        })?;
        if scan.first_seq == u64::MAX {
            return Err(LogError::BeforeStart);
        }
        // Events before the clock first stepped (the run's set-up) count in the first cell.
        // The clock steps *to* its time: the first step began one step before.
        let clock_start = clock_start.map(|s| s.saturating_sub(u64::from(scan.seconds_per_step)));
        if let Some(start) = clock_start.filter(|&s| s > scan.start_secs) {
            let skip = usize::try_from((start - scan.start_secs) / CELL_SECS)
                .unwrap_or(0)
                .min(scan.cells.len());
            let before: u32 = scan.cells.drain(..skip).fold(0u32, |a, n| a.saturating_add(n));
            match scan.cells.first_mut() {
                Some(first) => *first = first.saturating_add(before),
                None => scan.cells.push(before),
            }
            scan.start_secs = start - (start - scan.start_secs) % CELL_SECS;
        }
        if scan.markers.len() > MAX_MARKERS {
            let rank = |m: &Marker| match m.kind {
                "intervention" | "mayor" => 0,
                "reflection" => 1,
                "conversation" => 2,
                _ => 3,
            };
            scan.markers.sort_by_key(|m| (rank(m), m.seq));
            scan.markers.truncate(MAX_MARKERS);
            scan.markers.sort_by_key(|m| m.seq);
        }
        Ok(scan)
    }

    /// The timeline with its density in `buckets` columns (at least one).
    pub fn timeline(&self, branch: &str, head: u64, buckets: usize) -> Timeline {
        let buckets = buckets.clamp(1, 10_000);
        let span = (self.end_secs - self.start_secs).max(1);
        let mut density = vec![0u32; buckets];
        for (i, &n) in self.cells.iter().enumerate() {
            let secs = i as u64 * CELL_SECS;
            let b =
                usize::try_from(secs * buckets as u64 / (span + 1)).unwrap_or(0).min(buckets - 1);
            density[b] = density[b].saturating_add(n);
        }
        Timeline {
            branch: branch.to_owned(),
            first_seq: self.first_seq,
            head_seq: head,
            start_secs: self.start_secs,
            end_secs: self.end_secs,
            seconds_per_step: self.seconds_per_step,
            density,
            markers: self.markers.clone(),
            nights: nights(self.start_secs, self.end_secs),
        }
    }

    /// The end of the next clock step after `seq` (`dir` > 0) or of the one before it: the
    /// moment just before a `ClockStepped`, or the branch's ends.
    pub fn step_from(&self, seq: u64, dir: i32, head: u64) -> u64 {
        if dir > 0 {
            // The first step that begins after seq + 1 ends the step seq is in.
            let i = self.steps.partition_point(|&c| c <= seq + 1);
            self.steps.get(i).map_or(head, |&c| c - 1)
        } else {
            let i = self.steps.partition_point(|&c| c <= seq);
            match i.checked_sub(1).and_then(|k| self.steps.get(k)) {
                Some(&c) if c > self.first_seq => c - 1,
                _ => self.first_seq,
            }
        }
    }
}

/// The night hours within `start..=end`.
pub fn nights(start: u64, end: u64) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    let mut day = start / DAY;
    // The night that began the evening before the first day reaches into its morning.
    let mut from = (day * DAY).saturating_sub(DAY - NIGHT_FROM);
    loop {
        let to = day * DAY + NIGHT_TO;
        let (a, b) = (from.max(start), to.min(end));
        if a < b {
            out.push([a, b]);
        }
        from = day * DAY + NIGHT_FROM;
        if from > end {
            break;
        }
        day += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nights_cover_22_to_6_within_the_span() {
        let h = 3600;
        assert_eq!(nights(7 * h, 9 * h), Vec::<[u64; 2]>::new());
        assert_eq!(nights(3 * h, 9 * h), vec![[3 * h, 6 * h]]);
        assert_eq!(nights(7 * h, DAY + 7 * h), vec![[22 * h, DAY + 6 * h]]);
        assert_eq!(nights(23 * h, 23 * h + 60), vec![[23 * h, 23 * h + 60]]);
    }
}
