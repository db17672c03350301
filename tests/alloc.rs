//! In steady state the engine and the machine allocate nothing per event.

use magic::Cycles;
use protocols::pipeline::{self, Pattern, PipelineConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_run_in_steady_state_does_not_allocate() {
    for pattern in [Pattern::Ring, Pattern::Rand] {
        let cfg = PipelineConfig {
            nodes: 8,
            msgs: 400,
            pattern,
            costs: Default::default(),
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
