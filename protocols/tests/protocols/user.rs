//! User-level messaging: command sequences, protection, and the three ways of
//! keeping MAGIC's physical addresses valid across translation changes.

use magic::{Cycles, Magic, MagicParams, NodeId, PAddr, Region};
use os_shim::{Change, Pid, Rights, VPage, PAGE_BYTES};
use protocols::user::cmd::{shadow_dst_va, shadow_va, Field, Nack, OpCode};
use protocols::user::experiments::{self, Technique};
use protocols::user::{machine, UserEvent, UserNode, UserOp, UserParams, FLAG_HOLDOFF};

const A: NodeId = NodeId(0);
const B: NodeId = NodeId(1);

fn frame(n: NodeId, k: u64) -> PAddr {
    PAddr::new(Region::Normal, n, k * PAGE_BYTES)
}

/// Two nodes; processes 1 and 3 on node 0, process 2 on node 1. Process 1
/// and process 2 are peers (virtual PID 0 names the other); process 3 has no
/// group. Each process on node 0 maps a word page on node 1 at 0x40_0000
/// (frame 16 for process 1, 17 for process 3) and source/destination pages.
fn setup() -> Magic<UserNode> {
    let mut m = machine(MagicParams::default(), UserParams::default(), 2).unwrap();
    configure(&mut m);
    m
}

/// The processes, mappings and groups of `setup`, on any two-node machine.
fn configure(m: &mut Magic<UserNode>) {
    let b = m.state_mut(B).unwrap();
    b.os.spawn(Pid(2));
    b.os.set_group(Pid(2), vec![(A, Pid(1))]).unwrap();
    b.os.map(Pid(2), VPage(0x300), frame(B, 64), Rights::RW)
        .unwrap();
    let a = m.state_mut(A).unwrap();
    for (pid, f) in [(Pid(1), 16), (Pid(3), 17)] {
        a.os.spawn(pid);
        a.os.map(pid, VPage::of(0x40_0000), frame(B, f), Rights::RW)
            .unwrap();
        a.os.map(pid, VPage::of(0x10_0000), frame(A, 32), Rights::RW)
            .unwrap();
        a.os.map(pid, VPage::of(0x20_0000), frame(B, 64), Rights::RW)
            .unwrap();
    }
    a.os.set_group(Pid(1), vec![(B, Pid(2))]).unwrap();
}

/// A fetch-and-add of `add` to the word at 0x40_0008 of the running process.
fn fetch_add_sequence(add: u64) -> Vec<UserOp> {
    let shadow = shadow_va(0x40_0008);
    vec![
        UserOp::Write(Field::Op.va(), OpCode::FetchAdd as u64),
        UserOp::Write(Field::Arg.va(), add),
        UserOp::Write(shadow, 0x40_0008),
    ]
}

fn word(m: &Magic<UserNode>, n: NodeId, f: u64) -> u64 {
    let a = PAddr(frame(n, f).0 + 8);
    u64::from_le_bytes(
        m.memory(n).unwrap().line(a.line())[8..16]
            .try_into()
            .unwrap(),
    )
}

fn run(m: &mut Magic<UserNode>) {
    m.start_processor(A, Cycles(0)).unwrap();
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
}

fn log(m: &Magic<UserNode>) -> &[UserEvent] {
    &m.state(A).unwrap().cpu.log
}

#[test]
fn a_sequence_interrupted_by_a_context_switch_resumes() {
    let mut m = setup();
    let seq1 = fetch_add_sequence(5);
    let seq3 = fetch_add_sequence(7);
    let mut ops = vec![UserOp::Switch(Pid(1))];
    ops.extend(seq1[..2].iter().cloned());
    // Process 3 runs a whole sequence of its own in the middle.
    ops.push(UserOp::Switch(Pid(3)));
    ops.extend(seq3);
    ops.extend([UserOp::Commit, UserOp::Wait, UserOp::Switch(Pid(1))]);
    ops.extend(seq1[2..].iter().cloned());
    ops.extend([UserOp::Commit, UserOp::Wait]);
    m.state_mut(A).unwrap().push(ops);
    run(&mut m);
    // Each process's add went to its own word: the records never mixed.
    assert_eq!((word(&m, B, 16), word(&m, B, 17)), (5, 7));
    let acks = log(&m)
        .iter()
        .filter(|e| matches!(e, UserEvent::Ack { .. }))
        .count();
    assert_eq!(acks, 2);
    assert_eq!(m.state(A).unwrap().magic.records_in_use(), 0);
}

#[test]
fn out_of_group_sends_are_refused_or_dropped_and_counted() {
    let mut m = setup();
    let send = || {
        vec![
            UserOp::Write(Field::Op.va(), OpCode::SendPhys as u64),
            UserOp::Write(Field::Arg.va(), 256),
            UserOp::Write(Field::Vpid.va(), 0),
            UserOp::Write(shadow_va(0x10_0000), 0x10_0000),
            UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
            UserOp::Commit,
        ]
    };
    // Process 3 has no group: its send is refused at the commit.
    let mut ops = vec![UserOp::Switch(Pid(3))];
    ops.extend(send());
    // Process 1 sends to process 2, but process 2 no longer counts process 1
    // as a peer: the receiving MAGIC drops the data.
    ops.push(UserOp::Switch(Pid(1)));
    ops.extend(send());
    m.state_mut(A).unwrap().push(ops);
    m.state_mut(B)
        .unwrap()
        .os
        .set_group(Pid(2), vec![(A, Pid(9))])
        .unwrap();
    let before = m.memory(B).unwrap().line(frame(B, 64).line());
    m.start_processor(A, Cycles(0)).unwrap();
    let r = m.run();
    let refused = m.state(A).unwrap().magic.stats.refused_out_of_group;
    let dropped = m.state(B).unwrap().magic.stats.dropped_forged;
    assert_eq!(refused, 1);
    assert_eq!(dropped, 2, "both lines of the send");
    assert!(log(&m).iter().any(|e| matches!(
        e,
        UserEvent::Nack {
            reason: Nack::NotAllowed,
            ..
        }
    )));
    // Nothing was written; the sender learns its send failed, and its record
    // is freed.
    assert_eq!(m.memory(B).unwrap().line(frame(B, 64).line()), before);
    assert!(r.is_clean(), "{:?}", r.stuck);
    assert!(
        log(&m).iter().any(|e| matches!(
            e,
            UserEvent::Done {
                pid: Pid(1),
                ok: false,
                ..
            }
        )),
        "{:?}",
        log(&m)
    );
    assert_eq!(m.state(A).unwrap().magic.records_in_use(), 0);
}

#[test]
fn a_copy_into_a_read_only_page_cannot_even_be_named() {
    let mut m = setup();
    m.state_mut(A)
        .unwrap()
        .os
        .map(Pid(1), VPage::of(0x20_0000), frame(B, 64), Rights::RO)
        .unwrap();
    let before = m.memory(B).unwrap().line(frame(B, 64).line());
    m.state_mut(A).unwrap().push([
        UserOp::Switch(Pid(1)),
        UserOp::Write(Field::Op.va(), OpCode::MemCopy as u64),
        UserOp::Write(Field::Arg.va(), 128),
        UserOp::Write(shadow_va(0x10_0000), 0x10_0000),
        // The write shadow of a read-only page is not mapped: a fault.
        UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
        UserOp::Commit,
    ]);
    run(&mut m);
    assert_eq!(m.state(A).unwrap().cpu.faults, 1);
    assert!(log(&m).iter().any(|e| matches!(
        e,
        UserEvent::Nack {
            reason: Nack::Malformed,
            retry: false,
            ..
        }
    )));
    assert_eq!(m.memory(B).unwrap().line(frame(B, 64).line()), before);
}

#[test]
fn holdoff_delays_the_os_until_the_count_drains_and_refuses_new_holdoff_operations() {
    // A memory copy is under way when the OS asks for a change.
    let (r, m) = experiments::remap(Technique::Holdoff, MagicParams::default()).unwrap();
    assert!(r.data_ok);
    assert!(r.os_wait_cycles > 1000, "{r:?}");
    let at = |m: &Magic<UserNode>, f: fn(&UserEvent) -> Option<Cycles>| {
        m.state(A).unwrap().cpu.log.iter().find_map(f)
    };
    let changed = |e: &UserEvent| match e {
        UserEvent::Changed { at, .. } => Some(*at),
        _ => None,
    };
    let done = |e: &UserEvent| match e {
        UserEvent::Done { at, .. } => Some(*at),
        _ => None,
    };
    // The OS went on only when the copy had completed.
    let (c, d) = (at(&m, changed).unwrap(), at(&m, done).unwrap());
    assert!(c + Cycles(1) >= d, "{:?}", m.state(A).unwrap().cpu.log);
    assert_eq!(m.state(A).unwrap().magic.stats.holdoff_waits, 1);

    // While the OS waits, another process's fetch-and-add is refused, backs
    // off, and goes through once the copy has drained.
    let mut m = setup();
    let mut ops = vec![
        UserOp::Switch(Pid(1)),
        UserOp::Write(Field::Op.va(), OpCode::MemCopy as u64),
        UserOp::Write(Field::Arg.va(), PAGE_BYTES),
        UserOp::Write(shadow_va(0x10_0000), 0x10_0000),
        UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
        UserOp::Commit,
        UserOp::Change(Pid(1), Change::Unmap(VPage::of(0x40_0000))),
        UserOp::Switch(Pid(3)),
    ];
    ops.extend(fetch_add_sequence(7));
    ops.extend([
        UserOp::Commit,
        UserOp::Wait,
        UserOp::Switch(Pid(1)),
        UserOp::Wait,
    ]);
    m.state_mut(A).unwrap().push(ops);
    run(&mut m);
    let l = log(&m);
    assert!(
        l.iter().any(|e| matches!(
            e,
            UserEvent::Nack {
                pid: Pid(3),
                reason: Nack::HoldOffDrain,
                retry: true,
                ..
            }
        )),
        "{l:?}"
    );
    let (c, d) = (at(&m, changed).unwrap(), at(&m, done).unwrap());
    assert!(c + Cycles(1) >= d, "the change waited for the copy: {l:?}");
    // Process 3's add went through after the change.
    let acked_3 = l.iter().rev().find_map(|e| match e {
        UserEvent::Ack { pid: Pid(3), at } => Some(*at),
        _ => None,
    });
    assert!(acked_3.unwrap() > c, "{l:?}");
    assert_eq!(word(&m, B, 17), 7);
}

#[test]
fn invalidation_detects_the_stale_page_interrupts_once_and_delivers_correct_data() {
    let (r, m) = experiments::remap(Technique::Invalidate, MagicParams::default()).unwrap();
    assert!(r.data_ok);
    assert_eq!(r.processor_interrupts, 1);
    assert_eq!(r.stale_uses_detected, 1);
    // The OS did not wait: invalidation does not hold it off.
    assert!(r.os_wait_cycles < 300, "{r:?}");
    assert_eq!(
        m.state(A).unwrap().magic.pages.in_use(),
        0,
        "every use unlinked at the end"
    );
}

#[test]
fn the_software_tlb_misses_then_hits() {
    let (r, mut m) = experiments::remap(Technique::Tlb, MagicParams::default()).unwrap();
    assert!(r.data_ok);
    // Each page misses once and hits when translated again after the OS's
    // answer; the moved page goes stale in use and is translated once more.
    assert_eq!(r.tlb_misses, experiments::PAGES);
    assert_eq!(r.tlb_hits, experiments::PAGES + 1, "{r:?}");
    assert_eq!(r.stale_uses_detected, 1);
    assert_eq!(r.processor_interrupts, experiments::PAGES + 1);
    // The TLB agrees with the page table after the change.
    let moved = VPage(VPage::of(0x10_0000).0 + 2);
    let want = m.state(A).unwrap().os.lookup(Pid(1), moved).unwrap().frame;
    assert_eq!(
        m.state_mut(A).unwrap().magic.tlb.lookup(Pid(1), moved),
        Some(want)
    );
}

#[test]
fn an_interrupt_answer_never_carries_a_translation_a_change_has_replaced() {
    // The OS is interrupted for a page, and a change of that very page is
    // notified before its answer goes out: the answer waits for the change
    // and carries the new frame, and the data come from it.
    let mut m = setup();
    let a = m.state_mut(A).unwrap();
    a.os.map(Pid(1), VPage::of(0x10_0000), frame(A, 32), Rights::RW)
        .unwrap();
    let mut line = [0u8; 128];
    line[0] = 0x5A;
    m.memory_mut(A)
        .unwrap()
        .store_line(PAddr(frame(A, 33).0).line(), &line);
    m.state_mut(A).unwrap().push([
        UserOp::Switch(Pid(1)),
        UserOp::Write(Field::Op.va(), OpCode::SendVirt as u64),
        UserOp::Write(Field::Arg.va(), 128),
        UserOp::Write(Field::Vpid.va(), 0),
        UserOp::Write(Field::Vaddr.va(), 0x10_0000),
        UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
        UserOp::Commit,
        // Remap the source page right after the TLB miss's interrupt.
        UserOp::Think(Cycles(10)),
        UserOp::Change(Pid(1), Change::Remap(VPage::of(0x10_0000), frame(A, 33))),
        UserOp::Wait,
    ]);
    run(&mut m);
    let l = log(&m);
    assert!(
        l.iter().any(|e| matches!(e, UserEvent::Interrupt { .. })),
        "{l:?}"
    );
    assert!(
        l.iter()
            .any(|e| matches!(e, UserEvent::Done { ok: true, .. })),
        "{l:?}"
    );
    assert_eq!(
        m.memory(B).unwrap().line(frame(B, 64).line())[0],
        0x5A,
        "sent from the new frame"
    );
    let v = VPage::of(0x10_0000);
    assert_eq!(
        m.state_mut(A).unwrap().magic.tlb.lookup(Pid(1), v),
        Some(frame(A, 33))
    );
}

#[test]
fn holdoff_is_refused_for_an_operation_that_needs_another_process() {
    let mut m = setup();
    let ops = vec![
        UserOp::Switch(Pid(1)),
        UserOp::Write(Field::Op.va(), OpCode::SendPhys as u64),
        UserOp::Write(Field::Arg.va(), 128),
        UserOp::Write(Field::Vpid.va(), 0),
        UserOp::Write(Field::Flags.va(), FLAG_HOLDOFF),
        UserOp::Write(shadow_va(0x10_0000), 0x10_0000),
        UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
        UserOp::Commit,
    ];
    m.state_mut(A).unwrap().push(ops);
    run(&mut m);
    let nacks: Vec<_> = log(&m)
        .iter()
        .filter_map(|e| match e {
            UserEvent::Nack { reason, retry, .. } => Some((*reason, *retry)),
            _ => None,
        })
        .collect();
    assert_eq!(nacks, vec![(Nack::NotAllowed, false)]);
}

#[test]
fn a_fetch_and_add_starts_well_below_the_bulk_transfer() {
    for target in [0, 1, 3] {
        let r = experiments::fetch_op(target, MagicParams::default()).unwrap();
        assert_eq!((r.old, r.new), (40, 42));
        assert!(r.startup.0 < 284 / 2, "start-up {}", r.startup);
        assert!(r.latency > r.startup);
    }
}

#[test]
fn a_transient_nack_is_retried_with_a_bounded_back_off() {
    // One record only, held by process 1's open sequence: process 3's
    // sequence is refused, backs off and tries again, and gives up after the
    // bounded number of tries (nothing it asked for happens); process 1 then
    // resumes and completes.
    let params = UserParams {
        records: 1,
        ..UserParams::default()
    };
    let mut m = machine(MagicParams::default(), params, 2).unwrap();
    configure(&mut m);
    let seq1 = fetch_add_sequence(5);
    let seq3 = fetch_add_sequence(7);
    let mut ops = vec![UserOp::Switch(Pid(1))];
    ops.extend(seq1[..1].iter().cloned());
    ops.push(UserOp::Switch(Pid(3)));
    ops.extend(seq3);
    ops.push(UserOp::Commit);
    ops.push(UserOp::Switch(Pid(1)));
    ops.extend(seq1[1..].iter().cloned());
    ops.extend([UserOp::Commit, UserOp::Wait]);
    m.state_mut(A).unwrap().push(ops);
    run(&mut m);
    let nacks: Vec<_> = log(&m)
        .iter()
        .filter_map(|e| match e {
            UserEvent::Nack {
                pid: Pid(3),
                reason: Nack::NoRecord,
                retry,
                at,
            } => Some((*retry, *at)),
            _ => None,
        })
        .collect();
    let tries = params.retries as usize;
    assert_eq!(nacks.len(), tries + 1);
    assert!(nacks[..tries].iter().all(|n| n.0) && !nacks[tries].0);
    // The back-off doubles: each gap is longer than the one before.
    let gaps: Vec<_> = nacks.windows(2).map(|w| (w[1].1 - w[0].1).0).collect();
    assert!(gaps.windows(2).all(|g| g[1] > g[0]), "{gaps:?}");
    assert_eq!((word(&m, B, 16), word(&m, B, 17)), (5, 0));
}

#[test]
fn a_packet_claiming_someone_elses_pid_is_dropped_and_counted() {
    use magic::testing::Bench;
    use protocols::user::msg::Tag;
    use protocols::user::{User, UserMsg};
    // The packet a send would carry, but claiming process 7, which process
    // 2 does not know.
    let mut bench = Bench::new(2, &User::default()).unwrap();
    let b = bench.machine().state_mut(B).unwrap();
    b.os.spawn(Pid(2));
    b.os.set_group(Pid(2), vec![(A, Pid(1))]).unwrap();
    let before = bench.machine().memory(B).unwrap().line(frame(B, 64).line());
    let tag = Tag {
        pid: Pid(7),
        slot: 0,
        last: true,
    };
    let forged = UserMsg::Line {
        tag,
        to: Pid(2),
        op: OpCode::SendPhys,
    };
    let msg = bench.msg(A, forged).addr(frame(B, 64));
    let shot = bench.inject_data(B, msg, Some([0xEE; 128])).unwrap();
    assert_eq!(shot.handler, "user.line_receive");
    // The sender still hears how its operation went.
    assert_eq!(shot.sent.len(), 1);
    assert_eq!(
        bench.decode::<UserMsg>(&shot.sent[0].msg),
        Ok(UserMsg::LineDone { tag, failed: true })
    );
    assert_eq!(
        bench.machine().state(B).unwrap().magic.stats.dropped_forged,
        1
    );
    assert_eq!(
        bench.machine().memory(B).unwrap().line(frame(B, 64).line()),
        before,
        "nothing written"
    );
}

#[test]
fn a_copy_committed_with_no_data_buffer_free_is_refused_as_short_of_resources() {
    use magic::{Cx, MagicBuilder, Msg, Protocol};
    use protocols::user::User;
    magic::messages! {
        /// Something else on the node.
        pub enum Hog: HogKind {
            /// Take a data buffer and keep it.
            Take,
        }
    }
    fn hog(cx: &mut Cx<'_, UserNode>, _: &Msg, _: hog::Take) {
        let _held = cx.alloc_buffer().unwrap();
    }
    let params = MagicParams {
        data_buffers: 1,
        ..MagicParams::default()
    };
    let user = User::default();
    let mut b = MagicBuilder::new(params, 2);
    b.install(&user, |s| s);
    let mut other = b.part("other", |s: &mut UserNode| s);
    let h = other.handler("hog", hog);
    other.route_any(h);
    let mut m = b.build(|n| user.node(n, 2)).unwrap();
    configure(&mut m);
    let take = m.msg(A, Hog::Take);
    m.post(A, Cycles(0), take).unwrap();
    m.state_mut(A).unwrap().push([
        UserOp::Switch(Pid(1)),
        UserOp::Write(Field::Op.va(), OpCode::MemCopy as u64),
        UserOp::Write(Field::Arg.va(), PAGE_BYTES),
        UserOp::Write(shadow_va(0x10_0000), 0x10_0000),
        UserOp::Write(shadow_dst_va(0x20_0000), 0x20_0000),
        UserOp::Commit,
    ]);
    m.start_processor(A, Cycles(0)).unwrap();
    let r = m.run();
    let nacks: Vec<_> = log(&m)
        .iter()
        .filter_map(|e| match e {
            UserEvent::Nack { reason, retry, .. } => Some((*reason, *retry)),
            _ => None,
        })
        .collect();
    let tries = UserParams::default().retries as usize;
    assert_eq!(nacks.len(), tries + 1, "{nacks:?}");
    assert!(nacks.iter().all(|n| n.0 == Nack::NoResource));
    assert!(!nacks[tries].1, "the last refusal is final");
    // Only the hog's buffer is left behind; no operation started.
    assert_eq!(
        r.stuck,
        vec!["node 0: 1 data buffer(s) still allocated".to_string()]
    );
    assert_eq!(m.state(A).unwrap().magic.stats.acks, 0);
}

#[test]
fn the_command_sheet_charges_the_command_writes_and_the_os_notices() {
    use magic::testing::Bench;
    use protocols::os_side::Frame;
    use protocols::user::{User, UserMsg};
    let mut user = User::default();
    user.params.command.write = 10;
    let mut bench = Bench::new(2, &user).unwrap();
    let w = bench
        .msg(A, UserMsg::Write { data: 1 })
        .addr(Field::Op.addr(A));
    let shot = bench.inject(A, w).unwrap();
    assert_eq!(
        (shot.handler.as_str(), shot.stats.instructions),
        ("user.cmd_write", 10)
    );
    let notice = UserMsg::OsNotice {
        page: VPage(3),
        pid: Pid(1),
        old: Frame(None),
    };
    let m = bench.msg(A, notice).addr(PAddr::new(Region::Message, A, 0));
    let shot = bench.inject(A, m).unwrap();
    assert_eq!(
        (shot.handler.as_str(), shot.stats.instructions),
        ("user.os_notice", 16)
    );
    // Nothing holds the page off: the OS hears at once.
    assert_eq!(
        bench.decode::<UserMsg>(&shot.sent[0].msg),
        Ok(UserMsg::OsAnswer)
    );
    // A whole experiment takes the sheet from the parameters.
    let mut up = UserParams::default();
    up.command.write = 20;
    let r = experiments::fetch_op_with(1, MagicParams::default(), up).unwrap();
    let ledger = r.machine.ledger();
    let row = ledger.handler(Some(0), "user.cmd_write").unwrap();
    assert_eq!(row.stats.instructions, 3 * 20);
}
