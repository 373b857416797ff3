//! The gateway's numbers: the embedded models' prompt and generation speed at 1 and 2
//! threads, aggregate generation with 1, 2, 4 and 8 calls in flight (batched decoding), the
//! saving from keeping an agent's stable prompt prefix in the KV cache, embeddings per
//! second, and the gateway's own overhead per call with the model taken out.
//!
//! `cargo bench -p hamlet-gateway --bench models` measures everything installed (fetch the
//! models with `hamlet models fetch --model all`); `-- --test` runs the overhead and a tiny
//! model check only, as CI does. Nothing else may run on the machine meanwhile: on 2 cores a
//! concurrent build slows generation several times over.

#![allow(missing_docs, reason = "a benchmark binary")]
#![allow(clippy::disallowed_methods, reason = "a benchmark measures wall-clock time")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use hamlet_gateway::answer::Shape;
use hamlet_gateway::backend::{Attempt, BackendError, BoxFuture, Completion, LlmBackend};
use hamlet_gateway::embed::LocalEmbedder;
use hamlet_testkit::machine;

use hamlet_gateway::local::{LocalConfig, LocalLlm};
use hamlet_gateway::models::{self, ModelChoice};
use hamlet_gateway::replay::Replay;
use hamlet_gateway::{Call, Gateway, Params, RetryPolicy};

/// A backend that answers at once: what is left is the gateway.
struct Instant0;

impl LlmBackend for Instant0 {
    fn name(&self) -> &str {
        "instant-bench-double"
    }
    fn server(&self) -> String {
        String::new()
    }
    fn model(&self) -> String {
        "none".into()
    }
    fn complete<'a>(&'a self, _: Attempt<'a>) -> BoxFuture<'a, Result<Completion, BackendError>> {
        Box::pin(async {
            Ok(Completion {
                text: r#"{"rating": 4}"#.into(),
                tokens_prompt: 100,
                tokens_completion: 5,
                finish_reason: "stop".into(),
                response_model: "none".into(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: 0,
            })
        })
    }
}

fn gateway(llm: Arc<dyn LlmBackend>, concurrency: usize) -> Gateway {
    let no_embed = Arc::new(Replay::from_events(&[]));
    let policy = RetryPolicy { timeout: Duration::from_secs(3600), ..RetryPolicy::default() };
    Gateway::new(llm, no_embed, Params { max_tokens: 64, ..Params::default() }, policy, concurrency)
}

/// An agent's stable preamble, about 400 tokens, as the agent loop will send it.
const PREAMBLE: &str = "You are Mei Lin, 20, a second-year art student at Willowmere college. \
You are curious, warm and a little impatient. You live with your parents, Jun and Ada Lin, in \
the Lin house on Reed lane: a kitchen with a stove and a fridge, a living room with a sofa and \
a bookshelf, and your bedroom with a bed, a desk and an easel by the window. Your father runs \
the Fernside market pharmacy; your mother teaches music at the college. Your best friend is \
Tamsin Hale, who works mornings at Marigold café and has a secret she has not told you. You \
paint every afternoon you can, usually landscapes of Millbrook park, and you are preparing \
three canvases for the college exhibition at the end of the month. You owe the Thistle supply \
store for a box of oil paints. You know Delphine Ashcombe, who owns Marigold café, by sight; \
you know Wendell Penhallow is running for the town council, and you have not decided whether \
you like him. You are careful with money, you take the long way through the park, and you \
never miss your grandmother's phone call on Sundays. Yesterday you finished the sky of the \
second canvas, argued with your father about the exhibition fee, and promised Tamsin you \
would come to the café after her shift. This morning you woke at 07:00, brushed your teeth, \
ate breakfast with your mother and walked to the college for the 09:00 drawing class. \
Places you know: Lin house (kitchen, living room, bedroom), Marigold café (counter, tables), \
Fernside market (aisles, pharmacy), Willowmere college (studio, classroom, library), Millbrook \
park (pond, benches), Thistle supply store (shop floor), Crooked Lamp bar (bar, back room). \
Answer in JSON only.";

fn agent_call(question: &str) -> Call {
    Call::chat("bench", PREAMBLE, question, Shape::Importance)
}

fn text_call(i: usize, words: &str) -> Call {
    Call {
        max_tokens: Some(32),
        ..Call::chat(
            "bench",
            "You are a helpful assistant.",
            &format!("Item {i}: {words}"),
            Shape::Text,
        )
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn overhead(rt: &tokio::runtime::Runtime, tiny: bool) {
    let gw = gateway(Arc::new(Instant0), 8);
    let call = agent_call("Rate: Mei brushes her teeth.");
    let n = if tiny { 2_000 } else { 50_000 };
    let start = Instant::now();
    rt.block_on(async {
        for _ in 0..n {
            std::hint::black_box(gw.ask(&call).await.unwrap());
        }
    });
    let per = start.elapsed() / n;
    println!(
        "gateway overhead per call, model excluded (hash, 2 events, parse, validate; 2.2 kB prompt): {:.1} µs",
        per.as_secs_f64() * 1e6
    );
}

fn model_speed(rt: &tokio::runtime::Runtime, choice: ModelChoice, tiny: bool) {
    let Some(path) = models::installed(choice) else {
        println!("{choice}: not installed (hamlet models fetch --model {choice}): skipped");
        return;
    };
    let threads: &[u32] = if tiny { &[2] } else { &[1, 2] };
    for &t in threads {
        let mut config = LocalConfig::new(&path, choice.name());
        config.threads = t;
        config.slots = 1;
        let llm = Arc::new(LocalLlm::start(config).unwrap());
        let gw = gateway(llm.clone(), 1);
        // Warm-up, then prompt speed: a cold cache, one generated token.
        let warm = Call { max_tokens: Some(1), ..agent_call("Rate: warm-up.") };
        rt.block_on(gw.ask(&warm)).unwrap();
        let mut prompt_rates = Vec::new();
        let mut gen_rates = Vec::new();
        let rounds = if tiny { 1 } else { 3 };
        for r in 0..rounds {
            llm.clear_cache();
            let before = llm.stats();
            let call = Call { max_tokens: Some(1), ..agent_call(&format!("Rate: round {r}.")) };
            let start = Instant::now();
            rt.block_on(gw.ask(&call)).unwrap();
            let secs = start.elapsed().as_secs_f64();
            let evaluated = llm.stats().prompt_evaluated - before.prompt_evaluated;
            prompt_rates.push(evaluated as f64 / secs);
            // Generation: the same prompt again is all cached; count generated tokens.
            let before = llm.stats();
            let gen = Call {
                max_tokens: Some(if tiny { 8 } else { 48 }),
                ..Call::chat("bench", PREAMBLE, &format!("Round {r}."), Shape::Text)
            };
            let start = Instant::now();
            rt.block_on(gw.ask(&gen)).unwrap();
            let secs = start.elapsed().as_secs_f64();
            let s = llm.stats();
            let generated = s.generated - before.generated;
            let evaluated = s.prompt_evaluated - before.prompt_evaluated;
            let prompt_secs = evaluated as f64 / median(&prompt_rates);
            gen_rates.push(generated as f64 / (secs - prompt_secs).max(1e-3));
        }
        println!(
            "{choice}, {t} thread(s): prompt {:.1} tok/s, generation {:.1} tok/s (median of {rounds})",
            median(&prompt_rates),
            median(&gen_rates)
        );
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn batching(rt: &tokio::runtime::Runtime, choice: ModelChoice) {
    let Some(path) = models::installed(choice) else { return };
    let mut config = LocalConfig::new(&path, choice.name());
    config.slots = 8;
    // A stream for each of eight calls at once.
    config.streams = 8;
    let llm = Arc::new(LocalLlm::start(config).unwrap());
    for n in [1usize, 2, 4, 8] {
        let gw = gateway(llm.clone(), n);
        llm.clear_cache();
        let before = llm.stats();
        let start = Instant::now();
        rt.block_on(async {
            let mut handles = Vec::new();
            for i in 0..n {
                let gw = gw.clone();
                handles.push(tokio::spawn(async move {
                    gw.ask(&text_call(i, "list ten kinds of bread, comma-separated."))
                        .await
                        .unwrap()
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
        });
        let secs = start.elapsed().as_secs_f64();
        let s = llm.stats();
        let generated = s.generated - before.generated;
        let generating = (s.generate_ms - before.generate_ms) as f64 / 1000.0;
        println!(
            "{choice}, {n} call(s) in flight: {:.1} generated tok/s while generating, {:.1} tok/s over the whole wall time ({generated} tokens, {} prompt tokens read one call at a time, {:.1} s)",
            generated as f64 / generating.max(1e-3),
            generated as f64 / secs,
            s.prompt_evaluated - before.prompt_evaluated,
            secs
        );
    }
}

fn prefix_cache(rt: &tokio::runtime::Runtime, choice: ModelChoice) {
    let Some(path) = models::installed(choice) else { return };
    let mut config = LocalConfig::new(&path, choice.name());
    config.slots = 1;
    let llm = Arc::new(LocalLlm::start(config).unwrap());
    let gw = gateway(llm.clone(), 1);
    rt.block_on(gw.ask(&agent_call("Rate: warm-up."))).unwrap();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for r in 0..3 {
        llm.clear_cache();
        let start = Instant::now();
        rt.block_on(gw.ask(&agent_call(&format!("Rate: Mei sees {r} ducks on the pond."))))
            .unwrap();
        cold.push(start.elapsed().as_secs_f64());
        let before = llm.stats();
        let start = Instant::now();
        rt.block_on(gw.ask(&agent_call(&format!("Rate: Tamsin waves at Mei {r} times.")))).unwrap();
        warm.push(start.elapsed().as_secs_f64());
        let s = llm.stats();
        if r == 0 {
            println!(
                "{choice}: the warm call evaluated {} prompt tokens and reused {} from the cache",
                s.prompt_evaluated - before.prompt_evaluated,
                s.prompt_cached - before.prompt_cached
            );
        }
    }
    let (c, w) = (median(&cold), median(&warm));
    println!(
        "{choice}: agent call with a ~400-token stable preamble: cold {c:.2} s, preamble cached {w:.2} s ({:.0}% less)",
        (1.0 - w / c) * 100.0
    );
}

fn embeddings(tiny: bool) {
    let Some(dir) = models::installed(ModelChoice::Embeddings) else {
        println!("embeddings: not installed: skipped");
        return;
    };
    let model = LocalEmbedder::load(&dir).unwrap();
    let texts: Vec<String> = (0..if tiny { 32 } else { 512 })
        .map(|i| format!("Mei Lin is painting the {i}th landscape of Millbrook park near the pond"))
        .collect();
    model.embed(&texts[..8]).unwrap();
    let start = Instant::now();
    model.embed(&texts).unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "embeddings (all-MiniLM-L6-v2, batches of 32): {:.0} texts/s",
        texts.len() as f64 / secs
    );
}

fn main() {
    let tiny = std::env::args().any(|a| a == "--test");
    // HAMLET_BENCH_ONLY=overhead,embeddings,speed,prefix,batching runs only those parts.
    let only = std::env::var("HAMLET_BENCH_ONLY").unwrap_or_default();
    let part = |name: &str| only.is_empty() || only.split(',').any(|p| p == name);
    println!("{}", machine::machine());
    let rt = rt();
    if part("overhead") {
        overhead(&rt, tiny);
    }
    if part("embeddings") {
        embeddings(tiny);
    }
    if tiny {
        model_speed(&rt, ModelChoice::Default, true);
        return;
    }
    for choice in [ModelChoice::Default, ModelChoice::Small] {
        if part("speed") {
            model_speed(&rt, choice, false);
        }
    }
    for choice in [ModelChoice::Default, ModelChoice::Small] {
        if part("prefix") {
            prefix_cache(&rt, choice);
        }
    }
    for choice in [ModelChoice::Small, ModelChoice::Default] {
        if part("batching") {
            batching(&rt, choice);
        }
    }
}
