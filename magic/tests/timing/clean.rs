//! One meaning of clean: every refusal named in the run's report and the
//! run not clean; the bench's shot shows refused steps; accessors past the
//! machine are errors; time past its end and the cycle budget halt a run.

use magic::machine::{DEFAULT_BUDGET, MAX_BUDGET};
use magic::testing::{Bench, BenchError};
use magic::{
    messages, Cx, Cycles, Drops, Halt, Install, Magic, MagicParams, Msg, NodeId, NodeState, PAddr,
    ProcStep, Processor, Protocol, Refused, Region,
};

messages! {
    /// A lock's messages, as a protocol author would write them.
    pub enum LockMsg: LockKind {
        /// Ask the home for the lock; `to` is whom the home answers.
        Request { to: u32 },
        /// The lock is yours.
        Grant => Reply,
        /// Do one refused step of each kind (see `misuse`).
        Misuse,
        /// Reschedule itself forever, `busy` cycles each time.
        Forever { busy: u64 },
        /// Reschedule itself `left` more times, then stop.
        Chain { left: u64 },
        /// Steps no machine could take beside `send`'s and `mem_read`'s
        /// (see `odd`).
        Odd,
        /// Spend `cycles`, then `then` more: as instructions (`how` 0) or
        /// as a wait until `cycles + then` (otherwise).
        Spend { cycles: u64, then: u64, how: u32 },
        /// Steps the PP could not issue, between ones it could (see
        /// `overissue`).
        Overissue,
        /// Issue `instrs` instructions in `cycles` bundles.
        Bundles { cycles: u32, instrs: u32 },
        /// Free a buffer after a transfer said to end past the end of
        /// time.
        FreeLate,
        /// Send itself to its own node, forever.
        Echo,
    }
}

/// Node state: when the processor should step next (`None`: idle), and
/// whether every step asks to step again at a cycle no later than its own
/// (`back` cycles before it).
#[derive(Clone, Debug, Default)]
struct Node {
    step_at: Option<Cycles>,
    stand_still: Option<u64>,
}

impl NodeState for Node {
    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        if let Some(back) = self.stand_still {
            return ProcStep::At(Cycles(p.now().0.saturating_sub(back)));
        }
        match self.step_at.take() {
            Some(at) => ProcStep::At(at),
            None => ProcStep::Idle,
        }
    }
}

type C<'a> = Cx<'a, Node>;

/// The home answers whomever the request names, even a node that does not
/// exist.
fn request(cx: &mut C<'_>, _: &Msg, lock_msg::Request { to }: lock_msg::Request) {
    cx.instr(4);
    let grant = cx.msg(LockMsg::Grant).to(NodeId(to));
    assert_eq!(cx.send(grant, None), Err(Refused::BadNode));
}

fn grant(cx: &mut C<'_>, _: &Msg, _: lock_msg::Grant) {
    cx.instr(2);
}

/// One refused step of each cause MAGIC counts.
fn misuse(cx: &mut C<'_>, _: &Msg, _: lock_msg::Misuse) {
    let me = cx.node();
    let far = PAddr::new(Region::Normal, me, 1 << 30);
    let b = cx.alloc_buffer().unwrap();
    assert_eq!(cx.mem_read(far, b), Err(Refused::BadAddress));
    cx.free_buffer(b).unwrap();
    assert_eq!(cx.free_buffer(b), Err(Refused::BadBuffer));
    let mut long = cx.msg(LockMsg::Grant).to(NodeId(1));
    long.len = 129;
    assert_eq!(cx.send(long, None), Err(Refused::TooLong));
    // The test placed this line dirty in the processor's cache.
    let line = PAddr::new(Region::Normal, me, 0x1000);
    assert_eq!(
        cx.pc_get(line, None, magic::LineState::Uncached),
        Err(Refused::NoBuffer)
    );
    // The queue holds one entry (the head register) beyond its capacity 0.
    let again = cx.msg(LockMsg::Grant);
    assert!(!cx.software_queue_full());
    assert_eq!(cx.reschedule(again), Ok(()));
    assert!(cx.software_queue_full());
    assert_eq!(cx.reschedule(again), Err(Refused::QueueFull));
}

fn forever(cx: &mut C<'_>, _: &Msg, m: lock_msg::Forever) {
    let busy = m.busy;
    cx.busy(Cycles(busy));
    let again = cx.msg(m);
    cx.reschedule(again).unwrap();
}

fn chain(cx: &mut C<'_>, _: &Msg, lock_msg::Chain { left }: lock_msg::Chain) {
    cx.busy(Cycles(1));
    if left > 0 {
        let again = cx.msg(LockMsg::Chain { left: left - 1 });
        cx.reschedule(again).unwrap();
    }
}

/// An intervention on a line of no node's memory, and a continuation and
/// a message to the processor longer than a line: each refused as `send`
/// and `mem_read` refuse theirs.
fn odd(cx: &mut C<'_>, _: &Msg, _: lock_msg::Odd) {
    let nowhere = PAddr::new(Region::Normal, NodeId(9), 0x1000);
    assert_eq!(
        cx.pc_get(nowhere, None, magic::LineState::Uncached).err(),
        Some(Refused::BadAddress)
    );
    let mut long = cx.msg(LockMsg::Grant);
    long.len = 129;
    assert_eq!(cx.reschedule(long), Err(Refused::TooLong));
    assert_eq!(cx.to_processor(long, None), Err(Refused::TooLong));
}

fn spend(cx: &mut C<'_>, _: &Msg, m: lock_msg::Spend) {
    let lock_msg::Spend { cycles, then, how } = m;
    cx.busy(Cycles(cycles));
    match how {
        0 => cx.instr(then as u32 * 2),
        _ => cx.wait_until(Cycles(cycles.saturating_add(then))),
    }
}

/// Steps the PP could not issue, between ones it could.
fn overissue(cx: &mut C<'_>, _: &Msg, _: lock_msg::Overissue) {
    // A load before any instruction is issued: refused.
    cx.load(0x40);
    cx.bundles(0, 0);
    cx.bundles(3, 6);
    // 1,000 instructions in a cycle of a 2-issue PP, and one in no cycle.
    cx.bundles(1, 1000);
    cx.bundles(0, 1);
    // Six loads and stores among the six instructions, then a seventh.
    for a in [0x40, 0x80, 0x1000] {
        cx.load(a);
        cx.store(a + 8);
    }
    cx.store(0x50);
}

fn bundles(cx: &mut C<'_>, _: &Msg, m: lock_msg::Bundles) {
    cx.bundles(m.cycles, m.instrs);
}

fn free_late(cx: &mut C<'_>, _: &Msg, _: lock_msg::FreeLate) {
    let b = cx.alloc_buffer().expect("a free buffer");
    let never = magic::Ticket {
        first: Cycles(u64::MAX),
        ready: Cycles(u64::MAX),
    };
    assert_eq!(cx.free_buffer_after(b, never), Ok(()));
}

fn echo(cx: &mut C<'_>, _: &Msg, _: lock_msg::Echo) {
    cx.instr(1);
    let me = cx.node();
    let again = cx.msg(LockMsg::Echo).to(me);
    assert_eq!(cx.send(again, None), Ok(()));
}

struct Lock;

impl Protocol for Lock {
    type Node = Node;
    fn name(&self) -> &'static str {
        "lock"
    }
    fn node(&self, _: NodeId, _: u32) -> Node {
        Node::default()
    }
    fn install<S: 'static>(&self, b: &mut Install<'_, S, Node>) {
        let (r, g, m) = (
            b.handler("request", request),
            b.handler("grant", grant),
            b.handler("misuse", misuse),
        );
        let (f, s) = (b.handler("forever", forever), b.handler("spend", spend));
        let c = b.handler("chain", chain);
        let odd = b.handler("odd", odd);
        let (o, n) = (
            b.handler("overissue", overissue),
            b.handler("bundles", bundles),
        );
        let late = b.handler("free_late", free_late);
        let e = b.handler("echo", echo);
        b.route_any(e);
        b.route_any(late)
            .route_any(r)
            .route_any(g)
            .route_any(m)
            .route_any(f)
            .route_any(s)
            .route_any(o)
            .route_any(n)
            .route_any(c)
            .route_any(odd);
    }
}

fn machine(nodes: u32) -> Magic<Node> {
    Magic::with(MagicParams::default(), nodes, &Lock).unwrap()
}

/// Node 0's processor hands its MAGIC `m` at cycle 0.
fn post(m: &mut Magic<Node>, msg: LockMsg) {
    let msg = m.msg(NodeId(0), msg);
    m.post(NodeId(0), Cycles(0), msg).unwrap();
}

#[test]
fn a_send_to_a_node_that_does_not_exist_is_named_and_the_run_is_not_clean() {
    let mut m = machine(2);
    post(&mut m, LockMsg::Request { to: 9 });
    let r = m.run();
    assert!(!r.is_clean(), "{r:?}");
    assert!(r.stuck.is_empty() && r.halted.is_none(), "{r:?}");
    // Dispatched at cycle 3 (the inbox stage), 4 instructions.
    let line = "node 0: 1 send(s) to a node that does not exist (the first: \
                lock.request sent lock LockMsg::Grant to node 9 of a 2-node machine, at cycle 5)";
    assert_eq!(r.refused, [line]);
    assert_eq!(r.problems(), [line]);
    let d = m.drops(NodeId(0)).unwrap();
    assert_eq!(
        d,
        Drops {
            bad_node: 1,
            ..Drops::default()
        }
    );
    crate::ledger_true(&m);
    // A second one is counted; the line still names the first.
    let again = m.msg(NodeId(0), LockMsg::Request { to: 7 });
    let now = m.now();
    m.post(NodeId(0), now, again).unwrap();
    let r = m.run();
    assert_eq!(r.refused.len(), 1, "{:?}", r.refused);
    assert!(
        r.refused[0].starts_with("node 0: 2 send(s)"),
        "{:?}",
        r.refused
    );
    assert!(r.refused[0].contains("to node 9 of a 2-node machine"));
}

#[test]
fn the_bench_shows_the_refused_send_in_the_step_table() {
    let mut bench = Bench::new(2, &Lock).unwrap();
    let ask = bench
        .msg(NodeId(1), LockMsg::Request { to: 9 })
        .to(NodeId(0));
    let shot = bench.inject(NodeId(0), ask).unwrap();
    assert_eq!(
        shot.to_string(),
        "\
lock.request on node 0: 2 cycles, 4 instructions, 0 loads, 0 stores, 0 waiting, 0 outbox stall
 from    to  step           detail
    0     2  instructions   4 issued
    2     2  send           to node 9: refused, no such destination node
"
    );
    let refused: Vec<_> = shot.refused().collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(
        (refused[0].what, refused[0].detail, refused[0].refused),
        ("send", 9, Some(Refused::BadNode))
    );
    assert!(shot.sent.is_empty(), "a refused send sends nothing");
    assert!(!bench.run(Cycles(100)).is_clean());
}

#[test]
fn every_refusal_is_named_with_its_first_instance() {
    let params = MagicParams {
        swq_capacity: 0,
        ..MagicParams::default()
    };
    let mut m = Magic::with(params, 2, &Lock).unwrap();
    let line = PAddr::new(Region::Normal, NodeId(0), 0x1000);
    let dirty = magic::LineState::Dirty;
    m.pcache_mut(NodeId(0)).unwrap().set(line, dirty, [7; 128]);
    post(&mut m, LockMsg::Misuse);
    let r = m.run();
    assert!(!r.is_clean());
    assert_eq!(
        m.drops(NodeId(0)).unwrap(),
        Drops {
            bad_address: 1,
            bad_buffer: 2,
            swq_full: 1,
            too_long: 1,
            ..Drops::default()
        }
    );
    assert_eq!(
        r.refused,
        [
            "node 0: 1 reference(s) outside this node's memory (the first: lock.misuse's memory read step at Normal:n0:0x40000000, at cycle 3)",
            "node 0: 2 step(s) without an allocated data buffer (the first: lock.misuse's free buffer step with buffer 0, at cycle 3)",
            "node 0: 1 reschedule(s) refused by a full software queue (the first: lock.misuse rescheduled lock LockMsg::Grant; the queue holds 0 entries and the head register, at cycle 3)",
            "node 0: 1 send(s) of a payload longer than a line (the first: lock.misuse sent lock LockMsg::Grant with 129 bytes, at cycle 3)",
        ]
    );
    crate::ledger_true(&m);
}

/// What an accessor answered: the error's words, or `found`.
fn why<T>(r: Result<T, magic::NoNode>) -> String {
    r.map_or_else(|e| e.to_string(), |_| "found".into())
}

#[test]
fn accessors_past_the_machine_are_errors_naming_the_node_and_the_size() {
    let mut m = machine(2);
    let past = NodeId(2);
    let no = "no node 2 (the machine has 2)";
    assert_eq!(why(m.state(past)), no);
    assert_eq!(why(m.state_mut(past)), no);
    assert_eq!(why(m.drops(past)), no);
    assert_eq!(why(m.memory(past)), no);
    assert_eq!(why(m.memory_mut(past)), no);
    assert_eq!(why(m.pcache(past)), no);
    assert_eq!(why(m.pcache_mut(past)), no);
    assert_eq!(why(m.take_processor_messages(past)), no);
    let far = NodeId(u32::MAX);
    assert_eq!(why(m.state(far)), "no node 4294967295 (the machine has 2)");
    // The last node is there.
    assert_eq!(why(m.state(NodeId(1))), "found");
    assert_eq!(why(m.pcache(NodeId(1))), "found");
}

/// A run of one `Spend` on a 2-node machine.
fn spend_run(cycles: u64, then: u64, how: u32) -> (magic::RunReport, Magic<Node>) {
    let mut m = machine(2);
    post(&mut m, LockMsg::Spend { cycles, then, how });
    let r = m.run();
    // A halted run's figures are no result, but its ledger is true.
    crate::ledger_true(&m);
    (r, m)
}

#[test]
fn a_handler_charging_past_the_end_of_time_halts_the_run_naming_it() {
    let last = magic::time::LAST_CYCLE.0;
    let end_of_time = |r: &magic::RunReport| match &r.halted {
        Some(Halt::EndOfTime { node, what, at }) => Some((node.0, what.clone(), *at)),
        _ => None,
    };
    // Dispatched at cycle 3: busy to the last cycle exactly is in time,
    // past every budget a run may have: the handler's clock stops just
    // past the largest (so what it books fits a ledger's sums), where the
    // run halts, at its budget, saying no budget reaches it...
    let beyond = Cycles(MAX_BUDGET.0 + 1);
    let (r, m) = spend_run(last - 3, 0, 0);
    let past = Some(Halt::Budget {
        budget: DEFAULT_BUDGET,
        next: beyond,
    });
    assert_eq!(r.halted, past, "{r:?}");
    assert!(
        r.problems()[0].ends_with(&format!(
            "with work left at cycle {beyond}; no budget reaches that (the most a run may \
             have is {MAX_BUDGET}): a run that needs more is too long for the model"
        )),
        "{:?}",
        r.problems()
    );
    let busy = m
        .ledger()
        .summed()
        .handler(None, "lock.spend")
        .unwrap()
        .stats
        .busy;
    assert_eq!(busy, beyond.0 - 3);
    // ... and a step after it goes on from where the clock stopped.
    let (r, _) = spend_run(last - 3, 1, 0);
    let next = match r.halted {
        Some(Halt::Budget { next, .. }) => next,
        _ => panic!("{r:?}"),
    };
    assert!(next > beyond && next.0 < beyond.0 + 10, "{r:?}");
    // One cycle more in one step is past the end of time.
    let (r, mut m) = spend_run(last - 2, 0, 0);
    assert!(!r.is_clean());
    let what = "lock.spend's busy step";
    assert_eq!(end_of_time(&r), Some((0, what.into(), last as u128 + 1)));
    assert_eq!(
        r.problems(),
        [format!(
            "node 0: {what} at cycle {}, past the last cycle the model can represent ({last})",
            last + 1
        )]
    );
    assert!(m.step().is_none(), "nothing runs after a halt");
    // Busy past the end, exactly as asked, though no cycle count holds it.
    let (r, _) = spend_run(u64::MAX, 0, 0);
    let at = 3 + u64::MAX as u128;
    assert_eq!(
        end_of_time(&r),
        Some((0, "lock.spend's busy step".into(), at))
    );
    // A wait past the end.
    let (r, _) = spend_run(5, u64::MAX - 5, 1);
    let at = u64::MAX as u128;
    assert_eq!(
        end_of_time(&r),
        Some((0, "lock.spend's wait step".into(), at))
    );
}

/// Every node of the largest machine busy to the last cycle: each books
/// no more than the budget, so the ledger sums over the nodes exactly
/// (at the end of time, 4096 of them would pass a 64-bit counter).
#[test]
fn thousands_of_handlers_charging_to_the_end_of_time_book_within_the_budget() {
    let last = magic::time::LAST_CYCLE.0;
    let mut m = machine(4096);
    for n in 0..4096 {
        let msg = m.msg(
            NodeId(n),
            LockMsg::Spend {
                cycles: last - 10,
                then: 0,
                how: 0,
            },
        );
        m.post(NodeId(n), Cycles(0), msg).unwrap();
    }
    let r = m.run();
    assert!(matches!(r.halted, Some(Halt::Budget { .. })), "{r:?}");
    let ledger = m.ledger();
    let busy = |l: &magic::Ledger, n| l.handler(n, "lock.spend").unwrap().stats.busy;
    let each = busy(&ledger, Some(0));
    assert!(each <= MAX_BUDGET.0 + 1, "{each}");
    let summed = ledger.summed();
    assert_eq!(busy(&summed, None), 4096 * each);
    assert_eq!(summed.invariants(2), Ok(()));
}

#[test]
fn an_event_past_the_end_of_time_halts_the_run_naming_it() {
    // Posted at the last cycle, the message enters its queue after the
    // inbox stage: past the end.
    let mut m = machine(2);
    let last = Magic::<Node>::LAST_CYCLE;
    let msg = m.msg(NodeId(1), LockMsg::Grant);
    m.post(NodeId(1), last, msg).unwrap();
    let r = m.run();
    assert_eq!(
        r.halted,
        Some(Halt::EndOfTime {
            node: NodeId(1),
            what: "the delivery of lock LockMsg::Grant from node 1 to the processor queue".into(),
            at: last.0 as u128 + 3
        })
    );
}

#[test]
fn a_processor_step_past_the_end_of_time_halts_the_run() {
    let mut m = machine(2);
    let far = Cycles(u64::MAX - 1);
    m.state_mut(NodeId(1)).unwrap().step_at = Some(far);
    m.start_processor(NodeId(1), Cycles(0)).unwrap();
    let r = m.run();
    assert_eq!(
        r.halted,
        Some(Halt::EndOfTime {
            node: NodeId(1),
            what: "the processor's next step".into(),
            at: far.0 as u128
        })
    );
}

#[test]
fn a_run_stops_at_its_cycle_budget_and_says_how_to_raise_it() {
    let mut m = machine(2);
    assert_eq!(m.budget(), DEFAULT_BUDGET);
    m.set_budget(Cycles(100_000)).unwrap();
    post(&mut m, LockMsg::Forever { busy: 1000 });
    let r = m.run();
    assert!(!r.is_clean());
    let h = r.halted.clone().expect("halted");
    let Halt::Budget { budget, next } = h else {
        panic!("{h:?}")
    };
    assert_eq!(budget, Cycles(100_000));
    assert!(next > budget && next.0 <= 100_000 + 1000 + 3, "{next}");
    assert!(r.end <= budget, "{r:?}");
    crate::ledger_true(&m);
    assert_eq!(
        r.problems()[0],
        format!(
            "the run reached its cycle budget of 100000 cycles with work left at cycle {next}; \
             a run that needs more raises it with [machine] budget \
             (MagicParams::budget, or Magic::set_budget; at most {MAX_BUDGET})"
        )
    );
    assert!(m.step().is_none());
    // The budget's range.
    let e = m.set_budget(Cycles(0)).unwrap_err();
    assert_eq!(e.field, "budget");
    assert!(m.set_budget(Cycles(MAX_BUDGET.0 + 1)).is_err());
    assert!(m.set_budget(MAX_BUDGET).is_ok());
    // At the most there is, the run is not told to raise it.
    let most = Halt::Budget {
        budget: MAX_BUDGET,
        next: Cycles(MAX_BUDGET.0 + 1),
    };
    assert!(
        most.to_string().ends_with(&format!(
            "that is the most a run may have ({MAX_BUDGET}): a run that needs more is too long for the model"
        )),
        "{most}"
    );
    // The bench stops there too, instead of running forever.
    let mut m = machine(2);
    m.set_budget(Cycles(50_000)).unwrap();
    let mut bench = Bench::from_machine(m);
    let go = bench.msg(NodeId(0), LockMsg::Forever { busy: 1000 });
    bench.inject(NodeId(0), go).unwrap();
    let r = bench.run(Cycles(u64::MAX));
    assert!(matches!(r.halted, Some(Halt::Budget { .. })), "{r:?}");
}

/// A caller's limit comes before the budget and the end of time: a run
/// limited to before its next instant stops at the limit, clean so far,
/// however far that instant is; and a run halted on its budget goes on
/// when the budget is raised.
#[test]
fn a_callers_limit_stops_the_run_before_the_budget_would() {
    let mut m = machine(2);
    m.set_budget(Cycles(1000)).unwrap();
    let msg = m.msg(NodeId(1), LockMsg::Grant);
    m.post(NodeId(1), Cycles(5000), msg).unwrap();
    let r = m.run_until(Some(Cycles(100)));
    assert!(r.limit_reached && r.halted.is_none(), "{r:?}");
    // Past the budget without a limit of its own: halted, naming it.
    let r = m.run();
    assert!(
        matches!(
            r.halted,
            Some(Halt::Budget {
                next: Cycles(5003),
                ..
            })
        ),
        "{r:?}"
    );
    // Raised, the run goes on from where it stopped.
    m.set_budget(Cycles(1_000_000)).unwrap();
    let r = m.run();
    assert!(r.is_clean() && r.end >= Cycles(5003), "{r:?}");
    // An instant past the end of time is the run's to halt on only when
    // it reaches it.
    let mut m = machine(2);
    let last = Magic::<Node>::LAST_CYCLE;
    let msg = m.msg(NodeId(1), LockMsg::Grant);
    m.post(NodeId(1), last, msg).unwrap();
    let r = m.run_until(Some(Cycles(0)));
    assert!(r.limit_reached && r.halted.is_none(), "{r:?}");
    assert!(matches!(m.run().halted, Some(Halt::EndOfTime { .. })));
}

/// A handler that sends itself to its own node never ends, and time
/// passes (two cycles a round): the cycle budget would stop it only after
/// some 5 x 10^10 events. The event limit stops it, naming itself; a
/// larger limit lets the run go on from where it stopped.
#[test]
fn a_handler_that_sends_to_its_own_node_forever_halts_at_the_event_limit() {
    let mut m = machine(1);
    post(&mut m, LockMsg::Echo);
    m.set_event_limit(Some(1000));
    let r = m.run();
    let Some(Halt::Events {
        events: 1000,
        limit: 1000,
        at,
    }) = r.halted
    else {
        panic!("{r:?}");
    };
    assert_eq!(r.engine_events, 1000);
    assert!(!r.is_clean());
    assert!(
        r.problems()[0].starts_with(&format!(
            "the run applied 1000 events by cycle {at}, its limit of 1000, with work left: \
             handlers that keep one another going without end (a message a handler sends to \
             its own node, say)"
        )),
        "{:?}",
        r.problems()
    );
    m.set_event_limit(Some(3000));
    let r = m.run();
    assert!(
        matches!(r.halted, Some(Halt::Events { limit: 3000, .. })),
        "{r:?}"
    );
    assert_eq!(r.engine_events, 3000);
    // The default limit is the kit's, and a run under it is not stopped.
    let mut m = machine(1);
    post(&mut m, LockMsg::Echo);
    m.set_budget(Cycles(10_000)).unwrap();
    assert!(matches!(m.run().halted, Some(Halt::Budget { .. })));
}

/// A processor whose every step asks to step again now, or earlier, never
/// lets time pass: the run halts at the spin limit, naming the node and
/// the cycle, rather than hanging.
#[test]
fn a_processor_that_never_lets_time_pass_halts_naming_it() {
    for back in [0, 3] {
        let mut m = machine(2);
        m.set_spin_limit(Some(500));
        m.state_mut(NodeId(1)).unwrap().stand_still = Some(back);
        m.start_processor(NodeId(1), Cycles(5)).unwrap();
        let r = m.run();
        assert!(!r.is_clean());
        assert_eq!(
            r.halted,
            Some(Halt::ProcessorSpin {
                node: NodeId(1),
                at: Cycles(5),
                limit: 500
            })
        );
        assert!(
            r.problems()[0].starts_with(
                "node 1's processor stepped again without letting time pass, 500 steps at cycle 5"
            ),
            "{:?}",
            r.problems()
        );
    }
    // At the default limit too (some 16.8 million steps).
    let mut m = machine(1);
    m.state_mut(NodeId(0)).unwrap().stand_still = Some(0);
    m.start_processor(NodeId(0), Cycles(0)).unwrap();
    assert!(matches!(
        m.run().halted,
        Some(Halt::ProcessorSpin {
            limit: magic::SPIN_LIMIT,
            ..
        })
    ));
}

#[test]
fn a_loop_with_nothing_else_in_flight_halts_as_a_livelock_naming_it() {
    // A handler that reschedules itself with nothing else in flight:
    // found at the spin limit, not left to spin to the budget.
    let mut m = machine(2);
    m.set_spin_limit(Some(1000));
    post(&mut m, LockMsg::Forever { busy: 1 });
    let r = m.run();
    assert!(!r.is_clean());
    let Some(Halt::Livelock {
        node,
        what,
        at,
        limit,
    }) = r.halted.clone()
    else {
        panic!("{r:?}")
    };
    assert_eq!(
        (node, what.as_str(), limit),
        (NodeId(0), "lock LockMsg::Forever", 1000)
    );
    // Posted at 0 and in at 3 (the inbox stage); a handler of one cycle,
    // then its reschedule through the inbox stage again: 4 cycles a turn.
    assert_eq!(at, Cycles(3 + 1000 * 4));
    assert_eq!(
        r.problems()[0],
        format!(
            "livelock at cycle {at}: only the software queue has run, 1000 handlers in a row, \
             with nothing else in flight that could end its loop (node 0's next: \
             lock LockMsg::Forever); a protocol of the library's whose loop does end \
             raises the limit (Magic::set_spin_limit)"
        )
    );
    assert!(
        r.stuck.iter().any(|s| s.contains("software queue")),
        "{r:?}"
    );
    crate::ledger_true(&m);
    assert!(m.step().is_none(), "nothing runs after a halt");
    // A chain that ends as it reaches the limit is no loop: its last
    // handler put nothing more on the queue. (The limit is the count of
    // handlers it takes on trust: one more, and it is taken as a loop.)
    // The first of the chain comes from the processor's queue, the rest
    // from the software queue: `left` of them.
    for (left, clean) in [(1000, true), (1001, false)] {
        let mut m = machine(2);
        m.set_spin_limit(Some(1000));
        post(&mut m, LockMsg::Chain { left });
        let r = m.run();
        assert_eq!(r.is_clean(), clean, "{left}: {r:?}");
    }
    // A limit of 0 is taken as 1: one software handler that reschedules
    // is a loop, one that does not is not.
    for (msg, clean) in [
        (LockMsg::Chain { left: 1 }, true),
        (LockMsg::Forever { busy: 1 }, false),
    ] {
        let mut m = machine(2);
        m.set_spin_limit(Some(0));
        post(&mut m, msg);
        let r = m.run();
        assert_eq!(r.is_clean(), clean, "{r:?}");
    }
    // Something else in flight may end the loop: a processor step far
    // ahead keeps it running, here to its budget.
    let mut m = machine(2);
    m.set_spin_limit(Some(1000));
    m.set_budget(Cycles(20_000)).unwrap();
    m.start_processor(NodeId(1), Cycles(50_000)).unwrap();
    post(&mut m, LockMsg::Forever { busy: 1 });
    let r = m.run();
    assert!(matches!(r.halted, Some(Halt::Budget { .. })), "{r:?}");
    // And with the limit off, a loop runs to its budget as before.
    let mut m = machine(2);
    m.set_spin_limit(None);
    m.set_budget(Cycles(20_000)).unwrap();
    post(&mut m, LockMsg::Forever { busy: 1 });
    let r = m.run();
    assert!(matches!(r.halted, Some(Halt::Budget { .. })), "{r:?}");
    assert_eq!(magic::SPIN_LIMIT, 1 << 24);
}

/// A checker takes at most `MOST_SYMMETRIC` interchangeable nodes: more
/// is refused by name before any renaming is made (12 nodes' would not
/// fit memory), an endless list of them is not read for ever, and a
/// node past the machine's or named twice is refused.
#[test]
fn a_check_refuses_more_symmetric_nodes_than_it_can_rename() {
    use magic::check::{Bounds, Checker, MOST_SYMMETRIC};
    let build = || Ok(machine(16));
    let most = MOST_SYMMETRIC as u32;
    for nodes in [most + 1, 16, 1 << 16, u32::MAX] {
        let check = Checker::new(build).symmetric(0..nodes, |_, _, _| {});
        let e = check.run(Bounds::default()).unwrap_err();
        assert_eq!(e.field, "symmetric", "{e}");
        assert!(
            e.to_string().contains("at most 8 of the machine's nodes"),
            "{e}"
        );
        // The plain search renames nothing, and takes them.
        let plain = Bounds {
            symmetry: false,
            ..Bounds::default()
        };
        assert!(!check.run(plain).unwrap().symmetry);
    }
    let endless = Checker::new(build).symmetric(std::iter::repeat(1).chain(0..), |_, _, _| {});
    assert_eq!(
        endless.run(Bounds::default()).unwrap_err().field,
        "symmetric"
    );
    // A node past the machine's, or one named twice, is a slip that
    // would leave the search plainer than asked: refused, named.
    let past = Checker::new(|| Ok(machine(2))).symmetric([0, 1, 7], |_, _, _| {});
    let e = past.run(Bounds::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "symmetric must be nodes of the machine, 0 to 1, got 7"
    );
    let twice = Checker::new(|| Ok(machine(2))).symmetric([0, 1, 0, 1], |_, _, _| {});
    let e = twice.run(Bounds::default()).unwrap_err();
    assert!(e.to_string().contains("each node once"), "{e}");
    assert!(e.to_string().ends_with("got 0"), "{e}");
    // Both nodes, once each: the search up to symmetry.
    let both = Checker::new(|| Ok(machine(2))).symmetric([1, 0], |_, _, _| {});
    assert!(both.run(Bounds::default()).unwrap().symmetry);
}

/// The machine as built is the search's first state: an invariant it
/// breaks is found even when nothing ever moves, by either search.
#[test]
fn a_check_finds_an_invariant_the_built_machine_breaks() {
    use magic::check::{explore, Bounds, Checker};
    let check = Checker::new(|| Ok(machine(2))).invariant(|_| Err("always broken".into()));
    for threads in [1, 2] {
        let r = check
            .run(Bounds {
                threads,
                ..Bounds::default()
            })
            .unwrap();
        assert_eq!(r.violations, 1, "{r:?}");
        assert_eq!(r.violation.as_deref(), Some("always broken"));
        assert!(r.trace.is_empty() && !r.complete, "{r:?}");
    }
    let r = explore(&check, Bounds::default()).unwrap();
    assert_eq!(
        (r.violations, r.violation.as_deref()),
        (1, Some("always broken"))
    );
}

#[test]
fn a_check_finds_a_refused_send_at_rest() {
    use magic::check::{Bounds, Checker};
    let check = Checker::new(|| {
        let mut m = machine(2);
        post(&mut m, LockMsg::Request { to: 9 });
        Ok(m)
    });
    let r = check.run(Bounds::default()).unwrap();
    assert_eq!(r.violations, 1, "{r:?}");
    let v = r.violation.unwrap_or_default();
    assert!(
        v.starts_with("dropped: node 0: 1 send(s) to a node that does not exist"),
        "{v}"
    );
}

#[test]
fn steps_the_pp_could_not_issue_are_refused_named_and_not_charged() {
    let mut m = machine(2);
    post(&mut m, LockMsg::Overissue);
    let r = m.run();
    assert!(!r.is_clean());
    assert_eq!(
        m.drops(NodeId(0)).unwrap(),
        Drops {
            over_issue: 4,
            ..Drops::default()
        }
    );
    assert_eq!(
        r.refused,
        [
            "node 0: 4 step(s) the PP could not issue (the first: lock.overissue's load beyond \
          the 0 instruction(s) it had issued, at cycle 3)"
        ]
    );
    // Charged: what the PP could issue, and nothing of the rest.
    let l = m.ledger();
    let s = l.handler(Some(0), "lock.overissue").unwrap().stats;
    assert_eq!((s.instructions, s.loads, s.stores), (6, 3, 3));
    assert_eq!(s.busy, 3 + s.wait);

    // At the issue width exactly the PP issues; one instruction more, not.
    for (width, cycles, instrs, refused) in [
        (2, 1, 2, 0),
        (2, 1, 3, 1),
        (1, 3, 3, 0),
        (1, 3, 4, 1),
        (16, 2, 32, 0),
        (16, 2, 33, 1),
        (16, u32::MAX, u32::MAX, 0),
        (1, 0, u32::MAX, 1),
    ] {
        let p = MagicParams {
            pp_issue_width: width,
            ..MagicParams::default()
        };
        let mut m = Magic::with(p, 1, &Lock).unwrap();
        post(&mut m, LockMsg::Bundles { cycles, instrs });
        let r = m.run();
        let d = m.drops(NodeId(0)).unwrap();
        assert_eq!(d.over_issue, refused, "{width}-issue, {instrs} in {cycles}");
        assert_eq!(r.is_clean(), refused == 0);
        let s = m.ledger().handler(Some(0), "lock.bundles").unwrap().stats;
        let charged = if refused == 0 { instrs as u64 } else { 0 };
        assert_eq!(s.instructions, charged);
        assert_eq!(s.busy, (cycles as u64 * (1 - refused)).max(1));
        if refused == 1 {
            let first = format!(
                "node 0: 1 step(s) the PP could not issue (the first: lock.bundles's {instrs} \
                 instructions in {cycles} bundle(s) on a {width}-issue PP, at cycle 3)"
            );
            assert_eq!(r.refused, [first]);
        }
    }
}

#[test]
fn the_bench_shows_a_step_the_pp_could_not_issue() {
    let mut bench = Bench::new(1, &Lock).unwrap();
    let go = bench.msg(NodeId(0), LockMsg::Overissue);
    let shot = bench.inject(NodeId(0), go).unwrap();
    assert_eq!(
        shot.to_string(),
        "\
lock.overissue on node 0: 90 cycles, 6 instructions, 3 loads, 3 stores, 87 waiting, 0 outbox stall
 from    to  step           detail
    0     0  load           beyond 0 instruction(s): refused, more than the PP can issue
    0     0  instructions   0 issued
    0     3  instructions   6 issued
    3     3  instructions   1000 in 1 bundle(s): refused, more than the PP can issue
    3     3  instructions   1 in 0 bundle(s): refused, more than the PP can issue
    3    32  load           0x40, a miss
   32    32  store          0x48
   32    61  load           0x80, a miss
   61    61  store          0x88
   61    90  load           0x1000, a miss
   90    90  store          0x1008
   90    90  store          beyond 6 instruction(s): refused, more than the PP can issue
"
    );
    assert_eq!(shot.refused().count(), 4);
    assert!(!bench.run(Cycles(100)).is_clean());
}

/// A post past the model's clock names the time asked for exactly, not a
/// saturated one.
#[test]
fn a_post_past_the_clock_names_the_time_asked_for() {
    let mut m = machine(2);
    let msg = m.msg(NodeId(0), LockMsg::Grant);
    let e = m.post(NodeId(0), Cycles(u64::MAX), msg).unwrap_err();
    let ticks = u64::MAX as u128 * 264;
    assert_eq!(
        e.to_string(),
        format!(
            "cannot post at tick {ticks} (system cycle {}): past the last cycle the model \
             can represent ({})",
            u64::MAX,
            magic::time::LAST_CYCLE
        )
    );
}

/// Steps beside `send` and `mem_read` refuse what no machine could do: an
/// intervention on no node's line, a continuation or a message to the
/// processor longer than a line. Each is named and the run is not clean.
#[test]
fn odd_steps_are_refused_and_named() {
    let mut m = machine(2);
    post(&mut m, LockMsg::Odd);
    let r = m.run();
    assert!(!r.is_clean());
    assert_eq!(r.refused.len(), 2, "{:?}", r.refused);
    assert!(
        r.refused.iter().any(|l| l.contains("lock.odd")),
        "{:?}",
        r.refused
    );
}

/// A handler whose clock passes the end of time halts the machine as it
/// ends: the bench says so, where it gave the handler a shot of the
/// clock stopped at the end.
#[test]
fn the_bench_refuses_a_shot_of_a_handler_that_halted_the_machine() {
    let mut bench = Bench::new(1, &Lock).unwrap();
    let go = bench.msg(
        NodeId(0),
        LockMsg::Spend {
            cycles: u64::MAX,
            then: 0,
            how: 1,
        },
    );
    let e = bench.inject(NodeId(0), go).unwrap_err();
    assert!(
        matches!(&e, BenchError::Halted { halt } if halt.contains("past the last cycle the model can represent")),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("the handler ran, and the machine halted: "),
        "{e}"
    );
}

/// A buffer freed after a transfer said to end past the end of time
/// halts the run naming the step, where it left the pool a buffer short
/// for ever with a clean report.
#[test]
fn a_buffer_freed_past_the_end_of_time_halts_the_run() {
    let mut m = machine(1);
    post(&mut m, LockMsg::FreeLate);
    let r = m.run();
    match &r.halted {
        Some(Halt::EndOfTime { what, at, .. }) => {
            assert_eq!(what, "lock.free_late's free buffer step");
            assert_eq!(*at, u64::MAX as u128);
        }
        h => panic!("{h:?}"),
    }
    assert!(!r.is_clean());
}

/// The ledger starts afresh only at a point where no handler runs: one
/// still running was booked at its dispatch, and a ledger started then
/// would show its PP idle while it works.
#[test]
fn counters_reset_only_where_no_handler_runs() {
    let mut m = machine(2);
    post(
        &mut m,
        LockMsg::Spend {
            cycles: 1000,
            then: 0,
            how: 1,
        },
    );
    m.run_until(Some(Cycles(500)));
    let before = m.ledger();
    let e = m.reset_counters().unwrap_err();
    assert_eq!(e.node, NodeId(0));
    assert!(e.until > m.now(), "{e}");
    assert!(
        e.to_string()
            .contains("reset the counters at a quiet point"),
        "{e}"
    );
    // Refused, it changed nothing.
    assert_eq!(m.ledger(), before);
    assert!(m.run().is_clean());
    m.reset_counters().unwrap();
    assert!(m.ledger().handlers.iter().all(|h| h.stats.invocations == 0));
}

/// A message posted with more payload than a packet holds is refused,
/// saying so, and nothing is posted.
#[test]
fn a_post_longer_than_a_packet_is_refused() {
    use magic::PostError;
    let mut m = machine(2);
    let msg = m.msg(NodeId(0), LockMsg::Grant).len(129);
    let e = m.post(NodeId(0), Cycles(0), msg).unwrap_err();
    assert_eq!(e, PostError::TooLong { len: 129 });
    assert_eq!(
        e.to_string(),
        "cannot post a message of 129 payload bytes: a packet holds at most 128"
    );
    let r = m.run();
    assert!(r.is_clean() && m.now() == Cycles(0), "{r:?}");
}

/// A search's report reads back as it was written; one no search gives (a
/// complete search that found a violation, stopped at a bound or reached
/// no state; a path longer than the moves made) is refused, naming the
/// field.
#[test]
fn a_search_report_no_search_gives_is_refused_naming_the_field() {
    use magic::check::{Bounds, Checker, Report};
    let r = Checker::new(|| Ok(machine(2)))
        .run(Bounds::default())
        .unwrap();
    assert!(r.complete && r.states > 0 && r.violations == 0, "{r:?}");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(serde_json::from_value::<Report>(j.clone()).unwrap(), r);
    let refused = |k: &str, x: serde_json::Value| {
        let mut v = j.clone();
        v[k] = x;
        serde_json::from_value::<Report>(v).unwrap_err().to_string()
    };
    let e = refused("violations", 1.into());
    assert!(
        e.starts_with("complete is true, but violations is 1"),
        "{e}"
    );
    let e = refused("limit", "states".into());
    assert!(
        e.starts_with("complete is true, but limit is States"),
        "{e}"
    );
    let e = refused("states", 0.into());
    assert!(e.starts_with("states is 0, but complete is true"), "{e}");
    let deep = r.transitions + 1;
    let e = refused("depth", deep.into());
    assert!(
        e.starts_with(&format!("depth is {deep}, more than the ")),
        "{e}"
    );
}
