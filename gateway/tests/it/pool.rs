//! The embedded model's memory, with the real small model: an idle prefix set aside from its
//! stream comes back and answers as before; past the room for idle prefixes the least
//! recently used is dropped and read again when next asked; calls beyond the streams wait
//! their turn and are all answered; a budget too small for the model is refused before it
//! loads, naming the memory needed. (The models are fetched by `./hamlet-dev test`;
//! HAMLET_SKIP_MODEL_TESTS=1 skips these tests.)

use std::sync::Arc;
use std::time::Duration;

use hamlet_gateway::answer::Shape;
use hamlet_gateway::config::{self, Env, FileSettings, Flags};
use hamlet_gateway::footprint::{self, KvType, ModelShape};
use hamlet_gateway::local::{LocalConfig, LocalLlm};
use hamlet_gateway::models::{self, ModelChoice};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Call, Gateway, LlmBackend, Params, RetryPolicy};
use hamlet_log::event::AgentId;
use hamlet_log::Body;

fn small() -> Option<std::path::PathBuf> {
    if std::env::var_os("HAMLET_SKIP_MODEL_TESTS").is_some_and(|v| v == "1") {
        return None;
    }
    Some(models::installed(ModelChoice::Small).unwrap_or_else(|| {
        panic!(
            "the small model is not installed: run `./hamlet-dev setup` or `hamlet models fetch \
             --model small`; HAMLET_SKIP_MODEL_TESTS=1 skips these tests"
        )
    }))
}

/// The small model with calls of up to 1,024 tokens, eight slots, `streams` streams and
/// `cache_bytes` of room for idle prefixes.
fn start(path: &std::path::Path, streams: u32, cache_bytes: u64) -> Arc<LocalLlm> {
    let mut config = LocalConfig::new(path, "small");
    config.slots = 8;
    config.context_per_slot = 1024;
    config.streams = streams;
    config.cache_bytes = cache_bytes;
    Arc::new(LocalLlm::start(config).unwrap())
}

fn gateway(llm: Arc<LocalLlm>, concurrency: usize) -> Gateway {
    let no_embed = Arc::new(Replay::from_events(&[]));
    let policy = RetryPolicy { timeout: Duration::from_secs(3600), ..RetryPolicy::default() };
    Gateway::new(llm, no_embed, Params::default(), policy, concurrency)
}

/// A preamble of a few hundred tokens, different for each agent.
fn preamble(agent: u32) -> String {
    let places = ["the café", "the market", "the college", "the park", "the bar", "the store"];
    let mut text = format!("You are resident number {agent} of Willowmere. ");
    for day in 0..30 {
        let place = places[(agent as usize + day) % places.len()];
        text.push_str(&format!(
            "On day {day} of the month resident {agent} walked to {place}, met {} people there \
             and wrote {} lines in a notebook. ",
            (day * 7 + agent as usize) % 11,
            (day * 3 + agent as usize) % 5
        ));
    }
    text
}

fn ask(gateway: &Gateway, runtime: &tokio::runtime::Runtime, agent: u32) -> (u32, u32, String) {
    let mut call =
        Call::chat("text", &preamble(agent), "Where did you walk on day 3?", Shape::Text)
            .template("pool", 1);
    call.agent = Some(AgentId(agent));
    call.max_tokens = Some(8);
    let answered = runtime.block_on(gateway.ask(&call)).unwrap();
    match answered.events.last() {
        Some(Body::LlmResponded(r)) => (r.tokens_prompt, r.tokens_cached, r.text.clone()),
        other => panic!("{other:?}"),
    }
}

/// Goal: idle prefixes live in memory within their room, the least recently used dropped
/// first, and one brought back answers as it did. Method: one stream, room for one idle
/// prefix of about 800 tokens; three agents take turns.
#[test]
fn idle_prefixes_are_set_aside_and_the_least_recently_used_dropped() {
    let Some(path) = small() else { return };
    // One prefix of ~800 tokens at 12 KiB a token is ~9.6 MB: room for one, not two.
    let llm = start(&path, 1, 15 << 20);
    let gateway = gateway(llm.clone(), 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (read, cached, first_two) = {
        let (read, cached, _) = ask(&gateway, &runtime, 1);
        let (_, _, two) = ask(&gateway, &runtime, 2);
        (read, cached, two)
    };
    assert!((720..1000).contains(&read), "a prefix of about 800 tokens: {read}");
    assert_eq!(cached, 0, "nothing cached yet");
    let stats = llm.stats();
    assert_eq!((stats.saved, stats.evictions), (1, 0), "agent 1's prefix set aside: {stats:?}");
    // Agent 3 takes the stream: agent 2's prefix is set aside, agent 1's dropped for it.
    assert_eq!(ask(&gateway, &runtime, 3).1, 0);
    let stats = llm.stats();
    assert_eq!((stats.saved, stats.evictions), (2, 1), "{stats:?}");
    // Agent 2's comes back from memory and answers as the prompt read afresh did.
    let (read, cached, again) = ask(&gateway, &runtime, 2);
    assert!(cached + 1 >= read, "agent 2's prefix came back: {cached} of {read}");
    assert_eq!(llm.stats().restored, 1);
    assert_eq!(again, first_two, "a prefix brought back answers as it did");
    // Agent 1's was dropped: read again.
    let (_, cached, _) = ask(&gateway, &runtime, 1);
    assert!(cached < 100, "agent 1's prefix was dropped and read again: {cached} cached");
    let counters = llm.counters().unwrap();
    assert!(counters.contains("dropped"), "{counters}");
}

/// Goal: calls beyond the streams wait and are answered, none refused. Method: one stream,
/// no room for idle prefixes, four calls asked at once.
#[test]
fn calls_beyond_the_pools_room_wait_their_turn() {
    let Some(path) = small() else { return };
    let llm = start(&path, 1, 0);
    let gateway = gateway(llm.clone(), 4);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answered = runtime.block_on(async {
        let calls: Vec<_> = (1..=4)
            .map(|agent| {
                let gateway = gateway.clone();
                tokio::spawn(async move {
                    let mut call = Call::chat("text", &preamble(agent), "Say hello.", Shape::Text);
                    call.agent = Some(AgentId(agent));
                    call.max_tokens = Some(6);
                    gateway.ask(&call).await
                })
            })
            .collect();
        let mut answered = Vec::new();
        for call in calls {
            answered.push(call.await.unwrap());
        }
        answered
    });
    for a in &answered {
        let a = a.as_ref().unwrap();
        assert!(!a.fallback && a.events.iter().all(|e| !matches!(e, Body::LlmFailed(_))));
    }
    let stats = llm.stats();
    assert!(stats.waited >= 1, "calls waited for room: {stats:?}");
    assert!(stats.evictions >= 3, "each call's prefix gave way to the next: {stats:?}");
}

/// Goal: the memory a model needs is known before it loads, and a budget that cannot hold it
/// says how much it needs. Method: the shapes of the installed models, and budgets of 200 MB
/// and of what the error names.
#[test]
fn a_budget_too_small_for_the_model_is_refused_before_it_loads() {
    let Some(path) = small() else { return };
    // Qwen2.5-0.5B: 24 layers, 2 heads of 64 keep keys and values.
    let shape = ModelShape::of(&path).unwrap();
    assert_eq!((shape.layers, shape.kv_width), (24, 128));
    assert_eq!(shape.cell_bytes(KvType::F16), 12 * 1024);
    if let Some(default) = models::installed(ModelChoice::Default) {
        let shape = ModelShape::of(&default).unwrap();
        assert_eq!(shape.cell_bytes(KvType::F16), 28 * 1024, "{shape:?}");
    }
    let settings = |memory: &str| {
        config::resolve(
            &FileSettings::default(),
            &Env::default(),
            &Flags { model: Some("small".into()), memory: Some(memory.into()), ..Flags::default() },
        )
        .unwrap()
    };
    let Err(e) = config::llm_backend(&settings("200M")) else {
        panic!("200 MB cannot hold a 470 MB model");
    };
    let needed = shape.resident(footprint::CONTEXT_PER_CALL, KvType::F16);
    assert!(e.0.contains(&footprint::human(needed)) && e.0.contains("200 MB"), "{e}");
    // What it names is enough: one stream, no room for idle prefixes.
    let (_, plan) =
        config::local_plan(&settings(&format!("{}M", needed.div_ceil(1 << 20)))).unwrap();
    assert_eq!(plan.streams, 1);
    assert!(plan.cache < 1 << 20, "what is left of the rounded budget: {}", plan.cache);
    assert!(plan.total() <= needed.div_ceil(1 << 20) << 20);
    // A budget with room: a town's streams and idle prefixes, whole.
    let (_, plan) = config::local_plan(&settings("16G")).unwrap();
    let cell = shape.cell_bytes(KvType::F16);
    assert_eq!((plan.streams, plan.cache), (4, u64::from(footprint::TOWN_CACHE_TOKENS) * cell));
    // A file that is not a model is an error, not a crash.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"GGUF but not really").unwrap();
    assert!(ModelShape::of(&junk).unwrap_err().contains("not a GGUF"));
}
