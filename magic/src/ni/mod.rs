//! The comparison platforms' network interfaces: plain hardware (FIFOs,
//! status registers, networks) that software on the compute processor drives.

pub mod cm5;
pub mod sp;

use crate::controller::Controller;
use crate::error::{NoNode, OutOfRange, PostError};
use crate::ids::{Lane, Msg, NodeId};
use crate::ledger::Ledger;
use crate::machine::RunReport;
use crate::time::Time;

/// The CM-5's networks behind the common controller interface: a posted
/// message is a packet the node's NI offers (requests on the left network,
/// replies on the right; its three argument words and the message type
/// travel as the packet's words); what reaches a node's receive FIFO is
/// delivered. A packet the full network refuses is counted in `stats`.
pub struct Cm5Machine {
    /// The NIs and the networks.
    pub net: cm5::Cm5Network,
    now: Time,
}

impl Cm5Machine {
    /// A CM-5 of `nodes` nodes with these hardware parameters; an error
    /// naming the parameter out of range, or `nodes` if not from 2 to
    /// [`cm5::MAX_NODES`].
    pub fn new(params: cm5::Cm5Params, nodes: u32) -> Result<Cm5Machine, OutOfRange> {
        Ok(Cm5Machine {
            net: cm5::Cm5Network::new(params, nodes)?,
            now: Time::ZERO,
        })
    }
}

fn packet_words(m: &Msg) -> [u32; cm5::PACKET_WORDS] {
    [
        m.mtype.0 as u32,
        m.words[0] as u32,
        m.words[1] as u32,
        m.words[2] as u32,
        m.src.0,
    ]
}

fn check_post(now: Time, at: Time, nodes: u32, node: NodeId, msg: &Msg) -> Result<(), PostError> {
    if at < now {
        return Err(PostError::Past { at, now });
    }
    for node in [node, msg.dest] {
        if node.0 >= nodes {
            return Err(PostError::NoNode { node, nodes });
        }
    }
    Ok(())
}

/// A passive network runs by letting everything on its way arrive (within
/// the limit): the clock moves to the last arrival.
fn arrive(now: &mut Time, last: Option<Time>, limit: Option<Time>) -> RunReport {
    let end = match (last, limit) {
        (Some(a), Some(l)) => a.min(l),
        (Some(a), None) => a,
        (None, _) => *now,
    };
    *now = (*now).max(end);
    RunReport {
        end: now.to_cycles_floor(),
        engine_events: 0,
        limit_reached: limit.is_some_and(|l| last.is_some_and(|a| a > l)),
        halted: None,
        stuck: Vec::new(),
        // A packet the network refused is the sender's to retry: counted in
        // the network's statistics, not a loss of the run.
        refused: Vec::new(),
    }
}

fn quiet_ledger(now: Time, nodes: u32) -> Ledger {
    Ledger {
        elapsed: now.to_cycles_floor(),
        nodes,
        handlers: Vec::new(),
        units: Vec::new(),
    }
}

impl Controller for Cm5Machine {
    fn name(&self) -> &'static str {
        "cm5"
    }

    fn node_count(&self) -> u32 {
        self.net.nodes()
    }

    fn now(&self) -> Time {
        self.now
    }

    fn post(&mut self, node: NodeId, at: Time, msg: Msg) -> Result<(), PostError> {
        check_post(self.now, at, self.net.nodes(), node, &msg)?;
        let net = match msg.lane {
            Lane::Request => cm5::Net::Left,
            Lane::Reply => cm5::Net::Right,
        };
        let mut m = msg;
        m.src = node;
        // A refusal is the network's state (counted), not bad input.
        let _ = self.net.inject(at, node, msg.dest, net, packet_words(&m));
        self.now = at;
        Ok(())
    }

    fn run(&mut self, limit: Option<Time>) -> RunReport {
        let last = (0..self.net.nodes())
            .filter_map(|n| self.net.last_arrival(NodeId(n)))
            .max();
        arrive(&mut self.now, last, limit)
    }

    fn take_delivered(&mut self, node: NodeId) -> Result<Vec<(Time, Msg)>, NoNode> {
        let nodes = self.net.nodes();
        if node.0 >= nodes {
            return Err(NoNode { node, nodes });
        }
        let mut out = Vec::new();
        for net in [cm5::Net::Right, cm5::Net::Left] {
            while let Some(p) = self.net.receive(node, net, self.now) {
                let w = p.words;
                let m = Msg::new(crate::ids::MsgType(w[0] as u8), p.src, node)
                    .lane(if net == cm5::Net::Left {
                        Lane::Request
                    } else {
                        Lane::Reply
                    })
                    .words([w[1] as u64, w[2] as u64, w[3] as u64]);
                out.push((p.arrives, m));
            }
        }
        out.sort_by_key(|x| x.0);
        Ok(out)
    }

    fn ledger(&self) -> Ledger {
        quiet_ledger(self.now, self.net.nodes())
    }
}

/// The SP's adapters and switch behind the common controller interface: a
/// posted message is a packet the host hands its adapter (its length is the
/// message's payload); what reaches a node's receive FIFO is delivered.
pub struct SpMachine {
    /// The adapters and the switch, carrying the posted messages.
    pub switch: sp::SpSwitch<Msg>,
    nodes: u32,
    now: Time,
}

impl SpMachine {
    /// An SP of `nodes` nodes with these hardware parameters; an error
    /// naming the parameter out of range, or `nodes` if not from 2 to
    /// [`cm5::MAX_NODES`].
    pub fn new(params: sp::SpParams, nodes: u32) -> Result<SpMachine, OutOfRange> {
        Ok(SpMachine {
            switch: sp::SpSwitch::new(params, nodes)?,
            nodes,
            now: Time::ZERO,
        })
    }
}

impl Controller for SpMachine {
    fn name(&self) -> &'static str {
        "sp"
    }

    fn node_count(&self) -> u32 {
        self.nodes
    }

    fn now(&self) -> Time {
        self.now
    }

    fn post(&mut self, node: NodeId, at: Time, msg: Msg) -> Result<(), PostError> {
        check_post(self.now, at, self.nodes, node, &msg)?;
        let mut m = msg;
        m.src = node;
        self.switch.send(at, node, msg.dest, msg.len as u64, m);
        self.now = at;
        Ok(())
    }

    fn run(&mut self, limit: Option<Time>) -> RunReport {
        let last = (0..self.nodes)
            .filter_map(|n| self.switch.last_arrival(NodeId(n)))
            .max();
        arrive(&mut self.now, last, limit)
    }

    fn take_delivered(&mut self, node: NodeId) -> Result<Vec<(Time, Msg)>, NoNode> {
        if node.0 >= self.nodes {
            let nodes = self.nodes;
            return Err(NoNode { node, nodes });
        }
        let mut out = Vec::new();
        while let Some(p) = self.switch.receive(node, self.now) {
            out.push((p.arrives, p.body));
        }
        Ok(out)
    }

    fn ledger(&self) -> Ledger {
        quiet_ledger(self.now, self.nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::MsgType;

    #[test]
    fn the_comparison_nis_stand_behind_the_controller_trait() {
        let mut cs: Vec<Box<dyn Controller>> = vec![
            Box::new(Cm5Machine::new(cm5::Cm5Params::default(), 8).unwrap()),
            Box::new(SpMachine::new(sp::SpParams::default(), 8).unwrap()),
        ];
        for c in &mut cs {
            let m = Msg::new(MsgType(5), NodeId(0), NodeId(7)).words([1, 2, 3]);
            c.post(NodeId(0), Time(1000), m).unwrap();
            assert!(c.post(NodeId(0), Time(10), m).is_err(), "the past");
            assert!(c.post(NodeId(9), Time(2000), m).is_err(), "no node 9");
            assert!(c.run(None).is_clean());
            let got = c.take_delivered(NodeId(7)).unwrap();
            assert_eq!(got.len(), 1, "{}", c.name());
            assert_eq!(
                (got[0].1.mtype, got[0].1.words, got[0].1.src),
                (MsgType(5), [1, 2, 3], NodeId(0))
            );
            assert!(got[0].0 > Time(1000));
            assert!(c.take_delivered(NodeId(7)).unwrap().is_empty());
            assert_eq!(
                c.take_delivered(NodeId(8)).unwrap_err().to_string(),
                "no node 8 (the machine has 8)"
            );
        }
    }

    #[test]
    fn the_platforms_hardware_losses_are_counted_but_leave_the_run_clean() {
        // The CM-5 NI refuses a sender's packets beyond what the network
        // holds for it: the sender's to retry, counted by the network.
        let p = cm5::Cm5Params {
            capacity: 1,
            ..cm5::Cm5Params::default()
        };
        let mut c = Cm5Machine::new(p, 4).unwrap();
        let m = Msg::new(MsgType(5), NodeId(0), NodeId(3));
        for _ in 0..3 {
            c.post(NodeId(0), Time(1000), m).unwrap();
        }
        assert_eq!(c.net.stats.dropped, 2);
        let r = c.run(None);
        assert!(r.is_clean() && r.refused.is_empty(), "{r:?}");
        // The SP switch's fault injector drops packets SP AM sends again.
        let sp = sp::SpParams {
            drop_ppm: 1_000_000,
            ..sp::SpParams::default()
        };
        let mut s = SpMachine::new(sp, 4).unwrap();
        s.post(NodeId(0), Time(1000), m).unwrap();
        assert_eq!(s.switch.stats.dropped, 1);
        assert!(s.run(None).is_clean());
    }

    #[test]
    fn the_platforms_parameters_read_from_tables_and_are_checked() {
        let c: cm5::Cm5Params = toml::from_str("capacity = 4\nrouter_delay = 100").unwrap();
        assert_eq!((c.capacity, c.router_delay), (4, Time(100)));
        assert_eq!(c.ni_read, cm5::Cm5Params::default().ni_read);
        let e = toml::from_str::<cm5::Cm5Params>("capacty = 4")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field `capacty`") && e.contains("`capacity`"),
            "{e}"
        );
        let s: sp::SpParams = toml::from_str("drop_ppm = 10").unwrap();
        assert_eq!(s.drop_ppm, 10);
        assert!(toml::from_str::<sp::SpParams>("drop = 10").is_err());
        for (c, s) in [(cm5::Cm5Params::default(), sp::SpParams::default()), (c, s)] {
            let back: cm5::Cm5Params = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
            assert_eq!(back, c);
            let back: sp::SpParams = toml::from_str(&toml::to_string(&s).unwrap()).unwrap();
            assert_eq!(back, s);
        }

        let bad = cm5::Cm5Params {
            fixed_latency: Time(u64::MAX),
            ..cm5::Cm5Params::default()
        };
        let e = Cm5Machine::new(bad, 4).err().unwrap();
        assert_eq!(e.field, "fixed_latency");
        assert_eq!(
            e.to_string(),
            "fixed_latency must be from 0 to 264000000 ticks (10 ms), got 18446744073709551615"
        );
        let e = Cm5Machine::new(cm5::Cm5Params::default(), 1).err().unwrap();
        assert_eq!(e.to_string(), "nodes must be from 2 to 65536, got 1");
        let bad = sp::SpParams {
            mc_bytes_per_us: 0,
            ..sp::SpParams::default()
        };
        assert_eq!(
            SpMachine::new(bad, 4).err().unwrap().field,
            "mc_bytes_per_us"
        );
        assert_eq!(
            SpMachine::new(sp::SpParams::default(), u32::MAX)
                .err()
                .unwrap()
                .field,
            "nodes"
        );
    }

    #[test]
    fn the_comparison_networks_take_any_time_and_any_node_without_panicking() {
        let mut c = cm5::Cm5Network::new(cm5::Cm5Params::default(), 4).unwrap();
        let end = Time(u64::MAX);
        assert!(c.inject(end, NodeId(0), NodeId(1), cm5::Net::Left, [0; 5]));
        assert!(!c.inject(end, NodeId(9), NodeId(1), cm5::Net::Left, [0; 5]));
        assert_eq!(c.last_arrival(NodeId(1)), Some(end));
        assert_eq!(c.last_arrival(NodeId(9)), None);
        assert!(!c.ready(NodeId(9), cm5::Net::Left, end));
        assert!(c.receive(NodeId(1), cm5::Net::Left, end).is_some());
        let mut s: sp::SpSwitch<u8> = sp::SpSwitch::new(sp::SpParams::default(), 2).unwrap();
        s.send(end, NodeId(0), NodeId(1), u64::MAX, 1);
        s.send(end, NodeId(0), NodeId(7), 0, 2);
        assert_eq!(s.next_arrival(NodeId(1)), Some(end));
        assert!(s.receive(NodeId(7), end).is_none());
        assert_eq!(s.receive(NodeId(1), end).map(|p| p.body), Some(1));
        // Behind the controller interface, a run to the end of time.
        let mut m = SpMachine::new(sp::SpParams::default(), 2).unwrap();
        let msg = Msg::new(MsgType(1), NodeId(0), NodeId(1));
        m.post(NodeId(0), Time(u64::MAX - 5), msg).unwrap();
        assert!(m.run(Some(end)).is_clean());
    }
}
