//! A store opened to read (`Store::open_read_only`, every command that only reads): nothing
//! in its directory changes, whatever state the store is in, and writes are refused.

use std::collections::BTreeMap;
use std::path::Path;

use hamlet_engine::rng::SimRng;
use hamlet_engine::store::{Repair, Store, StoreError};

use crate::support::batch;

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Fails, naming the files, unless `dir` holds what `before` says: every file byte for byte,
/// but for sled's own files inside `index/`, which its recovery may rewrite on any open (sled
/// has no read-only mode); the index's rows are checked apart ([`index_kept`]).
fn unchanged(dir: &Path, before: &BTreeMap<String, Vec<u8>>) {
    let after = snapshot(dir);
    let ours = |name: &&String| !name.starts_with("index/");
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(ours)
        .filter(|name| before.get(*name) != after.get(*name))
        .collect();
    assert!(changed.is_empty(), "a read-only open changed {changed:?}");
    let has_index = |files: &BTreeMap<String, Vec<u8>>| files.keys().any(|n| !ours(&n));
    assert_eq!(has_index(&after), has_index(before), "a read-only open made or removed the index");
}

/// That the store's own index still agrees with its segments, untouched: a writer opening
/// the store finds nothing to rebuild and the checkpoints it had.
fn index_kept(dir: &Path, checkpoints: &[(hamlet_log::BranchId, u64)]) {
    let store = Store::open(dir).unwrap();
    assert!(!store.was_rebuilt(), "after a read-only open the index had to be rebuilt");
    assert_eq!(store.checkpoints().unwrap(), checkpoints);
}

/// A store of one branch with 3 × 200 events and a fork. Returns main's head, its last
/// segment, and that segment's length and main's head before the last batch.
fn make_store(dir: &Path) -> (u64, String, u64, u64) {
    let mut store = Store::open(dir).unwrap();
    let main = store.create_root("main").unwrap();
    let mut rng = SimRng::stream(7, &["read only"]);
    let mut time = 0;
    for _ in 0..2 {
        store.append_durable(main, &batch(&mut rng, &mut time, 200)).unwrap();
    }
    store.fork(main, 300, "what-if").unwrap();
    let mut segments: Vec<String> = std::fs::read_dir(dir.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&main.to_hex()[..32]))
        .collect();
    segments.sort();
    let last = format!("segments/{}", segments.last().unwrap());
    let len_before = std::fs::metadata(dir.join(&last)).unwrap().len();
    let head_before = store.branch(main).unwrap().head_seq;
    store.append_durable(main, &batch(&mut rng, &mut time, 200)).unwrap();
    store.flush_index().unwrap();
    let head = store.branch(main).unwrap().head_seq;
    (head, last, len_before, head_before)
}

/// Reads everything a read command would and tries each kind of write.
fn read_all_and_try_writes(store: &mut Store) -> u64 {
    assert!(store.is_read_only());
    let main = store.find_branch("main").unwrap();
    let events = store.events(main.id, 0, main.head_seq).unwrap();
    assert_eq!(events.len() as u64, main.head_seq + 1);
    assert!(store.find_branch("what-if").is_ok(), "the fork is read too");
    let refused = |r: Result<(), StoreError>| {
        assert!(matches!(r, Err(StoreError::ReadOnly { .. })), "a write must be refused: {r:?}");
    };
    let mut rng = SimRng::stream(8, &["write"]);
    let mut time = main.head_time;
    refused(store.append_durable(main.id, &batch(&mut rng, &mut time, 3)).map(drop));
    refused(store.fork(main.id, 10, "another").map(drop));
    refused(store.create_root("root2").map(drop));
    refused(store.rename_branch(main.id, "renamed").map(drop));
    refused(store.put_checkpoint(main.id, 10, b"state"));
    refused(store.clear_checkpoints());
    refused(store.rebuild_index());
    main.head_seq
}

#[test]
fn a_store_opened_to_read_is_left_byte_for_byte_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (head, last_segment, len_before, head_before) = make_store(dir.path());

    // 1. Sound, its index current: the index is used, nothing written.
    let checkpoints = {
        let store = Store::open(dir.path()).unwrap();
        let main = store.find_branch("main").unwrap().id;
        store.put_checkpoint(main, 100, b"a state").unwrap();
        store.flush_index().unwrap();
        store.checkpoints().unwrap()
    };
    let before = snapshot(dir.path());
    let mut store = Store::open_read_only(dir.path()).unwrap();
    assert!(!store.was_rebuilt(), "a current index is read, not rebuilt");
    assert_eq!(read_all_and_try_writes(&mut store), head);
    assert_eq!(store.checkpoints().unwrap(), checkpoints, "the store's own index is read");
    drop(store);
    unchanged(dir.path(), &before);
    index_kept(dir.path(), &checkpoints);

    // 2. The index gone: one is built outside the store, and none is made in it.
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let before = snapshot(dir.path());
    let mut store = Store::open_read_only(dir.path()).unwrap();
    assert!(store.was_rebuilt());
    assert_eq!(read_all_and_try_writes(&mut store), head);
    drop(store);
    assert!(!dir.path().join("index").exists(), "a read-only open made an index");
    unchanged(dir.path(), &before);
    drop(Store::open(dir.path()).unwrap()); // a writer makes the index again

    // 3. The last chunk damaged (bit rot in acknowledged events): what is sound is read,
    // the repair said, not made.
    let torn = dir.path().join(&last_segment);
    let full_len = std::fs::metadata(&torn).unwrap().len();
    std::fs::File::options().write(true).open(&torn).unwrap().set_len(full_len - 10).unwrap();
    let before = snapshot(dir.path());
    let mut store = Store::open_read_only(dir.path()).unwrap();
    assert_eq!(read_all_and_try_writes(&mut store), head_before, "every sound event is read");
    match store.repairs() {
        [repair @ Repair::Cut { path, len, kept: None, .. }] => {
            assert_eq!((path.as_str(), *len), (last_segment.as_str(), len_before));
            assert!(repair.loses_acknowledged(), "the index knew those bytes acknowledged");
        }
        other => panic!("the damaged chunk should be one cut, not yet made: {other:?}"),
    }
    drop(store);
    unchanged(dir.path(), &before);

    // A writer's open makes the repair, keeping the cut bytes.
    let store = Store::open(dir.path()).unwrap();
    assert!(matches!(store.repairs(), [Repair::Cut { kept: Some(_), .. }]));
    assert_eq!(std::fs::metadata(&torn).unwrap().len(), len_before);
}

#[test]
fn readers_share_a_store_and_a_writer_excludes_them() {
    let dir = tempfile::tempdir().unwrap();
    let (head, ..) = make_store(dir.path());
    let before = snapshot(dir.path());
    {
        // Two readers side by side: the second cannot open sled's files (the first holds
        // them) and reads through an index of its own.
        let first = Store::open_read_only(dir.path()).unwrap();
        let second = Store::open_read_only(dir.path()).unwrap();
        for store in [&first, &second] {
            assert_eq!(store.find_branch("main").unwrap().head_seq, head);
        }
        assert!(
            matches!(Store::open(dir.path()), Err(StoreError::InUse { .. })),
            "a writer must wait for the readers"
        );
    }
    unchanged(dir.path(), &before);
    let writer = Store::open(dir.path()).unwrap();
    assert!(matches!(Store::open_read_only(dir.path()), Err(StoreError::InUse { .. })));
    drop(writer);
    let nowhere = dir.path().join("no-store-here");
    assert!(matches!(Store::open_read_only(&nowhere), Err(StoreError::NoStore { .. })));
    assert!(!nowhere.exists(), "reading a missing store must not make one");
}
