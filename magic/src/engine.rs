//! The discrete-event engine: a queue of future events ordered by
//! (time, insertion sequence).
//!
//! Ordering ties by insertion sequence makes every run deterministic: two
//! events stamped with the same time are applied in the order they were
//! scheduled, whatever the queue's internal layout. Nothing here reads the wall
//! clock.
//!
//! Layout: a timing wheel of `SLOTS` slots, one per *quantum* of time (a
//! machine's own clock period: a MAGIC machine uses the 10 ns system cycle),
//! covering the near future; each slot is a FIFO (a vector read from its
//! front, handed back to a pool of spares when read through), so same-time
//! events keep their scheduling order for free and are read from consecutive
//! memory. Events further out wait in a heap (`far`) and move into the wheel
//! as soon as their time enters its window, before anything scheduled later
//! can be added beside them. Events at times that are not whole quanta
//! (another clock's edges) live in a second heap (`odd`), ordered by (time,
//! sequence); they never share a time with a wheel event. Every structure
//! keeps its capacity, so a run in steady state does not allocate per event.

use crate::time::{Time, TICKS_PER_SYSTEM_CYCLE};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Slots in the wheel (a power of two).
const SLOTS: usize = 1024;
const WORDS: usize = SLOTS / 64;

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

/// One wheel slot: the events of one quantum in scheduling order, and how
/// many of them have been taken. A slot holds a single quantum at a time (the
/// window is `SLOTS` quanta wide); read through, it hands its vector to the
/// engine's spares, and a slot that fills takes the spare freed last (still in
/// the cache, and already grown to the size the traffic needs).
struct Slot<E> {
    evs: Vec<E>,
    read: usize,
}

/// A deterministic event queue over payloads of type `E` (small plain values).
pub struct Engine<E> {
    now: Time,
    /// Ticks per wheel slot.
    quantum: u64,
    /// The quantum is the system cycle (see `quanta`).
    system_quantum: bool,
    /// Quantum index of `now`: the wheel holds quanta `base .. base + SLOTS`.
    base: u64,
    slots: Box<[Slot<E>; SLOTS]>,
    /// Empty event vectors kept for their capacity, last freed on top.
    spare: Vec<Vec<E>>,
    /// Bit per slot: has unread events.
    occupied: [u64; WORDS],
    in_wheel: usize,
    far: BinaryHeap<Entry<E>>,
    odd: BinaryHeap<Entry<E>>,
    seq: u64,
    popped: u64,
    /// Events scheduled for an instant already past (applied at once).
    late: u64,
    /// An event on its way into a heap (see `schedule`); empty between calls.
    staged: Option<Entry<E>>,
}

/// An empty engine's clock and counts: all an engine that holds no event
/// is (see `Engine::idle`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Idle {
    now: Time,
    base: u64,
    seq: u64,
    popped: u64,
    late: u64,
}

impl Idle {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        for x in [self.now.0, self.base, self.seq, self.popped, self.late] {
            crate::pack::put(out, x);
        }
    }

    /// What [`Idle::pack`] packed.
    pub(crate) fn unpack(r: &mut crate::pack::Reader<'_>) -> Idle {
        Idle {
            now: Time(r.u64()),
            base: r.u64(),
            seq: r.u64(),
            popped: r.u64(),
            late: r.u64(),
        }
    }
}

impl<E: Copy> Default for Engine<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Engine<E> {
    /// An engine whose wheel quantum is one tick.
    pub fn new() -> Self {
        Self::with_quantum(1)
    }

    /// An engine whose wheel slots are `quantum` ticks wide: pick the period of
    /// the clock most events fall on (a quantum of 0 is taken as 1).
    pub fn with_quantum(quantum: u64) -> Self {
        Engine {
            now: Time::ZERO,
            quantum: quantum.max(1),
            system_quantum: quantum == TICKS_PER_SYSTEM_CYCLE,
            base: 0,
            slots: Box::new(std::array::from_fn(|_| Slot {
                evs: Vec::new(),
                read: 0,
            })),
            spare: Vec::new(),
            occupied: [0; WORDS],
            in_wheel: 0,
            far: BinaryHeap::new(),
            odd: BinaryHeap::new(),
            seq: 0,
            popped: 0,
            late: 0,
            staged: None,
        }
    }

    /// `t` in whole quanta and the ticks left over. A machine's quantum is
    /// nearly always the system cycle: dividing by that constant is a
    /// multiplication, where a division by a quantum read at run time is
    /// a slow instruction on the path of every event.
    #[inline]
    fn quanta(&self, t: Time) -> (u64, u64) {
        // A flag of its own rather than a comparison of the quantum: knowing
        // the quantum equal to the constant, the compiler would divide by
        // whichever it likes, and it liked the slow one.
        if self.system_quantum {
            (t.0 / TICKS_PER_SYSTEM_CYCLE, t.0 % TICKS_PER_SYSTEM_CYCLE)
        } else {
            (t.0 / self.quantum, t.0 % self.quantum)
        }
    }

    /// The time of the event most recently taken (the model's present).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `ev` at `at`. An event for the past is a model bug: it is
    /// applied at the present instant, after those already scheduled for it,
    /// and counted ([`Engine::late`]) so the run reports it.
    ///
    /// Inlined into every caller, and the event written only where it goes
    /// (the wheel's slot, or the stage a heap takes it from), so an event
    /// made field by field is never read back whole from where it was made
    /// (a read that waits for those writes).
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, ev: E) {
        let at = if at < self.now { self.take_late() } else { at };
        self.seq += 1;
        let (q, odd) = self.quanta(at);
        // `q >= base` (the event is not in the past): no overflow near the
        // clock's end.
        if odd == 0 && q.saturating_sub(self.base) < SLOTS as u64 {
            self.put(q, ev);
        } else {
            self.staged = Some(Entry {
                at,
                seq: self.seq,
                ev,
            });
            self.push_staged(odd != 0);
        }
    }

    /// An event for the past: counted, and applied at the present instant.
    #[cold]
    #[inline(never)]
    fn take_late(&mut self) -> Time {
        self.late += 1;
        self.now
    }

    /// The staged event into its heap: off-quantum events (another clock's
    /// edges) or events past the wheel's window (out of the line of the
    /// wheel's events, the many, on a machine of one clock).
    #[inline(never)]
    fn push_staged(&mut self, odd: bool) {
        if let Some(e) = self.staged.take() {
            if odd {
                self.odd.push(e);
            } else {
                self.far.push(e);
            }
        }
    }

    #[inline(always)]
    fn put(&mut self, q: u64, ev: E) {
        let i = (q as usize) & (SLOTS - 1);
        let slot = &mut self.slots[i];
        if slot.evs.is_empty() {
            self.occupied[i / 64] |= 1 << (i % 64);
            if let Some(v) = self.spare.pop() {
                slot.evs = v;
            }
        }
        slot.evs.push(ev);
        self.in_wheel += 1;
    }

    /// Quantum index of the earliest occupied slot, if any.
    fn wheel_next(&self) -> Option<u64> {
        if self.in_wheel == 0 {
            return None;
        }
        let start = (self.base as usize) & (SLOTS - 1);
        // Scan the bitmap from `start`, wrapping once.
        for k in 0..=WORDS {
            let w = (start / 64 + k) % WORDS;
            let mut bits = self.occupied[w];
            if k == 0 {
                bits &= !0u64 << (start % 64);
            } else if k == WORDS {
                bits &= !(!0u64 << (start % 64));
            }
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                let off = (i + SLOTS - start) % SLOTS;
                return Some(self.base + off as u64);
            }
        }
        unreachable!("in_wheel > 0 but no slot occupied")
    }

    /// The time of the next pending event, if any.
    pub fn next_time(&self) -> Option<Time> {
        let wheel = self.wheel_next().map(|q| Time(q * self.quantum));
        // Far events lie beyond the wheel's window, so they come after it.
        let even = wheel.or_else(|| self.far.peek().map(|e| e.at));
        match (even, self.odd.peek().map(|e| e.at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next pending event and its time, without taking it.
    pub fn peek(&self) -> Option<(Time, &E)> {
        let even = match self.wheel_next() {
            Some(q) => {
                let slot = &self.slots[(q as usize) & (SLOTS - 1)];
                slot.evs.get(slot.read).map(|e| (Time(q * self.quantum), e))
            }
            // Far events lie beyond the wheel's window, so they come after it.
            None => self.far.peek().map(|e| (e.at, &e.ev)),
        };
        match (even, self.odd.peek().map(|e| (e.at, &e.ev))) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// Move time to `t` and pull the far events its window now covers.
    #[inline]
    fn advance(&mut self, t: Time) {
        if t == self.now {
            return;
        }
        self.now = t;
        let q = self.quanta(t).0;
        if q > self.base {
            self.base = q;
            if !self.far.is_empty() {
                self.pull_far();
            }
        }
    }

    /// Move the far events the window now covers into the wheel.
    #[inline(never)]
    fn pull_far(&mut self) {
        let base = self.base;
        while self
            .far
            .peek()
            .is_some_and(|e| self.quanta(e.at).0.saturating_sub(base) < SLOTS as u64)
        {
            let e = self.far.pop().expect("peeked");
            let q = self.quanta(e.at).0;
            self.put(q, e.ev);
        }
    }

    /// Take the next event if it is the next one and stamped `at` (to drain
    /// one instant); otherwise take nothing and leave time alone.
    pub fn pop_at(&mut self, at: Time) -> Option<E> {
        if self.next_time() != Some(at) {
            return None;
        }
        self.pop_next_at(at)
    }

    /// As `pop_at`, for a caller that knows `at` is `next_time()` or the
    /// present instant (the machine's drain loop): no bitmap scan.
    #[inline]
    pub(crate) fn pop_next_at(&mut self, at: Time) -> Option<E> {
        debug_assert!(at >= self.now);
        let (q, odd) = self.quanta(at);
        if odd != 0 {
            if self.odd.peek().is_some_and(|e| e.at == at) {
                self.advance(at);
                self.popped += 1;
                return self.odd.pop().map(|e| e.ev);
            }
            return None;
        }
        self.advance(at);
        if q.saturating_sub(self.base) >= SLOTS as u64 {
            return None;
        }
        let i = (q as usize) & (SLOTS - 1);
        let slot = &mut self.slots[i];
        let ev = *slot.evs.get(slot.read)?;
        slot.read += 1;
        if slot.read == slot.evs.len() {
            let mut v = std::mem::take(&mut slot.evs);
            v.clear();
            self.spare.push(v);
            slot.read = 0;
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        self.in_wheel -= 1;
        self.popped += 1;
        Some(ev)
    }

    /// Take every wheel event stamped `at` at once, in order, into `batch`
    /// (empty on the call: its vector goes to the spares, and the slot's
    /// comes out), for a caller that knows `at` is `next_time()` or the
    /// present instant. `false`, taking nothing, when `at` is not a whole
    /// quantum or its slot holds nothing: [`Engine::pop_next_at`] takes
    /// such events one by one.
    pub(crate) fn take_instant(&mut self, at: Time, batch: &mut Vec<E>) -> bool {
        debug_assert!(at >= self.now && batch.is_empty());
        let (q, odd) = self.quanta(at);
        if odd != 0 {
            return false;
        }
        self.advance(at);
        if q.saturating_sub(self.base) >= SLOTS as u64 {
            return false;
        }
        let i = (q as usize) & (SLOTS - 1);
        let slot = &mut self.slots[i];
        if slot.read >= slot.evs.len() {
            return false;
        }
        let read = std::mem::take(&mut slot.read);
        let evs = std::mem::take(&mut slot.evs);
        self.occupied[i / 64] &= !(1 << (i % 64));
        let mine = std::mem::replace(batch, evs);
        self.spare.push(mine);
        if read > 0 {
            batch.drain(..read);
        }
        self.in_wheel -= batch.len();
        self.popped += batch.len() as u64;
        true
    }

    /// Take the next event in (time, sequence) order and advance `now` to it.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let t = self.next_time()?;
        self.pop_next_at(t).map(|e| (t, e))
    }

    /// Events waiting.
    pub fn pending(&self) -> usize {
        self.in_wheel + self.far.len() + self.odd.len()
    }

    /// True if no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.pending() == 0
    }

    /// The first waiting event `f` gives a value for, in no particular
    /// order (a scan of them all, for a rare question such as whether
    /// anything but a loop is in flight).
    pub(crate) fn find_map<R>(&self, f: impl Fn(&E) -> Option<R>) -> Option<R> {
        self.slots
            .iter()
            .flat_map(|s| s.evs.get(s.read..).unwrap_or_default())
            .chain(self.far.iter().map(|e| &e.ev))
            .chain(self.odd.iter().map(|e| &e.ev))
            .chain(self.staged.iter().map(|e| &e.ev))
            .find_map(f)
    }

    /// Events taken so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Events that were scheduled for an instant already past.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The engine's clock and counts, if it holds no event.
    pub(crate) fn idle(&self) -> Option<Idle> {
        self.is_empty().then_some(Idle {
            now: self.now,
            base: self.base,
            seq: self.seq,
            popped: self.popped,
            late: self.late,
        })
    }

    /// Make this engine the empty one `s` was taken from: any event it
    /// holds is dropped, and its clock and counts become `s`'s.
    pub(crate) fn set_idle(&mut self, s: Idle) {
        if !self.is_empty() {
            for slot in self.slots.iter_mut() {
                slot.evs.clear();
                slot.read = 0;
            }
            self.occupied = [0; WORDS];
            self.in_wheel = 0;
            self.far.clear();
            self.odd.clear();
        }
        self.now = s.now;
        self.base = s.base;
        self.seq = s.seq;
        self.popped = s.popped;
        self.late = s.late;
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

    /// A plain sorted list: what the engine must agree with.
    fn reference(mut evs: Vec<(u64, u32)>) -> Vec<(u64, u32)> {
        // Stable sort by time keeps insertion order among equal times.
        evs.sort_by_key(|e| e.0);
        evs
    }

    #[test]
    fn far_and_off_quantum_events_keep_the_total_order() {
        // Quantum 10: multiples of 10 go to the wheel (or the far heap when
        // more than 1024 quanta out); the others to the off-quantum heap.
        let mut e = Engine::with_quantum(10);
        let mut x: u64 = 12345;
        let mut evs = Vec::new();
        for id in 0..5000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = match x >> 62 {
                0 => (x >> 20) % 50_000 * 10,         // wheel or far
                1 => (x >> 20) % 500 * 10,            // near: many ties
                2 => (x >> 20) % 50_000,              // any tick
                _ => 20_000_000 + (x >> 20) % 7 * 10, // very far, tied
            };
            evs.push((t, id));
            e.schedule(Time(t), id);
        }
        let got: Vec<_> = std::iter::from_fn(|| e.pop())
            .map(|(t, id)| (t.0, id))
            .collect();
        assert_eq!(got, reference(evs));
        assert!(e.is_empty());
    }

    #[test]
    fn events_scheduled_while_running_keep_the_order() {
        // Each popped event schedules a follower at a pseudo-random delay,
        // some zero, some beyond the wheel; compare with a reference queue.
        let mut e = Engine::with_quantum(4);
        let mut r: Vec<(u64, u64, u32)> = Vec::new(); // (time, seq, id)
        let mut seq = 0;
        let mut x: u64 = 99;
        for id in 0..64u32 {
            e.schedule(Time(id as u64 * 4), id);
            seq += 1;
            r.push((id as u64 * 4, seq, id));
        }
        let mut next_id = 64;
        let mut n = 0;
        while let Some((t, id)) = e.pop() {
            r.sort();
            let want = r.remove(0);
            assert_eq!((t.0, id), (want.0, want.2));
            n += 1;
            if n < 20_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let d = match x >> 61 {
                    0 => 0,
                    1 => 4 * 2000,
                    2 => 3,
                    _ => (x >> 30) % 300 * 4,
                };
                e.schedule(Time(t.0 + d), next_id);
                seq += 1;
                r.push((t.0 + d, seq, next_id));
                next_id += 1;
            }
        }
        assert!(r.is_empty());
    }

    #[test]
    fn peek_shows_what_pop_takes() {
        let mut e = Engine::with_quantum(10);
        e.schedule(Time(50_000), 'f'); // beyond the wheel
        e.schedule(Time(25), 'o'); // off quantum
        e.schedule(Time(30), 'w');
        e.schedule(Time(20), 'v');
        while let Some((t, &ev)) = e.peek() {
            assert_eq!(e.pop(), Some((t, ev)));
        }
        assert!(e.is_empty());
    }

    #[test]
    fn pop_at_a_time_that_is_not_next_takes_nothing() {
        let mut e = Engine::with_quantum(2);
        e.schedule(Time(10), 'a');
        e.schedule(Time(20), 'b');
        assert_eq!(e.pop_at(Time(20)), None);
        assert_eq!(e.pop_at(Time(4)), None);
        assert_eq!(e.now(), Time(0));
        assert_eq!(e.pop(), Some((Time(10), 'a')));
        assert_eq!(e.pop_at(Time(20)), Some('b'));
    }

    #[test]
    fn the_clock_runs_to_its_very_end() {
        for quantum in [0, 1, 264] {
            let mut e = Engine::with_quantum(quantum);
            e.schedule(Time(u64::MAX), 'c');
            e.schedule(Time(u64::MAX - 1), 'b');
            e.schedule(Time(5), 'a');
            let got: Vec<_> = std::iter::from_fn(|| e.pop()).collect();
            assert_eq!(
                got,
                [
                    (Time(5), 'a'),
                    (Time(u64::MAX - 1), 'b'),
                    (Time(u64::MAX), 'c')
                ]
            );
            assert!(e.is_empty());
        }
    }

    #[test]
    fn an_event_for_the_past_is_applied_now_after_the_present_ones() {
        let mut e = Engine::new();
        e.schedule(Time(4), 'a');
        e.schedule(Time(4), 'b');
        assert_eq!(e.pop(), Some((Time(4), 'a')));
        e.schedule(Time(3), 'c');
        assert_eq!(e.pop(), Some((Time(4), 'b')));
        assert_eq!(e.pop(), Some((Time(4), 'c')));
        assert!(e.is_empty());
        assert_eq!(e.late(), 1);
    }

    #[test]
    fn an_instant_taken_whole_is_the_order_popping_gives() {
        // Two engines fed alike: one popped an event at a time, the other
        // taking whole instants (after a first event popped alone, and with
        // events scheduled for the present while the instant is applied).
        let feed = |e: &mut Engine<u32>| {
            for (t, id) in [
                (528, 1),
                (264, 2),
                (528, 3),
                (600, 4),
                (264, 5),
                (528 * 1100, 6),
            ] {
                e.schedule(Time(t), id);
            }
        };
        let (mut one, mut whole) = (
            Engine::with_quantum(TICKS_PER_SYSTEM_CYCLE),
            Engine::with_quantum(TICKS_PER_SYSTEM_CYCLE),
        );
        feed(&mut one);
        feed(&mut whole);
        let mut popped = Vec::new();
        while let Some((t, id)) = one.pop() {
            popped.push((t, id));
            if id < 3 {
                one.schedule(t, id + 10);
            }
        }
        let mut taken = Vec::new();
        let mut batch = Vec::new();
        let first = whole.pop().expect("an event");
        taken.push(first);
        whole.schedule(first.0, first.1 + 10);
        while let Some(t) = whole.next_time() {
            loop {
                batch.clear();
                if !whole.take_instant(t, &mut batch) {
                    batch.extend(whole.pop_next_at(t));
                }
                if batch.is_empty() {
                    break;
                }
                for &id in &batch {
                    taken.push((t, id));
                    if id < 3 {
                        whole.schedule(t, id + 10);
                    }
                }
            }
        }
        assert_eq!(taken, popped);
        assert_eq!(taken.len(), 8);
        assert_eq!((whole.popped(), whole.pending()), (8, 0));
    }
}
