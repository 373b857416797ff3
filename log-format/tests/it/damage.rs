//! Goal: no damage goes unnoticed and none panics. Method: every cut and every bit flip of
//! a small recording, through `verify`, `recover`, `Recording::open` and the sans-IO reader.

use hamlet_log::format::FormatError;
use hamlet_log::reader::{Reader, Step};
use hamlet_log::samples::small_recording;
use hamlet_log::verify::{recover, verify, Outcome};
use hamlet_log::Recording;

fn drain(bytes: &[u8]) -> Result<usize, FormatError> {
    let mut reader = Reader::new();
    reader.feed(bytes);
    reader.finish();
    let mut n = 0;
    loop {
        match reader.next_step()? {
            Step::Record { .. } => n += 1,
            Step::End => return Ok(n),
            Step::NeedBytes(_) => unreachable!("a finished reader never needs bytes"),
        }
    }
}

#[test]
fn the_sample_is_sound() {
    let good = small_recording();
    let report = verify(&good);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.n_branches, 2);
    assert_eq!(report.n_events, 31);
    assert!(drain(&good).is_ok());
    let recovered = recover(&good, "test");
    assert_eq!(recovered.outcome, Outcome::Clean);
    assert_eq!(recovered.bytes, good);
}

#[test]
fn every_truncation_is_reported_and_recover_keeps_complete_chunks() {
    let good = small_recording();
    let full_events = verify(&good).n_events;
    for cut in 0..good.len() {
        let bad = &good[..cut];
        assert!(!verify(bad).is_clean(), "cut at byte {cut} reads as sound");
        assert!(Recording::open(bad).is_err(), "cut at byte {cut} opens");
        assert!(drain(bad).is_err(), "cut at byte {cut} reads to the end");
        let recovered = recover(bad, "test");
        match recovered.outcome {
            Outcome::Clean => panic!("cut at byte {cut} recovered as clean"),
            Outcome::Nothing => assert!(recovered.bytes.is_empty()),
            Outcome::Prefix => {
                let report = verify(&recovered.bytes);
                assert!(
                    report.is_clean(),
                    "cut at {cut}: recovered file fails: {:?}",
                    report.problems
                );
                assert!(report.n_events <= full_events);
            }
        }
    }
}

#[test]
fn a_cut_after_all_chunks_keeps_every_event() {
    let good = small_recording();
    let summary = Recording::open(&good).unwrap().summary().offset as usize;
    let recovered = recover(&good[..summary], "test");
    assert_eq!(recovered.outcome, Outcome::Prefix);
    assert_eq!(recovered.n_events, 31);
    assert!(verify(&recovered.bytes).is_clean());
}

#[test]
fn every_bit_flip_is_reported() {
    let good = small_recording();
    for bit in 0..good.len() * 8 {
        let mut bad = good.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let report = verify(&bad);
        assert!(!report.is_clean(), "flip of bit {bit} (byte {}) went unnoticed", bit / 8);
        let recovered = recover(&bad, "test");
        assert_ne!(recovered.outcome, Outcome::Clean, "flip of bit {bit}");
        if recovered.outcome == Outcome::Prefix {
            assert!(verify(&recovered.bytes).is_clean(), "flip of bit {bit}: recovered file fails");
        }
        let _ = drain(&bad);
        if let Ok(rec) = Recording::open(&bad) {
            for branch in rec.branches() {
                if let Ok(events) = rec.events(branch.id, 0) {
                    events.for_each(drop);
                }
            }
        }
    }
}

mod arbitrary {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Hostile bytes, wholly random or a sample with random splices: never a panic.
        #[test]
        fn hostile_bytes_never_panic(
            noise in proptest::collection::vec(any::<u8>(), 0..600),
            at in any::<prop::sample::Index>(),
        ) {
            let _ = verify(&noise);
            let _ = recover(&noise, "test");
            let _ = drain(&noise);
            let mut spliced = small_recording();
            let at = at.index(spliced.len());
            let end = (at + noise.len()).min(spliced.len());
            spliced.splice(at..end, noise.iter().copied());
            let _ = verify(&spliced);
            let _ = recover(&spliced, "test");
            if let Ok(rec) = Recording::open(&spliced) {
                for branch in rec.branches() {
                    if let Ok(events) = rec.events(branch.id, 0) { events.for_each(drop); }
                }
            }
        }
    }
}
