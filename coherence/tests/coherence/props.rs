//! Random read/write/evict streams from 2-4 processors over a handful of
//! lines, with random interleaving: the protocol keeps one writer or many
//! readers at every instant, every load returns a value that was the latest
//! write at some point while it ran, every operation completes, and the
//! directory agrees with the caches when the machine is quiet.

use coherence::check;
use coherence::directory::Acks;
use coherence::directory::DirState;
use coherence::protocol::Forwards;
use coherence::protocol::{self, canonical};
use coherence::{Access, CohParams, DirFormat, Placement};
use magic::{Cycles, LineState, Magic, MagicParams, NodeId, PAddr, Region};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fmt;

const BASE: u64 = 0x8000;
/// A run that has not finished by then is stuck.
const LIMIT: Cycles = Cycles(2_000_000);
/// NAK retries one miss may meet before we call it livelock.
const MAX_RETRIES: u32 = 200;
/// Longest trace (PROPTEST_MAX_STEPS overrides for a longer hunt).
const MAX_STEPS: usize = 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Load,
    Store,
    Evict,
    Think(u8),
}

/// One operation of the random trace: which processor does what to which word.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Step {
    node: u8,
    line: u8,
    word: u8,
    kind: Kind,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            Kind::Load => "load ",
            Kind::Store => "store",
            Kind::Evict => "evict",
            Kind::Think(c) => return write!(f, "n{} think {c}", self.node),
        };
        write!(f, "n{} {what} L{}.w{}", self.node, self.line, self.word)
    }
}

#[derive(Clone, Debug)]
struct Case {
    nodes: u8,
    placement: Placement,
    /// The protocol's options: directory format, pointer store (small, so
    /// that reclamation happens), acknowledgements, hints, forwards.
    coh: CohParams,
    /// MAGIC data buffers: few of them exercise the refusal paths.
    buffers: u8,
    starts: Vec<u8>,
    steps: Vec<Step>,
}

fn case() -> impl Strategy<Value = Case> {
    let options = (
        any::<bool>(),
        1u32..=4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    (2u8..=4, any::<bool>(), options).prop_flat_map(|(nodes, inter, opts)| {
        let (ptr, store, requester, silent, defer) = opts;
        let coh = CohParams {
            placement: if inter {
                Placement::Interleaved
            } else {
                Placement::NodeBits
            },
            format: if ptr {
                DirFormat::DynamicPointer
            } else {
                DirFormat::BitVector
            },
            // A store size is the dynamic-pointer directory's alone.
            pointer_store: if ptr {
                store
            } else {
                coherence::protocol::POINTER_STORE
            },
            acks: if requester {
                Acks::Requester
            } else {
                Acks::Home
            },
            hints: !silent,
            forwards: if defer {
                Forwards::Defer
            } else {
                Forwards::Nak
            },
            ..CohParams::default()
        };
        let kind = prop_oneof![
            4 => Just(Kind::Load),
            4 => Just(Kind::Store),
            3 => Just(Kind::Evict),
            1 => (1u8..60).prop_map(Kind::Think),
        ];
        let step = (0..nodes, 0u8..4, 0u8..4, kind).prop_map(|(node, line, word, kind)| Step {
            node,
            line,
            word,
            kind,
        });
        (
            Just(nodes),
            2u8..=16,
            proptest::collection::vec(0u8..40, nodes as usize),
            proptest::collection::vec(step, 1..max_steps()),
        )
            .prop_map(move |(nodes, buffers, starts, steps)| Case {
                nodes,
                placement: if inter {
                    Placement::Interleaved
                } else {
                    Placement::NodeBits
                },
                coh,
                buffers,
                starts,
                steps,
            })
    })
}

/// The address of a word: with node-bit placement line i lives at node i mod N.
fn word_addr(c: &Case, line: u8, word: u8) -> PAddr {
    let home = match c.placement {
        Placement::NodeBits => NodeId(line as u32 % c.nodes as u32),
        Placement::Interleaved => NodeId(0),
    };
    let raw = PAddr::new(
        Region::Normal,
        home,
        BASE + line as u64 * 128 + word as u64 * 8,
    );
    canonical(c.placement, c.nodes as u32, raw)
}

fn lines(c: &Case) -> Vec<PAddr> {
    (0..4).map(|l| word_addr(c, l, 0)).collect()
}

/// At most one dirty copy of a line, and no clean copy beside a dirty one.
fn check_copies(m: &Magic<protocol::CohNode>, c: &Case, t: Cycles) -> Result<(), TestCaseError> {
    let r = check::single_writer(m, &lines(c));
    prop_assert!(r.is_ok(), "cycle {t}: {}", r.unwrap_err());
    Ok(())
}

fn run_case(c: &Case) -> Result<(), TestCaseError> {
    let coh = c.coh;
    let params = MagicParams {
        data_buffers: c.buffers as usize,
        ..MagicParams::default()
    };
    let mut m = protocol::machine(params, coh, c.nodes as u32).unwrap();
    // Program order per node, unique store values.
    let mut value = 0u64;
    for s in &c.steps {
        let a = word_addr(c, s.line, s.word);
        let access = match s.kind {
            Kind::Load => Access::Load(a),
            Kind::Store => {
                value += 1;
                Access::Store(a, value)
            }
            Kind::Evict => Access::Evict(a),
            Kind::Think(n) => Access::Think(Cycles(n as u64)),
        };
        m.state_mut(NodeId(s.node as u32))
            .unwrap()
            .proc
            .push([access]);
    }
    for n in 0..c.nodes {
        m.start_processor(NodeId(n as u32), Cycles(c.starts[n as usize] as u64))
            .unwrap();
    }
    while let Some(t) = m.step() {
        check_copies(&m, c, t)?;
        prop_assert!(
            t <= LIMIT,
            "still running at cycle {t}: {:?}",
            m.report(true).stuck
        );
    }
    let report = m.report(false);
    prop_assert!(report.is_clean(), "stuck: {:?}", report.stuck);
    for n in 0..c.nodes as u32 {
        prop_assert_eq!(
            m.drops(NodeId(n)).unwrap(),
            magic::Drops::default(),
            "node {} refused something",
            n
        );
    }

    // Every operation completed; retries bounded; no protocol surprises.
    let mut writes: BTreeMap<u64, Vec<(Cycles, u64)>> = BTreeMap::new();
    for n in 0..c.nodes as u32 {
        let node = m.state(NodeId(n)).unwrap();
        let want = c.steps.iter().filter(|s| s.node as u32 == n).count();
        prop_assert_eq!(
            node.proc.results.len(),
            want,
            "node {} finished {} of {} ops",
            n,
            node.proc.results.len(),
            want
        );
        prop_assert_eq!(
            node.stats.protocol_errors,
            0,
            "node {}: {:?}",
            n,
            node.stats
        );
        prop_assert!(
            node.stats.max_retries <= MAX_RETRIES,
            "node {}: {:?}",
            n,
            node.stats
        );
        prop_assert_eq!(node.proc.stray_fills, 0);
        for r in &node.proc.results {
            if let Access::Store(a, v) = r.access {
                writes.entry(a.0).or_default().push((r.done, v));
            }
        }
    }
    // A load returns the initial zero or a write's value, and that value was
    // the latest at some moment between the load's issue and its completion.
    let r = check::data_value(&m);
    prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    for w in writes.values_mut() {
        w.sort();
    }
    // Quiet machine: the directory matches the caches, and the up-to-date
    // copy (dirty cache or memory) holds the last write of every word.
    let r = check::directory_at_rest(&m, &lines(c));
    prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    for line in lines(c) {
        let home = line.node();
        let e = m.state(home).unwrap().entry(line);
        let holders: Vec<_> = (0..c.nodes as u32)
            .map(|n| (n, m.pcache(NodeId(n)).unwrap().state(line)))
            .filter(|x| x.1 != LineState::Uncached)
            .collect();
        let bytes = match e.state(home) {
            DirState::Exclusive(o) => *m.pcache(o).unwrap().bytes(line).unwrap(),
            _ => m.memory(home).unwrap().line(line.line()),
        };
        for (n, st) in &holders {
            if *st == LineState::Clean {
                let copy = *m.pcache(NodeId(*n)).unwrap().bytes(line).unwrap();
                prop_assert_eq!(copy, bytes, "node {}'s clean copy of {} is stale", n, line);
            }
        }
        for w in 0..16u64 {
            let a = line.0 + w * 8;
            let last = writes.get(&a).and_then(|ws| ws.last()).map_or(0, |x| x.1);
            let got = u64::from_le_bytes(
                bytes[w as usize * 8..w as usize * 8 + 8]
                    .try_into()
                    .unwrap(),
            );
            prop_assert_eq!(got, last, "word {:#x}", a);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // A few thousand in CI; PROPTEST_CASES=N for a longer hunt.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_streams_stay_coherent(c in case()) {
        run_case(&c)?;
    }
}

fn max_steps() -> usize {
    std::env::var("PROPTEST_MAX_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(MAX_STEPS)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200_000,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    /// The same streams, 200,000 of them: a longer hunt than the suite's,
    /// run on the release build by CI.
    #[test]
    #[ignore = "200,000 cases: run on the release build"]
    fn a_long_hunt_stays_coherent(c in case()) {
        run_case(&c)?;
    }
}
