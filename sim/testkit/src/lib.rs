//! What the simulator's integration tests share, as a crate of its own
//! (so that nothing is dead code in a test that uses part of it): a tiny
//! waker-based channel and a 3-task program.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use lifecycle_sim::{note_wait, now_ms, random_u64, sleep, spawn, yield_now};

struct Inner<T> {
    queue: VecDeque<T>,
    rx_waker: Option<Waker>,
    senders: usize,
}

/// Sending half of an unbounded single-consumer channel.
pub struct Sender<T>(Rc<RefCell<Inner<T>>>);

/// Receiving half.
pub struct Receiver<T>(Rc<RefCell<Inner<T>>>);

pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let inner = Rc::new(RefCell::new(Inner {
        queue: VecDeque::new(),
        rx_waker: None,
        senders: 1,
    }));
    (Sender(Rc::clone(&inner)), Receiver(inner))
}

impl<T> Sender<T> {
    pub fn send(&self, value: T) {
        let waker = {
            let mut inner = self.0.borrow_mut();
            inner.queue.push_back(value);
            inner.rx_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.0.borrow_mut().senders += 1;
        Sender(Rc::clone(&self.0))
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut inner = self.0.borrow_mut();
            inner.senders -= 1;
            if inner.senders == 0 {
                inner.rx_waker.take()
            } else {
                None
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// Next value, or `None` once every sender is gone and the queue is empty.
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv(self)
    }
}

pub struct Recv<'a, T>(&'a mut Receiver<T>);

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut inner = self.0 .0.borrow_mut();
        if let Some(v) = inner.queue.pop_front() {
            return Poll::Ready(Some(v));
        }
        if inner.senders == 0 {
            return Poll::Ready(None);
        }
        inner.rx_waker = Some(cx.waker().clone());
        note_wait("channel recv");
        Poll::Pending
    }
}

/// Three tasks: two producers (yielding and sleeping) and a consumer that
/// records arrival order and times. Returns the consumer's log.
pub async fn three_task_program() -> Vec<(u32, u64)> {
    let (tx, mut rx) = channel::<u32>();
    let log = Rc::new(RefCell::new(Vec::new()));
    let tx2 = tx.clone();
    spawn("producer-a", async move {
        for i in 0..5 {
            tx.send(i);
            yield_now().await;
            if i % 2 == 0 {
                sleep(3).await;
            }
        }
    });
    spawn("producer-b", async move {
        for i in 100..105 {
            yield_now().await;
            tx2.send(i);
            sleep(2).await;
        }
    });
    let l = Rc::clone(&log);
    spawn("consumer", async move {
        while let Some(v) = rx.recv().await {
            l.borrow_mut().push((v, now_ms()));
            yield_now().await;
        }
    });
    yield_now().await;
    sleep(100).await;
    let out = log.borrow().clone();
    out
}

/// Like `three_task_program`, but producer-b's sleeps come from `random_u64`.
pub async fn random_program() -> Vec<(u32, u64)> {
    let (tx, mut rx) = channel::<u32>();
    let log = Rc::new(RefCell::new(Vec::new()));
    let tx2 = tx.clone();
    spawn("producer-a", async move {
        for i in 0..4 {
            tx.send(i);
            yield_now().await;
        }
    });
    spawn("producer-b", async move {
        for i in 100..104 {
            sleep(random_u64() % 7).await;
            tx2.send(i);
        }
    });
    let l = Rc::clone(&log);
    spawn("consumer", async move {
        while let Some(v) = rx.recv().await {
            l.borrow_mut().push((v, now_ms()));
        }
    });
    sleep(100).await;
    let out = log.borrow().clone();
    out
}
