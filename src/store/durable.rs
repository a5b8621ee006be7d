//! Durable storage behind the session store: a small trait and two
//! backends. [`MemoryDurable`] (the simulator's disk: what was written
//! survives a simulated crash, what was only pending in the store is lost)
//! and [`FileDurable`] (append-only JSON lines, `fsync` on every write; a
//! torn last record is detected on load and reported, earlier ones kept).

use crate::rt::{Mutex, Rt};
use crate::session_log::Entry;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
pub trait Durable: Send + Sync + 'static {
    /// Append `records` to the log of `id`; durable when this returns.
    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()>;
    /// Read the log of `id` (empty if it has none).
    fn load(&self, id: &str) -> io::Result<Loaded>;
}

/// The simulator's disk.
pub struct MemoryDurable<R: Rt> {
    logs: Mutex<R, BTreeMap<String, Vec<DurableRecord>>>,
}

impl<R: Rt> Default for MemoryDurable<R> {
    fn default() -> Self {
        MemoryDurable {
            logs: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<R: Rt> Durable for MemoryDurable<R> {
    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()> {
        self.logs.with(|l| {
            l.entry(id.to_string())
                .or_default()
                .extend_from_slice(records)
        });
        Ok(())
    }

    fn load(&self, id: &str) -> io::Result<Loaded> {
        Ok(Loaded {
            records: self.logs.with(|l| l.get(id).cloned().unwrap_or_default()),
            torn: None,
        })
    }
}

/// Append-only JSON-lines files, one per session id, in a directory.
pub struct FileDurable {
    dir: PathBuf,
}

impl FileDurable {
    /// Store logs under `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(FileDurable { dir })
    }

    /// The file of session `id`. Ids are hex-encoded so any id is a safe
    /// file name.
    pub fn path(&self, id: &str) -> PathBuf {
        let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("session-{hex}.jsonl"))
    }
}

impl Durable for FileDurable {
    fn write(&self, id: &str, records: &[DurableRecord]) -> io::Result<()> {
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(&mut buf, r)?;
            buf.push(b'\n');
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(id))?;
        f.write_all(&buf)?;
        f.sync_data()
    }

    fn load(&self, id: &str) -> io::Result<Loaded> {
        load_file(&self.path(id))
    }
}

/// Parse a JSON-lines log. A last line without its newline, or one that
/// does not parse, is a torn tail (reported, not fatal); a bad line before
/// the last is corruption (an error).
pub fn load_file(path: &Path) -> io::Result<Loaded> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(e),
    };
    let mut loaded = Loaded::default();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let (line, complete) = match rest.iter().position(|b| *b == b'\n') {
            Some(n) => (&rest[..n], true),
            None => (rest, false),
        };
        let parsed = serde_json::from_slice::<DurableRecord>(line);
        let is_last = !complete || offset + line.len() + 1 >= bytes.len();
        match (parsed, complete) {
            (Ok(r), true) => loaded.records.push(r),
            (result, _) if is_last => {
                let reason = match result {
                    Ok(_) => "last record has no terminating newline".to_string(),
                    Err(e) => format!("last record is cut short: {e}"),
                };
                loaded.torn = Some(TornTail {
                    offset: offset as u64,
                    bytes: rest.len() as u64,
                    reason,
                });
                break;
            }
            (Err(e), _) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: corrupt record at byte {offset}: {e}", path.display()),
                ))
            }
            (Ok(_), false) => unreachable!("an incomplete line is the last"),
        }
        offset += line.len() + 1;
    }
    Ok(loaded)
}
