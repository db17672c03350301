//! Simulated time.
//!
//! One integer unit, the *tick*, serves every clock in the kit: a tick is
//! 1/26.4 GHz, the least common multiple of the clocks the kit models (the
//! 100 MHz FLASH system clock, the 33 MHz CM-5 processor, its 32 MHz NI timer and
//! the 66 MHz SP processor), so each of their cycles is a whole number of ticks
//! and no conversion ever goes through floating point.
//!
//! MAGIC, its memory and the FLASH network count in [`Cycles`] of the 10 ns
//! system clock; [`Time`] is the engine's absolute clock in ticks.
//!
//! A run's time is exact or the run stops: a FLASH machine's clock ends at
//! [`LAST_CYCLE`], and a handler step, an event or a processor step that
//! would pass it halts the run with an error naming it
//! ([`crate::Halt::EndOfTime`], with the exact cycle asked for), so no
//! result is ever a clamped or wrapped time. Below that end every sum a run
//! makes is exact. The operators themselves never panic or wrap: a sum past
//! `u64::MAX` gives `u64::MAX`, which lies far past [`LAST_CYCLE`] and so is
//! refused like any other time past it, and a difference below zero is zero
//! (the duration from a later point to an earlier one).
//! [`Cycles::checked_add`] says when a sum does not fit. A run also stops
//! at its cycle budget ([`crate::machine::DEFAULT_BUDGET`] unless set), far
//! before the end.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use serde::{Deserialize, Serialize};

/// Ticks in one 10 ns FLASH system cycle.
pub const TICKS_PER_SYSTEM_CYCLE: u64 = 264;
/// Ticks in one 33 MHz CM-5 processor cycle.
pub const TICKS_PER_CM5_CYCLE: u64 = 800;
/// Ticks in one 32 MHz CM-5 NI timer count.
pub const TICKS_PER_CM5_TIMER: u64 = 825;
/// Ticks in one 66 MHz SP (POWER2) processor cycle.
pub const TICKS_PER_SP_CYCLE: u64 = 400;
/// Ticks in one microsecond.
pub const TICKS_PER_US: u64 = 26_400;

/// The latest cycle a FLASH machine's clock reaches, with room to spare
/// below the end of [`Time`]: nothing may be posted later, and a run whose
/// time would pass it halts ([`crate::Halt::EndOfTime`]).
pub const LAST_CYCLE: Cycles = Cycles(u64::MAX / TICKS_PER_SYSTEM_CYCLE / 4);

/// An absolute point in simulated time, in ticks (1/26.4 GHz).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Time(pub u64);

/// A count of 10 ns FLASH system cycles: MAGIC's, memory's and the network's unit.
///
/// Used both for durations and for points in time on a FLASH machine (cycles
/// since the start of the run).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cycles(pub u64);

impl Time {
    /// The start of the run.
    pub const ZERO: Time = Time(0);

    /// The time `c` system cycles after the start of the run: exact for
    /// every cycle up to [`LAST_CYCLE`] (`u64::MAX` ticks past
    /// `u64::MAX / 264` cycles, a time no run reaches).
    pub const fn from_cycles(c: Cycles) -> Time {
        Time(c.0.saturating_mul(TICKS_PER_SYSTEM_CYCLE))
    }

    /// This time in whole system cycles, rounded down.
    pub const fn to_cycles_floor(self) -> Cycles {
        Cycles(self.0 / TICKS_PER_SYSTEM_CYCLE)
    }

    /// This time in microseconds (for reports only; the model never uses it).
    pub fn as_us(self) -> f64 {
        self.0 as f64 / TICKS_PER_US as f64
    }
}

impl Cycles {
    /// No cycles.
    pub const ZERO: Cycles = Cycles(0);

    /// Microseconds for reports (10 ns per cycle).
    pub fn as_us(self) -> f64 {
        self.0 as f64 / 100.0
    }

    /// The later of two points in time.
    #[inline]
    pub fn max(self, o: Cycles) -> Cycles {
        Cycles(self.0.max(o.0))
    }

    /// `self - o`, or zero if `o` is later.
    #[inline]
    pub fn saturating_sub(self, o: Cycles) -> Cycles {
        Cycles(self.0.saturating_sub(o.0))
    }

    /// `self + o`, or `None` if it does not fit a cycle count.
    #[inline]
    pub fn checked_add(self, o: Cycles) -> Option<Cycles> {
        self.0.checked_add(o.0).map(Cycles)
    }
}

/// Exact below `u64::MAX`; a sum past it is `u64::MAX`, past
/// [`LAST_CYCLE`], which a run refuses (see the module documentation).
impl Add for Cycles {
    type Output = Cycles;
    #[inline]
    fn add(self, o: Cycles) -> Cycles {
        Cycles(self.0.saturating_add(o.0))
    }
}

/// As `+`.
impl AddAssign for Cycles {
    #[inline]
    fn add_assign(&mut self, o: Cycles) {
        self.0 = self.0.saturating_add(o.0);
    }
}

/// A later point minus an earlier one, or zero.
impl Sub for Cycles {
    type Output = Cycles;
    #[inline]
    fn sub(self, o: Cycles) -> Cycles {
        Cycles(self.0.saturating_sub(o.0))
    }
}

/// Exact below `u64::MAX` ticks; a sum past it is `u64::MAX`, past every
/// time a run may reach.
impl Add for Time {
    type Output = Time;
    #[inline]
    fn add(self, o: Time) -> Time {
        Time(self.0.saturating_add(o.0))
    }
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}t", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clock_is_a_whole_number_of_ticks() {
        // 26.4 GHz divided by each clock's frequency, exactly.
        assert_eq!(26_400 / 100, TICKS_PER_SYSTEM_CYCLE);
        assert_eq!(26_400 % 33, 0);
        assert_eq!(26_400 / 33, TICKS_PER_CM5_CYCLE);
        assert_eq!(26_400 / 32, TICKS_PER_CM5_TIMER);
        assert_eq!(26_400 / 66, TICKS_PER_SP_CYCLE);
        assert_eq!(Time::from_cycles(Cycles(100)).0, TICKS_PER_US);
        assert_eq!(Time::from_cycles(Cycles(7)).to_cycles_floor(), Cycles(7));
    }

    #[test]
    fn arithmetic_at_the_ends_neither_panics_nor_wraps() {
        // Past `u64::MAX` a sum stays at it, far past the last cycle a
        // run accepts; `checked_add` tells.
        assert!(Cycles(u64::MAX) > LAST_CYCLE);
        assert_eq!(
            Cycles(u64::MAX - 1).checked_add(Cycles(1)),
            Some(Cycles(u64::MAX))
        );
        assert_eq!(Cycles(u64::MAX).checked_add(Cycles(1)), None);
        assert_eq!(
            Time::from_cycles(LAST_CYCLE).0,
            LAST_CYCLE.0 * TICKS_PER_SYSTEM_CYCLE,
            "exact up to the last cycle"
        );
        let end = Cycles(u64::MAX);
        assert_eq!(end + Cycles(1), end);
        assert_eq!(Cycles(1) - Cycles(2), Cycles::ZERO);
        let mut c = Cycles(u64::MAX - 1);
        c += Cycles(5);
        assert_eq!(c, end);
        assert_eq!(Time::from_cycles(end), Time(u64::MAX));
        assert_eq!(Time(u64::MAX) + Time(1), Time(u64::MAX));
    }
}
