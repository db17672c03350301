//! Every cost sheet of the kit in one list: what `docs/costs.md` renders and
//! what a scenario's `[costs.NAME]` tables override.

use magic::costs::{markdown, Sheet};

/// The sheets, by the name a scenario's `[costs.NAME]` table uses, each
/// with what it covers.
pub fn all() -> Vec<(&'static str, &'static str, Box<dyn Sheet>)> {
    vec![
        (
            "transfer",
            "The bulk transfer's handlers: the sender (B, O, Ck), the receiver's \
             component handler, the connection's commit, setup, space notice and \
             cleanup, the walk of a changing page's uses, global coherence's \
             fetches.",
            Box::new(crate::transfer::TransferCosts::default()),
        ),
        (
            "command",
            "The command interface, shared by the user layer, the transfer and \
             Active Messages on MAGIC: \
             taking one command write into the operation record, checking \
             a sequence at its committing read (the transfer's commit is its \
             own sheet's), and taking the OS's notice of a translation change \
             or its answer to an interrupt.",
            Box::new(crate::command::CommandCosts::default()),
        ),
        (
            "coherence",
            "The directory protocol's handlers (read and write misses, \
             invalidations, interventions, writebacks, NAKs) and the \
             message-data coherence modes when a protocol other than the \
             transfer uses them.",
            Box::new(coherence::protocol::CoherenceCosts::default()),
        ),
        (
            "user",
            "User-level messaging: fetch-and-add, \
             copies and sends a line at a time, the address techniques \
             (hold-off, invalidation, software TLB).",
            Box::new(crate::user::UserCosts::default()),
        ),
        (
            "flush",
            "The user programs' flush of message data around a transfer \
             without coherence (`--flush`): the compute processor's cache \
             instructions, one per line of the buffer.",
            Box::new(crate::transfer::FlushCosts::default()),
        ),
        (
            "am_flash",
            "Active Messages on MAGIC (the suite's `flash` platform): the \
             processor's polls and dispatch, MAGIC's command, delivery and \
             store handlers.",
            Box::new(crate::am::flash::FlashCosts::default()),
        ),
    ]
}

/// `docs/costs.md`: every sheet with each entry's provenance.
pub fn markdown_doc() -> String {
    let mut s = String::from(
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
         A scenario overrides any entry of the transfer, command, coherence, \
         user and flush sheets in a table named after the sheet (the Active Message \
         layer's is listed here for its provenance; its platform keeps its \
         defaults); the other entries keep their defaults and an unknown \
         key is an error:\n\n\
         ```toml\n\
         [costs.transfer]\n\
         recv_verify = { cycles = 3, instrs = 4, loads = 1, stores = 0 }\n\
         shift_dword = 3\n\
         ```\n\n\
         The machine's timing parameters (memory, processor cache, network, \
         pipeline stages) are not handler costs; they are `[machine]` keys, \
         documented with `MagicParams`. One of them is not published: \
         `mem_write_latency` (8 cycles from handing a buffer to the memory \
         controller to its first doubleword on the memory bus), set from the \
         start-up's network-and-queueing part (45 cycles), the one published \
         figure that ends with a write reaching memory.\n\n\
         This file is generated from the code: `FLASHKIT_BLESS=1 cargo test \
         -p protocols sheets` writes it again.\n",
    );
    for (name, what, sheet) in all() {
        s.push_str(&format!("\n## `[costs.{name}]`\n\n{what}\n\n"));
        s.push_str(&markdown(sheet.as_ref()));
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

    /// Every sheet entry has a reason, and every key is unique across its sheet.
    #[test]
    fn every_entry_says_where_it_comes_from() {
        for (name, _, sheet) in super::all() {
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
