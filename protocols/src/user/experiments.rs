//! The experiments behind `flashkit fetch-op` and `flashkit remap`.

use super::cmd::{shadow_dst_va, shadow_va, Field, OpCode};
use super::cpu::{UserEvent, UserOp};
use super::params::UserParams;
use super::state::UserNode;
use super::unit::machine;
use crate::Error;
use magic::ledger::{ExactHandlerRow, ExactUnitRow};
use magic::Ledger;
use magic::{Cycles, Magic, MagicParams, NodeId, PAddr, Region, LINE_BYTES};
use os_shim::{Change, Pid, Rights, VPage, PAGE_BYTES};
use serde::{Deserialize, Serialize};

const PID: Pid = Pid(1);

/// An experiment that did not reach the end it must.
fn incomplete(what: &str) -> Error {
    Error::Incomplete(what.to_string())
}
const PEER: Pid = Pid(2);

pub(crate) fn frame(n: NodeId, k: u64) -> PAddr {
    PAddr::new(Region::Normal, n, k * PAGE_BYTES)
}

/// Bytes of memory a node needs for the fetch-and-add: the word's page
/// (frame 16).
pub const FETCH_OP_MEMORY: u64 = 17 * PAGE_BYTES;

/// Bytes of memory a node needs for the remap: the destination's pages
/// (frames 64 to 67) are the highest.
pub const REMAP_MEMORY: u64 = (64 + PAGES) * PAGE_BYTES;

/// `Err` naming `mem_bytes` unless a node's memory holds `need` bytes.
fn memory(params: &MagicParams, need: u64, what: &str) -> Result<(), Error> {
    if params.mem_bytes < need {
        let allowed = format!("at least {need} for the {what}'s pages");
        return Err(magic::OutOfRange::new("mem_bytes", allowed, params.mem_bytes).into());
    }
    Ok(())
}

/// The fetch-and-add's own checks: a target the machine can have, a
/// memory that holds its word.
pub fn check_fetch_op(target: u32, params: &MagicParams) -> Result<(), Error> {
    crate::error::check("target", target, 0, crate::am::flash::MAX_NODES - 1)?;
    memory(params, FETCH_OP_MEMORY, "fetch-and-add")
}

/// The remap's own check: a memory that holds its pages.
pub fn check_remap(params: &MagicParams) -> Result<(), Error> {
    memory(params, REMAP_MEMORY, "remap")
}

/// One fetch-and-add, whole: the node whose memory holds the word, the
/// machine and the user layer's parameters (its cost sheets among them).
/// Every [`FetchOpResult`] carries it, so [`fetch_op_config`] measures a
/// saved result again; it reads back as it serializes, a field left out
/// keeping its default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchOpConfig {
    /// The node whose memory holds the word (default 1; 0 to 4095).
    pub target: u32,
    /// The machine (default FLASH's).
    pub params: MagicParams,
    /// The user layer's parameters (default [`UserParams::default`]).
    pub user: UserParams,
}

impl Default for FetchOpConfig {
    fn default() -> Self {
        FetchOpConfig {
            target: 1,
            params: MagicParams::default(),
            user: UserParams::default(),
        }
    }
}

/// What a fetch-and-add run measured, without the machine (see
/// [`FetchOpRun::result`]): plain data that carries what made it (its
/// [`FetchOpConfig`] and the kit's version) and keeps its counts.
///
/// Its `Serialize` is the JSON `flashkit fetch-op --format json` prints:
/// the configuration and version, the cycles, the word before and after,
/// and the ledger's counters with their figures exact; `Deserialize` reads
/// that back to an equal value, refusing a figure its counts do not give.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchOpResult {
    /// The version of the kit that measured it (`protocols`' package
    /// version).
    pub version: String,
    /// The experiment.
    pub config: FetchOpConfig,
    /// The first command write to the old value at the processor.
    pub latency: Cycles,
    /// The first command write to the ACK.
    pub startup: Cycles,
    /// The word's value before.
    pub old: u64,
    /// And after.
    pub new: u64,
    /// The run's occupancy ledger.
    pub ledger: Ledger,
}

/// The JSON of a [`FetchOpResult`], key by key.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchOpWire {
    version: String,
    config: FetchOpConfig,
    latency_cycles: u64,
    startup_cycles: u64,
    old: u64,
    new: u64,
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

/// The JSON `flashkit fetch-op --format json` prints.
impl Serialize for FetchOpResult {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        FetchOpWire {
            version: self.version.clone(),
            config: self.config.clone(),
            latency_cycles: self.latency.0,
            startup_cycles: self.startup.0,
            old: self.old,
            new: self.new,
            occupancy_cycles: self.ledger.elapsed.0,
            occupancy_booked_cycles: self.ledger.booked.0,
            occupancy: self.ledger.exact_handlers(),
            units: self.ledger.exact_units(),
        }
        .serialize(s)
    }
}

/// The word a fetch-and-add finds, and what it adds.
const FETCH_WORD: u64 = 40;
const FETCH_ADD: u64 = 2;

/// Reads a fetch-and-add's JSON back: the ledger's figures are computed
/// from its counters again, and one they do not give is refused, naming it.
impl<'de> Deserialize<'de> for FetchOpResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = FetchOpWire::deserialize(d)?;
        let read = || -> Result<FetchOpResult, String> {
            // The configuration as the run checks it: no run takes another.
            user_config(&w.config.params, &w.config.user)?;
            check_fetch_op(w.config.target, &w.config.params).map_err(|e| format!("config.{e}"))?;
            if w.startup_cycles > w.latency_cycles {
                return Err(format!(
                    "startup_cycles is {}, more than the {} latency_cycles it is part of",
                    w.startup_cycles, w.latency_cycles
                ));
            }
            // The run went on past the latency (to the last event the
            // ledger counts), all of it within the budget.
            w.config
                .params
                .within_budget("latency_cycles", w.latency_cycles)?;
            w.config
                .params
                .within_budget("occupancy_cycles", w.occupancy_cycles)?;
            // The word holds FETCH_WORD and gets FETCH_ADD: a run of the
            // handlers as they are reads and leaves just those (a planted
            // bug may not).
            if w.config.user.inject.is_none()
                && (w.old, w.new) != (FETCH_WORD, FETCH_WORD + FETCH_ADD)
            {
                return Err(format!(
                    "old and new are {} and {}, where the fetch-and-add finds {FETCH_WORD} and adds {FETCH_ADD}",
                    w.old, w.new
                ));
            }
            let ledger = Ledger::from_exact(
                Cycles(w.occupancy_cycles),
                Cycles(w.occupancy_booked_cycles),
                fetch_op_nodes(w.config.target),
                w.occupancy,
                w.units,
            )?;
            Ok(FetchOpResult {
                version: w.version,
                config: w.config,
                latency: Cycles(w.latency_cycles),
                startup: Cycles(w.startup_cycles),
                old: w.old,
                new: w.new,
                ledger,
            })
        };
        read().map_err(serde::de::Error::custom)
    }
}

/// What a fetch-and-add run measured, and the machine after it.
pub struct FetchOpRun {
    /// The experiment.
    pub config: FetchOpConfig,
    /// The first command write to the old value at the processor.
    pub latency: Cycles,
    /// The first command write to the ACK.
    pub startup: Cycles,
    /// The word's value before.
    pub old: u64,
    /// And after.
    pub new: u64,
    /// The machine after the run.
    pub machine: Magic<UserNode>,
}

/// A saved user-layer run's machine and user parameters, checked as its
/// run checks them, naming the field under `config`.
fn user_config(params: &MagicParams, user: &UserParams) -> Result<(), String> {
    params
        .validate()
        .map_err(|e| format!("config.params.{e}"))?;
    user.validate_on(params.pp_issue_width)
        .map_err(|e| format!("config.user.{e}"))
}

/// The nodes of a fetch-and-add's machine: the target's and node 0, at
/// least 2.
fn fetch_op_nodes(target: u32) -> u32 {
    // A saved result's target may be any number: its run refuses one past
    // the machine's nodes, and reading it must not overflow.
    target.saturating_add(1).max(2)
}

/// Run the fetch-and-add a [`FetchOpConfig`] describes (a saved
/// [`FetchOpResult`]'s, say): the same result, equal, on this kit.
pub fn fetch_op_config(c: &FetchOpConfig) -> Result<FetchOpRun, Error> {
    fetch_op_with(c.target, c.params.clone(), c.user)
}

/// Process 1 on node 0 adds 2 to a word of a page of node `target`'s memory
/// (40 before) and waits for the old value; `target` is a node of the
/// machine (0 to 4095: the machine has `target + 1` nodes, at least 2).
pub fn fetch_op(target: u32, params: MagicParams) -> Result<FetchOpRun, Error> {
    fetch_op_with(target, params, UserParams::default())
}

/// [`fetch_op`] with the user layer's parameters `up` (its cost sheets, say).
pub fn fetch_op_with(
    target: u32,
    params: MagicParams,
    up: UserParams,
) -> Result<FetchOpRun, Error> {
    check_fetch_op(target, &params)?;
    up.validate()?;
    let config = FetchOpConfig {
        target,
        // Whether the run recorded its timelines is not part of what ran.
        params: MagicParams {
            trace: false,
            ..params.clone()
        },
        user: up,
    };
    let nodes = fetch_op_nodes(target);
    let mut m = machine(params, up, nodes)?;
    let t = NodeId(target);
    let word = PAddr(frame(t, 16).0 + 0x88);
    let mut line = m.memory(t)?.line(word.line());
    line[8..16].copy_from_slice(&FETCH_WORD.to_le_bytes());
    m.memory_mut(t)?.store_line(word.line(), &line);
    let me = NodeId(0);
    let vaddr = 0x40_0000;
    let n = m.state_mut(me)?;
    n.os.spawn(PID);
    n.os.map(PID, VPage::of(vaddr), frame(t, 16), Rights::RW)?;
    let shadow = shadow_va(vaddr + 0x88);
    n.push([
        UserOp::Switch(PID),
        UserOp::Write(Field::Op.va(), OpCode::FetchAdd as u64),
        UserOp::Write(Field::Arg.va(), FETCH_ADD),
        UserOp::Write(shadow, vaddr + 0x88),
        UserOp::Commit,
        UserOp::Wait,
    ]);
    m.start_processor(me, Cycles(0))
        .map_err(|e| Error::Incomplete(e.to_string()))?;
    let r = m.run();
    if !r.is_clean() {
        return Err(Error::unclean("the fetch-and-add did not complete", &r));
    }
    let n = m.state(me)?;
    let first = n
        .cpu
        .first_write
        .ok_or_else(|| incomplete("no command was written"))?;
    let (done, old) = n.cpu.done().ok_or_else(|| incomplete("no completion"))?;
    let sent = m.state(me)?.magic.stats.acks;
    if sent != 1 {
        return Err(incomplete("the sequence was not accepted"));
    }
    let accepted = first_accept(&m, me).ok_or_else(|| incomplete("no accept"))?;
    let new = u64::from_le_bytes(m.memory(t)?.line(word.line())[8..16].try_into().expect("8"));
    Ok(FetchOpRun {
        config,
        latency: done - first,
        startup: accepted - first,
        old,
        new,
        machine: m,
    })
}

impl FetchOpRun {
    /// The figures alone (to keep, print or send elsewhere).
    pub fn result(&self) -> FetchOpResult {
        FetchOpResult {
            version: env!("CARGO_PKG_VERSION").to_string(),
            config: self.config.clone(),
            ledger: self.machine.ledger(),
            latency: self.latency,
            startup: self.startup,
            old: self.old,
            new: self.new,
        }
    }
}

fn first_accept(m: &Magic<UserNode>, n: NodeId) -> Option<Cycles> {
    m.state(n).ok()?.cpu.find(|e| match e {
        UserEvent::Ack { at, .. } => Some(*at),
        _ => None,
    })
}

/// How MAGIC's physical addresses are kept valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Technique {
    /// The OS waits until operations that hold it off drain.
    Holdoff,
    /// Uses are marked stale and translated again (the default).
    #[default]
    Invalidate,
    /// MAGIC translates through its software TLB.
    Tlb,
}

impl Technique {
    /// The operation a technique's run moves pages with: a memory copy
    /// under hold-off (a send may not ask for it), a send by physical
    /// pages under invalidation, a send by virtual address through the TLB.
    pub fn op_code(self) -> OpCode {
        match self {
            Technique::Holdoff => OpCode::MemCopy,
            Technique::Invalidate => OpCode::SendPhys,
            Technique::Tlb => OpCode::SendVirt,
        }
    }

    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Technique::Holdoff => "holdoff",
            Technique::Invalidate => "invalidate",
            Technique::Tlb => "tlb",
        }
    }
}

/// One remap run, whole: the technique, the machine and the user layer's
/// parameters. Every [`RemapResult`] carries it, so [`remap_config`]
/// measures a saved result again; it reads back as it serializes, a field
/// left out keeping its default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemapConfig {
    /// The technique (default invalidate).
    pub technique: Technique,
    /// The machine (default FLASH's).
    pub params: MagicParams,
    /// The user layer's parameters (default [`UserParams::default`]).
    pub user: UserParams,
}

/// What a remap run measured: counts and the occupancy ledger, with what
/// made them (its [`RemapConfig`] and the kit's version). Its JSON is the
/// `flashkit remap --format json` output and reads back equal, refusing a
/// ledger figure its counts do not give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RemapWire", into = "RemapWire")]
pub struct RemapResult {
    /// The version of the kit that measured it (`protocols`' package
    /// version).
    pub version: String,
    /// The experiment.
    pub config: RemapConfig,
    /// The technique (`config.technique`).
    pub technique: Technique,
    /// The destination holds the source's bytes.
    pub data_ok: bool,
    /// Cycles the OS waited for MAGIC's answer to its notice.
    pub os_wait_cycles: u64,
    /// Interrupts MAGIC raised for a translation.
    pub processor_interrupts: u64,
    /// Uses that met a stale page.
    pub stale_uses_detected: u64,
    /// Software TLB hits.
    pub tlb_hits: u64,
    /// Software TLB misses.
    pub tlb_misses: u64,
    /// The first command write to the operation's completion.
    pub total_cycles: u64,
    /// The run's occupancy ledger.
    pub ledger: Ledger,
}

/// A remap's JSON, key by key: [`RemapResult`]'s fields, the ledger's
/// counters with their figures exact.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemapWire {
    version: String,
    config: RemapConfig,
    technique: Technique,
    data_ok: bool,
    os_wait_cycles: u64,
    processor_interrupts: u64,
    stale_uses_detected: u64,
    tlb_hits: u64,
    tlb_misses: u64,
    total_cycles: u64,
    occupancy_cycles: u64,
    occupancy_booked_cycles: u64,
    occupancy: Vec<ExactHandlerRow>,
    units: Vec<ExactUnitRow>,
}

impl From<RemapResult> for RemapWire {
    fn from(r: RemapResult) -> RemapWire {
        RemapWire {
            occupancy_cycles: r.ledger.elapsed.0,
            occupancy_booked_cycles: r.ledger.booked.0,
            occupancy: r.ledger.exact_handlers(),
            units: r.ledger.exact_units(),
            version: r.version,
            config: r.config,
            technique: r.technique,
            data_ok: r.data_ok,
            os_wait_cycles: r.os_wait_cycles,
            processor_interrupts: r.processor_interrupts,
            stale_uses_detected: r.stale_uses_detected,
            tlb_hits: r.tlb_hits,
            tlb_misses: r.tlb_misses,
            total_cycles: r.total_cycles,
        }
    }
}

impl TryFrom<RemapWire> for RemapResult {
    type Error = String;
    fn try_from(w: RemapWire) -> Result<RemapResult, String> {
        if w.technique != w.config.technique {
            return Err("technique disagrees with the rest of the result".into());
        }
        user_config(&w.config.params, &w.config.user)?;
        check_remap(&w.config.params).map_err(|e| format!("config.{e}"))?;
        // Only a send by virtual address looks pages up in the TLB: once
        // for each page it moves, and once again for each stale use it
        // translates anew; a miss raises an interrupt for its translation.
        let lookups = PAGES.saturating_add(w.stale_uses_detected);
        if w.tlb_hits > lookups {
            return Err(format!(
                "tlb_hits is {}, more than the {PAGES} pages moved and the {} stale_uses_detected look up",
                w.tlb_hits, w.stale_uses_detected
            ));
        }
        if w.tlb_misses > w.processor_interrupts {
            return Err(format!(
                "tlb_misses is {}, more than the {} processor_interrupts they raise",
                w.tlb_misses, w.processor_interrupts
            ));
        }
        // Within what the run took: its total within its budget, the OS's
        // wait within its total.
        w.config
            .params
            .within_budget("total_cycles", w.total_cycles)?;
        w.config
            .params
            .within_budget("occupancy_cycles", w.occupancy_cycles)?;
        if w.os_wait_cycles > w.total_cycles {
            return Err(format!(
                "os_wait_cycles is {}, more than the {} total_cycles",
                w.os_wait_cycles, w.total_cycles
            ));
        }
        let ledger = Ledger::from_exact(
            Cycles(w.occupancy_cycles),
            Cycles(w.occupancy_booked_cycles),
            REMAP_NODES,
            w.occupancy,
            w.units,
        )?;
        Ok(RemapResult {
            version: w.version,
            config: w.config,
            technique: w.technique,
            data_ok: w.data_ok,
            os_wait_cycles: w.os_wait_cycles,
            processor_interrupts: w.processor_interrupts,
            stale_uses_detected: w.stale_uses_detected,
            tlb_hits: w.tlb_hits,
            tlb_misses: w.tlb_misses,
            total_cycles: w.total_cycles,
            ledger,
        })
    }
}

/// The nodes of a remap's machine: the sender's and the receiver's.
const REMAP_NODES: u32 = 2;

impl std::fmt::Display for RemapResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "remap with {}: data ok {}",
            self.technique.name(),
            self.data_ok
        )?;
        writeln!(f, "OS waited          {} cycles", self.os_wait_cycles)?;
        writeln!(f, "interrupts         {}", self.processor_interrupts)?;
        writeln!(f, "stale uses         {}", self.stale_uses_detected)?;
        writeln!(
            f,
            "TLB hits / misses  {} / {}",
            self.tlb_hits, self.tlb_misses
        )?;
        writeln!(f, "total              {} cycles", self.total_cycles)
    }
}

/// Pages moved by a remap run.
pub const PAGES: u64 = 4;

/// Process 1 on node 0 moves `PAGES` pages to node 1 (a memory copy under
/// hold-off, or a send to process 2 under invalidation or the software TLB);
/// 1500 cycles after the commit its OS moves the third source page to a new
/// frame, copying its data.
pub fn remap(
    technique: Technique,
    params: MagicParams,
) -> Result<(RemapResult, Magic<UserNode>), Error> {
    remap_with(technique, params, UserParams::default())
}

/// Run the remap a [`RemapConfig`] describes (a saved [`RemapResult`]'s,
/// say): the same result, equal, on this kit.
pub fn remap_config(c: &RemapConfig) -> Result<(RemapResult, Magic<UserNode>), Error> {
    remap_with(c.technique, c.params.clone(), c.user)
}

/// [`remap`] with the user layer's parameters `up` (its cost sheets, say).
pub fn remap_with(
    technique: Technique,
    params: MagicParams,
    up: UserParams,
) -> Result<(RemapResult, Magic<UserNode>), Error> {
    check_remap(&params)?;
    up.validate()?;
    let config = RemapConfig {
        technique,
        // Whether the run recorded its timelines is not part of what ran.
        params: MagicParams {
            trace: false,
            ..params.clone()
        },
        user: up,
    };
    let mut m = machine(params, up, REMAP_NODES)?;
    let (a, b) = (NodeId(0), NodeId(1));
    let (src_v, dst_v) = (0x10_0000u64, 0x20_0000u64);
    // Source pages on node 0 (frames 32..), destination pages on node 1 (frames 64..).
    for k in 0..PAGES {
        for l in 0..PAGE_BYTES / LINE_BYTES as u64 {
            let mut bytes = [0u8; LINE_BYTES];
            for (i, x) in bytes.iter_mut().enumerate() {
                *x = (k * 31 + l * 7 + i as u64) as u8;
            }
            m.memory_mut(a)?.store_line(
                PAddr(frame(a, 32 + k).0 + l * LINE_BYTES as u64).line(),
                &bytes,
            );
        }
    }
    {
        let n = m.state_mut(b)?;
        n.os.spawn(PEER);
        n.os.set_group(PEER, vec![(a, PID)])?;
        // The receiving process owns the destination pages.
        for k in 0..PAGES {
            n.os.map(PEER, VPage(0x300 + k), frame(b, 64 + k), Rights::RW)?;
        }
    }
    let n = m.state_mut(a)?;
    n.os.spawn(PID);
    n.os.set_group(PID, vec![(b, PEER)])?;
    for k in 0..PAGES {
        n.os.map(
            PID,
            VPage(VPage::of(src_v).0 + k),
            frame(a, 32 + k),
            Rights::RW,
        )?;
        n.os.map(
            PID,
            VPage(VPage::of(dst_v).0 + k),
            frame(b, 64 + k),
            Rights::RW,
        )?;
    }
    let op = technique.op_code();
    let mut ops = vec![
        UserOp::Switch(PID),
        UserOp::Write(Field::Op.va(), op as u64),
        UserOp::Write(Field::Arg.va(), PAGES * PAGE_BYTES),
        UserOp::Write(Field::Vpid.va(), 0),
    ];
    for k in 0..PAGES {
        let v = src_v + k * PAGE_BYTES;
        if technique != Technique::Tlb {
            ops.push(UserOp::Write(shadow_va(v), v));
        }
    }
    if technique == Technique::Tlb {
        ops.push(UserOp::Write(Field::Vaddr.va(), src_v));
    }
    for k in 0..PAGES {
        let v = dst_v + k * PAGE_BYTES;
        ops.push(UserOp::Write(shadow_dst_va(v), v));
    }
    let moved = VPage(VPage::of(src_v).0 + 2);
    ops.extend([
        UserOp::Commit,
        UserOp::Think(Cycles(1500)),
        UserOp::Change(PID, Change::Move(moved, frame(a, 48))),
        UserOp::Wait,
    ]);
    n.push(ops);
    m.start_processor(a, Cycles(0))
        .map_err(|e| Error::Incomplete(e.to_string()))?;
    let r = m.run();
    if !r.is_clean() {
        let what = format!("the {} run did not complete", technique.name());
        return Err(Error::unclean(&what, &r));
    }
    // The destination must hold the source's bytes, read through the
    // translations as they are after the move.
    let n = m.state(a)?;
    let mut data_ok = true;
    for k in 0..PAGES {
        let (src, _) = n.os.translate(PID, src_v + k * PAGE_BYTES)?;
        for l in 0..PAGE_BYTES / LINE_BYTES as u64 {
            let off = l * LINE_BYTES as u64;
            let s = m.memory(a)?.line(PAddr(src.0 + off).line());
            let d = m.memory(b)?.line(PAddr(frame(b, 64 + k).0 + off).line());
            data_ok &= s == d;
        }
    }
    let first = n
        .cpu
        .first_write
        .ok_or_else(|| incomplete("no command was written"))?;
    let (done, _) = n.cpu.done().ok_or_else(|| incomplete("no completion"))?;
    let waited = n
        .cpu
        .find(|e| match e {
            UserEvent::Changed { waited, .. } => Some(waited.0),
            _ => None,
        })
        .ok_or_else(|| incomplete("the translation change did not happen"))?;
    let s = &n.magic.stats;
    let result = RemapResult {
        version: env!("CARGO_PKG_VERSION").to_string(),
        config,
        technique,
        data_ok,
        os_wait_cycles: waited,
        processor_interrupts: s.interrupts,
        stale_uses_detected: s.stale_uses,
        tlb_hits: n.magic.tlb.hits,
        tlb_misses: n.magic.tlb.misses,
        total_cycles: (done - first).0,
        ledger: m.ledger(),
    };
    Ok((result, m))
}
