//! The compute processor: an in-order program of loads, stores and
//! evictions over normal space, one access at a time. Hits are served by
//! its cache in a cycle; a miss goes to MAGIC through the processor interface
//! (a [`CohMsg`] request) and the processor waits for the fill.

use magic::pack::{put, put_opt, Reader};
use magic::{Cycles, LineState, PAddr, ProcStep, Processor, LINE_BYTES};
use serde::Serialize;
use std::collections::VecDeque;

use crate::msg::CohMsg;

/// One step of a processor's program: an access to memory or a pause.
/// Addresses are byte addresses of 64-bit words in normal space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Access {
    /// Read the word at the address.
    Load(PAddr),
    /// Write the value to the word at the address.
    Store(PAddr, u64),
    /// Replace the line: a dirty line is written back, a clean one dropped.
    Evict(PAddr),
    /// Compute for a while without touching memory.
    Think(Cycles),
}

impl Access {
    /// The address the access touches (the default address for a pause).
    pub fn addr(self) -> PAddr {
        match self {
            Access::Load(a) | Access::Store(a, _) | Access::Evict(a) => a,
            Access::Think(_) => PAddr::default(),
        }
    }
}

/// What an access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AccessResult {
    /// The access.
    pub access: Access,
    /// The word a load returned.
    pub value: Option<u64>,
    /// When the processor issued it (in cycles of 10 ns).
    pub issued: Cycles,
    /// When the processor had its data or permission (in cycles of 10 ns).
    pub done: Cycles,
    /// Served by the processor's cache without MAGIC.
    pub hit: bool,
    /// A load served by a clean copy in the cache. With acknowledgements
    /// collected at the home, that copy may be one whose invalidation is on
    /// its way, and the load returns the value from before the write (the
    /// reference model allows it; the checks hold such copies to it).
    pub shared: bool,
    /// NAKs the miss met before it was served.
    pub retries: u32,
}

impl AccessResult {
    /// From issue to done.
    pub fn latency(&self) -> Cycles {
        self.done - self.issued
    }
}

/// MAGIC's answer to a miss, as the processor receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fill {
    /// The line may be written.
    pub exclusive: bool,
    /// NAKs the miss met.
    pub retries: u32,
    /// The processor may not keep a read's copy (an invalidation came while
    /// the miss was outstanding).
    pub invalidated: bool,
}

/// A processor's program and what it has done so far.
#[derive(Default)]
pub struct Proc {
    program: VecDeque<Access>,
    /// The access waiting for a fill: (access, canonical address, issue cycle).
    current: Option<(Access, PAddr, Cycles)>,
    /// What each finished access did, in program order.
    pub results: Vec<AccessResult>,
    /// Fills that matched no waiting access.
    pub stray_fills: u64,
    /// The line the last step evicted, and how (its node registers a
    /// writeback or counts a hint).
    pub(crate) evicted: Option<(PAddr, Evicted)>,
}

/// `clone_from` reuses the storage of the processor it overwrites.
impl Access {
    fn pack(&self, out: &mut Vec<u8>) {
        let (tag, a, v) = match *self {
            Access::Load(a) => (0, a.0, 0),
            Access::Store(a, v) => (1, a.0, v),
            Access::Evict(a) => (2, a.0, 0),
            Access::Think(c) => (3, 0, c.0),
        };
        for x in [tag, a, v] {
            put(out, x);
        }
    }

    fn unpack(r: &mut Reader<'_>) -> Access {
        let (tag, a, v) = (r.u8(), PAddr(r.u64()), r.u64());
        match tag {
            0 => Access::Load(a),
            1 => Access::Store(a, v),
            2 => Access::Evict(a),
            3 => Access::Think(Cycles(v)),
            _ => {
                r.mark_short();
                Access::Think(Cycles(0))
            }
        }
    }
}

impl Proc {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        let Proc {
            program,
            current,
            results,
            stray_fills,
            evicted,
        } = self;
        put(out, program.len() as u64);
        program.iter().for_each(|a| a.pack(out));
        put(out, current.is_some().into());
        if let Some((a, at, t)) = current {
            a.pack(out);
            put(out, at.0);
            put(out, t.0);
        }
        put(out, results.len() as u64);
        for x in results {
            x.access.pack(out);
            put_opt(out, x.value);
            put(out, x.issued.0);
            put(out, x.done.0);
            put(out, x.hit as u64 | (x.shared as u64) << 1);
            put(out, x.retries.into());
        }
        put(out, *stray_fills);
        match evicted {
            None => put(out, 0),
            Some((a, e)) => {
                put(out, 1 + *e as u64);
                put(out, a.0);
            }
        }
    }

    /// Make this the processor [`Proc::pack`] packed, reusing its storage.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.program.clear();
        for _ in 0..r.count() {
            self.program.push_back(Access::unpack(r));
        }
        self.current = r.bool().then(|| {
            let a = Access::unpack(r);
            (a, PAddr(r.u64()), r.cycles())
        });
        self.results.clear();
        for _ in 0..r.count() {
            let access = Access::unpack(r);
            let value = r.opt();
            let (issued, done, flags) = (r.cycles(), r.cycles(), r.u8());
            self.results.push(AccessResult {
                access,
                value,
                issued,
                done,
                hit: flags & 1 != 0,
                shared: flags & 2 != 0,
                retries: r.u32(),
            });
        }
        self.stray_fills = r.u64();
        self.evicted = match r.u8() {
            0 => None,
            e => {
                let how = match e {
                    1 => Evicted::Dirty,
                    2 => Evicted::Clean,
                    3 => Evicted::Nothing,
                    _ => {
                        r.mark_short();
                        Evicted::Nothing
                    }
                };
                Some((PAddr(r.u64()), how))
            }
        };
    }
}

impl Clone for Proc {
    fn clone(&self) -> Self {
        Proc {
            program: self.program.clone(),
            current: self.current,
            results: self.results.clone(),
            stray_fills: self.stray_fills,
            evicted: self.evicted,
        }
    }

    fn clone_from(&mut self, src: &Self) {
        let Proc {
            program,
            current,
            results,
            stray_fills,
            evicted,
        } = src;
        self.program.clone_from(program);
        self.current = *current;
        self.results.clone_from(results);
        self.stray_fills = *stray_fills;
        self.evicted = *evicted;
    }
}

/// Byte offset of a word within its line.
fn word_at(a: PAddr) -> usize {
    (a.offset() as usize % LINE_BYTES) & !7
}

fn line_of(a: PAddr) -> PAddr {
    PAddr(a.0 & !(LINE_BYTES as u64 - 1))
}

fn read_word(bytes: &[u8; LINE_BYTES], a: PAddr) -> u64 {
    let o = word_at(a);
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[o..o + 8]);
    u64::from_le_bytes(w)
}

fn write_word(bytes: &mut [u8; LINE_BYTES], a: PAddr, v: u64) {
    let o = word_at(a);
    bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// What an eviction sent MAGIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Evicted {
    /// A writeback, with the line.
    Dirty,
    /// A replacement hint.
    Clean,
    /// Nothing (the line was not cached, or clean with hints off).
    Nothing,
}

/// Replace the line holding `a` in the processor's cache: a dirty line is
/// handed to MAGIC as a writeback with its bytes; a clean one is dropped,
/// with a replacement hint when `hints`.
pub(crate) fn evict(p: &mut Processor<'_>, a: PAddr, hints: bool) -> Evicted {
    let state = p.cache().state(a);
    let bytes = p.cache().bytes(a).copied();
    p.cache().set(a, LineState::Uncached, [0; LINE_BYTES]);
    match (state, bytes) {
        (LineState::Dirty, Some(b)) => {
            let wb = p.msg(CohMsg::PiWriteback).addr(line_of(a));
            p.request(wb, Some(b));
            Evicted::Dirty
        }
        (LineState::Clean, _) if hints => {
            let h = p.msg(CohMsg::PiReplace).addr(line_of(a));
            p.request(h, None);
            Evicted::Clean
        }
        _ => Evicted::Nothing,
    }
}

impl Proc {
    /// Append accesses to the program.
    pub fn push(&mut self, accesses: impl IntoIterator<Item = Access>) {
        self.program.extend(accesses);
    }

    /// Waiting for a fill.
    pub fn waiting(&self) -> bool {
        self.current.is_some()
    }

    /// Accesses not yet started.
    pub fn remaining(&self) -> usize {
        self.program.len()
    }

    /// The program's state, canonically (no times): accesses left, the one
    /// waiting, and what each finished one did.
    /// Each value stored or loaded is as `value` gives it (a renaming of
    /// the writer a value names).
    pub(crate) fn encode_renamed(&self, value: &dyn Fn(u64) -> u64, out: &mut Vec<u8>) {
        let access = |out: &mut Vec<u8>, a: &Access| {
            let (k, addr, v) = match *a {
                Access::Load(x) => (0u8, x.0, 0),
                Access::Store(x, v) => (1, x.0, value(v)),
                Access::Evict(x) => (2, x.0, 0),
                Access::Think(c) => (3, 0, c.0),
            };
            out.push(k);
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&v.to_le_bytes());
        };
        out.extend_from_slice(&(self.program.len() as u32).to_le_bytes());
        self.program.iter().for_each(|a| access(out, a));
        match &self.current {
            Some((a, _, _)) => {
                out.push(1);
                access(out, a);
            }
            None => out.push(0),
        }
        out.extend_from_slice(&(self.results.len() as u32).to_le_bytes());
        for r in &self.results {
            access(out, &r.access);
            out.extend_from_slice(&r.value.map_or(u64::MAX, value).to_le_bytes());
        }
        out.extend_from_slice(&self.stray_fills.to_le_bytes());
    }

    pub(crate) fn step(
        &mut self,
        p: &mut Processor<'_>,
        hints: bool,
        canon: impl Fn(PAddr) -> PAddr,
    ) -> ProcStep {
        if self.current.is_some() {
            return ProcStep::Idle;
        }
        let Some(access) = self.program.pop_front() else {
            return ProcStep::Idle;
        };
        let now = p.now();
        if let Access::Think(c) = access {
            self.results.push(AccessResult {
                access,
                value: None,
                issued: now,
                done: now + c,
                hit: true,
                shared: false,
                retries: 0,
            });
            return ProcStep::At(now + c);
        }
        let a = canon(access.addr());
        let state = p.cache().state(a);
        let bytes = p.cache().bytes(a).copied();
        let hit = |value| AccessResult {
            access,
            value,
            issued: now,
            done: now + Cycles(1),
            hit: true,
            shared: state == LineState::Clean && matches!(access, Access::Load(_)),
            retries: 0,
        };
        let miss = |p: &Processor<'_>, m: CohMsg| p.msg(m).addr(line_of(a));
        match (access, state, bytes) {
            (Access::Load(_), LineState::Clean | LineState::Dirty, Some(b)) => {
                self.results.push(hit(Some(read_word(&b, a))));
            }
            (Access::Store(_, v), LineState::Dirty, Some(mut b)) => {
                write_word(&mut b, a, v);
                p.cache().set(a, LineState::Dirty, b);
                self.results.push(hit(None));
            }
            (Access::Evict(_) | Access::Think(_), _, _) => {
                self.evicted = Some((line_of(a), evict(p, a, hints)));
                self.results.push(hit(None));
            }
            (Access::Load(_), _, _) => {
                let m = miss(p, CohMsg::PiGet);
                return self.wait(p, access, a, m);
            }
            (Access::Store(..), LineState::Clean, Some(_)) => {
                let m = miss(p, CohMsg::PiUpgrade);
                return self.wait(p, access, a, m);
            }
            (Access::Store(..), _, _) => {
                let m = miss(p, CohMsg::PiGetX);
                return self.wait(p, access, a, m);
            }
        }
        ProcStep::At(now + Cycles(1))
    }

    fn wait(&mut self, p: &mut Processor<'_>, access: Access, a: PAddr, m: magic::Msg) -> ProcStep {
        self.current = Some((access, a, p.now()));
        p.request(m, None);
        ProcStep::Idle
    }

    /// MAGIC's fill for the waiting access: perform it and go on.
    pub(crate) fn fill(
        &mut self,
        p: &mut Processor<'_>,
        fill: Fill,
        data: Option<&[u8; LINE_BYTES]>,
    ) -> ProcStep {
        let now = p.now();
        let Some((access, a, issued)) = self.current.take() else {
            self.stray_fills += 1;
            return ProcStep::Idle;
        };
        // An upgrade's acknowledgement carries no data: the clean copy stays.
        let mut bytes = match data {
            Some(d) => *d,
            None => p.cache().bytes(a).copied().unwrap_or([0; LINE_BYTES]),
        };
        let value = match access {
            Access::Load(_) => {
                if !fill.invalidated {
                    let st = if fill.exclusive {
                        LineState::Dirty
                    } else {
                        LineState::Clean
                    };
                    p.cache().set(a, st, bytes);
                }
                Some(read_word(&bytes, a))
            }
            Access::Store(_, v) => {
                write_word(&mut bytes, a, v);
                p.cache().set(a, LineState::Dirty, bytes);
                None
            }
            Access::Evict(_) | Access::Think(_) => None,
        };
        self.results.push(AccessResult {
            access,
            value,
            issued,
            done: now,
            hit: false,
            shared: false,
            retries: fill.retries,
        });
        ProcStep::At(now + Cycles(1))
    }
}
