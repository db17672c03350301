//! The IBM SP's TB2 adapter and switch.
//!
//! The host composes a packet in a send FIFO in its own memory, flushes the
//! lines (memory is not coherent with I/O) and writes the packet's length
//! into the packet-length array in adapter memory across the MicroChannel
//! (about 1 us an access); the adapter's i860 sees the slot, moves the
//! packet by DMA across the MicroChannel and hands it to the switch. At the
//! other end the adapter moves it by DMA into the receiver's receive FIFO in
//! host memory, where a poll finds it. The host pops receive entries lazily
//! (one MicroChannel access per so many packets).
//!
//! The switch offers four routes between each pair of nodes, with a
//! hardware latency and a link bandwidth; each node's link into the switch
//! and the switch's link out to it carry one packet at a time, so two
//! senders into one node share its link. The adapters add a fixed latency
//! (firmware) on each side. A fault-injection switch drops or delays a
//! fraction of the packets (seeded, so runs repeat); the messaging layer on
//! top must deliver every message exactly once and in order regardless.
//! A receive FIFO that fills is counted, not modelled: the adapter holds
//! packets back rather than losing them.

use super::cm5::{check_nodes, check_time};
use crate::error::OutOfRange;
use crate::ids::NodeId;
use crate::time::{Time, TICKS_PER_US};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Bytes of header in a packet.
pub const HEADER_BYTES: u64 = 32;
/// The most bytes a packet holds, header included.
pub const PACKET_BYTES: u64 = 256;

/// Hardware parameters of the adapter and the switch (times in ticks, see
/// [`Time`]; 26 400 a microsecond). Each field's default is in parentheses,
/// its allowed range after it ([`SpParams::validate`]; every switch build
/// calls it). Times may be from 0 to 10 ms ([`MAX_TIME`](super::cm5::MAX_TIME)).
///
/// A scenario's table of them: every field may be set, an omitted one keeps
/// its default, an unknown key is an error naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpParams {
    /// One MicroChannel access from the host (1 us; from 0 to 10 ms).
    /// Published: about 1 us an access.
    pub mc_access: Time,
    /// MicroChannel DMA rate, bytes per microsecond (80; from 1 to
    /// 1 000 000). Published: the 32-bit MicroChannel's 80 MB/s peak.
    pub mc_bytes_per_us: u64,
    /// Switch hardware latency (0.5 us; from 0 to 10 ms). Published:
    /// about 500 ns.
    pub switch_latency: Time,
    /// Switch link rate, bytes per microsecond (40; from 1 to 1 000 000).
    /// Published: about 40 MB/s. A packet's 32-byte header rides with its
    /// data, so a stream of full packets moves 35 MB/s of data. A node's
    /// link into the switch and the switch's link out to it each carry one
    /// packet at a time at this rate.
    pub switch_bytes_per_us: u64,
    /// Adapter firmware latency, per side (7.21 us; from 0 to 10 ms).
    /// Derived: what is left of the raw ping-pong's 46.6 to 47.0 us once
    /// the host's work, the DMAs, the switch and the link are counted.
    pub adapter_latency: Time,
    /// Adapter firmware time per packet, per side: its occupancy (1 us;
    /// from 0 to 10 ms). Model choice: the paper gives no per-packet
    /// firmware time; with it a full packet holds an adapter side 4.2 us
    /// (its DMA too), less than its 6.4 us on the link, so the adapters
    /// keep up with a stream at the switch's rate.
    pub adapter_per_packet: Time,
    /// Send FIFO entries, in packets (128; from 1 to 1 048 576). Published;
    /// kept for the record, not modelled: no send waits on it (a scenario
    /// refuses it, as its value would change nothing).
    pub send_fifo: usize,
    /// Receive FIFO entries, in packets (64; from 1 to 1 048 576).
    /// Published; not modelled as a delay: a packet arriving at a full
    /// FIFO is counted (`SwitchStats::overflowed`), and a scenario refuses the
    /// key, as its value would change no figure.
    pub recv_fifo: usize,
    /// Fault injection: parts per million of packets dropped (0; from 0 to
    /// 1 000 000).
    pub drop_ppm: u32,
    /// Fault injection: parts per million of packets delayed by `delay`, so
    /// that later ones overtake them (0; from 0 to 1 000 000).
    pub delay_ppm: u32,
    /// How long a delayed packet is held back (50 us; from 0 to 10 ms).
    pub delay: Time,
    /// Seed of the fault injector's choices (1; any).
    pub seed: u64,
    /// A run's budget of simulated time: an Active Message run on this
    /// machine that has not finished by then stops, not clean, naming this
    /// key (100 s, [`DEFAULT_RUN_TIME`](super::cm5::DEFAULT_RUN_TIME),
    /// some 300 times the longest benchmark's; from 1 tick to 10 000 s,
    /// [`MAX_RUN_TIME`](super::cm5::MAX_RUN_TIME)). A setting of the run,
    /// not of the hardware.
    pub budget: Time,
    /// A run's budget of events: the scheduler's steps and the packets
    /// handed to the network, per node of the machine (1 000 000,
    /// [`DEFAULT_EVENTS`](super::cm5::DEFAULT_EVENTS), some 15 times what
    /// the busiest benchmark takes; from 1 to 10^8,
    /// [`MAX_EVENTS`](super::cm5::MAX_EVENTS)). A run past it stops as at
    /// its time budget: it bounds the wall time of a run whose simulated
    /// time creeps (a sender retrying every poll into a full network, a
    /// storm of keep-alives).
    pub event_budget: u64,
}

/// The fastest rate, bytes per microsecond (1 TB/s).
pub const MAX_RATE: u64 = 1_000_000;

/// The most entries of a FIFO.
pub const MAX_FIFO: usize = 1 << 20;

/// Parts per million: the most a fault rate may be.
pub const PPM: u32 = 1_000_000;

impl Default for SpParams {
    fn default() -> Self {
        SpParams {
            mc_access: Time(TICKS_PER_US),
            mc_bytes_per_us: 80,
            switch_latency: Time(TICKS_PER_US / 2),
            switch_bytes_per_us: 40,
            // Set from the raw ping-pong (46.6 to 47.0 us round trip) once
            // the host's own work for it is charged (SP AM's per-call costs
            // without SP AM's additions).
            adapter_latency: Time(TICKS_PER_US * 721 / 100),
            adapter_per_packet: Time(TICKS_PER_US),
            send_fifo: 128,
            recv_fifo: 64,
            drop_ppm: 0,
            delay_ppm: 0,
            delay: Time(TICKS_PER_US * 50),
            seed: 1,
            budget: super::cm5::DEFAULT_RUN_TIME,
            event_budget: super::cm5::DEFAULT_EVENTS,
        }
    }
}

impl SpParams {
    /// Check every field against its documented range; the error names
    /// the first one out of it.
    ///
    /// ```
    /// use magic::ni::sp::SpParams;
    /// let e = SpParams { drop_ppm: 2_000_000, ..SpParams::default() }.validate().unwrap_err();
    /// assert_eq!(e.to_string(), "drop_ppm must be from 0 to 1000000, got 2000000");
    /// ```
    pub fn validate(&self) -> Result<(), OutOfRange> {
        check_time("mc_access", self.mc_access)?;
        OutOfRange::check("mc_bytes_per_us", self.mc_bytes_per_us, 1, MAX_RATE)?;
        check_time("switch_latency", self.switch_latency)?;
        OutOfRange::check("switch_bytes_per_us", self.switch_bytes_per_us, 1, MAX_RATE)?;
        check_time("adapter_latency", self.adapter_latency)?;
        check_time("adapter_per_packet", self.adapter_per_packet)?;
        OutOfRange::check("send_fifo", self.send_fifo, 1, MAX_FIFO)?;
        OutOfRange::check("recv_fifo", self.recv_fifo, 1, MAX_FIFO)?;
        OutOfRange::check("drop_ppm", self.drop_ppm, 0, PPM)?;
        OutOfRange::check("delay_ppm", self.delay_ppm, 0, PPM)?;
        check_time("delay", self.delay)?;
        super::cm5::check_budgets(self.budget, self.event_budget)?;
        // A message takes some time, so a node waiting for one moves on.
        if self.adapter_latency == Time::ZERO && self.switch_latency == Time::ZERO {
            return Err(OutOfRange::new(
                "adapter_latency",
                "above 0 when switch_latency is 0",
                self.adapter_latency.0,
            ));
        }
        Ok(())
    }
}

/// A packet on the SP: its bytes on the wire, and what the layer put in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpPacket<P> {
    /// The node that sent it.
    pub src: NodeId,
    /// The node it is for.
    pub dest: NodeId,
    /// Bytes on the wire, header included (at most [`PACKET_BYTES`]).
    pub bytes: u64,
    /// When it is in the receiver's FIFO (ticks).
    pub arrives: Time,
    /// What the messaging layer put in it.
    pub body: P,
}

/// Counters of the switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SwitchStats {
    /// Packets the adapters handed the switch (dropped ones included).
    pub sent: u64,
    /// Packets the fault injector dropped.
    pub dropped: u64,
    /// Packets the fault injector delayed.
    pub delayed: u64,
    /// Packets sent while the receiver's FIFO already held (or was due to
    /// hold) as many as it has entries: the adapter holds them back.
    pub overflowed: u64,
    /// Packets taken from a receive FIFO.
    pub delivered: u64,
}

/// The adapters and the switch.
pub struct SpSwitch<P> {
    params: SpParams,
    rng: fastrand::Rng,
    /// Per node: when its adapter's send side and receive side are free.
    send_free: Vec<Time>,
    recv_free: Vec<Time>,
    /// Per node: when its link into the switch is free.
    link_free: Vec<Time>,
    /// Per node: when the switch's link out to it is free.
    port_free: Vec<Time>,
    /// Per node: packets on their way or in the receive FIFO, by arrival.
    fifo: Vec<VecDeque<SpPacket<P>>>,
    /// Counters since the switch was built.
    pub stats: SwitchStats,
}

fn at_rate(bytes: u64, per_us: u64) -> Time {
    Time(bytes.saturating_mul(TICKS_PER_US).div_ceil(per_us.max(1)))
}

impl<P: Copy> SpSwitch<P> {
    /// The adapters and switch of a machine of `nodes` nodes; an error
    /// naming the parameter out of range, or `nodes` if not from 2 to
    /// [`MAX_NODES`](super::cm5::MAX_NODES).
    pub fn new(params: SpParams, nodes: u32) -> Result<SpSwitch<P>, OutOfRange> {
        params.validate()?;
        check_nodes(nodes)?;
        Ok(SpSwitch {
            params,
            rng: fastrand::Rng::with_seed(params.seed),
            send_free: vec![Time::ZERO; nodes as usize],
            recv_free: vec![Time::ZERO; nodes as usize],
            link_free: vec![Time::ZERO; nodes as usize],
            port_free: vec![Time::ZERO; nodes as usize],
            fifo: (0..nodes).map(|_| VecDeque::new()).collect(),
            stats: SwitchStats::default(),
        })
    }

    /// The hardware parameters.
    pub fn params(&self) -> &SpParams {
        &self.params
    }

    /// The host wrote the packet's length at `now`: the adapter takes it
    /// from there. The packet is lost if the fault injector drops it or the
    /// receive FIFO is full when it arrives. A packet from or to a node
    /// the switch does not have goes nowhere.
    pub fn send(&mut self, now: Time, src: NodeId, dest: NodeId, data: u64, body: P) {
        let p = self.params;
        let bytes = HEADER_BYTES + data.min(PACKET_BYTES - HEADER_BYTES);
        let (s, d) = (src.0 as usize, dest.0 as usize);
        if s >= self.fifo.len() || d >= self.fifo.len() {
            return;
        }
        // Send side: firmware, then DMA from host memory.
        let start = now.max(self.send_free[s]);
        let dma = at_rate(bytes, p.mc_bytes_per_us);
        let occupied = p.adapter_per_packet + dma;
        self.send_free[s] = start + occupied;
        // Onto the node's link, one packet at a time at the link's rate.
        let wire = at_rate(bytes, p.switch_bytes_per_us);
        let on = (start + p.adapter_latency + dma).max(self.link_free[s]);
        self.link_free[s] = on + wire;
        // Out of the switch on the receiver's link, one packet at a time:
        // one sender's packets come at most a link's rate and never wait
        // here; two senders' into one node share its link.
        let out = (on + p.switch_latency).max(self.port_free[d]);
        self.port_free[d] = out + wire;
        let mut at = out + wire;
        self.stats.sent += 1;
        if p.drop_ppm > 0 && self.rng.u32(0..1_000_000) < p.drop_ppm {
            self.stats.dropped += 1;
            return;
        }
        let delayed = p.delay_ppm > 0 && self.rng.u32(0..1_000_000) < p.delay_ppm;
        // Receive side: firmware, then DMA into the host's receive FIFO. A
        // delayed packet reaches the adapter after later ones and slips in
        // between them (the adapter's timeline is kept in send order).
        let rstart = if delayed {
            self.stats.delayed += 1;
            at = at + p.delay;
            at
        } else {
            let r = at.max(self.recv_free[d]);
            self.recv_free[d] = r + p.adapter_per_packet + dma;
            r
        };
        let arrives = rstart + p.adapter_latency + dma;
        // A full receive FIFO holds the packet back in the adapter (not
        // modelled as delay: counted, so a study can see it happen).
        let q = &mut self.fifo[d];
        if q.len() >= p.recv_fifo {
            self.stats.overflowed += 1;
        }
        let i = q.partition_point(|x| x.arrives <= arrives);
        q.insert(
            i,
            SpPacket {
                src,
                dest,
                bytes,
                arrives,
                body,
            },
        );
    }

    /// The packet at the head of `node`'s receive FIFO, if it has arrived.
    pub fn receive(&mut self, node: NodeId, now: Time) -> Option<SpPacket<P>> {
        let q = self.fifo.get_mut(node.0 as usize)?;
        if q.front().is_some_and(|p| p.arrives <= now) {
            self.stats.delivered += 1;
            q.pop_front()
        } else {
            None
        }
    }

    /// When the packet at the head of `node`'s receive FIFO arrives, if there is one.
    pub fn next_arrival(&self, node: NodeId) -> Option<Time> {
        self.fifo.get(node.0 as usize)?.front().map(|p| p.arrives)
    }

    /// When the last packet now on its way to `node` arrives, if there is one.
    pub fn last_arrival(&self, node: NodeId) -> Option<Time> {
        self.fifo.get(node.0 as usize)?.back().map(|p| p.arrives)
    }

    /// Packets on their way or waiting in a receive FIFO, over all nodes.
    pub fn in_flight(&self) -> usize {
        self.fifo.iter().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_crosses_adapter_switch_adapter() {
        let mut s: SpSwitch<u32> = SpSwitch::new(SpParams::default(), 2).unwrap();
        s.send(Time::ZERO, NodeId(0), NodeId(1), 0, 7);
        let p = SpParams::default();
        let dma = at_rate(32, 80);
        let wire = at_rate(32, 40);
        let want = 2 * p.adapter_latency.0 + 2 * dma.0 + p.switch_latency.0 + wire.0;
        assert_eq!(s.next_arrival(NodeId(1)), Some(Time(want)));
        assert!(s.receive(NodeId(1), Time(want - 1)).is_none());
        assert_eq!(s.receive(NodeId(1), Time(want)).unwrap().body, 7);
    }

    #[test]
    fn two_senders_into_one_node_share_its_link() {
        let p = SpParams::default();
        let wire = at_rate(256, p.switch_bytes_per_us);
        // A stream from one sender never waits for the link out to its
        // receiver: its packets come a link's time apart at most.
        let mut one: SpSwitch<u32> = SpSwitch::new(p, 3).unwrap();
        for i in 0..4 {
            one.send(Time::ZERO, NodeId(1), NodeId(0), 224, i);
        }
        let mut got = Vec::new();
        while let Some(q) = one.receive(NodeId(0), Time(u64::MAX / 2)) {
            got.push(q.arrives.0);
        }
        assert!(got.windows(2).all(|w| w[1] - w[0] == wire.0), "{got:?}");
        // Two senders at once: the second packet leaves the switch a
        // link's time after the first.
        let mut two: SpSwitch<u32> = SpSwitch::new(p, 3).unwrap();
        two.send(Time::ZERO, NodeId(1), NodeId(0), 224, 1);
        two.send(Time::ZERO, NodeId(2), NodeId(0), 224, 2);
        let first = two.receive(NodeId(0), Time(u64::MAX / 2)).unwrap();
        let second = two.receive(NodeId(0), Time(u64::MAX / 2)).unwrap();
        assert_eq!(first.arrives, Time(got[0]));
        assert_eq!(second.arrives.0 - first.arrives.0, wire.0);
    }

    #[test]
    fn the_fault_injector_drops_and_delays_as_asked() {
        let p = SpParams {
            drop_ppm: 100_000,
            delay_ppm: 100_000,
            ..SpParams::default()
        };
        let mut s: SpSwitch<u32> = SpSwitch::new(p, 2).unwrap();
        for i in 0..2000 {
            s.send(Time(i * 400_000), NodeId(0), NodeId(1), 224, i as u32);
        }
        assert!((150..250).contains(&s.stats.dropped), "{:?}", s.stats);
        assert!((130..250).contains(&s.stats.delayed), "{:?}", s.stats);
    }
}
