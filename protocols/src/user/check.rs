//! User-level messaging's own handlers against translation changes, under
//! exhaustive search (`flashkit check holdoff`).
//!
//! Process 1 on node 0 moves `lines` lines from the start of its source
//! page to node 1: a memory copy under hold-off, a send to process 2 under
//! invalidation or the software TLB. Once its sequence is accepted, its OS
//! moves the source page to a new frame `changes` times, each change begun
//! at a moment the search chooses; with `ops` 2 the process then moves the
//! page again (to a second destination page), through the translations as
//! the changes left them. The search takes
//! every order of the machine's deliveries, including each handler's
//! continuations on the software queue, so the OS's notice and its answer
//! meet the operation at every line. Once a change is applied, a move of
//! the search may hand the old frame to someone else, who fills it with a
//! pattern no source line holds: a handler that still reads the old frame
//! then delivers it.
//!
//! What must hold:
//! - the operation completes, accepted, and every change is applied;
//! - the destination holds the source's bytes, line for line;
//! - nothing is written to node 1 outside the receiving process's page (no
//!   delivery outside the sender's group);
//! - nothing is stuck or dropped when no move is left.

use super::cmd::{shadow_dst_va, shadow_va, Field};
use super::cpu::{UserEvent, UserOp};
use super::experiments::{frame, Technique};
use super::params::UserParams;
use super::state::UserNode;
use super::unit::machine;
use magic::check::{explore_restoring, nothing_dropped, nothing_stuck, Bounds, Model, Report};
use magic::{Magic, MagicParams, NodeId, OutOfRange, PAddr, LINE_BYTES};
use os_shim::{Change, Pid, Rights, VPage, PAGE_BYTES};
use serde::{Deserialize, Serialize};

pub use super::params::Bug;

impl Bug {
    /// The technique whose handlers the bug is in.
    pub fn technique(self) -> Technique {
        match self {
            Bug::EarlyAnswer => Technique::Holdoff,
            Bug::KeepStale => Technique::Invalidate,
            Bug::KeepTlbEntry => Technique::Tlb,
        }
    }

    /// Whether the bug changes what the handlers of `technique` do: each
    /// acts under its own, and the uses left unmarked by `KeepStale` are
    /// the TLB technique's too. Planted under another, it does nothing.
    pub fn acts_under(self, technique: Technique) -> bool {
        self.technique() == technique || (self == Bug::KeepStale && technique == Technique::Tlb)
    }
}

/// The configuration a hold-off check explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldoffCheck {
    /// How MAGIC keeps its physical addresses valid.
    pub technique: Technique,
    /// Lines the operation moves (1 to 32: one page).
    pub lines: u32,
    /// Translation changes of the source page (1 to 2).
    pub changes: u32,
    /// Operations, one after another (1 to 2): the changes race the first;
    /// a second one must see the page where the changes left it.
    pub ops: u32,
    /// MAGIC data buffers per node (1 to 16).
    pub buffers: u32,
    /// A planted bug, if any.
    pub inject: Option<Bug>,
}

impl Default for HoldoffCheck {
    /// The default bounds of `flashkit check holdoff` (for each technique).
    fn default() -> Self {
        HoldoffCheck {
            technique: Technique::Holdoff,
            lines: 8,
            changes: 2,
            ops: 2,
            buffers: 2,
            inject: None,
        }
    }
}

const PID: Pid = Pid(1);
const PEER: Pid = Pid(2);
const SRC_V: u64 = 0x10_0000;
const DST_V: u64 = 0x20_0000;
/// The first action number of "begin change k".
const BEGIN: u32 = 100;
/// A frame handed to someone else holds this in every byte.
const REUSED: u8 = 0xee;

/// The source page's frame before change `k` (and after change `k - 1`).
fn source_frame(k: u32) -> PAddr {
    frame(NodeId(0), if k == 0 { 32 } else { 47 + k as u64 })
}

fn pattern(l: u64) -> [u8; LINE_BYTES] {
    let mut bytes = [0u8; LINE_BYTES];
    for (i, x) in bytes.iter_mut().enumerate() {
        *x = (l * 7 + i as u64 + 1) as u8;
    }
    bytes
}

fn at(f: PAddr, l: u64) -> magic::LineAddr {
    PAddr(f.0 + l * LINE_BYTES as u64).line()
}

impl HoldoffCheck {
    /// The machine and the user layer's parameters (its cost sheets and
    /// planted bug) the check builds its machine with.
    pub fn params(&self) -> (MagicParams, UserParams) {
        let params = MagicParams {
            data_buffers: self.buffers as usize,
            ..MagicParams::default()
        };
        let up = UserParams {
            inject: self.inject,
            ..UserParams::default()
        };
        (params, up)
    }

    /// Refuse bounds outside the documented ranges, naming the field.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        OutOfRange::check("lines", self.lines, 1, 32)?;
        OutOfRange::check("changes", self.changes, 1, 2)?;
        OutOfRange::check("ops", self.ops, 1, 2)?;
        OutOfRange::check("buffers", self.buffers, 1, 16)?;
        // A bug planted where it changes nothing would make a clean report
        // look like a check that passed with the bug in.
        match self.inject {
            Some(b) if !b.acts_under(self.technique) => Err(OutOfRange::new(
                "inject",
                format!(
                    "a bug that acts under the {} technique",
                    self.technique.name()
                ),
                b.name(),
            )),
            _ => Ok(()),
        }
    }

    /// Search the configuration's whole space (up to `bounds`); a
    /// configuration or bounds out of range are refused, naming the field.
    pub fn run(&self, bounds: Bounds) -> Result<Report, OutOfRange> {
        self.validate()?;
        explore_restoring(self, bounds)
    }

    /// Changes node 0's OS applied (none, on a machine without it).
    fn changed(m: &Magic<UserNode>) -> u32 {
        m.state(NodeId(0)).map_or(0, |s| {
            s.cpu
                .log
                .iter()
                .filter(|e| matches!(e, UserEvent::Changed { .. }))
                .count() as u32
        })
    }

    fn setup(&self, m: &mut Magic<UserNode>) -> Result<(), String> {
        let (a, b) = (NodeId(0), NodeId(1));
        for l in 0..self.lines as u64 {
            m.memory_mut(a)?
                .store_line(at(source_frame(0), l), &pattern(l));
        }
        let e = |e: os_shim::OsError| e.to_string();
        let n = m.state_mut(b)?;
        n.os.spawn(PEER);
        n.os.set_group(PEER, vec![(a, PID)]).map_err(e)?;
        for k in 0..self.ops as u64 {
            n.os.map(PEER, VPage(0x300 + k), frame(b, 64 + k), Rights::RW)
                .map_err(e)?;
        }
        let n = m.state_mut(a)?;
        n.os.spawn(PID);
        n.os.set_group(PID, vec![(b, PEER)]).map_err(e)?;
        n.os.map(PID, VPage::of(SRC_V), source_frame(0), Rights::RW)
            .map_err(e)?;
        for k in 0..self.ops as u64 {
            let v = VPage(VPage::of(DST_V).0 + k);
            n.os.map(PID, v, frame(b, 64 + k), Rights::RW).map_err(e)?;
        }
        let op = self.technique.op_code();
        // Operation `k` moves the source to destination page `k`, so each
        // one's bytes are checked at the end.
        let sequence = |k: u64| {
            let mut ops = vec![
                UserOp::Write(Field::Op.va(), op as u64),
                UserOp::Write(Field::Arg.va(), self.lines as u64 * LINE_BYTES as u64),
                UserOp::Write(Field::Vpid.va(), 0),
            ];
            if self.technique == Technique::Tlb {
                ops.push(UserOp::Write(Field::Vaddr.va(), SRC_V));
            } else {
                ops.push(UserOp::Write(shadow_va(SRC_V), SRC_V));
            }
            let dst = DST_V + k * PAGE_BYTES;
            ops.push(UserOp::Write(shadow_dst_va(dst), dst));
            ops.push(UserOp::Commit);
            ops
        };
        let mut ops = vec![UserOp::Switch(PID)];
        ops.extend(sequence(0));
        ops.push(UserOp::Wait);
        if self.ops == 2 {
            ops.extend(sequence(1));
            ops.push(UserOp::Wait);
        }
        n.push(ops);
        m.start_processor(a, magic::Cycles(0))
            .map_err(|e| e.to_string())
    }
}

impl Model for HoldoffCheck {
    type Node = UserNode;

    fn build(&self) -> Result<Magic<UserNode>, String> {
        let (params, up) = self.params();
        let mut m = machine(params, up, 2).map_err(|e| e.to_string())?;
        self.setup(&mut m)?;
        Ok(m)
    }

    /// Once the first sequence is accepted, the OS begins its next change;
    /// once a change is applied, its old frame may go to someone else.
    fn actions(&self, m: &Magic<UserNode>, out: &mut Vec<u32>) {
        // The moves are node 0's; a machine without it has none.
        let (Ok(n0), Ok(mem)) = (m.state(NodeId(0)), m.memory(NodeId(0))) else {
            return;
        };
        let cpu = &n0.cpu;
        let accepted = cpu.log.iter().any(|e| matches!(e, UserEvent::Ack { .. }));
        let begun = Self::changed(m) + cpu.changes_pending() as u32;
        if accepted && begun < self.changes {
            out.push(BEGIN + begun);
        }
        for k in 0..Self::changed(m) {
            let f = source_frame(k);
            if mem.line(at(f, 0)) != [REUSED; LINE_BYTES] {
                out.push(k);
            }
        }
    }

    fn act(&self, m: &mut Magic<UserNode>, a: u32) {
        // `actions` offers moves only on a machine with node 0.
        if a >= BEGIN {
            let to = source_frame(a - BEGIN + 1);
            let Ok(n0) = m.state_mut(NodeId(0)) else {
                return;
            };
            n0.cpu.os_change(PID, Change::Move(VPage::of(SRC_V), to));
            let now = m.now();
            // Node 0 exists and `now` is the machine's own clock.
            let _ = m.start_processor(NodeId(0), now);
            return;
        }
        let Ok(mem) = m.memory_mut(NodeId(0)) else {
            return;
        };
        for l in 0..PAGE_BYTES / LINE_BYTES as u64 {
            mem.store_line(at(source_frame(a), l), &[REUSED; LINE_BYTES]);
        }
    }

    fn describe(&self, _m: &Magic<UserNode>, a: u32) -> String {
        if a >= BEGIN {
            return format!(
                "n0 OS: begin change {}, moving the source page to {}",
                a - BEGIN + 1,
                source_frame(a - BEGIN + 1)
            );
        }
        format!(
            "n0 OS: the frame at {} (freed by change {}) goes to another process",
            source_frame(a),
            a + 1
        )
    }

    fn encode(&self, m: &Magic<UserNode>, out: &mut Vec<u8>) {
        for s in m.states() {
            s.encode(m.now(), out);
        }
    }

    fn invariant(&self, m: &Magic<UserNode>) -> Result<(), String> {
        // Frames are below 1 MB; MAGIC's own records lie far above.
        let lines_per_page = PAGE_BYTES / LINE_BYTES as u64;
        let pages = 64 * lines_per_page..(64 + self.ops as u64) * lines_per_page;
        let frames = 256 * lines_per_page;
        for (l, _) in m.memory(NodeId(1))?.written() {
            if l.0 < frames && !pages.contains(&l.0) {
                return Err(format!(
                    "n1's memory line {:#x} was written: outside the receiving process's pages",
                    l.0 * LINE_BYTES as u64
                ));
            }
        }
        Ok(())
    }

    fn finished(&self, m: &Magic<UserNode>) -> Result<(), String> {
        nothing_stuck(m)?;
        nothing_dropped(m)?;
        let cpu = &m.state(NodeId(0))?.cpu;
        let done = cpu
            .log
            .iter()
            .filter(|e| matches!(e, UserEvent::Done { ok: true, .. }))
            .count() as u32;
        if done != self.ops {
            return Err(format!(
                "{done} of {} operations completed: {:?}",
                self.ops, cpu.log
            ));
        }
        if Self::changed(m) != self.changes {
            return Err(format!(
                "{} of {} translation changes were applied",
                Self::changed(m),
                self.changes
            ));
        }
        for k in 0..self.ops as u64 {
            for l in 0..self.lines as u64 {
                let got = m.memory(NodeId(1))?.line(at(frame(NodeId(1), 64 + k), l));
                if got != pattern(l) {
                    let what = if got == [REUSED; LINE_BYTES] {
                        "a freed frame's new contents"
                    } else {
                        "something else"
                    };
                    return Err(format!(
                        "operation {}'s destination line {l} holds {what}, not the source's bytes",
                        k + 1
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Process `p`'s frames (1 to 3) in the command-sequence workload of
/// [`run_commands`]: its source on node 0, its destination and its word on
/// node 1, and a second source frame its source page may be remapped to.
pub fn command_frames(p: u16) -> [PAddr; 4] {
    let k = p as u64;
    let (a, b) = (NodeId(0), NodeId(1));
    [
        frame(a, 32 + 4 * k),
        frame(b, 64 + 4 * k),
        frame(b, 16 + k),
        frame(a, 33 + 4 * k),
    ]
}

/// The command-sequence workload the random tests and the fuzzer share.
/// Processes 1 to 3 on node 0 map a source page (`0x10_0000`), a
/// destination page (`0x20_0000`) and a word's page (`0x40_0000`) to their
/// [`command_frames`], each in a group with process 2 on node 1, which owns
/// their destinations. Node 0's processor runs `ops` (start it with a
/// `Switch`) with `records` operation records. What must hold: no record
/// ever holds a page its process did not name, every commit is answered,
/// every accepted operation completes, and nothing is left stuck.
pub fn run_commands(records: usize, ops: Vec<UserOp>) -> Result<(), String> {
    let (a, b) = (NodeId(0), NodeId(1));
    let params = UserParams {
        records,
        ..UserParams::default()
    };
    let mut m = machine(MagicParams::default(), params, 2).map_err(|e| e.to_string())?;
    let e = |e: os_shim::OsError| e.to_string();
    let n = m.state_mut(b)?;
    n.os.spawn(PEER);
    n.os.set_group(PEER, (1..=3).map(|p| (a, Pid(p))).collect())
        .map_err(e)?;
    for p in 1..=3u16 {
        n.os.map(
            PEER,
            VPage(0x300 + p as u64),
            command_frames(p)[1],
            Rights::RW,
        )
        .map_err(e)?;
    }
    let n = m.state_mut(a)?;
    for p in 1..=3u16 {
        let [s, d, w, _] = command_frames(p);
        n.os.spawn(Pid(p));
        n.os.map(Pid(p), VPage::of(0x10_0000), s, Rights::RW)
            .map_err(e)?;
        n.os.map(Pid(p), VPage::of(0x20_0000), d, Rights::RW)
            .map_err(e)?;
        n.os.map(Pid(p), VPage::of(0x40_0000), w, Rights::RW)
            .map_err(e)?;
        n.os.set_group(Pid(p), vec![(b, PEER)]).map_err(e)?;
    }
    n.push(ops);
    m.start_processor(a, magic::Cycles(0))
        .map_err(|e| e.to_string())?;
    while let Some(t) = m.step() {
        if t > magic::Cycles(5_000_000) {
            return Err(format!("still running at cycle {t}"));
        }
        for p in 1..=3u16 {
            if let Some(r) = m.state(a)?.magic.record_of(Pid(p)) {
                let mine = command_frames(p);
                let named = r.src.iter().map(|s| s.page).chain(r.dst.iter().copied());
                if let Some(x) = named.into_iter().find(|x| !mine.contains(x)) {
                    return Err(format!("p{p}'s record holds {x}, a page it did not name"));
                }
            }
        }
    }
    let report = m.report(false);
    let cpu = &m.state(a)?.cpu;
    let count = |f: fn(&UserEvent) -> bool| cpu.log.iter().filter(|e| f(e)).count();
    let answers = count(|e| matches!(e, UserEvent::Ack { .. } | UserEvent::Nack { .. }));
    let acks = count(|e| matches!(e, UserEvent::Ack { .. }));
    let dones = count(|e| matches!(e, UserEvent::Done { .. }));
    if answers as u64 != cpu.commits {
        return Err(format!("{} commits, {answers} answers", cpu.commits));
    }
    if acks != dones {
        return Err(format!("{acks} accepted operations, {dones} completed"));
    }
    if !report.is_clean() {
        return Err(format!("not clean: {}", report.problems().join("; ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::params::Bug;
    use magic::check::restoring_agrees;

    /// A bug planted under a technique whose handlers it leaves alone is
    /// refused, by the field that holds it; under each it acts under, it
    /// is accepted.
    #[test]
    fn a_bug_is_refused_where_it_does_nothing() {
        let all = [Technique::Holdoff, Technique::Invalidate, Technique::Tlb];
        for b in Bug::ALL {
            for t in all {
                let c = HoldoffCheck {
                    technique: t,
                    inject: Some(b),
                    ..HoldoffCheck::default()
                };
                match c.validate() {
                    Ok(()) => assert!(b.acts_under(t), "{b:?} under {t:?} accepted"),
                    Err(e) => {
                        assert!(!b.acts_under(t), "{b:?} under {t:?}: {e}");
                        assert_eq!((e.field, e.got.as_str()), ("inject", b.name()));
                        let want = format!("a bug that acts under the {} technique", t.name());
                        assert_eq!(e.allowed, want);
                    }
                }
            }
        }
        // Each bug acts under its own technique, and keep-stale under the
        // TLB's too: four pairs of the nine.
        let acting = Bug::ALL
            .iter()
            .flat_map(|&b| all.map(|t| b.acts_under(t)))
            .filter(|&x| x)
            .count();
        assert_eq!(acting, 4);
    }

    /// A state restored from its snapshot is the machine its moves make:
    /// for each technique, and with each planted bug, the restoring search
    /// on one thread and on three takes the same states, moves and depth as
    /// the replaying one, and stops at the same violation with the same
    /// trace. The counts are pinned (states, moves, depth), so a change to
    /// what a state's canonical text tells apart shows too.
    #[test]
    fn restoring_a_state_is_replaying_its_moves() {
        let bounds = Bounds {
            symmetry: false,
            ..Bounds::default()
        };
        let clean = [
            (Technique::Holdoff, None, (192, 347, 31)),
            (Technique::Invalidate, None, (321, 579, 34)),
            (Technique::Tlb, None, (368, 634, 36)),
        ];
        let planted = [(280, 477, 31), (280, 477, 31), (425, 741, 34)];
        // A bug added to the handlers is added here too.
        assert_eq!(planted.len(), Bug::ALL.len());
        let planted = Bug::ALL
            .into_iter()
            .zip(planted)
            .map(|(b, n)| (b.technique(), Some(b), n));
        for (technique, inject, counts) in clean.into_iter().chain(planted) {
            let c = HoldoffCheck {
                technique,
                lines: 2,
                changes: 1,
                inject,
                ..HoldoffCheck::default()
            };
            let r = restoring_agrees(&c, bounds)
                .unwrap_or_else(|e| panic!("{technique:?}, {inject:?}: {e}"));
            let got = (r.states, r.transitions, r.depth);
            assert_eq!(got, counts, "{technique:?}, {inject:?}");
            let found = inject.is_some() as u32;
            assert_eq!(r.violations, found, "{technique:?}, {inject:?}: {r:?}");
        }
    }
}
