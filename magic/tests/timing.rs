//! Exact timing of the node hardware, seen from handlers on a small machine;
//! and the checked dispatch table: conflicting routes and claims refused at
//! build, unrouted messages reported by the run (more in `routes`, with the
//! misuse that does not compile); machine parameters at their extremes
//! (`params`); random handler programs on machines at their extremes
//! (`props`).

#[path = "timing/clean.rs"]
mod clean;
#[path = "timing/params.rs"]
mod params;
#[path = "timing/props.rs"]
mod props;
#[path = "timing/routes.rs"]
mod routes;

use magic::testing::Bench;
use magic::{
    messages, BuildError, Cx, Cycles, DecodeError, Dispatch, HandlerFn, Install, Lane, LineState,
    Magic, MagicParams, Msg, NodeId, NodeState, PAddr, Protocol, Region, Unit,
};

messages! {
    /// The tests' messages.
    enum T: TKind {
        /// Start the test's handler.
        Go,
        /// A line of data; the tag tells the sends apart.
        Data { tag: u64 },
        /// A step; the tag tells the steps apart.
        Step { tag: u64 },
    }
}

messages! {
    /// A message type no test protocol installs.
    enum U: UKind {
        /// Its only kind.
        Lost,
    }
}

/// What the test handlers observed.
#[derive(Default, Debug)]
struct Seen {
    at: Vec<(&'static str, u64, u64)>,
    bytes: Vec<u8>,
    allocs: Vec<bool>,
}

impl NodeState for Seen {}

type C<'a> = Cx<'a, Seen>;

/// A handler of kind `V` and its name, which is its function's.
type Named<V> = (&'static str, HandlerFn<Seen, V>);

macro_rules! named {
    ($f:ident) => {
        (stringify!($f), $f as HandlerFn<Seen, _>)
    };
}

/// The tests' protocol: the test's own handler for `Go`, the `data`
/// handler for `Data`, and a handler for `Step`.
#[derive(Clone, Copy)]
struct Timing {
    go: Named<t::Go>,
    step: Named<t::Step>,
    data: Dispatch,
}

impl Timing {
    /// `go` for `Go`, the `step` handler for `Step`, data cut through.
    fn with(go: Named<t::Go>) -> Timing {
        Timing {
            go,
            step: named!(step),
            data: Dispatch::default(),
        }
    }
}

impl Protocol for Timing {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "timing"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let go = b.handler(self.go.0, self.go.1);
        let d = b.handler("data", data);
        let s = b.handler(self.step.0, self.step.1);
        b.route_any(go).route_any_with(d, self.data).route_any(s);
    }
}

/// The hardware's own timing: no inbox or outbox stage latency, so each test
/// sees one unit's figure alone (the stages have a test of their own).
fn raw() -> MagicParams {
    MagicParams {
        inbox_dispatch: Cycles(0),
        outbox_latency: Cycles(0),
        ..MagicParams::default()
    }
}

fn machine(nodes: u32, p: Timing) -> Magic<Seen> {
    Magic::with(raw(), nodes, &p).unwrap()
}

fn bench(nodes: u32, go: Named<t::Go>) -> Bench<Seen> {
    Bench::with_params(raw(), nodes, &Timing::with(go)).unwrap()
}

/// Notes when it was dispatched, then waits for the whole line and notes that.
fn data(cx: &mut C<'_>, _m: &Msg, t::Data { tag }: t::Data) {
    let t = cx.now().0;
    let b = cx.msg_buffer().expect("data message");
    let first = cx.buffer(b).unwrap()[0];
    let ticket = cx.buffer_ticket(b).unwrap();
    cx.wait(ticket);
    let full = cx.now().0;
    let s = cx.state();
    s.at.push(("data", t, tag));
    s.at.push(("line", full, ticket.first.0));
    s.bytes.push(first);
}

fn step(cx: &mut C<'_>, _m: &Msg, t::Step { tag }: t::Step) {
    cx.busy(Cycles(1));
    let t = cx.now().0;
    cx.state().at.push(("step", t, tag));
}

/// The processor of node 0 hands its MAGIC a `Go` at cycle 0.
fn post_go(m: &mut Magic<Seen>) {
    let go = m.msg(NodeId(0), T::Go);
    m.post(NodeId(0), Cycles(0), go).unwrap();
}

fn go_at_zero(m: &mut Magic<Seen>) {
    post_go(m);
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
    ledger_true(m);
}

/// Run node 0's `go` alone on a bench of `nodes` nodes, then to the end.
fn shot(b: &mut Bench<Seen>) -> magic::testing::Shot {
    let go = b.msg(NodeId(0), T::Go);
    let shot = b.inject(NodeId(0), go).unwrap();
    let r = b.run(Cycles(10_000));
    assert!(r.is_clean(), "{:?}", r.stuck);
    ledger_true(b.machine());
    shot
}

/// The machine's ledger keeps its invariants, per node and summed.
fn ledger_true<S: NodeState>(m: &Magic<S>) {
    let w = m.params().pp_issue_width;
    let l = m.ledger();
    if let Err(e) = l.invariants(w) {
        panic!("{e}\n{}", l.render());
    }
    let s = l.summed();
    if let Err(e) = s.invariants(w) {
        panic!("summed: {e}\n{}", s.render());
    }
}

#[test]
fn a_line_from_memory_is_in_at_cycle_29() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        let b = cx.alloc_buffer().unwrap();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x1000);
        let t = cx.mem_read(a, b).unwrap();
        cx.wait(t);
        let now = cx.now().0;
        let first = cx.buffer(b).unwrap()[5];
        cx.state().at.push(("read", now, first as u64));
        cx.free_buffer(b).unwrap();
    }
    let mut b = bench(1, named!(go));
    let mut line = [0u8; 128];
    line[5] = 99;
    b.machine()
        .memory_mut(NodeId(0))
        .unwrap()
        .store_line(PAddr::new(Region::Normal, NodeId(0), 0x1000).line(), &line);
    let s = shot(&mut b);
    assert_eq!(s.handler, "timing.go");
    assert_eq!((s.stats.busy, s.stats.wait), (29, 29));
    let m = b.machine();
    assert_eq!(m.state(NodeId(0)).unwrap().at, vec![("read", 29, 99)]);
    let l = m.ledger();
    let go_row = l.handler(Some(0), "timing.go").unwrap();
    assert_eq!((go_row.stats.busy, go_row.stats.wait), (29, 29));
    assert_eq!(l.unit(Some(0), Unit::Memory).unwrap().busy, 16);
}

#[test]
fn a_dirty_line_from_the_processor_cache_is_in_at_cycle_43() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
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
    let mut b = bench(1, named!(go));
    let a = PAddr::new(Region::Normal, NodeId(0), 0x2000);
    b.machine()
        .pcache_mut(NodeId(0))
        .unwrap()
        .set(a, LineState::Dirty, [0xAB; 128]);
    shot(&mut b);
    let m = b.machine();
    assert_eq!(
        m.state(NodeId(0)).unwrap().at,
        vec![("state", 23, 28), ("line", 43, 0xAB)]
    );
    assert_eq!(m.pcache(NodeId(0)).unwrap().state(a), LineState::Clean);
}

#[test]
fn a_transfer_behind_another_handlers_waits_and_the_ledger_counts_the_wait() {
    // `go` reads two lines back to back (the second behind its own first:
    // its own pace), asks the processor cache for a clean line's state
    // (the interface held to 23) and hands the PP to `read`.
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        let b = cx.alloc_buffer().unwrap();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x1000);
        let t1 = cx.mem_read(a, b).unwrap();
        let t2 = cx.mem_read(a, b).unwrap();
        assert_eq!((t1.first, t2.first), (Cycles(14), Cycles(30)));
        cx.pc_get(a, None, LineState::Uncached).unwrap();
        cx.free_buffer_after(b, t2).unwrap();
        assert_eq!(cx.unit_waits(), (Cycles(0), Cycles(0)));
        cx.reschedule(cx.msg(T::Step { tag: 0 })).unwrap();
        cx.busy(Cycles(1));
    }
    // Dispatched when `go` ends at 1, after a cycle in the software queue:
    // its read wants the bus at 15 and has it at 46, its intervention the
    // interface at 1 and has it at 23.
    fn read(cx: &mut C<'_>, _: &Msg, _: t::Step) {
        let queued = cx.queued().0;
        let b = cx.alloc_buffer().unwrap();
        let a = PAddr::new(Region::Normal, NodeId(0), 0x2000);
        let t = cx.mem_read(a, b).unwrap();
        let iv = cx.pc_get(a, None, LineState::Uncached).unwrap();
        cx.free_buffer_after(b, t).unwrap();
        let (m, p) = cx.unit_waits();
        let s = cx.state();
        s.at.push(("queued", queued, 0));
        s.at.push(("read", t.first.0, m.0));
        s.at.push(("state", iv.state_at.0, p.0));
    }
    let mut m = machine(
        1,
        Timing {
            step: named!(read),
            ..Timing::with(named!(go))
        },
    );
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(0)).unwrap().at,
        vec![("queued", 1, 0), ("read", 46, 31), ("state", 46, 22)]
    );
    let l = m.ledger();
    let waiting = |u| l.unit(Some(0), u).unwrap().waiting;
    assert_eq!(
        (
            waiting(Unit::Inbox),
            waiting(Unit::Memory),
            waiting(Unit::PcacheIf)
        ),
        (1, 31, 22)
    );
}

#[test]
fn a_full_line_packet_arrives_40_plus_22_cycles_after_it_is_sent() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        let b = cx.alloc_buffer().unwrap();
        cx.buffer_mut(b).unwrap()[0] = 7;
        let m = cx.msg(T::Data { tag: 1 }).to(NodeId(1));
        cx.send(m, Some(b)).unwrap();
    }
    // Cut through: the handler starts when the 32-byte header is in
    // (8 + 22), the first doubleword follows 2 cycles later, the whole packet
    // is in at 40 + 22.
    let mut m = machine(2, Timing::with(named!(go)));
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(1)).unwrap().at,
        vec![("data", 30, 1), ("line", 62, 32)]
    );
    assert_eq!(m.state(NodeId(1)).unwrap().bytes, vec![7]);
    let l = m.ledger();
    assert_eq!(l.unit(Some(0), Unit::NetOut).unwrap().busy, 40);
    assert_eq!(l.handler(Some(1), "timing.data").unwrap().stats.wait, 32);

    // Store and forward: dispatched when the last byte is in.
    let whole = Timing {
        data: Dispatch {
            whole_packet: true,
            ..Default::default()
        },
        ..Timing::with(named!(go))
    };
    let mut m = machine(2, whole);
    go_at_zero(&mut m);
    assert_eq!(
        m.state(NodeId(1)).unwrap().at,
        vec![("data", 62, 1), ("line", 62, 32)]
    );
}

#[test]
fn a_handler_sending_into_a_full_outbox_lane_stalls_and_the_stall_is_charged() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        for k in 0..4 {
            let m = cx.msg(T::Step { tag: k }).to(NodeId(1)).len(128);
            cx.send(m, None).unwrap();
        }
        // A reply does not wait for the full request lane.
        let reply = cx.msg(T::Step { tag: 9 }).to(NodeId(1)).lane(Lane::Reply);
        cx.send(reply, None).unwrap();
    }
    let mut m = machine(2, Timing::with(named!(go)));
    go_at_zero(&mut m);
    // One on the wire, two waiting: the fourth waits until the first is gone.
    let l = m.ledger();
    let row = l.handler(Some(0), "timing.go").unwrap();
    assert_eq!((row.stats.busy, row.stats.outbox_stall), (40, 40));
    assert_eq!(l.unit(Some(0), Unit::Outbox).unwrap().waiting, 40);
    // Headers arrive 30 cycles after each start: 0, 40, 80, 120; the reply is
    // on the wire behind them, from 160 (8 cycles: header only).
    let at: Vec<_> = m
        .state(NodeId(1))
        .unwrap()
        .at
        .iter()
        .map(|&(_, t, k)| (t, k))
        .collect();
    assert_eq!(at, vec![(31, 0), (71, 1), (111, 2), (151, 3), (191, 9)]);
}

#[test]
fn data_buffer_exhaustion_is_seen_by_the_handler() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
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
    let mut b = bench(1, named!(go));
    shot(&mut b);
    let mut want = vec![true; 16];
    want.extend([false, true]);
    assert_eq!(b.machine().state(NodeId(0)).unwrap().allocs, want);
}

#[test]
fn the_software_queue_is_first_in_first_out_and_yields_to_the_network() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        for k in 0..3 {
            cx.reschedule(cx.msg(T::Step { tag: k })).unwrap();
        }
        // Loopback on the request lane: arrives in the network queue now.
        cx.send(cx.msg(T::Step { tag: 100 }), None).unwrap();
        cx.busy(Cycles(5));
    }
    let mut m = machine(1, Timing::with(named!(go)));
    go_at_zero(&mut m);
    let order: Vec<_> = m
        .state(NodeId(0))
        .unwrap()
        .at
        .iter()
        .map(|&(_, t, k)| (t, k))
        .collect();
    assert_eq!(order, vec![(6, 100), (7, 0), (8, 1), (9, 2)]);
}

/// A protocol that installs `T` but routes only `Go`.
struct GoOnly(&'static str);

fn go(_: &mut C<'_>, _: &Msg, _: t::Go) {}

impl Protocol for GoOnly {
    type Node = Seen;

    fn name(&self) -> &'static str {
        self.0
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let h = b.handler("go", go);
        b.route_any(h);
    }
}

#[test]
fn a_message_with_no_route_is_dropped_counted_and_named() {
    let mut m = Magic::with(raw(), 1, &GoOnly("timing")).unwrap();
    let step = m.msg(NodeId(0), T::Step { tag: 1 });
    m.post(NodeId(0), Cycles(0), step).unwrap();
    m.post(NodeId(0), Cycles(1), step).unwrap();
    // A type the machine does not know at all reaches no handler either.
    let lost = m.msg(NodeId(0), U::Lost);
    m.post(NodeId(0), Cycles(2), lost).unwrap();
    let r = m.run();
    // Counted, and the run is not clean: it names the protocol, the type
    // and the kind.
    assert!(!r.is_clean());
    assert!(r.stuck.is_empty(), "{:?}", r.stuck);
    assert_eq!(
        r.refused,
        [
            "node 0: 2 message(s) of timing T::Step had no route (dropped)",
            "node 0: 1 message(s) of a type no installed protocol owns had no route (dropped)"
        ]
    );
    assert_eq!(m.drops(NodeId(0)).unwrap().unhandled, 3);
    ledger_true(&m);
    assert!(m.post(NodeId(5), Cycles(5), step).is_err());

    // The bench says so too, instead of a handler's shot.
    let mut b = Bench::with_params(raw(), 1, &GoOnly("timing")).unwrap();
    let step = b.msg(NodeId(0), T::Step { tag: 1 });
    let e = b.inject(NodeId(0), step).unwrap_err();
    assert!(e.to_string().contains("timing T::Step had no route"), "{e}");
}

#[test]
fn a_run_that_ends_with_work_pending_says_what_is_stuck() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        // Takes a buffer and never gives it back.
        let _ = cx.alloc_buffer();
    }
    let mut b = bench(1, named!(go));
    let msg = b.msg(NodeId(0), T::Go);
    b.inject(NodeId(0), msg).unwrap();
    let r = b.run(Cycles(1000));
    assert_eq!(
        r.stuck,
        vec!["node 0: 1 data buffer(s) still allocated".to_string()]
    );
    // A cycle limit stops a run that would go on, and says so.
    fn busy_ten(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        cx.busy(Cycles(10));
    }
    let mut m = machine(1, Timing::with(named!(busy_ten)));
    post_go(&mut m);
    post_go(&mut m);
    let r = m.run_until(Some(Cycles(5)));
    assert!(r.limit_reached);
    // The handler runs past the limit: the ledger counts it whole.
    ledger_true(&m);
    assert_eq!(r.stuck.len(), 1, "{:?}", r.stuck);
    assert_eq!(
        r.stuck[0],
        "node 0: 1 message(s) in the processor queue (first: timing T::Go for timing.busy_ten, from node 0, since cycle 0)"
    );
}

/// One message kind, two regions, two handlers: the jump table's two indices.
struct Speculative;

fn spec(cx: &mut C<'_>, _: &Msg, _: t::Go) {
    cx.instr(20); // 10 cycles of work overlap the read
    let (b, t) = cx.speculative_read().expect("the route asked for one");
    cx.wait(t);
    assert_eq!(cx.buffer(b).unwrap()[3], 0x5A, "the line's bytes");
    cx.free_buffer(b).unwrap();
    let now = cx.now().0;
    cx.state().at.push(("spec", now, 0));
}

fn plain(cx: &mut C<'_>, m: &Msg, _: t::Go) {
    cx.instr(20);
    assert!(cx.speculative_read().is_none());
    let b = cx.alloc_buffer().unwrap();
    let t = cx.mem_read(m.addr, b).unwrap();
    cx.wait(t);
    cx.free_buffer(b).unwrap();
    let now = cx.now().0;
    cx.state().at.push(("plain", now, 0));
}

impl Protocol for Speculative {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "timing"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let s = b.handler("spec", spec);
        let p = b.handler("plain", plain);
        let speculative = Dispatch {
            speculative_read: true,
            ..Default::default()
        };
        b.route_with(Region::Normal, s, speculative)
            .route(Region::Io, p);
    }
}

#[test]
fn the_inbox_can_start_a_speculative_read_at_dispatch() {
    let mut m = Magic::with(raw(), 1, &Speculative).unwrap();
    let a = PAddr::new(Region::Normal, NodeId(0), 0x400);
    m.memory_mut(NodeId(0))
        .unwrap()
        .store_line(a.line(), &[0x5A; 128]);
    let normal = m.msg(NodeId(0), T::Go).addr(a);
    m.post(NodeId(0), Cycles(0), normal).unwrap();
    let io = m.msg(NodeId(0), T::Go).addr(a.with_region(Region::Io));
    m.post(NodeId(0), Cycles(100), io).unwrap();
    assert!(m.run().is_clean());
    // Speculative: line in at 29 although the handler only asked at 10.
    // Plain: asked at 110, in at 110 + 29.
    assert_eq!(
        m.state(NodeId(0)).unwrap().at,
        vec![("spec", 29, 0), ("plain", 139, 0)]
    );
    ledger_true(&m);
    let l = m.ledger();
    let row = l.handler(Some(0), "timing.spec").unwrap();
    assert_eq!(row.stats.instructions, 20);
    assert_eq!(row.stats.wait, 19);
}

#[test]
fn inbox_priority_is_a_parameter() {
    fn note(cx: &mut C<'_>, _: &Msg, t::Step { tag }: t::Step) {
        cx.busy(Cycles(2));
        let now = cx.now().0;
        cx.state().at.push(("note", now, tag));
    }
    fn first(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        // Put one message on the software queue and one in the network queue.
        cx.reschedule(cx.msg(T::Step { tag: 1 })).unwrap();
        cx.send(cx.msg(T::Step { tag: 2 }), None).unwrap();
    }
    let p = Timing {
        step: named!(note),
        ..Timing::with(named!(first))
    };
    let order = |priority: [magic::InQueue; 4]| {
        let params = MagicParams {
            inbox_priority: priority,
            ..MagicParams::default()
        };
        let mut m = Magic::with(params, 1, &p).unwrap();
        post_go(&mut m);
        assert!(m.run().is_clean());
        ledger_true(&m);
        m.state(NodeId(0))
            .unwrap()
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
    assert!(matches!(
        Magic::with(bad, 1, &p),
        Err(BuildError::Params(_))
    ));
}

#[test]
fn magic_drives_through_the_controller_trait() {
    use magic::{Controller, Time};
    fn echo(cx: &mut C<'_>, _: &Msg, t::Step { tag }: t::Step) {
        cx.instr(8);
        let reply = cx.msg(T::Step { tag: tag + 1 });
        cx.to_processor(reply, None).unwrap();
    }
    let p = Timing {
        step: named!(echo),
        ..Timing::with(named!(go))
    };
    let mut m = Magic::with(raw(), 2, &p).unwrap();
    let ask = m.msg(NodeId(1), T::Step { tag: 41 });
    let go = m.msg(NodeId(0), T::Go);
    let c: &mut dyn Controller = &mut m;
    assert_eq!((c.name(), c.node_count()), ("magic", 2));
    c.post(NodeId(1), Time::from_cycles(Cycles(5)), ask)
        .unwrap();
    assert!(c.post(NodeId(2), Time::ZERO, go).is_err());
    let r = c.run(None);
    assert!(r.is_clean());
    let got = c.take_delivered(NodeId(1)).unwrap();
    assert_eq!(got.len(), 1);
    assert!(c.take_delivered(NodeId(2)).is_err(), "past the machine");
    assert_eq!(
        c.ledger()
            .handler(Some(1), "timing.echo")
            .unwrap()
            .stats
            .busy,
        4
    );
    // Handler 5..9 (8 instructions, dual issue), then 6 cycles across the
    // processor interface.
    assert_eq!(
        (got[0].0, m.decode::<T>(&got[0].1)),
        (Time::from_cycles(Cycles(15)), Ok(T::Step { tag: 42 }))
    );
}

#[test]
fn the_inbox_and_outbox_stages_add_latency_not_occupancy() {
    fn go(cx: &mut C<'_>, _: &Msg, _: t::Go) {
        let m = cx.msg(T::Step { tag: 5 }).to(NodeId(1));
        cx.send(m, None).unwrap();
    }
    let params = MagicParams {
        inbox_dispatch: Cycles(3),
        outbox_latency: Cycles(2),
        ..MagicParams::default()
    };
    let mut m = Magic::with(params, 2, &Timing::with(named!(go))).unwrap();
    go_at_zero(&mut m);
    // Posted at 0, through the inbox at 3; the send at 3 goes on the wire at
    // 5, its header is in at 5 + 8 + 22 = 35, through the inbox at 38, and
    // the step handler's one cycle ends at 39.
    assert_eq!(m.state(NodeId(1)).unwrap().at, vec![("step", 39, 5)]);
    let l = m.ledger();
    assert_eq!(l.handler(Some(0), "timing.go").unwrap().stats.busy, 1);
    assert_eq!(l.handler(Some(1), "timing.step").unwrap().stats.busy, 1);
}

/// Two handlers for one kind in one region.
struct TwoForOne;

fn first(_: &mut C<'_>, _: &Msg, _: t::Go) {}
fn second(_: &mut C<'_>, _: &Msg, _: t::Go) {}

impl Protocol for TwoForOne {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "twice"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let a = b.handler("first", first);
        let c = b.handler("second", second);
        b.route_any(a);
        b.route(Region::Message, c);
    }
}

#[test]
fn a_route_given_twice_is_refused_naming_both_handlers() {
    let e = Magic::with(raw(), 1, &TwoForOne).err().expect("refused");
    assert_eq!(
        e,
        BuildError::RouteConflict {
            message: "twice T::Go".into(),
            region: Region::Message,
            first: "twice.first".into(),
            second: "twice.second".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "twice T::Go in the Message region is routed to both twice.first and twice.second"
    );
}

#[test]
fn two_protocols_installing_one_message_type_are_refused_naming_both() {
    let e = Magic::pair(raw(), 1, &GoOnly("one"), &GoOnly("other"))
        .err()
        .expect("refused");
    assert_eq!(
        e,
        BuildError::TypeClaimed {
            message: "T",
            first: "one",
            second: "other",
        }
    );
    assert_eq!(
        e.to_string(),
        "protocols one and other both install the message type T"
    );
}

#[test]
fn a_message_decoded_as_the_wrong_type_is_an_error_naming_both() {
    let m = Magic::with(raw(), 1, &GoOnly("timing")).unwrap();
    let go = m.msg(NodeId(0), T::Go);
    assert_eq!(m.decode::<T>(&go), Ok(T::Go));
    let e = m.decode::<U>(&go).unwrap_err();
    assert_eq!(
        e,
        DecodeError::WrongType {
            expected: "U",
            found: "timing T::Go".into(),
        }
    );
    assert_eq!(e.to_string(), "a timing T::Go decoded as U");
    // A message of a type the machine never installed.
    let lost = m.msg(NodeId(0), U::Lost);
    assert_eq!(
        m.decode::<T>(&lost),
        Err(DecodeError::WrongType {
            expected: "T",
            found: "a type no installed protocol owns".into(),
        })
    );
}
