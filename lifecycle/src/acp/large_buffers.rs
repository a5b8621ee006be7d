//! The allocator's share of the server's memory cap (SPEC A10).
//!
//! glibc's `malloc` serves a large block (at least 128 KiB) with its own
//! `mmap`, and gives it back to the kernel when it is freed. Its default,
//! though, raises that threshold to the size of each such block freed (up
//! to 32 MiB), so after the first 8 MiB request line every later buffer of
//! a large prompt, reply or record comes from the heap, where freed memory
//! stays resident, and the process's peak far exceeds what its live
//! buffers ever take at once. A fixed threshold keeps large buffers mapped
//! per block, returned as soon as they are freed, and lets a growing one
//! move with `mremap` instead of a copy (the soak cases of
//! `tests/acp_soak.rs` measure the peaks; `docs/record.md` records a run).

/// The size from which a buffer has a mapping of its own (glibc's default
/// starting threshold, kept fixed).
pub const LARGE_BUFFER_BYTES: usize = 128 << 10;

/// Fix the allocator's large-buffer threshold at [`LARGE_BUFFER_BYTES`].
/// Call it before the runtime starts its threads. A no-op where the C
/// library is not glibc.
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets a tunable of the allocator; it is
        // called before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES as libc::c_int);
        }
    }
}
