//! Goal: the store agrees with a plain model after any sequence of operations.
//! Method: proptest draws appends, forks, renames, reopens, index deletions, export/import
//! round trips and checks, run on the real store and on a `Vec` of ids and a name per
//! branch.

use hamlet_engine::rng::SimRng;
use hamlet_engine::store::Store;
use hamlet_log::verify::verify;
use hamlet_log::{BranchId, EventId};
use proptest::prelude::*;

use crate::support::batch;

#[derive(Debug, Clone)]
enum Op {
    Append { branch: usize, n: usize },
    Fork { branch: usize, at_per_mille: u64 },
    Rename { branch: usize },
    Reopen,
    DropIndex,
    ExportImport,
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4usize, 1..40usize).prop_map(|(branch, n)| Op::Append { branch, n }),
        2 => (0..4usize, 0..1000u64).prop_map(|(branch, at_per_mille)| Op::Fork { branch, at_per_mille }),
        1 => (0..4usize).prop_map(|branch| Op::Rename { branch }),
        1 => Just(Op::Reopen),
        1 => Just(Op::DropIndex),
        1 => Just(Op::ExportImport),
        1 => Just(Op::Check),
    ]
}

/// A branch as the model knows it: every id from the root, each event's time, its name.
struct ModelBranch {
    id: BranchId,
    ids: Vec<EventId>,
    times: Vec<u64>,
    name: String,
}

fn assert_agrees(store: &Store, model: &[ModelBranch]) {
    assert_eq!(store.branches().len(), model.len(), "branch count");
    for b in model {
        let info = store.branch(b.id).expect("branch in store");
        assert_eq!(info.head_seq + 1, b.ids.len() as u64, "head of {}", info.name);
        let ids: Vec<EventId> =
            store.events(b.id, 0, info.head_seq).unwrap().iter().map(|e| e.id).collect();
        assert_eq!(ids, b.ids, "ids of {}", info.name);
        assert_eq!(info.name, b.name, "the name of {}", b.id);
        assert_eq!(store.find_branch(&b.name).unwrap().id, b.id);
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    let mut model =
        vec![ModelBranch { id: root, ids: vec![root.0], times: vec![0], name: "main".into() }];
    let mut n_renames = 0;
    let mut rng = SimRng::stream(7, &["model"]);
    for op in ops {
        match op {
            Op::Append { branch, n } => {
                let len = model.len();
                let b = &mut model[branch % len];
                let mut time = *b.times.last().unwrap();
                let events = batch(&mut rng, &mut time, n);
                let ids = store.append_durable(b.id, &events).unwrap();
                b.times.extend(events.iter().map(|e| e.sim_time_secs));
                b.ids.extend(ids);
            }
            Op::Fork { branch, at_per_mille } => {
                let parent = &model[branch % model.len()];
                let at = (parent.ids.len() as u64 - 1) * at_per_mille / 1000;
                let name = format!("fork-{}", model.len());
                let id = store.fork(parent.id, at, &name).unwrap();
                let keep = at as usize + 1;
                let mut ids = parent.ids[..keep].to_vec();
                let mut times = parent.times[..keep].to_vec();
                ids.push(id.0);
                times.push(parent.times[at as usize]);
                model.push(ModelBranch { id, ids, times, name });
            }
            Op::Rename { branch } => {
                let len = model.len();
                let b = &mut model[branch % len];
                n_renames += 1;
                let name = format!("renamed-{n_renames}");
                let old = store.rename_branch(b.id, &name).unwrap();
                assert_eq!(old, b.name);
                // One event of its own, at its head's time.
                let info = store.branch(b.id).unwrap();
                b.ids.push(info.head_id);
                b.times.push(*b.times.last().unwrap());
                b.name = name;
            }
            Op::Reopen => {
                drop(store);
                store = Store::open(dir.path()).unwrap();
            }
            Op::DropIndex => {
                drop(store);
                std::fs::remove_dir_all(dir.path().join("index")).unwrap();
                store = Store::open(dir.path()).unwrap();
                assert!(store.was_rebuilt());
            }
            Op::ExportImport => {
                let bytes = store.export(None, Vec::new()).unwrap();
                let report = verify(&bytes);
                assert!(report.is_clean(), "{:?}", report.problems);
                let other = tempfile::tempdir().unwrap();
                let mut copy = Store::open(other.path()).unwrap();
                copy.import(&bytes).unwrap();
                assert_agrees(&copy, &model);
                assert_eq!(
                    copy.export(None, Vec::new()).unwrap(),
                    bytes,
                    "export → import → export"
                );
                // Importing again adds nothing and changes nothing.
                assert_eq!(copy.import(&bytes).unwrap(), 0);
            }
            Op::Check => store.check_index().unwrap(),
        }
        assert_agrees(&store, &model);
    }
    store.check_index().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn the_store_agrees_with_a_model(ops in proptest::collection::vec(op(), 1..14)) {
        run(ops);
    }
}

#[test]
fn a_fork_costs_one_event_whatever_the_log_length() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    let mut rng = SimRng::stream(1, &[]);
    let mut time = 0;
    store.append_durable(root, &batch(&mut rng, &mut time, 5000)).unwrap();
    let before = std::fs::read_dir(dir.path().join("segments")).unwrap().count();
    let fork = store.fork(root, 2500, "what-if").unwrap();
    let info = store.branch(fork).unwrap();
    assert_eq!((info.own_events, info.head_seq, info.fork_seq), (1, 2501, Some(2500)));
    let seg = std::fs::read_dir(dir.path().join("segments")).unwrap().count();
    assert_eq!(seg, before + 1, "a fork adds one small segment");
    let sizes: Vec<u64> = std::fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .collect();
    assert!(sizes.iter().any(|&s| s < 512), "the fork's segment holds one event: {sizes:?}");
    // The parent is untouched and still verifies.
    assert_eq!(store.branch(root).unwrap().head_seq, 5000);
    let bytes = store.export(Some(root), Vec::new()).unwrap();
    assert!(verify(&bytes).is_clean());
}

#[test]
fn a_fork_is_deleted_alone_and_a_deletion_cut_short_is_finished_on_open() {
    use hamlet_engine::store::StoreError;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    let mut rng = SimRng::stream(2, &[]);
    let mut time = 0;
    store.append_durable(root, &batch(&mut rng, &mut time, 300)).unwrap();
    let a = store.fork(root, 100, "a").unwrap();
    store.append_durable(a, &batch(&mut rng, &mut time, 50)).unwrap();
    let b = store.fork(a, 120, "b").unwrap();
    let main_bytes = store.export(Some(root), Vec::new()).unwrap();
    // Not a root, not a branch others fork from.
    assert!(matches!(store.delete_branch(root), Err(StoreError::Undeletable { .. })));
    let refused = store.delete_branch(a).unwrap_err().to_string();
    assert!(refused.contains("b fork from it"), "{refused}");
    assert_eq!(store.delete_branch(b).unwrap(), 1);
    assert_eq!(store.delete_branch(a).unwrap(), 51);
    let names: Vec<String> = store.branches().into_iter().map(|x| x.name).collect();
    assert_eq!(names, vec!["main"]);
    assert_eq!(store.export(Some(root), Vec::new()).unwrap(), main_bytes, "main is untouched");
    assert!(store.check_index().is_ok());

    // A crash after the tombstone, before the segments went: finished on open.
    let c = store.fork(root, 200, "c").unwrap();
    store.append_durable(c, &batch(&mut rng, &mut time, 10)).unwrap();
    drop(store);
    let prefix = &c.to_hex()[..32];
    std::fs::File::create(dir.path().join(format!("segments/{prefix}.deleting"))).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(store.find_branch("c").is_err(), "the deletion was finished");
    let left: Vec<String> = std::fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| !n.starts_with(prefix)), "{left:?}");
    assert_eq!(store.export(Some(root), Vec::new()).unwrap(), main_bytes);
}

#[test]
fn names_are_unique_and_seqs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    assert!(store.fork(root, 0, "main").is_err());
    assert!(store.fork(root, 5, "later").is_err());
    let fork = store.fork(root, 0, "later").unwrap();
    assert_eq!(store.find_branch("later").unwrap().id, fork);
    assert_eq!(store.find_branch(&fork.to_hex()[..8]).unwrap().id, fork);
}

#[test]
fn a_second_process_cannot_open_a_store_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let second = Store::open(dir.path());
    assert!(matches!(second, Err(hamlet_engine::store::StoreError::InUse { .. })), "{second:?}");
    drop(store);
    Store::open(dir.path()).unwrap();
}

#[test]
fn every_answer_to_a_request_is_indexed_and_forks_see_their_own() {
    use hamlet_log::event::{Body, LlmResponded, NewEvent};
    let answer = |time: u64, text: &str| {
        NewEvent::new(
            time,
            Body::LlmResponded(LlmResponded {
                request_hash: [9; 32],
                text: text.into(),
                parsed: None,
                fallback: false,
                tokens_prompt: 1,
                tokens_completion: 1,
                latency_ms: 1,
                finish_reason: "stop".into(),
                response_model: "m".into(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: 0,
            }),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let main = store.create_root("main").unwrap();
    store.append_durable(main, &[answer(1, "first")]).unwrap(); // #1
    store.append_durable(main, &[answer(2, "second")]).unwrap(); // #2
    let fork = store.fork(main, 1, "before-the-second").unwrap(); // #2 on the fork
    assert_eq!(store.llm_answer([9; 32], main).unwrap(), Some(2));
    assert_eq!(store.llm_answer([9; 32], fork).unwrap(), Some(1));
    assert_eq!(store.llm_answer([8; 32], main).unwrap(), None);
    store.check_index().unwrap();
    drop(store);
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.llm_answer([9; 32], main).unwrap(), Some(2));
    assert_eq!(store.llm_answer([9; 32], fork).unwrap(), Some(1));
    store.check_index().unwrap();
}

#[test]
fn store_and_recording_seek_alike_by_time_across_forks() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    let mut rng = SimRng::stream(4, &[]);
    let mut time = 0;
    store.append_durable(root, &batch(&mut rng, &mut time, 6000)).unwrap();
    let fork = store.fork(root, 3000, "f").unwrap();
    let mut fork_time = store.branch(fork).unwrap().head_time + 5000;
    store.append_durable(fork, &batch(&mut rng, &mut fork_time, 3000)).unwrap();
    let bytes = store.export(None, Vec::new()).unwrap();
    let rec = hamlet_log::Recording::open(&bytes).unwrap();
    for branch in [root, fork] {
        let end = store.branch(branch).unwrap().head_time + 20;
        for t in (0..end).step_by(97) {
            assert_eq!(
                store.seq_at_time(branch, t).unwrap(),
                rec.seq_at_time(branch, t).unwrap(),
                "{branch} at {t}s"
            );
        }
    }
}

/// Goal: a rename is one durable event, read back however the store is opened, and a
/// refused one writes nothing. Method: a root with a fork made before its rename and one
/// made after it (the rename then in the fork's history), each refusal checked against the
/// segments' bytes, the store reopened, its index dropped and rebuilt, exported and
/// imported.
#[test]
fn a_rename_is_an_event_of_the_branch_kept_by_every_road_and_a_refusal_writes_nothing() {
    use hamlet_engine::store::StoreError;
    use hamlet_log::event::{BranchRenamed, NewEvent};
    use hamlet_log::Body;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let root = store.create_root("main").unwrap();
    let mut rng = SimRng::stream(5, &[]);
    let mut time = 0;
    store.append_durable(root, &batch(&mut rng, &mut time, 40)).unwrap();
    let early = store.fork(root, 20, "early").unwrap();
    let head = store.branch(root).unwrap();

    assert_eq!(store.rename_branch(root, "high-street").unwrap(), "main");
    let renamed = store.branch(root).unwrap();
    assert_eq!((renamed.name.as_str(), renamed.id), ("high-street", root), "the id stays");
    assert_eq!((renamed.head_seq, renamed.head_time), (head.head_seq + 1, head.head_time));
    let event = store.event_at(root, renamed.head_seq).unwrap();
    assert_eq!(event.body, Body::BranchRenamed(BranchRenamed { name: "high-street".into() }));
    assert!(event.header.causes.is_empty());
    assert_eq!(store.find_branch("high-street").unwrap().id, root);
    assert!(matches!(store.find_branch("main"), Err(StoreError::NoBranch(_))));
    // A fork made after the rename has it in its history, and keeps its own name.
    let late = store.fork(root, renamed.head_seq, "late").unwrap();
    assert_eq!(store.branch(late).unwrap().name, "late");
    assert_eq!(store.branch(early).unwrap().name, "early");

    let segments = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut all: Vec<_> = std::fs::read_dir(dir.join("segments"))
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        all.sort();
        all
    };
    let before = segments(dir.path());
    let refused = [
        (root, "early", "a branch named `early` exists already"),
        (root, "", "cannot name a branch ``: a branch's name cannot be empty"),
        (late, "  ", "cannot name a branch `  `: a branch's name cannot be empty"),
        (
            root,
            "high-street",
            "cannot name a branch `high-street`: the branch has that name already",
        ),
        (BranchId(EventId([7; 32])), "new", "no branch `br_070707070707` in this store"),
    ];
    for (branch, name, why) in refused {
        let err = store.rename_branch(branch, name).unwrap_err();
        assert_eq!(err.to_string(), why);
    }
    assert_eq!(segments(dir.path()), before, "a refusal writes nothing");
    // Only `rename_branch` writes a rename: an append of one stops before the segment.
    let append = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let rename = Body::BranchRenamed(BranchRenamed { name: "sneaky".into() });
        store.append_durable(early, &[NewEvent::new(time, rename)])
    }));
    assert!(append.is_err(), "append_durable wrote a BranchRenamed");
    assert_eq!(segments(dir.path()), before);
    store.check_index().unwrap();

    let names = |store: &Store| -> Vec<String> {
        let mut n: Vec<String> = store.branches().into_iter().map(|b| b.name).collect();
        n.sort();
        n
    };
    let expected = ["early", "high-street", "late"];
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert!(!store.was_rebuilt(), "the index was trusted");
    assert_eq!(names(&store), expected);
    drop(store);
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert!(store.was_rebuilt());
    assert_eq!(names(&store), expected, "the scan names branches by their renames");
    store.check_index().unwrap();

    // Exported and imported, the renamed branch keeps its new name; its forks keep theirs.
    let bytes = store.export(None, Vec::new()).unwrap();
    assert!(verify(&bytes).is_clean());
    let listed: Vec<String> = hamlet_log::Recording::open(&bytes)
        .unwrap()
        .branches()
        .iter()
        .map(|b| b.name.clone())
        .collect();
    assert!(listed.contains(&"high-street".to_owned()) && !listed.contains(&"main".to_owned()));
    let other = tempfile::tempdir().unwrap();
    let mut copy = Store::open(other.path()).unwrap();
    copy.import(&bytes).unwrap();
    assert_eq!(names(&copy), expected);
    assert_eq!(copy.find_branch("high-street").unwrap().id, root);
    assert_eq!(copy.export(None, Vec::new()).unwrap(), bytes, "export → import → export");
    copy.check_index().unwrap();
    // Renamed again in the copy: an import of the old export adds nothing, changes no name.
    copy.rename_branch(root, "market-day").unwrap();
    assert_eq!(copy.import(&bytes).unwrap(), 0);
    assert_eq!(copy.branch(root).unwrap().name, "market-day");
}
