//! Computes the scheduling fingerprint of this build. Replay lines and
//! checkpoints carry it, so `replay` can tell that a line was recorded by a
//! build that may schedule differently.
//!
//! It hashes (FNV-1a) an explicit list of the sources that decide a
//! schedule, [`SCHEDULING`]: the simulator, the executor facade and the
//! lifecycle code of the production crate (every lock section is a
//! scheduling point), the checkers' backends, the execution context, the
//! faults, the world journal and the scenarios (a new scenario file is covered without an edit here). Comment lines and indentation are left out, so
//! documentation edits keep every line valid. Not listed, because they only
//! read what ran: the oracles (`oracle.rs`, `oracle_world.rs`) and the
//! checkers (`src/check/`) of this crate, and the tools crate (the command
//! line, the benchmark). Paths are relative to this crate's directory.

use std::fs;
use std::path::{Path, PathBuf};

/// Files, or directories taken whole, that affect scheduling.
const SCHEDULING: &[&str] = &[
    "../sim/src",
    "../lifecycle/src/rt",
    "../lifecycle/src/agent",
    "../lifecycle/src/acp",
    "../lifecycle/src/shell",
    "../lifecycle/src/store",
    "../lifecycle/src/bus.rs",
    "../lifecycle/src/journal.rs",
    "../lifecycle/src/provider.rs",
    "../lifecycle/src/registry.rs",
    "../lifecycle/src/scope.rs",
    "../lifecycle/src/session_log.rs",
    "../lifecycle/src/tool_bash.rs",
    "src/backends",
    "src/context.rs",
    "src/faults.rs",
    "src/world.rs",
    "src/scenarios",
];

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() || p.extension().is_some_and(|e| e == "rs") {
            collect(&p, out);
        }
    }
}

fn main() {
    let mut files = Vec::new();
    for s in SCHEDULING {
        collect(Path::new(s), &mut files);
        println!("cargo:rerun-if-changed={s}");
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_default();
        let code = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .flat_map(|l| l.bytes().chain([b'\n']));
        for b in file.to_string_lossy().bytes().chain(code) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=LIFECYCLE_SCHED_FINGERPRINT={h:016x}");
}
