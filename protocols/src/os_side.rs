//! The operating system's side of the command interface, shared by the
//! protocols whose user code names pages by authentic physical address (the
//! user layer and the transfer).
//!
//! MAGIC keeps physical addresses valid by hearing of every translation
//! change before it takes effect. On the compute processor the OS:
//! - tells MAGIC a translation is about to change (a *notice*: the virtual
//!   page, the process, the frame it maps now) and applies the change only
//!   once MAGIC answers, copying the page's lines when the page moves
//!   within the node;
//! - answers MAGIC's interrupt ("translate this page of this process")
//!   after its interrupt cost, from the page table as it is when the answer
//!   goes out: an answer about a page whose change is notified and not yet
//!   applied waits for the change, so it never carries the old frame.
//!
//! [`OsSide`] is that work; each protocol carries the two messages as kinds
//! of its own message type ([`OsMessages`]). On MAGIC's side, [`mark_stale`]
//! walks a changing page's uses.

use crate::user::pages::PageTable;
use magic::message::{Message, Word};
use magic::{Cx, Cycles, PAddr, ProcStep, Processor, Region, LINE_BYTES};
use os_shim::{Change, Os, Pid, VPage, PAGE_BYTES};

/// The pages a buffer of `len` bytes at virtual address `va` spans.
pub fn pages_spanned(va: u64, len: u64) -> u64 {
    // In 128 bits: a length near 2^64 spans fewer than 2^64 pages.
    ((va % PAGE_BYTES) as u128 + len as u128).div_ceil(PAGE_BYTES as u128) as u64
}

/// A page's frame as the OS reports it to MAGIC: `None` when the page is
/// not mapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frame(pub Option<PAddr>);

/// The word an unmapped page's frame travels as.
const NO_FRAME: u64 = u64::MAX;

impl Frame {
    /// The frame `pid`'s `page` maps now in `os`.
    pub fn of(os: &Os, pid: Pid, page: VPage) -> Frame {
        Frame(os.lookup(pid, page).ok().map(|m| m.frame))
    }
}

/// A frame travels as its physical address, or as a word no address has.
impl Word for Frame {
    fn to_word(self) -> u64 {
        self.0.map_or(NO_FRAME, |a| a.0)
    }
    fn from_word(w: u64) -> Option<Frame> {
        Some(Frame((w != NO_FRAME).then_some(PAddr(w))))
    }
}

/// The messages the OS sends its MAGIC, as kinds of a protocol's own
/// message type.
pub trait OsMessages: Message {
    /// A translation of `pid`'s `page` is about to change; it maps `old` now.
    fn notice(page: VPage, pid: Pid, old: Frame) -> Self;
    /// The answer to MAGIC's interrupt: `pid`'s `page` maps `frame`.
    fn translation(page: VPage, pid: Pid, frame: Frame) -> Self;
}

/// A translation change the OS applied once MAGIC had cleared it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The process whose page changed.
    pub pid: Pid,
    /// Cycles from the notice to MAGIC's answer.
    pub waited: Cycles,
    /// The OS's time to apply it (the page table, and the copy of a moved page).
    pub cost: Cycles,
}

/// The OS's work for MAGIC on one node's processor: interrupts to answer
/// and the translation change waiting for MAGIC.
#[derive(Clone, Debug, Default)]
pub struct OsSide {
    /// Interrupts to answer: when, the process, the virtual page.
    due: Vec<(Cycles, Pid, VPage)>,
    /// The change waiting for MAGIC's answer: the process, the change, and
    /// when it was notified.
    change: Option<(Pid, Change, Cycles)>,
}

/// Where the OS's messages to MAGIC are addressed: the node's message space.
fn to_magic(p: &Processor<'_>) -> PAddr {
    PAddr::new(Region::Message, p.node(), 0)
}

impl OsSide {
    /// What the OS owes MAGIC, canonically (for the exhaustive checker):
    /// interrupts to answer with their due times relative to `now`, and
    /// the change waiting for MAGIC's answer.
    pub fn encode(&self, now: Cycles, out: &mut Vec<u8>) {
        use std::io::Write;
        let mut due: Vec<_> = self
            .due
            .iter()
            .map(|&(t, pid, page)| (t.0.saturating_sub(now.0), pid, page))
            .collect();
        due.sort_unstable();
        let change = self.change.map(|(pid, c, _)| (pid, c));
        let _ = write!(out, "{due:?}{change:?}");
    }

    /// A change is notified and not yet answered.
    pub fn changing(&self) -> bool {
        self.change.is_some()
    }

    /// A change of `pid`'s `page` is notified and not yet applied: an
    /// answer about it waits until it is.
    pub fn held(&self, pid: Pid, page: VPage) -> bool {
        self.change
            .is_some_and(|(p, c, _)| p == pid && c.page() == page)
    }

    /// MAGIC interrupted the processor about `pid`'s `page`: the OS answers
    /// at `at` (or once a change of the page is applied).
    pub fn interrupted(&mut self, at: Cycles, pid: Pid, page: VPage) {
        self.due.push((at, pid, page));
    }

    /// Send MAGIC every answer due by now, each with the page's frame as the
    /// page table has it now.
    pub fn answer<M: OsMessages>(&mut self, p: &mut Processor<'_>, os: &Os) {
        let now = p.now();
        let mut i = 0;
        while i < self.due.len() {
            let (t, pid, page) = self.due[i];
            if t <= now && !self.held(pid, page) {
                self.due.remove(i);
                let m = M::translation(page, pid, Frame::of(os, pid, page));
                let a = p.msg(m).addr(to_magic(p));
                p.request(a, None);
            } else {
                i += 1;
            }
        }
    }

    /// Tell MAGIC that `pid`'s translation is about to change by `c`; the
    /// change waits for MAGIC's answer ([`OsSide::apply`]).
    pub fn notify<M: OsMessages>(&mut self, p: &mut Processor<'_>, os: &Os, pid: Pid, c: Change) {
        let page = c.page();
        let m = M::notice(page, pid, Frame::of(os, pid, page));
        let a = p.msg(m).addr(to_magic(p));
        p.request(a, None);
        self.change = Some((pid, c, p.now()));
    }

    /// MAGIC answered the notice: apply the change. A page moved within
    /// this node has its lines copied (they are in memory: the pages MAGIC
    /// uses are not cached). `None` when no change was waiting.
    pub fn apply(&mut self, p: &mut Processor<'_>, os: &mut Os) -> Option<Applied> {
        let (pid, c, since) = self.change.take()?;
        let me = p.node();
        let mut cost = os.costs.change;
        if let (Change::Move(_, to), Ok(old)) = (c, os.lookup(pid, c.page())) {
            if to.node() == me && old.frame.node() == me {
                for k in 0..PAGE_BYTES / LINE_BYTES as u64 {
                    let at = |f: PAddr| PAddr(f.0 + k * LINE_BYTES as u64).line();
                    let bytes = p.memory().line(at(old.frame));
                    p.memory().store_line(at(to), &bytes);
                    cost += os.costs.copy_line;
                }
            }
        }
        let _ = os.apply(pid, c);
        Some(Applied {
            pid,
            waited: p.now() - since,
            cost,
        })
    }

    /// When the next answer is due (answers held back by a change apart).
    pub fn next_due(&self) -> Option<Cycles> {
        self.due
            .iter()
            .filter(|x| !self.held(x.1, x.2))
            .map(|x| x.0)
            .min()
    }

    /// The processor's next step: the sooner of the OS's next answer and
    /// `program`'s next step.
    pub fn next_step(&self, program: Option<Cycles>) -> ProcStep {
        let step = |t: Option<Cycles>| t.map_or(ProcStep::Idle, ProcStep::At);
        step(self.next_due()).earliest(step(program))
    }
}

/// On MAGIC, a notice of `old`'s change: mark every use of the frame stale
/// in the in-use page table `pages` picks from the state, walking the
/// page's use list (`walk` instructions and one load at `at` per use).
pub fn mark_stale<S>(
    cx: &mut Cx<'_, S>,
    pages: fn(&mut S) -> &mut PageTable,
    old: Frame,
    walk: u32,
    at: u64,
) {
    if let Some(f) = old.0 {
        let n = pages(cx.state()).invalidate(f);
        for _ in 0..n {
            cx.instr(walk);
            cx.load(at);
        }
    }
}
