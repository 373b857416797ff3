//! The file operations the store is written against. [`FsStorage`] is the real disk; tests
//! supply doubles that lose unsynced writes or fail on purpose. Paths are relative to the
//! store's directory and use `/`.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// What the store needs of a disk. Durability is explicit: data is safe only after
/// [`Storage::sync`], and a new or renamed file's name only after [`Storage::sync_dir`].
pub trait Storage: Send {
    /// Creates a directory and its parents.
    fn create_dir_all(&mut self, dir: &str) -> io::Result<()>;
    /// File names in `dir`, sorted; empty if it does not exist.
    fn list(&self, dir: &str) -> io::Result<Vec<String>>;
    /// Creates an empty file; fails if it exists.
    fn create(&mut self, path: &str) -> io::Result<()>;
    /// Appends bytes to a file.
    fn append(&mut self, path: &str, bytes: &[u8]) -> io::Result<()>;
    /// Makes a file's data durable (`fdatasync`).
    fn sync(&mut self, path: &str) -> io::Result<()>;
    /// Makes a directory's entries durable.
    fn sync_dir(&mut self, dir: &str) -> io::Result<()>;
    /// Cuts a file to `len` bytes.
    fn truncate(&mut self, path: &str, len: u64) -> io::Result<()>;
    /// Renames a file.
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file.
    fn remove(&mut self, path: &str) -> io::Result<()>;
    /// A file's length.
    fn len(&self, path: &str) -> io::Result<u64>;
    /// Reads `len` bytes at `offset`.
    fn read_at(&self, path: &str, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// Reads a whole file.
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        let len = self.len(path)?;
        self.read_at(path, 0, usize::try_from(len).map_err(io::Error::other)?)
    }
}

/// The real file system, rooted at a directory.
#[derive(Debug)]
pub struct FsStorage {
    root: PathBuf,
    // Append handles, kept open; a lookup cache, never iterated for anything encoded.
    open: BTreeMap<String, File>,
}

impl FsStorage {
    /// Storage rooted at `root` (created if missing).
    pub fn new(root: impl Into<PathBuf>) -> io::Result<FsStorage> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        Ok(FsStorage { root, open: BTreeMap::new() })
    }

    /// The directory.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn handle(&mut self, rel: &str) -> io::Result<&mut File> {
        if !self.open.contains_key(rel) {
            let file = OpenOptions::new().append(true).open(self.path(rel))?;
            self.open.insert(rel.to_owned(), file);
        }
        self.open.get_mut(rel).ok_or_else(|| io::Error::other("handle vanished"))
    }
}

impl Storage for FsStorage {
    fn create_dir_all(&mut self, dir: &str) -> io::Result<()> {
        fs::create_dir_all(self.path(dir))
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        match fs::read_dir(self.path(dir)) {
            Ok(entries) => {
                for entry in entries {
                    let entry = entry?;
                    if entry.file_type()?.is_file() {
                        out.push(entry.file_name().to_string_lossy().into_owned());
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        out.sort();
        Ok(out)
    }

    fn create(&mut self, path: &str) -> io::Result<()> {
        OpenOptions::new().write(true).create_new(true).open(self.path(path)).map(drop)
    }

    fn append(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.handle(path)?.write_all(bytes)
    }

    fn sync(&mut self, path: &str) -> io::Result<()> {
        self.handle(path)?.sync_data()
    }

    fn sync_dir(&mut self, dir: &str) -> io::Result<()> {
        File::open(self.path(dir))?.sync_all()
    }

    fn truncate(&mut self, path: &str, len: u64) -> io::Result<()> {
        self.open.remove(path);
        let file = OpenOptions::new().write(true).open(self.path(path))?;
        file.set_len(len)?;
        file.sync_all()
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.open.remove(from);
        fs::rename(self.path(from), self.path(to))
    }

    fn remove(&mut self, path: &str) -> io::Result<()> {
        self.open.remove(path);
        fs::remove_file(self.path(path))
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        Ok(fs::metadata(self.path(path))?.len())
    }

    fn read_at(&self, path: &str, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut file = File::open(self.path(path))?;
        file.seek(SeekFrom::Start(offset))?;
        let mut out = vec![0; len];
        file.read_exact(&mut out)?;
        Ok(out)
    }
}
