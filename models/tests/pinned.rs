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
    let json = report::to_json(&reports);
    assert_eq!(json.lines().count(), reports.len(), "{json}");
    for line in json.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect(line);
        assert!(row.is_object(), "{line}");
    }
}

#[test]
fn every_new_property_is_falsified_by_its_fault() {
    // Each model and variant is checked once.
    let mut checked: Vec<(&str, Option<Fault>, lifecycle_models::CheckResult)> = vec![];
    let mut property = |model: &'static str, fault: Option<Fault>, prefix: &str| {
        if !checked.iter().any(|c| (c.0, c.1) == (model, fault)) {
            checked.push((model, fault, report::check(model, fault).unwrap()));
        }
        let at = checked.iter().position(|c| (c.0, c.1) == (model, fault));
        let r = &checked[at.unwrap()].2;
        let mut named = r.properties.iter().filter(|p| p.name.starts_with(prefix));
        let p = named
            .next()
            .unwrap_or_else(|| panic!("no property `{prefix}`"));
        assert!(named.next().is_none(), "`{prefix}` names two properties");
        p.clone()
    };
    for (f, prefix) in FALSIFIED_BY {
        let clean = property(model_of(f), None, prefix);
        assert!(clean.holds, "`{prefix}` fails without a fault");
        let p = property(model_of(f), Some(f), prefix);
        assert!(
            !p.holds && p.counterexample.is_some(),
            "{f} does not falsify `{prefix}`"
        );
    }
}

const PINNED_UNIQUE: [(&str, u64); 5] = [
    ("agent", 143566),
    ("dispose", 92966),
    ("durability", 783),
    ("shell", 4184),
    ("acp", 22012),
];

const PINNED_FAULTS: [(Fault, usize, u64); 20] = [
    (Fault::M1, 6, 2778),
    (Fault::M2, 4, 5744),
    (Fault::M3, 5, 199181),
    (Fault::M4, 4, 119306),
    (Fault::M5, 6, 134339),
    (Fault::M6, 7, 7167),
    (Fault::M7, 3, 24820),
    (Fault::M8, 3, 25300),
    (Fault::M9, 6, 29793),
    (Fault::M10, 11, 511),
    (Fault::M11, 2, 212254),
    (Fault::M12, 3, 188388),
    (Fault::M15, 16, 92966),
    (Fault::M16, 2, 190),
    (Fault::M17, 7, 1016),
    (Fault::M18, 3, 1576),
    (Fault::M19, 12, 143566),
    (Fault::M20, 2, 4586),
    (Fault::M21, 2, 4628),
    (Fault::M23, 9, 140734),
];

/// Every property added for D8, D9, D10 and C10, and the fault variant
/// that falsifies it: none of them holds by construction.
const FALSIFIED_BY: [(Fault, &str); 10] = [
    (Fault::M15, "D8 a dropped dispose caller wedges nothing"),
    (Fault::M16, "D9 write-ahead"),
    (Fault::M16, "D9 nothing a client was shown is lost"),
    (Fault::M17, "D9 every synced record survives"),
    (Fault::M17, "D9 a torn tail is truncated"),
    (
        Fault::M17,
        "D9 after a load, and between turns, no turn is open",
    ),
    (Fault::M17, "D9 every run ends with a log that loads"),
    (Fault::M18, "D10 after a failed write or sync"),
    (Fault::M18, "D10 a prompt answered completed"),
    (Fault::M19, "C10 a cancelled or disposed turn ends"),
];
