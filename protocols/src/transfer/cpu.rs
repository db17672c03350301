//! The compute processor's side of the transfer: the user program issuing
//! its command sequences (one write naming the operation and length, one
//! write per page of the buffer through the page's shadow, the committing
//! read) and hearing MAGIC's answers, and the OS changing translations and
//! answering MAGIC's interrupts ([`OsSide`]).

use super::msg::{Refusal, XferMsg, XferOp};
use crate::os_side::{pages_spanned, OsSide};
use coherence::protocol::CohNode;
use magic::costs::Source;
use magic::{Cycles, Msg, PAddr, ProcStep, Processor, Region, LINE_BYTES};
use os_shim::{Change, Os, Pid, PAGE_BYTES};
use serde::Serialize;
use std::collections::VecDeque;

magic::cost_sheet! {
    /// What the user program's flush of message data costs the compute
    /// processor, per line of the buffer, in cycles of 10 ns. The program
    /// does not know which lines its cache holds: it issues one cache
    /// instruction (write back if dirty, then invalidate) per line of the
    /// buffer. A scenario's `[costs.flush]` table sets either.
    pub struct FlushCosts in "costs.flush" {
        /// A line the instruction finds clean or absent.
        clean_line: Cycles = Cycles(2), Source::Choice(
            "the cache instruction, the address increment and the loop branch on \
             a 200 MHz dual-issue processor with one secondary-cache tag lookup: \
             about 4 processor cycles.");
        /// A line it finds dirty and writes back; the processor goes on once
        /// the line has left its cache, MAGIC's writeback handler runs after.
        dirty_line: Cycles = Cycles(16), Source::Derived(
            "the line's 16 doublewords cross the processor interface one a cycle, \
             as an intervention's data does (pc_line - pc_first_word + 1).");
    }
}

/// A flush under way: the lines left and what it has done so far.
#[derive(Clone, Debug)]
struct Flushing {
    va: u64,
    from: Cycles,
    lines: VecDeque<PAddr>,
    count: u64,
    written: u64,
}

/// One operation of the user program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnOp {
    /// Connect to the process the virtual PID names.
    Connect {
        /// The partner's virtual PID.
        vpid: u16,
    },
    /// Post a receive of `len` bytes at virtual address `va`.
    Post {
        /// The buffer's virtual address.
        va: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// Send `len` bytes from virtual address `va`.
    Send {
        /// The buffer's virtual address.
        va: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// A translation change of the process's page: the OS notifies MAGIC,
    /// waits for its answer, then applies it (a move copies the page).
    Change(Change),
    /// Compute for this many cycles.
    Think(Cycles),
    /// Write back and invalidate every line of the buffer at `va` from the
    /// processor's cache, one cache instruction a line (what a program must
    /// do around a transfer whose message data MAGIC keeps no coherence for).
    Flush {
        /// The buffer's virtual address.
        va: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// Wait until this many receives are complete (told since the program
    /// last started).
    AwaitReceives(u32),
}

impl ConnOp {
    fn op(&self) -> Option<XferOp> {
        match self {
            ConnOp::Connect { .. } => Some(XferOp::Connect),
            ConnOp::Post { .. } => Some(XferOp::Post),
            ConnOp::Send { .. } => Some(XferOp::Send),
            ConnOp::Think(_)
            | ConnOp::Change(_)
            | ConnOp::Flush { .. }
            | ConnOp::AwaitReceives(_) => None,
        }
    }
}

/// What the user program saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ConnEvent {
    /// The first write of a command sequence went out.
    Issued {
        /// The operation.
        op: XferOp,
        /// When.
        at: Cycles,
    },
    /// MAGIC accepted a command.
    Ack {
        /// The operation.
        op: XferOp,
        /// When the answer reached the processor.
        at: Cycles,
    },
    /// MAGIC refused a command.
    Nack {
        /// The operation.
        op: XferOp,
        /// When the answer reached the processor.
        at: Cycles,
        /// Why.
        reason: Refusal,
    },
    /// A shadow reference to a page the process has not mapped faulted.
    Fault {
        /// When.
        at: Cycles,
        /// The virtual address.
        va: u64,
    },
    /// MAGIC met a stale page and asked the OS for its translation.
    Interrupt {
        /// When the interrupt reached the processor.
        at: Cycles,
        /// The virtual page.
        page: u64,
    },
    /// The OS applied a translation change after waiting for MAGIC.
    Changed {
        /// When MAGIC's answer reached the processor.
        at: Cycles,
        /// Cycles from the notice to the answer.
        waited: Cycles,
    },
    /// A send has been handed to the network whole.
    SendDone {
        /// When the processor heard of it.
        at: Cycles,
        /// The send's length.
        bytes: u64,
    },
    /// A receive is complete in memory.
    RecvDone {
        /// When the processor heard of it.
        at: Cycles,
        /// The receive's length.
        bytes: u64,
    },
    /// A flush of the buffer at `va` is over.
    Flushed {
        /// The buffer's virtual address.
        va: u64,
        /// When its first cache instruction issued.
        from: Cycles,
        /// When its last one was done.
        at: Cycles,
        /// Lines it went over.
        lines: u64,
        /// Lines it found dirty and wrote back.
        written: u64,
    },
}

impl ConnEvent {
    /// The event with its times zeroed: what it says, not when.
    pub fn without_times(self) -> ConnEvent {
        let z = Cycles(0);
        match self {
            ConnEvent::Issued { op, .. } => ConnEvent::Issued { op, at: z },
            ConnEvent::Ack { op, .. } => ConnEvent::Ack { op, at: z },
            ConnEvent::Nack { op, reason, .. } => ConnEvent::Nack { op, at: z, reason },
            ConnEvent::Fault { va, .. } => ConnEvent::Fault { at: z, va },
            ConnEvent::Interrupt { page, .. } => ConnEvent::Interrupt { at: z, page },
            ConnEvent::Changed { .. } => ConnEvent::Changed { at: z, waited: z },
            ConnEvent::SendDone { bytes, .. } => ConnEvent::SendDone { at: z, bytes },
            ConnEvent::RecvDone { bytes, .. } => ConnEvent::RecvDone { at: z, bytes },
            ConnEvent::Flushed {
                va, lines, written, ..
            } => ConnEvent::Flushed {
                va,
                from: z,
                at: z,
                lines,
                written,
            },
        }
    }
}

/// How long a program waits before it issues again a command MAGIC refused
/// for want of a record (`NoRecord`, "try again later"). A model choice:
/// about one setup handler's time (Table 1's setup and verification, 116
/// cycles), which is what frees a record.
pub const NO_RECORD_BACKOFF: Cycles = Cycles(116);

/// The compute processor's user program (and its OS).
#[derive(Clone, Debug, Default)]
pub struct ConnCpu {
    /// The process the program runs as.
    pub pid: Pid,
    program: VecDeque<ConnOp>,
    /// The writes and commit of the command being issued, one per cycle.
    issuing: VecDeque<Msg>,
    /// The command being issued (answers name its operation), to issue
    /// again if MAGIC has no record.
    issued: Option<ConnOp>,
    waiting: bool,
    resume_at: Option<Cycles>,
    /// The OS's interrupts to answer and its change waiting for MAGIC.
    os_side: OsSide,
    /// The flush under way.
    flushing: Option<Flushing>,
    /// Receives the program waits for (`AwaitReceives`).
    awaiting: Option<u32>,
    /// What a flush costs.
    pub flush_costs: FlushCosts,
    /// What the program saw, in order.
    pub log: Vec<ConnEvent>,
}

impl ConnCpu {
    /// The program's state, canonically (for the exhaustive checker):
    /// operations left and under way, what it waits for, when it goes on
    /// relative to `now`, the OS's debts, and what it saw (without times).
    pub fn encode(&self, now: Cycles, out: &mut Vec<u8>) {
        use std::io::Write;
        let resume = self.resume_at.map(|t| t.0.saturating_sub(now.0));
        let flushing = self
            .flushing
            .as_ref()
            .map(|f| (f.va, f.lines.clone(), f.count, f.written));
        let log: Vec<ConnEvent> = self.log.iter().map(|e| e.without_times()).collect();
        let _ = write!(
            out,
            "{:?}{:?}{:?}{:?}{}{resume:?}{flushing:?}{:?}{log:?}",
            self.pid, self.program, self.issuing, self.issued, self.waiting, self.awaiting
        );
        self.os_side.encode(now, out);
    }

    /// Append to the program.
    pub fn push(&mut self, ops: impl IntoIterator<Item = ConnOp>) {
        self.program.extend(ops);
    }

    /// Start the program: its first step is at `at` (start the processor
    /// then too, with `Magic::start_processor`).
    pub fn start(&mut self, at: Cycles) {
        self.resume_at = Some(at);
    }

    /// The program's unfinished business, in one line.
    pub(super) fn pending(&self) -> Option<String> {
        let busy = self.waiting
            || !self.program.is_empty()
            || !self.issuing.is_empty()
            || self.flushing.is_some()
            || self.awaiting.is_some();
        busy.then(|| {
            let why = if self.waiting {
                ", waiting for an answer".to_string()
            } else if let Some(n) = self.awaiting {
                format!(", waiting for {n} receive(s) to complete")
            } else {
                String::new()
            };
            format!("user program: {} op(s) left{why}", self.program.len())
        })
    }

    /// Receives told complete since the log was last cleared.
    fn receives_done(&self) -> u32 {
        let n = self
            .log
            .iter()
            .filter(|e| matches!(e, ConnEvent::RecvDone { .. }))
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The processor's time spent on the program's operations as the log
    /// records them: each command from its first write to its answer, each
    /// flush from its first cache instruction to its last.
    pub fn busy(&self) -> Cycles {
        let mut total = 0;
        let mut issued = None;
        for e in &self.log {
            match *e {
                ConnEvent::Issued { at, .. } => issued = Some(at),
                ConnEvent::Ack { at, .. } | ConnEvent::Nack { at, .. } => {
                    if let Some(t) = issued.take() {
                        total += (at - t).0;
                    }
                }
                ConnEvent::Flushed { from, at, .. } => total += (at - from).0,
                _ => {}
            }
        }
        Cycles(total)
    }

    /// One cache instruction of the flush under way (false when there is
    /// none); the flush is logged when its last line is done.
    fn flush_step(&mut self, p: &mut Processor<'_>, coh: &mut CohNode) -> bool {
        let now = p.now();
        let Some(f) = self.flushing.as_mut() else {
            return false;
        };
        if let Some(line) = f.lines.pop_front() {
            let dirty = coh.flush_line(p, line);
            f.count += 1;
            f.written += u64::from(dirty);
            let c = self.flush_costs;
            self.resume_at = Some(now + if dirty { c.dirty_line } else { c.clean_line });
            return true;
        }
        if now > f.from {
            p.busy("flush", f.from, now);
        }
        self.log.push(ConnEvent::Flushed {
            va: f.va,
            from: f.from,
            at: now,
            lines: f.count,
            written: f.written,
        });
        self.flushing = None;
        false
    }

    /// Start flushing the buffer at `va`: the physical line of each of its
    /// virtual lines (one the process has not mapped faults and is skipped).
    fn start_flush(&mut self, os: &Os, now: Cycles, va: u64, len: u64) {
        let line = LINE_BYTES as u64;
        let mut lines = VecDeque::new();
        let mut v = va / line * line;
        while v < va + len.max(1) {
            match os.translate(self.pid, v) {
                Ok((a, _)) => lines.push_back(a),
                Err(_) => self.log.push(ConnEvent::Fault { at: now, va: v }),
            }
            v += line;
        }
        self.flushing = Some(Flushing {
            va,
            from: now,
            lines,
            count: 0,
            written: 0,
        });
    }

    fn next(&self) -> ProcStep {
        self.os_side
            .next_step(self.resume_at.filter(|_| !self.waiting))
    }

    /// The processor's step: the OS's answers to MAGIC's interrupts, then
    /// the command being issued (a write a cycle) or the program's next
    /// operation.
    pub(super) fn step(
        &mut self,
        p: &mut Processor<'_>,
        os: &mut Os,
        coh: &mut CohNode,
    ) -> ProcStep {
        let now = p.now();
        self.os_side.answer::<XferMsg>(p, os);
        if self.waiting || self.resume_at.is_none_or(|t| t > now) {
            return self.next();
        }
        self.resume_at = None;
        if self.flush_step(p, coh) {
            return self.next();
        }
        if let Some(m) = self.issuing.pop_front() {
            if p.decode::<XferMsg>(&m) == Ok(XferMsg::Commit) {
                self.waiting = true;
            } else {
                self.resume_at = Some(now + Cycles(1));
            }
            p.request(m, None);
            return self.next();
        }
        let Some(op) = self.program.pop_front() else {
            return ProcStep::Idle;
        };
        let code = match op {
            ConnOp::Think(c) => {
                self.resume_at = Some(now + c);
                return self.next();
            }
            ConnOp::Change(c) => {
                self.os_side.notify::<XferMsg>(p, os, self.pid, c);
                self.waiting = true;
                return self.next();
            }
            ConnOp::Flush { va, len } => {
                self.start_flush(os, now, va, len);
                self.resume_at = Some(now);
                return self.step(p, os, coh);
            }
            ConnOp::AwaitReceives(n) => {
                if self.receives_done() < n {
                    self.awaiting = Some(n);
                } else {
                    self.resume_at = Some(now);
                }
                return self.next();
            }
            ConnOp::Connect { .. } | ConnOp::Post { .. } | ConnOp::Send { .. } => match op.op() {
                Some(code) => code,
                None => return self.next(),
            },
        };
        let me = p.node();
        let pid = self.pid;
        let cmd = |p: &Processor<'_>, m: XferMsg, a: PAddr| p.msg(m).addr(a);
        let op_addr = PAddr::new(Region::Message, me, code as u64 * 8);
        let mut q = VecDeque::new();
        match op {
            ConnOp::Connect { vpid } => {
                q.push_back(cmd(p, XferMsg::Command { arg: vpid as u64 }, op_addr))
            }
            ConnOp::Post { va, len } | ConnOp::Send { va, len } => {
                q.push_back(cmd(p, XferMsg::Command { arg: len }, op_addr));
                let write = code == XferOp::Post;
                for k in 0..pages_spanned(va, len.max(1)) {
                    let v = if k == 0 {
                        va
                    } else {
                        (va / PAGE_BYTES + k) * PAGE_BYTES
                    };
                    let shadow = if write {
                        os.shadow_write(pid, v)
                    } else {
                        os.shadow(pid, v)
                    };
                    match shadow {
                        Ok(a) => q.push_back(cmd(p, XferMsg::Page { vaddr: v }, a)),
                        // The reference faults in the processor; MAGIC never
                        // sees the page.
                        Err(_) => self.log.push(ConnEvent::Fault { at: now, va: v }),
                    }
                }
            }
            _ => {}
        }
        q.push_back(cmd(p, XferMsg::Commit, PAddr::new(Region::Message, me, 0)));
        self.log.push(ConnEvent::Issued { op: code, at: now });
        self.issued = Some(op);
        self.issuing = q;
        self.resume_at = Some(now);
        self.step(p, os, coh)
    }

    /// MAGIC handed the processor `msg`; `None` if it is not the transfer's.
    pub(super) fn receive(
        &mut self,
        p: &mut Processor<'_>,
        os: &mut Os,
        msg: &Msg,
    ) -> Option<ProcStep> {
        let now = p.now();
        // The answer names the operation it answers.
        let current = self.issued.and_then(|o| o.op());
        let answer = |a: super::msg::Answering| a.0.or(current).unwrap_or(XferOp::Send);
        match p.decode::<XferMsg>(msg).ok()? {
            XferMsg::Ack { op } => {
                self.log.push(ConnEvent::Ack {
                    op: answer(op),
                    at: now,
                });
                self.answered(now);
            }
            XferMsg::Nack { reason, op } => {
                self.log.push(ConnEvent::Nack {
                    op: answer(op),
                    at: now,
                    reason,
                });
                let again = self.issued.filter(|_| reason == Refusal::NoRecord);
                self.answered(now);
                if let Some(op) = again {
                    // "Try again later": the same command, after a while.
                    self.program.push_front(op);
                    self.resume_at = Some(now + NO_RECORD_BACKOFF);
                }
            }
            XferMsg::Interrupt { page, pid } => {
                self.log.push(ConnEvent::Interrupt {
                    at: now,
                    page: page.0,
                });
                self.os_side
                    .interrupted(now + os.costs.interrupt, pid, page);
            }
            XferMsg::OsAnswer => {
                if let Some(a) = self.os_side.apply(p, os) {
                    self.log.push(ConnEvent::Changed {
                        at: now,
                        waited: a.waited,
                    });
                    self.waiting = false;
                    self.resume_at = Some(now + a.cost);
                }
            }
            XferMsg::SendDone { bytes, .. } => {
                self.log.push(ConnEvent::SendDone { at: now, bytes })
            }
            XferMsg::RecvDone { bytes, .. } => {
                self.log.push(ConnEvent::RecvDone { at: now, bytes });
                if self.awaiting.is_some_and(|n| self.receives_done() >= n) {
                    self.awaiting = None;
                    self.resume_at = Some(now + Cycles(1));
                }
            }
            _ => return None,
        }
        Some(self.next())
    }

    /// The command is answered: the program goes on.
    fn answered(&mut self, now: Cycles) {
        self.waiting = false;
        self.issued = None;
        self.resume_at = Some(now + Cycles(1));
    }
}
