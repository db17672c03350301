//! Machine parameters at their extremes: a build is `Ok` exactly when every
//! field is in its range, an `Err` names the field otherwise, and a machine
//! built from any parameters in range runs a round trip to its end without
//! panicking. Deadlines at the end of time are served, not overflowed.

use magic::testing::Bench;
use magic::{
    messages, BuildError, Controller, Cx, Cycles, Halt, InQueue, Install, LineState, Magic,
    MagicParams, Msg, NodeId, PAddr, Protocol, Region, Time,
};
use proptest::prelude::*;

messages! {
    /// The round trip's messages.
    enum R: RKind {
        /// The processor asks its MAGIC to start.
        Ask,
        /// A line for the other node.
        There => Request,
        /// The answer, back to the asker.
        Back => Reply,
        /// A continuation through the software queue.
        Later,
    }
}

fn line(n: u32) -> PAddr {
    PAddr::new(Region::Normal, NodeId(n), 0x1000)
}

/// Node 0: read a line, ask the processor cache about it, send it over.
fn ask(cx: &mut Cx<'_, ()>, _: &Msg, _: r::Ask) {
    cx.instr(7);
    cx.load(0x40);
    let Some(b) = cx.alloc_buffer() else {
        let m = cx.msg(R::There).to(NodeId(1)).addr(line(1));
        let _ = cx.send(m, None);
        return;
    };
    if let Ok(t) = cx.mem_read(line(0), b) {
        cx.wait(t);
    }
    let _ = cx.pc_get(line(0), None, LineState::Clean);
    let m = cx.msg(R::There).to(NodeId(1)).addr(line(1));
    if cx.send(m, Some(b)).is_err() {
        let _ = cx.free_buffer(b);
    }
}

/// Node 1: continue later through the software queue.
fn there(cx: &mut Cx<'_, ()>, _: &Msg, _: r::There) {
    cx.instr(3);
    cx.store(0x80);
    let m = cx.msg(R::Later).addr(line(1));
    if cx.reschedule(m).is_err() {
        later(cx, &m, r::Later);
    }
}

/// Node 1, later: answer node 0.
fn later(cx: &mut Cx<'_, ()>, _: &Msg, _: r::Later) {
    cx.instr(2);
    let m = cx.msg(R::Back).to(NodeId(0));
    let _ = cx.send(m, None);
}

/// Node 0: hand the answer to the processor.
fn back(cx: &mut Cx<'_, ()>, m: &Msg, _: r::Back) {
    cx.instr(1);
    let _ = cx.to_processor(*m, None);
}

/// A tiny protocol that touches every unit a parameter times.
struct RoundTrip;

impl Protocol for RoundTrip {
    type Node = ();
    fn name(&self) -> &'static str {
        "round_trip"
    }
    fn node(&self, _: NodeId, _: u32) {}
    fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
        let (a, t, l, k) = (
            b.handler("ask", ask),
            b.handler("there", there),
            b.handler("later", later),
            b.handler("back", back),
        );
        b.route_any(a).route_any(t).route_any(l).route_any(k);
    }
}

/// Every field's name, as the errors spell them.
const FIELDS: [&str; 19] = [
    "mem_first_dword",
    "mem_write_latency",
    "pc_state",
    "pc_first_word",
    "pc_line",
    "link_bytes_per_cycle",
    "header_bytes",
    "net_latency",
    "outbox_slots",
    "data_buffers",
    "swq_capacity",
    "inbox_priority",
    "inbox_dispatch",
    "outbox_latency",
    "pi_in",
    "pi_out",
    "pp_issue_width",
    "dcache_lines",
    "mem_bytes",
];

/// 0, 1, the default, the maximum, one past it, the type's end, or anything.
fn extreme(default: u64, max: u64, type_max: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(default),
        Just(max),
        Just(max.saturating_add(1).min(type_max)),
        Just(type_max),
        0..=type_max,
        0..=max,
    ]
}

fn cycles(default: u64) -> impl Strategy<Value = Cycles> {
    extreme(default, magic::params::MAX_LATENCY.0, u64::MAX).prop_map(Cycles)
}

fn count(default: usize, max: usize) -> impl Strategy<Value = usize> {
    extreme(default as u64, max as u64, usize::MAX as u64).prop_map(|v| v as usize)
}

fn priority() -> impl Strategy<Value = [InQueue; 4]> {
    let q = prop_oneof![
        Just(InQueue::NetReply),
        Just(InQueue::NetRequest),
        Just(InQueue::Software),
        Just(InQueue::Processor),
    ];
    prop_oneof![
        Just(InQueue::ALL),
        Just(InQueue::ALL).prop_shuffle(),
        [q.clone(), q.clone(), q.clone(), q],
    ]
    .prop_map(|v| v)
}

fn any_params() -> impl Strategy<Value = MagicParams> {
    let d = MagicParams::default();
    (
        (
            cycles(d.mem_first_dword.0),
            cycles(d.mem_write_latency.0),
            cycles(d.pc_state.0),
            cycles(d.pc_first_word.0),
            cycles(d.pc_line.0),
            extreme(4, MagicParams::MAX_LINK_BYTES_PER_CYCLE, u64::MAX),
            extreme(32, MagicParams::MAX_HEADER_BYTES, u64::MAX),
            cycles(d.net_latency.0),
            count(2, MagicParams::MAX_OUTBOX_SLOTS),
            count(16, MagicParams::MAX_DATA_BUFFERS),
        ),
        (
            count(1024, MagicParams::MAX_SWQ_CAPACITY),
            priority(),
            cycles(d.inbox_dispatch.0),
            cycles(d.outbox_latency.0),
            cycles(d.pi_in.0),
            cycles(d.pi_out.0),
            extreme(2, MagicParams::MAX_PP_ISSUE_WIDTH as u64, u32::MAX as u64),
            count(1024, MagicParams::MAX_DCACHE_LINES),
            extreme(64 << 20, MagicParams::MAX_MEM_BYTES, u64::MAX),
            any::<bool>(),
        ),
    )
        .prop_map(|(a, b)| MagicParams {
            mem_first_dword: a.0,
            mem_write_latency: a.1,
            pc_state: a.2,
            pc_first_word: a.3,
            pc_line: a.4,
            link_bytes_per_cycle: a.5,
            header_bytes: a.6,
            net_latency: a.7,
            outbox_slots: a.8,
            data_buffers: a.9,
            swq_capacity: b.0,
            inbox_priority: b.1,
            inbox_dispatch: b.2,
            outbox_latency: b.3,
            pi_in: b.4,
            pi_out: b.5,
            pp_issue_width: b.6 as u32,
            dcache_lines: b.7,
            mem_bytes: b.8,
            inbound_contention: b.9,
            budget: magic::machine::DEFAULT_BUDGET,
            trace: false,
        })
}

/// The nearest parameters in range: each field clamped into its range.
fn clamped(mut p: MagicParams) -> MagicParams {
    let max = magic::params::MAX_LATENCY;
    for c in [
        &mut p.mem_first_dword,
        &mut p.mem_write_latency,
        &mut p.pc_state,
        &mut p.net_latency,
        &mut p.inbox_dispatch,
        &mut p.outbox_latency,
        &mut p.pi_in,
        &mut p.pi_out,
    ] {
        *c = (*c).min(max);
    }
    p.pc_first_word = p.pc_first_word.min(max).max(p.pc_state);
    p.pc_line = p.pc_line.min(max).max(p.pc_first_word);
    p.link_bytes_per_cycle = p
        .link_bytes_per_cycle
        .clamp(1, MagicParams::MAX_LINK_BYTES_PER_CYCLE);
    p.header_bytes = p.header_bytes.min(MagicParams::MAX_HEADER_BYTES);
    p.outbox_slots = p.outbox_slots.clamp(1, MagicParams::MAX_OUTBOX_SLOTS);
    p.data_buffers = p.data_buffers.clamp(1, MagicParams::MAX_DATA_BUFFERS);
    p.swq_capacity = p.swq_capacity.min(MagicParams::MAX_SWQ_CAPACITY);
    let mut seen = Vec::new();
    for q in p.inbox_priority {
        if !seen.contains(&q) {
            seen.push(q);
        }
    }
    seen.extend(
        InQueue::ALL
            .iter()
            .filter(|q| !p.inbox_priority.contains(q)),
    );
    p.inbox_priority = [seen[0], seen[1], seen[2], seen[3]];
    p.pp_issue_width = p.pp_issue_width.clamp(1, MagicParams::MAX_PP_ISSUE_WIDTH);
    p.dcache_lines = p
        .dcache_lines
        .clamp(1, MagicParams::MAX_DCACHE_LINES)
        .next_power_of_two()
        .min(MagicParams::MAX_DCACHE_LINES);
    // Whole lines.
    p.mem_bytes = p
        .mem_bytes
        .clamp(MagicParams::MIN_MEM_BYTES, MagicParams::MAX_MEM_BYTES)
        / MagicParams::MIN_MEM_BYTES
        * MagicParams::MIN_MEM_BYTES;
    p
}

/// Build a 2-node machine and run the round trip: the machine's answer, or
/// the field the build refused.
fn round_trip(p: &MagicParams) -> Result<magic::RunReport, BuildError> {
    let mut m = Magic::with(p.clone(), 2, &RoundTrip)?;
    let go = m.msg(NodeId(0), R::Ask);
    m.post(NodeId(0), Cycles(0), go).expect("a fresh machine");
    let r = m.run_until(Some(Cycles(1 << 40)));
    crate::ledger_true(&m);
    Ok(r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any parameters: `Ok` exactly when they validate, else the field.
    #[test]
    fn any_parameters_build_and_run_or_name_the_field(p in any_params()) {
        match (round_trip(&p), p.validate()) {
            (Ok(r), Ok(())) => {
                prop_assert!(!r.limit_reached, "{p:?}: {r:?}");
            }
            (Err(BuildError::Params(e)), Err(v)) => {
                prop_assert_eq!(&e, &v);
                prop_assert!(FIELDS.contains(&e.field), "{e}");
                prop_assert!(e.to_string().starts_with(e.field), "{e}");
            }
            (got, v) => prop_assert!(false, "{p:?}: build {got:?}, validate {v:?}"),
        }
    }

    /// Parameters in range always build, and the round trip finishes.
    #[test]
    fn parameters_in_range_always_build_and_finish(p in any_params()) {
        let p = clamped(p);
        prop_assert_eq!(p.validate(), Ok(()), "{:?}", p);
        let r = round_trip(&p);
        prop_assert!(r.as_ref().is_ok_and(|r| !r.limit_reached), "{p:?}: {r:?}");
        let b = Bench::with_params(p.clone(), 2, &RoundTrip);
        prop_assert!(b.is_ok());
    }
}

/// The default machine's round trip, for a figure the extremes are read
/// against: it ends clean, with the answer at node 0's processor.
#[test]
fn the_round_trip_ends_clean_with_the_answer_delivered() {
    let mut m = Magic::with(MagicParams::default(), 2, &RoundTrip).unwrap();
    let go = m.msg(NodeId(0), R::Ask);
    m.post(NodeId(0), Cycles(0), go).unwrap();
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
    assert_eq!(m.take_processor_messages(NodeId(0)).unwrap().len(), 1);
}

/// Spend until the end of the model's time.
fn forever(cx: &mut Cx<'_, ()>, _: &Msg, _: r::Ask) {
    cx.busy(Cycles(u64::MAX));
    cx.busy(Cycles(u64::MAX));
    cx.wait_until(Cycles(u64::MAX));
    let m = cx.msg(R::Back).to(NodeId(1));
    let _ = cx.send(m, None);
}

struct Forever;

impl Protocol for Forever {
    type Node = ();
    fn name(&self) -> &'static str {
        "forever"
    }
    fn node(&self, _: NodeId, _: u32) {}
    fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
        let f = b.handler("forever", forever);
        let k = b.handler("back", back);
        b.route_any(f).route_any(k);
    }
}

#[test]
fn deadlines_and_handlers_at_the_end_of_time_neither_panic_nor_wrap() {
    // A bench deadline of the whole clock.
    let mut b = Bench::new(2, &RoundTrip).unwrap();
    let go = b.msg(NodeId(0), R::Ask);
    b.inject(NodeId(0), go).unwrap();
    let r = b.run(Cycles(u64::MAX));
    assert!(r.is_clean() && !r.limit_reached, "{r:?}");
    let r = b.run(Cycles(u64::MAX));
    assert!(r.is_clean());

    // Through the controller, a limit of the last tick.
    let mut m = Magic::with(MagicParams::default(), 2, &RoundTrip).unwrap();
    let go = m.msg(NodeId(0), R::Ask);
    let c: &mut dyn Controller = &mut m;
    c.post(NodeId(0), Time::ZERO, go).unwrap();
    assert!(c.post(NodeId(0), Time(u64::MAX), go).is_err());
    let r = c.run(Some(Time(u64::MAX)));
    assert!(r.is_clean() && !r.limit_reached, "{r:?}");
    assert!(Magic::post(&mut m, NodeId(0), Cycles(u64::MAX), go).is_err());

    // A handler that would spend past the whole clock: the run halts,
    // naming the handler, its step and the exact cycle it asked for
    // (dispatched at cycle 3, the inbox stage, then u64::MAX cycles busy).
    let mut m = Magic::with(MagicParams::default(), 2, &Forever).unwrap();
    let go = m.msg(NodeId(0), R::Ask);
    m.post(NodeId(0), Cycles(0), go).unwrap();
    let r = m.run_until(Some(Cycles(u64::MAX)));
    assert!(!r.is_clean() && !r.limit_reached, "{r:?}");
    crate::ledger_true(&m);
    let at = 3 + u64::MAX as u128;
    assert_eq!(
        r.halted,
        Some(Halt::EndOfTime {
            node: NodeId(0),
            what: "forever.forever's busy step".into(),
            at
        })
    );
    assert_eq!(
        r.problems(),
        [format!(
            "node 0: forever.forever's busy step at cycle {at}, past the last cycle the model can represent ({})",
            Magic::<()>::LAST_CYCLE
        )]
    );
    // Nothing runs after the halt: the handler's send is never delivered.
    assert!(m.step().is_none());
    assert!(m.run().halted.is_some());
    assert_eq!(m.take_processor_messages(NodeId(1)).unwrap().len(), 0);
}
