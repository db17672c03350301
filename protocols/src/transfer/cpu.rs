//! The compute processor's side of the transfer: the user program issuing
//! its command sequences (one write naming the operation and length, one
//! write per page of the buffer through the page's shadow, the committing
//! read) and hearing MAGIC's answers, and the OS changing translations and
//! answering MAGIC's interrupts ([`OsSide`]).

use super::msg::{Refusal, XferMsg, XferOp};
use crate::os_side::{pages_spanned, OsSide};
use magic::{Cycles, Msg, PAddr, ProcStep, Processor, Region};
use os_shim::{Change, Os, Pid, PAGE_BYTES};
use serde::Serialize;
use std::collections::VecDeque;

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
}

impl ConnOp {
    fn op(&self) -> Option<XferOp> {
        match self {
            ConnOp::Connect { .. } => Some(XferOp::Connect),
            ConnOp::Post { .. } => Some(XferOp::Post),
            ConnOp::Send { .. } => Some(XferOp::Send),
            ConnOp::Think(_) | ConnOp::Change(_) => None,
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
}

/// The compute processor's user program (and its OS).
#[derive(Clone, Debug, Default)]
pub struct ConnCpu {
    /// The process the program runs as.
    pub pid: Pid,
    program: VecDeque<ConnOp>,
    /// The writes and commit of the command being issued, one per cycle.
    issuing: VecDeque<Msg>,
    current: Option<XferOp>,
    waiting: bool,
    resume_at: Option<Cycles>,
    /// The OS's interrupts to answer and its change waiting for MAGIC.
    os_side: OsSide,
    /// What the program saw, in order.
    pub log: Vec<ConnEvent>,
}

impl ConnCpu {
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
        (self.waiting || !self.program.is_empty() || !self.issuing.is_empty()).then(|| {
            format!(
                "user program: {} op(s) left{}",
                self.program.len(),
                if self.waiting {
                    ", waiting for an answer"
                } else {
                    ""
                }
            )
        })
    }

    fn next(&self) -> ProcStep {
        self.os_side
            .next_step(self.resume_at.filter(|_| !self.waiting))
    }

    /// The processor's step: the OS's answers to MAGIC's interrupts, then
    /// the command being issued (a write a cycle) or the program's next
    /// operation.
    pub(super) fn step(&mut self, p: &mut Processor<'_>, os: &mut Os) -> ProcStep {
        let now = p.now();
        self.os_side.answer::<XferMsg>(p, os);
        if self.waiting || self.resume_at.is_none_or(|t| t > now) {
            return self.next();
        }
        self.resume_at = None;
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
            ConnOp::Think(_) | ConnOp::Change(_) => {}
        }
        q.push_back(cmd(p, XferMsg::Commit, PAddr::new(Region::Message, me, 0)));
        self.log.push(ConnEvent::Issued { op: code, at: now });
        self.current = Some(code);
        self.issuing = q;
        self.resume_at = Some(now);
        self.step(p, os)
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
        let answer = |a: super::msg::Answering| a.0.or(self.current).unwrap_or(XferOp::Send);
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
                self.answered(now);
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
                self.log.push(ConnEvent::RecvDone { at: now, bytes })
            }
            _ => return None,
        }
        Some(self.next())
    }

    /// The command is answered: the program goes on.
    fn answered(&mut self, now: Cycles) {
        self.waiting = false;
        self.current = None;
        self.resume_at = Some(now + Cycles(1));
    }
}
