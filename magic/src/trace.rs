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

/// The most slices a machine records in all: a run that would record
/// more halts at the instant it passes them ([`crate::Halt::TraceFull`]).
/// 2^20 slices are some 56 MB held and some 150 MB of trace-event JSON,
/// about what a trace viewer still opens; a longer run is looked at in a
/// shorter one, or untraced.
pub const MAX_SLICES: u64 = 1 << 20;

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
    // One writer of the document: the streamed one, held as a value.
    serde_json::to_value(Chrome::new(nodes, slices.to_vec())).unwrap_or_default()
}

/// A run's timelines as Chrome trace-event JSON ([`chrome_json`]'s
/// document), serialized as it is written: a traced run of millions of
/// handlers holds its slices (some 50 bytes each), never the document
/// (some 2 KB a slice as a `serde_json::Value`), so writing a trace takes
/// little more memory than recording it.
///
/// ```
/// use magic::trace::{chrome_json, Chrome, Slice, Track};
/// let s = Slice { node: 1, track: Track::Pp, protocol: "p", name: "h",
///                 start: magic::Cycles(3), end: magic::Cycles(9), msg: None };
/// let c = Chrome::new(2, vec![s]);
/// assert_eq!(serde_json::to_string(&c).unwrap(), chrome_json(2, &[s]).to_string());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Chrome {
    nodes: u32,
    slices: Vec<Slice>,
}

impl Chrome {
    /// The timelines `slices` of a machine of `nodes` nodes (a count past
    /// 2^12 names that many processes, as [`chrome_json`]).
    pub fn new(nodes: u32, slices: Vec<Slice>) -> Chrome {
        Chrome {
            nodes: nodes.min(crate::ids::PAddr::MAX_NODES),
            slices,
        }
    }

    /// The slices, in the order they were recorded.
    pub fn slices(&self) -> &[Slice] {
        &self.slices
    }

    /// The whole document as a value ([`chrome_json`]).
    pub fn json(&self) -> serde_json::Value {
        chrome_json(self.nodes, &self.slices)
    }
}

/// Keys in the order `serde_json`'s maps keep them (sorted), so the
/// streamed document prints byte for byte as its value ([`chrome_json`])
/// does.
impl Serialize for Chrome {
    fn serialize<Z: serde::Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::SerializeMap;
        let mut m = z.serialize_map(Some(2))?;
        m.serialize_entry("displayTimeUnit", "ns")?;
        m.serialize_entry("traceEvents", &Events(self))?;
        m.end()
    }
}

/// The `traceEvents` array: each node's metadata, then every slice.
struct Events<'a>(&'a Chrome);

impl Serialize for Events<'_> {
    fn serialize<Z: serde::Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::SerializeSeq;
        let c = self.0;
        let per_node = 1 + 2 * Track::ALL.len();
        let mut seq = z.serialize_seq(Some(c.nodes as usize * per_node + c.slices.len()))?;
        for n in 0..c.nodes {
            let name = format!("node {n}");
            let process = MetaArgs::Name { name: &name };
            seq.serialize_element(&Meta::new(process, "process_name", n, 0))?;
            for t in Track::ALL {
                let tid = t as u32;
                let thread = MetaArgs::Name { name: t.name() };
                seq.serialize_element(&Meta::new(thread, "thread_name", n, tid))?;
                let sort = MetaArgs::SortIndex { sort_index: tid };
                seq.serialize_element(&Meta::new(sort, "thread_sort_index", n, tid))?;
            }
        }
        for s in &c.slices {
            let name = if s.protocol.is_empty() {
                s.name.to_string()
            } else {
                format!("{}.{}", s.protocol, s.name)
            };
            seq.serialize_element(&Complete {
                args: CompleteArgs {
                    cycles: s.end.0.saturating_sub(s.start.0),
                    message: s.msg.map(|m| m.0),
                },
                cat: s.track.name(),
                dur: us(s.end - s.start),
                name: &name,
                ph: "X",
                pid: s.node,
                tid: s.track as u32,
                ts: us(s.start),
            })?;
        }
        seq.end()
    }
}

/// A metadata ("M") event, its keys sorted.
#[derive(Serialize)]
struct Meta<'a> {
    args: MetaArgs<'a>,
    name: &'static str,
    ph: &'static str,
    pid: u32,
    tid: u32,
}

impl<'a> Meta<'a> {
    fn new(args: MetaArgs<'a>, name: &'static str, pid: u32, tid: u32) -> Meta<'a> {
        Meta {
            args,
            name,
            ph: "M",
            pid,
            tid,
        }
    }
}

/// A metadata event's arguments: a name, or a sort index.
#[derive(Serialize)]
#[serde(untagged)]
enum MetaArgs<'a> {
    Name { name: &'a str },
    SortIndex { sort_index: u32 },
}

/// A complete ("X") event, its keys sorted.
#[derive(Serialize)]
struct Complete<'a> {
    args: CompleteArgs,
    cat: &'static str,
    dur: f64,
    name: &'a str,
    ph: &'static str,
    pid: u32,
    tid: u32,
    ts: f64,
}

/// A complete event's arguments: its cycles, and its message's type if
/// it had one.
#[derive(Serialize)]
struct CompleteArgs {
    cycles: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<u8>,
}
