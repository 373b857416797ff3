//! The embedded model's one KV pool, with the real small model: a pool too small for every
//! cached prefix drops the least recently used one and reads it again when it is next asked;
//! calls beyond the pool's room wait their turn and are all answered; a budget too small for
//! the model is refused before it loads, naming the memory needed. (The models are fetched
//! by `./hamlet-dev test`; HAMLET_SKIP_MODEL_TESTS=1 skips these tests.)

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

fn ask(gateway: &Gateway, runtime: &tokio::runtime::Runtime, agent: u32) -> (u32, u32) {
    let mut call =
        Call::chat("text", &preamble(agent), "Where did you walk on day 3?", Shape::Text)
            .template("pool", 1);
    call.agent = Some(AgentId(agent));
    call.max_tokens = Some(8);
    let answered = runtime.block_on(gateway.ask(&call)).unwrap();
    match answered.events.last() {
        Some(Body::LlmResponded(r)) => (r.tokens_prompt, r.tokens_cached),
        other => panic!("{other:?}"),
    }
}

/// Goal: the pool holds what its cells hold, no more, and drops the least recently used
/// prefix to make room. Method: a pool of 2,048 cells for prefixes of about 800 tokens: two
/// fit; a third drops the older; the newer is still cached and the dropped one is read again.
#[test]
fn a_full_pool_drops_the_least_recently_used_prefix() {
    let Some(path) = small() else { return };
    let mut config = LocalConfig::new(&path, "small");
    config.slots = 8;
    config.context_per_slot = 1024;
    config.pool_cells = 2048;
    let llm = Arc::new(LocalLlm::start(config).unwrap());
    let gateway = gateway(llm.clone(), 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (read, cached) = ask(&gateway, &runtime, 1);
    assert!((720..1000).contains(&read), "a prefix of about 800 tokens: {read}");
    assert_eq!(cached, 0, "nothing cached yet");
    assert_eq!(ask(&gateway, &runtime, 2).1, 0);
    assert_eq!(llm.stats().evictions, 0, "two prefixes fit in 2,048 cells");
    // A third does not fit beside both: the least recently used (agent 1's) goes.
    assert_eq!(ask(&gateway, &runtime, 3).1, 0);
    assert!(llm.stats().evictions >= 1, "{:?}", llm.stats());
    let (read, cached) = ask(&gateway, &runtime, 3);
    assert!(cached + 1 >= read, "agent 3's own prefix is cached: {cached} of {read}");
    let (_, cached) = ask(&gateway, &runtime, 1);
    assert!(cached < 100, "agent 1's prefix was dropped and read again: {cached} cached");
    let counters = llm.counters().unwrap();
    assert!(counters.contains("dropped for room"), "{counters}");
}

/// Goal: calls beyond the pool's room wait and are answered, none refused. Method: a pool
/// that holds one call's context, four calls asked at once.
#[test]
fn calls_beyond_the_pools_room_wait_their_turn() {
    let Some(path) = small() else { return };
    let mut config = LocalConfig::new(&path, "small");
    config.slots = 8;
    config.context_per_slot = 1024;
    config.pool_cells = 1024;
    let llm = Arc::new(LocalLlm::start(config).unwrap());
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
    assert!(stats.evictions >= 3, "each call's prefix made room for the next: {stats:?}");
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
    // What it names is enough: the pool shrinks to one call's context.
    let (_, plan) =
        config::local_plan(&settings(&format!("{}M", needed.div_ceil(1 << 20)))).unwrap();
    assert_eq!(plan.cells, footprint::CONTEXT_PER_CALL);
    assert!(plan.total() <= needed.div_ceil(1 << 20) << 20);
    // A budget with room: the town's pool, whole.
    let (_, plan) = config::local_plan(&settings("16G")).unwrap();
    assert_eq!(plan.cells, footprint::TOWN_POOL_CELLS);
    // A file that is not a model is an error, not a crash.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"GGUF but not really").unwrap();
    assert!(ModelShape::of(&junk).unwrap_err().contains("not a GGUF"));
}
