//! Random command sequences: random writes (registers, shadow references,
//! garbage), random commits and random context switches among three
//! processes. Nothing panics, every commit is answered, every accepted
//! operation completes, and no record ever holds a page another process named.

use magic::{Cycles, MagicParams, NodeId, PAddr, Region};
use os_shim::{Change, Pid, Rights, VPage, PAGE_BYTES};
use proptest::prelude::*;
use protocols::user::cmd::{shadow_dst_va, shadow_va, COMMAND_VA};
use protocols::user::{machine, UserEvent, UserOp, UserParams};
use std::fmt;

const A: NodeId = NodeId(0);
const B: NodeId = NodeId(1);

fn frame(n: NodeId, k: u64) -> PAddr {
    PAddr::new(Region::Normal, n, k * PAGE_BYTES)
}

/// Process `p`'s frames: source on node 0, destination and word on node 1,
/// and a second source frame its source page may be remapped to.
fn frames(p: u16) -> [PAddr; 4] {
    let k = p as u64;
    [
        frame(A, 32 + 4 * k),
        frame(B, 64 + 4 * k),
        frame(B, 16 + k),
        frame(A, 33 + 4 * k),
    ]
}

#[derive(Clone, Copy)]
enum Act {
    Switch(u16),
    Reg(u8, u64),
    Src(u16),
    Dst(u16),
    Word,
    Garbage(u64),
    Commit,
    Think(u8),
    /// The OS remaps the running process's source page (to its other frame).
    Remap(bool),
}

impl fmt::Debug for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Act::Switch(p) => write!(f, "switch p{p}"),
            Act::Reg(r, v) => write!(f, "reg{r}={v}"),
            Act::Src(o) => write!(f, "src+{o}"),
            Act::Dst(o) => write!(f, "dst+{o}"),
            Act::Word => write!(f, "word"),
            Act::Garbage(a) => write!(f, "garbage {a:#x}"),
            Act::Commit => write!(f, "commit"),
            Act::Think(c) => write!(f, "think {c}"),
            Act::Remap(alt) => write!(f, "remap src to {}", if *alt { "alt" } else { "home" }),
        }
    }
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        2 => (1u16..=3).prop_map(Act::Switch),
        6 => (0u8..6, prop_oneof![0u64..5, Just(128), Just(4096), Just(5000), Just(1 << 40)]).prop_map(|(r, v)| Act::Reg(r, v)),
        2 => (0u16..4).prop_map(|o| Act::Src(o * 1024)),
        2 => (0u16..4).prop_map(|o| Act::Dst(o * 1024)),
        1 => Just(Act::Word),
        1 => any::<u64>().prop_map(Act::Garbage),
        3 => Just(Act::Commit),
        1 => (1u8..200).prop_map(Act::Think),
        1 => any::<bool>().prop_map(Act::Remap),
        // A proper source virtual address for the TLB path.
        1 => Just(Act::Reg(3, 0x10_0000)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(500),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_command_sequences_are_answered_and_isolated(
        records in 1usize..=4,
        acts in proptest::collection::vec(act(), 1..60),
    ) {
        let params = UserParams { records, ..UserParams::default() };
        let mut m = machine(MagicParams::default(), params, 2).unwrap();
        let b = m.state_mut(B);
        b.os.spawn(Pid(2));
        b.os.set_group(Pid(2), (1..=3).map(|p| (A, Pid(p))).collect()).unwrap();
        for p in 1..=3u16 {
            b.os.map(Pid(2), VPage(0x300 + p as u64), frames(p)[1], Rights::RW).unwrap();
        }
        let a = m.state_mut(A);
        for p in 1..=3u16 {
            let [s, d, w, _] = frames(p);
            a.os.spawn(Pid(p));
            a.os.map(Pid(p), VPage::of(0x10_0000), s, Rights::RW).unwrap();
            a.os.map(Pid(p), VPage::of(0x20_0000), d, Rights::RW).unwrap();
            a.os.map(Pid(p), VPage::of(0x40_0000), w, Rights::RW).unwrap();
            a.os.set_group(Pid(p), vec![(B, Pid(2))]).unwrap();
        }
        // The program: virtual addresses, translated by the processor with
        // the running process's mappings (garbage ones fault).
        let mut ops = vec![UserOp::Switch(Pid(1))];
        let mut running = 1u16;
        for x in &acts {
            ops.push(match *x {
                Act::Switch(p) => {
                    running = p;
                    UserOp::Switch(Pid(p))
                }
                Act::Reg(r, v) => UserOp::Write(COMMAND_VA + r as u64 * 8, v),
                Act::Src(o) => UserOp::Write(shadow_va(0x10_0000 + o as u64), 0x10_0000),
                Act::Dst(o) => UserOp::Write(shadow_dst_va(0x20_0000 + o as u64), 0x20_0000),
                Act::Word => UserOp::Write(shadow_va(0x40_0008), 0x40_0008),
                Act::Garbage(g) => UserOp::Write(g, g),
                Act::Commit => UserOp::Commit,
                Act::Think(c) => UserOp::Think(Cycles(c as u64)),
                Act::Remap(alt) => {
                    let to = frames(running)[if alt { 3 } else { 0 }];
                    UserOp::Change(Pid(running), Change::Remap(VPage::of(0x10_0000), to))
                }
            });
        }
        m.state_mut(A).push(ops);
        m.start_processor(A, Cycles(0)).unwrap();
        while let Some(t) = m.step() {
            prop_assert!(t < Cycles(5_000_000), "still running at {t}");
            // No record holds a page that its process did not name.
            for p in 1..=3u16 {
                if let Some(r) = m.state(A).magic.record_of(Pid(p)) {
                    let mine = frames(p);
                    for s in &r.src {
                        prop_assert!(mine.contains(&s.page), "p{p}'s record holds {}", s.page);
                    }
                    for d in &r.dst {
                        prop_assert!(mine.contains(d), "p{p}'s record holds {d}");
                    }
                }
            }
        }
        let report = m.report(false);
        let n = m.state(A);
        let answers = n.cpu.log.iter().filter(|e| matches!(e, UserEvent::Ack { .. } | UserEvent::Nack { .. })).count();
        let acks = n.cpu.log.iter().filter(|e| matches!(e, UserEvent::Ack { .. })).count();
        let dones = n.cpu.log.iter().filter(|e| matches!(e, UserEvent::Done { .. })).count();
        prop_assert_eq!(answers as u64, n.cpu.commits, "every commit answered");
        prop_assert_eq!(acks, dones, "every accepted operation completes");
        prop_assert!(report.is_clean(), "{:?}", report.stuck);
    }
}
