//! Many readers of one line, some of them evicting it, then a writer: what
//! sharing costs the home (`[sharing]` in a scenario file).
//!
//! The line is homed at node 0. Nodes 1 to `readers` load it; then the first
//! `evicting` of them drop their copies (a replacement hint each, when hints
//! are on); then the last node writes it. Each phase runs until the machine
//! is quiet, and the counters restart between phases, so the hints' ledger
//! and the write's are each their own: the cost per hint is the home's
//! `home_replace` occupancy over the hints, and the cost per invalidation is
//! the home's occupancy for the write over the invalidations it sent.

use crate::processor::Access;
use crate::protocol::{self, CohParams};
use crate::Error;
use magic::{Cycles, Ledger, Magic, MagicParams, NodeId, OutOfRange, PAddr, Region};
use serde::Serialize;

/// The workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sharing {
    /// Nodes reading the line (1 to 4094); the machine has two more nodes,
    /// the home and the writer.
    pub readers: u32,
    /// Readers that drop their copies before the write (0 to `readers`).
    pub evicting: u32,
}

impl Default for Sharing {
    fn default() -> Self {
        Sharing {
            readers: 8,
            evicting: 3,
        }
    }
}

/// What the phases cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharingRun {
    /// The workload.
    pub sharing: Sharing,
    /// Nodes in the machine.
    pub nodes: u32,
    /// Replacement hints the home took.
    pub hints: u64,
    /// The home's PP cycles taking them.
    pub hint_cycles: u64,
    /// Invalidations the home sent for the write.
    pub invalidations: u64,
    /// The home's PP cycles for the write: the request, the invalidations,
    /// and the acknowledgements (or, with the writer collecting them, the
    /// request alone).
    pub write_cycles: u64,
    /// The write's latency at the writer's processor.
    pub write_latency: Cycles,
    /// Pointer-store links in use at the home before the write.
    pub links: u32,
    /// Lists the home reclaimed because its pointer store was full.
    pub reclaims: u64,
    /// The hints' ledger.
    pub hint_ledger: Ledger,
    /// The write's ledger.
    pub write_ledger: Ledger,
}

impl SharingRun {
    /// The home's cycles per hint taken (0 without hints).
    pub fn per_hint(&self) -> f64 {
        self.hint_cycles as f64 / self.hints.max(1) as f64
    }

    /// The home's cycles for the write per invalidation sent (the whole
    /// write's when it sent none).
    pub fn per_invalidation(&self) -> f64 {
        self.write_cycles as f64 / self.invalidations.max(1) as f64
    }
}

fn home_cycles(l: &Ledger, handlers: &[&str]) -> u64 {
    l.handlers
        .iter()
        .filter(|h| h.node == Some(0) && handlers.iter().any(|n| h.handler == *n))
        .map(|h| h.stats.busy)
        .sum()
}

fn settle(m: &mut Magic<protocol::CohNode>, what: &'static str) -> Result<(), Error> {
    let r = m.run();
    if r.is_clean() {
        Ok(())
    } else {
        Err(Error::Stuck {
            what,
            stuck: r.problems().join("; "),
        })
    }
}

/// The line every reader shares, homed at node 0.
const LINE: u64 = 0x4000;

impl Sharing {
    /// The workload is one a machine with `params` can run: 1 to 4094
    /// readers (the machine has two more nodes), at most as many evicting,
    /// and a memory that holds the shared line. The error names the field.
    pub fn validate(&self, params: &MagicParams) -> Result<(), OutOfRange> {
        OutOfRange::check("readers", self.readers, 1, 4094)?;
        OutOfRange::check("evicting", self.evicting, 0, self.readers)?;
        let need = LINE + 128;
        if params.mem_bytes < need {
            let allowed = format!("at least {need} for the shared line");
            return Err(OutOfRange::new("mem_bytes", allowed, params.mem_bytes));
        }
        Ok(())
    }
}

/// Run the workload on a fresh machine.
pub fn run(s: Sharing, params: MagicParams, coh: CohParams) -> Result<SharingRun, Error> {
    s.validate(&params)?;
    let nodes = s.readers + 2;
    let mut m = protocol::machine(params, coh, nodes)?;
    let line = PAddr::new(Region::Normal, NodeId(0), LINE);
    let start = |m: &mut Magic<protocol::CohNode>, n: u32, a: Access| {
        m.state_mut(NodeId(n))?.proc.push([a]);
        let now = m.now();
        m.start_processor(NodeId(n), now).map_err(Error::Machine)
    };
    for n in 1..=s.readers {
        start(&mut m, n, Access::Load(line))?;
    }
    settle(&mut m, "read phase")?;
    m.reset_counters();
    for n in 1..=s.evicting {
        start(&mut m, n, Access::Evict(line))?;
    }
    settle(&mut m, "eviction phase")?;
    let hint_ledger = m.ledger();
    let hints = m.state(NodeId(0))?.stats.hints;
    let links = m.state(NodeId(0))?.links_used();
    m.reset_counters();
    let before = m.state(NodeId(0))?.stats.invalidations;
    let writer = nodes - 1;
    start(&mut m, writer, Access::Store(line, 1))?;
    settle(&mut m, "write")?;
    let write_ledger = m.ledger();
    let write_latency = m
        .state(NodeId(writer))?
        .proc
        .results
        .last()
        .map(|r| r.latency())
        .ok_or(Error::Stuck {
            what: "write",
            stuck: "no result reached the writer's processor".into(),
        })?;
    Ok(SharingRun {
        sharing: s,
        nodes,
        hints,
        hint_cycles: home_cycles(&hint_ledger, &["coherence.home_replace"]),
        invalidations: m.state(NodeId(0))?.stats.invalidations - before,
        write_cycles: home_cycles(
            &write_ledger,
            &["coherence.home_request", "coherence.inval_ack"],
        ),
        write_latency,
        links,
        reclaims: m.state(NodeId(0))?.stats.reclaims,
        hint_ledger,
        write_ledger,
    })
}
