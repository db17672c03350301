//! The handler context: the only way a handler touches the machine.
//!
//! Every method both performs its step and charges it to the handler's own
//! clock (`now`), so the occupancy the ledger reports is what the handler did.
//! A handler runs to completion at dispatch; units it uses (memory, processor
//! cache, outbox, data buffers) are timelines that answer, at the handler's
//! current cycle, when their part will be done. Waiting for one is explicit
//! (`wait`), so work done between issuing and waiting overlaps with it.

use crate::engine::Engine;
use crate::ids::{BufId, HandlerId, Lane, Msg, MsgType, NodeId, PAddr, LINE_BYTES};
use crate::message::{DecodeError, IntoMessage, Message, Registry};
use crate::node::{Arrival, Cause, Ev, First, NodeHw, Packets, Queued, Route};
use crate::params::{InQueue, MagicParams};
use crate::pcache::{Intervention, LineState};
use crate::time::{Cycles, Time, LAST_CYCLE};

/// When a memory or processor-cache transfer into or out of a data buffer is
/// done: `first` doubleword and the whole line (`ready`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// When the first doubleword is in the buffer (system cycles of 10 ns).
    pub first: Cycles,
    /// When the whole line is in the buffer (system cycles of 10 ns).
    pub ready: Cycles,
}

pub use crate::error::Refused;

/// Where a handler's clock stops once a step would take it past
/// [`LAST_CYCLE`]: one cycle past the end. The step is recorded
/// ([`PastEnd`]) and the run halts when the handler returns, so this clock
/// never becomes a result; it only keeps the rest of the handler's
/// arithmetic far from overflowing.
const PAST_END: Cycles = Cycles(LAST_CYCLE.0 + 1);

/// The first cycle past the largest budget a run may have
/// ([`crate::params::MAX_BUDGET`]): a handler's clock that would pass it
/// stops there (see `Cx::clock_to`).
const BEYOND_BUDGETS: Cycles = Cycles(crate::params::MAX_BUDGET.0 + 1);

/// The first step of a handler that would take its clock past
/// [`LAST_CYCLE`]: the step and the cycle it asked for (exact, so wider
/// than a cycle count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PastEnd {
    pub step: &'static str,
    pub to: u128,
}

/// The handler context: what a running handler sees of its node (its
/// protocol's state `S`, the node's units, the network) and its own clock.
/// Each method performs one step and charges it to the handler.
pub struct Cx<'a, S> {
    /// The handler's own clock and tallies: apart from the references, so
    /// a protocol's view of the context is a few pointers to hand over.
    pub(crate) run: &'a mut Run,
    pub(crate) hw: &'a mut NodeHw,
    pub(crate) state: &'a mut S,
    pub(crate) engine: &'a mut Engine<Ev>,
    pub(crate) packets: &'a mut Packets,
    pub(crate) table: &'a [[Option<Route>; 4]],
    pub(crate) reg: &'a Registry,
    pub(crate) params: &'a MagicParams,
}

/// What a handler's steps charged, added to its ledger row when it ends:
/// only the counters a step adds to, so a dispatch starts fewer of them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    pub outbox_stall: u64,
    pub wait: u64,
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
}

/// A handler invocation's own figures: its clock, what it holds, what it
/// charged.
pub(crate) struct Run {
    pub node: NodeId,
    /// The handler running.
    pub handler: HandlerId,
    pub nodes: u32,
    pub start: Cycles,
    /// How long the message waited in its input queue once through the
    /// inbox stage.
    pub queued: Cycles,
    pub now: Cycles,
    /// The data buffer the message arrived in, until the handler sends or frees it.
    pub msg_buf: Option<BufId>,
    pub spec: Option<(BufId, Ticket)>,
    pub tally: Tally,
    /// The wire interval of the last packet this handler sent to the network.
    pub last_wire: Option<(Cycles, Cycles)>,
    /// The first step that would have taken the clock past the end of time.
    pub past_end: Option<PastEnd>,
}

impl Run {
    /// Who the node's units book for: the running handler.
    #[inline]
    fn by(&self) -> u32 {
        self.handler.0 as u32
    }

    /// The record of a drop in the running handler's step `step`.
    pub(crate) fn first(&self, step: &'static str, msg: Option<MsgType>, detail: u64) -> First {
        First {
            handler: Some(self.handler),
            step,
            msg,
            detail,
            at: self.now,
            why: None,
        }
    }
}

impl<'a, S> Cx<'a, S> {
    /// The record of a drop in this handler's step `step`.
    fn first(&self, step: &'static str, msg: Option<MsgType>, detail: u64) -> First {
        self.run.first(step, msg, detail)
    }

    /// Refuse step `step` for `why`: counted as a drop, named in the run's
    /// report if it is the node's first of its cause, and shown as a
    /// refused step to the test bench. What the step carried and named is
    /// `msg` and `detail` (as [`crate::watch::Step::detail`] describes).
    #[cold]
    fn refuse(
        &mut self,
        why: Refused,
        step: &'static str,
        msg: Option<MsgType>,
        detail: u64,
    ) -> Refused {
        let first = First {
            why: Some(why),
            ..self.first(step, msg, detail)
        };
        self.hw.lose(Cause::of(why), first);
        if let Some(r) = self.hw.watch.as_mut() {
            let at = self.run.now - self.run.start;
            r.steps.push(crate::watch::Step {
                start: at,
                end: at,
                what: step,
                detail,
                refused: Some(why),
            });
        }
        why
    }

    /// Record a step when the node is being watched (the test bench), and
    /// whether it took the clock past the end of time.
    #[inline]
    fn step(&mut self, what: &'static str, from: Cycles, detail: u64) {
        if self.run.now > LAST_CYCLE {
            self.past_end(what, self.run.now.0 as u128);
        }
        if let Some(r) = self.hw.watch.as_mut() {
            r.steps.push(crate::watch::Step {
                start: from - self.run.start,
                end: self.run.now - self.run.start,
                what,
                detail,
                refused: None,
            });
        }
    }

    /// Step `step` would take the clock to cycle `to`, past
    /// [`LAST_CYCLE`]: the first such step is recorded, and the run halts
    /// when the handler returns.
    #[cold]
    fn past_end(&mut self, step: &'static str, to: u128) {
        self.run.past_end.get_or_insert(PastEnd { step, to });
    }

    /// The handler's clock moved to cycle `to` by step `step`: exactly up
    /// to [`BEYOND_BUDGETS`]; past [`LAST_CYCLE`], recorded (the run halts
    /// when the handler returns) and stopped at [`PAST_END`]; between the
    /// two, stopped at [`BEYOND_BUDGETS`], which no run's budget reaches
    /// (the run halts at its budget before it gets there). So a handler
    /// books at most that many cycles, and a ledger's sums over thousands
    /// of nodes fit their counters.
    fn clock_to(&mut self, step: &'static str, to: u128) -> Cycles {
        if to > BEYOND_BUDGETS.0 as u128 {
            return self.past_budgets(step, to);
        }
        Cycles(to as u64)
    }

    #[cold]
    fn past_budgets(&mut self, step: &'static str, to: u128) -> Cycles {
        if to > LAST_CYCLE.0 as u128 {
            self.past_end(step, to);
            return PAST_END.max(self.run.now);
        }
        BEYOND_BUDGETS.max(self.run.now)
    }

    /// Record a message the handler sent when the node is being watched.
    #[inline]
    fn sent(&mut self, to: crate::watch::Dest, msg: &Msg, data: bool) {
        if let Some(r) = self.hw.watch.as_mut() {
            r.sent.push(crate::watch::Sent {
                at: self.run.now - self.run.start,
                to,
                msg: *msg,
                data,
                name: String::new(),
            });
        }
    }

    /// `m` as a message from this node to itself (a reschedule, a message
    /// to the processor); [`Msg::to`] sends it elsewhere.
    #[inline]
    pub fn msg<M: IntoMessage>(&self, m: M) -> Msg {
        self.reg
            .encode(self.run.node, self.run.node, &m.into_message())
    }

    /// `msg` decoded as an `M`: for a message a handler kept (a parked
    /// component); the one it was dispatched for arrives decoded.
    pub fn decode<M: Message>(&self, msg: &Msg) -> Result<M, DecodeError> {
        self.reg.decode(msg)
    }

    /// Record a unit's busy interval when the run is traced.
    fn mark(&mut self, track: crate::trace::Track, name: &'static str, start: Cycles, end: Cycles) {
        self.mark_msg(track, name, start, end, None);
    }

    fn mark_msg(
        &mut self,
        track: crate::trace::Track,
        name: &'static str,
        start: Cycles,
        end: Cycles,
        msg: Option<crate::ids::MsgType>,
    ) {
        if let Some(t) = self.hw.trace.as_mut() {
            t.push(crate::trace::Slice {
                node: self.run.node.0,
                track,
                protocol: "",
                name,
                start,
                end: end.max(start + Cycles(1)),
                msg,
            });
        }
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.run.node
    }

    /// Nodes in the machine.
    pub fn nodes(&self) -> u32 {
        self.run.nodes
    }

    /// The handler's current cycle.
    pub fn now(&self) -> Cycles {
        self.run.now
    }

    /// Cycles since the handler started.
    pub fn elapsed(&self) -> Cycles {
        self.run.now - self.run.start
    }

    /// How long the message this handler runs for waited in its input
    /// queue once through the inbox stage: the PP's arbitration (it was
    /// running other handlers, the inbox served a queue of higher priority
    /// first, or no data buffer was free for the message's data). The
    /// ledger's inbox `waiting` is this summed over the messages
    /// dispatched.
    pub fn queued(&self) -> Cycles {
        self.run.queued
    }

    /// Cycles this node's memory and processor-cache interface have made
    /// transfers wait while another handler's transfer held them, as
    /// `(memory, processor-cache interface)`, since the ledger's counters
    /// started (the units' `waiting`). Read before and after a step, the
    /// difference is what that step waited behind other handlers' work (a
    /// handler's transfers queuing behind its own are its own pace, not
    /// counted).
    pub fn unit_waits(&self) -> (Cycles, Cycles) {
        (self.hw.mem.waited, self.hw.pcache.waited)
    }

    /// The machine's parameters.
    pub fn params(&self) -> &MagicParams {
        self.params
    }

    /// The protocol's state for this node (held in MAGIC memory; charge accesses
    /// to it with [`Cx::load`] and [`Cx::store`]).
    pub fn state(&mut self) -> &mut S {
        self.state
    }

    /// Issue `n` instructions; the PP issues `pp_issue_width` per cycle.
    pub fn instr(&mut self, n: u32) {
        let w = self.params.pp_issue_width;
        self.bundles(n.div_ceil(w), n);
    }

    /// Issue a hand-scheduled sequence: `cycles` bundles holding `instrs`
    /// instructions. A bundle holds at most `pp_issue_width` instructions:
    /// more than `pp_issue_width × cycles` is a sequence the PP could not
    /// issue, so the step is refused ([`Refused::Overissue`]): nothing is
    /// charged, and the refusal is counted ([`crate::Drops::over_issue`])
    /// and named in the run's report, which makes the run not clean.
    ///
    /// ```
    /// # use magic::{messages, Cx, Cycles, Install, Magic, MagicParams, Msg, NodeId, Protocol};
    /// # messages! {
    /// #     /// Go.
    /// #     pub enum GoMsg: GoKind {
    /// #         /// Go.
    /// #         Go,
    /// #     }
    /// # }
    /// fn go(cx: &mut Cx<'_, ()>, _: &Msg, _: go_msg::Go) {
    ///     cx.bundles(3, 6); // three full bundles on a 2-issue PP
    ///     cx.bundles(1, 1000); // no PP issues 1000 instructions in a cycle: refused
    /// }
    /// # struct P;
    /// # impl Protocol for P {
    /// #     type Node = ();
    /// #     fn name(&self) -> &'static str { "p" }
    /// #     fn node(&self, _: NodeId, _: u32) {}
    /// #     fn install<S: 'static>(&self, b: &mut Install<'_, S, ()>) {
    /// #         let h = b.handler("go", go);
    /// #         b.route_any(h);
    /// #     }
    /// # }
    /// let mut m = Magic::with(MagicParams::default(), 1, &P).unwrap();
    /// let msg = m.msg(NodeId(0), GoMsg::Go);
    /// m.post(NodeId(0), Cycles(0), msg).unwrap();
    /// let r = m.run();
    /// assert!(!r.is_clean());
    /// assert_eq!(m.drops(NodeId(0)).unwrap().over_issue, 1);
    /// let row = m.ledger().handler(Some(0), "p.go").cloned().unwrap();
    /// assert_eq!((row.stats.busy, row.stats.instructions), (3, 6));
    /// assert!(r.refused[0].contains("1000 instructions in 1 bundle(s)"), "{:?}", r.refused);
    /// ```
    pub fn bundles(&mut self, cycles: u32, instrs: u32) {
        let width = self.params.pp_issue_width as u64;
        if instrs as u64 > width * cycles as u64 {
            let detail = (instrs as u64) << 32 | cycles as u64;
            self.refuse(Refused::Overissue, "instructions", None, detail);
            return;
        }
        let from = self.run.now;
        self.run.now += Cycles(cycles as u64);
        self.run.tally.instructions += instrs as u64;
        self.step("instructions", from, instrs as u64);
    }

    /// Spend a fixed number of cycles: for prototyping a handler whose cost is
    /// known before its code is written. A handler whose clock would pass
    /// [`LAST_CYCLE`], the end of the model's
    /// time, halts the run ([`crate::Halt::EndOfTime`]).
    pub fn busy(&mut self, c: Cycles) {
        let from = self.run.now;
        self.run.now = self.clock_to("busy", from.0 as u128 + c.0 as u128);
        self.step("busy", from, 0);
    }

    /// A load from MAGIC memory (directory, operation record...) at byte `addr`
    /// of the reserved space; a data-cache miss stalls for the line from
    /// memory. A load is one of the PP's instructions, charged beforehand
    /// with [`Cx::instr`] or [`Cx::bundles`] (as [`crate::costs::Task`]
    /// does: its bundles, then their loads and stores): a load or store
    /// beyond the instructions this invocation has issued so far is one the
    /// PP could not have made, and is refused ([`Refused::Overissue`]),
    /// charging nothing.
    pub fn load(&mut self, addr: u64) {
        if self.unissued("load") {
            return;
        }
        let from = self.run.now;
        self.run.tally.loads += 1;
        self.dcache(addr);
        self.step("load", from, addr);
    }

    /// A store to MAGIC memory; like [`Cx::load`].
    pub fn store(&mut self, addr: u64) {
        if self.unissued("store") {
            return;
        }
        let from = self.run.now;
        self.run.tally.stores += 1;
        self.dcache(addr);
        self.step("store", from, addr);
    }

    /// Whether a load or store now would be beyond the instructions issued
    /// so far (each one is among them); if so, step `step` is refused, its
    /// detail the instructions issued.
    fn unissued(&mut self, step: &'static str) -> bool {
        let t = &self.run.tally;
        if t.loads + t.stores < t.instructions {
            return false;
        }
        let issued = t.instructions;
        self.refuse(Refused::Overissue, step, None, issued);
        true
    }

    fn dcache(&mut self, addr: u64) {
        if !self.hw.dcache.access(addr) {
            let t = self
                .hw
                .mem
                .read_by(self.run.now, self.params.mem_first_dword, self.run.by());
            // A miss stalls the load itself (one step, not a separate wait).
            if t.last > self.run.now {
                self.run.tally.wait += (t.last - self.run.now).0;
                self.run.now = t.last;
            }
        }
    }

    /// Wait (stalled) until cycle `t` (a cycle past
    /// [`LAST_CYCLE`] halts the run, as
    /// [`Cx::busy`]).
    pub fn wait_until(&mut self, t: Cycles) {
        if t > self.run.now {
            let t = self.clock_to("wait", t.0 as u128);
            let from = self.run.now;
            self.run.tally.wait += (t - self.run.now).0;
            self.run.now = t;
            self.step("wait", from, 0);
        }
    }

    /// Wait until a transfer is complete.
    pub fn wait(&mut self, t: Ticket) {
        self.wait_until(t.ready);
    }

    /// The speculative memory read the inbox started at dispatch for this
    /// message's line, if its jump-table entry asked for one and a buffer was
    /// free: the buffer holding the line and when it fills. Taking it makes the
    /// buffer the handler's; a read not taken is dropped at the handler's end.
    pub fn speculative_read(&mut self) -> Option<(BufId, Ticket)> {
        self.run.spec.take()
    }

    /// `Ok` if `a` is in this node's memory; else step `step` is refused.
    fn local(&mut self, a: PAddr, step: &'static str) -> Result<(), Refused> {
        if a.node() != self.run.node || a.offset() >= self.params.mem_bytes {
            return Err(self.refuse(Refused::BadAddress, step, None, a.0));
        }
        Ok(())
    }

    /// `Ok` if `b` is allocated; else step `step` (carrying `msg`, if it
    /// sends one) is refused.
    fn check_buf(
        &mut self,
        b: BufId,
        step: &'static str,
        msg: Option<MsgType>,
    ) -> Result<(), Refused> {
        if self.hw.bufs.get(b).is_none() {
            return Err(self.refuse(Refused::BadBuffer, step, msg, b.0 as u64));
        }
        Ok(())
    }

    /// Read the line holding `a` from this node's memory into buffer `b`.
    pub fn mem_read(&mut self, a: PAddr, b: BufId) -> Result<Ticket, Refused> {
        self.local(a, "memory read")?;
        self.check_buf(b, "memory read", None)?;
        let t = self
            .hw
            .mem
            .read_by(self.run.now, self.params.mem_first_dword, self.run.by());
        self.mark(crate::trace::Track::Memory, "read", t.first, t.last);
        let bytes = self.hw.mem.line(a.line());
        let buf = self.hw.bufs.get_mut(b).expect("checked");
        buf.bytes = bytes;
        buf.first_ready = t.first;
        buf.ready = t.last;
        self.step("memory read", self.run.now, (t.last - self.run.start).0);
        Ok(Ticket {
            first: t.first,
            ready: t.last,
        })
    }

    /// Read the line holding `a` shifted by `shift` bytes (a multiple of a
    /// doubleword): its bytes `0..128-shift` land at `shift..` of buffer
    /// `first`, and the rest wraps to the start of buffer `second`. Bytes of
    /// the buffers outside those ranges keep what they held. This is how
    /// MAGIC's data path realigns a line for an unaligned transfer: the line
    /// is read once, into two buffers.
    pub fn mem_read_wrap(
        &mut self,
        a: PAddr,
        first: BufId,
        shift: usize,
        second: Option<BufId>,
    ) -> Result<Ticket, Refused> {
        self.local(a, "memory read")?;
        self.check_buf(first, "memory read", None)?;
        if let Some(b) = second {
            self.check_buf(b, "memory read", None)?;
        }
        if !shift.is_multiple_of(8) || shift >= LINE_BYTES || (shift > 0 && second.is_none()) {
            let b = second.unwrap_or(first).0 as u64;
            return Err(self.refuse(Refused::BadBuffer, "memory read", None, b));
        }
        let t = self
            .hw
            .mem
            .read_by(self.run.now, self.params.mem_first_dword, self.run.by());
        let bytes = self.hw.mem.line(a.line());
        let head = LINE_BYTES - shift;
        let f = self.hw.bufs.get_mut(first).expect("checked");
        f.bytes[shift..].copy_from_slice(&bytes[..head]);
        f.first_ready = f.first_ready.max(t.first);
        f.ready = f.ready.max(t.last);
        if let (Some(b), true) = (second, shift > 0) {
            // The wrapped part streams last.
            let w = t.first + Cycles(head as u64 / 8);
            let s = self.hw.bufs.get_mut(b).expect("checked");
            s.bytes[..shift].copy_from_slice(&bytes[head..]);
            s.first_ready = s.first_ready.max(w);
            s.ready = s.ready.max(t.last);
        }
        self.step("memory read", self.run.now, (t.last - self.run.start).0);
        Ok(Ticket {
            first: t.first,
            ready: t.last,
        })
    }

    /// Write buffer `b` to the line holding `a` once the buffer's data is in.
    pub fn mem_write(&mut self, a: PAddr, b: BufId) -> Result<Ticket, Refused> {
        self.local(a, "memory write")?;
        self.check_buf(b, "memory write", None)?;
        let buf = self.hw.bufs.get(b).expect("checked");
        let (bytes, ready) = (buf.bytes, buf.ready);
        let by = self.run.by();
        let t = self
            .hw
            .mem
            .write_by(self.run.now.max(ready), self.params.mem_write_latency, by);
        self.mark(crate::trace::Track::Memory, "write", t.first, t.last);
        self.hw.mem.store_line(a.line(), &bytes);
        self.step("memory write", self.run.now, (t.last - self.run.start).0);
        Ok(Ticket {
            first: t.first,
            ready: t.last,
        })
    }

    /// Ask the compute processor's cache for the line holding `a`, leaving it
    /// in `next` (or its present state if that is less). A dirty line's bytes
    /// go into buffer `b`; without a buffer, a dirty line is refused and left
    /// as it was (only a clean copy can be dropped without one). Wait for
    /// `state_at` before branching on the state.
    pub fn pc_get(
        &mut self,
        a: PAddr,
        b: Option<BufId>,
        next: LineState,
    ) -> Result<Intervention, Refused> {
        // The cache holds lines of any node's memory, but of no other.
        if a.node().0 >= self.run.nodes || a.offset() >= self.params.mem_bytes {
            return Err(self.refuse(Refused::BadAddress, "intervention", None, a.0));
        }
        if let Some(b) = b {
            self.check_buf(b, "intervention", None)?;
        } else if self.hw.pcache.state(a) == LineState::Dirty && next != LineState::Dirty {
            return Err(self.refuse(Refused::NoBuffer, "intervention", None, a.0));
        }
        let by = self.run.by();
        let (iv, data) = self
            .hw
            .pcache
            .intervene_by(self.run.now, self.params, a, next, by);
        let from = iv
            .done
            .saturating_sub(self.params.pc_line)
            .max(self.run.now);
        self.mark(crate::trace::Track::PcacheIf, "intervention", from, iv.done);
        if let (Some(b), Some(bytes), Some(first)) = (b, data, iv.first_word_at) {
            let buf = self.hw.bufs.get_mut(b).expect("checked");
            buf.bytes = bytes;
            buf.first_ready = first;
            buf.ready = iv.done;
        }
        self.step("intervention", self.run.now, (iv.done - self.run.start).0);
        Ok(iv)
    }

    /// A data buffer, or `None` when the pool is empty (the handler backs off).
    pub fn alloc_buffer(&mut self) -> Option<BufId> {
        self.hw.bufs.alloc(self.run.now)
    }

    /// Return a buffer to the pool now.
    pub fn free_buffer(&mut self, b: BufId) -> Result<(), Refused> {
        self.free_buffer_at(b, self.run.now)
    }

    /// Return a buffer to the pool when a transfer out of it is over (a
    /// memory write's ticket, say); the handler need not wait for it.
    /// A ticket past [`LAST_CYCLE`] (its fields are the caller's to set)
    /// halts the run when the handler returns, as a step past the end of
    /// time does.
    pub fn free_buffer_after(&mut self, b: BufId, t: Ticket) -> Result<(), Refused> {
        if t.ready > LAST_CYCLE {
            self.past_end("free buffer", t.ready.0 as u128);
        }
        self.free_buffer_at(b, self.run.now.max(t.ready).min(PAST_END))
    }

    fn free_buffer_at(&mut self, b: BufId, at: Cycles) -> Result<(), Refused> {
        if self.run.msg_buf == Some(b) {
            self.run.msg_buf = None;
        }
        if self.hw.bufs.release(b, at) {
            Ok(())
        } else {
            Err(self.refuse(Refused::BadBuffer, "free buffer", None, b.0 as u64))
        }
    }

    /// The buffer the message's data arrived in, if it carried data.
    pub fn msg_buffer(&self) -> Option<BufId> {
        self.run.msg_buf
    }

    /// Keep the message's buffer beyond this handler (it is otherwise returned
    /// at the handler's end): it is the protocol's until sent or freed.
    pub fn take_msg_buffer(&mut self) -> Option<BufId> {
        self.run.msg_buf.take()
    }

    /// The bytes of an allocated buffer (functional; the timing of filling it
    /// is in its ticket).
    pub fn buffer(&self, b: BufId) -> Option<&[u8; LINE_BYTES]> {
        self.hw.bufs.get(b).map(|x| &x.bytes)
    }

    /// When an allocated buffer's current contents arrive (first doubleword,
    /// whole line): from memory, the processor cache or the network.
    pub fn buffer_ticket(&self, b: BufId) -> Option<Ticket> {
        self.hw.bufs.get(b).map(|x| Ticket {
            first: x.first_ready,
            ready: x.ready,
        })
    }

    /// The bytes of an allocated buffer, to read or change in place (`None` if
    /// `b` is not allocated). Touching them costs nothing: charge the work with
    /// `load`, `store` or `instr`.
    pub fn buffer_mut(&mut self, b: BufId) -> Option<&mut [u8; LINE_BYTES]> {
        self.hw.bufs.get_mut(b).map(|x| &mut x.bytes)
    }

    /// Hand `msg` to the outbox, with the bytes of buffer `data` if given (the
    /// buffer returns to the pool once the packet has left). The payload on the
    /// wire is `msg.len` bytes, or a full line when `data` is given and
    /// `msg.len` is 0. If the lane's outbox slots are full the PP stalls here
    /// until one frees; the stall is charged to this handler.
    pub fn send(&mut self, mut msg: Msg, data: Option<BufId>) -> Result<(), Refused> {
        let t = Some(msg.mtype);
        if msg.dest.0 >= self.run.nodes {
            return Err(self.refuse(Refused::BadNode, "send", t, msg.dest.0 as u64));
        }
        if msg.len as usize > LINE_BYTES {
            return Err(self.refuse(Refused::TooLong, "send", t, msg.len as u64));
        }
        let (bytes, ready, full) = match data {
            Some(b) => {
                self.check_buf(b, "send", t)?;
                let buf = self.hw.bufs.get(b).expect("checked");
                if msg.len == 0 {
                    msg.len = LINE_BYTES as u16;
                }
                (Some(buf.bytes), buf.first_ready, buf.ready)
            }
            None => (None, self.run.now, self.run.now),
        };
        msg.src = self.run.node;
        let q = match msg.lane {
            Lane::Request => InQueue::NetRequest,
            Lane::Reply => InQueue::NetReply,
        };
        let from = self.run.now;
        let (header, arrival, left) = if msg.dest == self.run.node {
            // Loopback: MAGIC hands the message to its own inbox; its data
            // arrives as the buffer fills.
            let at = Arrival {
                first: ready.max(self.run.now),
                full: full.max(self.run.now),
            };
            (self.run.now, at, full.max(self.run.now))
        } else {
            let p = self.params;
            let wire = p.wire_cycles(msg.len as u64);
            let d = self.hw.link.issue(
                self.run.now,
                msg.lane,
                wire,
                ready,
                p.outbox_latency,
                p.outbox_slots,
            );
            self.run.tally.outbox_stall += (d.accepted - self.run.now).0;
            self.run.last_wire = Some((d.start, d.end));
            if d.start > d.accepted {
                let m = Some(msg.mtype);
                self.mark_msg(
                    crate::trace::Track::Outbox,
                    "waiting",
                    d.accepted,
                    d.start,
                    m,
                );
            }
            self.mark_msg(
                crate::trace::Track::NetOut,
                "packet",
                d.start,
                d.end,
                Some(msg.mtype),
            );
            self.run.now = d.accepted;
            // Cut through: the header is in once its bytes have crossed; the
            // data follows at the link's rate, the last byte `wire` after the first.
            let header = d.start + p.wire_cycles(0) + p.net_latency;
            let first = header + p.link_cycles(8);
            (
                header,
                Arrival {
                    first,
                    full: d.end + p.net_latency,
                },
                d.end,
            )
        };
        if let Some(b) = data {
            if self.run.msg_buf == Some(b) {
                self.run.msg_buf = None;
            }
            self.hw.bufs.release(b, left);
        }
        let deliver = delivered_at(self.table, &msg, header, arrival.full);
        self.step("send", from, msg.dest.0 as u64);
        self.sent(crate::watch::Dest::Node(msg.dest), &msg, bytes.is_some());
        let (pkt, tag) = self.packets.insert(msg, bytes, arrival);
        let node = msg.dest.0;
        if self.params.inbound_contention && msg.dest != self.run.node {
            // Its first byte at the destination's port: a wire's time
            // before the header is in.
            let port = header - self.params.wire_cycles(0);
            let ev = Ev::Arrive { node, q, pkt, tag };
            self.engine.schedule(Time::from_cycles(port), ev);
            return Ok(());
        }
        self.engine.schedule(
            Time::from_cycles(deliver + self.params.inbox_dispatch),
            Ev::Deliver { node, q, pkt, tag },
        );
        Ok(())
    }

    /// When the last packet this handler sent to the network goes on the
    /// wire and comes off it (for measurements of the pipeline).
    pub fn last_wire(&self) -> Option<(Cycles, Cycles)> {
        self.run.last_wire
    }

    /// Whether this node's software queue is full, so that a
    /// [`Cx::reschedule`] now would be refused. A protocol that may fill the
    /// queue asks first and keeps the work itself: a refused reschedule is
    /// a drop, which makes the run not clean. Asking charges nothing, as a
    /// refused reschedule charges nothing; a handler that models the test's
    /// cost charges it with [`Cx::instr`].
    pub fn software_queue_full(&self) -> bool {
        // The head register holds one entry beyond the in-memory part.
        let held = self.hw.software_held.unwrap_or(0) as usize;
        self.hw.queues[InQueue::Software as usize].len() + held > self.params.swq_capacity
    }

    /// Put `msg` on this node's software queue, to be dispatched after the
    /// handler ends (the way a long operation continues itself). A full
    /// queue refuses it (see [`Cx::software_queue_full`]).
    #[inline]
    pub fn reschedule(&mut self, msg: Msg) -> Result<(), Refused> {
        if msg.len as usize > LINE_BYTES {
            let t = Some(msg.mtype);
            return Err(self.refuse(Refused::TooLong, "reschedule", t, msg.len as u64));
        }
        if self.software_queue_full() {
            let cap = self.params.swq_capacity as u64;
            return Err(self.refuse(Refused::QueueFull, "reschedule", Some(msg.mtype), cap));
        }
        self.step("reschedule", self.run.now, 0);
        self.sent(crate::watch::Dest::Software, &msg, false);
        // A continuation carries no data.
        let (pkt, tag) = self.packets.insert(msg, None, Arrival::default());
        // Eligible once through the inbox stage.
        let at = self.run.now + self.params.inbox_dispatch;
        if let Some(n) = self.hw.software_held.as_mut() {
            // An explorer orders this continuation against the node's other
            // input (see `check`): it is held like a delivery.
            *n += 1;
            let node = self.run.node.0;
            let q = InQueue::Software;
            self.engine
                .schedule(Time::from_cycles(at), Ev::Deliver { node, q, pkt, tag });
            return Ok(());
        }
        let queued = Queued::new(pkt, at, tag);
        self.hw.queues[InQueue::Software as usize].push_back(queued);
        Ok(())
    }

    /// Hand the compute processor `msg` (a reply, an ACK/NACK, an
    /// interrupt), with the line in buffer `data` if given: it crosses the
    /// processor interface once the interface is free and the buffer's first
    /// doubleword is in; the buffer returns to the pool when it has crossed.
    pub fn to_processor(&mut self, msg: Msg, data: Option<BufId>) -> Result<(), Refused> {
        if msg.len as usize > LINE_BYTES {
            let t = Some(msg.mtype);
            return Err(self.refuse(Refused::TooLong, "to processor", t, msg.len as u64));
        }
        let (bytes, ready) = match data {
            Some(b) => {
                self.check_buf(b, "to processor", Some(msg.mtype))?;
                let buf = self.hw.bufs.get(b).expect("checked");
                (Some(buf.bytes), buf.first_ready)
            }
            None => (None, self.run.now),
        };
        let by = self.run.by();
        let (arrive, free) =
            self.hw
                .pcache
                .reply_by(self.run.now.max(ready), self.params, bytes.is_some(), by);
        if let Some(b) = data {
            if self.run.msg_buf == Some(b) {
                self.run.msg_buf = None;
            }
            self.hw.bufs.release(b, free);
        }
        let at = Arrival {
            first: arrive,
            full: arrive,
        };
        self.step("to processor", self.run.now, (arrive - self.run.start).0);
        self.sent(crate::watch::Dest::Processor, &msg, bytes.is_some());
        let (pkt, _) = self.packets.insert(msg, bytes, at);
        self.engine.schedule(
            Time::from_cycles(arrive),
            Ev::ProcDeliver {
                node: self.run.node.0,
                pkt,
            },
        );
        Ok(())
    }
}

/// When a packet whose header is in at `header` and whose last byte at
/// `full` is delivered: at its header (cut through), or whole for a route
/// that asks for the whole packet. The one rule a send and an inbound
/// port's late packet both deliver by.
pub(crate) fn delivered_at(
    table: &[[Option<Route>; 4]],
    msg: &Msg,
    header: Cycles,
    full: Cycles,
) -> Cycles {
    let whole = table[msg.mtype.0 as usize][msg.addr.region() as usize]
        .is_some_and(|r| r.opts.whole_packet);
    if whole {
        full.max(header)
    } else {
        header
    }
}
