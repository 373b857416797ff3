//! Test doubles and helpers. `LossyDisk` is a disk that forgets what was not synced and
//! fails on purpose: test code only, never a production default.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use hamlet_engine::rng::SimRng;
use hamlet_engine::store::Storage;
use hamlet_log::event::NewEvent;

#[derive(Clone, Debug, Default)]
struct FileState {
    synced: Vec<u8>,
    current: Vec<u8>,
}

/// Which operations fail, and how often (out of 1000).
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    pub append_per_mille: u64,
    pub sync_per_mille: u64,
    pub create_per_mille: u64,
    /// Truncates, renames and removals: what a failed write's taking back relies on.
    pub take_back_per_mille: u64,
}

/// An in-memory disk with a page cache: `sync` makes a file's bytes durable,
/// `sync_dir` its name; `power_loss` forgets the rest (keeping a torn prefix of it).
#[derive(Clone, Debug)]
pub struct LossyDisk {
    files: BTreeMap<String, FileState>,
    names_synced: BTreeSet<String>,
    rng: SimRng,
    faults: Faults,
    pub n_faults: u64,
    /// Fails the file sync after this many more succeed (once), whatever `faults` say.
    pub fail_sync_after: Option<u64>,
    /// Fails every removal.
    pub fail_removes: bool,
}

impl LossyDisk {
    pub fn new(seed: u64, faults: Faults) -> LossyDisk {
        LossyDisk {
            files: BTreeMap::new(),
            names_synced: BTreeSet::new(),
            rng: SimRng::stream(seed, &["lossy disk"]),
            faults,
            n_faults: 0,
            fail_sync_after: None,
            fail_removes: false,
        }
    }

    fn fail(&mut self, per_mille: u64, what: &str) -> io::Result<()> {
        if per_mille > 0 && self.rng.chance(per_mille, 1000) {
            self.n_faults += 1;
            let kind = if self.rng.chance(1, 2) { "EIO" } else { "ENOSPC" };
            return Err(io::Error::other(format!("injected {kind} on {what}")));
        }
        Ok(())
    }

    /// The machine loses power: unsynced names may vanish, unsynced bytes are lost except
    /// for a random prefix of them (a torn write). Faults stop.
    pub fn power_loss(mut self) -> LossyDisk {
        let names: Vec<String> = self.files.keys().cloned().collect();
        for name in names {
            if !self.names_synced.contains(&name) && self.rng.chance(1, 2) {
                self.files.remove(&name);
                continue;
            }
            if let Some(f) = self.files.get_mut(&name) {
                let extra = f.current.len().saturating_sub(f.synced.len());
                let keep = if extra > 0 && f.current.starts_with(&f.synced) {
                    self.rng.int_inclusive(0, extra as u64) as usize
                } else {
                    0
                };
                let mut after = f.synced.clone();
                if keep > 0 {
                    after.extend_from_slice(&f.current[f.synced.len()..f.synced.len() + keep]);
                }
                f.current = after.clone();
                f.synced = after;
            }
        }
        self.names_synced = self.files.keys().cloned().collect();
        self.faults = Faults::default();
        self
    }
}

fn missing(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
}

impl Storage for LossyDisk {
    fn create_dir_all(&mut self, _: &str) -> io::Result<()> {
        Ok(())
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let prefix = format!("{dir}/");
        Ok(self.files.keys().filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned)).collect())
    }
    fn create(&mut self, path: &str) -> io::Result<()> {
        self.fail(self.faults.create_per_mille, "create")?;
        if self.files.contains_key(path) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, path.to_owned()));
        }
        self.files.insert(path.to_owned(), FileState::default());
        Ok(())
    }
    fn append(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.fail(self.faults.append_per_mille, "write")?;
        // A failed write may still have written part of its bytes.
        let f = self.files.get_mut(path).ok_or_else(|| missing(path))?;
        f.current.extend_from_slice(bytes);
        Ok(())
    }
    fn sync(&mut self, path: &str) -> io::Result<()> {
        match self.fail_sync_after {
            Some(0) => {
                self.fail_sync_after = None;
                self.n_faults += 1;
                return Err(io::Error::other("injected EIO on fdatasync"));
            }
            Some(n) => self.fail_sync_after = Some(n - 1),
            None => {}
        }
        self.fail(self.faults.sync_per_mille, "fdatasync")?;
        let f = self.files.get_mut(path).ok_or_else(|| missing(path))?;
        f.synced = f.current.clone();
        Ok(())
    }
    fn sync_dir(&mut self, dir: &str) -> io::Result<()> {
        self.fail(self.faults.sync_per_mille, "directory sync")?;
        let prefix = format!("{dir}/");
        self.names_synced.retain(|n| !n.starts_with(&prefix));
        for name in self.files.keys().filter(|k| k.starts_with(&prefix)) {
            self.names_synced.insert(name.clone());
        }
        Ok(())
    }
    fn truncate(&mut self, path: &str, len: u64) -> io::Result<()> {
        self.fail(self.faults.take_back_per_mille, "truncate")?;
        let f = self.files.get_mut(path).ok_or_else(|| missing(path))?;
        f.current.truncate(len as usize);
        f.synced = f.current.clone();
        Ok(())
    }
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.fail(self.faults.take_back_per_mille, "rename")?;
        let f = self.files.remove(from).ok_or_else(|| missing(from))?;
        self.files.insert(to.to_owned(), f);
        Ok(())
    }
    fn remove(&mut self, path: &str) -> io::Result<()> {
        if self.fail_removes {
            return Err(io::Error::other("injected EIO on remove"));
        }
        self.fail(self.faults.take_back_per_mille, "remove")?;
        self.files.remove(path).map(drop).ok_or_else(|| missing(path))
    }
    fn len(&self, path: &str) -> io::Result<u64> {
        Ok(self.files.get(path).ok_or_else(|| missing(path))?.current.len() as u64)
    }
    fn read_at(&self, path: &str, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let f = self.files.get(path).ok_or_else(|| missing(path))?;
        f.current
            .get(offset as usize..offset as usize + len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, path.to_owned()))
    }
}

/// A batch of small, valid events after `time`: steps and moves of three agents.
pub fn batch(rng: &mut SimRng, time: &mut u64, n: usize) -> Vec<NewEvent> {
    hamlet_engine::synth::steps_and_moves(rng, time, n, 3, 3)
}
