//! Random command sequences: random writes (registers, shadow references,
//! garbage), random commits and random context switches among three
//! processes. Nothing panics, every commit is answered, every accepted
//! operation completes, and no record ever holds a page another process named.

use magic::Cycles;
use os_shim::{Change, Pid, VPage};
use proptest::prelude::*;
use protocols::user::check::{command_frames, run_commands};
use protocols::user::cmd::{shadow_dst_va, shadow_va, COMMAND_VA};
use protocols::user::UserOp;
use std::fmt;

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
                    let to = command_frames(running)[if alt { 3 } else { 0 }];
                    UserOp::Change(Pid(running), Change::Remap(VPage::of(0x10_0000), to))
                }
            });
        }
        // No record holds a page its process did not name, every commit is
        // answered, every accepted operation completes, nothing is stuck.
        let r = run_commands(records, ops);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
