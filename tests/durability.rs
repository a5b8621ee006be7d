//! The durable backends: crash recovery of the file backend (a torn last
//! record), the in-memory disk's crash semantics, and tokio conformance of
//! the dispose scenarios with sessions in real files.

use lifecycle::journal::EndReason;
use lifecycle::rt::{SimRt, TokioRt};
use lifecycle::session_log::Entry;
use lifecycle::store::durable::{
    DiskFault, Durable, DurableRecord, FileDurable, MemoryDurable, Tear,
};
use lifecycle::store::SessionStore;
use lifecycle_harness::backends::CheckedTokioRt;
use lifecycle_harness::context::{self, Context};
use lifecycle_harness::faults::Faults;
use lifecycle_harness::scenarios::{self, run_with};
use std::io::Write;
use std::sync::Arc;

fn rec(serial: u64, prompt: u64) -> DurableRecord {
    DurableRecord {
        serial,
        entry: Entry::TurnEnd {
            prompt,
            reason: EndReason::Completed,
        },
    }
}

#[test]
fn file_backend_reports_a_torn_tail_and_keeps_earlier_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    d.write("s", &[rec(1, 0), rec(1, 1)]).expect("write");
    d.write("s", &[rec(1, 2)]).expect("write");
    let path = d.path("s");
    let len = std::fs::metadata(&path).expect("meta").len();
    // Cut the file inside its last record, as a crash mid-write would.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    f.set_len(len - 7).expect("truncate");
    let loaded = d.load("s").expect("load");
    assert_eq!(loaded.records, vec![rec(1, 0), rec(1, 1)]);
    let torn = loaded.torn.expect("a torn tail is reported");
    assert!(torn.reason.contains("cut short"), "{}", torn.reason);
    assert_eq!(torn.bytes + torn.offset, len - 7);
}

/// A last line that ends in its newline but is not a record (a crash that
/// wrote the newline of a garbled write) is a torn tail too, not
/// corruption: only a bad line with records after it is an error.
#[test]
fn file_backend_a_garbled_last_line_with_its_newline_is_a_torn_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    d.write("s", &[rec(1, 0)]).expect("write");
    let path = d.path("s");
    let before = std::fs::metadata(&path).expect("meta").len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut f, b"{\"garbled\n").expect("append");
    let loaded = d.load("s").expect("a torn tail, not an error");
    assert_eq!(loaded.records, vec![rec(1, 0)]);
    let torn = loaded.torn.expect("a torn tail is reported");
    assert_eq!(torn.offset, before);
}

#[test]
fn file_backend_missing_newline_is_a_torn_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    d.write("s", &[rec(1, 0)]).expect("write");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.path("s"))
        .expect("open");
    f.write_all(serde_json::to_string(&rec(1, 1)).expect("json").as_bytes())
        .expect("write");
    let loaded = d.load("s").expect("load");
    assert_eq!(loaded.records, vec![rec(1, 0)]);
    assert!(loaded.torn.expect("torn").reason.contains("newline"));
}

#[test]
fn file_backend_corruption_before_the_tail_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    d.write("s", &[rec(1, 0)]).expect("write");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.path("s"))
        .expect("open");
    f.write_all(b"garbage\n").expect("write");
    drop(f);
    d.write("s", &[rec(1, 1)]).expect("write");
    let err = d.load("s").expect_err("corrupt");
    assert!(err.to_string().contains("corrupt record"), "{err}");
}

/// A10: a line longer than the longest record is damage read as a stream:
/// the last line a torn tail (its length counted, its bytes never held),
/// one before the last corruption; the records before it load.
#[test]
fn file_backend_an_overlong_line_is_streamed_as_damage() {
    use lifecycle::store::durable::MAX_RECORD_BYTES;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = FileDurable::new(dir.path()).expect("dir");
    d.write("s", &[rec(1, 0)]).expect("write");
    let before = std::fs::metadata(d.path("s")).expect("meta").len();
    let huge = vec![0u8; MAX_RECORD_BYTES + 4096];
    let append = |bytes: &[u8]| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.path("s"))
            .expect("open");
        f.write_all(bytes).expect("append");
    };
    // Last, without a newline and with one.
    append(&huge);
    let loaded = d.load("s").expect("a torn tail, not an error");
    assert_eq!(loaded.records, vec![rec(1, 0)]);
    let torn = loaded.torn.expect("torn");
    assert_eq!((torn.offset, torn.bytes), (before, huge.len() as u64));
    assert!(
        torn.reason.contains("longer than the longest record"),
        "{}",
        torn.reason
    );
    append(b"\n");
    assert_eq!(
        d.load("s").expect("torn").torn.expect("torn").bytes,
        huge.len() as u64 + 1
    );
    // Before another record: corruption.
    d.write("s", &[rec(1, 1)]).expect("write");
    let err = d.load("s").expect_err("corrupt");
    assert!(
        err.to_string().contains("longer than the longest record"),
        "{err}"
    );
}

/// Session "s" entered in `store` and its `turn/start` of prompt 0
/// appended (not flushed); its serial.
fn entered_turn_start(store: &SessionStore<SimRt>) -> u64 {
    let p = store.prepare("s").expect("prepare");
    let serial = p.serial();
    store.enter(p).expect("enter");
    store
        .append("s", serial, Entry::TurnStart { prompt: 0 })
        .expect("append");
    serial
}

/// [`entered_turn_start`], flushed.
async fn flushed_turn_start(store: &SessionStore<SimRt>) -> u64 {
    let serial = entered_turn_start(store);
    store.flush("s", serial).await.expect("flush");
    serial
}

/// What was flushed survives a crash (a new store over the same disk);
/// what was only appended is lost.
#[test]
fn memory_disk_keeps_flushed_and_loses_pending_on_crash() {
    let disk: Arc<MemoryDurable<SimRt>> = Arc::new(MemoryDurable::default());
    let d = disk.clone();
    let mut sim = lifecycle_sim::Sim::with_seed(1);
    sim.block_on(async move {
        let store = SessionStore::<SimRt>::new(d.clone());
        let serial = flushed_turn_start(&store).await;
        store
            .append("s", serial, Entry::TurnStart { prompt: 1 })
            .expect("append");
        // Crash: the store (and its pending buffer) is gone.
    })
    .expect("sim");
    let after = SessionStore::<SimRt>::new(disk);
    let loaded = after.load("s").expect("load");
    let entries: Vec<Entry> = loaded.records.into_iter().map(|r| r.entry).collect();
    assert_eq!(entries, vec![Entry::TurnStart { prompt: 0 }]);
}

/// Conformance: the dispose and identity scenarios on the production
/// runtime with sessions in real files (JSON lines, fsync).
#[test]
fn tokio_conformance_with_file_backend() {
    let rt = lifecycle_testkit::runtime();
    for scenario in [
        &scenarios::dispose::CONCURRENT_DISPOSE,
        &scenarios::dispose::DISPOSE_MID_TURN,
        &scenarios::dispose::OWNER_UNLOAD_VS_HANDLE_DISPOSE,
        &scenarios::dispose::PROVIDER_UNLOAD,
        &scenarios::identity::SAME_ID_CREATE_RACE,
        &scenarios::identity::CREATE_DURING_OWNER_UNLOAD,
        &scenarios::identity::ID_REUSE_AFTER_DETACH,
        &scenarios::dispose::DISPOSED_LISTENER_PANICS,
    ] {
        for _ in 0..10 {
            let dir = tempfile::tempdir().expect("tempdir");
            let durable: Arc<dyn Durable> = Arc::new(FileDurable::new(dir.path()).expect("dir"));
            let fut = run_with::<CheckedTokioRt>(scenario, Faults::none(), Some(durable.clone()));
            let outcome = rt
                .block_on(async move { tokio::spawn(fut).await })
                .expect("join");
            assert!(
                outcome.violations.is_empty(),
                "{}: {:?}",
                scenario.name,
                outcome.violations
            );
            if scenario == &scenarios::dispose::DISPOSE_MID_TURN {
                let loaded = durable.load("a").expect("load");
                assert!(loaded.torn.is_none());
                assert!(
                    loaded.records.iter().any(|r| matches!(
                        r.entry,
                        Entry::TurnEnd {
                            reason: EndReason::Disposed,
                            ..
                        }
                    )),
                    "the file holds no turn/end {{disposed}}: {:?}",
                    loaded.records
                );
            }
        }
    }
}

fn start(prompt: u64) -> DurableRecord {
    DurableRecord {
        serial: 1,
        entry: Entry::TurnStart { prompt },
    }
}

/// D9 on the file backend: a load after a crash cuts the torn tail, closes
/// the open turn `interrupted`, and the next append loads back; with M17
/// the append lands on the torn tail and is lost.
#[test]
fn recover_cuts_a_torn_tail_and_closes_the_open_turn() {
    for (faults, clean) in [
        (Faults::none(), true),
        (
            Faults::none().with(lifecycle_harness::faults::Fault::M17),
            false,
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = Arc::new(FileDurable::new(dir.path()).expect("dir"));
        d.write("s", &[rec(1, 0), start(1)]).expect("write");
        d.write("s", &[rec(1, 1)]).expect("write");
        let path = d.path("s");
        let len = std::fs::metadata(&path).expect("meta").len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open")
            .set_len(len - 9)
            .expect("tear");
        context::enter(Context::new(faults));
        let store = SessionStore::<CheckedTokioRt>::new(d.clone());
        let loaded = store.recover("s").expect("a torn tail is not an error");
        let interrupted = DurableRecord {
            serial: 1,
            entry: Entry::TurnEnd {
                prompt: 1,
                reason: EndReason::Interrupted,
            },
        };
        assert_eq!(
            loaded.records,
            vec![rec(1, 0), start(1), interrupted.clone()]
        );
        d.write("s", &[rec(2, 7)]).expect("append");
        let again = d.load("s");
        if clean {
            let again = again.expect("load");
            assert!(again.torn.is_none(), "{:?}", again.torn);
            assert_eq!(
                again.records,
                vec![rec(1, 0), start(1), interrupted, rec(2, 7)]
            );
        } else {
            // M17: the closing record was written onto the torn line, so
            // the log is now corrupt mid-file (or the append is lost).
            match again {
                Err(e) => assert!(e.to_string().contains("corrupt record"), "{e}"),
                Ok(l) => assert_ne!(l.records.last(), Some(&rec(2, 7))),
            }
        }
    }
}

/// The crash image of the in-memory disk: synced bytes always survive,
/// unsynced ones are dropped, kept by record, or torn mid-record.
#[test]
fn crash_image_tears_only_unsynced_bytes() {
    let disk = MemoryDurable::<TokioRt>::recording();
    disk.write("s", &[rec(1, 0)]).expect("write");
    disk.sync("s").expect("sync");
    let synced = disk.crash_image();
    assert!(!synced.has_unsynced(), "every byte written was synced");
    assert_eq!(synced.tears(), vec![Tear::DropUnsynced]);
    disk.write("s", &[rec(1, 1), rec(1, 2)]).expect("write");
    let image = disk.crash_image();
    assert!(image.has_unsynced());
    assert_eq!(image.synced("s"), vec![rec(1, 0)]);
    let tears = image.tears();
    assert_eq!(tears.len(), 5, "{tears:?}");
    let load = |t: Tear| image.restore::<TokioRt>(t).load("s").expect("load");
    assert_eq!(load(Tear::DropUnsynced).records, vec![rec(1, 0)]);
    assert_eq!(
        load(Tear::KeepRecords(1)).records,
        vec![rec(1, 0), rec(1, 1)]
    );
    let torn = load(Tear::TearRecord(2));
    assert_eq!(torn.records, vec![rec(1, 0), rec(1, 1)]);
    assert!(torn.torn.is_some());
    // One image per operation, plus the empty disk before any.
    assert_eq!(disk.crash_points().len(), 4);
}

/// D10: a failed write fails the flush, and the session refuses every
/// later append and flush of that turn; nothing more reaches the disk. The
/// next `turn/start` recovers it: the torn half-record is cut, the failed
/// turn closed `failed`, and the new turn is appended and flushed.
#[test]
fn a_failed_write_fails_the_session_until_its_next_turn() {
    use lifecycle::journal::EndReason;
    use lifecycle::store::durable::DiskOp;
    let disk: Arc<MemoryDurable<SimRt>> = Arc::new(MemoryDurable::default());
    let d = disk.clone();
    let mut sim = lifecycle_sim::Sim::with_seed(1);
    sim.block_on(async move {
        let store = SessionStore::<SimRt>::new(d.clone());
        let serial = flushed_turn_start(&store).await;
        let step = |step| Entry::Step {
            prompt: 0,
            step,
            output: None,
            tool: None,
        };
        store.append("s", serial, step(0)).expect("append");
        d.fail_next(DiskFault::WriteEnospc);
        let err = store.flush("s", serial).await.expect_err("ENOSPC");
        assert!(err.to_string().contains("ENOSPC"), "{err}");
        store
            .append("s", serial, step(1))
            .expect_err("refused after the failure");
        store.flush("s", serial).await.expect_err("refused");
        assert_eq!(
            d.ops()
                .iter()
                .filter(|op| matches!(op, DiskOp::Write { .. }))
                .count(),
            2,
            "nothing is written after the failure"
        );
        // The next turn recovers the session.
        store
            .append("s", serial, Entry::TurnStart { prompt: 1 })
            .expect("the next turn recovers the session");
        store
            .flush("s", serial)
            .await
            .expect("flush after recovery");
        let log = d.load("s").expect("load");
        assert!(log.torn.is_none(), "the torn half-record is cut");
        let entries: Vec<Entry> = log.records.into_iter().map(|r| r.entry).collect();
        assert_eq!(
            entries,
            [
                Entry::TurnStart { prompt: 0 },
                Entry::TurnEnd {
                    prompt: 0,
                    reason: EndReason::Failed
                },
                Entry::TurnStart { prompt: 1 },
            ]
        );
    })
    .expect("sim");
}

/// Fault M26: the session never recovers; its next turn is refused too.
#[test]
fn m26_a_failed_session_refuses_its_next_turn() {
    use lifecycle_harness::faults::{Fault, Faults};
    let disk: Arc<MemoryDurable<SimRt>> = Arc::new(MemoryDurable::default());
    let d = disk.clone();
    let mut sim = lifecycle_sim::Sim::with_seed(1);
    sim.block_on(async move {
        context::enter(Context::new(Faults::none().with(Fault::M26)));
        let store = SessionStore::<SimRt>::new(d.clone());
        let serial = entered_turn_start(&store);
        d.fail_next(DiskFault::WriteEnospc);
        store.flush("s", serial).await.expect_err("ENOSPC");
        store
            .append("s", serial, Entry::TurnStart { prompt: 1 })
            .expect_err("M26 refuses the next turn");
    })
    .expect("sim");
}

/// D10 for load's repair: a truncate of the torn tail that fails surfaces
/// as an error, and nothing is appended onto the torn line; a later load
/// repairs it and closes the open turn.
#[test]
fn a_failed_truncate_fails_the_load_and_appends_nothing() {
    use lifecycle::store::durable::DiskOp;
    let disk = MemoryDurable::<TokioRt>::recording();
    disk.write("s", &[rec(1, 0), start(1)]).expect("write");
    disk.sync("s").expect("sync");
    disk.write("s", &[rec(1, 1)]).expect("write");
    let torn = disk.crash_image().restore::<TokioRt>(Tear::TearRecord(1));
    let d = Arc::new(torn);
    let store = SessionStore::<TokioRt>::new(d.clone());
    d.fail_next(DiskFault::TruncateEio);
    let err = store
        .recover("s")
        .expect_err("the failed truncate surfaces");
    assert!(err.to_string().contains("EIO: truncate"), "{err}");
    let writes = |d: &MemoryDurable<TokioRt>| {
        d.ops()
            .iter()
            .filter(|op| matches!(op, DiskOp::Write { .. }))
            .count()
    };
    assert_eq!(writes(&d), 0, "nothing appended onto the torn tail");
    assert!(d.load("s").expect("load").torn.is_some());
    let loaded = store.recover("s").expect("the second load repairs it");
    assert_eq!(loaded.records.len(), 3, "{:?}", loaded.records);
    assert!(d.load("s").expect("load").torn.is_none());
}

/// Both backends agree on `exists` (the server's `session/load` asks it
/// before anything else, A9): no log before the first write, one after it,
/// an empty write included; a load does not create one.
#[test]
fn both_backends_say_whether_a_log_exists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = FileDurable::new(dir.path().to_path_buf()).expect("file backend");
    let memory = MemoryDurable::<TokioRt>::default();
    for (name, disk) in [("file", &file as &dyn Durable), ("memory", &memory)] {
        assert!(!disk.exists("s").expect("exists"), "{name}: no log yet");
        let _ = disk.load("s");
        assert!(
            !disk.exists("s").expect("exists"),
            "{name}: a load made one"
        );
        disk.write("s", &[]).expect("an empty write");
        assert!(disk.exists("s").expect("exists"), "{name}: an empty log");
        disk.write("t", &[rec(1, 0)]).expect("write");
        assert!(disk.exists("t").expect("exists"), "{name}: a log");
        assert!(!disk.exists("u").expect("exists"), "{name}: another id");
    }
}

/// The memory backend's ENOSPC leaves half of the failed write on the disk,
/// as a full disk does: of three records of one length, one and a half
/// reach it, and a load reports the half as a torn tail.
#[test]
fn an_enospc_write_leaves_half_of_it() {
    let disk = MemoryDurable::<TokioRt>::default();
    disk.write("s", &[rec(1, 0)]).expect("write");
    disk.fail_next(DiskFault::WriteEnospc);
    disk.write("s", &[rec(2, 1), rec(3, 2), rec(4, 3)])
        .expect_err("ENOSPC");
    let loaded = disk.load("s").expect("load");
    assert_eq!(
        loaded.records,
        vec![rec(1, 0), rec(2, 1)],
        "1.5 of 3 records"
    );
    let torn = loaded.torn.expect("half a record is a torn tail");
    assert!(torn.bytes > 0, "{torn:?}");
}

/// A downstream backend written against the trait's three required
/// methods (`write`, `sync`, `load`): every other method has a default.
/// The store runs on it, a torn tail it cannot cut fails the recovery with
/// a clear error instead of being appended onto (D9, D10), and `exists`
/// sees a log once it has a record.
#[derive(Default)]
struct Minimal(std::sync::Mutex<std::collections::BTreeMap<String, Vec<u8>>>);

impl Durable for Minimal {
    fn write(&self, id: &str, records: &[DurableRecord]) -> std::io::Result<()> {
        let bytes = lifecycle::store::durable::encode(records)?;
        let mut logs = self.0.lock().unwrap();
        logs.entry(id.to_string()).or_default().extend(bytes);
        Ok(())
    }

    fn sync(&self, _id: &str) -> std::io::Result<()> {
        Ok(())
    }

    fn load(&self, id: &str) -> std::io::Result<lifecycle::store::durable::Loaded> {
        let logs = self.0.lock().unwrap();
        let bytes = logs.get(id).cloned().unwrap_or_default();
        lifecycle::store::durable::parse_log(&bytes, id)
    }
}

#[test]
fn a_backend_with_only_the_required_methods_works_and_refuses_to_append_onto_a_tear() {
    let disk = Arc::new(Minimal::default());
    assert!(!disk.exists("s").unwrap());
    let d = disk.clone();
    let mut sim = lifecycle_sim::Sim::with_seed(1);
    sim.block_on(async move {
        flushed_turn_start(&SessionStore::<SimRt>::new(d)).await;
    })
    .expect("sim");
    assert!(disk.exists("s").unwrap(), "a log with a record exists");
    let records: Vec<Entry> = disk
        .load("s")
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.entry)
        .collect();
    assert_eq!(records, [Entry::TurnStart { prompt: 0 }]);
    // A torn tail: the default `truncate` cannot cut it, so the repair
    // fails with the reason and nothing is appended after it.
    disk.0
        .lock()
        .unwrap()
        .get_mut("s")
        .unwrap()
        .extend(b"{\"serial\":1,");
    let before = disk.0.lock().unwrap().get("s").unwrap().clone();
    let store = SessionStore::<SimRt>::new(disk.clone());
    let err = store.recover("s").expect_err("the tear cannot be cut");
    assert!(
        err.to_string().contains("cannot cut the torn tail"),
        "{err}"
    );
    assert_eq!(disk.0.lock().unwrap().get("s").unwrap(), &before);
}

/// D3 when a turn recovers a failed session while the session is detached:
/// every schedule of the two (sim-dfs, no preemption bound, exhausted)
/// journals the recovering `turn/start` as lost exactly once, including the
/// schedule where the detach lands while the log is being re-opened.
#[test]
fn a_recovering_turn_detached_mid_reopen_is_journaled_as_lost() {
    use lifecycle::events::LifecycleEvent;
    use lifecycle_harness::world::World;
    use lifecycle_sim::{Dfs, DfsConfig, ExecKind, Sim};
    let mut dfs = Dfs::new(DfsConfig::default());
    let mut schedules = 0u32;
    while let Some(scheduler) = dfs.next_scheduler() {
        let disk: Arc<MemoryDurable<SimRt>> = Arc::new(MemoryDurable::default());
        let world = World::<SimRt>::new();
        let (d, w) = (disk.clone(), world.clone());
        let mut sim = Sim::new(scheduler, 100_000);
        sim.block_on(async move {
            context::enter(Context::new(Faults::none()).observed(w));
            let store = Arc::new(SessionStore::<SimRt>::new(d.clone()));
            let serial = entered_turn_start(&store);
            d.fail_next(DiskFault::WriteEnospc);
            store.flush("s", serial).await.expect_err("ENOSPC");
            let s = store.clone();
            let turn = lifecycle::rt::spawn::<SimRt, _>("turn", async move {
                let _ = s.append("s", serial, Entry::TurnStart { prompt: 1 });
            });
            store.detach("s", serial).expect("detach");
            turn.join().await;
        })
        .expect("sim");
        let lost = world
            .events()
            .iter()
            .filter(|e| {
                matches!(e, LifecycleEvent::AppendDropped { entry, .. }
                    if entry.contains("turn-start") && entry.contains("\"prompt\":1"))
            })
            .count();
        assert_eq!(
            lost, 1,
            "D3: the recovering turn/start is neither kept nor journaled as lost \
             (schedule {schedules})"
        );
        // From the disk's side: the entry journaled as lost never reached
        // the log (nothing flushed it after the failed write).
        let on_disk = disk.load("s").map(|l| l.records).unwrap_or_default();
        assert!(
            !on_disk
                .iter()
                .any(|r| r.entry == Entry::TurnStart { prompt: 1 }),
            "D3: journaled as lost, yet on disk (schedule {schedules}): {on_disk:?}"
        );
        schedules += 1;
        if let ExecKind::Nondeterministic(m) = dfs.end_execution() {
            panic!("nondeterministic: {m}");
        }
    }
    assert!(dfs.exhausted() && schedules > 1, "{schedules} schedules");
}
