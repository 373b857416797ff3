//! The agent loop's numbers, over the shipped town (Willowmere, 10 agents):
//!
//! 1. **engine time per agent-step** with an instant rule-based test double for the model
//!    and the embeddings: everything but the model (prompts, folds, retrieval, the log);
//! 2. **model calls and tokens per agent per simulated hour, by purpose**, from the same run
//!    (the double says yes to every reaction, so conversations are as frequent as the
//!    loop's own limits allow: a worst case);
//! 3. **wall time against a loopback HTTP server that takes 200 ms per request**, compared
//!    with the serial sum of those 200 ms (what a loop that waits for one call at a time
//!    would take).
//!
//! 4. **a big generated town** (`hamlet town generate`, `HAMLET_BENCH_AGENTS`, default 1,000)
//!    with the instant double: engine time per agent-step, simulated half hour by half
//!    hour, with the process's resident memory (`HAMLET_BENCH_HOURS`, default 1); or, with
//!    `HAMLET_BENCH_SERVER_MS=200`, against the loopback server answering every request in
//!    that time (`HAMLET_BENCH_IN_FLIGHT` requests allowed at once, default 256): wall time
//!    per step, requests per second, requests in flight (mean and most, sampled every
//!    50 ms) and processor time per agent-step (the engine's and the in-process server's).
//!
//! Run: `cargo bench -p hamlet-engine --bench agents` (`HAMLET_BENCH_STEPS` sets the steps of
//! part 1, default 360 = one simulated hour; `HAMLET_BENCH_ONLY=big` runs part 4 alone;
//! `HAMLET_BENCH_SAVE=FILE` keeps part 4's recording; `-- --test` is CI's tiny run: 100 and
//! 1,000 agents for a few steps).

use hamlet_testkit::{loopback, machine, rules};

use std::sync::Arc;
use std::time::{Duration, Instant};

use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::town::Definition;
use hamlet_gateway::cost;
use hamlet_gateway::openai::{Endpoint, OpenAi, OpenAiEmbed};
use hamlet_gateway::{Gateway, Params, RetryPolicy};

use loopback::{LoopbackServer, Reply};
use rules::{over_http, LetterEmbedder, RuleModel};

fn town() -> Definition {
    hamlet_engine::town::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/willowmere.toml"),
    )
    .expect("the shipped town loads")
}

/// The benchmarks' runtime: two worker threads, as the machine has two cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A gateway to the instant rule-based double, with `in_flight` calls at once.
fn instant(in_flight: usize) -> Gateway {
    Gateway::new(
        Arc::new(RuleModel),
        Arc::new(LetterEmbedder),
        Params::default(),
        RetryPolicy::default(),
        in_flight,
    )
}

/// Runs `steps` steps of the town through `gateway`; returns the wall time of the steps
/// (seed memories excluded) and the run's events.
fn run(gateway: Gateway, steps: u64) -> (Duration, Vec<hamlet_log::Event>) {
    let rt = runtime();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path()).expect("store");
    rt.block_on(async {
        let mut sim = Sim::start(store, "main", town(), 1, gateway, SimSettings::default())
            .await
            .expect("start");
        #[expect(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
        let clock = Instant::now();
        for _ in 0..steps {
            sim.step().await.expect("step");
        }
        let took = clock.elapsed();
        let head = sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq);
        (took, sim.store().events(sim.branch(), 0, head).expect("events"))
    })
}

/// The process's resident memory, from `/proc/self/status` (Linux), in MiB.
fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The process's processor time so far (user and system, every thread), in seconds, from
/// `/proc/self/stat` (Linux).
fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // Clock ticks per second: 100 on Linux for every architecture Hamlet builds on.
    Some(ticks / 100.0)
}

/// Part 4's model: the instant double, or the loopback server answering every request after
/// `latency`, `in_flight` requests allowed at once.
#[derive(Clone, Copy)]
enum Model {
    Instant,
    Server { latency: Duration, in_flight: usize },
}

/// Part 4: a generated town of `agents` for `steps` steps, printed every `every` steps.
#[expect(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
fn big_town(agents: usize, steps: u64, every: u64, model: Model) {
    let text = hamlet_engine::town::generate::generate(&hamlet_engine::town::generate::Spec {
        agents,
        seed: 1,
        name: "Greater Willowmere".into(),
    });
    let town = Definition::parse("generated", &text).expect("a generated town is valid");
    let rt = runtime();
    let server = match model {
        Model::Instant => None,
        Model::Server { latency, .. } => {
            let server = rt.block_on(LoopbackServer::start(
                vec![],
                Reply::Slow(latency, Box::new(Reply::Rules(over_http))),
            ));
            server.keep_requests(false);
            Some(Arc::new(server))
        }
    };
    let gateway = match (model, &server) {
        (Model::Server { in_flight, .. }, Some(server)) => {
            let endpoint = |model: &str| Endpoint {
                base_url: server.base_url(),
                api_key: "sk-loopback".into(),
                model: model.into(),
            };
            Gateway::new(
                Arc::new(OpenAi::new(endpoint("rules")).expect("client")),
                Arc::new(OpenAiEmbed::new(endpoint("letters")).expect("client")),
                Params::default(),
                RetryPolicy { timeout: Duration::from_secs(60), ..RetryPolicy::default() },
                in_flight,
            )
        }
        _ => instant(64),
    };
    match model {
        Model::Instant => println!("{agents} agents, the instant double"),
        Model::Server { latency, in_flight } => println!(
            "{agents} agents against the loopback server: {} ms per request, {in_flight} \
             requests allowed in flight",
            latency.as_millis()
        ),
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(tmp.path()).expect("store");
    rt.block_on(async {
        // The requests in flight, sampled every 50 ms: (samples, their sum, the most).
        let sampled = Arc::new(std::sync::Mutex::new((0u64, 0u64, 0usize)));
        let sampler = server.clone().map(|server| {
            let sampled = sampled.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let n = server.in_flight();
                    let mut s = sampled.lock().expect("samples");
                    *s = (s.0 + 1, s.1 + n as u64, s.2.max(n));
                }
            })
        });
        let requests = || server.as_ref().map_or(0, |s| s.count());
        let clock = Instant::now();
        let mut sim = Sim::start(store, "main", town, 1, gateway, SimSettings::default())
            .await
            .expect("start");
        let head = |sim: &Sim<_>| sim.store().branch(sim.branch()).map_or(0, |b| b.head_seq);
        println!(
            "  seed memories in {:.1} s, {} events; {:.0} MiB resident",
            clock.elapsed().as_secs_f64(),
            head(&sim) + 1,
            rss_mib().unwrap_or(0.0)
        );
        let (mut done, run_clock, run_requests) = (0, Instant::now(), requests());
        while done < steps {
            let n = every.min(steps - done);
            let (before, clock, cpu, asked) =
                (head(&sim), Instant::now(), cpu_secs().unwrap_or(0.0), requests());
            *sampled.lock().expect("samples") = (0, 0, 0);
            for _ in 0..n {
                sim.step().await.expect("step");
            }
            done += n;
            let took = clock.elapsed().as_secs_f64();
            let per_agent_step = |secs: f64| secs * 1e3 / (n as f64 * agents as f64);
            let at = hamlet_engine::describe::sim_time(sim.state().sim_time_secs);
            let events = head(&sim) - before;
            let rss = rss_mib().unwrap_or(0.0);
            match model {
                Model::Instant => println!(
                    "  {done:>5} steps, to {at}: {:.3} ms per agent-step, {events} events, \
                     {rss:.0} MiB resident",
                    per_agent_step(took),
                ),
                Model::Server { in_flight, .. } => {
                    let (samples, sum, most) = *sampled.lock().expect("samples");
                    let asked = requests() - asked;
                    let cpu = cpu_secs().unwrap_or(0.0) - cpu;
                    println!(
                        "  {done:>5} steps, to {at}: {:.2} s per step, {asked} requests \
                         ({:.0}/s), in flight {:.0} on average, {most} at most (of \
                         {in_flight}); processor {:.3} ms per agent-step (the engine and the \
                         server); {events} events, {rss:.0} MiB resident",
                        took / n as f64,
                        asked as f64 / took,
                        sum as f64 / samples.max(1) as f64,
                        per_agent_step(cpu),
                    );
                }
            }
        }
        if let Some(sampler) = sampler {
            sampler.abort();
            let took = run_clock.elapsed().as_secs_f64();
            let asked = requests() - run_requests;
            println!(
                "  the run: {done} steps in {:.0} s, {asked} requests ({:.0}/s)",
                took,
                asked as f64 / took
            );
        }
        // The day as a recording: its size, and reading it back.
        let clock = Instant::now();
        let bytes = sim.store().export(Some(sim.branch()), Vec::new()).expect("export");
        let wrote = clock.elapsed().as_secs_f64();
        if let Ok(path) = std::env::var("HAMLET_BENCH_SAVE") {
            std::fs::write(&path, &bytes).expect("save the recording");
            println!("recording saved to {path}");
        }
        // Simulated time, not steps: a step of a sleeping town may skip ahead.
        let hours = (sim.state().sim_time_secs - sim.definition().start_secs) as f64 / 3600.0;
        let agent_hours = agents as f64 * hours;
        let clock = Instant::now();
        let (rec, report) = hamlet_log::Recording::open_verified(&bytes).expect("open");
        assert!(report.is_clean(), "{:?}", report.problems);
        let verified = clock.elapsed().as_secs_f64();
        let v1 = hamlet_log::writer::rewrite(&rec, Vec::new(), "bench", 1).expect("format 1");
        let clock = Instant::now();
        let mut folded = hamlet_engine::fold::Town::default();
        rec.for_each_stored(sim.branch(), 0, u64::MAX, |_, e| {
            folded.apply_stored(e);
            true
        })
        .expect("fold");
        let fold = clock.elapsed().as_secs_f64();
        let n = folded.n_events as f64;
        println!(
            "recording: {n} events over {hours:.2} simulated hours, {:.1} MiB ({:.1} KB per \
             agent-hour; format 1: {:.1} KB), \
             exported in {wrote:.1} s; verify {:.2} s per million events; fold {:.1} M events/s",
            bytes.len() as f64 / f64::from(1 << 20),
            bytes.len() as f64 / 1e3 / agent_hours,
            v1.len() as f64 / 1e3 / agent_hours,
            verified / n * 1e6,
            n / fold / 1e6,
        );
    });
}

fn main() {
    let tiny = std::env::args().any(|a| a == "--test");
    println!("{}", machine::machine());
    if std::env::var("HAMLET_BENCH_ONLY").is_ok_and(|v| v == "big") {
        let agents = std::env::var("HAMLET_BENCH_AGENTS").ok().and_then(|s| s.parse().ok());
        let hours: f64 =
            std::env::var("HAMLET_BENCH_HOURS").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
        let latency = std::env::var("HAMLET_BENCH_SERVER_MS").ok().and_then(|s| s.parse().ok());
        let in_flight = std::env::var("HAMLET_BENCH_IN_FLIGHT").ok().and_then(|s| s.parse().ok());
        let model = match latency {
            Some(ms) => Model::Server {
                latency: Duration::from_millis(ms),
                in_flight: in_flight.unwrap_or(256),
            },
            None => Model::Instant,
        };
        big_town(agents.unwrap_or(1000), (hours * 360.0) as u64, 180, model);
        return;
    }
    let agents = town().personas.len() as f64;

    // 1 and 2: the instant double.
    let steps: u64 = std::env::var("HAMLET_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if tiny { 12 } else { 360 });
    let gateway = instant(16);
    let (took, events) = run(gateway, steps);
    let per = took.as_secs_f64() / (steps as f64 * agents);
    println!(
        "engine: {steps} steps × {agents} agents in {:.2} s: {:.2} ms per agent-step (instant model)",
        took.as_secs_f64(),
        per * 1e3
    );
    let hours = steps as f64 * f64::from(town().seconds_per_step) / 3600.0;
    // Calls after the seed memories: what an hour of the loop costs.
    let first_tick = events
        .iter()
        .position(|e| matches!(e.body, hamlet_log::Body::ClockStepped(_)))
        .unwrap_or(0);
    let report = cost::report(
        events[first_tick..].iter().map(|e| (e.sim_time_secs(), &e.body)),
        &Default::default(),
    );
    let per_agent_hour = |n: u64| n as f64 / agents / hours;
    println!(
        "model calls per agent per simulated hour: {:.1} ({:.0} prompt + {:.0} completion tokens); \
         embedding calls {:.1}",
        per_agent_hour(report.total.calls),
        per_agent_hour(report.total.prompt_tokens),
        per_agent_hour(report.total.completion_tokens),
        per_agent_hour(report.total.embeddings),
    );
    for (purpose, t) in &report.by_purpose {
        if t.calls > 0 {
            println!("  {purpose:<22} {:>6.2} calls", per_agent_hour(t.calls));
        }
    }
    let seeds = cost::report(
        events[..first_tick].iter().map(|e| (e.sim_time_secs(), &e.body)),
        &Default::default(),
    );
    println!(
        "  (seed memories, once per run: {:.1} calls per agent)",
        seeds.total.calls as f64 / agents
    );

    // 3: a server that takes 200 ms per request.
    let latency = Duration::from_millis(200);
    let steps = if tiny { 2 } else { 30 };
    let rt = runtime();
    let server = rt.block_on(LoopbackServer::start(
        vec![],
        Reply::Slow(latency, Box::new(Reply::Rules(over_http))),
    ));
    let endpoint = |model: &str| Endpoint {
        base_url: server.base_url(),
        api_key: "sk-loopback".into(),
        model: model.into(),
    };
    let gateway = Gateway::new(
        Arc::new(OpenAi::new(endpoint("rules")).expect("client")),
        Arc::new(OpenAiEmbed::new(endpoint("letters")).expect("client")),
        Params::default(),
        RetryPolicy { timeout: Duration::from_secs(30), ..RetryPolicy::default() },
        16,
    );
    let (took, _) = run(gateway, steps);
    let requests = server.requests().len() as f64;
    let serial = requests * latency.as_secs_f64();
    println!(
        "10 agents, {steps} steps, against a 200 ms server: {:.1} s wall for {requests} requests \
         (serial sum {:.1} s): {:.1}× faster than one call at a time",
        took.as_secs_f64(),
        serial,
        serial / took.as_secs_f64()
    );
    drop(rt);
    if tiny {
        // CI's tiny run of part 4: 100 and 1,000 agents, a few steps each.
        big_town(100, 6, 3, Model::Instant);
        big_town(1000, 2, 1, Model::Instant);
        let server = Model::Server { latency: Duration::from_millis(200), in_flight: 256 };
        big_town(1000, 2, 1, server);
    } else {
        println!("a big town: HAMLET_BENCH_ONLY=big (HAMLET_BENCH_AGENTS, HAMLET_BENCH_HOURS)");
    }
}
