//! The command interface's costs, shared by every protocol whose user code
//! talks to MAGIC through command sequences (the user layer, the transfer
//! and Active Messages on MAGIC): taking one uncached command write into the
//! operation record; checking and answering a sequence's committing read
//! (the user layer's and Active Messages'; the transfer's commit is its own
//! task schedule, calibrated on its start-up); and taking the operating
//! system's notice of a translation change or its answer to MAGIC's
//! interrupt.
//!
//! A scenario overrides them in a `[costs.command]` table; `docs/costs.md`
//! lists the sheet with each entry's provenance.

use magic::costs::Source;

magic::cost_sheet! {
    /// What MAGIC's command-interface handlers charge (instructions, dual issue).
    pub struct CommandCosts in "costs.command" {
        /// Take one command write into the record.
        write: u32 = 6, Source::Choice(
            "decode the address (register or shadow page), store the data in the PID's record."),
            from 1: "its store into the record is one of its instructions";
        /// Check and accept (or refuse) a sequence at its committing read.
        commit: u32 = 16, Source::Choice(
            "load the record, check the operation, group and pages, answer; \
             the start-up of a fetch-and-op (59 cycles) follows from it."),
            from 3: "a send's commit loads the record twice and stores it, among its instructions";
        /// Take an OS notice (a translation about to change) or the OS's
        /// answer to an interrupt.
        os_notice: u32 = 16, Source::Choice(
            "decode, find the page's list head, answer."),
            from 1: "its store of the software TLB's set or of the record is one of its instructions";
    }
}
