//! The compute processor's side of user-level messaging: the user program
//! issuing command sequences (uncached writes through the process's command
//! page and shadow pages, then the committing read), backing off and trying
//! again after a transient refusal, waiting for completions; and the OS
//! switching processes and changing translations ([`OsSide`]).

use super::cmd::{Nack, COMMAND_BASE, COMMAND_VA, SHADOW_VA, SHADOW_WRITE_VA};
use super::msg::UserMsg;
use super::params::UserParams;
use crate::os_side::OsSide;
use magic::{Cycles, Msg, NodeId, PAddr, ProcStep, Processor, Region};
use os_shim::{Change, Os, Pid, VPage, PAGE_BYTES};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// One operation of the user program on the compute processor. Commands go
/// out under whatever process is running; the program switches processes
/// explicitly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserOp {
    /// Context switch to this process (the OS tells MAGIC).
    Switch(Pid),
    /// One uncached write of a command sequence, to a virtual address of the
    /// running process (its command page or a shadow page): the processor
    /// translates it, and an address the process has not mapped faults.
    Write(u64, u64),
    /// The committing uncached read: waits for ACK or NACK, and after a
    /// transient NACK backs off and sends the process's sequence again.
    Commit,
    /// Wait until an accepted operation of the running process has completed.
    Wait,
    /// A translation change: the OS notifies MAGIC and applies the change
    /// when MAGIC answers; the program goes on meanwhile (a second change
    /// waits for the first).
    Change(Pid, Change),
    /// Compute for this many cycles.
    Think(Cycles),
}

/// What the user program saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum UserEvent {
    /// MAGIC accepted `pid`'s sequence.
    Ack {
        /// The process.
        pid: Pid,
        /// When the answer reached the processor.
        at: Cycles,
    },
    /// MAGIC refused `pid`'s sequence.
    Nack {
        /// The process.
        pid: Pid,
        /// When the answer reached the processor.
        at: Cycles,
        /// Why.
        reason: Nack,
        /// The program sends the sequence again after a back-off.
        retry: bool,
    },
    /// An accepted operation finished; `ok` is false if it could not (a page
    /// became unmapped, the receiver refused the data).
    Done {
        /// The process.
        pid: Pid,
        /// When the processor heard of it.
        at: Cycles,
        /// A fetch-and-add's old value.
        value: u64,
        /// It did what it was asked.
        ok: bool,
    },
    /// The OS changed a translation after waiting `waited` cycles for MAGIC.
    Changed {
        /// The process whose page changed.
        pid: Pid,
        /// When the OS heard MAGIC's answer.
        at: Cycles,
        /// Cycles from the notice to the answer.
        waited: Cycles,
    },
    /// MAGIC asked the OS for a translation.
    Interrupt {
        /// The process.
        pid: Pid,
        /// When the interrupt reached the processor.
        at: Cycles,
        /// The virtual page.
        page: u64,
    },
}

/// What the program waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    No,
    Commit,
    Done,
    Os { since: Cycles },
}

/// The compute processor: the OS and the user program.
#[derive(Clone)]
pub struct UserCpu {
    program: VecDeque<UserOp>,
    waiting: Waiting,
    /// Writes of the open sequence of each process (to send again after a NACK).
    open: BTreeMap<Pid, Vec<(u64, u64)>>,
    tries: u32,
    /// Completions not yet waited for, per process.
    done: BTreeMap<Pid, u32>,
    /// The OS's interrupts to answer and its change waiting for MAGIC.
    os_side: OsSide,
    /// Changes the OS makes on its own, apart from the program, in order.
    os_changes: VecDeque<(Pid, Change)>,
    /// When the program may go on.
    resume_at: Option<Cycles>,
    /// What the program saw, in order.
    pub log: Vec<UserEvent>,
    /// The cycle of the first command write (for start-up figures).
    pub first_write: Option<Cycles>,
    /// Committing reads issued (each must be answered by ACK or NACK).
    pub commits: u64,
    /// Writes to addresses the process has not mapped (not issued).
    pub faults: u64,
}

impl Default for UserCpu {
    fn default() -> Self {
        UserCpu {
            program: VecDeque::new(),
            waiting: Waiting::No,
            open: BTreeMap::new(),
            tries: 0,
            done: BTreeMap::new(),
            os_side: OsSide::default(),
            os_changes: VecDeque::new(),
            resume_at: Some(Cycles(0)),
            log: Vec::new(),
            first_write: None,
            commits: 0,
            faults: 0,
        }
    }
}

/// Where the processor's messages to its MAGIC's registers go.
fn magic_space(me: NodeId) -> PAddr {
    PAddr::new(Region::Message, me, 0)
}

impl UserCpu {
    /// The processor's state, canonically (for the exhaustive checker): the
    /// program, what it waits for, the open sequences, completions not yet
    /// waited for, the OS's debts, when it goes on relative to `now`, and
    /// what it saw (without times).
    pub fn encode(&self, now: Cycles, out: &mut Vec<u8>) {
        use std::io::Write;
        let waiting = match self.waiting {
            Waiting::Os { .. } => "os",
            Waiting::No => "no",
            Waiting::Commit => "commit",
            Waiting::Done => "done",
        };
        let resume = self.resume_at.map(|t| t.0.saturating_sub(now.0));
        let _ = write!(
            out,
            "{:?}{waiting}{:?}{}{:?}{resume:?}{:?}",
            self.program, self.open, self.tries, self.done, self.os_changes
        );
        self.os_side.encode(now, out);
        for e in &self.log {
            let _ = match e {
                UserEvent::Ack { pid, .. } => write!(out, "A{pid:?}"),
                UserEvent::Nack {
                    pid, reason, retry, ..
                } => write!(out, "N{pid:?}{reason:?}{retry}"),
                UserEvent::Done { pid, value, ok, .. } => write!(out, "D{pid:?}{value}{ok}"),
                UserEvent::Changed { pid, .. } => write!(out, "C{pid:?}"),
                UserEvent::Interrupt { pid, page, .. } => write!(out, "I{pid:?}{page}"),
            };
        }
    }

    /// The first event of the log `f` picks out.
    pub fn find<T>(&self, f: impl Fn(&UserEvent) -> Option<T>) -> Option<T> {
        self.log.iter().find_map(f)
    }

    /// When the first operation completed, and its value.
    pub fn done(&self) -> Option<(Cycles, u64)> {
        self.find(|e| match e {
            UserEvent::Done { at, value, .. } => Some((*at, *value)),
            _ => None,
        })
    }

    /// Append to the user program.
    pub fn push(&mut self, ops: impl IntoIterator<Item = UserOp>) {
        self.program.extend(ops);
    }

    /// Operations of the program not yet begun.
    pub fn program_left(&self) -> usize {
        self.program.len()
    }

    /// The OS changes `pid`'s translation at the processor's next step,
    /// whatever the program is doing (after any change still waiting for
    /// MAGIC). Start the processor for it to happen.
    pub fn os_change(&mut self, pid: Pid, c: Change) {
        self.os_changes.push_back((pid, c));
    }

    /// Changes notified to MAGIC and not yet applied, or not yet notified.
    pub fn changes_pending(&self) -> usize {
        self.os_changes.len() + self.os_side.changing() as usize
    }

    /// The program's unfinished business, in one line.
    pub(super) fn pending(&self) -> Option<String> {
        let busy = !self.program.is_empty()
            || self.waiting != Waiting::No
            || self.os_side.changing()
            || !self.os_changes.is_empty();
        busy.then(|| {
            let waiting = match self.waiting {
                Waiting::No => String::new(),
                Waiting::Commit => ", waiting for its command's commit".to_string(),
                Waiting::Done => ", waiting for an operation's completion".to_string(),
                Waiting::Os { since } => {
                    format!(", waiting for the OS's translation change since cycle {since}")
                }
            };
            format!("user program: {} op(s) left{waiting}", self.program.len())
        })
    }

    /// The processor's step: the OS's answers to MAGIC's interrupts first,
    /// then the program if it may go on.
    pub(super) fn step(&mut self, p: &mut Processor<'_>, os: &mut Os) -> ProcStep {
        let now = p.now();
        self.os_side.answer::<UserMsg>(p, os);
        if !self.os_side.changing() {
            if let Some((pid, c)) = self.os_changes.pop_front() {
                self.os_side.notify::<UserMsg>(p, os, pid, c);
            }
        }
        if self.resume_at.is_some_and(|t| t <= now) && self.waiting == Waiting::No {
            self.resume_at = None;
            self.run_program(p, os);
        }
        self.next_step(now)
    }

    /// MAGIC handed the processor `msg`; `None` if it is not the user layer's.
    pub(super) fn receive(
        &mut self,
        p: &mut Processor<'_>,
        os: &mut Os,
        params: &UserParams,
        msg: &Msg,
    ) -> Option<ProcStep> {
        let now = p.now();
        match p.decode::<UserMsg>(msg).ok()? {
            UserMsg::Ack { pid } => {
                self.log.push(UserEvent::Ack { pid, at: now });
                self.open.remove(&pid);
                self.tries = 0;
                self.resume(now, Waiting::Commit);
            }
            UserMsg::Nack { reason, pid } => {
                let retry = reason.transient() && self.tries < params.retries;
                self.log.push(UserEvent::Nack {
                    pid,
                    at: now,
                    reason,
                    retry,
                });
                if retry {
                    // Back off, then send the whole sequence again.
                    let wait = Cycles(params.backoff.0 << self.tries);
                    self.tries += 1;
                    let again: Vec<UserOp> = self
                        .open
                        .get(&pid)
                        .map(|ws| ws.iter().map(|&(a, d)| UserOp::Write(a, d)).collect())
                        .unwrap_or_default();
                    self.open.remove(&pid);
                    self.program.push_front(UserOp::Commit);
                    for op in again.into_iter().rev() {
                        self.program.push_front(op);
                    }
                    self.program.push_front(UserOp::Think(wait));
                } else {
                    self.tries = 0;
                    self.open.remove(&pid);
                }
                self.resume(now, Waiting::Commit);
            }
            UserMsg::Done { pid, value, ok } => {
                self.log.push(UserEvent::Done {
                    pid,
                    at: now,
                    value,
                    ok,
                });
                *self.done.entry(pid).or_default() += 1;
                if self.waiting == Waiting::Done && os.running == Some(pid) {
                    *self.done.entry(pid).or_default() -= 1;
                    self.resume(now, Waiting::Done);
                }
            }
            UserMsg::Interrupt { page, pid } => {
                // MAGIC asks for a translation; the OS answers after its cost.
                self.log.push(UserEvent::Interrupt {
                    pid,
                    at: now,
                    page: page.0,
                });
                self.os_side
                    .interrupted(now + os.costs.interrupt, pid, page);
            }
            UserMsg::OsAnswer => {
                if let Some(a) = self.os_side.apply(p, os) {
                    self.log.push(UserEvent::Changed {
                        pid: a.pid,
                        at: now,
                        waited: a.waited,
                    });
                    // A program held up behind a second change goes on.
                    if let Waiting::Os { .. } = self.waiting {
                        self.waiting = Waiting::No;
                        self.resume_at = Some(now + a.cost);
                    }
                }
            }
            _ => return None,
        }
        Some(self.next_step(now))
    }

    fn resume(&mut self, now: Cycles, from: Waiting) {
        if self.waiting == from {
            self.waiting = Waiting::No;
            self.resume_at = Some(now + Cycles(1));
        }
    }

    fn next_step(&self, now: Cycles) -> ProcStep {
        let prog = self.resume_at.filter(|_| self.waiting == Waiting::No);
        let step = self.os_side.next_step(prog);
        // A change of the OS's own waits only for the one before it.
        if !self.os_changes.is_empty() && !self.os_side.changing() {
            return step.earliest(ProcStep::At(now + Cycles(1)));
        }
        step
    }

    /// Run the program's next operation.
    fn run_program(&mut self, p: &mut Processor<'_>, os: &mut Os) {
        let now = p.now();
        let Some(op) = self.program.pop_front() else {
            return;
        };
        let me = p.node();
        match op {
            UserOp::Switch(pid) => {
                os.running = Some(pid);
                let m = p.msg(UserMsg::SetPid { pid }).addr(magic_space(me));
                p.request(m, None);
                self.resume_at = Some(now + os.costs.context_switch);
            }
            UserOp::Write(va, d) => {
                // A shadow of a page whose translation is changing faults,
                // and the fault waits for the change: until the OS has
                // applied it, the old frame may not be handed to MAGIC.
                let shadowed = va & (SHADOW_VA | SHADOW_WRITE_VA) != 0;
                let page = VPage::of(va & !(SHADOW_VA | SHADOW_WRITE_VA));
                if let (true, Some(pid)) = (shadowed, os.running) {
                    if self.os_side.held(pid, page) {
                        self.program.push_front(UserOp::Write(va, d));
                        self.waiting = Waiting::Os { since: now };
                        return;
                    }
                }
                self.first_write.get_or_insert(now);
                let target = os
                    .running
                    .and_then(|pid| user_address(os, me, pid, va).map(|a| (pid, a)));
                match target {
                    Some((pid, a)) => {
                        self.open.entry(pid).or_default().push((va, d));
                        let m = p.msg(UserMsg::Write { data: d }).addr(a);
                        p.request(m, None);
                    }
                    None => self.faults += 1,
                }
                // Uncached writes are posted: one per cycle.
                self.resume_at = Some(now + Cycles(1));
            }
            UserOp::Commit => {
                self.commits += 1;
                let m = p.msg(UserMsg::Commit).addr(magic_space(me));
                p.request(m, None);
                self.waiting = Waiting::Commit;
            }
            UserOp::Wait => {
                let pid = os.running.unwrap_or_default();
                let n = self.done.entry(pid).or_default();
                if *n > 0 {
                    *n -= 1;
                    self.resume_at = Some(now + Cycles(1));
                } else {
                    self.waiting = Waiting::Done;
                }
            }
            UserOp::Change(pid, c) => {
                if self.os_side.changing() {
                    // One change at a time: wait for the first to be answered.
                    self.program.push_front(UserOp::Change(pid, c));
                    self.waiting = Waiting::Os { since: now };
                    return;
                }
                self.os_side.notify::<UserMsg>(p, os, pid, c);
                self.resume_at = Some(now + Cycles(1));
            }
            UserOp::Think(c) => self.resume_at = Some(now + c),
        }
    }
}

/// The physical address a user virtual address reaches: the command page
/// or a shadow page the OS mapped for `pid`; `None` is a fault.
fn user_address(os: &Os, me: NodeId, pid: Pid, va: u64) -> Option<PAddr> {
    if (COMMAND_VA..COMMAND_VA + PAGE_BYTES).contains(&va) {
        return Some(PAddr::new(
            Region::Message,
            me,
            COMMAND_BASE + (va - COMMAND_VA),
        ));
    }
    if va & SHADOW_WRITE_VA != 0 {
        return os
            .shadow_write(pid, va & !(SHADOW_WRITE_VA | SHADOW_VA))
            .ok();
    }
    if va & SHADOW_VA != 0 {
        return os.shadow(pid, va & !SHADOW_VA).ok();
    }
    None
}
