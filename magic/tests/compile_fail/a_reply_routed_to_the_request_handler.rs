// A reply's kind routed to the request's handler: the handler takes the
// request's own type, whose kind its routes take; naming another kind is
// for a handler of every kind only.
use magic::{messages, Cx, Install, Msg, NodeId, Protocol, Region};

messages! {
    /// A compare-and-swap.
    pub enum CasMsg: CasKind {
        /// Swap in `new` if the word is `old`.
        Request { old: u64, new: u64 },
        /// The word found.
        Reply { found: u64 } => Reply,
    }
}

fn request(_: &mut Cx<'_, ()>, _: &Msg, _: cas_msg::Request) {}

struct Cas;

impl Protocol for Cas {
    type Node = ();
    fn name(&self) -> &'static str {
        "cas"
    }
    fn node(&self, _: NodeId, _: u32) {}
    fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
        let h = b.handler("request", request);
        b.route_kind(CasKind::Reply, Region::Normal, h);
    }
}

fn main() {}
