//! Synthetic, town-shaped event streams: what the benchmarks and `hamlet synth` use. A
//! seed draws a town of agents that step, walk, perceive, remember (with 384-float
//! embeddings), retrieve, call a model, act, talk, pay and plan, in roughly the
//! proportions a live town produces. Deterministic for a seed.

use std::io;

use hamlet_log::event::*;
use hamlet_log::format::ChunkBuilder;
use hamlet_log::{BranchId, EventId, RecordingWriter};

use crate::rng::SimRng;
use crate::town::map::Grid;
use crate::town::Definition;

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct SynthSpec {
    /// Events to write, at least.
    pub n_events: u64,
    /// Agents in the town.
    pub n_agents: u32,
    /// The seed.
    pub seed: u64,
}

/// Dimensions of the synthetic embeddings (all-MiniLM-L6-v2's).
pub const EMBEDDING_DIMS: usize = 384;

/// The backend and model of every made-up call: no model answered them, so `cost` leaves
/// them out and nothing mistakes them for a real model's.
pub const SYNTHETIC: &str = "synthetic";

const PLACES: &[&str] = &[
    "Lin family house:kitchen:stove",
    "Hobbs café:counter:coffee machine",
    "Oak Hill college:library:desk",
    "Willow market:pharmacy:counter",
    "Johnson park:garden:bench",
    "The Rose and Crown:bar:tap",
];
const DOINGS: &[&str] = &[
    "brewing coffee",
    "reading a book about local history",
    "sweeping the floor",
    "talking about the mayoral election",
    "preparing decorations for the party",
    "buying cough medicine",
    "writing a poem",
];

/// Generates events one step at a time.
#[derive(Debug)]
pub struct Synth {
    spec: SynthSpec,
    rng: SimRng,
    step: u64,
    tiles: Vec<Tile>,
    memories: Vec<Vec<EventId>>,
    conversation: Option<(EventId, AgentId, AgentId, u32)>,
    pending: Vec<NewEvent>,
    /// The town's grid, when agents walk a real map: they stand and step on walkable
    /// tiles only.
    grid: Option<Grid>,
}

impl Synth {
    /// A generator for `spec`; its first events configure the run and bring the agents in.
    pub fn new(spec: SynthSpec) -> Synth {
        let mut rng = SimRng::stream(spec.seed, &["synth"]);
        let mut pending = vec![
            NewEvent::new(
                0,
                Body::RunConfigured(RunConfigured {
                    engine_version: env!("CARGO_PKG_VERSION").into(),
                    seed: spec.seed,
                    seconds_per_step: 10,
                    settings: vec![("synthetic".into(), "true".into())],
                }),
            ),
            NewEvent::new(
                0,
                Body::TownLoaded(TownLoaded {
                    name: "Synthetic Willowmere".into(),
                    format: "none".into(),
                    source: String::new(),
                }),
            ),
        ];
        let mut tiles = Vec::new();
        for i in 0..spec.n_agents {
            let tile =
                Tile { x: rng.int_inclusive(0, 99) as u16, y: rng.int_inclusive(0, 99) as u16 };
            tiles.push(tile);
            pending.push(NewEvent::new(
                0,
                Body::AgentJoined(AgentJoined {
                    agent: AgentId(i),
                    name: format!("Agent {i}"),
                    persona: format!(
                        "Agent {i} lives in Willowmere; they like {}",
                        DOINGS[i as usize % DOINGS.len()]
                    ),
                    traits: vec![
                        ("memory".into(), "full".into()),
                        ("planning".into(), "full".into()),
                    ],
                    tile,
                    cash_cents: 10_000,
                }),
            ));
        }
        Synth {
            spec,
            rng,
            step: 0,
            tiles,
            memories: vec![Vec::new(); spec.n_agents as usize],
            conversation: None,
            pending,
            grid: None,
        }
    }

    /// The same generator in a real town: `TownLoaded` carries the town's file (the viewer
    /// draws its map), agents join on walkable tiles and step only onto walkable tiles.
    pub fn in_town(mut self, town: &Definition) -> Synth {
        let grid = town.grid.clone();
        let walkable: Vec<Tile> = (0..grid.height())
            .flat_map(|y| (0..grid.width()).map(move |x| Tile { x, y }))
            .filter(|&t| grid.is_walkable(t))
            .collect();
        for event in &mut self.pending {
            match &mut event.body {
                Body::TownLoaded(t) => {
                    t.name = town.name.clone();
                    t.format = "toml".into();
                    t.source = town.source.clone();
                }
                Body::AgentJoined(j) => {
                    if let Some(last) = walkable.len().checked_sub(1) {
                        let k = self.rng.int_inclusive(0, last as u64) as usize;
                        j.tile = walkable.get(k).copied().unwrap_or(j.tile);
                        if let Some(t) = self.tiles.get_mut(j.agent.0 as usize) {
                            *t = j.tile;
                        }
                    }
                }
                _ => {}
            }
        }
        self.grid = Some(grid);
        self
    }

    /// The events of the next step (the first call also returns the set-up events). Ids of
    /// events this step creates are not known yet, so causes point at earlier memories.
    pub fn next_step(&mut self) -> Vec<NewEvent> {
        let mut out = std::mem::take(&mut self.pending);
        self.step += 1;
        let now = self.step * 10;
        out.push(NewEvent::new(now, Body::ClockStepped(ClockStepped { step: self.step })));
        for i in 0..self.spec.n_agents {
            let agent = AgentId(i);
            let r = self.rng.int_inclusive(0, 999);
            let tile = self.tiles[i as usize];
            if r < 400 {
                let to = Tile {
                    x: (tile.x + self.rng.int_inclusive(0, 2) as u16).saturating_sub(1).min(99),
                    y: (tile.y + self.rng.int_inclusive(0, 2) as u16).saturating_sub(1).min(99),
                };
                // In a real town a step into a wall is not taken.
                if self.grid.as_ref().is_none_or(|g| g.is_walkable(to) && to != tile) {
                    self.tiles[i as usize] = to;
                    out.push(NewEvent::new(now, Body::Moved(Moved { agent, from: tile, to })));
                }
            } else if r < 500 {
                let n = self.rng.int_inclusive(1, 3) as usize;
                let percepts = (0..n)
                    .map(|k| Percept {
                        subject: PLACES[(i as usize + k) % PLACES.len()].into(),
                        description: DOINGS[(self.step as usize + k) % DOINGS.len()].into(),
                        tile,
                    })
                    .collect();
                out.push(NewEvent::new(now, Body::Perceived(Perceived { agent, percepts })));
            } else if r < 530 {
                let embedding =
                    (0..EMBEDDING_DIMS).map(|_| self.rng.unit_f32() * 2.0 - 1.0).collect();
                out.push(NewEvent::new(
                    now,
                    Body::MemoryAdded(MemoryAdded {
                        agent,
                        kind: MemoryKind::Observation,
                        description: format!(
                            "{} is {}",
                            PLACES[i as usize % PLACES.len()],
                            DOINGS[r as usize % DOINGS.len()]
                        ),
                        importance: self.rng.int_inclusive(1, 10) as u8,
                        embedding,
                        evidence: vec![],
                    }),
                ));
            } else if r < 545 {
                let known = &self.memories[i as usize];
                let hits = known
                    .iter()
                    .rev()
                    .take(self.rng.int_inclusive(5, 30) as usize)
                    .map(|&memory| RetrievalHit {
                        memory,
                        recency: 0.9,
                        importance: 0.5,
                        relevance: 0.7,
                        score: 2.3,
                    })
                    .collect();
                out.push(NewEvent::new(
                    now,
                    Body::Retrieved(Retrieved {
                        agent,
                        query: "What is Isabella planning?".into(),
                        weights: [0.5, 3.0, 2.0],
                        decay: 0.995,
                        hits,
                    }),
                ));
            } else if r < 565 {
                let request_hash =
                    *blake3::hash(&[now.to_le_bytes(), u64::from(i).to_le_bytes()].concat())
                        .as_bytes();
                out.push(NewEvent::new(
                    now,
                    Body::LlmRequested(LlmRequested {
                        request_hash,
                        purpose: "react".into(),
                        agent: Some(agent),
                        backend: SYNTHETIC.into(),
                        server: String::new(),
                        model: SYNTHETIC.into(),
                        temperature_milli: 0,
                        top_p_milli: 1000,
                        max_tokens: 64,
                        seed: Some(self.spec.seed),
                        stop: vec![],
                        prompt: Prompt::Text(format!(
                            "It is day {} {:02}:{:02}. Agent {i} is at {}. They see someone {}. \
                         Should they react? Answer yes or no, with a reason.",
                            now / 86_400,
                            now / 3600 % 24,
                            now / 60 % 60,
                            PLACES[i as usize % PLACES.len()],
                            DOINGS[self.step as usize % DOINGS.len()]
                        )),
                        template: "react".into(),
                        template_version: 1,
                        schema_hash: Some([3; 32]),
                        attempt: 1,
                        structured: StructuredForm::Grammar,
                        items: Vec::new(),
                        avoid: Vec::new(),
                    }),
                ));
                out.push(NewEvent::new(
                    now,
                    Body::LlmResponded(LlmResponded {
                        request_hash,
                        text: "{\"react\": false, \"reason\": \"busy with work\"}".into(),
                        parsed: Some("false".into()),
                        fallback: false,
                        tokens_prompt: 180,
                        tokens_completion: 14,
                        latency_ms: 1200,
                        finish_reason: "stop".into(),
                        response_model: SYNTHETIC.into(),
                        response_id: String::new(),
                        probabilities: Vec::new(),
                        tokens_cached: 0,
                    }),
                ));
            } else if r < 570 {
                out.push(NewEvent::new(
                    now,
                    Body::ActionStarted(ActionStarted {
                        agent,
                        description: DOINGS[r as usize % DOINGS.len()].into(),
                        emoji: "☕".into(),
                        address: PLACES[i as usize % PLACES.len()].into(),
                        duration_secs: 600,
                        plan_item: None,
                    }),
                ));
            } else if r < 573 {
                out.push(NewEvent::new(
                    now,
                    Body::ObjectStateChanged(ObjectStateChanged {
                        address: PLACES[i as usize % PLACES.len()].into(),
                        state: if r.is_multiple_of(2) { "idle".into() } else { DOINGS[0].into() },
                        by: Some(agent),
                    }),
                ));
            } else if r < 575 {
                out.push(NewEvent::new(
                    now,
                    Body::CashMoved(CashMoved {
                        from: Account::Agent(agent),
                        to: Account::Shop("Hobbs café".into()),
                        amount_cents: 350,
                        reason: "coffee".into(),
                    }),
                ));
            } else if r < 576 {
                out.push(NewEvent::new(
                    now,
                    Body::PlanMade(PlanMade {
                        agent,
                        level: PlanLevel::Hour,
                        decomposes: None,
                        items: (0..4)
                            .map(|k| PlanItem {
                                description: DOINGS[k % DOINGS.len()].into(),
                                address: PLACES[k % PLACES.len()].into(),
                                start_secs: now + k as u64 * 900,
                                duration_secs: 900,
                            })
                            .collect(),
                    }),
                ));
            }
        }
        if self.conversation.is_none() && self.spec.n_agents >= 2 && self.rng.chance(1, 50) {
            let a = AgentId(self.rng.int_inclusive(0, u64::from(self.spec.n_agents) - 1) as u32);
            let b = AgentId((a.0 + 1) % self.spec.n_agents);
            out.push(NewEvent::new(
                now,
                Body::ConversationStarted(ConversationStarted {
                    agents: vec![a, b],
                    address: PLACES[1].into(),
                }),
            ));
            // The conversation's id is the event's id, known once committed: the writer
            // below fills it in.
            self.conversation = Some((EventId::NONE, a, b, 0));
        } else if let Some((id, a, b, turns)) = self.conversation {
            let ends = turns >= 5;
            let speaker = if turns % 2 == 0 { a } else { b };
            out.push(NewEvent::new(
                now,
                Body::DialogueTurn(DialogueTurn {
                    conversation: id,
                    speaker,
                    text: "Did you hear Isabella is throwing a party at Hobbs café on Friday?"
                        .into(),
                    ends,
                }),
            ));
            if ends {
                out.push(NewEvent::new(
                    now,
                    Body::ConversationEnded(ConversationEnded {
                        conversation: id,
                        reason: "said goodbye".into(),
                    }),
                ));
                self.conversation = None;
            } else {
                self.conversation = Some((id, a, b, turns + 1));
            }
        }
        out
    }

    /// Tells the generator the ids its last step's events were given.
    pub fn committed(&mut self, events: &[NewEvent], ids: &[EventId]) {
        for (event, id) in events.iter().zip(ids) {
            match &event.body {
                Body::MemoryAdded(m) => {
                    if let Some(list) = self.memories.get_mut(m.agent.0 as usize) {
                        list.push(*id);
                    }
                }
                Body::ConversationStarted(_) => {
                    if let Some(conv) = self.conversation.as_mut() {
                        conv.0 = *id;
                    }
                }
                _ => {}
            }
        }
    }
}

/// A batch of small, valid events after `*time`: clock steps (one in `1 / step_every`) and
/// one-tile moves of `n_agents` agents. What the store's benchmarks and tests append.
pub fn steps_and_moves(
    rng: &mut SimRng,
    time: &mut u64,
    n: usize,
    n_agents: u32,
    step_every: u64,
) -> Vec<NewEvent> {
    (0..n)
        .map(|i| {
            if rng.chance(1, step_every) {
                *time += 10;
                NewEvent::new(*time, Body::ClockStepped(ClockStepped { step: *time / 10 }))
            } else {
                let x = rng.int_inclusive(0, 90) as u16;
                NewEvent::new(
                    *time,
                    Body::Moved(Moved {
                        agent: AgentId(i as u32 % n_agents.max(1)),
                        from: Tile { x, y: 1 },
                        to: Tile { x: x + 1, y: 1 },
                    }),
                )
            }
        })
        .collect()
}

/// Writes a synthetic recording of at least `spec.n_events` events on one branch, "main".
/// `progress` is called with the events written so far.
pub fn write_recording<W: io::Write>(
    spec: SynthSpec,
    out: W,
    progress: impl FnMut(u64),
) -> io::Result<W> {
    write_recording_in(spec, None, out, progress)
}

/// [`write_recording`], in a real town when one is given (see [`Synth::in_town`]).
pub fn write_recording_in<W: io::Write>(
    spec: SynthSpec,
    town: Option<&Definition>,
    out: W,
    mut progress: impl FnMut(u64),
) -> io::Result<W> {
    let mut writer =
        RecordingWriter::new(out, concat!("hamlet synth ", env!("CARGO_PKG_VERSION")))?;
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    );
    let (branch, mut chunk): (BranchId, ChunkBuilder) =
        ChunkBuilder::new_branch(&created, EventId::NONE, 0);
    let mut synth = Synth::new(spec);
    if let Some(town) = town {
        synth = synth.in_town(town);
    }
    let mut written = 1u64;
    while written < spec.n_events {
        let events = synth.next_step();
        let mut ids = Vec::with_capacity(events.len());
        for event in &events {
            let id = chunk.push(&event.encode(chunk.next_seq()));
            ids.push(id);
            if chunk.is_full_for(writer.compresses()) {
                let next = ChunkBuilder::new(branch, id, chunk.next_seq());
                let full = std::mem::replace(&mut chunk, next);
                writer.write_chunk(&full.finish().1).map_err(io::Error::other)?;
            }
        }
        written += events.len() as u64;
        synth.committed(&events, &ids);
        progress(written);
    }
    if chunk.n_events() > 0 {
        writer.write_chunk(&chunk.finish().1).map_err(io::Error::other)?;
    }
    writer.finish()
}
