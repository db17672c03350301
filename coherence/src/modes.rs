//! Coherence of message data: what a messaging handler must do, per line, so
//! that the bytes it sends are the latest and the bytes it receives are seen.
//!
//! - `None`: memory is read and written as it is. Fast, and wrong whenever a
//!   processor caches message data (a dirty send-buffer line is sent stale; a
//!   receive-buffer line cached at the receiver keeps its old bytes).
//! - `Local`: correct when each line is uncached or cached only at its home,
//!   which is the node doing the transfer; the directory entry says whether an
//!   intervention (sender) or an invalidation (receiver) is needed.
//! - `Global`: any line anywhere: remote homes, remote sharers, dirty in a
//!   third node's cache; those need messages to other nodes.
//!
//! `plan_*` are pure: they turn a directory entry into the list of actions.
//! `sender_read` and `receiver_write` perform the plans a node can carry out
//! alone (memory, its own processor's cache, its own directory), charging
//! each step to the calling handler; a plan that needs other nodes is handed
//! back for the messaging protocol to carry out.

use crate::directory::{DirEntry, DirState, Targets};
use crate::protocol;
use magic::costs::Task;
use magic::{BufId, Cx, LineState, NodeId, PAddr, Ticket};
use serde::Serialize;
use smallvec::SmallVec;

/// How much coherence a messaging handler keeps for message data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Memory as it is.
    None,
    /// Lines uncached or cached only at their home, the node transferring.
    Local,
    /// Any line anywhere.
    Global,
}

/// A mode travels as one word of a message (0, 1, 2).
impl magic::message::Word for Mode {
    fn to_word(self) -> u64 {
        self as u64
    }

    fn from_word(w: u64) -> Option<Mode> {
        match w {
            0 => Some(Mode::None),
            1 => Some(Mode::Local),
            2 => Some(Mode::Global),
            _ => None,
        }
    }
}

/// One coherence action on a line of message data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read the line from memory (sender) or write it to memory (receiver).
    Memory,
    /// Take this node's processor's dirty copy, leaving it in `keep`.
    InterveneLocal {
        /// The state the processor's copy is left in.
        keep: LineState,
    },
    /// Drop this node's processor's clean copy.
    InvalidateLocal,
    /// Invalidate these nodes' clean copies (acknowledged to this node).
    InvalidateRemote(Targets),
    /// Get the dirty line from another node's cache (through the protocol).
    FetchRemote {
        /// The node whose cache holds it dirty.
        owner: NodeId,
    },
    /// The line lives in another node's memory: go through its home.
    RemoteHome {
        /// The line's home.
        home: NodeId,
    },
}

/// The actions for one line, in order.
pub type Plan = SmallVec<[Action; 3]>;

/// A plan that cannot be carried out as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    /// `Local` was asked for a line outside its precondition.
    #[error("{line} is outside local coherence: {why}")]
    OutsideLocal {
        /// The line.
        line: PAddr,
        /// What breaks the precondition.
        why: String,
    },
    /// The directory entry is busy with a transaction: try again.
    #[error("{line}'s directory entry is busy: try again")]
    Busy {
        /// The line.
        line: PAddr,
    },
    /// The plan needs other nodes; the messaging protocol carries it out.
    #[error("the plan needs other nodes: {0:?}")]
    NeedsRemote(Plan),
}

fn outside(line: PAddr, why: impl Into<String>) -> ModeError {
    ModeError::OutsideLocal {
        line,
        why: why.into(),
    }
}

/// The entry a plan is made from, or the whole plan when no entry is needed
/// (no coherence; a line homed elsewhere under `Global`).
fn entry_for<'e>(
    mode: Mode,
    me: NodeId,
    line: PAddr,
    entry: Option<&'e DirEntry>,
    side: &str,
) -> Result<Result<&'e DirEntry, Plan>, ModeError> {
    if mode == Mode::None {
        return Ok(Err([Action::Memory].into_iter().collect()));
    }
    let home = line.node();
    let Some(e) = entry.filter(|_| home == me) else {
        if mode == Mode::Local {
            return Err(outside(
                line,
                format!("its home is node {home}, not the {side}"),
            ));
        }
        return Ok(Err([Action::RemoteHome { home }].into_iter().collect()));
    };
    if e.pending {
        return Err(ModeError::Busy { line });
    }
    Ok(Ok(e))
}

/// What the sender must do to read `line` of its send buffer. `entry` is the
/// line's directory entry when this node (`me`) is its home.
pub fn plan_send(
    mode: Mode,
    me: NodeId,
    line: PAddr,
    entry: Option<&DirEntry>,
) -> Result<Plan, ModeError> {
    let e = match entry_for(mode, me, line, entry, "sender")? {
        Ok(e) => e,
        Err(plan) => return Ok(plan),
    };
    let mut p = Plan::new();
    match e.state(me) {
        // Clean copies anywhere equal memory: reading needs nothing more.
        DirState::Uncached | DirState::Shared(_) => p.push(Action::Memory),
        DirState::Exclusive(o) if o == me => p.push(Action::InterveneLocal {
            keep: LineState::Clean,
        }),
        DirState::Exclusive(o) => {
            if mode == Mode::Local {
                return Err(outside(line, format!("it is dirty in node {o}'s cache")));
            }
            p.push(Action::FetchRemote { owner: o });
        }
    }
    Ok(p)
}

/// What the receiver must do to write `line` of its receive buffer.
pub fn plan_receive(
    mode: Mode,
    me: NodeId,
    line: PAddr,
    entry: Option<&DirEntry>,
) -> Result<Plan, ModeError> {
    let e = match entry_for(mode, me, line, entry, "receiver")? {
        Ok(e) => e,
        Err(plan) => return Ok(plan),
    };
    let mut p = Plan::new();
    match e.state(me) {
        DirState::Uncached => {}
        DirState::Shared(s) => {
            let others = s.without(me);
            if !others.is_empty() {
                if mode == Mode::Local {
                    return Err(outside(line, format!("nodes {others:?} cache it")));
                }
                p.push(Action::InvalidateRemote(others));
            }
            if s.contains(me) {
                p.push(Action::InvalidateLocal);
            }
        }
        // The processor's dirty bytes are needed only where the message
        // does not cover the whole line; the copy goes either way.
        DirState::Exclusive(o) if o == me => p.push(Action::InterveneLocal {
            keep: LineState::Uncached,
        }),
        DirState::Exclusive(o) => {
            if mode == Mode::Local {
                return Err(outside(line, format!("it is dirty in node {o}'s cache")));
            }
            p.push(Action::FetchRemote { owner: o });
        }
    }
    p.push(Action::Memory);
    Ok(p)
}

fn entry_here<S: protocol::Coherent>(cx: &mut Cx<'_, S>, line: PAddr) -> Option<DirEntry> {
    (line.node() == cx.node()).then(|| protocol::dir_load(cx, line))
}

/// The processor here is filling or writing back the line: what its cache
/// holds is in flux, so a local plan must wait (as the protocol's home does).
fn in_flux<S: protocol::Coherent>(cx: &mut Cx<'_, S>, line: PAddr) -> Result<(), ModeError> {
    let k = line.0 / magic::LINE_BYTES as u64;
    if cx.state().coh_mut().local_busy(k) {
        Err(ModeError::Busy { line })
    } else {
        Ok(())
    }
}

/// The sender reads `line` into buffer `b` under `mode`: returns when the
/// buffer's data is in. Local actions are performed and charged here.
pub fn sender_read<S: protocol::Coherent>(
    cx: &mut Cx<'_, S>,
    mode: Mode,
    line: PAddr,
    b: BufId,
) -> Result<Ticket, ModeError> {
    let entry = if mode == Mode::None {
        None
    } else {
        entry_here(cx, line)
    };
    let plan = plan_send(mode, cx.node(), line, entry.as_ref())?;
    if plan
        .iter()
        .any(|a| !matches!(a, Action::Memory | Action::InterveneLocal { .. }))
    {
        return Err(ModeError::NeedsRemote(plan));
    }
    let c = cx.state().coh_mut().params.costs;
    let mut ticket = None;
    for a in &plan {
        cx.instr(c.issue);
        match a {
            Action::InterveneLocal { keep } => {
                in_flux(cx, line)?;
                let iv = cx
                    .pc_get(line, Some(b), *keep)
                    .map_err(|_| ModeError::Busy { line })?;
                if iv.state != LineState::Dirty {
                    // Not what the directory said: leave everything as it is.
                    cx.state().coh_mut().stats.protocol_errors += 1;
                    return Err(ModeError::Busy { line });
                }
                cx.state().coh_mut().stats.message_interventions += 1;
                // The line is current in the buffer; memory gets it too, and
                // the directory now has the processor as a sharer.
                let _ = cx.mem_write(line, b);
                // The home's processor keeps a clean copy: Local, not dirty.
                protocol::dir_store(cx, line, DirEntry::shared(true, &[]));
                ticket = Some(Ticket {
                    first: iv.first_word_at.unwrap_or(iv.done),
                    ready: iv.done,
                });
            }
            _ => {
                ticket = Some(
                    cx.mem_read(line, b)
                        .map_err(|_| outside(line, "not in this node's memory"))?,
                )
            }
        }
    }
    // Every plan that gets here reads the line (memory or the processor).
    ticket.ok_or(ModeError::Busy { line })
}

/// What a messaging handler pays for the steps of a local plan on the
/// receive side, in its own accounting (the transfer's receiver charges its
/// cost sheet's tasks; [`Steps::protocol`] is the coherence handlers' own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steps {
    /// Load and test the line's directory entry (its loads at the entry).
    pub directory: Task,
    /// Issue an intervention or an invalidation at the processor cache.
    pub issue: Task,
    /// Issue the memory write.
    pub memory: Task,
    /// Write a changed entry back (its stores at the entry); not charged
    /// when the entry stays as it was.
    pub update: Task,
    /// A part of a line: set up the read of the line it merges into.
    pub merge: Task,
}

impl Steps {
    /// The coherence protocol's own costs, on a PP issuing `width`
    /// instructions a cycle.
    pub fn protocol(c: &protocol::CoherenceCosts, width: u32) -> Steps {
        Steps {
            directory: Task {
                loads: 1,
                ..Task::instrs(c.dir_check, width)
            },
            issue: Task::instrs(c.issue, width),
            memory: Task::instrs(c.issue, width),
            update: Task {
                stores: 1,
                ..Task::instrs(c.dir_update, width)
            },
            merge: Task::default(),
        }
    }
}

/// The receiver writes buffer `b` to `line` under `mode` (bytes `range` of
/// the buffer are the message's; the rest of the line keeps its current
/// contents), charging the coherence protocol's own costs.
pub fn receiver_write<S: protocol::Coherent>(
    cx: &mut Cx<'_, S>,
    mode: Mode,
    line: PAddr,
    b: BufId,
    range: std::ops::Range<usize>,
) -> Result<Ticket, ModeError> {
    let c = cx.state().coh_mut().params.costs;
    let steps = Steps::protocol(&c, cx.params().pp_issue_width);
    receiver_write_with(cx, mode, line, b, range, &steps)
}

/// [`receiver_write`], charging `steps` for what it does. Local actions are
/// performed here; a plan that needs other nodes is handed back.
pub fn receiver_write_with<S: protocol::Coherent>(
    cx: &mut Cx<'_, S>,
    mode: Mode,
    line: PAddr,
    b: BufId,
    range: std::ops::Range<usize>,
    steps: &Steps,
) -> Result<Ticket, ModeError> {
    let whole = range == (0..magic::LINE_BYTES);
    let entry = if mode == Mode::None || line.node() != cx.node() {
        None
    } else {
        steps.directory.charge_on(cx, protocol::dir_addr(line));
        Some(cx.state().coh_mut().entry(line))
    };
    let plan = plan_receive(mode, cx.node(), line, entry.as_ref())?;
    if plan.iter().any(|a| {
        matches!(
            a,
            Action::InvalidateRemote(_) | Action::FetchRemote { .. } | Action::RemoteHome { .. }
        )
    }) {
        return Err(ModeError::NeedsRemote(plan));
    }
    if plan
        .iter()
        .any(|a| matches!(a, Action::InterveneLocal { .. } | Action::InvalidateLocal))
    {
        in_flux(cx, line)?;
    }
    // A part of a line merges into its current bytes: memory's, or the
    // processor's dirty copy (below).
    let mut current = [0u8; magic::LINE_BYTES];
    if !whole {
        steps.merge.charge_on(cx, protocol::dir_addr(line));
        let tmp = cx.alloc_buffer().ok_or(ModeError::Busy { line })?;
        let t = cx
            .mem_read(line, tmp)
            .map_err(|_| outside(line, "not in this node's memory"));
        if let Ok(t) = t {
            cx.wait(t);
            if let Some(x) = cx.buffer(tmp) {
                current = *x;
            }
        }
        let _ = cx.free_buffer(tmp);
        t?;
    }
    let mut invalidated = magic::Cycles(0);
    for a in &plan {
        match a {
            Action::Memory => steps.memory.charge_on(cx, protocol::dir_addr(line)),
            _ => steps.issue.charge_on(cx, protocol::dir_addr(line)),
        }
        match a {
            Action::InterveneLocal { keep } => {
                let tmp = cx.alloc_buffer().ok_or(ModeError::Busy { line })?;
                let iv = cx
                    .pc_get(line, Some(tmp), *keep)
                    .map_err(|_| ModeError::Busy { line })?;
                // The processor's dirty copy is gone only when its data has
                // crossed the interface; memory may take the message's bytes
                // after that (the dirty bytes are kept where it does not
                // cover the line).
                cx.wait_until(iv.done);
                cx.state().coh_mut().stats.message_interventions += 1;
                if let (false, Some(x)) = (whole, cx.buffer(tmp)) {
                    current = *x;
                }
                let _ = cx.free_buffer(tmp);
            }
            Action::InvalidateLocal => {
                // A clean copy equals memory: nothing to wait for. The
                // receive is complete only when it is gone (below).
                let iv = cx
                    .pc_get(line, None, LineState::Uncached)
                    .map_err(|_| ModeError::Busy { line })?;
                invalidated = invalidated.max(iv.done);
                cx.state().coh_mut().stats.message_invalidations += 1;
            }
            _ => {}
        }
    }
    let bytes = cx.buffer_mut(b).ok_or(ModeError::Busy { line })?;
    let mut merged = current;
    merged[range.clone()].copy_from_slice(&bytes[range]);
    *bytes = merged;
    // The write goes out first; the directory is updated while it streams.
    let t = cx
        .mem_write(line, b)
        .map_err(|_| outside(line, "not in this node's memory"))?;
    if entry.is_some_and(|e| e != DirEntry::default()) {
        steps.update.charge_on(cx, protocol::dir_addr(line));
        protocol::charge_pointers(cx, line);
        cx.state().coh_mut().set_entry(line, DirEntry::default());
    }
    Ok(Ticket {
        first: t.first,
        ready: t.ready.max(invalidated),
    })
}
