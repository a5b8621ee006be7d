//! `replay --html`: one self-contained page. A simulator failure's page
//! in headless Chromium (the slider and the poll boxes select a step, the
//! violating step names its rule, nothing is fetched); loom and shuttle
//! pages show what their replays hold and say what they do not record;
//! the page's path is checked before the replay runs.

use super::{assert_refused, found_line, run, scratch};
use lifecycle_testkit::browser::Browser;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// `replay LINE --html FILE` in a fresh directory: exit 1 (the failure
/// reproduced), `page: FILE` printed; the page's path and text.
fn page_of(line: &str, name: &str) -> (PathBuf, String) {
    let path = scratch(name).join("out.html");
    let r = run(&[
        "replay",
        line,
        "--html",
        path.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(r.code, 1, "{}", r.both());
    assert!(
        r.out
            .lines()
            .any(|l| l == format!("page: {}", path.display())),
        "{}",
        r.out
    );
    let html = std::fs::read_to_string(&path).expect("the page");
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains(&format!("replay &#39;{line}&#39;")), "{html}");
    // Self-contained: no URL to fetch anything from.
    for url in ["http://", "https://", "//cdn", "src=\"", "@import"] {
        assert!(!html.contains(url), "the page names {url}");
    }
    (path, html)
}

#[test]
fn replay_html_path_is_checked_before_the_replay_runs() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let r = run(&["replay", &line, "--html", "/nonexistent/x.html"]);
    let said = |l: &str| l.starts_with("error: cannot write /nonexistent/x.html");
    assert_refused(&r, said, Duration::from_secs(20));
}

/// loom and shuttle replays keep no per-poll trace: their pages have no
/// swimlane and no slider, show the journals and violations they do hold,
/// and say so in words.
#[test]
fn loom_and_shuttle_pages_say_what_their_replays_do_not_record() {
    let cases = [
        (
            "disposed-listener-panics",
            "loom",
            "M10",
            "D4",
            "journal of a",
        ),
        (
            "when-idle-waiters",
            "shuttle-pct",
            "M12",
            "C7",
            "journal of agent-1",
        ),
    ];
    for (scenario, checker, fault, rule, journal) in cases {
        let line = found_line(scenario, checker, fault);
        let (_, html) = page_of(&line, &format!("html-{checker}"));
        let kind = checker.split('-').next().unwrap_or(checker);
        assert!(
            html.contains(&format!(
                "{kind} replays record no per-poll trace: no swimlane or step slider"
            )),
            "{checker}: {html}"
        );
        assert!(!html.contains("id=\"slider\""), "{checker}: {html}");
        assert!(!html.contains("<svg"), "{checker}: {html}");
        assert!(!html.contains("data-step=\""), "{checker}: {html}");
        let violation = html
            .split("<section id=\"violation\">")
            .nth(1)
            .and_then(|s| s.split("</section>").next())
            .expect("a #violation section");
        assert!(
            violation.contains(&format!("<b class=\"rule\">{rule}</b> violated")),
            "{checker}: {violation}"
        );
        assert!(
            html.contains(&format!("<h2>{journal}</h2>")),
            "{checker}: {html}"
        );
    }
}

/// The text of the element `id`.
fn text(page: &mut lifecycle_testkit::browser::Page<'_>, id: &str) -> String {
    let v = page.eval(&format!("document.getElementById('{id}').textContent"));
    v.as_str()
        .unwrap_or_else(|| panic!("no #{id}: {v}"))
        .to_string()
}

/// Move the slider to `i` as a person would (its value set, an `input`
/// event sent); the text of `#step-detail` after.
fn slide(page: &mut lifecycle_testkit::browser::Page<'_>, i: usize) -> String {
    page.eval(&format!(
        "(() => {{ const s = document.getElementById('slider'); s.value = '{i}'; \
         s.dispatchEvent(new Event('input', {{ bubbles: true }})); }})()"
    ));
    text(page, "step-detail")
}

/// C7 (when_idle resolves only at quiescence) broken by M12: the page of
/// its simulator replay, in headless Chromium.
#[test]
fn c7_replay_page_steps_through_the_failure_in_a_browser() {
    let line = found_line("when-idle-waiters", "sim", "M12");
    let (path, _) = page_of(&line, "html-browser");
    let Some(mut browser) = Browser::launch() else {
        return;
    };
    let mut page = browser.open(&format!("file://{}", path.display()));
    page.keep_screenshot("replay-html-c7");
    let data = page.eval("JSON.parse(document.getElementById('steps').textContent)");
    let steps = data["steps"].as_array().expect("steps").clone();
    let anchor = data["anchor"]["index"].as_u64().expect("a violating step") as usize;
    assert!(steps.len() > 2, "{data}");
    // The swimlane: one clickable box per poll.
    let boxes = page.eval("document.querySelectorAll('#lane svg rect.poll[data-step]').length");
    assert_eq!(boxes, Value::from(steps.len()), "poll boxes");
    assert!(text(&mut page, "violation").contains("C7 violated"));
    // The page opens on the violating step, which says which rule fails.
    assert_eq!(
        page.eval("document.getElementById('slider').value"),
        anchor.to_string()
    );
    let at_anchor = text(&mut page, "step-detail");
    assert!(
        at_anchor.contains("violating step: C7 fails here"),
        "{at_anchor}"
    );
    assert!(at_anchor.contains("footprint"), "{at_anchor}");
    // The slider selects a step: set its value and send `input`.
    let first = slide(&mut page, 0);
    let step0 = steps[0]["step"].as_u64().expect("a step number");
    assert!(
        first.starts_with(&format!("step {step0} (poll 1 of {})", steps.len())),
        "{first}"
    );
    assert!(!first.contains("violating step:"), "{first}");
    assert_ne!(first, at_anchor);
    let other = if anchor == 1 { 2 } else { 1 };
    let second = slide(&mut page, other);
    assert!(
        second.contains(&format!("(poll {} of", other + 1)),
        "{second}"
    );
    assert_ne!(second, first);
    // A click on a poll box selects its step; the slider follows.
    let last = steps.len() - 1;
    page.click(&format!("rect[data-step='{last}']"));
    assert_eq!(
        page.eval("document.getElementById('slider').value"),
        last.to_string()
    );
    let picked = page.eval(&format!(
        "document.querySelector(\"rect[data-step='{last}']\").classList.contains('selected')"
    ));
    assert_eq!(picked, Value::Bool(true));
    page.click(&format!("rect[data-step='{anchor}']"));
    assert!(text(&mut page, "step-detail").contains("violating step: C7 fails here"));
    // The replay line and its copy button.
    assert!(text(&mut page, "replay-line").contains(&line));
    page.click("#copy");
    page.wait_for(
        "document.getElementById('copy-status').textContent !== ''",
        Duration::from_secs(5),
    );
    // Nothing was fetched: no resource besides the page itself.
    let fetched = page.eval("performance.getEntriesByType('resource').length");
    assert_eq!(fetched, Value::from(0), "the page fetched resources");
}

/// A generated workload's failure (M27, found by `explore gen-…`): its
/// page shows each client's task as a lane, and its violating step is
/// the poll that made the first observation the model does not explain,
/// not the last poll.
#[test]
fn a_generated_failures_page_marks_the_observation_that_broke_the_rule() {
    let line = found_line("gen-l+po1+co", "sim", "M27");
    let (_, html) = page_of(&line, "html-generated");
    let json = html
        .split_once("id=\"steps\">")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map(|(json, _)| json)
        .expect("the page's steps document");
    let data: Value = serde_json::from_str(json).expect("the steps document is JSON");
    let steps = data["steps"].as_array().expect("steps");
    let anchor = &data["anchor"];
    let index = anchor["index"].as_u64().expect("a violating step") as usize;
    assert_eq!(anchor["rule"], "A2", "{anchor}");
    assert!(
        anchor["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("observation #") && w.ends_with("was made in this poll")),
        "{anchor}"
    );
    assert!(
        index + 1 < steps.len(),
        "the anchor is the last poll: {anchor}"
    );
    // The poll that made it is the agent loop's delivery of the step.
    assert!(
        steps[index]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("agent-loop")),
        "{}",
        steps[index]
    );
    // Each client is a lane: the first runs on the body's task, the
    // others on tasks named after them.
    for client in ["client 2", "client 3"] {
        assert!(
            steps.iter().any(|s| s["name"] == client),
            "no lane of {client}"
        );
    }
}
