//! The documentation is current and carries no hand-kept history: the
//! generated parts of `docs/` are what `lifecycle docs` would write
//! (`docs --check`), the README is short, and neither the README nor the
//! hand-written guide names a commit (a figure or a run belongs in the
//! generated record, a deterministic figure in `pins.json`).

use std::path::Path;
use std::process::Command;

/// README.md's length limit, in lines.
const README_MAX_LINES: usize = 300;

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The words of `text` that look like a commit hash: as `grep -E
/// '\b[0-9a-f]{7,40}\b'` finds them, whole words of 7 to 40 lowercase hex
/// digits.
fn commit_hashes(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let hex = word
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if hex && (7..=40).contains(&word.len()) {
                out.push((n + 1, word));
            }
        }
    }
    out
}

#[test]
fn docs_check_passes() {
    let out = Command::new(lifecycle_testkit::lifecycle_bin())
        .args(["docs", "--check"])
        .output()
        .expect("run lifecycle docs --check");
    assert!(
        out.status.success(),
        "`lifecycle docs --check` failed ({}); `lifecycle docs` regenerates docs/:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_readme_is_short_and_names_no_commit() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail to docs/guide.md"
    );
    assert_eq!(
        commit_hashes(&readme),
        Vec::<(usize, &str)>::new(),
        "README.md names commits (line, word); the record of a run belongs in docs/record.md"
    );
}

#[test]
fn the_guide_names_no_commit() {
    assert_eq!(
        commit_hashes(&read("docs/guide.md")),
        Vec::<(usize, &str)>::new(),
        "docs/guide.md names commits (line, word); the record of a run belongs in docs/record.md"
    );
}

#[test]
fn a_commit_hash_is_a_whole_hex_word() {
    let text = "at 6c230a0 and\n`22ca262`, not 6c230a or 6c230a0x or 1,000,000\nDEADBEEF deadbeef";
    assert_eq!(
        commit_hashes(text),
        [(1, "6c230a0"), (2, "22ca262"), (3, "deadbeef")]
    );
}
