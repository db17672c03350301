//! The fuzz targets' bodies: each takes arbitrary bytes, turns them into an
//! input of the kit (a scenario file, a user program of command sequences, a
//! transfer configuration), runs it, and checks what must hold, not only
//! that nothing panicked. `fuzz/` runs them under libFuzzer (nightly); the
//! corpus it keeps is replayed through the same functions by `cargo test`.
//!
//! A body returns `Err` with what broke; it never panics on its own.
//!
//! ```
//! // Any bytes are an input: these are not a scenario, which is an answer.
//! assert!(flashkit::fuzzing::scenario(b"[transfer\nbytes = ").is_ok());
//! assert!(flashkit::fuzzing::transfer(&[7, 1, 2, 3]).is_ok());
//! ```

use crate::scenario::{self, Source};
use magic::Cycles;
use os_shim::{Change, Pid, VPage, PAGE_BYTES};
use protocols::transfer::{
    self, Config, Direction, Failed, Mode, Placement, ReceiverState, SenderState, Strategy, Version,
};
use protocols::user::check::{command_frames, run_commands};
use protocols::user::cmd::{shadow_dst_va, shadow_va, COMMAND_VA};
use protocols::user::UserOp;

/// Bytes read as small choices; past the end every choice is 0.
struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn more(&self) -> bool {
        self.at < self.data.len()
    }

    /// A number below `n` (n >= 1).
    fn below(&mut self, n: u64) -> u64 {
        let x = u64::from(self.byte()) << 8 | u64::from(self.byte());
        x % n
    }

    fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }
}

/// A scenario file: one that parses prints as TOML that parses to the same
/// scenario; an error is one line; a small experiment (a miss, a
/// fetch-and-add, a remap, a transfer of at most 16 KB) runs, twice to the
/// same report.
pub fn scenario(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let src = Source {
        path: "fuzz.toml",
        text,
    };
    let parsed = scenario::table(&src).and_then(|t| scenario::parse(&src, t));
    let s = match parsed {
        Ok(s) => s,
        Err(e) => return one_line(&e.to_string()),
    };
    let printed = s
        .to_toml()
        .map_err(|e| format!("a parsed scenario does not print: {e}"))?;
    let again = Source {
        path: "printed.toml",
        text: &printed,
    };
    let back = scenario::table(&again)
        .and_then(|t| scenario::parse(&again, t))
        .map_err(|e| format!("the printed scenario does not parse: {e}\n{printed}"))?;
    let reprinted = back.to_toml().map_err(|e| e.to_string())?;
    if reprinted != printed {
        return Err(format!(
            "printing is not a fixed point:\n{printed}\n---\n{reprinted}"
        ));
    }
    let small = s.miss.is_some()
        || s.fetch_op.is_some()
        || s.remap.is_some()
        || s.transfer
            .as_ref()
            .is_some_and(|t| t.bytes <= 16384 && t.receives <= 64 && t.sends <= 64);
    if !small {
        return Ok(());
    }
    match (scenario::run(&s), scenario::run(&s)) {
        (Ok(a), Ok(b)) => {
            if a.json != b.json || a.table != b.table || a.failed != b.failed {
                return Err("two runs of one scenario differ".into());
            }
            Ok(())
        }
        (Err(a), Err(b)) if a.to_string() == b.to_string() => one_line(&a.to_string()),
        _ => Err("two runs of one scenario differ in success".into()),
    }
}

fn one_line(e: &str) -> Result<(), String> {
    if e.is_empty() || e.contains('\n') {
        return Err(format!("an error that is not one line: {e:?}"));
    }
    Ok(())
}

/// A transfer configuration (at most 2 KB, split over up to four receives
/// and sends, any placement and direction, any coherence mode): refused with
/// the field named, or run twice to the same outcome; under local or global
/// coherence, or none with the programs' flushes and no send buffer dirty in
/// a third node's cache, every byte arrives and the caches are coherent. A
/// run may never stop with work pending.
pub fn transfer(data: &[u8]) -> Result<(), String> {
    let mut i = Input { data, at: 0 };
    let mode = [Mode::None, Mode::Local, Mode::Global][i.below(3) as usize];
    let c = Config {
        bytes: 1 + i.below(2048),
        sender: [
            SenderState::Uncached,
            SenderState::Clean,
            SenderState::Dirty,
            SenderState::DirtyRemote,
        ][i.below(4) as usize],
        receiver: [
            ReceiverState::Uncached,
            ReceiverState::Clean,
            ReceiverState::Dirty,
            ReceiverState::CleanRemote,
            ReceiverState::DirtyRemote,
        ][i.below(5) as usize],
        handler: match i.below(3) {
            0 => Version::Base,
            1 => Version::Optimized,
            _ => Version::Chunked(1 + i.below(8) as u32),
        },
        src_offset: i.below(PAGE_BYTES),
        dst_offset: i.below(PAGE_BYTES),
        mode,
        flush: i.bool(),
        // A fetch strategy is global coherence's alone.
        strategy: if i.bool() && mode == Mode::Global {
            Strategy::Collect
        } else {
            Strategy::Pipelined
        },
        placement: if i.below(4) == 0 {
            Placement::Third
        } else {
            Placement::Home
        },
        direction: if i.bool() {
            Direction::Bi
        } else {
            Direction::Uni
        },
        receives: 1 + i.below(4) as u32,
        sends: 1 + i.below(4) as u32,
        receive_first: !i.bool(),
        ..Config::default()
    };
    let run = |c: &Config| match transfer::run(c) {
        Ok(o) => Ok(Some(o)),
        Err(Failed::Config(e)) => one_line(&e.to_string()).map(|()| None),
        Err(Failed::Input(e)) => one_line(&e).map(|()| None),
        Err(Failed::Stuck(s)) => Err(format!("{c:?} stopped with work pending: {s}")),
    };
    let (Some(a), Some(b)) = (run(&c)?, run(&c)?) else {
        return Ok(());
    };
    if a.json() != b.json() {
        return Err(format!("two runs of {c:?} differ"));
    }
    // Under none, the programs' flushes reach their own caches only: a
    // buffer cached in a third node's cache stays stale there.
    let coherent = c.mode != Mode::None
        || (c.flush && c.sender != SenderState::DirtyRemote && !c.receiver.remote());
    if coherent && (!a.data_ok || a.incoherent.is_some()) {
        return Err(format!(
            "{c:?}: data ok {}, incoherent {:?}, stale {:?}",
            a.data_ok, a.incoherent, a.stale
        ));
    }
    Ok(())
}

/// A user program of command sequences among three processes on node 0
/// (register writes with any value, shadow references, garbage addresses,
/// commits, context switches, remaps of a source page) sending to one
/// process on node 1: every commit is answered, every accepted operation
/// completes, no record ever holds a page its process did not name, and
/// nothing is left stuck.
pub fn commands(data: &[u8]) -> Result<(), String> {
    let mut i = Input { data, at: 0 };
    let records = 1 + i.below(4) as usize;
    let mut ops = vec![UserOp::Switch(Pid(1))];
    let mut running = 1u16;
    while i.more() && ops.len() < 80 {
        ops.push(match i.below(10) {
            0 => {
                running = 1 + i.below(3) as u16;
                UserOp::Switch(Pid(running))
            }
            1 | 2 => {
                let r = i.below(6);
                let v = [0, 1, 2, 3, 4, 128, 4096, 5000, 1 << 40, 0x10_0000][i.below(10) as usize];
                UserOp::Write(COMMAND_VA + r * 8, v)
            }
            3 => UserOp::Write(shadow_va(0x10_0000 + i.below(4) * 1024), 0x10_0000),
            4 => UserOp::Write(shadow_dst_va(0x20_0000 + i.below(4) * 1024), 0x20_0000),
            5 => UserOp::Write(shadow_va(0x40_0008), 0x40_0008),
            6 => {
                let g = u64::from_le_bytes([i.byte(), i.byte(), i.byte(), i.byte(), 0, 0, 0, 0]);
                UserOp::Write(g, g)
            }
            7 | 8 => UserOp::Commit,
            _ if i.bool() => UserOp::Think(Cycles(1 + i.below(200))),
            _ => {
                let to = command_frames(running)[if i.bool() { 3 } else { 0 }];
                UserOp::Change(Pid(running), Change::Remap(VPage::of(0x10_0000), to))
            }
        });
    }
    run_commands(records, ops)
}
