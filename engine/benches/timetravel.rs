//! The time-travel tools' numbers, over a run of the shipped town (10 agents) made with the
//! instant rule-based test double (its events are shaped as a real run's: plans, model
//! calls, retrievals, conversations), or over a recording given in `HAMLET_BENCH_RECORDING`:
//!
//! 1. **seek**: the town's state at random moments (`state_at`), p50 and p99;
//! 2. **queries**: `Past::new` + `town()` and `agent()` at random moments;
//! 3. **fork** at the start, middle and end of the log (constant: one event and a sync);
//! 4. **"why?"** on the longest causal chain among the run's actions;
//! 5. **replay**: events folded per second, decoded and straight from the store's bytes.
//!
//! Run: `cargo bench -p hamlet-engine --bench timetravel` (`HAMLET_BENCH_STEPS` sets the
//! run's steps, default 720 = two simulated hours; `-- --test` is CI's tiny run).

use hamlet_testkit::{machine, rules};

use std::sync::Arc;
use std::time::{Duration, Instant};

use hamlet_engine::fold::Town;
use hamlet_engine::history::{state_at, Moment};
use hamlet_engine::query::Past;
use hamlet_engine::rng::SimRng;
use hamlet_engine::sim::{Sim, SimSettings};
use hamlet_engine::store::Store;
use hamlet_engine::why::CauseIndex;
use hamlet_gateway::{Gateway, Params, RetryPolicy};
use hamlet_log::{Body, Event};

use rules::{LetterEmbedder, RuleModel};

#[expect(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let clock = Instant::now();
    let out = f();
    (clock.elapsed(), out)
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let tiny = std::env::args().any(|a| a == "--test");
    println!("{}", machine::machine());
    let steps: u64 = std::env::var("HAMLET_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if tiny { 12 } else { 720 });
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(tmp.path()).expect("store");
    let branch = match std::env::var("HAMLET_BENCH_RECORDING") {
        Ok(path) => {
            let bytes = std::fs::read(&path).expect("the recording reads");
            store.import(&bytes).expect("the recording imports");
            println!("recording: {path}");
            store.branches().first().expect("a branch").id
        }
        Err(_) => {
            let town = hamlet_engine::town::load(
                &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("towns/willowmere.toml"),
            )
            .expect("the shipped town loads");
            let gateway = Gateway::new(
                Arc::new(RuleModel),
                Arc::new(LetterEmbedder),
                Params::default(),
                RetryPolicy::default(),
                4,
            );
            let rt =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
            let (took, (s, b)) = timed(|| {
                rt.block_on(async {
                    let mut sim =
                        Sim::start(store, "main", town, 1, gateway, SimSettings::default())
                            .await
                            .expect("start");
                    for _ in 0..steps {
                        sim.step().await.expect("step");
                    }
                    let b = sim.branch();
                    (sim, b)
                })
            });
            println!(
                "run: Willowmere, {steps} steps with the rule-based double, made in {took:.1?}"
            );
            store = s.into_store();
            b
        }
    };
    let head = store.branch(branch).expect("branch").head_seq;
    let events: Vec<Event> = store.events(branch, 0, head).expect("events");
    println!(
        "log: {} events, {} to {}",
        events.len(),
        hamlet_engine::describe::sim_time(events[0].sim_time_secs()),
        hamlet_engine::describe::sim_time(events[events.len() - 1].sim_time_secs())
    );
    let mut rng = SimRng::stream(7, &["bench", "timetravel"]);
    let samples = if tiny { 5 } else { 50 };
    let moments: Vec<u64> = (0..samples).map(|_| rng.int_inclusive(0, head)).collect();

    // 1. Seek.
    let mut seeks: Vec<Duration> = moments
        .iter()
        .map(|&seq| timed(|| state_at(&store, branch, Moment::Seq(seq)).expect("seek")).0)
        .collect();
    println!(
        "seek (state_at) at {samples} random moments: p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&mut seeks, 0.5)),
        ms(percentile(&mut seeks, 0.99))
    );

    // 2. Queries.
    let mut towns = Vec::new();
    let mut agents = Vec::new();
    for &seq in &moments {
        let cut = Past::cut(&events, seq);
        let (t, past) = timed(|| {
            let past = Past::new(cut);
            let _ = past.town();
            past
        });
        towns.push(t);
        if let Some(&agent) = past.agents().keys().next() {
            agents.push(timed(|| past.agent(agent)).0);
        }
    }
    println!(
        "query: fold to a random moment + town(): p50 {:.2} ms, p99 {:.2} ms; agent() after it: p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&mut towns, 0.5)),
        ms(percentile(&mut towns, 0.99)),
        ms(percentile(&mut agents, 0.5)),
        ms(percentile(&mut agents, 0.99))
    );

    // 3. Fork.
    let mut forks = Vec::new();
    for (i, seq) in [0, head / 2, head].into_iter().enumerate() {
        let (t, _) = timed(|| store.fork(branch, seq, &format!("bench-{i}")).expect("fork"));
        forks.push(format!("#{seq} {:.2} ms", ms(t)));
    }
    println!("fork (one event and a sync) at {}", forks.join(", "));

    // 4. Why, on the longest chain.
    let history = CauseIndex::new(&events);
    let actions: Vec<&Event> =
        events.iter().filter(|e| matches!(e.body, Body::ActionStarted(_))).collect();
    let mut longest = None;
    let mut most = 0;
    for e in actions.iter().step_by((actions.len() / 200).max(1)) {
        let Body::ActionStarted(a) = &e.body else { continue };
        if let Ok(why) = history.why(a.agent, e.seq(), 10_000) {
            if why.graph.node_count() > most {
                most = why.graph.node_count();
                longest = Some((a.agent, e.seq()));
            }
        }
    }
    if let Some((agent, seq)) = longest {
        let mut times: Vec<Duration> = (0..if tiny { 3 } else { 20 })
            .map(|_| timed(|| history.why(agent, seq, 10_000).expect("why")).0)
            .collect();
        println!(
            "why on the longest chain ({most} events, {} at #{seq}): p50 {:.2} ms (CauseIndex::new over the log: {:.1} ms)",
            history.name(agent),
            ms(percentile(&mut times, 0.5)),
            ms(timed(|| CauseIndex::new(&events)).0)
        );
    }

    // 5. Replay.
    let (t, town) = timed(|| {
        let mut town = Town::default();
        for e in &events {
            town.apply(e);
        }
        town
    });
    let decoded = events.len() as f64 / t.as_secs_f64();
    let (t2, _) = timed(|| {
        let mut town = Town::default();
        store
            .for_each_stored(branch, 0, head, |_, e| {
                town.apply_stored(e);
                true
            })
            .expect("fold");
        town
    });
    println!(
        "replay: {:.2} M events/s folding decoded events, {:.2} M events/s from the store's bytes (state {})",
        decoded / 1e6,
        events.len() as f64 / t2.as_secs_f64() / 1e6,
        town.state_hash()
    );
}
