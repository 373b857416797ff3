//! A recording whose every text is hostile: names, personas, plans, actions, emoji, lines,
//! memories, prompts and answers full of script tags, event handlers, `javascript:` URLs
//! and bidi overrides. The viewer must show them as written and run none of them.

use std::path::Path;

use hamlet_engine::history::export_with_checkpoints;
use hamlet_engine::store::Store;
use hamlet_log::event::*;

/// What the page sets when a payload runs.
pub const PWNED: &str = "__hamletPwned";

/// A payload that sets `window.__hamletPwned` if it is ever parsed as HTML or run.
pub fn evil(tag: &str) -> String {
    format!(
        "{tag} <script>window.{PWNED}='script'</script><img src=x onerror=\"window.{PWNED}='img'\">\
         <a href=\"javascript:window.{PWNED}='link'\">click</a> \u{202E}txet desrever\u{202C} <b>bold</b>"
    )
}

/// Writes the hostile recording to `out`: two agents in Willowmere, a plan, an action, a
/// memory, a retrieval, a model call and a conversation under way.
pub fn write(out: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(tmp.path()).unwrap();
    let main = store.create_root("main").unwrap();
    let town = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/towns/willowmere.toml"),
    )
    .unwrap();
    let t0 = 7 * 3600;
    let (mallory, bob) = (AgentId(0), AgentId(1));
    let mut append = |time: u64, causes: Vec<hamlet_log::EventId>, body: Body| {
        store.append_durable(main, &[NewEvent { sim_time_secs: time, causes, body }]).unwrap()[0]
    };
    append(
        0,
        vec![],
        Body::RunConfigured(RunConfigured {
            engine_version: "test".into(),
            seed: 7,
            seconds_per_step: 10,
            settings: vec![],
        }),
    );
    append(
        0,
        vec![],
        Body::TownLoaded(TownLoaded {
            name: "Willowmere".into(),
            format: "toml".into(),
            source: town,
        }),
    );
    for (agent, name, x) in [(mallory, "Mallory", 3), (bob, "Bob", 4)] {
        append(
            0,
            vec![],
            Body::AgentJoined(AgentJoined {
                agent,
                name: format!("{name} <img src=x onerror=\"window.{PWNED}='name'\">"),
                persona: evil("persona"),
                traits: vec![("strategy".into(), evil("trait"))],
                tile: Tile { x, y: 3 },
                cash_cents: 1234,
            }),
        );
    }
    append(t0, vec![], Body::ClockStepped(ClockStepped { step: 1 }));
    let hash = [7u8; 32];
    let asked = append(
        t0,
        vec![],
        Body::LlmRequested(LlmRequested {
            request_hash: hash,
            purpose: "day_plan".into(),
            agent: Some(mallory),
            backend: "embedded".into(),
            server: "in-process".into(),
            model: evil("model"),
            temperature_milli: 0,
            top_p_milli: 1000,
            max_tokens: 200,
            seed: Some(1),
            stop: vec![],
            prompt: Prompt::Chat(vec![
                ChatMessage { role: "system".into(), content: evil("system prompt") },
                ChatMessage { role: "user".into(), content: evil("user prompt") },
            ]),
            template: "day_plan".into(),
            template_version: 1,
            schema_hash: None,
            attempt: 1,
            structured: StructuredForm::None,
            items: Vec::new(),
            avoid: Vec::new(),
        }),
    );
    let answered = append(
        t0,
        vec![asked],
        Body::LlmResponded(LlmResponded {
            request_hash: hash,
            text: evil("answer"),
            parsed: Some(evil("parsed")),
            fallback: false,
            tokens_prompt: 50,
            tokens_completion: 20,
            latency_ms: 300,
            finish_reason: "stop".into(),
            response_model: evil("response model"),
            response_id: "r1".into(),
            probabilities: Vec::new(),
            tokens_cached: 0,
        }),
    );
    let plan = append(
        t0,
        vec![answered],
        Body::PlanMade(PlanMade {
            agent: mallory,
            level: PlanLevel::Day,
            decomposes: None,
            items: vec![PlanItem {
                description: evil("plan item"),
                address: "Ashcombe house:kitchen:stove".into(),
                start_secs: t0,
                duration_secs: 7200,
            }],
        }),
    );
    let memory = append(
        t0,
        vec![plan],
        Body::MemoryAdded(MemoryAdded {
            agent: mallory,
            kind: MemoryKind::Plan,
            description: evil("memory"),
            importance: 6,
            embedding: vec![0.5; 8],
            evidence: vec![],
        }),
    );
    let recalled = append(
        t0,
        vec![],
        Body::Retrieved(Retrieved {
            agent: mallory,
            query: evil("query"),
            weights: [1.0, 1.0, 1.0],
            decay: 0.995,
            hits: vec![RetrievalHit {
                memory,
                recency: 1.0,
                importance: 0.5,
                relevance: 0.25,
                score: 1.75,
            }],
        }),
    );
    append(
        t0 + 10,
        vec![plan, recalled],
        Body::ActionStarted(ActionStarted {
            agent: mallory,
            description: evil("action"),
            emoji: "<b>🍳</b>".into(),
            address: evil("address"),
            duration_secs: 1800,
            plan_item: Some(PlanRef { plan, item: 0 }),
        }),
    );
    let talk = append(
        t0 + 20,
        vec![],
        Body::ConversationStarted(ConversationStarted {
            agents: vec![mallory, bob],
            address: evil("where"),
        }),
    );
    append(
        t0 + 20,
        vec![talk],
        Body::DialogueTurn(DialogueTurn {
            conversation: talk,
            speaker: mallory,
            text: evil("line one"),
            ends: false,
        }),
    );
    append(
        t0 + 20,
        vec![talk],
        Body::DialogueTurn(DialogueTurn {
            conversation: talk,
            speaker: bob,
            text: evil("line two"),
            ends: false,
        }),
    );
    append(t0 + 30, vec![], Body::ClockStepped(ClockStepped { step: 2 }));
    let file = std::fs::File::create(out).unwrap();
    let written =
        export_with_checkpoints(&store, Some(main), std::io::BufWriter::new(file)).unwrap();
    written.into_inner().unwrap().sync_all().unwrap();
}
