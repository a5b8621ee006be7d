//! Pinned state counts and counterexample lengths (stateright paxos style):
//! a change to a model that explores more or less, or finds a longer or
//! shorter counterexample, shows up here.

use lifecycle_models::report::{self, model_of, MODELS};
use lifecycle_models::{Checker, Expectation, Fault};

fn unique(model: &str, fault: Option<Fault>) -> u64 {
    report::check(model, fault).expect("known model").unique
}

#[test]
fn every_property_of_every_clean_model_holds() {
    for m in MODELS {
        let r = report::check(m, None).unwrap();
        assert!(!r.bounded, "{m} hit the depth bound");
        for p in &r.properties {
            assert!(p.holds, "{m}: {}", p.render());
        }
        // Every kind of property is exercised.
        for e in [
            Expectation::Always,
            Expectation::Sometimes,
            Expectation::Eventually,
        ] {
            assert!(
                r.properties.iter().any(|p| p.expectation == e),
                "{m} has no {e:?} property"
            );
        }
    }
}

#[test]
fn unique_state_counts_are_pinned() {
    let got: Vec<(&str, u64)> = MODELS.iter().map(|m| (*m, unique(m, None))).collect();
    assert_eq!(got, PINNED_UNIQUE);
}

#[test]
fn every_fault_has_a_counterexample_of_pinned_length() {
    let mut got = vec![];
    for f in Fault::ALL {
        let r = report::check(model_of(f), Some(f)).unwrap();
        let rules = f.must_violate();
        let best = r
            .properties
            .iter()
            .filter(|p| !p.holds && rules.iter().any(|x| p.name.starts_with(x)))
            .filter_map(|p| p.counterexample.as_ref().map(|c| c.len()))
            .min();
        let len = best.unwrap_or_else(|| panic!("{f} not caught: {:#?}", r.properties));
        got.push((f, len, r.unique));
    }
    assert_eq!(got, PINNED_FAULTS);
}

#[test]
fn a_counterexample_renders_property_path_and_last_state() {
    let r = Checker::default().check(&lifecycle_models::agent::AgentModel::new(Some(Fault::M12)));
    let p = r.first_counterexample().expect("M12 is caught");
    let text = p.render();
    assert!(text.starts_with("property `C7"), "{text}");
    assert!(text.contains("   1. Send"), "{text}");
    assert!(text.contains("last state:"), "{text}");
}

#[test]
fn run_all_is_ok_and_renders() {
    let reports = report::run_all();
    assert_eq!(reports.len(), MODELS.len() + Fault::ALL.len());
    assert!(
        report::all_ok(&reports),
        "{}",
        report::render_table(&reports)
    );
    let table = report::render_table(&reports);
    println!("{table}");
    assert!(table.lines().count() > reports.len(), "{table}");
    let json: serde_json::Value = serde_json::from_str(&report::to_json(&reports)).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(reports.len()));
}

const PINNED_UNIQUE: [(&str, u64); 4] = [
    ("agent", 130702),
    ("dispose", 68616),
    ("shell", 4184),
    ("acp", 22012),
];

const PINNED_FAULTS: [(Fault, usize, u64); 15] = [
    (Fault::M1, 6, 2295),
    (Fault::M2, 4, 5744),
    (Fault::M3, 5, 180410),
    (Fault::M4, 4, 108932),
    (Fault::M5, 6, 122705),
    (Fault::M6, 7, 5527),
    (Fault::M7, 3, 24820),
    (Fault::M8, 3, 25300),
    (Fault::M9, 6, 18740),
    (Fault::M10, 11, 423),
    (Fault::M11, 2, 193921),
    (Fault::M12, 3, 171236),
    (Fault::M20, 2, 4586),
    (Fault::M21, 2, 4628),
    (Fault::M23, 9, 127870),
];
