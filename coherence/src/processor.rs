//! The compute processor: an in-order program of loads, stores and
//! evictions over normal space, one operation at a time. Hits are served by
//! its cache in a cycle; a miss goes to MAGIC through the processor interface
//! and the processor waits for the fill.

use magic::{Cycles, LineState, Msg, PAddr, ProcStep, Processor, LINE_BYTES};
use serde::Serialize;
use std::collections::VecDeque;

use crate::protocol::mt;

/// One operation of a processor's program. Addresses are byte addresses of
/// 64-bit words in normal space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Op {
    Load(PAddr),
    Store(PAddr, u64),
    /// Replace the line: a dirty line is written back, a clean one dropped.
    Evict(PAddr),
    /// Compute for a while without touching memory.
    Think(Cycles),
}

impl Op {
    pub fn addr(self) -> PAddr {
        match self {
            Op::Load(a) | Op::Store(a, _) | Op::Evict(a) => a,
            Op::Think(_) => PAddr::default(),
        }
    }
}

/// What an operation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpResult {
    pub op: Op,
    /// The word a load returned.
    pub value: Option<u64>,
    pub issued: Cycles,
    /// When the processor had its data (or permission).
    pub done: Cycles,
    pub hit: bool,
    /// NAKs the miss met before it was served.
    pub retries: u32,
}

impl OpResult {
    pub fn latency(&self) -> Cycles {
        self.done - self.issued
    }
}

#[derive(Default)]
pub struct Proc {
    program: VecDeque<Op>,
    /// The operation waiting for a fill: (op, canonical address, issue cycle).
    current: Option<(Op, PAddr, Cycles)>,
    pub results: Vec<OpResult>,
    /// Fills that matched no waiting operation.
    pub stray_fills: u64,
    /// A dirty line the last step evicted (its node registers the writeback).
    pub(crate) evicted: Option<PAddr>,
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
    u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"))
}

fn write_word(bytes: &mut [u8; LINE_BYTES], a: PAddr, v: u64) {
    let o = word_at(a);
    bytes[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

impl Proc {
    /// Append operations to the program.
    pub fn push(&mut self, ops: impl IntoIterator<Item = Op>) {
        self.program.extend(ops);
    }

    /// Waiting for a fill.
    pub fn waiting(&self) -> bool {
        self.current.is_some()
    }

    /// Operations not yet started.
    pub fn remaining(&self) -> usize {
        self.program.len()
    }

    pub(crate) fn step(
        &mut self,
        p: &mut Processor<'_>,
        canon: impl Fn(PAddr) -> PAddr,
    ) -> ProcStep {
        if self.current.is_some() {
            return ProcStep::Idle;
        }
        let Some(op) = self.program.pop_front() else {
            return ProcStep::Idle;
        };
        let now = p.now();
        if let Op::Think(c) = op {
            self.results.push(OpResult {
                op,
                value: None,
                issued: now,
                done: now + c,
                hit: true,
                retries: 0,
            });
            return ProcStep::At(now + c);
        }
        let a = canon(op.addr());
        let me = p.node();
        let state = p.cache().state(a);
        let bytes = p.cache().bytes(a).copied();
        let hit = |value| OpResult {
            op,
            value,
            issued: now,
            done: now + Cycles(1),
            hit: true,
            retries: 0,
        };
        let miss = |t| Msg::new(t, me, me).addr(line_of(a));
        match (op, state, bytes) {
            (Op::Load(_), LineState::Clean | LineState::Dirty, Some(b)) => {
                self.results.push(hit(Some(read_word(&b, a))));
            }
            (Op::Store(_, v), LineState::Dirty, Some(mut b)) => {
                write_word(&mut b, a, v);
                p.cache().set(a, LineState::Dirty, b);
                self.results.push(hit(None));
            }
            (Op::Evict(_), LineState::Dirty, Some(b)) => {
                p.cache().set(a, LineState::Uncached, [0; LINE_BYTES]);
                self.evicted = Some(line_of(a));
                p.request(miss(mt::PI_WB), Some(b));
                self.results.push(hit(None));
            }
            (Op::Evict(_) | Op::Think(_), _, _) => {
                p.cache().set(a, LineState::Uncached, [0; LINE_BYTES]);
                self.results.push(hit(None));
            }
            (Op::Load(_), _, _) => return self.wait(p, op, a, miss(mt::PI_GET)),
            (Op::Store(..), LineState::Clean, Some(_)) => {
                return self.wait(p, op, a, miss(mt::PI_UPGRADE))
            }
            (Op::Store(..), _, _) => return self.wait(p, op, a, miss(mt::PI_GETX)),
        }
        ProcStep::At(now + Cycles(1))
    }

    fn wait(&mut self, p: &mut Processor<'_>, op: Op, a: PAddr, m: Msg) -> ProcStep {
        self.current = Some((op, a, p.now()));
        p.request(m, None);
        ProcStep::Idle
    }

    /// MAGIC's fill for the waiting operation: perform it and go on.
    pub(crate) fn fill(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        data: Option<&[u8; LINE_BYTES]>,
        invalidated: bool,
    ) -> ProcStep {
        let now = p.now();
        let Some((op, a, issued)) = self.current.take() else {
            self.stray_fills += 1;
            return ProcStep::Idle;
        };
        let exclusive = msg.args[0] != 0;

        // An upgrade's acknowledgement carries no data: the clean copy stays.
        let mut bytes = match data {
            Some(d) => *d,
            None => p.cache().bytes(a).copied().unwrap_or([0; LINE_BYTES]),
        };
        let value = match op {
            Op::Load(_) => {
                if !invalidated {
                    let st = if exclusive {
                        LineState::Dirty
                    } else {
                        LineState::Clean
                    };
                    p.cache().set(a, st, bytes);
                }
                Some(read_word(&bytes, a))
            }
            Op::Store(_, v) => {
                write_word(&mut bytes, a, v);
                p.cache().set(a, LineState::Dirty, bytes);
                None
            }
            Op::Evict(_) | Op::Think(_) => None,
        };
        self.results.push(OpResult {
            op,
            value,
            issued,
            done: now,
            hit: false,
            retries: msg.args[2] as u32,
        });
        ProcStep::At(now + Cycles(1))
    }
}
