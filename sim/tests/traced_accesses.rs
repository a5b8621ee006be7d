//! The trace's accesses (`TraceEntry::accesses`): every access a poll made,
//! in order and with repeats, a failed wait's read and a section's echo
//! marked, where the footprint is the poll's sorted set.

use lifecycle_sim::{
    new_object, note_await, section_begin, section_end, spawn, touch, touch_read, yield_now, Sim,
    TracedAccess, READ,
};

#[test]
fn accesses_keep_order_repeats_failed_waits_and_echoes() {
    let mut sim = Sim::with_seed(1);
    sim.set_trace(true);
    let ids = std::rc::Rc::new(std::cell::Cell::new((0, 0, 0)));
    let seen = ids.clone();
    sim.block_on(async move {
        let (a, b, c) = (new_object(), new_object(), new_object());
        seen.set((a, b, c));
        spawn("t", async move {
            touch(b);
            touch_read(a);
            touch(b);
            // A lock section on `c`: its first access, then an echo.
            section_begin(c);
            touch_read(c);
            touch(c);
            section_end(c);
            // A check that fails on `a`.
            note_await(a);
            yield_now().await;
        });
    })
    .expect("the program finishes");
    let (a, b, c) = ids.get();
    let entry = sim
        .trace()
        .iter()
        .find(|e| e.accesses.iter().any(|x| x.resource == b))
        .expect("the task's poll is traced");
    let plain = |resource| TracedAccess {
        resource,
        failed_wait: false,
        echo: false,
    };
    let accesses: Vec<TracedAccess> = entry
        .accesses
        .iter()
        .copied()
        .filter(|x| [a, b, c].contains(&(x.resource & !READ)))
        .collect();
    assert_eq!(
        accesses,
        vec![
            plain(b),
            plain(a | READ),
            plain(b),
            plain(c | READ),
            TracedAccess {
                echo: true,
                ..plain(c)
            },
            TracedAccess {
                failed_wait: true,
                ..plain(a | READ)
            },
        ]
    );
    // The footprint is the set: `b` once.
    assert_eq!(entry.footprint.iter().filter(|&&r| r == b).count(), 1);
}
