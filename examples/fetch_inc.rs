//! A protocol author's first handler: a remote fetch-and-increment on MAGIC,
//! run beside the built-in 4 KB transfer, with its occupancy read back.
//!
//! ```text
//!  node 0 (requester)                               node 1 (home of the counter)
//!  processor --FINC_REQ--> [MAGIC: finc_req]
//!                               | request lane
//!                               +---------FINC--------> [MAGIC: finc]
//!                                                         read the line, +1,
//!                                                         write it back
//!  processor <--old value-- [MAGIC: finc_reply] <--FINC_REPLY-- reply lane
//!
//!  meanwhile node 0 sends node 1 a 4 KB buffer (transfer handlers)
//! ```
//!
//! Run it with `cargo run --release --example fetch_inc`; docs/handlers.md
//! walks through it.

use magic::{Cx, Cycles, Lane, LineState, Magic, Msg, MsgType, NodeId, PAddr, Region};
use protocols::transfer::{self, Config, Outcome, XferNode};

/// Processor interface -> its MAGIC: "increment this word".
const FINC_REQ: MsgType = MsgType(120);
/// Request lane, requester -> home.
const FINC: MsgType = MsgType(121);
/// Reply lane, home -> requester: the old value (or a refusal).
const FINC_REPLY: MsgType = MsgType(122);
/// MAGIC -> processor: the old value.
const FINC_DONE: MsgType = MsgType(123);

/// The counter: a word in node 1's memory, away from the transfer's buffers.
pub fn counter() -> PAddr {
    PAddr::new(Region::Normal, NodeId(1), 0x30_0000)
}

type C<'a> = Cx<'a, XferNode>;

/// At the requester's MAGIC: forward the request to the word's home.
fn finc_req(cx: &mut C<'_>, m: &Msg) {
    cx.instr(4); // decode, form the header
    let home = m.addr.node();
    let req = Msg::new(FINC, cx.node(), home)
        .lane(Lane::Request)
        .addr(m.addr);
    let _ = cx.send(req, None);
}

/// At the home: read the line into a data buffer, add one to the word,
/// write the line back, and reply with the old value. With no buffer free,
/// refuse (the requester's processor would ask again).
fn finc(cx: &mut C<'_>, m: &Msg) {
    cx.instr(6); // decode, check the address
    let reply = |old: u64, ok: bool| {
        Msg::new(FINC_REPLY, m.dest, m.src)
            .lane(Lane::Reply)
            .addr(m.addr)
            .args([old, ok as u64, 0])
    };
    let Some(b) = cx.alloc_buffer() else {
        let _ = cx.send(reply(0, false), None);
        return;
    };
    let Ok(t) = cx.mem_read(m.addr, b) else {
        let _ = cx.free_buffer(b);
        let _ = cx.send(reply(0, false), None);
        return;
    };
    cx.wait(t); // the word is needed: stall for memory
    let at = (m.addr.offset() % 128 / 8 * 8) as usize;
    let old = {
        let bytes = cx.buffer_mut(b).expect("allocated");
        let old = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        bytes[at..at + 8].copy_from_slice(&(old + 1).to_le_bytes());
        old
    };
    cx.instr(3); // add, merge, issue the write
    match cx.mem_write(m.addr, b) {
        Ok(w) => {
            let _ = cx.free_buffer_after(b, w);
        }
        Err(_) => {
            let _ = cx.free_buffer(b);
        }
    }
    let _ = cx.send(reply(old, true), None);
}

/// Back at the requester's MAGIC: hand the old value to the processor.
fn finc_reply(cx: &mut C<'_>, m: &Msg) {
    cx.instr(3);
    let me = cx.node();
    let _ = cx.to_processor(Msg::new(FINC_DONE, me, me).args(m.args), None);
}

/// The default transfer with `n` fetch-and-increments issued by node 0's
/// processor, one every 100 cycles from the transfer's start.
pub fn run(n: u64) -> Result<Outcome, String> {
    transfer::run_with(
        &Config::default(),
        |b| {
            // Register the handlers and route the three messages to them:
            // the jump table is indexed by message type (and address space).
            let h = b.handler("finc-req", finc_req);
            b.route_any(FINC_REQ, h);
            let h = b.handler("finc", finc);
            b.route_any(FINC, h);
            let h = b.handler("finc-reply", finc_reply);
            b.route_any(FINC_REPLY, h);
        },
        |m: &mut Magic<XferNode>, at: Cycles| {
            for i in 0..n {
                let req = Msg::new(FINC_REQ, NodeId(0), NodeId(0)).addr(counter());
                m.post(NodeId(0), at + Cycles(100 * i), req)?;
            }
            Ok(())
        },
    )
    .map_err(|e| e.to_string())
}

/// The counter's value after a run (memory at its home; nothing caches it).
pub fn count(o: &Outcome) -> u64 {
    let line = o.machine.memory(NodeId(1)).line(counter().line());
    assert_eq!(
        o.machine.pcache(NodeId(1)).state(counter()),
        LineState::Uncached
    );
    u64::from_le_bytes(line[..8].try_into().expect("8 bytes"))
}

#[allow(dead_code)]
fn main() {
    match run(8) {
        Ok(o) => {
            println!(
                "counter = {} after 8 fetch-and-increments; the transfer took {} cycles ({})\n",
                count(&o),
                o.total.0,
                if o.data_ok {
                    "data intact"
                } else {
                    "DATA WRONG"
                }
            );
            print!("{}", o.machine.ledger().render());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
