//! Recordings a hostile author could write: sound by every hash, false in what they say.

use hamlet_engine::fold::Town;
use hamlet_log::writer::RecordingWriter;
use hamlet_log::Recording;

/// `bytes`' chunks written again with `checkpoints` (each a seq of its first root branch
/// and the state to claim there) in place of its own, every hash made consistent: what
/// anyone holding a recording can do with the crate that writes them.
pub fn with_checkpoints(bytes: &[u8], checkpoints: &[(u64, Town)]) -> Vec<u8> {
    let rec = Recording::open(bytes).expect("a recording");
    let mut w = RecordingWriter::new(Vec::new(), "forge").expect("writer");
    for branch in rec.branches() {
        for c in rec.own_chunks(branch.id) {
            let (a, b) = (c.offset as usize, (c.offset + c.len_bytes) as usize);
            w.write_chunk(&bytes[a..b]).expect("a chunk of a sound recording");
        }
    }
    let root = rec.root().expect("a root branch").id;
    for (seq, town) in checkpoints {
        w.add_checkpoint(root, *seq, town.state_hash().0, &town.to_checkpoint()).expect("write");
    }
    w.finish().expect("finish")
}
