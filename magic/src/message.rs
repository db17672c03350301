//! Typed messages.
//!
//! A protocol declares its messages as one Rust type, usually an enum made
//! with [`messages!`](crate::messages): each variant is a *kind*, and its
//! fields travel as the header's payload words. Message type numbers are not
//! chosen by hand: a machine allocates each message type a block of numbers
//! when the protocol that owns it is installed (see [`Registry`]), and a
//! handler receives its message decoded. Code outside this crate never sees
//! the payload words, so no protocol reads a field by its position.
//!
//! ```
//! magic::messages! {
//!     /// A lock's messages.
//!     pub enum LockMsg: LockKind {
//!         /// The processor asks for the lock.
//!         Acquire,
//!         /// The home grants it (on the reply lane), with the grant's number.
//!         Grant { ticket: u64 } => Reply,
//!     }
//! }
//! use magic::message::{Kind, Message};
//! assert_eq!(LockKind::NAMES, &["Acquire", "Grant"]);
//! assert_eq!(LockMsg::Grant { ticket: 3 }.kind(), LockKind::Grant);
//! assert_eq!(LockKind::Grant.lane(), magic::Lane::Reply);
//! ```

use crate::ids::{BufId, Lane, LineAddr, Msg, MsgType, NodeId, PAddr};
use crate::time::Cycles;
use core::any::TypeId;
use core::fmt;

/// Payload words a message carries in its header (besides the type, lane,
/// address and payload length).
pub const WORDS: usize = 3;

/// A value that travels as one payload word.
pub trait Word: Sized {
    /// The word on the wire.
    fn to_word(self) -> u64;
    /// The value back; `None` when the word is not one (a decode error).
    fn from_word(w: u64) -> Option<Self>;
}

macro_rules! int_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            fn to_word(self) -> u64 {
                self as u64
            }
            fn from_word(w: u64) -> Option<Self> {
                <$t>::try_from(w).ok()
            }
        }
    )*};
}
int_word!(u8, u16, u32, u64, usize);

impl Word for i64 {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Self> {
        Some(w as i64)
    }
}

impl Word for bool {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Self> {
        match w {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

macro_rules! newtype_word {
    ($($t:ident($inner:ty)),*) => {$(
        impl Word for $t {
            fn to_word(self) -> u64 {
                self.0 as u64
            }
            fn from_word(w: u64) -> Option<Self> {
                <$inner>::try_from(w).ok().map($t)
            }
        }
    )*};
}
newtype_word!(
    NodeId(u32),
    Cycles(u64),
    PAddr(u64),
    BufId(u16),
    LineAddr(u64)
);

impl Word for Lane {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Option<Self> {
        match w {
            0 => Some(Lane::Request),
            1 => Some(Lane::Reply),
            _ => None,
        }
    }
}

/// Writes a message's fields into its payload words, in order.
pub struct Writer<'a> {
    words: &'a mut [u64; WORDS],
    at: usize,
}

impl Writer<'_> {
    /// The next field. A message has room for [`WORDS`] fields; the
    /// [`messages!`](crate::messages) macro refuses more at compile time.
    #[inline]
    pub fn put<T: Word>(&mut self, v: T) {
        if let Some(w) = self.words.get_mut(self.at) {
            *w = v.to_word();
        }
        self.at += 1;
    }
}

/// Reads a message's fields back, in the order they were written.
pub struct Reader<'a> {
    words: &'a [u64; WORDS],
    at: usize,
}

impl Reader<'_> {
    /// The next field, or `None` when the word is not a `T`.
    #[inline]
    pub fn take<T: Word>(&mut self) -> Option<T> {
        let w = *self.words.get(self.at)?;
        self.at += 1;
        T::from_word(w)
    }
}

/// The kinds of a message type: a field-less twin of the message enum.
pub trait Kind: Copy + Eq + fmt::Debug + 'static {
    /// The kinds' names, in order (the ledger and errors use them).
    const NAMES: &'static [&'static str];
    /// This kind's position in [`Kind::NAMES`].
    fn index(self) -> usize;
    /// The kind at a position.
    fn from_index(i: usize) -> Option<Self>;
    /// The network lane messages of this kind travel on.
    fn lane(self) -> Lane {
        Lane::Request
    }
}

/// A protocol's messages, encoded into and decoded from the header once,
/// here. Usually written with [`messages!`](crate::messages).
pub trait Message: Copy + fmt::Debug + 'static {
    /// The kinds of this message type.
    type Kind: Kind;
    /// Which kind this message is.
    fn kind(&self) -> Self::Kind;
    /// Write the fields.
    fn encode(&self, w: &mut Writer<'_>);
    /// Read a message of kind `k`; `None` if a field does not decode.
    fn decode(k: Self::Kind, r: &mut Reader<'_>) -> Option<Self>;
}

/// Declare a protocol's messages: an enum, its field-less twin of kinds, and
/// their encoding. Each variant is a kind; its fields (at most
/// [`WORDS`](crate::message::WORDS), each a [`Word`](crate::message::Word))
/// are the payload. `=> Reply` puts a kind on the reply lane (the default
/// is the request lane).
///
/// ```
/// magic::messages! {
///     /// Messages of a remote fetch-and-add.
///     pub enum FaddMsg: FaddKind {
///         /// Add to the word at the message's address.
///         Add {
///             /// What to add.
///             amount: u64,
///         },
///         /// The old value.
///         Old {
///             /// The word before the add.
///             value: u64,
///         } => Reply,
///     }
/// }
/// ```
#[macro_export]
macro_rules! messages {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $kind:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({ $($(#[$fmeta:meta])* $field:ident : $fty:ty),* $(,)? })? $(=> $lane:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $variant $({ $($(#[$fmeta])* $field : $fty),* })?,
            )*
        }

        #[doc = concat!("The kinds of [`", stringify!($name), "`].")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $kind {
            $(
                #[doc = concat!("[`", stringify!($name), "::", stringify!($variant), "`].")]
                $variant,
            )*
        }

        $(
            $(
                const _: () = assert!(
                    0 $(+ { let _ = stringify!($field); 1 })* <= $crate::message::WORDS,
                    concat!(stringify!($name), "::", stringify!($variant), " has more fields than a header has payload words")
                );
            )?
        )*

        impl $crate::message::Kind for $kind {
            const NAMES: &'static [&'static str] = &[$(stringify!($variant)),*];
            fn index(self) -> usize {
                self as usize
            }
            fn from_index(i: usize) -> Option<Self> {
                const ALL: &[$kind] = &[$($kind::$variant),*];
                ALL.get(i).copied()
            }
            #[allow(unreachable_patterns)]
            fn lane(self) -> $crate::Lane {
                match self {
                    $($( $kind::$variant => $crate::Lane::$lane, )?)*
                    _ => $crate::Lane::Request,
                }
            }
        }

        impl $crate::message::Message for $name {
            type Kind = $kind;
            fn kind(&self) -> $kind {
                match self {
                    $( $name::$variant { .. } => $kind::$variant, )*
                }
            }
            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::message::Writer<'_>) {
                match *self {
                    $( $name::$variant { $($($field),*)? } => { $($( w.put($field); )*)? } )*
                }
            }
            #[allow(unused_variables)]
            fn decode(k: $kind, r: &mut $crate::message::Reader<'_>) -> Option<Self> {
                Some(match k {
                    $( $kind::$variant => $name::$variant { $($($field: r.take::<$fty>()?),*)? }, )*
                })
            }
        }
    };
}

/// A message could not be decoded as the type asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message is of another type (or of no installed type).
    #[error("a {found} decoded as {expected}")]
    WrongType {
        /// The type asked for.
        expected: &'static str,
        /// What the message is.
        found: String,
    },
    /// A payload word is not a value of its field's type.
    #[error("a {message} whose fields do not decode")]
    BadField {
        /// The message type and kind.
        message: String,
    },
}

/// Why a machine could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// A machine parameter is out of its range (the error names it).
    #[error(transparent)]
    Params(#[from] crate::params::ParamError),
    /// The machine's node count is out of range.
    #[error("a machine has 1 to {max} nodes (got {got})")]
    Nodes {
        /// The count asked for.
        got: u32,
        /// The most a machine can have.
        max: u32,
    },
    /// Two protocols claim one message type.
    #[error("protocols {first} and {second} both install the message type {message}")]
    TypeClaimed {
        /// The message type.
        message: &'static str,
        /// The protocol that installed it first.
        first: &'static str,
        /// The protocol that tried again.
        second: &'static str,
    },
    /// The protocols' message kinds do not fit in the jump table.
    #[error("the jump table has no room for {protocol}'s message type {message}")]
    TooManyTypes {
        /// The message type that did not fit.
        message: &'static str,
        /// Its protocol.
        protocol: &'static str,
    },
    /// Two handlers for one (type, region).
    #[error("{message} in the {region:?} region is routed to both {first} and {second}")]
    RouteConflict {
        /// The message kind, as `protocol Type::Kind`.
        message: String,
        /// The region.
        region: crate::ids::Region,
        /// The handler routed first.
        first: String,
        /// The handler routed second.
        second: String,
    },
    /// A protocol's own check failed (the protocol names what).
    #[error("{0}")]
    Protocol(String),
}

impl From<BuildError> for String {
    fn from(e: BuildError) -> String {
        e.to_string()
    }
}

/// One message type installed on a machine.
#[derive(Clone, Debug)]
struct Family {
    id: TypeId,
    name: &'static str,
    protocol: &'static str,
    base: u8,
    kinds: &'static [&'static str],
}

/// The type number no installed message has: a message of a type the
/// machine does not know is encoded with it, reaches no handler, and is
/// counted and reported as unrouted.
pub const UNKNOWN: MsgType = MsgType(u8::MAX);

/// The message types installed on a machine, and the block of type numbers
/// each was given.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    families: Vec<Family>,
    next: u16,
}

fn short_name<M: 'static>() -> &'static str {
    let full = core::any::type_name::<M>();
    full.rsplit("::").next().unwrap_or(full)
}

impl Registry {
    /// An empty registry whose numbers start at `first`.
    pub(crate) fn starting_at(first: u8) -> Registry {
        Registry {
            families: Vec::new(),
            next: first as u16,
        }
    }

    /// Give `M` a block of type numbers for `protocol`; installing it again
    /// for the same protocol keeps its block.
    pub fn add<M: Message>(&mut self, protocol: &'static str) -> Result<u8, BuildError> {
        let name = short_name::<M>();
        if let Some(f) = self.families.iter().find(|f| f.id == TypeId::of::<M>()) {
            if f.protocol == protocol {
                return Ok(f.base);
            }
            return Err(BuildError::TypeClaimed {
                message: name,
                first: f.protocol,
                second: protocol,
            });
        }
        let kinds = <M::Kind as Kind>::NAMES;
        let end = self.next + kinds.len() as u16;
        if end > UNKNOWN.0 as u16 {
            return Err(BuildError::TooManyTypes {
                message: name,
                protocol,
            });
        }
        let base = self.next as u8;
        self.next = end;
        self.families.push(Family {
            id: TypeId::of::<M>(),
            name,
            protocol,
            base,
            kinds,
        });
        Ok(base)
    }

    /// The type number of kind `k` of `M`, or [`UNKNOWN`] when `M` is not installed.
    #[inline]
    pub fn type_of<M: Message>(&self, k: M::Kind) -> MsgType {
        self.base_of::<M>()
            .map_or(UNKNOWN, |b| MsgType(b + k.index() as u8))
    }

    /// The first of `M`'s block of type numbers, if `M` is installed.
    #[inline]
    fn base_of<M: Message>(&self) -> Option<u8> {
        self.families
            .iter()
            .find(|f| f.id == TypeId::of::<M>())
            .map(|f| f.base)
    }

    /// `m` as a message from `src` to `dest`, on its kind's lane, with no
    /// address and no payload bytes (set them with [`Msg::addr`] and
    /// [`Msg::len`]).
    #[inline]
    pub fn encode<M: Message>(&self, src: NodeId, dest: NodeId, m: &M) -> Msg {
        let k = m.kind();
        let mut words = [0; WORDS];
        m.encode(&mut Writer {
            words: &mut words,
            at: 0,
        });
        Msg {
            mtype: self.type_of::<M>(k),
            lane: k.lane(),
            src,
            dest,
            addr: PAddr::default(),
            len: 0,
            words,
        }
    }

    /// `msg` decoded as an `M`.
    pub fn decode<M: Message>(&self, msg: &Msg) -> Result<M, DecodeError> {
        let kind = self.base_of::<M>().and_then(|b| kind_at::<M>(b, msg.mtype));
        let Some(kind) = kind else {
            return Err(DecodeError::WrongType {
                expected: short_name::<M>(),
                found: self.describe(msg.mtype),
            });
        };
        decode_words::<M>(kind, &msg.words).ok_or_else(|| DecodeError::BadField {
            message: self.describe(msg.mtype),
        })
    }

    /// A type number as people read it: `protocol Type::Kind`.
    pub fn describe(&self, t: MsgType) -> String {
        self.families
            .iter()
            .find_map(|f| {
                let i = t.0.checked_sub(f.base)? as usize;
                let k = f.kinds.get(i)?;
                Some(format!("{} {}::{k}", f.protocol, f.name))
            })
            .unwrap_or_else(|| {
                if t == UNKNOWN {
                    "a type no installed protocol owns".to_string()
                } else {
                    format!("type {}", t.0)
                }
            })
    }
}

/// The kind of `M` type number `t` is, when `M`'s block starts at `base`.
#[inline]
pub(crate) fn kind_at<M: Message>(base: u8, t: MsgType) -> Option<M::Kind> {
    t.0.checked_sub(base)
        .and_then(|i| M::Kind::from_index(i as usize))
}

/// Decode the payload of a message already known to be of kind `k`.
#[inline]
pub(crate) fn decode_words<M: Message>(k: M::Kind, words: &[u64; WORDS]) -> Option<M> {
    M::decode(k, &mut Reader { words, at: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::messages! {
        /// Test messages.
        pub enum T: TKind {
            /// No fields.
            A,
            /// Three fields.
            B { x: u64, n: NodeId, f: bool } => Reply,
        }
    }

    crate::messages! {
        /// Another type.
        pub enum U: UKind {
            /// One kind.
            C { x: u8 },
        }
    }

    #[test]
    fn round_trip_and_wrong_type() {
        let mut r = Registry::starting_at(0);
        assert_eq!(r.add::<T>("t"), Ok(0));
        assert_eq!(r.add::<U>("u"), Ok(2));
        assert_eq!(r.add::<T>("t"), Ok(0));
        assert!(matches!(
            r.add::<T>("other"),
            Err(BuildError::TypeClaimed {
                first: "t",
                second: "other",
                ..
            })
        ));
        let m = T::B {
            x: 7,
            n: NodeId(3),
            f: true,
        };
        let msg = r.encode(NodeId(0), NodeId(1), &m);
        assert_eq!((msg.mtype, msg.lane), (MsgType(1), Lane::Reply));
        assert_eq!(r.decode::<T>(&msg), Ok(m));
        let e = r.decode::<U>(&msg).unwrap_err();
        assert_eq!(e.to_string(), "a t T::B decoded as U");
        let c = r.encode(NodeId(0), NodeId(1), &U::C { x: 200 });
        assert_eq!(r.decode::<U>(&c), Ok(U::C { x: 200 }));
    }

    #[test]
    fn a_field_out_of_range_is_an_error() {
        let mut r = Registry::starting_at(0);
        r.add::<U>("u").unwrap();
        let mut msg = r.encode(NodeId(0), NodeId(1), &U::C { x: 1 });
        msg.words[0] = 300;
        assert_eq!(
            r.decode::<U>(&msg),
            Err(DecodeError::BadField {
                message: "u U::C".into()
            })
        );
    }

    #[test]
    fn types_beyond_the_jump_table_are_refused() {
        let mut r = Registry::starting_at(254);
        assert_eq!(
            r.add::<T>("t"),
            Err(BuildError::TooManyTypes {
                message: "T",
                protocol: "t"
            })
        );
        // One kind still fits below the number kept for unknown types.
        assert_eq!(r.add::<U>("u"), Ok(254));
    }

    #[test]
    fn an_uninstalled_type_is_unknown() {
        let r = Registry::starting_at(0);
        let msg = r.encode(NodeId(0), NodeId(1), &T::A);
        assert_eq!(msg.mtype, UNKNOWN);
        assert!(r.decode::<T>(&msg).is_err());
    }
}
