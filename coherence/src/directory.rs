//! Directory entries and the home's state transitions, as pure functions.
//!
//! Each 128-byte line of a node's memory has an entry at its home: uncached,
//! shared by a set of nodes, or exclusive (dirty) at one owner; and a pending
//! mark while a request forwarded to the owner is in flight. Nothing here
//! knows time or queues: the handlers in `protocol` load an entry (charged),
//! ask these functions what to do, and perform it.

use magic::NodeId;
use serde::Serialize;
use smallvec::SmallVec;

/// How the sharer set is kept in MAGIC memory: it decides what walking and
/// updating it costs, not what it means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum DirFormat {
    /// A bit per node in the entry: one load reads every sharer.
    #[default]
    BitVector,
    /// FLASH's dynamic pointer allocation: a linked list of pointers from a
    /// pool, one load per sharer walked.
    PointerList,
}

/// The nodes holding a clean copy, in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sharers(SmallVec<[NodeId; 4]>);

impl Sharers {
    /// Just `n`.
    pub fn one(n: NodeId) -> Sharers {
        let mut s = Sharers::default();
        s.add(n);
        s
    }

    /// `n` holds a copy.
    pub fn contains(&self, n: NodeId) -> bool {
        self.0.contains(&n)
    }

    /// Add `n` (once).
    pub fn add(&mut self, n: NodeId) {
        if !self.contains(n) {
            self.0.push(n);
        }
    }

    /// Take `n` out.
    pub fn remove(&mut self, n: NodeId) {
        self.0.retain(|x| *x != n);
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The nodes, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.0.iter().copied()
    }

    /// Everyone but `n`.
    pub fn without(&self, n: NodeId) -> Targets {
        self.iter().filter(|&x| x != n).collect()
    }
}

/// Nodes to invalidate.
pub type Targets = SmallVec<[NodeId; 4]>;

/// Where the up-to-date copy of a line is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum DirState {
    /// Only memory has it.
    #[default]
    Uncached,
    /// Memory and these nodes' caches (clean).
    Shared(Sharers),
    /// Dirty in this node's cache; memory is stale.
    Exclusive(NodeId),
}

/// A request forwarded to the owner, not yet answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pending {
    /// A read, for `requester`.
    Read {
        /// The node that missed.
        requester: NodeId,
    },
    /// A write, for `requester`.
    Write {
        /// The node that missed.
        requester: NodeId,
    },
    /// The new owner wrote the line back before the old owner's notice of
    /// the transfer arrived: memory is current, the notice is still due.
    Transfer,
}

/// A line's directory entry at its home.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// Where the up-to-date copy is.
    pub state: DirState,
    /// A forwarded request not yet answered.
    pub pending: Option<Pending>,
}

/// What a requester asks its home for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Req {
    /// A read miss: a clean copy.
    Read,
    /// A write miss: an exclusive copy with data.
    Write,
    /// A write to a clean copy: exclusivity; data only if the copy was lost.
    Upgrade,
}

impl Req {
    fn exclusive(self) -> bool {
        !matches!(self, Req::Read)
    }
}

/// What the home does for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Busy: refuse, the requester retries.
    Nak,
    /// Answer from memory (`data`: send the line; false for an upgrade whose
    /// copy is intact), after invalidating `invalidate`, whose acknowledgements
    /// go to the requester.
    Memory {
        /// The requester gets the line exclusive.
        exclusive: bool,
        /// The line goes with the answer.
        data: bool,
        /// Sharers to invalidate.
        invalidate: Targets,
    },
    /// The home's own processor holds the line dirty: intervene, then answer.
    LocalOwner {
        /// The requester gets the line exclusive.
        exclusive: bool,
    },
    /// Forward to the owner; the entry is pending until it answers.
    Forward {
        /// The node whose cache holds the line dirty.
        owner: NodeId,
        /// The requester gets the line exclusive.
        exclusive: bool,
    },
}

/// The home's answer to request `req` from `r`.
pub fn on_request(e: &DirEntry, home: NodeId, r: NodeId, req: Req) -> (DirEntry, Decision) {
    if e.pending.is_some() {
        return (e.clone(), Decision::Nak);
    }
    let excl = req.exclusive();
    let owned = |n| DirEntry {
        state: DirState::Exclusive(n),
        pending: None,
    };
    match &e.state {
        DirState::Uncached => {
            let next = if excl {
                owned(r)
            } else {
                DirEntry {
                    state: DirState::Shared(Sharers::one(r)),
                    pending: None,
                }
            };
            let d = Decision::Memory {
                exclusive: excl,
                data: true,
                invalidate: Targets::new(),
            };
            (next, d)
        }
        DirState::Shared(s) => {
            if excl {
                let data = !(req == Req::Upgrade && s.contains(r));
                let d = Decision::Memory {
                    exclusive: true,
                    data,
                    invalidate: s.without(r),
                };
                (owned(r), d)
            } else {
                let mut s = s.clone();
                s.add(r);
                let next = DirEntry {
                    state: DirState::Shared(s),
                    pending: None,
                };
                let d = Decision::Memory {
                    exclusive: false,
                    data: true,
                    invalidate: Targets::new(),
                };
                (next, d)
            }
        }
        // The requester cannot own a line it asks for unless its writeback is
        // still on its way here; refuse until it has arrived.
        DirState::Exclusive(o) if *o == r => (e.clone(), Decision::Nak),
        DirState::Exclusive(o) if *o == home => {
            let next = if excl {
                owned(r)
            } else {
                let mut s = Sharers::one(home);
                s.add(r);
                DirEntry {
                    state: DirState::Shared(s),
                    pending: None,
                }
            };
            (next, Decision::LocalOwner { exclusive: excl })
        }
        DirState::Exclusive(o) => {
            let pending = if excl {
                Pending::Write { requester: r }
            } else {
                Pending::Read { requester: r }
            };
            let next = DirEntry {
                state: e.state.clone(),
                pending: Some(pending),
            };
            (
                next,
                Decision::Forward {
                    owner: *o,
                    exclusive: excl,
                },
            )
        }
    }
}

/// The owner kept a clean copy and sent the line to the reader: both share.
pub fn on_sharing_writeback(e: &DirEntry, owner: NodeId) -> DirEntry {
    match e.pending {
        Some(Pending::Read { requester }) => {
            let mut s = Sharers::one(owner);
            s.add(requester);
            DirEntry {
                state: DirState::Shared(s),
                pending: None,
            }
        }
        _ => e.clone(),
    }
}

/// The owner handed the line to the writer.
pub fn on_ownership_transfer(e: &DirEntry) -> DirEntry {
    match e.pending {
        Some(Pending::Transfer) => DirEntry::default(),
        Some(Pending::Write { requester }) => DirEntry {
            state: DirState::Exclusive(requester),
            pending: None,
        },
        _ => e.clone(),
    }
}

/// What the home does with a writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbDecision {
    /// Memory now holds the line; nothing else to do.
    Done,
    /// A request forwarded to the writer crossed the writeback: answer it
    /// from the written-back line (the owner will drop the forward).
    Answer {
        /// The node whose request was forwarded.
        requester: NodeId,
        /// It asked for the line exclusive.
        exclusive: bool,
    },
    /// The writer was not the owner: a protocol error, the data is ignored.
    Stale,
}

/// A writeback of a dirty line from `from`.
pub fn on_writeback(e: &DirEntry, from: NodeId) -> (DirEntry, WbDecision) {
    if e.pending == Some(Pending::Write { requester: from }) && e.state != DirState::Exclusive(from)
    {
        // The new owner got the line, wrote it and wrote it back, all before
        // the old owner's transfer notice arrived here.
        let next = DirEntry {
            state: DirState::Uncached,
            pending: Some(Pending::Transfer),
        };
        return (next, WbDecision::Done);
    }
    if e.state != DirState::Exclusive(from) {
        return (e.clone(), WbDecision::Stale);
    }
    match e.pending {
        Some(Pending::Read { requester }) => (
            DirEntry {
                state: DirState::Shared(Sharers::one(requester)),
                pending: None,
            },
            WbDecision::Answer {
                requester,
                exclusive: false,
            },
        ),
        Some(Pending::Write { requester }) => (
            DirEntry {
                state: DirState::Exclusive(requester),
                pending: None,
            },
            WbDecision::Answer {
                requester,
                exclusive: true,
            },
        ),
        None => (DirEntry::default(), WbDecision::Done),
        // Cannot happen: a transfer-due entry is uncached, not owned.
        Some(Pending::Transfer) => (e.clone(), WbDecision::Stale),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: NodeId = NodeId(0);
    const A: NodeId = NodeId(1);
    const B: NodeId = NodeId(2);
    const C: NodeId = NodeId(3);

    fn shared(ns: &[NodeId]) -> DirEntry {
        let mut s = Sharers::default();
        for &n in ns {
            s.add(n);
        }
        DirEntry {
            state: DirState::Shared(s),
            pending: None,
        }
    }

    fn excl(n: NodeId) -> DirEntry {
        DirEntry {
            state: DirState::Exclusive(n),
            pending: None,
        }
    }

    #[test]
    fn reads_of_an_uncached_line_come_from_memory_and_add_sharers() {
        let (e, d) = on_request(&DirEntry::default(), H, A, Req::Read);
        assert_eq!(e, shared(&[A]));
        assert!(
            matches!(d, Decision::Memory { exclusive: false, data: true, ref invalidate } if invalidate.is_empty())
        );
        let (e, _) = on_request(&e, H, B, Req::Read);
        assert_eq!(e, shared(&[A, B]));
    }

    #[test]
    fn a_write_to_a_shared_line_invalidates_the_other_sharers() {
        let (e, d) = on_request(&shared(&[A, B, C]), H, B, Req::Write);
        assert_eq!(e, excl(B));
        assert_eq!(
            d,
            Decision::Memory {
                exclusive: true,
                data: true,
                invalidate: [A, C].into_iter().collect()
            }
        );
    }

    #[test]
    fn an_upgrade_sends_data_only_if_the_copy_was_lost() {
        let (_, d) = on_request(&shared(&[A, B]), H, A, Req::Upgrade);
        assert!(matches!(d, Decision::Memory { data: false, .. }));
        let (e, d) = on_request(&shared(&[B]), H, A, Req::Upgrade);
        assert!(matches!(d, Decision::Memory { data: true, .. }));
        assert_eq!(e, excl(A));
    }

    #[test]
    fn a_dirty_line_is_forwarded_and_the_entry_is_busy_until_the_owner_answers() {
        let (e, d) = on_request(&excl(B), H, A, Req::Read);
        assert_eq!(
            d,
            Decision::Forward {
                owner: B,
                exclusive: false
            }
        );
        assert_eq!(e.pending, Some(Pending::Read { requester: A }));
        // Busy: a third request is refused.
        assert_eq!(on_request(&e, H, C, Req::Write).1, Decision::Nak);
        assert_eq!(on_sharing_writeback(&e, B), shared(&[B, A]));
        let (e, d) = on_request(&excl(B), H, A, Req::Write);
        assert_eq!(
            d,
            Decision::Forward {
                owner: B,
                exclusive: true
            }
        );
        assert_eq!(on_ownership_transfer(&e), excl(A));
    }

    #[test]
    fn the_homes_own_dirty_copy_is_fetched_locally() {
        let (e, d) = on_request(&excl(H), H, A, Req::Read);
        assert_eq!(d, Decision::LocalOwner { exclusive: false });
        assert_eq!(e, shared(&[H, A]));
        let (e, d) = on_request(&excl(H), H, A, Req::Write);
        assert_eq!(d, Decision::LocalOwner { exclusive: true });
        assert_eq!(e, excl(A));
    }

    #[test]
    fn a_writeback_crossing_a_forward_answers_the_requester() {
        let (e, _) = on_request(&excl(B), H, A, Req::Write);
        let (e2, d) = on_writeback(&e, B);
        assert_eq!(
            d,
            WbDecision::Answer {
                requester: A,
                exclusive: true
            }
        );
        assert_eq!(e2, excl(A));
        let (e3, d) = on_writeback(&excl(B), B);
        assert_eq!((e3, d), (DirEntry::default(), WbDecision::Done));
        assert_eq!(on_writeback(&shared(&[B]), B).1, WbDecision::Stale);
        // The new owner's writeback overtakes the old owner's transfer notice.
        let (e, _) = on_request(&excl(B), H, A, Req::Write);
        let (e, d) = on_writeback(&e, A);
        assert_eq!(d, WbDecision::Done);
        assert_eq!(e.pending, Some(Pending::Transfer));
        assert_eq!(on_request(&e, H, C, Req::Read).1, Decision::Nak);
        assert_eq!(on_ownership_transfer(&e), DirEntry::default());
        // An owner asking again before its writeback arrived is refused.
        assert_eq!(on_request(&excl(A), H, A, Req::Read).1, Decision::Nak);
    }
}
