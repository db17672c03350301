//! Small identifiers and the message header every unit passes around.

use core::fmt;
use serde::Serialize;

/// A node of the machine (0-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The node's number as an index (into per-node vectors).
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A message type: with the address region, the index into MAGIC's jump table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct MsgType(pub u8);

/// A handler registered with a machine (index into its handler list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct HandlerId(pub u16);

/// One of the node's cache-line-sized data buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct BufId(pub u16);

/// A virtual lane of the network. Requests and replies never share a queue, so a
/// full request lane can never keep a reply from being delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Lane {
    /// The request lane, every message kind's unless it says otherwise.
    Request = 0,
    /// The reply lane, which no request can block.
    Reply = 1,
}

/// Bytes in a cache line (and in a data buffer, and in a full packet's payload).
pub const LINE_BYTES: usize = 128;
/// Doublewords (64-bit) in a cache line.
pub const LINE_DWORDS: u64 = 16;

/// The four physical address-space regions. The region selects the jump-table
/// column, so references to alternate spaces reach their own handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Region {
    /// Ordinary memory, cached by the compute processor.
    Normal = 0,
    /// I/O space, reaching handlers of its own.
    Io = 1,
    /// The message region: the shadow mapping of memory, through which
    /// commands and authenticated addresses reach their handlers.
    Message = 2,
    /// The reserved region, for MAGIC's own use.
    Reserved = 3,
}

impl Region {
    /// The four regions, in jump-table column order.
    pub const ALL: [Region; 4] = [
        Region::Normal,
        Region::Io,
        Region::Message,
        Region::Reserved,
    ];
}

/// A physical address.
///
/// Layout (a documented model choice; the paper fixes none): bits 0..40 are the
/// byte offset within a node's memory, bits 40..48 the node, bits 48..50 the
/// region. A shadow mapping differs from the normal one only in the region bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PAddr(pub u64);

/// A cache-line number within one node's memory (byte offset / 128).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct LineAddr(pub u64);

impl PAddr {
    /// Bits of the byte offset within a node's memory (40: up to 1 TB a node).
    pub const OFFSET_BITS: u32 = 40;
    /// Bits of the node number (12: up to 4096 nodes, FLASH's design point).
    pub const NODE_BITS: u32 = 12;
    /// The most nodes an address can name, so the most a machine has
    /// (4096).
    pub const MAX_NODES: u32 = 1 << Self::NODE_BITS;
    const REGION_SHIFT: u32 = Self::OFFSET_BITS + Self::NODE_BITS;

    /// The address of byte `offset` of `node`'s memory, seen through `region`.
    /// Bits of `node` and `offset` beyond their fields are dropped.
    pub const fn new(region: Region, node: NodeId, offset: u64) -> PAddr {
        PAddr(
            ((region as u64) << Self::REGION_SHIFT)
                | (((node.0 as u64) & ((1 << Self::NODE_BITS) - 1)) << Self::OFFSET_BITS)
                | (offset & ((1 << Self::OFFSET_BITS) - 1)),
        )
    }

    /// The region this address is in.
    pub const fn region(self) -> Region {
        match (self.0 >> Self::REGION_SHIFT) & 3 {
            0 => Region::Normal,
            1 => Region::Io,
            2 => Region::Message,
            _ => Region::Reserved,
        }
    }

    /// The node whose memory holds this address.
    pub const fn node(self) -> NodeId {
        NodeId(((self.0 >> Self::OFFSET_BITS) & ((1 << Self::NODE_BITS) - 1)) as u32)
    }

    /// Byte offset within the node's memory.
    pub const fn offset(self) -> u64 {
        self.0 & ((1 << Self::OFFSET_BITS) - 1)
    }

    /// The cache line holding this address (within its node's memory).
    pub const fn line(self) -> LineAddr {
        LineAddr(self.offset() / LINE_BYTES as u64)
    }

    /// The same location seen through another region (the shadow mapping).
    pub const fn with_region(self, r: Region) -> PAddr {
        PAddr::new(r, self.node(), self.offset())
    }
}

impl fmt::Display for PAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}:n{}:{:#x}",
            self.region(),
            self.node(),
            self.offset()
        )
    }
}

/// A message header: what the inbox hands the protocol processor and what a
/// packet carries on the network (32 header bytes on the wire).
///
/// The payload words are private: a protocol reads them only through its
/// typed message (see [`crate::message`]), and builds a message with
/// `Cx::msg`, `Processor::msg` or `Magic::msg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    /// The message type (numbered by the machine's registry).
    pub mtype: MsgType,
    /// The network lane the message travels on.
    pub lane: Lane,
    /// The node that sent the message.
    pub src: NodeId,
    /// The node the message is for.
    pub dest: NodeId,
    /// The address the message is about (a line, a command, a shadow).
    pub addr: PAddr,
    /// Payload bytes the packet carries on the wire (0..=128). A packet may
    /// declare a payload without bytes (see `Cx::send`).
    pub len: u16,
    pub(crate) words: [u64; 3],
}

impl Msg {
    /// A raw header (inside this crate: the comparison platforms' packets).
    pub(crate) fn new(mtype: MsgType, src: NodeId, dest: NodeId) -> Msg {
        Msg {
            mtype,
            lane: Lane::Request,
            src,
            dest,
            addr: PAddr::default(),
            len: 0,
            words: [0; 3],
        }
    }

    /// The same message to another node.
    pub fn to(mut self, dest: NodeId) -> Msg {
        self.dest = dest;
        self
    }

    /// The same message on another lane.
    pub fn lane(mut self, lane: Lane) -> Msg {
        self.lane = lane;
        self
    }

    /// The same message about another address.
    pub fn addr(mut self, addr: PAddr) -> Msg {
        self.addr = addr;
        self
    }

    pub(crate) fn words(mut self, words: [u64; 3]) -> Msg {
        self.words = words;
        self
    }

    /// The same message declaring `len` payload bytes on the wire (0..=128).
    pub fn len(mut self, len: u16) -> Msg {
        self.len = len;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_fields_round_trip() {
        let a = PAddr::new(Region::Message, NodeId(5), 0x1234_5680);
        assert_eq!(a.region(), Region::Message);
        assert_eq!(a.node(), NodeId(5));
        assert_eq!(a.offset(), 0x1234_5680);
        assert_eq!(a.line(), LineAddr(0x1234_5680 / 128));
        let s = a.with_region(Region::Normal);
        assert_eq!(
            (s.region(), s.node(), s.offset()),
            (Region::Normal, NodeId(5), a.offset())
        );
    }
}
