//! Every cost sheet of the kit in one list: what `docs/costs.md` renders and
//! what a scenario's `[costs.NAME]` tables override; and the other tables of
//! costs (the comparison platforms' layers and networks, the pipeline's
//! handlers), whose ranges the document lists as their checks accept them.

use magic::costs::{markdown, Sheet, MAX_COST};
use serde::{de::DeserializeOwned, Serialize};

/// The sheets, each with what it covers; a scenario's table for each is
/// [`Sheet::table`] (`costs.transfer`).
pub fn all() -> Vec<(&'static str, Box<dyn Sheet>)> {
    vec![
        (
            "The bulk transfer's handlers: the sender (B, O, Ck), the receiver's \
             component handler, the connection's commit, setup, space notice and \
             cleanup, the walk of a changing page's uses, global coherence's \
             fetches.",
            Box::new(crate::transfer::TransferCosts::default()),
        ),
        (
            "The command interface, shared by the user layer, the transfer and \
             Active Messages on MAGIC: \
             taking one command write into the operation record, checking \
             a sequence at its committing read (the transfer's commit is its \
             own sheet's), and taking the OS's notice of a translation change \
             or its answer to an interrupt.",
            Box::new(crate::command::CommandCosts::default()),
        ),
        (
            "The directory protocol's handlers (read and write misses, \
             invalidations, interventions, writebacks, NAKs) and the \
             message-data coherence modes when a protocol other than the \
             transfer uses them.",
            Box::new(coherence::protocol::CoherenceCosts::default()),
        ),
        (
            "User-level messaging: fetch-and-add, \
             copies and sends a line at a time, the address techniques \
             (hold-off, invalidation, software TLB).",
            Box::new(crate::user::UserCosts::default()),
        ),
        (
            "The operating system's steps on the compute processor, as the \
             user layer and the transfer charge them, in cycles of 10 ns.",
            Box::new(os_shim::OsCosts::default()),
        ),
        (
            "The user programs' flush of message data around a transfer \
             without coherence (`--flush`): the compute processor's cache \
             instructions, one per line of the buffer.",
            Box::new(crate::transfer::FlushCosts::default()),
        ),
        (
            "Active Messages on MAGIC (the suite's `flash` platform): the \
             processor's polls and dispatch, MAGIC's command, delivery and \
             store handlers.",
            Box::new(crate::am::flash::FlashCosts::default()),
        ),
    ]
}

/// The range of integer key `key` of `base` that `ok` accepts, found by
/// asking it (the accepted values are an interval around the default):
/// `None` for a key that is not an integer.
fn accepted<T: Serialize + DeserializeOwned>(
    base: &T,
    key: &str,
    ok: &dyn Fn(&T) -> bool,
) -> Option<(u64, u64)> {
    let v = serde_json::to_value(base).ok()?;
    let d = v.get(key)?.as_u64()?;
    let with = |x: u64| {
        let mut v = v.clone();
        v[key] = x.into();
        serde_json::from_value::<T>(v).is_ok_and(|t| ok(&t))
    };
    if !with(d) {
        return None;
    }
    // The largest accepted value above the default, the least below it.
    let (mut good, mut bad) = (d, u64::MAX);
    if with(u64::MAX) {
        good = u64::MAX;
    }
    while good < bad && bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if with(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    let hi = good;
    let (mut good, mut bad) = (d, 0);
    if with(0) {
        good = 0;
    }
    while good > bad && good - bad > 1 {
        let mid = bad + (good - bad) / 2;
        if with(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some((good, hi))
}

/// A range in words: `any` where every value TOML can write is taken.
fn range_text((lo, hi): (u64, u64)) -> String {
    if hi >= i64::MAX as u64 {
        format!("{lo} or more (any)")
    } else {
        format!("{lo} to {hi}")
    }
}

/// One of the other tables: its rows (key, defaults, range) and the
/// defaults' column names.
struct Other {
    table: &'static str,
    what: &'static str,
    columns: &'static [&'static str],
    rows: Vec<(String, Vec<String>, String)>,
}

/// The rows of a table of `T` with default(s) `bases`, checked by `ok`.
fn rows<T: Serialize + DeserializeOwned>(
    bases: &[T],
    ok: &dyn Fn(&T) -> bool,
    rename: &dyn Fn(&str) -> String,
) -> Vec<(String, Vec<String>, String)> {
    let Ok(serde_json::Value::Object(first)) = serde_json::to_value(&bases[0]) else {
        return Vec::new();
    };
    first
        .keys()
        .map(|k| {
            let defaults = bases
                .iter()
                .map(|b| {
                    serde_json::to_value(b)
                        .ok()
                        .and_then(|v| v.get(k).map(|x| x.to_string()))
                        .unwrap_or_default()
                })
                .collect();
            let range = match accepted(&bases[0], k, ok) {
                Some(r) => range_text(r),
                None => "true or false".to_string(),
            };
            (rename(k), defaults, range)
        })
        .collect()
}

/// `rows` with two more columns: each key's provenance from `source`
/// (its kind, and the citation or the reasoning).
fn with_sources(
    rows: Vec<(String, Vec<String>, String)>,
    source: &dyn Fn(&str) -> Option<magic::costs::Source>,
) -> Vec<(String, Vec<String>, String)> {
    rows.into_iter()
        .map(|(key, mut cells, range)| {
            let (kind, why) = source(&key).map_or(("", ""), |s| (s.kind(), s.why()));
            cells.extend([kind.to_string(), why.replace('|', "\\|")]);
            (key, cells, range)
        })
        .collect()
}

fn others() -> Vec<Other> {
    use crate::am::{cm5::LayerCosts, sp::SpCosts};
    use magic::ni::{cm5::Cm5Params, sp::SpParams};
    let same = |k: &str| k.to_string();
    vec![
        Other {
            table: "[costs.cmam]` and `[costs.cmaml]",
            what: "The CM-5's Active Message layers, in instructions of the \
                   33 MHz processor (one a cycle), or in steps of a transfer \
                   call's set-up (a cached load, an instruction and a cached \
                   store each: 6 cycles with `[network.cm5]`'s defaults); \
                   each table over its own layer's values, each entry with \
                   where its values come from.",
            columns: &["CMAM", "CMAML", "source", "why these values"],
            rows: with_sources(
                rows(
                    &[LayerCosts::cmam(), LayerCosts::cmaml()],
                    &|c: &LayerCosts| c.validate().is_ok(),
                    &same,
                ),
                &LayerCosts::source,
            ),
        },
        Other {
            table: "[costs.sp]",
            what: "SP AM, in instructions of the 66 MHz processor, and its \
                   reliability protocol's counts and windows. Each entry's \
                   provenance is in `SpCosts`'s documentation: the per-call \
                   costs are derived from the paper's measured operations, \
                   `bulk_packet` from its ~175 us to send a chunk of 36 \
                   packets, the windows published, the rest model choices \
                   with their reasons. `lengths_per_access` writes one down \
                   that shapes the blocking bulk curve: the host hands the \
                   adapter a chunk's packet lengths 4 at a time, one \
                   MicroChannel access each, so the adapter sends a chunk's \
                   first packets while the host composes the rest (the paper \
                   says only that several can be written at once); a study \
                   that changes it changes `bulk_packet` to keep 175 us a \
                   chunk. Two choices of mechanism go with them, where the \
                   paper is silent. Chunk N waits for the ack of chunk N-2 \
                   counting every chunk outstanding to the peer, whatever \
                   its size and whichever store it belongs to: counted in \
                   packets instead (the 75-packet window), back-to-back \
                   asynchronous stores of 8 and 16 KB would move 34.9 MB/s \
                   where blocking ones move 27 and 31, and the paper says \
                   that above one chunk they are no better. And a blocking \
                   store returns once its last chunk's ack is in (SP AM \
                   keeps a chunk until then, to send it again): returning \
                   when its chunks are handed to the adapter, a 64-byte \
                   store would take 6 us against a get's 56, where the paper \
                   finds a get only slightly slower. A store does not poll \
                   after its issue, as a request does (the paper's request \
                   cost counts its poll; a store waits for no reply), so \
                   back-to-back stores pay their issue alone, the paper's \
                   start-up of the pipelined stores. \
                   [sp-bulk.md](sp-bulk.md) adds the bandwidth benchmark's \
                   times up from these entries.",
            columns: &["default"],
            rows: rows(
                &[SpCosts::default()],
                &|c: &SpCosts| c.validate().is_ok(),
                &same,
            ),
        },
        Other {
            table: "[network.cm5]",
            what: "The CM-5's network interface and data networks: processor \
                   costs in 33 MHz cycles, times in ticks (26 400 a \
                   microsecond; 10 ms is 264 000 000). `budget` and \
                   `event_budget` bound a run (its simulated time, and its \
                   scheduler steps and packets a node), not the hardware.",
            columns: &["default"],
            rows: rows(
                &[Cm5Params::default()],
                &|c: &Cm5Params| c.validate().is_ok(),
                &same,
            ),
        },
        Other {
            table: "[network.sp]",
            what: "The SP's adapters and switch: times in ticks (26 400 a \
                   microsecond), rates in bytes per microsecond; `budget` and \
                   `event_budget` bound a run, as on the CM-5.",
            columns: &["default"],
            rows: rows(
                &[SpParams::default()],
                &|c: &SpParams| c.validate().is_ok(),
                &same,
            ),
        },
        Other {
            table: "[pipeline]",
            what: "The engine benchmark's three fixed-cost handlers, in \
                   system cycles. A handler holds MAGIC's PP at least one \
                   cycle, so the three handlers' own costs start at 1 \
                   (`done_cycles` is added to `recv_cycles`). The workload \
                   runs on its own machine (FLASH's, without the inbox and \
                   outbox stages): of `[machine]` it takes `budget` alone, \
                   and another key set there is refused.",
            columns: &["default"],
            rows: rows(
                &[crate::pipeline::PipelineCosts::default()],
                &|c: &crate::pipeline::PipelineCosts| c.validate().is_ok(),
                &|k: &str| format!("{k}_cycles"),
            ),
        },
    ]
}

/// `docs/costs.md`: every sheet with each entry's provenance and range, and
/// the ranges of the other tables of costs.
pub fn markdown_doc() -> String {
    let mut s = format!(
        "# Cost sheets\n\n\
         Every constant a protocol handler charges lives in its protocol's cost \
         sheet, with where its value comes from: **published** (a figure of \
         the paper, [reference.md](reference.md)), **derived** (worked out from published \
         figures, saying how) or **model choice** (where the paper is silent, \
         with the reasoning). Handlers take their counts from the sheet and \
         nowhere else (a test checks that no number is passed to `instr` or \
         `bundles` in protocol code). A task is a hand-scheduled run of \
         protocol-processor bundles: its cycles (bundles issued, no cache \
         miss), its instructions, and the loads and stores of MAGIC memory \
         among them, which go through MAGIC's data cache.\n\n\
         A scenario overrides any entry of a sheet in the table named after \
         it; the other entries keep their defaults and an unknown key is an \
         error. A task's own table sets some of its parts, the others \
         keeping theirs:\n\n\
         ```toml\n\
         [costs.transfer]\n\
         recv_verify = {{ cycles = 3, instrs = 4, loads = 1, stores = 0 }}\n\
         shift_dword = 3\n\
         \n\
         [costs.transfer.send_init]\n\
         loads = 3\n\
         ```\n\n\
         ## Ranges\n\n\
         One cap for every cost of every table: a count (instructions, \
         bundles, loads, stores, cycles of its clock) is from 0 to {MAX_COST}; \
         a time of the comparison platforms' networks is at most 10 ms. A \
         task must also be one its PP can issue: each part from 0 to \
         {MAX_COST}, its loads and stores among its instructions (`loads + \
         stores <= instrs`) and its instructions within its bundles at the \
         machine's issue width (`instrs <= pp_issue_width x cycles`; every \
         default fits FLASH's dual issue). Every table of a scenario is \
         checked, whether its experiment uses it or not; a task's width is \
         checked against the machine of the experiment that runs it. A count \
         that pays for loads or stores of MAGIC memory starts at them (its \
         range says why): a store cannot be in no instruction. A value \
         out of range stops the run with one line naming the file, the line \
         and the entry as the scenario spells it:\n\n\
         ```\n\
         error: s.toml:2: costs.transfer.send_init.instrs: must be at most 2 (issue width 2 x 1 cycles), got 1000\n\
         ```\n\n\
         The machine's timing parameters (memory, processor cache, network, \
         pipeline stages) are not handler costs; they are `[machine]` keys, \
         documented with `MagicParams` (each latency also at most {MAX_COST} \
         cycles). One of them is not published: \
         `mem_write_latency` (8 cycles from handing a buffer to the memory \
         controller to its first doubleword on the memory bus), set from the \
         start-up's network-and-queueing part (45 cycles), the one published \
         figure that ends with a write reaching memory.\n\n\
         This file is generated from the code: `FLASHKIT_BLESS=1 cargo test \
         -p protocols sheets` writes it again.\n",
    );
    for (what, sheet) in all() {
        s.push_str(&format!("\n## `[{}]`\n\n{what}\n\n", sheet.table()));
        s.push_str(&markdown(sheet.as_ref()));
    }
    s.push_str(
        "\n## The other tables of costs\n\n\
         The comparison platforms' layers and networks and the pipeline's \
         handlers are not MAGIC handler sheets (their provenance is in \
         their types' documentation); their ranges, as their checks \
         accept them:\n",
    );
    for o in others() {
        s.push_str(&format!("\n### `{}`\n\n{}\n\n", o.table, o.what));
        s.push_str(&format!("| key | {} | range |\n", o.columns.join(" | ")));
        s.push_str(&format!("|---|{}---|\n", "---|".repeat(o.columns.len())));
        for (key, defaults, range) in o.rows {
            s.push_str(&format!(
                "| `{key}` | {} | {range} |\n",
                defaults.join(" | ")
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// docs/costs.md is the sheets as the code has them.
    #[test]
    fn the_costs_document_is_current() {
        let path = root().join("docs/costs.md");
        let want = super::markdown_doc();
        if std::env::var_os("FLASHKIT_BLESS").is_some() {
            std::fs::write(&path, &want).expect("write docs/costs.md");
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "docs/costs.md is not the cost sheets: run FLASHKIT_BLESS=1 cargo test -p protocols sheets"
        );
    }

    /// Every default is one FLASH's PP can issue: each part in range,
    /// loads and stores among the instructions, the instructions within the
    /// bundles at dual issue. (On a single-issue PP, the tasks that pair
    /// instructions do not fit: a machine with `pp_issue_width = 1` that
    /// runs them needs sheets of its own, and says which entry.)
    #[test]
    fn every_default_fits_flashs_pp() {
        let width = magic::MagicParams::default().pp_issue_width;
        for (_, sheet) in super::all() {
            assert_eq!(sheet.validate_on(width), Ok(()), "{}", sheet.table());
        }
        let narrow: Vec<String> = super::all()
            .iter()
            .filter_map(|(_, s)| s.validate_on(1).err().map(|e| e.field.to_string()))
            .collect();
        assert_eq!(
            narrow,
            ["costs.transfer.send_init.instrs", "costs.user.link.instrs",],
            "the first entry of each sheet that needs dual issue"
        );
    }

    /// Every sheet entry has a reason, and every key is unique across its sheet.
    #[test]
    fn every_entry_says_where_it_comes_from() {
        for (_, sheet) in super::all() {
            let name = sheet.table();
            let e = sheet.entries();
            let mut keys: Vec<_> = e.iter().map(|x| x.key).collect();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), e.len(), "{name}: a key twice");
            for x in e {
                assert!(x.source.why().len() > 10, "{name}.{}: no reason", x.key);
                assert!(!x.doc.trim().is_empty(), "{name}.{}: no description", x.key);
            }
        }
    }
}
