//! The occupancy ledger: where each node's cycles went.
//!
//! Per node and per handler: invocations, busy cycles, mean and max cycles per
//! invocation, the cycles of stalls inside them, and their share of the PP's
//! time. Per unit (inbox, PP, outbox, memory, processor-cache interface,
//! network out): operations, busy cycles and utilization over the run.
//! A [`Ledger`] is a plain report: its `Display` is the handler table alone,
//! [`Ledger::render`] both tables, its `Serialize` the JSON; tables and JSON
//! round figures the one way [`crate::figures`] says. Columns have fixed
//! widths, so one row's values never re-pad another.

use crate::figures::{self, line, text, Figure};
use crate::time::Cycles;
use serde::Serialize;

/// Live counters of one handler on one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
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

impl HandlerStats {
    pub(crate) fn add(&mut self, o: &HandlerStats) {
        self.invocations += o.invocations;
        self.busy += o.busy;
        self.max = self.max.max(o.max);
        self.outbox_stall += o.outbox_stall;
        self.wait += o.wait;
        self.instructions += o.instructions;
        self.loads += o.loads;
        self.stores += o.stores;
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

/// The pipeline units, in the order the report lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
    /// Cycles the unit was busy: inbox dispatching, PP running handlers,
    /// outbox holding a packet that waits for the wire, memory data bus,
    /// processor-cache interface, wire.
    pub busy: u64,
    /// `busy` over the elapsed cycles (times nodes, for a summed row; JSON:
    /// rounded as [`figures`] says).
    #[serde(serialize_with = "figures::ser_share")]
    pub utilization: f64,
    /// Cycles messages or packets spent waiting in this unit's queues (inbox:
    /// time in the input queues; outbox: time a handler stalled on a full lane).
    pub waiting: u64,
}

/// The occupancy report of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ledger {
    /// Cycles the report covers (10 ns each).
    pub elapsed: Cycles,
    /// Nodes in the machine.
    pub nodes: u32,
    /// One row per handler and node that ran (per handler, in a [`Ledger::summed`] report).
    pub handlers: Vec<HandlerRow>,
    /// One row per unit and node (per unit, in a [`Ledger::summed`] report).
    pub units: Vec<UnitRow>,
}

/// Per-node raw figures the machine hands the ledger.
pub(crate) struct NodeFigures<'a> {
    pub handlers: &'a [HandlerStats],
    pub units: [(u64, u64, u64); 6],
}

impl Ledger {
    pub(crate) fn build(elapsed: Cycles, names: &[String], nodes: &[NodeFigures<'_>]) -> Ledger {
        let el = elapsed.0.max(1) as f64;
        let mut handlers = Vec::new();
        let mut units = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            for (h, s) in n.handlers.iter().enumerate() {
                if s.invocations > 0 {
                    handlers.push(HandlerRow {
                        node: Some(i as u32),
                        handler: names[h].clone(),
                        stats: *s,
                        mean: s.mean(),
                        pp_share: s.busy as f64 / el,
                    });
                }
            }
            for (u, &(ops, busy, waiting)) in Unit::ALL.iter().zip(n.units.iter()) {
                units.push(UnitRow {
                    node: Some(i as u32),
                    unit: *u,
                    ops,
                    busy,
                    utilization: busy as f64 / el,
                    waiting,
                });
            }
        }
        Ledger {
            elapsed,
            nodes: nodes.len() as u32,
            handlers,
            units,
        }
    }

    /// The same report with every node's rows summed into one row per handler
    /// and per unit (shares and utilizations are over all nodes' time).
    pub fn summed(&self) -> Ledger {
        let el = self.elapsed.0.max(1) as f64 * self.nodes.max(1) as f64;
        let mut handlers: Vec<HandlerRow> = Vec::new();
        for r in &self.handlers {
            match handlers.iter_mut().find(|h| h.handler == r.handler) {
                Some(h) => h.stats.add(&r.stats),
                None => handlers.push(HandlerRow {
                    node: None,
                    ..r.clone()
                }),
            }
        }
        for h in &mut handlers {
            h.mean = h.stats.mean();
            h.pp_share = h.stats.busy as f64 / el;
        }
        let units = Unit::ALL
            .iter()
            .map(|&u| {
                let rows = self.units.iter().filter(|r| r.unit == u);
                let (ops, busy, waiting) = rows.fold((0, 0, 0), |a, r| {
                    (a.0 + r.ops, a.1 + r.busy, a.2 + r.waiting)
                });
                UnitRow {
                    node: None,
                    unit: u,
                    ops,
                    busy,
                    utilization: busy as f64 / el,
                    waiting,
                }
            })
            .collect();
        Ledger {
            elapsed: self.elapsed,
            nodes: self.nodes,
            handlers,
            units,
        }
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
        for r in self.units.iter().filter(|r| r.ops + r.busy + r.waiting > 0) {
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

    #[test]
    fn display_is_the_handler_table_and_render_adds_the_units() {
        let l = ledger(9, "p.other");
        assert!(!l.to_string().contains("unit utilization"));
        assert_eq!(l.render(), format!("{l}\n{}", l.units_table()));
        let j = serde_json::to_value(&l).unwrap();
        assert_eq!(j["handlers"][0]["pp_share"], 0.007);
        assert_eq!(j["handlers"][0]["mean"], 3.5);
    }
}
