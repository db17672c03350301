//! The sender's transfer handler.
//!
//! Its steps follow the paper's task breakdown (Table 2, docs/reference.md),
//! with every count taken from the transfer's cost sheet
//! ([`TransferCosts`](super::costs::TransferCosts)). Each Table 2 row is split where a chunked handler
//! pays a part once per invocation (starting and loading the record, the
//! first line's directory address, storing the stream state,
//! rescheduling) and the rest once per component (a further line's
//! directory entry, the read or the get, the header, the send). With one
//! component per invocation the rows add up to the published 46
//! instructions for a clean line (8 loads, 4 stores) and 56 for a dirty one
//! (10, 5), and the schedule puts the memory read 18 cycles into the
//! handler and the processor-cache get 17.
//!
//! Versions:
//! - `Base`: issues the get to the processor cache and stalls until the
//!   line returns before doing anything else;
//! - `Optimized`: issues the get early and does the work that does not
//!   need the line (directory update, header, stream state, preparing the
//!   send) while the cache answers, stalling only for what is left (Fig. 9:
//!   get at cycle 17, speculative work until 32, then the stall);
//! - `Chunked(k)`: the optimized handler sending `k` components per
//!   invocation with its state in registers. The processor-cache interface
//!   takes one intervention at a time and queues none, so a dirty line's
//!   get waits until the previous line's data transfer is over: within a
//!   chunk the cache is busy back to back, and what chunking saves is the
//!   per-invocation start between chunks.
//!
//! A dirty line "returns" with its first word: the state is known by then,
//! and the memory write and the outbox both take the data buffer as it
//! fills, so the handler issues them without waiting for the last word.
//!
//! A component whose source sits at another offset within its line than its
//! destination is realigned: by the data path's wrap-around when the two
//! offsets differ by whole doublewords (a source line is read once, into
//! the tail of this component's buffer and the head of the next one's),
//! and by the PP, doubleword by doubleword, otherwise. No buffer is held
//! from one invocation to the next, so each invocation of an unaligned
//! transfer reads the line it stopped in again, into an extra buffer: the
//! paper's extra memory load and extra buffer per invocation.

use super::conn;
use super::costs::row;
use super::msg::{xfer_msg, XferMsg};
use super::state::{
    addr, costs, requeue, step_again, Carry, HeldBack, Strategy, Version, XferNode, C,
};
use coherence::directory::{DirEntry, DirState};
use coherence::modes::Mode;
use coherence::protocol;
use magic::costs::{Breakdown, Task};
use magic::{BufId, Cycles, LineState, Msg, NodeId, PAddr, Region, Ticket, LINE_BYTES};

const LINE: u64 = LINE_BYTES as u64;

/// One invocation's accounting.
struct Inv {
    b: Breakdown,
    t0: Cycles,
    /// The first directory entry of the invocation has been loaded (the
    /// next ones are its neighbours).
    dir_loaded: bool,
    /// The stream state has been stored back.
    state_updated: bool,
    /// Cycles into the invocation when its first read or get went out.
    first_issue: Option<u32>,
    /// When the processor-cache interface is free of this invocation's
    /// last intervention: it takes one at a time and queues none, so the
    /// next get waits for it.
    pc_free: Cycles,
    /// The waits of this invocation no idle time on the link has been
    /// explained by yet: its dispatch's, and its transfers' behind other
    /// handlers' work.
    waits: HeldBack,
    /// The node's unit waits when last looked at (`Cx::unit_waits`).
    units: (Cycles, Cycles),
}

/// A component of this stream went on the wire from `start` to `end`:
/// the link's idle time since the previous one is explained, as far as
/// they go, by the invocation's waits so far.
fn on_wire(cx: &mut C<'_>, start: Cycles, end: Cycles, inv: &mut Inv) {
    let (m, p) = cx.unit_waits();
    inv.waits.memory += (m - inv.units.0).0;
    inv.waits.pcache_if += (p - inv.units.1).0;
    inv.units = (m, p);
    let stats = &mut cx.state().stats;
    if let Some(prev) = stats.marks.last_wire {
        let gap = start.saturating_sub(prev).0;
        stats.held_sending.explain(gap, &mut inv.waits);
    }
    // Only the first component's gap can be the dispatch's doing: by the
    // next, the handler is running.
    inv.waits.pp_arbitration = 0;
    stats.marks.first_wire.get_or_insert(start);
    stats.marks.last_wire = Some(end);
}

/// Run `t` (a Table 2 `row`) with its loads and stores in the record.
fn charge(cx: &mut C<'_>, t: Task, row: &'static str, inv: &mut Inv) {
    t.charge(cx, addr::SEND, addr::SEND);
    inv.b.add(row, &t);
}

/// Run `t` split around an issue: `before` bundles, the issue, the rest.
fn issue_in<T>(
    cx: &mut C<'_>,
    t: Task,
    before: u32,
    row: &'static str,
    inv: &mut Inv,
    f: impl FnOnce(&mut C<'_>) -> T,
) -> T {
    let before = before.min(t.cycles);
    let i = t.instrs * before / t.cycles.max(1);
    cx.bundles(before, i);
    let now = cx.now();
    inv.first_issue.get_or_insert((now - inv.t0).0 as u32);
    let r = f(cx);
    cx.bundles(t.cycles - before, t.instrs - i);
    t.touch(cx, addr::SEND, addr::SEND);
    inv.b.add(row, &t);
    r
}

/// Load and test `line`'s directory entry: the invocation's first pays the
/// address work, the next ones are its neighbours.
fn directory(cx: &mut C<'_>, line: PAddr, inv: &mut Inv) {
    let k = costs(cx);
    let t = if inv.dir_loaded {
        k.send_directory_next
    } else {
        k.send_directory
    };
    inv.dir_loaded = true;
    t.charge(cx, protocol::dir_addr(line), addr::SEND);
    inv.b.add(row::DIRECTORY, &t);
}

/// Store the stream state back (once an invocation).
fn update_state(cx: &mut C<'_>, inv: &mut Inv) {
    if !inv.state_updated {
        inv.state_updated = true;
        let t = costs(cx).send_update_state;
        charge(cx, t, row::HEADER, inv);
    }
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

/// The bytes of the next component: up to the end of the destination line
/// its first byte lands in (at `dv` within its receive's lines), and within
/// what is left of the front send and of the front space. The one place a
/// stream is cut, which a saved result's line count is held to.
pub(super) fn cut(dv: u64, send_left: u64, space_left: u64) -> u64 {
    (LINE - dv % LINE).min(send_left).min(space_left)
}

fn next_component(s: &XferNode) -> Option<Comp> {
    let send = s.out.sends.front()?;
    let r = s.out.space.front()?;
    let so = send.sent;
    let dv = r.align + r.used;
    let dp = dv % LINE;
    let sv = send.span.va + so;
    let n = cut(dv, send.span.len - so, r.len - r.used);
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
    match e.state(line.node()) {
        DirState::Exclusive(o) if o == me => {
            if cx.state().coh.in_flux(line) {
                Held::InFlux
            } else {
                Held::Here
            }
        }
        DirState::Exclusive(o) => Held::Remote {
            owner: o,
            fetching: e.pending,
        },
        _ => Held::Memory,
    }
}

/// Load and check a source line's directory entry: where the line's latest
/// bytes are. Without coherence no entry is looked at: memory as it is.
fn look(cx: &mut C<'_>, line: PAddr, inv: &mut Inv) -> Held {
    if cx.state().params.mode == Mode::None {
        return Held::Memory;
    }
    directory(cx, line, inv);
    held(cx, line)
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
    /// Waiting for a line from its home (a third node); its answer
    /// reschedules.
    Pull,
    /// A line this handler cannot get: the send stays pending, reported.
    Unservable,
}

/// Ask a dirty line's owner for it (global coherence); the entry stays
/// pending until the answer.
fn fetch(cx: &mut C<'_>, line: PAddr, owner: NodeId, inv: &mut Inv) {
    let t = costs(cx).fetch_issue;
    charge(cx, t, row::FETCH, inv);
    let mut e = cx.state().coh.entry(line);
    e.pending = true;
    cx.state().coh.set_entry(line, e);
    cx.state().out.fetching.push(line);
    cx.state().stats.fetches += 1;
    let m = cx.msg(XferMsg::Fetch { keep: true }).to(owner).addr(line);
    let _ = cx.send(m, None);
}

/// A remote-dirty line under the node's mode: fetch it (global) or read
/// memory as it is (local, outside its precondition).
fn remote(
    cx: &mut C<'_>,
    line: PAddr,
    owner: NodeId,
    fetching: bool,
    inv: &mut Inv,
) -> Result<(), Stop> {
    if cx.state().params.mode == Mode::Global {
        if !fetching {
            fetch(cx, line, owner, inv);
        }
        return Err(Stop::Fetch);
    }
    cx.state().stats.outside_local += 1;
    Ok(())
}

/// When a get's line is back: its first word (a dirty line), or its state.
fn returns(iv: &magic::pcache::Intervention) -> Cycles {
    iv.first_word_at.unwrap_or(iv.state_at)
}

/// The directory now says this node's processor shares the line.
fn mark_shared(cx: &mut C<'_>, line: PAddr, inv: &mut Inv) {
    let t = costs(cx).send_update_directory;
    t.charge_on(cx, protocol::dir_addr(line));
    inv.b.add(row::UPDATE_DIRECTORY, &t);
    cx.state().coh.set_entry(line, DirEntry::shared(true, &[]));
}

/// Write a dirty line back from the processor cache through `tmp` (it keeps
/// a clean copy) and mark the directory: memory is then current.
fn write_back_here(cx: &mut C<'_>, line: PAddr, tmp: BufId, inv: &mut Inv) -> Ticket {
    let k = costs(cx);
    let iv = get(cx, line, tmp, inv);
    mark_shared(cx, line, inv);
    cx.wait_until(returns(&iv));
    charge(cx, k.send_wait_write, row::WAIT_WRITE, inv);
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
    inv: &mut Inv,
) -> Result<Ticket, Stop> {
    if line.node() != cx.node() {
        // Realigned components are modelled for lines homed here only (the
        // experiment refuses the rest up front).
        return Err(Stop::Unservable);
    }
    match look(cx, line, inv) {
        Held::InFlux => return Err(Stop::InFlux),
        Held::Remote { owner, fetching } => remote(cx, line, owner, fetching, inv)?,
        Held::Here => {
            let tmp = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
            let t = write_back_here(cx, line, tmp, inv);
            let _ = cx.free_buffer_after(tmp, t);
        }
        Held::Memory => {}
    }
    cx.state().stats.lines_read += 1;
    let t = costs(cx).send_read;
    Ok(issue_in(cx, t, t.cycles, row::READ, inv, |cx| {
        cx.mem_read_wrap(line, first, shift, second)
            .expect("checked")
    }))
}

fn component_msg(cx: &mut C<'_>, c: &Comp) -> Msg {
    let to = cx.state().partner.map_or(cx.node(), |p| p.0);
    let comp = XferMsg::Component {
        id: c.id,
        at: c.ro,
        len: c.n,
    };
    cx.msg(comp)
        .to(to)
        .addr(PAddr::new(Region::Message, to, 0))
        .len(c.n as u16)
}

/// A clean component's header and send; the stream state with the last.
fn form_and_send_clean(cx: &mut C<'_>, last: bool, inv: &mut Inv) {
    let k = costs(cx);
    charge(cx, k.send_header_clean, row::HEADER, inv);
    if last {
        update_state(cx, inv);
    }
    charge(cx, k.send_component, row::SEND, inv);
}

/// Issue the get of a dirty `line` into `buf` once the processor-cache
/// interface is free: when the line returns (its first word).
fn get(cx: &mut C<'_>, line: PAddr, buf: BufId, inv: &mut Inv) -> magic::pcache::Intervention {
    let t = costs(cx).send_get;
    cx.wait_until(inv.pc_free);
    let iv = issue_in(cx, t, 1, row::GET, inv, |cx| {
        cx.pc_get(line, Some(buf), LineState::Clean)
            .expect("allocated")
    });
    inv.pc_free = iv.done;
    cx.state().coh.stats.message_interventions += 1;
    iv
}

/// Ask `line`'s home (a third node) for it.
fn pull(cx: &mut C<'_>, line: PAddr, inv: &mut Inv) {
    let t = costs(cx).pull_issue;
    charge(cx, t, row::PULL, inv);
    cx.state().out.pulling.push(line);
    cx.state().stats.pulls += 1;
    let m = cx.msg(XferMsg::Pull).to(line.node()).addr(line);
    let _ = cx.send(m, None);
}

/// An aligned component whose source line is homed at a third node: its
/// home's answer holds the line in a data buffer, which goes out as the
/// component; until it is in, the handler waits for it.
fn from_home(cx: &mut C<'_>, line: PAddr, last: bool, inv: &mut Inv) -> Result<BufId, Stop> {
    let o = &mut cx.state().out;
    let Some(i) = o.pulled.iter().position(|p| p.0 == line) else {
        if !o.pulling.contains(&line) {
            pull(cx, line, inv);
        }
        cx.state().out.awaiting = Some(line);
        return Err(Stop::Pull);
    };
    let (_, buf) = o.pulled.remove(i);
    cx.state().stats.lines_read += 1;
    form_and_send_clean(cx, last, inv);
    Ok(buf)
}

/// Buffers homed at a third node: ask their home for the lines ahead of
/// the stream, as many at a time as the pipelined fetch's window, but at
/// most half the data buffers (each answer holds one until it is sent).
fn pull_ahead(cx: &mut C<'_>, inv: &mut Inv) {
    let me = cx.node();
    let limit = (cx.state().params.window as usize)
        .min(cx.params().data_buffers / 2)
        .max(1);
    let (va, len, sent) = {
        let s = cx.state().out.sends.front().expect("a send");
        (s.span.va as i64, s.span.len as i64, s.sent as i64)
    };
    let mut off = (va + sent).div_euclid(LINE as i64) * LINE as i64 - va;
    while off < len {
        let o = &cx.state().out;
        if o.pulling.len() + o.pulled.len() >= limit {
            break;
        }
        let line = src_line(cx.state(), off.max(0));
        let o = &cx.state().out;
        let asked = o.pulling.contains(&line) || o.pulled.iter().any(|p| p.0 == line);
        if line.node() != me && !asked {
            pull(cx, line, inv);
        }
        off += LINE as i64;
    }
}

/// An aligned component (the paper's case): the source line is the
/// component; `last` says it is the invocation's last.
fn aligned(cx: &mut C<'_>, c: &Comp, last: bool, inv: &mut Inv) -> Result<BufId, Stop> {
    let k = costs(cx);
    let line = src_line(cx.state(), c.so);
    if line.node() != cx.node() {
        return from_home(cx, line, last, inv);
    }
    let version = cx.state().params.handler;
    let buf = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
    let how = match look(cx, line, inv) {
        Held::InFlux => Err(Stop::InFlux),
        Held::Remote { owner, fetching } => remote(cx, line, owner, fetching, inv).map(|_| false),
        Held::Here => Ok(true),
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
        issue_in(cx, k.send_read, k.send_read.cycles, row::READ, inv, |cx| {
            let _ = cx.mem_read(line, buf);
        });
        form_and_send_clean(cx, last, inv);
        return Ok(buf);
    }
    let back = returns(&get(cx, line, buf, inv));
    if version == Version::Base {
        cx.wait_until(back);
    }
    // Speculative work: nothing below needs the line until the wait.
    mark_shared(cx, line, inv);
    charge(cx, k.send_header_dirty, row::HEADER, inv);
    if last {
        update_state(cx, inv);
    }
    charge(cx, k.send_prepare_dirty, row::SEND, inv);
    cx.wait_until(back);
    charge(cx, k.send_wait_write, row::WAIT_WRITE, inv);
    let _ = cx.mem_write(line, buf);
    charge(cx, k.send_issue_dirty, row::SEND, inv);
    Ok(buf)
}

/// A component realigned by the wrap-around: the source line whose first
/// byte lands at `shift` in this component's line fills its tail and wraps
/// into the next component's buffer, carried to it within the invocation.
fn wrapped(cx: &mut C<'_>, c: &Comp, last: bool, inv: &mut Inv) -> Result<BufId, Stop> {
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
    let wrap = costs(cx).send_wrap;
    let r = (|| {
        if need_prev {
            // The line this component's head comes from, read again into
            // an extra buffer: nothing is carried into an invocation.
            let scratch = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
            charge(cx, wrap, row::WRAP, inv);
            let line = src_line(cx.state(), l - LINE as i64);
            match read_line(cx, line, scratch, d as usize, Some(comp), inv) {
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
            charge(cx, wrap, row::WRAP, inv);
            let line = src_line(cx.state(), l);
            if let Err(e) = read_line(cx, line, comp, d as usize, Some(next), inv) {
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
    form_and_send_clean(cx, last, inv);
    Ok(comp)
}

/// A component the PP realigns itself (the offsets differ by a part of a
/// doubleword): each source line is read once into a buffer, kept for the
/// next component of the invocation if it runs on, and the PP shifts the
/// bytes across.
fn shifted(cx: &mut C<'_>, c: &Comp, last: bool, inv: &mut Inv) -> Result<BufId, Stop> {
    let comp = cx.alloc_buffer().ok_or(Stop::NoBuffer)?;
    let va = cx.state().out.sends.front().expect("a send").span.va as i64;
    let line_of = |off: i64| (va + off).div_euclid(LINE as i64) * LINE as i64 - va;
    let (first, last_line) = (line_of(c.so), line_of(c.so + c.n as i64 - 1));
    let mut held_bufs: smallvec::SmallVec<[(i64, BufId); 2]> = smallvec::SmallVec::new();
    let mut r = Ok(());
    let mut off = first;
    while off <= last_line {
        let buf = match cx.state().out.carry {
            Some(k) if !k.wrap && k.at == off => {
                cx.state().out.carry = None;
                k.buf
            }
            _ => match cx.alloc_buffer() {
                Some(x) => {
                    // (A line starting before the buffer is its first line.)
                    let line = src_line(cx.state(), off.max(0));
                    if let Err(e) = read_line(cx, line, x, 0, None, inv) {
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
    let per = costs(cx).shift_dword;
    let dwords = (c.n as u32).div_ceil(8) + 1;
    cx.instr(dwords * per);
    inv.b.add(
        row::SHIFT,
        &Task {
            instrs: dwords * per,
            ..Task::default()
        },
    );
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
    form_and_send_clean(cx, last, inv);
    Ok(comp)
}

/// Global coherence: fetch dirty lines ahead of the transfer (`Pipelined`:
/// the next `window` lines; `Collect`: every line of the send, once, before
/// the first component).
fn fetch_ahead(cx: &mut C<'_>, inv: &mut Inv) -> Result<(), Stop> {
    pull_ahead(cx, inv);
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
    let collect = p.strategy == Strategy::Collect;
    if collect && !first {
        return Ok(());
    }
    let start = (va + sent).div_euclid(LINE as i64) * LINE as i64 - va;
    let end = if collect {
        len
    } else {
        (start + p.window as i64 * LINE as i64).min(len)
    };
    let check = p.costs.fetch_check;
    let mut off = start;
    while off < end {
        let line = src_line(cx.state(), off.max(0));
        if line.node() != cx.node() {
            // Its home's directory, not this one's: the pull asks there.
            off += LINE as i64;
            continue;
        }
        check.charge(cx, protocol::dir_addr(line), addr::SEND);
        inv.b.add(row::FETCH, &check);
        if let Held::Remote {
            owner,
            fetching: false,
        } = held(cx, line)
        {
            fetch(cx, line, owner, inv);
        }
        off += LINE as i64;
    }
    if collect && !cx.state().out.fetching.is_empty() {
        return Err(Stop::Fetch);
    }
    Ok(())
}

/// Whether component `c` ends the front send or the front space.
fn ends_stream(s: &XferNode, c: &Comp) -> bool {
    let send_end = s
        .out
        .sends
        .front()
        .is_none_or(|x| c.so as u64 + c.n >= x.span.len);
    let space_end = s.out.space.front().is_none_or(|r| c.ro + c.n >= r.len);
    send_end || space_end
}

/// One invocation of the sender's transfer handler.
pub(super) fn send_step(cx: &mut C<'_>, _m: &Msg, _msg: xfer_msg::Step) {
    requeue(cx);
    let k = costs(cx);
    let mut inv = Inv {
        b: Breakdown::default(),
        t0: cx.now(),
        dir_loaded: false,
        state_updated: false,
        first_issue: None,
        pc_free: Cycles(0),
        waits: HeldBack {
            pp_arbitration: cx.queued().0,
            ..HeldBack::default()
        },
        units: cx.unit_waits(),
    };
    charge(cx, k.send_init, row::INIT, &mut inv);
    let now = cx.now();
    cx.state().stats.marks.first_line.get_or_insert(now);
    let lines = cx.state().params.handler.lines_per_invocation();
    let mut stop = None;
    if cx.state().out.sends.front().is_some() {
        if let Err(e) = fetch_ahead(cx, &mut inv) {
            stop = Some(e);
        }
    }
    let mut done = 0;
    while stop.is_none() && done < lines {
        let Some(c) = next_component(cx.state()) else {
            break;
        };
        let st = cx.state();
        let stale = st.out.sends.front().and_then(|s| {
            [c.so, c.so + c.n as i64 - 1]
                .into_iter()
                .find(|&o| !s.span.valid(&st.pages, o))
                .map(|o| os_shim::VPage((s.span.va as i64 + o) as u64 / os_shim::PAGE_BYTES))
        });
        if let Some(v) = stale {
            cx.state().stats.stale_uses += 1;
            conn::interrupt(cx, v);
            stop = Some(Stop::Stale);
            break;
        }
        let last = done + 1 == lines || ends_stream(cx.state(), &c);
        let r = if c.shift == 0 {
            aligned(cx, &c, last, &mut inv)
        } else if c.shift % 8 == 0 {
            wrapped(cx, &c, last, &mut inv)
        } else {
            shifted(cx, &c, last, &mut inv)
        };
        let buf = match r {
            Ok(x) => x,
            Err(e) => {
                stop = Some(e);
                break;
            }
        };
        let m = component_msg(cx, &c);
        if cx.send(m, Some(buf)).is_ok() {
            if let Some((s, e)) = cx.last_wire() {
                on_wire(cx, s, e, &mut inv);
            }
        }
        advance(cx, &c, &mut inv);
        done += 1;
    }
    if done > 0 {
        update_state(cx, &mut inv);
    }
    // No buffer is held from one invocation to the next.
    if let Some(k) = cx.state().out.carry.take() {
        let _ = cx.free_buffer(k.buf);
    }
    let again = match stop {
        Some(Stop::NoBuffer) => {
            cx.state().stats.alloc_fails += 1;
            true
        }
        // The fetch's answer, or the OS's answer relinking the page,
        // reschedules the handler.
        Some(Stop::Fetch) | Some(Stop::Stale) | Some(Stop::Pull) => {
            cx.state().out.blocked = true;
            false
        }
        Some(Stop::Unservable) => {
            cx.state().stats.dropped += 1;
            false
        }
        Some(Stop::InFlux) | None => true,
    };
    let s = cx.state();
    let more = again && !s.out.sends.is_empty() && !s.out.space.is_empty();
    if again && !more {
        s.out.running = false;
    }
    if more {
        charge(cx, k.send_reschedule, row::SEND, &mut inv);
        step_again(cx);
    }
    let s = cx.state();
    if s.stats.invocations == 0 {
        s.stats.first = inv.b;
        s.stats.first_issue = inv.first_issue;
    }
    s.stats.invocations += 1;
}

/// Account for a component sent: the send and the space move on; a send
/// fully handed to the network is complete.
fn advance(cx: &mut C<'_>, c: &Comp, inv: &mut Inv) {
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
        let t = costs(cx).send_complete;
        charge(cx, t, row::COMPLETE, inv);
        for u in &op.span.uses {
            cx.state().pages.unlink(u);
        }
        let m = cx.msg(XferMsg::SendDone {
            bytes: op.span.len,
            pid: op.pid,
        });
        let _ = cx.to_processor(m, None);
    }
}

/// A pulled line is in from its home (a third node). Keep its buffer for the transfer
/// handler, and wake the handler if it waits for this line.
pub(super) fn pulled(cx: &mut C<'_>, m: &Msg, _msg: xfer_msg::Pulled) {
    costs(cx).pull_in.charge(cx, addr::SEND, addr::SEND);
    let line = m.addr;
    let Some(b) = cx.take_msg_buffer() else {
        cx.state().stats.dropped += 1;
        return;
    };
    let o = &mut cx.state().out;
    let Some(i) = o.pulling.iter().position(|l| *l == line) else {
        // Nothing asked for it: count and drop it.
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(b);
        return;
    };
    o.pulling.swap_remove(i);
    o.pulled.push((line, b));
    if o.blocked && o.awaiting == Some(line) {
        o.blocked = false;
        o.awaiting = None;
        step_again(cx);
    }
}
