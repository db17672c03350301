//! The transfer as a protocol unit: its handlers and routes (and the
//! coherence protocol's, which it carries over the same node state), and
//! its per-node state, installed on a machine alone or beside other
//! protocols.

use super::conn;
use super::sender;
use super::state::{XferNode, XferParams};
use coherence::protocol::{CohNode, CohParams};
use magic::{BuildError, Install, MagicParams, NodeId, Protocol};
use os_shim::{Os, OsCosts};

/// The bulk transfer as a protocol: every node runs it with `params`, and
/// the coherence protocol beside it (its handlers rowed as `coherence.*`)
/// with `coherence`; each node's OS has no process until a study adds them.
///
/// ```
/// use magic::{Magic, MagicParams, NodeId};
/// use protocols::transfer::Transfer;
///
/// let m = Magic::with(MagicParams::default(), 2, &Transfer::default()).unwrap();
/// assert!(m.state(NodeId(0)).unwrap().partner.is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Every node's handler choices and cost sheets.
    pub params: XferParams,
    /// The coherence protocol's parameters.
    pub coherence: CohParams,
    /// What the OS's steps cost.
    pub os: OsCosts,
}

impl Protocol for Transfer {
    type Node = XferNode;

    fn name(&self) -> &'static str {
        "transfer"
    }

    fn node(&self, n: NodeId, nodes: u32) -> XferNode {
        let mut x = XferNode::new(n, nodes, self.params, Os::new(n, self.os));
        x.coh = CohNode::new(n, nodes, self.coherence);
        x
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, XferNode>) {
        coherence::protocol::install_on(b);
        conn::install(b);
        let h = b.handler("send_step", sender::send_step);
        b.route_any(h);
        let h = b.handler("pulled", sender::pulled);
        b.route_any(h);
    }

    /// The sender holds up to two buffers while it realigns a line, and the
    /// coherence protocol a reply's while it waits for acknowledgements;
    /// the cost sheets' tasks must be ones this machine's PP can issue.
    fn check(&self, params: &MagicParams, _nodes: u32) -> Result<(), BuildError> {
        if params.data_buffers < 4 {
            return Err(BuildError::Protocol(
                "the transfer needs at least 4 data buffers".into(),
            ));
        }
        use magic::costs::Sheet;
        self.params.costs.validate_on(params.pp_issue_width)?;
        self.params.command.validate_on(params.pp_issue_width)?;
        Ok(())
    }
}
