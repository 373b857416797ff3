//! Fails when the bytes change and `log-format/FORMAT.md` does not.

use hamlet_log::samples::{small_recording, stored_samples};

/// blake3 over every sample event's stored bytes and the small sample recording.
fn fingerprint() -> String {
    let mut hasher = blake3::Hasher::new();
    for stored in stored_samples() {
        hasher.update(&(stored.len() as u64).to_le_bytes());
        hasher.update(&stored);
    }
    hasher.update(&small_recording());
    hasher.finalize().to_hex().to_string()
}

#[test]
fn format_doc_matches_the_code() {
    let actual = fingerprint();
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).unwrap();
    let expected = doc
        .lines()
        .find_map(|l| l.trim().strip_prefix("format fingerprint: "))
        .expect("FORMAT.md has a `format fingerprint: ` line");
    assert_eq!(
        actual,
        expected.trim().trim_matches('`'),
        "the encoding changed: bump the schema or format version, describe the change in \
         FORMAT.md, upcast old recordings, add a golden recording, and paste the new fingerprint"
    );
}
