//! Command sequences: how user code talks to MAGIC without a system call.
//!
//! A sequence is a series of uncached writes to the message space, carrying
//! information in both address and data, then one uncached read that commits
//! it and returns ACK or NACK. The writes accumulate in a *protocol operation
//! record* in MAGIC memory, one per PID: a context switch in the middle of a
//! sequence leaves it intact, and nothing another process does can reach it.
//!
//! Message-space addresses: at or above [`COMMAND_BASE`], a command register
//! (field = (offset - base) / 8, value = the data); below the node's memory
//! size, a *shadow* reference: the authentic physical address of a page the
//! process has mapped (the data word is the virtual address it used). A read
//! shadow names a source page; a write shadow (the [`WRITE_SHADOW`] bit set,
//! mapped only for writable pages) names a destination page.

use super::pages::UseRef;
use arrayvec::ArrayVec;
use magic::message::Word;
use magic::{NodeId, PAddr, Region};
use os_shim::Pid;
use serde::Serialize;

/// Offset of the first command register in the message space.
pub const COMMAND_BASE: u64 = 1 << 39;
pub use os_shim::WRITE_SHADOW;
/// Pages an operation may name on each side.
pub const MAX_PAGES: usize = 8;

/// In a `Field::Flags` value: ask for hold-off protection. Fetch-and-add and
/// memory copy always have it; a send that asks for it is refused.
pub const FLAG_HOLDOFF: u64 = 1;

/// Command registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Field {
    /// The operation code.
    Op = 0,
    /// Operand: the value to add, or the length in bytes.
    Arg = 1,
    /// Destination virtual PID.
    Vpid = 2,
    /// Source virtual address (operations MAGIC translates itself).
    Vaddr = 3,
    /// Flags (`FLAG_HOLDOFF`: ask for hold-off protection).
    Flags = 4,
}

/// Command registers in all.
pub const FIELDS: usize = 5;

impl Field {
    /// The message-space address of this register on `node`.
    pub fn addr(self, node: NodeId) -> PAddr {
        PAddr::new(Region::Message, node, COMMAND_BASE + self as u64 * 8)
    }

    /// The virtual address of this register in every process: the OS maps
    /// the command page there.
    pub fn va(self) -> u64 {
        COMMAND_VA + self as u64 * 8
    }
}

/// Where the OS maps the command page in every process.
pub const COMMAND_VA: u64 = 0x7000_0000;
/// Virtual addresses with this bit set are the read shadow of the same
/// address without it: the OS maps a process's readable pages' shadows there.
pub const SHADOW_VA: u64 = 1 << 44;
/// ... and with this bit, the write shadow (writable pages only).
pub const SHADOW_WRITE_VA: u64 = 1 << 45;

/// The read-shadow virtual address of `vaddr` (names a source).
pub fn shadow_va(vaddr: u64) -> u64 {
    vaddr | SHADOW_VA
}

/// The write-shadow virtual address of `vaddr` (names a destination).
pub fn shadow_dst_va(vaddr: u64) -> u64 {
    vaddr | SHADOW_WRITE_VA
}

/// Operations a sequence can start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OpCode {
    /// Add `Arg` to the word at the (first, shadow) target; the old value comes back.
    FetchAdd = 1,
    /// Copy `Arg` bytes from the source pages to the destination pages.
    MemCopy = 2,
    /// Send `Arg` bytes from the source pages (authentic physical, kept valid
    /// by invalidation) to the destination pages of virtual PID `Vpid`.
    SendPhys = 3,
    /// Send `Arg` bytes from virtual address `Vaddr` (translated by MAGIC's
    /// software TLB) to the destination pages of virtual PID `Vpid`.
    SendVirt = 4,
}

impl OpCode {
    /// The operation a command register's value names, if any.
    pub fn from_u64(v: u64) -> Option<OpCode> {
        Some(match v {
            1 => OpCode::FetchAdd,
            2 => OpCode::MemCopy,
            3 => OpCode::SendPhys,
            4 => OpCode::SendVirt,
            _ => return None,
        })
    }

    /// Completes without any process's help, so hold-off may protect it.
    pub fn holds_off(self) -> bool {
        matches!(self, OpCode::FetchAdd | OpCode::MemCopy)
    }
}

/// An operation travels in a message (a line of a copy or send) as its code.
impl Word for OpCode {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<OpCode> {
        OpCode::from_u64(w)
    }
}

/// Why a commit was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Nack {
    /// No free operation record (or the PID's record is busy with an operation).
    NoRecord = 1,
    /// Another resource (a data buffer) is short: try again.
    NoResource = 2,
    /// Unknown operation, missing field, bad address or length.
    Malformed = 3,
    /// Not allowed for this PID (no such peer in its group, no write right).
    NotAllowed = 4,
    /// A translation change is waiting for hold-off operations to drain.
    HoldOffDrain = 5,
}

impl Nack {
    /// The refusal a code names, if any.
    pub fn from_u64(v: u64) -> Option<Nack> {
        Some(match v {
            1 => Nack::NoRecord,
            2 => Nack::NoResource,
            3 => Nack::Malformed,
            4 => Nack::NotAllowed,
            5 => Nack::HoldOffDrain,
            _ => return None,
        })
    }

    /// Worth retrying after a back-off.
    pub fn transient(self) -> bool {
        matches!(self, Nack::NoRecord | Nack::NoResource | Nack::HoldOffDrain)
    }
}

/// A refusal travels to the processor as its code.
impl Word for Nack {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Nack> {
        Nack::from_u64(w)
    }
}

/// A page an operation uses.
#[derive(Clone)]
pub struct PageRef {
    /// Physical page (normal space, page aligned).
    pub page: PAddr,
    /// The virtual page the process named (unauthenticated; for the OS).
    pub vaddr: u64,
    /// The use linked in the in-use page table (invalidation technique).
    pub link: Option<UseRef>,
}

/// Where a record's operation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RecState {
    /// Accumulating a command sequence.
    Open,
    /// Accepted and under way.
    Running,
    /// Stopped on a stale translation, waiting for the OS's answer.
    WaitTranslation,
}

/// A protocol operation record.
#[derive(Clone)]
pub struct OpRecord {
    /// The process whose sequence it is.
    pub pid: Pid,
    /// Where its operation stands.
    pub state: RecState,
    /// The command registers written, by [`Field`].
    pub fields: [Option<u64>; FIELDS],
    /// Exact word address of the first source shadow write (fetch-and-op target).
    pub target: Option<PAddr>,
    /// Source pages (read shadows), in order.
    pub src: ArrayVec<PageRef, MAX_PAGES>,
    /// Destination pages (write shadows), in order.
    pub dst: ArrayVec<PAddr, MAX_PAGES>,
    /// A write the record could not take (bad field, too many pages).
    pub malformed: bool,
    /// Lines sent so far (copy and send).
    pub sent: u32,
    /// Destination (node, PID) of a send.
    pub peer: Option<(NodeId, Pid)>,
    /// When the sequence was accepted (for start-up figures).
    pub accepted_at: u64,
}

impl OpRecord {
    /// An open record for `pid`'s sequence.
    pub fn new(pid: Pid) -> OpRecord {
        OpRecord {
            pid,
            state: RecState::Open,
            fields: [None; FIELDS],
            target: None,
            src: ArrayVec::new(),
            dst: ArrayVec::new(),
            malformed: false,
            sent: 0,
            peer: None,
            accepted_at: 0,
        }
    }

    /// The operation the sequence names, if it names one.
    pub fn op(&self) -> Option<OpCode> {
        self.fields[Field::Op as usize].and_then(OpCode::from_u64)
    }

    /// The operand register.
    pub fn arg(&self) -> Option<u64> {
        self.fields[Field::Arg as usize]
    }

    /// Take one uncached write of the sequence. A message-space address is
    /// either a command register or a shadow page reference.
    pub fn write(&mut self, addr: PAddr, data: u64, mem_bytes: u64) {
        let off = addr.offset();
        if off >= COMMAND_BASE {
            let f = ((off - COMMAND_BASE) / 8) as usize;
            match self.fields.get_mut(f) {
                Some(slot) if (off - COMMAND_BASE).is_multiple_of(8) => *slot = Some(data),
                _ => self.malformed = true,
            }
        } else if off & !WRITE_SHADOW < mem_bytes {
            let plain = PAddr(addr.with_region(Region::Normal).0 & !WRITE_SHADOW);
            let page = PAddr(plain.0 & !(os_shim::PAGE_BYTES - 1));
            if off & WRITE_SHADOW != 0 {
                if self.dst.try_push(page).is_err() {
                    self.malformed = true;
                }
            } else {
                if self.target.is_none() {
                    self.target = Some(plain);
                }
                let r = PageRef {
                    page,
                    vaddr: data,
                    link: None,
                };
                if self.src.try_push(r).is_err() {
                    self.malformed = true;
                }
            }
        } else {
            self.malformed = true;
        }
    }

    /// The lines an operation of `len` bytes moves.
    pub fn lines(&self) -> u32 {
        self.arg()
            .map_or(0, |l| l.div_ceil(magic::LINE_BYTES as u64) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_fill_fields_and_pages_and_flag_garbage() {
        let n = NodeId(1);
        let mut r = OpRecord::new(Pid(3));
        r.write(Field::Op.addr(n), OpCode::MemCopy as u64, 1 << 20);
        r.write(Field::Arg.addr(n), 4096, 1 << 20);
        let shadow = PAddr::new(Region::Message, n, 0x3000 + 40);
        r.write(shadow, 0x7000, 1 << 20);
        r.write(
            PAddr::new(Region::Message, NodeId(2), 0x5000 | WRITE_SHADOW),
            0x9000,
            1 << 20,
        );
        assert_eq!(r.op(), Some(OpCode::MemCopy));
        assert_eq!(r.src[0].page, PAddr::new(Region::Normal, n, 0x3000));
        assert_eq!(r.target, Some(PAddr::new(Region::Normal, n, 0x3028)));
        assert_eq!(r.dst[0], PAddr::new(Region::Normal, NodeId(2), 0x5000));
        assert_eq!(r.lines(), 32);
        assert!(!r.malformed);
        r.write(
            PAddr::new(Region::Message, n, COMMAND_BASE + 5 * 8),
            1,
            1 << 20,
        );
        assert!(r.malformed, "no such register");
        let mut r = OpRecord::new(Pid(3));
        r.write(PAddr::new(Region::Message, n, 1 << 30), 1, 1 << 20);
        assert!(r.malformed, "beyond memory and below the registers");
    }
}
