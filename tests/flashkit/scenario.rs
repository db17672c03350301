//! Scenario files and sweeps through the program, as users run them.

use crate::common;

use std::process::Command;

fn flashkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashkit"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_shipped_scenarios_run_and_their_outputs_are_reviewed() {
    let mut files: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let rel = format!("examples/{name}.toml");
        let (code, out, err) = flashkit(&["run", &rel]);
        assert_eq!(code, 0, "{rel}: {err}");
        common::insta_settings().bind(|| insta::assert_snapshot!(format!("scenario_{name}"), out));
    }
}

#[test]
fn every_commands_defaults_are_a_shipped_scenario() {
    for (file, cmd) in [
        ("examples/transfer.toml", vec!["transfer"]),
        ("examples/miss.toml", vec!["miss", "--case", "remote-clean"]),
        ("examples/fetch-op.toml", vec!["fetch-op"]),
        ("examples/costs.toml", vec!["costs", "--protocol", "single"]),
        ("examples/logp.toml", vec!["logp", "--platform", "cm5"]),
        (
            "examples/remap.toml",
            vec!["remap", "--technique", "invalidate"],
        ),
        (
            "examples/suite.toml",
            vec!["suite", "--platform", "cm5", "--benchmark", "round-trip"],
        ),
    ] {
        let (c1, a, e1) = flashkit(&["run", file, "--format", "json"]);
        let mut args = cmd.clone();
        args.extend(["--format", "json"]);
        let (c2, b, e2) = flashkit(&args);
        assert_eq!((c1, c2), (0, 0), "{file}: {e1} {e2}");
        assert_eq!(a, b, "{file}");
    }
    // The pipeline command adds its event loop's wall time, which is not
    // the model's; everything else is the scenario's.
    let (_, a, _) = flashkit(&["run", "examples/pipeline.toml", "--format", "json"]);
    let (_, b, _) = flashkit(&["pipeline", "--format", "json"]);
    let mut b: serde_json::Value = serde_json::from_str(&b).unwrap();
    b.as_object_mut().unwrap().remove("wall_s");
    let a: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bad_scenarios_name_the_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("flashkit-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (text, want) in [
        (
            "[transfer]\nbytes = 4096\nchunkz = 3\n",
            ":3: chunkz: unknown field",
        ),
        ("[transfer]\nbytes = \"lots\"\n", ":2: bytes: invalid type"),
        (
            "[transfer]\nsender = \"warm\"\n",
            ":2: sender: unknown variant",
        ),
        (
            "[machine]\ndata_buffers = 0\n[transfer]\n",
            ":2: data_buffers:",
        ),
        ("[transfer]\nchunk = 0\n", ":2: chunk:"),
        (
            "[transfer]\nhandler = \"base\"\nchunk = 8\n",
            ":3: chunk: must be left at 4 unless the handler is chunked, got 8",
        ),
        ("[transfer\n", ":1: invalid table header"),
        ("[machine]\n", "exactly one experiment table"),
        (
            "[miss]\n[messaging_costs]\n",
            "exactly one experiment table",
        ),
        (
            "[costs.transfer]\nrecv_verfy = 3\n[transfer]\n",
            ":2: costs.transfer.recv_verfy: unknown field",
        ),
        ("[costs.routing]\n[transfer]\n", "unknown field `routing`"),
    ] {
        let f = dir.join("bad.toml");
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = flashkit(&["run", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{text}");
        assert!(out.is_empty());
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text}: {err}");
        assert!(err.contains("bad.toml"), "{err}");
    }
}

/// Run `text` as a scenario file and return its exit status and standard
/// error.
fn run_text(name: &str, text: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("flashkit-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    let (code, out, err) = flashkit(&["run", f.to_str().unwrap()]);
    if code != 0 {
        assert!(out.is_empty(), "{text}: {out}");
    }
    let _ = std::fs::remove_file(&f);
    (code, err.replace(&format!("{}/", dir.display()), ""))
}

/// Each input the issue lists, and its kin: one line naming the file, the
/// line, the key the file sets and the range, exit status 2.
#[test]
fn a_refusal_names_the_key_the_file_sets_its_line_and_the_range() {
    for (text, want) in [
        // Values too large for their type (or TOML), or below it: the
        // key's range all the same; and not numbers at all.
        (
            "[transfer]\nbytes = 9223372036854775808\n",
            "s.toml:2: bytes: must be from 1 to 1048576, got 9223372036854775808",
        ),
        (
            "[costs.transfer]\nshift_dword = 18446744073709551616\n[transfer]\n",
            "s.toml:2: costs.transfer.shift_dword: must be from 0 to 1000000, got 18446744073709551616",
        ),
        (
            "[machine]\npp_issue_width = 4294967296\n[transfer]\n",
            "s.toml:2: pp_issue_width: must be from 1 to 16, got 4294967296",
        ),
        (
            "[machine]\nmem_first_dword = 18_446_744_073_709_551_615\n[transfer]\n",
            "s.toml:2: mem_first_dword: must be from 0 to 1000000, got 18_446_744_073_709_551_615",
        ),
        (
            "[transfer]\nbytes = -1\n",
            "s.toml:2: bytes: must be from 1 to 1048576, got -1",
        ),
        // A key whose range is all of its 64 bits: TOML's own end.
        (
            "[network.sp]\nseed = 18446744073709551615\n[suite]\nplatform = \"sp\"\n",
            "s.toml:2: network.sp.seed: a TOML integer is at most 9223372036854775807, got 18446744073709551615",
        ),
        (
            "[machine]\npi_out = 9223372036854775807\n[miss]\n",
            "s.toml:2: pi_out: must be from 0 to 1000000, got 9223372036854775807",
        ),
        (
            "[transfer]\nbytes = nan\n",
            "s.toml:2: bytes: invalid type: floating point `NaN`, expected u64",
        ),
        (
            "[transfer]\nbytes = inf\n",
            "s.toml:2: bytes: invalid type: floating point `inf`, expected u64",
        ),
        (
            "[transfer]\nbytes = -inf\n",
            "s.toml:2: bytes: invalid type: floating point `-inf`, expected u64",
        ),
        // TOML's dates and times, said as written (serde sees a map).
        (
            "[transfer]\nbytes = 1979-05-27\n",
            "s.toml:2: bytes: invalid type: date or time `1979-05-27`, expected u64",
        ),
        (
            "[transfer]\nbytes = 07:32:00\n",
            "s.toml:2: bytes: invalid type: date or time `07:32:00`, expected u64",
        ),
        // Values checked after parsing.
        (
            "[transfer]\nbytes = 0\n",
            "s.toml:2: bytes: must be from 1 to 1048576, got 0",
        ),
        (
            "[costs.transfer]\nsend_init = { cycles = 9, instrs = 10, loads = 4294967295, stores = 0 }\n[transfer]\n",
            "s.toml:2: costs.transfer.send_init.loads: must be from 0 to 1000000, got 4294967295",
        ),
        (
            "[costs.transfer]\nsend_init = { cycles = 1, instrs = 1000, loads = 0, stores = 0 }\n[transfer]\n",
            "s.toml:2: costs.transfer.send_init.instrs: must be at most 2 (issue width 2 x 1 cycles), got 1000",
        ),
        (
            "[costs.transfer.send_init]\ncycles = 9\ninstrs = 10\nloads = 4\nstores = 7\n[transfer]\n",
            "s.toml:5: costs.transfer.send_init.stores: must be at most 6 (10 instructions, 4 of them loads), got 7",
        ),
        (
            "[costs.coherence]\nissue = 4294967295\n[miss]\n",
            "s.toml:2: costs.coherence.issue: must be from 0 to 1000000, got 4294967295",
        ),
        (
            "[costs.user]\nlink = { cycles = 9, instrs = 17, loads = 0, stores = 4294967295 }\n[fetch_op]\n",
            "s.toml:2: costs.user.link.stores: must be from 0 to 1000000, got 4294967295",
        ),
        (
            "[pipeline]\nmsgs = 10\nsetup_cycles = 9223372036854775807\n",
            "s.toml:3: setup_cycles: must be from 1 to 1000000, got 9223372036854775807",
        ),
        // A handler holds the PP at least a cycle: 0 would run as 1.
        (
            "[pipeline]\nmsgs = 10\nrecv_cycles = 0\n",
            "s.toml:3: recv_cycles: must be from 1 to 1000000, got 0",
        ),
        // The workload's machine is its own: of [machine], budget alone.
        (
            "[pipeline]\nmsgs = 10\n[machine]\nbudget = 100000000\nnet_latency = 1000\n",
            "s.toml:5: machine.net_latency: does not apply to [pipeline], whose machine is the workload's own (FLASH's without the inbox and outbox stages); of [machine] it takes budget alone",
        ),
        // A key set that the experiment does not read would change
        // nothing: named, where it would have been dropped.
        (
            "[machine]\npi_out = 9\n[logp]\nplatform = \"cm5\"\n",
            "s.toml:2: machine.pi_out: [logp] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[costs.transfer.send_init]\ncycles = 500\ninstrs = 10\nloads = 4\nstores = 0\n[miss]\n",
            "s.toml:2: costs.transfer.send_init.cycles: [miss] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[costs.cmam]\nrequest = 999\n[logp]\nplatform = \"sp\"\n",
            "s.toml:2: costs.cmam.request: [logp] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        // A key of a sheet the experiment reads that none of its handlers
        // charges.
        (
            "[costs.command]\ncommit = 99\n[transfer]\n",
            "s.toml:2: costs.command.commit: [transfer] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[costs.user]\nfop_apply = 99\n[remap]\n",
            "s.toml:2: costs.user.fop_apply: [remap] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        // Charged only where the experiment never goes: a page change under
        // a transfer, a translation or the OS's change under a fetch-and-add,
        // the OS's change and copy under a remap.
        (
            "[costs.transfer]\nwalk = 99\n[transfer]\n",
            "s.toml:2: costs.transfer.walk: [transfer] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[costs.command]\nos_notice = 99\n[transfer]\n",
            "s.toml:2: costs.command.os_notice: [transfer] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[fetch_op]\n[costs.user]\nlink = { cycles = 30, instrs = 17, loads = 0, stores = 0 }\n",
            "s.toml:3: costs.user.link.cycles: [fetch_op] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[fetch_op]\n[costs.os]\ninterrupt = 99\n",
            "s.toml:3: costs.os.interrupt: [fetch_op] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        (
            "[costs.os]\nchange = 99\n[remap]\n",
            "s.toml:2: costs.os.change: [remap] does not read it here, so its value would change nothing: leave it out (or at its default)",
        ),
        // A list only where a scenario holds one: not a table's fields by
        // their order.
        (
            "[[costs.transfer]]\ncycles = 100\ninstrs = 10\nloads = 4\n[transfer]\n",
            "s.toml:1: costs.transfer: an array of tables ([[costs.transfer]]), where a scenario holds one value or one table",
        ),
        (
            "[costs.transfer]\nsend_init = [100, 10, 4, 0]\n[transfer]\n",
            "s.toml:2: costs.transfer.send_init: a list, where a scenario holds one value or one table",
        ),
        (
            "[costs]\nflush = [2, 99]\n[transfer]\n",
            "s.toml:2: costs.flush: a list, where a scenario holds one value or one table",
        ),
        (
            "[costs.os]\ncontext_switch = 2000000\n[remap]\n",
            "s.toml:2: costs.os.context_switch: must be from 0 to 1000000, got 2000000",
        ),
        // A table the experiment does not use is checked all the same.
        (
            "[costs.cmam]\nrequest = 9223372036854775807\n[transfer]\n",
            "s.toml:2: costs.cmam.request: must be from 0 to 1000000, got 9223372036854775807",
        ),
        (
            "[costs.sp]\nrequest = 1\n\n[costs.cmaml]\nrequest = 1000001\n[miss]\n",
            "s.toml:5: costs.cmaml.request: must be from 0 to 1000000, got 1000001",
        ),
        (
            "[network.cm5]\nseed = 1\n[network.sp]\nseed = 2\ndelay = 99999999999\n[transfer]\n",
            "s.toml:5: network.sp.delay: must be from 0 to 264000000 ticks (10 ms), got 99999999999",
        ),
        (
            "[costs.am]\ndispatch = 1000001\n[transfer]\n",
            "s.toml:2: costs.am.dispatch: must be from 0 to 1000000, got 1000001",
        ),
        // Relations: the key the file sets is the one named.
        (
            "[coherence]\npointer_store = 4\n[sharing]\n",
            "s.toml:2: pointer_store: must be 8192, its default, under the bitvector directory: the store is the dynamic-pointer directory's, got 4",
        ),
        (
            "[machine]\nmem_bytes = 128\n[transfer]\n",
            "s.toml:2: mem_bytes: must be at least 8392704 for the transfer's buffers, got 128",
        ),
        (
            "[machine]\ndata_buffers = 1\n[transfer]\n",
            "s.toml:2: data_buffers: must be at least 4 for the transfer, got 1",
        ),
        (
            "[machine]\ndata_buffers = 6\n[transfer]\nchunk = 8\n",
            "s.toml:4: chunk: must be from 1 to the data-buffer pool, 6, got 8",
        ),
        (
            "[machine]\npp_issue_width = 1\n[transfer]\n",
            "s.toml:2: pp_issue_width: costs.transfer.send_init.instrs must be at most 9 (issue width 1 x 9 cycles), got 10",
        ),
        (
            "[machine]\nmem_bytes = 65536\n[fetch_op]\n",
            "s.toml:2: mem_bytes: must be at least 69632 for the fetch-and-add's pages, got 65536",
        ),
        (
            "[machine]\nmem_bytes = 65536\n[remap]\n",
            "s.toml:2: mem_bytes: must be at least 278528 for the remap's pages, got 65536",
        ),
        (
            "[machine]\nmem_bytes = 128\n[sharing]\n",
            "s.toml:2: mem_bytes: must be at least 16512 for the shared line, got 128",
        ),
        (
            "[machine]\nmem_bytes = 16384\n[miss]\n",
            "s.toml:2: mem_bytes: offset must be inside node memory with its pair line, below 0x4000, got 0x4080",
        ),
        (
            "[machine]\nmem_bytes = 128\n[miss]\n",
            "s.toml:2: mem_bytes: offset must be inside node memory with its pair line: none is, in mem_bytes below 256, got 0x4080",
        ),
        (
            "[machine]\nmem_bytes = 129\n[miss]\n",
            "s.toml:2: mem_bytes: must be a whole number of 128-byte lines, got 129",
        ),
        (
            "[machine]\nnet_latency = 3\n[[miss]]\ncase = \"remote-clean\"\n",
            "s.toml:3: miss: a table, [miss], not an array of tables ([[miss]])",
        ),
        ("miss = 1\n", "s.toml:1: miss: a table, [miss], not a value"),
        // A key no scenario has is unknown, whatever its value.
        (
            "foo = 1\n[miss]\n",
            "s.toml:1: foo: unknown field `foo`, expected one of `machine`, `costs`, `network`, `transfer`, `miss`, `fetch_op`, `messaging_costs`, `logp`, `pipeline`, `remap`, `suite`, `study`, `sharing`, `coherence`",
        ),
        // An item of a list over several lines is named by its list's key.
        (
            "[machine]\r\ninbox_priority = [\r\n  \"net-reply\",\r\n  \"bogus\",\r\n]\r\n[miss]\r\n",
            "s.toml:4: inbox_priority: unknown variant `bogus`, expected one of `net-reply`, `net-request`, `software`, `processor`",
        ),
        // A dotted key inside its own table names a key the table lacks.
        (
            "[transfer]\nbytes = 64\n\ntransfer.chunk = 0\n",
            "s.toml:4: transfer.transfer.chunk: unknown field `transfer`, expected one of `bytes`, `sender`, `receiver`, `handler`, `chunk`, `src_offset`, `dst_offset`, `coherence`, `flush`, `strategy`, `placement`, `direction`, `receives`, `sends`, `receive_first`",
        ),
        // A byte-order mark moves no line.
        (
            "\u{feff}[transfer]\nchunk = 0\n",
            "s.toml:2: chunk: must be from 1 to the data-buffer pool, 16, got 0",
        ),
        // A table or a name given as another kind of value: said in the
        // file's words, with the names it may be.
        (
            "[costs]\ntransfer = 5\n[transfer]\n",
            "s.toml:2: transfer: invalid type: integer `5`, expected a table",
        ),
        (
            "[transfer]\nsender = 3\n",
            "s.toml:2: sender: a name, one of `uncached`, `clean`, `dirty`, `dirty-remote`, not 3",
        ),
        // On its own line, below a table it is not in.
        (
            "# a scenario\n\nbar = \"x\"\n[miss]\ncase = \"remote-clean\"\n",
            "s.toml:3: bar: unknown field `bar`, expected one of `machine`, `costs`, `network`, `transfer`, `miss`, `fetch_op`, `messaging_costs`, `logp`, `pipeline`, `remap`, `suite`, `study`, `sharing`, `coherence`",
        ),
        // A span that starts a line is on that line.
        (
            "[miss]\ncase = \"remote-clean\"\n[miss]\ncase = \"local-clean\"\n",
            "s.toml:3: invalid table header; duplicate key `miss` in document root",
        ),
        (
            "[transfer]\nbytes = 4096\nbytes = 5\n",
            "s.toml:3: bytes: duplicate key `bytes` in table `transfer`",
        ),
        (
            "[machine]\nmem_bytes = 65536\n[logp]\nplatform = \"flash\"\n",
            "s.toml:2: mem_bytes: must be at least 4718592 for the stores' lines, got 65536",
        ),
        (
            "[miss]\ncase = \"remote-dirty\"\nowner = 99\n",
            "s.toml:3: owner: must be a node of the machine, below 3, got 99",
        ),
        (
            "[miss]\nowner = 99\n",
            "s.toml:2: owner: must be 2, its default: only remote-dirty has an owner, got 99",
        ),
        (
            "[suite]\nplatform = \"sp\"\nnodes = 513\n",
            "s.toml:3: nodes: must be from 3 to 512, got 513",
        ),
        // One benchmark's least nodes, not the whole suite's.
        (
            "[suite]\nplatform = \"sp\"\nbenchmark = \"ring\"\nnodes = 1\n",
            "s.toml:4: nodes: must be from 2 to 512, got 1",
        ),
        // A task's own table sets some of its parts: each error at its part,
        // or, for a relation, at the part the file sets.
        (
            "[costs.transfer.send_init]\nloads = 4294967295\n[transfer]\n",
            "s.toml:2: costs.transfer.send_init.loads: must be from 0 to 1000000, got 4294967295",
        ),
        (
            "[costs.transfer.send_init]\ninstrs = 1\n[transfer]\n",
            "s.toml:2: costs.transfer.send_init.instrs: costs.transfer.send_init.loads must be at most 1 (the task's instructions), got 4",
        ),
        (
            "[costs.user.link]\ncycles = 1\n[remap]\n",
            "s.toml:2: costs.user.link.cycles: costs.user.link.instrs must be at most 2 (issue width 2 x 1 cycles), got 17",
        ),
        // CMAML's table read over CMAML's costs, a wrong value at its key.
        (
            "[logp]\nplatform = \"cm5-cmaml\"\nnodes = 4\n[costs.cmaml]\ndispatch = nan\n",
            "s.toml:5: costs.cmaml.dispatch: invalid type: floating point `NaN`, expected u64",
        ),
        (
            "[costs.cmaml]\nboth_networks = 2\n[miss]\n",
            "s.toml:2: costs.cmaml.both_networks: invalid type: integer `2`, expected a boolean",
        ),
        (
            "[costs.cmaml]\nbogus = 2\n[miss]\n",
            "s.toml:2: costs.cmaml.bogus: unknown field `bogus`, expected one of `request`, `reply`, `poll`, `poll_found`, `dispatch`, `segment`, `interrupt`, `interrupt_fast`, `xfer_call`, `xfer_stack_args`, `xfer_send`, `xfer_recv`, `segment_switch`, `shift_word`, `xfer_check`, `xfer_select`, `xfer_address`, `xfer_prime_shift`, `xfer_prime_double`, `xfer_record`, `xfer_end`, `xfer_ack`, `both_networks`",
        ),
        // The experiment's key, as the file spells it.
        (
            "[fetch_op]\nremote_node = 4294967295\n",
            "s.toml:2: remote_node: must be from 0 to 4095, got 4294967295",
        ),
        // Relations between machine keys, and an experiment's: the key set.
        (
            "[machine]\npc_first_word = 1000000\n[transfer]\n",
            "s.toml:2: pc_first_word: pc_line must be from pc_first_word (1000000) to 1000000, got 43",
        ),
        (
            "[machine]\npc_state = 1000000\n[transfer]\n",
            "s.toml:2: pc_state: pc_first_word must be from pc_state (1000000) to 1000000, got 28",
        ),
        (
            "[sharing]\nreaders = 1\n",
            "s.toml:2: readers: evicting must be from 0 to 1, got 3",
        ),
        // A count that pays for a store of MAGIC memory starts at it.
        (
            "[costs.command]\nwrite = 0\n[transfer]\n",
            "s.toml:2: costs.command.write: must be from 1 to 1000000 (its store into the record is one of its instructions), got 0",
        ),
        (
            "[costs.user]\nreceive = 0\n[fetch_op]\n",
            "s.toml:2: costs.user.receive: must be from 1 to 1000000 (its load of the group table, or store of the record, is one of its instructions), got 0",
        ),
        (
            "[costs.coherence]\nrecord = 1\n[miss]\n",
            "s.toml:2: costs.coherence.record: must be from 2 to 1000000 (the record's load and store are among its instructions), got 1",
        ),
        // The runs' budgets.
        (
            "[machine]\nbudget = 0\n[transfer]\n",
            "s.toml:2: budget: must be from 1 to 1000000000000, got 0",
        ),
        (
            "[network.sp]\nevent_budget = 0\n[transfer]\n",
            "s.toml:2: network.sp.event_budget: must be from 1 to 100000000, got 0",
        ),
        (
            "[network.cm5]\nbudget = 264000000000001\n[transfer]\n",
            "s.toml:2: network.cm5.budget: must be from 1 to 264000000000000 ticks (10 000 s), got 264000000000001",
        ),
        // A benchmark that does not exist is named before the nodes its
        // least would have said.
        (
            "[suite]\nplatform = \"cm5\"\nnodes = 100000\nbenchmark = \"foo\"\n",
            "s.toml:4: benchmark: must be one of one-to-one, one-to-two, two-to-one, round-trip, ring, poll, traverse, array-transfer, two-to-one-segments, swap, bandwidth, operations, got foo",
        ),
    ] {
        let (code, err) = run_text("s.toml", text);
        assert_eq!(code, 2, "{text}: {err}");
        assert_eq!(err, format!("error: {want}\n"), "{text}");
    }
    // The same machine serves what the default sheets ask of it.
    let (code, err) = run_text("s.toml", "[machine]\npp_issue_width = 1\n[miss]\n");
    assert_eq!(code, 0, "{err}");
}

/// A sweep checks every point before it runs one: a point the experiment
/// cannot run is refused up front, named.
#[test]
fn a_plan_refuses_an_impossible_point_before_running_any() {
    use flashkit::scenario::Source;
    use flashkit::sweep::{Axis, Plan, SweepError};
    let src = Source {
        path: "t.toml",
        text: "[transfer]\nbytes = 4096\n",
    };
    let axes = [Axis::parse("transfer.bytes=4096,0").unwrap()];
    let e = Plan::new(&src, &axes).unwrap_err();
    let SweepError::Point { index, error, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(*index, 1, "{e}");
    assert_eq!(error.key.as_deref(), Some("transfer.bytes"), "{e}");
    assert_eq!(error.message, "must be from 1 to 1048576, got 0", "{e}");
    // What a point's machine or mode could not run is found by the plan
    // too, naming its key, not by the run after earlier rows were written.
    for (text, axis, key, message) in [
        (
            "[study]\nmode = \"local\"\n",
            "study.placement=home,third",
            "study.placement",
            "placement = \"third\" cannot go with mode = \"local\"",
        ),
        (
            "[suite]\nplatform = \"cm5\"\nbenchmark = \"ring\"\n",
            "suite.nodes=2,1",
            "suite.nodes",
            "must be from 2 to 1024, got 1",
        ),
        (
            "[suite]\nplatform = \"flash\"\n",
            "suite.nodes=3,2",
            "suite.nodes",
            "must be from 3 to 4096, got 2",
        ),
        (
            "[miss]\n",
            "machine.data_buffers=2,1",
            "machine.data_buffers",
            "must be at least 2 for the coherence protocol, got 1",
        ),
        (
            "[sharing]\n",
            "machine.data_buffers=2,1",
            "machine.data_buffers",
            "must be at least 2 for the coherence protocol, got 1",
        ),
        (
            "[logp]\nplatform = \"cm5\"\n",
            "logp.nodes=3,2",
            "logp.nodes",
            "must be from 3 to 1024, got 2",
        ),
    ] {
        let src = Source {
            path: "s.toml",
            text,
        };
        let axes = [Axis::parse(axis).unwrap()];
        let e = Plan::new(&src, &axes).unwrap_err();
        let SweepError::Point { index, error, .. } = &e else {
            panic!("{text}: {e}")
        };
        assert_eq!(*index, 1, "{text}: {e}");
        assert_eq!(error.key.as_deref(), Some(key), "{text}: {e}");
        assert!(error.message.starts_with(message), "{text}: {e}");
    }
}

fn sweep(extra: &[&str]) -> String {
    let (code, out, err) = sweep_ended(extra);
    assert_eq!(code, 0, "{err}");
    out
}

/// [`sweep`] as it ended: status, standard output and error.
fn sweep_ended(extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2,3,4,5,6,7,8",
        "--vary",
        "transfer.sender=uncached,clean,dirty",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    flashkit(&args)
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flashkit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_sweep_is_the_same_on_any_number_of_threads_and_in_shards() {
    let one = sweep(&["--threads", "1"]);
    let two = sweep(&["--threads", "2"]);
    assert_eq!(one, two);
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 1 + 24, "a header and 8 x 3 points");
    // Machine and cost entries are columns only where a point changes them.
    assert!(lines[0].starts_with("point,transfer."), "{}", lines[0]);
    for col in [
        "transfer.chunk",
        "transfer.sender",
        "result.total_cycles",
        "result.limited_by",
    ] {
        assert!(lines[0].split(',').any(|c| c == col), "{col}");
    }
    // The result's counts are columns and its figures exact (the rate is
    // the landing span over the spaces between the lines); the
    // configuration and version a result carries are not columns: the
    // parameters are the row's own.
    let head: Vec<&str> = lines[0].split(',').collect();
    assert!(
        !head
            .iter()
            .any(|c| c.starts_with("result.config") || *c == "result.version"),
        "{}",
        lines[0]
    );
    let at = |col: &str| head.iter().position(|c| *c == col).expect(col);
    for row in &lines[1..] {
        let cells: Vec<&str> = row.split(',').collect();
        let n = |col: &str| cells[at(col)].parse::<u64>().expect(col) as f64;
        let rate: f64 = cells[at("result.per_line_cycles")].parse().unwrap();
        assert_eq!(
            rate,
            n("result.landing_cycles") / (n("result.lines") - 1.0),
            "{row}"
        );
    }
    // Shards write parts; merged, in any order, they are the whole sweep.
    let dir = scratch("shards");
    let mut parts = Vec::new();
    for i in [2, 0, 1] {
        let f = dir.join(format!("part-{i}.csv"));
        let s = format!("{i}/3");
        let out = sweep(&["--shard", &s, "--out", path(&f)]);
        assert!(out.is_empty(), "{out}");
        parts.push(f);
    }
    let part0 = std::fs::read_to_string(&parts[1]).unwrap();
    assert!(
        part0.starts_with("# flashkit-sweep digest=") && part0.contains(" points=24 shard=0/3 "),
        "{part0}"
    );
    let table = dir.join("all.csv");
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(|p| path(p)));
    args.extend(["-o", path(&table)]);
    let (code, out, err) = flashkit(&args);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    assert_eq!(std::fs::read_to_string(&table).unwrap(), one);
    // --shard without --out writes the same part to standard output.
    assert_eq!(sweep(&["--shard", "0/3"]), part0);
    // JSON: parts are JSON Lines; the merge writes the unsharded array.
    let whole = sweep(&["--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(rows.as_array().map(|a| a.len()), Some(24));
    assert_eq!(rows[23]["point"], "23");
    let mut args = vec!["merge".to_string()];
    for i in 0..2 {
        let f = dir.join(format!("part-{i}.jsonl"));
        let s = format!("{i}/2");
        sweep(&["--format", "json", "--shard", &s, "--out", path(&f)]);
        let text = std::fs::read_to_string(&f).unwrap();
        for row in text.lines().skip(1) {
            let v: serde_json::Value = serde_json::from_str(row).unwrap();
            assert!(v.is_object(), "{row}");
        }
        args.push(path(&f).to_string());
    }
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let (code, merged, err) = flashkit(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(merged, whole);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Write the parts of `sweep()` over `n` shards into `dir`.
fn parts(dir: &std::path::Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let f = dir.join(format!("part-{i}.csv"));
            sweep(&["--shard", &format!("{i}/{n}"), "--out", path(&f)]);
            path(&f).to_string()
        })
        .collect()
}

/// A resumed part keeps only rows of this sweep: one whose parameters
/// are not its point's, or a header that is not the sweep's columns, is
/// refused even when no point is left to run (where nothing else would
/// look at it), in each format.
#[test]
fn a_resumed_part_keeps_only_this_sweeps_rows() {
    let dir = scratch("resume-foreign");
    for format in ["csv", "json", "jsonl"] {
        let part = dir.join(format!("p.{format}"));
        let args = ["--shard", "0/2", "--out", path(&part), "--format", format];
        sweep(&args);
        let whole = std::fs::read_to_string(&part).unwrap();
        let resume = |text: &str| {
            std::fs::write(&part, text).unwrap();
            let mut a = args.to_vec();
            a.push("--resume");
            sweep_ended(&a)
        };
        // Whole, or cut after a row: resumed to the same part.
        assert_eq!(resume(&whole).0, 0);
        let cut: String = whole.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(resume(&cut).0, 0);
        assert_eq!(std::fs::read_to_string(&part).unwrap(), whole);
        // A kept row's sender edited: no point of this sweep has it (a
        // record's scenario is compared whole, its sender a valid one).
        let (at, to, said) = if format == "jsonl" {
            (
                "\"sender\":\"uncached\"",
                "\"sender\":\"dirty\"",
                "another scenario than this sweep's point 0",
            )
        } else {
            ("uncached", "xuncached", "where this sweep's point 0 has")
        };
        let edited = whole.replacen(at, to, 1);
        assert_ne!(edited, whole, "{format}");
        let (code, _, err) = resume(&edited);
        assert_eq!(code, 2, "{format}: {err}");
        assert!(err.contains(said), "{format}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A CSV part whose header names another column.
    let part = dir.join("p.csv");
    let whole = sweep(&["--shard", "0/2", "--out", path(&part)]);
    assert!(whole.is_empty());
    let text = std::fs::read_to_string(&part).unwrap();
    std::fs::write(&part, text.replacen("transfer.chunk", "transfer.chunks", 1)).unwrap();
    let (code, _, err) = sweep_ended(&["--shard", "0/2", "--out", path(&part), "--resume"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("its header is not this sweep's columns"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JSON Lines record edited into one no run wrote is refused by a
/// resume and by a merge: a figure its counts do not give, a machine
/// parameter of its scenario that is not its point's (a resume knows the
/// sweep's points; a merge, which has only the parts, does not).
#[test]
fn an_edited_record_is_refused_by_a_resume_and_a_merge() {
    let dir = scratch("record-edited");
    let part = |i: usize| dir.join(format!("p{i}.jsonl"));
    let args = |i: usize| {
        let p = part(i);
        let s = format!("{i}/2");
        let v: Vec<String> = ["--shard", &s, "--out", path(&p), "--format", "jsonl"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v
    };
    for i in 0..2 {
        let a = args(i);
        sweep(&a.iter().map(|x| x.as_str()).collect::<Vec<_>>());
    }
    let whole = std::fs::read_to_string(part(0)).unwrap();
    let merged = dir.join("all.jsonl");
    let parts = [path(&part(0)).to_string(), path(&part(1)).to_string()];
    assert_eq!(merge(&parts, &merged).0, 0);
    let edits = [
        // A figure: the bandwidth its bytes and cycles do not give.
        (
            "\"bandwidth_mb_s\":",
            "\"bandwidth_mb_s\":1",
            "does not read back",
            true,
        ),
        // A machine parameter no column of the row shows.
        (
            "\"net_latency\":22",
            "\"net_latency\":99",
            "another scenario",
            false,
        ),
    ];
    for (at, to, said, by_merge) in edits {
        let first = whole.lines().nth(1).unwrap();
        let i = first.find(at).unwrap_or_else(|| panic!("{at} in {first}"));
        let end = first[i + at.len()..]
            .find([',', '}'])
            .map_or(first.len(), |e| i + at.len() + e);
        let row = format!("{}{to}{}", &first[..i], &first[end..]);
        let edited = whole.replacen(first, &row, 1);
        assert_ne!(edited, whole);
        std::fs::write(part(0), &edited).unwrap();
        let (code, err) = merge(&parts, &merged);
        if by_merge {
            assert_eq!(code, 2, "{err}");
            assert!(err.contains(said), "{err}");
        } else {
            assert_eq!(code, 0, "{err}");
        }
        let mut a = args(0);
        a.push("--resume".into());
        let (code, _, err) = sweep_ended(&a.iter().map(|x| x.as_str()).collect::<Vec<_>>());
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(said), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        std::fs::write(part(0), &whole).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `flashkit merge PARTS -o OUT`: its status and error line; OUT must not
/// exist unless the merge succeeded.
fn merge(parts: &[String], out: &std::path::Path) -> (i32, String) {
    let _ = std::fs::remove_file(out);
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(|s| s.as_str()));
    args.extend(["-o", path(out)]);
    let (code, stdout, err) = flashkit(&args);
    assert!(stdout.is_empty(), "{stdout}");
    if code != 0 {
        assert!(!out.exists(), "a failed merge wrote {}", out.display());
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("error: "), "{err}");
    }
    (code, err)
}

#[test]
fn the_merge_refuses_missing_duplicated_and_foreign_points() {
    let dir = scratch("merge");
    let all = parts(&dir, 4);
    let out = dir.join("all.csv");
    assert_eq!(merge(&all, &out), (0, String::new()));
    let whole = std::fs::read_to_string(&out).unwrap();
    // 24 points over 4 shards: shard 1 holds points 1, 5, 9, 13, 17, 21.
    let keep = std::fs::read_to_string(&all[1]).unwrap();
    // Emptied (a task that never started to write), or /dev/null given as
    // a part beside a complete set: not a part, named.
    let refused = |path: &str| {
        format!(
            "error: {path}: empty, not a sweep part (a part begins with `# flashkit-sweep ...`): run its shard again, or leave it out\n"
        )
    };
    std::fs::write(&all[1], "").unwrap();
    assert_eq!(merge(&all, &out), (2, refused(&all[1])));
    std::fs::write(&all[1], &keep).unwrap();
    let with_null = [all.clone(), vec!["/dev/null".to_string()]].concat();
    assert_eq!(merge(&with_null, &out), (2, refused("/dev/null")));
    // The table written over one of its parts.
    let mut over = vec!["merge"];
    over.extend(all.iter().map(|s| s.as_str()));
    over.extend(["-o", &all[2]]);
    let (code, _, err) = flashkit(&over);
    assert_eq!(
        (code, err),
        (
            2,
            format!(
                "error: -o {} is the part {}: write the table to another file\n",
                all[2], all[2]
            )
        )
    );
    assert!(std::fs::read_to_string(&all[2])
        .unwrap()
        .starts_with("# flashkit-sweep "));
    // Removed.
    let three: Vec<String> = [0, 2, 3].iter().map(|&i| all[i].clone()).collect();
    let (code, err) = merge(&three, &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("points 1, 5, 9, 13, 17, 21 missing: shard 1/4 produced nothing"),
        "{err}"
    );
    // Cut after its second row (a task killed between rows).
    let cut: String = keep.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&all[1], &cut).unwrap();
    let (code, err) = merge(&all, &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("points 9, 13, 17, 21 missing: shard 1/4 stopped after point 5"),
        "{err}"
    );
    // Torn in the middle of a row.
    std::fs::write(&all[1], &keep[..keep.len() - 10]).unwrap();
    let (code, err) = merge(&all, &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("part-1.csv: its last line is cut short"),
        "{err}"
    );
    // A blank line after its rows (an editor's): said as what it is, not
    // as a row of another shard.
    std::fs::write(&all[1], format!("{keep}\n")).unwrap();
    let (code, err) = merge(&all, &out);
    assert_eq!(code, 2);
    let rows = keep.lines().count() - 2;
    assert!(
        err.contains(&format!(
            "part-1.csv: row {} is an empty line, which a sweep never writes: remove it",
            rows + 1
        )),
        "{err}"
    );
    // A part is not a scenario to run.
    let (code, out_text, err) = flashkit(&["run", &all[1]]);
    assert_eq!((code, out_text.as_str()), (2, ""), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {}: a sharded sweep's part (its first line is the `# flashkit-sweep` mark), \
             not a scenario or a saved result",
            all[1]
        )),
        "{err}"
    );
    std::fs::write(&all[1], &keep).unwrap();
    // Duplicated.
    let copy = dir.join("copy.csv");
    std::fs::copy(&all[2], &copy).unwrap();
    let mut dup = all.clone();
    dup.push(path(&copy).to_string());
    let (code, err) = merge(&dup, &out);
    assert_eq!(code, 2);
    assert!(
        err.contains("points 2, 6, 10, 14, 18, 22 appear twice: in ")
            && err.contains("part-2.csv and ")
            && err.contains("copy.csv"),
        "{err}"
    );
    // One file named twice, as itself or through a link: a slip of the
    // command line, said as one.
    let mut again = all.clone();
    again.push(all[3].clone());
    assert_eq!(
        merge(&again, &out),
        (
            2,
            format!("error: {} is given twice: name each part once\n", all[3])
        )
    );
    let link = dir.join("link.csv");
    std::os::unix::fs::symlink(&all[0], &link).unwrap();
    let mut linked = all.clone();
    linked.push(path(&link).to_string());
    assert_eq!(
        merge(&linked, &out),
        (
            2,
            format!(
                "error: {} and {} are one file: name each part once\n",
                path(&link),
                all[0]
            )
        )
    );
    // One point twice is said in the singular.
    let one = dir.join("one.csv");
    let text = std::fs::read_to_string(&all[2]).unwrap();
    let first: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(&one, first.join("\n") + "\n").unwrap();
    let mut dup = all.clone();
    dup.push(path(&one).to_string());
    let (code, err) = merge(&dup, &out);
    assert_eq!(code, 2);
    assert!(err.contains("point 2 appears twice: in "), "{err}");
    // A part of another shard count, of another sweep, not a part at all.
    let other = dir.join("other.csv");
    sweep(&["--shard", "0/3", "--out", path(&other)]);
    let mut mixed = all[1..].to_vec();
    mixed.push(path(&other).to_string());
    let (code, err) = merge(&mixed, &out);
    assert_eq!(code, 2);
    assert!(err.contains("not one sharding of the sweep"), "{err}");
    let (code, _, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2,3,4,5,6,7,8",
        "--vary",
        "transfer.sender=uncached,clean",
        "--shard",
        "0/4",
        "--quiet",
        "--out",
        path(&other),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = merge(&mixed, &out);
    assert_eq!(code, 2);
    assert!(err.contains("is a part of another sweep"), "{err}");
    let table = dir.join("table.csv");
    std::fs::write(&table, &whole).unwrap();
    let mut with_table = all.clone();
    with_table.push(path(&table).to_string());
    let (code, err) = merge(&with_table, &out);
    assert_eq!(code, 2);
    assert!(err.contains("table.csv: not a sweep part"), "{err}");
    let mut unreadable = all.clone();
    unreadable.push(path(&dir.join("nowhere.csv")).to_string());
    let (code, err) = merge(&unreadable, &out);
    assert_eq!(code, 2);
    assert!(err.contains("nowhere.csv"), "{err}");
    // Everything back: the merge succeeds again, the same table.
    assert_eq!(merge(&all, &out), (0, String::new()));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), whole);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A part whose first line claims more points or shards than a sweep
/// can have, whose header is gone or replaced, or whose row lost cells, is
/// refused in one line, at once (a huge count was once room made for
/// every point, or a loop over every shard); `--resume` refuses the row
/// too, and `--shard` a shard count no sweep needs.
#[test]
fn a_doctored_part_is_refused_at_once() {
    let dir = scratch("doctored");
    let all = parts(&dir, 2);
    let out = dir.join("all.csv");
    let keep = std::fs::read_to_string(&all[0]).unwrap();
    let (mark, rest) = keep.split_once('\n').unwrap();
    let (header, rows) = rest.split_once('\n').unwrap();
    let first_row = rows.lines().next().unwrap();
    let refuse = |text: String, says: &str| {
        std::fs::write(&all[0], text).unwrap();
        let (code, err) = merge(&all, &out);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{says}: {err}");
    };
    let not_a_mark = "its first line is not one a sweep writes";
    for (from, to) in [
        ("points=24 ", "points=18446744073709551615 "),
        ("points=24 ", "points=4000000000 "),
        ("shard=0/2 ", "shard=0/18446744073709551615 "),
        // No sweep is of no points, and its digest is a SHA-256.
        ("points=24 ", "points=0 "),
    ] {
        assert!(mark.contains(from), "{mark}");
        refuse(format!("{}\n{rest}", mark.replace(from, to)), not_a_mark);
    }
    let digest = &mark[..mark.find(" points").unwrap()];
    let short = mark.replacen(digest, "# flashkit-sweep digest=x", 1);
    refuse(format!("{short}\n{rest}"), not_a_mark);
    // Through a tool that ends lines in CR LF: refused, by a merge and by
    // a resume alike (which would cut it at its lines' LF-counted lengths).
    let crlf = "its lines end in CR LF";
    refuse(keep.replace('\n', "\r\n"), crlf);
    refuse(
        format!("{mark}\n{rows}"),
        "its second line is not a sweep's CSV header",
    );
    refuse(format!("{mark}\npoint,foo\n{rows}"), "row 1 has ");
    let cut: Vec<&str> = first_row.split(',').take(5).collect();
    let short = rows.replacen(first_row, &cut.join(","), 1);
    refuse(
        format!("{mark}\n{header}\n{short}"),
        "row 1 has 5 cells where its header has",
    );
    // A figure no run gives.
    let (head, last) = first_row.rsplit_once(',').unwrap();
    assert!(last.parse::<f64>().is_ok(), "{first_row}");
    for nan in ["NaN", "inf", "-inf"] {
        let doctored = rows.replacen(first_row, &format!("{head},{nan}"), 1);
        refuse(
            format!("{mark}\n{header}\n{doctored}"),
            "row 1 holds a cell that is not a figure",
        );
    }
    // --resume keeps no such row, and no part in CR LF lines (left as it is).
    let resume = |text: String, says: &str| {
        std::fs::write(&all[0], &text).unwrap();
        let (code, _, err) = sweep_ended(&["--shard", "0/2", "--out", &all[0], "--resume"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
        assert_eq!(std::fs::read_to_string(&all[0]).unwrap(), text);
    };
    resume(format!("{mark}\n{header}\n{short}"), "row 1 has 5 cells");
    let begun: Vec<&str> = keep.lines().take(3).collect();
    resume(format!("{}\r\n", begun.join("\r\n")), crlf);
    resume(keep.replace('\n', "\r\n"), crlf);
    let (code, _, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2",
        "--shard",
        "0/2000000",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("0 <= i < n <= 1048576"), "{err}");
    std::fs::write(&all[0], &keep).unwrap();
    assert_eq!(merge(&all, &out), (0, String::new()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JSON part's rows are a sweep's: objects of text cells under the same
/// keys in every row and part; a JSON Lines record is point, version,
/// config and result.
#[test]
fn a_doctored_json_part_is_refused() {
    let dir = scratch("doctored-json");
    for format in ["json", "jsonl"] {
        let mut all = Vec::new();
        for i in 0..2 {
            let f = dir.join(format!("p{i}.{format}"));
            let (code, _, err) = flashkit(&[
                "sweep",
                "examples/miss.toml",
                "--vary",
                "miss.nodes=3,4,5,6",
                "--format",
                format,
                "--shard",
                &format!("{i}/2"),
                "--out",
                path(&f),
            ]);
            assert_eq!(code, 0, "{err}");
            all.push(path(&f).to_string());
        }
        let out = dir.join(format!("all.{format}"));
        assert_eq!(merge(&all, &out), (0, String::new()));
        let keep = std::fs::read_to_string(&all[1]).unwrap();
        let (mark, rows) = keep.split_once('\n').unwrap();
        let row: serde_json::Value = serde_json::from_str(rows.lines().next().unwrap()).unwrap();
        type Edit = fn(&mut serde_json::Map<String, serde_json::Value>);
        let edits: Vec<(&str, Edit)> = if format == "json" {
            vec![
                ("a key fewer", |o| {
                    o.remove("result.latency_cycles");
                }),
                ("a key more", |o| {
                    o.insert("zzz".into(), "1".into());
                }),
                ("a cell not text", |o| {
                    o.insert(
                        "result.latency_cycles".into(),
                        serde_json::json!({"a": [1]}),
                    );
                }),
                ("a NaN", |o| {
                    o.insert("result.latency_cycles".into(), "NaN".into());
                }),
            ]
        } else {
            vec![
                ("no result", |o| {
                    o.remove("result");
                }),
                ("a result not an object", |o| {
                    o.insert("result".into(), 1.into());
                }),
            ]
        };
        for (what, edit) in edits {
            let mut v = row.clone();
            edit(v.as_object_mut().unwrap());
            let mut lines: Vec<String> = rows.lines().map(str::to_string).collect();
            lines[0] = serde_json::to_string(&v).unwrap();
            std::fs::write(&all[1], format!("{mark}\n{}\n", lines.join("\n"))).unwrap();
            let (code, err) = merge(&all, &out);
            assert_eq!(code, 2, "{format}, {what}: {err}");
            assert!(
                err.contains("not a row a sweep wrote") || err.contains("different columns"),
                "{format}, {what}: {err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_shard_without_points_writes_a_part_that_says_so() {
    let dir = scratch("noshard");
    let mut all = Vec::new();
    for i in 0..3 {
        let f = dir.join(format!("p{i}.csv"));
        let (code, out, err) = flashkit(&[
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "transfer.chunk=1,2",
            "--shard",
            &format!("{i}/3"),
            "--out",
            path(&f),
        ]);
        assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
        all.push(path(&f).to_string());
    }
    let empty = std::fs::read_to_string(&all[2]).unwrap();
    assert!(
        empty.ends_with(" points=2 shard=2/3 format=csv\n"),
        "{empty}"
    );
    assert_eq!(empty.lines().count(), 1, "{empty}");
    let out = dir.join("all.csv");
    assert_eq!(merge(&all, &out), (0, String::new()));
    let (_, whole, _) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.chunk=1,2",
    ]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), whole);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep of the pipeline workload (16 nodes, 200 messages) over `points`
/// setup costs: some 0.2 s a point in a debug build.
fn pipeline_sweep(points: usize, out: &std::path::Path) -> Command {
    let costs: Vec<String> = (20..20 + points).map(|c| c.to_string()).collect();
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashkit"));
    c.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "sweep",
        "examples/pipeline.toml",
        "--vary",
        "pipeline.nodes=16",
        "--vary",
        "pipeline.msgs=200",
        "--vary",
        &format!("pipeline.setup_cycles={}", costs.join(",")),
        "--quiet",
        "--out",
        path(out),
    ]);
    c
}

/// A shard of a sweep slow enough to kill mid-run (20 points, one thread).
fn slow_shard(out: &std::path::Path, resume: bool) -> Command {
    let mut c = pipeline_sweep(40, out);
    c.args(["--shard", "1/2", "--threads", "1"]);
    if resume {
        c.arg("--resume");
    }
    c
}

#[test]
fn a_killed_sweep_keeps_its_finished_rows_and_resume_completes_it() {
    let dir = scratch("kill");
    // Two runs of one shard write identical parts.
    let (a, b) = (dir.join("a.csv"), dir.join("b.csv"));
    for f in [&a, &b] {
        assert!(slow_shard(f, false).status().unwrap().success());
    }
    let fresh = std::fs::read(&a).unwrap();
    assert_eq!(fresh, std::fs::read(&b).unwrap());
    let rows = |t: &str| t.lines().count().saturating_sub(2);
    assert_eq!(rows(std::str::from_utf8(&fresh).unwrap()), 20);
    // Killed once its part holds a row: what it holds is the fresh part's
    // beginning, whole lines.
    let k = dir.join("k.csv");
    let mut child = slow_shard(&k, false).spawn().unwrap();
    let t0 = std::time::Instant::now();
    while rows(&std::fs::read_to_string(&k).unwrap_or_default()) < 1 {
        assert!(t0.elapsed().as_secs() < 60, "no row in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed before it finished");
    let kept = std::fs::read(&k).unwrap();
    let n = rows(std::str::from_utf8(&kept).unwrap());
    assert!((1..20).contains(&n), "{n} rows");
    assert!(kept.ends_with(b"\n"));
    assert_eq!(&fresh[..kept.len()], &kept[..]);
    // A merge of the killed part names what it lacks.
    let (code, err) = merge(&[path(&k).to_string()], &dir.join("m.csv"));
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("shard 1/2 stopped after point {}", 2 * n - 1)),
        "{err}"
    );
    // The part left as `left`, resumed: the fresh run's, byte for byte.
    let resumed_from = |left: &[u8]| {
        std::fs::write(&k, left).unwrap();
        let out = slow_shard(&k, true).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&k).unwrap(), fresh);
    };
    // A torn last line, as a kill in mid-write leaves; --resume drops it
    // and runs the rest.
    let mut torn = kept.clone();
    torn.extend_from_slice(b"41,16,200,16");
    resumed_from(&torn);
    // Cut short in its mark, the first line (a kill as the task began):
    // nothing was written, and --resume starts afresh.
    let mark_len = fresh.iter().position(|&b| b == b'\n').unwrap();
    resumed_from(&fresh[..mark_len / 2]);
    // Resuming a complete part runs nothing and changes nothing.
    let t0 = std::time::Instant::now();
    assert!(slow_shard(&k, true).status().unwrap().success());
    assert!(t0.elapsed().as_secs_f64() < 1.0);
    assert_eq!(std::fs::read(&k).unwrap(), fresh);
    // A part of another sweep is not resumed over.
    let other = dir.join("other.csv");
    sweep(&["--shard", "1/2", "--out", path(&other)]);
    let before = std::fs::read(&other).unwrap();
    let out = slow_shard(&other, true).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a part of another sweep"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The most threads the process had at once while running a sweep with
/// `SLURM_CPUS_PER_TASK` set to `cpus`, seen in /proc: distinct thread ids,
/// since a listing read while a thread exits may name another twice.
fn threads_seen(cpus: &str) -> usize {
    let out = std::env::temp_dir().join(format!("flashkit-threads-{}-{cpus}", std::process::id()));
    let mut c = pipeline_sweep(8, &out);
    c.env("SLURM_CPUS_PER_TASK", cpus);
    let mut child = c.spawn().unwrap();
    let tasks = format!("/proc/{}/task", child.id());
    // Threads alive at once: a thread counts once it is seen in three
    // samples in a row (a few milliseconds; a worker lives the whole run),
    // so a worker of the plan's check, joined but still being torn down
    // while the run's own starts, is not counted as a third.
    let mut seen: Vec<std::collections::BTreeSet<std::ffi::OsString>> = Vec::new();
    let mut most = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(d) = std::fs::read_dir(&tasks) {
            seen.push(d.flatten().map(|e| e.file_name()).collect());
            if seen.len() > 3 {
                seen.remove(0);
            }
            if seen.len() == 3 {
                let steady = seen[0]
                    .iter()
                    .filter(|t| seen[1].contains(*t) && seen[2].contains(*t))
                    .count();
                most = most.max(steady);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_file(&out);
    most
}

#[test]
fn threads_follow_slurm_cpus_per_task() {
    if !std::path::Path::new("/proc/self/task").exists() {
        eprintln!("skipped: no /proc to count threads in");
        return;
    }
    // The main thread is a worker and the writer: one worker starts no
    // thread.
    assert_eq!(threads_seen("1"), 1, "SLURM_CPUS_PER_TASK=1: one worker");
    // The control: where the process may use two CPUs, two workers (the
    // points are slow enough for the second to start).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        assert_eq!(threads_seen("2"), 2, "SLURM_CPUS_PER_TASK=2: two workers");
    } else {
        eprintln!("one CPU here: the two-worker control is not run");
    }
}

#[test]
fn bad_sweeps_say_what_is_wrong() {
    let sweep = ["sweep", "examples/transfer.toml", "--vary"];
    let mut cases: Vec<Vec<&str>> = [
        &["transfer.chunk"][..],
        &["chunk=1,2"],
        &["transfer.chunk=0,1"],
        &["transfer.chunk=1", "--shard", "2/2"],
        &["transfer.chunk=1", "--shard", "1/0"],
        &["transfer.chunk=1", "--shard", "-1/2"],
        &["transfer.chunk=1", "--shard", "1"],
        &["transfer.chunk=1", "--threads", "0"],
        &["transfer.chunk=1", "--resume"],
    ]
    .iter()
    .map(|extra| sweep.iter().chain(extra.iter()).copied().collect())
    .collect();
    cases.push(vec!["merge"]);
    for args in cases {
        let (code, out, err) = flashkit(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_scenario_can_change_any_handler_cost() {
    let dir = std::env::temp_dir().join(format!("flashkit-costs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let receiver = |costs: &str| {
        let f = dir.join("c.toml");
        std::fs::write(&f, format!("{costs}[transfer]\n")).unwrap();
        let (code, out, err) = flashkit(&["run", f.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        j["receiver_handler_per_line"].as_f64().unwrap()
    };
    let base = receiver("");
    // "What if the receiver's verification were 4 cycles cheaper?"
    let cheaper = receiver(
        "[costs.transfer]\nrecv_verify = { cycles = 1, instrs = 2, loads = 1, stores = 0 }\n",
    );
    assert_eq!(base - cheaper, 4.0, "{base} {cheaper}");
    // The coherence protocol's sheet reaches the miss experiment.
    let f = dir.join("m.toml");
    std::fs::write(&f, "[costs.coherence]\ndecode = 40\n[miss]\n").unwrap();
    let (code, out, _) = flashkit(&["run", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(j["latency_cycles"].as_u64().unwrap() > 111);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_docs_show_the_slurm_job_script_and_the_commands_ci_runs() {
    let read = |f: &str| {
        std::fs::read_to_string(format!("{}/{f}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{f}: {e}"))
    };
    let (docs, script, ci, readme) = (
        read("docs/sweeps.md"),
        read("examples/slurm/sweep.sh"),
        read(".ci/slurm"),
        read("README.md"),
    );
    assert!(
        docs.contains(&format!("```sh\n{script}```")),
        "docs/sweeps.md shows examples/slurm/sweep.sh verbatim"
    );
    // .ci/slurm submits the script itself, installs with the README's line,
    // sweeps the documented points and runs the documented merge.
    let install = "cargo install --path . --locked";
    assert!(readme.contains(install) && docs.contains(install) && ci.contains(install));
    assert!(ci.contains(r#"job=$repo/examples/slurm/sweep.sh"#));
    assert!(ci.contains(
        r#"sbatch --quiet --wait --array=0-3 "$job" "$repo/examples/transfer.toml" parts"#
    ));
    for v in [
        "--vary transfer.bytes=128,1024,4096,16384,65536",
        "--vary transfer.chunk=1,2,4,8,16",
        "--vary transfer.sender=uncached,clean,dirty",
    ] {
        assert!(docs.contains(v) && ci.contains(v), "{v}");
    }
    let merge = "flashkit merge parts/part-*.csv -o sweep.csv";
    assert!(docs.contains(merge) && ci.contains(merge));
    assert!(read(".ci/run").contains("FLASHKIT_REQUIRE_SLURM=1 bash .ci/slurm"));
}

#[test]
fn printed_defaults_are_complete_scenarios_that_run_as_the_commands_defaults() {
    use flashkit::scenario::{self, Experiment, Scenario, Source};
    for e in [
        Experiment::Transfer,
        Experiment::Miss,
        Experiment::FetchOp,
        Experiment::MessagingCosts,
        Experiment::Pipeline,
        Experiment::Remap,
    ] {
        let text = Scenario::defaults(e).to_toml().unwrap();
        let src = Source {
            path: "defaults.toml",
            text: &text,
        };
        let parsed = scenario::parse(&src, scenario::table(&src).unwrap())
            .unwrap_or_else(|err| panic!("{e:?}: {err}\n{text}"));
        // Printing what was read gives the same file: every entry is there.
        assert_eq!(parsed.to_toml().unwrap(), text, "{e:?}");
    }
    // The printed transfer is `flashkit transfer`, figure for figure.
    let dir = std::env::temp_dir().join(format!("flashkit-defaults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (code, text, err) = flashkit(&["run", "--print-defaults"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("[machine]") && text.contains("[costs.coherence]"));
    assert!(text.contains("\nnet_latency = 22\n") && text.contains("\ninbox_priority = ["));
    let file = dir.join("transfer.toml");
    std::fs::write(&file, &text).unwrap();
    let (code, from_file, err) = flashkit(&["run", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let (_, from_flags, _) = flashkit(&["transfer", "--format", "json"]);
    assert_eq!(from_file, from_flags);
    let (code, _, err) = flashkit(&["run", "--print-defaults", "bogus"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_sweep_refuses_an_empty_value_its_own_scenario_as_output_and_too_many_points() {
    let dir = scratch("refuse");
    let own = dir.join("s.toml");
    let text = std::fs::read_to_string("examples/transfer.toml").unwrap();
    std::fs::write(&own, &text).unwrap();
    let own = path(&own).to_string();
    // The same file by another spelling of its path, and by a hard link.
    let other = format!("{}/./s.toml", path(&dir));
    let linked = dir.join("linked.toml");
    let _ = std::fs::remove_file(&linked);
    std::fs::hard_link(&own, &linked).unwrap();
    let linked = path(&linked).to_string();
    let thousand: String = (1..=1024)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let more: String = (1..=1025)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let t0 = std::time::Instant::now();
    for (args, want) in [
        (
            vec!["sweep", "examples/transfer.toml", "--vary", "transfer.chunk=1,,2"],
            "error: --vary transfer.chunk=1,,2: an empty value (two commas together, or one at an end)\n".to_string(),
        ),
        (
            vec!["sweep", "examples/transfer.toml", "--vary", "transfer.chunk=1,2,"],
            "error: --vary transfer.chunk=1,2,: an empty value (two commas together, or one at an end)\n".to_string(),
        ),
        (
            vec!["sweep", &own, "--vary", "transfer.chunk=1,2", "--out", &other],
            format!("error: --out {other} is the scenario file {own}: write the part to another file\n"),
        ),
        (
            vec!["sweep", &own, "--vary", "transfer.chunk=1,2", "--out", &linked],
            format!("error: --out {linked} is the scenario file {own}: write the part to another file\n"),
        ),
        (
            vec!["sweep", &own, "--vary", "transfer.chunk=1,2", "--out", &own, "--resume"],
            format!("error: --out {own} is the scenario file {own}: write the part to another file\n"),
        ),
        (
            vec![
                "sweep",
                "examples/transfer.toml",
                "--vary",
                &format!("machine.net_latency={thousand}"),
                "--vary",
                &format!("transfer.bytes={more}"),
            ],
            "error: the sweep has 1024 x 1025 = 1049600 points; a sweep has at most 1048576 (2^20)\n".to_string(),
        ),
    ] {
        let (code, out, err) = flashkit(&args);
        assert_eq!((code, out.as_str(), err.as_str()), (2, "", want.as_str()), "{args:?}");
    }
    assert!(
        t0.elapsed().as_secs() < 30,
        "refused at once: {:?}",
        t0.elapsed()
    );
    assert_eq!(
        std::fs::read_to_string(&own).unwrap(),
        text,
        "the scenario is untouched"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_point_that_clashes_is_refused_before_any_row_on_every_shard() {
    // Chunks of 8 need 8 data buffers: point 1 (4 buffers, chunk 8) clashes.
    for shard in ["0/2", "1/2"] {
        let (code, out, err) = flashkit(&[
            "sweep",
            "examples/transfer.toml",
            "--vary",
            "machine.data_buffers=4,16",
            "--vary",
            "transfer.chunk=4,8",
            "--shard",
            shard,
            "--quiet",
        ]);
        assert_eq!(code, 2, "{shard}: {err}");
        assert_eq!(out, "", "{shard}: nothing written");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: point 1 (machine.data_buffers=4, transfer.chunk=8): "),
            "{err}"
        );
    }
}

#[test]
fn a_figure_a_point_leaves_undefined_is_an_empty_cell() {
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "transfer.bytes=1,256",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "{out}");
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (rate, bound) = (col("result.per_line_cycles"), col("result.limited_by"));
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{out}");
    assert_eq!((rows[1][rate], rows[1][bound]), ("", ""), "1 byte: no rate");
    assert_eq!((rows[2][rate], rows[2][bound]), ("40.0", "network"));
}

#[test]
fn sweep_workers_run_a_bounded_way_ahead_of_the_first_unfinished_point() {
    use flashkit::sweep::{run_in_order, window};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    // Point 1 is slow; the others are quick, point 0 slow enough (1 ms,
    // with 9,999 to go) for the calling thread to start the other workers
    // after it. While point 1 runs, the workers take no point past the
    // window from point 1: results held back behind a slow point are
    // bounded, not the whole rest of the sweep.
    let threads = 3;
    let furthest = AtomicUsize::new(0);
    let one_done = std::sync::atomic::AtomicBool::new(false);
    let mut order = Vec::new();
    run_in_order(
        10_000,
        threads,
        |i| {
            if i == 0 {
                std::thread::sleep(Duration::from_millis(1));
            } else if i == 1 {
                std::thread::sleep(Duration::from_millis(300));
                one_done.store(true, Ordering::SeqCst);
            } else if !one_done.load(Ordering::SeqCst) {
                furthest.fetch_max(i, Ordering::SeqCst);
            }
            i * 2
        },
        |_| {},
        |i, r| {
            order.push((i, r));
            Ok::<(), ()>(())
        },
    )
    .unwrap();
    // The others ran on while point 1 did, up to the window.
    let furthest = furthest.load(Ordering::SeqCst);
    assert!(furthest > 1, "no point was taken while point 1 ran");
    assert!(furthest <= window(threads), "{furthest}");
    assert_eq!(order.len(), 10_000);
    assert!(order
        .iter()
        .enumerate()
        .all(|(k, &(i, r))| k == i && r == 2 * i));
    // An error stops the run, even with workers waiting for their turn.
    let r = run_in_order(
        1_000_000,
        threads,
        |i| i,
        |_| {},
        |i, _| if i == 5 { Err(i) } else { Ok(()) },
    );
    assert_eq!(r, Err(5));
}

#[test]
fn a_varied_machine_parameter_is_a_column_and_the_others_are_not() {
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "machine.net_latency=22,40",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let head: Vec<&str> = out.lines().next().unwrap().split(',').collect();
    assert!(head.contains(&"machine.net_latency"), "{head:?}");
    assert!(!head.contains(&"machine.pi_in"), "{head:?}");
    let (code, _, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "machine.net_latency=22",
        "--vary",
        "machine.net_latency=40",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("varied twice"), "{err}");
}

#[test]
fn a_scenario_sets_the_platforms_costs_and_networks() {
    use flashkit::protocols::am::cm5::LayerCosts;
    use flashkit::scenario::{self, Logp, PlatformKind, Scenario, Source};
    let read = |text: &str| {
        let src = Source {
            path: "platforms.toml",
            text,
        };
        scenario::parse(&src, scenario::table(&src).unwrap())
    };
    let rt = |s: &Scenario, platform| {
        let l = Logp { platform, nodes: 4 };
        scenario::logp_figures(&l, s).unwrap().round_trip_us
    };
    let base = Scenario::default();
    // An entry set over CMAML's table keeps CMAML's other values.
    let s = read("[costs.cmaml]\nrequest = 200\n[logp]\nplatform = \"cm5-cmaml\"\n").unwrap();
    let mut want = LayerCosts::cmaml();
    want.request = 200;
    assert_eq!((s.costs.cmaml, s.costs.cmam), (want, LayerCosts::cmam()));
    assert!(rt(&s, PlatformKind::Cm5Cmaml) > rt(&base, PlatformKind::Cm5Cmaml));
    assert_eq!(rt(&s, PlatformKind::Cm5), rt(&base, PlatformKind::Cm5));
    // The SP's switch and MAGIC's layer, each on its own platform.
    let s = read("[network.sp]\nswitch_latency = 1000000\n[logp]\nplatform = \"sp\"\n").unwrap();
    assert!(rt(&s, PlatformKind::Sp) > rt(&base, PlatformKind::Sp));
    let s = read("[costs.am]\ndispatch = 100\n[logp]\nplatform = \"flash\"\n").unwrap();
    assert!(rt(&s, PlatformKind::Flash) > rt(&base, PlatformKind::Flash));
    // Unknown keys and values out of range name the key.
    let e = read("[costs.sp]\nrequestt = 1\n[logp]\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("costs.sp.requestt"), "{e}");
    let e = read("[network.cm5]\nbogus = 1\n[logp]\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("network.cm5.bogus"), "{e}");
}

#[test]
fn a_scenario_sets_the_operating_systems_costs() {
    use flashkit::scenario::{self, Source};
    let run = |text: &str| {
        let src = Source {
            path: "os.toml",
            text,
        };
        let s = scenario::parse(&src, scenario::table(&src).unwrap()).unwrap();
        scenario::run(&s).unwrap().json["total_cycles"]
            .as_u64()
            .unwrap()
    };
    let base = run("[remap]\ntechnique = \"tlb\"\n");
    let slow = run("[costs.os]\ninterrupt = 3000\n[remap]\ntechnique = \"tlb\"\n");
    assert!(slow > base, "{slow} vs {base}");
    let src = Source {
        path: "os.toml",
        text: "[costs.os]\ncontext_switch = 2000000\n[remap]\n",
    };
    let e = scenario::parse(&src, scenario::table(&src).unwrap()).unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(2), Some("costs.os.context_switch")),
        "{e}"
    );
    // A library caller that builds the scenario by hand is refused by the run.
    let mut s = scenario::Scenario::defaults(scenario::Experiment::Remap);
    s.costs.os.context_switch = flashkit::magic::Cycles(2_000_000);
    let e = scenario::run(&s).unwrap_err();
    assert_eq!(e.field(), Some("costs.os.context_switch"), "{e}");
}

/// A run that would go on past its cycle budget stops there: status 1, one
/// line saying the budget and how a run is given more, and no figures.
#[test]
fn a_run_at_its_cycle_budget_is_status_1_and_says_so() {
    let dir = scratch("budget");
    let f = dir.join("budget.toml");
    // 2 x 2,000,000 messages of 33 handler runs of 10^6 cycles each: far
    // more than 10^11 cycles.
    std::fs::write(
        &f,
        "[pipeline]\nnodes = 2\nmsgs = 2000000\nsetup_cycles = 1000000\n\
         send_cycles = 1000000\nrecv_cycles = 1000000\ndone_cycles = 1000000\n",
    )
    .unwrap();
    let (code, out, err) = flashkit(&["run", path(&f)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.is_empty(),
        "a halted run's figures are no result: {out}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("the run reached its cycle budget of 100000000000 cycles")
            && err.contains("raises it with [machine] budget"),
        "{err}"
    );
}

/// `[machine] budget` sets a run's cycle budget, and every experiment on
/// MAGIC honours it (the pipeline, whose machine is the workload's own,
/// too): past it the run stops, exit status 1, naming the key to raise.
#[test]
fn a_scenario_sets_the_cycle_budget_and_every_magic_experiment_keeps_it() {
    for experiment in [
        "[transfer]\n",
        "[study]\n",
        "[miss]\n",
        "[sharing]\n",
        "[fetch_op]\n",
        "[remap]\n",
        "[pipeline]\nnodes = 4\nmsgs = 4\n",
        "[logp]\nplatform = \"flash\"\nnodes = 4\n",
        "[suite]\nplatform = \"flash\"\nnodes = 4\nbenchmark = \"round-trip\"\n",
    ] {
        let text = format!("[machine]\nbudget = 100\n{experiment}");
        let (code, err) = run_text("budget.toml", &text);
        assert_eq!(code, 1, "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "{text}: {err}");
        assert!(
            err.contains("the run reached its cycle budget of 100 cycles")
                && err.contains("raises it with [machine] budget"),
            "{text}: {err}"
        );
    }
    // What it leaves is dated as it stands: a continuation still in the
    // inbox stage at the stop is due later, not waiting since then.
    let (code, err) = run_text("left.toml", "[machine]\nbudget = 1000\n[transfer]\n");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("with work left at cycle 1029")
            && err.contains("transfer.send_step, from node 0, due at cycle 1053)"),
        "{err}"
    );
    // Enough of it, the run is the default's.
    let (code, err) = run_text("enough.toml", "[machine]\nbudget = 1000000\n[transfer]\n");
    assert_eq!(code, 0, "{err}");
}

/// The comparison platforms' runs have budgets too, of simulated time and
/// of events (the scheduler's steps and packets, per node), each set in the
/// platform's `[network.*]` table and named when a run reaches it: a storm
/// of keep-alives (one after every empty poll) ends there instead of
/// running for minutes.
#[test]
fn the_platforms_runs_stop_at_their_budgets_naming_the_key() {
    for (text, says) in [
        (
            "[network.sp]\nbudget = 26400\n[logp]\nplatform = \"sp\"\nnodes = 4\n",
            "the run reached its budget of 0.000001 s of simulated time (26400 ticks)",
        ),
        (
            "[network.sp]\nbudget = 26400\n[logp]\nplatform = \"sp\"\nnodes = 4\n",
            "raises it with [network.sp] budget (at most 264000000000000 ticks, 10000 s)",
        ),
        (
            "[costs.sp]\nkeepalive_polls = 1\n[network.sp]\nevent_budget = 10000\n\
             [logp]\nplatform = \"sp\"\nnodes = 4\n",
            "the run reached its budget of 40000 events (scheduler steps and packets sent, \
             10000 a node)",
        ),
        (
            "[costs.sp]\nkeepalive_polls = 1\n[network.sp]\nevent_budget = 10000\n\
             [logp]\nplatform = \"sp\"\nnodes = 4\n",
            "raises it with [network.sp] event_budget (at most 100000000 a node)",
        ),
        (
            "[network.cm5]\nevent_budget = 100\n[logp]\nplatform = \"cm5-cmaml\"\nnodes = 4\n",
            "raises it with [network.cm5] event_budget",
        ),
        (
            "[network.cm5]\nbudget = 1\n[suite]\nplatform = \"cm5\"\nnodes = 4\n",
            "raises it with [network.cm5] budget",
        ),
        // A budget of a few ticks in seconds people read.
        (
            "[network.cm5]\nbudget = 1\n[logp]\nplatform = \"cm5\"\n",
            "the run reached its budget of 3.788e-11 s of simulated time (1 ticks) \
             with node 0 still running at 0.000001 s",
        ),
    ] {
        let (code, err) = run_text("am-budget.toml", text);
        assert_eq!(code, 1, "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "{text}: {err}");
        assert!(err.starts_with("error: no end in sight: "), "{err}");
        assert!(err.contains(says), "{text}: {err}");
    }
}

/// A task's own table (`[costs.transfer.send_init]`) sets the parts it
/// names and keeps the sheet's values of the others, as a partial sheet
/// keeps its other entries; a sweep varies one part of a task.
#[test]
fn a_partial_task_table_keeps_the_tasks_other_parts() {
    let dir = scratch("partial-task");
    let run = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = flashkit(&["run", path(&f), "--format", "json"]);
        assert_eq!(code, 0, "{text}: {err}");
        out
    };
    let part = run(
        "part.toml",
        "[costs.transfer.send_init]\nloads = 1\n[transfer]\n",
    );
    let whole = run(
        "whole.toml",
        "[costs.transfer]\nsend_init = { cycles = 9, instrs = 10, loads = 1, stores = 0 }\n\
         [transfer]\n",
    );
    let default = run("default.toml", "[transfer]\n");
    assert_eq!(part, whole);
    assert_ne!(part, default);
    run("link.toml", "[costs.user.link]\ninstrs = 18\n[remap]\n");
    // As the library reads it (each sheet beside an experiment that reads
    // it: another's would change nothing, and is refused).
    let read = |text| {
        let src = flashkit::scenario::Source {
            path: "s.toml",
            text,
        };
        flashkit::scenario::parse(&src, flashkit::scenario::table(&src).unwrap())
    };
    use magic::costs::Task;
    let s = read("[costs.transfer.send_init]\nloads = 1\n[transfer]\n").unwrap();
    assert_eq!(s.costs.transfer.send_init, Task::new(9, 10, 1, 0));
    let s = read("[costs.user.link]\ncycles = 10\n[remap]\n").unwrap();
    assert_eq!(s.costs.user.link, Task::new(10, 17, 0, 0));
    let e = read("[costs.user.link]\ncycles = 10\n[transfer]\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("costs.user.link.cycles"), "{e}");
    // A sweep varies one part.
    let (code, out, err) = flashkit(&[
        "sweep",
        "examples/transfer.toml",
        "--vary",
        "costs.transfer.send_init.cycles=9,20",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows[0].starts_with("point,costs.transfer.send_init.cycles,"),
        "{out}"
    );
    // The figures after the point and its value differ.
    let figures = |r: &str| r.splitn(3, ',').nth(2).unwrap_or_default().to_string();
    assert_ne!(figures(rows[1]), figures(rows[2]), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_result_runs_its_configuration_again() {
    let dir = scratch("rerun");
    // A transfer away from its defaults: its machine, a cost and its table.
    let toml = dir.join("t.toml");
    std::fs::write(
        &toml,
        "[machine]\nnet_latency = 30\n[costs.transfer.send_init]\ncycles = 14\n\
         [transfer]\nsender = \"dirty\"\nchunk = 8\n",
    )
    .unwrap();
    let made = |file: &std::path::Path, format: &str| {
        let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        assert_eq!(err, "", "{}", file.display());
        out
    };
    let saved = made(&toml, "json");
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    // The same JSON, table and CSV as the scenario, known by the extension
    // or by the content.
    let text = dir.join("saved.txt");
    std::fs::write(&text, &saved).unwrap();
    // With a byte-order mark, as some editors save: the same.
    let marked = dir.join("marked.json");
    std::fs::write(&marked, format!("\u{feff}{saved}")).unwrap();
    let marked_txt = dir.join("marked.result");
    std::fs::write(&marked_txt, format!("\u{feff}{saved}")).unwrap();
    for file in [&json, &text, &marked, &marked_txt] {
        assert_eq!(made(file, "json"), saved, "{}", file.display());
        for format in ["table", "csv"] {
            assert_eq!(made(file, format), made(&toml, format), "{format}");
        }
    }
    // Pretty-printed, as a notebook might save it.
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    let pretty = dir.join("pretty.json");
    std::fs::write(&pretty, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert_eq!(made(&pretty, "json"), saved);
    // Traced, the same result (its configuration saying it was traced) and
    // the timelines written.
    let trace = dir.join("trace.json");
    let (code, out, err) = flashkit(&[
        "run",
        path(&json),
        "--trace",
        path(&trace),
        "--format",
        "json",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut traced: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(traced["config"]["trace"], true);
    traced["config"]["trace"] = false.into();
    assert_eq!(traced, v);
    let timelines: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = timelines["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "X"), "{timelines}");
    // Whether a rerun records timelines is its own --trace's to say: the
    // traced result reruns untraced to the untraced one, and no note.
    let traced_file = dir.join("traced.json");
    std::fs::write(&traced_file, &out).unwrap();
    let (code, again, err) = flashkit(&["run", path(&traced_file), "--format", "json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&again).unwrap(),
        v
    );
    // Its configuration changed, it measures the change and says the
    // result differs from the file's.
    let mut changed = v.clone();
    changed["config"]["params"]["net_latency"] = 22.into();
    let f = dir.join("changed.json");
    std::fs::write(&f, changed.to_string()).unwrap();
    let (code, out, err) = flashkit(&["run", path(&f), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let rerun: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rerun["config"], changed["config"]);
    assert_ne!(rerun["total_cycles"], v["total_cycles"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("note: the rerun differs from") && err.contains("total_cycles"),
        "{err}"
    );
    // A value echoed back from the file stays on its line: its control
    // characters are written as escapes, so it cannot forge a line.
    changed["version"] = "0.0.1\nerror: forged\u{1b}[31m".into();
    std::fs::write(&f, changed.to_string()).unwrap();
    let (code, _, err) = flashkit(&["run", path(&f), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("0.0.1\\nerror: forged\\u{1b}[31m") && !err.contains('\u{1b}'),
        "{err}"
    );
    // What is no result the kit can rerun: one line, status 2.
    let mut edited = v.clone();
    edited["total_us"] = 9.5.into();
    let mut refused = v.clone();
    refused["config"]["receives"] = 0.into();
    for (name, content, says) in [
        ("not.json", "bytes = 4096".to_string(), "not JSON"),
        (
            "other.json",
            r#"{"bytes": 4096, "lines": 32}"#.to_string(),
            "not a result flashkit can rerun",
        ),
        (
            "edited.json",
            edited.to_string(),
            "total_us is 9.5, but the counts give",
        ),
        ("refused.json", refused.to_string(), "receives"),
        // A key given twice: which of the two the result means, the file
        // does not say.
        (
            "twice.json",
            v.to_string()
                .replacen("\"config\":{", "\"config\":{\"bytes\":65536,", 1),
            "config.bytes is given twice at line 1",
        ),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, content).unwrap();
        let (code, out, err) = flashkit(&["run", path(&f)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert_eq!(out, "", "{name}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.starts_with(&format!("error: {}: ", path(&f))) && err.contains(says),
            "{name}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A saved result made by a command: its arguments (a scenario file's
/// text is written first and named by `{toml}`), the exit status it gives,
/// and edits of its JSON the rerun refuses or stops on.
struct SavedCase {
    name: &'static str,
    toml: &'static str,
    make: &'static [&'static str],
    code: i32,
    /// The key its configuration must hold, and its value.
    holds: (&'static str, serde_json::Value),
    /// An edit (a JSON pointer and a value), the exit status and words of
    /// the one error line the rerun then gives.
    edits: &'static [(&'static str, &'static str, i32, &'static str)],
}

/// A saved study row, a saved study whole, a saved check report (clean and
/// with a planted bug) and a pipeline run within a scenario's budget each
/// run again to the same JSON, table and CSV as the command that made
/// them; an edited one is refused naming what is wrong, and an edited
/// budget is kept.
#[test]
fn a_saved_study_check_or_budgeted_pipeline_runs_its_configuration_again() {
    use serde_json::json;
    let cases = [
        SavedCase {
            name: "study-row",
            toml: "[machine]\nnet_latency = 30\n[costs.flush]\ndirty_line = 24\n\
                   [study]\nmode = \"none-flush\"\nsender = \"dirty\"\nbytes = 1024\n",
            make: &["run", "{toml}"],
            code: 0,
            holds: ("/config/params/net_latency", json!(30)),
            edits: &[
                (
                    "/total_us",
                    "9.5",
                    2,
                    "total_us is 9.5, but the counts give",
                ),
                (
                    "/config/bytes",
                    "2048",
                    2,
                    "config is not the transfer of the row's point",
                ),
                ("/coherence_messages", "3", 2, "coherence_messages is 3"),
                ("/config/params/net_latency", "22", 0, ""),
            ],
        },
        SavedCase {
            name: "study",
            toml: "",
            make: &[
                "study",
                "coherence",
                "--bytes",
                "256",
                "--threads",
                "2",
                "--quiet",
            ],
            code: 0,
            holds: ("/config/bytes", json!(256)),
            edits: &[
                ("/rows/3/bandwidth_mb_s", "1.5", 2, "bandwidth_mb_s is 1.5"),
                (
                    "/config/base/params/net_latency",
                    "30",
                    2,
                    "rows[0].config is not its point's transfer",
                ),
            ],
        },
        SavedCase {
            name: "check",
            toml: "",
            make: &["check", "transfer", "--lines", "2", "--receives", "1"],
            code: 0,
            holds: ("/config/searches/0/model/transfer/lines", json!(2)),
            edits: &[
                ("/states", "1", 2, "states is not what the runs give"),
                (
                    "/config/searches/0/machine/data_buffers",
                    "9",
                    2,
                    "searches[0].machine is not what its model builds",
                ),
                ("/config/max_states", "0", 2, "max_states"),
                ("/config/max_bytes", "0", 2, "max_bytes"),
                (
                    "/runs/0/limit",
                    "\"sideways\"",
                    2,
                    "unknown variant `sideways`",
                ),
            ],
        },
        SavedCase {
            name: "check-bug",
            toml: "",
            make: &[
                "check",
                "coherence",
                "--nodes",
                "2",
                "--inject",
                "skip-invalidation",
            ],
            code: 1,
            holds: (
                "/config/searches/0/model/coherence/inject",
                json!("skip-invalidation"),
            ),
            edits: &[],
        },
        SavedCase {
            name: "pipeline",
            toml: "[machine]\nbudget = 5000000\n[pipeline]\nnodes = 4\nmsgs = 2\n",
            make: &["run", "{toml}"],
            code: 0,
            holds: ("/config/budget", json!(5_000_000)),
            // A run ends within its budget: one past it is no run's.
            edits: &[(
                "/config/budget",
                "100",
                2,
                "end_cycles is 2640, past the run's budget of 100 cycles",
            )],
        },
    ];
    let dir = scratch("rerun-table");
    for c in &cases {
        let toml = dir.join(format!("{}.toml", c.name));
        std::fs::write(&toml, c.toml).unwrap();
        let made = |format: &str| {
            let mut args: Vec<&str> = c
                .make
                .iter()
                .map(|a| if *a == "{toml}" { path(&toml) } else { a })
                .collect();
            args.extend(["--format", format]);
            let (code, out, err) = flashkit(&args);
            assert_eq!(code, c.code, "{}: {err}", c.name);
            (out, err)
        };
        let (saved, _) = made("json");
        let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
        assert_eq!(v.pointer(c.holds.0), Some(&c.holds.1), "{}", c.name);
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{}", c.name);
        let json = dir.join(format!("{}.json", c.name));
        std::fs::write(&json, &saved).unwrap();
        let rerun = |file: &std::path::Path, format: &str| {
            let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
            (code, out, err)
        };
        // The same JSON (a command may print it pretty), table and CSV, and
        // the same error line when the check finds its planted bug.
        let (code, out, err) = rerun(&json, "json");
        assert_eq!(code, c.code, "{}: {err}", c.name);
        let again: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(again, v, "{}", c.name);
        for format in ["table", "csv"] {
            let (want, want_err) = made(format);
            let (code, out, err) = rerun(&json, format);
            assert_eq!(
                (code, &out, &err),
                (c.code, &want, &want_err),
                "{} {format}",
                c.name
            );
        }
        for (at, value, code, says) in c.edits {
            let mut edited = v.clone();
            *edited.pointer_mut(at).unwrap() = serde_json::from_str(value).unwrap();
            let f = dir.join(format!("{}-edited.json", c.name));
            std::fs::write(&f, edited.to_string()).unwrap();
            let (got, out, err) = rerun(&f, "json");
            assert_eq!(got, *code, "{} {at}: {err}", c.name);
            if *code == 0 {
                // A configuration changed is measured, and the rerun says
                // it differs from the file.
                let again: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert_eq!(again.pointer(at), edited.pointer(at), "{} {at}", c.name);
                assert!(err.starts_with("note: the rerun differs from"), "{err}");
            } else {
                assert_eq!(err.lines().count(), 1, "{} {at}: {err}", c.name);
                assert!(err.contains(says), "{} {at}: {err}", c.name);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_miss_runs_its_configuration_again() {
    let dir = scratch("rerun-miss");
    let toml = dir.join("m.toml");
    std::fs::write(
        &toml,
        "[machine]\nnet_latency = 30\n[coherence]\nacks = \"requester\"\n\
         [costs.coherence]\ndecode = 6\n[miss]\ncase = \"remote-dirty\"\nnodes = 5\nowner = 3\n",
    )
    .unwrap();
    let made = |file: &std::path::Path, format: &str| {
        let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        assert_eq!(err, "", "{}", file.display());
        out
    };
    let saved = made(&toml, "json");
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["config"]["setup"]["owner"], 3);
    assert_eq!(v["config"]["params"]["net_latency"], 30);
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    assert_eq!(made(&json, "json"), saved);
    assert_eq!(made(&json, "table"), made(&toml, "table"));
    // A miss's result with a figure edited is refused, named.
    a_figure_edited_is_refused(
        &json,
        &v,
        "latency_us",
        "a miss result that does not read back: latency_us is 9.5",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A saved result whose configuration leaves a key out would rerun that
/// key's default, not what was measured: refused, naming the key, for a
/// key at the top of the configuration and one nested in it.
#[test]
fn a_saved_result_missing_a_config_key_is_refused_naming_it() {
    let dir = scratch("rerun-missing");
    let toml = dir.join("t.toml");
    std::fs::write(&toml, "[transfer]\nsender = \"dirty\"\n").unwrap();
    let (code, saved, err) = flashkit(&["run", path(&toml), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    for (key, dotted) in [
        ("sender", "config.sender"),
        ("budget", "config.params.budget"),
    ] {
        let mut edited = v.clone();
        let config = edited["config"].as_object_mut().unwrap();
        match key {
            "budget" => config["params"].as_object_mut().unwrap().remove(key),
            _ => config.remove(key),
        }
        .unwrap();
        let json = dir.join(format!("{key}.json"));
        std::fs::write(&json, edited.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&json)]);
        assert_eq!(code, 2, "{key}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{dotted}: missing")), "{err}");
    }
    // A key given as null, or a table given as a list (which a reader
    // fills by position, the rest defaulted), is as good as left out.
    // The machine's first eight keys in the order they are declared.
    let params = serde_json::json!([14, 8, 23, 28, 43, 4, 32, 100]);
    for (name, edit, says) in [
        (
            "null",
            serde_json::json!({"costs": {"cleanup_load": null}}),
            "config.costs.cleanup_load: null, where a value is written",
        ),
        (
            "list",
            serde_json::json!({"params": params}),
            "config.params: a list, where a table is written",
        ),
        (
            "empty",
            serde_json::json!({"params": []}),
            "config.params: a list, where a table is written",
        ),
    ] {
        let mut edited = v.clone();
        for (k, x) in edit.as_object().unwrap() {
            match x.as_object() {
                // One entry of a table edited, the others kept.
                Some(entries) => {
                    for (e, y) in entries {
                        edited["config"][k][e] = y.clone();
                    }
                }
                None => edited["config"][k] = x.clone(),
            }
        }
        let json = dir.join(format!("{name}.json"));
        std::fs::write(&json, edited.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&json)]);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The saved result `v`, written to `json` with its figure `key` edited to
/// 9.5, is refused in one line with status 2 that says `says`.
fn a_figure_edited_is_refused(
    json: &std::path::Path,
    v: &serde_json::Value,
    key: &str,
    says: &str,
) {
    let mut edited = v.clone();
    edited[key] = 9.5.into();
    std::fs::write(json, edited.to_string()).unwrap();
    let (code, _, err) = flashkit(&["run", path(json)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn a_saved_pipeline_run_runs_again_with_its_wall_clock_time_beside_it() {
    let dir = scratch("rerun-pipeline");
    let (code, saved, err) = flashkit(&[
        "pipeline",
        "--nodes",
        "4",
        "--msgs",
        "3",
        "--pattern",
        "shift",
        "--timing",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let mut v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert!(v["wall_s"].as_f64().is_some(), "{saved}");
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    let (code, out, err) = flashkit(&["run", path(&json), "--format", "json"]);
    assert_eq!((code, err.as_str()), (0, ""));
    // The same result; the wall-clock time stays with the command that
    // timed its event loop.
    v.as_object_mut().unwrap().remove("wall_s");
    let rerun: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rerun, v);
    // As the scenario with that workload prints it.
    let toml = dir.join("p.toml");
    std::fs::write(
        &toml,
        "[pipeline]\nnodes = 4\nmsgs = 3\npattern = \"shift\"\n",
    )
    .unwrap();
    let (code, scenario, err) = flashkit(&["run", path(&toml), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, scenario);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_fetch_op_runs_its_configuration_again() {
    let dir = scratch("rerun-fetch-op");
    let toml = dir.join("f.toml");
    std::fs::write(
        &toml,
        "[machine]\nnet_latency = 30\n[costs.user]\nreceive = 10\n[fetch_op]\nremote_node = 3\n",
    )
    .unwrap();
    let made = |file: &std::path::Path, format: &str| {
        let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        assert_eq!(err, "", "{}", file.display());
        out
    };
    let saved = made(&toml, "json");
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["config"]["target"], 3);
    assert_eq!(v["config"]["user"]["costs"]["receive"], 10);
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    assert_eq!(made(&json, "json"), saved);
    assert_eq!(made(&json, "table"), made(&toml, "table"));
    // A configuration the run refuses is the file's mistake, named.
    let mut bad = v.clone();
    bad["config"]["target"] = 5000.into();
    std::fs::write(&json, bad.to_string()).unwrap();
    let (code, _, err) = flashkit(&["run", path(&json)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("target"), "{err}");
    // One that does not even read back names where it is wrong.
    for (field, value, says) in [
        (
            "/config/target",
            serde_json::json!(4294967296u64),
            "config.target: invalid value",
        ),
        (
            "/config/user/costs/receive",
            serde_json::json!("x"),
            "config.user.costs.receive: invalid type",
        ),
    ] {
        let mut bad = v.clone();
        *bad.pointer_mut(field).unwrap() = value;
        std::fs::write(&json, bad.to_string()).unwrap();
        let (code, _, err) = flashkit(&["run", path(&json)]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{says}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A saved result whose configuration plants a known bug (a library's run
/// for testing a checker) is refused, the field named, never rerun as if
/// the handlers were the kit's: a scenario cannot hold one either.
#[test]
fn a_saved_result_with_a_planted_bug_is_refused() {
    let dir = scratch("rerun-planted");
    let json = dir.join("saved.json");
    for (cmd, field, bug) in [
        (&["transfer"][..], "/config/inject", "latest-space"),
        (&["transfer"], "/config/coherence/inject", "forget-pending"),
        (&["fetch-op"], "/config/user/inject", "keep-stale"),
        (
            &["remap", "--technique", "tlb"],
            "/config/user/inject",
            "early-answer",
        ),
        (
            &["miss", "--case", "remote-clean"],
            "/config/coherence/inject",
            "skip-invalidation",
        ),
    ] {
        let (code, out, err) = flashkit(&[cmd, &["--format", "json"]].concat());
        assert_eq!(code, 0, "{cmd:?}: {err}");
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let slot = v
            .pointer_mut(field)
            .unwrap_or_else(|| panic!("{cmd:?}: no {field}"));
        assert!(slot.is_null(), "{cmd:?}: {field} is {slot}");
        *slot = bug.into();
        std::fs::write(&json, v.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&json)]);
        assert_eq!((code, out.as_str()), (2, ""), "{cmd:?} {field}: {err}");
        let named = field.trim_start_matches('/').replace('/', ".");
        assert!(
            err.starts_with("error: ") && err.contains(&format!("{named}: a planted bug")),
            "{cmd:?} {field}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_remap_runs_its_configuration_again() {
    let dir = scratch("rerun-remap");
    let toml = dir.join("r.toml");
    std::fs::write(
        &toml,
        "[machine]\nnet_latency = 30\n[costs.user]\nline = 12\n[remap]\ntechnique = \"tlb\"\n",
    )
    .unwrap();
    let made = |file: &std::path::Path, format: &str| {
        let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        assert_eq!(err, "", "{}", file.display());
        out
    };
    let saved = made(&toml, "json");
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["config"]["technique"], "tlb");
    assert_eq!(v["config"]["user"]["costs"]["line"], 12);
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    assert_eq!(made(&json, "json"), saved);
    assert_eq!(made(&json, "table"), made(&toml, "table"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_sharing_run_runs_its_configuration_again() {
    let dir = scratch("rerun-sharing");
    let toml = dir.join("s.toml");
    std::fs::write(
        &toml,
        "[machine]\nnet_latency = 30\n[coherence]\ndirectory = \"dynamic-pointer\"\n\
         [costs.coherence]\ndecode = 6\n[sharing]\nreaders = 12\nevicting = 5\n",
    )
    .unwrap();
    let made = |file: &std::path::Path, format: &str| {
        let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
        assert_eq!(code, 0, "{}: {err}", file.display());
        assert_eq!(err, "", "{}", file.display());
        out
    };
    let saved = made(&toml, "json");
    let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(v["config"]["sharing"]["readers"], 12);
    assert_eq!(v["config"]["params"]["net_latency"], 30);
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    // The counts are in it, and the figures are what they give, exactly.
    let per_hint = v["hint_cycles"].as_u64().unwrap() as f64 / v["hints"].as_u64().unwrap() as f64;
    assert_eq!(v["per_hint"].as_f64(), Some(per_hint));
    let json = dir.join("saved.json");
    std::fs::write(&json, &saved).unwrap();
    assert_eq!(made(&json, "json"), saved);
    assert_eq!(made(&json, "table"), made(&toml, "table"));
    // Traced, it is refused as the scenario is.
    let (code, _, err) = flashkit(&["run", path(&json), "--trace", path(&dir.join("t.json"))]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a trace"), "{err}");
    // A figure edited is refused, named.
    a_figure_edited_is_refused(
        &json,
        &v,
        "per_invalidation",
        "a sharing workload result that does not read back: per_invalidation is 9.5",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The AM suite's experiments and the cost study, saved and run again:
/// (the scenario, a value its saved configuration holds, a figure edited
/// and what the refusal says).
#[test]
fn a_saved_am_result_runs_its_configuration_again() {
    type Case = (
        &'static str,
        &'static str,
        (&'static str, serde_json::Value),
        (&'static str, serde_json::Value, &'static str),
    );
    let cases: [Case; 4] = [
        (
            "logp",
            "[network.sp]\nswitch_latency = 20000\n[costs.sp]\nrequest = 300\n\
             [logp]\nplatform = \"sp\"\nnodes = 3\n",
            ("/config/network/switch_latency", 20000.into()),
            (
                "/round_trip_us",
                9.5.into(),
                "a LogP measurement result that does not read back: round_trip_us is 9.5",
            ),
        ),
        (
            "flash-logp",
            "[machine]\nnet_latency = 30\n[costs.am]\ndeliver = 10\n\
             [logp]\nplatform = \"flash\"\nnodes = 3\n",
            ("/config/machine/net_latency", 30.into()),
            (
                "/bulk/startup_us",
                9.5.into(),
                "bulk.startup_us is 9.5, but the counts give",
            ),
        ),
        (
            "suite",
            "[network.cm5]\nfixed_latency = 60000\n[costs.cmaml]\nrequest = 30\n\
             [suite]\nplatform = \"cm5-cmaml\"\nbenchmark = \"swap\"\nnodes = 3\n",
            ("/config/platform/costs/request", 30.into()),
            (
                "/tables/0/rows/1/2",
                9.5.into(),
                "a suite result that does not read back: tables[0]: swap: rows[1][2] is 9.5",
            ),
        ),
        (
            "costs",
            "[messaging_costs]\nprotocol = \"indefinite\"\nwords = 64\npacket_words = 8\n",
            ("/config/packet_words", 8.into()),
            (
                "/total/source",
                1.into(),
                "a cost study result that does not read back: total.source is 1",
            ),
        ),
    ];
    let dir = scratch("rerun-am");
    for (name, toml, (key, holds), (edit, value, says)) in cases {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, toml).unwrap();
        let made = |file: &std::path::Path, format: &str| {
            let (code, out, err) = flashkit(&["run", path(file), "--format", format]);
            assert_eq!(code, 0, "{}: {err}", file.display());
            assert_eq!(err, "", "{}", file.display());
            out
        };
        let saved = made(&file, "json");
        let v: serde_json::Value = serde_json::from_str(&saved).unwrap();
        assert_eq!(v.pointer(key), Some(&holds), "{name}: {saved}");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{name}");
        let json = dir.join(format!("{name}.json"));
        std::fs::write(&json, &saved).unwrap();
        // The same result and the same table as the scenario's.
        assert_eq!(made(&json, "json"), saved, "{name}");
        assert_eq!(made(&json, "table"), made(&file, "table"), "{name}");
        // Traced, refused as the scenario is.
        let trace = dir.join("t.json");
        for f in [&file, &json] {
            let (code, _, err) = flashkit(&["run", path(f), "--trace", path(&trace)]);
            assert_eq!(code, 2, "{name}: {err}");
            assert!(
                err.contains("a trace records MAGIC's timelines"),
                "{name}: {err}"
            );
        }
        // A figure edited is refused, named.
        let mut edited = v.clone();
        *edited.pointer_mut(edit).unwrap() = value;
        std::fs::write(&json, edited.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&json)]);
        assert_eq!((code, out.as_str()), (2, ""), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The successful poll waits for its reply however long the platform's
/// costs make a round trip: a delivery cost high in its range is measured,
/// not refused as a benchmark that found nothing to poll.
#[test]
fn a_slow_delivery_is_measured_by_the_poll_benchmark() {
    for deliver in [30_000, 1_000_000] {
        let text =
            format!("[logp]\nplatform = \"flash\"\nnodes = 4\n[costs.am]\ndeliver = {deliver}\n");
        let (code, err) = run_text("slow-poll.toml", &text);
        assert_eq!(code, 0, "deliver {deliver}: {err}");
    }
}

/// A saved result edited out of range is refused at the key that holds
/// the value, as a dotted path into its JSON.
#[test]
fn an_edited_saved_result_is_refused_at_its_path() {
    let dir = scratch("saved-path");
    for (cmd, pointer, value, says) in [
        (
            &["fetch-op", "--format", "json"][..],
            "/config/user/tlb/entries",
            serde_json::json!(0),
            "config.user.tlb.entries: must be from 1 to 65536, got 0",
        ),
        (
            &["fetch-op", "--format", "json"],
            "/config/user/os/change",
            serde_json::json!(1_000_000_000),
            "config.user.os.change: must be from 0 to 1000000",
        ),
        (
            &["miss", "--case", "remote-dirty", "--format", "json"],
            "/config/coherence/costs/decode",
            serde_json::json!(1_000_000_000),
            "config.coherence.costs.decode: must be from 0 to 1000000",
        ),
        (
            &["transfer", "--format", "json"],
            "/config/costs/cleanup_load/cycles",
            serde_json::json!(1_000_000_000),
            "config.costs.cleanup_load.cycles: must be from 0 to 1000000",
        ),
        // A transfer's chunk is its handler's argument.
        (
            &["transfer", "--format", "json"],
            "/config/handler/Chunked",
            serde_json::json!(0),
            "config.handler.Chunked: must be from 1 to the data-buffer pool, 16, got 0",
        ),
        // A transfer's buffers are homed by address.
        (
            &["transfer", "--format", "json"],
            "/config/coherence/placement",
            serde_json::json!("Interleaved"),
            "config.coherence.placement: must be NodeBits: the experiment homes its lines by their address, got Interleaved",
        ),
        // A configuration no run takes is refused before its figures.
        (
            &["transfer", "--format", "json"],
            "/config/bytes",
            serde_json::json!(0),
            "config.bytes: must be from 1 to 1048576, got 0",
        ),
        (
            &["miss", "--case", "remote-clean", "--format", "json"],
            "/config/setup/nodes",
            serde_json::json!(-1),
            "a miss result that does not read back: config.setup.nodes: invalid value",
        ),
        (
            &["logp", "--platform", "cm5", "--nodes", "4", "--format", "json"],
            "/config/costs/poll",
            serde_json::json!(-1),
            "a LogP measurement result that does not read back: config: invalid value: integer `-1`",
        ),
    ] {
        let (code, out, err) = flashkit(cmd);
        assert_eq!(code, 0, "{cmd:?}: {err}");
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
        *v.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer}")) = value;
        let f = dir.join(format!("{}-{}.json", cmd[0], pointer.replace('/', "-")));
        std::fs::write(&f, v.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&f)]);
        assert_eq!((code, out.as_str()), (2, ""), "{cmd:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{cmd:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A saved study's base gives its points their machine, sheets and options
/// alone: a base edited where the points set the transfer is refused, not
/// run as if unedited.
#[test]
fn a_saved_studys_base_shape_is_its_points() {
    let dir = scratch("study-base");
    let (code, out, err) = flashkit(&[
        "study",
        "coherence",
        "--bytes",
        "256",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let f = dir.join("study.json");
    std::fs::write(&f, &out).unwrap();
    let (code, _, err) = flashkit(&["run", path(&f)]);
    assert_eq!(code, 0, "{err}");
    for (key, value) in [
        ("bytes", serde_json::json!(1)),
        ("receives", serde_json::json!(2)),
    ] {
        let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["config"]["base"][key] = value;
        std::fs::write(&f, v.to_string()).unwrap();
        let (code, out, err) = flashkit(&["run", path(&f)]);
        assert_eq!((code, out.as_str()), (2, ""), "{key}: {err}");
        assert!(
            err.contains(&format!("config.base.{key}: a study's points set it")),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Costs LogP's measurement never charges are refused beside a `[logp]`
/// (CMAM's interrupts everywhere), and taken where a benchmark charges them.
#[test]
fn keys_logp_never_charges_are_refused_beside_it() {
    for (text, key) in [
        (
            "[logp]\nplatform = \"cm5\"\n[costs.cmam]\ninterrupt = 7\n",
            "costs.cmam.interrupt",
        ),
        (
            "[logp]\nplatform = \"cm5-cmaml\"\n[costs.cmaml]\nshift_word = 7\n",
            "costs.cmaml.shift_word",
        ),
        (
            "[logp]\nplatform = \"sp\"\n[costs.sp]\nflow_send = 7\n",
            "costs.sp.flow_send",
        ),
        (
            "[suite]\nplatform = \"cm5\"\n[costs.cmam]\ninterrupt_fast = 7\n",
            "costs.cmam.interrupt_fast",
        ),
    ] {
        let (code, err) = run_text("logp.toml", text);
        assert_eq!(code, 2, "{text}");
        assert!(
            err.contains(key) && err.contains("does not read it here"),
            "{err}"
        );
    }
    let (code, err) = run_text(
        "suite.toml",
        "[suite]\nplatform = \"cm5-cmaml\"\nbenchmark = \"interrupt\"\nnodes = 4\n[costs.cmaml]\ninterrupt = 700\n",
    );
    assert_eq!(code, 0, "{err}");
}

/// A run's error names its field whichever layer refused it: the two
/// accessors agree, and a name that is no benchmark is its field too.
#[test]
fn a_run_error_names_the_field_its_range_does() {
    use flashkit::scenario::{run, Experiment, PlatformKind, Scenario};
    for experiment in [Experiment::Suite, Experiment::Logp] {
        let mut s = Scenario::defaults(experiment);
        if let Some(x) = s.suite.as_mut() {
            x.platform = PlatformKind::Flash;
            x.nodes = 4;
            x.benchmark = Some("ring".into());
        }
        if let Some(x) = s.logp.as_mut() {
            x.platform = PlatformKind::Flash;
            x.nodes = 4;
        }
        s.machine.data_buffers = 1;
        let e = run(&s).unwrap_err();
        assert_eq!(e.field(), Some("data_buffers"), "{e}");
        assert_eq!(e.range().map(|r| r.field), e.field(), "{e}");
    }
    let e = protocols::Error::Unknown {
        what: "benchmark",
        name: "nope".into(),
        known: "ring".into(),
    };
    assert_eq!(e.field(), Some("benchmark"));
}

/// A saved study row whose figures no run could give is refused on
/// reading: more stale lines than the transfer has.
#[test]
fn a_study_row_with_more_stale_lines_than_lines_is_refused() {
    use flashkit::scenario::{parse, run, table, Saved, Source};
    let src = Source {
        path: "s.toml",
        text: "[study]\nmode = \"none\"\nsender = \"dirty\"\nbytes = 1024\n",
    };
    let s = parse(&src, table(&src).unwrap()).unwrap();
    let mut v = run(&s).unwrap().json;
    assert_eq!(v["data_ok"], false, "stale data without coherence");
    assert!(Saved::read(&v.to_string()).is_ok());
    v["stale_lines"] = 99.into();
    let e = Saved::read(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("stale_lines is 99, more than the 8 lines of its 1024 bytes"),
        "{e}"
    );
}
