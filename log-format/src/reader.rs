//! A sans-IO reader of record framing: the caller feeds bytes as they come (a file, stdin,
//! a drag-and-drop, a fuzzer) and the reader says what it needs next. Bytes fed in pieces
//! of any size give the same records.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

use crate::format::{op, FormatError, MAGIC, MAX_RECORD_LEN, RECORD_PREFIX_LEN};

/// What the reader has for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Feed at least this many more bytes (or call [`Reader::finish`]).
    NeedBytes(usize),
    /// A complete record.
    Record {
        /// Its opcode.
        op: u8,
        /// Absolute offset of its opcode byte.
        offset: u64,
        /// Its body.
        body: Vec<u8>,
    },
    /// The file ended properly: footer record, then the magic.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Magic,
    Records,
    EndMagic,
    Done,
}

/// Reads records from bytes fed in any pieces. Memory held is at most one record plus
/// what was fed beyond it; a length field is checked against [`MAX_RECORD_LEN`] before
/// anything is kept for it.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Vec<u8>,
    start: usize,
    offset: u64,
    state: State,
    finished: bool,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader expecting the start of a file.
    pub fn new() -> Reader {
        Reader { buf: Vec::new(), start: 0, offset: 0, state: State::Magic, finished: false }
    }

    /// Gives the reader more bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Says no more bytes will come: a record still incomplete is then an error.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    fn pending(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or(&[])
    }

    fn truncated(&self, needed: usize) -> FormatError {
        FormatError::Truncated {
            offset: self.offset,
            needed: needed as u64,
            available: self.pending().len() as u64,
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// The next step. After an error the reader stays failed: call it no more.
    pub fn next_step(&mut self) -> Result<Step, FormatError> {
        let have = self.pending().len();
        match self.state {
            State::Done if have > 0 => Err(FormatError::BadChunk {
                offset: self.offset,
                problem: format!("{have} bytes follow the end magic"),
            }),
            State::Done => Ok(Step::End),
            State::Magic | State::EndMagic => {
                if have < MAGIC.len() {
                    return if self.finished {
                        Err(self.truncated(MAGIC.len()))
                    } else {
                        Ok(Step::NeedBytes(MAGIC.len() - have))
                    };
                }
                let found = self.pending().get(..MAGIC.len()).unwrap_or(&[]);
                if found != MAGIC {
                    return Err(FormatError::BadMagic { found: crate::id::hex(found) });
                }
                self.consume(MAGIC.len());
                if self.state == State::EndMagic {
                    self.state = State::Done;
                    if !self.pending().is_empty() {
                        return Err(FormatError::BadChunk {
                            offset: self.offset,
                            problem: format!("{} bytes follow the end magic", self.pending().len()),
                        });
                    }
                    return Ok(Step::End);
                }
                self.state = State::Records;
                self.next_step()
            }
            State::Records => {
                let mut cur = crate::format::Bytes::new(self.pending());
                let (Some(opcode), Some(len)) = (cur.u8(), cur.u64()) else {
                    return if self.finished {
                        Err(self.truncated(RECORD_PREFIX_LEN))
                    } else {
                        Ok(Step::NeedBytes(RECORD_PREFIX_LEN - have))
                    };
                };
                if len > MAX_RECORD_LEN {
                    return Err(FormatError::TooLong {
                        offset: self.offset,
                        len_bytes: len,
                        limit: MAX_RECORD_LEN,
                    });
                }
                let total = RECORD_PREFIX_LEN + len as usize;
                if have < total {
                    return if self.finished {
                        Err(self.truncated(total))
                    } else {
                        Ok(Step::NeedBytes(total - have))
                    };
                }
                let body = cur.take(len as usize).unwrap_or(&[]).to_vec();
                let offset = self.offset;
                self.consume(total);
                if opcode == op::FOOTER {
                    self.state = State::EndMagic;
                }
                Ok(Step::Record { op: opcode, offset, body })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_stream_is_an_error_once_finished() {
        let mut reader = Reader::new();
        reader.feed(&MAGIC[..4]);
        assert_eq!(reader.next_step(), Ok(Step::NeedBytes(4)));
        reader.feed(&MAGIC[4..]);
        assert!(matches!(reader.next_step(), Ok(Step::NeedBytes(9))));
        reader.feed(&[op::CHUNK, 200, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(reader.next_step(), Ok(Step::NeedBytes(198)));
        reader.finish();
        assert!(matches!(reader.next_step(), Err(FormatError::Truncated { .. })));
    }

    #[test]
    fn a_hostile_length_is_refused_before_anything_is_kept() {
        let mut reader = Reader::new();
        reader.feed(&MAGIC);
        reader.feed(&[op::CHUNK, 255, 255, 255, 255, 255, 255, 255, 255]);
        assert!(matches!(reader.next_step(), Err(FormatError::TooLong { .. })));
    }
}
