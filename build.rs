//! Computes the scheduling fingerprint of this build: an FNV-1a hash of every
//! source file whose changes can change a schedule (the simulator, the
//! executor facade, the lifecycle code and the scenarios; not the checkers
//! or the command line). Replay lines carry it, so `replay` can tell that a
//! line was recorded by another build.

use std::fs;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.ends_with("check") {
                continue;
            }
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "cli.rs" && name != "main.rs" && !path.starts_with("src/bench") {
                out.push(path);
            }
        }
    }
}

fn main() {
    let mut files = Vec::new();
    collect(Path::new("src"), &mut files);
    collect(Path::new("sim/src"), &mut files);
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let text = fs::read(file).unwrap_or_default();
        for b in file.to_string_lossy().bytes().chain(text) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=LIFECYCLE_SCHED_FINGERPRINT={h:016x}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=sim/src");
}
