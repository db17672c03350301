//! The SP's bulk times as the sums of their parts: the blocking stores and
//! gets of the bandwidth benchmark, and its pipelined asynchronous stores
//! at 64 B, 1 KB, 4 KB, 8 KB and 16 KB, each the sum of steps named on the SP's
//! sheets (`[costs.sp]`: the layer's instructions at 66 MHz; `[network.sp]`:
//! the adapters and the switch) and of waiting the steps bound: a poll
//! that finds an arrival ends up to one empty poll after it, and a packet
//! that comes while the receiver still takes the one before waits for it.
//!
//! docs/sp-bulk.md shows these sums; `FLASHKIT_BLESS=1` writes its tables
//! again from this file.

use magic::ni::sp::HEADER_BYTES;
use magic::time::{TICKS_PER_SP_CYCLE, TICKS_PER_US};
use protocols::am::sp::{Sp, CHUNK_PACKETS, PACKET_DATA};
use protocols::am::{suite, Platform};

/// A time in ticks at `per_us` bytes a microsecond, rounded up as the
/// adapter model rounds it.
fn at_rate(bytes: u64, per_us: u64) -> u64 {
    (bytes * TICKS_PER_US).div_ceil(per_us)
}

fn us(ticks: u64) -> f64 {
    ticks as f64 / TICKS_PER_US as f64
}

/// A block's chunks, each the data bytes of its packets: chunks of at most
/// 36 packets, packets of at most 224 bytes.
fn chunks(bytes: u32) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    let mut left = bytes.max(1);
    while left > 0 {
        let mut c = left.min(PACKET_DATA * CHUNK_PACKETS);
        left -= c;
        let mut packets = Vec::new();
        while c > 0 {
            let d = c.min(PACKET_DATA);
            c -= d;
            packets.push(d as u64);
        }
        out.push(packets);
    }
    out
}

/// The steps of the SP's bulk paths, in ticks, each from the sheets'
/// entries its documentation names.
struct Steps<'a>(&'a Sp);

impl Steps<'_> {
    fn cycles(&self, n: u64) -> u64 {
        n * TICKS_PER_SP_CYCLE
    }
    /// `mc_access`: one MicroChannel access of the host.
    fn mc(&self) -> u64 {
        self.0.hw.mc_access.0
    }
    /// `mc_bytes_per_us`: a packet's DMA between host memory and adapter.
    fn dma(&self, data: u64) -> u64 {
        at_rate(HEADER_BYTES + data, self.0.hw.mc_bytes_per_us)
    }
    /// `switch_bytes_per_us`: a packet on its sender's link.
    fn wire(&self, data: u64) -> u64 {
        at_rate(HEADER_BYTES + data, self.0.hw.switch_bytes_per_us)
    }
    /// `lengths_per_access`: packets whose lengths one access writes.
    fn group(&self) -> u64 {
        self.0.costs.lengths_per_access
    }
    /// `bulk_packet` a packet, and one `mc_access` a group of lengths: a
    /// chunk of `packets` issued.
    fn issue(&self, packets: usize) -> u64 {
        let n = packets as u64;
        self.cycles(self.0.costs.bulk_packet * n) + n.div_ceil(self.group()) * self.mc()
    }
    /// The chunk's first group of packets issued, after which the adapter
    /// may send them.
    fn first_group(&self, packets: usize) -> u64 {
        self.issue((packets as u64).min(self.group()) as usize)
    }
    /// `adapter_latency` and the packet's DMA: the sending adapter puts it
    /// on the link.
    fn adapter_out(&self, data: u64) -> u64 {
        self.0.hw.adapter_latency.0 + self.dma(data)
    }
    /// `adapter_per_packet` and the DMA: the time an adapter's side is busy
    /// with a packet.
    fn occupancy(&self, data: u64) -> u64 {
        self.0.hw.adapter_per_packet.0 + self.dma(data)
    }
    /// `switch_latency`, `adapter_latency` and the DMA into the receive
    /// FIFO, once the packet is off the link.
    fn to_fifo(&self, data: u64) -> u64 {
        self.0.hw.switch_latency.0 + self.0.hw.adapter_latency.0 + self.dma(data)
    }
    /// `bulk_take`: the receiver copies a packet out of its FIFO.
    fn take(&self) -> u64 {
        self.cycles(self.0.costs.bulk_take)
    }
    /// `control` and one `mc_access`: a chunk's ack sent.
    fn ack(&self) -> u64 {
        self.cycles(self.0.costs.control) + self.mc()
    }
    /// An ack's way: both adapters, the DMAs, the link and the switch.
    fn ack_trip(&self) -> u64 {
        self.adapter_out(0) + self.wire(0) + self.to_fifo(0)
    }
    /// `control`: the sender takes an ack.
    fn take_ack(&self) -> u64 {
        self.cycles(self.0.costs.control)
    }
    /// `poll`: an empty poll.
    fn poll(&self) -> u64 {
        self.cycles(self.0.costs.poll)
    }
    /// A lazy pop of the receive FIFO (`mc_access`) on the take whose
    /// count, from 1, is a multiple of `pop_every`.
    fn pop(&self, taken: u64) -> u64 {
        if taken.is_multiple_of(self.0.costs.pop_every) {
            self.mc()
        } else {
            0
        }
    }
    /// Every packet of a block on the link.
    fn link(&self, bytes: u32) -> u64 {
        chunks(bytes).iter().flatten().map(|&d| self.wire(d)).sum()
    }
}

/// One step of a breakdown: what it is, the sheet entries it is made of,
/// its microseconds.
#[derive(Clone, Debug)]
struct Row {
    what: &'static str,
    sheet: &'static str,
    us: f64,
}

fn row(what: &'static str, sheet: &'static str, ticks: u64) -> Row {
    Row {
        what,
        sheet,
        us: us(ticks),
    }
}

/// A time as its steps, and the most waiting they leave out
/// (microseconds).
struct Sum {
    rows: Vec<Row>,
    wait: f64,
}

impl Sum {
    fn steps(&self) -> f64 {
        self.rows.iter().map(|r| r.us).sum()
    }

    /// `got` is the steps plus waiting within the bound.
    fn holds(&self, what: &str, bytes: u32, got: f64) {
        let (steps, eps) = (self.steps(), 1e-6);
        assert!(
            got >= steps - eps && got <= steps + self.wait + eps,
            "{what} of {bytes} B: {got:.3} us, its steps {steps:.3} us and at most {:.3} of waiting",
            self.wait
        );
    }
}

/// The last packet's way once it is off the link: through the switch and
/// the receiving adapter (which may still be busy with the packet before,
/// `prev`), taken, its chunk acknowledged, the ack's way back and its take
/// by the sender; and the most waiting on that way: the receiver's poll
/// (or its take of the packet before, when the two come closer than a
/// take), and the sender's poll (or, when the block has `acks` > 1, its
/// take of the chunk before's ack).
fn tail(
    s: &Steps,
    prev: Option<u64>,
    last: u64,
    acks: usize,
) -> (Vec<(&'static str, &'static str, u64)>, u64) {
    let busy = prev.map_or(0, |p| s.occupancy(p).saturating_sub(s.wire(last)));
    // The receive FIFO gets the two packets this far apart.
    let gap = prev.map_or(u64::MAX, |p| {
        (s.wire(last).max(s.occupancy(p)) + s.dma(last)).saturating_sub(s.dma(p))
    });
    let behind = (s.take() + s.mc()).saturating_sub(gap);
    let ack_behind = if acks > 1 { s.take_ack() + s.mc() } else { 0 };
    let rows = vec![
        (
            "the receiving adapter still busy with the packet before",
            "adapter_per_packet, mc_bytes_per_us, switch_bytes_per_us",
            busy,
        ),
        (
            "switch and receiving adapter: the last packet into the receive FIFO",
            "switch_latency, adapter_latency, mc_bytes_per_us",
            s.to_fifo(last),
        ),
        ("the receiver takes it", "bulk_take", s.take()),
        (
            "the receiver acknowledges the chunk",
            "control, mc_access",
            s.ack(),
        ),
        (
            "the ack's way back",
            "adapter_latency, mc_bytes_per_us, switch_bytes_per_us, switch_latency",
            s.ack_trip(),
        ),
        ("the sender takes the ack", "control", s.take_ack()),
    ];
    (rows, 2 * s.poll() + behind + ack_behind)
}

/// The repetitions the blocking benchmark averages.
fn repetitions(bytes: u32) -> u64 {
    (suite::STREAM / bytes).clamp(1, 8) as u64
}

/// The last packet and the one before it.
fn last_two(ch: &[Vec<u64>]) -> (Option<u64>, u64) {
    let all: Vec<u64> = ch.iter().flatten().copied().collect();
    let n = all.len();
    (n.checked_sub(2).map(|i| all[i]), all[n - 1])
}

/// A blocking store of `bytes`, as the benchmark repeats it (the lazy pops
/// averaged). The link is busy from the first packet to the last
/// (`the_link_is_the_slowest_stage`), so the store is the first chunk's
/// issue (its first group of lengths), its way onto the link, every packet
/// on the link, and the last packet's way with its chunk's ack back.
fn blocking_store(p: &Sp, bytes: u32) -> Sum {
    let s = Steps(p);
    let ch = chunks(bytes);
    let packets = ch.iter().map(Vec::len).sum::<usize>() as u64;
    let (prev, last) = last_two(&ch);
    let k = repetitions(bytes);
    let pops: u64 = (1..=k)
        .map(|i| s.pop(i * packets) + s.pop(i * ch.len() as u64))
        .sum();
    let (tail, wait) = tail(&s, prev, last, ch.len());
    let mut rows = data_rows(&s, &ch, bytes).to_vec();
    rows.extend(tail.into_iter().map(|(w, sh, t)| row(w, sh, t)));
    rows.push(pops_row(pops, k));
    Sum {
        rows,
        wait: us(wait),
    }
}

/// The rows every bulk transfer of `bytes` in chunks `ch` begins its data
/// with: the first chunk's issue, its first packet onto the link, and the
/// link carrying every packet.
fn data_rows(s: &Steps<'_>, ch: &[Vec<u64>], bytes: u32) -> [Row; 3] {
    [
        row(
            "issue: the first group of packets copied and flushed, their lengths written",
            "bulk_packet, lengths_per_access, mc_access",
            s.first_group(ch[0].len()),
        ),
        row(
            "the sending adapter puts the first packet on the link",
            "adapter_latency, mc_bytes_per_us",
            s.adapter_out(ch[0][0]),
        ),
        row(
            "the link: every packet with its 32-byte header",
            "switch_bytes_per_us",
            s.link(bytes),
        ),
    ]
}

/// The lazy pops of the receive FIFOs over `k` repetitions, as their mean.
fn pops_row(pops: u64, k: u64) -> Row {
    Row {
        what: "lazy pops of the receive FIFOs on the way (mean)",
        sheet: "pop_every, mc_access",
        us: us(pops) / k as f64,
    }
}

/// A blocking get of `bytes`: the one-word request and its way, the owner
/// taking it and storing the block back, the requester taking the last
/// packet and acknowledging its chunk (the get returns after both).
fn blocking_get(p: &Sp, bytes: u32) -> Sum {
    let s = Steps(p);
    let c = p.costs;
    let ch = chunks(bytes);
    let packets = ch.iter().map(Vec::len).sum::<usize>() as u64;
    let (prev, last) = last_two(&ch);
    let k = repetitions(bytes);
    // The owner takes a request and then the chunks' acks of each get;
    // the requester, the packets.
    let acks = ch.len() as u64;
    let pops: u64 = (1..=k)
        .map(|i| s.pop((i - 1) * (1 + acks) + 1) + s.pop(i * packets))
        .sum();
    // No ack comes back to the requester: its tail ends at its take.
    let (tail, wait) = tail(&s, prev, last, 1);
    let mut rows = vec![
        row(
            "the request of one word, its length written",
            "request, request_word, mc_access",
            s.cycles(c.request + c.request_word) + s.mc(),
        ),
        row(
            "the request's way",
            "adapter_latency, mc_bytes_per_us, switch_bytes_per_us, switch_latency",
            s.adapter_out(4) + s.wire(4) + s.to_fifo(4),
        ),
        row("the owner takes it", "per_message", s.cycles(c.per_message)),
    ];
    rows.extend(data_rows(&s, &ch, bytes));
    // The requester's take ends the get, with its ack sent in the same
    // call; nothing comes back.
    rows.extend(tail.into_iter().take(4).map(|(w, sh, t)| row(w, sh, t)));
    rows.push(pops_row(pops, k));
    // The owner's poll finds the request; the requester's finds the data.
    Sum {
        rows,
        wait: us(wait),
    }
}

#[test]
fn every_blocking_store_and_get_is_the_sum_of_its_steps() {
    let p = Sp::new(2);
    for &x in &suite::BW_SIZES {
        let got = suite::blocking_op(&p, x, false).unwrap();
        blocking_store(&p, x).holds("blocking store", x, got);
        let got = suite::blocking_op(&p, x, true).unwrap();
        blocking_get(&p, x).holds("blocking get", x, got);
    }
}

/// The pipelined benchmark's program: `bytes` at a time, back to back, 1
/// MB in all, timed until every store is acknowledged (as
/// [`suite::pipelined`] runs it).
fn pipelined_run(p: &Sp, bytes: u32) -> (f64, u64) {
    use magic::NodeId;
    use protocols::am::{Align, Step};
    let k = suite::STREAM.div_ceil(bytes) as u64;
    let mut progs = vec![Vec::new(); p.nodes() as usize];
    progs[0].push(Step::Mark);
    progs[0].extend((0..k).map(|_| Step::Store {
        to: NodeId(1),
        bytes,
        align: Align::Double,
    }));
    progs[0].extend([Step::Wait { received: k }, Step::Mark]);
    progs[1] = vec![Step::Wait { received: k }];
    let r = p.run(&progs).unwrap();
    let t = r.between(0, 0, 1).unwrap();
    assert_eq!(
        suite::STREAM as f64 / t,
        suite::pipelined(p, bytes).unwrap()
    );
    (t, r.ops[&(0, "poll")].calls)
}

/// Pipelined asynchronous stores of `bytes`, 1 MB in all, the whole run.
///
/// - One chunk or less, the host the slowest stage (64 B): the sender's
///   own time, every call's issue and every ack it takes, its lazy pops
///   and its polls (`polls`, counted in the run: each time the request
///   window is full, and at the end).
/// - One chunk or less, the link the slowest stage (1 KB, 4 KB): the link
///   is busy from the first packet to the last; the first store's issue
///   before it, the last packet's way and its ack after it.
/// - Above one chunk (16 KB: chunks of 8064, 8064 and 256 bytes): a
///   store's first chunk waits for the ack of the chunk two before it, the
///   previous store's second, and only the small third chunk goes on the
///   link meanwhile: each store after the first adds that ack's way and
///   the issue of its first chunk's first group to the link's time.
fn pipelined(p: &Sp, bytes: u32, polls: u64) -> Sum {
    let s = Steps(p);
    let c = p.costs;
    let k = suite::STREAM.div_ceil(bytes) as u64;
    let ch = chunks(bytes);
    let n = ch.len();
    let packets = ch.iter().map(Vec::len).sum::<usize>() as u64;
    let per_store = s.link(bytes);
    if n == 1 && s.issue(ch[0].len()) + s.take_ack() >= per_store {
        return Sum {
            rows: vec![
                row(
                    "every store's issue",
                    "bulk_packet, mc_access",
                    k * s.issue(ch[0].len()),
                ),
                row("every store's ack taken", "control", k * s.take_ack()),
                row(
                    "lazy pops of the sender's receive FIFO",
                    "pop_every, mc_access",
                    k / c.pop_every * s.mc(),
                ),
                row(
                    "polls: while the request window is full, and for the last acks",
                    "poll",
                    polls * s.poll(),
                ),
            ],
            wait: 0.0,
        };
    }
    let (prev, last) = last_two(&ch);
    let (tail, mut wait) = tail(&s, prev, last, n);
    // The takes on the path, counted from 1 at each end: the last packet
    // and the last ack; and for each wait for chunk N-2, the packet and
    // the ack that end it (the previous store's second-to-last chunk's).
    let mut pops = s.pop(k * packets) + s.pop(k * n as u64);
    let mut rows = Vec::new();
    if n == 1 {
        rows.push(row(
            "the link: every packet of every store",
            "switch_bytes_per_us",
            k * per_store,
        ));
    } else {
        let waits = k - 1;
        let small = &ch[n - 1];
        let on_link: u64 = small.iter().map(|&d| s.wire(d)).sum();
        let end = *ch[n - 2].last().unwrap();
        for j in 1..=waits {
            pops += s.pop((j - 1) * packets + packets - small.len() as u64);
            pops += s.pop((j - 1) * n as u64 + n as u64 - 1);
        }
        rows.extend([
            row(
                "the link: every packet, but the small last chunks sent during a wait",
                "switch_bytes_per_us",
                k * per_store - waits * on_link,
            ),
            row(
                "each later store waits for chunk N-2's ack: its last packet's way, \
                 its take, the ack, the ack's way and take",
                "switch_latency, adapter_latency, mc_bytes_per_us, bulk_take, control, mc_access",
                waits * (s.to_fifo(end) + s.take() + s.ack() + s.ack_trip() + s.take_ack()),
            ),
            row(
                "... then issues its first chunk's first group, which the sending adapter puts on the link",
                "bulk_packet, lengths_per_access, mc_access, adapter_latency, mc_bytes_per_us",
                waits * (s.first_group(ch[0].len()) + s.adapter_out(ch[0][0])),
            ),
        ]);
        // Each wait ends at a poll of the receiver and one of the sender.
        wait += waits * 2 * s.poll();
    }
    // Once a run: the first store's issue and way onto the link, and the
    // last packet's way and its ack's.
    let once = s.first_group(ch[0].len())
        + s.adapter_out(ch[0][0])
        + tail.iter().map(|r| r.2).sum::<u64>();
    rows.extend([
        row(
            "once: the first store's issue and adapter; the last packet's way, take and ack, the ack's way and take",
            "bulk_packet, lengths_per_access, mc_access, adapter_latency, adapter_per_packet, \
             mc_bytes_per_us, switch_bytes_per_us, switch_latency, bulk_take, control",
            once,
        ),
        row(
            "lazy pops of the receive FIFOs on the way",
            "pop_every, mc_access",
            pops,
        ),
    ]);
    Sum {
        rows,
        wait: us(wait),
    }
}

/// The sizes the sums are shown at: the issue's four, and 8 KB, just
/// above one chunk, where the pipelined curve drops deepest.
const SHOWN: [u32; 5] = [64, 1024, 4096, 8192, 16384];

#[test]
fn the_pipelined_stores_are_the_sums_of_their_steps() {
    let p = Sp::new(2);
    for &x in &SHOWN {
        let (t, polls) = pipelined_run(&p, x);
        pipelined(&p, x, polls).holds("pipelined stores", x, t);
    }
}

/// The sums hold for any group of lengths a MicroChannel access writes
/// (the default 4, one, or a whole chunk's once it is composed): the
/// adapter starts on a chunk once its first group is issued.
#[test]
fn the_sums_hold_for_any_group_of_lengths() {
    for group in [1, 12, 36] {
        let mut p = Sp::new(2);
        p.costs.lengths_per_access = group;
        for &x in &SHOWN {
            let got = suite::blocking_op(&p, x, false).unwrap();
            blocking_store(&p, x).holds("blocking store", x, got);
            let (t, polls) = pipelined_run(&p, x);
            pipelined(&p, x, polls).holds("pipelined stores", x, t);
        }
    }
}

/// The host's issue of a full chunk is the paper's ~175 us, in the ledger
/// of a store of one chunk: 36 packets' `bulk_packet` and an access a
/// group of `lengths_per_access` lengths.
#[test]
fn a_chunk_costs_the_host_about_175_us() {
    use magic::NodeId;
    use protocols::am::{Align, Step};
    let p = Sp::new(2);
    let s = Steps(&p);
    let chunk = PACKET_DATA * CHUNK_PACKETS;
    let progs = vec![
        vec![
            Step::Store {
                to: NodeId(1),
                bytes: chunk,
                align: Align::Double,
            },
            Step::Wait { received: 1 },
        ],
        vec![Step::Wait { received: 1 }],
    ];
    let r = p.run(&progs).unwrap();
    let store = r.ops[&(0, "store")];
    let groups = (CHUNK_PACKETS as u64).div_ceil(s.group());
    assert_eq!((store.calls, store.ni_writes), (1, groups));
    assert_eq!(store.busy, s.issue(CHUNK_PACKETS as usize));
    let got = us(store.busy);
    assert!((got - 175.0).abs() < 1.0, "{got:.2} us a chunk");
}

/// What the sums take for granted, from the sheets: the link is the
/// slowest stage of a stream of full packets, and two chunks of a block in
/// flight keep it busy.
#[test]
fn the_link_is_the_slowest_stage() {
    let p = Sp::new(2);
    let s = Steps(&p);
    let full = PACKET_DATA as u64;
    let wire = s.wire(full);
    // Each adapter side, the receiver (its poll, take and a pop) and the
    // host composing a chunk's packets keep up with the link.
    assert!(s.occupancy(full) < wire);
    assert!(s.poll() + s.take() + s.mc() < wire);
    assert!(s.cycles(p.costs.bulk_packet) + s.mc() < wire);
    // Chunk N of a block waits for chunk N-2's ack while chunk N-1 is on
    // the link: the ack's way and takes, and chunk N's issue and adapter,
    // fit in a chunk's time on the link (the polls that find the packet
    // and the ack, and a pop at each end, at most).
    let chunk = CHUNK_PACKETS as usize;
    let ack = s.to_fifo(full) + s.take() + s.ack() + s.ack_trip() + s.take_ack();
    let next = s.first_group(chunk) + s.adapter_out(full);
    let slack = 2 * s.poll() + 2 * s.mc();
    assert!(
        ack + next + slack < chunk as u64 * wire,
        "{:.1} us against {:.1}",
        us(ack + next + slack),
        us(chunk as u64 * wire)
    );
    // Up to one chunk, the request window never holds the pipelined stores
    // back: a store's ack is in before the window needs it.
    for x in [1024u32, 4096] {
        let packets = chunks(x)[0].len();
        let in_window = (p.costs.window_req / packets) as u64;
        let back = s.adapter_out(full) + ack + s.issue(packets) + slack;
        assert!(back < (in_window - 1) * s.link(x), "{x} B");
    }
}

/// A table of breakdowns side by side, one column a size: each step's
/// microseconds (per store, `per[i]` stores to a column), the steps' sum,
/// the waiting (what the benchmark measured beyond the steps, with its
/// bound), the benchmark's time and its bandwidth.
fn table(sums: &[(u32, Sum, f64, u64)]) -> String {
    let mut steps: Vec<(&str, &str)> = Vec::new();
    for (_, sum, _, _) in sums {
        for r in &sum.rows {
            if !steps.contains(&(r.what, r.sheet)) {
                steps.push((r.what, r.sheet));
            }
        }
    }
    let size = |x: u32| {
        if x >= 1024 {
            format!("{} KB", x / 1024)
        } else {
            format!("{x} B")
        }
    };
    let mut out = String::from("| step | sheet entries |");
    for (x, ..) in sums {
        out.push_str(&format!(" {} |", size(*x)));
    }
    out.push_str(&format!("\n|---|---|{}\n", "---:|".repeat(sums.len())));
    let line = |out: &mut String, name: &str, sheet: &str, cells: Vec<String>| {
        out.push_str(&format!("| {name} | {sheet} |"));
        for c in cells {
            out.push_str(&format!(" {c} |"));
        }
        out.push('\n');
    };
    for (what, sheet) in steps {
        let cells = sums
            .iter()
            .map(|(_, sum, _, per)| {
                sum.rows
                    .iter()
                    .find(|r| r.what == what && r.sheet == sheet)
                    .map_or("".to_string(), |r| format!("{:.2}", r.us / *per as f64))
            })
            .collect();
        line(
            &mut out,
            what,
            &format!("`{}`", sheet.replace(", ", "`, `")),
            cells,
        );
    }
    let each = |f: &dyn Fn(&Sum, f64, f64) -> String| -> Vec<String> {
        sums.iter()
            .map(|(_, sum, got, per)| f(sum, *got, *per as f64))
            .collect()
    };
    line(
        &mut out,
        "**the steps**",
        "",
        each(&|s, _, per| format!("**{:.2}**", s.steps() / per)),
    );
    line(
        &mut out,
        "waiting: the polls that find an arrival, a take behind another (at most)",
        "`poll`, `bulk_take`, `control`, `mc_access`",
        each(&|s, got, per| format!("{:.2} ({:.2})", (got - s.steps()) / per, s.wait / per)),
    );
    line(
        &mut out,
        "**the benchmark's time**",
        "",
        each(&|_, got, per| format!("**{:.2}**", got / per)),
    );
    let mbs = sums
        .iter()
        .map(|(x, _, got, per)| format!("{:.2}", *x as f64 * *per as f64 / got))
        .collect();
    line(&mut out, "MB/s", "", mbs);
    out
}

/// docs/sp-bulk.md's tables: the blocking store and get, and the pipelined
/// stores, at the sizes shown.
fn tables() -> String {
    let p = Sp::new(2);
    let blocking = |get: bool| {
        SHOWN
            .iter()
            .map(|&x| {
                let got = suite::blocking_op(&p, x, get).unwrap();
                let sum = if get {
                    blocking_get(&p, x)
                } else {
                    blocking_store(&p, x)
                };
                (x, sum, got, 1)
            })
            .collect::<Vec<_>>()
    };
    let pipe: Vec<_> = SHOWN
        .iter()
        .map(|&x| {
            let (t, polls) = pipelined_run(&p, x);
            let k = suite::STREAM.div_ceil(x) as u64;
            (x, pipelined(&p, x, polls), t, k)
        })
        .collect();
    format!(
        "A blocking store, microseconds:\n\n{}\nA blocking get, microseconds:\n\n{}\n\
         Pipelined asynchronous stores, 1 MB in all, microseconds per store \
         (each step's time over the run, divided by the stores):\n\n{}",
        table(&blocking(false)),
        table(&blocking(true)),
        table(&pipe)
    )
}

/// docs/sp-bulk.md shows the sums as the model has them.
#[test]
fn the_documented_sums_are_the_models() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/sp-bulk.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (begin, end) = ("<!-- sums: begin -->\n", "<!-- sums: end -->");
    let (Some(a), Some(b)) = (text.find(begin), text.find(end)) else {
        panic!("docs/sp-bulk.md has no {begin:?} ... {end:?} section");
    };
    let want = tables();
    let got = &text[a + begin.len()..b];
    if got != want && std::env::var_os("FLASHKIT_BLESS").is_some() {
        let new = format!("{}{want}{}", &text[..a + begin.len()], &text[b..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert!(
        got == want,
        "docs/sp-bulk.md's sums are not the model's: run FLASHKIT_BLESS=1 cargo test -p protocols --test protocols am_sp_bulk"
    );
}
