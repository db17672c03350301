//! The sender's transfer handler.
//!
//! Its steps follow the paper's task breakdown (FLASH.md §6). Each task is a
//! hand-scheduled run of PP bundles with its instruction count and its loads
//! and stores of MAGIC memory (operation record, directory), so the optimized
//! handler's own accounting reads 46 instructions for a clean line and 56 for
//! a dirty one. Bundles take more than half a cycle per instruction where a
//! load's result is needed by the next instruction; the schedule puts the
//! memory read 18 cycles into the handler and the processor-cache get 17.
//!
//! Versions:
//! - `Base`: issues the get to the processor cache and stalls for it before
//!   doing anything else;
//! - `Optimized`: issues the get early and forms the header while the cache
//!   answers (speculative work), stalling only for what is left;
//! - `Chunked(k)`: the optimized handler sending `k` components per
//!   invocation with its state in registers: the record is loaded and stored
//!   once per invocation, and a dirty line's get is queued at the processor
//!   cache behind the previous line's, so the cache never idles in a chunk.
//!
//! A component whose source sits at another offset within its line than its
//! destination is realigned: by the data path's wrap-around when the two
//! offsets differ by whole doublewords (the source line is read once, into
//! the tail of this component's buffer and the head of the next one's), and
//! by the PP, doubleword by doubleword, otherwise.

use super::{addr, mt, Carry, XferNode};
use coherence::directory::{DirEntry, DirState, Pending, Sharers};
use coherence::modes::Mode;
use coherence::protocol;
use magic::{BufId, Cx, Lane, LineState, Msg, NodeId, PAddr, Region, Ticket, LINE_BYTES};
use serde::Serialize;

const LINE: u64 = LINE_BYTES as u64;

/// Which sender handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Version {
    Base,
    Optimized,
    Chunked(u32),
}

impl Version {
    pub fn lines_per_invocation(self) -> u32 {
        match self {
            Version::Chunked(k) => k.max(1),
            _ => 1,
        }
    }

    /// B, O or Ck, as the paper names them.
    pub fn short(self) -> String {
        match self {
            Version::Base => "B".into(),
            Version::Optimized => "O".into(),
            Version::Chunked(k) => format!("C{k}"),
        }
    }
}

/// One task of the transfer handler: bundles, instructions, and the loads
/// and stores among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: &'static str,
    pub cycles: u32,
    pub instrs: u32,
    pub loads: u32,
    pub stores: u32,
}

/// A task of `cycles` bundles holding `instrs` instructions, `loads` and
/// `stores` among them.
pub(crate) const fn task(
    name: &'static str,
    cycles: u32,
    instrs: u32,
    loads: u32,
    stores: u32,
) -> Task {
    Task {
        name,
        cycles,
        instrs,
        loads,
        stores,
    }
}

/// The tasks of FLASH.md §6's optimized send handler, and the few the
/// paper's table does not list (they occur only outside its experiment).
pub mod tasks {
    use super::{task, Task};
    pub const INIT: Task = task("initialization and state load", 9, 10, 4, 0);
    /// Includes the invalidation technique's validity check (one branch).
    pub const DIRECTORY: Task = task("load directory, check", 7, 6, 2, 0);
    /// Clean line: the memory read goes out in the second bundle.
    pub const READ_MEMORY: Task = task("read memory", 2, 3, 0, 0);
    /// Dirty line: the get goes out in the first bundle.
    pub const GET: Task = task("send get to processor cache", 2, 4, 0, 0);
    pub const UPDATE_DIRECTORY: Task = task("update directory", 2, 2, 0, 1);
    pub const WAIT_WRITE: Task = task("wait for cache, write to memory", 2, 4, 0, 0);
    pub const HEADER_CLEAN: Task = task("form header, update state", 8, 15, 1, 2);
    pub const HEADER_DIRTY: Task = task("form header, update state", 9, 16, 2, 2);
    /// Send and reschedule, split: forming the send (done speculatively for
    /// a dirty line), then issuing it and the reschedule.
    pub const SEND_CLEAN: Task = task("send, reschedule", 6, 12, 1, 2);
    pub const SEND_DIRTY_PREPARE: Task = task("send, reschedule", 3, 6, 1, 0);
    pub const SEND_DIRTY_ISSUE: Task = task("send, reschedule", 4, 8, 1, 2);
    /// Global coherence: ask a line's dirty owner for it.
    pub const FETCH: Task = task("fetch remote line", 3, 5, 0, 1);
    /// The last component of a send: unlink its pages, tell the process.
    pub const COMPLETE: Task = task("complete send", 4, 7, 1, 1);
}

impl Task {
    /// Run the task on `cx`: its bundles, its first load at `first` (a
    /// directory entry, say), its other loads and its stores in the
    /// operation record at `record`.
    pub fn charge<S>(&self, cx: &mut Cx<'_, S>, first: u64, record: u64) {
        cx.bundles(self.cycles, self.instrs);
        for i in 0..self.loads {
            cx.load(if i == 0 { first } else { record + i as u64 * 8 });
        }
        for i in 0..self.stores {
            cx.store(record + 64 + i as u64 * 8);
        }
    }
}

/// Instructions, loads and stores by task name, for one invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    /// At most a dozen tasks: kept inline, so an invocation's accounting
    /// never allocates.
    pub tasks: smallvec::SmallVec<[(&'static str, u32); 12]>,
    pub instructions: u32,
    pub loads: u32,
    pub stores: u32,
}

impl Breakdown {
    fn add(&mut self, t: &Task) {
        match self.tasks.iter_mut().find(|x| x.0 == t.name) {
            Some(x) => x.1 += t.instrs,
            None => self.tasks.push((t.name, t.instrs)),
        }
        self.instructions += t.instrs;
        self.loads += t.loads;
        self.stores += t.stores;
    }
}

type C<'a> = Cx<'a, XferNode>;

fn charge(cx: &mut C<'_>, t: &Task, b: &mut Breakdown) {
    charge_at(cx, t, b, addr::SEND);
}

/// As `charge`, with the task's first load at `at` (the directory entry it
/// reads) and the others in the operation record.
fn charge_at(cx: &mut C<'_>, t: &Task, b: &mut Breakdown, at: u64) {
    t.charge(cx, at, addr::SEND);
    b.add(t);
}

/// Split a task around an issue: `before` bundles, the issue, the rest.
fn issue_in<T>(
    cx: &mut C<'_>,
    t: &Task,
    before: u32,
    b: &mut Breakdown,
    f: impl FnOnce(&mut C<'_>) -> T,
) -> T {
    let i = t.instrs * before / t.cycles;
    cx.bundles(before, i);
    let r = f(cx);
    cx.bundles(t.cycles - before, t.instrs - i);
    b.add(t);
    r
}

/// The next component of the stream: `n` bytes from the front send at
/// stream offset `so` into the front space at `ro`; `dp` is where they
/// start within the destination line, `shift` how far the source's bytes
/// move within a line to get there.
#[derive(Clone, Copy, Debug)]
struct Comp {
    so: i64,
    n: u64,
    id: u32,
    ro: u64,
    dp: u64,
    shift: u64,
}

fn next_component(s: &XferNode) -> Option<Comp> {
    let send = s.out.sends.front()?;
    let r = s.out.space.front()?;
    let so = send.sent;
    let dv = r.align + r.used;
    let dp = dv % LINE;
    let sv = send.span.va + so;
    let n = (LINE - dp).min(send.span.len - so).min(r.len - r.used);
    Some(Comp {
        so: so as i64,
        n,
        id: r.id,
        ro: r.used,
        dp,
        shift: (dp + LINE - sv % LINE) % LINE,
    })
}

/// The line of the front send holding stream offset `off`.
fn src_line(s: &XferNode, off: i64) -> PAddr {
    let a = s.out.sends.front().expect("a send").span.paddr(off);
    PAddr(a.0 & !(LINE - 1))
}

/// What the directory says about a line of the send buffer.
enum Held {
    /// Memory is current.
    Memory,
    /// Dirty in this node's processor cache.
    Here,
    /// The processor here is filling or writing it back: wait.
    InFlux,
    /// Dirty in another node's cache (a fetch may be out already).
    Remote { owner: NodeId, fetching: bool },
}

fn held(cx: &mut C<'_>, line: PAddr) -> Held {
    let me = cx.node();
    let e = cx.state().coh.entry(line);
    match e.state {
        DirState::Exclusive(o) if o == me => {
            if cx.state().coh.in_flux(line) {
                Held::InFlux
            } else {
                Held::Here
            }
        }
        DirState::Exclusive(o) => Held::Remote {
            owner: o,
            fetching: e.pending.is_some(),
        },
        _ => Held::Memory,
    }
}

/// Why an invocation stops before its chunk is done.
enum Stop {
    /// No data buffer: back off through the software queue.
    NoBuffer,
    /// The processor's copy is in flux: back off.
    InFlux,
    /// Waiting for a fetch from a remote owner; its answer reschedules.
    Fetch,
    /// A page of the buffer is changing: wait for its new translation.
    Stale,
}

/// Ask a dirty line's owner for it (global coherence); the entry stays
/// pending until the answer.
fn fetch(cx: &mut C<'_>, line: PAddr, owner: NodeId, b: &mut Breakdown) {
    charge(cx, &tasks::FETCH, b);
    let me = cx.node();
    let mut e = cx.state().coh.entry(line);
    e.pending = Some(Pending::Read { requester: me });
    cx.state().coh.set_entry(line, e);
    cx.state().out.fetching.push(line);
    cx.state().stats.fetches += 1;
    let m = Msg::new(mt::FETCH, me, owner).addr(line);
    let _ = cx.send(m, None);
}

/// A remote-dirty line under the node's mode: fetch it (global) or read
/// memory as it is (local, outside its precondition).
fn remote(
    cx: &mut C<'_>,
    line: PAddr,
    owner: NodeId,
    fetching: bool,
    b: &mut Breakdown,
) -> Result<(), Stop> {
    if cx.state().params.mode == Mode::Global {
        if !fetching {
            fetch(cx, line, owner, b);
        }
        return Err(Stop::Fetch);
    }
    cx.state().stats.outside_local += 1;
    Ok(())
}

/// Write a dirty line back from the processor cache through `tmp` (it keeps
/// a clean copy) and mark the directory: memory is then current.
fn write_back_here(cx: &mut C<'_>, line: PAddr, tmp: BufId, b: &mut Breakdown) -> Ticket {
    let iv = issue_in(cx, &tasks::GET, 1, b, |cx| {
        cx.pc_get(line, Some(tmp), LineState::Clean)
            .expect("allocated")
    });
    charge(cx, &tasks::UPDATE_DIRECTORY, b);
    let me = cx.node();
    cx.state().coh.set_entry(
        line,
        DirEntry {
            state: DirState::Shared(Sharers::one(me)),
            pending: None,
        },
    );
    cx.wait_until(iv.done);
    charge(cx, &tasks::WAIT_WRITE, b);
    if iv.state != LineState::Dirty {
        // Not what the directory said: memory already holds the line.
        cx.state().coh.stats.protocol_errors += 1;
        return Ticket {
            first: cx.now(),
            ready: cx.now(),
        };
    }
    cx.mem_write(line, tmp).expect("local line")
}

/// Read a source line into `first` (shifted by `shift`, the rest wrapping
/// into `second`), as its directory entry requires.
fn read_line(
    cx: &mut C<'_>,
    line: PAddr,
    first: BufId,
    shift: usize,
    second: Option<BufId>,
    b: &mut Breakdown,
) -> Result<Ticket, Stop> {
    charge_at(cx, &tasks::DIRECTORY, b, protocol::dir_addr(line));
    match held(cx, line) {
        Held::InFlux => return Err(Stop::InFlux),
        Held::Remote { owner, fetching } => remote(cx, line, owner, fetching, b)?,
        Held::Here => {
            let tmp = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
            let t = write_back_here(cx, line, tmp, b);
            let _ = cx.free_buffer_after(tmp, t);
        }
        Held::Memory => {}
    }
    cx.state().stats.lines_read += 1;
    Ok(issue_in(cx, &tasks::READ_MEMORY, 2, b, |cx| {
        cx.mem_read_wrap(line, first, shift, second)
            .expect("checked")
    }))
}

fn component_msg(cx: &mut C<'_>, c: &Comp) -> Msg {
    let to = cx.state().partner.map_or(cx.node(), |p| p.0);
    Msg::new(mt::COMPONENT, cx.node(), to)
        .lane(Lane::Request)
        .addr(PAddr::new(Region::Message, to, 0))
        .args([c.id as u64, c.ro, c.n])
        .len(c.n as u16)
}

/// An aligned component (the paper's case): the source line is the
/// component. `pending` is a dirty line's get queued by the previous
/// component of the chunk.
fn aligned(
    cx: &mut C<'_>,
    c: &Comp,
    last_in_chunk: bool,
    pending: &mut Option<(PAddr, BufId, Ticket)>,
    first_issue: &mut Option<u32>,
    t0: magic::Cycles,
    b: &mut Breakdown,
) -> Result<BufId, Stop> {
    let line = src_line(cx.state(), c.so);
    let version = cx.state().params.version;
    let queued = match pending.take() {
        Some((l, buf, t)) if l == line => Some((buf, t)),
        Some(p) => {
            retire(cx, p);
            None
        }
        None => None,
    };
    let buf = match queued {
        Some((buf, _)) => buf,
        None => cx.alloc_buffer().ok_or(Stop::NoBuffer)?,
    };
    charge_at(cx, &tasks::DIRECTORY, b, protocol::dir_addr(line));
    let how = match held(cx, line) {
        Held::InFlux if queued.is_none() => Err(Stop::InFlux),
        Held::Remote { owner, fetching } => remote(cx, line, owner, fetching, b).map(|_| false),
        Held::Here | Held::InFlux => Ok(true),
        Held::Memory => Ok(false),
    };
    let dirty = match how {
        Ok(d) => d,
        Err(e) => {
            let _ = cx.free_buffer(buf);
            return Err(e);
        }
    };
    cx.state().stats.lines_read += 1;
    if !dirty {
        // The read goes out at the end of the task's last bundle.
        let t = tasks::READ_MEMORY;
        cx.bundles(t.cycles, t.instrs);
        first_issue.get_or_insert((cx.now() - t0).0 as u32);
        let _ = cx.mem_read(line, buf);
        b.add(&t);
        charge(cx, &tasks::HEADER_CLEAN, b);
        charge(cx, &tasks::SEND_CLEAN, b);
        return Ok(buf);
    }
    // Dirty: the get may already be queued (chunked); else issue it now.
    let iv_done = match queued {
        Some((_, t)) => t.ready,
        None => {
            let iv = issue_in(cx, &tasks::GET, 1, b, |cx| {
                first_issue.get_or_insert((cx.now() - t0).0 as u32);
                cx.pc_get(line, Some(buf), LineState::Clean)
                    .expect("allocated")
            });
            iv.done
        }
    };
    if version == Version::Base {
        cx.wait_until(iv_done);
    }
    charge(cx, &tasks::UPDATE_DIRECTORY, b);
    let me = cx.node();
    cx.state().coh.set_entry(
        line,
        DirEntry {
            state: DirState::Shared(Sharers::one(me)),
            pending: None,
        },
    );
    charge(cx, &tasks::HEADER_DIRTY, b);
    charge(cx, &tasks::SEND_DIRTY_PREPARE, b);
    // Chunked: queue the next line's get behind this one, so the processor
    // cache goes straight on to it.
    if let (Version::Chunked(_), false) = (version, last_in_chunk) {
        let end = c.so + c.n as i64;
        let more = cx
            .state()
            .out
            .sends
            .front()
            .is_some_and(|x| end < x.span.len as i64);
        if more {
            let next = src_line(cx.state(), end);
            cx.load(protocol::dir_addr(next));
            if matches!(held(cx, next), Held::Here) {
                if let Some(nb) = cx.alloc_buffer() {
                    let iv = issue_in(cx, &tasks::GET, 1, b, |cx| {
                        cx.pc_get(next, Some(nb), LineState::Clean)
                            .expect("allocated")
                    });
                    *pending = Some((
                        next,
                        nb,
                        Ticket {
                            first: iv.state_at,
                            ready: iv.done,
                        },
                    ));
                }
            }
        }
    }
    cx.wait_until(iv_done);
    charge(cx, &tasks::WAIT_WRITE, b);
    let _ = cx.mem_write(line, buf);
    charge(cx, &tasks::SEND_DIRTY_ISSUE, b);
    Ok(buf)
}

/// A queued get whose line the chunk did not reach: the processor kept only
/// a clean copy, so the line in the buffer goes to memory.
fn retire(cx: &mut C<'_>, (line, buf, _): (PAddr, BufId, Ticket)) {
    let me = cx.node();
    cx.state().coh.set_entry(
        line,
        DirEntry {
            state: DirState::Shared(Sharers::one(me)),
            pending: None,
        },
    );
    match cx.mem_write(line, buf) {
        Ok(w) => {
            let _ = cx.free_buffer_after(buf, w);
        }
        Err(_) => {
            let _ = cx.free_buffer(buf);
        }
    }
}

/// A component realigned by the wrap-around: the source line whose first
/// byte lands at `shift` in this component's line fills its tail and wraps
/// into the next component's buffer, carried to it.
fn wrapped(cx: &mut C<'_>, c: &Comp, b: &mut Breakdown) -> Result<BufId, Stop> {
    let d = c.shift as i64;
    let carried = match cx.state().out.carry.take() {
        Some(k) if k.wrap && k.at == c.so => Some(k.buf),
        Some(k) => {
            let _ = cx.free_buffer(k.buf);
            None
        }
        None => None,
    };
    let comp = match carried {
        Some(x) => x,
        None => cx.alloc_buffer().ok_or(Stop::NoBuffer)?,
    };
    // Stream offset of the source line whose byte 0 lands at `shift`.
    let l = c.so + d - c.dp as i64;
    let need_prev = (c.dp as i64) < d && carried.is_none();
    let need_cur = c.dp as i64 + (c.n as i64) > d;
    let r = (|| {
        if need_prev {
            let scratch = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
            let line = src_line(cx.state(), l - LINE as i64);
            let t = read_line(cx, line, scratch, d as usize, Some(comp), b);
            match t {
                Ok(t) => {
                    let _ = cx.free_buffer_after(scratch, t);
                }
                Err(e) => {
                    let _ = cx.free_buffer(scratch);
                    return Err(e);
                }
            }
        }
        if need_cur {
            let next = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
            let line = src_line(cx.state(), l);
            if let Err(e) = read_line(cx, line, comp, d as usize, Some(next), b) {
                let _ = cx.free_buffer(next);
                return Err(e);
            }
            cx.state().out.carry = Some(Carry {
                at: c.so + c.n as i64,
                buf: next,
                wrap: true,
            });
        }
        Ok(())
    })();
    if let Err(e) = r {
        let _ = cx.free_buffer(comp);
        return Err(e);
    }
    charge(cx, &tasks::HEADER_CLEAN, b);
    charge(cx, &tasks::SEND_CLEAN, b);
    Ok(comp)
}

/// A component the PP realigns itself (the offsets differ by a part of a
/// doubleword): each source line is read once into a buffer, kept for the
/// next component if it runs on, and the PP shifts the bytes across.
fn shifted(cx: &mut C<'_>, c: &Comp, b: &mut Breakdown) -> Result<BufId, Stop> {
    let comp = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
    let va = cx.state().out.sends.front().expect("a send").span.va as i64;
    let line_of = |off: i64| (va + off).div_euclid(LINE as i64) * LINE as i64 - va;
    let (first, last) = (line_of(c.so), line_of(c.so + c.n as i64 - 1));
    let mut held_bufs: smallvec::SmallVec<[(i64, BufId); 2]> = smallvec::SmallVec::new();
    let mut r = Ok(());
    let mut off = first;
    while off <= last {
        let buf = match cx.state().out.carry {
            Some(k) if !k.wrap && k.at == off => {
                cx.state().out.carry = None;
                k.buf
            }
            _ => match cx.alloc_buffer() {
                Some(x) => {
                    // (A line starting before the buffer is its first line.)
                    let line = src_line(cx.state(), off.max(0));
                    if let Err(e) = read_line(cx, line, x, 0, None, b) {
                        let _ = cx.free_buffer(x);
                        r = Err(e);
                        break;
                    }
                    x
                }
                None => {
                    r = Err(Stop::NoBuffer);
                    break;
                }
            },
        };
        held_bufs.push((off, buf));
        off += LINE as i64;
    }
    if let Err(e) = r {
        for (_, x) in held_bufs {
            let _ = cx.free_buffer(x);
        }
        let _ = cx.free_buffer(comp);
        return Err(e);
    }
    // Wait for the source data, then move it doubleword by doubleword.
    for &(_, x) in &held_bufs {
        if let Some(t) = cx.buffer_ticket(x) {
            cx.wait_until(t.ready);
        }
    }
    let per = cx.state().params.costs.shift_dword;
    let dwords = (c.n as u32).div_ceil(8) + 1;
    cx.bundles(dwords * per / 2, dwords * per);
    let mut bytes = [0u8; LINE_BYTES];
    for i in 0..c.n as i64 {
        let s = c.so + i;
        let l = line_of(s);
        let (_, x) = held_bufs.iter().find(|h| h.0 == l).expect("read");
        let pos = (s - l) as usize;
        bytes[c.dp as usize + i as usize] = cx.buffer(*x).expect("held")[pos];
    }
    if let Some(out) = cx.buffer_mut(comp) {
        *out = bytes;
    }
    // Keep the last source line if the next component starts in it.
    let end = c.so + c.n as i64;
    for (off, x) in held_bufs {
        if off == line_of(end) && off + LINE as i64 > end {
            cx.state().out.carry = Some(Carry {
                at: off,
                buf: x,
                wrap: false,
            });
        } else {
            let _ = cx.free_buffer(x);
        }
    }
    charge(cx, &tasks::HEADER_CLEAN, b);
    charge(cx, &tasks::SEND_CLEAN, b);
    Ok(comp)
}

/// Global coherence: fetch dirty lines ahead of the transfer (`Pipelined`:
/// the next `window` lines; `Collect`: every line of the send, once, before
/// the first component).
fn fetch_ahead(cx: &mut C<'_>, b: &mut Breakdown) -> Result<(), Stop> {
    let p = cx.state().params;
    if p.mode != Mode::Global {
        return Ok(());
    }
    let (va, len, sent, first) = {
        let s = cx.state().out.sends.front().expect("a send");
        (
            s.span.va as i64,
            s.span.len as i64,
            s.sent as i64,
            s.sent == 0,
        )
    };
    let collect = p.strategy == super::Strategy::Collect;
    if collect && !first {
        return Ok(());
    }
    let start = (va + sent).div_euclid(LINE as i64) * LINE as i64 - va;
    let end = if collect {
        len
    } else {
        (start + p.window as i64 * LINE as i64).min(len)
    };
    let mut off = start;
    while off < end {
        let line = src_line(cx.state(), off.max(0));
        cx.load(protocol::dir_addr(line));
        cx.instr(2);
        if let Held::Remote {
            owner,
            fetching: false,
        } = held(cx, line)
        {
            fetch(cx, line, owner, b);
        }
        off += LINE as i64;
    }
    if collect && !cx.state().out.fetching.is_empty() {
        return Err(Stop::Fetch);
    }
    Ok(())
}

/// One invocation of the transfer handler.
pub(crate) fn step(cx: &mut C<'_>, _m: &Msg) {
    let mut b = Breakdown::default();
    let t0 = cx.now();
    let mut first_issue = None;
    charge(cx, &tasks::INIT, &mut b);
    let now = cx.now();
    cx.state().stats.marks.first_line.get_or_insert(now);
    let k = cx.state().params.version.lines_per_invocation();
    let mut pending: Option<(PAddr, BufId, Ticket)> = None;
    let mut stop = None;
    if cx.state().out.sends.front().is_some() {
        if let Err(e) = fetch_ahead(cx, &mut b) {
            stop = Some(e);
        }
    }
    let mut done = 0;
    while stop.is_none() && done < k {
        let Some(c) = next_component(cx.state()) else {
            break;
        };
        let stale = cx.state().out.sends.front().and_then(|s| {
            [c.so, c.so + c.n as i64 - 1]
                .into_iter()
                .find(|&o| !s.span.valid(o))
                .map(|o| os_shim::VPage((s.span.va as i64 + o) as u64 / os_shim::PAGE_BYTES))
        });
        if let Some(v) = stale {
            cx.state().stats.stale_uses += 1;
            super::conn::interrupt(cx, v);
            stop = Some(Stop::Stale);
            break;
        }
        let r = if c.shift == 0 {
            aligned(
                cx,
                &c,
                done + 1 == k,
                &mut pending,
                &mut first_issue,
                t0,
                &mut b,
            )
        } else {
            // A get queued for an aligned component that did not come: its
            // line goes to memory before anything reads it there.
            if let Some(p) = pending.take() {
                retire(cx, p);
            }
            if c.shift % 8 == 0 {
                wrapped(cx, &c, &mut b)
            } else {
                shifted(cx, &c, &mut b)
            }
        };
        let buf = match r {
            Ok(x) => x,
            Err(e) => {
                stop = Some(e);
                break;
            }
        };
        let m = component_msg(cx, &c);
        let _ = cx.send(m, Some(buf));
        if let Some((s, e)) = cx.last_wire() {
            let marks = &mut cx.state().stats.marks;
            marks.first_wire.get_or_insert(s);
            marks.last_wire = Some(e);
        }
        advance(cx, &c, &mut b);
        done += 1;
    }
    if let Some(p) = pending {
        retire(cx, p);
    }
    let me = cx.node();
    let s = cx.state();
    if s.stats.invocations == 0 {
        s.stats.first = b;
        s.stats.first_issue = first_issue;
    }
    s.stats.invocations += 1;
    match stop {
        Some(Stop::NoBuffer) => s.stats.alloc_fails += 1,
        Some(Stop::Fetch) => {
            // The fetch's answer reschedules the handler.
            s.out.blocked = true;
            return;
        }
        Some(Stop::Stale) => {
            // The OS's answer relinks the page and reschedules the handler.
            s.out.blocked = true;
            return;
        }
        Some(Stop::InFlux) | None => {}
    }
    if s.out.sends.is_empty() || s.out.space.is_empty() {
        s.out.running = false;
        if let Some(k) = s.out.carry.take() {
            let _ = cx.free_buffer(k.buf);
        }
        return;
    }
    let _ = cx.reschedule(Msg::new(mt::STEP, me, me).addr(PAddr::new(Region::Message, me, 0)));
}

/// Account for a component sent: the send and the space move on; a send
/// fully handed to the network is complete.
fn advance(cx: &mut C<'_>, c: &Comp, b: &mut Breakdown) {
    let s = cx.state();
    s.stats.components_sent += 1;
    s.stats.bytes_sent += c.n;
    let space_full = {
        let r = s.out.space.front_mut().expect("a space");
        r.used += c.n;
        r.used == r.len
    };
    let send_done = {
        let x = s.out.sends.front_mut().expect("a send");
        x.sent += c.n;
        x.sent == x.span.len
    };
    if space_full {
        s.out.space.pop_front();
    }
    if space_full || send_done {
        // The next component starts a new alignment: nothing carries over.
        if let Some(k) = s.out.carry.take() {
            let _ = cx.free_buffer(k.buf);
        }
    }
    if send_done {
        let op = cx.state().out.sends.pop_front().expect("a send");
        charge(cx, &tasks::COMPLETE, b);
        for u in &op.span.uses {
            cx.state().pages.unlink(u);
        }
        let me = cx.node();
        let m = Msg::new(mt::SEND_DONE, me, me).args([op.span.len, op.pid.0 as u64, 0]);
        let _ = cx.to_processor(m, None);
    }
}
