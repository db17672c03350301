//! The command examples in README.md and docs/ run against the binary, so the
//! text cannot drift from what the kit prints.
//!
//! In a shell block, a line `$ flashkit ARGS` is a command and the lines
//! after it, up to the next `$` line or the block's end, are what it prints
//! (standard output, then standard error). A line `...` stands for any
//! number of lines, and `...` inside a line for any text; the wall-clock
//! time a run reports (`wall_s`) is masked. A `$` command with no lines
//! after it shows only the command: it must succeed, whatever it prints. A plain line `flashkit ARGS`
//! (no prompt, no output shown) is a command that must succeed; the lines of
//! one block run in order in one scratch folder, so a sweep can feed the
//! plot after it. Lines of other programs (`sbatch`, `cargo`, LogGOPSim,
//! SimGrid) are left to `.ci/slurm` and `.ci/interop.sh`.
//!
//! The examples include the checks at their default bounds, so the test is
//! run on the release build (`.ci/run`): `cargo test --release --test
//! flashkit docs:: -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One command found in a document.
#[derive(Debug)]
struct Example {
    /// Where: `README.md:116`.
    at: String,
    /// The shell line, continuation lines joined.
    command: String,
    /// What it prints, when the document shows it (`$` commands).
    output: Option<Vec<String>>,
    /// The block it belongs to (commands of one block share a folder).
    block: usize,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose examples are checked.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// A plain `flashkit` line that needs more than a scratch folder: the parts
/// of a sweep run under Slurm.
fn needs_elsewhere(command: &str) -> bool {
    command.contains("parts/part-")
}

/// The commands of one document, in order.
fn examples(doc: &Path, first_block: usize) -> Vec<Example> {
    let name = doc.strip_prefix(root()).unwrap().display().to_string();
    let text = std::fs::read_to_string(doc).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut block = first_block;
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !(fence == "```sh" || fence == "```console") {
            i += 1;
            continue;
        }
        block += 1;
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            let line = lines[i];
            let at = format!("{name}:{}", i + 1);
            let (prompt, rest) = match line.strip_prefix("$ ") {
                Some(r) => (true, r),
                None => (false, line),
            };
            // Continuation lines end with a backslash.
            let mut command = rest.trim_end().to_string();
            while command.ends_with('\\') && i + 1 < lines.len() {
                command.pop();
                i += 1;
                command.push(' ');
                command.push_str(lines[i].trim());
            }
            i += 1;
            let mut output = Vec::new();
            if prompt {
                while i < lines.len()
                    && !lines[i].starts_with("$ ")
                    && !lines[i].trim_start().starts_with("```")
                {
                    output.push(lines[i].to_string());
                    i += 1;
                }
            }
            let ours = command.starts_with("flashkit ") || command == "flashkit";
            if !ours || (!prompt && needs_elsewhere(&command)) {
                continue;
            }
            out.push(Example {
                at,
                command,
                output: prompt.then_some(output),
                block,
            });
        }
        i += 1;
    }
    out
}

/// Every example of every document.
fn all_examples() -> Vec<Example> {
    let mut out = Vec::new();
    for (k, doc) in documents().iter().enumerate() {
        out.extend(examples(doc, k * 1000));
    }
    out
}

/// The line with its wall-clock time masked.
fn masked(line: &str) -> String {
    let mut s = line.trim_end().to_string();
    for key in ["\"wall_s\":", "wall_s "] {
        let mut from = 0;
        while let Some(i) = s[from..].find(key) {
            let start = from + i + key.len();
            let end = s[start..]
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .map_or(s.len(), |e| start + e);
            s.replace_range(start..end, "W");
            from = start + 1;
        }
    }
    s
}

/// `line` matches `pattern`, where `...` in the pattern stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || !line[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

/// `got` matches the shown lines, where a line `...` stands for any number
/// of lines (the shortest that lets the rest match).
fn lines_match(shown: &[String], got: &[String]) -> bool {
    match shown.split_first() {
        None => got.is_empty(),
        Some((p, rest)) if p.trim() == "..." => {
            (0..=got.len()).any(|k| lines_match(rest, &got[k..]))
        }
        Some((p, rest)) => {
            got.first().is_some_and(|g| line_matches(p, g)) && lines_match(rest, &got[1..])
        }
    }
}

/// A scratch folder for one block, with the repository's examples in reach.
fn scratch(block: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flashkit-docs-{}-{block}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
    dir
}

/// Run one shell line with this build's `flashkit` first on the `PATH`.
fn run(command: &str, dir: &Path) -> (i32, Vec<String>) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_flashkit"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap_or(-1),
        text.lines().map(masked).collect(),
    )
}

/// At most 40 lines of what a command printed, for a failure's message.
fn excerpt(got: &[String]) -> String {
    let mut s = got.iter().take(40).cloned().collect::<Vec<_>>().join("\n");
    if got.len() > 40 {
        s.push_str(&format!("\n({} more lines)", got.len() - 40));
    }
    s
}

#[test]
#[ignore = "runs every example, the checks at their default bounds among them: on the release build in CI"]
fn the_documents_show_what_the_commands_print() {
    let all = all_examples();
    let mut failures = Vec::new();
    let mut dirs = std::collections::BTreeMap::new();
    for ex in &all {
        let dir = dirs.entry(ex.block).or_insert_with(|| scratch(ex.block));
        let (code, got) = run(&ex.command, dir);
        let panicked = got.iter().any(|l| l.contains("panicked"));
        match &ex.output {
            Some(shown) if !shown.is_empty() => {
                let shown: Vec<String> = shown.iter().map(|l| masked(l)).collect();
                if panicked || !lines_match(&shown, &got) {
                    failures.push(format!(
                        "{}: `{}` (exit {code}) printed\n{}\nbut the document shows\n{}",
                        ex.at,
                        ex.command,
                        excerpt(&got),
                        shown.join("\n")
                    ));
                }
            }
            _ => {
                if code != 0 || panicked {
                    failures.push(format!(
                        "{}: `{}` exited {code}:\n{}",
                        ex.at,
                        ex.command,
                        got.join("\n")
                    ));
                }
            }
        }
    }
    for dir in dirs.values() {
        let _ = std::fs::remove_dir_all(dir);
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples drifted:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

/// The harness finds the README's examples, and its matching is strict
/// where the text is shown and loose only where `...` says so.
#[test]
fn the_harness_reads_the_examples_and_matches_strictly() {
    let all = all_examples();
    assert!(
        all.iter()
            .any(|e| e.command == "flashkit transfer" && e.output.is_some()),
        "{all:?}"
    );
    assert!(all.iter().any(|e| e.at.starts_with("docs/")), "{all:?}");
    assert!(all
        .iter()
        .all(|e| !e.command.starts_with("sbatch") && !needs_elsewhere(&e.command)));
    let got = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(lines_match(
        &got(&["a", "...", "d"]),
        &got(&["a", "b", "c", "d"])
    ));
    assert!(lines_match(&got(&["a", "...", "d"]), &got(&["a", "d"])));
    assert!(!lines_match(&got(&["a", "...", "d"]), &got(&["a", "b"])));
    assert!(!lines_match(&got(&["a", "b"]), &got(&["a", "b", "c"])));
    assert!(line_matches(
        r#"{"x":...,"y":[...]}"#,
        r#"{"x":1,"y":[2,3]}"#
    ));
    assert!(!line_matches("total 15.63 us", "total 15.64 us"));
    assert_eq!(
        masked(r#"{"completion":3,"wall_s":0.56}"#),
        r#"{"completion":3,"wall_s":W}"#
    );
}

/// The machine's numbers ARCHITECTURE.md quotes are the defaults the code
/// uses: each claim is written from the default it states.
#[test]
fn the_architecture_quotes_the_defaults() {
    use flashkit::magic::MagicParams;
    use flashkit::os_shim::OsCosts;
    use flashkit::protocols::user::tlb::TlbParams;
    let p = MagicParams::default();
    let os = OsCosts::default();
    let tlb = TlbParams::default();
    let line = flashkit::magic::LINE_BYTES as u64;
    let claims = [
        format!(
            "first doubleword {} cycles after the address",
            p.mem_first_dword
        ),
        format!("`mem_write_latency` ({})", p.mem_write_latency),
        format!(
            "state at {}, first word at {}, whole\n  dirty line at {}",
            p.pc_state, p.pc_first_word, p.pc_line
        ),
        format!("packets of {} header bytes", p.header_bytes),
        format!(
            "data at {} bytes per cycle (a full line holds it {} cycles), {} cycles of latency",
            p.link_bytes_per_cycle,
            (p.header_bytes + line) / p.link_bytes_per_cycle,
            p.net_latency
        ),
        format!("`outbox_slots` ({}) waiting slots", p.outbox_slots),
        format!(
            "`inbox_dispatch` (input queue to PP, {} cycles)",
            p.inbox_dispatch
        ),
        format!(
            "`outbox_latency` (send to wire, {} cycles)",
            p.outbox_latency
        ),
        format!("`pi_in` ({}) cycles after issue", p.pi_in),
        format!("`pi_out` ({}) cycles", p.pi_out),
        format!(
            "its 32-byte header\n  is in (wire start + {} + {} cycles)",
            p.header_bytes / p.link_bytes_per_cycle,
            p.net_latency
        ),
        format!(
            "context switch {}, interrupt service {}, page\ntable edit {}, {} per line copied",
            os.context_switch, os.interrupt, os.change, os.copy_line
        ),
        format!("({} entries, {} ways, LRU or FIFO", tlb.entries, tlb.ways),
        format!(
            "(`[machine] budget`, 10^{} cycles by default",
            p.budget.0.ilog10()
        ),
        format!(
            "budget of simulated\n  time ({} s by default) and at its budget of events (10^{} a node",
            flashkit::magic::ni::cm5::DEFAULT_RUN_TIME.as_us() / 1e6,
            flashkit::magic::ni::cm5::DEFAULT_EVENTS.ilog10()
        ),
    ];
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    says_all("ARCHITECTURE.md", &text, &claims);
}

/// Every claim is in `text`, the text of `doc`.
fn says_all(doc: &str, text: &str, claims: &[String]) {
    let missing: Vec<&String> = claims
        .iter()
        .filter(|c| !text.contains(c.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{doc} no longer says (with the code's figures):\n{missing:#?}"
    );
}

/// The export's schedules README.md describes are the ones the code
/// writes (whitespace, a line's wrapping, apart).
#[test]
fn the_readme_quotes_the_exports() {
    use flashkit::protocols::am::export::{BULK_BLOCKS, BULK_BYTES, PINGPONG_ROUNDS};
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = words(&std::fs::read_to_string(root().join("README.md")).unwrap());
    let claims = [
        format!(
            "`bulk.goal` moves {BULK_BLOCKS} blocks of {BULK_BYTES} bytes (the suite's largest array transfer) from node 0 to node 1: {} bytes in T picoseconds",
            BULK_BLOCKS * BULK_BYTES
        ),
        format!("`pingpong.goal` ({PINGPONG_ROUNDS} round trips"),
        format!("T / {PINGPONG_ROUNDS} picoseconds is the round trip"),
    ];
    says_all("README.md", &text, &claims);
}
