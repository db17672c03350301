//! The discrete-event engine: a queue of future events ordered by
//! (time, insertion sequence).
//!
//! Ordering ties by insertion sequence makes every run deterministic: two
//! events stamped with the same time are applied in the order they were
//! scheduled, whatever the queue's internal layout. Nothing here reads the wall
//! clock.
//!
//! Layout: a binary heap for events in the future plus a FIFO for events
//! scheduled *at the current time*. An event scheduled now always carries a
//! larger sequence number than anything already in the heap for this time, so
//! the FIFO is drained after the heap's events at `now`, which keeps the
//! (time, sequence) order exact while zero-delay events skip the heap.
//! Both structures keep their capacity, so a run in steady state does not
//! allocate per event.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

struct Entry<E> {
    at: Time,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// A deterministic event queue over payloads of type `E`.
pub struct Engine<E> {
    now: Time,
    seq: u64,
    future: BinaryHeap<Entry<E>>,
    current: VecDeque<E>,
    popped: u64,
}

impl<E> Default for Engine<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Engine<E> {
    pub fn new() -> Self {
        Self::with_capacity(64)
    }

    pub fn with_capacity(n: usize) -> Self {
        Engine {
            now: Time::ZERO,
            seq: 0,
            future: BinaryHeap::with_capacity(n),
            current: VecDeque::with_capacity(n.min(1024)),
            popped: 0,
        }
    }

    /// The time of the event most recently taken (the model's present).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at `at`. Scheduling into the past is a model bug.
    #[inline]
    pub fn schedule(&mut self, at: Time, ev: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past ({at} < {})",
            self.now
        );
        self.seq += 1;
        if at == self.now {
            self.current.push_back(ev);
        } else {
            self.future.push(Entry {
                at,
                seq: self.seq,
                ev,
            });
        }
    }

    /// The time of the next pending event, if any.
    #[inline]
    pub fn next_time(&self) -> Option<Time> {
        if !self.current.is_empty() {
            Some(self.now)
        } else {
            self.future.peek().map(|e| e.at)
        }
    }

    /// Take the next event if it is stamped `at` (used to drain one instant).
    #[inline]
    pub fn pop_at(&mut self, at: Time) -> Option<E> {
        if self.next_time() == Some(at) {
            self.pop().map(|(_, e)| e)
        } else {
            None
        }
    }

    /// Take the next event in (time, sequence) order and advance `now` to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        // Heap entries at `now` were scheduled before anything in `current`.
        if let Some(top) = self.future.peek() {
            if top.at == self.now || self.current.is_empty() {
                let e = self.future.pop().expect("peeked");
                self.now = e.at;
                self.popped += 1;
                return Some((e.at, e.ev));
            }
        }
        let ev = self.current.pop_front()?;
        self.popped += 1;
        Some((self.now, ev))
    }

    /// Events waiting.
    pub fn pending(&self) -> usize {
        self.future.len() + self.current.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending() == 0
    }

    /// Events taken so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_keep_insertion_order() {
        let mut e = Engine::new();
        for (t, id) in [(5, 'a'), (3, 'b'), (5, 'c'), (3, 'd'), (9, 'e')] {
            e.schedule(Time(t), id);
        }
        let order: Vec<_> = std::iter::from_fn(|| e.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), 'b'),
                (Time(3), 'd'),
                (Time(5), 'a'),
                (Time(5), 'c'),
                (Time(9), 'e')
            ]
        );
    }

    #[test]
    fn zero_delay_events_follow_earlier_scheduled_ones_at_the_same_time() {
        let mut e = Engine::new();
        e.schedule(Time(4), 1);
        e.schedule(Time(4), 2);
        assert_eq!(e.pop(), Some((Time(4), 1)));
        // Scheduled now, at t = 4: must come after event 2 (scheduled earlier).
        e.schedule(Time(4), 3);
        e.schedule(Time(6), 5);
        e.schedule(Time(4), 4);
        assert_eq!(e.pop_at(Time(4)), Some(2));
        assert_eq!(e.pop_at(Time(4)), Some(3));
        assert_eq!(e.pop_at(Time(4)), Some(4));
        assert_eq!(e.pop_at(Time(4)), None);
        assert_eq!(e.pop(), Some((Time(6), 5)));
        assert!(e.is_empty());
        assert_eq!(e.popped(), 5);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_is_a_bug() {
        let mut e = Engine::new();
        e.schedule(Time(4), ());
        e.pop();
        e.schedule(Time(3), ());
    }
}
