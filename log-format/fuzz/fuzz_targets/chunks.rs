//! Fuzz target behind the hash: recordings whose every hash is right around mutated event
//! bodies, hostile compressed streams and arbitrary checkpoint states. No reader, verifier
//! or fold may panic or allocate without bound on them.
//! Run: `cd log-format && RUSTC_BOOTSTRAP=1 cargo fuzz run chunks` (or `./hamlet-dev fuzz`).
#![no_main]

use hamlet_core::fold::Town;
use hamlet_core::log::{open_checked, state_at, Log, Moment};
use hamlet_log::event::{parse_header, Body, BranchCreated, NewEvent};
use hamlet_log::format::{
    chunk_hasher, compression, file_preamble, op, parse_record, ChunkBuilder, ChunkHeader,
    ChunkRef,
};
use hamlet_log::samples::one_body_per_kind;
use hamlet_log::{BranchId, EventId, Recording, RecordingWriter};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

/// A change to an event's body (its bytes after the header).
#[derive(Arbitrary, Debug)]
enum Edit {
    Flip { at: u16, bits: u8 },
    Cut { at: u16 },
    Insert { at: u16, bytes: Vec<u8> },
    Replace(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Events after the branch's first: a sample body (by index) and the edits made to it.
    events: Vec<(u8, Vec<Edit>)>,
    /// Events per chunk (1 and up).
    per_chunk: u8,
    /// Written in format version 1 (uncompressed) rather than 2.
    version_1: bool,
    /// Checkpoints on the branch: a seq and the state bytes claimed there.
    checkpoints: Vec<(u16, Vec<u8>)>,
    /// A compressed chunk made by hand around the first chunk: its declared length and
    /// stream, hashed right.
    stream: Option<(u32, Vec<u8>)>,
}

fn edit(stored: &mut Vec<u8>, body_at: usize, edit: &Edit) {
    let body_len = stored.len() - body_at;
    let at = |i: u16| body_at + usize::from(i) % (body_len + 1);
    match edit {
        Edit::Flip { at: i, bits } if body_len > 0 => {
            let i = body_at + usize::from(*i) % body_len;
            stored[i] ^= bits;
        }
        Edit::Flip { .. } => {}
        Edit::Cut { at: i } => stored.truncate(at(*i)),
        Edit::Insert { at: i, bytes } => {
            let i = at(*i);
            stored.splice(i..i, bytes.iter().copied());
        }
        Edit::Replace(bytes) => {
            stored.truncate(body_at);
            stored.extend_from_slice(bytes);
        }
    }
}

fuzz_target!(|input: Input| {
    let samples = one_body_per_kind();
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "main".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    )
    .encode(0);
    let mut stored = vec![created];
    for (which, edits) in input.events.iter().take(200) {
        let body = samples[usize::from(*which) % samples.len()].clone();
        if matches!(body, Body::BranchCreated(_)) {
            continue;
        }
        let seq = stored.len() as u64;
        let mut bytes = NewEvent::new(seq * 10, body).encode(seq);
        let Ok((_, _, _, b)) = parse_header(&bytes) else { return };
        let body_at = bytes.len() - b.len();
        for e in edits.iter().take(8) {
            edit(&mut bytes, body_at, e);
        }
        stored.push(bytes);
    }
    let branch = BranchId(EventId::chain(EventId::NONE, &stored[0]));
    let per_chunk = usize::from(input.per_chunk.max(1));
    let mut chunks = Vec::new();
    let mut parent = EventId::NONE;
    for (n, group) in stored.chunks(per_chunk).enumerate() {
        let first = (n * per_chunk) as u64;
        let mut builder = ChunkBuilder::new(branch, parent, first);
        for event in group {
            parent = builder.push(event);
        }
        chunks.push(builder.finish().1);
    }
    let version = if input.version_1 { 1 } else { 2 };
    let Ok(mut writer) = RecordingWriter::with_version(Vec::new(), "fuzz", version) else { return };
    for chunk in &chunks {
        if writer.write_chunk(chunk).is_err() {
            return;
        }
    }
    let head = stored.len() as u64 - 1;
    for (seq, state) in input.checkpoints.iter().take(4) {
        let hash = *blake3::hash(state).as_bytes();
        let _ = writer.add_checkpoint(branch, u64::from(*seq) % (head + 1), hash, state);
        let _ = Town::from_checkpoint(state);
    }
    let Ok(bytes) = writer.finish() else { return };

    // Every reader over it: verify, decoded events, the fold, checkpoints checked.
    let _ = hamlet_log::verify::verify(&bytes);
    if let Ok(rec) = Recording::open(&bytes) {
        if let Ok(events) = rec.events(branch, 0) {
            events.for_each(drop);
        }
        let _ = state_at(&rec, branch, Moment::Seq(head / 2));
    }
    if let Ok((rec, _)) = open_checked(&bytes) {
        for b in Log::branches(&rec) {
            let _ = state_at(&rec, b.id, Moment::End);
        }
    }

    // A compressed chunk forged around the first chunk's header.
    if let Some((declared, stream)) = &input.stream {
        let Ok(Some(record)) = parse_record(&chunks[0], 0) else { return };
        let Ok(chunk) = ChunkRef::parse(record) else { return };
        let mut data = u64::from(*declared).to_le_bytes().to_vec();
        data.extend_from_slice(stream);
        let header =
            ChunkHeader { compression: compression::ZSTD, data_len: data.len() as u64, ..chunk.header };
        let head = header.encode();
        let hash = chunk_hasher().update(&head).update(&data).finalize();
        let mut forged = vec![op::CHUNK];
        let body_len = head.len() + data.len() + 32;
        forged.extend_from_slice(&(body_len as u64).to_le_bytes());
        forged.extend_from_slice(&head);
        forged.extend_from_slice(&data);
        forged.extend_from_slice(hash.as_bytes());
        if let Ok(Some(record)) = parse_record(&forged, 0) {
            if let Ok(opened) = ChunkRef::parse(record).and_then(|c| c.open()) {
                for event in opened.events().flatten() {
                    let _ = hamlet_log::event::decode_body(event.kind, event.schema, event.body);
                }
            }
        }
        let mut file = file_preamble(2, "fuzz");
        file.extend_from_slice(&forged);
        let _ = hamlet_log::verify::verify(&file);
    }
});
