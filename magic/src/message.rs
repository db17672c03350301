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
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a whole message type",
    label = "not a message type of all its kinds",
    note = "a handler of one kind is routed with `route`/`route_any`, which take the kind from its type; `route_kind` is for a handler of every kind (`handler_of_all`)"
)]
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

/// What can be sent as a message of type [`IntoMessage::Message`]: the
/// message type itself, or one of its kinds' own types ([`Variant`]), so
/// `cx.msg(LockMsg::Grant { ticket })` and `cx.msg(lock_msg::Grant {
/// ticket })` make the same message.
pub trait IntoMessage {
    /// The message type this becomes.
    type Message: Message;
    /// The message.
    fn into_message(self) -> Self::Message;
}

impl<M: Message> IntoMessage for M {
    type Message = M;
    #[inline]
    fn into_message(self) -> M {
        self
    }
}

/// One kind of a message type as a type of its own, carrying exactly that
/// kind's fields: what a handler routed to that kind alone receives.
/// [`messages!`](crate::messages) makes one for each kind, in a module named
/// after the enum (`LockMsg::Grant { ticket }` is `lock_msg::Grant { ticket
/// }`).
///
/// A handler registered with [`Install::handler`](crate::Install::handler)
/// takes a `Variant`, and its routes take their kind from it: a reply
/// cannot be routed to the request's handler, because the types differ.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one kind of a message",
    label = "a handler registered with `handler` takes one kind's own type, made by `messages!`",
    note = "a handler of every kind of a message type is registered with `handler_of_all` and routed with `route_kind`"
)]
pub trait Variant: IntoMessage + Copy + fmt::Debug + 'static {
    /// The kind this type is.
    const KIND: <Self::Message as Message>::Kind;
    /// The message as this kind's type; `None` when it is another kind.
    fn from_message(m: Self::Message) -> Option<Self>;
}

/// Declare a protocol's messages: an enum, its field-less twin of kinds,
/// each kind as a type of its own, and their encoding. Each variant is a
/// kind; its fields (at most [`WORDS`](crate::message::WORDS), each a
/// [`Word`](crate::message::Word)) are the payload. `=> Reply` puts a kind
/// on the reply lane (the default is the request lane).
///
/// For `enum FaddMsg: FaddKind`, the macro makes:
/// - `FaddMsg`, the messages, and `FaddKind`, their kinds (routes of a
///   handler of every kind name them);
/// - a module `fadd_msg` (the enum's name in snake case) holding a struct
///   per kind with exactly that kind's fields (`fadd_msg::Add { amount }`;
///   a unit struct for a kind without fields), each a
///   [`Variant`](crate::message::Variant) and convertible into the enum
///   (`From`): a handler of one kind takes it, and `cx.msg` takes it or the
///   enum alike.
///
/// The structs' field types resolve where the enum's do. (Called in a
/// function body, the field types must be nameable from the module around
/// the function: a module in a function does not see the function's items.)
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
/// use magic::message::{IntoMessage, Variant};
/// let add = fadd_msg::Add { amount: 2 };
/// assert_eq!(FaddMsg::from(add), FaddMsg::Add { amount: 2 });
/// assert_eq!(add.into_message(), FaddMsg::Add { amount: 2 });
/// assert_eq!(<fadd_msg::Old as Variant>::KIND, FaddKind::Old);
/// assert_eq!(fadd_msg::Old::from_message(FaddMsg::Old { value: 7 }), Some(fadd_msg::Old { value: 7 }));
/// assert_eq!(fadd_msg::Old::from_message(FaddMsg::Add { amount: 7 }), None);
/// ```
#[macro_export]
macro_rules! messages {
    (
        $(#[$meta:meta])*
        $(pub $(($($vis:tt)+))?)? enum $name:ident : $kind:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({ $($(#[$fmeta:meta])* $field:ident : $fty:ty),* $(,)? })? $(=> $lane:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $(pub $(($($vis)+))?)? enum $name {
            $(
                $(#[$vmeta])*
                $variant $({ $($(#[$fmeta])* $field : $fty),* })?,
            )*
        }

        #[doc = concat!("The kinds of [`", stringify!($name), "`].")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $(pub $(($($vis)+))?)? enum $kind {
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

        $crate::message::__paste! {
            $crate::__message_module! {
                [$(pub $(($($vis)+))?)?] $name [<$name:snake>]
                $( [$(#[$vmeta])*] $variant $({ $($(#[$fmeta])* $field : $fty),* })? )*
            }

            $(
                impl $crate::message::IntoMessage for [<$name:snake>]::$variant {
                    type Message = $name;
                    #[inline]
                    fn into_message(self) -> $name {
                        let [<$name:snake>]::$variant { $($($field),*)? } = self;
                        $name::$variant { $($($field),*)? }
                    }
                }

                impl $crate::message::Variant for [<$name:snake>]::$variant {
                    const KIND: $kind = $kind::$variant;
                    #[inline]
                    #[allow(unreachable_patterns)]
                    fn from_message(m: $name) -> Option<Self> {
                        match m {
                            $name::$variant { $($($field),*)? } => {
                                Some([<$name:snake>]::$variant { $($($field),*)? })
                            }
                            _ => None,
                        }
                    }
                }

                impl From<[<$name:snake>]::$variant> for $name {
                    #[inline]
                    fn from(v: [<$name:snake>]::$variant) -> $name {
                        $crate::message::IntoMessage::into_message(v)
                    }
                }
            )*
        }
    };
}

/// The module of each kind's own type, for [`messages!`](crate::messages).
/// Its structs are visible where the enum is: the enum's visibility, seen
/// from one module down. Their field types are named through aliases (a
/// module per kind, importing the enum's surroundings), so they resolve as
/// in the enum even when a kind's name is also the name of a field's type
/// (`Nack { reason: Nack }`).
#[doc(hidden)]
#[macro_export]
macro_rules! __message_module {
    ([] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub(super)] [] $($rest)* }
    };
    ([pub] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub] [pub] $($rest)* }
    };
    ([pub(crate)] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub(crate)] [pub(crate)] $($rest)* }
    };
    ([pub(self)] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub(super)] [] $($rest)* }
    };
    ([pub(super)] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub(in super::super)] [pub(super)] $($rest)* }
    };
    ([pub(in crate $($path:tt)*)] $($rest:tt)*) => {
        $crate::__message_module! { @go [pub(in crate $($path)*)] [pub(in crate $($path)*)] $($rest)* }
    };
    (@go [$ivis:vis] [$($mvis:tt)*] $name:ident $module:ident
        $( [$(#[$vmeta:meta])*] $variant:ident $({ $($(#[$fmeta:meta])* $field:ident : $fty:ty),* })? )*
    ) => {
        #[doc = concat!(
            "Each kind of [`", stringify!($name), "`] as a type of its own, with exactly ",
            "that kind's fields: what a handler of that kind alone receives, and what ",
            "its routes take the kind from."
        )]
        $($mvis)* mod $module {
            /// The field types, named where the enum is.
            #[allow(non_snake_case, non_camel_case_types)]
            mod __fields {
                $($(
                    pub mod $variant {
                        #[allow(unused_imports)]
                        use super::super::super::*;
                        $( pub type $field = $fty; )*
                    }
                )?)*
            }

            $(
                $crate::__message_variant! {
                    [$ivis] [$(#[$vmeta])*] $name $variant $({ $($(#[$fmeta])* $field),* })?
                }
            )*
        }
    };
}

/// One kind's own type, for [`messages!`](crate::messages): a unit struct
/// for a kind without fields, else a struct of its fields.
#[doc(hidden)]
#[macro_export]
macro_rules! __message_variant {
    ([$ivis:vis] [$(#[$vmeta:meta])*] $name:ident $variant:ident) => {
        $(#[$vmeta])*
        #[doc = ""]
        #[doc = concat!(
            "The kind [`", stringify!($name), "::", stringify!($variant), "`](super::",
            stringify!($name), "::", stringify!($variant), ") as a type of its own."
        )]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $ivis struct $variant;
    };
    ([$ivis:vis] [$(#[$vmeta:meta])*] $name:ident $variant:ident { $($(#[$fmeta:meta])* $field:ident),* }) => {
        $(#[$vmeta])*
        #[doc = ""]
        #[doc = concat!(
            "The kind [`", stringify!($name), "::", stringify!($variant), "`](super::",
            stringify!($name), "::", stringify!($variant), ") as a type of its own."
        )]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $ivis struct $variant {
            $(
                $(#[$fmeta])*
                #[doc = $crate::__message_field_doc!(
                    [$(#[$fmeta])*],
                    concat!("The `", stringify!($field), "` field of [`", stringify!($name), "::", stringify!($variant), "`](super::", stringify!($name), "::", stringify!($variant), ").")
                )]
                $ivis $field: __fields::$variant::$field,
            )*
        }
    };
}

/// A field's documentation: the field's own when it has some, else `$default`.
#[doc(hidden)]
#[macro_export]
macro_rules! __message_field_doc {
    ([], $default:expr) => {
        $default
    };
    ([$($doc:tt)+], $default:expr) => {
        ""
    };
}

/// Pastes identifiers for [`messages!`](crate::messages) (the module of
/// kinds' types is the enum's name in snake case).
#[doc(hidden)]
pub use pastey::paste as __paste;

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
    /// More handlers than a machine numbers (a [`HandlerId`](crate::HandlerId)
    /// is 16 bits).
    #[error("{handler} is handler {count} of a machine, which has at most {max}")]
    TooManyHandlers {
        /// The first handler past the most, as `protocol.handler`.
        handler: String,
        /// Its number, counting from 1.
        count: usize,
        /// The most a machine has.
        max: usize,
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
    /// Two protocols (or parts) with one name: a name is the prefix of its
    /// protocol's ledger rows, so it is unique in a machine.
    #[error("two protocols are named {name}: {first} and {second}")]
    NameTaken {
        /// The name.
        name: &'static str,
        /// What took it first: a protocol's type, or a part and who
        /// installed it.
        first: String,
        /// What asked for it again.
        second: String,
    },
    /// One protocol installed twice on a machine.
    #[error("protocol {protocol} ({what}) is installed twice")]
    InstalledTwice {
        /// The protocol's name.
        protocol: &'static str,
        /// Its type, or the part and who installed it.
        what: String,
    },
    /// One handler routed twice to one (type, region).
    #[error("{handler} is routed twice to {message} in the {region:?} region")]
    RoutedTwice {
        /// The handler, as `protocol.handler`.
        handler: String,
        /// The message kind, as `protocol Type::Kind`.
        message: String,
        /// The region.
        region: crate::ids::Region,
    },
    /// Two handlers of one protocol registered under one name: their
    /// ledger rows would share it.
    #[error("two handlers are named {handler}")]
    HandlerNamedTwice {
        /// The name, as `protocol.handler`.
        handler: String,
    },
    /// A kind routed whose [`Kind::index`] is not a position in its
    /// [`Kind::NAMES`] (a hand-written [`Kind`]): its type number would be
    /// another kind's, or the one kept for unknown types.
    #[error(
        "{protocol} routes kind {kind} of message type {message} with index {index}, \
         but the type has {kinds} kind(s)"
    )]
    KindOutOfRange {
        /// The message type.
        message: &'static str,
        /// The kind, as its `Debug` shows it.
        kind: String,
        /// What its [`Kind::index`] says.
        index: usize,
        /// How many kinds its [`Kind::NAMES`] has.
        kinds: usize,
        /// The protocol that routed it.
        protocol: &'static str,
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
/// machine does not know (or of a kind whose [`Kind::index`] is past its
/// [`Kind::NAMES`]) is encoded with it, reaches no handler, and is counted
/// and reported as unrouted.
pub const UNKNOWN: MsgType = MsgType(u8::MAX);

/// The message types installed on a machine, and the block of type numbers
/// each was given.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    families: Vec<Family>,
    next: u16,
    /// Each installed type's base, at the slot its type's identity hashes
    /// to (see [`slot_of`]): a type's slot is a constant where the type is
    /// known, so finding its base on every `cx.msg` is one load and one
    /// comparison rather than a search of `families`. A type whose slot an
    /// earlier type holds is found by the search.
    slots: [Option<(TypeId, u8)>; SLOTS],
}

/// How many slots [`Registry`] keeps for finding a type's base directly.
const SLOTS: usize = 16;

/// The slot of the type whose identity is `id`: bits of its hash. Where
/// the type is known to the compiler, its identity is a constant and so is
/// this.
#[inline(always)]
fn slot_of(id: TypeId) -> usize {
    use core::hash::{Hash, Hasher};
    /// Keeps the last word hashed: a type's identity hashes as bits of
    /// itself, so this is those bits.
    struct Bits(u64);
    impl Hasher for Bits {
        #[inline(always)]
        fn finish(&self) -> u64 {
            self.0
        }
        #[inline(always)]
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = self.0.rotate_left(8) ^ b as u64;
            }
        }
        #[inline(always)]
        fn write_u64(&mut self, n: u64) {
            self.0 ^= n;
        }
    }
    let mut h = Bits(0);
    id.hash(&mut h);
    // The identity's bits are a hash already: any few of them will do.
    (h.finish() >> 7) as usize % SLOTS
}

/// A type's name without its path, as errors name message types.
pub(crate) fn short_name<M: 'static>() -> &'static str {
    let full = core::any::type_name::<M>();
    full.rsplit("::").next().unwrap_or(full)
}

impl Registry {
    /// An empty registry whose numbers start at `first`.
    pub(crate) fn starting_at(first: u8) -> Registry {
        Registry {
            families: Vec::new(),
            next: first as u16,
            slots: [None; SLOTS],
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
        // Counted in `usize`: a type of more kinds than a `u16` counts is
        // refused, not wrapped into a small block.
        let end = usize::from(self.next).saturating_add(kinds.len());
        let (base, end) = match (u8::try_from(self.next), u16::try_from(end)) {
            (Ok(base), Ok(end)) if end <= u16::from(UNKNOWN.0) => (base, end),
            _ => {
                return Err(BuildError::TooManyTypes {
                    message: name,
                    protocol,
                })
            }
        };
        self.next = end;
        let slot = &mut self.slots[slot_of(TypeId::of::<M>())];
        if slot.is_none() {
            *slot = Some((TypeId::of::<M>(), base));
        }
        self.families.push(Family {
            id: TypeId::of::<M>(),
            name,
            protocol,
            base,
            kinds,
        });
        Ok(base)
    }

    /// The type number of kind `k` of `M`, or [`UNKNOWN`] when `M` is not
    /// installed or `k`'s [`Kind::index`] is not a position in
    /// [`Kind::NAMES`] (a hand-written [`Kind`]): never another kind's
    /// number, so such a message reaches no handler and is counted and
    /// reported as unrouted.
    #[inline]
    pub fn type_of<M: Message>(&self, k: M::Kind) -> MsgType {
        self.base_of::<M>()
            .and_then(|b| number_at::<M>(b, k))
            .unwrap_or(UNKNOWN)
    }

    /// The first of `M`'s block of type numbers, if `M` is installed.
    #[inline]
    fn base_of<M: Message>(&self) -> Option<u8> {
        match self.slots[slot_of(TypeId::of::<M>())] {
            Some((id, base)) if id == TypeId::of::<M>() => Some(base),
            _ => self.search::<M>(),
        }
    }

    /// `M`'s base when its slot holds another type, or `M` is not installed.
    #[cold]
    #[inline(never)]
    fn search<M: Message>(&self) -> Option<u8> {
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

/// The type number of kind `k` of `M`, when `M`'s block starts at `base`;
/// `None` for a kind whose [`Kind::index`] is not a position in its
/// [`Kind::NAMES`] (a hand-written [`Kind`]), whose number would be
/// another kind's. [`Registry::add`] gave `M` a block of `NAMES.len()`
/// numbers below [`UNKNOWN`], so a kind in range is one of them.
#[inline]
pub(crate) fn number_at<M: Message>(base: u8, k: M::Kind) -> Option<MsgType> {
    let i = k.index();
    if i >= <M::Kind as Kind>::NAMES.len() {
        return None;
    }
    let i = u8::try_from(i).ok()?;
    base.checked_add(i).map(MsgType)
}

/// The kind of `M` type number `t` is, when `M`'s block starts at `base`;
/// `None` past the block, whatever a hand-written [`Kind::from_index`]
/// makes of the position.
#[inline]
pub(crate) fn kind_at<M: Message>(base: u8, t: MsgType) -> Option<M::Kind> {
    t.0.checked_sub(base)
        .map(usize::from)
        .filter(|&i| i < <M::Kind as Kind>::NAMES.len())
        .and_then(M::Kind::from_index)
}

/// Decode the payload of a message already known to be of kind `k`.
#[inline]
pub(crate) fn decode_words<M: Message>(k: M::Kind, words: &[u64; WORDS]) -> Option<M> {
    M::decode(k, &mut Reader { words, at: 0 })
}

#[cfg(test)]
pub(crate) mod tests {
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
    fn a_type_is_found_whether_or_not_its_slot_is_its_own() {
        let mut r = Registry::starting_at(0);
        r.add::<T>("t").unwrap();
        r.add::<U>("u").unwrap();
        assert_eq!((r.base_of::<T>(), r.base_of::<U>()), (Some(0), Some(2)));
        // `U`'s slot held by `T` (as when their identities share a slot):
        // `U` is found by the search, `T` still directly.
        r.slots = [None; SLOTS];
        r.slots[slot_of(TypeId::of::<U>())] = Some((TypeId::of::<T>(), 0));
        r.slots[slot_of(TypeId::of::<T>())] = Some((TypeId::of::<T>(), 0));
        assert_eq!((r.base_of::<T>(), r.base_of::<U>()), (Some(0), Some(2)));
        let c = r.encode(NodeId(0), NodeId(1), &U::C { x: 5 });
        assert_eq!(c.mtype, MsgType(2));
        assert_eq!(r.decode::<U>(&c), Ok(U::C { x: 5 }));
    }

    /// A hand-written kind whose index may be past its names (the
    /// machine's tests in `testing` use it too).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct BigK(pub(crate) usize);

    impl Kind for BigK {
        const NAMES: &'static [&'static str] = &["only"];
        fn index(self) -> usize {
            self.0
        }
        fn from_index(i: usize) -> Option<Self> {
            Some(BigK(i))
        }
    }

    /// A message of a hand-written kind.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct BigM(pub(crate) usize);

    impl Message for BigM {
        type Kind = BigK;
        fn kind(&self) -> BigK {
            BigK(self.0)
        }
        fn encode(&self, _: &mut Writer<'_>) {}
        fn decode(k: BigK, _: &mut Reader<'_>) -> Option<Self> {
            Some(BigM(k.0))
        }
    }

    #[test]
    fn a_kind_past_its_names_encodes_as_unknown() {
        let mut r = Registry::starting_at(0);
        r.add::<T>("t").unwrap();
        assert_eq!(r.add::<BigM>("big"), Ok(2));
        assert_eq!(r.type_of::<BigM>(BigK(0)), MsgType(2));
        for i in [1, 253, 254, 256, 1000, usize::MAX] {
            assert_eq!(r.type_of::<BigM>(BigK(i)), UNKNOWN, "BigK({i})");
            let msg = r.encode(NodeId(0), NodeId(0), &BigM(i));
            assert_eq!(msg.mtype, UNKNOWN, "BigM({i})");
            assert!(r.decode::<BigM>(&msg).is_err());
        }
        // Nor does another type's message decode as one of a kind past
        // `BigM`'s names.
        assert_eq!(r.add::<U>("u"), Ok(3));
        let c = r.encode(NodeId(0), NodeId(0), &U::C { x: 1 });
        assert_eq!(
            r.decode::<BigM>(&c),
            Err(DecodeError::WrongType {
                expected: "BigM",
                found: "u U::C".into()
            })
        );
    }

    /// A type of more kinds than a `u16` counts is refused, where its
    /// count wrapped to a small block and its kinds took others' numbers.
    #[test]
    fn a_type_of_more_kinds_than_numbers_is_refused() {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        struct ManyK;
        impl Kind for ManyK {
            const NAMES: &'static [&'static str] = &[""; 1 << 16];
            fn index(self) -> usize {
                0
            }
            fn from_index(_: usize) -> Option<Self> {
                Some(ManyK)
            }
        }
        #[derive(Clone, Copy, Debug)]
        struct ManyM;
        impl Message for ManyM {
            type Kind = ManyK;
            fn kind(&self) -> ManyK {
                ManyK
            }
            fn encode(&self, _: &mut Writer<'_>) {}
            fn decode(_: ManyK, _: &mut Reader<'_>) -> Option<Self> {
                Some(ManyM)
            }
        }
        let mut r = Registry::starting_at(0);
        assert_eq!(
            r.add::<ManyM>("many"),
            Err(BuildError::TooManyTypes {
                message: "ManyM",
                protocol: "many"
            })
        );
        assert_eq!(r.add::<T>("t"), Ok(0));
    }

    #[test]
    fn an_uninstalled_type_is_unknown() {
        let r = Registry::starting_at(0);
        let msg = r.encode(NodeId(0), NodeId(1), &T::A);
        assert_eq!(msg.mtype, UNKNOWN);
        assert!(r.decode::<T>(&msg).is_err());
    }
}
