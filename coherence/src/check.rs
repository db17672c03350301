//! The directory protocol's own handlers under exhaustive search
//! (`flashkit check coherence`).
//!
//! A small machine runs the real [`crate::protocol`] handlers with every
//! delivery held (see [`magic::check`]). Each processor issues up to `ops`
//! accesses, and which access it issues next (a load, a store or an
//! eviction of any of `lines` lines) is one of the search's moves, so the
//! search covers every program as well as every order of messages. With
//! few data buffers the refusal paths (NAK for want of a buffer) are in the
//! space too.
//!
//! What must hold:
//! - at every instant, at most one dirty copy of a line and no clean copy
//!   beside it (single writer, multiple readers);
//! - every load returns the value that was the latest write at some moment
//!   while it ran (or the initial zero);
//! - no message finds the protocol in a state it does not expect;
//! - when no move is left, every access has completed, nothing is stuck or
//!   dropped, and each directory entry is idle and agrees with the caches.

use crate::directory::{Acks, DirFormat, DirState};
use crate::msg::CohMsg;
use crate::processor::Access;
use crate::protocol::{self, canonical, CohNode, CohParams, Forwards, Placement};
use magic::check::{
    explore_restoring, nothing_dropped, nothing_stuck, Bounds, Model, Renaming, Report,
};
use magic::{Cycles, LineState, Magic, MagicParams, Msg, NodeId, OutOfRange, PAddr, Region};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::protocol::Bug;

/// The configuration a coherence check explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoherenceCheck {
    /// Nodes, each with a processor (2 to 4).
    pub nodes: u32,
    /// Lines the processors touch, homed round the nodes (1 to 4).
    pub lines: u32,
    /// Accesses each processor issues (0 to 8).
    pub ops: u32,
    /// MAGIC data buffers per node (2 to 16: the protocol needs two, see
    /// [`MIN_BUFFERS`]).
    pub buffers: u32,
    /// How directory entries hold their sharers.
    pub format: DirFormat,
    /// Links in each node's pointer store (dynamic pointers).
    pub pointer_store: u32,
    /// Who collects invalidation acknowledgements.
    pub acks: Acks,
    /// Clean evictions send replacement hints.
    pub hints: bool,
    /// What an owner does with a forward that arrives before it has used
    /// its reply.
    pub forwards: Forwards,
    /// A planted bug, if any.
    pub inject: Option<Bug>,
}

/// The fewest data buffers per node the coherence protocol runs with
/// ([`crate::protocol::LEAST_DATA_BUFFERS`]).
pub const MIN_BUFFERS: u32 = crate::protocol::LEAST_DATA_BUFFERS as u32;

impl Default for CoherenceCheck {
    /// The default bounds of `flashkit check coherence`.
    fn default() -> Self {
        CoherenceCheck {
            nodes: 3,
            lines: 1,
            ops: 2,
            buffers: 2,
            format: DirFormat::BitVector,
            pointer_store: protocol::POINTER_STORE,
            acks: Acks::Home,
            hints: true,
            forwards: Forwards::Nak,
            inject: None,
        }
    }
}

const BASE: u64 = 0x8000;
const KINDS: u32 = 3;

impl CoherenceCheck {
    /// Refuse bounds outside the documented ranges, naming the field.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        OutOfRange::check("nodes", self.nodes, 2, 4)?;
        OutOfRange::check("lines", self.lines, 1, 4)?;
        OutOfRange::check("ops", self.ops, 0, 8)?;
        if !(MIN_BUFFERS..=16).contains(&self.buffers) {
            let allowed = format!(
                "from {MIN_BUFFERS} to 16 (a requester holds a reply's buffer while it \
                 waits for acknowledgements, and another data reply may wait for one)"
            );
            return Err(OutOfRange::new("buffers", allowed, self.buffers));
        }
        // A bug planted where it changes nothing would make a clean report
        // look like a check that passed with the bug in.
        if let Some(b) = self.inject.filter(|b| !b.acts_under(self.acks)) {
            let allowed = format!("a bug that acts with acks {}", self.acks.name());
            return Err(OutOfRange::new("inject", allowed, b.name()));
        }
        // The protocol's options as the machine gets them: the pointer
        // store's range, and its size under the directory that has one.
        self.params().1.validate()
    }

    /// Search the configuration's whole space (up to `bounds`); a
    /// configuration or bounds out of range are refused, naming the field.
    pub fn run(&self, bounds: Bounds) -> Result<Report, OutOfRange> {
        self.validate()?;
        explore_restoring(self, bounds)
    }

    /// The machine and the protocol's parameters (its options, cost
    /// sheet and planted bug) the check builds its machine with.
    pub fn params(&self) -> (MagicParams, CohParams) {
        let coh = CohParams {
            format: self.format,
            pointer_store: self.pointer_store,
            acks: self.acks,
            hints: self.hints,
            forwards: self.forwards,
            inject: self.inject,
            ..CohParams::default()
        };
        let params = MagicParams {
            data_buffers: self.buffers as usize,
            ..MagicParams::default()
        };
        (params, coh)
    }

    fn line(&self, l: u32) -> PAddr {
        let raw = PAddr::new(
            Region::Normal,
            NodeId(l % self.nodes),
            BASE + l as u64 * 128,
        );
        canonical(Placement::NodeBits, self.nodes, raw)
    }

    /// The value node `n`'s processor stores as its access number `op`
    /// (from 0): it names its writer, so a search's symmetry renames it
    /// (see [`CoherenceCheck::writer`]).
    fn value(n: u32, op: u32) -> u64 {
        (n as u64 + 1) * 1000 + op as u64 + 1
    }

    /// The writer and access number of a value [`CoherenceCheck::value`]
    /// gave (`None` for any other word, zero included).
    fn writer(&self, v: u64) -> Option<(u32, u64)> {
        let (n, op) = (v / 1000, v % 1000);
        (n >= 1 && n <= self.nodes as u64 && op >= 1 && op <= self.ops as u64)
            .then(|| (n as u32 - 1, op))
    }

    fn issued(node: &CohNode) -> u32 {
        (node.proc.results.len() + node.proc.waiting() as usize + node.proc.remaining()) as u32
    }
}

impl Model for CoherenceCheck {
    type Node = CohNode;

    fn node_signature(&self, m: &Magic<CohNode>, n: u32) -> u64 {
        m.states().get(n as usize).map_or(0, CohNode::signature)
    }

    fn pack_node(&self, s: &CohNode, out: &mut Vec<u8>) -> bool {
        s.pack(out);
        true
    }

    fn unpack_node(&self, s: &mut CohNode, r: &mut magic::pack::Reader<'_>) {
        s.unpack(r);
    }

    fn build(&self) -> Result<Magic<CohNode>, String> {
        let (params, coh) = self.params();
        protocol::machine(params, coh, self.nodes).map_err(|e| e.to_string())
    }

    fn actions(&self, m: &Magic<CohNode>, out: &mut Vec<u32>) {
        for (n, node) in (0..self.nodes).zip(m.states()) {
            if node.proc.waiting() || node.proc.remaining() > 0 || Self::issued(node) >= self.ops {
                continue;
            }
            for l in 0..self.lines {
                let cached = copy(m, NodeId(n), self.line(l)) != LineState::Uncached;
                for k in 0..KINDS {
                    // Evicting a line that is not cached does nothing.
                    if k == 2 && !cached {
                        continue;
                    }
                    out.push((n * 8 + l) * KINDS + k);
                }
            }
        }
    }

    fn act(&self, m: &mut Magic<CohNode>, a: u32) {
        let (n, l, k) = (a / KINDS / 8, a / KINDS % 8, a % KINDS);
        let line = self.line(l);
        // `actions` offers moves of the machine's nodes only.
        let Ok(node) = m.state_mut(NodeId(n)) else {
            return;
        };
        let op = Self::issued(node);
        let access = match k {
            0 => Access::Load(line),
            1 => Access::Store(line, Self::value(n, op)),
            _ => Access::Evict(line),
        };
        node.proc.push([access]);
        let now = m.now();
        // The node exists and `now` is the machine's own clock.
        let _ = m.start_processor(NodeId(n), now);
    }

    fn describe(&self, m: &Magic<CohNode>, a: u32) -> String {
        let (n, l, k) = (a / KINDS / 8, a / KINDS % 8, a % KINDS);
        let node = match m.state(NodeId(n)) {
            Ok(node) => node,
            Err(e) => return format!("n{n} processor: {e}"),
        };
        let op = Self::issued(node);
        let line = self.line(l);
        match k {
            0 => format!("n{n} processor: load L{l} ({line})"),
            1 => format!(
                "n{n} processor: store {} to L{l} ({line})",
                Self::value(n, op)
            ),
            _ => format!("n{n} processor: evict L{l} ({line})"),
        }
    }

    fn encode(&self, m: &Magic<CohNode>, out: &mut Vec<u8>) {
        for s in m.states() {
            s.encode(out);
        }
    }

    /// Every node that is no line's home: the nodes play the same role
    /// but for the lines homed on them, and the homes stay put.
    fn symmetric(&self, m: &Magic<CohNode>) -> Vec<u32> {
        let homes: Vec<u32> = (0..self.lines).map(|l| self.line(l).node().0).collect();
        (0..m.nodes()).filter(|n| !homes.contains(n)).collect()
    }

    fn encode_renamed(&self, m: &Magic<CohNode>, r: &Renaming, out: &mut Vec<u8>) {
        let node = |n: NodeId| NodeId(r.node(n.0));
        let value = |v: u64| self.rename_data(v, r);
        for j in 0..m.nodes() {
            if let Ok(s) = m.state(NodeId(r.from(j))) {
                s.encode_renamed(&node, &value, out);
            }
        }
    }

    fn rename_message(&self, m: &Magic<CohNode>, msg: &Msg, r: &Renaming) -> Msg {
        let node = |n: NodeId| NodeId(r.node(n.0));
        let renamed = match m.decode::<CohMsg>(msg) {
            Ok(CohMsg::FwdGet { requester }) => CohMsg::FwdGet {
                requester: node(requester),
            },
            Ok(CohMsg::FwdGetX { requester }) => CohMsg::FwdGetX {
                requester: node(requester),
            },
            Ok(CohMsg::Inval { collector }) => CohMsg::Inval {
                collector: node(collector),
            },
            _ => return *msg,
        };
        m.msg(msg.src, renamed)
            .to(msg.dest)
            .addr(msg.addr)
            .len(msg.len)
            .lane(msg.lane)
    }

    fn rename_data(&self, word: u64, r: &Renaming) -> u64 {
        match self.writer(word) {
            Some((n, op)) => (r.node(n) as u64 + 1) * 1000 + op,
            None => word,
        }
    }

    fn invariant(&self, m: &Magic<CohNode>) -> Result<(), String> {
        let lines: Vec<PAddr> = (0..self.lines).map(|l| self.line(l)).collect();
        single_writer(m, &lines)?;
        for (n, s) in m.states().iter().enumerate() {
            if s.stats.protocol_errors > 0 {
                return Err(format!(
                    "n{n} met a message in a state the protocol does not expect"
                ));
            }
            if s.proc.stray_fills > 0 {
                return Err(format!("n{n}'s processor got a fill it did not wait for"));
            }
        }
        data_value(m)
    }

    fn finished(&self, m: &Magic<CohNode>) -> Result<(), String> {
        nothing_stuck(m)?;
        nothing_dropped(m)?;
        if m.nodes() != self.nodes {
            return Err(format!("{} nodes, not {}", m.nodes(), self.nodes));
        }
        for (n, s) in m.states().iter().enumerate() {
            let done = s.proc.results.len();
            if done as u32 != self.ops {
                return Err(format!("n{n} finished {done} of {} accesses", self.ops));
            }
        }
        let lines: Vec<PAddr> = (0..self.lines).map(|l| self.line(l)).collect();
        directory_at_rest(m, &lines)
    }
}

/// Single writer, multiple readers, for each of `lines`, as the protocol's
/// acknowledgement collection allows it:
/// - at most one dirty copy;
/// - a clean copy beside a dirty one only when its invalidation is under
///   way with the home collecting the acknowledgements (the writer is
///   answered at once, as in the reference model); with the requester
///   collecting them, never;
/// - clean copies whose invalidation is under way hold the same bytes, and
///   so do the others; when the entry is idle and clean, memory holds them
///   too.
pub fn single_writer(m: &Magic<CohNode>, lines: &[PAddr]) -> Result<(), String> {
    for &line in lines {
        let home = line.node();
        let h = m.state(home).map_err(|e| no_home(line, e))?;
        let e = h.entry(line);
        let eager = h.params.acks == Acks::Home;
        let states: Vec<LineState> = (0..m.nodes()).map(|n| copy(m, NodeId(n), line)).collect();
        let doomed = |n: u32| eager && e.collecting() && e.inv.contains(NodeId(n));
        let dirty = states.iter().filter(|s| **s == LineState::Dirty).count();
        let live_clean = (0..m.nodes())
            .filter(|&n| states[n as usize] == LineState::Clean && !doomed(n))
            .count();
        if dirty > 1 || (dirty == 1 && live_clean > 0) {
            return Err(format!(
                "single writer broken at cycle {}: {line}'s copies are {states:?}, entry {e}",
                m.now()
            ));
        }
        for group in [true, false] {
            let mut bytes = (0..m.nodes())
                .filter(|&n| states[n as usize] == LineState::Clean && doomed(n) == group)
                .filter_map(|n| m.pcache(NodeId(n)).ok()?.bytes(line).copied());
            if let Some(first) = bytes.next() {
                let memory = (!group && !e.pending && !e.dirty)
                    .then(|| m.memory(home).ok().map(|mem| mem.line(line.line())))
                    .flatten();
                if bytes.any(|b| b != first) || memory.is_some_and(|mem| mem != first) {
                    return Err(format!(
                        "clean copies of {line} disagree at cycle {}: copies {states:?}, entry {e}",
                        m.now()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// On a quiet machine, each of `lines` has an idle directory entry that
/// agrees with the caches: no copy when uncached, clean copies of sharers
/// only (clean evictions are silent, so a sharer may have none), the
/// owner's dirty copy alone when exclusive.
pub fn directory_at_rest(m: &Magic<CohNode>, lines: &[PAddr]) -> Result<(), String> {
    for &line in lines {
        let e = m
            .state(line.node())
            .map_err(|e| no_home(line, e))?
            .entry(line);
        let holders: Vec<(u32, LineState)> = (0..m.nodes())
            .map(|n| (n, copy(m, NodeId(n), line)))
            .filter(|x| x.1 != LineState::Uncached)
            .collect();
        let agrees = !e.pending
            && match e.state(line.node()) {
                DirState::Uncached => holders.is_empty(),
                DirState::Shared(s) => holders
                    .iter()
                    .all(|&(n, st)| st == LineState::Clean && s.contains(NodeId(n))),
                DirState::Exclusive(o) => holders == [(o.0, LineState::Dirty)],
            };
        if !agrees {
            return Err(format!(
                "at rest, {line}'s directory entry ({e}) disagrees with the caches {holders:?}"
            ));
        }
    }
    Ok(())
}

/// The state of node `n`'s copy of `line` (a node the machine does not
/// have holds none).
fn copy(m: &Magic<CohNode>, n: NodeId, line: PAddr) -> LineState {
    m.pcache(n).map_or(LineState::Uncached, |c| c.state(line))
}

/// A line whose home the machine does not have, as an error.
fn no_home(line: PAddr, e: magic::NoNode) -> String {
    format!("{line}'s home: {e}")
}

/// Every finished load returned the value that was the latest write at some
/// moment between its issue and its completion (or the initial zero). With
/// acknowledgements collected at the home, a load served by a clean copy is
/// held to [`single_writer`] instead: its copy may be one whose invalidation
/// is on its way, holding the value from before the write.
pub fn data_value(m: &Magic<CohNode>) -> Result<(), String> {
    let eager = m
        .states()
        .first()
        .is_some_and(|s| s.params.acks == Acks::Home);
    let mut writes: BTreeMap<u64, Vec<(Cycles, u64)>> = BTreeMap::new();
    let mut loads = Vec::new();
    for (n, s) in m.states().iter().enumerate() {
        for r in &s.proc.results {
            match r.access {
                Access::Store(a, v) => writes.entry(a.0).or_default().push((r.done, v)),
                Access::Load(_) if eager && r.shared => {}
                Access::Load(a) => loads.push((n, a.0, r.issued, r.done, r.value.unwrap_or(0))),
                _ => {}
            }
        }
    }
    for w in writes.values_mut() {
        w.sort();
    }
    for &(n, a, issued, done, v) in &loads {
        let ws = writes.get(&a).map(Vec::as_slice).unwrap_or(&[]);
        let mut ok = false;
        let (mut from, mut current) = (Cycles(0), 0u64);
        for &(t, val) in ws.iter().chain([(Cycles(u64::MAX), 0)].iter()) {
            if current == v && from <= done && t >= issued {
                ok = true;
                break;
            }
            (from, current) = (t, val);
        }
        if !ok {
            return Err(format!(
                "n{n} loaded {v} from {a:#x} during cycles {issued}..{done}, \
                 but the writes were {ws:?}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use magic::check::restoring_agrees;

    /// A state restored from its snapshot (moved into a reused one, its
    /// handlers' counters left out) is the machine its moves make: the
    /// restoring search, on one thread and on three, takes the same states,
    /// moves and depth as the replaying one, and stops at the same planted
    /// bug with the same trace.
    /// A pointer store sized under a directory without one is refused:
    /// it would change nothing (a saved check as the command line).
    #[test]
    fn a_pointer_store_belongs_to_the_dynamic_pointer_directory() {
        let d = CoherenceCheck::default();
        let c = CoherenceCheck {
            pointer_store: 4,
            ..d
        };
        assert_eq!(c.validate().unwrap_err().field, "pointer_store");
        let dynamic = CoherenceCheck {
            format: crate::DirFormat::DynamicPointer,
            ..c
        };
        assert_eq!(dynamic.validate(), Ok(()));
        assert_eq!(d.validate(), Ok(()));
    }

    #[test]
    fn restoring_a_state_is_replaying_its_moves() {
        for (nodes, ops) in [(2, 2), (3, 1)] {
            for inject in [None, Some(Bug::ALL[0])] {
                let c = CoherenceCheck {
                    nodes,
                    ops,
                    inject,
                    ..CoherenceCheck::default()
                };
                let bounds = Bounds {
                    symmetry: false,
                    ..Bounds::default()
                };
                let replayed = restoring_agrees(&c, bounds)
                    .unwrap_or_else(|e| panic!("{nodes} nodes, {ops} ops, {inject:?}: {e}"));
                assert!(replayed.states > 10, "{replayed:?}");
                // The planted bug needs a third node to show.
                let found = inject.is_some() && nodes == 3;
                assert_eq!(replayed.violations, found as u32, "{replayed:?}");
            }
        }
    }
}
