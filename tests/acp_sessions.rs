//! Sessions of the real `lifecycle acp` (SPEC A9): commands run
//! in the session's `cwd`; content blocks the agent does not take are
//! refused with -32602 and embedded text resources are read; one process
//! at a time writes a session's log (an OS file lock); turn and job
//! numbers continue from the log; an id of any length is served.

use lifecycle_testkit as common;

use common::acp::{agent_texts, load_params, AcpServer};
use lifecycle::session_log::Entry;
use lifecycle::store::durable::{Durable, FileDurable};
use serde_json::{json, Value};

fn error_code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}

fn new_in(server: &mut AcpServer, cwd: &str) -> Value {
    server.ask("session/new", json!({"cwd": cwd, "mcpServers": []}))
}

/// The job id in a `started job-N` reply.
fn started_job(updates: &[Value]) -> String {
    agent_texts(updates)
        .iter()
        .find_map(|t| t.strip_prefix("started ").map(str::to_string))
        .unwrap_or_else(|| panic!("no job started: {updates:?}"))
}

#[test]
fn a9_commands_run_in_the_session_cwd_and_a_bad_cwd_is_refused() {
    let sessions = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let work_path = work.path().canonicalize().unwrap();
    let dir = work_path.to_str().unwrap();
    let mut server = AcpServer::start(sessions.path());
    for bad in ["relative/dir", "/nonexistent/agent-lifecycle-cwd"] {
        let answer = new_in(&mut server, bad);
        assert_eq!(error_code(&answer), Some(-32602), "cwd {bad}: {answer}");
    }
    let answer = new_in(&mut server, dir);
    let id = answer["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let (answer, updates) = server.prompt(&id, "$ pwd\n$& pwd > bg-pwd.txt");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let texts = agent_texts(&updates);
    assert_eq!(
        texts[0],
        format!("{dir}\n[exit 0]"),
        "foreground pwd: {texts:?}"
    );
    let job = started_job(&updates);
    let written = work_path.join("bg-pwd.txt");
    assert!(
        common::acp::eventually(std::time::Duration::from_secs(10), || {
            std::fs::read_to_string(&written).is_ok_and(|s| s.trim() == dir)
        }),
        "background {job} ran in the session cwd"
    );
    // session/load checks its cwd too.
    let load = load_params(&id, "relative");
    assert_eq!(error_code(&server.ask("session/load", load)), Some(-32602));
    server.close();
}

#[test]
fn a9_content_blocks_the_agent_does_not_take_are_refused() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::spawn(sessions.path());
    let init = server.initialize();
    let prompts = &init["result"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!(prompts["embeddedContext"], true, "{init}");
    assert_eq!(prompts["image"], false, "{init}");
    let id = server.new_session();
    // Each refusal names the block and its kind.
    let refused = [
        (
            json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
            "prompt block 1 is an image",
        ),
        (
            json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
            "prompt block 1 is audio",
        ),
        (
            json!({"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAEC"}}),
            "prompt block 1 is a binary embedded resource",
        ),
    ];
    for (block, why) in refused {
        let params = json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}, block]});
        let (answer, updates) = server.ask_with_updates("session/prompt", params);
        assert_eq!(error_code(&answer), Some(-32602), "{block}: {answer}");
        let data = answer["error"]["data"].as_str().unwrap_or_default();
        assert!(data.contains(why), "{block}: {answer} does not say {why:?}");
        assert!(agent_texts(&updates).is_empty(), "nothing ran: {updates:?}");
    }
    let resource = json!({"type": "resource", "resource": {
        "uri": "file:///notes.txt", "mimeType": "text/plain", "text": "from the resource"}});
    let link = json!({"type": "resource_link", "name": "spec", "uri": "file:///SPEC.md"});
    let params = json!({"sessionId": id, "prompt": [resource, link]});
    let (answer, updates) = server.ask_with_updates("session/prompt", params);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        agent_texts(&updates),
        [
            "echo: from the resource",
            "echo: resource link: spec file:///SPEC.md"
        ]
    );
    server.close();
}

#[test]
fn a9_one_process_at_a_time_writes_a_session_log() {
    let sessions = tempfile::tempdir().unwrap();
    let mut first = AcpServer::start(sessions.path());
    let id = first.new_session();
    let (answer, _) = first.prompt(&id, "before");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let mut second = AcpServer::start(sessions.path());
    let answer = second.ask("session/load", load_params(&id, "/"));
    assert_eq!(error_code(&answer), Some(-32602), "{answer}");
    let message = answer["error"]["data"].as_str().unwrap_or_default();
    assert!(message.contains("in use by another process"), "{answer}");
    // The first still writes its log; once it is gone the second loads it.
    let (answer, _) = first.prompt(&id, "still mine");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    first.close();
    let (answer, updates) = second.ask_with_updates("session/load", load_params(&id, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(agent_texts(&updates), ["echo: before", "echo: still mine"]);
    second.close();
}

#[test]
fn a9_turn_and_job_numbers_continue_from_the_log() {
    let sessions = tempfile::tempdir().unwrap();
    let mut first = AcpServer::start(sessions.path());
    let id = first.new_session();
    let (_, updates) = first.prompt(&id, "$& true\n$& true");
    // The second job's start is the prompt's last reply (a job's
    // completion notice may arrive after it, before the answer: A11).
    let replies = agent_texts(&updates);
    let old_job = replies
        .iter()
        .rev()
        .find_map(|t| t.strip_prefix("started "))
        .unwrap_or_else(|| panic!("no job started: {updates:?}"))
        .to_string();
    first.close();
    let mut second = AcpServer::start(sessions.path());
    let load = load_params(&id, "/");
    assert!(second.ask("session/load", load).get("result").is_some());
    let (_, updates) = second.prompt(&id, "$& true");
    let new_job = started_job(&updates);
    let number = |job: &str| job.trim_start_matches("job-").parse::<u64>().unwrap();
    assert!(
        number(&new_job) > number(&old_job),
        "{new_job} after {old_job}"
    );
    second.close();
    let log = FileDurable::new(sessions.path())
        .unwrap()
        .load(&id)
        .unwrap();
    let prompts: Vec<u64> = log
        .records
        .iter()
        .filter_map(|r| match r.entry {
            Entry::UserMessage { prompt, .. } => Some(prompt),
            _ => None,
        })
        .collect();
    // A job-done notice may run a turn of its own before the first process
    // closes, so there may be more turns than prompts: numbers must still be
    // unique and rising, the resumed session's after the log's.
    assert!(prompts.len() >= 2, "{prompts:?}");
    assert!(
        prompts.windows(2).all(|w| w[0] < w[1]),
        "the resumed session's turns are numbered after the log's: {prompts:?}"
    );
}

#[test]
fn a9_an_id_of_any_length_is_served_and_nothing_is_created_for_an_unknown_one() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start(sessions.path());
    for len in [121, 4_000] {
        let id = "x".repeat(len);
        let load = load_params(&id, "/");
        assert_eq!(error_code(&server.ask("session/load", load)), Some(-32002));
        let (answer, _) = server.prompt(&id, "hello");
        assert_eq!(error_code(&answer), Some(-32002), "{answer}");
    }
    let files = std::fs::read_dir(sessions.path()).unwrap().count();
    assert_eq!(files, 0, "an unknown id creates nothing");
    server.close();
}

/// Each turn runs its own text, even when a new turn's text is the same
/// length as the last one's and the allocator gives it the last one's
/// address (the responder caches a turn's parsed script by address and
/// length, and must parse afresh at every turn's first step).
#[test]
fn every_turn_runs_its_own_text_not_a_cached_one() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start(sessions.path());
    let id = server.new_session();
    for n in 0..40 {
        let text = format!("turn {n:03}");
        let (answer, updates) = server.prompt(&id, &text);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        assert_eq!(agent_texts(&updates), [format!("echo: {text}")], "turn {n}");
    }
    server.close();
}

/// A9: a load that took the log's lock and then failed lets the lock go. A
/// second process then reads the log itself (and fails on its contents),
/// instead of being told that another process writes it.
#[test]
fn a9_a_failed_load_lets_go_of_the_log() {
    let sessions = tempfile::tempdir().unwrap();
    let mut first = AcpServer::start(sessions.path());
    let id = first.new_session();
    let (answer, _) = first.prompt(&id, "before");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    first.close();
    // Garble a record before the last: corruption, not a torn tail.
    let log = std::fs::read_dir(sessions.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p).is_ok_and(|t| t.contains("before") && t.lines().count() > 2)
        })
        .expect("the session's log");
    let text = std::fs::read_to_string(&log).unwrap();
    let (head, rest) = text.split_at(text.find('\n').unwrap() + 1);
    std::fs::write(&log, format!("{head}{{garbled\n{rest}")).unwrap();
    let unreadable = |server: &mut AcpServer| {
        let answer = server.ask("session/load", load_params(&id, "/"));
        let message = answer["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(answer.get("error").is_some(), "{answer}");
        message
    };
    let mut a = AcpServer::start(sessions.path());
    let said = unreadable(&mut a);
    assert!(said.contains("cannot be read"), "{said}");
    let mut b = AcpServer::start(sessions.path());
    let said = unreadable(&mut b);
    assert!(
        said.contains("cannot be read"),
        "A9: the first process kept the lock of a log it failed to load: {said}"
    );
    a.close();
    b.close();
}

/// `session/close` (advertised as `sessionCapabilities.close`): a prompt
/// in flight answers `cancelled`, the session is unknown afterwards (a
/// second close and a prompt are errors), its log's lock is let go (a
/// second server loads it) and this server keeps serving.
#[test]
fn a_closed_session_ends_its_prompt_and_lets_go_of_its_log() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::spawn(sessions.path());
    let init = server.initialize();
    assert!(
        init["result"]["agentCapabilities"]["sessionCapabilities"]["close"].is_object(),
        "{init}"
    );
    let id = server.new_session();
    let prompt = server.send_prompt(&id, "first\nsleep 60000\nnever");
    server.read_until_text("echo: first");
    let close = server.request("session/close", json!({ "sessionId": id }));
    let (answers, _) = server.answers(&[prompt, close]);
    assert_eq!(
        answers[0]["result"]["stopReason"], "cancelled",
        "{}",
        answers[0]
    );
    assert!(answers[1].get("result").is_some(), "{}", answers[1]);
    let again = server.ask("session/close", json!({ "sessionId": id }));
    assert!(error_code(&again).is_some(), "closed twice: {again}");
    let (after, _) = server.prompt(&id, "hello");
    assert!(
        error_code(&after).is_some(),
        "a prompt of a closed session: {after}"
    );
    // Another process may now write the log.
    let mut other = AcpServer::start(sessions.path());
    let loaded = other.ask("session/load", load_params(&id, "/"));
    assert!(loaded.get("result").is_some(), "{loaded}");
    other.close();
    let fresh = server.new_session();
    let (answer, updates) = server.prompt(&fresh, "still-serving");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(agent_texts(&updates), ["echo: still-serving"]);
    server.close();
}

/// A9: a `session/close` that lands while the session's load replays the
/// history (the client stopped reading, so the replay waits for room)
/// stops the replay: the load fails with a clear error, the close
/// answers, and a load afterwards replays the whole history again.
#[test]
fn a9_a_close_during_the_replay_stops_it_and_a_later_load_replays_it_all() {
    const TURNS: usize = 40;
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start(sessions.path());
    let id = server.new_session();
    // Each turn's reply is 1 MB: the replay outruns the 4 MiB outbound
    // budget long before its end.
    let big = "$ head -c 1000000 /dev/zero | tr '\\0' x";
    for _ in 0..TURNS {
        let (answer, _) = server.prompt(&id, big);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    server.close();

    let mut server = AcpServer::start(sessions.path());
    let load = server.request("session/load", load_params(&id, "/"));
    // The replay has begun once its first update arrives; then the client
    // stops reading, and 40 MB cannot pass the budget and the pipe.
    let first: Value = serde_json::from_str(&server.next_line().expect("the replay")).unwrap();
    assert_eq!(first["method"], "session/update", "{first}");
    server.pause_reading();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let close = server.request("session/close", json!({ "sessionId": id }));
    server.resume_reading();
    let (answers, mut replayed) = server.answers(&[load, close]);
    replayed.insert(0, first);
    let code = error_code(&answers[0]);
    assert_eq!(
        code,
        Some(-32602),
        "A9: the load of a closed session: {}",
        answers[0]
    );
    let why = answers[0]["error"]["data"].as_str().unwrap_or_default();
    assert!(
        why.contains("closed while its load replayed"),
        "{}",
        answers[0]
    );
    assert!(answers[1].get("result").is_some(), "{}", answers[1]);
    let replies = agent_texts(&replayed).len();
    assert!(
        replies < TURNS,
        "the replay stopped: {replies} of {TURNS} replies sent"
    );

    let (answer, again) = server.ask_with_updates("session/load", load_params(&id, "/"));
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(agent_texts(&again).len(), TURNS, "the whole history");
    let (answer, updates) = server.prompt(&id, "after");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(agent_texts(&updates), ["echo: after"]);
    server.close();
}

/// A10: a log path that is not a regular file (a FIFO, a link to a
/// device, a link to `/dev/zero`) gets a clear JSON-RPC error at once,
/// reads nothing from it, and blocks nothing: a prompt of another session
/// answers meanwhile, and stdin's close still ends the server within the
/// grace period.
#[test]
fn a10_a_log_that_is_not_a_regular_file_is_refused_without_blocking() {
    use lifecycle::acp::server::DISCONNECT_GRACE_MS;
    use std::time::{Duration, Instant};
    let sessions = tempfile::tempdir().unwrap();
    let files = FileDurable::new(sessions.path()).unwrap();
    let fifo = files.path("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid path string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    std::os::unix::fs::symlink("/dev/null", files.path("device")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", files.path("zero")).unwrap();
    let mut server = AcpServer::start(sessions.path());
    let live = server.new_session();
    for (id, what) in [
        ("fifo", "a FIFO"),
        ("device", "a device"),
        ("zero", "a device"),
    ] {
        let started = Instant::now();
        let answer = server.ask("session/load", load_params(id, "/"));
        assert!(started.elapsed() < Duration::from_secs(2), "{id}: {answer}");
        assert!(error_code(&answer).is_some(), "{id}: {answer}");
        assert!(answer.to_string().contains(what), "{id}: {answer}");
        let (ok, updates) = server.prompt(&live, &format!("after {id}"));
        assert_eq!(ok["result"]["stopReason"], "end_turn", "{ok}");
        assert_eq!(agent_texts(&updates), [format!("echo: after {id}")]);
    }
    let limit = Duration::from_millis(DISCONNECT_GRACE_MS) + Duration::from_secs(3);
    let (status, took) = server.close_within(limit);
    assert!(status.success(), "exited {status} after {took:?}");
}

/// A10: one connection holds at most `MAX_SESSIONS` sessions: past them
/// `session/new` is refused (-32602) until one is closed.
#[test]
fn a10_sessions_per_connection_are_capped_until_one_closes() {
    use lifecycle::acp::server::MAX_SESSIONS;
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start(sessions.path());
    let params = json!({"cwd": "/", "mcpServers": []});
    let ids: Vec<i64> = (0..MAX_SESSIONS)
        .map(|_| server.request("session/new", params.clone()))
        .collect();
    let (answers, _) = server.answers(&ids);
    let opened: Vec<String> = answers
        .iter()
        .map(|a| {
            a["result"]["sessionId"]
                .as_str()
                .unwrap_or_else(|| panic!("{a}"))
                .to_string()
        })
        .collect();
    let refused = server.ask("session/new", params.clone());
    assert_eq!(error_code(&refused), Some(-32602), "{refused}");
    assert!(refused.to_string().contains("session/close"), "{refused}");
    let closed = server.ask("session/close", json!({"sessionId": opened[0]}));
    assert!(closed.get("result").is_some(), "{closed}");
    let again = server.ask("session/new", params);
    assert!(again["result"]["sessionId"].is_string(), "{again}");
    server.close();
}

/// A9: two `session/load`s of one id, sent together, load it once: one
/// answers, the other is refused, and the refused one does not let go of
/// the log the winner now writes. Another process is told the log is in
/// use, not handed a second writer's lock; once the session is closed,
/// nothing holds it (the refused load kept no claim), and another process
/// loads it.
#[test]
fn a9_a_refused_second_load_keeps_the_winners_lock() {
    let sessions = tempfile::tempdir().unwrap();
    let mut first = AcpServer::start(sessions.path());
    let id = first.new_session();
    // A log long enough that the winner's check and resume take a while.
    let big = "$ head -c 200000 /dev/zero | tr '\\0' x";
    for _ in 0..10 {
        let (answer, _) = first.prompt(&id, big);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    first.close();
    for round in 0..5 {
        let mut server = AcpServer::start(sessions.path());
        let one = server.request("session/load", load_params(&id, "/"));
        let two = server.request("session/load", load_params(&id, "/"));
        let (answers, _) = server.answers(&[one, two]);
        let loaded = answers.iter().filter(|a| a.get("result").is_some()).count();
        assert_eq!(loaded, 1, "round {round}: {answers:?}");
        let mut other = AcpServer::start(sessions.path());
        let answer = other.ask("session/load", load_params(&id, "/"));
        let message = answer["error"]["data"].as_str().unwrap_or_default();
        assert!(
            message.contains("in use by another process"),
            "A9: round {round}: a refused second load let go of the lock of the session \
             the first loaded, and another process loaded it too: {answer}"
        );
        let closed = server.ask("session/close", json!({ "sessionId": id }));
        assert!(closed.get("result").is_some(), "{closed}");
        let answer = other.ask("session/load", load_params(&id, "/"));
        assert!(
            answer.get("result").is_some(),
            "A9: round {round}: the session is closed, yet its log is still held: {answer}"
        );
        other.close();
        server.close();
    }
}

/// A10: a `session/new` whose log cannot be created (here: no descriptor
/// left) fails, and leaves no session behind: the id its error names is
/// unknown afterwards, even once a descriptor is free again, and never
/// counts against the cap.
#[test]
fn a10_a_session_whose_log_cannot_be_created_is_not_kept() {
    let sessions = tempfile::tempdir().unwrap();
    let mut server = AcpServer::start_with_nofile(sessions.path(), (32, 32));
    let mut ids = Vec::new();
    let refused = loop {
        let new = server.ask("session/new", json!({"cwd": "/", "mcpServers": []}));
        match new["result"]["sessionId"].as_str() {
            Some(id) => ids.push(id.to_string()),
            None => break new,
        }
        assert!(
            ids.len() < 32,
            "32 sessions under a limit of 32 descriptors"
        );
    };
    let why = refused["error"]["data"].as_str().unwrap_or_default();
    assert!(why.contains("Too many open files"), "{refused}");
    let zombie = why
        .split_whitespace()
        .find(|w| w.starts_with("sess-"))
        .map(|w| w.trim_end_matches(':'))
        .unwrap_or_else(|| panic!("the error names no session: {refused}"));
    let closed = server.ask("session/close", json!({ "sessionId": ids[0] }));
    assert!(closed.get("result").is_some(), "{closed}");
    let (answer, updates) = server.prompt(zombie, "still here?");
    assert!(
        error_code(&answer).is_some(),
        "A10: the session whose creation failed was kept, and runs prompts: {answer}"
    );
    assert!(agent_texts(&updates).is_empty(), "{updates:?}");
    server.close();
}
