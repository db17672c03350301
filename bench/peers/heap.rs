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

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A packet reaches its destination: (source, message, packet, setup start).
    Arrive {
        src: u32,
        msg: u32,
        pkt: u32,
        start: u64,
    },
    /// A node's processor finishes its job.
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    at: u64,
    seq: u64,
    node: u32,
    kind: Kind,
}

/// An arrived packet: (arrival, source, message, packet, setup start), in
/// the order a processor serves them.
type Arrived = (u64, u32, u32, u32, u64);

/// What a processor is doing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Job {
    Idle,
    Setup,
    Send,
    /// A packet that found the outbox full, held until a slot frees.
    Held,
    Recv {
        last: bool,
        start: u64,
    },
}

struct Node {
    job: Job,
    /// Arrived packets, earliest first.
    inbox: BinaryHeap<Reverse<Arrived>>,
    msg: u32,
    pkt: u32,
    /// The message being sent: its destination and setup start; `None`
    /// before its setup.
    sending: Option<(u32, u64)>,
    lcg: u64,
    /// When each packet in the outbox leaves the wire.
    outbox: VecDeque<u64>,
    wire_free: u64,
}

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

/// One run of the workload.
pub struct Sim {
    nodes: Vec<Node>,
    heap: BinaryHeap<Reverse<Ev>>,
    seq: u64,
    msgs: u32,
    pattern: Pattern,
    /// When the last message completed.
    pub completion: u64,
    /// The sum of the messages' completion cycles.
    pub sum_completion: u64,
    /// The sum of completion minus setup start.
    pub sum_latency: u64,
}

impl Sim {
    /// `n` nodes sending `msgs` messages each.
    pub fn new(n: u32, msgs: u32, pattern: Pattern) -> Sim {
        let nodes = (0..n)
            .map(|i| Node {
                job: Job::Idle,
                inbox: BinaryHeap::new(),
                msg: 0,
                pkt: 0,
                sending: None,
                lcg: (i as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(1),
                outbox: VecDeque::with_capacity(OUTBOX),
                wire_free: 0,
            })
            .collect();
        Sim {
            nodes,
            heap: BinaryHeap::new(),
            seq: 0,
            msgs,
            pattern,
            completion: 0,
            sum_completion: 0,
            sum_latency: 0,
        }
    }

    fn at(&mut self, at: u64, node: u32, kind: Kind) {
        self.seq += 1;
        self.heap.push(Reverse(Ev {
            at,
            seq: self.seq,
            node,
            kind,
        }));
    }

    fn dest(&mut self, i: u32, j: u32) -> u32 {
        let n = self.nodes.len() as u32;
        match self.pattern {
            Pattern::Ring => (i + 1) % n,
            Pattern::Shift => (i + 1 + j % (n - 1)) % n,
            Pattern::Rand => {
                let x = &mut self.nodes[i as usize].lcg;
                *x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (i + 1 + ((*x >> 33) % (n as u64 - 1)) as u32) % n
            }
        }
    }

    /// Put node `i`'s finished packet into its outbox at `t`, or hold it.
    fn enqueue(&mut self, i: u32, t: u64) -> bool {
        let node = &mut self.nodes[i as usize];
        while node.outbox.front().is_some_and(|&e| e <= t) {
            node.outbox.pop_front();
        }
        if node.outbox.len() >= OUTBOX {
            // Held until the packet on the wire leaves it.
            let free = node.outbox[0];
            node.job = Job::Held;
            self.at(free, i, Kind::Done);
            return false;
        }
        let (to, start) = node.sending.expect("a message is being sent");
        let begin = t.max(node.wire_free);
        node.wire_free = begin + WIRE;
        node.outbox.push_back(node.wire_free);
        let (msg, pkt) = (node.msg, node.pkt);
        node.pkt += 1;
        if node.pkt == PACKETS {
            node.pkt = 0;
            node.msg += 1;
            node.sending = None;
        }
        self.at(
            begin + WIRE + LATENCY,
            to,
            Kind::Arrive {
                src: i,
                msg,
                pkt,
                start,
            },
        );
        true
    }

    /// The job node `i`'s processor finished at `t`.
    fn finish(&mut self, i: u32, t: u64) {
        match self.nodes[i as usize].job {
            Job::Setup | Job::Idle => {}
            Job::Send | Job::Held => {
                if !self.enqueue(i, t) {
                    return;
                }
            }
            Job::Recv { last, start } => {
                if last {
                    self.completion = self.completion.max(t);
                    self.sum_completion += t;
                    self.sum_latency += t - start;
                }
            }
        }
        self.nodes[i as usize].job = Job::Idle;
    }

    /// An idle processor picks its next job at `t`.
    fn pick(&mut self, i: u32, t: u64) {
        let node = &mut self.nodes[i as usize];
        if let Some(&Reverse((arr, _, _, pkt, start))) = node.inbox.peek() {
            if arr <= t {
                node.inbox.pop();
                let last = pkt + 1 == PACKETS;
                node.job = Job::Recv { last, start };
                let cost = RECV + if last { LAST } else { 0 };
                self.at(t + cost, i, Kind::Done);
                return;
            }
        }
        if node.msg == self.msgs {
            return;
        }
        if node.sending.is_none() {
            let j = node.msg;
            let to = self.dest(i, j);
            let node = &mut self.nodes[i as usize];
            node.sending = Some((to, t));
            node.job = Job::Setup;
            self.at(t + SETUP, i, Kind::Done);
        } else {
            node.job = Job::Send;
            self.at(t + SEND, i, Kind::Done);
        }
    }

    /// Run until every message is complete.
    pub fn run(&mut self) {
        let n = self.nodes.len() as u32;
        let mut touched: Vec<u32> = (0..n).collect();
        let mut t = 0;
        loop {
            // Every idle processor touched at `t` picks a job.
            touched.sort_unstable();
            touched.dedup();
            for &i in &touched {
                if self.nodes[i as usize].job == Job::Idle {
                    self.pick(i, t);
                }
            }
            touched.clear();
            let Some(&Reverse(first)) = self.heap.peek() else {
                break;
            };
            t = first.at;
            // Apply every event stamped `t`.
            while let Some(&Reverse(e)) = self.heap.peek() {
                if e.at != t {
                    break;
                }
                self.heap.pop();
                match e.kind {
                    Kind::Arrive {
                        src,
                        msg,
                        pkt,
                        start,
                    } => self.nodes[e.node as usize]
                        .inbox
                        .push(Reverse((t, src, msg, pkt, start))),
                    Kind::Done => self.finish(e.node, t),
                }
                touched.push(e.node);
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
    println!("{} {} {} {} {:.3}", out.0, out.1, out.2, events, best);
}
