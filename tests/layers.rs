//! The layers of `harness/src/check` (see its module doc): every file imports only
//! from its own layer or those below, the files of one layer import each
//! other without a cycle, and every file has a layer in [`LAYERS`].
//!
//! The check reads the sources: every path into `check` a file names, in a
//! `use` or in an expression (`super::x`, `super::{x, y}`,
//! `crate::check::x`), outside comments and literals, is resolved to the
//! file it comes from: `x` is a module (its file) or an item `mod.rs`
//! re-exports (the file it re-exports it from).

#[path = "layers/circles.rs"]
mod circles;
#[path = "layers/scan.rs"]
mod scan;

use scan::{first_names, reexports, tokens, Tok};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every file of `harness/src/check` and its layer (`mod.rs`, the module list and
/// its re-exports, is above them all).
const LAYERS: &[(&str, u8, &str)] = &[
    // 0: shared types and helpers, importing nothing above.
    ("checker", 0, "shared"),
    ("budget", 0, "shared"),
    ("report", 0, "shared"),
    ("tally", 0, "shared"),
    ("goals", 0, "shared"),
    ("view", 0, "shared"),
    ("tasks", 0, "shared"),
    ("panics", 0, "shared"),
    ("journal_tap", 0, "shared"),
    ("swimlane", 0, "shared"),
    ("html", 0, "shared"),
    // 1: the replay line format.
    ("replay_line", 1, "line format"),
    // 2: simulator runs.
    ("sim_run", 2, "sim runs"),
    ("shrink", 2, "sim runs"),
    ("classes", 2, "sim runs"),
    ("growth", 2, "sim runs"),
    // 3: the explorers, one file per backend in `explore/` (folded into
    // `explore`'s sources here).
    ("explore", 3, "explorers"),
    // 4: the dispatchers over them.
    ("dispatch", 4, "dispatch"),
    ("replay", 4, "dispatch"),
    ("api", 4, "dispatch"),
];

/// What a path into `check` names first: a name (module or re-exported
/// item), `self` (the `check` module itself) or `*` (all of `mod.rs`).
#[derive(Debug)]
struct Import {
    name: String,
    line: usize,
    /// The path as written, for the message.
    text: String,
}

/// Every path into `check` that the file with source `src` names. Inside
/// an inline `mod m { … }` (a test module), `super::` is the file itself
/// and `super::super::` is `check`.
fn imports(src: &str) -> Vec<Import> {
    let toks = tokens(src);
    let ident = |i: usize, s: &str| matches!(toks.get(i), Some((Tok::Ident(n), _)) if n == s);
    let is = |i: usize, t: Tok| toks.get(i).is_some_and(|x| x.0 == t);
    // The braces open, each marked when it opens an inline module.
    let mut braces: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (t, line) = (&toks[i].0, toks[i].1);
        match t {
            Tok::Open => {
                let inline_mod = i >= 2 && ident(i - 2, "mod");
                braces.push(inline_mod);
                i += 1;
                continue;
            }
            Tok::Close => {
                braces.pop();
                i += 1;
                continue;
            }
            _ => {}
        }
        let after_path = i > 0 && is(i - 1, Tok::Path);
        let mods = braces.iter().filter(|m| **m).count();
        // `crate::check::…`, or `super::` repeated one more time than the
        // inline modules around it.
        let crate_check = ident(i, "crate") && is(i + 1, Tok::Path) && ident(i + 2, "check");
        let found = if after_path {
            None
        } else if crate_check && is(i + 3, Tok::Path) {
            Some((i + 4, first_names(&toks, i + 4)))
        } else if crate_check {
            // `use crate::check;`: the module itself.
            Some((i + 3, vec!["self".to_string()]))
        } else if ident(i, "super") {
            let (mut j, mut supers) = (i, 0);
            while ident(j, "super") && is(j + 1, Tok::Path) {
                supers += 1;
                j += 2;
            }
            (supers == mods + 1).then(|| (j, first_names(&toks, j)))
        } else {
            None
        };
        let Some((prefix_end, names)) = found else {
            i += 1;
            continue;
        };
        let prefix: String = toks[i..prefix_end.min(toks.len())]
            .iter()
            .map(|(t, _)| match t {
                Tok::Ident(n) => n.as_str(),
                _ => "::",
            })
            .collect();
        for name in names {
            out.push(Import {
                text: format!("{prefix}{name}"),
                name,
                line,
            });
        }
        i = prefix_end.max(i + 1);
    }
    out
}

/// The layering's violations in `files` (name without `.rs` → source),
/// one line each.
fn violations(files: &BTreeMap<String, String>) -> Vec<String> {
    let layer: BTreeMap<&str, (u8, &str)> = LAYERS.iter().map(|(f, l, n)| (*f, (*l, *n))).collect();
    let mut errors = Vec::new();
    for name in files.keys().filter(|f| *f != "mod") {
        if !layer.contains_key(name.as_str()) {
            errors.push(format!(
                "harness/src/check/{name}.rs has no layer: add it to LAYERS in tests/layers.rs (and to the diagram in harness/src/check/mod.rs)"
            ));
        }
    }
    for (name, _, _) in LAYERS {
        if !files.contains_key(*name) {
            errors.push(format!(
                "LAYERS in tests/layers.rs names harness/src/check/{name}.rs, which does not exist"
            ));
        }
    }
    let modules: BTreeSet<String> = files.keys().filter(|f| *f != "mod").cloned().collect();
    let from = reexports(files.get("mod").map_or("", |s| s.as_str()), &modules);
    // Same-layer imports, for the cycle check.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, src) in files.iter().filter(|(f, _)| *f != "mod") {
        let Some(&(mine, my_layer)) = layer.get(name.as_str()) else {
            continue;
        };
        for imp in imports(src) {
            let at = format!("harness/src/check/{name}.rs:{}: `{}`", imp.line, imp.text);
            let target = match imp.name.as_str() {
                "self" | "*" => {
                    errors.push(format!(
                        "{at} imports all of `check` (mod.rs): name the file the item comes from"
                    ));
                    continue;
                }
                n if modules.contains(n) => n.to_string(),
                n => match from.get(n) {
                    Some(m) => m.clone(),
                    None => {
                        errors.push(format!(
                            "{at}: `{n}` is neither a file of harness/src/check nor re-exported by mod.rs"
                        ));
                        continue;
                    }
                },
            };
            if target == *name {
                continue;
            }
            let Some(&(theirs, their_layer)) = layer.get(target.as_str()) else {
                continue;
            };
            if theirs > mine {
                errors.push(format!(
                    "{at} imports from {target}.rs (layer {theirs}, {their_layer}), above {name}.rs (layer {mine}, {my_layer})"
                ));
            } else if theirs == mine {
                edges.entry(name.clone()).or_default().insert(target);
            }
        }
    }
    // A cycle among the files of one layer.
    fn visit<'a>(
        f: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(k) = path.iter().position(|p| *p == f) {
            let mut cycle: Vec<&str> = path[k..].to_vec();
            cycle.push(f);
            cycles.push(
                cycle
                    .iter()
                    .map(|c| format!("{c}.rs"))
                    .collect::<Vec<_>>()
                    .join(" -> "),
            );
            return;
        }
        if !done.insert(f) {
            return;
        }
        path.push(f);
        for next in edges.get(f).into_iter().flatten() {
            visit(next, edges, path, done, cycles);
        }
        path.pop();
    }
    let (mut done, mut cycles) = (BTreeSet::new(), Vec::new());
    for f in edges.keys() {
        visit(f, &edges, &mut Vec::new(), &mut done, &mut cycles);
    }
    for c in cycles {
        errors.push(format!(
            "an import cycle within one layer of harness/src/check: {c}"
        ));
    }
    errors
}

/// The sources of `check/x/` (the submodules of `check/x.rs`), folded
/// into `x`'s: their `super::super::` is `check`'s `super::`, and their
/// `super::` is `x` itself, so it is renamed out of the analysis.
fn submodule_sources(dir: &Path) -> String {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("submodule dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    paths.sort();
    let mut out = String::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("read");
        let text = text
            .replace("super::super::", "\u{1}")
            .replace("super::", "parent_module::")
            .replace('\u{1}', "super::");
        out.push('\n');
        out.push_str(&text);
    }
    out
}

fn check_sources() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/src/check");
    let mut files = BTreeMap::new();
    let mut subdirs = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("harness/src/check") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        match name.strip_suffix(".rs") {
            Some(stem) if path.is_file() => {
                files.insert(
                    stem.to_string(),
                    std::fs::read_to_string(&path).expect("read"),
                );
            }
            // `check/x/` beside `check/x.rs`: x's submodules, at x's layer.
            _ if path.is_dir() && dir.join(format!("{name}.rs")).is_file() => {
                subdirs.push((name, path));
            }
            // Any other directory (`check/x/mod.rs`) is a file without a
            // layer.
            _ => {
                files.insert(name, String::new());
            }
        }
    }
    for (name, path) in subdirs {
        let folded = submodule_sources(&path);
        files.get_mut(&name).expect("x.rs").push_str(&folded);
    }
    files
}

#[test]
fn check_files_import_only_from_their_layer_or_below() {
    let errors = violations(&check_sources());
    assert!(
        errors.is_empty(),
        "harness/src/check breaks its layering (see the diagram in harness/src/check/mod.rs):\n  {}",
        errors.join("\n  ")
    );
}

/// The checker of the check: each kind of violation is found, with the file
/// and the import named.
#[test]
fn a_reintroduced_cycle_is_found() {
    let base = check_sources();
    let known = violations(&base);
    // The violations `extra`, added to `file`, brings.
    let with = |file: &str, extra: &str| {
        let mut files = base.clone();
        files.get_mut(file).expect(file).push_str(extra);
        let mut found = violations(&files);
        found.retain(|e| !known.contains(e));
        found
    };
    // The line format dispatching to a checker again.
    let e = with("replay_line", "\nuse super::explore;\n");
    assert!(
        e.iter().any(|e| e.contains("replay_line.rs")
            && e.contains("`super::explore`")
            && e.contains("layer 3")),
        "{e:?}"
    );
    // Through a re-export of mod.rs, in an expression, by the crate path.
    let e = with("tally", "\nfn f() { let _ = super::run; }\n");
    assert!(
        e.iter()
            .any(|e| e.contains("tally.rs") && e.contains("dispatch.rs")),
        "{e:?}"
    );
    let e = with(
        "report",
        "\nfn f() { crate::check::explore::sim::run_plan; }\n",
    );
    assert!(
        e.iter()
            .any(|e| e.contains("report.rs") && e.contains("explore.rs")),
        "{e:?}"
    );
    let e = with("view", "\nuse super::{goals, replay::ReplayLine};\n");
    assert!(
        e.iter()
            .any(|e| e.contains("view.rs") && e.contains("replay.rs")),
        "{e:?}"
    );
    // Same layer, in a cycle: the simulator helper calling its checker.
    let e = with("sim_run", "\nuse super::shrink::shrink;\n");
    assert!(
        e.iter()
            .any(|e| e.contains("cycle") && e.contains("shrink.rs")),
        "{e:?}"
    );
    // A test module's `super` is its own file; `super::super` is `check`.
    assert!(with("goals", "\nmod t { use super::*; }\n").is_empty());
    let e = with("goals", "\nmod t { use super::super::api; }\n");
    assert!(
        e.iter()
            .any(|e| e.contains("goals.rs") && e.contains("api.rs")),
        "{e:?}"
    );
    // Comments and strings do not count; a glob of mod.rs does.
    assert!(with(
        "goals",
        "\n// use super::api;\nconst S: &str = \"super::api\";\n"
    )
    .is_empty());
    let e = with("goals", "\nuse super::*;\n");
    assert!(e.iter().any(|e| e.contains("all of `check`")), "{e:?}");
    // A file without a layer.
    let mut files = base;
    files.insert("extra".into(), String::new());
    let e = violations(&files);
    assert!(
        e.iter().any(|e| e.contains("extra.rs has no layer")),
        "{e:?}"
    );
}
