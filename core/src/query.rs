//! Queries at any moment: the town, an agent as it was then, conversations, events in a
//! window and model calls — each answered from a branch's events up to the moment, folded
//! here. Nothing is asked of a model and nothing is recomputed: scores are the ones the
//! retrievals recorded, answers the ones the model gave.
//!
//! Every answer is a plain serde type, for the viewer and for `--format json`.

use std::collections::{BTreeMap, BTreeSet};

use hamlet_log::event::{kind_name, AgentId, FailureKind, MemoryKind, PlanLevel, PlanMade, Prompt};
use hamlet_log::id::hex;
use hamlet_log::{Body, BranchId, Event, EventId};
use serde::{Deserialize, Serialize};

use crate::describe::{agents_of, sim_time, summary};
use crate::fold::Town;
use crate::mind::memory::Minds;
use crate::town::spatial::SpatialMemory;
use crate::why::CauseIndex;

/// The town at a moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TownView {
    /// The town's name.
    pub town: String,
    /// The branch's name.
    pub branch: String,
    /// The seq of the last event folded.
    pub seq: u64,
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    /// The same, as `day D HH:MM:SS`.
    pub time: String,
    /// Steps taken.
    pub step: u64,
    /// The state hash (`st_…`), to compare with another machine's.
    pub state_hash: String,
    /// Every agent, in id order.
    pub agents: Vec<AgentBrief>,
    /// Objects whose state is not idle, by address.
    pub objects: BTreeMap<String, String>,
    /// Conversations under way, in the order they started.
    pub conversations: Vec<ConversationView>,
    /// What is going on at places (the user's happenings not yet over), in the order they
    /// began.
    #[serde(default)]
    pub happenings: Vec<HappeningView>,
}

/// Something going on at a place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HappeningView {
    /// Where: a sector, or a `sector:arena`.
    pub place: String,
    /// What, in words.
    pub text: String,
    /// When it ends.
    pub until_secs: u64,
}

/// An agent as the map shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentBrief {
    /// Its number.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// The tile it stands on, `[x, y]`.
    pub tile: [u16; 2],
    /// What it is doing.
    pub action: Option<ActionView>,
    /// Who it is talking with (empty when it is not talking).
    pub talking_with: Vec<String>,
    /// Cash, in cents.
    pub cash_cents: i64,
}

/// An action under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionView {
    /// In words.
    pub description: String,
    /// For the map.
    pub emoji: String,
    /// Where (`sector:arena:object`).
    pub address: String,
    /// Started at (simulated seconds).
    pub started_secs: u64,
    /// For how long, in seconds.
    pub duration_secs: u32,
    /// The `ActionStarted` event.
    pub event: EventId,
}

/// An agent as it was at a moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    /// Its number.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// Its seed paragraph as it stood then (edited personas included).
    pub persona: String,
    /// Its traits from the town file (`strategy`, `occupation`, …).
    pub traits: BTreeMap<String, String>,
    /// The summary description it last wrote of itself (on waking), if any.
    pub summary: Option<SummaryView>,
    /// What it is doing.
    pub action: Option<ActionView>,
    /// Its latest day plan, then every decomposition made of it since (hour parts, then
    /// actions), in the order they were made (on waking, until the new day plan is made,
    /// that is yesterday's). For an agent that does not plan ahead, the quarter hour it
    /// decided last.
    pub plans: Vec<PlanView>,
    /// Its memory stream, oldest first.
    pub memories: Vec<MemoryView>,
    /// Its reflections, oldest first, each with the memories it rests on.
    pub reflections: Vec<ReflectionView>,
    /// The other agents it has talked with or remembers, by name.
    pub relationships: Vec<Relationship>,
    /// Cash, in cents.
    pub cash_cents: i64,
    /// What it knows of the town: sector → arena → object → state as last seen.
    pub spatial: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>,
}

/// A summary description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryView {
    /// The day it was written on.
    pub day: u64,
    /// The words.
    pub text: String,
    /// The model's answer that holds it.
    pub event: EventId,
}

/// A plan or the decomposition of one plan item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanView {
    /// The `PlanMade` event.
    pub event: EventId,
    /// `day`, `hour` or `action`.
    pub level: String,
    /// The plan item it breaks down: the plan's event and the item's index.
    pub decomposes: Option<(EventId, u16)>,
    /// Its items in order.
    pub items: Vec<PlanItemView>,
}

/// One item of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanItemView {
    /// Starts at (simulated seconds).
    pub start_secs: u64,
    /// For how long, in seconds.
    pub duration_secs: u32,
    /// In words.
    pub description: String,
    /// Where, when it was decided.
    pub address: String,
}

/// One memory of a memory stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryView {
    /// Its id (the `MemoryAdded` event).
    pub id: EventId,
    /// `seed`, `observation`, `chat`, `reflection` or `plan`.
    pub kind: String,
    /// In words.
    pub description: String,
    /// Poignancy, 1 to 10.
    pub importance: u8,
    /// Entered the stream at (simulated seconds).
    pub created_secs: u64,
    /// Last returned by a retrieval at (or created at).
    pub last_accessed_secs: u64,
    /// The scores of the last retrieval that returned it, if one did.
    pub last_retrieval: Option<ScoresView>,
}

/// What one retrieval recorded for one memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoresView {
    /// The `Retrieved` event.
    pub event: EventId,
    /// The query.
    pub query: String,
    /// When (simulated seconds).
    pub at_secs: u64,
    /// Recency, normalised to 0–1.
    pub recency: f32,
    /// Importance, normalised.
    pub importance: f32,
    /// Relevance, normalised.
    pub relevance: f32,
    /// The weighted sum that ranked it.
    pub score: f32,
}

/// A reflection and its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReflectionView {
    /// The reflection's memory id.
    pub id: EventId,
    /// In words.
    pub description: String,
    /// Made at (simulated seconds).
    pub created_secs: u64,
    /// 1 for a reflection on observations; one more than the deepest reflection it cites.
    pub depth: u32,
    /// The memories it rests on, as they were cited.
    pub evidence: Vec<EvidenceView>,
}

/// A memory cited by a reflection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceView {
    /// Its id.
    pub id: EventId,
    /// Its kind.
    pub kind: String,
    /// In words.
    pub description: String,
}

/// What one agent has of another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Relationship {
    /// The other agent.
    pub name: String,
    /// Conversations they had.
    pub conversations: u32,
    /// When the last one started (simulated seconds).
    pub last_talked_secs: Option<u64>,
    /// The last words the other said to this agent.
    pub last_words: Option<String>,
    /// Memories of this agent that name the other.
    pub memories: u32,
}

/// A conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationView {
    /// Its id (the `ConversationStarted` event).
    pub id: EventId,
    /// That event's seq.
    pub seq: u64,
    /// Where.
    pub address: String,
    /// Who.
    pub agents: Vec<String>,
    /// Started at (simulated seconds).
    pub started_secs: u64,
    /// Its lines so far.
    pub lines: Vec<LineView>,
    /// How it ended, if it had by the moment.
    pub ended: Option<EndView>,
}

/// One line of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineView {
    /// Who said it.
    pub speaker: String,
    /// The words (empty: the speaker said nothing more).
    pub text: String,
    /// When (simulated seconds).
    pub at_secs: u64,
}

/// The end of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndView {
    /// When (simulated seconds).
    pub at_secs: u64,
    /// Why.
    pub reason: String,
}

/// One event, in words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventView {
    /// Its position on the branch.
    pub seq: u64,
    /// Its id.
    pub id: EventId,
    /// Simulated seconds.
    pub sim_time_secs: u64,
    /// Its kind.
    pub kind: String,
    /// The agents it concerns.
    pub agents: Vec<String>,
    /// One line saying what happened.
    pub summary: String,
}

/// One model call: the prompt, every try, and the answer the engine used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallView {
    /// The canonical request's hash (hex): equal requests, equal hashes.
    pub request: String,
    /// The first try's `LlmRequested` event.
    pub event: EventId,
    /// Its seq.
    pub seq: u64,
    /// Simulated seconds.
    pub sim_time_secs: u64,
    /// Whose thought it was.
    pub agent: Option<String>,
    /// What it was for.
    pub purpose: String,
    /// The prompt template and its version.
    pub template: String,
    /// The template's version.
    pub template_version: u32,
    /// The model.
    pub model: String,
    /// The prompt as sent (chat messages as `role: content` paragraphs).
    pub prompt: String,
    /// Every try, in order.
    pub tries: Vec<TryView>,
    /// The answer used, if the call was answered by the moment: the model's words, or for a
    /// fallback the documented fallback value (as JSON).
    pub answer: Option<String>,
    /// True when the answer is the fallback.
    pub fallback: bool,
}

/// One try of a call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TryView {
    /// 1 for the first.
    pub attempt: u32,
    /// `answered`; `bad_answer` (an answer without the shape asked for); or, when no
    /// answer came, the failure's kind (`timeout`, `rate_limited`, `server_error`,
    /// `connection`, `refused`, `form_refused`, `other`).
    pub outcome: String,
    /// The model's words (empty when none came).
    pub text: String,
    /// What was wrong, when something was: why the answer was refused, or the failure.
    pub problem: String,
    /// Tokens of prompt and of completion.
    pub tokens: [u32; 2],
    /// Milliseconds.
    pub latency_ms: u32,
    /// How the answer's structure was asked for (`json_schema`, `grammar`, `prompt`, …).
    pub structured: String,
}

/// A prompt as one text: a completion prompt as it is, chat messages as `role: content`
/// paragraphs.
pub fn prompt_text(prompt: &Prompt) -> String {
    match prompt {
        Prompt::Text(t) => t.clone(),
        Prompt::Chat(messages) => messages
            .iter()
            .map(|m| format!("{}: {}", m.role, m.content))
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// A failure kind's name, as [`TryView::outcome`] gives it.
pub fn failure_kind(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Timeout => "timeout",
        FailureKind::RateLimited => "rate_limited",
        FailureKind::ServerError => "server_error",
        FailureKind::Connection => "connection",
        FailureKind::BadAnswer => "bad_answer",
        FailureKind::Refused => "refused",
        FailureKind::Other => "other",
        FailureKind::FormRefused => "form_refused",
    }
}

/// Whether `text` names `name` as a whole (not inside a longer word or name).
pub fn names(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// A memory kind's name.
pub fn memory_kind(kind: MemoryKind) -> String {
    format!("{kind:?}").to_lowercase()
}

fn plan_level(level: PlanLevel) -> String {
    format!("{level:?}").to_lowercase()
}

fn plan_view(event: EventId, plan: &PlanMade) -> PlanView {
    PlanView {
        event,
        level: plan_level(plan.level),
        decomposes: plan.decomposes.map(|r| (r.plan, r.item)),
        items: plan
            .items
            .iter()
            .map(|i| PlanItemView {
                start_secs: i.start_secs,
                duration_secs: i.duration_secs,
                description: i.description.clone(),
                address: i.address.clone(),
            })
            .collect(),
    }
}

/// An event without the bulk that the views of the town and of an agent ([`Past::town`],
/// [`Past::agent`]) and the research measures never read: the prompt of a model call, the
/// texts sent to be embedded, and embedding vectors (a big town's day is gigabytes of them
/// once decoded). Its id, place and every other field are kept, so those views are the same
/// (tested over the shipped day); [`Past::calls`] shows prompts, so it needs whole events.
pub fn without_bulk(mut event: Event) -> Event {
    match &mut event.body {
        Body::LlmRequested(r) => r.prompt = hamlet_log::event::Prompt::Chat(Vec::new()),
        Body::EmbeddingRequested(r) => r.texts = Vec::new(),
        Body::EmbeddingReturned(r) => r.vectors = Vec::new(),
        Body::MemoryAdded(m) => m.embedding = Vec::new(),
        _ => {}
    }
    event
}

/// A branch's events up to a moment, folded once, ready to answer queries about it.
pub struct Past<'a> {
    events: &'a [Event],
    town: Town,
    history: CauseIndex<'a>,
}

impl<'a> Past<'a> {
    /// The moment after `events` (a branch's events with its ancestry, in order; cut them
    /// where the moment is, e.g. with [`Past::cut`]).
    pub fn new(events: &'a [Event]) -> Past<'a> {
        let mut town = Town::default();
        for e in events {
            town.apply(e);
        }
        Past { events, town, history: CauseIndex::new(events) }
    }

    /// The prefix of `events` up to and including `seq`.
    pub fn cut(events: &[Event], seq: u64) -> &[Event] {
        &events[..events.partition_point(|e| e.seq() <= seq)]
    }

    /// The town as folded.
    pub fn state(&self) -> &Town {
        &self.town
    }

    /// An agent's name (or `agent N`).
    pub fn name(&self, agent: AgentId) -> String {
        self.history.name(agent)
    }

    /// The agent named `who` (any case) or numbered `who`.
    pub fn find_agent(&self, who: &str) -> Option<AgentId> {
        self.history.find_agent(who)
    }

    /// The agents' names, by id.
    pub fn agents(&self) -> &BTreeMap<AgentId, String> {
        self.history.agents()
    }

    /// The events indexed for "why?" (and for finding agents by name).
    pub fn history(&self) -> &CauseIndex<'a> {
        &self.history
    }

    fn action(&self, agent: AgentId) -> Option<ActionView> {
        let a = self.town.agents.get(&agent)?.action.as_ref()?;
        Some(ActionView {
            description: a.description.clone(),
            emoji: a.emoji.clone(),
            address: a.address.clone(),
            started_secs: a.started_secs,
            duration_secs: a.duration_secs,
            event: a.event,
        })
    }

    /// The town: where everyone is and what they do, object states, who talks to whom.
    pub fn town(&self) -> TownView {
        let t = &self.town;
        let agents = t
            .agents
            .iter()
            .map(|(id, a)| {
                let talking_with = a
                    .conversation
                    .and_then(|c| t.conversations.get(&c))
                    .map(|c| c.agents.iter().filter(|o| *o != id).map(|o| self.name(*o)).collect())
                    .unwrap_or_default();
                AgentBrief {
                    id: id.0,
                    name: a.name.clone(),
                    tile: [a.tile.x, a.tile.y],
                    action: self.action(*id),
                    talking_with,
                    cash_cents: a.cash_cents,
                }
            })
            .collect();
        let conversations = self
            .conversations()
            .into_iter()
            .filter(|c| t.conversations.contains_key(&c.id))
            .collect();
        TownView {
            town: t.town_name.clone(),
            branch: t.branch_name.clone(),
            seq: t.head.map_or(0, |(seq, _)| seq),
            sim_time_secs: t.sim_time_secs,
            time: sim_time(t.sim_time_secs),
            step: t.step,
            state_hash: t.state_hash().to_string(),
            agents,
            objects: t.objects.clone(),
            conversations,
            happenings: t
                .happenings
                .iter()
                .map(|h| HappeningView {
                    place: h.place.clone(),
                    text: h.text.clone(),
                    until_secs: h.until_secs,
                })
                .collect(),
        }
    }

    /// Every conversation started by the moment, in the order they started.
    pub fn conversations(&self) -> Vec<ConversationView> {
        let mut out: Vec<ConversationView> = Vec::new();
        let mut at: BTreeMap<EventId, usize> = BTreeMap::new();
        for e in self.events {
            match &e.body {
                Body::ConversationStarted(c) => {
                    at.insert(e.id, out.len());
                    out.push(ConversationView {
                        id: e.id,
                        seq: e.seq(),
                        address: c.address.clone(),
                        agents: c.agents.iter().map(|a| self.name(*a)).collect(),
                        started_secs: e.sim_time_secs(),
                        lines: Vec::new(),
                        ended: None,
                    });
                }
                Body::DialogueTurn(t) => {
                    if let Some(c) = at.get(&t.conversation).and_then(|&i| out.get_mut(i)) {
                        c.lines.push(LineView {
                            speaker: self.name(t.speaker),
                            text: t.text.clone(),
                            at_secs: e.sim_time_secs(),
                        });
                    }
                }
                Body::ConversationEnded(end) => {
                    if let Some(c) = at.get(&end.conversation).and_then(|&i| out.get_mut(i)) {
                        c.ended = Some(EndView {
                            at_secs: e.sim_time_secs(),
                            reason: end.reason.clone(),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The events with seq in `from..=to`, concerning `agent` if one is given.
    pub fn events(&self, from: u64, to: u64, agent: Option<AgentId>) -> Vec<EventView> {
        let name = |a: AgentId| self.name(a);
        self.events
            .iter()
            .filter(|e| (from..=to).contains(&e.seq()))
            .filter(|e| agent.is_none_or(|a| agents_of(&e.body).contains(&a)))
            .map(|e| EventView {
                seq: e.seq(),
                id: e.id,
                sim_time_secs: e.sim_time_secs(),
                kind: kind_name(e.body.kind()).to_owned(),
                agents: agents_of(&e.body).into_iter().map(name).collect(),
                summary: summary(&e.body, &name),
            })
            .collect()
    }

    /// The model calls first sent with seq in `from..=to` (by `agent`, if one is given),
    /// with every try and the answer used. A call is its first request (attempt 1) and
    /// every retry of it; one that failed for good stays unanswered.
    pub fn calls(&self, from: u64, to: u64, agent: Option<AgentId>) -> Vec<CallView> {
        let mut out: Vec<CallView> = Vec::new();
        // The call each request hash is on (its place in `out`, when it is wanted), the
        // attempt under way and the structured form it was asked in.
        let mut open: BTreeMap<[u8; 32], (Option<usize>, u32, &'static str)> = BTreeMap::new();
        for e in self.events {
            match &e.body {
                Body::LlmRequested(r) => {
                    if r.attempt > 1 {
                        if let Some(on) = open.get_mut(&r.request_hash) {
                            on.1 = r.attempt;
                            on.2 = r.structured.name();
                        }
                        continue;
                    }
                    let wanted =
                        (from..=to).contains(&e.seq()) && agent.is_none_or(|a| r.agent == Some(a));
                    open.insert(
                        r.request_hash,
                        (wanted.then_some(out.len()), r.attempt, r.structured.name()),
                    );
                    if !wanted {
                        continue;
                    }
                    out.push(CallView {
                        request: hex(&r.request_hash),
                        event: e.id,
                        seq: e.seq(),
                        sim_time_secs: e.sim_time_secs(),
                        agent: r.agent.map(|a| self.name(a)),
                        purpose: r.purpose.clone(),
                        template: r.template.clone(),
                        template_version: r.template_version,
                        model: r.model.clone(),
                        prompt: prompt_text(&r.prompt),
                        tries: Vec::new(),
                        answer: None,
                        fallback: false,
                    });
                }
                Body::LlmResponded(r) => {
                    let Some(&(place, attempt, structured)) = open.get(&r.request_hash) else {
                        continue;
                    };
                    if r.fallback || r.parsed.is_some() {
                        open.remove(&r.request_hash);
                    }
                    let Some(call) = place.and_then(|i| out.get_mut(i)) else { continue };
                    if r.fallback {
                        // Not a try: what the engine used when no answer validated.
                        call.answer = r.parsed.clone();
                        call.fallback = true;
                        continue;
                    }
                    let answered = r.parsed.is_some();
                    call.tries.push(TryView {
                        attempt,
                        outcome: if answered { "answered" } else { "bad_answer" }.into(),
                        text: r.text.clone(),
                        problem: String::new(),
                        tokens: [r.tokens_prompt, r.tokens_completion],
                        latency_ms: r.latency_ms,
                        structured: structured.into(),
                    });
                    if answered {
                        call.answer = Some(r.text.clone());
                    }
                }
                Body::LlmFailed(f) => {
                    let Some(&(place, _, structured)) = open.get(&f.request_hash) else {
                        continue;
                    };
                    let Some(call) = place.and_then(|i| out.get_mut(i)) else { continue };
                    // A bad answer is recorded twice: the answer, then why it was refused.
                    if f.kind == FailureKind::BadAnswer {
                        let last = call.tries.last_mut().filter(|t| t.attempt == f.attempt);
                        if let Some(last) = last {
                            last.problem = f.message.clone();
                            continue;
                        }
                    }
                    call.tries.push(TryView {
                        attempt: f.attempt,
                        outcome: failure_kind(f.kind).into(),
                        text: String::new(),
                        problem: f.message.clone(),
                        tokens: [0, 0],
                        latency_ms: f.latency_ms,
                        structured: structured.into(),
                    });
                }
                _ => {}
            }
        }
        out
    }

    /// An agent as it was at the moment, or `None` if it had not joined.
    pub fn agent(&self, agent: AgentId) -> Option<AgentView> {
        let folded = self.town.agents.get(&agent)?;
        let name = folded.name.clone();
        let mut minds = Minds::default();
        let mut spatial = SpatialMemory::default();
        let mut traits = BTreeMap::new();
        let mut summary_asked: BTreeSet<[u8; 32]> = BTreeSet::new();
        let mut summary: Option<SummaryView> = None;
        let mut plans: Vec<PlanView> = Vec::new();
        let mut last_scores: BTreeMap<EventId, ScoresView> = BTreeMap::new();
        let mut talks: BTreeMap<AgentId, (u32, u64)> = BTreeMap::new();
        let mut last_words: BTreeMap<AgentId, String> = BTreeMap::new();
        let mut mine: BTreeSet<EventId> = BTreeSet::new();
        for e in self.events {
            minds.apply(e);
            spatial.apply(agent, e);
            match &e.body {
                Body::AgentJoined(j) if j.agent == agent => {
                    traits = j.traits.iter().cloned().collect();
                }
                Body::LlmRequested(r) if r.template == "summary" && r.agent == Some(agent) => {
                    summary_asked.insert(r.request_hash);
                }
                Body::LlmResponded(r) if r.fallback || r.parsed.is_some() => {
                    // A summary's answer, or its fallback (which keeps the last summary).
                    let asked = summary_asked.remove(&r.request_hash);
                    if asked && !r.fallback {
                        summary = Some(SummaryView {
                            day: e.sim_time_secs() / 86_400,
                            text: r.text.trim().to_owned(),
                            event: e.id,
                        });
                    }
                }
                Body::PlanMade(p) if p.agent == agent => {
                    if p.level == PlanLevel::Day {
                        plans.clear();
                    }
                    plans.push(plan_view(e.id, p));
                }
                Body::Retrieved(r) if r.agent == agent => {
                    for hit in &r.hits {
                        last_scores.insert(
                            hit.memory,
                            ScoresView {
                                event: e.id,
                                query: r.query.clone(),
                                at_secs: e.sim_time_secs(),
                                recency: hit.recency,
                                importance: hit.importance,
                                relevance: hit.relevance,
                                score: hit.score,
                            },
                        );
                    }
                }
                Body::ConversationStarted(c) if c.agents.contains(&agent) => {
                    mine.insert(e.id);
                    for other in c.agents.iter().filter(|o| **o != agent) {
                        let entry = talks.entry(*other).or_insert((0, 0));
                        entry.0 += 1;
                        entry.1 = e.sim_time_secs();
                    }
                }
                Body::DialogueTurn(t)
                    if t.speaker != agent
                        && !t.text.trim().is_empty()
                        && mine.contains(&t.conversation) =>
                {
                    last_words.insert(t.speaker, t.text.clone());
                }
                _ => {}
            }
        }
        // Plans of days before today's day plan are gone (`plans.clear()`); a loose plan
        // (no day plan) keeps only the latest.
        if plans.first().is_some_and(|p| p.level != "day") {
            let last = plans.pop();
            plans = last.into_iter().collect();
        }
        let stream = minds.stream(agent);
        let memories: Vec<MemoryView> = stream
            .memories()
            .iter()
            .map(|m| MemoryView {
                id: m.id,
                kind: memory_kind(m.kind),
                description: m.description.clone(),
                importance: m.importance,
                created_secs: m.created_secs,
                last_accessed_secs: m.last_access_secs,
                last_retrieval: last_scores.get(&m.id).cloned(),
            })
            .collect();
        let mut depth: BTreeMap<EventId, u32> = BTreeMap::new();
        let mut reflections = Vec::new();
        for m in stream.memories().iter().filter(|m| m.kind == MemoryKind::Reflection) {
            let d = 1 + m.evidence.iter().filter_map(|e| depth.get(e)).max().copied().unwrap_or(0);
            depth.insert(m.id, d);
            reflections.push(ReflectionView {
                id: m.id,
                description: m.description.clone(),
                created_secs: m.created_secs,
                depth: d,
                evidence: m
                    .evidence
                    .iter()
                    .map(|id| match stream.get(*id) {
                        Some(cited) => EvidenceView {
                            id: *id,
                            kind: memory_kind(cited.kind),
                            description: cited.description.clone(),
                        },
                        None => EvidenceView {
                            id: *id,
                            kind: "unknown".into(),
                            description: String::new(),
                        },
                    })
                    .collect(),
            });
        }
        let relationships = self
            .agents()
            .iter()
            .filter(|(other, _)| **other != agent)
            .filter_map(|(other, other_name)| {
                let (conversations, last) =
                    talks.get(other).map_or((0, None), |(n, at)| (*n, Some(*at)));
                let named = stream.memories().iter().filter(|m| names(&m.description, other_name));
                let memories = named.count() as u32;
                (conversations > 0 || memories > 0).then(|| Relationship {
                    name: other_name.clone(),
                    conversations,
                    last_talked_secs: last,
                    last_words: last_words.get(other).cloned(),
                    memories,
                })
            })
            .collect();
        Some(AgentView {
            id: agent.0,
            name,
            persona: folded.persona.clone(),
            traits,
            summary,
            action: self.action(agent),
            plans,
            memories,
            reflections,
            relationships,
            cash_cents: folded.cash_cents,
            spatial: spatial.known,
        })
    }
}

impl ConversationView {
    /// The conversation as a Markdown transcript: a heading, who, where, when, each line
    /// in a quote under its speaker, and how it ended.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "## {}\n\n*{}, {}*\n\n",
            self.agents.join(" and "),
            sim_time(self.started_secs),
            crate::town::place_words(&self.address),
        );
        for line in &self.lines {
            let words = line.text.trim();
            if words.is_empty() {
                out.push_str(&format!("**{}** says nothing more.\n\n", line.speaker));
            } else {
                out.push_str(&format!("**{}:** {}\n\n", line.speaker, words.replace('\n', " ")));
            }
        }
        match &self.ended {
            Some(end) => {
                out.push_str(&format!("*Ended at {}: {}.*\n\n", sim_time(end.at_secs), end.reason))
            }
            None => out.push_str("*Still under way.*\n\n"),
        }
        out
    }
}

/// One event as a line of `hamlet log --format jsonl`: the envelope, the agents it
/// concerns, a line in words, and the body's own fields (ids and hashes as hex).
#[derive(Debug, Serialize)]
pub struct EventRecord<'a> {
    /// Its position on the branch.
    pub seq: u64,
    /// Its id.
    pub id: EventId,
    /// The id of the event before it (all zeros for the first).
    pub parent: EventId,
    /// The branch it was written on.
    pub branch: BranchId,
    /// Simulated seconds since midnight of day 0.
    pub sim_time_secs: u64,
    /// The same, as `day D HH:MM:SS`.
    pub time: String,
    /// Its kind (`Moved`, `LlmRequested`, …).
    pub kind: &'static str,
    /// The events it names as its causes.
    pub causes: &'a [EventId],
    /// The names of the agents it concerns.
    pub agents: Vec<String>,
    /// One line saying what happened.
    pub summary: String,
    /// The body's fields, as `log-format/FORMAT.md` lists them for its kind.
    pub body: &'a Body,
}

impl<'a> EventRecord<'a> {
    /// The record of `event`; `name` gives an agent's name.
    pub fn new(event: &'a Event, name: &dyn Fn(AgentId) -> String) -> EventRecord<'a> {
        EventRecord {
            seq: event.seq(),
            id: event.id,
            parent: event.parent,
            branch: event.branch,
            sim_time_secs: event.sim_time_secs(),
            time: sim_time(event.sim_time_secs()),
            kind: kind_name(event.body.kind()),
            causes: &event.header.causes,
            agents: agents_of(&event.body).into_iter().map(name).collect(),
            summary: summary(&event.body, name),
            body: &event.body,
        }
    }
}

#[cfg(test)]
mod tests {
    use hamlet_log::event::{Header, LlmFailed, LlmResponded};
    use hamlet_log::samples::one_body_per_kind;

    use super::*;

    fn event(seq: u64, body: Body) -> Event {
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&seq.to_le_bytes());
        Event {
            id: EventId(id),
            parent: EventId::NONE,
            branch: BranchId::default(),
            header: Header { seq, sim_time_secs: seq, causes: Vec::new() },
            body,
        }
    }

    fn requested(hash: u8, attempt: u32) -> Body {
        let mut body = one_body_per_kind()
            .into_iter()
            .find(|b| matches!(b, Body::LlmRequested(_)))
            .expect("a sample request");
        if let Body::LlmRequested(r) = &mut body {
            (r.request_hash, r.attempt, r.agent) = ([hash; 32], attempt, None);
        }
        body
    }

    fn responded(hash: u8, text: &str, valid: bool) -> Body {
        Body::LlmResponded(LlmResponded {
            request_hash: [hash; 32],
            text: text.into(),
            parsed: valid.then(|| format!("\"{text}\"")),
            fallback: false,
            tokens_prompt: 10,
            tokens_completion: 2,
            latency_ms: 5,
            finish_reason: "stop".into(),
            response_model: "m".into(),
            response_id: String::new(),
            probabilities: Vec::new(),
            tokens_cached: 0,
        })
    }

    fn failed(hash: u8, kind: FailureKind, attempt: u32) -> Body {
        Body::LlmFailed(LlmFailed {
            request_hash: [hash; 32],
            kind,
            message: format!("{kind:?} happened"),
            attempt,
            latency_ms: 1,
        })
    }

    #[test]
    fn a_call_is_its_tries_a_bad_answer_once_and_a_refused_call_stays_unanswered() {
        let log: Vec<Event> = [
            requested(1, 1),
            responded(1, "nonsense", false),
            failed(1, FailureKind::BadAnswer, 1),
            requested(1, 2),
            failed(1, FailureKind::Timeout, 2),
            requested(1, 3),
            responded(1, "fine", true),
            requested(2, 1),
            failed(2, FailureKind::Refused, 1),
            // The same question, asked again after a resume: a new call.
            requested(2, 1),
            responded(2, "now", true),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, b)| event(i as u64, b))
        .collect();
        let calls = Past::new(&log).calls(0, 100, None);
        assert_eq!(calls.len(), 3);
        let outcomes: Vec<(u32, &str)> =
            calls[0].tries.iter().map(|t| (t.attempt, t.outcome.as_str())).collect();
        assert_eq!(outcomes, vec![(1, "bad_answer"), (2, "timeout"), (3, "answered")]);
        assert_eq!(calls[0].tries[0].problem, "BadAnswer happened");
        assert_eq!(calls[0].answer.as_deref(), Some("fine"));
        assert_eq!(calls[1].tries.len(), 1);
        assert_eq!(calls[1].tries[0].outcome, "refused");
        assert_eq!(calls[1].answer, None, "refused for good");
        assert_eq!(calls[2].answer.as_deref(), Some("now"));
        // A window starting inside a call leaves that call out, retries and all.
        assert_eq!(Past::new(&log).calls(3, 100, None).len(), 2);
    }

    #[test]
    fn a_name_counts_only_as_a_whole() {
        assert!(names("Al met Bo.", "Al"));
        assert!(!names("Alice met Bo.", "Al"));
        assert!(names("talked with Tamsin Hale at the café", "Tamsin Hale"));
        assert!(!names("anything", ""));
    }
}
