//! A node's hardware state and the packets in flight: the leaf that both the
//! machine (which runs nodes) and the handler context (which drives one)
//! build on.

use crate::buffers::BufferPool;
use crate::dcache::DCache;
use crate::ids::{HandlerId, Msg, MsgType, LINE_BYTES};
use crate::link::OutLink;
use crate::memory::Memory;
use crate::pack::{put, put_line, put_msg, put_opt, Reader};
use crate::params::InQueue;
use crate::pcache::ProcCache;
use crate::time::Cycles;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// A message enters input queue `q` of `node`, with what the inbox
    /// looks at of it (so a delivery reads no packet).
    Deliver {
        node: u32,
        q: InQueue,
        pkt: u32,
        tag: Tag,
    },
    /// A network packet for `node` reaches its inbound port (its first
    /// byte): it comes in once the port is free, and is delivered (as
    /// `Deliver`) when it has (see [`crate::MagicParams::inbound_contention`]).
    Arrive {
        node: u32,
        q: InQueue,
        pkt: u32,
        tag: Tag,
    },
    /// The PP of `node` finished its handler.
    PpDone { node: u32 },
    /// Look at `node` again (a data buffer came back, a message became eligible).
    Wake { node: u32 },
    /// The compute processor of `node` takes a step.
    ProcStep { node: u32 },
    /// A message from MAGIC reaches the compute processor of `node`.
    ProcDeliver { node: u32, pkt: u32 },
}

/// An event is three words: a delivery's tag fits beside its queue.
const _: () = assert!(size_of::<Ev>() == 12);

/// What the inbox looks at of a message before it takes it, carried by
/// its delivery so that the delivery reads no packet: its type, its
/// address region and whether it carries a line of data, in two bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tag {
    mtype: MsgType,
    /// The address region's number, with `TAG_DATA` if the message
    /// carries data.
    bits: u8,
}

const TAG_DATA: u8 = 4;

impl Tag {
    /// The tag of `msg`, carrying a line of data or not.
    #[inline]
    fn of(msg: &Msg, data: bool) -> Tag {
        let data = if data { TAG_DATA } else { 0 };
        Tag {
            mtype: msg.mtype,
            bits: msg.addr.region() as u8 | data,
        }
    }

    fn pack(self, out: &mut Vec<u8>) {
        put(out, self.mtype.0.into());
        put(out, self.bits.into());
    }

    fn unpack(r: &mut Reader<'_>) -> Tag {
        Tag {
            mtype: MsgType(r.u8()),
            bits: r.u8(),
        }
    }
}

/// Messages in flight or queued, with their bytes; slots are reused, and a
/// message without data costs no line of storage.
#[derive(Default)]
pub(crate) struct Packets {
    slots: Vec<Packet>,
    free: Vec<u32>,
    lines: Vec<Line>,
    free_lines: Vec<u32>,
}

impl Packets {
    /// Packed for a search's frontier, free slots and all, so a restored
    /// machine numbers its next packets as the original would.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.slots.len() as u64);
        for p in &self.slots {
            put_msg(out, &p.msg);
            put_opt(out, (p.data != NO_DATA).then_some(p.data.into()));
        }
        put_u32s(out, &self.free);
        put(out, self.lines.len() as u64);
        for l in &self.lines {
            put_line(out, &l.bytes);
            put(out, l.first.0);
            put(out, l.full.0);
        }
        put_u32s(out, &self.free_lines);
    }

    /// Make these the packets [`Packets::pack`] packed, reusing this storage.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        self.slots.clear();
        for _ in 0..r.count() {
            let msg = r.msg();
            let data = r.opt().map_or(NO_DATA, |d| d as u32);
            self.slots.push(Packet { msg, data });
        }
        read_u32s(r, &mut self.free);
        self.lines.clear();
        for _ in 0..r.count() {
            let mut bytes = [0; LINE_BYTES];
            r.line(&mut bytes);
            let (first, full) = (r.cycles(), r.cycles());
            self.lines.push(Line { bytes, first, full });
        }
        read_u32s(r, &mut self.free_lines);
    }
}

/// A list of numbers, packed.
pub(crate) fn put_u32s(out: &mut Vec<u8>, xs: &[u32]) {
    put(out, xs.len() as u64);
    for &x in xs {
        put(out, x.into());
    }
}

/// A list [`put_u32s`] packed, into `xs`.
pub(crate) fn read_u32s(r: &mut Reader<'_>, xs: &mut Vec<u32>) {
    xs.clear();
    for _ in 0..r.count() {
        xs.push(r.u32());
    }
}

/// A message's header: one cache line, so a delivery or a dispatch on a
/// large machine reads one line for it.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Packet {
    msg: Msg,
    /// Index into `lines`, or `NO_DATA`.
    data: u32,
}

/// A message's line of data, with when it arrives.
#[derive(Clone, Copy)]
struct Line {
    bytes: [u8; LINE_BYTES],
    /// When the data's first doubleword and its last byte arrive.
    first: Cycles,
    full: Cycles,
}

/// When a packet's data arrives at its destination.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Arrival {
    pub first: Cycles,
    pub full: Cycles,
}

const NO_DATA: u32 = u32::MAX;

impl Packets {
    /// Store a message, with its bytes if any: its slot's number, and the
    /// tag its delivery carries (made here, from what the slot holds, so
    /// the two cannot disagree). Inlined into each send: the line of data,
    /// which the pipeline's and most control messages have none of, is
    /// stored out of line.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        msg: Msg,
        data: Option<[u8; LINE_BYTES]>,
        at: Arrival,
    ) -> (u32, Tag) {
        let tag = Tag::of(&msg, data.is_some());
        let data = match data {
            None => NO_DATA,
            Some(bytes) => self.insert_line(Line {
                bytes,
                first: at.first,
                full: at.full,
            }),
        };
        let p = Packet { msg, data };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                i
            }
            None => self.push_slot(p),
        };
        (i, tag)
    }

    /// A slot of its own for `p`, at the end (while the store grows).
    #[inline(never)]
    fn push_slot(&mut self, p: Packet) -> u32 {
        self.slots.push(p);
        // The free list can hold every slot, so it never grows later.
        self.free.reserve(self.slots.len());
        (self.slots.len() - 1) as u32
    }

    #[inline(never)]
    fn insert_line(&mut self, line: Line) -> u32 {
        match self.free_lines.pop() {
            Some(i) => {
                self.lines[i as usize] = line;
                i
            }
            None => {
                self.lines.push(line);
                self.free_lines.reserve(self.lines.len());
                (self.lines.len() - 1) as u32
            }
        }
    }

    /// Take a message out with its bytes.
    pub(crate) fn take(&mut self, i: u32) -> (Msg, Option<[u8; LINE_BYTES]>) {
        self.free.push(i);
        let p = self.slots[i as usize];
        if p.data == NO_DATA {
            return (p.msg, None);
        }
        self.free_lines.push(p.data);
        (p.msg, Some(self.lines[p.data as usize].bytes))
    }

    /// Ask for packet `i`'s header line (a hint only).
    #[inline]
    pub(crate) fn prefetch(&self, i: u32) {
        crate::hint::prefetch_elem(&self.slots, i as usize);
    }

    pub(crate) fn msg(&self, i: u32) -> &Msg {
        &self.slots[i as usize].msg
    }

    /// When message `i`'s last byte of data arrives, if it carries data.
    pub(crate) fn data_full(&self, i: u32) -> Option<Cycles> {
        let d = self.slots[i as usize].data;
        (d != NO_DATA).then(|| self.lines[d as usize].full)
    }

    /// Message `i`'s data, if any, arrives `by` cycles later than it was
    /// sent to (its destination's inbound port was busy).
    pub(crate) fn delay_data(&mut self, i: u32, by: Cycles) {
        let d = self.slots[i as usize].data;
        if let Some(l) = self.lines.get_mut(d as usize) {
            l.first += by;
            l.full += by;
        }
    }

    /// The bytes a message carries, if any.
    pub(crate) fn data(&self, i: u32) -> Option<&[u8; LINE_BYTES]> {
        let d = self.slots[i as usize].data;
        (d != NO_DATA).then(|| &self.lines[d as usize].bytes)
    }

    /// Take a message out; its bytes, if any, go into buffer `into` with
    /// their arrival times.
    #[inline]
    pub(crate) fn remove(&mut self, i: u32, into: Option<&mut crate::buffers::Buffer>) -> Msg {
        self.free.push(i);
        let p = &self.slots[i as usize];
        let data = p.data;
        let msg = p.msg;
        if data != NO_DATA {
            self.remove_line(data, into);
        }
        msg
    }

    /// Line `d` into buffer `into` with its arrival times, and freed.
    #[inline(never)]
    fn remove_line(&mut self, d: u32, into: Option<&mut crate::buffers::Buffer>) {
        if let Some(b) = into {
            let l = &self.lines[d as usize];
            b.bytes = l.bytes;
            b.first_ready = l.first;
            b.ready = l.full;
        }
        self.free_lines.push(d);
    }
}

/// A message in an input queue, with what the inbox looks at before it
/// takes the message (so arbitration reads no packet it does not take):
/// its tag's parts, as fields (the flag gives an empty queue's front its
/// niche, so a queue's front takes no more room than the message).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued {
    pub pkt: u32,
    pub at: Cycles,
    /// The message carries a line of data (it needs a data buffer).
    pub data: bool,
    /// The message's type and address region: its jump-table entry, so a
    /// large machine can ask for its handler's counters before dispatch
    /// reads the packet (a hint only; the dispatch reads the packet).
    pub mtype: MsgType,
    /// The address region's number (see `mtype`).
    pub region: u8,
}

impl Queued {
    /// Packet `pkt`, delivered at `at` with tag `tag`.
    #[inline]
    pub(crate) fn new(pkt: u32, at: Cycles, tag: Tag) -> Queued {
        Queued {
            pkt,
            at,
            data: tag.bits & TAG_DATA != 0,
            mtype: tag.mtype,
            region: tag.bits & !TAG_DATA,
        }
    }

    /// The tag it was made from.
    fn tag(&self) -> Tag {
        let data = if self.data { TAG_DATA } else { 0 };
        Tag {
            mtype: self.mtype,
            bits: self.region | data,
        }
    }

    fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.pkt.into());
        put(out, self.at.0);
        self.tag().pack(out);
    }

    fn unpack(r: &mut Reader<'_>) -> Queued {
        let (pkt, at) = (r.u32(), r.cycles());
        Queued::new(pkt, at, Tag::unpack(r))
    }
}

/// An input queue: its front message held in the node itself, so the inbox
/// looks at it without following a pointer, and the rest behind one (made
/// the first time the queue holds two, and kept, so a run in steady state
/// does not allocate), with their count beside the front so a queue of one
/// never follows it. The front is empty only when the queue is.
#[derive(Debug, Default)]
pub(crate) struct Fifo {
    head: Option<Queued>,
    /// Messages in `rest`.
    more: usize,
    /// Boxed: a pointer where a queue's header would take four words, so
    /// the four queues fit the node's first lines beside its front
    /// messages.
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<Queued>>>,
}

/// The rest of a queue that has none.
static NO_REST: VecDeque<Queued> = VecDeque::new();

impl Fifo {
    /// Messages queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.head.is_some() as usize + self.more
    }

    /// The message that leaves next.
    #[inline]
    pub(crate) fn front(&self) -> Option<&Queued> {
        self.head.as_ref()
    }

    /// The queue behind the front, made if it is not yet.
    #[inline]
    fn rest_mut(&mut self) -> &mut VecDeque<Queued> {
        self.rest.get_or_insert_with(Box::default)
    }

    /// Take the message that leaves next.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<Queued> {
        let h = self.head.take()?;
        if self.more > 0 {
            self.more -= 1;
            self.head = self.rest_mut().pop_front();
        }
        Some(h)
    }

    /// Queue `x` last.
    #[inline]
    pub(crate) fn push_back(&mut self, x: Queued) {
        if self.head.is_none() {
            self.head = Some(x);
        } else {
            self.more += 1;
            self.rest_mut().push_back(x);
        }
    }

    /// Queue `x` at `pos` (at most the length), ahead of those from there.
    #[inline]
    pub(crate) fn insert(&mut self, pos: usize, x: Queued) {
        // Last, as a rule (and always into an empty queue): no shift.
        if pos >= self.len() {
            self.push_back(x);
            return;
        }
        self.more += 1;
        if pos == 0 {
            let h = self.head.replace(x).expect("a front");
            self.rest_mut().push_front(h);
        } else {
            self.rest_mut().insert(pos - 1, x);
        }
    }

    /// The messages, front first.
    pub(crate) fn iter(
        &self,
    ) -> core::iter::Chain<
        core::option::Iter<'_, Queued>,
        std::collections::vec_deque::Iter<'_, Queued>,
    > {
        let rest = self.rest.as_deref().unwrap_or(&NO_REST);
        self.head.iter().chain(rest.iter())
    }
}

impl Fifo {
    /// Packed for a search's frontier: its messages, front first.
    fn pack(&self, out: &mut Vec<u8>) {
        put(out, self.len() as u64);
        for q in self {
            q.pack(out);
        }
    }

    /// Hold what [`Fifo::pack`] packed, reusing this queue's storage.
    fn unpack(&mut self, r: &mut Reader<'_>) {
        self.head = None;
        self.more = 0;
        if let Some(rest) = &mut self.rest {
            rest.clear();
        }
        for _ in 0..r.count() {
            self.push_back(Queued::unpack(r));
        }
    }
}

impl core::ops::Index<usize> for Fifo {
    type Output = Queued;

    fn index(&self, i: usize) -> &Queued {
        match i {
            0 => self.head.as_ref().expect("a queued message"),
            _ => &self.rest.as_ref().expect("a queued message")[i - 1],
        }
    }
}

impl<'a> IntoIterator for &'a Fifo {
    type Item = &'a Queued;
    type IntoIter = core::iter::Chain<
        core::option::Iter<'a, Queued>,
        std::collections::vec_deque::Iter<'a, Queued>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Counted drops and refusals: the model's answer to bad requests. Each
/// count also makes the run not clean: the run's report names its first
/// instance ([`crate::RunReport::refused`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Drops {
    /// Messages with no jump-table entry for their type and region.
    pub unhandled: u64,
    /// Handler references outside this node's memory.
    pub bad_address: u64,
    /// Uses of a buffer that is not allocated.
    pub bad_buffer: u64,
    /// Sends to a node that does not exist.
    pub bad_node: u64,
    /// Reschedules refused by a full software queue.
    pub swq_full: u64,
    /// Sends refused for a payload longer than a line.
    pub too_long: u64,
    /// Messages whose payload did not decode as their handler's type.
    pub undecodable: u64,
    /// Steps the PP could not have issued: more instructions than their
    /// bundles hold at the issue width, a load or store beyond the
    /// instructions issued (see [`crate::Cx::bundles`]).
    pub over_issue: u64,
}

impl Drops {
    /// The count of one cause.
    pub(crate) fn get(mut self, c: Cause) -> u64 {
        *self.count(c)
    }

    /// The count of one cause, to add to.
    pub(crate) fn count(&mut self, c: Cause) -> &mut u64 {
        match c {
            Cause::Unhandled => &mut self.unhandled,
            Cause::BadAddress => &mut self.bad_address,
            Cause::BadBuffer => &mut self.bad_buffer,
            Cause::BadNode => &mut self.bad_node,
            Cause::QueueFull => &mut self.swq_full,
            Cause::TooLong => &mut self.too_long,
            Cause::Undecodable => &mut self.undecodable,
            Cause::OverIssue => &mut self.over_issue,
        }
    }
}

/// The causes [`Drops`] counts, in its field order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Unhandled,
    BadAddress,
    BadBuffer,
    BadNode,
    QueueFull,
    TooLong,
    Undecodable,
    OverIssue,
}

impl Cause {
    pub(crate) const ALL: [Cause; 8] = [
        Cause::Unhandled,
        Cause::BadAddress,
        Cause::BadBuffer,
        Cause::BadNode,
        Cause::QueueFull,
        Cause::TooLong,
        Cause::Undecodable,
        Cause::OverIssue,
    ];

    pub(crate) fn of(r: crate::error::Refused) -> Cause {
        use crate::error::Refused;
        match r {
            Refused::BadAddress => Cause::BadAddress,
            Refused::BadBuffer | Refused::NoBuffer => Cause::BadBuffer,
            Refused::BadNode => Cause::BadNode,
            Refused::QueueFull => Cause::QueueFull,
            Refused::TooLong => Cause::TooLong,
            Refused::Overissue => Cause::OverIssue,
        }
    }
}

/// The first drop of one cause on a node: enough to name it in the report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct First {
    /// The handler whose step was refused (`None`: the inbox, before any
    /// handler ran).
    pub handler: Option<HandlerId>,
    /// The step (`send`, `memory read`, ...; for a message dropped at
    /// dispatch, `dispatch`).
    pub step: &'static str,
    /// The message the step carried (sent, rescheduled, handed over), or
    /// the one dropped.
    pub msg: Option<MsgType>,
    /// What the step named: the destination node, the address, the
    /// buffer, the payload length, the source node (see `Magic::refused`).
    pub detail: u64,
    /// When.
    pub at: Cycles,
    /// The refusal, if a step was refused.
    pub why: Option<crate::error::Refused>,
}

/// What a node dropped: counts by cause, the first of each, and the
/// messages that had no route by type. Made on the first drop, so a node
/// that drops nothing holds a null pointer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Losses {
    pub drops: Drops,
    pub first: [Option<First>; Cause::ALL.len()],
    /// Messages that had no route, by type (a type's first one adds it).
    pub unrouted: Vec<(MsgType, u64)>,
}

impl Losses {
    /// Count a drop of cause `c`, keeping `first` if it is the first.
    pub(crate) fn add(&mut self, c: Cause, first: First) {
        *self.drops.count(c) += 1;
        self.first[c as usize].get_or_insert(first);
    }
}

/// A node's units and counters, laid out for a machine of thousands of
/// nodes where each event touches a node at random (`repr(C)`, each node
/// starting a cache line): what every event looks at comes first, in the
/// first three lines; what a dispatch looks at, through the outbox link a
/// handler's send books, follows (arbitration asks for both ahead,
/// [`NodeHw::prefetch_dispatch`]);
/// then the data buffers, which only a message with data needs, and what
/// some handlers only, or rarely, touch.
#[repr(C, align(64))]
pub(crate) struct NodeHw {
    pub queues: [Fifo; 4],
    pub(crate) wake_at: Option<Cycles>,
    pub(crate) net_delivered: u64,
    pub(crate) pp_running: bool,
    pub(crate) dirty: bool,
    // A dispatch's own (`DISPATCH_BYTES`).
    /// When the PP's last handler ends (the end of its last busy interval).
    pub(crate) pp_until: Cycles,
    pub(crate) pp_busy: u64,
    pub(crate) dispatched: u64,
    pub(crate) inbox_wait: u64,
    /// What handlers did, step by step, while the test bench watches
    /// (looked at on every step, so it sits with the hot fields).
    pub watch: Option<Box<crate::watch::Watch>>,
    /// Busy intervals, when the run is traced (looked at on every step;
    /// boxed, so that what a dispatch looks at, the outbox link with it,
    /// fits five lines).
    #[allow(clippy::box_collection)]
    pub trace: Option<Box<Vec<crate::trace::Slice>>>,
    /// While an explorer holds deliveries: software-queue entries held
    /// (they count against the queue's capacity; looked at on every
    /// reschedule).
    pub(crate) software_held: Option<u32>,
    pub link: OutLink,
    pub bufs: BufferPool,
    // The rest is touched by some handlers only, or rarely.
    /// What this node dropped or refused (`None` until the first drop).
    pub lost: Option<Box<Losses>>,
    /// When the inbound port is next free: the end of the last packet
    /// coming in (booked only with `inbound_contention`, which a search's
    /// held deliveries turn off).
    pub(crate) in_free: Cycles,
    pub mem: Memory,
    pub pcache: ProcCache,
    pub dcache: DCache,
    pub to_processor: Vec<(Cycles, Msg)>,
}

/// Bytes of [`NodeHw`] every event looks at (its queues, its PP's and
/// inbox's state): three cache lines.
const HOT_BYTES: usize = core::mem::offset_of!(NodeHw, pp_until);

/// Bytes of [`NodeHw`] a dispatch looks at first: the hot ones, the PP's
/// counters, whether it is watched or traced, the software queue's held
/// entries and the outbox link.
const DISPATCH_BYTES: usize = core::mem::offset_of!(NodeHw, bufs);

const _: () = assert!(HOT_BYTES <= 3 * 64 && DISPATCH_BYTES <= 5 * 64);
const _: () = assert!(size_of::<Packet>() == 64);

/// What a node holds only while a test bench watches it, while a run is
/// traced, or once it has dropped something: kept as is beside a packed
/// node (see [`NodeHw::pack`]).
#[derive(Clone)]
pub(crate) struct Rare {
    watch: Option<Box<crate::watch::Watch>>,
    /// Boxed as the node keeps it.
    #[allow(clippy::box_collection)]
    trace: Option<Box<Vec<crate::trace::Slice>>>,
    lost: Option<Box<Losses>>,
}

impl NodeHw {
    /// Packed for a search's frontier (see [`crate::pack`]): everything
    /// but what [`NodeHw::rare`] gives.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        // Every field named, so a field added to a node cannot be left out
        // of a search's snapshot unseen.
        let NodeHw {
            queues,
            wake_at,
            net_delivered,
            pp_running,
            dirty,
            pp_until,
            pp_busy,
            dispatched,
            inbox_wait,
            watch: _,
            trace: _,
            software_held,
            link,
            bufs,
            lost: _,
            in_free,
            mem,
            pcache,
            dcache,
            to_processor,
        } = self;
        for q in queues {
            q.pack(out);
        }
        put_opt(out, wake_at.map(|t| t.0));
        put(out, *net_delivered);
        put(out, (*pp_running).into());
        put(out, (*dirty).into());
        put(out, pp_until.0);
        put(out, *pp_busy);
        put(out, *dispatched);
        put(out, *inbox_wait);
        put_opt(out, software_held.map(u64::from));
        link.pack(out);
        bufs.pack(out);
        put(out, in_free.0);
        mem.pack(out);
        pcache.pack(out);
        dcache.pack(out);
        put(out, to_processor.len() as u64);
        for (t, m) in to_processor {
            put(out, t.0);
            put_msg(out, m);
        }
    }

    /// Make this node the one [`NodeHw::pack`] packed, with `rare` as
    /// [`NodeHw::rare`] gave it, reusing this node's storage.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>, rare: Option<&Rare>) {
        let NodeHw {
            queues,
            wake_at,
            net_delivered,
            pp_running,
            dirty,
            pp_until,
            pp_busy,
            dispatched,
            inbox_wait,
            watch,
            trace,
            software_held,
            link,
            bufs,
            lost,
            in_free,
            mem,
            pcache,
            dcache,
            to_processor,
        } = self;
        for q in queues {
            q.unpack(r);
        }
        *wake_at = r.opt().map(Cycles);
        *net_delivered = r.u64();
        *pp_running = r.bool();
        *dirty = r.bool();
        *pp_until = r.cycles();
        *pp_busy = r.u64();
        *dispatched = r.u64();
        *inbox_wait = r.u64();
        *software_held = r.opt().map(|x| x as u32);
        link.unpack(r);
        bufs.unpack(r);
        *in_free = r.cycles();
        mem.unpack(r);
        pcache.unpack(r);
        dcache.unpack(r);
        to_processor.clear();
        for _ in 0..r.count() {
            let t = r.cycles();
            to_processor.push((t, r.msg()));
        }
        match rare {
            Some(x) => {
                watch.clone_from(&x.watch);
                trace.clone_from(&x.trace);
                lost.clone_from(&x.lost);
            }
            None => (*watch, *trace, *lost) = (None, None, None),
        }
    }

    /// What [`NodeHw::pack`] leaves out, if this node holds any of it.
    pub(crate) fn rare(&self) -> Option<Rare> {
        if self.watch.is_none() && self.trace.is_none() && self.lost.is_none() {
            return None;
        }
        Some(Rare {
            watch: self.watch.clone(),
            trace: self.trace.clone(),
            lost: self.lost.clone(),
        })
    }
}

impl NodeHw {
    /// Count a drop on this node (rare: the record is made on the first).
    #[cold]
    pub(crate) fn lose(&mut self, c: Cause, first: First) {
        self.lost.get_or_insert_with(Box::default).add(c, first);
    }

    /// The end of the last busy interval any of this node's units has
    /// booked: a handler, a memory transfer, the processor interface, the
    /// outbox and the wire.
    pub(crate) fn booked_until(&self) -> Cycles {
        self.pp_until
            .max(self.mem.booked_until())
            .max(self.pcache.booked_until())
            .max(self.link.booked_until())
    }

    /// What this node dropped, by cause.
    pub(crate) fn drops(&self) -> Drops {
        self.lost.as_ref().map_or(Drops::default(), |l| l.drops)
    }

    /// Ask for the lines of node `n`'s fields a dispatch touches first,
    /// through the outbox link (a hint only).
    #[inline(always)]
    pub(crate) fn prefetch_dispatch(hw: &[NodeHw], n: u32) {
        crate::hint::prefetch_part(hw, n as usize, DISPATCH_BYTES);
    }
}

/// How the inbox dispatches one jump-table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dispatch {
    /// Start a memory read of the message's line at dispatch; the handler
    /// finds it in `Cx::speculative_read`.
    pub speculative_read: bool,
    /// Dispatch only when the whole packet has arrived (store and forward),
    /// instead of when its header has (cut through, the default).
    pub whole_packet: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Route {
    pub(crate) handler: HandlerId,
    pub(crate) opts: Dispatch,
}

/// A message held for an explorer to release (see `check`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub(crate) ev: Ev,
    pub(crate) chan: Channel,
    /// The message's slot in `Packets`.
    pub(crate) pkt: u32,
}

/// Where a held message goes: its source, its destination and the queue
/// (`4`: the compute processor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Channel {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    pub(crate) path: u8,
}

pub(crate) const TO_PROCESSOR: u8 = 4;

impl Held {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        let (kind, node, q, pkt, tag) = match self.ev {
            Ev::Deliver { node, q, pkt, tag } => (0, node, q as u64, pkt, Some(tag)),
            Ev::PpDone { node } => (1, node, 0, 0, None),
            Ev::Wake { node } => (2, node, 0, 0, None),
            Ev::ProcStep { node } => (3, node, 0, 0, None),
            Ev::ProcDeliver { node, pkt } => (4, node, 0, pkt, None),
            Ev::Arrive { node, q, pkt, tag } => (5, node, q as u64, pkt, Some(tag)),
        };
        for x in [kind, node.into(), q, pkt.into()] {
            put(out, x);
        }
        if let Some(t) = tag {
            t.pack(out);
        }
        put(out, self.chan.src.into());
        put(out, self.chan.dst.into());
        put(out, self.chan.path.into());
        put(out, self.pkt.into());
    }

    /// What [`Held::pack`] packed; `None` for what it cannot have.
    pub(crate) fn unpack(r: &mut Reader<'_>) -> Option<Held> {
        let (kind, node, q, pkt) = (r.u8(), r.u32(), r.u8(), r.u32());
        let ev = match kind {
            0 => Ev::Deliver {
                node,
                q: *InQueue::ALL.iter().find(|x| **x as u8 == q)?,
                pkt,
                tag: Tag::unpack(r),
            },
            1 => Ev::PpDone { node },
            2 => Ev::Wake { node },
            3 => Ev::ProcStep { node },
            4 => Ev::ProcDeliver { node, pkt },
            5 => Ev::Arrive {
                node,
                q: *InQueue::ALL.iter().find(|x| **x as u8 == q)?,
                pkt,
                tag: Tag::unpack(r),
            },
            _ => return None,
        };
        let chan = Channel {
            src: r.u32(),
            dst: r.u32(),
            path: r.u8(),
        };
        Some(Held {
            ev,
            chan,
            pkt: r.u32(),
        })
    }
}

impl Held {
    /// The event held, if it is a delivery the explorer orders.
    pub(crate) fn of(ev: Ev, packets: &Packets) -> Option<Held> {
        let (chan, pkt) = match ev {
            Ev::Deliver { node, q, pkt, .. } => {
                // A node's continuations keep their own order.
                let src = if q == InQueue::Software {
                    node
                } else {
                    packets.msg(pkt).src.0
                };
                let path = q as u8;
                (
                    Channel {
                        src,
                        dst: node,
                        path,
                    },
                    pkt,
                )
            }
            Ev::ProcDeliver { node, pkt } => {
                let path = TO_PROCESSOR;
                (
                    Channel {
                        src: node,
                        dst: node,
                        path,
                    },
                    pkt,
                )
            }
            _ => return None,
        };
        Some(Held { ev, chan, pkt })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue keeps the order a double-ended queue would, whatever is
    /// pushed, inserted, taken and copied.
    #[test]
    fn a_fifo_keeps_the_order_of_a_deque() {
        let q = |pkt: u32| {
            let bits = if pkt.is_multiple_of(3) { TAG_DATA } else { 0 };
            let tag = Tag {
                mtype: MsgType(pkt as u8),
                bits,
            };
            Queued::new(pkt, Cycles(pkt as u64), tag)
        };
        let mut f = Fifo::default();
        let mut d: VecDeque<Queued> = VecDeque::new();
        let mut copy = Fifo::default();
        // A copy as a search makes one: packed, and unpacked into a queue
        // that may hold something already.
        let repack = |from: &Fifo, into: &mut Fifo| {
            let mut bytes = Vec::new();
            from.pack(&mut bytes);
            let mut r = Reader::new(&bytes);
            into.unpack(&mut r);
            assert!(r.done());
        };
        let mut lcg = 7u64;
        for i in 0..2000u32 {
            lcg = lcg
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (lcg >> 33) as usize;
            match r % 4 {
                0 => {
                    f.push_back(q(i));
                    d.push_back(q(i));
                }
                1 => {
                    let pos = r / 4 % (d.len() + 1);
                    f.insert(pos, q(i));
                    d.insert(pos, q(i));
                }
                2 => {
                    let (a, b) = (f.pop_front(), d.pop_front());
                    assert_eq!(a.map(|x| x.pkt), b.map(|x| x.pkt));
                }
                _ => repack(&f, &mut copy),
            }
            assert_eq!(f.len(), d.len());
            assert_eq!(f.front().map(|x| x.pkt), d.front().map(|x| x.pkt));
            let got: Vec<u32> = f.iter().map(|x| x.pkt).collect();
            let want: Vec<u32> = d.iter().map(|x| x.pkt).collect();
            assert_eq!(got, want);
            for (k, w) in want.iter().enumerate() {
                assert_eq!(f[k].pkt, *w);
            }
            let copied: Vec<u32> = (&copy).into_iter().map(|x| x.pkt).collect();
            let mut fresh = Fifo::default();
            repack(&copy, &mut fresh);
            let cloned: Vec<u32> = fresh.iter().map(|x| x.pkt).collect();
            assert_eq!(copied, cloned);
        }
        repack(&f, &mut copy);
        let copied: Vec<u32> = copy.iter().map(|x| x.pkt).collect();
        assert_eq!(copied, d.iter().map(|x| x.pkt).collect::<Vec<_>>());
    }
}
