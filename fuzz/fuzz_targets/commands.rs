//! Fuzz a user program of command sequences: `flashkit::fuzzing::commands` checks what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = flashkit::fuzzing::commands(data) {
        panic!("{e}");
    }
});
