//! The fuzz corpus (fuzz/corpus/TARGET, kept by `cargo fuzz` on nightly),
//! replayed through the targets' bodies on stable: each input must still
//! satisfy what its target checks.

use std::path::Path;

type Body = fn(&[u8]) -> Result<(), String>;

const TARGETS: [(&str, Body); 3] = [
    ("scenario", flashkit::fuzzing::scenario),
    ("commands", flashkit::fuzzing::commands),
    ("transfer", flashkit::fuzzing::transfer),
];

#[test]
fn every_fuzz_target_has_a_body_and_a_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, _) in TARGETS {
        let target = root.join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&target).unwrap();
        assert!(
            text.contains(&format!("flashkit::fuzzing::{name}(data)")),
            "{target:?}"
        );
        let inputs = std::fs::read_dir(root.join("corpus").join(name))
            .unwrap()
            .count();
        assert!(inputs >= 10, "fuzz/corpus/{name} holds {inputs} inputs");
    }
}

#[test]
fn the_fuzz_corpus_replays_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, body) in TARGETS {
        let mut files: Vec<_> = std::fs::read_dir(root.join(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap();
            if let Err(e) = body(&data) {
                panic!("{name} {}: {e}", f.display());
            }
        }
    }
}
