//! Headless Chromium, driven over the Chrome DevTools Protocol, for tests
//! of pages: a `replay --html` page opened from a file, a page served on a
//! loopback port.
//!
//! Chromium runs with `--remote-debugging-pipe`: it reads commands on
//! its fd 3 and writes responses and events on its fd 4, each message a
//! JSON object followed by a NUL byte. A reader thread turns fd 4 into a
//! channel, so every wait has a deadline and a dead or hung browser fails
//! the test instead of hanging it. Chromium runs in a process group of
//! its own, killed as a group when the [`Browser`] is dropped.
//!
//! ```no_run
//! use lifecycle_testkit::browser::Browser;
//! use std::time::Duration;
//! let Some(mut browser) = Browser::launch() else { return };
//! let mut page = browser.open("file:///tmp/out.html");
//! page.keep_screenshot("replay-page");
//! page.wait_for("document.querySelector('#slider') !== null", Duration::from_secs(5));
//! page.click("[data-step='0']");
//! assert_eq!(page.eval("document.querySelector('#slider').value"), "0");
//! ```
//!
//! Without Chromium, [`Browser::launch`] returns `None` (the test skips,
//! saying so), unless `LIFECYCLE_REQUIRE_BROWSER` is set (CI sets it):
//! then a missing browser fails the test.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long one protocol command may take to answer.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable that makes a missing browser a failure.
pub const REQUIRE_ENV: &str = "LIFECYCLE_REQUIRE_BROWSER";

/// The executables tried, in order, on `PATH`.
const NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// A headless Chromium and its DevTools pipe.
pub struct Browser {
    child: Child,
    commands: File,
    messages: Receiver<Value>,
    /// Events read while waiting for a response, not yet consumed.
    events: VecDeque<Value>,
    next_id: u64,
    profile: PathBuf,
}

/// One tab, attached in flat mode: its commands carry its session id.
pub struct Page<'b> {
    browser: &'b mut Browser,
    session: String,
    target: String,
    artifact: Option<PathBuf>,
}

/// The first of [`NAMES`] found on `PATH`.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    NAMES.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// A pipe whose two ends are close-on-exec descriptors numbered 10 or
/// above (so that the child's `dup2` onto 3 and 4 never meets them).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we own after.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    let high = |fd: RawFd| {
        // SAFETY: fcntl duplicates a descriptor we own; the original is
        // closed once, here, and the duplicate owned by the OwnedFd.
        unsafe {
            let dup = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            assert!(dup >= 10, "fcntl: {}", std::io::Error::last_os_error());
            libc::close(fd);
            OwnedFd::from_raw_fd(dup)
        }
    };
    (high(fds[0]), high(fds[1]))
}

/// Where a test's screenshots go: `target/browser-artifacts/NAME.png`
/// (the directory created), under `CARGO_TARGET_DIR` when set.
pub fn artifact_path(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("browser-artifacts");
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}.png"))
}

impl Browser {
    /// Start headless Chromium. `None` (and a line on stderr saying the
    /// test is skipped) when no Chromium is installed and
    /// [`REQUIRE_ENV`] is unset; a panic when it is set, or when an
    /// installed Chromium does not start.
    pub fn launch() -> Option<Browser> {
        let Some(exe) = find_chromium() else {
            if std::env::var_os(REQUIRE_ENV).is_some() {
                panic!("{REQUIRE_ENV} is set and no Chromium is on PATH (tried {NAMES:?})");
            }
            eprintln!(
                "skipped: no Chromium on PATH (tried {NAMES:?}); set {REQUIRE_ENV}=1 to make this a failure"
            );
            return None;
        };
        static PROFILES: AtomicU64 = AtomicU64::new(0);
        let profile = std::env::temp_dir().join(format!(
            "lifecycle-chromium-{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("a Chromium profile directory");
        // fd 3: commands in to Chromium; fd 4: messages out of it.
        let (cmd_read, cmd_write) = pipe();
        let (msg_read, msg_write) = pipe();
        let (child_in, child_out): (RawFd, RawFd) = {
            use std::os::fd::AsRawFd;
            (cmd_read.as_raw_fd(), msg_write.as_raw_fd())
        };
        let mut command = Command::new(&exe);
        command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-breakpad",
                "--disable-crash-reporter",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        // SAFETY: between fork and exec only dup2 runs (async-signal-safe);
        // the sources are >= 10 and close-on-exec, the copies on 3 and 4
        // are not, so Chromium keeps exactly those.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(child_in, 3) < 0 || libc::dup2(child_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        // Our copies of Chromium's ends: closed, so its exit is our EOF.
        drop(cmd_read);
        drop(msg_write);
        let (tx, messages) = mpsc::channel();
        let mut from = File::from(msg_read);
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.iter().position(|&b| b == 0) {
                    let message: Vec<u8> = pending.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&message[..end]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            commands: File::from(cmd_write),
            messages,
            events: VecDeque::new(),
            next_id: 1,
            profile,
        };
        let version = browser
            .call(None, "Browser.getVersion", json!({}))
            .unwrap_or_else(|e| {
                panic!("{} did not answer on its DevTools pipe: {e}", exe.display())
            });
        eprintln!(
            "browser: {} ({})",
            version["product"].as_str().unwrap_or("?"),
            exe.display()
        );
        Some(browser)
    }

    /// Send `method` (to `session`, or to the browser) and wait for its
    /// answer; events read meanwhile are kept for [`Browser::event`].
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .map_err(|e| format!("{method}: cannot write to Chromium: {e}"))?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let v = self.next_message(deadline, method)?;
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method}: {err}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    fn next_message(&mut self, deadline: Instant, waiting: &str) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.messages.recv_timeout(left) {
            Ok(v) => Ok(v),
            Err(RecvTimeoutError::Timeout) => Err(format!("no answer to {waiting} in time")),
            Err(RecvTimeoutError::Disconnected) => Err(format!(
                "Chromium closed its pipe while waiting for {waiting}"
            )),
        }
    }

    /// Wait for the event `method` of `session`, at most `timeout`.
    fn event(&mut self, session: &str, method: &str, timeout: Duration) -> Result<Value, String> {
        let ours = |v: &Value| v["method"] == method && v["sessionId"] == session;
        if let Some(at) = self.events.iter().position(ours) {
            return Ok(self.events.remove(at).unwrap_or_default());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.next_message(deadline, method)?;
            if ours(&v) {
                return Ok(v);
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    /// Open `url` in a new tab and wait for its load event.
    #[track_caller]
    pub fn open(&mut self, url: &str) -> Page<'_> {
        let target = self
            .call(None, "Target.createTarget", json!({ "url": "about:blank" }))
            .and_then(|r| {
                r["targetId"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("Target.createTarget gave no targetId: {r}"))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let session = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .and_then(|r| {
                r["sessionId"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("Target.attachToTarget gave no sessionId: {r}"))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let mut page = Page {
            browser: self,
            session,
            target,
            artifact: None,
        };
        page.call("Page.enable", json!({}));
        page.call("Runtime.enable", json!({}));
        page.navigate(url);
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium's whole process group (its renderers and helpers too),
        // and only that: the group is the child's own pid.
        let pgid = self.child.id() as libc::pid_t;
        if pgid > 1 {
            // SAFETY: kill only sends a signal, to the group we created.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Page<'_> {
    #[track_caller]
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.browser
            .call(Some(&session), method, params)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Go to `url` and wait for its load event.
    #[track_caller]
    pub fn navigate(&mut self, url: &str) {
        // A load event of an earlier document is not this one's.
        let session = self.session.clone();
        self.browser
            .events
            .retain(|v| !(v["method"] == "Page.loadEventFired" && v["sessionId"] == session));
        let r = self.call("Page.navigate", json!({ "url": url }));
        if let Some(e) = r["errorText"].as_str() {
            panic!("cannot open {url}: {e}");
        }
        self.browser
            .event(&session, "Page.loadEventFired", CALL_TIMEOUT)
            .unwrap_or_else(|e| panic!("{url} did not load: {e}"));
        if url != "about:blank" {
            self.wait_for(
                "document.readyState === 'complete' && location.href !== 'about:blank'",
                CALL_TIMEOUT,
            );
        }
    }

    /// The value of the JavaScript expression `js` (a promise is awaited);
    /// `null` for `undefined`. A thrown exception fails the test.
    #[track_caller]
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": js, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(ex) = r.get("exceptionDetails") {
            let text = ex["exception"]["description"]
                .as_str()
                .or(ex["text"].as_str())
                .unwrap_or("an exception");
            panic!("{js}\nthrew: {text}");
        }
        r["result"]["value"].clone()
    }

    /// Wait until the expression `js` is truthy, polling, at most
    /// `timeout`; past that the test fails, naming the expression.
    #[track_caller]
    pub fn wait_for(&mut self, js: &str, timeout: Duration) {
        let start = Instant::now();
        let check = format!("!!({js})");
        while self.eval(&check) != Value::Bool(true) {
            assert!(
                start.elapsed() < timeout,
                "still false after {timeout:?}: {js}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Dispatch a click on the first element matching the CSS `selector`;
    /// the test fails if there is none.
    #[track_caller]
    pub fn click(&mut self, selector: &str) {
        let js = format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; \
             e.dispatchEvent(new MouseEvent('click', {{ bubbles: true, cancelable: true, view: window }})); return true; }})()",
            json!(selector)
        );
        assert_eq!(
            self.eval(&js),
            Value::Bool(true),
            "nothing matches {selector}"
        );
    }

    /// A PNG of the whole page, written to `path`.
    pub fn screenshot(&mut self, path: &Path) -> Result<(), String> {
        let session = self.session.clone();
        let r = self.browser.call(
            Some(&session),
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        )?;
        let data = r["data"].as_str().ok_or("no screenshot data")?;
        let png = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| format!("the screenshot is not base64: {e}"))?
        };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, png).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Take a screenshot to [`artifact_path`]`(name)` when this page is
    /// dropped: at the end of the test, and when it fails half-way.
    pub fn keep_screenshot(&mut self, name: &str) {
        self.artifact = Some(artifact_path(name));
    }
}

impl Drop for Page<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.artifact.take() {
            match self.screenshot(&path) {
                Ok(()) => eprintln!("screenshot: {}", path.display()),
                Err(e) => eprintln!("no screenshot {}: {e}", path.display()),
            }
        }
        let target = self.target.clone();
        let _ = self
            .browser
            .call(None, "Target.closeTarget", json!({ "targetId": target }));
    }
}
