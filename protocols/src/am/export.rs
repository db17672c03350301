//! A platform's measured LogP figures as input to two other simulators, so
//! that a characterization made here can drive a larger simulation there:
//! LogGOPSim (command-line flags and GOAL schedules) and SimGrid (a platform
//! file, an S4U ping-pong and SMPI settings).
//!
//! Everything is derived from the kit's live figures ([`LogP`], and for the
//! CM-5's fat tree the round trips to nodes 1 and 4), never from constants,
//! so the exports follow the models when they change.
//!
//! # LogP to LogGP (LogGOPSim)
//!
//! LogGOPSim charges a message of `s` bytes `o` on the sender's CPU, sends
//! its first byte `o + L` after the send starts, and on arrival charges the
//! receiver's CPU `o + max((s-1)O, (s-1)G)`; a NIC may start the next send
//! or receive `g + (s-1)G` after the last. A 16-byte ping-pong's round trip
//! is therefore `4o + 2L + 2(s-1)G`, and a stream of large messages moves at
//! `1/G` bytes per time unit. The kit measures, per platform, the send,
//! reply and receive overheads `os`, `or_`, `orecv` (one-to-two and
//! two-to-one), the round trip `RT` of a one-word request and its reply
//! (node 0 to node 1), and the bulk bandwidth `B` (the slope of the
//! non-blocking array transfer's fit). The export chooses:
//!
//! - `o = (os + or_ + 2 orecv) / 4`: LogGOPSim has one overhead for sends
//!   and receives; a round trip holds one request send, one reply send and
//!   two receives, so `4o` is the kit's own overhead per round trip.
//! - `G = 1/B`: the long-message gap per byte is the kit's bulk bandwidth.
//! - `L = RT/2 - 2o - (s-1)G` with `s = 16` ([`SMALL_BYTES`], an Active
//!   Message's four argument words): the latency is what remains of the
//!   kit's round trip once LogGP's own charges for a 16-byte message, the
//!   overheads and the `(s-1)G` per message, are taken out, so the 16-byte
//!   ping-pong reproduces the kit's round trip exactly.
//! - `g = max(os, orecv)`: back-to-back messages go at the slower side's
//!   pace. It does not enter the ping-pong (a round trip is far longer) and
//!   only adds `max(o, g)` per block to a bulk stream.
//! - `O = 0`: the kit's figures do not separate a per-byte CPU cost from the
//!   network's; LogGOPSim charges the receiver's CPU `(s-1)G` anyway.
//! - `S` (the eager limit) is the largest flag value: the Active Message
//!   layers push stores without a rendezvous.
//!
//! If the remainder for `L` is negative (overheads and `(s-1)G` exceed half
//! the round trip), `L` is 0 and the shortfall is taken from `o`, so the
//! round trip still holds; [`LogGp::notes`] says so.
//!
//! LogGOPSim's parameters are integers. They are written in the finest unit
//! (picoseconds, `unit_seconds` = `1e-12`, coarser only if a value would not
//! fit LogGOPSim's `int`) so that rounding changes nothing that matters;
//! LogGOPSim's times (finishing times, `calc` lengths) are in that unit.
//!
//! # LogP to SimGrid
//!
//! Under SimGrid's CM02 network model (named in the platform file, so that
//! the default LV08, which scales latencies, cannot apply) a message of `s`
//! bytes takes the sum of its route's link latencies plus `s/bw`. The S4U
//! ping-pong charges the kit's overheads as host computation (request send,
//! receive, reply send, receive), so the route from node 0 to node 1 must
//! take `X = RT/2 - (os + or_ + 2 orecv)/2 - s/B` of latency, with every link
//! at the bulk bandwidth `B` (the same `L` and `G` as LogGOPSim's, up to one
//! byte's `G`).
//!
//! - **CM-5**: SimGrid's `cluster` with `topology="FAT_TREE"`: 4-ary, the
//!   routers of the first two levels with 2 parents and the higher ones 4
//!   (the incomplete tree). SimGrid gives every link of a fat tree one
//!   latency, while the kit's one-way latency is a fixed part (injection,
//!   ejection, wires) plus a step per level of the common ancestor. The
//!   kit's step (a level adds two links each way: a quarter of the round
//!   trip's step from node 1 to node 4) is the latency a link should have;
//!   the fixed part is carried by `k` pass-through levels under the tree
//!   (each node's network interface as a one-child switch), `k` chosen so
//!   that the link latency `X / (2(1+k))` comes closest to the step's. The
//!   round trip to node 1 is then exact and the steps at nodes 4 and 16 are
//!   the kit's within that rounding. A machine whose size is not a multiple
//!   of the top level's subtrees gets the tree's missing leaves as extra,
//!   unused hosts.
//! - **SP** and **FLASH**: a flat `cluster` (each node's link to one switch,
//!   full duplex), latency `X/2` per link: the kit models no distance in
//!   either network.
//!
//! If `X` would be negative, links get no latency and the bandwidth is set
//! so that a 16-byte message still takes the kit's time (bulk transfers are
//! then slower than the kit's; the file says so).
//!
//! SMPI (`smpi.cfg`) takes the overheads as `smpi/os` (the request send),
//! `smpi/or` (a receive) and `smpi/ois`, with SMPI's latency and bandwidth
//! correction factors set to 1, as `--cfg=` options for `smpirun`.

use super::suite::{self, LogP};
use super::{Platform, MAX_NODES};
use crate::Error;
use std::fmt::Write as _;

/// Bytes of the reference small message: an Active Message's four argument
/// words. The ping-pongs send messages of this size.
pub const SMALL_BYTES: u32 = 16;

/// Round trips in `pingpong.goal` and `pingpong.py`.
pub const PINGPONG_ROUNDS: u32 = 100;

/// Messages each node sends to its right neighbour in `ring.goal`.
pub const RING_MESSAGES: u32 = 20;

/// Blocks in `bulk.goal`, each of [`BULK_BYTES`]: the suite's largest array
/// transfer, issued back to back from node 0 to node 1.
pub const BULK_BLOCKS: u32 = 2;

/// Bytes per block in `bulk.goal`.
pub const BULK_BYTES: u32 = suite::SIZES[suite::SIZES.len() - 1];

/// LogGP parameters chosen from the kit's LogP figures (see the module
/// docs for how), in microseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LogGp {
    /// `L`: latency.
    pub latency_us: f64,
    /// `o`: overhead of a send or a receive on the CPU.
    pub overhead_us: f64,
    /// `g`: gap between messages at a network interface.
    pub gap_us: f64,
    /// `G`: gap per byte of a long message.
    pub gap_per_byte_us: f64,
    /// `O`: CPU overhead per byte.
    pub overhead_per_byte_us: f64,
    /// Where the choice had to depart from the mapping (empty normally).
    pub notes: Vec<String>,
}

impl LogGp {
    /// The mapping of the module docs.
    pub fn from_logp(l: &LogP) -> Result<LogGp, Error> {
        check_figures(l)?;
        let g_byte = 1.0 / l.bulk.bandwidth_mb_s;
        let mut o = overheads_per_round_trip(l) / 4.0;
        let per_msg = (SMALL_BYTES - 1) as f64 * g_byte;
        let mut lat = l.round_trip_us / 2.0 - 2.0 * o - per_msg;
        let mut notes = Vec::new();
        if lat < 0.0 {
            // Keep the round trip: no latency, and the rest off the overhead.
            o = ((l.round_trip_us / 2.0 - per_msg) / 2.0).max(0.0);
            lat = 0.0;
            notes.push(if o > 0.0 {
                format!("L would be negative: L = 0 and o lowered to {o:.4} us to keep the round trip")
            } else {
                format!(
                    "2(s-1)G alone ({:.4} us) exceeds the round trip: L = o = 0, and LogGOPSim's round trip is longer than the kit's",
                    2.0 * per_msg
                )
            });
        }
        Ok(LogGp {
            latency_us: lat,
            overhead_us: o,
            gap_us: l.send_overhead_us.max(l.recv_overhead_us),
            gap_per_byte_us: g_byte,
            overhead_per_byte_us: 0.0,
            notes,
        })
    }

    /// The round trip LogGP gives a ping-pong of `bytes`-byte messages:
    /// `4o + 2L + 2(s-1)G` (with `O <= G`).
    pub fn round_trip_us(&self, bytes: u32) -> f64 {
        let s1 = bytes.saturating_sub(1) as f64;
        4.0 * self.overhead_us + 2.0 * self.latency_us + 2.0 * s1 * self.gap_per_byte_us
    }

    /// LogGOPSim's integer flags, in the finest decimal unit that fits.
    pub fn flags(&self) -> Result<Flags, Error> {
        let us = [
            self.latency_us,
            self.overhead_us,
            self.gap_us,
            self.gap_per_byte_us,
            self.overhead_per_byte_us,
        ];
        for exp in -12..=-6 {
            let per_us = 10f64.powi(-6 - exp);
            let v: Vec<f64> = us.iter().map(|x| (x * per_us).round()).collect();
            if v.iter().all(|x| *x <= i32::MAX as f64) {
                let i = |k: usize| v[k] as i64;
                return Ok(Flags {
                    unit_exp: exp,
                    l: i(0),
                    o: i(1),
                    g: i(2),
                    g_byte: i(3),
                    o_byte: i(4),
                });
            }
        }
        Err(Error::Export(format!(
            "the LogGP parameters ({us:?} us) do not fit LogGOPSim's integers even in microseconds"
        )))
    }
}

/// LogGOPSim's command-line parameters, integers in units of
/// `10^unit_exp` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Flags {
    /// The unit's power of ten in seconds (-12: picoseconds).
    pub unit_exp: i32,
    /// `-L`.
    pub l: i64,
    /// `-o`.
    pub o: i64,
    /// `-g`.
    pub g: i64,
    /// `-G`.
    pub g_byte: i64,
    /// `-O`.
    pub o_byte: i64,
}

impl Flags {
    /// The flags as LogGOPSim takes them (one line, no newline).
    pub fn line(&self) -> String {
        format!(
            "-L {} -o {} -g {} -G {} -O {} -S {}",
            self.l,
            self.o,
            self.g,
            self.g_byte,
            self.o_byte,
            i32::MAX
        )
    }

    /// The unit in seconds as written in `unit_seconds` (`1e-12`).
    pub fn unit(&self) -> String {
        format!("1e{}", self.unit_exp)
    }

    /// Seconds per unit.
    pub fn unit_seconds(&self) -> f64 {
        10f64.powi(self.unit_exp)
    }
}

/// A file of an export: its name inside the output folder and its text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct File {
    /// File name (no folder).
    pub name: &'static str,
    /// Contents.
    pub text: String,
}

/// The LogGOPSim export: `flags`, `unit_seconds` and the GOAL schedules
/// `pingpong.goal` (node 0 and node 1, [`PINGPONG_ROUNDS`] round trips of
/// [`SMALL_BYTES`]), `ring.goal` (every node sends [`RING_MESSAGES`] to its
/// right neighbour) and `bulk.goal` ([`BULK_BLOCKS`] blocks of
/// [`BULK_BYTES`] from node 0 to node 1).
pub fn loggopsim(l: &LogP, nodes: u32) -> Result<Vec<File>, Error> {
    check_nodes(nodes)?;
    let p = LogGp::from_logp(l)?;
    let f = p.flags()?;
    Ok(vec![
        File {
            name: "flags",
            text: format!("{}\n", f.line()),
        },
        File {
            name: "unit_seconds",
            text: format!("{}\n", f.unit()),
        },
        File {
            name: "pingpong.goal",
            text: pingpong_goal(&l.platform),
        },
        File {
            name: "ring.goal",
            text: ring_goal(&l.platform, nodes),
        },
        File {
            name: "bulk.goal",
            text: bulk_goal(&l.platform),
        },
    ])
}

/// A rank's operations, chained: each waits for the one before.
fn chained(rank: u32, ops: impl Iterator<Item = String>) -> String {
    let mut s = format!("rank {rank} {{\n");
    for (i, op) in ops.enumerate() {
        let _ = writeln!(s, "l{i}: {op}");
        if i > 0 {
            let _ = writeln!(s, "l{i} requires l{}", i - 1);
        }
    }
    s.push_str("}\n");
    s
}

fn pingpong_goal(platform: &str) -> String {
    let n = PINGPONG_ROUNDS;
    let b = SMALL_BYTES;
    let mut s = format!(
        "// flashkit {platform}: {n} round trips of {b}-byte messages, node 0 to node 1.\n\
         // Round trip = the finishing time / {n}.\nnum_ranks 2\n\n"
    );
    s += &chained(
        0,
        (0..n).flat_map(|_| {
            [
                format!("send {b}b to 1 tag 0"),
                format!("recv {b}b from 1 tag 0"),
            ]
        }),
    );
    s.push('\n');
    s += &chained(
        1,
        (0..n).flat_map(|_| {
            [
                format!("recv {b}b from 0 tag 0"),
                format!("send {b}b to 0 tag 0"),
            ]
        }),
    );
    s
}

fn ring_goal(platform: &str, nodes: u32) -> String {
    let m = RING_MESSAGES;
    let b = SMALL_BYTES;
    let mut s = format!(
        "// flashkit {platform}: every node sends {m} {b}-byte messages to its right neighbour\n\
         // and takes {m} from its left one. Time per message = the finishing time / {m}.\n\
         num_ranks {nodes}\n\n"
    );
    for r in 0..nodes {
        let (right, left) = ((r + 1) % nodes, (r + nodes - 1) % nodes);
        let _ = writeln!(s, "rank {r} {{");
        for i in 0..m {
            let _ = writeln!(s, "s{i}: send {b}b to {right} tag 0");
            let _ = writeln!(s, "r{i}: recv {b}b from {left} tag 0");
            if i > 0 {
                let _ = writeln!(s, "s{i} requires s{}", i - 1);
                let _ = writeln!(s, "r{i} requires r{}", i - 1);
            }
        }
        s.push_str("}\n\n");
    }
    s
}

fn bulk_goal(platform: &str) -> String {
    let (k, b) = (BULK_BLOCKS, BULK_BYTES);
    let mut s = format!(
        "// flashkit {platform}: {k} blocks of {b} bytes, node 0 to node 1, back to back.\n\
         // Bandwidth = {k} x {b} bytes / the finishing time.\nnum_ranks 2\n\n"
    );
    s += &chained(0, (0..k).map(|_| format!("send {b}b to 1 tag 0")));
    s.push('\n');
    s += &chained(1, (0..k).map(|_| format!("recv {b}b from 0 tag 0")));
    s
}

/// At most this many pass-through levels under a fat tree.
pub const MAX_NI_LEVELS: u32 = 4;

/// The network a SimGrid platform gives a kit platform.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Network {
    /// The CM-5's 4-ary fat tree; `step_us` is the kit's round-trip step
    /// from node 1 to node 4 (one more level), if the machine has node 4.
    FatTree {
        /// Round trip to node 4 minus round trip to node 1.
        step_us: Option<f64>,
    },
    /// One switch, every node one link from it (SP, FLASH).
    Star,
}

impl Network {
    /// The network of a platform, with the fat tree's step measured on it.
    pub fn of(p: &dyn Platform) -> Result<Network, Error> {
        if !p.name().starts_with("cm5") {
            return Ok(Network::Star);
        }
        let step_us = if p.nodes() > 4 {
            Some(suite::round_trip(p, 4)? - suite::round_trip(p, 1)?)
        } else {
            None
        };
        Ok(Network::FatTree { step_us })
    }
}

/// The SimGrid platform chosen for a kit platform (see the module docs).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimGridPlan {
    /// Hosts in the platform (the nodes, and a fat tree's missing leaves).
    pub hosts: u32,
    /// Latency of every link, microseconds.
    pub link_latency_us: f64,
    /// Bandwidth of every link, bytes per second.
    pub bandwidth_bytes_s: f64,
    /// A fat tree's `topo_parameters`; `None` for a star.
    pub fat_tree: Option<String>,
    /// Pass-through levels under a fat tree (see the module docs).
    pub ni_levels: u32,
    /// Where the choice had to depart from the mapping.
    pub notes: Vec<String>,
}

/// The incomplete 4-ary fat tree for `nodes`: (levels' child counts,
/// parent counts).
fn cm5_tree(nodes: u32) -> (Vec<u32>, Vec<u32>) {
    let mut levels = 1;
    while 4u64.pow(levels) < nodes as u64 {
        levels += 1;
    }
    let below = 4u32.pow(levels - 1);
    let mut down = vec![4; levels as usize - 1];
    down.push(nodes.div_ceil(below));
    // A node has one parent; routers of the first two levels have 2, the
    // others 4 (the last level has none: it is the tree's top).
    let up = (0..levels)
        .map(|i| match i {
            0 => 1,
            1 | 2 => 2,
            _ => 4,
        })
        .collect();
    (down, up)
}

impl SimGridPlan {
    /// The plan for a platform's figures and network.
    pub fn new(l: &LogP, nodes: u32, net: Network) -> Result<SimGridPlan, Error> {
        check_nodes(nodes)?;
        check_figures(l)?;
        let s = SMALL_BYTES as f64;
        let b = l.bulk.bandwidth_mb_s * 1e6;
        let one_way = l.round_trip_us / 2.0 - overheads_per_round_trip(l) / 2.0;
        if one_way <= 0.0 {
            return Err(Error::Export(format!(
                "{}: the overheads ({:.3} us) fill the whole round trip ({:.3} us); no network time is left to export",
                l.platform,
                overheads_per_round_trip(l),
                l.round_trip_us
            )));
        }
        let mut notes = Vec::new();
        let (mut x, mut bw) = (one_way - s / b * 1e6, b);
        if x < 0.0 {
            bw = s / one_way * 1e6;
            x = 0.0;
            notes.push(format!(
                "a 16-byte message at the bulk bandwidth takes longer than the kit's one-way time: links have no latency and {:.0} B/s, so bulk transfers here are slower than the kit's {:.0} B/s",
                bw, b
            ));
        }
        Ok(match net {
            Network::Star => SimGridPlan {
                hosts: nodes,
                link_latency_us: x / 2.0,
                bandwidth_bytes_s: bw,
                fat_tree: None,
                ni_levels: 0,
                notes,
            },
            Network::FatTree { step_us } => {
                // A level adds two links each way: a link is a quarter step.
                let link = step_us.map(|st| st / 4.0).filter(|r| *r > 0.0);
                let mut k = match link {
                    Some(r) => ((x / (2.0 * r)).round() as u32).saturating_sub(1),
                    None => 0,
                };
                if k > MAX_NI_LEVELS {
                    notes.push(format!(
                        "the fixed latency is {k} steps' worth: {MAX_NI_LEVELS} pass-through levels carry it, so the steps are larger than the kit's"
                    ));
                    k = MAX_NI_LEVELS;
                }
                let (down, up) = cm5_tree(nodes);
                let hosts = down.iter().product::<u32>();
                if hosts != nodes {
                    notes.push(format!(
                        "{nodes} nodes do not fill the fat tree: hosts {nodes} to {} are its empty leaves",
                        hosts - 1
                    ));
                }
                let join = |v: Vec<u32>| {
                    v.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                let pad = |v: &[u32]| {
                    std::iter::repeat_n(1, k as usize)
                        .chain(v.iter().copied())
                        .collect::<Vec<u32>>()
                };
                let levels = down.len() as u32 + k;
                let topo = format!(
                    "{levels};{};{};{}",
                    join(pad(&down)),
                    join(pad(&up)),
                    join(vec![1; levels as usize])
                );
                SimGridPlan {
                    hosts,
                    link_latency_us: x / (2.0 * (1 + k) as f64),
                    bandwidth_bytes_s: bw,
                    fat_tree: Some(topo),
                    ni_levels: k,
                    notes,
                }
            }
        })
    }

    /// Latency of the route between two nodes whose common ancestor is at
    /// `level` of the fat tree (1: the same first-level router; a star has
    /// one level), without the bytes' time.
    pub fn route_latency_us(&self, level: u32) -> f64 {
        2.0 * (level as f64 + self.ni_levels as f64) * self.link_latency_us
    }
}

/// The SimGrid export: `platform.xml`, `pingpong.py` and `smpi.cfg`.
pub fn simgrid(l: &LogP, nodes: u32, net: Network) -> Result<Vec<File>, Error> {
    let plan = SimGridPlan::new(l, nodes, net)?;
    Ok(vec![
        File {
            name: "platform.xml",
            text: platform_xml(l, nodes, &plan),
        },
        File {
            name: "pingpong.py",
            text: pingpong_py(l, nodes),
        },
        File {
            name: "smpi.cfg",
            text: smpi_cfg(l, nodes),
        },
    ])
}

fn platform_xml(l: &LogP, nodes: u32, plan: &SimGridPlan) -> String {
    let mut s = String::from(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n",
    );
    let _ = writeln!(
        s,
        "  <!-- flashkit's {} platform, {nodes} nodes: round trip {:.4} us, bulk {:.4} MB/s.",
        l.platform, l.round_trip_us, l.bulk.bandwidth_mb_s
    );
    match &plan.fat_tree {
        Some(_) => {
            let _ = writeln!(
                s,
                "       The 4-ary fat tree (first two router levels with 2 parents, higher ones 4),\n       under {} pass-through level(s) that carry the fixed part of the latency\n       (each node's network interface).",
                plan.ni_levels
            );
        }
        None => s.push_str("       One switch, each node one full-duplex link to it.\n"),
    }
    s.push_str(
        "       Host speed 1 Gflop/s: the overheads are host computation (see pingpong.py). -->\n",
    );
    for n in &plan.notes {
        // "--" may not appear inside an XML comment.
        let _ = writeln!(s, "  <!-- {} -->", n.replace("--", "-"));
    }
    s.push_str(
        "  <config>\n    <prop id=\"network/model\" value=\"CM02\"/>\n    <prop id=\"network/crosstraffic\" value=\"0\"/>\n  </config>\n",
    );
    let topo = match &plan.fat_tree {
        Some(t) => format!(" topology=\"FAT_TREE\" topo_parameters=\"{t}\""),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "  <cluster id=\"{}\" prefix=\"node-\" radical=\"0-{}\" suffix=\"\" speed=\"1Gf\"\n           bw=\"{:.3}Bps\" lat=\"{:.6}us\" sharing_policy=\"SPLITDUPLEX\"{topo}/>",
        l.platform,
        plan.hosts - 1,
        plan.bandwidth_bytes_s,
        plan.link_latency_us
    );
    s.push_str("</platform>\n");
    s
}

fn pingpong_py(l: &LogP, nodes: u32) -> String {
    let sec = |us: f64| format!("{:.6e}", us * 1e-6);
    format!(
        r#"#!/usr/bin/env python3
"""An S4U ping-pong on flashkit's {platform} platform ({nodes} nodes), for Debian's
python3-simgrid (3.32): python3 pingpong.py platform.xml [DEST] [--cfg=...]

Node 0 sends a {bytes}-byte request to node DEST (default 1), whose handler
replies; {rounds} round trips. The kit's measured overheads are host
computation: the request's send and the reply's receive on node 0, the
request's receive and the reply's send on DEST. Prints round_trip_us X.
Written by flashkit logp --export simgrid.
"""
import sys

from simgrid import Actor, Engine, Mailbox, this_actor

SEND_OVERHEAD_S = {send}
REPLY_OVERHEAD_S = {reply}
RECV_OVERHEAD_S = {recv}
MESSAGE_BYTES = {bytes}
ROUNDS = {rounds}
NODES = {nodes}


def busy(seconds):
    this_actor.execute(seconds * this_actor.get_host().speed)


def ping(result):
    request, reply = Mailbox.by_name("request"), Mailbox.by_name("reply")
    start = Engine.clock
    for i in range(ROUNDS):
        busy(SEND_OVERHEAD_S)
        request.put(i, MESSAGE_BYTES)
        reply.get()
        busy(RECV_OVERHEAD_S)
    result.append((Engine.clock - start) / ROUNDS)


def pong():
    request, reply = Mailbox.by_name("request"), Mailbox.by_name("reply")
    for _ in range(ROUNDS):
        i = request.get()
        busy(RECV_OVERHEAD_S)
        busy(REPLY_OVERHEAD_S)
        reply.put(i, MESSAGE_BYTES)


def main():
    engine = Engine(sys.argv)
    operands = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(operands) not in (1, 2) or (len(operands) == 2 and not operands[1].isdigit()):
        sys.exit("usage: python3 pingpong.py platform.xml [DEST] [--cfg=...]")
    engine.load_platform(operands[0])
    hosts = {{h.name: h for h in engine.all_hosts}}
    dest = int(operands[1]) if len(operands) == 2 else 1
    if dest == 0 or dest >= NODES or f"node-{{dest}}" not in hosts:
        # A host past the machine's nodes is an empty leaf of the fat tree.
        sys.exit(f"no node {{dest}} to ping from node 0 in {{operands[0]}} (the machine's nodes are 0 to {{NODES - 1}})")
    result = []
    Actor.create("ping", hosts["node-0"], ping, result)
    Actor.create("pong", hosts[f"node-{{dest}}"], pong)
    engine.run()
    print(f"round_trip_us {{result[0] * 1e6:.4f}}")


if __name__ == "__main__":
    main()
"#,
        platform = l.platform,
        bytes = SMALL_BYTES,
        rounds = PINGPONG_ROUNDS,
        send = sec(l.send_overhead_us),
        reply = sec(l.reply_overhead_us),
        recv = sec(l.recv_overhead_us),
    )
}

fn smpi_cfg(l: &LogP, nodes: u32) -> String {
    let sec = |us: f64| format!("{:.6e}", us * 1e-6);
    format!(
        "# SMPI settings for flashkit's {} platform ({nodes} nodes): the kit's send and\n\
         # receive overheads, and SMPI's latency and bandwidth factors set to 1 so that\n\
         # platform.xml's links are taken as they are. Use:\n\
         #   smpirun -platform platform.xml -hostfile HOSTS $(grep -v '^#' smpi.cfg) ./app\n\
         --cfg=smpi/os:0:{send}:0\n--cfg=smpi/ois:0:{send}:0\n--cfg=smpi/or:0:{recv}:0\n\
         --cfg=smpi/lat-factor:0:1\n--cfg=smpi/bw-factor:0:1\n",
        l.platform,
        send = sec(l.send_overhead_us),
        recv = sec(l.recv_overhead_us),
    )
}

/// The overheads of one round trip: a request send, a reply send, two
/// receives.
fn overheads_per_round_trip(l: &LogP) -> f64 {
    l.send_overhead_us + l.reply_overhead_us + 2.0 * l.recv_overhead_us
}

/// An export is for 2 to [`MAX_NODES`] nodes.
fn check_nodes(nodes: u32) -> Result<(), Error> {
    crate::error::check("nodes", nodes, 2, MAX_NODES)
}

/// Figures an export can use: finite, overheads not negative, a round trip
/// and a bandwidth above zero.
fn check_figures(l: &LogP) -> Result<(), Error> {
    let all = [
        l.send_overhead_us,
        l.reply_overhead_us,
        l.recv_overhead_us,
        l.round_trip_us,
        l.bulk.bandwidth_mb_s,
    ];
    if all.iter().any(|x| !x.is_finite() || *x < 0.0)
        || l.round_trip_us <= 0.0
        || l.bulk.bandwidth_mb_s <= 0.0
    {
        return Err(Error::Export(format!(
            "{}: the measured figures cannot be exported (round trip {} us, bulk {} MB/s, overheads {} / {} / {} us)",
            l.platform,
            l.round_trip_us,
            l.bulk.bandwidth_mb_s,
            l.send_overhead_us,
            l.reply_overhead_us,
            l.recv_overhead_us
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::am::suite::Bulk;

    #[test]
    fn a_route_of_any_level_has_a_latency() {
        let l = figures(10.0, 100.0);
        let p = SimGridPlan::new(
            &l,
            1024,
            Network::FatTree {
                step_us: Some(0.25),
            },
        )
        .unwrap();
        let far = p.route_latency_us(u32::MAX);
        assert!(far.is_finite() && far > p.route_latency_us(1), "{far}");
    }

    fn figures(rt: f64, bw: f64) -> LogP {
        LogP {
            platform: "test".into(),
            counts: Default::default(),
            send_overhead_us: 1.5,
            reply_overhead_us: 1.25,
            recv_overhead_us: 1.75,
            poll_empty_us: 0.5,
            poll_one_us: 1.0,
            round_trip_us: rt,
            ring_us: 4.0,
            bulk: Bulk {
                startup_us: 2.0,
                bandwidth_mb_s: bw,
                n_half_bytes: 2.0 * bw,
            },
        }
    }

    #[test]
    fn loggp_reproduces_the_round_trip_and_the_bandwidth() {
        let l = figures(12.0, 8.0);
        let p = LogGp::from_logp(&l).unwrap();
        assert!((p.round_trip_us(SMALL_BYTES) - 12.0).abs() < 1e-12);
        assert!((p.gap_per_byte_us - 1.0 / 8.0).abs() < 1e-15);
        // o is the mean of the round trip's four overheads.
        assert!((p.overhead_us - (1.5 + 1.25 + 2.0 * 1.75) / 4.0).abs() < 1e-12);
        // L = 6 - 2o - 15/8.
        assert!((p.latency_us - (6.0 - 3.125 - 1.875)).abs() < 1e-12);
        assert!(p.notes.is_empty());
    }

    #[test]
    fn a_negative_latency_is_taken_from_the_overhead() {
        // 15 G = 3.75 us and 2o = 3.125: more than the half round trip.
        let l = figures(12.0, 4.0);
        let p = LogGp::from_logp(&l).unwrap();
        assert_eq!(p.latency_us, 0.0);
        assert!((p.overhead_us - 1.125).abs() < 1e-12);
        assert!((p.round_trip_us(SMALL_BYTES) - 12.0).abs() < 1e-12);
        assert_eq!(p.notes.len(), 1);
        // 15 G = 7.5 us: no o can help; said.
        let p = LogGp::from_logp(&figures(12.0, 2.0)).unwrap();
        assert_eq!((p.latency_us, p.overhead_us), (0.0, 0.0));
        assert!(
            p.notes[0].contains("longer than the kit's"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn flags_are_picoseconds_unless_too_large() {
        let p = LogGp::from_logp(&figures(12.0, 8.0)).unwrap();
        let f = p.flags().unwrap();
        assert_eq!(f.unit(), "1e-12");
        assert_eq!(f.g_byte, 125_000);
        assert_eq!(f.l, 1_000_000);
        assert_eq!(
            f.line(),
            "-L 1000000 -o 1562500 -g 1750000 -G 125000 -O 0 -S 2147483647"
        );
        // A 5 ms latency overflows an int in picoseconds: nanoseconds then.
        let p = LogGp::from_logp(&figures(10_000.0, 8.0)).unwrap();
        let f = p.flags().unwrap();
        assert_eq!(f.unit_exp, -11);
        assert!(f.l <= i32::MAX as i64 && f.l > i32::MAX as i64 / 10);
    }

    #[test]
    fn bad_figures_are_refused() {
        assert!(LogGp::from_logp(&figures(f64::NAN, 8.0)).is_err());
        assert!(LogGp::from_logp(&figures(12.0, 0.0)).is_err());
        assert!(SimGridPlan::new(&figures(5.0, 8.0), 16, Network::Star).is_err());
    }

    #[test]
    fn goal_schedules_pair_every_send_with_a_receive() {
        let l = figures(12.0, 8.0);
        for f in loggopsim(&l, 5).unwrap() {
            if !f.name.ends_with(".goal") {
                continue;
            }
            let sends = f.text.matches(": send ").count();
            let recvs = f.text.matches(": recv ").count();
            assert_eq!(sends, recvs, "{}", f.name);
            let want = match f.name {
                "pingpong.goal" => 2 * PINGPONG_ROUNDS,
                "ring.goal" => 5 * RING_MESSAGES,
                _ => BULK_BLOCKS,
            };
            assert_eq!(sends as u32, want, "{}", f.name);
        }
    }

    #[test]
    fn platform_comments_hold_no_double_hyphen() {
        // XML forbids "--" inside a comment; notes are the risk.
        let l = figures(12.0, 2.0);
        let files = simgrid(&l, 10, Network::FatTree { step_us: None }).unwrap();
        let xml = &files[0].text;
        assert!(
            xml.contains("empty leaves") && xml.contains("slower"),
            "{xml}"
        );
        for c in xml.split("<!--").skip(1) {
            let inner = c.split("-->").next().unwrap();
            assert!(!inner.contains("--"), "{inner}");
        }
    }

    #[test]
    fn the_cm5_tree_is_incomplete_above_the_first_level() {
        assert_eq!(cm5_tree(4), (vec![4], vec![1]));
        assert_eq!(cm5_tree(16), (vec![4, 4], vec![1, 2]));
        assert_eq!(cm5_tree(64), (vec![4, 4, 4], vec![1, 2, 2]));
        assert_eq!(cm5_tree(1024), (vec![4, 4, 4, 4, 4], vec![1, 2, 2, 4, 4]));
        assert_eq!(cm5_tree(32), (vec![4, 4, 2], vec![1, 2, 2]));
        // 10 nodes: a 4 x 3 tree with two empty leaves.
        assert_eq!(cm5_tree(10), (vec![4, 3], vec![1, 2]));
    }

    #[test]
    fn simgrid_routes_give_the_round_trip_and_the_steps() {
        let l = figures(12.0, 8.0);
        let one_way = (12.0 - (1.5 + 1.25 + 3.5)) / 2.0 - 16.0 / 8.0;
        // A star: two links.
        let p = SimGridPlan::new(&l, 16, Network::Star).unwrap();
        assert!((p.route_latency_us(1) - one_way).abs() < 1e-12);
        assert_eq!(p.bandwidth_bytes_s, 8e6);
        // A fat tree whose round trip steps 0.9 us per level (a link 0.225):
        // the 0.875 us route to node 1 is about two links each way too
        // many, so one pass-through level, and the steps stay near 0.9.
        let tree = |step| Network::FatTree {
            step_us: Some(step),
        };
        let p = SimGridPlan::new(&l, 64, tree(0.9)).unwrap();
        assert!((p.route_latency_us(1) - one_way).abs() < 1e-12);
        let step = 2.0 * (p.route_latency_us(2) - p.route_latency_us(1));
        assert!((step - 0.875).abs() < 1e-12, "{step}");
        assert_eq!(p.fat_tree.as_deref(), Some("4;1,4,4,4;1,1,2,2;1,1,1,1"));
        assert_eq!(p.hosts, 64);
        // A tiny step would need many levels: capped, and said.
        let p = SimGridPlan::new(&l, 64, tree(0.01)).unwrap();
        assert_eq!((p.ni_levels, p.notes.len()), (MAX_NI_LEVELS, 1));
        assert!((p.route_latency_us(1) - one_way).abs() < 1e-12);
        // Without a measured step: no pass-through levels.
        let p = SimGridPlan::new(&l, 4, Network::FatTree { step_us: None }).unwrap();
        assert_eq!((p.ni_levels, p.fat_tree.as_deref()), (0, Some("1;4;1;1")));
    }
}
