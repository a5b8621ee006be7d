//! Quiet panics: the panics the scenarios and the checkers raise on
//! purpose are caught and reported, so the default hook does not print
//! them ([`quiet_panics`]); [`STOP`] is the checkers' own.
//!
//! Layer 0 (shared): imports nothing from `check`.

/// The panic that stops the exploration at a violation (loom).
pub const STOP: &str = "lifecycle: stop exploring";

/// Whether a model checker's own panic message reports a deadlock (loom
/// and shuttle say so in words: the one place their wording is read).
pub fn is_deadlock(message: &str) -> bool {
    message.contains("deadlock")
}

/// Panics that are part of the scenarios (the panicking observer of C9) or
/// of the checkers' control flow (stopping loom at a violation) are caught,
/// contained and reported, so the default hook's output for them would only
/// be noise; every other panic still goes to the previous hook. Shuttle's
/// own hook is installed only around shuttle's runs
/// (`explore::shuttle::with_shuttle_hook`).
pub fn quiet_panics() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = crate::bus::panic_message(info.payload());
            if crate::scenarios::EXPECTED_PANICS.contains(&message.as_str()) || message == STOP {
                tracing::debug!(target: crate::trace::Target::PANIC, "{info}");
            } else {
                previous(info);
            }
        }));
    });
}
