//! The command interface's costs, shared by every protocol whose user code
//! talks to MAGIC through command sequences (the user layer, the transfer
//! and Active Messages on MAGIC): taking one uncached command write into the operation record,
//! and taking the operating system's notice of a translation change or its
//! answer to MAGIC's interrupt.
//!
//! A scenario overrides them in a `[costs.command]` table; `docs/costs.md`
//! lists the sheet with each entry's provenance.

use magic::costs::Source;

magic::cost_sheet! {
    /// What MAGIC's command-interface handlers charge (instructions, dual issue).
    pub struct CommandCosts {
        /// Take one command write into the record.
        write: u32 = 6, Source::Choice(
            "decode the address (register or shadow page), store the data in the PID's record.");
        /// Take an OS notice (a translation about to change) or the OS's
        /// answer to an interrupt.
        os_notice: u32 = 16, Source::Choice(
            "decode, find the page's list head, answer.");
    }
}
