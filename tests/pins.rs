//! The pins file (`pins.json`) is not stale: it parses,
//! it is exactly what `lifecycle bench --pins --write` writes for the keys
//! that command measures, every key a test reads is in it, and its cheap
//! pins (registries, the clause table, task counts, the smallest searches)
//! equal a fresh measurement. `lifecycle bench --pins` measures all of
//! them (about a minute in a release build).

use lifecycle_tools::bench::pins::{self, figures, file, Pins};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Searches of at most this many pinned schedules are measured here.
const CHEAP_SCHEDULES: u64 = 10_000;

fn pinned() -> Pins {
    file::read(Path::new(pins::FILE)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_file_holds_exactly_the_measured_keys_and_meanings() {
    let pinned = pinned();
    let figures: Vec<figures::Figure> = figures::jobs()
        .into_iter()
        .flat_map(|j| j.figures)
        .collect();
    let keys: BTreeSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys.len(), figures.len(), "a key is measured twice");
    assert_eq!(
        figures::keys(),
        keys.iter().map(|k| k.to_string()).collect::<Vec<_>>()
    );
    let in_file: BTreeSet<&str> = pinned.keys().map(String::as_str).collect();
    let missing: Vec<&&str> = keys.difference(&in_file).collect();
    let unknown: Vec<&&str> = in_file.difference(&keys).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "{}: not pinned {missing:?}, no longer measured {unknown:?}; \
         run `lifecycle bench --pins --write`",
        pins::FILE
    );
    for f in &figures {
        assert_eq!(pinned[&f.key].meaning, f.meaning, "{}'s meaning", f.key);
    }
    let text = std::fs::read_to_string(pins::FILE).unwrap();
    assert_eq!(
        text,
        file::render(&pinned),
        "{} is not laid out as --write writes it",
        pins::FILE
    );
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out
}

/// The keys of every call of `expected` with a literal key in the
/// tests. (Keys a test formats, as `models/tests/pinned.rs` does from the
/// model and fault names, are generated as `figures` generates them, and
/// such a test fails on a missing key itself.)
#[test]
fn every_key_a_test_reads_is_pinned() {
    let pinned = pinned();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let call = ["expected", "(\""].concat();
    let mut used = vec![];
    for path in sources(&root.join("tests")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices(&call) {
            let rest = &text[at + call.len()..];
            let key = &rest[..rest.find('"').expect("a closing quote")];
            used.push((path.display().to_string(), key.to_string()));
        }
    }
    assert!(
        used.iter()
            .any(|(_, k)| k == "dpor.dispose-mid-turn.schedules"),
        "the scan finds tests/exploration.rs' keys: {used:?}"
    );
    for (path, key) in &used {
        assert!(
            pinned.contains_key(key),
            "{path} reads `{key}`, not in {}",
            pins::FILE
        );
    }
}

#[test]
fn the_cheap_pins_equal_a_fresh_measurement() {
    let pinned = pinned();
    let small = |key: &str| pinned.get(key).is_some_and(|p| p.value <= CHEAP_SCHEDULES);
    let cheap: Vec<figures::Job> = figures::jobs()
        .into_iter()
        .filter(|j| {
            let first = &j.figures[0].key;
            let search = first.starts_with("sim-dfs.") || first.starts_with("dpor.");
            let models = first.starts_with("model");
            !models && (!search || small(first))
        })
        .collect();
    let searches = cheap
        .iter()
        .filter(|j| j.name.starts_with("sim-dfs") || j.name.starts_with("dpor"))
        .count();
    assert!(searches >= 4, "only {searches} cheap searches");
    let measured = figures::measure(&cheap, &|_| {});
    let differences: Vec<String> = pins::compare(&pinned, &measured)
        .into_iter()
        .filter(|r| r.measured.is_some())
        .filter_map(|r| r.difference)
        .collect();
    assert!(
        differences.is_empty(),
        "stale pins ({} of {} measured); `lifecycle bench --pins --write` rewrites {}:\n{}",
        differences.len(),
        measured.len(),
        pins::FILE,
        differences.join("\n")
    );
}
