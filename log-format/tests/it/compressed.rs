//! Goal: compressed chunks (format version 2) hold exactly the events an uncompressed chunk
//! holds, shrink real-looking data, and no compressed bytes from outside — however they
//! are made — panic a reader or read as events. Method: the same events written in format
//! versions 1 and 2, compared event for event; then chunks whose hash is right but whose
//! compressed data is hostile, through `ChunkRef::open` and `verify`.

use hamlet_log::event::{Body, ClockStepped, NewEvent};
use hamlet_log::format::{
    chunk_hasher, compression, file_preamble, op, parse_record, ChunkBuilder, ChunkHeader, ChunkRef,
};
use hamlet_log::samples::stored_samples;
use hamlet_log::verify::{verify, Problem};
use hamlet_log::{BranchId, EventId, Recording, RecordingWriter};

/// A root branch of `n` events: the samples (one of every kind), then clock steps, in
/// chunks of `per_chunk` events.
fn chunks(n: usize, per_chunk: usize) -> Vec<Vec<u8>> {
    let samples = stored_samples();
    let stored: Vec<Vec<u8>> = (0..n)
        .map(|i| match samples.get(i) {
            // The samples' last (a rename) would rename the branch; keep the rest.
            Some(s) if i + 1 < samples.len() => s.clone(),
            _ => NewEvent::new(i as u64 * 10, Body::ClockStepped(ClockStepped { step: i as u64 }))
                .encode(i as u64),
        })
        .collect();
    let branch = BranchId(EventId::chain(EventId::NONE, &stored[0]));
    let mut out = Vec::new();
    let mut builder = ChunkBuilder::new(branch, EventId::NONE, 0);
    for (i, event) in stored.iter().enumerate() {
        let id = builder.push(event);
        if builder.n_events() as usize == per_chunk {
            let next = ChunkBuilder::new(branch, id, i as u64 + 1);
            out.push(std::mem::replace(&mut builder, next).finish().1);
        }
    }
    if builder.n_events() > 0 {
        out.push(builder.finish().1);
    }
    out
}

fn write(version: u16, chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = RecordingWriter::with_version(Vec::new(), "test", version).unwrap();
    for chunk in chunks {
        writer.write_chunk(chunk).unwrap();
    }
    writer.finish().unwrap()
}

fn compression_codes(bytes: &[u8]) -> Vec<u8> {
    let rec = Recording::open(bytes).unwrap();
    rec.summary().chunks.iter().map(|e| rec.chunk(e).unwrap().header.compression).collect()
}

#[test]
fn version_2_compresses_chunks_and_holds_the_same_events_with_the_same_ids() {
    let chunks = chunks(3_000, 1_000);
    let (v1, v2) = (write(1, &chunks), write(2, &chunks));
    assert!(verify(&v1).is_clean() && verify(&v2).is_clean(), "{:?}", verify(&v2).problems);
    assert_eq!(compression_codes(&v1), vec![compression::NONE; 3]);
    assert_eq!(compression_codes(&v2), vec![compression::ZSTD; 3]);
    // Small events are mostly their 32-byte ids, which do not compress: a little smaller.
    assert!(v2.len() < v1.len(), "{} bytes compressed, {} not", v2.len(), v1.len());
    let (r1, r2) = (Recording::open(&v1).unwrap(), Recording::open(&v2).unwrap());
    assert_eq!((r1.version(), r2.version()), (1, 2));
    let branch = r1.branches()[0].id;
    let e1: Vec<_> = r1.events(branch, 0).unwrap().map(Result::unwrap).collect();
    let e2: Vec<_> = r2.events(branch, 0).unwrap().map(Result::unwrap).collect();
    assert_eq!(e1.len(), 3_000);
    assert_eq!(e1, e2);
    // Seeking reads one compressed chunk and finds the same event.
    assert_eq!(r2.events(branch, 1_500).unwrap().next().unwrap().unwrap(), e1[1_500]);
    // Written again in version 1, the compressed file is the uncompressed one, byte for byte.
    let again: Vec<Vec<u8>> =
        r2.summary().chunks.iter().map(|e| r2.chunk(e).unwrap().recoded(false).unwrap()).collect();
    assert_eq!(write(1, &again), v1);
}

#[test]
fn a_chunk_that_compression_would_not_shrink_is_stored_as_it_is() {
    // One small event: its 36-byte prefix and a few bytes do not compress.
    let chunks = chunks(1, 1);
    let v2 = write(2, &chunks);
    assert!(verify(&v2).is_clean());
    assert_eq!(compression_codes(&v2), vec![compression::NONE]);
}

/// A chunk record holding `chunk`'s header with `compression` and `data` as given, hashed
/// right: bytes a careless or hostile writer could make.
fn forged(chunk: &[u8], code: u8, data: &[u8]) -> Vec<u8> {
    let record = parse_record(chunk, 0).unwrap().unwrap();
    let header = ChunkRef::parse(record).unwrap().header;
    let head = ChunkHeader { compression: code, data_len: data.len() as u64, ..header }.encode();
    let hash = chunk_hasher().update(&head).update(data).finalize();
    let mut body = head.to_vec();
    body.extend_from_slice(data);
    body.extend_from_slice(hash.as_bytes());
    let mut out = vec![op::CHUNK];
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// What reading the forged chunk says, and what `verify` says of a file holding it.
fn read_forged(version: u16, record: &[u8]) -> (String, Vec<String>) {
    let opened = ChunkRef::parse(parse_record(record, 0).unwrap().unwrap())
        .and_then(|c| c.open().map(|chunk| chunk.verify_events().map(|_| ())))
        .map_or_else(|e| e.to_string(), |walked| format!("{walked:?}"));
    let mut file = file_preamble(version, "test");
    file.extend_from_slice(record);
    let problems = verify(&file)
        .problems
        .iter()
        .filter(|p| matches!(p, Problem::Chunk(_)))
        .map(ToString::to_string)
        .collect();
    (opened, problems)
}

#[test]
fn hostile_compressed_data_with_a_right_hash_is_refused_and_never_panics() {
    let chunk = &chunks(200, 200)[0];
    let (raw, stream) = compressed_parts(chunk);
    let with_len = |len: u64, stream: &[u8]| {
        let mut data = len.to_le_bytes().to_vec();
        data.extend_from_slice(stream);
        data
    };
    let good = with_len(raw.len() as u64, &stream);
    // The forging itself is right: the good data reads as the chunk's events.
    let (opened, problems) = read_forged(2, &forged(chunk, compression::ZSTD, &good));
    assert_eq!((opened.as_str(), problems.len()), ("Ok(())", 0), "{problems:?}");

    let mut trailing = good.clone();
    trailing.extend_from_slice(b"more");
    let mut flipped = good.clone();
    let middle = 8 + stream.len() / 2;
    flipped[middle] ^= 0x5a;
    let cases: Vec<(&str, u16, u8, Vec<u8>, &str)> = vec![
        ("in a version 1 file", 1, compression::ZSTD, good.clone(), "version 1"),
        ("an undefined code", 2, 2, good.clone(), "compression 2 is not defined"),
        ("shorter than its length", 2, compression::ZSTD, vec![1, 2, 3], "shorter than its length"),
        ("a length one short", 2, compression::ZSTD, with_len(raw.len() as u64 - 1, &stream), ""),
        ("a length one long", 2, compression::ZSTD, with_len(raw.len() as u64 + 1, &stream), ""),
        (
            "a length past the ratio limit",
            2,
            compression::ZSTD,
            with_len(1 << 29, &stream),
            "limit",
        ),
        ("a length past 1 GiB", 2, compression::ZSTD, with_len(u64::MAX, &stream), "limit"),
        ("garbage for a stream", 2, compression::ZSTD, with_len(1000, &[0xab; 600]), ""),
        ("the stream cut short", 2, compression::ZSTD, good[..good.len() - 9].to_vec(), ""),
        ("bytes after the stream", 2, compression::ZSTD, trailing, ""),
        ("a byte of the stream changed", 2, compression::ZSTD, flipped, ""),
        ("nothing but the length", 2, compression::ZSTD, with_len(0, &[]), ""),
    ];
    for (what, version, code, data, says) in cases {
        let record = forged(chunk, code, &data);
        let (opened, problems) = read_forged(version, &record);
        assert!(!problems.is_empty(), "{what}: verify found nothing");
        assert!(
            problems.iter().any(|p| p.contains(says)),
            "{what}: expected `{says}` in {problems:?}"
        );
        if version == 2 {
            assert_ne!(opened, "Ok(())", "{what}: read as events");
        }
    }
}

/// An uncompressed chunk's event data, and its Zstandard stream as the writer makes it
/// (recoding the chunk and taking the stream back out).
fn compressed_parts(chunk: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let stored = ChunkRef::parse(parse_record(chunk, 0).unwrap().unwrap()).unwrap();
    let raw = stored.open().unwrap().data.into_owned();
    let recoded = stored.recoded(true).unwrap();
    let parsed = ChunkRef::parse(parse_record(&recoded, 0).unwrap().unwrap()).unwrap();
    assert_eq!(parsed.header.compression, compression::ZSTD);
    let len = u64::from_le_bytes(parsed.data[..8].try_into().unwrap());
    assert_eq!(len, raw.len() as u64);
    (raw, parsed.data[8..].to_vec())
}

/// Set in the child process [`a_hostile_file_cannot_make_a_reader_hold_a_gigabyte`] starts:
/// the file it reads.
const HOSTILE_CHILD: &str = "HAMLET_TEST_HOSTILE_FILE";

/// A root branch whose every chunk holds one event `make(seq)` (stored bytes), each chunk
/// compressed by hand and padded with a skippable frame to just within the ratio limit, as
/// a hostile writer would (Hamlet's writer stores such data uncompressed), or left
/// uncompressed in a version 1 file.
fn one_event_chunks(version: u16, n: u64, make: impl Fn(u64) -> Vec<u8>) -> Vec<u8> {
    use hamlet_log::event::BranchCreated;
    let created = NewEvent::new(
        0,
        Body::BranchCreated(BranchCreated {
            name: "hostile".into(),
            parent_branch: None,
            fork_seq: None,
            nonce: 0,
        }),
    )
    .encode(0);
    let branch = BranchId(EventId::chain(EventId::NONE, &created));
    let mut writer = RecordingWriter::with_version(Vec::new(), "hostile", version).unwrap();
    let mut first = ChunkBuilder::new(branch, EventId::NONE, 0);
    let mut parent = first.push(&created);
    writer.write_chunk(&first.finish().1).unwrap();
    for seq in 1..=n {
        let mut builder = ChunkBuilder::new(branch, parent, seq);
        parent = builder.push(&make(seq));
        let chunk = builder.finish().1;
        if version == 1 {
            writer.write_chunk(&chunk).unwrap();
            continue;
        }
        let raw = ChunkRef::parse(parse_record(&chunk, 0).unwrap().unwrap())
            .unwrap()
            .open()
            .unwrap()
            .data
            .into_owned();
        let mut data = (raw.len() as u64).to_le_bytes().to_vec();
        data.extend_from_slice(&zstd::bulk::compress(&raw, 3).unwrap());
        let want = (raw.len() as u64).div_ceil(compression::MAX_RATIO) as usize + 16;
        if data.len() + 8 < want {
            let pad = want - data.len() - 8;
            data.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
            data.extend_from_slice(&(pad as u32).to_le_bytes());
            data.resize(data.len() + pad, 0);
        }
        writer.write_chunk(&forged(&chunk, compression::ZSTD, &data)).unwrap();
    }
    writer.finish().unwrap()
}

/// A `Perceived` event whose body is `n` empty percepts: 4 bytes each stored, about 56 in
/// memory once decoded.
fn many_percepts(seq: u64, n: u32) -> Vec<u8> {
    use hamlet_log::event::{AgentId, Perceived};
    let body = Body::Perceived(Perceived { agent: AgentId(0), percepts: Vec::new() });
    let mut stored = NewEvent::new(seq, body).encode(seq);
    assert_eq!(stored.pop(), Some(0), "the body ends with the percepts' count");
    let mut count = n;
    while count >= 0x80 {
        stored.push((count as u8 & 0x7f) | 0x80);
        count >>= 7;
    }
    stored.push(count as u8);
    stored.resize(stored.len() + 4 * n as usize, 0);
    stored
}

/// Goal: no file of at most 64 MiB makes a reader hold more than 1 GB, however it is made.
/// Method: files at the limits — chunks that each decompress to the most a writer makes,
/// and events at the event limit that decode to many times their size, compressed and not —
/// read by `verify`, every event decoded, and written again, in a child process (this test,
/// run again) that reports its peak resident memory.
#[test]
fn a_hostile_file_cannot_make_a_reader_hold_a_gigabyte() {
    use hamlet_log::event::{AgentId, Perceived, Percept, Tile};
    use hamlet_log::format::MAX_EVENT_LEN;
    if let Ok(path) = std::env::var(HOSTILE_CHILD) {
        let bytes = std::fs::read(path).unwrap();
        let report = verify(&bytes);
        let rec = Recording::open(&bytes).unwrap();
        let branch = rec.branches()[0].id;
        let decoded = rec.events(branch, 0).unwrap().filter(Result::is_ok).count();
        hamlet_log::writer::rewrite(&rec, std::io::sink(), "test", 2).unwrap();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let peak = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        println!("sound {} decoded {decoded} peak {peak}", report.is_clean());
        return;
    }
    if !std::path::Path::new("/proc/self/status").exists() {
        return; // Peak memory is read where Linux reports it.
    }
    let most = MAX_EVENT_LEN as usize - 4096;
    let long_text = |seq: u64| {
        let percept = Percept {
            subject: String::new(),
            description: "a".repeat(most),
            tile: Tile::default(),
        };
        let body = Body::Perceived(Perceived { agent: AgentId(0), percepts: vec![percept] });
        NewEvent::new(seq, body).encode(seq)
    };
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("compressed chunks at the limit", one_event_chunks(2, 40, long_text)),
        (
            "compressed events that decode to many times their size",
            one_event_chunks(2, 16, |seq| many_percepts(seq, (most / 4) as u32)),
        ),
        (
            "uncompressed events that decode to many times their size",
            one_event_chunks(1, 3, |seq| many_percepts(seq, (most / 4) as u32)),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("hamlet-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (what, bytes)) in files.iter().enumerate() {
        assert!(bytes.len() <= 64 << 20, "{what}: {} bytes", bytes.len());
        assert!(verify(bytes).is_clean(), "{what}: {:?}", verify(bytes).problems);
        let path = dir.join(format!("{i}.hamlet"));
        std::fs::write(&path, bytes).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "compressed::a_hostile_file_cannot_make_a_reader_hold_a_gigabyte"])
            .args(["--nocapture", "--test-threads=1"])
            .env(HOSTILE_CHILD, &path)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        let line = said
            .lines()
            .find_map(|l| l.find("sound ").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("{what}: {said}{}", String::from_utf8_lossy(&out.stderr)));
        let kib: u64 =
            line.split_whitespace().rev().nth(1).and_then(|n| n.parse().ok()).expect("VmHWM");
        println!("{what} ({} bytes): {line}", bytes.len());
        assert!(line.starts_with("sound true"), "{what}: {line}");
        assert!(kib * 1024 < 1_000_000_000, "{what}: peak {} MB", kib * 1024 / 1_000_000);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
