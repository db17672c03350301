//! Message-data coherence modes on MAGIC: a line is sent from node 0's send
//! buffer into node 1's receive buffer by two small handlers that call the
//! modes API. They are a protocol unit of their own (`md`) that carries the
//! coherence protocol over its node state. Without coherence the hazards
//! show; with `local` they do not.

use coherence::modes::{self, Mode, ModeError};
use coherence::protocol::{self, CohNode, CohParams, Coherence};
use coherence::Access;
use magic::{
    BuildError, Cx, Cycles, Install, LineState, Magic, MagicParams, Msg, NodeId, PAddr, Protocol,
    Region,
};

magic::messages! {
    /// The test protocol's messages.
    pub enum MdMsg: MdKind {
        /// Node 0: send the send-buffer line under `mode`.
        Send { mode: Mode },
        /// Node 1: the line (with it), to be written under `mode`.
        Data { mode: Mode },
        /// Node 1: write the line kept in buffer `buf` again.
        Retry { buf: magic::BufId },
    }
}

fn src() -> PAddr {
    PAddr::new(Region::Normal, NodeId(0), 0x10_000)
}

fn dst() -> PAddr {
    PAddr::new(Region::Normal, NodeId(1), 0x20_000)
}

/// Node 0: read the send-buffer line under the mode and send it.
fn md_send(cx: &mut Cx<'_, CohNode>, _: &Msg, md_msg::Send { mode }: md_msg::Send) {
    let b = cx.alloc_buffer().expect("a free buffer");
    let t = modes::sender_read(cx, mode, src(), b).expect("a local plan");
    cx.wait(t);
    let d = cx.msg(MdMsg::Data { mode }).to(NodeId(1)).addr(dst());
    cx.send(d, Some(b)).unwrap();
}

/// Node 1: write the received line under the mode.
fn md_recv(cx: &mut Cx<'_, CohNode>, m: &Msg, md_msg::Data { mode }: md_msg::Data) {
    let b = cx.take_msg_buffer().expect("data");
    let t = modes::receiver_write(cx, mode, m.addr, b, 0..128).expect("a local plan");
    cx.wait(t);
    cx.free_buffer(b).unwrap();
}

/// The test protocol: the coherence protocol, and a send and a receive
/// handler on its node state (the retrying pair takes its own retries).
struct Md {
    retrying: bool,
}

impl Protocol for Md {
    type Node = CohNode;

    fn name(&self) -> &'static str {
        "md"
    }

    fn node(&self, n: NodeId, nodes: u32) -> CohNode {
        CohNode::new(n, nodes, CohParams::default())
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, CohNode>) {
        protocol::install_on(b);
        let n = Region::Normal;
        if self.retrying {
            // The retrying receiver takes the data and its own retries.
            let s = b.handler("md_send_retrying", md_send_retrying);
            let r = b.handler_of_all("md_recv_retrying", md_recv_retrying);
            b.route(n, s)
                .route_kind(MdKind::Data, n, r)
                .route_kind(MdKind::Retry, n, r);
        } else {
            let s = b.handler("md_send", md_send);
            let r = b.handler("md_recv", md_recv);
            b.route(n, s).route(n, r);
        }
    }

    fn check(&self, params: &MagicParams, nodes: u32) -> Result<(), BuildError> {
        Coherence::default().check(params, nodes)
    }
}

fn machine() -> Magic<CohNode> {
    Magic::with(MagicParams::default(), 2, &Md { retrying: false }).unwrap()
}

/// Transfer one line under `mode`; returns (receiver's memory byte, the word
/// the receiving processor then loads).
fn transfer(mode: Mode) -> (u8, u64) {
    let mut m = machine();
    // The send buffer is dirty in the sender's cache (0xAA); memory is stale (0x11).
    protocol::place(
        &mut m,
        src(),
        &[(NodeId(0), LineState::Dirty)],
        [0x11; 128],
        [0xAA; 128],
    )
    .unwrap();
    // The receive buffer is cached clean at the receiver (0x00).
    protocol::place(
        &mut m,
        dst(),
        &[(NodeId(1), LineState::Clean)],
        [0x00; 128],
        [0x00; 128],
    )
    .unwrap();
    let go = m.msg(NodeId(0), MdMsg::Send { mode }).addr(src());
    m.post(NodeId(0), Cycles(0), go).unwrap();
    assert!(m.run().is_clean());
    let stored = m.memory(NodeId(1)).unwrap().line(dst().line())[0];
    m.state_mut(NodeId(1))
        .unwrap()
        .proc
        .push([Access::Load(dst())]);
    let at = m.now() + Cycles(1);
    m.start_processor(NodeId(1), at).unwrap();
    assert!(m.run().is_clean());
    let seen = m.state(NodeId(1)).unwrap().proc.results[0].value.unwrap();
    (stored, seen)
}

#[test]
fn without_coherence_stale_data_is_sent_and_received_data_is_not_seen() {
    let (stored, seen) = transfer(Mode::None);
    // The sender's dirty bytes never left its cache: memory's stale 0x11 went.
    assert_eq!(stored, 0x11);
    // And the receiver's processor still hits its old clean copy.
    assert_eq!(seen, 0);
}

#[test]
fn local_coherence_sends_the_dirty_bytes_and_the_receiver_sees_them() {
    let (stored, seen) = transfer(Mode::Local);
    assert_eq!(stored, 0xAA);
    assert_eq!(seen, u64::from_le_bytes([0xAA; 8]));
}

#[test]
fn local_coherence_refuses_a_line_dirty_elsewhere_and_global_plans_the_fetch() {
    use coherence::directory::DirEntry;
    let e = DirEntry::remote_owner(NodeId(2));
    let err = modes::plan_send(Mode::Local, NodeId(0), src(), Some(&e)).unwrap_err();
    assert!(matches!(err, ModeError::OutsideLocal { .. }), "{err:?}");
    let plan = modes::plan_send(Mode::Global, NodeId(0), src(), Some(&e)).unwrap();
    assert_eq!(
        plan.as_slice(),
        &[modes::Action::FetchRemote { owner: NodeId(2) }]
    );
    // A remote home: local refuses, global goes through the home.
    let far = PAddr::new(Region::Normal, NodeId(3), 0);
    assert!(modes::plan_receive(Mode::Local, NodeId(0), far, None).is_err());
    assert_eq!(
        modes::plan_receive(Mode::Global, NodeId(0), far, None)
            .unwrap()
            .as_slice(),
        &[modes::Action::RemoteHome { home: NodeId(3) }]
    );
    // Remote sharers at the receiver: global invalidates them, then writes.
    let e = DirEntry::shared(true, &[NodeId(2)]);
    let plan = modes::plan_receive(Mode::Global, NodeId(0), src(), Some(&e)).unwrap();
    assert_eq!(
        plan.as_slice(),
        &[
            modes::Action::InvalidateRemote([NodeId(2)].into_iter().collect()),
            modes::Action::InvalidateLocal,
            modes::Action::Memory
        ]
    );
}

// ---- Races with the processor's own traffic: a local plan waits (the
// handler retries from the software queue) instead of trusting a cache whose
// line is being filled or written back.

/// Send under `local`, retrying while the plan says busy.
fn md_send_retrying(cx: &mut Cx<'_, CohNode>, m: &Msg, _: md_msg::Send) {
    let b = cx.alloc_buffer().expect("a free buffer");
    match modes::sender_read(cx, Mode::Local, src(), b) {
        Ok(t) => {
            cx.wait(t);
            let mode = Mode::Local;
            let d = cx.msg(MdMsg::Data { mode }).to(NodeId(1)).addr(dst());
            cx.send(d, Some(b)).unwrap();
        }
        Err(ModeError::Busy { .. }) => {
            cx.free_buffer(b).unwrap();
            cx.reschedule(*m).unwrap();
        }
        Err(e) => panic!("{e:?}"),
    }
}

/// Receive under `local`, keeping the data and retrying while busy.
fn md_recv_retrying(cx: &mut Cx<'_, CohNode>, m: &Msg, msg: MdMsg) {
    let b = match msg {
        MdMsg::Retry { buf } => buf,
        _ => cx.take_msg_buffer().expect("data"),
    };
    match modes::receiver_write(cx, Mode::Local, m.addr, b, 0..128) {
        Ok(t) => {
            cx.wait(t);
            cx.free_buffer(b).unwrap();
        }
        Err(ModeError::Busy { .. }) => {
            let again = cx.msg(MdMsg::Retry { buf: b }).addr(m.addr);
            cx.reschedule(again).unwrap();
        }
        Err(e) => panic!("{e:?}"),
    }
}

fn retrying_machine() -> Magic<CohNode> {
    Magic::with(MagicParams::default(), 2, &Md { retrying: true }).unwrap()
}

fn word0(m: &Magic<CohNode>, n: NodeId, a: PAddr) -> u64 {
    u64::from_le_bytes(
        m.memory(n).unwrap().line(a.line())[0..8]
            .try_into()
            .unwrap(),
    )
}

#[test]
fn a_local_send_racing_the_senders_dirty_eviction_sends_the_dirty_bytes() {
    let mut m = retrying_machine();
    protocol::place(
        &mut m,
        src(),
        &[(NodeId(0), LineState::Dirty)],
        [0x11; 128],
        [0xAA; 128],
    )
    .unwrap();
    m.state_mut(NodeId(0)).unwrap().proc.push([
        Access::Evict(src()),
        Access::Think(Cycles(200)),
        Access::Load(src()),
    ]);
    m.start_processor(NodeId(0), Cycles(0)).unwrap();
    // The send is dispatched before the eviction's writeback reaches MAGIC.
    let send = m.msg(NodeId(0), MdMsg::Send { mode: Mode::Local });
    m.post(NodeId(0), Cycles(0), send.addr(src())).unwrap();
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
    let aa = u64::from_le_bytes([0xAA; 8]);
    assert_eq!(
        word0(&m, NodeId(1), dst()),
        aa,
        "the receiver got the dirty bytes"
    );
    assert_eq!(
        m.state(NodeId(0))
            .unwrap()
            .proc
            .results
            .last()
            .unwrap()
            .value,
        Some(aa),
        "the sender's data survived"
    );
    assert_eq!(m.state(NodeId(0)).unwrap().stats.protocol_errors, 0);
}

#[test]
fn a_local_send_racing_the_senders_fill_waits_for_it() {
    let mut m = retrying_machine();
    protocol::place(&mut m, src(), &[], [0x11; 128], [0; 128]).unwrap();
    m.state_mut(NodeId(0)).unwrap().proc.push([
        Access::Store(src(), 0xBEEF),
        Access::Think(Cycles(300)),
        Access::Load(src()),
    ]);
    m.start_processor(NodeId(0), Cycles(0)).unwrap();
    let mut posted = false;
    while let Some(t) = m.step() {
        // The entry already says exclusive but the fill is still crossing.
        let exclusive = matches!(
            m.state(NodeId(0)).unwrap().entry(src()).state(NodeId(0)),
            coherence::DirState::Exclusive(_)
        );
        if !posted && exclusive && m.pcache(NodeId(0)).unwrap().state(src()) == LineState::Uncached
        {
            let send = m.msg(NodeId(0), MdMsg::Send { mode: Mode::Local });
            m.post(NodeId(0), t, send.addr(src())).unwrap();
            posted = true;
        }
    }
    assert!(posted);
    assert_eq!(word0(&m, NodeId(1), dst()), 0xBEEF, "the store was sent");
    let n = m.state(NodeId(0)).unwrap();
    assert_eq!(n.stats.protocol_errors, 0);
    assert_eq!(n.proc.results.last().unwrap().value, Some(0xBEEF));
}

#[test]
fn a_local_receive_racing_the_receivers_read_fill_leaves_no_stale_copy() {
    let mut m = retrying_machine();
    protocol::place(&mut m, dst(), &[], [0x11; 128], [0; 128]).unwrap();
    m.state_mut(NodeId(1)).unwrap().proc.push([
        Access::Load(dst()),
        Access::Think(Cycles(300)),
        Access::Load(dst()),
    ]);
    m.start_processor(NodeId(1), Cycles(0)).unwrap();
    let mut posted = false;
    while let Some(t) = m.step() {
        let shared = matches!(
            m.state(NodeId(1)).unwrap().entry(dst()).state(NodeId(1)),
            coherence::DirState::Shared(_)
        );
        if !posted && shared && m.pcache(NodeId(1)).unwrap().state(dst()) == LineState::Uncached {
            let d = m
                .msg(NodeId(1), MdMsg::Data { mode: Mode::Local })
                .addr(dst());
            m.post_data(NodeId(1), t, d, Some([0xAA; 128])).unwrap();
            posted = true;
        }
    }
    assert!(posted);
    let n = m.state(NodeId(1)).unwrap();
    assert_eq!(
        n.proc.results.last().unwrap().value,
        Some(u64::from_le_bytes([0xAA; 8]))
    );
    assert_eq!(n.stats.protocol_errors, 0);
}
