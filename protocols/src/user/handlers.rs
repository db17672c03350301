//! MAGIC's handlers for user-level messaging: the command sequence (the
//! running PID, each write into the process's operation record, the
//! committing read that accepts or refuses it), the operations it starts
//! (fetch-and-add at the word's home, copies and sends a line at a time
//! through the software queue, the far end's receive), and the OS's notices
//! and answers that keep physical addresses valid (hold-off, invalidation,
//! the software TLB).

use super::cmd::{Field, Nack, OpCode, OpRecord, PageRef, RecState, FLAG_HOLDOFF, MAX_PAGES};
use super::msg::{user_msg, Tag, UserMsg};
use super::pages::PageTable;
use super::params::Bug;
use super::params::UserCosts;
use super::state::UserNode;
use crate::command::CommandCosts;
use crate::os_side::{self, Frame};
use magic::{Cx, Install, Msg, PAddr, Region, LINE_BYTES};
use os_shim::{Pid, VPage, PAGE_BYTES};

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

fn command(cx: &mut C<'_>) -> CommandCosts {
    cx.state().params.command
}

fn to_cpu(cx: &mut C<'_>, m: UserMsg) {
    let m = cx.msg(m);
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
    to_cpu(cx, UserMsg::Nack { reason, pid });
}

fn unlink_all(cx: &mut C<'_>, r: &OpRecord) {
    for p in &r.src {
        if let Some(u) = &p.link {
            cx.state().magic.pages.unlink(u);
        }
    }
}

/// The OS tells MAGIC which process runs.
fn set_pid(cx: &mut C<'_>, _m: &Msg, user_msg::SetPid { pid }: user_msg::SetPid) {
    let c = costs(cx);
    cx.instr(c.set_pid);
    cx.state().magic.current = Some(pid);
}

/// One uncached write of a sequence: into the running process's record.
fn cmd_write(cx: &mut C<'_>, m: &Msg, user_msg::Write { data }: user_msg::Write) {
    let c = command(cx);
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
    rec.write(m.addr, data, mem);
    cx.store(rec_addr(slot));
}

/// The committing read: check the sequence, accept or refuse it.
fn cmd_commit(cx: &mut C<'_>, _m: &Msg, _msg: user_msg::Commit) {
    let c = command(cx);
    cx.instr(c.commit);
    let Some(pid) = cx.state().magic.current else {
        to_cpu(
            cx,
            UserMsg::Nack {
                reason: Nack::NoRecord,
                pid: Pid(0),
            },
        );
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
    let Some(rec) = cx.state().magic.records[slot].clone() else {
        return;
    };
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
                    // Whole pages from a page boundary, named by `Vaddr`
                    // alone: MAGIC translates them, so a source page the
                    // process named by a shadow write (on any node) is no
                    // part of it.
                    rec.fields[Field::Vaddr as usize].is_some_and(|v| v % PAGE_BYTES == 0)
                        && len <= cap(MAX_PAGES)
                        && rec.src.is_empty()
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
        if let Some(r) = magic.records[slot].as_mut() {
            r.state = RecState::Running;
            r.peer = peer;
            r.accepted_at = now;
        }
        if holdoff {
            magic.holdoff += 1;
        }
        magic.stats.acks += 1;
    }
    cx.store(rec_addr(slot));
    to_cpu(cx, UserMsg::Ack { pid });
    match op {
        OpCode::FetchAdd => {
            let Some(target) = rec.target else { return };
            let req = UserMsg::FetchAdd {
                amount: rec.arg().unwrap_or(0),
                tag: Tag {
                    pid,
                    slot,
                    last: false,
                },
            };
            let req = cx.msg(req).to(target.node()).addr(target);
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

/// Link source page `k` of a record into the in-use page table (charged:
/// the hand-coded link).
fn link_page(cx: &mut C<'_>, slot: usize, k: usize) {
    let c = costs(cx);
    // The in-use table's entry beside the operation's record.
    c.link.charge_on(cx, rec_addr(slot));
    let magic = &mut cx.state().magic;
    let Some(src) = magic.records[slot].as_mut().and_then(|r| r.src.get_mut(k)) else {
        return;
    };
    src.link = Some(magic.pages.link(src.page, slot as u16, k as u8));
}

fn step_later(cx: &mut C<'_>, slot: usize) {
    let me = cx.node();
    let m = cx
        .msg(UserMsg::Step { slot })
        .addr(PAddr::new(Region::Message, me, 0));
    let _ = cx.reschedule(m);
}

/// Translate a `SendVirt` record's source pages through the software TLB;
/// a miss interrupts the processor and waits for its answer.
fn translate_pages(cx: &mut C<'_>, slot: usize) {
    let c = costs(cx);
    let Some((pid, base, len, have)) = cx.state().magic.records[slot].as_ref().map(|r| {
        (
            r.pid,
            r.fields[Field::Vaddr as usize].unwrap_or(0),
            r.arg().unwrap_or(0),
            r.src.len(),
        )
    }) else {
        return;
    };
    let first = VPage::of(base);
    let pages = os_side::pages_spanned(base, len) as usize;
    for k in have..pages.min(MAX_PAGES) {
        let v = VPage(first.0 + k as u64);
        cx.instr(c.tlb_lookup);
        let at = cx.state().magic.tlb.set_addr(pid, v);
        cx.load(at);
        match cx.state().magic.tlb.lookup(pid, v) {
            Some(frame) => {
                if let Some(r) = cx.state().magic.records[slot].as_mut() {
                    let _ = r.src.try_push(PageRef {
                        page: frame,
                        vaddr: v.0 * PAGE_BYTES,
                        link: None,
                    });
                }
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
fn interrupt(cx: &mut C<'_>, slot: usize, pid: Pid, page: VPage) {
    let magic = &mut cx.state().magic;
    magic.stats.interrupts += 1;
    if let Some(r) = magic.records[slot].as_mut() {
        r.state = RecState::WaitTranslation;
    }
    to_cpu(cx, UserMsg::Interrupt { page, pid });
}

/// One line of a copy or send.
fn op_step(cx: &mut C<'_>, _m: &Msg, user_msg::Step { slot }: user_msg::Step) {
    let c = costs(cx);
    cx.instr(c.line);
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
    let (Some(src), Some(&dst_page), Some(op)) = (rec.src.get(page), rec.dst.get(page), rec.op())
    else {
        return;
    };
    // The check on every use of a page linked in the in-use table (the
    // invalidation technique's, and the software TLB's translations): one
    // branch. A memory copy under hold-off links none, and checks none.
    let c = costs(cx);
    if src.link.is_some() {
        cx.instr(c.valid_check);
    }
    if src
        .link
        .as_ref()
        .is_some_and(|u| !cx.state().magic.pages.valid(u))
    {
        cx.state().magic.stats.stale_uses += 1;
        return interrupt(cx, slot, rec.pid, VPage::of(src.vaddr));
    }
    let Some(b) = cx.alloc_buffer() else {
        return step_later(cx, slot);
    };
    let _ = cx.mem_read(PAddr(src.page.0 + in_page), b);
    let dst = PAddr(dst_page.0 + in_page);
    let last = k + 1 == lines;
    let line = UserMsg::Line {
        tag: Tag {
            pid: rec.pid,
            slot,
            last,
        },
        to: rec.peer.map_or(Pid(0), |p| p.1),
        op,
    };
    let d = cx.msg(line).to(dst.node()).addr(dst);
    let _ = cx.send(d, Some(b));
    if let Some(r) = cx.state().magic.records[slot].as_mut() {
        r.sent += 1;
    }
    cx.store(rec_addr(slot));
    if !last {
        step_later(cx, slot);
    }
}

/// A line arrives at the destination.
fn line_receive(cx: &mut C<'_>, m: &Msg, user_msg::Line { tag, to, op }: user_msg::Line) {
    let c = costs(cx);
    cx.instr(c.receive);
    let Some(b) = cx.take_msg_buffer() else {
        return;
    };
    let me = cx.node();
    let is_send = matches!(op, OpCode::SendPhys | OpCode::SendVirt);
    let page = PAddr(m.addr.0 & !(PAGE_BYTES - 1));
    let ok = if m.addr.node() != me || m.addr.offset() >= cx.params().mem_bytes {
        cx.state().magic.stats.dropped_bad += 1;
        false
    } else if is_send {
        // Deliver only to the connection's process: the receiver must count
        // the sender among its peers and own the page, writably.
        cx.load(GROUP_BASE + to.0 as u64 * 64);
        let os = &cx.state().os;
        if os.in_group(to, (m.src, tag.pid)) && os.maps(to, page, true) {
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
    let key = (m.src.0, Tag { last: false, ..tag });
    if !ok {
        cx.state().magic.failed.insert(key);
    }
    if tag.last {
        if let Some(t) = t {
            cx.wait(t);
        }
        // Tell the sender how it went, so its record is never left behind.
        let failed = cx.state().magic.failed.remove(&key);
        let done = cx
            .msg(UserMsg::LineDone { tag, failed })
            .to(m.src)
            .addr(m.addr);
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
            to_cpu(cx, UserMsg::OsAnswer);
        }
    }
    to_cpu(
        cx,
        UserMsg::Done {
            pid: rec.pid,
            value,
            ok,
        },
    );
}

/// The destination has the operation's last line.
fn op_done(cx: &mut C<'_>, _m: &Msg, user_msg::LineDone { tag, failed }: user_msg::LineDone) {
    let c = costs(cx);
    cx.instr(c.receive);
    finish(cx, tag.slot, 0, !failed);
}

/// Fetch-and-add at the memory that holds the word.
fn fetch_op(cx: &mut C<'_>, m: &Msg, user_msg::FetchAdd { amount, tag }: user_msg::FetchAdd) {
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
    let mut old = 0;
    if let Some(bytes) = cx.buffer_mut(b) {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[o..o + 8]);
        old = u64::from_le_bytes(word);
        bytes[o..o + 8].copy_from_slice(&old.wrapping_add(amount).to_le_bytes());
    }
    let c = costs(cx);
    cx.instr(c.fop_apply);
    let _ = cx.mem_write(m.addr, b);
    let _ = cx.free_buffer(b);
    let r = cx
        .msg(UserMsg::FetchAddReply { old, tag })
        .to(m.src)
        .addr(m.addr);
    let _ = cx.send(r, None);
}

/// The old value is back at the requester.
fn fetch_op_reply(
    cx: &mut C<'_>,
    _m: &Msg,
    user_msg::FetchAddReply { old, tag }: user_msg::FetchAddReply,
) {
    let c = costs(cx);
    cx.instr(c.receive);
    finish(cx, tag.slot, old, true);
}

fn pages(s: &mut UserNode) -> &mut PageTable {
    &mut s.magic.pages
}

/// The OS is about to change a translation.
fn os_notice(cx: &mut C<'_>, _m: &Msg, user_msg::OsNotice { page, pid, old }: user_msg::OsNotice) {
    let (c, k) = (costs(cx), command(cx));
    cx.instr(k.os_notice);
    let at = cx.state().magic.tlb.set_addr(pid, page);
    cx.store(at);
    let bug = cx.state().params.inject;
    if bug != Some(Bug::KeepTlbEntry) {
        cx.state().magic.tlb.invalidate(pid, page);
    }
    if bug != Some(Bug::KeepStale) {
        os_side::mark_stale(cx, pages, old, c.walk, rec_addr(0) + 192);
    }
    let magic = &mut cx.state().magic;
    if magic.holdoff == 0 || bug == Some(Bug::EarlyAnswer) {
        to_cpu(cx, UserMsg::OsAnswer);
    } else {
        // Answer when the hold-off operations have drained; refuse new ones.
        magic.draining = true;
    }
}

/// The OS answers MAGIC's interrupt with a translation.
fn os_translation(cx: &mut C<'_>, _m: &Msg, msg: user_msg::OsTranslation) {
    let user_msg::OsTranslation {
        page: v,
        pid,
        frame,
    } = msg;
    let (c, k) = (costs(cx), command(cx));
    cx.instr(k.os_notice);
    let Some(slot) = cx.state().magic.records.iter().position(|r| {
        r.as_ref()
            .is_some_and(|r| r.pid == pid && r.state == RecState::WaitTranslation)
    }) else {
        return;
    };
    let Frame(Some(frame)) = frame else {
        // Unmapped: the operation cannot go on.
        finish(cx, slot, 0, false);
        return;
    };
    let virt = cx.state().magic.records[slot]
        .as_ref()
        .is_some_and(|r| r.op() == Some(OpCode::SendVirt));
    if virt {
        let at = cx.state().magic.tlb.set_addr(pid, v);
        cx.store(at);
        cx.state().magic.tlb.insert(pid, v, frame);
    }
    // Replace the stale page (if any) with the new translation.
    let magic = &cx.state().magic;
    let stale = magic.records[slot].as_ref().and_then(|r| {
        r.src.iter().position(|p| {
            VPage::of(p.vaddr) == v && p.link.as_ref().is_some_and(|u| !magic.pages.valid(u))
        })
    });
    if let Some(k) = stale {
        let old = cx.state().magic.records[slot]
            .as_mut()
            .and_then(|r| r.src[k].link.take());
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
        if let Some(r) = cx.state().magic.records[slot].as_mut() {
            r.src[k].page = frame;
        }
        link_page(cx, slot, k);
    }
    if let Some(r) = cx.state().magic.records[slot].as_mut() {
        r.state = RecState::Running;
    }
    if virt && stale.is_none() {
        translate_pages(cx, slot);
    } else {
        step_later(cx, slot);
    }
}

/// Register the handlers and their routes: the processor's messages and the
/// software queue's in the message space, the network's in normal memory.
pub(super) fn install<S: 'static>(b: &mut Install<'_, S, UserNode>) {
    let msg = Region::Message;
    let h = b.handler("set_pid", set_pid);
    b.route(msg, h);
    let h = b.handler("cmd_write", cmd_write);
    b.route(msg, h);
    let h = b.handler("cmd_commit", cmd_commit);
    b.route(msg, h);
    let h = b.handler("os_notice", os_notice);
    b.route(msg, h);
    let h = b.handler("os_translation", os_translation);
    b.route(msg, h);
    let h = b.handler("op_step", op_step);
    b.route(msg, h);
    let h = b.handler("line_receive", line_receive);
    b.route(Region::Normal, h);
    let h = b.handler("op_done", op_done);
    b.route(Region::Normal, h);
    let h = b.handler("fetch_op", fetch_op);
    b.route(Region::Normal, h);
    let h = b.handler("fetch_op_reply", fetch_op_reply);
    b.route(Region::Normal, h);
}
