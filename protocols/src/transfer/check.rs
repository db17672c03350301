//! The bulk transfer's own handlers under exhaustive search
//! (`flashkit check transfer`).
//!
//! Node 0 connects to node 1 and sends `lines` lines into `receives`
//! receives that node 1 posts meanwhile, each one line and 64 bytes apart
//! from the next and the first `offset` bytes into its line, so the stream
//! is realigned and split across receives and lines are merged. The sender
//! runs the chunked handler (`chunk` lines an invocation) and each node has
//! `buffers` data buffers. This is the transfer experiment's own setup,
//! with every delivery held: the connection's handshake, the commands, the
//! components, the cleanups and each handler's continuations on the
//! software queue meet in every order.
//!
//! What must hold:
//! - no component is dropped and MAGIC drops nothing;
//! - when no move is left, the send and every receive are complete, each
//!   receive holds its part of the stream, the bytes around the receives
//!   are as they were, and nothing is stuck.

use super::cpu::ConnEvent;
use super::experiment::{begin_pass, data_check, prepare, Config};
use super::state::{Version, XferNode};
use magic::check::{explore_restoring, nothing_dropped, nothing_stuck, Bounds, Model, Report};
use magic::{Magic, MagicParams, NodeId, OutOfRange, LINE_BYTES};
use serde::{Deserialize, Serialize};

pub use super::state::Bug;

/// The configuration a transfer check explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferCheck {
    /// Lines sent (1 to 8).
    pub lines: u32,
    /// Receives the stream is split over (1 to 4).
    pub receives: u32,
    /// Lines the sender's handler sends per invocation (1 to `buffers`).
    pub chunk: u32,
    /// MAGIC data buffers per node (4, what the transfer's handlers need
    /// at least, to 16).
    pub buffers: u32,
    /// The receive buffer's byte offset within its first line (0 to 127).
    pub offset: u32,
    /// A planted bug, if any.
    pub inject: Option<Bug>,
}

impl Default for TransferCheck {
    /// The default bounds of `flashkit check transfer`.
    fn default() -> Self {
        TransferCheck {
            lines: 6,
            receives: 3,
            chunk: 2,
            buffers: 4,
            offset: 64,
            inject: None,
        }
    }
}

impl TransferCheck {
    /// Refuse bounds outside the documented ranges, naming the field.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        OutOfRange::check("lines", self.lines, 1, 8)?;
        OutOfRange::check("receives", self.receives, 1, 4)?;
        OutOfRange::check("buffers", self.buffers, 4, 16)?;
        OutOfRange::check("chunk", self.chunk, 1, self.buffers)?;
        OutOfRange::check("offset", self.offset, 0, LINE_BYTES as u32 - 1)?;
        // A bug planted where it changes nothing would make a clean report
        // look like a check that passed with the bug in.
        match self.inject {
            Some(b) if !b.acts_with(self.receives) => Err(OutOfRange::new(
                "inject",
                format!("a bug that acts with {} receive(s)", self.receives),
                b.name(),
            )),
            _ => Ok(()),
        }
    }

    /// Search the configuration's whole space (up to `bounds`); a
    /// configuration or bounds out of range are refused, naming the field.
    pub fn run(&self, bounds: Bounds) -> Result<Report, OutOfRange> {
        self.validate()?;
        explore_restoring(self, bounds)
    }

    /// The transfer the check builds its machine for: its machine, cost
    /// sheets and planted bug.
    pub fn config(&self) -> Config {
        Config {
            bytes: self.lines as u64 * LINE_BYTES as u64,
            receives: self.receives,
            handler: Version::Chunked(self.chunk),
            dst_offset: self.offset as u64,
            receive_first: false,
            inject: self.inject,
            params: MagicParams {
                data_buffers: self.buffers as usize,
                ..MagicParams::default()
            },
            ..Config::default()
        }
    }

    fn events(m: &Magic<XferNode>, n: u32, f: fn(&ConnEvent) -> bool) -> Result<usize, String> {
        Ok(m.state(NodeId(n))?.cpu.log.iter().filter(|e| f(e)).count())
    }
}

impl Model for TransferCheck {
    type Node = XferNode;

    fn build(&self) -> Result<Magic<XferNode>, String> {
        let c = self.config();
        let mut p = prepare(&c, |_| {}, |x, _| x).map_err(|e| e.to_string())?;
        begin_pass(&mut p, &c, 0).map_err(|e| e.to_string())?;
        Ok(p.m)
    }

    fn encode(&self, m: &Magic<XferNode>, out: &mut Vec<u8>) {
        for s in m.states() {
            s.encode(m.now(), out);
        }
    }

    fn invariant(&self, m: &Magic<XferNode>) -> Result<(), String> {
        for (n, s) in m.states().iter().enumerate() {
            let dropped = s.stats.dropped;
            if dropped > 0 {
                return Err(format!("n{n} dropped {dropped} component(s)"));
            }
        }
        nothing_dropped(m)
    }

    fn finished(&self, m: &Magic<XferNode>) -> Result<(), String> {
        nothing_stuck(m)?;
        let sent = Self::events(m, 0, |e| matches!(e, ConnEvent::SendDone { .. }))?;
        let got = Self::events(m, 1, |e| matches!(e, ConnEvent::RecvDone { .. }))?;
        if sent != 1 || got != self.receives as usize {
            return Err(format!(
                "{sent} of 1 send and {got} of {} receives completed",
                self.receives
            ));
        }
        let (stale, _) = data_check(&self.config(), m, &[NodeId(0)])?;
        if let Some(s) = stale.first() {
            return Err(format!(
                "{} line(s) of the receive buffer are wrong, the first at n{} {:#x}",
                stale.len(),
                s.node.0,
                s.va
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::state::Bug;
    use magic::check::restoring_agrees;

    /// A state restored from its snapshot is the machine its moves make:
    /// with no bug and with each planted one, the restoring search on one
    /// thread and on three takes the same states, moves and depth as the
    /// replaying one, and stops at the same violation with the same trace.
    /// The counts are pinned (states, moves, depth), so a change to what a
    /// state's canonical text tells apart shows too: a use of a page named
    /// by where the table keeps it, say, which makes more states.
    #[test]
    fn restoring_a_state_is_replaying_its_moves() {
        let bounds = Bounds {
            symmetry: false,
            ..Bounds::default()
        };
        let counts = [(1083, 2749, 36), (425, 962, 21), (1403, 3572, 36)];
        // A bug added to the handlers is added here too.
        assert_eq!(counts.len(), 1 + Bug::ALL.len());
        let cases = [None].into_iter().chain(Bug::ALL.map(Some));
        for (inject, counts) in cases.zip(counts) {
            let c = TransferCheck {
                lines: 4,
                receives: 2,
                inject,
                ..TransferCheck::default()
            };
            let r = restoring_agrees(&c, bounds).unwrap_or_else(|e| panic!("{inject:?}: {e}"));
            assert_eq!((r.states, r.transitions, r.depth), counts, "{inject:?}");
            assert_eq!(r.violations, inject.is_some() as u32, "{inject:?}: {r:?}");
        }
    }
}
