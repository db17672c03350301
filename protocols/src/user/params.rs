//! What a study sets for user-level messaging: MAGIC's records and software
//! TLB, the handlers' cost sheets, the OS's costs and the user program's
//! back-off.

use super::tlb::{Tlb, TlbParams};
use crate::command::CommandCosts;
use crate::error::check;
use crate::Error;
use magic::costs::{Sheet, Source, Task};
use magic::Cycles;
use os_shim::OsCosts;
use serde::{Deserialize, Serialize};

magic::cost_sheet! {
    /// Instructions MAGIC's handlers issue per step of user-level messaging
    /// (dual issue), with the data-cache loads and stores charged beside them.
    /// The command writes, commits and the OS's notices are the command interface's
    /// ([`CommandCosts`]).
    pub struct UserCosts in "costs.user" {
        /// One line of a copy or send: address, header, bookkeeping.
        line: u32 = 14, Source::Choice(
            "as the transfer's clean line without its directory work."),
            from 2: "its load and store of the record are among its instructions";
        /// Receive one line or request at the other end.
        receive: u32 = 8, Source::Choice(
            "decode, check the group and the page's owner, issue the write."),
            from 1: "its load of the group table, or store of the record, is one of its instructions";
        /// Link (or relink) a page use into the in-use table.
        link: Task = Task::new(9, 17, 0, 0), Source::Published(
            "section 4: linking a translation costs 8-9 PP cycles, hand-coded.");
        /// Look a translation up in the software TLB (plus the set's load).
        tlb_lookup: u32 = 6, Source::Choice(
            "hash the virtual page, compare the set's tags, branch."),
            from 1: "its load of the set is one of its instructions";
        /// Walk one element of a page's use list on a translation-change notice.
        walk: u32 = 4, Source::Choice("load the next element, mark it, branch."),
            from 1: "its load of the element is one of its instructions";
        /// Take the OS's notice of the running process.
        set_pid: u32 = 2, Source::Choice("store the PID in a register.");
        /// The check on a use of a linked page (invalidation, software TLB; hold-off links none): one branch.
        valid_check: u32 = 1, Source::Published(
            "section 4: handlers check validity on every use, one branch.");
        /// Fetch-and-add at the word's home: add and merge into the line.
        fop_apply: u32 = 4, Source::Choice(
            "extract the word, add, insert it back, issue the write.");
    }
}

/// A known bug that can be planted in user-level messaging's handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bug {
    /// Hold-off answers the OS's notice at once, before the operations
    /// that hold it off have drained.
    EarlyAnswer,
    /// The notice does not mark the page's uses stale (invalidation).
    KeepStale,
    /// The notice leaves the page's entry in the software TLB.
    KeepTlbEntry,
}

impl Bug {
    /// Every bug, in the order `--inject list` prints them.
    pub const ALL: [Bug; 3] = [Bug::EarlyAnswer, Bug::KeepStale, Bug::KeepTlbEntry];

    /// The bug's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Bug::EarlyAnswer => "early-answer",
            Bug::KeepStale => "keep-stale",
            Bug::KeepTlbEntry => "keep-tlb-entry",
        }
    }
}

/// The parameters of user-level messaging on every node. They read back
/// as they serialize (a result's configuration), a field left out keeping
/// its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserParams {
    /// Operation records in MAGIC memory.
    pub records: usize,
    /// MAGIC's software TLB.
    pub tlb: TlbParams,
    /// What the handlers charge.
    pub costs: UserCosts,
    /// What the command interface's handlers charge.
    pub command: CommandCosts,
    /// What the OS's steps cost on the compute processor.
    pub os: OsCosts,
    /// A NACKed sequence is tried again this many times at most, after
    /// back-offs of `backoff`, 2 x `backoff`, 4 x ...
    pub retries: u32,
    /// The first back-off.
    pub backoff: Cycles,
    /// A known bug planted in the handlers, for testing a checker (none by
    /// default; see [`Bug`]).
    pub inject: Option<Bug>,
}

impl UserParams {
    /// The parameters are ones a node can be built with, on some machine:
    /// every count in range, every cost sheet's entries in theirs. The
    /// error names the first field out of range.
    pub fn validate(&self) -> Result<(), Error> {
        check("records", self.records, 1, 4096)?;
        check("retries", self.retries, 0, 16)?;
        check("backoff", self.backoff.0, 1, 1 << 20)?;
        self.costs.validate()?;
        self.command.validate()?;
        self.os.validate()?;
        Tlb::check(self.tlb)
    }

    /// [`UserParams::validate`], and every task of the sheets one a PP
    /// issuing `issue_width` instructions a cycle can run.
    pub fn validate_on(&self, issue_width: u32) -> Result<(), Error> {
        self.validate()?;
        self.costs.validate_on(issue_width)?;
        Ok(self.command.validate_on(issue_width)?)
    }
}

impl Default for UserParams {
    fn default() -> Self {
        UserParams {
            records: 4,
            tlb: TlbParams::default(),
            costs: UserCosts::default(),
            command: CommandCosts::default(),
            os: OsCosts::default(),
            retries: 6,
            backoff: Cycles(50),
            inject: None,
        }
    }
}
