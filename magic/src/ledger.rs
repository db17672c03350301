//! The occupancy ledger: where each node's cycles went.
//!
//! Per node and per handler: invocations, busy cycles, mean and max cycles per
//! invocation, the cycles of stalls inside them, and their share of the PP's
//! time. Per unit (inbox, PP, outbox, memory, processor-cache interface,
//! network out): operations, busy cycles, utilization over the run, and the
//! cycles work waited for the unit (the inbox's: the PP's arbitration;
//! memory's and the processor-cache interface's: behind another handler's
//! transfer).
//! A [`Ledger`] is a plain report: its `Display` is the handler table alone,
//! [`Ledger::render`] both tables, its `Serialize` the JSON; tables and JSON
//! round figures the one way [`crate::figures`] says. Columns have fixed
//! widths, so one row's values never re-pad another.
//!
//! What every ledger satisfies, whatever the run did, is stated and checked
//! in one place, [`Ledger::invariants`].

use crate::figures::{self, line, text, Figure};
use crate::time::Cycles;
use serde::{Deserialize, Serialize};

/// Live counters of one handler on one node (one cache line: a dispatch
/// adds to all of them at once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[repr(align(64))]
pub struct HandlerStats {
    /// Times the handler ran.
    pub invocations: u64,
    /// Cycles the PP spent in this handler, stalls included.
    pub busy: u64,
    /// Longest single invocation, in cycles.
    pub max: u64,
    /// Cycles stalled on a full outbox lane.
    pub outbox_stall: u64,
    /// Cycles stalled waiting for memory, the processor cache or a data-cache miss.
    pub wait: u64,
    /// Instructions charged (dual-issued, so usually about twice the issue cycles).
    pub instructions: u64,
    /// MAGIC data-cache loads.
    pub loads: u64,
    /// MAGIC data-cache stores.
    pub stores: u64,
}

/// How counters are added when rows are summed over the nodes: exactly
/// (`None` past 2^64 - 1: a ledger read back is refused) or stopping at
/// 2^64 - 1 (a ledger built by hand is still summed).
type Sum = fn(u64, u64) -> Option<u64>;

impl HandlerStats {
    /// The rules one handler's counters keep on a PP issuing `issue_width`
    /// instructions a cycle, whatever its run did (listed in
    /// [`Ledger::invariants`]); the rule broken and the figures that break
    /// it otherwise. Every experiment's report is held to them
    /// (`flashkit::invariants`), as every ledger is.
    ///
    /// ```
    /// use magic::HandlerStats;
    /// let s = HandlerStats { invocations: 2, busy: 10, max: 6, instructions: 18, loads: 3, stores: 1, ..HandlerStats::default() };
    /// assert_eq!(s.invariants(2), Ok(()));
    /// let (rule, _) = s.invariants(1).unwrap_err();
    /// assert_eq!(rule, "instructions ≤ issue width × (busy − wait − outbox stall)");
    /// ```
    pub fn invariants(&self, issue_width: u32) -> Result<(), (&'static str, String)> {
        let (inv, busy, max) = (
            self.invocations as u128,
            self.busy as u128,
            self.max as u128,
        );
        if inv < 1 || busy < inv {
            return Err((
                "1 ≤ invocations ≤ busy",
                format!("{inv} invocations, {busy} busy"),
            ));
        }
        if max < 1 || max > busy || busy > inv * max {
            return Err((
                "1 ≤ max ≤ busy ≤ invocations × max",
                format!("{max} max, {busy} busy, {inv} invocations"),
            ));
        }
        let (wait, stall) = (self.wait as u128, self.outbox_stall as u128);
        if wait + stall > busy {
            return Err((
                "wait + outbox stall ≤ busy",
                format!("{wait} wait, {stall} outbox stall, {busy} busy"),
            ));
        }
        let instrs = self.instructions as u128;
        if instrs > issue_width as u128 * (busy - wait - stall) {
            return Err((
                "instructions ≤ issue width × (busy − wait − outbox stall)",
                format!(
                    "{instrs} instructions, {issue_width}-issue, {busy} busy, \
                     {wait} wait, {stall} outbox stall"
                ),
            ));
        }
        if self.loads as u128 + self.stores as u128 > instrs {
            return Err((
                "loads + stores ≤ instructions",
                format!(
                    "{} loads, {} stores, {instrs} instructions",
                    self.loads, self.stores
                ),
            ));
        }
        Ok(())
    }

    /// Add `o`'s counters to these by `sum` (the longest invocation is the
    /// longer); `None` where `sum` refuses one.
    fn add(&mut self, o: &HandlerStats, sum: Sum) -> Option<()> {
        self.invocations = sum(self.invocations, o.invocations)?;
        self.busy = sum(self.busy, o.busy)?;
        self.max = self.max.max(o.max);
        self.outbox_stall = sum(self.outbox_stall, o.outbox_stall)?;
        self.wait = sum(self.wait, o.wait)?;
        self.instructions = sum(self.instructions, o.instructions)?;
        self.loads = sum(self.loads, o.loads)?;
        self.stores = sum(self.stores, o.stores)?;
        Some(())
    }

    /// Mean cycles per invocation (0 if the handler never ran).
    pub fn mean(&self) -> f64 {
        if self.invocations == 0 {
            0.0
        } else {
            self.busy as f64 / self.invocations as f64
        }
    }
}

/// One handler's row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandlerRow {
    /// `None` for a row summed over all nodes.
    pub node: Option<u32>,
    /// The handler's name, `protocol.handler`.
    pub handler: String,
    /// The handler's counters (flattened into the row in JSON).
    #[serde(flatten)]
    pub stats: HandlerStats,
    /// Mean cycles per invocation (JSON: rounded as [`figures`] says).
    #[serde(serialize_with = "figures::ser_frac_cycles")]
    pub mean: f64,
    /// Share of the node's (or all nodes') PP time spent in this handler
    /// (JSON: rounded as [`figures`] says).
    #[serde(serialize_with = "figures::ser_share")]
    pub pp_share: f64,
}

impl HandlerRow {
    /// The row of `handler`'s counters: its mean and its share of `span`
    /// PP cycles ([`Ledger::span`]) computed from them, the one place they
    /// are.
    pub fn new(node: Option<u32>, handler: String, stats: HandlerStats, span: f64) -> HandlerRow {
        HandlerRow {
            node,
            handler,
            mean: stats.mean(),
            pp_share: stats.busy as f64 / span,
            stats,
        }
    }
}

/// The pipeline units, in the order the report lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// The inbox: dispatching messages from the input queues to the PP.
    Inbox,
    /// The protocol processor, running handlers.
    Pp,
    /// The outbox: packets waiting for the wire.
    Outbox,
    /// Main memory's data bus.
    Memory,
    /// The interface to the compute processor's cache (interventions).
    PcacheIf,
    /// The outgoing network link (the wire).
    NetOut,
}

impl Unit {
    /// Every unit, in the order the report lists them.
    pub const ALL: [Unit; 6] = [
        Unit::Inbox,
        Unit::Pp,
        Unit::Outbox,
        Unit::Memory,
        Unit::PcacheIf,
        Unit::NetOut,
    ];

    /// The unit's name in the report (`pcache-if`, `net-out`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Inbox => "inbox",
            Unit::Pp => "pp",
            Unit::Outbox => "outbox",
            Unit::Memory => "memory",
            Unit::PcacheIf => "pcache-if",
            Unit::NetOut => "net-out",
        }
    }
}

/// One unit's row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnitRow {
    /// `None` for a row summed over all nodes.
    pub node: Option<u32>,
    /// Which unit.
    pub unit: Unit,
    /// Messages dispatched, handler invocations, packets, line transfers...
    pub ops: u64,
    /// Cycles the unit was busy: PP running handlers, outbox holding a
    /// packet that waits for the wire, memory data bus, processor-cache
    /// interface, wire. The inbox's stage is pipelined: its busy is the
    /// stage's latency for each message dispatched, messages in the stage
    /// at once each counting, so it can pass the cycles elapsed.
    pub busy: u64,
    /// `busy` over the elapsed cycles (times nodes, for a summed row; JSON:
    /// rounded as [`figures`] says).
    #[serde(serialize_with = "figures::ser_share")]
    pub utilization: f64,
    /// Cycles messages, packets or transfers spent waiting for this unit
    /// (inbox: time in the input queues once through its stage, the PP's
    /// arbitration between them; outbox: time a handler stalled on a full
    /// lane; memory and processor-cache interface: time a transfer waited
    /// while another handler's held the unit, a handler's own transfers
    /// queuing behind each other being its own pace).
    pub waiting: u64,
}

impl UnitRow {
    /// The row of a unit's counters: its utilization over `span` cycles
    /// ([`Ledger::span`]) computed from them, the one place it is.
    pub fn new(
        node: Option<u32>,
        unit: Unit,
        ops: u64,
        busy: u64,
        waiting: u64,
        span: f64,
    ) -> UnitRow {
        UnitRow {
            node,
            unit,
            ops,
            busy,
            utilization: busy as f64 / span,
            waiting,
        }
    }
}

/// The occupancy report of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ledger {
    /// Cycles the report covers (10 ns each): from the counters' start to
    /// the last event.
    pub elapsed: Cycles,
    /// Cycles from the counters' start to the end of the last busy interval
    /// they count: `elapsed`, or more when work was booked past the last
    /// event (a memory write or the processor interface still streaming a
    /// line, a handler running when a limit stopped the run), which the
    /// counters hold whole. Every unit but the inbox was busy within it
    /// ([`Ledger::invariants`]). Not in the tables or the JSON.
    #[serde(skip)]
    pub booked: Cycles,
    /// Nodes in the machine.
    pub nodes: u32,
    /// One row per handler and node that ran (per handler, in a [`Ledger::summed`] report).
    pub handlers: Vec<HandlerRow>,
    /// One row per unit and node (per unit, in a [`Ledger::summed`] report).
    pub units: Vec<UnitRow>,
}

/// A handler row as a result's JSON holds it: its counters, and its mean
/// and share exact (full precision), which [`Ledger::from_exact`]
/// computes again from the counters and checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExactHandlerRow {
    /// `None` for a row summed over all nodes.
    pub node: Option<u32>,
    /// The handler's name, `protocol.handler`.
    pub handler: String,
    /// The handler's counters (flattened into the row).
    #[serde(flatten)]
    pub stats: HandlerStats,
    /// Mean cycles per invocation, exact.
    pub mean: f64,
    /// Share of the PP time, exact.
    pub pp_share: f64,
}

/// A unit row as a result's JSON holds it: its counters, and its
/// utilization exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExactUnitRow {
    /// `None` for a row summed over all nodes.
    pub node: Option<u32>,
    /// Which unit.
    pub unit: Unit,
    /// Its operations.
    pub ops: u64,
    /// Its busy cycles.
    pub busy: u64,
    /// `busy` over the span, exact.
    pub utilization: f64,
    /// Cycles spent waiting for it.
    pub waiting: u64,
}

/// Where a row is, as an error names it: " on node 3", or " over all
/// nodes" for a row summed over them.
fn on_node(node: Option<u32>) -> String {
    match node {
        Some(n) => format!(" on node {n}"),
        None => " over all nodes".to_string(),
    }
}

/// A derived figure as a result's JSON holds it against the value its
/// counts give: equal, or an error naming `field` and both values.
pub fn exact(field: &str, json: f64, counts: f64) -> Result<(), String> {
    if json == counts {
        Ok(())
    } else {
        Err(format!("{field} is {json}, but the counts give {counts}"))
    }
}

/// Per-node raw figures the machine hands the ledger.
pub(crate) struct NodeFigures<'a> {
    pub handlers: &'a [HandlerStats],
    pub units: [(u64, u64, u64); 6],
}

impl Ledger {
    pub(crate) fn build(
        elapsed: Cycles,
        booked: Cycles,
        names: &[String],
        nodes: &[NodeFigures<'_>],
    ) -> Ledger {
        let el = Ledger::span(elapsed, nodes.len() as u32, Some(0));
        let mut handlers = Vec::new();
        let mut units = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let node = Some(i as u32);
            for (h, s) in n.handlers.iter().enumerate() {
                if s.invocations > 0 {
                    handlers.push(HandlerRow::new(node, names[h].clone(), *s, el));
                }
            }
            for (u, &(ops, busy, waiting)) in Unit::ALL.iter().zip(n.units.iter()) {
                units.push(UnitRow::new(node, *u, ops, busy, waiting, el));
            }
        }
        Ledger {
            elapsed,
            booked: booked.max(elapsed),
            nodes: nodes.len() as u32,
            handlers,
            units,
        }
    }

    /// The handler rows as a result's JSON holds them, figures exact.
    pub fn exact_handlers(&self) -> Vec<ExactHandlerRow> {
        self.handlers
            .iter()
            .map(|r| ExactHandlerRow {
                node: r.node,
                handler: r.handler.clone(),
                stats: r.stats,
                mean: r.mean,
                pp_share: r.pp_share,
            })
            .collect()
    }

    /// The unit rows as a result's JSON holds them, figures exact.
    pub fn exact_units(&self) -> Vec<ExactUnitRow> {
        self.units
            .iter()
            .map(|r| ExactUnitRow {
                node: r.node,
                unit: r.unit,
                ops: r.ops,
                busy: r.busy,
                utilization: r.utilization,
                waiting: r.waiting,
            })
            .collect()
    }

    /// The ledger a result's JSON holds, read back: each row's figures
    /// computed again from its counters (the one place they are), and
    /// refused, naming the row and figure, where the JSON's are not those;
    /// `booked` before `elapsed` is refused too, and so are counters no
    /// run gives: a ledger that breaks [`Ledger::invariants`] at the widest
    /// PP a machine may have (the width is not in every result), or
    /// counters whose sum over the nodes ([`Ledger::summed`]) passes
    /// 2^64 - 1.
    pub fn from_exact(
        elapsed: Cycles,
        booked: Cycles,
        nodes: u32,
        handlers: Vec<ExactHandlerRow>,
        units: Vec<ExactUnitRow>,
    ) -> Result<Ledger, String> {
        if booked < elapsed {
            return Err(format!(
                "occupancy_booked_cycles is {booked}, less than the {elapsed} occupancy_cycles"
            ));
        }
        let last = crate::time::LAST_CYCLE;
        if booked > last {
            return Err(format!(
                "occupancy_booked_cycles is {booked}, past the last cycle a run reaches ({last})"
            ));
        }
        if nodes == 0 {
            return Err("a ledger of no nodes: a machine has at least one".to_string());
        }
        let handlers = handlers
            .into_iter()
            .map(|r| {
                let span = Ledger::span(elapsed, nodes, r.node);
                let row = HandlerRow::new(r.node, r.handler, r.stats, span);
                let at = |k: &str| format!("occupancy ({}{}).{k}", row.handler, on_node(row.node));
                exact(&at("mean"), r.mean, row.mean)?;
                exact(&at("pp_share"), r.pp_share, row.pp_share)?;
                Ok(row)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let units = units
            .into_iter()
            .map(|r| {
                let span = Ledger::span(elapsed, nodes, r.node);
                let row = UnitRow::new(r.node, r.unit, r.ops, r.busy, r.waiting, span);
                let at = format!("units ({}{}).utilization", r.unit.name(), on_node(r.node));
                exact(&at, r.utilization, row.utilization)?;
                Ok(row)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let ledger = Ledger {
            elapsed,
            booked,
            nodes,
            handlers,
            units,
        };
        let widest = crate::params::MagicParams::MAX_PP_ISSUE_WIDTH;
        ledger.invariants(widest).map_err(|v| v.to_string())?;
        ledger.summed_by(u64::checked_add)?;
        Ok(ledger)
    }

    /// The cycles a row's share and utilization are over: the span the
    /// counters cover (at least one cycle), times the nodes for a row
    /// summed over them (`node` `None`).
    pub fn span(elapsed: Cycles, nodes: u32, node: Option<u32>) -> f64 {
        let el = elapsed.0.max(1) as f64;
        match node {
            Some(_) => el,
            None => el * nodes.max(1) as f64,
        }
    }

    /// The same report with every node's rows summed into one row per handler
    /// and per unit (shares and utilizations are over all nodes' time). A
    /// sum past 2^64 - 1 stops there: a ledger built by hand can hold
    /// one, and so can a run halted past the end of time
    /// ([`crate::Halt::EndOfTime`]), whose handler's step counted what no
    /// clock holds; otherwise a run's handlers book no more than the
    /// largest budget ([`crate::params::MAX_BUDGET`]) each, which 4096
    /// nodes' sums hold.
    pub fn summed(&self) -> Ledger {
        let saturating: Sum = |a, b| Some(a.saturating_add(b));
        // A saturating sum refuses nothing: the fallback is never taken.
        self.summed_by(saturating).unwrap_or_else(|_| self.clone())
    }

    /// [`Ledger::summed`], adding counters by `sum`; an error names the
    /// handler or unit whose sum `sum` refuses.
    fn summed_by(&self, sum: Sum) -> Result<Ledger, String> {
        let too_big =
            |what: String| format!("{what}: its counters sum past 2^64 - 1 over the nodes");
        let el = Ledger::span(self.elapsed, self.nodes, None);
        let mut handlers: Vec<HandlerRow> = Vec::new();
        for r in &self.handlers {
            match handlers.iter_mut().find(|h| h.handler == r.handler) {
                Some(h) => h
                    .stats
                    .add(&r.stats, sum)
                    .ok_or_else(|| too_big(format!("occupancy ({})", r.handler)))?,
                None => handlers.push(HandlerRow {
                    node: None,
                    ..r.clone()
                }),
            }
        }
        let handlers = handlers
            .into_iter()
            .map(|h| HandlerRow::new(None, h.handler, h.stats, el))
            .collect();
        let units = Unit::ALL
            .iter()
            .map(|&u| {
                let (ops, busy, waiting) = self
                    .units
                    .iter()
                    .filter(|r| r.unit == u)
                    .try_fold((0, 0, 0), |a, r| {
                        Some((sum(a.0, r.ops)?, sum(a.1, r.busy)?, sum(a.2, r.waiting)?))
                    })
                    .ok_or_else(|| too_big(format!("units ({})", u.name())))?;
                Ok(UnitRow::new(None, u, ops, busy, waiting, el))
            })
            .collect::<Result<_, String>>()?;
        Ok(Ledger {
            elapsed: self.elapsed,
            booked: self.booked,
            nodes: self.nodes,
            handlers,
            units,
        })
    }

    /// The rows of one handler on one node (`None`: the summed row).
    pub fn handler(&self, node: Option<u32>, name: &str) -> Option<&HandlerRow> {
        self.handlers
            .iter()
            .find(|r| r.node == node && r.handler == name)
    }

    /// The row of one unit on one node (`None`: the summed row).
    pub fn unit(&self, node: Option<u32>, unit: Unit) -> Option<&UnitRow> {
        self.units.iter().find(|r| r.node == node && r.unit == unit)
    }

    /// Check what every ledger satisfies, whatever its run did (refused,
    /// stopped at its budget, halted): `Err` names the first row that
    /// breaks a rule, with the rule and its figures. `issue_width` is the
    /// machine's `pp_issue_width`. A ledger is a machine's
    /// ([`crate::Magic::ledger`]) or its [`Ledger::summed`], whose rows are
    /// over all nodes: a span is then `nodes` times the node's. Every rule
    /// holds by construction of the machine's counters, so a violation is
    /// a model bug or a figure corrupted on its way out.
    ///
    /// The ledger as a whole:
    /// - `elapsed ≤ booked`;
    /// - every row's node is below `nodes`, and there is one row per
    ///   handler and node and one per unit and node.
    ///
    /// Each handler row:
    /// - it ran, and each invocation held the PP at least a cycle:
    ///   `1 ≤ invocations ≤ busy`;
    /// - `1 ≤ max ≤ busy ≤ invocations × max`, so `mean ≤ max ≤ busy`;
    /// - waits and outbox stalls are cycles of it: `wait + outbox_stall ≤ busy`;
    /// - the PP issues at most `issue_width` instructions a cycle, and only
    ///   in cycles it neither waits nor stalls:
    ///   `instructions ≤ issue_width × (busy − wait − outbox_stall)`
    ///   ([`crate::Cx::bundles`] refuses a step that would break it);
    /// - each load and store is one of its instructions:
    ///   `loads + stores ≤ instructions` ([`crate::Cx::load`] refuses one
    ///   beyond those issued);
    /// - `mean` is `busy / invocations` and `pp_share` is `busy` over the
    ///   elapsed span (`elapsed` at least 1, times `nodes` in a summed row).
    ///
    /// Each unit row:
    /// - every unit but the inbox was busy within the booked span:
    ///   `busy ≤ booked` (times `nodes` summed), so its `utilization`, busy
    ///   over the elapsed span, is at most `booked / elapsed`: 100% when no
    ///   work is booked past the last event. The inbox's stage is
    ///   pipelined and counts its latency for each message, so its busy is
    ///   a whole multiple of its ops instead;
    /// - `utilization` is `busy` over the elapsed span, as for `pp_share`;
    /// - memory moves one line an operation over its data bus, a
    ///   doubleword a cycle: `busy = 16 × ops`;
    /// - every packet the outbox took went on the wire: net-out's ops are
    ///   the outbox's.
    ///
    /// Between a node's rows (and between summed rows):
    /// - the PP's row is its handler rows summed: its ops are their
    ///   invocations, its busy their busy;
    /// - the outbox's waiting is their outbox stalls;
    /// - every invocation was a dispatch: the inbox's ops are at least the
    ///   PP's.
    ///
    /// A ledger cut to some of its handler rows keeps these only if its
    /// unit rows go too (the PP's row would no longer be their sum).
    ///
    /// ```
    /// use magic::ledger::{HandlerRow, HandlerStats, Ledger};
    /// use magic::Cycles;
    /// let stats = HandlerStats { invocations: 1, busy: 1, max: 1, instructions: 1000, ..HandlerStats::default() };
    /// let row = HandlerRow { node: Some(0), handler: "p.go".into(), stats, mean: 1.0, pp_share: 0.1 };
    /// let l = Ledger { elapsed: Cycles(10), booked: Cycles(10), nodes: 1, handlers: vec![row], units: vec![] };
    /// let e = l.invariants(2).unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "node 0 p.go: instructions ≤ issue width × (busy − wait − outbox stall), \
    ///      but 1000 instructions, 2-issue, 1 busy, 0 wait, 0 outbox stall"
    /// );
    /// assert_eq!(l.invariants(1000), Ok(()));
    /// ```
    pub fn invariants(&self, issue_width: u32) -> Result<(), Violation> {
        use std::collections::{HashMap, HashSet};
        let whole = || "the ledger".to_string();
        if self.elapsed > self.booked {
            return Err(Violation::new(
                whole(),
                "elapsed ≤ booked",
                format!("{} elapsed, {} booked", self.elapsed, self.booked),
            ));
        }
        let nodes = self.nodes as u128;
        // A row's spans: elapsed (at least 1, as the shares are taken
        // over) and booked, times the nodes in a summed row.
        let span = |node: Option<u32>| {
            let k = if node.is_some() { 1 } else { nodes.max(1) };
            (
                self.elapsed.0.max(1) as f64 * k as f64,
                self.booked.0 as u128 * k,
            )
        };
        let name = |node: Option<u32>, what: &str| match node {
            Some(n) => format!("node {n} {what}"),
            None => format!("all {what}"),
        };
        let node_ok = |node: Option<u32>, row: String| match node {
            Some(n) if n >= self.nodes => Err(Violation::new(
                row,
                "a row's node is below the ledger's nodes",
                format!("node {n}, {} nodes", self.nodes),
            )),
            _ => Ok(()),
        };
        // Per node (`None`: summed rows): invocations, busy, outbox stall.
        let mut sums: HashMap<Option<u32>, [u128; 3]> = HashMap::new();
        let mut seen = HashSet::new();
        for r in &self.handlers {
            let row = name(r.node, &r.handler);
            node_ok(r.node, row.clone())?;
            if !seen.insert((r.node, r.handler.as_str())) {
                return Err(Violation::new(row, "one row per handler and node", "two"));
            }
            let s = &r.stats;
            s.invariants(issue_width)
                .map_err(|(rule, figures)| Violation::new(row.clone(), rule, figures))?;
            let (inv, busy) = (s.invocations as u128, s.busy as u128);
            let stall = s.outbox_stall as u128;
            let fail = |rule, figures: String| Err(Violation::new(row.clone(), rule, figures));
            let (el, _) = span(r.node);
            if !close(r.mean, busy as f64 / inv as f64) {
                return fail(
                    "mean = busy / invocations",
                    format!("{} mean, {busy} busy, {inv} invocations", r.mean),
                );
            }
            if !close(r.pp_share, busy as f64 / el) {
                return fail(
                    "pp share = busy / elapsed",
                    format!("{} share, {busy} busy, {el} elapsed", r.pp_share),
                );
            }
            let sum = sums.entry(r.node).or_default();
            sum[0] += inv;
            sum[1] += busy;
            sum[2] += stall;
        }
        // A PP runs one handler at a time: its handlers' busy fits the
        // span booked (the nodes' in a summed row). In node order, so the
        // row named is the same on every run.
        let mut order: Vec<_> = sums.iter().collect();
        order.sort_by_key(|(node, _)| **node);
        for (&node, &[_, busy, _]) in order {
            let (_, booked) = span(node);
            if busy > booked {
                return Err(Violation::new(
                    name(node, "handlers"),
                    "the handlers' busy ≤ booked",
                    format!("{busy} busy, {booked} booked"),
                ));
            }
        }
        let mut units: HashMap<(Option<u32>, Unit), &UnitRow> = HashMap::new();
        for r in &self.units {
            let row = name(r.node, r.unit.name());
            node_ok(r.node, row.clone())?;
            if units.insert((r.node, r.unit), r).is_some() {
                return Err(Violation::new(row, "one row per unit and node", "two"));
            }
            let fail = |rule, figures: String| Err(Violation::new(row.clone(), rule, figures));
            let (el, booked) = span(r.node);
            let (ops, busy) = (r.ops as u128, r.busy as u128);
            if r.unit == Unit::Inbox {
                if (ops == 0 && busy > 0) || (ops > 0 && busy % ops != 0) {
                    return fail(
                        "the inbox's busy is its stage's latency times its ops",
                        format!("{busy} busy, {ops} ops"),
                    );
                }
            } else if busy > booked {
                return fail("busy ≤ booked", format!("{busy} busy, {booked} booked"));
            }
            if !close(r.utilization, busy as f64 / el) {
                return fail(
                    "utilization = busy / elapsed",
                    format!("{} utilization, {busy} busy, {el} elapsed", r.utilization),
                );
            }
            if r.unit == Unit::Memory && busy != ops * crate::ids::LINE_DWORDS as u128 {
                return fail(
                    "memory busy = 16 cycles × ops",
                    format!("{busy} busy, {ops} ops"),
                );
            }
        }
        let nodes_seen: HashSet<Option<u32>> = units.keys().map(|k| k.0).collect();
        for node in nodes_seen {
            let unit = |u| units.get(&(node, u)).copied();
            let [inv, busy, stall] = sums.get(&node).copied().unwrap_or_default();
            let fail = |u: Unit, rule, figures: String| {
                Err(Violation::new(name(node, u.name()), rule, figures))
            };
            if let Some(pp) = unit(Unit::Pp) {
                if pp.ops as u128 != inv || pp.busy as u128 != busy {
                    return fail(
                        Unit::Pp,
                        "the PP's ops and busy are its handler rows' invocations and busy",
                        format!(
                            "{} ops, {} busy; the handlers' {inv} invocations, {busy} busy",
                            pp.ops, pp.busy
                        ),
                    );
                }
                if let Some(inbox) = unit(Unit::Inbox) {
                    if inbox.ops < pp.ops {
                        return fail(
                            Unit::Inbox,
                            "the inbox's ops are at least the PP's",
                            format!("{} ops, the PP's {}", inbox.ops, pp.ops),
                        );
                    }
                }
            }
            if let Some(out) = unit(Unit::Outbox) {
                if unit(Unit::Pp).is_some() && out.waiting as u128 != stall {
                    return fail(
                        Unit::Outbox,
                        "the outbox's waiting is the handlers' outbox stalls",
                        format!("{} waiting, {stall} stalls", out.waiting),
                    );
                }
                if let Some(net) = unit(Unit::NetOut) {
                    if net.ops != out.ops {
                        return fail(
                            Unit::NetOut,
                            "net-out's ops are the outbox's",
                            format!("{} ops, the outbox's {}", net.ops, out.ops),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The handler occupancy table (as [`Display`](std::fmt::Display)
    /// prints it) and the unit utilization table after it: what the
    /// command line prints.
    pub fn render(&self) -> String {
        format!("{self}\n{}", self.units_table())
    }

    /// The unit utilization table alone (idle units are left out; the JSON
    /// keeps them).
    pub fn units_table(&self) -> String {
        let mut out = String::from("unit utilization\n");
        line(
            &mut out,
            &UNIT_COLUMNS,
            &UNIT_COLUMNS.map(|c| c.0.to_string()),
        );
        for r in self
            .units
            .iter()
            .filter(|r| (r.ops | r.busy | r.waiting) != 0)
        {
            line(
                &mut out,
                &UNIT_COLUMNS,
                &[
                    node_name(r.node),
                    r.unit.name().to_string(),
                    r.ops.to_string(),
                    r.busy.to_string(),
                    format!("{}%", text(Figure::Percent, r.utilization)),
                    r.waiting.to_string(),
                ],
            );
        }
        out
    }
}

/// A ledger's figure that breaks one of the invariants every ledger
/// satisfies ([`Ledger::invariants`]): the row, the rule, its figures.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{row}: {rule}, but {figures}")]
pub struct Violation {
    /// The row: `node 1 lock.request`, `all memory` (a summed row), or
    /// `the ledger`.
    pub row: String,
    /// The rule, in words.
    pub rule: &'static str,
    /// The row's figures that break it.
    pub figures: String,
}

impl Violation {
    fn new(row: String, rule: &'static str, figures: impl Into<String>) -> Violation {
        Violation {
            row,
            rule,
            figures: figures.into(),
        }
    }
}

/// Whether figure `got` is `want` (as the ledger computed it, up to the
/// last bits of a float).
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

/// Column widths of the tables: fixed, so a row's padding never depends on
/// another row's values. They hold a handler name of 28 characters and the
/// counts of runs up to some 10^8 cycles a node; a wider value pushes only
/// its own row.
const HANDLER_COLUMNS: [(&str, usize, bool); 11] = [
    ("node", 4, true),
    ("handler", 28, false),
    ("calls", 8, true),
    ("busy", 9, true),
    ("mean", 7, true),
    ("max", 6, true),
    ("stall", 9, true),
    ("wait", 8, true),
    ("instr", 9, true),
    ("ld/st", 13, true),
    ("pp-time", 7, true),
];

/// The unit table's columns (name, width, right-aligned).
const UNIT_COLUMNS: [(&str, usize, bool); 6] = [
    ("node", 4, true),
    ("unit", 9, false),
    ("ops", 9, true),
    ("busy", 9, true),
    ("util", 7, true),
    ("waiting", 9, true),
];

fn node_name(n: Option<u32>) -> String {
    n.map_or("all".to_string(), |n| n.to_string())
}

/// The handler occupancy table alone, headed by the window it covers.
impl std::fmt::Display for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = format!(
            "handler occupancy (cycles of 10 ns; counters over {} cycles, from their start to the last event)\n",
            self.elapsed
        );
        line(
            &mut out,
            &HANDLER_COLUMNS,
            &HANDLER_COLUMNS.map(|c| c.0.to_string()),
        );
        for r in &self.handlers {
            let s = &r.stats;
            line(
                &mut out,
                &HANDLER_COLUMNS,
                &[
                    node_name(r.node),
                    r.handler.clone(),
                    s.invocations.to_string(),
                    s.busy.to_string(),
                    text(Figure::FracCycles, r.mean),
                    s.max.to_string(),
                    s.outbox_stall.to_string(),
                    s.wait.to_string(),
                    s.instructions.to_string(),
                    format!("{}/{}", s.loads, s.stores),
                    format!("{}%", text(Figure::Percent, r.pp_share)),
                ],
            );
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(busy: u64, name: &str) -> Ledger {
        let row = |node, handler: &str, busy| HandlerRow {
            node: Some(node),
            handler: handler.to_string(),
            stats: HandlerStats {
                invocations: 2,
                busy,
                max: busy,
                ..HandlerStats::default()
            },
            mean: busy as f64 / 2.0,
            pp_share: busy as f64 / 1000.0,
        };
        Ledger {
            elapsed: Cycles(1000),
            booked: Cycles(1000),
            nodes: 2,
            handlers: vec![row(0, "p.small", 7), row(1, name, busy)],
            units: vec![],
        }
    }

    #[test]
    fn a_wide_value_pushes_only_its_own_row() {
        let narrow = ledger(9, "p.other").to_string();
        let wide = ledger(
            123_456_789_012_345,
            "p.a_handler_whose_name_is_far_too_long",
        )
        .to_string();
        let lines = |t: &str| t.lines().map(str::to_string).collect::<Vec<_>>();
        let (a, b) = (lines(&narrow), lines(&wide));
        // Heading, column heads and the untouched row are the same text.
        assert_eq!(a[1..3], b[1..3]);
        assert_ne!(a[3], b[3]);
        // Columns line up with their heads whatever the values.
        let head = &a[1];
        fn end<'a>(head: &str, l: &'a str, col: &str) -> &'a str {
            &l[..head.find(col).unwrap() + col.len()]
        }
        assert!(end(head, &a[2], "calls").ends_with('2'));
        assert!(end(head, &a[2], "busy").ends_with('7'));
        assert!(end(head, &a[2], "pp-time").ends_with("0.7%"));
    }

    /// A ledger whose every figure agrees: one node, one handler run twice.
    fn whole() -> Ledger {
        let stats = HandlerStats {
            invocations: 2,
            busy: 10,
            max: 6,
            outbox_stall: 1,
            wait: 2,
            // 2-issue, over the 7 cycles neither waiting nor stalled.
            instructions: 14,
            loads: 3,
            stores: 2,
        };
        let unit = |unit, ops, busy, waiting| UnitRow {
            node: Some(0),
            unit,
            ops,
            busy,
            utilization: busy as f64 / 20.0,
            waiting,
        };
        Ledger {
            elapsed: Cycles(20),
            // A memory write streams 4 cycles past the last event.
            booked: Cycles(24),
            nodes: 1,
            handlers: vec![HandlerRow {
                node: Some(0),
                handler: "p.h".into(),
                stats,
                mean: 5.0,
                pp_share: 0.5,
            }],
            units: vec![
                unit(Unit::Inbox, 2, 6, 9),
                unit(Unit::Pp, 2, 10, 0),
                unit(Unit::Outbox, 1, 3, 1),
                unit(Unit::Memory, 1, 16, 0),
                unit(Unit::PcacheIf, 0, 0, 0),
                unit(Unit::NetOut, 1, 24, 0),
            ],
        }
    }

    #[test]
    fn every_invariant_finds_a_figure_that_breaks_it() {
        let l = whole();
        assert_eq!(l.invariants(2), Ok(()));
        assert_eq!(l.summed().invariants(2), Ok(()));
        type Break = fn(&mut Ledger);
        let cases: Vec<(&str, Break)> = vec![
            ("elapsed ≤ booked", |l| l.booked = Cycles(19)),
            ("a row's node is below the ledger's nodes", |l| {
                l.handlers[0].node = Some(1)
            }),
            ("one row per handler and node", |l| {
                l.handlers.push(l.handlers[0].clone())
            }),
            ("1 ≤ invocations ≤ busy", |l| {
                l.handlers[0].stats.invocations = 0
            }),
            ("1 ≤ invocations ≤ busy", |l| {
                l.handlers[0].stats.invocations = 11
            }),
            ("1 ≤ max ≤ busy ≤ invocations × max", |l| {
                l.handlers[0].stats.max = 11
            }),
            ("1 ≤ max ≤ busy ≤ invocations × max", |l| {
                l.handlers[0].stats.max = 4
            }),
            ("wait + outbox stall ≤ busy", |l| {
                l.handlers[0].stats.wait = 10
            }),
            (
                "instructions ≤ issue width × (busy − wait − outbox stall)",
                |l| l.handlers[0].stats.instructions = 15,
            ),
            ("loads + stores ≤ instructions", |l| {
                l.handlers[0].stats.loads = 13
            }),
            ("mean = busy / invocations", |l| l.handlers[0].mean = 5.5),
            ("pp share = busy / elapsed", |l| {
                l.handlers[0].pp_share = 0.25
            }),
            ("one row per unit and node", |l| {
                l.units.push(l.units[0].clone())
            }),
            (
                "the inbox's busy is its stage's latency times its ops",
                |l| l.units[0].busy = 7,
            ),
            ("busy ≤ booked", |l| l.units[5].busy = 25),
            ("utilization = busy / elapsed", |l| {
                l.units[1].utilization = 1.0
            }),
            ("memory busy = 16 cycles × ops", |l| l.units[3].busy = 15),
            (
                "the PP's ops and busy are its handler rows' invocations and busy",
                |l| l.units[1].ops = 3,
            ),
            ("the outbox's waiting is the handlers' outbox stalls", |l| {
                l.units[2].waiting = 2
            }),
            ("the inbox's ops are at least the PP's", |l| {
                l.units[0].ops = 1;
                l.units[0].busy = 3;
            }),
            ("net-out's ops are the outbox's", |l| l.units[5].ops = 2),
        ];
        for (rule, f) in cases {
            let mut l = whole();
            f(&mut l);
            for u in &mut l.units {
                if rule != "utilization = busy / elapsed" {
                    u.utilization = u.busy as f64 / 20.0;
                }
            }
            let e = l.invariants(2).unwrap_err();
            assert_eq!(e.rule, rule, "{e}");
            let row = if rule == "elapsed ≤ booked" {
                "the ledger"
            } else {
                "node "
            };
            assert!(e.row.starts_with(row), "{e}");
        }
        // A 1-issue PP could not have issued the 14 instructions.
        let e = whole().invariants(1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "node 0 p.h: instructions ≤ issue width × (busy − wait − outbox stall), \
             but 14 instructions, 1-issue, 10 busy, 2 wait, 1 outbox stall"
        );
        // Summed rows are named so.
        let mut s = whole().summed();
        s.units[3].busy = 32;
        let e = s.invariants(2).unwrap_err();
        assert_eq!(e.row, "all memory");
        let mut l = whole();
        l.booked = Cycles(19);
        assert_eq!(l.invariants(2).unwrap_err().row, "the ledger");
    }

    #[test]
    fn display_is_the_handler_table_and_render_adds_the_units() {
        let l = ledger(9, "p.other");
        assert!(!l.to_string().contains("unit utilization"));
        assert_eq!(l.render(), format!("{l}\n{}", l.units_table()));
        let j = serde_json::to_value(&l).unwrap();
        assert_eq!(j["handlers"][0]["pp_share"], 0.007);
        assert_eq!(j["handlers"][0]["mean"], 3.5);
    }

    /// A PP runs one handler at a time: handler rows busier than the span
    /// booked are no ledger, unit rows or none; nor is one of no nodes.
    #[test]
    fn handlers_busier_than_the_span_are_refused() {
        let mut l = ledger(9, "p.other");
        assert_eq!(l.invariants(2), Ok(()));
        l.handlers[1].stats.busy = 1001;
        l.handlers[1].stats.max = 1001;
        l.handlers[1].mean = 1001.0 / 2.0;
        l.handlers[1].pp_share = 1001.0 / 1000.0;
        assert_eq!(
            l.invariants(2).unwrap_err().to_string(),
            "node 1 handlers: the handlers' busy ≤ booked, but 1001 busy, 1000 booked"
        );
        let e = Ledger::from_exact(Cycles(10), Cycles(10), 0, vec![], vec![]).unwrap_err();
        assert_eq!(e, "a ledger of no nodes: a machine has at least one");
    }
}
