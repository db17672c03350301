//! Exhaustive checking of real handlers: a breadth-first search over every
//! order in which a machine's messages may be delivered.
//!
//! A timed run takes one order of events, the one its latencies give. The
//! explorer takes them all, up to a bound. It turns the machine's deliveries
//! into choices: with [`Magic::hold_deliveries`] on, a message that reaches a
//! node's input queue (from the network, from the compute processor, or a
//! handler's continuation on the software queue), or MAGIC's answer on its
//! way to the processor, is held instead of queued.
//! A *move* releases one held message, and the machine then runs, handlers
//! and all, until nothing is scheduled: it has *settled*. Messages are held
//! per channel (source, destination, queue) and released in order within a
//! channel, which is the network's one ordering promise (a lane between two
//! nodes is first in, first out); across channels any order is taken. A
//! model may add moves of its own (a processor issuing its next access).
//!
//! Two settled machines are the same state when their canonical encodings
//! are equal: the hardware's functional contents (caches, memory, messages
//! held and queued, buffers held), which the explorer encodes, and the
//! protocol's state, which the model encodes, both without time or
//! counters. The search keeps a 128-bit hash of each encoding, so a
//! collision could in principle hide a state (at 10^6 states the chance is
//! below 10^-26). It is breadth first, so the first violation found has a
//! shortest trace; it stops there.
//!
//! What it checks is safety: the invariants in every state, and
//! [`Model::finished`] in every state with no move left (a deadlock, work
//! stuck). It does not check liveness: states that move only among
//! themselves and never reach an end (handlers that keep one another
//! going, a retry that never succeeds) are explored like any others, and a
//! search that finds nothing else is complete, with no violation. A timed
//! run of the same machine halts on such a loop ([`crate::Halt::Livelock`],
//! [`crate::Halt::Events`]).
//!
//! [`explore_restoring`] keeps each state of its frontier as a snapshot of
//! the machine, packed into bytes (see [`crate::pack`]; the node states
//! too, where the model packs them, [`Model::pack_node`]), and restores it
//! into a scratch machine to make each move; snapshots it is done with are
//! reused. [`explore`] copies nothing: it rebuilds a state from the
//! initial machine by replaying its moves, which the engine's determinism
//! makes exact.

use crate::ids::Msg;
use crate::machine::{Magic, NodeState};
use crate::node::{Ev, TO_PROCESSOR};
use crate::params::InQueue;
use serde::Serialize;
use std::collections::VecDeque;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A renaming of a machine's nodes: node `n` becomes `node(n)` (see
/// [`Model::symmetric`]). Nodes past the renaming keep their numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renaming {
    to: Vec<u32>,
    from: Vec<u32>,
}

impl Renaming {
    /// The renaming that sends node `n` to `to[n]`; `None` if `to` is not
    /// a permutation of `0..to.len()`.
    pub fn new(to: Vec<u32>) -> Option<Renaming> {
        let mut from = vec![u32::MAX; to.len()];
        for (n, &t) in to.iter().enumerate() {
            let slot = from.get_mut(t as usize)?;
            if *slot != u32::MAX {
                return None;
            }
            *slot = n as u32;
        }
        Some(Renaming { to, from })
    }

    /// What node `n` becomes.
    pub fn node(&self, n: u32) -> u32 {
        self.to.get(n as usize).copied().unwrap_or(n)
    }

    /// The node that becomes node `n`.
    pub fn from(&self, n: u32) -> u32 {
        self.from.get(n as usize).copied().unwrap_or(n)
    }

    /// Every renaming of `nodes` nodes that permutes the nodes of `among`
    /// and keeps the others, the identity first; `None` for more than
    /// [`MOST_SYMMETRIC`] nodes among them (their renamings would not fit
    /// a machine's memory: 12 nodes have 479,001,600), for a node among
    /// them past the most a machine has (2^12: its renamings would be as
    /// long as that node's number), and for a list that is not of
    /// distinct nodes of the machine (a node past `nodes`, or one named
    /// twice: which renaming was meant, the list does not say).
    ///
    /// ```
    /// use magic::check::{Renaming, MOST_SYMMETRIC};
    /// let all = Renaming::permuting(4, &[1, 2, 3]).unwrap();
    /// assert_eq!(all.len(), 6);
    /// assert!(all.iter().all(|r| r.node(0) == 0));
    /// assert_eq!((all[1].node(2), all[1].from(3)), (3, 2));
    /// let many: Vec<u32> = (0..=MOST_SYMMETRIC as u32).collect();
    /// assert!(Renaming::permuting(16, &many).is_none());
    /// // A machine of many nodes costs nothing past the last permuted one.
    /// let two = Renaming::permuting(u32::MAX, &[0, 1]).unwrap();
    /// assert_eq!((two[1].node(0), two[1].node(4_000_000_000)), (1, 4_000_000_000));
    /// // No machine has a node 4096; a machine of 2 has no node 7.
    /// assert!(Renaming::permuting(u32::MAX, &[0, 4096]).is_none());
    /// assert!(Renaming::permuting(2, &[0, 1, 7]).is_none());
    /// assert!(Renaming::permuting(4, &[1, 1, 2]).is_none());
    /// ```
    pub fn permuting(nodes: u32, among: &[u32]) -> Option<Vec<Renaming>> {
        let listed = among.len();
        let mut among: Vec<u32> = among.iter().copied().filter(|&n| n < nodes).collect();
        among.sort_unstable();
        among.dedup();
        if among.len() != listed {
            return None;
        }
        let past = among
            .last()
            .is_some_and(|&n| n >= crate::ids::PAddr::MAX_NODES);
        if among.len() > MOST_SYMMETRIC || past {
            return None;
        }
        let mut out = Vec::new();
        let mut perm = among.clone();
        // Nodes past the last of `among` keep their numbers without a
        // place in the renaming (however many the machine has).
        let len = among.last().map_or(0, |&n| n + 1);
        loop {
            let mut to: Vec<u32> = (0..len).collect();
            for (a, p) in among.iter().zip(&perm) {
                to[*a as usize] = *p;
            }
            out.extend(Renaming::new(to));
            // The next permutation in lexicographic order.
            let Some(i) = (1..perm.len()).rev().find(|&i| perm[i - 1] < perm[i]) else {
                break;
            };
            let j = (i..perm.len())
                .rev()
                .find(|&j| perm[j] > perm[i - 1])
                .unwrap_or(i);
            perm.swap(i - 1, j);
            perm[i..].reverse();
        }
        Some(out)
    }
}

/// The most nodes a search takes as interchangeable: their 8! = 40,320
/// renamings are held for the whole search (see [`Renaming::permuting`]).
pub const MOST_SYMMETRIC: usize = 8;

/// Counts folded into one number, in order: a node's signature (see
/// [`Model::node_signature`]), equal for equal counts.
///
/// ```
/// use magic::check::signature;
/// assert_eq!(signature([1, 2]), signature([1, 2]));
/// assert_ne!(signature([1, 2]), signature([2, 1]));
/// ```
pub fn signature(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, |x, v| {
        (x ^ v).wrapping_mul(0x100_0000_01b3).rotate_left(17)
    })
}

/// A move the explorer can make: release a held message, or a model's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// Release the held message at this index (see [`Magic::deliveries`]).
    Deliver(u32),
    /// The model's move with this number (see [`Model::actions`]).
    Act(u32),
}

impl<S: NodeState> Magic<S> {
    /// Hold every later delivery for an explorer to release (see the module
    /// documentation). Messages already queued stay queued; a run's report
    /// counts messages still held as stuck (the run is not clean).
    pub fn hold_deliveries(&mut self) {
        self.held.get_or_insert_with(Vec::new);
        // A held delivery comes in when the search releases it.
        self.params.inbound_contention = false;
        for hw in &mut self.hw {
            hw.software_held.get_or_insert(0);
        }
    }

    /// The held messages that may be released now: the oldest of each
    /// channel, as indices for [`Magic::deliver`].
    pub fn deliveries(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.deliveries_into(&mut out);
        out
    }

    /// [`Magic::deliveries`] into `out` (cleared first).
    fn deliveries_into(&self, out: &mut Vec<u32>) {
        out.clear();
        let Some(held) = &self.held else {
            return;
        };
        for (i, h) in held.iter().enumerate() {
            if !out.iter().any(|&j| held[j as usize].chan == h.chan) {
                out.push(i as u32);
            }
        }
    }

    /// The held message at index `i`, as people read it.
    pub fn describe_delivery(&self, i: u32) -> String {
        let Some(h) = self.held.as_ref().and_then(|h| h.get(i as usize)) else {
            return format!("no held message {i}");
        };
        let m = self.packets.msg(h.pkt);
        let what = self.reg.describe(m.mtype);
        match h.chan.path {
            TO_PROCESSOR => format!("n{} MAGIC -> processor: {what} {}", h.chan.dst, m.addr),
            p if p == InQueue::Processor as u8 => {
                format!("n{} processor -> MAGIC: {what} {}", h.chan.dst, m.addr)
            }
            p if p == InQueue::Software as u8 => {
                format!("n{} software queue: {what} {}", h.chan.dst, m.addr)
            }
            p => {
                let lane = if p == InQueue::NetReply as u8 {
                    "reply"
                } else {
                    "request"
                };
                format!(
                    "n{} -> n{} ({lane}): {what} {}",
                    h.chan.src, h.chan.dst, m.addr
                )
            }
        }
    }

    /// Release held message `i` into its queue (or to the processor) now.
    /// False, and nothing done, if `i` is not the oldest of its channel.
    pub fn deliver(&mut self, i: u32) -> bool {
        let Some(held) = self.held.as_mut() else {
            return false;
        };
        let Some(chan) = held.get(i as usize).map(|h| h.chan) else {
            return false;
        };
        if held[..i as usize].iter().any(|h| h.chan == chan) {
            return false;
        }
        let h = held.remove(i as usize);
        if let Ev::Deliver {
            node,
            q: InQueue::Software,
            ..
        } = h.ev
        {
            let n = &mut self.hw[node as usize].software_held;
            *n = n.map(|x| x.saturating_sub(1));
        }
        let now = self.now();
        let keep = self.held.take();
        self.apply(now, h.ev);
        self.held = keep;
        self.arbitrate(now);
        true
    }

    /// The hardware's functional contents, canonically, into `out`: each
    /// node's processor cache, memory, queued messages and held buffers, its
    /// counted drops, and the held messages by channel. No time, no counters
    /// of work done.
    pub fn encode_hardware(&self, out: &mut Vec<u8>) {
        for hw in &self.hw {
            hw.pcache.encode(out);
            hw.mem.encode(out);
            for q in &hw.queues {
                out.extend_from_slice(&(q.len() as u32).to_le_bytes());
                for e in q {
                    self.encode_packet(e.pkt, out);
                }
            }
            encode_held_and_drops(hw, out);
        }
        if let Some(held) = &self.held {
            // By channel, in order within each: the order across channels
            // is not part of the state.
            let mut order: smallvec::SmallVec<[usize; 16]> = (0..held.len()).collect();
            order.sort_by_key(|&i| (held[i].chan, i));
            out.extend_from_slice(&(held.len() as u32).to_le_bytes());
            for i in order {
                let c = held[i].chan;
                out.extend_from_slice(&c.src.to_le_bytes());
                out.extend_from_slice(&c.dst.to_le_bytes());
                out.push(c.path);
                self.encode_packet(held[i].pkt, out);
            }
        }
    }

    /// What node `n`'s hardware holds whatever the nodes are called: its
    /// queues' lengths, its processor cache's clean and dirty lines, its
    /// data buffers held, whether its PP is running, and the messages on
    /// their way to its processor, folded into a number (see
    /// [`Model::node_signature`]); 0 for a node the machine does not have.
    pub fn node_signature(&self, n: u32) -> u64 {
        let Some(hw) = self.hw.get(n as usize) else {
            return 0;
        };
        let (clean, dirty) = hw.pcache.held();
        signature([
            hw.queues[0].len() as u64,
            hw.queues[1].len() as u64,
            hw.queues[2].len() as u64,
            hw.queues[3].len() as u64,
            clean.into(),
            dirty.into(),
            hw.bufs.held() as u64,
            hw.pp_running.into(),
            hw.to_processor.len() as u64,
        ])
    }

    /// As [`Magic::encode_hardware`], of the machine with its nodes renamed
    /// by `r`: the nodes in the renamed order, and the nodes a message or a
    /// data word names renamed (the payload's and the data's as `model`
    /// renames them). A renaming longer than the machine names nodes it
    /// lacks: they write nothing.
    ///
    /// ```
    /// # use magic::{Install, Magic, MagicParams, NodeId, Protocol};
    /// # use magic::check::{Checker, Renaming};
    /// # struct Idle;
    /// # impl Protocol for Idle {
    /// #     type Node = ();
    /// #     fn name(&self) -> &'static str { "idle" }
    /// #     fn node(&self, _: NodeId, _: u32) {}
    /// #     fn install<S: 'static>(&self, _: &mut Install<'_, S, ()>) {}
    /// # }
    /// let build = || Magic::with(MagicParams::default(), 2, &Idle).map_err(|e| e.to_string());
    /// let (m, model) = (build().unwrap(), Checker::new(build));
    /// let (mut swapped, mut long) = (Vec::new(), Vec::new());
    /// m.encode_hardware_renamed(&model, &Renaming::new(vec![1, 0]).unwrap(), &mut swapped);
    /// m.encode_hardware_renamed(&model, &Renaming::new(vec![2, 1, 0]).unwrap(), &mut long);
    /// assert!(long.len() < swapped.len());
    /// ```
    pub fn encode_hardware_renamed<M: Model<Node = S>>(
        &self,
        model: &M,
        r: &Renaming,
        out: &mut Vec<u8>,
    ) {
        for j in 0..self.hw.len() as u32 {
            self.encode_node_renamed(model, r, j, out);
        }
        self.encode_held_renamed(model, r, out);
    }

    /// The part of [`Magic::encode_hardware_renamed`] that node `j` of the
    /// renamed machine (`r.from(j)` of this one) writes.
    fn encode_node_renamed<M: Model<Node = S>>(
        &self,
        model: &M,
        r: &Renaming,
        j: u32,
        out: &mut Vec<u8>,
    ) {
        let word = |w: u64| model.rename_data(w, r);
        // A renaming that names a node this machine lacks renames nothing
        // to it (as `Checker::encode_renamed` skips its state).
        let Some(hw) = self.hw.get(r.from(j) as usize) else {
            return;
        };
        hw.pcache.encode_words(&word, out);
        hw.mem.encode_words(&word, out);
        for q in &hw.queues {
            out.extend_from_slice(&(q.len() as u32).to_le_bytes());
            for e in q {
                self.encode_packet_renamed(model, r, e.pkt, out);
            }
        }
        encode_held_and_drops(hw, out);
    }

    /// The part of [`Magic::encode_hardware_renamed`] the held messages
    /// write, after every node's.
    fn encode_held_renamed<M: Model<Node = S>>(&self, model: &M, r: &Renaming, out: &mut Vec<u8>) {
        if let Some(held) = &self.held {
            let chan = |i: usize| {
                let c = held[i].chan;
                (r.node(c.src), r.node(c.dst), c.path)
            };
            let mut order: smallvec::SmallVec<[usize; 16]> = (0..held.len()).collect();
            order.sort_by_key(|&i| (chan(i), i));
            out.extend_from_slice(&(held.len() as u32).to_le_bytes());
            for i in order {
                let (src, dst, path) = chan(i);
                out.extend_from_slice(&src.to_le_bytes());
                out.extend_from_slice(&dst.to_le_bytes());
                out.push(path);
                self.encode_packet_renamed(model, r, held[i].pkt, out);
            }
        }
    }

    fn encode_packet_renamed<M: Model<Node = S>>(
        &self,
        model: &M,
        r: &Renaming,
        pkt: u32,
        out: &mut Vec<u8>,
    ) {
        let m = model.rename_message(self, self.packets.msg(pkt), r);
        out.push(m.mtype.0);
        out.push(m.lane as u8);
        out.extend_from_slice(&r.node(m.src.0).to_le_bytes());
        out.extend_from_slice(&r.node(m.dest.0).to_le_bytes());
        out.extend_from_slice(&m.addr.0.to_le_bytes());
        out.extend_from_slice(&m.len.to_le_bytes());
        for w in m.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        match self.packets.data(pkt) {
            Some(d) => {
                out.push(1);
                crate::memory::encode_line(d, &|w| model.rename_data(w, r), out);
            }
            None => out.push(0),
        }
    }

    fn encode_packet(&self, pkt: u32, out: &mut Vec<u8>) {
        let m = self.packets.msg(pkt);
        out.push(m.mtype.0);
        out.push(m.lane as u8);
        out.extend_from_slice(&m.src.0.to_le_bytes());
        out.extend_from_slice(&m.dest.0.to_le_bytes());
        out.extend_from_slice(&m.addr.0.to_le_bytes());
        out.extend_from_slice(&m.len.to_le_bytes());
        for w in m.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        match self.packets.data(pkt) {
            Some(d) => {
                out.push(1);
                out.extend_from_slice(d);
            }
            None => out.push(0),
        }
    }
}

/// What the explorer needs to know of a machine under check: how to build
/// it, the moves of its own, its protocol's state, and what must hold.
///
/// The machine's handlers are the real ones; the model only sets them up
/// and watches. Every method must be deterministic: a state is rebuilt by
/// replaying its moves.
pub trait Model {
    /// The per-node state of the machine.
    type Node: NodeState;

    /// A fresh machine at its start (processors started, data set up). The
    /// explorer turns holding on and lets it settle.
    fn build(&self) -> Result<Magic<Self::Node>, String>;

    /// The model's own moves in this state (say, a processor issuing its
    /// next access), as numbers [`Model::act`] understands.
    fn actions(&self, _m: &Magic<Self::Node>, _out: &mut Vec<u32>) {}

    /// Make move `a` (one [`Model::actions`] offered in this state).
    fn act(&self, _m: &mut Magic<Self::Node>, _a: u32) {}

    /// Move `a` as people read it.
    fn describe(&self, _m: &Magic<Self::Node>, a: u32) -> String {
        format!("action {a}")
    }

    /// The protocol's state, canonically, into `out`: everything that
    /// decides what the machine can do next and what the invariants look
    /// at, and nothing that only grows (times, counters of work done).
    fn encode(&self, m: &Magic<Self::Node>, out: &mut Vec<u8>);

    /// What must hold at every instant: checked after each one.
    fn invariant(&self, m: &Magic<Self::Node>) -> Result<(), String>;

    /// The nodes that play the same role (the reference model's
    /// scalarset): any permutation of them, every value that names a node
    /// renamed with it, gives a state that behaves the same. With
    /// [`Bounds::symmetry`] on, the search stores each state in the least
    /// encoding over those permutations, so a state and its renamings are
    /// explored once. The default: none.
    fn symmetric(&self, _m: &Magic<Self::Node>) -> Vec<u32> {
        Vec::new()
    }

    /// [`Model::encode`] of the machine with its nodes renamed by `r`:
    /// the node states in the renamed order ([`Renaming::from`]) and every
    /// node a state names as [`Renaming::node`] gives it. A model that
    /// declares [`Model::symmetric`] nodes must give it; the default is
    /// [`Model::encode`].
    fn encode_renamed(&self, m: &Magic<Self::Node>, _r: &Renaming, out: &mut Vec<u8>) {
        self.encode(m, out);
    }

    /// What node `n`'s state is whatever the nodes are called: a number
    /// no renaming of the symmetric nodes changes (counts and states, no
    /// node's number, no value that names one). With symmetry on, the
    /// search takes a state only to the renamings that order the
    /// symmetric nodes by this number (and the hardware's own, see
    /// [`Magic::node_signature`]), so nodes that differ are not tried in
    /// every order. The default: 0 for every node, which orders nothing.
    fn node_signature(&self, _m: &Magic<Self::Node>, _n: u32) -> u64 {
        0
    }

    /// `msg` with the nodes its payload names renamed by `r` (the explorer
    /// renames its source and destination itself). The default: as is.
    fn rename_message(&self, _m: &Magic<Self::Node>, msg: &Msg, _r: &Renaming) -> Msg {
        *msg
    }

    /// An 8-byte data word (a line's bytes, little-endian) with the node it
    /// names renamed by `r`: a written value that carries its writer. The
    /// default: as is.
    fn rename_data(&self, word: u64, _r: &Renaming) -> u64 {
        word
    }

    /// Pack node state `s` into `out` for a search's frontier (see
    /// [`crate::pack`]) and say so. A search holds millions of states at
    /// once, and packed node states take a fraction of copies' memory. The
    /// default packs nothing and says false: the search keeps a copy of
    /// each node state, and counts it against [`Bounds::max_bytes`] by its
    /// own size (`size_of`), not what it holds on the heap: a model whose
    /// node states hold much there should pack them, or give a smaller
    /// maximum. A model that packs must unpack
    /// ([`Model::unpack_node`]) to a state the same in everything the
    /// machine can do next and every report of a search reads.
    fn pack_node(&self, _s: &Self::Node, _out: &mut Vec<u8>) -> bool {
        false
    }

    /// Make `s`, a node state of a machine this model built, the one
    /// [`Model::pack_node`] packed, reading it from `r`.
    fn unpack_node(&self, _s: &mut Self::Node, _r: &mut crate::pack::Reader<'_>) {}

    /// What must hold when no move is left: every operation done, nothing
    /// stuck, nothing refused. The default asks the machine's own report
    /// ([`nothing_stuck`], [`nothing_dropped`]).
    fn finished(&self, m: &Magic<Self::Node>) -> Result<(), String> {
        nothing_stuck(m)?;
        nothing_dropped(m)
    }
}

/// A machine with no move left holds no work: what its report calls stuck
/// (queued messages, held buffers, each protocol's `pending`) is a deadlock.
pub fn nothing_stuck<S: NodeState>(m: &Magic<S>) -> Result<(), String> {
    let r = m.report(false);
    if r.stuck.is_empty() {
        Ok(())
    } else {
        Err(format!("deadlock: {}", r.stuck.join("; ")))
    }
}

/// No node's MAGIC refused or dropped anything (see [`crate::Drops`]),
/// and no event was applied late: the report's `refused` lines are the
/// error. Cheap when nothing was dropped, so it can be an invariant.
pub fn nothing_dropped<S: NodeState>(m: &Magic<S>) -> Result<(), String> {
    if m.engine.late() == 0 && m.hw.iter().all(|hw| hw.lost.is_none()) {
        return Ok(());
    }
    Err(format!("dropped: {}", m.refused().join("; ")))
}

/// The most distinct states a search may be allowed ([`Bounds::max_states`]):
/// 10^8, some 5 GB of the search's own records (about 50 bytes a state)
/// and, at the 10^4 states a second the replaying search reaches on one
/// core, nearly three hours. [`explore_restoring`] holds a packed snapshot
/// of each state found and not yet expanded besides, some 600 bytes at
/// four nodes.
pub const MAX_STATES: usize = 100_000_000;

/// The bytes a search may hold for its states unless told otherwise
/// ([`Bounds::max_bytes`]): 8 GiB. The coherence check at four nodes and
/// its default lines and ops holds some 2.2 GiB at most by this count.
pub const DEFAULT_MAX_BYTES: u64 = 8 << 30;

/// The least memory a search may be allowed ([`Bounds::max_bytes`]): 1 MiB.
pub const MIN_BYTES: u64 = 1 << 20;

/// The most memory a search may be allowed ([`Bounds::max_bytes`]): 1 PiB.
pub const MAX_BYTES: u64 = 1 << 50;

/// The most instants a settling may be allowed ([`Bounds::settle_instants`]).
pub const MAX_SETTLE_INSTANTS: u64 = 100_000_000;

/// The most threads a search may be given ([`Bounds::threads`]).
pub const MAX_THREADS: usize = 64;

/// How far a search goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bounds {
    /// Distinct states at most, 1 to [`MAX_STATES`]; the search stops there,
    /// not complete. [`Bounds::validate`] (and every search) refuses a
    /// value outside that range.
    pub max_states: usize,
    /// Bytes the search may hold for the states it has found, at most,
    /// [`MIN_BYTES`] to [`MAX_BYTES`]: their fingerprints, how it reached
    /// each, and the snapshots of those it has not yet expanded, as it
    /// counts them (by their packed lengths, so the count is the same
    /// whatever the number of threads). The search stops at the first new
    /// state past it, not complete, and its report's `limit` says so. The
    /// process uses somewhat more besides: its machines, buffers, and a
    /// table's old storage while it grows.
    pub max_bytes: u64,
    /// Instants a machine may take to settle after one move before the
    /// run counts as livelocked (1 to [`MAX_SETTLE_INSTANTS`]).
    pub settle_instants: u64,
    /// Where the search posts how far it has got, for another thread to
    /// show (a progress bar); `None` for nowhere.
    #[serde(skip)]
    pub progress: Option<&'static Progress>,
    /// Threads the search uses, 0 for one per core, at most
    /// [`MAX_THREADS`] (a search refuses more).
    /// The report is the same whatever the number.
    #[serde(skip)]
    pub threads: usize,
    /// Store each state in its least encoding over the permutations of the
    /// model's [`Model::symmetric`] nodes (on by default); off, the plain
    /// search.
    pub symmetry: bool,
}

/// The distinct states a search stops at unless told otherwise: enough
/// for the coherence check at four nodes and its default lines and ops
/// (26,767,466 states up to node symmetry).
pub const DEFAULT_MAX_STATES: usize = 30_000_000;

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_states: DEFAULT_MAX_STATES,
            max_bytes: DEFAULT_MAX_BYTES,
            settle_instants: 1_000_000,
            progress: None,
            threads: 0,
            symmetry: true,
        }
    }
}

impl Bounds {
    /// Refuse bounds outside their ranges, naming the field.
    ///
    /// ```
    /// use magic::check::{Bounds, MAX_STATES};
    /// assert!(Bounds::default().validate().is_ok());
    /// let huge = Bounds { max_states: usize::MAX, ..Bounds::default() };
    /// let e = huge.validate().unwrap_err();
    /// assert_eq!(e.field, "max_states");
    /// assert_eq!(e.allowed, format!("from 1 to {MAX_STATES}"));
    /// let tiny = Bounds { max_bytes: 4096, ..Bounds::default() };
    /// assert_eq!(tiny.validate().unwrap_err().field, "max_bytes");
    /// ```
    pub fn validate(&self) -> Result<(), crate::OutOfRange> {
        crate::OutOfRange::check("max_states", self.max_states, 1, MAX_STATES)?;
        crate::OutOfRange::check("max_bytes", self.max_bytes, MIN_BYTES, MAX_BYTES)?;
        crate::OutOfRange::check("threads", self.threads, 0, MAX_THREADS)?;
        crate::OutOfRange::check(
            "settle_instants",
            self.settle_instants,
            1,
            MAX_SETTLE_INSTANTS,
        )
    }
}

/// How far a running search has got: written by [`explore`] as it goes,
/// read from any thread. Each search starts it afresh.
#[derive(Debug, Default)]
pub struct Progress {
    states: AtomicU64,
    transitions: AtomicU64,
    depth: AtomicU32,
    bytes: AtomicU64,
}

impl Progress {
    /// A record of no search yet (for a `static`).
    pub const fn new() -> Self {
        Progress {
            states: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            depth: AtomicU32::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Distinct states reached so far.
    pub fn states(&self) -> u64 {
        self.states.load(Ordering::Relaxed)
    }

    /// Moves made so far.
    pub fn transitions(&self) -> u64 {
        self.transitions.load(Ordering::Relaxed)
    }

    /// The deepest state reached so far, in moves.
    pub fn depth(&self) -> u32 {
        self.depth.load(Ordering::Relaxed)
    }

    /// Bytes the search holds for its states so far, as it counts them
    /// against [`Bounds::max_bytes`].
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn post(&self, r: &Report, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
        self.states.store(r.states, Ordering::Relaxed);
        self.transitions.store(r.transitions, Ordering::Relaxed);
        self.depth.store(r.depth, Ordering::Relaxed);
    }
}

/// Two progress records are equal when they are the same record.
impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Progress {}

/// What a search found. It reads back as it serializes, refusing what no
/// search reports (a complete search that also found a violation or
/// stopped at a bound, or reached no state; a path longer than the moves
/// made), naming the field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(try_from = "ReportWire")]
pub struct Report {
    /// Distinct states reached (the initial one included).
    pub states: u64,
    /// Moves made (each leads to a new state or to one already seen).
    pub transitions: u64,
    /// The most moves on a shortest path to any state reached.
    pub depth: u32,
    /// The bounded space was exhausted: every state reachable was reached.
    pub complete: bool,
    /// The bound the search stopped at before it was complete: `None` when
    /// it was complete or a violation stopped it (and in a report saved
    /// before the key was added).
    #[serde(default)]
    pub limit: Option<Limit>,
    /// States were stored up to a renaming of the model's symmetric nodes
    /// (see [`Model::symmetric`]); false for the plain search.
    pub symmetry: bool,
    /// Violations found (the search stops at the first).
    pub violations: u32,
    /// What the violation was.
    pub violation: Option<String>,
    /// A shortest sequence of moves to the violation, one readable line each.
    pub trace: Vec<String>,
}

/// A [`Report`]'s JSON as read, before it is held to what a search gives.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportWire {
    states: u64,
    transitions: u64,
    depth: u32,
    complete: bool,
    #[serde(default)]
    limit: Option<Limit>,
    symmetry: bool,
    violations: u32,
    violation: Option<String>,
    trace: Vec<String>,
}

impl TryFrom<ReportWire> for Report {
    type Error = String;

    fn try_from(w: ReportWire) -> Result<Report, String> {
        // A violation stops the search and a bound ends it unfinished
        // (`fail` and the limits leave `complete` false); a finished
        // search reached its initial state at least.
        if w.complete {
            if w.violations > 0 {
                return Err(format!(
                    "complete is true, but violations is {} (a violation stops the search)",
                    w.violations
                ));
            }
            if let Some(l) = w.limit {
                return Err(format!(
                    "complete is true, but limit is {:?} (a search stopped at {} is not complete)",
                    l,
                    l.name()
                ));
            }
            if w.states == 0 {
                return Err(
                    "states is 0, but complete is true (a complete search reached its initial state)"
                        .into(),
                );
            }
        }
        // Each step along the deepest shortest path is a move made.
        if u64::from(w.depth) > w.transitions {
            return Err(format!(
                "depth is {}, more than the {} transitions made",
                w.depth, w.transitions
            ));
        }
        Ok(Report {
            states: w.states,
            transitions: w.transitions,
            depth: w.depth,
            complete: w.complete,
            limit: w.limit,
            symmetry: w.symmetry,
            violations: w.violations,
            violation: w.violation,
            trace: w.trace,
        })
    }
}

/// The bound a search stopped at before it was complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// It held [`Bounds::max_states`] distinct states.
    States,
    /// It held [`Bounds::max_bytes`] bytes for its states.
    Memory,
}

impl Limit {
    /// The bound as a report's text names it.
    pub fn name(self) -> &'static str {
        match self {
            Limit::States => "the state maximum",
            Limit::Memory => "the memory maximum",
        }
    }
}

struct Visit {
    parent: u32,
    mv: Move,
    depth: u32,
}

/// What a breadth-first search has found so far: its report, the
/// fingerprints of the states it has seen and how it reached each, shared
/// by the restoring and the replaying search.
struct Search {
    report: Report,
    seen: Seen,
    visits: Vec<Visit>,
    max_states: usize,
    max_bytes: u64,
    /// Bytes the states found and not yet expanded take, as
    /// [`Search::held`] counts them.
    frontier_bytes: u64,
    progress: Option<&'static Progress>,
}

/// What became of a state a move led to.
enum Admitted {
    /// A new state, numbered.
    New(u32),
    /// One seen before.
    Seen,
    /// New, but the search holds as many states as its bounds allow: it
    /// stops, incomplete.
    Full,
}

impl Search {
    fn new(bounds: Bounds) -> Search {
        let found = Search {
            report: Report::default(),
            seen: Seen::default(),
            visits: Vec::new(),
            max_states: bounds.max_states,
            max_bytes: bounds.max_bytes,
            frontier_bytes: 0,
            progress: bounds.progress,
        };
        found.post();
        found
    }

    fn post(&self) {
        if let Some(p) = self.progress {
            p.post(&self.report, self.held());
        }
    }

    /// The initial state, fingerprint `fp`, which waits to be expanded
    /// holding `bytes`.
    fn root(&mut self, fp: u128, bytes: u64) {
        self.seen.insert(fp);
        self.frontier_bytes += bytes;
        self.visits.push(Visit {
            parent: u32::MAX,
            mv: Move::Act(0),
            depth: 0,
        });
        self.report.states = 1;
    }

    /// The state with fingerprint `fp`, reached from state `parent` by
    /// `mv` at `depth`, which if new waits to be expanded holding `bytes`.
    fn admit(&mut self, parent: u32, mv: Move, depth: u32, fp: u128, bytes: u64) -> Admitted {
        if !self.seen.insert(fp) {
            return Admitted::Seen;
        }
        if let Some(limit) = self.bound_reached() {
            self.report.limit = Some(limit);
            self.post();
            return Admitted::Full;
        }
        self.visits.push(Visit { parent, mv, depth });
        self.frontier_bytes += bytes;
        self.report.states += 1;
        self.report.depth = self.report.depth.max(depth);
        self.post();
        Admitted::New((self.visits.len() - 1) as u32)
    }

    /// The bound a new state would pass, if any.
    fn bound_reached(&self) -> Option<Limit> {
        if self.visits.len() >= self.max_states {
            Some(Limit::States)
        } else if self.held() > self.max_bytes {
            Some(Limit::Memory)
        } else {
            None
        }
    }

    /// A state waiting to be expanded, which held `bytes`, is being
    /// expanded: it leaves the count as its moves are taken in (not when
    /// its batch is taken), so the count at each new state is the same
    /// whatever the batch.
    fn expanding(&mut self, bytes: u64) {
        self.frontier_bytes -= bytes;
    }

    /// The bytes the search holds for its states: the fingerprint table's
    /// allocation, the visits, and the frontier. Every term grows with the
    /// states found in the order found, so the count is the same whatever
    /// the number of threads.
    fn held(&self) -> u64 {
        let visits = self.visits.capacity() * size_of::<Visit>();
        (self.seen.allocation_size() + visits) as u64 + self.frontier_bytes
    }

    /// The report of a search stopped by a violation, with its trace.
    fn fail(mut self, msg: String, trace: Vec<String>) -> Report {
        self.report.violations += 1;
        self.report.violation = Some(msg);
        self.report.trace = trace;
        self.report
    }

    /// The report of a search that took every state within its bounds.
    fn finish(mut self) -> Report {
        self.report.complete = true;
        self.post();
        self.report
    }
}

/// The fingerprints of the states seen, hashed by their own bits (they are
/// hashes already).
type Seen = hashbrown::HashSet<u128, std::hash::BuildHasherDefault<PrintHasher>>;

/// A fingerprint's hash for [`Seen`]: its two halves folded.
#[derive(Default)]
struct PrintHasher(u64);

impl Hasher for PrintHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u128(&mut self, x: u128) {
        self.0 ^= x as u64 ^ (x >> 64) as u64;
    }
}

/// A state's 128-bit fingerprint: two lanes of 64 bits, each folding in
/// the encoding's words (and its length) by a step that is one-to-one for
/// a given word, with its own constants and view of the word, each
/// finished by an avalanche.
fn fingerprint(bytes: &[u8]) -> u128 {
    const M: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0xc2b2_ae3d_27d4_eb4f];
    let mut a = 0x243f_6a88_85a3_08d3 ^ bytes.len() as u64;
    let mut b = 0x1319_8a2e_0370_7344 ^ (bytes.len() as u64).rotate_left(32);
    let mut step = |w: u64| {
        a = (a ^ w).wrapping_mul(M[0]).rotate_left(29);
        b = (b ^ w.rotate_left(32)).wrapping_mul(M[1]).rotate_left(37);
    };
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut x = [0u8; 8];
        x.copy_from_slice(w);
        step(u64::from_le_bytes(x));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut x = [0u8; 8];
        x[..tail.len()].copy_from_slice(tail);
        step(u64::from_le_bytes(x));
    }
    // The finalizer of MurmurHash3, on each lane.
    let fmix = |mut h: u64| {
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    };
    ((fmix(a) as u128) << 64) | fmix(b) as u128
}

/// A settled machine's state, all of it that changes as it runs but the
/// handlers' counters (which no handler, invariant or report of a search
/// reads: a restored machine keeps its own): restored into a machine built
/// by the same model, it makes that machine the one it was taken from (the
/// handlers, parameters and message types are the same by construction,
/// and a settled engine holds no event). The hardware is packed into bytes
/// (see [`crate::pack`]): a search holds millions of these at once.
struct Snapshot<S> {
    /// The engine's clock and counts, when the ledger's counts start, each
    /// node's hardware, the packets, the dirty list, the held messages and,
    /// if the model packs them, the node states, packed ...
    bytes: Vec<u8>,
    /// ... but what a node holds only while watched, traced or once it has
    /// dropped something, by node, for the nodes that hold any.
    rare: Vec<(u32, crate::node::Rare)>,
    state: Vec<S>,
}

impl<S> Snapshot<S> {
    /// The bytes a search's frontier holds for this snapshot, by its
    /// lengths (not its capacities, which depend on which pooled snapshot
    /// it was taken into): its record, its bytes, its rare parts and its
    /// node states, and its place in the frontier.
    fn held(&self) -> u64 {
        (size_of::<Snapshot<S>>()
            + size_of::<(u32, Box<Snapshot<S>>)>()
            + self.bytes.len()
            + self.rare.len() * size_of::<(u32, crate::node::Rare)>()
            + self.state.len() * size_of::<S>()) as u64
    }

    /// A snapshot of nothing yet, to pack into.
    fn empty() -> Snapshot<S> {
        Snapshot {
            bytes: Vec::new(),
            rare: Vec::new(),
            state: Vec::new(),
        }
    }
}

/// How a search keeps its states' node states: packed by the model (see
/// [`Model::pack_node`]), or copied.
struct Keep<'a, M> {
    model: &'a M,
    packed: bool,
}

impl<M> Clone for Keep<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for Keep<'_, M> {}

impl<'a, M: Model> Keep<'a, M> {
    /// Packed if the model packs the node states of `m`.
    fn new(model: &'a M, m: &Magic<M::Node>) -> Keep<'a, M> {
        let mut out = Vec::new();
        let packed = m.state.iter().all(|s| model.pack_node(s, &mut out));
        Keep {
            model,
            packed: packed && !m.state.is_empty(),
        }
    }
}

impl<S: NodeState + Clone> Magic<S> {
    /// The machine's state, if it is settled (no event scheduled, not halted).
    fn snapshot<M: Model<Node = S>>(&self, keep: Keep<'_, M>) -> Option<Snapshot<S>> {
        let mut s = Snapshot::empty();
        if !self.pack_into(keep, &mut s.bytes, &mut s.rare) {
            return None;
        }
        if !keep.packed {
            s.state = self.state.clone();
        }
        Some(s)
    }

    /// The machine's hardware, and its node states if `keep` packs them,
    /// packed into `out`, and what the nodes' packing leaves out into
    /// `rare`; false, and nothing written, if the machine is not settled.
    fn pack_into<M: Model<Node = S>>(
        &self,
        keep: Keep<'_, M>,
        out: &mut Vec<u8>,
        rare: &mut Vec<(u32, crate::node::Rare)>,
    ) -> bool {
        let (None, Some(clock)) = (&self.halt, self.engine.idle()) else {
            return false;
        };
        out.clear();
        clock.pack(out);
        crate::pack::put(out, self.ledger_from.0);
        for h in &self.hw {
            h.pack(out);
        }
        self.packets.pack(out);
        crate::node::put_u32s(out, &self.dirty);
        crate::pack::put_opt(out, self.held.as_ref().map(|h| h.len() as u64));
        for h in self.held.iter().flatten() {
            h.pack(out);
        }
        if keep.packed {
            for n in &self.state {
                keep.model.pack_node(n, out);
            }
        }
        rare.clear();
        for (n, h) in self.hw.iter().enumerate() {
            if let Some(r) = h.rare() {
                rare.push((n as u32, r));
            }
        }
        true
    }

    /// The machine's state in a snapshot from `pool` if it holds one, in a
    /// new one otherwise; `None` if the machine is not settled. It is
    /// packed into `scratch` first, so the snapshot, which may wait long
    /// in the frontier, holds little more than its bytes. Node states the
    /// model does not pack are moved by trading storage: this machine must
    /// then be restored before it runs again.
    fn snapshot_pooled<M: Model<Node = S>>(
        &mut self,
        keep: Keep<'_, M>,
        pool: &mut Pool<S>,
        scratch: &mut Vec<u8>,
    ) -> Option<Box<Snapshot<S>>> {
        let mut s = pool.pop().unwrap_or_else(|| Box::new(Snapshot::empty()));
        if !self.pack_into(keep, scratch, &mut s.rare) {
            pool.push(s);
            return None;
        }
        let n = scratch.len();
        if !(n..=n + n / 8).contains(&s.bytes.capacity()) {
            s.bytes = Vec::with_capacity(n);
        }
        s.bytes.clear();
        s.bytes.extend_from_slice(scratch);
        if !keep.packed {
            if s.state.len() == self.state.len() {
                std::mem::swap(&mut self.state, &mut s.state);
            } else {
                s.state.clone_from(&self.state);
            }
        }
        Some(s)
    }

    /// Make this machine the one `s` was taken from; false if its bytes
    /// did not unpack whole (a snapshot of another model's machine).
    fn restore<M: Model<Node = S>>(&mut self, keep: Keep<'_, M>, s: &Snapshot<S>) -> bool {
        let mut r = crate::pack::Reader::new(&s.bytes);
        self.engine.set_idle(crate::engine::Idle::unpack(&mut r));
        self.ledger_from = r.cycles();
        let mut rare = s.rare.iter().peekable();
        for (n, h) in self.hw.iter_mut().enumerate() {
            let x = rare.next_if(|(at, _)| *at as usize == n);
            h.unpack(&mut r, x.map(|(_, x)| x));
        }
        self.packets.unpack(&mut r);
        crate::node::read_u32s(&mut r, &mut self.dirty);
        match r.opt() {
            None => self.held = None,
            Some(n) => {
                let held = self.held.get_or_insert_with(Vec::new);
                held.clear();
                for _ in 0..n {
                    match crate::node::Held::unpack(&mut r) {
                        Some(h) => held.push(h),
                        None => return false,
                    }
                }
            }
        }
        if keep.packed {
            for n in &mut self.state {
                keep.model.unpack_node(n, &mut r);
            }
        } else {
            self.state.clone_from(&s.state);
        }
        self.halt = None;
        // The slices recorded are the restored timelines' (a trace cap
        // counts a path's, not every state's the machine was made).
        self.recount_traced();
        r.done() && rare.next().is_none()
    }
}

/// What a search says of a snapshot that did not restore whole (a fault
/// of the explorer's, not of the model).
const NOT_RESTORED: &str = "a state's snapshot did not restore whole";

/// What one state's moves led to, in the order of its moves.
enum Expansion<S> {
    /// No move is left: what [`Model::finished`] said.
    Finished(Result<(), String>),
    /// Each move made, up to the first that broke something.
    Moves(Vec<(Move, Child<S>)>),
}

/// What one move led to: a state not seen before its batch, one seen, or
/// what it broke.
type Child<S> = Result<Option<Found<S>>, String>;

/// A state a move reached that was not among those seen before its batch:
/// its fingerprint and the machine.
type Found<S> = (u128, Box<Snapshot<S>>);

/// Snapshots done with, to take new ones into.
type Pool<S> = Vec<Box<Snapshot<S>>>;

/// What a thread's expansions write into and clear: kept for its storage.
#[derive(Default)]
struct Work {
    /// A state's encoding, and its least renamed one so far.
    buf: [Vec<u8>; 2],
    /// A state's moves.
    moves: Vec<Move>,
    /// Its held messages that may be released, then the model's moves.
    numbers: Vec<u32>,
    /// A new state, packed, before it is copied into its snapshot.
    pack: Vec<u8>,
}

impl Work {
    /// Every move `m` offers into `self.moves`: each held message that may
    /// be released, then each of the model's actions.
    fn list_moves<M: Model>(&mut self, model: &M, m: &Magic<M::Node>) {
        m.deliveries_into(&mut self.numbers);
        self.moves.clear();
        self.moves
            .extend(self.numbers.iter().map(|&i| Move::Deliver(i)));
        self.numbers.clear();
        model.actions(m, &mut self.numbers);
        self.moves
            .extend(self.numbers.iter().map(|&a| Move::Act(a)));
    }
}

/// States expanded at once, per thread: their results are merged in the
/// frontier's order, so the batch size changes nothing but the memory.
const BATCH: usize = 512;

/// Snapshots kept for reuse, per thread: a batch's expanded states and
/// the states found already seen go back to the pool, and a new state's
/// snapshot is taken into one from it, so a search in its stride makes
/// none.
const POOL: usize = 4 * BATCH;

/// The threads a search uses when [`Bounds::threads`] is 0.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Make every move of the state `s` on `m` (a scratch machine of the same
/// model), stopping at the first that breaks something. A state reached
/// that `seen` already holds is not kept; one that is not is packed into
/// a snapshot from `pool` (node states the model does not pack are moved
/// into it), so `m` is left in no particular state (each expansion
/// restores it first).
#[allow(clippy::too_many_arguments)]
fn expand<M>(
    keep: Keep<'_, M>,
    bounds: Bounds,
    m: &mut Magic<M::Node>,
    s: &Snapshot<M::Node>,
    seen: &Seen,
    sym: &Symmetry,
    work: &mut Work,
    pool: &mut Pool<M::Node>,
) -> Expansion<M::Node>
where
    M: Model,
    M::Node: Clone,
{
    let model = keep.model;
    if !m.restore(keep, s) {
        return Expansion::Finished(Err(NOT_RESTORED.to_string()));
    }
    #[cfg(debug_assertions)]
    {
        // What is restored packs to the bytes it was restored from: an
        // unpack that left a field out, in the hardware or the model's
        // node state, shows here in every debug test of a search.
        let (mut again, mut rare) = (Vec::new(), Vec::new());
        m.pack_into(keep, &mut again, &mut rare);
        debug_assert!(again == s.bytes, "a restored state packs differently");
    }
    work.list_moves(model, m);
    let Work {
        buf, moves, pack, ..
    } = work;
    if moves.is_empty() {
        return Expansion::Finished(model.finished(m));
    }
    let mut out = Vec::with_capacity(moves.len());
    for (k, &mv) in moves.iter().enumerate() {
        if k > 0 && !m.restore(keep, s) {
            out.push((mv, Err(NOT_RESTORED.to_string())));
            break;
        }
        if let Err(e) = make(model, bounds, m, mv) {
            out.push((mv, Err(e)));
            break;
        }
        let fp = state_print(model, m, sym, buf);
        let found = if seen.contains(&fp) {
            None
        } else {
            match m.snapshot_pooled(keep, pool, pack) {
                Some(snap) => Some((fp, snap)),
                None => {
                    out.push((mv, Err("the machine did not settle".to_string())));
                    break;
                }
            }
        };
        out.push((mv, Ok(found)));
    }
    Expansion::Moves(out)
}

/// Search every order of `model`'s moves, breadth first, within `bounds`,
/// keeping each state's machine (its snapshot, restored into a scratch
/// machine to make each move) rather than replaying its moves: the same
/// report as [`explore`], in a fraction of the time.
///
/// States are expanded [`Bounds::threads`] at a time, and what they led to
/// is taken in the order a one-thread search takes it: the report (states,
/// transitions, depth, the first violation and its shortest trace) is the
/// same whatever the number of threads. Bounds out of their ranges are
/// refused, naming the field ([`Bounds::validate`]).
pub fn explore_restoring<M>(model: &M, bounds: Bounds) -> Result<Report, crate::OutOfRange>
where
    M: Model + Sync,
    M::Node: Clone + Send + Sync,
{
    bounds.validate()?;
    Ok(search_restoring(model, bounds))
}

/// [`explore_restoring`] within bounds already checked.
fn search_restoring<M>(model: &M, bounds: Bounds) -> Report
where
    M: Model + Sync,
    M::Node: Clone + Send + Sync,
{
    let threads = match bounds.threads {
        0 => cores(),
        n => n,
    }
    .min(MAX_THREADS);
    let mut found = Search::new(bounds);
    // One scratch machine per thread, into which states are restored.
    let mut scratch = Vec::with_capacity(threads);
    for _ in 0..threads {
        match start(model, bounds) {
            Ok(m) => scratch.push(m),
            Err(e) => return found.fail(e, Vec::new()),
        }
    }
    let root = &scratch[0];
    let sym = &renamings(model, bounds, root);
    found.report.symmetry = !sym.perms.is_empty();
    let mut works: Vec<Work> = (0..threads).map(|_| Work::default()).collect();
    let fp = state_print(model, root, sym, &mut works[0].buf);
    let keep = Keep::new(model, root);
    let Some(snap) = root.snapshot(keep) else {
        return found.fail("the machine did not settle".into(), Vec::new());
    };
    found.root(fp, snap.held());
    let mut frontier: VecDeque<(u32, Box<Snapshot<M::Node>>)> = VecDeque::new();
    frontier.push_back((0, Box::new(snap)));
    let mut pool: Pool<M::Node> = Vec::new();
    while !frontier.is_empty() {
        let n = frontier.len().min(BATCH * threads);
        let batch: Vec<_> = frontier.drain(..n).collect();
        let seen = &found.seen;
        let results: Vec<Expansion<M::Node>> = if threads == 1 || n == 1 {
            let (m, work, pool) = (&mut scratch[0], &mut works[0], &mut pool);
            batch
                .iter()
                .map(|(_, s)| expand(keep, bounds, m, s, seen, sym, work, pool))
                .collect()
        } else {
            let per = n.div_ceil(threads);
            let chunks = n.div_ceil(per);
            // Each thread takes its share of the pool and gives back what
            // it has left.
            let mut pools: Vec<Pool<M::Node>> = (0..chunks)
                .map(|i| pool.split_off(pool.len() - pool.len() / (chunks - i)))
                .collect();
            let out = std::thread::scope(|sc| {
                let handles: Vec<_> = batch
                    .chunks(per)
                    .zip(scratch.iter_mut())
                    .zip(works.iter_mut())
                    .zip(pools.iter_mut())
                    .map(|(((chunk, m), work), pool)| {
                        sc.spawn(move || {
                            chunk
                                .iter()
                                .map(|(_, s)| expand(keep, bounds, m, s, seen, sym, work, pool))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            });
            pool.extend(pools.into_iter().flatten());
            out
        };
        for ((v, s), x) in batch.iter().zip(results) {
            let v = *v;
            found.expanding(s.held());
            let children = match x {
                Expansion::Finished(Ok(())) => continue,
                Expansion::Finished(Err(e)) => {
                    let trace = describe_path(model, bounds, &path_to(&found.visits, v));
                    return found.fail(e, trace);
                }
                Expansion::Moves(children) => children,
            };
            let depth = found.visits[v as usize].depth + 1;
            for (mv, child) in children {
                found.report.transitions += 1;
                match child {
                    Err(e) => {
                        let mut p = path_to(&found.visits, v);
                        p.push(mv);
                        let trace = describe_path(model, bounds, &p);
                        return found.fail(e, trace);
                    }
                    Ok(None) => {}
                    Ok(Some((fp, snap))) => match found.admit(v, mv, depth, fp, snap.held()) {
                        Admitted::New(w) => frontier.push_back((w, snap)),
                        Admitted::Seen => pool.push(snap),
                        Admitted::Full => return found.report,
                    },
                }
            }
        }
        pool.extend(batch.into_iter().map(|(_, s)| s));
        pool.truncate(POOL * threads);
    }
    found.finish()
}

/// Whether `model`'s states restore whole: the restoring search, on one
/// thread and on three, reports what the replaying one does (states, moves,
/// depth, the first violation and its shortest trace). The replaying
/// search's report, or what differs. A test for a model's node state
/// (its `Clone`, or its [`Model::pack_node`]): a part a snapshot leaves
/// out shows here as another count of states or another trace. The memory
/// maximum is set to its most ([`MAX_BYTES`]): the two searches hold
/// different things for a state, so it would stop them at different ones.
pub fn restoring_agrees<M>(model: &M, bounds: Bounds) -> Result<Report, String>
where
    M: Model + Sync,
    M::Node: Clone + Send + Sync,
{
    let bounds = Bounds {
        max_bytes: MAX_BYTES,
        ..bounds
    };
    let replayed = explore(model, bounds).map_err(|e| e.to_string())?;
    for threads in [1, 3] {
        let restored =
            explore_restoring(model, Bounds { threads, ..bounds }).map_err(|e| e.to_string())?;
        if restored != replayed {
            return Err(format!(
                "on {threads} thread(s) the restoring search reports {restored:?}, \
                 the replaying one {replayed:?}"
            ));
        }
    }
    Ok(replayed)
}

/// Search every order of `model`'s moves, breadth first, within `bounds`,
/// on one thread, rebuilding each state by replaying its moves from the
/// initial machine: for a model whose node state cannot be cloned or sent
/// between threads. [`explore_restoring`] is the same search, faster.
/// Bounds out of their ranges are refused, naming the field
/// ([`Bounds::validate`]).
pub fn explore<M: Model>(model: &M, bounds: Bounds) -> Result<Report, crate::OutOfRange> {
    bounds.validate()?;
    Ok(search(model, bounds))
}

/// [`explore`] within bounds already checked.
fn search<M: Model>(model: &M, bounds: Bounds) -> Report {
    let mut found = Search::new(bounds);
    let mut queue = VecDeque::new();
    let mut work = Work::default();
    let root = match start(model, bounds) {
        Ok(m) => m,
        Err(e) => return found.fail(e, Vec::new()),
    };
    let sym = renamings(model, bounds, &root);
    found.report.symmetry = !sym.perms.is_empty();
    // A state waits to be expanded as its number in the queue.
    let queued = size_of::<u32>() as u64;
    found.root(state_print(model, &root, &sym, &mut work.buf), queued);
    queue.push_back(0u32);
    while let Some(v) = queue.pop_front() {
        found.expanding(queued);
        let path = path_to(&found.visits, v);
        let m = match replay(model, bounds, &path) {
            Ok(m) => m,
            Err(e) => return found.fail(format!("replay diverged: {e}"), Vec::new()),
        };
        work.list_moves(model, &m);
        let Work { buf, moves, .. } = &mut work;
        if moves.is_empty() {
            if let Err(e) = model.finished(&m) {
                let trace = describe_path(model, bounds, &path);
                return found.fail(e, trace);
            }
            continue;
        }
        let depth = found.visits[v as usize].depth + 1;
        let last = moves.len() - 1;
        let mut base = Some(m);
        for (k, &mv) in moves.iter().enumerate() {
            found.report.transitions += 1;
            // The machine at `v` serves its last move as is; the others replay.
            let kept = if k == last { base.take() } else { None };
            let mut machine = match kept.map_or_else(|| replay(model, bounds, &path), Ok) {
                Ok(m) => m,
                Err(e) => return found.fail(format!("replay diverged: {e}"), Vec::new()),
            };
            let machine = &mut machine;
            if let Err(e) = make(model, bounds, machine, mv) {
                let mut p = path.clone();
                p.push(mv);
                let trace = describe_path(model, bounds, &p);
                return found.fail(e, trace);
            }
            match found.admit(v, mv, depth, state_print(model, machine, &sym, buf), queued) {
                Admitted::New(w) => queue.push_back(w),
                Admitted::Seen => {}
                Admitted::Full => return found.report,
            }
        }
    }
    found.finish()
}

fn encode<M: Model>(model: &M, m: &Magic<M::Node>, out: &mut Vec<u8>) {
    m.encode_hardware(out);
    model.encode(m, out);
}

/// The renamings a search takes states up to, and the nodes they permute
/// (ascending): none for the plain search.
#[derive(Default)]
struct Symmetry {
    among: Vec<u32>,
    perms: Vec<Renaming>,
}

/// The renamings a search takes states up to: none for the plain search.
fn renamings<M: Model>(model: &M, bounds: Bounds, m: &Magic<M::Node>) -> Symmetry {
    if !bounds.symmetry {
        return Symmetry::default();
    }
    let mut among = model.symmetric(m);
    among.retain(|&n| n < m.nodes());
    among.sort_unstable();
    among.dedup();
    if among.len() < 2 {
        return Symmetry::default();
    }
    // More than a search can hold the renamings of: the plain search,
    // which the report says ran (a `Checker` refuses them up front).
    let Some(perms) = Renaming::permuting(m.nodes(), &among) else {
        return Symmetry::default();
    };
    Symmetry { among, perms }
}

/// The state's fingerprint: of its encoding, or with `perms`, of the least
/// of its renamed encodings. `bufs` are where they are written (kept for
/// their storage).
fn state_print<M: Model>(
    model: &M,
    m: &Magic<M::Node>,
    sym: &Symmetry,
    bufs: &mut [Vec<u8>; 2],
) -> u128 {
    let [buf, best] = bufs;
    buf.clear();
    if sym.perms.is_empty() {
        encode(model, m, buf);
        return fingerprint(buf);
    }
    // Only the renamings that order the symmetric nodes by their
    // signatures: the same set, renamed, for every state of an orbit.
    let sig: smallvec::SmallVec<[u64; 8]> = (0..m.nodes())
        .map(|n| {
            let hw = m.node_signature(n);
            hw.rotate_left(32)
                ^ model
                    .node_signature(m, n)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        })
        .collect();
    let ordered = |r: &Renaming| {
        sym.among
            .windows(2)
            .all(|w| sig[r.from(w[0]) as usize] <= sig[r.from(w[1]) as usize])
    };
    let mut first = true;
    for r in sym.perms.iter().filter(|r| ordered(r)) {
        buf.clear();
        // Node by node, stopping as soon as this encoding is past the
        // least so far: where the two first differ decides, whatever
        // follows. The first renaming's is the least so far.
        let lead = std::mem::take(&mut first);
        let (mut same, mut decided) = (0, lead);
        let mut past = |buf: &[u8]| {
            if !decided {
                let n = buf.len().min(best.len());
                match buf[same..n].cmp(&best[same..n]) {
                    std::cmp::Ordering::Less => decided = true,
                    std::cmp::Ordering::Greater => return true,
                    std::cmp::Ordering::Equal => same = n,
                }
            }
            false
        };
        let stopped = (0..m.nodes()).any(|j| {
            m.encode_node_renamed(model, r, j, buf);
            past(buf)
        });
        if stopped {
            continue;
        }
        m.encode_held_renamed(model, r, buf);
        model.encode_renamed(m, r, buf);
        if lead || *buf < *best {
            std::mem::swap(buf, best);
        }
    }
    fingerprint(best)
}

fn path_to(visits: &[Visit], mut v: u32) -> Vec<Move> {
    let mut path = Vec::new();
    while visits[v as usize].parent != u32::MAX {
        path.push(visits[v as usize].mv);
        v = visits[v as usize].parent;
    }
    path.reverse();
    path
}

/// The initial machine, holding, settled.
fn start<M: Model>(model: &M, bounds: Bounds) -> Result<Magic<M::Node>, String> {
    let mut m = model.build()?;
    // The machine as built is a state too: one that breaks the invariant
    // before anything moves is a violation, with an empty trace.
    model.invariant(&m)?;
    m.hold_deliveries();
    settle(model, bounds, &mut m)?;
    Ok(m)
}

fn replay<M: Model>(model: &M, bounds: Bounds, path: &[Move]) -> Result<Magic<M::Node>, String> {
    let mut m = start(model, bounds)?;
    for &mv in path {
        make(model, bounds, &mut m, mv)?;
    }
    Ok(m)
}

fn make<M: Model>(
    model: &M,
    bounds: Bounds,
    m: &mut Magic<M::Node>,
    mv: Move,
) -> Result<(), String> {
    match mv {
        Move::Deliver(i) => {
            if !m.deliver(i) {
                return Err(format!("held message {i} cannot be released"));
            }
        }
        Move::Act(a) => model.act(m, a),
    }
    model.invariant(m)?;
    settle(model, bounds, m)
}

/// Run until nothing is scheduled, checking the invariant after each
/// instant; a run that halts (its budget, the end of time) is an error.
fn settle<M: Model>(model: &M, bounds: Bounds, m: &mut Magic<M::Node>) -> Result<(), String> {
    let mut n = 0u64;
    while m.step().is_some() {
        model.invariant(m)?;
        n += 1;
        if n > bounds.settle_instants {
            return Err(format!(
                "livelock: still busy after {} instants without a delivery (the \
                 settle_instants bound: a machine that settles more slowly than it \
                 is counted livelocked; a larger bound tells the two apart)",
                bounds.settle_instants
            ));
        }
    }
    match m.halted() {
        Some(h) => Err(h.to_string()),
        None => Ok(()),
    }
}

fn describe_path<M: Model>(model: &M, bounds: Bounds, path: &[Move]) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(mut m) = start(model, bounds) else {
        return out;
    };
    for (i, &mv) in path.iter().enumerate() {
        let what = match mv {
            Move::Deliver(d) => m.describe_delivery(d),
            Move::Act(a) => model.describe(&m, a),
        };
        out.push(format!("{}. {what}", i + 1));
        if make(model, bounds, &mut m, mv).is_err() {
            break;
        }
    }
    out
}

type Invariant<S> = Box<dyn Fn(&[S]) -> Result<(), String> + Send + Sync>;
type AtRest<S> = Box<dyn Fn(&Magic<S>) -> Result<(), String> + Send + Sync>;
type Encode<S> = Box<dyn Fn(&S, crate::time::Cycles, &mut Vec<u8>) + Send + Sync>;
type Build<S> = Box<dyn Fn() -> Result<Magic<S>, String> + Send + Sync>;
type EncodeRenamed<S> = Box<dyn Fn(&S, &Renaming, &mut Vec<u8>) + Send + Sync>;

/// A protocol author's check: a machine of the author's handlers (built
/// through [`crate::MagicBuilder`] or [`Magic::with`]), the author's
/// invariants over the node states, searched by [`explore`] like the kit's
/// own protocols.
///
/// The node state is cloned to keep a state and shared between the
/// search's threads (`Clone + Send + Sync`), as are the closures.
///
/// A node state is encoded by its `Debug` text unless [`Checker::encode`]
/// gives a canonical encoding. `Debug` text that holds times keeps states
/// reached at different times apart: the search is as sound, only larger.
///
/// ```
/// use magic::check::{Bounds, Checker};
/// use magic::{Magic, MagicParams, NodeState};
///
/// #[derive(Clone, Debug, Default)]
/// struct Idle;
/// impl NodeState for Idle {}
/// struct Nothing;
/// impl magic::Protocol for Nothing {
///     type Node = Idle;
///     fn name(&self) -> &'static str { "nothing" }
///     fn node(&self, _: magic::NodeId, _: u32) -> Idle { Idle }
///     fn install<S: 'static>(&self, _: &mut magic::Install<'_, S, Idle>) {}
/// }
/// let check = Checker::new(|| {
///     Magic::with(MagicParams::default(), 2, &Nothing).map_err(|e| e.to_string())
/// })
/// .invariant(|nodes: &[Idle]| if nodes.len() == 2 { Ok(()) } else { Err("lost a node".into()) });
/// let r = check.run(Bounds::default()).unwrap();
/// assert!(r.complete && r.violations == 0 && r.states == 1 && !r.symmetry);
/// // A search that cannot settle is refused, naming the bound.
/// let never = Bounds { settle_instants: 0, ..Bounds::default() };
/// assert_eq!(check.run(never).unwrap_err().field, "settle_instants");
/// // The two nodes play the same role, and their state names no node.
/// let check = check.symmetric([0, 1], |_: &Idle, _, _| {});
/// assert!(check.run(Bounds::default()).unwrap().symmetry);
/// ```
pub struct Checker<S> {
    build: Build<S>,
    invariants: Vec<Invariant<S>>,
    at_rest: Vec<AtRest<S>>,
    encode: Option<Encode<S>>,
    symmetric: Vec<u32>,
    /// The list of symmetric nodes went on past what is read of it.
    symmetric_endless: bool,
    /// The first node the list named twice.
    symmetric_twice: Option<u32>,
    encode_renamed: Option<EncodeRenamed<S>>,
}

/// The most items a list of symmetric nodes is read to (repeats count).
const MOST_SYMMETRIC_ITEMS: usize = 1 << 16;

impl<S: NodeState + Clone + Send + Sync + std::fmt::Debug> Checker<S> {
    /// A check of the machines `build` makes (each one the same, ready to
    /// run: processors started, data in place).
    pub fn new(build: impl Fn() -> Result<Magic<S>, String> + Send + Sync + 'static) -> Self {
        Checker {
            build: Box::new(build),
            invariants: Vec::new(),
            at_rest: Vec::new(),
            encode: None,
            symmetric: Vec::new(),
            symmetric_endless: false,
            symmetric_twice: None,
            encode_renamed: None,
        }
    }

    /// What must hold of the node states at every instant.
    pub fn invariant(
        mut self,
        f: impl Fn(&[S]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.invariants.push(Box::new(f));
        self
    }

    /// What must hold of the machine when no move is left (beside nothing
    /// being stuck or refused, which is always checked).
    pub fn at_rest(
        mut self,
        f: impl Fn(&Magic<S>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.at_rest.push(Box::new(f));
        self
    }

    /// A node state's canonical encoding (given the current cycle, so
    /// times can be made relative), in place of its `Debug` text.
    pub fn encode(
        mut self,
        f: impl Fn(&S, crate::time::Cycles, &mut Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        self.encode = Some(Box::new(f));
        self
    }

    /// The nodes that play the same role ([`Model::symmetric`]), and a node
    /// state's canonical encoding with the nodes it names renamed by the
    /// [`Renaming`] (and without times, which would keep renamed states
    /// apart). Messages and data are taken to name no node but their source
    /// and destination. A search up to symmetry ([`Checker::run`]) refuses
    /// a list of more than [`MOST_SYMMETRIC`] nodes, a node the machine
    /// does not have, and a node named twice, each naming `symmetric`.
    pub fn symmetric(
        mut self,
        nodes: impl IntoIterator<Item = u32>,
        encode: impl Fn(&S, &Renaming, &mut Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        // Distinct nodes, read no further than one past what a search
        // takes (the run refuses more): an endless list is not read for
        // ever.
        let mut items = nodes.into_iter();
        let mut distinct = std::collections::BTreeSet::new();
        self.symmetric_twice = None;
        for n in items.by_ref().take(MOST_SYMMETRIC_ITEMS) {
            if !distinct.insert(n) {
                self.symmetric_twice.get_or_insert(n);
            }
        }
        self.symmetric_endless = items.next().is_some();
        self.symmetric = distinct.into_iter().collect();
        self.encode_renamed = Some(Box::new(encode));
        self
    }

    /// Search every order of the machine's deliveries within `bounds`
    /// ([`explore_restoring`]); bounds out of their ranges are refused,
    /// naming the field.
    pub fn run(&self, bounds: Bounds) -> Result<Report, crate::OutOfRange> {
        // The plain search builds no renaming: only a search up to
        // symmetry is held to the nodes it can rename.
        if bounds.symmetry {
            let allowed = || {
                format!(
                    "at most {MOST_SYMMETRIC} of the machine's nodes (their renamings are all held), listed in at most {MOST_SYMMETRIC_ITEMS} items"
                )
            };
            if self.symmetric_endless {
                let got = format!("more than {MOST_SYMMETRIC_ITEMS} items");
                return Err(crate::OutOfRange::new("symmetric", allowed(), got));
            }
            if let Some(n) = self.symmetric_twice {
                let allowed =
                    "each node once (which renaming a repeat means, the list does not say)";
                return Err(crate::OutOfRange::new("symmetric", allowed, n));
            }
            if self.symmetric.len() > MOST_SYMMETRIC {
                return Err(crate::OutOfRange::new(
                    "symmetric",
                    allowed(),
                    self.symmetric.len(),
                ));
            }
            // Only nodes of the machine (one that does not build is the
            // search's to report): a node past it is a slip that would
            // leave the search plainer than asked, unsaid.
            if let (Some(&last), Ok(m)) = (self.symmetric.last(), (self.build)()) {
                if last >= m.nodes() {
                    let allowed =
                        format!("nodes of the machine, 0 to {}", m.nodes().saturating_sub(1));
                    return Err(crate::OutOfRange::new("symmetric", allowed, last));
                }
            }
        }
        explore_restoring(self, bounds)
    }
}

impl<S: NodeState + Clone + Send + Sync + std::fmt::Debug> Model for Checker<S> {
    type Node = S;

    fn build(&self) -> Result<Magic<S>, String> {
        (self.build)()
    }

    fn encode(&self, m: &Magic<S>, out: &mut Vec<u8>) {
        use std::io::Write;
        for s in m.states() {
            match &self.encode {
                Some(f) => f(s, m.now(), out),
                None => {
                    let _ = write!(out, "{s:?}");
                }
            }
        }
    }

    fn invariant(&self, m: &Magic<S>) -> Result<(), String> {
        self.invariants.iter().try_for_each(|f| f(m.states()))
    }

    fn symmetric(&self, _m: &Magic<S>) -> Vec<u32> {
        match self.encode_renamed {
            Some(_) => self.symmetric.clone(),
            None => Vec::new(),
        }
    }

    fn encode_renamed(&self, m: &Magic<S>, r: &Renaming, out: &mut Vec<u8>) {
        let Some(f) = &self.encode_renamed else {
            return self.encode(m, out);
        };
        for j in 0..m.nodes() {
            if let Some(s) = m.states().get(r.from(j) as usize) {
                f(s, r, out);
            }
        }
    }

    fn finished(&self, m: &Magic<S>) -> Result<(), String> {
        nothing_stuck(m)?;
        nothing_dropped(m)?;
        self.at_rest.iter().try_for_each(|f| f(m))
    }
}

/// A node's buffers held, whether its PP is running, and its drops: the
/// part of its encoding no renaming touches.
fn encode_held_and_drops(hw: &crate::node::NodeHw, out: &mut Vec<u8>) {
    out.extend_from_slice(&(hw.bufs.held() as u32).to_le_bytes());
    out.push(hw.pp_running as u8);
    let d = hw.drops();
    for x in [
        d.unhandled,
        d.bad_address,
        d.bad_buffer,
        d.bad_node,
        d.swq_full,
        d.too_long,
        d.undecodable,
    ] {
        out.extend_from_slice(&x.to_le_bytes());
    }
}
