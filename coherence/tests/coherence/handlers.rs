//! Single handlers on the test bench: a quiet machine running only the
//! coherence protocol, one message in; out come the handler's ledger line,
//! its steps and the messages it sent.
//!
//! Then one test per rule of the reference model of FLASH's protocol (the
//! Murphi model of "A Simple Method for Parameterized Verification of Cache
//! Coherence Protocols", FMCAD 2004; docs/coherence.md restates each rule
//! and maps it to its handler and test). Each drives a small machine into
//! the rule's situation with every delivery held (the exhaustive checker's
//! mechanism), releases the one message the rule fires on, and checks the
//! model's outcome: the handler that ran, the directory fields, the cache
//! states and the messages sent. Node 0 is the home of the line throughout;
//! the "local" rules are its own processor's.

use coherence::directory::{Acks, DirEntry, DirFormat, DirState};
use coherence::protocol::{self, CohNode, CohParams};
use coherence::{Access, CohMsg, Coherence};
use magic::testing::{Bench, Dest};
use magic::{LineState, Magic, MagicParams, NodeId, PAddr, Region, LINE_BYTES};

fn line(home: u32) -> PAddr {
    PAddr::new(Region::Normal, NodeId(home), 0x4000)
}

#[test]
fn the_home_answers_a_read_of_an_uncached_line_from_memory() {
    let mut bench = Bench::new(2, &Coherence::default()).unwrap();
    let get = bench.msg(NodeId(0), CohMsg::Get).addr(line(1));
    let shot = bench.inject(NodeId(1), get).unwrap();
    assert_eq!(shot.handler, "coherence.home_request");
    // decode 4, directory check 4, update 3, send 4 (two a cycle), and the
    // entry's load and store; the data cache is cold, so the load waits 41
    // cycles for memory, which is busy with the line's speculative read.
    let s = shot.stats;
    assert_eq!((s.instructions, s.loads, s.stores), (15, 1, 1));
    assert_eq!((s.busy, s.wait), (8 + 41, 41), "{shot}");
    let [put] = &shot.sent[..] else {
        panic!("{shot}")
    };
    assert_eq!((put.to, put.data), (Dest::Node(NodeId(0)), true));
    assert_eq!(bench.decode(&put.msg), Ok(CohMsg::Put { acks: 0 }));
    let e = bench.machine().state(NodeId(1)).unwrap().entry(line(1));
    assert_eq!(
        e.state(NodeId(1)),
        DirState::Shared(coherence::Sharers::one(NodeId(0)))
    );
}

#[test]
fn a_sharer_drops_its_copy_and_acknowledges_to_the_requester() {
    let mut bench = Bench::new(3, &Coherence::default()).unwrap();
    let copies = [(NodeId(1), LineState::Clean)];
    protocol::place(bench.machine(), line(2), &copies, [1; 128], [1; 128]).unwrap();
    let inval = CohMsg::Inval {
        collector: NodeId(0),
    };
    let m = bench.msg(NodeId(2), inval).addr(line(2));
    let shot = bench.inject(NodeId(1), m).unwrap();
    assert_eq!(shot.handler, "coherence.invalidate");
    let [ack] = &shot.sent[..] else {
        panic!("{shot}")
    };
    assert_eq!(
        (ack.to, ack.name.as_str()),
        (Dest::Node(NodeId(0)), "coherence CohMsg::InvAck")
    );
    let pc = bench.machine().pcache(NodeId(1)).unwrap().state(line(2));
    assert_eq!(pc, LineState::Uncached);
}

// ======================================================== the model's rules

const H: u32 = 0;
const A: u32 = 1;
const B: u32 = 2;
const C: u32 = 3;

fn the_line() -> PAddr {
    line(H)
}

/// What releasing one held message did.
#[derive(Debug)]
struct Fired {
    /// Handlers that ran, as `n<node> <handler>`.
    handlers: Vec<String>,
    /// Messages held after it that were not held before.
    sent: Vec<String>,
}

struct Rig {
    m: Magic<CohNode>,
}

impl Rig {
    fn new(nodes: u32) -> Rig {
        Rig::with(nodes, CohParams::default())
    }

    fn with(nodes: u32, coh: CohParams) -> Rig {
        let mut m = protocol::machine(MagicParams::default(), coh, nodes).unwrap();
        m.hold_deliveries();
        Rig { m }
    }

    /// Copies of the line at these nodes, memory holding `1`s and the
    /// caches `2`s (a dirty copy's bytes; a clean copy's equal memory's).
    fn place(&mut self, copies: &[(u32, LineState)]) {
        let c: Vec<_> = copies.iter().map(|&(n, s)| (NodeId(n), s)).collect();
        let dirty = copies.iter().any(|c| c.1 == LineState::Dirty);
        let cached = if dirty {
            [2; LINE_BYTES]
        } else {
            [1; LINE_BYTES]
        };
        protocol::place(&mut self.m, the_line(), &c, [1; LINE_BYTES], cached).unwrap();
    }

    fn set(&mut self, e: DirEntry) {
        self.m
            .state_mut(NodeId(H))
            .unwrap()
            .set_entry(the_line(), e);
    }

    fn entry(&self) -> DirEntry {
        self.m.state(NodeId(H)).unwrap().entry(the_line())
    }

    fn cache(&self, n: u32) -> LineState {
        self.m.pcache(NodeId(n)).unwrap().state(the_line())
    }

    fn memory(&self) -> [u8; LINE_BYTES] {
        self.m.memory(NodeId(H)).unwrap().line(the_line().line())
    }

    fn settle(&mut self) {
        while self.m.step().is_some() {}
    }

    /// Every held message, described.
    fn held(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0.. {
            let d = self.m.describe_delivery(i);
            if d.starts_with("no held message") {
                break;
            }
            out.push(d);
        }
        out
    }

    /// Node `n`'s processor issues `a`; its request to MAGIC is held.
    fn access(&mut self, n: u32, a: Access) {
        self.m.state_mut(NodeId(n)).unwrap().proc.push([a]);
        let now = self.m.now();
        self.m.start_processor(NodeId(n), now).unwrap();
        self.settle();
    }

    fn load(&mut self, n: u32) {
        self.access(n, Access::Load(the_line()));
    }

    fn store(&mut self, n: u32, v: u64) {
        self.access(n, Access::Store(the_line(), v));
    }

    fn evict(&mut self, n: u32) {
        self.access(n, Access::Evict(the_line()));
    }

    /// Release the first releasable held message whose description
    /// contains `what`, and run until the machine settles.
    fn fire(&mut self, what: &str) -> Fired {
        let before = self.held();
        let invoked = |m: &Magic<CohNode>| -> Vec<(u32, String, u64)> {
            m.ledger()
                .handlers
                .iter()
                .map(|h| (h.node.unwrap_or(0), h.handler.clone(), h.stats.invocations))
                .collect()
        };
        let was = invoked(&self.m);
        let Some(i) = self
            .m
            .deliveries()
            .into_iter()
            .find(|&i| self.m.describe_delivery(i).contains(what))
        else {
            panic!("nothing releasable matches {what:?}; held: {before:#?}");
        };
        let gone = self.m.describe_delivery(i);
        assert!(self.m.deliver(i));
        self.settle();
        let handlers = invoked(&self.m)
            .into_iter()
            .filter(|x| !was.iter().any(|w| w.0 == x.0 && w.1 == x.1 && w.2 == x.2))
            .map(|x| format!("n{} {}", x.0, x.1))
            .collect();
        let mut left = before;
        left.retain(|d| *d != gone);
        let mut sent = self.held();
        for d in &left {
            if let Some(p) = sent.iter().position(|x| x == d) {
                sent.remove(p);
            }
        }
        Fired { handlers, sent }
    }

    /// Release held messages matching `what`, one at a time, until none is.
    fn drain(&mut self, what: &str) {
        while self
            .m
            .deliveries()
            .into_iter()
            .any(|i| self.m.describe_delivery(i).contains(what))
        {
            self.fire(what);
        }
    }

    fn value(&self, n: u32) -> Option<u64> {
        self.m
            .state(NodeId(n))
            .unwrap()
            .proc
            .results
            .last()
            .and_then(|r| r.value)
    }
}

/// Does description `d` name network message `k` from `from` to `to`?
fn is_net(d: &str, from: u32, to: u32, k: &str) -> bool {
    d.starts_with(&format!("n{from} -> n{to} ")) && d.contains(&format!("CohMsg::{k} "))
}

/// The pattern [`Rig::fire`] looks for: a network message.
fn on_net(from: u32, to: u32, k: &str) -> String {
    format!("n{from} -> n{to} (")
        + if [
            "Put",
            "PutX",
            "UpgradeAck",
            "InvAck",
            "Nak",
            "NakClear",
            "SharingWriteback",
            "ForwardAck",
        ]
        .contains(&k)
        {
            "reply): coherence CohMsg::"
        } else {
            "request): coherence CohMsg::"
        }
        + k
        + " "
}

/// The pattern for processor `n`'s message `k` to its MAGIC.
fn from_pi(n: u32, k: &str) -> String {
    format!("n{n} processor -> MAGIC: coherence CohMsg::{k} ")
}

/// The pattern for MAGIC's message `k` to processor `n`.
fn to_pi(n: u32, k: &str) -> String {
    format!("n{n} MAGIC -> processor: coherence CohMsg::{k} ")
}

fn assert_sent(f: &Fired, want: &[(u32, u32, &str)]) {
    let got: Vec<_> = f.sent.iter().filter(|d| d.contains(" -> n")).collect();
    assert_eq!(got.len(), want.len(), "{f:#?}");
    for &(from, to, k) in want {
        assert!(
            got.iter().any(|d| is_net(d, from, to, k)),
            "no {k} {from}->{to}: {f:#?}"
        );
    }
}

fn ran(f: &Fired, node: u32, handler: &str) {
    let h = format!("n{node} coherence.{handler}");
    assert!(f.handlers.contains(&h), "{h} did not run: {f:#?}");
}

// ------------------------------------------------------------ processor side

#[test]
fn store() {
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Dirty)]);
    r.store(A, 7);
    assert!(
        r.held().is_empty(),
        "a store to an exclusive copy sends nothing"
    );
    assert_eq!(r.cache(A), LineState::Dirty);
    assert!(r.m.state(NodeId(A)).unwrap().proc.results[0].hit);
    assert_eq!(r.entry(), DirEntry::remote_owner(NodeId(A)));
}

#[test]
fn pi_remote_get() {
    let mut r = Rig::new(2);
    r.load(A);
    let f = r.fire(&from_pi(A, "PiGet"));
    ran(&f, A, "pi_miss");
    assert_sent(&f, &[(A, H, "Get")]);
    assert_eq!(r.entry(), DirEntry::uncached());
}

#[test]
fn pi_local_get_get() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(H);
    let f = r.fire(&from_pi(H, "PiGet"));
    ran(&f, H, "pi_miss");
    assert_sent(&f, &[(H, B, "FwdGet")]);
    assert!(r.entry().pending && r.entry().dirty && !r.entry().local);
}

#[test]
fn pi_local_get_put() {
    let mut r = Rig::new(2);
    r.load(H);
    let f = r.fire(&from_pi(H, "PiGet"));
    ran(&f, H, "pi_miss");
    assert_sent(&f, &[]);
    assert!(
        f.sent.iter().any(|d| d.contains(&to_pi(H, "Fill"))),
        "{f:#?}"
    );
    assert_eq!(r.entry(), DirEntry::shared(true, &[]));
    r.fire(&to_pi(H, "Fill"));
    assert_eq!(r.cache(H), LineState::Clean);
}

#[test]
fn pi_remote_getx() {
    let mut r = Rig::new(2);
    r.store(A, 5);
    let f = r.fire(&from_pi(A, "PiGetX"));
    ran(&f, A, "pi_miss");
    assert_sent(&f, &[(A, H, "GetX")]);
}

#[test]
fn pi_local_getx_getx() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(H, 5);
    let f = r.fire(&from_pi(H, "PiGetX"));
    ran(&f, H, "pi_miss");
    assert_sent(&f, &[(H, B, "FwdGetX")]);
    assert!(r.entry().pending);
}

#[test]
fn pi_local_getx_putx() {
    // Remote sharers: invalidated, the home collecting, its processor
    // exclusive at once.
    let mut r = Rig::new(3);
    r.place(&[(A, LineState::Clean), (B, LineState::Clean)]);
    r.store(H, 5);
    let f = r.fire(&from_pi(H, "PiGetX"));
    ran(&f, H, "pi_miss");
    assert_sent(&f, &[(H, A, "Inval"), (H, B, "Inval")]);
    let e = r.entry();
    assert!(e.pending && e.local && e.dirty && e.head.is_none() && !e.shr_vld);
    assert_eq!(e.inv.len(), 2);
    r.fire(&to_pi(H, "Fill"));
    assert_eq!(r.cache(H), LineState::Dirty);
    // No sharer: nothing to collect.
    let mut r = Rig::new(2);
    r.store(H, 5);
    let f = r.fire(&from_pi(H, "PiGetX"));
    assert_sent(&f, &[]);
    assert_eq!(r.entry(), DirEntry::local_owner());
}

#[test]
fn pi_remote_putx() {
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Dirty)]);
    r.evict(A);
    assert_eq!(r.cache(A), LineState::Uncached);
    let f = r.fire(&from_pi(A, "PiWriteback"));
    ran(&f, A, "pi_writeback");
    assert_sent(&f, &[(A, H, "Writeback")]);
}

#[test]
fn pi_local_putx() {
    let mut r = Rig::new(2);
    r.place(&[(H, LineState::Dirty)]);
    r.evict(H);
    let f = r.fire(&from_pi(H, "PiWriteback"));
    ran(&f, H, "pi_writeback");
    assert_sent(&f, &[]);
    assert_eq!(r.entry(), DirEntry::uncached());
    assert_eq!(r.memory(), [2; LINE_BYTES]);
    // While acknowledgements are collected, Local stays until the last.
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Clean)]);
    r.store(H, 5);
    r.fire(&from_pi(H, "PiGetX"));
    r.fire(&to_pi(H, "Fill"));
    r.evict(H);
    r.fire(&from_pi(H, "PiWriteback"));
    let e = r.entry();
    assert!(e.pending && e.local && !e.dirty, "{e:?}");
    r.fire(&on_net(H, A, "Inval"));
    r.fire(&on_net(A, H, "InvAck"));
    assert_eq!(r.entry(), DirEntry::uncached());
}

#[test]
fn pi_remote_replace() {
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Clean)]);
    r.evict(A);
    let f = r.fire(&from_pi(A, "PiReplace"));
    ran(&f, A, "pi_replace");
    assert_sent(&f, &[(A, H, "Replace")]);
}

#[test]
fn pi_local_replace() {
    let mut r = Rig::new(2);
    r.place(&[(H, LineState::Clean), (A, LineState::Clean)]);
    r.evict(H);
    let f = r.fire(&from_pi(H, "PiReplace"));
    ran(&f, H, "pi_replace");
    assert_sent(&f, &[]);
    assert_eq!(r.entry(), DirEntry::shared(false, &[NodeId(A)]));
}

// -------------------------------------------------------------- NAKs

/// A's read reaches a home whose entry is pending.
fn refused_read() -> Rig {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.set(DirEntry {
        pending: true,
        ..DirEntry::remote_owner(NodeId(B))
    });
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r
}

#[test]
fn ni_nak() {
    let mut r = refused_read();
    r.fire(&on_net(A, H, "Get"));
    let f = r.fire(&on_net(H, A, "Nak"));
    ran(&f, A, "nak");
    // The kit's requester asks again at once (the model's processor may).
    assert_sent(&f, &[(A, H, "Get")]);
    assert_eq!(r.m.state(NodeId(A)).unwrap().stats.retries, 1);
}

/// B wrote its dirty line back; A's read is forwarded to B regardless.
fn forward_to_gone_owner(write: bool) -> Rig {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.evict(B);
    r.fire(&from_pi(B, "PiWriteback"));
    if write {
        r.store(A, 9);
        r.fire(&from_pi(A, "PiGetX"));
        r.fire(&on_net(A, H, "GetX"));
    } else {
        r.load(A);
        r.fire(&from_pi(A, "PiGet"));
        r.fire(&on_net(A, H, "Get"));
    }
    assert!(r.entry().pending);
    r
}

#[test]
fn ni_nak_clear() {
    let mut r = forward_to_gone_owner(false);
    r.fire(&on_net(H, B, "FwdGet"));
    let f = r.fire(&on_net(B, H, "NakClear"));
    ran(&f, H, "nak_clear");
    assert_sent(&f, &[]);
    assert!(!r.entry().pending);
}

#[test]
fn ni_local_get_nak() {
    let mut r = refused_read();
    let f = r.fire(&on_net(A, H, "Get"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, A, "Nak")]);
    // The owner asking again before its writeback has arrived.
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Dirty)]);
    r.evict(A);
    r.load(A);
    r.fire(&from_pi(A, "PiWriteback"));
    r.fire(&from_pi(A, "PiGet"));
    let f = r.fire(&on_net(A, H, "Writeback"));
    ran(&f, H, "home_writeback");
    // The writeback came first on the lane: the read is served.
    let f = r.fire(&on_net(A, H, "Get"));
    assert_sent(&f, &[(H, A, "Put")]);
}

#[test]
fn ni_local_get_get() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    let f = r.fire(&on_net(A, H, "Get"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, B, "FwdGet")]);
    assert!(r.entry().pending);
}

#[test]
fn ni_local_get_put() {
    // The first sharer becomes the head.
    let mut r = Rig::new(4);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    let f = r.fire(&on_net(A, H, "Get"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, A, "Put")]);
    assert_eq!(r.entry(), DirEntry::shared(false, &[NodeId(A)]));
    // A further sharer joins ShrSet, and InvSet follows it.
    r.load(B);
    r.fire(&from_pi(B, "PiGet"));
    r.fire(&on_net(B, H, "Get"));
    let e = r.entry();
    assert_eq!((e.head, e.shr_vld), (Some(NodeId(A)), true));
    assert!(e.shr.contains(NodeId(B)) && e.inv.contains(NodeId(B)));
    // The home's processor owns it: it keeps a clean copy, memory is written.
    let mut r = Rig::new(2);
    r.place(&[(H, LineState::Dirty)]);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    let f = r.fire(&on_net(A, H, "Get"));
    assert_sent(&f, &[(H, A, "Put")]);
    assert_eq!(r.entry(), DirEntry::shared(true, &[NodeId(A)]));
    assert_eq!(r.cache(H), LineState::Clean);
    assert_eq!(r.memory(), [2; LINE_BYTES]);
}

#[test]
fn ni_remote_get_nak() {
    let mut r = forward_to_gone_owner(false);
    let f = r.fire(&on_net(H, B, "FwdGet"));
    ran(&f, B, "owner_forward");
    assert_sent(&f, &[(B, A, "Nak"), (B, H, "NakClear")]);
    // A forward that arrives before the owner's own reply is NAKed too.
    let mut r = Rig::new(3);
    r.store(B, 3);
    r.fire(&from_pi(B, "PiGetX"));
    r.fire(&on_net(B, H, "GetX"));
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r.fire(&on_net(A, H, "Get"));
    let f = r.fire(&on_net(H, B, "FwdGet"));
    assert_sent(&f, &[(B, A, "Nak"), (B, H, "NakClear")]);
}

#[test]
fn ni_remote_get_put() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r.fire(&on_net(A, H, "Get"));
    let f = r.fire(&on_net(H, B, "FwdGet"));
    ran(&f, B, "owner_forward");
    assert_sent(&f, &[(B, A, "Put"), (B, H, "SharingWriteback")]);
    assert_eq!(r.cache(B), LineState::Clean);
    // The home as the reader: its reply is the only message.
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(H);
    r.fire(&from_pi(H, "PiGet"));
    let f = r.fire(&on_net(H, B, "FwdGet"));
    assert_sent(&f, &[(B, H, "Put")]);
}

#[test]
fn ni_local_getx_nak() {
    let mut r = Rig::new(3);
    r.set(DirEntry {
        pending: true,
        ..DirEntry::shared(false, &[NodeId(B)])
    });
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    let f = r.fire(&on_net(A, H, "GetX"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, A, "Nak")]);
}

#[test]
fn ni_local_getx_getx() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    let f = r.fire(&on_net(A, H, "GetX"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, B, "FwdGetX")]);
    assert!(r.entry().pending);
}

#[test]
fn ni_local_getx_putx() {
    // Sharers (and the home's copy): the home collects, the writer is
    // answered at once, and new requests are NAKed meanwhile.
    let mut r = Rig::new(4);
    r.place(&[
        (H, LineState::Clean),
        (B, LineState::Clean),
        (C, LineState::Clean),
    ]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    let f = r.fire(&on_net(A, H, "GetX"));
    ran(&f, H, "home_request");
    assert_sent(&f, &[(H, A, "PutX"), (H, B, "Inval"), (H, C, "Inval")]);
    assert_eq!(r.cache(H), LineState::Uncached);
    let e = r.entry();
    assert!(e.pending && e.dirty && !e.local && e.head == Some(NodeId(A)));
    assert_eq!(e.inv.iter().collect::<Vec<_>>(), [NodeId(B), NodeId(C)]);
    r.fire(&on_net(H, A, "PutX"));
    r.fire(&to_pi(A, "Fill"));
    assert_eq!(r.cache(A), LineState::Dirty);
    // No other sharer: exclusive from memory, nothing collected.
    let mut r = Rig::new(2);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    let f = r.fire(&on_net(A, H, "GetX"));
    assert_sent(&f, &[(H, A, "PutX")]);
    assert_eq!(r.entry(), DirEntry::remote_owner(NodeId(A)));
    // The home's processor owns it: its line goes to the writer.
    let mut r = Rig::new(2);
    r.place(&[(H, LineState::Dirty)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    let f = r.fire(&on_net(A, H, "GetX"));
    assert_sent(&f, &[(H, A, "PutX")]);
    assert_eq!(r.cache(H), LineState::Uncached);
    assert_eq!(r.entry(), DirEntry::remote_owner(NodeId(A)));
}

#[test]
fn ni_remote_getx_nak() {
    let mut r = forward_to_gone_owner(true);
    let f = r.fire(&on_net(H, B, "FwdGetX"));
    ran(&f, B, "owner_forward");
    assert_sent(&f, &[(B, A, "Nak"), (B, H, "NakClear")]);
}

#[test]
fn ni_remote_getx_putx() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    r.fire(&on_net(A, H, "GetX"));
    let f = r.fire(&on_net(H, B, "FwdGetX"));
    ran(&f, B, "owner_forward");
    assert_sent(&f, &[(B, A, "PutX"), (B, H, "ForwardAck")]);
    assert_eq!(r.cache(B), LineState::Uncached);
    // The home as the writer: no acknowledgement to itself.
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(H, 1);
    r.fire(&from_pi(H, "PiGetX"));
    let f = r.fire(&on_net(H, B, "FwdGetX"));
    assert_sent(&f, &[(B, H, "PutX")]);
}

// ------------------------------------------------------------ replies

#[test]
fn ni_local_put() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(H);
    r.fire(&from_pi(H, "PiGet"));
    r.fire(&on_net(H, B, "FwdGet"));
    let f = r.fire(&on_net(B, H, "Put"));
    ran(&f, H, "reply");
    assert_sent(&f, &[]);
    let e = r.entry();
    assert!(
        !e.pending && !e.dirty && e.local && e.head == Some(NodeId(B)),
        "{e:?}"
    );
    assert_eq!(r.memory(), [2; LINE_BYTES]);
    r.fire(&to_pi(H, "Fill"));
    assert_eq!(r.cache(H), LineState::Clean);
}

#[test]
fn ni_remote_put() {
    let mut r = Rig::new(2);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r.fire(&on_net(A, H, "Get"));
    let f = r.fire(&on_net(H, A, "Put"));
    ran(&f, A, "reply");
    r.fire(&to_pi(A, "Fill"));
    assert_eq!(r.cache(A), LineState::Clean);
    assert_eq!(r.value(A), Some(u64::from_le_bytes([0; 8])));
    // An invalidation that overtook the reply: the data is used once and
    // not kept (the model's InvMarked).
    let mut r = Rig::new(3);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r.fire(&on_net(A, H, "Get"));
    r.store(B, 4);
    r.fire(&from_pi(B, "PiGetX"));
    r.fire(&on_net(B, H, "GetX"));
    r.fire(&on_net(H, A, "Inval"));
    r.fire(&on_net(H, A, "Put"));
    r.fire(&to_pi(A, "Fill"));
    assert_eq!(r.cache(A), LineState::Uncached);
    assert!(r.value(A).is_some());
}

#[test]
fn ni_local_putxacksdone() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(H, 1);
    r.fire(&from_pi(H, "PiGetX"));
    r.fire(&on_net(H, B, "FwdGetX"));
    let f = r.fire(&on_net(B, H, "PutX"));
    ran(&f, H, "reply");
    assert_eq!(r.entry(), DirEntry::local_owner());
    r.fire(&to_pi(H, "Fill"));
    assert_eq!(r.cache(H), LineState::Dirty);
}

#[test]
fn ni_remote_putx() {
    let mut r = Rig::new(2);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    r.fire(&on_net(A, H, "GetX"));
    let f = r.fire(&on_net(H, A, "PutX"));
    ran(&f, A, "reply");
    r.fire(&to_pi(A, "Fill"));
    assert_eq!(r.cache(A), LineState::Dirty);
}

#[test]
fn ni_inv() {
    let mut r = Rig::new(3);
    r.place(&[(A, LineState::Clean), (B, LineState::Clean)]);
    r.store(H, 1);
    r.fire(&from_pi(H, "PiGetX"));
    let f = r.fire(&on_net(H, A, "Inval"));
    ran(&f, A, "invalidate");
    assert_sent(&f, &[(A, H, "InvAck")]);
    assert_eq!(r.cache(A), LineState::Uncached);
}

#[test]
fn ni_invack() {
    let mut r = Rig::new(3);
    r.place(&[(A, LineState::Clean), (B, LineState::Clean)]);
    r.store(H, 1);
    r.fire(&from_pi(H, "PiGetX"));
    r.drain("CohMsg::Inval ");
    let f = r.fire(&on_net(A, H, "InvAck"));
    ran(&f, H, "inval_ack");
    assert!(r.entry().pending && r.entry().inv.iter().eq([NodeId(B)]));
    r.fire(&on_net(B, H, "InvAck"));
    assert_eq!(r.entry(), DirEntry::local_owner());
}

#[test]
fn ni_wb() {
    let mut r = Rig::new(2);
    r.place(&[(A, LineState::Dirty)]);
    r.evict(A);
    r.fire(&from_pi(A, "PiWriteback"));
    let f = r.fire(&on_net(A, H, "Writeback"));
    ran(&f, H, "home_writeback");
    assert_sent(&f, &[]);
    assert_eq!(r.entry(), DirEntry::uncached());
    assert_eq!(r.memory(), [2; LINE_BYTES]);
}

#[test]
fn ni_fack() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    r.fire(&on_net(A, H, "GetX"));
    r.fire(&on_net(H, B, "FwdGetX"));
    let f = r.fire(&on_net(B, H, "ForwardAck"));
    ran(&f, H, "forward_ack");
    assert_eq!(r.entry(), DirEntry::remote_owner(NodeId(A)));
}

#[test]
fn ni_shwb() {
    let mut r = Rig::new(3);
    r.place(&[(B, LineState::Dirty)]);
    r.load(A);
    r.fire(&from_pi(A, "PiGet"));
    r.fire(&on_net(A, H, "Get"));
    r.fire(&on_net(H, B, "FwdGet"));
    let f = r.fire(&on_net(B, H, "SharingWriteback"));
    ran(&f, H, "sharing_writeback");
    let e = r.entry();
    assert!(
        !e.pending && !e.dirty && e.shr_vld && e.head == Some(NodeId(B)),
        "{e:?}"
    );
    assert!(e.shr.contains(NodeId(A)) && e.inv.contains(NodeId(A)));
    assert_eq!(r.memory(), [2; LINE_BYTES]);
}

#[test]
fn ni_replace() {
    let mut r = Rig::new(4);
    r.place(&[
        (A, LineState::Clean),
        (B, LineState::Clean),
        (C, LineState::Clean),
    ]);
    r.evict(B);
    r.fire(&from_pi(B, "PiReplace"));
    let f = r.fire(&on_net(B, H, "Replace"));
    ran(&f, H, "home_replace");
    let e = r.entry();
    assert_eq!(e.head, Some(NodeId(A)));
    assert!(!e.shr.contains(NodeId(B)) && !e.inv.contains(NodeId(B)));
}

// -------------------------------------------------- hints, by format

/// Three readers evict their copies, the head first; then a write: the
/// invalidations the home sends.
fn invalidations_after_hints(format: DirFormat) -> Vec<String> {
    let mut r = Rig::with(
        4,
        CohParams {
            format,
            ..CohParams::default()
        },
    );
    for n in [A, B, C] {
        r.load(n);
        r.fire(&from_pi(n, "PiGet"));
        r.fire(&on_net(n, H, "Get"));
        r.fire(&on_net(H, n, "Put"));
        r.fire(&to_pi(n, "Fill"));
    }
    assert_eq!(r.entry().head, Some(NodeId(A)));
    for n in [A, B, C] {
        r.evict(n);
        r.fire(&from_pi(n, "PiReplace"));
        r.fire(&on_net(n, H, "Replace"));
    }
    r.store(H, 1);
    let f = r.fire(&from_pi(H, "PiGetX"));
    f.sent
        .into_iter()
        .filter(|d| d.contains("CohMsg::Inval "))
        .collect()
}

#[test]
fn the_bit_vectors_hint_leaves_the_head_and_the_dynamic_pointers_unlinks_it() {
    let bv = invalidations_after_hints(DirFormat::BitVector);
    assert_eq!(bv.len(), 1, "{bv:?}");
    assert!(bv[0].starts_with("n0 -> n1 "), "{bv:?}");
    assert_eq!(
        invalidations_after_hints(DirFormat::DynamicPointer),
        Vec::<String>::new()
    );
}

// ------------------------------------------------------------ extensions

#[test]
fn an_upgrade_keeps_the_writers_copy_and_sends_no_data() {
    let mut r = Rig::new(3);
    r.place(&[(A, LineState::Clean), (B, LineState::Clean)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiUpgrade"));
    let f = r.fire(&on_net(A, H, "Upgrade"));
    assert_sent(&f, &[(H, A, "UpgradeAck"), (H, B, "Inval")]);
    r.fire(&on_net(H, A, "UpgradeAck"));
    r.fire(&to_pi(A, "Fill"));
    assert_eq!(r.cache(A), LineState::Dirty);
}

#[test]
fn the_requester_can_collect_the_acknowledgements() {
    let mut r = Rig::with(
        3,
        CohParams {
            acks: Acks::Requester,
            ..CohParams::default()
        },
    );
    r.place(&[(B, LineState::Clean)]);
    r.store(A, 1);
    r.fire(&from_pi(A, "PiGetX"));
    r.fire(&on_net(A, H, "GetX"));
    assert_eq!(r.entry(), DirEntry::remote_owner(NodeId(A)));
    r.fire(&on_net(H, A, "PutX"));
    assert!(
        r.held().iter().all(|d| !d.contains(&to_pi(A, "Fill"))),
        "waits for the ack"
    );
    r.fire(&on_net(H, B, "Inval"));
    let f = r.fire(&on_net(B, A, "InvAck"));
    ran(&f, A, "inval_ack");
    assert!(f.sent.iter().any(|d| d.contains(&to_pi(A, "Fill"))));
}

#[test]
fn a_full_pointer_store_reclaims_a_list_by_invalidation() {
    let mut r = Rig::with(
        4,
        CohParams {
            format: DirFormat::DynamicPointer,
            pointer_store: 1,
            ..CohParams::default()
        },
    );
    for n in [A, B] {
        r.load(n);
        r.fire(&from_pi(n, "PiGet"));
        r.fire(&on_net(n, H, "Get"));
        r.fire(&on_net(H, n, "Put"));
        r.fire(&to_pi(n, "Fill"));
    }
    assert_eq!(r.m.state(NodeId(H)).unwrap().links_used(), 1);
    // A third reader needs a second link: the line's own list is reclaimed,
    // every copy invalidated with the home collecting, and the reader NAKed.
    r.load(C);
    r.fire(&from_pi(C, "PiGet"));
    let f = r.fire(&on_net(C, H, "Get"));
    assert_sent(&f, &[(H, A, "Inval"), (H, B, "Inval"), (H, C, "Nak")]);
    assert_eq!(r.m.state(NodeId(H)).unwrap().stats.reclaims, 1);
    assert_eq!(r.m.state(NodeId(H)).unwrap().links_used(), 0);
    r.drain("CohMsg::Inval ");
    r.drain("CohMsg::InvAck ");
    assert!(!r.entry().pending);
    // The reader's retry is served.
    r.fire(&on_net(H, C, "Nak"));
    let f = r.fire(&on_net(C, H, "Get"));
    assert_sent(&f, &[(H, C, "Put")]);
}
