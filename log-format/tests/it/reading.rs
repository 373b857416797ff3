//! Reading recordings: the sans-IO reader in pieces, branches with ancestry, seek.

use hamlet_log::event::{decode_stored, Body};
use hamlet_log::reader::{Reader, Step};
use hamlet_log::samples::{one_body_per_kind, small_recording, stored_samples};
use hamlet_log::Recording;

fn records_fed_in_pieces(bytes: &[u8], piece: usize) -> Vec<(u8, u64, Vec<u8>)> {
    let mut reader = Reader::new();
    let mut out = Vec::new();
    let mut pieces = bytes.chunks(piece);
    loop {
        match reader.next_step().unwrap() {
            Step::NeedBytes(_) => match pieces.next() {
                Some(p) => reader.feed(p),
                None => reader.finish(),
            },
            Step::Record { op, offset, body } => out.push((op, offset, body)),
            Step::End => return out,
        }
    }
}

#[test]
fn pieces_of_any_size_give_the_same_records() {
    let bytes = small_recording();
    let whole = records_fed_in_pieces(&bytes, bytes.len());
    assert!(whole.len() > 5);
    for piece in [1, 3, 7, 64] {
        assert_eq!(records_fed_in_pieces(&bytes, piece), whole, "pieces of {piece}");
    }
}

#[test]
fn main_holds_every_kind_and_the_fork_shares_its_prefix() {
    let bytes = small_recording();
    let rec = Recording::open(&bytes).unwrap();
    // The root was created as `main`; its last event renamed it.
    let main = rec.find_branch("market-day").unwrap().id;
    let bodies: Vec<Body> = rec.events(main, 0).unwrap().map(|e| e.unwrap().body).collect();
    assert_eq!(bodies, one_body_per_kind());

    let fork = rec.find_branch("what-if").unwrap();
    assert_eq!(fork.parent, Some(main));
    let events: Vec<_> = rec.events(fork.id, 0).unwrap().map(Result::unwrap).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
    assert_eq!(seqs, (0..=7).collect::<Vec<_>>());
    assert_eq!(events[6].id, fork.id.0, "a branch's id is its first event's id");
    assert_eq!(events[6].parent, events[5].id);
    assert!(events[..6].iter().all(|e| e.branch == main));

    let from_4: Vec<u64> = rec.events(fork.id, 4).unwrap().map(|e| e.unwrap().seq()).collect();
    assert_eq!(from_4, vec![4, 5, 6, 7]);
}

#[test]
fn seek_by_time_finds_the_last_event_at_or_before() {
    let bytes = small_recording();
    let rec = Recording::open(&bytes).unwrap();
    let main = rec.find_branch("market-day").unwrap().id;
    assert_eq!(rec.seq_at_time(main, 0).unwrap(), Some(0));
    assert_eq!(rec.seq_at_time(main, 135).unwrap(), Some(13));
    assert_eq!(rec.seq_at_time(main, 1_000_000).unwrap(), Some(28));
    let fork = rec.find_branch("what-if").unwrap().id;
    assert_eq!(rec.seq_at_time(fork, 45).unwrap(), Some(4));
    assert_eq!(rec.seq_at_time(fork, 55).unwrap(), Some(6));
}

#[test]
fn stored_samples_decode_to_their_bodies() {
    for (stored, body) in stored_samples().iter().zip(one_body_per_kind()) {
        assert_eq!(decode_stored(stored).unwrap().1, body);
    }
    assert_eq!(one_body_per_kind().len(), hamlet_log::event::KNOWN_KINDS.len());
}

#[test]
fn bytes_after_the_end_magic_are_an_error_whenever_they_arrive() {
    let bytes = small_recording();
    let mut reader = Reader::new();
    reader.feed(&bytes);
    while !matches!(reader.next_step().unwrap(), Step::End) {}
    reader.feed(b"x");
    assert!(reader.next_step().is_err());
}
