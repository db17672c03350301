//! CMAM and CMAML: Active Messages on the CM-5 network interface.
//!
//! The layer runs on the compute processor and drives the NI through its
//! registers. Each operation is charged its structure in 33 MHz cycles:
//! register writes to compose a packet (the handler word and one per
//! argument), the status read that says whether the network took it,
//! register reads to poll and to take a packet, and the layer's own
//! instructions. The instruction counts are the calibration: they are set so
//! that each operation, measured by the suite the way the papers measured it,
//! costs what docs/reference.md reports (CMAM 2.7 and CMAML in CMMD 3.1),
//! and the transfer call's set-up so that a 4-word array transfer does.
//! Everything built from them — round trips, rings, bandwidths, the
//! transfers' start-ups — is a prediction.
//!
//! A send the network refuses (it is holding as many of this node's packets
//! as it can) is tried again after a poll, so a node that sends into a busy
//! network keeps draining its own input and the machine cannot deadlock.
//! Replies travel on the right network, requests on the left, and a poll
//! serves replies first.
//!
//! Blocks move through segments. The transfer call (CMAM_xfer, CMAML's
//! `scopy`) does its set-up before the first packet, part by part
//! ([`LayerCosts::xfer_parts`]): the call with its register window, its
//! arguments (`scopy`'s eight on the stack), the argument checks, the choice
//! of the alignment's copy, the segment address, the alignment's priming
//! (a byte-aligned copy's first word and shift counts, CMAM's double-word
//! routine's software pipeline) and the completion record the
//! acknowledgement clears. These parts are sized together from the paper's
//! 4-word array-transfer times; everything else about a transfer follows
//! from per-packet and per-operation costs. The sender packetizes: each
//! packet is a segment word (segment and offset) and 16 bytes, moved by the
//! widest access the alignment allows (double words when source and
//! destination are both double-word aligned, words otherwise, and for a
//! byte-aligned destination words shifted into place). The receiver keeps
//! the current segment's state (address, count) in registers: a packet of
//! another segment misses, and looks the other up in the segment table in
//! memory, storing the cached one's state back and loading the other's. The
//! last packet runs the end-of-transfer handler (loaded from the segment's
//! entry, which it frees), whose acknowledgement the sender's handler
//! counts: a blocking call waits for it. CMAML's `scopy` alternates its
//! data packets between the two networks.

use super::{Align, Handler, Platform, Run, Step, MAX_COST};
use crate::error::check;
use crate::Error;
use magic::costs::Source;
use magic::ni::cm5::{Cm5Network, Cm5Params, Net, PACKET_WORDS};
use magic::time::TICKS_PER_CM5_CYCLE;
use magic::{NodeId, Time};
use serde::{Deserialize, Serialize};

/// Which layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Layer {
    /// CMAM 2.7.
    Cmam,
    /// CMAML in CMMD 3.1.
    Cmaml,
}

/// How messages are taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Reception {
    /// The processor polls the network for arrivals.
    Polling,
    /// Each arrival interrupts the processor (CMAML): the stock kernel
    /// path, or the fast one with a minimal handler.
    Interrupts {
        /// Use the fast kernel path (the minimal handler).
        fast: bool,
    },
}

/// The layer's own instructions per operation (33 MHz cycles, one
/// instruction a cycle), apart from its NI accesses.
///
/// A scenario's `[costs.cm5]` table: every entry may be left out, and takes
/// CMAM's value then ([`LayerCosts::cmam`], the `Default`; each entry's CMAM
/// and CMAML values are in parentheses); an unknown key is an error. Each
/// count is at most [`MAX_COST`], and `poll` at least 1. Where each value comes from is
/// [`LayerCosts::source`] (rendered in docs/costs.md).
///
/// A block transfer's call does its set-up before the first packet in
/// *steps* on the transfer's state in memory (`xfer_check`, `xfer_select`,
/// `xfer_address`, `xfer_prime_shift`, `xfer_prime_double`, `xfer_record`):
/// each loads an operand, operates on it and stores the result, a cached
/// load, an instruction and a cached store (`[network.cm5]` `load + 1 +
/// store` cycles, 6 by default). The call's parts are
/// [`LayerCosts::xfer_parts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LayerCosts {
    /// A request, besides its NI accesses. (CMAM 27, CMAML 43)
    pub request: u64,
    /// A reply, besides its NI accesses. (CMAM 19, CMAML 20)
    pub reply: u64,
    /// Entering and leaving a poll. (CMAM 14, CMAML 30)
    pub poll: u64,
    /// Extra work of a poll that found something. (CMAM 14, CMAML 0)
    pub poll_found: u64,
    /// Dispatching one message to its handler and returning. (CMAM 10, CMAML 24)
    pub dispatch: u64,
    /// Opening a segment for an incoming block. (CMAM 20, CMAML 20)
    pub segment: u64,
    /// The stock kernel's part of taking one message by interrupt. (CMAM 561, CMAML 561)
    pub interrupt: u64,
    /// The fast kernel path's part of taking one message by interrupt. (CMAM 251, CMAML 251)
    pub interrupt_fast: u64,
    /// Calling the block-transfer routine and returning: the call, the
    /// routine's register window (save, restore), the return, and its
    /// first tests. (CMAM 20, CMAML 20)
    pub xfer_call: u64,
    /// Arguments of the transfer call passed on the stack (each stored by
    /// the caller and loaded by the callee). (CMAM 0, CMAML 8)
    pub xfer_stack_args: u64,
    /// The send loop's own instructions per data packet. (CMAM 29, CMAML 45)
    pub xfer_send: u64,
    /// The data-packet handler's instructions per packet (the segment still
    /// in registers: compare, address, count). The NI's tag marks data
    /// packets, so no handler address is read or jumped through. (CMAM 4, CMAML 18)
    pub xfer_recv: u64,
    /// A segment miss at the receiver, besides its memory accesses: a data
    /// packet names another segment than the one whose state (address,
    /// count) the registers hold, so the handler indexes the segment table
    /// and checks the entry, writes the cached segment's address and count
    /// back to its entry (two stores; none when the registers hold none)
    /// and loads this one's (two loads). (CMAM 4, CMAML 4)
    pub segment_switch: u64,
    /// Shifting and merging one word into a byte-aligned destination. (CMAM 3, CMAML 3)
    pub shift_word: u64,
    /// The call's argument checks, in steps: the node within the
    /// partition, the count, the segment word. (CMAM 6, CMAML 14)
    pub xfer_check: u64,
    /// Choosing the copy for the alignment, in steps: the source's and the
    /// destination's low bits, the bytes before the first whole word, the
    /// whole packets and the tail. (CMAM 10, CMAML 16)
    pub xfer_select: u64,
    /// The segment address computation, in steps: the first packet's
    /// segment word (segment and offset), the packet count and the last
    /// packet's size. (CMAM 10, CMAML 28)
    pub xfer_address: u64,
    /// A byte-aligned copy's priming, in steps, besides its load of the
    /// first source word: the two shift counts. (CMAM 1, CMAML 1)
    pub xfer_prime_shift: u64,
    /// A double-word copy's priming, in steps: its routine's
    /// software-pipelined loop loads the first packet's double words ahead
    /// and sets up its pointers and counts. (CMAM 13, CMAML 0)
    pub xfer_prime_double: u64,
    /// The completion record, in steps: the transfer counted outstanding
    /// (with what CMAML's scopy runs when it is acknowledged), which the
    /// acknowledgement's handler clears and a blocking call waits for.
    /// (CMAM 7, CMAML 28)
    pub xfer_record: u64,
    /// The end-of-transfer work at the receiver, besides dispatching its
    /// handler and its memory accesses (the handler and its argument
    /// loaded from the segment's entry, the entry freed): the test of the
    /// count and the entry's release. (CMAM 3, CMAML 3)
    pub xfer_end: u64,
    /// The acknowledgement's handler at the sender, besides a load and a
    /// store of the outstanding count: the decrement and the test a
    /// blocking call's wait sees. (CMAM 2, CMAML 2)
    pub xfer_ack: u64,
    /// Data packets alternate between the two networks. (CMAM false, CMAML true)
    pub both_networks: bool,
}

/// CMAM's costs ([`LayerCosts::cmam`]).
impl Default for LayerCosts {
    fn default() -> Self {
        LayerCosts::cmam()
    }
}

impl LayerCosts {
    /// Every count is at most [`MAX_COST`], and a poll at least one
    /// instruction; the error names the first that is not.
    pub fn validate(&self) -> Result<(), Error> {
        // A poll reads the NI's status and branches on it: a poll of no
        // instructions (with free NI accesses) would loop at one instant.
        check("poll", self.poll, 1, MAX_COST)?;
        for (field, v) in [
            ("request", self.request),
            ("reply", self.reply),
            ("poll_found", self.poll_found),
            ("dispatch", self.dispatch),
            ("segment", self.segment),
            ("interrupt", self.interrupt),
            ("interrupt_fast", self.interrupt_fast),
            ("xfer_call", self.xfer_call),
            ("xfer_stack_args", self.xfer_stack_args),
            ("xfer_send", self.xfer_send),
            ("xfer_recv", self.xfer_recv),
            ("segment_switch", self.segment_switch),
            ("shift_word", self.shift_word),
            ("xfer_check", self.xfer_check),
            ("xfer_select", self.xfer_select),
            ("xfer_address", self.xfer_address),
            ("xfer_prime_shift", self.xfer_prime_shift),
            ("xfer_prime_double", self.xfer_prime_double),
            ("xfer_record", self.xfer_record),
            ("xfer_end", self.xfer_end),
            ("xfer_ack", self.xfer_ack),
        ] {
            check(field, v, 0, MAX_COST)?;
        }
        Ok(())
    }

    /// CMAM 2.7: request 1.49 us, reply 1.25, empty poll 0.85, receive 1.60,
    /// a poll that takes one message 2.85; a non-blocking array transfer of
    /// 4 words 8.6 / 8.6 / 10.7 us byte / word / double-word aligned.
    ///
    /// The transfer's per-packet counts are not fitted. Derived: the send
    /// loop runs per packet two instructions more than a single send
    /// (Karamcheti and Chien count 18 + n per packet of a finite sequence,
    /// n = 4 words, against 20 for a single packet). Model choices from the
    /// code's structure: the data handler compares the segment, forms the
    /// address and counts (4); a segment miss indexes the table and checks
    /// it (4); a shift-and-merge is two shifts and an or (3). The call's
    /// set-up steps are sized together from the 4-word times (see
    /// [`LayerCosts::source`]).
    pub fn cmam() -> LayerCosts {
        LayerCosts {
            request: 27,
            reply: 19,
            poll: 14,
            poll_found: 14,
            dispatch: 10,
            segment: 20,
            interrupt: 561,
            interrupt_fast: 251,
            xfer_call: 20,
            xfer_stack_args: 0,
            xfer_send: 29,
            xfer_recv: 4,
            segment_switch: 4,
            shift_word: 3,
            xfer_check: 6,
            xfer_select: 10,
            xfer_address: 10,
            xfer_prime_shift: 1,
            xfer_prime_double: 13,
            xfer_record: 7,
            xfer_end: 3,
            xfer_ack: 2,
            both_networks: false,
        }
    }

    /// CMAML (CMMD 3.1): request 1.96 us, reply 1.28, empty poll 1.33,
    /// receive 2.01, a poll that takes one message 3.3; one message per
    /// interrupt about 19 us (stock kernel), 9.6 (fast path); a
    /// non-blocking `scopy` of 4 words 19.8 / 19.7 / 19.8 us. `scopy`
    /// takes 8 arguments on the stack and uses both networks; its send loop
    /// is derived as CMAM's, its data packets pass CMAML's longer dispatch
    /// loop.
    pub fn cmaml() -> LayerCosts {
        LayerCosts {
            request: 43,
            reply: 20,
            poll: 30,
            poll_found: 0,
            dispatch: 24,
            segment: 20,
            interrupt: 561,
            interrupt_fast: 251,
            xfer_call: 20,
            xfer_stack_args: 8,
            xfer_send: 45,
            // CMAM's 4, plus the 14 by which CMAML's dispatch loop exceeds
            // CMAM's (their calibrated dispatch: 24 against 10).
            xfer_recv: 18,
            segment_switch: 4,
            shift_word: 3,
            xfer_check: 14,
            xfer_select: 16,
            xfer_address: 28,
            xfer_prime_shift: 1,
            xfer_prime_double: 0,
            xfer_record: 28,
            xfer_end: 3,
            xfer_ack: 2,
            both_networks: true,
        }
    }

    /// A step of the transfer call's set-up on `hw`: a cached load, an
    /// instruction, a cached store (33 MHz cycles).
    pub fn step(hw: &Cm5Params) -> u64 {
        hw.load + 1 + hw.store
    }

    /// The transfer call's work before its first packet, part by part, in
    /// 33 MHz cycles on `hw` for a block of alignment `align`: what a
    /// non-blocking call of one packet costs besides that packet's loop
    /// (the parts a call at another alignment skips are 0).
    ///
    /// ```
    /// use protocols::am::{cm5::LayerCosts, Align};
    /// let hw = magic::ni::cm5::Cm5Params::default();
    /// let parts = LayerCosts::cmam().xfer_parts(Align::Word, &hw);
    /// assert_eq!(parts[0], ("xfer_call", 20));
    /// let cycles: u64 = parts.iter().map(|p| p.1).sum();
    /// assert_eq!(cycles, 20 + (6 + 10 + 10 + 7) * 6);
    /// ```
    pub fn xfer_parts(&self, align: Align, hw: &Cm5Params) -> [(&'static str, u64); 8] {
        let step = LayerCosts::step(hw);
        let when = |a: Align, x: u64| if align == a { x } else { 0 };
        [
            ("xfer_call", self.xfer_call),
            (
                "xfer_stack_args",
                self.xfer_stack_args * (hw.store + hw.load),
            ),
            ("xfer_check", self.xfer_check * step),
            ("xfer_select", self.xfer_select * step),
            ("xfer_address", self.xfer_address * step),
            (
                "xfer_prime_shift",
                when(Align::Byte, hw.load + self.xfer_prime_shift * step),
            ),
            (
                "xfer_prime_double",
                when(Align::Double, self.xfer_prime_double * step),
            ),
            ("xfer_record", self.xfer_record * step),
        ]
    }

    /// Where an entry's values come from (CMAM's and CMAML's), by key; `None`
    /// for a key the table does not have. docs/costs.md renders it.
    pub fn source(key: &str) -> Option<Source> {
        use Source::{Choice, Derived};
        Some(match key {
            "request" => Derived(
                "set for the request send of docs/reference.md, 1.49 us (CMAML \
                 1.96), with the handler word, 4 argument writes (3 cycles each) \
                 and the status read (7): the one-to-two benchmark measures 1.50 \
                 (1.98), within a processor cycle of it",
            ),
            "reply" => Derived(
                "set so that the one-to-two benchmark measures the reply send, \
                 1.25 us (1.28), with the same NI accesses as a request",
            ),
            "poll" => Derived(
                "set so that an unsuccessful poll of both networks (two status \
                 reads) measures 0.85 us (1.33)",
            ),
            "poll_found" => Derived(
                "set so that a poll taking one message measures 2.85 us (3.3), \
                 its receive and dispatch included",
            ),
            "dispatch" => Derived(
                "set for the receive with a trivial handler of docs/reference.md, \
                 1.60 us (2.01), with five NI reads: the two-to-one benchmark \
                 measures 1.66 (2.09), 4% over, inside the 5% the calibration \
                 test holds",
            ),
            "segment" => Choice(
                "a segment's entry allocated and its base, count and end handler \
                 written when its first packet comes (the benchmarks open one per \
                 block)",
            ),
            "interrupt" => Derived(
                "set so that one message per interrupt costs about 19 us on the \
                 stock kernel, the receive and dispatch included",
            ),
            "interrupt_fast" => Derived(
                "set so that one message per interrupt costs about 9.6 us on the \
                 fast kernel path with a minimal handler",
            ),
            "xfer_call" => Choice(
                "call and delay slot, save, return and restore, and the first \
                 tests (a count of zero returns at once): the transfer routines \
                 are not leaf routines, unlike the single-packet sends",
            ),
            "xfer_stack_args" => Derived(
                "from the paper's text: CMAML_scopy's 8 arguments do not fit a \
                 register window and go through the stack (each a store by the \
                 caller and a load by the callee); CMAM_xfer's 4 fit the out \
                 registers",
            ),
            "xfer_send" => Derived(
                "Karamcheti and Chien count 18 + n instructions per packet of a \
                 finite sequence (n = 4) against 20 for a single-packet send: two \
                 more than a request's count (27; CMAML 43)",
            ),
            "xfer_recv" => Choice(
                "compare the packet's segment with the cached one, form the \
                 address, count (4); CMAML's data packets also pass its longer \
                 dispatch loop, 14 more (its dispatch 24 against CMAM's 10)",
            ),
            "segment_switch" => Derived(
                "from the paper's text: both layers keep one segment's state in \
                 registers, and a packet of another segment pays the lookup and \
                 update of the segment structure in memory; index and check the \
                 entry (4 instructions, a model choice), store the cached \
                 segment's address and count, load the new one's",
            ),
            "shift_word" => Choice("two shifts and an or"),
            "xfer_check" => Derived(
                "one step for each of CMAM_xfer's 4 arguments, the count's sign \
                 and its zero test (6); scopy checks its 8, its alignment \
                 argument against the addresses, and the segment (14). Sized \
                 with the other set-up steps from the 4-word times (xfer_record)",
            ),
            "xfer_select" => Derived(
                "the source's and destination's offsets in a word and a double \
                 word, the head before the first whole word, the whole packets, \
                 the tail, the case's routine chosen (10); scopy also checks the \
                 case against its alignment argument and for both networks \
                 (16). Sized with the other set-up steps (xfer_record)",
            ),
            "xfer_address" => Derived(
                "the first packet's segment word, the packet count, the last \
                 packet's size, the NI's send address for the node (10); scopy \
                 packs segment, offset and alignment, each given apart, and \
                 sets up both networks' send addresses (28). Sized with the \
                 other set-up steps (xfer_record)",
            ),
            "xfer_record" => Derived(
                "the transfer counted outstanding for its acknowledgement (7); \
                 scopy keeps more of its call for its completion (28). The four \
                 set-up parts (check, select, address, record) are sized \
                 together, their split following each part's work, for a \
                 non-blocking call of 4 words at what Liu and Culler measured \
                 (docs/reference.md): 8.6 / 8.6 / 10.7 us byte / word / \
                 double-word aligned for CMAM_xfer, 19.8 / 19.7 / 19.8 for \
                 CMAML_scopy, with the call, its arguments, the priming and one \
                 packet's loop. The array-transfer benchmark measures 8.88 / \
                 8.27 / 10.58 and 20.21 / 19.61 / 19.55, each within 4%: one set \
                 of counts serves the three alignments, whose loops differ. The \
                 paper gives the times, not the parts",
            ),
            "xfer_prime_shift" => Choice(
                "the two shift counts from the source's and destination's byte \
                 offsets (besides the priming load of the first word)",
            ),
            "xfer_prime_double" => Derived(
                "CMAM's double-word aligned 4-word time is 2.1 us above the word \
                 and byte ones (10.7 against 8.6): its double-word routine primes a \
                 software-pipelined loop (13 steps, with its packet loop 2 cycles \
                 shorter than the word one's); CMAML's times do not depend on the \
                 alignment (19.8 / 19.7 / 19.8), so 0",
            ),
            "xfer_end" => Choice(
                "test the count, release the entry; with the dispatch of the end \
                 handler and the loads of it and its argument from the entry and \
                 the entry's store",
            ),
            "xfer_ack" => Choice(
                "decrement the outstanding count and test it (with its load and \
                 store): what a blocking call's wait loop sees",
            ),
            "both_networks" => Derived(
                "from the paper's text: CMAML's scopy sends its data on both \
                 networks, CMAM_xfer on the request network",
            ),
            _ => return None,
        })
    }
}

/// The entries of [`LayerCosts`] a scenario's table sets, each left out
/// keeping the layer's own value: how `[costs.cmaml]` is read over CMAML's
/// costs rather than CMAM's (the struct's `Default`), with a wrong value
/// named at its key.
macro_rules! layer_patch {
    ($($field:ident: $ty:ty),* $(,)?) => {
        /// Some entries of a [`LayerCosts`] ([`LayerCosts::patched`]).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LayerCostsPatch {
            $(
                #[doc = concat!("`", stringify!($field), "`, if set.")]
                pub $field: Option<$ty>,
            )*
        }

        impl LayerCosts {
            /// These costs with the entries `p` sets replaced.
            pub fn patched(mut self, p: LayerCostsPatch) -> LayerCosts {
                $(
                    if let Some(v) = p.$field {
                        self.$field = v;
                    }
                )*
                self
            }
        }
    };
}

layer_patch!(
    request: u64,
    reply: u64,
    poll: u64,
    poll_found: u64,
    dispatch: u64,
    segment: u64,
    interrupt: u64,
    interrupt_fast: u64,
    xfer_call: u64,
    xfer_stack_args: u64,
    xfer_send: u64,
    xfer_recv: u64,
    segment_switch: u64,
    shift_word: u64,
    xfer_check: u64,
    xfer_select: u64,
    xfer_address: u64,
    xfer_prime_shift: u64,
    xfer_prime_double: u64,
    xfer_record: u64,
    xfer_end: u64,
    xfer_ack: u64,
    both_networks: bool,
);

/// A CM-5 partition running an Active Message layer.
#[derive(Clone, Debug)]
pub struct Cm5 {
    /// Nodes in the partition.
    pub nodes: u32,
    /// The Active Message layer it runs.
    pub layer: Layer,
    /// How arrivals are taken in.
    pub reception: Reception,
    /// The layer's instruction counts.
    pub costs: LayerCosts,
    /// The network interface's and networks' parameters.
    pub hw: Cm5Params,
}

impl Cm5 {
    /// A partition of `nodes` nodes running `layer`, polling, with the layer's
    /// calibrated costs.
    pub fn new(nodes: u32, layer: Layer) -> Cm5 {
        Cm5 {
            nodes,
            layer,
            reception: Reception::Polling,
            costs: match layer {
                Layer::Cmam => LayerCosts::cmam(),
                Layer::Cmaml => LayerCosts::cmaml(),
            },
            hw: Cm5Params::default(),
        }
    }

    /// A partition of `nodes` nodes running `layer`, polling, with the
    /// layer's instruction counts `costs` and the NI's parameters `hw`; an
    /// error names the first value out of range.
    pub fn with(nodes: u32, layer: Layer, costs: LayerCosts, hw: Cm5Params) -> Result<Cm5, Error> {
        let p = Cm5 {
            nodes,
            layer,
            reception: Reception::Polling,
            costs,
            hw,
        };
        p.validate()?;
        Ok(p)
    }

    /// The configuration is one the partition can run: 2 to 1024 nodes
    /// ([`super::Machines::Cm5`]), costs in range, NI parameters the network
    /// model takes.
    pub fn validate(&self) -> Result<(), Error> {
        super::Machines::Cm5.check(self.nodes, 2)?;
        self.costs.validate()?;
        // The NI's own ranges (accesses at most MAX_COST cycles, times at
        // most 10 ms, within a run's limit) are what the layer needs.
        self.hw.validate().map_err(Error::Network)?;
        Ok(())
    }
}

/// Memory accesses that move `bytes` of a packet at an alignment, and
/// whether each is a double word. A byte-aligned destination is still
/// written a word at a time: the sender shifts the data into place.
fn accesses(bytes: u32, align: Align) -> (u64, bool) {
    match align {
        Align::Double => (bytes.div_ceil(8) as u64, true),
        Align::Word | Align::Byte => (bytes.div_ceil(4) as u64, false),
    }
}

/// NI accesses that move `bytes` of a packet's data: double words whatever
/// the alignment. Model choice: the NI's data registers are double-word
/// aligned, and two words loaded into a register pair go out in one `std`
/// (and come in with one `ldd` to be stored as two words); only the memory
/// side follows the array's alignment.
fn ni_accesses(bytes: u32) -> u64 {
    bytes.div_ceil(8) as u64
}

/// Model choice: a double-word load or store (SPARC `ldd`/`std`) takes one
/// cycle more than a word access: it moves a second register.
const DOUBLE_EXTRA: u64 = 1;

const fn cycles(n: u64) -> u64 {
    n * TICKS_PER_CM5_CYCLE
}

/// The handler word of a segment packet (the rest of the packet names the
/// segment and the offset).
const XFER: u32 = 0x100;
/// The handler word of a block's acknowledgement.
const XFER_DONE: u32 = 0x101;

/// A block transfer under way at its sender.
#[derive(Clone, Copy)]
struct Xfer {
    to: NodeId,
    bytes: u32,
    sent: u32,
    align: Align,
    /// A shared segment's id and size (0: the sender's own segment).
    segment: u16,
    total: u32,
    /// Packets sent so far (they alternate networks on CMAML).
    packets: u32,
}

/// One node's processor while a program runs.
struct Node {
    t: Time,
    /// The block being sent (resumed after a refused packet).
    xfer: Option<Xfer>,
    /// Open segments by id (a sender's own, or a shared one): bytes in,
    /// size, and the senders to acknowledge when it is complete.
    segments: std::collections::BTreeMap<u32, (u32, u32, Vec<NodeId>)>,
    /// Replies a handler could not send yet.
    replies: Vec<NodeId>,
    /// The segment whose state the data handler holds in registers.
    seg_cached: Option<u32>,
    received: u64,
    marks: Vec<Time>,
    /// What is left of a computation interrupts broke into pieces.
    computing: Option<Time>,
}

struct Sim<'a> {
    p: &'a Cm5,
    net: Cm5Network,
    nodes: Vec<Node>,
    run: Run,
    /// Destinations of the packets sent since the scheduler last asked.
    woken: Vec<usize>,
    /// Per node, the data packets it took, in order (only when asked for:
    /// [`Cm5::run_traced`]).
    trace: Option<Packets>,
}

/// Per node, the data packets it took, in order.
pub type Packets = Vec<Vec<DataPacket>>;

/// A data packet as its receiver took it ([`Cm5::run_traced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DataPacket {
    /// Its sender.
    pub from: NodeId,
    /// The shared segment it names (0: its sender's own segment).
    pub segment: u32,
    /// Its data bytes.
    pub bytes: u32,
}

impl Sim<'_> {
    fn charge(&mut self, n: usize, op: &'static str, reads: u64, writes: u64, instr: u64) {
        let hw = self.p.hw;
        let c = cycles(reads * hw.ni_read + writes * hw.ni_write + instr);
        self.nodes[n].t = Time(self.nodes[n].t.0 + c);
        let s = self.run.ops.entry((n as u32, op)).or_default();
        s.busy += c;
        s.ni_reads += reads;
        s.ni_writes += writes;
        s.instructions += instr;
    }

    fn count(&mut self, n: usize, op: &'static str) {
        self.run.ops.entry((n as u32, op)).or_default().calls += 1;
    }

    /// Compose a packet and offer it; `false` if the network refused it
    /// (the caller tries again later, after draining its input).
    fn send(
        &mut self,
        n: usize,
        to: NodeId,
        net: Net,
        words: u8,
        handler: Handler,
        op: &'static str,
    ) -> bool {
        let mut w = [0u32; PACKET_WORDS];
        w[0] = handler as u32;
        self.send_words(n, to, net, words, w, op)
    }

    fn send_words(
        &mut self,
        n: usize,
        to: NodeId,
        net: Net,
        words: u8,
        w: [u32; PACKET_WORDS],
        op: &'static str,
    ) -> bool {
        let instr = match net {
            Net::Left => self.p.costs.request,
            Net::Right => self.p.costs.reply,
        };
        self.count(n, op);
        // Handler word and arguments into the send FIFO, then the status.
        self.charge(n, op, 0, 1 + words.min(4) as u64, instr);
        self.charge(n, op, 1, 0, 0);
        let now = self.nodes[n].t;
        if self.net.inject(now, NodeId(n as u32), to, net, w) {
            self.woken.push(to.0 as usize);
            return true;
        }
        self.run.retries += 1;
        false
    }

    /// Run the handler of a message taken from the network.
    fn handle(&mut self, n: usize, from: NodeId, words: [u32; PACKET_WORDS]) {
        self.nodes[n].received += 1;
        if words[0] == XFER_DONE {
            // The acknowledgement's handler: the transfer's outstanding
            // count, loaded, decremented and stored (what a blocking call
            // waits to see reach zero).
            let (hw, c) = (self.p.hw, self.p.costs);
            self.count(n, "xfer-ack");
            self.charge(n, "xfer-ack", 0, 0, c.xfer_ack + hw.load + hw.store);
            return;
        }
        if words[0] == Handler::Echo as u32
            && !self.send(n, from, Net::Right, 4, Handler::Nop, "reply")
        {
            // The handler's reply is tried again before the program goes on.
            self.nodes[n].replies.push(from);
        }
    }

    /// A segment packet (its NI reads and dispatch are charged): the
    /// segment's state comes into registers if another's is there, the data
    /// goes into memory at its offset; the last packet runs the
    /// end-of-transfer handler, which acknowledges the block.
    fn segment_packet(&mut self, n: usize, from: NodeId, words: [u32; PACKET_WORDS]) {
        let (bytes, total, offset) = (words[1], words[2], words[4]);
        let align = match words[3] & 3 {
            0 => Align::Byte,
            1 => Align::Word,
            _ => Align::Double,
        };
        // The segment word: a shared segment's id, or the sender's own.
        let shared = words[3] >> 16;
        let id = if shared > 0 { shared } else { 1 << 16 | from.0 };
        let (hw, c) = (self.p.hw, self.p.costs);
        if let Some(trace) = self.trace.as_mut() {
            trace[n].push(DataPacket {
                from,
                segment: shared,
                bytes,
            });
        }
        if let std::collections::btree_map::Entry::Vacant(e) = self.nodes[n].segments.entry(id) {
            // The segment opens with its first packet.
            e.insert((0, total, Vec::new()));
            self.count(n, "segment");
            self.charge(n, "segment", 0, 0, c.segment);
        }
        if self.nodes[n].seg_cached != Some(id) {
            // The register cache misses: save the current segment's address
            // and count, load this one's.
            let saves = if self.nodes[n].seg_cached.is_some() {
                2
            } else {
                0
            };
            self.nodes[n].seg_cached = Some(id);
            self.count(n, "segment-switch");
            let cyc = saves * hw.store + 2 * hw.load + c.segment_switch;
            self.charge(n, "segment-switch", 0, 0, cyc);
        }
        let (acc, dbl) = accesses(bytes, align);
        let mut cyc = acc * (hw.store + if dbl { DOUBLE_EXTRA } else { 0 });
        let seg = self.nodes[n].segments.get_mut(&id).expect("open");
        let completes = seg.0 + bytes >= seg.1;
        if align == Align::Byte && (offset == 0 || completes) {
            // A partial word at an end of the block: load, merge, store.
            cyc += hw.load + c.shift_word + hw.store;
        }
        self.charge(n, "receive", 0, 0, cyc);
        let seg = self.nodes[n].segments.get_mut(&id).expect("open");
        seg.0 += bytes;
        if !seg.2.contains(&from) {
            seg.2.push(from);
        }
        if completes {
            // The end-of-transfer handler, once per segment: its address
            // and argument loaded from the segment's entry, dispatched; the
            // entry freed, so the registers hold no segment any more.
            let (_, _, senders) = self.nodes[n].segments.remove(&id).expect("open");
            if self.nodes[n].seg_cached == Some(id) {
                self.nodes[n].seg_cached = None;
            }
            self.count(n, "end-of-transfer");
            let cyc = c.dispatch + c.xfer_end + 2 * hw.load + hw.store;
            self.charge(n, "end-of-transfer", 0, 0, cyc);
            self.nodes[n].received += 1;
            for to in senders {
                let mut w = [0u32; PACKET_WORDS];
                w[0] = XFER_DONE;
                if !self.send_words(n, to, Net::Right, 0, w, "reply") {
                    self.nodes[n].replies.push(to);
                }
            }
        }
    }

    /// Begin (or go on with) a block transfer; `true` once its last packet
    /// is in the network.
    fn start_store(
        &mut self,
        n: usize,
        to: NodeId,
        bytes: u32,
        align: Align,
        segment: u16,
        total: u32,
    ) -> bool {
        if self.nodes[n].xfer.is_none() {
            self.nodes[n].xfer = Some(Xfer {
                to,
                bytes,
                sent: 0,
                align,
                segment,
                total,
                packets: 0,
            });
            // The call's work before its first packet, part by part: the
            // call and its arguments (on the stack for CMAML), the set-up
            // steps, the alignment's priming, the completion record.
            self.count(n, "xfer-call");
            for (_, cyc) in self.p.costs.xfer_parts(align, &self.p.hw) {
                self.charge(n, "xfer-call", 0, 0, cyc);
            }
        }
        self.store(n)
    }

    /// Send the next packet of the block under way (a segment word and 16
    /// bytes); `true` when the block is all sent. A refused packet is sent
    /// again after a poll; one packet a call keeps the nodes in time order.
    fn store(&mut self, n: usize) -> bool {
        let (hw, c) = (self.p.hw, self.p.costs);
        let Some(x) = self.nodes[n].xfer else {
            return true;
        };
        let chunk = (x.bytes - x.sent).min(16);
        let (acc, dbl) = accesses(chunk, x.align);
        let extra = if dbl { DOUBLE_EXTRA } else { 0 };
        let shifts = if x.align == Align::Byte {
            acc * c.shift_word
        } else {
            0
        };
        let total = if x.segment > 0 { x.total } else { x.bytes };
        let w = [
            XFER,
            chunk,
            total,
            x.align as u32 | (x.segment as u32) << 16,
            x.sent,
        ];
        let net = if c.both_networks && x.packets % 2 == 1 {
            Net::Right
        } else {
            Net::Left
        };
        // Loads from memory, the segment word and the data into the send
        // FIFO, the loop, then the status.
        self.count(n, "xfer");
        let ni = ni_accesses(chunk);
        let cyc = acc * (hw.load + extra) + ni * DOUBLE_EXTRA + shifts + c.xfer_send;
        self.charge(n, "xfer", 0, 1 + ni, cyc);
        self.charge(n, "xfer", 1, 0, 0);
        let now = self.nodes[n].t;
        if !self.net.inject(now, NodeId(n as u32), x.to, net, w) {
            self.run.retries += 1;
            self.poll(n);
            return false;
        }
        self.woken.push(x.to.0 as usize);
        let y = self.nodes[n].xfer.as_mut().expect("under way");
        y.sent += chunk;
        y.packets += 1;
        if y.sent >= y.bytes {
            self.nodes[n].xfer = None;
            return true;
        }
        false
    }

    /// Take one packet from `net` and dispatch it (its status was read):
    /// a message's five words, or a data packet's segment word and data.
    fn take(&mut self, n: usize, net: Net) {
        let now = self.nodes[n].t;
        let Some(pkt) = self.net.receive(NodeId(n as u32), net, now) else {
            return;
        };
        let c = self.p.costs;
        self.count(n, "receive");
        if pkt.words[0] == XFER {
            let ni = ni_accesses(pkt.words[1]);
            self.charge(n, "receive", 1 + ni, 0, c.xfer_recv + ni * DOUBLE_EXTRA);
            return self.segment_packet(n, pkt.src, pkt.words);
        }
        self.charge(n, "receive", PACKET_WORDS as u64, 0, c.dispatch);
        self.handle(n, pkt.src, pkt.words);
    }

    /// One poll of both networks, replies first.
    fn poll(&mut self, n: usize) {
        self.poll_nets(n, &[Net::Right, Net::Left], "poll");
    }

    /// Poll the given networks (replies first), taking all that is there.
    fn poll_nets(&mut self, n: usize, nets: &[Net], op: &'static str) {
        self.count(n, op);
        self.charge(n, op, 0, 0, self.p.costs.poll);
        let mut found = false;
        for &net in nets {
            loop {
                self.charge(n, op, 1, 0, 0);
                let now = self.nodes[n].t;
                if !self.net.ready(NodeId(n as u32), net, now) {
                    break;
                }
                found = true;
                self.take(n, net);
            }
        }
        if found {
            self.charge(n, op, 0, 0, self.p.costs.poll_found);
        }
    }

    /// Cost of one empty poll.
    fn empty_poll(&self) -> u64 {
        cycles(self.p.costs.poll + 2 * self.p.hw.ni_read)
    }

    /// Interrupt-driven reception: take everything that has arrived by now,
    /// one interrupt each.
    fn interrupts(&mut self, n: usize) {
        let Reception::Interrupts { fast } = self.p.reception else {
            return;
        };
        let kernel = if fast {
            self.p.costs.interrupt_fast
        } else {
            self.p.costs.interrupt
        };
        loop {
            let now = self.nodes[n].t;
            let net = [Net::Right, Net::Left]
                .into_iter()
                .find(|&x| self.net.ready(NodeId(n as u32), x, now));
            let Some(net) = net else { return };
            self.count(n, "interrupt");
            self.charge(n, "interrupt", 1, 0, kernel);
            self.take(n, net);
        }
    }

    /// Run one step; `false` if it must be tried again (a refused send,
    /// after which the node has drained its input).
    fn step(&mut self, n: usize, s: Step) -> bool {
        let sent = match s {
            Step::Request { to, words, handler } => {
                self.send(n, to, Net::Left, words, handler, "request")
            }
            Step::Reply { to, words } => self.send(n, to, Net::Right, words, Handler::Nop, "reply"),
            // A store polls on a refusal itself.
            Step::Store { to, bytes, align } => {
                return self.start_store(n, to, bytes, align, 0, bytes)
            }
            Step::StoreShared {
                to,
                bytes,
                align,
                segment,
                total,
            } => return self.start_store(n, to, bytes, align, segment.max(1), total),
            Step::Get { .. } => unreachable!("refused before the run"),
            Step::PollOnly { replies } => {
                if replies {
                    self.poll_nets(n, &[Net::Right], "reply_poll");
                } else {
                    self.poll_nets(n, &[Net::Left], "request_poll");
                }
                true
            }
            Step::Poll => {
                self.poll(n);
                true
            }
            Step::Compute(d) => return self.compute(n, d),
            Step::Wait { .. } | Step::Mark => unreachable!("the scheduler's"),
        };
        if !sent {
            self.poll(n);
        }
        sent
    }

    /// Compute for `d`; `true` once it is done. Polled, the processor
    /// computes through, and messages wait. Taken by interrupt, each
    /// message arriving meanwhile stops the computation for its interrupt
    /// (taken before the next step, `before_step`), which the computation
    /// then resumes after: so it computes in pieces, each up to the
    /// earliest a message could arrive, what is left of it kept between
    /// them.
    fn compute(&mut self, n: usize, d: Time) -> bool {
        let now = self.nodes[n].t;
        if !matches!(self.p.reception, Reception::Interrupts { .. }) {
            self.nodes[n].t = Time(now.0 + d.0);
            return true;
        }
        let left = self.nodes[n].computing.take().unwrap_or(d).0;
        // The earliest another node could send from is its own clock, and
        // not before this one's (one behind it is done and can only answer
        // what reaches it from now on); a packet in flight arrives when
        // the network says.
        let latency = super::Layer::min_latency(self).0;
        let sent = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != n)
            .map(|(_, x)| x.t.0.max(now.0).saturating_add(latency))
            .min();
        let arrival = self.net.next_arrival(NodeId(n as u32)).map(|t| t.0);
        let bound = sent.into_iter().chain(arrival).min().unwrap_or(u64::MAX);
        let piece = left.min(bound.saturating_sub(now.0).max(1));
        self.nodes[n].t = Time(now.0 + piece);
        if piece < left {
            self.nodes[n].computing = Some(Time(left - piece));
            return false;
        }
        true
    }

    /// Replies handlers could not send: try them first.
    fn pending_replies(&mut self, n: usize) -> bool {
        while let Some(&to) = self.nodes[n].replies.first() {
            if !self.send(n, to, Net::Right, 4, Handler::Nop, "reply") {
                self.poll(n);
                return false;
            }
            self.nodes[n].replies.remove(0);
        }
        true
    }
}

impl super::Layer for Sim<'_> {
    fn packets(&self) -> u64 {
        self.net.stats.sent + self.net.stats.dropped
    }

    fn now(&self, n: usize) -> Time {
        self.nodes[n].t
    }

    fn set_now(&mut self, n: usize, t: Time) {
        self.nodes[n].t = t;
    }

    fn received(&self, n: usize) -> u64 {
        self.nodes[n].received
    }

    fn before_step(&mut self, n: usize) -> bool {
        self.interrupts(n);
        self.pending_replies(n)
    }

    fn step(&mut self, n: usize, s: Step) -> bool {
        Sim::step(self, n, s)
    }

    fn poll(&mut self, n: usize) {
        Sim::poll(self, n)
    }

    fn idle(&mut self, n: usize, until: Time) {
        let each = self.empty_poll().max(1);
        let t = self.nodes[n].t;
        let k = (until.0.saturating_sub(t.0)) / each;
        if k > 0 {
            let s = self.run.ops.entry((n as u32, "poll")).or_default();
            s.calls += k;
            s.busy += k * each;
            s.ni_reads += 2 * k;
            s.instructions += k * self.p.costs.poll;
            self.nodes[n].t = Time(t.0 + k * each);
        }
    }

    fn sleeps(&self) -> bool {
        self.p.reception != Reception::Polling
    }

    fn next_arrival(&self, n: usize) -> Option<Time> {
        self.net.next_arrival(NodeId(n as u32))
    }

    fn in_flight(&self) -> usize {
        self.net.in_flight()
    }

    fn min_latency(&self) -> Time {
        Time(self.p.hw.fixed_latency.0 + self.p.hw.router_delay.0)
    }

    fn mark(&mut self, n: usize) {
        let t = self.nodes[n].t;
        self.nodes[n].marks.push(t);
    }

    fn woken(&mut self) -> &mut Vec<usize> {
        &mut self.woken
    }

    fn busy(&self, n: usize) -> bool {
        !self.nodes[n].replies.is_empty() || self.net.next_arrival(NodeId(n as u32)).is_some()
    }

    fn finish(&mut self) -> Run {
        Run {
            end: self.nodes.iter().map(|x| x.t).max().unwrap_or_default(),
            marks: self.nodes.iter().map(|x| x.marks.clone()).collect(),
            received: self.nodes.iter().map(|x| x.received).collect(),
            overtaken: self.net.stats.overtaken,
            ..std::mem::take(&mut self.run)
        }
    }
}

impl Platform for Cm5 {
    fn machine(&self) -> super::Machines {
        super::Machines::Cm5
    }

    fn name(&self) -> &'static str {
        match self.layer {
            Layer::Cmam => "cm5",
            Layer::Cmaml => "cm5-cmaml",
        }
    }

    fn nodes(&self) -> u32 {
        self.nodes
    }

    fn has_get(&self) -> bool {
        false
    }

    fn check(&self) -> Result<(), Error> {
        self.validate()
    }

    fn run(&self, programs: &[Vec<Step>]) -> Result<Run, Error> {
        self.simulate(programs, false).map(|x| x.0)
    }
}

impl Cm5 {
    /// Run the programs as [`Platform::run`] does, and also list, per
    /// node, the data packets it took in the order it took them: what the
    /// receiver's segment register cache saw.
    pub fn run_traced(&self, programs: &[Vec<Step>]) -> Result<(Run, Packets), Error> {
        self.simulate(programs, true)
            .map(|(r, t)| (r, t.unwrap_or_default()))
    }

    fn simulate(
        &self,
        programs: &[Vec<Step>],
        trace: bool,
    ) -> Result<(Run, Option<Packets>), Error> {
        self.validate()?;
        super::check_programs(self.nodes, programs)?;
        if programs
            .iter()
            .flatten()
            .any(|s| matches!(s, Step::Get { .. }))
        {
            return Err(Error::Program(format!(
                "{} offers no get: move blocks with stores",
                self.name()
            )));
        }
        let mut sim = Sim {
            p: self,
            net: Cm5Network::new(self.hw, self.nodes).map_err(Error::Network)?,
            nodes: (0..self.nodes)
                .map(|_| Node {
                    t: Time::ZERO,
                    xfer: None,
                    segments: Default::default(),
                    replies: Vec::new(),
                    seg_cached: None,
                    received: 0,
                    marks: Vec::new(),
                    computing: None,
                })
                .collect(),
            run: Run::default(),
            woken: Vec::new(),
            trace: trace.then(|| vec![Vec::new(); self.nodes as usize]),
        };
        let budget = super::Budget {
            time: self.hw.budget,
            per_node: self.hw.event_budget,
            nodes: self.nodes,
            table: "network.cm5",
        };
        let run = super::drive(&mut sim, programs, budget)?;
        Ok((run, sim.trace.take()))
    }
}

#[cfg(test)]
mod tests {
    use super::LayerCosts;

    /// Every entry of the layers' table says where its values come from
    /// (docs/costs.md renders it), and nothing else has a source.
    #[test]
    fn every_entry_says_where_its_values_come_from() {
        let serde_json::Value::Object(keys) = serde_json::to_value(LayerCosts::cmam()).unwrap()
        else {
            panic!("a table")
        };
        for key in keys.keys() {
            let s = LayerCosts::source(key).unwrap_or_else(|| panic!("{key}: no source"));
            assert!(s.why().len() > 10, "{key}: no reason");
        }
        assert_eq!(LayerCosts::source("bogus"), None);
    }
}
