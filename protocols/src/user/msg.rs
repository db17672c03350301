//! The user layer's messages: what the processor (the user program and the
//! OS) hands its MAGIC, what MAGIC reschedules for itself, what MAGICs send
//! each other, and what MAGIC hands the processor back.

use super::cmd::{Nack, OpCode};
use crate::os_side::{Frame, OsMessages};
use magic::message::Word;
use os_shim::{Pid, VPage};

/// Which operation a network message belongs to: the sending process, its
/// operation record at the sender, and whether it is the operation's last
/// line. It travels as one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tag {
    /// The process that started the operation.
    pub pid: Pid,
    /// Its operation record at the sending MAGIC.
    pub slot: usize,
    /// The operation's last line.
    pub last: bool,
}

impl Word for Tag {
    fn to_word(self) -> u64 {
        (self.pid.0 as u64) << 32 | (self.slot as u64 & 0xFFFF) << 1 | self.last as u64
    }
    fn from_word(w: u64) -> Option<Tag> {
        Some(Tag {
            pid: Pid(u16::try_from(w >> 32).ok()?),
            slot: ((w >> 1) & 0xFFFF) as usize,
            last: w & 1 == 1,
        })
    }
}

magic::messages! {
    /// The user layer's messages. A command write's register or shadow page
    /// is the header's address, as are a fetch-and-add's word and a line's
    /// destination.
    pub enum UserMsg: UserKind {
        /// Processor to MAGIC: the OS says which process runs now.
        SetPid {
            /// The process now running.
            pid: Pid,
        },
        /// Processor to MAGIC: one uncached write of a command sequence, of
        /// `data` to the register or shadow page at the header's address.
        Write {
            /// The word written.
            data: u64,
        },
        /// Processor to MAGIC: the committing uncached read.
        Commit,
        /// Processor to MAGIC: the OS is about to change a translation.
        OsNotice {
            /// The virtual page whose translation changes.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
            /// The frame it maps to until now.
            old: Frame,
        },
        /// Processor to MAGIC: the OS answers MAGIC's interrupt.
        OsTranslation {
            /// The virtual page MAGIC asked about.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
            /// The frame it maps to (`None`: not mapped).
            frame: Frame,
        },
        /// Software queue: the next line of the copy or send in record `slot`.
        Step {
            /// The operation record at this MAGIC.
            slot: usize,
        },
        /// To the word's home: add `amount` to it.
        FetchAdd {
            /// What to add.
            amount: u64,
            /// The operation it belongs to.
            tag: Tag,
        },
        /// Back to the requester: the word's old value.
        FetchAddReply {
            /// The word's value before the add.
            old: u64,
            /// The operation it belongs to.
            tag: Tag,
        } => Reply,
        /// One line of a copy or send (with the line), for process `to` at
        /// the destination (a send's peer).
        Line {
            /// The operation it belongs to.
            tag: Tag,
            /// The destination process (a send's peer; 0 for a copy).
            to: Pid,
            /// The operation: a copy or one of the sends.
            op: OpCode,
        },
        /// The destination has the operation's last line; `failed` if it
        /// refused some line.
        LineDone {
            /// The operation it belongs to.
            tag: Tag,
            /// The destination refused some line.
            failed: bool,
        } => Reply,
        /// MAGIC to the processor: `pid`'s sequence is accepted.
        Ack {
            /// The process whose sequence it is.
            pid: Pid,
        },
        /// MAGIC to the processor: `pid`'s sequence is refused.
        Nack {
            /// Why it is refused.
            reason: Nack,
            /// The process whose sequence it is.
            pid: Pid,
        },
        /// MAGIC to the processor: an operation of `pid` is over, with the
        /// fetch-and-add's old value; `ok` is false if it could not finish.
        Done {
            /// The process that started the operation.
            pid: Pid,
            /// A fetch-and-add's old value (0 for other operations).
            value: u64,
            /// The operation finished.
            ok: bool,
        },
        /// MAGIC to the processor: translate `pid`'s `page`, please.
        Interrupt {
            /// The virtual page to translate.
            page: VPage,
            /// The process whose page it is.
            pid: Pid,
        },
        /// MAGIC to the processor: the changing page is no longer in use,
        /// the OS may go on.
        OsAnswer,
    }
}

impl OsMessages for UserMsg {
    fn notice(page: VPage, pid: Pid, old: Frame) -> UserMsg {
        UserMsg::OsNotice { page, pid, old }
    }

    fn translation(page: VPage, pid: Pid, frame: Frame) -> UserMsg {
        UserMsg::OsTranslation { page, pid, frame }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_one_word_and_back() {
        let t = Tag {
            pid: Pid(7),
            slot: 3,
            last: true,
        };
        assert_eq!(t.to_word(), 7 << 32 | 3 << 1 | 1);
        assert_eq!(Tag::from_word(t.to_word()), Some(t));
        assert_eq!(Tag::from_word(1 << 60), None);
    }
}
