//! The engine benchmark's workload as a plain event loop over a binary heap:
//! the bar flashkit's engine is measured against. Standard library only.
//!
//!     rustc -C opt-level=3 -o heap bench/peers/heap.rs
//!     ./heap NODES MSGS ring|shift|rand [REPS]
//!
//! prints `completion sum_completion sum_latency events wall_s` (the wall
//! time is the best of REPS runs, each from scratch).
//!
//! The workload (integer cycles): every node sends MSGS messages of 32
//! packets, all posted at cycle 0, one after another: set a message up (20
//! cycles of the node's protocol processor), then send its packets (12 each).
//! A packet goes into the outbox (the one on the wire plus two waiting); a
//! send that finds it full holds the processor until a slot frees. On the
//! wire 40 cycles, it arrives 22 later. Receiving takes 10 cycles, 16 more
//! for a message's last packet, whose end completes the message. A
//! processor serves arrived packets (by arrival, source, message, packet)
//! before its own work, and every event of a cycle is applied before any
//! idle processor picks its next job in it.
//!
//! How the loop is built. Nothing in a cycle depends on the order its events
//! are applied in (each touches one node's own state, or appends to an
//! inbox that keeps its own order), so the queue needs no sequence numbers:
//! an event is one `u64`, its cycle above the node and a bit for its kind.
//! A packet's times are known when it enters the outbox (its wire is a
//! FIFO), so it is not an event on the wire: the sender keeps its packets
//! until they arrive (at most four: three in the outbox, one in flight,
//! since the flight is shorter than the wire), and one event per packet,
//! named by the sender, hands the oldest to its destination. For the same
//! reason a send knows when it starts how long it will be held for a slot,
//! so its end is one event. Packets reach
//! an inbox in arrival order, so the inbox is a queue, sorted by source only
//! among the packets of one cycle.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

const PACKETS: u32 = 32;
const SETUP: u64 = 20;
const SEND: u64 = 12;
const RECV: u64 = 10;
const LAST: u64 = 16;
const WIRE: u64 = 40;
const LATENCY: u64 = 22;
const OUTBOX: usize = 3;
/// A sender's packets not yet arrived: the outbox and one in flight.
const KEPT: usize = 4;

/// The most cycles a run can take per message: if every job, wire and
/// flight of it came one after another.
const CYCLES_PER_MSG: u64 = SETUP + LAST + PACKETS as u64 * (SEND + WIRE + LATENCY + RECV);

/// How a node picks its messages' destinations.
#[derive(Clone, Copy)]
pub enum Pattern {
    /// The next node.
    Ring,
    /// The j-th message to the (1 + j mod (N - 1))-th next node.
    Shift,
    /// A per-node 64-bit LCG picks the distance.
    Rand,
}

/// What a processor is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Job {
    Idle,
    Setup,
    /// Sending a packet, and holding it at the send's end while the outbox
    /// is full.
    Send,
    Recv,
}

/// A packet between its sender's processor and its destination's inbox.
#[derive(Clone, Copy, Default)]
struct Packet {
    /// When it arrives (its end on the wire plus the flight).
    arrive: u64,
    /// Its message's setup start (the latency is measured from it).
    start: u64,
    /// The node it goes to, or (in an inbox) the node it came from.
    node: u32,
    /// Whether it is its message's last.
    last: bool,
}

struct Node {
    job: Job,
    /// On the list of nodes that pick a job at the end of this cycle.
    touched: bool,
    /// Whether the message `msg` is set up.
    set_up: bool,
    /// The packet being received: its message's last, and that message's start.
    recv_last: bool,
    recv_start: u64,
    /// Messages fully sent, and packets sent of the next.
    msg: u32,
    pkt: u32,
    /// The message being sent: destination and setup start.
    to: u32,
    start: u64,
    lcg: u64,
    /// When the wire is next free.
    wire_free: u64,
    /// Packets sent and not arrived, oldest first, in a ring.
    kept: [Packet; KEPT],
    kept_head: usize,
    kept_len: usize,
    /// Arrived packets not yet received, by (arrival, source).
    inbox: VecDeque<Packet>,
}

impl Node {
    /// When the outbox next has a free slot, seen at `t`: the outbox is full
    /// while its third-newest packet is on the wire.
    fn outbox_free(&self, t: u64) -> u64 {
        if self.kept_len < OUTBOX {
            return t;
        }
        let third = self.kept[(self.kept_head + self.kept_len - OUTBOX) % KEPT];
        t.max(third.arrive - LATENCY)
    }
}

/// One run of the workload.
pub struct Sim {
    nodes: Vec<Node>,
    /// Events, earliest first: `cycle << shift | node << 1 | kind`, kind 0
    /// for "the node's processor ends its job" and 1 for "the node's oldest
    /// kept packet arrives".
    queue: BinaryHeap<Reverse<u64>>,
    shift: u32,
    node_mask: u32,
    /// Nodes to pick a job at the end of this cycle.
    touched: Vec<u32>,
    msgs: u32,
    pattern: Pattern,
    /// When the last message completed.
    pub completion: u64,
    /// The sum of the messages' completion cycles.
    pub sum_completion: u64,
    /// The sum of completion minus setup start.
    pub sum_latency: u64,
}

const DONE: u64 = 0;
const ARRIVE: u64 = 1;

impl Sim {
    /// `n` nodes sending `msgs` messages each. Panics, saying why, where `n`
    /// is below 2 or the run's cycles could outgrow the queue's keys or the
    /// sums.
    pub fn new(n: u32, msgs: u32, pattern: Pattern) -> Sim {
        assert!(n >= 2, "the workload needs at least 2 nodes, got {}", n);
        if let Err(e) = Sim::fits(n, msgs) {
            panic!("{}", e);
        }
        let shift = 1 + (32 - (n - 1).leading_zeros());
        let nodes = (0..n)
            .map(|i| Node {
                job: Job::Idle,
                touched: true,
                set_up: false,
                recv_last: false,
                recv_start: 0,
                msg: 0,
                pkt: 0,
                to: 0,
                start: 0,
                lcg: (i as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(1),
                wire_free: 0,
                kept: [Packet::default(); KEPT],
                kept_head: 0,
                kept_len: 0,
                inbox: VecDeque::with_capacity(16),
            })
            .collect();
        Sim {
            nodes,
            queue: BinaryHeap::with_capacity(4 * n as usize),
            shift,
            node_mask: (1 << (shift - 1)) - 1,
            touched: (0..n).collect(),
            msgs,
            pattern,
            completion: 0,
            sum_completion: 0,
            sum_latency: 0,
        }
    }

    /// Whether `n` nodes sending `msgs` messages each fit the loop's
    /// integers: every cycle the run can reach below the queue key's cycle
    /// field, and the sum of completions below 2^64.
    pub fn fits(n: u32, msgs: u32) -> Result<(), String> {
        let shift = 1 + (32 - n.saturating_sub(1).leading_zeros());
        let total = n as u128 * msgs as u128;
        let cycles = total * CYCLES_PER_MSG as u128;
        if cycles >= 1u128 << (64 - shift) || total * cycles >= 1u128 << 64 {
            return Err(format!(
                "{n} nodes sending {msgs} messages each may outgrow the loop's 64-bit cycle keys and sums"
            ));
        }
        Ok(())
    }

    #[inline]
    fn at(&mut self, cycle: u64, node: u32, kind: u64) {
        self.queue
            .push(Reverse((cycle << self.shift) | ((node as u64) << 1) | kind));
    }

    fn dest(&mut self, i: u32) -> u32 {
        let n = self.nodes.len() as u32;
        let node = &mut self.nodes[i as usize];
        match self.pattern {
            Pattern::Ring => (i + 1) % n,
            Pattern::Shift => (i + 1 + node.msg % (n - 1)) % n,
            Pattern::Rand => {
                node.lcg = node
                    .lcg
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (i + 1 + ((node.lcg >> 33) % (n as u64 - 1)) as u32) % n
            }
        }
    }

    /// Node `i`'s processor ends its job at `t`.
    fn done(&mut self, i: u32, t: u64) {
        let node = &mut self.nodes[i as usize];
        match node.job {
            Job::Setup => node.set_up = true,
            Job::Send => {
                debug_assert!(
                    node.outbox_free(t) <= t,
                    "the send ended with the outbox full"
                );
                let begin = t.max(node.wire_free);
                node.wire_free = begin + WIRE;
                let last = node.pkt + 1 == PACKETS;
                debug_assert!(node.kept_len < KEPT);
                node.kept[(node.kept_head + node.kept_len) % KEPT] = Packet {
                    arrive: begin + WIRE + LATENCY,
                    start: node.start,
                    node: node.to,
                    last,
                };
                node.kept_len += 1;
                if last {
                    node.pkt = 0;
                    node.msg += 1;
                    node.set_up = false;
                } else {
                    node.pkt += 1;
                }
                self.at(begin + WIRE + LATENCY, i, ARRIVE);
            }
            Job::Recv => {
                if node.recv_last {
                    self.completion = self.completion.max(t);
                    self.sum_completion += t;
                    self.sum_latency += t - node.recv_start;
                }
            }
            Job::Idle => unreachable!("an idle processor has no job to end"),
        }
        let node = &mut self.nodes[i as usize];
        node.job = Job::Idle;
        if !node.touched {
            node.touched = true;
            self.touched.push(i);
        }
    }

    /// Node `i`'s oldest kept packet arrives at `t`.
    fn arrive(&mut self, i: u32, t: u64) {
        let sender = &mut self.nodes[i as usize];
        let p = sender.kept[sender.kept_head];
        sender.kept_head = (sender.kept_head + 1) % KEPT;
        sender.kept_len -= 1;
        debug_assert_eq!(p.arrive, t);
        let to = p.node;
        let node = &mut self.nodes[to as usize];
        // Among the packets of this cycle, by source.
        let mut at = node.inbox.len();
        while at > 0 && node.inbox[at - 1].arrive == t && node.inbox[at - 1].node > i {
            at -= 1;
        }
        node.inbox.insert(at, Packet { node: i, ..p });
        if node.job == Job::Idle && !node.touched {
            node.touched = true;
            self.touched.push(to);
        }
    }

    /// Every idle processor touched in cycle `t` picks its next job.
    fn pick(&mut self, t: u64) {
        let touched = std::mem::take(&mut self.touched);
        for &i in &touched {
            let node = &mut self.nodes[i as usize];
            node.touched = false;
            if node.job != Job::Idle {
                continue;
            }
            if let Some(p) = node.inbox.pop_front() {
                node.job = Job::Recv;
                node.recv_last = p.last;
                node.recv_start = p.start;
                self.at(t + RECV + if p.last { LAST } else { 0 }, i, DONE);
            } else if node.msg < self.msgs {
                if node.set_up {
                    // Held at its end until the outbox has a free slot;
                    // nothing but this processor changes the outbox, so when
                    // is known now.
                    node.job = Job::Send;
                    let ends = (t + SEND).max(node.outbox_free(t));
                    self.at(ends, i, DONE);
                } else {
                    let to = self.dest(i);
                    let node = &mut self.nodes[i as usize];
                    node.to = to;
                    node.start = t;
                    node.job = Job::Setup;
                    self.at(t + SETUP, i, DONE);
                }
            }
        }
        self.touched = touched;
        self.touched.clear();
    }

    /// Run until every message is complete.
    pub fn run(&mut self) {
        let mut t = 0;
        loop {
            match self.queue.peek() {
                Some(&Reverse(key)) if key >> self.shift == t => {
                    self.queue.pop();
                    let i = (key >> 1) as u32 & self.node_mask;
                    if key & 1 == DONE {
                        self.done(i, t);
                    } else {
                        self.arrive(i, t);
                    }
                }
                _ => {
                    // The cycle's events are applied: its idle processors pick.
                    self.pick(t);
                    match self.queue.peek() {
                        Some(&Reverse(key)) => t = key >> self.shift,
                        None => break,
                    }
                }
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: heap NODES MSGS ring|shift|rand [REPS]";
    if args.len() < 4 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let n: u32 = args[1].parse().unwrap_or(0);
    let m: u32 = args[2].parse().unwrap_or(0);
    let pattern = match args[3].as_str() {
        "ring" => Pattern::Ring,
        "shift" => Pattern::Shift,
        "rand" => Pattern::Rand,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let reps: u32 = args.get(4).and_then(|r| r.parse().ok()).unwrap_or(1);
    if n < 2 || m == 0 || reps == 0 {
        eprintln!("{usage} (NODES at least 2, MSGS and REPS at least 1)");
        std::process::exit(2);
    }
    if let Err(e) = Sim::fits(n, m) {
        eprintln!("heap: {e}");
        std::process::exit(2);
    }
    let mut best = f64::INFINITY;
    let mut out = (0, 0, 0);
    for _ in 0..reps {
        let clock = Instant::now();
        let mut s = Sim::new(n, m, pattern);
        s.run();
        best = best.min(clock.elapsed().as_secs_f64());
        out = (s.completion, s.sum_completion, s.sum_latency);
    }
    let events = n as u64 * m as u64 * (1 + 4 * PACKETS as u64);
    println!("{} {} {} {} {:.6}", out.0, out.1, out.2, events, best);
}
