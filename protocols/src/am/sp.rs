//! SP AM: Active Messages on the IBM SP's TB2 adapter, with the reliable,
//! in-order delivery the switch does not give.
//!
//! Every data packet carries a sequence number on its channel (requests and
//! replies are separate channels between each pair of nodes) and
//! piggybacks, for both channels of the opposite direction, the next
//! sequence number its sender expects (a cumulative ack). Sent packets stay
//! in a window (75 requests, 76 replies) until acknowledged; a full window
//! makes the sender poll until acks arrive. The receiver takes packets only
//! in sequence: an out-of-sequence one is dropped and answered with a NACK
//! naming the expected number, and the sender retransmits that packet and
//! every later one (go-back-N). A receiver that has taken a quarter of a
//! window without sending anything back acks explicitly. A sender whose
//! packets stay unacknowledged through a number of unsuccessful polls (the
//! layer's stand-in for a timer) sends a keep-alive, which the receiver
//! answers with a NACK: lost packets, lost acks and lost NACKs are all
//! recovered this way.
//!
//! Costs are the layer's instructions at 66 MHz plus its MicroChannel
//! accesses (about 1 us each): a send writes the packet into the send FIFO
//! in host memory, flushes it and writes its length into the adapter; a
//! request also polls once. Receive entries are popped lazily, one
//! MicroChannel access per eight messages. The instruction counts are set
//! from the measured operations in docs/reference.md.
//!
//! The raw ping-pong (bare packets, no sequence numbers) does the same host
//! work as SP AM except SP AM's own additions: flushing the message's cache
//! lines and the flow-control bookkeeping (sequence number, the copy kept
//! for retransmission, window, acks). So the raw mode charges each
//! operation without them, the raw round trip sets the adapters' latency,
//! and an SP AM round trip is the raw one plus those additions, never the
//! per-call costs on top of a latency that already holds them. The
//! request's own poll comes after its packet is out, off the path.
//!
//! Stores move in chunks of up to 36 packets, one sequence number and one
//! ack each. The host copies a chunk's packets into the send FIFO and
//! writes their lengths into the adapter a few at a time, one MicroChannel
//! access a group (`lengths_per_access`, by default 4), and the adapter
//! sends each group once its lengths are there, while the host composes
//! the next; the receiver takes each packet, and acknowledges the
//! chunk when it has them all. A block of several chunks sends chunk N
//! once chunk N-2 is acknowledged. A store that fits in one chunk goes out
//! at once while the request window (75 packets) has room: back-to-back
//! asynchronous stores overlap, each paying only its host-side issue cost.
//! A blocking store returns when its last chunk's ack is in. docs/sp-bulk.md
//! adds the benchmark's times up step by step.

use super::{Handler, Platform, Run, Step, MAX_COST};
use crate::error::check;
use crate::Error;
use magic::ni::sp::{SpParams, SpSwitch};
use magic::time::TICKS_PER_SP_CYCLE;
use magic::{NodeId, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The two channels between a pair of nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Chan {
    /// The request channel.
    Req = 0,
    /// The reply channel.
    Rep = 1,
}

/// What an SP AM packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// A request or reply, with its arguments.
    Data {
        /// The channel it travels on.
        chan: Chan,
        /// Its sequence number on that channel.
        seq: u32,
        /// Next expected on the opposite direction's (request, reply) channels.
        acks: [u32; 2],
        /// The handler it runs at the receiver.
        handler: Handler,
        /// Argument words carried (4 bytes each).
        words: u8,
        /// A get's block size (bytes).
        arg: u32,
    },
    /// An explicit ack, from a receiver that has taken a quarter of a window
    /// without sending anything back.
    Ack {
        /// Next expected on the opposite direction's (request, reply) channels.
        acks: [u32; 2],
    },
    /// A NACK: a packet came out of sequence (or a keep-alive came), so the
    /// sender goes back to `expected`.
    Nack {
        /// The channel whose packets to send again.
        chan: Chan,
        /// The sequence number the receiver expects next.
        expected: u32,
        /// Next expected on the opposite direction's (request, reply) channels.
        acks: [u32; 2],
    },
    /// A keep-alive: the sender's packets stay unacknowledged; the receiver
    /// answers with NACKs.
    KeepAlive,
    /// One packet of a bulk chunk: the chunk's sequence number, the
    /// packet's place in it, the chunk's size and the block's.
    Bulk {
        /// The chunk's sequence number.
        chunk: u32,
        /// The packet's place in its chunk (from 0).
        index: u8,
        /// Packets in the chunk.
        packets: u8,
        /// The chunk's data (bytes).
        bytes: u32,
        /// The chunk is the block's last.
        last: bool,
        /// For a store into a segment the receiver shares among senders:
        /// the segment and its size (bytes), all senders together.
        share: Option<(u16, u32)>,
    },
    /// A chunk is in.
    ChunkAck {
        /// The chunk acknowledged, with every earlier one.
        chunk: u32,
    },
    /// The receiver's next expected chunk (answer to a keep-alive): every
    /// earlier one is in.
    ChunkNack {
        /// The chunk the receiver expects next.
        expected: u32,
    },
}

/// Data bytes in a packet.
pub const PACKET_DATA: u32 = 224;
/// Packets in a bulk chunk (8064 bytes of data).
pub const CHUNK_PACKETS: u32 = 36;

/// The layer's instructions (66 MHz cycles) per operation, and its
/// protocol's counts and windows.
///
/// A scenario's `[costs.sp]` table: every entry may be left out, and takes
/// its default then (in parentheses); an unknown key is an error. Each count
/// is at most [`MAX_COST`]; `poll`, `pop_every` and `keepalive_polls` are at
/// least 1, `lengths_per_access` from 1 to [`CHUNK_PACKETS`], and the windows
/// hold from [`CHUNK_PACKETS`] to [`MAX_WINDOW`] packets.
///
/// Each entry says where its value comes from: *published* (a figure of
/// the SP paper, docs/reference.md), *derived* (worked out from published
/// figures, saying how) or a *model choice* (with its reason). The
/// published per-call costs include one MicroChannel access per send
/// (`mc_access` of [`SpParams`], 1 us) and, for a request, its poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpCosts {
    /// A request of N words: `request + request_word * N`, plus one
    /// MicroChannel access and an internal poll. Derived: `am_request_1`
    /// takes 7.7 us with its poll (1.3) and its access (1), so 5.4 us of
    /// instructions, 356 cycles for one word. (345)
    pub request: u64,
    /// A request's instructions per argument word. Derived:
    /// `am_request_1` to `_4` grow by 0.5 us over 3 words. (11)
    pub request_word: u64,
    /// A reply: `reply + reply_word * N`, plus one MicroChannel access.
    /// Derived: `am_reply_1`, 4.0 us less its access, is 198 cycles for one
    /// word. (189)
    pub reply: u64,
    /// A reply's instructions per argument word. Derived: `am_reply_1` to
    /// `_4` grow by 0.4 us over 3 words. (9)
    pub reply_word: u64,
    /// An empty poll (each message it takes is `per_message` more).
    /// Derived: 1.3 us. (86)
    pub poll: u64,
    /// Each message a poll takes. Derived: 1.8 us a message polled, less
    /// its share of a lazy pop (1 us every `pop_every`). (110)
    pub per_message: u64,
    /// Messages between lazy pops of the receive FIFO (one MicroChannel
    /// access each). Model choice: the paper pops after a fixed number of
    /// polled messages and does not say how many. (8)
    pub pop_every: u64,
    /// An ack, NACK or keep-alive sent (plus its MicroChannel access), and
    /// one taken. Model choice: a header-only packet composed and flushed,
    /// or read and its numbers applied; the paper gives no cost. (60)
    pub control: u64,
    /// Each packet retransmitted (their lengths go in one access). Model
    /// choice: the packet is still in the send FIFO; its header's ack
    /// numbers are renewed and its line flushed. (40)
    pub retransmit: u64,
    /// Unsuccessful polls before a keep-alive. Model choice: the paper
    /// counts polls as its timer and gives no count; 2000 polls are about
    /// 2.6 ms, far above a round trip. (2000)
    pub keepalive_polls: u64,
    /// The request window (packets sent and not yet acknowledged).
    /// Published. (75)
    pub window_req: usize,
    /// The reply window (packets sent and not yet acknowledged).
    /// Published. (76)
    pub window_rep: usize,
    /// Sending one packet of a bulk chunk: copy it into the send FIFO and
    /// flush its lines; its length goes to the adapter with others, in one
    /// MicroChannel access per `lengths_per_access` packets. Derived: the
    /// paper's ~175 us to send a chunk is 36 packets of 304 cycles at
    /// 66 MHz and the 9 accesses of their lengths, 4 at a time. The paper
    /// gives the chunk's cost, not its split, so a packet that holds less
    /// than 224 bytes costs as much (a model choice). (304)
    pub bulk_packet: u64,
    /// Packets whose lengths the host writes into the adapter's
    /// packet-length array in one MicroChannel access during a bulk
    /// transfer; the adapter sends a packet once its length is there, so
    /// it starts on a chunk after the first such group is composed. The
    /// paper says several lengths can be written at once, not how many: a
    /// model choice, 4. "Several" is a few, not a chunk's 36, and the
    /// length array lets the adapter send a packet as soon as its slot is
    /// written, so the adapter sends a chunk's first packets while the
    /// host composes the rest; 4 lengths an access keep the accesses to 9
    /// of a chunk's 175 us. Writing a whole chunk's at once would hold its
    /// first packet back for the chunk's 175 us. From 1 to 36, a chunk's
    /// packets. (4)
    pub lengths_per_access: u64,
    /// SP AM's own additions to a send, part of `request` and `reply`:
    /// flushing a 64-byte line of the message (a `dcbf` and its share of the
    /// `sync`), and the flow-control bookkeeping (take the sequence number,
    /// keep the packet for retransmission, check the window, piggyback the
    /// acks). Model choices: the paper names the work, not its count. (8)
    pub flush_line: u64,
    /// The flow-control bookkeeping of one send (see `flush_line`). (25)
    pub flow_send: u64,
    /// The bookkeeping of a packet taken (sequence check, acks it carries),
    /// part of `per_message`; a model choice as above. (20)
    pub flow_recv: u64,
    /// Taking one bulk packet: a message taken (`per_message`, 110) and
    /// its 224 bytes copied out of the receive FIFO at 4 bytes a cycle
    /// (56). Model choice: the paper gives no receive cost for bulk
    /// data. (166)
    pub bulk_take: u64,
}

/// The most packets a window may hold.
pub const MAX_WINDOW: usize = 4096;

impl SpCosts {
    /// Every entry is in its range; the error names the first that is not.
    pub fn validate(&self) -> Result<(), Error> {
        for (field, v) in [
            ("request", self.request),
            ("request_word", self.request_word),
            ("reply", self.reply),
            ("reply_word", self.reply_word),
            ("per_message", self.per_message),
            ("control", self.control),
            ("retransmit", self.retransmit),
            ("bulk_packet", self.bulk_packet),
            ("flush_line", self.flush_line),
            ("flow_send", self.flow_send),
            ("flow_recv", self.flow_recv),
            ("bulk_take", self.bulk_take),
        ] {
            check(field, v, 0, MAX_COST)?;
        }
        check("poll", self.poll, 1, MAX_COST)?;
        check(
            "lengths_per_access",
            self.lengths_per_access,
            1,
            CHUNK_PACKETS as u64,
        )?;
        check("pop_every", self.pop_every, 1, MAX_COST)?;
        check("keepalive_polls", self.keepalive_polls, 1, MAX_COST)?;
        let lo = CHUNK_PACKETS as usize;
        check("window_req", self.window_req, lo, MAX_WINDOW)?;
        check("window_rep", self.window_rep, lo, MAX_WINDOW)
    }
}

impl Default for SpCosts {
    fn default() -> Self {
        SpCosts {
            request: 345,
            request_word: 11,
            reply: 189,
            reply_word: 9,
            poll: 86,
            per_message: 110,
            pop_every: 8,
            control: 60,
            retransmit: 40,
            keepalive_polls: 2000,
            window_req: 75,
            window_rep: 76,
            // About 175 us to send a chunk of 36 packets, lengths 4 an
            // access.
            bulk_packet: 304,
            lengths_per_access: 4,
            bulk_take: 166,
            flush_line: 8,
            flow_send: 25,
            flow_recv: 20,
        }
    }
}

/// The SP running SP AM (or, with `raw`, bare packets: no sequence numbers,
/// no acks, the layer's instructions left out — the raw ping-pong).
#[derive(Clone, Debug)]
pub struct Sp {
    /// Nodes in the machine.
    pub nodes: u32,
    /// The layer's instruction counts.
    pub costs: SpCosts,
    /// The adapters' and switch's parameters.
    pub hw: SpParams,
    /// Bare packets: no sequence numbers, no acks, SP AM's additions left out.
    pub raw: bool,
}

impl Sp {
    /// An SP of `nodes` nodes running SP AM, with the default costs.
    pub fn new(nodes: u32) -> Sp {
        Sp {
            nodes,
            costs: SpCosts::default(),
            hw: SpParams::default(),
            raw: false,
        }
    }

    /// An SP of `nodes` nodes running SP AM with the layer's instruction
    /// counts `costs` and the adapters' and switch's parameters `hw`; an
    /// error names the first value out of range.
    pub fn with(nodes: u32, costs: SpCosts, hw: SpParams) -> Result<Sp, Error> {
        let p = Sp {
            nodes,
            costs,
            hw,
            raw: false,
        };
        p.validate()?;
        Ok(p)
    }

    /// The configuration is one the machine can run: 2 to 512 nodes
    /// ([`super::Machines::Sp`]), costs in range, switch parameters the network model takes.
    pub fn validate(&self) -> Result<(), Error> {
        super::Machines::Sp.check(self.nodes, 2)?;
        self.costs.validate()?;
        // The switch's own ranges (times at most 10 ms, within a run's
        // limit) are what the layer needs.
        self.hw.validate().map_err(Error::Network)?;
        Ok(())
    }
}

const fn cycles(n: u64) -> u64 {
    n * TICKS_PER_SP_CYCLE
}

#[derive(Clone, Default)]
struct SendChan {
    next: u32,
    unacked: VecDeque<(u32, Body)>,
}

#[derive(Clone, Copy, Default)]
struct RecvChan {
    expected: u32,
    /// The expected number a NACK was last sent for (no NACK storms).
    nacked: Option<u32>,
}

#[derive(Clone, Default)]
struct Peer {
    send: [SendChan; 2],
    recv: [RecvChan; 2],
    /// Bulk: chunks sent and not acknowledged.
    chunks_out: VecDeque<Chunk>,
    next_chunk: u32,
    /// Bulk in: the next chunk expected, and the packets of it seen.
    chunk_expected: u32,
    chunk_seen: u64,
    /// Packets taken since this node last sent the peer anything.
    unacked_in: u64,
}

/// A store under way at its sender.
#[derive(Clone, Copy)]
struct Store {
    to: usize,
    bytes: u32,
    sent: u32,
    /// A shared segment's number and size (`Step::StoreShared`).
    share: Option<(u16, u32)>,
}

/// A chunk sent and not yet acknowledged.
#[derive(Clone, Copy)]
struct Chunk {
    number: u32,
    packets: u8,
    bytes: u32,
    /// The block's last chunk.
    last: bool,
    share: Option<(u16, u32)>,
}

struct Node {
    t: Time,
    store: Option<Store>,
    /// Shared segments being filled: number and bytes in so far.
    segments: Vec<(u16, u32)>,
    /// Blocks asked for by gets, to store back.
    gets: VecDeque<Store>,
    /// The program's own store step is under way (in `store`).
    storing: bool,
    received: u64,
    marks: Vec<Time>,
    peers: Vec<Peer>,
    taken: u64,
    empty_polls: u64,
    /// Replies handlers could not send (window full).
    replies: Vec<NodeId>,
    /// Packets and chunks of this node not yet acknowledged (all peers).
    outstanding: usize,
}

/// Counters of the reliability protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reliability {
    /// Packets sent again (go-back-N, and chunks resent).
    pub retransmitted: u64,
    /// NACKs sent.
    pub nacks: u64,
    /// Explicit acks sent (besides those piggybacked on data packets).
    pub acks: u64,
    /// Keep-alives sent.
    pub keepalives: u64,
    /// Packets dropped as already taken.
    pub duplicates: u64,
    /// Packets dropped because they came ahead of the one expected.
    pub out_of_sequence: u64,
}

struct Sim<'a> {
    p: &'a Sp,
    sw: SpSwitch<Body>,
    nodes: Vec<Node>,
    run: Run,
    rel: Reliability,
    /// Per receiving node: (sender, channel, sequence number) of each
    /// message delivered, in delivery order.
    log: Vec<Vec<(u32, Chan, u32)>>,
    /// Destinations of the packets sent since the scheduler last asked.
    woken: Vec<usize>,
}

impl Sim<'_> {
    fn charge(&mut self, n: usize, op: &'static str, instr: u64, mc: u64) {
        let c = cycles(instr) + mc * self.p.hw.mc_access.0;
        self.nodes[n].t = Time(self.nodes[n].t.0 + c);
        let s = self.run.ops.entry((n as u32, op)).or_default();
        s.busy += c;
        s.ni_writes += mc;
        s.instructions += instr;
    }

    fn count(&mut self, n: usize, op: &'static str) {
        self.run.ops.entry((n as u32, op)).or_default().calls += 1;
    }

    fn acks_for(&self, n: usize, peer: usize) -> [u32; 2] {
        let r = &self.nodes[n].peers[peer].recv;
        [r[0].expected, r[1].expected]
    }

    fn put(&mut self, n: usize, to: usize, data: u64, body: Body) {
        let now = self.nodes[n].t;
        self.sw
            .send(now, NodeId(n as u32), NodeId(to as u32), data, body);
        self.woken.push(to);
        self.nodes[n].peers[to].unacked_in = 0;
    }

    /// Send a data packet on `chan`; `false` if the window is full.
    fn send(&mut self, n: usize, to: NodeId, chan: Chan, words: u8, handler: Handler) -> bool {
        self.send_arg(n, to, chan, words, handler, 0)
    }

    fn send_arg(
        &mut self,
        n: usize,
        to: NodeId,
        chan: Chan,
        words: u8,
        handler: Handler,
        arg: u32,
    ) -> bool {
        let c = self.p.costs;
        let to = to.0 as usize;
        let window = match chan {
            Chan::Req => c.window_req,
            Chan::Rep => c.window_rep,
        };
        if !self.p.raw && self.nodes[n].peers[to].send[chan as usize].unacked.len() >= window {
            return false;
        }
        let op = match chan {
            Chan::Req => "request",
            Chan::Rep => "reply",
        };
        self.count(n, op);
        let all = match chan {
            Chan::Req => c.request + c.request_word * words as u64,
            Chan::Rep => c.reply + c.reply_word * words as u64,
        };
        let instr = if self.p.raw {
            all - Self::sp_am_send_extra(c, words)
        } else {
            all
        };
        self.charge(n, op, instr, 1);
        let seq = self.nodes[n].peers[to].send[chan as usize].next;
        let body = Body::Data {
            chan,
            seq,
            acks: self.acks_for(n, to),
            handler,
            words,
            arg,
        };
        let sc = &mut self.nodes[n].peers[to].send[chan as usize];
        sc.next += 1;
        if !self.p.raw {
            sc.unacked.push_back((seq, body));
            self.nodes[n].outstanding += 1;
        }
        self.put(n, to, 4 * words as u64, body);
        if chan == Chan::Req && !self.p.raw {
            // The request's own poll.
            self.poll(n);
        }
        true
    }

    /// What SP AM adds to a send of `words` words: a line flushed per 64
    /// bytes of packet (32 of header) and the flow-control bookkeeping.
    fn sp_am_send_extra(c: SpCosts, words: u8) -> u64 {
        let lines = (magic::ni::sp::HEADER_BYTES + 4 * words as u64).div_ceil(64);
        c.flow_send + lines * c.flush_line
    }

    fn control(&mut self, n: usize, to: usize, body: Body, op: &'static str) {
        self.count(n, op);
        self.charge(n, op, self.p.costs.control, 1);
        self.put(n, to, 0, body);
    }

    /// The peer's cumulative acks: drop what they cover.
    fn acked(&mut self, n: usize, from: usize, acks: [u32; 2]) {
        for (ch, &a) in acks.iter().enumerate() {
            let node = &mut self.nodes[n];
            let q = &mut node.peers[from].send[ch].unacked;
            while q.front().is_some_and(|x| x.0 < a) {
                q.pop_front();
                node.outstanding -= 1;
            }
        }
    }

    /// Go back to `expected` on `chan` towards `to`: send it and every later
    /// packet again (their lengths in one MicroChannel access).
    fn go_back(&mut self, n: usize, to: usize, chan: Chan, expected: u32) {
        let acks = self.acks_for(n, to);
        let again: Vec<Body> = self.nodes[n].peers[to].send[chan as usize]
            .unacked
            .iter()
            .filter(|x| x.0 >= expected)
            .map(|x| match x.1 {
                Body::Data {
                    chan,
                    seq,
                    handler,
                    words,
                    arg,
                    ..
                } => Body::Data {
                    chan,
                    seq,
                    acks,
                    handler,
                    words,
                    arg,
                },
                b => b,
            })
            .collect();
        if again.is_empty() {
            return;
        }
        self.count(n, "retransmit");
        let per = self.p.costs.retransmit * again.len() as u64;
        self.charge(n, "retransmit", per, 1);
        for b in again {
            let words = match b {
                Body::Data { words, .. } => words,
                _ => 0,
            };
            self.rel.retransmitted += 1;
            self.put(n, to, 4 * words as u64, b);
        }
    }

    /// Take one packet that has arrived.
    fn take(&mut self, n: usize) -> bool {
        let now = self.nodes[n].t;
        let Some(pkt) = self.sw.receive(NodeId(n as u32), now) else {
            return false;
        };
        let c = self.p.costs;
        let from = pkt.src.0 as usize;
        self.nodes[n].taken += 1;
        let pop = u64::from(self.nodes[n].taken.is_multiple_of(c.pop_every));
        match pkt.body {
            Body::Data {
                chan,
                seq,
                acks,
                handler,
                arg,
                ..
            } => {
                self.count(n, "receive");
                self.charge(
                    n,
                    "receive",
                    if self.p.raw {
                        c.per_message - c.flow_recv
                    } else {
                        c.per_message
                    },
                    pop,
                );
                if self.p.raw {
                    self.deliver(n, from, handler, arg);
                    return true;
                }
                self.acked(n, from, acks);
                let rc = self.nodes[n].peers[from].recv[chan as usize];
                if seq == rc.expected {
                    let r = &mut self.nodes[n].peers[from].recv[chan as usize];
                    r.expected += 1;
                    r.nacked = None;
                    self.nodes[n].peers[from].unacked_in += 1;
                    self.log[n].push((from as u32, chan, seq));
                    self.deliver(n, from, handler, arg);
                    let w = (c.window_req.min(c.window_rep) / 4) as u64;
                    if self.nodes[n].peers[from].unacked_in >= w {
                        self.rel.acks += 1;
                        let acks = self.acks_for(n, from);
                        self.control(n, from, Body::Ack { acks }, "ack");
                    }
                } else if seq < rc.expected {
                    self.rel.duplicates += 1;
                } else {
                    self.rel.out_of_sequence += 1;
                    if rc.nacked != Some(rc.expected) {
                        self.nodes[n].peers[from].recv[chan as usize].nacked = Some(rc.expected);
                        self.nack(n, from, chan);
                    }
                }
            }
            Body::Ack { acks } => {
                self.count(n, "control");
                self.charge(n, "control", c.control, pop);
                self.acked(n, from, acks);
            }
            Body::Nack {
                chan,
                expected,
                acks,
            } => {
                self.count(n, "control");
                self.charge(n, "control", c.control, pop);
                self.acked(n, from, acks);
                self.go_back(n, from, chan, expected);
            }
            Body::KeepAlive => {
                self.count(n, "control");
                self.charge(n, "control", c.control, pop);
                for chan in [Chan::Req, Chan::Rep] {
                    self.nack(n, from, chan);
                }
                let expected = self.nodes[n].peers[from].chunk_expected;
                self.control(n, from, Body::ChunkNack { expected }, "nack");
            }
            Body::Bulk {
                chunk,
                index,
                packets,
                bytes,
                last,
                share,
            } => {
                self.count(n, "bulk-in");
                self.charge(n, "bulk-in", c.bulk_take, pop);
                let peer = &mut self.nodes[n].peers[from];
                if chunk != peer.chunk_expected {
                    // Another chunk's packet (a duplicate, or a later chunk
                    // while this one misses a packet): dropped.
                    self.rel.duplicates += 1;
                    return true;
                }
                peer.chunk_seen |= 1 << index;
                if peer.chunk_seen.count_ones() == packets as u32 {
                    peer.chunk_expected += 1;
                    peer.chunk_seen = 0;
                    self.control(n, from, Body::ChunkAck { chunk }, "ack");
                    if let Some((segment, total)) = share {
                        // A shared segment is complete once every
                        // sender's part is in, whichever comes last.
                        let segs = &mut self.nodes[n].segments;
                        let i = match segs.iter().position(|x| x.0 == segment) {
                            Some(i) => i,
                            None => {
                                segs.push((segment, 0));
                                segs.len() - 1
                            }
                        };
                        segs[i].1 = segs[i].1.saturating_add(bytes);
                        if segs[i].1 >= total {
                            segs.swap_remove(i);
                            self.nodes[n].received += 1;
                        }
                    } else if last {
                        // The end of the block: the store is complete.
                        self.nodes[n].received += 1;
                    }
                }
            }
            Body::ChunkAck { chunk } => {
                self.count(n, "control");
                self.charge(n, "control", c.control, pop);
                self.chunks_acked(n, from, u64::from(chunk) + 1);
            }
            Body::ChunkNack { expected } => {
                self.count(n, "control");
                self.charge(n, "control", c.control, pop);
                // The chunk the receiver expects says it has every earlier
                // one: a lost ChunkAck is recovered here.
                self.chunks_acked(n, from, u64::from(expected));
                let again: Vec<Chunk> = self.nodes[n].peers[from]
                    .chunks_out
                    .iter()
                    .filter(|x| x.number >= expected)
                    .copied()
                    .collect();
                for ch in again {
                    self.rel.retransmitted += ch.packets as u64;
                    self.send_chunk(n, from, ch);
                }
            }
        }
        true
    }

    /// Node `n`'s chunks to `from` numbered below `below` are in: each
    /// leaves the node's outstanding work, and a block's last one runs the
    /// store's completion function.
    fn chunks_acked(&mut self, n: usize, from: usize, below: u64) {
        let node = &mut self.nodes[n];
        let q = &mut node.peers[from].chunks_out;
        while q.front().is_some_and(|x| u64::from(x.number) < below) {
            let done = q.pop_front().expect("front");
            node.outstanding -= 1;
            if done.last {
                // The store's completion function runs.
                node.received += 1;
            }
        }
    }

    /// Put one chunk's packets on the adapter: each group of
    /// `lengths_per_access` packets copied, then their lengths written in
    /// one access, which lets the adapter send them.
    fn send_chunk(&mut self, n: usize, to: usize, ch: Chunk) {
        let Chunk {
            number: chunk,
            packets,
            bytes,
            last,
            share,
        } = ch;
        let c = self.p.costs;
        self.count(n, "store");
        let group = c.lengths_per_access.clamp(1, CHUNK_PACKETS as u64) as u8;
        let mut left = bytes;
        for index in 0..packets {
            if index % group == 0 {
                let these = (packets - index).min(group);
                self.charge(n, "store", c.bulk_packet * these as u64, 1);
            }
            let b = left.min(PACKET_DATA);
            left -= b;
            let body = Body::Bulk {
                chunk,
                index,
                packets,
                bytes,
                last,
                share,
            };
            self.put(n, to, b as u64, body);
        }
    }

    /// Send the store under way chunk by chunk: chunk N of a block goes once
    /// chunk N-2 is acknowledged; a one-chunk store goes while the window
    /// has room. `false` while it must wait (polling meanwhile).
    fn store(&mut self, n: usize) -> bool {
        while let Some(st) = self.nodes[n].store {
            if st.sent >= st.bytes {
                self.nodes[n].store = None;
                return true;
            }
            let bytes = (st.bytes - st.sent).min(PACKET_DATA * CHUNK_PACKETS);
            let packets = bytes.div_ceil(PACKET_DATA).max(1) as u8;
            let out = &self.nodes[n].peers[st.to].chunks_out;
            let full = if st.bytes <= PACKET_DATA * CHUNK_PACKETS {
                // One chunk: the request window bounds what is unacknowledged.
                let held: usize = out.iter().map(|x| x.packets as usize).sum();
                held + packets as usize > self.p.costs.window_req
            } else {
                // Chunk N waits for the ack of chunk N-2.
                out.len() >= 2
            };
            if full {
                self.poll(n);
                return false;
            }
            let last = st.sent + bytes >= st.bytes;
            let peer = &mut self.nodes[n].peers[st.to];
            let chunk = peer.next_chunk;
            peer.next_chunk += 1;
            let ch = Chunk {
                number: chunk,
                packets,
                bytes,
                last,
                share: st.share,
            };
            peer.chunks_out.push_back(ch);
            self.nodes[n].outstanding += 1;
            self.send_chunk(n, st.to, ch);
            if let Some(x) = self.nodes[n].store.as_mut() {
                x.sent += bytes;
            }
        }
        true
    }

    fn nack(&mut self, n: usize, to: usize, chan: Chan) {
        self.rel.nacks += 1;
        let expected = self.nodes[n].peers[to].recv[chan as usize].expected;
        let acks = self.acks_for(n, to);
        self.control(
            n,
            to,
            Body::Nack {
                chan,
                expected,
                acks,
            },
            "nack",
        );
    }

    fn deliver(&mut self, n: usize, from: usize, handler: Handler, arg: u32) {
        if handler == Handler::Get {
            // Store the block back; it goes out before the program's next step.
            self.nodes[n].gets.push_back(Store {
                to: from,
                bytes: arg.max(1),
                sent: 0,
                share: None,
            });
            return;
        }
        self.nodes[n].received += 1;
        if handler == Handler::Echo
            && !self.send(n, NodeId(from as u32), Chan::Rep, 4, Handler::Nop)
        {
            self.nodes[n].replies.push(NodeId(from as u32));
        }
    }

    fn poll(&mut self, n: usize) {
        self.count(n, "poll");
        let instr = if self.p.raw { 0 } else { self.p.costs.poll };
        self.charge(n, "poll", instr, 0);
        let mut found = false;
        while self.take(n) {
            found = true;
        }
        if found {
            self.nodes[n].empty_polls = 0;
        } else {
            self.empty_polled(n, 1);
        }
    }

    /// Count unsuccessful polls; past the threshold, probe every peer that
    /// holds unacknowledged packets of this node.
    fn empty_polled(&mut self, n: usize, k: u64) {
        if self.p.raw {
            return;
        }
        self.nodes[n].empty_polls += k;
        if self.nodes[n].empty_polls < self.p.costs.keepalive_polls {
            return;
        }
        self.nodes[n].empty_polls = 0;
        for to in 0..self.nodes.len() {
            let p = &self.nodes[n].peers[to];
            let waiting = p.send.iter().any(|s| !s.unacked.is_empty()) || !p.chunks_out.is_empty();
            if waiting {
                self.rel.keepalives += 1;
                self.control(n, to, Body::KeepAlive, "keepalive");
            }
        }
    }

    fn empty_poll(&self) -> u64 {
        cycles(if self.p.raw { 0 } else { self.p.costs.poll }).max(1)
    }
}

impl super::Layer for Sim<'_> {
    fn packets(&self) -> u64 {
        self.sw.stats.sent
    }

    fn now(&self, n: usize) -> Time {
        self.nodes[n].t
    }

    fn set_now(&mut self, n: usize, t: Time) {
        self.nodes[n].t = t;
    }

    fn received(&self, n: usize) -> u64 {
        self.nodes[n].received
    }

    fn before_step(&mut self, n: usize) -> bool {
        while let Some(&to) = self.nodes[n].replies.first() {
            if !self.send(n, to, Chan::Rep, 4, Handler::Nop) {
                self.poll(n);
                return false;
            }
            self.nodes[n].replies.remove(0);
        }
        // Blocks asked for by gets, when no store of the program's is out.
        if self.nodes[n].store.is_none() && !self.nodes[n].storing {
            if let Some(g) = self.nodes[n].gets.pop_front() {
                self.nodes[n].store = Some(g);
            }
        }
        if self.nodes[n].store.is_some() && !self.store(n) {
            return false;
        }
        true
    }

    fn step(&mut self, n: usize, s: Step) -> bool {
        let ok = match s {
            Step::Request { to, words, handler } => self.send(n, to, Chan::Req, words, handler),
            Step::Reply { to, words } => self.send(n, to, Chan::Rep, words, Handler::Nop),
            Step::Get { from, bytes } => self.send_arg(n, from, Chan::Req, 1, Handler::Get, bytes),
            Step::Store { to, bytes, .. } | Step::StoreShared { to, bytes, .. } => {
                let share = match s {
                    Step::StoreShared { segment, total, .. } => Some((segment, total)),
                    _ => None,
                };
                if !self.nodes[n].storing {
                    self.nodes[n].storing = true;
                    self.nodes[n].store = Some(Store {
                        to: to.0 as usize,
                        bytes: bytes.max(1),
                        sent: 0,
                        share,
                    });
                }
                let done = self.store(n);
                if done {
                    self.nodes[n].storing = false;
                }
                return done;
            }
            Step::Poll | Step::PollOnly { .. } => {
                self.poll(n);
                true
            }
            Step::Compute(d) => {
                self.nodes[n].t = Time(self.nodes[n].t.0 + d.0);
                true
            }
            Step::Wait { .. } | Step::Mark => unreachable!("the scheduler's"),
        };
        if !ok {
            // Window full: wait for acks.
            self.poll(n);
        }
        ok
    }

    fn poll(&mut self, n: usize) {
        Sim::poll(self, n)
    }

    fn idle(&mut self, n: usize, until: Time) {
        let each = self.empty_poll();
        let t = self.nodes[n].t;
        let mut k = until.0.saturating_sub(t.0) / each;
        if !self.p.raw {
            // Stop at the keep-alive threshold: the layer acts there.
            k = k.min(
                self.p
                    .costs
                    .keepalive_polls
                    .saturating_sub(self.nodes[n].empty_polls + 1),
            );
        }
        if k > 0 {
            let s = self.run.ops.entry((n as u32, "poll")).or_default();
            s.calls += k;
            s.busy += k * each;
            s.instructions += k * if self.p.raw { 0 } else { self.p.costs.poll };
            self.nodes[n].t = Time(t.0 + k * each);
            self.empty_polled(n, k);
        }
    }

    fn sleeps(&self) -> bool {
        false
    }

    fn next_arrival(&self, n: usize) -> Option<Time> {
        self.sw.next_arrival(NodeId(n as u32))
    }

    fn in_flight(&self) -> usize {
        // Unacknowledged packets can still come back by retransmission.
        let held: usize = self.nodes.iter().map(|x| x.outstanding).sum();
        self.sw.in_flight() + held
    }

    fn min_latency(&self) -> Time {
        let h = self.p.hw;
        Time(2 * h.adapter_latency.0 + h.switch_latency.0)
    }

    fn mark(&mut self, n: usize) {
        let t = self.nodes[n].t;
        self.nodes[n].marks.push(t);
    }

    fn woken(&mut self) -> &mut Vec<usize> {
        &mut self.woken
    }

    fn busy(&self, n: usize) -> bool {
        let x = &self.nodes[n];
        !x.replies.is_empty()
            || x.store.is_some()
            || !x.gets.is_empty()
            || x.outstanding > 0
            || self.sw.next_arrival(NodeId(n as u32)).is_some()
    }

    fn finish(&mut self) -> Run {
        Run {
            end: self.nodes.iter().map(|x| x.t).max().unwrap_or_default(),
            marks: self.nodes.iter().map(|x| x.marks.clone()).collect(),
            received: self.nodes.iter().map(|x| x.received).collect(),
            retries: self.rel.retransmitted,
            ..std::mem::take(&mut self.run)
        }
    }
}

/// A run with the reliability counters and each node's delivery log.
#[derive(Clone, Debug, Serialize)]
pub struct SpRun {
    /// What the run measured.
    pub run: Run,
    /// The reliability protocol's counters.
    pub reliability: Reliability,
    /// The switch's counters (packets sent, dropped, delayed, delivered).
    pub switch: magic::ni::sp::SwitchStats,
    /// Per node: (sender, channel, sequence number) of each message
    /// delivered, in delivery order.
    pub delivered: Vec<Vec<(u32, Chan, u32)>>,
}

impl Sp {
    /// Run and keep the reliability protocol's counters and delivery order.
    pub fn run_detailed(&self, programs: &[Vec<Step>]) -> Result<SpRun, Error> {
        self.validate()?;
        super::check_programs(self.nodes, programs)?;
        let n = self.nodes as usize;
        let mut sim = Sim {
            p: self,
            sw: SpSwitch::new(self.hw, self.nodes).map_err(Error::Network)?,
            nodes: (0..n)
                .map(|_| Node {
                    t: Time::ZERO,
                    store: None,
                    segments: Vec::new(),
                    gets: VecDeque::new(),
                    storing: false,
                    received: 0,
                    marks: Vec::new(),
                    peers: vec![Peer::default(); n],
                    taken: 0,
                    empty_polls: 0,
                    replies: Vec::new(),
                    outstanding: 0,
                })
                .collect(),
            run: Run::default(),
            rel: Reliability::default(),
            log: vec![Vec::new(); n],
            woken: Vec::new(),
        };
        let budget = super::Budget {
            time: self.hw.budget,
            per_node: self.hw.event_budget,
            nodes: self.nodes,
            table: "network.sp",
        };
        let run = super::drive(&mut sim, programs, budget)?;
        Ok(SpRun {
            run,
            reliability: sim.rel,
            switch: sim.sw.stats,
            delivered: std::mem::take(&mut sim.log),
        })
    }
}

impl Platform for Sp {
    fn machine(&self) -> super::Machines {
        super::Machines::Sp
    }

    fn name(&self) -> &'static str {
        if self.raw {
            "sp-raw"
        } else {
            "sp"
        }
    }

    fn nodes(&self) -> u32 {
        self.nodes
    }

    fn check(&self) -> Result<(), Error> {
        self.validate()
    }

    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, Error> {
        self.run_detailed(programs).map(|r| r.run)
    }
}
