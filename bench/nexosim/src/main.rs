//! The engine benchmark's workload as ordinary user code of nexosim 1.0, the
//! Rust discrete-event framework, on one thread: a peer of flashkit's engine.
//!
//!     cargo build --release --manifest-path bench/nexosim/Cargo.toml
//!     bench/nexosim/target/release/flashkit-nexosim-peer NODES MSGS ring|shift|rand [REPS]
//!
//! prints `completion sum_completion sum_latency events wall_s`, as
//! bench/peers/heap.rs does (the wall time is the best of REPS runs of
//! `Simulation::run`, each from a new bench). The workload is the one that
//! heads heap.rs; one cycle is one nanosecond of simulated time.
//!
//! The bench: one `Node` model per node, holding its protocol processor,
//! outbox, wire and inbox; node i's `links[j]` output goes to node j's
//! `receive` input. A processor's jobs are events it schedules on itself.
//! A sender works out its wire when a packet enters the outbox (the wire is
//! a FIFO, so nothing else can change it), and so how long a send that finds
//! the outbox full is held; the packet goes to its destination as it enters
//! the outbox, carrying its arrival cycle, and waits in that node's inbox
//! until then. A processor picks its next job as soon as it ends one: every
//! packet that can have arrived by then is already in its inbox (it was sent
//! at least a wire and a flight earlier), which is what "every event of a
//! cycle is applied before an idle processor picks" asks. A processor with
//! nothing to do sleeps until its inbox's earliest packet arrives.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use nexosim::model::{schedulable, Context, Model};
use nexosim::ports::{Output, QuerySource};
use nexosim::simulation::{Mailbox, QueryId, SimInit};
use nexosim::time::MonotonicTime;
use serde::{Deserialize, Serialize};

const PACKETS: u32 = 32;
const SETUP: u64 = 20;
const SEND: u64 = 12;
const RECV: u64 = 10;
const LAST: u64 = 16;
const WIRE: u64 = 40;
const LATENCY: u64 = 22;
/// Packets the outbox holds: the one on the wire and two waiting.
const OUTBOX: usize = 3;
/// The most cycles a run can take per message: every job, wire and flight
/// of it one after another.
const CYCLES_PER_MSG: u64 = SETUP + LAST + PACKETS as u64 * (SEND + WIRE + LATENCY + RECV);

/// How a node picks its messages' destinations.
#[derive(Clone, Copy, Serialize, Deserialize)]
pub enum Pattern {
    /// The next node.
    Ring,
    /// The j-th message to the (1 + j mod (N - 1))-th next node.
    Shift,
    /// A per-node 64-bit LCG picks the distance.
    Rand,
}

/// A packet on its way to a node's inbox. Ordered by arrival, then source:
/// a source's packets arrive at least a wire apart, so no two compare equal.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Packet {
    /// The cycle it arrives.
    arrive: u64,
    /// The node that sent it.
    src: u32,
    /// Whether it is its message's last.
    last: bool,
    /// When its message's setup began.
    start: u64,
}

/// What a node's processor is doing.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Job {
    Idle,
    Setup,
    /// Sending a packet, held at its end while the outbox is full.
    Send,
    Recv {
        last: bool,
        start: u64,
    },
}

/// What a node has seen complete, read once the run is over.
#[derive(Clone, Copy, Default)]
pub struct Tally {
    messages: u64,
    completion: u64,
    sum_completion: u64,
    sum_latency: u64,
}

/// One node: its processor, outbox and wire, and inbox.
#[derive(Serialize, Deserialize)]
pub struct Node {
    id: u32,
    nodes: u32,
    msgs: u32,
    pattern: Pattern,
    job: Job,
    /// Messages fully sent, and packets sent of the next.
    sent: u32,
    pkt: u32,
    set_up: bool,
    /// The message being sent: its destination and setup start.
    to: u32,
    start: u64,
    lcg: u64,
    /// When each of the last three packets leaves the wire (older ones left
    /// before them), and which of the three is the oldest.
    wire_ends: [u64; OUTBOX],
    oldest: usize,
    /// Packets sent here, earliest arrival first.
    inbox: BinaryHeap<Reverse<Packet>>,
    /// The earliest wake-up this node has asked for, if any.
    wake: Option<u64>,
    messages: u64,
    completion: u64,
    sum_completion: u64,
    sum_latency: u64,
    /// To each node (the node's own is left unconnected).
    pub links: Vec<Output<Packet>>,
}

/// The current cycle.
fn now<M: Model>(cx: &Context<M>) -> u64 {
    cx.time().duration_since(MonotonicTime::EPOCH).as_nanos() as u64
}

impl Node {
    /// Node `id` of `nodes`, sending `msgs` messages.
    pub fn new(id: u32, nodes: u32, msgs: u32, pattern: Pattern) -> Node {
        Node {
            id,
            nodes,
            msgs,
            pattern,
            job: Job::Idle,
            sent: 0,
            pkt: 0,
            set_up: false,
            to: 0,
            start: 0,
            lcg: (id as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(1),
            wire_ends: [0; OUTBOX],
            oldest: 0,
            inbox: BinaryHeap::new(),
            wake: None,
            messages: 0,
            completion: 0,
            sum_completion: 0,
            sum_latency: 0,
            links: (0..nodes).map(|_| Output::new()).collect(),
        }
    }

    /// The destination of the next message.
    fn destination(&mut self) -> u32 {
        let (i, n) = (self.id, self.nodes);
        match self.pattern {
            Pattern::Ring => (i + 1) % n,
            Pattern::Shift => (i + 1 + self.sent % (n - 1)) % n,
            Pattern::Rand => {
                self.lcg = self
                    .lcg
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (i + 1 + ((self.lcg >> 33) % (n as u64 - 1)) as u32) % n
            }
        }
    }

    /// The idle processor picks its next job at cycle `t`: an arrived packet
    /// before its own work; with neither, it sleeps until the next arrival.
    fn pick(&mut self, t: u64, cx: &Context<Self>) {
        let head = self.inbox.peek().map(|p| p.0);
        let (job, ends) = match head {
            Some(p) if p.arrive <= t => {
                self.inbox.pop();
                let cost = RECV + if p.last { LAST } else { 0 };
                (
                    Job::Recv {
                        last: p.last,
                        start: p.start,
                    },
                    t + cost,
                )
            }
            _ if self.sent < self.msgs => {
                if self.set_up {
                    // Held at its end until the oldest of the last three
                    // packets has left the wire.
                    (Job::Send, (t + SEND).max(self.wire_ends[self.oldest]))
                } else {
                    self.to = self.destination();
                    self.start = t;
                    (Job::Setup, t + SETUP)
                }
            }
            Some(p) => {
                if self.wake.is_none_or(|w| w > p.arrive) {
                    self.wake = Some(p.arrive);
                    cx.schedule_event(
                        Duration::from_nanos(p.arrive - t),
                        schedulable!(Self::wake_up),
                        (),
                    )
                    .unwrap();
                }
                return;
            }
            None => return,
        };
        self.job = job;
        cx.schedule_event(
            Duration::from_nanos(ends - t),
            schedulable!(Self::job_done),
            (),
        )
        .unwrap();
    }
}

#[Model]
impl Node {
    #[nexosim(init)]
    async fn init(&mut self, cx: &Context<Self>) {
        self.pick(0, cx);
    }

    /// A packet sent here: it waits in the inbox until it arrives.
    pub fn receive(&mut self, p: Packet, cx: &Context<Self>) {
        self.inbox.push(Reverse(p));
        if self.job == Job::Idle && self.wake.is_none_or(|w| w > p.arrive) {
            self.wake = Some(p.arrive);
            let t = now(cx);
            cx.schedule_event(
                Duration::from_nanos(p.arrive - t),
                schedulable!(Self::wake_up),
                (),
            )
            .unwrap();
        }
    }

    /// A packet reaches a sleeping processor.
    #[nexosim(schedulable)]
    async fn wake_up(&mut self, _: (), cx: &Context<Self>) {
        let t = now(cx);
        if self.wake == Some(t) {
            self.wake = None;
        }
        if self.job == Job::Idle {
            self.pick(t, cx);
        }
    }

    /// The processor's job ends.
    #[nexosim(schedulable)]
    async fn job_done(&mut self, _: (), cx: &Context<Self>) {
        let t = now(cx);
        match self.job {
            Job::Setup => self.set_up = true,
            Job::Send => {
                let begin = t.max(self.wire_ends[(self.oldest + OUTBOX - 1) % OUTBOX]);
                self.wire_ends[self.oldest] = begin + WIRE;
                self.oldest = (self.oldest + 1) % OUTBOX;
                let last = self.pkt + 1 == PACKETS;
                let p = Packet {
                    arrive: begin + WIRE + LATENCY,
                    src: self.id,
                    last,
                    start: self.start,
                };
                if last {
                    self.pkt = 0;
                    self.sent += 1;
                    self.set_up = false;
                } else {
                    self.pkt += 1;
                }
                self.links[self.to as usize].send(p).await;
            }
            Job::Recv { last, start } => {
                if last {
                    self.messages += 1;
                    self.completion = self.completion.max(t);
                    self.sum_completion += t;
                    self.sum_latency += t - start;
                }
            }
            Job::Idle => unreachable!("an idle processor has no job to end"),
        }
        self.job = Job::Idle;
        self.pick(t, cx);
    }

    /// What this node has seen complete.
    pub async fn tally(&mut self) -> Tally {
        Tally {
            messages: self.messages,
            completion: self.completion,
            sum_completion: self.sum_completion,
            sum_latency: self.sum_latency,
        }
    }
}

/// One run from a new bench: the summed tally and the wall time of
/// `Simulation::run`.
fn run(n: u32, m: u32, pattern: Pattern) -> (Tally, f64) {
    let mut nodes: Vec<Node> = (0..n).map(|i| Node::new(i, n, m, pattern)).collect();
    let mailboxes: Vec<Mailbox<Node>> = (0..n).map(|_| Mailbox::new()).collect();
    for (i, node) in nodes.iter_mut().enumerate() {
        for (j, mailbox) in mailboxes.iter().enumerate() {
            if i != j {
                node.links[j].connect(Node::receive, mailbox);
            }
        }
    }
    let mut bench = SimInit::with_num_threads(1);
    let tallies: Vec<QueryId<(), Tally>> = mailboxes
        .iter()
        .map(|mailbox| {
            QuerySource::new()
                .connect(Node::tally, mailbox)
                .register(&mut bench)
        })
        .collect();
    for (i, (node, mailbox)) in nodes.into_iter().zip(mailboxes).enumerate() {
        bench = bench.add_model(node, mailbox, &format!("node{i}"));
    }
    let mut simu = bench
        .init(MonotonicTime::EPOCH)
        .expect("the bench initializes");
    let clock = Instant::now();
    simu.run().expect("the run completes");
    let wall = clock.elapsed().as_secs_f64();
    let mut total = Tally::default();
    for id in &tallies {
        let t = simu.process_query(id, ()).expect("a node answers");
        total.messages += t.messages;
        total.completion = total.completion.max(t.completion);
        total.sum_completion += t.sum_completion;
        total.sum_latency += t.sum_latency;
    }
    (total, wall)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: flashkit-nexosim-peer NODES MSGS ring|shift|rand [REPS]";
    let refuse = |why: &str| -> ! {
        eprintln!("{usage}\n{why}");
        std::process::exit(2)
    };
    if args.len() < 4 || args.len() > 5 {
        refuse("three or four arguments");
    }
    let n: u32 = args[1].parse().unwrap_or(0);
    let m: u32 = args[2].parse().unwrap_or(0);
    let pattern = match args[3].as_str() {
        "ring" => Pattern::Ring,
        "shift" => Pattern::Shift,
        "rand" => Pattern::Rand,
        _ => refuse("PATTERN is ring, shift or rand"),
    };
    let reps: u32 = args.get(4).map_or(Some(1), |r| r.parse().ok()).unwrap_or(0);
    if n < 2 || m == 0 || reps == 0 {
        refuse("NODES at least 2, MSGS and REPS at least 1");
    }
    // Cycles are nanoseconds of a 64-bit count, and the sums are 64-bit.
    let total = n as u128 * m as u128;
    let cycles = total * CYCLES_PER_MSG as u128;
    if cycles >= 1 << 62 || total * cycles >= 1 << 64 {
        refuse("NODES x MSGS too large for 64-bit cycles and sums");
    }
    let mut best = f64::INFINITY;
    let mut out = Tally::default();
    for _ in 0..reps {
        let (tally, wall) = run(n, m, pattern);
        if tally.messages != total as u64 {
            eprintln!(
                "flashkit-nexosim-peer: {} of {total} messages completed",
                tally.messages
            );
            std::process::exit(1);
        }
        best = best.min(wall);
        out = tally;
    }
    let events = total as u64 * (1 + 4 * PACKETS as u64);
    println!(
        "{} {} {} {} {:.6}",
        out.completion, out.sum_completion, out.sum_latency, events, best
    );
}
