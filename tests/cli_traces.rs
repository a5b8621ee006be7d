//! The command line on a closed stdout, with bad replay lines, and the
//! traces `replay` and `shrink` print (issue 16, items 4, 5 and 7). Each
//! test drives the binary and checks its exit code and first line.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_lifecycle");

fn lifecycle(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run lifecycle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The first replay line in `text` (a JSON document or a table).
fn first_line_in(text: &str) -> Option<String> {
    let at = text.find("v2:")?;
    let rest = &text[at..];
    let end = rest
        .find(|c: char| c == '"' || c == '\'' || c.is_whitespace())
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// The replay line of the first failure `explore` finds.
fn found_line(scenario: &str, checker: &str, fault: &str) -> String {
    let (code, out, err) = lifecycle(&[
        "explore",
        scenario,
        "--checker",
        checker,
        "--fault",
        fault,
        "--stop-at-first",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    first_line_in(&out).unwrap_or_else(|| panic!("no replay line in {out}"))
}

/// Run `args` with stdout a pipe whose read end is closed: after one line
/// was read (`read_first`), or before the command wrote anything. The
/// command must end at once and quietly: with its usual exit code `normal`
/// (it had written everything) or killed by SIGPIPE (141 in a shell), and
/// nothing on stderr (no panic, no shuttle message).
#[track_caller]
fn ends_quietly_on_a_closed_stdout(args: &[&str], normal: i32, read_first: bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lifecycle");
    let out = child.stdout.take().expect("stdout");
    if read_first {
        let mut first = String::new();
        BufReader::new(out)
            .read_line(&mut first)
            .expect("read a line");
        assert!(!first.is_empty(), "{args:?} printed nothing");
        // The reader is dropped here: the read end of the pipe is closed.
    } else {
        drop(out);
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    let quiet = status.code() == Some(normal) || status.signal() == Some(libc::SIGPIPE);
    assert!(quiet, "{args:?}: {status:?}; stderr: {err}");
    assert_eq!(err, "", "{args:?} wrote on stderr");
}

#[track_caller]
fn ends_quietly(args: &[&str], normal: i32) {
    ends_quietly_on_a_closed_stdout(args, normal, true);
    ends_quietly_on_a_closed_stdout(args, normal, false);
}

#[test]
fn list_on_a_closed_stdout_ends_quietly() {
    ends_quietly(&["list"], 0);
}

#[test]
fn check_on_a_closed_stdout_ends_quietly() {
    ends_quietly(
        &[
            "check",
            "--scenario",
            "cancel-before-claim",
            "--checker",
            "sim",
            "--sim-seeds",
            "200",
            "--no-progress",
        ],
        0,
    );
}

#[test]
fn explore_on_a_closed_stdout_ends_quietly() {
    ends_quietly(
        &[
            "explore",
            "cancel-before-claim",
            "--checker",
            "sim",
            "--budget",
            "200",
        ],
        0,
    );
}

#[test]
fn replay_on_a_closed_stdout_ends_quietly() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    ends_quietly(&["replay", &line], 1);
}

/// `acp` keeps SIGPIPE ignored: a client that closed the server's stdout
/// is a disconnect, and the server still disposes and exits 0.
#[test]
fn acp_with_a_closed_stdout_exits_0() {
    let mut child = Command::new(BIN)
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lifecycle acp");
    drop(child.stdout.take());
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let init =
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
        let _ = writeln!(stdin, "{init}");
        std::thread::sleep(Duration::from_millis(300));
        let _ = writeln!(stdin, "{init}");
    }
    let status = child.wait().expect("wait");
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    assert_eq!(status.code(), Some(0), "{status:?}; stderr: {err}");
    assert!(!err.contains("error"), "{err}");
}

/// A bad replay line: exit 2 and exactly one line on stderr, which says
/// `what`; nothing runs, so nothing is printed on stdout.
#[track_caller]
fn refused(line: &str, what: &str) {
    let started = Instant::now();
    let (code, out, err) = lifecycle(&["replay", line]);
    assert_eq!(code, 2, "{line}: {out}{err}");
    assert_eq!(err.lines().count(), 1, "{line}: {err}");
    assert!(err.starts_with("error: "), "{line}: {err}");
    assert!(err.contains(what), "{line}: expected {what:?} in {err}");
    assert_eq!(out, "", "{line}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{line} took long"
    );
}

/// The fingerprint of `scenario` in this build, from a line that has it.
fn fingerprint_of(line: &str) -> &str {
    line.split(':').nth(4).expect("a fingerprint")
}

#[test]
fn replay_payloads_are_bounded_and_checked_field_by_field() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let fp = fingerprint_of(&line);
    let w = |checker: &str, payload: &str| {
        format!("v2:when-idle-waiters:{checker}:none:{fp}:{payload}")
    };
    refused(&w("tokio", "runs=18446744073709551615"), "`runs`");
    refused(&w("tokio", "runs=99999999999999999999999"), "`runs`");
    refused(&w("tokio", "runs=1000001"), "maximum 1000000");
    refused(&w("tokio", "runs=0"), "`runs`");
    refused(&w("tokio", "runs=1;runs=2"), "`runs` appears twice");
    refused(&w("tokio", "runs=1;speed=2"), "unknown field \"speed\"");
    refused(&w("loom", "exec=99999999999,pb=2"), "`exec`");
    refused(&w("loom", "exec=1,pb=200"), "`pb`");
    refused(&w("loom", "exec=1"), "`pb` is missing");
    refused(&w("shuttle-pct", "schedule=91"), "`schedule`");
    refused(
        &w("shuttle-pct", "schedule=91ffffffffffffffffffff01"),
        "`schedule`",
    );
    refused(&w("shuttle-pct", "schedule=9101ff0000"), "`schedule`");
    refused(
        &w("sim", "seed=1;time=virtual;plan=0;x=1"),
        "unknown field \"x\"",
    );
    refused(
        &w("sim", "seed=1;seed=1;time=virtual;plan=0"),
        "`seed` appears twice",
    );
    refused(&w("sim", "seed=é;time=virtual;plan=0"), "`seed`");
    refused(&w("sim", "seed=1;time=virtual;plan=0é"), "`plan`");
    refused(&w("sim", "seed=1;time=virtual"), "`plan` is missing");
    refused(&w("sim", "seed=1;time=sometimes;plan=0"), "`time`");
    refused(
        &format!("v2:wh\u{e9}n:sim:none:{fp}:seed=1"),
        "unknown scenario",
    );
    refused(
        "v2:when-idle-waiters:sim:none:0000000\u{e9}:seed=1",
        "fingerprint",
    );
    refused(
        &w("tokio", &format!("runs={}", "9".repeat(30_000))),
        "`runs`",
    );
    refused(&"x".repeat(30_000), "malformed replay line");
    refused(&line.replacen("v2:", "x2:", 1), "malformed replay line");
}

#[test]
fn a_plan_naming_a_task_that_does_not_exist_is_refused() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let (head, plan) = line.rsplit_once("plan=").expect("a plan");
    // when-idle-waiters runs 3 tasks: ids 0, 1 and 2.
    refused(&format!("{head}plan={plan}z"), "names task 35");
    refused(&format!("{head}plan=00{{99}}"), "names task 99 at choice 2");
    refused(&format!("{head}plan=3"), "has 3 tasks (ids 0 to 2)");
    // Tasks that exist, but not the run's plan: refused as well.
    refused(
        &format!("{head}plan={plan}0000000000"),
        "field `plan` does not fit",
    );
    let short = &plan[..plan.len() - 3];
    refused(&format!("{head}plan={short}"), "field `plan` does not fit");
}

/// Every prefix of a good line, and the line with bytes replaced: exit 0,
/// 1 or 2, one line on stderr when 2, never a panic, never a hang.
#[test]
fn fuzzed_replay_lines_never_panic_or_hang() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let mut cases: Vec<String> = (0..line.len())
        .step_by(3)
        .filter(|&i| line.is_char_boundary(i))
        .map(|i| line[..i].to_string())
        .collect();
    for (i, c) in line.char_indices().step_by(7) {
        for with in ["\u{fc}", ":", ";", "=", "{", "9"] {
            cases.push(format!("{}{with}{}", &line[..i], &line[i + c.len_utf8()..]));
        }
    }
    for case in &cases {
        let started = Instant::now();
        let (code, out, err) = lifecycle(&["replay", case]);
        assert!(matches!(code, 0..=2), "{case}: exit {code}; {err}");
        assert!(!err.contains("panicked"), "{case}: {err}");
        if code == 2 {
            assert_eq!(err.lines().count(), 1, "{case}: {err}");
        }
        let _ = out;
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{case} took long"
        );
    }
}

/// A panic outside shuttle's runs (in a process that ran shuttle) gets
/// the usual panic message, never shuttle's. The process is this test
/// binary again, in the child role below.
#[test]
fn shuttle_hook_is_only_installed_around_shuttle_runs() {
    if std::env::var_os("CLI_TRACES_CHILD").is_some() {
        use agent_lifecycle::check::{self, shuttle_check, Checker};
        use agent_lifecycle::faults::Faults;
        check::quiet_panics();
        let scenario = &agent_lifecycle::scenarios::cancel::CANCEL_BEFORE_CLAIM;
        let report = shuttle_check::explore(
            Checker::ShuttleRandom,
            scenario,
            Faults::none(),
            20,
            2,
            false,
        );
        assert_eq!(report.executions, 20);
        let _ = std::panic::catch_unwind(|| panic!("an unrelated panic"));
        return;
    }
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "shuttle_hook_is_only_installed_around_shuttle_runs",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CLI_TRACES_CHILD", "1")
        .output()
        .expect("run the child");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("an unrelated panic"), "{err}");
    assert!(!err.contains("Task failed"), "{err}");
    assert!(!err.contains("test panicked in task"), "{err}");
}

#[test]
fn bench_out_is_checked_before_the_bench_runs() {
    let started = Instant::now();
    let (code, out, err) = lifecycle(&["bench", "--out", "/nonexistent/x.json"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot write /nonexistent/x.json"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let (code, _, err) = lifecycle(&["bench", "--out", "/"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn replay_svg_path_is_checked_before_the_replay_runs() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let (code, out, err) = lifecycle(&["replay", &line, "--svg", "/nonexistent/x.svg"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(out, "");
    assert!(
        err.starts_with("error: cannot write /nonexistent/x.svg"),
        "{err}"
    );
}

/// The `<text>` elements of an SVG: (x, y, font size, content).
fn texts(svg: &str) -> Vec<(f64, f64, f64, String)> {
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    };
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let (tag, rest) = piece.split_once('>').expect("a tag");
        let content = rest.split("</text>").next().unwrap_or("");
        let content = content
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        out.push((
            attr(tag, "x").expect("x"),
            attr(tag, "y").expect("y"),
            attr(tag, "font-size").unwrap_or(11.0),
            content,
        ));
    }
    out
}

#[test]
fn the_swimlane_fits_its_legend_and_footer_and_explains_every_colour() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("race.svg");
    let (code, out, err) = lifecycle(&["replay", &line, "--svg", path.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("replaying v2:when-idle-waiters"), "{out}");
    let svg = std::fs::read_to_string(&path).expect("the picture");
    let head = svg.lines().next().expect("a first line");
    let number = |name: &str| -> f64 {
        let at = head.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        head[at..].split('"').next().unwrap().parse().unwrap()
    };
    let (width, height) = (number("width"), number("height"));
    assert!(
        head.contains(&format!("viewBox=\"0 0 {width} {height}\"")),
        "{head}"
    );
    for (x, y, size, text) in texts(&svg) {
        // A monospace glyph is at most 0.6 em wide (0.65 for the bold title).
        let per_char = if size > 11.0 { 0.65 * size } else { 0.6 * size };
        let right = x + per_char * text.chars().count() as f64;
        assert!(right <= width, "{text:?} ends at {right:.0} of {width}");
        assert!(y <= height, "{text:?} at y {y} of {height}");
    }
    // Every fill colour of a box or mark is explained in the legend.
    for (colour, word) in [
        ("#5b8def", "blue box"),
        ("#27ae60", "green box"),
        ("#e74c3c", "red framed box"),
        ("#c0392b", "red triangle"),
        ("#f39c12", "orange arc"),
        ("#f4f6fa", "grey and white bands"),
    ] {
        assert!(svg.contains(colour), "{colour} not drawn");
        assert!(svg.contains(word), "{word} not explained");
    }
    assert!(svg.contains("violating step"), "no footer");
}

/// Every journal line names its agent, and every agent's journal is
/// printed: cancel-before-claim runs agent-1 and a bystander.
#[test]
fn every_agents_journal_is_printed_and_every_line_names_its_agent() {
    let line = found_line("cancel-before-claim", "sim", "M3");
    let (code, out, err) = lifecycle(&["replay", &line]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("replaying v2:cancel-before-claim"), "{out}");
    let mut agents = Vec::new();
    let mut current: Option<String> = None;
    for l in out.lines() {
        if let Some(agent) = l
            .strip_prefix("journal of ")
            .and_then(|a| a.strip_suffix(':'))
        {
            agents.push(agent.to_string());
            current = Some(agent.to_string());
        } else if l.is_empty() {
            current = None;
        } else if let Some(agent) = &current {
            assert!(
                l.starts_with(&format!("  {agent} #")),
                "{l:?} does not name {agent}"
            );
        }
        if l.contains(" journal: ") {
            assert!(l.contains("agent="), "a trace line without its agent: {l}");
        }
    }
    assert!(agents.contains(&"agent-1".to_string()), "{agents:?}\n{out}");
    assert!(
        agents.contains(&"bystander".to_string()),
        "{agents:?}\n{out}"
    );
}

/// The number in `violating step: N (...)`.
fn violating_step(out: &str) -> u64 {
    let l = out
        .lines()
        .find(|l| l.starts_with("violating step: "))
        .unwrap_or_else(|| panic!("no violating step in {out}"));
    l["violating step: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a step")
}

/// The last step of the schedule `replay` prints.
fn last_step(out: &str) -> u64 {
    out.lines()
        .rev()
        .filter_map(|l| l.split_once(" step ").map(|(_, r)| r.trim_start()))
        .find_map(|r| r.split(' ').next()?.parse().ok())
        .expect("a schedule")
}

/// A world-journal violation (R1 of M9) points at the world event after
/// which the oracle first reports it, not at the last poll.
#[test]
fn a_world_violation_points_at_the_poll_where_the_oracle_first_failed() {
    let line = found_line("same-id-create-race", "sim", "M9");
    let (code, out, err) = lifecycle(&["replay", &line]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("replaying v2:same-id-create-race"), "{out}");
    let step = violating_step(&out);
    assert!(step < last_step(&out), "{out}");
    assert!(out.contains("world event #"), "{out}");
}

/// S5 is a scenario check, with no journal record: the text points at the
/// poll where the check failed, not at the last poll.
#[test]
fn a_failed_scenario_check_points_at_its_poll() {
    let line = found_line("tool-bash-reload", "sim", "M2");
    let (code, out, err) = lifecycle(&["replay", &line]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("S5 violated"), "{out}");
    assert!(violating_step(&out) < last_step(&out), "{out}");
    assert!(
        out.contains("the scenario's check failed in this poll"),
        "{out}"
    );
}

/// A line the shrinker cannot reduce: "already minimal", not "N -> N".
#[test]
fn shrink_says_already_minimal() {
    let line = found_line("when-idle-waiters", "sim-dfs", "M12");
    let (code, out, err) = lifecycle(&["shrink", &line]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out.lines().next(),
        Some("rule C7 in when-idle-waiters"),
        "{out}"
    );
    assert!(out.contains("already minimal"), "{out}");
    assert!(!out.contains("minimal:  "), "{out}");
}

/// A line the shrinker can reduce still gets its smaller line.
#[test]
fn shrink_prints_a_smaller_line_when_it_finds_one() {
    let line = found_line("cancel-before-claim", "sim", "M3");
    let (code, out, err) = lifecycle(&["shrink", &line]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("rule C4 in cancel-before-claim"), "{out}");
    assert!(out.contains("minimal:  "), "{out}");
    assert!(!out.contains("already minimal"), "{out}");
}
