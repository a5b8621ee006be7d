//! [`FileDurable`]: append-only JSON-lines files, one per session id, in a
//! directory, and the advisory lock that makes one process at a time the
//! writer of a session's log (A9).
//!
//! File names. A log is `session-<hex of the id's bytes>.jsonl` while that
//! name is at most [`PLAIN_NAME_MAX`] bytes (ids up to 93 bytes), so every
//! directory written before hashed names existed loads as it is. A longer
//! id would pass the usual 255-byte limit on a file name, so its log is
//! `session-h<SHA-256 of the id, hex>.jsonl` (79 bytes; `h` is no hex
//! digit, so the two kinds of name never meet). A hashed-name file keeps
//! its id in a first line, the header `{"session-id":"<id>"}`; `load`,
//! `write`, `truncate` and `lock` refuse a file whose header names another
//! id (a hash collision, or a file copied by hand) with an `InvalidData`
//! error naming both ids.
//!
//! The header is not part of the log: offsets ([`TornTail::offset`], the
//! length given to [`Durable::truncate`]) count from the first record, as
//! in a plain file, and `truncate` adds the header's length. The header is
//! written whole before the file has its name (a temporary file, fsynced,
//! then hard-linked into place without replacing anything), so a crash
//! never leaves a hashed log without its header; it may leave a
//! `.session-….tmp` file, which nothing reads.
//!
//! Locks. [`FileDurable::lock`] takes an exclusive, non-blocking `flock(2)`
//! on the log (through `fs4`) and keeps the locked file open until
//! [`FileDurable::unlock`] or the drop of the `FileDurable`. The lock
//! belongs to that open file, so a second process, or a second
//! `FileDurable` in the same process, gets [`LockError::Held`]. It is
//! advisory: `write` does not check it; the caller locks a log before it
//! writes to it. A held log is written and synced through its locked file
//! (one descriptor per held log, none per write). `exists` looks at the
//! file name only.
//!
//! Only regular files are logs (A10). Every open is non-blocking
//! (`O_NONBLOCK`, so a FIFO's open returns at once instead of waiting for
//! a writer) and is checked on the open descriptor (`fstat`, so nothing
//! can be swapped in between): a FIFO, a device, a directory, a socket, or
//! a link to one, is an `InvalidInput` error naming what it is, and no
//! byte of it is read. The flag is cleared again on a regular file.
//!
//! [`TornTail::offset`]: crate::store::durable::TornTail::offset

use crate::store::durable::{encode, scan_log, Durable, DurableRecord, Loaded, TornTail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The longest plain log name, `session-<hex>.jsonl`, in bytes; a longer
/// one is replaced by a hashed name. Well under the usual 255-byte limit.
pub const PLAIN_NAME_MAX: usize = 200;

/// Append-only JSON-lines files, one per session id, in a directory. See
/// the module docs for file names and locks.
pub struct FileDurable {
    dir: PathBuf,
    /// The logs this `FileDurable` has locked, each with its open, locked
    /// file (closing it releases the lock).
    locks: Mutex<BTreeMap<String, Arc<File>>>,
}

/// Why [`FileDurable::lock`] failed.
#[derive(Debug)]
pub enum LockError {
    /// Another holder (another process, or another `FileDurable` in this
    /// one) has the log of session `id` locked.
    Held {
        /// The session.
        id: String,
    },
    /// Creating, opening or locking the log failed (a hashed log whose
    /// header names another id is `InvalidData`).
    Io(io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // `{:?}` escapes newlines: the message stays on one line.
            LockError::Held { id } => {
                write!(f, "the log of session {id:?} is in use by another process")
            }
            LockError::Io(e) => write!(f, "cannot lock the session log: {e}"),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Held { .. } => None,
            LockError::Io(e) => Some(e),
        }
    }
}

impl From<io::Error> for LockError {
    fn from(e: io::Error) -> Self {
        LockError::Io(e)
    }
}

impl From<LockError> for io::Error {
    /// `Held` becomes `ResourceBusy` with the same message.
    fn from(e: LockError) -> Self {
        match e {
            LockError::Held { .. } => io::Error::new(io::ErrorKind::ResourceBusy, e.to_string()),
            LockError::Io(e) => e,
        }
    }
}

/// The first line of a hashed-name log.
#[derive(Serialize, Deserialize)]
struct Header {
    #[serde(rename = "session-id")]
    session_id: String,
}

/// The file name of the log of `id`, and whether it is hashed.
fn file_name(id: &str) -> (String, bool) {
    let plain = format!("session-{}.jsonl", hex(id.as_bytes()));
    if plain.len() <= PLAIN_NAME_MAX {
        (plain, false)
    } else {
        let hash = hex(&Sha256::digest(id.as_bytes()));
        (format!("session-h{hash}.jsonl"), true)
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// The header line of `bytes` (a hashed log's start): the id it names
/// and its length, newline included.
fn split_header(bytes: &[u8], path: &Path) -> io::Result<(String, usize)> {
    let Some(end) = bytes.iter().position(|b| *b == b'\n') else {
        return Err(invalid(format!(
            "{}: no header line naming the log's session",
            path.display()
        )));
    };
    let header: Header = serde_json::from_slice(&bytes[..end])
        .map_err(|e| invalid(format!("{}: bad header line: {e}", path.display())))?;
    Ok((header.session_id, end + 1))
}

/// Fail unless the header names `id`.
fn check_header(found: &str, id: &str, path: &Path) -> io::Result<()> {
    if found == id {
        return Ok(());
    }
    Err(invalid(format!(
        "{}: this log belongs to session {found:?}, not to session {id:?} \
         (a hash collision or a file copied by hand)",
        path.display()
    )))
}

/// Open `path` with `options` if it is a regular file (see the module
/// docs): without blocking on a FIFO, checked on the open descriptor.
fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let f = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let kind = f.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {what}, not a session log", path.display()),
        ));
    }
    // SAFETY: fcntl on a descriptor this function owns; F_GETFL/F_SETFL
    // only read and set its status flags.
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(f)
}

/// Read the header of the open log `f` and check that it names `id`;
/// returns its length.
fn read_header(f: &File, id: &str, path: &Path) -> io::Result<u64> {
    let mut line = Vec::new();
    BufReader::new(f).read_until(b'\n', &mut line)?;
    let (found, len) = split_header(&line, path)?;
    check_header(&found, id, path)?;
    Ok(len as u64)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl FileDurable {
    /// Store logs under `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(FileDurable {
            dir,
            locks: Mutex::new(BTreeMap::new()),
        })
    }

    /// The file of session `id`: `session-<hex of id>.jsonl`, or
    /// `session-h<sha256 of id>.jsonl` when that name would be longer than
    /// [`PLAIN_NAME_MAX`]. Any id gives a safe name within the OS limit.
    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(file_name(id).0)
    }

    /// Create the log of `id` if it has none (a hashed one with its
    /// header), fsyncing the directory; returns its path and whether its
    /// name is hashed.
    fn create_if_missing(&self, id: &str) -> io::Result<(PathBuf, bool)> {
        let (name, hashed) = file_name(id);
        let path = self.dir.join(&name);
        if path.try_exists()? {
            return Ok((path, hashed));
        }
        if hashed {
            self.create_hashed(id, &name, &path)?;
        } else {
            OpenOptions::new().create(true).append(true).open(&path)?;
        }
        // The new file's directory entry must survive a crash too.
        sync_dir(&self.dir)?;
        Ok((path, hashed))
    }

    /// Put a file holding only the header of `id` at `path`, atomically:
    /// written and fsynced under a temporary name, then hard-linked (which
    /// never replaces a file another writer created meanwhile).
    fn create_hashed(&self, id: &str, name: &str, path: &Path) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!(".{name}.{}-{n}.tmp", std::process::id()));
        let mut line = serde_json::to_vec(&Header {
            session_id: id.to_string(),
        })?;
        line.push(b'\n');
        // The name is unique among live processes: one that exists is left
        // by a crash of a process that had our pid, and is overwritten.
        let linked = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(&line)?;
                f.sync_all()?;
                match std::fs::hard_link(&tmp, path) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
                    _ => Ok(()),
                }
            });
        let removed = std::fs::remove_file(&tmp);
        linked?;
        removed
    }

    /// Lock the log of `id` for this `FileDurable`: creates the log if it
    /// has none (empty; loadable), then takes an exclusive `flock` without
    /// waiting, held until [`FileDurable::unlock`] or drop. Locking a log
    /// this `FileDurable` already holds is `Ok`. Another holder, in this
    /// process or another, gives [`LockError::Held`].
    pub fn lock(&self, id: &str) -> Result<(), LockError> {
        // Held across the I/O, so two threads locking one id here do not
        // collide with each other's open file.
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if locks.contains_key(id) {
            return Ok(());
        }
        let (path, hashed) = self.create_if_missing(id)?;
        let f = open_regular(&path, OpenOptions::new().read(true).append(true))?;
        if hashed {
            read_header(&f, id, &path)?;
        }
        // Called through the trait: std's inherent `File::try_lock` (Rust
        // 1.89+) would shadow it, and our rust-version is older.
        match fs4::FileExt::try_lock(&f) {
            Ok(()) => {
                locks.insert(id.to_string(), Arc::new(f));
                Ok(())
            }
            Err(fs4::TryLockError::WouldBlock) => Err(LockError::Held { id: id.to_string() }),
            Err(fs4::TryLockError::Error(e)) => Err(LockError::Io(e)),
        }
    }

    /// The locked file of `id`, if this `FileDurable` holds its lock.
    fn held(&self, id: &str) -> Option<Arc<File>> {
        let locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.get(id).cloned()
    }

    /// Release the lock on the log of `id`, if this `FileDurable` holds it.
    pub fn unlock(&self, id: &str) {
        // Closing the locked file releases its lock.
        self.locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

impl Durable for FileDurable {
    fn exists(&self, id: &str) -> io::Result<bool> {
        self.path(id).try_exists()
    }

    /// [`FileDurable::lock`] creates the log if it has none.
    fn create_locked(&self, id: &str) -> Result<(), LockError> {
        FileDurable::lock(self, id)
    }

    fn lock(&self, id: &str) -> Result<(), LockError> {
        FileDurable::lock(self, id)
    }

    fn unlock(&self, id: &str) {
        FileDurable::unlock(self, id)
    }

    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()> {
        let buf = encode(records)?;
        // A log this process holds is written through its locked file: a
        // session's appends need no new descriptor (A10: running out of
        // descriptors fails only the request that needed one).
        if let Some(f) = self.held(id) {
            return (&*f).write_all(&buf);
        }
        let (path, hashed) = self.create_if_missing(id)?;
        let mut f = open_regular(&path, OpenOptions::new().read(hashed).append(true))?;
        if hashed {
            read_header(&f, id, &path)?;
        }
        f.write_all(&buf)
    }

    fn sync(&self, id: &str) -> io::Result<()> {
        if let Some(f) = self.held(id) {
            return f.sync_data();
        }
        match open_regular(&self.path(id), OpenOptions::new().append(true)) {
            Ok(f) => f.sync_data(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn load(&self, id: &str) -> io::Result<Loaded> {
        let mut records = Vec::new();
        let torn = self.scan(id, &mut |r| {
            records.push(r);
            true
        })?;
        Ok(Loaded { records, torn })
    }

    /// Streams the file: one line in memory at a time (A10: loading a
    /// long log does not hold it whole).
    fn scan(
        &self,
        id: &str,
        visit: &mut dyn FnMut(DurableRecord) -> bool,
    ) -> io::Result<Option<TornTail>> {
        let (name, hashed) = file_name(id);
        let path = self.dir.join(name);
        let file = match open_regular(&path, OpenOptions::new().read(true)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut input = BufReader::with_capacity(64 << 10, file);
        if !hashed {
            return scan_log(input, &path.display().to_string(), visit);
        }
        let mut header = Vec::new();
        input.read_until(b'\n', &mut header)?;
        let (found, start) = split_header(&header, &path)?;
        check_header(&found, id, &path)?;
        let what = format!("{} (records after its {start}-byte header)", path.display());
        scan_log(input, &what, visit)
    }

    /// Cut the log to its first `len` bytes of records (a hashed log keeps
    /// its header) and sync it.
    fn truncate(&self, id: &str, len: u64) -> io::Result<()> {
        let (name, hashed) = file_name(id);
        let path = self.dir.join(name);
        let f = open_regular(&path, OpenOptions::new().read(hashed).write(true))?;
        let header = if hashed {
            read_header(&f, id, &path)?
        } else {
            0
        };
        f.set_len(header + len)?;
        f.sync_all()
    }
}
