//! Reading the test sources the clause table names: the `Op` variants of a
//! conformance test, whether its `transitions` generates one, and whether
//! an integration test function exists and runs (`#[test]`, not ignored).
//!
//! The sources are this crate's `tests/<target>.rs`, read at run time from
//! the directory the crate was built in, so an edited test does not
//! rebuild the library. Parsing is line-based and meant for the project's
//! rustfmt-formatted files; what it cannot find counts as missing, which
//! fails validation rather than passing it.

use super::Broken;
use std::collections::BTreeMap;

/// The directory of the test sources: the crate's `tests/`, where the
/// binary was built.
pub fn dir() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests")
}

/// Whether the test sources are there at all (not, for a binary installed
/// or copied away from its checkout).
pub fn available() -> bool {
    std::path::Path::new(dir()).is_dir()
}

/// Test sources read so far, by target.
#[derive(Default)]
pub(super) struct Sources {
    read: BTreeMap<String, Result<String, String>>,
}

impl Sources {
    /// The text of `tests/<target>.rs`.
    pub(super) fn get(&mut self, target: &str) -> Result<&str, Broken> {
        let text = self.read.entry(target.to_string()).or_insert_with(|| {
            if target.is_empty()
                || !target
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err("not a test target name".to_string());
            }
            let path = format!("{}/{target}.rs", dir());
            std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
        });
        match text {
            Ok(t) => Ok(t),
            Err(e) => Err(Broken::Source(target.to_string(), e.clone())),
        }
    }
}

/// The lines of the item that starts at the first line whose trimmed text
/// starts with `head`, through the line that closes its first brace.
fn item<'a>(src: &'a str, head: &str) -> Vec<&'a str> {
    let mut lines = src
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(head));
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut opened = false;
    for line in lines.by_ref() {
        out.push(line);
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            break;
        }
    }
    out
}

/// The variants of `enum Op` in a conformance test.
pub(super) fn op_variants(src: &str) -> Vec<String> {
    let lines = item(src, "enum Op {");
    let mut variants = Vec::new();
    let mut depth = 0i32;
    for line in lines.iter().skip(1) {
        let trimmed = line.trim_start();
        if depth == 0 && trimmed.starts_with(|c: char| c.is_ascii_uppercase()) {
            let name: String = trimmed
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            variants.push(name);
        }
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' | '(' => depth += 1,
                '}' | ')' => depth -= 1,
                _ => {}
            }
        }
    }
    variants
}

/// Whether the test's `fn transitions` (what proptest generates) names
/// `Op::<op>`.
pub(super) fn generates(src: &str, op: &str) -> bool {
    let body = item(src, "fn transitions(").join("\n");
    let needle = format!("Op::{op}");
    body.match_indices(&needle).any(|(at, _)| {
        !body[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Whether `fn <name>` is a test that `cargo test` runs: annotated with
/// `#[test]` or `#[tokio::test…]`, and not `#[ignore]`d.
pub(super) fn test_runs(src: &str, name: &str) -> Result<(), &'static str> {
    let lines: Vec<&str> = src.lines().collect();
    let head = |l: &str| {
        let t = l.trim_start();
        let t = t.strip_prefix("async ").unwrap_or(t);
        t.strip_prefix("fn ")
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with('('))
    };
    let Some(at) = lines.iter().position(|l| head(l)) else {
        return Err("does not exist");
    };
    let attributes: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
        .filter(|l| l.starts_with("#["))
        .collect();
    if attributes.iter().any(|a| a.starts_with("#[ignore")) {
        return Err("is ignored");
    }
    if !attributes
        .iter()
        .any(|a| *a == "#[test]" || a.starts_with("#[tokio::test"))
    {
        return Err("is not a #[test]");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
#[derive(Clone, Debug)]
enum Op {
    Send,
    /// A doc line: Not a variant.
    Cancel {
        parent: bool,
        observer: bool,
    },
    Prompt(u8),
    PromptThenClose {
        session: u8, // Inner: no
    },
}

impl ReferenceStateMachine for X {
    fn transitions(_: &Ref) -> BoxedStrategy<Op> {
        prop_oneof![Just(Op::Send), Just(Op::PromptThenClose { session: 0 })].boxed()
    }

    fn apply(r: Ref, op: &Op) -> Ref {
        match op { Op::Prompt(_) => r, _ => r }
    }
}

/// Docs.
#[test]
fn runs() {}

#[tokio::test(flavor = "multi_thread")]
async fn runs_async() {}

#[test]
#[ignore = "why"]
fn ignored() {}

fn helper() {}
"#;

    #[test]
    fn parses_variants_transitions_and_tests() {
        assert_eq!(
            op_variants(SRC),
            ["Send", "Cancel", "Prompt", "PromptThenClose"]
        );
        assert!(generates(SRC, "Send"));
        assert!(generates(SRC, "PromptThenClose"));
        assert!(!generates(SRC, "Prompt"), "only in apply, not generated");
        assert!(!generates(SRC, "Cancel"));
        assert_eq!(test_runs(SRC, "runs"), Ok(()));
        assert_eq!(test_runs(SRC, "runs_async"), Ok(()));
        assert_eq!(test_runs(SRC, "ignored"), Err("is ignored"));
        assert_eq!(test_runs(SRC, "helper"), Err("is not a #[test]"));
        assert_eq!(test_runs(SRC, "run"), Err("does not exist"));
    }
}
