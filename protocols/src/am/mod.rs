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
pub mod suite;

use magic::{NodeId, Time};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the handler named by a message does when it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Handler {
    /// Nothing (the trivial handler of the overhead benchmarks).
    Nop,
    /// Reply to the sender with the same arguments.
    Echo,
}

/// One step of a node's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send a request of `words` argument words (0 to 4) to a handler.
    Request {
        to: NodeId,
        words: u8,
        handler: Handler,
    },
    /// Send a reply (outside a handler: the reply-overhead benchmark).
    Reply { to: NodeId, words: u8 },
    /// Poll the network once, running the handlers of what arrived.
    Poll,
    /// Poll until this node has handled `received` messages in all.
    Wait { received: u64 },
    /// Compute (no network access) for a while.
    Compute(Time),
    /// Record the time.
    Mark,
}

/// Cost and count of one operation at one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    pub calls: u64,
    /// Processor time spent in the operation (ticks).
    pub busy: u64,
    pub ni_reads: u64,
    pub ni_writes: u64,
    pub instructions: u64,
}

/// What a program run measured.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Per node, the times of its `Mark` steps.
    pub marks: Vec<Vec<Time>>,
    /// Per node, messages its handlers ran for.
    pub received: Vec<u64>,
    /// Per (node, operation).
    pub ops: BTreeMap<(u32, &'static str), OpStats>,
    /// When the last program finished.
    pub end: Time,
    /// Sends the network refused and the layer tried again.
    pub retries: u64,
    /// Packets delivered in another order than sent between the same nodes.
    pub overtaken: u64,
}

impl Run {
    /// Microseconds between two marks of a node.
    pub fn between(&self, node: u32, a: usize, b: usize) -> f64 {
        let m = &self.marks[node as usize];
        Time(m[b].0 - m[a].0).as_us()
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
    fn name(&self) -> &'static str;
    /// Run one program per node (node `i` runs `programs[i]`).
    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, String>;
    /// Nodes the platform has.
    fn nodes(&self) -> u32;
}
