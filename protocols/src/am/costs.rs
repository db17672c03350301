//! Where the time goes in a messaging layer: the single-packet,
//! finite-sequence and indefinite-sequence protocols of the CM-5 cost study
//! (docs/reference.md), run as protocol code over the CM-5 network model.
//!
//! Each protocol step charges its instructions (every instruction of unit
//! cost) to the feature it serves — base delivery, buffer management,
//! in-order delivery, fault tolerance — at the source or the destination.
//! The counts are what the runs did: packets actually sent, arrivals that
//! actually came out of order and were buffered, acknowledgements actually
//! exchanged. On a network that itself keeps order, cannot lose packets and
//! cannot deadlock, the same code skips what the network already guarantees
//! and only the base part (and the recording of a buffer pointer) remains.
//!
//! The per-step instruction counts are those of the single-packet path:
//! sending a packet costs call and return 3, NI setup 5, the data writes,
//! the NI status check 7 and control flow 3; taking one costs call and
//! return 10, the data reads, the NI status check 12 and control flow 2.

use crate::error::check;
use crate::Error;
use magic::ni::cm5::{Cm5Network, Cm5Params, Net, PACKET_WORDS};
use magic::{NodeId, OutOfRange, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The three delivery protocols the study runs: how a block of words gets
/// from one node to the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// One 4-word datagram: no ordering, no overflow safety, no reliability.
    Single,
    /// Segment allocated by request and reply, packets carrying offsets,
    /// segment freed, one final acknowledgement.
    Finite,
    /// A source-buffered stream: sequence numbers, out-of-order packets
    /// buffered at the destination, one acknowledgement per packet.
    Indefinite,
}

/// The network under the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// The CM-5's: unordered, may refuse packets, no delivery guarantee.
    Cm5,
    /// Ordered, reliable and deadlock-free (compressionless routing).
    Ordered,
}

/// Instructions at the source and destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// At the source.
    pub source: u64,
    /// At the destination.
    pub destination: u64,
}

/// Instructions per feature the protocol serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Features {
    /// Delivering the data at all.
    pub base: Side,
    /// Making room for it at the destination (segments, buffers).
    pub buffer_management: Side,
    /// Putting arrivals back in the order they were sent.
    pub in_order: Side,
    /// Acknowledging, and keeping what may have to be sent again.
    pub fault_tolerance: Side,
}

/// Instructions over every feature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Total {
    /// At the source.
    pub source: u64,
    /// At the destination.
    pub destination: u64,
    /// At both ends.
    pub total: u64,
}

/// One run of the cost study, whole (`[messaging_costs]`): the protocol,
/// the words it moves, the words a packet carries and the network. Every
/// [`FeatureCosts`] carries it, so [`run_config`] counts a saved result
/// again; it reads back as it serializes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsConfig {
    /// The delivery protocol run.
    pub protocol: Delivery,
    /// Data words moved (1 to [`MAX_WORDS`]; 4 for the single packet).
    pub words: u64,
    /// Data words a packet carries (1 to [`MAX_WORDS`], even for the
    /// indefinite protocol; 4 for the single packet).
    pub packet_words: u64,
    /// The network under it.
    pub network: Network,
}

impl Default for CostsConfig {
    /// One single-packet message on the CM-5's network.
    fn default() -> Self {
        CostsConfig {
            protocol: Delivery::Single,
            words: 4,
            packet_words: 4,
            network: Network::Cm5,
        }
    }
}

/// What a run counted: the packets and acknowledgements it took, and the
/// instructions each feature cost at the source and the destination, with
/// what made it (its [`CostsConfig`] and the kit's version). Every figure
/// is a count; its JSON reads back equal, refusing totals the features do
/// not sum to and packets the words do not take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FeatureCosts {
    /// The version of the kit that counted it (`protocols`' package
    /// version).
    pub version: String,
    /// The run.
    pub config: CostsConfig,
    /// Packets the data took.
    pub packets: u64,
    /// Arrivals that came ahead of their turn (and were buffered).
    pub out_of_order: u64,
    /// Acknowledgements exchanged.
    pub acks: u64,
    /// Instructions per feature.
    pub features: Features,
    /// Instructions in all.
    pub total: Total,
}

/// The JSON of a [`FeatureCosts`], key by key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeatureCostsWire {
    version: String,
    config: CostsConfig,
    packets: u64,
    out_of_order: u64,
    acks: u64,
    features: Features,
    total: Total,
}

/// Reads a cost study's JSON back, refusing totals the features do not
/// sum to and packets the words do not take.
impl<'de> Deserialize<'de> for FeatureCosts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let w = FeatureCostsWire::deserialize(d)?;
        let c = w.config;
        validate(c.protocol, c.words, c.packet_words).map_err(D::Error::custom)?;
        let packets = c.words.div_ceil(c.packet_words);
        if w.packets != packets {
            return Err(D::Error::custom(format!(
                "packets is {}, but {} words in packets of {} take {packets}",
                w.packets, c.words, c.packet_words
            )));
        }
        // Each packet arrives once, ahead of its turn or not.
        if w.out_of_order > packets {
            return Err(D::Error::custom(format!(
                "out_of_order is {}, more than the {packets} packets that arrive",
                w.out_of_order
            )));
        }
        // Acknowledgements only where the network may lose a packet: one
        // for a finite message, one a packet for a stream.
        let acks = match (c.protocol, c.network) {
            (Delivery::Single, _) | (_, Network::Ordered) => 0,
            (Delivery::Finite, Network::Cm5) => 1,
            (Delivery::Indefinite, Network::Cm5) => packets,
        };
        if w.acks > acks {
            return Err(D::Error::custom(format!(
                "acks is {}, more than the {acks} a {:?} message on the {:?} network sends",
                w.acks, c.protocol, c.network
            )));
        }
        let total = total(&w.features).ok_or_else(|| {
            D::Error::custom("features sum past 18446744073709551615 instructions")
        })?;
        for (field, json, sum) in [
            ("total.source", w.total.source, total.source),
            ("total.destination", w.total.destination, total.destination),
            ("total.total", w.total.total, total.total),
        ] {
            if json != sum {
                return Err(D::Error::custom(format!(
                    "{field} is {json}, but the features sum to {sum}"
                )));
            }
        }
        Ok(FeatureCosts {
            version: w.version,
            config: c,
            packets,
            out_of_order: w.out_of_order,
            acks: w.acks,
            features: w.features,
            total,
        })
    }
}

/// The instructions over every feature: the one place they are summed.
/// `None` past 2^64 - 1 (only a hand-edited JSON holds such counts).
fn total(f: &Features) -> Option<Total> {
    let sum = |xs: [u64; 4]| xs.into_iter().try_fold(0u64, u64::checked_add);
    let parts = [
        &f.base,
        &f.buffer_management,
        &f.in_order,
        &f.fault_tolerance,
    ];
    let source = sum(parts.map(|p| p.source))?;
    let destination = sum(parts.map(|p| p.destination))?;
    Some(Total {
        source,
        destination,
        total: source.checked_add(destination)?,
    })
}

/// Run the study a [`CostsConfig`] describes (a saved [`FeatureCosts`]'s,
/// say): the same counts, equal, on this kit.
pub fn run_config(c: &CostsConfig) -> Result<FeatureCosts, Error> {
    run(c.protocol, c.words, c.packet_words, c.network)
}

#[derive(Clone, Copy)]
enum Feature {
    Base,
    Buffer,
    InOrder,
    Fault,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Src,
    Dst,
}

/// The instruction ledger of one run.
#[derive(Default)]
struct Acct(Features);

impl Acct {
    fn add(&mut self, end: End, f: Feature, n: u64) {
        let side = match f {
            Feature::Base => &mut self.0.base,
            Feature::Buffer => &mut self.0.buffer_management,
            Feature::InOrder => &mut self.0.in_order,
            Feature::Fault => &mut self.0.fault_tolerance,
        };
        match end {
            End::Src => side.source += n,
            End::Dst => side.destination += n,
        }
    }
}

/// Instruction counts of the single-packet path's steps.
mod step {
    /// Sending: call and return, NI setup, status check, control flow.
    pub const SEND_CALL: u64 = 3;
    pub const SEND_SETUP: u64 = 5;
    pub const SEND_STATUS: u64 = 7;
    pub const SEND_CONTROL: u64 = 3;
    /// Receiving: call and return, status check, control flow.
    pub const RECV_CALL: u64 = 10;
    pub const RECV_STATUS: u64 = 12;
    pub const RECV_CONTROL: u64 = 2;
    /// The datagram's data moves as doublewords: two writes, three reads
    /// (with the handler word).
    pub const DATAGRAM_WRITES: u64 = 2;
    pub const DATAGRAM_READS: u64 = 3;
    /// A sequence packet's per-packet framing beyond its data words.
    pub const SEQ_SEND: u64 = SEND_SETUP + SEND_STATUS + SEND_CONTROL + 3;
    pub const SEQ_RECV: u64 = 14;
    /// The indefinite stream's per-packet framing.
    pub const STREAM_SEND: u64 = 18;
    pub const STREAM_RECV: u64 = 12;
    pub const STREAM_START: u64 = 13;
    /// Finite: the destination's set-up, offset placement and final check.
    pub const FINITE_RECV_SETUP: u64 = 18;
    pub const OFFSET_SEND: u64 = 2;
    pub const OFFSET_PLACE: u64 = 3;
    pub const COUNT_CHECK: u64 = 1;
    /// Segment table: allocate and free at the destination.
    pub const SEGMENT_ALLOC: u64 = 34;
    pub const SEGMENT_FREE: u64 = 20;
    /// A buffer pointer recorded (the ordered network's whole buffer
    /// management).
    pub const RECORD_POINTER: u64 = 2;
    /// Indefinite: sequence number stamped and checked; an early packet
    /// buffered and later released.
    pub const SEQ_STAMP: u64 = 5;
    pub const SEQ_CHECK: u64 = 4;
    pub const EARLY_BUFFER: u64 = 30;
    pub const EARLY_RELEASE: u64 = 20;
}

/// One packet as the protocols see it.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Datagram,
    AllocRequest,
    AllocReply,
    Data { index: u64 },
    Ack,
    FinalAck,
}

struct Wire {
    net: Option<Cm5Network>,
    ordered: std::collections::VecDeque<Kind>,
    kinds: BTreeMap<u32, Kind>,
    next: u32,
    now: Time,
}

impl Wire {
    fn new(network: Network) -> Wire {
        let net = (network == Network::Cm5).then(|| {
            let p = Cm5Params {
                capacity: 1 << 20,
                path_jitter: Time::ZERO,
                // The study counts instructions; its packets are offered
                // closer together than wires could carry them.
                link_time: Time::ZERO,
                ..Cm5Params::default()
            };
            Cm5Network::new(p, 2).expect("valid")
        });
        Wire {
            net,
            ordered: Default::default(),
            kinds: BTreeMap::new(),
            next: 0,
            now: Time::ZERO,
        }
    }

    /// Send from `from` to the other node. On the CM-5, every other data
    /// packet takes a longer path, so that it arrives after its successor:
    /// half the packets come out of order.
    fn send(&mut self, from: u32, k: Kind) {
        self.now = Time(self.now.0 + 1000);
        match &mut self.net {
            None => self.ordered.push_back(k),
            Some(n) => {
                let id = self.next;
                self.next += 1;
                self.kinds.insert(id, k);
                let extra = match k {
                    Kind::Data { index } if index % 2 == 0 => Time(1500),
                    _ => Time::ZERO,
                };
                let mut w = [0u32; PACKET_WORDS];
                w[0] = id;
                let ok = n.inject_delayed(
                    self.now,
                    NodeId(from),
                    NodeId(1 - from),
                    Net::Left,
                    w,
                    extra,
                );
                debug_assert!(ok, "the cost study's network never fills");
            }
        }
    }

    /// Everything that has reached `node`, in arrival order.
    fn drain(&mut self, node: u32) -> Vec<Kind> {
        match &mut self.net {
            None => self.ordered.drain(..).collect(),
            Some(n) => {
                let far = Time(u64::MAX / 4);
                let mut out = Vec::new();
                while let Some(p) = n.receive(NodeId(node), Net::Left, far) {
                    out.push(self.kinds.remove(&p.words[0]).expect("sent"));
                }
                out
            }
        }
    }
}

/// The most words one run moves (and the most a packet carries).
pub const MAX_WORDS: u64 = 1 << 20;

/// The study's own checks: 1 to [`MAX_WORDS`] words in packets of 1 to
/// [`MAX_WORDS`], even for the indefinite protocol; the single-packet
/// protocol's datagram holds 4 words, both 4. The error names the field.
pub fn validate(protocol: Delivery, words: u64, packet_words: u64) -> Result<(), Error> {
    if protocol == Delivery::Single {
        for (field, v) in [("words", words), ("packet_words", packet_words)] {
            if v != 4 {
                return Err(OutOfRange::new(field, "4 for the single-packet protocol", v).into());
            }
        }
    }
    check("words", words, 1, MAX_WORDS)?;
    check("packet_words", packet_words, 1, MAX_WORDS)?;
    if packet_words % 2 == 1 && protocol == Delivery::Indefinite {
        return Err(OutOfRange::new(
            "packet_words",
            format!("even for the indefinite protocol, from 2 to {MAX_WORDS}"),
            packet_words,
        )
        .into());
    }
    Ok(())
}

/// Run one protocol moving `words` words (1 to [`MAX_WORDS`]) in packets of
/// `packet_words` (1 to [`MAX_WORDS`], even for the indefinite protocol; the
/// single-packet protocol moves one 4-word datagram: both are 4).
pub fn run(
    protocol: Delivery,
    words: u64,
    packet_words: u64,
    network: Network,
) -> Result<FeatureCosts, Error> {
    validate(protocol, words, packet_words)?;
    let mut a = Acct::default();
    let mut w = Wire::new(network);
    let reliable = network == Network::Ordered;
    let p = words.div_ceil(packet_words);
    let mut out_of_order = 0;
    let mut acks = 0;
    use step::*;
    use End::*;
    use Feature::*;
    // The single-packet send and receive, as building blocks.
    let datagram_send = |a: &mut Acct, f| {
        a.add(
            Src,
            f,
            SEND_CALL + SEND_SETUP + DATAGRAM_WRITES + SEND_STATUS + SEND_CONTROL,
        )
    };
    let datagram_recv = |a: &mut Acct, end, f| {
        a.add(
            end,
            f,
            RECV_CALL + DATAGRAM_READS + RECV_STATUS + RECV_CONTROL,
        )
    };
    match protocol {
        Delivery::Single => {
            datagram_send(&mut a, Base);
            w.send(0, Kind::Datagram);
            for k in w.drain(1) {
                if let Kind::Datagram = k {
                    datagram_recv(&mut a, Dst, Base);
                }
            }
        }
        Delivery::Finite => {
            // Allocate the segment by request and reply (not needed where
            // the network cannot overflow: a pointer is recorded).
            if reliable {
                a.add(Dst, Buffer, RECORD_POINTER);
            } else {
                datagram_send(&mut a, Buffer);
                w.send(0, Kind::AllocRequest);
                for k in w.drain(1) {
                    if let Kind::AllocRequest = k {
                        datagram_recv(&mut a, Dst, Buffer);
                        a.add(Dst, Buffer, SEGMENT_ALLOC);
                        a.add(
                            Dst,
                            Buffer,
                            SEND_CALL + SEND_SETUP + DATAGRAM_WRITES + SEND_STATUS + SEND_CONTROL,
                        );
                        w.send(1, Kind::AllocReply);
                    }
                }
                for k in w.drain(0) {
                    if let Kind::AllocReply = k {
                        datagram_recv(&mut a, Src, Buffer);
                    }
                }
            }
            a.add(Src, Base, SEND_CALL);
            for i in 0..p {
                a.add(Src, Base, SEQ_SEND + packet_words);
                if !reliable {
                    a.add(Src, InOrder, OFFSET_SEND);
                }
                w.send(0, Kind::Data { index: i });
            }
            a.add(Dst, Base, FINITE_RECV_SETUP);
            let mut got = 0;
            for k in w.drain(1) {
                if let Kind::Data { index } = k {
                    out_of_order += u64::from(index > got);
                    a.add(Dst, Base, SEQ_RECV + packet_words);
                    if !reliable {
                        // Any arrival order: the offset places it.
                        a.add(Dst, InOrder, OFFSET_PLACE);
                    }
                    got += 1;
                }
            }
            if got != p {
                return Err(Error::Incomplete(format!("{got} of {p} packets arrived")));
            }
            if !reliable {
                a.add(Dst, InOrder, COUNT_CHECK);
                // Free the segment; acknowledge the whole message.
                a.add(Dst, Buffer, SEGMENT_FREE);
                a.add(
                    Dst,
                    Fault,
                    SEND_CALL + SEND_SETUP + DATAGRAM_WRITES + SEND_STATUS + SEND_CONTROL,
                );
                w.send(1, Kind::FinalAck);
                for k in w.drain(0) {
                    if let Kind::FinalAck = k {
                        datagram_recv(&mut a, Src, Fault);
                        acks += 1;
                    }
                }
            }
        }
        Delivery::Indefinite => {
            for i in 0..p {
                a.add(Src, Base, STREAM_SEND + packet_words / 2);
                if !reliable {
                    a.add(Src, InOrder, SEQ_STAMP);
                    // Kept until acknowledged.
                    a.add(Src, Fault, packet_words / 2);
                }
                w.send(0, Kind::Data { index: i });
            }
            a.add(Dst, Base, STREAM_START);
            let mut expected = 0;
            let mut early: BTreeMap<u64, ()> = BTreeMap::new();
            let arrivals = w.drain(1);
            for k in arrivals {
                let Kind::Data { index } = k else { continue };
                a.add(Dst, Base, STREAM_RECV + packet_words / 2);
                if reliable {
                    expected += 1;
                    continue;
                }
                a.add(Dst, InOrder, SEQ_CHECK);
                if index != expected {
                    out_of_order += 1;
                    a.add(Dst, InOrder, EARLY_BUFFER);
                    early.insert(index, ());
                } else {
                    expected += 1;
                    while early.remove(&expected).is_some() {
                        a.add(Dst, InOrder, EARLY_RELEASE);
                        expected += 1;
                    }
                }
                // One acknowledgement per packet.
                a.add(
                    Dst,
                    Fault,
                    SEND_CALL + SEND_SETUP + DATAGRAM_WRITES + SEND_STATUS + SEND_CONTROL,
                );
                w.send(1, Kind::Ack);
            }
            if expected != p {
                return Err(Error::Incomplete(format!(
                    "{expected} of {p} packets delivered in order"
                )));
            }
            for k in w.drain(0) {
                if let Kind::Ack = k {
                    datagram_recv(&mut a, Src, Fault);
                    acks += 1;
                }
            }
        }
    }
    let f = a.0;
    // The counts grow with `words`, which `validate` bounds far below this.
    let total = total(&f)
        .ok_or_else(|| OutOfRange::new("words", "a count whose instructions fit 64 bits", words))?;
    Ok(FeatureCosts {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: CostsConfig {
            protocol,
            words,
            packet_words,
            network,
        },
        packets: p,
        out_of_order,
        acks,
        features: f,
        total,
    })
}

impl std::fmt::Display for FeatureCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The protocol and network by the words their flags take (their
        // serialized names).
        let word = |v: serde_json::Result<serde_json::Value>| {
            v.ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let protocol = word(serde_json::to_value(self.config.protocol));
        let network = word(serde_json::to_value(self.config.network));
        let n = |k: u64, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        writeln!(
            f,
            "{protocol} protocol, {} in {} of {}, {network} network ({} out of order, {})",
            n(self.config.words, "word", "words"),
            n(self.packets, "packet", "packets"),
            n(self.config.packet_words, "word", "words"),
            self.out_of_order,
            n(self.acks, "ack", "acks"),
        )?;
        writeln!(f, "{:<20} {:>8} {:>12}", "feature", "source", "destination")?;
        let x = &self.features;
        for (k, s) in [
            ("base", x.base),
            ("buffer management", x.buffer_management),
            ("in-order delivery", x.in_order),
            ("fault tolerance", x.fault_tolerance),
        ] {
            writeln!(f, "{k:<20} {:>8} {:>12}", s.source, s.destination)?;
        }
        writeln!(
            f,
            "{:<20} {:>8} {:>12}   ({} in all)",
            "total", self.total.source, self.total.destination, self.total.total
        )
    }
}
