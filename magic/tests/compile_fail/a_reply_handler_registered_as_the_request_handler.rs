// The reply's handler registered where the request's is expected: the
// handler's type says which kind it takes.
use magic::{messages, Cx, Handler, Install, Msg, NodeId, Protocol};

messages! {
    /// A compare-and-swap.
    pub enum CasMsg: CasKind {
        /// Swap in `new` if the word is `old`.
        Request { old: u64, new: u64 },
        /// The word found.
        Reply { found: u64 } => Reply,
    }
}

fn reply(_: &mut Cx<'_, ()>, _: &Msg, _: cas_msg::Reply) {}

/// Route the handler of requests.
fn route_request<S: 'static>(b: &mut Install<'_, S, ()>, h: Handler<cas_msg::Request>) {
    b.route_any(h);
}

struct Cas;

impl Protocol for Cas {
    type Node = ();
    fn name(&self) -> &'static str {
        "cas"
    }
    fn node(&self, _: NodeId, _: u32) {}
    fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
        let h = b.handler("request", reply);
        route_request(b, h);
    }
}

fn main() {}
