//! Message-data coherence modes on MAGIC: a line is sent from node 0's send
//! buffer into node 1's receive buffer by two small handlers that call the
//! modes API. Without coherence the hazards show; with `local` they do not.

use coherence::modes::{self, Mode, ModeError};
use coherence::protocol::{self, CohNode, CohParams};
use coherence::Op;
use magic::{
    Cx, Cycles, LineState, Magic, MagicBuilder, MagicParams, Msg, MsgType, NodeId, PAddr, Region,
};

const MD_SEND: MsgType = MsgType(100);
const MD_DATA: MsgType = MsgType(101);

fn mode_of(m: &Msg) -> Mode {
    [Mode::None, Mode::Local, Mode::Global][m.args[0] as usize]
}

fn src() -> PAddr {
    PAddr::new(Region::Normal, NodeId(0), 0x10_000)
}

fn dst() -> PAddr {
    PAddr::new(Region::Normal, NodeId(1), 0x20_000)
}

/// Node 0: read the send-buffer line under the mode and send it.
fn md_send(cx: &mut Cx<'_, CohNode>, m: &Msg) {
    let b = cx.alloc_buffer().expect("a free buffer");
    let t = modes::sender_read(cx, mode_of(m), src(), b).expect("a local plan");
    cx.wait(t);
    let d = Msg::new(MD_DATA, cx.node(), NodeId(1))
        .addr(dst())
        .args(m.args);
    cx.send(d, Some(b)).unwrap();
}

/// Node 1: write the received line under the mode.
fn md_recv(cx: &mut Cx<'_, CohNode>, m: &Msg) {
    let b = cx.take_msg_buffer().expect("data");
    let t = modes::receiver_write(cx, mode_of(m), m.addr, b, 0..128).expect("a local plan");
    cx.wait(t);
    cx.free_buffer(b).unwrap();
}

fn machine() -> Magic<CohNode> {
    let mut b = MagicBuilder::new(MagicParams::default(), 2);
    protocol::install(&mut b);
    let s = b.handler("md-send", md_send);
    let r = b.handler("md-recv", md_recv);
    b.route(MD_SEND, Region::Normal, s)
        .route(MD_DATA, Region::Normal, r);
    b.build(|n| CohNode::new(n, 2, CohParams::default()))
        .unwrap()
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
    let go = Msg::new(MD_SEND, NodeId(0), NodeId(0))
        .addr(src())
        .args([mode as u64, 0, 0]);
    m.post(NodeId(0), Cycles(0), go).unwrap();
    assert!(m.run().is_clean());
    let stored = m.memory(NodeId(1)).line(dst().line())[0];
    m.state_mut(NodeId(1)).proc.push([Op::Load(dst())]);
    let at = m.now() + Cycles(1);
    m.start_processor(NodeId(1), at).unwrap();
    assert!(m.run().is_clean());
    let seen = m.state(NodeId(1)).proc.results[0].value.unwrap();
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
    use coherence::directory::{DirEntry, DirState};
    let e = DirEntry {
        state: DirState::Exclusive(NodeId(2)),
        pending: None,
    };
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
    let mut s = coherence::Sharers::one(NodeId(0));
    s.add(NodeId(2));
    let e = DirEntry {
        state: DirState::Shared(s),
        pending: None,
    };
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
