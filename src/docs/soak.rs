//! The record's server-memory section (SPEC A10), rendered from the lines
//! that `tests/acp_soak.rs` appends to the file `LIFECYCLE_SOAK_OUT` names:
//! one per case, with the run it belongs to, the input and the server's
//! peak (VmHWM). Every case's test fails past `MEMORY_CAP_BYTES`; this
//! section says by how much each stayed under it in one named run.

use super::perf::Run;
use crate::acp::server::MEMORY_CAP_BYTES;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The line that opens the record's server-memory section; what follows
/// it is kept, or rendered from a soak run by `docs --soak FILE`.
pub const SOAK_MARKER: &str = "<!-- soak: written by `lifecycle docs --soak FILE`, kept as it is by `lifecycle docs`, not compared by `lifecycle docs --check` -->";

/// The environment variable that makes `tests/acp_soak.rs` write its lines.
pub const SOAK_OUT_ENV: &str = "LIFECYCLE_SOAK_OUT";

/// One case of a soak run, as one JSON line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SoakLine {
    /// The run (its command is the test binary's, and is not printed).
    pub run: Run,
    /// The input, in words.
    pub case: String,
    /// The server's VmHWM, KiB.
    pub peak_kib: u64,
}

/// The section when no soak run has been rendered yet.
pub fn none_yet() -> String {
    format!("## Server memory (SPEC A10)\n\nNo soak run is recorded here yet. `{SOAK_OUT_ENV}=FILE cargo test --test acp_soak`, then `lifecycle docs --soak FILE`, writes this section.\n")
}

/// The section from the lines of one soak run (`text`, read from `path`).
pub fn render(text: &str, path: &Path) -> Result<String, String> {
    let mut lines = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed: SoakLine = serde_json::from_str(line).map_err(|e| {
            format!(
                "{}:{}: not a line of `tests/acp_soak.rs`: {e}",
                path.display(),
                i + 1
            )
        })?;
        lines.push(parsed);
    }
    let Some(first) = lines.first() else {
        return Err(format!("{}: no soak case in it", path.display()));
    };
    if let Some(other) = lines.iter().find(|l| l.run.commit != first.run.commit) {
        return Err(format!(
            "{}: cases of more than one commit ({} and {}): write one run to a fresh file",
            path.display(),
            first.run.commit,
            other.run.commit
        ));
    }
    // The run: its first case's start, dirty if any case saw changes.
    let run = Run {
        date: lines
            .iter()
            .map(|l| l.run.date.clone())
            .min()
            .unwrap_or_default(),
        dirty: lines.iter().any(|l| l.run.dirty),
        ..first.run.clone()
    };
    lines.sort_by(|a, b| a.case.cmp(&b.case));
    let cap_kib = (MEMORY_CAP_BYTES / 1024) as u64;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "## Server memory (SPEC A10)\n");
    let _ = writeln!(
        w,
        "Every figure below comes from one run of `{SOAK_OUT_ENV}=FILE cargo test --test acp_soak` {}: the peak resident memory (VmHWM) of `lifecycle acp` as that test builds it (cargo's test profile) for each input. Each case's test fails past `MEMORY_CAP_BYTES`, {} MiB ([`reference.md`](reference.md)). Memory differs a little from run to run; `docs --check` does not compare it.\n",
        run.named(),
        cap_kib / 1024
    );
    let _ = writeln!(w, "| input | peak VmHWM (MiB) | of the cap |");
    let _ = writeln!(w, "| --- | ---: | ---: |");
    for l in &lines {
        let _ = writeln!(
            w,
            "| {} | {:.1} | {:.0}% |",
            l.case.replace('|', "\\|"),
            l.peak_kib as f64 / 1024.0,
            100.0 * l.peak_kib as f64 / cap_kib as f64
        );
    }
    Ok(s)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Two cases of one run, as the soak writes them.
    pub(crate) fn sample() -> String {
        let run = Run {
            commit: "abc1234".into(),
            dirty: false,
            date: "1970-01-01 00:00 UTC".into(),
            nproc: 2,
            command: "--nocapture".into(),
        };
        [("b flood", 17_000), ("a prompt", 44_000)]
            .into_iter()
            .map(|(case, peak_kib)| {
                let line = SoakLine {
                    run: run.clone(),
                    case: case.into(),
                    peak_kib,
                };
                serde_json::to_string(&line).expect("a line") + "\n"
            })
            .collect()
    }

    #[test]
    fn a_soak_run_is_a_table_in_case_order_naming_its_run() {
        let s = render(&sample(), Path::new("soak.jsonl")).expect("renders");
        assert!(
            s.contains("commit `abc1234`, started 1970-01-01 00:00 UTC"),
            "{s}"
        );
        let a = s.find("| a prompt | 43.0 |").expect("a row");
        let b = s.find("| b flood | 16.6 |").expect("a row");
        assert!(a < b, "{s}");
    }

    #[test]
    fn lines_of_two_runs_or_none_are_refused() {
        let path = Path::new("soak.jsonl");
        assert!(render("", path).is_err());
        assert!(render("{}\n", path).is_err());
        let two = sample() + &sample().replace("abc1234", "def5678");
        assert!(render(&two, path)
            .unwrap_err()
            .contains("more than one commit"));
    }
}
