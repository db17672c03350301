//! Machine parameters: one set, FLASH's published values by default.
//!
//! Every timing figure of the hardware model is here, in 10 ns system cycles,
//! so a study changes a parameter rather than a constant in the code.

use crate::time::Cycles;
use serde::Serialize;

/// The inbox's input queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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

/// Parameters of one FLASH node and the network. Times are in system
/// cycles of 10 ns; each field's default is in parentheses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MagicParams {
    /// Memory: cycles from presenting an address to the first doubleword (14).
    pub mem_first_dword: Cycles,
    /// Memory: cycles from handing a buffer to the memory controller to its
    /// first doubleword reaching the memory's data bus (8). Not published:
    /// set from the start-up's network-and-queueing part (45 cycles), the
    /// one published figure that ends with a write in memory; with 8, the
    /// receiver's mechanisms give 45 (see docs/costs.md).
    pub mem_write_latency: Cycles,
    /// Processor-cache intervention: cycles until the line state is known (23).
    pub pc_state: Cycles,
    /// ... until the first data word of a dirty line (28).
    pub pc_first_word: Cycles,
    /// ... until the whole dirty line has arrived (43).
    pub pc_line: Cycles,
    /// Network link bandwidth in bytes per system cycle (4 = 400 MB/s).
    pub link_bytes_per_cycle: u64,
    /// Header bytes of every packet on the wire (32).
    pub header_bytes: u64,
    /// Network latency after a packet has left the link (22, the average of a
    /// small system of about three hops).
    pub net_latency: Cycles,
    /// Outbox slots per lane waiting for the link (the packet on the wire holds
    /// none). A handler that sends into a full lane stalls the PP (2).
    pub outbox_slots: usize,
    /// Cache-line-sized data buffers per node (16).
    pub data_buffers: usize,
    /// Entries the software queue's in-memory part can hold (1024).
    pub swq_capacity: usize,
    /// Inbox service order, highest priority first. The default drains the
    /// network first (it must never back up), then serves the processor (its
    /// misses and commands must not wait behind a long operation), then the
    /// software queue, where long operations continue themselves (network
    /// reply, network request, processor, software).
    pub inbox_priority: [InQueue; 4],
    /// Cycles from a message entering an input queue until the PP can start
    /// its handler (the inbox stage: decode, jump-table lookup). The stage
    /// works in parallel with the PP, so it adds latency, not occupancy (3).
    pub inbox_dispatch: Cycles,
    /// Cycles from a handler's send until the packet can go on the wire, the
    /// outbox stage (2).
    pub outbox_latency: Cycles,
    /// Cycles from the compute processor issuing a request (a miss) to its
    /// entering MAGIC's processor-interface queue (4).
    pub pi_in: Cycles,
    /// Cycles from MAGIC handing the processor interface a reply to the first
    /// word reaching the processor (6).
    pub pi_out: Cycles,
    /// Instructions the PP issues per cycle (2: dual issue).
    pub pp_issue_width: u32,
    /// MAGIC data cache: lines (direct mapped, 128 bytes each). A miss stalls
    /// the handler for a line read from memory (1024, a power of two).
    pub dcache_lines: usize,
    /// Bytes of memory per node (64 MB); addresses beyond are bad addresses.
    pub mem_bytes: u64,
    /// Record timelines from the start (`Magic::trace`): an observation,
    /// not a property of the machine; nothing in the model reads it (off).
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
            trace: false,
        }
    }
}

impl MagicParams {
    /// Cycles a packet with `payload` data bytes holds the link.
    pub fn wire_cycles(&self, payload: u64) -> Cycles {
        Cycles((self.header_bytes + payload).div_ceil(self.link_bytes_per_cycle))
    }

    /// Checks that the parameters describe a machine that can run.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = [false; 4];
        for q in self.inbox_priority {
            if std::mem::replace(&mut seen[q as usize], true) {
                return Err(format!("inbox_priority names {} twice", q.name()));
            }
        }
        if self.link_bytes_per_cycle == 0 {
            return Err("link_bytes_per_cycle must be at least 1".into());
        }
        if self.pp_issue_width == 0 {
            return Err("pp_issue_width must be at least 1".into());
        }
        if self.outbox_slots == 0 {
            return Err("outbox_slots must be at least 1".into());
        }
        if self.data_buffers == 0 || self.data_buffers > u16::MAX as usize {
            return Err("data_buffers must be between 1 and 65535".into());
        }
        if self.dcache_lines == 0 || !self.dcache_lines.is_power_of_two() {
            return Err("dcache_lines must be a power of two".into());
        }
        if !(self.pc_state <= self.pc_first_word && self.pc_first_word <= self.pc_line) {
            return Err("processor-cache timing must satisfy state <= first word <= line".into());
        }
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
    fn a_repeated_inbox_queue_is_rejected() {
        let p = MagicParams {
            inbox_priority: [InQueue::NetReply; 4],
            ..MagicParams::default()
        };
        assert!(p.validate().unwrap_err().contains("twice"));
    }
}
