//! A byte form for a settled machine's state, in which a search keeps the
//! states it has found and not yet expanded.
//!
//! A search at four nodes holds millions of such states at once. Kept as
//! copies of the machine, each would take several kilobytes, most of it
//! counters at zero, empty queues and the headers of small collections.
//! Packed, an integer takes one byte per seven bits it needs
//! ([`put`]), and a line of data one byte per 8-byte word that is not
//! zero, besides a two-byte mask ([`put_line`]).
//!
//! A [`Reader`] unpacks what was packed, in the same order. Reading past
//! the end gives zeros and marks the reader [`Reader::short`], so a
//! mismatched pair of pack and unpack shows as an error, never as a panic.
//!
//! ```
//! use magic::pack::{put, put_line, Reader};
//! let mut bytes = Vec::new();
//! put(&mut bytes, 300);
//! let mut line = [0u8; 128];
//! line[8] = 7;
//! put_line(&mut bytes, &line);
//! assert_eq!(bytes.len(), 2 + 2 + 8);
//! let mut r = Reader::new(&bytes);
//! assert_eq!(r.u64(), 300);
//! let mut back = [1u8; 128];
//! r.line(&mut back);
//! assert_eq!(back, line);
//! assert!(r.done());
//! ```

use crate::ids::{Lane, Msg, MsgType, NodeId, PAddr, LINE_BYTES};
use crate::time::Cycles;

/// Append `x` as a little-endian base-128 varint: 1 byte below 128, at
/// most 10.
#[inline]
pub fn put(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Append `x` as [`put`] does, `None` as 0 and `Some(v)` as `v + 1`
/// (a 65-bit value, so `Some(u64::MAX)` is not `None`).
#[inline]
pub fn put_opt(out: &mut Vec<u8>, x: Option<u64>) {
    let mut w = x.map_or(0, |v| u128::from(v) + 1);
    while w >= 0x80 {
        out.push(w as u8 | 0x80);
        w >>= 7;
    }
    out.push(w as u8);
}

/// Call `f` on each of a map's entries in the order of their keys, so
/// what is packed from a map does not depend on the order its entries
/// were made in: the same state always packs to the same bytes.
pub fn by_key<V, H>(map: &hashbrown::HashMap<u64, V, H>, mut f: impl FnMut(u64, &V)) {
    if map.len() <= 1 {
        map.iter().for_each(|(&k, v)| f(k, v));
        return;
    }
    let mut v: smallvec::SmallVec<[(u64, &V); 8]> = map.iter().map(|(&k, v)| (k, v)).collect();
    v.sort_unstable_by_key(|e| e.0);
    v.into_iter().for_each(|(k, x)| f(k, x));
}

/// Append a map keyed by numbers: its length, then each key, in key order
/// ([`by_key`]), with what `value` packs of its value.
pub fn put_map<V, H>(
    out: &mut Vec<u8>,
    map: &hashbrown::HashMap<u64, V, H>,
    mut value: impl FnMut(&mut Vec<u8>, &V),
) {
    put(out, map.len() as u64);
    by_key(map, |k, v| {
        put(out, k);
        value(out, v);
    });
}

/// Make `map` the one [`put_map`] packed: each key's value read by `value`
/// into the value the map holds for it already, or into `new()`, and the
/// keys not packed taken out (so the values' storage is reused).
pub fn read_map<V, H: std::hash::BuildHasher>(
    r: &mut Reader<'_>,
    map: &mut hashbrown::HashMap<u64, V, H>,
    new: impl Fn() -> V,
    mut value: impl FnMut(&mut Reader<'_>, &mut V),
) {
    let n = r.count();
    let mut keys = smallvec::SmallVec::<[u64; 8]>::new();
    for _ in 0..n {
        let k = r.u64();
        keys.push(k);
        value(r, map.entry(k).or_insert_with(&new));
    }
    if map.len() != keys.len() {
        map.retain(|k, _| keys.contains(k));
    }
}

/// Words of 8 bytes in a line.
const WORDS: usize = LINE_BYTES / 8;

const _: () = assert!(WORDS <= 16, "a line's mask is 16 bits");

/// Append a line of data: a 16-bit mask of its nonzero 8-byte words, then
/// those words.
pub fn put_line(out: &mut Vec<u8>, line: &[u8; LINE_BYTES]) {
    let mut mask = 0u16;
    for (i, w) in line.chunks_exact(8).enumerate() {
        if w.iter().any(|&b| b != 0) {
            mask |= 1 << i;
        }
    }
    out.extend_from_slice(&mask.to_le_bytes());
    for (i, w) in line.chunks_exact(8).enumerate() {
        if mask & (1 << i) != 0 {
            out.extend_from_slice(w);
        }
    }
}

/// Append a message header, as a model packing its node state packs the
/// messages it keeps ([`crate::check::Model::pack_node`]).
pub fn put_msg(out: &mut Vec<u8>, m: &Msg) {
    put(out, m.mtype.0.into());
    put(out, m.lane as u64);
    put(out, m.src.0.into());
    put(out, m.dest.0.into());
    put(out, m.addr.0);
    put(out, m.len.into());
    for &w in &m.words {
        put(out, w);
    }
}

/// Unpacks, in order, what [`put`], [`put_opt`], [`put_line`] and [`put_msg`] packed.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    short: bool,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader {
            bytes,
            short: false,
        }
    }

    /// A read went past the end, or a value did not fit its type: what was
    /// read is not what was packed.
    pub fn short(&self) -> bool {
        self.short
    }

    /// Every byte was read, and every read was whole.
    pub fn done(&self) -> bool {
        !self.short && self.bytes.is_empty()
    }

    /// Mark what was read as not what was packed: a value out of the range
    /// its type allows.
    pub fn mark_short(&mut self) {
        self.short = true;
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => {
                self.short = true;
                0
            }
        }
    }

    /// A value [`put`] packed. Bits past the 64th (a varint that no
    /// `u64` packs) mark the reader short.
    #[inline]
    pub fn u64(&mut self) -> u64 {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte();
            // The tenth byte holds the 64th bit alone, and ends the value.
            if shift == 63 && b > 1 {
                self.short = true;
                return u64::MAX;
            }
            x |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return x;
            }
        }
        self.short = true;
        x
    }

    /// A varint of up to 10 bytes (70 bits); a longer one marks the
    /// reader short.
    #[inline]
    fn wide(&mut self) -> u128 {
        let mut x = 0u128;
        for shift in (0..70).step_by(7) {
            let b = self.byte();
            x |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return x;
            }
        }
        self.short = true;
        x
    }

    /// A value [`put_opt`] packed; one past `Some(u64::MAX)` marks the
    /// reader short.
    pub fn opt(&mut self) -> Option<u64> {
        let w = self.wide().checked_sub(1)?;
        Some(u64::try_from(w).unwrap_or_else(|_| {
            self.short = true;
            u64::MAX
        }))
    }

    /// A value [`put`] packed that fits a `u32`; one that does not marks
    /// the reader short.
    pub fn u32(&mut self) -> u32 {
        let x = self.u64();
        u32::try_from(x).unwrap_or_else(|_| {
            self.short = true;
            0
        })
    }

    /// A value [`put`] packed that fits a `u16`.
    pub fn u16(&mut self) -> u16 {
        let x = self.u64();
        u16::try_from(x).unwrap_or_else(|_| {
            self.short = true;
            0
        })
    }

    /// A value [`put`] packed that fits a `u8`.
    pub fn u8(&mut self) -> u8 {
        let x = self.u64();
        u8::try_from(x).unwrap_or_else(|_| {
            self.short = true;
            0
        })
    }

    /// A count of items to come, each at least a byte long: one larger
    /// than the bytes left marks the reader short and gives 0, so a bad
    /// count cannot make its reader reserve much.
    pub fn count(&mut self) -> usize {
        let n = self.u64();
        if n > self.bytes.len() as u64 {
            self.short = true;
            return 0;
        }
        n as usize
    }

    /// A boolean [`put`] packed as 0 or 1.
    pub fn bool(&mut self) -> bool {
        match self.u64() {
            0 => false,
            1 => true,
            _ => {
                self.short = true;
                false
            }
        }
    }

    /// A time [`put`] packed.
    pub fn cycles(&mut self) -> Cycles {
        Cycles(self.u64())
    }

    /// A message header [`put_msg`] packed.
    pub fn msg(&mut self) -> Msg {
        Msg {
            mtype: MsgType(self.u8()),
            lane: if self.bool() {
                Lane::Reply
            } else {
                Lane::Request
            },
            src: NodeId(self.u32()),
            dest: NodeId(self.u32()),
            addr: PAddr(self.u64()),
            len: self.u16(),
            words: [self.u64(), self.u64(), self.u64()],
        }
    }

    /// A line [`put_line`] packed, into `line`.
    pub fn line(&mut self, line: &mut [u8; LINE_BYTES]) {
        let mask = u16::from_le_bytes([self.byte(), self.byte()]);
        for (i, w) in line.chunks_exact_mut(8).enumerate() {
            if mask & (1 << i) == 0 {
                w.fill(0);
            } else if let Some((word, rest)) = self.bytes.split_at_checked(8) {
                // A word at once: a restored memory reads thousands.
                w.copy_from_slice(word);
                self.bytes = rest;
            } else {
                // Cut short: what is left, then zeros, as byte by byte.
                for b in w {
                    *b = self.byte();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_packed_is_what_is_read() {
        let xs = [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        let mut out = Vec::new();
        for &x in &xs {
            put(&mut out, x);
        }
        put_opt(&mut out, None);
        put_opt(&mut out, Some(0));
        let mut line = [0u8; LINE_BYTES];
        line[0] = 1;
        line[LINE_BYTES - 1] = 0xff;
        put_line(&mut out, &line);
        let mut r = Reader::new(&out);
        for &x in &xs {
            assert_eq!(r.u64(), x);
        }
        assert_eq!((r.opt(), r.opt()), (None, Some(0)));
        let mut back = [9u8; LINE_BYTES];
        r.line(&mut back);
        assert_eq!(back, line);
        assert!(r.done());
    }

    /// `Some(u64::MAX)` is a value, not `None`; bytes no `put` or
    /// `put_opt` writes (a varint past 64 or 65 bits, or past 10 bytes)
    /// mark the reader short rather than reading as a plausible value.
    #[test]
    fn the_largest_values_read_back_and_wider_ones_are_refused() {
        let mut out = Vec::new();
        put_opt(&mut out, Some(u64::MAX));
        put_opt(&mut out, Some(u64::MAX - 1));
        let mut r = Reader::new(&out);
        assert_eq!((r.opt(), r.opt()), (Some(u64::MAX), Some(u64::MAX - 1)));
        assert!(r.done());
        // 70 bits: past a u64 and past an option's 65.
        let wide = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        let mut r = Reader::new(&wide);
        r.u64();
        assert!(r.short());
        let mut r = Reader::new(&wide);
        r.opt();
        assert!(r.short());
        // Eleven bytes: longer than any varint written.
        let long = [0x80; 11];
        let mut r = Reader::new(&long);
        r.u64();
        assert!(r.short());
        // A u64's 65th bit, which only an option may carry.
        let mut out = Vec::new();
        put_opt(&mut out, Some(u64::MAX));
        let mut r = Reader::new(&out);
        r.u64();
        assert!(r.short());
    }

    #[test]
    fn a_message_header_reads_back_whole() {
        let m = Msg {
            mtype: MsgType(7),
            lane: Lane::Reply,
            src: NodeId(3),
            dest: NodeId(u32::MAX),
            addr: PAddr(0x1234_5678_9abc),
            len: 128,
            words: [0, u64::MAX, 42],
        };
        let mut out = Vec::new();
        put_msg(&mut out, &m);
        let mut r = Reader::new(&out);
        assert_eq!(r.msg(), m);
        assert!(r.done());
    }

    #[test]
    fn a_read_past_the_end_or_too_wide_is_short() {
        let mut out = Vec::new();
        put(&mut out, 1 << 20);
        let mut r = Reader::new(&out);
        assert_eq!(r.u16(), 0);
        assert!(r.short());
        let mut r = Reader::new(&out);
        r.u64();
        assert_eq!(r.u64(), 0);
        assert!(r.short() && !r.done());
        let mut r = Reader::new(&[0xff; 3]);
        r.u64();
        assert!(r.short());
        let mut r = Reader::new(&[200]);
        assert_eq!(r.count(), 0);
        assert!(r.short());
    }
}
