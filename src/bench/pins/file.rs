//! The pins file, `pins.json` at the root of the checkout: every pinned
//! figure with its value and what it means, one line per pin, sorted by
//! key.
//!
//! ```text
//! {
//!   "about": "…",
//!   "pins": {
//!     "clauses": { "value": 89, "meaning": "clauses of the rules of SPEC §2" },
//!     …
//!   }
//! }
//! ```
//!
//! [`render`] writes exactly that layout (what `bench --pins --write`
//! writes), [`parse`] reads any JSON of that shape and refuses unknown
//! fields.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The pins file of this checkout: `pins.json` next to the crate's
/// `Cargo.toml`, found by the path the crate was compiled from.
pub const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/pins.json");

/// What the file's `about` field says.
pub const ABOUT: &str = "Every deterministic figure the docs and the tests quote. Written by \
     `lifecycle bench --pins --write`, checked by `lifecycle bench --pins`; tests read it through \
     lifecycle_tools::bench::pins::expected (models/tests/pinned.rs by path). Edit with --write, \
     not by hand.";

/// One pinned figure.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The figure.
    pub value: u64,
    /// What it counts, in one line.
    pub meaning: String,
}

/// Every pin, by key (sorted: the file's order).
pub type Pins = BTreeMap<String, Pin>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinsFile {
    #[serde(rename = "about")]
    _about: String,
    pins: Pins,
}

/// The pins of a file's text.
pub fn parse(text: &str) -> Result<Pins, String> {
    serde_json::from_str::<PinsFile>(text)
        .map(|f| f.pins)
        .map_err(|e| e.to_string())
}

/// The pins of the file at `path`; the error says which file and why, in
/// one line.
pub fn read(path: &Path) -> Result<Pins, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read pins file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("pins file {}: {e}", path.display()))
}

/// The file's text for `pins`: one pin per line, in key order.
pub fn render(pins: &Pins) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    let mut out = format!("{{\n  \"about\": {},\n  \"pins\": {{\n", quote(ABOUT));
    let last = pins.len().saturating_sub(1);
    for (i, (key, pin)) in pins.iter().enumerate() {
        out.push_str(&format!(
            "    {}: {{ \"value\": {}, \"meaning\": {} }}{}\n",
            quote(key),
            pin.value,
            quote(&pin.meaning),
            if i == last { "" } else { "," }
        ));
    }
    out.push_str("  }\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_parse_is_the_identity() {
        let mut pins = Pins::new();
        for (k, v) in [("b.x", 2), ("a", 1), ("quote\"d", 3)] {
            pins.insert(
                k.into(),
                Pin {
                    value: v,
                    meaning: format!("the {k} \"figure\""),
                },
            );
        }
        let text = render(&pins);
        assert_eq!(parse(&text), Ok(pins.clone()));
        assert!(text.find("\"a\"") < text.find("\"b.x\""), "{text}");
        assert_eq!(parse(&render(&Pins::new())), Ok(Pins::new()));
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        let bad = [
            r#"{"about": "", "pins": {"a": {"value": 1, "meaning": "", "x": 2}}}"#,
            r#"{"about": "", "pins": {"a": {"value": -1, "meaning": ""}}}"#,
            r#"{"about": "", "pins": {}, "more": 1}"#,
            r#"{"pins": {}}"#,
            "",
        ];
        for text in bad {
            assert!(parse(text).is_err(), "{text}");
        }
    }
}
