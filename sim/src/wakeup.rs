//! Wakeup trees: the branches optimal DPOR still owes a decision (Abdulla,
//! Aronis, Jonsson and Sagonas, "Optimal dynamic partial order reduction",
//! POPL 2014, and "Source sets", JACM 2017).
//!
//! A decision's wakeup tree is an ordered tree of step sequences, each step
//! a task with the footprint it had in the run where the sequence was found.
//! Every leaf is a sequence that, run from the decision, reverses a race of
//! an explored run; the search runs the leftmost branch first and passes
//! the branch's subtree down to the decision it leads to, so a reversal is
//! followed step by step rather than re-derived.
//!
//! Why this removes sleep-blocked runs where a task's next step is the same
//! event in every run that reaches it (the module docs of `dfs` say where
//! the lifecycle's steps are not): source-DPOR adds only one task (an
//! initial of the reversing sequence) and then lets the run go where its
//! first choices take it, where every task may turn out asleep. A wakeup
//! tree carries the whole sequence, which ends in a step no sleeping task
//! commutes with, and an insertion is skipped when a sleeping task is a weak
//! initial of the sequence (that class is explored already).
//!
//! Terms, for a sequence `w` run after a decision:
//! - `q` is an *initial* of `w` when `q` steps in `w` and no step of `w`
//!   before `q`'s first one conflicts with it;
//! - `q` is a *weak initial* when it is an initial, or does not step in `w`
//!   and its next step conflicts with no step of `w` (running it first
//!   reorders only commuting steps);
//! - inserting `w` descends into the first child whose task is a weak
//!   initial of what is left of `w` (removing that step if it is in `w`);
//!   reaching a leaf, or using all of `w` up, means a branch that is
//!   explored anyway covers `w`; otherwise what is left becomes a new last
//!   child.
//!
//! Conflicts here count a stutter's read as a read (it conflicts with a
//! write), unlike sleep sets, where a stutter commutes with everything: a
//! sequence that ends by reversing an await must not be absorbed by a
//! sleeping writer.

use serde::{Deserialize, Serialize};

use crate::resource::{clash, is_read};
use crate::task::TaskId;

/// A sequence of steps: each a task and its footprint.
pub(crate) type Sequence = Vec<(TaskId, Vec<u64>)>;

/// One branch of a wakeup tree: a step and the branches after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Branch {
    /// The task that steps.
    pub(crate) task: TaskId,
    /// Its footprint where the sequence was found.
    pub(crate) footprint: Vec<u64>,
    /// The branches after this step, in exploration order.
    pub(crate) children: Vec<Branch>,
}

/// Whether two normalized footprints conflict: a resource both touch and
/// at least one writes (a stutter's read is a read).
pub(crate) fn conflict(a: &[u64], b: &[u64]) -> bool {
    clash(a, b, |x, y| is_read(x) && is_read(y))
}

/// How `task`, whose next step has footprint `fp`, is a weak initial of
/// `w`: `Some(Some(k))` when its first step in `w` is at `k` and is an
/// initial, `Some(None)` when it does not step in `w` and commutes with all
/// of it, `None` when it is not a weak initial.
pub(crate) fn weak_initial(
    task: TaskId,
    fp: &[u64],
    w: &[(TaskId, Vec<u64>)],
) -> Option<Option<usize>> {
    match w.iter().position(|(t, _)| *t == task) {
        Some(k) => {
            let first = &w[k].1;
            w[..k]
                .iter()
                .all(|(_, f)| !conflict(f, first))
                .then_some(Some(k))
        }
        None => w.iter().all(|(_, f)| !conflict(f, fp)).then_some(None),
    }
}

/// Inserts `w` into the tree whose top-level branches are `tree` (see the
/// module docs). Returns whether a new branch was added.
pub(crate) fn insert(tree: &mut Vec<Branch>, mut w: Sequence) -> bool {
    let mut level = tree;
    loop {
        if w.is_empty() {
            return false;
        }
        let found = level
            .iter()
            .enumerate()
            .find_map(|(c, b)| weak_initial(b.task, &b.footprint, &w).map(|at| (c, at)));
        let Some((c, at)) = found else {
            level.push(chain(w));
            return true;
        };
        if let Some(k) = at {
            w.remove(k);
        }
        if level[c].children.is_empty() {
            return false;
        }
        level = &mut level[c].children;
    }
}

/// A sequence as a one-branch tree.
fn chain(w: Sequence) -> Branch {
    let mut steps = w.into_iter().rev();
    let (task, footprint) = steps.next().expect("a non-empty sequence");
    let mut b = Branch {
        task,
        footprint,
        children: Vec::new(),
    };
    for (task, footprint) in steps {
        b = Branch {
            task,
            footprint,
            children: vec![b],
        };
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{READ, STUTTER};

    fn seq(steps: &[(TaskId, &[u64])]) -> Sequence {
        steps.iter().map(|(t, f)| (*t, f.to_vec())).collect()
    }

    #[test]
    fn a_stutter_conflicts_with_the_write_it_read() {
        let x = 7u64;
        assert!(conflict(&[x | READ | STUTTER], &[x]));
        assert!(!conflict(&[x | READ | STUTTER], &[x | READ]));
        assert!(!conflict(&[1, 3], &[2]));
    }

    #[test]
    fn weak_initials() {
        let w = seq(&[(1, &[10]), (2, &[10, 11]), (3, &[12])]);
        assert_eq!(weak_initial(1, &[10], &w), Some(Some(0)));
        // Task 2's first step conflicts with task 1's before it.
        assert_eq!(weak_initial(2, &[10, 11], &w), None);
        assert_eq!(weak_initial(3, &[12], &w), Some(Some(2)));
        // Task 4 does not step in w: weak initial iff it commutes with all.
        assert_eq!(weak_initial(4, &[13], &w), Some(None));
        assert_eq!(weak_initial(4, &[11], &w), None);
    }

    #[test]
    fn insertion_shares_prefixes_and_skips_covered_sequences() {
        let mut tree = Vec::new();
        assert!(insert(&mut tree, seq(&[(1, &[10]), (2, &[10])])));
        // The same sequence again, or one equivalent to it: covered.
        assert!(!insert(&mut tree, seq(&[(1, &[10]), (2, &[10])])));
        // 3 commutes with 1 and 2: [3, 1, 2] ~ [1, 2, 3] and the leaf [1, 2]
        // is a prefix of that, so it is covered.
        assert!(!insert(
            &mut tree,
            seq(&[(3, &[20]), (1, &[10]), (2, &[10])])
        ));
        // [1, 3] where 3 conflicts with 2 (the tree's leaf): a new branch
        // under 1.
        assert!(insert(&mut tree, seq(&[(1, &[10]), (3, &[10])])));
        assert_eq!(tree.len(), 1);
        assert_eq!(
            tree[0].children.iter().map(|b| b.task).collect::<Vec<_>>(),
            vec![2, 3]
        );
        // Starting with a task that conflicts with 1: a new top branch.
        assert!(insert(&mut tree, seq(&[(4, &[10])])));
        assert_eq!(tree.iter().map(|b| b.task).collect::<Vec<_>>(), vec![1, 4]);
    }
}
