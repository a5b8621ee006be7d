//! The source scan the layer checks share: Rust tokens without comments
//! and literals, the first names of a path or group, and the items a
//! module re-exports.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Path, // `::`
    Open, // `{`
    Close,
    Comma,
    Star,
    Other(char),
}

/// The tokens of Rust source `src`, without comments, string, char and
/// byte literals (so that `super::x` in a doc comment or a message does
/// not count), with the line of each.
pub(crate) fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let s: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= s.len() {
                    break;
                } else {
                    line += usize::from(s[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            i += if c == '"' { 1 } else { 2 };
            while i < s.len() && s[i] != '"' {
                line += usize::from(s[i] == '\n');
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(c == 'b')), '#' | '"')
            && !at(i.wrapping_sub(1)).is_alphanumeric()
        {
            // A raw string: r"…", r#"…"#, br"…".
            i += 1 + usize::from(c == 'b');
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            if at(i) != '"' {
                continue;
            }
            i += 1;
            loop {
                if i >= s.len() {
                    break;
                }
                if s[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(s[i] == '\n');
                i += 1;
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(s[start..i].iter().collect()), line));
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    '*' => Tok::Star,
                    c => Tok::Other(c),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// The first names of the group or path at `toks[i..]` (after `check::`):
/// `x`, `x::y`, `{x, y::z, self}`, `*`.
pub(crate) fn first_names(toks: &[(Tok, usize)], mut i: usize) -> Vec<String> {
    match toks.get(i).map(|t| &t.0) {
        Some(Tok::Ident(n)) => vec![n.clone()],
        Some(Tok::Star) => vec!["*".into()],
        Some(Tok::Open) => {
            let mut names = Vec::new();
            let (mut depth, mut expect) = (0, true);
            i += 1;
            while let Some((t, _)) = toks.get(i) {
                match t {
                    Tok::Open => depth += 1,
                    Tok::Close if depth == 0 => return names,
                    Tok::Close => depth -= 1,
                    Tok::Comma if depth == 0 => expect = true,
                    Tok::Ident(n) if expect && depth == 0 => {
                        names.push(n.clone());
                        expect = false;
                    }
                    Tok::Star if expect && depth == 0 => {
                        names.push("*".into());
                        expect = false;
                    }
                    _ => {}
                }
                i += 1;
            }
            names
        }
        _ => Vec::new(),
    }
}

/// The file each item `mod.rs` re-exports comes from: `pub use x::{A, B};`
/// maps `A` and `B` to `x`.
pub(crate) fn reexports(mod_rs: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let toks = tokens(mod_rs);
    let mut map = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        let is_use = matches!(&toks[i].0, Tok::Ident(n) if n == "use");
        let module = match toks.get(i + 1) {
            Some((Tok::Ident(m), _)) if is_use && modules.contains(m) => m.clone(),
            _ => {
                i += 1;
                continue;
            }
        };
        // The last name of each leaf (`x::{A, b::C as D}` gives A and D).
        let mut j = i + 2;
        let mut last: Option<String> = None;
        while let Some((t, _)) = toks.get(j) {
            match t {
                Tok::Ident(n) if n != "as" => last = Some(n.clone()),
                Tok::Comma | Tok::Close | Tok::Other(';') => {
                    if let Some(n) = last.take() {
                        map.insert(n, module.clone());
                    }
                    if t == &Tok::Other(';') {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        i = j;
    }
    map
}
