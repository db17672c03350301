//! Scenario files: one experiment described in TOML, the machine's
//! parameters beside it. `flashkit run FILE` runs one; `flashkit sweep`
//! varies its keys. A command's built-in defaults are a scenario's defaults,
//! so `examples/transfer.toml` (say) is what `flashkit transfer` runs.
//!
//! ```toml
//! [machine]            # any of these; the rest keep FLASH's values
//! data_buffers = 16
//! net_latency = 22
//!
//! [transfer]           # the experiment: exactly one table of a kind
//! bytes = 4096
//! sender = "dirty"
//! handler = "chunked"
//! chunk = 8
//! ```

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

fn d_bytes() -> u64 {
    4096
}
fn d_chunk() -> u32 {
    4
}
fn d_one() -> u32 {
    1
}
fn d_true() -> bool {
    true
}

/// A transfer experiment (`flashkit transfer`'s flags).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    /// Bytes sent (default 4096).
    #[serde(default = "d_bytes")]
    pub bytes: u64,
    /// Where the send buffer is (default uncached).
    #[serde(default)]
    pub sender: Sender,
    /// Where the receive buffer is (default uncached).
    #[serde(default)]
    pub receiver: Receiver,
    /// The transfer handler (default chunked).
    #[serde(default)]
    pub handler: HandlerKind,
    /// Lines per invocation of the chunked handler (default 4; only with `handler = "chunked"`).
    #[serde(default = "d_chunk")]
    pub chunk: u32,
    /// The send buffer's offset from a page boundary, in bytes (default 0).
    #[serde(default)]
    pub src_offset: u64,
    /// The receive buffer's offset from a page boundary, in bytes (default 0).
    #[serde(default)]
    pub dst_offset: u64,
    /// How message data is kept coherent (default local).
    #[serde(default)]
    pub coherence: CoherenceKind,
    /// The user programs flush message data through their caches around
    /// the transfer (default false; what `coherence = "none"` needs).
    #[serde(default)]
    pub flush: bool,
    /// How dirty send lines are fetched (default pipelined; `collect`
    /// under global coherence alone).
    #[serde(default)]
    pub strategy: StrategyKind,
    /// Where the buffers are homed (default at the transferring nodes;
    /// `third`: both at node 2, under `none` or `global` coherence).
    #[serde(default)]
    pub placement: Placement,
    /// One way or both at once (default uni).
    #[serde(default)]
    pub direction: DirectionKind,
    /// Receives the stream is split over (default 1; 1 to 4096).
    #[serde(default = "d_one")]
    pub receives: u32,
    /// Sends the stream is split over (default 1; 1 to 4096).
    #[serde(default = "d_one")]
    pub sends: u32,
    /// The receive is posted before the send (default true; false: late).
    #[serde(default = "d_true")]
    pub receive_first: bool,
}

impl Default for Transfer {
    fn default() -> Self {
        Transfer {
            bytes: d_bytes(),
            sender: Sender::default(),
            receiver: Receiver::default(),
            handler: HandlerKind::default(),
            chunk: d_chunk(),
            src_offset: 0,
            dst_offset: 0,
            coherence: CoherenceKind::default(),
            flush: false,
            strategy: StrategyKind::default(),
            placement: Placement::default(),
            direction: DirectionKind::default(),
            receives: d_one(),
            sends: d_one(),
            receive_first: d_true(),
        }
    }
}

macro_rules! kinds {
    ($(#[$m:meta])* $name:ident { $(#[$dm:meta])* $d:ident (default) $(, $(#[$vm:meta])* $v:ident)+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        #[serde(rename_all = "kebab-case")]
        pub enum $name {
            $(#[$dm])*
            #[default]
            $d,
            $($(#[$vm])* $v),+
        }

        impl $name {
            /// Every value, the default first.
            pub const ALL: &'static [$name] = &[$name::$d, $($name::$v),+];

            /// The value as a scenario file and the command line spell it.
            pub fn name(self) -> String {
                serde_json::to_value(self)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            }
        }
    };
}

kinds!(
    /// Where the send buffer's lines are before the transfer.
    Sender {
        /// In memory only.
        Uncached (default),
        /// Clean in the sending processor's cache.
        Clean,
        /// Dirty in the sending processor's cache.
        Dirty,
        /// Dirty in a third node's cache.
        DirtyRemote,
    }
);
kinds!(
    /// Where the receive buffer's lines are before the transfer.
    Receiver {
        /// In memory only.
        Uncached (default),
        /// Clean in the receiving processor's cache.
        Clean,
        /// Dirty in the receiving processor's cache.
        Dirty,
        /// Clean in a third node's cache (a remote sharer; global coherence).
        CleanRemote,
        /// Dirty in a third node's cache (a remote owner; global coherence).
        DirtyRemote,
    }
);
kinds!(
    /// The transfer handler's version.
    HandlerKind {
        /// Optimized and sending `chunk` lines per invocation.
        Chunked (default),
        /// The straightforward handler.
        Base,
        /// The optimized handler, one line per invocation.
        Optimized,
    }
);
kinds!(
    /// How message data is kept coherent.
    CoherenceKind {
        /// Only the transferring nodes' own caches (buffers homed there).
        Local (default),
        /// None: memory moves as it is (flush the caches, or read stale bytes).
        None,
        /// Through the directory protocol, wherever the lines are homed.
        Global,
    }
);
kinds!(
    /// How the sender fetches dirty lines from its processor's cache.
    StrategyKind {
        /// Fetch each dirty line a window ahead of the transfer.
        Pipelined (default),
        /// Fetch every dirty line first (requests pipelined), then transfer.
        Collect,
    }
);
kinds!(
    /// One transfer, or one each way at once.
    DirectionKind {
        /// Node 0 to node 1.
        Uni (default),
        /// Both nodes send to each other at once.
        Bi,
    }
);

impl Transfer {
    /// What the experiment cannot run: a chunk factor for a handler that
    /// does not chunk, and whatever the transfer itself refuses.
    pub fn validate(
        &self,
        params: magic::MagicParams,
    ) -> Result<(), protocols::transfer::ConfigError> {
        if self.handler != HandlerKind::Chunked && self.chunk != d_chunk() {
            let allowed = format!("left at {} unless the handler is chunked", d_chunk());
            return Err(magic::OutOfRange::new("chunk", allowed, self.chunk).into());
        }
        self.config(params).validate()
    }

    /// The transfer's configuration on scenario `s`'s machine, with its
    /// cost sheets; `trace` records the run's timelines.
    pub fn config_in(&self, s: &Scenario, trace: bool) -> protocols::transfer::Config {
        let mut params = s.machine.clone();
        params.trace = trace;
        protocols::transfer::Config {
            trace,
            costs: s.costs.transfer,
            command_costs: s.costs.command,
            coherence: s.coherence.params(s.costs.coherence),
            flush_costs: s.costs.flush,
            ..self.config(params)
        }
    }

    /// The transfer's configuration on a machine with `params`.
    pub fn config(&self, params: magic::MagicParams) -> protocols::transfer::Config {
        use protocols::transfer::{
            Config, Direction, ReceiverState, SenderState, Strategy, Version,
        };
        Config {
            bytes: self.bytes,
            sender: match self.sender {
                Sender::Uncached => SenderState::Uncached,
                Sender::Clean => SenderState::Clean,
                Sender::Dirty => SenderState::Dirty,
                Sender::DirtyRemote => SenderState::DirtyRemote,
            },
            receiver: match self.receiver {
                Receiver::Uncached => ReceiverState::Uncached,
                Receiver::Clean => ReceiverState::Clean,
                Receiver::Dirty => ReceiverState::Dirty,
                Receiver::CleanRemote => ReceiverState::CleanRemote,
                Receiver::DirtyRemote => ReceiverState::DirtyRemote,
            },
            handler: match self.handler {
                HandlerKind::Base => Version::Base,
                HandlerKind::Optimized => Version::Optimized,
                HandlerKind::Chunked => Version::Chunked(self.chunk),
            },
            src_offset: self.src_offset,
            dst_offset: self.dst_offset,
            mode: match self.coherence {
                CoherenceKind::Local => protocols::transfer::Mode::Local,
                CoherenceKind::None => protocols::transfer::Mode::None,
                CoherenceKind::Global => protocols::transfer::Mode::Global,
            },
            strategy: match self.strategy {
                StrategyKind::Pipelined => Strategy::Pipelined,
                StrategyKind::Collect => Strategy::Collect,
            },
            placement: match self.placement {
                Placement::Home => protocols::transfer::Placement::Home,
                Placement::Third => protocols::transfer::Placement::Third,
            },
            direction: match self.direction {
                DirectionKind::Uni => Direction::Uni,
                DirectionKind::Bi => Direction::Bi,
            },
            receives: self.receives,
            sends: self.sends,
            flush: self.flush,
            receive_first: self.receive_first,
            change: None,
            trace: false,
            params,
            costs: Default::default(),
            command_costs: Default::default(),
            coherence: Default::default(),
            flush_costs: Default::default(),
            inject: None,
        }
    }
}

kinds!(
    /// Which read miss (`flashkit miss`).
    MissCase {
        /// Homed at another node, in no cache.
        RemoteClean (default),
        /// Homed at the requester, in no cache.
        LocalClean,
        /// Homed at another node, dirty in a third node's cache.
        RemoteDirty,
    }
);
kinds!(
    /// A messaging protocol of the cost study (`flashkit costs`).
    CostProtocol {
        /// A single-packet message.
        Single (default),
        /// A finite sequence of packets, its length known up front.
        Finite,
        /// An indefinite sequence (a stream).
        Indefinite,
    }
);
kinds!(
    /// The network the cost study assumes.
    CostNetwork {
        /// The CM-5's: unordered, may refuse packets, no delivery guarantee.
        Cm5 (default),
        /// Ordered, reliable and deadlock-free.
        Ordered,
    }
);
kinds!(
    /// A platform of the active-message suite.
    PlatformKind {
        /// The CM-5 with CMAM.
        Cm5 (default),
        /// The CM-5 with CMAML (interrupts possible).
        Cm5Cmaml,
        /// The IBM SP with its active-message layer.
        Sp,
        /// FLASH, active messages as MAGIC handlers.
        Flash,
    }
);
kinds!(
    /// Who sends to whom in the pipeline workload.
    PatternKind {
        /// Node i to node i+1.
        Ring (default),
        /// Message j of node i to node i+1+(j mod (nodes-1)): every other node in turn.
        Shift,
        /// A seeded pseudo-random other node per message.
        Rand,
    }
);
kinds!(
    /// How MAGIC keeps its translations right when a page moves.
    TechniqueKind {
        /// Uses of a moved page are marked stale and translated again.
        Invalidate (default),
        /// The OS waits until operations that hold it off drain.
        Holdoff,
        /// MAGIC translates through its software TLB.
        Tlb,
    }
);

impl TechniqueKind {
    /// The technique the user layer runs.
    pub fn technique(self) -> protocols::user::experiments::Technique {
        use protocols::user::experiments::Technique;
        match self {
            TechniqueKind::Holdoff => Technique::Holdoff,
            TechniqueKind::Invalidate => Technique::Invalidate,
            TechniqueKind::Tlb => Technique::Tlb,
        }
    }
}

kinds!(
    /// A coherence mode as the study compares them: `none` with or without
    /// the user programs' flushes.
    StudyMode {
        /// Local coherence.
        Local (default),
        /// No coherence; the caches are not flushed.
        None,
        /// No coherence; the user programs flush the buffers around the transfer.
        NoneFlush,
        /// Global coherence.
        Global,
    }
);
kinds!(
    /// Where the buffers' memory is homed.
    Placement {
        /// At the transferring nodes: the send buffer at the sender, the
        /// receive buffer at the receiver.
        Home (default),
        /// Both at a third node, node 2 (a send buffer "dirty-remote" is
        /// then dirty in that node's own cache).
        Third,
    }
);

impl StudyMode {
    /// The transfer's coherence for this mode.
    pub fn coherence(self) -> CoherenceKind {
        match self {
            StudyMode::Local => CoherenceKind::Local,
            StudyMode::None | StudyMode::NoneFlush => CoherenceKind::None,
            StudyMode::Global => CoherenceKind::Global,
        }
    }

    /// The user programs flush around the transfer.
    pub fn flush(self) -> bool {
        self == StudyMode::NoneFlush
    }
}

/// One point of the coherence-mode study (`[study]`; `flashkit study
/// coherence` runs them all): a transfer with the chunked handler and the
/// buffers aligned, under one mode, buffer states and placement.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StudyPoint {
    /// The coherence mode (default local).
    #[serde(default)]
    pub mode: StudyMode,
    /// Where the send buffer's lines are (default uncached).
    #[serde(default)]
    pub sender: Sender,
    /// Where the receive buffer's lines are (default uncached).
    #[serde(default)]
    pub receiver: Receiver,
    /// Where the buffers are homed (default at the transferring nodes).
    #[serde(default)]
    pub placement: Placement,
    /// Bytes sent (default 4096).
    #[serde(default = "d_bytes")]
    pub bytes: u64,
}

impl Default for StudyPoint {
    fn default() -> Self {
        StudyPoint {
            mode: StudyMode::default(),
            sender: Sender::default(),
            receiver: Receiver::default(),
            placement: Placement::default(),
            bytes: d_bytes(),
        }
    }
}

impl StudyPoint {
    /// The transfer this point runs.
    pub fn transfer(&self) -> Transfer {
        Transfer {
            bytes: self.bytes,
            sender: self.sender,
            receiver: self.receiver,
            coherence: self.mode.coherence(),
            flush: self.mode.flush(),
            placement: self.placement,
            ..Transfer::default()
        }
    }

    /// The transfer this point runs on `base`'s machine, with its cost
    /// sheets, coherence options and tracing: `base` with the point's
    /// fields set (what [`Transfer::config_in`] gives on a scenario whose
    /// machine and sheets `base` holds).
    pub fn config_on(&self, base: &protocols::transfer::Config) -> protocols::transfer::Config {
        protocols::transfer::Config {
            trace: base.trace,
            costs: base.costs,
            command_costs: base.command_costs,
            coherence: base.coherence,
            flush_costs: base.flush_costs,
            ..self.transfer().config(base.params.clone())
        }
    }

    /// Why the mode cannot serve this point, if it cannot; `Err` for a
    /// value no mode takes (the field named).
    pub fn refusal(
        &self,
        params: magic::MagicParams,
    ) -> Result<Option<String>, protocols::transfer::ConfigError> {
        use protocols::transfer::ConfigError;
        match self.transfer().validate(params) {
            Ok(()) => Ok(None),
            Err(e @ (ConfigError::Needs { .. } | ConfigError::Refuses { .. })) => {
                Ok(Some(e.to_string()))
            }
            Err(e) => Err(e),
        }
    }
}

/// One run of the study: what made it (the point, the transfer
/// configuration it ran with its machine, cost sheets and coherence
/// options, and the kit's version), the counts the model produced, and the
/// figures derived from them exactly ([`Row::figures`], the one place).
///
/// Its JSON holds the configuration under `config`, the version under
/// `version`, the point's fields, the counts under their own names
/// (`total_cycles`, `processor_cycles`, ...) and the figures at full
/// precision; it reads back equal, refusing a figure its counts do not
/// give and a configuration that is not the point's transfer. The table
/// ([`Row::line`]) rounds them.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The version of the kit that measured it (`flashkit`'s package
    /// version).
    pub version: String,
    /// The transfer the point ran ([`StudyPoint::config_on`]).
    pub config: protocols::transfer::Config,
    /// The coherence mode.
    pub mode: StudyMode,
    /// Where the send buffer's lines started.
    pub sender: Sender,
    /// Where the receive buffer's lines started.
    pub receiver: Receiver,
    /// Where the buffers are homed.
    pub placement: Placement,
    /// Bytes sent.
    pub bytes: u64,
    /// The transfer's total, in cycles (with the flushes, when the mode
    /// has them).
    pub total: magic::Cycles,
    /// The total in microseconds.
    pub total_us: f64,
    /// Bytes over the total.
    pub bandwidth_mb_s: f64,
    /// Lines the receiving process would read wrong.
    pub stale_lines: u64,
    /// No stale line.
    pub data_ok: bool,
    /// Interventions, invalidations and fetches together.
    pub coherence_messages: u64,
    /// Dirty lines a MAGIC took from its own node's processor cache (a
    /// transferring node's, or a third-node home's).
    pub interventions: u64,
    /// Clean copies of receive lines MAGIC dropped from processor caches.
    pub invalidations: u64,
    /// Dirty lines MAGIC fetched from another node's cache by messages.
    pub fetches: u64,
    /// What the user processes' processors spent, in cycles: their
    /// commands and their flushes, both nodes.
    pub processor: magic::Cycles,
    /// The processors' time in microseconds.
    pub processor_us: f64,
}

/// A row's figures derived from its counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowFigures {
    /// The total in microseconds.
    pub total_us: f64,
    /// Bytes over the total, in MB/s.
    pub bandwidth_mb_s: f64,
    /// The processors' time in microseconds.
    pub processor_us: f64,
}

impl Row {
    /// The figures `bytes`, the `total` and the `processor` time give: the
    /// one place a row's derived figures are computed (as the transfer's
    /// own, [`protocols::transfer::Outcome::total_us`] and its kin, give
    /// them for a transfer one way).
    pub fn figures(bytes: u64, total: magic::Cycles, processor: magic::Cycles) -> RowFigures {
        let total_us = total.as_us();
        RowFigures {
            total_us,
            bandwidth_mb_s: bytes as f64 / total_us,
            processor_us: processor.as_us(),
        }
    }

    /// The point the row ran.
    pub fn point(&self) -> StudyPoint {
        StudyPoint {
            mode: self.mode,
            sender: self.sender,
            receiver: self.receiver,
            placement: self.placement,
            bytes: self.bytes,
        }
    }
}

/// The JSON of a [`Row`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowWire {
    version: String,
    config: protocols::transfer::Config,
    mode: StudyMode,
    sender: Sender,
    receiver: Receiver,
    placement: Placement,
    bytes: u64,
    total_cycles: u64,
    total_us: f64,
    bandwidth_mb_s: f64,
    stale_lines: u64,
    data_ok: bool,
    coherence_messages: u64,
    interventions: u64,
    invalidations: u64,
    fetches: u64,
    processor_cycles: u64,
    processor_us: f64,
}

impl Serialize for Row {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        RowWire {
            version: self.version.clone(),
            config: self.config.clone(),
            mode: self.mode,
            sender: self.sender,
            receiver: self.receiver,
            placement: self.placement,
            bytes: self.bytes,
            total_cycles: self.total.0,
            total_us: self.total_us,
            bandwidth_mb_s: self.bandwidth_mb_s,
            stale_lines: self.stale_lines,
            data_ok: self.data_ok,
            coherence_messages: self.coherence_messages,
            interventions: self.interventions,
            invalidations: self.invalidations,
            fetches: self.fetches,
            processor_cycles: self.processor.0,
            processor_us: self.processor_us,
        }
        .serialize(s)
    }
}

/// Reads a row's JSON back: the figures are computed from its counts
/// again, and one they do not give, a total of coherence actions that is
/// not their sum, or a configuration that is not the point's transfer is
/// refused, naming the key.
impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let w = RowWire::deserialize(d)?;
        let f = Row::figures(
            w.bytes,
            magic::Cycles(w.total_cycles),
            magic::Cycles(w.processor_cycles),
        );
        let row = Row {
            version: w.version,
            config: w.config,
            mode: w.mode,
            sender: w.sender,
            receiver: w.receiver,
            placement: w.placement,
            bytes: w.bytes,
            total: magic::Cycles(w.total_cycles),
            total_us: f.total_us,
            bandwidth_mb_s: f.bandwidth_mb_s,
            stale_lines: w.stale_lines,
            data_ok: w.data_ok,
            coherence_messages: w.coherence_messages,
            interventions: w.interventions,
            invalidations: w.invalidations,
            fetches: w.fetches,
            processor: magic::Cycles(w.processor_cycles),
            processor_us: f.processor_us,
        };
        for (k, json, counts) in [
            ("total_us", w.total_us, f.total_us),
            ("bandwidth_mb_s", w.bandwidth_mb_s, f.bandwidth_mb_s),
            ("processor_us", w.processor_us, f.processor_us),
        ] {
            magic::ledger::exact(k, json, counts).map_err(D::Error::custom)?;
        }
        let sum = row
            .interventions
            .checked_add(row.invalidations)
            .and_then(|x| x.checked_add(row.fetches));
        if sum != Some(row.coherence_messages) {
            return Err(D::Error::custom(format!(
                "coherence_messages is {}, but interventions, invalidations and fetches add up \
                 to {}",
                row.coherence_messages,
                sum.map_or("more than 2^64".to_string(), |x| x.to_string())
            )));
        }
        if row.data_ok != (row.stale_lines == 0) {
            return Err(D::Error::custom(format!(
                "data_ok is {}, but stale_lines is {}",
                row.data_ok, row.stale_lines
            )));
        }
        // The row's buffers are line-aligned: its lines are its bytes'.
        let lines = row.bytes.div_ceil(magic::LINE_BYTES as u64);
        if row.stale_lines > lines {
            return Err(D::Error::custom(format!(
                "stale_lines is {}, more than the {lines} lines of its {} bytes",
                row.stale_lines, row.bytes
            )));
        }
        let budget = row.config.params.budget;
        if row.total > budget {
            return Err(D::Error::custom(format!(
                "total_cycles is {}, past the run's budget of {budget} cycles",
                row.total
            )));
        }
        // Two processors, neither busy past the budget.
        if row.processor.0 > budget.0.saturating_mul(2) {
            return Err(D::Error::custom(format!(
                "processor_cycles is {}, more than two processors busy for the run's budget \
                 of {budget} cycles",
                row.processor
            )));
        }
        if row.point().config_on(&row.config) != row.config {
            return Err(D::Error::custom(
                "config is not the transfer of the row's point (its bytes, mode, sender, \
                 receiver and placement, the chunked handler, the buffers aligned)",
            ));
        }
        Ok(row)
    }
}

/// A traced run's timelines: its machine's nodes and slices.
pub type Timelines = (u32, Vec<magic::trace::Slice>);

/// Run one point on `base`'s machine and cost sheets; a point its mode
/// cannot serve is [`RunError::Mode`], a run that breaks a rule every
/// result keeps [`RunError::Broken`]. With `trace`, the measured pass's
/// timelines come back too.
pub fn study_point(
    p: &StudyPoint,
    base: &Scenario,
    trace: bool,
) -> Result<(Row, Option<Timelines>), RunError> {
    if let Some(why) = p
        .refusal(base.machine.clone())
        .map_err(|e| RunError::Transfer(protocols::transfer::Failed::Config(e)))?
    {
        return Err(RunError::Mode(why));
    }
    study_run(p, p.transfer().config_in(base, trace))
}

/// Run one point as transfer configuration `c` (the point's transfer,
/// [`StudyPoint::config_on`]); a point its mode cannot serve is
/// [`RunError::Mode`]. With `c.trace`, the measured pass's timelines come
/// back too.
pub fn study_config(
    p: &StudyPoint,
    c: &protocols::transfer::Config,
) -> Result<(Row, Option<Timelines>), RunError> {
    if let Some(why) = p
        .refusal(c.params.clone())
        .map_err(|e| RunError::Transfer(protocols::transfer::Failed::Config(e)))?
    {
        return Err(RunError::Mode(why));
    }
    study_run(p, p.config_on(c))
}

/// Run point `p` as its transfer `c`: the one place a [`Row`] is made.
fn study_run(
    p: &StudyPoint,
    c: protocols::transfer::Config,
) -> Result<(Row, Option<Timelines>), RunError> {
    let r = protocols::transfer::run_with_machine(&c)?;
    // The row keeps a few of the run's figures; the run is held whole.
    crate::invariants::check(&r.json(), &[&r.ledger], c.params.pp_issue_width)?;
    let a = r.coherence;
    let f = Row::figures(p.bytes, r.total, r.processor);
    let timelines = c.trace.then(|| (r.machine.nodes(), r.machine.trace()));
    let row = Row {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: c,
        mode: p.mode,
        sender: p.sender,
        receiver: p.receiver,
        placement: p.placement,
        bytes: p.bytes,
        total: r.total,
        total_us: f.total_us,
        bandwidth_mb_s: f.bandwidth_mb_s,
        stale_lines: r.stale.len() as u64,
        data_ok: r.data_ok,
        coherence_messages: a.total(),
        interventions: a.interventions,
        invalidations: a.invalidations,
        fetches: a.fetches,
        processor: r.processor,
        processor_us: f.processor_us,
    };
    Ok((row, timelines))
}

/// A combination a mode cannot serve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// The coherence mode.
    pub mode: StudyMode,
    /// Where the send buffer's lines started.
    pub sender: Sender,
    /// Where the receive buffer's lines started.
    pub receiver: Receiver,
    /// Where the buffers are homed.
    pub placement: Placement,
    /// Why.
    pub reason: String,
}

/// What a study runs: its size, and the transfer each point changes (its
/// machine, cost sheets and coherence options; [`StudyPoint::config_on`]
/// sets a point's fields in it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyConfig {
    /// Bytes each point sends.
    pub bytes: u64,
    /// The transfer the points change.
    pub base: protocols::transfer::Config,
}

impl StudyConfig {
    /// The study of `bytes` on scenario `base`'s machine, with its cost
    /// sheets and coherence options.
    pub fn on(base: &Scenario, bytes: u64) -> StudyConfig {
        let first = StudyPoint {
            bytes,
            ..StudyPoint::default()
        };
        StudyConfig {
            bytes,
            base: first.transfer().config_in(base, false),
        }
    }
}

/// The study's rows, in the order of its points, and its refusals, with
/// what made them (its configuration and the kit's version): its JSON
/// reads back equal, and [`crate::study::run_config`] of its
/// configuration gives it again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StudyWire")]
pub struct Study {
    /// The version of the kit that ran it (`flashkit`'s package version).
    pub version: String,
    /// What it ran.
    pub config: StudyConfig,
    /// One per combination run.
    pub rows: Vec<Row>,
    /// One per combination a mode refused.
    pub refused: Vec<Refusal>,
}

/// A study's JSON as read, before its rows are held to its configuration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyWire {
    version: String,
    config: StudyConfig,
    rows: Vec<Row>,
    refused: Vec<Refusal>,
}

impl TryFrom<StudyWire> for Study {
    type Error = String;

    /// A study whose rows ran transfers other than its own points' is
    /// refused, naming the first.
    fn try_from(w: StudyWire) -> Result<Study, String> {
        for (i, r) in w.rows.iter().enumerate() {
            if !w.config.holds(r) {
                return Err(format!(
                    "rows[{i}].config is not its point's transfer on the study's config.base"
                ));
            }
        }
        Ok(Study {
            version: w.version,
            config: w.config,
            rows: w.rows,
            refused: w.refused,
        })
    }
}

/// The modes in the order the study lists them: cheapest promise first.
pub const STUDY_MODES: [StudyMode; 4] = [
    StudyMode::None,
    StudyMode::NoneFlush,
    StudyMode::Local,
    StudyMode::Global,
];

/// Every combination of mode, sender state, receiver state and placement
/// for `bytes`, in the order the study lists them.
pub fn study_points(bytes: u64) -> Vec<StudyPoint> {
    let mut v = Vec::new();
    for &mode in &STUDY_MODES {
        for &sender in Sender::ALL {
            for &receiver in Receiver::ALL {
                for &placement in Placement::ALL {
                    v.push(StudyPoint {
                        mode,
                        sender,
                        receiver,
                        placement,
                        bytes,
                    });
                }
            }
        }
    }
    v
}

impl StudyConfig {
    /// Row `r` is one of this study's: a transfer of its bytes, its
    /// point's on its base.
    fn holds(&self, r: &Row) -> bool {
        r.bytes == self.bytes && r.point().config_on(&self.base) == r.config
    }
}

impl Study {
    /// The study of `config` before any point has run: no row, no
    /// refusal, this kit's version.
    pub fn new(config: StudyConfig) -> Study {
        Study {
            version: env!("CARGO_PKG_VERSION").to_string(),
            config,
            rows: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Add point `p`'s run, `r`, to the study: its row, or its refusal
    /// when its mode cannot serve it; any other error ends the study. A
    /// point of other bytes, or a row that is not `p`'s transfer on the
    /// study's base, is refused ([`RunError::NotItsPoint`]): the study's
    /// JSON would not read back.
    pub fn add(
        &mut self,
        p: &StudyPoint,
        r: Result<(Row, Option<Timelines>), RunError>,
    ) -> Result<(), RunError> {
        if p.bytes != self.config.bytes {
            return Err(RunError::NotItsPoint);
        }
        match r {
            Ok((row, _)) if row.point() != *p || !self.config.holds(&row) => {
                return Err(RunError::NotItsPoint);
            }
            Ok((row, _)) => self.rows.push(row),
            Err(RunError::Mode(reason)) => self.refused.push(Refusal {
                mode: p.mode,
                sender: p.sender,
                receiver: p.receiver,
                placement: p.placement,
                reason,
            }),
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// The study table's columns (name, width, right-aligned).
const STUDY_COLUMNS: [(&str, usize, bool); 10] = [
    ("mode", 10, false),
    ("sender", 12, false),
    ("receiver", 12, false),
    ("placement", 9, false),
    ("total us", 9, true),
    ("MB/s", 7, true),
    ("stale", 5, true),
    ("coherence", 9, true),
    ("(iv/inv/fetch)", 14, true),
    ("processor us", 12, true),
];

impl Row {
    /// The row as the table prints it, with its newline.
    pub fn line(&self) -> String {
        let cells = [
            self.mode.name(),
            self.sender.name(),
            self.receiver.name(),
            self.placement.name(),
            magic::figures::text(magic::figures::Figure::Us, self.total_us),
            magic::figures::text(magic::figures::Figure::MbS, self.bandwidth_mb_s),
            self.stale_lines.to_string(),
            self.coherence_messages.to_string(),
            format!(
                "{}/{}/{}",
                self.interventions, self.invalidations, self.fetches
            ),
            magic::figures::text(magic::figures::Figure::Us, self.processor_us),
        ];
        let mut s = String::new();
        magic::figures::line(&mut s, &STUDY_COLUMNS, &cells);
        s
    }

    /// The row as one scenario run's report.
    pub fn report(&self) -> Report {
        Report {
            json: serde_json::to_value(self).unwrap_or_default(),
            table: header() + &self.line(),
            failed: None,
        }
    }
}

/// The study table's header, with its newline.
pub fn header() -> String {
    let mut s = String::new();
    magic::figures::line(
        &mut s,
        &STUDY_COLUMNS,
        &STUDY_COLUMNS.map(|c| c.0.to_string()),
    );
    s
}

/// A copy or send with a translation change in the middle (`flashkit remap`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Remap {
    /// How translations are kept right (default invalidate).
    #[serde(default)]
    pub technique: TechniqueKind,
}

/// The benchmark suite's tables for a platform (`flashkit suite`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The platform (default cm5).
    #[serde(default)]
    pub platform: PlatformKind,
    /// One benchmark, or all.
    pub benchmark: Option<String>,
    /// Its nodes (default 64).
    #[serde(default = "d_sixty_four")]
    pub nodes: u32,
}

fn d_sixteen() -> u32 {
    16
}
fn d_thousand() -> u32 {
    1000
}
fn d_c(v: u64) -> u64 {
    v
}

/// The engine benchmark's workload (`flashkit pipeline`), with its three
/// handlers' costs.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// Nodes (default 16).
    #[serde(default = "d_sixteen")]
    pub nodes: u32,
    /// Messages each node sends (default 1000).
    #[serde(default = "d_thousand")]
    pub msgs: u32,
    /// Who sends to whom (default ring).
    #[serde(default)]
    pub pattern: PatternKind,
    /// Cycles of the setup handler, once a message (default 20).
    #[serde(default = "setup_cost")]
    pub setup_cycles: u64,
    /// Cycles of the send handler, per packet (default 12).
    #[serde(default = "send_cost")]
    pub send_cycles: u64,
    /// Cycles of the receive handler, per packet (default 10).
    #[serde(default = "recv_cost")]
    pub recv_cycles: u64,
    /// Extra cycles of the receive handler for a message's last packet (default 16).
    #[serde(default = "done_cost")]
    pub done_cycles: u64,
}

fn setup_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().setup.0)
}
fn send_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().send.0)
}
fn recv_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().recv.0)
}
fn done_cost() -> u64 {
    d_c(protocols::pipeline::PipelineCosts::default().done.0)
}

impl Pipeline {
    /// The workload's configuration, within the default cycle budget
    /// ([`pipeline`] gives it a scenario's `[machine] budget`).
    pub fn config(&self) -> protocols::pipeline::PipelineConfig {
        use magic::Cycles;
        use protocols::pipeline::{Pattern, PipelineConfig, PipelineCosts};
        PipelineConfig {
            nodes: self.nodes,
            msgs: self.msgs,
            pattern: match self.pattern {
                PatternKind::Ring => Pattern::Ring,
                PatternKind::Shift => Pattern::Shift,
                PatternKind::Rand => Pattern::Rand,
            },
            costs: PipelineCosts {
                setup: Cycles(self.setup_cycles),
                send: Cycles(self.send_cycles),
                recv: Cycles(self.recv_cycles),
                done: Cycles(self.done_cycles),
            },
            budget: magic::params::DEFAULT_BUDGET,
        }
    }
}

fn d_three() -> u32 {
    3
}
fn d_offset() -> u64 {
    0x4080
}
fn d_two() -> u32 {
    2
}
fn d_four() -> u64 {
    4
}
fn d_sixty_four() -> u32 {
    64
}

impl Default for Suite {
    fn default() -> Self {
        Suite {
            platform: PlatformKind::default(),
            benchmark: None,
            nodes: d_sixty_four(),
        }
    }
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            nodes: d_sixteen(),
            msgs: d_thousand(),
            pattern: PatternKind::default(),
            setup_cycles: setup_cost(),
            send_cycles: send_cost(),
            recv_cycles: recv_cost(),
            done_cycles: done_cost(),
        }
    }
}

impl Default for Miss {
    fn default() -> Self {
        Miss {
            case: MissCase::default(),
            nodes: d_three(),
            offset: d_offset(),
            owner: d_two(),
        }
    }
}

impl Default for FetchOp {
    fn default() -> Self {
        FetchOp {
            remote_node: d_one(),
        }
    }
}

impl Default for MessagingCosts {
    fn default() -> Self {
        MessagingCosts {
            protocol: CostProtocol::default(),
            words: d_four(),
            packet_words: d_four(),
            network: CostNetwork::default(),
        }
    }
}

impl Default for Logp {
    fn default() -> Self {
        Logp {
            platform: PlatformKind::default(),
            nodes: d_sixty_four(),
        }
    }
}

kinds!(
    /// The experiment a scenario runs: which of its tables it holds.
    Experiment {
        /// `[transfer]`.
        Transfer (default),
        /// `[miss]`.
        Miss,
        /// `[fetch_op]`.
        FetchOp,
        /// `[messaging_costs]`.
        MessagingCosts,
        /// `[logp]`.
        Logp,
        /// `[pipeline]`.
        Pipeline,
        /// `[remap]`.
        Remap,
        /// `[suite]`.
        Suite,
        /// `[study]`.
        Study,
        /// `[sharing]`.
        Sharing,
    }
);

impl Scenario {
    /// The complete scenario of `experiment` with every default: the
    /// machine, every cost sheet and the experiment's table, each entry set.
    ///
    /// ```
    /// use flashkit::scenario::{Experiment, Scenario};
    /// let text = Scenario::defaults(Experiment::Transfer).to_toml().unwrap();
    /// assert!(text.contains("[transfer]") && text.contains("bytes = 4096"));
    /// ```
    pub fn defaults(experiment: Experiment) -> Scenario {
        let mut s = Scenario::default();
        match experiment {
            Experiment::Transfer => s.transfer = Some(Transfer::default()),
            Experiment::Miss => s.miss = Some(Miss::default()),
            Experiment::FetchOp => s.fetch_op = Some(FetchOp::default()),
            Experiment::MessagingCosts => s.messaging_costs = Some(MessagingCosts::default()),
            Experiment::Logp => s.logp = Some(Logp::default()),
            Experiment::Pipeline => s.pipeline = Some(Pipeline::default()),
            Experiment::Remap => s.remap = Some(Remap::default()),
            Experiment::Suite => s.suite = Some(Suite::default()),
            Experiment::Study => s.study = Some(StudyPoint::default()),
            Experiment::Sharing => s.sharing = Some(SharingCase::default()),
        }
        s
    }

    /// [`Scenario::validate`] of a scenario TOML cannot write (`e`): a
    /// value past TOML's integers (2^63 - 1), checked as that end would be
    /// and named as given.
    fn validate_past_toml(&self, e: toml::ser::Error) -> Result<(), String> {
        fn past(v: &mut serde_json::Value, at: &str) -> Option<(String, u64)> {
            match v {
                serde_json::Value::Number(n) => {
                    let x = n.as_u64().filter(|&x| x > i64::MAX as u64)?;
                    *v = serde_json::Value::from(i64::MAX);
                    Some((at.to_string(), x))
                }
                serde_json::Value::Object(m) => m
                    .iter_mut()
                    .find_map(|(k, x)| past(x, &crate::json::dotted(at, k))),
                _ => None,
            }
        }
        let mut v = serde_json::to_value(self).map_err(|x| x.to_string())?;
        let Some((key, got)) = past(&mut v, "") else {
            return Err(e.to_string());
        };
        let at_end: Scenario = serde_json::from_value(v).map_err(|x| x.to_string())?;
        at_end.validate().map_err(|m| {
            // This key's refusal says the value given; another key's is its own.
            let end = format!(", got {}", i64::MAX);
            match m.strip_prefix(&format!("{key}: ")) {
                Some(why) if why.ends_with(&end) => {
                    format!("{key}: {}, got {got}", &why[..why.len() - end.len()])
                }
                _ => m,
            }
        })
    }

    /// The scenario as a TOML file.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }

    /// The checks a scenario file gets ([`parse`]), for a scenario made
    /// or read some other way (a sweep's record, say): one experiment,
    /// every value in its range, no key set that the experiment does not
    /// read. The error names the key, dotted from the scenario's root.
    ///
    /// ```
    /// use flashkit::scenario::{Experiment, Scenario};
    /// let mut s = Scenario::defaults(Experiment::Transfer);
    /// assert!(s.validate().is_ok());
    /// s.transfer.as_mut().unwrap().bytes = 0;
    /// let e = s.validate().unwrap_err();
    /// assert!(e.starts_with("transfer.bytes: must be from 1"), "{e}");
    /// // Past what a TOML file can hold, named all the same.
    /// s.transfer.as_mut().unwrap().bytes = u64::MAX;
    /// let e = s.validate().unwrap_err();
    /// assert_eq!(e, format!("transfer.bytes: must be from 1 to 1048576, got {}", u64::MAX));
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        let text = match self.to_toml() {
            Ok(t) => t,
            Err(e) => return self.validate_past_toml(e),
        };
        let src = Source {
            path: "",
            text: &text,
        };
        let e = match table(&src).and_then(|t| parse(&src, t)) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        // The key the error's line sets, dotted whole (the file's error
        // names it within its table).
        let key = e.line.and_then(|l| {
            let k = keyed(&text).into_iter().find(|k| k.line == l)?;
            Some(k.path.join("."))
        });
        let key = match (key, e.key) {
            // An inline table's line: the error's key is the one inside it.
            (Some(k), Some(named)) if named.starts_with(&format!("{k}.")) => Some(named),
            (k, named) => k.or(named),
        };
        Err(match key {
            Some(k) => format!("{k}: {}", e.message),
            None => e.message,
        })
    }
}

/// One read miss (`flashkit miss`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Miss {
    /// Which miss (default remote-clean).
    #[serde(default)]
    pub case: MissCase,
    /// Nodes of the machine (default 3).
    #[serde(default = "d_three")]
    pub nodes: u32,
    /// The line's offset in its home's memory (default 0x4080).
    #[serde(default = "d_offset")]
    pub offset: u64,
    /// The node whose cache holds a dirty line (default 2; `remote-dirty`
    /// alone has one, the other cases take only the default).
    #[serde(default = "d_two")]
    pub owner: u32,
}

impl Miss {
    /// The miss the coherence model runs.
    pub fn case(&self) -> coherence::miss::Case {
        use coherence::miss::Case;
        match self.case {
            MissCase::LocalClean => Case::LocalClean,
            MissCase::RemoteClean => Case::RemoteClean,
            MissCase::RemoteDirty => Case::RemoteDirty,
        }
    }

    /// Where its lines are and who holds the dirty one.
    pub fn setup(&self) -> coherence::miss::Setup {
        coherence::miss::Setup {
            nodes: self.nodes,
            offset: self.offset,
            owner: self.owner,
        }
    }
}

/// Many readers of one line homed at node 0, the first `evicting` of them
/// dropping their copies, then a writer (`[sharing]`): the home's cost per
/// replacement hint and per invalidation, under `[coherence]`'s directory.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharingCase {
    /// Nodes that read the line (1 to 4094; default 8); the machine has two
    /// more, the home and the writer.
    #[serde(default = "d_readers")]
    pub readers: u32,
    /// Readers that evict it before the write (0 to the readers; default 3).
    #[serde(default = "d_evicting")]
    pub evicting: u32,
}

impl Default for SharingCase {
    fn default() -> Self {
        SharingCase {
            readers: d_readers(),
            evicting: d_evicting(),
        }
    }
}

impl SharingCase {
    /// The workload the coherence model runs.
    pub fn workload(&self) -> coherence::sharing::Sharing {
        coherence::sharing::Sharing {
            readers: self.readers,
            evicting: self.evicting,
        }
    }
}

fn d_readers() -> u32 {
    coherence::sharing::Sharing::default().readers
}

fn d_evicting() -> u32 {
    coherence::sharing::Sharing::default().evicting
}

/// A remote fetch-and-add through a command sequence (`flashkit fetch-op`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FetchOp {
    /// The node whose memory holds the counter (default 1).
    #[serde(default = "d_one")]
    pub remote_node: u32,
}

/// A messaging protocol's instruction counts (`flashkit costs`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MessagingCosts {
    /// The protocol (default single).
    #[serde(default)]
    pub protocol: CostProtocol,
    /// Words of the message (default 4).
    #[serde(default = "d_four")]
    pub words: u64,
    /// Words a packet carries (default 4).
    #[serde(default = "d_four")]
    pub packet_words: u64,
    /// The network (default cm5).
    #[serde(default)]
    pub network: CostNetwork,
}

impl MessagingCosts {
    /// The delivery protocol the study runs.
    pub fn delivery(&self) -> protocols::am::costs::Delivery {
        use protocols::am::costs::Delivery;
        match self.protocol {
            CostProtocol::Single => Delivery::Single,
            CostProtocol::Finite => Delivery::Finite,
            CostProtocol::Indefinite => Delivery::Indefinite,
        }
    }

    /// The study's configuration.
    pub fn config(&self) -> protocols::am::costs::CostsConfig {
        use protocols::am::costs::{CostsConfig, Network};
        CostsConfig {
            protocol: self.delivery(),
            words: self.words,
            packet_words: self.packet_words,
            network: match self.network {
                CostNetwork::Cm5 => Network::Cm5,
                CostNetwork::Ordered => Network::Ordered,
            },
        }
    }
}

/// A platform's LogP figures from the benchmark suite (`flashkit logp`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Logp {
    /// The platform (default cm5).
    #[serde(default)]
    pub platform: PlatformKind,
    /// Its nodes (default 64).
    #[serde(default = "d_sixty_four")]
    pub nodes: u32,
}

/// The handlers' cost sheets (`[costs.transfer]`, `[costs.coherence]`,
/// `[costs.user]`, `[costs.command]`) and the Active Message layers' on each
/// platform (`[costs.am]` on MAGIC, `[costs.cmam]` and `[costs.cmaml]` on the
/// CM-5, `[costs.sp]`): any entry set here replaces the sheet's default;
/// docs/costs.md lists MAGIC's.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CostTables {
    /// The transfer handlers' sheet.
    #[serde(default)]
    pub transfer: protocols::transfer::TransferCosts,
    /// The coherence protocol's sheet.
    #[serde(default)]
    pub coherence: coherence::protocol::CoherenceCosts,
    /// The user layer's sheet.
    #[serde(default)]
    pub user: protocols::user::UserCosts,
    /// The command interface's, shared by the user layer and the transfer.
    #[serde(default)]
    pub command: protocols::command::CommandCosts,
    /// The operating system's steps, as the user layer charges them.
    #[serde(default)]
    pub os: os_shim::OsCosts,
    /// The user programs' flushes of message data (`transfer.flush`).
    #[serde(default)]
    pub flush: protocols::transfer::FlushCosts,
    /// Active Messages on MAGIC: the layer's handlers.
    #[serde(default)]
    pub am: protocols::am::flash::FlashCosts,
    /// CMAM on the CM-5 (`--platform cm5`), in instructions (a layer's
    /// table defaults to CMAM's).
    #[serde(default)]
    pub cmam: LayerCosts,
    /// CMAML on the CM-5 (`--platform cm5-cmaml`), in instructions; an
    /// entry not set keeps CMAML's value.
    #[serde(default = "LayerCosts::cmaml", deserialize_with = "cmaml")]
    pub cmaml: LayerCosts,
    /// SP AM on the SP, in instructions.
    #[serde(default)]
    pub sp: protocols::am::sp::SpCosts,
}

use protocols::am::cm5::LayerCosts;

impl Default for CostTables {
    fn default() -> Self {
        CostTables {
            transfer: Default::default(),
            coherence: Default::default(),
            user: Default::default(),
            command: Default::default(),
            os: Default::default(),
            flush: Default::default(),
            am: Default::default(),
            cmam: LayerCosts::cmam(),
            cmaml: LayerCosts::cmaml(),
            sp: Default::default(),
        }
    }
}

/// `[costs.cmaml]`: the entries it sets replace CMAML's, the others keep
/// them (the struct's own default is CMAM's); a wrong value is an error at
/// its key.
fn cmaml<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LayerCosts, D::Error> {
    let given = protocols::am::cm5::LayerCostsPatch::deserialize(d)?;
    Ok(LayerCosts::cmaml().patched(given))
}

/// The comparison platforms' network interfaces and networks
/// (`[network.cm5]`, `[network.sp]`); FLASH's is `[machine]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Networks {
    /// The CM-5's network interface and data network.
    #[serde(default)]
    pub cm5: magic::ni::cm5::Cm5Params,
    /// The SP's adapters and switch.
    #[serde(default)]
    pub sp: magic::ni::sp::SpParams,
}

/// A scenario: the machine, the handlers' costs and one experiment (the AM
/// platforms and the messaging-cost study keep their own machines;
/// `[machine]` sets FLASH's).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// FLASH's machine parameters (`[machine]`): every field of
    /// [`magic::MagicParams`], the rest keeping FLASH's values.
    #[serde(default)]
    pub machine: magic::MagicParams,
    /// The handlers' cost sheets (`[costs.*]`).
    #[serde(default)]
    pub costs: CostTables,
    /// The comparison platforms' networks (`[network.*]`).
    #[serde(default)]
    pub network: Networks,
    /// A transfer (`[transfer]`).
    pub transfer: Option<Transfer>,
    /// A read miss (`[miss]`).
    pub miss: Option<Miss>,
    /// A fetch-and-add (`[fetch_op]`).
    pub fetch_op: Option<FetchOp>,
    /// A messaging protocol's instruction counts (`[messaging_costs]`).
    pub messaging_costs: Option<MessagingCosts>,
    /// A platform's LogP figures (`[logp]`).
    pub logp: Option<Logp>,
    /// The engine benchmark's workload (`[pipeline]`).
    pub pipeline: Option<Pipeline>,
    /// A translation change mid-operation (`[remap]`).
    pub remap: Option<Remap>,
    /// The active-message suite (`[suite]`).
    pub suite: Option<Suite>,
    /// A point of the coherence-mode study (`[study]`).
    pub study: Option<StudyPoint>,
    /// Many readers of a line, some evicting, then a writer (`[sharing]`).
    pub sharing: Option<SharingCase>,
    /// The directory protocol's options (`[coherence]`), for every
    /// experiment that runs it.
    #[serde(default)]
    pub coherence: CoherenceOptions,
}

/// The directory protocol's options (`[coherence]`): docs/coherence.md
/// says what each changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CoherenceOptions {
    /// The sharer list's format: `bitvector` (the reference model's entry,
    /// default) or `dynamic-pointer` (FLASH's pointer/link store).
    #[serde(default)]
    pub directory: coherence::DirFormat,
    /// Links in each node's pointer store, dynamic pointers only (1 to
    /// 1048576; default 8192).
    #[serde(default = "d_pointer_store")]
    pub pointer_store: u32,
    /// Who collects invalidation acknowledgements: `home` (default) or
    /// `requester`.
    #[serde(default)]
    pub acks: coherence::Acks,
    /// Clean evictions send replacement hints (default true).
    #[serde(default = "d_true")]
    pub hints: bool,
    /// An owner's forward that arrives before it has used its reply:
    /// `nak` (default) or `defer`.
    #[serde(default)]
    pub forwards: coherence::Forwards,
}

fn d_pointer_store() -> u32 {
    coherence::protocol::POINTER_STORE
}

impl Default for CoherenceOptions {
    fn default() -> Self {
        let p = coherence::CohParams::default();
        CoherenceOptions {
            directory: p.format,
            pointer_store: p.pointer_store,
            acks: p.acks,
            hints: p.hints,
            forwards: p.forwards,
        }
    }
}

impl CoherenceOptions {
    /// The protocol's parameters with these options and the cost sheet `costs`.
    pub fn params(&self, costs: coherence::protocol::CoherenceCosts) -> coherence::CohParams {
        coherence::CohParams {
            format: self.directory,
            pointer_store: self.pointer_store,
            acks: self.acks,
            hints: self.hints,
            forwards: self.forwards,
            costs,
            ..coherence::CohParams::default()
        }
    }
}

impl Scenario {
    fn kinds(&self) -> usize {
        [
            self.transfer.is_some(),
            self.miss.is_some(),
            self.fetch_op.is_some(),
            self.messaging_costs.is_some(),
            self.logp.is_some(),
            self.pipeline.is_some(),
            self.remap.is_some(),
            self.suite.is_some(),
            self.study.is_some(),
            self.sharing.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count()
    }
}

/// A scenario's file and its text, for errors that name the line.
pub struct Source<'a> {
    /// The file's name, as the user gave it.
    pub path: &'a str,
    /// Its text.
    pub text: &'a str,
}

/// The parts of a TOML key (`a."b.c" . d`), unquoted.
fn key_parts(k: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in k.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, '.') => parts.push(std::mem::take(&mut cur).trim().to_string()),
            (None, c) => cur.push(c),
        }
    }
    parts.push(cur.trim().to_string());
    parts
}

/// Where a TOML line's key ends: its first `=` outside quotes.
fn key_end(line: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '=') => return Some(i),
            (None, '#') => return None,
            _ => {}
        }
    }
    None
}

/// One line of a scenario's text that opens a table or sets a key: the
/// full dotted path it names, and whether its value is an inline table
/// (whose keys it sets too).
struct Keyed {
    line: usize,
    path: Vec<String>,
    inline: bool,
}

/// Every line of `text` that opens a table or sets a key.
fn keyed(text: &str) -> Vec<Keyed> {
    let mut table: Vec<String> = Vec::new();
    let mut out = Vec::new();
    // A byte-order mark before the first line is no part of it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(h) = t.strip_prefix('[') {
            let h = h.trim_start_matches('[');
            let Some(end) = h.find(']') else { continue };
            table = key_parts(&h[..end]);
            out.push(Keyed {
                line: i + 1,
                path: table.clone(),
                inline: false,
            });
        } else if let Some(e) = key_end(t) {
            let mut path = table.clone();
            path.extend(key_parts(&t[..e]));
            out.push(Keyed {
                line: i + 1,
                path,
                inline: t[e + 1..].trim_start().starts_with('{'),
            });
        }
    }
    out
}

impl Source<'_> {
    /// The line (1-based) that sets `key`: a dotted path from the file's
    /// root (`costs.transfer.send_init.loads`; an inline table that holds
    /// it counts), or a bare key set in any table.
    fn line_of(&self, key: &str) -> Option<usize> {
        let want = key_parts(key);
        let lines = keyed(self.text);
        if want.len() == 1 {
            // A table's key first; a key of the root (an unknown one, as a
            // table's are named in full) only if no table sets it.
            let named = |k: &&Keyed| k.path.last() == want.last();
            // Else a dotted key through it (`transfer.chunk` set inside
            // `[transfer]` reaches a key `transfer` of the table).
            let through = |k: &&Keyed| k.path.len() > 2 && k.path[1..].contains(&want[0]);
            return lines
                .iter()
                .filter(named)
                .find(|k| k.path.len() > 1)
                .or_else(|| lines.iter().find(through))
                .or_else(|| lines.iter().filter(named).find(|k| k.path.len() == 1))
                .map(|k| k.line);
        }
        lines
            .iter()
            .find(|k| k.path == want)
            .or_else(|| {
                lines
                    .iter()
                    .find(|k| k.inline && k.path.len() < want.len() && want.starts_with(&k.path))
            })
            .map(|k| k.line)
    }

    /// The key a line sets, as an error names it: bare in a table of the
    /// file's root (`[transfer]`, `[machine]`), the whole dotted path in a
    /// nested one (`costs.transfer.shift_dword`).
    fn key_at(&self, line: usize) -> Option<String> {
        let all = keyed(self.text);
        let k = match all.iter().find(|k| k.line == line) {
            Some(k) => k,
            // A line inside a value that spans lines (an array's items):
            // the key that opened it, the last set above it.
            None => all.iter().rev().find(|k| k.line < line)?,
        };
        // A table's header names no key.
        let text = self.text.strip_prefix('\u{feff}').unwrap_or(self.text);
        if text.lines().nth(k.line - 1)?.trim_start().starts_with('[') {
            return None;
        }
        Some(match k.path.len() {
            0..=2 => k.path.last()?.clone(),
            _ => k.path.join("."),
        })
    }

    /// An error about `key`: the file, the line that sets it and the key.
    pub fn error(&self, key: &str, why: impl ToString) -> ScenarioError {
        ScenarioError {
            path: self.path.to_string(),
            line: self.line_of(key),
            key: Some(key.to_string()),
            message: why.to_string(),
        }
    }

    /// A value out of range, at the line that sets its key.
    pub fn out_of_range(&self, e: &magic::OutOfRange) -> ScenarioError {
        self.error(e.field, format!("must be {}, got {}", e.allowed, e.got))
    }

    /// A value out of range found checking `tables` (the first that holds
    /// the field is its table; a field already a dotted path is its own).
    /// The error names the key the file sets: the field's, or, where the
    /// file leaves the field at its default and sets a key the field's
    /// range depends on (the machine's issue width for a task, its memory
    /// for an offset, its data buffers for a chunk), that key, with the
    /// whole reason.
    pub fn in_tables(&self, tables: &[&str], e: &magic::OutOfRange) -> ScenarioError {
        let paths: Vec<(String, String)> = if e.field.contains('.') {
            vec![(e.field.to_string(), e.field.to_string())]
        } else {
            tables
                .iter()
                .map(|t| {
                    let path = format!("{t}.{}", e.field);
                    let shown = if t.contains('.') {
                        path.clone()
                    } else {
                        e.field.to_string()
                    };
                    (path, shown)
                })
                .collect()
        };
        let lines = keyed(self.text);
        let set = |path: &str| {
            let want = key_parts(path);
            lines
                .iter()
                .find(|k| {
                    k.path == want
                        || (k.inline && k.path.len() < want.len() && want.starts_with(&k.path))
                })
                .map(|k| k.line)
        };
        let message = format!("must be {}, got {}", e.allowed, e.got);
        if let Some((line, shown)) = paths.iter().find_map(|(p, shown)| Some((set(p)?, shown))) {
            return ScenarioError {
                path: self.path.to_string(),
                line: Some(line),
                key: Some(shown.clone()),
                message,
            };
        }
        for r in related(e.field) {
            if let Some(line) = set(&r) {
                // Bare in a table of the root, whole in a nested one.
                let shown = match key_parts(&r).len() {
                    0..=2 => r.rsplit('.').next().unwrap_or(&r).to_string(),
                    _ => r.clone(),
                };
                return ScenarioError {
                    path: self.path.to_string(),
                    line: Some(line),
                    key: Some(shown),
                    message: e.to_string(),
                };
            }
        }
        ScenarioError {
            path: self.path.to_string(),
            line: None,
            key: paths.first().map(|p| p.1.clone()),
            message,
        }
    }

    /// An error about the file, at `line` if known.
    fn at(&self, line: Option<usize>, why: impl ToString) -> ScenarioError {
        ScenarioError {
            path: self.path.to_string(),
            line,
            key: None,
            message: why.to_string(),
        }
    }
}

/// The keys a field's range depends on, as dotted paths, in the order an
/// error names them when the file leaves the field at its default: a
/// task's parts (its loads among its instructions, its instructions within
/// its bundles at the PP's issue width), the machine's intervention times
/// (each from the one before), and the experiments' fields whose range is
/// another's value.
fn related(field: &str) -> Vec<String> {
    if let Some((task, part)) = field.strip_prefix("costs.").and(field.rsplit_once('.')) {
        let part_of = |p: &str| format!("{task}.{p}");
        return match part {
            "loads" => vec![part_of("instrs")],
            "stores" => vec![part_of("instrs"), part_of("loads")],
            "instrs" => vec![part_of("cycles"), "machine.pp_issue_width".into()],
            _ => Vec::new(),
        };
    }
    let keys: &[&str] = match field {
        "chunk" => &["machine.data_buffers", "transfer.handler"],
        "offset" => &["machine.mem_bytes"],
        "pc_first_word" => &["machine.pc_state"],
        "pc_line" => &["machine.pc_first_word", "machine.pc_state"],
        "owner" => &["miss.nodes", "miss.case"],
        "evicting" => &["sharing.readers"],
        "receives" | "sends" => &["transfer.bytes"],
        "dst_offset" => &["transfer.src_offset", "transfer.placement"],
        _ => &[],
    };
    keys.iter().map(|k| k.to_string()).collect()
}

/// A scenario file that is not a scenario: a syntax error, an unknown key, a
/// value of the wrong type or out of range, or not exactly one experiment.
/// It prints as `file:line: key: what`, leaving out what is not known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default(), key.as_ref().map(|k| format!(": {k}")).unwrap_or_default())]
pub struct ScenarioError {
    /// The file, as named.
    pub path: String,
    /// The line (1-based), where the error has one.
    pub line: Option<usize>,
    /// The key at fault, where one is.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// The tables of a scenario's root (every field of [`Scenario`]).
const SCENARIO_TABLES: [&str; 14] = [
    "machine",
    "costs",
    "network",
    "transfer",
    "miss",
    "fetch_op",
    "messaging_costs",
    "logp",
    "pipeline",
    "remap",
    "suite",
    "study",
    "sharing",
    "coherence",
];

/// What a scenario must hold.
const KINDS_ERROR: &str = "a scenario holds exactly one experiment table: [transfer], [miss], [sharing], [fetch_op], [remap], [pipeline], [messaging_costs], [logp], [suite] or [study]";

/// Parse a scenario (the file's text after any sweep changes) and check it:
/// every table, whether its experiment uses it or not, and the experiment
/// on its machine; then that every key set away from its default is one
/// the experiment reads (another would change nothing). An error names the
/// file, the line and the key the file sets (a key of a nested table in
/// full, `costs.transfer.send_init.loads`).
pub fn parse(src: &Source<'_>, value: toml::Table) -> Result<Scenario, ScenarioError> {
    let s = parse_values(src, value)?;
    refuse_unread(src, &s)?;
    Ok(s)
}

/// [`parse`] but for the keys the experiment does not read
/// ([`refuse_unread`]), which a sweep checks after its own axes.
pub(crate) fn parse_values(
    src: &Source<'_>,
    value: toml::Table,
) -> Result<Scenario, ScenarioError> {
    parse_values_as(src, value, true)
}

/// [`parse_values`], finding the range of a key whose value its integer
/// type cannot hold when `ranges` (a search that is not itself one).
fn parse_values_as(
    src: &Source<'_>,
    value: toml::Table,
    ranges: bool,
) -> Result<Scenario, ScenarioError> {
    // Every key of a scenario's root is a table (`[miss]`): one the file
    // gives as something else is said so, at its line, where serde would
    // name a type (`expected struct Miss`); the first in the file if more.
    // (A key no scenario has is serde's to name as unknown.)
    let mut not_tables: Vec<(Option<usize>, &String, String)> = Vec::new();
    for (k, v) in value
        .iter()
        .filter(|(k, _)| SCENARIO_TABLES.contains(&k.as_str()))
    {
        let what = match v {
            toml::Value::Table(_) => continue,
            toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_table) => {
                format!("an array of tables ([[{k}]])")
            }
            _ => "a value".to_string(),
        };
        let line = src.text.lines().position(|l| {
            let t = l.trim_start();
            t.starts_with(&format!("[[{k}]]"))
                || t.split_once('=').is_some_and(|(key, _)| key.trim() == k)
        });
        not_tables.push((line.map(|i| i + 1), k, what));
    }
    not_tables.sort_by_key(|(line, ..)| line.unwrap_or(usize::MAX));
    if let Some((line, k, what)) = not_tables.into_iter().next() {
        return Err(ScenarioError {
            path: src.path.to_string(),
            line,
            key: Some(k.clone()),
            message: format!("a table, [{k}], not {what}"),
        });
    }
    // A list only where a scenario holds one: serde would otherwise fill a
    // table's fields from a list by position (`[[costs.transfer]]`, or
    // `send_init = [9, 10, 4, 0]`), without one key named.
    if let Some((key, what)) = misplaced_list(&value) {
        let mut err = src.error(
            &key,
            format!("{what}, where a scenario holds one value or one table"),
        );
        err.key = Some(key);
        return Err(err);
    }
    // Deserialize through the text so errors carry positions: the file's
    // own text when nothing was changed, else the changed table's. (Compared
    // as printed: a NaN is not equal to itself.)
    let printed = |t: &toml::Table| toml::to_string(t).ok();
    let changed = src
        .text
        .parse::<toml::Table>()
        .ok()
        .is_none_or(|t| printed(&t) != printed(&value));
    let text = if changed {
        toml::to_string(&value).map_err(|e| src.at(None, e))?
    } else {
        src.text.to_string()
    };
    let s: Scenario = toml::from_str(&text).map_err(|e| {
        let msg = in_words(&text, &e);
        // An unknown key: name it and its line (toml points at its table).
        if let Some(k) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            let mut err = src.error(k, &msg);
            if let Some(key) = err.line.and_then(|l| src.key_at(l)) {
                err.key = Some(key);
            }
            return err;
        }
        // An integer its type cannot hold: its key's range, found in the
        // text deserialized (the file's, or the table's as changed).
        let msg = match e.span().filter(|_| ranges) {
            Some(sp) => {
                let read = Source {
                    path: src.path,
                    text: &text,
                };
                integer_range(&read, sp, &msg).unwrap_or(msg)
            }
            None => msg,
        };
        // Else the line the error points at, and the key set on it.
        if let Some(sp) = e.span().filter(|_| !changed) {
            let line = line_at(&text, sp.start);
            let mut err = src.at(Some(line), &msg);
            err.key = src.key_at(line);
            return err;
        }
        src.at(None, &msg)
    })?;
    if s.kinds() != 1 {
        return Err(src.at(None, format!("{KINDS_ERROR} (found {})", s.kinds())));
    }
    check(src, &s)?;
    Ok(s)
}

/// `Err` naming the first key `s` sets away from its default that its
/// experiment does not read, at its line in `src`: its value would change
/// nothing, silently. ([`parse`] checks it after every value's range; a
/// sweep after its own axes, which it names as the command line's.)
pub(crate) fn refuse_unread(src: &Source<'_>, s: &Scenario) -> Result<(), ScenarioError> {
    // The first in the file.
    let first = unread_keys(s)
        .into_iter()
        .map(|k| src.error(&k, unread_why(s, &k)))
        .min_by_key(|e| e.line.unwrap_or(usize::MAX));
    first.map_or(Ok(()), Err)
}

/// The first key of `t` (dotted) that holds a list where no scenario
/// does, and what it holds: a list of values, or an array of tables. The
/// keys that do hold lists are those the complete default scenarios print
/// as lists (the inbox's priority, say).
fn misplaced_list(t: &toml::Table) -> Option<(String, String)> {
    /// Every key of the default scenarios, and those that hold lists.
    type Keys = (HashSet<String>, HashSet<String>);
    static KEYS: std::sync::OnceLock<Keys> = std::sync::OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        let (mut known, mut lists) = (HashSet::new(), HashSet::new());
        for &e in Experiment::ALL {
            let text = Scenario::defaults(e).to_toml().unwrap_or_default();
            if let Ok(t) = text.parse::<toml::Table>() {
                default_keys(&t, "", &mut known, &mut lists);
            }
        }
        (known, lists)
    });
    fn walk(t: &toml::Table, at: &str, keys: &Keys) -> Option<(String, String)> {
        let (known, lists) = keys;
        for (k, v) in t {
            let key = crate::json::dotted(at, k);
            // A key no scenario has is serde's to name, as unknown.
            if !known.contains(&key) {
                continue;
            }
            match v {
                toml::Value::Table(inner) => {
                    if let Some(found) = walk(inner, &key, keys) {
                        return Some(found);
                    }
                }
                toml::Value::Array(a) if !lists.contains(&key) => {
                    let what = if !a.is_empty() && a.iter().all(toml::Value::is_table) {
                        format!("an array of tables ([[{key}]])")
                    } else {
                        "a list".to_string()
                    };
                    return Some((key, what));
                }
                _ => {}
            }
        }
        None
    }
    walk(t, "", keys)
}

/// The dotted keys of `t` into `known`, and those that hold lists into
/// `lists`.
fn default_keys(
    t: &toml::Table,
    at: &str,
    known: &mut HashSet<String>,
    lists: &mut HashSet<String>,
) {
    for (k, v) in t {
        let key = crate::json::dotted(at, k);
        match v {
            toml::Value::Table(inner) => default_keys(inner, &key, known, lists),
            toml::Value::Array(_) => {
                lists.insert(key.clone());
            }
            _ => {}
        }
        known.insert(key);
    }
}

/// A deserializing error of `text` as a scenario's author reads it: a
/// table where serde names its type (`expected a table`, not `expected
/// struct TransferCosts`), and for a name given as another kind of value,
/// the names it may be (found by putting a name no choice has in its place).
fn in_words(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().replace('\n', "; ");
    let msg = match msg.split_once("expected struct ") {
        Some((head, _)) => format!("{head}expected a table"),
        None => msg,
    };
    // A date or time reaches serde as a map of one private key: say what
    // the author wrote.
    let given = e.span().and_then(|sp| text.get(sp)).map(str::trim);
    let msg = match given {
        Some(v)
            if msg.contains("invalid type: map") && v.parse::<toml::value::Datetime>().is_ok() =>
        {
            msg.replacen(
                "invalid type: map",
                &format!("invalid type: date or time `{v}`"),
                1,
            )
        }
        _ => msg,
    };
    if msg != "wanted string or table" {
        return msg;
    }
    let choices = e.span().and_then(|sp| {
        let probe = format!("{}\"?\"{}", text.get(..sp.start)?, text.get(sp.end..)?);
        let e2 = toml::from_str::<Scenario>(&probe).err()?;
        let m = e2.message();
        let at = m.find("expected one of ")?;
        let given = text.get(sp.clone())?.trim();
        (e2.span().map(|s| s.start) == Some(sp.start))
            .then(|| format!("a name, {}, not {given}", &m[at + "expected ".len()..]))
    });
    choices.unwrap_or(msg)
}

/// The tables of the file's root an error of `s`'s experiment may be about:
/// its own (`transfer`), then `machine` and `coherence`, in which order
/// [`Source::in_tables`] looks for the key at fault.
pub fn tables_of(s: &Scenario) -> [&'static str; 3] {
    let own = if s.transfer.is_some() {
        "transfer"
    } else if s.miss.is_some() {
        "miss"
    } else if s.fetch_op.is_some() {
        "fetch_op"
    } else if s.messaging_costs.is_some() {
        "messaging_costs"
    } else if s.logp.is_some() {
        "logp"
    } else if s.pipeline.is_some() {
        "pipeline"
    } else if s.remap.is_some() {
        "remap"
    } else if s.suite.is_some() {
        "suite"
    } else if s.study.is_some() {
        "study"
    } else {
        "sharing"
    };
    [own, "machine", "coherence"]
}

/// The keys `s`'s experiment reads, as dotted prefixes: its own table,
/// then the machine, options and cost sheets it runs with (an AM platform
/// its own network and sheet, FLASH's the machine too). A key under none
/// of them changes nothing the experiment runs: a sweep that varies one
/// would write rows that do not differ ([`crate::sweep::Plan`] refuses it).
///
/// ```
/// use flashkit::scenario::{reads, Scenario};
/// let s: Scenario = toml::from_str("[logp]\nplatform = \"cm5\"\n").unwrap();
/// assert!(reads(&s, "network.cm5.seed") && reads(&s, "logp.nodes"));
/// assert!(!reads(&s, "machine.net_latency") && !reads(&s, "costs.sp.request"));
/// ```
pub fn reads(s: &Scenario, key: &str) -> bool {
    // A MAGIC transfer's, and a study point's (one transfer).
    const TRANSFER: &[&str] = &[
        "machine",
        "coherence",
        "costs.transfer",
        "costs.command",
        "costs.coherence",
        "costs.flush",
    ];
    const COHERENCE: &[&str] = &["machine", "coherence", "costs.coherence"];
    const USER: &[&str] = &["machine", "costs.user", "costs.command", "costs.os"];
    let platform = |k: PlatformKind| -> &'static [&'static str] {
        match k {
            PlatformKind::Cm5 => &["costs.cmam", "network.cm5"],
            PlatformKind::Cm5Cmaml => &["costs.cmaml", "network.cm5"],
            PlatformKind::Sp => &["costs.sp", "network.sp"],
            PlatformKind::Flash => &["machine", "costs.am", "costs.command"],
        }
    };
    let [own, ..] = tables_of(s);
    let under = |p: &str| {
        key == p
            || key
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('.'))
    };
    // The SP's FIFOs are sized, not modelled: a full receive FIFO is
    // counted, not a delay, and no figure shows the count; nothing sends
    // through the send FIFO's limit. No run reads either.
    if ["network.sp.send_fifo", "network.sp.recv_fifo"]
        .iter()
        .any(|p| under(p))
    {
        return false;
    }
    // Keys of a sheet the experiment reads that none of its handlers
    // charge: the transfer's commit is its own sheet's (`commit_*`), and a
    // scenario's transfer has no page change, whose notice and walk these
    // are; a fetch-and-add translates and copies nothing and no page
    // changes under it; a remap runs no fetch-and-add, and the OS charges
    // its page-table edit and line copies only to a program held up
    // behind a second change, which no scenario holds.
    let never: &[&str] = match own {
        "transfer" | "study" => &[
            "costs.command.commit",
            "costs.command.os_notice",
            "costs.transfer.walk",
        ],
        "fetch_op" => &[
            "costs.user.line",
            "costs.user.link",
            "costs.user.tlb_lookup",
            "costs.user.valid_check",
            "costs.user.walk",
            "costs.os.change",
            "costs.os.copy_line",
            "costs.os.interrupt",
            "costs.command.os_notice",
        ],
        "remap" => &[
            "costs.user.fop_apply",
            "costs.os.change",
            "costs.os.copy_line",
        ],
        // CMAM polls: no CM-5 run of it takes an interrupt. LogP's bulk is
        // double-aligned (no shifts), measured with polling; the SP's
        // figures are SP AM's, whose sends hold the flush and flow work
        // the raw mode alone takes apart.
        "logp" => match s.logp.as_ref().map(|x| x.platform) {
            Some(PlatformKind::Cm5) => &[
                "costs.cmam.interrupt",
                "costs.cmam.interrupt_fast",
                "costs.cmam.shift_word",
                "costs.cmam.xfer_prime_shift",
            ],
            Some(PlatformKind::Cm5Cmaml) => &[
                "costs.cmaml.interrupt",
                "costs.cmaml.interrupt_fast",
                "costs.cmaml.shift_word",
                "costs.cmaml.xfer_prime_shift",
            ],
            Some(PlatformKind::Sp) => &[
                "costs.sp.flow_recv",
                "costs.sp.flow_send",
                "costs.sp.flush_line",
            ],
            _ => &[],
        },
        "suite"
            if s.suite
                .as_ref()
                .is_some_and(|x| x.platform == PlatformKind::Cm5) =>
        {
            &["costs.cmam.interrupt", "costs.cmam.interrupt_fast"]
        }
        _ => &[],
    };
    if never.iter().any(|p| under(p)) {
        return false;
    }
    let more: &[&str] = match own {
        "transfer" | "study" => TRANSFER,
        "miss" | "sharing" => COHERENCE,
        "fetch_op" | "remap" => USER,
        "pipeline" => &["machine.budget"],
        "logp" => s.logp.as_ref().map_or(&[], |x| platform(x.platform)),
        "suite" => s.suite.as_ref().map_or(&[], |x| platform(x.platform)),
        _ => &[],
    };
    std::iter::once(own).chain(more.iter().copied()).any(under)
}

/// Why a pipeline's `[machine]` key other than the budget is refused (see
/// [`unread_why`]).
const PIPELINE_MACHINE: &str = "does not apply to [pipeline], whose machine is the workload's own \
     (FLASH's without the inbox and outbox stages); of [machine] it takes budget alone";

/// Why `key`, one of [`unread_keys`]'s, is refused. A pipeline's machine
/// is the workload's own definition's (the peers'), so of `[machine]` it
/// takes only the budget, and says so.
fn unread_why(s: &Scenario, key: &str) -> String {
    if s.pipeline.is_some() && key.starts_with("machine.") {
        return PIPELINE_MACHINE.to_string();
    }
    format!(
        "[{}] does not read it here, so its value would change nothing: leave it out (or at \
         its default)",
        tables_of(s)[0]
    )
}

/// The keys `s` sets away from their defaults that its experiment does not
/// read ([`reads`]): `machine.pi_out` beside an experiment on the CM-5, say.
/// Their values would change nothing, silently.
fn unread_keys(s: &Scenario) -> Vec<String> {
    fn walk(
        s: &Scenario,
        at: &str,
        given: &serde_json::Value,
        stock: &serde_json::Value,
        out: &mut Vec<String>,
    ) {
        match (given, stock) {
            (serde_json::Value::Object(g), serde_json::Value::Object(d)) => {
                for (k, v) in g {
                    let key = crate::json::dotted(at, k);
                    match d.get(k) {
                        Some(dv) => walk(s, &key, v, dv, out),
                        // No default to compare with (the experiment's own
                        // table): read, by definition.
                        None if !reads(s, &key) => out.push(key),
                        None => {}
                    }
                }
            }
            _ if given != stock && !reads(s, at) => out.push(at.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let (Ok(given), Ok(stock)) = (
        serde_json::to_value(s),
        serde_json::to_value(Scenario::default()),
    ) {
        walk(s, "", &given, &stock, &mut out);
    }
    out
}

/// Every table of a scenario checked, whether its experiment uses it or
/// not: each value in its range, named by its key and line; then the
/// experiment against its machine (its tasks on the PP's issue width, its
/// buffers in memory...).
fn check(src: &Source<'_>, s: &Scenario) -> Result<(), ScenarioError> {
    use magic::costs::Sheet;
    let range = |tables: &[&str], e: &magic::OutOfRange| src.in_tables(tables, e);
    // A pipeline's `[machine]` key is said before the machine's own checks,
    // which would name a key the workload does not read.
    if s.pipeline.is_some() {
        if let Some(k) = unread_keys(s).iter().find(|k| k.starts_with("machine.")) {
            return Err(src.error(k, unread_why(s, k)));
        }
    }
    let p = s.machine.clone();
    p.validate().map_err(|e| range(&["machine"], &e))?;
    let c = &s.costs;
    let sheets: [&dyn Sheet; 7] = [
        &c.transfer,
        &c.coherence,
        &c.user,
        &c.command,
        &c.os,
        &c.flush,
        &c.am,
    ];
    for sheet in sheets {
        sheet.validate().map_err(|e| range(&[], &e))?;
    }
    let layer = |table: &'static str, e: protocols::Error| match e {
        protocols::Error::OutOfRange(r) => range(&[table], &r),
        e => src.error(table, e),
    };
    c.cmam.validate().map_err(|e| layer("costs.cmam", e))?;
    c.cmaml.validate().map_err(|e| layer("costs.cmaml", e))?;
    c.sp.validate().map_err(|e| layer("costs.sp", e))?;
    s.network
        .cm5
        .validate()
        .map_err(|e| range(&["network.cm5"], &e))?;
    s.network
        .sp
        .validate()
        .map_err(|e| range(&["network.sp"], &e))?;
    s.coherence
        .params(c.coherence)
        .validate()
        .map_err(|e| range(&["coherence"], &e))?;
    // The experiment, on its machine.
    let tables = tables_of(s);
    let out = |e: &magic::OutOfRange| range(&tables, e);
    let transfer = |e: protocols::transfer::ConfigError| match &e {
        protocols::transfer::ConfigError::Range(r) => out(r),
        _ => src.error(e.field(), &e),
    };
    let protocol = |e: protocols::Error| match &e {
        protocols::Error::OutOfRange(r) | protocols::Error::TooFewNodes { range: r, .. } => {
            let mut err = out(r);
            if let protocols::Error::TooFewNodes { benchmark, .. } = e {
                err.message = format!("{} (the {benchmark} benchmark)", err.message);
            }
            err
        }
        _ => src.at(None, &e),
    };
    if let Some(x) = &s.study {
        // A point its mode refuses is a refused row of `flashkit study`;
        // as a scenario's one experiment (or a sweep's point) it cannot
        // run, and is refused before anything does.
        if x.refusal(p.clone()).map_err(transfer)?.is_some() {
            // The clashing key, in the study's words (its `mode` is the
            // transfer's coherence).
            if let Err(e) = x.transfer().validate(p.clone()) {
                let why = e.to_string().replace("coherence = ", "mode = ");
                return Err(src.error(e.field(), why));
            }
        }
        x.transfer()
            .config_in(s, false)
            .validate()
            .map_err(transfer)?;
    }
    if s.miss.is_some() || s.sharing.is_some() {
        // The protocol's own refusal, before any machine is built.
        use magic::Protocol as _;
        coherence::Coherence::default()
            .check(&p, 3)
            .map_err(|e| match e {
                magic::BuildError::Params(r) => range(&["machine"], &r),
                e => src.at(None, e),
            })?;
    }
    if let Some(t) = &s.transfer {
        t.validate(p.clone()).map_err(transfer)?;
        t.config_in(s, false).validate().map_err(transfer)?;
    }
    if let Some(m) = &s.miss {
        m.setup().validate(m.case(), &p).map_err(|e| out(&e))?;
    }
    if let Some(x) = &s.sharing {
        x.workload().validate(&p).map_err(|e| out(&e))?;
    }
    if let Some(f) = &s.fetch_op {
        // The user layer's `target` is the scenario's `remote_node`.
        protocols::user::experiments::check_fetch_op(f.remote_node, &p).map_err(|e| match e {
            protocols::Error::OutOfRange(r) if r.field == "target" => out(&magic::OutOfRange {
                field: "remote_node",
                ..r
            }),
            e => protocol(e),
        })?;
        user_params(c)
            .validate_on(p.pp_issue_width)
            .map_err(protocol)?;
    }
    if s.remap.is_some() {
        protocols::user::experiments::check_remap(&p).map_err(protocol)?;
        user_params(c)
            .validate_on(p.pp_issue_width)
            .map_err(protocol)?;
    }
    if let Some(x) = &s.pipeline {
        x.config().validate().map_err(|e| {
            let field = match e.field {
                "setup" => "setup_cycles",
                "send" => "send_cycles",
                "recv" => "recv_cycles",
                "done" => "done_cycles",
                f => f,
            };
            out(&magic::OutOfRange { field, ..e })
        })?;
    }
    if let Some(x) = &s.messaging_costs {
        protocols::am::costs::validate(x.delivery(), x.words, x.packet_words).map_err(protocol)?;
    }
    if let Some(x) = &s.logp {
        // The measurement's least nodes first, so one range is ever said.
        let c = platform_config(x.platform, x.nodes, s);
        protocols::am::suite::check_nodes(&c, protocols::am::suite::LOGP_LEAST_NODES)
            .map_err(protocol)?;
        platform(x.platform, x.nodes, s).map_err(protocol)?;
    }
    if let Some(x) = &s.suite {
        // The benchmark first: its least nodes are the range said next.
        if let Some(b) = &x.benchmark {
            let known = protocols::am::suite::BENCHMARKS;
            let interrupt = b == "interrupt" && x.platform == PlatformKind::Cm5Cmaml;
            if !interrupt && !known.contains(&b.as_str()) {
                let mut all: Vec<&str> = known.to_vec();
                if x.platform == PlatformKind::Cm5Cmaml {
                    all.push("interrupt");
                }
                let allowed = format!("one of {}", all.join(", "));
                return Err(out(&magic::OutOfRange::new("benchmark", allowed, b)));
            }
        }
        // The benchmark's least nodes first, so a sweep's plan finds them.
        let least = protocols::am::suite::least_nodes(x.benchmark.as_deref());
        protocols::am::suite::check_nodes(&platform_config(x.platform, x.nodes, s), least)
            .map_err(protocol)?;
        platform(x.platform, x.nodes, s).map_err(protocol)?;
    }
    Ok(())
}

/// The line (from 1) of byte `at` of `text`: a span that starts a line is
/// on that line, not the one before.
fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// For an integer its key's type cannot hold (negative, or past the
/// type's most: serde says only that), the key's range, as a value in the
/// type out of range would have it said (`must be from 0 to 1000000, got
/// 18446744073709551615`): the range found by putting the type's ends in
/// the value's place. `None` for any other error, or a key whose range is
/// its type's.
fn integer_range(src: &Source<'_>, span: std::ops::Range<usize>, msg: &str) -> Option<String> {
    let typed = msg == "number too large to fit in target type"
        || (msg.starts_with("invalid value: integer `") && msg.contains("`, expected u"));
    // The whole number (TOML's own error points at its first digit).
    let rest = src.text.get(span.start..)?;
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-')))
        .unwrap_or(rest.len());
    let span = span.start..span.start + len.max(span.len());
    let given = src.text.get(span.clone())?.trim();
    if !typed || given.replace('_', "").parse::<i128>().is_err() {
        return None;
    }
    let line = line_at(src.text, span.start);
    let found = ["0", "255", "65535", "4294967295", "9223372036854775807"]
        .into_iter()
        .find_map(|end| {
            let probe = format!(
                "{}{end}{}",
                src.text.get(..span.start)?,
                src.text.get(span.end..)?
            );
            let at = Source {
                path: src.path,
                text: &probe,
            };
            let e = parse_values_as(&at, table_as(&at, false).ok()?, false).err()?;
            let (allowed, _) = e.message.strip_prefix("must be ")?.rsplit_once(", got ")?;
            (e.line == Some(line)).then(|| format!("must be {allowed}, got {given}"))
        });
    // A key of the full 64 bits: TOML's own integers stop short of it.
    found.or_else(|| {
        (msg == "number too large to fit in target type")
            .then(|| format!("a TOML integer is at most {}, got {given}", i64::MAX))
    })
}

/// Read a scenario file's text into a table (syntax errors name the line,
/// and the key set on it).
pub fn table(src: &Source<'_>) -> Result<toml::Table, ScenarioError> {
    table_as(src, true)
}

/// [`table`], finding the range of a key whose integer TOML cannot hold
/// when `ranges` (see [`integer_range`]).
fn table_as(src: &Source<'_>, ranges: bool) -> Result<toml::Table, ScenarioError> {
    src.text.parse::<toml::Table>().map_err(|e| {
        let line = e.span().map(|s| line_at(src.text, s.start));
        let msg = e.message().replace('\n', "; ");
        let msg = match e.span().filter(|_| ranges) {
            Some(sp) => integer_range(src, sp, &msg).unwrap_or(msg),
            None => msg,
        };
        let mut err = src.at(line, msg);
        err.key = line.and_then(|l| src.key_at(l));
        err
    })
}

/// What one run measured: JSON for scripts and sweeps, text for people.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The measurements as JSON.
    pub json: serde_json::Value,
    /// The measurements as text for people.
    pub table: String,
    /// The run succeeded but its check failed (wrong data).
    pub failed: Option<String>,
}

/// Run a scenario ([`run_traced`] without its timelines).
pub fn run(s: &Scenario) -> Result<Report, RunError> {
    run_traced(s, false).map(|x| x.0)
}

/// Run a scenario, recording the measured run's timelines when `trace`
/// (returned as Chrome trace-event JSON, [`magic::trace::Chrome`], which
/// serializes from the slices as it is written; the AM platforms' own
/// machines keep none, so those scenarios refuse it).
///
/// Every MAGIC experiment's result is held to the rules every result keeps
/// ([`crate::invariants`]) before it is returned: one that breaks one is
/// [`RunError::Broken`], a model bug, never a figure.
pub fn run_traced(
    s: &Scenario,
    trace: bool,
) -> Result<(Report, Option<magic::trace::Chrome>), RunError> {
    if s.kinds() != 1 {
        return Err(RunError::Kinds(s.kinds()));
    }
    // A key the experiment does not read would change nothing, silently.
    if let Some(key) = unread_keys(s).into_iter().next() {
        let why = unread_why(s, &key);
        return Err(RunError::NotRead { key, why });
    }
    let mut p = s.machine.clone();
    // Machines built for the run record their timelines from the start.
    p.trace = trace;
    let chrome = |nodes: u32, t: Vec<magic::trace::Slice>| {
        trace.then(|| magic::trace::Chrome::new(nodes, t))
    };
    if let Some(m) = &s.miss {
        let coh = s.coherence.params(s.costs.coherence);
        let (r, m) = miss(m, p, coh)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.sharing {
        untraced(trace, SHARING_TRACE)?;
        let coh = s.coherence.params(s.costs.coherence);
        return Ok((sharing(x, p, coh)?, None));
    }
    if let Some(f) = &s.fetch_op {
        let (r, m) = fetch_op(f, p, user_params(&s.costs))?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.pipeline {
        let (r, m) = pipeline(x, s.machine.budget, trace)?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.remap {
        let (r, m) = remap(x, p, user_params(&s.costs))?;
        return Ok((r, chrome(m.nodes(), m.trace())));
    }
    if let Some(x) = &s.suite {
        untraced(trace, SUITE_TRACE)?;
        return suite(x, s).map(|r| (r, None));
    }
    if let Some(c) = &s.messaging_costs {
        untraced(trace, COSTS_TRACE)?;
        return messaging_costs(c).map(|r| (r, None));
    }
    if let Some(l) = &s.logp {
        untraced(trace, LOGP_TRACE)?;
        return logp(l, s).map(|r| (r, None));
    }
    if let Some(x) = &s.study {
        let (row, m) = study_point(x, s, trace)?;
        return Ok((row.report(), m.map(|m| magic::trace::Chrome::new(m.0, m.1))));
    }
    let Some(t) = &s.transfer else {
        return Err(RunError::Kinds(s.kinds()));
    };
    transfer(&t.config_in(s, trace), trace)
}

/// Run a transfer's configuration as it stands; with `trace`, its
/// timelines come back as Chrome trace-event JSON.
fn transfer(
    c: &protocols::transfer::Config,
    trace: bool,
) -> Result<(Report, Option<magic::trace::Chrome>), RunError> {
    let r = protocols::transfer::run_with_machine(c)?;
    let json = r.json();
    crate::invariants::check(&json, &[&r.ledger], c.params.pp_issue_width)?;
    let tr = trace.then(|| magic::trace::Chrome::new(r.machine.nodes(), r.machine.trace()));
    // Without coherence, stale data is the result being measured, not a
    // failure of the model.
    let checked = c.mode != protocols::transfer::Mode::None;
    let failed = (checked && (!r.data_ok || r.incoherent.is_some()))
        .then(|| "the transfer left wrong data or incoherent caches".to_string());
    Ok((
        Report {
            json,
            table: r.to_string(),
            failed,
        },
        tr,
    ))
}

/// A saved result the kit can run again: the JSON `flashkit run --format
/// json` prints for an experiment whose result carries its configuration
/// (`config`) and the kit's version (`version`), or `flashkit study
/// coherence` or `flashkit check` prints, read back whole.
#[derive(Clone, Debug, PartialEq)]
pub enum Saved {
    /// A transfer's result.
    Transfer(Box<protocols::transfer::Outcome>),
    /// A read miss's result.
    Miss(Box<coherence::miss::MissRun>),
    /// The pipeline workload's run.
    Pipeline(Box<protocols::pipeline::PipelineRun>),
    /// A remote fetch-and-add's result.
    FetchOp(Box<protocols::user::experiments::FetchOpResult>),
    /// A remap's result.
    Remap(Box<protocols::user::experiments::RemapResult>),
    /// The sharing workload's result.
    Sharing(Box<coherence::sharing::SharingRun>),
    /// A platform's LogP figures.
    Logp(Box<protocols::am::suite::LogpResult>),
    /// The benchmark suite's tables.
    Suite(Box<protocols::am::suite::SuiteResult>),
    /// The messaging cost study's counts.
    Costs(Box<protocols::am::costs::FeatureCosts>),
    /// One row of the coherence-mode study (a `[study]` scenario's result).
    StudyRow(Box<Row>),
    /// The coherence-mode study, whole.
    Study(Box<Study>),
    /// An exhaustive check's report.
    Check(Box<crate::check::CheckReport>),
}

/// The experiments whose saved results [`Saved::read`] takes, and the keys
/// only that experiment's result has.
const SAVED: [(&str, &[&str]); 12] = [
    ("transfer", &["per_line_cycles"]),
    ("miss", &["case"]),
    ("pipeline", &["sum_latency"]),
    ("fetch-and-add", &["startup_cycles"]),
    ("remap", &["technique"]),
    ("sharing workload", &["per_invalidation"]),
    ("LogP measurement", &["ring_us"]),
    ("suite", &["tables"]),
    ("cost study", &["features"]),
    ("study row", &["coherence_messages"]),
    ("study", &["rows", "refused"]),
    ("check", &["runs", "violations"]),
];

/// The experiments [`SAVED`] names, in words: "transfer, a miss ... or a
/// remap".
fn saved_kinds() -> String {
    let kinds = SAVED.map(|k| k.0);
    match kinds.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or a {last}", rest.join(", a ")),
        None => String::new(),
    }
}

/// Why a JSON text is not a result the kit can run again.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    Json(serde_json::Error),
    /// JSON whose object gives a key twice (which of the two a result
    /// means, the file does not say).
    #[error("{0}")]
    Twice(serde_json::Error),
    /// JSON, but no experiment's result that carries its configuration.
    #[error(
        "not a result flashkit can rerun: that is the JSON `flashkit run` (or `study`, or \
         `check`) prints with `--format json` for a {}, with its `config` and `version`",
        saved_kinds()
    )]
    NotAResult,
    /// An experiment's result, but one it cannot read back (a field
    /// missing or unknown, or a figure its counts do not give).
    #[error("a {kind} result that does not read back: {}{error}", field_prefix(.field))]
    Bad {
        /// The experiment.
        kind: &'static str,
        /// Where in the result, dotted (`config.target`); empty for the
        /// result as a whole.
        field: String,
        /// What is wrong there.
        error: serde_json::Error,
    },
}

/// `field: ` before a saved result's error, or nothing for the whole.
fn field_prefix(field: &str) -> String {
    match field {
        "" | "." => String::new(),
        f => format!("{f}: "),
    }
}

/// The dotted path in `v` that ends with `key` (one key, or dotted), if
/// exactly one does.
fn only_path(v: &serde_json::Value, key: &str) -> Option<String> {
    fn walk(v: &serde_json::Value, key: &str, at: &str, out: &mut Vec<String>) {
        if let Some(m) = v.as_object() {
            for (k, x) in m {
                let p = crate::json::dotted(at, k);
                if p == key || p.ends_with(&format!(".{key}")) {
                    out.push(p.clone());
                }
                walk(x, key, &p, out);
            }
        }
    }
    let mut found = Vec::new();
    walk(v, key, "", &mut found);
    match found.len() {
        1 => found.pop(),
        _ => None,
    }
}

/// Where in a saved configuration `config` (its JSON) the field a refusal
/// names is held, as [`Saved::path_of`] says it.
fn config_path(config: &serde_json::Value, field: &str) -> Option<String> {
    let parts: Vec<&str> = field.split('.').collect();
    let kept = match parts[..] {
        ["costs", sheet, ref rest @ ..] if !rest.is_empty() => {
            Some(format!("{sheet}.costs.{}", rest.join(".")))
        }
        // A transfer's chunk is its chunked handler's argument.
        ["chunk"] => Some("handler.Chunked".into()),
        _ => None,
    };
    kept.into_iter()
        .chain((0..parts.len()).map(|i| parts[i..].join(".")))
        .find_map(|k| only_path(config, &k))
        .map(|p| format!("config.{p}"))
}

/// A result's refusal of its configuration's value (`config.entries must
/// be ...`, the field as the check names it) placed where the saved JSON
/// holds the value (`config.user.tlb.entries`), as a rerun's refusal is;
/// any other refusal as it is.
fn at_config_path(e: SavedError, config: &serde_json::Value) -> SavedError {
    use serde::de::Error as _;
    let SavedError::Bad { kind, field, error } = e else {
        return e;
    };
    let msg = error.to_string();
    let placed = (field.is_empty() || field == ".")
        .then(|| msg.strip_prefix("config.")?.split_once(" must be "))
        .flatten()
        .and_then(|(name, rest)| Some((config_path(config, name)?, rest)));
    match placed {
        Some((at, rest)) => SavedError::Bad {
            kind,
            field: at,
            error: serde_json::Error::custom(format!("must be {rest}")),
        },
        None => SavedError::Bad { kind, field, error },
    }
}

/// A saved result's JSON as a `T`, or where in it and why not.
fn read_as<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
    kind: &'static str,
) -> Result<T, SavedError> {
    serde_path_to_error::deserialize(v).map_err(|e| SavedError::Bad {
        kind,
        field: e.path().to_string(),
        error: e.into_inner(),
    })
}

impl Saved {
    /// Read a saved result: JSON whose top level carries `config` and
    /// `version` beside one experiment's result, every figure what its
    /// counts give.
    ///
    /// ```
    /// use flashkit::protocols::transfer::{run, Config};
    /// use flashkit::scenario::Saved;
    /// let o = run(&Config::default()).unwrap();
    /// let saved = Saved::read(&o.json().to_string()).unwrap();
    /// assert_eq!(saved, Saved::Transfer(Box::new(o)));
    /// assert!(Saved::read("{\"bytes\": 4096}").is_err());
    /// ```
    pub fn read(text: &str) -> Result<Saved, SavedError> {
        let mut v = crate::json::parse(text).map_err(|e| match e.is_data() {
            true => SavedError::Twice(e),
            false => SavedError::Json(e),
        })?;
        let m = v.as_object_mut().ok_or(SavedError::NotAResult)?;
        // The wall-clock time a command prints beside a result is no part
        // of it.
        m.remove("wall_s");
        if !(m.contains_key("config") && m.contains_key("version")) {
            return Err(SavedError::NotAResult);
        }
        let kind = SAVED
            .iter()
            .find(|(_, keys)| keys.iter().all(|k| m.contains_key(*k)))
            .ok_or(SavedError::NotAResult)?
            .0;
        let config = m["config"].clone();
        let saved = Saved::read_kind(v, kind).map_err(|e| at_config_path(e, &config))?;
        // A key left out of the configuration, or given as `null` or as a
        // list for a table, would be read as its default or by position,
        // and the rerun would be of another configuration than the one
        // measured: every key the result writes must be there, as written.
        if let Some((key, why)) = crate::json::unlike(&config, &saved.json()["config"], "config") {
            use serde::de::Error as _;
            return Err(SavedError::Bad {
                kind,
                field: key,
                error: serde_json::Error::custom(format!(
                    "{why}: a saved result's configuration gives every key as it was \
                     written, so that a rerun runs what was measured"
                )),
            });
        }
        Ok(saved)
    }

    /// The result of experiment `kind` (one of [`SAVED`]'s) in `v`.
    fn read_kind(v: serde_json::Value, kind: &'static str) -> Result<Saved, SavedError> {
        match kind {
            "transfer" => Ok(Saved::Transfer(Box::new(read_as(v, kind)?))),
            "miss" => Ok(Saved::Miss(Box::new(read_as(v, kind)?))),
            "pipeline" => Ok(Saved::Pipeline(Box::new(read_as(v, kind)?))),
            "fetch-and-add" => Ok(Saved::FetchOp(Box::new(read_as(v, kind)?))),
            "remap" => Ok(Saved::Remap(Box::new(read_as(v, kind)?))),
            "sharing workload" => Ok(Saved::Sharing(Box::new(read_as(v, kind)?))),
            "LogP measurement" => Ok(Saved::Logp(Box::new(read_as(v, kind)?))),
            "suite" => Ok(Saved::Suite(Box::new(read_as(v, kind)?))),
            "cost study" => Ok(Saved::Costs(Box::new(read_as(v, kind)?))),
            "study row" => Ok(Saved::StudyRow(Box::new(read_as(v, kind)?))),
            "study" => Ok(Saved::Study(Box::new(read_as(v, kind)?))),
            "check" => Ok(Saved::Check(Box::new(read_as(v, kind)?))),
            _ => Err(SavedError::NotAResult),
        }
    }

    /// The configuration's field that plants a known bug in the handlers
    /// (`inject`, `coherence.inject`, `user.inject`), if one does: a
    /// library's run for testing a checker, which no scenario can hold
    /// and [`rerun`] refuses. An exhaustive check's own planted bug
    /// (`flashkit check --inject`) is no such field.
    pub fn planted(&self) -> Option<&'static str> {
        let transfer = |c: &protocols::transfer::Config| {
            [
                ("inject", c.inject.is_some()),
                ("coherence.inject", c.coherence.inject.is_some()),
            ]
            .into_iter()
            .find(|x| x.1)
            .map(|x| x.0)
        };
        let coherence = |c: &coherence::CohParams| c.inject.is_some().then_some("coherence.inject");
        let user = |u: &protocols::user::UserParams| u.inject.is_some().then_some("user.inject");
        match self {
            Saved::Transfer(o) => transfer(&o.config),
            Saved::Miss(r) => coherence(&r.config.coherence),
            Saved::FetchOp(r) => user(&r.config.user),
            Saved::Remap(r) => user(&r.config.user),
            Saved::Sharing(r) => coherence(&r.config.coherence),
            Saved::StudyRow(r) => transfer(&r.config),
            Saved::Study(s) => transfer(&s.config.base),
            Saved::Pipeline(_)
            | Saved::Logp(_)
            | Saved::Suite(_)
            | Saved::Costs(_)
            | Saved::Check(_) => None,
        }
    }

    /// Where in the saved JSON a configuration field a refusal names
    /// (an [`magic::OutOfRange`]'s, as a scenario names it) is held, as a
    /// dotted path from the top (`config.user.tlb.entries`), if one place
    /// is: the field as named, as a layer keeps its sheet
    /// (`costs.coherence.decode` is `coherence.costs.decode`), else its
    /// shorter tails (`costs.os.change` is `user.os.change`).
    ///
    /// ```
    /// use flashkit::scenario::{fetch_op, FetchOp, Saved};
    /// let r = fetch_op(&FetchOp::default(), Default::default(), Default::default()).unwrap();
    /// let saved = Saved::read(&r.0.json.to_string()).unwrap();
    /// assert_eq!(saved.path_of("entries").as_deref(), Some("config.user.tlb.entries"));
    /// assert_eq!(saved.path_of("costs.os.change").as_deref(), Some("config.user.os.change"));
    /// ```
    pub fn path_of(&self, field: &str) -> Option<String> {
        config_path(&self.json()["config"], field)
    }

    /// The version of the kit that measured it.
    pub fn version(&self) -> &str {
        match self {
            Saved::Transfer(o) => &o.version,
            Saved::Miss(r) => &r.version,
            Saved::Pipeline(r) => &r.version,
            Saved::FetchOp(r) => &r.version,
            Saved::Remap(r) => &r.version,
            Saved::Sharing(r) => &r.version,
            Saved::Logp(r) => &r.version,
            Saved::Suite(r) => &r.version,
            Saved::Costs(r) => &r.version,
            Saved::StudyRow(r) => &r.version,
            Saved::Study(s) => &s.version,
            Saved::Check(r) => &r.version,
        }
    }

    /// The result as JSON, as it was saved.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Saved::Transfer(o) => o.json(),
            Saved::Miss(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Pipeline(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::FetchOp(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Remap(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Sharing(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Logp(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Suite(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Costs(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::StudyRow(r) => serde_json::to_value(r).unwrap_or_default(),
            Saved::Study(s) => serde_json::to_value(s).unwrap_or_default(),
            Saved::Check(r) => serde_json::to_value(r).unwrap_or_default(),
        }
    }
}

/// Run a saved result's configuration again: the same report a scenario
/// with that configuration gives (with this kit's version), and with
/// `trace` the run's timelines. The kit that measured it gives an equal
/// result.
pub fn rerun(
    saved: &Saved,
    trace: bool,
) -> Result<(Report, Option<magic::trace::Chrome>), RunError> {
    if let Some(field) = saved.planted() {
        return Err(RunError::Planted(field));
    }
    match saved {
        Saved::Transfer(o) => {
            // Whether timelines are recorded is this rerun's to say, as
            // for every experiment (it changes no figure).
            let mut c = o.config.clone();
            (c.trace, c.params.trace) = (trace, trace);
            transfer(&c, trace)
        }
        Saved::Miss(r) => {
            let c = &r.config;
            let (r, m) = miss_run(c.case, c.setup, tracing(&c.params, trace), c.coherence)?;
            Ok((r, timelines(&m, trace)))
        }
        Saved::Pipeline(r) => {
            let (r, m) = pipeline_run(&r.config, trace)?;
            Ok((r, timelines(&m, trace)))
        }
        Saved::FetchOp(r) => {
            let c = &r.config;
            let (r, m) = fetch_op_run(c.target, tracing(&c.params, trace), c.user)?;
            Ok((r, timelines(&m, trace)))
        }
        Saved::Remap(r) => {
            let c = &r.config;
            let (r, m) = remap_run(c.technique, tracing(&c.params, trace), c.user)?;
            Ok((r, timelines(&m, trace)))
        }
        Saved::Sharing(r) => {
            untraced(trace, SHARING_TRACE)?;
            let c = &r.config;
            let x = SharingCase {
                readers: c.sharing.readers,
                evicting: c.sharing.evicting,
            };
            Ok((sharing(&x, c.params.clone(), c.coherence)?, None))
        }
        Saved::Logp(r) => {
            untraced(trace, LOGP_TRACE)?;
            let r = protocols::am::suite::logp_config(&r.config)?;
            Ok((logp_report(&r)?, None))
        }
        Saved::Suite(r) => {
            untraced(trace, SUITE_TRACE)?;
            Ok((suite_run(&r.config)?, None))
        }
        Saved::Costs(r) => {
            untraced(trace, COSTS_TRACE)?;
            let r = protocols::am::costs::run_config(&r.config)?;
            Ok((costs_report(&r)?, None))
        }
        Saved::StudyRow(r) => {
            let mut c = r.config.clone();
            (c.trace, c.params.trace) = (trace, trace);
            let (row, m) = study_config(&r.point(), &c)?;
            Ok((row.report(), m.map(|m| magic::trace::Chrome::new(m.0, m.1))))
        }
        Saved::Study(s) => {
            untraced(trace, STUDY_TRACE)?;
            let c = &s.config;
            // The base gives the points their machine, sheets and options;
            // a shape of its own (bytes, direction, ...) no point would run.
            let first = StudyPoint {
                bytes: c.bytes,
                ..StudyPoint::default()
            };
            let want = serde_json::to_value(first.config_on(&c.base))?;
            let have = serde_json::to_value(&c.base)?;
            if let (Some(w), Some(h)) = (want.as_object(), have.as_object()) {
                if let Some(k) = h.keys().find(|k| w.get(*k) != h.get(*k)) {
                    return Err(RunError::StudyBase(k.clone()));
                }
            }
            // Point by point, in order (`study::run_config` runs them on
            // workers, to the same study).
            let mut s = Study::new(c.clone());
            for p in study_points(c.bytes) {
                s.add(&p, study_config(&p, &c.base))?;
            }
            Ok((
                Report {
                    json: serde_json::to_value(&s)?,
                    table: s.to_string(),
                    failed: None,
                },
                None,
            ))
        }
        Saved::Check(r) => {
            untraced(trace, CHECK_TRACE)?;
            let r = crate::check::run(&r.config, None)?;
            let failed = (r.violations > 0).then(|| {
                format!(
                    "check {}: {}",
                    r.config.check.name(),
                    r.violation.as_deref().unwrap_or("a violation")
                )
            });
            Ok((
                Report {
                    json: serde_json::to_value(&r)?,
                    table: r.to_string(),
                    failed,
                },
                None,
            ))
        }
    }
}

/// Why the suite is not traced.
const SUITE_TRACE: &str =
    "a trace records MAGIC's timelines: the suite runs the AM platforms' own machines";

/// Why the cost study is not traced.
const COSTS_TRACE: &str =
    "a trace records MAGIC's timelines: the cost study runs on the CM-5 model";

/// Refuse a trace, saying `why`, for an experiment that cannot give one.
fn untraced(trace: bool, why: &'static str) -> Result<(), RunError> {
    match trace {
        true => Err(RunError::Refused(why)),
        false => Ok(()),
    }
}

/// Why a LogP measurement is not traced.
const LOGP_TRACE: &str = "a trace records MAGIC's timelines: logp runs the AM suite's own machines";
/// Why a check cannot be traced.
const CHECK_TRACE: &str =
    "a trace records one run's timelines, and a check explores every order of its moves";

/// Why a whole study cannot be traced.
const STUDY_TRACE: &str =
    "a trace records one run's timelines, and a study is many: rerun one of its rows traced";

/// A MAGIC experiment's report, once its result and the ledgers its run
/// kept hold the rules every result keeps ([`crate::invariants`]).
fn checked(
    json: serde_json::Value,
    table: String,
    ledgers: &[&magic::Ledger],
    issue_width: u32,
) -> Result<Report, RunError> {
    crate::invariants::check(&json, ledgers, issue_width)?;
    ok(json, table)
}

fn ok(json: serde_json::Value, table: String) -> Result<Report, RunError> {
    Ok(Report {
        json,
        table,
        failed: None,
    })
}

/// Why an experiment of a scenario has no report: the model crates' own
/// errors, passed on as they are.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A value out of its range (the field named).
    #[error(transparent)]
    Range(#[from] magic::OutOfRange),
    /// The machine could not be built.
    #[error(transparent)]
    Build(#[from] magic::BuildError),
    /// The coherence protocol refused or stuck.
    #[error(transparent)]
    Coherence(#[from] coherence::Error),
    /// A platform or layer refused or stuck.
    #[error(transparent)]
    Protocols(#[from] protocols::Error),
    /// A result that could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The transfer refused its configuration or stopped with work pending.
    #[error(transparent)]
    Transfer(#[from] protocols::transfer::Failed),
    /// A combination the experiment does not serve.
    #[error("{0}")]
    Refused(&'static str),
    /// A scenario that holds no experiment, or more than one.
    #[error("{KINDS_ERROR} (found {0})")]
    Kinds(usize),
    /// The study's coherence mode cannot serve its point.
    #[error("mode: {0}")]
    Mode(String),
    /// The result breaks a rule every result keeps: a model bug, named.
    #[error(transparent)]
    Broken(#[from] crate::invariants::Broken),
    /// A check's configuration refused (the field named).
    #[error(transparent)]
    Check(#[from] crate::check::CheckError),
    /// A saved study whose base sets what its points set (the key named):
    /// its points would not run it.
    #[error(
        "config.base.{0}: a study's points set it (the base gives them only \
         the machine, the cost sheets and the coherence options; the bytes \
         are config.bytes)"
    )]
    StudyBase(String),
    /// A saved result whose configuration plants a known bug (the field
    /// named): see [`Saved::planted`].
    #[error(
        "config.{0}: a planted bug is for testing a checker (flashkit check --inject); \
         a rerun runs the handlers as built, as a scenario does"
    )]
    Planted(&'static str),
    /// A row or point added to a study ([`Study::add`]) that is not one of
    /// its points run on its base.
    #[error(
        "not one of the study's points: a transfer of config.bytes, run on the study's config.base"
    )]
    NotItsPoint,
    /// A key set away from its default that the experiment does not read
    /// (named, with why): it would change nothing, silently.
    #[error("{key}: {why}")]
    NotRead {
        /// The key, `machine.pi_out`.
        key: String,
        /// Why the experiment does not read it.
        why: String,
    },
}

impl RunError {
    /// The value out of range the error is, if it is one.
    pub fn range(&self) -> Option<&magic::OutOfRange> {
        use protocols::transfer::{ConfigError, Failed};
        match self {
            RunError::Range(e)
            | RunError::Build(magic::BuildError::Params(e))
            | RunError::Coherence(coherence::Error::OutOfRange(e))
            | RunError::Coherence(coherence::Error::Build(magic::BuildError::Params(e)))
            | RunError::Transfer(Failed::Config(ConfigError::Range(e)))
            | RunError::Protocols(protocols::Error::OutOfRange(e))
            | RunError::Protocols(protocols::Error::Network(e))
            | RunError::Protocols(protocols::Error::Build(magic::BuildError::Params(e)))
            | RunError::Protocols(protocols::Error::Coherence(coherence::Error::OutOfRange(e)))
            | RunError::Protocols(protocols::Error::Coherence(coherence::Error::Build(
                magic::BuildError::Params(e),
            )))
            | RunError::Check(crate::check::CheckError::Range(e)) => Some(e),
            _ => None,
        }
    }

    /// The model ran and the run is not clean (work left stuck, a message
    /// or step refused, a halt such as its cycle budget or the end of time
    /// reached, a figure breaking a rule every result keeps): exit status 1 at the
    /// command line, where bad input is 2.
    pub fn not_clean(&self) -> bool {
        use coherence::Error as C;
        use protocols::transfer::Failed;
        matches!(
            self,
            RunError::Broken(_)
                | RunError::Transfer(Failed::Stuck(_))
                | RunError::Coherence(C::Stuck { .. })
                | RunError::Protocols(protocols::Error::Incomplete(_))
                | RunError::Protocols(protocols::Error::OverBudget { .. })
                | RunError::Protocols(protocols::Error::Coherence(C::Stuck { .. }))
        )
    }

    /// The configuration field the error is about, if it is about one.
    pub fn field(&self) -> Option<&'static str> {
        // Every range error names its field, as `range` finds it.
        if let Some(e) = self.range() {
            return Some(e.field);
        }
        match self {
            RunError::Protocols(e) => e.field(),
            RunError::Transfer(protocols::transfer::Failed::Config(e)) => Some(e.field()),
            RunError::Mode(_) => Some("mode"),
            RunError::Planted(f) => Some(f),
            _ => None,
        }
    }
}

/// One read miss on a machine with `p` and the coherence protocol's `coh`;
/// the machine comes back beside the report.
pub fn miss(
    m: &Miss,
    p: magic::MagicParams,
    coh: coherence::CohParams,
) -> Result<(Report, magic::Magic<coherence::CohNode>), RunError> {
    miss_run(m.case(), m.setup(), p, coh)
}

/// One read miss of `case` in `setup`: its report (the JSON its result
/// serializes to) and the machine.
fn miss_run(
    case: coherence::miss::Case,
    setup: coherence::miss::Setup,
    p: magic::MagicParams,
    coh: coherence::CohParams,
) -> Result<(Report, magic::Magic<coherence::CohNode>), RunError> {
    let (r, machine) = coherence::miss::run_with_machine(case, setup, p.clone(), coh)?;
    let table = format!(
        "{}: {} cycles ({:.2} us)\n\n{}",
        case.name(),
        r.latency,
        r.latency_us(),
        r.ledger.render()
    );
    with(
        machine,
        checked(
            serde_json::to_value(&r)?,
            table,
            &[&r.ledger],
            p.pp_issue_width,
        ),
    )
}

/// Why a sharing workload is not traced.
const SHARING_TRACE: &str = "the sharing workload reports its phases' ledgers, not a trace";

/// A figure per hint or per invalidation as the table prints it: one
/// decimal, or "none" when there was nothing to divide among.
fn per_one(x: Option<f64>) -> String {
    x.map_or_else(|| "none".to_string(), |x| format!("{x:.1}"))
}

/// Run the sharing workload.
pub fn sharing(
    x: &SharingCase,
    p: magic::MagicParams,
    coh: coherence::CohParams,
) -> Result<Report, RunError> {
    let width = p.pp_issue_width;
    let r = coherence::sharing::run(x.workload(), p, coh)?;
    let table = format!(
        "sharing: {} readers, {} evicting, directory {}, hints {}\n\
         hints: {} taken, {} home cycles, {} per hint\n\
         write: {} invalidations, {} home cycles, {} per invalidation; latency {} cycles ({} links in use before it, {} lists reclaimed)\n\n\
         == hints\n{}\n== write\n{}",
        x.readers,
        x.evicting,
        coh.format.name(),
        coh.hints,
        r.hints,
        r.hint_cycles,
        per_one(r.per_hint()),
        r.invalidations,
        r.write_cycles,
        per_one(r.per_invalidation()),
        r.write_latency,
        r.links,
        r.reclaims,
        r.hint_ledger.render(),
        r.write_ledger.render()
    );
    checked(
        serde_json::to_value(&r)?,
        table,
        &[&r.hint_ledger, &r.write_ledger],
        width,
    )
}

fn with<M>(m: M, r: Result<Report, RunError>) -> Result<(Report, M), RunError> {
    r.map(|r| (r, m))
}

/// The user layer's parameters with a scenario's cost sheets.
fn user_params(costs: &CostTables) -> protocols::user::UserParams {
    protocols::user::UserParams {
        costs: costs.user,
        command: costs.command,
        os: costs.os,
        ..Default::default()
    }
}

/// A remote fetch-and-add through a command sequence; the machine comes
/// back beside the report.
pub fn fetch_op(
    f: &FetchOp,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), RunError> {
    let target = f.remote_node;
    let most = protocols::am::Machines::Flash.max_nodes() - 1;
    magic::OutOfRange::check("remote_node", target, 0, most)?;
    user.validate()?;
    fetch_op_run(target, p, user)
}

/// A fetch-and-add at node `target`: its report (the JSON its result
/// serializes to) and the machine.
fn fetch_op_run(
    target: u32,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), RunError> {
    let width = p.pp_issue_width;
    let run = protocols::user::experiments::fetch_op_with(target, p, user)?;
    let r = run.result();
    let (old, new, startup, latency) = (r.old, r.new, r.startup, r.latency);
    let table = format!(
        "fetch-and-add at node {target}: old value {old}, new {new}\nstart-up  {startup} cycles\nlatency   {latency} cycles\n\n{}",
        r.ledger.render()
    );
    with(
        run.machine,
        checked(serde_json::to_value(&r)?, table, &[&r.ledger], width),
    )
}

/// A messaging protocol's instruction counts on the CM-5 model, by feature.
pub fn messaging_costs(c: &MessagingCosts) -> Result<Report, RunError> {
    costs_report(&protocols::am::costs::run_config(&c.config())?)
}

/// A cost study's report: the JSON its result serializes to, its table.
fn costs_report(r: &protocols::am::costs::FeatureCosts) -> Result<Report, RunError> {
    ok(serde_json::to_value(r)?, r.to_string())
}

/// The platform a `logp` or `suite` names, with the scenario's costs and
/// networks (and `[machine]` for FLASH), as data.
pub fn platform_config(
    k: PlatformKind,
    nodes: u32,
    s: &Scenario,
) -> protocols::am::config::PlatformConfig {
    use protocols::am::config::PlatformConfig;
    let c = &s.costs;
    let (cm5, sp) = (s.network.cm5, s.network.sp);
    match k {
        PlatformKind::Cm5 => PlatformConfig::Cm5 {
            nodes,
            costs: c.cmam,
            network: cm5,
        },
        PlatformKind::Cm5Cmaml => PlatformConfig::Cm5Cmaml {
            nodes,
            costs: c.cmaml,
            network: cm5,
        },
        PlatformKind::Sp => PlatformConfig::Sp {
            nodes,
            costs: c.sp,
            network: sp,
        },
        PlatformKind::Flash => PlatformConfig::Flash {
            nodes,
            costs: c.am,
            command: c.command,
            machine: s.machine.clone(),
        },
    }
}

/// The platform a `logp` or `suite` names, with the scenario's costs and
/// networks (and `[machine]` for FLASH): [`platform_config`]'s, built.
pub fn platform(
    k: PlatformKind,
    nodes: u32,
    s: &Scenario,
) -> Result<Box<dyn protocols::am::Platform>, protocols::Error> {
    platform_config(k, nodes, s).build()
}

/// A platform's LogP figures from the benchmark suite.
pub fn logp_figures(l: &Logp, s: &Scenario) -> Result<protocols::am::suite::LogP, RunError> {
    let plat = platform(l.platform, l.nodes, s)?;
    Ok(protocols::am::suite::logp(plat.as_ref())?)
}

/// A platform's LogP figures as a report.
pub fn logp(l: &Logp, s: &Scenario) -> Result<Report, RunError> {
    let c = platform_config(l.platform, l.nodes, s);
    logp_report(&protocols::am::suite::logp_config(&c)?)
}

/// A LogP result's report: the JSON it serializes to, its table.
fn logp_report(r: &protocols::am::suite::LogpResult) -> Result<Report, RunError> {
    use std::fmt::Write as _;
    let f = &r.logp;
    use magic::figures::{text, Figure};
    let mut t = format!("platform {} ({} nodes)\n", f.platform, r.config.nodes());
    for (k, kind, v, unit) in [
        (
            "send overhead (one-to-two)",
            Figure::Us,
            f.send_overhead_us,
            "us",
        ),
        (
            "reply overhead (one-to-two)",
            Figure::Us,
            f.reply_overhead_us,
            "us",
        ),
        (
            "receive overhead (two-to-one)",
            Figure::Us,
            f.recv_overhead_us,
            "us",
        ),
        ("empty poll", Figure::Us, f.poll_empty_us, "us"),
        ("poll taking one message", Figure::Us, f.poll_one_us, "us"),
        ("round trip, node 0 to 1", Figure::Us, f.round_trip_us, "us"),
        ("ring, per message", Figure::Us, f.ring_us, "us"),
        ("bulk start-up", Figure::Us, f.bulk.startup_us, "us"),
        ("bulk bandwidth", Figure::MbS, f.bulk.bandwidth_mb_s, "MB/s"),
        ("bulk n1/2", Figure::Cycles, f.bulk.n_half_bytes, "bytes"),
    ] {
        let _ = writeln!(t, "  {k:<32} {:>8} {unit}", text(kind, v));
    }
    ok(serde_json::to_value(r)?, t)
}

/// The pipeline workload: the peers' simulated results and the ledger (the
/// command adds the event loop's wall time, which is not the model's). Its
/// machine is the workload's own ([`protocols::pipeline::pipeline_params`]),
/// run within `budget` cycles (a scenario's `[machine] budget`).
pub fn pipeline(
    x: &Pipeline,
    budget: magic::Cycles,
    trace: bool,
) -> Result<(Report, magic::Magic<protocols::pipeline::PipeNode>), RunError> {
    let cfg = protocols::pipeline::PipelineConfig {
        budget,
        ..x.config()
    };
    pipeline_run(&cfg, trace)
}

/// The pipeline workload `cfg` (within its cycle budget): its report (the
/// JSON its run serializes to) and the machine.
fn pipeline_run(
    cfg: &protocols::pipeline::PipelineConfig,
    trace: bool,
) -> Result<(Report, magic::Magic<protocols::pipeline::PipeNode>), RunError> {
    let mut m = protocols::pipeline::build(cfg)?;
    if trace {
        m.trace_on();
    }
    let report = m.run();
    if let Some(h) = &report.halted {
        // A halted run's figures are no result: none is printed.
        return Err(protocols::Error::Incomplete(h.to_string()).into());
    }
    let failed = (!report.is_clean())
        .then(|| format!("the run is not clean: {}", report.problems().join("; ")));
    let run = protocols::pipeline::summary(cfg, &m, report);
    let json = serde_json::to_value(&run)?;
    crate::invariants::check(&json, &[&run.ledger], m.params().pp_issue_width)?;
    let (r, ledger) = (run.result, run.ledger);
    let report = Report {
        json,
        table: format!(
            "pipeline: {} nodes x {} messages, {:?}\ncompletion      {} cycles\nsum_completion  {}\nsum_latency     {}\nevents          {}\n\n{}",
            cfg.nodes,
            cfg.msgs,
            cfg.pattern,
            r.completion,
            r.sum_completion,
            r.sum_latency,
            r.events,
            ledger.summed().render()
        ),
        failed,
    };
    Ok((report, m))
}

/// A copy or send with a translation change in the middle; the machine
/// comes back beside the report.
pub fn remap(
    x: &Remap,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), RunError> {
    user.validate()?;
    remap_run(x.technique.technique(), p, user)
}

/// A remap with technique `t`: its report (the JSON its result serializes
/// to) and the machine.
fn remap_run(
    t: protocols::user::experiments::Technique,
    p: magic::MagicParams,
    user: protocols::user::UserParams,
) -> Result<(Report, magic::Magic<protocols::user::UserNode>), RunError> {
    let (r, m) = protocols::user::experiments::remap_with(t, p, user)?;
    let json = serde_json::to_value(&r)?;
    crate::invariants::check(&json, &[&r.ledger], m.params().pp_issue_width)?;
    let report = Report {
        json,
        table: format!("{r}\n{}", r.ledger.render()),
        failed: (!r.data_ok).then(|| "the destination does not hold the source's bytes".into()),
    };
    Ok((report, m))
}

/// The benchmark suite's tables for a platform (one benchmark, or all).
pub fn suite(x: &Suite, s: &Scenario) -> Result<Report, RunError> {
    let c = protocols::am::suite::SuiteConfig {
        platform: platform_config(x.platform, x.nodes, s),
        benchmark: x.benchmark.clone(),
    };
    suite_run(&c)
}

/// The suite a configuration describes, run: its report.
fn suite_run(c: &protocols::am::suite::SuiteConfig) -> Result<Report, RunError> {
    use protocols::am::{config::PlatformConfig, suite};
    let cmaml = matches!(c.platform, PlatformConfig::Cm5Cmaml { .. });
    if c.benchmark.as_deref() == Some("interrupt") && !cmaml {
        return Err(RunError::Range(magic::OutOfRange::new(
            "benchmark",
            format!(
                "a benchmark of this platform ({})",
                suite::INTERRUPT_IS_CMAMLS
            ),
            "interrupt",
        )));
    }
    // Past the machine's most, the range said starts at the benchmark's
    // least (the machine's own least is below it); below the benchmark's
    // least, the benchmark names itself.
    if c.platform.nodes() > c.platform.machine().max_nodes() {
        suite::check_nodes(&c.platform, suite::least_nodes(c.benchmark.as_deref()))?;
    }
    let r = suite::run(c)?;
    ok(serde_json::to_value(&r)?, r.to_string())
}

/// A saved configuration's machine, recording its timelines when `trace`.
fn tracing(params: &magic::MagicParams, trace: bool) -> magic::MagicParams {
    magic::MagicParams {
        trace,
        ..params.clone()
    }
}

/// A rerun machine's timelines as Chrome trace-event JSON, when asked for.
fn timelines<S: magic::NodeState>(
    m: &magic::Magic<S>,
    trace: bool,
) -> Option<magic::trace::Chrome> {
    trace.then(|| magic::trace::Chrome::new(m.nodes(), m.trace()))
}
