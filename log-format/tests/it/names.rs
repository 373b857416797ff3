//! Goal: a branch is listed under its current name — the last `BranchRenamed` among its
//! own events, else its `BranchCreated`'s — by the writer's summary, `verify` and
//! `recover`; an ancestor's rename never names a fork. Method: recordings written by hand
//! with renames before and after fork points, in several chunks, whole and cut.

use hamlet_log::event::{BranchCreated, BranchRenamed, ClockStepped, NewEvent};
use hamlet_log::format::ChunkBuilder;
use hamlet_log::samples::small_recording;
use hamlet_log::verify::{recover, verify, Outcome};
use hamlet_log::{Body, BranchId, EventId, Recording, RecordingWriter};

fn step(time: u64, step: u64) -> NewEvent {
    NewEvent::new(time, Body::ClockStepped(ClockStepped { step }))
}

fn rename(time: u64, name: &str) -> NewEvent {
    NewEvent::new(time, Body::BranchRenamed(BranchRenamed { name: name.into() }))
}

fn created(time: u64, name: &str, parent: Option<(BranchId, u64)>) -> NewEvent {
    NewEvent::new(
        time,
        Body::BranchCreated(BranchCreated {
            name: name.into(),
            parent_branch: parent.map(|p| p.0),
            fork_seq: parent.map(|p| p.1),
            nonce: 0,
        }),
    )
}

/// Pushes `events` from `*seq` on, returning each id.
fn push(chunk: &mut ChunkBuilder, seq: &mut u64, events: &[NewEvent]) -> Vec<EventId> {
    events
        .iter()
        .map(|e| {
            let id = chunk.push(&e.encode(*seq));
            *seq += 1;
            id
        })
        .collect()
}

/// A root created `main`, renamed `high-street` at #2, in two chunks; a fork `what-if` after
/// the rename (#3), renamed `plan-b` then `plan-c` across its two chunks; and a fork `early`
/// before it (#1), never renamed. Chunks in that order.
fn renamed_recording() -> Vec<u8> {
    let mut out = RecordingWriter::new(Vec::new(), "names test").unwrap();
    let (root, mut chunk) = ChunkBuilder::new_branch(&created(0, "main", None), EventId::NONE, 0);
    let mut seq = 1;
    let ids = push(&mut chunk, &mut seq, &[step(10, 1)]);
    let at_1 = ids[0];
    out.write_chunk(&chunk.finish().1).unwrap();
    let mut chunk = ChunkBuilder::new(root, at_1, seq);
    let ids = push(&mut chunk, &mut seq, &[rename(10, "high-street"), step(20, 2)]);
    let at_3 = ids[1];
    out.write_chunk(&chunk.finish().1).unwrap();

    let (fork, mut chunk) =
        ChunkBuilder::new_branch(&created(20, "what-if", Some((root, 3))), at_3, 4);
    let mut seq = 5;
    let ids = push(&mut chunk, &mut seq, &[step(30, 3), rename(30, "plan-b")]);
    out.write_chunk(&chunk.finish().1).unwrap();
    let mut chunk = ChunkBuilder::new(fork, ids[1], seq);
    push(&mut chunk, &mut seq, &[rename(30, "plan-c"), step(40, 4)]);
    out.write_chunk(&chunk.finish().1).unwrap();

    let (_, mut chunk) = ChunkBuilder::new_branch(&created(10, "early", Some((root, 1))), at_1, 2);
    let mut seq = 3;
    push(&mut chunk, &mut seq, &[step(20, 2)]);
    out.write_chunk(&chunk.finish().1).unwrap();
    out.finish().unwrap()
}

fn names(bytes: &[u8]) -> Vec<String> {
    Recording::open(bytes).unwrap().branches().iter().map(|b| b.name.clone()).collect()
}

#[test]
fn a_renamed_branch_is_listed_and_found_by_its_new_name_only() {
    let bytes = small_recording();
    let report = verify(&bytes);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(names(&bytes), ["market-day", "what-if"]);
    let rec = Recording::open(&bytes).unwrap();
    assert!(rec.find_branch("main").is_none(), "the name it was created with is gone");
    let root = rec.find_branch("market-day").unwrap();
    assert_eq!(rec.find_branch("what-if").unwrap().parent, Some(root.id));
}

#[test]
fn a_fork_keeps_its_own_name_whatever_its_parent_was_renamed_before_the_fork_point() {
    let bytes = renamed_recording();
    let report = verify(&bytes);
    assert!(report.is_clean(), "{:?}", report.problems);
    // The root's rename (#2) is in `what-if`'s history, and not its name; `what-if` takes
    // the last of its own two renames, in its second chunk.
    assert_eq!(names(&bytes), ["high-street", "plan-c", "early"]);
    let rec = Recording::open(&bytes).unwrap();
    let fork = rec.find_branch("plan-c").unwrap();
    let history: Vec<Body> = rec.events(fork.id, 0).unwrap().map(|e| e.unwrap().body).collect();
    assert!(history.contains(&Body::BranchRenamed(BranchRenamed { name: "high-street".into() })));
    assert!(rec.find_branch("what-if").is_none() && rec.find_branch("plan-b").is_none());
    // A recording made again from these bytes (recover of a sound file is the file itself;
    // recover of a damaged one rewrites the summary) names them the same.
    assert_eq!(recover(&bytes, "test").outcome, Outcome::Clean);
}

#[test]
fn a_recording_cut_before_a_rename_names_the_branch_as_it_was_then() {
    let bytes = renamed_recording();
    let rec = Recording::open(&bytes).unwrap();
    let chunks = &rec.summary().chunks;
    // Cut inside the root's second chunk (the one holding its rename): recover keeps the
    // first, whose branch is still `main`.
    let cut = (chunks[1].offset + chunks[1].len_bytes / 2) as usize;
    let recovered = recover(&bytes[..cut], "test");
    assert_eq!(recovered.outcome, Outcome::Prefix);
    assert!(verify(&recovered.bytes).is_clean());
    assert_eq!(names(&recovered.bytes), ["main"]);
    // Cut inside `what-if`'s second chunk: its first rename names it.
    let cut = (chunks[3].offset + chunks[3].len_bytes / 2) as usize;
    let recovered = recover(&bytes[..cut], "test");
    assert!(verify(&recovered.bytes).is_clean());
    assert_eq!(names(&recovered.bytes), ["high-street", "plan-b"]);
}
