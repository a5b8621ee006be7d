//! `model --json` prints JSON lines, like every other `--json` (issue 16):
//! one object per row of `model`'s table, in the table's order.
//!
//! Both commands check every model (about 20 s each, in debug as in
//! release); the test runs them side by side.

use std::process::{Command, Output, Stdio};

fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_lifecycle"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lifecycle")
}

fn stdout(out: &Output, what: &str) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

#[test]
fn model_json_prints_one_object_per_table_row() {
    let json = spawn(&["model", "--json"]);
    let table = spawn(&["model"]);
    let json = stdout(&json.wait_with_output().unwrap(), "model --json");
    let table = stdout(&table.wait_with_output().unwrap(), "model");

    // The table: a header, one row per model and fault variant, then (only
    // on failure) a blank line and the failing properties.
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.len() > 5, "{table}");

    assert!(json.ends_with('\n') && !json.ends_with("\n\n"), "{json:?}");
    let objects: Vec<serde_json::Value> = json
        .lines()
        .map(|line| {
            assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
        })
        .collect();
    assert_eq!(objects.len(), rows.len(), "{json}\n{table}");

    for (object, row) in objects.iter().zip(&rows) {
        let result = &object["result"];
        // model, states, unique, depth, seconds, result, detail…
        assert_eq!(result["model"].as_str(), Some(row[0]), "{object}");
        assert_eq!(result["states"].to_string(), row[1], "{object}");
        assert_eq!(result["unique"].to_string(), row[2], "{object}");
        assert_eq!(result["max_depth"].to_string(), row[3], "{object}");
        assert_eq!(object["ok"].as_bool(), Some(row[5] == "ok"), "{object}");
        assert!(result["properties"].is_array(), "{object}");
        for field in ["fault", "must_violate", "caught_by"] {
            assert!(object.get(field).is_some(), "no `{field}` in {object}");
        }
        // A fault variant's row is `<model>+<fault>`.
        match object["fault"].as_str() {
            Some(fault) => assert!(row[0].ends_with(&format!("+{fault}")), "{object}"),
            None => assert!(!row[0].contains('+'), "{object}"),
        }
    }
}
