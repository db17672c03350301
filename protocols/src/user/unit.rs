//! The user layer as a protocol unit: its handlers, routes and per-node
//! state, installed on a machine alone or beside other protocols.

use super::handlers;
use super::params::UserParams;
use super::state::UserNode;
use magic::{BuildError, Install, Magic, MagicParams, NodeId, Protocol};

/// User-level messaging as a protocol: every node runs it with `params`.
///
/// ```
/// use magic::{Magic, MagicParams};
/// use protocols::user::User;
///
/// let m = Magic::with(MagicParams::default(), 2, &User::default()).unwrap();
/// assert_eq!(m.state(magic::NodeId(1)).unwrap().magic.records_in_use(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct User {
    /// Every node's parameters.
    pub params: UserParams,
}

impl Protocol for User {
    type Node = UserNode;

    fn name(&self) -> &'static str {
        "user"
    }

    fn node(&self, n: NodeId, nodes: u32) -> UserNode {
        UserNode::checked(n, nodes, self.params)
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, UserNode>) {
        handlers::install(b);
    }

    fn check(&self, params: &MagicParams, _nodes: u32) -> Result<(), BuildError> {
        self.params
            .validate_on(params.pp_issue_width)
            .map_err(|e| match e {
                crate::Error::OutOfRange(r) => BuildError::Params(r),
                e => BuildError::Protocol(format!("user: {e}")),
            })
    }
}

/// A machine of `nodes` nodes running user-level messaging alone.
pub fn machine(
    params: MagicParams,
    user: UserParams,
    nodes: u32,
) -> Result<Magic<UserNode>, crate::Error> {
    Ok(Magic::with(params, nodes, &User { params: user })?)
}
