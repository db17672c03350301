//! Active Messages, one interface over every controller.
//!
//! A workload is a program per node, written once as a list of [`Step`]s
//! against this interface; each platform's Active Message layer runs it on
//! its own hardware model and charges every operation its structure (NI
//! reads and writes, status polls, instructions, dispatch), so the
//! benchmark suite measures the layers rather than looking their costs up.
//!
//! - [`cm5`]: CMAM and CMAML on the CM-5 network interface.

pub mod cm5;
pub mod config;
pub mod costs;
pub mod export;
pub mod flash;
pub mod sp;
pub mod suite;

/// The most nodes each machine may have, in one place: every command and
/// platform that builds one checks its count here ([`Machines::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Machines {
    /// FLASH: 4096 nodes, its design point, as many as MAGIC's addresses
    /// name ([`magic::PAddr::MAX_NODES`]).
    Flash,
    /// The CM-5: 1024 nodes, the largest machine built; its data network is
    /// a 4-ary fat tree of five levels at that size.
    Cm5,
    /// The IBM SP: 512 nodes, the largest standard configuration of its
    /// switch (32 frames of 16 nodes).
    Sp,
}

impl Machines {
    /// The most nodes the machine may have.
    pub const fn max_nodes(self) -> u32 {
        match self {
            Machines::Flash => magic::PAddr::MAX_NODES,
            Machines::Cm5 => 1024,
            Machines::Sp => 512,
        }
    }

    /// `Err` naming `nodes` unless `least <= nodes <=` the machine's most.
    pub fn check(self, nodes: u32, least: u32) -> Result<(), Error> {
        crate::error::check("nodes", nodes, least, self.max_nodes())
    }
}

/// The most nodes any platform may have (FLASH's); checked before anything
/// is allocated per node, before the platform's own limit.
pub const MAX_NODES: u32 = Machines::Flash.max_nodes();

/// The most one entry of a platform's cost table may hold (instructions or
/// cycles per operation): the one cap of every cost,
/// [`magic::costs::MAX_COST`], far above any layer's, and low enough that
/// no run's time arithmetic can overflow.
pub const MAX_COST: u64 = magic::costs::MAX_COST;

use crate::Error;
use magic::{NodeId, Time};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What the handler named by a message does when it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Handler {
    /// Nothing (the trivial handler of the overhead benchmarks).
    #[default]
    Nop,
    /// Reply to the sender with the same arguments.
    Echo,
    /// Send the requester a block (a get; its size travels as an argument).
    Get,
}

/// A handler travels as one word of a message (MAGIC's layer names it so).
impl magic::message::Word for Handler {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Self> {
        [Handler::Nop, Handler::Echo, Handler::Get]
            .get(usize::try_from(w).ok()?)
            .copied()
    }
}

/// The alignment of a block's source and destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Align {
    /// Byte aligned only.
    Byte,
    /// Word (4-byte) aligned.
    Word,
    /// Doubleword (8-byte) aligned.
    Double,
}

/// One step of a node's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send a request of `words` argument words (0 to 4) to a handler.
    Request {
        /// The destination node.
        to: NodeId,
        /// Argument words carried (0 to 4, 4 bytes each).
        words: u8,
        /// The handler the request runs at the destination.
        handler: Handler,
    },
    /// Send a reply (outside a handler: the reply-overhead benchmark).
    Reply {
        /// The destination node.
        to: NodeId,
        /// Argument words carried (0 to 4, 4 bytes each).
        words: u8,
    },
    /// Move `bytes` into memory at `to` (CM-5: a segment transfer; SP: a
    /// store in chunks). The receiver counts a message when the whole block
    /// is in and acknowledges it to the sender, which counts the
    /// acknowledgement as a message too (wait for it to block).
    Store {
        /// The receiving node.
        to: NodeId,
        /// The block's size (bytes).
        bytes: u32,
        /// The alignment of the block's source and destination.
        align: Align,
    },
    /// As `Store`, into segment `segment` of the receiver, which several
    /// senders may share: it holds `total` bytes, and its end-of-transfer
    /// handler runs once, when all are in (CMAM's segments; SP AM counts
    /// the segment once every sender's part is in; other layers treat it
    /// as a store).
    StoreShared {
        /// The receiving node.
        to: NodeId,
        /// This sender's part of the segment (bytes).
        bytes: u32,
        /// The alignment of the block's source and destination.
        align: Align,
        /// The receiver's segment number.
        segment: u16,
        /// The segment's size, all senders together (bytes).
        total: u32,
    },
    /// Fetch a block of `bytes` from node `from`'s memory (a get: the
    /// owner's layer stores it back). The requester counts a message when
    /// the block is in; the owner counts the block's acknowledgement.
    Get {
        /// The node that owns the block.
        from: NodeId,
        /// The block's size (bytes).
        bytes: u32,
    },
    /// Poll the network once, running the handlers of what arrived.
    Poll,
    /// Poll only for requests, or only for replies (CMAM's `request_poll`
    /// and `reply_poll`; a layer with one input polls it all).
    PollOnly {
        /// Poll the reply input (`true`) or the request input (`false`).
        replies: bool,
    },
    /// Poll until this node has handled `received` messages in all.
    Wait {
        /// Messages handled by this node since the start of its program.
        received: u64,
    },
    /// Compute (no network access) for a while.
    Compute(Time),
    /// Record the time.
    Mark,
}

/// Cost and count of one operation at one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    /// Times the operation ran.
    pub calls: u64,
    /// Processor time spent in the operation (ticks).
    pub busy: u64,
    /// Reads of the network interface (MicroChannel accesses on the SP).
    pub ni_reads: u64,
    /// Writes to the network interface (MicroChannel accesses on the SP).
    pub ni_writes: u64,
    /// Instructions the layer executed (on FLASH: processor cycles charged).
    pub instructions: u64,
}

/// What a program run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Run {
    /// Per node, the times of its `Mark` steps.
    pub marks: Vec<Vec<Time>>,
    /// Per node, messages its handlers ran for.
    pub received: Vec<u64>,
    /// Per (node, operation) (in JSON, a list of `[[node, operation], stats]`).
    #[serde(serialize_with = "ops_as_list")]
    pub ops: BTreeMap<(u32, &'static str), OpStats>,
    /// When the last program finished.
    pub end: Time,
    /// Sends the network refused and the layer tried again.
    pub retries: u64,
    /// Packets delivered in another order than sent between the same nodes.
    pub overtaken: u64,
}

/// A map with tuple keys, as JSON can hold it: a list of (key, value).
fn ops_as_list<S: serde::Serializer>(
    ops: &BTreeMap<(u32, &'static str), OpStats>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(ops.iter())
}

impl Run {
    /// Microseconds between marks `a` and `b` (`a` first) of a node; an
    /// error if the node did not record both.
    pub fn between(&self, node: u32, a: usize, b: usize) -> Result<f64, Error> {
        Ok(Time(self.ticks_between(node, a, b)?).as_us())
    }

    /// [`Run::between`] in ticks ([`magic::time::TICKS_PER_US`] a
    /// microsecond), the count it is computed from.
    pub fn ticks_between(&self, node: u32, a: usize, b: usize) -> Result<u64, Error> {
        let m = self.marks.get(node as usize);
        let t = |i: usize| m.and_then(|m| m.get(i)).copied();
        match (t(a), t(b)) {
            (Some(ta), Some(tb)) if ta <= tb => Ok(tb.0 - ta.0),
            _ => Err(Error::Incomplete(format!(
                "node {node} did not record marks {a} and {b} in order"
            ))),
        }
    }

    /// The operation table, as people read it: per node and operation.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>4}  {:<14} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8}",
            "node", "operation", "calls", "busy us", "mean us", "ni rd", "ni wr", "instr"
        );
        for ((n, op), st) in &self.ops {
            let busy = Time(st.busy).as_us();
            let _ = writeln!(
                s,
                "{n:>4}  {op:<14} {:>7} {busy:>10.2} {:>8.3} {:>8} {:>8} {:>8}",
                st.calls,
                busy / st.calls.max(1) as f64,
                st.ni_reads,
                st.ni_writes,
                st.instructions
            );
        }
        s
    }
}

/// A platform that runs Active Message programs.
pub trait Platform {
    /// The platform's short name, as tables and JSON print it (`cm5`, `sp`, ...).
    fn name(&self) -> &'static str;
    /// Run one program per node (node `i` runs `programs[i]`); the
    /// platform's configuration is checked first ([`Platform::check`]).
    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, Error>;
    /// Nodes the platform has.
    fn nodes(&self) -> u32;
    /// The machine the platform models (and so its most nodes).
    fn machine(&self) -> Machines;
    /// The platform's configuration is one it can run: its node count (at
    /// most its machine's) and its costs in range. The suite checks it
    /// before it builds a program per node.
    fn check(&self) -> Result<(), Error> {
        self.machine().check(self.nodes(), 1)
    }
    /// The layer offers `Step::Get`.
    fn has_get(&self) -> bool {
        true
    }
}

impl OpStats {
    /// Mean microseconds per call.
    pub fn mean_us(&self) -> f64 {
        Time(self.busy).as_us() / self.calls.max(1) as f64
    }
}

/// What a platform's layer offers the common scheduler: per-node clocks and
/// the operations of the program steps.
pub(crate) trait Layer {
    fn now(&self, n: usize) -> Time;
    fn set_now(&mut self, n: usize, t: Time);
    fn received(&self, n: usize) -> u64;
    /// Work the layer does before the node's next step (interrupts, replies
    /// that could not go out); `false` if the node must come back later.
    fn before_step(&mut self, n: usize) -> bool;
    /// Run one step (never `Wait`); `false` to try it again later.
    fn step(&mut self, n: usize, s: Step) -> bool;
    fn poll(&mut self, n: usize);
    /// Poll an empty network until about `until` (no later), charging each
    /// poll; the layer may stop early (to act on its own timers).
    fn idle(&mut self, n: usize, until: Time);
    /// Reception is by interrupt: a waiting node sleeps instead of polling.
    fn sleeps(&self) -> bool;
    fn next_arrival(&self, n: usize) -> Option<Time>;
    fn in_flight(&self) -> usize;
    /// The least time a message takes from one node to another.
    fn min_latency(&self) -> Time;
    fn mark(&mut self, n: usize);
    /// The layer still has business at the node after its program ended
    /// (packets to take, its own packets not yet acknowledged).
    fn busy(&self, n: usize) -> bool;
    /// The destinations of the packets sent, which the layer appends to and
    /// the scheduler empties: a packet sent to a node is the only way its
    /// `busy` turns true while another node acts. A node's clock, program
    /// counter and receive count change only while it acts itself.
    fn woken(&mut self) -> &mut Vec<usize>;
    /// What the run measured, once every program is done.
    fn finish(&mut self) -> Run;
    /// Packets handed to the network so far (refused ones included).
    fn packets(&self) -> u64;
}

/// The longest `Step::Compute` (100 s), and the platforms' time budget
/// unless set ([`magic::ni::cm5::DEFAULT_RUN_TIME`]).
pub const RUN_LIMIT: Time = magic::ni::cm5::DEFAULT_RUN_TIME;

// The layers take the networks' own ranges as theirs: a time the CM-5's or
// the SP's parameters allow is within a run, an access within a cost.
const _: () = assert!(magic::ni::cm5::MAX_TIME.0 <= RUN_LIMIT.0);
const _: () = assert!(magic::ni::cm5::MAX_COST <= MAX_COST);

/// The largest block a program's store or get may move (16 MiB).
pub const MAX_BLOCK: u32 = 16 << 20;

/// Checks a program set against a platform's size: one program per node,
/// destinations that exist, argument words, blocks and computations in
/// range.
pub(crate) fn check_programs(nodes: u32, programs: &[Vec<Step>]) -> Result<(), Error> {
    if programs.len() != nodes as usize {
        return Err(Error::Program(format!(
            "{} programs for {nodes} nodes",
            programs.len()
        )));
    }
    for (i, p) in programs.iter().enumerate() {
        for s in p {
            let bad = match *s {
                Step::Request { words, .. } | Step::Reply { words, .. } if words > 4 => {
                    Some(format!("{words} argument words (at most 4)"))
                }
                Step::Store { bytes, .. } | Step::Get { bytes, .. } if bytes > MAX_BLOCK => {
                    Some(format!("a block of {bytes} bytes (at most {MAX_BLOCK})"))
                }
                Step::StoreShared { bytes, total, .. }
                    if bytes > MAX_BLOCK || total > MAX_BLOCK =>
                {
                    Some(format!(
                        "a block of {bytes} bytes of {total} (at most {MAX_BLOCK})"
                    ))
                }
                Step::StoreShared { bytes, total, .. } if bytes > total => Some(format!(
                    "a part of {bytes} bytes of a segment of {total} (a part is at most its segment)"
                )),
                Step::Compute(t) if t > RUN_LIMIT => {
                    Some(format!("a computation of {t} (at most {RUN_LIMIT})"))
                }
                _ => None,
            };
            if let Some(bad) = bad {
                return Err(Error::Program(format!("node {i}'s program has {bad}")));
            }
            if let Step::Request { to, .. }
            | Step::Reply { to, .. }
            | Step::Store { to, .. }
            | Step::StoreShared { to, .. }
            | Step::Get { from: to, .. } = s
            {
                if to.0 >= nodes || to.0 as usize == i {
                    return Err(Error::Program(format!(
                        "node {i} sends to node {to}, which it cannot"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A run's budgets on a comparison platform: its simulated time and its
/// events (the scheduler's steps and the packets sent), from the
/// platform's parameters (`budget` and `event_budget` of
/// [`magic::ni::cm5::Cm5Params`] and [`magic::ni::sp::SpParams`]). A run
/// past either stops, not clean, saying which and the key that raises it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// The simulated time.
    pub time: Time,
    /// Events per node.
    pub per_node: u64,
    /// Nodes of the machine.
    pub nodes: u32,
    /// The scenario table that sets both (`network.sp`).
    pub table: &'static str,
}

impl Budget {
    /// `Err` once node `n`, the furthest behind, is past the time budget
    /// at `now`, or the run has taken `events` past its event budget.
    fn check(&self, n: usize, now: Time, events: u64) -> Result<(), Error> {
        let secs = |t: Time| t.as_us() / 1e6;
        // Seconds as people read them: a budget of a few ticks is some
        // 10^-11 s, not twenty digits (`exact`: the budget as set; a time
        // the run reached, to the microsecond).
        let shown = |t: Time, exact: bool| match secs(t) {
            // No time at all is 0, not a rounded 0.000000.
            0.0 => "0 s".to_string(),
            s if s < 1e-6 => format!("{s:.3e} s"),
            s if exact => format!("{s} s"),
            s => format!("{s:.6} s"),
        };
        if now > self.time {
            return Err(Error::over_budget(
                "budget",
                format!(
                    "no end in sight: the run reached its budget of {} of simulated time \
                 ({} ticks) with node {n} still running at {}; a run that needs more \
                 raises it with [{}] budget (at most {} ticks, {} s)",
                    shown(self.time, true),
                    self.time.0,
                    shown(now, false),
                    self.table,
                    magic::ni::cm5::MAX_RUN_TIME.0,
                    secs(magic::ni::cm5::MAX_RUN_TIME),
                ),
            ));
        }
        let most = self.per_node.saturating_mul(u64::from(self.nodes));
        if events > most {
            return Err(Error::over_budget(
                "event_budget",
                format!(
                    "no end in sight: the run reached its budget of {most} events (scheduler \
                 steps and packets sent, {} a node) with node {n} still running at {} \
                 of simulated time; a run that needs more raises it with [{}] event_budget \
                 (at most {} a node)",
                    self.per_node,
                    shown(now, false),
                    self.table,
                    magic::ni::cm5::MAX_EVENTS,
                ),
            ));
        }
        Ok(())
    }
}

/// Run the programs on a layer: the node furthest behind in time goes next,
/// so nothing can reach it from the past any more. A waiting node polls (or
/// sleeps) until the next arrival, or until another node could have sent it
/// something.
///
/// The nodes with business (program left, or the layer busy there) wait in
/// an ordered set by (clock, node), so each step costs O(log nodes), not a
/// scan. A node's entry changes only when it acts or when a packet is sent
/// to it (`Layer::woken`); debug builds check the set and the count of
/// waiting nodes against a full scan at every step.
pub(crate) fn drive<L: Layer>(
    l: &mut L,
    programs: &[Vec<Step>],
    budget: Budget,
) -> Result<Run, Error> {
    let nodes = programs.len();
    let mut s = Schedule {
        pc: vec![0usize; nodes],
        queue: BTreeSet::new(),
        key: vec![None; nodes],
        waiting: vec![false; nodes],
        not_waiting: nodes,
    };
    for i in 0..nodes {
        s.refresh(l, programs, i);
    }
    let mut woken = Vec::new();
    let mut steps: u64 = 0;
    while let Some(&(_, n)) = s.queue.first() {
        s.check(l, programs);
        budget.check(n, l.now(n), steps + l.packets())?;
        steps += 1;
        s.act(l, programs, n, &mut woken)?;
        s.refresh(l, programs, n);
        s.wake(l, programs, &mut woken);
    }
    Ok(l.finish())
}

/// The scheduler's view of the nodes: program counters, the active nodes
/// ordered by (clock, node) with the key each is filed under, and which
/// nodes wait.
struct Schedule {
    pc: Vec<usize>,
    queue: BTreeSet<(Time, usize)>,
    key: Vec<Option<Time>>,
    waiting: Vec<bool>,
    /// Nodes not waiting: when it is 0 and nothing is in flight, nothing can
    /// move.
    not_waiting: usize,
}

impl Schedule {
    /// A node whose program is over keeps serving the network while its
    /// layer has business there.
    fn active<L: Layer>(&self, l: &L, programs: &[Vec<Step>], i: usize) -> bool {
        self.pc[i] < programs[i].len() || l.busy(i)
    }

    fn is_waiting<L: Layer>(&self, l: &L, programs: &[Vec<Step>], i: usize) -> bool {
        let pc = self.pc[i];
        pc >= programs[i].len()
            || matches!(programs[i][pc], Step::Wait { received } if l.received(i) < received)
    }

    /// File node `i` again after it acted or was sent something.
    fn refresh<L: Layer>(&mut self, l: &L, programs: &[Vec<Step>], i: usize) {
        let want = self.active(l, programs, i).then(|| l.now(i));
        if self.key[i] != want {
            if let Some(t) = self.key[i] {
                self.queue.remove(&(t, i));
            }
            if let Some(t) = want {
                self.queue.insert((t, i));
            }
            self.key[i] = want;
        }
        self.refresh_waiting(l, programs, i);
    }

    /// File the nodes sent something since the last call.
    fn wake<L: Layer>(&mut self, l: &mut L, programs: &[Vec<Step>], woken: &mut Vec<usize>) {
        woken.clear();
        std::mem::swap(woken, l.woken());
        for &w in woken.iter() {
            if w < programs.len() {
                self.refresh(l, programs, w);
            }
        }
    }

    fn refresh_waiting<L: Layer>(&mut self, l: &L, programs: &[Vec<Step>], i: usize) {
        let w = self.is_waiting(l, programs, i);
        if self.waiting[i] != w {
            self.waiting[i] = w;
            if w {
                self.not_waiting -= 1;
            } else {
                self.not_waiting += 1;
            }
        }
    }

    /// In debug builds: the set and the count agree with a full scan.
    fn check<L: Layer>(&self, l: &L, programs: &[Vec<Step>]) {
        if cfg!(debug_assertions) {
            let nodes = programs.len();
            let scan = (0..nodes)
                .filter(|&i| self.active(l, programs, i))
                .min_by_key(|&i| (l.now(i), i));
            assert_eq!(self.queue.first().map(|x| x.1), scan, "scheduler's set");
            let not_waiting = (0..nodes)
                .filter(|&i| !self.is_waiting(l, programs, i))
                .count();
            assert_eq!(self.not_waiting, not_waiting, "scheduler's count");
        }
    }

    /// Node `n`, the one furthest behind, takes its turn.
    fn act<L: Layer>(
        &mut self,
        l: &mut L,
        programs: &[Vec<Step>],
        n: usize,
        woken: &mut Vec<usize>,
    ) -> Result<(), Error> {
        if !l.before_step(n) {
            return Ok(());
        }
        let pc = &mut self.pc[n];
        let done = *pc >= programs[n].len();
        let step = if done {
            Step::Wait { received: u64::MAX }
        } else {
            programs[n][*pc]
        };
        let Step::Wait { received } = step else {
            if step == Step::Mark {
                l.mark(n);
                *pc += 1;
            } else if l.step(n, step) {
                *pc += 1;
            }
            return Ok(());
        };
        if !done && l.received(n) >= received {
            *pc += 1;
            return Ok(());
        }
        if done && !l.busy(n) {
            return Ok(());
        }
        // What `n` did so far this turn (interrupts, replies sent) may have
        // woken nodes and changed its own receive count: file them first.
        self.wake(l, programs, woken);
        self.refresh_waiting(l, programs, n);
        // The earliest another active node could send from: the first in
        // the set that is not `n` (whose own clock may have moved).
        let lmin = l.min_latency();
        let horizon = self.queue.iter().find(|x| x.1 != n).map(|&(t, _)| t + lmin);
        let next = match (l.next_arrival(n), horizon) {
            (Some(a), Some(h)) => a.min(h),
            (Some(a), None) | (None, Some(a)) => a,
            // (A node done with its program is here only while busy.)
            (None, None) if l.busy(n) => {
                // Only its own timers can help (a keep-alive for packets of
                // its own not yet acknowledged): poll on.
                Time(l.now(n).0 + 1)
            }
            (None, None) => {
                return Err(Error::Incomplete(format!(
                "stuck: node {n} waits for {received} messages and has {}; nothing is on its way",
                l.received(n)
            )))
            }
        };
        if !done && self.not_waiting == 0 && l.in_flight() == 0 {
            return Err(Error::Incomplete(format!(
                "stuck: every node waits and nothing is on its way (node {n} has {} of {received})",
                l.received(n)
            )));
        }
        let t = l.now(n);
        if l.sleeps() {
            l.set_now(n, next.max(Time(t.0 + 1)));
        } else {
            if next > t {
                l.idle(n, next);
            }
            l.poll(n);
        }
        Ok(())
    }
}
