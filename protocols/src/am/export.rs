//! A platform's measured LogP parameters in other simulators' input forms,
//! so a characterization made here can drive a larger simulation there.
//!
//! - LogGOPSim takes `-L` (latency), `-o` (overhead), `-g` (gap between
//!   messages), `-G` (gap per byte), in nanoseconds.
//! - SimGrid's SMPI takes the send, receive and injection overheads
//!   (`smpi/os`, `smpi/or`, `smpi/ois`, as "offset:factor" piecewise lists,
//!   seconds) and the link's latency and bandwidth in the platform file.

use super::suite::LogP;

/// LogGP parameters derived from a measured [`LogP`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Microseconds.
    pub latency_us: f64,
    pub send_us: f64,
    pub recv_us: f64,
    pub gap_us: f64,
    /// Microseconds per byte of a long message.
    pub gap_per_byte_us: f64,
}

impl From<&LogP> for Params {
    fn from(l: &LogP) -> Params {
        // A round trip is 2L + 4o: the overheads are the ones measured (send
        // and receive at each end, the reply's send for the way back).
        let o = l.send_overhead_us + l.reply_overhead_us + 2.0 * l.recv_overhead_us;
        Params {
            latency_us: ((l.round_trip_us - o) / 2.0).max(0.0),
            send_us: l.send_overhead_us,
            recv_us: l.recv_overhead_us,
            // Back-to-back messages to one receiver go at the slower side's pace.
            gap_us: l.send_overhead_us.max(l.recv_overhead_us),
            gap_per_byte_us: 1.0 / l.bulk.bandwidth_mb_s.max(f64::MIN_POSITIVE),
        }
    }
}

impl Params {
    /// LogGOPSim's command-line flags.
    pub fn loggopsim(&self) -> String {
        let ns = |us: f64| (us * 1000.0).round() as u64;
        format!(
            "-L {} -o {} -g {} -G {:.3}",
            ns(self.latency_us),
            ns((self.send_us + self.recv_us) / 2.0),
            ns(self.gap_us),
            self.gap_per_byte_us * 1000.0
        )
    }

    /// SMPI configuration items and the link's properties.
    pub fn simgrid(&self) -> String {
        let s = |us: f64| us * 1e-6;
        let bw = 1.0 / self.gap_per_byte_us; // bytes per microsecond
        format!(
            "--cfg=smpi/os:0:{os:e}:0\n--cfg=smpi/or:0:{or:e}:0\n--cfg=smpi/ois:0:{os:e}:0\n<link latency=\"{lat:e}s\" bandwidth=\"{bw:.0}Bps\"/>",
            os = s(self.send_us),
            or = s(self.recv_us),
            lat = s(self.latency_us),
            bw = bw * 1e6
        )
    }
}
