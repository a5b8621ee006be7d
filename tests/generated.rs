//! Generated workloads (`lifecycle_harness::generate`): with no scenario
//! written for either, the generator finds M27 (a cancel lost behind a
//! waiting prompt) and M28 (a prompt inside a load's replay), each with a replay line that reproduces it; on main
//! every generated history passes the oracles and the refinement check
//! on sim, sim-dfs and shuttle.

use lifecycle::rules::Rule;
use lifecycle_harness::check::replay::replay;
use lifecycle_harness::check::{Checker, ReplayLine};
use lifecycle_harness::faults::{Fault, Faults};
use lifecycle_harness::generate::{self, Plan};

/// The PR tier's first seeds, at a smaller budget per workload.
fn small_plan(seeds: std::ops::Range<u64>) -> Plan {
    Plan {
        seeds,
        sim_executions: 100,
        dfs_executions: 500,
        shuttle_iterations: 50,
        ..Plan::pr()
    }
}

fn finds(fault: Fault, rules: &[Rule]) {
    let faults = Faults::none().with(fault);
    let plan = Plan::pr();
    let found = plan
        .seeds
        .clone()
        .map(|seed| generate::run_seed(seed, &plan, faults))
        .find(|ran| ran.failure().is_some())
        .unwrap_or_else(|| panic!("the PR tier's workloads never break {fault}"));
    let report = found.failure().unwrap();
    let v = &report.violations[0];
    assert!(
        rules.iter().any(|r| v.rule == *r),
        "{fault} found as {}: {}",
        v.rule,
        v.message
    );
    // The line names the workload: it replays from the line alone.
    for line in [Some(&v.replay), v.shrunk.as_ref()].into_iter().flatten() {
        assert!(line.contains(":gen-"), "{line}");
        let parsed = ReplayLine::parse(line).unwrap_or_else(|e| panic!("{line}: {}", e.0));
        let replayed = replay(&parsed).unwrap_or_else(|e| panic!("{line}: {}", e.0));
        assert!(
            replayed.outcome.violations.iter().any(|w| w.rule == v.rule),
            "{line} replays without {}: {:?}",
            v.rule,
            replayed.outcome.violations
        );
    }
    // Shrinking keeps the failure and never grows the workload.
    let (small, shrunk) = generate::shrink(found.seed, report.checker, &Plan::pr(), faults);
    assert!(small.ops() <= found.workload.ops());
    assert!(!shrunk.violations.is_empty(), "{small}");
}

#[test]
fn m27_is_found_with_no_scenario_written_for_it() {
    finds(Fault::M27, &[Rule::A2, Rule::A8]);
}

#[test]
fn m28_is_found_with_no_scenario_written_for_it() {
    finds(Fault::M28, &[Rule::A9]);
}

#[test]
fn every_generated_history_on_main_is_a_behaviour_of_the_model() {
    let plan = small_plan(0..12);
    for seed in plan.seeds.clone() {
        let ran = generate::run_seed(seed, &plan, Faults::none());
        assert_eq!(ran.reports.len(), plan.checkers.len());
        for r in &ran.reports {
            assert!(r.executions > 0, "seed {seed} on {} ran nothing", r.checker);
            assert!(r.error.is_none(), "seed {seed}: {:?}", r.error);
            if let Some(v) = r.violations.first() {
                panic!(
                    "seed {seed} on {}:\n{}\nrule {}: {}\nreplay: {}",
                    r.checker, ran.workload, v.rule, v.message, v.replay
                );
            }
        }
    }
    let checkers: Vec<Checker> = plan.checkers.clone();
    assert_eq!(
        checkers,
        vec![Checker::Sim, Checker::SimDfs, Checker::ShuttleRandom]
    );
}

#[test]
fn mutants_hunts_the_server_races_with_the_generator() {
    for fault in generate::TARGETS {
        let report = generate::hunt(*fault, Checker::Sim, Default::default())
            .unwrap_or_else(|| panic!("sim does not kill {fault}"));
        assert!(report.scenario.starts_with(generate::PREFIX));
        assert!(report
            .violations
            .iter()
            .any(|v| v.rule.is_in(fault.must_violate())));
    }
    assert!(generate::hunt(Fault::M27, Checker::Loom, Default::default()).is_none());
}

/// Workload `code` explored under `plan` alone: its one report, after
/// failing the test on the first violation (with its replay line).
fn explored_clean(code: &str, plan: Plan) -> lifecycle_harness::check::Report {
    let w = generate::decode(code).expect("a workload");
    let ran = generate::run_workload(0, w, &plan, Faults::none());
    let r = ran.reports.into_iter().next().expect("one checker ran");
    if let Some(v) = r.violations.first() {
        panic!("rule {}: {}\nreplay: {}", v.rule, v.message, v.replay);
    }
    r
}

#[test]
fn a_cancel_between_a_prompts_admission_and_its_turn_reaches_the_turn() {
    // A load, and beside it a prompt whose step ends only when signalled,
    // followed by its cancel: in every interleaving the cancel reaches the
    // turn, wherever it lands between the prompt's admission and the
    // agent taking it (A2); a lost one leaves the step waiting forever.
    let plan = Plan {
        checkers: vec![Checker::SimDfs],
        dfs_executions: 50_000,
        ..Plan::pr()
    };
    let r = explored_clean("l+io", plan);
    assert!(r.exhausted, "sim-dfs ran {} schedules", r.executions);
}

#[test]
fn a9_no_replayed_item_is_sent_once_a_close_took_the_session() {
    // A load of `old`, and beside it a close of `old`, a wait and a second
    // load: once the close took the session, no item of the first load's
    // replay reaches the client (the server's replay checks the session
    // and sends the item in one section). Sampled by `sim` with free time
    // (2,000 seeded schedules, not every interleaving): the race needs the
    // item held between a check and its send across the whole of the
    // other client's close, wait and load, more preemptions than the PR
    // tier's sim-dfs bound allows.
    let plan = Plan {
        checkers: vec![Checker::Sim],
        sim_executions: 2_000,
        ..Plan::pr()
    };
    let r = explored_clean("l+zo.wo.l", plan);
    assert_eq!(r.executions, 2_000);
}

#[test]
fn loom_runs_a_workload_that_fits_its_threads_and_skips_one_that_does_not() {
    let plan = Plan {
        checkers: vec![Checker::Loom],
        loom_executions: 200,
        ..Plan::pr()
    };
    let w = generate::decode("n.po1").expect("a workload");
    let fits = generate::run_workload(0, w, &plan, Faults::none());
    let r = &fits.reports[0];
    assert!(r.skipped.is_none(), "skipped: {:?}", r.skipped);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations.first());
    assert!(r.executions > 0);
    // Four clients, each request's rest on a task of its own: more
    // threads than loom models, so it is skipped, never passed.
    let big = generate::run_workload(
        0,
        generate::decode("po2.po1+l.c0+n.n+l").expect("a workload"),
        &plan,
        Faults::none(),
    );
    let r = &big.reports[0];
    assert!(r.skipped.is_some(), "ran {} executions", r.executions);
    assert!(r.violations.is_empty());
}

/// A stall is judged by the waits still parked in it, and a wait names the
/// rule only where that rule is the one broken. Under M27 a second cancel
/// misses the prompt waiting behind the first, whose scripted step then
/// waits for a signal that never fires: the stall breaks A2 (the client
/// waits for the answer of a prompt it cancelled after its admission), not
/// C10 (a step parked before its signal fired has no signal to miss).
#[test]
fn a_lost_cancel_stalls_as_a2_not_as_a_step_that_missed_its_signal() {
    use lifecycle_harness::check::explore::sim_dfs::explore_dfs;
    use lifecycle_harness::check::DfsOptions;
    lifecycle_harness::check::quiet_panics();
    let scenario = generate::scenario_named("gen-p11.p11.n.x.co+po1.w0.l.io+l.po1.i0.l.i0")
        .expect("a generated name");
    let first_schedule = |fault: Option<Fault>| {
        let mut opts = DfsOptions {
            shallow: false,
            shrink: false,
            ..DfsOptions::exhaustive(1)
        };
        opts.config.preemption_bound = Some(0);
        let faults = fault.map_or(Faults::none(), |f| Faults::none().with(f));
        explore_dfs(scenario, faults, &opts, true, &|_| {})
    };
    assert!(first_schedule(None).violations.is_empty());
    let lost = first_schedule(Some(Fault::M27));
    let v = lost.violations.first().expect("M27 stalls this workload");
    assert_eq!(v.rule, Rule::A2, "{}", v.message);
    assert!(
        v.message
            .contains("waits on the answer of a prompt cancelled after its admission"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("waits on the turn's cancel") && !v.message.contains("(C10)"),
        "{}",
        v.message
    );
}
