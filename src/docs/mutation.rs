//! The record's mutation section, from the cargo-mutants outcome record
//! (`.cargo/mutants-record.txt`) and the explanations of missed mutants
//! (`.cargo/mutants-equivalent.md`), read as `.ci/mutants-score` reads
//! them: `read_record` ([`parse_record`]), `equivalents` ([`equivalents`])
//! and `unpositioned` ([`unpositioned`]). The record is what
//! `.ci/mutants-score --record` wrote, after it set aside the mutants that
//! `exclude_re` of `.cargo/mutants.toml` excludes; this section takes the
//! record as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The outcomes, in `.ci/mutants-score`'s order.
const OUTCOMES: [&str; 4] = ["caught", "missed", "timeout", "unviable"];

/// The heading of `.cargo/mutants-equivalent.md` after which the missed
/// mutants listed are gaps, not equivalents.
const GAPS_HEADING: &str = "## Missed, not equivalent, not killed yet";

/// The header line by which `.ci/mutants-sample --record` marks a record
/// as a sample: `# population: N` names how many mutants it was drawn from.
const POPULATION: &str = "# population: ";

/// A parsed outcome record.
pub struct Record {
    /// Its `#` lines, in order.
    pub header: Vec<String>,
    /// For a sampled record, the number of mutants it was drawn from
    /// (its `# population: N` line); `None` for a whole run.
    pub population: Option<usize>,
    /// Outcome by mutant name; a mutant listed twice keeps its last.
    pub outcomes: BTreeMap<String, &'static str>,
}

/// The record in `text` (read from `path`): blank and `#` lines aside,
/// one `outcome<TAB>mutant` per line; anything else is an error naming the
/// line.
pub fn parse_record(text: &str, path: &Path) -> Result<Record, String> {
    let mut record = Record {
        header: Vec::new(),
        population: None,
        outcomes: BTreeMap::new(),
    };
    for (n, line) in text.lines().enumerate() {
        if let Some(count) = line.strip_prefix(POPULATION) {
            let count = count.trim().parse().map_err(|_| {
                format!(
                    "{}:{}: `{POPULATION}` needs a count: {line:?}",
                    path.display(),
                    n + 1
                )
            })?;
            record.population = Some(count);
        }
        if line.starts_with('#') {
            record.header.push(line.to_string());
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let (outcome, name) = line.split_once('\t').unwrap_or((line, ""));
        match OUTCOMES.iter().find(|o| **o == outcome) {
            Some(o) if !name.is_empty() => {
                record.outcomes.insert(name.to_string(), o);
            }
            _ => {
                return Err(format!(
                    "{}:{}: not `outcome<TAB>mutant`: {line:?}",
                    path.display(),
                    n + 1
                ))
            }
        }
    }
    Ok(record)
}

/// A mutant's name without its line and column:
/// `src/x.rs:12:9: replace …` becomes `src/x.rs: replace …`.
pub fn unpositioned(name: &str) -> String {
    let strip = || -> Option<String> {
        let (file, rest) = name.split_once(':')?;
        let digits = |s: &str| -> Option<usize> {
            let n = s.bytes().take_while(u8::is_ascii_digit).count();
            (n > 0 && s[n..].starts_with(':')).then_some(n + 1)
        };
        let after_line = &rest[digits(rest)?..];
        let after_column = &after_line[digits(after_line)?..];
        (!file.is_empty()).then(|| format!("{file}:{after_column}"))
    };
    strip().unwrap_or_else(|| name.to_string())
}

/// The mutants explained in the text of `.cargo/mutants-equivalent.md`:
/// (equivalent, gaps), the first column of each table row, before and after
/// the gaps heading. A `|` in a cell is written `\|`.
pub fn equivalents(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (head, gaps) = text.split_once(GAPS_HEADING).unwrap_or((text, ""));
    (first_cells(head), first_cells(gaps))
}

/// Every line's first cell that is one code span: `| `name` |`.
fn first_cells(text: &str) -> BTreeSet<String> {
    text.lines().filter_map(first_cell).collect()
}

fn first_cell(line: &str) -> Option<String> {
    let rest = line.strip_prefix('|')?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let mut name = String::new();
    let mut chars = rest.char_indices();
    let end = loop {
        match chars.next()? {
            (_, '\\') => {
                name.push('\\');
                name.push(chars.next()?.1);
            }
            (i, '`') => break i,
            (_, c) => name.push(c),
        }
    };
    if name.is_empty() || !rest[end + 1..].trim_start().starts_with('|') {
        return None;
    }
    Some(name.replace("\\|", "|"))
}

/// A table cell: `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `num / den = p%`, one decimal.
fn ratio(num: usize, den: usize) -> String {
    let pct = if den == 0 {
        0.0
    } else {
        100.0 * num as f64 / den as f64
    };
    format!("{num} / {den} = {pct:.1}%")
}

/// The Wilson score interval of `k` successes in `n` trials at 95%
/// (z = 1.96), in percent: `.ci/mutants-sample`'s interval.
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 100.0);
    }
    let (z, n, p) = (1.96_f64, n as f64, k as f64 / n as f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    (
        100.0 * (centre - half).max(0.0),
        100.0 * (centre + half).min(1.0),
    )
}

/// The mutation section.
pub fn render(record: &Record, explained: &(BTreeSet<String>, BTreeSet<String>)) -> String {
    let (known, gaps) = explained;
    let count = |o: &str| record.outcomes.values().filter(|v| **v == o).count();
    let (caught, missed, timeout) = (count("caught"), count("missed"), count("timeout"));
    let named = |o: &str| -> Vec<&str> {
        record
            .outcomes
            .iter()
            .filter(|(_, v)| **v == o)
            .map(|(n, _)| n.as_str())
            .collect()
    };
    let verdict = |name: &str| {
        let bare = unpositioned(name);
        if known.contains(&bare) {
            "equivalent"
        } else if gaps.contains(&bare) {
            "gap"
        } else {
            "UNEXPLAINED"
        }
    };
    let missed_names = named("missed");
    let equivalent = missed_names
        .iter()
        .filter(|n| verdict(n) == "equivalent")
        .count();
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "## Mutation testing\n");
    let _ = writeln!(
        w,
        "The outcomes of cargo-mutants over the lifecycle code, from `.cargo/mutants-record.txt` (written by `.ci/mutants-score --record` for a whole run, by `.ci/mutants-sample --record` for a sample), with each missed mutant marked as `.cargo/mutants-equivalent.md` explains it: `equivalent` (no behaviour depends on it), `gap` (a behaviour no test observes yet; counted as missed) or `UNEXPLAINED`. How the record is made: [`guide.md`](guide.md#mutation-testing). The record's header:\n"
    );
    let _ = writeln!(w, "```text");
    for line in &record.header {
        let _ = writeln!(w, "{line}");
    }
    let _ = writeln!(w, "```\n");
    if let Some(population) = record.population {
        let _ = writeln!(
            w,
            "A sample: {} of the {population} mutants listed when it ran, drawn at random (stratified by source file, as its header says), so the score below estimates the score of every mutant, with its Wilson 95% interval.\n",
            record.outcomes.len()
        );
    }
    let _ = writeln!(w, "| outcome | mutants |");
    let _ = writeln!(w, "| --- | ---: |");
    for o in OUTCOMES {
        let _ = writeln!(w, "| {o} | {} |", count(o));
    }
    let _ = writeln!(w, "| all | {} |\n", record.outcomes.len());
    let _ = writeln!(w, "| score | value |");
    let _ = writeln!(w, "| --- | ---: |");
    let _ = writeln!(
        w,
        "| caught / (caught + missed) | {} |",
        ratio(caught, caught + missed)
    );
    if record.population.is_some() {
        let (lo, hi) = wilson(caught, caught + missed);
        let _ = writeln!(w, "| its Wilson 95% interval | {lo:.1}% to {hi:.1}% |");
    }
    let _ = writeln!(
        w,
        "| timeouts counted as caught | {} |",
        ratio(caught + timeout, caught + missed + timeout)
    );
    let _ = writeln!(
        w,
        "| equivalent mutants set aside | {} |",
        ratio(caught, caught + missed - equivalent)
    );
    let _ = writeln!(w, "\n### Missed mutants\n");
    if missed_names.is_empty() {
        let _ = writeln!(w, "None.");
    } else {
        let _ = writeln!(w, "| mutant | explained as |");
        let _ = writeln!(w, "| --- | --- |");
        for name in &missed_names {
            let _ = writeln!(w, "| `{}` | {} |", cell(name), verdict(name));
        }
    }
    let _ = writeln!(w, "\n### Timeouts\n");
    let timeouts = named("timeout");
    if timeouts.is_empty() {
        let _ = writeln!(w, "None.");
    } else {
        let _ = writeln!(w, "The tests hung on these; they count apart.\n");
        for name in timeouts {
            let _ = writeln!(w, "- `{name}`");
        }
    }
    let _ = writeln!(w);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_their_position_only() {
        assert_eq!(
            unpositioned("src/x.rs:12:9: replace a with b"),
            "src/x.rs: replace a with b"
        );
        assert_eq!(unpositioned("src/x.rs: replace a"), "src/x.rs: replace a");
        assert_eq!(unpositioned("src/x.rs:12: replace"), "src/x.rs:12: replace");
        assert_eq!(unpositioned(":1:2: x"), ":1:2: x");
    }

    #[test]
    fn the_first_cell_is_read_as_mutants_score_reads_it() {
        let text = "| mutant | why |\n| --- | --- |\n| `src/a.rs: replace \\|\\| with && in f` | r |\n|`src/b.rs: x`| r |\nnot | `a` |\n| `` | empty |\n## Missed, not equivalent, not killed yet\n| `src/c.rs: y` | gap |\n";
        let (known, gaps) = equivalents(text);
        assert_eq!(
            known.into_iter().collect::<Vec<_>>(),
            ["src/a.rs: replace || with && in f", "src/b.rs: x"]
        );
        assert_eq!(gaps.into_iter().collect::<Vec<_>>(), ["src/c.rs: y"]);
    }

    #[test]
    fn a_later_line_wins_and_a_bad_line_is_named() {
        let path = Path::new("r.txt");
        let r = parse_record("# h\n\ncaught\tm\nmissed\tm\n", path).expect("a record");
        assert_eq!(r.header, ["# h"]);
        assert_eq!(r.outcomes.get("m"), Some(&"missed"));
        let e = parse_record("caught\tm\nkilled\tn\n", path)
            .err()
            .expect("an error");
        assert!(e.starts_with("r.txt:2: "), "{e}");
        assert!(parse_record("caught\t\n", path).is_err());
    }

    #[test]
    fn a_sampled_record_names_its_population_and_gets_an_interval() {
        let path = Path::new("r.txt");
        let r = parse_record("# population: 1281\ncaught\tm\nmissed\tn\n", path).expect("a record");
        assert_eq!(r.population, Some(1281));
        assert_eq!(r.header, ["# population: 1281"]);
        let text = render(&r, &(BTreeSet::new(), BTreeSet::new()));
        assert!(text.contains("2 of the 1281 mutants"), "{text}");
        assert!(
            text.contains("| its Wilson 95% interval | 9.5% to 90.5% |"),
            "{text}"
        );
        assert!(parse_record("# population: many\n", path).is_err());
        let whole = parse_record("caught\tm\n", path).expect("a record");
        assert!(!render(&whole, &(BTreeSet::new(), BTreeSet::new())).contains("Wilson"));
    }

    #[test]
    fn the_wilson_interval_matches_the_published_values() {
        let (lo, hi) = wilson(150, 155);
        assert!(
            (lo - 92.67).abs() < 0.01 && (hi - 98.61).abs() < 0.01,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 100.0));
        let (lo, hi) = wilson(10, 10);
        assert!(hi == 100.0 && (lo - 72.25).abs() < 0.01, "{lo}");
    }
}
