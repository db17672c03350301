//! A node's main memory: real bytes plus the timing of its data bus.
//!
//! A read delivers its first doubleword `mem_first_dword` (14) cycles after the
//! address is presented and one doubleword per cycle after that, so a whole
//! line is in at cycle 29. A new address is accepted while the previous line is
//! still streaming: only the data bus, one doubleword per cycle, is shared.
//! A transfer that finds the bus held by another handler's waits for it, and
//! the wait is counted (the ledger's `waiting`); one behind its own
//! handler's earlier transfers is that handler's own pace.

use crate::ids::{LineAddr, LINE_BYTES, LINE_DWORDS};
use crate::pack::{put, put_line, Reader};
use crate::time::Cycles;
use hashbrown::HashMap;

/// A line's bytes into `out`, each 8-byte word as `word` gives it.
pub(crate) fn encode_line(bytes: &[u8], word: &impl Fn(u64) -> u64, out: &mut Vec<u8>) {
    for w in bytes.chunks(8) {
        let mut b = [0u8; 8];
        b[..w.len()].copy_from_slice(w);
        let r = word(u64::from_le_bytes(b)).to_le_bytes();
        out.extend_from_slice(&r[..w.len()]);
    }
}

/// When a line moved over the memory bus: first and last doubleword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineTiming {
    /// When the first doubleword moved (system cycles of 10 ns).
    pub first: Cycles,
    /// When the last doubleword moved (system cycles of 10 ns).
    pub last: Cycles,
}

/// A node's main memory: the bytes of every line written (others read as
/// zeros) and the timeline of its data bus.
#[derive(Clone)]
pub struct Memory {
    /// Lines ever written; others read as zeros.
    lines: HashMap<u64, Box<[u8; LINE_BYTES]>>,
    /// First cycle at which the data bus can carry another doubleword.
    bus_free: Cycles,
    pub(crate) busy: Cycles,
    pub(crate) ops: u64,
    /// Who booked the bus last (a handler's number, or [`ANYONE`]).
    held_by: u32,
    /// Cycles transfers waited for the data bus while another handler's
    /// transfer held it.
    pub(crate) waited: Cycles,
}

/// The owner of a transfer asked for through the public [`Memory::read`]
/// and [`Memory::write`] (or the processor-cache interface's) rather than
/// by a handler: a wait behind any other transfer counts.
pub(crate) const ANYONE: u32 = u32::MAX;

impl Default for Memory {
    fn default() -> Memory {
        Memory {
            lines: HashMap::default(),
            bus_free: Cycles(0),
            held_by: ANYONE,
            busy: Cycles(0),
            ops: 0,
            waited: Cycles(0),
        }
    }
}

impl Memory {
    /// Packed for a search's frontier.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        crate::pack::put_map(out, &self.lines, |out, line| put_line(out, line));
        put(out, self.bus_free.0);
        put(out, self.busy.0);
        put(out, self.ops);
        put(out, self.held_by.wrapping_add(1).into());
        put(out, self.waited.0);
    }

    /// Make this the memory [`Memory::pack`] packed, reusing the storage
    /// of lines it holds already.
    pub(crate) fn unpack(&mut self, r: &mut Reader<'_>) {
        let new = || Box::new([0; LINE_BYTES]);
        crate::pack::read_map(r, &mut self.lines, new, |r, line| r.line(line));
        self.bus_free = r.cycles();
        self.busy = r.cycles();
        self.ops = r.u64();
        self.held_by = r.u32().wrapping_sub(1);
        self.waited = r.cycles();
    }
}

impl Memory {
    pub(crate) fn reset_counters(&mut self) {
        (self.busy, self.ops, self.waited) = (Cycles(0), 0, Cycles(0));
    }

    /// Timing of a line read presented at `at`.
    pub fn read(&mut self, at: Cycles, first_dword: Cycles) -> LineTiming {
        self.stream(at + first_dword, ANYONE)
    }

    /// Timing of a line write handed over at `at`: after `latency` cycles on
    /// the way to memory, the buffer streams over the data bus as soon as it
    /// is free.
    pub fn write(&mut self, at: Cycles, latency: Cycles) -> LineTiming {
        self.stream(at + latency, ANYONE)
    }

    /// [`Memory::read`] for handler `by`.
    pub(crate) fn read_by(&mut self, at: Cycles, first_dword: Cycles, by: u32) -> LineTiming {
        self.stream(at + first_dword, by)
    }

    /// [`Memory::write`] for handler `by`.
    pub(crate) fn write_by(&mut self, at: Cycles, latency: Cycles, by: u32) -> LineTiming {
        self.stream(at + latency, by)
    }

    /// Stream a line for `by` over the data bus from `want`, or once the
    /// bus is free if an earlier transfer holds it then; the difference is
    /// a wait when another handler's transfer held the bus.
    fn stream(&mut self, want: Cycles, by: u32) -> LineTiming {
        let first = want.max(self.bus_free);
        if by != self.held_by || by == ANYONE {
            self.waited += first - want;
        }
        self.held_by = by;
        let last = first + Cycles(LINE_DWORDS - 1);
        self.bus_free = last + Cycles(1);
        self.busy += Cycles(LINE_DWORDS);
        self.ops += 1;
        LineTiming { first, last }
    }

    /// When the data bus is done with every transfer booked so far.
    pub(crate) fn booked_until(&self) -> Cycles {
        self.bus_free
    }

    /// The bytes of a line (functional: no time).
    pub fn line(&self, l: LineAddr) -> [u8; LINE_BYTES] {
        self.lines.get(&l.0).map_or([0; LINE_BYTES], |b| **b)
    }

    /// Every line ever written, with its bytes, in line order (functional:
    /// for checking what a run touched).
    pub fn written(&self) -> impl Iterator<Item = (LineAddr, &[u8; LINE_BYTES])> + '_ {
        // One pass over the table, sorted: no second lookup a line.
        let mut lines: Vec<(LineAddr, &[u8; LINE_BYTES])> = self
            .lines
            .iter()
            .map(|(&l, b)| (LineAddr(l), &**b))
            .collect();
        lines.sort_unstable_by_key(|&(l, _)| l.0);
        lines.into_iter()
    }

    /// Every line that is not all zeros, in address order, into `out`
    /// (the explorer's canonical encoding: no timing, no counters).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        // Every state a search finds is encoded: the lines as they are,
        // whole, where a renaming goes word by word.
        for (l, b) in self.nonzero(out) {
            out.extend_from_slice(&l.to_le_bytes());
            out.extend_from_slice(b);
        }
    }

    /// As `encode`, each 8-byte word of each line given as `word` gives it
    /// (a renaming of the nodes a value names).
    pub(crate) fn encode_words(&self, word: &impl Fn(u64) -> u64, out: &mut Vec<u8>) {
        for (l, b) in self.nonzero(out) {
            out.extend_from_slice(&l.to_le_bytes());
            encode_line(b, word, out);
        }
    }

    /// The lines that are not all zeros, in address order, their count
    /// written to `out` first.
    fn nonzero(&self, out: &mut Vec<u8>) -> Vec<(u64, &[u8; LINE_BYTES])> {
        let lines: Vec<(u64, &[u8; LINE_BYTES])> = self
            .written()
            .filter(|(_, b)| b.iter().any(|&x| x != 0))
            .map(|(l, b)| (l.0, b))
            .collect();
        out.extend_from_slice(&(lines.len() as u32).to_le_bytes());
        lines
    }

    /// Store a whole line (functional: no time).
    pub fn store_line(&mut self, l: LineAddr, bytes: &[u8; LINE_BYTES]) {
        match self.lines.get_mut(&l.0) {
            Some(b) => **b = *bytes,
            None => {
                self.lines.insert(l.0, Box::new(*bytes));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_arrives_at_29_and_reads_pipeline_behind_each_other() {
        let mut m = Memory::default();
        let a = m.read(Cycles(0), Cycles(14));
        assert_eq!(
            a,
            LineTiming {
                first: Cycles(14),
                last: Cycles(29)
            }
        );
        // Presented while the first still streams: its data follows on the bus.
        let b = m.read(Cycles(1), Cycles(14));
        assert_eq!(
            b,
            LineTiming {
                first: Cycles(30),
                last: Cycles(45)
            }
        );
        // Presented late enough, it sees the bare 14-cycle latency again.
        let c = m.read(Cycles(100), Cycles(14));
        assert_eq!(c.first, Cycles(114));
        assert_eq!(m.busy, Cycles(48));
        assert_eq!(m.waited, Cycles(15), "the second read waited 15 cycles");
    }

    #[test]
    fn a_wait_counts_behind_another_handlers_transfer_only() {
        let mut m = Memory::default();
        // Handler 1 reads twice, the second behind the first: its own pace.
        m.read_by(Cycles(0), Cycles(14), 1);
        let b = m.read_by(Cycles(1), Cycles(14), 1);
        assert_eq!((b.first, m.waited), (Cycles(30), Cycles(0)));
        // Handler 2's write finds the bus held by handler 1's read until 46.
        let w = m.write_by(Cycles(30), Cycles(8), 2);
        assert_eq!((w.first, m.waited), (Cycles(46), Cycles(8)));
        // Handler 1 reads behind it: 62 against 54, another 8.
        let r = m.read_by(Cycles(40), Cycles(14), 1);
        assert_eq!((r.first, m.waited), (Cycles(62), Cycles(16)));
        m.reset_counters();
        assert_eq!(m.waited, Cycles(0));
    }

    #[test]
    fn bytes_are_stored() {
        let mut m = Memory::default();
        assert_eq!(m.line(LineAddr(3)), [0; 128]);
        let mut l = [0u8; 128];
        l[7] = 42;
        m.store_line(LineAddr(3), &l);
        assert_eq!(m.line(LineAddr(3))[7], 42);
    }

    /// The canonical encoding lists the lines that are not all zeros in
    /// address order, whatever order they were written in, and is what a
    /// renaming that renames nothing gives, byte for byte.
    #[test]
    fn the_encoding_is_the_nonzero_lines_in_order_as_an_identity_renaming_gives() {
        let mut m = Memory::default();
        let mut l = [0u8; LINE_BYTES];
        for (addr, byte) in [(9u64, 5u8), (2, 0), (4, 7), (1, 3)] {
            l[3] = byte;
            m.store_line(LineAddr(addr), &l);
        }
        let (mut plain, mut renamed) = (Vec::new(), Vec::new());
        m.encode(&mut plain);
        m.encode_words(&|w| w, &mut renamed);
        assert_eq!(plain, renamed);
        assert_eq!(plain.len(), 4 + 3 * (8 + LINE_BYTES));
        assert_eq!(plain[..4], 3u32.to_le_bytes());
        let addrs: Vec<u64> = (0..3)
            .map(|i| {
                let at = 4 + i * (8 + LINE_BYTES);
                u64::from_le_bytes(plain[at..at + 8].try_into().unwrap())
            })
            .collect();
        assert_eq!(addrs, [1, 4, 9]);
    }
}
