//! `model --serve`: stateright's Explorer of a model, driven in headless
//! Chromium as a reader would (an initial state, an action chosen, the
//! properties listed, run to completion, a fault's counterexample
//! followed); and the refusals of a bad `--serve` before anything is
//! served.

use super::{assert_refused, command, run};
use lifecycle_testkit::browser::{Browser, Page};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A loopback port nothing listens on (the OS's pick).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("its address").port()
}

/// A `model --serve` process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `model --serve ADDR ARGS`; read its stdout up to the line that
/// starts with `until`, then wait until it accepts connections. The
/// server, its address and the lines read.
fn serve(extra: &[&str], until: &str) -> (Server, String, Vec<String>) {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut args = vec!["model", "--serve", addr.as_str()];
    args.extend_from_slice(extra);
    let mut c = command(&args);
    c.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut server = Server(c.spawn().expect("spawn lifecycle"));
    let out = server.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = vec![];
    while !lines.last().is_some_and(|l: &String| l.starts_with(until)) {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => lines.push(l),
            Err(e) => panic!(
                "`lifecycle {}`: no `{until}` line ({e}): {lines:?}",
                args.join(" ")
            ),
        }
    }
    let start = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            matches!(server.0.try_wait(), Ok(None)),
            "`lifecycle {}` exited before serving",
            args.join(" ")
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "nothing listens on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, addr, lines)
}

/// The text of the links under the heading `h2` (the Explorer's
/// "Path of Actions", "Next Action Choices").
fn links_under(page: &mut Page<'_>, h2: &str) -> Vec<String> {
    let v = page.eval(&format!(
        "[...document.querySelectorAll('h2')].filter(h => h.textContent.trim() == '{h2}')\
         .flatMap(h => [...h.nextElementSibling.querySelectorAll('a')])\
         .map(a => a.textContent.trim())"
    ));
    serde_json::from_value(v).expect("a list of texts")
}

/// Click the link under the heading `h2` whose text is `text`.
fn click_under(page: &mut Page<'_>, h2: &str, text: &str) {
    let clicked = page.eval(&format!(
        "(() => {{ const a = [...document.querySelectorAll('h2')]\
         .filter(h => h.textContent.trim() == '{h2}')\
         .flatMap(h => [...h.nextElementSibling.querySelectorAll('a')])\
         .find(a => a.textContent.trim() == {text:?}); \
         if (!a) return false; a.click(); return true; }})()"
    ));
    assert_eq!(clicked, serde_json::Value::Bool(true), "no link `{text}`");
}

/// The shown state (the Explorer's "Current State" text).
fn current_state(page: &mut Page<'_>) -> String {
    let v = page.eval(
        "[...document.querySelectorAll('section.main-flex-right div.font-code')]\
         .map(d => d.textContent).join('\\n')",
    );
    v.as_str().unwrap_or_default().to_string()
}

/// The durability model with M16 (write-ahead broken, D9): start from the
/// initial state, choose an action and see the next state, see every
/// property listed, run to completion, follow D9's counterexample; then
/// open the shortest counterexample the server printed.
#[test]
fn explorer_steps_through_the_durability_model_to_m16s_counterexample() {
    let (_server, addr, lines) = serve(&["--fault", "M16"], "counterexample of M16");
    let Some(mut browser) = Browser::launch() else {
        return;
    };
    let mut page = browser.open(&format!("http://{addr}/"));
    page.keep_screenshot("model-serve-m16");
    let wait = Duration::from_secs(30);
    // Start from the initial state.
    page.wait_for(
        "[...document.querySelectorAll('a')].some(a => a.textContent.trim() == 'Init 0')",
        wait,
    );
    click_under(&mut page, "Next Action Choices", "Init 0");
    page.wait_for("location.hash == '#/steps/0'", wait);
    page.wait_for(
        "[...document.querySelectorAll('section.main-flex-right div.font-code')]\
         .some(d => d.textContent.includes('DurabilityState'))",
        wait,
    );
    let initial = current_state(&mut page);
    // Choose an action: the path grows by it, the state changes.
    let mut choices = vec![];
    let start = Instant::now();
    while choices.is_empty() && start.elapsed() < wait {
        choices = links_under(&mut page, "Next Action Choices");
    }
    let action = choices.first().cloned().expect("an enabled action");
    click_under(&mut page, "Next Action Choices", &action);
    page.wait_for("location.hash.startsWith('#/steps/0/')", wait);
    let start = Instant::now();
    while links_under(&mut page, "Path of Actions").last() != Some(&action) {
        assert!(start.elapsed() < wait, "the path did not grow by {action}");
        std::thread::sleep(Duration::from_millis(25));
    }
    let path = links_under(&mut page, "Path of Actions");
    assert_eq!(path, ["Pre-init", "Init 0", action.as_str()]);
    let next = current_state(&mut page);
    assert!(next.contains("DurabilityState"), "{next}");
    assert_ne!(next, initial, "{action} changed nothing shown");
    // Every property is listed, with its status.
    let listed = page.eval("document.querySelector('main nav').textContent");
    let listed = listed.as_str().unwrap_or_default().to_string();
    for rule in ["D9 write-ahead", "D10"] {
        assert!(listed.contains(rule), "no {rule} property in: {listed}");
    }
    // Run to completion: D9's counterexample becomes a link, followed.
    page.click("button[onclick='runToCompletion()']");
    let d9 = "[...document.querySelectorAll('main nav a')]\
              .find(a => a.textContent.includes('D9 write-ahead') \
              && a.getAttribute('href').startsWith('#/steps/'))";
    page.wait_for(d9, Duration::from_secs(60));
    let summary = page.eval(&format!("{d9}.previousElementSibling.textContent"));
    assert!(
        summary.as_str().unwrap_or("").contains("Counterexample"),
        "{summary}"
    );
    page.eval(&format!("{d9}.click()"));
    let start = Instant::now();
    let steps = loop {
        let steps = links_under(&mut page, "Path of Actions");
        if steps.len() > 2 && steps != path {
            break steps;
        }
        assert!(
            start.elapsed() < wait,
            "the counterexample's path is not shown"
        );
        std::thread::sleep(Duration::from_millis(25));
    };
    assert_eq!(steps[..2], ["Pre-init", "Init 0"], "{steps:?}");
    assert!(
        current_state(&mut page).contains("DurabilityState"),
        "the counterexample's last state is shown"
    );
    // The shortest counterexample, at the address the server printed: its
    // path has the pinned length (after Pre-init and Init 0).
    let printed = lines.last().expect("the counterexample line");
    let url = printed
        .split(": ")
        .last()
        .filter(|u| u.starts_with(&format!("http://{addr}/#/steps/0")))
        .unwrap_or_else(|| panic!("no Explorer address in {printed:?}"));
    assert!(printed.contains("D9 write-ahead"), "{printed}");
    // Same page, another hash: the Explorer follows the hash change.
    page.eval(&format!("location.href = {url:?}"));
    let pinned = lifecycle_tools::bench::pins::expected("model-fault.M16.counterexample") as usize;
    let start = Instant::now();
    while links_under(&mut page, "Path of Actions").len() != pinned + 2 {
        assert!(
            start.elapsed() < wait,
            "{url}: path {:?}, pinned {pinned} actions",
            links_under(&mut page, "Path of Actions")
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(printed.contains(&format!("{pinned} actions")), "{printed}");
    // ... and they are the actions of the checker's counterexample.
    let m16 = lifecycle_models::report::check(
        lifecycle_models::ModelId::Durability,
        Some(lifecycle_models::Fault::M16),
    );
    let cx = m16
        .properties
        .iter()
        .filter(|p| p.name.starts_with("D9 write-ahead"))
        .find_map(|p| p.counterexample.clone())
        .expect("D9's counterexample");
    assert_eq!(links_under(&mut page, "Path of Actions")[2..], cx.path[..]);
}

/// `--serve` refuses, in one line and exit 2, an address it cannot listen
/// on, a fault without a model and a fault of another model.
#[test]
fn serve_refuses_what_it_cannot_serve() {
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let limit = Duration::from_secs(20);
    let r = run(&["model", "--serve", &addr, "--model", "agent"]);
    assert_refused(
        &r,
        |l| l.starts_with(&format!("error: cannot listen on {addr}")),
        limit,
    );
    let r = run(&["model", "--serve", "127.0.0.1:0", "--fault", "M13"]);
    assert_refused(&r, |l| l == "error: M13 has no model", limit);
    let r = run(&[
        "model",
        "--serve",
        "127.0.0.1:0",
        "--fault",
        "M3",
        "--model",
        "shell",
    ]);
    assert_refused(
        &r,
        |l| l == "error: M3 belongs to the agent model, not shell",
        limit,
    );
    let r = run(&["model", "--serve", "127.0.0.1:0"]);
    assert_refused(&r, |l| l.starts_with("error: --serve needs a model"), limit);
    let r = run(&["model", "--serve", "127.0.0.1:0", "--model", "nope"]);
    assert_refused(&r, |l| l.starts_with("error: unknown model `nope`"), limit);
}
