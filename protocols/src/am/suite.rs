//! The benchmark suite (Liu & Culler's methodology): each benchmark is one
//! workload program written against [`Step`], run on any [`Platform`], and
//! reduced to the figure the papers print.

use super::{Handler, Platform, Run, Step, MAX_NODES};
use crate::Error;
use magic::{NodeId, Time};
use serde::Serialize;

/// Messages per measurement of the message benchmarks (Liu and Culler's
/// loop count: 1024 sends per sender).
pub const MSGS: u64 = 1024;

/// Round trips averaged per destination, and polls per poll benchmark (the
/// papers give no count; as many as the message loops, so the random part
/// of the path delays averages out).
pub const ROUND_TRIPS: u64 = 1024;

fn req(to: u32, handler: Handler) -> Step {
    Step::Request {
        to: NodeId(to),
        words: 4,
        handler,
    }
}

/// An empty program for every node, once the platform has the `need`
/// nodes a benchmark uses (refused otherwise, naming both counts).
fn idle(p: &dyn Platform, need: u32, what: &'static str) -> Result<Vec<Vec<Step>>, Error> {
    let nodes = p.nodes();
    if nodes < need {
        return Err(Error::too_few_nodes(what, need, nodes));
    }
    // Before anything is allocated per node: the platform's own limits
    // (the CM-5's 1024, the SP's 512), then the most any platform has.
    p.check()?;
    crate::error::check("nodes", nodes, need, MAX_NODES)?;
    Ok(vec![Vec::new(); nodes as usize])
}

/// One-to-two: node 0 sends 1024 messages in a loop, alternating between
/// nodes 1 and 2, then waits for each to acknowledge its half; total over
/// 1024. Neither receiver holds it back, so this is the send overhead.
pub fn one_to_two(p: &dyn Platform, reply: bool) -> Result<f64, Error> {
    let mut progs = idle(p, 3, "one-to-two")?;
    progs[0].push(Step::Mark);
    for i in 0..MSGS {
        let to = 1 + (i % 2) as u32;
        progs[0].push(if reply {
            Step::Reply {
                to: NodeId(to),
                words: 4,
            }
        } else {
            req(to, Handler::Nop)
        });
    }
    progs[0].extend([Step::Wait { received: 2 }, Step::Mark]);
    for r in [1, 2] {
        progs[r] = vec![Step::Wait { received: MSGS / 2 }, ack(0)];
    }
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / MSGS as f64)
}

/// A one-word reply acknowledging what arrived.
fn ack(to: u32) -> Step {
    Step::Reply {
        to: NodeId(to),
        words: 1,
    }
}

/// Two-to-one: nodes 1 and 2 send 1024 messages each to node 0, which
/// times its wait for all 2048: the receive overhead, handler included.
pub fn two_to_one(p: &dyn Platform) -> Result<f64, Error> {
    let mut progs = idle(p, 3, "two-to-one")?;
    for s in [1, 2] {
        progs[s] = (0..MSGS).map(|_| req(0, Handler::Nop)).collect();
    }
    progs[0] = vec![Step::Mark, Step::Wait { received: 2 * MSGS }, Step::Mark];
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / (2 * MSGS) as f64)
}

/// One-to-one: node 0 sends 1024 messages to node 1 in a loop, then waits
/// for one reply acknowledging them all; total over 1024. The slower of
/// sender and receiver bounds it (re-sends included when the receiver falls
/// behind and the network backs up).
pub fn one_to_one(p: &dyn Platform) -> Result<f64, Error> {
    let mut progs = idle(p, 2, "one-to-one")?;
    progs[0].push(Step::Mark);
    progs[0].extend((0..MSGS).map(|_| req(1, Handler::Nop)));
    progs[0].extend([Step::Wait { received: 1 }, Step::Mark]);
    progs[1] = vec![Step::Wait { received: MSGS }, ack(0)];
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / MSGS as f64)
}

/// An empty poll: node 0 polls a quiet network 1024 times.
pub fn poll_empty(p: &dyn Platform) -> Result<f64, Error> {
    let mut progs = idle(p, 1, "the empty poll")?;
    progs[0].push(Step::Mark);
    progs[0].extend((0..MSGS).map(|_| Step::Poll));
    progs[0].push(Step::Mark);
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / MSGS as f64)
}

/// A poll that takes one message: node 0 asks node 1 for a reply, computes
/// until it is surely in, then polls once and takes it.
pub fn poll_one(p: &dyn Platform) -> Result<f64, Error> {
    let n = ROUND_TRIPS;
    let settle = Time(300 * magic::time::TICKS_PER_US);
    let mut progs = idle(p, 2, "the successful poll")?;
    for _ in 0..n {
        progs[0].extend([
            Step::Request {
                to: NodeId(1),
                words: 1,
                handler: Handler::Echo,
            },
            Step::Compute(settle),
            Step::Mark,
            Step::Poll,
            Step::Mark,
        ]);
    }
    progs[1].push(Step::Wait { received: n });
    let r = p.run(&progs)?;
    let m = r.marks.first().map_or(&[][..], Vec::as_slice);
    let total: u64 = m
        .chunks_exact(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .sum();
    let got = r.received.first().copied().unwrap_or(0);
    if got != n {
        return Err(Error::Incomplete(format!(
            "poll_one: {got} of {n} replies taken by single polls"
        )));
    }
    Ok(Time(total).as_us() / n as f64)
}

/// Round trip: node 0 sends a one-word request to `to`, whose handler
/// replies; node 0 waits for the reply before the next (2L + 4o).
pub fn round_trip(p: &dyn Platform, to: u32) -> Result<f64, Error> {
    let n = ROUND_TRIPS;
    let mut progs = idle(p, 2, "the round trip")?;
    crate::error::check("to", to, 1, p.nodes() - 1)?;
    progs[0].push(Step::Mark);
    for i in 0..n {
        progs[0].push(Step::Request {
            to: NodeId(to),
            words: 1,
            handler: Handler::Echo,
        });
        progs[0].push(Step::Wait { received: i + 1 });
    }
    progs[0].push(Step::Mark);
    progs[to as usize].push(Step::Wait { received: n });
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / n as f64)
}

/// Ring: every node sends 1024 messages to its right neighbour in a loop,
/// *then* polls until 1024 have come from its left; time per message at
/// the slowest node. Traffic is local, so about send plus receive overhead.
pub fn ring(p: &dyn Platform) -> Result<f64, Error> {
    let n = p.nodes();
    let mut progs = idle(p, 2, "the ring")?;
    for i in 0..n {
        let to = (i + 1) % n;
        let prog = &mut progs[i as usize];
        prog.push(Step::Mark);
        prog.extend((0..MSGS).map(|_| req(to, Handler::Nop)));
        prog.push(Step::Wait { received: MSGS });
        prog.push(Step::Mark);
    }
    let r = p.run(&progs)?;
    let worst = (0..n)
        .map(|i| r.between(i, 0, 1))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .fold(0.0, f64::max);
    Ok(worst / MSGS as f64)
}

/// The LogP view of a platform (what `flashkit logp` prints).
#[derive(Clone, Debug, Serialize)]
pub struct LogP {
    /// The platform's name.
    pub platform: &'static str,
    /// Send overhead: a request's cost to its sender (microseconds, one-to-two).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub send_overhead_us: f64,
    /// A reply's cost to its sender (microseconds, one-to-two).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub reply_overhead_us: f64,
    /// Receive overhead, handler included (microseconds, two-to-one).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub recv_overhead_us: f64,
    /// A poll that finds nothing (microseconds).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub poll_empty_us: f64,
    /// A poll that takes one message (microseconds).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub poll_one_us: f64,
    /// Round trip of a one-word request and its reply, node 0 to node 1
    /// (microseconds).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub round_trip_us: f64,
    /// Time per message around the ring, at the slowest node (microseconds).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub ring_us: f64,
    /// The bulk transfer's fit.
    pub bulk: Bulk,
}

/// The LogP view of a platform: every benchmark behind [`LogP`].
pub fn logp(p: &dyn Platform) -> Result<LogP, Error> {
    Ok(LogP {
        platform: p.name(),
        send_overhead_us: one_to_two(p, false)?,
        reply_overhead_us: one_to_two(p, true)?,
        recv_overhead_us: two_to_one(p)?,
        poll_empty_us: poll_empty(p)?,
        poll_one_us: poll_one(p)?,
        round_trip_us: round_trip(p, 1)?,
        ring_us: ring(p)?,
        bulk: bulk(p)?,
    })
}

/// Round trips from node 0 to every other node k = 1 .. P-1.
pub fn round_trips(p: &dyn Platform) -> Result<Vec<(u32, f64)>, Error> {
    (1..p.nodes()).map(|d| Ok((d, round_trip(p, d)?))).collect()
}

/// A run's op table for a benchmark (for people reading where time went).
pub fn ops_of(p: &dyn Platform) -> Result<Run, Error> {
    let mut progs = idle(p, 2, "the operation costs")?;
    progs[0] = vec![
        Step::Request {
            to: NodeId(1),
            words: 1,
            handler: Handler::Echo,
        },
        Step::Wait { received: 1 },
    ];
    progs[1] = vec![Step::Wait { received: 1 }];
    p.run(&progs)
}

/// Interrupt-driven reception: node 1 sends a message every `interval`;
/// node 0 computes and takes each by interrupt. Returns the processor time
/// node 0 loses per message, and the share of its time that is.
pub fn interrupt_load(p: &dyn Platform, interval: Time) -> Result<(f64, f64), Error> {
    let n = MSGS / 4;
    let mut progs = idle(p, 2, "the interrupt load")?;
    crate::error::check("interval", interval, Time::ZERO, MAX_INTERVAL)?;
    for _ in 0..n {
        progs[1].push(req(0, Handler::Nop));
        progs[1].push(Step::Compute(interval));
    }
    let span = Time(interval.0 * n);
    progs[0] = vec![
        Step::Mark,
        Step::Compute(span),
        Step::Wait { received: n },
        Step::Mark,
    ];
    let r = p.run(&progs)?;
    let lost: u64 = ["interrupt", "receive"]
        .iter()
        .filter_map(|op| r.ops.get(&(0, *op)))
        .map(|s| s.busy)
        .sum();
    let lost = Time(lost).as_us();
    Ok((lost / n as f64, lost / r.between(0, 0, 1)?))
}

/// The longest interval between messages of the interrupt load (1 s).
pub const MAX_INTERVAL: Time = Time(1_000_000 * magic::time::TICKS_PER_US);

/// The processor time lost per message taken by interrupt.
pub fn interrupt_cost(p: &dyn Platform, interval: Time) -> Result<f64, Error> {
    interrupt_load(p, interval).map(|x| x.0)
}

/// A cell of a table: a label, a number shown to so many decimals, or
/// nothing (the platform lacks the operation).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text.
    Label(String),
    /// A number and the decimals it is shown with.
    Num(f64, u8),
    /// Nothing: the platform lacks the operation (`-`, JSON `null`).
    Missing,
}

impl Cell {
    /// The number, if the cell holds one.
    pub fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(x, _) => Some(*x),
            _ => None,
        }
    }
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Label(s) => f.write_str(s),
            Cell::Num(x, d) => write!(f, "{x:.*}", *d as usize),
            Cell::Missing => f.write_str("-"),
        }
    }
}

/// JSON: a label is a string, a number a number (rounded as shown), a
/// missing cell null.
impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Label(x) => s.serialize_str(x),
            Cell::Num(x, d) => {
                let k = 10f64.powi(*d as i32);
                s.serialize_f64((x * k).round() / k)
            }
            Cell::Missing => s.serialize_none(),
        }
    }
}

/// A number to `d` decimals; missing when not finite (a fit over a flat
/// curve has no bandwidth).
fn num(x: f64, d: u8) -> Cell {
    if x.is_finite() {
        Cell::Num(x, d)
    } else {
        Cell::Missing
    }
}

fn lab(x: impl ToString) -> Cell {
    Cell::Label(x.to_string())
}

fn us(x: f64) -> Cell {
    Cell::Num(x, 2)
}

fn count(x: u64) -> Cell {
    Cell::Num(x as f64, 0)
}

/// One benchmark's table, as the papers print it; `units` names each
/// column's unit (none for a label column).
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// The benchmark's name.
    pub benchmark: &'static str,
    /// The column headings.
    pub columns: Vec<&'static str>,
    /// Each column's unit (`None` for a label column).
    pub units: Vec<Option<&'static str>>,
    /// The rows, a cell per column.
    pub rows: Vec<Vec<Cell>>,
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "== {}", self.benchmark)?;
        let text: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::to_string).collect())
            .collect();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                text.iter()
                    .map(|r| r[i].len())
                    .chain([self.columns[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        writeln!(f, "{}", line(self.columns.clone()))?;
        for r in &text {
            writeln!(f, "{}", line(r.iter().map(String::as_str).collect()))?;
        }
        Ok(())
    }
}

/// A table whose columns are (name, unit) pairs.
fn tab(
    benchmark: &'static str,
    cols: &[(&'static str, Option<&'static str>)],
    rows: Vec<Vec<Cell>>,
) -> Table {
    Table {
        benchmark,
        columns: cols.iter().map(|c| c.0).collect(),
        units: cols.iter().map(|c| c.1).collect(),
        rows,
    }
}

const US: Option<&str> = Some("us");
const MBS: Option<&str> = Some("MB/s");
const BYTES: Option<&str> = Some("bytes");
const NODE: Option<&str> = Some("node");
const NONE: Option<&str> = None;

/// The benchmarks the suite knows, by name.
pub const BENCHMARKS: [&str; 12] = [
    "one-to-one",
    "one-to-two",
    "two-to-one",
    "round-trip",
    "ring",
    "poll",
    "traverse",
    "array-transfer",
    "two-to-one-segments",
    "swap",
    "bandwidth",
    "operations",
];

/// Run one benchmark (by name) and tabulate it (some print a second table
/// of fits).
pub fn table(p: &dyn Platform, name: &str) -> Result<Vec<Table>, Error> {
    Ok(match name {
        "one-to-one" => vec![tab(
            "one-to-one",
            &[("us per message", US)],
            vec![vec![us(one_to_one(p)?)]],
        )],
        "one-to-two" => vec![tab(
            "one-to-two",
            &[("operation", NONE), ("us per send", US)],
            vec![
                vec![lab("request"), us(one_to_two(p, false)?)],
                vec![lab("reply"), us(one_to_two(p, true)?)],
            ],
        )],
        "two-to-one" => vec![tab(
            "two-to-one",
            &[("us per message received", US)],
            vec![vec![us(two_to_one(p)?)]],
        )],
        "round-trip" => {
            let rows = round_trips(p)?
                .into_iter()
                .map(|(d, t)| vec![count(d as u64), us(t)])
                .collect();
            vec![tab("round-trip", &[("to node", NODE), ("us", US)], rows)]
        }
        "ring" => vec![tab(
            "ring",
            &[("nodes", Some("nodes")), ("us per message", US)],
            vec![vec![count(p.nodes() as u64), us(ring(p)?)]],
        )],
        "poll" => vec![tab(
            "poll",
            &[("poll", NONE), ("us", US)],
            vec![
                vec![lab("unsuccessful"), us(poll_empty(p)?)],
                vec![lab("one message"), us(poll_one(p)?)],
            ],
        )],
        "traverse" => {
            let rows = traverse(p)?
                .into_iter()
                .map(|(i, a, b)| vec![count(i as u64), us(a), us(b)])
                .collect();
            vec![tab(
                "traverse",
                &[
                    ("step (partner = node xor step)", Some("step")),
                    ("us per message", US),
                    ("with a poll per send us", US),
                ],
                rows,
            )]
        }
        "array-transfer" => array_tables(p)?,
        "two-to-one-segments" => {
            let rows = [256u32, 4096, 65536]
                .into_iter()
                .map(|b| {
                    let one = two_to_one_segments(p, b, true)?;
                    let two = two_to_one_segments(p, b, false)?;
                    let mb = |t: f64| Cell::Num(2.0 * b as f64 / t, 2);
                    Ok(vec![count(b as u64), us(one), mb(one), us(two), mb(two)])
                })
                .collect::<Result<_, Error>>()?;
            vec![tab(
                "two-to-one-segments",
                &[
                    ("bytes per sender", BYTES),
                    ("one segment us", US),
                    ("one segment MB/s", MBS),
                    ("two segments us", US),
                    ("two segments MB/s", MBS),
                ],
                rows,
            )]
        }
        "swap" => {
            let rows = [64u32, 1024, 16384, 65536]
                .into_iter()
                .map(|b| {
                    let t = swap(p, b)?;
                    Ok(vec![count(b as u64), us(t), Cell::Num(b as f64 / t, 2)])
                })
                .collect::<Result<_, Error>>()?;
            vec![tab(
                "swap",
                &[
                    ("bytes each way", BYTES),
                    ("us per swap", US),
                    ("MB/s each way", MBS),
                ],
                rows,
            )]
        }
        "bandwidth" => bandwidth_tables(p)?,
        "operations" => {
            let r = ops_of(p)?;
            let rows = r
                .ops
                .iter()
                .map(|((n, op), s)| {
                    vec![
                        count(*n as u64),
                        lab(op),
                        count(s.calls),
                        us(s.mean_us()),
                        count(s.ni_reads),
                        count(s.ni_writes),
                        count(s.instructions),
                    ]
                })
                .collect();
            vec![tab(
                "operations (one round trip)",
                &[
                    ("node", NODE),
                    ("operation", NONE),
                    ("calls", Some("calls")),
                    ("mean us", US),
                    ("ni reads", Some("accesses")),
                    ("ni writes", Some("accesses")),
                    ("instr", Some("instructions")),
                ],
                rows,
            )]
        }
        other => {
            return Err(Error::Unknown {
                what: "benchmark",
                name: other.to_string(),
                known: BENCHMARKS.join(", "),
            })
        }
    })
}

/// Interrupt-driven reception against the interval between messages, on
/// the stock kernel path and the fast one.
pub fn interrupt_table(stock: &dyn Platform, fast: &dyn Platform) -> Result<Table, Error> {
    let rows = [5u64, 10, 20, 50, 100, 200]
        .into_iter()
        .map(|i| {
            let at = Time(i * magic::time::TICKS_PER_US);
            let (a, sa) = interrupt_load(stock, at)?;
            let (b, sb) = interrupt_load(fast, at)?;
            Ok(vec![
                count(i),
                us(a),
                Cell::Num(100.0 * sa, 0),
                us(b),
                Cell::Num(100.0 * sb, 0),
            ])
        })
        .collect::<Result<_, Error>>()?;
    Ok(tab(
        "interrupt",
        &[
            ("interval us", US),
            ("stock us/msg", US),
            ("stock time lost %", Some("%")),
            ("fast us/msg", US),
            ("fast time lost %", Some("%")),
        ],
        rows,
    ))
}

/// Block sizes of the array-transfer benchmark: 2 bytes to 64 KB.
pub const SIZES: [u32; 16] = [
    2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
];

/// Transfers averaged per size.
const REPEAT: u64 = 4;

/// Array transfer one-to-one: node 0 moves `bytes` to node 1, four times.
/// Blocking: each transfer is timed until the receiver's reply says the
/// whole array arrived. Non-blocking: the timer stops when the transfer
/// call returns; the acknowledgement is then waited for, untimed, before
/// the next. Microseconds per transfer.
pub fn array_transfer(
    p: &dyn Platform,
    bytes: u32,
    align: super::Align,
    blocking: bool,
) -> Result<f64, Error> {
    let mut progs = idle(p, 2, "the array transfer")?;
    check_bytes(bytes)?;
    let store = Step::Store {
        to: NodeId(1),
        bytes,
        align,
    };
    for i in 0..REPEAT {
        let wait = Step::Wait { received: i + 1 };
        progs[0].extend(if blocking {
            [Step::Mark, store, wait, Step::Mark]
        } else {
            [Step::Mark, store, Step::Mark, wait]
        });
    }
    progs[1] = vec![Step::Wait { received: REPEAT }];
    let r = p.run(&progs)?;
    let m = r.marks.first().map_or(&[][..], Vec::as_slice);
    if m.len() != 2 * REPEAT as usize {
        return Err(Error::Incomplete(format!(
            "the array transfer recorded {} marks of {}",
            m.len(),
            2 * REPEAT
        )));
    }
    let total: u64 = m
        .chunks_exact(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .sum();
    Ok(Time(total).as_us() / REPEAT as f64)
}

/// The most bytes one block of a benchmark may hold ([`STREAM`], 1 MB).
pub const MAX_BYTES: u32 = STREAM;

/// A benchmark's block holds 1 to [`MAX_BYTES`] bytes.
fn check_bytes(bytes: u32) -> Result<(), Error> {
    crate::error::check("bytes", bytes, 1, MAX_BYTES)
}

/// A least-squares fit of T(x) = c + x / B.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bulk {
    /// Start-up time, the fit's constant c (microseconds).
    #[serde(serialize_with = "magic::figures::ser_us")]
    pub startup_us: f64,
    /// Asymptotic bandwidth, the fit's B (MB/s).
    #[serde(serialize_with = "magic::figures::ser_mb_s")]
    pub bandwidth_mb_s: f64,
    /// The size at which half the asymptotic bandwidth is reached (c * B).
    #[serde(serialize_with = "magic::figures::ser_count")]
    pub n_half_bytes: f64,
}

/// The least-squares fit of T(x) = c + x / B over (bytes, microseconds)
/// points.
pub fn fit(points: &[(f64, f64)]) -> Bulk {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |a, p| {
        (a.0 + (p.0 - mx) * (p.1 - my), a.1 + (p.0 - mx) * (p.0 - mx))
    });
    let slope = sxy / sxx; // microseconds per byte
    let c = my - slope * mx;
    let b = 1.0 / slope; // bytes per microsecond = MB/s
    Bulk {
        startup_us: c,
        bandwidth_mb_s: b,
        n_half_bytes: c * b,
    }
}

/// The bulk figures of a platform: blocking array transfer at double-word
/// alignment (until the receiver says all is in), fitted over every size.
/// Blocking, because a non-blocking call may return before the data moves
/// (MAGIC takes the whole block; an SP store of one chunk goes at once).
pub fn bulk(p: &dyn Platform) -> Result<Bulk, Error> {
    Ok(fit(&array_curve(p, super::Align::Double, true)?))
}

/// (bytes, us per transfer) over every size.
pub fn array_curve(
    p: &dyn Platform,
    align: super::Align,
    blocking: bool,
) -> Result<Vec<(f64, f64)>, Error> {
    SIZES
        .iter()
        .map(|&x| Ok((x as f64, array_transfer(p, x, align, blocking)?)))
        .collect()
}

/// The array-transfer tables: time per transfer by size, blocking and not,
/// at each destination alignment; then each column's fit.
pub fn array_tables(p: &dyn Platform) -> Result<Vec<Table>, Error> {
    use super::Align;
    let cols = [
        (true, Align::Byte, "blocking byte us", "blocking, byte"),
        (true, Align::Word, "blocking word us", "blocking, word"),
        (
            true,
            Align::Double,
            "blocking double us",
            "blocking, double",
        ),
        (
            false,
            Align::Byte,
            "non-blocking byte us",
            "non-blocking, byte",
        ),
        (
            false,
            Align::Word,
            "non-blocking word us",
            "non-blocking, word",
        ),
        (
            false,
            Align::Double,
            "non-blocking double us",
            "non-blocking, double",
        ),
    ];
    let curves = cols
        .iter()
        .map(|c| array_curve(p, c.1, c.0))
        .collect::<Result<Vec<_>, Error>>()?;
    let rows = SIZES
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            std::iter::once(count(x as u64))
                .chain(curves.iter().map(|c| us(c[i].1)))
                .collect()
        })
        .collect();
    let mut head = vec![("bytes", BYTES)];
    head.extend(cols.iter().map(|c| (c.2, US)));
    let fits = cols
        .iter()
        .zip(&curves)
        .map(|(c, v)| {
            let f = fit(v);
            vec![
                lab(c.3),
                num(f.startup_us, 2),
                num(f.bandwidth_mb_s, 2),
                num(f.n_half_bytes, 0),
            ]
        })
        .collect();
    Ok(vec![
        tab("array-transfer", &head, rows),
        tab(
            "array-transfer fit (T = start-up + bytes / bandwidth)",
            &[
                ("transfer, alignment", NONE),
                ("start-up us", US),
                ("MB/s", MBS),
                ("n1/2 bytes", BYTES),
            ],
            fits,
        ),
    ])
}

/// Traverse, step `i`: every node `j` and its partner `j xor i` exchange
/// 1024 messages, pipelined: each sends its 1024 in a loop (with
/// `poll_each`, one poll after each send: the paper's variant), then waits
/// for the partner's. Each step starts from a quiet machine, as after a
/// barrier. Average over the nodes of the time per message sent and
/// received.
pub fn traverse_step(p: &dyn Platform, i: u32, poll_each: bool) -> Result<f64, Error> {
    let n = p.nodes();
    let mut progs = idle(p, 2, "traverse")?;
    let pairs: Vec<u32> = (0..n).filter(|&j| (j ^ i) < n).collect();
    for &j in &pairs {
        let prog = &mut progs[j as usize];
        prog.push(Step::Mark);
        for _ in 0..MSGS {
            prog.push(req(j ^ i, Handler::Nop));
            if poll_each {
                prog.push(Step::Poll);
            }
        }
        prog.extend([Step::Wait { received: MSGS }, Step::Mark]);
    }
    let r = p.run(&progs)?;
    let sum: f64 = pairs
        .iter()
        .map(|&j| r.between(j, 0, 1))
        .sum::<Result<f64, _>>()?;
    Ok(sum / pairs.len() as f64 / MSGS as f64)
}

/// The steps traverse runs: every power of two (each stands for the steps
/// that share its highest bit, which cross the same levels of a tree) and
/// the last.
pub fn traverse_steps(nodes: u32) -> Vec<u32> {
    (0..32)
        .map(|k| 1u32 << k)
        .take_while(|&s| s < nodes)
        .chain(nodes.checked_sub(1).filter(|&s| s > 0))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Traverse by step: (step, us per message, us per message with a poll
/// after each send).
pub fn traverse(p: &dyn Platform) -> Result<Vec<(u32, f64, f64)>, Error> {
    traverse_steps(p.nodes())
        .into_iter()
        .map(|i| Ok((i, traverse_step(p, i, false)?, traverse_step(p, i, true)?)))
        .collect()
}

/// Swap: nodes 0 and 1 send each other an array of `bytes` at once, each
/// receiving while it sends; time until its own array is acknowledged and
/// the other one is in (the slower node), microseconds.
pub fn swap(p: &dyn Platform, bytes: u32) -> Result<f64, Error> {
    let mut progs = idle(p, 2, "the swap")?;
    check_bytes(bytes)?;
    for (me, other) in [(0u32, 1u32), (1, 0)] {
        progs[me as usize] = vec![
            Step::Mark,
            Step::Store {
                to: NodeId(other),
                bytes,
                align: super::Align::Double,
            },
            // The partner's array and the acknowledgement of ours.
            Step::Wait { received: 2 },
            Step::Mark,
        ];
    }
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)?.max(r.between(1, 0, 1)?))
}

/// Two-to-one array transfer: nodes 1 and 2 each send node 0 `bytes` at
/// once, into two halves of one segment they share or into a segment each;
/// node 0's time from the start until all is in, microseconds.
pub fn two_to_one_segments(p: &dyn Platform, bytes: u32, shared: bool) -> Result<f64, Error> {
    let mut progs = idle(p, 3, "two-to-one into segments")?;
    check_bytes(bytes)?;
    for s in [1usize, 2] {
        progs[s] = vec![
            if shared {
                Step::StoreShared {
                    to: NodeId(0),
                    bytes,
                    align: super::Align::Double,
                    segment: 1,
                    total: 2 * bytes,
                }
            } else {
                Step::Store {
                    to: NodeId(0),
                    bytes,
                    align: super::Align::Double,
                }
            },
            Step::Wait { received: 1 },
        ];
    }
    let ends = if shared { 1 } else { 2 };
    progs[0] = vec![Step::Mark, Step::Wait { received: ends }, Step::Mark];
    let r = p.run(&progs)?;
    r.between(0, 0, 1)
}

/// The bytes the pipelined bandwidth benchmark moves at every size (1 MB).
pub const STREAM: u32 = 1 << 20;

/// Sizes of the bandwidth benchmark: 16 bytes to 1 MB.
pub const BW_SIZES: [u32; 9] = [16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20];

/// Blocking bandwidth, one way between nodes 0 and 1: a store (or a get)
/// of `bytes`, waiting for its completion before the next; microseconds
/// per operation.
pub fn blocking_op(p: &dyn Platform, bytes: u32, get: bool) -> Result<f64, Error> {
    let mut progs = idle(p, 2, "the blocking store and get")?;
    check_bytes(bytes)?;
    let k = (STREAM / bytes).clamp(1, 8) as u64;
    progs[0].push(Step::Mark);
    for i in 0..k {
        progs[0].push(if get {
            Step::Get {
                from: NodeId(1),
                bytes,
            }
        } else {
            Step::Store {
                to: NodeId(1),
                bytes,
                align: super::Align::Double,
            }
        });
        progs[0].push(Step::Wait { received: i + 1 });
    }
    progs[0].push(Step::Mark);
    if !get {
        progs[1] = vec![Step::Wait { received: k }];
    }
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1)? / k as f64)
}

/// Pipelined bandwidth: 1 MB moved from node 0 to node 1 as back-to-back
/// stores of `bytes` (asynchronous: none waits for the one before), timed
/// until every one is acknowledged; MB/s.
pub fn pipelined(p: &dyn Platform, bytes: u32) -> Result<f64, Error> {
    let mut progs = idle(p, 2, "the pipelined stores")?;
    check_bytes(bytes)?;
    let k = STREAM.div_ceil(bytes) as u64;
    progs[0].push(Step::Mark);
    progs[0].extend((0..k).map(|_| Step::Store {
        to: NodeId(1),
        bytes,
        align: super::Align::Double,
    }));
    progs[0].extend([Step::Wait { received: k }, Step::Mark]);
    progs[1] = vec![Step::Wait { received: k }];
    let r = p.run(&progs)?;
    Ok(STREAM as f64 / r.between(0, 0, 1)?)
}

/// The size at which a bandwidth curve first reaches half its last value,
/// interpolated linearly between the sizes around it.
pub fn n_half(curve: &[(f64, f64)]) -> f64 {
    let Some(&(_, top)) = curve.last() else {
        return f64::NAN;
    };
    let half = top / 2.0;
    let mut prev = (0.0, 0.0);
    for &(x, b) in curve {
        if b >= half {
            return prev.0 + (x - prev.0) * (half - prev.1) / (b - prev.1);
        }
        prev = (x, b);
    }
    f64::NAN
}

/// The bandwidth figures: blocking store and get fitted (T = c + n/B,
/// n1/2 = cB), the pipelined curve's last point and its n1/2 read off it.
#[derive(Clone, Debug, Serialize)]
pub struct Bandwidth {
    /// The blocking store's fit.
    pub store: Bulk,
    /// None where the layer has no get.
    pub get: Option<Bulk>,
    /// The pipelined curve's last point (MB/s).
    pub pipelined_mb_s: f64,
    /// The size at which the pipelined curve reaches half its last point (bytes).
    pub pipelined_n_half_bytes: f64,
    /// Each size's figures.
    pub points: Vec<BwPoint>,
}

/// One size of the bandwidth benchmark: (bytes, us per blocking store, us
/// per blocking get, MB/s pipelined).
pub type BwPoint = (u32, f64, Option<f64>, Option<f64>);

/// Run the bandwidth benchmark (the SP paper's method) on a platform.
pub fn bandwidth(p: &dyn Platform) -> Result<Bandwidth, Error> {
    let mut points = Vec::new();
    for &x in &BW_SIZES {
        let st = blocking_op(p, x, false)?;
        let get = if p.has_get() {
            Some(blocking_op(p, x, true)?)
        } else {
            None
        };
        // The asynchronous curve starts at 64 bytes.
        let pipe = if x >= 64 {
            Some(pipelined(p, x)?)
        } else {
            None
        };
        points.push((x, st, get, pipe));
    }
    let pts = |f: &dyn Fn(&BwPoint) -> Option<f64>| {
        points
            .iter()
            .filter_map(|q| f(q).map(|y| (q.0 as f64, y)))
            .collect::<Vec<_>>()
    };
    let store = fit(&pts(&|q| Some(q.1)));
    let get = p.has_get().then(|| fit(&pts(&|q| q.2)));
    let curve = pts(&|q| q.3);
    Ok(Bandwidth {
        store,
        get,
        pipelined_mb_s: curve.last().map_or(f64::NAN, |c| c.1),
        pipelined_n_half_bytes: n_half(&curve),
        points,
    })
}

/// The bandwidth tables: per size, MB/s of blocking stores and gets and of
/// the pipelined stream; then r-infinity and n1/2 of each.
pub fn bandwidth_tables(p: &dyn Platform) -> Result<Vec<Table>, Error> {
    let b = bandwidth(p)?;
    let mb = |x: u32, t: f64| Cell::Num(x as f64 / t, 2);
    let rows = b
        .points
        .iter()
        .map(|&(x, st, get, pipe)| {
            vec![
                count(x as u64),
                mb(x, st),
                get.map_or(Cell::Missing, |t| mb(x, t)),
                pipe.map_or(Cell::Missing, |m| Cell::Num(m, 2)),
            ]
        })
        .collect();
    let fit_row = |name: &str, f: Option<Bulk>| match f {
        Some(f) => vec![lab(name), num(f.bandwidth_mb_s, 2), num(f.n_half_bytes, 0)],
        None => vec![lab(name), Cell::Missing, Cell::Missing],
    };
    Ok(vec![
        tab(
            "bandwidth",
            &[
                ("bytes", BYTES),
                ("blocking store MB/s", MBS),
                ("blocking get MB/s", MBS),
                ("pipelined store MB/s", MBS),
            ],
            rows,
        ),
        tab(
            "bandwidth r-infinity and n1/2",
            &[("mode", NONE), ("MB/s", MBS), ("n1/2 bytes", BYTES)],
            vec![
                fit_row("blocking store (fit)", Some(b.store)),
                fit_row("blocking get (fit)", b.get),
                vec![
                    lab("pipelined store (curve)"),
                    num(b.pipelined_mb_s, 2),
                    num(b.pipelined_n_half_bytes, 0),
                ],
            ],
        ),
    ])
}
