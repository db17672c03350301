//! In steady state the engine and the machine allocate nothing per event,
//! and a machine's memory grows by a few kilobytes per node.

use magic::Cycles;
use protocols::pipeline::{self, Pattern, PipelineConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The counters are process-wide: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(l.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(n as i64 - l.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_run_in_steady_state_does_not_allocate() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for pattern in [Pattern::Ring, Pattern::Rand] {
        let cfg = PipelineConfig {
            nodes: 8,
            msgs: 400,
            pattern,
            costs: Default::default(),
            budget: magic::params::DEFAULT_BUDGET,
        };
        let mut m = pipeline::build(&cfg).unwrap();
        // Warm up: queues and slabs reach their working size.
        m.run_until(Some(Cycles(300_000)));
        let before = ALLOCS.load(Ordering::Relaxed);
        let events_before = m.model_events();
        m.run_until(Some(Cycles(450_000)));
        let window = ALLOCS.load(Ordering::Relaxed) - before;
        let events = m.model_events() - events_before;
        // What a call costs without events: its stop report, which lists the
        // work still queued (a few strings per node).
        let before = ALLOCS.load(Ordering::Relaxed);
        m.run_until(Some(Cycles(450_000)));
        let report = ALLOCS.load(Ordering::Relaxed) - before;
        let allocs = window - report;
        assert!(events > 100_000, "{events}");
        match pattern {
            // A fixed traffic pattern settles: nothing grows any more.
            Pattern::Ring => assert_eq!(allocs, 0, "{allocs} allocations over {events} events"),
            // Random traffic can still push an input queue to a new high-water
            // mark now and then (a capacity doubling), but never per event.
            _ => assert!(
                allocs <= 4,
                "{pattern:?}: {allocs} allocations over {events} events"
            ),
        }
    }
}

/// The bytes a machine of `nodes` nodes holds after a remote-dirty miss.
fn miss_machine_bytes(nodes: u32) -> i64 {
    use coherence::miss::{self, Case, Setup};
    let before = LIVE.load(Ordering::Relaxed);
    let setup = Setup {
        nodes,
        owner: nodes - 1,
        ..Setup::default()
    };
    let kept = miss::run_with_machine(
        Case::RemoteDirty,
        setup,
        magic::MagicParams::default(),
        coherence::CohParams::default(),
    )
    .unwrap();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    drop(kept);
    bytes
}

/// FLASH's 4096 nodes stay affordable: an idle node holds its units,
/// counters and protocol state, about 2.6 KB; data buffers and MAGIC's cache
/// tags are made on first use, so nothing grows with the square of the
/// node count.
#[test]
fn a_node_costs_a_few_kilobytes() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let small = miss_machine_bytes(64);
    let large = miss_machine_bytes(4096);
    let per_node = (large - small) / (4096 - 64);
    assert!(
        (1000..4000).contains(&per_node),
        "{per_node} bytes per node ({small} at 64 nodes, {large} at 4096)"
    );
}
