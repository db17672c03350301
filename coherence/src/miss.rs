//! One read miss, seen from the processor: the `flashkit miss` experiment.
//!
//! Three nodes or more. Node 0's processor loads a word of a line that is
//! - `local-clean`: homed at node 0, in no cache;
//! - `remote-clean`: homed at node 1, in no cache;
//! - `remote-dirty`: homed at node 1, dirty in node 2's cache.
//!
//! The latency is the processor's: from issuing the load to having the word.
//! MAGIC's data cache is warm, as in a running machine: the processor first
//! misses on a neighbouring line in the same state (whose directory entry
//! shares a data-cache line with the measured one's); when the machine is
//! quiet again the ledger restarts and the processor misses on the measured
//! line.

use crate::processor::Access;
use crate::protocol::{self, CohParams};
use crate::Error;
use magic::ledger::{exact, ExactHandlerRow, ExactUnitRow};
use magic::{Cycles, Ledger, LineState, Magic, MagicParams, NodeId, OutOfRange, PAddr, Region};
use serde::{Deserialize, Serialize};

/// Where the missed line is (see the module's description).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    /// Homed at the requester, in no cache.
    LocalClean,
    /// Homed at another node, in no cache (the default).
    #[default]
    RemoteClean,
    /// Homed at another node, dirty in a third node's cache.
    RemoteDirty,
}

impl Case {
    /// Every case, in the order the experiment reports them.
    pub const ALL: [Case; 3] = [Case::LocalClean, Case::RemoteClean, Case::RemoteDirty];

    /// The case as the command line names it.
    pub fn name(self) -> &'static str {
        match self {
            Case::LocalClean => "local-clean",
            Case::RemoteClean => "remote-clean",
            Case::RemoteDirty => "remote-dirty",
        }
    }
}

/// One miss experiment, whole: which miss, where its lines are, the
/// machine and the protocol's options and costs. Every [`MissRun`] carries
/// it, so [`run_config`] measures a saved result again; it serializes
/// whole and reads back the same, a field left out keeping its default and
/// a field it does not have refused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Which miss (default remote-clean).
    pub case: Case,
    /// Where its lines are and who holds the dirty one (default
    /// [`Setup::default`]).
    pub setup: Setup,
    /// The machine (default FLASH's, [`MagicParams::default`]).
    pub params: MagicParams,
    /// The directory protocol's options and costs (default
    /// [`CohParams::default`]).
    pub coherence: CohParams,
}

/// The outcome of one miss: plain data (`Send`, `Clone`, `Debug`,
/// `PartialEq`) that carries what made it (its [`Config`] and the kit's
/// version); [`run_with_machine`] keeps the machine beside it.
///
/// Its `Serialize` is the JSON `flashkit miss --format json` prints: the
/// configuration and version, the case, the latency's cycles and its µs
/// exact, the word loaded and the word expected, and the ledger's counters
/// with its figures exact; `Deserialize` reads that back to an equal value,
/// refusing a figure its counts do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct MissRun {
    /// The version of the kit that measured it (`coherence`'s package
    /// version).
    pub version: String,
    /// The experiment.
    pub config: Config,
    /// The case (`config.case`).
    pub case: Case,
    /// From the load's issue to its word, in cycles of 10 ns.
    pub latency: Cycles,
    /// The word the load returned.
    pub value: u64,
    /// The word the load should have returned.
    pub expected: u64,
    /// The measured miss's occupancy ledger (the counters restart before it).
    pub ledger: Ledger,
}

impl MissRun {
    /// The latency in microseconds: the one place it is computed.
    pub fn latency_us(&self) -> f64 {
        self.latency.as_us()
    }
}

/// The JSON of a [`MissRun`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: String,
    config: Config,
    case: Case,
    latency_cycles: u64,
    latency_us: f64,
    value: u64,
    expected: u64,
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

/// The JSON `flashkit miss --format json` prints.
impl Serialize for MissRun {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        Wire {
            version: self.version.clone(),
            config: self.config.clone(),
            case: self.case,
            latency_cycles: self.latency.0,
            latency_us: self.latency_us(),
            value: self.value,
            expected: self.expected,
            occupancy_cycles: self.ledger.elapsed.0,
            occupancy_booked_cycles: self.ledger.booked.0,
            occupancy: self.ledger.exact_handlers(),
            units: self.ledger.exact_units(),
        }
        .serialize(s)
    }
}

/// The first word of the line the miss loads, as `case` places it: a
/// dirty copy's bytes (0x77) in the remote-dirty case, memory's (0x11)
/// otherwise.
fn expected_word(case: Case) -> u64 {
    u64::from_le_bytes(match case {
        Case::RemoteDirty => [0x77; 8],
        _ => [0x11; 8],
    })
}

/// Reads a miss's JSON back: the figures are computed from the counts
/// again, and one the counts do not give is refused, naming it.
impl<'de> Deserialize<'de> for MissRun {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        let read = || -> Result<MissRun, String> {
            if w.case != w.config.case {
                return Err("case disagrees with the rest of the result".into());
            }
            // The configuration as the run checks it: no run takes another.
            let c = &w.config;
            protocol::saved_params(&c.params, &c.coherence)?;
            c.setup
                .validate(c.case, &c.params)
                .map_err(|e| format!("config.setup.{e}"))?;
            // The word the case places is what the check expects: a saved
            // failure edited to pass would change it.
            let placed = expected_word(w.case);
            if w.expected != placed {
                return Err(format!(
                    "expected is {:#x}, where the {:?} case places {placed:#x}",
                    w.expected, w.case
                ));
            }
            // A load that returned another word is a failed run, not a
            // result (only a planted bug's run may give one).
            if c.coherence.inject.is_none() && w.value != w.expected {
                return Err(format!(
                    "value is {:#x}, where the load of the {:?} case returns {:#x}",
                    w.value, w.case, w.expected
                ));
            }
            w.config
                .params
                .within_budget("latency_cycles", w.latency_cycles)?;
            w.config
                .params
                .within_budget("occupancy_cycles", w.occupancy_cycles)?;
            let ledger = Ledger::from_exact(
                Cycles(w.occupancy_cycles),
                Cycles(w.occupancy_booked_cycles),
                w.config.setup.nodes,
                w.occupancy,
                w.units,
            )?;
            let r = MissRun {
                version: w.version,
                config: w.config,
                case: w.case,
                latency: Cycles(w.latency_cycles),
                value: w.value,
                expected: w.expected,
                ledger,
            };
            exact("latency_us", w.latency_us, r.latency_us())?;
            Ok(r)
        };
        read().map_err(serde::de::Error::custom)
    }
}

/// Where the experiment's lines are and who holds the dirty one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Setup {
    /// Nodes in the machine (3 or more; 3 by default).
    pub nodes: u32,
    /// Byte offset of the measured line in its home's memory (line aligned
    /// down); the warm-up line is its pair (offset XOR 128). 0x4080 by
    /// default. At offsets whose directory entry and miss record share a
    /// slot of MAGIC's direct-mapped data cache (the first four lines among
    /// them) the two evict each other and the miss takes longer.
    pub offset: u64,
    /// The node whose cache holds the line dirty (`remote-dirty`; 2 by
    /// default, and left at it by the other cases, which have no owner).
    pub owner: u32,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            nodes: 3,
            offset: 0x4080,
            owner: 2,
        }
    }
}

impl Setup {
    /// The setup is one a machine with `params` can run for `case`: 3 to
    /// 4096 nodes, an owner that is a node of the machine (for
    /// `remote-dirty`, neither the requester nor the home; for the other
    /// cases, which have none, the default), a line and its
    /// pair inside node memory. The error names the [`Setup`] field.
    pub fn validate(&self, case: Case, params: &MagicParams) -> Result<(), OutOfRange> {
        if self.nodes < 3 {
            return Err(OutOfRange::new("nodes", "at least 3", self.nodes));
        }
        OutOfRange::check("nodes", self.nodes, 3, magic::PAddr::MAX_NODES)?;
        // Only a dirty line has an owner: another value would be ignored.
        let default = Setup::default().owner;
        if case != Case::RemoteDirty && self.owner != default {
            return Err(OutOfRange::new(
                "owner",
                format!("{default}, its default: only remote-dirty has an owner"),
                self.owner,
            ));
        }
        if self.owner >= self.nodes {
            let allowed = format!("a node of the machine, below {}", self.nodes);
            return Err(OutOfRange::new("owner", allowed, self.owner));
        }
        let home = home(case);
        if case == Case::RemoteDirty && (self.owner == 0 || self.owner == home.0) {
            return Err(OutOfRange::new(
                "owner",
                format!("a third node, neither the requester 0 nor the home {home}"),
                self.owner,
            ));
        }
        // The measured line and its pair (offset XOR 128) share 256 bytes.
        let below = params.mem_bytes & !255;
        if (self.offset & !255) >= below {
            let allowed = match below {
                // No offset is, on a machine of one line a node.
                0 => {
                    "inside node memory with its pair line: none is, in mem_bytes below 256".into()
                }
                _ => format!("inside node memory with its pair line, below {below:#x}"),
            };
            return Err(OutOfRange::new(
                "offset",
                allowed,
                format!("{:#x}", self.offset),
            ));
        }
        Ok(())
    }
}

/// The line's home: the requester's own node for a local miss, node 1
/// otherwise.
fn home(case: Case) -> NodeId {
    match case {
        Case::LocalClean => NodeId(0),
        _ => NodeId(1),
    }
}

/// Run the miss a [`Config`] describes (a saved [`MissRun`]'s, say): the
/// same result, equal, on this kit.
pub fn run_config(c: &Config) -> Result<MissRun, Error> {
    run_with(c.case, c.setup, c.params.clone(), c.coherence)
}

/// Run one miss on a fresh machine.
pub fn run(case: Case, params: MagicParams, coh: CohParams) -> Result<MissRun, Error> {
    run_with(case, Setup::default(), params, coh)
}

/// Run one miss with an explicit setup. Bad setups (too few nodes, an owner
/// that does not exist or is the requester or the home, a line beyond the
/// home's memory) are [`Error::OutOfRange`] naming the [`Setup`] field.
pub fn run_with(
    case: Case,
    s: Setup,
    params: MagicParams,
    coh: CohParams,
) -> Result<MissRun, Error> {
    run_with_machine(case, s, params, coh).map(|(r, _)| r)
}

/// [`run_with`], and the machine after the miss beside its outcome (its
/// node states, its trace).
pub fn run_with_machine(
    case: Case,
    s: Setup,
    params: MagicParams,
    coh: CohParams,
) -> Result<(MissRun, Magic<protocol::CohNode>), Error> {
    s.validate(case, &params)?;
    protocol::by_node_bits(&coh)?;
    let config = Config {
        case,
        setup: s,
        // Whether the run recorded its timelines is not part of what ran.
        params: MagicParams {
            trace: false,
            ..params.clone()
        },
        coherence: coh,
    };
    let home = home(case);
    let offset = s.offset & !127;
    let mut m = protocol::machine(params, coh, s.nodes)?;
    // The warm-up line is the measured one's pair: their directory entries
    // share a MAGIC data-cache line, as their miss records do. Where the
    // entry's line and the record's map to one slot of the direct-mapped
    // cache (lines 0 to 3, say), they evict each other, and the miss pays
    // for it: a mechanism of the cache, left in the figures.
    let warm = PAddr::new(Region::Normal, home, offset ^ 128);
    let line = PAddr::new(Region::Normal, home, offset);
    let in_memory = [0x11u8; 128];
    let dirty = [0x77u8; 128];
    let owner = [(NodeId(s.owner), LineState::Dirty)];
    let copies: &[(NodeId, LineState)] = match case {
        Case::RemoteDirty => &owner,
        _ => &[],
    };
    for l in [warm, line] {
        protocol::place(&mut m, l, copies, in_memory, dirty)?;
    }
    let expected = expected_word(case);
    m.state_mut(NodeId(0))?.proc.push([Access::Load(warm)]);
    m.start_processor(NodeId(0), Cycles(0))
        .map_err(Error::Machine)?;
    let warmup = m.run();
    if !warmup.is_clean() {
        return Err(Error::Stuck {
            what: "warm-up miss",
            stuck: warmup.problems().join("; "),
        });
    }
    m.reset_counters()?;
    m.state_mut(NodeId(0))?
        .proc
        .push([Access::Load(PAddr(line.0 + 8))]);
    let start = m.now() + Cycles(1);
    m.start_processor(NodeId(0), start)
        .map_err(Error::Machine)?;
    let report = m.run();
    if !report.is_clean() {
        return Err(Error::Stuck {
            what: "miss",
            stuck: report.problems().join("; "),
        });
    }
    let r = m
        .state(NodeId(0))?
        .proc
        .results
        .last()
        .copied()
        .ok_or(Error::Stuck {
            what: "load",
            stuck: "no result reached the processor".into(),
        })?;
    let run = MissRun {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config,
        case,
        latency: r.latency(),
        value: r.value.unwrap_or_default(),
        expected,
        ledger: m.ledger(),
    };
    Ok((run, m))
}
