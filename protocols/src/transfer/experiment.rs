//! One transfer experiment: build the machine, place the buffers in their
//! cache states, run the user programs, and measure.
//!
//! The start-up breakdown is read off instants the model stamps as it runs,
//! so its parts add up to the total exactly (an instant earlier than the
//! one before it, as the first line sent before a slow processor interface
//! hands its send the ACK, counts from that one: parts never overlap):
//!
//! | part | from | to |
//! |---|---|---|
//! | initiation | the send's first command write | its ACK at the processor |
//! | setup and verification | the ACK | the first line's own work (after the first invocation's state load) |
//! | initial line | that | the first component on the wire |
//! | (transfer) | the first component on the wire | the last off it |
//! | network and queueing | the last component off the wire | its bytes in the receiver's memory |
//! | receiver cleanup | that | the receiving process told |

use super::cpu::{ConnEvent, ConnOp};
use super::msg::XferOp;
use super::state::{HeldBack, Strategy, Version, XferNode, XferParams};
use super::unit::Transfer;
use coherence::modes::Mode;
use coherence::protocol::{self, CohParams, Coherent};
use magic::ledger::{exact, ExactHandlerRow, ExactUnitRow};
use magic::{
    Cycles, Ledger, LineState, Magic, MagicBuilder, MagicParams, NoNode, NodeId, NodeState,
    OutOfRange, PAddr, Protocol, Region, LINE_BYTES,
};
use os_shim::{Pid, Rights, VPage, PAGE_BYTES};
use serde::{Deserialize, Serialize};

const LINE: u64 = LINE_BYTES as u64;
/// Virtual addresses of the buffers (page aligned; offsets are added).
pub const SRC_VA: u64 = 0x1000_0000;
/// The receive buffers' virtual address (page aligned; offsets are added).
pub const DST_VA: u64 = 0x2000_0000;
/// The largest transfer the experiment sets up.
pub const MAX_BYTES: u64 = 1 << 20;
/// The most receives or sends a transfer is split over (each direction).
/// The programs post and send them back to back, MAGIC keeps a record of
/// each, and the run's time grows faster than their number: 4096 keep a
/// run under a second.
pub const MAX_PARTS: u32 = 4096;

/// Where the send buffer's lines are at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SenderState {
    /// Only in memory.
    Uncached,
    /// A clean copy in the node's processor cache.
    Clean,
    /// Dirty in the node's processor cache.
    Dirty,
    /// Dirty in a third node's cache (needs global coherence).
    DirtyRemote,
}

/// Where the receive buffer's lines are at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiverState {
    /// Only in memory.
    Uncached,
    /// A clean copy in the node's processor cache.
    Clean,
    /// Dirty in the node's processor cache.
    Dirty,
    /// A clean copy in a third node's cache, node 2 (a remote sharer; needs
    /// global coherence).
    CleanRemote,
    /// Dirty in a third node's cache, node 2 (a remote owner; needs global
    /// coherence).
    DirtyRemote,
}

impl ReceiverState {
    /// The lines are cached at a third node.
    pub fn remote(self) -> bool {
        matches!(
            self,
            ReceiverState::CleanRemote | ReceiverState::DirtyRemote
        )
    }
}

/// Where the buffers' memory is homed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// At the transferring nodes: the send buffer at the sender, the receive
    /// buffer at the receiver.
    Home,
    /// Both at a third node, node 2: the transferring nodes go through it
    /// for every line (`none` or `global` coherence).
    Third,
}

/// Which way the data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Node 0 sends to node 1.
    Uni,
    /// Each node sends the other the same amount at once.
    Bi,
}

/// Which buffer a page change hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The send buffer (node 0's).
    Send,
    /// The receive buffer (node 1's).
    Receive,
}

/// The OS moves one page of a buffer to another frame while the transfer
/// runs (the invalidation technique keeps MAGIC's addresses valid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageChange {
    /// The buffer whose page moves.
    pub side: Side,
    /// Which page of the buffer (0 is the first).
    pub page: u64,
    /// When: cycles after the send is issued (on the sending node, after
    /// its command has been answered).
    pub after: Cycles,
}

/// One experiment. [`Config::default`] is the paper's 4 KB transfer between
/// two uncached buffers with the chunked handler; each field says its
/// default. It serializes whole (every parameter and cost, defaults
/// included), as every [`Outcome`] carries it, and reads back the same, a
/// field left out keeping its default and a field it does not have refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Bytes sent (each direction); default 4096, at most [`MAX_BYTES`].
    pub bytes: u64,
    /// Where the send buffer's lines are at the start (default uncached).
    pub sender: SenderState,
    /// Where the receive buffer's lines are at the start (default uncached).
    pub receiver: ReceiverState,
    /// The sender's handler (default chunked by 4 lines).
    pub handler: Version,
    /// The send buffer's byte offset within its first page (default 0).
    pub src_offset: u64,
    /// The receive buffer's byte offset within its first page (default 0).
    pub dst_offset: u64,
    /// How message data is kept coherent (default local).
    pub mode: Mode,
    /// The user programs flush message data through their processors'
    /// caches (default off): the sender writes back and invalidates its send
    /// buffer before the send; the receiver does the same to its receive
    /// buffer before posting (so no dirty line of its can later overwrite
    /// the data) and invalidates it again once the receive is complete. What
    /// `none` needs to deliver the latest bytes; harmless under the others.
    pub flush: bool,
    /// How global coherence fetches a third node's dirty lines (default
    /// pipelined; `Collect` is refused under the other modes, which fetch
    /// none).
    pub strategy: Strategy,
    /// Where the buffers are homed (default at the transferring nodes). At
    /// a third node, a send buffer `dirty-remote` is dirty in the home's own
    /// cache.
    pub placement: Placement,
    /// One way or both (default one way).
    pub direction: Direction,
    /// Receives the data is split over (each direction), one buffer apart
    /// (default 1; at most [`MAX_PARTS`] and one byte each).
    pub receives: u32,
    /// Sends the data is split over (each direction), back to back in the
    /// send buffer: the stream does not care where one ends (default 1; at
    /// most [`MAX_PARTS`] and one byte each). A send MAGIC has no record for
    /// yet is refused "try again later", and the program issues it again.
    pub sends: u32,
    /// Post the receives before the send starts (the paper's case; default).
    pub receive_first: bool,
    /// A page moved during the transfer (one direction only; default none).
    pub change: Option<PageChange>,
    /// Record the measured pass's timelines (`Magic::trace`; default off).
    pub trace: bool,
    /// The machine (default FLASH's, [`MagicParams::default`]).
    pub params: MagicParams,
    /// What the transfer's handlers charge (default: the calibrated sheet).
    pub costs: super::costs::TransferCosts,
    /// What the command interface's handlers charge.
    pub command_costs: crate::command::CommandCosts,
    /// The directory protocol's options and what its handlers charge.
    pub coherence: CohParams,
    /// What the user programs' flushes charge their processors.
    pub flush_costs: super::cpu::FlushCosts,
    /// A known bug planted in the handlers, for testing a checker (default
    /// none; see [`super::state::Bug`]).
    pub inject: Option<super::state::Bug>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bytes: 4096,
            sender: SenderState::Uncached,
            receiver: ReceiverState::Uncached,
            handler: Version::Chunked(4),
            src_offset: 0,
            dst_offset: 0,
            mode: Mode::Local,
            flush: false,
            strategy: Strategy::Pipelined,
            placement: Placement::Home,
            direction: Direction::Uni,
            receives: 1,
            sends: 1,
            receive_first: true,
            change: None,
            trace: false,
            params: MagicParams::default(),
            costs: Default::default(),
            command_costs: Default::default(),
            coherence: CohParams::default(),
            flush_costs: Default::default(),
            inject: None,
        }
    }
}

impl Config {
    /// Nodes the experiment's machine has: two, and a third that homes the
    /// buffers or holds the send buffer dirty when the sender's lines are
    /// dirty elsewhere.
    pub fn nodes(&self) -> u32 {
        if self.sender == SenderState::DirtyRemote
            || self.receiver.remote()
            || self.placement == Placement::Third
        {
            3
        } else {
            2
        }
    }

    /// Checks what the experiment itself cannot set up, naming the field:
    /// its own values, the machine's parameters, the cost sheets (their
    /// tasks on this machine's PP), and the relations between them (the
    /// data buffers the handlers hold, the memory the buffers take).
    ///
    /// ```
    /// use protocols::transfer::{Config, ConfigError};
    /// let c = Config { bytes: 1 << 30, ..Config::default() };
    /// let Err(ConfigError::Range(e)) = c.validate() else { panic!() };
    /// assert_eq!(e.to_string(), "bytes must be from 1 to 1048576, got 1073741824");
    /// let c = Config { bytes: 0, ..Config::default() };
    /// assert_eq!(c.validate().unwrap_err().field(), "bytes");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        use magic::costs::Sheet;
        OutOfRange::check("bytes", self.bytes, 1, MAX_BYTES)?;
        self.params.validate()?;
        if self.params.data_buffers < 4 {
            let n = self.params.data_buffers;
            return Err(OutOfRange::new("data_buffers", "at least 4 for the transfer", n).into());
        }
        let page = format!("below the page size, {PAGE_BYTES}");
        for (field, v) in [
            ("src_offset", self.src_offset),
            ("dst_offset", self.dst_offset),
        ] {
            if v >= PAGE_BYTES {
                return Err(OutOfRange::new(field, page, v).into());
            }
        }
        if let Version::Chunked(k) = self.handler {
            let pool = self.params.data_buffers as u32;
            if k == 0 || k > pool {
                let allowed = format!("from 1 to the data-buffer pool, {pool}");
                return Err(OutOfRange::new("chunk", allowed, k).into());
            }
        }
        if self.strategy == Strategy::Collect && self.mode != Mode::Global {
            return Err(ConfigError::Needs {
                field: "strategy",
                value: "collect",
                other: "coherence",
                other_value: "global",
                why: "the strategy orders the fetches of lines dirty in a third node's \
                      cache, which only global coherence makes",
            });
        }
        if self.sender == SenderState::DirtyRemote && self.mode == Mode::Local {
            return Err(ConfigError::Needs {
                field: "sender",
                value: "dirty-remote",
                other: "coherence",
                other_value: "global",
                why: "local coherence cannot reach a third node's cache",
            });
        }
        if self.receiver.remote() && self.mode == Mode::Local {
            return Err(ConfigError::Needs {
                field: "receiver",
                value: if self.receiver == ReceiverState::CleanRemote {
                    "clean-remote"
                } else {
                    "dirty-remote"
                },
                other: "coherence",
                other_value: "global",
                why: "local coherence cannot reach a third node's cache",
            });
        }
        if self.placement == Placement::Third {
            self.third_node()?;
        }
        let most = self.bytes.clamp(1, MAX_PARTS as u64);
        let parts = if most == MAX_PARTS as u64 {
            format!("from 1 to {MAX_PARTS}")
        } else {
            format!("from 1 to {most} (one byte a part at least)")
        };
        for (field, n) in [("receives", self.receives), ("sends", self.sends)] {
            if n == 0 || n as u64 > most {
                return Err(OutOfRange::new(field, parts, n).into());
            }
        }
        if let Some(ch) = self.change {
            let (state_ok, len, off) = match ch.side {
                Side::Send => (
                    self.sender == SenderState::Uncached,
                    self.bytes,
                    self.src_offset,
                ),
                Side::Receive => (
                    self.receiver == ReceiverState::Uncached,
                    receive_layout(self).last().map_or(0, |x| x.0 + x.1) - DST_VA,
                    0,
                ),
            };
            let change = |why: String| ConfigError::Change { why };
            if !state_ok {
                return Err(change(
                    "a page change needs that buffer uncached (the OS copies memory)".into(),
                ));
            }
            if self.direction != Direction::Uni {
                return Err(change(
                    "a page change is modelled for a one-way transfer".into(),
                ));
            }
            if ch.page >= (off + len).div_ceil(PAGE_BYTES) {
                return Err(change(format!("the buffer has no page {}", ch.page)));
            }
            // A change no run reaches is no change (the run would end at its
            // budget, or past the end of time, before it).
            let budget = self.params.budget;
            if ch.after > budget {
                let allowed = format!("at most the run's cycle budget, {}", budget.0);
                return Err(OutOfRange::new("after", allowed, ch.after.0).into());
            }
        }
        let need = self.memory_needed();
        if self.params.mem_bytes < need {
            let allowed = format!("at least {need} for the transfer's buffers");
            return Err(OutOfRange::new("mem_bytes", allowed, self.params.mem_bytes).into());
        }
        let width = self.params.pp_issue_width;
        self.costs.validate_on(width)?;
        self.command_costs.validate_on(width)?;
        self.coherence.validate()?;
        // The buffers' homes are the experiment's placement, by address.
        coherence::protocol::by_node_bits(&self.coherence)?;
        self.flush_costs.validate()?;
        Ok(())
    }

    /// Bytes of memory a node needs for the experiment's buffers: the end
    /// of the highest frame a buffer (or a moved page) takes. Only for a
    /// configuration whose buffers and page change `validate` has checked
    /// (the arithmetic and the receives' list assume them in range).
    fn memory_needed(&self) -> u64 {
        let end = |b: &Buffer| {
            let first = b.va / PAGE_BYTES;
            let last = (b.va + b.len.max(1) - 1) / PAGE_BYTES;
            frame(b.home, b.base, last - first).offset() + PAGE_BYTES
        };
        let recvs = receive_layout(self);
        let span = recvs.last().map_or(0, |r| r.0 + r.1) - (DST_VA + self.dst_offset);
        let mut need =
            end(&send_buffer(self, NodeId(0))).max(end(&receive_buffer(self, NodeId(1), span)));
        if let Some(ch) = self.change {
            need = need.max(MOVED_FRAMES + (ch.page + 1) * PAGE_BYTES);
        }
        need
    }

    /// What buffers homed at a third node need: a mode that reaches it, and
    /// the transfer shape the model carries through the home (one send into
    /// one receive, one way, the buffers at the same offset within a line,
    /// no page moved).
    fn third_node(&self) -> Result<(), ConfigError> {
        let needs = |other, other_value, why| ConfigError::Needs {
            field: "placement",
            value: "third",
            other,
            other_value,
            why,
        };
        if self.mode == Mode::Local {
            return Err(ConfigError::Refuses {
                field: "placement",
                value: "third",
                other: "coherence",
                other_value: "local",
                why: "local coherence keeps only the transferring nodes' directories: \
                      a buffer homed at a third node is outside it",
            });
        }
        let why = "a buffer homed at a third node is modelled for one send into one \
                   receive, one way, with the buffers at the same offset within a line";
        if self.direction != Direction::Uni {
            return Err(needs("direction", "uni", why));
        }
        if self.sends != 1 {
            return Err(needs("sends", "1", why));
        }
        if self.receives != 1 {
            return Err(needs("receives", "1", why));
        }
        if self.src_offset % LINE != self.dst_offset % LINE {
            let allowed = format!(
                "at the send buffer's offset within a line ({} of {LINE}) when the \
                 buffers are homed at a third node",
                self.src_offset % LINE
            );
            return Err(OutOfRange::new("dst_offset", allowed, self.dst_offset).into());
        }
        if self.change.is_some() {
            return Err(ConfigError::Change {
                why: "a page change is modelled for buffers homed at the transferring nodes".into(),
            });
        }
        Ok(())
    }
}

/// A transfer configuration the experiment cannot set up. Fields are named
/// as [`Config`] (and a scenario's `[transfer]` table) spells them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A field (of the transfer or its machine) out of its range.
    #[error(transparent)]
    Range(#[from] OutOfRange),
    /// A field's value that needs another field's.
    #[error("{field} = \"{value}\" needs {other} = \"{other_value}\" ({why})")]
    Needs {
        /// The field.
        field: &'static str,
        /// Its value.
        value: &'static str,
        /// The field it needs set.
        other: &'static str,
        /// To this value.
        other_value: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A field's value that cannot go with another field's.
    #[error("{field} = \"{value}\" cannot go with {other} = \"{other_value}\" ({why})")]
    Refuses {
        /// The field.
        field: &'static str,
        /// Its value.
        value: &'static str,
        /// The field it conflicts with.
        other: &'static str,
        /// That field's value.
        other_value: &'static str,
        /// Why.
        why: &'static str,
    },
    /// The translation change the experiment is asked to make mid-transfer.
    #[error("change: {why}")]
    Change {
        /// What is wrong with it.
        why: String,
    },
}

impl ConfigError {
    /// The field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::Range(e) => e.field,
            ConfigError::Needs { field, .. } | ConfigError::Refuses { field, .. } => field,
            ConfigError::Change { .. } => "change",
        }
    }
}

/// The fixed overhead of a transfer, in its parts (cycles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Startup {
    /// The send's first command write to its ACK at the processor.
    pub initiation: u64,
    /// The ACK to the first line's own work.
    pub setup_verification: u64,
    /// That to the first component on the wire.
    pub initial_line: u64,
    /// The last component off the wire to its bytes in the receiver's memory.
    pub network_queueing: u64,
    /// That to the receiving process told.
    pub receiver_cleanup: u64,
    /// The parts' sum.
    pub total: u64,
}

/// What an experiment measured: plain data (`Send`, `Clone`, `Debug`,
/// `PartialEq`) that carries what made it (the whole [`Config`] and the
/// kit's version), so `run(&outcome.config)` measures it again, equal.
///
/// It keeps the counts the model produced (cycles, lines, the stages'
/// busy cycles in [`StageCycles`], the ledger's counters); every derived
/// figure (the per-line rates, the bound, µs, MB/s, the ledger's means and
/// shares) is computed from them in one place, exactly. Its `Serialize` is
/// the JSON the command line prints ([`Outcome::json`]): the counts as
/// integers and the derived figures at full precision; its `Deserialize`
/// reads that JSON back to an equal value, refusing a derived figure its
/// counts do not give. The table (`Display`) rounds the one way
/// [`magic::figures`] says.
///
/// Two spans are reported, and they are different things: [`Outcome::total`]
/// runs from the send's first command write to the last receive's
/// completion told; the ledger's `elapsed` is the window its counters cover,
/// from their reset (a cycle before the send is issued) to the machine's
/// last event. The table names each for what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The version of the kit that measured it (`protocols`' package
    /// version).
    pub version: String,
    /// The experiment.
    pub config: Config,
    /// The send's first command write to the last receive's completion told
    /// (with `flush`: the sender's flush to the receiver's flush after the
    /// data).
    pub total: Cycles,
    /// The fixed overhead, in its parts.
    pub startup: Startup,
    /// Components (one per destination line touched), node 0 to node 1.
    pub lines: u64,
    /// First component on the wire to the last off it.
    pub transfer: Cycles,
    /// The cycle counts the per-line figures are computed from.
    pub stages: StageCycles,
    /// Cycles between components landing in the receiver's memory (first
    /// to last): the rate of the pipeline's slowest stage. `None` when
    /// fewer than two components landed (a transfer within one line): one
    /// landing has no spacing, and no stage bounds it.
    pub per_line: Option<f64>,
    /// The sender's handler busy time per line, outbox stalls included.
    pub sender_occupancy_per_line: f64,
    /// The component handler's busy time per line, outbox stalls included.
    pub receiver_occupancy_per_line: f64,
    /// The sender's handler time per line without its outbox stalls (waits
    /// on memory and the processor cache included): what it would take if
    /// the network were never the bottleneck.
    pub sender_handler_per_line: f64,
    /// The component handler's time per line without outbox stalls.
    pub receiver_handler_per_line: f64,
    /// The sender's outgoing link's busy time per line.
    pub network_per_line: f64,
    /// The stage whose time per line is the rate, `None` with `per_line`.
    pub limited_by: Option<Bound>,
    /// What waits on the nodes' shared units cost the stream that ended
    /// last (node 0's one way; both ways, whichever receive was told last):
    /// the idle time they left on its sender's link, and what they put off
    /// its end (see [`HeldBack`]). Both ways, each node's PP runs its own
    /// sender's handler and the component handler of its partner's stream,
    /// and this is what their waits for each other cost.
    pub held_back: HeldBack,
    /// Every receive holds its part of the stream, and nothing around them
    /// changed, as the receiving process sees it: no stale line.
    pub data_ok: bool,
    /// Receive-side lines whose bytes, as the receiving process sees them
    /// (its cache's copy if it holds one, else the latest copy), differ from
    /// the latest write: the stream's bytes where the message covers the
    /// line, the line's own bytes elsewhere. Empty unless coherence is off
    /// and nothing flushed.
    pub stale: Vec<StaleLine>,
    /// What the coherence mode made MAGIC do to message data.
    pub coherence: CoherenceActions,
    /// Cycles the user processes' processors spent on the measured pass's
    /// operations, both nodes: each command from its first write to its
    /// answer, and each flush.
    pub processor: Cycles,
    /// The flushes' share (zero without `flush`).
    pub flush: FlushTimes,
    /// `None` if the caches and directories agree afterwards.
    pub incoherent: Option<String>,
    /// The measured pass's occupancy ledger (every node, every handler).
    pub ledger: Ledger,
}

/// The cycle counts of the measured pass behind a transfer's per-line
/// figures ([`StageCycles::per_line`] computes those from them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageCycles {
    /// Busy cycles of the sender's handlers on node 0
    /// (`transfer.send_step`, `transfer.fetched`), outbox stalls included.
    pub sender_busy: u64,
    /// Of those, the cycles stalled on a full outbox lane.
    pub sender_stall: u64,
    /// Busy cycles of the component handlers on node 1
    /// (`transfer.component`, `transfer.retry`), outbox stalls included.
    pub receiver_busy: u64,
    /// Of those, the cycles stalled on a full outbox lane.
    pub receiver_stall: u64,
    /// Node 0's outgoing link's busy cycles.
    pub network_busy: u64,
    /// The first component's bytes in the receiver's memory to the last
    /// component's: `None` when fewer than two landed.
    pub landing: Option<u64>,
}

/// A transfer's per-line figures, derived from its [`StageCycles`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerLine {
    /// The landing rate: the landing span over the spaces between lines
    /// (`None` with fewer than two lines landed).
    pub rate: Option<f64>,
    /// The sender's busy cycles per line, stalls included.
    pub sender_occupancy: f64,
    /// The receiver's busy cycles per line, stalls included.
    pub receiver_occupancy: f64,
    /// The sender's busy cycles per line, stalls apart.
    pub sender_handler: f64,
    /// The receiver's busy cycles per line, stalls apart.
    pub receiver_handler: f64,
    /// The link's busy cycles per line.
    pub network: f64,
    /// The stage that bounds the rate ([`Bound::of`]), `None` with `rate`.
    pub limited_by: Option<Bound>,
}

impl StageCycles {
    /// The per-line figures of a transfer of `lines` lines made one way or
    /// both: the one place they are computed. Each count is divided by
    /// the lines (at least one), the landing span by the spaces between
    /// them; `line_wire` is the cycles a line's packet holds a link (the
    /// least a stream of lines can keep them apart, [`Bound::of_rate`]).
    ///
    /// ```
    /// use protocols::transfer::{Bound, Direction, StageCycles};
    /// // The 4 KB transfer from a dirty send buffer: 32 lines.
    /// let s = StageCycles { sender_busy: 1465, network_busy: 1280, receiver_busy: 1024,
    ///                       landing: Some(1434), ..StageCycles::default() };
    /// let p = s.per_line(32, Direction::Uni, 40.0);
    /// assert_eq!(p.rate, Some(1434.0 / 31.0)); // the table's 46.3
    /// assert_eq!(p.sender_occupancy, 1465.0 / 32.0);
    /// assert_eq!(p.limited_by, Some(Bound::Sender));
    /// ```
    pub fn per_line(&self, lines: u64, direction: Direction, line_wire: f64) -> PerLine {
        let per = |x: u64| x as f64 / lines.max(1) as f64;
        let rate = self
            .landing
            .filter(|_| lines > 1)
            .map(|x| x as f64 / (lines - 1) as f64);
        let (sender, receiver) = (
            per(self.sender_busy.saturating_sub(self.sender_stall)),
            per(self.receiver_busy.saturating_sub(self.receiver_stall)),
        );
        let network = per(self.network_busy);
        PerLine {
            rate,
            sender_occupancy: per(self.sender_busy),
            receiver_occupancy: per(self.receiver_busy),
            sender_handler: sender,
            receiver_handler: receiver,
            network,
            limited_by: rate
                .map(|r| Bound::of_rate(direction, r, network, sender, receiver, line_wire)),
        }
    }
}

/// What bounds a transfer's per-line rate: the slowest stage of the
/// pipeline, each stage's time per line without the outbox stalls (a
/// handler stalled on a full outbox waits for the network, whose time that
/// is).
///
/// One way, the stages are the sender's link, the sending node's transfer
/// handler and the receiving node's component handler, each on a unit of
/// its own. Both ways (`Direction::Bi`), each node's one PP runs its own
/// sender's handler and the component handler for its partner's stream, so
/// the PP's stage is their sum; the link is still one per node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// The sending node's outgoing link.
    Network,
    /// The sender's transfer handler (one way).
    Sender,
    /// The receiver's component handler (one way).
    Receiver,
    /// A node's PP, running both the sender's and the receiver's handlers
    /// (both ways).
    Pp,
    /// No stage: the rate is more than [`Bound::SLACK`] above the slowest
    /// stage's time, so the stages stood idle between lines (the command
    /// sequences of many sends, each with its own start-up; a short
    /// transfer's partial last line), and naming the slowest would point
    /// at a stage that is not what sets the pace.
    Gaps,
    /// No stage (one way): the rate is more than [`Bound::SLACK`] below
    /// the slowest stage's time, faster than that stage could pass lines.
    /// Lines that had queued at the receiver (behind a slower start) landed
    /// back to back as it drained them: the spacing is the drain's, not a
    /// pace any stage kept up. Both ways a node's PP turns from one stream
    /// to the other and its lines land in bursts, whose spacing may lie
    /// below the PP's mean while the PP, busy throughout, is still the
    /// bound: those stay [`Bound::Pp`].
    Backlog,
}

impl Bound {
    /// The stage as the table names it.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Network => "network",
            Bound::Sender => "sender",
            Bound::Receiver => "receiver",
            Bound::Pp => "PP",
            Bound::Gaps => "gaps",
            Bound::Backlog => "backlog",
        }
    }

    /// How far above the slowest stage's time a rate may lie and still be
    /// that stage's (a model choice: a stream's own jitter, a line's
    /// start-up shared over the lines, stays well within it; many sends'
    /// start-ups, four times a stage, do not).
    pub const SLACK: f64 = 1.1;

    /// The bound of a transfer whose lines land `rate` cycles apart:
    /// [`Bound::of`] its stages, or [`Bound::Gaps`] when the rate lies
    /// more than [`Bound::SLACK`] above that stage's time, or (one way)
    /// [`Bound::Backlog`] when that stage's time, and `line_wire` (the
    /// cycles a line holds a link: a stage's time per line may count
    /// traffic outside the stream), both lie more than `SLACK` above the
    /// rate.
    ///
    /// ```
    /// use protocols::transfer::{Bound, Direction};
    /// let uni = Direction::Uni;
    /// assert_eq!(Bound::of_rate(uni, 41.0, 40.0, 24.7, 32.0, 40.0), Bound::Network);
    /// assert_eq!(Bound::of_rate(uni, 161.2, 40.0, 24.7, 32.0, 40.0), Bound::Gaps);
    /// assert_eq!(Bound::of_rate(uni, 28.1, 47.2, 27.2, 25.0, 40.0), Bound::Backlog);
    /// // Below the link's time per line but not below a line's own wire.
    /// assert_eq!(Bound::of_rate(uni, 40.0, 48.0, 27.2, 25.0, 40.0), Bound::Network);
    /// ```
    pub fn of_rate(
        direction: Direction,
        rate: f64,
        network: f64,
        sender: f64,
        receiver: f64,
        line_wire: f64,
    ) -> Bound {
        let b = Bound::of(direction, network, sender, receiver);
        let stage = match b {
            Bound::Network => network,
            Bound::Sender => sender,
            Bound::Receiver => receiver,
            Bound::Pp | Bound::Gaps | Bound::Backlog => sender + receiver,
        };
        if rate > stage * Bound::SLACK {
            Bound::Gaps
        } else if direction == Direction::Uni && rate * Bound::SLACK < stage.min(line_wire) {
            Bound::Backlog
        } else {
            b
        }
    }

    /// The stage that bounds the rate: the slowest, by time per line
    /// without outbox stalls (`sender` and `receiver` are the handlers'
    /// times, `network` the link's).
    pub fn of(direction: Direction, network: f64, sender: f64, receiver: f64) -> Bound {
        match direction {
            Direction::Bi if network >= sender + receiver => Bound::Network,
            Direction::Bi => Bound::Pp,
            Direction::Uni if network >= sender && network >= receiver => Bound::Network,
            Direction::Uni if sender >= receiver => Bound::Sender,
            Direction::Uni => Bound::Receiver,
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A receive-side line that holds the wrong bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleLine {
    /// The receiving node.
    pub node: NodeId,
    /// The line's virtual address in the receiving process.
    pub va: u64,
}

impl Serialize for StaleLine {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::SerializeStruct;
        let mut x = s.serialize_struct("StaleLine", 2)?;
        x.serialize_field("node", &self.node.0)?;
        x.serialize_field("va", &format!("{:#x}", self.va))?;
        x.end()
    }
}

/// Reads a stale line as it serializes: the node, and the address in hex.
impl<'de> Deserialize<'de> for StaleLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Line {
            node: u32,
            va: String,
        }
        let l = Line::deserialize(d)?;
        let va =
            l.va.strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "stale va {:?} is not an address in hex (0x...)",
                        l.va
                    ))
                })?;
        Ok(StaleLine {
            node: NodeId(l.node),
            va,
        })
    }
}

/// The coherence actions MAGIC took for message data in the measured pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoherenceActions {
    /// Dirty lines a MAGIC took from its own node's processor cache (a
    /// transferring node's, or a third-node home's).
    pub interventions: u64,
    /// Clean copies of receive lines dropped from processor caches.
    pub invalidations: u64,
    /// Dirty lines fetched from another node's cache by messages (global).
    pub fetches: u64,
}

impl CoherenceActions {
    /// All of them (at most 2^64 - 1: a run takes far fewer, and a
    /// result read back holds no more than its nodes could take).
    pub fn total(&self) -> u64 {
        self.interventions
            .saturating_add(self.invalidations)
            .saturating_add(self.fetches)
    }
}

/// What the user programs' flushes took in the measured pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushTimes {
    /// The sender's flush of its send buffer, in cycles.
    pub send_cycles: u64,
    /// The receiver's flushes of its receive buffer (before posting and
    /// after the receives), in cycles.
    pub receive_cycles: u64,
    /// Lines the flushes found dirty and wrote back.
    pub written_back: u64,
}

/// An [`Outcome`] with the machine it was measured on, for code that looks
/// at the machine after the run (its node states, its trace). It reads as
/// its outcome (`Deref`), so `m.total` and `m.machine` both work.
pub struct Measured<S = XferNode> {
    /// What the experiment measured.
    pub outcome: Outcome,
    /// The machine after the run (its state, its trace).
    pub machine: Magic<S>,
}

impl<S: WithTransfer> Measured<S> {
    /// The line holding virtual address `va` as the experiment's process on
    /// `node` reads it now: its cache's copy if it holds one, else the
    /// latest copy; `None` where the process has no mapping.
    pub fn seen(&self, node: NodeId, va: u64) -> Option<[u8; LINE_BYTES]> {
        if node.0 >= self.machine.nodes() {
            return None;
        }
        let line = va / LINE * LINE;
        let (a, _) = self
            .machine
            .state(node)
            .ok()?
            .xfer()
            .os
            .translate(Pid(1), line)
            .ok()?;
        visible(&self.machine, node, a).ok()
    }
}

impl<S> std::ops::Deref for Measured<S> {
    type Target = Outcome;
    fn deref(&self) -> &Outcome {
        &self.outcome
    }
}

impl<S> std::fmt::Display for Measured<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.outcome.fmt(f)
    }
}

impl Outcome {
    /// The total in microseconds.
    pub fn total_us(&self) -> f64 {
        self.total.as_us()
    }

    /// Bytes moved (both directions for `bi`) per microsecond.
    pub fn bandwidth_mb_s(&self) -> f64 {
        let dirs = if self.config.direction == Direction::Bi {
            2
        } else {
            1
        };
        (self.config.bytes * dirs) as f64 / self.total_us()
    }

    /// The processors' time ([`Outcome::processor`]) in microseconds.
    pub fn processor_us(&self) -> f64 {
        self.processor.as_us()
    }

    /// The measurements as JSON ([`Outcome`]'s `Serialize`): the
    /// configuration and the version, the counts, the derived figures
    /// exact, and the occupancy ledger's handler and unit rows.
    pub fn json(&self) -> serde_json::Value {
        // Serializing into a `Value` fails only on a map with keys that
        // are not strings, which the result has none of.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The outcome its counts make: the derived figures computed from them.
    fn from_counts(w: Wire) -> Result<Outcome, String> {
        // A configuration no run takes gives no result (and the counts
        // below are read against it).
        w.config
            .params
            .validate()
            .map_err(|e| format!("config.params.{e}"))?;
        w.config.validate().map_err(|e| format!("config.{e}"))?;
        let stages = w.stages();
        let c = w.config;
        let p = stages.per_line(w.lines, c.direction, line_wire(&c.params));
        let nodes = c.nodes();
        let ledger = Ledger::from_exact(
            Cycles(w.occupancy_cycles),
            Cycles(w.occupancy_booked_cycles),
            nodes,
            w.occupancy,
            w.units,
        )?;
        let o = Outcome {
            version: w.version,
            total: Cycles(w.total_cycles),
            startup: w.startup,
            lines: w.lines,
            transfer: Cycles(w.transfer_cycles),
            stages,
            per_line: p.rate,
            sender_occupancy_per_line: p.sender_occupancy,
            receiver_occupancy_per_line: p.receiver_occupancy,
            sender_handler_per_line: p.sender_handler,
            receiver_handler_per_line: p.receiver_handler,
            network_per_line: p.network,
            limited_by: p.limited_by,
            held_back: w.held_back,
            data_ok: w.stale.is_empty(),
            stale: w.stale,
            coherence: w.coherence_actions,
            processor: Cycles(w.processor_cycles),
            flush: w.flushes,
            incoherent: w.incoherent,
            ledger,
            config: c,
        };
        // What the JSON repeats or derives must be what its counts give.
        let same = |k: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("{k} disagrees with the rest of the result"))
            }
        };
        for (stall, busy, k) in [
            (w.sender_stall_cycles, w.sender_busy_cycles, "sender"),
            (w.receiver_stall_cycles, w.receiver_busy_cycles, "receiver"),
        ] {
            if stall > busy {
                return Err(format!(
                    "{k}_stall_cycles is {stall}, more than the {busy} {k}_busy_cycles it is part of"
                ));
            }
        }
        // The start-up is its parts' sum, and it and the transfer fall
        // within the whole (which a flush before or after may lengthen).
        let s = w.startup;
        let parts = [
            s.initiation,
            s.setup_verification,
            s.initial_line,
            s.network_queueing,
            s.receiver_cleanup,
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add);
        if parts != Some(s.total) {
            return Err(match parts {
                Some(p) => format!("startup.total is {}, but its parts add to {p}", s.total),
                None => "startup: its parts add past 2^64 - 1".to_string(),
            });
        }
        match s.total.checked_add(w.transfer_cycles) {
            Some(x) if x <= w.total_cycles => {}
            _ => {
                return Err(format!(
                    "startup.total ({}) and transfer_cycles ({}) add to more than the {} total_cycles they are part of",
                    s.total, w.transfer_cycles, w.total_cycles
                ))
            }
        }
        // Waits, flushes and processor time within what the run took:
        // a wait or a flush within the whole, a count of actions or
        // processor cycles within what its nodes could do in it (each
        // action takes a handler at least a cycle).
        let total = w.total_cycles;
        o.config.params.within_budget("total_cycles", total)?;
        o.config
            .params
            .within_budget("occupancy_cycles", w.occupancy_cycles)?;
        let held = w.held_back;
        let within = [
            ("held_back.pp_arbitration", held.pp_arbitration),
            ("held_back.memory", held.memory),
            ("held_back.pcache_if", held.pcache_if),
            ("held_back (its sum)", held.total()),
            ("flushes.send_cycles", w.flushes.send_cycles),
            ("flushes.receive_cycles", w.flushes.receive_cycles),
            // A stage's handlers run on one PP and the link is one link,
            // each within the run; the landing span lies within it too.
            ("sender_busy_cycles", w.sender_busy_cycles),
            ("receiver_busy_cycles", w.receiver_busy_cycles),
            ("network_busy_cycles", w.network_busy_cycles),
            ("landing_cycles", w.landing_cycles.unwrap_or(0)),
        ];
        if let Some((k, x)) = within.into_iter().find(|x| x.1 > total) {
            return Err(format!("{k} is {x}, more than the {total} total_cycles"));
        }
        // The receiver counts the components the stream is cut into (a
        // planted bug may cut it otherwise: its run is read as it is).
        let lines = components(&o.config);
        if o.config.inject.is_none() && w.lines != lines {
            return Err(format!(
                "lines is {}, but {} bytes at the config's offsets, sends and receives come in {lines}",
                w.lines, o.config.bytes
            ));
        }
        let most = total.saturating_mul(nodes as u64);
        let a = w.coherence_actions;
        let done = [
            ("coherence_actions.interventions", a.interventions),
            ("coherence_actions.invalidations", a.invalidations),
            ("coherence_actions.fetches", a.fetches),
            ("coherence_actions (their sum)", a.total()),
            ("processor_cycles", w.processor_cycles),
        ];
        if let Some((k, x)) = done.into_iter().find(|x| x.1 > most) {
            return Err(format!(
                "{k} is {x}, more than {nodes} nodes do in the {total} total_cycles"
            ));
        }
        // A figure the configuration also holds names both places.
        let repeats = |k: &str, ok: bool| {
            let at = if k == "coherence" { "mode" } else { k };
            same(&format!("{k} (a repeat of config.{at})"), ok)
        };
        repeats("bytes", w.bytes == o.config.bytes)?;
        repeats("coherence", w.coherence == o.config.mode)?;
        repeats("flush", w.flush == o.config.flush)?;
        same("stale_lines", w.stale_lines == o.stale.len())?;
        same("data_ok", w.data_ok == o.data_ok)?;
        same("coherent", w.coherent == o.incoherent.is_none())?;
        same("limited_by", w.limited_by == o.limited_by)?;
        match (w.per_line_cycles, o.per_line) {
            (Some(j), Some(x)) => exact("per_line_cycles", j, x)?,
            (None, None) => {}
            _ => same("per_line_cycles", false)?,
        }
        for (k, j, x) in [
            ("total_us", w.total_us, o.total_us()),
            ("bandwidth_mb_s", w.bandwidth_mb_s, o.bandwidth_mb_s()),
            ("processor_us", w.processor_us, o.processor_us()),
            (
                "sender_occupancy_per_line",
                w.sender_occupancy_per_line,
                o.sender_occupancy_per_line,
            ),
            (
                "receiver_occupancy_per_line",
                w.receiver_occupancy_per_line,
                o.receiver_occupancy_per_line,
            ),
            (
                "sender_handler_per_line",
                w.sender_handler_per_line,
                o.sender_handler_per_line,
            ),
            (
                "receiver_handler_per_line",
                w.receiver_handler_per_line,
                o.receiver_handler_per_line,
            ),
            (
                "network_cycles_per_line",
                w.network_cycles_per_line,
                o.network_per_line,
            ),
        ] {
            exact(k, j, x)?;
        }
        Ok(o)
    }
}

/// The JSON of an [`Outcome`], key by key: the configuration and version,
/// the counts under their own names, the derived figures beside them.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: String,
    config: Config,
    bytes: u64,
    lines: u64,
    total_cycles: u64,
    total_us: f64,
    bandwidth_mb_s: f64,
    startup: Startup,
    transfer_cycles: u64,
    landing_cycles: Option<u64>,
    per_line_cycles: Option<f64>,
    sender_busy_cycles: u64,
    sender_stall_cycles: u64,
    receiver_busy_cycles: u64,
    receiver_stall_cycles: u64,
    network_busy_cycles: u64,
    sender_occupancy_per_line: f64,
    receiver_occupancy_per_line: f64,
    sender_handler_per_line: f64,
    receiver_handler_per_line: f64,
    network_cycles_per_line: f64,
    limited_by: Option<Bound>,
    held_back: HeldBack,
    data_ok: bool,
    stale_lines: usize,
    stale: Vec<StaleLine>,
    coherent: bool,
    incoherent: Option<String>,
    coherence_actions: CoherenceActions,
    processor_cycles: u64,
    processor_us: f64,
    coherence: Mode,
    flush: bool,
    flushes: FlushTimes,
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

impl Wire {
    fn stages(&self) -> StageCycles {
        StageCycles {
            sender_busy: self.sender_busy_cycles,
            sender_stall: self.sender_stall_cycles,
            receiver_busy: self.receiver_busy_cycles,
            receiver_stall: self.receiver_stall_cycles,
            network_busy: self.network_busy_cycles,
            landing: self.landing_cycles,
        }
    }
}

impl From<&Outcome> for Wire {
    fn from(o: &Outcome) -> Wire {
        let s = &o.stages;
        Wire {
            version: o.version.clone(),
            config: o.config.clone(),
            bytes: o.config.bytes,
            lines: o.lines,
            total_cycles: o.total.0,
            total_us: o.total_us(),
            bandwidth_mb_s: o.bandwidth_mb_s(),
            startup: o.startup,
            transfer_cycles: o.transfer.0,
            landing_cycles: s.landing,
            per_line_cycles: o.per_line,
            sender_busy_cycles: s.sender_busy,
            sender_stall_cycles: s.sender_stall,
            receiver_busy_cycles: s.receiver_busy,
            receiver_stall_cycles: s.receiver_stall,
            network_busy_cycles: s.network_busy,
            sender_occupancy_per_line: o.sender_occupancy_per_line,
            receiver_occupancy_per_line: o.receiver_occupancy_per_line,
            sender_handler_per_line: o.sender_handler_per_line,
            receiver_handler_per_line: o.receiver_handler_per_line,
            network_cycles_per_line: o.network_per_line,
            limited_by: o.limited_by,
            held_back: o.held_back,
            data_ok: o.data_ok,
            stale_lines: o.stale.len(),
            stale: o.stale.clone(),
            coherent: o.incoherent.is_none(),
            incoherent: o.incoherent.clone(),
            coherence_actions: o.coherence,
            processor_cycles: o.processor.0,
            processor_us: o.processor_us(),
            coherence: o.config.mode,
            flush: o.config.flush,
            flushes: o.flush,
            occupancy_cycles: o.ledger.elapsed.0,
            occupancy_booked_cycles: o.ledger.booked.0,
            occupancy: o.ledger.exact_handlers(),
            units: o.ledger.exact_units(),
        }
    }
}

/// The JSON the command line prints: [`Outcome::json`].
impl Serialize for Outcome {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        Wire::from(self).serialize(s)
    }
}

/// Reads [`Outcome::json`] back: the derived figures are computed from the
/// counts again, and a JSON whose figures its counts do not give (edited,
/// or rounded by an older kit) is refused naming the figure.
impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Outcome::from_counts(Wire::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use magic::figures::{text, Figure};
        let c = &self.config;
        let s = &self.startup;
        let per = |x: f64| text(Figure::FracCycles, x);
        writeln!(
            f,
            "transfer of {} bytes ({} lines), sender {:?}, receiver {:?}, handler {}, {:?} coherence{}, {:?}",
            c.bytes,
            self.lines,
            c.sender,
            c.receiver,
            c.handler.short(),
            c.mode,
            if c.flush { " with flushes" } else { "" },
            c.direction
        )?;
        writeln!(
            f,
            "total {} cycles = {} us, {} MB/s ({}); data {}, caches {}",
            self.total.0,
            text(Figure::Us, self.total_us()),
            text(Figure::MbS, self.bandwidth_mb_s()),
            if c.flush {
                "the sender's flush to the receiver's flush after the data"
            } else {
                "the send's first command write to the last receive told"
            },
            if self.data_ok { "intact" } else { "WRONG" },
            match &self.incoherent {
                None => "coherent".to_string(),
                Some(e) => format!("INCOHERENT ({e})"),
            }
        )?;
        if !self.stale.is_empty() {
            let shown: Vec<String> = self
                .stale
                .iter()
                .take(6)
                .map(|l| format!("node {} {:#x}", l.node, l.va))
                .collect();
            let more = self.stale.len().saturating_sub(shown.len());
            writeln!(
                f,
                "stale lines: {} ({}{})",
                self.stale.len(),
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            )?;
        }
        let a = &self.coherence;
        writeln!(
            f,
            "coherence actions: {} interventions, {} invalidations, {} fetches; processors {} us{}",
            a.interventions,
            a.invalidations,
            a.fetches,
            text(Figure::Us, self.processor.as_us()),
            if c.flush {
                format!(
                    " (flushes: send {} cycles, receive {} cycles, {} lines written back)",
                    self.flush.send_cycles, self.flush.receive_cycles, self.flush.written_back
                )
            } else {
                String::new()
            }
        )?;
        writeln!(f)?;
        writeln!(f, "start-up                      cycles")?;
        for (k, v) in [
            ("initiation", s.initiation),
            ("setup and verification", s.setup_verification),
            ("initial line", s.initial_line),
            ("network and queueing", s.network_queueing),
            ("receiver cleanup", s.receiver_cleanup),
            ("fixed overhead (the sum)", s.total),
        ] {
            writeln!(f, "  {k:<26} {v:>6}")?;
        }
        writeln!(f)?;
        let stages = format!(
            "network {}, sender {}, receiver {}",
            per(self.network_per_line),
            per(self.sender_occupancy_per_line),
            per(self.receiver_occupancy_per_line),
        );
        match (self.per_line, self.limited_by) {
            (Some(rate), Some(bound)) => writeln!(
                f,
                "per line: {} cycles ({stages}): limited by the {}",
                per(rate),
                match bound {
                    Bound::Pp => "PP (the sender's and receiver's handlers share it)",
                    Bound::Gaps => "gaps between the stages' work (no stage's time is the rate)",
                    Bound::Backlog => {
                        "backlog: lines queued at the receiver landed as it drained them, faster than the slowest stage passes them"
                    }
                    b => b.name(),
                }
            )?,
            _ if self.lines == 1 => writeln!(
                f,
                "per line: no rate, one line landed (its stages: {stages})"
            )?,
            _ => writeln!(f, "per line: no rate, {} lines landed", self.lines)?,
        }
        writeln!(
            f,
            "handler time per line, outbox stalls apart: sender {}, receiver {}",
            per(self.sender_handler_per_line),
            per(self.receiver_handler_per_line)
        )?;
        if c.direction == Direction::Bi {
            let h = &self.held_back;
            writeln!(
                f,
                "waits that held the stream back: {} cycles, {} a line (PP arbitration {}, memory {}, pcache-if {})",
                h.total(),
                per(h.total() as f64 / self.lines.max(1) as f64),
                h.pp_arbitration,
                h.memory,
                h.pcache_if,
            )?;
        }
        writeln!(f)?;
        write!(f, "{}", self.ledger.render())
    }
}

/// The byte the send buffer holds at stream position `i` (node `n`).
fn src_byte(n: u32, i: u64) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 7) ^ (n as u64 * 0x5B)) as u8
}

/// What a receive-side line holds before the transfer (memory; a dirty
/// cached copy holds `!` of it).
fn junk(n: u32, line: u64) -> [u8; LINE_BYTES] {
    let mut b = [0u8; LINE_BYTES];
    for (j, x) in b.iter_mut().enumerate() {
        *x = (0xA0 ^ n as u64 ^ line.wrapping_mul(3) ^ j as u64) as u8;
    }
    b
}

/// The frame of virtual page `k` of a buffer at `base` (every other page,
/// so a buffer is not physically contiguous).
fn frame(node: NodeId, base: u64, k: u64) -> PAddr {
    PAddr::new(Region::Normal, node, base + 2 * k * PAGE_BYTES)
}

const SRC_FRAMES: u64 = 0x10_0000;
const DST_FRAMES: u64 = 0x80_0000;
/// Frames the OS moves pages to.
const MOVED_FRAMES: u64 = 0x100_0000;

struct Buffer {
    /// The node whose process owns the buffer.
    node: NodeId,
    /// The node whose memory holds it.
    home: NodeId,
    va: u64,
    len: u64,
    base: u64,
}

impl Buffer {
    fn paddr(&self, va: u64) -> PAddr {
        let page = va / PAGE_BYTES - self.va / PAGE_BYTES;
        PAddr(frame(self.home, self.base, page).0 + va % PAGE_BYTES)
    }

    /// Virtual addresses of the lines it touches, with one more line on
    /// each side when `guard`.
    fn lines(&self, guard: bool) -> impl Iterator<Item = u64> {
        let first = self.va / LINE * LINE;
        let end = (self.va + self.len.max(1)).div_ceil(LINE) * LINE;
        let g = if guard { LINE } else { 0 };
        let lo = if first >= g && (first - g) / PAGE_BYTES == first / PAGE_BYTES {
            first - g
        } else {
            first
        };
        let hi = if (end + g - 1) / PAGE_BYTES == (end - 1) / PAGE_BYTES {
            end + g
        } else {
            end
        };
        (lo..hi).step_by(LINE_BYTES)
    }
}

/// Where a buffer of node `n`'s process is homed.
fn home_of(c: &Config, n: NodeId) -> NodeId {
    match c.placement {
        Placement::Home => n,
        Placement::Third => NodeId(2),
    }
}

/// Node `n`'s send buffer.
fn send_buffer(c: &Config, n: NodeId) -> Buffer {
    Buffer {
        node: n,
        home: home_of(c, n),
        va: SRC_VA + c.src_offset,
        len: c.bytes,
        base: SRC_FRAMES,
    }
}

/// Node `n`'s receive buffer, `span` bytes from the first receive's start.
fn receive_buffer(c: &Config, n: NodeId, span: u64) -> Buffer {
    Buffer {
        node: n,
        home: home_of(c, n),
        va: DST_VA + c.dst_offset,
        len: span,
        base: DST_FRAMES,
    }
}

/// The receives of one direction: `parts` buffers, one line plus 64 bytes
/// apart (so the later ones sit at another alignment).
fn receive_layout(c: &Config) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    let mut va = DST_VA + c.dst_offset;
    for n in split(c.bytes, c.receives) {
        v.push((va, n));
        va += n + if c.receives > 1 { LINE + 64 } else { 0 };
    }
    v
}

/// The components a stream of `c` comes in, which its receiver counts as
/// the run's lines: the sends cut where the sender cuts them
/// ([`super::sender::cut`]), at each destination line's end and each
/// send's and receive's. Only for a configuration `validate` has passed
/// (every send and receive at least a byte).
fn components(c: &Config) -> u64 {
    let sends = split(c.bytes, c.sends);
    let spaces = receive_layout(c);
    let (mut i, mut j, mut sent, mut used, mut n) = (0, 0, 0, 0, 0u64);
    while let (Some(&len), Some(&(va, room))) = (sends.get(i), spaces.get(j)) {
        let k = super::sender::cut(va % LINE + used, len - sent, room - used);
        if k == 0 {
            break;
        }
        n += 1;
        (sent, used) = (sent + k, used + k);
        if sent == len {
            (i, sent) = (i + 1, 0);
        }
        if used == room {
            (j, used) = (j + 1, 0);
        }
    }
    n
}

/// `bytes` in `parts` sizes that differ by at most one, none empty (a
/// zero-length command is refused); zero bytes stay one empty part.
fn split(bytes: u64, parts: u32) -> Vec<u64> {
    let parts = (parts as u64).clamp(1, bytes.max(1));
    (0..parts)
        .map(|i| bytes / parts + u64::from(i < bytes % parts))
        .collect()
}

/// The sends of one direction: `sends` parts of the send buffer, in order.
fn send_ops(c: &Config) -> Vec<ConnOp> {
    let mut off = 0;
    split(c.bytes, c.sends)
        .into_iter()
        .map(|n| {
            let op = ConnOp::Send {
                va: SRC_VA + c.src_offset + off,
                len: n,
            };
            off += n;
            op
        })
        .collect()
}

/// A sending program: its flush of the send buffer (with `flush`), then
/// its sends.
fn sending(c: &Config) -> Vec<ConnOp> {
    let mut ops = Vec::new();
    if c.flush {
        ops.push(ConnOp::Flush {
            va: SRC_VA + c.src_offset,
            len: c.bytes,
        });
    }
    ops.extend(send_ops(c));
    ops
}

/// What a receiving program does once its receives are posted: with
/// `flush`, wait for them all and invalidate the receive buffer (`span`
/// bytes) so that the process reads the data from memory.
fn after_receives(c: &Config, span: u64) -> Vec<ConnOp> {
    if !c.flush {
        return Vec::new();
    }
    vec![
        ConnOp::AwaitReceives(c.receives),
        ConnOp::Flush {
            va: DST_VA + c.dst_offset,
            len: span,
        },
    ]
}

/// Why an experiment has no outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failed {
    /// The configuration is not one the experiment can set up.
    Config(ConfigError),
    /// MAGIC or the machine refused what the experiment asked (as the real
    /// machine would).
    Input(String),
    /// The model stopped with work pending: what is stuck.
    Stuck(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Config(e) => write!(f, "{e}"),
            Failed::Input(s) | Failed::Stuck(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Failed {}

impl From<coherence::Error> for Failed {
    fn from(e: coherence::Error) -> Failed {
        Failed::Input(e.to_string())
    }
}

impl From<magic::BuildError> for Failed {
    fn from(e: magic::BuildError) -> Failed {
        Failed::Input(e.to_string())
    }
}

/// Start the machine's ledger afresh for the measured pass; a machine
/// already halted (its budget reached with a handler running, say) keeps
/// its counters, and the pass reports the halt.
fn fresh_ledger<S: NodeState>(m: &mut Magic<S>) -> Result<(), Failed> {
    if m.halted().is_none() {
        m.reset_counters()?;
    }
    Ok(())
}

impl From<magic::Running> for Failed {
    fn from(e: magic::Running) -> Failed {
        Failed::Input(e.to_string())
    }
}

impl From<magic::NoNode> for Failed {
    fn from(e: magic::NoNode) -> Failed {
        Failed::Input(e.to_string())
    }
}

impl From<ConfigError> for Failed {
    fn from(e: ConfigError) -> Failed {
        Failed::Config(e)
    }
}

impl From<String> for Failed {
    fn from(s: String) -> Failed {
        Failed::Input(s)
    }
}

/// Run one experiment.
pub fn run(c: &Config) -> Result<Outcome, Failed> {
    run_with_machine(c).map(|m| m.outcome)
}

/// Run one experiment and keep the machine beside its outcome (its node
/// states, its trace).
pub fn run_with_machine(c: &Config) -> Result<Measured, Failed> {
    run_on(c, |_| {}, |x, _| x, |_, _| Ok(()))
}

/// Run one experiment with protocol `other` beside the transfer, each over
/// its own node state (node `n`'s is `(transfer's, other's)`). `alongside`
/// may start the other protocol's work when the measured transfer starts
/// (the first pass only warms the caches; `other` runs in both). The
/// outcome's machine holds both protocols' state and ledger rows.
pub fn run_beside<P: Protocol>(
    c: &Config,
    other: &P,
    alongside: impl FnOnce(&mut Magic<(XferNode, P::Node)>, Cycles) -> Result<(), String>,
) -> Result<Measured<(XferNode, P::Node)>, Failed>
where
    P::Node: 'static,
{
    run_on(
        c,
        |b| {
            b.install(other, |s: &mut (XferNode, P::Node)| &mut s.1);
        },
        |x, n| (x, other.node(n, c.nodes())),
        alongside,
    )
}

/// A node state that holds the transfer's: the transfer alone, or the
/// transfer with another protocol beside it.
pub trait WithTransfer: Coherent + NodeState + 'static {
    /// The transfer's part.
    fn xfer(&self) -> &XferNode;
    /// The transfer's part, to change.
    fn xfer_mut(&mut self) -> &mut XferNode;
}

impl WithTransfer for XferNode {
    fn xfer(&self) -> &XferNode {
        self
    }
    fn xfer_mut(&mut self) -> &mut XferNode {
        self
    }
}

impl<B: NodeState + 'static> WithTransfer for (XferNode, B) {
    fn xfer(&self) -> &XferNode {
        &self.0
    }
    fn xfer_mut(&mut self) -> &mut XferNode {
        &mut self.0
    }
}

/// A transfer machine built and mapped, before its first pass.
pub(crate) struct Prepared<S> {
    pub(crate) m: Magic<S>,
    pub(crate) senders: Vec<NodeId>,
    recvs: Vec<(u64, u64)>,
    dst_span: u64,
}

/// Build the machine of `c`, its processes and their mappings.
pub(crate) fn prepare<S: WithTransfer>(
    c: &Config,
    extra: impl FnOnce(&mut MagicBuilder<S>),
    state: impl Fn(XferNode, NodeId) -> S,
) -> Result<Prepared<S>, Failed> {
    c.validate()?;
    let nodes = c.nodes();
    let unit = Transfer {
        params: XferParams {
            handler: c.handler,
            mode: c.mode,
            strategy: c.strategy,
            costs: c.costs,
            command: c.command_costs,
            inject: c.inject,
            ..XferParams::default()
        },
        coherence: c.coherence,
        ..Transfer::default()
    };
    let mut b = MagicBuilder::new(c.params.clone(), nodes);
    b.install(&unit, S::xfer_mut);
    extra(&mut b);
    let pid = Pid(1);
    let recvs = receive_layout(c);
    let dst_span = recvs.last().map_or(0, |r| r.0 + r.1) - (DST_VA + c.dst_offset);
    let mut m = b.build(|n| {
        let mut x = unit.node(n, nodes);
        if n.0 < 2 {
            x.os.spawn(pid);
            let _ = x.os.set_group(pid, vec![(NodeId(1 - n.0), pid)]);
        }
        x.cpu.pid = pid;
        x.cpu.flush_costs = c.flush_costs;
        state(x, n)
    })?;
    let senders: Vec<NodeId> = match c.direction {
        Direction::Uni => vec![NodeId(0)],
        Direction::Bi => vec![NodeId(0), NodeId(1)],
    };
    for &s in &senders {
        map(&mut m, &send_buffer(c, s), pid)?;
        map(&mut m, &receive_buffer(c, NodeId(1 - s.0), dst_span), pid)?;
    }
    Ok(Prepared {
        m,
        senders,
        recvs,
        dst_span,
    })
}

/// Start pass `pass` (0 connects): the buffers placed, the counters
/// zeroed, each program given its operations and started. With
/// `receive_first`, the programs only post their receives.
pub(crate) fn begin_pass<S: WithTransfer>(
    p: &mut Prepared<S>,
    c: &Config,
    pass: u32,
) -> Result<(), Failed> {
    let (m, senders) = (&mut p.m, &p.senders);
    for &s in senders {
        place_send(m, c, &send_buffer(c, s))?;
        place_receive(m, c, &receive_buffer(c, NodeId(1 - s.0), p.dst_span))?;
    }
    // Every node's counters start with the pass (the third node of a
    // dirty-remote send is counted too).
    for n in 0..m.nodes() {
        let x = m.state_mut(NodeId(n))?.xfer_mut();
        x.cpu.log.clear();
        x.stats = Default::default();
        x.coh.stats = Default::default();
    }
    let at = m.now() + Cycles(1);
    for n in [NodeId(0), NodeId(1)] {
        let mut ops = Vec::new();
        if pass == 0 {
            ops.push(ConnOp::Connect { vpid: 0 });
        }
        if senders.contains(&NodeId(1 - n.0)) {
            if c.flush {
                ops.push(ConnOp::Flush {
                    va: DST_VA + c.dst_offset,
                    len: p.dst_span,
                });
            }
            ops.extend(p.recvs.iter().map(|&(va, len)| ConnOp::Post { va, len }));
        }
        if !c.receive_first {
            ops.extend(after_posting(c, senders, n, p.dst_span));
        }
        start_program(m, n, ops, at)?;
    }
    Ok(())
}

/// What node `n`'s program does once its receives are posted: its sends
/// (with its flush first), then, with `flush`, the wait for its receives
/// and their flush.
fn after_posting(c: &Config, senders: &[NodeId], n: NodeId, dst_span: u64) -> Vec<ConnOp> {
    let mut ops = Vec::new();
    if senders.contains(&n) {
        ops.extend(sending(c));
    }
    if senders.contains(&NodeId(1 - n.0)) {
        ops.extend(after_receives(c, dst_span));
    }
    ops
}

/// Give node `n`'s program `ops` and start its processor at `at`.
fn start_program<S: WithTransfer>(
    m: &mut Magic<S>,
    n: NodeId,
    ops: Vec<ConnOp>,
    at: Cycles,
) -> Result<(), Failed> {
    let cpu = &mut m.state_mut(n)?.xfer_mut().cpu;
    cpu.push(ops);
    cpu.start(at);
    m.start_processor(n, at).map_err(String::from)?;
    Ok(())
}

fn run_on<S: WithTransfer>(
    c: &Config,
    extra: impl FnOnce(&mut MagicBuilder<S>),
    state: impl Fn(XferNode, NodeId) -> S,
    alongside: impl FnOnce(&mut Magic<S>, Cycles) -> Result<(), String>,
) -> Result<Measured<S>, Failed> {
    let mut alongside = Some(alongside);
    let mut p = prepare(c, extra, state)?;
    // Two passes: the first warms MAGIC's caches (as a benchmark loop
    // would), the second is measured.
    for pass in 0..2 {
        if pass == 1 && c.trace {
            p.m.trace_on();
        }
        begin_pass(&mut p, c, pass)?;
        let (m, senders) = (&mut p.m, &p.senders);
        let at = if c.receive_first {
            // The posted receives wait for data: that is the point.
            m.run();
            refused(m)?;
            fresh_ledger(m)?;
            let at = m.now() + Cycles(1);
            for n in [NodeId(0), NodeId(1)] {
                let ops = after_posting(c, senders, n, p.dst_span);
                if !ops.is_empty() {
                    start_program(m, n, ops, at)?;
                }
            }
            at
        } else {
            fresh_ledger(m)?;
            m.now() + Cycles(1)
        };
        if pass == 1 {
            schedule_change(m, c, at)?;
            if let Some(f) = alongside.take() {
                f(m, at)?;
            }
        }
        let rep = m.run();
        refused(m)?;
        if !rep.is_clean() {
            return Err(Failed::Stuck(format!(
                "the transfer did not complete: {}",
                rep.problems().join("; ")
            )));
        }
    }
    if let Some(ch) = c.change {
        change_in_time(&p.m, ch)?;
    }
    measure(c, p.m, &p.senders).map_err(Failed::Stuck)
}

/// The cycles a line's packet holds a link: the closest a stream of lines
/// can keep them.
fn line_wire(p: &MagicParams) -> f64 {
    p.wire_cycles(LINE_BYTES as u64).0 as f64
}

/// A page change the transfer was over before changes nothing, and its
/// figures would read as a change that cost nothing: it is refused, as a
/// time past a run's end is. Its time is the OS's notice to MAGIC; the
/// transfer's end, the last receive told.
fn change_in_time<S: WithTransfer>(m: &Magic<S>, ch: PageChange) -> Result<(), Failed> {
    let node = match ch.side {
        Side::Send => NodeId(0),
        Side::Receive => NodeId(1),
    };
    let log = |n: NodeId| m.state(n).map_or(&[][..], |x| &x.xfer().cpu.log[..]);
    let notice = log(node).iter().find_map(|e| match *e {
        ConnEvent::Changed { at, waited } => Some(Cycles(at.0.saturating_sub(waited.0))),
        _ => None,
    });
    let end = log(NodeId(1))
        .iter()
        .filter_map(|e| match *e {
            ConnEvent::RecvDone { at, .. } => Some(at),
            _ => None,
        })
        .max();
    match (notice, end) {
        (Some(notice), Some(end)) if notice >= end => Err(ConfigError::Change {
            why: format!(
                "the page moves at cycle {} (`after` {}), when the transfer was over at \
                 cycle {}: it would change nothing; a smaller `after` moves it while the \
                 transfer runs",
                notice.0, ch.after.0, end.0
            ),
        }
        .into()),
        // A change never made, or a transfer never ended, is the run's
        // failure, said by the run.
        _ => Ok(()),
    }
}

/// Data: every receive holds its part of the stream; the bytes around them
/// are as they were; both as the receiving process sees them. The lines
/// found wrong, and every buffer line looked at.
pub(crate) fn data_check<S: WithTransfer>(
    c: &Config,
    m: &Magic<S>,
    senders: &[NodeId],
) -> Result<(Vec<StaleLine>, Vec<PAddr>), NoNode> {
    let mut stale = Vec::new();
    let mut lines_seen = Vec::new();
    for &s in senders {
        let r = NodeId(1 - s.0);
        let layout = receive_layout(c);
        let d = receive_buffer(
            c,
            r,
            layout.last().map_or(0, |x| x.0 + x.1) - (DST_VA + c.dst_offset),
        );
        // Where each receive starts in the stream; the lines the buffers
        // cover (guards aside).
        let starts: Vec<u64> = layout
            .iter()
            .scan(0, |at, &(_, len)| {
                let s = *at;
                *at += len;
                Some(s)
            })
            .collect();
        let mut covered = d.lines(false);
        let first = covered.next().unwrap_or(0);
        let inner = first..covered.last().unwrap_or(first) + 1;
        for lv in d.lines(true) {
            let line = now_at(m, r, lv)?;
            lines_seen.push(line);
            let now = visible(m, r, line)?;
            let before = junk(r.0, lv);
            let dirty_before = matches!(
                c.receiver,
                ReceiverState::Dirty | ReceiverState::DirtyRemote
            ) && inner.contains(&lv);
            let mut right = true;
            for (j, &got) in now.iter().enumerate() {
                let v = lv + j as u64;
                // The receive holding `v`, if any (they are in address order).
                let k = layout.partition_point(|&(va, _)| va <= v);
                let want = k.checked_sub(1).and_then(|k| {
                    let (va, len) = layout[k];
                    (v < va + len).then(|| src_byte(s.0, starts[k] + (v - va)))
                });
                let want = want.unwrap_or(if dirty_before { !before[j] } else { before[j] });
                right &= got == want;
            }
            if !right {
                stale.push(StaleLine { node: r, va: lv });
            }
        }
        let sb = send_buffer(c, s);
        for lv in sb.lines(false) {
            lines_seen.push(now_at(m, s, lv)?);
        }
    }
    Ok((stale, lines_seen))
}

/// The OS of the buffer's node moves the page `after` cycles after `at`
/// to a frame of its own (a page nothing else uses).
fn schedule_change<S: WithTransfer>(
    m: &mut Magic<S>,
    c: &Config,
    at: Cycles,
) -> Result<(), String> {
    let Some(ch) = c.change else {
        return Ok(());
    };
    let (node, va) = match ch.side {
        Side::Send => (NodeId(0), SRC_VA + c.src_offset),
        Side::Receive => (NodeId(1), DST_VA + c.dst_offset),
    };
    let v = VPage(va / PAGE_BYTES + ch.page);
    let to = PAddr::new(Region::Normal, node, MOVED_FRAMES + ch.page * PAGE_BYTES);
    // The OS runs on the node's processor: a program of its own, after the
    // user's commands.
    let x = m.state_mut(node)?.xfer_mut();
    x.cpu.push([
        ConnOp::Think(ch.after),
        ConnOp::Change(os_shim::Change::Move(v, to)),
    ]);
    x.cpu.start(at);
    m.start_processor(node, at).map_err(String::from)
}

/// A refused command ends the experiment with MAGIC's reason.
fn refused<S: WithTransfer>(m: &Magic<S>) -> Result<(), String> {
    for x in m.states().iter().map(WithTransfer::xfer) {
        for e in &x.cpu.log {
            match e {
                // "Try again later": the program did.
                ConnEvent::Nack {
                    reason: super::msg::Refusal::NoRecord,
                    ..
                } => {}
                ConnEvent::Nack { op, reason, .. } => {
                    return Err(format!(
                        "MAGIC refused node {}'s {op:?} command: {reason:?}",
                        x.id
                    ))
                }
                ConnEvent::Fault { va, .. } => {
                    return Err(format!(
                        "node {}'s process has no mapping for its buffer at {va:#x}",
                        x.id
                    ))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn map<S: WithTransfer>(m: &mut Magic<S>, b: &Buffer, pid: Pid) -> Result<(), String> {
    let pages = (b.va % PAGE_BYTES + b.len.max(1)).div_ceil(PAGE_BYTES);
    for k in 0..pages {
        m.state_mut(b.node)?
            .xfer_mut()
            .os
            .map(
                pid,
                VPage(b.va / PAGE_BYTES + k),
                frame(b.home, b.base, k),
                Rights::RW,
            )
            .map_err(|e| format!("mapping the buffers: {e:?}"))?;
    }
    Ok(())
}

fn place_send<S: WithTransfer>(m: &mut Magic<S>, c: &Config, b: &Buffer) -> Result<(), String> {
    let n = b.node;
    for lv in b.lines(false) {
        let mut bytes = [0u8; LINE_BYTES];
        for (j, x) in bytes.iter_mut().enumerate() {
            *x = src_byte(n.0, (lv + j as u64).wrapping_sub(b.va));
        }
        let stale = junk(9, lv);
        let line = b.paddr(lv);
        match c.sender {
            SenderState::Uncached => protocol::place(m, line, &[], bytes, bytes)?,
            SenderState::Clean => protocol::place(m, line, &[(n, LineState::Clean)], bytes, bytes)?,
            SenderState::Dirty => protocol::place(m, line, &[(n, LineState::Dirty)], stale, bytes)?,
            SenderState::DirtyRemote => {
                protocol::place(m, line, &[(NodeId(2), LineState::Dirty)], stale, bytes)?
            }
        }
    }
    Ok(())
}

fn place_receive<S: WithTransfer>(m: &mut Magic<S>, c: &Config, b: &Buffer) -> Result<(), String> {
    let n = b.node;
    let inside: Vec<u64> = b.lines(false).collect();
    for lv in b.lines(true) {
        let mem = junk(n.0, lv);
        let mut cached = mem;
        let line = b.paddr(lv);
        // Guard lines stay in memory only.
        let state = if inside.contains(&lv) {
            c.receiver
        } else {
            ReceiverState::Uncached
        };
        match state {
            ReceiverState::Uncached => protocol::place(m, line, &[], mem, mem)?,
            ReceiverState::Clean => protocol::place(m, line, &[(n, LineState::Clean)], mem, mem)?,
            ReceiverState::Dirty | ReceiverState::DirtyRemote => {
                for x in cached.iter_mut() {
                    *x = !*x;
                }
                let at = if state == ReceiverState::Dirty {
                    n
                } else {
                    NodeId(2)
                };
                protocol::place(m, line, &[(at, LineState::Dirty)], mem, cached)?
            }
            ReceiverState::CleanRemote => {
                protocol::place(m, line, &[(NodeId(2), LineState::Clean)], mem, mem)?
            }
        }
    }
    Ok(())
}

/// Where a buffer's virtual address is now (the OS may have moved it).
fn now_at<S: WithTransfer>(m: &Magic<S>, node: NodeId, va: u64) -> Result<PAddr, NoNode> {
    Ok(m.state(node)?
        .xfer()
        .os
        .translate(Pid(1), va)
        .map_or(PAddr(0), |x| x.0))
}

/// A line's current bytes at its home: the dirty copy if a cache holds one.
fn current<S: WithTransfer>(m: &Magic<S>, line: PAddr) -> Result<[u8; LINE_BYTES], NoNode> {
    for n in 0..m.nodes() {
        let cache = m.pcache(NodeId(n))?;
        if cache.state(line) == LineState::Dirty {
            if let Some(b) = cache.bytes(line) {
                return Ok(*b);
            }
        }
    }
    Ok(m.memory(line.node())?.line(line.line()))
}

/// A line's bytes as a process on `node` reads them: its own cache's copy
/// if it holds one (clean or dirty), else the latest copy anywhere.
fn visible<S: WithTransfer>(
    m: &Magic<S>,
    node: NodeId,
    line: PAddr,
) -> Result<[u8; LINE_BYTES], NoNode> {
    let cache = m.pcache(node)?;
    match (cache.state(line), cache.bytes(line)) {
        (LineState::Clean | LineState::Dirty, Some(b)) => Ok(*b),
        _ => current(m, line),
    }
}

/// Directories, caches and memory agree on every line of `lines`.
fn check_coherent<S: WithTransfer>(m: &Magic<S>, lines: &[PAddr]) -> Option<String> {
    use coherence::directory::DirState;
    for &line in lines {
        let home = line.node();
        let (e, mem) = match (m.state(home), m.memory(home)) {
            (Ok(s), Ok(mem)) => (s.xfer().coh.entry(line), mem.line(line.line())),
            (Err(e), _) | (_, Err(e)) => return Some(format!("{line}'s home: {e}")),
        };
        if e.pending {
            return Some(format!("{line}: entry still pending"));
        }
        for (n, cache) in
            (0..m.nodes()).filter_map(|n| Some((NodeId(n), m.pcache(NodeId(n)).ok()?)))
        {
            let st = cache.state(line);
            let dir = e.state(home);
            let ok = match (&dir, st) {
                (_, LineState::Uncached) => true,
                (DirState::Exclusive(o), LineState::Dirty) => *o == n,
                (DirState::Shared(s), LineState::Clean) if s.contains(n) => {
                    if cache.bytes(line).is_some_and(|b| *b == mem) {
                        true
                    } else {
                        // States that agree, over bytes that do not.
                        return Some(format!(
                            "{line}: node {n}'s clean copy, which the directory lists, differs from memory"
                        ));
                    }
                }
                _ => false,
            };
            if !ok {
                let says = match &dir {
                    DirState::Uncached => "no copy".to_string(),
                    DirState::Shared(s) => {
                        let nodes: Vec<String> = s.iter().map(|x| x.0.to_string()).collect();
                        format!("clean copies at node(s) {}", nodes.join(", "))
                    }
                    DirState::Exclusive(o) => format!("a dirty copy at node {o}"),
                };
                let holds = match st {
                    LineState::Dirty => "a dirty copy",
                    _ => "a clean copy",
                };
                return Some(format!(
                    "{line}: node {n}'s cache holds {holds}, the directory lists {says}"
                ));
            }
        }
        if let DirState::Exclusive(o) = e.state(home) {
            if m.pcache(o)
                .map_or(true, |c| c.state(line) != LineState::Dirty)
            {
                return Some(format!(
                    "{line}: the directory's owner {o} has no dirty copy"
                ));
            }
        }
    }
    None
}

fn measure<S: WithTransfer>(
    c: &Config,
    m: Magic<S>,
    senders: &[NodeId],
) -> Result<Measured<S>, String> {
    let (s0, r0) = (NodeId(0), NodeId(1));
    let log = &m.state(s0)?.xfer().cpu.log;
    let t0 = log
        .iter()
        .find_map(|e| match e {
            ConnEvent::Issued {
                op: XferOp::Send,
                at,
            } => Some(*at),
            _ => None,
        })
        .ok_or("the send was never issued")?;
    let t1 = log
        .iter()
        .find_map(|e| match e {
            ConnEvent::Ack {
                op: XferOp::Send,
                at,
            } => Some(*at),
            _ => None,
        })
        .ok_or("the send was never accepted")?;
    let done = |n: NodeId| {
        m.state(n)
            .ok()?
            .xfer()
            .cpu
            .log
            .iter()
            .filter_map(|e| match e {
                ConnEvent::RecvDone { at, .. } => Some(*at),
                _ => None,
            })
            .max()
    };
    let t6 = done(r0).ok_or("the receiver was never told")?;
    let flushes = |n: NodeId| {
        let log = m.state(n).map_or(&[][..], |x| &x.xfer().cpu.log[..]);
        log.iter().filter_map(|e| match *e {
            ConnEvent::Flushed {
                va,
                from,
                at,
                written,
                ..
            } => Some((va, from, at, written)),
            _ => None,
        })
    };
    let (src_va, dst_va) = (SRC_VA + c.src_offset, DST_VA + c.dst_offset);
    // With flushes, the sender's comes first and the receiver's last.
    let start = flushes(s0)
        .filter(|f| f.0 == src_va)
        .map(|f| f.1)
        .fold(t0, Cycles::min);
    let end = senders
        .iter()
        .map(|s| NodeId(1 - s.0))
        .flat_map(|r| {
            let flushed = flushes(r).filter(|f| f.0 == dst_va).map(|f| f.2);
            done(r).into_iter().chain(flushed)
        })
        .max()
        .unwrap_or(t6);
    let mut flush = FlushTimes::default();
    let mut processor = Cycles(0);
    let mut coherence = CoherenceActions::default();
    for n in [s0, r0] {
        let x = m.state(n)?.xfer();
        processor += x.cpu.busy();
        for (va, from, at, written) in flushes(n) {
            if va == src_va {
                flush.send_cycles += (at - from).0;
            } else {
                flush.receive_cycles += (at - from).0;
            }
            flush.written_back += written;
        }
    }
    for x in m.states().iter().map(WithTransfer::xfer) {
        coherence.interventions += x.coh.stats.message_interventions;
        coherence.invalidations += x.coh.stats.message_invalidations;
        coherence.fetches += x.stats.fetches;
    }
    let marks = m.state(s0)?.xfer().stats.marks;
    let (Some(t2), Some(t3), Some(t4)) = (marks.first_line, marks.first_wire, marks.last_wire)
    else {
        return Err("the transfer handler never sent".into());
    };
    let t5 = m
        .state(r0)?
        .xfer()
        .stats
        .marks
        .last_component
        .ok_or("the last component was never handled")?;
    // The parts follow the instants in order; where two overlap (the first
    // line sent before its send's ACK reaches a processor behind a slow
    // interface, say), a part counts only the time after the one before it
    // ends, so the parts and the transfer still add up to the whole. With
    // FLASH's parameters the instants come in order and nothing is clipped.
    let t2 = t2.max(t1);
    let t3 = t3.max(t2);
    let t4 = t4.max(t3);
    let t5 = t5.max(t4);
    let t6 = t6.max(t5);
    // The run ends with the last instant, if a processor's answer (the
    // send's ACK behind a slow interface) comes after the receiver is told.
    let end = end.max(t6);
    let startup = Startup {
        initiation: (t1 - t0).0,
        setup_verification: (t2 - t1).0,
        initial_line: (t3 - t2).0,
        network_queueing: (t5 - t4).0,
        receiver_cleanup: (t6 - t5).0,
        total: (t1 - t0).0 + (t2 - t1).0 + (t3 - t2).0 + (t5 - t4).0 + (t6 - t5).0,
    };
    let lines = m.state(r0)?.xfer().stats.components_received;
    let transfer = t4 - t3;
    let ledger = m.ledger();
    // Busy and outbox-stall cycles of some handlers on a node.
    let busy = |n: NodeId, names: &[&str]| -> (u64, u64) {
        names
            .iter()
            .filter_map(|h| ledger.handler(Some(n.0), h))
            .fold((0, 0), |(b, s), r| {
                (b + r.stats.busy, s + r.stats.outbox_stall)
            })
    };
    let (sender_busy, sender_stall) = busy(s0, &["transfer.send_step", "transfer.fetched"]);
    let (receiver_busy, receiver_stall) = busy(r0, &["transfer.component", "transfer.retry"]);
    // The rate the data lands at in the receiver's memory (the pipeline's
    // slowest stage) is over the span from the first landing to the last.
    let rm = m.state(r0)?.xfer().stats.marks;
    let stages = StageCycles {
        sender_busy,
        sender_stall,
        receiver_busy,
        receiver_stall,
        network_busy: ledger
            .unit(Some(s0.0), magic::Unit::NetOut)
            .map_or(0, |u| u.busy),
        landing: match (rm.first_written, rm.last_component) {
            (Some(a), Some(b)) if lines > 1 => Some((b - a).0),
            _ => None,
        },
    };
    let per = stages.per_line(lines, c.direction, line_wire(&c.params));
    // The stream that ended last: its sender's link, its receiver's end.
    let last = |n: NodeId| done(n).unwrap_or(Cycles(0));
    let (ender, its_sender) = if senders.contains(&r0) && last(s0) > last(r0) {
        (s0, r0)
    } else {
        (r0, s0)
    };
    let held_back = m
        .state(its_sender)?
        .xfer()
        .stats
        .held_sending
        .plus(m.state(ender)?.xfer().stats.held_ending);
    let (stale, lines_seen) = data_check(c, &m, senders)?;
    let incoherent = check_coherent(&m, &lines_seen);
    let outcome = Outcome {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: c.clone(),
        total: end - start,
        startup,
        lines,
        transfer,
        stages,
        per_line: per.rate,
        sender_occupancy_per_line: per.sender_occupancy,
        receiver_occupancy_per_line: per.receiver_occupancy,
        sender_handler_per_line: per.sender_handler,
        receiver_handler_per_line: per.receiver_handler,
        network_per_line: per.network,
        limited_by: per.limited_by,
        held_back,
        data_ok: stale.is_empty(),
        stale,
        coherence,
        processor,
        flush,
        incoherent,
        ledger,
    };
    Ok(Measured {
        outcome,
        machine: m,
    })
}
