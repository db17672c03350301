//! The outbox and the node's outgoing network link.
//!
//! Packets leave in the order the PP hands them over, whichever lane they are
//! on; each lane has its own `outbox_slots` waiting slots (the packet on the
//! wire holds none), so a full request lane never blocks a reply. Only this
//! node's PP feeds the outbox and it does so in time order, so each packet's
//! start on the wire is known when it is handed over: the link is a timeline,
//! not a stream of events, and an outbox-full stall is computed exactly at the
//! send.

use crate::ids::Lane;
use crate::pack::{put, Reader};
use crate::time::Cycles;
use smallvec::SmallVec;

/// What happened to a packet handed to the outbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// When the outbox took the packet (later than the send if the lane was full).
    pub accepted: Cycles,
    /// When its first byte went on the wire.
    pub start: Cycles,
    /// When its last byte left.
    pub end: Cycles,
}

/// A node's outbox and outgoing link: a timeline per lane of the packets
/// waiting for the wire, and when the wire is next free.
#[derive(Clone, Default)]
pub struct OutLink {
    /// When the wire is next free.
    free_at: Cycles,
    /// Per lane: the start times of its last `outbox_slots` packets,
    /// ascending (2 by default, held in place; a machine with more slots
    /// keeps them on the heap once it has needed them). Those of them
    /// later than a send's cycle are the packets still waiting then.
    waiting: [SmallVec<[Cycles; 2]>; 2],
    pub(crate) busy: Cycles,
    pub(crate) packets: u64,
    pub(crate) stall: Cycles,
    /// Cycles during which at least one accepted packet waited for the wire.
    pub(crate) occupied: Cycles,
    occupied_until: Cycles,
}

impl OutLink {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.free_at.0);
        for lane in &self.waiting {
            put(out, lane.len() as u64);
            for t in lane {
                put(out, t.0);
            }
        }
        for x in [
            self.busy.0,
            self.packets,
            self.stall.0,
            self.occupied.0,
            self.occupied_until.0,
        ] {
            put(out, x);
        }
    }

    /// Make this the link [`OutLink::pack`] packed, reusing its storage.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.free_at = r.cycles();
        for lane in &mut self.waiting {
            lane.clear();
            for _ in 0..r.count() {
                lane.push(r.cycles());
            }
        }
        self.busy = r.cycles();
        self.packets = r.u64();
        self.stall = r.cycles();
        self.occupied = r.cycles();
        self.occupied_until = r.cycles();
    }
}

impl OutLink {
    pub(crate) fn reset_counters(&mut self) {
        (self.busy, self.packets, self.stall, self.occupied) = (Cycles(0), 0, Cycles(0), Cycles(0));
    }

    /// When the wire is done with every packet handed over so far (and so
    /// the outbox with every wait).
    pub(crate) fn booked_until(&self) -> Cycles {
        self.free_at.max(self.occupied_until)
    }

    /// Hand over a packet at `at` that holds the wire `wire` cycles, may go on
    /// it `stage` cycles after the outbox took it (the outbox stage), and not
    /// before `ready` (its data streaming in). A lane has at least one slot
    /// (`slots` of 0 counts as 1). Only this node's PP feeds the outbox, so
    /// packets come in time order.
    pub fn issue(
        &mut self,
        at: Cycles,
        lane: Lane,
        wire: Cycles,
        ready: Cycles,
        stage: Cycles,
        slots: usize,
    ) -> Departure {
        let slots = slots.max(1);
        let q = &mut self.waiting[lane as usize];
        let n = q.len();
        // Packets come in time order, so every packet that never waited
        // went on the wire by `at`, and the lane's packets still waiting at
        // `at` are those of its last starts that are later. With `slots` of
        // them waiting the outbox takes this one when the first of them
        // goes on the wire: the `slots`-th last start, if later than `at`.
        let accepted = if n >= slots { at.max(q[n - slots]) } else { at };
        let start = (accepted + stage).max(self.free_at).max(ready);
        let end = start + wire;
        if n < slots {
            q.push(start);
        } else {
            // Keep the last `slots` starts: drop the oldest (one, as a rule).
            match q.as_mut_slice() {
                // The default two slots: two moves, not a call to copy.
                [a, b] if slots == 2 => (*a, *b) = (*b, start),
                s => {
                    s.copy_within(n + 1 - slots.., 0);
                    s[slots - 1] = start;
                }
            }
            q.truncate(slots);
        }
        self.free_at = end;
        self.busy += wire;
        self.packets += 1;
        self.stall += accepted - at;
        // Waiting intervals come in order, so their union grows at the end.
        let from = accepted.max(self.occupied_until);
        self.occupied += start.saturating_sub(from);
        self.occupied_until = self.occupied_until.max(start);
        Departure {
            accepted,
            start,
            end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_serialize_and_a_full_lane_stalls_until_a_slot_frees() {
        let mut l = OutLink::default();
        let w = Cycles(40);
        let d0 = l.issue(Cycles(0), Lane::Request, w, Cycles(0), Cycles(0), 2);
        assert_eq!(
            d0,
            Departure {
                accepted: Cycles(0),
                start: Cycles(0),
                end: Cycles(40)
            }
        );
        let d1 = l.issue(Cycles(1), Lane::Request, w, Cycles(0), Cycles(0), 2);
        assert_eq!(d1.start, Cycles(40));
        let d2 = l.issue(Cycles(2), Lane::Request, w, Cycles(0), Cycles(0), 2);
        assert_eq!(d2.start, Cycles(80));
        // Wire busy, two waiting: the fourth waits for d1 to go on the wire.
        let d3 = l.issue(Cycles(3), Lane::Request, w, Cycles(0), Cycles(0), 2);
        assert_eq!(d3.accepted, Cycles(40));
        assert_eq!(d3.start, Cycles(120));
        assert_eq!(l.stall, Cycles(37));
        // The reply lane has its own slots: no stall, but it shares the wire.
        let r = l.issue(Cycles(40), Lane::Reply, Cycles(8), Cycles(0), Cycles(0), 2);
        assert_eq!(
            (r.accepted, r.start, r.end),
            (Cycles(40), Cycles(160), Cycles(168))
        );
    }

    #[test]
    fn a_packet_waits_for_its_data() {
        let mut l = OutLink::default();
        let d = l.issue(Cycles(5), Lane::Reply, Cycles(40), Cycles(19), Cycles(2), 2);
        assert_eq!(
            (d.accepted, d.start, d.end),
            (Cycles(5), Cycles(19), Cycles(59))
        );
        // The outbox stage: on the wire 3 cycles after the outbox took it.
        let d = l.issue(Cycles(60), Lane::Reply, Cycles(8), Cycles(0), Cycles(3), 2);
        assert_eq!((d.accepted, d.start), (Cycles(60), Cycles(63)));
    }

    /// The outbox as a list of the packets still waiting, per lane: what
    /// `issue` must agree with whenever packets come in time order.
    #[derive(Default)]
    struct Waiting {
        free_at: Cycles,
        lanes: [Vec<Cycles>; 2],
    }

    impl Waiting {
        fn issue(
            &mut self,
            at: Cycles,
            lane: Lane,
            wire: Cycles,
            ready: Cycles,
            stage: Cycles,
            slots: usize,
        ) -> Departure {
            let q = &mut self.lanes[lane as usize];
            q.retain(|s| *s > at);
            let mut accepted = at;
            if q.len() >= slots {
                accepted = q[q.len() - slots];
                q.retain(|s| *s > accepted);
            }
            let start = (accepted + stage).max(self.free_at).max(ready);
            if start > accepted {
                q.push(start);
            }
            self.free_at = start + wire;
            Departure {
                accepted,
                start,
                end: self.free_at,
            }
        }
    }

    #[test]
    fn the_last_starts_give_the_departures_a_list_of_waiting_packets_gives() {
        let mut lcg = 11u64;
        let mut draw = |m: u64| {
            lcg = lcg
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (lcg >> 33) % m
        };
        for slots in [1, 2, 3, 5] {
            let (mut l, mut w) = (OutLink::default(), Waiting::default());
            let mut at = Cycles(0);
            for _ in 0..5000 {
                let lane = if draw(4) == 0 {
                    Lane::Reply
                } else {
                    Lane::Request
                };
                let wire = Cycles(draw(3) * 20);
                let ready = at + Cycles(draw(4) * draw(30));
                let stage = Cycles(draw(2) * 3);
                let d = l.issue(at, lane, wire, ready, stage, slots);
                assert_eq!(d, w.issue(at, lane, wire, ready, stage, slots));
                // The PP goes on from when the outbox took the packet.
                at = d.accepted + Cycles(draw(3) * draw(25));
            }
        }
    }
}
