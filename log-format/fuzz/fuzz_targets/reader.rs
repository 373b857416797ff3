//! Fuzz target: no bytes make a reader of recordings panic or allocate without bound.
//! Run: `cd log-format && RUSTC_BOOTSTRAP=1 cargo fuzz run reader` (or `./hamlet-dev fuzz`).
#![no_main]

use hamlet_log::reader::{Reader, Step};
use hamlet_log::Recording;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let report = hamlet_log::verify::verify(data);
    let recovered = hamlet_log::verify::recover(data, "fuzz");
    if recovered.outcome == hamlet_log::verify::Outcome::Prefix {
        assert!(hamlet_log::verify::verify(&recovered.bytes).is_clean(), "recover wrote a bad file");
    }
    if report.is_clean() {
        assert_eq!(recovered.bytes, data);
    }
    if let Ok(rec) = Recording::open(data) {
        for branch in rec.branches() {
            if let Ok(events) = rec.events(branch.id, 0) {
                events.take(10_000).for_each(drop);
            }
            let _ = rec.seq_at_time(branch.id, 3600);
        }
    }
    // The sans-IO reader, fed in pieces of 7 bytes.
    let mut reader = Reader::new();
    let mut pieces = data.chunks(7);
    for _ in 0..100_000 {
        match reader.next_step() {
            Ok(Step::NeedBytes(_)) => match pieces.next() {
                Some(p) => reader.feed(p),
                None => reader.finish(),
            },
            Ok(Step::Record { .. }) => {}
            Ok(Step::End) | Err(_) => break,
        }
    }
});
