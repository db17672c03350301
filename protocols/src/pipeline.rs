//! The `pipeline` scenario: every node sends `msgs` messages of 32 line-sized
//! packets, all posted at cycle 0, through three handlers of fixed cost.
//!
//! - `setup` (20 cycles; the first from the processor interface, which posts
//!   the whole batch at cycle 0, the others from the software queue): picks the
//!   destination and puts the message's first packet on the software queue;
//! - `send` (software queue, 12 cycles): sends one packet, then reschedules
//!   itself for the next;
//! - `recv` (network request lane, 10 cycles, 16 more for the last packet of a
//!   message, when the message is complete), dispatched once the whole packet
//!   is in (the workload's definition of arrival: 40 cycles on the wire, then
//!   22 of latency).
//!
//! The machine is MAGIC with its default parameters: a full-line packet holds
//! the link 40 cycles, arrives 22 cycles later, and the outbox has two slots
//! behind the wire. The last send of a message queues the next setup, so a
//! node finishes one message before it sets up the next; the inbox serves
//! received packets before the software queue.

use magic::ledger::{ExactHandlerRow, ExactUnitRow};
use magic::{
    Cx, Cycles, Dispatch, Install, Ledger, Magic, MagicParams, Msg, NodeId, NodeState, OutOfRange,
    Protocol, Region, RunReport,
};
use serde::{Deserialize, Serialize};

/// Most messages a run may post (about 120 bytes of model state each).
pub const MAX_MESSAGES: u64 = 4_000_000;

/// Packets per message (4 KB as 128-byte lines).
pub const PACKETS: u64 = 32;
/// The three handlers' fixed costs (the workload's definition: setup 20,
/// send 12, receive 10 plus 16 for a message's last packet), kept as
/// parameters so a protocol author can try others: `setup`, `send` and
/// `recv` from 1 (a handler holds MAGIC's PP at least one cycle, so 0
/// would run as 1), `done` from 0, each to
/// [`MAX_COST`](magic::costs::MAX_COST) cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineCosts {
    /// Setting up a message.
    pub setup: Cycles,
    /// Sending one packet.
    pub send: Cycles,
    /// Taking one packet.
    pub recv: Cycles,
    /// Completing a message, on top of taking its last packet.
    pub done: Cycles,
}

impl PipelineCosts {
    /// Each cost is in its range (see [`PipelineCosts`]); the error names
    /// the first that is not.
    ///
    /// ```
    /// use magic::Cycles;
    /// use protocols::pipeline::PipelineCosts;
    /// let zero = PipelineCosts { send: Cycles(0), ..PipelineCosts::default() };
    /// assert_eq!(zero.validate().unwrap_err().field, "send");
    /// let done = PipelineCosts { done: Cycles(0), ..PipelineCosts::default() };
    /// assert!(done.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), OutOfRange> {
        for (field, c, least) in [
            ("setup", self.setup, 1),
            ("send", self.send, 1),
            ("recv", self.recv, 1),
            ("done", self.done, 0),
        ] {
            OutOfRange::check(field, c.0, least, magic::costs::MAX_COST)?;
        }
        Ok(())
    }
}

impl Default for PipelineCosts {
    fn default() -> Self {
        PipelineCosts {
            setup: Cycles(20),
            send: Cycles(12),
            recv: Cycles(10),
            done: Cycles(16),
        }
    }
}

magic::messages! {
    /// The scenario's messages.
    pub enum PipeMsg: PipeKind {
        /// The processor posts its batch: set up the first message.
        Post,
        /// A message's last packet is out: set up the next (software queue).
        SetupNext,
        /// Send packet `k` of a message to `dst`, set up at cycle `start`
        /// (software queue).
        Next {
            /// The message's destination node.
            dst: NodeId,
            /// The packet's number within its message (from 0).
            k: u64,
            /// The cycle the message was set up (10 ns system cycles).
            start: Cycles,
        },
        /// Packet `k` of a message set up at cycle `start` (32 bytes of
        /// header and a line of payload on the request lane).
        Packet {
            /// The packet's number within its message (from 0).
            k: u64,
            /// The cycle its message was set up at the sender (10 ns system
            /// cycles).
            start: Cycles,
        },
    }
}

/// How a node picks the destination of its j-th message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// (i + 1) mod N
    Ring,
    /// (i + 1 + j mod (N - 1)) mod N
    Shift,
    /// (i + 1 + (x >> 33) mod (N - 1)) mod N, x a per-node 64-bit LCG
    Rand,
}

/// A run of the scenario: the whole of what it varies (the machine is
/// [`pipeline_params`]'s), as every [`PipelineRun`] carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Nodes in the machine (2 to FLASH's 4096,
    /// [`Machines::max_nodes`](crate::am::Machines::max_nodes)).
    pub nodes: u32,
    /// Messages each node sends.
    pub msgs: u32,
    /// How each node picks its messages' destinations.
    pub pattern: Pattern,
    /// The handlers' costs.
    pub costs: PipelineCosts,
    /// The run's cycle budget (a scenario's `[machine] budget`; 1 to
    /// [`magic::params::MAX_BUDGET`]; this type reads a configuration
    /// that leaves it out as [`magic::params::DEFAULT_BUDGET`], where
    /// `flashkit run` of a saved result refuses one that leaves out any
    /// key): a run that needs more stops, not clean, and has no result.
    #[serde(default = "default_budget")]
    pub budget: Cycles,
}

fn default_budget() -> Cycles {
    magic::params::DEFAULT_BUDGET
}

impl PipelineConfig {
    /// The configuration, or what is out of range in it.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        let most = crate::am::Machines::Flash.max_nodes();
        OutOfRange::check("nodes", self.nodes, 2, most)?;
        OutOfRange::check("budget", self.budget, Cycles(1), magic::params::MAX_BUDGET)?;
        if self.msgs == 0 {
            return Err(OutOfRange::new("msgs", "at least 1", 0));
        }
        // Every message is posted up front; keep that within memory.
        let total = self.nodes as u64 * self.msgs as u64;
        if total > MAX_MESSAGES {
            let allowed = format!("at most {MAX_MESSAGES} in all (nodes x msgs = {total})");
            return Err(OutOfRange::new("msgs", allowed, self.msgs));
        }
        self.costs.validate()
    }
}

/// A node's part of the scenario: its own messages and what it received,
/// in one cache line (a handler touches its node's state on every
/// dispatch, and on a machine of thousands of nodes each is a miss to
/// hide). The handlers' costs, the same on every node, are the handlers'
/// own (see [`Pipeline::install`]).
#[derive(Debug)]
#[repr(align(64))]
pub struct PipeNode {
    pattern: Pattern,
    lcg: u64,
    next_msg: u32,
    posted: u32,
    completed: u64,
    sum_completion: u64,
    sum_latency: u64,
    last: Cycles,
}

const _: () = assert!(size_of::<PipeNode>() == 64);

impl NodeState for PipeNode {
    fn pending(&self) -> Option<String> {
        (self.next_msg < self.posted).then(|| {
            format!(
                "{} of its messages never set up",
                self.posted - self.next_msg
            )
        })
    }
}

impl PipeNode {
    /// The destination of message `j` of node `i` of `n` (a machine of one
    /// node, which only a protocol author builds, sends to itself).
    fn dest(&mut self, i: u32, n: u32, j: u32) -> u32 {
        let others = (n - 1).max(1);
        match self.pattern {
            Pattern::Ring => (i + 1) % n,
            Pattern::Shift => (i + 1 + j % others) % n,
            Pattern::Rand => {
                self.lcg = self
                    .lcg
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (i + 1 + ((self.lcg >> 33) % others as u64) as u32) % n
            }
        }
    }
}

/// Pick the next message's destination and put its first packet on the
/// software queue: for the processor's post and for the software queue's
/// set-up of the next message alike.
fn setup(cx: &mut Cx<'_, PipeNode>, c: &PipelineCosts) {
    let start = cx.now();
    let (i, n) = (cx.node().0, cx.nodes());
    let s = cx.state();
    let j = s.next_msg;
    s.next_msg += 1;
    let dst = NodeId(s.dest(i, n, j));
    cx.busy(c.setup);
    let first = cx.msg(PipeMsg::Next { dst, k: 0, start });
    // The queue holds one entry per node at most here; it cannot be full.
    let _ = cx.reschedule(first);
}

/// Send one packet, then continue with the next (or set up the next message).
fn send(cx: &mut Cx<'_, PipeNode>, c: &PipelineCosts, msg: pipe_msg::Next) {
    let pipe_msg::Next { dst, k, start } = msg;
    cx.busy(c.send);
    let pkt = cx.msg(PipeMsg::Packet { k, start }).to(dst).len(128);
    let _ = cx.send(pkt, None);
    if k < PACKETS - 1 {
        let next = cx.msg(PipeMsg::Next {
            dst,
            k: k + 1,
            start,
        });
        let _ = cx.reschedule(next);
    } else if cx.state().next_msg < cx.state().posted {
        // The message is out: set up the next one.
        let next = cx.msg(PipeMsg::SetupNext);
        let _ = cx.reschedule(next);
    }
}

/// Take a packet; the last of a message completes it.
fn recv(cx: &mut Cx<'_, PipeNode>, c: &PipelineCosts, msg: pipe_msg::Packet) {
    let pipe_msg::Packet { k, start } = msg;
    cx.busy(c.recv);
    if k == PACKETS - 1 {
        cx.busy(c.done);
        let t = cx.now();
        let s = cx.state();
        s.completed += 1;
        s.sum_completion += t.0;
        // A message set up later than now is none this workload sends.
        s.sum_latency += t.0.saturating_sub(start.0);
        s.last = s.last.max(t);
    }
}

/// The scenario as a protocol unit: its three handlers, and each node's
/// part of the configured workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// The workload.
    pub config: PipelineConfig,
}

impl Protocol for Pipeline {
    type Node = PipeNode;

    fn name(&self) -> &'static str {
        "pipeline"
    }

    fn node(&self, n: NodeId, _nodes: u32) -> PipeNode {
        let cfg = &self.config;
        PipeNode {
            pattern: cfg.pattern,
            lcg: (n.0 as u64)
                .wrapping_mul(0x9E3779B97F4A7C15)
                .wrapping_add(1),
            next_msg: 0,
            posted: cfg.msgs,
            completed: 0,
            sum_completion: 0,
            sum_latency: 0,
            last: Cycles(0),
        }
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, PipeNode>) {
        // Each handler holds the costs, which every node shares.
        let c = self.config.costs;
        // `setup` takes two kinds (the post and the next message's set-up).
        let h_setup = b.handler_of_all("setup", move |cx, _: &Msg, _: PipeMsg| setup(cx, &c));
        let h_send = b.handler("send", move |cx, _: &Msg, m| send(cx, &c, m));
        let h_recv = b.handler("recv", move |cx, _: &Msg, m| recv(cx, &c, m));
        b.route_kind(PipeKind::Post, Region::Normal, h_setup)
            .route_kind(PipeKind::SetupNext, Region::Normal, h_setup)
            .route(Region::Normal, h_send)
            // The workload counts a packet as arrived when its last byte is in.
            .route_with(
                Region::Normal,
                h_recv,
                Dispatch {
                    whole_packet: true,
                    ..Dispatch::default()
                },
            );
    }
}

/// The simulated results the peers agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineResult {
    /// Cycle at which the last message completed.
    pub completion: u64,
    /// Sum over messages of their completion cycles.
    pub sum_completion: u64,
    /// Sum over messages of completion minus setup start.
    pub sum_latency: u64,
    /// Model events (handler runs, link transmissions, network deliveries).
    pub events: u64,
}

/// The peers' machine: FLASH's parameters without the inbox and outbox stage
/// latencies, which the workload's definition leaves out (a packet is
/// dispatched when it has arrived, and goes on the wire when sent).
pub fn pipeline_params() -> MagicParams {
    MagicParams {
        inbox_dispatch: Cycles(0),
        outbox_latency: Cycles(0),
        inbound_contention: false,
        ..MagicParams::default()
    }
}

/// The machine with the scenario's handlers installed and every message posted.
pub fn build(cfg: &PipelineConfig) -> Result<Magic<PipeNode>, crate::Error> {
    cfg.validate()?;
    let params = MagicParams {
        budget: cfg.budget,
        ..pipeline_params()
    };
    let mut m = Magic::with(params, cfg.nodes, &Pipeline { config: *cfg })?;
    // The processor posts the whole batch at cycle 0; each message's last
    // send sets up the next through the software queue.
    for n in 0..cfg.nodes {
        let post = m.msg(NodeId(n), PipeMsg::Post);
        m.post(NodeId(n), Cycles(0), post)?;
    }
    Ok(m)
}

/// Sum the nodes' records into the result.
pub fn result(m: &Magic<PipeNode>) -> PipelineResult {
    let s = m.states();
    PipelineResult {
        completion: s.iter().map(|n| n.last.0).max().unwrap_or(0),
        sum_completion: s.iter().map(|n| n.sum_completion).sum(),
        sum_latency: s.iter().map(|n| n.sum_latency).sum(),
        events: m.model_events(),
    }
}

/// Messages completed so far (all nodes).
pub fn completed(m: &Magic<PipeNode>) -> u64 {
    m.states().iter().map(|n| n.completed).sum()
}

/// A whole run of the scenario, summarized: plain data (`Send`, `Clone`,
/// `Debug`, `PartialEq`) that carries what made it (its
/// [`PipelineConfig`] and the kit's version), so `run(&r.config)` gives it
/// again, equal; the machine left behind.
///
/// Its `Serialize` is the JSON `flashkit pipeline --format json` prints
/// (beside the event loop's wall-clock time, `wall_s`, which is no part of
/// it): the configuration and version, the peers' figures at the top
/// level, how the run ended, and the ledger's counters with their figures
/// exact; `Deserialize` reads that back to an equal value, refusing a
/// figure its counts do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineRun {
    /// The version of the kit that ran it (`protocols`' package version).
    pub version: String,
    /// The workload.
    pub config: PipelineConfig,
    /// The figures the peers agree on.
    pub result: PipelineResult,
    /// The occupancy ledger of the whole run.
    pub ledger: Ledger,
    /// The last cycle at which anything happened.
    pub end: Cycles,
    /// True if the run stopped at its cycle limit with events pending.
    pub limit_reached: bool,
    /// Why the run stopped early, if it did ([`magic::Halt`] in words: its
    /// cycle budget, time passing its end, a livelock, its event limit or
    /// a full trace); its figures are then no result.
    pub halted: Option<String>,
    /// Work left when the run stopped: one line per stuck item.
    pub stuck: Vec<String>,
    /// What MAGIC refused or dropped: one line per node and cause, naming
    /// the first ([`magic::RunReport::refused`]).
    pub refused: Vec<String>,
}

/// The JSON of a [`PipelineRun`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: String,
    config: PipelineConfig,
    completion: u64,
    sum_completion: u64,
    sum_latency: u64,
    events: u64,
    end_cycles: u64,
    limit_reached: bool,
    halted: Option<String>,
    stuck: Vec<String>,
    refused: Vec<String>,
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

/// The JSON `flashkit pipeline --format json` prints, `wall_s` apart.
impl Serialize for PipelineRun {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        Wire {
            version: self.version.clone(),
            config: self.config,
            completion: self.result.completion,
            sum_completion: self.result.sum_completion,
            sum_latency: self.result.sum_latency,
            events: self.result.events,
            end_cycles: self.end.0,
            limit_reached: self.limit_reached,
            halted: self.halted.clone(),
            stuck: self.stuck.clone(),
            refused: self.refused.clone(),
            occupancy_cycles: self.ledger.elapsed.0,
            occupancy_booked_cycles: self.ledger.booked.0,
            occupancy: self.ledger.exact_handlers(),
            units: self.ledger.exact_units(),
        }
        .serialize(s)
    }
}

/// Reads a run's JSON back: the ledger's figures are computed from its
/// counters again, and one they do not give is refused, naming it.
impl<'de> Deserialize<'de> for PipelineRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let w = Wire::deserialize(d)?;
        // The configuration first: the ledger's rows are read against
        // its nodes.
        let at = |prefix: &str, e: OutOfRange| D::Error::custom(format!("{prefix}{e}"));
        w.config
            .costs
            .validate()
            .map_err(|e| at("config.costs.", e))?;
        w.config.validate().map_err(|e| at("config.", e))?;
        // The run stops at its budget: its end and the ledger's span lie
        // within it, as a transfer's and a miss's do.
        let params = MagicParams {
            budget: w.config.budget,
            ..pipeline_params()
        };
        for (k, x) in [
            ("end_cycles", w.end_cycles),
            ("occupancy_cycles", w.occupancy_cycles),
        ] {
            params.within_budget(k, x).map_err(D::Error::custom)?;
        }
        if w.completion > w.end_cycles {
            return Err(D::Error::custom(format!(
                "completion is cycle {}, after the run's end at cycle {}",
                w.completion, w.end_cycles
            )));
        }
        // The peers' figures as a run gives them: every message completes
        // by the last completion and after its own set-up, so the sums
        // lie within what the messages could add to; a clean run
        // completed every message, in its workload's events.
        let messages = w.config.nodes as u64 * w.config.msgs as u64;
        let refuse = |what: String| Err(D::Error::custom(what));
        if w.sum_latency > w.sum_completion {
            return refuse(format!(
                "sum_latency is {}, more than the {} sum_completion (a latency ends at its \
                 message's completion)",
                w.sum_latency, w.sum_completion
            ));
        }
        if w.sum_completion > messages.saturating_mul(w.completion) {
            return refuse(format!(
                "sum_completion is {}, more than {messages} messages completing by cycle {} give",
                w.sum_completion, w.completion
            ));
        }
        let clean =
            !w.limit_reached && w.halted.is_none() && w.stuck.is_empty() && w.refused.is_empty();
        let events = messages.saturating_mul(1 + 4 * PACKETS);
        if clean && w.events != events {
            return refuse(format!(
                "events is {}, where a clean run of {messages} messages counts {events}",
                w.events
            ));
        }
        if clean && w.sum_completion < messages {
            return refuse(format!(
                "sum_completion is {}, less than a clean run's {messages} messages, each \
                 completing at cycle 1 or later, give",
                w.sum_completion
            ));
        }
        let ledger = Ledger::from_exact(
            Cycles(w.occupancy_cycles),
            Cycles(w.occupancy_booked_cycles),
            w.config.nodes,
            w.occupancy,
            w.units,
        )
        .map_err(D::Error::custom)?;
        Ok(PipelineRun {
            version: w.version,
            config: w.config,
            result: PipelineResult {
                completion: w.completion,
                sum_completion: w.sum_completion,
                sum_latency: w.sum_latency,
                events: w.events,
            },
            ledger,
            end: Cycles(w.end_cycles),
            limit_reached: w.limit_reached,
            halted: w.halted,
            stuck: w.stuck,
            refused: w.refused,
        })
    }
}

impl PipelineRun {
    /// True if the run did all its work and lost nothing, as
    /// [`magic::RunReport::is_clean`]: no limit or halt, nothing stuck,
    /// nothing refused.
    pub fn is_clean(&self) -> bool {
        !self.limit_reached
            && self.halted.is_none()
            && self.stuck.is_empty()
            && self.refused.is_empty()
    }

    /// Every reason the run is not clean, one line each (none if it is),
    /// as [`magic::RunReport::problems`].
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self.halted.iter().cloned().collect();
        if self.limit_reached {
            out.push(format!(
                "the run stopped at its limit, cycle {}, with events pending",
                self.end
            ));
        }
        out.extend(self.refused.iter().cloned());
        out.extend(self.stuck.iter().cloned());
        out
    }
}

/// Build, run and summarize in one call.
pub fn run(cfg: &PipelineConfig) -> Result<PipelineRun, crate::Error> {
    let mut m = build(cfg)?;
    let report = m.run();
    Ok(summary(cfg, &m, report))
}

/// The run of `cfg` on machine `m`, which ran it ([`build`], then
/// `Magic::run`, which returned `report`): the one place a [`PipelineRun`]
/// is made from a machine.
pub fn summary(cfg: &PipelineConfig, m: &Magic<PipeNode>, report: RunReport) -> PipelineRun {
    PipelineRun {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: *cfg,
        result: result(m),
        ledger: m.ledger(),
        end: report.end,
        limit_reached: report.limit_reached,
        halted: report.halted.map(|h| h.to_string()),
        stuck: report.stuck,
        refused: report.refused,
    }
}
