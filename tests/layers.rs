//! The layers of `harness/src/check` (see its module doc): every file imports only
//! from its own layer or those below, the files of one layer import each
//! other without a cycle, and every file has a layer in [`LAYERS`].
//!
//! The check reads the sources: every path into `check` a file names, in a
//! `use` or in an expression (`super::x`, `super::{x, y}`,
//! `crate::check::x`), outside comments and literals, is resolved to the
//! file it comes from: `x` is a module (its file) or an item `mod.rs`
//! re-exports (the file it re-exports it from).

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

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Open, // `{`
    Close,
    Comma,
    Star,
    Other(char),
}

/// The tokens of Rust source `src`, without comments, string, char and
/// byte literals (so that `super::x` in a doc comment or a message does
/// not count), with the line of each.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let s: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= s.len() {
                    break;
                } else {
                    line += usize::from(s[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            i += if c == '"' { 1 } else { 2 };
            while i < s.len() && s[i] != '"' {
                line += usize::from(s[i] == '\n');
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(c == 'b')), '#' | '"')
            && !at(i.wrapping_sub(1)).is_alphanumeric()
        {
            // A raw string: r"…", r#"…"#, br"…".
            i += 1 + usize::from(c == 'b');
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            if at(i) != '"' {
                continue;
            }
            i += 1;
            loop {
                if i >= s.len() {
                    break;
                }
                if s[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(s[i] == '\n');
                i += 1;
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(s[start..i].iter().collect()), line));
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    '*' => Tok::Star,
                    c => Tok::Other(c),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// What a path into `check` names first: a name (module or re-exported
/// item), `self` (the `check` module itself) or `*` (all of `mod.rs`).
#[derive(Debug)]
struct Import {
    name: String,
    line: usize,
    /// The path as written, for the message.
    text: String,
}

/// The first names of the group or path at `toks[i..]` (after `check::`):
/// `x`, `x::y`, `{x, y::z, self}`, `*`.
fn first_names(toks: &[(Tok, usize)], mut i: usize) -> Vec<String> {
    match toks.get(i).map(|t| &t.0) {
        Some(Tok::Ident(n)) => vec![n.clone()],
        Some(Tok::Star) => vec!["*".into()],
        Some(Tok::Open) => {
            let mut names = Vec::new();
            let (mut depth, mut expect) = (0, true);
            i += 1;
            while let Some((t, _)) = toks.get(i) {
                match t {
                    Tok::Open => depth += 1,
                    Tok::Close if depth == 0 => return names,
                    Tok::Close => depth -= 1,
                    Tok::Comma if depth == 0 => expect = true,
                    Tok::Ident(n) if expect && depth == 0 => {
                        names.push(n.clone());
                        expect = false;
                    }
                    Tok::Star if expect && depth == 0 => {
                        names.push("*".into());
                        expect = false;
                    }
                    _ => {}
                }
                i += 1;
            }
            names
        }
        _ => Vec::new(),
    }
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

/// The file each item `mod.rs` re-exports comes from: `pub use x::{A, B};`
/// maps `A` and `B` to `x`.
fn reexports(mod_rs: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let toks = tokens(mod_rs);
    let mut map = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        let is_use = matches!(&toks[i].0, Tok::Ident(n) if n == "use");
        let module = match toks.get(i + 1) {
            Some((Tok::Ident(m), _)) if is_use && modules.contains(m) => m.clone(),
            _ => {
                i += 1;
                continue;
            }
        };
        // The last name of each leaf (`x::{A, b::C as D}` gives A and D).
        let mut j = i + 2;
        let mut last: Option<String> = None;
        while let Some((t, _)) = toks.get(j) {
            match t {
                Tok::Ident(n) if n != "as" => last = Some(n.clone()),
                Tok::Comma | Tok::Close | Tok::Other(';') => {
                    if let Some(n) = last.take() {
                        map.insert(n, module.clone());
                    }
                    if t == &Tok::Other(';') {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        i = j;
    }
    map
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

/// The modules a file's source names: `super::x`, `crate::cli::x` (or
/// `crate::cli::harness::x`; `crate::x` where `root` is `None`) and a
/// child's `x::item` for each `x` of `modules`, outside comments and
/// literals.
fn edges(src: &str, root: Option<&str>, modules: &BTreeSet<&str>) -> BTreeSet<String> {
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
                None => i + 2,
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
    files
        .iter()
        .map(|(name, src)| {
            let mut e = edges(src, root, &modules);
            e.remove(name);
            (name.clone(), e)
        })
        .collect()
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
    let mut planted = files.clone();
    planted
        .get_mut("table")
        .expect("table.rs")
        .push_str("\nfn f() { super::check_cmd::run_explore; }\n");
    let found = cycle(&self::graph(&planted, Some("cli")));
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
    // The state calling a scheduling point again is found.
    let mut planted = files.clone();
    planted
        .get_mut("shared")
        .expect("shared.rs")
        .push_str("\nfn f() { crate::context::schedule_point(); }\n");
    let found = cycle(&self::graph(&planted, None));
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
