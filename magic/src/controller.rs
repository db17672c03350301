//! The node controller as the compute processor and the network see it.
//!
//! MAGIC implements it here; the CM-5 network interface and the SP adapter
//! stand beside it, so one workload program can drive any of the three. Points
//! in time cross this boundary in ticks ([`Time`]), the unit every
//! controller's clock converts into exactly; reports (`RunReport`, `Ledger`)
//! count the controller's own cycles.

use crate::error::{NoNode, PostError};
use crate::ids::{Msg, NodeId};
use crate::ledger::Ledger;
use crate::machine::{Magic, NodeState, RunReport};
use crate::time::{Cycles, Time};

/// A node controller as the compute processor and the network see it: MAGIC
/// ([`Magic`]), the CM-5's network interface and the SP's adapter
/// ([`crate::ni`]) all implement it, so one workload program can drive any of them.
pub trait Controller {
    /// A short name for reports ("magic", "cm5", "sp").
    fn name(&self) -> &'static str;

    /// Nodes in the machine.
    fn node_count(&self) -> u32;

    /// The present of the model.
    fn now(&self) -> Time;

    /// The compute processor of `node` hands the controller `msg` at `at`
    /// (a command, a send, a request). Bad input is an `Err`, not a panic.
    fn post(&mut self, node: NodeId, at: Time, msg: Msg) -> Result<(), PostError>;

    /// Run until nothing is pending, or until `limit`.
    fn run(&mut self, limit: Option<Time>) -> RunReport;

    /// What the controller handed `node`'s processor (replies, ACK/NACK,
    /// received messages), with when; drained. A node past the machine is
    /// an error naming it.
    fn take_delivered(&mut self, node: NodeId) -> Result<Vec<(Time, Msg)>, NoNode>;

    /// Where the controller's time went.
    fn ledger(&self) -> Ledger;
}

impl<S: NodeState> Controller for Magic<S> {
    fn name(&self) -> &'static str {
        "magic"
    }

    fn node_count(&self) -> u32 {
        self.nodes()
    }

    fn now(&self) -> Time {
        Time::from_cycles(Magic::now(self))
    }

    fn post(&mut self, node: NodeId, at: Time, msg: Msg) -> Result<(), PostError> {
        // MAGIC accepts processor requests on system-cycle boundaries.
        let c = Cycles(at.0.div_ceil(crate::time::TICKS_PER_SYSTEM_CYCLE));
        if c > Magic::<S>::LAST_CYCLE {
            return Err(PostError::BeyondClock { at: at.0 as u128 });
        }
        Magic::post(self, node, c, msg)
    }

    fn run(&mut self, limit: Option<Time>) -> RunReport {
        self.run_until(limit.map(Time::to_cycles_floor))
    }

    fn take_delivered(&mut self, node: NodeId) -> Result<Vec<(Time, Msg)>, NoNode> {
        let got = self.take_processor_messages(node)?;
        Ok(got
            .into_iter()
            .map(|(c, m)| (Time::from_cycles(c), m))
            .collect())
    }

    fn ledger(&self) -> Ledger {
        Magic::ledger(self)
    }
}
