//! `bench --pins`: every deterministic figure the docs and the tests
//! quote, in one checked-in file (`pins.json`), measured by one command.
//!
//! - [`file`](mod@file): the file's format (one line per pin: key, value, meaning);
//! - [`figures`]: what is pinned and how each figure is measured;
//! - here: the comparison (`key | pinned | measured | ok`), the command
//!   (`bench --pins [--json] [--write] [--pins-file F]`) and [`expected`],
//!   through which tests read a pinned value, so that a number lives in
//!   exactly one place.
//!
//! Exit codes of the command: 0 every pin equals its measurement (or the
//! file was rewritten with `--write`), 1 a difference (one line per
//! differing key), 2 bad input (an unreadable pins file, an unwritable
//! path).

pub mod figures;
pub mod file;

pub use file::{Pin, Pins, FILE};

use lifecycle_models::ModelId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

/// The value pinned under `key` in this checkout's pins file ([`FILE`]),
/// read once per process.
///
/// # Panics
/// If the file cannot be read or parsed, or has no such key: a test that
/// reads a pin fails with the reason.
pub fn expected(key: &str) -> u64 {
    static PINS: OnceLock<Result<Pins, String>> = OnceLock::new();
    match PINS.get_or_init(|| file::read(Path::new(FILE))) {
        Ok(pins) => match pins.get(key) {
            Some(pin) => pin.value,
            None => panic!(
                "no pin `{key}` in {FILE}; `lifecycle bench --pins --write` writes every measured key"
            ),
        },
        Err(e) => panic!("{e}"),
    }
}

/// One key compared: its pinned and its measured value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The key.
    pub key: String,
    /// What the file pins (`None`: the key is not in the file).
    pub pinned: Option<u64>,
    /// What was measured (`None`: the key is no longer measured).
    pub measured: Option<u64>,
    /// Whether the file says the same as the measurement, value and meaning.
    pub ok: bool,
    /// What the figure counts (the measured meaning, else the pinned one).
    pub meaning: String,
    /// Why it is not ok, in one line that names the key (`None` if ok).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
}

/// Every key of `pinned` and `measured`, in key order, compared.
pub fn compare(pinned: &Pins, measured: &Pins) -> Vec<Row> {
    let keys: std::collections::BTreeSet<&String> = pinned.keys().chain(measured.keys()).collect();
    keys.into_iter()
        .map(|key| {
            let (p, m) = (pinned.get(key), measured.get(key));
            let difference = match (p, m) {
                (Some(p), Some(m)) if p.value != m.value => {
                    Some(format!("{key}: pinned {}, measured {}", p.value, m.value))
                }
                (Some(p), Some(m)) if p.meaning != m.meaning => Some(format!(
                    "{key}: pinned meaning {:?}, measured {:?}",
                    p.meaning, m.meaning
                )),
                (Some(_), Some(_)) => None,
                (None, Some(m)) => Some(format!("{key}: not pinned, measured {}", m.value)),
                (Some(p), None) => Some(format!("{key}: pinned {}, no longer measured", p.value)),
                (None, None) => unreachable!("a key of one of the two"),
            };
            Row {
                key: key.clone(),
                pinned: p.map(|p| p.value),
                measured: m.map(|m| m.value),
                ok: difference.is_none(),
                meaning: m.or(p).map(|x| x.meaning.clone()).unwrap_or_default(),
                difference,
            }
        })
        .collect()
}

/// The table: `key | pinned | measured | ok`, then one line per
/// difference and a summary.
pub fn table(rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.key.len()).max().unwrap_or(3).max(3);
    let cell = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut out = format!(
        "{:width$} | {:>9} | {:>9} | ok\n",
        "key", "pinned", "measured"
    );
    out.push_str(&format!(
        "{}-|-{:-<9}-|-{:-<9}-|---\n",
        "-".repeat(width),
        "",
        ""
    ));
    for r in rows {
        out.push_str(&format!(
            "{:width$} | {:>9} | {:>9} | {}\n",
            r.key,
            cell(r.pinned),
            cell(r.measured),
            if r.ok { "ok" } else { "DIFF" }
        ));
    }
    let diffs: Vec<&String> = rows.iter().filter_map(|r| r.difference.as_ref()).collect();
    for d in &diffs {
        out.push_str(&format!("differs: {d}\n"));
    }
    out.push_str(&format!(
        "{} pins, {} differ{}\n",
        rows.len(),
        diffs.len(),
        if diffs.is_empty() {
            ""
        } else {
            "; `lifecycle bench --pins --write` rewrites the file from this measurement"
        }
    ));
    out
}

/// JSON lines: one `{"kind":"pin",…}` per row, then
/// `{"kind":"end","pins":N,"differences":D,"ok":bool}`.
pub fn json_lines(rows: &[Row]) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        kind: &'static str,
        #[serde(flatten)]
        row: &'a Row,
    }
    let mut out = String::new();
    for row in rows {
        let line = serde_json::to_string(&Line { kind: "pin", row }).expect("a row serializes");
        out.push_str(&line);
        out.push('\n');
    }
    let differences = rows.iter().filter(|r| !r.ok).count();
    out.push_str(
        &serde_json::json!({
            "kind": "end",
            "pins": rows.len(),
            "differences": differences,
            "ok": differences == 0,
        })
        .to_string(),
    );
    out.push('\n');
    out
}

/// `bench --pins`: measure every pin and compare it with the file at
/// `path`; with `write`, rewrite the file from the measurement instead of
/// failing on a difference. The table (or, with `json`, JSON lines) goes
/// to stdout, progress and the time taken to stderr.
pub fn run(
    path: &Path,
    write: bool,
    json: bool,
    from_check: Option<&Path>,
    from_models: Option<&Path>,
) -> ExitCode {
    // Checked before the minute of measuring. A missing or broken file is
    // what --write repairs.
    let pinned = if write {
        if let Err(e) = super::writable(path) {
            return refuse(&e);
        }
        file::read(path).unwrap_or_default()
    } else {
        match file::read(path) {
            Ok(pins) => pins,
            Err(e) => return refuse(&e),
        }
    };
    let sim_dfs = match from_check.map(sim_dfs_rows).transpose() {
        Ok(given) => given.unwrap_or_default(),
        Err(e) => return refuse(&e),
    };
    let models = match from_models.map(model_rows).transpose() {
        Ok(given) => given.unwrap_or_default(),
        Err(e) => return refuse(&e),
    };
    let given = figures::Given { sim_dfs, models };
    let start = Instant::now();
    let measured = figures::measure(&figures::jobs_given(&given), &|job| {
        eprintln!("pins: {job}")
    });
    let rows = compare(&pinned, &measured);
    if json {
        print!("{}", json_lines(&rows));
    } else {
        print!("{}", table(&rows));
    }
    eprintln!(
        "pins: {} measured in {:.0} s",
        measured.len(),
        start.elapsed().as_secs_f64()
    );
    if write {
        if let Err(e) = std::fs::write(path, file::render(&measured)) {
            return refuse(&format!("cannot write {}: {e}", path.display()));
        }
        eprintln!("pins: wrote {} ({} pins)", path.display(), measured.len());
        return ExitCode::SUCCESS;
    }
    if rows.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The rows of a whole `lifecycle model --json` run, by model: every
/// model and fault variant it checked.
fn model_rows(path: &Path) -> Result<BTreeMap<ModelId, Vec<figures::ModelRow>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut rows: BTreeMap<ModelId, Vec<figures::ModelRow>> = BTreeMap::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (model, row) = figures::ModelRow::parse(line)
            .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        rows.entry(model).or_default().push(row);
    }
    if rows.is_empty() {
        return Err(format!(
            "{}: no row of `lifecycle model --json`",
            path.display()
        ));
    }
    Ok(rows)
}

/// The `sim-dfs` rows of a whole `check --tier pr --json` run (or of
/// `merge --json` of its shards): each scenario's schedules and views.
fn sim_dfs_rows(path: &Path) -> Result<BTreeMap<String, [u64; 2]>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut rows = BTreeMap::new();
    let mut end = None;
    for (n, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not a JSON line: {e}", path.display(), n + 1))?;
        match v["kind"].as_str() {
            Some("row") if v["checker"] == "sim-dfs" && v["fault"].is_null() => {
                let field = |k: &str| {
                    v[k].as_u64()
                        .ok_or_else(|| format!("{}:{}: no {k}", path.display(), n + 1))
                };
                let scenario = v["scenario"].as_str().unwrap_or_default().to_string();
                rows.insert(
                    scenario,
                    [field("executions")?, field("distinct_outcomes")?],
                );
            }
            Some("end") => end = Some(v),
            _ => {}
        }
    }
    let end =
        end.ok_or_else(|| format!("{}: no end line: not a whole check run", path.display()))?;
    let settings = &end["settings"];
    let pr = crate::check::Budget::PR;
    let whole_pr = end["shard"] == "1/1"
        && settings["tier"] == "pr"
        && settings["dfs_preemptions"].is_null()
        && settings["dfs_bound_extra"] == 0
        && settings["dfs_executions"] == pr.dfs_executions
        && settings["fingerprint"] == crate::check::replay::BUILD_FINGERPRINT;
    if !whole_pr {
        return Err(format!(
            "{}: not a whole `check --tier pr` run of this build with its own sim-dfs budget",
            path.display()
        ));
    }
    Ok(rows)
}

fn refuse(e: &str) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pins(entries: &[(&str, u64, &str)]) -> Pins {
        entries
            .iter()
            .map(|(k, v, m)| {
                (
                    k.to_string(),
                    Pin {
                        value: *v,
                        meaning: m.to_string(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn every_kind_of_difference_names_its_key() {
        let pinned = pins(&[("a", 1, "x"), ("b", 2, "y"), ("c", 3, "z"), ("d", 4, "w")]);
        let measured = pins(&[("a", 1, "x"), ("b", 5, "y"), ("c", 3, "z2"), ("e", 6, "v")]);
        let rows = compare(&pinned, &measured);
        let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e"]);
        let diffs: Vec<&str> = rows
            .iter()
            .filter_map(|r| r.difference.as_deref())
            .collect();
        assert_eq!(
            diffs,
            [
                "b: pinned 2, measured 5",
                "c: pinned meaning \"z\", measured \"z2\"",
                "d: pinned 4, no longer measured",
                "e: not pinned, measured 6",
            ]
        );
        let text = table(&rows);
        assert!(
            text.contains("\nb   |         2 |         5 | DIFF\n"),
            "{text}"
        );
        assert!(text.ends_with("5 pins, 4 differ; `lifecycle bench --pins --write` rewrites the file from this measurement\n"), "{text}");
        let json = json_lines(&rows);
        let last: serde_json::Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
        assert_eq!(last["differences"], 4);
        let d: serde_json::Value = serde_json::from_str(json.lines().nth(3).unwrap()).unwrap();
        assert_eq!(
            (d["kind"].as_str(), d["pinned"].as_u64()),
            (Some("pin"), Some(4))
        );
        assert!(d["measured"].is_null());
    }

    #[test]
    fn equal_pins_are_ok() {
        let p = pins(&[("a", 1, "x")]);
        let rows = compare(&p, &p);
        assert!(rows.iter().all(|r| r.ok && r.difference.is_none()));
        assert!(table(&rows).ends_with("1 pins, 0 differ\n"));
    }
}
