//! Sample events, one of every kind this build knows, with plausible town content. The
//! format fingerprint, the golden corpus and the documentation are made from them.

use crate::event::*;
use crate::id::{BranchId, EventId};

/// One body of every known kind, in tag order (`BranchCreated` first).
pub fn one_body_per_kind() -> Vec<Body> {
    let id = |n: u8| EventId([n; 32]);
    let isabella = AgentId(0);
    let klaus = AgentId(1);
    let hash = [7u8; 32];
    vec![
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
        Body::RunConfigured(RunConfigured {
            engine_version: "0.1.0".into(),
            seed: 1234,
            seconds_per_step: 10,
            settings: vec![("retrieval.top_k".into(), "30".into())],
        }),
        Body::TownLoaded(TownLoaded {
            name: "Willowmere".into(),
            format: "toml".into(),
            source: "name = \"Willowmere\"\n".into(),
        }),
        Body::AgentJoined(AgentJoined {
            agent: isabella,
            name: "Isabella Moreno".into(),
            persona: "Isabella runs the café; she is planning a party".into(),
            traits: vec![("memory".into(), "full".into())],
            tile: Tile { x: 12, y: 7 },
            cash_cents: 15_000,
        }),
        Body::ClockStepped(ClockStepped { step: 1 }),
        Body::Moved(Moved {
            agent: isabella,
            from: Tile { x: 12, y: 7 },
            to: Tile { x: 13, y: 7 },
        }),
        Body::Perceived(Perceived {
            agent: isabella,
            percepts: vec![Percept {
                subject: "café:kitchen:stove".into(),
                description: "the stove is idle".into(),
                tile: Tile { x: 14, y: 7 },
            }],
        }),
        Body::MemoryAdded(MemoryAdded {
            agent: isabella,
            kind: MemoryKind::Observation,
            description: "the stove is idle".into(),
            importance: 2,
            embedding: vec![0.25, -0.5, 0.125],
            evidence: vec![],
        }),
        Body::Retrieved(Retrieved {
            agent: isabella,
            query: "party".into(),
            weights: [0.5, 3.0, 2.0],
            decay: 0.995,
            hits: vec![RetrievalHit {
                memory: id(1),
                recency: 1.0,
                importance: 0.5,
                relevance: 0.75,
                score: 3.5,
            }],
        }),
        Body::LlmRequested(LlmRequested {
            request_hash: hash,
            purpose: "importance".into(),
            agent: Some(isabella),
            backend: "local".into(),
            server: String::new(),
            model: "qwen2.5-coder-1.5b-instruct-q4_k_m".into(),
            temperature_milli: 0,
            top_p_milli: 1000,
            max_tokens: 8,
            seed: Some(1),
            stop: vec![],
            prompt: Prompt::Chat(vec![ChatMessage {
                role: "user".into(),
                content: "Rate what Isabella remembers:".into(),
            }]),
            template: "importance".into(),
            template_version: 1,
            schema_hash: Some(hash),
            attempt: 1,
            structured: StructuredForm::Probabilities,
            items: vec!["the stove is idle".into()],
            // (An encoding sample: only lines of dialogue avoid texts.)
            avoid: vec!["Is the stove on?".into()],
        }),
        Body::LlmResponded(LlmResponded {
            request_hash: hash,
            text: "{\"rating\": 2}".into(),
            parsed: Some("2".into()),
            fallback: false,
            tokens_prompt: 40,
            tokens_completion: 0,
            latency_ms: 900,
            finish_reason: "stop".into(),
            response_model: "qwen2.5-coder-1.5b-instruct-q4_k_m".into(),
            response_id: String::new(),
            probabilities: vec![vec![4000, 3000, 1500, 800, 400, 200, 50, 30, 15, 5]],
            tokens_cached: 30,
        }),
        Body::LlmFailed(LlmFailed {
            request_hash: hash,
            kind: FailureKind::RateLimited,
            message: "429 Too Many Requests".into(),
            attempt: 1,
            latency_ms: 12,
        }),
        Body::EmbeddingRequested(EmbeddingRequested {
            request_hash: hash,
            purpose: "memory".into(),
            agent: Some(AgentId(0)),
            backend: "local".into(),
            server: String::new(),
            model: "all-MiniLM-L6-v2".into(),
            texts: vec!["the stove is idle".into()],
        }),
        Body::EmbeddingReturned(EmbeddingReturned {
            request_hash: hash,
            vectors: vec![vec![0.25, -0.5, 0.125]],
            tokens: 6,
            latency_ms: 4,
            pooled: false,
        }),
        Body::PlanMade(PlanMade {
            agent: isabella,
            level: PlanLevel::Day,
            decomposes: None,
            items: vec![PlanItem {
                description: "open the café".into(),
                address: "café:counter".into(),
                start_secs: 8 * 3600,
                duration_secs: 3600,
            }],
        }),
        Body::ActionStarted(ActionStarted {
            agent: isabella,
            description: "brewing coffee".into(),
            emoji: "☕".into(),
            address: "café:counter:coffee machine".into(),
            duration_secs: 600,
            plan_item: Some(PlanRef { plan: id(2), item: 0 }),
        }),
        Body::ConversationStarted(ConversationStarted {
            agents: vec![isabella, klaus],
            address: "café:counter".into(),
        }),
        Body::DialogueTurn(DialogueTurn {
            conversation: id(3),
            speaker: isabella,
            text: "Klaus! Come to my party on Friday at five?".into(),
            ends: false,
        }),
        Body::ConversationEnded(ConversationEnded {
            conversation: id(3),
            reason: "said goodbye".into(),
        }),
        Body::ReflectionStarted(ReflectionStarted {
            agent: isabella,
            importance_sum: 152,
            questions: vec!["What is Isabella looking forward to?".into()],
        }),
        Body::ObjectStateChanged(ObjectStateChanged {
            address: "café:counter:coffee machine".into(),
            state: "brewing coffee".into(),
            by: Some(isabella),
        }),
        Body::CashMoved(CashMoved {
            from: Account::Agent(klaus),
            to: Account::Shop("café".into()),
            amount_cents: 350,
            reason: "coffee".into(),
        }),
        Body::Intervened(Intervened {
            intervention: Intervention::Happening {
                place: "café:counter".into(),
                text: "a fire alarm is ringing".into(),
                until_secs: 3_600,
            },
        }),
        Body::InterviewAnswered(InterviewAnswered {
            agent: klaus,
            question: id(4),
            answer: "Isabella is throwing a party on Friday.".into(),
        }),
        Body::SeedDrawn(SeedDrawn { purpose: "tick 1 agent 0 perceive".into(), seed: 99 }),
        Body::CommitmentMade(CommitmentMade {
            agent: klaus,
            conversation: id(3),
            with: vec![isabella],
            what: "goes to Isabella's party".into(),
            address: "café:counter".into(),
            start_secs: 61_200,
            duration_secs: 7_200,
        }),
        Body::MayorActed(MayorActed {
            mayor: Some(isabella),
            act: MayorAct::PostJob {
                sector: "bakery".into(),
                title: "baker".into(),
                cents_per_hour: 1_800,
            },
        }),
        Body::JobTaken(JobTaken { agent: klaus, job: id(5) }),
        // The branch that holds the samples is renamed by the last of them.
        Body::BranchRenamed(BranchRenamed { name: "market-day".into() }),
    ]
}

/// The stored bytes of [`one_body_per_kind`], seq 0, 1, … at times 0, 10, 20, …
pub fn stored_samples() -> Vec<Vec<u8>> {
    one_body_per_kind()
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let causes = if i == 0 { vec![] } else { vec![EventId([i as u8; 32])] };
            NewEvent { sim_time_secs: i as u64 * 10, causes, body }.encode(i as u64)
        })
        .collect()
}

/// A small recording: a root branch created as "main" holding one event of every kind (in
/// two chunks), so renamed "market-day" by its last, and a fork of it at #5 named "what-if"
/// with two more events (the rename, after the fork point, is not the fork's).
pub fn small_recording() -> Vec<u8> {
    let stored = stored_samples();
    let mut out = crate::writer::RecordingWriter::new(Vec::new(), "hamlet-log samples")
        .unwrap_or_else(|e| panic!("{e}"));
    let main = BranchId(EventId::chain(EventId::NONE, &stored[0]));
    let mut chunk = crate::format::ChunkBuilder::new(main, EventId::NONE, 0);
    let mut fork_point = EventId::NONE;
    for (i, event) in stored.iter().enumerate() {
        let id = chunk.push(event);
        if i == 5 {
            fork_point = id;
        }
        if i == 12 {
            let next = crate::format::ChunkBuilder::new(main, id, 13);
            let full = std::mem::replace(&mut chunk, next);
            out.write_chunk(&full.finish().1).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    out.write_chunk(&chunk.finish().1).unwrap_or_else(|e| panic!("{e}"));
    let created = NewEvent::new(
        50,
        Body::BranchCreated(BranchCreated {
            name: "what-if".into(),
            parent_branch: Some(main),
            fork_seq: Some(5),
            nonce: 1,
        }),
    );
    let (_, mut fork) = crate::format::ChunkBuilder::new_branch(&created, fork_point, 6);
    fork.push(&NewEvent::new(60, Body::ClockStepped(ClockStepped { step: 7 })).encode(7));
    out.write_chunk(&fork.finish().1).unwrap_or_else(|e| panic!("{e}"));
    out.finish().unwrap_or_else(|e| panic!("{e}"))
}

/// A recording of two events past the first of every kind's: an agent that joined with a
/// model named and then set to another by hand (`Intervened` schema 3's `SetModel`).
pub fn set_model_recording() -> Vec<u8> {
    let mut out = crate::writer::RecordingWriter::new(Vec::new(), "hamlet-log samples")
        .unwrap_or_else(|e| panic!("{e}"));
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    );
    let stored = created.encode(0);
    let main = BranchId(EventId::chain(EventId::NONE, &stored));
    let mut chunk = crate::format::ChunkBuilder::new(main, EventId::NONE, 0);
    chunk.push(&stored);
    let ada = AgentId(0);
    let joined = Body::AgentJoined(AgentJoined {
        agent: ada,
        name: "Ada Brook".into(),
        persona: "Ada Brook sings in the choir".into(),
        traits: vec![("model".into(), "default".into()), ("strategy".into(), "full".into())],
        tile: Tile { x: 2, y: 3 },
        cash_cents: 500,
    });
    let set = Body::Intervened(Intervened {
        intervention: Intervention::SetModel { agent: ada, model: "small".into() },
    });
    for (seq, body) in [(1u64, joined), (2, set)] {
        chunk.push(&NewEvent::new(seq * 10, body).encode(seq));
    }
    out.write_chunk(&chunk.finish().1).unwrap_or_else(|e| panic!("{e}"));
    out.finish().unwrap_or_else(|e| panic!("{e}"))
}

/// A recording of a mayor's day in a few events (kinds 28 and 29, and `CashMoved` at
/// schema 2): two agents join; the town's funds arrive in its treasury; the mayor posts a
/// job, founds a business (paid from the treasury), sets a wage, calls a meeting and gives
/// a task; the other agent takes the job and is paid an hour of it from the treasury.
pub fn mayor_recording() -> Vec<u8> {
    let mut out = crate::writer::RecordingWriter::new(Vec::new(), "hamlet-log samples")
        .unwrap_or_else(|e| panic!("{e}"));
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    );
    let stored = created.encode(0);
    let main = BranchId(EventId::chain(EventId::NONE, &stored));
    let mut chunk = crate::format::ChunkBuilder::new(main, EventId::NONE, 0);
    chunk.push(&stored);
    let (ada, bo) = (AgentId(0), AgentId(1));
    let joined = |agent: AgentId, name: &str| {
        Body::AgentJoined(AgentJoined {
            agent,
            name: name.into(),
            persona: format!("{name} lives in Oak Hill"),
            traits: vec![("strategy".into(), "full".into())],
            tile: Tile { x: 2, y: 3 },
            cash_cents: 500,
        })
    };
    let mayor = |act: MayorAct| Body::MayorActed(MayorActed { mayor: Some(ada), act });
    let cash = |from: Account, to: Account, amount_cents: i64, reason: &str| {
        Body::CashMoved(CashMoved { from, to, amount_cents, reason: reason.into() })
    };
    let mut bodies = vec![
        joined(ada, "Ada Brook"),
        joined(bo, "Bo Reyes"),
        cash(Account::World, Account::Town, 100_000, "the town's funds"),
        mayor(MayorAct::PostJob {
            sector: "Oak Hill bakery".into(),
            title: "baker".into(),
            cents_per_hour: 1_500,
        }),
        mayor(MayorAct::Found {
            template: "Marigold café".into(),
            name: "Oak Hill bakery".into(),
            site: "north lot".into(),
            cost_cents: 40_000,
        }),
        cash(Account::Town, Account::World, 40_000, "founds Oak Hill bakery"),
        mayor(MayorAct::SetWage { sector: "Oak Hill bakery".into(), cents_per_hour: 1_800 }),
        mayor(MayorAct::CallMeeting {
            what: "the bakery's opening".into(),
            place: "Willowmere town hall".into(),
            start_secs: 61_200,
            duration_secs: 3_600,
        }),
        mayor(MayorAct::AssignTask {
            agent: bo,
            what: "bake the first loaves".into(),
            place: "Oak Hill bakery".into(),
            start_secs: 36_000,
            duration_secs: 7_200,
        }),
    ];
    let mut seq = 1u64;
    let mut posted = EventId::NONE;
    for body in bodies.drain(..) {
        let is_job =
            matches!(&body, Body::MayorActed(m) if matches!(m.act, MayorAct::PostJob { .. }));
        let id = chunk.push(&NewEvent::new(seq * 10, body).encode(seq));
        if is_job {
            posted = id;
        }
        seq += 1;
    }
    for body in [
        Body::JobTaken(JobTaken { agent: bo, job: posted }),
        cash(Account::Town, Account::Agent(bo), 1_800, "wage"),
    ] {
        chunk.push(&NewEvent::new(seq * 10, body).encode(seq));
        seq += 1;
    }
    out.write_chunk(&chunk.finish().1).unwrap_or_else(|e| panic!("{e}"));
    out.finish().unwrap_or_else(|e| panic!("{e}"))
}
