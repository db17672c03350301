//! The benchmark suite (Liu & Culler's methodology): each benchmark is one
//! workload program written against [`Step`], run on any [`Platform`], and
//! reduced to the figure the papers print.

use super::config::PlatformConfig;
use super::{Handler, Platform, Run, Step, MAX_NODES};
use crate::Error;
use magic::{NodeId, OutOfRange, Time};
use serde::{Deserialize, Serialize};

/// Messages per measurement of the message benchmarks (Liu and Culler's
/// loop count: 1024 sends per sender).
pub const MSGS: u64 = 1024;

/// Round trips averaged per destination, and polls per poll benchmark (the
/// papers give no count; as many as the message loops, so the random part
/// of the path delays averages out).
pub const ROUND_TRIPS: u64 = 1024;

/// What a benchmark measured: a stretch of simulated time and the
/// repetitions (messages, polls, round trips, transfers) it covers, the
/// counts a per-repetition time is computed from ([`Span::us`]).
/// A span of no repetitions has no time per repetition: built
/// ([`Span::new`]) or read back, it is refused (field `repeats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "SpanWire")]
pub struct Span {
    /// Simulated time, in ticks ([`magic::time::TICKS_PER_US`] a
    /// microsecond): the unit every platform's clock counts in.
    ticks: u64,
    /// The repetitions it covers (at least 1).
    repeats: u64,
}

/// The JSON of a [`Span`], key by key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpanWire {
    ticks: u64,
    repeats: u64,
}

impl TryFrom<SpanWire> for Span {
    type Error = OutOfRange;
    fn try_from(w: SpanWire) -> Result<Span, OutOfRange> {
        Span::new(w.ticks, w.repeats)
    }
}

/// No time over one repetition.
impl Default for Span {
    fn default() -> Self {
        Span {
            ticks: 0,
            repeats: 1,
        }
    }
}

impl Span {
    /// `ticks` of simulated time over `repeats` repetitions, or `Err`
    /// naming `repeats` when there are none (a time per repetition would
    /// be infinite).
    ///
    /// ```
    /// use protocols::am::suite::Span;
    /// assert_eq!(Span::new(26_400, 4).unwrap().us(), 0.25);
    /// assert_eq!(Span::new(5, 0).unwrap_err().field, "repeats");
    /// ```
    pub fn new(ticks: u64, repeats: u64) -> Result<Span, OutOfRange> {
        OutOfRange::check("repeats", repeats, 1, u64::MAX)?;
        Ok(Span { ticks, repeats })
    }

    /// Simulated time, in ticks ([`magic::time::TICKS_PER_US`] a
    /// microsecond): the unit every platform's clock counts in.
    pub fn ticks(self) -> u64 {
        self.ticks
    }

    /// The repetitions it covers (at least 1).
    pub fn repeats(self) -> u64 {
        self.repeats
    }

    /// Microseconds per repetition: the one place a span becomes a time.
    pub fn us(self) -> f64 {
        Time(self.ticks).as_us() / self.repeats as f64
    }
}

/// Node `node`'s ticks between its first two marks, over `repeats`.
fn span(r: &Run, node: u32, repeats: u64) -> Result<Span, Error> {
    Ok(Span {
        ticks: r.ticks_between(node, 0, 1)?,
        repeats,
    })
}

fn req(to: u32, handler: Handler) -> Step {
    Step::Request {
        to: NodeId(to),
        words: 4,
        handler,
    }
}

/// `Err` naming both counts unless the platform has the `need` nodes a
/// benchmark uses.
fn at_least(p: &dyn Platform, need: u32, what: &'static str) -> Result<(), Error> {
    match p.nodes() {
        n if n < need => Err(Error::too_few_nodes(what, need, n)),
        _ => Ok(()),
    }
}

/// An empty program for every node, once the platform has the `need`
/// nodes a benchmark uses (refused otherwise, naming both counts).
fn idle(p: &dyn Platform, need: u32, what: &'static str) -> Result<Vec<Vec<Step>>, Error> {
    at_least(p, need, what)?;
    let nodes = p.nodes();
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
    Ok(one_to_two_span(p, reply)?.us())
}

/// [`one_to_two`]'s counts.
pub fn one_to_two_span(p: &dyn Platform, reply: bool) -> Result<Span, Error> {
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
    span(&p.run(&progs)?, 0, MSGS)
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
    Ok(two_to_one_span(p)?.us())
}

/// [`two_to_one`]'s counts.
pub fn two_to_one_span(p: &dyn Platform) -> Result<Span, Error> {
    let mut progs = idle(p, 3, "two-to-one")?;
    for s in [1, 2] {
        progs[s] = (0..MSGS).map(|_| req(0, Handler::Nop)).collect();
    }
    progs[0] = vec![Step::Mark, Step::Wait { received: 2 * MSGS }, Step::Mark];
    span(&p.run(&progs)?, 0, 2 * MSGS)
}

/// One-to-one: node 0 sends 1024 messages to node 1 in a loop, then waits
/// for one reply acknowledging them all; total over 1024. The slower of
/// sender and receiver bounds it (re-sends included when the receiver falls
/// behind and the network backs up).
pub fn one_to_one(p: &dyn Platform) -> Result<f64, Error> {
    Ok(one_to_one_span(p)?.us())
}

/// [`one_to_one`]'s counts.
pub fn one_to_one_span(p: &dyn Platform) -> Result<Span, Error> {
    let mut progs = idle(p, 2, "one-to-one")?;
    progs[0].push(Step::Mark);
    progs[0].extend((0..MSGS).map(|_| req(1, Handler::Nop)));
    progs[0].extend([Step::Wait { received: 1 }, Step::Mark]);
    progs[1] = vec![Step::Wait { received: MSGS }, ack(0)];
    span(&p.run(&progs)?, 0, MSGS)
}

/// An empty poll: node 0 polls a quiet network 1024 times.
pub fn poll_empty(p: &dyn Platform) -> Result<f64, Error> {
    Ok(poll_empty_span(p)?.us())
}

/// [`poll_empty`]'s counts.
pub fn poll_empty_span(p: &dyn Platform) -> Result<Span, Error> {
    let mut progs = idle(p, 1, "empty poll")?;
    progs[0].push(Step::Mark);
    progs[0].extend((0..MSGS).map(|_| Step::Poll));
    progs[0].push(Step::Mark);
    span(&p.run(&progs)?, 0, MSGS)
}

/// A poll that takes one message: node 0 asks node 1 for a reply, computes
/// until it is surely in, then polls once and takes it.
pub fn poll_one(p: &dyn Platform) -> Result<f64, Error> {
    Ok(poll_one_span(p)?.us())
}

/// [`poll_one`]'s counts.
pub fn poll_one_span(p: &dyn Platform) -> Result<Span, Error> {
    let n = ROUND_TRIPS;
    let mut progs = idle(p, 2, "successful poll")?;
    // Long enough for the reply to be in: 300 us, or four of this
    // platform's round trips where its costs make one longer (a poll
    // before the reply is in would time an empty poll).
    let mut once = progs.clone();
    once[0] = vec![
        Step::Mark,
        Step::Request {
            to: NodeId(1),
            words: 1,
            handler: Handler::Echo,
        },
        Step::Wait { received: 1 },
        Step::Mark,
    ];
    once[1].push(Step::Wait { received: 1 });
    let trip = p.run(&once)?.ticks_between(0, 0, 1)?;
    let settle = Time((300 * magic::time::TICKS_PER_US).max(trip.saturating_mul(4)));
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
    Ok(Span {
        ticks: total,
        repeats: n,
    })
}

/// Round trip: node 0 sends a one-word request to `to`, whose handler
/// replies; node 0 waits for the reply before the next (2L + 4o).
pub fn round_trip(p: &dyn Platform, to: u32) -> Result<f64, Error> {
    Ok(round_trip_span(p, to)?.us())
}

/// [`round_trip`]'s counts.
pub fn round_trip_span(p: &dyn Platform, to: u32) -> Result<Span, Error> {
    let n = ROUND_TRIPS;
    let mut progs = idle(p, 2, "round trip")?;
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
    span(&p.run(&progs)?, 0, n)
}

/// Ring: every node sends 1024 messages to its right neighbour in a loop,
/// *then* polls until 1024 have come from its left; time per message at
/// the slowest node. Traffic is local, so about send plus receive overhead.
pub fn ring(p: &dyn Platform) -> Result<f64, Error> {
    Ok(ring_span(p)?.us())
}

/// [`ring`]'s counts: the slowest node's time.
pub fn ring_span(p: &dyn Platform) -> Result<Span, Error> {
    let n = p.nodes();
    let mut progs = idle(p, 2, "ring")?;
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
        .map(|i| r.ticks_between(i, 0, 1))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .fold(0, u64::max);
    Ok(Span {
        ticks: worst,
        repeats: MSGS,
    })
}

/// The counts behind a platform's LogP figures: each benchmark's span and
/// the bulk transfer's curve.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogpCounts {
    /// One-to-two, requests.
    pub send_overhead: Span,
    /// One-to-two, replies.
    pub reply_overhead: Span,
    /// Two-to-one.
    pub recv_overhead: Span,
    /// Empty polls.
    pub poll_empty: Span,
    /// Polls that take one message.
    pub poll_one: Span,
    /// Round trips, node 0 to node 1.
    pub round_trip: Span,
    /// The ring, at its slowest node.
    pub ring: Span,
    /// The blocking array transfer at double-word alignment, every size of
    /// [`SIZES`].
    pub bulk: Vec<CurvePoint>,
}

/// One size of a transfer curve: the bytes of a block and the span of its
/// transfers. Its JSON is flat (`bytes`, `ticks`, `repeats`); read back,
/// no transfers timed is refused (field `repeats`), as for a [`Span`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "CurvePointWire", into = "CurvePointWire")]
pub struct CurvePoint {
    /// Bytes a transfer moves.
    pub bytes: u32,
    /// The transfers' simulated time, over the transfers timed.
    pub span: Span,
}

/// The JSON of a [`CurvePoint`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CurvePointWire {
    bytes: u32,
    ticks: u64,
    repeats: u64,
}

impl TryFrom<CurvePointWire> for CurvePoint {
    type Error = OutOfRange;
    fn try_from(w: CurvePointWire) -> Result<CurvePoint, OutOfRange> {
        Ok(CurvePoint {
            bytes: w.bytes,
            span: Span::new(w.ticks, w.repeats)?,
        })
    }
}

impl From<CurvePoint> for CurvePointWire {
    fn from(c: CurvePoint) -> CurvePointWire {
        CurvePointWire {
            bytes: c.bytes,
            ticks: c.span.ticks,
            repeats: c.span.repeats,
        }
    }
}

impl CurvePoint {
    /// (bytes, microseconds per transfer): a point to fit.
    pub fn point(self) -> (f64, f64) {
        (self.bytes as f64, self.span.us())
    }
}

/// The LogP view of a platform (what `flashkit logp` prints): the counts
/// and the figures they give ([`LogP::from_counts`], exact). Its JSON holds
/// both, and reads back equal, refusing a figure its counts do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct LogP {
    /// The platform's name.
    pub platform: String,
    /// What the benchmarks measured.
    pub counts: LogpCounts,
    /// Send overhead: a request's cost to its sender (microseconds, one-to-two).
    pub send_overhead_us: f64,
    /// A reply's cost to its sender (microseconds, one-to-two).
    pub reply_overhead_us: f64,
    /// Receive overhead, handler included (microseconds, two-to-one).
    pub recv_overhead_us: f64,
    /// A poll that finds nothing (microseconds).
    pub poll_empty_us: f64,
    /// A poll that takes one message (microseconds).
    pub poll_one_us: f64,
    /// Round trip of a one-word request and its reply, node 0 to node 1
    /// (microseconds).
    pub round_trip_us: f64,
    /// Time per message around the ring, at the slowest node (microseconds).
    pub ring_us: f64,
    /// The bulk transfer's fit.
    pub bulk: Bulk,
}

/// The JSON of a [`LogP`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogpWire {
    platform: String,
    counts: LogpCounts,
    send_overhead_us: f64,
    reply_overhead_us: f64,
    recv_overhead_us: f64,
    poll_empty_us: f64,
    poll_one_us: f64,
    round_trip_us: f64,
    ring_us: f64,
    bulk: Bulk,
}

impl LogP {
    /// The figures `counts` give: each span's microseconds per repetition,
    /// the bulk curve's fit.
    pub fn from_counts(platform: String, counts: LogpCounts) -> LogP {
        let c = &counts;
        LogP {
            platform,
            send_overhead_us: c.send_overhead.us(),
            reply_overhead_us: c.reply_overhead.us(),
            recv_overhead_us: c.recv_overhead.us(),
            poll_empty_us: c.poll_empty.us(),
            poll_one_us: c.poll_one.us(),
            round_trip_us: c.round_trip.us(),
            ring_us: c.ring.us(),
            bulk: fit(&c.bulk.iter().map(|q| q.point()).collect::<Vec<_>>()),
            counts,
        }
    }

    fn wire(&self) -> LogpWire {
        LogpWire {
            platform: self.platform.clone(),
            counts: self.counts.clone(),
            send_overhead_us: self.send_overhead_us,
            reply_overhead_us: self.reply_overhead_us,
            recv_overhead_us: self.recv_overhead_us,
            poll_empty_us: self.poll_empty_us,
            poll_one_us: self.poll_one_us,
            round_trip_us: self.round_trip_us,
            ring_us: self.ring_us,
            bulk: self.bulk,
        }
    }
}

/// The JSON `flashkit logp --format json` prints (within its result).
impl Serialize for LogP {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(s)
    }
}

/// Reads a LogP's JSON back: the figures are computed from the counts
/// again, and one they do not give is refused, naming it.
impl<'de> Deserialize<'de> for LogP {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = LogpWire::deserialize(d)?;
        let l = LogP::from_counts(w.platform.clone(), w.counts.clone());
        let want = l.wire();
        let exact = |field: &str, json: f64, counts: f64| -> Result<(), D::Error> {
            same(field, json, counts).map_err(serde::de::Error::custom)
        };
        for (field, json, counts) in [
            (
                "send_overhead_us",
                w.send_overhead_us,
                want.send_overhead_us,
            ),
            (
                "reply_overhead_us",
                w.reply_overhead_us,
                want.reply_overhead_us,
            ),
            (
                "recv_overhead_us",
                w.recv_overhead_us,
                want.recv_overhead_us,
            ),
            ("poll_empty_us", w.poll_empty_us, want.poll_empty_us),
            ("poll_one_us", w.poll_one_us, want.poll_one_us),
            ("round_trip_us", w.round_trip_us, want.round_trip_us),
            ("ring_us", w.ring_us, want.ring_us),
            ("bulk.startup_us", w.bulk.startup_us, want.bulk.startup_us),
            (
                "bulk.bandwidth_mb_s",
                w.bulk.bandwidth_mb_s,
                want.bulk.bandwidth_mb_s,
            ),
            (
                "bulk.n_half_bytes",
                w.bulk.n_half_bytes,
                want.bulk.n_half_bytes,
            ),
        ] {
            exact(field, json, counts)?;
        }
        Ok(l)
    }
}

/// A figure read back against the one its counts give: equal (a figure
/// that is no number, as a fit over a flat curve gives, equal to one that
/// is none either), or an error naming `field` and both.
fn same(field: &str, json: f64, counts: f64) -> Result<(), String> {
    if json.is_nan() && counts.is_nan() {
        return Ok(());
    }
    magic::ledger::exact(field, json, counts)
}

/// The LogP view of a platform: every benchmark behind [`LogP`].
pub fn logp(p: &dyn Platform) -> Result<LogP, Error> {
    let counts = LogpCounts {
        send_overhead: one_to_two_span(p, false)?,
        reply_overhead: one_to_two_span(p, true)?,
        recv_overhead: two_to_one_span(p)?,
        poll_empty: poll_empty_span(p)?,
        poll_one: poll_one_span(p)?,
        round_trip: round_trip_span(p, 1)?,
        ring: ring_span(p)?,
        bulk: array_curve_counts(p, super::Align::Double, true)?,
    };
    Ok(LogP::from_counts(p.name().to_string(), counts))
}

/// A platform's LogP figures as a result that carries what made it: the
/// platform's configuration and the kit's version beside the figures. Its
/// JSON is the figures' with `config` and `version` added at the top, and
/// reads back equal; [`logp_config`] measures it again.
#[derive(Clone, Debug, PartialEq)]
pub struct LogpResult {
    /// The version of the kit that measured it (`protocols`' package
    /// version).
    pub version: String,
    /// The platform it ran on.
    pub config: PlatformConfig,
    /// The figures and their counts.
    pub logp: LogP,
}

impl Serialize for LogpResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let mut v = serde_json::to_value(&self.logp).map_err(S::Error::custom)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("version".into(), self.version.clone().into());
            let c = serde_json::to_value(&self.config).map_err(S::Error::custom)?;
            m.insert("config".into(), c);
        }
        v.serialize(s)
    }
}

impl<'de> Deserialize<'de> for LogpResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let (version, config, rest) =
            carried(serde_json::Value::deserialize(d)?).map_err(D::Error::custom)?;
        // The platform as the measurement checks it: no run takes another.
        platform_config(&config, LOGP_LEAST_NODES, "config.").map_err(D::Error::custom)?;
        // Where in the figures a value is wrong, as a dotted path
        // (`counts.ring: repeats ...`); nothing for the figures as a whole.
        let logp: LogP =
            serde_path_to_error::deserialize(rest).map_err(|e| match e.path().to_string() {
                p if p == "." => D::Error::custom(e.inner()),
                p => D::Error::custom(format!("{p}: {}", e.inner())),
            })?;
        // The figures' platform repeats the configuration's.
        let tag = serde_json::to_value(&config)
            .ok()
            .and_then(|v| v.get("platform")?.as_str().map(str::to_string))
            .unwrap_or_default();
        if logp.platform != tag {
            return Err(D::Error::custom(format!(
                "platform (a repeat of config.platform) is {:?}, but config.platform is {tag:?}",
                logp.platform
            )));
        }
        Ok(LogpResult {
            version,
            config,
            logp,
        })
    }
}

/// A result's JSON taken apart: its `version`, its `config` and the rest.
fn carried<C: serde::de::DeserializeOwned>(
    mut v: serde_json::Value,
) -> Result<(String, C, serde_json::Value), serde_json::Error> {
    use serde::de::Error as _;
    let m = v
        .as_object_mut()
        .ok_or_else(|| serde_json::Error::custom("a result is a JSON object"))?;
    let version = m
        .remove("version")
        .ok_or_else(|| serde_json::Error::missing_field("version"))?;
    let config = m
        .remove("config")
        .ok_or_else(|| serde_json::Error::missing_field("config"))?;
    // Where in the configuration a value is wrong, as a dotted path.
    // (A platform's fields are read through its tag: no path below it.)
    let config = serde_path_to_error::deserialize(config).map_err(|e| {
        let at = match e.path().to_string() {
            p if p == "." => "config".to_string(),
            p => format!("config.{p}"),
        };
        serde_json::Error::custom(format!("{at}: {}", e.inner()))
    })?;
    Ok((serde_json::from_value(version)?, config, v))
}

/// Measure the LogP figures of the platform `c` describes (a saved
/// [`LogpResult`]'s, say): the same result, equal, on this kit.
pub fn logp_config(c: &PlatformConfig) -> Result<LogpResult, Error> {
    // The one-to-two benchmark needs three nodes: the range the error
    // states is the measurement's, not the platform's.
    check_nodes(c, LOGP_LEAST_NODES)?;
    let p = c.build()?;
    Ok(LogpResult {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: c.clone(),
        logp: logp(p.as_ref())?,
    })
}

/// A saved run's platform `c`, checked as its run checks it (from `least`
/// nodes, then every value the platform takes), naming the field after
/// `at`, where the result holds it.
fn platform_config(c: &PlatformConfig, least: u32, at: &str) -> Result<(), String> {
    check_nodes(c, least)
        .and_then(|()| c.build().map(drop))
        .map_err(|e| format!("{at}{e}"))
}

/// `Err` naming `nodes` unless the platform `c` describes has from
/// `least` nodes (a measurement's, [`LOGP_LEAST_NODES`] or
/// [`least_nodes`]) to its machine's most: checked before anything is built.
pub fn check_nodes(c: &PlatformConfig, least: u32) -> Result<(), Error> {
    c.machine().check(c.nodes(), least)
}

/// The fewest nodes [`logp`] measures on: the one-to-two benchmark's
/// sender and its two receivers.
pub const LOGP_LEAST_NODES: u32 = 3;

/// Round trips from node 0 to every other node k = 1 .. P-1.
pub fn round_trips(p: &dyn Platform) -> Result<Vec<(u32, f64)>, Error> {
    // A machine of one node has no round trip to take: refused, not an
    // empty table.
    at_least(p, 2, "round trip")?;
    (1..p.nodes()).map(|d| Ok((d, round_trip(p, d)?))).collect()
}

/// A run's op table for a benchmark (for people reading where time went).
pub fn ops_of(p: &dyn Platform) -> Result<Run, Error> {
    let mut progs = idle(p, 2, "operation costs")?;
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

/// Interrupt-driven reception: node 1 sends a message every `interval`
/// (from 0 to [`MAX_INTERVAL`], refused naming `interval` past it); node 0
/// computes and takes each by interrupt. Returns the processor time node 0
/// loses per message, and the share of its time that is.
pub fn interrupt_load(p: &dyn Platform, interval: Time) -> Result<(f64, f64), Error> {
    let (lost, whole) = interrupt_span(p, interval)?;
    Ok((lost.us(), share(lost.ticks, whole)))
}

/// A part of a span of ticks as a share of the whole: the one place the
/// interrupt load's share is computed.
fn share(part: u64, whole: u64) -> f64 {
    Time(part).as_us() / Time(whole).as_us()
}

/// [`interrupt_load`]'s counts: the processor time node 0 lost, over the
/// messages, and the ticks of its whole run.
pub fn interrupt_span(p: &dyn Platform, interval: Time) -> Result<(Span, u64), Error> {
    let n = INTERRUPT_MSGS;
    let mut progs = idle(p, 2, "interrupt load")?;
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
    let lost = Span {
        ticks: lost,
        repeats: n,
    };
    Ok((lost, r.ticks_between(0, 0, 1)?))
}

/// Messages of the interrupt load.
const INTERRUPT_MSGS: u64 = MSGS / 4;

/// The longest interval between messages of the interrupt load (5 ms; a
/// longer one is refused naming `interval`). Its 256 messages then take
/// some 1.3 s of simulated time, within every platform's default budgets:
/// node 0's one computation within [`RUN_LIMIT`](super::RUN_LIMIT), and
/// the events of a CM-5 or SP node that polls, or steps by the network's
/// least latency, within `event_budget`.
pub const MAX_INTERVAL: Time = Time(5_000 * magic::time::TICKS_PER_US);

// Node 0's computation spans every interval.
const _: () = assert!(MAX_INTERVAL.0 * INTERRUPT_MSGS <= super::RUN_LIMIT.0);

/// The processor time lost per message taken by interrupt.
pub fn interrupt_cost(p: &dyn Platform, interval: Time) -> Result<f64, Error> {
    interrupt_load(p, interval).map(|x| x.0)
}

/// A cell of a table: a label, a count, a figure with the counts it is
/// computed from, a fit over the table before it, or nothing (the
/// platform lacks the operation).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text.
    Label(String),
    /// A count (bytes, nodes, calls, instructions), shown whole.
    Count(u64),
    /// Microseconds per repetition of a span, shown to 2 decimals.
    Us(Span),
    /// Megabytes a second: `bytes` moved per repetition of `span`
    /// ([`mb_s`]), shown to 2 decimals.
    MbS {
        /// Bytes moved per repetition.
        bytes: u64,
        /// The span they took.
        span: Span,
    },
    /// A share in percent: `part` ticks of `whole`, shown whole.
    Percent {
        /// Ticks of the part.
        part: u64,
        /// Ticks of the whole.
        whole: u64,
    },
    /// A least-squares fit's figure over the curve table before it, and
    /// the decimals it is shown with.
    Fit(f64, u8),
    /// Nothing: the platform lacks the operation (`-`, JSON `null`).
    Missing,
}

impl Cell {
    /// The number, if the cell holds one: exact, computed from its counts.
    pub fn num(&self) -> Option<f64> {
        match *self {
            Cell::Count(n) => Some(n as f64),
            Cell::Us(s) => Some(s.us()),
            Cell::MbS { bytes, span } => Some(mb_s(bytes, span)),
            Cell::Percent { part, whole } => Some(100.0 * share(part, whole)),
            Cell::Fit(x, _) => Some(x),
            Cell::Label(_) | Cell::Missing => None,
        }
    }

    /// The counts behind the cell's figure, as its table's JSON holds them.
    pub fn counts(&self) -> Option<CellCounts> {
        match *self {
            Cell::Us(s) => Some(CellCounts::Span(s)),
            Cell::MbS { bytes, span } => Some(CellCounts::Rate(RateCounts {
                bytes,
                ticks: span.ticks,
                repeats: span.repeats,
            })),
            Cell::Percent { part, whole } => Some(CellCounts::Share(ShareCounts { part, whole })),
            _ => None,
        }
    }

    /// Decimals the table shows it with.
    fn decimals(&self) -> usize {
        match self {
            Cell::Us(_) | Cell::MbS { .. } => 2,
            Cell::Fit(_, d) => *d as usize,
            _ => 0,
        }
    }
}

/// The counts behind a cell's figure in a table's JSON: a span's ticks
/// and repetitions (microseconds), a rate's bytes beside them (MB/s), or a
/// share's part and whole (percent).
///
/// Read back by its keys (`bytes`, `ticks` and `repeats`; `ticks` and
/// `repeats`; `part` and `whole`), a span's or a rate's repetitions at
/// least 1: an error names the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, try_from = "CellCountsWire")]
pub enum CellCounts {
    /// A rate's.
    Rate(RateCounts),
    /// A span's.
    Span(Span),
    /// A share's.
    Share(ShareCounts),
}

/// The JSON of a [`CellCounts`]: whichever keys its kind has.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CellCountsWire {
    bytes: Option<u64>,
    ticks: Option<u64>,
    repeats: Option<u64>,
    part: Option<u64>,
    whole: Option<u64>,
}

impl TryFrom<CellCountsWire> for CellCounts {
    type Error = String;
    fn try_from(w: CellCountsWire) -> Result<CellCounts, String> {
        // A rate's and a span's repetitions are held to `Span`'s reading.
        let span =
            |ticks, repeats| Span::try_from(SpanWire { ticks, repeats }).map_err(|e| e.to_string());
        match (w.bytes, w.ticks, w.repeats, w.part, w.whole) {
            (Some(bytes), Some(ticks), Some(repeats), None, None) => {
                span(ticks, repeats)?;
                Ok(CellCounts::Rate(RateCounts {
                    bytes,
                    ticks,
                    repeats,
                }))
            }
            (None, Some(ticks), Some(repeats), None, None) => {
                span(ticks, repeats).map(CellCounts::Span)
            }
            (None, None, None, Some(part), Some(whole)) => {
                Ok(CellCounts::Share(ShareCounts { part, whole }))
            }
            _ => Err(
                "counts are a span's (ticks, repeats), a rate's (bytes, ticks, repeats) \
                      or a share's (part, whole)"
                    .into(),
            ),
        }
    }
}

/// The counts of a rate cell ([`Cell::MbS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateCounts {
    /// Bytes moved per repetition.
    pub bytes: u64,
    /// The span's ticks.
    pub ticks: u64,
    /// Its repetitions.
    pub repeats: u64,
}

/// The counts of a share cell ([`Cell::Percent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareCounts {
    /// Ticks of the part.
    pub part: u64,
    /// Ticks of the whole.
    pub whole: u64,
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Label(s) => f.write_str(s),
            Cell::Missing => f.write_str("-"),
            Cell::Count(n) => write!(f, "{n}"),
            c => write!(f, "{:.*}", c.decimals(), c.num().unwrap_or(f64::NAN)),
        }
    }
}

/// JSON: a label is a string, a count an integer, a figure a number
/// (exact; its counts are beside it, in its table's `counts`), a missing
/// cell null.
impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Label(x) => s.serialize_str(x),
            Cell::Count(n) => s.serialize_u64(*n),
            Cell::Missing => s.serialize_none(),
            c => s.serialize_f64(c.num().unwrap_or(f64::NAN)),
        }
    }
}

/// A number to `d` decimals; missing when not finite (a fit over a flat
/// curve has no bandwidth).
fn num(x: f64, d: u8) -> Cell {
    if x.is_finite() {
        Cell::Fit(x, d)
    } else {
        Cell::Missing
    }
}

fn lab(x: impl ToString) -> Cell {
    Cell::Label(x.to_string())
}

fn count(x: u64) -> Cell {
    Cell::Count(x)
}

fn us(s: Span) -> Cell {
    Cell::Us(s)
}

fn rate(bytes: u64, span: Span) -> Cell {
    Cell::MbS { bytes, span }
}

/// One benchmark's table, as the papers print it; `units` names each
/// column's unit (none for a label column).
///
/// Its JSON holds the rows' figures exact (`rows`) and, cell for cell, the
/// counts each is computed from (`counts`: null for a label, a count, a
/// fit or a missing cell); it reads back equal, refusing a figure its
/// counts do not give and a fit table its curve does not give.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The benchmark's name.
    pub benchmark: String,
    /// The column headings.
    pub columns: Vec<String>,
    /// Each column's unit (`None` for a label column).
    pub units: Vec<Option<String>>,
    /// The rows, a cell per column.
    pub rows: Vec<Vec<Cell>>,
}

/// A figure of a table's JSON as it reads back.
#[derive(Deserialize)]
#[serde(untagged)]
enum Figure {
    Count(u64),
    Num(f64),
    Text(String),
}

impl Figure {
    /// The number it is, if it is one (a figure written without a
    /// fraction, `19` for `19.0`, is one).
    fn number(&self) -> Option<f64> {
        match *self {
            Figure::Count(n) => Some(n as f64),
            Figure::Num(x) => Some(x),
            Figure::Text(_) => None,
        }
    }
}

/// The JSON of a [`Table`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableWire<R> {
    benchmark: String,
    columns: Vec<String>,
    units: Vec<Option<String>>,
    rows: Vec<Vec<R>>,
    counts: Vec<Vec<Option<CellCounts>>>,
}

impl Serialize for Table {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TableWire {
            benchmark: self.benchmark.clone(),
            columns: self.columns.clone(),
            units: self.units.clone(),
            rows: self.rows.clone(),
            counts: self
                .rows
                .iter()
                .map(|r| r.iter().map(Cell::counts).collect())
                .collect(),
        }
        .serialize(s)
    }
}

/// Reads one table back; a fit's cells stand as read until the table is
/// checked against its curve ([`read_tables`]).
impl<'de> Deserialize<'de> for Table {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = TableWire::<Option<Figure>>::deserialize(d)?;
        read_table(w).map_err(serde::de::Error::custom)
    }
}

fn read_table(w: TableWire<Option<Figure>>) -> Result<Table, String> {
    let b = &w.benchmark;
    if w.units.len() != w.columns.len() {
        return Err(format!(
            "{b}: {} units for {} columns",
            w.units.len(),
            w.columns.len()
        ));
    }
    if w.counts.len() != w.rows.len() {
        return Err(format!(
            "{b}: counts for {} rows of {}",
            w.counts.len(),
            w.rows.len()
        ));
    }
    let fitted = FITS.iter().any(|f| f.1 == b);
    let mut rows = Vec::new();
    for (i, (row, counts)) in w.rows.into_iter().zip(w.counts).enumerate() {
        if row.len() != w.columns.len() || counts.len() != row.len() {
            return Err(format!(
                "{b}: row {i} has {} cells and {} counts for {} columns",
                row.len(),
                counts.len(),
                w.columns.len()
            ));
        }
        let mut cells = Vec::new();
        for (j, (figure, counts)) in row.into_iter().zip(counts).enumerate() {
            let at = format!("{b}: rows[{i}][{j}]");
            let cell = match (figure, counts) {
                (None, None) => Cell::Missing,
                (Some(Figure::Text(t)), None) => Cell::Label(t),
                (Some(Figure::Count(n)), None) => Cell::Count(n),
                (Some(Figure::Num(x)), None) if fitted => Cell::Fit(x, fit_decimals(&w.units[j])),
                (Some(f), Some(c)) if f.number().is_some() => {
                    let x = f.number().unwrap_or(f64::NAN);
                    let cell = match c {
                        CellCounts::Span(s) => Cell::Us(s),
                        CellCounts::Rate(r) => Cell::MbS {
                            bytes: r.bytes,
                            span: Span {
                                ticks: r.ticks,
                                repeats: r.repeats,
                            },
                        },
                        CellCounts::Share(s) => Cell::Percent {
                            part: s.part,
                            whole: s.whole,
                        },
                    };
                    same(&at, x, cell.num().unwrap_or(f64::NAN))?;
                    cell
                }
                _ => {
                    return Err(format!(
                        "{at} is no label, count or figure with the counts it is computed from"
                    ))
                }
            };
            cells.push(cell);
        }
        rows.push(cells);
    }
    Ok(Table {
        benchmark: w.benchmark,
        columns: w.columns,
        units: w.units,
        rows,
    })
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
        writeln!(
            f,
            "{}",
            line(self.columns.iter().map(String::as_str).collect())
        )?;
        for r in &text {
            writeln!(f, "{}", line(r.iter().map(String::as_str).collect()))?;
        }
        Ok(())
    }
}

/// A table whose columns are (name, unit) pairs.
fn tab(benchmark: &str, cols: &[(&str, Option<&str>)], rows: Vec<Vec<Cell>>) -> Table {
    Table {
        benchmark: benchmark.to_string(),
        columns: cols.iter().map(|c| c.0.to_string()).collect(),
        units: cols.iter().map(|c| c.1.map(str::to_string)).collect(),
        rows,
    }
}

/// The operations benchmark's table.
const OPERATIONS: &str = "operations (one round trip)";

/// The fit tables, each after the curve table it fits: (curve, fit).
const FITS: [(&str, &str); 2] = [("array-transfer", ARRAY_FIT), ("bandwidth", BANDWIDTH_FIT)];

/// The array transfer's fit table.
const ARRAY_FIT: &str = "array-transfer fit (T = start-up + bytes / bandwidth)";

/// The bandwidth benchmark's fit table.
const BANDWIDTH_FIT: &str = "bandwidth r-infinity and n1/2";

/// The decimals a fit's figure is shown with, by its column's unit.
fn fit_decimals(unit: &Option<String>) -> u8 {
    match unit.as_deref() {
        Some("us") | Some("MB/s") => 2,
        _ => 0,
    }
}

/// The fit table of a curve table, if it has one: computed from the
/// curve's cells, the one place a fit table is made.
fn fit_of(curve: &Table) -> Result<Option<Table>, String> {
    match curve.benchmark.as_str() {
        "array-transfer" => array_fit(curve).map(Some),
        "bandwidth" => bandwidth_fit(curve).map(Some),
        _ => Ok(None),
    }
}

/// Tables read back: each fit table must be what the curve table before it
/// gives, and is then that.
pub fn read_tables(tables: Vec<Table>) -> Result<Vec<Table>, String> {
    let mut out: Vec<Table> = Vec::with_capacity(tables.len());
    for t in tables {
        let Some(&(curve, _)) = FITS.iter().find(|f| f.1 == t.benchmark) else {
            out.push(t);
            continue;
        };
        let want = match out.last() {
            Some(prev) if prev.benchmark == curve => fit_of(prev)?,
            _ => None,
        };
        let Some(want) = want else {
            return Err(format!(
                "{}: a fit without its {curve} table before it",
                t.benchmark
            ));
        };
        let shape = |t: &Table| (t.columns.clone(), t.units.clone(), t.rows.len());
        if shape(&t) != shape(&want) {
            return Err(format!("{}: not the fit its curve gives", t.benchmark));
        }
        for (i, (got, w)) in t.rows.iter().zip(&want.rows).enumerate() {
            for (j, (g, w)) in got.iter().zip(w).enumerate() {
                let at = format!("{}: rows[{i}][{j}]", t.benchmark);
                match (g.num(), w.num()) {
                    (Some(g), Some(w)) => same(&at, g, w)?,
                    _ if g == w => {}
                    _ => return Err(format!("{at} is {g}, but the curve gives {w}")),
                }
            }
        }
        out.push(want);
    }
    Ok(out)
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
            vec![vec![us(one_to_one_span(p)?)]],
        )],
        "one-to-two" => vec![tab(
            "one-to-two",
            &[("operation", NONE), ("us per send", US)],
            vec![
                vec![lab("request"), us(one_to_two_span(p, false)?)],
                vec![lab("reply"), us(one_to_two_span(p, true)?)],
            ],
        )],
        "two-to-one" => vec![tab(
            "two-to-one",
            &[("us per message received", US)],
            vec![vec![us(two_to_one_span(p)?)]],
        )],
        "round-trip" => {
            at_least(p, 2, "round trip")?;
            let rows = (1..p.nodes())
                .map(|d| Ok(vec![count(d as u64), us(round_trip_span(p, d)?)]))
                .collect::<Result<_, Error>>()?;
            vec![tab("round-trip", &[("to node", NODE), ("us", US)], rows)]
        }
        "ring" => vec![tab(
            "ring",
            &[("nodes", Some("nodes")), ("us per message", US)],
            vec![vec![count(p.nodes() as u64), us(ring_span(p)?)]],
        )],
        "poll" => vec![tab(
            "poll",
            &[("poll", NONE), ("us", US)],
            vec![
                vec![lab("unsuccessful"), us(poll_empty_span(p)?)],
                vec![lab("one message"), us(poll_one_span(p)?)],
            ],
        )],
        "traverse" => {
            let rows = traverse_spans(p)?
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
                    let one = two_to_one_segments_span(p, b, true)?;
                    let two = two_to_one_segments_span(p, b, false)?;
                    let mb = |t: Span| rate(2 * u64::from(b), t);
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
                    let t = swap_span(p, b)?;
                    Ok(vec![count(b as u64), us(t), rate(b.into(), t)])
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
                        us(Span {
                            ticks: s.busy,
                            repeats: s.calls.max(1),
                        }),
                        count(s.ni_reads),
                        count(s.ni_writes),
                        count(s.instructions),
                    ]
                })
                .collect();
            vec![tab(
                OPERATIONS,
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

/// One run of the suite, whole: the platform and the benchmark (none: all
/// of them, and on CMAML its interrupt-driven reception, `interrupt`).
/// Every [`SuiteResult`] carries it, so [`run`] measures a saved result
/// again; it reads back as it serializes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    /// The platform.
    pub platform: PlatformConfig,
    /// One benchmark of [`BENCHMARKS`] (or `interrupt` on CMAML), or all.
    #[serde(default)]
    pub benchmark: Option<String>,
}

/// The suite's tables for a platform, with what made them: plain data
/// whose JSON (`flashkit suite --format json`) holds the configuration, the
/// kit's version and the tables, each table's figures exact beside their
/// counts; it reads back equal, refusing a figure its counts (or a fit its
/// curve) do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteResult {
    /// The version of the kit that measured it (`protocols`' package
    /// version).
    pub version: String,
    /// The run.
    pub config: SuiteConfig,
    /// The tables, in the order they print.
    pub tables: Vec<Table>,
}

/// The JSON of a [`SuiteResult`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteWire {
    version: String,
    config: SuiteConfig,
    tables: Vec<Table>,
}

impl Serialize for SuiteResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SuiteWire {
            version: self.version.clone(),
            config: self.config.clone(),
            tables: self.tables.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SuiteResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let w = SuiteWire::deserialize(d)?;
        // The run as `run` checks it, and the tables it makes, in order.
        let names = suite_tables(&w.config).map_err(D::Error::custom)?;
        let given: Vec<&str> = w.tables.iter().map(|t| t.benchmark.as_str()).collect();
        if let Some(i) = (0..names.len().max(given.len())).find(|&i| names.get(i) != given.get(i)) {
            let want = names
                .get(i)
                .map_or("none".to_string(), |n| format!("{n:?}"));
            let got = given
                .get(i)
                .map_or("none".to_string(), |n| format!("{n:?}"));
            return Err(D::Error::custom(format!(
                "tables[{i}].benchmark is {got}, where the config's run makes {want}"
            )));
        }
        Ok(SuiteResult {
            version: w.version,
            config: w.config,
            tables: read_tables(w.tables).map_err(D::Error::custom)?,
        })
    }
}

impl std::fmt::Display for SuiteResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for t in &self.tables {
            writeln!(f, "{t}")?;
        }
        Ok(())
    }
}

/// The benchmarks a suite run of `c` runs, in order, as [`run`] lists
/// them: its one benchmark, or all (and on CMAML the interrupt load).
fn suite_benchmarks(c: &SuiteConfig) -> Vec<&str> {
    let cmaml = matches!(c.platform, PlatformConfig::Cm5Cmaml { .. });
    match &c.benchmark {
        Some(b) => vec![b.as_str()],
        None => BENCHMARKS
            .iter()
            .copied()
            .chain(cmaml.then_some("interrupt"))
            .collect(),
    }
}

/// The names of the tables benchmark `name` makes, in order: its own, and
/// the fit after a curve that has one.
fn tables_of(name: &str) -> Vec<&str> {
    match name {
        "operations" => vec![OPERATIONS],
        _ => std::iter::once(name)
            .chain(FITS.iter().filter(|f| f.0 == name).map(|f| f.1))
            .collect(),
    }
}

/// The tables a saved suite run of `c` holds, in order, once its
/// configuration is one [`run`] takes (naming the field under `config`).
fn suite_tables(c: &SuiteConfig) -> Result<Vec<&str>, String> {
    let least = least_nodes(c.benchmark.as_deref());
    platform_config(&c.platform, least, "config.platform.")?;
    let cmaml = matches!(c.platform, PlatformConfig::Cm5Cmaml { .. });
    if let Some(b) = c.benchmark.as_deref() {
        if b == "interrupt" && !cmaml {
            return Err(format!("config.benchmark: {INTERRUPT_IS_CMAMLS}"));
        }
        if b != "interrupt" && !BENCHMARKS.contains(&b) {
            return Err(format!(
                "config.benchmark is {b:?}, none of {}",
                BENCHMARKS.join(", ")
            ));
        }
    }
    Ok(suite_benchmarks(c)
        .into_iter()
        .flat_map(tables_of)
        .collect())
}

/// The fewest nodes `benchmark` runs on (the whole suite's, `None`): three
/// where a node sends to two or two to one, else two.
pub fn least_nodes(benchmark: Option<&str>) -> u32 {
    match benchmark {
        None | Some("one-to-two" | "two-to-one" | "two-to-one-segments") => 3,
        Some(_) => 2,
    }
}

/// Why the interrupt benchmark runs on CMAML alone.
pub const INTERRUPT_IS_CMAMLS: &str =
    "interrupt-driven reception is CMAML's: use platform cm5-cmaml";

/// Run the suite a [`SuiteConfig`] describes (a saved [`SuiteResult`]'s,
/// say): its tables, equal to the saved ones on this kit.
pub fn run(c: &SuiteConfig) -> Result<SuiteResult, Error> {
    // Too few nodes for the benchmarks asked for is said in their terms
    // first (the whole suite's, its first benchmark that needs the most),
    // whatever the platform's own range. An unknown name is refused as
    // that, below.
    let (least, nodes) = (least_nodes(c.benchmark.as_deref()), c.platform.nodes());
    let what = match c.benchmark.as_deref() {
        None => BENCHMARKS.iter().find(|b| least_nodes(Some(b)) == least),
        Some(b) => BENCHMARKS.iter().chain(&["interrupt"]).find(|x| **x == b),
    }
    .copied();
    if let Some(what) = what.filter(|_| nodes < least) {
        return Err(Error::too_few_nodes(what, least, nodes));
    }
    let plat = c.platform.build()?;
    let cmaml = matches!(c.platform, PlatformConfig::Cm5Cmaml { .. });
    let mut tables = Vec::new();
    for n in suite_benchmarks(c) {
        if n != "interrupt" {
            tables.extend(table(plat.as_ref(), n)?);
            continue;
        }
        let Some(mut stock) = c.platform.cm5_partition()?.filter(|_| cmaml) else {
            return Err(Error::Program(INTERRUPT_IS_CMAMLS.into()));
        };
        stock.reception = super::cm5::Reception::Interrupts { fast: false };
        let mut fast = stock.clone();
        fast.reception = super::cm5::Reception::Interrupts { fast: true };
        tables.push(interrupt_table(&stock, &fast)?);
    }
    Ok(SuiteResult {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: c.clone(),
        tables,
    })
}

/// Interrupt-driven reception against the interval between messages, on
/// the stock kernel path and the fast one.
pub fn interrupt_table(stock: &dyn Platform, fast: &dyn Platform) -> Result<Table, Error> {
    let rows = [5u64, 10, 20, 50, 100, 200]
        .into_iter()
        .map(|i| {
            let at = Time(i * magic::time::TICKS_PER_US);
            let (a, wa) = interrupt_span(stock, at)?;
            let (b, wb) = interrupt_span(fast, at)?;
            let lost = |part: Span, whole: u64| Cell::Percent {
                part: part.ticks,
                whole,
            };
            Ok(vec![count(i), us(a), lost(a, wa), us(b), lost(b, wb)])
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
    Ok(array_transfer_span(p, bytes, align, blocking)?.us())
}

/// [`array_transfer`]'s counts.
pub fn array_transfer_span(
    p: &dyn Platform,
    bytes: u32,
    align: super::Align,
    blocking: bool,
) -> Result<Span, Error> {
    let mut progs = idle(p, 2, "array transfer")?;
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
    Ok(Span {
        ticks: total,
        repeats: REPEAT,
    })
}

/// The most bytes one block of a benchmark may hold ([`STREAM`], 1 MB).
pub const MAX_BYTES: u32 = STREAM;

/// A benchmark's block holds 1 to [`MAX_BYTES`] bytes.
fn check_bytes(bytes: u32) -> Result<(), Error> {
    crate::error::check("bytes", bytes, 1, MAX_BYTES)
}

/// A least-squares fit of T(x) = c + x / B, exact (its JSON too).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bulk {
    /// Start-up time, the fit's constant c (microseconds).
    #[serde(deserialize_with = "nan_or_f64")]
    pub startup_us: f64,
    /// Asymptotic bandwidth, the fit's B (MB/s).
    #[serde(deserialize_with = "nan_or_f64")]
    pub bandwidth_mb_s: f64,
    /// The size at which half the asymptotic bandwidth is reached (c * B).
    #[serde(deserialize_with = "nan_or_f64")]
    pub n_half_bytes: f64,
}

/// A fit's figure as JSON holds it: a number, or `null` for the NaN a fit
/// the points do not define gives (JSON has no NaN, and writes it `null`).
fn nan_or_f64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// The least-squares fit of T(x) = c + x / B over (bytes, microseconds)
/// points. Fewer than two distinct sizes fit no line: every figure is
/// then NaN (a figure the points do not define, never a plausible one).
/// A line that starts below zero is none a transfer makes (a call that
/// returns before its data moves is flat at small sizes, then steeper
/// than the link): every figure is then NaN too, for its slope is no
/// bandwidth either. A flat or falling line defines no bandwidth: its
/// bandwidth and n1/2 are NaN, its start-up the line's constant.
///
/// ```
/// use protocols::am::suite::fit;
/// let b = fit(&[(0.0, 1.0), (100.0, 2.0)]);
/// assert_eq!((b.startup_us, b.bandwidth_mb_s, b.n_half_bytes), (1.0, 100.0, 100.0));
/// let flat = fit(&[(100.0, 5.0), (200.0, 5.0)]);
/// assert!(flat.bandwidth_mb_s.is_nan() && flat.n_half_bytes.is_nan());
/// let falling = fit(&[(100.0, 5.0), (200.0, 4.0), (300.0, 3.0)]);
/// assert!(falling.bandwidth_mb_s.is_nan() && falling.n_half_bytes.is_nan());
/// let flat_then_steep = fit(&[(100.0, 5.0), (200.0, 5.0), (300.0, 5.0), (400.0, 40.0)]);
/// assert!(flat_then_steep.startup_us.is_nan() && flat_then_steep.n_half_bytes.is_nan());
/// assert!(flat_then_steep.bandwidth_mb_s.is_nan());
/// ```
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
    // Bytes per microsecond = MB/s. A flat or falling line takes no longer
    // for more bytes: its slope is no bandwidth (1/0 is no figure, and a
    // negative one would look like one).
    let b = if slope > 0.0 { 1.0 / slope } else { f64::NAN };
    let (c, b) = if c < 0.0 {
        (f64::NAN, f64::NAN)
    } else {
        (c, b)
    };
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
    Ok(array_curve_counts(p, align, blocking)?
        .into_iter()
        .map(CurvePoint::point)
        .collect())
}

/// [`array_curve`]'s counts.
pub fn array_curve_counts(
    p: &dyn Platform,
    align: super::Align,
    blocking: bool,
) -> Result<Vec<CurvePoint>, Error> {
    SIZES
        .iter()
        .map(|&bytes| {
            let s = array_transfer_span(p, bytes, align, blocking)?;
            Ok(CurvePoint { bytes, span: s })
        })
        .collect()
}

/// The array-transfer tables: time per transfer by size, blocking and not,
/// at each destination alignment; then each column's fit.
pub fn array_tables(p: &dyn Platform) -> Result<Vec<Table>, Error> {
    let curves = ARRAY_COLUMNS
        .iter()
        .map(|c| array_curve_counts(p, c.1, c.0))
        .collect::<Result<Vec<_>, Error>>()?;
    let rows = SIZES
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            std::iter::once(count(x as u64))
                .chain(curves.iter().map(|c| us(c[i].span)))
                .collect()
        })
        .collect();
    let mut head = vec![("bytes", BYTES)];
    head.extend(ARRAY_COLUMNS.iter().map(|c| (c.2, US)));
    let curve = tab("array-transfer", &head, rows);
    let fits = array_fit(&curve).map_err(Error::Incomplete)?;
    Ok(vec![curve, fits])
}

/// The array transfer's columns: (blocking, alignment, heading, the fit's
/// label).
const ARRAY_COLUMNS: [(bool, super::Align, &str, &str); 6] = {
    use super::Align;
    [
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
    ]
};

/// A count cell's value, or an error naming the table and the cell.
fn count_at(t: &Table, i: usize, j: usize) -> Result<u64, String> {
    match t.rows.get(i).and_then(|r| r.get(j)) {
        Some(Cell::Count(n)) => Ok(*n),
        _ => Err(format!("{}: rows[{i}][{j}] is no count", t.benchmark)),
    }
}

/// The array transfer's fit table, from its curve table: each column's
/// least-squares fit over (bytes, microseconds per transfer).
fn array_fit(curve: &Table) -> Result<Table, String> {
    let fits = ARRAY_COLUMNS
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let points = (0..curve.rows.len())
                .map(|i| match curve.rows[i].get(k + 1) {
                    Some(Cell::Us(s)) => Ok((count_at(curve, i, 0)? as f64, s.us())),
                    _ => Err(format!(
                        "{}: rows[{i}][{}] is no span",
                        curve.benchmark,
                        k + 1
                    )),
                })
                .collect::<Result<Vec<_>, String>>()?;
            let f = fit(&points);
            Ok(vec![
                lab(c.3),
                num(f.startup_us, 2),
                num(f.bandwidth_mb_s, 2),
                num(f.n_half_bytes, 0),
            ])
        })
        .collect::<Result<_, String>>()?;
    Ok(tab(
        ARRAY_FIT,
        &[
            ("transfer, alignment", NONE),
            ("start-up us", US),
            ("MB/s", MBS),
            ("n1/2 bytes", BYTES),
        ],
        fits,
    ))
}

/// Traverse, step `i`: every node `j` and its partner `j xor i` exchange
/// 1024 messages, pipelined: each sends its 1024 in a loop (with
/// `poll_each`, one poll after each send: the paper's variant), then waits
/// for the partner's. Each step starts from a quiet machine, as after a
/// barrier. Average over the nodes of the time per message sent and
/// received.
pub fn traverse_step(p: &dyn Platform, i: u32, poll_each: bool) -> Result<f64, Error> {
    Ok(traverse_span(p, i, poll_each)?.us())
}

/// [`traverse_step`]'s counts: the nodes' times summed, over the messages
/// they all sent.
pub fn traverse_span(p: &dyn Platform, i: u32, poll_each: bool) -> Result<Span, Error> {
    let n = p.nodes();
    let mut progs = idle(p, 2, "traverse")?;
    // A step of 0 sends to itself. Node j pairs with j xor the step: every
    // step below the power of two past the highest node pairs some (j and
    // j xor that power's half are both nodes), and none from that power on.
    let most = u32::MAX >> (n - 1).leading_zeros();
    OutOfRange::check("step", i, 1, most)?;
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
    let sum: u64 = pairs
        .iter()
        .map(|&j| r.ticks_between(j, 0, 1))
        .sum::<Result<u64, _>>()?;
    Ok(Span {
        ticks: sum,
        repeats: pairs.len() as u64 * MSGS,
    })
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
    Ok(traverse_spans(p)?
        .into_iter()
        .map(|(i, a, b)| (i, a.us(), b.us()))
        .collect())
}

/// [`traverse`]'s counts.
pub fn traverse_spans(p: &dyn Platform) -> Result<Vec<(u32, Span, Span)>, Error> {
    at_least(p, 2, "traverse")?;
    traverse_steps(p.nodes())
        .into_iter()
        .map(|i| Ok((i, traverse_span(p, i, false)?, traverse_span(p, i, true)?)))
        .collect()
}

/// Swap: nodes 0 and 1 send each other an array of `bytes` at once, each
/// receiving while it sends; time until its own array is acknowledged and
/// the other one is in (the slower node), microseconds.
pub fn swap(p: &dyn Platform, bytes: u32) -> Result<f64, Error> {
    Ok(swap_span(p, bytes)?.us())
}

/// [`swap`]'s counts: the slower node's ticks.
pub fn swap_span(p: &dyn Platform, bytes: u32) -> Result<Span, Error> {
    let mut progs = idle(p, 2, "swap")?;
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
    Ok(Span {
        ticks: r.ticks_between(0, 0, 1)?.max(r.ticks_between(1, 0, 1)?),
        repeats: 1,
    })
}

/// Two-to-one array transfer: nodes 1 and 2 each send node 0 `bytes` at
/// once, into two halves of one segment they share or into a segment each;
/// node 0's time from the start until all is in, microseconds.
pub fn two_to_one_segments(p: &dyn Platform, bytes: u32, shared: bool) -> Result<f64, Error> {
    Ok(two_to_one_segments_span(p, bytes, shared)?.us())
}

/// [`two_to_one_segments`]'s counts.
pub fn two_to_one_segments_span(p: &dyn Platform, bytes: u32, shared: bool) -> Result<Span, Error> {
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
    span(&p.run(&progs)?, 0, 1)
}

/// The bytes the pipelined bandwidth benchmark moves at every size (1 MB).
pub const STREAM: u32 = 1 << 20;

/// Sizes of the bandwidth benchmark: 16 bytes to 1 MB.
pub const BW_SIZES: [u32; 9] = [16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20];

/// Blocking bandwidth, one way between nodes 0 and 1: a store (or a get)
/// of `bytes`, waiting for its completion before the next; microseconds
/// per operation.
pub fn blocking_op(p: &dyn Platform, bytes: u32, get: bool) -> Result<f64, Error> {
    Ok(blocking_span(p, bytes, get)?.us())
}

/// [`blocking_op`]'s counts.
pub fn blocking_span(p: &dyn Platform, bytes: u32, get: bool) -> Result<Span, Error> {
    let mut progs = idle(p, 2, "blocking store and get")?;
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
    span(&p.run(&progs)?, 0, k)
}

/// Pipelined bandwidth: 1 MB moved from node 0 to node 1 as back-to-back
/// stores of `bytes` (asynchronous: none waits for the one before), timed
/// until every one is acknowledged; MB/s.
pub fn pipelined(p: &dyn Platform, bytes: u32) -> Result<f64, Error> {
    Ok(mb_s(STREAM.into(), pipelined_span(p, bytes)?))
}

/// Megabytes a second (bytes a microsecond) of `bytes` moved per
/// repetition of `span`: the one place a rate is computed.
pub fn mb_s(bytes: u64, span: Span) -> f64 {
    bytes as f64 / span.us()
}

/// [`pipelined`]'s counts: the whole stream's ticks.
pub fn pipelined_span(p: &dyn Platform, bytes: u32) -> Result<Span, Error> {
    let mut progs = idle(p, 2, "pipelined stores")?;
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
    span(&p.run(&progs)?, 0, 1)
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

/// One size of the bandwidth benchmark, as counts: the bytes of an
/// operation, the blocking stores' and gets' spans (none where the layer
/// has no get) and the pipelined stream's (from 64 bytes up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwCounts {
    /// Bytes an operation moves.
    pub bytes: u32,
    /// The blocking stores.
    pub store: Span,
    /// The blocking gets.
    pub get: Option<Span>,
    /// The pipelined stream of [`STREAM`] bytes.
    pub pipelined: Option<Span>,
}

/// The bandwidth benchmark's counts, size by size.
pub fn bandwidth_counts(p: &dyn Platform) -> Result<Vec<BwCounts>, Error> {
    BW_SIZES
        .iter()
        .map(|&bytes| {
            Ok(BwCounts {
                bytes,
                store: blocking_span(p, bytes, false)?,
                get: if p.has_get() {
                    Some(blocking_span(p, bytes, true)?)
                } else {
                    None
                },
                // The asynchronous curve starts at 64 bytes.
                pipelined: if bytes >= 64 {
                    Some(pipelined_span(p, bytes)?)
                } else {
                    None
                },
            })
        })
        .collect()
}

/// Run the bandwidth benchmark (the SP paper's method) on a platform.
pub fn bandwidth(p: &dyn Platform) -> Result<Bandwidth, Error> {
    let points: Vec<BwPoint> = bandwidth_counts(p)?
        .into_iter()
        .map(|q| {
            (
                q.bytes,
                q.store.us(),
                q.get.map(Span::us),
                q.pipelined.map(|s| mb_s(STREAM.into(), s)),
            )
        })
        .collect();
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
    let rows = bandwidth_counts(p)?
        .into_iter()
        .map(|q| {
            let x = u64::from(q.bytes);
            vec![
                count(x),
                rate(x, q.store),
                q.get.map_or(Cell::Missing, |t| rate(x, t)),
                q.pipelined
                    .map_or(Cell::Missing, |t| rate(STREAM.into(), t)),
            ]
        })
        .collect();
    let curve = tab(
        "bandwidth",
        &[
            ("bytes", BYTES),
            ("blocking store MB/s", MBS),
            ("blocking get MB/s", MBS),
            ("pipelined store MB/s", MBS),
        ],
        rows,
    );
    let fits = bandwidth_fit(&curve).map_err(Error::Incomplete)?;
    Ok(vec![curve, fits])
}

/// The bandwidth benchmark's fit table, from its curve table: the blocking
/// store's and get's fits (T = c + n/B over their spans) and the pipelined
/// curve's last point and n1/2.
fn bandwidth_fit(curve: &Table) -> Result<Table, String> {
    // (bytes, the column's cell) down one column, the missing left out.
    let column = |j: usize| -> Result<Vec<(f64, u64, Span)>, String> {
        let mut out = Vec::new();
        for (i, r) in curve.rows.iter().enumerate() {
            match r.get(j) {
                Some(Cell::MbS { bytes, span }) => {
                    out.push((count_at(curve, i, 0)? as f64, *bytes, *span))
                }
                Some(Cell::Missing) => {}
                _ => return Err(format!("{}: rows[{i}][{j}] is no rate", curve.benchmark)),
            }
        }
        Ok(out)
    };
    let fit_row = |name: &str, j: usize| -> Result<Vec<Cell>, String> {
        let points: Vec<(f64, f64)> = column(j)?.iter().map(|q| (q.0, q.2.us())).collect();
        Ok(if points.is_empty() {
            vec![lab(name), Cell::Missing, Cell::Missing]
        } else {
            let f = fit(&points);
            vec![lab(name), num(f.bandwidth_mb_s, 2), num(f.n_half_bytes, 0)]
        })
    };
    let pipe: Vec<(f64, f64)> = column(3)?.iter().map(|q| (q.0, mb_s(q.1, q.2))).collect();
    Ok(tab(
        BANDWIDTH_FIT,
        &[("mode", NONE), ("MB/s", MBS), ("n1/2 bytes", BYTES)],
        vec![
            fit_row("blocking store (fit)", 1)?,
            fit_row("blocking get (fit)", 2)?,
            vec![
                lab("pipelined store (curve)"),
                num(pipe.last().map_or(f64::NAN, |c| c.1), 2),
                num(n_half(&pipe), 0),
            ],
        ],
    ))
}
