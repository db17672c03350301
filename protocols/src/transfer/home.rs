//! Buffers homed at a third node: the transferring nodes go through the
//! lines' home.
//!
//! A MAGIC reads and writes only its own node's memory. So the sender's
//! transfer handler asks a send line's home for it (`Pull`), a window of
//! lines ahead of the stream, and sends each line on as a component once
//! it is in (`Pulled`). The receiver's component handler sends the
//! component's buffer on to its line's home (`Deposit`), and a receive is
//! complete once the home has acknowledged every line (`Deposited`).
//!
//! The home serves each request under the transfer's coherence mode with
//! the per-line plans a transferring node follows for its own lines
//! ([`coherence::modes`]), handling its own processor's cache itself:
//! - `none` reads or writes memory as it is;
//! - `global` first fetches a line dirty in another node's cache (`Fetch`:
//!   the owner keeps a clean copy for a read, none for a write) and, for a
//!   write, has every other node's clean copy dropped (`Drop`). Meanwhile
//!   the entry is pending and later requests for the line wait behind it.
//!
//! `local` keeps only the transferring nodes' directories, so it cannot
//! serve this placement; the experiment refuses the combination up front.

use super::msg::{xfer_msg, XferMsg};
use super::state::{
    addr, costs, from_record, queue, requeue, to_record, HomeLine, HomeReq, XferNode, C,
};

use coherence::modes::{self, Action, ModeError};
use magic::{BufId, Install, LineState, Msg, PAddr, LINE_BYTES};

// -------------------------------------------------------------- receiver

/// At the receiver: send component bytes `at..at + n` of `line` (in buffer
/// `b`) on to the line's home for receive `i`.
pub(super) fn deposit(cx: &mut C<'_>, i: usize, line: PAddr, b: BufId, at: usize, n: u64) {
    costs(cx).deposit_issue.charge(cx, addr::RECV, addr::RECV);
    let id = cx.state().recvs[i].id;
    let m = cx
        .msg(XferMsg::Deposit {
            id,
            at: at as u64,
            len: n,
        })
        .to(line.node())
        .addr(line)
        .len(n as u16);
    if cx.send(m, Some(b)).is_err() {
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(b);
        return;
    }
    let s = cx.state();
    s.stats.deposits += 1;
    s.recvs[i].deposits += 1;
}

/// At the receiver, for a line homed here whose plan needs other nodes
/// (global coherence, a remote owner or sharers): serve bytes `at..at + n`
/// (in buffer `b`) for receive `i` as a home serves a deposit, completing
/// it here once the line is written.
pub(super) fn deposit_local(cx: &mut C<'_>, i: usize, line: PAddr, b: BufId, at: usize, n: u64) {
    let me = cx.node();
    let s = cx.state();
    let id = s.recvs[i].id;
    s.stats.deposits += 1;
    s.recvs[i].deposits += 1;
    let req = HomeReq::Deposit {
        from: me,
        id,
        bytes: [0; LINE_BYTES],
        at: at as u8,
        len: n as u8,
    };
    serve(cx, line, req, Some(b));
}

// ------------------------------------------------------------------ home

/// At the home: a sender asks for a line.
fn pull_here(cx: &mut C<'_>, m: &Msg, _msg: xfer_msg::Pull) {
    costs(cx).home_decode.charge(cx, addr::RECV, addr::RECV);
    serve(cx, m.addr, HomeReq::Pull { to: m.src }, None);
}

/// At the home: a receiver sends bytes of a line.
fn deposit_here(cx: &mut C<'_>, m: &Msg, xfer_msg::Deposit { id, at, len }: xfer_msg::Deposit) {
    costs(cx).home_decode.charge(cx, addr::RECV, addr::RECV);
    let Some(buf) = cx.take_msg_buffer() else {
        cx.state().stats.dropped += 1;
        return;
    };
    let line = LINE_BYTES as u64;
    if len == 0 || at >= line || len > line - at {
        // Not a part of one line: refused, counted.
        cx.state().stats.dropped += 1;
        let _ = cx.free_buffer(buf);
        return;
    }
    let req = HomeReq::Deposit {
        from: m.src,
        id,
        bytes: [0; LINE_BYTES],
        at: at as u8,
        len: len as u8,
    };
    serve(cx, m.addr, req, Some(buf));
}

/// Serve `req` for `line` now (a deposit's bytes in `buf` when it has just
/// arrived), or after the answers the line waits for.
fn serve(cx: &mut C<'_>, line: PAddr, req: HomeReq, buf: Option<BufId>) {
    if line.node() != cx.node() {
        // Not a line of this node's memory: refused, counted.
        refuse(cx, buf);
        return;
    }
    let c = costs(cx);
    if cx.state().home.iter().any(|h| h.line == line) {
        let req = match buf {
            Some(b) => shelve(cx, req, b),
            None => req,
        };
        if let Some(h) = cx.state().home.iter_mut().find(|h| h.line == line) {
            h.waiting.push(req);
        }
        return;
    }
    let Some(b) = buf.or_else(|| cx.alloc_buffer()) else {
        park(cx, line, req);
        return;
    };
    let mode = cx.state().params.mode;
    let failed = match req {
        HomeReq::Pull { to } => match modes::sender_read(cx, mode, line, b) {
            Ok(_) => {
                c.send_component.charge(cx, addr::SEND, addr::SEND);
                let m = cx.msg(XferMsg::Pulled).to(to).addr(line);
                if cx.send(m, Some(b)).is_err() {
                    cx.state().stats.dropped += 1;
                    let _ = cx.free_buffer(b);
                }
                return;
            }
            Err(e) => e,
        },
        HomeReq::Deposit {
            from,
            id,
            bytes,
            at,
            len,
        } => {
            if buf.is_none() {
                // Back from the line's record into a data buffer.
                from_record(cx, b, bytes);
            }
            let range = at as usize..at as usize + len as usize;
            let steps = c.recv_steps();
            match modes::receiver_write_with(cx, mode, line, b, range, &steps) {
                Ok(t) => {
                    let _ = cx.free_buffer_after(b, t);
                    if from == cx.node() {
                        // This node's own receive: its bytes land when the
                        // write is done (not when the continuation below
                        // counts them in: after a wait, a burst of those
                        // runs faster than any line can be written). The
                        // notice carries the same time; stamped here, as it
                        // is written, the first landing is the first written.
                        super::state::landed(cx, id, t.ready);
                        // No network message to itself, a continuation on
                        // its software queue.
                        let written = t.ready;
                        queue(cx, XferMsg::Deposited { id, written });
                        return;
                    }
                    c.send_component.charge(cx, addr::SEND, addr::SEND);
                    // The bytes land when the write is done, not when the
                    // notice reaches the receiver (notices that queue there
                    // run closer together than lines can be written).
                    let written = t.ready;
                    let m = cx
                        .msg(XferMsg::Deposited { id, written })
                        .to(from)
                        .addr(line);
                    let _ = cx.send(m, None);
                    return;
                }
                Err(e) => e,
            }
        }
    };
    if matches!(failed, ModeError::OutsideLocal { .. }) {
        refuse(cx, Some(b));
        return;
    }
    let req = shelve(cx, req, b);
    match failed {
        ModeError::NeedsRemote(plan) => ask_others(cx, line, req, &plan),
        _ => park(cx, line, req),
    }
}

/// A request about to wait gives its buffer `b` back to the pool: a
/// deposit's bytes go to the line's record in MAGIC's memory first.
fn shelve(cx: &mut C<'_>, mut req: HomeReq, b: BufId) -> HomeReq {
    match &mut req {
        HomeReq::Deposit { bytes, .. } => *bytes = to_record(cx, b),
        HomeReq::Pull { .. } => {
            let _ = cx.free_buffer(b);
        }
    }
    req
}

/// A request the home cannot serve: counted, its buffer freed.
fn refuse(cx: &mut C<'_>, buf: Option<BufId>) {
    cx.state().stats.dropped += 1;
    if let Some(b) = buf {
        let _ = cx.free_buffer(b);
    }
}

/// Carry out the parts of `plan` that need other nodes, and hold `req`
/// (and the line's later requests) until every answer is in.
fn ask_others(cx: &mut C<'_>, line: PAddr, req: HomeReq, plan: &modes::Plan) {
    let t = costs(cx).fetch_issue;
    let mut due = 0;
    for a in plan {
        match a {
            Action::FetchRemote { owner } => {
                t.charge(cx, addr::SEND, addr::SEND);
                let keep = matches!(req, HomeReq::Pull { .. });
                let m = cx.msg(XferMsg::Fetch { keep }).to(*owner).addr(line);
                if cx.send(m, None).is_ok() {
                    cx.state().stats.fetches += 1;
                    due += 1;
                }
            }
            Action::InvalidateRemote(targets) => {
                for &n in targets {
                    t.charge(cx, addr::SEND, addr::SEND);
                    let m = cx.msg(XferMsg::Drop).to(n).addr(line);
                    if cx.send(m, None).is_ok() {
                        due += 1;
                    }
                }
            }
            _ => {}
        }
    }
    if due == 0 {
        // Nobody to ask (a plan the home cannot carry out): refused.
        refuse(cx, None);
        return;
    }
    let mut e = cx.state().coh.entry(line);
    e.pending = true;
    cx.state().coh.set_entry(line, e);
    cx.state().home.push(HomeLine {
        line,
        due,
        waiting: smallvec::smallvec![req],
    });
}

/// One answer for `line` is in (a fetch's or a drop's): once the last is,
/// the entry is no longer pending and the waiting requests are served.
pub(super) fn answered(cx: &mut C<'_>, line: PAddr) {
    let home = &mut cx.state().home;
    let Some(i) = home.iter().position(|h| h.line == line) else {
        return;
    };
    home[i].due = home[i].due.saturating_sub(1);
    if home[i].due > 0 {
        return;
    }
    let h = home.remove(i);
    let mut e = cx.state().coh.entry(line);
    e.pending = false;
    cx.state().coh.set_entry(line, e);
    for req in h.waiting {
        serve(cx, line, req, None);
    }
}

/// At a node caching a receive line clean: drop the copy for its home.
fn drop_copy(cx: &mut C<'_>, m: &Msg, _msg: xfer_msg::Drop) {
    costs(cx).drop_sharer.charge(cx, addr::SEND, addr::SEND);
    if let Ok(iv) = cx.pc_get(m.addr, None, LineState::Uncached) {
        // The copy is gone once the cache has done it.
        cx.wait_until(iv.done);
    }
    cx.state().coh.stats.message_invalidations += 1;
    let r = cx.msg(XferMsg::Dropped).to(m.src).addr(m.addr);
    let _ = cx.send(r, None);
}

/// At the home: a sharer dropped its copy.
fn dropped(cx: &mut C<'_>, m: &Msg, _msg: xfer_msg::Dropped) {
    costs(cx).drop_ack.charge(cx, addr::RECV, addr::RECV);
    let line = m.addr;
    let mut e = cx.state().coh.entry(line);
    if !e.dirty {
        e.drop_sharer(m.src);
    }
    cx.state().coh.set_entry(line, e);
    answered(cx, line);
}

/// Wait for a data buffer (the software queue brings the request back).
fn park(cx: &mut C<'_>, line: PAddr, req: HomeReq) {
    let s = cx.state();
    s.stats.retries += 1;
    s.home_retry.push((line, req));
    if s.home_retry.len() == 1 {
        queue(cx, XferMsg::HomeRetry);
    }
}

/// Requests that waited for a buffer, again.
fn home_retry(cx: &mut C<'_>, _m: &Msg, _msg: xfer_msg::HomeRetry) {
    requeue(cx);
    costs(cx).recv_retry.charge(cx, addr::RECV, addr::RECV);
    let waiting = std::mem::take(&mut cx.state().home_retry);
    for (line, req) in waiting {
        serve(cx, line, req, None);
    }
}

/// Register the third-node handlers.
pub(super) fn install<S: 'static>(b: &mut Install<'_, S, XferNode>) {
    let h = b.handler("pull", pull_here);
    b.route_any(h);
    let h = b.handler("deposit", deposit_here);
    b.route_any(h);
    let h = b.handler("drop", drop_copy);
    b.route_any(h);
    let h = b.handler("dropped", dropped);
    b.route_any(h);
    let h = b.handler("home_retry", home_retry);
    b.route_any(h);
}
