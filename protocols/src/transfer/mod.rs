//! Bulk transfer over a connection: the FLASH paper's central experiment.
//!
//! Two processes on two nodes hold a bidirectional connection. Each end's
//! user program talks to its MAGIC with command sequences (uncached writes
//! that fill an operation record, one committing read answered ACK or NACK):
//! `connect`, `post` a receive, `send`. The stream is a byte stream: a posted
//! receive sends the partner a notice of the space it offers, and the
//! partner's transfer handler sends waiting data up to that space, so one
//! send may fill several receives and one receive may take several sends.
//! Buffer addresses are authentic physical pages (shadow references)
//! protected by the invalidation technique: each page in use is linked into
//! the in-use page table and checked on every use.
//!
//! The data moves as cache-line *components*: the sender's transfer handler
//! reads a line into a data buffer (from memory, or from its processor's
//! cache when the directory says the line is dirty there), adds a header and
//! sends it; the receiver's component handler writes it into memory under
//! the directory's control; a cleanup handler completes each receive. The
//! transfer handler reschedules itself through the software queue, in the
//! three versions of [`sender`]. Components follow the receiver's line
//! alignment: a source at another doubleword offset is realigned by the
//! data path's two-buffer wrap-around (each source line read once), a source
//! at another byte offset by the PP itself.
//!
//! Message data is kept coherent `local`ly (the directory at each end) or
//! `global`ly: a send line dirty in a third node's cache is fetched back to
//! its home first, either overlapped with the transfer (`pipelined`) or all
//! at once before it (`collect`). Buffers may also be homed at a third
//! node, which the transferring MAGICs go through for every line ([`home`]).
//!
//! By actor: the compute processor's program and OS ([`cpu`]), MAGIC's
//! connection and receiver handlers ([`conn`]) and the sender's
//! ([`sender`]), and the node's state ([`state`]); the messages between them
//! ([`msg`]) and the cost sheet ([`costs`]). [`Transfer`] installs them, with
//! the coherence protocol, as one protocol; [`run()`] sets up a machine, runs
//! one transfer experiment and measures it: its [`Outcome`] is plain data
//! (printable, sendable, serializable and read back equal) that carries
//! its [`Config`] and keeps the counts its figures come from;
//! [`run_with_machine`] keeps the machine beside it.

pub mod check;
pub mod conn;
pub mod costs;
pub mod cpu;
pub mod experiment;
pub mod home;
pub mod msg;
pub mod sender;
pub mod state;
pub mod unit;

/// How message data is kept coherent: the transfer's `Config::mode` takes
/// it (defined with the directory protocol, which carries it out).
pub use coherence::modes::Mode;
pub use costs::TransferCosts;
pub use cpu::{ConnCpu, ConnEvent, ConnOp, FlushCosts};
pub use experiment::{
    run, run_beside, run_with_machine, Bound, CoherenceActions, Config, ConfigError, Direction,
    Failed, FlushTimes, Measured, Outcome, PageChange, PerLine, Placement, ReceiverState,
    SenderState, Side, StageCycles, StaleLine, Startup, WithTransfer, MAX_PARTS,
};
pub use magic::costs::Breakdown;
pub use msg::{xfer_msg, Answering, Refusal, XferKind, XferMsg, XferOp};
pub use state::{
    Accepted, Carry, CmdRecord, HeldBack, Marks, Outgoing, RecvOp, SendOp, Space, Span, Strategy,
    Version, XferNode, XferParams, XferStats,
};
pub use unit::Transfer;
