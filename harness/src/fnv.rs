//! FNV-1a 64 as a `Hasher`: the same value across runs, builds and
//! platforms (unlike std's seeded hashers), over values' derived `Hash` or
//! raw bytes, with no rendering. Contract views, the world journal's slots
//! and replay fingerprints are keyed with it.

use std::hash::Hasher;

/// FNV-1a 64.
pub(crate) struct Fnv(u64);

impl Fnv {
    /// The FNV-1a offset basis.
    pub(crate) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
