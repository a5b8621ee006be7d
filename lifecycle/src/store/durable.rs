//! Durable storage behind the session store: a small trait and two
//! backends.
//!
//! A log's bytes go through two states: `written` (handed to the OS, lost
//! or torn by a crash) → `synced` (an fsync returned: survives a crash).
//! [`Durable::write`] appends whole records, [`Durable::sync`] makes them
//! durable, [`Durable::truncate`] cuts a torn tail before the next append
//! (D9). A failed write, sync or truncate is returned, never swallowed
//! (D10).
//!
//! - [`MemoryDurable`] is the simulator's disk. It keeps written bytes
//!   apart from synced ones, so a harness can take a [`CrashImage`] at any
//!   instant and rebuild a disk from it with any tear of the unsynced bytes;
//!   [`MemoryDurable::fail_next`] makes the next write or sync fail (EIO,
//!   or ENOSPC after half the bytes), as a fault a scenario's task arms at
//!   a point the checker chooses.
//! - [`FileDurable`] keeps append-only JSON lines, one file per session id;
//!   creating a log fsyncs the directory. Its file names fit the OS limit
//!   for any id, and [`FileDurable::lock`] makes one process at a time the
//!   writer of a log (A9). It lives in `file_durable.rs`.
//!
//! Both parse with [`parse_log`]: a torn last record is reported (not an
//! error) with the records before it; a bad record before the last is
//! corruption (an error).

use crate::rt::{Mutex, Rt};
use crate::session_log::Entry;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

#[path = "file_durable.rs"]
mod file_durable;
pub use file_durable::{FileDurable, LockError, PLAIN_NAME_MAX};

/// One durable record: an entry of the session with serial `serial`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableRecord {
    /// The session (several sessions may have used one id over time).
    pub serial: u64,
    /// The entry.
    pub entry: Entry,
}

/// A torn or unreadable tail found on load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the bad tail starts.
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Why it was rejected.
    pub reason: String,
}

/// What `load` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Every complete record, in order.
    pub records: Vec<DurableRecord>,
    /// A torn tail, if the last record was cut short.
    pub torn: Option<TornTail>,
}

/// Durable, append-only storage of session logs, keyed by session id.
/// `write`, `sync` and `load` are required; every other method has a
/// default, so a method added later breaks no implementation.
pub trait Durable: Send + Sync + 'static {
    /// Append `records` to the log of `id` (written, not yet synced).
    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()>;
    /// Make everything written to the log of `id` durable (fsync).
    fn sync(&self, id: &str) -> io::Result<()>;
    /// Read the log of `id` (empty if it has none).
    fn load(&self, id: &str) -> io::Result<Loaded>;
    /// Read the log of `id` record by record, keeping none (a long log
    /// is never held whole): `visit` sees each complete record in order
    /// and returns whether to go on. The torn tail, as `load` reports it.
    fn scan(
        &self,
        id: &str,
        visit: &mut dyn FnMut(DurableRecord) -> bool,
    ) -> io::Result<Option<TornTail>> {
        let loaded = self.load(id)?;
        for r in loaded.records {
            if !visit(r) {
                return Ok(None);
            }
        }
        Ok(loaded.torn)
    }
    /// Cut the log of `id` to its first `len` bytes and sync it: how a
    /// torn tail is dropped before the next append (D9). Default: an
    /// `Unsupported` error, so a backend that cannot cut fails the repair
    /// of a torn log with a clear error instead of appending onto it.
    fn truncate(&self, id: &str, len: u64) -> io::Result<()> {
        let _ = len;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("this storage cannot cut the torn tail of the log of {id:?}"),
        ))
    }
    /// Whether `id` has a log at all (an empty one included). Default:
    /// whether `load` finds a record or a torn tail in it (a backend that
    /// keeps empty logs says so by overriding it).
    fn exists(&self, id: &str) -> io::Result<bool> {
        let loaded = self.load(id)?;
        Ok(!loaded.records.is_empty() || loaded.torn.is_some())
    }
    /// What a flush of `id` awaits between `write` and `sync` (its I/O
    /// point), if anything beyond the executor's yield: a backend whose
    /// I/O completes asynchronously returns that completion; a test
    /// backend returns a future it resolves when it lets the flush go
    /// (`scenarios::held::HeldDurable`), holding the flush open without
    /// blocking a thread. Default: nothing.
    fn in_flight(&self, id: &str) -> Option<crate::rt::BoxFuture<()>> {
        let _ = id;
        None
    }
    /// Create the log of `id` if it has none, durably (D9: the id a client
    /// is given survives a crash before its first prompt), and take its
    /// one-writer lock ([`lock`](Durable::lock)). Default: an empty write
    /// and a sync, then the lock.
    fn create_locked(&self, id: &str) -> Result<(), LockError> {
        self.write(id, &[])?;
        self.sync(id)?;
        self.lock(id)
    }
    /// Take the one-writer lock of the log of `id` for this handle (A9): a
    /// second process that tries gets [`LockError::Held`]; locking a log
    /// this handle holds is `Ok`. Let go of by [`unlock`](Durable::unlock)
    /// or by the process's exit. Default: a backend with no locks (always
    /// `Ok`).
    fn lock(&self, id: &str) -> Result<(), LockError> {
        let _ = id;
        Ok(())
    }
    /// Let go of the lock of `id`, if this handle holds it. Default:
    /// nothing.
    fn unlock(&self, id: &str) {
        let _ = id;
    }
}

/// Records as JSON lines.
pub fn encode(records: &[DurableRecord]) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    for r in records {
        serde_json::to_writer(&mut buf, r)?;
        buf.push(b'\n');
    }
    Ok(buf)
}

/// A storage failure a [`MemoryDurable`] was told to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DiskFault {
    /// The next write fails with EIO and writes nothing.
    WriteEio,
    /// The next write fails with ENOSPC after writing half its bytes.
    WriteEnospc,
    /// The next sync fails with EIO (the bytes stay written, unsynced).
    SyncEio,
    /// The next truncate (load's repair of a torn tail) fails with EIO and
    /// leaves the file as it was. The log is append-only, so this is its
    /// only metadata operation (no rename).
    TruncateEio,
}

impl DiskFault {
    fn error(self) -> io::Error {
        match self {
            DiskFault::WriteEio => io::Error::other("EIO: write failed (simulated)"),
            DiskFault::WriteEnospc => {
                io::Error::new(io::ErrorKind::StorageFull, "ENOSPC: disk full (simulated)")
            }
            DiskFault::SyncEio => io::Error::other("EIO: fsync failed (simulated)"),
            DiskFault::TruncateEio => io::Error::other("EIO: truncate failed (simulated)"),
        }
    }
}

/// One storage operation a [`MemoryDurable`] performed, as the disk saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskOp {
    /// `write` of `bytes` bytes to `id`; `failed` if it returned an error.
    Write {
        /// The log.
        id: String,
        /// Bytes handed in.
        bytes: usize,
        /// The error returned, if any.
        failed: Option<String>,
    },
    /// `sync` of `id`.
    Sync {
        /// The log.
        id: String,
        /// The error returned, if any.
        failed: Option<String>,
    },
    /// `truncate` of `id` to `len` bytes.
    Truncate {
        /// The log.
        id: String,
        /// The new length.
        len: u64,
        /// The error returned, if any.
        failed: Option<String>,
    },
}

impl DiskOp {
    /// Whether the operation returned an error.
    pub fn failed(&self) -> bool {
        match self {
            DiskOp::Write { failed, .. }
            | DiskOp::Sync { failed, .. }
            | DiskOp::Truncate { failed, .. } => failed.is_some(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct FileBytes {
    bytes: Vec<u8>,
    synced: usize,
}

#[derive(Default)]
struct Disk {
    files: BTreeMap<String, FileBytes>,
    fail_write: Option<DiskFault>,
    fail_sync: bool,
    fail_truncate: bool,
    ops: Vec<DiskOp>,
    /// The disk after each operation, when recording crash points.
    history: Option<Vec<CrashImage>>,
}

/// The operation a planted failure waits for.
#[derive(Clone, Copy)]
enum Planted {
    Write,
    Sync,
    Truncate,
}

impl Disk {
    /// The failure planted for the next `op` ([`MemoryDurable::fail_next`]),
    /// taken.
    fn planted(&mut self, op: Planted) -> Option<DiskFault> {
        match op {
            Planted::Write => self.fail_write.take(),
            Planted::Sync => std::mem::take(&mut self.fail_sync).then_some(DiskFault::SyncEio),
            Planted::Truncate => {
                std::mem::take(&mut self.fail_truncate).then_some(DiskFault::TruncateEio)
            }
        }
    }

    /// Journal `op`, and the disk as it stands after it.
    fn did(&mut self, op: DiskOp) {
        self.ops.push(op);
        if let Some(h) = self.history.as_mut() {
            h.push(CrashImage {
                files: self.files.clone(),
            });
        }
    }
}

/// The simulator's disk: written bytes kept apart from synced ones.
pub struct MemoryDurable<R: Rt> {
    disk: Mutex<R, Disk>,
    /// The logs locked (A9): the disk's lock table, as the OS keeps
    /// `flock`s. A std mutex, held for the lookup only: taking a lock is
    /// not a scheduling point of the checkers.
    locks: std::sync::Mutex<BTreeSet<String>>,
}

impl<R: Rt> Default for MemoryDurable<R> {
    fn default() -> Self {
        MemoryDurable {
            disk: Mutex::new(Disk::default()),
            locks: std::sync::Mutex::default(),
        }
    }
}

/// The disk as a crash at one instant leaves it: per log, the synced bytes
/// and the written-but-unsynced bytes after them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CrashImage {
    files: BTreeMap<String, FileBytes>,
}

/// How a crash treats the unsynced bytes of every log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tear {
    /// Only synced bytes survive.
    DropUnsynced,
    /// The unsynced bytes survive up to the end of their `n`th record
    /// (from 1).
    KeepRecords(usize),
    /// The unsynced bytes survive up to the middle of their `n`th record
    /// (from 1): a torn last record.
    TearRecord(usize),
    /// Every written byte survives, a partial record included (not a
    /// crash: the disk as a failed write left it).
    KeepAll,
}

impl CrashImage {
    /// Every way this crash may leave the unsynced bytes, at record
    /// granularity: drop them all, keep `k` whole records, or tear the
    /// `k`th in its middle, for every `k` up to the longest unsynced run.
    pub fn tears(&self) -> Vec<Tear> {
        let most = self
            .files
            .values()
            .map(|f| line_ends(&f.bytes[f.synced..]).len())
            .max()
            .unwrap_or(0);
        let mut out = vec![Tear::DropUnsynced];
        for k in 1..=most {
            out.push(Tear::TearRecord(k));
            out.push(Tear::KeepRecords(k));
        }
        out
    }

    /// Whether any log has written bytes that were not synced.
    pub fn has_unsynced(&self) -> bool {
        self.files.values().any(|f| f.bytes.len() > f.synced)
    }

    /// The ids that have a log.
    pub fn ids(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// The records every log had synced (what D9 says must survive).
    pub fn synced(&self, id: &str) -> Vec<DurableRecord> {
        self.files
            .get(id)
            .map(|f| parse_log(&f.bytes[..f.synced], id).map(|l| l.records))
            .unwrap_or(Ok(Vec::new()))
            .unwrap_or_default()
    }

    /// Every complete record written to the log of `id`, synced or not
    /// (what a load may at most yield).
    pub fn written(&self, id: &str) -> Vec<DurableRecord> {
        self.files
            .get(id)
            .and_then(|f| parse_log(&f.bytes, id).ok())
            .map(|l| l.records)
            .unwrap_or_default()
    }

    /// A disk holding what this crash left under `tear`.
    pub fn restore<R: Rt>(&self, tear: Tear) -> MemoryDurable<R> {
        let files = self
            .files
            .iter()
            .map(|(id, f)| {
                let unsynced = &f.bytes[f.synced..];
                let ends = line_ends(unsynced);
                let starts: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).collect();
                let keep = match tear {
                    Tear::DropUnsynced => 0,
                    Tear::KeepAll => unsynced.len(),
                    Tear::KeepRecords(k) => ends.get(k - 1).copied().unwrap_or(unsynced.len()),
                    Tear::TearRecord(k) => match (starts.get(k - 1), ends.get(k - 1)) {
                        (Some(s), Some(e)) => s + (e - s) / 2,
                        _ => unsynced.len(),
                    },
                };
                let bytes = f.bytes[..f.synced + keep].to_vec();
                let synced = bytes.len();
                (id.clone(), FileBytes { bytes, synced })
            })
            .collect();
        // A restart: no lock outlives the process that held it.
        MemoryDurable {
            disk: Mutex::new(Disk {
                files,
                ..Disk::default()
            }),
            locks: std::sync::Mutex::default(),
        }
    }
}

/// Offsets just past each `\n` of `bytes`.
fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

impl<R: Rt> MemoryDurable<R> {
    /// Make the next write (for a write fault), the next sync (for
    /// [`DiskFault::SyncEio`]) or the next truncate (for
    /// [`DiskFault::TruncateEio`]) of any log fail as `fault` says.
    pub fn fail_next(&self, fault: DiskFault) {
        self.disk.with(|d| match fault {
            DiskFault::SyncEio => d.fail_sync = true,
            DiskFault::TruncateEio => d.fail_truncate = true,
            write => d.fail_write = Some(write),
        });
    }

    /// Drop every log's written, unsynced bytes, as the page cache may
    /// after a failed fsync (the durability model assumes it does).
    pub fn drop_unsynced(&self) {
        self.disk.with(|d| {
            for f in d.files.values_mut() {
                f.bytes.truncate(f.synced);
            }
        });
    }

    /// A disk that keeps its image after every operation: the crash points
    /// of [`MemoryDurable::crash_points`].
    pub fn recording() -> Self {
        MemoryDurable {
            disk: Mutex::new(Disk {
                history: Some(Vec::new()),
                ..Disk::default()
            }),
            locks: std::sync::Mutex::default(),
        }
    }

    /// Every distinct state a crash could find this disk in, so far: index
    /// `i` is the disk after its first `i` operations (index 0: before
    /// any). Between two operations the disk does not change, so a crash
    /// at any instant finds one of these. Empty unless built with
    /// [`MemoryDurable::recording`].
    pub fn crash_points(&self) -> Vec<CrashImage> {
        self.disk.with(|d| match &d.history {
            Some(h) => std::iter::once(CrashImage::default())
                .chain(h.iter().cloned())
                .collect(),
            None => Vec::new(),
        })
    }

    /// Operations performed so far.
    pub fn op_count(&self) -> usize {
        self.disk.with(|d| d.ops.len())
    }

    /// What a crash at this instant leaves on disk.
    pub fn crash_image(&self) -> CrashImage {
        CrashImage {
            files: self.disk.with(|d| d.files.clone()),
        }
    }

    /// The logs locked now, as another process trying each would find
    /// them (the harness's check of A9, from the disk's side).
    pub fn locked(&self) -> BTreeSet<String> {
        self.lock_table().clone()
    }

    fn lock_table(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.locks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every operation the disk performed, in order (the receiving side of
    /// the store's writes).
    pub fn ops(&self) -> Vec<DiskOp> {
        self.disk.with(|d| d.ops.clone())
    }
}

impl<R: Rt> Durable for MemoryDurable<R> {
    fn lock(&self, id: &str) -> Result<(), LockError> {
        self.lock_table().insert(id.to_string());
        Ok(())
    }

    fn unlock(&self, id: &str) {
        self.lock_table().remove(id);
    }

    fn exists(&self, id: &str) -> io::Result<bool> {
        Ok(self.disk.with(|d| d.files.contains_key(id)))
    }

    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()> {
        let buf = encode(records)?;
        self.disk.with(|d| {
            let fault = d.planted(Planted::Write);
            let file = d.files.entry(id.to_string()).or_default();
            let result = match fault {
                None => {
                    file.bytes.extend_from_slice(&buf);
                    Ok(())
                }
                Some(DiskFault::WriteEnospc) => {
                    file.bytes.extend_from_slice(&buf[..buf.len() / 2]);
                    Err(DiskFault::WriteEnospc.error())
                }
                Some(f) => Err(f.error()),
            };
            d.did(DiskOp::Write {
                id: id.to_string(),
                bytes: buf.len(),
                failed: result.as_ref().err().map(|e| e.to_string()),
            });
            result
        })
    }

    fn sync(&self, id: &str) -> io::Result<()> {
        self.disk.with(|d| {
            let result = if let Some(f) = d.planted(Planted::Sync) {
                Err(f.error())
            } else {
                if let Some(f) = d.files.get_mut(id) {
                    f.synced = f.bytes.len();
                }
                Ok(())
            };
            d.did(DiskOp::Sync {
                id: id.to_string(),
                failed: result.as_ref().err().map(|e| e.to_string()),
            });
            result
        })
    }

    fn load(&self, id: &str) -> io::Result<Loaded> {
        let bytes = self
            .disk
            .with(|d| d.files.get(id).map(|f| f.bytes.clone()).unwrap_or_default());
        parse_log(&bytes, id)
    }

    fn truncate(&self, id: &str, len: u64) -> io::Result<()> {
        self.disk.with(|d| {
            if let Some(f) = d.planted(Planted::Truncate) {
                let e = f.error();
                d.did(DiskOp::Truncate {
                    id: id.to_string(),
                    len,
                    failed: Some(e.to_string()),
                });
                return Err(e);
            }
            if let Some(f) = d.files.get_mut(id) {
                f.bytes.truncate(len as usize);
                f.synced = f.bytes.len();
            }
            d.did(DiskOp::Truncate {
                id: id.to_string(),
                len,
                failed: None,
            });
            Ok(())
        })
    }
}

/// Parse a plain JSON-lines log file, one without a header line (missing:
/// empty). See [`parse_log`]. A [`FileDurable`] also reads hashed-name
/// logs, whose first line is a header.
pub fn load_file(path: &Path) -> io::Result<Loaded> {
    match std::fs::read(path) {
        Ok(b) => parse_log(&b, &path.display().to_string()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Loaded::default()),
        Err(e) => Err(e),
    }
}

/// Parse JSON-lines log bytes. A last line without its newline, or one
/// that does not parse, is a torn tail (reported, not fatal); a bad line
/// before the last is corruption (an error naming `what` and the offset).
pub fn parse_log(bytes: &[u8], what: &str) -> io::Result<Loaded> {
    let mut records = Vec::new();
    let torn = scan_log(bytes, what, &mut |r| {
        records.push(r);
        true
    })?;
    Ok(Loaded { records, torn })
}

/// The longest record line a log holds, newline excluded (A10). The server
/// writes none longer (a prompt whose record would be is refused,
/// `acp::server`), so a longer line is damage: read as a stream, never
/// held, it is a torn tail when it is the last line and corruption before.
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// One line read by [`read_line_bounded`].
struct LineRead {
    /// Bytes consumed, newline included.
    n: usize,
    /// It ended with a newline.
    complete: bool,
    /// It was longer than the bound: not kept (the buffer is empty).
    over: bool,
}

/// Read one line into `line` (cleared first), keeping at most `max` bytes
/// of it and its newline: a longer one is consumed to its end and
/// reported `over`, its bytes dropped as they stream.
fn read_line_bounded(
    input: &mut impl io::BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    line.clear();
    let (mut n, mut over) = (0, false);
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(LineRead {
                n,
                complete: false,
                over,
            });
        }
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !over && line.len() + take > max + 1 {
            over = true;
            line.clear();
            line.shrink_to_fit();
        }
        if !over {
            line.extend_from_slice(&buf[..take]);
        }
        input.consume(take);
        n += take;
        if complete {
            return Ok(LineRead { n, complete, over });
        }
    }
}

/// A line buffer larger than this is freed after its record is parsed,
/// not kept for the next line.
const LARGE_LINE_BYTES: usize = 1 << 20;

/// Read JSON-lines log records from `input` one line at a time, keeping
/// none: `visit` sees each complete record in order and returns whether
/// to go on. The torn tail, as [`parse_log`] defines it (none if `visit`
/// stopped the scan). Memory: one line of at most [`MAX_RECORD_BYTES`].
pub fn scan_log(
    mut input: impl io::BufRead,
    what: &str,
    visit: &mut dyn FnMut(DurableRecord) -> bool,
) -> io::Result<Option<TornTail>> {
    let mut offset = 0u64;
    let mut line = Vec::new();
    loop {
        let LineRead { n, complete, over } =
            read_line_bounded(&mut input, &mut line, MAX_RECORD_BYTES)?;
        if n == 0 {
            return Ok(None);
        }
        let parsed = if over {
            Err(format!(
                "a line of {n} bytes, longer than the longest record ({MAX_RECORD_BYTES} bytes)"
            ))
        } else {
            let body = if complete {
                &line[..line.len() - 1]
            } else {
                &line[..]
            };
            serde_json::from_slice::<DurableRecord>(body).map_err(|e| e.to_string())
        };
        // A large line's buffer goes before the record is visited: a
        // replay then holds the record and what it sends, not the line too.
        if line.capacity() > LARGE_LINE_BYTES {
            line = Vec::new();
        }
        let is_last = !complete || input.fill_buf()?.is_empty();
        match (parsed, complete) {
            (Ok(r), true) => {
                if !visit(r) {
                    return Ok(None);
                }
            }
            (result, _) if is_last => {
                let reason = match result {
                    Ok(_) => "last record has no terminating newline".to_string(),
                    Err(e) => format!("last record is cut short: {e}"),
                };
                return Ok(Some(TornTail {
                    offset,
                    bytes: n as u64,
                    reason,
                }));
            }
            (Err(e), _) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{what}: corrupt record at byte {offset}: {e}"),
                ))
            }
            (Ok(_), false) => unreachable!("an incomplete line is the last"),
        }
        offset += n as u64;
    }
}
