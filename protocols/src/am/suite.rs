//! The benchmark suite (Liu & Culler's methodology): each benchmark is one
//! workload program written against [`Step`], run on any [`Platform`], and
//! reduced to the figure the papers print.

use super::{Handler, Platform, Run, Step};
use magic::{NodeId, Time};
use serde::Serialize;

/// Messages per measurement (enough that start and end effects vanish).
pub const MSGS: u64 = 200;

fn req(to: u32, handler: Handler) -> Step {
    Step::Request {
        to: NodeId(to),
        words: 4,
        handler,
    }
}

fn idle(p: &dyn Platform) -> Vec<Vec<Step>> {
    vec![Vec::new(); p.nodes() as usize]
}

/// One-to-two: node 0 sends to nodes 1 and 2 in turn; its time per send is
/// the send overhead (neither receiver can hold it back).
pub fn one_to_two(p: &dyn Platform, reply: bool) -> Result<f64, String> {
    let mut progs = idle(p);
    progs[0].push(Step::Mark);
    for i in 0..MSGS {
        let to = 1 + (i % 2) as u32;
        progs[0].push(if reply {
            Step::Reply {
                to: NodeId(to),
                words: 4,
            }
        } else {
            req(to, Handler::Nop)
        });
    }
    progs[0].push(Step::Mark);
    progs[1].push(Step::Wait { received: MSGS / 2 });
    progs[2].push(Step::Wait { received: MSGS / 2 });
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1) / MSGS as f64)
}

/// Two-to-one: nodes 1 and 2 send to node 0 as fast as they can; node 0's
/// time per message, once they flow, is the receive overhead.
pub fn two_to_one(p: &dyn Platform) -> Result<f64, String> {
    let mut progs = idle(p);
    for s in [1, 2] {
        progs[s] = (0..MSGS).map(|_| req(0, Handler::Nop)).collect();
    }
    progs[0] = vec![
        Step::Wait { received: 1 },
        Step::Mark,
        Step::Wait { received: 2 * MSGS },
        Step::Mark,
    ];
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1) / (2 * MSGS - 1) as f64)
}

/// One-to-one: node 0 sends to node 1 as fast as it can; time per message
/// at the receiver (the slower side bounds it).
pub fn one_to_one(p: &dyn Platform) -> Result<f64, String> {
    let mut progs = idle(p);
    progs[0] = (0..MSGS).map(|_| req(1, Handler::Nop)).collect();
    progs[1] = vec![
        Step::Wait { received: 1 },
        Step::Mark,
        Step::Wait { received: MSGS },
        Step::Mark,
    ];
    let r = p.run(&progs)?;
    Ok(r.between(1, 0, 1) / (MSGS - 1) as f64)
}

/// An empty poll: node 0 polls a quiet network.
pub fn poll_empty(p: &dyn Platform) -> Result<f64, String> {
    let mut progs = idle(p);
    progs[0].push(Step::Mark);
    progs[0].extend((0..MSGS).map(|_| Step::Poll));
    progs[0].push(Step::Mark);
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1) / MSGS as f64)
}

/// A poll that takes one message: node 0 asks node 1 for a reply, computes
/// until it is surely in, then polls once and takes it.
pub fn poll_one(p: &dyn Platform) -> Result<f64, String> {
    let settle = Time(300 * magic::time::TICKS_PER_US);
    let mut progs = idle(p);
    for _ in 0..MSGS {
        progs[0].extend([
            Step::Request {
                to: NodeId(1),
                words: 1,
                handler: Handler::Echo,
            },
            Step::Compute(settle),
            Step::Mark,
            Step::Poll,
            Step::Mark,
        ]);
    }
    progs[1].push(Step::Wait { received: MSGS });
    let r = p.run(&progs)?;
    let m = &r.marks[0];
    let total: u64 = m.chunks(2).map(|w| w[1].0 - w[0].0).sum();
    if r.received[0] != MSGS {
        return Err(format!(
            "poll_one: {} of {MSGS} replies taken by single polls",
            r.received[0]
        ));
    }
    Ok(Time(total).as_us() / MSGS as f64)
}

/// Round trip: node 0 sends a one-word request to `to`, whose handler
/// replies; node 0 waits for the reply before the next.
pub fn round_trip(p: &dyn Platform, to: u32) -> Result<f64, String> {
    let mut progs = idle(p);
    progs[0].push(Step::Mark);
    for i in 0..MSGS {
        progs[0].push(Step::Request {
            to: NodeId(to),
            words: 1,
            handler: Handler::Echo,
        });
        progs[0].push(Step::Wait { received: i + 1 });
    }
    progs[0].push(Step::Mark);
    progs[to as usize].push(Step::Wait { received: MSGS });
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1) / MSGS as f64)
}

/// Ring: every node sends to its right neighbour while taking what its left
/// neighbour sends; time per message.
pub fn ring(p: &dyn Platform) -> Result<f64, String> {
    let n = p.nodes();
    let mut progs = idle(p);
    for i in 0..n {
        let to = (i + 1) % n;
        let prog = &mut progs[i as usize];
        prog.push(Step::Mark);
        for _ in 0..MSGS {
            prog.push(req(to, Handler::Nop));
            prog.push(Step::Poll);
        }
        prog.push(Step::Wait { received: MSGS });
        prog.push(Step::Mark);
    }
    let r = p.run(&progs)?;
    let worst = (0..n).map(|i| r.between(i, 0, 1)).fold(0.0, f64::max);
    Ok(worst / MSGS as f64)
}

/// The LogP view of a platform (what `flashkit logp` prints).
#[derive(Clone, Debug, Serialize)]
pub struct LogP {
    pub platform: &'static str,
    pub send_overhead_us: f64,
    pub reply_overhead_us: f64,
    pub recv_overhead_us: f64,
    pub poll_empty_us: f64,
    pub poll_one_us: f64,
    pub round_trip_us: f64,
    pub ring_us: f64,
    pub bulk: Bulk,
}

pub fn logp(p: &dyn Platform) -> Result<LogP, String> {
    Ok(LogP {
        platform: p.name(),
        send_overhead_us: one_to_two(p, false)?,
        reply_overhead_us: one_to_two(p, true)?,
        recv_overhead_us: two_to_one(p)?,
        poll_empty_us: poll_empty(p)?,
        poll_one_us: poll_one(p)?,
        round_trip_us: round_trip(p, 1)?,
        ring_us: ring(p)?,
        bulk: bulk(p)?,
    })
}

/// Round trips from node 0 to every other node.
pub fn round_trips(p: &dyn Platform) -> Result<Vec<(u32, f64)>, String> {
    (1..p.nodes()).map(|d| Ok((d, round_trip(p, d)?))).collect()
}

/// A run's op table for a benchmark (for people reading where time went).
pub fn ops_of(p: &dyn Platform) -> Result<Run, String> {
    let mut progs = idle(p);
    progs[0] = vec![
        Step::Request {
            to: NodeId(1),
            words: 1,
            handler: Handler::Echo,
        },
        Step::Wait { received: 1 },
    ];
    progs[1] = vec![Step::Wait { received: 1 }];
    p.run(&progs)
}

/// Interrupt-driven reception: node 1 sends a message every `interval`;
/// node 0 computes and takes each by interrupt. Returns the processor time
/// node 0 loses per message, and the share of its time that is.
pub fn interrupt_load(p: &dyn Platform, interval: Time) -> Result<(f64, f64), String> {
    let n = MSGS / 4;
    let mut progs = idle(p);
    for _ in 0..n {
        progs[1].push(req(0, Handler::Nop));
        progs[1].push(Step::Compute(interval));
    }
    let span = Time(interval.0 * n);
    progs[0] = vec![
        Step::Mark,
        Step::Compute(span),
        Step::Wait { received: n },
        Step::Mark,
    ];
    let r = p.run(&progs)?;
    let lost: u64 = ["interrupt", "receive"]
        .iter()
        .filter_map(|op| r.ops.get(&(0, *op)))
        .map(|s| s.busy)
        .sum();
    let lost = Time(lost).as_us();
    Ok((lost / n as f64, lost / r.between(0, 0, 1)))
}

/// The processor time lost per message taken by interrupt.
pub fn interrupt_cost(p: &dyn Platform, interval: Time) -> Result<f64, String> {
    interrupt_load(p, interval).map(|x| x.0)
}

/// One benchmark's table, as the papers print it.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    pub benchmark: &'static str,
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "== {}", self.benchmark)?;
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r[i].len())
                    .chain([self.columns[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        writeln!(f, "{}", line(self.columns.clone()))?;
        for r in &self.rows {
            writeln!(f, "{}", line(r.iter().map(String::as_str).collect()))?;
        }
        Ok(())
    }
}

fn us(x: f64) -> String {
    format!("{x:.2}")
}

/// The benchmarks the suite knows, by name.
pub const BENCHMARKS: [&str; 11] = [
    "one-to-one",
    "one-to-two",
    "two-to-one",
    "round-trip",
    "ring",
    "poll",
    "traverse",
    "array-transfer",
    "two-to-one-segments",
    "swap",
    "operations",
];

/// Run one benchmark (by name) and tabulate it.
pub fn table(p: &dyn Platform, name: &str) -> Result<Table, String> {
    let t = |benchmark, columns: Vec<&'static str>, rows| Table {
        benchmark,
        columns,
        rows,
    };
    Ok(match name {
        "one-to-one" => t(
            "one-to-one",
            vec!["us per message"],
            vec![vec![us(one_to_one(p)?)]],
        ),
        "one-to-two" => t(
            "one-to-two",
            vec!["operation", "us per send"],
            vec![
                vec!["request".into(), us(one_to_two(p, false)?)],
                vec!["reply".into(), us(one_to_two(p, true)?)],
            ],
        ),
        "two-to-one" => t(
            "two-to-one",
            vec!["us per message received"],
            vec![vec![us(two_to_one(p)?)]],
        ),
        "round-trip" => {
            let n = p.nodes();
            let dests: Vec<u32> = [1, 3, 4, 15, 16, 63, 64, 255]
                .into_iter()
                .filter(|&d| d < n)
                .collect();
            let rows = dests
                .into_iter()
                .map(|d| Ok(vec![d.to_string(), us(round_trip(p, d)?)]))
                .collect::<Result<_, String>>()?;
            t("round-trip", vec!["to node", "us"], rows)
        }
        "ring" => t(
            "ring",
            vec!["nodes", "us per message"],
            vec![vec![p.nodes().to_string(), us(ring(p)?)]],
        ),
        "poll" => t(
            "poll",
            vec!["poll", "us"],
            vec![
                vec!["unsuccessful".into(), us(poll_empty(p)?)],
                vec!["one message".into(), us(poll_one(p)?)],
            ],
        ),
        "array-transfer" => array_table(p)?,
        "traverse" => t(
            "traverse",
            vec!["step (partner = node xor step)", "us per exchange"],
            traverse(p)?
                .into_iter()
                .map(|(i, x)| vec![i.to_string(), us(x)])
                .collect(),
        ),
        "two-to-one-segments" => {
            let rows = [256u32, 4096, 65536]
                .into_iter()
                .map(|b| {
                    Ok(vec![
                        b.to_string(),
                        us(two_to_one_segments(p, b, true)?),
                        us(two_to_one_segments(p, b, false)?),
                    ])
                })
                .collect::<Result<_, String>>()?;
            t(
                "two-to-one-segments",
                vec!["bytes per sender", "one segment us", "two segments us"],
                rows,
            )
        }
        "swap" => {
            let rows = [64u32, 1024, 16384]
                .into_iter()
                .map(|b| Ok(vec![b.to_string(), us(swap(p, b)?)]))
                .collect::<Result<_, String>>()?;
            t("swap", vec!["bytes each way", "us per swap"], rows)
        }
        "operations" => {
            let r = ops_of(p)?;
            let rows = r
                .ops
                .iter()
                .map(|((n, op), s)| {
                    vec![
                        n.to_string(),
                        op.to_string(),
                        s.calls.to_string(),
                        us(s.mean_us()),
                        s.ni_reads.to_string(),
                        s.ni_writes.to_string(),
                        s.instructions.to_string(),
                    ]
                })
                .collect();
            t(
                "operations (one round trip)",
                vec![
                    "node",
                    "operation",
                    "calls",
                    "mean us",
                    "ni reads",
                    "ni writes",
                    "instr",
                ],
                rows,
            )
        }
        other => {
            return Err(format!(
                "no benchmark '{other}' (known: {})",
                BENCHMARKS.join(", ")
            ))
        }
    })
}

/// Interrupt-driven reception against the interval between messages, on
/// the stock kernel path and the fast one.
pub fn interrupt_table(stock: &dyn Platform, fast: &dyn Platform) -> Result<Table, String> {
    let rows = [5u64, 10, 20, 50, 100, 200]
        .into_iter()
        .map(|i| {
            let at = Time(i * magic::time::TICKS_PER_US);
            let (a, sa) = interrupt_load(stock, at)?;
            let (b, sb) = interrupt_load(fast, at)?;
            Ok(vec![
                i.to_string(),
                us(a),
                format!("{:.0}%", 100.0 * sa),
                us(b),
                format!("{:.0}%", 100.0 * sb),
            ])
        })
        .collect::<Result<_, String>>()?;
    Ok(Table {
        benchmark: "interrupt",
        columns: vec![
            "interval us",
            "stock us/msg",
            "stock time lost",
            "fast us/msg",
            "fast time lost",
        ],
        rows,
    })
}

/// Block sizes of the array-transfer benchmark.
pub const SIZES: [u32; 8] = [16, 64, 256, 1024, 4096, 16384, 65536, 262144];

/// Array transfer one-to-one: node 0 moves `bytes` to node 1 `k` times,
/// waiting for each block's acknowledgement (`blocking`) or issuing them
/// back to back; microseconds per block, from the first store to the
/// receiver's last completion (non-blocking) or the sender's last
/// acknowledgement (blocking).
pub fn array_transfer(
    p: &dyn Platform,
    bytes: u32,
    align: super::Align,
    blocking: bool,
) -> Result<f64, String> {
    let k: u64 = if bytes >= 65536 { 2 } else { 8 };
    let mut progs = idle(p);
    let store = Step::Store {
        to: NodeId(1),
        bytes,
        align,
    };
    progs[0].push(Step::Mark);
    for i in 0..k {
        progs[0].push(store);
        if blocking {
            progs[0].push(Step::Wait { received: i + 1 });
        }
    }
    progs[0].push(Step::Mark);
    progs[1] = vec![Step::Wait { received: k }, Step::Mark];
    let r = p.run(&progs)?;
    let start = r.marks[0][0];
    let end = if blocking {
        r.marks[0][1]
    } else {
        r.marks[1][0]
    };
    Ok(Time(end.0 - start.0).as_us() / k as f64)
}

/// A least-squares fit of T(x) = c + x / B.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bulk {
    pub startup_us: f64,
    pub bandwidth_mb_s: f64,
    /// The size at which half the asymptotic bandwidth is reached (c * B).
    pub n_half_bytes: f64,
}

pub fn fit(points: &[(f64, f64)]) -> Bulk {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |a, p| {
        (a.0 + (p.0 - mx) * (p.1 - my), a.1 + (p.0 - mx) * (p.0 - mx))
    });
    let slope = sxy / sxx; // microseconds per byte
    let c = my - slope * mx;
    let b = 1.0 / slope; // bytes per microsecond = MB/s
    Bulk {
        startup_us: c,
        bandwidth_mb_s: b,
        n_half_bytes: c * b,
    }
}

/// The bulk figures of a platform: non-blocking array transfer at the
/// best alignment, fitted over every size.
pub fn bulk(p: &dyn Platform) -> Result<Bulk, String> {
    let pts = SIZES
        .iter()
        .map(|&x| Ok((x as f64, array_transfer(p, x, super::Align::Double, false)?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(fit(&pts))
}

/// The array-transfer table: time per block by size, blocking and not,
/// at each alignment, and the fits.
pub fn array_table(p: &dyn Platform) -> Result<Table, String> {
    use super::Align;
    let mut rows = Vec::new();
    let cols = [
        (Align::Double, true),
        (Align::Byte, false),
        (Align::Word, false),
        (Align::Double, false),
    ];
    let mut pts: Vec<Vec<(f64, f64)>> = vec![Vec::new(); cols.len()];
    for &x in &SIZES {
        let mut row = vec![x.to_string()];
        for (i, &(a, b)) in cols.iter().enumerate() {
            let t = array_transfer(p, x, a, b)?;
            pts[i].push((x as f64, t));
            row.push(us(t));
        }
        rows.push(row);
    }
    let fits: Vec<Bulk> = pts.iter().map(|v| fit(v)).collect();
    rows.push(
        std::iter::once("start-up us".to_string())
            .chain(fits.iter().map(|f| us(f.startup_us)))
            .collect(),
    );
    rows.push(
        std::iter::once("MB/s".to_string())
            .chain(fits.iter().map(|f| format!("{:.1}", f.bandwidth_mb_s)))
            .collect(),
    );
    rows.push(
        std::iter::once("n1/2 bytes".to_string())
            .chain(fits.iter().map(|f| format!("{:.0}", f.n_half_bytes)))
            .collect(),
    );
    Ok(Table {
        benchmark: "array-transfer",
        columns: vec![
            "bytes",
            "blocking us",
            "byte-aligned us",
            "word-aligned us",
            "double-aligned us",
        ],
        rows,
    })
}

/// Traverse: in step `i`, node `j` exchanges messages with node `j xor i`
/// (a request answered by a reply, each way); the time per exchange by
/// step shows the network's levels.
pub fn traverse(p: &dyn Platform) -> Result<Vec<(u32, f64)>, String> {
    let n = p.nodes();
    let rounds = 20u64;
    let steps: Vec<u32> = (0..)
        .map(|k| 1u32 << k)
        .take_while(|&s| s < n)
        .chain([n - 1])
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut progs = idle(p);
    for j in 0..n {
        let mut got = 0;
        let prog = &mut progs[j as usize];
        for &i in &steps {
            let partner = j ^ i;
            if partner >= n {
                prog.extend([Step::Mark, Step::Mark]);
                continue;
            }
            prog.push(Step::Mark);
            for _ in 0..rounds {
                prog.push(Step::Request {
                    to: NodeId(partner),
                    words: 1,
                    handler: Handler::Echo,
                });
                // The partner's request and the reply to ours.
                got += 2;
                prog.push(Step::Wait { received: got });
            }
            prog.push(Step::Mark);
        }
    }
    let r = p.run(&progs)?;
    Ok(steps
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let t = (0..n)
                .filter(|&j| (j ^ i) < n)
                .map(|j| r.between(j, 2 * k, 2 * k + 1))
                .fold(0.0, f64::max);
            (i, t / rounds as f64)
        })
        .collect())
}

/// Swap: nodes 0 and 1 exchange blocks of `bytes` at once; time per swap.
pub fn swap(p: &dyn Platform, bytes: u32) -> Result<f64, String> {
    let k = 4u64;
    let mut progs = idle(p);
    for (me, other) in [(0u32, 1u32), (1, 0)] {
        let prog = &mut progs[me as usize];
        prog.push(Step::Mark);
        for i in 0..k {
            prog.push(Step::Store {
                to: NodeId(other),
                bytes,
                align: super::Align::Double,
            });
            // The partner's block and the acknowledgement of ours.
            prog.push(Step::Wait {
                received: 2 * (i + 1),
            });
        }
        prog.push(Step::Mark);
    }
    let r = p.run(&progs)?;
    Ok(r.between(0, 0, 1).max(r.between(1, 0, 1)) / k as f64)
}

/// Two-to-one array transfer: nodes 1 and 2 each send node 0 a block of
/// `bytes`, into one segment they share or into a segment each, and wait
/// for its acknowledgement; microseconds per round.
pub fn two_to_one_segments(p: &dyn Platform, bytes: u32, shared: bool) -> Result<f64, String> {
    let k = 4u64;
    let mut progs = idle(p);
    for s in [1usize, 2] {
        let prog = &mut progs[s];
        prog.push(Step::Mark);
        for i in 0..k {
            prog.push(if shared {
                Step::StoreShared {
                    to: NodeId(0),
                    bytes,
                    align: super::Align::Double,
                    segment: 1,
                    total: 2 * bytes,
                }
            } else {
                Step::Store {
                    to: NodeId(0),
                    bytes,
                    align: super::Align::Double,
                }
            });
            prog.push(Step::Wait { received: i + 1 });
        }
        prog.push(Step::Mark);
    }
    let r = p.run(&progs)?;
    Ok(r.between(1, 0, 1).max(r.between(2, 0, 1)) / k as f64)
}
