//! A node running user-level messaging: the operating system and the user
//! program on the compute processor, and MAGIC's side (current PID, operation
//! records, hold-off counter, in-use page table, software TLB) with the
//! handlers that serve command sequences and carry the operations out.

use super::cmd::{
    Field, Nack, OpCode, OpRecord, PageRef, RecState, COMMAND_BASE, COMMAND_VA, MAX_PAGES,
    SHADOW_VA, SHADOW_WRITE_VA,
};
use super::pages::PageTable;
use super::tlb::{Tlb, TlbParams};
use magic::costs::{Source, Task};
use magic::{
    Cx, Cycles, Lane, Magic, MagicBuilder, MagicParams, Msg, MsgType, NodeId, NodeState, PAddr,
    ProcStep, Processor, Region, LINE_BYTES,
};
use os_shim::{Change, Os, OsCosts, Pid, VPage, PAGE_BYTES};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Message types.
pub mod mt {
    use magic::MsgType;
    // Processor interface (processor -> its MAGIC).
    pub const CMD_WRITE: MsgType = MsgType(40);
    pub const CMD_COMMIT: MsgType = MsgType(41);
    pub const SET_PID: MsgType = MsgType(42);
    pub const OS_NOTICE: MsgType = MsgType(43);
    pub const OS_TRANSLATION: MsgType = MsgType(44);
    // Software queue.
    pub const STEP: MsgType = MsgType(45);
    // Network.
    pub const FOP_REQ: MsgType = MsgType(50);
    pub const FOP_REPLY: MsgType = MsgType(51);
    pub const LINE_DATA: MsgType = MsgType(53);
    pub const OP_DONE: MsgType = MsgType(54);
    // MAGIC -> processor.
    pub const ACK: MsgType = MsgType(60);
    pub const NACK: MsgType = MsgType(61);
    pub const DONE: MsgType = MsgType(62);
    pub const INTERRUPT: MsgType = MsgType(63);
    pub const OS_ANSWER: MsgType = MsgType(64);
}

/// In a `Field::Flags` value: ask for hold-off protection. Fetch-and-add and
/// memory copy always have it; a send that asks for it is refused.
pub const FLAG_HOLDOFF: u64 = 1;

/// In an OS answer: the page is not mapped.
pub const NO_FRAME: u64 = u64::MAX;

magic::cost_sheet! {
    /// Instructions MAGIC's handlers issue per step of user-level messaging
    /// (dual issue), with the data-cache loads and stores charged beside them.
    pub struct UserCosts {
        /// Take one command write into the record.
        write: u32 = 6, Source::Choice(
            "decode the address (register or shadow page), store the data in the PID's record.");
        /// Check and accept (or refuse) a sequence.
        commit: u32 = 16, Source::Choice(
            "load the record, check the operation, group and pages, answer; \
             the start-up of a fetch-and-op (59 cycles) follows from it.");
        /// One line of a copy or send: address, header, bookkeeping.
        line: u32 = 14, Source::Choice(
            "as the transfer's clean line without its directory work.");
        /// Receive one line or request at the other end.
        receive: u32 = 8, Source::Choice(
            "decode, check the group and the page's owner, issue the write.");
        /// Link (or relink) a page use into the in-use table.
        link: Task = Task::new(9, 17, 0, 0), Source::Published(
            "section 4: linking a translation costs 8-9 PP cycles, hand-coded.");
        /// Look a translation up in the software TLB (plus the set's load).
        tlb_lookup: u32 = 6, Source::Choice(
            "hash the virtual page, compare the set's tags, branch.");
        /// Walk one element of a page's use list on a translation-change notice.
        walk: u32 = 4, Source::Choice("load the next element, mark it, branch.");
        /// Take the OS's notice of the running process.
        set_pid: u32 = 2, Source::Choice("store the PID in a register.");
        /// The invalidation technique's check on a use: one branch.
        valid_check: u32 = 1, Source::Published(
            "section 4: handlers check validity on every use, one branch.");
        /// Fetch-and-add at the word's home: add and merge into the line.
        fop_apply: u32 = 4, Source::Choice(
            "extract the word, add, insert it back, issue the write.");
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UserParams {
    /// Operation records in MAGIC memory.
    pub records: usize,
    pub tlb: TlbParams,
    pub costs: UserCosts,
    pub os: OsCosts,
    /// A NACKed sequence is tried again this many times at most, after
    /// back-offs of `backoff`, 2 x `backoff`, 4 x ...
    pub retries: u32,
    pub backoff: Cycles,
}

impl UserParams {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=4096).contains(&self.records) {
            return Err(format!("records must be 1 to 4096 (got {})", self.records));
        }
        if self.retries > 16 {
            return Err(format!("retries must be at most 16 (got {})", self.retries));
        }
        if self.backoff == Cycles(0) || self.backoff > Cycles(1 << 20) {
            return Err("backoff must be 1 to 2^20 cycles".into());
        }
        Ok(())
    }
}

impl Default for UserParams {
    fn default() -> Self {
        UserParams {
            records: 4,
            tlb: TlbParams::default(),
            costs: UserCosts::default(),
            os: OsCosts::default(),
            retries: 6,
            backoff: Cycles(50),
        }
    }
}

/// What MAGIC counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserStats {
    pub acks: u64,
    pub nacks: BTreeMap<String, u64>,
    /// Command writes with no record to go into (the commit will NACK).
    pub lost_writes: u64,
    /// Packets dropped: claimed a process that is not a peer of the receiver.
    pub dropped_forged: u64,
    /// Commands naming a peer outside the process's group.
    pub refused_out_of_group: u64,
    /// Packets dropped for a bad address.
    pub dropped_bad: u64,
    pub interrupts: u64,
    pub stale_uses: u64,
    pub completed: u64,
    /// Translation changes answered only after hold-off drained.
    pub holdoff_waits: u64,
}

/// MAGIC's state for user-level messaging on one node.
pub struct MagicSide {
    /// The running PID, as the OS said at the last context switch.
    pub current: Option<Pid>,
    records: Vec<Option<OpRecord>>,
    /// Operations under way that use hold-off.
    pub holdoff: u32,
    /// A translation change waits for `holdoff` to reach zero.
    pub draining: bool,
    pub pages: PageTable,
    pub tlb: Tlb,
    pub stats: UserStats,
    /// Processes some of whose writes found no record: their sequence is
    /// incomplete, and their next commit is refused (to be sent again).
    lost: std::collections::BTreeSet<Pid>,
    /// Sends some of whose lines were dropped here: (sender node, tag).
    failed: std::collections::BTreeSet<(u32, u64)>,
}

impl MagicSide {
    /// The record of `pid`, if it has one.
    pub fn record_of(&self, pid: Pid) -> Option<&OpRecord> {
        self.records.iter().flatten().find(|r| r.pid == pid)
    }

    fn slot_of(&self, pid: Pid) -> Option<usize> {
        self.records
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.pid == pid))
    }

    /// Records in use.
    pub fn records_in_use(&self) -> usize {
        self.records.iter().flatten().count()
    }
}

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
    Think(Cycles),
}

/// What the user program saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum UserEvent {
    Ack {
        pid: Pid,
        at: Cycles,
    },
    Nack {
        pid: Pid,
        at: Cycles,
        reason: Nack,
        retry: bool,
    },
    /// An accepted operation finished; `ok` is false if it could not (a page
    /// became unmapped, the receiver refused the data).
    Done {
        pid: Pid,
        at: Cycles,
        value: u64,
        ok: bool,
    },
    /// The OS changed a translation after waiting `waited` cycles for MAGIC.
    Changed {
        pid: Pid,
        at: Cycles,
        waited: Cycles,
    },
    Interrupt {
        pid: Pid,
        at: Cycles,
        page: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    No,
    Commit,
    Done,
    Os { since: Cycles },
}

impl UserCpu {
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
}

/// The compute processor: the OS and the user program.
pub struct UserCpu {
    program: VecDeque<UserOp>,
    waiting: Waiting,
    /// Writes of the open sequence of each process (to send again after a NACK).
    open: BTreeMap<Pid, Vec<(u64, u64)>>,
    tries: u32,
    /// Completions not yet waited for, per process.
    done: BTreeMap<Pid, u32>,
    /// The translation change waiting for MAGIC's answer, and since when.
    change: Option<(Pid, Change, Cycles)>,
    /// Interrupts to answer: (when, PID, virtual page).
    os_due: Vec<(Cycles, Pid, VPage)>,
    /// When the program may go on.
    resume_at: Option<Cycles>,
    pub log: Vec<UserEvent>,
    /// The cycle of the first command write (for start-up figures).
    pub first_write: Option<Cycles>,
    /// Committing reads issued (each must be answered by ACK or NACK).
    pub commits: u64,
    /// Writes to addresses the process has not mapped (not issued).
    pub faults: u64,
}

pub struct UserNode {
    pub id: NodeId,
    pub nodes: u32,
    pub params: UserParams,
    pub os: Os,
    pub magic: MagicSide,
    pub cpu: UserCpu,
}

impl UserNode {
    pub fn new(id: NodeId, nodes: u32, params: UserParams) -> Result<UserNode, String> {
        params.validate()?;
        Ok(UserNode {
            id,
            nodes,
            params,
            os: Os::new(id, params.os),
            magic: MagicSide {
                current: None,
                records: vec![None; params.records],
                holdoff: 0,
                draining: false,
                pages: PageTable::default(),
                tlb: Tlb::new(params.tlb)?,
                stats: UserStats::default(),
                lost: Default::default(),
                failed: Default::default(),
            },
            cpu: UserCpu {
                program: VecDeque::new(),
                waiting: Waiting::No,
                open: BTreeMap::new(),
                tries: 0,
                done: BTreeMap::new(),
                change: None,
                os_due: Vec::new(),
                resume_at: Some(Cycles(0)),
                log: Vec::new(),
                first_write: None,
                commits: 0,
                faults: 0,
            },
        })
    }

    /// Append to the user program.
    pub fn push(&mut self, ops: impl IntoIterator<Item = UserOp>) {
        self.cpu.program.extend(ops);
    }

    pub fn program_left(&self) -> usize {
        self.cpu.program.len()
    }
}

impl NodeState for UserNode {
    fn pending(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.cpu.program.is_empty()
            || self.cpu.waiting != Waiting::No
            || self.cpu.change.is_some()
        {
            parts.push(format!(
                "user program: {} op(s) left, waiting {:?}",
                self.cpu.program.len(),
                self.cpu.waiting
            ));
        }
        let running = self
            .magic
            .records
            .iter()
            .flatten()
            .filter(|r| r.state != RecState::Open)
            .count();
        if running > 0 {
            parts.push(format!("{running} operation(s) under way"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn processor_step(&mut self, p: &mut Processor<'_>) -> ProcStep {
        let now = p.now();
        // OS work first: answers to MAGIC's interrupts, read from the page
        // table as it is when the answer goes out.
        let mut i = 0;
        while i < self.cpu.os_due.len() {
            let (t, pid, page) = self.cpu.os_due[i];
            if t <= now && !self.change_pending(pid, page) {
                self.cpu.os_due.remove(i);
                let frame = self.os.lookup(pid, page).map_or(NO_FRAME, |m| m.frame.0);
                let a = Msg::new(mt::OS_TRANSLATION, self.id, self.id)
                    .addr(PAddr::new(Region::Message, self.id, 0))
                    .args([page.0, pid.0 as u64, frame]);
                p.request(a, None);
            } else {
                i += 1;
            }
        }
        if self.cpu.resume_at.is_some_and(|t| t <= now) && self.cpu.waiting == Waiting::No {
            self.cpu.resume_at = None;
            self.run_program(p);
        }
        self.next_step()
    }

    fn processor_receive(
        &mut self,
        p: &mut Processor<'_>,
        msg: &Msg,
        _data: Option<&[u8; LINE_BYTES]>,
    ) -> Option<ProcStep> {
        let now = p.now();
        let pid = Pid(msg.args[1] as u16);
        match msg.mtype {
            mt::ACK => {
                self.cpu.log.push(UserEvent::Ack { pid, at: now });
                self.cpu.open.remove(&pid);
                self.cpu.tries = 0;
                self.resume(now, Waiting::Commit);
            }
            mt::NACK => {
                let reason = Nack::from_u64(msg.args[0]).unwrap_or(Nack::Malformed);
                let retry = reason.transient() && self.cpu.tries < self.params.retries;
                self.cpu.log.push(UserEvent::Nack {
                    pid,
                    at: now,
                    reason,
                    retry,
                });
                if retry {
                    // Back off, then send the whole sequence again.
                    let wait = Cycles(self.params.backoff.0 << self.cpu.tries);
                    self.cpu.tries += 1;
                    let again: Vec<UserOp> = self
                        .cpu
                        .open
                        .get(&pid)
                        .map(|ws| ws.iter().map(|&(a, d)| UserOp::Write(a, d)).collect())
                        .unwrap_or_default();
                    self.cpu.open.remove(&pid);
                    self.cpu.program.push_front(UserOp::Commit);
                    for op in again.into_iter().rev() {
                        self.cpu.program.push_front(op);
                    }
                    self.cpu.program.push_front(UserOp::Think(wait));
                } else {
                    self.cpu.tries = 0;
                    self.cpu.open.remove(&pid);
                }
                self.resume(now, Waiting::Commit);
            }
            mt::DONE => {
                self.cpu.log.push(UserEvent::Done {
                    pid,
                    at: now,
                    value: msg.args[0],
                    ok: msg.args[2] == 0,
                });
                *self.cpu.done.entry(pid).or_default() += 1;
                if self.cpu.waiting == Waiting::Done && self.os.running == Some(pid) {
                    *self.cpu.done.entry(pid).or_default() -= 1;
                    self.resume(now, Waiting::Done);
                }
            }
            mt::INTERRUPT => {
                // MAGIC asks for a translation; the OS answers after its cost.
                let page = msg.args[0];
                self.cpu
                    .log
                    .push(UserEvent::Interrupt { pid, at: now, page });
                self.cpu
                    .os_due
                    .push((now + self.os.costs.interrupt, pid, VPage(page)));
            }
            mt::OS_ANSWER => {
                if let Some((cpid, c, since)) = self.cpu.change.take() {
                    let cost = self.apply_change(p, cpid, c);
                    self.cpu.log.push(UserEvent::Changed {
                        pid: cpid,
                        at: now,
                        waited: now - since,
                    });
                    // A program held up behind a second change goes on.
                    if let Waiting::Os { .. } = self.cpu.waiting {
                        self.cpu.waiting = Waiting::No;
                        self.cpu.resume_at = Some(now + cost);
                    }
                }
            }
            _ => return None,
        }
        Some(self.next_step())
    }
}

impl UserNode {
    fn resume(&mut self, now: Cycles, from: Waiting) {
        if self.cpu.waiting == from {
            self.cpu.waiting = Waiting::No;
            self.cpu.resume_at = Some(now + Cycles(1));
        }
    }

    /// A change of this page is notified and not yet applied: an answer
    /// about it waits until it is, so it cannot carry the old frame.
    fn change_pending(&self, pid: Pid, page: VPage) -> bool {
        self.cpu
            .change
            .is_some_and(|(p, c, _)| p == pid && c.page() == page)
    }

    fn next_step(&self) -> ProcStep {
        let os = self
            .cpu
            .os_due
            .iter()
            .filter(|x| !self.change_pending(x.1, x.2))
            .map(|x| x.0)
            .min();
        let prog = self
            .cpu
            .resume_at
            .filter(|_| self.cpu.waiting == Waiting::No);
        match (os, prog) {
            (Some(a), Some(b)) => ProcStep::At(a.min(b)),
            (Some(a), None) | (None, Some(a)) => ProcStep::At(a),
            (None, None) => ProcStep::Idle,
        }
    }

    /// Run program operations until one waits or takes time.
    fn run_program(&mut self, p: &mut Processor<'_>) {
        let now = p.now();
        let Some(op) = self.cpu.program.pop_front() else {
            return;
        };
        let me = self.id;
        match op {
            UserOp::Switch(pid) => {
                self.os.running = Some(pid);
                let m = Msg::new(mt::SET_PID, me, me)
                    .addr(PAddr::new(Region::Message, me, 0))
                    .args([pid.0 as u64, 0, 0]);
                p.request(m, None);
                self.cpu.resume_at = Some(now + self.os.costs.context_switch);
            }
            UserOp::Write(va, d) => {
                self.cpu.first_write.get_or_insert(now);
                let target = self
                    .os
                    .running
                    .and_then(|pid| self.user_address(pid, va).map(|a| (pid, a)));
                match target {
                    Some((pid, a)) => {
                        self.cpu.open.entry(pid).or_default().push((va, d));
                        p.request(
                            Msg::new(mt::CMD_WRITE, me, me).addr(a).args([d, 0, 0]),
                            None,
                        );
                    }
                    None => self.cpu.faults += 1,
                }
                // Uncached writes are posted: one per cycle.
                self.cpu.resume_at = Some(now + Cycles(1));
            }
            UserOp::Commit => {
                self.cpu.commits += 1;
                let m = Msg::new(mt::CMD_COMMIT, me, me).addr(PAddr::new(Region::Message, me, 0));
                p.request(m, None);
                self.cpu.waiting = Waiting::Commit;
            }
            UserOp::Wait => {
                let pid = self.os.running.unwrap_or_default();
                let n = self.cpu.done.entry(pid).or_default();
                if *n > 0 {
                    *n -= 1;
                    self.cpu.resume_at = Some(now + Cycles(1));
                } else {
                    self.cpu.waiting = Waiting::Done;
                }
            }
            UserOp::Change(pid, c) => {
                if self.cpu.change.is_some() {
                    // One change at a time: wait for the first to be answered.
                    self.cpu.program.push_front(UserOp::Change(pid, c));
                    self.cpu.waiting = Waiting::Os { since: now };
                    return;
                }
                let old = self
                    .os
                    .lookup(pid, c.page())
                    .map_or(NO_FRAME, |m| m.frame.0);
                let m = Msg::new(mt::OS_NOTICE, me, me)
                    .addr(PAddr::new(Region::Message, me, 0))
                    .args([c.page().0, pid.0 as u64, old]);
                p.request(m, None);
                self.cpu.change = Some((pid, c, now));
                self.cpu.resume_at = Some(now + Cycles(1));
            }
            UserOp::Think(c) => self.cpu.resume_at = Some(now + c),
        }
    }

    /// The physical address a user virtual address reaches: the command page
    /// or a shadow page the OS mapped for `pid`; `None` is a fault.
    fn user_address(&self, pid: Pid, va: u64) -> Option<PAddr> {
        if (COMMAND_VA..COMMAND_VA + PAGE_BYTES).contains(&va) {
            return Some(PAddr::new(
                Region::Message,
                self.id,
                COMMAND_BASE + (va - COMMAND_VA),
            ));
        }
        if va & SHADOW_WRITE_VA != 0 {
            return self
                .os
                .shadow_write(pid, va & !(SHADOW_WRITE_VA | SHADOW_VA))
                .ok();
        }
        if va & SHADOW_VA != 0 {
            return self.os.shadow(pid, va & !SHADOW_VA).ok();
        }
        None
    }

    /// Apply a translation change MAGIC has cleared; returns the OS's time.
    fn apply_change(&mut self, p: &mut Processor<'_>, pid: Pid, c: Change) -> Cycles {
        let mut cost = self.os.costs.change;
        if let (Change::Move(_, to), Ok(old)) = (c, self.os.lookup(pid, c.page())) {
            if to.node() == self.id && old.frame.node() == self.id {
                for k in 0..PAGE_BYTES / LINE_BYTES as u64 {
                    let from = PAddr(old.frame.0 + k * LINE_BYTES as u64).line();
                    let bytes = p.memory().line(from);
                    p.memory()
                        .store_line(PAddr(to.0 + k * LINE_BYTES as u64).line(), &bytes);
                    cost += self.os.costs.copy_line;
                }
            }
        }
        let _ = self.os.apply(pid, c);
        cost
    }
}

// ---------------------------------------------------------------- handlers

type C<'a> = Cx<'a, UserNode>;

const RECORD_BASE: u64 = 0x5000_0000;
/// MAGIC memory of the group tables the OS fills.
const GROUP_BASE: u64 = 0x6000_0000;

fn rec_addr(slot: usize) -> u64 {
    RECORD_BASE + slot as u64 * 256
}

fn costs(cx: &mut C<'_>) -> UserCosts {
    cx.state().params.costs
}

fn to_cpu(cx: &mut C<'_>, t: MsgType, args: [u64; 3]) {
    let me = cx.node();
    let m = Msg::new(t, me, me).args(args);
    let _ = cx.to_processor(m, None);
}

fn nack(cx: &mut C<'_>, pid: Pid, reason: Nack, free_slot: Option<usize>) {
    if let Some(s) = free_slot {
        if let Some(r) = cx.state().magic.records[s].take() {
            unlink_all(cx, &r);
        }
    }
    *cx.state()
        .magic
        .stats
        .nacks
        .entry(format!("{reason:?}"))
        .or_default() += 1;
    to_cpu(cx, mt::NACK, [reason as u64, pid.0 as u64, 0]);
}

fn unlink_all(cx: &mut C<'_>, r: &OpRecord) {
    for p in &r.src {
        if let Some(u) = &p.link {
            cx.state().magic.pages.unlink(u);
        }
    }
}

/// The OS tells MAGIC which process runs.
fn set_pid(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.set_pid);
    cx.state().magic.current = Some(Pid(m.args[0] as u16));
}

/// One uncached write of a sequence: into the running process's record.
fn cmd_write(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.write);
    let Some(pid) = cx.state().magic.current else {
        cx.state().magic.stats.lost_writes += 1;
        return;
    };
    let mem = cx.params().mem_bytes;
    let magic = &mut cx.state().magic;
    let slot = match magic.slot_of(pid) {
        Some(s) => Some(s),
        None => magic.records.iter().position(Option::is_none),
    };
    let Some(slot) = slot else {
        magic.stats.lost_writes += 1;
        magic.lost.insert(pid);
        return;
    };
    let rec = magic.records[slot].get_or_insert_with(|| OpRecord::new(pid));
    if rec.state != RecState::Open {
        // The process's record is busy with its running operation.
        magic.stats.lost_writes += 1;
        magic.lost.insert(pid);
        return;
    }
    rec.write(m.addr, m.args[0], mem);
    cx.store(rec_addr(slot));
}

/// The committing read: check the sequence, accept or refuse it.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg) {
    let c = costs(cx);
    cx.instr(c.commit);
    let Some(pid) = cx.state().magic.current else {
        to_cpu(cx, mt::NACK, [Nack::NoRecord as u64, 0, 0]);
        return;
    };
    if cx.state().magic.lost.remove(&pid) {
        // Part of the sequence never made it into a record: refuse it whole.
        let open = cx.state().magic.slot_of(pid).filter(|&s| {
            cx.state().magic.records[s]
                .as_ref()
                .is_some_and(|r| r.state == RecState::Open)
        });
        return nack(cx, pid, Nack::NoRecord, open);
    }
    let Some(slot) = cx.state().magic.slot_of(pid) else {
        nack(cx, pid, Nack::NoRecord, None);
        return;
    };
    cx.load(rec_addr(slot));
    let me = cx.node();
    let nodes = cx.nodes();
    let mem = cx.params().mem_bytes;
    let rec = cx.state().magic.records[slot].clone().expect("slot");
    if rec.state != RecState::Open {
        nack(cx, pid, Nack::NoRecord, None);
        return;
    }
    let op = match (rec.op(), rec.malformed) {
        (Some(op), false) => op,
        _ => return nack(cx, pid, Nack::Malformed, Some(slot)),
    };
    let flags = rec.fields[Field::Flags as usize].unwrap_or(0);
    let in_memory = |a: PAddr| a.node().0 < nodes && a.offset() < mem;
    let check = match op {
        OpCode::FetchAdd => match (rec.target, rec.arg()) {
            (Some(t), Some(_)) if in_memory(t) => Ok(()),
            _ => Err(Nack::Malformed),
        },
        OpCode::MemCopy | OpCode::SendPhys | OpCode::SendVirt => {
            let len = rec.arg().unwrap_or(0);
            let cap = |n: usize| n as u64 * PAGE_BYTES;
            let src_ok = match op {
                OpCode::SendVirt => {
                    // Whole pages from a page boundary.
                    rec.fields[Field::Vaddr as usize].is_some_and(|v| v % PAGE_BYTES == 0)
                        && len <= cap(MAX_PAGES)
                }
                _ => {
                    len <= cap(rec.src.len())
                        && rec
                            .src
                            .iter()
                            .all(|p| p.page.node() == me && in_memory(p.page))
                }
            };
            if len == 0
                || !src_ok
                || len > cap(rec.dst.len())
                || !rec.dst.iter().all(|&d| in_memory(d))
            {
                Err(Nack::Malformed)
            } else {
                Ok(())
            }
        }
    };
    if let Err(r) = check {
        return nack(cx, pid, r, Some(slot));
    }
    // Sends go to a peer named by virtual PID, in the process's group.
    let mut peer = None;
    if matches!(op, OpCode::SendPhys | OpCode::SendVirt) {
        cx.load(rec_addr(slot) + 64);
        let v = rec.fields[Field::Vpid as usize];
        match v.and_then(|v| cx.state().os.vpid(pid, v as u16)) {
            Some(p) if rec.dst.iter().all(|d| d.node() == p.0) => peer = Some(p),
            _ => {
                cx.state().magic.stats.refused_out_of_group += 1;
                return nack(cx, pid, Nack::NotAllowed, Some(slot));
            }
        }
    }
    // Hold-off protects only operations that finish without any process's
    // help: a send that needs its receiver to act could wait forever on a
    // translation change that itself waits for the send (deadlock).
    let holdoff = op.holds_off();
    if flags & FLAG_HOLDOFF != 0 && !holdoff {
        return nack(cx, pid, Nack::NotAllowed, Some(slot));
    }
    if holdoff && cx.state().magic.draining {
        return nack(cx, pid, Nack::HoldOffDrain, Some(slot));
    }
    // Moving data needs data buffers: with none free now, refuse rather
    // than start an operation that cannot make progress.
    if op != OpCode::FetchAdd {
        match cx.alloc_buffer() {
            Some(b) => {
                let _ = cx.free_buffer(b);
            }
            None => return nack(cx, pid, Nack::NoResource, Some(slot)),
        }
    }
    // Accepted.
    let now = cx.now().0;
    {
        let magic = &mut cx.state().magic;
        let r = magic.records[slot].as_mut().expect("slot");
        r.state = RecState::Running;
        r.peer = peer;
        r.accepted_at = now;
        if holdoff {
            magic.holdoff += 1;
        }
        magic.stats.acks += 1;
    }
    cx.store(rec_addr(slot));
    to_cpu(cx, mt::ACK, [0, pid.0 as u64, 0]);
    match op {
        OpCode::FetchAdd => {
            let t = rec.target.expect("checked");
            let req = Msg::new(mt::FOP_REQ, me, t.node()).addr(t).args([
                rec.arg().unwrap_or(0),
                tag(pid, slot, false),
                0,
            ]);
            let _ = cx.send(req, None);
        }
        OpCode::MemCopy | OpCode::SendPhys => {
            if op == OpCode::SendPhys {
                for k in 0..rec.src.len() {
                    link_page(cx, slot, k);
                }
            }
            step_later(cx, slot);
        }
        OpCode::SendVirt => translate_pages(cx, slot),
    }
}

/// PID, record and last-line flag in one header word.
fn tag(pid: Pid, slot: usize, last: bool) -> u64 {
    (pid.0 as u64) << 32 | (slot as u64) << 1 | last as u64
}

fn untag(t: u64) -> (Pid, usize, bool) {
    (
        Pid((t >> 32) as u16),
        ((t >> 1) & 0xFFFF) as usize,
        t & 1 == 1,
    )
}

/// Link source page `k` of a record into the in-use page table (charged:
/// the hand-coded link).
fn link_page(cx: &mut C<'_>, slot: usize, k: usize) {
    let c = costs(cx);
    cx.bundles(c.link.cycles, c.link.instrs);
    let magic = &mut cx.state().magic;
    let page = magic.records[slot].as_ref().expect("slot").src[k].page;
    let u = magic.pages.link(page, slot as u16, k as u8);
    magic.records[slot].as_mut().expect("slot").src[k].link = Some(u);
}

fn step_later(cx: &mut C<'_>, slot: usize) {
    let me = cx.node();
    let m = Msg::new(mt::STEP, me, me)
        .addr(PAddr::new(Region::Message, me, 0))
        .args([slot as u64, 0, 0]);
    let _ = cx.reschedule(m);
}

/// Translate a `SendVirt` record's source pages through the software TLB;
/// a miss interrupts the processor and waits for its answer.
fn translate_pages(cx: &mut C<'_>, slot: usize) {
    let c = costs(cx);
    let (pid, base, len, have) = {
        let r = cx.state().magic.records[slot].as_ref().expect("slot");
        (
            r.pid,
            r.fields[Field::Vaddr as usize].unwrap_or(0),
            r.arg().unwrap_or(0),
            r.src.len(),
        )
    };
    let first = VPage::of(base);
    let pages = (base % PAGE_BYTES + len).div_ceil(PAGE_BYTES) as usize;
    for k in have..pages.min(MAX_PAGES) {
        let v = VPage(first.0 + k as u64);
        cx.instr(c.tlb_lookup);
        let at = cx.state().magic.tlb.set_addr(pid, v);
        cx.load(at);
        match cx.state().magic.tlb.lookup(pid, v) {
            Some(frame) => {
                let r = cx.state().magic.records[slot].as_mut().expect("slot");
                let _ = r.src.try_push(PageRef {
                    page: frame,
                    vaddr: v.0 * PAGE_BYTES,
                    link: None,
                });
                link_page(cx, slot, k);
            }
            None => {
                interrupt(cx, slot, pid, v);
                return;
            }
        }
    }
    step_later(cx, slot);
}

/// Ask the OS for a translation; the operation waits, other handlers run.
fn interrupt(cx: &mut C<'_>, slot: usize, pid: Pid, v: VPage) {
    let magic = &mut cx.state().magic;
    magic.stats.interrupts += 1;
    magic.records[slot].as_mut().expect("slot").state = RecState::WaitTranslation;
    to_cpu(cx, mt::INTERRUPT, [v.0, pid.0 as u64, 0]);
}

/// One line of a copy or send.
fn step(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.line);
    let slot = m.args[0] as usize;
    cx.load(rec_addr(slot));
    let Some(rec) = cx.state().magic.records.get(slot).cloned().flatten() else {
        return;
    };
    if rec.state != RecState::Running {
        return;
    }
    let k = rec.sent as usize;
    let lines = rec.lines() as usize;
    if k >= lines {
        return;
    }
    let per_page = (PAGE_BYTES / LINE_BYTES as u64) as usize;
    let (page, in_page) = (k / per_page, (k % per_page) as u64 * LINE_BYTES as u64);
    let src = &rec.src[page];
    // The invalidation technique's check on every use: one branch.
    let c = costs(cx);
    cx.instr(c.valid_check);
    if src.link.as_ref().is_some_and(|u| !u.valid()) {
        cx.state().magic.stats.stale_uses += 1;
        return interrupt(cx, slot, rec.pid, VPage::of(src.vaddr));
    }
    let Some(b) = cx.alloc_buffer() else {
        return step_later(cx, slot);
    };
    let _ = cx.mem_read(PAddr(src.page.0 + in_page), b);
    let dst = PAddr(rec.dst[page].0 + in_page);
    let last = k + 1 == lines;
    let to_pid = rec.peer.map_or(0, |p| p.1 .0 as u64);
    let op = rec.op().map_or(0, |o| o as u64);
    let d = Msg::new(mt::LINE_DATA, cx.node(), dst.node())
        .addr(dst)
        .args([tag(rec.pid, slot, last), to_pid, op]);
    let _ = cx.send(d, Some(b));
    cx.state().magic.records[slot].as_mut().expect("slot").sent += 1;
    cx.store(rec_addr(slot));
    if !last {
        step_later(cx, slot);
    }
}

/// A line arrives at the destination.
fn line_data(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.receive);
    let (from_pid, _, last) = untag(m.args[0]);
    let Some(b) = cx.take_msg_buffer() else {
        return;
    };
    let me = cx.node();
    let is_send = matches!(
        OpCode::from_u64(m.args[2]),
        Some(OpCode::SendPhys | OpCode::SendVirt)
    );
    let page = PAddr(m.addr.0 & !(PAGE_BYTES - 1));
    let ok = if m.addr.node() != me || m.addr.offset() >= cx.params().mem_bytes {
        cx.state().magic.stats.dropped_bad += 1;
        false
    } else if is_send {
        // Deliver only to the connection's process: the receiver must count
        // the sender among its peers and own the page, writably.
        let to = Pid(m.args[1] as u16);
        cx.load(GROUP_BASE + to.0 as u64 * 64);
        let os = &cx.state().os;
        if os.in_group(to, (m.src, from_pid)) && os.maps(to, page, true) {
            true
        } else {
            cx.state().magic.stats.dropped_forged += 1;
            false
        }
    } else {
        true
    };
    let t = if ok {
        cx.mem_write(m.addr, b).ok()
    } else {
        None
    };
    let _ = cx.free_buffer(b);
    let op = (m.src.0, m.args[0] & !1);
    if !ok {
        cx.state().magic.failed.insert(op);
    }
    if last {
        if let Some(t) = t {
            cx.wait(t);
        }
        // Tell the sender how it went, so its record is never left behind.
        let failed = cx.state().magic.failed.remove(&op) as u64;
        let done = Msg::new(mt::OP_DONE, me, m.src)
            .lane(Lane::Reply)
            .addr(m.addr)
            .args([m.args[0], failed, 0]);
        let _ = cx.send(done, None);
    }
}

/// The operation is over at the far end: close the record.
fn finish(cx: &mut C<'_>, slot: usize, value: u64, ok: bool) {
    let Some(rec) = cx
        .state()
        .magic
        .records
        .get_mut(slot)
        .and_then(Option::take)
    else {
        return;
    };
    unlink_all(cx, &rec);
    cx.store(rec_addr(slot));
    let magic = &mut cx.state().magic;
    magic.stats.completed += 1;
    if rec.op().is_some_and(OpCode::holds_off) {
        magic.holdoff = magic.holdoff.saturating_sub(1);
        if magic.holdoff == 0 && magic.draining {
            // The translation change waited for this: answer it now.
            magic.draining = false;
            magic.stats.holdoff_waits += 1;
            to_cpu(cx, mt::OS_ANSWER, [0, 0, 0]);
        }
    }
    to_cpu(cx, mt::DONE, [value, rec.pid.0 as u64, !ok as u64]);
}

fn op_done(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.receive);
    let (_, slot, _) = untag(m.args[0]);
    finish(cx, slot, 0, m.args[1] == 0);
}

/// Fetch-and-add at the memory that holds the word.
fn fop_req(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.receive);
    let me = cx.node();
    if m.addr.node() != me || m.addr.offset() >= cx.params().mem_bytes {
        cx.state().magic.stats.dropped_bad += 1;
        return;
    }
    let Some(b) = cx.alloc_buffer() else {
        // No buffer: come back to it from the software queue.
        let _ = cx.reschedule(*m);
        return;
    };
    if let Ok(t) = cx.mem_read(m.addr, b) {
        cx.wait(t);
    }
    let o = (m.addr.offset() as usize % LINE_BYTES) & !7;
    let bytes = cx.buffer_mut(b).expect("allocated");
    let old = u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    bytes[o..o + 8].copy_from_slice(&old.wrapping_add(m.args[0]).to_le_bytes());
    let c = costs(cx);
    cx.instr(c.fop_apply);
    let _ = cx.mem_write(m.addr, b);
    let _ = cx.free_buffer(b);
    let r = Msg::new(mt::FOP_REPLY, me, m.src)
        .lane(Lane::Reply)
        .addr(m.addr)
        .args([old, m.args[1], 0]);
    let _ = cx.send(r, None);
}

fn fop_reply(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.receive);
    let (_, slot, _) = untag(m.args[1]);
    finish(cx, slot, m.args[0], true);
}

/// The OS is about to change a translation.
fn os_notice(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.commit);
    let (v, pid, old) = (VPage(m.args[0]), Pid(m.args[1] as u16), PAddr(m.args[2]));
    let at = cx.state().magic.tlb.set_addr(pid, v);
    cx.store(at);
    cx.state().magic.tlb.invalidate(pid, v);
    if old.0 != NO_FRAME {
        let n = cx.state().magic.pages.invalidate(old);
        for _ in 0..n {
            cx.instr(c.walk);
            cx.load(rec_addr(0) + 192);
        }
    }
    let magic = &mut cx.state().magic;
    if magic.holdoff == 0 {
        to_cpu(cx, mt::OS_ANSWER, [0, 0, 0]);
    } else {
        // Answer when the hold-off operations have drained; refuse new ones.
        magic.draining = true;
    }
}

/// The OS answers MAGIC's interrupt with a translation.
fn os_translation(cx: &mut C<'_>, m: &Msg) {
    let c = costs(cx);
    cx.instr(c.commit);
    let (v, pid, frame) = (VPage(m.args[0]), Pid(m.args[1] as u16), PAddr(m.args[2]));
    let Some(slot) = cx.state().magic.records.iter().position(|r| {
        r.as_ref()
            .is_some_and(|r| r.pid == pid && r.state == RecState::WaitTranslation)
    }) else {
        return;
    };
    if frame.0 == NO_FRAME {
        // Unmapped: the operation cannot go on.
        finish(cx, slot, 0, false);
        return;
    }
    let virt = cx.state().magic.records[slot]
        .as_ref()
        .is_some_and(|r| r.op() == Some(OpCode::SendVirt));
    if virt {
        let at = cx.state().magic.tlb.set_addr(pid, v);
        cx.store(at);
        cx.state().magic.tlb.insert(pid, v, frame);
    }
    // Replace the stale page (if any) with the new translation.
    let stale = cx.state().magic.records[slot]
        .as_ref()
        .expect("slot")
        .src
        .iter()
        .position(|p| VPage::of(p.vaddr) == v && p.link.as_ref().is_some_and(|u| !u.valid()));
    if let Some(k) = stale {
        let old = cx.state().magic.records[slot].as_mut().expect("slot").src[k]
            .link
            .take();
        if let Some(u) = old {
            cx.state().magic.pages.unlink(&u);
        }
        if virt {
            // Translate again through the TLB (a hit now).
            cx.instr(c.tlb_lookup);
            let at = cx.state().magic.tlb.set_addr(pid, v);
            cx.load(at);
            let _ = cx.state().magic.tlb.lookup(pid, v);
        }
        cx.state().magic.records[slot].as_mut().expect("slot").src[k].page = frame;
        link_page(cx, slot, k);
    }
    cx.state().magic.records[slot].as_mut().expect("slot").state = RecState::Running;
    if virt && stale.is_none() {
        translate_pages(cx, slot);
    } else {
        step_later(cx, slot);
    }
}

/// Install the handlers in a machine's jump table.
pub fn install(b: &mut MagicBuilder<UserNode>) {
    let msg = Region::Message;
    let h = b.handler("set-pid", set_pid);
    b.route(mt::SET_PID, msg, h);
    let h = b.handler("cmd-write", cmd_write);
    b.route(mt::CMD_WRITE, msg, h);
    let h = b.handler("cmd-commit", cmd_commit);
    b.route(mt::CMD_COMMIT, msg, h);
    let h = b.handler("os-notice", os_notice);
    b.route(mt::OS_NOTICE, msg, h);
    let h = b.handler("os-translation", os_translation);
    b.route(mt::OS_TRANSLATION, msg, h);
    let h = b.handler("op-step", step);
    b.route(mt::STEP, msg, h);
    let h = b.handler("line-receive", line_data);
    b.route(mt::LINE_DATA, Region::Normal, h);
    let h = b.handler("op-done", op_done);
    b.route(mt::OP_DONE, Region::Normal, h);
    let h = b.handler("fetch-op", fop_req);
    b.route(mt::FOP_REQ, Region::Normal, h);
    let h = b.handler("fetch-op-reply", fop_reply);
    b.route(mt::FOP_REPLY, Region::Normal, h);
}

/// A machine of `nodes` nodes running user-level messaging.
pub fn machine(
    params: MagicParams,
    user: UserParams,
    nodes: u32,
) -> Result<Magic<UserNode>, String> {
    let mut b = MagicBuilder::new(params, nodes);
    install(&mut b);
    let mut err = None;
    let m = b.build(|n| match UserNode::new(n, nodes, user) {
        Ok(x) => x,
        Err(e) => {
            err = Some(e);
            UserNode::new(n, nodes, UserParams::default()).expect("defaults are valid")
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(m),
    }
}
