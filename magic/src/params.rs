//! Machine parameters: one set, FLASH's published values by default.
//!
//! Every timing figure of the hardware model is here, in 10 ns system cycles,
//! so a study changes a parameter rather than a constant in the code.

use crate::error::OutOfRange;
use crate::time::Cycles;
use serde::{Deserialize, Serialize};

/// The inbox's input queues, named in scenarios and serialized as in
/// reports ([`InQueue::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InQueue {
    /// Network input, reply lane.
    NetReply = 0,
    /// Network input, request lane.
    NetRequest = 1,
    /// The software queue's head register.
    Software = 2,
    /// The processor interface (requests from the compute processor).
    Processor = 3,
}

impl InQueue {
    /// The queues in the default service order: replies, requests, the
    /// processor interface, then the software queue.
    pub const ALL: [InQueue; 4] = [
        InQueue::NetReply,
        InQueue::NetRequest,
        InQueue::Processor,
        InQueue::Software,
    ];

    /// The queue's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            InQueue::NetReply => "net-reply",
            InQueue::NetRequest => "net-request",
            InQueue::Software => "software",
            InQueue::Processor => "processor",
        }
    }
}

/// The most any cost may hold, in its own unit (instructions, bundles,
/// loads, stores, cycles of its clock): 1 000 000, one policy for every
/// sheet and table of costs (MAGIC's handlers, the processors' steps, the
/// comparison platforms' layers and network interfaces) and every latency
/// of the machine. Far above any real handler's or layer's, and small
/// enough that a run's counts and times stay far from their types' ends.
/// Re-exported as `magic::costs::MAX_COST`.
pub const MAX_COST: u64 = 1_000_000;

/// The largest latency a parameter may hold, in system cycles (1 000 000:
/// 10 ms, far beyond any study's need, small enough that no run's time
/// arithmetic comes near overflowing): the one cap of every cost,
/// [`MAX_COST`], in cycles.
pub const MAX_LATENCY: Cycles = Cycles(MAX_COST);

/// A MAGIC run's cycle budget unless set otherwise ([`MagicParams::budget`],
/// `Magic::set_budget`):
/// 10^11 cycles, 1,000 s of FLASH time. Every experiment, test and example
/// of the kit ends far inside it: the longest test runs 3.1 x 10^7 cycles,
/// the longest documented run (`pipeline` on 2 nodes at its most messages,
/// 2 x 2,000,000) 2.6 x 10^9, 39 times less. What it bounds is a run that
/// would not end: a handler rescheduling itself forever stops here.
pub const DEFAULT_BUDGET: Cycles = Cycles(100_000_000_000);

/// The largest cycle budget a run may be given (10^12 cycles, 10,000 s of
/// FLASH time): with every node busy all the way, the ledger's sums over
/// 4096 nodes stay far inside its counters.
pub const MAX_BUDGET: Cycles = Cycles(1_000_000_000_000);

/// Why a set of machine parameters cannot describe a machine: the field
/// that is out of its documented range, what it may hold and what it held.
pub type ParamError = OutOfRange;

/// Parameters of one FLASH node and the network. Times are in system
/// cycles of 10 ns; each field's default is in parentheses, its allowed
/// range after it ([`MagicParams::validate`] checks them all; every machine
/// build calls it).
///
/// It is a scenario's `[machine]` table: every field may be set, an omitted
/// one keeps FLASH's value, an unknown key is an error naming it.
///
/// ```
/// use magic::{Cycles, MagicParams};
/// let p: MagicParams = toml::from_str("net_latency = 30\npp_issue_width = 1").unwrap();
/// assert_eq!(p.net_latency, Cycles(30));
/// assert_eq!(p.mem_first_dword, Cycles(14));
/// assert!(p.validate().is_ok());
/// let e = toml::from_str::<MagicParams>("net_latnecy = 30").unwrap_err();
/// assert!(e.to_string().contains("unknown field `net_latnecy`"));
/// // Every default, as a complete table to edit:
/// let all = toml::to_string(&MagicParams::default()).unwrap();
/// assert!(all.contains("mem_first_dword = 14"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MagicParams {
    /// Memory: cycles from presenting an address to the first doubleword
    /// (14; from 0 to 1 000 000).
    pub mem_first_dword: Cycles,
    /// Memory: cycles from handing a buffer to the memory controller to its
    /// first doubleword reaching the memory's data bus (8; from 0 to
    /// 1 000 000). Not published:
    /// set from the start-up's network-and-queueing part (45 cycles), the
    /// one published figure that ends with a write in memory; with 8, the
    /// receiver's mechanisms give 45 (see docs/costs.md).
    pub mem_write_latency: Cycles,
    /// Processor-cache intervention: cycles until the line state is known
    /// (23; from 0 to 1 000 000).
    pub pc_state: Cycles,
    /// ... until the first data word of a dirty line (28; from `pc_state`
    /// to 1 000 000).
    pub pc_first_word: Cycles,
    /// ... until the whole dirty line has arrived (43; from `pc_first_word`
    /// to 1 000 000).
    pub pc_line: Cycles,
    /// Network link bandwidth in bytes per system cycle (4 = 400 MB/s; from
    /// 1 to 1024).
    pub link_bytes_per_cycle: u64,
    /// Header bytes of every packet on the wire (32; from 0 to 4096).
    pub header_bytes: u64,
    /// Network latency after a packet has left the link (22, the average of a
    /// small system of about three hops; from 0 to 1 000 000).
    pub net_latency: Cycles,
    /// Packets into a node share its one inbound port (true): a packet whose
    /// first byte reaches the port while another is still coming in waits
    /// for it, the network holding it meanwhile, so two senders into one
    /// node share its link's bandwidth. False gives every packet the port
    /// to itself (the engine benchmark's workload is defined so). A
    /// search that holds deliveries releases them itself, one at a time,
    /// and books no port.
    pub inbound_contention: bool,
    /// Outbox slots per lane waiting for the link (the packet on the wire holds
    /// none). A handler that sends into a full lane stalls the PP (2; from 1
    /// to 1024).
    pub outbox_slots: usize,
    /// Cache-line-sized data buffers per node (16; from 1 to 4096).
    pub data_buffers: usize,
    /// Entries the software queue's in-memory part can hold (1024; from 0,
    /// the head register alone, to 1 048 576).
    pub swq_capacity: usize,
    /// Inbox service order, highest priority first: each of the four queues
    /// once, by name (`net-reply`, `net-request`, `processor`, `software`).
    /// The default drains the
    /// network first (it must never back up), then serves the processor (its
    /// misses and commands must not wait behind a long operation), then the
    /// software queue, where long operations continue themselves (network
    /// reply, network request, processor, software).
    #[serde(deserialize_with = "four_queues")]
    pub inbox_priority: [InQueue; 4],
    /// Cycles from a message entering an input queue until the PP can start
    /// its handler (the inbox stage: decode, jump-table lookup). The stage
    /// works in parallel with the PP, so it adds latency, not occupancy (3;
    /// from 0 to 1 000 000).
    pub inbox_dispatch: Cycles,
    /// Cycles from a handler's send until the packet can go on the wire, the
    /// outbox stage (2; from 0 to 1 000 000).
    pub outbox_latency: Cycles,
    /// Cycles from the compute processor issuing a request (a miss) to its
    /// entering MAGIC's processor-interface queue (4; from 0 to 1 000 000).
    pub pi_in: Cycles,
    /// Cycles from MAGIC handing the processor interface a reply to the first
    /// word reaching the processor (6; from 0 to 1 000 000).
    pub pi_out: Cycles,
    /// Instructions the PP issues per cycle (2: dual issue; from 1 to 16).
    pub pp_issue_width: u32,
    /// MAGIC data cache: lines (direct mapped, 128 bytes each). A miss stalls
    /// the handler for a line read from memory (1024; a power of two from 1
    /// to 65 536).
    pub dcache_lines: usize,
    /// Bytes of memory per node (64 MB); addresses beyond are bad addresses
    /// (whole 128-byte lines, from one to 2^40 bytes, what an address can
    /// reach).
    pub mem_bytes: u64,
    /// The run's cycle budget: a run stops before an instant later than
    /// this, not clean, its halt naming this key (10^11 cycles, 1,000 s of
    /// FLASH time, [`DEFAULT_BUDGET`]; from 1 to 10^12, [`MAX_BUDGET`]). A
    /// setting of the run, not a property of the machine: nothing in the
    /// model reads it; the machine takes it when it is built
    /// (`Magic::set_budget` changes it after).
    pub budget: Cycles,
    /// Record timelines from the start (`Magic::trace`): an observation,
    /// not a property of the machine; nothing in the model reads it (off).
    /// Not part of a scenario's `[machine]` table: a run asks for it.
    #[serde(skip)]
    pub trace: bool,
}

impl Default for MagicParams {
    fn default() -> Self {
        MagicParams {
            mem_first_dword: Cycles(14),
            mem_write_latency: Cycles(8),
            pc_state: Cycles(23),
            pc_first_word: Cycles(28),
            pc_line: Cycles(43),
            link_bytes_per_cycle: 4,
            header_bytes: 32,
            net_latency: Cycles(22),
            inbound_contention: true,
            outbox_slots: 2,
            data_buffers: 16,
            swq_capacity: 1024,
            inbox_priority: InQueue::ALL,
            inbox_dispatch: Cycles(3),
            outbox_latency: Cycles(2),
            pi_in: Cycles(4),
            pi_out: Cycles(6),
            pp_issue_width: 2,
            dcache_lines: 1024,
            mem_bytes: 64 << 20,
            budget: DEFAULT_BUDGET,
            trace: false,
        }
    }
}

/// The inbox's order as a list of exactly four queues: a longer list is
/// refused, not cut to its first four.
fn four_queues<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[InQueue; 4], D::Error> {
    use serde::de::Error as _;
    let queues = Vec::<InQueue>::deserialize(d)?;
    let n = queues.len();
    queues
        .try_into()
        .map_err(|_| D::Error::invalid_length(n, &"the four queues, each once"))
}

impl MagicParams {
    /// A saved result's figure `field` of `cycles`, read back: within the
    /// run's budget, or an error naming it (a run that needs more stops
    /// and has no result, so no result holds more).
    ///
    /// ```
    /// use magic::MagicParams;
    /// let p = MagicParams::default();
    /// assert!(p.within_budget("total_cycles", 1563).is_ok());
    /// let e = p.within_budget("total_cycles", u64::MAX).unwrap_err();
    /// assert!(e.starts_with("total_cycles is 18446744073709551615, past the run's budget"));
    /// ```
    pub fn within_budget(&self, field: &str, cycles: u64) -> Result<(), String> {
        if cycles > self.budget.0 {
            return Err(format!(
                "{field} is {cycles}, past the run's budget of {} cycles",
                self.budget
            ));
        }
        Ok(())
    }

    /// The most link bytes per cycle.
    pub const MAX_LINK_BYTES_PER_CYCLE: u64 = 1024;
    /// The most header bytes.
    pub const MAX_HEADER_BYTES: u64 = 4096;
    /// The most outbox slots per lane.
    pub const MAX_OUTBOX_SLOTS: usize = 1024;
    /// The most data buffers per node.
    pub const MAX_DATA_BUFFERS: usize = 4096;
    /// The most software-queue entries.
    pub const MAX_SWQ_CAPACITY: usize = 1 << 20;
    /// The widest PP issue.
    pub const MAX_PP_ISSUE_WIDTH: u32 = 16;
    /// The most data-cache lines.
    pub const MAX_DCACHE_LINES: usize = 1 << 16;
    /// The least memory per node: one line.
    pub const MIN_MEM_BYTES: u64 = crate::ids::LINE_BYTES as u64;
    /// The most memory per node: what an address's offset can reach.
    pub const MAX_MEM_BYTES: u64 = 1 << crate::ids::PAddr::OFFSET_BITS;

    /// Cycles a packet with `payload` data bytes holds the link.
    #[inline]
    pub fn wire_cycles(&self, payload: u64) -> Cycles {
        self.link_cycles(self.header_bytes.saturating_add(payload))
    }

    /// Cycles `bytes` take on the link, whole. A rate that is a power of
    /// two (the default, 4) divides as a shift: this is on every send's
    /// path, where a division is a slow instruction.
    #[inline]
    pub(crate) fn link_cycles(&self, bytes: u64) -> Cycles {
        let per = self.link_bytes_per_cycle.max(1);
        if per.is_power_of_two() {
            Cycles((bytes >> per.trailing_zeros()) + (bytes & (per - 1) != 0) as u64)
        } else {
            Cycles(bytes.div_ceil(per))
        }
    }

    /// Checks every field against its documented range: the first one out
    /// of it is the error, named as the field is.
    ///
    /// ```
    /// use magic::{Cycles, MagicParams};
    /// let p = MagicParams { pi_out: Cycles(u64::MAX), ..MagicParams::default() };
    /// let e = p.validate().unwrap_err();
    /// assert_eq!(e.field, "pi_out");
    /// assert_eq!(e.to_string(), "pi_out must be from 0 to 1000000, got 18446744073709551615");
    /// ```
    pub fn validate(&self) -> Result<(), ParamError> {
        let max = MAX_LATENCY;
        let latency = |field, c: Cycles| OutOfRange::check(field, c, Cycles::ZERO, max);
        latency("mem_first_dword", self.mem_first_dword)?;
        latency("mem_write_latency", self.mem_write_latency)?;
        latency("pc_state", self.pc_state)?;
        // Each stage of a dirty line's answer comes after the one before:
        // a value out of order names the one it must follow.
        let after = |field, c: Cycles, before: &str, least: Cycles| {
            if (least..=max).contains(&c) {
                Ok(())
            } else {
                let allowed = format!("from {before} ({least}) to {max}");
                Err(OutOfRange::new(field, allowed, c))
            }
        };
        after(
            "pc_first_word",
            self.pc_first_word,
            "pc_state",
            self.pc_state,
        )?;
        after("pc_line", self.pc_line, "pc_first_word", self.pc_first_word)?;
        OutOfRange::check(
            "link_bytes_per_cycle",
            self.link_bytes_per_cycle,
            1,
            Self::MAX_LINK_BYTES_PER_CYCLE,
        )?;
        OutOfRange::check("header_bytes", self.header_bytes, 0, Self::MAX_HEADER_BYTES)?;
        latency("net_latency", self.net_latency)?;
        OutOfRange::check("outbox_slots", self.outbox_slots, 1, Self::MAX_OUTBOX_SLOTS)?;
        OutOfRange::check("data_buffers", self.data_buffers, 1, Self::MAX_DATA_BUFFERS)?;
        OutOfRange::check("swq_capacity", self.swq_capacity, 0, Self::MAX_SWQ_CAPACITY)?;
        let mut seen = [false; 4];
        for q in self.inbox_priority {
            if std::mem::replace(&mut seen[q as usize], true) {
                return Err(OutOfRange::new(
                    "inbox_priority",
                    "each of net-reply, net-request, processor and software once",
                    format!("{} twice", q.name()),
                ));
            }
        }
        latency("inbox_dispatch", self.inbox_dispatch)?;
        latency("outbox_latency", self.outbox_latency)?;
        latency("pi_in", self.pi_in)?;
        latency("pi_out", self.pi_out)?;
        OutOfRange::check(
            "pp_issue_width",
            self.pp_issue_width,
            1,
            Self::MAX_PP_ISSUE_WIDTH,
        )?;
        if !self.dcache_lines.is_power_of_two() || self.dcache_lines > Self::MAX_DCACHE_LINES {
            return Err(OutOfRange::new(
                "dcache_lines",
                format!("a power of two from 1 to {}", Self::MAX_DCACHE_LINES),
                self.dcache_lines,
            ));
        }
        OutOfRange::check(
            "mem_bytes",
            self.mem_bytes,
            Self::MIN_MEM_BYTES,
            Self::MAX_MEM_BYTES,
        )?;
        // Memory is read and written a line at a time: a part of a line is
        // no memory a node could have.
        if !self.mem_bytes.is_multiple_of(Self::MIN_MEM_BYTES) {
            return Err(OutOfRange::new(
                "mem_bytes",
                format!("a whole number of {}-byte lines", Self::MIN_MEM_BYTES),
                self.mem_bytes,
            ));
        }
        OutOfRange::check("budget", self.budget, Cycles(1), MAX_BUDGET)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_line_packet_holds_the_link_forty_cycles() {
        let p = MagicParams::default();
        assert_eq!(p.wire_cycles(128), Cycles(40));
        assert_eq!(p.wire_cycles(0), Cycles(8));
        assert!(p.validate().is_ok());
    }

    #[test]
    fn link_cycles_round_up_whatever_the_rate() {
        for per in 1..=70u64 {
            let p = MagicParams {
                link_bytes_per_cycle: per,
                ..MagicParams::default()
            };
            for bytes in (0..300).chain([u64::MAX - 1, u64::MAX]) {
                assert_eq!(
                    p.link_cycles(bytes),
                    Cycles(bytes.div_ceil(per)),
                    "{bytes} at {per}"
                );
            }
        }
    }

    #[test]
    fn a_repeated_inbox_queue_is_rejected() {
        let p = MagicParams {
            inbox_priority: [InQueue::NetReply; 4],
            ..MagicParams::default()
        };
        let e = p.validate().unwrap_err();
        assert_eq!(e.field, "inbox_priority");
        assert!(e.to_string().contains("net-reply twice"), "{e}");
    }

    #[test]
    fn the_machine_table_sets_any_field_and_keeps_the_others() {
        let p: MagicParams = toml::from_str(
            "inbox_priority = [\"processor\", \"software\", \"net-reply\", \"net-request\"]\n\
             pi_out = 9\nmem_bytes = 1024\n",
        )
        .unwrap();
        assert_eq!(
            p.inbox_priority,
            [
                InQueue::Processor,
                InQueue::Software,
                InQueue::NetReply,
                InQueue::NetRequest
            ]
        );
        assert_eq!((p.pi_out, p.mem_bytes, p.trace), (Cycles(9), 1024, false));
        // `trace` is not a machine parameter: a run asks for it.
        assert!(toml::from_str::<MagicParams>("trace = true").is_err());
        let rest = MagicParams {
            inbox_priority: InQueue::ALL,
            pi_out: Cycles(6),
            mem_bytes: 64 << 20,
            trace: false,
            ..p.clone()
        };
        assert_eq!(rest, MagicParams::default());
        assert!(p.validate().is_ok());
        // An empty table is FLASH.
        assert_eq!(
            toml::from_str::<MagicParams>("").unwrap(),
            MagicParams::default()
        );
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it_and_the_allowed_ones() {
        let e = toml::from_str::<MagicParams>("pi_out = 6\npp_width = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `pp_width`"), "{e}");
        assert!(e.contains("`pp_issue_width`"), "{e}");
        // A queue that does not exist, a value of the wrong kind.
        let e = toml::from_str::<MagicParams>(
            "inbox_priority = [\"net-reply\", \"net-request\", \"processor\", \"disk\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown variant `disk`"), "{e}");
        // A fifth queue is refused, not dropped.
        let e = toml::from_str::<MagicParams>(
            "inbox_priority = [\"net-reply\", \"net-request\", \"processor\", \"software\", \"software\"]",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("invalid length 5, expected the four queues"),
            "{e}"
        );
        assert!(toml::from_str::<MagicParams>("net_latency = -1").is_err());
        assert!(toml::from_str::<MagicParams>("net_latency = \"22\"").is_err());
    }

    #[test]
    fn every_default_prints_as_toml_and_reads_back_equal() {
        for p in [
            MagicParams::default(),
            MagicParams {
                inbox_priority: [
                    InQueue::Software,
                    InQueue::Processor,
                    InQueue::NetRequest,
                    InQueue::NetReply,
                ],
                dcache_lines: 1 << 16,
                mem_bytes: MagicParams::MAX_MEM_BYTES,
                ..MagicParams::default()
            },
        ] {
            let text = toml::to_string(&p).unwrap();
            for line in text.lines() {
                let key = line.split(" =").next().unwrap();
                assert!(!key.is_empty(), "{text}");
            }
            // Every field but `trace`, which a run asks for.
            assert_eq!(text.lines().count(), 21, "{text}");
            assert!(text.contains("budget = 100000000000"), "{text}");
            assert!(!text.contains("trace"), "{text}");
            assert_eq!(toml::from_str::<MagicParams>(&text).unwrap(), p, "{text}");
        }
    }

    #[test]
    fn each_range_is_checked_at_both_ends() {
        let d = MagicParams::default;
        let bad: Vec<(MagicParams, &str)> = vec![
            (
                MagicParams {
                    mem_first_dword: MAX_LATENCY + Cycles(1),
                    ..d()
                },
                "mem_first_dword",
            ),
            (
                MagicParams {
                    mem_write_latency: Cycles(u64::MAX),
                    ..d()
                },
                "mem_write_latency",
            ),
            (
                MagicParams {
                    pc_state: Cycles(29),
                    ..d()
                },
                "pc_first_word",
            ),
            (
                MagicParams {
                    pc_line: Cycles(27),
                    ..d()
                },
                "pc_line",
            ),
            (
                MagicParams {
                    link_bytes_per_cycle: 0,
                    ..d()
                },
                "link_bytes_per_cycle",
            ),
            (
                MagicParams {
                    link_bytes_per_cycle: 1025,
                    ..d()
                },
                "link_bytes_per_cycle",
            ),
            (
                MagicParams {
                    header_bytes: 4097,
                    ..d()
                },
                "header_bytes",
            ),
            (
                MagicParams {
                    net_latency: Cycles(1_000_001),
                    ..d()
                },
                "net_latency",
            ),
            (
                MagicParams {
                    outbox_slots: 0,
                    ..d()
                },
                "outbox_slots",
            ),
            (
                MagicParams {
                    data_buffers: 0,
                    ..d()
                },
                "data_buffers",
            ),
            (
                MagicParams {
                    data_buffers: 4097,
                    ..d()
                },
                "data_buffers",
            ),
            (
                MagicParams {
                    swq_capacity: usize::MAX,
                    ..d()
                },
                "swq_capacity",
            ),
            (
                MagicParams {
                    inbox_dispatch: Cycles(u64::MAX / 2),
                    ..d()
                },
                "inbox_dispatch",
            ),
            (
                MagicParams {
                    outbox_latency: Cycles(1 << 40),
                    ..d()
                },
                "outbox_latency",
            ),
            (
                MagicParams {
                    pi_in: Cycles(1 << 20),
                    ..d()
                },
                "pi_in",
            ),
            (
                MagicParams {
                    pi_out: Cycles(9223372036854775807),
                    ..d()
                },
                "pi_out",
            ),
            (
                MagicParams {
                    pp_issue_width: 0,
                    ..d()
                },
                "pp_issue_width",
            ),
            (
                MagicParams {
                    pp_issue_width: 17,
                    ..d()
                },
                "pp_issue_width",
            ),
            (
                MagicParams {
                    dcache_lines: 0,
                    ..d()
                },
                "dcache_lines",
            ),
            (
                MagicParams {
                    dcache_lines: 1000,
                    ..d()
                },
                "dcache_lines",
            ),
            (
                MagicParams {
                    dcache_lines: 1 << 17,
                    ..d()
                },
                "dcache_lines",
            ),
            (
                MagicParams {
                    mem_bytes: 127,
                    ..d()
                },
                "mem_bytes",
            ),
            (
                MagicParams {
                    mem_bytes: (1 << 40) + 1,
                    ..d()
                },
                "mem_bytes",
            ),
            (
                MagicParams {
                    mem_bytes: 129,
                    ..d()
                },
                "mem_bytes",
            ),
            (
                MagicParams {
                    budget: Cycles(0),
                    ..d()
                },
                "budget",
            ),
            (
                MagicParams {
                    budget: MAX_BUDGET + Cycles(1),
                    ..d()
                },
                "budget",
            ),
        ];
        for (p, field) in bad {
            let e = p.validate().unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.to_string().starts_with(field), "{e}");
        }
        let e = MagicParams {
            pi_out: Cycles(9223372036854775807),
            ..d()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pi_out must be from 0 to 1000000, got 9223372036854775807"
        );
        let e = MagicParams {
            dcache_lines: 1000,
            ..d()
        }
        .validate()
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "dcache_lines must be a power of two from 1 to 65536, got 1000"
        );
        let good = [
            MagicParams {
                mem_first_dword: MAX_LATENCY,
                pc_state: Cycles(0),
                ..d()
            },
            MagicParams {
                pc_state: MAX_LATENCY,
                pc_first_word: MAX_LATENCY,
                pc_line: MAX_LATENCY,
                ..d()
            },
            MagicParams {
                link_bytes_per_cycle: 1,
                header_bytes: 0,
                ..d()
            },
            MagicParams {
                swq_capacity: 0,
                dcache_lines: 1,
                mem_bytes: 128,
                ..d()
            },
            MagicParams {
                outbox_slots: 1024,
                data_buffers: 4096,
                pp_issue_width: 16,
                budget: Cycles(1),
                ..d()
            },
            MagicParams {
                budget: MAX_BUDGET,
                ..d()
            },
        ];
        for p in good {
            assert_eq!(p.validate(), Ok(()), "{p:?}");
        }
    }
}
