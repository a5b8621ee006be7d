//! Production carries no harness (SPEC §3: faults are compiled only for the
//! harness). The lifecycle's public functions (its constructors above all)
//! name no harness type — `Hooks`, `Faults`, `Fault`, `World` — unless
//! they are compiled only with the `faults` feature; the harness switches
//! faults on and observes through the execution's context
//! (`rt::context`), which production code only asks (`fault!`, `observe`).
//!
//! The binary side of the same claim (`nm` finds no fault, world, context or
//! oracle symbol in `cargo build --release --no-default-features`) is
//! checked by `.ci/run`'s no-harness stage.

use std::path::{Path, PathBuf};

/// Production source: everything but the harness's own modules.
const HARNESS: &[&str] = &[
    "bench",
    "check",
    "clauses",
    "generate",
    "cli",
    "scenarios",
    "faults.rs",
    "world.rs",
    "oracle.rs",
    "oracle_world.rs",
    "main.rs",
];

const HARNESS_TYPES: &[&str] = &["Hooks", "Faults", "Fault", "World"];

fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if dir.ends_with("src") && HARNESS.contains(&name) {
            continue;
        }
        if path.is_dir() {
            production_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Whether `text` names `ty` as a whole word.
fn names(text: &str, ty: &str) -> bool {
    text.match_indices(ty).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + ty.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// Every `pub fn` of `src` whose signature names a harness type and that is
/// not gated by `#[cfg(feature = "faults")]` (on itself, or on the `impl`
/// or `mod` it is in, or on the whole file's `off`/`on` halves): as
/// `line: signature`.
fn ungated(src: &str) -> Vec<String> {
    let lines: Vec<&str> = src.lines().collect();
    let gate = "#[cfg(feature = \"faults\")]";
    let mut found = Vec::new();
    // Indentation levels under a gated item, innermost last.
    let mut gated_blocks: Vec<usize> = Vec::new();
    let mut gate_pending = false;
    for (n, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        // A line back at a gated item's indentation closes it, unless it
        // continues it (`} else {`).
        gated_blocks.retain(|&i| indent > i || (indent == i && t.starts_with('}') && t != "}"));
        if t == gate {
            gate_pending = true;
            continue;
        }
        if t.starts_with("///") || t.starts_with("#[") {
            continue;
        }
        let gated = gate_pending || !gated_blocks.is_empty();
        if gate_pending && (t.starts_with("impl") || t.starts_with("mod ") || t.contains(" mod ")) {
            gated_blocks.push(indent);
        }
        gate_pending = false;
        if !(t.starts_with("pub fn") || t.starts_with("pub async fn")) || gated {
            continue;
        }
        // The signature: up to the body's `{` or a `;`.
        let mut sig = String::new();
        for l in &lines[n..] {
            sig.push_str(l.trim());
            sig.push(' ');
            if l.trim_end().ends_with('{') || l.trim_end().ends_with(';') {
                break;
            }
        }
        if HARNESS_TYPES.iter().any(|ty| names(&sig, ty)) {
            found.push(format!("{}: {}", n + 1, sig.trim()));
        }
    }
    found
}

#[test]
fn no_production_function_names_a_harness_type_ungated() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    production_files(&src, &mut files);
    assert!(files.len() > 20, "too few production files: {files:?}");
    let mut errors = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read");
        // `events.rs` defines the switched-off plug itself.
        if path.ends_with("events.rs") {
            continue;
        }
        for e in ungated(&text) {
            errors.push(format!("{}:{e}", path.display()));
        }
    }
    assert!(
        errors.is_empty(),
        "SPEC §3: production functions name a harness type without \
         #[cfg(feature = \"faults\")]:\n  {}",
        errors.join("\n  ")
    );
}

/// The scan finds what it is for: an ungated constructor taking `Hooks`,
/// one returning `Faults` across lines; and it lets gated ones through.
#[test]
fn the_scan_finds_an_ungated_harness_constructor() {
    let planted = "impl<R: Rt> Registry<R> {\n    /// doc\n    pub fn new(hooks: Hooks<R>) -> Arc<Self> {\n        todo!()\n    }\n\n    pub fn faults(\n        &self,\n    ) -> Faults {\n        todo!()\n    }\n}\n";
    let found = ungated(planted);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("3: pub fn new(hooks: Hooks<R>)"),
        "{found:?}"
    );
    let gated = "impl<R: Rt> Registry<R> {\n    #[cfg(feature = \"faults\")]\n    pub fn with_hooks(hooks: Hooks<R>) -> Arc<Self> {\n        todo!()\n    }\n}\n#[cfg(feature = \"faults\")]\nimpl<R: Rt> Monitor<R> {\n    pub fn odd(f: Faults) {\n    }\n}\npub fn after(w: World) {\n}\n";
    let found = ungated(gated);
    assert_eq!(found, vec!["12: pub fn after(w: World) {".to_string()]);
    // A harness-looking word inside another is not a harness type.
    assert!(ungated("pub fn disk(f: DiskFault) {\n}\n").is_empty());
}
