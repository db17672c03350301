//! One read miss, seen from the processor: the `flashkit miss` experiment.
//!
//! Three nodes or more. Node 0's processor loads a word of a line that is
//! - `local-clean`: homed at node 0, in no cache;
//! - `remote-clean`: homed at node 1, in no cache;
//! - `remote-dirty`: homed at node 1, dirty in node 2's cache.
//!
//! The latency is the processor's: from issuing the load to having the word.
//! MAGIC's data cache is warm, as in a running machine: the processor first
//! misses on a neighbouring line in the same state (whose directory entry
//! shares a data-cache line with the measured one's); when the machine is
//! quiet again the ledger restarts and the processor misses on the measured
//! line.

use crate::processor::Access;
use crate::protocol::{self, CohParams};
use magic::{Cycles, LineState, Magic, MagicParams, NodeId, PAddr, Region};
use serde::Serialize;

/// Where the missed line is (see the module's description).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    /// Homed at the requester, in no cache.
    LocalClean,
    /// Homed at another node, in no cache.
    RemoteClean,
    /// Homed at another node, dirty in a third node's cache.
    RemoteDirty,
}

impl Case {
    /// Every case, in the order the experiment reports them.
    pub const ALL: [Case; 3] = [Case::LocalClean, Case::RemoteClean, Case::RemoteDirty];

    /// The case as the command line names it.
    pub fn name(self) -> &'static str {
        match self {
            Case::LocalClean => "local-clean",
            Case::RemoteClean => "remote-clean",
            Case::RemoteDirty => "remote-dirty",
        }
    }
}

/// The outcome of one miss.
pub struct MissRun {
    /// The case.
    pub case: Case,
    /// From the load's issue to its word, in cycles of 10 ns.
    pub latency: Cycles,
    /// The word the load returned.
    pub value: u64,
    /// The word the load should have returned.
    pub expected: u64,
    /// The machine after the miss (its ledger counts the measured miss).
    pub machine: Magic<protocol::CohNode>,
}

/// Where the experiment's lines are and who holds the dirty one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Nodes in the machine (3 or more; 3 by default).
    pub nodes: u32,
    /// Byte offset of the measured line in its home's memory (line aligned
    /// down); the warm-up line is its pair (offset XOR 128). 0x4080 by
    /// default.
    pub offset: u64,
    /// The node whose cache holds the line dirty (`remote-dirty`; 2 by
    /// default).
    pub owner: u32,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            nodes: 3,
            offset: 0x4080,
            owner: 2,
        }
    }
}

/// Run one miss on a fresh machine.
pub fn run(case: Case, params: MagicParams, coh: CohParams) -> Result<MissRun, String> {
    run_with(case, Setup::default(), params, coh)
}

/// Run one miss with an explicit setup. Bad setups (too few nodes, an owner
/// that does not exist or is the requester or the home, a line beyond the
/// home's memory) are errors.
pub fn run_with(
    case: Case,
    s: Setup,
    params: MagicParams,
    coh: CohParams,
) -> Result<MissRun, String> {
    if s.nodes < 3 {
        return Err(format!(
            "the miss experiment needs at least 3 nodes (got {})",
            s.nodes
        ));
    }
    if case == Case::RemoteDirty && s.owner >= s.nodes {
        return Err(format!(
            "no node {} to hold the line (the machine has {} nodes)",
            s.owner, s.nodes
        ));
    }
    let home = match case {
        Case::LocalClean => NodeId(0),
        _ => NodeId(1),
    };
    if case == Case::RemoteDirty && (s.owner == 0 || s.owner == home.0) {
        return Err(format!(
            "the dirty copy must be at a third node, not node {}",
            s.owner
        ));
    }
    let offset = s.offset & !127;
    if offset >= params.mem_bytes {
        return Err(format!(
            "offset {:#x} is outside node memory (0 to {:#x} bytes)",
            s.offset, params.mem_bytes
        ));
    }
    let mut m = protocol::machine(params, coh, s.nodes)?;
    // The warm-up line is the measured one's pair: their directory entries
    // and miss records share MAGIC data-cache lines wherever they are.
    let warm = PAddr::new(Region::Normal, home, offset ^ 128);
    let line = PAddr::new(Region::Normal, home, offset);
    let in_memory = [0x11u8; 128];
    let dirty = [0x77u8; 128];
    let owner = [(NodeId(s.owner), LineState::Dirty)];
    let copies: &[(NodeId, LineState)] = match case {
        Case::RemoteDirty => &owner,
        _ => &[],
    };
    for l in [warm, line] {
        protocol::place(&mut m, l, copies, in_memory, dirty)?;
    }
    let expected = u64::from_le_bytes(if copies.is_empty() {
        [0x11; 8]
    } else {
        [0x77; 8]
    });
    m.state_mut(NodeId(0)).proc.push([Access::Load(warm)]);
    m.start_processor(NodeId(0), Cycles(0))?;
    let warmup = m.run();
    if !warmup.is_clean() {
        return Err(format!(
            "the warm-up miss did not complete: {}",
            warmup.stuck.join("; ")
        ));
    }
    m.reset_counters();
    m.state_mut(NodeId(0))
        .proc
        .push([Access::Load(PAddr(line.0 + 8))]);
    let start = m.now() + Cycles(1);
    m.start_processor(NodeId(0), start)?;
    let report = m.run();
    if !report.is_clean() {
        return Err(format!(
            "the miss did not complete: {}",
            report.stuck.join("; ")
        ));
    }
    let r = m
        .state(NodeId(0))
        .proc
        .results
        .last()
        .copied()
        .ok_or("the load did not complete")?;
    Ok(MissRun {
        case,
        latency: r.latency(),
        value: r.value.unwrap_or_default(),
        expected,
        machine: m,
    })
}
