//! The transfer's messages: the command sequence the processor writes, the
//! handler steps MAGIC reschedules for itself, the stream between the two
//! MAGICs (space notices, components, global coherence's fetches), the
//! requests to a third node that homes the buffers, what
//! MAGIC tells the processor, and the OS's notices and answers.

use crate::os_side::{Frame, OsMessages};
use magic::message::Word;
use magic::Cycles;
use os_shim::{Pid, VPage};
use serde::Serialize;

/// The operations a command sequence starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum XferOp {
    /// Connect to a partner (the command's word is its virtual PID).
    Connect = 1,
    /// Post a receive buffer.
    Post = 2,
    /// Send a buffer.
    Send = 3,
}

impl XferOp {
    /// The operation a code names, if any.
    pub fn from_u64(v: u64) -> Option<XferOp> {
        Some(match v {
            1 => XferOp::Connect,
            2 => XferOp::Post,
            3 => XferOp::Send,
            _ => return None,
        })
    }
}

/// An operation travels as its code.
impl Word for XferOp {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<XferOp> {
        XferOp::from_u64(w)
    }
}

/// The operation MAGIC's answer to a command sequence is about: the one the
/// sequence named, if it named one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answering(pub Option<XferOp>);

/// Travels as the operation's code, 0 for none.
impl Word for Answering {
    fn to_word(self) -> u64 {
        self.0.map_or(0, |o| o as u64)
    }
    fn from_word(w: u64) -> Option<Answering> {
        match w {
            0 => Some(Answering(None)),
            _ => XferOp::from_u64(w).map(|o| Answering(Some(o))),
        }
    }
}

/// Why MAGIC refused a command sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Refusal {
    /// Unknown operation, zero length, or the shadow pages named do not
    /// cover the buffer, or a page is outside every node's memory (under
    /// local coherence, outside this node's). A page the process has not
    /// mapped never reaches MAGIC: its shadow reference faults in the
    /// processor.
    Malformed = 1,
    /// No connection, or the partner is not in the process's group.
    NotConnected = 2,
    /// A receive buffer named through the read-only shadow (no write right).
    NotAllowed = 3,
    /// Too many operations outstanding: try again later.
    NoRecord = 4,
}

impl Refusal {
    /// The refusal a code names, if any.
    pub fn from_u64(v: u64) -> Option<Refusal> {
        Some(match v {
            1 => Refusal::Malformed,
            2 => Refusal::NotConnected,
            3 => Refusal::NotAllowed,
            4 => Refusal::NoRecord,
            _ => return None,
        })
    }
}

/// A refusal travels as its code.
impl Word for Refusal {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Refusal> {
        Refusal::from_u64(w)
    }
}

magic::messages! {
    /// The transfer's messages. A command write's operation or page is the
    /// header's address; a component's line of data travels in a data
    /// buffer beside the header.
    pub enum XferMsg: XferKind {
        /// Processor to MAGIC: the command write naming the operation (by
        /// its address in the message space) and its word (a length, or a
        /// connect's virtual PID).
        Command {
            /// The command's word: a length (bytes) or a connect's virtual PID.
            arg: u64,
        },
        /// Processor to MAGIC: a command write through a shadow page: the
        /// authentic page is the address, `vaddr` the user's virtual
        /// address of it.
        Page {
            /// The user's virtual address of the page.
            vaddr: u64,
        },
        /// Processor to MAGIC: the committing read.
        Commit,
        /// Software queue: set up the accepted command.
        Setup,
        /// Software queue: the sender's next invocation.
        Step,
        /// Software queue: receive `id` is complete.
        Cleanup {
            /// The receive's number at this node.
            id: u32,
        },
        /// Software queue: components waiting for a data buffer, again.
        Retry,
        /// To the partner: a receive `id` of `len` bytes is posted, starting
        /// at `align` within its first line.
        Space {
            /// The receive's number at the poster.
            id: u32,
            /// The receive buffer's length (bytes).
            len: u64,
            /// The buffer's offset within its first line (bytes).
            align: u64,
        },
        /// To the partner: `len` bytes of the stream (in a data buffer) for
        /// receive `id`, at byte `at` of it.
        Component {
            /// The receive's number at the partner.
            id: u32,
            /// Where the data goes in the receive (bytes from its start).
            at: u64,
            /// The data carried (bytes).
            len: u64,
        },
        /// Global coherence, to a line's dirty owner: give the home the line.
        Fetch {
            /// Keep a clean copy (a read); otherwise drop it (a write).
            keep: bool,
        },
        /// The owner's answer (with the line when `dirty`).
        Fetched {
            /// The owner's copy was dirty: the line comes with the answer.
            dirty: bool,
            /// The owner kept a clean copy.
            kept: bool,
        } => Reply,
        /// MAGIC to the processor: the command is accepted.
        Ack {
            /// The operation accepted.
            op: Answering,
        },
        /// MAGIC to the processor: the command is refused.
        Nack {
            /// Why it is refused.
            reason: Refusal,
            /// The operation refused.
            op: Answering,
        },
        /// MAGIC to the processor: a send of `bytes` is on the network whole.
        SendDone {
            /// The send's length (bytes).
            bytes: u64,
            /// The process that sent it.
            pid: Pid,
        },
        /// MAGIC to the processor: receive `id` of `bytes` is in memory.
        RecvDone {
            /// The receive's length (bytes).
            bytes: u64,
            /// The process that posted it.
            pid: Pid,
            /// The receive's number at this node.
            id: u32,
        },
        /// MAGIC to the processor: translate `pid`'s `page`, please.
        Interrupt {
            /// The virtual page to translate.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
        },
        /// MAGIC to the processor: the changing page's uses are marked
        /// stale, the OS may go on.
        OsAnswer,
        /// Processor to MAGIC: the OS is about to change a translation.
        OsNotice {
            /// The virtual page whose translation changes.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
            /// The frame it maps to until now.
            old: Frame,
        },
        /// Processor to MAGIC: the OS answers MAGIC's interrupt.
        OsTranslation {
            /// The virtual page MAGIC asked about.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
            /// The frame it maps to (`None`: not mapped).
            frame: Frame,
        },
        /// To a send line's home (a buffer homed at a third node): send me
        /// the line, as the coherence mode has it.
        Pull,
        /// The home's answer to a pull, with the line.
        Pulled => Reply,
        /// To a receive line's home: write the bytes `at..at + len` of the
        /// line (in the data buffer, where they go in the line) for receive
        /// `id`, as the coherence mode has it.
        Deposit {
            /// The receive's number at the depositor.
            id: u32,
            /// Where the bytes start within the line.
            at: u64,
            /// The bytes carried.
            len: u64,
        },
        /// The home's answer to a deposit: the bytes are in its memory.
        Deposited {
            /// The receive's number at the depositor.
            id: u32,
            /// When the home's write of the bytes was done (10 ns system
            /// cycles): when they landed, for the receive's figures.
            written: Cycles,
        } => Reply,
        /// Global coherence, from a receive line's home to a node caching
        /// it clean: drop the copy.
        Drop,
        /// The copy is gone.
        Dropped => Reply,
        /// Software queue: the home's requests that waited for a buffer, again.
        HomeRetry,
    }
}

impl OsMessages for XferMsg {
    fn notice(page: VPage, pid: Pid, old: Frame) -> XferMsg {
        XferMsg::OsNotice { page, pid, old }
    }

    fn translation(page: VPage, pid: Pid, frame: Frame) -> XferMsg {
        XferMsg::OsTranslation { page, pid, frame }
    }
}
