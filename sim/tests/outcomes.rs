//! Different seeds reach different outcomes of a race.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use lifecycle_sim::{spawn, yield_now, Sim};

fn race(seed: u64) -> Vec<usize> {
    let mut sim = Sim::with_seed(seed);
    sim.block_on(async {
        let order = Rc::new(RefCell::new(Vec::new()));
        for id in 0..2 {
            let order = Rc::clone(&order);
            spawn(&format!("racer-{id}"), async move {
                yield_now().await;
                order.borrow_mut().push(id);
            });
        }
        // Wait for both racers without depending on their order.
        while order.borrow().len() < 2 {
            yield_now().await;
        }
        let out = order.borrow().clone();
        out
    })
    .unwrap()
}

#[test]
fn race_reaches_both_orders() {
    let outcomes: BTreeSet<Vec<usize>> = (0..50).map(race).collect();
    assert!(outcomes.contains(&vec![0, 1]), "never saw 0 then 1");
    assert!(outcomes.contains(&vec![1, 0]), "never saw 1 then 0");
    assert_eq!(outcomes.len(), 2);
}
