//! A node's state for user-level messaging: MAGIC's side (the running PID,
//! the operation records, the hold-off counter, the in-use page table, the
//! software TLB, the counters), the OS, and the compute processor.

use super::cmd::{OpRecord, RecState};
use super::cpu::{UserCpu, UserOp};
use super::pages::PageTable;
use super::params::UserParams;
use super::tlb::Tlb;
use magic::{Msg, NodeId, NodeState, ProcStep, Processor, LINE_BYTES};
use os_shim::{Os, Pid};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What MAGIC counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserStats {
    /// Sequences accepted.
    pub acks: u64,
    /// Sequences refused, by reason.
    pub nacks: BTreeMap<String, u64>,
    /// Command writes with no record to go into (the commit will NACK).
    pub lost_writes: u64,
    /// Packets dropped: claimed a process that is not a peer of the receiver.
    pub dropped_forged: u64,
    /// Commands naming a peer outside the process's group.
    pub refused_out_of_group: u64,
    /// Packets dropped for a bad address.
    pub dropped_bad: u64,
    /// Interrupts MAGIC raised to ask the OS for a translation.
    pub interrupts: u64,
    /// Uses of a page found stale (the invalidation technique's check).
    pub stale_uses: u64,
    /// Operations completed (or given up).
    pub completed: u64,
    /// Translation changes answered only after hold-off drained.
    pub holdoff_waits: u64,
}

/// MAGIC's state for user-level messaging on one node.
#[derive(Clone)]
pub struct MagicSide {
    /// The running PID, as the OS said at the last context switch.
    pub current: Option<Pid>,
    pub(super) records: Vec<Option<OpRecord>>,
    /// Operations under way that use hold-off.
    pub holdoff: u32,
    /// A translation change waits for `holdoff` to reach zero.
    pub draining: bool,
    /// The in-use page table (the invalidation technique).
    pub pages: PageTable,
    /// The software TLB.
    pub tlb: Tlb,
    /// What MAGIC counted.
    pub stats: UserStats,
    /// Processes some of whose writes found no record: their sequence is
    /// incomplete, and their next commit is refused (to be sent again).
    pub(super) lost: BTreeSet<Pid>,
    /// Operations some of whose lines were dropped here: (sender node, the
    /// operation's tag without its last-line flag).
    pub(super) failed: BTreeSet<(u32, super::msg::Tag)>,
}

impl MagicSide {
    fn new(params: &UserParams, tlb: Tlb) -> MagicSide {
        MagicSide {
            current: None,
            records: vec![None; params.records],
            holdoff: 0,
            draining: false,
            pages: PageTable::default(),
            tlb,
            stats: UserStats::default(),
            lost: BTreeSet::new(),
            failed: BTreeSet::new(),
        }
    }

    /// The record of `pid`, if it has one.
    pub fn record_of(&self, pid: Pid) -> Option<&OpRecord> {
        self.records.iter().flatten().find(|r| r.pid == pid)
    }

    /// The slot of `pid`'s record.
    pub(super) fn slot_of(&self, pid: Pid) -> Option<usize> {
        self.records
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.pid == pid))
    }

    /// Records in use.
    pub fn records_in_use(&self) -> usize {
        self.records.iter().flatten().count()
    }
}

impl MagicSide {
    /// MAGIC's state, canonically (for the exhaustive checker): records,
    /// hold-off, the in-use page table, the TLB, and what is lost or failed;
    /// not its counters.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        let _ = write!(out, "{:?}", self.current);
        for r in &self.records {
            match r {
                None => out.push(b'-'),
                Some(r) => {
                    let src: Vec<_> = r
                        .src
                        .iter()
                        .map(|p| {
                            (
                                p.page.0,
                                p.vaddr,
                                p.link.as_ref().map(|u| self.pages.valid(u)),
                            )
                        })
                        .collect();
                    let _ = write!(
                        out,
                        "{:?}{:?}{:?}{:?}{src:?}{:?}{}{}{:?};",
                        r.pid, r.state, r.fields, r.target, r.dst, r.malformed, r.sent, r.peer
                    );
                }
            }
        }
        let _ = write!(
            out,
            "{}{}{:?}{:?}",
            self.holdoff, self.draining, self.lost, self.failed
        );
        self.pages.encode(out);
        self.tlb.encode(out);
    }
}

/// A node running user-level messaging.
#[derive(Clone)]
pub struct UserNode {
    /// This node.
    pub id: NodeId,
    /// Nodes in the machine.
    pub nodes: u32,
    /// The parameters it was built with.
    pub params: UserParams,
    /// The operating system.
    pub os: Os,
    /// MAGIC's side.
    pub magic: MagicSide,
    /// The compute processor.
    pub cpu: UserCpu,
}

impl UserNode {
    /// Node `id` of `nodes`, or why `params` cannot build one.
    pub fn new(id: NodeId, nodes: u32, params: UserParams) -> Result<UserNode, crate::Error> {
        params.validate()?;
        let tlb = Tlb::new(params.tlb)?;
        Ok(UserNode::with_tlb(id, nodes, params, tlb))
    }

    /// Node `id` of `nodes` with parameters already validated (a TLB that
    /// cannot be built falls back to the default one).
    pub(super) fn checked(id: NodeId, nodes: u32, params: UserParams) -> UserNode {
        let tlb = Tlb::new(params.tlb).unwrap_or_default();
        UserNode::with_tlb(id, nodes, params, tlb)
    }

    fn with_tlb(id: NodeId, nodes: u32, params: UserParams, tlb: Tlb) -> UserNode {
        UserNode {
            id,
            nodes,
            params,
            os: Os::new(id, params.os),
            magic: MagicSide::new(&params, tlb),
            cpu: UserCpu::default(),
        }
    }

    /// The node's state, canonically, into `out` (for the exhaustive
    /// checker): the OS's processes and page tables, MAGIC's side and the
    /// processor, with times relative to `now` and no counters of work done.
    pub fn encode(&self, now: magic::Cycles, out: &mut Vec<u8>) {
        use std::io::Write;
        let _ = write!(out, "{:?}", self.os);
        self.magic.encode(out);
        self.cpu.encode(now, out);
    }

    /// Append to the user program.
    pub fn push(&mut self, ops: impl IntoIterator<Item = UserOp>) {
        self.cpu.push(ops);
    }

    /// Operations of the program not yet begun.
    pub fn program_left(&self) -> usize {
        self.cpu.program_left()
    }
}

impl NodeState for UserNode {
    fn pending(&self) -> Option<String> {
        let mut parts: Vec<String> = self.cpu.pending().into_iter().collect();
        let running = self
            .magic
            .records
            .iter()
            .flatten()
            .filter(|r| r.state != RecState::Open)
            .count();
        if running > 0 {
            parts.push(format!("{running} operation(s) under way"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        self.cpu.step(p, &mut self.os)
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        self.cpu.receive(p, &mut self.os, &self.params, msg)
    }
}
