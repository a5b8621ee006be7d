//! Recorded decisions replay exactly; a broken log is reported.

use lifecycle_sim_testkit as common;

use common::{random_program, three_task_program};
use lifecycle_sim::{Sim, Step};

#[test]
fn replay_round_trip() {
    for seed in 0..10 {
        let mut rec = Sim::with_seed(seed);
        let out = rec.block_on(three_task_program()).unwrap();
        let report = rec.report();
        assert_eq!(report.decisions, rec.decisions());
        assert_eq!(report.diverged_at, None);

        let mut rep = Sim::replay(report.decisions.clone());
        let out2 = rep.block_on(three_task_program()).unwrap();
        assert_eq!(out, out2);
        assert_eq!(rep.trace_hash(), report.trace_hash, "seed {seed}");
        assert_eq!(rep.decisions(), &report.decisions[..]);
        assert_eq!(rep.diverged_at(), None);
        assert_eq!(rep.report().diverged_at, None);
    }
}

#[test]
fn replay_with_seed_reproduces_random_values() {
    for seed in 0..10 {
        let mut rec = Sim::with_seed(seed);
        let out = rec.block_on(random_program()).unwrap();
        let mut rep = Sim::replay_with_seed(seed, rec.decisions().to_vec());
        let out2 = rep.block_on(random_program()).unwrap();
        assert_eq!(out, out2);
        assert_eq!(rep.trace_hash(), rec.trace_hash());
        assert_eq!(rep.diverged_at(), None);
    }
}

#[test]
fn truncated_log_diverges() {
    let mut rec = Sim::with_seed(11);
    rec.block_on(three_task_program()).unwrap();
    let mut decisions = rec.decisions().to_vec();
    let keep = decisions.len() / 2;
    decisions.truncate(keep);

    let mut rep = Sim::replay(decisions);
    rep.block_on(three_task_program()).unwrap();
    let report = rep.report();
    let at = report.diverged_at.expect("truncated replay must diverge");
    // It diverged exactly at the first missing decision.
    assert_eq!(at, rep.trace()[keep].step);
    assert!(report.to_string().contains("diverged"));
}

#[test]
fn out_of_range_and_leftover_decisions_diverge() {
    let mut rep = Sim::replay(vec![7; 1000]);
    rep.block_on(three_task_program()).unwrap();
    assert_eq!(rep.diverged_at(), Some(0));

    let mut rec = Sim::with_seed(2);
    rec.block_on(three_task_program()).unwrap();
    let mut decisions = rec.decisions().to_vec();
    decisions.push(0);
    let mut rep = Sim::replay(decisions);
    rep.block_on(three_task_program()).unwrap();
    assert_eq!(rep.trace_hash(), rec.trace_hash());
    assert_eq!(rep.diverged_at(), Some(rep.steps()));
}

#[test]
fn stepping_by_hand_matches_run() {
    let mut rec = Sim::with_seed(4);
    rec.block_on(three_task_program()).unwrap();

    let mut sim = Sim::replay(rec.decisions().to_vec());
    sim.spawn("main", async {
        three_task_program().await;
    });
    let mut polls = 0;
    let mut advances = 0;
    loop {
        match sim.step() {
            Step::Polled { task, name } => {
                assert!(!name.is_empty());
                assert!(task < sim.task_count());
                polls += 1;
            }
            Step::TimeAdvanced { now_ms } => {
                assert_eq!(now_ms, sim.now_ms());
                advances += 1;
            }
            Step::Finished => break,
            other => panic!("unexpected step {other:?}"),
        }
    }
    assert_eq!(polls, rec.decisions().len());
    assert_eq!(polls + advances, rec.steps() as usize);
    assert_eq!(sim.trace_hash(), rec.trace_hash());
    assert_eq!(sim.step(), Step::Finished);
}
