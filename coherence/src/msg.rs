//! The coherence protocol's messages: what the compute processor hands
//! MAGIC, what the nodes send each other, and what MAGIC hands the
//! processor back.
//!
//! A leaf of the crate: the handlers (the `protocol` module) and the
//! compute processor (the `processor` module) both speak these, and neither
//! needs the other to do so.

use crate::directory::Req;
use magic::NodeId;

magic::messages! {
    /// The coherence protocol's messages. The line is the header's address;
    /// a line of data, where one goes, travels in a data buffer beside the
    /// header. Requests travel on the request lane and replies on the reply
    /// lane, so a reply never waits behind a request.
    pub enum CohMsg: CohKind {
        /// Processor interface: a read miss.
        PiGet,
        /// Processor interface: a write miss.
        PiGetX,
        /// Processor interface: a store to a clean copy (permission only).
        PiUpgrade,
        /// Processor interface: a dirty line written back (with the line).
        PiWriteback,
        /// Processor interface: a clean line dropped (a replacement hint).
        PiReplace,
        /// Processor interface: the processor has used a fill, so forwards
        /// deferred behind it may be served.
        PiResume,
        /// A read miss, at the home.
        Get,
        /// A write miss, at the home.
        GetX,
        /// An upgrade, at the home.
        Upgrade,
        /// A dirty line written back to its home (with the line).
        Writeback,
        /// A replacement hint: the sender dropped its clean copy. It travels
        /// on the request lane, so the sender's next request for the line
        /// cannot overtake it.
        Replace,
        /// The home forwards a read to the line's owner; the owner answers
        /// `requester`, the node that missed.
        FwdGet {
            /// The node that missed, which the owner answers.
            requester: NodeId,
        },
        /// The home forwards a write to the line's owner; the owner answers
        /// `requester`, the node that missed.
        FwdGetX {
            /// The node that missed, which the owner answers.
            requester: NodeId,
        },
        /// Drop a clean copy; acknowledge to `collector`: the home, or the
        /// writer when acknowledgements go to the requester.
        Inval {
            /// The node that collects the acknowledgements.
            collector: NodeId,
        },
        /// A shared copy of the line (with the line); the requester waits
        /// for `acks` invalidation acknowledgements too.
        Put {
            /// Invalidation acknowledgements still to come.
            acks: u32,
        } => Reply,
        /// An exclusive copy of the line (with the line); the requester
        /// waits for `acks` invalidation acknowledgements too.
        PutX {
            /// Invalidation acknowledgements still to come.
            acks: u32,
        } => Reply,
        /// Permission to write a clean copy the requester holds; it waits
        /// for `acks` invalidation acknowledgements too.
        UpgradeAck {
            /// Invalidation acknowledgements still to come.
            acks: u32,
        } => Reply,
        /// A sharer has dropped its copy.
        InvAck => Reply,
        /// The home is busy with the line, or the owner a request was
        /// forwarded to cannot serve it: ask again.
        Nak => Reply,
        /// The owner refused a forward: the home's entry is free again.
        NakClear => Reply,
        /// The owner of a dirty line kept a clean copy and sent `requester`
        /// the line: memory gets it too (with it), and the entry is shared.
        SharingWriteback {
            /// The reader, who joins the sharers.
            requester: NodeId,
            /// The home answers the reader from this line (the owner had no
            /// second buffer for the reader's copy).
            answer: bool,
        } => Reply,
        /// The owner handed the line to `requester`, the writer: the home
        /// records it.
        ForwardAck {
            /// The new owner.
            requester: NodeId,
        } => Reply,
        /// MAGIC to the processor: the line (or the permission) it missed
        /// on; `exclusive`: it may write the line; `retries`: the NAKs the
        /// miss met before it was served.
        Fill {
            /// The processor may write the line.
            exclusive: bool,
            /// NAKs the miss met before it was served.
            retries: u32,
        },
    }
}

impl CohMsg {
    /// The processor-interface message that asks for `r`.
    pub fn pi(r: Req) -> CohMsg {
        match r {
            Req::Read => CohMsg::PiGet,
            Req::Write => CohMsg::PiGetX,
            Req::Upgrade => CohMsg::PiUpgrade,
        }
    }

    /// The request a requester sends the home for `r`.
    pub fn request(r: Req) -> CohMsg {
        match r {
            Req::Read => CohMsg::Get,
            Req::Write => CohMsg::GetX,
            Req::Upgrade => CohMsg::Upgrade,
        }
    }

    /// The request a miss or a request message asks for (`None` for the
    /// other messages).
    pub fn req(self) -> Option<Req> {
        match self {
            CohMsg::PiGet | CohMsg::Get => Some(Req::Read),
            CohMsg::PiGetX | CohMsg::GetX => Some(Req::Write),
            CohMsg::PiUpgrade | CohMsg::Upgrade => Some(Req::Upgrade),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magic::message::Kind;

    #[test]
    fn requests_map_both_ways_and_replies_take_the_reply_lane() {
        for r in [Req::Read, Req::Write, Req::Upgrade] {
            assert_eq!(CohMsg::pi(r).req(), Some(r));
            assert_eq!(CohMsg::request(r).req(), Some(r));
        }
        assert_eq!(CohMsg::Nak.req(), None);
        assert_eq!(CohKind::Put.lane(), magic::Lane::Reply);
        assert_eq!(CohKind::Replace.lane(), magic::Lane::Request);
    }
}
