//! A raw JSON-RPC client for the real `lifecycle acp` binary, shared by the
//! tests that drive it line by line (`acp_hostile`, `acp_server`,
//! `acp_processes`, `acp_soak`).
//!
//! The server runs in a process group of its own; dropping the client
//! SIGKILLs that group (unless the server was already reaped), so a test
//! that fails half-way leaves no server behind. The server's commands run
//! in groups of their own: its orphan reaper (`lifecycle/src/shell/reaper.rs`) kills
//! them when the server dies.
//!
//! Every read waits at most [`AcpServer::patience`] (20 s unless set), so
//! a silent server fails the test instead of hanging it.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long any one line may take unless a test sets its own patience.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// `lifecycle acp --sessions DIR` on pipes, read by a thread.
pub struct AcpServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// While `true`, the reader thread reads nothing more: the server's
    /// stdout pipe fills and its writes block.
    paused: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    next_id: i64,
    /// Set once the child is waited for: its pid (and group id) may then be
    /// reused, so `Drop` must not signal it.
    reaped: bool,
    /// How long a read waits for the next line.
    pub patience: Duration,
}

impl AcpServer {
    /// Spawn the server on `sessions`, in `/`. Not initialized.
    pub fn spawn(sessions: &Path) -> AcpServer {
        AcpServer::spawn_in(sessions, Path::new("/"))
    }

    /// Spawn the server on `sessions` with working directory `cwd`, in a
    /// process group of its own, stderr discarded. Not initialized.
    pub fn spawn_in(sessions: &Path, cwd: &Path) -> AcpServer {
        AcpServer::spawn_with(sessions, cwd, None)
    }

    /// Spawn the server on `sessions` (in `/`) with its descriptor limit
    /// set to `(soft, hard)` before it starts, and `initialize` it.
    pub fn start_with_nofile(sessions: &Path, nofile: (u64, u64)) -> AcpServer {
        let mut server = AcpServer::spawn_with(sessions, Path::new("/"), Some(nofile));
        server.initialize();
        server
    }

    fn spawn_with(sessions: &Path, cwd: &Path, nofile: Option<(u64, u64)>) -> AcpServer {
        let mut command = command(sessions, cwd);
        if let Some((soft, hard)) = nofile {
            // SAFETY: between fork and exec; setrlimit is async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: soft as libc::rlim_t,
                        rlim_max: hard as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().expect("spawn lifecycle acp");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = mpsc::channel();
        let paused = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let gate = paused.clone();
        std::thread::spawn(move || {
            let mut stdout = stdout;
            loop {
                {
                    let (lock, resumed) = &*gate;
                    let mut paused = lock.lock().unwrap_or_else(|p| p.into_inner());
                    while *paused {
                        paused = resumed.wait(paused).unwrap_or_else(|p| p.into_inner());
                    }
                }
                let mut line = String::new();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line.ends_with('\n') {
                    line.pop();
                }
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        AcpServer {
            child,
            stdin,
            lines,
            paused,
            next_id: 0,
            reaped: false,
            patience: PATIENCE,
        }
    }

    /// Spawn the server on `sessions` (in `/`) and `initialize` it.
    pub fn start(sessions: &Path) -> AcpServer {
        let mut server = AcpServer::spawn(sessions);
        server.initialize();
        server
    }

    /// The server's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Write raw bytes to the server's stdin.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    /// Send a request without waiting; its id.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(format!("{line}\n").as_bytes());
        id
    }

    /// The next line the server writes, raw; `None` once stdout closed.
    /// Panics after `patience` without a line.
    pub fn next_line(&mut self) -> Option<String> {
        match self.lines.recv_timeout(self.patience) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "the server (pid {}) wrote nothing for {:?}",
                self.pid(),
                self.patience
            ),
        }
    }

    /// The next line the server writes, as JSON.
    pub fn read(&mut self) -> Value {
        let line = self.next_line().expect("the server closed its stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Every line until the server closes its stdout (as JSON; lines that
    /// do not parse, such as one cut by a kill, are skipped).
    pub fn read_to_end(&mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.next_line())
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }

    /// Read until the answers to every id in `ids` arrived: the answers in
    /// the order of `ids`, and every other message read meanwhile (the
    /// `session/update` notifications), in arrival order.
    pub fn answers(&mut self, ids: &[i64]) -> (Vec<Value>, Vec<Value>) {
        let mut answered: HashMap<i64, Value> = HashMap::new();
        let mut others = Vec::new();
        while answered.len() < ids.len() {
            let v = self.read();
            match v.get("id").and_then(Value::as_i64) {
                Some(id) if ids.contains(&id) && v.get("method").is_none() => {
                    assert!(answered.insert(id, v).is_none(), "answered twice: {id}");
                }
                _ => {
                    assert!(
                        v.get("id").is_none() || v.get("method").is_some(),
                        "an answer to something not asked: {v}"
                    );
                    others.push(v);
                }
            }
        }
        let answers = ids.iter().map(|id| answered.remove(id).unwrap()).collect();
        (answers, others)
    }

    /// Send a request; its answer (result or error) and the notifications
    /// the server sent before it.
    pub fn ask_with_updates(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.request(method, params);
        let (mut answers, updates) = self.answers(&[id]);
        (answers.pop().unwrap(), updates)
    }

    /// Send a request; its answer (result or error).
    pub fn ask(&mut self, method: &str, params: Value) -> Value {
        self.ask_with_updates(method, params).0
    }

    /// `initialize` (protocol version 1); the answer must be a result.
    pub fn initialize(&mut self) -> Value {
        let init = self.ask("initialize", json!({"protocolVersion": 1}));
        assert!(init.get("result").is_some(), "{init}");
        init
    }

    /// `session/new` in `/`; the new session's id.
    pub fn new_session(&mut self) -> String {
        let new = self.ask("session/new", json!({"cwd": "/", "mcpServers": []}));
        new["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {new}"))
            .to_string()
    }

    /// Send `session/prompt` with `text` to `session` without waiting; its id.
    pub fn send_prompt(&mut self, session: &str, text: &str) -> i64 {
        self.request("session/prompt", prompt_params(session, text))
    }

    /// `session/prompt` with `text`: the answer and the updates before it.
    pub fn prompt(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        self.ask_with_updates("session/prompt", prompt_params(session, text))
    }

    /// Read until an `agent_message_chunk` whose text contains `needle`;
    /// every message read up to and including it.
    pub fn read_until_text(&mut self, needle: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = self.read();
            let hit = agent_texts(std::slice::from_ref(&v))
                .iter()
                .any(|t| t.contains(needle));
            seen.push(v);
            if hit {
                return seen;
            }
        }
    }

    /// Stop reading the server's stdout (after the line being read): its
    /// pipe fills, and then its writes block, as with a client that stops
    /// reading.
    pub fn pause_reading(&self) {
        *self.paused.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    /// Read the server's stdout again.
    pub fn resume_reading(&self) {
        *self.paused.0.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.paused.1.notify_all();
    }

    /// The server's resident set (VmRSS), in KiB.
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The server's peak resident set (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// A `kB` field of `/proc/<pid>/status`.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("/proc/<pid>/status of the server");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"))
    }

    /// Close the server's stdin (the client disconnects).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Wait for the server to exit, at most `limit`; its status and how
    /// long the wait took. Panics (and `Drop` kills the server) after it.
    pub fn wait_exit(&mut self, limit: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.reaped = true;
                return (status, started.elapsed());
            }
            assert!(
                started.elapsed() < limit,
                "the server (pid {}) did not exit within {limit:?}",
                self.pid()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Close stdin and wait at most `limit` for the exit: the status and
    /// the time from the close to the exit.
    pub fn close_within(mut self, limit: Duration) -> (ExitStatus, Duration) {
        self.close_stdin();
        self.wait_exit(limit)
    }

    /// Close stdin; the server must exit 0 within `patience`.
    pub fn close(self) {
        let patience = self.patience;
        let (status, _) = self.close_within(patience);
        assert!(status.success(), "the server exited with {status}");
    }

    /// Set the running server's resource limit `resource` (soft and hard)
    /// with `prlimit(2)`.
    pub fn set_limit(&self, resource: libc::__rlimit_resource_t, soft: u64, hard: u64) {
        let lim = libc::rlimit {
            rlim_cur: soft as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: prlimit reads the struct passed; the pid is our child.
        let set = unsafe {
            libc::prlimit(
                self.pid() as libc::pid_t,
                resource,
                &lim,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(set, 0, "prlimit: {}", std::io::Error::last_os_error());
    }

    /// The number of descriptors the server has open.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// SIGKILL the server process alone (not its group) and reap it.
    pub fn kill_server(&mut self) {
        // SAFETY: kill only sends a signal; the pid is our unreaped child.
        let sent = unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGKILL) };
        assert_eq!(sent, 0, "kill -KILL {}", self.pid());
        self.child.wait().expect("reap the killed server");
        self.reaped = true;
    }
}

impl Drop for AcpServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if !self.reaped {
            // SAFETY: killpg only sends a signal. The server is not reaped
            // (alive or a zombie), so its pid, and with it the group id,
            // cannot have been reused.
            unsafe {
                libc::killpg(self.pid() as libc::pid_t, libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
    }
}

/// `lifecycle acp --sessions SESSIONS` in `cwd`, on pipes (stderr
/// discarded), in a process group of its own; not spawned.
pub fn command(sessions: &Path, cwd: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(super::lifecycle_bin());
    command
        .arg("acp")
        .arg("--sessions")
        .arg(sessions)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    command
}

/// SIGKILLs process group `.0` when dropped: a test that spawns the server
/// itself (with [`command`]) leaves nothing behind when it fails.
pub struct KillGroup(pub u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal; the group is the test's child's.
        unsafe {
            libc::killpg(self.0 as libc::pid_t, libc::SIGKILL);
        }
    }
}

/// `session/load` params: load `session` with working directory `cwd` and
/// no MCP servers.
pub fn load_params(session: &str, cwd: &str) -> Value {
    json!({"sessionId": session, "cwd": cwd, "mcpServers": []})
}

/// `session/prompt` params: one text block.
pub fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// The texts of the `agent_message_chunk` updates among `messages`.
pub fn agent_texts(messages: &[Value]) -> Vec<String> {
    chunks(messages, "agent_message_chunk")
}

/// The texts of the `kind` updates (`agent_message_chunk`,
/// `user_message_chunk`, ...) among `messages`.
pub fn chunks(messages: &[Value], kind: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == kind)
        .filter_map(|v| v["params"]["update"]["content"]["text"].as_str())
        .map(str::to_string)
        .collect()
}

/// Live processes whose command line contains `marker`: (pid, command
/// line). Zombies have an empty command line and do not count.
pub fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let raw = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        cmdline.contains(marker).then_some((pid, cmdline))
    })
    .collect()
}

/// Live processes whose command line contains any of `markers`.
pub fn processes_with_any(markers: &[String]) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for m in markers {
        found.extend(processes_with(m));
    }
    found.sort();
    found.dedup();
    found
}

/// Poll until `done` holds or `limit` passes; whether it held.
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The size in bytes of the one session log under `sessions`.
pub fn log_size(sessions: &Path) -> u64 {
    let logs: Vec<_> = std::fs::read_dir(sessions)
        .expect("the sessions directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one session log: {logs:?}");
    std::fs::metadata(&logs[0]).expect("the log").len()
}

/// The log of session `id` under `sessions`, as a new process would read
/// it: it must have no torn tail.
pub fn log_of(sessions: &Path, id: &str) -> lifecycle::store::durable::Loaded {
    use lifecycle::store::durable::{Durable, FileDurable};
    let log = FileDurable::new(sessions)
        .expect("the sessions directory")
        .load(id)
        .expect("the log loads");
    assert!(log.torn.is_none(), "a torn tail: {:?}", log.torn);
    log
}

/// Why each turn of session `id`'s log ended, in log order (D3, D9, D10).
pub fn turn_ends(sessions: &Path, id: &str) -> Vec<lifecycle::journal::EndReason> {
    use lifecycle::session_log::Entry;
    log_of(sessions, id)
        .records
        .iter()
        .filter_map(|r| match r.entry {
            Entry::TurnEnd { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}
