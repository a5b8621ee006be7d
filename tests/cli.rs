//! The command line: every test drives the built `lifecycle`
//! binary and asserts its exit code and the first line of its stdout or
//! stderr. This file is the shared runner; the tests are in `tests/cli/`:
//!
//! - `basics`: bad commands, `list`, `check --json`, a replay, the
//!   account `explore --optimal` gives of its sleep-blocked runs;
//! - `shards`: `check --shard`, `merge`, `scripts/shards.sh`;
//! - `inputs`: checkpoints and `--resume`, inputs checked before any work,
//!   budgets;
//! - `table`: the table's width, bounds, counts, footnotes and follow-up
//!   commands, `model --json`;
//! - `signals`: a closed stdout (`| head`), Ctrl-C, shuttle's panic hook;
//! - `replay`: replay lines checked field by field, the journals, the
//!   swimlane, the violating step, `shrink`;
//! - `replay_html`: `replay --html`, its page stepped through in headless
//!   Chromium (`lifecycle_testkit::browser`);
//! - `model_serve`: `model --serve`, stateright's Explorer driven in
//!   headless Chromium to a fault's counterexample, and its refusals.
//!
//! Every run has a deadline: a command that hangs is killed and fails its
//! test instead of hanging the suite.

#[path = "cli/basics.rs"]
mod basics;
#[path = "cli/classes.rs"]
mod classes;
#[path = "cli/inputs.rs"]
mod inputs;
#[path = "cli/model_serve.rs"]
mod model_serve;
#[path = "cli/replay.rs"]
mod replay;
#[path = "cli/replay_html.rs"]
mod replay_html;
#[path = "cli/shards.rs"]
mod shards;
#[path = "cli/signals.rs"]
mod signals;
#[path = "cli/table.rs"]
mod table;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_lifecycle");

/// The first line of the table of `check`, `explore` and `merge`.
pub const HEADER: &str =
    "scenario                       checker        executions distinct result seconds  space";

/// How long any one run may take before it is killed and its test fails.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// A finished run of the binary.
#[derive(Debug)]
pub struct Run {
    /// The command line, for failure messages.
    pub what: String,
    /// The exit code; -1 if a signal ended the process.
    pub code: i32,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub out: String,
    pub err: String,
    /// From the spawn until the exit was seen (an upper bound).
    pub took: Duration,
}

impl Run {
    /// The first line of stdout ("" if none).
    pub fn first_out(&self) -> &str {
        self.out.lines().next().unwrap_or("")
    }

    /// The first line of stderr ("" if none).
    pub fn first_err(&self) -> &str {
        self.err.lines().next().unwrap_or("")
    }

    /// The command line, stdout then stderr, for failure messages.
    pub fn both(&self) -> String {
        format!("{}\n{}{}", self.what, self.out, self.err)
    }
}

/// `lifecycle ARGS` in the crate's directory, stdin closed.
pub fn command<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null());
    c
}

/// A running binary whose stdout and stderr are read by threads (so a
/// full pipe never blocks it).
pub struct Proc {
    child: Child,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
    started: Instant,
    what: String,
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<String>> {
    let mut pipe = pipe?;
    Some(std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }))
}

/// Start `lifecycle ARGS` (see [`command`]).
pub fn spawn<S: AsRef<OsStr>>(args: &[S]) -> Proc {
    Proc::of(command(args))
}

impl Proc {
    /// Start `c` with stdout and stderr piped and drained.
    pub fn of(mut c: Command) -> Proc {
        let what = format!("{c:?}");
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lifecycle");
        let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
        Proc {
            child,
            out,
            err,
            started: Instant::now(),
            what,
        }
    }

    pub fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Send SIGINT (Ctrl-C).
    pub fn interrupt(&self) {
        // SAFETY: kill only sends a signal, to our own unreaped child.
        let rc = unsafe { libc::kill(self.pid(), libc::SIGINT) };
        assert_eq!(rc, 0, "kill -INT {}", self.pid());
    }

    /// Wait until the process has a SIGINT handler installed (bit 2 of
    /// `SigCgt` in `/proc/PID/status`): from then on a Ctrl-C is caught.
    pub fn await_sigint_handler(&mut self) {
        let start = Instant::now();
        loop {
            let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
                .expect("/proc/PID/status");
            let caught = status
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
                .expect("SigCgt");
            if caught & (1 << (libc::SIGINT - 1)) != 0 {
                return;
            }
            assert!(self.child.try_wait().expect("try_wait").is_none(), "exited");
            assert!(start.elapsed() < DEADLINE, "no SIGINT handler");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the process exits within `limit`.
    pub fn exits_within(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while self.child.try_wait().expect("try_wait").is_none() {
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Wait for the exit, at most `limit` from now; past that, kill the
    /// process and fail.
    pub fn finish(mut self, limit: Duration) -> Run {
        use std::os::unix::process::ExitStatusExt;
        if !self.exits_within(limit) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("killed: {} still running after {limit:?}", self.what);
        }
        let took = self.started.elapsed();
        let status = self.child.wait().expect("wait");
        let text = |h: Option<JoinHandle<String>>| {
            h.map(|h| h.join().expect("reader")).unwrap_or_default()
        };
        Run {
            what: std::mem::take(&mut self.what),
            code: status.code().unwrap_or(-1),
            signal: status.signal(),
            out: text(self.out.take()),
            err: text(self.err.take()),
            took,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // A test that failed half-way leaves no process behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run `lifecycle ARGS` to the end.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    spawn(args).finish(DEADLINE)
}

/// Run every command line at once; their runs, in order.
pub fn run_all<S: AsRef<OsStr>>(cases: &[Vec<S>]) -> Vec<Run> {
    run_all_within(cases, DEADLINE)
}

/// [`run_all`], each run killed (and the test failed) past `limit`.
pub fn run_all_within<S: AsRef<OsStr>>(cases: &[Vec<S>], limit: Duration) -> Vec<Run> {
    let procs: Vec<Proc> = cases.iter().map(|args| spawn(args)).collect();
    procs.into_iter().map(|p| p.finish(limit)).collect()
}

/// Concatenate argument lists.
pub fn args<'a>(parts: &[&[&'a str]]) -> Vec<&'a str> {
    parts.concat()
}

/// Assert a refusal: exit 2 within `limit` (before any work), nothing on
/// stdout, exactly one line on stderr, and that line satisfies `said`.
#[track_caller]
pub fn assert_refused(run: &Run, said: impl Fn(&str) -> bool, limit: Duration) {
    assert_eq!(run.code, 2, "{}", run.both());
    assert_eq!(
        run.out, "",
        "{}: nothing runs, nothing is printed",
        run.what
    );
    assert_eq!(run.err.lines().count(), 1, "one line: {}", run.both());
    assert!(said(run.first_err()), "{}", run.both());
    assert!(
        run.took < limit,
        "{} took {:?}: did work first",
        run.what,
        run.took
    );
}

/// A fresh directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The replay line of the first failure `explore` finds (each one found
/// once per test binary).
pub fn found_line(scenario: &str, checker: &str, fault: &str) -> String {
    static FOUND: OnceLock<Mutex<HashMap<[String; 3], String>>> = OnceLock::new();
    let key = [scenario, checker, fault].map(str::to_string);
    let found = FOUND.get_or_init(Default::default);
    if let Some(line) = found.lock().unwrap().get(&key) {
        return line.clone();
    }
    let r = run(&[
        "explore",
        scenario,
        "--checker",
        checker,
        "--fault",
        fault,
        "--stop-at-first",
        "--json",
    ]);
    assert_eq!(r.code, 1, "{}", r.both());
    let v: serde_json::Value = serde_json::from_str(r.out.trim()).expect("json");
    let line = v["violations"][0]["replay"]
        .as_str()
        .expect("a replay line")
        .to_string();
    found.lock().unwrap().insert(key, line.clone());
    line
}
