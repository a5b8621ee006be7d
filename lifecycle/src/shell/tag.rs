//! Process tags (A10, S7): every command the real shell starts carries an
//! environment variable, [`TAG_VAR`], naming the server instance, the
//! owner (a session) and the job. Every descendant inherits it, whatever
//! it does to its process group or session: a command backgrounded inside
//! a job (`sleep 1000 >/dev/null 2>&1 &`), `nohup`, a `set -m` child in a
//! group of its own, a `setsid` grandchild. A sweep finds them all by
//! reading `/proc/<pid>/environ` (the environment a process was started
//! with) and SIGKILLs each.
//!
//! Where the sweeps run:
//! - a drain of an owner (its session's disposal) sweeps that owner's tag,
//!   after killing its jobs' groups and before awaiting their settlement
//!   (an escaped child holding the job's output pipe no longer delays it);
//! - `kill` of a job sweeps that job's tag;
//! - the shell's shutdown (the server's stdin closed, SIGTERM, SIGINT)
//!   and its drop sweep the shell's tags;
//! - the orphan reaper (`super::reaper`), when the server died however it
//!   died (SIGKILL included), sweeps every tag of the server's process.
//!
//! A tag is `<process>.<shell>/<owner>/<job>`: the process is the
//! server's pid and start time (`/proc/self/stat`, so a later process
//! with a reused pid is another one); the shell counts the executors of
//! the process (tests run several at once); the owner is a 64-bit hash of
//! the session id in hex (an id of any length, with any bytes, makes a
//! short value); the job is `job-N`, or `fg` for a foreground command.
//!
//! States of a sweep: `scanning` (one pass over `/proc`, killing every
//! process whose tag matches) → another pass while the last one killed
//! something (a process that forked during a pass leaves a child with the
//! tag) → `done`, after at most [`SWEEP_PASSES`] passes.
//!
//! Never signalled: process 1, this process, and any pid 0 or below. Not
//! found: a process that replaced its environment at `exec` (`env -i`), or
//! one of another user (its environ cannot be read).

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

/// The environment variable every command carries.
pub const TAG_VAR: &str = "AGENT_LIFECYCLE_TAG";

/// The most passes over `/proc` one sweep makes.
pub const SWEEP_PASSES: usize = 20;

/// This process's instance: `<pid>.<start time in clock ticks>`.
pub fn process() -> &'static str {
    static PROCESS: OnceLock<String> = OnceLock::new();
    PROCESS.get_or_init(|| {
        instance_of(std::process::id()).unwrap_or_else(|| format!("{}.0", std::process::id()))
    })
}

/// The instance of process `pid`, while it lives: `<pid>.<start time>`.
pub fn instance_of(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(format!("{pid}.{}", start_time(&stat)?))
}

/// Field 22 (start time) of a `/proc/<pid>/stat` line, read after the
/// command's closing parenthesis (a command may contain spaces and `)`).
fn start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `tag` belongs to a shell of process instance `process` (as
/// [`process`] or [`instance_of`] name it).
pub fn of_process(tag: &str, process: &str) -> bool {
    tag.strip_prefix(process)
        .is_some_and(|rest| rest.starts_with('.'))
}

/// The tags of one shell executor: `<process>.<n>/<owner>/<job>`, `n`
/// counting the executors of this process (tests run several at once, and
/// one's shutdown must not sweep another's commands).
#[derive(Clone, Debug)]
pub struct Tags {
    shell: String,
}

impl Default for Tags {
    fn default() -> Self {
        static SHELLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SHELLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Tags {
            shell: format!("{}.{n}/", process()),
        }
    }
}

impl Tags {
    /// The prefix of every tag of this shell.
    pub fn shell_prefix(&self) -> &str {
        &self.shell
    }

    /// The prefix of every tag of `owner`'s commands on this shell.
    pub fn owner_prefix(&self, owner: Option<&str>) -> String {
        format!("{}{}/", self.shell, owner_part(owner))
    }

    /// The tag of job `job` (`job-N`, or `fg`) of `owner`.
    pub fn tag(&self, owner: Option<&str>, job: &str) -> String {
        format!("{}{job}", self.owner_prefix(owner))
    }
}

/// The owner part of a tag: a hash of the owner's id, or `-` for none.
fn owner_part(owner: Option<&str>) -> String {
    match owner {
        None => "-".into(),
        Some(o) => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            o.hash(&mut h);
            format!("{:016x}", h.finish())
        }
    }
}

/// The value of [`TAG_VAR`] in an environ block (`NAME=value` entries
/// separated by NUL), if it is there.
fn tag_in(environ: &[u8]) -> Option<&[u8]> {
    let key = TAG_VAR.as_bytes();
    environ
        .split(|b| *b == 0)
        .find_map(|e| e.strip_prefix(key)?.strip_prefix(b"="))
}

/// The pids of the processes whose tag `matches` (never 1 or this one).
pub fn tagged(matches: impl Fn(&str) -> bool) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let mut out: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid > 1 && pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .ok()
                .and_then(|env| tag_in(&env).map(|t| matches(&String::from_utf8_lossy(t))))
                .unwrap_or(false)
        })
        .collect();
    out.sort_unstable();
    out
}

/// SIGKILL every process whose tag `matches`, pass after pass until one
/// finds none (at most [`SWEEP_PASSES`]). The number killed.
pub fn sweep(matches: impl Fn(&str) -> bool) -> usize {
    let mut killed = 0;
    for _ in 0..SWEEP_PASSES {
        let found = tagged(&matches);
        if found.is_empty() {
            break;
        }
        for pid in found {
            // Checked again here, not only in `tagged`: 0 would be this
            // process's group, -1 every process, 1 init.
            if pid <= 1 || pid == std::process::id() as i32 {
                continue;
            }
            // SAFETY: kill only sends a signal, to one process above 1
            // that is not this one.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_after_the_command() {
        let stat = "4242 (a) b) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(start_time(stat), Some(98765));
        assert_eq!(start_time("garbage"), None);
    }

    #[test]
    fn the_tag_is_found_among_the_environment() {
        let env = b"A=1\0AGENT_LIFECYCLE_TAG_X=no\0AGENT_LIFECYCLE_TAG=1.2/ab/job-3\0Z=";
        assert_eq!(tag_in(env), Some(&b"1.2/ab/job-3"[..]));
        assert_eq!(tag_in(b"A=1\0B=2"), None);
    }

    #[test]
    fn tags_nest_by_prefix_and_owners_of_any_length_are_short() {
        let (tags, other) = (Tags::default(), Tags::default());
        let long = "x".repeat(1 << 20);
        let t = tags.tag(Some(&long), "job-7");
        assert!(t.len() < 80, "{t}");
        assert!(t.starts_with(&tags.owner_prefix(Some(&long))));
        assert!(t.starts_with(tags.shell_prefix()));
        assert!(of_process(&t, process()) && of_process(&other.tag(None, "fg"), process()));
        assert!(
            !t.starts_with(other.shell_prefix()),
            "one shell's sweep spares another's"
        );
        assert!(!tags
            .tag(Some("a"), "job-1")
            .starts_with(&tags.owner_prefix(Some("ab"))));
        assert!(!tags
            .tag(Some("ab"), "job-1")
            .starts_with(&tags.owner_prefix(Some("a"))));
        // Process 12 is not process 1 (nor 123).
        assert!(!of_process("12.5.0/-/fg", "1.5") && !of_process("123.5.0/-/fg", "12.5"));
        assert!(of_process("12.5.0/-/fg", "12.5"));
    }

    #[test]
    fn this_process_is_never_tagged_for_a_sweep() {
        // Whatever this test process carries, `tagged` skips it and init.
        let all = tagged(|_| true);
        assert!(!all.contains(&(std::process::id() as i32)));
        assert!(!all.contains(&1));
    }
}
