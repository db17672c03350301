//! Exact timing of the node hardware, seen from handlers on a small machine.

use magic::{
    Cx, Cycles, Lane, LineState, Magic, MagicBuilder, MagicParams, Msg, MsgType, NodeId, NodeState,
    PAddr, Region, Unit,
};

const GO: MsgType = MsgType(1);
const DATA: MsgType = MsgType(2);
const STEP: MsgType = MsgType(3);

/// What the test handlers observed.
#[derive(Default, Debug)]
struct Seen {
    at: Vec<(&'static str, u64, u64)>,
    bytes: Vec<u8>,
    allocs: Vec<bool>,
}

impl NodeState for Seen {}

/// The hardware's own timing: no inbox or outbox stage latency, so each test
/// sees one unit's figure alone (the stages have a test of their own).
fn raw() -> MagicParams {
    MagicParams {
        inbox_dispatch: Cycles(0),
        outbox_latency: Cycles(0),
        ..MagicParams::default()
    }
}

fn machine(nodes: u32, go: magic::RawHandlerFn<Seen>) -> Magic<Seen> {
    let mut b = MagicBuilder::new(raw(), nodes);
    let h = b.handler("go", go);
    let d = b.handler("data", on_data);
    let s = b.handler("step", on_step);
    b.route_any(GO, h).route_any(DATA, d).route_any(STEP, s);
    b.build(|_| Seen::default()).unwrap()
}

/// Notes when it was dispatched, then waits for the whole line and notes that.
fn on_data(cx: &mut Cx<'_, Seen>, m: &Msg) {
    let t = cx.now().0;
    let b = cx.msg_buffer().expect("data message");
    let first = cx.buffer(b).unwrap()[0];
    let ticket = cx.buffer_ticket(b).unwrap();
    cx.wait(ticket);
    let full = cx.now().0;
    let s = cx.state();
    s.at.push(("data", t, m.args[0]));
    s.at.push(("line", full, ticket.first.0));
    s.bytes.push(first);
}

fn on_step(cx: &mut Cx<'_, Seen>, m: &Msg) {
    cx.busy(Cycles(1));
    let t = cx.now().0;
    cx.state().at.push(("step", t, m.args[0]));
}

fn go_at_zero(m: &mut Magic<Seen>) {
    m.post(NodeId(0), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
        .unwrap();
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
}

#[test]
fn a_line_from_memory_is_in_at_cycle_29() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        let b = cx.alloc_buffer().unwrap();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x1000);
        let t = cx.mem_read(a, b).unwrap();
        cx.wait(t);
        let now = cx.now().0;
        let first = cx.buffer(b).unwrap()[5];
        cx.state().at.push(("read", now, first as u64));
        cx.free_buffer(b).unwrap();
    }
    let mut m = machine(1, go);
    let mut line = [0u8; 128];
    line[5] = 99;
    m.memory_mut(NodeId(0))
        .store_line(PAddr::new(Region::Normal, NodeId(0), 0x1000).line(), &line);
    go_at_zero(&mut m);
    assert_eq!(m.state(NodeId(0)).at, vec![("read", 29, 99)]);
    let l = m.ledger();
    let go_row = l.handler(Some(0), "go").unwrap();
    assert_eq!((go_row.stats.busy, go_row.stats.wait), (29, 29));
    assert_eq!(l.unit(Some(0), Unit::Memory).unwrap().busy, 16);
}

#[test]
fn a_dirty_line_from_the_processor_cache_is_in_at_cycle_43() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        let b = cx.alloc_buffer().unwrap();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x2000);
        let iv = cx.pc_get(a, Some(b), LineState::Clean).unwrap();
        cx.wait_until(iv.state_at);
        let at_state = cx.now().0;
        cx.wait_until(iv.done);
        let now = cx.now().0;
        let byte = cx.buffer(b).unwrap()[0];
        let s = cx.state();
        s.at.push(("state", at_state, iv.first_word_at.unwrap().0));
        s.at.push(("line", now, byte as u64));
        cx.free_buffer(b).unwrap();
    }
    let mut m = machine(1, go);
    let a = PAddr::new(Region::Normal, NodeId(0), 0x2000);
    m.pcache_mut(NodeId(0))
        .set(a, LineState::Dirty, [0xAB; 128]);
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(0)).at,
        vec![("state", 23, 28), ("line", 43, 0xAB)]
    );
    assert_eq!(m.pcache(NodeId(0)).state(a), LineState::Clean);
}

#[test]
fn a_full_line_packet_arrives_40_plus_22_cycles_after_it_is_sent() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        let b = cx.alloc_buffer().unwrap();
        cx.buffer_mut(b).unwrap()[0] = 7;
        let m = Msg::new(DATA, cx.node(), NodeId(1)).args([1, 0, 0]);
        cx.send(m, Some(b)).unwrap();
    }
    // Cut through: the handler starts when the 32-byte header is in
    // (8 + 22), the first doubleword follows 2 cycles later, the whole packet
    // is in at 40 + 22.
    let mut m = machine(2, go);
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(1)).at,
        vec![("data", 30, 1), ("line", 62, 32)]
    );
    assert_eq!(m.state(NodeId(1)).bytes, vec![7]);
    let l = m.ledger();
    assert_eq!(l.unit(Some(0), Unit::NetOut).unwrap().busy, 40);
    assert_eq!(l.handler(Some(1), "data").unwrap().stats.wait, 32);

    // Store and forward: dispatched when the last byte is in.
    let mut b = MagicBuilder::new(raw(), 2);
    let h = b.handler("go", go);
    let d = b.handler("data", on_data);
    let whole = magic::Dispatch {
        whole_packet: true,
        ..Default::default()
    };
    b.route_any(GO, h).route_any_with(DATA, d, whole);
    let mut m = b.build(|_| Seen::default()).unwrap();
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(1)).at,
        vec![("data", 62, 1), ("line", 62, 32)]
    );
}

#[test]
fn a_handler_sending_into_a_full_outbox_lane_stalls_and_the_stall_is_charged() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        for k in 0..4 {
            let m = Msg::new(STEP, cx.node(), NodeId(1))
                .len(128)
                .args([k, 0, 0]);
            cx.send(m, None).unwrap();
        }
        // A reply does not wait for the full request lane.
        cx.send(
            Msg::new(STEP, cx.node(), NodeId(1))
                .lane(Lane::Reply)
                .args([9, 0, 0]),
            None,
        )
        .unwrap();
    }
    let mut m = machine(2, go);
    go_at_zero(&mut m);
    // One on the wire, two waiting: the fourth waits until the first is gone.
    let l = m.ledger();
    let row = l.handler(Some(0), "go").unwrap();
    assert_eq!((row.stats.busy, row.stats.outbox_stall), (40, 40));
    assert_eq!(l.unit(Some(0), Unit::Outbox).unwrap().waiting, 40);
    // Headers arrive 30 cycles after each start: 0, 40, 80, 120; the reply is
    // on the wire behind them, from 160 (8 cycles: header only).
    let at: Vec<_> = m
        .state(NodeId(1))
        .at
        .iter()
        .map(|&(_, t, k)| (t, k))
        .collect();
    assert_eq!(at, vec![(31, 0), (71, 1), (111, 2), (151, 3), (191, 9)]);
}

#[test]
fn data_buffer_exhaustion_is_seen_by_the_handler() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        let mut held = Vec::new();
        for _ in 0..17 {
            let b = cx.alloc_buffer();
            cx.state().allocs.push(b.is_some());
            held.extend(b);
        }
        for b in held {
            cx.free_buffer(b).unwrap();
        }
        let again = cx.alloc_buffer();
        cx.state().allocs.push(again.is_some());
        cx.free_buffer(again.unwrap()).unwrap();
    }
    let mut m = machine(1, go);
    go_at_zero(&mut m);
    let mut want = vec![true; 16];
    want.extend([false, true]);
    assert_eq!(m.state(NodeId(0)).allocs, want);
}

#[test]
fn the_software_queue_is_first_in_first_out_and_yields_to_the_network() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        for k in 0..3 {
            cx.reschedule(Msg::new(STEP, cx.node(), cx.node()).args([k, 0, 0]))
                .unwrap();
        }
        // Loopback on the request lane: arrives in the network queue now.
        cx.send(Msg::new(STEP, cx.node(), cx.node()).args([100, 0, 0]), None)
            .unwrap();
        cx.busy(Cycles(5));
    }
    let mut m = machine(1, go);
    go_at_zero(&mut m);
    let order: Vec<_> = m
        .state(NodeId(0))
        .at
        .iter()
        .map(|&(_, t, k)| (t, k))
        .collect();
    assert_eq!(order, vec![(6, 100), (7, 0), (8, 1), (9, 2)]);
}

#[test]
fn a_message_with_no_handler_is_dropped_and_counted() {
    let mut m = machine(1, |_, _| {});
    m.post(
        NodeId(0),
        Cycles(0),
        Msg::new(MsgType(77), NodeId(0), NodeId(0)),
    )
    .unwrap();
    let r = m.run();
    // Counted, and the run is not clean: it names the type.
    assert!(!r.is_clean());
    assert_eq!(
        r.stuck,
        ["node 0: 1 message(s) of type 77 had no route (dropped)"]
    );
    assert_eq!(m.drops(NodeId(0)).unhandled, 1);
    assert!(m
        .post(NodeId(5), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
        .is_err());
}

#[test]
fn a_run_that_ends_with_work_pending_says_what_is_stuck() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        // Takes a buffer and never gives it back.
        let _ = cx.alloc_buffer();
    }
    let mut m = machine(1, go);
    m.post(NodeId(0), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
        .unwrap();
    let r = m.run();
    assert_eq!(
        r.stuck,
        vec!["node 0: 1 data buffer(s) still allocated".to_string()]
    );
    // A cycle limit stops a run that would go on, and says so.
    let mut m = machine(1, |cx, _| cx.busy(Cycles(10)));
    m.post(NodeId(0), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
        .unwrap();
    m.post(NodeId(0), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
        .unwrap();
    let r = m.run_until(Some(Cycles(5)));
    assert!(r.limit_reached);
    assert_eq!(r.stuck.len(), 1, "{:?}", r.stuck);
    assert_eq!(
        r.stuck[0],
        "node 0: 1 message(s) in the processor queue (first: type 1 for go, from node 0, since cycle 0)"
    );
}

#[test]
fn the_inbox_can_start_a_speculative_read_at_dispatch() {
    fn spec(cx: &mut Cx<'_, Seen>, _: &Msg) {
        cx.instr(20); // 10 cycles of work overlap the read
        let (b, t) = cx.speculative_read().expect("the route asked for one");
        cx.wait(t);
        assert_eq!(cx.buffer(b).unwrap()[3], 0x5A, "the line's bytes");
        cx.free_buffer(b).unwrap();
        let now = cx.now().0;
        cx.state().at.push(("spec", now, 0));
    }
    fn plain(cx: &mut Cx<'_, Seen>, m: &Msg) {
        cx.instr(20);
        assert!(cx.speculative_read().is_none());
        let b = cx.alloc_buffer().unwrap();
        let t = cx.mem_read(m.addr, b).unwrap();
        cx.wait(t);
        cx.free_buffer(b).unwrap();
        let now = cx.now().0;
        cx.state().at.push(("plain", now, 0));
    }
    let mut b = MagicBuilder::new(raw(), 1);
    let s = b.handler("spec", spec);
    let p = b.handler("plain", plain);
    // One message type, two regions, two handlers: the jump table's two indices.
    let speculative = magic::Dispatch {
        speculative_read: true,
        ..Default::default()
    };
    b.route_with(GO, Region::Normal, s, speculative)
        .route(GO, Region::Io, p);
    let mut m = b.build(|_| Seen::default()).unwrap();
    let a = PAddr::new(Region::Normal, NodeId(0), 0x400);
    m.memory_mut(NodeId(0)).store_line(a.line(), &[0x5A; 128]);
    m.post(
        NodeId(0),
        Cycles(0),
        Msg::new(GO, NodeId(0), NodeId(0)).addr(a),
    )
    .unwrap();
    m.post(
        NodeId(0),
        Cycles(100),
        Msg::new(GO, NodeId(0), NodeId(0)).addr(a.with_region(Region::Io)),
    )
    .unwrap();
    assert!(m.run().is_clean());
    // Speculative: line in at 29 although the handler only asked at 10.
    // Plain: asked at 110, in at 110 + 29.
    assert_eq!(
        m.state(NodeId(0)).at,
        vec![("spec", 29, 0), ("plain", 139, 0)]
    );
    let l = m.ledger();
    assert_eq!(l.handler(Some(0), "spec").unwrap().stats.instructions, 20);
    assert_eq!(l.handler(Some(0), "spec").unwrap().stats.wait, 19);
}

#[test]
fn inbox_priority_is_a_parameter() {
    fn note(cx: &mut Cx<'_, Seen>, m: &Msg) {
        cx.busy(Cycles(2));
        let now = cx.now().0;
        cx.state().at.push(("note", now, m.args[0]));
    }
    fn first(cx: &mut Cx<'_, Seen>, _: &Msg) {
        // Put one message on the software queue and one in the network queue.
        cx.reschedule(Msg::new(STEP, cx.node(), cx.node()).args([1, 0, 0]))
            .unwrap();
        cx.send(Msg::new(STEP, cx.node(), cx.node()).args([2, 0, 0]), None)
            .unwrap();
    }
    let order = |priority: [magic::InQueue; 4]| {
        let params = MagicParams {
            inbox_priority: priority,
            ..MagicParams::default()
        };
        let mut b = MagicBuilder::new(params, 1);
        let f = b.handler("first", first);
        let n = b.handler("note", note);
        b.route_any(GO, f).route_any(STEP, n);
        let mut m = b.build(|_| Seen::default()).unwrap();
        m.post(NodeId(0), Cycles(0), Msg::new(GO, NodeId(0), NodeId(0)))
            .unwrap();
        assert!(m.run().is_clean());
        m.state(NodeId(0))
            .at
            .iter()
            .map(|a| a.2)
            .collect::<Vec<_>>()
    };
    use magic::InQueue::*;
    assert_eq!(
        order([NetReply, NetRequest, Software, Processor]),
        vec![2, 1]
    );
    assert_eq!(
        order([Software, NetReply, NetRequest, Processor]),
        vec![1, 2]
    );
    let bad = MagicParams {
        inbox_priority: [Software; 4],
        ..MagicParams::default()
    };
    assert!(MagicBuilder::<Seen>::new(bad, 1)
        .build(|_| Seen::default())
        .is_err());
}

#[test]
fn magic_drives_through_the_controller_trait() {
    use magic::{Controller, Time};
    fn echo(cx: &mut Cx<'_, Seen>, m: &Msg) {
        cx.instr(8);
        let reply = Msg {
            args: [m.args[0] + 1, 0, 0],
            ..*m
        };
        cx.to_processor(reply, None).unwrap();
    }
    let mut b = MagicBuilder::new(raw(), 2);
    let h = b.handler("echo", echo);
    b.route_any(GO, h);
    let mut m = b.build(|_| Seen::default()).unwrap();
    let c: &mut dyn Controller = &mut m;
    assert_eq!((c.name(), c.node_count()), ("magic", 2));
    c.post(
        NodeId(1),
        Time::from_cycles(Cycles(5)),
        Msg::new(GO, NodeId(1), NodeId(1)).args([41, 0, 0]),
    )
    .unwrap();
    assert!(c
        .post(NodeId(2), Time::ZERO, Msg::new(GO, NodeId(0), NodeId(0)))
        .is_err());
    let r = c.run(None);
    assert!(r.is_clean());
    let got = c.take_delivered(NodeId(1));
    assert_eq!(got.len(), 1);
    // Handler 5..9 (8 instructions, dual issue), then 6 cycles across the
    // processor interface.
    assert_eq!(
        (got[0].0, got[0].1.args[0]),
        (Time::from_cycles(Cycles(15)), 42)
    );
    assert_eq!(c.ledger().handler(Some(1), "echo").unwrap().stats.busy, 4);
}

#[test]
fn the_inbox_and_outbox_stages_add_latency_not_occupancy() {
    fn go(cx: &mut Cx<'_, Seen>, _: &Msg) {
        let m = Msg::new(STEP, cx.node(), NodeId(1)).args([5, 0, 0]);
        cx.send(m, None).unwrap();
    }
    let params = MagicParams {
        inbox_dispatch: Cycles(3),
        outbox_latency: Cycles(2),
        ..MagicParams::default()
    };
    let mut b = MagicBuilder::new(params, 2);
    let h = b.handler("go", go);
    let s = b.handler("step", on_step);
    b.route_any(GO, h).route_any(STEP, s);
    let mut m = b.build(|_| Seen::default()).unwrap();
    go_at_zero(&mut m);
    // Posted at 0, through the inbox at 3; the send at 3 goes on the wire at
    // 5, its header is in at 5 + 8 + 22 = 35, through the inbox at 38, and
    // the step handler's one cycle ends at 39.
    assert_eq!(m.state(NodeId(1)).at, vec![("step", 39, 5)]);
    let l = m.ledger();
    assert_eq!(l.handler(Some(0), "go").unwrap().stats.busy, 1);
    assert_eq!(l.handler(Some(1), "step").unwrap().stats.busy, 1);
}

#[test]
fn a_route_given_twice_is_refused_naming_both_handlers() {
    fn a(_: &mut magic::Cx<'_, ()>, _: &Msg) {}
    fn b(_: &mut magic::Cx<'_, ()>, _: &Msg) {}
    let mut bld = magic::MagicBuilder::<()>::new(magic::MagicParams::default(), 1);
    let ha = bld.handler("first", a);
    let hb = bld.handler("second", b);
    bld.route_any(MsgType(9), ha);
    // The same handler again is no conflict.
    bld.route(MsgType(9), magic::Region::Normal, ha);
    bld.route(MsgType(9), magic::Region::Message, hb);
    let e = bld.build(|_| ()).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "type 9 in the Message region is routed to both first and second"
    );
}
