//! Timelines of a run, for people to look at: every handler invocation and
//! every busy period of a unit, per node, written as Chrome trace-event
//! JSON (Perfetto and chrome://tracing open it). Recording is off unless
//! asked for, and costs nothing then.

use crate::ids::MsgType;
use crate::time::Cycles;
use serde::Serialize;

/// The tracks of a node, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Track {
    /// Waits in the inbox before dispatch.
    Inbox = 0,
    /// Handlers running on the protocol processor.
    Pp = 1,
    /// Packets waiting in the outbox.
    Outbox = 2,
    /// Transfers on main memory's data bus.
    Memory = 3,
    /// Interventions at the compute processor's cache.
    PcacheIf = 4,
    /// Packets on the outgoing wire.
    NetOut = 5,
    /// The compute processor's own work for a messaging program (cache
    /// instructions that flush message data).
    Processor = 6,
}

impl Track {
    /// Every track, in display order.
    pub const ALL: [Track; 7] = [
        Track::Inbox,
        Track::Pp,
        Track::Outbox,
        Track::Memory,
        Track::PcacheIf,
        Track::NetOut,
        Track::Processor,
    ];

    /// The track's name as the trace viewer shows it.
    pub fn name(self) -> &'static str {
        match self {
            Track::Inbox => "inbox",
            Track::Pp => "PP",
            Track::Outbox => "outbox",
            Track::Memory => "memory",
            Track::PcacheIf => "processor-cache interface",
            Track::NetOut => "network out",
            Track::Processor => "compute processor",
        }
    }
}

/// One busy interval on a track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The node the interval is on.
    pub node: u32,
    /// The track it belongs to.
    pub track: Track,
    /// The protocol whose handler ran (empty for a unit's busy period).
    pub protocol: &'static str,
    /// The handler, or what the unit did.
    pub name: &'static str,
    /// The first cycle of the interval (system cycles of 10 ns).
    pub start: Cycles,
    /// The cycle the interval ends (system cycles of 10 ns).
    pub end: Cycles,
    /// The message that caused it, if one did.
    pub msg: Option<MsgType>,
}

fn us(c: Cycles) -> f64 {
    crate::time::Time::from_cycles(c).as_us()
}

/// Chrome trace-event JSON for `slices` of a machine of `nodes` nodes:
/// one process per node, one thread per track, complete ("X") events in
/// microseconds of simulated time. A count past the most nodes a machine
/// has (2^12) names that many processes, no more: no machine's trace has
/// others.
///
/// ```
/// use magic::trace::{chrome_json, Track};
/// let v = chrome_json(u32::MAX, &[]);
/// let per_node = 1 + 2 * Track::ALL.len();
/// assert_eq!(v["traceEvents"].as_array().unwrap().len(), 4096 * per_node);
/// ```
pub fn chrome_json(nodes: u32, slices: &[Slice]) -> serde_json::Value {
    let nodes = nodes.min(crate::ids::PAddr::MAX_NODES);
    let mut ev = Vec::with_capacity(slices.len() + 8 * nodes as usize);
    for n in 0..nodes {
        ev.push(serde_json::json!({
            "ph": "M", "name": "process_name", "pid": n, "tid": 0,
            "args": {"name": format!("node {n}")}
        }));
        for t in Track::ALL {
            ev.push(serde_json::json!({
                "ph": "M", "name": "thread_name", "pid": n, "tid": t as u32,
                "args": {"name": t.name()}
            }));
            ev.push(serde_json::json!({
                "ph": "M", "name": "thread_sort_index", "pid": n, "tid": t as u32,
                "args": {"sort_index": t as u32}
            }));
        }
    }
    for s in slices {
        let mut args = serde_json::json!({ "cycles": s.end.0.saturating_sub(s.start.0) });
        if let Some(m) = s.msg {
            args["message"] = serde_json::json!(m.0);
        }
        ev.push(serde_json::json!({
            "ph": "X",
            "name": if s.protocol.is_empty() { s.name.to_string() } else { format!("{}.{}", s.protocol, s.name) },
            "cat": s.track.name(),
            "pid": s.node,
            "tid": s.track as u32,
            "ts": us(s.start),
            "dur": us(s.end - s.start),
            "args": args,
        }));
    }
    serde_json::json!({ "traceEvents": ev, "displayTimeUnit": "ns" })
}
