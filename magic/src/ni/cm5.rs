//! The CM-5 network interface and its data networks.
//!
//! The NI sits on the memory bus: the processor composes a packet by
//! writing its words into a memory-mapped send FIFO and learns from a status
//! register whether the network took it; it receives by reading a status
//! register and then the words of the packet at the head of a receive FIFO.
//! Register reads cost 7 processor cycles, writes 3 (the software layer
//! charges them; this module keeps the state).
//!
//! Two disjoint data networks carry requests (left) and replies (right).
//! Each is a 4-ary fat tree: a packet climbs to the least common ancestor of
//! its ends and comes down, each router adding its delay, on top of a fixed
//! latency (injection, ejection, wires). Up-links are chosen at random, so
//! packets sent close together may overtake one another: each packet's delay
//! gets a random part, up to `path_jitter` (its mean is part of the fixed
//! latency, so the average round trip stays calibrated). The network holds a bounded
//! number of each sender's packets; when they are all in flight (the
//! receiver is not draining its FIFO), the NI drops the next outgoing packet
//! and the sender must try again.

use crate::error::OutOfRange;
use crate::ids::NodeId;
use crate::time::{Time, TICKS_PER_US};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Words in a packet: a handler address (or segment word) and four more.
pub const PACKET_WORDS: usize = 5;

/// The two data networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Net {
    /// Requests.
    Left = 0,
    /// Replies.
    Right = 1,
}

/// A packet on a CM-5 data network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The node that sent it.
    pub src: NodeId,
    /// The node it is for.
    pub dest: NodeId,
    /// The network it travels on.
    pub net: Net,
    /// Its five 32-bit words.
    pub words: [u32; PACKET_WORDS],
    /// When it is in the receiver's FIFO (ticks).
    pub arrives: Time,
}

/// Hardware parameters: the processor's costs in 33 MHz processor cycles,
/// the networks' times in ticks (see [`Time`]; 26 400 a microsecond). Each
/// field's default is in parentheses, its allowed range after it
/// ([`Cm5Params::validate`]; every network build calls it).
///
/// A scenario's table of them: every field may be set, an omitted one keeps
/// its default, an unknown key is an error naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cm5Params {
    /// An NI register read, in 33 MHz processor cycles (7; from 0 to
    /// 1 000 000).
    pub ni_read: u64,
    /// An NI register write, in 33 MHz processor cycles (3; from 0 to
    /// 1 000 000).
    pub ni_write: u64,
    /// A cached load, in 33 MHz processor cycles (2; from 0 to 1 000 000).
    pub load: u64,
    /// A cached store, in 33 MHz processor cycles (3; from 0 to 1 000 000).
    pub store: u64,
    /// One router chip, one way (0.25 us; from 0 to 10 ms, [`MAX_TIME`]).
    pub router_delay: Time,
    /// One-way latency besides the routers (2.125 us: 3.5 us to the far side
    /// of 64 nodes, less five routers and the mean random part; from 0 to
    /// 10 ms).
    pub fixed_latency: Time,
    /// The spread of path delays, random up-links (0.25 us; from 0 to 10 ms).
    pub path_jitter: Time,
    /// Packets of one sender the network holds, per network (8; from 1 to
    /// 1 048 576).
    pub capacity: usize,
    /// How long a packet holds each link it crosses (2.4 us: six words at
    /// 10 MB/s; zero: no contention; from 0 to 10 ms).
    pub link_time: Time,
    /// Seed of the up-link choices (1; any).
    pub seed: u64,
    /// A run's budget of simulated time: an Active Message run on this
    /// machine that has not finished by then stops, not clean, naming this
    /// key (100 s, [`DEFAULT_RUN_TIME`], some 300 times the
    /// longest benchmark's; from 1 tick to 10 000 s,
    /// [`MAX_RUN_TIME`]). A setting of the run, not of the hardware.
    pub budget: Time,
    /// A run's budget of events: the scheduler's steps and the packets
    /// handed to the network, per node of the machine (1 000 000,
    /// [`DEFAULT_EVENTS`], some 15 times what the busiest
    /// benchmark takes; from 1 to 10^8, [`MAX_EVENTS`]). A run
    /// past it stops as at its time budget: it bounds the wall time of a
    /// run whose simulated time creeps (a sender retrying every poll into a
    /// full network, a storm of keep-alives).
    pub event_budget: u64,
}

/// A run's simulated-time budget on the CM-5 or the SP unless set
/// (`budget` in [`Cm5Params`] and `SpParams`): 100 s.
pub const DEFAULT_RUN_TIME: Time = Time(TICKS_PER_US * 100_000_000);

/// The largest simulated-time budget a run may be given: 10 000 s.
pub const MAX_RUN_TIME: Time = Time(TICKS_PER_US * 10_000_000_000);

/// A run's event budget per node on the CM-5 or the SP unless set
/// (`event_budget`): 1 000 000 scheduler steps and packets a node. The
/// busiest benchmark takes some 64 000 a node on the smallest machine it
/// runs on (CMAML's suite on 3 nodes), 4 600 on 1024; a run with 1% of
/// the SP's packets dropped, 110 000 on 4.
pub const DEFAULT_EVENTS: u64 = 1_000_000;

/// The largest event budget per node a run may be given: 10^8.
pub const MAX_EVENTS: u64 = 100_000_000;

/// `Err` unless the run budgets are in their ranges.
pub(crate) fn check_budgets(budget: Time, events: u64) -> Result<(), OutOfRange> {
    if budget == Time::ZERO || budget > MAX_RUN_TIME {
        let allowed = format!("from 1 to {} ticks (10 000 s)", MAX_RUN_TIME.0);
        return Err(OutOfRange::new("budget", allowed, budget.0));
    }
    OutOfRange::check("event_budget", events, 1, MAX_EVENTS)
}

/// The longest time a CM-5 or SP parameter may hold: 10 ms (264 000 000
/// ticks), far beyond the hardware's microseconds and small enough that no
/// run's arithmetic comes near overflowing.
pub const MAX_TIME: Time = Time(TICKS_PER_US * 10_000);

/// The most processor cycles a cost may hold: the one cap of every cost,
/// [`crate::params::MAX_COST`].
pub const MAX_COST: u64 = crate::params::MAX_COST;

/// The most packets of one sender the network may hold.
pub const MAX_CAPACITY: usize = 1 << 20;

/// The most nodes a CM-5 (or SP) model may have.
pub const MAX_NODES: u32 = 1 << 16;

/// `Err` unless the machine has from 2 to [`MAX_NODES`] nodes.
pub(crate) fn check_nodes(nodes: u32) -> Result<(), OutOfRange> {
    OutOfRange::check("nodes", nodes, 2, MAX_NODES)
}

/// `Err` unless `t` is from 0 to [`MAX_TIME`] (the message in ticks).
pub(crate) fn check_time(field: &'static str, t: Time) -> Result<(), OutOfRange> {
    OutOfRange::check(field, t.0, 0, MAX_TIME.0).map_err(|mut e| {
        e.allowed.push_str(" ticks (10 ms)");
        e
    })
}

impl Default for Cm5Params {
    fn default() -> Self {
        let router = Time(TICKS_PER_US / 4);
        Cm5Params {
            ni_read: 7,
            ni_write: 3,
            load: 2,
            store: 3,
            router_delay: router,
            // Round trip to node 63 (three levels up: 5 routers each way) is
            // 7 us: 3.5 us one way, of which the routers are 1.25 and the
            // random part half a router delay on average.
            fixed_latency: Time(TICKS_PER_US * 7 / 2 - 5 * router.0 - router.0 / 2),
            path_jitter: router,
            capacity: 8,
            // Published: each wire carries 10 MB/s (a node's two wires give
            // the 20 MB/s of nearby traffic). Model choice: a packet is its
            // five words plus one word of route, tag and CRC on the wire.
            link_time: Time(TICKS_PER_US * (4 * (PACKET_WORDS as u64 + 1)) / 10),
            seed: 1,
            budget: DEFAULT_RUN_TIME,
            event_budget: DEFAULT_EVENTS,
        }
    }
}

impl Cm5Params {
    /// Check every field against its documented range; the error names
    /// the first one out of it.
    ///
    /// ```
    /// use magic::ni::cm5::Cm5Params;
    /// let e = Cm5Params { capacity: 0, ..Cm5Params::default() }.validate().unwrap_err();
    /// assert_eq!(e.to_string(), "capacity must be from 1 to 1048576, got 0");
    /// ```
    pub fn validate(&self) -> Result<(), OutOfRange> {
        OutOfRange::check("ni_read", self.ni_read, 0, MAX_COST)?;
        OutOfRange::check("ni_write", self.ni_write, 0, MAX_COST)?;
        OutOfRange::check("load", self.load, 0, MAX_COST)?;
        OutOfRange::check("store", self.store, 0, MAX_COST)?;
        check_time("router_delay", self.router_delay)?;
        check_time("fixed_latency", self.fixed_latency)?;
        check_time("path_jitter", self.path_jitter)?;
        OutOfRange::check("capacity", self.capacity, 1, MAX_CAPACITY)?;
        check_time("link_time", self.link_time)?;
        check_budgets(self.budget, self.event_budget)?;
        // A message takes some time, so a node waiting for one moves on.
        if self.fixed_latency == Time::ZERO && self.router_delay == Time::ZERO {
            return Err(OutOfRange::new(
                "fixed_latency",
                "above 0 when router_delay is 0",
                self.fixed_latency.0,
            ));
        }
        Ok(())
    }
}

/// Counters of the networks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetStats {
    /// Packets the networks took (the dropped ones are not counted here).
    pub sent: u64,
    /// Outgoing packets the NI dropped because the network was full.
    pub dropped: u64,
    /// Packets taken from a receive FIFO.
    pub delivered: u64,
    /// Packets that arrived before one sent earlier on the same path.
    pub overtaken: u64,
}

/// The NIs of all nodes and the two networks between them.
pub struct Cm5Network {
    params: Cm5Params,
    nodes: u32,
    rng: fastrand::Rng,
    /// Per destination and network: packets on their way or in the receive
    /// FIFO, in arrival order.
    fifo: Vec<[VecDeque<Packet>; 2]>,
    /// Per source and network: packets the network holds.
    held: Vec<[usize; 2]>,
    /// Per (source, destination): the latest arrival so far (for counting
    /// overtaking).
    last: hashbrown::HashMap<(u32, u32), Time>,
    /// When each link is free: per network, then per boundary level, up
    /// then down, per subtree and link (offsets in `link_at`).
    links: Vec<Time>,
    /// Per boundary level: (first slot of the up links, of the down links).
    link_at: Vec<(usize, usize)>,
    /// Slots one network's links take.
    per_net: usize,
    /// Counters since the networks were built.
    pub stats: NetStats,
}

/// Links leaving a subtree whose root is at `level` (0: a node): a node has
/// two, routers of levels 1 and 2 two parents each, higher ones four.
/// (Saturating: a level beyond any machine's counts `usize::MAX`.)
pub fn up_links(level: u32) -> usize {
    match level {
        0..=2 => 2 << level,
        _ => 4usize
            .checked_pow(level - 2)
            .and_then(|k| k.checked_mul(8))
            .unwrap_or(usize::MAX),
    }
}

impl Cm5Network {
    /// The NIs and networks of a machine of `nodes` nodes; an error naming
    /// the parameter out of range, or `nodes` if not from 2 to [`MAX_NODES`].
    pub fn new(params: Cm5Params, nodes: u32) -> Result<Cm5Network, OutOfRange> {
        params.validate()?;
        check_nodes(nodes)?;
        let top = Self::level(NodeId(0), NodeId(nodes - 1));
        let mut link_at = Vec::new();
        let mut slots = 0;
        for l in 0..top {
            let subtrees = (nodes as usize).div_ceil(4usize.pow(l));
            let k = subtrees * up_links(l);
            link_at.push((slots, slots + k));
            slots += 2 * k;
        }
        Ok(Cm5Network {
            params,
            nodes,
            rng: fastrand::Rng::with_seed(params.seed),
            fifo: (0..nodes).map(|_| Default::default()).collect(),
            held: vec![[0; 2]; nodes as usize],
            last: hashbrown::HashMap::new(),
            links: vec![Time::ZERO; 2 * slots],
            link_at,
            per_net: slots,
            stats: NetStats::default(),
        })
    }

    /// The hardware parameters.
    pub fn params(&self) -> &Cm5Params {
        &self.params
    }

    /// Nodes in the machine.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The level of the two nodes' least common ancestor (1: the same group
    /// of four).
    pub fn level(a: NodeId, b: NodeId) -> u32 {
        let (mut x, mut y, mut l) = (a.0, b.0, 0);
        while x != y {
            x /= 4;
            y /= 4;
            l += 1;
        }
        l
    }

    /// One-way latency without the random part: routers up to the common
    /// ancestor and down again.
    pub fn latency(&self, a: NodeId, b: NodeId) -> Time {
        let routers = (2 * Self::level(a, b)).saturating_sub(1) as u64;
        Time(self.params.fixed_latency.0) + Time(routers * self.params.router_delay.0)
    }

    /// The NI offers a packet to the network at `now`; `false` if the
    /// network is full and the packet is dropped (so is one from or to a
    /// node the machine does not have).
    pub fn inject(
        &mut self,
        now: Time,
        src: NodeId,
        dest: NodeId,
        net: Net,
        words: [u32; PACKET_WORDS],
    ) -> bool {
        self.inject_delayed(now, src, dest, net, words, Time::ZERO)
    }

    /// As `inject`, the packet taking `extra` longer than its path would
    /// (an experiment that needs a known arrival order sets it).
    pub fn inject_delayed(
        &mut self,
        now: Time,
        src: NodeId,
        dest: NodeId,
        net: Net,
        words: [u32; PACKET_WORDS],
        extra: Time,
    ) -> bool {
        let (s, d, n) = (src.0 as usize, dest.0 as usize, net as usize);
        if d >= self.fifo.len() || s >= self.held.len() || self.held[s][n] >= self.params.capacity {
            self.stats.dropped += 1;
            return false;
        }
        let queued = self.book_links(now, src, dest, net);
        let jitter = self.rng.u64(0..=self.params.path_jitter.0);
        let arrives = now + self.latency(src, dest) + Time(jitter) + extra + queued;
        let last = self.last.entry((src.0, dest.0)).or_insert(Time::ZERO);
        if arrives < *last {
            self.stats.overtaken += 1;
        }
        *last = (*last).max(arrives);
        let q = &mut self.fifo[d][n];
        let at = q.partition_point(|p| p.arrives <= arrives);
        q.insert(
            at,
            Packet {
                src,
                dest,
                net,
                words,
                arrives,
            },
        );
        self.held[s][n] += 1;
        self.stats.sent += 1;
        true
    }

    /// Book the links of a packet's path from `now`: up at random, down the
    /// one way from the top router it reached. Returns the time it waited
    /// for busy links.
    fn book_links(&mut self, now: Time, src: NodeId, dest: NodeId, net: Net) -> Time {
        let hold = self.params.link_time.0;
        if hold == 0 {
            return Time::ZERO;
        }
        let top = Self::level(src, dest);
        let router = self.params.router_delay.0;
        let base = net as usize * self.per_net;
        // Crossing `hop` is due `hop` router delays after injection, plus
        // what the packet waited so far.
        let mut waited = 0;
        let cross = |links: &mut [Time], waited: &mut u64, hop: u64| {
            let due = now.0.saturating_add(hop * router).saturating_add(*waited);
            let start = due.max(links[0].0);
            links[0] = Time(start.saturating_add(hold));
            *waited += start - due;
        };
        let mut choice = 0;
        for l in 0..top {
            let k = up_links(l);
            let first = base + self.link_at[l as usize].0 + ((src.0 as usize) >> (2 * l)) * k;
            // At random among the links free when the packet gets there;
            // if none is, the one that frees first.
            let due = now
                .0
                .saturating_add(l as u64 * router)
                .saturating_add(waited);
            let pool = &self.links[first..first + k];
            let free = pool.iter().filter(|t| t.0 <= due).count();
            choice = if free == 0 {
                (0..k).min_by_key(|&i| pool[i]).unwrap_or(0)
            } else {
                let r = self.rng.usize(0..free);
                (0..k).filter(|&i| pool[i].0 <= due).nth(r).unwrap_or(0)
            };
            cross(&mut self.links[first + choice..], &mut waited, l as u64);
        }
        for l in (0..top).rev() {
            let k = up_links(l);
            let first = base + self.link_at[l as usize].1 + ((dest.0 as usize) >> (2 * l)) * k;
            let hop = (2 * top - 1 - l) as u64;
            cross(&mut self.links[first + choice % k..], &mut waited, hop);
        }
        Time(waited)
    }

    /// The receive status register: a packet is at the head of the FIFO
    /// (never, at a node the machine does not have).
    pub fn ready(&self, node: NodeId, net: Net, now: Time) -> bool {
        self.fifo
            .get(node.0 as usize)
            .is_some_and(|f| f[net as usize].front().is_some_and(|p| p.arrives <= now))
    }

    /// Take the packet at the head of the receive FIFO.
    pub fn receive(&mut self, node: NodeId, net: Net, now: Time) -> Option<Packet> {
        if !self.ready(node, net, now) {
            return None;
        }
        let p = self.fifo[node.0 as usize][net as usize].pop_front()?;
        self.held[p.src.0 as usize][net as usize] -= 1;
        self.stats.delivered += 1;
        Some(p)
    }

    /// When the last packet on its way to `node` arrives, if any.
    pub fn last_arrival(&self, node: NodeId) -> Option<Time> {
        self.fifo
            .get(node.0 as usize)?
            .iter()
            .filter_map(|q| q.back().map(|p| p.arrives))
            .max()
    }

    /// When the next packet reaches `node` on either network, if any is on
    /// its way.
    pub fn next_arrival(&self, node: NodeId) -> Option<Time> {
        self.fifo
            .get(node.0 as usize)?
            .iter()
            .filter_map(|q| q.front().map(|p| p.arrives))
            .min()
    }

    /// Packets on their way or waiting in FIFOs.
    pub fn in_flight(&self) -> usize {
        self.fifo.iter().flatten().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_steps_up_at_nodes_4_and_16() {
        let n = Cm5Network::new(Cm5Params::default(), 64).unwrap();
        let l = |b| n.latency(NodeId(0), NodeId(b));
        assert_eq!(l(1), l(3));
        assert!(l(4) > l(3) && l(4) == l(15));
        assert!(l(16) > l(15) && l(16) == l(63));
        // Two router delays per level.
        assert_eq!(l(4).0 - l(3).0, 2 * TICKS_PER_US / 4);
        // The round trip to node 63 is 7 us with the average random part.
        let jitter = Cm5Params::default().path_jitter.0;
        assert_eq!(2 * l(63).0 + jitter, 7 * TICKS_PER_US);
    }

    #[test]
    fn a_full_network_drops_the_outgoing_packet_until_the_receiver_drains() {
        let p = Cm5Params {
            capacity: 2,
            ..Cm5Params::default()
        };
        let mut n = Cm5Network::new(p, 4).unwrap();
        let (a, b) = (NodeId(0), NodeId(1));
        assert!(n.inject(Time(0), a, b, Net::Left, [1; 5]));
        assert!(n.inject(Time(0), a, b, Net::Left, [2; 5]));
        assert!(!n.inject(Time(0), a, b, Net::Left, [3; 5]));
        // The other network is separate.
        assert!(n.inject(Time(0), a, b, Net::Right, [4; 5]));
        let later = Time(100 * TICKS_PER_US);
        assert!(n.receive(b, Net::Left, later).is_some());
        assert!(n.inject(later, a, b, Net::Left, [3; 5]));
        assert_eq!(n.stats.dropped, 1);
    }

    #[test]
    fn packets_sent_back_to_back_may_arrive_out_of_order() {
        let mut n = Cm5Network::new(
            Cm5Params {
                capacity: 1000,
                ..Cm5Params::default()
            },
            64,
        )
        .unwrap();
        for i in 0..200u32 {
            // 0.12 us apart: closer than the spread of path delays.
            let t = Time(i as u64 * 800 * 4);
            assert!(n.inject(t, NodeId(0), NodeId(63), Net::Left, [i; 5]));
        }
        assert!(n.stats.overtaken > 0);
        // The FIFO hands them over in arrival order, every one exactly once.
        let mut seen = Vec::new();
        while let Some(p) = n.receive(NodeId(63), Net::Left, Time(u64::MAX / 2)) {
            seen.push(p.words[0]);
        }
        seen.sort();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
    }

    /// Every node of a 16-node subtree sends to a partner `step` away, a
    /// packet every microsecond; the per-node rate the tree sustains.
    fn sustained_us_per_packet(step: u32) -> f64 {
        let p = Cm5Params {
            capacity: MAX_CAPACITY,
            ..Cm5Params::default()
        };
        let mut n = Cm5Network::new(p, 64).unwrap();
        let k = 200u64;
        for i in 0..k {
            for s in 0..16u32 {
                let t = Time(i * TICKS_PER_US);
                assert!(n.inject(t, NodeId(s), NodeId(s ^ step), Net::Left, [0; 5]));
            }
        }
        let last = (0..64).filter_map(|d| n.last_arrival(NodeId(d))).max();
        last.unwrap().as_us() / k as f64
    }

    #[test]
    fn the_incomplete_tree_halves_the_rate_per_node_above_each_of_its_first_levels() {
        let wire = Cm5Params::default().link_time.as_us();
        assert!((wire - 2.4).abs() < 1e-9, "{wire}");
        // Two wires per node: a packet every 1.2 us within a group of four
        // (the senders offer one a microsecond); one every 2.4 us out of
        // it; one every 4.8 us out of a group of sixteen.
        let near = sustained_us_per_packet(1);
        let mid = sustained_us_per_packet(4);
        let far = sustained_us_per_packet(32);
        assert!(near < 1.5, "{near}");
        assert!((2.4..2.9).contains(&mid), "{mid}");
        assert!((4.8..5.6).contains(&far), "{far}");
        assert_eq!(up_links(3), 32);
        assert_eq!((0..5).map(up_links).collect::<Vec<_>>(), [2, 4, 8, 32, 128]);
        assert_eq!(up_links(u32::MAX), usize::MAX);
    }

    #[test]
    fn a_quiet_tree_adds_no_waiting() {
        let p = Cm5Params {
            path_jitter: Time::ZERO,
            capacity: 100,
            ..Cm5Params::default()
        };
        let mut n = Cm5Network::new(p, 64).unwrap();
        let lat = n.latency(NodeId(0), NodeId(63));
        for i in 0..20u64 {
            let t = Time(i * 10 * TICKS_PER_US);
            n.inject(t, NodeId(0), NodeId(63), Net::Left, [0; 5]);
            assert_eq!(n.last_arrival(NodeId(63)), Some(t + lat));
        }
    }
}
