//! Import circles outside `check`: the command line's files and the
//! simulator's files name each other without a circle, and nothing below
//! the command line imports it.

use super::scan::{first_names, reexports, tokens, Tok};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The modules a file's source names: `super::x`, `crate::cli::x` (or
/// `crate::cli::harness::x`; `crate::x` where `root` is `None`, and
/// `crate::Item` for an item the crate root re-exports from `x`, per
/// `reexported`) and a child's `x::item` for each `x` of `modules`, outside
/// comments and literals.
fn edges(
    src: &str,
    root: Option<&str>,
    modules: &BTreeSet<&str>,
    reexported: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let toks = tokens(src);
    let ident = |i: usize, s: &str| matches!(toks.get(i), Some((Tok::Ident(n), _)) if n == s);
    let path = |i: usize| toks.get(i).is_some_and(|t| t.0 == Tok::Path);
    let name_at = |i: usize| match toks.get(i) {
        Some((Tok::Ident(n), _)) if modules.contains(n.as_str()) => Some(n.clone()),
        _ => None,
    };
    let mut out = BTreeSet::new();
    for i in 0..toks.len() {
        let mut at = if ident(i, "super") && path(i + 1) {
            i + 2
        } else if ident(i, "crate") && path(i + 1) {
            match root {
                Some(r) if ident(i + 2, r) && path(i + 3) => i + 4,
                Some(_) => continue,
                None => {
                    // `crate::touch`: the module the root re-exports it from.
                    if let Some((Tok::Ident(n), _)) = toks.get(i + 2) {
                        if let Some(m) = reexported.get(n) {
                            out.insert(m.clone());
                            continue;
                        }
                    }
                    i + 2
                }
            }
        } else if name_at(i).is_some() && path(i + 1) && (i == 0 || !path(i - 1)) {
            // `check_cmd::run_check`: a child module, by its own name.
            i
        } else {
            continue;
        };
        if root.is_some() && ident(at, "harness") {
            if !path(at + 1) {
                // `pub(in crate::cli::harness)`: a visibility, not an import.
                continue;
            }
            at += 2;
        }
        // `super::{a, b}`: each name in the braces.
        if toks.get(at).is_some_and(|t| t.0 == Tok::Open) {
            out.extend(
                first_names(&toks, at)
                    .into_iter()
                    .filter(|n| modules.contains(n.as_str())),
            );
        } else if let Some(n) = name_at(at) {
            out.insert(n);
        }
    }
    out
}

/// A cycle in `edges` (module → modules it names), as `a -> b -> a`.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut c = stack[at..].to_vec();
            c.push(n.to_string());
            return Some(c.join(" -> "));
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// Every file of folder `top` (relative to the workspace) and of its
/// folders, by module name: a file's stem, a folder's `mod.rs` by the
/// folder's name.
fn sources(top: &str) -> BTreeMap<String, String> {
    fn walk(dir: &Path, top: &str, files: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("a source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, top, files);
                continue;
            }
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if path.extension().is_some_and(|e| e == "rs") {
                let name = match (stem, path.parent()) {
                    ("mod", Some(folder)) if !folder.ends_with(top) => folder
                        .file_name()
                        .map_or(String::new(), |f| f.to_string_lossy().into()),
                    _ => stem.to_string(),
                };
                let text = std::fs::read_to_string(&path).expect("read");
                assert!(
                    files.insert(name.clone(), text).is_none(),
                    "two files of {top} are module {name}"
                );
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(top),
        top,
        &mut files,
    );
    files
}

fn graph(
    files: &BTreeMap<String, String>,
    root: Option<&str>,
) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&str> = files
        .keys()
        .map(String::as_str)
        .filter(|m| !matches!(*m, "mod" | "lib"))
        .collect();
    // A crate's root (`lib.rs`) is no node: what it re-exports is named
    // by the module it comes from.
    let reexported = match (root, files.get("lib")) {
        (None, Some(lib)) => reexports(lib, &modules.iter().map(|m| m.to_string()).collect()),
        _ => BTreeMap::new(),
    };
    files
        .iter()
        .filter(|(name, _)| name.as_str() != "lib")
        .map(|(name, src)| {
            let mut e = edges(src, root, &modules, &reexported);
            e.remove(name);
            (name.clone(), e)
        })
        .collect()
}

/// The circle found after appending `line` to `file` (a planted import):
/// the check of the check, so an empty scan cannot pass for no circle.
fn planted_cycle(
    files: &BTreeMap<String, String>,
    root: Option<&str>,
    file: &str,
    line: &str,
) -> Option<String> {
    let mut planted = files.clone();
    planted
        .get_mut(file)
        .unwrap_or_else(|| panic!("no {file}.rs"))
        .push_str(&format!("\n{line}\n"));
    cycle(&graph(&planted, root))
}

/// The command line's files name each other without a circle (a module
/// declaring another is no edge; naming its items is).
#[test]
fn cli_files_import_each_other_without_a_cycle() {
    let files = sources("src/cli");
    assert!(files.len() >= 6, "{:?}", files.keys());
    let graph = graph(&files, Some("cli"));
    assert_eq!(
        cycle(&graph),
        None,
        "src/cli has an import cycle: {graph:?}"
    );
    // The scan sees the edges there are.
    let has = |a: &str, b: &str| graph.get(a).is_some_and(|e| e.contains(b));
    assert!(
        has("harness", "check_cmd")
            && has("check_cmd", "report")
            && has("merge_cmd", "report")
            && has("report", "conclude")
            && has("merge", "conclude")
            && has("conclude", "table"),
        "{graph:?}"
    );
    // The checker of the check: a table helper naming a command again.
    let found = planted_cycle(
        &files,
        Some("cli"),
        "table",
        "fn f() { super::check_cmd::run_explore; }",
    );
    assert!(
        found.as_deref().is_some_and(|c| c.contains("table")),
        "{found:?}"
    );
}

/// The simulator's files name each other without a circle: its state
/// (`shared.rs`) stands below the context whose scheduling points, spawns
/// and wakes change it, and what tasks report (`access.rs`) above both.
#[test]
fn simulator_files_import_each_other_without_a_cycle() {
    let files = sources("sim/src");
    let graph = graph(&files, None);
    assert_eq!(
        cycle(&graph),
        None,
        "sim/src has an import cycle: {graph:?}"
    );
    let has = |a: &str, b: &str| graph.get(a).is_some_and(|e| e.contains(b));
    assert!(
        has("context", "shared") && has("access", "context") && has("executor", "context"),
        "{graph:?}"
    );
    // A name the crate root re-exports is an edge to its module: the
    // context touching a resource through `crate::touch` closes a circle.
    let found = planted_cycle(&files, None, "context", "fn f() { crate::touch(1); }");
    assert!(
        found.as_deref().is_some_and(|c| c.contains("access")),
        "{found:?}"
    );
    // The state calling a scheduling point again is found.
    let found = planted_cycle(
        &files,
        None,
        "shared",
        "fn f() { crate::context::schedule_point(); }",
    );
    assert!(
        found.as_deref().is_some_and(|c| c.contains("shared")),
        "{found:?}"
    );
}

/// Nothing below the command line imports it: no file of `src` outside
/// `src/cli` (and `main.rs`) names `crate::cli`.
#[test]
fn nothing_below_cli_imports_it() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let names_cli = |text: &str| {
        let toks = tokens(text);
        toks.windows(3).any(|w| {
            matches!(&w[0].0, Tok::Ident(a) if a == "crate")
                && w[1].0 == Tok::Path
                && matches!(&w[2].0, Tok::Ident(c) if c == "cli")
        })
    };
    let upward: Vec<String> = files
        .iter()
        .filter(|p| !p.starts_with(src.join("cli")) && !p.ends_with("main.rs"))
        .filter(|p| names_cli(&std::fs::read_to_string(p).expect("read")))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        upward.is_empty(),
        "files below src/cli import it: {upward:?}"
    );
    assert!(names_cli("fn f() { crate::cli::interrupt::requested(); }"));
    assert!(!names_cli("// crate::cli in a comment\nfn f() {}"));
}
