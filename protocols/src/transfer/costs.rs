//! The transfer's cost sheet: every constant its handlers charge.
//!
//! The sender's tasks are the optimized handler's Table 2 of FLASH's paper
//! (see `docs/reference.md`), each row split where a chunked handler pays a
//! part once per invocation and the rest once per component: with one
//! component per invocation (`B`, `O`) the rows add up to the published 46
//! instructions for a clean line (8 loads, 4 stores) and 56 for a dirty one
//! (10, 5). The receiver's component handler is broken down task by task with
//! the same conventions (a load's result needs a bundle before it is used; a
//! bundle holds two independent instructions). The connection's commit,
//! setup and cleanup schedules were set from Table 1's start-up parts.
//!
//! The command writes and the OS's notices are charged from the command
//! interface's sheet ([`CommandCosts`](crate::command::CommandCosts)).
//!
//! A scenario overrides any entry in a `[costs.transfer]` table;
//! `docs/costs.md` lists the sheet with each entry's provenance.

use magic::costs::{Source, Task};

/// Table 2 row names, which the per-invocation breakdown groups by.
pub mod row {
    /// Initialization and state load.
    pub const INIT: &str = "initialization and state load";
    /// Load directory, check.
    pub const DIRECTORY: &str = "load directory, check";
    /// Send get to processor cache.
    pub const GET: &str = "send get to processor cache";
    /// Update directory.
    pub const UPDATE_DIRECTORY: &str = "update directory";
    /// Wait for cache, write to memory.
    pub const WAIT_WRITE: &str = "wait for cache, write to memory";
    /// Read memory.
    pub const READ: &str = "read memory";
    /// Form header, update state.
    pub const HEADER: &str = "form header, update state";
    /// Send, reschedule.
    pub const SEND: &str = "send, reschedule";
    /// Unaligned sources: the second buffer of a wrap-around.
    pub const WRAP: &str = "wrap-around";
    /// Unaligned sources: the PP moves the bytes.
    pub const SHIFT: &str = "realign in the PP";
    /// Global coherence: fetch a line from its dirty owner.
    pub const FETCH: &str = "fetch remote line";
    /// A send line homed at a third node: ask its home for it.
    pub const PULL: &str = "pull from the home";
    /// The last component of a send.
    pub const COMPLETE: &str = "complete send";
}

magic::cost_sheet! {
    /// What the transfer's handlers charge (10 ns system cycles of PP time).
    pub struct TransferCosts in "costs.transfer" {
        // ------------------------------------------------------------ sender
        /// Sender, once per invocation: start and load the operation record.
        send_init: Task = Task::new(9, 10, 4, 0), Source::Derived(
            "Table 2: initialization and state load, 10 instructions; 4 of the \
             8 loads (the record). 9 bundles put the memory read at cycle 18 \
             and the get at 17, as the Fig. 8 and 9 timelines do.");
        /// Sender, the first line of an invocation: load and test its directory entry.
        send_directory: Task = Task::new(7, 6, 2, 0), Source::Derived(
            "Table 2: load directory, check, 6 instructions, 2 loads (the \
             entry, then what it points to); each load's result is used at \
             once, so 7 bundles.");
        /// Sender, each further line of a chunk: the next directory entry.
        send_directory_next: Task = Task::new(2, 3, 1, 0), Source::Choice(
            "entries of consecutive lines are adjacent, so a chunked handler \
             that has the first one's address in a register pays one load and \
             a bit-field test for the next; the address work is part of the \
             per-invocation start, which the paper says a chunk pays once.");
        /// Sender, clean line: issue the memory read into a data buffer.
        send_read: Task = Task::new(2, 3, 0, 0), Source::Published(
            "Table 2: read memory, 3 instructions; issued in the second \
             bundle, at cycle 18 (Fig. 8).");
        /// Sender, dirty line: issue the get to the processor cache.
        send_get: Task = Task::new(2, 4, 0, 0), Source::Published(
            "Table 2: send get to processor cache, 4 instructions; issued in \
             the first bundle, at cycle 17 (Fig. 9).");
        /// Sender, dirty line: the entry now says shared by this processor.
        send_update_directory: Task = Task::new(2, 2, 0, 1), Source::Published(
            "Table 2: update directory, 2 instructions and the entry's store.");
        /// Sender, dirty line: once the line returns, write it to memory.
        send_wait_write: Task = Task::new(2, 4, 0, 0), Source::Published(
            "Table 2: wait for cache, write to memory, 4 instructions.");
        /// Sender, clean line: form the component's header.
        send_header_clean: Task = Task::new(5, 9, 1, 0), Source::Derived(
            "Table 2: form header, update state, 15 instructions for a clean \
             line: 9 form the header (per component), 6 update the stream \
             state (send_update_state, per invocation); 1 of the loads.");
        /// Sender, dirty line: form the component's header.
        send_header_dirty: Task = Task::new(6, 10, 2, 0), Source::Derived(
            "Table 2: form header, update state, 16 instructions for a dirty \
             line: 10 + 6, as for a clean line; 2 loads.");
        /// Sender, once per invocation: store the stream state back.
        send_update_state: Task = Task::new(3, 6, 0, 2), Source::Derived(
            "the state part of Table 2's form header, update state: 6 \
             instructions and the record's 2 stores. A chunked handler keeps \
             the state in registers and stores it once.");
        /// Sender, clean line: hand the component to the outbox.
        send_component: Task = Task::new(3, 6, 0, 0), Source::Derived(
            "Table 2: send, reschedule, 12 instructions for a clean line: 6 \
             send the component (per component), 6 reschedule (per invocation).");
        /// Sender, dirty line: prepare the send while the cache answers.
        send_prepare_dirty: Task = Task::new(3, 6, 1, 0), Source::Derived(
            "Table 2: send, reschedule, 14 instructions for a dirty line: 6 \
             prepare it speculatively (Fig. 9: speculative work until cycle \
             32), 2 issue it once the line is back, 6 reschedule.");
        /// Sender, dirty line: issue the send once the line is back.
        send_issue_dirty: Task = Task::new(1, 2, 0, 0), Source::Derived(
            "the issue part of Table 2's dirty send, reschedule (see \
             send_prepare_dirty).");
        /// Sender, once per invocation: put the next step on the software queue.
        send_reschedule: Task = Task::new(3, 6, 1, 2), Source::Derived(
            "the reschedule part of Table 2's send, reschedule: 6 \
             instructions; loading the next queue element into the head \
             register and writing the new one (1 load, 2 stores).");
        /// Sender, unaligned by doublewords: set up the wrap into a second buffer.
        send_wrap: Task = Task::new(1, 2, 0, 0), Source::Choice(
            "allocate the second data buffer and give the read its wrap \
             offset: 2 instructions.");
        /// Sender, unaligned by bytes: PP instructions per doubleword moved.
        shift_dword: u32 = 4, Source::Choice(
            "load, shift, merge with the neighbouring doubleword, store.");
        /// Sender, a send's last component: tell the process (pages apart).
        send_complete: Task = Task::new(4, 7, 1, 1), Source::Choice(
            "free the record, queue the completion for the processor.");
        // ---------------------------------------------------------- receiver
        /// Receiver: start and load the receive record.
        recv_init: Task = Task::new(9, 10, 4, 0), Source::Derived(
            "the sender's initialization and state load (Table 2): the same \
             work on the connection's receive record.");
        /// Receiver: decode the component's header and verify it.
        recv_verify: Task = Task::new(5, 8, 1, 0), Source::Derived(
            "the inverse of the sender's 9 header instructions: the sending \
             PID against the connection's partner (its group), the receive \
             id and the stream position against the receive; 8 instructions, \
             1 load (the connection).");
        /// Receiver: the receive-buffer walk from stream position to line.
        recv_walk: Task = Task::new(5, 7, 2, 0), Source::Choice(
            "offset within the receive to page (the page's frame, 1 load), \
             the invalidation technique's validity check (the use, 1 load, \
             one branch), the line's address and the bytes' place in it \
             (byte-stream splits and alignment).");
        /// Receiver: load and test the destination line's directory entry.
        recv_directory: Task = Task::new(7, 6, 2, 0), Source::Derived(
            "the sender's load directory, check (Table 2).");
        /// Receiver: issue the memory write from the component's buffer.
        recv_write: Task = Task::new(2, 3, 0, 0), Source::Derived(
            "the sender's read memory (Table 2): one memory operation on a buffer.");
        /// Receiver: issue an intervention or invalidation at the processor cache.
        recv_issue: Task = Task::new(2, 4, 0, 0), Source::Derived(
            "the sender's send get to processor cache (Table 2).");
        /// Receiver: write the changed directory entry (a cached receive line).
        recv_update_directory: Task = Task::new(2, 2, 0, 1), Source::Derived(
            "the sender's update directory (Table 2); only when the entry changes.");
        /// Receiver: count the bytes in, release the buffer, test for completion.
        recv_update: Task = Task::new(4, 7, 0, 2), Source::Choice(
            "add the bytes to the receive's count and store it, release the \
             buffer after the write, compare with the length: 7 \
             instructions, 2 stores.");
        /// Receiver, part of a line: read the line and merge the bytes in.
        recv_merge: Task = Task::new(2, 4, 0, 0), Source::Choice(
            "allocate the second buffer, issue the read, set the merge mask.");
        /// Receiver: components stored again after waiting for a buffer.
        recv_retry: Task = Task::new(2, 4, 0, 0), Source::Choice(
            "take the waiting list from the record.");
        // ------------------------------------------------------- connection
        /// Commit: load the record and decode the operation.
        commit_decode: Task = Task::new(6, 9, 2, 0), Source::Derived(
            "with the other commit tasks, set so that the initiation part \
             of Table 1 (41 cycles, first command write to the ACK at the \
             processor) comes out: 22 PP cycles besides the writes and the \
             processor interface.");
        /// Commit: check the operation, its length and its pages.
        commit_check: Task = Task::new(8, 14, 1, 0), Source::Derived(
            "Table 1's initiation (see commit_decode).");
        /// Commit: check the connection.
        commit_connection: Task = Task::new(4, 6, 1, 0), Source::Derived(
            "Table 1's initiation (see commit_decode).");
        /// Commit: accept and answer.
        commit_answer: Task = Task::new(4, 7, 0, 2), Source::Derived(
            "Table 1's initiation (see commit_decode).");
        /// Setup: load the record and the connection.
        setup_load: Task = Task::new(10, 12, 4, 0), Source::Derived(
            "with the other setup tasks and the page links, set so that \
             Table 1's transfer setup and command verification (116 cycles) \
             comes out.");
        /// Setup: verify the command.
        setup_verify: Task = Task::new(30, 50, 3, 0), Source::Derived(
            "Table 1's setup (see setup_load).");
        /// Setup: find the receive space and its alignment.
        setup_space: Task = Task::new(22, 36, 4, 1), Source::Derived(
            "Table 1's setup (see setup_load).");
        /// Setup: initialize the transfer state.
        setup_state: Task = Task::new(32, 54, 2, 8), Source::Derived(
            "Table 1's setup (see setup_load).");
        /// Setup: schedule the transfer handler or send the space notice.
        setup_schedule: Task = Task::new(4, 6, 0, 1), Source::Derived(
            "Table 1's setup (see setup_load).");
        /// Link one page use into the in-use table (the invalidation technique).
        link: Task = Task::new(9, 17, 0, 0), Source::Published(
            "section 4: linking a translation costs 8-9 PP cycles, hand-coded.");
        /// Instructions to unlink one page use at completion.
        unlink: u32 = 3, Source::Choice(
            "a doubly linked list: two pointer stores and a branch.");
        /// Space notice: load the stream state.
        space_load: Task = Task::new(4, 6, 2, 0), Source::Choice(
            "as the setup's record load, for two words.");
        /// Space notice: queue the space, start the transfer if it waits.
        space_queue: Task = Task::new(6, 10, 0, 3), Source::Choice(
            "append to the space list (3 stores) and test for waiting data.");
        /// Cleanup: load the receive record.
        cleanup_load: Task = Task::new(8, 10, 3, 0), Source::Derived(
            "with the other cleanup tasks, set so that Table 1's receiver \
             cleanup at completion (58 cycles, from the last bytes in \
             memory to the process told) comes out.");
        /// Cleanup: update the connection, free the record.
        cleanup_update: Task = Task::new(36, 60, 2, 4), Source::Derived(
            "Table 1's cleanup (see cleanup_load).");
        /// Cleanup: tell the process.
        cleanup_notify: Task = Task::new(14, 24, 1, 1), Source::Derived(
            "Table 1's cleanup (see cleanup_load).");
        /// Instructions per use walked when a page's uses are marked stale.
        walk: u32 = 4, Source::Choice(
            "load the next element, mark it, branch."),
            from 1: "its load of the element is one of its instructions";
        // ------------------------------------------------ global coherence
        /// Sender: test a line ahead for a remote dirty owner.
        fetch_check: Task = Task::new(1, 2, 1, 0), Source::Choice(
            "the entry's load and a bit-field test.");
        /// Sender: ask a line's dirty owner for it; the entry becomes pending.
        fetch_issue: Task = Task::new(3, 5, 0, 1), Source::Choice(
            "form the request, mark the entry pending (1 store).");
        /// Owner: intervene and send the line to its home.
        fetch_owner: Task = Task::new(3, 6, 0, 0), Source::Choice(
            "as a coherence forward: decode, issue, send.");
        /// Home: the owner's line is in; write it and update the entry.
        fetch_home: Task = Task::new(3, 6, 0, 0), Source::Choice(
            "decode, issue the write, wake the transfer handler.");
        // --------------------------------------- buffers homed at a third node
        /// Sender: ask a send line's home for it.
        pull_issue: Task = Task::new(3, 5, 0, 1), Source::Choice(
            "as fetch_issue: form the request, note the line as asked for \
             (1 store).");
        /// Sender: a pulled line is in: keep its buffer for the handler.
        pull_in: Task = Task::new(2, 4, 0, 1), Source::Choice(
            "note the line's buffer in the stream state (1 store) and wake \
             the transfer handler if it waits for this line.");
        /// Home: decode a pull or a deposit and find the line.
        home_decode: Task = Task::new(3, 6, 1, 0), Source::Choice(
            "as the receiver's verify for a line address instead of a \
             stream position: decode, one load of the request's record. \
             The line's coherence work is then the coherence protocol's own \
             (its directory check and issues), and the memory access and \
             the reply are the receiver's recv_write and send_component.");
        /// Home: a waiting deposit's line to its record in MAGIC's memory,
        /// or back; and so at a receiver for a component that waits for a
        /// second buffer (to merge a part of a line).
        home_record: Task = Task::new(2, 3, 0, 0), Source::Derived(
            "the receiver's recv_write: one memory access issued on a data \
             buffer. A home keeps no data buffer while a request waits for \
             other nodes' answers, which need buffers themselves, nor a \
             receiver while a component waits for a buffer: components \
             holding every buffer while each waits for one more would wait \
             for ever.");
        /// Receiver: send a component on to its line's home.
        deposit_issue: Task = Task::new(2, 4, 0, 0), Source::Choice(
            "re-address the component's header to the line's home and hand \
             its buffer to the outbox.");
        /// Receiver: the home has the bytes: count them in.
        deposit_in: Task = Task::new(3, 5, 1, 1), Source::Choice(
            "load and store the receive's count of lines out, test for \
             completion.");
        /// Sharer: drop a clean copy for the home, acknowledge.
        drop_sharer: Task = Task::new(3, 6, 0, 0), Source::Choice(
            "as fetch_owner: decode, issue the invalidation, send the \
             acknowledgement.");
        /// Home: a sharer's or owner's answer: count it in the line's record.
        drop_ack: Task = Task::new(2, 4, 1, 1), Source::Choice(
            "load, decrement and store the line's count of answers due.");
    }
}

impl TransferCosts {
    /// What the receiver's per-line coherence steps charge (the home of a
    /// third-node buffer does the same work on the receiver's behalf).
    pub fn recv_steps(&self) -> coherence::modes::Steps {
        coherence::modes::Steps {
            directory: self.recv_directory,
            issue: self.recv_issue,
            memory: self.recv_write,
            update: self.recv_update_directory,
            merge: self.recv_merge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One component per invocation: the rows add up to Table 2.
    #[test]
    fn the_optimized_rows_add_up_to_table_2() {
        let c = TransferCosts::default();
        let sum = |ts: &[Task]| {
            ts.iter().fold((0, 0, 0), |a, t| {
                (a.0 + t.instrs, a.1 + t.loads, a.2 + t.stores)
            })
        };
        let common = [
            c.send_init,
            c.send_directory,
            c.send_update_state,
            c.send_reschedule,
        ];
        let clean = [c.send_read, c.send_header_clean, c.send_component];
        let dirty = [
            c.send_get,
            c.send_update_directory,
            c.send_wait_write,
            c.send_header_dirty,
            c.send_prepare_dirty,
            c.send_issue_dirty,
        ];
        let (ci, cl, cs) = sum(&[&common[..], &clean[..]].concat());
        let (di, dl, ds) = sum(&[&common[..], &dirty[..]].concat());
        assert_eq!((ci, cl, cs), (46, 8, 4));
        assert_eq!((di, dl, ds), (56, 10, 5));
    }
}
