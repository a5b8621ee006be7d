//! The reference's table of the ACP server's limits (SPEC A10), each read
//! from its constant, so the page cannot drift from the code.

use crate::acp::framing::{MAX_CONTAINERS, MAX_DEPTH, MAX_LINE};
use crate::acp::outbound::OUTBOUND_BUDGET_BYTES;
use crate::acp::server::{
    AGENT_JOURNAL_CAP, DISCONNECT_GRACE_MS, MAX_SESSIONS, MEMORY_CAP_BYTES, NOTICE_TAIL_BYTES,
};
use crate::agent::core::LATE_NOTICES_CAP;
use crate::shell::real::{
    DRAIN_SETTLE_MS, FINISHED_JOBS_CAP, FINISHED_OUTPUT_CAP_BYTES, OUTPUT_CAP_BYTES,
};
use crate::store::durable::MAX_RECORD_BYTES;
use std::fmt::Write as _;

/// `n` bytes in the largest binary unit that divides it.
fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// Write the table.
pub(super) fn render(w: &mut String) {
    let rows: [(&str, String, &str); 15] = [
        ("MEMORY_CAP_BYTES", bytes(MEMORY_CAP_BYTES), "the most memory (VmHWM) the server reaches for any input tests/acp_soak.rs sends: floods of blocks, sessions and jobs, damaged and non-regular logs, a client that stops reading, a 400 MB log"),
        ("MAX_LINE", bytes(MAX_LINE), "a request line; a longer one is discarded as it streams (-32600)"),
        ("MAX_DEPTH", MAX_DEPTH.to_string(), "nesting of a request line (-32600)"),
        ("MAX_CONTAINERS", MAX_CONTAINERS.to_string(), "arrays and objects in a request line, refused before any parse (-32600)"),
        ("MAX_SESSIONS", MAX_SESSIONS.to_string(), "sessions one connection holds, admitted requests counted (-32602 past it, until session/close)"),
        ("MAX_RECORD_BYTES", bytes(MAX_RECORD_BYTES), "a session log's record line; a longer line is damage read as a stream"),
        ("OUTPUT_CAP_BYTES", bytes(OUTPUT_CAP_BYTES), "output one job keeps (its tail)"),
        ("FINISHED_OUTPUT_CAP_BYTES", bytes(FINISHED_OUTPUT_CAP_BYTES), "output the finished jobs of one session keep in all"),
        ("FINISHED_JOBS_CAP", FINISHED_JOBS_CAP.to_string(), "finished job records one session keeps (the oldest forgotten first)"),
        ("NOTICE_TAIL_BYTES", bytes(NOTICE_TAIL_BYTES), "output a job's completion notice carries"),
        ("LATE_NOTICES_CAP", LATE_NOTICES_CAP.to_string(), "completion notices one session delivered while its log could not store them, kept until it can (A11; the oldest dropped first)"),
        ("OUTBOUND_BUDGET_BYTES", bytes(OUTBOUND_BUDGET_BYTES), "session/update bytes queued for stdout before steps, notices, replays and reading wait"),
        ("AGENT_JOURNAL_CAP", AGENT_JOURNAL_CAP.to_string(), "transitions each session's agent journal keeps"),
        ("DISCONNECT_GRACE_MS", format!("{DISCONNECT_GRACE_MS} ms"), "teardown after stdin closes, before every command is killed"),
        ("DRAIN_SETTLE_MS", format!("{DRAIN_SETTLE_MS} ms"), "a drain's wait for its killed jobs to settle"),
    ];
    let _ = writeln!(w, "\n## Server limits (SPEC A10)\n");
    let _ = writeln!(
        w,
        "`lifecycle acp`'s caps, read from the constants that enforce them.\n"
    );
    let _ = writeln!(w, "| constant | value | what it bounds |");
    let _ = writeln!(w, "| --- | ---: | --- |");
    for (name, value, what) in rows {
        let _ = writeln!(w, "| `{name}` | {value} | {what} |");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(super::bytes(16 << 20), "16 MiB");
        assert_eq!(super::bytes(4096), "4 KiB");
        assert_eq!(super::bytes(1000), "1000 B");
    }
}
