//! The file backend's storage names and its lock (A9): any id
//! gets a file name within the OS limit and round-trips; a hashed-name log
//! keeps its id in a header and refuses another id's file; offsets on a
//! hashed log count from its first record; one `FileDurable` at a time
//! holds a log's lock.

use lifecycle::journal::EndReason;
use lifecycle::rt::TokioRt;
use lifecycle::session_log::Entry;
use lifecycle::store::durable::{Durable, DurableRecord, FileDurable, LockError, PLAIN_NAME_MAX};
use lifecycle::store::SessionStore;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use tempfile::TempDir;

/// A turn that ended `reason`.
fn end(serial: u64, prompt: u64, reason: EndReason) -> DurableRecord {
    DurableRecord {
        serial,
        entry: Entry::TurnEnd { prompt, reason },
    }
}

/// A completed turn.
fn rec(serial: u64, prompt: u64) -> DurableRecord {
    end(serial, prompt, EndReason::Completed)
}

fn start(serial: u64, prompt: u64) -> DurableRecord {
    DurableRecord {
        serial,
        entry: Entry::TurnStart { prompt },
    }
}

/// A file backend on a fresh directory (kept alive by the `TempDir`).
fn fresh() -> (TempDir, FileDurable) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    (dir, d)
}

/// Append `records` to `id` and sync them.
fn append(d: &FileDurable, id: &str, records: &[DurableRecord]) {
    d.write(id, records).expect("write");
    d.sync(id).expect("sync");
}

/// `id` loads as exactly `want`, with no torn tail.
#[track_caller]
fn assert_log(d: &FileDurable, id: &str, want: &[DurableRecord]) {
    let loaded = d.load(id).expect("load");
    assert_eq!(loaded.records, want, "{id:?}");
    assert!(loaded.torn.is_none(), "{id:?}: {:?}", loaded.torn);
}

/// Write `records` to `id` (the last one in an append of its own), then
/// cut `by` bytes off the file, as a crash in the middle of the last write
/// would; the file's length after the cut.
fn torn(d: &FileDurable, id: &str, records: &[DurableRecord], by: u64) -> u64 {
    let (last, earlier) = records.split_last().expect("records");
    d.write(id, earlier).expect("write");
    d.write(id, std::slice::from_ref(last)).expect("write");
    let path = d.path(id);
    let len = std::fs::metadata(&path).expect("meta").len() - by;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open")
        .set_len(len)
        .expect("tear");
    len
}

fn name(path: &Path) -> String {
    path.file_name()
        .expect("a file name")
        .to_str()
        .expect("ASCII")
        .to_string()
}

fn hex(id: &str) -> String {
    id.bytes().map(|b| format!("{b:02x}")).collect()
}

/// An id of `n` bytes with `/`, NUL, newlines and non-ASCII in it.
fn hostile(n: usize) -> String {
    let mut id = String::from("a/b\0c\nd\r\u{e9}\u{65e5}\u{1f389}/../");
    while id.len() < n {
        id.push(char::from(b'a' + (id.len() % 26) as u8));
    }
    assert_eq!(id.len(), n);
    id
}

/// The length of the header line of a hashed log (the bytes before its
/// first record).
fn header_len(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("read");
    let end = bytes.iter().position(|b| *b == b'\n').expect("a header");
    (end + 1) as u64
}

#[test]
fn a9_any_id_round_trips_within_the_name_limit() {
    let (dir, d) = fresh();
    let ids = [
        "x".repeat(300),
        "y".repeat(4000),
        format!("{}z", "y".repeat(3999)),
        hostile(40),
        hostile(300),
        hostile(4000),
    ];
    for id in &ids {
        assert!(!d.exists(id).expect("exists"), "{id:?}");
        append(&d, id, &[rec(1, 0)]);
        append(&d, id, &[rec(1, 1), rec(2, 2)]);
        assert!(d.exists(id).expect("exists"));
        assert_log(&d, id, &[rec(1, 0), rec(1, 1), rec(2, 2)]);
        let path = d.path(id);
        assert!(name(&path).len() <= 255, "{}", name(&path));
        assert_eq!(path.parent(), Some(dir.path()), "stays in the directory");
    }
    // One file per id, and a reopened store reads them all.
    let files = std::fs::read_dir(dir.path()).expect("ls").count();
    assert_eq!(files, ids.len(), "no stray temporary files");
    let again = FileDurable::new(dir.path()).expect("dir");
    for id in &ids {
        assert_log(&again, id, &[rec(1, 0), rec(1, 1), rec(2, 2)]);
    }
}

#[test]
fn a9_short_ids_keep_the_plain_name_and_old_files_load() {
    let (dir, d) = fresh();
    // An old-format file, written by hand: no header.
    let id = hostile(40);
    let mut old = serde_json::to_vec(&rec(1, 0)).expect("json");
    old.push(b'\n');
    let path = dir.path().join(format!("session-{}.jsonl", hex(&id)));
    std::fs::write(&path, &old).expect("write");
    assert_eq!(d.path(&id), path);
    assert_log(&d, &id, &[rec(1, 0)]);
    d.write(&id, &[rec(1, 1)]).expect("append");
    assert_log(&d, &id, &[rec(1, 0), rec(1, 1)]);
    // The boundary: the longest plain name, then the first hashed one.
    let longest = "p".repeat((PLAIN_NAME_MAX - "session-.jsonl".len()) / 2);
    assert_eq!(name(&d.path(&longest)).len(), PLAIN_NAME_MAX);
    assert_eq!(
        name(&d.path(&longest)),
        format!("session-{}.jsonl", hex(&longest))
    );
    let hashed = format!("{longest}p");
    let hashed_name = name(&d.path(&hashed));
    assert!(hashed_name.starts_with("session-h"), "{hashed_name}");
    assert_eq!(hashed_name.len(), "session-h.jsonl".len() + 64);
}

#[test]
fn a9_an_empty_log_exists_hashed_or_not() {
    let (_dir, d) = fresh();
    for id in ["short".to_string(), "l".repeat(500)] {
        assert!(!d.exists(&id).expect("exists"));
        // A session with no log yet loads as an empty one, not an error;
        // syncing it is a no-op.
        assert_log(&d, &id, &[]);
        d.sync(&id).expect("sync of no log");
        assert!(!d.exists(&id).expect("exists"), "loading created nothing");
        append(&d, &id, &[]);
        assert!(d.exists(&id).expect("exists"));
        assert_log(&d, &id, &[]);
        d.write(&id, &[rec(1, 0)]).expect("write");
        assert_log(&d, &id, &[rec(1, 0)]);
    }
}

#[test]
fn a9_a_hashed_log_naming_another_id_is_refused() {
    let (_dir, d) = fresh();
    let mine = format!("mine-{}", "m".repeat(300));
    let theirs = format!("theirs-{}", "t".repeat(300));
    d.write(&theirs, &[rec(1, 0)]).expect("write");
    // A file copied by hand under the other id's name.
    std::fs::copy(d.path(&theirs), d.path(&mine)).expect("copy");
    let before = std::fs::read(d.path(&mine)).expect("read");
    let err = d.load(&mine).expect_err("another id's log");
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    let message = err.to_string();
    assert!(
        message.contains(&theirs) && message.contains(&mine),
        "{message}"
    );
    assert!(message.contains("copied by hand"), "{message}");
    let err = d.write(&mine, &[rec(2, 0)]).expect_err("no append");
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    let err = d.truncate(&mine, 0).expect_err("no truncate");
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    match d.lock(&mine) {
        Err(LockError::Io(e)) => assert_eq!(e.kind(), ErrorKind::InvalidData, "{e}"),
        other => panic!("locking another id's log: {other:?}"),
    }
    assert_eq!(std::fs::read(d.path(&mine)).expect("read"), before);
    // A hashed name without a header is refused too.
    let bare = "b".repeat(300);
    std::fs::write(d.path(&bare), b"").expect("write");
    let err = d.load(&bare).expect_err("no header");
    assert!(err.to_string().contains("no header"), "{err}");
}

#[test]
fn d9_a_torn_tail_on_a_hashed_log_is_cut_at_the_reported_offset() {
    let (_dir, d) = fresh();
    let id = hostile(300);
    let len = torn(&d, &id, &[rec(1, 0), rec(1, 1), rec(1, 2)], 7);
    let path = d.path(&id);
    let loaded = d.load(&id).expect("a torn tail is not an error");
    assert_eq!(loaded.records, vec![rec(1, 0), rec(1, 1)]);
    let torn = loaded.torn.expect("a torn tail is reported");
    assert!(torn.reason.contains("cut short"), "{}", torn.reason);
    // Offsets count from the first record, after the header.
    let header = header_len(&path);
    assert_eq!(header + torn.offset + torn.bytes, len);
    d.truncate(&id, torn.offset).expect("truncate");
    assert_eq!(header_len(&path), header, "the header stays");
    assert_log(&d, &id, &[rec(1, 0), rec(1, 1)]);
    append(&d, &id, &[rec(2, 3)]);
    assert_log(&d, &id, &[rec(1, 0), rec(1, 1), rec(2, 3)]);
    // Truncating to nothing leaves an empty, loadable log.
    d.truncate(&id, 0).expect("truncate");
    assert_eq!(d.load(&id).expect("load"), Default::default());
}

/// D9 through the store: `recover` on a hashed log cuts the torn tail
/// and closes the open turn.
#[test]
fn d9_recover_repairs_a_hashed_log() {
    let (_dir, d) = fresh();
    let d = Arc::new(d);
    let id = "r".repeat(200);
    torn(&d, &id, &[rec(1, 0), start(1, 1), rec(1, 9)], 9);
    let store = SessionStore::<TokioRt>::new(d.clone());
    let loaded = store.recover(&id).expect("recover");
    let want = [rec(1, 0), start(1, 1), end(1, 1, EndReason::Interrupted)];
    assert_eq!(loaded.records, want);
    assert_log(&d, &id, &want);
}

#[test]
fn a9_a_second_holder_gets_held_until_the_first_lets_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    for id in ["s".to_string(), hostile(300)] {
        let first = FileDurable::new(dir.path()).expect("dir");
        let second = FileDurable::new(dir.path()).expect("dir");
        first.lock(&id).expect("lock");
        first.lock(&id).expect("locking again is Ok");
        match second.lock(&id) {
            Err(e @ LockError::Held { .. }) => {
                let message = e.to_string();
                assert!(message.contains("in use by another process"), "{message}");
                assert!(!message.contains('\n'), "one line: {message}");
                let io: std::io::Error = e.into();
                assert_eq!(io.kind(), ErrorKind::ResourceBusy);
            }
            other => panic!("a second holder: {other:?}"),
        }
        // The holder still writes; another id is not affected.
        first.write(&id, &[rec(1, 0)]).expect("write");
        second.lock("other").expect("another id");
        first.unlock(&id);
        second.lock(&id).expect("free after unlock");
        assert!(matches!(first.lock(&id), Err(LockError::Held { .. })));
        drop(second);
        first.lock(&id).expect("free after drop");
        assert_log(&first, &id, &[rec(1, 0)]);
    }
}

#[test]
fn a9_locking_a_new_id_creates_an_empty_loadable_log() {
    let (_dir, d) = fresh();
    for id in ["new".to_string(), hostile(4000)] {
        assert!(!d.exists(&id).expect("exists"));
        d.lock(&id).expect("lock");
        assert!(d.exists(&id).expect("exists"));
        assert_eq!(d.load(&id).expect("load"), Default::default());
        append(&d, &id, &[rec(1, 0)]);
        assert_log(&d, &id, &[rec(1, 0)]);
    }
    d.unlock("never locked");
}

/// `load_file` reads a plain log file as it is: its records, nothing for a
/// missing file, and an error for a path that cannot be read as one.
#[test]
fn load_file_reads_a_plain_log_missing_is_empty() {
    use lifecycle::store::durable::load_file;
    let (dir, d) = fresh();
    append(&d, "s", &[rec(1, 0), rec(2, 1)]);
    let loaded = load_file(&d.path("s")).expect("a plain log");
    assert_eq!(loaded.records, vec![rec(1, 0), rec(2, 1)]);
    assert!(loaded.torn.is_none());
    let missing = load_file(&dir.path().join("nobody")).expect("missing: empty");
    assert!(missing.records.is_empty() && missing.torn.is_none());
    let err = load_file(dir.path()).expect_err("a directory is not a log");
    assert_ne!(err.kind(), ErrorKind::NotFound);
}

/// A lock error caused by I/O keeps that error as its source; a lock held
/// by another process has none.
#[test]
fn a_lock_errors_source_is_its_io_error() {
    use std::error::Error;
    let io = LockError::Io(std::io::Error::other("disk gone"));
    assert_eq!(io.source().map(|e| e.to_string()), Some("disk gone".into()));
    let held = LockError::Held { id: "s".into() };
    assert!(held.source().is_none());
}

/// Storage errors surface (D10): a log path that cannot be read as a file
/// (here a directory in its place) fails `load` and `sync`; only a log
/// that does not exist reads as empty and syncs as nothing.
#[test]
fn a_log_that_cannot_be_read_is_an_error_not_an_empty_log() {
    let (dir, d) = fresh();
    std::fs::create_dir(d.path("s")).expect("a directory where s's log goes");
    let load = d.load("s").expect_err("a directory is not an empty log");
    assert_ne!(load.kind(), ErrorKind::NotFound);
    let sync = d.sync("s").expect_err("nor is it synced");
    assert_ne!(sync.kind(), ErrorKind::NotFound);
    assert!(d.load("t").expect("missing: empty").records.is_empty());
    d.sync("t").expect("missing: nothing to sync");
    drop(dir);
}
