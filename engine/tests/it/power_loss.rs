//! Goal: acknowledged events survive a power cut and injected I/O errors; a failed write
//! is a clean error, never corruption, and the store reopens.
//! Method: the store runs on `LossyDisk`, which forgets every write no sync covered
//! (keeping a random torn prefix of it) and fails writes, syncs, creates, truncates,
//! renames and removals on purpose; segments roll over every few KiB, so batches cross
//! roll-overs.

use hamlet_engine::rng::SimRng;
use hamlet_engine::store::{Repair, Store, StoreError};
use hamlet_log::verify::verify;
use hamlet_log::{BranchId, EventId};

use crate::support::{batch, Faults, LossyDisk};

/// Runs a random workload on a lossy disk, cuts the power, reopens; answers what reopening
/// set aside.
fn workload(seed: u64, faults: Faults) -> usize {
    let index = tempfile::tempdir().unwrap();
    let disk = LossyDisk::new(seed, faults);
    let mut rng = SimRng::stream(seed, &["workload"]);
    let mut acked: Vec<(BranchId, u64, EventId)> = Vec::new();
    let mut store = Store::open_with(disk, index.path()).unwrap();
    store.set_segment_target(rng.int_inclusive(4 << 10, 32 << 10));
    let mut failed = false;
    match store.create_root("main") {
        Ok(id) => acked.push((id, 0, id.0)),
        Err(_) => failed = true,
    }
    for _ in 0..rng.int_inclusive(1, 25) {
        if failed {
            break;
        }
        let branches = store.branches();
        let target = &branches[rng.int_inclusive(0, branches.len() as u64 - 1) as usize];
        let result = if rng.chance(1, 6) {
            let at = rng.int_inclusive(0, target.head_seq);
            let name = format!("f{}", branches.len());
            store.fork(target.id, at, &name).map(|id| acked.push((id, at + 1, id.0)))
        } else {
            let mut time = target.head_time;
            let n = rng.int_inclusive(1, 300) as usize;
            let events = batch(&mut rng, &mut time, n);
            store.append_durable(target.id, &events).map(|ids| {
                for (i, id) in ids.into_iter().enumerate() {
                    acked.push((target.id, target.head_seq + 1 + i as u64, id));
                }
            })
        };
        if let Err(e) = result {
            assert!(matches!(e, StoreError::Io { .. }), "seed {seed}: {e}");
            failed = true;
            // Once a write failed, the store refuses more until it is reopened.
            let main = store.branches().first().map(|b| b.id);
            if let Some(main) = main {
                let again = store.append_durable(main, &batch(&mut rng, &mut 1_000_000, 1));
                assert!(
                    matches!(again, Err(StoreError::Poisoned { .. })),
                    "seed {seed}: {again:?}"
                );
            }
        }
    }
    // The power goes out. Half the time the index is also lost.
    let disk = store.into_storage().power_loss();
    if rng.chance(1, 2) {
        std::fs::remove_dir_all(index.path()).unwrap();
    }
    let store =
        Store::open_with(disk, index.path()).unwrap_or_else(|e| panic!("seed {seed}: reopen: {e}"));
    for (branch, seq, id) in &acked {
        let event = store
            .event_at(*branch, *seq)
            .unwrap_or_else(|e| panic!("seed {seed}: acked {branch} #{seq} lost: {e}"));
        assert_eq!(event.id, *id, "seed {seed}: acked {branch} #{seq} changed");
    }
    store.check_index().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let bytes = store.export(None, Vec::new()).unwrap();
    assert!(verify(&bytes).is_clean(), "seed {seed}");
    store.repairs().iter().filter(|r| matches!(r, Repair::SetAside { .. })).count()
}

#[test]
fn acknowledged_events_survive_power_loss() {
    for seed in 0..150 {
        workload(seed, Faults::default());
    }
}

#[test]
fn injected_io_errors_are_clean_errors_and_the_store_reopens() {
    let faults = Faults {
        append_per_mille: 40,
        sync_per_mille: 40,
        create_per_mille: 80,
        take_back_per_mille: 0,
    };
    for seed in 1000..1150 {
        workload(seed, faults);
    }
}

/// A write that rolled over and then failed takes back both segments; when taking back
/// fails too, the next open sets aside the segments that continue events no longer there.
#[test]
fn failed_writes_across_roll_overs_are_taken_back_and_the_store_reopens() {
    let set_aside: usize = (2000..2150)
        .map(|seed| {
            workload(
                seed,
                Faults {
                    append_per_mille: 30,
                    sync_per_mille: 30,
                    create_per_mille: 30,
                    take_back_per_mille: 300,
                },
            )
        })
        .sum();
    println!("{set_aside} segments set aside by reopening");
    // And deterministically: one batch of three chunks, the first appended to the current
    // segment, each later one rolling over; the last sync fails, and with it (the second
    // time) every removal, so the middle segment, synced at the roll-over after it, stays:
    // it continues events the failed write took back.
    for removals_fail in [false, true] {
        let index = tempfile::tempdir().unwrap();
        let mut store =
            Store::open_with(LossyDisk::new(7, Faults::default()), index.path()).unwrap();
        let main = store.create_root("main").unwrap();
        let mut rng = SimRng::stream(7, &["roll-over"]);
        let mut time = 0;
        let kept = store.append_durable(main, &batch(&mut rng, &mut time, 20)).unwrap();
        let events = batch(&mut rng, &mut time, 5000);
        let first_chunk: usize = events[..2048]
            .iter()
            .enumerate()
            .map(|(i, e)| e.encode(21 + i as u64).len() + 36)
            .sum();
        let mut disk = store.into_storage();
        // Syncs: the current segment and the new one at each of two roll-overs, then the last.
        disk.fail_sync_after = Some(4);
        disk.fail_removes = removals_fail;
        let mut store = Store::open_with(disk, index.path()).unwrap();
        store.set_segment_target(first_chunk as u64 + (8 << 10));
        let lost = store.append_durable(main, &events);
        assert!(matches!(lost, Err(StoreError::Io { .. })), "{lost:?}");
        let disk = store.into_storage().power_loss();
        let store = Store::open_with(disk, index.path()).unwrap();
        let head = store.branches()[0].clone();
        assert_eq!((head.head_seq, head.head_id), (kept.len() as u64, *kept.last().unwrap()));
        let aside = store.repairs().iter().filter(|r| matches!(r, Repair::SetAside { .. }));
        assert_eq!(aside.count() > 0, removals_fail, "{:?}", store.repairs());
        store.check_index().unwrap();
    }
}
