//! [`Run`]: which run a bench's figures come from (commit, date,
//! processors, command), recorded when `bench` starts and named by the
//! sections of `docs/record.md` that `lifecycle docs` renders from it.

use serde::{Deserialize, Serialize};
use std::process::Command;

/// Which run a bench's figures come from; `bench` records it when it
/// starts.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Run {
    /// `git rev-parse --short HEAD` in the checkout the binary was built
    /// from (`unknown` outside a git checkout).
    pub commit: String,
    /// Whether tracked files differed from that commit
    /// (`git status --porcelain --untracked-files=no`).
    pub dirty: bool,
    /// The bench's start, UTC, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// What `nproc` printed (the processors this process may use).
    pub nproc: usize,
    /// The command's arguments after the program name.
    pub command: String,
}

impl Run {
    /// This process's run, started at `start`. It runs `git` and `nproc`
    /// as child processes, so a bench calls it after measuring its
    /// children's memory.
    pub fn started_at(start: std::time::SystemTime) -> Run {
        let root = env!("CARGO_MANIFEST_DIR");
        let git = |args: &[&str]| -> Option<String> {
            let out = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(args)
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let commit = git(&["rev-parse", "--short", "HEAD"])
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "unknown".to_string());
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let nproc = Command::new("nproc")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get()));
        let seconds = start
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let command = std::env::args()
            .skip(1)
            .map(|a| {
                if a.is_empty() || a.contains(char::is_whitespace) {
                    format!("'{a}'")
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        Run {
            commit,
            dirty,
            date: utc(seconds),
            nproc,
            command,
        }
    }
}

impl Run {
    /// `at commit `C`[ with uncommitted changes to tracked files], started
    /// D, `nproc` N`: how a record's section names its run.
    pub fn named(&self) -> String {
        format!(
            "at commit `{}`{}, started {}, `nproc` {}",
            self.commit,
            if self.dirty {
                " with uncommitted changes to tracked files"
            } else {
                ""
            },
            self.date,
            self.nproc
        )
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM UTC`.
pub(crate) fn utc(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let minutes = (seconds % 86_400) / 60;
    // Days to the civil date (proleptic Gregorian), after H. Hinnant.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(19_723 * 86_400 + 3_600 + 120), "2024-01-01 01:02 UTC");
        assert_eq!(utc(19_782 * 86_400), "2024-02-29 00:00 UTC");
    }
}
