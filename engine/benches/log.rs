//! Benchmarks of the event log: fold, verify, seek, durable append, fork, and bytes per
//! event, over a synthetic town-shaped recording of a million events (set
//! `HAMLET_BENCH_EVENTS` to change it). Run: `cargo bench -p hamlet-engine --bench log`.
//! Each group prints the machine first; `-- --test` runs everything once, tiny, as CI does.

#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use hamlet_testkit::machine;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hamlet_engine::fold::Town;
use hamlet_engine::history::{export_with_checkpoints, state_at, Moment};
use hamlet_engine::log::open_checked;
use hamlet_engine::rng::SimRng;
use hamlet_engine::store::Store;
use hamlet_engine::synth::{write_recording, SynthSpec};
use hamlet_log::event::NewEvent;
use hamlet_log::Recording;

fn n_events() -> u64 {
    let tiny = std::env::args().any(|a| a == "--test");
    std::env::var("HAMLET_BENCH_EVENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(if tiny {
        20_000
    } else {
        1_000_000
    })
}

/// One recording of the synthetic town in one format version.
struct Format {
    name: &'static str,
    bytes: Vec<u8>,
    with_checkpoints: Vec<u8>,
}

/// The same events in format 1 (uncompressed) and format 2 (compressed): every reading
/// benchmark runs on both, before and after compression in the same run.
struct Data {
    formats: Vec<Format>,
}

fn data() -> &'static Data {
    static DATA: std::sync::OnceLock<Data> = std::sync::OnceLock::new();
    DATA.get_or_init(|| {
        println!("{}", machine::machine());
        let n = n_events();
        let bytes =
            write_recording(SynthSpec { n_events: n, n_agents: 25, seed: 1 }, Vec::new(), |_| {})
                .expect("synthetic recording");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(dir.path()).expect("store");
        store.import(&bytes).expect("import");
        let with_checkpoints = export_with_checkpoints(&store, None, Vec::new()).expect("export");
        let segments: u64 = std::fs::read_dir(dir.path().join("segments"))
            .expect("segments")
            .map(|e| e.expect("entry").metadata().expect("metadata").len())
            .sum();
        let in_format_1 = |bytes: &[u8]| {
            let (rec, report) = open_checked(bytes).expect("open");
            assert!(report.is_clean() && rec.checkpoints_trusted());
            hamlet_log::writer::rewrite(&rec, Vec::new(), "bench", 1).expect("format 1")
        };
        let formats = vec![
            Format {
                name: "format 1",
                bytes: in_format_1(&bytes),
                with_checkpoints: in_format_1(&with_checkpoints),
            },
            Format { name: "format 2, compressed", bytes, with_checkpoints },
        ];
        for f in &formats {
            let rec = Recording::open(&f.with_checkpoints).expect("open");
            let stats = &rec.summary().statistics;
            println!(
                "size, {}: {} events; {:.1} bytes per event in a recording without checkpoints, \
                 {:.1} with ({} checkpoints)",
                f.name,
                stats.n_events,
                f.bytes.len() as f64 / stats.n_events as f64,
                f.with_checkpoints.len() as f64 / stats.n_events as f64,
                rec.summary().checkpoints.len(),
            );
        }
        println!(
            "size, store segments (uncompressed): {:.1} bytes per event",
            segments as f64 / n as f64
        );
        Data { formats }
    })
}

fn fold(c: &mut Criterion) {
    let mut group = c.benchmark_group("fold");
    for f in &data().formats {
        // Verified once at open, as the viewer and `hamlet replay` do: reads then trust the
        // chunk hashes verify checked.
        let (rec, report) = Recording::open_verified(&f.bytes).expect("open");
        assert!(report.is_clean());
        let root = rec.root().expect("root").id;
        let n = rec.summary().statistics.n_events;
        group.sample_size(10).throughput(Throughput::Elements(n));
        group.bench_function(format!("decode and fold every event, one core, {}", f.name), |b| {
            b.iter(|| {
                let mut town = Town::default();
                rec.for_each_stored(root, 0, u64::MAX, |_, event| {
                    town.apply_stored(event);
                    true
                })
                .expect("events");
                black_box(town.n_events)
            })
        });
    }
    group.finish();
}

fn verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("verify");
    for f in &data().formats {
        let n = Recording::open(&f.bytes).expect("open").summary().statistics.n_events;
        group.sample_size(10).throughput(Throughput::Elements(n));
        group.bench_function(format!("every check, all cores, {}", f.name), |b| {
            b.iter(|| assert!(hamlet_log::verify::verify(black_box(&f.bytes)).is_clean()))
        });
        // What a reader does before it starts a seek at a checkpoint: verify, then fold
        // every event and compare the state at each checkpoint.
        group.bench_function(
            format!("every check and every checkpoint's state re-derived, {}", f.name),
            |b| {
                b.iter(|| {
                    let (rec, report) = open_checked(black_box(&f.with_checkpoints)).expect("open");
                    assert!(report.is_clean() && rec.checkpoints_trusted());
                })
            },
        );
    }
    group.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn seek(c: &mut Criterion) {
    let mut group = c.benchmark_group("seek");
    for f in &data().formats {
        seek_in(&mut group, f);
    }
    group.finish();
}

#[expect(clippy::disallowed_methods, reason = "a benchmark measures wall time")]
fn seek_in(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    f: &Format,
) {
    let (rec, report) = open_checked(&f.with_checkpoints).expect("open");
    assert!(report.is_clean() && rec.checkpoints_trusted());
    let root = rec.root().expect("root").id;
    let head = rec.branch(root).expect("branch").head_seq;
    let mut rng = SimRng::stream(5, &["seek"]);
    let mut warm = Vec::new();
    for _ in 0..300 {
        let seq = rng.int_inclusive(0, head);
        let start = Instant::now();
        black_box(state_at(&rec, root, Moment::Seq(seq)).expect("seek"));
        warm.push(start.elapsed());
    }
    warm.sort();
    // Cold: open the file's summary and seek, with no verification, every chunk hashed as
    // it is read, and no checkpoint trusted: the fold starts at the first event.
    let mut cold = Vec::new();
    for _ in 0..30 {
        let seq = rng.int_inclusive(0, head);
        let start = Instant::now();
        let rec = Recording::open(&f.with_checkpoints).expect("open");
        black_box(state_at(&rec, root, Moment::Seq(seq)).expect("seek"));
        cold.push(start.elapsed());
    }
    cold.sort();
    println!(
        "seek, {}: warm p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over 300 random moments; \
         cold (open + seek) p50 {:.2} ms, p99 {:.2} ms",
        f.name,
        percentile(&warm, 0.5).as_secs_f64() * 1e3,
        percentile(&warm, 0.99).as_secs_f64() * 1e3,
        warm.last().expect("samples").as_secs_f64() * 1e3,
        percentile(&cold, 0.5).as_secs_f64() * 1e3,
        percentile(&cold, 0.99).as_secs_f64() * 1e3,
    );
    group.sample_size(20);
    let name = format!("state at a random seq, from the nearest checkpoint, {}", f.name);
    group.bench_function(name, |b| {
        b.iter(|| {
            let seq = rng.int_inclusive(0, head);
            black_box(state_at(&rec, root, Moment::Seq(seq)).expect("seek"))
        })
    });
}

fn small_events(n: usize, time: &mut u64) -> Vec<NewEvent> {
    let mut rng = SimRng::stream(*time, &["bench events"]);
    hamlet_engine::synth::steps_and_moves(&mut rng, time, n, 25, 26)
}

fn append(c: &mut Criterion) {
    let _ = data();
    let mut group = c.benchmark_group("append");
    group.sample_size(10);
    for batch in [100usize, 1000, 5000] {
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(
            BenchmarkId::new("durable batch (one fdatasync)", batch),
            &batch,
            |b, &batch| {
                let dir = tempfile::tempdir().expect("tempdir");
                let mut store = Store::open(dir.path()).expect("store");
                let root = store.create_root("main").expect("root");
                let mut time = 0;
                b.iter(|| {
                    let events = small_events(batch, &mut time);
                    black_box(store.append_durable(root, &events).expect("append"))
                })
            },
        );
    }
    group.finish();
}

fn fork(c: &mut Criterion) {
    let d = data();
    let n = Recording::open(&d.formats[0].bytes).expect("open").summary().statistics.n_events;
    let mut group = c.benchmark_group("fork");
    group.sample_size(10);
    for len in [n / 100, n / 10, n] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(dir.path()).expect("store");
        let root = store.create_root("main").expect("root");
        let mut time = 0;
        let mut left = len as usize;
        while left > 0 {
            let k = left.min(20_000);
            store.append_durable(root, &small_events(k, &mut time)).expect("append");
            left -= k;
        }
        let mut i = 0u64;
        group.bench_with_input(
            BenchmarkId::new("fork at the middle of a log of", len),
            &len,
            |b, &len| {
                b.iter(|| {
                    i += 1;
                    black_box(store.fork(root, len / 2, &format!("f{i}")).expect("fork"))
                })
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = fold, verify, seek, append, fork
}
criterion_main!(benches);
