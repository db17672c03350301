//! Typed routes and the build's checks on a machine's protocols: a
//! protocol's name is unique in a machine, a protocol is installed once, a
//! handler is routed once to a (type, region), and two handlers of one
//! protocol do not share a name; a handler of every kind works when asked
//! for. Misuse the compiler refuses is in `tests/compile_fail/`.

use super::{first, go, raw, t, u, GoOnly, Seen, TKind, C, T, U};
use magic::{
    BuildError, Cycles, Install, Magic, MagicBuilder, Msg, NodeId, PAddr, Protocol, Region,
};

fn lost(_: &mut C<'_>, _: &Msg, _: u::Lost) {}

/// Installs `U` and routes its one kind.
struct LostOnly(&'static str);

impl Protocol for LostOnly {
    type Node = Seen;

    fn name(&self) -> &'static str {
        self.0
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let h = b.handler("lost", lost);
        b.route_any(h);
    }
}

/// A protocol named `carrier` carrying a part of the given names (as the
/// transfer carries the coherence protocol), which installs `U`.
struct Carrier(&'static [&'static str]);

impl Protocol for Carrier {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "carrier"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        for name in self.0 {
            let mut p = b.part(name);
            let h = p.handler("lost", lost);
            p.route_any(h);
        }
    }
}

#[test]
fn two_protocols_with_one_name_are_refused_naming_both() {
    let e = Magic::pair(raw(), 1, &GoOnly("cas"), &LostOnly("cas"))
        .err()
        .expect("refused");
    assert_eq!(
        e,
        BuildError::NameTaken {
            name: "cas",
            first: "GoOnly".into(),
            second: "LostOnly".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "two protocols are named cas: GoOnly and LostOnly"
    );

    // A part carried by another protocol takes a name as a protocol does.
    let e = Magic::pair(raw(), 1, &GoOnly("cas"), &Carrier(&["cas"]))
        .err()
        .expect("refused");
    assert_eq!(
        e.to_string(),
        "two protocols are named cas: GoOnly and a part of carrier"
    );

    // So does a part installed through the builder.
    let mut b = MagicBuilder::new(raw(), 1);
    b.install(&GoOnly("cas"), |s| s);
    let mut p = b.part("cas", |s: &mut Seen| s);
    let h = p.handler("lost", lost);
    p.route_any(h);
    let e = b.build(|_| Seen::default()).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "two protocols are named cas: GoOnly and a part installed with MagicBuilder::part"
    );

    // A part under its own protocol's name, or under a free one, is no
    // second protocol.
    assert!(Magic::with(raw(), 1, &Carrier(&["carrier"])).is_ok());
    let mut m = Magic::pair(raw(), 1, &GoOnly("timing"), &Carrier(&["cas"])).unwrap();
    let lost = m.msg(NodeId(0), U::Lost);
    m.post(NodeId(0), Cycles(0), lost).unwrap();
    assert!(m.run().is_clean());
    let row = m
        .ledger()
        .handler(Some(0), "cas.lost")
        .map(|r| r.stats.invocations);
    assert_eq!(row, Some(1));
}

#[test]
fn one_protocol_installed_twice_is_refused_as_installed_twice() {
    let e = Magic::pair(raw(), 1, &GoOnly("cas"), &GoOnly("cas"))
        .err()
        .expect("refused");
    assert_eq!(
        e,
        BuildError::InstalledTwice {
            protocol: "cas",
            what: "GoOnly".into(),
        }
    );
    assert_eq!(e.to_string(), "protocol cas (GoOnly) is installed twice");

    // A part installed twice by the protocol that carries it.
    let e = Magic::with(raw(), 1, &Carrier(&["cas", "cas"]))
        .err()
        .expect("refused");
    assert_eq!(
        e.to_string(),
        "protocol cas (a part of carrier) is installed twice"
    );

    // A part installed twice through the builder.
    let mut b = MagicBuilder::new(raw(), 1);
    for _ in 0..2 {
        let mut p = b.part("cas", |s: &mut Seen| s);
        let h = p.handler("lost", lost);
        p.route_any(h);
    }
    let e = b.build(|_| Seen::default()).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "protocol cas (a part installed with MagicBuilder::part) is installed twice"
    );
}

/// Routes `first` to `Go` in every region, then again in the normal one.
struct Again;

impl Protocol for Again {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "again"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let h = b.handler("first", first);
        b.route_any(h).route(Region::Normal, h);
    }
}

#[test]
fn a_handler_routed_twice_to_one_type_and_region_is_refused_naming_it() {
    let e = Magic::with(raw(), 1, &Again).err().expect("refused");
    assert_eq!(
        e,
        BuildError::RoutedTwice {
            handler: "again.first".into(),
            message: "again T::Go".into(),
            region: Region::Normal,
        }
    );
    assert_eq!(
        e.to_string(),
        "again.first is routed twice to again T::Go in the Normal region"
    );
}

/// Two handlers registered under one name.
struct SameName;

impl Protocol for SameName {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "same"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let a = b.handler("go", go);
        let c = b.handler("go", super::step);
        b.route_any(a).route_any(c);
    }
}

#[test]
fn two_handlers_of_one_name_are_refused_naming_it() {
    let e = Magic::with(raw(), 1, &SameName).err().expect("refused");
    assert_eq!(
        e,
        BuildError::HandlerNamedTwice {
            handler: "same.go".into()
        }
    );
    assert_eq!(e.to_string(), "two handlers are named same.go");
}

/// More handlers than a machine numbers (65,536): the last is routed.
struct Many;

impl Protocol for Many {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "many"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        for i in 0..=u16::MAX as usize {
            let name: &'static str = Box::leak(format!("h{i}").into_boxed_str());
            let _ = b.handler(name, go);
        }
        let last = b.handler("last", super::step);
        b.route_any(last);
    }
}

#[test]
fn a_handler_past_the_most_a_machine_numbers_is_refused_not_wrapped() {
    let e = Magic::with(raw(), 1, &Many).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "many.last is handler 65537 of a machine, which has at most 65536"
    );
}

/// One handler of every kind of `T`, routed by kind: `Go` in every region,
/// `Step` in the normal region only, `Data` nowhere.
struct Whole;

fn any(cx: &mut C<'_>, _: &Msg, msg: T) {
    let (what, tag) = match msg {
        T::Go => ("go", 0),
        T::Step { tag } => ("step", tag),
        T::Data { tag } => ("data", tag),
    };
    let now = cx.now().0;
    cx.state().at.push((what, now, tag));
}

impl Protocol for Whole {
    type Node = Seen;

    fn name(&self) -> &'static str {
        "whole"
    }

    fn node(&self, _: NodeId, _: u32) -> Seen {
        Seen::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Seen>) {
        let h = b.handler_of_all("any", any);
        b.route_kind_any(TKind::Go, h)
            .route_kind(TKind::Step, Region::Normal, h);
    }
}

#[test]
fn a_handler_of_every_kind_takes_the_kinds_routed_to_it() {
    let mut m = Magic::with(raw(), 1, &Whole).unwrap();
    let n = NodeId(0);
    let io = PAddr::new(Region::Io, n, 0x40);
    // The enum and the kind's own type make the same message.
    let go = m.msg(n, T::Go).addr(io);
    assert_eq!(go, m.msg(n, t::Go).addr(io));
    m.post(n, Cycles(0), go).unwrap();
    let step = m.msg(n, t::Step { tag: 7 });
    m.post(n, Cycles(10), step).unwrap();
    let r = m.run();
    assert!(r.is_clean(), "{:?}", r.stuck);
    crate::ledger_true(&m);
    assert_eq!(m.state(n).unwrap().at, vec![("go", 0, 0), ("step", 10, 7)]);
    let l = m.ledger();
    assert_eq!(
        l.handler(Some(0), "whole.any").unwrap().stats.invocations,
        2
    );

    // Only the kinds and regions routed: a step in another region, and a
    // data message, have no route.
    let mut m = Magic::with(raw(), 1, &Whole).unwrap();
    let step = m.msg(n, T::Step { tag: 1 }).addr(io);
    m.post(n, Cycles(0), step).unwrap();
    let data = m.msg(n, T::Data { tag: 2 });
    m.post(n, Cycles(1), data).unwrap();
    let lost = m.msg(n, U::Lost);
    m.post(n, Cycles(2), lost).unwrap();
    let r = m.run();
    assert!(r.stuck.is_empty(), "{:?}", r.stuck);
    assert_eq!(
        r.refused,
        [
            "node 0: 1 message(s) of whole T::Step had no route (dropped)",
            "node 0: 1 message(s) of whole T::Data had no route (dropped)",
            "node 0: 1 message(s) of a type no installed protocol owns had no route (dropped)",
        ]
    );
    assert!(m.state(n).unwrap().at.is_empty());
    crate::ledger_true(&m);
}

#[test]
fn misrouting_does_not_compile() {
    // Each case names what it gets wrong; its `.stderr` holds the
    // compiler's refusal.
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}

/// A count of `Go`s, a node state of one small field.
#[derive(Debug, Default, PartialEq)]
struct Count(u16);

impl magic::NodeState for Count {}

fn count(cx: &mut magic::Cx<'_, Count>, _: &Msg, _: t::Go) {
    cx.state().0 += 1;
}

/// Counts `Go`s.
struct Counter;

impl Protocol for Counter {
    type Node = Count;

    fn name(&self) -> &'static str {
        "counter"
    }

    fn node(&self, _: NodeId, _: u32) -> Count {
        Count(0)
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Count>) {
        let h = b.handler("count", count);
        b.route_any(h);
    }
}

/// The cycles at which `Lost`s were handled, a node state unlike `Count`
/// in size and alignment.
#[derive(Debug, Default, PartialEq)]
struct Log(Vec<u64>);

impl magic::NodeState for Log {}

fn log(cx: &mut magic::Cx<'_, Log>, _: &Msg, _: u::Lost) {
    let now = cx.now().0;
    cx.state().0.push(now);
}

/// Logs `Lost`s.
struct Logger;

impl Protocol for Logger {
    type Node = Log;

    fn name(&self) -> &'static str {
        "logger"
    }

    fn node(&self, _: NodeId, _: u32) -> Log {
        Log::default()
    }

    fn install<S: 'static>(&self, b: &mut Install<'_, S, Log>) {
        let h = b.handler("log", log);
        b.route_any(h);
    }
}

#[test]
fn each_protocol_of_a_pair_changes_its_own_half_of_the_node_state() {
    // Two `Go`s and one `Lost`, both orders of the pair: each handler
    // finds its own half, wherever the pair's layout puts it.
    let mut m = Magic::pair(raw(), 1, &Counter, &Logger).unwrap();
    for at in [0, 5] {
        let go = m.msg(NodeId(0), T::Go);
        m.post(NodeId(0), Cycles(at), go).unwrap();
    }
    let lost = m.msg(NodeId(0), U::Lost);
    m.post(NodeId(0), Cycles(9), lost).unwrap();
    assert!(m.run().is_clean());
    assert_eq!(m.state(NodeId(0)).unwrap(), &(Count(2), Log(vec![9])));

    let mut m = Magic::pair(raw(), 1, &Logger, &Counter).unwrap();
    let lost = m.msg(NodeId(0), U::Lost);
    m.post(NodeId(0), Cycles(3), lost).unwrap();
    let go = m.msg(NodeId(0), T::Go);
    m.post(NodeId(0), Cycles(4), go).unwrap();
    assert!(m.run().is_clean());
    assert_eq!(m.state(NodeId(0)).unwrap(), &(Log(vec![3]), Count(1)));
}
