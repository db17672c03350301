// A handler of the whole enum registered as a handler of one kind: it
// would take any kind routed to it, so it must be asked for
// (`handler_of_all`, routed with `route_kind`).
use magic::{messages, Cx, Install, Msg, NodeId, Protocol};

messages! {
    /// A compare-and-swap.
    pub enum CasMsg: CasKind {
        /// Swap in `new` if the word is `old`.
        Request { old: u64, new: u64 },
        /// The word found.
        Reply { found: u64 } => Reply,
    }
}

fn request(_: &mut Cx<'_, ()>, _: &Msg, _: CasMsg) {}

struct Cas;

impl Protocol for Cas {
    type Node = ();
    fn name(&self) -> &'static str {
        "cas"
    }
    fn node(&self, _: NodeId, _: u32) {}
    fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
        let h = b.handler("request", request);
        b.route_any(h);
    }
}

fn main() {}
