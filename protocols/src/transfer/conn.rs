//! The connection on MAGIC: the command handlers, setup and space notice,
//! the receiving side (component, retry and cleanup handlers), the OS's
//! notices and answers. Global coherence's fetch of a remote owner's dirty
//! line lives here too: it is a request and reply between MAGICs.
//!
//! A command is one write naming the operation (its address) and length
//! (its data), then one write per page of the buffer through the page's
//! shadow (the address is the authentic physical page, the data the user's
//! virtual address of it), then the committing read. A receive names its
//! pages through the write shadow, which exists only for writable pages.

use super::home;
use super::msg::{xfer_msg, Answering, Refusal, XferMsg, XferOp};
use super::state::{
    addr, command, complete_if_done, costs, from_record, land, queue, requeue, step_again,
    to_record, Accepted, CmdRecord, HeldBack, RecvOp, SendOp, Space, Span, Strategy, XferNode, C,
};
use crate::os_side::{self, Frame};
use crate::user::pages::PageTable;
use coherence::directory::DirEntry;
use coherence::modes;
use magic::costs::Task;
use magic::{BufId, Cycles, Install, LineState, Msg, PAddr, Region, LINE_BYTES};
use os_shim::{VPage, PAGE_BYTES, WRITE_SHADOW};

/// Run a handler's tasks in order, their loads and stores at `base`.
fn run_tasks(cx: &mut C<'_>, ts: &[Task], base: u64) {
    for t in ts {
        t.charge(cx, base, base);
    }
}

// ---------------------------------------------------------------- commands

/// At most this many accepted commands wait for setup.
const MAX_ACCEPTED: usize = 8;

fn to_cpu(cx: &mut C<'_>, m: XferMsg) {
    let m = cx.msg(m);
    let _ = cx.to_processor(m, None);
}

/// The command write naming the operation (its address) and its word: a
/// new sequence.
fn cmd_op(cx: &mut C<'_>, m: &Msg, xfer_msg::Command { arg }: xfer_msg::Command) {
    let c = command(cx);
    cx.instr(c.write);
    cx.store(addr::CMD);
    let op = XferOp::from_u64(m.addr.offset() / 8);
    cx.state().cmd = CmdRecord {
        op,
        arg,
        pages: Vec::new(),
        bad: op.is_none(),
    };
}

/// A command write through a page's shadow: one page of the buffer.
fn cmd_page(cx: &mut C<'_>, m: &Msg, xfer_msg::Page { vaddr }: xfer_msg::Page) {
    let c = command(cx);
    cx.instr(c.write);
    cx.store(addr::CMD + 8);
    let write = m.addr.0 & WRITE_SHADOW != 0;
    let a = PAddr(m.addr.0 & !WRITE_SHADOW).with_region(Region::Normal);
    let r = &mut cx.state().cmd;
    if r.op.is_none() {
        r.bad = true;
    }
    r.pages.push((a, vaddr, write));
}

/// The committing read: check the sequence and answer; the setup follows
/// through the software queue.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg, _msg: xfer_msg::Commit) {
    let c = costs(cx);
    run_tasks(
        cx,
        &[
            c.commit_decode,
            c.commit_check,
            c.commit_connection,
            c.commit_answer,
        ],
        addr::CMD,
    );
    let r = std::mem::take(&mut cx.state().cmd);
    let op = Answering(r.op);
    match check(cx, &r) {
        Err(reason) => to_cpu(cx, XferMsg::Nack { reason, op }),
        Ok(None) => to_cpu(cx, XferMsg::Ack { op }),
        Ok(Some(a)) => {
            to_cpu(cx, XferMsg::Ack { op });
            cx.state().accepted.push_back(a);
            queue(cx, XferMsg::Setup);
        }
    }
}

/// Check a command; a connect takes effect at once, a send or receive is
/// accepted for setup.
fn check(cx: &mut C<'_>, r: &CmdRecord) -> Result<Option<Accepted>, Refusal> {
    let pid = cx.state().cpu.pid;
    let me = cx.node();
    let mem = cx.params().mem_bytes;
    let op = match (r.op, r.bad) {
        (Some(op), false) => op,
        _ => return Err(Refusal::Malformed),
    };
    if op == XferOp::Connect {
        let peer = cx.state().os.vpid(pid, r.arg as u16);
        return match peer {
            Some(p) if p.0 != me => {
                cx.state().partner = Some(p);
                Ok(None)
            }
            _ => Err(Refusal::NotConnected),
        };
    }
    if cx.state().partner.is_none() {
        return Err(Refusal::NotConnected);
    }
    if cx.state().accepted.len() >= MAX_ACCEPTED {
        return Err(Refusal::NoRecord);
    }
    let len = r.arg;
    let Some(&(first, va, _)) = r.pages.first() else {
        return Err(Refusal::Malformed);
    };
    let pages = Span::pages(va, len);
    let contiguous = r
        .pages
        .iter()
        .enumerate()
        .all(|(k, p)| p.1 / PAGE_BYTES == va / PAGE_BYTES + k as u64);
    // A page may be homed at any node's memory, except under local
    // coherence, which keeps only this node's directory.
    let nodes = cx.nodes();
    let local = cx.state().params.mode == coherence::modes::Mode::Local;
    let ours = r.pages.iter().all(|p| {
        let n = p.0.node();
        n.0 < nodes && (n == me || !local) && p.0.offset() < mem
    });
    if len == 0
        || r.pages.len() as u64 != pages
        || !contiguous
        || !ours
        || first.offset() % PAGE_BYTES != va % PAGE_BYTES
    {
        return Err(Refusal::Malformed);
    }
    if op == XferOp::Post && !r.pages.iter().all(|p| p.2) {
        return Err(Refusal::NotAllowed);
    }
    Ok(Some(Accepted {
        op,
        pid,
        va,
        len,
        frames: r
            .pages
            .iter()
            .map(|p| PAddr(p.0 .0 - p.0.offset() % PAGE_BYTES))
            .collect(),
    }))
}

/// Set up an accepted send or receive: verify it, link its pages, and
/// start the transfer or offer the space to the partner.
fn setup(cx: &mut C<'_>, _m: &Msg, _msg: xfer_msg::Setup) {
    requeue(cx);
    let Some(a) = cx.state().accepted.pop_front() else {
        return;
    };
    let c = costs(cx);
    run_tasks(cx, &[c.setup_load, c.setup_verify], addr::SEND);
    let mut uses = Vec::with_capacity(a.frames.len());
    for (k, f) in a.frames.iter().enumerate() {
        // The in-use table's entry beside the stream's state.
        c.link.charge_on(cx, addr::SEND);
        uses.push(cx.state().pages.link(*f, 0, k as u8));
    }
    run_tasks(
        cx,
        &[c.setup_space, c.setup_state, c.setup_schedule],
        addr::SEND,
    );
    let span = Span {
        va: a.va,
        len: a.len,
        frames: a.frames,
        uses,
    };
    let me = cx.node();
    match a.op {
        XferOp::Send => {
            let s = cx.state();
            s.out.sends.push_back(SendOp {
                pid: a.pid,
                span,
                sent: 0,
            });
            maybe_start(cx);
        }
        XferOp::Post => {
            let s = cx.state();
            let id = s.next_recv;
            s.next_recv += 1;
            let align = a.va % LINE_BYTES as u64;
            s.recvs.push(RecvOp {
                id,
                pid: a.pid,
                span,
                got: 0,
                written: Cycles(0),
                deposits: 0,
                held: HeldBack::default(),
            });
            let to = s.partner.map_or(me, |p| p.0);
            let space = XferMsg::Space {
                id,
                len: a.len,
                align,
            };
            let m = cx
                .msg(space)
                .to(to)
                .addr(PAddr::new(Region::Message, to, 0));
            let _ = cx.send(m, None);
        }
        XferOp::Connect => {}
    }
}

/// Schedule the transfer handler if there is data and space and it is not
/// already running.
fn maybe_start(cx: &mut C<'_>) {
    let o = &mut cx.state().out;
    if !o.running && !o.sends.is_empty() && !o.space.is_empty() {
        o.running = true;
        step_again(cx);
    }
}

/// The partner posted a receive.
fn space(cx: &mut C<'_>, _m: &Msg, xfer_msg::Space { id, len, align }: xfer_msg::Space) {
    let c = costs(cx);
    run_tasks(cx, &[c.space_load, c.space_queue], addr::SEND);
    let space = Space {
        id,
        len,
        align,
        used: 0,
    };
    // The planted bug: a receive announced while another is still unused
    // is filled first.
    let jump = cx.state().out.space.front().is_some_and(|f| f.used == 0);
    if cx.state().params.inject == Some(super::state::Bug::LatestSpace) && jump {
        cx.state().out.space.push_front(space);
    } else {
        cx.state().out.space.push_back(space);
    }
    maybe_start(cx);
}

// ---------------------------------------------------------------- receiver

/// A component arrives: write its bytes into the receive buffer under the
/// directory's control; the one that fills the receive schedules cleanup.
///
/// Task by task, as the sender's Table 2 (the counts are the cost sheet's
/// `recv_*`): start and load the receive record; decode the header and
/// verify it (sender, receive, stream position); walk the receive buffer to
/// the destination line (with the page's validity check); load and test the
/// line's directory entry (and act on a cached copy); issue the memory
/// write; write a changed entry back; count the bytes, release the buffer
/// and test for completion. The handler is dispatched when the header is
/// in: its work before the write overlaps the data streaming into the
/// buffer, and the write follows the data.
fn component(cx: &mut C<'_>, m: &Msg, _msg: xfer_msg::Component) {
    let c = costs(cx);
    c.recv_init.charge(cx, addr::RECV, addr::RECV);
    c.recv_verify.charge(cx, addr::CMD, addr::RECV);
    let Some(b) = cx.take_msg_buffer() else {
        return;
    };
    store(cx, m, b);
}

/// Store the component `m` held in buffer `b` (on arrival, or once a stale
/// page's new translation is in, or a buffer to merge with is free).
fn store(cx: &mut C<'_>, m: &Msg, b: BufId) {
    let units = cx.unit_waits();
    let Ok(XferMsg::Component { id, at: ro, len: n }) = cx.decode::<XferMsg>(m) else {
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(b);
        return;
    };
    let found = cx
        .state()
        .recvs
        .iter()
        // A component holds at least a byte, within its receive.
        .position(|r| r.id == id && n > 0 && ro.checked_add(n).is_some_and(|e| e <= r.span.len));
    let Some(i) = found else {
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(b);
        return;
    };
    // The buffer walk, with the invalidation technique's check (one branch).
    let c = costs(cx);
    c.recv_walk.charge(cx, addr::RECV + 16, addr::RECV);
    let stale = {
        let st = cx.state();
        let r = &st.recvs[i];
        [ro as i64, (ro + n - 1) as i64]
            .into_iter()
            .find(|&o| !r.span.valid(&st.pages, o))
            .map(|o| VPage((r.span.va as i64 + o) as u64 / PAGE_BYTES))
    };
    if let Some(v) = stale {
        cx.state().stats.stale_uses += 1;
        cx.state().parked.push((*m, b));
        interrupt(cx, v);
        return;
    }
    let (line, at) = {
        let a = cx.state().recvs[i].span.paddr(ro as i64);
        (
            PAddr(a.0 & !(LINE_BYTES as u64 - 1)),
            a.0 as usize % LINE_BYTES,
        )
    };
    // The bytes sit in the buffer where they go in the line. A line homed
    // at a third node is its home's to write.
    if line.node() != cx.node() {
        home::deposit(cx, i, line, b, at, n);
        finish_component(cx, i, n);
        return;
    }
    let mode = cx.state().params.mode;
    let steps = c.recv_steps();
    let data = cx.buffer_ticket(b).map_or(cx.now(), |x| x.ready);
    match modes::receiver_write_with(cx, mode, line, b, at..at + n as usize, &steps) {
        Ok(t) => {
            let _ = cx.free_buffer_after(b, t);
            let held = write_held(cx, t, data, units);
            let s = cx.state();
            land(s, i, t.ready);
            s.recvs[i].held = held;
        }
        Err(modes::ModeError::Busy { .. }) => {
            // No buffer for merging a part of a line, or the processor's
            // copy is in flux: try again from the software queue, the
            // bytes in the receive's record and the buffer back in the pool.
            cx.state().stats.retries += 1;
            let bytes = to_record(cx, b);
            wait_for_buffer(cx, *m, bytes);
            return;
        }
        Err(modes::ModeError::NeedsRemote(_)) => {
            // Global coherence with copies at other nodes: this node serves
            // the line as its home does for a third node's deposit, asking
            // the owner and the sharers first.
            home::deposit_local(cx, i, line, b, at, n);
        }
        Err(_) => {
            // Outside the coherence mode's precondition: refused, counted.
            cx.state().stats.dropped += 1;
            let _ = cx.free_buffer(b);
            return;
        }
    }
    finish_component(cx, i, n);
}

/// What waits cost the end of a receive if the component whose memory
/// write `t` just went out (its data in at `data`) is its last: the
/// handler's dispatch wait, as far as it put off the write beyond the
/// data's arrival; the write's own wait behind another handler's transfer;
/// and the wait of the invalidation of a cached copy, as far as that
/// finished the receive after the write. `units` are the node's unit waits
/// before the component's store began.
fn write_held(cx: &mut C<'_>, t: magic::Ticket, data: Cycles, units: (Cycles, Cycles)) -> HeldBack {
    let (m, p) = cx.unit_waits();
    let (memory, pcache) = ((m - units.0).0, (p - units.1).0);
    let written = t.first + Cycles(magic::ids::LINE_DWORDS - 1);
    // When the write was handed over: its data in, the handler at it.
    let handed = t
        .first
        .saturating_sub(cx.params().mem_write_latency + Cycles(memory))
        .max(data);
    let after = t.ready.saturating_sub(written).0;
    HeldBack {
        pp_arbitration: cx.queued().0.min((handed - data).0),
        memory: if after == 0 { memory } else { 0 },
        pcache_if: pcache.min(after),
    }
}

/// Count a stored component's `n` bytes into receive `i`.
fn finish_component(cx: &mut C<'_>, i: usize, n: u64) {
    costs(cx).recv_update.charge(cx, addr::RECV, addr::RECV);
    let s = cx.state();
    s.stats.components_received += 1;
    s.stats.bytes_received += n;
    s.recvs[i].got += n;
    complete_if_done(cx, i);
}

/// Components that could not be stored for lack of a buffer, again.
fn retry(cx: &mut C<'_>, _m: &Msg, _msg: xfer_msg::Retry) {
    requeue(cx);
    let t = costs(cx).recv_retry;
    t.charge(cx, addr::RECV, addr::RECV);
    let waiting = std::mem::take(&mut cx.state().retry);
    for (m, bytes) in waiting {
        // Back from the receive's record into a data buffer.
        let Some(b) = cx.alloc_buffer() else {
            wait_for_buffer(cx, m, bytes);
            continue;
        };
        from_record(cx, b, bytes);
        store(cx, &m, b);
    }
}

/// Hold component `m` (its bytes in the receive's record) until the
/// software queue brings it back.
fn wait_for_buffer(cx: &mut C<'_>, m: Msg, bytes: [u8; LINE_BYTES]) {
    let s = cx.state();
    s.retry.push((m, bytes));
    if s.retry.len() == 1 {
        queue(cx, XferMsg::Retry);
    }
}

/// Ask the OS for the translation of a stale page (once until it answers).
pub(super) fn interrupt(cx: &mut C<'_>, page: VPage) {
    if cx.state().asked.contains(&page) {
        return;
    }
    cx.state().asked.push(page);
    let pid = cx.state().cpu.pid;
    to_cpu(cx, XferMsg::Interrupt { page, pid });
}

fn pages(s: &mut XferNode) -> &mut PageTable {
    &mut s.pages
}

/// The OS says a page is about to change: mark every use of its frame
/// stale (walking the page's list), then answer.
fn os_notice(cx: &mut C<'_>, _m: &Msg, xfer_msg::OsNotice { old, .. }: xfer_msg::OsNotice) {
    let (c, k) = (costs(cx), command(cx));
    cx.instr(k.os_notice);
    os_side::mark_stale(cx, pages, old, c.walk, addr::RECV + 192);
    to_cpu(cx, XferMsg::OsAnswer);
}

/// The OS's answer to an interrupt: relink the page in every operation that
/// holds it stale, and let them go on.
fn os_translation(
    cx: &mut C<'_>,
    _m: &Msg,
    xfer_msg::OsTranslation { page: v, frame, .. }: xfer_msg::OsTranslation,
) {
    let (c, k) = (costs(cx), command(cx));
    cx.instr(k.os_notice);
    cx.state().asked.retain(|x| *x != v);
    let mut relinked = 0;
    let s = cx.state();
    let spans = s
        .out
        .sends
        .iter_mut()
        .map(|x| &mut x.span)
        .chain(s.recvs.iter_mut().map(|x| &mut x.span));
    for span in spans {
        let k = v.0 as i64 - (span.va / PAGE_BYTES) as i64;
        if k < 0 || k as usize >= span.frames.len() || s.pages.valid(&span.uses[k as usize]) {
            continue;
        }
        let k = k as usize;
        let Frame(Some(frame)) = frame else {
            // Unmapped: the page stays stale and the operation cannot go on.
            continue;
        };
        s.pages.unlink(&span.uses[k]);
        span.frames[k] = frame;
        span.uses[k] = s.pages.link(frame, 0, k as u8);
        relinked += 1;
    }
    for _ in 0..relinked {
        c.link.charge_on(cx, addr::SEND);
    }
    if frame.0.is_none() {
        cx.state().stats.unmapped += 1;
        return;
    }
    // Components that waited for the page, in arrival order.
    let parked = std::mem::take(&mut cx.state().parked);
    for (pm, b) in parked {
        store(cx, &pm, b);
    }
    let o = &mut cx.state().out;
    if o.blocked && o.fetching.is_empty() {
        o.blocked = false;
        step_again(cx);
    }
}

/// A receive is complete: once its last write is in memory, unlink its
/// pages and tell the process.
fn cleanup(cx: &mut C<'_>, _m: &Msg, xfer_msg::Cleanup { id }: xfer_msg::Cleanup) {
    requeue(cx);
    let c = costs(cx);
    run_tasks(cx, &[c.cleanup_load], addr::RECV);
    let Some(i) = cx.state().recvs.iter().position(|r| r.id == id) else {
        return;
    };
    let r = cx.state().recvs.remove(i);
    // Nothing is released or told before the last bytes are in memory (and
    // any cached copy of the buffer is gone): a wait for the PP before this
    // point costs the receive's end only what it put off the cleanup past
    // that.
    let (now, units) = (cx.now(), cx.unit_waits());
    let late = cx.queued().min(now.saturating_sub(r.written)).0;
    cx.wait_until(r.written);
    for u in &r.span.uses {
        cx.instr(c.unlink);
        cx.state().pages.unlink(u);
    }
    run_tasks(cx, &[c.cleanup_update, c.cleanup_notify], addr::RECV);
    to_cpu(
        cx,
        XferMsg::RecvDone {
            bytes: r.span.len,
            pid: r.pid,
            id,
        },
    );
    // Its own transfers' waits behind other handlers' (the answer to the
    // processor crossing its interface) put off telling the process.
    let (m, p) = cx.unit_waits();
    cx.state().stats.held_ending = r.held.plus(HeldBack {
        pp_arbitration: late,
        memory: (m - units.0).0,
        pcache_if: (p - units.1).0,
    });
}

/// The home (a third node) has a deposited line in memory.
///
/// The home may be this node, for a line of its own whose other copies had
/// to be dealt with first: the notice then comes on the software queue.
fn deposited(cx: &mut C<'_>, m: &Msg, d: xfer_msg::Deposited) {
    let xfer_msg::Deposited { id, written } = d;
    if m.addr.region() == Region::Message {
        requeue(cx);
    }
    costs(cx).deposit_in.charge(cx, addr::RECV, addr::RECV);
    let now = cx.now();
    let s = cx.state();
    let Some(i) = s.recvs.iter().position(|r| r.id == id && r.deposits > 0) else {
        s.stats.dropped += 1;
        return;
    };
    // Landed when the home wrote it (a notice can claim no later time than
    // its own arrival).
    land(s, i, written.min(now));
    s.recvs[i].deposits -= 1;
    complete_if_done(cx, i);
}

// ---------------------------------------------------------------- global

/// At a line's dirty owner: hand the line to its home, keeping a clean copy
/// for a read, none for a write.
fn fetch(cx: &mut C<'_>, m: &Msg, xfer_msg::Fetch { keep }: xfer_msg::Fetch) {
    let t = costs(cx).fetch_owner;
    t.charge(cx, addr::SEND, addr::SEND);
    let home = m.src;
    let next = if keep {
        LineState::Clean
    } else {
        LineState::Uncached
    };
    let b = cx.alloc_buffer();
    let iv = match b {
        Some(b) => cx.pc_get(m.addr, Some(b), next).ok(),
        None => None,
    };
    let dirty = iv.is_some_and(|iv| iv.state == LineState::Dirty);
    let kept = keep && dirty;
    let r = cx
        .msg(XferMsg::Fetched { dirty, kept })
        .to(home)
        .addr(m.addr);
    match (b, dirty) {
        (Some(b), true) => {
            let _ = cx.send(r, Some(b));
        }
        (b, _) => {
            if let Some(b) = b {
                let _ = cx.free_buffer(b);
            }
            let _ = cx.send(r, None);
        }
    }
}

/// At the home: the owner's line is in; memory takes it and the transfer
/// handler, if it waits, goes on (or the requests the home holds for the
/// line are served).
fn fetched(cx: &mut C<'_>, m: &Msg, xfer_msg::Fetched { dirty, kept }: xfer_msg::Fetched) {
    let t = costs(cx).fetch_home;
    t.charge(cx, addr::SEND, addr::SEND);
    let line = m.addr;
    let owner = m.src;
    if dirty {
        if let Some(b) = cx.take_msg_buffer() {
            match cx.mem_write(line, b) {
                Ok(t) => {
                    let _ = cx.free_buffer_after(b, t);
                }
                Err(_) => {
                    let _ = cx.free_buffer(b);
                }
            }
        }
        let entry = if kept {
            DirEntry::shared(false, &[owner])
        } else {
            DirEntry::uncached()
        };
        coherence::protocol::dir_store(cx, line, entry);
    } else {
        // The owner no longer held it dirty (written back meanwhile): the
        // protocol's writeback has or will set the entry; drop the mark.
        let mut e = cx.state().coh.entry(line);
        e.pending = false;
        cx.state().coh.set_entry(line, e);
    }
    home::answered(cx, line);
    let o = &mut cx.state().out;
    o.fetching.retain(|l| *l != line);
    let collect = cx.state().params.strategy == Strategy::Collect;
    let o = &mut cx.state().out;
    if o.blocked && (!collect || o.fetching.is_empty()) {
        o.blocked = false;
        step_again(cx);
    }
}

/// Register the connection's handlers (the sender's is the unit's), each
/// for its messages wherever their address is.
pub(super) fn install<S: 'static>(b: &mut Install<'_, S, XferNode>) {
    let h = b.handler("cmd_op", cmd_op);
    b.route_any(h);
    let h = b.handler("cmd_page", cmd_page);
    b.route_any(h);
    let h = b.handler("cmd_commit", cmd_commit);
    b.route_any(h);
    let h = b.handler("setup", setup);
    b.route_any(h);
    let h = b.handler("space", space);
    b.route_any(h);
    // A component's handler is dispatched when its header is in (cut
    // through): it verifies and finds the line while the data streams in.
    let h = b.handler("component", component);
    b.route_any(h);
    let h = b.handler("cleanup", cleanup);
    b.route_any(h);
    let h = b.handler("retry", retry);
    b.route_any(h);
    let h = b.handler("os_notice", os_notice);
    b.route_any(h);
    let h = b.handler("os_translation", os_translation);
    b.route_any(h);
    let h = b.handler("fetch", fetch);
    b.route_any(h);
    let h = b.handler("fetched", fetched);
    b.route_any(h);
    let h = b.handler("deposited", deposited);
    b.route_any(h);
    home::install(b);
}
