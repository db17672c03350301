//! Many readers of one line, some of them evicting it, then a writer: what
//! sharing costs the home (`[sharing]` in a scenario file).
//!
//! The line is homed at node 0. Nodes 1 to `readers` load it; then the first
//! `evicting` of them drop their copies (a replacement hint each, when hints
//! are on); then the last node writes it. Each phase runs until the machine
//! is quiet, and the counters restart between phases, so the hints' ledger
//! and the write's are each their own: the cost per hint is the home's
//! `home_replace` occupancy over the hints, and the cost per invalidation is
//! the home's occupancy for the write over the invalidations it sent.

use crate::processor::Access;
use crate::protocol::{self, CohParams};
use crate::Error;
use magic::ledger::{exact, ExactHandlerRow, ExactUnitRow};
use magic::{Cycles, Ledger, Magic, MagicParams, NodeId, OutOfRange, PAddr, Region};
use serde::{Deserialize, Serialize};

/// The workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sharing {
    /// Nodes reading the line (1 to 4094); the machine has two more nodes,
    /// the home and the writer.
    pub readers: u32,
    /// Readers that drop their copies before the write (0 to `readers`).
    pub evicting: u32,
}

impl Default for Sharing {
    fn default() -> Self {
        Sharing {
            readers: 8,
            evicting: 3,
        }
    }
}

/// One sharing experiment, whole: the workload, the machine and the
/// protocol's options and costs. Every [`SharingRun`] carries it, so
/// [`run_config`] runs a saved result again; it serializes whole and reads
/// back the same, a field left out keeping its default and a field it does
/// not have refused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The workload (default [`Sharing::default`]).
    pub sharing: Sharing,
    /// The machine (default FLASH's, [`MagicParams::default`]).
    pub params: MagicParams,
    /// The directory protocol's options and costs (default
    /// [`CohParams::default`]).
    pub coherence: CohParams,
}

/// What the phases cost: plain data that carries what made it (its
/// [`Config`] and the kit's version) and keeps its counts.
///
/// Its `Serialize` is the JSON `flashkit run --format json` prints for a
/// `[sharing]` scenario: the configuration and version, the workload, the
/// counts with the cycles per hint and per invalidation exact, and each
/// phase's ledger (its counters, its figures exact); `Deserialize` reads
/// that back to an equal value, refusing a figure its counts do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct SharingRun {
    /// The version of the kit that ran it (`coherence`'s package version).
    pub version: String,
    /// The experiment.
    pub config: Config,
    /// The workload (`config.sharing`).
    pub sharing: Sharing,
    /// Nodes in the machine.
    pub nodes: u32,
    /// Replacement hints the home took.
    pub hints: u64,
    /// The home's PP cycles taking them.
    pub hint_cycles: u64,
    /// Invalidations the home sent for the write.
    pub invalidations: u64,
    /// The home's PP cycles for the write: the request, the invalidations,
    /// and the acknowledgements (or, with the writer collecting them, the
    /// request alone).
    pub write_cycles: u64,
    /// The write's latency at the writer's processor.
    pub write_latency: Cycles,
    /// Pointer-store links in use at the home before the write.
    pub links: u32,
    /// Lists the home reclaimed because its pointer store was full.
    pub reclaims: u64,
    /// The hints' ledger.
    pub hint_ledger: Ledger,
    /// The write's ledger.
    pub write_ledger: Ledger,
}

impl SharingRun {
    /// The home's cycles per hint taken, `None` when it took none (no
    /// hint, no figure): the one place it is computed.
    pub fn per_hint(&self) -> Option<f64> {
        (self.hints > 0).then(|| self.hint_cycles as f64 / self.hints as f64)
    }

    /// The home's cycles for the write per invalidation sent, `None` when
    /// it sent none: the one place it is computed.
    pub fn per_invalidation(&self) -> Option<f64> {
        (self.invalidations > 0).then(|| self.write_cycles as f64 / self.invalidations as f64)
    }
}

/// A phase's ledger as a sharing result's JSON holds it: its counters,
/// its figures exact.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireLedger {
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

impl WireLedger {
    fn new(l: &Ledger) -> Self {
        WireLedger {
            occupancy_cycles: l.elapsed.0,
            occupancy_booked_cycles: l.booked.0,
            occupancy: l.exact_handlers(),
            units: l.exact_units(),
        }
    }

    fn read(self, phase: &str, nodes: u32) -> Result<Ledger, String> {
        Ledger::from_exact(
            Cycles(self.occupancy_cycles),
            Cycles(self.occupancy_booked_cycles),
            nodes,
            self.occupancy,
            self.units,
        )
        .map_err(|e| format!("{phase}: {e}"))
    }
}

/// The JSON of a [`SharingRun`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: String,
    config: Config,
    readers: u32,
    evicting: u32,
    directory: String,
    nodes: u32,
    hints: u64,
    hint_cycles: u64,
    per_hint: Option<f64>,
    invalidations: u64,
    write_cycles: u64,
    per_invalidation: Option<f64>,
    write_latency_cycles: u64,
    links: u32,
    reclaims: u64,
    hint_ledger: WireLedger,
    write_ledger: WireLedger,
}

/// The JSON `flashkit run --format json` prints for a `[sharing]` scenario.
impl Serialize for SharingRun {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        Wire {
            version: self.version.clone(),
            config: self.config.clone(),
            readers: self.sharing.readers,
            evicting: self.sharing.evicting,
            directory: self.config.coherence.format.name().to_string(),
            nodes: self.nodes,
            hints: self.hints,
            hint_cycles: self.hint_cycles,
            per_hint: self.per_hint(),
            invalidations: self.invalidations,
            write_cycles: self.write_cycles,
            per_invalidation: self.per_invalidation(),
            write_latency_cycles: self.write_latency.0,
            links: self.links,
            reclaims: self.reclaims,
            hint_ledger: WireLedger::new(&self.hint_ledger),
            write_ledger: WireLedger::new(&self.write_ledger),
        }
        .serialize(s)
    }
}

/// Reads a sharing result's JSON back: the figures are computed from the
/// counts again, and one the counts do not give is refused, naming it.
impl<'de> Deserialize<'de> for SharingRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        let read = || -> Result<SharingRun, String> {
            let s = w.config.sharing;
            // The configuration as the run checks it: no run takes another.
            let c = &w.config;
            protocol::saved_params(&c.params, &c.coherence)?;
            s.validate(&c.params)
                .map_err(|e| format!("config.sharing.{e}"))?;
            // Each evicting reader sends the home one hint at most.
            if w.hints > u64::from(s.evicting) {
                return Err(format!(
                    "hints is {}, more than the {} evicting readers send",
                    w.hints, s.evicting
                ));
            }
            let want = w.config.coherence.format.name();
            // The first figure its configuration does not give, named.
            let off = [
                ("readers", w.readers != s.readers, s.readers.to_string()),
                ("evicting", w.evicting != s.evicting, s.evicting.to_string()),
                ("directory", w.directory != want, want.to_string()),
                (
                    "nodes",
                    w.nodes != s.readers.saturating_add(2),
                    s.readers.saturating_add(2).to_string(),
                ),
            ];
            if let Some((key, _, given)) = off.into_iter().find(|x| x.1) {
                return Err(format!(
                    "{key} disagrees with the result's config, which gives {given}"
                ));
            }
            let r = SharingRun {
                version: w.version,
                config: w.config,
                sharing: s,
                nodes: w.nodes,
                hints: w.hints,
                hint_cycles: w.hint_cycles,
                invalidations: w.invalidations,
                write_cycles: w.write_cycles,
                write_latency: Cycles(w.write_latency_cycles),
                links: w.links,
                reclaims: w.reclaims,
                hint_ledger: w.hint_ledger.read("hint_ledger", w.nodes)?,
                write_ledger: w.write_ledger.read("write_ledger", w.nodes)?,
            };
            for (k, json, counts, none) in [
                ("per_hint", w.per_hint, r.per_hint(), "no hint was taken"),
                (
                    "per_invalidation",
                    w.per_invalidation,
                    r.per_invalidation(),
                    "no invalidation was sent",
                ),
            ] {
                match (json, counts) {
                    (Some(j), Some(x)) => exact(k, j, x)?,
                    (None, None) => {}
                    (Some(j), None) => return Err(format!("{k} is {j}, but {none}")),
                    (None, Some(x)) => return Err(format!("{k} is null, but the counts give {x}")),
                }
            }
            Ok(r)
        };
        read().map_err(serde::de::Error::custom)
    }
}

fn home_cycles(l: &Ledger, handlers: &[&str]) -> u64 {
    l.handlers
        .iter()
        .filter(|h| h.node == Some(0) && handlers.iter().any(|n| h.handler == *n))
        .map(|h| h.stats.busy)
        .sum()
}

fn settle(m: &mut Magic<protocol::CohNode>, what: &'static str) -> Result<(), Error> {
    let r = m.run();
    if r.is_clean() {
        Ok(())
    } else {
        Err(Error::Stuck {
            what,
            stuck: r.problems().join("; "),
        })
    }
}

/// The line every reader shares, homed at node 0.
const LINE: u64 = 0x4000;

impl Sharing {
    /// The workload is one a machine with `params` can run: 1 to 4094
    /// readers (the machine has two more nodes), at most as many evicting,
    /// and a memory that holds the shared line. The error names the field.
    pub fn validate(&self, params: &MagicParams) -> Result<(), OutOfRange> {
        OutOfRange::check("readers", self.readers, 1, 4094)?;
        OutOfRange::check("evicting", self.evicting, 0, self.readers)?;
        let need = LINE + 128;
        if params.mem_bytes < need {
            let allowed = format!("at least {need} for the shared line");
            return Err(OutOfRange::new("mem_bytes", allowed, params.mem_bytes));
        }
        Ok(())
    }
}

/// Run the workload a [`Config`] describes (a saved [`SharingRun`]'s, say):
/// the same result, equal, on this kit.
pub fn run_config(c: &Config) -> Result<SharingRun, Error> {
    run(c.sharing, c.params.clone(), c.coherence)
}

/// Run the workload on a fresh machine.
pub fn run(s: Sharing, params: MagicParams, coh: CohParams) -> Result<SharingRun, Error> {
    s.validate(&params)?;
    protocol::by_node_bits(&coh)?;
    let config = Config {
        sharing: s,
        // Whether the run recorded its timelines is not part of what ran.
        params: MagicParams {
            trace: false,
            ..params.clone()
        },
        coherence: coh,
    };
    let nodes = s.readers + 2;
    let mut m = protocol::machine(params, coh, nodes)?;
    let line = PAddr::new(Region::Normal, NodeId(0), LINE);
    let start = |m: &mut Magic<protocol::CohNode>, n: u32, a: Access| {
        m.state_mut(NodeId(n))?.proc.push([a]);
        let now = m.now();
        m.start_processor(NodeId(n), now).map_err(Error::Machine)
    };
    for n in 1..=s.readers {
        start(&mut m, n, Access::Load(line))?;
    }
    settle(&mut m, "read phase")?;
    m.reset_counters()?;
    for n in 1..=s.evicting {
        start(&mut m, n, Access::Evict(line))?;
    }
    settle(&mut m, "eviction phase")?;
    let hint_ledger = m.ledger();
    let hints = m.state(NodeId(0))?.stats.hints;
    let links = m.state(NodeId(0))?.links_used();
    m.reset_counters()?;
    let before = m.state(NodeId(0))?.stats.invalidations;
    let writer = nodes - 1;
    start(&mut m, writer, Access::Store(line, 1))?;
    settle(&mut m, "write")?;
    let write_ledger = m.ledger();
    let write_latency = m
        .state(NodeId(writer))?
        .proc
        .results
        .last()
        .map(|r| r.latency())
        .ok_or(Error::Stuck {
            what: "write",
            stuck: "no result reached the writer's processor".into(),
        })?;
    Ok(SharingRun {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config,
        sharing: s,
        nodes,
        hints,
        hint_cycles: home_cycles(&hint_ledger, &["coherence.home_replace"]),
        invalidations: m.state(NodeId(0))?.stats.invalidations - before,
        write_cycles: home_cycles(
            &write_ledger,
            &["coherence.home_request", "coherence.inval_ack"],
        ),
        write_latency,
        links,
        reclaims: m.state(NodeId(0))?.stats.reclaims,
        hint_ledger,
        write_ledger,
    })
}
