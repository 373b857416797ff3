//! Events about to be committed together, whose causes may point at earlier events of the
//! same batch (an answer at its request, a memory at its rating and its embedding): their
//! ids exist only once the batch is chained, which [`Store::append_linked`] does.
//!
//! The agent loop builds one batch per agent concurrently, then joins them in canonical
//! order (agent by agent) with [`Pending::append`], so the log does not depend on which
//! agent's model answered first.

use hamlet_log::{Body, EventId, NewEvent};

use crate::store::{Storage, Store, StoreError};

/// A position in a [`Pending`] batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PendingId(usize);

/// What led to an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// An event already in the log.
    Logged(EventId),
    /// An earlier event of the same batch.
    Pending(PendingId),
}

/// A batch of events in commit order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pending {
    events: Vec<NewEvent>,
    links: Vec<Vec<usize>>,
}

impl Pending {
    /// An empty batch.
    pub fn new() -> Pending {
        Pending::default()
    }

    /// Adds an event at `sim_time_secs` with its causes; returns its position.
    pub fn push(&mut self, sim_time_secs: u64, body: Body, causes: &[Cause]) -> PendingId {
        let mut event = NewEvent::new(sim_time_secs, body);
        let mut links = Vec::new();
        for cause in causes {
            match *cause {
                Cause::Logged(id) => event.causes.push(id),
                Cause::Pending(PendingId(i)) => {
                    assert!(i < self.events.len(), "a pending cause must come earlier");
                    links.push(i);
                }
            }
        }
        self.events.push(event);
        self.links.push(links);
        PendingId(self.events.len() - 1)
    }

    /// Adds a cause to an event already in the batch (a cause found after the event was
    /// pushed, such as the place chosen for the plan that event is).
    pub fn link(&mut self, id: PendingId, cause: Cause) {
        let PendingId(i) = id;
        match cause {
            Cause::Logged(id) => self.events[i].causes.push(id),
            Cause::Pending(PendingId(j)) => {
                assert!(j < i, "a pending cause must come earlier");
                self.links[i].push(j);
            }
        }
    }

    /// Adds several events, each caused by the one before it and by `first_causes` for the
    /// first; returns the position of the last (or `None` if there were none).
    pub fn push_chain(
        &mut self,
        sim_time_secs: u64,
        bodies: impl IntoIterator<Item = Body>,
        first_causes: &[Cause],
    ) -> Option<PendingId> {
        let mut last: Option<PendingId> = None;
        for body in bodies {
            let causes: Vec<Cause> = match last {
                Some(p) => vec![Cause::Pending(p)],
                None => first_causes.to_vec(),
            };
            last = Some(self.push(sim_time_secs, body, &causes));
        }
        last
    }

    /// Appends another batch after this one; `other`'s positions move by the returned
    /// offset (see [`Pending::shifted`]).
    pub fn append(&mut self, other: Pending) -> usize {
        let offset = self.events.len();
        self.events.extend(other.events);
        self.links
            .extend(other.links.into_iter().map(|l| l.into_iter().map(|i| i + offset).collect()));
        offset
    }

    /// A position of a batch after it was appended at `offset`.
    pub fn shifted(id: PendingId, offset: usize) -> PendingId {
        PendingId(id.0 + offset)
    }

    /// How many events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The events, in order (causes inside the batch not yet resolved).
    pub fn events(&self) -> &[NewEvent] {
        &self.events
    }

    /// Commits the batch to `branch` durably; returns every event's id, in order.
    pub fn commit<S: Storage>(
        &self,
        store: &mut Store<S>,
        branch: hamlet_log::BranchId,
    ) -> Result<Vec<EventId>, StoreError> {
        store.append_linked(branch, &self.events, &self.links)
    }
}
