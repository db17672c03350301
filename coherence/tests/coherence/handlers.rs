//! Single handlers on the test bench: a quiet machine running only the
//! coherence protocol, one message in; out come the handler's ledger line,
//! its steps and the messages it sent.

use coherence::directory::DirState;
use coherence::protocol;
use coherence::{CohMsg, Coherence};
use magic::testing::{Bench, Dest};
use magic::{LineState, NodeId, PAddr, Region};

fn line(home: u32) -> PAddr {
    PAddr::new(Region::Normal, NodeId(home), 0x4000)
}

#[test]
fn the_home_answers_a_read_of_an_uncached_line_from_memory() {
    let mut bench = Bench::new(2, &Coherence::default()).unwrap();
    let get = bench.msg(NodeId(0), CohMsg::Get).addr(line(1));
    let shot = bench.inject(NodeId(1), get).unwrap();
    assert_eq!(shot.handler, "coherence.home_request");
    // decode 4, directory check 4, update 3, send 4 (two a cycle), and the
    // entry's load and store; the data cache is cold, so the load waits 41
    // cycles for memory, which is busy with the line's speculative read.
    let s = shot.stats;
    assert_eq!((s.instructions, s.loads, s.stores), (15, 1, 1));
    assert_eq!((s.busy, s.wait), (8 + 41, 41), "{shot}");
    let [put] = &shot.sent[..] else {
        panic!("{shot}")
    };
    assert_eq!((put.to, put.data), (Dest::Node(NodeId(0)), true));
    assert_eq!(bench.decode(&put.msg), Ok(CohMsg::Put { acks: 0 }));
    let e = bench.machine().state(NodeId(1)).entry(line(1));
    assert_eq!(
        e.state(NodeId(1)),
        DirState::Shared(coherence::Sharers::one(NodeId(0)))
    );
}

#[test]
fn a_sharer_drops_its_copy_and_acknowledges_to_the_requester() {
    let mut bench = Bench::new(3, &Coherence::default()).unwrap();
    let copies = [(NodeId(1), LineState::Clean)];
    protocol::place(bench.machine(), line(2), &copies, [1; 128], [1; 128]).unwrap();
    let inval = CohMsg::Inval {
        collector: NodeId(0),
    };
    let m = bench.msg(NodeId(2), inval).addr(line(2));
    let shot = bench.inject(NodeId(1), m).unwrap();
    assert_eq!(shot.handler, "coherence.invalidate");
    let [ack] = &shot.sent[..] else {
        panic!("{shot}")
    };
    assert_eq!(
        (ack.to, ack.name.as_str()),
        (Dest::Node(NodeId(0)), "coherence CohMsg::InvAck")
    );
    let pc = bench.machine().pcache(NodeId(1)).state(line(2));
    assert_eq!(pc, LineState::Uncached);
}
