//! The orphan reaper (A10: "if the server itself is killed, its children
//! die with it").
//!
//! A process killed with SIGKILL runs no code, so the server cannot kill
//! its commands' process groups itself. When `lifecycle acp` starts, it
//! spawns a reaper (`lifecycle reaper`, hidden), in a process group of its
//! own, whose stdin is a pipe from the server. Every command's process
//! group is listed with it: the command itself writes `+<pgid>` between
//! `fork` and `exec` (so the group never runs unlisted), and the server
//! writes `-<pgid>` once its leader is reaped. When the pipe closes (the server exited or
//! was killed, whatever the signal), the reaper SIGKILLs every group still
//! listed and exits. Linux `PR_SET_PDEATHSIG` would reach only the direct
//! child, not the commands a `bash -c` started.
//!
//! States of the reaper: `listening` (a set of live groups) → stdin closed
//! → `killing` (each listed group, once) → exited.
//!
//! Then it sweeps every process tagged by the server's shells
//! ([`super::tag`]), which finds the descendants that left their group.
//!
//! Limit: a group reaped in the instant between the server's `waitpid` and
//! its `-<pgid>` line, whose id is then reused before the server dies,
//! would be signalled; the window is one pipe write.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The server's end: the pipe to its reaper.
struct Link {
    stdin: Mutex<ChildStdin>,
    _child: Child,
}

static LINK: OnceLock<Link> = OnceLock::new();

/// Spawn the reaper for this process (once; later calls are no-ops):
/// `exe reaper`, in its own process group. Without it (tests, the
/// harness), groups are still killed on every orderly path.
pub fn install(exe: &std::path::Path) -> std::io::Result<()> {
    if LINK.get().is_some() {
        return Ok(());
    }
    let mut child = Command::new(exe)
        .arg("reaper")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("reaper has no stdin"))?;
    let _ = LINK.set(Link {
        stdin: Mutex::new(stdin),
        _child: child,
    });
    Ok(())
}

fn tell(line: String) {
    if let Some(link) = LINK.get() {
        let mut stdin = link.stdin.lock().unwrap_or_else(|p| p.into_inner());
        // A reaper that died cannot be helped; the orderly paths still kill.
        let _ = stdin.write_all(line.as_bytes());
    }
}

/// List the command's process group with the reaper from inside the
/// child, after `fork` and before `exec` (so no instant exists in which
/// the group runs unlisted): the child writes `+<its pid>` to the pipe.
/// Without a reaper this does nothing.
pub fn list_from_child(cmd: &mut tokio::process::Command) {
    use std::os::fd::AsRawFd;
    let Some(link) = LINK.get() else { return };
    let fd = link
        .stdin
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_raw_fd();
    // SAFETY: the hook runs between fork and exec and calls only
    // async-signal-safe functions (getpid, write) on a stack buffer.
    unsafe {
        cmd.pre_exec(move || {
            let line = pgid_line(libc::getpid() as u32);
            libc::write(fd, line.0.as_ptr().cast(), line.1);
            Ok(())
        });
    }
}

/// `+<pid>\n` in a stack buffer (no allocation after `fork`).
fn pgid_line(mut pid: u32) -> ([u8; 16], usize) {
    let mut digits = [0u8; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (pid % 10) as u8;
        n += 1;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    let mut line = [0u8; 16];
    line[0] = b'+';
    for i in 0..n {
        line[1 + i] = digits[n - 1 - i];
    }
    line[1 + n] = b'\n';
    (line, n + 2)
}

/// A command's group leader was reaped: its id may be reused.
pub fn reaped(pgid: u32) {
    tell(format!("-{pgid}\n"));
}

/// The reaper itself: read `+pgid` / `-pgid` lines until stdin closes,
/// then SIGKILL every group still listed, and every process carrying a tag
/// of the server's process ([`super::tag`]: a descendant that left its
/// group or outlived its command). The server is this process's parent,
/// named as it was at the start (its pid may be reused once it is gone).
/// Returns the groups it signalled.
pub fn run(input: impl BufRead) -> Vec<u32> {
    let server = super::tag::instance_of(std::os::unix::process::parent_id());
    let live = listed(input);
    for &pgid in &live {
        // Group 1 is init's and group 0 is the caller's own: `listed`
        // never returns them, and they are never signalled.
        if pgid > 1 {
            // SAFETY: killpg only sends a signal to the listed group.
            unsafe {
                libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
    if let Some(server) = server {
        super::tag::sweep(|t| super::tag::of_process(t, &server));
    }
    live
}

/// The groups still listed when `input` ends, in order: each `+pgid`
/// (above 1) not followed by its `-pgid`. Pure: it signals nothing, so a
/// test (or a mutant of it) cannot kill a real group.
pub fn listed(input: impl BufRead) -> Vec<u32> {
    let mut live = BTreeSet::new();
    for line in input.split(b'\n') {
        let Ok(line) = line else { break };
        let text = String::from_utf8_lossy(&line);
        let (sign, rest) = text.split_at(text.len().min(1));
        match (sign, rest.trim().parse::<u32>()) {
            ("+", Ok(pgid)) if pgid > 1 => {
                live.insert(pgid);
            }
            ("-", Ok(pgid)) => {
                live.remove(&pgid);
            }
            _ => {}
        }
    }
    live.into_iter().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_child_side_line_is_plain_decimal() {
        for pid in [0u32, 7, 10, 4_194_304, u32::MAX] {
            let (buf, len) = super::pgid_line(pid);
            assert_eq!(&buf[..len], format!("+{pid}\n").as_bytes());
        }
    }

    #[test]
    fn lists_only_groups_not_yet_reaped() {
        // Group ids above Linux's largest pid_max (2^22) name no group.
        // `listed`, not `run`: a mutant that let `+1` through must fail
        // this test, not SIGKILL init's process group (it did, twice).
        let input = b"+9000001\n+9000002\n-9000001\nbogus\n+1\n+0\n+\n-x\n+9000003";
        assert_eq!(super::listed(&input[..]), vec![9000002, 9000003]);
    }
}
